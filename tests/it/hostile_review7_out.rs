//! Hostile review #7, outputs: named variants of different graphs (a call,
//! a pool or a cache only some of them have) write one table of the
//! union of their columns (N17); an aborted run's graph tables cover the
//! time it simulated (N15); the analysis service is decided once per
//! scenario, not per sweep point (N18); no time to full goodput without a
//! request to judge it by (N2).

use std::fs;
use std::path::Path;

use crate::common::files::{copy_dir, scenario, stormsim};

/// Every file under `dir` (the marker aside), with its bytes, sorted.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.retain(|(n, _)| n != ".stormsim");
    out.sort();
    out
}

/// `stormsim run FILE --out OUT -q` plus `extra`; its exit code and stderr.
fn run(file: &Path, out: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let o = stormsim()
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The rows of a table as maps of column to cell.
fn rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let h = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            h.iter()
                .zip(rec.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// `stormsim plot` on a copy of `dir`: the copy must be `dir` again.
fn plot_reproduces(dir: &Path, tmp: &Path) {
    let copy = tmp.join("plotted");
    copy_dir(dir, &copy);
    stormsim()
        .arg("plot")
        .arg(&copy)
        .arg("-q")
        .assert()
        .success();
    assert!(tree(&copy) == tree(dir), "plot redrew other bytes");
}

const GRAPHS: &str = r#"name: graphs
seed: 1
duration: 12s
bucket: 1s
replicates: 2
clients:
  arrival: { kind: poisson, rate: 50/s }
  calls: { to: api, timeout: 1s, retry: { max_attempts: 2 } }
services:
  - name: api
    concurrency: 20
    service_time: { dist: constant, value: 1ms }
    calls:
      - { to: db, timeout: 500ms, retry: { max_attempts: 2 } }
  - name: db
    concurrency: 10
    service_time: { dist: constant, value: 2ms }
    incidents:
      - { kind: down, start: 4s, end: 6s }
variants:
  - { name: base, set: {} }
  - name: pooled
    set: { services.api.calls.db.pool: { size: 5, connect: 1ms } }
  - name: cached
    set: { services.api.cache: { keys: 100, capacity: 10 } }
  - name: with-search
    set:
      services:
        - name: api
          concurrency: 20
          service_time: { dist: constant, value: 1ms }
          calls:
            - { to: db, timeout: 500ms, retry: { max_attempts: 2 } }
            - { to: search, timeout: 100ms, optional: true }
        - { name: search, concurrency: 10, service_time: { dist: constant, value: 1ms } }
        - name: db
          concurrency: 10
          service_time: { dist: constant, value: 2ms }
          incidents:
            - { kind: down, start: 4s, end: 6s }
"#;

/// N17: variants whose graphs differ (a pool, a cache, a call and a
/// service only one of them has) used to simulate and then fail writing
/// (`summary.csv: line 4: 92 fields, but the header has 91 columns`), and
/// their shards could not be merged. The tables now hold the union of the
/// columns, empty where a variant has no such call; `plot` redraws the
/// folder byte for byte, and the merged shards are the unsharded run.
#[test]
fn variants_of_different_graphs_write_the_union_of_their_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("graphs.yaml");
    fs::write(&file, GRAPHS).unwrap();
    let full = tmp.path().join("full");
    let (code, err) = run(&file, &full, &[]);
    assert_eq!(code, Some(0), "{err}");
    let summary = rows(&full.join("summary.csv"));
    assert_eq!(summary.len(), 8);
    for r in &summary {
        // Every variant has the pool's column; only `pooled` has a pool.
        assert_eq!(r["failed_pool_timeout"], "0", "{r:?}");
        // The call to search: empty where the variant has none.
        let has = r["variant"] == "with-search";
        assert_eq!(!r["attempts_api.search"].is_empty(), has, "{r:?}");
        assert_eq!(!r["calls_api.search"].is_empty(), has, "{r:?}");
        assert_eq!(!r["amplification_api.search"].is_empty(), has, "{r:?}");
        assert!(!r["attempts_api.db"].is_empty(), "{r:?}");
    }
    for r in rows(&full.join("timeseries.csv")) {
        let has = r["variant"] == "with-search";
        assert_eq!(!r["attempts_api.search"].is_empty(), has, "{r:?}");
    }
    for r in rows(&full.join("summary_by_variant.csv")) {
        let has = r["variant"] == "with-search";
        assert_eq!(!r["attempts_api.search_mean"].is_empty(), has, "{r:?}");
    }
    // The cache columns for every variant, filled only for `cached`'s api.
    for r in rows(&full.join("services.csv")) {
        let cached = r["variant"] == "cached" && r["service"] == "api";
        assert_eq!(!r["hits"].is_empty(), cached, "{r:?}");
    }
    plot_reproduces(&full, tmp.path());
    // Shards whose own runs have no pool or no cache write the columns
    // of the whole run, so that they merge into it.
    let shards = tmp.path().join("shards");
    for i in 0..4 {
        let d = shards.join(format!("shard-{i}-of-4"));
        let (code, err) = run(&file, &d, &["--shard", &format!("{i}/4")]);
        assert_eq!(code, Some(0), "{err}");
    }
    let merged = tmp.path().join("merged");
    stormsim()
        .arg("merge")
        .arg(&shards)
        .arg("--out")
        .arg(&merged)
        .arg("-q")
        .assert()
        .success();
    assert!(
        tree(&merged) == tree(&full),
        "merged shards differ from the run"
    );
}

const STORM: &str = r#"name: storm
seed: 1
duration: 20s
bucket: 1s
clients:
  arrival: { kind: poisson, rate: 500/s }
  calls:
    to: api
    timeout: 5s
    retry: { max_attempts: 10, backoff: { kind: constant, base: 0s }, jitter: none }
services:
  - name: api
    concurrency: 50
    service_time: { dist: constant, value: 1ms }
    calls:
      - to: db
        timeout: 5s
        retry: { max_attempts: 10, backoff: { kind: constant, base: 0s }, jitter: none }
  - name: db
    concurrency: 8
    service_time: { dist: constant, value: 10ms }
    incidents:
      - { kind: down, start: 2s, end: 20s }
"#;

/// N15: a run stopped by a guard rail a few seconds in. Its buckets after
/// the stop were written as zeros (in `timeseries.csv` and
/// `services_timeseries.csv`), as if measured, and `services.csv`'s
/// utilization and mean in flight were over the whole duration, not the
/// time simulated (so the analysis service's utilization disagreed with
/// the summary's `dependency_utilization`). Rows after the stop now keep
/// their time and nothing else, in both tables, and the figures are over
/// the time simulated.
#[test]
fn an_aborted_runs_graph_tables_cover_the_time_it_simulated() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("storm.yaml");
    fs::write(&file, STORM).unwrap();
    let out = tmp.path().join("out");
    let (code, err) = run(&file, &out, &["--max-events", "100000"]);
    assert_eq!(code, Some(1), "{err}");
    let summary = &rows(&out.join("summary.csv"))[0];
    assert!(summary["aborted"].contains("max_events"), "{summary:?}");
    let services = rows(&out.join("services.csv"));
    let db = services.iter().find(|r| r["service"] == "db").unwrap();
    assert_eq!(db["utilization"], summary["dependency_utilization"]);
    assert_eq!(db["peak_load_ratio_after"], "");
    // The stop is within the first seconds: most buckets come after it.
    let series = rows(&out.join("timeseries.csv"));
    assert_eq!(series.len(), 20, "one row per bucket still");
    let stopped: Vec<_> = series.iter().filter(|r| r["offered"].is_empty()).collect();
    assert!(stopped.len() >= 10, "{} rows after the stop", stopped.len());
    for r in &stopped {
        assert!(!r["t_s"].is_empty());
        assert_eq!(r["goodput"], "", "{r:?}");
        assert_eq!(r["attempts_clients.api"], "", "{r:?}");
    }
    let first_stopped = stopped[0]["t_s"].clone();
    let svc = rows(&out.join("services_timeseries.csv"));
    assert_eq!(svc.len(), 40);
    for r in &svc {
        let t: f64 = r["t_s"].parse().unwrap();
        let after = t >= first_stopped.parse::<f64>().unwrap();
        for col in ["attempts", "utilization", "replicas", "served", "refused"] {
            assert_eq!(r[col].is_empty(), after, "{col}: {r:?}");
        }
    }
    plot_reproduces(&out, tmp.path());
}

