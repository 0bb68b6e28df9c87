//! Slowdown under load (`slowdown` on a service), against queueing theory
//! and the capacity-degradation kind of metastable failure:
//!
//! - one worker: a request always starts with u = 1 (its own worker is
//!   the only one), so linear slowdown makes an M/M/1 queue whose mean
//!   service time is stretched by exactly 1 + factor; its mean wait agrees
//!   with the M/M/1 formula for the stretched time;
//! - four workers kept saturated: every request starts on the worker the
//!   last one freed, with the other three busy, so u = 1 again and the
//!   throughput is 4 ÷ (mean × (1 + factor)) within its Poisson error;
//! - a two-second spike over a service whose throughput falls past a
//!   point (exponential slowdown) leaves it overloaded for good with no
//!   retry at all, while the same service without slowdown drains its
//!   queue and recovers.

use crate::common::{assert_conserved, mean_se, par_seeds};
use stormsim::metrics::{tabulate, tabulate_services};
use stormsim::model::World;
use stormsim::scenario::{load_str, to_model};

/// One service `dependency` called by the clients with no retry, under
/// `slowdown` (a YAML flow mapping, or empty for none).
fn single(rate: f64, workers: u32, mean_ms: f64, queue: u32, slowdown: &str, secs: u64) -> String {
    let slowdown = if slowdown.is_empty() {
        String::new()
    } else {
        format!("    slowdown: {slowdown}\n")
    };
    format!(
        "name: slowdown-test
duration: {secs}s
bucket: 1s
clients:
  arrival: {{ kind: poisson, rate: {rate}/s }}
  calls: dependency
services:
  - name: dependency
    concurrency: {workers}
    service_time: {{ dist: exponential, mean: {mean_ms}ms }}
    queue: {{ capacity: {queue} }}
{slowdown}"
    )
}

fn model(yaml: &str) -> stormsim::model::ModelConfig {
    to_model(&load_str(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn one_worker_with_linear_slowdown_is_an_mm1_queue_of_the_stretched_time() {
    // 5 ms stretched by 1 + 1·u with u = 1: 10 ms, μ' = 100/s; λ = 60/s
    // keeps ρ' = 0.6. W_q = ρ' ÷ (μ' − λ) = 15 ms (without slowdown it
    // would be 0.3 ÷ 140 s = 2.1 ms).
    let cfg = model(&single(
        60.0,
        1,
        5.0,
        1_000_000,
        "{ kind: linear, factor: 1 }",
        2000,
    ));
    let seeds: Vec<u64> = (1..=8).collect();
    let runs = par_seeds(&seeds, |seed| {
        let (rec, info) = World::new(&cfg, seed).run();
        tabulate(&rec, &info, &cfg.run_context())
    });
    let waits: Vec<f64> = runs
        .iter()
        .map(|(_, s)| {
            assert_conserved(s);
            s.dependency_queue_wait_mean_ms.unwrap()
        })
        .collect();
    let utilizations: Vec<f64> = runs
        .iter()
        .map(|(_, s)| s.dependency_utilization.unwrap())
        .collect();
    let (w, se) = mean_se(&waits);
    let theory = 0.6 / (100.0 - 60.0) * 1000.0;
    assert!(
        (w - theory).abs() < 4.0 * se,
        "W_q {w:.3} ms ± {se:.3} vs {theory} ms"
    );
    let (u, se) = mean_se(&utilizations);
    assert!((u - 0.6).abs() < 4.0 * se, "utilization {u:.4} ± {se:.4}");
}

#[test]
fn saturated_workers_complete_at_the_stretched_rate() {
    // 4 workers of 5 ms, linear factor 2, always all busy (1000/s offered
    // against a queue of 100): each request takes 15 ms, 266.7/s.
    let secs = 300;
    let cfg = model(&single(
        1000.0,
        4,
        5.0,
        100,
        "{ kind: linear, factor: 2 }",
        secs,
    ));
    let (rec, info) = World::new(&cfg, 7).run();
    let ctx = cfg.run_context();
    let (_, s) = tabulate(&rec, &info, &ctx);
    assert_conserved(&s);
    let expect = 4.0 / 0.015 * secs as f64;
    let served = tabulate_services(&rec, &ctx, &s).services[0].totals.served as f64;
    // Completions of a saturated M/M/c are a Poisson process of rate cμ'.
    assert!(
        (served - expect).abs() < 4.0 * expect.sqrt(),
        "served {served} vs {expect:.0} (4σ = {:.0})",
        4.0 * expect.sqrt()
    );
    // Without slowdown: three times as many.
    let plain = model(&single(1000.0, 4, 5.0, 100, "", secs));
    let (rec, info) = World::new(&plain, 7).run();
    let ctx = plain.run_context();
    let (_, s) = tabulate(&rec, &info, &ctx);
    let served = tabulate_services(&rec, &ctx, &s).services[0].totals.served as f64;
    let expect = 4.0 / 0.005 * secs as f64;
    assert!((served - expect).abs() < 4.0 * expect.sqrt(), "{served}");
}

/// 150/s over 20 workers of 10 ms, with a spike to 3000/s from 20 s to
/// 22 s: the rows of the run (one per second).
fn spike(slowdown: &str, seed: u64) -> Vec<stormsim::metrics::TimeRow> {
    let mut yaml = single(150.0, 20, 10.0, 2000, slowdown, 120);
    yaml = yaml.replace(
        "  calls: dependency\n",
        "  calls: dependency\n  schedule:\n    - { at: 20s, rate: 3000/s, for: 2s }\n",
    );
    let cfg = model(&yaml);
    let (rec, info) = World::new(&cfg, seed).run();
    let (rows, s) = tabulate(&rec, &info, &cfg.run_context());
    assert_conserved(&s);
    rows
}

#[test]
fn a_short_spike_over_a_degrading_service_never_ends_without_retries() {
    // Exponential slowdown e^(3u): a replica completes b ÷ (10 ms ·
    // e^(3b/20)) per second with b workers busy, at most 245/s (b ≈ 7)
    // and only 99.6/s when all 20 are busy. At 150/s about 2 workers are
    // busy; the spike fills them all, and 99.6/s never catches up with
    // 150/s. Without slowdown the 20 workers do 2000/s and the backlog of
    // the spike drains in about a second.
    for seed in [1, 2, 3] {
        let degrading = spike("{ kind: exponential, factor: 3 }", seed);
        let plain = spike("", seed);
        let before = |rows: &[stormsim::metrics::TimeRow]| {
            rows[5..20]
                .iter()
                .map(|r| r.utilization.unwrap())
                .sum::<f64>()
                / 15.0
        };
        // Before the spike both are lightly loaded.
        assert!(before(&degrading) < 0.2, "{}", before(&degrading));
        assert!(before(&plain) < 0.1, "{}", before(&plain));
        // Long after it: the plain one is back to its old utilization with
        // an empty queue; the degrading one is full, its queue too, and
        // shedding.
        for r in &plain[40..] {
            assert!(r.utilization.unwrap() < 0.2 && r.queue_depth < 5.0, "{r:?}");
            assert_eq!(r.shed, 0);
        }
        for r in &degrading[40..] {
            assert!(
                r.utilization.unwrap() > 0.99 && r.queue_depth > 1900.0,
                "{r:?}"
            );
            assert!(r.shed > 0, "t={}", r.t_s);
        }
        // Goodput stuck at the degraded rate: 99.6/s.
        let good = degrading[40..].iter().map(|r| r.succeeded).sum::<u64>() as f64 / 80.0;
        assert!((good - 99.6).abs() < 5.0, "{good}");
    }
}
