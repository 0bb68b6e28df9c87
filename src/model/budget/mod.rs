//! Retry budgets: shared state that decides whether a call may retry at
//! all, whatever its own attempt count says. Each kind is a small state
//! machine in a file of its own, driven by the same five events (a call
//! starts, an attempt ends, a retry is asked for, an attempt fails in a way
//! the policy does not retry, a call ends) through [`RetryBudget`], whose
//! methods default to doing nothing; [`Budget`] holds one of them by value
//! and dispatches with a `match`. The source of every constant is named in
//! each kind's file (and in docs/sources/presets.md).

mod aws_quota;
mod envoy;
mod finagle;
mod per_minute;
mod rate_limiter;
mod ratio;
mod retry_tokens;
#[cfg(test)]
mod tests;
mod token_bucket;

pub use aws_quota::AwsQuota;
pub use envoy::{EnvoyBudget, EnvoyMaxRetries};
pub use finagle::Finagle;
pub use per_minute::PerMinute;
pub use rate_limiter::RateLimiter;
pub use ratio::Ratio;
pub use retry_tokens::RetryTokens;
pub use token_bucket::TokenBucket;

use crate::engine::Nanos;

use super::level::Holds;
use super::outcome::Cause;

/// Which budget, with its parameters (what a scenario configures).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BudgetConfig {
    /// gRFC A6 retry throttling (docs/sources/presets.md §2): tokens start at
    /// `max_tokens`; a retryable failure takes 1, a success adds
    /// `token_ratio`; a retry is allowed only while tokens > max/2, checked
    /// after the failure's decrement.
    TokenBucket { max_tokens: f64, token_ratio: f64 },
    /// Brooker's retry token bucket ("Fixing retries with token buckets and
    /// circuit breakers", 2022; docs/sources/experiments.md §2): starts full at
    /// `capacity`; every new call adds `per_request`; a retry needs more
    /// than `retry_cost` tokens and spends `retry_cost`.
    RetryTokens {
        capacity: f64,
        per_request: f64,
        retry_cost: f64,
    },
    /// Finagle `RetryBudget(ttl, minRetriesPerSec, percentCanRetry)`
    /// (docs/sources/presets.md §4): deposit 1000 per successful call, withdraw
    /// 1000/percent per retry, a reserve of minRetriesPerSec × ttl
    /// withdrawals, all in a leaky window of `ttl` (10 slices). Each call
    /// may requeue at most ceil(`max_requeues_fraction` × balance) times,
    /// fixed when it starts (RequeueFilter's MaxRequeuesPerReq = 0.2).
    Finagle {
        ttl: Nanos,
        min_retries_per_sec: f64,
        percent_can_retry: f64,
        max_requeues_fraction: f64,
    },
    /// Envoy `retry_budget` (docs/sources/presets.md §3): concurrent retries ≤
    /// max(percent/100 × active calls, min_retry_concurrency); a retry is
    /// active from the moment it is scheduled until its attempt resolves.
    EnvoyBudget { percent: f64, min_concurrency: u32 },
    /// Envoy's `max_retries` circuit breaker (docs/sources/presets.md §3): at most `max`
    /// concurrent retries (3 by default).
    EnvoyMaxRetries { max: u32 },
    /// AWS SDK retry quota (docs/sources/presets.md §1.2, §1.3): starts full at
    /// `capacity`; a retry costs `timeout_cost` after a timeout,
    /// `throttle_cost` after a throttling error (429 here), else
    /// `retry_cost`, and is refused when the quota has less; a successful
    /// attempt gives back the call's last cost, or `success_increment` when
    /// the call never paid one.
    AwsQuota {
        capacity: u32,
        retry_cost: u32,
        timeout_cost: u32,
        throttle_cost: u32,
        success_increment: u32,
    },
    /// The SRE book's per-client retry budget (docs/sources/presets.md §8): retry only
    /// while retries ÷ calls over the last `window` stays within `ratio`
    /// (the retry being granted counted), so retry load is at most
    /// 1 + ratio.
    Ratio { ratio: f64, window: Nanos },
    /// The SRE book's server-wide budget, "60 retries per minute per
    /// process" (docs/sources/presets.md §8), as a token bucket of `per_minute` tokens
    /// refilled continuously at `per_minute` per minute.
    PerMinute { per_minute: f64 },
    /// A rate limiter that delays retries instead of refusing them
    /// (client-go workqueue's `BucketRateLimiter`, 10 qps burst 100,
    /// docs/sources/presets.md §7.4): each retry reserves a token; the sleep is at least
    /// the reservation's wait.
    RateLimiter { rate_per_sec: f64, burst: f64 },
}

/// What a call carries for its budget.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CallBudget {
    /// AWS quota: the cost of the call's last retry (0 = never paid).
    pub last_cost: u32,
    /// Finagle: the most retries this call may make.
    pub requeue_cap: u32,
    /// Envoy: the call's current attempt is a retry holding a slot.
    pub holds_retry: bool,
}

/// The answer to "may this call retry?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Yes; the sleep must last at least this long.
    Allow { min_sleep: Nanos },
    /// No: the call gives up with `budget_exhausted`.
    Deny,
}

impl Gate {
    /// Allowed, with no least sleep.
    pub const ALLOW: Gate = Gate::Allow { min_sleep: 0 };
}

/// The events a budget reacts to. Every method but `try_retry` defaults
/// to doing nothing, and `level` to 0.
pub trait RetryBudget {
    /// A call starts (its first attempt); returns what the call carries.
    fn on_call_start(&mut self, _now: Nanos) -> CallBudget {
        CallBudget::default()
    }

