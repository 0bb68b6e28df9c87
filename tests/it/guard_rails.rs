//! Guard rails: a storm built to explode (5 layers × 10 attempts, no
//! backoff, a dependency down for the whole run) hits `--max-events`
//! quickly, exits 1 naming the limit and how to raise it, and marks its
//! runs `aborted`; a calm variant of the same scenario completes. The
//! events pending count against `--max-in-flight` too, and long timeouts
//! of attempts that fail fast no longer pile up in the queue.

use std::time::{Duration, Instant};

use assert_cmd::Command;

fn storm() -> String {
    let layer = |name: &str| {
        format!(
            "  - name: {name}\n    timeout: 5s\n    retry:\n      max_attempts: 10\n      \
             backoff: {{ kind: constant, base: 0s }}\n      jitter: none\n"
        )
    };
    let layers: String = ["l1", "l2", "l3", "l4", "l5"].map(layer).concat();
    format!(
        "name: explode\nduration: 10m\nclients:\n  arrival: {{ kind: poisson, rate: 5000/s }}\n\
         layers:\n{layers}dependency:\n  concurrency: 8\n  \
         service_time: {{ dist: constant, value: 10ms }}\n  incidents:\n    \
         - {{ kind: down, start: 0s, end: 10m }}\nvariants:\n  - {{ name: storm }}\n  \
         - {{ name: calm, set: {{ dependency.incidents: [], clients.arrival.rate: 1/s, duration: 10s }} }}\n"
    )
}

#[test]
fn an_exploding_storm_hits_the_event_guard() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("explode.yaml");
    std::fs::write(&file, storm()).unwrap();
    let out = tmp.path().join("out");
    let started = Instant::now();
    let o = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(["--max-events", "300000", "-q"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "bounded time");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: variant storm: stopped after 300000 events (limits.max_events); \
             raise it in the scenario or with --max-events"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("variant calm"), "{stderr}");
    assert!(!stderr.contains("internal error"), "{stderr}");

    let mut summary = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let headers = summary.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (variant, aborted) = (col("variant"), col("aborted"));
    let rows: Vec<csv::StringRecord> = summary.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    for row in rows {
        match &row[variant] {
            "storm" => assert!(row[aborted].contains("limits.max_events"), "{row:?}"),
            "calm" => assert_eq!(&row[aborted], "", "{row:?}"),
            other => panic!("variant {other}"),
        }
    }
}

/// Runs `yaml` with `args`; returns (exit code, stderr, the `aborted`
/// column of every row of summary.csv).
fn run_yaml(yaml: &str, args: &[&str]) -> (Option<i32>, String, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = tmp.path().join("out");
    let o = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let mut summary = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let aborted = summary
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "aborted");
    let aborted = aborted.unwrap();
    let rows = summary.records().map(|r| r.unwrap()[aborted].to_string());
    (o.status.code(), stderr, rows.collect())
}

