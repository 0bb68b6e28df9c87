//! Fourth hostile review: a shard's exact summary cells checked against
//! their column's type, the memory gate counting what grows with load,
//! periodic timers in the events estimate, the yardstick kept out of a
//! search, and the largest sweep refused from counts.

use std::fs;

use crate::common::files::{copy_dir, scenario, set_cell, stormsim};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

/// R6: a cell of another type than its column's (text where a number is
/// due, with `summary.csv` emptied to match; a float that is not finite; a
/// negative integer) is refused naming the file, line and column, exit 2,
/// nothing written; it used to panic in the merged tables.
#[test]
fn exact_cells_of_the_wrong_type_are_refused_with_their_place() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = [t.join("s0"), t.join("s1")];
    for (i, dir) in s.iter().enumerate() {
        stormsim()
            .arg("run")
            .arg(scenario("quickstart.yaml"))
            .args(["--quiet", "--shard", &format!("{i}/2"), "--out"])
            .arg(dir)
            .assert()
            .success();
    }
    // (column, exact cell, summary.csv's cell (None: as it is), message);
    // amplification stays as it is in summary.csv: an empty one is itself
    // refused there (it must be dependency_attempts / logical_requests).
    let cases: [(&str, &str, Option<&str>, &str); 6] = [
        ("amplification", "t:", None, "a finite number"),
        ("success_rate", "t:x", Some(""), "a finite number"),
        ("amplification", "f:NaN", None, "a finite number"),
        ("amplification", "f:inf", None, "a finite number"),
        ("amplification", "f:1e400", None, "a finite number"),
        ("succeeded", "i:-1", None, "`i:-1` is not an exact cell"),
    ];
    for (column, exact, shown, message) in cases {
        let d = t.join("damaged");
        let _ = fs::remove_dir_all(&d);
        copy_dir(&s[0], &d);
        set_cell(&d.join("summary.exact.csv"), 1, column, exact);
        if let Some(shown) = shown {
            set_cell(&d.join("summary.csv"), 1, column, shown);
        }
        let out = t.join("merged");
        stormsim()
            .arg("merge")
            .arg(&d)
            .arg(&s[1])
            .arg("--out")
            .arg(&out)
            .arg("--quiet")
            .assert()
            .code(2)
            .stderr(contains("summary.exact.csv: line 2, column "))
            .stderr(contains(format!("({column}): ")))
            .stderr(contains(message));
        assert!(!out.exists(), "{column} = {exact}: nothing is written");
    }
}

/// The layers of the review's repro: three nested fan-outs of 1 000, whose
/// runs grow toward `limits.max_in_flight`.
const FAN_OUT: &str = "layers=[{name: a, fan_out: 1000, timeout: 1s, retry: {max_attempts: 10}}, {name: b, fan_out: 1000, timeout: 1s, retry: {max_attempts: 10}}, {name: client, fan_out: 1000, timeout: 1s, retry: {max_attempts: 10}}]";

/// R5: under an address-space limit, runs that grow toward
/// `limits.max_in_flight` used to abort the process (exit 134, a failed
/// allocation) with two threads, or even one under a smaller limit. The
/// growth is now counted when runs are admitted, and the rail lowered
/// (with a note) when one run alone would not fit: the runs end at the
/// guard rail, exit 1, never an abort.
#[cfg(target_os = "linux")]
#[test]
fn runs_that_grow_to_the_in_flight_rail_do_not_abort_under_ulimit_v() {
    let bin = assert_cmd::cargo::cargo_bin("stormsim");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let script = "ulimit -v 1000000 && exec \"$0\" run \"$1\" --out \"$2\" --replicates 2 --threads 2 --quiet --set \"$3\"";
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(&bin)
        .arg(scenario("quickstart.yaml"))
        .arg(&out)
        .arg(FAN_OUT)
        .env_remove("STORMSIM_SHARDS")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("memory allocation"), "{err}");
    assert!(
        err.contains("note: limits.max_in_flight: 5000000 calls in flight would not fit"),
        "{err}"
    );
    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.contains("max_in_flight"), "{summary}");
}

/// R2: an autoscaler deciding every millisecond over 30 days is some
/// 2.6e9 events whatever the load: `validate` and `run` refuse it (the
/// runs are sure to stop at the events guard rail) and `check` finds it,
/// naming the interval.
#[test]
fn periodic_timers_count_in_the_events_estimate() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tick.yaml");
    fs::write(
        &file,
        "name: tick\nseed: 1\nduration: 30d\nclients:\n  arrival: { kind: poisson, rate: 1/m }\n  calls: { to: api, timeout: 1s }\nservices:\n  - name: api\n    concurrency: 4\n    replicas: 1\n    service_time: { dist: constant, value: 1ms }\n    autoscale: { target_utilization: 0.6, min: 1, max: 2, interval: 1ms, provision: 1ms, scale_in_delay: 1ms }\n",
    )
    .unwrap();
    stormsim()
        .arg("validate")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(contains(
            "error: limits.max_events: every run would stop at the guard rail",
        ))
        .stderr(contains("3e9 events (the autoscalers' decisions"))
        .stderr(contains("lengthen `autoscale.interval`"));
    stormsim()
        .arg("check")
        .arg(&file)
        .assert()
        .stdout(contains("events-over-guard-rail"));
    // An interval of a second: 2.6e6 decisions, no warning.
    let calm = fs::read_to_string(&file).unwrap().replace(
        "interval: 1ms, provision: 1ms, scale_in_delay: 1ms",
        "interval: 1s",
    );
    fs::write(&file, calm).unwrap();
    stormsim()
        .arg("validate")
        .arg(&file)
        .assert()
        .success()
        .stderr(contains("max_events").not());
}

