//! Tenth hostile review, messages: a type error says the field's real
//! range (L1), `merge` checks a shard's rows against the runner's
//! invariants (L3), control characters are escaped one way everywhere
//! (L4), an `--out` inside another run's folder is refused for its real
//! reason (L6), and `plot` on a folder being written says what is the
//! matter (L10).

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::common::files::stormsim;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small run: one layer, a dependency down for 2 s.
const SMALL: &str = "\
name: small
seed: 3
duration: 6s
bucket: 1s
replicates: 1
clients:
  arrival: { kind: poisson, rate: 50/s }
layers:
  - name: edge
    timeout: 200ms
    retry:
      max_attempts: 3
      backoff: { kind: constant, base: 10ms }
      jitter: none
      retry_on: [timeout, connection, 503]
dependency:
  concurrency: 8
  service_time: { dist: exponential, mean: 5ms }
  queue: { capacity: 64 }
  incidents:
    - { kind: down, start: 2s, end: 4s }
";

fn write_small(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("small.yaml");
    fs::write(&f, SMALL).unwrap();
    f
}

/// L1: a whole-number field whose validation is narrower than its
/// storage type says the validated range in its type errors, whatever
/// the wrong value (too large, negative, a fraction) and wherever it is
/// written (the file, `--set`, a variant, a sweep).
#[test]
fn type_errors_state_the_fields_validated_range() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write_small(tmp.path());
    for (set, want) in [
        ("layers.edge.instances=1e12", "from 1 to 1000000"),
        ("layers.edge.instances=-1", "from 1 to 1000000"),
        ("layers.edge.instances=2.5", "from 1 to 1000000"),
        ("limits.max_events=-1", "from 1 to 18446744073709551615"),
        ("limits.max_in_flight=0.5", "from 1 to 18446744073709551615"),
        (
            "layers.edge.breaker={ kind: count, window_calls: -3 }",
            "from 1 to 4294967295",
        ),
        ("dependency.overload.status=70000", "from 400 to 599"),
        ("dependency.queue.capacity=-1", "from 0 to 100000000"),
        (
            "variants=[{ name: v, set: { layers.edge.instances: 2.5 } }]",
            "from 1 to 1000000",
        ),
        ("sweep.layers.edge.instances=[1, -2]", "from 1 to 1000000"),
    ] {
        let out = stormsim()
            .arg("validate")
            .arg(&f)
            .args(["--set", set])
            .output()
            .unwrap();
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{set}: {e}");
        assert!(
            e.contains(&format!("expected a whole number {want}")),
            "{set}: {e}"
        );
        assert!(!e.contains("0 to 4294967295"), "{set}: {e}");
        assert!(!e.contains("0 to 18446744073709551615"), "{set}: {e}");
    }
    // In the file, with its position.
    let bad = SMALL.replace(
        "    timeout: 200ms\n",
        "    timeout: 200ms\n    instances: 99999999999\n",
    );
    fs::write(&f, bad).unwrap();
    let out = stormsim().arg("validate").arg(&f).output().unwrap();
    let e = stderr(&out);
    assert!(
        e.contains(":11:16: layers.edge.instances: expected a whole number from 1 to 1000000"),
        "{e}"
    );
}

/// The cell of `column` in data row `row` of a table stormsim wrote.
fn cell(path: &Path, row: usize, column: &str) -> String {
    let text = fs::read_to_string(path).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    let i = rows[0].iter().position(|h| *h == column).unwrap();
    rows[row][i].to_string()
}

/// Cells set in a shard's table, the column the error names, and what
/// it says.
type Tamper<'a> = (Vec<(&'a str, String)>, &'a str, &'a str);

