//! A layer's retry policy: how many attempts, how long to wait between
//! them, which outcomes are worth another attempt, and what to do with a
//! server's Retry-After. The decision itself is a plain function, so it can
//! be tested without a simulation.

use crate::engine::{Nanos, Stream};

use super::backoff::{Backoff, Jitter, sleep_before_retry};
use super::outcome::{Cause, Failure};

/// Which failures are retried. Status codes are a bit set over 0..640.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RetryOn {
    pub timeout: bool,
    pub connection: bool,
    statuses: [u64; 10],
}

impl RetryOn {
    pub fn nothing() -> Self {
        RetryOn::default()
    }

    pub fn with_status(mut self, code: u16) -> Self {
        if (code as usize) < 640 {
            self.statuses[code as usize / 64] |= 1 << (code % 64);
        }
        self
    }

    pub fn status(&self, code: u16) -> bool {
        (code as usize) < 640 && self.statuses[code as usize / 64] & (1 << (code % 64)) != 0
    }

    /// Whether a failure with this cause may be retried. Deadline and
    /// budget failures never are.
    pub fn retries(&self, cause: Cause) -> bool {
        match cause {
            Cause::Timeout => self.timeout,
            Cause::Connection => self.connection,
            Cause::Status(c) => self.status(c),
            Cause::Deadline | Cause::RetryAfterExceedsBudget => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Total attempts, the first included (>= 1).
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub jitter: Jitter,
    pub retry_on: RetryOn,
    pub honor_retry_after: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 1,
            backoff: Backoff::Constant { base: 0 },
            jitter: Jitter::None,
            retry_on: RetryOn::nothing(),
            honor_retry_after: true,
        }
    }
}

/// What a layer does after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Sleep this long, then send attempt `attempts + 1`.
    RetryAfter(Nanos),
    /// Give up; the call fails with this cause.
    GiveUp(Cause),
}

/// Decides what follows a failed attempt.
///
/// - `attempts`: attempts made so far (>= 1).
/// - `prev_sleep`: the previous sleep of this call (decorrelated jitter).
/// - `now`, `deadline`: no sleep may end at or after the deadline
///   (`u64::MAX` = none); one that would fails the call with `Deadline`
///   (or `RetryAfterExceedsBudget` when the server's Retry-After alone is
///   what does not fit).
pub fn decide(
    policy: &RetryPolicy,
    failure: Failure,
    attempts: u32,
    prev_sleep: Nanos,
    now: Nanos,
    deadline: Nanos,
    rng: &mut Stream,
) -> Decision {
    if !policy.retry_on.retries(failure.cause) || attempts >= policy.max_attempts {
        return Decision::GiveUp(failure.cause);
    }
    let backoff = sleep_before_retry(&policy.backoff, policy.jitter, attempts, prev_sleep, rng);
    let remaining = deadline.saturating_sub(now);
    if policy.honor_retry_after && failure.retry_after > 0 {
        if failure.retry_after >= remaining {
            return Decision::GiveUp(Cause::RetryAfterExceedsBudget);
        }
        let sleep = backoff.max(failure.retry_after);
        return if sleep >= remaining {
            Decision::GiveUp(Cause::Deadline)
        } else {
            Decision::RetryAfter(sleep)
        };
    }
    if backoff >= remaining {
        Decision::GiveUp(Cause::Deadline)
    } else {
        Decision::RetryAfter(backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, NS_PER_S, Purpose};

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            backoff: Backoff::Constant {
                base: 100 * NS_PER_MS,
            },
            jitter: Jitter::None,
            retry_on: RetryOn {
                timeout: true,
                connection: false,
                ..RetryOn::nothing()
            }
            .with_status(503),
            honor_retry_after: true,
        }
    }

    #[test]
    fn classification_fails_fast_on_unlisted_outcomes() {
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        let p = policy();
        let d = |c| decide(&p, Failure::new(c), 1, 0, 0, u64::MAX, &mut rng.clone());
        assert_eq!(d(Cause::Timeout), Decision::RetryAfter(100 * NS_PER_MS));
        assert_eq!(d(Cause::Status(503)), Decision::RetryAfter(100 * NS_PER_MS));
        assert_eq!(d(Cause::Status(500)), Decision::GiveUp(Cause::Status(500)));
        assert_eq!(d(Cause::Connection), Decision::GiveUp(Cause::Connection));
        assert_eq!(d(Cause::Deadline), Decision::GiveUp(Cause::Deadline));
        let _ = &mut rng;
    }

    #[test]
    fn stops_at_max_attempts() {
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        let p = policy();
        let f = Failure::new(Cause::Timeout);
        assert!(matches!(
            decide(&p, f, 2, 0, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(_)
        ));
        assert_eq!(
            decide(&p, f, 3, 0, 0, u64::MAX, &mut rng),
            Decision::GiveUp(Cause::Timeout)
        );
    }

    #[test]
    fn no_sleep_outlives_the_deadline() {
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        let p = policy();
        let f = Failure::new(Cause::Timeout);
        assert_eq!(
            decide(&p, f, 1, 0, 0, 100 * NS_PER_MS, &mut rng),
            Decision::GiveUp(Cause::Deadline)
        );
        assert!(matches!(
            decide(&p, f, 1, 0, 0, 100 * NS_PER_MS + 1, &mut rng),
            Decision::RetryAfter(_)
        ));
    }

    #[test]
    fn retry_after_is_honoured_or_fails_fast() {
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        let mut p = policy();
        let f = Failure {
            cause: Cause::Status(503),
            retry_after: 2 * NS_PER_S,
        };
        assert_eq!(
            decide(&p, f, 1, 0, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(2 * NS_PER_S)
        );
        assert_eq!(
            decide(&p, f, 1, 0, 0, NS_PER_S, &mut rng),
            Decision::GiveUp(Cause::RetryAfterExceedsBudget)
        );
        p.honor_retry_after = false;
        assert_eq!(
            decide(&p, f, 1, 0, 0, NS_PER_S, &mut rng),
            Decision::RetryAfter(100 * NS_PER_MS)
        );
    }
}
