//! Call edges: a call's rounds of attempts, the gates in front of them
//! (throttle, breaker, bulkhead, budget), retries and their sleeps,
//! fan-out and quorums, hedging, status probes, and what happens to the
//! work below when a caller gives up (orphaned or cancelled).

use crate::engine::Nanos;
use crate::engine::rng::splitmix64;

use super::super::budget::Gate;
use super::super::bulkhead::Acquire;
use super::super::config::CallPolicy;
use super::super::outcome::{Cause, Failure, Outcome};
use super::super::retry::{Decision, RetryState, give_up_before_budget, plan_sleep};
use super::super::throttle::Admit;
use super::super::topology::EdgeId;
use super::{Call, CallId, CallState, Child, Children, Event, NEVER, Parent, World};

/// Which instance of a caller makes a request: a fixed hash, so the same
/// request always meets the same instance and no random stream is used.
fn route(req: u64, edge: EdgeId, instances: u32) -> u32 {
    if instances <= 1 {
        0
    } else {
        (splitmix64(req ^ ((edge.0 as u64) << 56)) % instances as u64) as u32
    }
}

/// Successes a round needs: the quorum with fan-out, else one.
fn needed(p: &CallPolicy) -> u32 {
    if p.hedging.is_some() || p.fan_out <= 1 {
        1
    } else {
        p.quorum
    }
}

/// Why a call that ran out of time failed: the deadline (the user's or a
/// propagated one), or its own total timeout.
fn out_of_time(c: &Call) -> Cause {
    if c.own_end < c.deadline {
        Cause::Timeout
    } else {
        Cause::Deadline
    }
}

/// What a call's caller needs to open it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Opening {
    pub edge: EdgeId,
    pub parent: Parent,
    /// A propagated deadline (`NEVER`: none).
    pub deadline: Nanos,
    pub orphaned_by: Option<EdgeId>,
    pub req: u64,
    pub class: u8,
    pub req_deadline: Nanos,
    pub poison: bool,
}

