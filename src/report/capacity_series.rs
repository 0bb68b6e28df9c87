//! The capacity a service had in each time bucket, as the charts draw it
//! against the load: from the resolved scenario (each variant's services:
//! workers, mean service time, replicas, incidents) and the bucket's row
//! of `services_timeseries.csv` (the replicas serving, the adaptive
//! limit), not from any column written for the purpose.
//!
//! A bucket's capacity is what the service could complete per second in
//! it, at full use of what it had:
//!
//! `per replica capacity × replicas × incident factor × limit factor`
//!
//! - per replica capacity: workers ÷ mean service time (`capacity_per_s`
//!   of `services.csv` for one replica);
//! - replicas: an autoscaled service's replicas serving at the bucket's
//!   end (the `replicas` column: not those provisioning); a fixed fleet's
//!   replicas, whose outages the incident factor holds;
//! - incident factor: the mean over the bucket of the fraction of nominal
//!   capacity its incidents leave (0 while down or blackholed, a
//!   brownout's fraction, the warm-up ramp after them:
//!   `model::capacity::per_bucket`);
//! - limit factor: with an adaptive concurrency limit, the limit (the
//!   `concurrency_limit` column, the mean of the replicas' limits over the
//!   bucket) over the workers, at most 1: a replica that admits fewer
//!   requests than it has workers completes fewer per second.
//!
//! Only services whose capacity can change get a model (autoscaled, with
//! an adaptive limit, or with an incident that takes capacity away); the
//! others keep the one nominal line. A thread-per-request service whose
//! workers wait for its calls has a measured capacity (hold times), not a
//! nominal one: it keeps its measured line too. Slowdown under load is
//! not drawn: it follows the load, which the line is read against.

use std::collections::HashMap;

use crate::model::capacity;
use crate::scenario::{self, Scenario};

/// The most variants whose capacity is modelled: a sweep past it keeps
/// the nominal lines (its charts are the sweep charts).
pub const MAX_VARIANTS: usize = 1_000;

/// What a bucket's capacity of one service in one variant is computed
/// from.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceCapacity {
    /// Requests per second one replica completes at full capacity.
    pub per_replica: f64,
    /// Workers per replica.
    pub workers: f64,
    /// Replicas of a fixed fleet (an autoscaled service: its `max`).
    pub replicas: u32,
    /// The serving replicas come from the table.
    pub autoscaled: bool,
    /// The adaptive limit comes from the table.
    pub adaptive: bool,
    /// The mean incident factor of each bucket (empty: always whole).
    pub factors: Vec<f64>,
    /// The variant's bucket width (s).
    pub bucket_s: f64,
}

impl ServiceCapacity {
    /// The capacity per second in the bucket starting at `t_s`, given the
    /// row's serving replicas and adaptive limit; `None` when a figure it
    /// needs is missing.
    pub fn at(&self, t_s: f64, serving: Option<f64>, limit: Option<f64>) -> Option<f64> {
        let b = if self.bucket_s > 0.0 {
            (t_s / self.bucket_s).round().max(0.0) as usize
        } else {
            0
        };
        let factor = self.factors.get(b).copied().unwrap_or(1.0);
        let replicas = if self.autoscaled {
            serving?
        } else {
            f64::from(self.replicas)
        };
        let limited = if self.adaptive && self.workers > 0.0 {
            (limit? / self.workers).min(1.0)
        } else {
            1.0
        };
        Some(self.per_replica * replicas * factor * limited)
    }
}

/// The capacity models of a run: per variant (in `ChartData` order), the
/// services whose capacity can change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CapacityModels {
    /// `[variant]`: (service name, its model).
    per_variant: Vec<Vec<(String, ServiceCapacity)>>,
    /// `[variant]`: the focus service (the one whose arrivals are the
    /// `dependency_attempts` the `load` chart draws).
    focus: Vec<String>,
    /// `[variant]`: (service name, workers per replica) of every service
    /// with an adaptive limit (those whose capacity is measured
    /// included), for the `limits` chart.
    limited: Vec<Vec<(String, f64)>>,
}

impl CapacityModels {
    /// The models of a valid scenario's run; `index` maps a variant's
    /// name to its index (of `n`). `None` when no service's capacity can
    /// change, or the run has too many variants.
    pub fn of(s: &Scenario, index: &HashMap<String, usize>, n: usize) -> Option<CapacityModels> {
        // The run's variant count is known: a sweep past the cap is not
        // expanded at all.
        if s.occ.is_some() || n > MAX_VARIANTS {
            return None;
        }
        let expanded = scenario::expand_all(s).ok()?;
        if expanded.len() > MAX_VARIANTS {
            return None;
        }
        let mut out = CapacityModels {
            per_variant: vec![Vec::new(); n],
            focus: vec![String::new(); n],
            limited: vec![Vec::new(); n],
        };
        for e in &expanded {
            let Some(&v) = index.get(&e.name).filter(|&&v| v < n) else {
                continue;
            };
            let cfg = scenario::to_model(&e.scenario);
            let topology = &cfg.topology;
            out.focus[v] = topology.service(topology.focus()).name.clone();
            let bucket_s = cfg.bucket as f64 / 1e9;
            for svc in topology.services() {
                let holds = svc.hold_worker && svc.concurrency.is_some() && !svc.calls.is_empty();
                let (Some(total), Some(workers)) = (svc.capacity_per_sec(), svc.concurrency) else {
                    continue;
                };
                if svc.adaptive.is_some() {
                    out.limited[v].push((svc.name.clone(), f64::from(workers)));
                }
                let factors = capacity::per_bucket(svc, cfg.bucket, cfg.duration);
                let changes =
                    svc.autoscale.is_some() || svc.adaptive.is_some() || !factors.is_empty();
                if holds || !changes {
                    continue;
                }
                let replicas = svc.replicas.max(1);
                out.per_variant[v].push((
                    svc.name.clone(),
                    ServiceCapacity {
                        per_replica: total / f64::from(replicas),
                        workers: f64::from(workers),
                        replicas,
                        autoscaled: svc.autoscale.is_some(),
                        adaptive: svc.adaptive.is_some(),
                        factors,
                        bucket_s,
                    },
                ));
            }
        }
        let changes = out.per_variant.iter().any(|x| !x.is_empty());
        let limited = out.limited.iter().any(|x| !x.is_empty());
        (changes || limited).then_some(out)
    }