const TUNE_BASE: &str = "name: r1tune\nseed: 7\nduration: 40s\nreplicates: 1\nclients:\n  arrival: { kind: poisson, rate: 200/s }\nlayers:\n  - name: client\n    timeout: 500ms\n    retry: { max_attempts: 4 }\ndependency:\n  concurrency: 8\n  service_time: { dist: constant, value: 20ms }\n  incidents:\n    - { kind: down, start: 10s, end: 20s }\nslo:\n  recovery_within: 30s\n";

/// R4: the yardstick (`analysis.*`), the incident, the offered load and
/// whole sections cannot be searched, as the seed and the SLO cannot; a
/// variant cannot change the analysis when the scenario has an SLO.
#[test]
fn the_yardstick_and_the_test_are_not_searched_nor_varied() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("analysis.recovery_threshold: [0.01, 0.9]", "the yardstick"),
        ("analysis.recovery_window: [1s, 5s]", "the yardstick"),
        ("dependency.incidents.0.end: [11s, 39s]", "the incidents"),
        (
            "clients.arrival.rate: [100/s, 200/s]",
            "the load the clients offer",
        ),
        ("layers: [[]]", "a whole section"),
        (
            "dependency: [{ concurrency: 8, service_time: { dist: constant, value: 1ms } }]",
            "a whole section",
        ),
    ];
    for (space, why) in cases {
        let file = tmp.path().join("t.yaml");
        let key = space.split(':').next().unwrap();
        fs::write(
            &file,
            format!(
                "{TUNE_BASE}tune:\n  space:\n    {space}\n  objective: {{ minimize: recovery_time_s }}\n  budget: 4\n"
            ),
        )
        .unwrap();
        let out = tmp.path().join("out");
        stormsim()
            .arg("tune")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(contains(format!(
                "tune.space.{key}: `{key}` cannot be searched"
            )))
            .stderr(contains(why));
        assert!(!out.exists());
    }
    // Variants judged by different recovery criteria under one SLO.
    stormsim()
        .arg("validate")
        .arg(scenario("quickstart.yaml"))
        .args([
            "--set",
            "variants=[{name: strict, set: {}}, {name: lenient, set: {analysis.recovery_threshold: 0.01}}]",
            "--set",
            "slo={recovery_within: 1s}",
        ])
        .assert()
        .code(2)
        .stderr(contains("analysis.recovery_threshold"))
        .stderr(contains("the analysis cannot be set from inside a variant or a sweep when the scenario has an SLO"));
    // Without an SLO there is no ranking: a variant may change it.
    stormsim()
        .arg("validate")
        .arg(scenario("quickstart.yaml"))
        .args([
            "--set",
            "variants=[{name: strict, set: {}}, {name: lenient, set: {analysis.recovery_threshold: 0.01}}]",
        ])
        .assert()
        .success();
}

/// L8: the largest sweep's results cannot fit a small address space: the
/// refusal comes from the counts, at once, before 100 000 variants are
/// built (which took about a minute).
#[cfg(target_os = "linux")]
#[test]
fn a_sweep_too_large_for_memory_is_refused_from_its_counts() {
    let bin = assert_cmd::cargo::cargo_bin("stormsim");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("sweep.yaml");
    let values = |n: usize| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    fs::write(
        &file,
        format!(
            "name: big\nduration: 1s\nclients:\n  arrival: {{ kind: poisson, rate: 10/s }}\nlayers:\n  - name: api\n    timeout: 1s\n    retry: {{ max_attempts: 2 }}\ndependency:\n  concurrency: 2\n  service_time: {{ dist: constant, value: 10ms }}\nsweep:\n  dependency.concurrency: [{}]\n  layers.api.retry.max_attempts: [{}]\n",
            values(1000),
            values(100)
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4000000 && exec \"$0\" run \"$1\" --out \"$2\" --quiet")
        .arg(&bin)
        .arg(&file)
        .arg(&out)
        .env_remove("STORMSIM_SHARDS")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the results of 100000 runs (100000 variants) would hold about "),
        "{err}"
    );
    assert!(err.contains(" or more in memory"), "{err}");
    // Refused from the counts, before any run: the message says so and
    // no folder was made (a timing bound here would be a timed test).
    assert!(err.contains("nothing was run"), "{err}");
    assert!(!out.exists());
}
