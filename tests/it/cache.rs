//! Caches (`cache` on a service), run whole:
//!
//! - the stationary hit ratio of LRU under independent Zipf keys agrees
//!   with Che, Tung and Wang's approximation (computed here, on its own)
//!   within 4 standard errors of the run's estimate (batch means over the
//!   buckets) plus 1% for the approximation;
//! - a TTL lowers the hit ratio as renewal arithmetic says: with every key
//!   held (no eviction), a key asked for at rate r with a TTL τ has hit
//!   ratio rτ ÷ (1 + rτ); a TTL far below a key's inter-arrival time
//!   leaves almost no hits;
//! - coalescing keeps at most one miss per key in flight: with one key,
//!   the database never holds more than one request; without it, dozens;
//! - a flush drops the hit ratio to about 0 and the database's load
//!   jumps; with coalescing the cache refills, without it (and a queue
//!   longer than the app waits) it never does;
//! - every run conserves lookups (hits + misses + coalesced = requests
//!   served by the cache) and the other invariants, and is deterministic.

use stormsim::invariants;
use stormsim::metrics::services::{CacheCounts, GraphTables, ServiceRow};
use stormsim::metrics::{Summary, tabulate, tabulate_services};
use stormsim::model::{ModelConfig, World};
use stormsim::scenario::{load_str, to_model};

/// `app` (a cache `cache`, a YAML flow map, and `incidents`) in front of
/// `db` (`db` its YAML lines), clients at `rate` without retries unless
/// `retry` is a YAML retry map.
fn scenario(rate: u32, duration: u32, cache: &str, db: &str, app_timeout: &str) -> ModelConfig {
    scenario_in(rate, duration, 5, cache, db, app_timeout)
}

