//! A layer's retry policy: how many attempts, how long to wait between
//! them, which outcomes are worth another attempt, and what to do with a
//! server's Retry-After. The decision itself is a plain function, so it can
//! be tested without a simulation.

use crate::engine::{Nanos, Stream};

use super::backoff::{Backoff, Jitter, SleepState, sleep_before_retry};
use super::outcome::{Cause, Failure};
use crate::engine::time::from_f64_ns;

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
            Cause::Deadline
            | Cause::RetryAfterExceedsBudget
            | Cause::BudgetExhausted
            | Cause::BreakerOpen
            | Cause::Throttled
            | Cause::BulkheadFull
            | Cause::PoolTimeout => false,
        }
    }
}

/// How a layer treats a server's Retry-After (or pushback) value. In
/// every mode a wait that does not fit in the remaining budget fails the
/// call at once with `retry_after_exceeds_budget` instead of sleeping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetryAfterMode {
    /// Ignored: the backoff alone decides (botocore, Polly core,
    /// Resilience4j, Tenacity, cenkalti: docs/sources/presets.md §9.1).
    Ignore,
    /// Wait at least the Retry-After (the playbook's rule), optionally
    /// capped at `cap` and stretched by up to `jitter` (a fraction).
    AtLeast { cap: Nanos, jitter: f64 },
    /// The wait *is* the Retry-After, uncapped and unjittered
    /// (Microsoft.Extensions.Http.Resilience, docs/sources/presets.md §5).
    Exact,
    /// AWS SDK retry behaviour 2.1: `clamp(ra, t, t + 5 s)` where t is the
    /// backoff (docs/sources/presets.md §1.3).
    AwsClamp { window: Nanos },
    /// Envoy's rate-limited backoff: `U[ra, 1.5·ra)` when 1 ms < ra ≤ 300 s,
    /// otherwise ignored (docs/sources/presets.md §3).
    Envoy { max: Nanos },
    /// gRPC pushback: exactly `ra`, then the backoff starts over
    /// (docs/sources/presets.md §2).
    GrpcPushback,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Total attempts, the first included (>= 1).
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub jitter: Jitter,
    /// Base used instead of the backoff's after a throttling error (429):
    /// AWS 2.1's x = 1 s (docs/sources/presets.md §1.3).
    pub throttle_base: Option<Nanos>,
    pub retry_on: RetryOn,
    pub retry_after: RetryAfterMode,
    /// No retry whose sleep would end more than this after the call
    /// started (cenkalti/backoff's MaxElapsedTime, docs/sources/presets.md §7.2).
    pub max_elapsed: Option<Nanos>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 1,
            backoff: Backoff::Constant { base: 0 },
            jitter: Jitter::None,
            throttle_base: None,
            retry_on: RetryOn::nothing(),
            retry_after: RetryAfterMode::AtLeast {
                cap: u64::MAX,
                jitter: 0.0,
            },
            max_elapsed: None,
        }
    }
}

/// What a call carries between its attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RetryState {
    /// Attempts made so far (>= 1 when deciding).
    pub attempts: u32,
    /// Retries counted by the backoff (reset by gRPC pushback).
    pub backoff_n: u32,
    pub sleep: SleepState,
    /// When the call started (for `max_elapsed`).
    pub started: Nanos,
}

/// What a layer does after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Sleep this long, then send the next attempt.
    RetryAfter(Nanos),
    /// Give up; the call fails with this cause.
    GiveUp(Cause),
}

/// Whether the policy retries this failure at all: the cause is listed and
/// attempts remain. `None` means "may retry" (budgets decide next).
pub fn give_up_before_budget(
    policy: &RetryPolicy,
    failure: Failure,
    attempts: u32,
) -> Option<Cause> {
    (!policy.retry_on.retries(failure.cause) || attempts >= policy.max_attempts)
        .then_some(failure.cause)
}

