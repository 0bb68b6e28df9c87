//! The SRE book's per-client retry budget ("Handling Overload": keep
//! retries below 10% of requests; docs/sources/presets.md §8): a retry is
//! granted only while retries ÷ calls over the last `window` stays within
//! `ratio` with the retry being granted counted, so the retry load is at
//! most 1 + ratio. Both counts are sliding windows of 60 slices.

use super::{CallBudget, Gate, RetryBudget};
use crate::engine::Nanos;
use crate::model::level::Holds;
use crate::model::outcome::Cause;
use crate::model::window::Windowed;

#[derive(Clone, Debug)]
pub struct Ratio {
    ratio: f64,
    calls: Windowed,
    retries: Windowed,
}

/// Slices of each window.
const SLICES: usize = 60;

impl Ratio {
    pub fn new(ratio: f64, window: Nanos) -> Self {
        Ratio {
            ratio,
            calls: Windowed::new(window, SLICES),
            retries: Windowed::new(window, SLICES),
        }
    }

    /// The bytes a budget allocates.
    pub fn heap_bytes() -> u64 {
        2 * Windowed::heap_bytes(SLICES)
    }
}

impl RetryBudget for Ratio {
    fn on_call_start(&mut self, now: Nanos) -> CallBudget {
        self.calls.add(now, 1.0);
        CallBudget::default()
    }

    fn try_retry(&mut self, now: Nanos, _: &mut CallBudget, _: Cause, _: u32) -> Gate {
        let calls = self.calls.total(now);
        let retries = self.retries.total(now);
        if calls > 0.0 && (retries + 1.0) / calls <= self.ratio {
            self.retries.add(now, 1.0);
            Gate::ALLOW
        } else {
            Gate::Deny
        }
    }

    /// Retries ÷ calls over the window.
    fn level(&mut self, now: Nanos) -> f64 {
        let calls = self.calls.total(now);
        let retries = self.retries.total(now);
        if calls > 0.0 { retries / calls } else { 0.0 }
    }

    fn holds(&self) -> Holds {
        self.calls.holds().min(self.retries.holds())
    }
}