    /// The workers per replica of `service` in variant `v`, when it has an
    /// adaptive limit.
    pub fn limited_workers(&self, v: usize, service: &str) -> Option<f64> {
        self.limited
            .get(v)?
            .iter()
            .find(|(name, _)| name == service)
            .map(|(_, w)| *w)
    }

    /// The model of `service` in variant `v`, if its capacity can change.
    pub fn get(&self, v: usize, service: &str) -> Option<&ServiceCapacity> {
        self.per_variant
            .get(v)?
            .iter()
            .find(|(name, _)| name == service)
            .map(|(_, m)| m)
    }

    /// The focus service of variant `v` (the `load` chart's dependency).
    pub fn focus(&self, v: usize) -> Option<&str> {
        self.focus
            .get(v)
            .map(String::as_str)
            .filter(|f| !f.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(autoscaled: bool, adaptive: bool, factors: Vec<f64>) -> ServiceCapacity {
        ServiceCapacity {
            per_replica: 500.0,
            workers: 10.0,
            replicas: 4,
            autoscaled,
            adaptive,
            factors,
            bucket_s: 5.0,
        }
    }

    #[test]
    fn a_bucket_s_capacity_multiplies_replicas_incidents_and_the_limit() {
        // A fixed fleet of 4 in a brownout to 30% in its third bucket.
        let m = model(false, false, vec![1.0, 1.0, 0.3]);
        assert_eq!(m.at(0.0, Some(1.0), None), Some(2000.0));
        assert_eq!(m.at(10.0, Some(1.0), None), Some(600.0));
        assert_eq!(
            m.at(15.0, None, None),
            Some(2000.0),
            "past the factors: whole"
        );
        // Autoscaled: the serving replicas of the row.
        let m = model(true, false, vec![]);
        assert_eq!(m.at(0.0, Some(7.0), None), Some(3500.0));
        assert_eq!(m.at(0.0, None, None), None);
        // An adaptive limit of 4 of 10 workers: 40%; above the workers:
        // whole.
        let m = model(false, true, vec![]);
        assert_eq!(m.at(0.0, None, Some(4.0)), Some(800.0));
        assert_eq!(m.at(0.0, None, Some(25.0)), Some(2000.0));
        assert_eq!(m.at(0.0, None, None), None);
    }

    #[test]
    fn only_services_whose_capacity_changes_are_modelled() {
        let yaml = "name: s\nduration: 20s\nbucket: 5s\n\
             clients: { arrival: { kind: poisson, rate: 10/s }, calls: { to: api, timeout: 1s } }\n\
             services:\n\
             - { name: api, replicas: 2, concurrency: 4, service_time: { dist: constant, value: 10ms }, calls: [{ to: db, timeout: 1s }], hold_worker: false }\n\
             - name: db\n  concurrency: 2\n  service_time: { dist: constant, value: 20ms }\n  incidents: [{ kind: brownout, start: 5s, end: 10s, capacity: 0.5 }]\n\
             variants:\n\
             - { name: a, set: {} }\n\
             - { name: b, set: { services.db.incidents: [] } }\n";
        let s = scenario::load_str(yaml, "s.yaml").unwrap();
        let index: HashMap<String, usize> = [("a".to_string(), 0), ("b".to_string(), 1)].into();
        let m = CapacityModels::of(&s, &index, 2).unwrap();
        // The focus: the service of the summary's dependency columns.
        assert_eq!(m.focus(0), Some("db"));
        assert!(m.get(0, "api").is_none(), "nothing changes the api's");
        let db = m.get(0, "db").unwrap();
        assert_eq!(db.factors, [1.0, 0.5, 1.0, 1.0]);
        assert_eq!(db.at(5.0, None, None), Some(50.0));
        assert!(m.get(1, "db").is_none(), "variant b has no incident");
        let none = scenario::load_str(
            &yaml.replace(
                "incidents: [{ kind: brownout, start: 5s, end: 10s, capacity: 0.5 }]",
                "incidents: []",
            ),
            "s.yaml",
        )
        .unwrap();
        assert!(CapacityModels::of(&none, &index, 2).is_none());
    }
}
