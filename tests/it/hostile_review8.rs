//! Eighth hostile review: `check`'s sustained amplification with Envoy's
//! concurrency budgets when attempts fail at once (a service that is
//! down), an export whose file two layers read, an export into a file
//! the user made read-only, and an analysis service that no call reaches.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::common::files::stormsim;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// 200 requests/s through one layer of 5 attempts 10 ms apart (no
/// jitter) with an Envoy budget, to a dependency that is down from 10 s
/// to 20 s: a down service refuses at once, so a retry holds its slot for
/// its 10 ms sleep alone.
const ENVOY: &str = "\
name: r3
seed: 1
duration: 30s
bucket: 1s
replicates: 1
clients:
  arrival: { kind: poisson, rate: 200/s }
layers:
  - name: edge
    timeout: 1s
    retry:
      max_attempts: 5
      backoff: { kind: constant, base: 10ms }
      jitter: none
      retry_on: [timeout, connection, 503]
      budget: { kind: envoy, budget_percent: 20, min_retry_concurrency: 3 }
dependency:
  concurrency: 64
  service_time: { dist: exponential, mean: 5ms }
  queue: { capacity: 512, discipline: fifo }
  incidents:
    - { kind: down, start: 10s, end: 20s }
variants:
  - { name: budget, set: {} }
  - { name: max-retries, set: { layers.edge.retry.budget: { kind: envoy_max_retries, max_retries: 3 } } }
  - { name: budget-1000, set: { clients.arrival.rate: 1000/s } }
";

/// The `Nx sustained` figure of each variant's amplification line.
fn sustained(check: &str) -> Vec<f64> {
    check
        .lines()
        .filter_map(|l| {
            l.split("; ")
                .nth(1)?
                .split("x sustained")
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// A column of summary.csv, by variant, in row order.
fn column(summary: &str, name: &str) -> Vec<f64> {
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse().unwrap())
        .collect()
}

/// R3: the sustained figure was 1.20x (a budget of 20% read as 20% more
/// calls) and 1.14x (three slots held for a sleep and a 1 s timeout)
/// while the run measured 2.5x: with attempts that fail at once, three
/// slots held 10 ms each let 300 retries a second through, 1.5 more
/// calls per request at 200/s (0.3 at 1000/s). The bound is that, and the
/// run's peak agrees with it within the noise of one bucket's count.
#[test]
fn envoy_budgets_bound_the_retries_of_attempts_that_fail_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("r3.yaml");
    fs::write(&f, ENVOY).unwrap();
    let out = stormsim().arg("check").arg(&f).output().unwrap();
    let check = stdout(&out);
    assert!(out.status.success(), "{check}{}", stderr(&out));
    assert_eq!(sustained(&check), [2.5, 2.5, 1.3], "{check}");
    assert!(
        check.contains("each held for its sleep (0.010 s) when attempts fail at once"),
        "{check}"
    );
    let dir = tmp.path().join("out");
    let out = stormsim()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&dir)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = fs::read_to_string(dir.join("summary.csv")).unwrap();
    let peak = column(&summary, "peak_amplification");
    // A bucket holds about 200 (1000) requests: the peak of ten such
    // ratios is within a few per cent of the rate they sample.
    for (measured, bound) in peak.iter().zip([2.5, 2.5, 1.3]) {
        assert!(
            (measured / bound - 1.0).abs() < 0.03,
            "measured {measured} against {bound}"
        );
    }
}

/// Two layers of a chain read routes of one Envoy file.
fn two_from(dir: &Path) -> std::path::PathBuf {
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs/envoy.yaml"),
        dir.join("envoy.yaml"),
    )
    .unwrap();
    let best = dir.join("best.yaml");
    fs::write(
        &best,
        "name: two\nduration: 10s\nclients: { arrival: { kind: poisson, rate: 10/s } }\n\
         layers:\n\
         \x20 - { name: outer, from: { file: envoy.yaml, format: envoy-route, route: create-order }, retry: { max_attempts: 5 } }\n\
         \x20 - { name: inner, from: { file: envoy.yaml, format: envoy-route, route: get-order }, retry: { max_attempts: 4 } }\n\
         dependency: { concurrency: 4, service_time: { dist: exponential, mean: 10ms } }\n",
    )
    .unwrap();
    best
}

/// `stormsim export best.yaml --into envoy.yaml --format envoy-route`
/// in `dir`, with `extra` flags.
fn export_envoy(dir: &Path, extra: &[&str]) -> Output {
    stormsim()
        .current_dir(dir)
        .args([
            "export",
            "best.yaml",
            "--into",
            "envoy.yaml",
            "--format",
            "envoy-route",
        ])
        .args(extra)
        .output()
        .unwrap()
}

