//! Hop semantics: deadline propagation, cancellation and orphaned work,
//! bulkheads, fan-out, side effects and idempotency, hedging.

use crate::common::*;
use stormsim::model::CallPolicy;
use stormsim::model::backoff::Backoff;
use stormsim::model::bulkhead::BulkheadConfig;
use stormsim::model::config::{HedgingConfig, ModelConfig, Shared};
use stormsim::model::server::{Effect, Incident, SideEffects};
use stormsim::model::service::ServiceDist;

fn always_503(layers: Vec<CallPolicy>, rate: f64) -> ModelConfig {
    let mut dep = dependency(64, ServiceDist::Constant(MS), 1000);
    dep.incidents.push(Incident {
        start: 0,
        end: 20 * S,
        effect: Effect::Errors {
            rate: 1.0,
            status: 503,
        },
        replica: None,
    });
    config(rate, 10 * S, layers, dep)
}

#[test]
fn fan_out_multiplies_into_the_product_rule() {
    // 3 attempts × (3 attempts × fan-out 2) = 18 dependency requests per
    // logical request when everything fails.
    let mut inner = retrying_layer("inner", 3, None);
    inner.fan_out = 2;
    inner.quorum = 2;
    let layers = vec![retrying_layer("outer", 3, None), inner];
    let (_, s) = run(&always_503(layers, 50.0), 1);
    assert_conserved(&s);
    assert_eq!(s.in_flight_at_end, 0);
    assert_eq!(s.dependency_attempts, 18 * s.logical_requests);
    assert_eq!(s.layer_attempts[0], 3 * s.logical_requests);
}

#[test]
fn a_quorum_tolerates_a_failing_branch() {
    // Fan-out 3, quorum 2, a third of requests failing: a round fails only
    // when 2 of 3 fail (p = 3 q² (1 - q) + q³ = 7/27 for q = 1/3).
    let mut dep = dependency(64, ServiceDist::Constant(MS), 1000);
    dep.incidents.push(Incident {
        start: 0,
        end: 200 * S,
        effect: Effect::Errors {
            rate: 1.0 / 3.0,
            status: 500,
        },
        replica: None,
    });
    let mut layer = retrying_layer("client", 1, None);
    layer.fan_out = 3;
    layer.quorum = 2;
    let (_, s) = run(&config(200.0, 100 * S, vec![layer], dep), 2);
    assert_conserved(&s);
    let fail = s.failed as f64 / s.logical_requests as f64;
    assert!((fail - 7.0 / 27.0).abs() < 0.01, "{fail}");
    assert_eq!(s.dependency_attempts, 3 * s.logical_requests);
}

fn slow_server() -> stormsim::model::server::ServiceConfig {
    // A saturated server: 4 workers × 100 ms = 40/s, offered 100/s.
    dependency(4, ServiceDist::Constant(100 * MS), 10_000)
}

#[test]
fn with_deadline_propagation_no_attempt_starts_after_the_deadline() {
    let layer = |name: &str, propagate: bool| {
        let mut l = retrying_layer(name, 4, Some(300 * MS));
        l.retry.backoff = Backoff::Constant { base: 50 * MS };
        l.propagate_deadline = propagate;
        l
    };
    for propagate in [true, false] {
        let layers = vec![
            layer("edge", propagate),
            layer("api", propagate),
            layer("store", propagate),
        ];
        let mut cfg = config(100.0, 30 * S, layers, slow_server());
        cfg.deadline = Some(S);
        let (_, s) = run(&cfg, 3);
        assert_conserved(&s);
        if propagate {
            assert_eq!(s.attempts_after_deadline, 0);
        } else {
            assert!(
                s.attempts_after_deadline > 1000,
                "{}",
                s.attempts_after_deadline
            );
        }
    }
}

