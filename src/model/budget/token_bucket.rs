//! gRPC retry throttling (gRFC A6, "Throttling Retry Attempts and
//! Hedged RPCs"; docs/sources/presets.md §2): tokens start at
//! `max_tokens`; a failure the policy would retry takes one token, a
//! success adds `token_ratio`; a retry is allowed only while
//! tokens > `max_tokens / 2`, checked after the failure's decrement.

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::level::Holds;
use crate::model::outcome::Cause;

#[derive(Clone, Debug)]
pub struct TokenBucket {
    max_tokens: f64,
    token_ratio: f64,
    tokens: f64,
}

impl TokenBucket {
    pub fn new(max_tokens: f64, token_ratio: f64) -> Self {
        TokenBucket {
            max_tokens,
            token_ratio,
            tokens: max_tokens,
        }
    }
}

impl RetryBudget for TokenBucket {
    fn on_attempt_end(&mut self, _call: &mut CallBudget, failure: Option<Cause>) {
        self.tokens = match failure {
            None => (self.tokens + self.token_ratio).min(self.max_tokens),
            Some(_) => (self.tokens - 1.0).max(0.0),
        };
    }

    fn try_retry(&mut self, _: Nanos, _: &mut CallBudget, _: Cause, _: u32) -> Gate {
        if self.tokens > self.max_tokens / 2.0 {
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
