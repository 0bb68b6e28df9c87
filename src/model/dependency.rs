//! The capacity-limited dependency: `concurrency` workers, a bounded FIFO
//! or LIFO queue with an optional queue timeout, a service-time
//! distribution, load shedding when the queue is full (503, or 429 with a
//! Retry-After), and the incidents it goes through.
//!
//! Incident semantics:
//! - `down`: every arriving request fails at once with a connection error,
//!   and the work queued or in service when it starts is lost (connection
//!   reset);
//! - `blackhole`: arriving requests vanish; callers learn only through
//!   their own timeouts. Work already inside completes normally;
//! - `brownout`: service times are divided by `capacity` (so throughput is
//!   multiplied by it) for work that starts during the incident;
//! - `errors`: a fraction of arriving requests fail at once with a status;
//! - `latency`: every response is delayed by `add` on its way back (network
//!   style: the worker is free, the caller waits).
//!
//! After `down`, `blackhole` and `brownout`, capacity ramps back linearly
//! from `warmup_from` to 1 over `warmup` (cold caches).

use crate::engine::Nanos;

use super::service::ServiceDist;

#[derive(Clone, Debug)]
pub struct DependencyConfig {
    pub concurrency: u32,
    pub service: ServiceDist,
    pub queue_capacity: u32,
    pub lifo: bool,
    pub queue_timeout: Option<Nanos>,
    pub queue_timeout_status: u16,
    pub shed_status: u16,
    /// Retry-After sent with a shed response (0 = none).
    pub shed_retry_after: Nanos,
    pub incidents: Vec<Incident>,
    pub warmup: Nanos,
    pub warmup_from: f64,
    pub side_effects: SideEffects,
    /// Requests carry an idempotency key: a logical request commits once.
    pub dedupe: bool,
    /// Service time of a request answered from the idempotency store (and
    /// of a status probe).
    pub dedupe_cost: Nanos,
    /// A cancelled request in service stops (else it runs to the end).
    pub stop_on_cancel: bool,
}

/// What finishing a request does (the playbook's operation classes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SideEffects {
    #[default]
    Read,
    IdempotentWrite,
    /// A non-idempotent write: a second commit is a duplicate side effect.
    Write,
}

impl SideEffects {
    pub fn writes(self) -> bool {
        self != SideEffects::Read
    }
}

impl DependencyConfig {
    /// Requests per second the dependency completes at full capacity:
    /// concurrency ÷ mean service time.
    pub fn capacity_per_sec(&self) -> f64 {
        self.concurrency as f64 * 1e9 / self.service.mean()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Incident {
    pub start: Nanos,
    pub end: Nanos,
    pub effect: Effect,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    Down,
    Blackhole,
    Brownout { capacity: f64 },
    Errors { rate: f64, status: u16 },
    Latency { add: Nanos },
}

impl Effect {
    /// Whether capacity warms up again after this incident.
    pub fn needs_warmup(&self) -> bool {
        matches!(
            self,
            Effect::Down | Effect::Blackhole | Effect::Brownout { .. }
        )
    }
}
