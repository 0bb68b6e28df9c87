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
