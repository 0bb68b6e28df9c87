//! Behaviour of the model on configurations built in code: exact
//! amplification, conservation under every incident, deadlines, orphaned
//! work and determinism.

use crate::common::*;
use stormsim::model::CallPolicy;
use stormsim::model::backoff::{Backoff, Jitter};
use stormsim::model::server::{Effect, Incident};
use stormsim::model::service::ServiceDist;

fn always_failing(layers: Vec<CallPolicy>) -> stormsim::model::ModelConfig {
    let mut dep = dependency(16, ServiceDist::Exponential { mean: 10 * MS }, 1000);
    dep.incidents.push(Incident {
        start: 0,
        end: 20 * S,
        effect: Effect::Errors {
            rate: 1.0,
            status: 503,
        },
        replica: None,
    });
    config(100.0, 10 * S, layers, dep)
}

#[test]
fn three_layers_of_four_attempts_make_exactly_64_dependency_attempts() {
    let layers = ["edge", "api", "storage"]
        .iter()
        .map(|n| retrying_layer(n, 4, None))
        .collect();
    let (_, s) = run(&always_failing(layers), 1);
    assert_conserved(&s);
    assert!(s.logical_requests > 900);
    assert_eq!(s.in_flight_at_end, 0);
    assert_eq!(s.failed, s.logical_requests);
    assert_eq!(s.dependency_attempts, 64 * s.logical_requests);
    assert_eq!(s.layer_attempts[0], 4 * s.logical_requests);
    assert_eq!(s.layer_attempts[1], 16 * s.logical_requests);
    assert_eq!(s.amplification.unwrap(), 64.0);
}

#[test]
fn attempts_multiply_across_layers() {
    let layers = vec![
        retrying_layer("a", 2, None),
        retrying_layer("b", 3, None),
        retrying_layer("c", 5, None),
    ];
    let (_, s) = run(&always_failing(layers), 2);
    assert_conserved(&s);
    assert_eq!(s.dependency_attempts, 30 * s.logical_requests);
}

#[test]
fn conservation_holds_through_every_kind_of_incident() {
    let mut dep = dependency(4, ServiceDist::Exponential { mean: 20 * MS }, 50);
    dep.warmup = 3 * S;
    dep.queue_timeout = Some(300 * MS);
    dep.shed_retry_after = 200 * MS;
    let inc = |start: u64, end: u64, effect| Incident {
        start: start * S,
        end: end * S,
        effect,
        replica: None,
    };
    dep.incidents = vec![
        inc(5, 8, Effect::Down),
        inc(12, 15, Effect::Blackhole),
        inc(18, 24, Effect::Brownout { capacity: 0.3 }),
        inc(
            26,
            30,
            Effect::Errors {
                rate: 0.5,
                status: 500,
            },
        ),
        inc(32, 36, Effect::Latency { add: 400 * MS }),
    ];
    let mut outer = retrying_layer("outer", 3, Some(2 * S));
    outer.retry.backoff = Backoff::exponential(50 * MS, 2.0, S);
    outer.retry.jitter = Jitter::Full;
    let mut inner = retrying_layer("inner", 3, Some(300 * MS));
    inner.retry.jitter = Jitter::Decorrelated;
    inner.retry.backoff = Backoff::exponential(10 * MS, 2.0, 500 * MS);
    let mut cfg = config(150.0, 45 * S, vec![outer, inner], dep);
    cfg.deadline = Some(3 * S);
    for seed in 0..4 {
        let (rows, s) = run(&cfg, seed);
        assert_conserved(&s);
        // Per bucket too: the time series adds up to the summary.
        assert_eq!(
            rows.iter().map(|r| r.offered).sum::<u64>(),
            s.logical_requests
        );
        // Down gives connection errors, blackhole timeouts, error bursts statuses.
        assert!(s.failed_by[0] > 0 && s.failed_by[1] > 0 && s.failed_by[2] > 0);
        assert!(
            s.orphaned > 0,
            "timeouts during the latency incident orphan work"
        );
        assert!(s.shed > 0 && s.blackholed > 0 && s.queue_timeouts > 0);
        // Nobody waits longer than the deadline.
        assert!(s.latency_p999_ms.unwrap() <= 3_000.0 * 1.001);
    }
}

