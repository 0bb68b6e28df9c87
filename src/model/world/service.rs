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

use super::super::cache::Lookup;
use super::super::outcome::{Cause, Failure, Outcome};
use super::super::server::{Admission, Effect, Phase, Server, SideEffects};
use super::super::topology::{EdgeId, ReplicaId, ServiceId};
use super::cache::CacheRole;
use super::edge::Opening;
use super::{CallId, Child, Children, ConnRef, Event, Job, JobId, JobState, NEVER, Parent, World};
use crate::metrics::recorder::ServiceEvent;

impl World<'_> {
    #[inline]
    pub(super) fn job(&self, id: JobId) -> &Job {
        self.jobs.get(id.0)
    }

    #[inline]
    pub(super) fn job_mut(&mut self, id: JobId) -> &mut Job {
        self.jobs.get_mut(id.0)
    }

    /// A request (or a status probe) from the current round of call
    /// `caller` reaches service `s`; its job, which the caller's round
    /// holds (also when a blackhole swallowed it).
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
            class: c.class,
            arrived: now,
            started: now,
            work: 0,
            outcome: Outcome::Success,
            replica: self.topo.replica(s, 0),
            awaited: false,
            conn: None,
            stage: 0,
            pending: 0,
            children: Children::None,
            deadline,
            req_deadline: c.req_deadline,
            limited: false,
            inflight: 0,
            cache: CacheRole::None,
        }));
        let replica = match self.conn_replica(caller, s) {
            Some(r) => {
                let (_, k) = self.topo.replica_of(r);
                let retry_other = self.topo.edge(c.edge).policy.retry_other_replica;
                if retry_other && k < 64 {
                    self.calls.get_mut(caller.0).tried |= 1u64 << k;
                }
                r
            }
            None => self.pick_replica(s, caller),
        };
        self.admit(job, replica)
    }

    /// A connect of pool slot `conn` reaches replica `replica` of `s`: a
    /// job of the connect's work, taken like any request.
    pub(super) fn arrive_connect(&mut self, s: ServiceId, replica: ReplicaId, conn: ConnRef) {
        let now = self.q.now();
        if s == self.topo.focus() {
            self.rec.dependency_attempt(now);
        }
        self.rec.service_arrival(now, s.index());
        let job = JobId(self.jobs.insert(|old| Job {
            epoch: old.map_or(0, |o| o.epoch.wrapping_add(1)),
            timer: None,
            state: JobState::Queued,
            service: s,
            probe: false,
            deduped: false,
            committed: false,
            poison: false,
            holds_worker: false,
            orphaned_by: None,
            caller: CallId(0),
            caller_epoch: 0,
            req: 0,
            class: 0,
            arrived: now,
            started: now,
            work: 0,
            outcome: Outcome::Success,
            replica,
            awaited: false,
            conn: Some(conn),
            stage: 0,
            pending: 0,
            children: Children::None,
            deadline: NEVER,
            req_deadline: NEVER,
            limited: false,
            inflight: 0,
            cache: CacheRole::None,
        }));
        if self.admit(job, replica).is_none() {
            // Vanished: a connect into a blackhole fails.
            self.observe_replica(conn.edge, conn.instance, replica, true);
            let f = Outcome::Failed(Failure::new(Cause::Connection));
            self.connect_done(conn, f);
        }
    }

    /// Job `job` (just made) reaches `replica`: its server takes it, or
    /// turns it away. `None` when it was a connect that vanished.
    fn admit(&mut self, job: JobId, replica: ReplicaId) -> Option<JobId> {
        let now = self.q.now();
        let s = self.job(job).service;
        let focus = s == self.topo.focus();
        let jm = self.job_mut(job);
        jm.replica = replica;
        if jm.conn.is_none() {
            jm.awaited = true;
            self.awaited[replica.index()] += 1;
        }
        self.rec.replica_arrival(replica.index());
        let cfg = self.topo.service(s);
        let admission = self.servers[replica.index()].admit(cfg, &mut self.incident_rng[s.index()]);
        // The adaptive limit sees what the replica would take in (or shed
        // from a full queue); not a pool's connect.
        let asks = matches!(
            admission,
            Admission::Start | Admission::Queue | Admission::Shed
        ) && self.job(job).conn.is_none();
        if admission == Admission::Queue && self.job(job).conn.is_none() {
            let class = self.job(job).class;
            let cfg = self.topo.service(s);
            if cfg
                .shed_by_priority
                .sheds(class, self.servers[replica.index()].queued)
            {
                self.event(now, replica, ServiceEvent::Shed);
                if focus {
                    self.rec.shed(now);
                }
                self.rec.class_shed_attempt(class);
                let f = Failure {
                    cause: Cause::Status(cfg.shed_status),
                    retry_after: cfg.shed_retry_after,
                    by_priority: true,
                };
                self.respond(job, Outcome::Failed(f), 0);
                return Some(job);
            }
        }
        let enters = admission != Admission::Shed;
        if asks && self.limit_blocks(replica, job, enters) {
            self.event(now, replica, ServiceEvent::Limited);
            if focus {
                self.rec.shed(now);
            }
            self.respond(job, Outcome::Failed(Failure::new(Cause::Status(503))), 0);
            return Some(job);
        }
        let cfg = self.topo.service(s);
        match admission {
            Admission::Refused => {
                self.event(now, replica, ServiceEvent::Refused);
                self.respond(job, Outcome::Failed(Failure::new(Cause::Connection)), 0);
            }
            Admission::Vanished => {
                self.event(now, replica, ServiceEvent::Vanished);
                if focus {
                    self.rec.blackholed(now);
                }
                // Its caller learns only when it gives up: until then the
                // request stays, lost, in its caller's round.
                if self.job(job).conn.is_some() {
                    self.finish_job(job);
                    return None;
                }
                self.job_mut(job).state = JobState::Vanished;
            }
            Admission::Error(status) => {
                self.event(now, replica, ServiceEvent::Error);
                self.respond(job, Outcome::Failed(Failure::new(Cause::Status(status))), 0);
            }
            Admission::Start => self.start_service(job),
            Admission::Queue => {
                let server = &mut self.servers[replica.index()];
                server.queue.push_back(job);
                server.queued += 1;
                self.sync_gauges(replica);
            }
            Admission::Shed => {
                self.event(now, replica, ServiceEvent::Shed);
                if focus {
                    self.rec.shed(now);
                }
                let f = Failure {
                    cause: Cause::Status(cfg.shed_status),
                    retry_after: cfg.shed_retry_after,
                    by_priority: false,
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
            self.observe_answer(&j, j.outcome);
            if let Some(conn) = j.conn {
                return self.connect_done(conn, j.outcome);
            }
            self.deliver(j.caller, j.caller_epoch, j.outcome);
        }
    }

    /// `job`'s caller no longer waits for it (answered, or given up on):
    /// its replica has one request fewer in flight.
    pub(super) fn unawait(&mut self, job: JobId) {
        let j = self.job_mut(job);
        if std::mem::take(&mut j.awaited) {
            let r = j.replica.index();
            self.awaited[r] -= 1;
        }
    }

    pub(super) fn finish_job(&mut self, job: JobId) {
        self.unawait(job);
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
        let deduped =
            !j.probe && cfg.dedupe && cfg.side_effects.writes() && self.store(s).committed(j.req);
        let replica = j.replica;
        let server = &self.servers[replica.index()];
        let base = if let Some(conn) = j.conn {
            let pool = self.topo.edge(conn.edge).policy.pool;
            Some(pool.map_or(1, |p| p.connect.max(1)))
        } else if j.probe || deduped {
            Some(cfg.dedupe_cost.max(1))
        } else {
            cfg.service.map(|d| d.sample(&mut self.work_rng[s.index()]))
        };
        let mut factor = server.capacity_factor(cfg, now);
        // Slowdown: u counts this request's worker too.
        if let (Some(curve), Some(workers)) = (cfg.slowdown, cfg.concurrency) {
            factor /= curve.stretch(f64::from(server.busy + 1) / f64::from(workers.max(1)));
        }
        let work = base.map(|base| {
            if factor == 1.0 {
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
        let server = &mut self.servers[replica.index()];
        server.busy += 1;
        server.in_service += 1;
        self.sync_gauges(replica);
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

    /// A worker of `r`, taken at `started`, is given back.
    fn worker_freed(&mut self, r: ReplicaId, started: Nanos) {
        let now = self.q.now();
        self.servers[r.index()].busy -= 1;
        let (s, _) = self.topo.replica_of(r);
        self.rec.worker_released(now, s.index(), now - started);
    }

    /// `job` leaves its service's inside (answered, dropped, cancelled or
    /// lost): its time inside counts for Little's law.
    /// `dropped`: whether it failed; `None` when its caller cancelled it
    /// (what its replica's adaptive limit learns from it).
    fn left(&mut self, job: JobId, dropped: Option<bool>) {
        let j = self.job(job);
        let sojourn = self.q.now() - j.arrived;
        self.rec.service_left(j.service.index(), sojourn);
        self.limit_left(job, dropped);
    }

    /// Replica `r`'s levels changed: its service's gauges follow (the sums
    /// over its replicas, kept by difference).
    fn sync_gauges(&mut self, r: ReplicaId) {
        let now = self.q.now();
        let (s, _) = self.topo.replica_of(r);
        let server = &self.servers[r.index()];
        let new = [server.queued, server.busy, server.inside()];
        let old = std::mem::replace(&mut self.synced[r.index()], new);
        let total = &mut self.totals[s.index()];
        for k in 0..3 {
            total[k] = total[k] + new[k] - old[k];
        }
        let [q, b, i] = *total;
        self.rec.replica_inside(r.index(), new[2]);
        if s == self.topo.focus() {
            self.rec.queue.set(now, q as u64);
            self.rec.busy.set(now, b as u64);
        }
        self.rec
            .service_levels(now, s.index(), q as u64, b as u64, i as u64);
        if self.autoscalers[s.index()].is_some() {
            self.busy_changed(r, i64::from(new[1]) - i64::from(old[1]));
        }
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
        let r = j.replica;
        let mut has_calls = !self.topo.stages(s).is_empty() && !j.probe && j.conn.is_none();
        // A cache answers a hit itself; a request that joins a miss in
        // flight waits for it as for its calls.
        let mut joined = false;
        if has_calls {
            match self.cache_lookup(job) {
                Some(Lookup::Hit) => has_calls = false,
                Some(Lookup::Joined) => joined = true,
                _ => {}
            }
        }
        let releases = !has_calls || !self.topo.service(s).hold_worker;
        self.servers[r.index()].in_service -= 1;
        if !has_calls {
            self.left(job, Some(j.poison));
        }
        self.event(now, r, ServiceEvent::Served);
        if releases {
            self.worker_freed(r, j.started);
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
            self.servers[r.index()].calling += 1;
            if releases {
                self.start_next_queued(r);
            }
            self.sync_gauges(r);
            self.job_mut(job).state = JobState::Calling;
            if joined {
                return;
            }
            return self.start_stage(job, 0);
        }
        let outcome = if j.conn.is_some() {
            Outcome::Success
        } else if j.probe {
            // Success means "it committed"; 404 means "not found".
            if self.store(s).committed(j.req) {
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
        self.start_next_queued(r);
        self.sync_gauges(r);
        let add = self.servers[r.index()].latency_add();
        if add > 0 || outcome != Outcome::Success || !now_ok || j.conn.is_some() {
            self.respond(job, outcome, add);
        } else {
            self.finish_job(job);
            self.observe_answer(&j, Outcome::Success);
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
                class: j.class,
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
    pub(super) fn job_finished(&mut self, job: JobId, outcome: Outcome) {
        let j = *self.job(job);
        let r = j.replica;
        self.abandon_job_calls(job, None);
        self.servers[r.index()].calling -= 1;
        self.left(job, Some(outcome != Outcome::Success));
        if j.holds_worker {
            self.worker_freed(r, j.started);
            self.job_mut(job).holds_worker = false;
            self.start_next_queued(r);
        }
        self.sync_gauges(r);
        let add = self.servers[r.index()].latency_add();
        self.respond(job, outcome, add);
        self.cache_miss_done(&j, outcome);
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
        let store = self.topo.replica(j.service, 0);
        let Some(count) = self.servers[store.index()].commits.get_mut(j.req as usize) else {
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

    fn start_next_queued(&mut self, r: ReplicaId) {
        let (s, _) = self.topo.replica_of(r);
        let cfg = self.topo.service(s);
        while self.servers[r.index()].has_free_worker(cfg) {
            let server = &mut self.servers[r.index()];
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
            self.servers[r.index()].queued -= 1;
            let now = self.q.now();
            let waited = now - self.job(job).arrived;
            if cfg.queue_timeout.is_some_and(|qt| waited > qt) {
                if s == self.topo.focus() {
                    self.rec.queue_timeout(now);
                }
                self.event(now, r, ServiceEvent::QueueTimeout);
                self.left(job, Some(true));
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
        let (s, r) = (j.service, j.replica);
        match j.state {
            JobState::Queued => {
                self.left(job, None);
                self.job_mut(job).state = JobState::Cancelled;
                self.servers[r.index()].queued -= 1;
                self.rec.cancelled(now, 0);
                self.event(now, r, ServiceEvent::Cancelled);
                self.sync_gauges(r);
            }
            JobState::InService if self.topo.service(s).stop_on_cancel => {
                self.left(job, None);
                self.worker_freed(r, j.started);
                self.servers[r.index()].in_service -= 1;
                self.rec.cancelled(now, now - j.started);
                self.event(now, r, ServiceEvent::Cancelled);
                self.finish_job(job);
                self.start_next_queued(r);
                self.sync_gauges(r);
            }
            JobState::InService => {
                if j.orphaned_by.is_none() {
                    self.job_mut(job).orphaned_by = Some(by);
                }
            }
            JobState::Calling => {
                self.left(job, None);
                self.abandon_job_calls(job, Some(by));
                self.servers[r.index()].calling -= 1;
                if j.holds_worker {
                    self.worker_freed(r, j.started);
                }
                self.rec.cancelled(now, 0);
                self.finish_job(job);
                if j.holds_worker {
                    self.start_next_queued(r);
                }
                self.sync_gauges(r);
                // A miss cancelled: those waiting for it fail.
                let f = Outcome::Failed(Failure::new(Cause::Status(503)));
                self.cache_miss_done(&j, f);
            }
            // Its answer is on the way and will find nobody waiting.
            JobState::Responding => {
                if j.committed && j.orphaned_by.is_none() {
                    self.job_mut(job).orphaned_by = Some(by);
                    self.rec.ambiguous(now);
                }
            }
            JobState::Vanished => self.finish_job(job),
            JobState::Cancelled | JobState::Done => {}
        }
    }

    /// `job`'s caller gave up on it (on behalf of `edge`): it and its
    /// calls run on as orphaned work.
    pub(super) fn orphan_job(&mut self, job: JobId, edge: EdgeId) {
        let j = *self.job(job);
        if j.state == JobState::Vanished {
            // Nobody waits for a lost request any more.
            return self.finish_job(job);
        }
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
        if inc.effect == Effect::Flush {
            return self.cache_flush(s, starts);
        }
        let now = self.q.now();
        for k in 0..self.topo.replica_count(s) {
            if !inc.hits(k) {
                continue;
            }
            let r = self.topo.replica(s, k);
            if self.servers[r.index()].on_incident(inc.effect, starts, now) {
                self.drop_connections(s, r);
                self.reset_all_work(r);
            }
        }
    }

    /// Replica `r` crashed: everything queued, in service or waiting for
    /// its calls fails with a connection reset (the calls run on,
    /// orphaned).
    fn reset_all_work(&mut self, r: ReplicaId) {
        let now = self.q.now();
        let queued: Vec<JobId> = self.servers[r.index()].queue.drain(..).collect();
        self.servers[r.index()].queued = 0;
        let reset = Outcome::Failed(Failure::new(Cause::Connection));
        for job in queued {
            if self.job(job).state == JobState::Cancelled {
                self.finish_job(job);
            } else {
                self.event(now, r, ServiceEvent::Reset);
                self.left(job, Some(true));
                self.respond(job, reset, 0);
            }
        }
        let ids: Vec<u32> = self.jobs.iter_ids().collect();
        for id in ids {
            let job = JobId(id);
            let j = *self.job(job);
            if j.replica != r {
                continue;
            }
            match j.state {
                JobState::InService => {
                    self.worker_freed(r, j.started);
                    self.servers[r.index()].in_service -= 1;
                    self.event(now, r, ServiceEvent::Reset);
                    self.left(job, Some(true));
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
                    self.servers[r.index()].calling -= 1;
                    if j.holds_worker {
                        self.worker_freed(r, j.started);
                    }
                    self.left(job, Some(true));
                    let jm = self.job_mut(job);
                    jm.children = Children::None;
                    jm.holds_worker = false;
                    jm.epoch = jm.epoch.wrapping_add(1);
                    self.respond(job, reset, 0);
                    self.cache_miss_done(&j, reset);
                }
                _ => {}
            }
        }
        self.sync_gauges(r);
    }

    // ----------------------------------------------------------- replicas

    /// The server that keeps service `s`'s commits (its first replica's:
    /// the replicas share one store).
    fn store(&self, s: ServiceId) -> &Server<JobId> {
        &self.servers[self.topo.replica(s, 0).index()]
    }

    /// Counts `what` for replica `r` and its service.
    fn event(&mut self, now: Nanos, r: ReplicaId, what: ServiceEvent) {
        let (s, _) = self.topo.replica_of(r);
        self.rec.service_event(now, s.index(), what);
        self.rec.replica_event(r.index(), what);
    }

    /// The replica of `s` a request of call `caller` goes to: the service's
    /// balancer picks among the replicas the caller's edge has not ejected
    /// and, with `retry_other_replica`, this call has not tried yet; when
    /// none is left, among those not ejected; when all are, among all.
    fn pick_replica(&mut self, s: ServiceId, caller: CallId) -> ReplicaId {
        if self.topo.replica_count(s) <= 1 {
            return self.topo.replica(s, 0);
        }
        let c = self.calls.get(caller.0);
        let edge = c.edge;
        let policy = &self.topo.edge(edge).policy;
        let avoid = if policy.retry_other_replica {
            c.tried
        } else {
            0
        };
        let retry_other = policy.retry_other_replica;
        let pick = self.pick_among(s, edge, c.instance, avoid);
        if retry_other && pick < 64 {
            self.calls.get_mut(caller.0).tried |= 1u64 << pick;
        }
        self.topo.replica(s, pick)
    }

    /// The index of the replica of `s` the balancer picks for a request
    /// on `edge`: among those the edge has not ejected and not in `avoid`
    /// (bit k: replica k); when none is left, among those not ejected;
    /// when all are, among all.
    pub(super) fn pick_among(
        &mut self,
        s: ServiceId,
        edge: EdgeId,
        instance: u32,
        avoid: u64,
    ) -> u32 {
        let n = self.topo.replica_count(s);
        if n <= 1 {
            return 0;
        }
        let now = self.q.now();
        let hosts = self.outliers[edge.index()].get(instance);
        let ejected = |r: u32| hosts.get(r as usize).is_some_and(|h| h.ejected(now));
        let tried = |r: u32| r < 64 && avoid & (1u64 << r) != 0;
        // Only serving replicas (an autoscaled service's others are off,
        // provisioning or draining); at least one always serves.
        let first = self.topo.replica(s, 0).0;
        let serving = |r: u32| self.servers[(first + r) as usize].phase == Phase::Serving;
        let level = if (0..n).any(|r| serving(r) && !ejected(r) && !tried(r)) {
            0
        } else if (0..n).any(|r| serving(r) && !ejected(r)) {
            1
        } else {
            2
        };
        let awaited = &self.awaited;
        self.topo.service(s).balancer.pick(
            n,
            &mut self.balancers[s.index()],
            &mut self.balance_rng[s.index()],
            |r| match level {
                0 => !ejected(r) && !tried(r),
                1 => !ejected(r),
                _ => true,
            } && serving(r),
            |r| awaited[(first + r) as usize],
        )
    }

    /// An answer of `j`'s replica reaches its caller: the caller's edge's
    /// outlier detection counts it, unless the caller has moved on. As
    /// Envoy does when it does not split local-origin errors from the
    /// upstream's (`split_external_local_origin_errors: false`, its
    /// default; `DetectorHostMonitorImpl::putResultNoLocalExternalSplit`
    /// in source/common/upstream/outlier_detection_impl.cc), every failure
    /// counts as a 5xx but a status below 500: a connection refused
    /// (mapped to 503), a timeout or deadline from below (504). A pooled
    /// connection that fails to connect counts too (503); one that
    /// connects says nothing (Envoy maps `LocalOriginConnectSuccess` to
    /// no status at all).
    fn observe_answer(&mut self, j: &Job, outcome: Outcome) {
        if let Some(conn) = j.conn {
            if outcome != Outcome::Success {
                self.observe_replica(conn.edge, conn.instance, j.replica, true);
            }
            return;
        }
        let c = self.calls.get(j.caller.0);
        if c.epoch != j.caller_epoch || j.probe {
            return;
        }
        let failed = match outcome {
            Outcome::Success => false,
            Outcome::Failed(f) => match f.cause {
                Cause::Status(status) => status >= 500,
                _ => true,
            },
        };
        self.observe_replica(c.edge, c.instance, j.replica, failed);
    }

    /// The caller's timeout fired while `j` was still out: Envoy reports
    /// `LocalOriginTimeout` for the host of the attempt (router.cc, on a
    /// per-try or a global timeout), which counts as a 504.
    pub(super) fn observe_timed_out(&mut self, j: &Job) {
        if j.conn.is_some() || j.probe {
            return;
        }
        let c = self.calls.get(j.caller.0);
        self.observe_replica(c.edge, c.instance, j.replica, true);
    }

    /// Caller `instance` of `edge` saw an answer (or a timeout) of
    /// `replica`: one more or one fewer failure in a row, and perhaps an
    /// ejection.
    pub(super) fn observe_replica(
        &mut self,
        edge: EdgeId,
        instance: u32,
        replica: ReplicaId,
        failed: bool,
    ) {
        let Some(cfg) = self.topo.edge(edge).policy.outlier else {
            return;
        };
        let (_, k) = self.topo.replica_of(replica);
        let now = self.q.now();
        let hosts = self.outliers[edge.index()].get_mut(instance);
        if cfg.observe(hosts, k as usize, failed, now) {
            self.rec.replica_ejected(replica.index());
        }
    }
}
