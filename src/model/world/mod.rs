//! One simulation run: a world of nodes on an explicit topology (the
//! shape of turmoil's `World`). The world owns the event queue, every
//! random stream, the live entities and each node's state, and hands each
//! event to the node it concerns:
//!
//! - the **clients** (`clients`): open- or closed-loop arrivals, each a
//!   logical request that starts a call on the entry edge;
//! - **call edges** (`edge`): a call makes attempts in *rounds*; a round
//!   sends one request to the callee (or several, with fan-out or
//!   hedging) through the edge's gates (throttle, breaker, bulkhead,
//!   budget, in `model::gates`), and retries by the edge's policy;
//! - **services** (`service`): a request that reaches a service whose
//!   only job is to forward it becomes a call of the next edge at once;
//!   anywhere else it is a *job*: it waits for a worker of the service's
//!   server (`model::server`), does the service's own work, makes the
//!   service's calls stage by stage, and answers;
//! - the **broker** (`broker`): messages and their consumers.
//!
//! The topology (`model::topology`) says where a request goes next.
//!
//! Every call and job carries an `epoch` that changes with each round and
//! each reuse of its slot; every link to it carries the epoch it saw. An
//! answer whose epoch no longer matches is stale and dropped: that is how
//! the answer to an abandoned attempt (orphaned work) is told apart from a
//! live one. Timers are cancelled in the engine: a call, job or message
//! keeps the handles of its pending timers beside its epoch and cancels
//! them when a round ends or the epoch moves on, so a stale timer is never
//! delivered and holds no memory.

mod broker;
mod cache;
mod clients;
mod edge;
mod event;
mod fleet;
mod ids;
mod limit;
mod pool;
mod service;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::{EventQueue, Nanos, Purpose, Stream, TimerId};
use crate::metrics::{Abort, Recorder, RunInfo};

use super::balancer::BalancerState;
use super::budget::{Budget, CallBudget};
use super::config::ModelConfig;
use super::gates::LayerGates;
use super::outcome::{Failure, Outcome};
use super::outlier::Views;
use super::pool::PoolSet;
use super::retry::RetryState;
use super::server::{Incident, Server};
use super::slab::Slab;
use super::topology::{EdgeId, ReplicaId, ServiceId, Topology};

pub use event::Event;
pub use ids::{CallId, Child, Children, ClientId, ConnRef, JobId, MsgId, Parent};

/// How often (in events) a run looks at its stop flag: often enough to stop
/// within milliseconds, rarely enough to cost nothing.
pub const STOP_POLL: u64 = 4096;

