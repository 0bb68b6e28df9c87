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
//! Budgets per instance count once per layer instance. Each layer's bound
//! is capped at its `max_attempts`; the stack bound is their product.
//! Breakers and throttles cut load further and are not counted.

use crate::model::CallPolicy;
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
/// policy, else its `max_attempts`.
pub fn attempts_per_call(l: &CallPolicy) -> u32 {
    l.hedging.map_or(l.retry.max_attempts, |h| h.max_attempts)
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
}
