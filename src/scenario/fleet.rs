//! Fleets that change under load (DESIGN-v2 §2), as the scenario format
//! writes them on a service: `slowdown` (its work stretches with the
//! fraction of its workers busy) and `autoscale` (the Kubernetes HPA rule,
//! with a provisioning delay) — and their validation and translation into
//! the model's types (`model::slowdown`, `model::autoscale`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::units::Duration;
use super::validate::Checker;
use super::validate_graph::MAX_REPLICAS;
use crate::model::autoscale::AutoscaleConfig;
use crate::model::slowdown::Slowdown as ModelSlowdown;

/// The curve of a `slowdown`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlowdownKind {
    /// × (1 + factor·u).
    Linear,
    /// × (1 + factor·u^exponent).
    Polynomial,
    /// × e^(factor·u).
    Exponential,
}

/// `slowdown: { kind: linear, factor: 2 }` on a service: its service time
/// is stretched by a curve of u, the fraction of the replica's workers busy
/// when the work starts (this request's included).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slowdown {
    pub kind: SlowdownKind,
    /// How much slower a busy replica works (0: not at all).
    pub factor: f64,
    /// `polynomial` only: the power of u.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exponent: Option<f64>,
}

/// The largest stretch a full replica may reach (a bound that keeps
/// service times finite and the run's memory bounded).
pub const MAX_STRETCH: f64 = 1000.0;

/// The shortest `autoscale.interval` accepted, in ns (1 ms).
pub const MIN_INTERVAL: u64 = 1_000_000;

impl Slowdown {
    /// The model's curve (validated input assumed; a missing exponent is 1).
    pub fn to_model(&self) -> ModelSlowdown {
        match self.kind {
            SlowdownKind::Linear => ModelSlowdown::Linear {
                factor: self.factor,
            },
            SlowdownKind::Polynomial => ModelSlowdown::Polynomial {
                factor: self.factor,
                exponent: self.exponent.unwrap_or(1.0),
            },
            SlowdownKind::Exponential => ModelSlowdown::Exponential {
                factor: self.factor,
            },
        }
    }
}

impl Checker {
    /// A service's `slowdown` at `path` (its workers: `concurrency`).
    pub(super) fn slowdown(&mut self, sd: &Slowdown, path: &str, concurrency: Option<u32>) {
        self.check(concurrency.is_some(), path, || {
            "slowdown stretches work by the fraction of busy workers, and this service has unlimited workers; expected concurrency on the service, or no slowdown".to_string()
        });
        let fp = format!("{path}.factor");
        if self.finite_in(sd.factor, &fp, "a number >= 0") {
            self.check(sd.factor >= 0.0, &fp, || {
                format!("factor is {}; expected a number >= 0", sd.factor)
            });
        }
        let ep = format!("{path}.exponent");
        match (sd.kind, sd.exponent) {
            (SlowdownKind::Polynomial, None) => self.push(
                path,
                "a polynomial slowdown needs its exponent; expected for example slowdown: { kind: polynomial, factor: 2, exponent: 3 }",
            ),
            (SlowdownKind::Polynomial, Some(k)) => {
                if self.finite_in(k, &ep, "a number > 0") {
                    self.check(k > 0.0, &ep, || {
                        format!("exponent is {k}; expected a number > 0")
                    });
                }
            }
            (kind, Some(_)) => self.push(
                &ep,
                format!(
                    "exponent applies only to a polynomial slowdown, not {}; remove it",
                    kind_name(kind)
                ),
            ),
            (_, None) => {}
        }
        let full = sd.to_model().at_full_load();
        if sd.factor.is_finite() && sd.factor >= 0.0 {
            self.check(full <= MAX_STRETCH, &fp, || {
                format!(
                    "a full replica would work {full:.3e} times slower; expected a stretch of at most {MAX_STRETCH} at full load"
                )
            });
        }
    }
}

fn kind_name(k: SlowdownKind) -> &'static str {
    match k {
        SlowdownKind::Linear => "linear",
        SlowdownKind::Polynomial => "polynomial",
        SlowdownKind::Exponential => "exponential",
    }
}

