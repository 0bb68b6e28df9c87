//! How many calls one logical request can cause at each layer and at the
//! dependency. Without budgets: the product over the layers of the
//! attempts per call (`max_attempts`, or the hedges of a hedging policy)
//! times the layer's `fan_out`, since every attempt calls the next hop
//! `fan_out` times (3 layers × 4 attempts = 64 calls at the bottom; SRE
//! book, docs/sources/presets.md §8; 3 attempts × fan-out 2 over 3 attempts = 18). A
//! status probe before retrying a timed-out write is one more call at the
//! dependency per retry. With budgets, the bound used is the *sustained* number of
//! attempts per call while every attempt fails (an outage, the storm case),
//! after a budget's initial burst is spent:
//!
//! - `token_bucket` (gRFC A6, §2): tokens only come back with successes, so
//!   retries stop once tokens fall to max/2: 1 attempt per call (burst:
//!   about max/2 retries per budget). With successes, retries ≤
//!   token_ratio × successes + max_tokens.
//! - `aws_quota` (§1.2): refills only on success: 1 (burst capacity ÷
//!   the cheapest cost per budget).
//! - `retry_tokens` (Brooker): 1 + per_request ÷ retry_cost.
//! - `ratio` (SRE, §8): 1 + ratio.
//! - `finagle` (§4): deposits only on success: the reserve,
//!   min_retries_per_sec per budget, over the calls per second.
//! - `envoy` (§3): concurrent retries ≤ budget_percent of active calls:
//!   about 1 + budget_percent/100 (when retries last as long as first
//!   attempts).
//! - `envoy_max_retries` (§3): max_retries concurrent retries per budget,
//!   each held at least for its sleep and attempt.
//! - `per_minute` (§8), `rate_limiter` (§7.4): their rate per budget over
//!   the calls per second (`rate_limiter` delays the excess instead of
//!   refusing it).
//!
//! A layer's `max_elapsed` bounds its attempts too: only those whose
//! retries start within it, at the fastest failures and shortest sleeps
//! (`attempts_within_elapsed`).
//!
//! Budgets per instance count once per layer instance. Each layer's bound
//! is capped at its `max_attempts`; the stack bound is their product.
//! Breakers and throttles cut load further and are not counted.

use crate::engine::Nanos;
use crate::model::CallPolicy;
use crate::model::backoff::{Backoff, Jitter};
use crate::model::budget::BudgetConfig;

/// One layer's attempts per call: its `max_attempts` and the budgeted
/// bound, with the reason in words.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerAmplification {
    pub max_attempts: u32,
    pub budgeted: f64,
    pub note: String,
}

/// The attempts one call at `l` makes at most: its hedges with a hedging
/// policy, else its `max_attempts`, or fewer when `max_elapsed` stops
/// the retries first ([`attempts_within_elapsed`]).
pub fn attempts_per_call(l: &CallPolicy) -> u32 {
    l.hedging
        .map_or_else(|| attempts_within_elapsed(l), |h| h.max_attempts)
}

/// The attempts of one call at `l` that `max_elapsed` lets happen at
/// most (all of `max_attempts` without it). A retry is made only when
/// the time since the call started plus its sleep is at most
/// `max_elapsed` (the model's rule, cenkalti's); the most attempts fit
/// when every attempt fails as fast as it can and every sleep is as
/// short as its jitter allows. An attempt fails at once when the layer
/// retries connection errors or a status; when it retries timeouts only,
/// each failed attempt lasts its timeout. Counted exactly, in
/// nanoseconds.
pub fn attempts_within_elapsed(l: &CallPolicy) -> u32 {
    let r = &l.retry;
    let Some(limit) = r.max_elapsed else {
        return r.max_attempts;
    };
    let fails_fast = r.retry_on.connection || (0..640u16).any(|code| r.retry_on.status(code));
    let attempt = match (fails_fast, l.timeout) {
        (false, Some(timeout)) if r.retry_on.timeout => timeout,
        _ => 0,
    };
    let mut elapsed: u64 = 0;
    for made in 1..r.max_attempts {
        elapsed = elapsed.saturating_add(attempt);
        let sleep = least_sleep(&r.backoff, r.jitter, made);
        if elapsed.saturating_add(sleep) > limit {
            return made;
        }
        elapsed = elapsed.saturating_add(sleep);
    }
    r.max_attempts
}

