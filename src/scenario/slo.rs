//! The scenario's `slo` section: what "good" means for the service under
//! review (README, "Service-level objectives"), its validation, and the
//! objectives the metrics judge every run against
//! (`metrics::slo::Objectives`). The SLO is the scenario's, not a
//! variant's: every variant and sweep point is judged against the same
//! one, so `variants[].set` and `sweep` may not change it (`--set` may).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::Scenario;
use super::units::Duration;
use super::validate::Checker;
use crate::engine::NS_PER_S;
use crate::metrics::slo::Objectives;

/// What "good" means: every objective set must hold in a run for it to
/// pass (`slo_pass`); a variant passes when all its replicates do.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// The least success rate outside the incident windows and the
    /// warm-up after them (`success_rate_outside_incidents`), a fraction
    /// in (0, 1], such as 0.999.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_rate: Option<f64>,
    /// The most p99 latency outside the incident windows
    /// (`latency_p99_outside_ms`), such as 800ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p99: Option<Duration>,
    /// The most peak load ÷ capacity once the incident has ended
    /// (`peak_load_ratio_after`), such as 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_load_after: Option<f64>,
    /// The longest time to recover after the incident (`recovery_time_s`;
    /// a run that never recovers misses it), such as 60s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_within: Option<Duration>,
}

impl Slo {
    /// The objectives the metrics judge runs against.
    pub fn objectives(&self) -> Objectives {
        Objectives {
            success_rate: self.success_rate,
            latency_p99_ms: self.latency_p99.map(|d| d.ns() as f64 / 1e6),
            peak_load_after: self.peak_load_after,
            recovery_within_s: self
                .recovery_within
                .map(|d| d.ns() as f64 / NS_PER_S as f64),
        }
    }
}

/// The objectives of a scenario's SLO, if it has one.
pub fn objectives(s: &Scenario) -> Option<Objectives> {
    s.slo.as_ref().map(Slo::objectives)
}

/// Whether a `set` or sweep path of a variant reaches into the SLO.
pub fn is_slo_path(path: &str) -> bool {
    path == "slo" || path.starts_with("slo.")
}

impl Checker {
    /// The `slo` section: at least one objective, each in its range; not
    /// with the OCC workload (it has no dependency or incident to judge).
    pub(super) fn slo(&mut self, s: &Scenario) {
        let Some(slo) = &s.slo else {
            return;
        };
        if s.occ.is_some() {
            self.push(
                "slo",
                "an SLO judges clients calling a dependency through incidents; the occ workload has neither: remove `slo` or `occ`",
            );
            return;
        }
        if slo.objectives().is_empty() {
            self.push(
                "slo",
                "slo sets no objective; expected at least one of success_rate, latency_p99, peak_load_after, recovery_within",
            );
        }
        if let Some(v) = slo.success_rate {
            self.fraction(v, "slo.success_rate", "(0, 1]", |v| v > 0.0 && v <= 1.0);
        }
        if let Some(d) = slo.latency_p99 {
            self.positive(d, "slo.latency_p99", "latency_p99");
        }
        if let Some(v) = slo.peak_load_after
            && self.finite_in(v, "slo.peak_load_after", "a ratio > 0")
        {
            self.check(v > 0.0, "slo.peak_load_after", || {
                format!("peak_load_after is {v}; expected a ratio > 0 (1.0: exactly the capacity)")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::FULL;
    use crate::scenario::{load_str, validate};

    fn issues(slo: &str) -> Vec<(String, String)> {
        let text = format!("{FULL}\nslo: {slo}\n");
        let s: Scenario = match load_str(&text, "t.yaml") {
            Ok(s) => s,
            Err(e) => {
                return e
                    .0
                    .iter()
                    .map(|e| (e.path.clone().unwrap_or_default(), e.to_string()))
                    .collect();
            }
        };
        validate(&s)
            .into_iter()
            .map(|i| (i.path, i.message))
            .collect()
    }

    #[test]
    fn a_full_slo_is_valid_and_converts_to_the_metrics_units() {
        assert!(
            issues("{ success_rate: 0.999, latency_p99: 800ms, peak_load_after: 1.2, recovery_within: 1m }")
                .is_empty()
        );
        let s = load_str(
            &format!("{FULL}\nslo: {{ latency_p99: 800ms, recovery_within: 1m30s }}\n"),
            "t.yaml",
        )
        .unwrap();
        let o = objectives(&s).unwrap();
        assert_eq!(o.latency_p99_ms, Some(800.0));
        assert_eq!(o.recovery_within_s, Some(90.0));
        assert_eq!((o.success_rate, o.peak_load_after), (None, None));
    }

    #[test]
    fn bad_objectives_name_their_field() {
        let paths =
            |slo: &str| -> Vec<String> { issues(slo).into_iter().map(|(p, _)| p).collect() };
        assert_eq!(paths("{}"), ["slo"]);
        assert_eq!(paths("{ success_rate: 1.5 }"), ["slo.success_rate"]);
        assert_eq!(paths("{ success_rate: 0 }"), ["slo.success_rate"]);
        assert_eq!(paths("{ latency_p99: 0s }"), ["slo.latency_p99"]);
        assert_eq!(paths("{ peak_load_after: -1 }"), ["slo.peak_load_after"]);
        assert_eq!(
            paths("{ success_rate: 2, peak_load_after: 0 }"),
            ["slo.success_rate", "slo.peak_load_after"]
        );
        // Unknown fields and wrong types, as everywhere.
        let unknown = issues("{ succes_rate: 0.9 }");
        assert_eq!(unknown[0].0, "slo.succes_rate");
        assert!(
            unknown[0].1.contains("did you mean `success_rate`"),
            "{unknown:?}"
        );
        assert_eq!(issues("{ latency_p99: 800 }")[0].0, "slo.latency_p99");
    }

    #[test]
    fn slo_paths() {
        assert!(is_slo_path("slo"));
        assert!(is_slo_path("slo.success_rate"));
        assert!(!is_slo_path("slow.x"));
        assert!(!is_slo_path("layers.slo"));
    }
}
