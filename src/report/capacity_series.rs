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

use crate::engine::Nanos;
use crate::model::capacity;
use crate::model::server::ServiceConfig;
use crate::scenario::{self, Scenario};

/// The most variants whose capacity is modelled: a sweep past it keeps
/// the nominal lines (its charts are the sweep charts).
pub const MAX_VARIANTS: usize = 1_000;

/// What a bucket's capacity of one service in one variant is computed
/// from.
#[derive(Clone, Debug)]
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
    /// The service's incidents, when they take capacity away (`None`:
    /// always whole).
    pub incidents: Option<Incidents>,
    /// The variant's bucket width (s).
    pub bucket_s: f64,
}

/// The incident schedule of a service whose incidents take capacity
/// away, over the buckets of its variant's runs. A bucket's mean factor
/// (`model::capacity::mean_factor`) is computed when a row of the bucket
/// asks for it, not kept for every bucket: a sweep of 1 000 variants of
/// 100 000 buckets would have kept 800 MB of factors per such service.
#[derive(Clone, Debug)]
pub struct Incidents {
    /// The service (its incidents, warm-up and replicas are what count).
    service: ServiceConfig,
    bucket: Nanos,
    duration: Nanos,
}

impl Incidents {
    /// The schedule of `service` in runs of `duration` in buckets of
    /// `bucket`; `None` when its capacity is always whole.
    pub fn of(service: &ServiceConfig, bucket: Nanos, duration: Nanos) -> Option<Incidents> {
        (capacity::varies(service) && bucket > 0).then(|| Incidents {
            service: service.clone(),
            bucket,
            duration,
        })
    }

    /// The mean factor of bucket `b` (1 past the run's end): element `b`
    /// of `model::capacity::per_bucket`, the same number.
    pub fn factor(&self, b: usize) -> f64 {
        let n = self.duration.div_ceil(self.bucket).max(1);
        match u64::try_from(b) {
            Ok(b) if b < n => {
                let start = b * self.bucket;
                capacity::mean_factor(
                    &self.service,
                    start,
                    (start + self.bucket).min(self.duration),
                )
            }
            _ => 1.0,
        }
    }
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
        let factor = self.incidents.as_ref().map_or(1.0, |i| i.factor(b));
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
#[derive(Clone, Debug, Default)]
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
                let incidents = Incidents::of(svc, cfg.bucket, cfg.duration);
                let changes =
                    svc.autoscale.is_some() || svc.adaptive.is_some() || incidents.is_some();
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
                        incidents,
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
    use crate::model::server::{Effect, Incident};
    use crate::model::service::ServiceDist;

    fn model(autoscaled: bool, adaptive: bool, incidents: Option<Incidents>) -> ServiceCapacity {
        ServiceCapacity {
            per_replica: 500.0,
            workers: 10.0,
            replicas: 4,
            autoscaled,
            adaptive,
            incidents,
            bucket_s: 5.0,
        }
    }

    const S: Nanos = 1_000_000_000;

    #[test]
    fn a_bucket_s_capacity_multiplies_replicas_incidents_and_the_limit() {
        // A fixed fleet of 4 in a brownout to 30% in its third bucket
        // (of three: 15 s in buckets of 5 s).
        let mut db = ServiceConfig::leaf("db", 10, ServiceDist::Constant(S / 50), 0);
        db.incidents.push(Incident {
            start: 10 * S,
            end: 15 * S,
            effect: Effect::Brownout { capacity: 0.3 },
            replica: None,
        });
        let m = model(false, false, Incidents::of(&db, 5 * S, 15 * S));
        assert_eq!(m.at(0.0, Some(1.0), None), Some(2000.0));
        assert_eq!(m.at(10.0, Some(1.0), None), Some(600.0));
        assert_eq!(
            m.at(15.0, None, None),
            Some(2000.0),
            "past the run's buckets: whole"
        );
        // Autoscaled: the serving replicas of the row.
        let m = model(true, false, None);
        assert_eq!(m.at(0.0, Some(7.0), None), Some(3500.0));
        assert_eq!(m.at(0.0, None, None), None);
        // An adaptive limit of 4 of 10 workers: 40%; above the workers:
        // whole.
        let m = model(false, true, None);
        assert_eq!(m.at(0.0, None, Some(4.0)), Some(800.0));
        assert_eq!(m.at(0.0, None, Some(25.0)), Some(2000.0));
        assert_eq!(m.at(0.0, None, None), None);
    }

    /// A bucket's factor, computed when asked, is the one the factors of
    /// every bucket (`model::capacity::per_bucket`, which the models kept
    /// before) give, bit for bit.
    #[test]
    fn a_bucket_s_factor_is_computed_when_asked_not_kept_per_bucket() {
        let mut db = ServiceConfig::leaf("db", 4, ServiceDist::Constant(S / 100), 0);
        db.replicas = 3;
        db.warmup = 7 * S / 2;
        db.incidents = vec![
            Incident {
                start: 3 * S / 2,
                end: 4 * S,
                effect: Effect::Down,
                replica: Some(1),
            },
            Incident {
                start: 5 * S,
                end: 9 * S,
                effect: Effect::Brownout { capacity: 0.4 },
                replica: None,
            },
        ];
        let (bucket, duration) = (S / 3, 13 * S + 17);
        let every = capacity::per_bucket(&db, bucket, duration);
        assert_eq!(every.len(), 40);
        let i = Incidents::of(&db, bucket, duration).unwrap();
        for (b, f) in every.iter().enumerate() {
            assert_eq!(i.factor(b).to_bits(), f.to_bits(), "bucket {b}");
        }
        assert!(every.iter().any(|&f| f < 1.0 && f > 0.0));
        assert_eq!(i.factor(40), 1.0);
        // No incident that takes capacity: no schedule.
        db.incidents.truncate(0);
        assert!(Incidents::of(&db, bucket, duration).is_none());
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
        let factors = (0..5).map(|b| db.incidents.as_ref().unwrap().factor(b));
        assert_eq!(factors.collect::<Vec<_>>(), [1.0, 0.5, 1.0, 1.0, 1.0]);
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
