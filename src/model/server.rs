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

use super::adaptive::AdaptiveConfig;
use super::autoscale::AutoscaleConfig;
use super::balancer::Balancer;
use super::cache::CacheConfig;
use super::priority::ShedThresholds;
use super::service::ServiceDist;
use super::slowdown::Slowdown;
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
    /// Copies of the server, each with its own workers and queue (at
    /// least 1).
    pub replicas: u32,
    /// How requests are spread over the replicas.
    pub balancer: Balancer,
    /// Work stretches with the fraction of the replica's workers busy
    /// (`model::slowdown`); `None`: it never does.
    pub slowdown: Option<Slowdown>,
    /// The replicas come and go with load (`model::autoscale`); `replicas`
    /// is then the most there can be (`max`).
    pub autoscale: Option<AutoscaleConfig>,
    /// Each replica limits the requests it holds by an adaptive
    /// concurrency limit (`model::adaptive`); `None`: no limit.
    pub adaptive: Option<AdaptiveConfig>,
    /// An LRU cache in front of the service's calls (`model::cache`);
    /// `None`: none.
    pub cache: Option<CacheConfig>,
    /// Per priority class, the queue length from which a request of that
    /// class is shed (`model::priority`); empty: no priority shedding.
    pub shed_by_priority: ShedThresholds,
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
            replicas: 1,
            balancer: Balancer::RoundRobin,
            slowdown: None,
            autoscale: None,
            adaptive: None,
            cache: None,
            shed_by_priority: ShedThresholds::default(),
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
    /// replicas × concurrency ÷ mean service time (`None` when either is
    /// unlimited).
    pub fn capacity_per_sec(&self) -> Option<f64> {
        let workers = self.workers()?;
        let mean = self.service?.mean();
        Some(workers as f64 * 1e9 / mean)
    }

    /// Workers of all replicas together (`None`: unlimited).
    pub fn workers(&self) -> Option<u32> {
        Some(self.concurrency?.saturating_mul(self.replicas.max(1)))
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
    /// The one replica it hits; `None`: every replica.
    pub replica: Option<u32>,
}

impl Incident {
    /// Whether it hits replica `r`.
    #[inline]
    pub fn hits(&self, r: u32) -> bool {
        self.replica.is_none_or(|x| x == r)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    Down,
    Blackhole,
    Brownout {
        capacity: f64,
    },
    Errors {
        rate: f64,
        status: u16,
    },
    Latency {
        add: Nanos,
    },
    /// The service's cache is emptied at the start and stores nothing
    /// until the end (`model::cache`); the server itself is untouched.
    Flush,
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

/// Where a replica is in its life under an autoscaler (a fixed fleet's
/// replicas always serve).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// The balancer sends it requests.
    #[default]
    Serving,
    /// Asked for, not serving yet (start-up, readiness).
    Provisioning,
    /// Scaled in: it receives nothing new and finishes what it has.
    Draining,
    /// Not running.
    Off,
}

/// The live state of one server.
pub struct Server<J> {
    pub phase: Phase,
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
            phase: Phase::Serving,
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

    /// Down or blackholed: serving nothing.
    #[inline]
    pub fn out(&self) -> bool {
        self.down > 0 || self.blackhole > 0
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
            Effect::Flush => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_S, Purpose};

    const S: Nanos = NS_PER_S;

    fn cfg(warmup: Nanos, from: f64) -> ServiceConfig {
        let mut c = ServiceConfig::leaf("db", 2, ServiceDist::Constant(S), 3);
        c.warmup = warmup;
        c.warmup_from = from;
        c
    }

    #[test]
    fn warm_up_ramps_linearly_from_its_floor_to_full() {
        let c = cfg(10 * S, 0.2);
        let mut s: Server<u32> = Server::default();
        assert_eq!(s.capacity_factor(&c, 0), 1.0, "never down: full");
        s.on_incident(Effect::Down, true, 5 * S);
        assert_eq!(s.capacity_factor(&c, 6 * S), 1.0, "no ramp while down");
        s.on_incident(Effect::Down, false, 20 * S);
        // From 0.2 at the end of the incident to 1 ten seconds later: the
        // slope is 0.08 per second.
        for (t, want) in [
            (20 * S, 0.2),
            (21 * S, 0.28),
            (25 * S, 0.6),
            (29 * S, 0.92),
            (30 * S - 1, 0.2 + 0.8 * (10e9 - 1.0) / 10e9),
            (30 * S, 1.0),
            (99 * S, 1.0),
        ] {
            let got = s.capacity_factor(&c, t);
            assert!((got - want).abs() < 1e-12, "at {t}: {got} vs {want}");
        }
        // No warm-up configured: full at once.
        assert_eq!(s.capacity_factor(&cfg(0, 0.2), 20 * S), 1.0);
        // A brownout multiplies the ramp.
        s.on_incident(Effect::Brownout { capacity: 0.5 }, true, 40 * S);
        assert_eq!(s.capacity_factor(&c, 41 * S), 0.5);
        s.on_incident(Effect::Brownout { capacity: 0.5 }, false, 50 * S);
        assert!((s.capacity_factor(&c, 55 * S) - 0.6).abs() < 1e-12);
        assert_eq!(s.capacity_factor(&c, 60 * S), 1.0);
    }

