//! The dependency: requests arrive, wait in the queue, are served by a
//! worker and answered; incidents change how. A finished write commits
//! even when its caller has given up; with an idempotency key a logical
//! request commits once. Semantics of incidents: `model::dependency`.

use crate::engine::Nanos;
use crate::engine::time::from_f64_ns;

use super::super::dependency::{Effect, SideEffects};
use super::super::outcome::{Cause, Failure, Outcome};
use super::{Event, Job, JobState, NO_LAYER, Sim};

impl Sim<'_> {
    /// A request (or a status probe) from round `caller_epoch` of call
    /// `caller` reaches the dependency. Answers never go back from here
    /// (always through an event), so a failing dependency cannot recurse
    /// into the caller's retry loop. `None` when the request vanished.
    pub(super) fn arrive_at_dependency(
        &mut self,
        caller: u32,
        caller_epoch: u32,
        orphaned_by: u8,
        req: u64,
        probe: bool,
    ) -> Option<u32> {
        let now = self.q.now();
        self.rec.dependency_attempt(now);
        let poison = self.calls.get(caller).poison;
        let job = self.jobs.insert(|old| Job {
            epoch: old.map_or(0, |o| o.epoch.wrapping_add(1)),
            timer: None,
            state: JobState::Queued,
            probe,
            deduped: false,
            committed: false,
            poison,
            orphaned_by,
            caller,
            caller_epoch,
            req,
            arrived: now,
            started: now,
            service: 0,
            outcome: Outcome::Success,
        });
        if self.dep.down > 0 {
            self.respond(job, Outcome::Failed(Failure::new(Cause::Connection)), 0);
            return Some(job);
        }
        if self.dep.blackhole > 0 {
            self.rec.blackholed(now);
            self.finish_job(job);
            return None;
        }
        if let Some((rate, status)) = self.dep.errors
            && self.incidents.chance(rate)
        {
            let f = Failure::new(Cause::Status(status));
            self.respond(job, Outcome::Failed(f), 0);
            return Some(job);
        }
        let d = &self.cfg.dependency;
        if self.dep.busy < d.concurrency {
            self.start_service(job);
        } else if (self.dep.queued as u64) < d.queue_capacity as u64 {
            self.dep.queue.push_back(job);
            self.dep.queued += 1;
            self.sync_gauges();
        } else {
            self.rec.shed(now);
            let f = Failure {
                cause: Cause::Status(d.shed_status),
                retry_after: d.shed_retry_after,
            };
            self.respond(job, Outcome::Failed(f), 0);
        }
        Some(job)
    }

    /// Schedules the answer of `job` after `delay`.
    fn respond(&mut self, job: u32, outcome: Outcome, delay: Nanos) {
        let j = self.jobs.get_mut(job);
        j.state = JobState::Responding;
        j.outcome = outcome;
        let (epoch, pending) = (j.epoch, j.timer.take());
        if let Some(t) = pending {
            self.q.cancel(t);
        }
        let t = self.q.schedule_in(delay, Event::Respond { job, epoch });
        self.jobs.get_mut(job).timer = Some(t);
    }

    pub(super) fn finish_job(&mut self, job: u32) {
        let j = self.jobs.get_mut(job);
        j.state = JobState::Done;
        j.epoch = j.epoch.wrapping_add(1);
        if let Some(t) = j.timer.take() {
            self.q.cancel(t);
        }
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

    fn committed(&self, req: u64) -> bool {
        self.dep.commits.get(req as usize).is_some_and(|&c| c > 0)
    }

    fn start_service(&mut self, job: u32) {
        let now = self.q.now();
        let d = &self.cfg.dependency;
        let j = *self.jobs.get(job);
        // A probe, or a keyed write already committed, is a cheap lookup.
        let deduped = !j.probe && d.dedupe && d.side_effects.writes() && self.committed(j.req);
        let base = if j.probe || deduped {
            d.dedupe_cost.max(1)
        } else {
            d.service.sample(&mut self.service)
        };
        let factor = self.capacity_factor(now);
        let service = if factor >= 1.0 {
            base
        } else {
            from_f64_ns(base as f64 / factor).max(1)
        };
        let j = self.jobs.get_mut(job);
        j.state = JobState::InService;
        j.service = service;
        j.started = now;
        j.deduped = deduped;
        let (epoch, arrived) = (j.epoch, j.arrived);
        self.rec.queue_wait(now - arrived);
        self.dep.busy += 1;
        self.sync_gauges();
        let t = self
            .q
            .schedule_in(service, Event::ServiceDone { job, epoch });
        self.jobs.get_mut(job).timer = Some(t);
    }

    fn sync_gauges(&mut self) {
        let now = self.q.now();
        self.rec.queue.set(now, self.dep.queued as u64);
        self.rec.busy.set(now, self.dep.busy as u64);
    }

    pub(super) fn on_service_done(&mut self, job: u32, epoch: u32) {
        let j = *self.jobs.get(job);
        if j.epoch != epoch || j.state != JobState::InService {
            return;
        }
        let now = self.q.now();
        self.dep.busy -= 1;
        let orphaned_by = (j.orphaned_by != NO_LAYER).then_some(j.orphaned_by as usize);
        self.rec.service_done(now, j.service, orphaned_by);
        let outcome = if j.probe {
            // Success means "it committed"; 404 means "not found".
            if self.committed(j.req) {
                Outcome::Success
            } else {
                Outcome::Failed(Failure::new(Cause::Status(404)))
            }
        } else if j.poison {
            // A poison message fails however often it is handled.
            let status = self.cfg.consumers.map_or(500, |c| c.poison_status);
            Outcome::Failed(Failure::new(Cause::Status(status)))
        } else {
            if self.commit(&j) {
                self.jobs.get_mut(job).committed = true;
            }
            Outcome::Success
        };
        // Take the next request before answering this one, so the answer
        // cannot let a new arrival jump the queue.
        self.start_next_queued();
        self.sync_gauges();
        let add = self.dep.latency_add;
        if add > 0 || outcome != Outcome::Success {
            self.respond(job, outcome, add);
        } else {
            self.finish_job(job);
            self.deliver(j.caller, j.caller_epoch, Outcome::Success);
        }
    }

    /// A worker finished a request: a write commits (returns whether it
    /// did). Without a key, every commit of a non-idempotent write after its
    /// request's first is a duplicate side effect. A commit whose caller
    /// has given up, or gives up before the answer arrives, is an ambiguous
    /// success: the caller saw a timeout (counted here, or when abandoned).
    fn commit(&mut self, j: &Job) -> bool {
        let d = &self.cfg.dependency;
        if !d.side_effects.writes() {
            return false;
        }
        if j.deduped {
            self.rec.deduplicated(self.q.now());
            return false;
        }
        let Some(count) = self.dep.commits.get_mut(j.req as usize) else {
            return false;
        };
        if d.dedupe && *count > 0 {
            // Two keyed attempts were in service at once: the key's unique
            // constraint lets only the first commit.
            self.rec.deduplicated(self.q.now());
            return false;
        }
        let first = *count == 0;
        let duplicate = !first && d.side_effects == SideEffects::Write;
        *count = count.saturating_add(1);
        let ambiguous = j.orphaned_by != NO_LAYER;
        self.rec.commit(self.q.now(), first, duplicate, ambiguous);
        true
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
            if self.jobs.get(job).state == JobState::Cancelled {
                self.finish_job(job);
                continue;
            }
            self.dep.queued -= 1;
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

    /// A caller at `by_layer` cancelled `job`: it leaves the queue, or, in
    /// service, stops (`on_cancel: stop`) or runs to its end as orphaned
    /// work (`finish`).
    pub(super) fn cancel_job(&mut self, job: u32, by_layer: u8) {
        let now = self.q.now();
        let j = *self.jobs.get(job);
        match j.state {
            JobState::Queued => {
                self.jobs.get_mut(job).state = JobState::Cancelled;
                self.dep.queued -= 1;
                self.rec.cancelled(now, 0);
                self.sync_gauges();
            }
            JobState::InService if self.cfg.dependency.stop_on_cancel => {
                self.dep.busy -= 1;
                self.rec.cancelled(now, now - j.started);
                self.finish_job(job);
                self.start_next_queued();
                self.sync_gauges();
            }
            JobState::InService => {
                if j.orphaned_by == NO_LAYER {
                    self.jobs.get_mut(job).orphaned_by = by_layer;
                }
            }
            // Its answer is on the way and will find nobody waiting.
            JobState::Responding => {
                if j.committed && j.orphaned_by == NO_LAYER {
                    self.jobs.get_mut(job).orphaned_by = by_layer;
                    self.rec.ambiguous(now);
                }
            }
            JobState::Cancelled | JobState::Done => {}
        }
    }

    // ---------------------------------------------------------- incidents

    pub(super) fn on_incident(&mut self, i: usize, starts: bool) {
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
        self.dep.queued = 0;
        let reset = Outcome::Failed(Failure::new(Cause::Connection));
        for job in queued {
            if self.jobs.get(job).state == JobState::Cancelled {
                self.finish_job(job);
            } else {
                self.respond(job, reset, 0);
            }
        }
        let ids: Vec<u32> = self.jobs.iter_ids().collect();
        for job in ids {
            if self.jobs.get(job).state == JobState::InService {
                self.dep.busy -= 1;
                let j = self.jobs.get_mut(job);
                j.epoch = j.epoch.wrapping_add(1); // its ServiceDone is now stale
                self.respond(job, reset, 0);
            }
        }
        self.sync_gauges();
    }
}
