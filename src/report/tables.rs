//! The three CSV tables: `timeseries.csv`, `summary.csv` and
//! `summary_by_variant.csv`, tidy (one row per observation) so pandas reads
//! them without reshaping.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::interrupt::{POLL_ROWS, Stopped};
use crate::metrics::Cell;
use crate::metrics::RunResult;
use crate::metrics::aggregate::aggregate;
use crate::metrics::columns::{for_each_time_cell, summary_cells_of};

/// The most bytes of `timeseries.csv` (or `services_timeseries.csv`) read
/// back (`plot`), in one streaming pass: more than the largest run writes
/// (`scenario::validate::MAX_TIMESERIES_ROWS` rows of a few hundred bytes
/// to a few KiB).
pub const MAX_TIMESERIES_BYTES: u64 = 1 << 40;
/// The most bytes of `summary.csv`, `summary_by_variant.csv` or
/// `summary.exact.csv` read back.
pub const MAX_SUMMARY_BYTES: u64 = 1 << 30;
/// The longest line of a table read back: a row stormsim writes is a few
/// KiB at most (some hundred cells).
pub const MAX_ROW_BYTES: usize = 1 << 20;

/// Layer names across all variants, in order of first appearance: the
/// per-layer columns (`attempts_<layer>`). A layer absent from a variant
/// has empty cells there.
pub fn all_layer_names(results: &[RunResult]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in results {
        for n in &r.layer_names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

/// Swept paths across all runs, in order of first appearance: the
/// `sweep.<path>` columns (empty where a run did not sweep that path).
pub fn all_params(results: &[RunResult]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for r in results {
        for (p, _) in &r.params {
            if !paths.contains(p) {
                paths.push(p.clone());
            }
        }
    }
    paths
}

pub(crate) fn param_cells(r: &RunResult, paths: &[String]) -> Vec<(String, Cell)> {
    paths
        .iter()
        .map(|p| {
            let v = r
                .params
                .iter()
                .find(|(k, _)| k == p)
                .map(|(_, v)| v.clone());
            (format!("sweep.{p}"), v.map_or(Cell::Missing, Cell::Text))
        })
        .collect()
}

/// Reorders a run's per-layer values onto the shared layer list; `absent`
/// fills layers the run does not have.
fn spread<T: Clone>(values: &[T], own: &[String], all: &[String], absent: T) -> Vec<T> {
    all.iter()
        .map(|n| {
            own.iter()
                .position(|o| o == n)
                .map_or_else(|| absent.clone(), |i| values[i].clone())
        })
        .collect()
}

fn write_csv(header: &[String], rows: impl Iterator<Item = Vec<String>>) -> Vec<u8> {
    // Flexible: a row of another length (which the checks on a shard's
    // cells rule out) is written as it is rather than a panic; writing to
    // memory cannot fail otherwise.
    let mut w = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    w.write_record(header).expect("writing to memory");
    for row in rows {
        w.write_record(&row).expect("writing to memory");
    }
    w.into_inner().expect("writing to memory")
}

fn header_of(prefix: &[&str], cells: &[(String, Cell)]) -> Vec<String> {
    prefix
        .iter()
        .map(|s| s.to_string())
        .chain(cells.iter().map(|(n, _)| n.clone()))
        .collect()
}

/// The columns of the tables that depend on the runs: the per-layer and
/// `sweep.<path>` columns, `summary.csv`'s `failed_pool_timeout` (some
/// call of the runs has a connection pool) and the cache columns of the
/// services tables (some service has a cache). They are the union over
/// every variant, so that variants of different graphs (a call, a pool or
/// a cache only some of them have) write one table, with empty cells
/// where a run has no such layer. An unsharded run takes them from its
/// results; a shard takes them from every variant of the scenario
/// (`Layout::of_variants`), so that its rows are exactly the rows the
/// unsharded run writes for the same runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    pub layers: Vec<String>,
    pub params: Vec<String>,
    pub pools: bool,
    pub caches: bool,
}

/// What one variant brings to a [`Layout`].
#[derive(Clone, Copy, Debug)]
pub struct VariantColumns<'a> {
    pub layers: &'a [String],
    pub params: &'a [(String, String)],
    /// A call of the variant has a connection pool.
    pub pools: bool,
    /// A service of the variant has a cache.
    pub caches: bool,
}