/// `autoscale` on a service: the Kubernetes HPA rule with its defaults.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Autoscale {
    /// The fraction of busy workers aimed at, in (0, 1] (the HPA's
    /// `averageUtilization` ÷ 100).
    pub target_utilization: f64,
    /// Fewest replicas (`minReplicas`, default 1).
    #[serde(default = "one")]
    pub min: u32,
    /// Most replicas (`maxReplicas`, required).
    pub max: u32,
    /// Time between decisions (the HPA's sync period, 15 s; at least 1 ms).
    #[serde(default = "default_interval")]
    pub interval: Duration,
    /// From the decision that asks for a replica until it serves (image
    /// pull, start-up, readiness).
    #[serde(default = "default_provision")]
    pub provision: Duration,
    /// The scale-down stabilization window (the HPA's
    /// `stabilizationWindowSeconds` for scale-down, 300 s).
    #[serde(default = "default_scale_in_delay")]
    pub scale_in_delay: Duration,
}

fn one() -> u32 {
    1
}

fn default_interval() -> Duration {
    Duration::from_secs(15)
}

/// 60 s: the start-up delay of brownout-lb-simulator's autoscaler, within
/// the "tens of seconds to minutes" that image pull, start-up and
/// readiness take.
fn default_provision() -> Duration {
    Duration::from_secs(60)
}

fn default_scale_in_delay() -> Duration {
    Duration::from_secs(300)
}

impl Autoscale {
    /// The model's settings; `replicas` (the service's) is where the fleet
    /// starts, clamped into [min, max].
    pub fn to_model(&self, replicas: u32) -> AutoscaleConfig {
        let max = self.max.max(1);
        let min = self.min.clamp(1, max);
        AutoscaleConfig {
            target: self.target_utilization,
            min,
            max,
            initial: replicas.clamp(min, max),
            interval: self.interval.ns().max(1),
            provision: self.provision.ns(),
            scale_in_delay: self.scale_in_delay.ns(),
        }
    }
}

impl Checker {
    /// A service's `autoscale` at `path`.
    pub(super) fn autoscale(&mut self, a: &Autoscale, path: &str, concurrency: Option<u32>) {
        self.check(concurrency.is_some(), path, || {
            "autoscale follows the fraction of busy workers, and this service has unlimited workers; expected concurrency on the service, or no autoscale".to_string()
        });
        self.fraction(
            a.target_utilization,
            &format!("{path}.target_utilization"),
            "(0, 1]",
            |v| v > 0.0 && v <= 1.0,
        );
        let max_ok = self.check(
            (1..=MAX_REPLICAS).contains(&a.max),
            &format!("{path}.max"),
            || format!("max is {}; expected 1 to {MAX_REPLICAS}", a.max),
        );
        self.check(a.min >= 1, &format!("{path}.min"), || {
            "min is 0; expected at least 1 replica (a service scaled to zero answers nothing)"
                .to_string()
        });
        if max_ok {
            self.check(a.min <= a.max, &format!("{path}.min"), || {
                format!(
                    "min ({}) is above max ({}); expected min <= max",
                    a.min, a.max
                )
            });
        }
        // Each decision is an event: an interval of nanoseconds would
        // spend the run's events on decisions. Kubernetes' HPA decides
        // every 15 s by default (--horizontal-pod-autoscaler-sync-period).
        self.check(
            a.interval.ns() >= MIN_INTERVAL,
            &format!("{path}.interval"),
            || {
                format!(
                    "interval is {}; expected at least 1ms (an autoscaler decides every few seconds: Kubernetes' HPA every 15s by default)",
                    a.interval
                )
            },
        );
    }
}

/// An autoscaler interval below this is warned about (1 s): real
/// autoscalers decide every few seconds (Kubernetes' HPA every 15 s).
pub const WARN_INTERVAL_NS: u64 = 1_000_000_000;
/// A closed-loop think time (its mean) below this is warned about (1 ms).
pub const WARN_THINK_NS: f64 = 1_000_000.0;

