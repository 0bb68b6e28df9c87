//! Envoy's gradient controller, the concurrency limit of its adaptive
//! concurrency HTTP filter (`source/extensions/filters/http/
//! adaptive_concurrency/controller/gradient_controller.cc`; settings and
//! defaults in `api/envoy/extensions/filters/http/adaptive_concurrency/v3/
//! adaptive_concurrency.proto`).
//!
//! - **minRTT measurement.** The controller starts in one, and enters one
//!   again `min_rtt_interval` plus a jitter of up to `jitter` × the
//!   interval after each ends: it keeps the current limit aside, pins the
//!   limit to `min_concurrency`, drops the samples gathered so far, and
//!   ends once `request_count` requests admitted since it began have
//!   answered. minRTT is then their `percentile` RTT and the limit set
//!   aside comes back.
//! - **Sample windows.** Every `sample_interval` (`concurrency_update_
//!   interval`), outside a measurement, the window's `percentile` RTT is
//!   sampleRTT and gradient = clamp((minRTT × (1 + buffer)) ÷ sampleRTT,
//!   0.5, 2); limit ← ⌊limit × gradient + √(limit × gradient)⌋ (the √ is
//!   the burst headroom), clamped to [min_concurrency, max_limit]. A
//!   window without samples changes nothing.
//! - **Stuck at the floor.** Five windows in a row that set the limit to
//!   `min_concurrency` from `min_concurrency` start a measurement at once
//!   (envoy PR #10647).
//!
//! `min_concurrency` is both the limit of a measurement and the floor of
//! the limit (envoy PR #9947; envoy#46532). Set at or above what the
//! service can hold without queueing, the limit can never fall below it
//! and a measurement made during an overload sees overloaded latencies
//! as the no-load ones: the limit never recovers (envoy#38338).
//!
//! Envoy aggregates with an approximate histogram (circllhist) of
//! constant size; here the percentile is the nearest rank of the samples
//! kept, at most [`MAX_KEPT`] a window: past that, every second one, then
//! every fourth (a systematic sample), so memory stays bounded however
//! long a window or busy a replica. Envoy's timers fire on
//! their own; here they run when the limiter is next asked (each arrival
//! and each answer at the replica), in time order.

use crate::engine::{Nanos, Stream};

use super::Sample;

/// The most samples a window keeps.
pub const MAX_KEPT: usize = 1 << 16;

/// The gradient controller's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradientConfig {
    /// `concurrency_update_interval` (required upstream; 100 ms as in
    /// Envoy's documentation example).
    pub sample_interval: Nanos,
    /// `max_concurrency_limit`, 1000.
    pub max_limit: u32,
    /// `sample_aggregate_percentile`, p50.
    pub percentile: f64,
    /// `min_rtt_calc_params.interval` (required upstream; 60 s here).
    pub min_rtt_interval: Nanos,
    /// `request_count`, 50.
    pub request_count: u32,
    /// `jitter`, 15%.
    pub jitter: f64,
    /// `min_concurrency`, 3.
    pub min_concurrency: u32,
    /// `buffer`, 25%.
    pub buffer: f64,
}

impl Default for GradientConfig {
    fn default() -> Self {
        GradientConfig {
            sample_interval: 100_000_000,
            max_limit: 1000,
            percentile: 0.5,
            min_rtt_interval: 60_000_000_000,
            request_count: 50,
            jitter: 0.15,
            min_concurrency: 3,
            buffer: 0.25,
        }
    }
}

/// Envoy's gradient controller.
#[derive(Clone, Debug)]
pub struct Gradient {
    cfg: GradientConfig,
    limit: u32,
    /// The limit set aside during a minRTT measurement (`Some`: one runs).
    deferred: Option<u32>,
    /// When the current (or last) measurement began.
    epoch: Nanos,
    min_rtt: Nanos,
    samples: Vec<Nanos>,
    /// Samples seen in the window, and the stride of those kept.
    seen: u64,
    stride: u64,
    next_window: Option<Nanos>,
    next_min_rtt: Option<Nanos>,
    at_floor: u32,
}

