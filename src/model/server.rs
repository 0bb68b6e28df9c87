//! A service's server: `concurrency` workers (or unlimited), a bounded FIFO
//! or LIFO queue with an optional queue timeout, a service-time
//! distribution (or none: a proxy that does no work of its own), load
//! shedding when the queue is full (503, or 429 with a Retry-After), and
//! the incidents it goes through. [`ServiceConfig`] describes it;
//! [`Server`] is its live state, a small state machine that takes `now`
//! and answers what happens to an arriving request ([`Admission`]) and how
//! much capacity it has; the world does the scheduling.
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

use std::collections::VecDeque;

use crate::engine::{Nanos, Stream};

use super::service::ServiceDist;
use super::topology::EdgeId;

/// One service of the graph.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    pub name: String,
    /// Workers per replica; `None` is unlimited (every request starts at
    /// once).
    pub concurrency: Option<u32>,
    /// The service's own work on a worker, before its calls; `None` is no
    /// work (a proxy).
    pub service: Option<ServiceDist>,
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
    /// The worker stays busy while the request's calls are out (thread
    /// per request); else it is freed once the service's own work is done.
    pub hold_worker: bool,
    /// The calls each request makes, in order (each edge's `parallel`
    /// flag groups it with the call before it).
    pub calls: Vec<EdgeId>,
}

impl ServiceConfig {
    /// A leaf service named `name` with `concurrency` workers, the given
    /// service time and queue, and every other field at its default.
    pub fn leaf(name: &str, concurrency: u32, service: ServiceDist, queue_capacity: u32) -> Self {
        ServiceConfig {
            name: name.to_string(),
            concurrency: Some(concurrency),
            service: Some(service),
            queue_capacity,
            lifo: false,
            queue_timeout: None,
            queue_timeout_status: 503,
            shed_status: 503,
            shed_retry_after: 0,
            incidents: Vec::new(),
            warmup: 0,
            warmup_from: 0.1,
            side_effects: SideEffects::Read,
            dedupe: false,
            dedupe_cost: 1_000_000,
            stop_on_cancel: false,
            hold_worker: true,
            calls: Vec::new(),
        }
    }

    /// A service that only forwards each request to one call: no workers
    /// limit, no work, no incidents (a hop of a chain of layers).
    pub fn proxy(name: &str, call: EdgeId) -> Self {
        ServiceConfig {
            concurrency: None,
            service: None,
            queue_capacity: 0,
            calls: vec![call],
            ..ServiceConfig::leaf(name, 1, ServiceDist::Constant(1), 0)
        }
    }

    /// Requests per second the service completes at full capacity:
    /// concurrency ÷ mean service time (`None` when either is unlimited).
    pub fn capacity_per_sec(&self) -> Option<f64> {
        let workers = self.concurrency?;
        let mean = self.service?.mean();
        Some(workers as f64 * 1e9 / mean)
    }
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

/// What happens to a request arriving at a server now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Down: it fails at once with a connection error.
    Refused,
    /// Blackholed: it vanishes.
    Vanished,
    /// An error burst failed it with this status.
    Error(u16),
    /// A worker is free: it starts now.
    Start,
    /// It waits in the queue.
    Queue,
    /// The queue is full: shed.
    Shed,
}

/// The live state of one server.
pub struct Server<J> {
    pub busy: u32,
    /// Queued requests, cancelled ones included (skipped when popped).
    pub queue: VecDeque<J>,
    /// Live entries of `queue`.
    pub queued: u32,
    /// Requests doing their own work, and waiting for their calls.
    pub in_service: u32,
    pub calling: u32,
    down: u32,
    blackhole: u32,
    brownout: f64,
    errors: Option<(f64, u16)>,
    latency_add: Nanos,
    warm_start: Nanos,
    warming: bool,
    /// Commits per logical request (saturating), for writes.
    pub commits: Vec<u8>,
}

impl<J> Default for Server<J> {
    fn default() -> Self {
        Server {
            busy: 0,
            queue: VecDeque::new(),
            queued: 0,
            in_service: 0,
            calling: 0,
            down: 0,
            blackhole: 0,
            brownout: 1.0,
            errors: None,
            latency_add: 0,
            warm_start: 0,
            warming: false,
            commits: Vec::new(),
        }
    }
}

impl<J> Server<J> {
    /// What becomes of a request arriving now (`rng` decides error bursts).
    #[inline]
    pub fn admit(&self, cfg: &ServiceConfig, rng: &mut Stream) -> Admission {
        if self.down > 0 {
            return Admission::Refused;
        }
        if self.blackhole > 0 {
            return Admission::Vanished;
        }
        if let Some((rate, status)) = self.errors
            && rng.chance(rate)
        {
            return Admission::Error(status);
        }
        if cfg.concurrency.is_none_or(|c| self.busy < c) {
            Admission::Start
        } else if (self.queued as u64) < cfg.queue_capacity as u64 {
            Admission::Queue
        } else {
            Admission::Shed
        }
    }

    /// Requests inside: queued, in service, or waiting for their calls.
    #[inline]
    pub fn inside(&self) -> u32 {
        self.queued + self.in_service + self.calling
    }

    /// Whether a worker is free for the next queued request.
    #[inline]
    pub fn has_free_worker(&self, cfg: &ServiceConfig) -> bool {
        cfg.concurrency.is_none_or(|c| self.busy < c)
    }

    /// Fraction of nominal capacity available now (brownout × warm-up).
    pub fn capacity_factor(&self, cfg: &ServiceConfig, now: Nanos) -> f64 {
        let mut f = self.brownout;
        if self.warming && cfg.warmup > 0 {
            let since = now.saturating_sub(self.warm_start);
            if since < cfg.warmup {
                f *= cfg.warmup_from + (1.0 - cfg.warmup_from) * since as f64 / cfg.warmup as f64;
            }
        }
        f
    }

    /// The delay added to every response now (latency incidents).
    pub fn latency_add(&self) -> Nanos {
        self.latency_add
    }

    /// An incident starts or ends. Returns true when a `down` starts: the
    /// work inside is lost and the caller must reset it.
    pub fn on_incident(&mut self, effect: Effect, starts: bool, now: Nanos) -> bool {
        let mut reset = false;
        match effect {
            Effect::Down if starts => {
                self.down += 1;
                reset = true;
            }
            Effect::Down => self.down -= 1,
            Effect::Blackhole if starts => self.blackhole += 1,
            Effect::Blackhole => self.blackhole -= 1,
            Effect::Brownout { capacity } if starts => self.brownout *= capacity,
            Effect::Brownout { capacity } => self.brownout /= capacity,
            Effect::Errors { rate, status } if starts => self.errors = Some((rate, status)),
            Effect::Errors { .. } => self.errors = None,
            Effect::Latency { add } if starts => self.latency_add += add,
            Effect::Latency { add } => self.latency_add -= add,
        }
        if !starts && effect.needs_warmup() {
            self.warming = true;
            self.warm_start = now;
        }
        if !starts && matches!(effect, Effect::Brownout { .. }) && self.brownout > 0.999_999 {
            self.brownout = 1.0;
        }
        reset
    }

    /// Whether request `req`'s write has committed at least once.
    pub fn committed(&self, req: u64) -> bool {
        self.commits.get(req as usize).is_some_and(|&c| c > 0)
    }
}