/// Warnings on timers so short that a run grows enormous without any
/// field being out of range: an autoscaler deciding every millisecond
/// (duration / interval decisions, each an event), closed-loop clients
/// thinking for nanoseconds (each client's next request follows its last
/// at once, and one answered at once, shed say, comes back at once: up to
/// clients × duration / think requests). Each names its field and the
/// estimate, and says when it is beyond `limits.max_events` (the run
/// would stop at that guard rail). Also an analysis service no call
/// reaches, whose figures would describe an idle service.
pub fn scale_warnings(s: &super::types::Scenario) -> Vec<String> {
    let mut out = Vec::new();
    if s.occ.is_some() {
        return out;
    }
    let run_ns = s.duration.ns() as f64;
    let limit = s.limits.max_events as f64;
    let over = |events: f64| {
        if events > limit {
            format!(
                ", over limits.max_events ({}): runs would stop at that guard rail",
                s.limits.max_events
            )
        } else {
            String::new()
        }
    };
    if s.is_graph() {
        let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
        for (svc, label) in s
            .services
            .iter()
            .zip(super::locate::item_labels("services", &names))
        {
            let Some(a) = &svc.autoscale else { continue };
            let ns = a.interval.ns().max(1);
            if ns >= WARN_INTERVAL_NS {
                continue;
            }
            let decisions = run_ns / ns as f64;
            out.push(format!(
                "{label}.autoscale.interval: an autoscaler that decides every {} makes about {decisions:.0} decisions in a run of {} (duration / interval), each an event of the run{}, and scales on noise rather than load; real autoscalers decide every few seconds (Kubernetes' HPA every 15s): lengthen the interval",
                a.interval,
                s.duration,
                over(decisions)
            ));
        }
    }
    if let Some(i) = s.focus_service()
        && !s.reached_from_clients(i)
    {
        out.push(format!(
            "analysis.service: `{}` is not reached from the clients' call, so it receives no requests: {}; call it from a service the clients reach, or name another in analysis.service",
            s.services[i].name,
            super::types::Scenario::IDLE_ANALYSIS
        ));
    }
    let m = super::build::to_model(s);
    if let Some(c) = m.closed {
        let think = c.think.mean();
        if think < WARN_THINK_NS {
            let requests = f64::from(c.clients) * run_ns / think.max(1.0);
            out.push(format!(
                "clients.arrival.think: a think time of {} (its mean) sends {} next request right after its last one ends, and a request answered at once (shed by a full queue, refused by a breaker) comes back at once: up to about {requests:.1e} requests in a run (clients × duration / think){}; real users think for a second or more: lengthen it",
                Duration(think.max(1.0) as u64),
                if c.clients == 1 {
                    "the 1 client's".to_string()
                } else {
                    format!("each of the {} clients'", c.clients)
                },
                over(requests * 2.0)
            ));
        }
    }
    out
}

/// [`scale_warnings`] of `s` and of each of its variants and sweep points
/// that changes what they judge (at most [`MAX_RUN_WARNINGS`] more, each
/// `in variant `NAME`: ...`), none twice.
pub fn scale_warnings_all(s: &super::types::Scenario) -> Vec<String> {
    let mut out = scale_warnings(s);
    let touches = |k: &str| {
        [
            "autoscale",
            "think",
            "arrival",
            "clients",
            "duration",
            "services",
            "occ",
        ]
        .iter()
        .any(|w| k.contains(w))
    };
    let varies = s.sweep.keys().any(|k| touches(k))
        || s.variants.iter().any(|v| v.set.keys().any(|k| touches(k)));
    if !varies {
        return out;
    }
    let Ok(runs) = super::variants::expand_all(s) else {
        return out;
    };
    let mut more = 0;
    for r in &runs {
        for w in scale_warnings(&r.scenario) {
            if out
                .iter()
                .any(|o| *o == w || o.ends_with(&format!(": {w}")))
            {
                continue;
            }
            if more == MAX_RUN_WARNINGS {
                return out;
            }
            more += 1;
            out.push(format!("in variant `{}`: {w}", r.name));
        }
    }
    out
}

/// The most warnings [`scale_warnings_all`] adds for variants.
pub const MAX_RUN_WARNINGS: usize = 10;
