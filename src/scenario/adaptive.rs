//! `adaptive_concurrency` on a service (DESIGN-v2 §2), as the scenario
//! format writes it: `{ kind: gradient }` and the settings of the
//! algorithm chosen, every one with its upstream default — and its
//! validation and translation into the model's types (`model::adaptive`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::units::Duration;
use super::validate::Checker;
use crate::model::adaptive::{
    AdaptiveConfig, AimdConfig, Gradient2Config, GradientConfig, VegasConfig, VegasWindow,
};

/// The algorithm of an adaptive concurrency limit.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdaptiveKind {
    /// Envoy's adaptive concurrency filter (gradient controller).
    Gradient,
    /// Netflix concurrency-limits' Gradient2Limit.
    Gradient2,
    /// Netflix concurrency-limits' VegasLimit.
    Vegas,
    /// Netflix concurrency-limits' AIMDLimit.
    Aimd,
}

/// `adaptive_concurrency: { kind: gradient }` on a service: each replica
/// limits the requests it holds at once by a limit that adapts to its
/// latency, and rejects the others at once with a 503. Every setting is
/// optional and applies to the kinds named.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveConcurrency {
    pub kind: AdaptiveKind,
    /// gradient: the limit while measuring the minimum RTT, and the
    /// lowest limit (Envoy's `min_concurrency`, 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_concurrency: Option<u32>,
    /// gradient: how often the limit is recalculated from the latencies
    /// sampled (`concurrency_update_interval`, 100 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_interval: Option<Duration>,
    /// gradient: time between minimum-RTT measurements, before jitter
    /// (`min_rtt_calc_params.interval`, 60 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_interval: Option<Duration>,
    /// gradient: requests a minimum-RTT measurement gathers
    /// (`request_count`, 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_count: Option<u32>,
    /// gradient: the fraction of `min_rtt_interval` added at random
    /// (`jitter`, 0.15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// gradient: the fraction the minimum RTT is raised by before it is
    /// compared (`buffer`, 0.25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<f64>,
    /// gradient: the quantile of the latencies sampled, in (0, 1]
    /// (`sample_aggregate_percentile`, 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
    /// gradient2, vegas, aimd: the limit at the start (20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_limit: Option<u32>,
    /// gradient2, aimd: the lowest limit (20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_limit: Option<u32>,
    /// Every kind: the highest limit (gradient and vegas 1000, gradient2
    /// and aimd 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_limit: Option<u32>,
    /// gradient2, vegas: the weight of a new estimate, in (0, 1]
    /// (gradient2 0.2, vegas 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoothing: Option<f64>,
    /// gradient2: the headroom added at each update (4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_size: Option<u32>,
    /// gradient2: samples of the long-term RTT average (600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_window: Option<u32>,
    /// gradient2: how many times the long-term average RTT a sample may
    /// take before the limit falls, at least 1 (`rttTolerance`, 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_tolerance: Option<f64>,
    /// vegas: updates between probes of the no-load RTT, per unit of
    /// limit (30; 0: never probe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_multiplier: Option<u32>,
    /// vegas: update once per window of at least this long and more than
    /// 10 samples, as go-concurrency-limits does (its default: 1s);
    /// absent: on every sample, as Netflix's library does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Duration>,
    /// aimd: the factor a drop multiplies the limit by, in [0.5, 1) (0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ratio: Option<f64>,
    /// aimd: a request slower than this counts as a drop (5 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
}

/// The most any limit may be.
pub const MAX_LIMIT: u32 = 1_000_000;

