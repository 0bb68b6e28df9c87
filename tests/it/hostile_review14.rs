//! Fourteenth hostile review: a value quoted back as written never
//! replaces a bound of the range the message gives (N1); a `--set` that
//! names a variant by its name is blamed for its errors as one that names
//! it by index (N2); a field left out says what it takes (N3); a scenario
//! whose every run is sure to stop at the events guard rail is refused by
//! `tune` before any candidate runs (N4).

use std::fs;

use crate::common::files::{SMALL, names, stormsim};

fn stderr_of(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let o = stormsim().current_dir(dir).args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// N1: `instances=1.0` and `replicates: 01` spell the lower bound of
/// their range as it is read (1); the message quotes the value as
/// written and keeps the bound as it is. It said "from 1.0 to 1000000".
#[test]
fn a_value_quoted_as_written_never_replaces_a_bound() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.yaml"), SMALL).unwrap();
    let cases = [
        (
            "layers.edge.instances=1.0",
            "expected a whole number from 1 to 1000000, found `1.0`",
        ),
        (
            "replicates=01",
            "expected a whole number from 1 to 10000, found `01`",
        ),
        (
            "layers.edge.retry.max_attempts=1000.0",
            "expected a whole number from 1 to 1000, found `1000.0`",
        ),
    ];
    for (set, expected) in cases {
        let (code, err) = stderr_of(tmp.path(), &["validate", "s.yaml", "--set", set]);
        assert_eq!(code, Some(2), "{set}: {err}");
        assert!(err.contains(expected), "{set}: {err}");
    }
    // In the file, the same.
    fs::write(
        tmp.path().join("r.yaml"),
        SMALL.replace("replicates: 1", "replicates: 01"),
    )
    .unwrap();
    let (code, err) = stderr_of(tmp.path(), &["validate", "r.yaml"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "r.yaml:5:13: replicates: expected a whole number from 1 to 10000, found `01`"
        ),
        "{err}"
    );
}

/// N2: a `--set` into a variant named by its name is the cause of the
/// error it makes, as one naming the variant by index: `<--set>`, not the
/// file's line of the variant. It was placed at the file's line.
#[test]
fn a_set_that_names_a_variant_by_name_is_blamed_for_its_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let src = format!(
        "{SMALL}variants:\n  - name: no-retries\n    set: {{ layers.edge.retry.max_attempts: 1 }}\n  - name: two\n    set: {{ layers.edge.retry.max_attempts: 2 }}\n"
    );
    fs::write(tmp.path().join("v.yaml"), src).unwrap();
    for variant in ["no-retries", "0"] {
        let set = format!("variants.{variant}.set.layers.edge.retry.max_attempts=x");
        let (code, err) = stderr_of(tmp.path(), &["validate", "v.yaml", "--set", &set]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.starts_with("<--set>: variants.0.set.layers.edge.retry.max_attempts: in variant `no-retries`: expected a whole number from 1 to 1000, found `x`"),
            "{set}: {err}"
        );
        assert!(!err.contains("v.yaml"), "{set}: {err}");
    }
    // The other variant's entry in the file is still the file's.
    fs::write(
        tmp.path().join("w.yaml"),
        format!(
            "{SMALL}variants:\n  - name: no-retries\n    set: {{ layers.edge.retry.max_attempts: y }}\n"
        ),
    )
    .unwrap();
    let (_, err) = stderr_of(
        tmp.path(),
        &[
            "validate",
            "w.yaml",
            "--set",
            "variants.no-retries.description=plain",
        ],
    );
    assert!(err.starts_with("w.yaml:22:"), "{err}");
}

