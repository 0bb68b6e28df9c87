//! Services: a request (or a status probe) that reaches a service is a
//! *job*. It is admitted by the service's server (`model::server`): it
//! waits for a worker, does the service's own work, makes the service's
//! calls stage by stage (parallel calls together), and answers. A finished
//! write commits even when its caller has given up; with an idempotency
//! key a logical request commits once. Incidents change all of this per
//! service.
//!
//! A job's answer goes back through an event (`Respond`), except a plain
//! success of a leaf with no added latency, which is delivered at once: a
//! failing service never recurses into its caller's retry loop.

use crate::engine::Nanos;
use crate::engine::time::from_f64_ns;

use super::super::outcome::{Cause, Failure, Outcome};
use super::super::server::{Admission, SideEffects};
use super::super::topology::{EdgeId, ServiceId};
use super::edge::Opening;
use super::{CallId, Child, Children, Event, Job, JobId, JobState, NEVER, Parent, World};
use crate::metrics::recorder::ServiceEvent;

impl World<'_> {
    #[inline]
    fn job(&self, id: JobId) -> &Job {
        self.jobs.get(id.0)
    }

    #[inline]
    fn job_mut(&mut self, id: JobId) -> &mut Job {
        self.jobs.get_mut(id.0)
    }

    /// A request (or a status probe) from the current round of call
    /// `caller` reaches service `s`. `None` when the request vanished.
    pub(super) fn arrive(&mut self, s: ServiceId, caller: CallId, probe: bool) -> Option<JobId> {
        let now = self.q.now();
        let focus = s == self.topo.focus();
        if focus {
            self.rec.dependency_attempt(now);
        }
        self.rec.service_arrival(now, s.index());
        let c = *self.calls.get(caller.0);
        let deadline = if self.topo.edge(c.edge).policy.propagate_deadline {
            // What the caller's round allows (its per-attempt timeout,
            // deadline and total timeout).
            self.topo
                .edge(c.edge)
                .policy
                .timeout
                .map_or(NEVER, |t| now.saturating_add(t))
                .min(c.deadline)
                .min(c.own_end)
        } else {
            NEVER
        };
        let job = JobId(self.jobs.insert(|old| Job {
            epoch: old.map_or(0, |o| o.epoch.wrapping_add(1)),
            timer: None,
            state: JobState::Queued,
            service: s,
            probe,
            deduped: false,
            committed: false,
            poison: c.poison,
            holds_worker: false,
            orphaned_by: c.orphaned_by,
            caller,
            caller_epoch: c.epoch,
            req: c.req,
            arrived: now,
            started: now,
            work: 0,
            outcome: Outcome::Success,
            stage: 0,
            pending: 0,
            children: Children::None,
            deadline,
            req_deadline: c.req_deadline,
        }));
        let cfg = self.topo.service(s);
        match self.servers[s.index()].admit(cfg, &mut self.incident_rng[s.index()]) {
            Admission::Refused => {
                self.rec
                    .service_event(now, s.index(), ServiceEvent::Refused);
                self.respond(job, Outcome::Failed(Failure::new(Cause::Connection)), 0);
            }
            Admission::Vanished => {
                self.rec
                    .service_event(now, s.index(), ServiceEvent::Vanished);
                if focus {
                    self.rec.blackholed(now);
                }
                self.finish_job(job);
                return None;
            }
            Admission::Error(status) => {
                self.rec.service_event(now, s.index(), ServiceEvent::Error);
                self.respond(job, Outcome::Failed(Failure::new(Cause::Status(status))), 0);
            }
            Admission::Start => self.start_service(job),
            Admission::Queue => {
                let server = &mut self.servers[s.index()];
                server.queue.push_back(job);
                server.queued += 1;
                self.sync_gauges(s);
            }
            Admission::Shed => {
                self.rec.service_event(now, s.index(), ServiceEvent::Shed);
                if focus {
                    self.rec.shed(now);
                }
                let f = Failure {
                    cause: Cause::Status(cfg.shed_status),
                    retry_after: cfg.shed_retry_after,
                };
                self.respond(job, Outcome::Failed(f), 0);
            }
        }
        Some(job)
    }

    /// Schedules the answer of `job` after `delay`.
    fn respond(&mut self, job: JobId, outcome: Outcome, delay: Nanos) {
        let j = self.job_mut(job);
        j.state = JobState::Responding;
        j.outcome = outcome;
        let (epoch, pending) = (j.epoch, j.timer.take());
        if let Some(t) = pending {
            self.q.cancel(t);
        }
        let t = self.q.schedule_in(delay, Event::Respond { job, epoch });
        self.job_mut(job).timer = Some(t);
    }

    /// A job's answer reaches its caller.
    pub(super) fn on_respond(&mut self, job: JobId, epoch: u32) {
        let j = *self.job(job);
        if j.epoch == epoch && j.state == JobState::Responding {
            self.finish_job(job);
            self.deliver(j.caller, j.caller_epoch, j.outcome);
        }
    }

    fn finish_job(&mut self, job: JobId) {
        let j = self.job_mut(job);
        j.state = JobState::Done;
        j.epoch = j.epoch.wrapping_add(1);
        if let Some(t) = j.timer.take() {
            self.q.cancel(t);
        }
        self.jobs.remove(job.0);
    }

    /// `job` takes a worker and starts its own work.
    fn start_service(&mut self, job: JobId) {
        let now = self.q.now();
        let j = *self.job(job);
        let s = j.service;
        let cfg = self.topo.service(s);
        // A probe, or a keyed write already committed, is a cheap lookup.
        let server = &self.servers[s.index()];
        let deduped =
            !j.probe && cfg.dedupe && cfg.side_effects.writes() && server.committed(j.req);
        let base = if j.probe || deduped {
            Some(cfg.dedupe_cost.max(1))
        } else {
            cfg.service.map(|d| d.sample(&mut self.work_rng[s.index()]))
        };
        let factor = server.capacity_factor(cfg, now);
        let work = base.map(|base| {
            if factor >= 1.0 {
                base
            } else {
                from_f64_ns(base as f64 / factor).max(1)
            }
        });
        let j = self.job_mut(job);
        j.state = JobState::InService;
        j.work = work.unwrap_or(0);
        j.started = now;
        j.deduped = deduped;
        j.holds_worker = true;
        let (epoch, arrived) = (j.epoch, j.arrived);
        if s == self.topo.focus() {
            self.rec.queue_wait(now - arrived);
        }
        self.rec.service_queue_wait(s.index(), now - arrived);
        let server = &mut self.servers[s.index()];
        server.busy += 1;
        server.in_service += 1;
        self.sync_gauges(s);
        match work {
            Some(work) => {
                let t = self.q.schedule_in(work, Event::ServiceDone { job, epoch });
                self.job_mut(job).timer = Some(t);
            }
            // No work: done at once, but answered through an event (the
            // caller has not registered this job yet).
            None => self.work_done(job, false),
        }
    }

    /// A worker of `s`, taken at `started`, is given back.
    fn worker_freed(&mut self, s: ServiceId, started: Nanos) {
        let now = self.q.now();
        self.servers[s.index()].busy -= 1;
        self.rec.worker_released(now, s.index(), now - started);
    }

    /// `job` leaves its service's inside (answered, dropped, cancelled or
    /// lost): its time inside counts for Little's law.
    fn left(&mut self, job: JobId) {
        let j = self.job(job);
        let sojourn = self.q.now() - j.arrived;
        self.rec.service_left(j.service.index(), sojourn);
    }

    fn sync_gauges(&mut self, s: ServiceId) {
        let now = self.q.now();
        let server = &self.servers[s.index()];
        if s == self.topo.focus() {
            self.rec.queue.set(now, server.queued as u64);
            self.rec.busy.set(now, server.busy as u64);
        }
        let (q, b, i) = (server.queued, server.busy, server.inside());
        self.rec
            .service_levels(now, s.index(), q as u64, b as u64, i as u64);
    }

    pub(super) fn on_service_done(&mut self, job: JobId, epoch: u32) {
        let j = self.job(job);
        if j.epoch != epoch || j.state != JobState::InService {
            return;
        }
        self.job_mut(job).timer = None;
        self.work_done(job, true);
    }

    /// `job`'s own work is done: it commits, then makes its calls or
    /// answers (at once, when `now_ok` and nothing delays it).
    fn work_done(&mut self, job: JobId, now_ok: bool) {
        let j = *self.job(job);
        let s = j.service;
        let now = self.q.now();
        let has_calls = !self.topo.stages(s).is_empty() && !j.probe;
        let releases = !has_calls || !self.topo.service(s).hold_worker;
        self.servers[s.index()].in_service -= 1;
        if !has_calls {
            self.left(job);
        }
        self.rec.service_event(now, s.index(), ServiceEvent::Served);
        if releases {
            self.worker_freed(s, j.started);
            self.job_mut(job).holds_worker = false;
        }
        self.rec
            .service_done(now, j.work, j.orphaned_by.map(EdgeId::index));
        if has_calls {
            if j.poison {
                // A poison message's request still commits nothing.
            } else if self.commit(&j) {
                self.job_mut(job).committed = true;
            }
            self.servers[s.index()].calling += 1;
            if releases {
                self.start_next_queued(s);
            }
            self.sync_gauges(s);
            self.job_mut(job).state = JobState::Calling;
            return self.start_stage(job, 0);
        }
        let outcome = if j.probe {
            // Success means "it committed"; 404 means "not found".
            if self.servers[s.index()].committed(j.req) {
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
                self.job_mut(job).committed = true;
            }
            Outcome::Success
        };
        // Take the next request before answering this one, so the answer
        // cannot let a new arrival jump the queue.
        self.start_next_queued(s);
        self.sync_gauges(s);
        let add = self.servers[s.index()].latency_add();
        if add > 0 || outcome != Outcome::Success || !now_ok {
            self.respond(job, outcome, add);
        } else {
            self.finish_job(job);
            self.deliver(j.caller, j.caller_epoch, Outcome::Success);
        }
    }

    // --------------------------------------------------------- job calls

    /// Sends the calls of stage `stage` of `job` (or answers, after the
    /// last stage).
    fn start_stage(&mut self, job: JobId, stage: usize) {
        let j = *self.job(job);
        let Some(edges) = self.topo.stages(j.service).get(stage) else {
            return self.job_finished(job, Outcome::Success);
        };
        let parent = Parent::Job {
            job,
            epoch: j.epoch,
        };
        let jm = self.job_mut(job);
        jm.stage = stage as u16;
        jm.pending = edges.len() as u16;
        jm.children = Children::None;
        for i in 0..edges.len() {
            let edge = self.topo.stages(j.service)[stage][i];
            let call = self.new_call(Opening {
                edge,
                parent,
                deadline: j.deadline,
                orphaned_by: j.orphaned_by,
                req: j.req,
                req_deadline: j.req_deadline,
                poison: j.poison,
            });
            let jm = self.jobs.get_mut(job.0);
            World::add_child(&mut jm.children, &mut self.lists, Child::Call(call));
            self.start_round(call);
            let now = self.job(job);
            if now.epoch != j.epoch || now.state != JobState::Calling {
                // The job already ended (a required call failed at once).
                return;
            }
        }
    }

    /// A call made by `job` (in epoch `epoch`) on `edge` ended.
    pub(super) fn call_done_for_job(
        &mut self,
        job: JobId,
        epoch: u32,
        edge: EdgeId,
        outcome: Outcome,
    ) {
        let j = *self.job(job);
        if j.epoch != epoch || j.state != JobState::Calling {
            return;
        }
        if let Outcome::Failed(f) = outcome
            && !self.topo.edge(edge).optional
        {
            // A required call failed: the request fails; the others of the
            // stage are abandoned by their own edges' rule.
            return self.job_finished(job, Outcome::Failed(f));
        }
        let jm = self.job_mut(job);
        jm.pending -= 1;
        if jm.pending == 0 {
            let next = j.stage as usize + 1;
            let children = std::mem::replace(&mut jm.children, Children::None);
            self.free_children(children);
            self.start_stage(job, next);
        }
    }

    /// Frees a finished stage's list (its calls are all done).
    fn free_children(&mut self, children: Children) {
        if let Children::Many(list) = children {
            self.lists.get_mut(list).clear();
            self.lists.remove(list);
        }
    }

    /// `job`'s calls are over (or one failed): it gives its worker back
    /// and answers.
    fn job_finished(&mut self, job: JobId, outcome: Outcome) {
        let j = *self.job(job);
        let s = j.service;
        self.abandon_job_calls(job, None);
        self.servers[s.index()].calling -= 1;
        self.left(job);
        if j.holds_worker {
            self.worker_freed(s, j.started);
            self.job_mut(job).holds_worker = false;
            self.start_next_queued(s);
        }
        self.sync_gauges(s);
        let add = self.servers[s.index()].latency_add();
        self.respond(job, outcome, add);
    }

    /// Stops waiting for `job`'s calls still out: each is cancelled or
    /// orphaned by its own edge's `cancellation` (`force_cancel` overrides
    /// it: the job was cancelled).
    fn abandon_job_calls(&mut self, job: JobId, force: Option<EdgeId>) {
        let j = *self.job(job);
        let parent = Parent::Job {
            job,
            epoch: j.epoch,
        };
        self.job_mut(job).children = Children::None;
        let members = self.children_of(j.children);
        self.free_children(j.children);
        for child in members {
            let Child::Call(c) = child else { continue };
            if !self.works_for(child, parent) {
                continue;
            }
            let edge = self.calls.get(c.0).edge;
            match force {
                Some(by) => self.cancel(child, by),
                None => {
                    let cancel = self.topo.edge(edge).policy.cancel_propagates;
                    self.abandon(parent, child, edge, cancel);
                }
            }
        }
    }

    /// A worker finished a request: a write commits (returns whether it
    /// did). Without a key, every commit of a non-idempotent write after its
    /// request's first is a duplicate side effect. A commit whose caller
    /// has given up, or gives up before the answer arrives, is an ambiguous
    /// success: the caller saw a timeout (counted here, or when abandoned).
    fn commit(&mut self, j: &Job) -> bool {
        let cfg = self.topo.service(j.service);
        if !cfg.side_effects.writes() {
            return false;
        }
        let now = self.q.now();
        if j.deduped {
            self.rec.deduplicated(now);
            return false;
        }
        let Some(count) = self.servers[j.service.index()]
            .commits
            .get_mut(j.req as usize)
        else {
            return false;
        };
        if cfg.dedupe && *count > 0 {
            // Two keyed attempts were in service at once: the key's unique
            // constraint lets only the first commit.
            self.rec.deduplicated(now);
            return false;
        }
        let first = *count == 0;
        let duplicate = !first && cfg.side_effects == SideEffects::Write;
        *count = count.saturating_add(1);
        let ambiguous = j.orphaned_by.is_some();
        self.rec.commit(now, first, duplicate, ambiguous);
        true
    }

    fn start_next_queued(&mut self, s: ServiceId) {
        let cfg = self.topo.service(s);
        while self.servers[s.index()].has_free_worker(cfg) {
            let server = &mut self.servers[s.index()];
            let next = if cfg.lifo {
                server.queue.pop_back()
            } else {
                server.queue.pop_front()
            };
            let Some(job) = next else { return };
            if self.job(job).state == JobState::Cancelled {
                self.finish_job(job);
                continue;
            }
            self.servers[s.index()].queued -= 1;
            let now = self.q.now();
            let waited = now - self.job(job).arrived;
            if cfg.queue_timeout.is_some_and(|qt| waited > qt) {
                if s == self.topo.focus() {
                    self.rec.queue_timeout(now);
                }
                self.rec
                    .service_event(now, s.index(), ServiceEvent::QueueTimeout);
                self.left(job);
                let status = cfg.queue_timeout_status;
                self.respond(job, Outcome::Failed(Failure::new(Cause::Status(status))), 0);
                continue;
            }
            self.start_service(job);
        }
    }

    /// A caller on edge `by` cancelled `job`: it leaves the queue, or, in
    /// service, stops (`on_cancel: stop`) or runs to its end as orphaned
    /// work (`finish`); waiting for its calls, it cancels them.
    pub(super) fn cancel_job(&mut self, job: JobId, by: EdgeId) {
        let now = self.q.now();
        let j = *self.job(job);
        let s = j.service;
        match j.state {
            JobState::Queued => {
                self.left(job);
                self.job_mut(job).state = JobState::Cancelled;
                self.servers[s.index()].queued -= 1;
                self.rec.cancelled(now, 0);
                self.rec
                    .service_event(now, s.index(), ServiceEvent::Cancelled);
                self.sync_gauges(s);
            }
            JobState::InService if self.topo.service(s).stop_on_cancel => {
                self.left(job);
                self.worker_freed(s, j.started);
                self.servers[s.index()].in_service -= 1;
                self.rec.cancelled(now, now - j.started);
                self.rec
                    .service_event(now, s.index(), ServiceEvent::Cancelled);
                self.finish_job(job);
                self.start_next_queued(s);
                self.sync_gauges(s);
            }
            JobState::InService => {
                if j.orphaned_by.is_none() {
                    self.job_mut(job).orphaned_by = Some(by);
                }
            }
            JobState::Calling => {
                self.left(job);
                self.abandon_job_calls(job, Some(by));
                self.servers[s.index()].calling -= 1;
                if j.holds_worker {
                    self.worker_freed(s, j.started);
                }
                self.rec.cancelled(now, 0);
                self.finish_job(job);
                if j.holds_worker {
                    self.start_next_queued(s);
                }
                self.sync_gauges(s);
            }
            // Its answer is on the way and will find nobody waiting.
            JobState::Responding => {
                if j.committed && j.orphaned_by.is_none() {
                    self.job_mut(job).orphaned_by = Some(by);
                    self.rec.ambiguous(now);
                }
            }
            JobState::Cancelled | JobState::Done => {}
        }
    }

    /// `job`'s caller gave up on it (on behalf of `edge`): it and its
    /// calls run on as orphaned work.
    pub(super) fn orphan_job(&mut self, job: JobId, edge: EdgeId) {
        let j = *self.job(job);
        if j.orphaned_by.is_none() {
            self.job_mut(job).orphaned_by = Some(edge);
            if j.committed {
                // Committed, but its caller saw a timeout.
                self.rec.ambiguous(self.q.now());
            }
        }
        if j.state == JobState::Calling {
            let parent = Parent::Job {
                job,
                epoch: j.epoch,
            };
            for child in self.children_of(j.children) {
                if self.works_for(child, parent) {
                    self.orphan(child, edge);
                }
            }
        }
    }

    // ---------------------------------------------------------- incidents

    pub(super) fn on_incident(&mut self, i: usize, starts: bool) {
        let (s, inc) = self.incidents[i];
        let now = self.q.now();
        if self.servers[s.index()].on_incident(inc.effect, starts, now) {
            self.reset_all_work(s);
        }
    }

    /// Service `s` crashed: everything queued, in service or waiting for
    /// its calls fails with a connection reset (the calls run on,
    /// orphaned).
    fn reset_all_work(&mut self, s: ServiceId) {
        let now = self.q.now();
        let queued: Vec<JobId> = self.servers[s.index()].queue.drain(..).collect();
        self.servers[s.index()].queued = 0;
        let reset = Outcome::Failed(Failure::new(Cause::Connection));
        for job in queued {
            if self.job(job).state == JobState::Cancelled {
                self.finish_job(job);
            } else {
                self.rec.service_event(now, s.index(), ServiceEvent::Reset);
                self.left(job);
                self.respond(job, reset, 0);
            }
        }
        let ids: Vec<u32> = self.jobs.iter_ids().collect();
        for id in ids {
            let job = JobId(id);
            let j = *self.job(job);
            if j.service != s {
                continue;
            }
            match j.state {
                JobState::InService => {
                    self.worker_freed(s, j.started);
                    self.servers[s.index()].in_service -= 1;
                    self.rec.service_event(now, s.index(), ServiceEvent::Reset);
                    self.left(job);
                    let jm = self.job_mut(job);
                    jm.epoch = jm.epoch.wrapping_add(1); // its ServiceDone is now stale
                    jm.holds_worker = false;
                    self.respond(job, reset, 0);
                }
                JobState::Calling => {
                    let parent = Parent::Job {
                        job,
                        epoch: j.epoch,
                    };
                    for child in self.children_of(j.children) {
                        if self.works_for(child, parent) {
                            let Child::Call(c) = child else { continue };
                            let edge = self.calls.get(c.0).edge;
                            self.orphan(child, edge);
                        }
                    }
                    self.free_children(j.children);
                    self.servers[s.index()].calling -= 1;
                    if j.holds_worker {
                        self.worker_freed(s, j.started);
                    }
                    self.left(job);
                    let jm = self.job_mut(job);
                    jm.children = Children::None;
                    jm.holds_worker = false;
                    jm.epoch = jm.epoch.wrapping_add(1);
                    self.respond(job, reset, 0);
                }
                _ => {}
            }
        }
        self.sync_gauges(s);
    }
}
