//! One simulation run: the world state, the event loop and the clients.
//!
//! A logical request enters as a *call* at the outermost layer. A call
//! makes attempts in *rounds*: a round sends one request to the next hop
//! (or several, with fan-out or hedging), each either a call at the next
//! layer or, from the innermost layer, a *job* at the dependency. Outcomes
//! flow back up the same chain.
//!
//! Every call carries an `epoch` that changes with each round and each
//! reuse of its slot; every event and every child that refers to a call
//! carries the epoch it saw. A response whose epoch no longer matches is
//! stale and is dropped: that is how the answer to an abandoned attempt
//! (orphaned work) is told apart from a live one. Timers are cancelled in
//! the engine: a call, job or message keeps the handles of its pending
//! timers beside its epoch and cancels them when a round ends or the epoch
//! moves on, so a stale timer is never delivered and holds no memory (the
//! epoch checks in the handlers stay, as a second line).
//!
//! The code is split by concept: `calls` (rounds, retries, gates, fan-out,
//! hedging, cancellation) and `server` (the dependency: queue, workers,
//! incidents, side effects).

mod broker;
mod calls;
mod server;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::{EventKind, EventQueue, Nanos, Purpose, Stream, TimerId};
use crate::metrics::{Recorder, RunInfo};

use super::budget::CallBudget;
use super::config::ModelConfig;
use super::gates::LayerGates;
use super::outcome::{Failure, Outcome};
use super::retry::RetryState;
use super::slab::Slab;

const NONE: u32 = u32::MAX;

/// How often (in events) a run looks at its stop flag: often enough to stop
/// within milliseconds, rarely enough to cost nothing.
pub const STOP_POLL: u64 = 4096;

/// The `aborted` reason of a run stopped by its stop flag (Ctrl-C).
pub const INTERRUPTED: &str = "interrupted (Ctrl-C)";
/// `orphaned_by` of work whose callers are all still waiting.
const NO_LAYER: u8 = u8::MAX;

#[derive(Clone, Copy, Debug)]
enum Event {
    Arrival,
    /// A closed-loop client's think time is over: its next request.
    ClientReady(u32),
    /// A received message's visibility timeout expired.
    Visible {
        msg: u32,
        epoch: u32,
    },
    /// The current round of a call (or its status probe) ran out of time.
    RoundTimeout {
        call: u32,
        epoch: u32,
    },
    /// A backoff sleep or a throttle's wait is over.
    Wake {
        call: u32,
        epoch: u32,
    },
    /// Time for the next hedge of a round.
    Hedge {
        call: u32,
        epoch: u32,
    },
    ServiceDone {
        job: u32,
        epoch: u32,
    },
    Respond {
        job: u32,
        epoch: u32,
    },
    IncidentStart(u16),
    IncidentEnd(u16),
    /// The end of a time bucket: sample budget, throttle and breaker levels.
    Tick,
}

impl EventKind for Event {
    fn kind(&self) -> u8 {
        match self {
            Event::Arrival => 0,
            Event::RoundTimeout { .. } => 1,
            Event::Wake { .. } => 2,
            Event::ServiceDone { .. } => 3,
            Event::Respond { .. } => 4,
            Event::IncidentStart(_) => 5,
            Event::IncidentEnd(_) => 6,
            Event::Tick => 7,
            Event::Hedge { .. } => 8,
            Event::ClientReady(_) => 9,
            Event::Visible { .. } => 10,
        }
    }
}

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Child {
    Call(u32),
    Job(u32),
}

/// The requests of the current round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Children {
    None,
    One(Child),
    /// An index into `Sim::lists` (fan-out and hedging).
    Many(u32),
}

