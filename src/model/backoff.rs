//! Backoff delays and jitter, exactly as README.md ("The model") gives them.
//!
//! Retry n (n = 1 is the first retry, that is attempt 2) waits:
//! - constant: `base`
//! - linear: `min(cap, base * n)`
//! - exponential: `min(cap, base * multiplier^(n-1))`
//!
//! then jitter turns the delay d into:
//! - none: `d`
//! - full: `U(0, d)` (AWS "Exponential Backoff And Jitter", 2015)
//! - equal: `d/2 + U(0, d/2)` (same source)
//! - decorrelated: `min(cap, U(base, prev * 3))`, with `prev` the previous
//!   sleep of the same request, starting at `base` (same source; the attempt
//!   number is ignored)
//! - proportional(f): `d * U(1 - f, 1 + f)` (Resilience4j's
//!   randomization factor and cenkalti/backoff's RandomizationFactor; as
//!   there, the result may exceed the cap by up to the factor)
//! - polly_v2: Polly v8's `DecorrelatedJitterBackoffV2` (docs/sources/presets.md §5):
//!   with a = n − 1 and t = a + U(0, 1), `next = 2^t · tanh(√(4t))`, sleep
//!   `(next − prev) / 1.4 × base`, capped at `cap`; `prev` is per request
//!   and starts at 0.
//!
//! Exponential backoff may truncate to whole milliseconds at every step,
//! as Resilience4j's `IntervalFunction.ofExponentialBackoff` does
//! (`f(n) = (long)(f(n-1) × m)`: 500, 750, 1125, 1687, 2530 ms ...,
//! docs/sources/presets.md §6).

use crate::engine::{Nanos, Stream, time::from_f64_ns};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backoff {
    Constant {
        base: Nanos,
    },
    Linear {
        base: Nanos,
        cap: Nanos,
    },
    Exponential {
        base: Nanos,
        multiplier: f64,
        cap: Nanos,
        /// Truncate to whole milliseconds at every step (Resilience4j).
        truncate_ms: bool,
    },
}

impl Backoff {
    /// `min(cap, base × multiplier^(n−1))`, not truncated.
    pub fn exponential(base: Nanos, multiplier: f64, cap: Nanos) -> Self {
        Backoff::Exponential {
            base,
            multiplier,
            cap,
            truncate_ms: false,
        }
    }

    /// The same curve from another base (AWS 2.1's throttling base).
    pub fn with_base(&self, base: Nanos) -> Backoff {
        match *self {
            Backoff::Constant { .. } => Backoff::Constant { base },
            Backoff::Linear { cap, .. } => Backoff::Linear { base, cap },
            Backoff::Exponential {
                multiplier,
                cap,
                truncate_ms,
                ..
            } => Backoff::Exponential {
                base,
                multiplier,
                cap,
                truncate_ms,
            },
        }
    }

    pub fn base(&self) -> Nanos {
        match *self {
            Backoff::Constant { base }
            | Backoff::Linear { base, .. }
            | Backoff::Exponential { base, .. } => base,
        }
    }

    /// The cap (`u64::MAX` when there is none).
    pub fn cap(&self) -> Nanos {
        match *self {
            Backoff::Constant { base } => base,
            Backoff::Linear { cap, .. } | Backoff::Exponential { cap, .. } => cap,
        }
    }