/// N3: a mapping without a field it needs says what the field takes, in
/// the words of every other message (a duration with a unit, one of the
/// kinds, a whole number and its range), not only serde's "missing field".
#[test]
fn a_field_left_out_says_what_it_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "backoff: { kind: exponential, base: 10ms, multiplier: 2, cap: 1s }",
            "backoff: { kind: exponential, cap: 1s }",
            "layers.edge.retry.backoff.base: missing field `base`; expected a duration with a unit, such as 250ms, 2s, 5m or 1h",
        ),
        (
            "backoff: { kind: exponential, base: 10ms, multiplier: 2, cap: 1s }",
            "backoff: { base: 10ms }",
            "layers.edge.retry.backoff.kind: missing field `kind`; expected one of: constant, linear, exponential",
        ),
        (
            "    retry:\n",
            "    hedging: { delay: 10ms }\n    retry:\n",
            "layers.edge.hedging.max_attempts: missing field `max_attempts`; expected a whole number from 1 to 1000",
        ),
    ];
    for (from, to, expected) in cases {
        fs::write(tmp.path().join("m.yaml"), SMALL.replacen(from, to, 1)).unwrap();
        let (code, err) = stderr_of(tmp.path(), &["validate", "m.yaml"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(expected), "{to}: {err}");
    }
}

