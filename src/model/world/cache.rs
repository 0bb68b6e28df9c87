//! Caches on services (`model::cache`): where a job's own work is done, a
//! service with a cache looks up the key its request asks for. A hit is
//! answered at once, as a leaf's request is; a miss makes the service's
//! calls, and its success fills the cache; with coalescing, a request for
//! a key whose miss is in flight waits for that miss (it holds its worker
//! as a request waiting for its calls does) and gets its outcome.
//!
//! The key of a request is drawn from a stream of its own (purpose
//! `CacheKeys`, index: the service and the logical request), so every
//! attempt of a logical request, a retry or a hedge, asks for the same key,
//! and two policies run under one seed ask for the same keys.

use crate::engine::{Purpose, Stream, derive_seed};
use crate::metrics::recorder::CacheLookup;

use super::super::cache::Lookup;
use super::super::outcome::Outcome;
use super::super::topology::ServiceId;
use super::{Job, JobId, JobState, World};

/// What a job is to its service's cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CacheRole {
    /// No lookup (no cache, or not looked up yet).
    None,
    /// A miss for `key`, sent to the calls; `leads` its flight (others
    /// may wait for it).
    Miss { key: u32, leads: bool },
    /// Waits for the key's miss in flight.
    Joined,
}

impl World<'_> {
    /// Makes the recorder count the lookups of every service with a cache.
    pub(super) fn start_caches(&mut self) {
        for s in 0..self.caches.len() {
            if self.caches[s].is_some() {
                self.rec.cached(s);
            }
        }
    }

    /// `job`'s own work is done at a service with a cache: the lookup of
    /// its key (`None`: no cache, or a request that looks nothing up).
    pub(super) fn cache_lookup(&mut self, job: JobId) -> Option<Lookup> {
        let j = *self.job(job);
        if j.probe || j.conn.is_some() || j.poison {
            return None;
        }
        let s = j.service;
        let cache = self.caches[s.index()].as_mut()?;
        let mut rng = Stream::new(
            self.run_seed,
            Purpose::CacheKeys,
            derive_seed(&[s.index() as u64, j.req]),
        );
        let key = cache.draw_key(&mut rng);
        let now = self.q.now();
        let found = cache.lookup(key, now, (job, j.epoch));
        let (role, what) = match found {
            Lookup::Hit => (CacheRole::None, CacheLookup::Hit),
            Lookup::Miss { leads } => (CacheRole::Miss { key, leads }, CacheLookup::Miss),
            Lookup::Joined => (CacheRole::Joined, CacheLookup::Coalesced),
        };
        self.job_mut(job).cache = role;
        self.rec.cache_lookup(now, s.index(), what);
        Some(found)
    }

    /// Miss `j` ended with `outcome` (answered, or failed: cancelled or
    /// reset): a success fills the cache; the requests waiting for it get
    /// its outcome.
    pub(super) fn cache_miss_done(&mut self, j: &Job, outcome: Outcome) {
        let CacheRole::Miss { key, leads } = j.cache else {
            return;
        };
        let s = j.service;
        let now = self.q.now();
        let Some(cache) = self.caches[s.index()].as_mut() else {
            return;
        };
        if outcome == Outcome::Success {
            cache.fill(key, now);
        }
        if !leads {
            return;
        }
        let Some(flight) = cache.land(key) else {
            return;
        };
        while let Some((waiter, epoch)) = self.pop_waiter(s, flight) {
            let w = self.job(waiter);
            // A waiter cancelled since is gone (its slot may be reused).
            if w.epoch == epoch && w.state == JobState::Calling && w.cache == CacheRole::Joined {
                self.job_finished(waiter, outcome);
            }
        }
    }

    fn pop_waiter(
        &mut self,
        s: ServiceId,
        flight: super::super::cache::FlightId,
    ) -> Option<(JobId, u32)> {
        self.caches[s.index()].as_mut()?.pop_waiter(flight)
    }

    /// A flush of service `s`'s cache starts or ends.
    pub(super) fn cache_flush(&mut self, s: ServiceId, starts: bool) {
        if let Some(c) = self.caches[s.index()].as_mut() {
            c.flush(starts);
        }
    }
}
