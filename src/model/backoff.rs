//! Backoff delays and jitter, exactly as shared/DESIGN.md gives them.
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
    },
}

impl Backoff {
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
}

/// The sleep before retry `n`. `prev` is the previous sleep of the same
/// request (the base before the first retry); only decorrelated jitter
/// reads it.
pub fn sleep_before_retry(
    backoff: &Backoff,
    jitter: Jitter,
    n: u32,
    prev: Nanos,
    rng: &mut Stream,
) -> Nanos {
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
                    cap: 5_000 * MS
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
                    cap: u64::MAX
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
        };
        let mut rng = Stream::new(9, Purpose::Jitter, 0);
        for n in 1..=12 {
            let d = b.delay(n);
            for _ in 0..2_000 {
                let none = sleep_before_retry(&b, Jitter::None, n, 0, &mut rng);
                assert_eq!(none, d);
                let full = sleep_before_retry(&b, Jitter::Full, n, 0, &mut rng);
                assert!(full <= d);
                let equal = sleep_before_retry(&b, Jitter::Equal, n, 0, &mut rng);
                assert!(equal >= d / 2 && equal <= d);
                let p = sleep_before_retry(&b, Jitter::Proportional(0.5), n, 0, &mut rng);
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
        };
        let mut rng = Stream::new(4, Purpose::Jitter, 0);
        let mut prev = b.base();
        let mut grew = false;
        for n in 1..=30 {
            let s = sleep_before_retry(&b, Jitter::Decorrelated, n, prev, &mut rng);
            assert!(s >= b.base() && s <= b.cap(), "{s}");
            assert!(
                s <= (prev * 3).min(b.cap()),
                "sleep {s} above 3 x prev {prev}"
            );
            grew |= s > 3 * b.base();
            prev = s;
        }
        // Growth beyond 3 x base is only possible through the carried state.
        assert!(grew);
    }
}
