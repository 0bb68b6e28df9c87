//! Refusals a hostile review asked for, one test per class: overrides or
//! search dimensions on one field (which one applies would depend on
//! order, and labels would name values that never ran), a searched field
//! that changes nothing, a file of the user's where the output folder's
//! lock goes, errors listed without bound, and a command whose results
//! alone would not fit in memory (refused before anything runs, exit 2).

use std::fs;
use std::path::Path;

use assert_cmd::Command;

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

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
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
    let hash = {
        // FNV-1a 64 of the folder's name, as the lock's name says.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in b"R" {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    };
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