impl AdaptiveConcurrency {
    /// The model's settings (validated input assumed).
    pub fn to_model(&self) -> AdaptiveConfig {
        let ns = |d: Option<Duration>, default: u64| d.map_or(default, |d| d.ns());
        // A bound left out follows the other one given, so that a default
        // never contradicts a valid choice: `max_limit: 10` alone lowers
        // the floor to 10, `min_limit: 500` alone raises the ceiling to 500.
        let bounds = |lo: Option<u32>, lo_default: u32, hi_default: u32| {
            let lo_ = lo.unwrap_or(lo_default.min(self.max_limit.unwrap_or(u32::MAX)));
            let hi = (self.max_limit).unwrap_or(hi_default.max(lo.unwrap_or(0)));
            (lo_, hi)
        };
        match self.kind {
            AdaptiveKind::Gradient => {
                let d = GradientConfig::default();
                let (lo, hi) = bounds(self.min_concurrency, d.min_concurrency, d.max_limit);
                AdaptiveConfig::Gradient(GradientConfig {
                    sample_interval: ns(self.sample_interval, d.sample_interval).max(1),
                    max_limit: hi,
                    percentile: self.percentile.unwrap_or(d.percentile),
                    min_rtt_interval: ns(self.min_rtt_interval, d.min_rtt_interval).max(1),
                    request_count: self.request_count.unwrap_or(d.request_count).max(1),
                    jitter: self.jitter.unwrap_or(d.jitter),
                    min_concurrency: lo.max(1),
                    buffer: self.buffer.unwrap_or(d.buffer),
                })
            }
            AdaptiveKind::Gradient2 => {
                let d = Gradient2Config::default();
                let (lo, hi) = bounds(self.min_limit, d.min_limit, d.max_limit);
                AdaptiveConfig::Gradient2(Gradient2Config {
                    initial_limit: self.initial_limit.unwrap_or(d.initial_limit),
                    min_limit: lo,
                    max_limit: hi,
                    smoothing: self.smoothing.unwrap_or(d.smoothing),
                    queue_size: self.queue_size.unwrap_or(d.queue_size),
                    long_window: self.long_window.unwrap_or(d.long_window).max(1),
                    rtt_tolerance: self.rtt_tolerance.unwrap_or(d.rtt_tolerance),
                })
            }
            AdaptiveKind::Vegas => {
                let d = VegasConfig::default();
                AdaptiveConfig::Vegas(VegasConfig {
                    initial_limit: self.initial_limit.unwrap_or(d.initial_limit),
                    max_limit: self.max_limit.unwrap_or(d.max_limit),
                    smoothing: self.smoothing.unwrap_or(d.smoothing),
                    probe_multiplier: self.probe_multiplier.unwrap_or(d.probe_multiplier),
                    window: self.window.map(|w| VegasWindow {
                        min_time: w.ns(),
                        ..VegasWindow::default()
                    }),
                })
            }
            AdaptiveKind::Aimd => {
                let d = AimdConfig::default();
                let (lo, hi) = bounds(self.min_limit, d.min_limit, d.max_limit);
                AdaptiveConfig::Aimd(AimdConfig {
                    initial_limit: self.initial_limit.unwrap_or(d.initial_limit),
                    min_limit: lo,
                    max_limit: hi,
                    backoff_ratio: self.backoff_ratio.unwrap_or(d.backoff_ratio),
                    timeout: ns(self.timeout, d.timeout),
                })
            }
        }
    }

    /// The settings given, by name, with the kinds each applies to.
    fn given(&self) -> [(&'static str, bool, &'static [AdaptiveKind]); 18] {
        use AdaptiveKind::*;
        [
            (
                "min_concurrency",
                self.min_concurrency.is_some(),
                &[Gradient],
            ),
            (
                "sample_interval",
                self.sample_interval.is_some(),
                &[Gradient],
            ),
            (
                "min_rtt_interval",
                self.min_rtt_interval.is_some(),
                &[Gradient],
            ),
            ("request_count", self.request_count.is_some(), &[Gradient]),
            ("jitter", self.jitter.is_some(), &[Gradient]),
            ("buffer", self.buffer.is_some(), &[Gradient]),
            ("percentile", self.percentile.is_some(), &[Gradient]),
            (
                "initial_limit",
                self.initial_limit.is_some(),
                &[Gradient2, Vegas, Aimd],
            ),
            ("min_limit", self.min_limit.is_some(), &[Gradient2, Aimd]),
            (
                "max_limit",
                self.max_limit.is_some(),
                &[Gradient, Gradient2, Vegas, Aimd],
            ),
            ("smoothing", self.smoothing.is_some(), &[Gradient2, Vegas]),
            ("queue_size", self.queue_size.is_some(), &[Gradient2]),
            ("long_window", self.long_window.is_some(), &[Gradient2]),
            ("rtt_tolerance", self.rtt_tolerance.is_some(), &[Gradient2]),
            (
                "probe_multiplier",
                self.probe_multiplier.is_some(),
                &[Vegas],
            ),
            ("window", self.window.is_some(), &[Vegas]),
            ("backoff_ratio", self.backoff_ratio.is_some(), &[Aimd]),
            ("timeout", self.timeout.is_some(), &[Aimd]),
        ]
    }
}

fn kind_name(k: AdaptiveKind) -> &'static str {
    match k {
        AdaptiveKind::Gradient => "gradient",
        AdaptiveKind::Gradient2 => "gradient2",
        AdaptiveKind::Vegas => "vegas",
        AdaptiveKind::Aimd => "aimd",
    }
}

