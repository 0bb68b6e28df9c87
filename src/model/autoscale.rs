//! Autoscaling: the Kubernetes Horizontal Pod Autoscaler's rule, as a
//! state machine that takes `now`. Every `interval` it looks at the mean
//! fraction of busy workers u of the replicas that served the whole time
//! since its last look (the sampled ones) and recommends
//! desired = ceil(sampled × u ÷ target); the world adds or drains replicas
//! to match (`world::fleet`).
//!
//! The rule and its defaults, from the Kubernetes documentation
//! ("Horizontal Pod Autoscaling", kubernetes.io/docs/tasks/run-application/
//! horizontal-pod-autoscale/, and the `autoscaling/v2` API reference of
//! `HPAScalingRules`), and the controller (kubernetes/kubernetes
//! `pkg/controller/podautoscaler/replica_calculator.go`: `groupPods` and
//! `GetResourceReplicas`; `horizontal.go`); what was read there is in
//! docs/sources/topology-and-configs.md §3.1:
//!
//! - desired = ceil(current × metric ÷ target), evaluated every sync
//!   period (`--horizontal-pod-autoscaler-sync-period`, default 15 s:
//!   `interval`);
//! - no change while the ratio metric ÷ target is within the tolerance of 1
//!   (`--horizontal-pod-autoscaler-tolerance`, default 0.1);
//! - only pods with a full sample count at their utilization. In
//!   `groupPods` a pod not yet ready, or (for CPU, within its
//!   initialization period, `--horizontal-pod-autoscaler-cpu-initialization-period`,
//!   default 5 min) one whose metric window does not lie wholly after its
//!   last readiness transition, is set aside (`ignoredPods`);
//!   `GetResourceReplicas` computes the ratio over the others, and when
//!   that ratio asks to scale up (above 1), it puts the set-aside pods
//!   back at 0% use and computes the ratio again over all of them; on a
//!   scale-down they stay out and the count is ceil(ratio × the others).
//!   Here the metric's window is the interval since the last decision, so
//!   a replica still provisioning, or one that started serving after the
//!   last decision (its sample is not a full window), is set aside the
//!   same way; upstream's `missingPods` (running, no metric at all) have
//!   no counterpart, as every serving replica is measured. So a replica that became
//!   ready a second before a decision is not counted at the old replicas'
//!   utilization, and the recommendation does not jump when `provision`
//!   moves across the decision grid. If the second ratio is within the
//!   tolerance, or reverses the direction, or its count would, the current
//!   count stays;
//! - scale-up: no stabilization window; at most the larger of +100% and
//!   +4 pods per 15 s (`HPAScalingRules.policies`: "allow doubling the
//!   number of pods, or an absolute change of 4 pods in a 15s window",
//!   `selectPolicy: Max`). The description of
//!   `HorizontalPodAutoscalerBehavior.scaleUp` still says "per 60 seconds";
//!   the policies' own documentation and the controller's defaults
//!   (`periodSeconds: 15`) are what runs;
//! - scale-down: the highest recommendation of the last 300 s is used
//!   (`stabilizationWindowSeconds` 300: `scale_in_delay`), then at most
//!   100% of the pods per 15 s (every pod may go);
//! - always within `min` and `max` (`minReplicas`, `maxReplicas`).
//!
//! A scale-up period starts from the count the period began with
//! (current − added + removed in the last 15 s), as the controller's
//! `calculateScaleUpLimitWithScalingRules` does. Memory: the histories
//! are ring buffers sized once from the windows and the interval, so a
//! decision allocates nothing.

use std::collections::VecDeque;

use crate::engine::{NS_PER_S, Nanos};

/// The HPA's default tolerance around the target (10%).
pub const TOLERANCE: f64 = 0.1;
/// The period of the default scale-up and scale-down policies (15 s).
pub const POLICY_PERIOD: Nanos = 15 * NS_PER_S;
/// Default scale-up policies: +100% or +4 pods per period, the larger.
pub const SCALE_UP_PERCENT: f64 = 100.0;
pub const SCALE_UP_PODS: u32 = 4;
/// Default scale-down policy: 100% of the pods per period.
pub const SCALE_DOWN_PERCENT: f64 = 100.0;