#[test]
fn cancellation_removes_orphaned_work_from_queues() {
    // Callers give up after 200 ms; the queue holds seconds of work.
    let run_with = |cancel: bool, stop: bool, lifo: bool| {
        let mut layer = retrying_layer("client", 1, Some(200 * MS));
        layer.cancel_propagates = cancel;
        let mut dep = slow_server();
        dep.stop_on_cancel = stop;
        dep.lifo = lifo;
        let (_, s) = run(&config(100.0, 60 * S, vec![layer], dep), 4);
        assert_conserved(&s);
        s
    };
    let off = run_with(false, false, false);
    let on = run_with(true, false, false);
    let stop = run_with(true, true, false);
    let on_lifo = run_with(true, false, true);
    eprintln!(
        "off: ok {} orphaned {} ({:.1} s) | on: ok {} orphaned {} ({:.1} s) cancelled {} | stop: ok {} cancelled {} ({:.1} s)",
        off.succeeded,
        off.orphaned,
        off.orphaned_work_s,
        on.succeeded,
        on.orphaned,
        on.orphaned_work_s,
        on.cancelled,
        stop.succeeded,
        stop.cancelled,
        stop.cancelled_work_s
    );
    // Without cancellation the queue fills with work nobody waits for: the
    // workers serve almost nothing but orphans.
    assert_eq!(off.cancelled, 0);
    assert!(off.orphaned as f64 > 0.95 * (off.orphaned + off.succeeded) as f64);
    // With it, abandoned work leaves the queue: what waits there is wanted.
    assert!(on.cancelled > 2000, "{}", on.cancelled);
    let wait = |s: &stormsim::metrics::Summary| s.dependency_queue_wait_mean_ms.unwrap();
    assert!(
        wait(&on) < wait(&off) / 20.0,
        "{} vs {}",
        wait(&on),
        wait(&off)
    );
    // FIFO still serves the oldest, whose callers give up mid-service; with
    // LIFO the freshest are served in time (a known pairing).
    assert!(
        on_lifo.succeeded > 10 * off.succeeded.max(1),
        "{} vs {}",
        on_lifo.succeeded,
        off.succeeded
    );
    // Stopping in-service work too leaves no orphaned work at all.
    assert_eq!(stop.orphaned, 0);
    assert!(stop.cancelled_work_s > 0.0);
}

fn payments(idempotency_key: bool, probe: bool) -> ModelConfig {
    // Payment writes; a latency incident pushes responses past the client's
    // timeout, so it retries writes that have already committed.
    payments_with(idempotency_key, probe, Effect::Latency { add: 600 * MS })
}

fn payments_with(idempotency_key: bool, probe: bool, effect: Effect) -> ModelConfig {
    let mut dep = dependency(16, ServiceDist::Exponential { mean: 20 * MS }, 1000);
    dep.side_effects = SideEffects::Write;
    dep.dedupe = idempotency_key;
    dep.incidents.push(Incident {
        start: 10 * S,
        end: 20 * S,
        effect,
        replica: None,
    });
    let mut layer = retrying_layer("client", 3, Some(500 * MS));
    layer.retry.backoff = Backoff::Constant { base: 100 * MS };
    layer.status_probe = probe;
    config(100.0, 30 * S, vec![layer], dep)
}

#[test]
fn duplicate_charges_without_a_key_and_none_with_one() {
    let (_, without) = run(&payments(false, false), 5);
    assert_conserved(&without);
    assert!(
        without.duplicate_side_effects > 500,
        "{}",
        without.duplicate_side_effects
    );
    assert_eq!(
        without.duplicate_side_effects,
        without.commits - without.committed_requests
    );
    assert!(without.ambiguous_successes > 0);

    let (_, keyed) = run(&payments(true, false), 5);
    assert_conserved(&keyed);
    assert_eq!(keyed.duplicate_side_effects, 0);
    assert_eq!(keyed.commits, keyed.committed_requests);
    assert!(keyed.deduplicated > 0);
}

#[test]
fn a_status_probe_avoids_blind_re_posts() {
    // Slow work (a brownout to 4%: writes take ~500 ms) times out at 500 ms
    // but commits soon after; the probe after the 100 ms backoff finds it.
    // (Under a latency incident the probe's own answer is late too.)
    let brownout = Effect::Brownout { capacity: 0.04 };
    let (_, blind) = run(&payments_with(false, false, brownout), 6);
    let (_, probed) = run(&payments_with(false, true, brownout), 6);
    assert_conserved(&probed);
    assert!(probed.probes > 0);
    // A probe finds most timed-out writes already committed.
    assert!(
        probed.duplicate_side_effects < blind.duplicate_side_effects / 2,
        "{} vs {}",
        probed.duplicate_side_effects,
        blind.duplicate_side_effects
    );
}

#[test]
fn a_bulkhead_caps_concurrency_and_rejects_the_rest() {
    let mut layer = retrying_layer("client", 1, None);
    layer.bulkhead = Some(Shared {
        config: BulkheadConfig {
            max_concurrent: 2,
            max_queue: 0,
            wait: false,
        },
        shared: true,
    });
    // 100/s of 100 ms work through a bulkhead of 2: at most 20/s get through.
    let (_, s) = run(
        &config(100.0, 60 * S, vec![layer.clone()], slow_server()),
        7,
    );
    assert_conserved(&s);
    let through = s.dependency_attempts as f64 / 60.0;
    assert!(through <= 20.5, "{through}");
    assert!(s.failed_by[8] > s.logical_requests / 2, "{:?}", s.failed_by);
    // Waiting in a bounded queue instead: fewer rejections, none above the cap.
    layer.bulkhead.as_mut().unwrap().config = BulkheadConfig {
        max_concurrent: 2,
        max_queue: 1_000_000,
        wait: true,
    };
    let (_, w) = run(&config(15.0, 60 * S, vec![layer], slow_server()), 7);
    assert_conserved(&w);
    assert_eq!(w.failed_by[8], 0);
    assert!(w.succeeded as f64 >= w.logical_requests as f64 * 0.95);
}

