//! Fleets that change: an autoscaled service's replicas come and go. Its
//! `max` replicas exist from the start; the first `initial` serve, the
//! others are off. Every `interval` its autoscaler (`model::autoscale`)
//! decides how many it wants:
//!
//! - more: replicas that are off start provisioning (the lowest first) and
//!   serve `provision` later (a `ReplicaReady` event). A replica still
//!   draining keeps its slot: when every slot is taken the autoscaler asks
//!   again at its next decision;
//! - fewer: replicas still provisioning are stopped first (the most
//!   recently asked for, as a ReplicaSet deletes pods not yet ready
//!   first), then serving replicas drain, the highest first: the balancer
//!   sends them nothing new, they finish what they hold (queued, in
//!   service, waiting for their calls), then go off. No request is lost.
//!
//! The autoscaler's metric is the busy workers of the serving replicas,
//! kept by difference as the replicas' gauges are synced; a replica that
//! started serving after the last decision (`serving_since`) is kept apart
//! until the next one, as it has no full sample yet.

use super::super::server::Phase;
use super::super::topology::{ReplicaId, ServiceId};
use super::{Event, JobState, World};

impl World<'_> {
    /// Sets every autoscaled service's fleet at its initial size and
    /// schedules its first decision.
    pub(super) fn start_fleets(&mut self) {
        for s in 0..self.autoscalers.len() {
            let Some(cfg) = self.autoscalers[s].as_ref().map(|a| *a.config()) else {
                continue;
            };
            let sid = ServiceId(s as u16);
            let workers = self.topo.service(sid).concurrency.unwrap_or(0);
            let n = self.topo.replica_count(sid);
            for k in 0..n {
                let r = self.topo.replica(sid, k);
                if k >= cfg.initial {
                    self.servers[r.index()].phase = Phase::Off;
                }
            }
            let serving = cfg.initial.min(n);
            if let Some(a) = self.autoscalers[s].as_mut() {
                a.level(0, 0, i64::from(serving) * i64::from(workers), false);
            }
            self.rec.autoscaled(s);
            self.rec.scale_levels(0, s, serving, serving, serving);
            if cfg.interval < self.cfg.duration {
                self.q.schedule_at(cfg.interval, Event::Autoscale(s as u16));
            }
        }
    }

    /// Replicas of `s` in `phase`.
    fn in_phase(&self, s: ServiceId, phase: Phase) -> u32 {
        (0..self.topo.replica_count(s))
            .filter(|&k| self.servers[self.topo.replica(s, k).index()].phase == phase)
            .count() as u32
    }

    pub(super) fn on_autoscale(&mut self, s: ServiceId) {
        let now = self.q.now();
        let serving = self.in_phase(s, Phase::Serving);
        let provisioning = self.in_phase(s, Phase::Provisioning);
        let current = serving + provisioning;
        let Some(last) = self.autoscalers[s.index()]
            .as_ref()
            .map(|a| a.last_decision())
        else {
            return;
        };
        let fresh = (0..self.topo.replica_count(s))
            .map(|k| self.topo.replica(s, k).index())
            .filter(|&r| self.servers[r].phase == Phase::Serving && self.serving_since[r] > last)
            .count() as u32;
        let Some(a) = self.autoscalers[s.index()].as_mut() else {
            return;
        };
        let cfg = *a.config();
        let desired = a.decide(now, current, serving, fresh);
        let n = self.topo.replica_count(s);
        if desired > current {
            let mut add = desired - current;
            for k in 0..n {
                if add == 0 {
                    break;
                }
                let r = self.topo.replica(s, k);
                if self.servers[r.index()].phase != Phase::Off {
                    continue;
                }
                add -= 1;
                self.servers[r.index()].phase = Phase::Provisioning;
                if cfg.provision == 0 {
                    self.make_serving(r);
                } else {
                    let t = self.q.schedule_in(cfg.provision, Event::ReplicaReady(r.0));
                    self.ready_timers[r.index()] = Some(t);
                }
            }
        } else if desired < current {
            let mut drop = current - desired;
            for phase in [Phase::Provisioning, Phase::Serving] {
                for k in (0..n).rev() {
                    if drop == 0 {
                        break;
                    }
                    let r = self.topo.replica(s, k);
                    if self.servers[r.index()].phase != phase {
                        continue;
                    }
                    drop -= 1;
                    if phase == Phase::Provisioning {
                        if let Some(t) = self.ready_timers[r.index()].take() {
                            self.q.cancel(t);
                        }
                        self.servers[r.index()].phase = Phase::Off;
                    } else {
                        self.start_drain(r);
                    }
                }
            }
        }
        self.record_levels(s, desired);
        let next = now.saturating_add(cfg.interval);
        if next < self.cfg.duration {
            self.q.schedule_at(next, Event::Autoscale(s.0));
        }
    }

    pub(super) fn on_replica_ready(&mut self, r: ReplicaId) {
        self.ready_timers[r.index()] = None;
        if self.servers[r.index()].phase == Phase::Provisioning {
            self.make_serving(r);
            let (s, _) = self.topo.replica_of(r);
            self.record_levels(s, self.desired_now(s));
        }
    }

    /// The replicas `s`'s autoscaler wants now (its serving ones when it
    /// has none recorded).
    fn desired_now(&self, s: ServiceId) -> u32 {
        self.rec
            .svc
            .scaled
            .get(s.index())
            .and_then(Option::as_ref)
            .map_or_else(|| self.in_phase(s, Phase::Serving), |l| l.desired())
    }

    /// Records `s`'s replicas serving, serving or draining, and `desired`
    /// from now on.
    fn record_levels(&mut self, s: ServiceId, desired: u32) {
        let serving = self.in_phase(s, Phase::Serving);
        let working = serving + self.in_phase(s, Phase::Draining);
        self.rec
            .scale_levels(self.q.now(), s.index(), serving, working, desired);
    }

    /// Replica `r` starts serving: its workers count for its autoscaler.
    fn make_serving(&mut self, r: ReplicaId) {
        let now = self.q.now();
        let (s, _) = self.topo.replica_of(r);
        let server = &mut self.servers[r.index()];
        server.phase = Phase::Serving;
        let busy = i64::from(server.busy);
        let workers = i64::from(self.topo.service(s).concurrency.unwrap_or(0));
        self.serving_since[r.index()] = now;
        if let Some(a) = self.autoscalers[s.index()].as_mut() {
            let fresh = now > a.last_decision();
            a.level(now, busy, workers, fresh);
        }
    }

    /// Replica `r` stops receiving requests and finishes what it holds.
    fn start_drain(&mut self, r: ReplicaId) {
        let now = self.q.now();
        let (s, _) = self.topo.replica_of(r);
        let server = &mut self.servers[r.index()];
        server.phase = Phase::Draining;
        let busy = i64::from(server.busy);
        let workers = i64::from(self.topo.service(s).concurrency.unwrap_or(0));
        let since = self.serving_since[r.index()];
        if let Some(a) = self.autoscalers[s.index()].as_mut() {
            let fresh = since > a.last_decision();
            a.level(now, -busy, -workers, fresh);
        }
        self.drained_if_empty(r);
    }

    /// A draining replica that holds nothing goes off (requests cancelled
    /// while queued are dropped with it).
    pub(super) fn drained_if_empty(&mut self, r: ReplicaId) {
        let server = &self.servers[r.index()];
        if server.phase != Phase::Draining || server.inside() > 0 {
            return;
        }
        while let Some(job) = self.servers[r.index()].queue.pop_front() {
            debug_assert_eq!(self.jobs.get(job.0).state, JobState::Cancelled);
            self.finish_job(job);
        }
        self.servers[r.index()].phase = Phase::Off;
        let (s, _) = self.topo.replica_of(r);
        self.record_levels(s, self.desired_now(s));
    }

    /// Replica `r`'s busy workers changed by `delta`: its autoscaler's
    /// metric follows while it serves.
    pub(super) fn busy_changed(&mut self, r: ReplicaId, delta: i64) {
        let (s, _) = self.topo.replica_of(r);
        let Some(a) = self.autoscalers[s.index()].as_mut() else {
            return;
        };
        if self.servers[r.index()].phase == Phase::Serving {
            let fresh = self.serving_since[r.index()] > a.last_decision();
            a.level(self.q.now(), delta, 0, fresh);
        }
        self.drained_if_empty(r);
    }
}