/// An autoscaled service's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoscaleConfig {
    /// The fraction of busy workers aimed at (0, 1].
    pub target: f64,
    pub min: u32,
    pub max: u32,
    /// Replicas serving at the start (within [min, max]).
    pub initial: u32,
    /// Time between decisions (> 0).
    pub interval: Nanos,
    /// From the decision that asks for a replica to the moment it serves.
    pub provision: Nanos,
    /// The scale-down stabilization window.
    pub scale_in_delay: Nanos,
}

/// The live state of one service's autoscaler.
#[derive(Clone, Debug)]
pub struct Autoscaler {
    cfg: AutoscaleConfig,
    /// Busy workers of the sampled replicas (serving since the last
    /// decision or before), and their workers, now; and their integrals
    /// since the last decision (worker × ns).
    busy: u32,
    workers: u32,
    since: Nanos,
    busy_area: u128,
    worker_area: u128,
    /// Busy workers and workers of the replicas that started serving after
    /// the last decision: no sample yet; they join the sampled ones at the
    /// next decision.
    fresh_busy: u32,
    fresh_workers: u32,
    /// When the last decision was taken (0 before the first).
    last_decision: Nanos,
    /// The recommendations within the scale-down window.
    recommendations: HighestWithin,
    /// Replicas added (positive) or removed (negative) by the decisions
    /// within the policy period that changed the count.
    changes: VecDeque<(Nanos, i64)>,
}

impl Autoscaler {
    pub fn new(cfg: AutoscaleConfig) -> Self {
        Autoscaler {
            cfg,
            busy: 0,
            workers: 0,
            since: 0,
            busy_area: 0,
            worker_area: 0,
            fresh_busy: 0,
            fresh_workers: 0,
            last_decision: 0,
            recommendations: HighestWithin::new(cfg.scale_in_delay),
            changes: VecDeque::new(),
        }
    }

    pub fn config(&self) -> &AutoscaleConfig {
        &self.cfg
    }

    fn advance(&mut self, now: Nanos) {
        let dt = now.saturating_sub(self.since) as u128;
        self.busy_area += self.busy as u128 * dt;
        self.worker_area += self.workers as u128 * dt;
        self.since = self.since.max(now);
    }

    /// When the last decision was taken: a replica that started serving
    /// later is fresh (no full sample yet).
    pub fn last_decision(&self) -> Nanos {
        self.last_decision
    }

    /// The serving replicas' busy workers change by `busy` and their
    /// workers by `workers` at `now`; `fresh`: of replicas that started
    /// serving after the last decision.
    pub fn level(&mut self, now: Nanos, busy: i64, workers: i64, fresh: bool) {
        let add = |v: u32, d: i64| (v as i64 + d).max(0) as u32;
        if fresh {
            self.fresh_busy = add(self.fresh_busy, busy);
            self.fresh_workers = add(self.fresh_workers, workers);
            return;
        }
        self.advance(now);
        self.busy = add(self.busy, busy);
        self.workers = add(self.workers, workers);
    }

    /// The mean fraction of busy workers of the serving replicas since the
    /// last decision (`None`: no worker served).
    fn utilization(&mut self, now: Nanos) -> Option<f64> {
        self.advance(now);
        let u = (self.worker_area > 0).then(|| self.busy_area as f64 / self.worker_area as f64);
        self.busy_area = 0;
        self.worker_area = 0;
        u
    }