/// R4: with two layers whose `from` names the file, export said no
/// layer's `from` named it and ignored `--route`. It names both, and the
/// selector given picks the one whose `from` says the same.
#[test]
fn an_export_into_a_file_two_layers_read_names_both_and_follows_the_selector() {
    let tmp = tempfile::tempdir().unwrap();
    let best = two_from(tmp.path());
    let export = |extra: &[&str]| export_envoy(tmp.path(), &[&["--dry-run"], extra].concat());
    let out = export(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "which layer? the `from` of 2 layers names envoy.yaml (outer, inner); pick one with --layer"
        ),
        "{}",
        stderr(&out)
    );
    let out = export(&["--route", "get-order"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = stdout(&out);
    // get-order's route (lines 50-55 of the file) gets the policy of
    // `inner`: 4 attempts; create-order's is not touched.
    assert!(diff.contains("@@ -53,"), "{diff}");
    assert!(
        diff.contains("\n+                              num_retries: 3\n"),
        "{diff}"
    );
    assert!(
        !diff
            .lines()
            .any(|l| l.starts_with('-') && !l.starts_with("---")),
        "{diff}"
    );
    let out = export(&["--route", "no-such-route"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("and none of them agrees with the selector given"),
        "{}",
        stderr(&out)
    );
    assert!(best.exists());
}

/// R5: an export replaced a file the user had made read-only (the rename
/// is allowed by the folder). A mode without any write bit is refused with
/// exit 2 and the file kept, whoever runs it (root too, whom the system
/// would let write); `--dry-run` still shows the change.
#[test]
fn an_export_into_a_read_only_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    two_from(tmp.path());
    let into = tmp.path().join("envoy.yaml");
    let before = fs::read(&into).unwrap();
    fs::set_permissions(&into, fs::Permissions::from_mode(0o444)).unwrap();
    let export =
        |extra: &[&str]| export_envoy(tmp.path(), &[&["--layer", "inner"], extra].concat());
    let dry = export(&["--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(stdout(&dry).contains("+"), "{}", stdout(&dry));
    let out = export(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("envoy.yaml: the file is not writable (mode 0444); nothing was written"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty(), "no diff of a change not made");
    assert_eq!(fs::read(&into).unwrap(), before);
    assert_eq!(
        fs::metadata(&into).unwrap().permissions().mode() & 0o777,
        0o444
    );
}

/// R6: a variant whose calls no longer reach the analysis service ran
/// with its figures at 0 and its SLO met, with only an info line of
/// `check`. `run` warns (naming the variant) and `check` says it as a
/// warning.
#[test]
fn an_analysis_service_no_call_reaches_is_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("idle.yaml");
    fs::write(
        &f,
        "name: idle\nseed: 1\nduration: 5s\nbucket: 1s\nreplicates: 1\n\
         clients:\n  arrival: { kind: poisson, rate: 50/s }\n  calls: { to: api, timeout: 1s }\n\
         services:\n\
         \x20 - name: api\n    concurrency: 8\n    service_time: { dist: exponential, mean: 5ms }\n    calls: [{ to: db, timeout: 500ms }]\n\
         \x20 - name: cache\n    concurrency: 8\n    service_time: { dist: exponential, mean: 1ms }\n\
         \x20 - name: db\n    concurrency: 8\n    service_time: { dist: exponential, mean: 5ms }\n\
         analysis: { service: db }\n\
         variants:\n\
         \x20 - { name: base, set: {} }\n\
         \x20 - { name: bypass, set: { services.api.calls.db.to: cache } }\n",
    )
    .unwrap();
    let out = stormsim()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("--quiet")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "in variant `bypass`: analysis.service: `db` is not reached from the clients' call"
        ),
        "{err}"
    );
    assert_eq!(err.matches("is not reached").count(), 1, "{err}");
    let out = stormsim().arg("check").arg(&f).output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("it is the analysis service: its load, utilization and recovery figures"),
        "{text}"
    );
}