#[test]
fn hedging_cuts_the_tail_at_the_cost_of_extra_requests() {
    // A lognormal server with a long tail; hedge after 50 ms.
    let dep = || {
        dependency(
            64,
            ServiceDist::lognormal_from_median_p99(10 * MS, 400 * MS),
            1000,
        )
    };
    let plain = retrying_layer("client", 1, None);
    let mut hedged = plain.clone();
    hedged.hedging = Some(HedgingConfig {
        delay: 50 * MS,
        max_attempts: 3,
        non_fatal: retry_on_transient(),
    });
    let (_, p) = run(&config(200.0, 60 * S, vec![plain], dep()), 8);
    let (_, h) = run(&config(200.0, 60 * S, vec![hedged], dep()), 8);
    assert_conserved(&h);
    assert!(h.latency_p99_ms.unwrap() < p.latency_p99_ms.unwrap() / 2.0);
    let extra = h.dependency_attempts as f64 / h.logical_requests as f64;
    assert!(extra > 1.05 && extra < 1.6, "{extra}");
    // Losing hedges keep running after the first success: orphaned work.
    assert!(h.orphaned > 0);
}

#[test]
fn envoy_hedge_on_timeout_keeps_the_first_try_alive() {
    let dep = || {
        dependency(
            64,
            ServiceDist::lognormal_from_median_p99(20 * MS, 800 * MS),
            1000,
        )
    };
    let mut retry = retrying_layer("client", 3, Some(100 * MS));
    retry.retry.backoff = Backoff::Constant { base: 0 };
    let mut hedge = retry.clone();
    hedge.hedge_on_timeout = true;
    let (_, r) = run(&config(200.0, 60 * S, vec![retry], dep()), 9);
    let (_, h) = run(&config(200.0, 60 * S, vec![hedge], dep()), 9);
    assert_conserved(&h);
    // Abandoning a slow first try throws its work away; hedging lets it win.
    let (h, r) = (h.success_rate.unwrap(), r.success_rate.unwrap());
    assert!(h > r, "{h} vs {r}");
}

#[test]
fn conservation_holds_with_everything_on() {
    let mut dep = dependency(8, ServiceDist::Exponential { mean: 20 * MS }, 50);
    dep.side_effects = SideEffects::Write;
    dep.stop_on_cancel = true;
    dep.incidents = vec![
        Incident {
            start: 5 * S,
            end: 8 * S,
            effect: Effect::Down,
            replica: None,
        },
        Incident {
            start: 12 * S,
            end: 16 * S,
            effect: Effect::Latency { add: 300 * MS },
            replica: None,
        },
        Incident {
            start: 20 * S,
            end: 24 * S,
            effect: Effect::Blackhole,
            replica: None,
        },
    ];
    let mut edge = retrying_layer("edge", 3, Some(S));
    edge.cancel_propagates = true;
    edge.hedge_on_timeout = true;
    let mut api = retrying_layer("api", 3, Some(300 * MS));
    api.fan_out = 2;
    api.quorum = 1;
    api.bulkhead = Some(Shared {
        config: BulkheadConfig {
            max_concurrent: 20,
            max_queue: 20,
            wait: true,
        },
        shared: false,
    });
    api.instances = 3;
    let mut store = retrying_layer("store", 2, Some(200 * MS));
    store.status_probe = true;
    store.hedging = Some(HedgingConfig {
        delay: 30 * MS,
        max_attempts: 2,
        non_fatal: retry_on_transient(),
    });
    let mut layers = vec![edge, api, store];
    for l in &mut layers {
        l.propagate_deadline = true;
    }
    let mut cfg = config(150.0, 30 * S, layers, dep);
    cfg.deadline = Some(2 * S);
    for seed in 0..4 {
        let (rows, s) = run(&cfg, seed);
        assert_conserved(&s);
        assert_eq!(
            rows.iter().map(|r| r.offered).sum::<u64>(),
            s.logical_requests
        );
        assert_eq!(s.attempts_after_deadline, 0);
        assert!(s.latency_p999_ms.unwrap() <= 2_000.0 * 1.001);
    }
}
