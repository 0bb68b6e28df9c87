//! Refusals a hostile review asked for, one test per class: overrides or
//! search dimensions on one field (which one applies would depend on
//! order, and labels would name values that never ran), a searched field
//! that changes nothing, a file of the user's where the output folder's
//! lock goes, errors listed without bound, and a command whose results
//! alone would not fit in memory (refused before anything runs, exit 2).
//!
//! And: a variant
//! every run of which a guard rail stopped is never ranked (console,
//! summary_by_variant.csv, report.html); the `tune` header counts what
//! ran, not what the schedule planned; a run that will surely stop at
//! `limits.max_events` is announced before it starts.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

use crate::common::files::names;

const SCENARIO: &str = "\
name: q
seed: 1
duration: 5s
bucket: 1s
clients:
  arrival: { kind: poisson, rate: 50/s }
layers:
  - name: client
    timeout: 200ms
    retry:
      max_attempts: 3
      backoff: { kind: exponential, base: 10ms, multiplier: 2, cap: 100ms }
dependency:
  concurrency: 4
  service_time: { dist: exponential, mean: 20ms }
";

fn stormsim(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("stormsim").unwrap();
    c.current_dir(dir);
    c
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("q.yaml"), SCENARIO).unwrap();
    dir
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn two_overrides_of_one_field_are_refused_in_either_order() {
    let dir = folder();
    for sets in [
        [
            "layers.client.retry.max_attempts=5",
            "layers.client.retry=null",
        ],
        [
            "layers.client.retry=null",
            "layers.client.retry.max_attempts=5",
        ],
        ["duration=10s", "duration=12s"],
        // The same field by name and by index.
        ["layers.client.timeout=1s", "layers.0.timeout=2s"],
    ] {
        let out = stormsim(dir.path())
            .args(["validate", "q.yaml", "--set", sets[0], "--set", sets[1]])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sets:?}");
        let key = sets[1].split('=').next().unwrap();
        let first = sets[0].split('=').next().unwrap();
        assert!(
            stderr(&out).contains(&format!("<--set>: {key}: sets the same field as `{first}`")),
            "{sets:?}: {}",
            stderr(&out)
        );
    }
    // Two fields side by side are fine.
    stormsim(dir.path())
        .args([
            "validate",
            "q.yaml",
            "--set",
            "layers.client.retry.max_attempts=5",
            "--set",
            "layers.client.timeout=1s",
        ])
        .assert()
        .success();
}

