//! Finagle's `RetryBudget(ttl, minRetriesPerSec, percentCanRetry)`
//! (twitter/finagle `RetryBudget.scala`; docs/sources/presets.md §4):
//! every successful call deposits 1000, every retry withdraws
//! `1000 / percent`, and a reserve of `minRetriesPerSec × ttl` withdrawals
//! is always available; deposits and withdrawals live in a leaky window of
//! `ttl` cut into 10 slices (`WindowedAdder`). Each call may also requeue
//! at most `ceil(max_requeues_fraction × balance)` times, fixed when it
//! starts (`RequeueFilter`'s MaxRequeuesPerReq, 0.2).

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::level::Holds;
use crate::model::outcome::Cause;
use crate::model::window::Windowed;

const SCALE: f64 = 1000.0;
/// Slices of Finagle's `WindowedAdder` (its ttl in 10 slices).
const SLICES: usize = 10;

#[derive(Clone, Debug)]
pub struct Finagle {
    max_requeues_fraction: f64,
    deposit: f64,
    withdraw: f64,
    reserve: f64,
    window: Windowed,
}

impl Finagle {
    pub fn new(
        ttl: Nanos,
        min_retries_per_sec: f64,
        percent_can_retry: f64,
        max_requeues_fraction: f64,
    ) -> Self {
        // A budget of 0% never deposits and withdraws 1 (Finagle's own
        // special case), so only the reserve can pay for retries.
        let (deposit, withdraw) = if percent_can_retry == 0.0 {
            (0.0, 1.0)
        } else {
            (SCALE, (SCALE / percent_can_retry).floor())
        };
        Finagle {
            max_requeues_fraction,
            deposit,
            withdraw,
            reserve: min_retries_per_sec * (ttl as f64 / 1e9) * withdraw,
            window: Windowed::new(ttl, SLICES),
        }
    }

    /// The bytes a budget allocates.
    pub fn heap_bytes() -> u64 {
        Windowed::heap_bytes(SLICES)
    }

    /// Finagle's `count`: the window's sum plus the reserve.
    fn count(&mut self, now: Nanos) -> f64 {
        self.window.total(now) + self.reserve
    }
}

impl RetryBudget for Finagle {
    fn on_call_start(&mut self, now: Nanos) -> CallBudget {
        let balance = self.count(now) / self.withdraw;
        CallBudget {
            requeue_cap: if self.max_requeues_fraction > 0.0 {
                (self.max_requeues_fraction * balance).ceil().max(0.0) as u32
            } else {
                u32::MAX
            },
            ..CallBudget::default()
        }
    }

    fn try_retry(&mut self, now: Nanos, call: &mut CallBudget, _: Cause, retries: u32) -> Gate {
        if retries >= call.requeue_cap {
            return Gate::Deny;
        }
        if self.count(now) >= self.withdraw {
            self.window.add(now, -self.withdraw);
            Gate::ALLOW
        } else {
            Gate::Deny
        }
    }

    fn on_call_end(&mut self, now: Nanos, _: &mut CallBudget, success: bool) {
        if success {
            self.window.add(now, self.deposit);
        }
    }

    /// The balance, in retries.
    fn level(&mut self, now: Nanos) -> f64 {
        self.count(now) / self.withdraw
    }

    fn holds(&self) -> Holds {
        self.window.holds()
    }
}
