//! Adaptive concurrency limits (`adaptive_concurrency` on a service), run
//! whole:
//!
//! - Envoy's gradient controller under a latency incident on the database
//!   behind the limited service: the limit falls and rejections rise while
//!   the latency lasts; after it the limit returns near its value before
//!   and rejections stop;
//! - a retry storm that never recovers on its own (a queue longer than the
//!   callers wait): the default `min_concurrency` (3) sheds enough for the
//!   service to recover, a `min_concurrency` above what the service can
//!   hold never limits and the storm goes on, exactly as without a limit
//!   (envoy#38338, #46532);
//! - Vegas with go-concurrency-limits' one-second window, on a service
//!   whose dependency fails 2% of its requests from the incident on: one
//!   failure decides a whole window, the limit falls to 1 and stays there
//!   after the latency is back to normal (go-concurrency-limits#117),
//!   while Netflix's per-sample Vegas keeps its limit;
//! - every run keeps the invariants (each request at a service accounted
//!   for once, `limited` included), and is deterministic.

use stormsim::invariants;
use stormsim::metrics::services::{GraphTables, ServiceRow};
use stormsim::metrics::{Summary, tabulate, tabulate_services};
use stormsim::model::{ModelConfig, World};
use stormsim::scenario::{load_str, to_model};

