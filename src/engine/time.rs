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
        ns.round() as u64
    }
}