#[test]
fn a_deadline_bounds_every_logical_request() {
    let mut dep = dependency(1, ServiceDist::Constant(100 * MS), 10_000);
    dep.incidents.push(Incident {
        start: 2 * S,
        end: 6 * S,
        effect: Effect::Blackhole,
        replica: None,
    });
    let mut layer = retrying_layer("client", 100, Some(400 * MS));
    layer.retry.backoff = Backoff::Constant { base: 250 * MS };
    let mut cfg = config(5.0, 10 * S, vec![layer], dep);
    cfg.deadline = Some(S);
    let (_, s) = run(&cfg, 9);
    assert_conserved(&s);
    assert!(s.failed_by[3] > 0, "some requests end by deadline");
    // 3 × 400 ms attempts + 2 × 250 ms sleeps do not fit in 1 s: at most
    // 2 attempts per request (400 + 250 + 400 = 1050 > 1000 ends at the
    // deadline on the second attempt).
    assert!(s.layer_attempts[0] <= 2 * s.logical_requests);
    assert!(s.latency_p999_ms.unwrap() <= 1_000.0 * 1.001);
}

#[test]
fn same_seed_same_history_other_seed_other_history() {
    let mut dep = dependency(
        4,
        ServiceDist::lognormal_from_median_p99(10 * MS, 80 * MS),
        20,
    );
    dep.incidents.push(Incident {
        start: 3 * S,
        end: 5 * S,
        effect: Effect::Down,
        replica: None,
    });
    let mut layer = retrying_layer("client", 4, Some(200 * MS));
    layer.retry.jitter = Jitter::Full;
    layer.retry.backoff = Backoff::exponential(20 * MS, 2.0, S);
    let cfg = config(300.0, 10 * S, vec![layer], dep);
    let (rows_a, a) = run(&cfg, 5);
    let (rows_b, b) = run(&cfg, 5);
    let (_, c) = run(&cfg, 6);
    assert_eq!(a.event_digest, b.event_digest);
    assert_eq!(rows_a, rows_b);
    assert_eq!(a, b);
    assert_ne!(a.event_digest, c.event_digest);
}

#[test]
fn orphaned_work_keeps_running_after_the_caller_times_out() {
    // Service takes 300 ms; callers give up after 100 ms and do not retry:
    // every request's work is orphaned, and all of it still uses a worker.
    let dep = dependency(50, ServiceDist::Constant(300 * MS), 100);
    let cfg = config(
        20.0,
        20 * S,
        vec![retrying_layer("client", 1, Some(100 * MS))],
        dep,
    );
    let (_, s) = run(&cfg, 3);
    assert_conserved(&s);
    assert_eq!(s.succeeded, 0);
    assert_eq!(s.failed_by[0], s.failed, "all fail by timeout");
    let served = s.orphaned as f64;
    assert!(served >= s.logical_requests as f64 - 10.0);
    assert!((s.orphaned_work_s - served * 0.3).abs() < 1e-6);
}

#[test]
fn a_scheduled_spike_and_ramp_shape_the_offered_load() {
    use stormsim::model::rate::{RateChange, RateProfile};
    let dep = dependency(64, ServiceDist::Exponential { mean: MS }, 1000);
    let mut cfg = config(1000.0, 30 * S, vec![CallPolicy::passthrough("client")], dep);
    cfg.arrivals = RateProfile::new(
        1000.0,
        &[
            RateChange::Spike {
                at: 10 * S,
                rate: 3000.0,
                length: 5 * S,
            },
            RateChange::Ramp {
                at: 20 * S,
                to: 0.0,
                by: 30 * S,
            },
        ],
    );
    let (rows, s) = run(&cfg, 4);
    assert_conserved(&s);
    let mean = |a: usize, b: usize| {
        rows[a..b].iter().map(|r| r.offered as f64).sum::<f64>() / (b - a) as f64
    };
    // Poisson counts over 5 s: sd ~ sqrt(5000)/5 = 14 per bucket at 1000/s.
    assert!((mean(0, 10) - 1000.0).abs() < 60.0);
    assert!((mean(10, 15) - 3000.0).abs() < 100.0);
    assert!((mean(15, 20) - 1000.0).abs() < 70.0);
    // The ramp from 1000/s to 0 over 10 s offers 5000 in all.
    let ramp: u64 = rows[20..30].iter().map(|r| r.offered).sum();
    assert!((ramp as f64 - 5000.0).abs() < 300.0, "{ramp}");
    assert!(rows[29].offered < 250);
}