#[derive(Clone, Copy, Debug)]
struct Call {
    epoch: u32,
    /// The pending `RoundTimeout` of the current round or probe.
    timeout: Option<TimerId>,
    /// The pending `Wake` (asleep) or `Hedge` (in a round).
    timer: Option<TimerId>,
    layer: u8,
    state: CallState,
    /// The layer whose caller first gave up on this call (NO_LAYER: none).
    orphaned_by: u8,
    /// The throttle already let the next round go (after a wait).
    throttle_passed: bool,
    /// Probe the write's status before the next round (it timed out).
    probe_first: bool,
    /// Which instance of the layer serves this call.
    instance: u32,
    parent: u32,
    parent_epoch: u32,
    children: Children,
    /// Requests of this round launched, waiting for a bulkhead slot,
    /// succeeded and failed; bulkhead slots held.
    launched: u16,
    queued: u16,
    ok: u16,
    failed: u16,
    slots: u16,
    /// No attempt or sleep of this call outlives this (`u64::MAX` = none):
    /// the user's deadline, or the caller's propagated one.
    deadline: Nanos,
    /// The end of this layer's own total timeout (`u64::MAX` = none).
    own_end: Nanos,
    /// The logical request's own deadline (for the invariant check).
    req_deadline: Nanos,
    /// The logical request this call serves.
    req: u64,
    /// The closed-loop client that issued it (outermost calls; else NONE).
    client: u32,
    /// The message this call handles (outermost calls; else NONE).
    msg: u32,
    /// A poison message's request: the dependency always fails it.
    poison: bool,
    retry: RetryState,
    budget: CallBudget,
    /// The last failure seen from below (what a refusal returns upward).
    last_failure: Failure,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobState {
    Queued,
    InService,
    /// Waiting for its `Respond` event.
    Responding,
    /// Cancelled while queued; dropped when it reaches the queue's head.
    Cancelled,
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    epoch: u32,
    /// The pending `ServiceDone` or `Respond`.
    timer: Option<TimerId>,
    state: JobState,
    /// A status probe rather than the request itself.
    probe: bool,
    /// Answered from the idempotency store.
    deduped: bool,
    /// A write that committed (its caller may not know yet).
    committed: bool,
    /// A poison message's request.
    poison: bool,
    orphaned_by: u8,
    caller: u32,
    caller_epoch: u32,
    req: u64,
    arrived: Nanos,
    started: Nanos,
    service: Nanos,
    outcome: Outcome,
}

/// The dependency's live state.
struct Server {
    busy: u32,
    /// Queued job ids, cancelled ones included (skipped when popped).
    queue: VecDeque<u32>,
    /// Live entries of `queue`.
    queued: u32,
    down: u32,
    blackhole: u32,
    brownout: f64,
    errors: Option<(f64, u16)>,
    latency_add: Nanos,
    warm_start: Nanos,
    warming: bool,
    /// Commits per logical request (saturating), for writes.
    commits: Vec<u8>,
}

pub struct Sim<'a> {
    cfg: &'a ModelConfig,
    q: EventQueue<Event>,
    calls: Slab<Call>,
    jobs: Slab<Job>,
    /// Children lists of rounds with more than one request.
    lists: Slab<Vec<Child>>,
    dep: Server,
    broker: Option<broker::Broker>,
    messages: Stream,
    arrivals: Stream,
    think: Stream,
    service: Stream,
    incidents: Stream,
    jitter: Vec<Stream>,
    throttle_rng: Vec<Stream>,
    gates: Vec<LayerGates>,
    /// The budget shared by every layer whose budget scope is global.
    global_budget: Option<super::budget::Budget>,
    rec: Recorder,
    next_req: u64,
    last_layer: u8,
}

impl<'a> Sim<'a> {
    pub fn new(cfg: &'a ModelConfig, run_seed: u64) -> Self {
        assert!(!cfg.layers.is_empty(), "a model has at least one layer");
        let layers = cfg.layers.len();
        Sim {
            cfg,
            q: EventQueue::new(),
            calls: Slab::default(),
            jobs: Slab::default(),
            lists: Slab::default(),
            dep: Server {
                busy: 0,
                queue: VecDeque::new(),
                queued: 0,
                down: 0,
                blackhole: 0,
                brownout: 1.0,
                errors: None,
                latency_add: 0,
                warm_start: 0,
                warming: false,
                commits: Vec::new(),
            },
            broker: cfg.consumers.map(|c| broker::Broker::new(c.concurrency)),
            messages: Stream::new(run_seed, Purpose::Messages, 0),
            arrivals: Stream::new(run_seed, Purpose::Arrivals, 0),
            think: Stream::new(run_seed, Purpose::Think, 0),
            service: Stream::new(run_seed, Purpose::ServiceTimes, 0),
            incidents: Stream::new(run_seed, Purpose::Incidents, 0),
            jitter: (0..layers)
                .map(|i| Stream::new(run_seed, Purpose::Jitter, i as u64))
                .collect(),
            throttle_rng: (0..layers)
                .map(|i| Stream::new(run_seed, Purpose::Throttle, i as u64))
                .collect(),
            gates: cfg.layers.iter().map(LayerGates::new).collect(),
            global_budget: cfg
                .layers
                .iter()
                .find(|l| l.global_budget)
                .and_then(|l| l.budget)
                .map(|b| super::budget::Budget::new(b.config)),
            rec: Recorder::new(cfg.duration, cfg.bucket, layers),
            next_req: 0,
            last_layer: (layers - 1) as u8,
        }
    }

    /// Runs to the end of the simulated time (or a guard rail) and returns
    /// what was recorded.
    pub fn run(self) -> (Recorder, RunInfo) {
        static NEVER: AtomicBool = AtomicBool::new(false);
        self.run_until(&NEVER)
    }

