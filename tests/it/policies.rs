//! Retry budgets, throttles, breakers and Retry-After inside whole runs.

use crate::common::*;
use stormsim::model::CallPolicy;
use stormsim::model::breaker::{BreakerConfig, BreakerWindow};
use stormsim::model::budget::BudgetConfig;
use stormsim::model::config::Shared;
use stormsim::model::retry::RetryAfterMode;
use stormsim::model::server::{Effect, Incident};
use stormsim::model::service::ServiceDist;
use stormsim::model::throttle::ThrottleConfig;

/// A dependency that answers every request at once with 503.
fn failing(layer: CallPolicy, rate: f64, secs: u64) -> stormsim::model::ModelConfig {
    let mut dep = dependency(8, ServiceDist::Constant(MS), 100);
    dep.incidents.push(Incident {
        start: 0,
        end: secs * S,
        effect: Effect::Errors {
            rate: 1.0,
            status: 503,
        },
        replica: None,
    });
    config(rate, secs * S, vec![layer], dep)
}

#[test]
fn grpc_token_bucket_allows_exactly_what_a6_allows() {
    // Tokens start at 10; every failure takes 1; a retry needs > 5 after
    // the decrement: failures 1..4 leave 9, 8, 7, 6 (retry), the 5th leaves
    // 5 (no retry). Nothing ever succeeds, so exactly 4 retries are sent.
    let mut layer = retrying_layer("client", 100, None);
    layer.budget = Some(Shared {
        config: BudgetConfig::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.1,
        },
        shared: true,
    });
    let (_, s) = run(&failing(layer, 50.0, 20), 1);
    assert_conserved(&s);
    assert_eq!(s.retries, 4);
    assert_eq!(s.dependency_attempts, s.logical_requests + 4);
    // Every request ends refused by the budget, the first one too (after
    // its 4 retries).
    assert_eq!(s.failed_by[5], s.logical_requests);
    assert_eq!(s.layer_gates[0][0], s.logical_requests);
}

#[test]
fn per_instance_budgets_multiply_by_instances() {
    let mut layer = retrying_layer("client", 100, None);
    layer.instances = 10;
    layer.budget = Some(Shared {
        config: BudgetConfig::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.1,
        },
        shared: false,
    });
    let (_, s) = run(&failing(layer, 50.0, 20), 1);
    assert_conserved(&s);
    // Ten clients, each with its own bucket: 4 retries each.
    assert_eq!(s.retries, 40);
}

#[test]
fn retry_after_beyond_the_deadline_fails_fast_without_sleeping() {
    // The dependency sheds everything with 429 and Retry-After 2 s; the
    // user's deadline is 1 s.
    let mut dep = dependency(1, ServiceDist::Constant(10 * S), 0);
    dep.shed_status = 429;
    dep.shed_retry_after = 2 * S;
    let mut cfg = config(20.0, 20 * S, vec![retrying_layer("client", 5, None)], dep);
    cfg.deadline = Some(S);
    let (_, s) = run(&cfg, 2);
    assert_conserved(&s);
    // All but the request that got the only worker fail at once.
    assert!(
        s.failed_by[4] >= s.logical_requests - 3,
        "{:?}",
        s.failed_by
    );
    assert_eq!(s.retries, 0, "no retry was slept on");
    assert_eq!(s.retry_delay_p50_ms, None, "no sleep was taken");
    assert!(s.latency_p50_ms.unwrap() < 1.0, "failed at once");
}

#[test]
fn retry_after_is_honoured_when_it_fits() {
    let mut dep = dependency(1, ServiceDist::Constant(10 * S), 0);
    dep.shed_status = 429;
    dep.shed_retry_after = 200 * MS;
    let mut layer = retrying_layer("client", 3, None);
    let mut cfg_for = |mode| {
        layer.retry.retry_after = mode;
        let mut c = config(20.0, 20 * S, vec![layer.clone()], dep.clone());
        c.deadline = Some(5 * S);
        c
    };
    let (_, honor) = run(
        &cfg_for(RetryAfterMode::AtLeast {
            cap: u64::MAX,
            jitter: 0.0,
        }),
        2,
    );
    assert_conserved(&honor);
    // 200 ms, within HdrHistogram's 3 significant digits.
    assert!((honor.retry_delay_p50_ms.unwrap() - 200.0).abs() < 0.2);
    let (_, ignore) = run(&cfg_for(RetryAfterMode::Ignore), 2);
    assert_eq!(
        ignore.retry_delay_p50_ms,
        Some(0.0),
        "backoff is 0 in this layer"
    );
}

#[test]
fn a_breaker_stops_the_storm_and_probes_after_its_break() {
    let mut layer = retrying_layer("client", 3, None);
    layer.breaker = Some(Shared {
        config: BreakerConfig {
            window: BreakerWindow::Time(30 * S),
            failure_ratio: 0.1,
            min_calls: 100,
            open_for: 5 * S,
            probes: 1,
            retries_only: false,
        },
        shared: true,
    });
    let (rows, s) = run(&failing(layer, 100.0, 60), 3);
    assert_conserved(&s);
    // Open almost all the time: about one probe per 5 s break.
    assert!(
        s.failed_by[7] > s.logical_requests * 9 / 10,
        "{:?}",
        s.failed_by
    );
    assert!(s.dependency_attempts < 400, "{}", s.dependency_attempts);
    assert!(
        rows[30].layer_levels[0][2] == Some(1.0),
        "breaker open at 30 s"
    );
}

#[test]
fn a_retries_only_breaker_lets_first_attempts_through() {
    let mut layer = retrying_layer("client", 3, None);
    layer.breaker = Some(Shared {
        config: BreakerConfig {
            window: BreakerWindow::Count(100),
            failure_ratio: 0.1,
            min_calls: 10,
            open_for: 5 * S,
            probes: 1,
            retries_only: true,
        },
        shared: true,
    });
    let (_, s) = run(&failing(layer, 100.0, 60), 3);
    assert_conserved(&s);
    // Every request still makes its first attempt; retries almost stop.
    assert!(s.dependency_attempts >= s.logical_requests);
    assert!(s.retries < s.logical_requests / 10, "{}", s.retries);
}

#[test]
fn sre_adaptive_throttling_rejects_about_one_per_accepted_under_overload() {
    // A backend that can take 100/s, offered 1000/s: with K = 2, clients
    // send about 2 × accepts, so the backend rejects about as many as it
    // accepts (the SRE book, docs/sources/presets.md §8).
    let mut dep = dependency(1, ServiceDist::Constant(10 * MS), 0);
    dep.shed_status = 503;
    let mut layer = retrying_layer("client", 1, None);
    layer.throttle = Some(Shared {
        config: ThrottleConfig::Adaptive {
            k: 2.0,
            window: 120 * S,
        },
        shared: true,
    });
    let cfg = config(1000.0, 300 * S, vec![layer], dep);
    let (_, s) = run(&cfg, 4);
    assert_conserved(&s);
    let accepted = s.succeeded as f64;
    let rejected_by_backend = s.shed as f64;
    let ratio = rejected_by_backend / accepted;
    eprintln!("SRE throttle: backend rejects {ratio:.3} per accepted");
    assert!(
        (0.8..1.25).contains(&ratio),
        "backend rejects {ratio} per accepted"
    );
    assert!(
        s.failed_by[6] > s.logical_requests / 2,
        "most rejected locally"
    );
}