/// The sleep before the next attempt, or why there is none. `min_sleep`
/// comes from a budget that delays instead of refusing. No sleep may end at
/// or after `deadline` (`u64::MAX` = none).
pub fn plan_sleep(
    policy: &RetryPolicy,
    failure: Failure,
    state: &mut RetryState,
    now: Nanos,
    deadline: Nanos,
    min_sleep: Nanos,
    rng: &mut Stream,
) -> Decision {
    let n = state.backoff_n + 1;
    let backoff = match (policy.throttle_base, failure.cause) {
        (Some(tb), Cause::Status(429)) => policy.backoff.with_base(tb),
        _ => policy.backoff,
    };
    let t = sleep_before_retry(&backoff, policy.jitter, n, &mut state.sleep, rng);
    let ra = failure.retry_after;
    let mut reset = false;
    // The wait the server's Retry-After asks for, if this mode uses it.
    let (sleep, from_server) = match policy.retry_after {
        _ if ra == 0 => (t, false),
        RetryAfterMode::Ignore => (t, false),
        RetryAfterMode::AtLeast { cap, jitter } => {
            let mut want = ra.min(cap);
            if jitter > 0.0 {
                want = from_f64_ns(want as f64 * rng.uniform(1.0, 1.0 + jitter));
            }
            (t.max(want), want >= t)
        }
        RetryAfterMode::Exact => (ra, true),
        RetryAfterMode::AwsClamp { window } => (ra.clamp(t, t.saturating_add(window)), ra > t),
        RetryAfterMode::Envoy { max } => {
            if ra > crate::engine::NS_PER_MS && ra <= max {
                (from_f64_ns(rng.uniform(ra as f64, ra as f64 * 1.5)), true)
            } else {
                (t, false)
            }
        }
        RetryAfterMode::GrpcPushback => {
            reset = true;
            (ra, true)
        }
    };
    let sleep = sleep.max(min_sleep);
    if from_server && now.saturating_add(sleep) >= deadline {
        return Decision::GiveUp(Cause::RetryAfterExceedsBudget);
    }
    if now.saturating_add(sleep) >= deadline {
        return Decision::GiveUp(Cause::Deadline);
    }
    if let Some(limit) = policy.max_elapsed
        && (now - state.started.min(now)).saturating_add(sleep) > limit
    {
        // cenkalti: "elapsed + next > MaxElapsedTime" stops with the last error.
        return Decision::GiveUp(if from_server {
            Cause::RetryAfterExceedsBudget
        } else {
            failure.cause
        });
    }
    state.backoff_n = if reset { 0 } else { n };
    Decision::RetryAfter(sleep)
}