    /// `run`, but stops early (marked `aborted: interrupted`) once `stop`
    /// is raised; polled every `STOP_POLL` events.
    pub fn run_until(mut self, stop: &AtomicBool) -> (Recorder, RunInfo) {
        let cfg = self.cfg;
        for (i, inc) in cfg.dependency.incidents.iter().enumerate() {
            self.q
                .schedule_at(inc.start, Event::IncidentStart(i as u16));
            self.q.schedule_at(inc.end, Event::IncidentEnd(i as u16));
        }
        match cfg.closed {
            // Each client starts after one think time, so they do not all
            // fire at t = 0.
            Some(closed) => {
                for client in 0..closed.clients {
                    let think = closed.think.sample(&mut self.think);
                    if think < cfg.duration {
                        self.q.schedule_at(think, Event::ClientReady(client));
                    }
                }
            }
            None => self.schedule_next_arrival(),
        }
        if self.gates.iter().any(LayerGates::any) && cfg.bucket < cfg.duration {
            self.q.schedule_at(cfg.bucket, Event::Tick);
        }
        let mut aborted = None;
        while let Some(ev) = self.q.pop_before(cfg.duration) {
            self.handle(ev);
            if self.q.events() % STOP_POLL == 0 && stop.load(Ordering::Relaxed) {
                aborted = Some(INTERRUPTED.to_string());
                break;
            }
            if self.q.events() >= cfg.limits.max_events {
                aborted = Some(format!(
                    "stopped after {} events (limits.max_events); raise it in the scenario or with --max-events",
                    cfg.limits.max_events
                ));
                break;
            }
            let live = (self.calls.live() + self.jobs.live()) as u64;
            if live > cfg.limits.max_in_flight {
                aborted = Some(format!(
                    "more than {} calls and dependency requests in flight (limits.max_in_flight); raise it in the scenario or with --max-in-flight",
                    cfg.limits.max_in_flight
                ));
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
            Event::Arrival => {
                if self.broker.is_some() {
                    self.publish();
                } else {
                    self.new_request(NONE);
                }
                self.schedule_next_arrival();
            }
            Event::ClientReady(client) => self.new_request(client),
            Event::Visible { msg, epoch } => self.on_visible(msg, epoch),
            Event::RoundTimeout { call, epoch } => self.on_round_timeout(call, epoch),
            Event::Wake { call, epoch } => {
                let c = self.calls.get(call);
                if c.epoch == epoch && c.state == CallState::Sleeping {
                    if c.probe_first {
                        self.send_probe(call);
                    } else {
                        self.start_round(call);
                    }
                }
            }
            Event::Hedge { call, epoch } => self.on_hedge(call, epoch),
            Event::ServiceDone { job, epoch } => self.on_service_done(job, epoch),
            Event::Respond { job, epoch } => {
                let j = *self.jobs.get(job);
                if j.epoch == epoch && j.state == JobState::Responding {
                    self.finish_job(job);
                    self.deliver(j.caller, j.caller_epoch, j.outcome);
                }
            }
            Event::IncidentStart(i) => self.on_incident(i as usize, true),
            Event::IncidentEnd(i) => self.on_incident(i as usize, false),
            Event::Tick => self.on_tick(),
        }
    }

    // ------------------------------------------------------------ clients

    fn schedule_next_arrival(&mut self) {
        let e = self.arrivals.exp1();
        if let Some(t) = self.cfg.arrivals.next_arrival(self.q.now(), e)
            && t < self.cfg.duration
        {
            self.q.schedule_at(t, Event::Arrival);
        }
    }

    /// A logical request arrives (from `client`, or NONE for open loop).
    fn new_request(&mut self, client: u32) {
        self.new_request_for(client, NONE, false);
    }

    /// A logical request from `client` (or NONE), handling message `msg`
    /// (or NONE).
    fn new_request_for(&mut self, client: u32, msg: u32, poison: bool) {
        let now = self.q.now();
        self.rec.offered(now);
        let req = self.next_req;
        self.next_req += 1;
        if self.cfg.dependency.side_effects.writes() {
            self.dep.commits.push(0);
        }
        let deadline = self
            .cfg
            .deadline
            .map_or(u64::MAX, |d| now.saturating_add(d));
        let root = self.new_call(0, NONE, 0, deadline, NO_LAYER, req, deadline, client);
        let call = self.calls.get_mut(root);
        call.msg = msg;
        call.poison = poison;
        self.start_round(root);
    }

    /// A closed-loop client's request ended: it thinks, then sends the next.
    fn client_done(&mut self, client: u32) {
        if let Some(closed) = self.cfg.closed {
            let think = closed.think.sample(&mut self.think);
            let at = self.q.now().saturating_add(think);
            if at < self.cfg.duration {
                self.q.schedule_at(at, Event::ClientReady(client));
            }
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
        for (layer, g) in self.gates.iter_mut().enumerate() {
            if g.any() {
                let l = g.levels(now, &mut self.global_budget);
                self.rec
                    .levels(bucket, layer, [l.budget, l.throttle, l.breaker_open]);
            }
        }
    }
}
