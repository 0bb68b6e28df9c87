//! The SRE book's server-wide budget, "60 retries per minute per process"
//! ("Addressing Cascading Failures"; docs/sources/presets.md §8), as a
//! token bucket of `per_minute` tokens refilled continuously at
//! `per_minute` per minute; a retry takes one whole token.

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::outcome::Cause;

#[derive(Clone, Debug)]
pub struct PerMinute {
    per_minute: f64,
    tokens: f64,
    last_refill: Nanos,
}

impl PerMinute {
    pub fn new(per_minute: f64) -> Self {
        PerMinute {
            per_minute,
            tokens: per_minute,
            last_refill: 0,
        }
    }

    fn refill(&mut self, now: Nanos) {
        let dt = now.saturating_sub(self.last_refill) as f64;
        self.tokens = (self.tokens + dt * (self.per_minute / 60e9)).min(self.per_minute);
        self.last_refill = now;
    }
}

impl RetryBudget for PerMinute {
    fn try_retry(&mut self, now: Nanos, _: &mut CallBudget, _: Cause, _: u32) -> Gate {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Gate::ALLOW
        } else {
            Gate::Deny
        }
    }

    fn level(&mut self, now: Nanos) -> f64 {
        self.refill(now);
        self.tokens
    }
}