    /// The delay before retry `n` (n >= 1), before jitter.
    pub fn delay(&self, n: u32) -> Nanos {
        let n = n.max(1);
        match *self {
            Backoff::Constant { base } => base,
            Backoff::Linear { base, cap } => base.saturating_mul(n as u64).min(cap),
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                truncate_ms: true,
            } => {
                // Step by step, as Resilience4j does; stops growing at the cap.
                let ms = crate::engine::NS_PER_MS;
                let mut d = (base / ms) as f64;
                for _ in 1..n.min(2000) {
                    if d * ms as f64 >= cap as f64 {
                        break;
                    }
                    d = (d * multiplier).floor();
                }
                from_f64_ns(d * ms as f64).min(cap)
            }
            Backoff::Exponential {
                base,
                multiplier,
                cap,
                truncate_ms: false,
            } => {
                // n is clamped so that the exponent cannot wrap; 2^2000 is far past
                // any cap already.
                let d = base as f64 * multiplier.powi(n.min(2000) as i32 - 1);
                from_f64_ns(d).min(cap)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    None,
    Full,
    Equal,
    Decorrelated,
    Proportional(f64),
    PollyV2,
}

/// What a request carries from one sleep to the next.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SleepState {
    /// The previous sleep (decorrelated jitter); 0 before the first.
    pub prev: Nanos,
    /// Polly's `prev` factor (polly_v2 jitter).
    pub polly_prev: f64,
}

/// The sleep before retry `n`, updating the request's `state`.
pub fn sleep_before_retry(
    backoff: &Backoff,
    jitter: Jitter,
    n: u32,
    state: &mut SleepState,
    rng: &mut Stream,
) -> Nanos {
    let sleep = jittered(backoff, jitter, n, state, rng);
    state.prev = sleep;
    sleep
}

fn jittered(
    backoff: &Backoff,
    jitter: Jitter,
    n: u32,
    state: &mut SleepState,
    rng: &mut Stream,
) -> Nanos {
    let prev = state.prev;
    match jitter {
        Jitter::None => backoff.delay(n),
        Jitter::Full => {
            let d = backoff.delay(n) as f64;
            from_f64_ns(rng.uniform(0.0, d))
        }
        Jitter::Equal => {
            let d = backoff.delay(n) as f64;
            from_f64_ns(d / 2.0 + rng.uniform(0.0, d / 2.0))
        }
        Jitter::Decorrelated => {
            let base = backoff.base() as f64;
            let hi = (prev.max(backoff.base()) as f64) * 3.0;
            from_f64_ns(rng.uniform(base, hi)).min(backoff.cap())
        }
        Jitter::Proportional(f) => {
            let d = backoff.delay(n) as f64;
            from_f64_ns(d * rng.uniform(1.0 - f, 1.0 + f))
        }
        Jitter::PollyV2 => {
            // Polly.Core RetryHelper.DecorrelatedJitterBackoffV2.
            const P_FACTOR: f64 = 4.0;
            const RP_SCALING: f64 = 1.0 / 1.4;
            let t = (n.max(1) - 1) as f64 + rng.unit();
            let next = libm::pow(2.0, t) * libm::tanh(libm::sqrt(P_FACTOR * t));
            let formula = next - state.polly_prev;
            state.polly_prev = next;
            from_f64_ns(formula * RP_SCALING * backoff.base() as f64).min(backoff.cap())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, Purpose};

    const MS: Nanos = NS_PER_MS;

    fn seq(b: Backoff, n: u32) -> Vec<Nanos> {
        (1..=n).map(|i| b.delay(i) / MS).collect()
    }

    #[test]
    fn exact_sequences_without_jitter() {
        assert_eq!(
            seq(Backoff::Constant { base: 200 * MS }, 4),
            vec![200, 200, 200, 200]
        );
        assert_eq!(
            seq(
                Backoff::Linear {
                    base: 100 * MS,
                    cap: 350 * MS
                },
                5
            ),
            vec![100, 200, 300, 350, 350]
        );
        assert_eq!(
            seq(
                Backoff::Exponential {
                    base: 100 * MS,
                    multiplier: 2.0,
                    cap: 5_000 * MS,
                    truncate_ms: false,
                },
                8
            ),
            vec![100, 200, 400, 800, 1600, 3200, 5000, 5000]
        );
        assert_eq!(
            seq(
                Backoff::Exponential {
                    base: 10 * MS,
                    multiplier: 1.5,
                    cap: u64::MAX,
                    truncate_ms: false,
                },
                4
            ),
            vec![10, 15, 22, 33]
        );
    }

    #[test]
    fn huge_exponents_saturate_at_the_cap() {
        let b = Backoff::Exponential {
            base: MS,
            multiplier: 10.0,
            cap: 30_000 * MS,
            truncate_ms: false,
        };
        assert_eq!(b.delay(1000), 30_000 * MS);
        assert_eq!(b.delay(u32::MAX), 30_000 * MS);
    }

    #[test]
    fn jitter_stays_inside_its_formula() {
        let b = Backoff::Exponential {
            base: 100 * MS,
            multiplier: 2.0,
            cap: 2_000 * MS,
            truncate_ms: false,
        };
        let mut rng = Stream::new(9, Purpose::Jitter, 0);
        for n in 1..=12 {
            let d = b.delay(n);
            let st = &mut SleepState::default();
            for _ in 0..2_000 {
                let none = sleep_before_retry(&b, Jitter::None, n, st, &mut rng);
                assert_eq!(none, d);
                let full = sleep_before_retry(&b, Jitter::Full, n, st, &mut rng);
                assert!(full <= d);
                let equal = sleep_before_retry(&b, Jitter::Equal, n, st, &mut rng);
                assert!(equal >= d / 2 && equal <= d);
                let p = sleep_before_retry(&b, Jitter::Proportional(0.5), n, st, &mut rng);
                assert!(p as f64 >= d as f64 * 0.5 - 1.0 && p as f64 <= d as f64 * 1.5 + 1.0);
            }
        }
    }

    #[test]
    fn decorrelated_keeps_per_request_state() {
        let b = Backoff::Exponential {
            base: 5 * MS,
            multiplier: 2.0,
            cap: 2_000 * MS,
            truncate_ms: false,
        };
        let mut rng = Stream::new(4, Purpose::Jitter, 0);
        let mut st = SleepState::default();
        let mut grew = false;
        for n in 1..=30 {
            let prev = st.prev.max(b.base());
            let s = sleep_before_retry(&b, Jitter::Decorrelated, n, &mut st, &mut rng);
            assert!(s >= b.base() && s <= b.cap(), "{s}");
            assert!(
                s <= (prev * 3).min(b.cap()),
                "sleep {s} above 3 x prev {prev}"
            );
            grew |= s > 3 * b.base();
        }
        // Growth beyond 3 x base is only possible through the carried state.
        assert!(grew);
    }

    #[test]
    fn resilience4j_truncates_every_step() {
        // docs/sources/presets.md §6: 500, 750, 1125, 1687, 2530, 3795, 5692, 8538 ms.
        let b = Backoff::Exponential {
            base: 500 * MS,
            multiplier: 1.5,
            cap: u64::MAX,
            truncate_ms: true,
        };
        assert_eq!(
            seq(b, 8),
            vec![500, 750, 1125, 1687, 2530, 3795, 5692, 8538]
        );
    }

    #[test]
    fn polly_v2_tracks_its_median_and_first_bound() {
        // docs/sources/presets.md §5: the first delay lies in [0, 1.3772 d); the median
        // factors are about 0.897, 1.093, 2.036, 4.046, 8.084 x d (at U = 0.5;
        // the sampled medians are close to them).
        let base = 2_000 * MS;
        let b = Backoff::Exponential {
            base,
            multiplier: 2.0,
            cap: u64::MAX,
            truncate_ms: false,
        };
        let mut rng = Stream::new(5, Purpose::Jitter, 0);
        let mut by_retry: Vec<Vec<f64>> = vec![vec![]; 5];
        for _ in 0..20_000 {
            let mut st = SleepState::default();
            for (n, v) in by_retry.iter_mut().enumerate() {
                let s = sleep_before_retry(&b, Jitter::PollyV2, n as u32 + 1, &mut st, &mut rng);
                v.push(s as f64 / base as f64);
            }
        }
        assert!(by_retry[0].iter().all(|&f| (0.0..1.3772).contains(&f)));
        for (v, expect) in by_retry.iter_mut().zip([0.897, 1.093, 2.036, 4.046, 8.084]) {
            v.sort_by(f64::total_cmp);
            let median = v[v.len() / 2];
            assert!(
                (median / expect - 1.0).abs() < 0.08,
                "median {median} vs {expect}"
            );
        }
    }
}
