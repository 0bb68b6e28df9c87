//! Polly v8's failure-ratio window (App-vNext/Polly
//! `CircuitBreakerStrategyOptions`, `SamplingDuration`;
//! docs/sources/presets.md §5): calls and failures over a sliding time
//! window, kept in 10 slices.

use crate::engine::Nanos;
use crate::model::window::Windowed;

#[derive(Clone, Debug)]
pub struct TimeWindow {
    calls: Windowed,
    failures: Windowed,
}

/// Slices of the window (Polly's health metrics: 10 windows).
const SLICES: usize = 10;

impl TimeWindow {
    pub fn new(window: Nanos) -> Self {
        TimeWindow {
            calls: Windowed::new(window, SLICES),
            failures: Windowed::new(window, SLICES),
        }
    }

    /// The bytes a window allocates.
    pub fn heap_bytes() -> u64 {
        2 * Windowed::heap_bytes(SLICES)
    }

    /// Records one outcome; returns (calls, failures) in the window.
    pub fn add(&mut self, now: Nanos, failed: bool) -> (f64, f64) {
        self.calls.add(now, 1.0);
        self.failures.add(now, if failed { 1.0 } else { 0.0 });
        (self.calls.total(now), self.failures.total(now))
    }
}