impl Checker {
    /// A service's `adaptive_concurrency` at `path`.
    pub(super) fn adaptive(&mut self, a: &AdaptiveConcurrency, path: &str) {
        let at = |f: &str| format!("{path}.{f}");
        for (name, given, kinds) in a.given() {
            if given && !kinds.contains(&a.kind) {
                let names: Vec<&str> = kinds.iter().map(|&k| kind_name(k)).collect();
                self.push(
                    at(name),
                    format!(
                        "{name} applies to kind {}, not {}; remove it",
                        names.join(" or "),
                        kind_name(a.kind)
                    ),
                );
            }
        }
        let count = |c: &mut Checker, v: Option<u32>, f: &str, lo: u32| {
            if let Some(v) = v {
                c.check((lo..=MAX_LIMIT).contains(&v), &at(f), || {
                    format!("{f} is {v}; expected {lo} to {MAX_LIMIT}")
                });
            }
        };
        count(self, a.min_concurrency, "min_concurrency", 1);
        count(self, a.request_count, "request_count", 1);
        count(self, a.initial_limit, "initial_limit", 1);
        count(self, a.min_limit, "min_limit", 1);
        count(self, a.max_limit, "max_limit", 1);
        count(self, a.queue_size, "queue_size", 0);
        count(self, a.long_window, "long_window", 1);
        count(self, a.probe_multiplier, "probe_multiplier", 0);
        for (d, f) in [
            (a.sample_interval, "sample_interval"),
            (a.min_rtt_interval, "min_rtt_interval"),
            (a.window, "window"),
            (a.timeout, "timeout"),
        ] {
            if let Some(d) = d {
                self.positive(d, &at(f), f);
            }
        }
        let frac = |c: &mut Checker, v: Option<f64>, f: &str, range: &str, ok: fn(f64) -> bool| {
            if let Some(v) = v {
                c.fraction(v, &at(f), range, ok);
            }
        };
        frac(self, a.jitter, "jitter", "[0, 1]", |v| {
            (0.0..=1.0).contains(&v)
        });
        frac(self, a.buffer, "buffer", "[0, 1]", |v| {
            (0.0..=1.0).contains(&v)
        });
        frac(self, a.percentile, "percentile", "(0, 1]", |v| {
            v > 0.0 && v <= 1.0
        });
        frac(self, a.smoothing, "smoothing", "(0, 1]", |v| {
            v > 0.0 && v <= 1.0
        });
        frac(self, a.backoff_ratio, "backoff_ratio", "[0.5, 1)", |v| {
            (0.5..1.0).contains(&v)
        });
        if let Some(v) = a.rtt_tolerance
            && self.finite_in(v, &at("rtt_tolerance"), "a number >= 1")
        {
            // Upstream's builder: "Tolerance must be >= 1.0".
            self.check(v >= 1.0, &at("rtt_tolerance"), || {
                format!("rtt_tolerance is {v}; expected at least 1 (1: the limit falls as soon as the RTT exceeds its long-term average)")
            });
        }
        // The bounds in order, as the model takes them.
        let m = a.to_model();
        let (lo, lo_name, hi) = match m {
            AdaptiveConfig::Gradient(c) => (c.min_concurrency, "min_concurrency", c.max_limit),
            AdaptiveConfig::Gradient2(c) => (c.min_limit, "min_limit", c.max_limit),
            AdaptiveConfig::Aimd(c) => (c.min_limit, "min_limit", c.max_limit),
            AdaptiveConfig::Vegas(c) => (1, "1", c.max_limit),
        };
        if lo <= MAX_LIMIT && (1..=MAX_LIMIT).contains(&hi) {
            self.check(lo <= hi, &at("max_limit"), || {
                format!(
                    "max_limit ({hi}) is below {lo_name} ({lo}); expected max_limit >= {lo_name}"
                )
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(json: &str) -> AdaptiveConfig {
        serde_json::from_str::<AdaptiveConcurrency>(json)
            .unwrap()
            .to_model()
    }

    /// A bound left out follows the one given (never the other side of
    /// it); both given, or neither, are taken as they are.
    #[test]
    fn a_bound_left_out_follows_the_one_given() {
        let g2 = |json| match model(json) {
            AdaptiveConfig::Gradient2(c) => (c.min_limit, c.max_limit),
            other => panic!("{other:?}"),
        };
        assert_eq!(g2(r#"{"kind":"gradient2","max_limit":10}"#), (10, 10));
        assert_eq!(g2(r#"{"kind":"gradient2","min_limit":500}"#), (500, 500));
        assert_eq!(g2(r#"{"kind":"gradient2","max_limit":50}"#), (20, 50));
        assert_eq!(g2(r#"{"kind":"gradient2","min_limit":5}"#), (5, 200));
        assert_eq!(g2(r#"{"kind":"gradient2"}"#), (20, 200));
        assert_eq!(
            g2(r#"{"kind":"gradient2","min_limit":30,"max_limit":10}"#),
            (30, 10)
        );
        let aimd = match model(r#"{"kind":"aimd","max_limit":5}"#) {
            AdaptiveConfig::Aimd(c) => (c.min_limit, c.max_limit),
            other => panic!("{other:?}"),
        };
        assert_eq!(aimd, (5, 5));
        let gradient = |json| match model(json) {
            AdaptiveConfig::Gradient(c) => (c.min_concurrency, c.max_limit),
            other => panic!("{other:?}"),
        };
        assert_eq!(gradient(r#"{"kind":"gradient","max_limit":2}"#), (2, 2));
        assert_eq!(
            gradient(r#"{"kind":"gradient","min_concurrency":2000}"#),
            (2000, 2000)
        );
        assert_eq!(gradient(r#"{"kind":"gradient"}"#), (3, 1000));
    }
}
