//! How long a level sampled for the time series holds.
//!
//! A gate's state (a retry budget, a throttle, a breaker) reports one
//! number per bucket, its *level* (tokens, a rejection probability, open or
//! closed). Most levels change only when a request touches the state; some
//! also change with time alone (a sliding window's old slices leave it);
//! and reading a few moves the state itself (a bucket refilled up to now,
//! in floating point). A layer of many instances samples only the states
//! whose level may have changed (see `model::scoped`), so each kind says
//! which of the three its level is.

use crate::engine::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// Until the state is next touched.
    UntilTouched,
    /// Until the state is touched or this time comes, whichever is first.
    Until(Nanos),
    /// Reading the level changes the state (a refill up to now), so every
    /// state is read at every sample, as a state of its own would be.
    ReadAlways,
}

impl Holds {
    /// The earlier of two windows' holds.
    pub fn min(self, other: Holds) -> Holds {
        match (self, other) {
            (Holds::ReadAlways, _) | (_, Holds::ReadAlways) => Holds::ReadAlways,
            (Holds::UntilTouched, h) | (h, Holds::UntilTouched) => h,
            (Holds::Until(a), Holds::Until(b)) => Holds::Until(a.min(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earlier_hold_wins() {
        use Holds::*;
        assert_eq!(Until(5).min(Until(3)), Until(3));
        assert_eq!(Until(3).min(Until(5)), Until(3));
        assert_eq!(UntilTouched.min(Until(5)), Until(5));
        assert_eq!(Until(5).min(UntilTouched), Until(5));
        assert_eq!(UntilTouched.min(UntilTouched), UntilTouched);
        assert_eq!(ReadAlways.min(Until(5)), ReadAlways);
        assert_eq!(UntilTouched.min(ReadAlways), ReadAlways);
    }
}