impl Layout {
    /// The columns of these results.
    pub fn of(results: &[RunResult]) -> Layout {
        Layout {
            layers: all_layer_names(results),
            params: all_params(results),
            pools: results.iter().any(|r| r.summary.pools),
            caches: results
                .iter()
                .any(|r| r.graph.services.iter().any(|s| s.cache.is_some())),
        }
    }

    /// The columns of a run of these variants, in variant order: the same
    /// as `Layout::of` over the results of every variant.
    pub fn of_variants<'a>(variants: impl IntoIterator<Item = VariantColumns<'a>>) -> Layout {
        let mut out = Layout::default();
        for v in variants {
            for n in v.layers {
                if !out.layers.contains(n) {
                    out.layers.push(n.clone());
                }
            }
            for (p, _) in v.params {
                if !out.params.contains(p) {
                    out.params.push(p.clone());
                }
            }
            out.pools |= v.pools;
            out.caches |= v.caches;
        }
        out
    }

    /// Which of the layers `r` has (one flag per layer of the layout).
    fn present(&self, r: &RunResult) -> Vec<bool> {
        self.layers
            .iter()
            .map(|n| r.layer_names.contains(n))
            .collect()
    }
}

/// A stop flag never raised: tables made where nobody can interrupt.
static NEVER: AtomicBool = AtomicBool::new(false);

pub fn timeseries_csv(results: &[RunResult]) -> Vec<u8> {
    timeseries_csv_with(&Layout::of(results), results)
}

/// `timeseries.csv` of these results with the columns of `layout`.
pub fn timeseries_csv_with(layout: &Layout, results: &[RunResult]) -> Vec<u8> {
    never(timeseries_csv_until(layout, results, &NEVER))
}

/// `timeseries_csv_with`, given up (`Stopped`) once `stop` is raised: a
/// long run has millions of rows, seconds of work.
pub fn timeseries_csv_until(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    // Streamed row by row: a long run has hundreds of thousands of rows,
    // and holding them all as strings would take gigabytes.
    let mut out = Vec::new();
    let mut header = false;
    for r in results {
        let rows = timeseries_rows(layout, r, stop)?;
        if !header && let Some(h) = &rows.header {
            out.extend_from_slice(h);
            header = true;
        }
        out.extend_from_slice(&rows.rows);
    }
    if !header {
        out.extend_from_slice(&timeseries_without_rows());
    }
    Ok(out)
}

/// One run's rows of `timeseries.csv`, as CSV bytes: the table is these
/// runs' `rows` in run order, under the `header` of the first run that
/// has rows (or [`timeseries_without_rows`] when none has).
#[derive(Clone, Debug, Default)]
pub struct TimeseriesRows {
    /// The table's header line as this run's first row names it; `None`
    /// for a run without rows.
    pub header: Option<Vec<u8>>,
    pub rows: Vec<u8>,
    /// How many rows `rows` holds.
    pub count: usize,
}

/// `timeseries.csv` of runs without a single row.
pub fn timeseries_without_rows() -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(Vec::<String>::new())
        .expect("writing to memory");
    w.into_inner().expect("writing to memory")
}

/// The rows of `timeseries.csv` of one run with the columns of `layout`
/// (see [`TimeseriesRows`]), given up once `stop` is raised.
pub fn timeseries_rows(
    layout: &Layout,
    r: &RunResult,
    stop: &AtomicBool,
) -> Result<TimeseriesRows, Stopped> {
    let layers = &layout.layers;
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = None;
    let mut field = String::new();
    let params = param_cells(r, &layout.params);
    let present = layout.present(r);
    for (written, row) in r.rows.iter().enumerate() {
        if written.is_multiple_of(POLL_ROWS) && stop.load(Ordering::Relaxed) {
            return Err(Stopped);
        }
        let mut row = row.clone();
        row.layer_attempts = spread(&row.layer_attempts, &r.layer_names, layers, 0);
        row.layer_retries = spread(&row.layer_retries, &r.layer_names, layers, 0);
        row.layer_gates = spread(&row.layer_gates, &r.layer_names, layers, [0; 3]);
        row.layer_levels = spread(&row.layer_levels, &r.layer_names, layers, [None; 3]);
        row.layer_orphaned = spread(&row.layer_orphaned, &r.layer_names, layers, 0);
        if header.is_none() {
            let mut cells = Vec::new();
            for_each_time_cell(&row, layers, &present, |name, cell| {
                cells.push((name.to_string(), cell))
            });
            cells.extend(params.iter().cloned());
            let mut h = csv::Writer::from_writer(Vec::new());
            h.write_record(header_of(&["variant", "replicate"], &cells))
                .expect("writing to memory");
            header = Some(h.into_inner().expect("writing to memory"));
        }
        w.write_field(&r.variant).expect("writing to memory");
        w.write_field(r.replicate.to_string())
            .expect("writing to memory");
        // Cells only: the names were written once, in the header.
        let mut put = |cell: &Cell| {
            field.clear();
            cell.render_into(&mut field);
            w.write_field(&field).expect("writing to memory");
        };
        for_each_time_cell(&row, layers, &present, |_, cell| put(&cell));
        for (_, cell) in &params {
            put(cell);
        }
        w.write_record(None::<&[u8]>).expect("writing to memory");
    }
    Ok(TimeseriesRows {
        header,
        rows: w.into_inner().expect("writing to memory"),
        count: r.rows.len(),
    })
}