/// N4: a search whose every candidate is sure to stop at the events
/// guard rail (its arrivals alone are over the limit) is refused at once,
/// exit 2, nothing written, as `run` refuses such a scenario. It ran its
/// whole budget of aborted candidates.
#[test]
fn a_search_sure_to_stop_at_the_guard_rail_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = format!(
        "{SMALL}tune:\n  space:\n    layers.edge.retry.max_attempts: {{ int: [1, 4] }}\n  budget: 4\n"
    );
    fs::write(tmp.path().join("t.yaml"), src).unwrap();
    let before = names(tmp.path());
    let (code, err) = stderr_of(
        tmp.path(),
        &[
            "tune",
            "t.yaml",
            "--set",
            "limits.max_events=100",
            "--out",
            "t",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("error: limits.max_events: every candidate's run would stop at the guard rail before its end")
            && err.trim_end().ends_with("nothing was written"),
        "{err}"
    );
    assert_eq!(names(tmp.path()), before, "nothing written");
    // At a limit its runs fit, it searches.
    let (code, err) = stderr_of(tmp.path(), &["tune", "t.yaml", "--out", "t", "-q"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(tmp.path().join("t/tune.csv").is_file());
}

/// N5: candidates the scenario does not take (a `base` above its `cap`,
/// both searched) cost no run: others are drawn in their place, so the
/// search runs its whole budget, as many candidates as a space without
/// such corners. It ran 13 runs of a budget of 20, on 5 candidates.
#[test]
fn candidates_the_scenario_does_not_take_cost_no_run() {
    let tmp = tempfile::tempdir().unwrap();
    let space = |cap: &str| {
        format!(
            "{SMALL}tune:\n  space:\n    layers.edge.retry.backoff.base: {{ log: [1ms, 1s] }}\n    layers.edge.retry.backoff.cap: {cap}\n  budget: 20\n"
        )
    };
    fs::write(
        tmp.path().join("crossing.yaml"),
        space("{ log: [1ms, 1s] }"),
    )
    .unwrap();
    fs::write(tmp.path().join("clear.yaml"), space("[10s, 20s]")).unwrap();
    let header = |file: &str| {
        let o = stormsim()
            .current_dir(tmp.path())
            .args(["tune", file, "--out", file.trim_end_matches(".yaml")])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let first = out.lines().next().unwrap_or_default();
        first
            .split_once(": ")
            .map(|(_, rest)| rest.split_once(": ").map_or("", |r| r.1).to_string())
            .unwrap_or_default()
    };
    let clear = header("clear.yaml");
    assert!(
        clear.starts_with("12 candidates, 20 runs of a budget of 20"),
        "{clear}"
    );
    assert_eq!(header("crossing.yaml"), clear);
    let csv = fs::read_to_string(tmp.path().join("crossing/tune.csv")).unwrap();
    let invalid = csv.lines().filter(|l| l.contains("is below base")).count();
    assert!(invalid > 0, "some drawn candidates crossed: {csv}");
}

/// N6: `plot` of a folder whose summary tables, read whole, cannot fit in
/// the memory the process may use is refused before it reads them, exit
/// 2, with the estimate and the budget, and changes nothing. It read on
/// until an allocation failed.
#[cfg(target_os = "linux")]
#[test]
fn plot_refuses_tables_too_large_for_its_memory_before_reading() {
    use crate::common::files::snapshot;
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s.yaml"), SMALL).unwrap();
    let o = stormsim()
        .current_dir(tmp.path())
        .args(["run", "s.yaml", "--out", "o", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // 60 MB of summary (sparse: no disk used), under a 100 MB address
    // space: 75 MB may be used, and the table with its rows takes 120.
    let big = fs::OpenOptions::new()
        .write(true)
        .open(tmp.path().join("o/summary.csv"))
        .unwrap();
    big.set_len(60 << 20).unwrap();
    drop(big);
    let charts = snapshot(&tmp.path().join("o/charts"));
    let report = fs::read(tmp.path().join("o/report.html")).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("stormsim");
    let o = std::process::Command::new("sh")
        .current_dir(tmp.path())
        .arg("-c")
        .arg(format!(
            "ulimit -v 100000 && exec '{}' plot o",
            bin.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: plot reads the summary tables of o whole (")
            && err.contains("more than this process may use (")
            && err.trim_end().ends_with("nothing was written"),
        "{err}"
    );
    assert_eq!(snapshot(&tmp.path().join("o/charts")), charts);
    assert_eq!(fs::read(tmp.path().join("o/report.html")).unwrap(), report);
}

/// N7: a field that does not apply to a kind whose name starts with a
/// vowel takes `an` (`an exponential service time`, `an errors
/// incident`). It said "a exponential".
#[test]
fn a_kind_that_starts_with_a_vowel_takes_an() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "service_time: { dist: exponential, mean: 5ms }",
            "service_time: { dist: exponential, mean: 5ms, p99: 9ms }",
            "`p99` does not apply to an exponential service time",
        ),
        (
            "queue: { capacity: 64 }",
            "queue: { capacity: 64 }\n  incidents: [ { kind: errors, start: 1s, end: 2s, rate: 0.5, add: 5ms } ]",
            "`add` does not apply to an errors incident",
        ),
    ];
    for (from, to, expected) in cases {
        fs::write(tmp.path().join("k.yaml"), SMALL.replacen(from, to, 1)).unwrap();
        let (code, err) = stderr_of(tmp.path(), &["validate", "k.yaml"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(expected), "{to}: {err}");
    }
}

/// N8: a whole number with a leading zero (`010`: octal 8 in YAML 1.1,
/// decimal 10 in YAML 1.2) is refused with why and how to write either,
/// in a file and in a `--set`; YAML 1.2's `0o` and `0x` numbers are read
/// as such. It was refused without a word on why.
#[test]
fn a_leading_zero_says_why_it_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let why = "(YAML 1.1 reads a number with a leading zero as octal, YAML 1.2 as decimal, so `010` is refused: write 10, or 0o10 for octal)";
    fs::write(
        tmp.path().join("z.yaml"),
        SMALL.replace("replicates: 1", "replicates: 010"),
    )
    .unwrap();
    let (code, err) = stderr_of(tmp.path(), &["validate", "z.yaml"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("found `010` {why}")), "{err}");
    fs::write(tmp.path().join("s.yaml"), SMALL).unwrap();
    let (code, err) = stderr_of(
        tmp.path(),
        &["validate", "s.yaml", "--set", "replicates=010"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("<--set>: replicates:") && err.contains(why),
        "{err}"
    );
    for (set, n) in [("replicates=0o10", "8"), ("replicates=0x10", "16")] {
        let o = stormsim()
            .current_dir(tmp.path())
            .args(["validate", "s.yaml", "--set", set])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains(&format!("{n} replicates each")),
            "{set}: {out}"
        );
    }
}
