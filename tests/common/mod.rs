//! Builders shared by the integration tests: model configurations written
//! directly in code, so that model tests do not depend on the file format.
#![allow(dead_code)]

use stormsim::engine::{NS_PER_MS, NS_PER_S, Nanos};
use stormsim::metrics::{RecoveryCriteria, RunContext, Summary, TimeRow, tabulate};
use stormsim::model::backoff::{Backoff, Jitter};
use stormsim::model::dependency::{DependencyConfig, Incident};
use stormsim::model::rate::RateProfile;
use stormsim::model::retry::{RetryOn, RetryPolicy};
use stormsim::model::service::ServiceDist;
use stormsim::model::{LayerConfig, Limits, ModelConfig, Sim};

pub const MS: Nanos = NS_PER_MS;
pub const S: Nanos = NS_PER_S;

pub fn dependency(concurrency: u32, service: ServiceDist, queue: u32) -> DependencyConfig {
    DependencyConfig {
        concurrency,
        service,
        queue_capacity: queue,
        lifo: false,
        queue_timeout: None,
        queue_timeout_status: 503,
        shed_status: 503,
        shed_retry_after: 0,
        incidents: Vec::<Incident>::new(),
        warmup: 0,
        warmup_from: 0.1,
        side_effects: Default::default(),
        dedupe: false,
        dedupe_cost: 1_000_000,
        stop_on_cancel: false,
    }
}

pub fn config(
    rate: f64,
    duration: Nanos,
    layers: Vec<LayerConfig>,
    dep: DependencyConfig,
) -> ModelConfig {
    ModelConfig {
        duration,
        bucket: S,
        arrivals: RateProfile::constant(rate),
        closed: None,
        consumers: None,
        deadline: None,
        layers,
        dependency: dep,
        recovery: RecoveryCriteria {
            trigger_start: None,
            trigger_end: None,
            threshold: 0.9,
            window: 5 * S,
        },
        limits: Limits {
            max_events: u64::MAX,
            max_in_flight: u64::MAX,
        },
    }
}

pub fn retrying_layer(name: &str, attempts: u32, timeout: Option<Nanos>) -> LayerConfig {
    LayerConfig {
        timeout,
        retry: RetryPolicy {
            max_attempts: attempts,
            backoff: Backoff::Constant { base: 0 },
            jitter: Jitter::None,
            retry_on: retry_on_transient(),
            ..RetryPolicy::default()
        },
        ..LayerConfig::passthrough(name)
    }
}

pub fn run(cfg: &ModelConfig, seed: u64) -> (Vec<TimeRow>, Summary) {
    let (rec, info) = Sim::new(cfg, seed).run();
    let ctx = RunContext {
        capacity_per_sec: cfg.dependency.capacity_per_sec(),
        concurrency: cfg.dependency.concurrency,
        recovery: cfg.recovery,
        layer_names: cfg.layers.iter().map(|l| l.name.clone()).collect(),
    };
    tabulate(&rec, &info, &ctx)
}

/// Every logical request is accounted for exactly once, and every attempt
/// of the innermost layer reached the dependency.
pub fn assert_conserved(s: &Summary) {
    assert_eq!(
        s.logical_requests,
        s.succeeded + s.failed + s.in_flight_at_end,
        "offered = succeeded + failed + in flight"
    );
    assert_eq!(
        s.failed,
        s.failed_by.iter().sum::<u64>(),
        "failures by reason add up"
    );
    assert_eq!(
        s.dependency_attempts,
        *s.layer_attempts.last().unwrap() + s.probes,
        "dependency attempts = requests of the innermost layer (and its status probes)"
    );
    assert_eq!(
        s.layer_calls[0], s.logical_requests,
        "one outermost call per request"
    );
    for l in 1..s.layer_calls.len() {
        assert_eq!(
            s.layer_calls[l],
            s.layer_attempts[l - 1],
            "every request of layer {} opens a call at layer {l}",
            l - 1
        );
    }
    assert!(s.committed_requests <= s.commits);
}

pub fn retry_on_transient() -> RetryOn {
    let mut r = RetryOn::nothing().with_status(503).with_status(429);
    r.timeout = true;
    r.connection = true;
    r
}