/// The whole decision for a layer without budgets: classification, then
/// the sleep. (The simulation puts budgets between the two.)
pub fn decide(
    policy: &RetryPolicy,
    failure: Failure,
    state: &mut RetryState,
    now: Nanos,
    deadline: Nanos,
    rng: &mut Stream,
) -> Decision {
    if let Some(cause) = give_up_before_budget(policy, failure, state.attempts) {
        return Decision::GiveUp(cause);
    }
    plan_sleep(policy, failure, state, now, deadline, 0, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, NS_PER_S, Purpose};

    const MS: Nanos = NS_PER_MS;

    fn policy() -> RetryPolicy {
        let mut retry_on = RetryOn::nothing().with_status(503).with_status(429);
        retry_on.timeout = true;
        RetryPolicy {
            max_attempts: 3,
            backoff: Backoff::Constant { base: 100 * MS },
            retry_on,
            ..RetryPolicy::default()
        }
    }

    fn state(attempts: u32) -> RetryState {
        RetryState {
            attempts,
            ..RetryState::default()
        }
    }

    fn d(p: &RetryPolicy, f: Failure, attempts: u32, deadline: Nanos) -> Decision {
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        decide(p, f, &mut state(attempts), 0, deadline, &mut rng)
    }

    #[test]
    fn classification_fails_fast_on_unlisted_outcomes() {
        let p = policy();
        let f = |c| d(&p, Failure::new(c), 1, u64::MAX);
        assert_eq!(f(Cause::Timeout), Decision::RetryAfter(100 * MS));
        assert_eq!(f(Cause::Status(503)), Decision::RetryAfter(100 * MS));
        assert_eq!(f(Cause::Status(500)), Decision::GiveUp(Cause::Status(500)));
        assert_eq!(f(Cause::Connection), Decision::GiveUp(Cause::Connection));
        assert_eq!(f(Cause::Deadline), Decision::GiveUp(Cause::Deadline));
        assert_eq!(f(Cause::BreakerOpen), Decision::GiveUp(Cause::BreakerOpen));
    }

    #[test]
    fn stops_at_max_attempts() {
        let p = policy();
        let f = Failure::new(Cause::Timeout);
        assert!(matches!(d(&p, f, 2, u64::MAX), Decision::RetryAfter(_)));
        assert_eq!(d(&p, f, 3, u64::MAX), Decision::GiveUp(Cause::Timeout));
    }

    #[test]
    fn no_sleep_outlives_the_deadline() {
        let p = policy();
        let f = Failure::new(Cause::Timeout);
        assert_eq!(d(&p, f, 1, 100 * MS), Decision::GiveUp(Cause::Deadline));
        assert!(matches!(d(&p, f, 1, 100 * MS + 1), Decision::RetryAfter(_)));
    }

    fn with_ra(ra: Nanos) -> Failure {
        Failure {
            cause: Cause::Status(503),
            retry_after: ra,
            by_priority: false,
        }
    }

    #[test]
    fn retry_after_is_honoured_or_fails_fast() {
        let mut p = policy();
        let f = with_ra(2 * NS_PER_S);
        assert_eq!(d(&p, f, 1, u64::MAX), Decision::RetryAfter(2 * NS_PER_S));
        assert_eq!(
            d(&p, f, 1, NS_PER_S),
            Decision::GiveUp(Cause::RetryAfterExceedsBudget)
        );
        p.retry_after = RetryAfterMode::AtLeast {
            cap: 500 * MS,
            jitter: 0.0,
        };
        assert_eq!(d(&p, f, 1, u64::MAX), Decision::RetryAfter(500 * MS));
        p.retry_after = RetryAfterMode::Ignore;
        assert_eq!(d(&p, f, 1, NS_PER_S), Decision::RetryAfter(100 * MS));
    }

    #[test]
    fn retry_after_library_variants() {
        let mut p = policy();
        // MS HTTP: exactly the header, even when shorter than the backoff.
        p.retry_after = RetryAfterMode::Exact;
        assert_eq!(
            d(&p, with_ra(30 * MS), 1, u64::MAX),
            Decision::RetryAfter(30 * MS)
        );
        // AWS 2.1 test vectors (docs/sources/presets.md §1.3, rand fixed at 1 there; here
        // the backoff is a constant 100 ms): ra 10 s → t + 5 s; ra 0 → t.
        p.retry_after = RetryAfterMode::AwsClamp {
            window: 5 * NS_PER_S,
        };
        assert_eq!(
            d(&p, with_ra(10 * NS_PER_S), 1, u64::MAX),
            Decision::RetryAfter(5_100 * MS)
        );
        assert_eq!(
            d(&p, with_ra(50 * MS), 1, u64::MAX),
            Decision::RetryAfter(100 * MS)
        );
        assert_eq!(
            d(&p, with_ra(2 * NS_PER_S), 1, u64::MAX),
            Decision::RetryAfter(2 * NS_PER_S)
        );
        // Envoy: [I, 1.5 I), ignored above 300 s.
        p.retry_after = RetryAfterMode::Envoy {
            max: 300 * NS_PER_S,
        };
        let mut rng = Stream::new(3, Purpose::Jitter, 0);
        for _ in 0..1000 {
            match decide(&p, with_ra(NS_PER_S), &mut state(1), 0, u64::MAX, &mut rng) {
                Decision::RetryAfter(s) => assert!((NS_PER_S..1_500 * MS).contains(&s)),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            d(&p, with_ra(301 * NS_PER_S), 1, u64::MAX),
            Decision::RetryAfter(100 * MS)
        );
    }

    #[test]
    fn grpc_pushback_is_exact_then_backoff_resets() {
        let mut p = policy();
        p.backoff = Backoff::Exponential {
            base: 100 * MS,
            multiplier: 2.0,
            cap: u64::MAX,
            truncate_ms: false,
        };
        p.max_attempts = 10;
        p.retry_after = RetryAfterMode::GrpcPushback;
        let mut rng = Stream::new(3, Purpose::Jitter, 0);
        let mut st = state(1);
        let f = Failure::new(Cause::Status(503));
        assert_eq!(
            decide(&p, f, &mut st, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(100 * MS)
        );
        assert_eq!(
            decide(&p, f, &mut st, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(200 * MS)
        );
        assert_eq!(
            decide(&p, with_ra(777 * MS), &mut st, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(777 * MS)
        );
        // Back to the initial backoff.
        assert_eq!(
            decide(&p, f, &mut st, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(100 * MS)
        );
    }

    #[test]
    fn aws_2_1_throttling_base_and_max_elapsed() {
        let mut p = policy();
        p.backoff = Backoff::Exponential {
            base: 50 * MS,
            multiplier: 2.0,
            cap: 20 * NS_PER_S,
            truncate_ms: false,
        };
        p.throttle_base = Some(NS_PER_S);
        assert_eq!(
            d(&p, Failure::new(Cause::Status(503)), 1, u64::MAX),
            Decision::RetryAfter(50 * MS)
        );
        assert_eq!(
            d(&p, Failure::new(Cause::Status(429)), 1, u64::MAX),
            Decision::RetryAfter(NS_PER_S)
        );
        // cenkalti: elapsed + next > MaxElapsedTime stops with the last error.
        p.max_elapsed = Some(120 * MS);
        let mut rng = Stream::new(3, Purpose::Jitter, 0);
        let mut st = RetryState {
            attempts: 1,
            started: 0,
            ..RetryState::default()
        };
        assert_eq!(
            decide(
                &p,
                Failure::new(Cause::Timeout),
                &mut st,
                100 * MS,
                u64::MAX,
                &mut rng
            ),
            Decision::GiveUp(Cause::Timeout)
        );
    }

    /// `plan_sleep` from `now` with the call started at `started`.
    fn plan(
        p: &RetryPolicy,
        f: Failure,
        started: Nanos,
        now: Nanos,
        deadline: Nanos,
        min_sleep: Nanos,
    ) -> Decision {
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        let mut st = RetryState {
            attempts: 1,
            started,
            ..RetryState::default()
        };
        plan_sleep(p, f, &mut st, now, deadline, min_sleep, &mut rng)
    }

    #[test]
    fn the_attempt_cap_is_exact() {
        let mut p = policy();
        p.max_attempts = 1;
        let f = Failure::new(Cause::Timeout);
        assert_eq!(d(&p, f, 1, u64::MAX), Decision::GiveUp(Cause::Timeout));
        p.max_attempts = 5;
        for attempts in 1..5 {
            assert_eq!(
                give_up_before_budget(&p, f, attempts),
                None,
                "attempt {attempts} of 5"
            );
        }
        assert_eq!(give_up_before_budget(&p, f, 5), Some(Cause::Timeout));
        assert_eq!(give_up_before_budget(&p, f, 6), Some(Cause::Timeout));
        // An unlisted cause gives up whatever the count.
        let unlisted = Failure::new(Cause::Status(500));
        assert_eq!(
            give_up_before_budget(&p, unlisted, 1),
            Some(Cause::Status(500))
        );
    }

    #[test]
    fn a_sleep_ending_exactly_at_the_deadline_is_refused() {
        let p = policy(); // constant 100 ms
        let f = Failure::new(Cause::Timeout);
        let now = 7 * MS;
        // The sleep would end at now + 100 ms.
        assert_eq!(
            plan(&p, f, 0, now, now + 100 * MS, 0),
            Decision::GiveUp(Cause::Deadline)
        );
        assert_eq!(
            plan(&p, f, 0, now, now + 100 * MS + 1, 0),
            Decision::RetryAfter(100 * MS)
        );
        // A budget's least sleep counts against the deadline too.
        assert_eq!(
            plan(&p, f, 0, now, now + 300 * MS, 300 * MS),
            Decision::GiveUp(Cause::Deadline)
        );
        assert_eq!(
            plan(&p, f, 0, now, now + 300 * MS + 1, 300 * MS),
            Decision::RetryAfter(300 * MS)
        );
        // A least sleep shorter than the backoff changes nothing.
        assert_eq!(
            plan(&p, f, 0, now, u64::MAX, 40 * MS),
            Decision::RetryAfter(100 * MS)
        );
    }

    #[test]
    fn retry_after_exactly_filling_the_time_left_fails_fast() {
        let p = policy(); // AtLeast, no cap
        let f = with_ra(2 * NS_PER_S);
        let now = 3 * NS_PER_S;
        assert_eq!(
            plan(&p, f, 0, now, now + 2 * NS_PER_S, 0),
            Decision::GiveUp(Cause::RetryAfterExceedsBudget)
        );
        assert_eq!(
            plan(&p, f, 0, now, now + 2 * NS_PER_S + 1, 0),
            Decision::RetryAfter(2 * NS_PER_S)
        );
        // A Retry-After equal to the backoff is the server's wait: the
        // cause names it.
        assert_eq!(
            plan(&p, with_ra(100 * MS), 0, 0, 100 * MS, 0),
            Decision::GiveUp(Cause::RetryAfterExceedsBudget)
        );
        // Shorter than the backoff: the backoff decides, a plain deadline.
        assert_eq!(
            plan(&p, with_ra(100 * MS - 1), 0, 0, 100 * MS, 0),
            Decision::GiveUp(Cause::Deadline)
        );
    }

    #[test]
    fn max_elapsed_allows_a_sleep_ending_exactly_at_the_limit() {
        let mut p = policy(); // constant 100 ms
        p.max_elapsed = Some(NS_PER_S);
        let f = Failure::new(Cause::Timeout);
        let started = 5 * NS_PER_S;
        // Elapsed 900 ms + 100 ms sleep = the limit: allowed (cenkalti
        // stops only when elapsed + next > MaxElapsedTime).
        assert_eq!(
            plan(&p, f, started, started + 900 * MS, u64::MAX, 0),
            Decision::RetryAfter(100 * MS)
        );
        assert_eq!(
            plan(&p, f, started, started + 900 * MS + 1, u64::MAX, 0),
            Decision::GiveUp(Cause::Timeout)
        );
        // The elapsed time counts from the call's start, not from 0.
        assert_eq!(
            plan(&p, f, started, started + 899 * MS, u64::MAX, 0),
            Decision::RetryAfter(100 * MS)
        );
        // A least sleep from a budget counts too.
        assert_eq!(
            plan(&p, f, started, started, u64::MAX, NS_PER_S),
            Decision::RetryAfter(NS_PER_S)
        );
        assert_eq!(
            plan(&p, f, started, started, u64::MAX, NS_PER_S + 1),
            Decision::GiveUp(Cause::Timeout)
        );
        // A server's wait past the limit names the Retry-After.
        assert_eq!(
            plan(&p, with_ra(2 * NS_PER_S), started, started, u64::MAX, 0),
            Decision::GiveUp(Cause::RetryAfterExceedsBudget)
        );
        assert_eq!(
            plan(&p, with_ra(NS_PER_S), started, started, u64::MAX, 0),
            Decision::RetryAfter(NS_PER_S)
        );
    }

    #[test]
    fn retry_after_jitter_stretches_within_its_fraction() {
        let mut p = policy();
        p.retry_after = RetryAfterMode::AtLeast {
            cap: u64::MAX,
            jitter: 0.2,
        };
        let mut rng = Stream::new(8, Purpose::Jitter, 0);
        let (mut lo, mut hi) = (u64::MAX, 0);
        for _ in 0..2_000 {
            let mut expect_rng = rng.clone();
            let s = match decide(&p, with_ra(NS_PER_S), &mut state(1), 0, u64::MAX, &mut rng) {
                Decision::RetryAfter(s) => s,
                other => panic!("{other:?}"),
            };
            // The constant backoff draws nothing; the stretch is the one
            // draw: ra × U(1, 1.2).
            let want = from_f64_ns(NS_PER_S as f64 * expect_rng.uniform(1.0, 1.2));
            assert_eq!(s, want);
            lo = lo.min(s);
            hi = hi.max(s);
        }
        assert!((NS_PER_S..1_010 * MS).contains(&lo), "{lo}");
        assert!(hi < 1_200 * MS && hi > 1_190 * MS, "{hi}");
        // With the cap below the header the cap is what gets stretched.
        p.retry_after = RetryAfterMode::AtLeast {
            cap: 500 * MS,
            jitter: 0.2,
        };
        match decide(&p, with_ra(NS_PER_S), &mut state(1), 0, u64::MAX, &mut rng) {
            Decision::RetryAfter(s) => assert!((500 * MS..600 * MS).contains(&s), "{s}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_zero_retry_after_means_no_header_in_every_mode() {
        let mut p = policy();
        let f = with_ra(0);
        for mode in [
            RetryAfterMode::Exact,
            RetryAfterMode::GrpcPushback,
            RetryAfterMode::AwsClamp {
                window: 5 * NS_PER_S,
            },
            RetryAfterMode::Envoy {
                max: 300 * NS_PER_S,
            },
        ] {
            p.retry_after = mode;
            assert_eq!(d(&p, f, 1, u64::MAX), Decision::RetryAfter(100 * MS));
            // Not the server's wait: a plain deadline failure.
            assert_eq!(d(&p, f, 1, 100 * MS), Decision::GiveUp(Cause::Deadline));
        }
    }

    #[test]
    fn aws_clamp_and_envoy_bounds_are_exact() {
        let mut p = policy();
        p.retry_after = RetryAfterMode::AwsClamp {
            window: 5 * NS_PER_S,
        };
        // ra = t: the backoff's own wait, not the server's.
        assert_eq!(
            d(&p, with_ra(100 * MS), 1, 100 * MS),
            Decision::GiveUp(Cause::Deadline)
        );
        assert_eq!(
            d(&p, with_ra(100 * MS + 1), 1, 100 * MS),
            Decision::GiveUp(Cause::RetryAfterExceedsBudget)
        );
        // Exactly t + window.
        assert_eq!(
            d(&p, with_ra(5_100 * MS), 1, u64::MAX),
            Decision::RetryAfter(5_100 * MS)
        );
        assert_eq!(
            d(&p, with_ra(5_100 * MS + 1), 1, u64::MAX),
            Decision::RetryAfter(5_100 * MS)
        );
        // Envoy: used when 1 ms < ra <= max, else the backoff.
        p.retry_after = RetryAfterMode::Envoy {
            max: 300 * NS_PER_S,
        };
        assert_eq!(
            d(&p, with_ra(MS), 1, u64::MAX),
            Decision::RetryAfter(100 * MS)
        );
        let used = |ra: Nanos| match d(&p, with_ra(ra), 1, u64::MAX) {
            Decision::RetryAfter(s) => s >= ra && (s as f64) < ra as f64 * 1.5,
            other => panic!("{other:?}"),
        };
        assert!(used(MS + 1));
        assert!(used(300 * NS_PER_S));
        assert_eq!(
            d(&p, with_ra(300 * NS_PER_S + 1), 1, u64::MAX),
            Decision::RetryAfter(100 * MS)
        );
        // The Envoy draw is ra × U(1, 1.5): spread over the whole range.
        let mut rng = Stream::new(12, Purpose::Jitter, 0);
        let (mut lo, mut hi) = (f64::MAX, 0.0f64);
        for _ in 0..2_000 {
            if let Decision::RetryAfter(s) =
                decide(&p, with_ra(NS_PER_S), &mut state(1), 0, u64::MAX, &mut rng)
            {
                lo = lo.min(s as f64 / NS_PER_S as f64);
                hi = hi.max(s as f64 / NS_PER_S as f64);
            }
        }
        assert!(lo < 1.01 && hi > 1.49, "{lo} {hi}");
    }

    #[test]
    fn status_codes_are_a_set_over_0_to_639() {
        let r = RetryOn::nothing()
            .with_status(0)
            .with_status(63)
            .with_status(64)
            .with_status(639)
            .with_status(640)
            .with_status(u16::MAX);
        for (code, want) in [
            (0, true),
            (1, false),
            (63, true),
            (64, true),
            (65, false),
            (128, false),
            (638, false),
            (639, true),
            (640, false),
            (u16::MAX, false),
        ] {
            assert_eq!(r.status(code), want, "{code}");
        }
        assert_eq!(RetryOn::nothing(), RetryOn::default());
        let mut all = r;
        all.timeout = true;
        all.connection = true;
        assert!(all.retries(Cause::Timeout) && all.retries(Cause::Connection));
        assert!(!r.retries(Cause::Timeout) && !r.retries(Cause::Connection));
        assert!(all.retries(Cause::Status(639)) && !all.retries(Cause::Status(500)));
        for never in [
            Cause::Deadline,
            Cause::RetryAfterExceedsBudget,
            Cause::BudgetExhausted,
            Cause::BreakerOpen,
            Cause::Throttled,
            Cause::BulkheadFull,
        ] {
            assert!(!all.retries(never), "{never:?}");
        }
    }

    #[test]
    fn the_backoff_counter_advances_only_on_a_retry() {
        let mut p = policy();
        p.backoff = Backoff::exponential(100 * MS, 2.0, u64::MAX);
        p.max_attempts = 10;
        let mut rng = Stream::new(3, Purpose::Jitter, 0);
        let mut st = state(1);
        let f = Failure::new(Cause::Timeout);
        assert_eq!(
            decide(&p, f, &mut st, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(100 * MS)
        );
        assert_eq!(st.backoff_n, 1);
        // Refused by the deadline: the counter stays.
        assert_eq!(
            decide(&p, f, &mut st, 0, 200 * MS, &mut rng),
            Decision::GiveUp(Cause::Deadline)
        );
        assert_eq!(st.backoff_n, 1);
        assert_eq!(
            decide(&p, f, &mut st, 0, u64::MAX, &mut rng),
            Decision::RetryAfter(200 * MS)
        );
        assert_eq!(st.backoff_n, 2);
        assert_eq!(st.sleep.prev, 200 * MS);
    }

    /// A Retry-After without jitter takes no draw from the stream (the
    /// full jitter's draw is the only one), so every later number of the
    /// stream is what it would be without the header.
    #[test]
    fn a_retry_after_without_jitter_draws_nothing() {
        let mut p = policy();
        p.jitter = Jitter::Full;
        p.retry_after = RetryAfterMode::AtLeast {
            cap: u64::MAX,
            jitter: 0.0,
        };
        let mut rng = Stream::new(3, Purpose::Jitter, 0);
        let mut fresh = Stream::new(3, Purpose::Jitter, 0);
        assert_eq!(
            decide(
                &p,
                with_ra(2 * NS_PER_S),
                &mut state(1),
                0,
                u64::MAX,
                &mut rng
            ),
            Decision::RetryAfter(2 * NS_PER_S)
        );
        fresh.unit();
        assert_eq!(rng.unit().to_bits(), fresh.unit().to_bits());
    }
}
