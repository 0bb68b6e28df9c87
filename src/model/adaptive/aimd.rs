//! AIMD: a loss-based limit, additive increase and multiplicative
//! decrease, as Netflix concurrency-limits' `AIMDLimit`
//! (`concurrency-limits-core/.../limit/AIMDLimit.java`). On each sample:
//!
//! - a drop, or a round-trip time above `timeout`: limit ← ⌊limit ×
//!   backoff_ratio⌋;
//! - else, when the limit is in use (in flight × 2 ≥ limit): limit + 1;
//! - else unchanged;
//!
//! then clamped to [min_limit, max_limit]. Defaults are the library's
//! builder's: initial 20, min 20, max 200, backoff ratio 0.9, timeout 5 s.

use crate::engine::Nanos;

use super::Sample;

/// `AIMDLimit`'s settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdConfig {
    pub initial_limit: u32,
    pub min_limit: u32,
    pub max_limit: u32,
    /// The factor a drop multiplies the limit by, in [0.5, 1).
    pub backoff_ratio: f64,
    /// A sample slower than this counts as a drop.
    pub timeout: Nanos,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            backoff_ratio: 0.9,
            timeout: 5_000_000_000,
        }
    }
}

/// An AIMD limit.
#[derive(Clone, Debug)]
pub struct Aimd {
    cfg: AimdConfig,
    limit: u32,
}

impl Aimd {
    pub fn new(cfg: AimdConfig) -> Self {
        Aimd {
            limit: cfg
                .initial_limit
                .clamp(cfg.min_limit, cfg.max_limit.max(cfg.min_limit)),
            cfg,
        }
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }

    pub fn on_sample(&mut self, s: Sample) {
        let c = &self.cfg;
        let next = if s.dropped || s.rtt > c.timeout {
            (f64::from(self.limit) * c.backoff_ratio) as u32
        } else if u64::from(s.inflight) * 2 >= u64::from(self.limit) {
            self.limit.saturating_add(1)
        } else {
            self.limit
        };
        self.limit = next.clamp(c.min_limit, c.max_limit.max(c.min_limit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(inflight: u32, dropped: bool) -> Sample {
        Sample {
            start: 0,
            rtt: 10_000_000,
            inflight,
            dropped,
        }
    }

    #[test]
    fn a_scripted_series_gives_the_hand_computed_limits() {
        let mut a = Aimd::new(AimdConfig {
            min_limit: 1,
            ..AimdConfig::default()
        });
        let mut seen = Vec::new();
        // Busy successes: 20 → 21 → 22; a drop: ⌊22 × 0.9⌋ = 19; an idle
        // success (5 × 2 < 19) keeps 19; two drops: ⌊17.1⌋ = 17, ⌊15.3⌋ =
        // 15; a success in use (8 × 2 ≥ 15): 16.
        for (inflight, dropped) in [
            (20, false),
            (21, false),
            (22, true),
            (5, false),
            (19, true),
            (17, true),
            (8, false),
        ] {
            a.on_sample(sample(inflight, dropped));
            seen.push(a.limit());
        }
        assert_eq!(seen, [21, 22, 19, 19, 17, 15, 16]);
    }

    #[test]
    fn a_slow_sample_is_a_drop_and_the_bounds_hold() {
        let mut a = Aimd::new(AimdConfig::default());
        // At the floor, a drop stays at min 20.
        a.on_sample(Sample {
            rtt: 5_000_000_001,
            ..sample(20, false)
        });
        assert_eq!(a.limit(), 20);
        // Exactly the timeout is not a drop.
        a.on_sample(Sample {
            rtt: 5_000_000_000,
            ..sample(20, false)
        });
        assert_eq!(a.limit(), 21);
        for _ in 0..500 {
            a.on_sample(sample(1000, false));
        }
        assert_eq!(a.limit(), 200);
        // ⌊200 × 0.9⌋ = 180.
        a.on_sample(sample(1000, true));
        assert_eq!(a.limit(), 180);
    }
}
