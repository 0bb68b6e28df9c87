//! One simulation run: the world state and its event handlers.
//!
//! A logical request enters as a *call* at the outermost layer. A call
//! makes attempts; each attempt either opens a call at the next layer or,
//! at the innermost layer, sends a *job* to the dependency. Outcomes flow
//! back up the same chain. Every call carries an `epoch` that changes with
//! each attempt and each reuse of its slot, and every event or child that
//! refers to a call carries the epoch it saw: a timer or response whose
//! epoch no longer matches is stale and is dropped. That is how timers are
//! cancelled for free, and how the response of an abandoned attempt
//! (orphaned work) is told apart from a live one.

use crate::engine::{EventKind, EventQueue, Nanos, Purpose, Stream};
use crate::metrics::{Recorder, RunInfo};

use super::budget::{CallBudget, Gate};
use super::config::ModelConfig;
use super::dependency::Effect;
use super::gates::LayerGates;
use super::outcome::{Cause, Failure, Outcome};
use super::retry::{Decision, RetryState, give_up_before_budget, plan_sleep};
use super::slab::Slab;
use super::throttle::Admit;
use crate::engine::rng::splitmix64;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
enum Event {
    Arrival,
    AttemptTimeout {
        call: u32,
        epoch: u32,
    },
    BackoffDone {
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
            Event::AttemptTimeout { .. } => 1,
            Event::BackoffDone { .. } => 2,
            Event::ServiceDone { .. } => 3,
            Event::Respond { .. } => 4,
            Event::IncidentStart(_) => 5,
            Event::IncidentEnd(_) => 6,
            Event::Tick => 7,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallState {
    Attempting,
    Sleeping,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Child {
    None,
    Call(u32),
    Job(u32),
}

#[derive(Clone, Copy, Debug)]
struct Call {
    epoch: u32,
    layer: u8,
    state: CallState,
    /// The caller gave up on this call (or on one of its ancestors).
    orphaned: bool,
    /// The throttle already let the next attempt go (after a wait).
    throttle_passed: bool,
    /// Which instance of the layer serves this call.
    instance: u32,
    parent: u32,
    parent_epoch: u32,
    child: Child,
    /// No attempt or sleep of this call outlives this (`u64::MAX` = none):
    /// the user's deadline, or the caller's propagated one.
    deadline: Nanos,
    /// The end of this layer's own total timeout (`u64::MAX` = none).
    own_end: Nanos,
    /// The logical request this call serves.
    req: u64,
    retry: RetryState,
    budget: CallBudget,
    /// The last failure seen from below (what a refusal returns upward).
    last_failure: Failure,
}

/// Which instance of a layer serves a request: a fixed hash, so the same
/// request always meets the same instance and no random stream is used.
fn route(req: u64, layer: u8, instances: u32) -> u32 {
    if instances <= 1 {
        0
    } else {
        (splitmix64(req ^ ((layer as u64) << 56)) % instances as u64) as u32
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobState {
    Queued,
    InService,
    /// Waiting for its `Respond` event.
    Responding,
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    epoch: u32,
    state: JobState,
    orphaned: bool,
    caller: u32,
    caller_epoch: u32,
    arrived: Nanos,
    service: Nanos,
    outcome: Outcome,
}

struct Dependency {
    busy: u32,
    queue: std::collections::VecDeque<u32>,
    down: u32,
    blackhole: u32,
    brownout: f64,
    errors: Option<(f64, u16)>,
    latency_add: Nanos,
    warm_start: Nanos,
    warming: bool,
}

pub struct Sim<'a> {
    cfg: &'a ModelConfig,
    q: EventQueue<Event>,
    calls: Slab<Call>,
    jobs: Slab<Job>,
    dep: Dependency,
    arrivals: Stream,
    service: Stream,
    incidents: Stream,
    jitter: Vec<Stream>,
    throttle_rng: Vec<Stream>,
    gates: Vec<LayerGates>,
    rec: Recorder,
    next_req: u64,
    last_layer: u8,
}

impl<'a> Sim<'a> {
    pub fn new(cfg: &'a ModelConfig, run_seed: u64) -> Self {
        assert!(!cfg.layers.is_empty(), "a model has at least one layer");
        Sim {
            cfg,
            q: EventQueue::new(),
            calls: Slab::default(),
            jobs: Slab::default(),
            dep: Dependency {
                busy: 0,
                queue: Default::default(),
                down: 0,
                blackhole: 0,
                brownout: 1.0,
                errors: None,
                latency_add: 0,
                warm_start: 0,
                warming: false,
            },
            arrivals: Stream::new(run_seed, Purpose::Arrivals, 0),
            service: Stream::new(run_seed, Purpose::ServiceTimes, 0),
            incidents: Stream::new(run_seed, Purpose::Incidents, 0),
            jitter: (0..cfg.layers.len())
                .map(|i| Stream::new(run_seed, Purpose::Jitter, i as u64))
                .collect(),
            throttle_rng: (0..cfg.layers.len())
                .map(|i| Stream::new(run_seed, Purpose::Throttle, i as u64))
                .collect(),
            gates: cfg.layers.iter().map(LayerGates::new).collect(),
            rec: Recorder::new(cfg.duration, cfg.bucket, cfg.layers.len()),
            next_req: 0,
            last_layer: (cfg.layers.len() - 1) as u8,
        }
    }

    /// Runs to the end of the simulated time (or a guard rail) and returns
    /// what was recorded.
    pub fn run(mut self) -> (Recorder, RunInfo) {
        let cfg = self.cfg;
        for (i, inc) in cfg.dependency.incidents.iter().enumerate() {
            self.q
                .schedule_at(inc.start, Event::IncidentStart(i as u16));
            self.q.schedule_at(inc.end, Event::IncidentEnd(i as u16));
        }
        self.schedule_next_arrival();
        if self.gates.iter().any(LayerGates::any) && cfg.bucket < cfg.duration {
            self.q.schedule_at(cfg.bucket, Event::Tick);
        }
        let mut aborted = None;
        while let Some(ev) = self.q.pop_before(cfg.duration) {
            self.handle(ev);
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
        self.rec.finish(end);
        let info = RunInfo {
            events: self.q.events(),
            digest: self.q.digest(),
            aborted,
            end,
        };
        (self.rec, info)
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Arrival => self.on_arrival(),
            Event::AttemptTimeout { call, epoch } => self.on_attempt_timeout(call, epoch),
            Event::BackoffDone { call, epoch } => {
                let c = self.calls.get(call);
                if c.epoch == epoch && c.state == CallState::Sleeping {
                    self.start_attempt(call);
                }
            }
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

    fn on_arrival(&mut self) {
        let now = self.q.now();
        self.rec.offered(now);
        let deadline = self
            .cfg
            .deadline
            .map_or(u64::MAX, |d| now.saturating_add(d));
        let req = self.next_req;
        self.next_req += 1;
        let root = self.new_call(0, NONE, 0, deadline, false, req);
        self.start_attempt(root);
        self.schedule_next_arrival();
    }

    // -------------------------------------------------------------- calls

    fn new_call(
        &mut self,
        layer: u8,
        parent: u32,
        parent_epoch: u32,
        deadline: Nanos,
        orphaned: bool,
        req: u64,
    ) -> u32 {
        let now = self.q.now();
        let lc = &self.cfg.layers[layer as usize];
        let instance = route(req, layer, lc.instances);
        let own_end = lc.total_timeout.map_or(u64::MAX, |t| now.saturating_add(t));
        let budget = self.gates[layer as usize].call_started(instance, now);
        self.calls.insert(|old| Call {
            epoch: old.map_or(0, |o| o.epoch.wrapping_add(1)),
            layer,
            state: CallState::Attempting,
            orphaned,
            throttle_passed: false,
            instance,
            parent,
            parent_epoch,
            child: Child::None,
            deadline,
            own_end,
            req,
            retry: RetryState {
                started: now,
                ..RetryState::default()
            },
            budget,
            last_failure: Failure::new(Cause::Timeout),
        })
    }

    /// Sends the next attempt of call `id`, unless a throttle or breaker
    /// in front of the layer stops it (or makes it wait).
    fn start_attempt(&mut self, id: u32) {
        let now = self.q.now();
        let c = *self.calls.get(id);
        let layer = c.layer as usize;
        if !c.throttle_passed {
            match self.gates[layer].throttle(c.instance, now, &mut self.throttle_rng[layer]) {
                Admit::Reject => return self.reject_locally(id, Cause::Throttled),
                Admit::After(wait) if wait > 0 => {
                    if now.saturating_add(wait) >= c.deadline.min(c.own_end) {
                        let cause = self.out_of_time(&c);
                        return self.finish_call(id, Outcome::Failed(Failure::new(cause)));
                    }
                    let call = self.calls.get_mut(id);
                    call.state = CallState::Sleeping;
                    call.throttle_passed = true;
                    let epoch = call.epoch;
                    self.q
                        .schedule_in(wait, Event::BackoffDone { call: id, epoch });
                    return;
                }
                Admit::After(_) => {}
            }
        }
        if !self.gates[layer].breaker_admits(c.instance, now) {
            return self.reject_locally(id, Cause::BreakerOpen);
        }
        let c = self.calls.get_mut(id);
        c.throttle_passed = false;
        c.retry.attempts += 1;
        c.epoch = c.epoch.wrapping_add(1);
        c.state = CallState::Attempting;
        let c = *c;
        let lc = &self.cfg.layers[layer];
        self.rec.attempt(now, layer, c.retry.attempts > 1);
        // The attempt ends at its timeout, the call's own total timeout or
        // the deadline, whichever comes first.
        let attempt_end = lc
            .timeout
            .map_or(u64::MAX, |t| now.saturating_add(t))
            .min(c.deadline)
            .min(c.own_end);
        if attempt_end != u64::MAX {
            self.q.schedule_at(
                attempt_end,
                Event::AttemptTimeout {
                    call: id,
                    epoch: c.epoch,
                },
            );
        }
        let child = if c.layer < self.last_layer {
            let child_deadline = if lc.propagate_deadline {
                attempt_end
            } else {
                u64::MAX
            };
            let child = self.new_call(c.layer + 1, id, c.epoch, child_deadline, c.orphaned, c.req);
            self.calls.get_mut(id).child = Child::Call(child);
            self.start_attempt(child);
            Child::Call(child)
        } else {
            match self.arrive_at_dependency(id, c.epoch, c.orphaned) {
                Some(job) => Child::Job(job),
                None => Child::None,
            }
        };
        // The child may already have failed locally and been delivered.
        let call = self.calls.get_mut(id);
        if call.epoch == c.epoch && call.state == CallState::Attempting {
            call.child = child;
        }
    }

    /// A throttle or breaker refused the attempt: the call fails at once.
    fn reject_locally(&mut self, id: u32, cause: Cause) {
        let now = self.q.now();
        let layer = self.calls.get(id).layer as usize;
        self.rec.gate(now, layer, cause.reason());
        self.finish_call(id, Outcome::Failed(Failure::new(cause)));
    }

    /// Why a call that ran out of time failed: the deadline (the user's or
    /// a propagated one), or its own total timeout.
    fn out_of_time(&self, c: &Call) -> Cause {
        if c.own_end < c.deadline {
            Cause::Timeout
        } else {
            Cause::Deadline
        }
    }

    fn on_attempt_timeout(&mut self, id: u32, epoch: u32) {
        let c = *self.calls.get(id);
        if c.epoch != epoch || c.state != CallState::Attempting {
            return;
        }
        let now = self.q.now();
        let cause = if now >= c.deadline.min(c.own_end) {
            self.out_of_time(&c)
        } else {
            Cause::Timeout
        };
        self.abandon(c.child);
        self.calls.get_mut(id).child = Child::None;
        self.attempt_failed(id, Failure::new(cause));
    }

    /// The caller stopped waiting for `child`: it and everything below it
    /// become orphaned work, still running and still using capacity.
    fn abandon(&mut self, mut child: Child) {
        loop {
            match child {
                Child::None => return,
                Child::Job(j) => {
                    self.jobs.get_mut(j).orphaned = true;
                    return;
                }
                Child::Call(c) => {
                    let call = self.calls.get_mut(c);
                    call.orphaned = true;
                    child = call.child;
                }
            }
        }
    }

    /// Reports an attempt's end to the layer's gates.
    fn attempt_ended(&mut self, id: u32, failure: Option<Cause>) {
        let now = self.q.now();
        let c = self.calls.get_mut(id);
        let layer = c.layer as usize;
        let qualified = failure.is_some_and(|f| self.cfg.layers[layer].retry.retry_on.retries(f));
        let gates = &mut self.gates[layer];
        gates.attempt_ended(c.instance, now, &mut c.budget, failure, qualified);
    }

    /// The current attempt of call `id` failed: retry or give up. The
    /// order is the AWS SDKs' (presets.md §1.1): classification and the
    /// attempt cap first, then the breaker and the budget, then the sleep.
    fn attempt_failed(&mut self, id: u32, failure: Failure) {
        let now = self.q.now();
        self.attempt_ended(id, Some(failure.cause));
        self.calls.get_mut(id).last_failure = failure;
        let c = *self.calls.get(id);
        let layer = c.layer as usize;
        let policy = &self.cfg.layers[layer].retry;
        if let Some(cause) = give_up_before_budget(policy, failure, c.retry.attempts) {
            return self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }));
        }
        if !self.gates[layer].breaker_allows_retry(c.instance, now) {
            return self.reject_locally(id, Cause::BreakerOpen);
        }
        let call = self.calls.get_mut(id);
        let gate = self.gates[layer].try_retry(
            call.instance,
            now,
            &mut call.budget,
            failure.cause,
            call.retry.attempts - 1,
        );
        let min_sleep = match gate {
            Gate::Allow { min_sleep } => min_sleep,
            Gate::Deny => return self.reject_locally(id, Cause::BudgetExhausted),
        };
        let call = self.calls.get_mut(id);
        let limit = call.deadline.min(call.own_end);
        let decision = plan_sleep(
            policy,
            failure,
            &mut call.retry,
            now,
            limit,
            min_sleep,
            &mut self.jitter[layer],
        );
        match decision {
            Decision::RetryAfter(sleep) => {
                self.rec.retry_sleep(sleep);
                if sleep == 0 {
                    self.start_attempt(id);
                } else {
                    let call = self.calls.get_mut(id);
                    call.state = CallState::Sleeping;
                    let epoch = call.epoch;
                    self.q
                        .schedule_in(sleep, Event::BackoffDone { call: id, epoch });
                }
            }
            Decision::GiveUp(Cause::Deadline) => {
                let cause = self.out_of_time(&c);
                self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }))
            }
            Decision::GiveUp(cause) => {
                self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }))
            }
        }
    }

    fn finish_call(&mut self, id: u32, outcome: Outcome) {
        let now = self.q.now();
        let call = self.calls.get_mut(id);
        call.state = CallState::Done;
        call.epoch = call.epoch.wrapping_add(1);
        let layer = call.layer as usize;
        self.gates[layer].call_ended(
            call.instance,
            now,
            &mut call.budget,
            outcome == Outcome::Success,
        );
        let c = *self.calls.get(id);
        self.calls.remove(id);
        if c.parent == NONE {
            let failure = match outcome {
                Outcome::Success => None,
                Outcome::Failed(f) => Some(f.cause.reason()),
            };
            self.rec.request_done(now, now - c.retry.started, failure);
        } else {
            // The caller sees what a real hop would answer: a budget or
            // Retry-After refusal returns the last error; a local gate
            // (breaker, throttle) looks like 503 Service Unavailable.
            let outcome = match outcome {
                Outcome::Failed(f) => Outcome::Failed(match f.cause {
                    Cause::BudgetExhausted | Cause::RetryAfterExceedsBudget => c.last_failure,
                    Cause::BreakerOpen | Cause::Throttled => Failure::new(Cause::Status(503)),
                    _ => f,
                }),
                ok => ok,
            };
            self.deliver(c.parent, c.parent_epoch, outcome);
        }
    }

    /// An outcome arrives for the attempt `epoch` of call `id`; dropped
    /// when that attempt is no longer current (the caller moved on).
    fn deliver(&mut self, id: u32, epoch: u32, outcome: Outcome) {
        let c = self.calls.get_mut(id);
        if c.epoch != epoch || c.state != CallState::Attempting {
            return;
        }
        c.child = Child::None;
        match outcome {
            Outcome::Success => {
                self.attempt_ended(id, None);
                self.finish_call(id, Outcome::Success)
            }
            Outcome::Failed(f) => self.attempt_failed(id, f),
        }
    }

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
                let l = g.levels(now);
                self.rec
                    .levels(bucket, layer, [l.budget, l.throttle, l.breaker_open]);
            }
        }
    }

    // --------------------------------------------------------- dependency

    /// A request from call `caller` reaches the dependency. Responses are
    /// never delivered from here (always through an event), so a failing
    /// dependency cannot recurse into the caller's retry loop.
    fn arrive_at_dependency(
        &mut self,
        caller: u32,
        caller_epoch: u32,
        orphaned: bool,
    ) -> Option<u32> {
        let now = self.q.now();
        self.rec.dependency_attempt(now);
        if self.dep.down > 0 {
            return Some(self.respond_now(
                caller,
                caller_epoch,
                orphaned,
                Failure::new(Cause::Connection),
            ));
        }
        if self.dep.blackhole > 0 {
            self.rec.blackholed(now);
            return None;
        }
        if let Some((rate, status)) = self.dep.errors
            && self.incidents.chance(rate)
        {
            return Some(self.respond_now(
                caller,
                caller_epoch,
                orphaned,
                Failure::new(Cause::Status(status)),
            ));
        }
        let d = &self.cfg.dependency;
        if self.dep.busy < d.concurrency {
            let job = self.new_job(caller, caller_epoch, orphaned, JobState::InService);
            self.start_service(job);
            Some(job)
        } else if (self.dep.queue.len() as u64) < d.queue_capacity as u64 {
            let job = self.new_job(caller, caller_epoch, orphaned, JobState::Queued);
            self.dep.queue.push_back(job);
            self.sync_gauges();
            Some(job)
        } else {
            self.rec.shed(now);
            Some(self.respond_now(
                caller,
                caller_epoch,
                orphaned,
                Failure {
                    cause: Cause::Status(d.shed_status),
                    retry_after: d.shed_retry_after,
                },
            ))
        }
    }

    fn new_job(&mut self, caller: u32, caller_epoch: u32, orphaned: bool, state: JobState) -> u32 {
        let now = self.q.now();
        self.jobs.insert(|old| Job {
            epoch: old.map_or(0, |o| o.epoch.wrapping_add(1)),
            state,
            orphaned,
            caller,
            caller_epoch,
            arrived: now,
            service: 0,
            outcome: Outcome::Success,
        })
    }

    fn respond_now(&mut self, caller: u32, caller_epoch: u32, orphaned: bool, f: Failure) -> u32 {
        let job = self.new_job(caller, caller_epoch, orphaned, JobState::Responding);
        self.respond(job, Outcome::Failed(f), 0);
        job
    }

    /// Schedules the response of `job` after `delay`.
    fn respond(&mut self, job: u32, outcome: Outcome, delay: Nanos) {
        let j = self.jobs.get_mut(job);
        j.state = JobState::Responding;
        j.outcome = outcome;
        let epoch = j.epoch;
        self.q.schedule_in(delay, Event::Respond { job, epoch });
    }

    fn finish_job(&mut self, job: u32) {
        let j = self.jobs.get_mut(job);
        j.state = JobState::Done;
        j.epoch = j.epoch.wrapping_add(1);
        self.jobs.remove(job);
    }

    /// Fraction of nominal capacity available now (brownout × warm-up).
    fn capacity_factor(&self, now: Nanos) -> f64 {
        let d = &self.cfg.dependency;
        let mut f = self.dep.brownout;
        if self.dep.warming && d.warmup > 0 {
            let since = now.saturating_sub(self.dep.warm_start);
            if since < d.warmup {
                f *= d.warmup_from + (1.0 - d.warmup_from) * since as f64 / d.warmup as f64;
            }
        }
        f
    }

    fn start_service(&mut self, job: u32) {
        let now = self.q.now();
        let factor = self.capacity_factor(now);
        let base = self.cfg.dependency.service.sample(&mut self.service);
        let service = if factor >= 1.0 {
            base
        } else {
            crate::engine::time::from_f64_ns(base as f64 / factor).max(1)
        };
        let j = self.jobs.get_mut(job);
        j.state = JobState::InService;
        j.service = service;
        let (epoch, arrived) = (j.epoch, j.arrived);
        self.rec.queue_wait(now - arrived);
        self.dep.busy += 1;
        self.sync_gauges();
        self.q
            .schedule_in(service, Event::ServiceDone { job, epoch });
    }

    fn sync_gauges(&mut self) {
        let now = self.q.now();
        let queued = self.dep.queue.len() as u64;
        let busy = self.dep.busy as u64;
        self.rec.queue.set(now, queued);
        self.rec.busy.set(now, busy);
    }

    fn on_service_done(&mut self, job: u32, epoch: u32) {
        let j = *self.jobs.get(job);
        if j.epoch != epoch || j.state != JobState::InService {
            return;
        }
        let now = self.q.now();
        self.dep.busy -= 1;
        self.rec.service_done(now, j.service, j.orphaned);
        // Take the next request before answering this one, so the answer
        // cannot let a new arrival jump the queue.
        self.start_next_queued();
        self.sync_gauges();
        let add = self.dep.latency_add;
        if add > 0 {
            self.respond(job, Outcome::Success, add);
        } else {
            self.finish_job(job);
            self.deliver(j.caller, j.caller_epoch, Outcome::Success);
        }
    }

    fn start_next_queued(&mut self) {
        let d = &self.cfg.dependency;
        while self.dep.busy < d.concurrency {
            let next = if d.lifo {
                self.dep.queue.pop_back()
            } else {
                self.dep.queue.pop_front()
            };
            let Some(job) = next else { return };
            let now = self.q.now();
            let waited = now - self.jobs.get(job).arrived;
            if d.queue_timeout.is_some_and(|qt| waited > qt) {
                self.rec.queue_timeout(now);
                let status = d.queue_timeout_status;
                self.respond(job, Outcome::Failed(Failure::new(Cause::Status(status))), 0);
                continue;
            }
            self.start_service(job);
        }
    }

    // ---------------------------------------------------------- incidents

    fn on_incident(&mut self, i: usize, starts: bool) {
        let inc = self.cfg.dependency.incidents[i];
        let now = self.q.now();
        match inc.effect {
            Effect::Down if starts => {
                self.dep.down += 1;
                self.reset_all_work();
            }
            Effect::Down => self.dep.down -= 1,
            Effect::Blackhole if starts => self.dep.blackhole += 1,
            Effect::Blackhole => self.dep.blackhole -= 1,
            Effect::Brownout { capacity } if starts => self.dep.brownout *= capacity,
            Effect::Brownout { capacity } => self.dep.brownout /= capacity,
            Effect::Errors { rate, status } if starts => self.dep.errors = Some((rate, status)),
            Effect::Errors { .. } => self.dep.errors = None,
            Effect::Latency { add } if starts => self.dep.latency_add += add,
            Effect::Latency { add } => self.dep.latency_add -= add,
        }
        if !starts && inc.effect.needs_warmup() {
            self.dep.warming = true;
            self.dep.warm_start = now;
        }
        if !starts && matches!(inc.effect, Effect::Brownout { .. }) && self.dep.brownout > 0.999_999
        {
            self.dep.brownout = 1.0;
        }
    }

    /// The dependency crashed: everything queued or in service fails with a
    /// connection reset.
    fn reset_all_work(&mut self) {
        let queued: Vec<u32> = self.dep.queue.drain(..).collect();
        for job in queued {
            self.respond(job, Outcome::Failed(Failure::new(Cause::Connection)), 0);
        }
        let ids: Vec<u32> = self.jobs.iter_ids().collect();
        for job in ids {
            if self.jobs.get(job).state == JobState::InService {
                self.dep.busy -= 1;
                let j = self.jobs.get_mut(job);
                j.epoch = j.epoch.wrapping_add(1); // its ServiceDone is now stale
                self.respond(job, Outcome::Failed(Failure::new(Cause::Connection)), 0);
            }
        }
        self.sync_gauges();
    }
}
