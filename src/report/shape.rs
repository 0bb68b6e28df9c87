//! What the tables of a run must hold, from its scenario (its
//! `scenario.resolved.yaml`): the variants in order, each with its bucket
//! width, its rows of `timeseries.csv` per run and its swept values; the
//! replicates; and the `sweep.<path>` columns. `plot`, `merge` and `run`
//! check the tables they read back against it (`super::table_check`).

use crate::metrics::columns::format_float;
use crate::metrics::recorder::MAX_BUCKETS;
use crate::runner::VariantPlan;
use crate::scenario::{self, Scenario, ScenarioErrors};

/// One variant (or sweep point) of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantShape {
    pub name: String,
    /// The width of its time buckets, in nanoseconds (at least 1).
    pub bucket_ns: u64,
    /// Rows of `timeseries.csv` per run: its buckets; `None` for the OCC
    /// workload, whose runs last until the last client is done (at least
    /// one row, at most `MAX_BUCKETS`).
    pub rows: Option<u64>,
    /// (swept path, value as written) of each swept field.
    pub params: Vec<(String, String)>,
}

impl VariantShape {
    /// The `t_s` cell of its `j`-th bucket, as stormsim writes it.
    pub fn t_text(&self, j: u64) -> String {
        format_float(j.saturating_mul(self.bucket_ns) as f64 / 1e9)
    }

    /// The most rows one of its runs may have.
    pub fn max_rows(&self) -> u64 {
        self.rows.unwrap_or(MAX_BUCKETS as u64)
    }

    /// Its value of the swept `path` ("" when it does not sweep it).
    pub fn param(&self, path: &str) -> &str {
        self.params
            .iter()
            .find(|(p, _)| p == path)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Every run of a scenario, as the tables list them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunShape {
    pub variants: Vec<VariantShape>,
    pub replicates: u32,
    /// The scenario's seed, from which each replicate's comes
    /// (`crate::runner::replicate_seed`).
    pub seed: u64,
    /// The swept paths, in the order of the `sweep.<path>` columns (first
    /// appearance over the variants).
    pub params: Vec<String>,
}

impl RunShape {
    /// The shape of a valid scenario's run.
    pub fn of(s: &Scenario) -> Result<RunShape, ScenarioErrors> {
        Ok(RunShape::of_expanded(&scenario::expand_all(s)?, s))
    }

    /// The shape of the run of `s`, whose variants are `expanded`
    /// (`scenario::expand_all(s)`).
    pub fn of_expanded(expanded: &[scenario::Expanded], s: &Scenario) -> RunShape {
        RunShape::from_variants(
            expanded.iter().map(|e| VariantShape {
                bucket_ns: e.scenario.bucket().ns().max(1),
                rows: e
                    .scenario
                    .occ
                    .is_none()
                    .then(|| scenario::validate::buckets(&e.scenario)),
                name: e.name.clone(),
                params: e.params.clone(),
            }),
            s,
        )
    }

    /// The shape of the run of `s` planned as `plans` (`runner::plan(s)`),
    /// without expanding its variants again.
    pub fn of_plans(plans: &[VariantPlan], s: &Scenario) -> RunShape {
        RunShape::from_variants(
            plans.iter().map(|p| {
                let bucket = p.config.bucket.max(1);
                VariantShape {
                    bucket_ns: bucket,
                    rows: p
                        .occ
                        .is_none()
                        .then(|| p.config.duration.div_ceil(bucket).max(1)),
                    name: p.name.clone(),
                    params: p.params.clone(),
                }
            }),
            s,
        )
    }

    fn from_variants(variants: impl Iterator<Item = VariantShape>, s: &Scenario) -> RunShape {
        let mut params: Vec<String> = Vec::new();
        let variants = variants
            .inspect(|v| {
                for (p, _) in &v.params {
                    if !params.contains(p) {
                        params.push(p.clone());
                    }
                }
            })
            .collect();
        RunShape {
            variants,
            replicates: s.replicates,
            seed: s.seed,
            params,
        }
    }

    /// The number of runs: variants × replicates.
    pub fn items(&self) -> usize {
        self.variants.len() * self.replicates as usize
    }

    /// Run `k`'s variant index and replicate.
    pub fn item(&self, k: usize) -> (usize, u32) {
        let r = self.replicates.max(1) as usize;
        (k / r, (k % r) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_gives_its_points_columns_and_rows() {
        let s = scenario::load_str(
            "name: s\nduration: 5s\nbucket: 2s\nreplicates: 2\n\
             clients: { arrival: { kind: poisson, rate: 10/s } }\n\
             layers: [{ name: api, timeout: 1s, retry: { max_attempts: 2 } }]\n\
             dependency: { concurrency: 2, service_time: { dist: constant, value: 10ms } }\n\
             sweep: { dependency.concurrency: [1, 2] }\n",
            "s.yaml",
        )
        .unwrap();
        let shape = RunShape::of(&s).unwrap();
        assert_eq!(shape.items(), 4);
        assert_eq!(shape.item(3), (1, 1));
        assert_eq!(shape.params, ["dependency.concurrency"]);
        let v = &shape.variants[1];
        assert_eq!(v.rows, Some(3), "5 s in buckets of 2 s");
        assert_eq!(v.param("dependency.concurrency"), "2");
        assert_eq!(v.param("other"), "");
        assert_eq!((v.t_text(0), v.t_text(2)), ("0".into(), "4".into()));
        // The same from the run's plans.
        let plans = crate::runner::plan(&s).unwrap();
        assert_eq!(RunShape::of_plans(&plans, &s), shape);
    }

    #[test]
    fn variants_of_their_own_length_and_bucket_and_occ_runs() {
        let s = scenario::load_str(
            "name: s\nduration: 5s\nbucket: 1s\n\
             clients: { arrival: { kind: poisson, rate: 10/s } }\n\
             layers: [{ name: api, timeout: 1s, retry: { max_attempts: 2 } }]\n\
             dependency: { concurrency: 2, service_time: { dist: constant, value: 10ms } }\n\
             variants:\n\
             - { name: long, set: { duration: 7s, bucket: 500ms } }\n\
             - { name: base, set: {} }\n",
            "s.yaml",
        )
        .unwrap();
        let shape = RunShape::of(&s).unwrap();
        assert_eq!(shape.variants[0].rows, Some(14));
        assert_eq!(shape.variants[0].bucket_ns, 500_000_000);
        assert_eq!(shape.variants[1].rows, Some(5));
        let plans = crate::runner::plan(&s).unwrap();
        assert_eq!(RunShape::of_plans(&plans, &s), shape);
        let occ = scenario::load_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scenarios/aws-jitter-blog.yaml"
            ))
            .unwrap(),
            "aws.yaml",
        )
        .unwrap();
        let shape = RunShape::of(&occ).unwrap();
        assert!(shape.variants.iter().all(|v| v.rows.is_none()));
        let plans = crate::runner::plan(&occ).unwrap();
        assert_eq!(RunShape::of_plans(&plans, &occ), shape);
    }
}
