//! Retry budgets: shared state that decides whether a call may retry at
//! all, whatever its own attempt count says. Each kind is a small state
//! machine driven by four events: a call starts, an attempt ends, a retry
//! is asked for, a call ends. Sources of every constant are in
//! shared/reference/presets.md; the section is named at each kind.

use crate::engine::Nanos;

use super::outcome::Cause;
use super::window::Windowed;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BudgetConfig {
    /// gRFC A6 retry throttling (presets.md §2): tokens start at
    /// `max_tokens`; a retryable failure takes 1, a success adds
    /// `token_ratio`; a retry is allowed only while tokens > max/2, checked
    /// after the failure's decrement.
    TokenBucket { max_tokens: f64, token_ratio: f64 },
    /// Brooker's retry token bucket ("Fixing retries with token buckets and
    /// circuit breakers", 2022; experiments.md §2): starts full at
    /// `capacity`; every new call adds `per_request`; a retry needs more
    /// than `retry_cost` tokens and spends `retry_cost`.
    RetryTokens {
        capacity: f64,
        per_request: f64,
        retry_cost: f64,
    },
    /// Finagle `RetryBudget(ttl, minRetriesPerSec, percentCanRetry)`
    /// (presets.md §4): deposit 1000 per successful call, withdraw
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
    /// Envoy `retry_budget` (presets.md §3): concurrent retries ≤
    /// max(percent/100 × active calls, min_retry_concurrency); a retry is
    /// active from the moment it is scheduled until its attempt resolves.
    EnvoyBudget { percent: f64, min_concurrency: u32 },
    /// Envoy's `max_retries` circuit breaker (presets.md §3): at most `max`
    /// concurrent retries (3 by default).
    EnvoyMaxRetries { max: u32 },
    /// AWS SDK retry quota (presets.md §1.2, §1.3): starts full at
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
    /// The SRE book's per-client retry budget (presets.md §8): retry only
    /// while retries ÷ calls over the last `window` stays within `ratio`
    /// (the retry being granted counted), so retry load is at most
    /// 1 + ratio.
    Ratio { ratio: f64, window: Nanos },
    /// The SRE book's server-wide budget, "60 retries per minute per
    /// process" (presets.md §8), as a token bucket of `per_minute` tokens
    /// refilled continuously at `per_minute` per minute.
    PerMinute { per_minute: f64 },
    /// A rate limiter that delays retries instead of refusing them
    /// (client-go workqueue's `BucketRateLimiter`, 10 qps burst 100,
    /// presets.md §7.4): each retry reserves a token; the sleep is at least
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

/// The live state of one budget.
#[derive(Clone, Debug)]
pub struct Budget {
    cfg: BudgetConfig,
    tokens: f64,
    last_refill: Nanos,
    window: Option<Windowed>,
    /// Ratio budget: calls in the window (`window` holds retries).
    calls: Option<Windowed>,
    active_calls: u64,
    active_retries: u64,
}

const FINAGLE_SCALE: f64 = 1000.0;

/// Slices of Finagle's `WindowedAdder` (its ttl in 10 slices).
const FINAGLE_SLICES: usize = 10;
/// Slices of the ratio budget's window.
const RATIO_SLICES: usize = 60;

impl Budget {
    /// The memory one budget of `cfg` takes.
    pub fn state_bytes(cfg: &BudgetConfig) -> u64 {
        let own = std::mem::size_of::<Budget>() as u64;
        match cfg {
            BudgetConfig::Finagle { .. } => own + Windowed::heap_bytes(FINAGLE_SLICES),
            BudgetConfig::Ratio { .. } => own + 2 * Windowed::heap_bytes(RATIO_SLICES),
            _ => own,
        }
    }

    pub fn new(cfg: BudgetConfig) -> Self {
        let (tokens, window, calls) = match cfg {
            BudgetConfig::TokenBucket { max_tokens, .. } => (max_tokens, None, None),
            BudgetConfig::RetryTokens { capacity, .. } => (capacity, None, None),
            BudgetConfig::Finagle { ttl, .. } => {
                (0.0, Some(Windowed::new(ttl, FINAGLE_SLICES)), None)
            }
            BudgetConfig::AwsQuota { capacity, .. } => (capacity as f64, None, None),
            BudgetConfig::Ratio { window, .. } => (
                0.0,
                Some(Windowed::new(window, RATIO_SLICES)),
                Some(Windowed::new(window, RATIO_SLICES)),
            ),
            BudgetConfig::PerMinute { per_minute } => (per_minute, None, None),
            BudgetConfig::RateLimiter { burst, .. } => (burst, None, None),
            BudgetConfig::EnvoyBudget { .. } | BudgetConfig::EnvoyMaxRetries { .. } => {
                (0.0, None, None)
            }
        };
        Budget {
            cfg,
            tokens,
            last_refill: 0,
            window,
            calls,
            active_calls: 0,
            active_retries: 0,
        }
    }

    fn finagle_amounts(&self) -> (f64, f64, f64) {
        let BudgetConfig::Finagle {
            ttl,
            min_retries_per_sec,
            percent_can_retry,
            ..
        } = self.cfg
        else {
            return (0.0, 0.0, 0.0);
        };
        let deposit = if percent_can_retry == 0.0 {
            0.0
        } else {
            FINAGLE_SCALE
        };
        let withdraw = if percent_can_retry == 0.0 {
            1.0
        } else {
            (FINAGLE_SCALE / percent_can_retry).floor()
        };
        let reserve = min_retries_per_sec * (ttl as f64 / 1e9) * withdraw;
        (deposit, withdraw, reserve)
    }

    /// Finagle's `count`: the window's sum plus the reserve.
    fn finagle_count(&mut self, now: Nanos) -> f64 {
        let (_, _, reserve) = self.finagle_amounts();
        self.window.as_mut().map_or(0.0, |w| w.total(now)) + reserve
    }

    /// Continuous refill of the per-minute and rate-limiter buckets.
    fn refill(&mut self, now: Nanos) {
        let (rate_per_ns, cap) = match self.cfg {
            BudgetConfig::PerMinute { per_minute } => (per_minute / 60e9, per_minute),
            BudgetConfig::RateLimiter {
                rate_per_sec,
                burst,
            } => (rate_per_sec / 1e9, burst),
            _ => return,
        };
        let dt = now.saturating_sub(self.last_refill) as f64;
        self.tokens = (self.tokens + dt * rate_per_ns).min(cap);
        self.last_refill = now;
    }

    /// A call starts at this layer (its first attempt).
    pub fn on_call_start(&mut self, now: Nanos) -> CallBudget {
        self.active_calls += 1;
        let mut call = CallBudget::default();
        match self.cfg {
            BudgetConfig::RetryTokens {
                capacity,
                per_request,
                ..
            } => self.tokens = (self.tokens + per_request).min(capacity),
            BudgetConfig::Finagle {
                max_requeues_fraction,
                ..
            } => {
                let (_, withdraw, _) = self.finagle_amounts();
                let balance = self.finagle_count(now) / withdraw;
                call.requeue_cap = if max_requeues_fraction > 0.0 {
                    (max_requeues_fraction * balance).ceil().max(0.0) as u32
                } else {
                    u32::MAX
                };
            }
            BudgetConfig::Ratio { .. } => {
                if let Some(c) = self.calls.as_mut() {
                    c.add(now, 1.0);
                }
            }
            _ => {}
        }
        call
    }

    /// An attempt of a call ended: `None` is a success, else the cause of
    /// a failure the layer would retry. (gRFC A6 counts "qualified"
    /// failures only; the caller passes `None` for the others through
    /// `on_unqualified_failure`.)
    pub fn on_attempt_end(&mut self, call: &mut CallBudget, failure: Option<Cause>) {
        if call.holds_retry {
            call.holds_retry = false;
            self.active_retries = self.active_retries.saturating_sub(1);
        }
        match (self.cfg, failure) {
            (
                BudgetConfig::TokenBucket {
                    max_tokens,
                    token_ratio,
                },
                None,
            ) => self.tokens = (self.tokens + token_ratio).min(max_tokens),
            (BudgetConfig::TokenBucket { .. }, Some(_)) => {
                self.tokens = (self.tokens - 1.0).max(0.0)
            }
            (
                BudgetConfig::AwsQuota {
                    capacity,
                    success_increment,
                    ..
                },
                None,
            ) => {
                let back = if call.last_cost == 0 {
                    success_increment
                } else {
                    call.last_cost
                };
                self.tokens = (self.tokens + back as f64).min(capacity as f64);
            }
            _ => {}
        }
    }

    /// May the call retry after `cause`? `retries` is how many retries the
    /// call has made so far. On `Allow`, the budget has been charged.
    pub fn try_retry(
        &mut self,
        now: Nanos,
        call: &mut CallBudget,
        cause: Cause,
        retries: u32,
    ) -> Gate {
        let allow = Gate::Allow { min_sleep: 0 };
        match self.cfg {
            BudgetConfig::TokenBucket { max_tokens, .. } => {
                if self.tokens > max_tokens / 2.0 {
                    allow
                } else {
                    Gate::Deny
                }
            }
            BudgetConfig::RetryTokens { retry_cost, .. } => {
                if self.tokens > retry_cost {
                    self.tokens -= retry_cost;
                    allow
                } else {
                    Gate::Deny
                }
            }
            BudgetConfig::Finagle { .. } => {
                if retries >= call.requeue_cap {
                    return Gate::Deny;
                }
                let (_, withdraw, _) = self.finagle_amounts();
                if self.finagle_count(now) >= withdraw {
                    if let Some(w) = self.window.as_mut() {
                        w.add(now, -withdraw);
                    }
                    allow
                } else {
                    Gate::Deny
                }
            }
            BudgetConfig::EnvoyBudget {
                percent,
                min_concurrency,
            } => {
                let limit =
                    (percent / 100.0 * self.active_calls as f64).max(min_concurrency as f64);
                self.take_retry_slot(call, (self.active_retries as f64) < limit)
            }
            BudgetConfig::EnvoyMaxRetries { max } => {
                self.take_retry_slot(call, self.active_retries < max as u64)
            }
            BudgetConfig::AwsQuota {
                retry_cost,
                timeout_cost,
                throttle_cost,
                ..
            } => {
                let cost = match cause {
                    Cause::Timeout => timeout_cost,
                    Cause::Status(429) => throttle_cost,
                    _ => retry_cost,
                };
                if self.tokens < cost as f64 {
                    Gate::Deny
                } else {
                    self.tokens -= cost as f64;
                    call.last_cost = cost;
                    allow
                }
            }
            BudgetConfig::Ratio { ratio, .. } => {
                let calls = self.calls.as_mut().map_or(0.0, |c| c.total(now));
                let w = self.window.as_mut().expect("ratio budget has a window");
                let retries = w.total(now);
                // Granting must keep retries ÷ calls within the ratio, so
                // the retry load never exceeds 1 + ratio.
                if calls > 0.0 && (retries + 1.0) / calls <= ratio {
                    w.add(now, 1.0);
                    allow
                } else {
                    Gate::Deny
                }
            }
            BudgetConfig::PerMinute { .. } => {
                self.refill(now);
                if self.tokens >= 1.0 {
                    self.tokens -= 1.0;
                    allow
                } else {
                    Gate::Deny
                }
            }
            BudgetConfig::RateLimiter { rate_per_sec, .. } => {
                // golang.org/x/time/rate Reserve(): always granted; the
                // wait is how long until the token exists.
                self.refill(now);
                self.tokens -= 1.0;
                let wait = if self.tokens >= 0.0 {
                    0
                } else {
                    (-self.tokens / rate_per_sec * 1e9).ceil() as Nanos
                };
                Gate::Allow { min_sleep: wait }
            }
        }
    }

    /// An attempt failed in a way the layer does not retry: it neither
    /// costs nor earns, but a retry slot it held is released.
    pub fn on_unqualified_failure(&mut self, call: &mut CallBudget) {
        if call.holds_retry {
            call.holds_retry = false;
            self.active_retries = self.active_retries.saturating_sub(1);
        }
    }

    fn take_retry_slot(&mut self, call: &mut CallBudget, ok: bool) -> Gate {
        if ok {
            self.active_retries += 1;
            call.holds_retry = true;
            Gate::Allow { min_sleep: 0 }
        } else {
            Gate::Deny
        }
    }

    /// A call ended (after its last attempt, or abandoned).
    pub fn on_call_end(&mut self, now: Nanos, call: &mut CallBudget, success: bool) {
        self.active_calls = self.active_calls.saturating_sub(1);
        if call.holds_retry {
            call.holds_retry = false;
            self.active_retries = self.active_retries.saturating_sub(1);
        }
        if success && let BudgetConfig::Finagle { .. } = self.cfg {
            let (deposit, _, _) = self.finagle_amounts();
            if let Some(w) = self.window.as_mut() {
                w.add(now, deposit);
            }
        }
    }

    /// The budget's level, for the time series: tokens for the buckets and
    /// the AWS quota, the balance in retries for Finagle, retries ÷ calls
    /// for the ratio budget, active retries for Envoy.
    pub fn level(&mut self, now: Nanos) -> f64 {
        match self.cfg {
            BudgetConfig::Finagle { .. } => {
                let (_, withdraw, _) = self.finagle_amounts();
                self.finagle_count(now) / withdraw
            }
            BudgetConfig::Ratio { .. } => {
                let calls = self.calls.as_mut().map_or(0.0, |c| c.total(now));
                let retries = self.window.as_mut().map_or(0.0, |w| w.total(now));
                if calls > 0.0 { retries / calls } else { 0.0 }
            }
            BudgetConfig::EnvoyBudget { .. } | BudgetConfig::EnvoyMaxRetries { .. } => {
                self.active_retries as f64
            }
            BudgetConfig::PerMinute { .. } | BudgetConfig::RateLimiter { .. } => {
                self.refill(now);
                self.tokens
            }
            _ => self.tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NS_PER_S;

    const S: Nanos = NS_PER_S;

    /// One failed attempt followed by a retry request, as the layer does it.
    fn fail_then_ask(
        b: &mut Budget,
        call: &mut CallBudget,
        now: Nanos,
        cause: Cause,
        retries: u32,
    ) -> bool {
        b.on_attempt_end(call, Some(cause));
        matches!(b.try_retry(now, call, cause, retries), Gate::Allow { .. })
    }

    #[test]
    fn grpc_a6_token_bucket_exact_sequence() {
        let mut b = Budget::new(BudgetConfig::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.1,
        });
        let mut c = b.on_call_start(0);
        let mut seen = vec![];
        for r in 0..7 {
            let ok = fail_then_ask(&mut b, &mut c, 0, Cause::Status(503), r);
            seen.push((b.level(0), ok));
        }
        assert_eq!(
            seen,
            vec![
                (9.0, true),
                (8.0, true),
                (7.0, true),
                (6.0, true),
                (5.0, false), // not > max/2
                (4.0, false),
                (3.0, false),
            ]
        );
        // Successes earn 0.1 each: 20 of them bring 3 back to 5, still not > 5.
        for _ in 0..20 {
            b.on_attempt_end(&mut c, None);
        }
        assert!((b.level(0) - 5.0).abs() < 1e-9);
        b.on_attempt_end(&mut c, None);
        assert!(matches!(
            b.try_retry(0, &mut c, Cause::Timeout, 0),
            Gate::Allow { .. }
        ));
    }

    #[test]
    fn brooker_retry_tokens() {
        let mut b = Budget::new(BudgetConfig::RetryTokens {
            capacity: 5.0,
            per_request: 0.1,
            retry_cost: 1.0,
        });
        let mut c = b.on_call_start(0); // 5 (capped)
        let mut allowed = 0;
        while matches!(
            b.try_retry(0, &mut c, Cause::Timeout, allowed),
            Gate::Allow { .. }
        ) {
            allowed += 1;
        }
        // 5 → 4 → 3 → 2 → 1: the fifth needs more than 1.
        assert_eq!(allowed, 4);
        for _ in 0..10 {
            b.on_call_start(0);
        }
        assert!((b.level(0) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn aws_quota_standard_2_1_test_vector() {
        // presets.md §1.3: 500 responses cost 14 each: 500 → 486 → 472 → 458 → 444.
        let mut b = Budget::new(BudgetConfig::AwsQuota {
            capacity: 500,
            retry_cost: 14,
            timeout_cost: 14,
            throttle_cost: 5,
            success_increment: 1,
        });
        let mut c = b.on_call_start(0);
        let mut levels = vec![];
        for r in 0..4 {
            assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Status(500), r));
            levels.push(b.level(0));
        }
        assert_eq!(levels, vec![486.0, 472.0, 458.0, 444.0]);
        // Success refunds only the last cost.
        b.on_attempt_end(&mut c, None);
        assert_eq!(b.level(0), 458.0);
        // A call that never retried earns +1 on success, capped at capacity.
        let mut fresh = b.on_call_start(0);
        b.on_attempt_end(&mut fresh, None);
        assert_eq!(b.level(0), 459.0);
        // A throttle costs 5.
        assert!(fail_then_ask(&mut b, &mut fresh, 0, Cause::Status(429), 0));
        assert_eq!(b.level(0), 454.0);
    }

    #[test]
    fn aws_quota_2_0_worked_example_and_refusal() {
        // presets.md §1.2: 30 tokens, retry (-14) → 16, retry (-14) → 2, success → 16.
        let mut b = Budget::new(BudgetConfig::AwsQuota {
            capacity: 30,
            retry_cost: 14,
            timeout_cost: 14,
            throttle_cost: 5,
            success_increment: 1,
        });
        let mut c = b.on_call_start(0);
        assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 0));
        assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 1));
        assert_eq!(b.level(0), 2.0);
        assert!(!fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 2));
        b.on_attempt_end(&mut c, None);
        assert_eq!(b.level(0), 16.0);
    }

    #[test]
    fn finagle_defaults_start_with_100_retries_and_deposit_per_success() {
        let mut b = Budget::new(BudgetConfig::Finagle {
            ttl: 10 * S,
            min_retries_per_sec: 10.0,
            percent_can_retry: 0.2,
            max_requeues_fraction: 0.2,
        });
        assert_eq!(b.level(0), 100.0);
        let mut c = b.on_call_start(0);
        assert_eq!(c.requeue_cap, 20);
        let mut allowed = 0;
        while matches!(
            b.try_retry(0, &mut c, Cause::Connection, allowed),
            Gate::Allow { .. }
        ) {
            allowed += 1;
        }
        assert_eq!(allowed, 20, "capped by the per-request requeue limit");
        assert_eq!(b.level(0), 80.0);
        // Five successful calls deposit one retry (1000 each, 5000 per retry).
        for _ in 0..5 {
            let mut s = b.on_call_start(S);
            b.on_call_end(S, &mut s, true);
        }
        assert_eq!(b.level(S), 81.0);
        // Withdrawals and deposits age out after the ttl: back to the reserve.
        assert_eq!(b.level(30 * S), 100.0);
    }

    #[test]
    fn envoy_counts_concurrent_retries() {
        let mut b = Budget::new(BudgetConfig::EnvoyMaxRetries { max: 3 });
        let mut calls: Vec<CallBudget> = (0..5).map(|_| b.on_call_start(0)).collect();
        let ok: Vec<bool> = calls
            .iter_mut()
            .map(|c| matches!(b.try_retry(0, c, Cause::Status(503), 0), Gate::Allow { .. }))
            .collect();
        assert_eq!(ok, vec![true, true, true, false, false]);
        // One retry resolves: a slot frees.
        b.on_attempt_end(&mut calls[0], Some(Cause::Status(503)));
        assert!(matches!(
            b.try_retry(0, &mut calls[3], Cause::Status(503), 0),
            Gate::Allow { .. }
        ));

        let mut budget = Budget::new(BudgetConfig::EnvoyBudget {
            percent: 20.0,
            min_concurrency: 3,
        });
        let mut many: Vec<CallBudget> = (0..100).map(|_| budget.on_call_start(0)).collect();
        let granted = many
            .iter_mut()
            .map(|c| {
                matches!(
                    budget.try_retry(0, c, Cause::Timeout, 0),
                    Gate::Allow { .. }
                )
            })
            .filter(|&ok| ok)
            .count();
        assert_eq!(granted, 20, "20% of 100 active calls");
    }

    #[test]
    fn sre_ratio_budget_keeps_retries_near_ten_percent() {
        let mut b = Budget::new(BudgetConfig::Ratio {
            ratio: 0.1,
            window: 120 * S,
        });
        let mut retries = 0;
        for i in 0..1000u64 {
            let t = i * S / 10;
            let mut c = b.on_call_start(t);
            if matches!(
                b.try_retry(t, &mut c, Cause::Status(503), 0),
                Gate::Allow { .. }
            ) {
                retries += 1;
            }
        }
        assert_eq!(retries, 100);
    }

    #[test]
    fn per_minute_budget_refills_continuously() {
        let mut b = Budget::new(BudgetConfig::PerMinute { per_minute: 60.0 });
        let mut c = CallBudget::default();
        let granted = (0..100)
            .filter(|_| {
                matches!(
                    b.try_retry(0, &mut c, Cause::Timeout, 0),
                    Gate::Allow { .. }
                )
            })
            .count();
        assert_eq!(granted, 60);
        // One token per second comes back.
        assert!(matches!(
            b.try_retry(S, &mut c, Cause::Timeout, 0),
            Gate::Allow { .. }
        ));
        assert_eq!(b.try_retry(S, &mut c, Cause::Timeout, 0), Gate::Deny);
    }

    #[test]
    fn rate_limiter_delays_instead_of_refusing() {
        // client-go: 10 qps, burst 100.
        let mut b = Budget::new(BudgetConfig::RateLimiter {
            rate_per_sec: 10.0,
            burst: 100.0,
        });
        let mut c = CallBudget::default();
        for _ in 0..100 {
            assert_eq!(
                b.try_retry(0, &mut c, Cause::Timeout, 0),
                Gate::Allow { min_sleep: 0 }
            );
        }
        assert_eq!(
            b.try_retry(0, &mut c, Cause::Timeout, 0),
            Gate::Allow { min_sleep: S / 10 }
        );
        assert_eq!(
            b.try_retry(0, &mut c, Cause::Timeout, 0),
            Gate::Allow {
                min_sleep: 2 * S / 10
            }
        );
    }
}