    /// An attempt ended: `None` is a success, else the cause of a failure
    /// the policy would retry (gRFC A6 counts "qualified" failures only;
    /// the others go to `on_unqualified_failure`).
    fn on_attempt_end(&mut self, _call: &mut CallBudget, _failure: Option<Cause>) {}

    /// May the call retry after `cause`? `retries` is how many retries the
    /// call has made so far. On `Allow`, the budget has been charged.
    fn try_retry(&mut self, now: Nanos, call: &mut CallBudget, cause: Cause, retries: u32) -> Gate;

    /// An attempt failed in a way the policy does not retry: it neither
    /// costs nor earns, but a retry slot it held is released.
    fn on_unqualified_failure(&mut self, _call: &mut CallBudget) {}

    /// A call ended (after its last attempt, or abandoned).
    fn on_call_end(&mut self, _now: Nanos, _call: &mut CallBudget, _success: bool) {}

    /// The budget's level for the time series (tokens, balance in
    /// retries, retries ÷ calls, or active retries: see each kind).
    fn level(&mut self, _now: Nanos) -> f64 {
        0.0
    }

    /// How long the level last read holds (see `model::level`); a kind
    /// that does not say is read at every sample.
    fn holds(&self) -> Holds {
        Holds::ReadAlways
    }
}

/// The live state of one budget: one of the kinds, by value.
#[derive(Clone, Debug)]
pub enum Budget {
    TokenBucket(TokenBucket),
    RetryTokens(RetryTokens),
    Finagle(Finagle),
    EnvoyBudget(EnvoyBudget),
    EnvoyMaxRetries(EnvoyMaxRetries),
    AwsQuota(AwsQuota),
    Ratio(Ratio),
    PerMinute(PerMinute),
    RateLimiter(RateLimiter),
}

/// Calls `$call` on whichever kind `$budget` holds.
macro_rules! dispatch {
    ($budget:expr, $b:ident => $call:expr) => {
        match $budget {
            Budget::TokenBucket($b) => $call,
            Budget::RetryTokens($b) => $call,
            Budget::Finagle($b) => $call,
            Budget::EnvoyBudget($b) => $call,
            Budget::EnvoyMaxRetries($b) => $call,
            Budget::AwsQuota($b) => $call,
            Budget::Ratio($b) => $call,
            Budget::PerMinute($b) => $call,
            Budget::RateLimiter($b) => $call,
        }
    };
}

impl Budget {
    /// The memory one budget of `cfg` takes.
    pub fn state_bytes(cfg: &BudgetConfig) -> u64 {
        let own = std::mem::size_of::<Budget>() as u64;
        match cfg {
            BudgetConfig::Finagle { .. } => own + Finagle::heap_bytes(),
            BudgetConfig::Ratio { .. } => own + Ratio::heap_bytes(),
            _ => own,
        }
    }

    pub fn new(cfg: BudgetConfig) -> Self {
        match cfg {
            BudgetConfig::TokenBucket {
                max_tokens,
                token_ratio,
            } => Budget::TokenBucket(TokenBucket::new(max_tokens, token_ratio)),
            BudgetConfig::RetryTokens {
                capacity,
                per_request,
                retry_cost,
            } => Budget::RetryTokens(RetryTokens::new(capacity, per_request, retry_cost)),
            BudgetConfig::Finagle {
                ttl,
                min_retries_per_sec,
                percent_can_retry,
                max_requeues_fraction,
            } => Budget::Finagle(Finagle::new(
                ttl,
                min_retries_per_sec,
                percent_can_retry,
                max_requeues_fraction,
            )),
            BudgetConfig::EnvoyBudget {
                percent,
                min_concurrency,
            } => Budget::EnvoyBudget(EnvoyBudget::new(percent, min_concurrency)),
            BudgetConfig::EnvoyMaxRetries { max } => {
                Budget::EnvoyMaxRetries(EnvoyMaxRetries::new(max))
            }
            BudgetConfig::AwsQuota {
                capacity,
                retry_cost,
                timeout_cost,
                throttle_cost,
                success_increment,
            } => Budget::AwsQuota(AwsQuota::new(
                capacity,
                retry_cost,
                timeout_cost,
                throttle_cost,
                success_increment,
            )),
            BudgetConfig::Ratio { ratio, window } => Budget::Ratio(Ratio::new(ratio, window)),
            BudgetConfig::PerMinute { per_minute } => Budget::PerMinute(PerMinute::new(per_minute)),
            BudgetConfig::RateLimiter {
                rate_per_sec,
                burst,
            } => Budget::RateLimiter(RateLimiter::new(rate_per_sec, burst)),
        }
    }

    #[inline]
    pub fn on_call_start(&mut self, now: Nanos) -> CallBudget {
        dispatch!(self, b => b.on_call_start(now))
    }

    #[inline]
    pub fn on_attempt_end(&mut self, call: &mut CallBudget, failure: Option<Cause>) {
        dispatch!(self, b => b.on_attempt_end(call, failure))
    }

    #[inline]
    pub fn try_retry(
        &mut self,
        now: Nanos,
        call: &mut CallBudget,
        cause: Cause,
        retries: u32,
    ) -> Gate {
        dispatch!(self, b => b.try_retry(now, call, cause, retries))
    }

    #[inline]
    pub fn on_unqualified_failure(&mut self, call: &mut CallBudget) {
        dispatch!(self, b => b.on_unqualified_failure(call))
    }

    #[inline]
    pub fn on_call_end(&mut self, now: Nanos, call: &mut CallBudget, success: bool) {
        dispatch!(self, b => b.on_call_end(now, call, success))
    }

    pub fn level(&mut self, now: Nanos) -> f64 {
        dispatch!(self, b => b.level(now))
    }

    pub fn holds(&self) -> Holds {
        dispatch!(self, b => b.holds())
    }
}
