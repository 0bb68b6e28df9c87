//! The two long tables, `timeseries.csv` (a row per run and bucket) and
//! `services_timeseries.csv` (a row per run, bucket and service), written
//! into the output's work folder run by run as the runs finish, in run
//! order, rather than built in memory from every run's rows at the end.
//! A run's rows are rendered on the worker that made it ([`RunRows::take`],
//! which leaves the run without them) and appended when the runs before
//! it have been (the runner's reorder buffer, `crate::reorder`): the bytes
//! are the ones the whole-table functions (`super::tables`,
//! `super::graph_tables`) write, which are built from the same pieces.
//!
//! Nothing else needs the rows once they are written:
//!
//! - `summary.csv` and `summary_by_variant.csv` come from each run's
//!   summary (`metrics::Summary`), never from its rows: the by-variant
//!   table is the mean and 95% confidence half-width over replicates of
//!   each summary cell (`metrics::aggregate`), and every percentile in it
//!   is a run's own, computed when the run ends;
//! - the time charts need, per variant and bucket, the running sum,
//!   count, minimum and maximum over replicates of six series (attempts
//!   and offered load per second, amplification, goodput, p50 and p99
//!   latency: `chart_data::Acc`), read in groups of buckets so that a
//!   series holds at most `MAX_POINTS` points and the variants of a table
//!   together at most `MAX_CHART_POINTS` (`chart_data::Bins`); the
//!   services charts the same per variant, service and bucket of load
//!   ratio, capacity and concurrency limit (`graph_data`), and the
//!   capacity lines per bucket (`capacity_series`), from the same rows.
//!   These aggregates are fed in one pass over the tables as written, read
//!   back from the work folder (`ChartData::from_checked_source`), so the
//!   charts stay drawn from the bytes `stormsim plot` reads, and memory
//!   follows the points drawn, not the rows;
//! - a shard's manifest needs only each run's row counts
//!   ([`RunRows::count`]).
//!
//! What stays in memory per run is its summary and its per-service,
//! per-call, per-replica and per-class rows, none of them per bucket.

use std::sync::atomic::AtomicBool;

use super::graph_tables::{services_timeseries_header, services_timeseries_rows};
use super::output_dir::{OutputDir, OutputError, OutputFile};
use super::tables::{Layout, TimeseriesRows, timeseries_rows, timeseries_without_rows};
use crate::interrupt::Stopped;
use crate::metrics::RunResult;

/// The streamed tables' file names.
pub const TIMESERIES: &str = "timeseries.csv";
pub const SERVICES_TIMESERIES: &str = "services_timeseries.csv";

/// The columns of the streamed tables, known before the first run ends:
/// the per-layer and `sweep.<path>` columns, and whether a service of the
/// runs has a cache (the cache columns of `services_timeseries.csv`):
/// those of every variant (`Layout`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns {
    pub layout: Layout,
}

/// One run's rows of both tables, rendered.
#[derive(Clone, Debug, Default)]
pub struct RunRows {
    pub timeseries: TimeseriesRows,
    pub services: Vec<u8>,
    /// Rows of `services_timeseries.csv` in `services`.
    pub service_rows: usize,
}

impl RunRows {
    /// Renders the rows of `r` with `columns` and takes them out of it.
    pub fn take(columns: &Columns, r: &mut RunResult, stop: &AtomicBool) -> Result<Self, Stopped> {
        let timeseries = timeseries_rows(&columns.layout, r, stop)?;
        let services = services_timeseries_rows(&columns.layout, columns.layout.caches, r, stop)?;
        let service_rows = r.graph.rows.len();
        r.rows = Vec::new();
        r.graph.rows = Vec::new();
        Ok(RunRows {
            timeseries,
            services,
            service_rows,
        })
    }

    /// (rows of `timeseries.csv`, rows of `services_timeseries.csv`).
    pub fn count(&self) -> (usize, usize) {
        (self.timeseries.count, self.service_rows)
    }
}

/// Both tables being written, a run at a time, in run order.
#[derive(Debug)]
pub struct TableStream {
    timeseries: OutputFile,
    services: OutputFile,
    /// Whether `timeseries.csv` has its header (from the first run with
    /// rows).
    header: bool,
}

impl TableStream {
    /// Creates both files in `out`'s work folder.
    pub fn create(out: &OutputDir, columns: &Columns) -> Result<Self, OutputError> {
        let timeseries = out.create(TIMESERIES)?;
        let mut services = out.create(SERVICES_TIMESERIES)?;
        services.append(&services_timeseries_header(
            &columns.layout,
            columns.layout.caches,
        ))?;
        Ok(TableStream {
            timeseries,
            services,
            header: false,
        })
    }

    /// Appends the next run's rows.
    pub fn append(&mut self, rows: &RunRows) -> Result<(), OutputError> {
        if !self.header
            && let Some(h) = &rows.timeseries.header
        {
            self.timeseries.append(h)?;
            self.header = true;
        }
        self.timeseries.append(&rows.timeseries.rows)?;
        self.services.append(&rows.services)
    }

    /// Finishes both files (a `timeseries.csv` without rows gets the
    /// table of no rows).
    pub fn finish(mut self) -> Result<(), OutputError> {
        if !self.header {
            self.timeseries.append(&timeseries_without_rows())?;
        }
        self.timeseries.finish()?;
        self.services.finish()
    }
}
