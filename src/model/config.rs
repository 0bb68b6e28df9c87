//! The model's own description of a system to simulate: plain numbers in
//! nanoseconds, built from a scenario by `scenario::build`. The model never
//! sees files, YAML or units.

use crate::engine::Nanos;
pub use crate::metrics::RecoveryCriteria;

use super::backoff::Backoff;
use super::dependency::DependencyConfig;
use super::rate::RateProfile;
use super::retry::RetryPolicy;

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
    /// Per-attempt timeout.
    pub timeout: Option<Nanos>,
    pub retry: RetryPolicy,
    /// When true, calls into the next layer carry this layer's attempt
    /// deadline, and the next layer never outlives it.
    pub propagate_deadline: bool,
}

impl LayerConfig {
    /// A layer that calls through once and waits as long as its caller.
    pub fn passthrough(name: &str) -> Self {
        LayerConfig {
            name: name.to_string(),
            timeout: None,
            retry: RetryPolicy {
                max_attempts: 1,
                backoff: Backoff::Constant { base: 0 },
                ..RetryPolicy::default()
            },
            propagate_deadline: false,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_events: u64,
    pub max_in_flight: u64,
}