    /// A decision at `now`: `current` replicas asked for (serving and
    /// provisioning), `ready` of them serving, `fresh` of those started
    /// serving after the last decision. Returns the desired count, and
    /// remembers it as a scale event.
    pub fn decide(&mut self, now: Nanos, current: u32, ready: u32, fresh: u32) -> u32 {
        let c = self.cfg;
        let u = self.utilization(now);
        // The fresh replicas have served a whole interval by the next
        // decision: they are sampled from now on.
        self.busy += std::mem::take(&mut self.fresh_busy);
        self.workers += std::mem::take(&mut self.fresh_workers);
        self.last_decision = now;
        let sampled = ready.saturating_sub(fresh);
        let raw = match u {
            Some(u) if sampled > 0 => {
                let ignored = current.saturating_sub(ready) + (ready - sampled);
                recommend(u / c.target, current, sampled, ignored)
            }
            _ => current,
        };
        let raw = raw.clamp(c.min, c.max);
        // Scale-down stabilization: the highest recommendation within the
        // window (this one included); scale-up has none.
        let down = self.recommendations.push(now, raw);
        let mut desired = current.max(raw).min(down);
        // Rate limits over the policy period.
        let cutoff = now.saturating_sub(POLICY_PERIOD);
        while self.changes.front().is_some_and(|&(t, _)| t <= cutoff) {
            self.changes.pop_front();
        }
        let added: i64 = self.changes.iter().map(|&(_, d)| d.max(0)).sum();
        let removed: i64 = self.changes.iter().map(|&(_, d)| (-d).max(0)).sum();
        if desired > current {
            let start = (current as i64 - added + removed).max(0) as f64;
            let limit = (start * (1.0 + SCALE_UP_PERCENT / 100.0))
                .ceil()
                .max(start + SCALE_UP_PODS as f64);
            desired = (desired as f64).min(limit) as u32;
        } else if desired < current {
            let start = (current as i64 + removed - added).max(0) as f64;
            let limit = (start * (1.0 - SCALE_DOWN_PERCENT / 100.0))
                .floor()
                .max(0.0);
            desired = (desired as f64).max(limit) as u32;
        }
        let desired = desired.clamp(c.min, c.max);
        if desired != current {
            self.changes
                .push_back((now, desired as i64 - current as i64));
        }
        desired
    }
}

/// The highest of the values pushed within the last `window` (the
/// current one included; one pushed at `now - window` or earlier is out),
/// kept as a monotonic queue: each value kept is above every later one,
/// so the highest is the front's, and it holds at most one entry per
/// distinct value, however many the window spans (the HPA keeps every
/// recommendation of the window and takes their maximum: the same value).
#[derive(Clone, Debug)]
struct HighestWithin {
    window: Nanos,
    kept: VecDeque<(Nanos, u32)>,
}

impl HighestWithin {
    fn new(window: Nanos) -> Self {
        HighestWithin {
            window,
            kept: VecDeque::new(),
        }
    }

    /// Pushes `value` at `now` (not before the last push) and returns the
    /// highest within the window.
    fn push(&mut self, now: Nanos, value: u32) -> u32 {
        let cutoff = now.saturating_sub(self.window);
        while self.kept.front().is_some_and(|&(t, _)| t <= cutoff) {
            self.kept.pop_front();
        }
        // A value at or below this one can never be the highest again: it
        // leaves the window first.
        while self.kept.back().is_some_and(|&(_, v)| v <= value) {
            self.kept.pop_back();
        }
        self.kept.push_back((now, value));
        self.kept.front().map_or(value, |&(_, v)| v)
    }
}