/// `api` (50 workers, 2 ms of its own work, then a call to `db`, holding
/// its worker) with `adaptive` (a YAML line, or empty), `db` (10 ms, 200
/// workers) with a +200 ms latency incident over [60 s, 90 s) and
/// `db_incidents` more; clients at `rate` retrying timeouts (1 s) and 503s
/// up to 3 attempts.
fn scenario(
    rate: u32,
    replicas: u32,
    queue: u32,
    adaptive: &str,
    db_incidents: &str,
) -> ModelConfig {
    let adaptive = if adaptive.is_empty() {
        String::new()
    } else {
        format!("    adaptive_concurrency: {adaptive}\n")
    };
    let yaml = format!(
        "name: adaptive-test
seed: 1
duration: 200s
bucket: 5s
clients:
  arrival: {{ kind: poisson, rate: {rate}/s }}
  calls:
    to: api
    timeout: 1s
    retry:
      max_attempts: 3
      backoff: {{ kind: exponential, base: 10ms, cap: 100ms }}
      jitter: full
      retry_on: [timeout, connection, 503]
services:
  - name: api
    replicas: {replicas}
    concurrency: 50
    queue: {{ capacity: {queue} }}
    service_time: {{ dist: exponential, mean: 2ms }}
{adaptive}    calls:
      - to: db
  - name: db
    concurrency: 200
    service_time: {{ dist: exponential, mean: 10ms }}
    queue: {{ capacity: 1000 }}
    incidents:
      - {{ kind: latency, add: 200ms, start: 60s, end: 90s }}
{db_incidents}"
    );
    to_model(&load_str(&yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}")))
}

/// A run's summary and graph tables, its invariants checked.
fn run(cfg: &ModelConfig, seed: u64) -> (Summary, GraphTables) {
    let (rec, info) = World::new(cfg, seed).run();
    let ctx = cfg.run_context();
    let (rows, s) = tabulate(&rec, &info, &ctx);
    let g = tabulate_services(&rec, &ctx, &s);
    let broken = invariants::violations(cfg, &s, &rows, &g);
    assert!(broken.is_empty(), "{broken:?}");
    (s, g)
}

/// `api`'s rows over [from, to) seconds.
fn api(g: &GraphTables, from: f64, to: f64) -> Vec<&ServiceRow> {
    g.rows
        .iter()
        .filter(|r| r.service == 0 && r.t_s >= from && r.t_s < to)
        .collect()
}

fn mean_limit(rows: &[&ServiceRow]) -> f64 {
    rows.iter()
        .map(|r| r.concurrency_limit.unwrap())
        .sum::<f64>()
        / rows.len() as f64
}

fn limited(rows: &[&ServiceRow]) -> (u64, u64) {
    (
        rows.iter().map(|r| r.counts.limited).sum(),
        rows.iter().map(|r| r.counts.attempts).sum(),
    )
}

#[test]
fn the_gradient_limit_falls_under_a_latency_incident_and_returns_after_it() {
    // 500/s need ≈ 6 of api's 50 workers (≈ 12 ms each), and ≈ 106
    // during the incident (≈ 212 ms).
    let cfg = scenario(500, 1, 1000, "{ kind: gradient }", "");
    let (_, g) = run(&cfg, 1);
    let before = api(&g, 10.0, 60.0);
    let during = api(&g, 65.0, 90.0);
    // Until the next minRTT measurement (60 s + up to 15% after the last,
    // which ended during the incident).
    let after = api(&g, 95.0, 115.0);
    let (lb, ld, la) = (mean_limit(&before), mean_limit(&during), mean_limit(&after));
    // Before: the latency never rises, the gradient (1.25 × minRTT ÷
    // sampleRTT) stays above 1 and the limit near its maximum (1000) but
    // for a minRTT measurement (3 for a moment).
    assert!(lb > 500.0, "before {lb}");
    // During: the limit falls to about what the workers hold (the
    // latency rises again past it, as requests queue).
    assert!(ld < 0.15 * lb && ld < 150.0, "during {ld} vs before {lb}");
    let (rb, ab) = limited(&before);
    let (rd, ad) = limited(&during);
    let (ra, aa) = limited(&api(&g, 95.0, 200.0));
    assert!(rd as f64 > 0.3 * ad as f64, "during: {rd} of {ad} limited");
    assert!(
        (rb as f64) < 0.02 * ab as f64,
        "before: {rb} of {ab} limited"
    );
    // After: back near its value before, rejections rare again.
    assert!(la > 0.6 * lb, "after {la} vs before {lb}");
    assert!(
        (ra as f64) < 0.02 * aa as f64,
        "after: {ra} of {aa} limited"
    );
    let sm = g.services.iter().find(|x| x.service == 0).unwrap();
    assert!(sm.totals.limited > 0);
    let mean = sm.concurrency_limit_mean.unwrap();
    assert!(mean > ld && mean < 1000.0, "{mean}");
    let db = g.services.iter().find(|x| x.service == 1).unwrap();
    assert!(db.concurrency_limit_mean.is_none() && db.totals.limited == 0);
}

#[test]
fn a_high_min_concurrency_never_limits_and_the_storm_never_ends() {
    // 3000/s against 50 workers of ≈ 12 ms (≈ 4170/s); the incident cuts
    // that to ≈ 240/s and fills the 10 000-long queue: 2.4 s of waiting,
    // more than the callers' 1 s, so every attempt times out and is
    // retried, and the queue stays full after the incident.
    let outside = |adaptive: &str| {
        let (s, g) = run(&scenario(3000, 1, 10_000, adaptive, ""), 1);
        (s.success_rate_outside_incidents.unwrap(), g)
    };
    let (none, _) = outside("");
    let (low, g_low) = outside("{ kind: gradient }");
    let (high, g_high) = outside("{ kind: gradient, min_concurrency: 20000, max_limit: 20000 }");
    assert!(none < 0.5, "without a limit: {none}");
    assert!(low > 0.98, "min_concurrency 3: {low}");
    assert!(high < 0.5, "min_concurrency 20000: {high}");
    assert!((high - none).abs() < 0.02, "{high} vs {none}");
    // The high floor never moved the limit nor rejected anything.
    assert!(
        api(&g_high, 0.0, 200.0)
            .iter()
            .all(|r| r.concurrency_limit == Some(20000.0))
    );
    assert_eq!(limited(&api(&g_high, 0.0, 200.0)).0, 0);
    // The default one recovered within seconds of the incident's end.
    let tail = api(&g_low, 100.0, 200.0);
    let (r, a) = limited(&tail);
    assert!((r as f64) < 0.01 * a as f64, "{r} of {a}");
}

#[test]
fn windowed_vegas_stays_at_one_after_the_incident_while_per_sample_vegas_does_not() {
    let errors = "      - { kind: errors, start: 60s, end: 200s, rate: 0.02, status: 500 }\n";
    let tail = |adaptive: &str| {
        let (_, g) = run(&scenario(500, 1, 1000, adaptive, errors), 1);
        mean_limit(&api(&g, 120.0, 200.0))
    };
    let windowed = tail("{ kind: vegas, window: 1s }");
    let per_sample = tail("{ kind: vegas }");
    // Each 1 s window at limit 1 holds ~80 answers: with 2% failing, all
    // but ~20% of windows hold one and decrease; the others add 1.
    assert!(windowed < 1.6, "windowed: {windowed}");
    assert!(per_sample > 4.0, "per sample: {per_sample}");
}

#[test]
fn a_limited_run_is_deterministic() {
    let cfg = scenario(500, 2, 1000, "{ kind: gradient }", "");
    let (_, a) = run(&cfg, 7);
    let (_, b) = run(&cfg, 7);
    assert_eq!(a, b);
}

/// A gradient window of 1 ns over a run of 200 s: the windows without a
/// sample are passed over, so the run ends (before, it spun through
/// 2 × 10^11 empty windows, hours, deaf to Ctrl-C), and the limit it
/// reaches is the one a 1 µs window reaches: every sample of either ends
/// its window, so the two runs see the same windows.
#[test]
fn a_one_nanosecond_gradient_window_ends_in_the_events_it_needs() {
    let at = |interval: &str| {
        let cfg = scenario(
            200,
            1,
            100,
            &format!("{{ kind: gradient, min_concurrency: 3, sample_interval: {interval} }}"),
            "",
        );
        run(&cfg, 1).0
    };
    let (ns, us) = (at("1ns"), at("1us"));
    assert!(ns.events < 1_000_000, "{}", ns.events);
    assert_eq!(ns.logical_requests, us.logical_requests);
    assert!(ns.succeeded > 0);
}