impl Gradient {
    /// A controller starting at `now`: in a minRTT measurement, the first
    /// sample window due `sample_interval` later.
    pub fn new(cfg: GradientConfig, now: Nanos) -> Self {
        let mut g = Gradient {
            limit: cfg.min_concurrency,
            cfg,
            deferred: None,
            epoch: now,
            min_rtt: 0,
            samples: Vec::new(),
            seen: 0,
            stride: 1,
            next_window: Some(now.saturating_add(cfg.sample_interval)),
            next_min_rtt: None,
            at_floor: 0,
        };
        g.enter_measurement(now);
        g
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The minRTT of the last measurement (0: none yet).
    pub fn min_rtt(&self) -> Nanos {
        self.min_rtt
    }

    /// A minRTT measurement is running.
    pub fn measuring(&self) -> bool {
        self.deferred.is_some()
    }

    /// Runs the timers due by `now`, in time order.
    pub fn advance(&mut self, now: Nanos) {
        loop {
            let w = self.next_window.filter(|&t| t <= now);
            let m = self.next_min_rtt.filter(|&t| t <= now);
            match (w, m) {
                (Some(tw), Some(tm)) if tm <= tw => self.on_min_rtt_timer(tm),
                (Some(tw), m) => self.on_window(tw, now, m),
                (None, Some(tm)) => self.on_min_rtt_timer(tm),
                (None, None) => return,
            }
        }
    }

    pub fn on_sample(&mut self, now: Nanos, s: Sample, rng: &mut Stream) {
        self.advance(now);
        // Requests admitted before the measurement began are not counted.
        if s.start < self.epoch {
            return;
        }
        self.keep(s.rtt);
        if self.measuring() && self.seen >= u64::from(self.cfg.request_count) {
            self.end_measurement(now, rng);
        }
    }

    /// Adds a sample to the window, one in `stride` once it is full.
    fn keep(&mut self, rtt: Nanos) {
        if self.seen.is_multiple_of(self.stride) {
            if self.samples.len() >= MAX_KEPT {
                let mut i = 0;
                self.samples.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
            if self.seen.is_multiple_of(self.stride) {
                self.samples.push(rtt);
            }
        }
        self.seen += 1;
    }

    fn clear(&mut self) {
        self.samples.clear();
        self.seen = 0;
        self.stride = 1;
    }

    fn on_min_rtt_timer(&mut self, t: Nanos) {
        self.next_min_rtt = None;
        self.enter_measurement(t);
    }

    fn enter_measurement(&mut self, t: Nanos) {
        if self.measuring() {
            return;
        }
        self.deferred = Some(self.limit);
        self.set_limit(self.cfg.min_concurrency, t);
        self.clear();
        self.epoch = t;
    }

    fn end_measurement(&mut self, now: Nanos, rng: &mut Stream) {
        if !self.samples.is_empty() {
            self.min_rtt = self.aggregate();
        }
        let back = self.deferred.unwrap_or(self.limit);
        self.set_limit(back, now);
        self.deferred = None;
        let c = self.cfg;
        let mut wait = c.min_rtt_interval;
        if c.jitter > 0.0 {
            let range = (c.min_rtt_interval as f64 * c.jitter).ceil().max(1.0);
            wait = wait.saturating_add((rng.unit() * range) as Nanos);
        }
        self.next_min_rtt = Some(now.saturating_add(wait));
        self.next_window = Some(now.saturating_add(c.sample_interval));
    }

    /// The window due at `t`, run by `advance(now)`; `min_rtt`: the
    /// minRTT timer, when it is due by `now` too (after `t`).
    fn on_window(&mut self, t: Nanos, now: Nanos, min_rtt: Option<Nanos>) {
        if self.measuring() {
            // Given up; the end of the measurement enables it again.
            self.next_window = None;
            return;
        }
        let every = self.cfg.sample_interval.max(1);
        if self.samples.is_empty() {
            // This window and every one after it due by `now` (and before
            // the minRTT timer) find no sample either: samples come only
            // after `advance`. They change nothing, so they are passed
            // over at once; one by one, a 1 ns interval would spin for
            // each nanosecond of the run.
            let last = min_rtt.map_or(now, |m| now.min(m.saturating_sub(1)));
            let skipped = (last.saturating_sub(t) / every).saturating_add(1);
            self.next_window = Some(t.saturating_add(skipped.saturating_mul(every)));
            return;
        }
        self.next_window = Some(t.saturating_add(every));
        let sample_rtt = self.aggregate().max(1);
        let new = self.new_limit(sample_rtt);
        self.set_limit(new, t);
    }

    /// The limit a window of sample RTT `sample_rtt` sets.
    pub fn new_limit(&self, sample_rtt: Nanos) -> u32 {
        let c = &self.cfg;
        let buffered = self.min_rtt as f64 * (1.0 + c.buffer);
        let gradient = (buffered / sample_rtt.max(1) as f64).clamp(0.5, 2.0);
        let limit = f64::from(self.limit) * gradient;
        let new = (limit + limit.sqrt()) as u32;
        new.min(c.max_limit).max(c.min_concurrency)
    }

    /// The samples' percentile (nearest rank), clearing them.
    fn aggregate(&mut self) -> Nanos {
        let n = self.samples.len();
        let rank = ((self.cfg.percentile * n as f64).ceil() as usize).clamp(1, n) - 1;
        let (_, v, _) = self.samples.select_nth_unstable(rank);
        let v = *v;
        self.clear();
        v
    }

    fn set_limit(&mut self, new: u32, t: Nanos) {
        let old = self.limit;
        self.limit = new;
        let floor = self.cfg.min_concurrency;
        if !self.measuring() && old == floor && new == floor {
            self.at_floor += 1;
        } else {
            self.at_floor = 0;
        }
        if self.at_floor >= 5 {
            self.next_min_rtt = Some(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Purpose;

    const MS: Nanos = 1_000_000;

    fn rng() -> Stream {
        Stream::new(1, Purpose::Adaptive, 0)
    }

    fn sample(start: Nanos, rtt: Nanos) -> Sample {
        Sample {
            start,
            rtt,
            inflight: 1,
            dropped: false,
        }
    }

    fn cfg() -> GradientConfig {
        GradientConfig {
            request_count: 4,
            jitter: 0.0,
            min_rtt_interval: 10_000 * MS,
            ..GradientConfig::default()
        }
    }

    #[test]
    fn the_first_measurement_pins_min_concurrency_then_windows_follow_the_gradient() {
        let mut r = rng();
        let mut g = Gradient::new(cfg(), 0);
        assert_eq!(g.limit(), 3);
        assert!(g.measuring());
        // Four samples end the measurement: p50 (nearest rank: the 2nd of
        // 10, 12, 14, 16) = 12 ms. The limit set aside (3) comes back.
        for rtt in [16, 10, 14, 12] {
            g.on_sample(50 * MS, sample(1, rtt * MS), &mut r);
        }
        assert!(!g.measuring());
        assert_eq!((g.min_rtt(), g.limit()), (12 * MS, 3));
        // A window of 10 ms: gradient = 12 × 1.25 / 10 = 1.5; 3 × 1.5 =
        // 4.5, + √4.5 = 6.62 → 6.
        g.on_sample(60 * MS, sample(55 * MS, 10 * MS), &mut r);
        g.advance(150 * MS);
        assert_eq!(g.limit(), 6);
        // 7.5 ms: gradient 2 (clamped): 12 + √12 = 15.46 → 15.
        g.on_sample(200 * MS, sample(160 * MS, 7_500_000), &mut r);
        g.advance(250 * MS);
        assert_eq!(g.limit(), 15);
        // A window without samples changes nothing.
        g.advance(350 * MS);
        assert_eq!(g.limit(), 15);
        // 60 ms: gradient 0.25 → 0.5: 7.5 + √7.5 = 10.24 → 10.
        g.on_sample(400 * MS, sample(340 * MS, 60 * MS), &mut r);
        g.advance(450 * MS);
        assert_eq!(g.limit(), 10);
    }

    /// Windows without samples are passed over at once, and that changes
    /// nothing: a controller asked only at its samples ends in the state
    /// of one also run at every window's time, through measurements, the
    /// minRTT timer and the floor rule; and a 1 ns window over 10 s of
    /// quiet takes one step, not 10^10.
    #[test]
    fn empty_windows_are_passed_over_exactly() {
        let c = GradientConfig {
            sample_interval: MS,
            min_rtt_interval: 300 * MS,
            request_count: 4,
            jitter: 0.0,
            ..GradientConfig::default()
        };
        let (mut ra, mut rb) = (rng(), rng());
        let mut asked = Gradient::new(c, 0);
        let mut stepped = Gradient::new(c, 0);
        let mut dice = Stream::new(9, Purpose::Arrivals, 0);
        let mut now = 0;
        for k in 0..3000 {
            // Bursts and quiet spells of up to 40 windows.
            now += (dice.unit() * 40.0) as Nanos * MS + (dice.unit() * MS as f64) as Nanos;
            let s = sample(
                now.saturating_sub(5 * MS),
                (5.0 + dice.unit() * 20.0) as Nanos * MS,
            );
            let mut t = stepped.next_window.unwrap_or(now).min(now);
            while t < now {
                stepped.advance(t);
                t += MS;
            }
            asked.on_sample(now, s, &mut ra);
            stepped.on_sample(now, s, &mut rb);
            assert_eq!(
                format!("{asked:?}"),
                format!("{stepped:?}"),
                "sample {k} at {now}"
            );
        }
        let mut g = Gradient::new(
            GradientConfig {
                sample_interval: 1,
                ..c
            },
            0,
        );
        g.on_sample(10_000 * MS, sample(0, MS), &mut ra);
        g.advance(20_000 * MS);
        assert!(g.next_window.is_none_or(|w| w > 20_000 * MS), "{g:?}");
    }

    #[test]
    fn the_floor_is_min_concurrency_and_five_windows_there_remeasure() {
        let mut r = rng();
        let mut g = Gradient::new(cfg(), 0);
        for i in 0..4 {
            g.on_sample(10 * MS, sample(i, 10 * MS), &mut r);
        }
        assert_eq!(g.min_rtt(), 10 * MS);
        // Slow windows: 3 × 0.5 = 1.5 + 1.22 = 2.72 → 2 → floor 3; the
        // fifth in a row at the floor starts a measurement at once.
        for k in 1..=5u64 {
            let t = 10 * MS + k * 100 * MS;
            g.on_sample(t - MS, sample(t - 2 * MS, 500 * MS), &mut r);
            g.advance(t);
            assert_eq!(g.limit(), 3);
            assert_eq!(g.measuring(), k == 5, "window {k}");
        }
    }

    #[test]
    fn samples_of_requests_admitted_before_a_measurement_are_disregarded() {
        let mut r = rng();
        let mut g = Gradient::new(cfg(), 1000 * MS);
        for i in 0..10 {
            g.on_sample(1100 * MS, sample(999 * MS, (5 + i) * MS), &mut r);
        }
        assert!(g.measuring());
    }

    #[test]
    fn a_busy_window_keeps_a_bounded_systematic_sample() {
        let mut r = rng();
        let mut g = Gradient::new(cfg(), 0);
        for i in 0..4 {
            g.on_sample(10 * MS, sample(i, 10 * MS), &mut r);
        }
        // 300 000 samples of 1..=300 000 µs in one window: at most
        // MAX_KEPT kept, and their median that of all within 0.1%.
        for i in 1..=300_000u64 {
            g.on_sample(20 * MS, sample(15 * MS, i * 1000), &mut r);
        }
        assert!(g.samples.len() <= MAX_KEPT);
        assert_eq!(g.seen, 300_000);
        let median = g.aggregate() as f64;
        assert!((median / 150_000_000.0 - 1.0).abs() < 1e-3, "{median}");
        assert_eq!((g.seen, g.samples.len()), (0, 0));
    }

    #[test]
    fn the_next_measurement_comes_after_the_jittered_interval() {
        let mut r = rng();
        let c = GradientConfig {
            jitter: 0.15,
            ..cfg()
        };
        let mut g = Gradient::new(c, 0);
        for i in 0..4 {
            g.on_sample(10 * MS, sample(i, 10 * MS), &mut r);
        }
        let due = g.next_min_rtt.unwrap();
        assert!(
            (10_010 * MS..10_010 * MS + 1_500 * MS).contains(&due),
            "{due}"
        );
        g.advance(due - 1);
        assert!(!g.measuring());
        g.advance(due);
        assert!(g.measuring());
        assert_eq!(g.limit(), 3);
    }
}
