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

    /// Millisecond steps (Resilience4j) stop at the cap: a delay that has
    /// reached it stays there, even with a multiplier below 1, which the
    /// scenario format accepts (it only asks for a multiplier above 0).
    #[test]
    fn a_truncated_delay_at_the_cap_stays_there() {
        let b = Backoff::Exponential {
            base: 1_000 * MS,
            multiplier: 0.5,
            cap: 1_000 * MS,
            truncate_ms: true,
        };
        assert_eq!(seq(b, 4), vec![1_000, 1_000, 1_000, 1_000]);
        let below = b.with_base(999 * MS);
        assert_eq!(seq(below, 4), vec![999, 499, 249, 124]);
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
    fn retry_zero_is_retry_one_and_caps_are_exact() {
        let lin = Backoff::Linear {
            base: 100 * MS,
            cap: 300 * MS,
        };
        let exp = Backoff::exponential(100 * MS, 2.0, 400 * MS);
        let trunc = Backoff::Exponential {
            base: 500 * MS + 700_000, // 500.7 ms: whole milliseconds only
            multiplier: 1.5,
            cap: 2_000 * MS,
            truncate_ms: true,
        };
        for b in [Backoff::Constant { base: 70 * MS }, lin, exp, trunc] {
            assert_eq!(b.delay(0), b.delay(1), "{b:?}");
        }
        // Linear: base × n reaches the cap exactly at n = 3.
        assert_eq!(seq(lin, 4), vec![100, 200, 300, 300]);
        assert_eq!(seq(exp, 4), vec![100, 200, 400, 400]);
        // Truncated: 500, 750, 1125, 1687, then the cap (2530 > 2000).
        assert_eq!(seq(trunc, 6), vec![500, 750, 1125, 1687, 2000, 2000]);
        assert_eq!(trunc.delay(u32::MAX), 2_000 * MS);
        // A multiplier of 1 never reaches the cap: the step count is bounded.
        let flat = Backoff::Exponential {
            base: 3 * MS,
            multiplier: 1.0,
            cap: u64::MAX,
            truncate_ms: true,
        };
        assert_eq!(flat.delay(u32::MAX), 3 * MS);
        assert_eq!(
            Backoff::exponential(3 * MS, 1.0, u64::MAX).delay(u32::MAX),
            3 * MS
        );
    }

    #[test]
    fn base_cap_and_rebasing_keep_the_curve() {
        let c = Backoff::Constant { base: 7 };
        assert_eq!((c.base(), c.cap()), (7, 7));
        assert_eq!(c.with_base(9), Backoff::Constant { base: 9 });
        let l = Backoff::Linear { base: 2, cap: 50 };
        assert_eq!((l.base(), l.cap()), (2, 50));
        assert_eq!(l.with_base(5), Backoff::Linear { base: 5, cap: 50 });
        let e = Backoff::Exponential {
            base: 3,
            multiplier: 1.5,
            cap: 90,
            truncate_ms: true,
        };
        assert_eq!((e.base(), e.cap()), (3, 90));
        assert_eq!(
            e.with_base(4),
            Backoff::Exponential {
                base: 4,
                multiplier: 1.5,
                cap: 90,
                truncate_ms: true,
            }
        );
    }

    /// The one uniform draw a jittered sleep makes, read from a copy of
    /// the stream.
    fn next_unit(rng: &Stream) -> f64 {
        rng.clone().unit()
    }

    /// Every jitter is its formula applied to the stream's next uniform
    /// draw u, to the nanosecond: none d; full d·u; equal d/2 + d/2·u;
    /// proportional(f) d·(1 − f + 2f·u); decorrelated base + (3·prev −
    /// base)·u, capped. A narrowed or shifted range changes the numbers.
    #[test]
    fn each_jitter_is_its_formula_of_one_uniform_draw() {
        let b = Backoff::exponential(100 * MS, 2.0, 2_000 * MS);
        let mut rng = Stream::new(17, Purpose::Jitter, 0);
        let close = |got: Nanos, want: f64| {
            assert!((got as f64 - want).abs() <= 1.0, "{got} vs {want}");
        };
        for n in 1..=8u32 {
            let d = b.delay(n) as f64;
            let st = &mut SleepState::default();
            let u = next_unit(&rng);
            close(sleep_before_retry(&b, Jitter::Full, n, st, &mut rng), d * u);
            let u = next_unit(&rng);
            close(
                sleep_before_retry(&b, Jitter::Equal, n, st, &mut rng),
                d * (1.0 + u) / 2.0,
            );
            let u = next_unit(&rng);
            close(
                sleep_before_retry(&b, Jitter::Proportional(0.3), n, st, &mut rng),
                d * (0.7 + 0.6 * u),
            );
            // Decorrelated from a previous sleep of 300 ms: U(100, 900) ms,
            // capped at 2 s; from none: U(100, 300) ms.
            for (prev, hi) in [(300 * MS, 900.0), (0, 300.0), (50 * MS, 300.0)] {
                st.prev = prev;
                let u = next_unit(&rng);
                close(
                    sleep_before_retry(&b, Jitter::Decorrelated, n, st, &mut rng),
                    (100.0 + (hi - 100.0) * u) * MS as f64,
                );
            }
            st.prev = 1_000 * MS;
            let u = next_unit(&rng);
            let want = ((100.0 + 2_900.0 * u) * MS as f64).min(2e9);
            close(
                sleep_before_retry(&b, Jitter::Decorrelated, n, st, &mut rng),
                want,
            );
        }
    }

    /// Lowest and highest of `k` sleeps before retry `n`, as fractions of
    /// `scale`, with the state reset to `prev` before each.
    fn extremes(b: &Backoff, jitter: Jitter, n: u32, prev: Nanos, scale: f64) -> (f64, f64, f64) {
        let mut rng = Stream::new(23, Purpose::Jitter, n as u64);
        let (mut lo, mut hi, mut sum) = (f64::MAX, f64::MIN, 0.0);
        let k = 4_000;
        for _ in 0..k {
            let st = &mut SleepState {
                prev,
                polly_prev: 0.0,
            };
            let x = sleep_before_retry(b, jitter, n, st, &mut rng) as f64 / scale;
            lo = lo.min(x);
            hi = hi.max(x);
            sum += x;
        }
        (lo, hi, sum / k as f64)
    }

    /// The ranges are exact and filled: 4 000 draws come within 0.5% of
    /// both ends (a range narrowed by 5% at either end fails), none
    /// outside, and the mean is the range's middle within 4 standard
    /// errors (a uniform's SD is width/√12).
    #[test]
    fn jitter_ranges_are_exact_and_filled() {
        let b = Backoff::exponential(100 * MS, 2.0, 10_000 * MS);
        let d = b.delay(4) as f64; // 800 ms
        let check = |what: &str, (lo, hi, mean): (f64, f64, f64), a: f64, z: f64| {
            assert!(
                lo >= a && lo < a + 0.005 * (z - a),
                "{what}: low {lo} vs {a}"
            );
            assert!(
                hi < z && hi > z - 0.005 * (z - a),
                "{what}: high {hi} vs {z}"
            );
            let se = (z - a) / 12f64.sqrt() / 4_000f64.sqrt();
            let mid = (a + z) / 2.0;
            assert!(
                (mean - mid).abs() < 4.0 * se,
                "{what}: mean {mean} vs {mid}"
            );
        };
        check("full", extremes(&b, Jitter::Full, 4, 0, d), 0.0, 1.0);
        check("equal", extremes(&b, Jitter::Equal, 4, 0, d), 0.5, 1.0);
        check(
            "proportional 0.5",
            extremes(&b, Jitter::Proportional(0.5), 4, 0, d),
            0.5,
            1.5,
        );
        check(
            "proportional 0.1",
            extremes(&b, Jitter::Proportional(0.1), 4, 0, d),
            0.9,
            1.1,
        );
        // Decorrelated ignores n: U(base, 3 × prev), here U(100, 1 500) ms.
        let base = 100.0 * MS as f64;
        check(
            "decorrelated",
            extremes(&b, Jitter::Decorrelated, 9, 500 * MS, base),
            1.0,
            15.0,
        );
        // The cap clips it: a previous sleep of 5 s allows up to 15 s, the
        // cap is 10 s; more than half of U(0.1, 15) s lies above it.
        let (lo, hi, _) = extremes(&b, Jitter::Decorrelated, 1, 5_000 * MS, 1e9);
        assert!((0.1..0.2).contains(&lo), "{lo}");
        assert_eq!(hi, 10.0);
        // No jitter: exactly d.
        assert_eq!(extremes(&b, Jitter::None, 4, 0, d), (1.0, 1.0, 1.0));
    }

    #[test]
    fn polly_v2_is_its_formula_and_keeps_its_factor_per_request() {
        // The sleep before retry n is (f(t) − f(t_prev)) / 1.4 × base with
        // f(t) = 2^t · tanh(√(4t)), t = n − 1 + u; the cap clips it.
        let base = 1_000 * MS;
        let b = Backoff::exponential(base, 2.0, 5_000 * MS);
        let f = |t: f64| 2f64.powf(t) * (4.0 * t).sqrt().tanh();
        let mut rng = Stream::new(29, Purpose::Jitter, 0);
        let mut st = SleepState::default();
        let mut prev_f = 0.0;
        for n in 1..=6u32 {
            let t = (n - 1) as f64 + next_unit(&rng);
            let want = ((f(t) - prev_f) / 1.4 * base as f64).min(5e9);
            let got = sleep_before_retry(&b, Jitter::PollyV2, n, &mut st, &mut rng);
            assert!((got as f64 - want).abs() <= 2.0, "n={n}: {got} vs {want}");
            assert!((st.polly_prev - f(t)).abs() < 1e-12);
            assert_eq!(st.prev, got);
            prev_f = f(t);
        }
        // Retry 0 is retry 1: t in [0, 1).
        let mut st = SleepState::default();
        let t = next_unit(&rng);
        let got = sleep_before_retry(&b, Jitter::PollyV2, 0, &mut st, &mut rng);
        assert!((got as f64 - f(t) / 1.4 * base as f64).abs() <= 2.0);
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
