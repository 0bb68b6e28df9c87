//! Outlier detection on a call edge: passive health checking that takes
//! a replica that keeps failing out of its caller's balancing for a while,
//! kept per caller instance (each caller replica is an Envoy with its own
//! detector per cluster: `Views`),
//! by Envoy's consecutive-5xx rule (envoyproxy.io, "Outlier detection",
//! arch_overview/upstream/outlier, and config.cluster.v3.OutlierDetection):
//!
//! - a replica whose answers on this edge are `consecutive_5xx` failures in
//!   a row is ejected at once, unless too many are ejected already: with
//!   none ejected it always is, else only while ejected × 100 < `max_ejection_percent` × replicas;
//! - it stays out for `base_ejection` × the times it has been ejected, at
//!   most `max_ejection` (Envoy: the larger of 300 s and the base), and
//!   comes back at the first analysis sweep (every `interval`, from time 0)
//!   once that time is over;
//! - each sweep it spends back in the pool lowers its ejection count by one
//!   (so a replica that stays healthy is forgiven);
//! - a success resets the run of failures; so does an ejection.
//!
//! Defaults (Envoy's): 5 failures, 10 s interval, 30 s base, 10 %, 300 s.
//!
//! What a failure is follows Envoy's default, which does not split
//! local-origin errors from the upstream's
//! (`split_external_local_origin_errors: false`;
//! `DetectorHostMonitorImpl::putResultNoLocalExternalSplit` in
//! source/common/upstream/outlier_detection_impl.cc maps them to statuses):
//! a 5xx, a refused connection or failed connect (503), a timeout (504:
//! the router reports `LocalOriginTimeout` on a per-try or global timeout,
//! also when the replica swallowed the request). The world decides which
//! answers are failures (`world::service`); this module counts them.
//!
//! Nothing here schedules events: whether a replica is out follows from
//! the time, and the sweeps are counted when they matter.

use crate::engine::{NS_PER_S, Nanos};

/// `outlier_detection` of a call edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutlierConfig {
    pub consecutive_5xx: u32,
    pub interval: Nanos,
    pub base_ejection: Nanos,
    pub max_ejection_percent: u32,
    pub max_ejection: Nanos,
}

impl Default for OutlierConfig {
    fn default() -> Self {
        OutlierConfig {
            consecutive_5xx: 5,
            interval: 10 * NS_PER_S,
            base_ejection: 30 * NS_PER_S,
            max_ejection_percent: 10,
            max_ejection: 300 * NS_PER_S,
        }
    }
}

/// What each caller instance of one edge (each caller replica: every
/// Envoy keeps its own outlier detector per cluster) knows of each replica
/// of the callee, made when the instance first answers.
#[derive(Clone, Debug, Default)]
pub struct Views {
    replicas: usize,
    of: Vec<Option<std::num::NonZeroU32>>,
    states: Vec<Vec<HostState>>,
}

impl Views {
    pub fn new(instances: u32, replicas: u32) -> Self {
        Views {
            replicas: replicas as usize,
            of: vec![None; instances.max(1) as usize],
            states: Vec::new(),
        }
    }

    /// What `instance` knows (empty: nothing yet, every replica in).
    pub fn get(&self, instance: u32) -> &[HostState] {
        if self.of.is_empty() {
            return &[];
        }
        match self.of[instance as usize % self.of.len()] {
            Some(k) => &self.states[k.get() as usize - 1],
            None => &[],
        }
    }

    pub fn get_mut(&mut self, instance: u32) -> &mut Vec<HostState> {
        let i = instance as usize % self.of.len();
        let k = match self.of[i] {
            Some(k) => k.get() as usize - 1,
            None => {
                self.states.push(vec![HostState::default(); self.replicas]);
                self.of[i] = std::num::NonZeroU32::new(self.states.len() as u32);
                self.states.len() - 1
            }
        };
        &mut self.states[k]
    }

    /// Whether some instance has replica `r` ejected at `now`.
    pub fn any_ejected(&self, r: usize, now: Nanos) -> bool {
        (self.states.iter()).any(|h| h.get(r).is_some_and(|h| h.ejected(now)))
    }

    /// Whether this edge has outlier detection.
    pub fn enabled(&self) -> bool {
        !self.of.is_empty()
    }
}

/// What one caller instance of an edge knows of one replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostState {
    /// Failures in a row since the last success or ejection.
    pub consecutive: u32,
    /// Times ejected, less the sweeps spent healthy since.
    pub times: u32,
    /// Out until this sweep (0: never ejected).
    pub until: Nanos,
    /// Ejections so far.
    pub ejections: u32,
}