#[test]
fn a_search_on_one_field_twice_or_on_the_description_is_refused() {
    let dir = folder();
    let out = stormsim(dir.path())
        .args([
            "tune",
            "q.yaml",
            "--set",
            "tune.space={layers.client.retry.max_attempts: {int: [1, 5]}, layers.client.retry: [null]}",
            "--out",
            "t",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "tune.space.layers.client.retry: sets the same field as `layers.client.retry.max_attempts`"
        ),
        "{}",
        stderr(&out)
    );
    let out = stormsim(dir.path())
        .args([
            "tune",
            "q.yaml",
            "--set",
            "tune.space={description: [\"=HYPERLINK(1)\", \"+1\"]}",
            "--out",
            "t",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("tune.space.description: `description` changes nothing a run does"),
        "{}",
        stderr(&out)
    );
    assert_eq!(names(dir.path()), ["q.yaml"]);
}

#[test]
fn a_file_of_the_users_where_the_lock_goes_is_kept() {
    let dir = folder();
    stormsim(dir.path())
        .args(["run", "q.yaml", "--out", "R", "--quiet"])
        .assert()
        .success();
    // The lock file's name is predictable; no lock is left after a run.
    assert_eq!(names(dir.path()), ["R", "q.yaml"]);
    // FNV-1a 64 of the folder's name, as the lock's name says.
    let hash = fnv(b"R");
    let lock = dir.path().join(format!(".stormsim-lock-{hash:016x}"));
    fs::write(&lock, "user content\n").unwrap();
    let before = fs::read_dir(dir.path().join("R")).unwrap().count();
    let out = stormsim(dir.path())
        .args(["run", "q.yaml", "--out", "R", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a file stormsim did not write is there; it was left as it is"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&lock).unwrap(), "user content\n");
    assert_eq!(fs::read_dir(dir.path().join("R")).unwrap().count(), before);
}

#[test]
fn thousands_of_errors_are_listed_fifty_at_most_with_their_count() {
    let dir = folder();
    let mut s = SCENARIO.to_string();
    s.push_str("variants:\n");
    for i in 0..120 {
        s.push_str(&format!("  v{i}: {{ dependency.concurrency: 0 }}\n"));
    }
    fs::write(dir.path().join("many.yaml"), s).unwrap();
    let out = stormsim(dir.path())
        .args(["validate", "many.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 51, "{text}");
    assert_eq!(
        *lines.last().unwrap(),
        "and 70 more not shown (120 errors in all)"
    );
    assert!(
        lines[..50].iter().all(|l| l.contains("concurrency")),
        "{text}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn results_that_would_not_fit_are_refused_before_anything_runs() {
    let dir = folder();
    let mut s = SCENARIO.replace("duration: 5s", "duration: 1s");
    let values: Vec<String> = (1..=1000).map(|c| c.to_string()).collect();
    s.push_str(&format!(
        "sweep:\n  layers.client.retry.max_attempts: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]\n  dependency.concurrency: [{}]\n",
        values.join(", ")
    ));
    fs::write(dir.path().join("big.yaml"), s).unwrap();
    // 900 MB of address space: the 20 000 variants' results need more
    // (a run without the limit peaks at about 880 MB resident, more in
    // address space); before, the process aborted on a failed allocation.
    let bin = assert_cmd::cargo::cargo_bin("stormsim");
    let out = std::process::Command::new("sh")
        .current_dir(dir.path())
        .arg("-c")
        .arg(format!(
            "ulimit -v 900000 && exec '{}' run big.yaml --out o --quiet --threads 1",
            bin.display()
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.starts_with("error: the results of 20000 runs (20000 variants) would hold about "),
        "{text}"
    );
    assert!(text.contains("nothing was run"), "{text}");
    assert_eq!(names(dir.path()), ["big.yaml", "q.yaml"]);
}

#[test]
fn an_override_that_changes_a_from_is_refused() {
    let dir = folder();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs");
    fs::copy(
        fixtures.join("service-config.json"),
        dir.path().join("service-config.json"),
    )
    .unwrap();
    let with_from = SCENARIO.replace(
        "  - name: client\n    timeout: 200ms\n    retry:\n      max_attempts: 3\n      backoff: { kind: exponential, base: 10ms, multiplier: 2, cap: 100ms }\n",
        "  - name: client\n    from: { file: service-config.json, format: grpc-service-config, method: orders.v1.Orders/CreateOrder }\n",
    );
    fs::write(dir.path().join("f.yaml"), &with_from).unwrap();
    stormsim(dir.path())
        .args(["validate", "f.yaml"])
        .assert()
        .success();
    let refused = |args: &[&str], file: &str, path: &str| {
        let out = stormsim(dir.path())
            .arg("validate")
            .arg(file)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let text = stderr(&out);
        assert!(
            text.contains(&format!("{path}: "))
                && text.contains("changes the `from` of layers.client: a configuration file's settings are read when the scenario file loads"),
            "{args:?}: {}",
            stderr(&out)
        );
    };
    // Its selector, by --set.
    refused(
        &[
            "--set",
            "layers.client.from.method=orders.v1.Orders/GetOrder",
        ],
        "f.yaml",
        "layers.client.from.method",
    );
    // A new one on a layer that had none.
    refused(
        &[
            "--set",
            "layers.client.from={file: service-config.json, format: grpc-service-config, method: orders.v1.Orders/GetOrder}",
        ],
        "q.yaml",
        "layers.client.from",
    );
    // By a variant.
    let variant = format!(
        "{with_from}variants:\n  other: {{ layers.client.from.method: orders.v1.Orders/Nope }}\n"
    );
    fs::write(dir.path().join("v.yaml"), variant).unwrap();
    refused(&[], "v.yaml", "layers.client.from.method");
    // Removing it keeps the values read, written out: allowed; so is a
    // field beside it.
    stormsim(dir.path())
        .args(["validate", "f.yaml", "--set", "layers.client.from=null"])
        .assert()
        .success();
    stormsim(dir.path())
        .args(["validate", "f.yaml", "--set", "layers.client.timeout=1s"])
        .assert()
        .success();
}

#[test]
fn a_problem_of_the_scenario_is_reported_once_not_per_searched_field() {
    let dir = folder();
    let s = SCENARIO.replace("timeout: 200ms", "timeout: 0s")
        + "tune:\n  space:\n    layers.client.retry.max_attempts: { int: [1, 5] }\n    layers.client.retry.jitter: [none, full]\n";
    fs::write(dir.path().join("t.yaml"), s).unwrap();
    let out = stormsim(dir.path())
        .args(["validate", "t.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("layers.client.timeout"), "{text}");
    // A dimension's own problem is still its own.
    let s = SCENARIO.to_string()
        + "tune:\n  space:\n    layers.client.retry.max_attempts: { int: [0, 5] }\n";
    fs::write(dir.path().join("t0.yaml"), s).unwrap();
    let out = stormsim(dir.path())
        .args(["validate", "t0.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "tune.space.layers.client.retry.max_attempts: with layers.client.retry.max_attempts = 0"
        ),
        "{}",
        stderr(&out)
    );
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Variants whose every run stops at a guard rail, around one that
/// finishes, with and without an SLO.
#[test]
fn variants_every_run_of_which_aborted_are_not_ranked() {
    for slo in [true, false] {
        let dir = folder();
        let mut file = SCENARIO.to_string();
        file.push_str("replicates: 2\n");
        if slo {
            file.push_str("slo: { success_rate: 0.999 }\n");
        }
        // The stopped ones first, so that variant order cannot rank them.
        file.push_str(
            "variants:\n  - { name: dead1, set: { limits.max_events: 100 } }\n  - { name: ok }\n  - { name: dead2, set: { limits.max_events: 50 } }\n",
        );
        fs::write(dir.path().join("ab.yaml"), file).unwrap();
        let out = stormsim(dir.path())
            .args(["run", "ab.yaml", "--out", "o"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let console = text(&out.stdout);
        let csv = fs::read_to_string(dir.path().join("o/summary_by_variant.csv")).unwrap();
        let mut rows = csv.lines();
        let head: Vec<&str> = rows.next().unwrap().split(',').collect();
        let html = fs::read_to_string(dir.path().join("o/report.html")).unwrap();
        if slo {
            assert!(console.contains("1. ok "), "{console}");
            assert!(console.contains("-  dead1 "), "{console}");
            assert!(console.contains("-  dead2 "), "{console}");
            assert!(!console.contains("2. "), "{console}");
            let rank = head.iter().position(|c| *c == "slo_rank").unwrap();
            let ranks: Vec<(String, String)> = rows
                .map(|l| {
                    let cells: Vec<&str> = l.split(',').collect();
                    (cells[0].to_string(), cells[rank].to_string())
                })
                .collect();
            assert_eq!(
                ranks,
                [("dead1", ""), ("ok", "1"), ("dead2", "")]
                    .map(|(a, b)| (a.to_string(), b.to_string()))
            );
        } else {
            assert!(!head.contains(&"slo_rank"));
        }
        // report.html: the ranked variant first, the stopped ones "not
        // ranked", in every table that ranks.
        assert_eq!(
            html.matches("<tr><td>not ranked</td><td class=\"l\">")
                .count(),
            2
        );
        assert!(html.contains("<tr><td>1</td><td class=\"l\">"));
        assert!(!html.contains("<tr><td>2</td>"));
        assert!(!html.contains("<tr><td>3</td>"));
        let first = html.find("<tr><td>1</td><td class=\"l\">").unwrap();
        let stopped = html
            .find("<tr><td>not ranked</td><td class=\"l\">")
            .unwrap();
        assert!(first < stopped, "the ranked variant comes first");
    }
}

/// A space of 5 whole numbers searched with a budget of 4: the schedule
/// draws 4 points, one of which repeats another. The header counts the 3
/// that ran, and says that the space's other points were not tried.
#[test]
fn the_tune_header_counts_the_candidates_that_ran() {
    let dir = folder();
    let out = stormsim(dir.path())
        .args([
            "tune",
            "q.yaml",
            "--set",
            "tune.space={layers.client.retry.max_attempts: {int: [1, 5]}}",
            "--set",
            "tune.budget=4",
            "--out",
            "t",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let console = text(&out.stdout);
    let mut lines = console.lines();
    assert_eq!(
        lines.next().unwrap(),
        "stormsim tune: q: 3 candidates, 3 runs of a budget of 4 (rounds of candidates × replicates: 3 × 1)"
    );
    assert_eq!(
        lines.next().unwrap(),
        "1 of the 4 points drawn repeated another (values round to the same whole number or choice) and ran once: 3 distinct points of the space's 5 were tried"
    );
    let csv = fs::read_to_string(dir.path().join("t/tune.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
}

/// Runs far longer than the guard rail allows are refused by `validate`
/// and `run` (exit 2, nothing written) and are an error of `check`,
/// whichever field makes them so: their open-loop arrivals alone (one
/// event each) are over the limit, so they are sure to stop. A run that
/// is only likely to stop (its estimate of two events an arrival is over
/// the limit, its arrivals alone are not) is warned about and runs; a run
/// that fits says nothing.
#[test]
fn a_run_that_will_stop_at_max_events_is_announced() {
    let dir = folder();
    let cases: [&[&str]; 3] = [
        &["--set", "duration=36500d", "--set", "bucket=1d"],
        &[
            "--set",
            "clients.arrival.rate=50000/s",
            "--set",
            "duration=1d",
            "--set",
            "bucket=1h",
        ],
        // 250 arrivals expected, at least 155 of them (six standard
        // deviations below): over 100.
        &["--set", "limits.max_events=100"],
    ];
    for sets in cases {
        let out = stormsim(dir.path())
            .arg("validate")
            .arg("q.yaml")
            .args(sets)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sets:?}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with(
                "error: limits.max_events: every run would stop at the guard rail before its end"
            ),
            "{sets:?}: {err}"
        );
        assert!(
            err.contains("raise `limits.max_events` (or --max-events) (`stormsim run` refuses it)"),
            "{err}"
        );
        let out = stormsim(dir.path())
            .arg("check")
            .arg("q.yaml")
            .args(sets)
            .output()
            .unwrap();
        let check = text(&out.stdout);
        assert!(
            check.contains("error   events-over-guard-rail [limits.max_events]"),
            "{check}"
        );
        assert_eq!(out.status.code(), Some(1), "{check}");
        let out = stormsim(dir.path())
            .args(["run", "q.yaml", "--out", "refused"])
            .args(sets)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sets:?}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("error: limits.max_events: every run would stop")
                && err.trim_end().ends_with("nothing was written"),
            "{err}"
        );
        assert!(!dir.path().join("refused").exists());
    }
    // The estimate is a lower bound: 5 s at 50/s is about 500 events.
    let out = stormsim(dir.path())
        .args(["run", "q.yaml", "--max-events", "1000", "--out", "r"])
        .output()
        .unwrap();
    assert!(!text(&out.stderr).contains("will stop at the guard rail"));
    // Likely, not sure (at most 155 arrivals is not out of the question at
    // a limit of 300): warned about, and run.
    let out = stormsim(dir.path())
        .args(["run", "q.yaml", "--max-events", "300", "--out", "r2"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(
        err.starts_with("warning: limits.max_events: every run will stop"),
        "{err}"
    );
    assert!(err.contains("about 5e2 events"), "{err}");
    assert!(err.contains("over limits.max_events (300)"), "{err}");
    assert!(dir.path().join("r2/summary.csv").is_file(), "{err}");
    // Without the overrides, nothing.
    let out = stormsim(dir.path())
        .args(["validate", "q.yaml"])
        .output()
        .unwrap();
    assert_eq!(text(&out.stderr), "");
}

/// No bundled scenario is announced as one that will stop.
#[test]
fn no_bundled_scenario_is_announced() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for d in ["scenarios", "docs/examples"] {
        for e in fs::read_dir(root.join(d)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().and_then(|x| x.to_str()) != Some("yaml") {
                continue;
            }
            let out = Command::cargo_bin("stormsim")
                .unwrap()
                .current_dir(p.parent().unwrap())
                .arg("check")
                .arg(&p)
                .output()
                .unwrap();
            let t = text(&out.stdout);
            assert!(!t.contains("events-over-guard-rail"), "{}", p.display());
            seen += 1;
        }
    }
    assert!(seen > 5);
}

/// A `--set` replaces the file's value before the file is judged: a type
/// error in the file's value is no error once a set replaces it (or a
/// mapping above it), and a bad set over a bad value is one error, the
/// set's.
#[test]
fn a_set_replaces_the_files_value_before_it_is_judged() {
    let dir = folder();
    let bad = SCENARIO
        .replace("seed: 1\n", "seed: 1\nreplicates: abc\n")
        .replace("timeout: 200ms", "timeout: abc")
        .replace("cap: 100ms }", "cap: 100ms }\n      jitter: fulll");
    fs::write(dir.path().join("bad.yaml"), &bad).unwrap();
    fs::write(
        dir.path().join("zero.yaml"),
        SCENARIO.replace("timeout: 200ms", "timeout: 0s"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = stormsim(dir.path())
            .arg("validate")
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    // Each fix alone leaves the other two errors, located in the file.
    let (code, _, err) = run(&["bad.yaml", "--set", "layers.client.timeout=1s"]);
    assert_eq!(code, Some(2));
    assert!(!err.contains("timeout"), "{err}");
    assert!(err.contains("bad.yaml:3:13: replicates:"), "{err}");
    assert!(
        err.contains("layers.client.retry.jitter: unknown value `fulll`"),
        "{err}"
    );
    // All three fixed, by name, by index or through a parent mapping.
    for fixes in [
        &[
            "--set",
            "layers.client.timeout=1s",
            "--set",
            "layers.client.retry.jitter=full",
        ][..],
        &[
            "--set",
            "layers.0.timeout=1s",
            "--set",
            "layers.0.retry={max_attempts: 2}",
        ][..],
    ] {
        let mut args = vec!["bad.yaml", "--set", "replicates=2"];
        args.extend_from_slice(fixes);
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{fixes:?}: {err}");
        assert_eq!(out, "bad.yaml: ok (1 variant, 2 replicates each)\n");
    }
    // A bad set over a bad (type or semantic) value: the set's error only.
    for file in ["bad.yaml", "zero.yaml"] {
        let (code, _, err) = run(&[file, "--set", "layers.client.timeout=abc"]);
        assert_eq!(code, Some(2));
        let about: Vec<&str> = err.lines().filter(|l| l.contains("timeout")).collect();
        assert_eq!(
            about,
            [
                "<--set>: layers.client.timeout: invalid duration `abc`: expected a number with a unit, such as 250ms or 2s"
            ],
            "{file}: {err}"
        );
    }
    // The file's error still stands when no set replaces it.
    let (code, _, err) = run(&["zero.yaml"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("zero.yaml:"), "{err}");
}

/// A `--set` into a list the file leaves out, or one past a list's end,
/// says the list has no such item and how to add one (never "no
/// `incidents`; did you mean `incidents`?").
#[test]
fn a_set_past_the_end_of_a_list_says_how_to_add_an_item() {
    let dir = folder();
    let cases = [
        (
            "dependency.incidents.0={kind: down, start: 1s, end: 2s}",
            "<--set>: dependency.incidents.0: `dependency.incidents` is empty: the file has no `incidents`, so there is no item `0`; to add items, set the whole list: --set 'dependency.incidents=[...]'",
        ),
        (
            "layers.1.timeout=1s",
            "<--set>: layers.1.timeout: index 1 is out of range: `layers` has 1 item; to add one, set the whole list: --set 'layers=[...]'",
        ),
    ];
    for (set, want) in cases {
        let out = stormsim(dir.path())
            .args(["validate", "q.yaml", "--set", set])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(text(&out.stderr).trim_end(), want);
        assert!(!text(&out.stderr).contains("did you mean"));
    }
}

// Review 13, section 4: unclear errors and `--set` round trips.

/// `stormsim validate FILE --set ...` in `dir`: exit code and stderr.
fn validate(dir: &Path, file: &str, sets: &[&str]) -> (Option<i32>, String) {
    let mut c = stormsim(dir);
    c.args(["validate", file]);
    for s in sets {
        c.args(["--set", s]);
    }
    let out = c.output().unwrap();
    (out.status.code(), stderr(&out))
}

/// U18: a YAML tag (`!include`, any `!tag`) is refused where it is
/// written, in a file and in a `--set`, instead of being dropped (its
/// value read as text). The core schema's `!!str` is plain YAML.
#[test]
fn yaml_tags_are_refused_where_they_are_written() {
    let dir = folder();
    let tagged = SCENARIO.replace("name: q\n", "name: q\ndescription: !include notes.md\n");
    fs::write(dir.path().join("t.yaml"), &tagged).unwrap();
    let (code, err) = validate(dir.path(), "t.yaml", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("t.yaml:2:14: description: YAML tags such as `!include` are not supported"),
        "{err}"
    );
    // A tag on a mapping, with the other errors of the file still listed.
    let both = tagged
        .replace("  - name: client\n", "  - !env\n    name: client\n")
        .replace("timeout: 200ms", "timeout: 0s");
    fs::write(dir.path().join("t2.yaml"), both).unwrap();
    let (code, err) = validate(dir.path(), "t2.yaml", &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(": layers.client: YAML tags such as `!env`"),
        "{err}"
    );
    assert!(
        err.contains("layers.client.timeout: timeout is 0s"),
        "{err}"
    );
    // A set that replaces the tagged field replaces its tag too.
    let (code, err) = validate(dir.path(), "t.yaml", &["description=notes"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = validate(
        dir.path(),
        "q.yaml",
        &["dependency.concurrency=!include other.yaml"],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(
            "<--set>: dependency.concurrency: YAML tags such as `!include` are not supported"
        ),
        "{err}"
    );
    let (code, err) = validate(dir.path(), "q.yaml", &["description=!!str 5"]);
    assert_eq!(code, Some(0), "{err}");
}

/// U6: a `--set` that makes a layer's name null is reported at the path
/// as typed (`layers.0.name`, never `layers.null.name`), and does not
/// hide an independent `--set`'s error.
#[test]
fn a_null_name_keeps_its_path_and_hides_no_other_error() {
    let dir = folder();
    let (code, err) = validate(
        dir.path(),
        "q.yaml",
        &["layers.0.name=~", "layers.0.timeout=0s"],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.contains("<--set>: layers.0.name: expected text"),
        "{err}"
    );
    assert!(!err.contains("null.name"), "{err}");
    assert!(err.contains("timeout is 0s"), "{err}");
}

/// U7: a type error says the range the field accepts, not its storage
/// type's; a number is echoed as typed; a duration is exact to the
/// nanosecond.
#[test]
fn type_errors_say_the_real_range_and_echo_what_was_typed() {
    let dir = folder();
    for (set, want) in [
        (
            "replicates=x",
            "<--set>: replicates: expected a whole number from 1 to 10000, found `x`",
        ),
        (
            "dependency.concurrency=x",
            "<--set>: dependency.concurrency: expected a whole number from 1 to 1000000, found `x`",
        ),
        (
            "tune.budget=x",
            "<--set>: tune.budget: expected a whole number from 1 to 100000, found `x`",
        ),
        (
            "dependency.queue.capacity=-1",
            "<--set>: dependency.queue.capacity: expected a whole number from 0 to 100000000, found `-1`",
        ),
        (
            "layers.client.retry.max_attempts=1.5",
            "<--set>: layers.client.retry.max_attempts: expected a whole number from 1 to 1000, found `1.5`",
        ),
        ("seed=1e3", "found `1e3`"),
        ("seed=18446744073709551616", "found `18446744073709551616`"),
        (
            "duration=9223372036854775807ns",
            "the run (9223372036854775807ns)",
        ),
    ] {
        let (code, err) = validate(dir.path(), "q.yaml", &[set]);
        assert_eq!(code, Some(2), "{set}");
        assert!(err.contains(want), "{set}: {err}");
    }
    // In a file, too.
    fs::write(
        dir.path().join("r.yaml"),
        SCENARIO.replace("seed: 1\n", "seed: 1\nreplicates: many\n"),
    )
    .unwrap();
    let (_, err) = validate(dir.path(), "r.yaml", &[]);
    assert!(
        err.contains(
            "r.yaml:3:13: replicates: expected a whole number from 1 to 10000, found `many`"
        ),
        "{err}"
    );
}

/// U17: a `--set` value has the file's limits, not smaller ones, and a
/// long value is not echoed whole.
#[test]
fn a_set_value_has_the_files_limits_and_is_echoed_short() {
    let dir = folder();
    let list: Vec<String> = (1..=10_001).map(|i| i.to_string()).collect();
    let set = format!("sweep={{dependency.concurrency: [{}]}}", list.join(","));
    let (code, err) = validate(dir.path(), "q.yaml", &[&set]);
    assert!(!err.contains("too large"), "{}", &err[..err.len().min(300)]);
    assert_eq!(code, Some(0));
    // Broken YAML, 40 KB of it: the message shows its start.
    let broken = format!("sweep={{dependency.concurrency: [{}}}", list.join(","));
    let (code, err) = validate(dir.path(), "q.yaml", &[&broken]);
    assert_eq!(code, Some(2));
    assert!(err.len() < 400, "{err}");
    assert!(
        err.contains("[1,2,3,4,5,6,7,8,9,10,11,12,13,14,1…"),
        "{err}"
    );
    let long = format!("replicates={}", "y".repeat(200));
    let (_, err) = validate(dir.path(), "q.yaml", &[&long]);
    assert!(
        err.contains(&format!("found `{}…`", "y".repeat(60))),
        "{err}"
    );
}

/// U9: the YAML reader's syntax errors in plain words, in a `--set` value
/// and in a file alike.
#[test]
fn yaml_syntax_errors_are_explained() {
    let dir = folder();
    let (code, err) = validate(dir.path(), "q.yaml", &["layers.0.name=*"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("a value that starts with `*` is a YAML alias"),
        "{err}"
    );
    assert!(!err.contains("while scanning"), "{err}");
    fs::write(
        dir.path().join("a.yaml"),
        SCENARIO.replace("name: q", "name: *"),
    )
    .unwrap();
    let (_, err) = validate(dir.path(), "a.yaml", &[]);
    assert!(
        err.starts_with("a.yaml:1:7: name: a value that starts with `*`"),
        "{err}"
    );
    for (set, want) in [
        ("layers.0.retry.retry_on=[timeout", "its `]` is missing"),
        ("description=\"abc", "its closing quote is missing"),
    ] {
        let (code, err) = validate(dir.path(), "q.yaml", &[set]);
        assert_eq!(code, Some(2));
        assert!(err.contains(want), "{set}: {err}");
    }
}

/// U1 and U16: a name must paste into `--set` (no `=`), and two names of
/// one list that print alike (NFC and NFD `café`) are one name twice.
#[test]
fn names_with_equals_or_that_print_alike_are_refused() {
    let dir = folder();
    fs::write(
        dir.path().join("eq.yaml"),
        SCENARIO.replace("name: client", "name: a=b"),
    )
    .unwrap();
    let (code, err) = validate(dir.path(), "eq.yaml", &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("layers.0.name: layer name `a=b` is not usable in field paths; expected a non-empty name without `.`, `=`"),
        "{err}"
    );
    let nfc = "caf\u{e9}";
    let nfd = "cafe\u{301}";
    let two = SCENARIO.replace(
        "  - name: client\n",
        &format!("  - name: {nfc}\n    timeout: 1s\n  - name: {nfd}\n"),
    );
    fs::write(dir.path().join("nf.yaml"), two).unwrap();
    let (code, err) = validate(dir.path(), "nf.yaml", &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "layer name `{nfd}` is the same as the earlier `{nfc}`"
        )),
        "{err}"
    );
    let variants = format!(
        "{SCENARIO}variants:\n  - {{ name: {nfc}, set: {{ replicates: 1 }} }}\n  - {{ name: {nfd}, set: {{ replicates: 2 }} }}\n  - {{ name: x=1, set: {{ replicates: 3 }} }}\n"
    );
    fs::write(dir.path().join("nv.yaml"), variants).unwrap();
    let (code, err) = validate(dir.path(), "nv.yaml", &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!(
            "variants.1.name: variant name `{nfd}` is the same as"
        )),
        "{err}"
    );
    assert!(
        err.contains("variants.2.name: variant name `x=1` contains `=`"),
        "{err}"
    );
}

/// `stormsim ARGS` in `dir`: exit code and stderr.
fn cmd(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = stormsim(dir).args(args).output().unwrap();
    (out.status.code(), stderr(&out))
}

/// U13: `plot` into a folder of copied tables, which has no marker,
/// leaves one that lists only what it wrote: the next `plot` redraws, and
/// a `run` into the folder still refuses the user's tables.
#[test]
fn plot_into_an_unmarked_folder_can_redraw_its_own_output() {
    let dir = folder();
    let (code, err) = cmd(dir.path(), &["run", "q.yaml", "--out", "R", "--quiet"]);
    assert_eq!(code, Some(0), "{err}");
    fs::create_dir(dir.path().join("C")).unwrap();
    let tables = [
        "timeseries.csv",
        "summary.csv",
        "summary_by_variant.csv",
        "scenario.resolved.yaml",
    ];
    for t in tables {
        fs::copy(dir.path().join("R").join(t), dir.path().join("C").join(t)).unwrap();
    }
    fs::write(dir.path().join("C/notes.txt"), "mine").unwrap();
    for round in 0..2 {
        let (code, err) = cmd(dir.path(), &["plot", "C", "--quiet"]);
        assert_eq!(code, Some(0), "plot {round}: {err}");
    }
    let marker = fs::read_to_string(dir.path().join("C/.stormsim")).unwrap();
    assert!(marker.contains("file report.html"), "{marker}");
    assert!(marker.contains("folder charts"), "{marker}");
    for t in tables.iter().chain(&["notes.txt"]) {
        assert!(!marker.contains(t), "{t}: {marker}");
    }
    assert_eq!(
        fs::read_to_string(dir.path().join("C/notes.txt")).unwrap(),
        "mine"
    );
    let (code, err) = cmd(dir.path(), &["run", "q.yaml", "--out", "C", "--quiet"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(dir.path().join("C/notes.txt").exists());
}

/// U14: `--out` through a folder that does not exist and `..` creates
/// only the folders of the normalized path.
#[test]
fn an_out_path_through_a_missing_folder_and_dotdot_leaves_no_stray_folder() {
    let dir = folder();
    for (out, made) in [("sub/./../sub2", "sub2"), ("nope/../x", "x")] {
        let (code, err) = cmd(dir.path(), &["run", "q.yaml", "--out", out, "--quiet"]);
        assert_eq!(code, Some(0), "{out}: {err}");
        assert!(dir.path().join(made).join("summary.csv").exists(), "{out}");
    }
    assert_eq!(names(dir.path()), ["q.yaml", "sub2", "x"]);
}

/// Two shard folders of q.yaml in `dir`: `s0` and `s1`.
fn shards(dir: &Path) {
    for (i, name) in ["s0", "s1"].iter().enumerate() {
        let shard = format!("{i}/2");
        let (code, err) = cmd(
            dir,
            &[
                "run",
                "q.yaml",
                "--set",
                "replicates=2",
                "--shard",
                &shard,
                "--out",
                name,
                "--quiet",
            ],
        );
        assert_eq!(code, Some(0), "{err}");
    }
}

/// U8: a manifest that is not JSON is refused in plain words (a number
/// too large, nesting too deep, a byte-order mark, a bad `\u` escape),
/// at its line and column.
#[test]
fn a_broken_manifest_is_explained_in_plain_words() {
    let dir = folder();
    shards(dir.path());
    let manifest = dir.path().join("s0/manifest.json");
    let good = fs::read(&manifest).unwrap();
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&good);
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200)).into_bytes();
    for (bytes, want) in [
        (
            bom,
            "manifest.json:1:1: not a valid shard manifest: the file starts with a byte-order mark",
        ),
        (b"{\"format\": 1e400}".to_vec(), "a number is too large"),
        (deep, "the JSON nests too deeply"),
        (
            b"{\"format\": \"\\ud800\"}".to_vec(),
            "an invalid \\u escape",
        ),
    ] {
        fs::write(&manifest, &bytes).unwrap();
        let (code, err) = cmd(dir.path(), &["merge", "s0", "s1", "--out", "M"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(want), "{want}: {err}");
        for jargon in [
            "out of range",
            "recursion limit",
            "expected value",
            "hex escape",
        ] {
            assert!(!err.contains(jargon), "{err}");
        }
    }
}

/// U10: CRLF line endings in one shard's table blame that shard and say
/// what they are.
#[test]
fn crlf_in_one_shards_table_is_blamed_on_that_shard() {
    let dir = folder();
    shards(dir.path());
    let summary = dir.path().join("s0/summary.csv");
    let crlf = fs::read_to_string(&summary).unwrap().replace('\n', "\r\n");
    fs::write(&summary, crlf).unwrap();
    let (code, err) = cmd(dir.path(), &["merge", "s1", "s0", "--out", "M"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("s0: summary.csv has Windows line endings (CRLF)"),
        "{err}"
    );
    assert!(!err.contains("s1"), "{err}");
}

/// U11 and U19: `import` says its bounds as people write them, and a
/// protobuf duration that protobuf allows but stormsim cannot hold (or
/// with ten decimals) says so.
#[test]
fn import_bounds_and_protobuf_durations_are_explained() {
    let dir = folder();
    fs::write(
        dir.path().join("g.json"),
        r#"{"methodConfig":[{"name":[{"service":"a.B","method":"M"}],"timeout":"1s","retryPolicy":{"maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":-0,"retryableStatusCodes":["UNAVAILABLE"]}}]}"#,
    )
    .unwrap();
    let (code, err) = cmd(
        dir.path(),
        &[
            "import",
            "g.json",
            "--format",
            "grpc-service-config",
            "--method",
            "a.B/M",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("g.json:1:167: methodConfig[0].retryPolicy.backoffMultiplier: backoffMultiplier 0: gRPC needs a multiplier greater than 0"),
        "{err}"
    );
    assert!(!err.contains("0.0000"), "{err}");
    let route = "\
virtual_hosts:
  - name: orders
    domains: [\"*\"]
    routes:
      - name: r
        match: { prefix: \"/\" }
        route:
          cluster: orders
          timeout: 99999999999s
          retry_policy:
            retry_on: 5xx
            num_retries: 2
            retry_back_off: { base_interval: 0.0000000001s }
";
    fs::write(dir.path().join("e.yaml"), route).unwrap();
    let (code, err) = cmd(
        dir.path(),
        &[
            "import",
            "e.yaml",
            "--format",
            "envoy-route",
            "--route",
            "r",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("it is too large: stormsim counts time in nanoseconds"),
        "{err}"
    );
    assert!(
        err.contains("has 10 decimals, and protobuf durations have at most 9"),
        "{err}"
    );
    assert!(!err.contains("must be greater than 0"), "{err}");
}

/// FNV-1a 64 of a folder's name: the hash in the names of its lock and
/// work folders.
fn fnv(name: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[test]
fn a_dead_commands_work_folder_keeps_what_stormsim_did_not_put_in_its_new() {
    let dir = folder();
    // A process id above any pid_max: no process has it.
    let work = |n: u32| {
        dir.path()
            .join(format!(".stormsim-{:016x}-99999999-{n}", fnv(b"R")))
    };
    // What a command killed while writing `R` leaves, the user's notes
    // added into it.
    let kept = work(0);
    fs::create_dir_all(kept.join("new/R/charts")).unwrap();
    fs::write(kept.join("written"), "summary.csv\ncharts/a.svg\n").unwrap();
    fs::write(kept.join("new/R/summary.csv"), "half a table").unwrap();
    fs::write(kept.join("new/R/mine.txt"), "my notes").unwrap();
    fs::write(kept.join("new/R/charts/notes.md"), "my notes").unwrap();
    fs::write(kept.join("new/diary.txt"), "my notes").unwrap();
    // One holding only what its list names.
    let gone = work(1);
    fs::create_dir_all(gone.join("new/R/charts")).unwrap();
    fs::write(gone.join("written"), "charts/a.svg\nsummary.csv\n").unwrap();
    fs::write(gone.join("new/R/charts/a.svg"), "<svg/>").unwrap();
    fs::write(gone.join("new/R/summary.csv"), "half a table").unwrap();
    let out = stormsim(dir.path())
        .args(["run", "q.yaml", "--out", "R"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "is left as it is: its new/ holds what stormsim did not write \
             (\"new/R/charts/notes.md\", \"new/R/mine.txt\", \"new/diary.txt\")"
        ),
        "{err}"
    );
    for f in ["new/R/mine.txt", "new/R/charts/notes.md", "new/diary.txt"] {
        assert_eq!(fs::read_to_string(kept.join(f)).unwrap(), "my notes", "{f}");
    }
    assert!(!gone.exists(), "{err}");
    assert!(err.contains("removed its work folder"), "{err}");
}

#[test]
fn merge_and_plot_put_back_a_folder_left_in_a_killed_commands_work_folder() {
    let dir = folder();
    for i in 0..2 {
        stormsim(dir.path())
            .args(["run", "q.yaml", "--quiet", "--replicates", "2"])
            .args(["--shard", &format!("{i}/2")])
            .args(["--out", &format!("S/shard-{i}-of-2")])
            .assert()
            .success();
    }
    stormsim(dir.path())
        .args(["run", "q.yaml", "--out", "R", "--quiet"])
        .assert()
        .success();
    // As a command killed in the middle of its swap leaves them: each
    // folder moved aside into its work folder, the new one not yet in
    // place (a process id above any pid_max: no process has it).
    for name in ["S", "R"] {
        let work = dir.path().join(format!(
            ".stormsim-{:016x}-99999999-0",
            fnv(name.as_bytes())
        ));
        fs::create_dir_all(work.join("new").join(name)).unwrap();
        fs::rename(dir.path().join(name), work.join("old")).unwrap();
    }
    let out = stormsim(dir.path())
        .args(["merge", "S/shard-0-of-2", "S/shard-1-of-2", "--out", "M"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("was stopped outright while writing S (killed?); removed its work folder")
            && err.contains("after putting back"),
        "{err}"
    );
    assert!(dir.path().join("S/shard-1-of-2/manifest.json").is_file());
    let out = stormsim(dir.path()).args(["plot", "R"]).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("after putting back"), "{err}");
    assert!(dir.path().join("R/summary.csv").is_file());
    assert_eq!(names(dir.path()), ["M", "R", "S", "q.yaml"]);
}

#[test]
fn a_bad_value_a_set_writes_is_blamed_on_the_set_at_the_path_typed() {
    let dir = folder();
    for (set, want) in [
        (
            "layers.client.name=a.b",
            "<--set>: layers.client.name: layer name `a.b` is not usable in field paths",
        ),
        (
            "layers.0.name=a.b",
            "<--set>: layers.0.name: layer name `a.b` is not usable in field paths",
        ),
    ] {
        let (code, err) = validate(dir.path(), "q.yaml", &[set]);
        assert_eq!(code, Some(2), "{set}: {err}");
        assert!(err.starts_with(want), "{set}: {err}");
        assert!(!err.contains("q.yaml"), "{set}: {err}");
    }
}

#[test]
fn a_tab_that_indents_a_line_is_named_without_a_wrong_field() {
    let dir = folder();
    fs::write(
        dir.path().join("tab.yaml"),
        "name: a\nduration: 10s\nclients: { arrival: { kind: poisson, rate: 10/s } }\n\
         dependency: { concurrency: 1, service_time: { dist: constant, value: 1ms } }\n\
         \tseed: 1\n",
    )
    .unwrap();
    let (code, err) = validate(dir.path(), "tab.yaml", &[]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim_end(),
        "tab.yaml:5:1: line 5 is indented with a tab: a tab cannot indent YAML; use spaces"
    );
}

#[test]
fn a_tune_objective_no_run_measures_fails_and_writes_no_best() {
    let dir = folder();
    let out = stormsim(dir.path())
        .args([
            "tune",
            "q.yaml",
            "--set",
            "tune.space={layers.client.retry.max_attempts: [1, 2]}",
            "--set",
            "tune.objective={minimize: recovery_time_s}",
            "--set",
            "tune.budget=2",
            "--out",
            "t",
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: no run of any candidate measured recovery_time_s")
            && err.contains("no best.yaml was written"),
        "{err}"
    );
    assert!(!dir.path().join("t/best.yaml").exists());
    assert!(dir.path().join("t/tune.csv").is_file());
}

#[test]
fn a_thread_count_past_the_storage_says_the_real_range() {
    let dir = folder();
    let out = stormsim(dir.path())
        .args(["run", "q.yaml", "--threads", "99999999999"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("expected a whole number from 1 to "), "{err}");
    assert!(
        !err.contains("4294967295") && !err.contains("digits only"),
        "{err}"
    );
}

#[test]
fn a_set_into_a_sweep_entry_by_index_is_one_clear_error() {
    let dir = folder();
    fs::write(
        dir.path().join("s.yaml"),
        format!("{SCENARIO}sweep:\n  layers.client.retry.max_attempts: [1, 2, 3]\n"),
    )
    .unwrap();
    let (code, err) = validate(
        dir.path(),
        "s.yaml",
        &["sweep.layers.client.retry.max_attempts.0=0"],
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err.trim_end(),
        "<--set>: sweep.layers.client.retry.max_attempts.0: a sweep entry cannot be indexed: \
         `sweep.layers.client.retry.max_attempts` is one list of values, set whole \
         (--set 'sweep.layers.client.retry.max_attempts=[1, 2, 3]')"
    );
}

#[test]
fn a_line_break_in_a_path_is_shown_escaped() {
    let dir = folder();
    let out = stormsim(dir.path())
        .args(["run", "q.yaml", "--out", "o2\nerror: all runs FAILED"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let console = text(&out.stdout);
    assert!(
        console.contains("results: o2\\u{a}error: all runs FAILED"),
        "{console}"
    );
    assert!(!console.contains("\nerror:"), "{console}");
    // A refusal names the folder escaped too.
    let mine = dir.path().join("o\nerror: x");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("mine"), "x").unwrap();
    let out = stormsim(dir.path())
        .args(["run", "q.yaml", "--out", "o\nerror: x"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: o\\u{a}error: x already exists"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
}
