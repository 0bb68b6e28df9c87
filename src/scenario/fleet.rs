//! Fleets that change under load (DESIGN-v2 §2), as the scenario format
//! writes them on a service: `slowdown` (its work stretches with the
//! fraction of its workers busy) — and their validation and translation
//! into the model's types (`model::slowdown`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::validate::Checker;
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
        if self.finite(sd.factor, &fp) {
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
                if self.finite(k, &ep) {
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
