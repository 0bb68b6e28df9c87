//! Builders shared by the integration tests: model configurations written
//! directly in code, so that model tests do not depend on the file format.
#![allow(dead_code)]

use stormsim::engine::{NS_PER_MS, NS_PER_S, Nanos};
use stormsim::metrics::{RecoveryCriteria, Summary, TimeRow, tabulate};
use stormsim::model::backoff::{Backoff, Jitter};
use stormsim::model::rate::RateProfile;
use stormsim::model::retry::{RetryOn, RetryPolicy};
use stormsim::model::server::ServiceConfig;
use stormsim::model::service::ServiceDist;
use stormsim::model::{CallPolicy, Limits, ModelConfig, Topology, World};

pub mod files;

pub const MS: Nanos = NS_PER_MS;
pub const S: Nanos = NS_PER_S;

pub fn dependency(concurrency: u32, service: ServiceDist, queue: u32) -> ServiceConfig {
    ServiceConfig::leaf("dependency", concurrency, service, queue)
}

pub fn config(
    rate: f64,
    duration: Nanos,
    layers: Vec<CallPolicy>,
    dep: ServiceConfig,
) -> ModelConfig {
    ModelConfig {
        duration,
        bucket: S,
        arrivals: RateProfile::constant(rate),
        closed: None,
        consumers: None,
        deadline: None,
        topology: Topology::chain(layers, dep),
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
        classes: Default::default(),
    }
}

pub fn retrying_layer(name: &str, attempts: u32, timeout: Option<Nanos>) -> CallPolicy {
    CallPolicy {
        timeout,
        retry: RetryPolicy {
            max_attempts: attempts,
            backoff: Backoff::Constant { base: 0 },
            jitter: Jitter::None,
            retry_on: retry_on_transient(),
            ..RetryPolicy::default()
        },
        ..CallPolicy::passthrough(name)
    }
}

pub fn run(cfg: &ModelConfig, seed: u64) -> (Vec<TimeRow>, Summary) {
    let (rec, info) = World::new(cfg, seed).run();
    let ctx = cfg.run_context();
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

/// Little's law on a whole run: the time-average number of requests inside
/// the dependency (`in_flight`, averaged over the buckets) equals the
/// arrival rate times the mean time in system. With a pass-through client
/// layer and no retries, a logical request's latency is its time in the
/// dependency (0 for a shed one), so λ is the offered rate. It is a
/// sample-path identity: only the requests open at the end of the run and
/// the histogram's 3 significant digits separate the two sides.
pub fn assert_little(rows: &[TimeRow], s: &Summary, secs: u64, tol: f64) {
    let l = rows.iter().map(|r| r.in_flight).sum::<f64>() / rows.len() as f64;
    let lambda = s.logical_requests as f64 / secs as f64;
    let w = s.latency_mean_ms.expect("requests ended") / 1000.0;
    assert!(
        (l / (lambda * w) - 1.0).abs() < tol,
        "Little's law: L = {l:.5} vs λW = {:.5}",
        lambda * w
    );
}

/// Mean and standard error of independent replicate estimates.
pub fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// One run's time series and summary.
pub type RunOutput = (Vec<TimeRow>, Summary);

/// `f` of every seed, the seeds spread over the available cores, the
/// results in seed order.
pub fn par_seeds<T: Send>(seeds: &[u64], f: impl Fn(u64) -> T + Sync) -> Vec<T> {
    use rayon::prelude::*;
    seeds.par_iter().map(|&s| f(s)).collect()
}

/// Runs `cfg` once per seed, the seeds spread over the available cores,
/// and returns the results in seed order.
pub fn run_seeds(cfg: &ModelConfig, seeds: &[u64]) -> Vec<RunOutput> {
    par_seeds(seeds, |seed| run(cfg, seed))
}
