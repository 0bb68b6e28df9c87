//! A rate limiter that delays retries instead of refusing them:
//! client-go's workqueue `BucketRateLimiter` (10 qps, burst 100;
//! kubernetes/client-go `util/workqueue/default_rate_limiters.go`;
//! docs/sources/presets.md §7.4), which is `golang.org/x/time/rate`'s
//! `Reserve()`: every retry is granted and reserves a token; the sleep
//! lasts at least until that token exists.

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::outcome::Cause;

#[derive(Clone, Debug)]
pub struct RateLimiter {
    rate_per_sec: f64,
    burst: f64,
    /// May go negative: tokens reserved ahead of time.
    tokens: f64,
    last_refill: Nanos,
}

impl RateLimiter {
    pub fn new(rate_per_sec: f64, burst: f64) -> Self {
        RateLimiter {
            rate_per_sec,
            burst,
            tokens: burst,
            last_refill: 0,
        }
    }

    fn refill(&mut self, now: Nanos) {
        let dt = now.saturating_sub(self.last_refill) as f64;
        self.tokens = (self.tokens + dt * (self.rate_per_sec / 1e9)).min(self.burst);
        self.last_refill = now;
    }
}

impl RetryBudget for RateLimiter {
    fn try_retry(&mut self, now: Nanos, _: &mut CallBudget, _: Cause, _: u32) -> Gate {
        self.refill(now);
        self.tokens -= 1.0;
        let wait = if self.tokens >= 0.0 {
            0
        } else {
            (-self.tokens / self.rate_per_sec * 1e9).ceil() as Nanos
        };
        Gate::Allow { min_sleep: wait }
    }

    fn level(&mut self, now: Nanos) -> f64 {
        self.refill(now);
        self.tokens
    }
}
