//! The model's own description of a system to simulate: plain numbers in
//! nanoseconds, built from a scenario by `scenario::build`. The model never
//! sees files, YAML or units.

use crate::engine::Nanos;
pub use crate::metrics::RecoveryCriteria;
use crate::metrics::{EdgeInfo, RunContext, ServiceInfo};

use super::backoff::Backoff;
use super::breaker::BreakerConfig;
use super::budget::BudgetConfig;
use super::bulkhead::BulkheadConfig;
use super::outlier::OutlierConfig;
use super::pool::PoolConfig;
use super::rate::RateProfile;
use super::retry::{RetryOn, RetryPolicy};
use super::service::ServiceDist;
use super::throttle::ThrottleConfig;
use super::topology::Topology;

#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// Simulated time of one run.
    pub duration: Nanos,
    /// Time-series resolution.
    pub bucket: Nanos,
    /// Offered rate of logical requests over time (open loop; unused when
    /// `closed` is set).
    pub arrivals: RateProfile,
    /// A closed-loop fleet instead of open-loop arrivals.
    pub closed: Option<ClosedLoop>,
    /// Arrivals are messages to a queue, handled by consumers.
    pub consumers: Option<ConsumerConfig>,
    /// The user's budget for one logical request.
    pub deadline: Option<Nanos>,
    /// The services and the calls between them (a chain of layers in
    /// front of one dependency is one such graph: `Topology::chain`).
    pub topology: Topology,
    /// How recovery is judged; passed through to the metrics.
    pub recovery: RecoveryCriteria,
    pub limits: Limits,
    /// The clients' priority classes (empty: requests carry none).
    pub classes: super::priority::ClassMix,
}

/// N clients, each issuing its next logical request a think time after its
/// previous one ended (successfully or not).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClosedLoop {
    pub clients: u32,
    pub think: ServiceDist,
}

/// A queue with visibility timeout, max receive count and a dead-letter
/// queue (Amazon SQS semantics, docs/sources/presets.md §9.3), drained
/// by a pool of consumers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConsumerConfig {
    pub concurrency: u32,
    pub visibility: Nanos,
    pub max_receive_count: u32,
    /// Fraction of messages that always fail.
    pub poison: f64,
    /// What the dependency answers a poison message's requests with.
    pub poison_status: u16,
}

/// A caller's client policy on one call edge (a layer of a chain): its
/// timeouts, retries, gates, fan-out, hedging and what it propagates.
#[derive(Clone, Debug)]
pub struct CallPolicy {
    /// Names the edge (a layer's name; `caller.callee` in a graph).
    pub name: String,
    /// Copies of the caller; calls are spread over them by request.
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
    /// The budget is the global one, shared by every layer that says so
    /// (the first such layer's configuration is used).
    pub global_budget: bool,
    pub throttle: Option<Shared<ThrottleConfig>>,
    pub breaker: Option<Shared<BreakerConfig>>,
    /// When this layer gives up on work it started, cancel it (else it
    /// keeps running as orphaned work).
    pub cancel_propagates: bool,
    pub bulkhead: Option<Shared<BulkheadConfig>>,
    /// Parallel requests per attempt, and how many must succeed.
    pub fan_out: u32,
    pub quorum: u32,
    pub hedging: Option<HedgingConfig>,
    /// Envoy hedge_on_per_try_timeout.
    pub hedge_on_timeout: bool,
    /// Probe a timed-out write's status before retrying it.
    pub status_probe: bool,
    /// A retry avoids the callee's replicas this call already tried
    /// (Envoy's `previous_hosts` retry predicate).
    pub retry_other_replica: bool,
    /// Ejects the callee's replicas that keep failing from this edge's
    /// balancing.
    pub outlier: Option<OutlierConfig>,
    /// A connection pool per caller instance: an attempt needs one of its
    /// connections.
    pub pool: Option<PoolConfig>,
}

/// gRFC A6 hedging policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgingConfig {
    pub delay: Nanos,
    pub max_attempts: u32,
    pub non_fatal: RetryOn,
}

/// A piece of state and whether it is one per layer instance or one for
/// the whole layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shared<T> {
    pub config: T,
    /// One state for all instances of the layer (else one per instance).
    pub shared: bool,
}

impl CallPolicy {
    /// A layer that calls through once and waits as long as its caller.
    pub fn passthrough(name: &str) -> Self {
        CallPolicy {
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
            global_budget: false,
            throttle: None,
            breaker: None,
            cancel_propagates: false,
            bulkhead: None,
            fan_out: 1,
            quorum: 1,
            hedging: None,
            hedge_on_timeout: false,
            status_probe: false,
            retry_other_replica: false,
            outlier: None,
            pool: None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_events: u64,
    pub max_in_flight: u64,
}

impl ModelConfig {
    /// This configuration with its focus service (the dependency of a
    /// chain) changed by `change`.
    pub fn with_dependency(
        mut self,
        change: impl FnOnce(&mut super::server::ServiceConfig),
    ) -> Self {
        let focus = self.topology.focus();
        self.topology = self
            .topology
            .with_service(focus, change)
            .expect("changing a service's settings keeps the topology valid");
        self
    }

    /// The time the incidents of every service disturb (each incident and
    /// the warm-up after it), as sorted disjoint `[start, end)` spans: what
    /// the figures "outside incidents" leave out.
    pub fn incident_windows(&self) -> Vec<(Nanos, Nanos)> {
        super::capacity::merge_windows(
            self.topology
                .services()
                .iter()
                .flat_map(super::capacity::disturbed)
                .collect(),
        )
    }

    /// What the tables of a run are judged against: the focus service's
    /// capacity, the recovery criteria and the edges' names.
    pub fn run_context(&self) -> RunContext {
        let focus = self.topology.service(self.topology.focus());
        RunContext {
            slo_latency: None,
            incident_windows: self.incident_windows(),
            capacity_factors: self
                .topology
                .services()
                .iter()
                .map(|s| super::capacity::per_bucket(s, self.bucket, self.duration))
                .collect(),
            focus: Some(self.topology.focus().index()),
            capacity_per_sec: focus.capacity_per_sec().unwrap_or(0.0),
            concurrency: focus.workers().unwrap_or(0),
            recovery: self.recovery,
            layer_names: self.topology.edge_names(),
            services: {
                let order = self.topology.display_order();
                self.topology
                    .services()
                    .iter()
                    .enumerate()
                    .map(|(i, s)| ServiceInfo {
                        name: s.name.clone(),
                        capacity_per_s: s.capacity_per_sec(),
                        concurrency: s.workers(),
                        holds_while_calling: s.hold_worker
                            && s.concurrency.is_some()
                            && !s.calls.is_empty(),
                        rank: order.iter().position(|o| o.index() == i).unwrap_or(i),
                        replicas: s.replicas.max(1),
                        up: super::capacity::replicas_up_per_bucket(s, self.bucket, self.duration),
                    })
                    .collect()
            },
            edges: self
                .topology
                .edges()
                .iter()
                .map(|e| EdgeInfo {
                    name: e.policy.name.clone(),
                    caller: e.caller.map_or_else(
                        || "clients".to_string(),
                        |c| self.topology.service(c).name.clone(),
                    ),
                    callee: self.topology.service(e.callee).name.clone(),
                    pool: e.policy.pool.is_some(),
                })
                .collect(),
        }
    }
}