    #[test]
    fn only_down_blackhole_and_brownout_need_a_warm_up() {
        let c = cfg(10 * S, 0.5);
        for (effect, warms) in [
            (Effect::Down, true),
            (Effect::Blackhole, true),
            (Effect::Brownout { capacity: 0.3 }, true),
            (
                Effect::Errors {
                    rate: 1.0,
                    status: 503,
                },
                false,
            ),
            (Effect::Latency { add: S }, false),
        ] {
            assert_eq!(effect.needs_warmup(), warms, "{effect:?}");
            let mut s: Server<u32> = Server::default();
            s.on_incident(effect, true, 0);
            s.on_incident(effect, false, S);
            let f = s.capacity_factor(&c, S);
            assert_eq!(f, if warms { 0.5 } else { 1.0 }, "{effect:?}");
        }
    }

    #[test]
    fn admission_follows_workers_then_queue_then_shedding() {
        let c = cfg(0, 0.1); // 2 workers, a queue of 3
        let mut rng = Stream::new(1, Purpose::Incidents, 0);
        let mut s: Server<u32> = Server::default();
        assert_eq!(s.admit(&c, &mut rng), Admission::Start);
        s.busy = 1;
        assert_eq!(s.admit(&c, &mut rng), Admission::Start);
        assert!(s.has_free_worker(&c));
        s.busy = 2;
        assert!(!s.has_free_worker(&c));
        assert_eq!(s.admit(&c, &mut rng), Admission::Queue);
        s.queued = 2;
        assert_eq!(s.admit(&c, &mut rng), Admission::Queue);
        s.queued = 3;
        assert_eq!(s.admit(&c, &mut rng), Admission::Shed);
        // Unlimited workers never queue.
        let mut open = c.clone();
        open.concurrency = None;
        assert_eq!(s.admit(&open, &mut rng), Admission::Start);
        assert!(s.has_free_worker(&open));
        // Down refuses, blackhole swallows, both before anything else;
        // overlapping incidents nest.
        s.on_incident(Effect::Down, true, 0);
        s.on_incident(Effect::Down, true, 0);
        assert_eq!(s.admit(&c, &mut rng), Admission::Refused);
        s.on_incident(Effect::Down, false, 0);
        assert_eq!(s.admit(&c, &mut rng), Admission::Refused);
        s.on_incident(Effect::Down, false, 0);
        s.on_incident(Effect::Blackhole, true, 0);
        assert_eq!(s.admit(&c, &mut rng), Admission::Vanished);
        s.on_incident(Effect::Blackhole, false, 0);
        assert_eq!(s.admit(&c, &mut rng), Admission::Shed);
    }

    #[test]
    fn an_error_burst_fails_its_fraction_within_four_standard_errors() {
        let c = cfg(0, 0.1);
        let mut rng = Stream::new(2, Purpose::Incidents, 0);
        let mut s: Server<u32> = Server::default();
        let effect = Effect::Errors {
            rate: 0.3,
            status: 500,
        };
        s.on_incident(effect, true, 0);
        let n = 20_000;
        let errors = (0..n)
            .filter(|_| s.admit(&c, &mut rng) == Admission::Error(500))
            .count() as f64;
        let se = (0.3 * 0.7 / n as f64).sqrt();
        assert!((errors / n as f64 - 0.3).abs() < 4.0 * se, "{errors}");
        s.on_incident(effect, false, 0);
        assert!((0..100).all(|_| s.admit(&c, &mut rng) == Admission::Start));
    }

    #[test]
    fn latency_and_brownouts_undo_exactly() {
        let mut s: Server<u32> = Server::default();
        s.on_incident(Effect::Latency { add: 3 }, true, 0);
        s.on_incident(Effect::Latency { add: 4 }, true, 0);
        assert_eq!(s.latency_add(), 7);
        s.on_incident(Effect::Latency { add: 3 }, false, 0);
        assert_eq!(s.latency_add(), 4);
        // A brownout's end restores exactly 1, whatever the rounding.
        let c = cfg(0, 0.1);
        for cap in [0.3, 0.7, 0.1] {
            s.on_incident(Effect::Brownout { capacity: cap }, true, 0);
        }
        assert!((s.capacity_factor(&c, 0) - 0.021).abs() < 1e-12);
        for cap in [0.3, 0.7, 0.1] {
            s.on_incident(Effect::Brownout { capacity: cap }, false, 0);
        }
        assert_eq!(s.capacity_factor(&c, 0), 1.0);
        // 0.01 × 0.03 ÷ 0.01 ÷ 0.03 is 0.9999999999999999 in floating
        // point: snapped back to 1.
        for cap in [0.01, 0.03] {
            s.on_incident(Effect::Brownout { capacity: cap }, true, 0);
        }
        for cap in [0.01, 0.03] {
            s.on_incident(Effect::Brownout { capacity: cap }, false, 0);
        }
        assert_eq!(s.capacity_factor(&c, 0), 1.0);
        // A down start asks the caller to reset the work inside.
        assert!(s.on_incident(Effect::Down, true, 0));
        assert!(!s.on_incident(Effect::Down, false, 0));
        assert!(!s.on_incident(Effect::Blackhole, true, 0));
    }

    #[test]
    fn capacity_commits_and_side_effects() {
        let c = ServiceConfig::leaf("db", 8, ServiceDist::Constant(20_000_000), 0);
        assert_eq!(c.capacity_per_sec(), Some(400.0));
        let mut open = c.clone();
        open.concurrency = None;
        assert_eq!(open.capacity_per_sec(), None);
        let proxy = ServiceConfig::proxy("edge", EdgeId(0));
        assert_eq!(proxy.capacity_per_sec(), None);
        assert_eq!(proxy.calls, vec![EdgeId(0)]);
        let s: Server<u32> = Server {
            commits: vec![0, 2],
            ..Server::default()
        };
        assert!(!s.committed(0) && s.committed(1) && !s.committed(7));
        assert!(!SideEffects::Read.writes());
        assert!(SideEffects::IdempotentWrite.writes() && SideEffects::Write.writes());
    }
}
