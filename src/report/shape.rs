//! The shape of a scenario's run (`crate::metrics::shape`), derived from
//! the scenario itself (its `scenario.resolved.yaml`): `plot` and `merge`
//! check the tables they read against it (`super::table_check`), as `run`
//! checks the tables it wrote against the shape the runner reports.

pub use crate::metrics::shape::{RunShape, VariantShape};
use crate::scenario::{self, Scenario, ScenarioErrors};

impl RunShape {
    /// The shape of a valid scenario's run.
    pub fn of(s: &Scenario) -> Result<RunShape, ScenarioErrors> {
        Ok(RunShape::of_expanded(&scenario::expand_all(s)?, s))
    }

    /// The shape of the run of `s`, whose variants are `expanded`
    /// (`scenario::expand_all(s)`).
    pub fn of_expanded(expanded: &[scenario::Expanded], s: &Scenario) -> RunShape {
        RunShape::new(
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
            s.replicates,
            s.seed,
        )
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
    }
}
