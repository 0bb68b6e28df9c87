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
//! - `envoy` (§3): concurrent retries ≤ max(budget_percent % of active
//!   calls, min_retry_concurrency), and `envoy_max_retries` (§3):
//!   max_retries concurrent retries, per budget. A retry holds its slot
//!   from its grant until its attempt ends (its sleep `s` and attempt
//!   `a`), so `m` slots let `m / (s + a)` retries a second through; and
//!   retries, counted among the active calls, are at most p/(1 − p) of
//!   the calls in a first attempt, `p/(1 − p) × a/(s + a)` retries per
//!   call when first attempts last `a` too. Both depend on how long the
//!   failures take: [`RetryHold`] gives the two cases, attempts that fail
//!   slowly (their timeout, or the call below) and, when the layer
//!   retries connection errors or a status, attempts that fail at once
//!   (a service that is down refuses at once), which hold a slot for the
//!   sleep alone and let the most retries through. The bound is the
//!   larger of the two.
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
    let attempt = match (fails_fast(l), l.timeout) {
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

/// How long a retry holds its slot, in words: its sleep, and the attempt
/// of the case that lets the most retries through (`None`: unknown).
fn held(sleep_s: f64, attempt: Option<f64>) -> String {
    match attempt {
        Some(a) if a <= 0.0 => {
            format!("each held for its sleep ({sleep_s:.3} s) when attempts fail at once")
        }
        Some(a) => format!("each held for its sleep and attempt ({:.3} s)", sleep_s + a),
        None => "each held until its attempt ends".to_string(),
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

/// One hop's factor of an amplification product, as [`calls_out`] counts
/// it for `attempts` attempts: `3`, `3 x fan-out 2`, and with a status
/// probe before each retry `(4 attempts + 3 status probes)`, `(3 x fan-out
/// 2 + 2 status probes)`.
pub fn factor_words(attempts: u32, fan_out: u32, status_probe: bool) -> String {
    use crate::human::plural;
    let probes = if status_probe {
        attempts.saturating_sub(1)
    } else {
        0
    };
    let calls = if fan_out > 1 {
        format!("{attempts} x fan-out {fan_out}")
    } else if probes > 0 {
        plural(attempts, "attempt")
    } else {
        attempts.to_string()
    };
    if probes == 0 {
        calls
    } else {
        format!("({calls} + {})", plural(probes, "status probe"))
    }
}

/// The factors of an amplification product joined, with the deliveries
/// of a message last when there are several: `3 x fan-out 2 x (4 attempts
/// + 3 status probes) x 5 deliveries`.
pub fn product_words(factors: &[String], deliveries: u32) -> String {
    let mut parts = factors.to_vec();
    if deliveries > 1 {
        parts.push(format!("{deliveries} deliveries"));
    }
    parts.join(" x ")
}

/// How long a granted retry holds one of Envoy's concurrency slots: from
/// its grant until its attempt ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryHold {
    /// The mean sleep before the first retry, in seconds.
    pub sleep_s: f64,
    /// How long an attempt that fails slowly lasts at mean draws (its
    /// timeout, or the call below), when known.
    pub slow_attempt_s: Option<f64>,
    /// Whether the layer retries failures that come at once (connection
    /// errors, a status), so an attempt may fail in no time.
    pub fails_fast: bool,
}

impl RetryHold {
    /// The hold of a layer's retries: its first mean sleep, its mean
    /// attempt when failing slowly, and whether it retries fast failures.
    pub fn of(l: &CallPolicy, sleep_s: f64, slow_attempt_s: Option<f64>) -> Self {
        RetryHold {
            sleep_s,
            slow_attempt_s,
            fails_fast: fails_fast(l),
        }
    }

    /// The attempt durations to bound over: slow failures and, when
    /// retried, instant ones.
    fn attempts(&self) -> impl Iterator<Item = f64> {
        self.slow_attempt_s
            .into_iter()
            .chain(self.fails_fast.then_some(0.0))
    }
}

/// Whether `l` retries a failure that can come at once: a connection
/// error, or a status.
fn fails_fast(l: &CallPolicy) -> bool {
    let r = &l.retry;
    r.retry_on.connection || (0..640u16).any(|code| r.retry_on.status(code))
}

/// Retries per call that Envoy's concurrency limits let through, at most,
/// over the attempt durations of `hold`: `slots` concurrent retries (the
/// minimum concurrency of a budget, or `max_retries`, times the number of
/// budgets) at `calls_per_s`, and `percent` of the active calls (`None`
/// for the `max_retries` breaker, which has no share). Unbounded (`cap`)
/// when a retry can hold its slot for no time at all.
fn concurrent_retries(
    hold: &RetryHold,
    percent: Option<f64>,
    slots: f64,
    calls_per_s: f64,
    cap: f64,
) -> (f64, Option<f64>) {
    let mut most: Option<(f64, f64)> = None;
    for a in hold.attempts() {
        let h = hold.sleep_s + a;
        let extra = if h <= 0.0 || calls_per_s <= 0.0 {
            cap
        } else {
            let by_slots = slots / (calls_per_s * h);
            let by_share = match percent {
                Some(p) if p >= 100.0 => cap,
                Some(p) => p / (100.0 - p) * a / h,
                None => 0.0,
            };
            by_slots.max(by_share)
        };
        if most.is_none_or(|(m, _)| extra > m) {
            most = Some((extra, a));
        }
    }
    match most {
        Some((extra, a)) => (extra.min(cap), Some(a)),
        // Neither known (attempts that hang, never retried fast): the
        // share of the active calls when retries last as long as first
        // attempts.
        None => (
            percent
                .map_or(0.0, |p| if p >= 100.0 { cap } else { p / (100.0 - p) })
                .min(cap),
            None,
        ),
    }
}

/// `calls_per_s` is the peak rate of calls entering the layer (with the
/// budgets of the outer layers applied); `hold` how long its retries
/// hold an Envoy slot.
pub fn layer_amplification(
    l: &CallPolicy,
    calls_per_s: f64,
    hold: &RetryHold,
) -> LayerAmplification {
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
        format!(
            "{}, one per instance",
            crate::human::plural(l.instances.max(1), "budget")
        )
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
                "token bucket: retries stop at {:.0} tokens until successes refill it (burst about {} per budget)",
                max_tokens / 2.0,
                crate::human::plural(((max_tokens / 2.0).ceil() - 1.0).max(0.0), "retry")
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
                    "AWS quota refills only on success (burst {} per budget)",
                    crate::human::plural(capacity / cheapest, "retry")
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
        BudgetConfig::EnvoyBudget {
            percent,
            min_concurrency,
        } => {
            let (extra, attempt) = concurrent_retries(
                hold,
                Some(percent),
                f64::from(min_concurrency) * states,
                calls_per_s,
                max - 1.0,
            );
            (
                extra,
                format!(
                    "concurrent retries <= max({percent}% of active calls, {min_concurrency}) per budget, {}",
                    held(hold.sleep_s, attempt)
                ),
            )
        }
        BudgetConfig::EnvoyMaxRetries { max: m } => {
            let (extra, attempt) =
                concurrent_retries(hold, None, f64::from(m) * states, calls_per_s, max - 1.0);
            (
                extra,
                format!(
                    "{} per budget, {}",
                    crate::human::plural(m, "concurrent retry"),
                    held(hold.sleep_s, attempt)
                ),
            )
        }
        BudgetConfig::PerMinute { per_minute } => (
            per_call(per_minute / 60.0),
            format!(
                "{} per minute per budget",
                crate::human::plural(per_minute, "retry")
            ),
        ),
        BudgetConfig::RateLimiter {
            rate_per_sec,
            burst,
        } => (
            per_call(rate_per_sec),
            format!(
                "{rate_per_sec} retries/s per budget (the excess waits; burst {} per budget)",
                crate::human::plural(burst, "retry")
            ),
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

    const NO_HOLD: RetryHold = RetryHold {
        sleep_s: 0.0,
        slow_attempt_s: None,
        fails_fast: false,
    };

    /// Retries held `s` seconds by attempts that fail slowly.
    fn slow(s: f64) -> RetryHold {
        RetryHold {
            sleep_s: 0.0,
            slow_attempt_s: Some(s),
            fails_fast: false,
        }
    }

    fn layer(attempts: u32, budget: Option<(BudgetConfig, bool)>, instances: u32) -> CallPolicy {
        let mut l = CallPolicy::passthrough("a");
        l.retry.max_attempts = attempts;
        l.instances = instances;
        l.budget = budget.map(|(config, shared)| Shared { config, shared });
        l
    }

    /// Every factor [`calls_out`] multiplies is in the words, so that the
    /// product shown is the figure: 3 x 2 x (4 + 3) x 5 = 210.
    #[test]
    fn the_product_in_words_lists_every_factor() {
        let words = product_words(&[factor_words(3, 2, false), factor_words(4, 1, true)], 5);
        assert_eq!(
            words,
            "3 x fan-out 2 x (4 attempts + 3 status probes) x 5 deliveries"
        );
        let mut a = layer(3, None, 1);
        a.fan_out = 2;
        let mut b = layer(4, None, 1);
        b.status_probe = true;
        assert_eq!(calls_out(&a, 3.0) * calls_out(&b, 4.0) * 5.0, 210.0);
        assert_eq!(factor_words(2, 1, true), "(2 attempts + 1 status probe)");
        assert_eq!(
            factor_words(3, 2, true),
            "(3 x fan-out 2 + 2 status probes)"
        );
        assert_eq!(factor_words(1, 1, true), "1");
        assert_eq!(product_words(&["4".into(), "4".into()], 1), "4 x 4");
    }

    #[test]
    fn bounds_per_budget_kind() {
        let no = layer_amplification(&layer(4, None, 1), 100.0, &NO_HOLD);
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
        assert!((layer_amplification(&ratio, 100.0, &NO_HOLD).budgeted - 1.1).abs() < 1e-12);
        let tb = BudgetConfig::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.1,
        };
        assert_eq!(
            layer_amplification(&layer(4, Some((tb, false)), 1), 100.0, &NO_HOLD).budgeted,
            1.0
        );
        // 10 retries/s for 100 calls/s, shared: +0.1; per instance x 20: capped at 4.
        let rl = BudgetConfig::RateLimiter {
            rate_per_sec: 10.0,
            burst: 100.0,
        };
        assert!(
            (layer_amplification(&layer(4, Some((rl, true)), 20), 100.0, &NO_HOLD).budgeted - 1.1)
                .abs()
                < 1e-12
        );
        assert_eq!(
            layer_amplification(&layer(4, Some((rl, false)), 40), 100.0, &NO_HOLD).budgeted,
            4.0
        );
        let env = BudgetConfig::EnvoyMaxRetries { max: 3 };
        assert!(
            (layer_amplification(&layer(2, Some((env, true)), 1), 100.0, &slow(0.1)).budgeted
                - 1.3)
                .abs()
                < 1e-9
        );
    }

    /// Envoy's limits by how long a retry holds its slot: 3 slots held
    /// 10 ms by attempts that fail at once let 300 retries/s through, 1.5
    /// per call at 200 calls/s; held for a 1 s attempt too, 3/(200 × 1.01).
    /// A 50% share of active calls, first attempts and retries 1 s long
    /// after a 0.1 s sleep: retries ≤ calls in a first attempt, 1/1.1 per
    /// call. A retry held for no time at all is not limited.
    #[test]
    fn envoy_limits_follow_the_time_a_retry_holds_its_slot() {
        let hold = |sleep_s: f64, slow: Option<f64>, fast: bool| RetryHold {
            sleep_s,
            slow_attempt_s: slow,
            fails_fast: fast,
        };
        let budget = |percent: f64| BudgetConfig::EnvoyBudget {
            percent,
            min_concurrency: 3,
        };
        let at = |b: BudgetConfig, h: RetryHold, instances: u32| {
            layer_amplification(&layer(5, Some((b, false)), instances), 200.0, &h).budgeted
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let max3 = BudgetConfig::EnvoyMaxRetries { max: 3 };
        assert!(close(at(budget(20.0), hold(0.01, Some(1.0), true), 1), 2.5));
        assert!(close(at(max3, hold(0.01, Some(1.0), true), 1), 2.5));
        assert!(close(
            at(max3, hold(0.01, Some(1.0), false), 1),
            1.0 + 3.0 / 202.0
        ));
        // Two budgets, one per instance: twice the slots.
        assert!(close(at(max3, hold(0.01, None, true), 2), 4.0));
        // The share: 50/(100 - 50) × 1/1.1, above the slots' 3/220.
        assert!(close(
            at(budget(50.0), hold(0.1, Some(1.0), false), 1),
            1.0 + 1.0 / 1.1
        ));
        assert_eq!(at(budget(20.0), hold(0.0, Some(1.0), true), 1), 5.0);
        assert_eq!(at(budget(100.0), hold(0.1, Some(1.0), false), 1), 5.0);
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
        assert_eq!(layer_amplification(&l, 100.0, &NO_HOLD).budgeted, 3.0);
        assert_eq!(layer_amplification(&l, 100.0, &NO_HOLD).max_attempts, 3);
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