const MOVING_FOCUS: &str = r#"name: moving
seed: 3
duration: 20s
bucket: 1s
replicates: 2
clients:
  arrival: { kind: poisson, rate: 100/s }
  calls: { to: api, timeout: 1s, retry: { max_attempts: 3 } }
services:
  - name: api
    concurrency: 20
    service_time: { dist: constant, value: 1ms }
    calls:
      - { to: search, timeout: 300ms, retry: { max_attempts: 2 } }
      - { to: db, timeout: 300ms, retry: { max_attempts: 2 } }
  - name: search
    concurrency: 8
    service_time: { dist: constant, value: 5ms }
  - name: db
    concurrency: 4
    service_time: { dist: constant, value: 10ms }
    incidents:
      - { kind: down, start: 5s, end: 9s }
slo:
  success_rate: 0.9
  peak_load_after: 1.5
sweep:
  services.search.calls: [[], [{ to: db, timeout: 200ms }]]
"#;

/// N18: the default analysis service is the first service that calls
/// nothing: `search` in the base, `db` at the sweep point where search
/// calls db. Decided per point, the second point's dependency columns and
/// SLO described db while `scenario.resolved.yaml` (and so `plot` and a
/// rerun) said search. It is decided once for the scenario: every point
/// describes search, `plot` redraws the folder byte for byte and the
/// resolved scenario reruns the same tables; a variant without that
/// service is refused before anything runs, naming it.
#[test]
fn the_analysis_service_is_decided_once_per_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("moving.yaml");
    fs::write(&file, MOVING_FOCUS).unwrap();
    let out = tmp.path().join("out");
    let (code, err) = run(&file, &out, &[]);
    assert_eq!(code, Some(0), "{err}");
    let services = rows(&out.join("services.csv"));
    let summary = rows(&out.join("summary.csv"));
    assert_eq!(summary.len(), 4);
    for s in &summary {
        let search = services
            .iter()
            .find(|r| {
                r["variant"] == s["variant"]
                    && r["replicate"] == s["replicate"]
                    && r["service"] == "search"
            })
            .unwrap();
        // The dependency columns describe search at every point.
        assert_eq!(s["capacity_per_s"], search["capacity_per_s"], "{s:?}");
        assert_eq!(s["peak_load_ratio_after"], search["peak_load_ratio_after"]);
    }
    plot_reproduces(&out, tmp.path());
    let again = tmp.path().join("again");
    let (code, err) = run(&out.join("scenario.resolved.yaml"), &again, &[]);
    assert_eq!(code, Some(0), "{err}");
    for f in ["summary.csv", "summary_by_variant.csv", "timeseries.csv"] {
        assert!(
            fs::read(out.join(f)).unwrap() == fs::read(again.join(f)).unwrap(),
            "{f} of the resolved scenario differs"
        );
    }
    // A variant without the scenario's analysis service.
    let text = MOVING_FOCUS.split("slo:").next().unwrap().to_string()
        + "variants:\n  - { name: both, set: {} }\n  - name: no-search\n    set:\n      services:\n\
           \x20       - { name: api, concurrency: 20, service_time: { dist: constant, value: 1ms }, calls: [{ to: db, timeout: 300ms }] }\n\
           \x20       - { name: db, concurrency: 4, service_time: { dist: constant, value: 10ms } }\n";
    let bad = tmp.path().join("bad.yaml");
    fs::write(&bad, text).unwrap();
    let o = stormsim()
        .arg("run")
        .arg(&bad)
        .arg("--out")
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("in variant `no-search`: analysis.service: the variant has no service `search`, the scenario's analysis service"),
        "{err}"
    );
    assert!(!tmp.path().join("x").exists());
}

