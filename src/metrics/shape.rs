//! What the tables of a run must hold: the variants in order, each with
//! its bucket width, its rows of `timeseries.csv` per run and its swept
//! values; the replicates; and the `sweep.<path>` columns. The runner
//! describes the runs it made this way (run metadata), the report checks
//! the tables it reads back against it, and the scenario side derives it
//! from a scenario file (`crate::report::shape`).

use crate::metrics::columns::format_float;
use crate::metrics::recorder::MAX_BUCKETS;

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
    /// (`crate::metrics::run::replicate_seed`).
    pub seed: u64,
    /// The swept paths, in the order of the `sweep.<path>` columns (first
    /// appearance over the variants).
    pub params: Vec<String>,
}

impl RunShape {
    /// The shape of `variants` run `replicates` times from the scenario
    /// seed `seed`.
    pub fn new(
        variants: impl Iterator<Item = VariantShape>,
        replicates: u32,
        seed: u64,
    ) -> RunShape {
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
            replicates,
            seed,
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

    fn variant(name: &str, rows: Option<u64>, params: &[(&str, &str)]) -> VariantShape {
        VariantShape {
            name: name.into(),
            bucket_ns: 250_000_000,
            rows,
            params: params
                .iter()
                .map(|&(p, v)| (p.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_bucket_time_is_written_as_the_runner_writes_t_s() {
        let v = variant("a", Some(8), &[]);
        assert_eq!(v.t_text(0), "0");
        assert_eq!(v.t_text(1), "0.25");
        assert_eq!(v.t_text(6), "1.5");
        // Far past the end of time it saturates instead of wrapping.
        assert_eq!(v.t_text(u64::MAX), format_float(u64::MAX as f64 / 1e9));
    }

    #[test]
    fn a_run_of_unknown_length_may_fill_every_bucket() {
        assert_eq!(variant("a", Some(8), &[]).max_rows(), 8);
        assert_eq!(variant("occ", None, &[]).max_rows(), MAX_BUCKETS as u64);
    }

    #[test]
    fn swept_columns_follow_first_appearance_and_unswept_cells_are_empty() {
        let a = variant("a", Some(1), &[("x", "1"), ("y", "2")]);
        let b = variant("b", Some(1), &[("z", "3"), ("x", "4")]);
        let shape = RunShape::new([a, b].into_iter(), 3, 42);
        assert_eq!(shape.params, ["x", "y", "z"]);
        assert_eq!((shape.replicates, shape.seed), (3, 42));
        assert_eq!(shape.variants[0].param("y"), "2");
        assert_eq!(shape.variants[1].param("x"), "4");
        assert_eq!(shape.variants[1].param("y"), "");
    }

    #[test]
    fn runs_are_numbered_variant_by_variant_then_replicate() {
        let shape = RunShape::new(
            [variant("a", Some(1), &[]), variant("b", Some(1), &[])].into_iter(),
            3,
            0,
        );
        assert_eq!(shape.items(), 6);
        let order: Vec<(usize, u32)> = (0..6).map(|k| shape.item(k)).collect();
        assert_eq!(order, [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
        // No replicates: no runs, and numbering does not divide by zero.
        let none = RunShape::new([variant("a", Some(1), &[])].into_iter(), 0, 0);
        assert_eq!(none.items(), 0);
        assert_eq!(none.item(2), (2, 0));
    }
}
