//! Brooker's retry token bucket ("Fixing retries with token buckets and
//! circuit breakers", 2022, code in mbrooker/simulator_example `retry_sim/`;
//! docs/sources/experiments.md §2): starts full at `capacity`; every new
//! call adds `per_request`; a retry needs more than `retry_cost` tokens
//! and spends `retry_cost`.

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::level::Holds;
use crate::model::outcome::Cause;

#[derive(Clone, Debug)]
pub struct RetryTokens {
    capacity: f64,
    per_request: f64,
    retry_cost: f64,
    tokens: f64,
}

impl RetryTokens {
    pub fn new(capacity: f64, per_request: f64, retry_cost: f64) -> Self {
        RetryTokens {
            capacity,
            per_request,
            retry_cost,
            tokens: capacity,
        }
    }
}

impl RetryBudget for RetryTokens {
    fn on_call_start(&mut self, _: Nanos) -> CallBudget {
        self.tokens = (self.tokens + self.per_request).min(self.capacity);
        CallBudget::default()
    }

    fn try_retry(&mut self, _: Nanos, _: &mut CallBudget, _: Cause, _: u32) -> Gate {
        if self.tokens > self.retry_cost {
            self.tokens -= self.retry_cost;
            Gate::ALLOW
        } else {
            Gate::Deny
        }
    }

    fn level(&mut self, _: Nanos) -> f64 {
        self.tokens
    }

    fn holds(&self) -> Holds {
        Holds::UntilTouched
    }
}
