//! The AWS SDKs' retry quota (AWS SDKs and Tools reference guide, "Retry
//! behavior"; docs/sources/presets.md §1.2 and §1.3): starts full at
//! `capacity`; a retry costs `timeout_cost` after a timeout,
//! `throttle_cost` after a throttling error (429 here), else `retry_cost`,
//! and is refused when the quota holds less; a successful attempt gives
//! back the call's last cost, or `success_increment` when the call never
//! paid one.

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::level::Holds;
use crate::model::outcome::Cause;

#[derive(Clone, Debug)]
pub struct AwsQuota {
    capacity: u32,
    retry_cost: u32,
    timeout_cost: u32,
    throttle_cost: u32,
    success_increment: u32,
    tokens: f64,
}

impl AwsQuota {
    pub fn new(
        capacity: u32,
        retry_cost: u32,
        timeout_cost: u32,
        throttle_cost: u32,
        success_increment: u32,
    ) -> Self {
        AwsQuota {
            capacity,
            retry_cost,
            timeout_cost,
            throttle_cost,
            success_increment,
            tokens: capacity as f64,
        }
    }
}

impl RetryBudget for AwsQuota {
    fn on_attempt_end(&mut self, call: &mut CallBudget, failure: Option<Cause>) {
        if failure.is_none() {
            let back = if call.last_cost == 0 {
                self.success_increment
            } else {
                call.last_cost
            };
            self.tokens = (self.tokens + back as f64).min(self.capacity as f64);
        }
    }

    fn try_retry(&mut self, _: Nanos, call: &mut CallBudget, cause: Cause, _: u32) -> Gate {
        let cost = match cause {
            Cause::Timeout => self.timeout_cost,
            Cause::Status(429) => self.throttle_cost,
            _ => self.retry_cost,
        };
        if self.tokens < cost as f64 {
            Gate::Deny
        } else {
            self.tokens -= cost as f64;
            call.last_cost = cost;
            Gate::ALLOW
        }
    }

    fn level(&mut self, _: Nanos) -> f64 {
        self.tokens
    }

    fn holds(&self) -> Holds {
        Holds::UntilTouched
    }
}
