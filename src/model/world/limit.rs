//! Adaptive concurrency limits on the replicas of a service
//! (`model::adaptive`): each replica has its own limiter, as each Envoy
//! sidecar runs its own filter. A request the replica would take in (start
//! or queue) is forwarded while fewer than the limit are outstanding, and
//! rejected at once with a 503 otherwise; a forwarded request is
//! outstanding until it leaves the replica, and then, unless its caller
//! cancelled it, a sample of the limiter. Requests the replica turns away
//! on its own (down, blackholed, an error burst) never reach the limiter;
//! a full queue sheds only what the limit let through. Connects of a pool
//! are not requests and bypass it.

use crate::engine::{Nanos, Stream};

use super::super::adaptive::{AdaptiveConfig, Limiter, Sample};
use super::super::topology::{ReplicaId, ServiceId};
use super::{JobId, World};

/// One replica's limiter and what it holds.
#[derive(Clone, Debug)]
pub(super) struct ReplicaLimit {
    limiter: Limiter,
    /// Requests forwarded and not yet left.
    outstanding: u32,
    /// The limit last recorded.
    recorded: u32,
    rng: Stream,
}

impl ReplicaLimit {
    pub(super) fn new(cfg: &AdaptiveConfig, mut rng: Stream) -> Self {
        let mut limiter = Limiter::new(cfg, 0, &mut rng);
        let recorded = limiter.limit(0);
        ReplicaLimit {
            limiter,
            outstanding: 0,
            recorded,
            rng,
        }
    }
}

impl World<'_> {
    /// Registers every limited service's limits with the recorder.
    pub(super) fn start_limits(&mut self) {
        for s in 0..self.topo.services().len() {
            let sid = ServiceId(s as u16);
            let n = self.topo.replica_count(sid);
            let first = self.topo.replica(sid, 0).index();
            if let Some(Some(l)) = self.limiters.get(first) {
                let initial = l.recorded;
                self.limit_sums[s] = u64::from(initial) * u64::from(n);
                self.rec.limited(s, n, initial);
            }
        }
    }

    /// Whether replica `r`'s limit turns away `job`, which it would take
    /// in when `enters`. A job let in and entering counts as outstanding.
    pub(super) fn limit_blocks(&mut self, r: ReplicaId, job: JobId, enters: bool) -> bool {
        let now = self.q.now();
        let Some(l) = self.limiters[r.index()].as_mut() else {
            return false;
        };
        let limit = l.limiter.limit(now);
        let blocked = l.outstanding >= limit;
        if !blocked && enters {
            l.outstanding += 1;
            let inflight = l.outstanding;
            let j = self.jobs.get_mut(job.0);
            j.limited = true;
            j.inflight = inflight;
        }
        self.limit_moved(r, now);
        blocked
    }

    /// `job` left its replica: no longer outstanding, and a sample unless
    /// `dropped` is `None` (its caller cancelled it).
    pub(super) fn limit_left(&mut self, job: JobId, dropped: Option<bool>) {
        let now = self.q.now();
        let j = self.jobs.get_mut(job.0);
        if !j.limited {
            return;
        }
        j.limited = false;
        let (r, start, inflight) = (j.replica, j.arrived, j.inflight);
        let Some(l) = self.limiters[r.index()].as_mut() else {
            return;
        };
        l.outstanding = l.outstanding.saturating_sub(1);
        if let Some(dropped) = dropped {
            let s = Sample {
                start,
                rtt: now.saturating_sub(start),
                inflight,
                dropped,
            };
            l.limiter.on_sample(now, s, &mut l.rng);
        }
        self.limit_moved(r, now);
    }

    /// Records replica `r`'s limit when it changed.
    fn limit_moved(&mut self, r: ReplicaId, now: Nanos) {
        let Some(l) = self.limiters[r.index()].as_mut() else {
            return;
        };
        let limit = l.limiter.limit(now);
        if limit == l.recorded {
            return;
        }
        let old = std::mem::replace(&mut l.recorded, limit);
        let (s, _) = self.topo.replica_of(r);
        let sum = &mut self.limit_sums[s.index()];
        *sum = *sum + u64::from(limit) - u64::from(old);
        let sum = *sum;
        self.rec.limit_levels(now, s.index(), sum);
    }
}
