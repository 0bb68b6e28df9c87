//! Envoy's two limits on concurrent retries (envoy
//! `api/envoy/config/cluster/v3/circuit_breaker.proto`;
//! docs/sources/presets.md §3), both counted per cluster of active
//! requests:
//!
//! - `retry_budget`: concurrent retries ≤ max(`budget_percent` / 100 ×
//!   active requests, `min_retry_concurrency`);
//! - the `max_retries` circuit breaker: at most `max` concurrent retries.
//!
//! A retry is active from the moment it is granted until its attempt
//! resolves (or its call ends).

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::level::Holds;
use crate::model::outcome::Cause;

/// Calls and retries in flight, as Envoy's resource manager counts them.
#[derive(Clone, Debug, Default)]
struct Active {
    calls: u64,
    retries: u64,
}

impl Active {
    fn release(&mut self, call: &mut CallBudget) {
        if call.holds_retry {
            call.holds_retry = false;
            self.retries = self.retries.saturating_sub(1);
        }
    }

    fn take(&mut self, call: &mut CallBudget, ok: bool) -> Gate {
        if ok {
            self.retries += 1;
            call.holds_retry = true;
            Gate::ALLOW
        } else {
            Gate::Deny
        }
    }
}

macro_rules! active_counting {
    () => {
        fn on_call_start(&mut self, _: Nanos) -> CallBudget {
            self.active.calls += 1;
            CallBudget::default()
        }

        fn on_attempt_end(&mut self, call: &mut CallBudget, _: Option<Cause>) {
            self.active.release(call);
        }

        fn on_unqualified_failure(&mut self, call: &mut CallBudget) {
            self.active.release(call);
        }

        fn on_call_end(&mut self, _: Nanos, call: &mut CallBudget, _: bool) {
            self.active.calls = self.active.calls.saturating_sub(1);
            self.active.release(call);
        }

        /// Retries active now.
        fn level(&mut self, _: Nanos) -> f64 {
            self.active.retries as f64
        }

        fn holds(&self) -> Holds {
            Holds::UntilTouched
        }
    };
}

/// `retry_budget { budget_percent, min_retry_concurrency }`.
#[derive(Clone, Debug)]
pub struct EnvoyBudget {
    percent: f64,
    min_concurrency: u32,
    active: Active,
}

impl EnvoyBudget {
    pub fn new(percent: f64, min_concurrency: u32) -> Self {
        EnvoyBudget {
            percent,
            min_concurrency,
            active: Active::default(),
        }
    }
}

impl RetryBudget for EnvoyBudget {
    active_counting!();

    fn try_retry(&mut self, _: Nanos, call: &mut CallBudget, _: Cause, _: u32) -> Gate {
        let limit =
            (self.percent / 100.0 * self.active.calls as f64).max(self.min_concurrency as f64);
        let ok = (self.active.retries as f64) < limit;
        self.active.take(call, ok)
    }
}

/// The `max_retries` circuit breaker threshold.
#[derive(Clone, Debug)]
pub struct EnvoyMaxRetries {
    max: u32,
    active: Active,
}

impl EnvoyMaxRetries {
    pub fn new(max: u32) -> Self {
        EnvoyMaxRetries {
            max,
            active: Active::default(),
        }
    }
}

impl RetryBudget for EnvoyMaxRetries {
    active_counting!();

    fn try_retry(&mut self, _: Nanos, call: &mut CallBudget, _: Cause, _: u32) -> Gate {
        let ok = self.active.retries < self.max as u64;
        self.active.take(call, ok)
    }
}
