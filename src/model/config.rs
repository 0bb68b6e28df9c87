//! The model's own description of a system to simulate: plain numbers in
//! nanoseconds, built from a scenario by `scenario::build`. The model never
//! sees files, YAML or units.

use crate::engine::Nanos;
pub use crate::metrics::RecoveryCriteria;

use super::backoff::Backoff;
use super::breaker::BreakerConfig;
use super::budget::BudgetConfig;
use super::dependency::DependencyConfig;
use super::rate::RateProfile;
use super::retry::RetryPolicy;
use super::throttle::ThrottleConfig;

#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// Simulated time of one run.
    pub duration: Nanos,
    /// Time-series resolution.
    pub bucket: Nanos,
    /// Offered rate of logical requests over time (open loop).
    pub arrivals: RateProfile,
    /// The user's budget for one logical request.
    pub deadline: Option<Nanos>,
    /// Outermost first; at least one (a pass-through client layer is added
    /// when the scenario has none).
    pub layers: Vec<LayerConfig>,
    pub dependency: DependencyConfig,
    /// How recovery is judged; passed through to the metrics.
    pub recovery: RecoveryCriteria,
    pub limits: Limits,
}

#[derive(Clone, Debug)]
pub struct LayerConfig {
    pub name: String,
    /// Copies of the layer; calls are spread over them by request.
    pub instances: u32,
    /// Per-attempt timeout.
    pub timeout: Option<Nanos>,
    /// Bound on all attempts and sleeps of one call at this layer.
    pub total_timeout: Option<Nanos>,
    pub retry: RetryPolicy,
    /// When true, calls into the next layer carry this layer's attempt
    /// deadline, and the next layer never outlives it.
    pub propagate_deadline: bool,
    pub budget: Option<Shared<BudgetConfig>>,
    pub throttle: Option<Shared<ThrottleConfig>>,
    pub breaker: Option<Shared<BreakerConfig>>,
}

/// A piece of state and whether it is one per layer instance or one for
/// the whole layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shared<T> {
    pub config: T,
    /// One state for all instances of the layer (else one per instance).
    pub shared: bool,
}

impl LayerConfig {
    /// A layer that calls through once and waits as long as its caller.
    pub fn passthrough(name: &str) -> Self {
        LayerConfig {
            name: name.to_string(),
            instances: 1,
            timeout: None,
            total_timeout: None,
            retry: RetryPolicy {
                max_attempts: 1,
                backoff: Backoff::Constant { base: 0 },
                ..RetryPolicy::default()
            },
            propagate_deadline: false,
            budget: None,
            throttle: None,
            breaker: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_events: u64,
    pub max_in_flight: u64,
}