/// The cells of each result's `summary.csv` row (after `variant,
/// replicate, seed`), with the columns of `layout`.
pub fn summary_rows_with(layout: &Layout, results: &[RunResult]) -> Vec<Vec<(String, Cell)>> {
    never(summary_rows_until(layout, results, &NEVER))
}

/// The value of a computation made with the flag `NEVER`.
fn never<T>(r: Result<T, Stopped>) -> T {
    match r {
        Ok(v) => v,
        Err(Stopped) => unreachable!("the flag NEVER is never raised"),
    }
}

/// `Err(Stopped)` every so often once `stop` is raised.
fn poll(i: usize, stop: &AtomicBool) -> Result<(), Stopped> {
    if i.is_multiple_of(64) && stop.load(Ordering::Relaxed) {
        Err(Stopped)
    } else {
        Ok(())
    }
}

/// `summary_rows_with`, given up once `stop` is raised.
pub fn summary_rows_until(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<Vec<(String, Cell)>>, Stopped> {
    let layers = &layout.layers;
    let params = &layout.params;
    results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            poll(i, stop)?;
            let mut s = r.summary.clone();
            s.layer_attempts = spread(&s.layer_attempts, &r.layer_names, layers, 0);
            s.layer_retries = spread(&s.layer_retries, &r.layer_names, layers, 0);
            s.layer_gates = spread(&s.layer_gates, &r.layer_names, layers, [0; 3]);
            s.layer_orphaned = spread(&s.layer_orphaned, &r.layer_names, layers, 0);
            s.layer_calls = spread(&s.layer_calls, &r.layer_names, layers, 0);
            s.layer_orphaned_work_s = spread(&s.layer_orphaned_work_s, &r.layer_names, layers, 0.0);
            // The columns of every variant: `failed_pool_timeout` when
            // some run has a pool (0 for a run without one).
            s.pools = layout.pools;
            let mut cells = summary_cells_of(&s, layers, &layout.present(r));
            cells.extend(param_cells(r, params));
            Ok(cells)
        })
        .collect()
}

pub fn summary_csv(results: &[RunResult]) -> Vec<u8> {
    summary_csv_with(&Layout::of(results), results)
}

/// `summary.csv` of these results with the columns of `layout`.
pub fn summary_csv_with(layout: &Layout, results: &[RunResult]) -> Vec<u8> {
    never(summary_csv_until(layout, results, &NEVER))
}

/// `summary_csv_with`, given up once `stop` is raised.
pub fn summary_csv_until(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let rows = summary_rows_until(layout, results, stop)?;
    let header = rows
        .first()
        .map(|c| header_of(&["variant", "replicate", "seed"], c))
        .unwrap_or_default();
    let mut lines = Vec::with_capacity(results.len());
    for (i, (r, cells)) in results.iter().zip(&rows).enumerate() {
        poll(i, stop)?;
        let mut line = vec![
            r.variant.clone(),
            r.replicate.to_string(),
            r.seed.to_string(),
        ];
        line.extend(cells.iter().map(|(_, c)| c.render()));
        lines.push(line);
    }
    Ok(write_csv(&header, lines.into_iter()))
}

/// Aggregated rows per variant, in variant order: (variant, cells).
pub fn by_variant(results: &[RunResult]) -> Vec<(String, Vec<(String, Cell)>)> {
    never(by_variant_until(results, &NEVER))
}