/// L3: `merge` checks each shard's `timeseries.csv` rows against the
/// identities every run keeps (counts whole and not negative, requests
/// that add up, failures that add up to their reasons, retries among
/// attempts, percentiles in order), naming the file, line and column.
#[test]
fn merge_refuses_timeseries_rows_no_run_can_write() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write_small(tmp.path());
    let shards = tmp.path().join("shards");
    for i in 0..2 {
        stormsim()
            .arg("run")
            .arg(&f)
            .args(["--quiet", "--replicates", "2", "--shard", &format!("{i}/2")])
            .arg("--out")
            .arg(shards.join(format!("s{i}")))
            .assert()
            .success();
    }
    let merge = |dir: &Path| {
        stormsim()
            .arg("merge")
            .arg(dir.join("s0"))
            .arg(dir.join("s1"))
            .arg("--out")
            .arg(tmp.path().join("merged"))
            .arg("--quiet")
            .output()
            .unwrap()
    };
    assert_eq!(
        merge(&shards).status.code(),
        Some(0),
        "untouched shards merge"
    );
    fs::remove_dir_all(tmp.path().join("merged")).unwrap();
    // Bucket 3 (data row 4, line 5) of the first run: during the outage,
    // with retries.
    let ts = shards.join("s0/timeseries.csv");
    let get = |c: &str| cell(&ts, 4, c).parse::<f64>().unwrap();
    assert!(get("retries") > 0.0 && get("failed") > 0.0);
    let plus = |c: &str, by: f64| (get(c) + by).to_string();
    let cases: Vec<Tamper> = vec![
        (
            vec![
                ("retries", plus("attempts_edge", 1.0)),
                ("retries_edge", plus("attempts_edge", 1.0)),
            ],
            "retries_edge",
            "more than its",
        ),
        (
            vec![("retries", plus("retries", 1.0))],
            "retries",
            "add up to",
        ),
        (
            vec![("succeeded", plus("succeeded", 1e6))],
            "succeeded",
            "always add up",
        ),
        (
            vec![("open_requests", plus("open_requests", 1.0))],
            "open_requests",
            "always add up",
        ),
        (
            vec![("failed_timeout", plus("failed_timeout", 1.0))],
            "failed",
            "its reasons",
        ),
        (
            vec![("latency_p50_ms", plus("latency_p99_ms", 1.0))],
            "latency_p99_ms",
            "below latency_p50_ms",
        ),
        (
            vec![("offered", "2.5".into())],
            "offered",
            "expected a whole number",
        ),
        (
            vec![("attempts", "-3".into())],
            "attempts",
            "no negative figure",
        ),
    ];
    for (k, (edits, column, why)) in cases.into_iter().enumerate() {
        let dir = tmp.path().join(format!("case{k}"));
        crate::common::files::copy_dir(&shards, &dir);
        for (c, v) in &edits {
            crate::common::files::set_cell(&dir.join("s0/timeseries.csv"), 4, c, v);
        }
        let out = merge(&dir);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{edits:?}: {e}");
        assert!(
            e.contains("s0/timeseries.csv: line 5, column ")
                && e.contains(&format!("({column}): ")),
            "{edits:?}: {e}"
        );
        assert!(e.contains(why), "{edits:?}: {e}");
        assert!(
            !tmp.path().join("merged").exists(),
            "{edits:?}: nothing written"
        );
    }
}

/// L4: a carriage return and the line and paragraph separators from
/// input are shown escaped (`\u{d}`), not as spaces, and `report.html`
/// escapes a control character as the console does (`\u{1b}`).
#[test]
fn control_characters_are_escaped_one_way_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("s.yaml");
    fs::write(
        &f,
        SMALL.replace("name: small", "name: \"a\\rb\\u2028c\\u2029d\""),
    )
    .unwrap();
    let out = stormsim().arg("validate").arg(&f).output().unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("a\\u{d}b\\u{2028}c\\u{2029}d"), "{e}");
    assert!(!e.contains("a b"), "{e}");
    // A --set value, quoted in its message.
    let small = write_small(tmp.path());
    let out = stormsim()
        .arg("validate")
        .arg(&small)
        .args(["--set", "layers.edge.retry.max_attempts=x\ry\u{2028}z"])
        .output()
        .unwrap();
    let e = stderr(&out);
    assert!(e.contains("x\\u{d}y\\u{2028}z"), "{e}");
    assert!(e.contains("a carriage return (U+000D)"), "{e}");
    assert!(!e.contains('\r') && !e.contains('\u{2028}'), "{e:?}");
    // The report escapes as the console does.
    fs::write(
        &f,
        SMALL.replace(
            "name: small",
            "name: small\ndescription: \"esc \\e[31m red\"",
        ),
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    stormsim()
        .arg("run")
        .arg(&f)
        .arg("--out")
        .arg(&out_dir)
        .arg("--quiet")
        .assert()
        .success();
    let html = fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("esc \\u{1b}[31m red"), "report.html");
    assert!(!html.contains("\\u{001B}") && !html.contains('\u{1b}'));
}

