//! Simulated time: an integer number of nanoseconds since the start of a run.
//! Integers keep event ordering exact and runs reproducible; floating-point
//! times would make ties depend on rounding.

/// A point in simulated time or a duration, in nanoseconds.
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_S: Nanos = 1_000_000_000;

/// Seconds as a float, for reports.
pub fn secs(t: Nanos) -> f64 {
    t as f64 / NS_PER_S as f64
}

/// Milliseconds as a float, for reports.
pub fn millis(t: Nanos) -> f64 {
    t as f64 / NS_PER_MS as f64
}

/// Converts a non-negative float number of nanoseconds to `Nanos`, rounding
/// to the nearest integer and saturating instead of overflowing.
pub fn from_f64_ns(ns: f64) -> Nanos {
    if ns.is_nan() || ns <= 0.0 {
        0
    } else if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        // Exact ceiling-free rounding without a libm call (`f64::round` is
        // a function call on baseline x86-64): split into integer and
        // fraction, round half away from zero like `round`.
        let whole = ns as u64; // truncates toward zero
        if ns - whole as f64 >= 0.5 {
            whole + 1
        } else {
            whole
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_milliseconds_of_nanoseconds() {
        assert_eq!(secs(2_500_000_000), 2.5);
        assert_eq!(secs(NS_PER_MS), 0.001);
        assert_eq!(millis(1_500_000), 1.5);
        assert_eq!(millis(3 * NS_PER_S), 3000.0);
        assert_eq!((secs(0), millis(0)), (0.0, 0.0));
    }

    #[test]
    fn rounding_matches_f64_round() {
        for x in [
            0.0,
            0.4,
            0.5,
            0.6,
            1.5,
            2.5,
            1e9 + 0.49,
            1e12 + 0.5,
            123456.789,
        ] {
            assert_eq!(from_f64_ns(x), x.round() as u64, "{x}");
        }
        assert_eq!(from_f64_ns(-3.0), 0);
        assert_eq!(from_f64_ns(f64::NAN), 0);
        assert_eq!(from_f64_ns(1e30), u64::MAX);
    }
}
