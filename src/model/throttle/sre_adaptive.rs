//! The SRE book's client-side adaptive throttling ("Handling Overload";
//! docs/sources/presets.md §8): over the last `window` (2 minutes in the
//! book), reject locally with probability
//! `max(0, (requests − K·accepts) / (requests + 1))`; locally rejected
//! requests still count in `requests`; an attempt is *accepted* when it
//! succeeds. Both counts are sliding windows of 120 slices.

use crate::engine::{Nanos, Stream};
use crate::model::level::Holds;
use crate::model::window::Windowed;

use super::Admit;

#[derive(Clone, Debug)]
pub struct SreAdaptive {
    k: f64,
    pub(super) requests: Windowed,
    pub(super) accepts: Windowed,
}

/// Slices of each window (1 s of the book's 2 minutes).
const SLICES: usize = 120;

impl SreAdaptive {
    pub fn new(k: f64, window: Nanos) -> Self {
        SreAdaptive {
            k,
            requests: Windowed::new(window, SLICES),
            accepts: Windowed::new(window, SLICES),
        }
    }

    /// The bytes a throttle allocates.
    pub fn heap_bytes() -> u64 {
        2 * Windowed::heap_bytes(SLICES)
    }

    /// The rejection probability now.
    pub fn reject_probability(&mut self, now: Nanos) -> f64 {
        let req = self.requests.total(now);
        let acc = self.accepts.total(now);
        ((req - self.k * acc) / (req + 1.0)).max(0.0)
    }

    /// How long the probability last read holds: while both windows do.
    pub fn holds(&self) -> Holds {
        self.requests.holds().min(self.accepts.holds())
    }

    pub fn admit(&mut self, now: Nanos, rng: &mut Stream) -> Admit {
        let p = self.reject_probability(now);
        self.requests.add(now, 1.0);
        if p > 0.0 && rng.chance(p) {
            Admit::Reject
        } else {
            Admit::After(0)
        }
    }

    pub fn on_response(&mut self, now: Nanos, accepted: bool) {
        if accepted {
            self.accepts.add(now, 1.0);
        }
    }
}