/// [`scenario`] with buckets of `bucket` seconds.
fn scenario_in(
    rate: u32,
    duration: u32,
    bucket: u32,
    cache: &str,
    db: &str,
    app_timeout: &str,
) -> ModelConfig {
    let yaml = format!(
        "name: cache-test
seed: 3
duration: {duration}s
bucket: {bucket}s
clients:
  arrival: {{ kind: poisson, rate: {rate}/s }}
  calls:
    to: app
    timeout: 2s
services:
  - name: app
    service_time: {{ dist: constant, value: 1ms }}
    cache: {cache}
    calls:
      - to: db
        timeout: {app_timeout}
{db}"
    );
    to_model(&load_str(&yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}\n{yaml}")))
}

/// A database that answers every query in 1 ms (no queue).
const FAST_DB: &str = "  - name: db
    service_time: { dist: constant, value: 1ms }
";

/// A run's summary and graph tables, its invariants checked, and every
/// lookup of `app` (service 0) accounted for.
fn run(cfg: &ModelConfig, seed: u64) -> (Summary, GraphTables) {
    let (rec, info) = World::new(cfg, seed).run();
    let ctx = cfg.run_context();
    let (rows, s) = tabulate(&rec, &info, &ctx);
    let g = tabulate_services(&rec, &ctx, &s);
    let broken = invariants::violations(cfg, &s, &rows, &g);
    assert!(broken.is_empty(), "{broken:?}");
    let app = g.services.iter().find(|x| x.service == 0).unwrap();
    let c = app.cache.unwrap();
    assert_eq!(c.lookups(), app.totals.served, "conservation of lookups");
    assert!(
        g.services
            .iter()
            .all(|x| x.service == 0 || x.cache.is_none()),
        "only the app has a cache"
    );
    (s, g)
}

fn app_rows(g: &GraphTables, from: f64, to: f64) -> Vec<&ServiceRow> {
    g.rows
        .iter()
        .filter(|r| r.service == 0 && r.t_s >= from && r.t_s < to)
        .collect()
}

fn db_rows(g: &GraphTables, from: f64, to: f64) -> Vec<&ServiceRow> {
    g.rows
        .iter()
        .filter(|r| r.service == 1 && r.t_s >= from && r.t_s < to)
        .collect()
}

/// The hit ratio over `rows` and its standard error from the buckets'
/// ratios (batch means).
fn hit_ratio(rows: &[&ServiceRow]) -> (f64, f64) {
    let ratios: Vec<f64> = rows
        .iter()
        .map(|r| r.cache.unwrap().hit_ratio().unwrap())
        .collect();
    let n = ratios.len() as f64;
    let mean = ratios.iter().sum::<f64>() / n;
    let var = ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

fn total(rows: &[&ServiceRow]) -> CacheCounts {
    let mut t = CacheCounts::default();
    for r in rows {
        let c = r.cache.unwrap();
        t.hits += c.hits;
        t.misses += c.misses;
        t.coalesced += c.coalesced;
    }
    t
}

/// Che's approximation for `keys` Zipf keys of exponent `s` and an LRU
/// cache of `capacity`: T solves Σ (1 − e^(−p_k T)) = capacity; the hit
/// ratio is Σ p_k (1 − e^(−p_k T)).
fn che(keys: u32, s: f64, capacity: u32) -> f64 {
    let w: Vec<f64> = (1..=keys).map(|k| f64::from(k).powf(-s)).collect();
    let sum: f64 = w.iter().sum();
    let p: Vec<f64> = w.iter().map(|x| x / sum).collect();
    let filled = |t: f64| p.iter().map(|q| 1.0 - (-q * t).exp()).sum::<f64>();
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while filled(hi) < f64::from(capacity) {
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if filled(mid) < f64::from(capacity) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    p.iter().map(|q| q * (1.0 - (-q * hi).exp())).sum()
}

#[test]
fn the_stationary_lru_hit_ratio_follows_ches_approximation() {
    for (keys, s, capacity) in [(2000, 0.8, 200), (10_000, 1.1, 500)] {
        let cache = format!("{{ keys: {keys}, exponent: {s}, capacity: {capacity}, warm: false }}");
        let cfg = scenario(1000, 400, &cache, FAST_DB, "1s");
        let (_, g) = run(&cfg, 1);
        // The first 100 s fill the cache; the other 60 buckets are the
        // stationary state.
        let (mean, se) = hit_ratio(&app_rows(&g, 100.0, 400.0));
        let want = che(keys, s, capacity);
        eprintln!(
            "keys {keys}, exponent {s}, capacity {capacity}: {mean:.4} ± {se:.4}, Che {want:.4}"
        );
        assert!(
            (mean - want).abs() <= 4.0 * se + 0.01,
            "keys {keys}, exponent {s}, capacity {capacity}: hit ratio {mean:.4} (se {se:.4}), Che {want:.4}"
        );
        assert!(se < 0.01, "se {se}");
    }
}

#[test]
fn a_ttl_lowers_the_hit_ratio_as_renewal_arithmetic_says() {
    // 100 keys alike, all held: each asked for 10 times a second. A TTL of
    // 100 ms: rτ = 1, a hit ratio of 1/2 (a little less: the 2 ms between a
    // miss and its fill miss too).
    let cfg = scenario(
        1000,
        200,
        "{ keys: 100, exponent: 0, capacity: 100, ttl: 100ms }",
        FAST_DB,
        "1s",
    );
    let (_, g) = run(&cfg, 1);
    let (mean, se) = hit_ratio(&app_rows(&g, 10.0, 200.0));
    eprintln!("ttl 100 ms: {mean:.4} ± {se:.4}");
    assert!(
        (mean - 0.5).abs() <= 4.0 * se + 0.02,
        "ttl 100 ms: hit ratio {mean:.4} (se {se:.4}), expected 0.5"
    );
    // Without the TTL every request after the first of its key hits.
    let cfg = scenario(
        1000,
        60,
        "{ keys: 100, exponent: 0, capacity: 100 }",
        FAST_DB,
        "1s",
    );
    let (_, g) = run(&cfg, 1);
    let t = total(&app_rows(&g, 10.0, 60.0));
    assert_eq!(t.misses, 0, "every key is held from the start");
    // 1000 keys asked for 0.1 times a second each and a 10 ms TTL:
    // rτ = 0.001, a hit ratio of about 0.001.
    let cfg = scenario(
        100,
        200,
        "{ keys: 1000, exponent: 0, capacity: 1000, ttl: 10ms }",
        FAST_DB,
        "1s",
    );
    let (_, g) = run(&cfg, 1);
    let t = total(&app_rows(&g, 0.0, 200.0));
    let ratio = t.hit_ratio().unwrap();
    eprintln!("ttl 10 ms: {ratio:.5}");
    assert!(ratio < 0.005, "ttl far below the inter-arrival: {ratio}");
}

/// A database of 100 workers that takes 100 ms per query.
const SLOW_DB: &str = "  - name: db
    concurrency: 100
    queue: { capacity: 1000 }
    service_time: { dist: constant, value: 100ms }
";

/// The most requests the database held at once.
fn db_peak(g: &GraphTables) -> u32 {
    g.replicas
        .iter()
        .filter(|r| r.service == 1)
        .map(|r| r.counts.peak_inside)
        .max()
        .unwrap()
}

#[test]
fn coalescing_keeps_one_miss_per_key_in_flight() {
    // One key, asked for 500 times a second, never cached for long (a
    // 1 ms TTL): every request misses or waits for a miss.
    let one_key = "{ keys: 1, capacity: 1, ttl: 1ms, coalesce: true }";
    let cfg = scenario(500, 60, one_key, SLOW_DB, "1s");
    let (_, g) = run(&cfg, 1);
    let app = g.services.iter().find(|x| x.service == 0).unwrap();
    let db = g.services.iter().find(|x| x.service == 1).unwrap();
    let c = app.cache.unwrap();
    eprintln!("one key, coalescing: {c:?}, database peak {}", db_peak(&g));
    assert_eq!(db_peak(&g), 1, "one miss in flight at the database");
    assert_eq!(c.misses, db.totals.attempts, "each miss is one query");
    // A query takes 100 ms: about 10 flights a second, the other ~490
    // requests wait for one.
    assert!(
        (550..=650).contains(&c.misses),
        "misses {} in 60 s",
        c.misses
    );
    assert!(c.coalesced > 25 * c.misses, "{c:?}");
    // Five keys: at most five in flight.
    let cfg = scenario(
        500,
        60,
        "{ keys: 5, exponent: 0, capacity: 1, ttl: 1ms, coalesce: true }",
        SLOW_DB,
        "1s",
    );
    let (_, g) = run(&cfg, 1);
    assert!(db_peak(&g) <= 5 && db_peak(&g) >= 4, "{}", db_peak(&g));
    // Without coalescing: every request for the key is a query, about 50
    // in flight at once (500/s × 100 ms).
    let cfg = scenario(500, 60, "{ keys: 1, capacity: 1, ttl: 1ms }", SLOW_DB, "1s");
    let (_, g) = run(&cfg, 1);
    let c = g.services[0].cache.unwrap();
    assert_eq!(c.coalesced, 0);
    assert!(db_peak(&g) >= 40, "peak {}", db_peak(&g));
}

/// The cold-cache shape: 20 000 keys of exponent 1.3, 1000 cached (a hit
/// ratio of about 0.9), a database of 400 queries/s with a long queue, a
/// 300 ms query timeout; the cache is flushed over [60 s, 61 s); buckets
/// of 1 s.
fn flushed(coalesce: bool) -> ModelConfig {
    let cache = format!(
        "{{ keys: 20000, exponent: 1.3, capacity: 1000, coalesce: {coalesce} }}\n    incidents:\n      - {{ kind: flush, start: 60s, end: 61s }}"
    );
    let db = "  - name: db
    concurrency: 16
    queue: { capacity: 1000 }
    service_time: { dist: exponential, mean: 40ms }
";
    scenario_in(1000, 150, 1, &cache, db, "300ms")
}

#[test]
fn a_flush_empties_the_cache_and_only_coalescing_refills_it() {
    for coalesce in [true, false] {
        let cfg = flushed(coalesce);
        let (_, g) = run(&cfg, 1);
        let (before, _) = hit_ratio(&app_rows(&g, 10.0, 60.0));
        assert!((before - che(20000, 1.3, 1000)).abs() < 0.03, "{before}");
        let (flush, _) = hit_ratio(&app_rows(&g, 60.0, 61.0));
        assert!(flush < 0.01, "the second of the flush: {flush}");
        let db_before: u64 = db_rows(&g, 10.0, 60.0)
            .iter()
            .map(|r| r.counts.attempts)
            .sum::<u64>()
            / 50;
        let db_flush = db_rows(&g, 60.0, 61.0)[0].counts.attempts;
        assert!(
            db_flush > 3 * db_before,
            "database load: {db_flush} in the flush's bucket, {db_before} per bucket before"
        );
        let (after, _) = hit_ratio(&app_rows(&g, 80.0, 150.0));
        eprintln!(
            "coalesce {coalesce}: before {before:.3}, flush {flush:.3}, after {after:.3}; database {db_before}/s, {db_flush} in the flush's second"
        );
        if coalesce {
            assert!(after > before - 0.03, "refilled: {after} vs {before}");
        } else {
            assert!(after < 0.01, "never refilled: {after}");
        }
    }
}

#[test]
fn cache_runs_are_deterministic() {
    let cfg = flushed(true);
    let (a, ga) = run(&cfg, 5);
    let (b, gb) = run(&cfg, 5);
    assert_eq!(ga, gb);
    assert_eq!(a.succeeded, b.succeeded);
    let (_, gc) = run(&cfg, 6);
    assert_ne!(ga, gc, "another seed, other keys");
}
