//! Guard rails: a storm built to explode (5 layers × 10 attempts, no
//! backoff, a dependency down for the whole run) hits `--max-events`
//! quickly, exits 1 naming the limit and how to raise it, and marks its
//! runs `aborted`; a calm variant of the same scenario completes.

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
