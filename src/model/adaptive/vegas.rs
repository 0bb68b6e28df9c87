//! Vegas: Netflix concurrency-limits' `VegasLimit`
//! (`concurrency-limits-core/.../limit/VegasLimit.java`), TCP Vegas's
//! delay rule on a concurrency limit. `rtt_noload` is the least RTT seen;
//! the queue a sample implies is ⌈limit × (1 − rtt_noload ÷ rtt)⌉. With
//! log = max(1, ⌊log10 limit⌋) (`Log10RootFunction`), alpha = 3·log, beta
//! = 6·log, threshold = log, on each update:
//!
//! - every probe_multiplier × limit × U[0.5, 1) updates the sample's RTT
//!   becomes `rtt_noload` (a probe) and nothing else happens; a sample
//!   faster than `rtt_noload` becomes it, and nothing else happens;
//! - a drop: limit − log;
//! - fewer than half the limit in flight: unchanged (no upward drift);
//! - queue ≤ threshold: limit + beta; queue < alpha: limit + log; queue >
//!   beta: limit − log; else unchanged;
//!
//! then clamped to [1, max_limit] and smoothed (limit ← (1 − smoothing)
//! × limit + smoothing × new). Defaults are the builder's: initial 20,
//! max 1000, smoothing 1, probe multiplier 30.
//!
//! Netflix's limiters update on every sample. platinummonkey/
//! go-concurrency-limits' `DefaultLimiter` (`limiter/default.go`) instead
//! updates once per *window*: at least 1 s and more than 10 samples, the
//! window's least RTT, its most in flight and whether any of its requests
//! dropped; and its Vegas (`limit/vegas.go`) compares queue < threshold
//! where Netflix has ≤. `window` selects that behaviour. One drop then
//! decides a whole window: with a small steady failure rate a window
//! nearly always holds one, so the limit falls to 1 and stays there after
//! the load that drove it down has gone (go-concurrency-limits#117).

use crate::engine::{Nanos, Stream};

use super::Sample;

/// go-concurrency-limits' sample window: the limit updates at the first
/// success after `min_time` since the last update that finds more than
/// `min_samples` successes in the window (the very first update needs only
/// the samples).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasWindow {
    /// Shortest window (`defaultMinWindowTime`, 1 s).
    pub min_time: Nanos,
    /// A window updates the limit only with more samples than this
    /// (`defaultWindowSize`, 10).
    pub min_samples: u32,
}

impl Default for VegasWindow {
    fn default() -> Self {
        VegasWindow {
            min_time: 1_000_000_000,
            min_samples: 10,
        }
    }
}

/// `VegasLimit`'s settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasConfig {
    pub initial_limit: u32,
    pub max_limit: u32,
    pub smoothing: f64,
    /// Updates between probes of the no-load RTT, per unit of limit (0:
    /// never probe).
    pub probe_multiplier: u32,
    /// Update once per window, as go-concurrency-limits does; `None`: on
    /// every sample, as Netflix's.
    pub window: Option<VegasWindow>,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            initial_limit: 20,
            max_limit: 1000,
            smoothing: 1.0,
            probe_multiplier: 30,
            window: None,
        }
    }
}

/// max(1, ⌊log10 limit⌋), `Log10RootFunction`'s table.
pub fn log10_root(limit: u32) -> u32 {
    limit.max(1).ilog10().max(1)
}

/// A window's aggregate.
#[derive(Clone, Copy, Debug)]
struct Window {
    /// The earliest time it may update the limit (go's `nextUpdateTime`:
    /// 0 at first, then the last update + `min_time`).
    next_update: Nanos,
    count: u32,
    min_rtt: Nanos,
    max_inflight: u32,
    dropped: bool,
}

/// A Vegas limit.
#[derive(Clone, Debug)]
pub struct Vegas {
    cfg: VegasConfig,
    estimate: f64,
    rtt_noload: Nanos,
    probe_count: u64,
    probe_jitter: f64,
    window: Window,
}

impl Vegas {
    pub fn new(cfg: VegasConfig, rng: &mut Stream) -> Self {
        let mut v = Vegas {
            estimate: f64::from(cfg.initial_limit.max(1)),
            cfg,
            rtt_noload: 0,
            probe_count: 0,
            probe_jitter: 1.0,
            window: Window {
                next_update: 0,
                count: 0,
                min_rtt: Nanos::MAX,
                max_inflight: 0,
                dropped: false,
            },
        };
        v.reset_jitter(rng);
        v
    }