/// The replica calculator's recommendation: `ratio` = utilization ÷
/// target measured on `sampled` replicas, `ignored` more (provisioning or
/// without a full sample) set aside, `current` asked for.
fn recommend(ratio: f64, current: u32, sampled: u32, ignored: u32) -> u32 {
    let ceil = |x: f64| {
        let x = x.ceil().max(0.0);
        if x > u32::MAX as f64 {
            u32::MAX
        } else {
            x as u32
        }
    };
    if ignored == 0 || ratio <= 1.0 {
        if (ratio - 1.0).abs() <= TOLERANCE {
            return current;
        }
        let want = ceil(ratio * sampled as f64);
        // A recommendation against the direction of the metric keeps the
        // current count.
        return if (ratio > 1.0 && want < current) || (ratio < 1.0 && want > current) {
            current
        } else {
            want
        };
    }
    // Scaling up with replicas set aside: they count at 0% use.
    let n = sampled as u64 + ignored as u64;
    let new_ratio = ratio * sampled as f64 / n as f64;
    if (new_ratio - 1.0).abs() <= TOLERANCE || new_ratio < 1.0 {
        return current;
    }
    let want = ceil(new_ratio * n as f64);
    if want < current { current } else { want }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NS_PER_S;

    fn cfg(min: u32, max: u32) -> AutoscaleConfig {
        AutoscaleConfig {
            target: 0.5,
            min,
            max,
            initial: min,
            interval: 15 * S,
            provision: 60 * S,
            scale_in_delay: 300 * S,
        }
    }

    /// `a` with `ready` replicas of 10 workers, `busy` of them busy over
    /// the last interval before `now`.
    fn at(a: &mut Autoscaler, now: Nanos, busy: i64, ready: u32, current: u32) -> u32 {
        at_fresh(a, now, busy, ready, current, 0)
    }

    /// `at` with `fresh` more replicas ready since the last decision
    /// (idle, no sample).
    fn at_fresh(
        a: &mut Autoscaler,
        now: Nanos,
        busy: i64,
        sampled: u32,
        current: u32,
        fresh: u32,
    ) -> u32 {
        a.busy_area = 0;
        a.worker_area = 0;
        a.since = now - 15 * S;
        a.busy = busy as u32;
        a.workers = sampled * 10;
        a.decide(now, current, sampled + fresh, fresh)
    }

    #[test]
    fn desired_is_ceil_of_ready_times_utilization_over_target() {
        let mut a = Autoscaler::new(cfg(1, 100));
        // 4 replicas, 30 of 40 workers busy: u = 0.75, target 0.5 →
        // ceil(4 × 1.5) = 6.
        assert_eq!(at(&mut a, 15 * S, 30, 4, 4), 6);
        // Within the tolerance (u = 0.54, ratio 1.08): no change.
        let mut a = Autoscaler::new(cfg(1, 100));
        assert_eq!(at(&mut a, 15 * S, 54, 10, 10), 10);
        // No worker served: no metric, no change.
        let mut a = Autoscaler::new(cfg(1, 100));
        assert_eq!(a.decide(15 * S, 3, 0, 0), 3);
    }

    #[test]
    fn scale_up_is_limited_to_double_or_four_more_per_period() {
        // From 2 saturated replicas with target 0.25 (asks 8): +4 is
        // allowed, more than +100%, so 6.
        let mut c = cfg(1, 1000);
        c.target = 0.25;
        let mut a = Autoscaler::new(c);
        assert_eq!(at(&mut a, 15 * S, 20, 2, 2), 6);
        // From 10, u = 1 asks 20: +100% = 20 allowed.
        let mut a = Autoscaler::new(cfg(1, 1000));
        assert_eq!(at(&mut a, 15 * S, 100, 10, 10), 20);
        // From 10, u = 1 with target 0.25 asks 40: capped at 20.
        let mut c = cfg(1, 1000);
        c.target = 0.25;
        let mut a = Autoscaler::new(c);
        assert_eq!(at(&mut a, 15 * S, 100, 10, 10), 20);
        // The max bounds it.
        let mut a = Autoscaler::new(cfg(1, 15));
        assert_eq!(at(&mut a, 15 * S, 100, 10, 10), 15);
        // Two decisions within one 15 s period share its allowance: with
        // a 5 s interval, 10 → 20, then nothing more until the first
        // change is 15 s old.
        let mut c = cfg(1, 1000);
        c.interval = 5 * S;
        let mut a = Autoscaler::new(c);
        assert_eq!(at(&mut a, 15 * S, 100, 10, 10), 20);
        assert_eq!(at(&mut a, 20 * S, 200, 20, 20), 20);
        assert_eq!(at(&mut a, 30 * S, 200, 20, 20), 40);
    }

    #[test]
    fn scale_down_waits_for_the_highest_recommendation_of_its_window() {
        let mut a = Autoscaler::new(cfg(2, 100));
        // Busy: 10 replicas recommended at t = 15 s.
        assert_eq!(at(&mut a, 15 * S, 50, 10, 10), 10);
        // Idle from then on: the recommendation is the min, 2, but the 10
        // of t = 15 s holds for 300 s.
        for k in 2..=20 {
            assert_eq!(at(&mut a, k * 15 * S, 0, 10, 10), 10, "at {}", k * 15);
        }
        // At t = 315 s the 10 left the window: every pod may go at once,
        // down to min.
        assert_eq!(at(&mut a, 21 * 15 * S, 0, 10, 10), 2);
    }

    #[test]
    fn provisioning_replicas_do_not_double_the_request() {
        // 4 asked for, 2 ready and saturated: ready × 1 ÷ 0.5 = 4, no more.
        let mut a = Autoscaler::new(cfg(1, 100));
        assert_eq!(at(&mut a, 15 * S, 20, 2, 4), 4);
        // Ready ones lightly loaded while others provision (ratio 0.6):
        // ceil(2 × 0.6) = 2; the window holds no higher recommendation.
        let mut a = Autoscaler::new(cfg(1, 100));
        assert_eq!(at(&mut a, 15 * S, 6, 2, 4), 2);
    }

    #[test]
    fn a_replica_without_a_full_sample_counts_at_zero_when_scaling_up() {
        // 4 sampled replicas at u = 0.75 (target 0.5, ratio 1.5) and 2
        // that became ready after the last decision: ceil(4 × 1.5) = 6
        // over 6 ready, no change (the fresh ones count at 0%: ratio 1.5
        // × 4 ÷ 6 = 1, within the tolerance), where counting them at 0.75
        // asked ceil(6 × 1.5) = 9.
        let mut a = Autoscaler::new(cfg(1, 100));
        assert_eq!(at_fresh(&mut a, 15 * S, 30, 4, 6, 2), 6);
        // Sampled at u = 1 (ratio 2), 2 fresh: 2 × 4 ÷ 6 = 1.33 → 8.
        let mut a = Autoscaler::new(cfg(1, 100));
        assert_eq!(at_fresh(&mut a, 15 * S, 40, 4, 6, 2), 8);
        // The fresh ones are sampled from the next decision on: their
        // busy workers join the sampled ones.
        let mut a = Autoscaler::new(cfg(1, 100));
        // (4 saturated sampled: ratio 2 × 4 ÷ 6 → 8.)
        a.level(0, 40, 40, false);
        a.level(S, 0, 20, true);
        a.level(S, 20, 0, true);
        assert_eq!(a.decide(15 * S, 6, 6, 2), 8);
        assert_eq!((a.busy, a.workers), (60, 60));
    }

    /// The scale-down window's highest recommendation, kept as a monotonic
    /// queue, is the highest of every value within the window (a naive
    /// list, as the HPA keeps it), push after push, at the window's edge
    /// too; and the queue holds at most one entry per distinct value.
    #[test]
    fn the_window_keeps_only_the_values_that_can_still_be_highest() {
        let mut w = HighestWithin::new(7 * S);
        let mut naive: Vec<(Nanos, u32)> = Vec::new();
        let mut rng = crate::engine::Stream::new(3, crate::engine::Purpose::Arrivals, 0);
        let mut now = 0;
        for k in 0..2000 {
            // Steps of 0 to 3 s: several pushes at one time, and values
            // leaving exactly at the window's edge.
            now += (rng.unit() * 4.0) as Nanos * S;
            let value = (rng.unit() * 12.0) as u32;
            naive.retain(|&(t, _)| t > now.saturating_sub(7 * S));
            naive.push((now, value));
            let highest = naive.iter().map(|&(_, v)| v).max().unwrap();
            assert_eq!(w.push(now, value), highest, "push {k} at {now}");
            assert!(w.kept.len() <= 12, "{}", w.kept.len());
        }
        // A window of 100 days under a 1 ms interval allocates nothing up
        // front (it asked for 8.6e9 entries).
        let mut c = cfg(1, 12);
        c.interval = 1_000_000;
        c.scale_in_delay = 100 * 86_400 * S;
        let a = Autoscaler::new(c);
        assert_eq!(a.recommendations.kept.capacity(), 0);
        assert_eq!(a.changes.capacity(), 0);
    }
}