impl World<'_> {
    #[inline]
    fn call(&self, id: CallId) -> &Call {
        self.calls.get(id.0)
    }

    #[inline]
    fn call_mut(&mut self, id: CallId) -> &mut Call {
        self.calls.get_mut(id.0)
    }

    #[inline]
    fn policy(&self, edge: EdgeId) -> &CallPolicy {
        &self.topo.edge(edge).policy
    }

    /// Opens a call (its first round is started by the caller, once it
    /// has registered the call as its child).
    pub(super) fn new_call(&mut self, o: Opening) -> CallId {
        let now = self.q.now();
        let p = &self.topo.edge(o.edge).policy;
        // A closed-loop client's state (budgets, breakers) is its own
        // instance of the entry edge; a replicated caller's, its replica's
        // when the call has one instance per replica; other calls are
        // spread by hash.
        let instance = match o.parent {
            Parent::Root {
                client: Some(client),
                ..
            } => client.0 % p.instances.max(1),
            Parent::Job { job, .. } => {
                let (_, k) = self.topo.replica_of(self.jobs.get(job.0).replica);
                let caller = self.topo.edge(o.edge).caller;
                let replicas = caller.map_or(1, |c| self.topo.replica_count(c));
                if replicas > 1 && p.instances == replicas {
                    k
                } else {
                    route(o.req, o.edge, p.instances)
                }
            }
            _ => route(o.req, o.edge, p.instances),
        };
        let own_end = p.total_timeout.map_or(NEVER, |t| now.saturating_add(t));
        let budget =
            self.gates[o.edge.index()].call_started(instance, now, &mut self.global_budget);
        self.rec.call(o.edge.index());
        CallId(self.calls.insert(|old| Call {
            epoch: old.map_or(0, |prev| prev.epoch.wrapping_add(1)),
            timeout: None,
            timer: None,
            edge: o.edge,
            state: CallState::Sleeping,
            orphaned_by: o.orphaned_by,
            throttle_passed: false,
            probe_first: false,
            instance,
            parent: o.parent,
            children: Children::None,
            launched: 0,
            queued: 0,
            ok: 0,
            failed: 0,
            slots: 0,
            deadline: o.deadline,
            own_end,
            req_deadline: o.req_deadline,
            tried: 0,
            req: o.req,
            class: o.class,
            poison: o.poison,
            retry: RetryState {
                started: now,
                ..RetryState::default()
            },
            budget,
            last_failure: Failure::new(Cause::Timeout),
            conn: None,
            pool_wait: false,
        }))
    }

    /// Cancels the pending timers of call `id`: its round ended, or its
    /// epoch is about to move on.
    fn cancel_timers(&mut self, id: CallId) {
        let c = self.calls.get_mut(id.0);
        if let Some(t) = c.timeout.take() {
            self.q.cancel(t);
        }
        if let Some(t) = c.timer.take() {
            self.q.cancel(t);
        }
    }

    // ------------------------------------------------------------- rounds

    /// Opens the next round of call `id`, unless the throttle or breaker in
    /// front of the edge stops it (or makes it wait).
    pub(super) fn start_round(&mut self, id: CallId) {
        self.cancel_timers(id);
        let now = self.q.now();
        let c = *self.call(id);
        let e = c.edge.index();
        if !c.throttle_passed {
            match self.gates[e].throttle(c.instance, now, &mut self.throttle_rng[e]) {
                Admit::Reject => return self.reject_locally(id, Cause::Throttled),
                Admit::After(wait) if wait > 0 => {
                    if now.saturating_add(wait) >= c.deadline.min(c.own_end) {
                        let cause = out_of_time(&c);
                        return self.finish_call(id, Outcome::Failed(Failure::new(cause)));
                    }
                    let call = self.call_mut(id);
                    call.state = CallState::Sleeping;
                    call.throttle_passed = true;
                    let epoch = call.epoch;
                    let t = self.q.schedule_in(wait, Event::Wake { call: id, epoch });
                    self.call_mut(id).timer = Some(t);
                    return;
                }
                Admit::After(_) => {}
            }
        }
        if !self.gates[e].breaker_admits(c.instance, now) {
            return self.reject_locally(id, Cause::BreakerOpen);
        }
        let call = self.calls.get_mut(id.0);
        call.throttle_passed = false;
        call.retry.attempts += 1;
        call.epoch = call.epoch.wrapping_add(1);
        call.state = CallState::Round;
        call.children = Children::None;
        (call.launched, call.queued, call.ok, call.failed, call.slots) = (0, 0, 0, 0, 0);
        let epoch = call.epoch;
        let end = self.round_end(id);
        if end != NEVER {
            let t = self
                .q
                .schedule_at(end, Event::RoundTimeout { call: id, epoch });
            self.call_mut(id).timeout = Some(t);
        }
        let p = self.policy(c.edge);
        match p.hedging {
            Some(h) => {
                self.launch(id, epoch);
                if h.max_attempts > 1 {
                    let t = self
                        .q
                        .schedule_in(h.delay, Event::Hedge { call: id, epoch });
                    if self.round_is(id, epoch) {
                        self.call_mut(id).timer = Some(t);
                    } else {
                        // The first request already ended the round.
                        self.q.cancel(t);
                    }
                }
            }
            None => {
                for _ in 0..p.fan_out {
                    // A fan-out below a fan-out multiplies within this one
                    // event: stop at the guard rail, which ends the run
                    // after the event (`World::run_until`), rather than
                    // expand a tree that does not fit in memory.
                    if !self.round_is(id, epoch) || self.over_in_flight_limit() {
                        break;
                    }
                    self.launch(id, epoch);
                }
            }
        }
    }

    /// When the current round must end: the per-attempt timeout, the
    /// call's own total timeout or its deadline, whichever comes first.
    fn round_end(&self, id: CallId) -> Nanos {
        let c = self.call(id);
        let now = self.q.now();
        self.policy(c.edge)
            .timeout
            .map_or(NEVER, |t| now.saturating_add(t))
            .min(c.deadline)
            .min(c.own_end)
    }

    /// More calls and requests alive than `limits.max_in_flight` allows.
    pub(super) fn over_in_flight_limit(&self) -> bool {
        (self.calls.live() + self.jobs.live()) as u64 > self.cfg.limits.max_in_flight
    }

    fn round_is(&self, id: CallId, epoch: u32) -> bool {
        let c = self.call(id);
        c.epoch == epoch && c.state == CallState::Round
    }

    /// Sends one request of the current round, through the bulkhead.
    fn launch(&mut self, id: CallId, epoch: u32) {
        let c = *self.call(id);
        let e = c.edge.index();
        match self.gates[e].bulkhead_acquire(c.instance, (id.0, epoch)) {
            Acquire::Now => {
                self.call_mut(id).slots += 1;
                self.send(id);
            }
            Acquire::Queued => self.call_mut(id).queued += 1,
            Acquire::Refused => {
                self.rec.gate(self.q.now(), e, Cause::BulkheadFull.reason());
                self.branch_failed(id, Failure::new(Cause::BulkheadFull));
            }
        }
    }

    /// The request goes out to the edge's callee: through a forwarding
    /// service it becomes a call of the next edge at once; anywhere else a
    /// job.
    pub(super) fn send(&mut self, id: CallId) {
        if self.pools[self.call(id).edge.index()].is_some()
            && self.call(id).conn.is_none()
            && !self.pool_acquire(id)
        {
            return; // it waits for a connection
        }
        let now = self.q.now();
        let call = self.call_mut(id);
        call.launched += 1;
        let c = *call;
        let e = c.edge.index();
        let edge = self.topo.edge(c.edge);
        let is_retry = c.retry.attempts > 1 || c.launched > 1 && edge.policy.hedging.is_some();
        self.rec.attempt(now, e, is_retry);
        if c.orphaned_by.is_some() {
            self.rec.orphaned_attempt(now, e);
        }
        if now >= c.req_deadline {
            self.rec.late_attempt();
        }
        let parent = Parent::Call {
            call: id,
            epoch: c.epoch,
        };
        match self.topo.pass_through(edge.callee) {
            Some(next) => {
                self.rec.service_arrival(now, edge.callee.index());
                let deadline = if edge.policy.propagate_deadline {
                    self.round_end(id)
                } else {
                    NEVER
                };
                let child = self.new_call(super::edge::Opening {
                    edge: next,
                    parent,
                    deadline,
                    orphaned_by: c.orphaned_by,
                    req: c.req,
                    class: c.class,
                    req_deadline: c.req_deadline,
                    poison: c.poison,
                });
                // Registered before it starts: it may answer at once.
                self.add_call_child(id, Child::Call(child));
                self.start_round(child);
            }
            None => {
                let callee = edge.callee;
                if let Some(job) = self.arrive(callee, id, false) {
                    self.add_call_child(id, Child::Job(job));
                }
            }
        }
    }

    fn add_call_child(&mut self, id: CallId, child: Child) {
        let c = self.calls.get_mut(id.0);
        World::add_child(&mut c.children, &mut self.lists, child);
    }

    /// Sends the next hedge when its delay is over.
    pub(super) fn on_hedge(&mut self, id: CallId, epoch: u32) {
        if !self.round_is(id, epoch) {
            return;
        }
        let c = *self.call(id);
        let Some(h) = self.policy(c.edge).hedging else {
            return;
        };
        if (c.launched + c.queued) as u32 >= h.max_attempts {
            return;
        }
        if self.hedge_allowed(id) {
            self.launch(id, epoch);
        }
        let c = self.call(id);
        if self.round_is(id, epoch) && ((c.launched + c.queued) as u32) < h.max_attempts {
            let t = self
                .q
                .schedule_in(h.delay, Event::Hedge { call: id, epoch });
            self.call_mut(id).timer = Some(t);
        }
    }

    /// gRFC A6: hedges after the first are sent only while the retry
    /// throttle allows it.
    fn hedge_allowed(&mut self, id: CallId) -> bool {
        let now = self.q.now();
        let call = self.calls.get_mut(id.0);
        let (e, instance, retries) = (call.edge.index(), call.instance, call.launched as u32);
        let cause = call.last_failure.cause;
        let global = &mut self.global_budget;
        match self.gates[e].try_retry(instance, now, &mut call.budget, cause, retries, global) {
            Gate::Allow { .. } => true,
            Gate::Deny => {
                self.rec.gate(now, e, Cause::BudgetExhausted.reason());
                false
            }
        }
    }

    /// A backoff sleep (or a throttle's wait) is over.
    pub(super) fn on_wake(&mut self, id: CallId, epoch: u32) {
        let c = self.call(id);
        if c.epoch == epoch && c.state == CallState::Sleeping {
            if c.probe_first {
                self.send_probe(id);
            } else {
                self.start_round(id);
            }
        }
    }

    /// An answer arrives for round `epoch` of call `id`; dropped when that
    /// round is over (the caller moved on: the answer was orphaned work).
    pub(super) fn deliver(&mut self, id: CallId, epoch: u32, outcome: Outcome) {
        let c = *self.call(id);
        if c.epoch != epoch {
            return;
        }
        match c.state {
            CallState::Round => {}
            CallState::Probing => return self.on_probe_answer(id, outcome),
            _ => return,
        }
        self.release_conn(id);
        self.release_slot(id);
        match outcome {
            Outcome::Success => {
                let need = needed(self.policy(c.edge));
                let call = self.call_mut(id);
                call.ok += 1;
                if call.ok as u32 >= need {
                    self.close_round(id);
                    self.attempt_ended(id, None);
                    self.finish_call(id, Outcome::Success);
                }
            }
            Outcome::Failed(f) => self.branch_failed(id, f),
        }
    }

    /// One request of the round failed (or could not be sent).
    pub(super) fn branch_failed(&mut self, id: CallId, f: Failure) {
        let call = self.call_mut(id);
        call.failed += 1;
        call.last_failure = f;
        let c = *call;
        let p = self.policy(c.edge);
        if let Some(h) = p.hedging {
            if !h.non_fatal.retries(f.cause) {
                // A fatal status cancels everything (gRFC A6).
                self.close_round(id);
                self.attempt_ended(id, Some(f.cause));
                return self.finish_call(id, Outcome::Failed(f));
            }
            let epoch = c.epoch;
            if ((c.launched + c.queued) as u32) < h.max_attempts && self.hedge_allowed(id) {
                // A non-fatal failure sends the next hedge at once.
                return self.launch(id, epoch);
            }
            let c = self.call(id);
            if c.failed >= c.launched + c.queued {
                self.close_round(id);
                self.attempt_ended(id, Some(f.cause));
                self.finish_call(id, Outcome::Failed(f));
            }
            return;
        }
        let lost = if p.fan_out > 1 {
            // The round can no longer reach its quorum.
            c.failed as u32 > p.fan_out - p.quorum
        } else {
            // Every request sent has failed (with hedge-on-timeout, the
            // earlier ones may still win).
            c.failed >= c.launched + c.queued
        };
        if lost {
            self.close_round(id);
            self.attempt_failed(id, f);
        }
    }

    pub(super) fn on_round_timeout(&mut self, id: CallId, epoch: u32) {
        let c = *self.call(id);
        if c.epoch != epoch {
            return;
        }
        if c.state == CallState::Probing {
            // The probe took too long: retry as if it said "not committed".
            self.drop_lost_probe(id);
            self.call_mut(id).children = Children::None;
            return self.start_round(id);
        }
        if c.state != CallState::Round {
            return;
        }
        let now = self.q.now();
        let ran_out = now >= c.deadline.min(c.own_end);
        let cause = if ran_out {
            out_of_time(&c)
        } else {
            Cause::Timeout
        };
        let f = Failure::new(cause);
        let keeps_going = self.policy(c.edge).hedge_on_timeout && !ran_out;
        self.observe_round_timed_out(id, keeps_going);
        let p = self.policy(c.edge);
        if p.hedging.is_some() {
            self.close_round(id);
            self.attempt_ended(id, Some(cause));
            return self.finish_call(id, Outcome::Failed(f));
        }
        if p.hedge_on_timeout && !ran_out {
            // Envoy: retry without abandoning the attempt that timed out.
            self.call_mut(id).last_failure = f;
            self.attempt_ended(id, Some(cause));
            match self.retry_gate(id, f) {
                Ok(_) => {
                    self.call_mut(id).retry.attempts += 1;
                    let end = self.round_end(id);
                    if end != NEVER {
                        let t = self
                            .q
                            .schedule_at(end, Event::RoundTimeout { call: id, epoch });
                        self.call_mut(id).timeout = Some(t);
                    }
                    self.launch(id, epoch);
                }
                Err(cause) => {
                    self.close_round(id);
                    self.finish_call(id, Outcome::Failed(Failure { cause, ..f }));
                }
            }
            return;
        }
        self.close_round(id);
        self.attempt_failed(id, f);
    }

    /// The round of call `id` timed out: each replica that still had one
    /// of its requests (answering late, or lost in a blackhole) failed it,
    /// for the edge's outlier detection. With `last_only` (Envoy's hedge on
    /// per-try timeout, where earlier requests stay out and already
    /// counted), only the latest request counts.
    fn observe_round_timed_out(&mut self, id: CallId, last_only: bool) {
        let c = *self.call(id);
        if self.policy(c.edge).outlier.is_none() {
            return;
        }
        let parent = Parent::Call {
            call: id,
            epoch: c.epoch,
        };
        let n = match c.children {
            Children::None => 0,
            Children::One(_) => 1,
            Children::Many(list) => self.lists.get(list).len(),
        };
        for i in (if last_only { n.saturating_sub(1) } else { 0 })..n {
            let child = match c.children {
                Children::None => break,
                Children::One(child) => child,
                Children::Many(list) => self.lists.get(list)[i],
            };
            if let Child::Job(j) = child
                && self.works_for(child, parent)
            {
                let job = *self.job(j);
                self.observe_timed_out(&job);
            }
        }
    }

    /// Call `id` stops waiting for its status probe: the probe's replica
    /// no longer counts it in flight, and a probe a blackhole swallowed is
    /// gone (one still running answers into a later epoch and is dropped
    /// then).
    fn drop_lost_probe(&mut self, id: CallId) {
        let c = *self.call(id);
        if c.state != CallState::Probing {
            return;
        }
        let parent = Parent::Call {
            call: id,
            epoch: c.epoch,
        };
        if let Children::One(child @ Child::Job(j)) = c.children
            && self.works_for(child, parent)
        {
            self.unawait(j);
            if self.job(j).vanished() {
                self.finish_job(j);
            }
        }
    }

    /// Ends the current round: bulkhead slots go back, and every request
    /// still out is abandoned (cancelled or orphaned, by the edge's
    /// `cancellation`).
    fn close_round(&mut self, id: CallId) {
        self.cancel_timers(id);
        self.release_conn(id);
        let c = *self.call(id);
        for _ in 0..c.slots {
            self.release_slot(id);
        }
        let call = self.call_mut(id);
        call.queued = 0;
        call.children = Children::None;
        let parent = Parent::Call {
            call: id,
            epoch: c.epoch,
        };
        let cancel = self.policy(c.edge).cancel_propagates;
        self.abandon_all(c.children, parent, c.edge, cancel);
    }

    /// Gives one bulkhead slot of call `id` back; a waiting request (of
    /// this or another call) may take it over and go.
    fn release_slot(&mut self, id: CallId) {
        let c = *self.call(id);
        let e = c.edge.index();
        if !self.gates[e].has_bulkhead() || c.slots == 0 {
            return;
        }
        self.call_mut(id).slots -= 1;
        let calls = &self.calls;
        let next = self.gates[e].bulkhead_release(c.instance, |(w, ep)| {
            let wc = calls.get(w);
            wc.epoch == ep && wc.state == CallState::Round && wc.queued > 0
        });
        if let Some((w, _)) = next {
            let w = CallId(w);
            let wc = self.call_mut(w);
            wc.queued -= 1;
            wc.slots += 1;
            self.send(w);
        }
    }

    /// `parent` stops waiting for `child`, on behalf of `edge`: with
    /// `cancel` (`cancellation: propagate`) the work is cancelled;
    /// otherwise it runs on as orphaned work.
    pub(super) fn abandon(&mut self, parent: Parent, child: Child, edge: EdgeId, cancel: bool) {
        // Skip children that already answered (their slot may be reused).
        if !self.works_for(child, parent) {
            return;
        }
        if let Child::Job(j) = child {
            self.unawait(j);
        }
        if cancel {
            self.cancel(child, edge);
        } else {
            self.orphan(child, edge);
        }
    }

    /// Marks `child` and everything below it as orphaned by `edge`.
    pub(super) fn orphan(&mut self, child: Child, edge: EdgeId) {
        match child {
            Child::Job(j) => self.orphan_job(j, edge),
            Child::Call(c) => {
                let call = self.call_mut(c);
                if call.orphaned_by.is_none() {
                    call.orphaned_by = Some(edge);
                }
                let parent = Parent::Call {
                    call: c,
                    epoch: call.epoch,
                };
                let children = call.children;
                for grandchild in self.children_of(children) {
                    if self.works_for(grandchild, parent) {
                        self.orphan(grandchild, edge);
                    }
                }
            }
        }
    }

    /// The members of a children set (copied: the set may change while
    /// they are visited).
    pub(super) fn children_of(&self, children: Children) -> Vec<Child> {
        match children {
            Children::None => Vec::new(),
            Children::One(c) => vec![c],
            Children::Many(list) => self.lists.get(list).clone(),
        }
    }

    /// Cancels `child`: a call stops (and closes its own round by its own
    /// edge's rule); a job leaves the queue or, in service, stops or
    /// finishes by its service's `on_cancel`.
    pub(super) fn cancel(&mut self, child: Child, by: EdgeId) {
        let now = self.q.now();
        match child {
            Child::Job(j) => self.cancel_job(j, by),
            Child::Call(c) => {
                if self.call(c).state == CallState::Round {
                    self.close_round(c);
                }
                self.drop_lost_probe(c);
                self.cancel_timers(c);
                let call = self.calls.get_mut(c.0);
                call.state = CallState::Done;
                call.epoch = call.epoch.wrapping_add(1);
                let (e, instance) = (call.edge.index(), call.instance);
                self.gates[e].call_ended(
                    instance,
                    now,
                    &mut call.budget,
                    false,
                    &mut self.global_budget,
                );
                self.calls.remove(c.0);
                self.rec.cancelled(now, 0);
            }
        }
    }

    // ----------------------------------------------------- after a round

    /// Reports an attempt's end to the edge's gates.
    fn attempt_ended(&mut self, id: CallId, failure: Option<Cause>) {
        let now = self.q.now();
        let c = self.calls.get_mut(id.0);
        let e = c.edge.index();
        let qualified =
            failure.is_some_and(|f| self.topo.edge(c.edge).policy.retry.retry_on.retries(f));
        let global = &mut self.global_budget;
        self.gates[e].attempt_ended(c.instance, now, &mut c.budget, failure, qualified, global);
    }

    /// A round was lost: retry or give up.
    fn attempt_failed(&mut self, id: CallId, failure: Failure) {
        self.attempt_ended(id, Some(failure.cause));
        self.call_mut(id).last_failure = failure;
        self.after_failure(id, failure);
    }

    /// Asks the callee whether the write of call `id` committed, before
    /// re-sending it (the retry's sleep is already over).
    fn send_probe(&mut self, id: CallId) {
        self.cancel_timers(id);
        let now = self.q.now();
        let call = self.call_mut(id);
        call.probe_first = false;
        call.epoch = call.epoch.wrapping_add(1);
        call.state = CallState::Probing;
        let c = *call;
        self.rec.probe(now);
        let end = self.round_end(id);
        if end != NEVER {
            let t = self.q.schedule_at(
                end,
                Event::RoundTimeout {
                    call: id,
                    epoch: c.epoch,
                },
            );
            self.call_mut(id).timeout = Some(t);
        }
        let callee = self.topo.edge(c.edge).callee;
        if let Some(job) = self.arrive(callee, id, true) {
            self.call_mut(id).children = Children::One(Child::Job(job));
        }
    }

    /// A probe answered: success means the write committed, so the call
    /// succeeded after all; anything else means send the retry.
    fn on_probe_answer(&mut self, id: CallId, outcome: Outcome) {
        self.call_mut(id).children = Children::None;
        match outcome {
            Outcome::Success => self.finish_call(id, Outcome::Success),
            Outcome::Failed(_) => self.start_round(id),
        }
    }

    /// The retry gates, in the AWS SDKs' order (docs/sources/presets.md
    /// §1.1): classification and the attempt cap, then the breaker and the
    /// budget. Ok carries the least sleep the budget asks for.
    fn retry_gate(&mut self, id: CallId, failure: Failure) -> Result<Nanos, Cause> {
        let now = self.q.now();
        let c = *self.call(id);
        let e = c.edge.index();
        let policy = &self.topo.edge(c.edge).policy.retry;
        if let Some(cause) = give_up_before_budget(policy, failure, c.retry.attempts) {
            return Err(cause);
        }
        if !self.gates[e].breaker_allows_retry(c.instance, now) {
            self.rec.gate(now, e, Cause::BreakerOpen.reason());
            return Err(Cause::BreakerOpen);
        }
        let call = self.calls.get_mut(id.0);
        let gate = self.gates[e].try_retry(
            call.instance,
            now,
            &mut call.budget,
            failure.cause,
            call.retry.attempts - 1,
            &mut self.global_budget,
        );
        match gate {
            Gate::Allow { min_sleep } => Ok(min_sleep),
            Gate::Deny => {
                self.rec.gate(now, e, Cause::BudgetExhausted.reason());
                Err(Cause::BudgetExhausted)
            }
        }
    }

    /// Retry or give up after a lost round.
    fn after_failure(&mut self, id: CallId, failure: Failure) {
        let min_sleep = match self.retry_gate(id, failure) {
            Ok(s) => s,
            Err(cause) => {
                return self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }));
            }
        };
        let now = self.q.now();
        let call = self.calls.get_mut(id.0);
        let edge = self.topo.edge(call.edge);
        let e = call.edge.index();
        let limit = call.deadline.min(call.own_end);
        let decision = plan_sleep(
            &edge.policy.retry,
            failure,
            &mut call.retry,
            now,
            limit,
            min_sleep,
            &mut self.jitter[e],
        );
        match decision {
            Decision::RetryAfter(sleep) => {
                self.rec.retry_sleep(sleep);
                let probe = edge.policy.status_probe
                    && failure.cause == Cause::Timeout
                    && self.topo.pass_through(edge.callee).is_none()
                    && self.topo.service(edge.callee).side_effects.writes();
                let call = self.call_mut(id);
                call.state = CallState::Sleeping;
                call.probe_first = probe;
                if sleep == 0 {
                    if probe {
                        self.send_probe(id);
                    } else {
                        self.start_round(id);
                    }
                } else {
                    let epoch = call.epoch;
                    let t = self.q.schedule_in(sleep, Event::Wake { call: id, epoch });
                    self.call_mut(id).timer = Some(t);
                }
            }
            Decision::GiveUp(Cause::Deadline) => {
                let cause = out_of_time(self.call(id));
                self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }))
            }
            Decision::GiveUp(cause) => {
                self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }))
            }
        }
    }

    /// A throttle or breaker refused the round: the call fails at once.
    fn reject_locally(&mut self, id: CallId, cause: Cause) {
        let now = self.q.now();
        let e = self.call(id).edge.index();
        self.rec.gate(now, e, cause.reason());
        self.finish_call(id, Outcome::Failed(Failure::new(cause)));
    }

    pub(super) fn finish_call(&mut self, id: CallId, outcome: Outcome) {
        let now = self.q.now();
        if self.call(id).state == CallState::Round {
            self.close_round(id);
        }
        self.cancel_timers(id);
        let call = self.calls.get_mut(id.0);
        call.state = CallState::Done;
        call.epoch = call.epoch.wrapping_add(1);
        let e = call.edge.index();
        self.gates[e].call_ended(
            call.instance,
            now,
            &mut call.budget,
            outcome == Outcome::Success,
            &mut self.global_budget,
        );
        let c = *self.call(id);
        self.calls.remove(id.0);
        self.rec.call_done(e, outcome == Outcome::Success);
        match c.parent {
            Parent::Root { client, msg } => {
                let failure = match outcome {
                    Outcome::Success => None,
                    Outcome::Failed(f) => Some(f.cause.reason()),
                };
                self.rec.request_done(now, now - c.retry.started, failure);
                let shed = matches!(outcome, Outcome::Failed(f) if f.by_priority);
                self.rec
                    .class_done(c.class, now - c.retry.started, failure.is_some(), shed);
                if let Some(client) = client {
                    self.client_done(client);
                }
                if let Some(msg) = msg {
                    self.handler_done(msg, outcome == Outcome::Success);
                }
            }
            Parent::Call { call, epoch } => self.deliver(
                call,
                epoch,
                Self::as_seen_by_caller(outcome, c.last_failure),
            ),
            Parent::Job { job, epoch } => {
                let seen = Self::as_seen_by_caller(outcome, c.last_failure);
                self.call_done_for_job(job, epoch, c.edge, seen)
            }
        }
    }

    /// What a caller sees of a call's end, as a real hop would answer: a
    /// budget or Retry-After refusal returns the last error; a local gate
    /// (breaker, throttle, bulkhead) looks like 503 Service Unavailable.
    fn as_seen_by_caller(outcome: Outcome, last: Failure) -> Outcome {
        match outcome {
            Outcome::Failed(f) => Outcome::Failed(match f.cause {
                Cause::BudgetExhausted | Cause::RetryAfterExceedsBudget => last,
                Cause::BreakerOpen
                | Cause::Throttled
                | Cause::BulkheadFull
                | Cause::PoolTimeout => Failure::new(Cause::Status(503)),
                _ => f,
            }),
            ok => ok,
        }
    }
}
