//! Calls: rounds of attempts, the gates in front of them (throttle,
//! breaker, bulkhead, budget), retries and their sleeps, fan-out and
//! quorums, hedging, status probes, and what happens to work below when a
//! caller gives up (orphaned or cancelled).

use crate::engine::Nanos;
use crate::engine::rng::splitmix64;

use super::super::budget::Gate;
use super::super::bulkhead::Acquire;
use super::super::config::LayerConfig;
use super::super::outcome::{Cause, Failure, Outcome};
use super::super::retry::{Decision, RetryState, give_up_before_budget, plan_sleep};
use super::super::throttle::Admit;
use super::{Call, CallState, Child, Children, Event, NO_LAYER, NONE, Sim};

/// Which instance of a layer serves a request: a fixed hash, so the same
/// request always meets the same instance and no random stream is used.
fn route(req: u64, layer: u8, instances: u32) -> u32 {
    if instances <= 1 {
        0
    } else {
        (splitmix64(req ^ ((layer as u64) << 56)) % instances as u64) as u32
    }
}

impl Sim<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new_call(
        &mut self,
        layer: u8,
        parent: u32,
        parent_epoch: u32,
        deadline: Nanos,
        orphaned_by: u8,
        req: u64,
        req_deadline: Nanos,
        client: u32,
    ) -> u32 {
        let now = self.q.now();
        let lc = &self.cfg.layers[layer as usize];
        // A closed-loop client's state (budgets, breakers) is its own
        // instance of the outermost layer; other calls are spread by hash.
        let instance = if client != NONE {
            client % lc.instances.max(1)
        } else {
            route(req, layer, lc.instances)
        };
        let own_end = lc.total_timeout.map_or(u64::MAX, |t| now.saturating_add(t));
        let budget =
            self.gates[layer as usize].call_started(instance, now, &mut self.global_budget);
        self.rec.call(layer as usize);
        self.calls.insert(|old| Call {
            epoch: old.map_or(0, |o| o.epoch.wrapping_add(1)),
            timeout: None,
            timer: None,
            layer,
            state: CallState::Sleeping,
            orphaned_by,
            throttle_passed: false,
            probe_first: false,
            instance,
            parent,
            parent_epoch,
            children: Children::None,
            launched: 0,
            queued: 0,
            ok: 0,
            failed: 0,
            slots: 0,
            deadline,
            own_end,
            req_deadline,
            req,
            client,
            msg: NONE,
            poison: false,
            retry: RetryState {
                started: now,
                ..RetryState::default()
            },
            budget,
            last_failure: Failure::new(Cause::Timeout),
        })
    }

    /// Why a call that ran out of time failed: the deadline (the user's or
    /// a propagated one), or its own total timeout.
    fn out_of_time(c: &Call) -> Cause {
        if c.own_end < c.deadline {
            Cause::Timeout
        } else {
            Cause::Deadline
        }
    }

    /// Cancels the pending timers of call `id`: its round ended, or its
    /// epoch is about to move on.
    fn cancel_timers(&mut self, id: u32) {
        let c = self.calls.get_mut(id);
        if let Some(t) = c.timeout.take() {
            self.q.cancel(t);
        }
        if let Some(t) = c.timer.take() {
            self.q.cancel(t);
        }
    }

    // ------------------------------------------------------------- rounds

    /// Opens the next round of call `id`, unless the throttle or breaker in
    /// front of the layer stops it (or makes it wait).
    pub(super) fn start_round(&mut self, id: u32) {
        self.cancel_timers(id);
        let now = self.q.now();
        let c = *self.calls.get(id);
        let layer = c.layer as usize;
        if !c.throttle_passed {
            match self.gates[layer].throttle(c.instance, now, &mut self.throttle_rng[layer]) {
                Admit::Reject => return self.reject_locally(id, Cause::Throttled),
                Admit::After(wait) if wait > 0 => {
                    if now.saturating_add(wait) >= c.deadline.min(c.own_end) {
                        let cause = Self::out_of_time(&c);
                        return self.finish_call(id, Outcome::Failed(Failure::new(cause)));
                    }
                    let call = self.calls.get_mut(id);
                    call.state = CallState::Sleeping;
                    call.throttle_passed = true;
                    let epoch = call.epoch;
                    let t = self.q.schedule_in(wait, Event::Wake { call: id, epoch });
                    self.calls.get_mut(id).timer = Some(t);
                    return;
                }
                Admit::After(_) => {}
            }
        }
        if !self.gates[layer].breaker_admits(c.instance, now) {
            return self.reject_locally(id, Cause::BreakerOpen);
        }
        let lc = &self.cfg.layers[layer];
        let call = self.calls.get_mut(id);
        call.throttle_passed = false;
        call.retry.attempts += 1;
        call.epoch = call.epoch.wrapping_add(1);
        call.state = CallState::Round;
        call.children = Children::None;
        (call.launched, call.queued, call.ok, call.failed, call.slots) = (0, 0, 0, 0, 0);
        let epoch = call.epoch;
        let end = self.round_end(id);
        if end != u64::MAX {
            let t = self
                .q
                .schedule_at(end, Event::RoundTimeout { call: id, epoch });
            self.calls.get_mut(id).timeout = Some(t);
        }
        match lc.hedging {
            Some(h) => {
                self.launch(id, epoch);
                if h.max_attempts > 1 {
                    let t = self
                        .q
                        .schedule_in(h.delay, Event::Hedge { call: id, epoch });
                    if self.round_is(id, epoch) {
                        self.calls.get_mut(id).timer = Some(t);
                    } else {
                        // The first request already ended the round.
                        self.q.cancel(t);
                    }
                }
            }
            None => {
                for _ in 0..lc.fan_out {
                    if !self.round_is(id, epoch) {
                        break;
                    }
                    self.launch(id, epoch);
                }
            }
        }
    }

    /// When the current round must end: the per-attempt timeout, the
    /// call's own total timeout or its deadline, whichever comes first.
    fn round_end(&self, id: u32) -> Nanos {
        let c = self.calls.get(id);
        let now = self.q.now();
        self.cfg.layers[c.layer as usize]
            .timeout
            .map_or(u64::MAX, |t| now.saturating_add(t))
            .min(c.deadline)
            .min(c.own_end)
    }

    fn round_is(&self, id: u32, epoch: u32) -> bool {
        let c = self.calls.get(id);
        c.epoch == epoch && c.state == CallState::Round
    }

    /// Sends one request of the current round, through the bulkhead.
    fn launch(&mut self, id: u32, epoch: u32) {
        let c = self.calls.get(id);
        let layer = c.layer as usize;
        match self.gates[layer].bulkhead_acquire(c.instance, (id, epoch)) {
            Acquire::Now => {
                self.calls.get_mut(id).slots += 1;
                self.send(id);
            }
            Acquire::Queued => self.calls.get_mut(id).queued += 1,
            Acquire::Refused => {
                self.rec
                    .gate(self.q.now(), layer, Cause::BulkheadFull.reason());
                self.branch_failed(id, Failure::new(Cause::BulkheadFull));
            }
        }
    }

    /// The request goes out: a call at the next layer, or a job at the
    /// dependency.
    fn send(&mut self, id: u32) {
        let now = self.q.now();
        let call = self.calls.get_mut(id);
        call.launched += 1;
        let c = *call;
        let layer = c.layer as usize;
        let is_retry =
            c.retry.attempts > 1 || c.launched > 1 && self.cfg.layers[layer].hedging.is_some();
        self.rec.attempt(now, layer, is_retry);
        if c.orphaned_by != NO_LAYER {
            self.rec.orphaned_attempt(now, layer);
        }
        if now >= c.req_deadline {
            self.rec.late_attempt();
        }
        if c.layer < self.last_layer {
            let child_deadline = if self.cfg.layers[layer].propagate_deadline {
                self.round_end(id)
            } else {
                u64::MAX
            };
            let child = self.new_call(
                c.layer + 1,
                id,
                c.epoch,
                child_deadline,
                c.orphaned_by,
                c.req,
                c.req_deadline,
                NONE,
            );
            self.calls.get_mut(child).poison = c.poison;
            // Registered before it starts: it may answer at once.
            self.add_child(id, Child::Call(child));
            self.start_round(child);
        } else if let Some(job) =
            self.arrive_at_dependency(id, c.epoch, c.orphaned_by, c.req, false)
        {
            self.add_child(id, Child::Job(job));
        }
    }

    fn add_child(&mut self, id: u32, child: Child) {
        let c = self.calls.get_mut(id);
        match c.children {
            Children::None => c.children = Children::One(child),
            Children::One(first) => {
                let list = self.lists.insert(|old| {
                    let mut v = old.map(|_| Vec::new()).unwrap_or_default();
                    v.clear();
                    v
                });
                let v = self.lists.get_mut(list);
                v.clear();
                v.push(first);
                v.push(child);
                self.calls.get_mut(id).children = Children::Many(list);
            }
            Children::Many(list) => self.lists.get_mut(list).push(child),
        }
    }

    /// Sends the next hedge when its delay is over.
    pub(super) fn on_hedge(&mut self, id: u32, epoch: u32) {
        if !self.round_is(id, epoch) {
            return;
        }
        let c = *self.calls.get(id);
        let Some(h) = self.cfg.layers[c.layer as usize].hedging else {
            return;
        };
        if (c.launched + c.queued) as u32 >= h.max_attempts {
            return;
        }
        if self.hedge_allowed(id) {
            self.launch(id, epoch);
        }
        let c = self.calls.get(id);
        if self.round_is(id, epoch) && ((c.launched + c.queued) as u32) < h.max_attempts {
            let t = self
                .q
                .schedule_in(h.delay, Event::Hedge { call: id, epoch });
            self.calls.get_mut(id).timer = Some(t);
        }
    }

    /// gRFC A6: hedges after the first are sent only while the retry
    /// throttle allows it.
    fn hedge_allowed(&mut self, id: u32) -> bool {
        let now = self.q.now();
        let call = self.calls.get_mut(id);
        let (layer, instance, retries) = (call.layer as usize, call.instance, call.launched as u32);
        let cause = call.last_failure.cause;
        let global = &mut self.global_budget;
        match self.gates[layer].try_retry(instance, now, &mut call.budget, cause, retries, global) {
            Gate::Allow { .. } => true,
            Gate::Deny => {
                self.rec.gate(now, layer, Cause::BudgetExhausted.reason());
                false
            }
        }
    }

    /// An answer arrives for round `epoch` of call `id`; dropped when that
    /// round is over (the caller moved on: the answer was orphaned work).
    pub(super) fn deliver(&mut self, id: u32, epoch: u32, outcome: Outcome) {
        let c = *self.calls.get(id);
        if c.epoch != epoch {
            return;
        }
        match c.state {
            CallState::Round => {}
            CallState::Probing => return self.on_probe_answer(id, outcome),
            _ => return,
        }
        self.release_slot(id);
        match outcome {
            Outcome::Success => {
                let call = self.calls.get_mut(id);
                call.ok += 1;
                if call.ok as u32 >= needed(&self.cfg.layers[c.layer as usize]) {
                    self.close_round(id);
                    self.attempt_ended(id, None);
                    self.finish_call(id, Outcome::Success);
                }
            }
            Outcome::Failed(f) => self.branch_failed(id, f),
        }
    }

    /// One request of the round failed (or could not be sent).
    fn branch_failed(&mut self, id: u32, f: Failure) {
        let call = self.calls.get_mut(id);
        call.failed += 1;
        call.last_failure = f;
        let c = *call;
        let lc = &self.cfg.layers[c.layer as usize];
        if let Some(h) = lc.hedging {
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
            let c = self.calls.get(id);
            if c.failed >= c.launched + c.queued {
                self.close_round(id);
                self.attempt_ended(id, Some(f.cause));
                self.finish_call(id, Outcome::Failed(f));
            }
            return;
        }
        let lost = if lc.fan_out > 1 {
            // The round can no longer reach its quorum.
            c.failed as u32 > lc.fan_out - lc.quorum
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

    pub(super) fn on_round_timeout(&mut self, id: u32, epoch: u32) {
        let c = *self.calls.get(id);
        if c.epoch != epoch {
            return;
        }
        if c.state == CallState::Probing {
            // The probe took too long: retry as if it said "not committed".
            self.calls.get_mut(id).children = Children::None;
            return self.start_round(id);
        }
        if c.state != CallState::Round {
            return;
        }
        let now = self.q.now();
        let out_of_time = now >= c.deadline.min(c.own_end);
        let cause = if out_of_time {
            Self::out_of_time(&c)
        } else {
            Cause::Timeout
        };
        let f = Failure::new(cause);
        let lc = &self.cfg.layers[c.layer as usize];
        if lc.hedging.is_some() {
            self.close_round(id);
            self.attempt_ended(id, Some(cause));
            return self.finish_call(id, Outcome::Failed(f));
        }
        if lc.hedge_on_timeout && !out_of_time {
            // Envoy: retry without abandoning the attempt that timed out.
            self.calls.get_mut(id).last_failure = f;
            self.attempt_ended(id, Some(cause));
            match self.retry_gate(id, f) {
                Ok(_) => {
                    self.calls.get_mut(id).retry.attempts += 1;
                    let end = self.round_end(id);
                    if end != u64::MAX {
                        let t = self
                            .q
                            .schedule_at(end, Event::RoundTimeout { call: id, epoch });
                        self.calls.get_mut(id).timeout = Some(t);
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

    /// Ends the current round: bulkhead slots go back, and every request
    /// still out is abandoned (cancelled or orphaned, by the layer's
    /// `cancellation`).
    fn close_round(&mut self, id: u32) {
        self.cancel_timers(id);
        let c = *self.calls.get(id);
        for _ in 0..c.slots {
            self.release_slot(id);
        }
        let call = self.calls.get_mut(id);
        call.queued = 0;
        call.children = Children::None;
        match c.children {
            Children::None => {}
            Children::One(child) => self.abandon(id, c.epoch, child, c.layer),
            Children::Many(list) => {
                let children = std::mem::take(self.lists.get_mut(list));
                for &child in &children {
                    self.abandon(id, c.epoch, child, c.layer);
                }
                *self.lists.get_mut(list) = children;
                self.lists.remove(list);
            }
        }
    }

    /// Gives one bulkhead slot of call `id` back; a waiting request (of
    /// this or another call) may take it over and go.
    fn release_slot(&mut self, id: u32) {
        let c = *self.calls.get(id);
        if !self.gates[c.layer as usize].has_bulkhead() || c.slots == 0 {
            return;
        }
        self.calls.get_mut(id).slots -= 1;
        let calls = &self.calls;
        let next = self.gates[c.layer as usize].bulkhead_release(c.instance, |(w, e)| {
            let wc = calls.get(w);
            wc.epoch == e && wc.state == CallState::Round && wc.queued > 0
        });
        if let Some((w, _)) = next {
            let wc = self.calls.get_mut(w);
            wc.queued -= 1;
            wc.slots += 1;
            self.send(w);
        }
    }

    /// The caller (call `parent`, in round `epoch`, at `layer`) stops
    /// waiting for `child`. With `cancellation: propagate` the work is
    /// cancelled; otherwise it runs on as orphaned work.
    fn abandon(&mut self, parent: u32, epoch: u32, child: Child, layer: u8) {
        // Skip children that already answered (their slot may be reused).
        let live = match child {
            Child::Call(c) => {
                let cc = self.calls.get(c);
                cc.parent == parent && cc.parent_epoch == epoch && cc.state != CallState::Done
            }
            Child::Job(j) => {
                let jj = self.jobs.get(j);
                jj.caller == parent && jj.caller_epoch == epoch && jj.state != super::JobState::Done
            }
        };
        if !live {
            return;
        }
        if self.cfg.layers[layer as usize].cancel_propagates {
            self.cancel(child, layer);
        } else {
            self.orphan(child, layer);
        }
    }

    /// Marks `child` and everything below it as orphaned by `layer`.
    fn orphan(&mut self, child: Child, layer: u8) {
        match child {
            Child::Job(j) => {
                let job = self.jobs.get_mut(j);
                if job.orphaned_by == NO_LAYER {
                    job.orphaned_by = layer;
                    if job.committed {
                        // Committed, but its caller saw a timeout.
                        self.rec.ambiguous(self.q.now());
                    }
                }
            }
            Child::Call(c) => {
                let call = self.calls.get_mut(c);
                if call.orphaned_by == NO_LAYER {
                    call.orphaned_by = layer;
                }
                let (epoch, children) = (call.epoch, call.children);
                for grandchild in self.children_of(children) {
                    let live = match grandchild {
                        Child::Call(g) => {
                            let gc = self.calls.get(g);
                            gc.parent == c
                                && gc.parent_epoch == epoch
                                && gc.state != CallState::Done
                        }
                        Child::Job(g) => {
                            let gj = self.jobs.get(g);
                            gj.caller == c && gj.caller_epoch == epoch
                        }
                    };
                    if live {
                        self.orphan(grandchild, layer);
                    }
                }
            }
        }
    }

    fn children_of(&self, children: Children) -> Vec<Child> {
        match children {
            Children::None => Vec::new(),
            Children::One(c) => vec![c],
            Children::Many(list) => self.lists.get(list).clone(),
        }
    }

    /// Cancels `child`: a call stops (and closes its own round by its own
    /// layer's rule); a job leaves the queue or, in service, stops or
    /// finishes by the dependency's `on_cancel`.
    fn cancel(&mut self, child: Child, by_layer: u8) {
        let now = self.q.now();
        match child {
            Child::Job(j) => self.cancel_job(j, by_layer),
            Child::Call(c) => {
                let call = *self.calls.get(c);
                if call.state == CallState::Round {
                    self.close_round(c);
                }
                self.cancel_timers(c);
                let call = self.calls.get_mut(c);
                call.state = CallState::Done;
                call.epoch = call.epoch.wrapping_add(1);
                let (layer, instance) = (call.layer as usize, call.instance);
                self.gates[layer].call_ended(
                    instance,
                    now,
                    &mut call.budget,
                    false,
                    &mut self.global_budget,
                );
                self.calls.remove(c);
                self.rec.cancelled(now, 0);
            }
        }
    }

    // ----------------------------------------------------- after a round

    /// Reports an attempt's end to the layer's gates.
    fn attempt_ended(&mut self, id: u32, failure: Option<Cause>) {
        let now = self.q.now();
        let c = self.calls.get_mut(id);
        let layer = c.layer as usize;
        let qualified = failure.is_some_and(|f| self.cfg.layers[layer].retry.retry_on.retries(f));
        let global = &mut self.global_budget;
        self.gates[layer].attempt_ended(c.instance, now, &mut c.budget, failure, qualified, global);
    }

    /// A round was lost: retry or give up.
    fn attempt_failed(&mut self, id: u32, failure: Failure) {
        self.attempt_ended(id, Some(failure.cause));
        self.calls.get_mut(id).last_failure = failure;
        self.after_failure(id, failure);
    }

    /// Asks the dependency whether the write of call `id` committed,
    /// before re-sending it (the retry's sleep is already over).
    pub(super) fn send_probe(&mut self, id: u32) {
        self.cancel_timers(id);
        let now = self.q.now();
        let call = self.calls.get_mut(id);
        call.probe_first = false;
        call.epoch = call.epoch.wrapping_add(1);
        call.state = CallState::Probing;
        let c = *call;
        self.rec.probe(now);
        let end = self.round_end(id);
        if end != u64::MAX {
            let t = self.q.schedule_at(
                end,
                Event::RoundTimeout {
                    call: id,
                    epoch: c.epoch,
                },
            );
            self.calls.get_mut(id).timeout = Some(t);
        }
        if let Some(job) = self.arrive_at_dependency(id, c.epoch, c.orphaned_by, c.req, true) {
            self.calls.get_mut(id).children = Children::One(Child::Job(job));
        }
    }

    /// A probe answered: success means the write committed, so the call
    /// succeeded after all; anything else means send the retry.
    fn on_probe_answer(&mut self, id: u32, outcome: Outcome) {
        self.calls.get_mut(id).children = Children::None;
        match outcome {
            Outcome::Success => self.finish_call(id, Outcome::Success),
            Outcome::Failed(_) => self.start_round(id),
        }
    }

    /// The retry gates, in the AWS SDKs' order (presets.md §1.1):
    /// classification and the attempt cap, then the breaker and the budget.
    /// Ok carries the least sleep the budget asks for.
    fn retry_gate(&mut self, id: u32, failure: Failure) -> Result<Nanos, Cause> {
        let now = self.q.now();
        let c = *self.calls.get(id);
        let layer = c.layer as usize;
        let policy = &self.cfg.layers[layer].retry;
        if let Some(cause) = give_up_before_budget(policy, failure, c.retry.attempts) {
            return Err(cause);
        }
        if !self.gates[layer].breaker_allows_retry(c.instance, now) {
            self.rec.gate(now, layer, Cause::BreakerOpen.reason());
            return Err(Cause::BreakerOpen);
        }
        let call = self.calls.get_mut(id);
        let gate = self.gates[layer].try_retry(
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
                self.rec.gate(now, layer, Cause::BudgetExhausted.reason());
                Err(Cause::BudgetExhausted)
            }
        }
    }

    /// Retry or give up after a lost round.
    fn after_failure(&mut self, id: u32, failure: Failure) {
        let min_sleep = match self.retry_gate(id, failure) {
            Ok(s) => s,
            Err(cause) => {
                return self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }));
            }
        };
        let now = self.q.now();
        let call = self.calls.get_mut(id);
        let layer = call.layer as usize;
        let limit = call.deadline.min(call.own_end);
        let decision = plan_sleep(
            &self.cfg.layers[layer].retry,
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
                let probe = self.cfg.layers[layer].status_probe
                    && failure.cause == Cause::Timeout
                    && layer == self.last_layer as usize
                    && self.cfg.dependency.side_effects.writes();
                let call = self.calls.get_mut(id);
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
                    self.calls.get_mut(id).timer = Some(t);
                }
            }
            Decision::GiveUp(Cause::Deadline) => {
                let cause = Self::out_of_time(self.calls.get(id));
                self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }))
            }
            Decision::GiveUp(cause) => {
                self.finish_call(id, Outcome::Failed(Failure { cause, ..failure }))
            }
        }
    }

    /// A throttle or breaker refused the round: the call fails at once.
    fn reject_locally(&mut self, id: u32, cause: Cause) {
        let now = self.q.now();
        let layer = self.calls.get(id).layer as usize;
        self.rec.gate(now, layer, cause.reason());
        self.finish_call(id, Outcome::Failed(Failure::new(cause)));
    }

    pub(super) fn finish_call(&mut self, id: u32, outcome: Outcome) {
        let now = self.q.now();
        if self.calls.get(id).state == CallState::Round {
            self.close_round(id);
        }
        self.cancel_timers(id);
        let call = self.calls.get_mut(id);
        call.state = CallState::Done;
        call.epoch = call.epoch.wrapping_add(1);
        let layer = call.layer as usize;
        self.gates[layer].call_ended(
            call.instance,
            now,
            &mut call.budget,
            outcome == Outcome::Success,
            &mut self.global_budget,
        );
        let c = *self.calls.get(id);
        self.calls.remove(id);
        if c.parent == NONE {
            let failure = match outcome {
                Outcome::Success => None,
                Outcome::Failed(f) => Some(f.cause.reason()),
            };
            self.rec.request_done(now, now - c.retry.started, failure);
            if c.client != NONE {
                self.client_done(c.client);
            }
            if c.msg != NONE {
                self.handler_done(c.msg, outcome == Outcome::Success);
            }
        } else {
            // The caller sees what a real hop would answer: a budget or
            // Retry-After refusal returns the last error; a local gate
            // (breaker, throttle, bulkhead) looks like 503 Service
            // Unavailable.
            let outcome = match outcome {
                Outcome::Failed(f) => Outcome::Failed(match f.cause {
                    Cause::BudgetExhausted | Cause::RetryAfterExceedsBudget => c.last_failure,
                    Cause::BreakerOpen | Cause::Throttled | Cause::BulkheadFull => {
                        Failure::new(Cause::Status(503))
                    }
                    _ => f,
                }),
                ok => ok,
            };
            self.deliver(c.parent, c.parent_epoch, outcome);
        }
    }
}

/// Successes a round needs: the quorum with fan-out, else one.
fn needed(lc: &LayerConfig) -> u32 {
    if lc.hedging.is_some() || lc.fan_out <= 1 {
        1
    } else {
        lc.quorum
    }
}