/// A time that never comes: the absorbing element of `min` for deadlines
/// and timeouts that are not set.
pub const NEVER: Nanos = Nanos::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallState {
    /// A round is open: its requests are out.
    Round,
    /// Between rounds (backoff, or a throttle's wait).
    Sleeping,
    /// Waiting for a status probe's answer.
    Probing,
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Call {
    epoch: u32,
    /// The pending `RoundTimeout` of the current round or probe.
    timeout: Option<TimerId>,
    /// The pending `Wake` (asleep) or `Hedge` (in a round).
    timer: Option<TimerId>,
    edge: EdgeId,
    state: CallState,
    /// The edge whose caller first gave up on this call.
    orphaned_by: Option<EdgeId>,
    /// The throttle already let the next round go (after a wait).
    throttle_passed: bool,
    /// Probe the write's status before the next round (it timed out).
    probe_first: bool,
    /// Which instance of the caller makes this call (whose gates it uses).
    instance: u32,
    parent: Parent,
    children: Children,
    /// Requests of this round launched, waiting for a bulkhead slot,
    /// succeeded and failed; bulkhead slots held.
    launched: u16,
    queued: u16,
    ok: u16,
    failed: u16,
    slots: u16,
    /// No attempt or sleep of this call outlives this (`NEVER`: no such
    /// bound): the user's deadline, or the caller's propagated one.
    deadline: Nanos,
    /// The end of this edge's own total timeout (`NEVER`: none).
    own_end: Nanos,
    /// The logical request's own deadline (for the invariant check).
    req_deadline: Nanos,
    /// The callee's replicas this call has tried (bit r: replica r), for
    /// `retry_other_replica`.
    tried: u64,
    /// The logical request this call serves, and its priority class.
    req: u64,
    class: u8,
    /// A poison message's request: the leaf services always fail it.
    poison: bool,
    retry: RetryState,
    budget: CallBudget,
    /// The last failure seen from below (what a refusal returns upward).
    last_failure: Failure,
    /// The pooled connection (a slot of its instance's pool) its request
    /// of this round holds, and whether the request waits for one.
    conn: Option<u16>,
    pool_wait: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobState {
    Queued,
    InService,
    /// Its own work is done; its calls are out.
    Calling,
    /// Waiting for its `Respond` event.
    Responding,
    /// Cancelled while queued; dropped when it reaches the queue's head.
    Cancelled,
    /// Swallowed by a blackholed replica: nothing more happens to it, but
    /// its caller waits for it (and its replica counts it as in flight)
    /// until the caller gives up.
    Vanished,
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    epoch: u32,
    /// The pending `ServiceDone` or `Respond`.
    timer: Option<TimerId>,
    state: JobState,
    service: ServiceId,
    /// A status probe rather than the request itself.
    probe: bool,
    /// Answered from the idempotency store.
    deduped: bool,
    /// A write that committed (its caller may not know yet).
    committed: bool,
    /// A poison message's request.
    poison: bool,
    /// It holds one of its service's workers.
    holds_worker: bool,
    orphaned_by: Option<EdgeId>,
    caller: CallId,
    caller_epoch: u32,
    req: u64,
    /// Its logical request's priority class.
    class: u8,
    arrived: Nanos,
    started: Nanos,
    /// Worker time of its own work.
    work: Nanos,
    outcome: Outcome,
    /// The replica of its service it is at.
    replica: ReplicaId,
    /// Its caller counts it among the requests in flight to `replica`
    /// (`World::awaited`): sent, neither answered nor given up on.
    awaited: bool,
    /// A connect of this pool slot rather than a request (its caller
    /// fields are unused).
    conn: Option<ConnRef>,
    /// Its calls: the stage running, the calls of it still out, and them.
    stage: u16,
    pending: u16,
    children: Children,
    /// What its calls inherit: a propagated deadline, the request's own.
    deadline: Nanos,
    req_deadline: Nanos,
    /// Let in by its replica's adaptive concurrency limit and outstanding
    /// there, with `inflight` outstanding once it was let in.
    limited: bool,
    inflight: u32,
    /// What it is to its service's cache.
    cache: cache::CacheRole,
}

impl Job {
    /// Swallowed by a blackhole, still awaited by its caller.
    fn vanished(&self) -> bool {
        self.state == JobState::Vanished
    }
}

/// One run of a model.
pub struct World<'a> {
    cfg: &'a ModelConfig,
    topo: &'a Topology,
    q: EventQueue<Event>,
    calls: Slab<Call>,
    jobs: Slab<Job>,
    /// Children lists of rounds and stages with more than one request.
    lists: Slab<Vec<Child>>,
    /// Per replica (of every service, flat): its server's live state.
    servers: Vec<Server<JobId>>,
    /// Per replica (flat, as `servers`): the requests in flight to it as
    /// its callers see them (sent, neither answered nor given up on),
    /// what Envoy's least-request balancers compare (a host's
    /// `rq_active`): a replica that swallows requests or holds its answers
    /// back looks busy, as it does to Envoy.
    awaited: Vec<u32>,
    /// Per replica: the levels last reported (queued, busy, inside); per
    /// service: their sums over its replicas.
    synced: Vec<[u32; 3]>,
    totals: Vec<[u32; 3]>,
    /// Per service: its balancer's state and dice.
    balancers: Vec<BalancerState>,
    balance_rng: Vec<Stream>,
    /// Per edge with outlier detection: what each caller instance knows
    /// of each replica of its callee (empty for the other edges).
    outliers: Vec<Views>,
    /// The incidents of every service, flat, in the order they are
    /// scheduled.
    incidents: Vec<(ServiceId, Incident)>,
    broker: Option<broker::Broker>,
    messages: Stream,
    arrivals: Stream,
    think: Stream,
    /// Each logical request's priority class.
    priority: Stream,
    /// Per service: service times, and error bursts.
    work_rng: Vec<Stream>,
    incident_rng: Vec<Stream>,
    /// Per edge: jitter, and the throttle's dice.
    jitter: Vec<Stream>,
    throttle_rng: Vec<Stream>,
    /// Per edge: its gates, and its connection pools (None: no pool).
    gates: Vec<LayerGates>,
    pools: Vec<Option<PoolSet>>,
    /// The budget shared by every edge whose budget scope is global.
    global_budget: Option<Budget>,
    /// Services whose writes commit (one commit count per request each).
    writers: Vec<ServiceId>,
    /// Per service: its autoscaler (`None`: a fixed fleet).
    autoscalers: Vec<Option<super::autoscale::Autoscaler>>,
    /// Per replica: the pending `ReplicaReady` of a replica provisioning.
    ready_timers: Vec<Option<TimerId>>,
    /// Per replica: when it last started serving (0: from the start).
    serving_since: Vec<Nanos>,
    /// Per replica: its adaptive concurrency limit (`None`: none).
    limiters: Vec<Option<limit::ReplicaLimit>>,
    /// Per service: the sum of its replicas' limits last recorded.
    limit_sums: Vec<u64>,
    /// Per service: its cache (`None`: none); a waiting request is named
    /// by its job and the job's epoch.
    caches: Vec<Option<super::cache::Cache<(JobId, u32)>>>,
    /// The run's seed (the streams drawn per request derive from it).
    run_seed: u64,
    rec: Recorder,
    next_req: u64,
}

/// An event queue with a lane for every fixed delay a timer is set with
/// (see `engine::queue`): per-attempt timeouts first, then hedging delays,
/// the user's deadline, total timeouts and the visibility timeout. Only a
/// matter of speed: events come out in the same order without lanes.
fn queue_with_lanes(cfg: &ModelConfig) -> EventQueue<Event> {
    let mut q = EventQueue::new();
    let policies = || cfg.topology.edges().iter().map(|e| &e.policy);
    let delays = (policies().filter_map(|p| p.timeout))
        .chain(policies().filter_map(|p| p.hedging.map(|h| h.delay)))
        .chain(cfg.deadline)
        .chain(policies().filter_map(|p| p.total_timeout))
        .chain(policies().filter_map(|p| p.pool.map(|p| p.acquire_timeout)))
        .chain(cfg.consumers.map(|c| c.visibility));
    for delay in delays {
        q.add_lane(delay);
    }
    q
}

impl<'a> World<'a> {
    pub fn new(cfg: &'a ModelConfig, run_seed: u64) -> Self {
        let topo = &cfg.topology;
        let edges = topo.edges();
        let services = topo.services();
        let stream = |purpose, n: usize| -> Vec<Stream> {
            (0..n)
                .map(|i| Stream::new(run_seed, purpose, i as u64))
                .collect()
        };
        World {
            cfg,
            topo,
            q: queue_with_lanes(cfg),
            calls: Slab::default(),
            jobs: Slab::default(),
            lists: Slab::default(),
            servers: (0..topo.total_replicas())
                .map(|_| Server::default())
                .collect(),
            awaited: vec![0; topo.total_replicas()],
            synced: vec![[0; 3]; topo.total_replicas()],
            totals: vec![[0; 3]; services.len()],
            balancers: vec![BalancerState::default(); services.len()],
            balance_rng: stream(Purpose::Balancer, services.len()),
            outliers: edges
                .iter()
                .map(|e| match e.policy.outlier {
                    Some(_) => Views::new(e.policy.instances, topo.replica_count(e.callee)),
                    None => Views::default(),
                })
                .collect(),
            incidents: services
                .iter()
                .enumerate()
                .flat_map(|(s, svc)| svc.incidents.iter().map(move |&i| (ServiceId(s as u16), i)))
                .collect(),
            broker: cfg.consumers.map(|c| broker::Broker::new(c.concurrency)),
            messages: Stream::new(run_seed, Purpose::Messages, 0),
            arrivals: Stream::new(run_seed, Purpose::Arrivals, 0),
            think: Stream::new(run_seed, Purpose::Think, 0),
            priority: Stream::new(run_seed, Purpose::Priority, 0),
            work_rng: stream(Purpose::ServiceTimes, services.len()),
            incident_rng: stream(Purpose::Incidents, services.len()),
            jitter: stream(Purpose::Jitter, edges.len()),
            throttle_rng: stream(Purpose::Throttle, edges.len()),
            gates: edges.iter().map(|e| LayerGates::new(&e.policy)).collect(),
            pools: edges
                .iter()
                .map(|e| e.policy.pool.map(|p| PoolSet::new(p, e.policy.instances)))
                .collect(),
            global_budget: edges
                .iter()
                .find(|e| e.policy.global_budget)
                .and_then(|e| e.policy.budget)
                .map(|b| Budget::new(b.config)),
            writers: services
                .iter()
                .enumerate()
                .filter(|(_, s)| s.side_effects.writes())
                .map(|(i, _)| ServiceId(i as u16))
                .collect(),
            autoscalers: services
                .iter()
                .map(|s| s.autoscale.map(super::autoscale::Autoscaler::new))
                .collect(),
            ready_timers: vec![None; topo.total_replicas()],
            serving_since: vec![0; topo.total_replicas()],
            limiters: (0..topo.total_replicas())
                .map(|r| {
                    let (s, _) = topo.replica_of(ReplicaId(r as u32));
                    topo.service(s).adaptive.as_ref().map(|a| {
                        let rng = Stream::new(run_seed, Purpose::Adaptive, r as u64);
                        limit::ReplicaLimit::new(a, rng)
                    })
                })
                .collect(),
            limit_sums: vec![0; services.len()],
            caches: services
                .iter()
                .map(|s| s.cache.map(super::cache::Cache::new))
                .collect(),
            run_seed,
            rec: {
                let mut rec =
                    Recorder::with_services(cfg.duration, cfg.bucket, edges.len(), services.len());
                rec.exclude(cfg.incident_windows());
                rec.with_replicas(topo.total_replicas());
                rec.with_classes(cfg.classes.len());
                rec
            },
            next_req: 0,
        }
    }

    /// Runs to the end of the simulated time (or a guard rail) and returns
    /// what was recorded.
    pub fn run(self) -> (Recorder, RunInfo) {
        static NEVER_STOP: AtomicBool = AtomicBool::new(false);
        self.run_until(&NEVER_STOP)
    }

    /// `run`, but stops early (aborted: interrupted) once `stop` is
    /// raised; polled every `STOP_POLL` events.
    pub fn run_until(mut self, stop: &AtomicBool) -> (Recorder, RunInfo) {
        let cfg = self.cfg;
        for i in 0..self.incidents.len() {
            let (_, inc) = self.incidents[i];
            self.q
                .schedule_at(inc.start, Event::IncidentStart(i as u16));
            self.q.schedule_at(inc.end, Event::IncidentEnd(i as u16));
        }
        self.start_fleets();
        self.start_limits();
        self.start_caches();
        self.start_clients();
        let sampled =
            self.gates.iter().any(LayerGates::any) || self.outliers.iter().any(Views::enabled);
        if sampled && cfg.bucket < cfg.duration {
            self.q.schedule_at(cfg.bucket, Event::Tick);
        }
        let mut aborted = None;
        while let Some(ev) = self.q.pop_before(cfg.duration) {
            self.handle(ev);
            if self.q.events().is_multiple_of(STOP_POLL) && stop.load(Ordering::Relaxed) {
                aborted = Some(Abort::Interrupted);
                break;
            }
            if self.q.events() >= cfg.limits.max_events {
                aborted = Some(Abort::MaxEvents {
                    limit: cfg.limits.max_events,
                });
                break;
            }
            if self.over_in_flight_limit() {
                aborted = Some(Abort::MaxInFlight {
                    limit: cfg.limits.max_in_flight,
                });
                break;
            }
            // What the queue holds follows the pending events (cancelled
            // timers are gone), and each live call, request or message
            // holds at most two or three: bounded by the same limit.
            if self.q.pending() as u64 > cfg.limits.max_in_flight {
                aborted = Some(Abort::EventsPending {
                    limit: cfg.limits.max_in_flight,
                });
                break;
            }
        }
        let end = if aborted.is_some() {
            self.q.now()
        } else {
            cfg.duration
        };
        let last = ((end.max(1) - 1) / cfg.bucket) as usize;
        self.sample_levels(last, end);
        let open_messages = self.messages_open();
        for (r, server) in self.servers.iter().enumerate() {
            let (s, _) = self.topo.replica_of(ReplicaId(r as u32));
            let unserved = u64::from(server.queued + server.in_service);
            self.rec.svc.unserved_at_end[s.index()] += unserved;
            self.rec.svc.replicas[r].unserved_at_end = unserved;
        }
        self.record_pools();
        // When each logical request still open arrived, and its class:
        // its root call (every request has one until it ends).
        let open_since = self
            .calls
            .iter_ids()
            .map(|id| self.calls.get(id))
            .filter(|c| c.state != CallState::Done && matches!(c.parent, Parent::Root { .. }))
            .map(|c| (c.retry.started, c.class))
            .collect();
        self.rec.finish_open(open_since);
        self.rec.finish(end, open_messages);
        let info = RunInfo {
            events: self.q.events(),
            digest: self.q.digest(),
            aborted,
            end,
            completion: None,
        };
        (self.rec, info)
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Arrival => self.on_arrival(),
            Event::ClientReady(client) => self.new_request(Some(client), None, false),
            Event::Visible { msg, epoch } => self.on_visible(msg, epoch),
            Event::RoundTimeout { call, epoch } => self.on_round_timeout(call, epoch),
            Event::Wake { call, epoch } => self.on_wake(call, epoch),
            Event::Hedge { call, epoch } => self.on_hedge(call, epoch),
            Event::ServiceDone { job, epoch } => self.on_service_done(job, epoch),
            Event::Respond { job, epoch } => self.on_respond(job, epoch),
            Event::IncidentStart(i) => self.on_incident(i as usize, true),
            Event::IncidentEnd(i) => self.on_incident(i as usize, false),
            Event::Tick => self.on_tick(),
            Event::Autoscale(s) => self.on_autoscale(ServiceId(s)),
            Event::ReplicaReady(r) => self.on_replica_ready(ReplicaId(r)),
            Event::PoolTimeout { call, epoch } => self.on_pool_timeout(call, epoch),
            Event::Reconnect(conn) => self.on_reconnect(conn),
        }
    }

    // -------------------------------------------------------------- ticks

    /// Samples the gates' levels into the bucket that ends now.
    fn on_tick(&mut self) {
        let now = self.q.now();
        let bucket = (now / self.cfg.bucket).saturating_sub(1) as usize;
        self.sample_levels(bucket, now);
        let next = now.saturating_add(self.cfg.bucket);
        if next < self.cfg.duration {
            self.q.schedule_at(next, Event::Tick);
        }
    }

    fn sample_levels(&mut self, bucket: usize, now: Nanos) {
        for (edge, g) in self.gates.iter_mut().enumerate() {
            if g.any() {
                let l = g.levels(now, &mut self.global_budget);
                self.rec
                    .levels(bucket, edge, [l.budget, l.throttle, l.breaker_open]);
            }
        }
        // Replicas ejected by some caller's outlier detection.
        if !self.outliers.iter().any(Views::enabled) {
            return;
        }
        for s in 0..self.topo.services().len() {
            let s = ServiceId(s as u16);
            let n = self.topo.replica_count(s);
            let (mut ejected, mut serving) = (0, 0);
            for r in 0..n {
                let out = self.topo.edges().iter().enumerate().any(|(e, edge)| {
                    edge.callee == s && self.outliers[e].any_ejected(r as usize, now)
                });
                ejected += u32::from(out);
                serving += u32::from(out && !self.servers[self.topo.replica(s, r).index()].out());
            }
            if ejected > 0 {
                self.rec.ejected(bucket, s.index(), [ejected, serving]);
            }
        }
    }

    // ---------------------------------------------------------- children

    fn add_child(children: &mut Children, lists: &mut Slab<Vec<Child>>, child: Child) {
        match *children {
            Children::None => *children = Children::One(child),
            Children::One(first) => {
                let list = lists.insert(|old| {
                    let mut v = old.map(|_| Vec::new()).unwrap_or_default();
                    v.clear();
                    v
                });
                let v = lists.get_mut(list);
                v.clear();
                v.push(first);
                v.push(child);
                *children = Children::Many(list);
            }
            Children::Many(list) => lists.get_mut(list).push(child),
        }
    }

    /// `parent` stops waiting for every member of `children` (the set is
    /// then gone; a list's slot is freed, its allocation kept for reuse).
    fn abandon_all(&mut self, children: Children, parent: Parent, edge: EdgeId, cancel: bool) {
        match children {
            Children::None => {}
            Children::One(child) => self.abandon(parent, child, edge, cancel),
            Children::Many(list) => {
                let members = std::mem::take(self.lists.get_mut(list));
                for &child in &members {
                    self.abandon(parent, child, edge, cancel);
                }
                *self.lists.get_mut(list) = members;
                self.lists.remove(list);
            }
        }
    }

    /// Whether `child` still works for `parent` (its slot may have been
    /// reused since).
    fn works_for(&self, child: Child, parent: Parent) -> bool {
        match child {
            Child::Call(c) => {
                let cc = self.calls.get(c.0);
                cc.parent == parent && cc.state != CallState::Done
            }
            Child::Job(j) => {
                let jj = self.jobs.get(j.0);
                let Parent::Call { call, epoch } = parent else {
                    return false;
                };
                jj.caller == call && jj.caller_epoch == epoch && jj.state != JobState::Done
            }
        }
    }
}