    fn reset_jitter(&mut self, rng: &mut Stream) {
        if self.cfg.probe_multiplier > 0 {
            self.probe_jitter = rng.uniform(0.5, 1.0);
        }
    }

    pub fn limit(&self) -> u32 {
        self.estimate as u32
    }

    /// The no-load RTT now assumed (0: none yet).
    pub fn rtt_noload(&self) -> Nanos {
        self.rtt_noload
    }

    pub fn on_sample(&mut self, now: Nanos, s: Sample, rng: &mut Stream) {
        let Some(w) = self.cfg.window else {
            return self.update(s.rtt.max(1), s.inflight, s.dropped, rng);
        };
        // go-concurrency-limits: a drop joins the window; a success joins
        // it and, when the window is ready, updates with it.
        let win = &mut self.window;
        win.max_inflight = win.max_inflight.max(s.inflight);
        if s.dropped {
            win.dropped = true;
            return;
        }
        win.count += 1;
        win.min_rtt = win.min_rtt.min(s.rtt.max(1));
        if now > win.next_update && win.count > w.min_samples {
            let done = *win;
            *win = Window {
                next_update: now.saturating_add(w.min_time),
                count: 0,
                min_rtt: Nanos::MAX,
                max_inflight: 0,
                dropped: false,
            };
            self.update(done.min_rtt, done.max_inflight, done.dropped, rng);
        }
    }

    fn update(&mut self, rtt: Nanos, inflight: u32, dropped: bool, rng: &mut Stream) {
        let c = self.cfg;
        if c.probe_multiplier > 0 {
            self.probe_count += 1;
            let due = self.probe_jitter * f64::from(c.probe_multiplier) * self.estimate;
            if due <= self.probe_count as f64 {
                self.reset_jitter(rng);
                self.probe_count = 0;
                self.rtt_noload = rtt;
                return;
            }
        }
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return;
        }
        let limit = self.estimate;
        let queue = (limit * (1.0 - self.rtt_noload as f64 / rtt as f64)).ceil() as i64;
        let log = f64::from(log10_root(limit as u32));
        let new = if dropped {
            limit - log
        } else if f64::from(inflight) * 2.0 < limit {
            return;
        } else {
            let l = log10_root(limit as u32) as i64;
            let (alpha, beta, threshold) = (3 * l, 6 * l, l);
            let no_queue = if c.window.is_some() {
                queue < threshold
            } else {
                queue <= threshold
            };
            if no_queue {
                limit + beta as f64
            } else if queue < alpha {
                limit + log
            } else if queue > beta {
                limit - log
            } else {
                return;
            }
        };
        let new = new.clamp(1.0, f64::from(c.max_limit.max(1)));
        self.estimate = (1.0 - c.smoothing) * limit + c.smoothing * new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Purpose;

    fn rng() -> Stream {
        Stream::new(1, Purpose::Adaptive, 0)
    }

    fn sample(rtt_ms: u64, inflight: u32, dropped: bool) -> Sample {
        Sample {
            start: 0,
            rtt: rtt_ms * 1_000_000,
            inflight,
            dropped,
        }
    }

    fn no_probe() -> VegasConfig {
        VegasConfig {
            probe_multiplier: 0,
            ..VegasConfig::default()
        }
    }

    #[test]
    fn log10_root_matches_the_table() {
        let got: Vec<u32> = [0, 1, 9, 10, 99, 100, 999, 1000].map(log10_root).into();
        assert_eq!(got, [1, 1, 1, 1, 1, 2, 2, 3]);
    }

