//! Deterministic shards of a run, for sweeps spread over a cluster
//! (Kubernetes Indexed Jobs, Slurm job arrays), and their merge.
//!
//! The work of a run is its items: item `k = variant_index × replicates +
//! replicate`, in the order `stormsim run` writes them. Shard `I` of `N`
//! runs exactly the items with `k mod N = I` (never chosen by timing), and
//! writes a shard folder:
//!
//! - `timeseries.csv` and `summary.csv`: its rows, byte for byte the rows
//!   the unsharded run writes for the same items (same columns: the
//!   per-layer and `sweep.` columns come from every variant of the
//!   scenario, not only the shard's);
//! - `summary.exact.csv`: the same summary cells, typed and at full
//!   precision (see [`encode_cell`]), from which `stormsim merge`
//!   aggregates `summary_by_variant.csv` exactly as an unsharded run does;
//! - `scenario.resolved.yaml` and `manifest.json` ([`Manifest`]).
//!
//! `stormsim merge` ([`merge`]) checks the manifests and the tables
//! ([`scan`]), and writes the same files as an unsharded run, charts and
//! report included, copying each run's rows from its shard ([`copy`])
//! rather than holding them.

pub mod copy;
pub mod env;
pub mod json_position;
pub mod manifest;
pub mod merge;
pub mod scan;

pub use manifest::{Manifest, ManifestItem};

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::metrics::Cell;

/// The manifest's file name in a shard folder.
pub const MANIFEST: &str = "manifest.json";
/// The typed, full-precision summary cells of a shard.
pub const EXACT_SUMMARY: &str = "summary.exact.csv";
/// The `format` field of a manifest (5: a shard carries `classes.csv`,
/// and `graph_rows` counts its rows too; 4: `services_timeseries.csv` has
/// `ejected`, and `replicas` counts the replicas serving).
pub const FORMAT: &str = "stormsim-shard/5";

/// The graph tables a shard carries (rows of its runs only), in the order
/// of a manifest item's `graph_rows`. A shard always has `classes.csv`
/// (its header alone when its runs have no priority classes); the merge
/// writes it when some run has classes, as an unsharded run does.
pub const GRAPH_TABLES: [&str; 5] = [
    "services.csv",
    "services_timeseries.csv",
    "calls.csv",
    "replicas.csv",
    "classes.csv",
];
/// The index of `classes.csv` in [`GRAPH_TABLES`].
pub const CLASSES: usize = 4;
/// The most shards a run may be split into: the bound `stormsim merge`
/// puts on a manifest's `shards` (the most runs a run can have), so that a
/// shard `run` writes is always one `merge` takes.
pub const MAX_SHARDS: u64 = manifest::MAX_ITEMS;
/// How items are shared out, as written in every manifest.
pub const RULE: &str =
    "item k = variant_index * replicates + replicate belongs to shard k mod shards";

/// Shard `index` of `count` (0-based index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardSpec {
    pub index: usize,
    pub count: usize,
}

impl ShardSpec {
    /// A shard, checked: `1 ≤ count ≤` [`MAX_SHARDS`] and `index < count`.
    pub fn new(index: usize, count: usize) -> Result<ShardSpec, String> {
        if count == 0 {
            return Err("the number of shards must be at least 1".into());
        }
        if count as u64 > MAX_SHARDS {
            return Err(format!(
                "{count} shards are more than `stormsim merge` takes (at most {MAX_SHARDS}, \
                 the most runs a run can have)"
            ));
        }
        if index >= count {
            return Err(format!(
                "shard index {index} is out of range for {count} shard{} (valid: 0 to {})",
                if count == 1 { "" } else { "s" },
                count - 1
            ));
        }
        Ok(ShardSpec { index, count })
    }

    /// Whether item `k` belongs to this shard.
    pub fn owns(&self, item: usize) -> bool {
        item % self.count == self.index
    }

    /// The items of this shard among `total`, in order.
    pub fn items(&self, total: usize) -> impl Iterator<Item = usize> + '_ {
        (self.index..total).step_by(self.count)
    }

    /// The default folder name of this shard: `shard-I-of-N`.
    pub fn folder_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for ShardSpec {
    type Err = String;

    /// `I/N`, as `--shard 2/8`.
    fn from_str(s: &str) -> Result<ShardSpec, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("expected I/N (for example 0/4), got `{s}`"))?;
        let i: usize = i
            .trim()
            .parse()
            .map_err(|_| format!("shard index `{i}` is not a whole number (expected I/N)"))?;
        let n: usize = n.trim().parse().map_err(|_| {
            let t = n.trim();
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                format!(
                    "shard count {} is more than `stormsim merge` takes (at most {MAX_SHARDS}, \
                     the most runs a run can have)",
                    crate::scenario::error::shorten_numbers(t)
                )
            } else {
                format!("shard count `{n}` is not a whole number (expected I/N)")
            }
        })?;
        ShardSpec::new(i, n)
    }
}

/// FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
/// over the bytes: fixed forever, so digests compare across versions and
/// machines. It detects shards of different scenarios; it is not meant to
/// resist tampering.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The digest of a scenario: `fnv1a64:` and 16 hex digits of FNV-1a 64
/// over its `scenario.resolved.yaml` bytes.
pub fn scenario_digest(resolved_yaml: &str) -> String {
    format!("fnv1a64:{:016x}", fnv1a64(resolved_yaml.as_bytes()))
}

/// A cell written without loss: `i:` integer, `f:` float (Rust's shortest
/// representation that reads back to the same bits; `NaN`, `inf`), `b:`
/// boolean, `t:` text, and an empty field for a missing value.
pub fn encode_cell(c: &Cell) -> String {
    match c {
        Cell::Int(v) => format!("i:{v}"),
        Cell::Float(v) => format!("f:{v}"),
        Cell::Bool(b) => format!("b:{b}"),
        Cell::Text(t) => format!("t:{t}"),
        Cell::Missing => String::new(),
    }
}

/// Reads back a cell written by [`encode_cell`].
pub fn decode_cell(s: &str) -> Result<Cell, String> {
    if s.is_empty() {
        return Ok(Cell::Missing);
    }
    let bad = || format!("`{s}` is not an exact cell");
    let (tag, v) = s.split_once(':').ok_or_else(bad)?;
    Ok(match tag {
        "i" => Cell::Int(v.parse().map_err(|_| bad())?),
        "f" => Cell::Float(v.parse().map_err(|_| bad())?),
        "b" => Cell::Bool(v.parse().map_err(|_| bad())?),
        "t" => Cell::Text(v.to_string()),
        _ => return Err(bad()),
    })
}

/// One run's row of `summary.exact.csv`.
pub struct ExactRow<'a> {
    pub variant: &'a str,
    pub replicate: u32,
    pub seed: u64,
    pub cells: &'a [(String, Cell)],
}

/// `summary.exact.csv`: `variant, replicate, seed` then every summary
/// cell encoded by [`encode_cell`], one row per run.
pub fn exact_summary_csv(rows: &[ExactRow<'_>]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    if let Some(ExactRow { cells, .. }) = rows.first() {
        let header = ["variant", "replicate", "seed"]
            .into_iter()
            .map(str::to_string)
            .chain(cells.iter().map(|(n, _)| n.clone()));
        w.write_record(header).expect("writing to memory");
    }
    for ExactRow {
        variant,
        replicate,
        seed,
        cells,
    } in rows
    {
        let line = [variant.to_string(), replicate.to_string(), seed.to_string()]
            .into_iter()
            .chain(cells.iter().map(|(_, c)| encode_cell(c)));
        w.write_record(line).expect("writing to memory");
    }
    w.into_inner().expect("writing to memory")
}

/// Names of the shard folders (real folders holding a `manifest.json`,
/// whatever it is: `merge` then says what is wrong with it) directly
/// inside `dir`: `merge DIR` merges them.
pub fn shard_folders_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| std::fs::symlink_metadata(e.path().join(MANIFEST)).is_ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_shard_specs() {
        assert_eq!(
            "2/8".parse::<ShardSpec>(),
            Ok(ShardSpec { index: 2, count: 8 })
        );
        assert!(
            "8/8"
                .parse::<ShardSpec>()
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            "0/0"
                .parse::<ShardSpec>()
                .unwrap_err()
                .contains("at least 1")
        );
        assert!("1".parse::<ShardSpec>().is_err());
        assert!("a/2".parse::<ShardSpec>().is_err());
    }

    #[test]
    fn items_go_round_robin_and_cover_everything_once() {
        for n in 1..9 {
            let mut seen = [0; 23];
            for i in 0..n {
                let s = ShardSpec::new(i, n).unwrap();
                for k in s.items(23) {
                    assert!(s.owns(k));
                    assert_eq!(k % n, i);
                    seen[k] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1));
        }
    }

    #[test]
    fn fnv1a64_matches_the_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(scenario_digest(""), "fnv1a64:cbf29ce484222325");
    }

    #[test]
    fn cells_round_trip_exactly() {
        let cells = [
            Cell::Int(u64::MAX),
            Cell::Float(0.1 + 0.2),
            Cell::Float(1e-300),
            Cell::Float(-0.0),
            Cell::Float(123_456_789.123_456_79),
            Cell::Float(f64::INFINITY),
            Cell::Bool(false),
            Cell::Text("a:b, \"c\"".into()),
            Cell::Text(String::new()),
            Cell::Missing,
        ];
        for c in cells {
            let back = decode_cell(&encode_cell(&c)).unwrap();
            match (&c, &back) {
                (Cell::Float(a), Cell::Float(b)) => assert_eq!(a.to_bits(), b.to_bits()),
                _ => assert_eq!(c, back),
            }
        }
        match decode_cell(&encode_cell(&Cell::Float(f64::NAN))).unwrap() {
            Cell::Float(v) => assert!(v.is_nan()),
            other => panic!("{other:?}"),
        }
        assert!(decode_cell("x:1").is_err());
        assert!(decode_cell("i:1.5").is_err());
    }
}