impl HostState {
    #[inline]
    pub fn ejected(&self, now: Nanos) -> bool {
        now < self.until
    }
}

impl OutlierConfig {
    /// The first sweep at or after `t`.
    fn sweep_at_or_after(&self, t: Nanos) -> Nanos {
        let i = self.interval.max(1);
        t.div_ceil(i).saturating_mul(i)
    }

    /// How long the `times`-th ejection lasts.
    pub fn ejection_time(&self, times: u32) -> Nanos {
        let cap = self.max_ejection.max(self.base_ejection);
        self.base_ejection.saturating_mul(u64::from(times)).min(cap)
    }

    /// An answer of replica `r` reached the caller at `now` (`failed`: a
    /// 5xx or a connection error). Returns true when it ejects `r`.
    pub fn observe(&self, hosts: &mut [HostState], r: usize, failed: bool, now: Nanos) -> bool {
        let h = hosts[r];
        if !failed {
            hosts[r].consecutive = 0;
            return false;
        }
        if h.ejected(now) {
            // Answers still on their way when it was ejected.
            return false;
        }
        hosts[r].consecutive = h.consecutive.saturating_add(1);
        if hosts[r].consecutive < self.consecutive_5xx.max(1) {
            return false;
        }
        let out = hosts.iter().filter(|x| x.ejected(now)).count() as u64;
        if out > 0 && out * 100 >= u64::from(self.max_ejection_percent) * hosts.len() as u64 {
            return false;
        }
        let h = &mut hosts[r];
        if h.until > 0 {
            // Sweeps after the one that brought it back, up to now, each
            // forgave one ejection.
            let i = self.interval.max(1);
            let healthy_sweeps = (now / i).saturating_sub(h.until / i);
            h.times = h
                .times
                .saturating_sub(u32::try_from(healthy_sweeps).unwrap_or(u32::MAX));
        }
        h.times = h.times.saturating_add(1);
        h.ejections = h.ejections.saturating_add(1);
        h.consecutive = 0;
        h.until = self.sweep_at_or_after(now.saturating_add(self.ejection_time(h.times)));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NS_PER_S;

    #[test]
    fn ejects_after_exactly_the_run_of_failures_and_backs_off() {
        let c = OutlierConfig::default();
        let mut hosts = vec![HostState::default(); 3];
        let t = 12 * S;
        for k in 1..5 {
            assert!(!c.observe(&mut hosts, 0, true, t), "failure {k}");
        }
        // A success resets the run.
        assert!(!c.observe(&mut hosts, 0, false, t));
        for _ in 0..4 {
            assert!(!c.observe(&mut hosts, 0, true, t));
        }
        assert!(c.observe(&mut hosts, 0, true, t), "the fifth in a row");
        // 30 s from 12 s is 42 s; back at the sweep of 50 s.
        assert_eq!(hosts[0].until, 50 * S);
        assert!(hosts[0].ejected(49 * S) && !hosts[0].ejected(50 * S));
        // With one of three out (33 % ≥ 10 %), nobody else is ejected.
        for _ in 0..10 {
            assert!(!c.observe(&mut hosts, 1, true, t));
        }
        // Ejected again at once on return: twice the base (60 s).
        for _ in 0..5 {
            c.observe(&mut hosts, 0, true, 50 * S);
        }
        assert_eq!(hosts[0].until, 110 * S);
        assert_eq!((hosts[0].times, hosts[0].ejections), (2, 2));
        // Healthy for 3 sweeps after 110 s (120, 130, 140): forgiven down
        // to 0, so the next ejection lasts the base again.
        for _ in 0..5 {
            c.observe(&mut hosts, 0, true, 145 * S);
        }
        assert_eq!(hosts[0].times, 1);
        assert_eq!(hosts[0].until, 180 * S);
        // The time is capped.
        assert_eq!(c.ejection_time(50), 300 * S);
    }

    #[test]
    fn the_percentage_allows_more_in_a_large_pool() {
        let c = OutlierConfig {
            consecutive_5xx: 1,
            ..OutlierConfig::default()
        };
        let mut hosts = vec![HostState::default(); 20];
        assert!(c.observe(&mut hosts, 0, true, 0));
        assert!(c.observe(&mut hosts, 1, true, 0), "5 % < 10 %");
        assert!(!c.observe(&mut hosts, 2, true, 0), "10 % is the limit");
    }
}