/// The summary of `yaml` run once: its first row.
fn summary_of(tmp: &Path, yaml: &str) -> std::collections::HashMap<String, String> {
    let file = tmp.join("s.yaml");
    fs::write(&file, yaml).unwrap();
    let out = tmp.join("s-out");
    let (code, err) = run(&file, &out, &["--force"]);
    assert_eq!(code, Some(0), "{err}");
    rows(&out.join("summary.csv")).remove(0)
}

/// N2: clients that stop before the incident ends leave no request after
/// it: every second after it looked healthy and `time_to_full_goodput_s`
/// read 0 (full goodput at once). With nothing to judge it is empty, as
/// the recovery verdict is undecided. A run whose clients stop later,
/// with requests after the incident, keeps its figure (the queue
/// consumers' 137 s: `scenarios/queue-consumer-dlq.yaml`, whose golden
/// results are unchanged).
#[test]
fn no_time_to_full_goodput_without_a_request_after_the_incident() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = |stop: &str| {
        format!(
            "name: quiet\nseed: 1\nduration: 30s\nbucket: 1s\n\
             clients:\n  arrival: {{ kind: poisson, rate: 100/s }}\n  schedule: [ {{ at: {stop}, rate: 0/s }} ]\n\
             layers: [{{ name: api, timeout: 200ms, retry: {{ max_attempts: 2 }} }}]\n\
             dependency:\n  concurrency: 4\n  service_time: {{ dist: constant, value: 5ms }}\n  \
             incidents: [{{ kind: down, start: 5s, end: 10s }}]\n\
             analysis: {{ trigger_end: 10s }}\n"
        )
    };
    let quiet = summary_of(tmp.path(), &yaml("8s"));
    assert_eq!(quiet["recovered"], "undecided", "{quiet:?}");
    assert_eq!(quiet["time_to_full_goodput_s"], "", "{quiet:?}");
    let busy = summary_of(tmp.path(), &yaml("20s"));
    assert_eq!(busy["recovered"], "true", "{busy:?}");
    assert!(!busy["time_to_full_goodput_s"].is_empty(), "{busy:?}");
    // The published scenario keeps its figure.
    let out = tmp.path().join("dlq");
    let (code, err) = run(&scenario("queue-consumer-dlq.yaml"), &out, &[]);
    assert_eq!(code, Some(0), "{err}");
    for r in rows(&out.join("summary_by_variant.csv")) {
        assert!(!r["time_to_full_goodput_s_mean"].is_empty(), "{r:?}");
    }
}
