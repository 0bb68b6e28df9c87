//! Gradient2: Netflix concurrency-limits' `Gradient2Limit`
//! (Netflix/concurrency-limits, `concurrency-limits-core/src/main/java/
//! com/netflix/concurrency/limits/limit/Gradient2Limit.java`, as of commit
//! f2528de; docs/sources/topology-and-configs.md §4.1). It compares each
//! sample's round-trip time (the short RTT) with a long-term exponential
//! average of them (`ExpAvgMeasurement`: a plain mean of the first 10
//! samples, then factor 2 ÷ (long_window + 1)). On each sample (`_update`):
//!
//! - when long ÷ short > 2 (latency fell back after a long overload), the
//!   long average is multiplied by 0.95 so it catches up (`LONG_DECAY`;
//!   0.9 before PR #125);
//! - when fewer than half the limit are in flight (app-limited), the limit
//!   stays;
//! - else gradient = clamp(rtt_tolerance × long ÷ short, 0.5, 1): the RTT
//!   may rise to rtt_tolerance times the long average before the limit
//!   falls (`rttTolerance`, added in PR #125 "Improved stability", default
//!   1.5, at least 1); new = limit × gradient + queue_size, smoothed:
//!   limit ← limit × (1 − smoothing) + new × smoothing, clamped to
//!   [min_limit, max_limit].
//!
//! The limit enforced is the estimate truncated to an integer. Defaults
//! are the builder's: initial 20, min 20, max 200, smoothing 0.2, queue
//! size 4, long window 600, rtt tolerance 1.5.

use super::Sample;

/// `Gradient2Limit`'s settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gradient2Config {
    pub initial_limit: u32,
    pub min_limit: u32,
    pub max_limit: u32,
    pub smoothing: f64,
    /// Headroom added to the limit at each update (a constant function of
    /// the limit upstream: 4).
    pub queue_size: u32,
    /// Samples of the long-term RTT average.
    pub long_window: u32,
    /// How many times the long-term average a sample's RTT may be before
    /// the limit falls (≥ 1).
    pub rtt_tolerance: f64,
}

impl Default for Gradient2Config {
    fn default() -> Self {
        Gradient2Config {
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            smoothing: 0.2,
            queue_size: 4,
            long_window: 600,
            rtt_tolerance: 1.5,
        }
    }
}

/// Samples averaged plainly before the exponential average takes over
/// (`ExpAvgMeasurement`'s warm-up window).
const WARMUP: u32 = 10;

/// The factor the long-term average is cut by when it is more than twice
/// the sample (`longRtt.update(current -> current * 0.95)`).
const LONG_DECAY: f64 = 0.95;

/// A Gradient2 limit.
#[derive(Clone, Debug)]
pub struct Gradient2 {
    cfg: Gradient2Config,
    estimate: f64,
    long_rtt: f64,
    long_count: u32,
    long_sum: f64,
}

impl Gradient2 {
    pub fn new(cfg: Gradient2Config) -> Self {
        Gradient2 {
            estimate: f64::from(cfg.initial_limit),
            cfg,
            long_rtt: 0.0,
            long_count: 0,
            long_sum: 0.0,
        }
    }

    pub fn limit(&self) -> u32 {
        self.estimate as u32
    }

    /// The long-term RTT average, in ns.
    pub fn long_rtt(&self) -> f64 {
        self.long_rtt
    }