/// The shortest sleep before retry `n` (n >= 1) the jitter can draw, in
/// nanoseconds (0 for Polly's, whose least draw is not counted here: a
/// bound that may count more attempts than can happen, never fewer).
fn least_sleep(b: &Backoff, jitter: Jitter, n: u32) -> Nanos {
    let d = b.delay(n);
    match jitter {
        Jitter::None => d,
        Jitter::Full | Jitter::PollyV2 => 0,
        Jitter::Equal => d / 2,
        Jitter::Proportional(f) => (d as f64 * (1.0 - f).max(0.0)).floor() as Nanos,
        Jitter::Decorrelated => b.base().min(b.cap()),
    }
}

/// Calls one call at `l` sends to the next hop at most, for `attempts`
/// attempts: each attempt fans out, and (innermost layer) a status probe
/// may precede each retry.
pub fn calls_out(l: &CallPolicy, attempts: f64) -> f64 {
    let probes = if l.status_probe {
        (attempts - 1.0).max(0.0)
    } else {
        0.0
    };
    attempts * f64::from(l.fan_out.max(1)) + probes
}

/// `calls_per_s` is the peak rate of calls entering the layer (with the
/// budgets of the outer layers applied); `hold_s` how long a retry holds
/// an Envoy slot at least (sleep + attempt), when known.
pub fn layer_amplification(l: &CallPolicy, calls_per_s: f64, hold_s: f64) -> LayerAmplification {
    let a = attempts_per_call(l);
    let max = a as f64;
    let Some(b) = l.budget else {
        return LayerAmplification {
            max_attempts: a,
            budgeted: max,
            note: if a > 1 {
                "no budget".into()
            } else {
                "no retries".into()
            },
        };
    };
    let states = if b.shared {
        1.0
    } else {
        l.instances.max(1) as f64
    };
    let scope = if b.shared {
        "one budget for the layer".to_string()
    } else {
        format!("{} budget(s), one per instance", l.instances.max(1))
    };
    let per_call = |rate: f64| {
        if calls_per_s > 0.0 {
            rate * states / calls_per_s
        } else {
            max
        }
    };
    let (extra, why) = match b.config {
        BudgetConfig::TokenBucket { max_tokens, .. } => (
            0.0,
            format!(
                "token bucket: retries stop at {:.0} tokens until successes refill it (burst about {:.0} retries per budget)",
                max_tokens / 2.0,
                (max_tokens / 2.0).ceil() - 1.0
            ),
        ),
        BudgetConfig::AwsQuota {
            capacity,
            retry_cost,
            timeout_cost,
            throttle_cost,
            ..
        } => {
            let cheapest = retry_cost.min(timeout_cost).min(throttle_cost).max(1);
            (
                0.0,
                format!(
                    "AWS quota refills only on success (burst {} retries per budget)",
                    capacity / cheapest
                ),
            )
        }
        BudgetConfig::RetryTokens {
            per_request,
            retry_cost,
            ..
        } => {
            let f = if retry_cost > 0.0 {
                per_request / retry_cost
            } else {
                max
            };
            (f, format!("retry tokens: {f:.3} retries per call"))
        }
        BudgetConfig::Ratio { ratio, .. } => (ratio, format!("retries < {ratio} of calls")),
        BudgetConfig::Finagle {
            min_retries_per_sec,
            ..
        } => (
            per_call(min_retries_per_sec),
            format!(
                "Finagle reserve: {min_retries_per_sec} retries/s per budget (deposits need successes)"
            ),
        ),
        BudgetConfig::EnvoyBudget { percent, .. } => (
            percent / 100.0,
            format!("concurrent retries <= {percent}% of active calls (approximate)"),
        ),
        BudgetConfig::EnvoyMaxRetries { max: m } => {
            let f = if hold_s > 0.0 {
                per_call(m as f64 / hold_s)
            } else {
                max
            };
            (
                f,
                format!("{m} concurrent retries per budget, each held >= {hold_s:.3} s"),
            )
        }
        BudgetConfig::PerMinute { per_minute } => (
            per_call(per_minute / 60.0),
            format!("{per_minute} retries per minute per budget"),
        ),
        BudgetConfig::RateLimiter { rate_per_sec, .. } => (
            per_call(rate_per_sec),
            format!("{rate_per_sec} retries/s per budget (the excess waits)"),
        ),
    };
    let budgeted = (1.0 + extra).min(max);
    LayerAmplification {
        max_attempts: a,
        budgeted,
        note: format!("{why}; {scope}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::Shared;

    fn layer(attempts: u32, budget: Option<(BudgetConfig, bool)>, instances: u32) -> CallPolicy {
        let mut l = CallPolicy::passthrough("a");
        l.retry.max_attempts = attempts;
        l.instances = instances;
        l.budget = budget.map(|(config, shared)| Shared { config, shared });
        l
    }

    #[test]
    fn bounds_per_budget_kind() {
        let no = layer_amplification(&layer(4, None, 1), 100.0, 0.0);
        assert_eq!((no.budgeted, no.note.as_str()), (4.0, "no budget"));
        let ratio = layer(
            4,
            Some((
                BudgetConfig::Ratio {
                    ratio: 0.1,
                    window: 1,
                },
                false,
            )),
            1,
        );
        assert!((layer_amplification(&ratio, 100.0, 0.0).budgeted - 1.1).abs() < 1e-12);
        let tb = BudgetConfig::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.1,
        };
        assert_eq!(
            layer_amplification(&layer(4, Some((tb, false)), 1), 100.0, 0.0).budgeted,
            1.0
        );
        // 10 retries/s for 100 calls/s, shared: +0.1; per instance x 20: capped at 4.
        let rl = BudgetConfig::RateLimiter {
            rate_per_sec: 10.0,
            burst: 100.0,
        };
        assert!(
            (layer_amplification(&layer(4, Some((rl, true)), 20), 100.0, 0.0).budgeted - 1.1).abs()
                < 1e-12
        );
        assert_eq!(
            layer_amplification(&layer(4, Some((rl, false)), 40), 100.0, 0.0).budgeted,
            4.0
        );
        let env = BudgetConfig::EnvoyMaxRetries { max: 3 };
        assert!(
            (layer_amplification(&layer(2, Some((env, true)), 1), 100.0, 0.1).budgeted - 1.3).abs()
                < 1e-9
        );
    }

    /// 10 attempts, 1 s apart, within 2 s.
    fn elapsed_layer(jitter: Jitter) -> CallPolicy {
        use crate::engine::NS_PER_S;
        use crate::model::retry::RetryOn;
        let mut l = layer(10, None, 1);
        l.retry.backoff = Backoff::Constant { base: NS_PER_S };
        l.retry.jitter = jitter;
        l.retry.max_elapsed = Some(2 * NS_PER_S);
        l.retry.retry_on = RetryOn::nothing().with_status(503);
        l
    }

    /// F2: only the retries that start within `max_elapsed` count: at
    /// once-failing attempts, retries at 1 s and 2 s (2 s is not more than
    /// the limit), so 3 attempts, and the amplification with them.
    #[test]
    fn max_elapsed_bounds_the_attempts_exactly() {
        use crate::engine::NS_PER_MS;
        let l = elapsed_layer(Jitter::None);
        assert_eq!(attempts_per_call(&l), 3);
        assert_eq!(layer_amplification(&l, 100.0, 0.0).budgeted, 3.0);
        assert_eq!(layer_amplification(&l, 100.0, 0.0).max_attempts, 3);
        // A limit just short of the second retry: 2 attempts.
        let mut short = l.clone();
        short.retry.max_elapsed = Some(2 * crate::engine::NS_PER_S - 1);
        assert_eq!(attempts_per_call(&short), 2);
        // Equal jitter sleeps at least 0.5 s: retries at 0.5, 1, 1.5, 2 s.
        assert_eq!(attempts_per_call(&elapsed_layer(Jitter::Equal)), 5);
        // Full jitter may sleep nothing: every attempt may happen.
        assert_eq!(attempts_per_call(&elapsed_layer(Jitter::Full)), 10);
        // Timeouts only, 500 ms each: retries after 0.5 + 1 s = 1.5 s, then
        // 1.5 + 0.5 + 1 = 3 s > 2 s: 2 attempts.
        let mut timeouts = l.clone();
        timeouts.retry.retry_on = crate::model::retry::RetryOn::nothing();
        timeouts.retry.retry_on.timeout = true;
        timeouts.timeout = Some(500 * NS_PER_MS);
        assert_eq!(attempts_per_call(&timeouts), 2);
        // Connection errors fail at once even with a timeout: 3 again.
        timeouts.retry.retry_on.connection = true;
        assert_eq!(attempts_per_call(&timeouts), 3);
        // Without max_elapsed, max_attempts.
        let mut unbounded = l;
        unbounded.retry.max_elapsed = None;
        assert_eq!(attempts_per_call(&unbounded), 10);
    }
}