/// L6: an `--out` that is, or lies inside, a folder another run wrote
/// (its charts) is refused for that reason, not as "files stormsim did
/// not write"; an output folder written inside another is named as such
/// when the outer one is written again.
#[test]
fn an_out_inside_another_runs_folder_is_refused_for_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write_small(tmp.path());
    let out = tmp.path().join("out");
    let run = |to: &Path| {
        stormsim()
            .arg("run")
            .arg(&f)
            .arg("--out")
            .arg(to)
            .arg("--quiet")
            .output()
            .unwrap()
    };
    assert!(run(&out).status.success());
    let before = fs::read_dir(out.join("charts")).unwrap().count();
    for (to, how) in [
        (out.join("charts"), "is the folder `charts` of "),
        (
            out.join("charts").join("x"),
            "lies inside the folder `charts` of ",
        ),
    ] {
        let o = run(&to);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains(how), "{e}");
        assert!(e.contains("holds the results of a run"), "{e}");
        assert!(!e.contains("did not write"), "{e}");
        assert_eq!(fs::read_dir(out.join("charts")).unwrap().count(), before);
    }
    // A run folder written inside another: the outer one says so.
    assert!(run(&out.join("sub")).status.success());
    let o = run(&out);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("another output folder of stormsim's written inside it"),
        "{e}"
    );
    assert!(!e.contains("did not write"), "{e}");
}

/// L10: `plot` on a folder that is not a finished run's says which:
/// empty, missing the tables a run writes (named), or being written by
/// a run now (which holds its lock); only a missing folder is "no such
/// folder".
#[test]
fn plot_says_why_a_folder_cannot_be_drawn_yet() {
    let tmp = tempfile::tempdir().unwrap();
    let plot = |dir: &Path| {
        let o = stormsim().arg("plot").arg(dir).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        stderr(&o)
    };
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let e = plot(&empty);
    assert!(e.contains("is empty: no run has been written there"), "{e}");
    assert!(!e.contains("no such"), "{e}");
    let part = tmp.path().join("part");
    fs::create_dir(&part).unwrap();
    fs::write(part.join("summary.csv"), "variant\n").unwrap();
    let e = plot(&part);
    assert!(
        e.contains("it has no scenario.resolved.yaml, timeseries.csv and summary_by_variant.csv"),
        "{e}"
    );
    assert!(plot(&tmp.path().join("nowhere")).contains("no such folder"));
    // A long run writing `slow` for the first time: the folder does not
    // exist yet, and its lock is held.
    let f = tmp.path().join("slow.yaml");
    fs::write(
        &f,
        SMALL
            .replace("duration: 6s", "duration: 3000s")
            .replace("rate: 50/s", "rate: 5000/s")
            .replace("replicates: 1", "replicates: 50"),
    )
    .unwrap();
    let slow = tmp.path().join("slow");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("stormsim"))
        .arg("run")
        .arg(&f)
        .args(["--quiet", "--threads", "1", "--out"])
        .arg(&slow)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock_seen = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(25));
        fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".stormsim-lock-")
            })
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    let e = plot(&slow);
    let _ = child.kill();
    let _ = child.wait();
    assert!(lock_seen);
    assert!(
        e.contains(&format!("(process {}) is writing", child.id())),
        "{e}"
    );
    assert!(!e.contains("no such folder"), "{e}");
}
