//! Client-side throttles: gates in front of *every* attempt (first tries
//! included), unlike budgets, which only gate retries. Each kind is a
//! state machine in a file of its own; [`Throttle`] holds one by value and
//! dispatches with a `match`:
//!
//! - [`SreAdaptive`]: the SRE book's client-side adaptive throttling;
//! - [`AwsCubic`]: the AWS SDKs' adaptive retry mode, botocore's CUBIC
//!   client rate limiter.

mod aws_cubic;
mod sre_adaptive;
#[cfg(test)]
mod tests;

pub use aws_cubic::AwsCubic;
pub use sre_adaptive::SreAdaptive;

use crate::engine::{Nanos, Stream};
use crate::model::level::Holds;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThrottleConfig {
    Adaptive { k: f64, window: Nanos },
    AwsAdaptive,
}

/// Whether an attempt may be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Send it after waiting this long (0 = now).
    After(Nanos),
    /// Reject it locally.
    Reject,
}

/// The live state of one throttle.
#[derive(Clone, Debug)]
pub enum Throttle {
    Adaptive(SreAdaptive),
    AwsAdaptive(AwsCubic),
}

impl Throttle {
    /// The memory one throttle of `cfg` takes.
    pub fn state_bytes(cfg: &ThrottleConfig) -> u64 {
        let own = std::mem::size_of::<Throttle>() as u64;
        match cfg {
            ThrottleConfig::Adaptive { .. } => own + SreAdaptive::heap_bytes(),
            ThrottleConfig::AwsAdaptive => own,
        }
    }

    pub fn new(cfg: ThrottleConfig) -> Self {
        match cfg {
            ThrottleConfig::Adaptive { k, window } => {
                Throttle::Adaptive(SreAdaptive::new(k, window))
            }
            ThrottleConfig::AwsAdaptive => Throttle::AwsAdaptive(AwsCubic::new()),
        }
    }

    /// Asks to send an attempt now.
    #[inline]
    pub fn admit(&mut self, now: Nanos, rng: &mut Stream) -> Admit {
        match self {
            Throttle::Adaptive(t) => t.admit(now, rng),
            Throttle::AwsAdaptive(t) => t.admit(now),
        }
    }

    /// The response to an attempt arrived: `accepted` when it succeeded,
    /// `throttled` when it was a throttling error.
    #[inline]
    pub fn on_response(&mut self, now: Nanos, accepted: bool, throttled: bool) {
        match self {
            Throttle::Adaptive(t) => t.on_response(now, accepted),
            Throttle::AwsAdaptive(t) => t.on_response(now, throttled),
        }
    }

    /// For the time series: the rejection probability (SRE) or the token
    /// fill rate per second (AWS; 0 while disabled).
    pub fn level(&mut self, now: Nanos) -> f64 {
        match self {
            Throttle::Adaptive(t) => t.reject_probability(now),
            Throttle::AwsAdaptive(t) => t.level(),
        }
    }

    /// How long the level last read holds (see `model::level`).
    pub fn holds(&self) -> Holds {
        match self {
            Throttle::Adaptive(t) => t.holds(),
            Throttle::AwsAdaptive(_) => Holds::UntilTouched,
        }
    }
}