/// `by_variant`, given up once `stop` is raised.
pub fn by_variant_until(
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<(String, Cells)>, Stopped> {
    let rows = summary_rows_until(&Layout::of(results), results, stop)?;
    let mut out: Vec<(String, Vec<(String, Cell)>)> = Vec::new();
    let mut i = 0;
    while i < results.len() {
        poll(out.len(), stop)?;
        let v = results[i].variant_index;
        let j = (i..results.len())
            .find(|&k| results[k].variant_index != v)
            .unwrap_or(results.len());
        out.push((results[i].variant.clone(), aggregate(&rows[i..j])));
        i = j;
    }
    with_slo_ranks(&mut out);
    Ok(out)
}

/// Adds `slo_rank` (1 = best, `metrics::slo::rank`) after each variant's
/// `slo_failed`, when the runs have an SLO verdict.
/// A variant whose every run a guard rail stopped has no figures to rank
/// by: its `slo_rank` is empty, and the others are ranked among themselves.
fn with_slo_ranks(agg: &mut [(String, Vec<(String, Cell)>)]) {
    let ranked: Vec<usize> = (0..agg.len())
        .filter(|&i| !all_runs_aborted(&agg[i].1))
        .collect();
    let ranks = {
        let cells: Vec<&[(String, Cell)]> = ranked.iter().map(|&i| agg[i].1.as_slice()).collect();
        crate::metrics::slo::rank(&cells)
    };
    let mut rank_of = vec![None; agg.len()];
    for (&i, rank) in ranked.iter().zip(ranks) {
        rank_of[i] = Some(rank as u64);
    }
    for ((_, cells), rank) in agg.iter_mut().zip(rank_of) {
        if let Some(i) = cells.iter().position(|(n, _)| n == "slo_failed") {
            let cell = rank.map_or(Cell::Missing, Cell::Int);
            cells.insert(i + 1, ("slo_rank".into(), cell));
        }
    }
}

/// Whether a guard rail stopped every run of a variant (its aggregated
/// cells): `aborted_runs` equals `replicates`.
pub fn all_runs_aborted(cells: &[(String, Cell)]) -> bool {
    let num = |n: &str| {
        cells
            .iter()
            .find(|(k, _)| k == n)
            .and_then(|(_, c)| c.number())
    };
    match (num("aborted_runs"), num("replicates")) {
        (Some(a), Some(r)) => r > 0.0 && a >= r,
        _ => false,
    }
}

pub fn summary_by_variant_csv(results: &[RunResult]) -> Vec<u8> {
    by_variant_csv(&by_variant(results))
}

/// `summary_by_variant_csv`, given up once `stop` is raised.
pub fn summary_by_variant_csv_until(
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    Ok(by_variant_csv(&by_variant_until(results, stop)?))
}

/// The named cells of one table row.
pub type Cells = Vec<(String, Cell)>;

/// `summary_by_variant.csv` from summary rows grouped by variant, in
/// variant order: (variant, the cells of each of its replicates' rows).
pub fn summary_by_variant_csv_from_rows(groups: &[(String, Vec<Cells>)]) -> Vec<u8> {
    never(summary_by_variant_csv_from_rows_until(groups, &NEVER))
}

/// `summary_by_variant_csv_from_rows`, given up once `stop` is raised.
pub fn summary_by_variant_csv_from_rows_until(
    groups: &[(String, Vec<Cells>)],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let mut table = ByVariantRows::default();
    for (i, (name, rows)) in groups.iter().enumerate() {
        poll(i, stop)?;
        table.push(name.clone(), rows);
    }
    Ok(table.csv())
}

/// `summary_by_variant.csv` built a variant at a time, from the summary
/// rows of its replicates, which can then be dropped (`stormsim merge`
/// reads a variant's rows, aggregates them and goes on): what is kept is
/// a row per variant.
#[derive(Debug, Default)]
pub struct ByVariantRows {
    agg: Vec<(String, Cells)>,
}

impl ByVariantRows {
    /// Adds the next variant, in variant order, with its replicates' rows.
    pub fn push(&mut self, variant: String, rows: &[Cells]) {
        self.agg.push((variant, aggregate(rows)));
    }

    /// The table (with the SLO ranks, which compare every variant).
    pub fn csv(mut self) -> Vec<u8> {
        with_slo_ranks(&mut self.agg);
        by_variant_csv(&self.agg)
    }
}

fn by_variant_csv(agg: &[(String, Vec<(String, Cell)>)]) -> Vec<u8> {
    let header = agg
        .first()
        .map(|(_, c)| header_of(&["variant"], c))
        .unwrap_or_default();
    let lines = agg.iter().map(|(name, cells)| {
        let mut line = vec![name.clone()];
        line.extend(cells.iter().map(|(_, c)| c.render()));
        line
    });
    write_csv(&header, lines)
}