    pub fn on_sample(&mut self, s: Sample) {
        let c = self.cfg;
        let short = s.rtt.max(1) as f64;
        if self.long_count < WARMUP {
            self.long_count += 1;
            self.long_sum += short;
            self.long_rtt = self.long_sum / f64::from(self.long_count);
        } else {
            let f = 2.0 / (f64::from(c.long_window) + 1.0);
            self.long_rtt = self.long_rtt * (1.0 - f) + short * f;
        }
        let long = self.long_rtt;
        if long / short > 2.0 {
            self.long_rtt *= LONG_DECAY;
        }
        if f64::from(s.inflight) < self.estimate / 2.0 {
            return;
        }
        let gradient = (c.rtt_tolerance * long / short).clamp(0.5, 1.0);
        let new = self.estimate * gradient + f64::from(c.queue_size);
        let new = self.estimate * (1.0 - c.smoothing) + new * c.smoothing;
        self.estimate = new.clamp(f64::from(c.min_limit), f64::from(c.max_limit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rtt_ms: u64, inflight: u32) -> Sample {
        Sample {
            start: 0,
            rtt: rtt_ms * 1_000_000,
            inflight,
            dropped: false,
        }
    }

    #[test]
    fn steady_latency_grows_the_limit_by_the_smoothed_queue_size() {
        let mut g = Gradient2::new(Gradient2Config::default());
        // long = short: gradient 1, new = 20 + 4 = 24, smoothed 0.8·20 +
        // 0.2·24 = 20.8; then 0.8·20.8 + 0.2·24.8 = 21.6.
        g.on_sample(sample(10, 20));
        assert!((g.estimate - 20.8).abs() < 1e-12);
        g.on_sample(sample(10, 20));
        assert!((g.estimate - 21.6).abs() < 1e-12);
        assert_eq!(g.limit(), 21);
    }

    #[test]
    fn a_latency_rise_cuts_the_limit_by_the_gradient() {
        let mut g = Gradient2::new(Gradient2Config {
            min_limit: 1,
            initial_limit: 100,
            ..Gradient2Config::default()
        });
        for _ in 0..10 {
            g.on_sample(sample(10, 100));
        }
        let before = g.estimate;
        // Warm-up over (10 samples of 10 ms): the long average takes 40 ms
        // with factor 2/601: long = 10 + 30·2/601 ms; gradient = 1.5 ×
        // long/40 = 0.38, clamped to 0.5.
        g.on_sample(sample(40, 100));
        let long = 10.0 + 30.0 * 2.0 / 601.0;
        let gradient = (1.5 * long / 40.0_f64).max(0.5);
        assert_eq!(gradient, 0.5);
        let expected = before * 0.8 + (before * gradient + 4.0) * 0.2;
        assert!(
            (g.estimate - expected).abs() < 1e-9,
            "{} vs {expected}",
            g.estimate
        );
        assert!(g.estimate < before);
    }

    #[test]
    fn an_app_limited_sample_changes_nothing_and_recovery_shrinks_the_long_average() {
        let mut g = Gradient2::new(Gradient2Config::default());
        g.on_sample(sample(100, 5));
        assert_eq!(g.estimate, 20.0);
        // long 100 ms, short 10 ms: the long average is cut by 0.95 after
        // the warm-up mean (100 + 10) / 2 = 55 → 52.25.
        g.on_sample(sample(10, 5));
        assert!((g.long_rtt() - 52.25e6).abs() < 1e-3);
    }

    #[test]
    fn a_latency_rise_within_the_tolerance_still_grows_the_limit() {
        // 10 samples of 10 ms (long = 10 ms), then 14 ms: 1.5 × 10.01 ÷ 14
        // = 1.07, clamped to 1: the limit grows by the smoothed queue size
        // as at a steady latency. Without the tolerance the gradient was
        // 10.01 ÷ 14 = 0.72 and the limit fell.
        let mut g = Gradient2::new(Gradient2Config {
            initial_limit: 100,
            ..Gradient2Config::default()
        });
        for _ in 0..10 {
            g.on_sample(sample(10, 100));
        }
        let before = g.estimate;
        g.on_sample(sample(14, 100));
        assert!(
            (g.estimate - (before + 0.2 * 4.0)).abs() < 1e-9,
            "{}",
            g.estimate
        );
        // 16 ms: 1.5 × 10.02 ÷ 16 = 0.94 cuts it.
        let before = g.estimate;
        g.on_sample(sample(16, 100));
        assert!(g.estimate < before);
        // The defaults are upstream's.
        let d = Gradient2Config::default();
        assert_eq!(
            (
                d.initial_limit,
                d.min_limit,
                d.max_limit,
                d.queue_size,
                d.long_window
            ),
            (20, 20, 200, 4, 600)
        );
        assert_eq!((d.smoothing, d.rtt_tolerance), (0.2, 1.5));
    }
}