/// 2000 requests/s, 4 attempts each with a 30 s timeout, every attempt
/// refused at once with a 503 for the whole run. Every attempt's timeout
/// used to stay in the event queue until due: 240 000 of them after 30 s
/// (and without bound for longer timeouts, until the process aborted).
/// Cancelled, they are gone: the events pending stay within 100, with
/// about 6 calls alive at any time, so the run completes under
/// `--max-in-flight 100`, which counts both.
#[test]
fn long_timeouts_of_fast_failures_do_not_pile_up() {
    let yaml = "name: stale-timeouts\nduration: 2m\n\
        clients:\n  arrival: { kind: poisson, rate: 2000/s }\n\
        layers:\n  - name: api\n    timeout: 30s\n    retry:\n      max_attempts: 4\n      \
        backoff: { kind: constant, base: 1ms }\n      jitter: none\n      retry_on: [503]\n\
        dependency:\n  concurrency: 8\n  service_time: { dist: constant, value: 10ms }\n  \
        incidents:\n    - { kind: errors, start: 0s, end: 2m, rate: 1.0, status: 503 }\n";
    let (code, stderr, aborted) = run_yaml(yaml, &["--max-in-flight", "100", "-q"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(aborted, vec![String::new()], "{stderr}");
}

/// Scheduled incidents are pending events from the start (two each) while
/// nothing is in flight yet: 30 incidents under `--max-in-flight 50` stop
/// the run on its first event, naming the events pending.
#[test]
fn pending_events_count_against_max_in_flight() {
    let incidents: String = (0..30)
        .map(|i| {
            format!(
                "    - {{ kind: latency, start: {}s, end: {}s, add: 1ms }}\n",
                2 * i,
                2 * i + 1
            )
        })
        .collect();
    let yaml = format!(
        "name: many-incidents\nduration: 1m\nclients:\n  arrival: {{ kind: poisson, rate: 10/s }}\n\
         layers:\n  - name: api\n    timeout: 1s\n\
         dependency:\n  concurrency: 8\n  service_time: {{ dist: constant, value: 10ms }}\n  \
         incidents:\n{incidents}"
    );
    let (code, stderr, aborted) = run_yaml(&yaml, &["--max-in-flight", "50", "-q"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: variant base: more than 50 events pending (limits.max_in_flight); \
             raise it in the scenario or with --max-in-flight"
        ),
        "{stderr}"
    );
    assert_eq!(aborted.len(), 1);
    assert!(aborted[0].contains("events pending"), "{aborted:?}");
    // With room for them, the same run completes.
    let (code, stderr, aborted) = run_yaml(&yaml, &["--max-in-flight", "100", "-q"]);
    assert_eq!((code, aborted), (Some(0), vec![String::new()]), "{stderr}");
}

/// One arrival through three layers of `fan_out: 1000` is 10^9 requests
/// expanded within a single event. The guard rail is checked as the
/// fan-out expands, so the run stops at `--max-in-flight` (exit 1, the
/// run flagged) instead of growing until the process aborts; and the
/// default limit, 5 000 000 in flight, is part of the memory estimate,
/// so a limit that could not fit in memory is refused before running.
#[test]
fn a_fan_out_below_a_fan_out_stops_at_the_guard_rail() {
    let yaml = "name: fan3\nduration: 1s\nclients: { arrival: { kind: poisson, rate: 1/s } }\n\
        layers:\n  - { name: a, fan_out: 1000 }\n  - { name: b, fan_out: 1000 }\n  \
        - { name: c, fan_out: 1000 }\n\
        dependency: { concurrency: 8, service_time: { dist: constant, value: 1ms } }\n";
    let (code, stderr, aborted) = run_yaml(yaml, &["--max-in-flight", "100000", "-q"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("limits.max_in_flight"), "{stderr}");
    assert_eq!(aborted.len(), 1);
    assert!(aborted[0].contains("in flight"), "{aborted:?}");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("fan3.yaml");
    std::fs::write(&file, yaml).unwrap();
    let o = Command::cargo_bin("stormsim")
        .unwrap()
        .args(["validate", "--set", "limits.max_in_flight=100000000"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("limits.max_in_flight: one run would need about 20.0 GB"),
        "{stderr}"
    );
}

/// A variant some of whose runs a guard rail stopped: its figures in
/// summary_by_variant.csv (and the console's) are over the runs that
/// reached their end, never an average with a stopped run's partial
/// figures, and the console flags every per-variant row that shows them.
#[test]
fn a_partly_stopped_variant_is_figured_over_its_finished_runs_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let o = Command::cargo_bin("stormsim")
        .unwrap()
        .args(["run", "scenarios/quickstart.yaml", "--out"])
        .arg(&out)
        .args(["--max-events", "30000"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let table = |name: &str| -> Vec<std::collections::BTreeMap<String, String>> {
        let mut r = csv::Reader::from_path(out.join(name)).unwrap();
        let h: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        r.records()
            .map(|x| {
                h.iter()
                    .cloned()
                    .zip(x.unwrap().iter().map(String::from))
                    .collect()
            })
            .collect()
    };
    let runs = table("summary.csv");
    let by_variant = table("summary_by_variant.csv");
    let mut partly = 0;
    for v in &by_variant {
        let mine: Vec<_> = runs
            .iter()
            .filter(|r| r["variant"] == v["variant"])
            .collect();
        let finished: Vec<_> = mine.iter().filter(|r| r["aborted"].is_empty()).collect();
        assert_eq!(v["aborted_runs"], (mine.len() - finished.len()).to_string());
        if finished.is_empty() || finished.len() == mine.len() {
            continue;
        }
        partly += 1;
        for fig in ["goodput", "refused", "peak_load_ratio", "amplification"] {
            let mean = finished
                .iter()
                .map(|r| r[fig].parse::<f64>().unwrap())
                .sum::<f64>()
                / finished.len() as f64;
            let got: f64 = v[&format!("{fig}_mean")].parse().unwrap();
            assert!(
                (got - mean).abs() <= 1e-6 * mean.abs().max(1.0),
                "{fig}: {got} vs {mean}"
            );
        }
        let after = stdout
            .lines()
            .skip_while(|l| !l.starts_with("after incident"))
            .find(|l| l.starts_with(v["variant"].as_str()))
            .unwrap();
        assert!(after.contains("ABORTED: figures over the"), "{stdout}");
    }
    assert_eq!(partly, 1, "{stdout}");
}

/// A cache's state per key (16 B each, allocated when the run starts) is
/// in the memory estimate: a key space too large for a run is refused
/// before anything runs, with the estimate and the field, exit 2; one
/// that fits loads.
#[test]
fn a_huge_cache_key_space_is_refused_with_the_estimate() {
    let yaml = |keys: u64| {
        format!(
            "name: keys
duration: 10s
clients:
  arrival: {{ kind: poisson, rate: 10/s }}
  calls: {{ to: app, timeout: 1s }}
services:
  - name: app
    concurrency: 8
    service_time: {{ dist: constant, value: 1ms }}
    cache: {{ keys: {keys}, capacity: 1000 }}
    calls:
      - to: db
  - name: db
    concurrency: 8
    service_time: {{ dist: constant, value: 5ms }}
"
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("keys.yaml");
    // 1 000 000 000 keys × 16 B = 16 GB, more than the 4 GB a run may use
    // (about 17 GB with the 1 GB that limits.max_in_flight's default
    // allows to grow: 5 000 000 × 200 B).
    std::fs::write(&file, yaml(1_000_000_000)).unwrap();
    let o = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "keys.yaml:10:20: services.app.cache.keys: one run would need about 17.0 GB of memory"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "services.app.cache.keys: 1000000000 keys (services.app.cache.keys) × 16 B of state each and 1000 entries × 40 B = 16.0 GB"
        ),
        "{stderr}"
    );
    // 20 000 000 keys (320 MB) fit.
    std::fs::write(&file, yaml(20_000_000)).unwrap();
    let o = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