    #[test]
    fn the_update_rules_give_the_hand_computed_limits() {
        let mut r = rng();
        let mut v = Vegas::new(no_probe(), &mut r);
        // The first sample sets rtt_noload = 10 ms and changes nothing.
        v.on_sample(0, sample(10, 20, false), &mut r);
        assert_eq!((v.rtt_noload(), v.limit()), (10_000_000, 20));
        // 11 ms: queue ⌈20 × (1 − 10/11)⌉ = ⌈1.82⌉ = 2; log 1: alpha 3,
        // beta 6, threshold 1; 2 < alpha: + 1 → 21.
        v.on_sample(0, sample(11, 20, false), &mut r);
        assert_eq!(v.limit(), 21);
        // 10.2 ms: ⌈21 × 0.0196⌉ = 1 ≤ threshold: + beta → 27.
        v.on_sample(
            0,
            Sample {
                rtt: 10_200_000,
                ..sample(0, 21, false)
            },
            &mut r,
        );
        assert_eq!(v.limit(), 27);
        // 20 ms: ⌈27 × 0.5⌉ = 14 > beta 6: − 1 → 26.
        v.on_sample(0, sample(20, 27, false), &mut r);
        assert_eq!(v.limit(), 26);
        // 14 ms: ⌈26 × 0.2857⌉ = 8 > 6: − 1 → 25; 13 ms: ⌈25 × 0.2308⌉ =
        // 6: the sweet spot, unchanged.
        v.on_sample(0, sample(14, 26, false), &mut r);
        assert_eq!(v.limit(), 25);
        v.on_sample(0, sample(13, 25, false), &mut r);
        assert_eq!(v.limit(), 25);
        // Idle (12 × 2 < 25): unchanged whatever the queue.
        v.on_sample(0, sample(11, 12, false), &mut r);
        assert_eq!(v.limit(), 25);
        // A drop: − log → 24, even when idle.
        v.on_sample(0, sample(11, 1, true), &mut r);
        assert_eq!(v.limit(), 24);
    }

    #[test]
    fn smoothing_blends_and_the_floor_is_one() {
        let mut r = rng();
        let mut v = Vegas::new(
            VegasConfig {
                initial_limit: 2,
                smoothing: 0.5,
                ..no_probe()
            },
            &mut r,
        );
        v.on_sample(0, sample(10, 2, false), &mut r);
        // A drop: new = max(1, 2 − 1) = 1, smoothed 0.5·2 + 0.5·1 = 1.5.
        v.on_sample(0, sample(12, 2, true), &mut r);
        assert!((v.estimate - 1.5).abs() < 1e-12);
        // Another: max(1, 0.5) = 1 → 1.25.
        v.on_sample(0, sample(12, 2, true), &mut r);
        assert!((v.estimate - 1.25).abs() < 1e-12);
        assert_eq!(v.limit(), 1);
    }

    #[test]
    fn a_probe_resets_the_no_load_rtt() {
        let mut r = rng();
        let mut v = Vegas::new(
            VegasConfig {
                initial_limit: 1,
                ..VegasConfig::default()
            },
            &mut r,
        );
        // Limit 1, multiplier 30: a probe within 15 to 30 updates.
        v.on_sample(0, sample(10, 1, false), &mut r);
        let mut probed = false;
        for _ in 0..30 {
            v.on_sample(0, sample(50, 1, true), &mut r);
            if v.rtt_noload() == 50_000_000 {
                probed = true;
                break;
            }
        }
        assert!(probed);
    }

    #[test]
    fn a_window_updates_once_with_its_least_rtt_and_any_drop() {
        let mut r = rng();
        let mut v = Vegas::new(
            VegasConfig {
                window: Some(VegasWindow::default()),
                ..no_probe()
            },
            &mut r,
        );
        let ms = 1_000_000;
        // First window: 11 samples over 1 s sets rtt_noload = 10 ms.
        for i in 0..=11u64 {
            v.on_sample(i * 100 * ms, sample(10 + i, 20, false), &mut r);
        }
        assert_eq!((v.rtt_noload(), v.limit()), (10 * ms, 20));
        // Second: a drop among 11 fast successes decreases: 20 − 1.
        let t0 = 1200 * ms;
        v.on_sample(t0, sample(30, 20, true), &mut r);
        for i in 0..=11u64 {
            v.on_sample(t0 + i * 100 * ms, sample(11, 20, false), &mut r);
        }
        assert_eq!(v.limit(), 19);
        // Third, no drop, least RTT 11 ms: ⌈19 × (1 − 10/11)⌉ = 2, not
        // below threshold 1 but below alpha 3: + 1 → 20.
        let t1 = t0 + 1200 * ms;
        for i in 0..=11u64 {
            v.on_sample(t1 + i * 100 * ms, sample(11 + i, 20, false), &mut r);
        }
        assert_eq!(v.limit(), 20);
    }
}