/// A sweep of more variants than the 45 styles drew a line per variant
/// in every time chart (10 GB to draw 100 000 points): past 45 the time
/// charts draw the median over the variants with a band, and a sweep
/// chart with more than 45 lines the median of its lines; no variant's
/// name is in them, and the charts are as large for 48 variants as for 46.
#[test]
fn more_variants_than_styles_draw_their_spread() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |n: usize| {
        let values: Vec<String> = (1..=n).map(|v| v.to_string()).collect();
        format!(
            "name: many\nseed: 3\nduration: 4s\nbucket: 1s\nreplicates: 1\n\
             clients: {{ arrival: {{ kind: poisson, rate: 20/s }} }}\n\
             layers:\n  - {{ name: api, timeout: 100ms }}\n\
             dependency: {{ concurrency: 4, service_time: {{ dist: exponential, mean: 10ms }} }}\n\
             sweep:\n  dependency.queue.capacity: [{}]\n  layers.api.retry.max_attempts: [1, 2]\n",
            values.join(", ")
        )
    };
    let run = |n: usize| {
        let f = tmp.path().join(format!("many{n}.yaml"));
        fs::write(&f, sweep(n)).unwrap();
        let dir = tmp.path().join(format!("out{n}"));
        let out = stormsim()
            .arg("run")
            .arg(&f)
            .arg("--out")
            .arg(&dir)
            .arg("--quiet")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        dir
    };
    let (small, large) = (run(23), run(24));
    // 23 x 2 = 46 variants, 24 x 2 = 48.
    for (dir, n) in [(&small, 46), (&large, 48)] {
        for chart in ["load", "amplification", "goodput", "latency"] {
            let svg = fs::read_to_string(dir.join(format!("charts/{chart}.svg"))).unwrap();
            assert!(svg.contains(&format!("median of {n} variants")), "{chart}");
            assert!(!svg.contains("capacity=1 "), "{chart}: a variant's name");
        }
        // 23 (24) queue capacities: one line per capacity against
        // max_attempts, past 45 only for... neither; 2 lines against the
        // capacity: drawn each.
        let by_cap = fs::read_to_string(
            dir.join("charts/sweep-amplification-vs-dependency.queue.capacity.svg"),
        )
        .unwrap();
        assert!(!by_cap.contains("median of"), "two lines are drawn each");
    }
    let size = |dir: &Path| fs::metadata(dir.join("charts/goodput.svg")).unwrap().len() as f64;
    assert!(
        (size(&large) / size(&small) - 1.0).abs() < 0.05,
        "{} against {}",
        size(&large),
        size(&small)
    );
}

/// M1 (review 8): every point of a grid was built as a scenario before
/// anything was checked, so a 13 kB file of 300 layers and a 316 x 316
/// sweep took gigabytes (an abort under an address-space limit) to say
/// "at most 16 layers". Points x fields is bounded before any point is
/// built, at once and in little memory; a 100 000-point sweep of a
/// small scenario stays accepted.
#[test]
fn a_grid_too_large_to_build_is_refused_before_it_is_built() {
    let tmp = tempfile::tempdir().unwrap();
    let layers: String = (0..40)
        .map(|i| format!("  - {{ name: l{i}, timeout: 1s, retry: {{ max_attempts: 2 }} }}\n"))
        .collect();
    let values = |n: usize| {
        (1..=n)
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "name: wide\nduration: 5s\nclients: {{ arrival: {{ kind: poisson, rate: 10/s }} }}\n\
         layers:\n{layers}dependency: {{ concurrency: 4, service_time: {{ dist: exponential, mean: 10ms }} }}\n\
         sweep:\n  dependency.concurrency: [{}]\n  dependency.queue.capacity: [{}]\n",
        values(300),
        values(300)
    );
    let f = tmp.path().join("wide.yaml");
    fs::write(&f, &text).unwrap();
    let out = stormsim().arg("validate").arg(&f).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sweep: the grid has 90000 points of a scenario of")
            && err.contains("expected at most 10000000 (points x fields)"),
        "{err}"
    );
    assert!(
        err.contains("layers: 40 layers; expected at most 16"),
        "{err}"
    );
    // A small scenario: a grid of it is within the bound (20 000 points
    // here to keep the test short; 100 000 are too, 57 fields each).
    let small = "name: small\nduration: 5s\nclients: { arrival: { kind: poisson, rate: 10/s } }\n\
                 layers:\n  - { name: api, timeout: 1s }\n\
                 dependency: { concurrency: 4, service_time: { dist: exponential, mean: 10ms } }\n";
    let f = tmp.path().join("small.yaml");
    fs::write(
        &f,
        format!(
            "{small}sweep:\n  dependency.concurrency: [{}]\n  dependency.queue.capacity: [{}]\n",
            values(100),
            values(200)
        ),
    )
    .unwrap();
    let out = stormsim().arg("validate").arg(&f).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("ok (20000 variants"),
        "{}",
        stdout(&out)
    );
}
