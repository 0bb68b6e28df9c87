//! Adaptive concurrency limits: a server-side limit on the requests a
//! replica holds at once that follows what the replica's latency says
//! about its queue, as a sidecar's or a server library's limiter does.
//! A request that arrives when the replica already holds `limit` requests
//! is rejected at once (Envoy answers 503, `rq_blocked`); the others are
//! forwarded and, when they leave, become samples: their round-trip time
//! at the replica, the requests in flight when they were admitted, and
//! whether they failed (a *drop*, in Netflix's terms). A request its
//! caller cancelled gives no sample (Envoy's `cancelLatencySample`,
//! Netflix's `onIgnore`).
//!
//! Four algorithms, one file each, behind [`Limiter`] (the shape of
//! smoltcp's congestion controllers): each is a small state machine that
//! takes `now` and samples and answers the limit.
//!
//! - [`gradient`]: Envoy's adaptive concurrency filter
//!   (`source/extensions/filters/http/adaptive_concurrency/controller/
//!   gradient_controller.cc`, `api/envoy/extensions/filters/http/
//!   adaptive_concurrency/v3/adaptive_concurrency.proto`);
//! - [`gradient2`]: Netflix concurrency-limits' `Gradient2Limit`;
//! - [`vegas`]: Netflix concurrency-limits' `VegasLimit`, optionally with
//!   platinummonkey/go-concurrency-limits' sample window;
//! - [`aimd`]: Netflix concurrency-limits' `AIMDLimit`.
//!
//! Each file cites its source and defaults.

pub mod aimd;
pub mod gradient;
pub mod gradient2;
pub mod vegas;

use crate::engine::{Nanos, Stream};

pub use aimd::{Aimd, AimdConfig};
pub use gradient::{Gradient, GradientConfig};
pub use gradient2::{Gradient2, Gradient2Config};
pub use vegas::{Vegas, VegasConfig, VegasWindow};

/// A request that left a limited replica.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// When it was admitted.
    pub start: Nanos,
    /// Its round-trip time at the replica (admitted until answered).
    pub rtt: Nanos,
    /// Requests in flight at the replica once it was admitted (itself
    /// included), as Netflix's limiters count it.
    pub inflight: u32,
    /// It failed (an error status, a queue timeout, a reset).
    pub dropped: bool,
}

/// An algorithm and its settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AdaptiveConfig {
    Gradient(GradientConfig),
    Gradient2(Gradient2Config),
    Vegas(VegasConfig),
    Aimd(AimdConfig),
}

impl AdaptiveConfig {
    /// The algorithm's name, as the scenario writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            AdaptiveConfig::Gradient(_) => "gradient",
            AdaptiveConfig::Gradient2(_) => "gradient2",
            AdaptiveConfig::Vegas(_) => "vegas",
            AdaptiveConfig::Aimd(_) => "aimd",
        }
    }

    /// The lowest limit the algorithm may set.
    pub fn floor(&self) -> u32 {
        match self {
            AdaptiveConfig::Gradient(c) => c.min_concurrency,
            AdaptiveConfig::Gradient2(c) => c.min_limit,
            AdaptiveConfig::Vegas(_) => 1,
            AdaptiveConfig::Aimd(c) => c.min_limit,
        }
    }
}

/// One replica's limiter.
#[derive(Clone, Debug)]
pub enum Limiter {
    Gradient(Gradient),
    Gradient2(Gradient2),
    Vegas(Vegas),
    Aimd(Aimd),
}

impl Limiter {
    /// A limiter starting at `now` (Envoy's controller starts in a minRTT
    /// measurement; Vegas draws its first probe jitter from `rng`).
    pub fn new(cfg: &AdaptiveConfig, now: Nanos, rng: &mut Stream) -> Self {
        match cfg {
            AdaptiveConfig::Gradient(c) => Limiter::Gradient(Gradient::new(*c, now)),
            AdaptiveConfig::Gradient2(c) => Limiter::Gradient2(Gradient2::new(*c)),
            AdaptiveConfig::Vegas(c) => Limiter::Vegas(Vegas::new(*c, rng)),
            AdaptiveConfig::Aimd(c) => Limiter::Aimd(Aimd::new(*c)),
        }
    }

    /// The limit at `now`, after any timer due by then (Envoy's sample
    /// windows and minRTT measurements) has run.
    pub fn limit(&mut self, now: Nanos) -> u32 {
        match self {
            Limiter::Gradient(g) => {
                g.advance(now);
                g.limit()
            }
            Limiter::Gradient2(g) => g.limit(),
            Limiter::Vegas(v) => v.limit(),
            Limiter::Aimd(a) => a.limit(),
        }
    }

    /// A request left at `now`.
    pub fn on_sample(&mut self, now: Nanos, s: Sample, rng: &mut Stream) {
        match self {
            Limiter::Gradient(g) => g.on_sample(now, s, rng),
            Limiter::Gradient2(g) => g.on_sample(s),
            Limiter::Vegas(v) => v.on_sample(now, s, rng),
            Limiter::Aimd(a) => a.on_sample(s),
        }
    }
}
