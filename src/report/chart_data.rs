//! What the charts and the HTML report draw, read back from the written
//! tables (`timeseries.csv`, `summary.csv`, `summary_by_variant.csv`, and
//! the services graph's tables: see `graph_data`) and
//! `scenario.resolved.yaml`. `stormsim run` and `stormsim plot` both go
//! through here, so both draw from the same bytes and produce the same
//! files. Odd data (empty cells, NaN, a single bucket, a missing or
//! unreadable scenario file) gives gaps or defaults, never a panic.
//!
//! `timeseries.csv` is read in one streaming pass: each row goes straight
//! into its variant's running mean, minimum and maximum per bucket, so
//! memory follows the points drawn, not the size of the table, and the
//! work is linear in the rows whatever the number of variants. Files are
//! read only if regular and under a byte cap (`crate::input_file`), and
//! the stop flag (`crate::interrupt`) is polled every few thousand rows.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::ReportError;
use super::capacity_series::CapacityModels;
use super::graph_data::{GraphData, GraphSources};
use super::shape::RunShape;
use super::table_check::{self, Runs, TableCheck, TableError, TableKind};
use super::tables::{MAX_ROW_BYTES, MAX_SUMMARY_BYTES, MAX_TIMESERIES_BYTES};
use crate::input_file::{self, InputError, LineLimited};
use crate::interrupt::{self, POLL_ROWS};
use crate::scenario;
use crate::scenario::validate::MAX_TIMESERIES_ROWS;

/// A CSV table as text cells, with its header.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub header: Vec<String>,
    /// One `StringRecord` a row: its fields in one buffer, not one string
    /// each (a long run's table has millions of cells).
    pub rows: Vec<Row>,
}

/// A row of a [`Table`].
pub type Row = csv::StringRecord;

impl Table {
    /// Parses CSV bytes; a malformed table is an error. Polls the stop
    /// flag.
    pub fn parse(bytes: &[u8]) -> Result<Table, ReportError> {
        Table::parse_checked(bytes, None)
    }

    /// Parses CSV bytes, each row checked by `check` when given
    /// (`super::table_check`).
    pub fn parse_checked(
        bytes: &[u8],
        mut check: Option<&mut TableCheck<'_>>,
    ) -> Result<Table, ReportError> {
        let bad = |e: csv::Error| ReportError::Table(e.to_string());
        let mut r = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(LineLimited::new(bytes, MAX_ROW_BYTES));
        let header = r.headers().map_err(bad)?.clone();
        if let Some(c) = check.as_mut() {
            c.header(&header).map_err(table_error)?;
        }
        let header = header.iter().map(str::to_string).collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            if rows.len() % POLL_ROWS == 0 {
                interrupt::check()?;
            }
            let rec = rec.map_err(bad)?;
            if let Some(c) = check.as_mut() {
                c.row(&rec).map_err(table_error)?;
            }
            rows.push(rec);
        }
        if let Some(c) = check.as_mut() {
            c.finish().map_err(table_error)?;
        }
        Ok(Table { header, rows })
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The text of a cell ("" when the column or cell is absent).
    pub fn text<'a>(&'a self, row: &'a Row, name: &str) -> &'a str {
        self.col(name).and_then(|i| row.get(i)).unwrap_or("")
    }

    /// A cell as a finite number (None when empty, absent or not finite).
    pub fn num(&self, row: &Row, name: &str) -> Option<f64> {
        parse_num(self.text(row, name))
    }
}

/// A problem found by a table's check, as a report error.
pub(super) fn table_error(e: TableError) -> ReportError {
    ReportError::Table(e.to_string())
}

pub fn parse_num(s: &str) -> Option<f64> {
    match s.trim() {
        "true" => Some(1.0),
        "false" => Some(0.0),
        t => t.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

/// One point of a series over replicates: mean, min and max.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub t: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

/// The time series of one variant, each over its replicates.
#[derive(Clone, Debug, Default)]
pub struct VariantSeries {
    pub name: String,
    /// Dependency attempts per second.
    pub load: Vec<Point>,
    /// Offered logical requests per second.
    pub offered: Vec<Point>,
    /// Dependency attempts ÷ offered logical requests (buckets with offers).
    pub amplification: Vec<Point>,
    /// Succeeded logical requests per second.
    pub goodput: Vec<Point>,
    pub latency_p50_ms: Vec<Point>,
    pub latency_p99_ms: Vec<Point>,
    /// Nominal capacity per second (from summary.csv), if known.
    pub capacity_per_s: Option<f64>,
    /// Buckets per group of a thinned series (`decimate`); 1 (or 0) when
    /// every bucket is drawn.
    pub group: usize,
}

/// A time span shaded on the time charts.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub start_s: f64,
    pub end_s: f64,
    pub label: String,
}

/// Everything the charts and report read.
#[derive(Clone, Debug, Default)]
pub struct ChartData {
    pub name: String,
    pub description: String,
    pub bucket_s: f64,
    pub incidents: Vec<Span>,
    /// Variant names in output order (their palette index).
    pub variants: Vec<String>,
    pub series: Vec<VariantSeries>,
    pub summary: Table,
    pub by_variant: Table,
    /// Variant name → its index in `variants`.
    pub index: HashMap<String, usize>,
    /// The services graph (`services.csv`, `calls.csv`,
    /// `services_timeseries.csv`); `None` for a folder without them.
    pub graph: Option<GraphData>,
    /// The scenario's SLO in words, when it has one.
    pub slo: Option<String>,
    /// What the tables were checked against (`super::table_check`), and
    /// the folder they were read from (for messages): the graph tables
    /// are checked the same way. `None`: read as they are (tests).
    pub checked: Option<Checked>,
    /// What the capacity of each bucket is computed from, for the
    /// services whose capacity changes (from the scenario: `None` without
    /// one, or when none changes).
    pub capacity: Option<CapacityModels>,
    /// `classes.csv`, when the run has priority classes.
    pub classes: Option<Table>,
    /// How the time series' rows fell into points (the services graph's
    /// are read the same way).
    pub bins: Bins,
}

/// What a `ChartData`'s tables were checked against.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    pub shape: RunShape,
    /// The folder the tables were read from; `None` for tables in memory.
    pub folder: Option<PathBuf>,
}

impl Checked {
    /// The name of a table in messages.
    pub fn label(&self, file: &str) -> String {
        match &self.folder {
            Some(dir) => crate::escape::path(&dir.join(file)),
            None => file.to_string(),
        }
    }

    /// A check of one table of every run.
    pub fn check(&self, kind: TableKind) -> TableCheck<'_> {
        TableCheck::new(kind, self.label(kind.file()), &self.shape, Runs::All)
    }
}

/// Values of one series at one time: the running mean's sum, the count,
/// the minimum and the maximum (the same numbers, bit for bit, as over the
/// list of the values in row order).
#[derive(Clone, Copy, Debug)]
pub(super) struct Acc {
    t: f64,
    sum: f64,
    n: usize,
    min: f64,
    max: f64,
}

impl Acc {
    fn new(t: f64) -> Acc {
        Acc {
            t,
            sum: 0.0,
            n: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn add(&mut self, v: f64) {
        // `Iterator::sum`'s own start for the first value, then a left
        // fold, as summing the list would.
        self.sum = if self.n == 0 {
            std::iter::once(v).sum()
        } else {
            self.sum + v
        };
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
}

/// A series being read: its values per time key (a bucket, or a group
/// of buckets: [`Bins`]), in key order. A sorted vector rather than a
/// map: 48 bytes a point, where a `BTreeMap` took about 80 and a whole
/// node (some 540 bytes) for the first one, which a sweep of many short
/// variants pays for every series of every variant.
#[derive(Clone, Debug, Default)]
pub(super) struct Series {
    points: Vec<(i64, Acc)>,
    /// Where the last value went: a run's rows come in time order, so
    /// the next row's point is this one or the next.
    last: usize,
}

impl Series {
    pub(super) fn new() -> Series {
        Series::default()
    }

    /// Points held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.points.len()
    }

    /// The point of `key`, made (at time `t`) if absent; the first one
    /// made reserves room for the `expected` points of the series.
    fn entry(&mut self, key: i64, t: f64, expected: usize) -> &mut Acc {
        let i = match self.find(key) {
            Ok(i) => i,
            Err(i) => {
                if self.points.capacity() == 0 {
                    self.points.reserve_exact(expected.max(1));
                }
                self.points.insert(i, (key, Acc::new(t)));
                i
            }
        };
        self.last = i;
        &mut self.points[i].1
    }

    /// The index of `key`, or where it belongs.
    fn find(&self, key: i64) -> Result<usize, usize> {
        let p = &self.points;
        for i in [self.last, self.last + 1] {
            if p.get(i).is_some_and(|(k, _)| *k == key) {
                return Ok(i);
            }
        }
        match p.last() {
            None => Err(0),
            Some((k, _)) if *k < key => Err(p.len()),
            Some(_) => p.binary_search_by_key(&key, |(k, _)| *k),
        }
    }
}

/// How the rows of a table fall into the points of a chart: one point per
/// bucket while a run has at most [`MAX_POINTS`] buckets and all the
/// series of the table together at most [`MAX_CHART_POINTS`], else one
/// per group of `group` consecutive buckets ([`group_for_series`] of the
/// buckets a run has and the series read), so that a series never holds
/// more than about `MAX_POINTS` accumulators however long the run and
/// however many replicates, nor all of them together more than
/// `MAX_CHART_POINTS` (and one a series) however many variants: memory
/// follows the points drawn, not the rows (a 20-variant sweep of 100 000
/// buckets each, 2 million rows, needed 1.2 GB to plot when every bucket
/// was kept until the end; a 2 000-point sweep of 1 000 buckets each, 1.5
/// GB when every variant kept its 1 000).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bins {
    /// The bucket width, in seconds.
    pub bucket_s: f64,
    /// Buckets per point (at least 1).
    pub group: usize,
    /// The buckets a run has at most (0: not known), which `group` was
    /// chosen for.
    pub buckets: u64,
}

impl Bins {
    /// One point per bucket.
    pub fn every_bucket(bucket_s: f64) -> Bins {
        Bins {
            bucket_s,
            group: 1,
            buckets: 0,
        }
    }

    /// The bins for `series` series (a table's variants) of runs of at
    /// most `buckets` buckets of `bucket_s`.
    pub fn for_buckets(bucket_s: f64, buckets: u64, series: usize) -> Bins {
        Bins {
            bucket_s,
            group: group_for_series(buckets, series),
            buckets,
        }
    }

    /// These bins for a table of `series` series over the same buckets
    /// (`services_timeseries.csv`: its variants × services): buckets
    /// grouped at least as these are, and more when the series need it.
    pub fn shared_by(self, series: usize) -> Bins {
        Bins {
            group: self.group.max(group_for_series(self.buckets, series)),
            ..self
        }
    }

    /// The points a series of runs of `buckets` buckets holds (0: not
    /// known).
    fn points(&self) -> usize {
        let buckets = usize::try_from(self.buckets).unwrap_or(usize::MAX);
        buckets.div_ceil(self.group.max(1))
    }

    /// The key of the point a row at `t` (seconds) falls into: its time
    /// in microseconds while every bucket is a point (distinct bucket
    /// starts never share one), else its group of buckets.
    fn key(&self, t: f64) -> i64 {
        if self.group <= 1 || self.bucket_s <= 0.0 {
            (t * 1e6).round() as i64
        } else {
            let bucket = (t / self.bucket_s).round() as i64;
            bucket.div_euclid(self.group as i64)
        }
    }
}

/// Adds the value `v` of a row at `t` to its point of `acc` (a point is
/// made for the row even without a value: its time is that of the first
/// row that falls into it, the start of its first bucket).
pub(super) fn push(acc: &mut Series, bins: Bins, t: f64, v: Option<f64>) {
    let e = acc.entry(bins.key(t), t, bins.points());
    if let Some(v) = v.filter(|v| v.is_finite()) {
        e.add(v);
    }
}

/// Mean, min and max of the values per time key, in time order.
pub(super) fn reduce(map: &Series) -> Vec<Point> {
    map.points
        .iter()
        .map(|(_, a)| a)
        .filter(|a| a.n > 0)
        .map(|a| Point {
            t: a.t,
            mean: a.sum / a.n as f64,
            min: a.min,
            max: a.max,
        })
        .collect()
}

/// The most points a time chart draws of one series: more than its
/// pixels across. A longer run (fine buckets) is read in groups of
/// buckets ([`Bins`]): a point is then the mean of every value in its
/// group (its buckets of every replicate), at the group's first time,
/// and its band spans the group's extremes, so peaks and troughs survive
/// in the band. A series that still has more points (rows past the end
/// the scenario gives) is thinned by `decimate`. The CSV tables keep
/// every bucket.
pub const MAX_POINTS: usize = 2_000;

/// Thins a series to at most [`MAX_POINTS`]: the points are cut into
/// groups of equal length, and each group becomes one point at its first
/// time, whose mean is the mean of the group's means and whose band (min
/// and max over replicates) spans the group's extremes. The line is
/// smoothed; peaks and troughs survive in the band. A series short enough
/// is unchanged.
pub fn decimate(points: Vec<Point>) -> Vec<Point> {
    let group = group_for(points.len());
    if group == 1 {
        return points;
    }
    points
        .chunks(group)
        .map(|chunk| Point {
            t: chunk[0].t,
            mean: chunk.iter().map(|p| p.mean).sum::<f64>() / chunk.len() as f64,
            min: chunk.iter().map(|p| p.min).fold(f64::INFINITY, f64::min),
            max: chunk
                .iter()
                .map(|p| p.max)
                .fold(f64::NEG_INFINITY, f64::max),
        })
        .collect()
}

/// The points per group with which `decimate` thins `len` points.
pub fn group_for(len: usize) -> usize {
    if len <= MAX_POINTS {
        1
    } else {
        len.div_ceil(MAX_POINTS)
    }
}

/// The most points the series of one table hold together while it is
/// read (the variants' series of `timeseries.csv`, the variants' and
/// services' of `services_timeseries.csv`): as many as 50 variants drawn
/// in full (`MAX_POINTS` each). A sweep of more variants is read in
/// groups of buckets ([`Bins`]) so that its variants share these points,
/// each keeping at least one: the time charts of more than 45 variants
/// draw their median (`super::spread`) over the groups, not every bucket.
pub const MAX_CHART_POINTS: usize = 100_000;

/// The buckets per point with which `series` series of `buckets` buckets
/// are read: at most [`MAX_POINTS`] points a series ([`group_for`]) and
/// at most [`MAX_CHART_POINTS`] for all of them together, or one a
/// series when they are more (0 buckets: not known, every bucket).
pub fn group_for_series(buckets: u64, series: usize) -> usize {
    let buckets = usize::try_from(buckets).unwrap_or(usize::MAX);
    let shared = buckets
        .saturating_mul(series.max(1))
        .div_ceil(MAX_CHART_POINTS);
    group_for(buckets).max(shared).clamp(1, buckets.max(1))
}

/// What a first pass over `timeseries.csv` learns when the scenario does
/// not say it, in constant memory: the bucket width (the smallest
/// positive step between consecutive rows: a run's rows are its buckets
/// in time order), the last bucket start, and how many variants the
/// series are read for at most (the times the variant changes from a row
/// to the next, plus one: a variant's runs are consecutive).
#[derive(Clone, Debug, Default)]
struct Extent {
    step: Option<f64>,
    t_max: Option<f64>,
    last: Option<f64>,
    variant: String,
    variants: usize,
}

impl Extent {
    /// A row of `variant` (empty: a row no series reads).
    fn variant(&mut self, variant: &str) {
        if !variant.is_empty() && variant != self.variant {
            self.variants += 1;
            variant.clone_into(&mut self.variant);
        }
    }

    fn add(&mut self, t: f64) {
        if let Some(last) = self.last {
            let d = t - last;
            if d > 1e-9 {
                self.step = Some(self.step.map_or(d, |m| m.min(d)));
            }
        }
        self.last = Some(t);
        self.t_max = Some(self.t_max.map_or(t, |m| m.max(t)));
    }

    /// The bucket width (1 s when no two rows tell it), to the
    /// nanosecond: bucket widths are whole nanoseconds, and the step
    /// between two printed times carries the error of their decimals
    /// (400.1 − 400.0 is 0.09999999999997).
    fn bucket_s(&self) -> f64 {
        self.step
            .map_or(1.0, |s| ((s * 1e9).round() / 1e9).max(1e-9))
    }

    /// Buckets of `bucket_s` up to the last bucket start, counting both
    /// ends.
    fn buckets(&self, bucket_s: f64) -> u64 {
        match self.t_max {
            Some(t) if bucket_s > 0.0 && t > 0.0 => (t / bucket_s).round() as u64 + 1,
            _ => 1,
        }
    }
}

/// `timeseries.csv` reduced in one pass: every variant's six series, in
/// the order the variants first appear, and the extent of its times.
#[derive(Default)]
struct TimeSeries {
    names: Vec<String>,
    series: Vec<[Series; 6]>,
    extent: Extent,
}

impl TimeSeries {
    /// Reads the table from `source`, row by row, with rates per second
    /// over the buckets of `bins` (`None`: only the extent of the times).
    fn read(
        source: impl Read,
        bins: Option<Bins>,
        mut check: Option<&mut TableCheck<'_>>,
    ) -> Result<TimeSeries, ReportError> {
        let file = check
            .as_ref()
            .map_or_else(|| "timeseries.csv".to_string(), |c| c.file().to_string());
        let bad = |e: csv::Error| ReportError::Table(format!("{file}: {e}"));
        let mut r = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(LineLimited::new(source, MAX_ROW_BYTES));
        let header = r.headers().map_err(bad)?.clone();
        if let Some(c) = check.as_mut() {
            c.header(&header).map_err(table_error)?;
        }
        let col = |name: &str| header.iter().position(|h| h == name);
        let cols = [
            "variant",
            "t_s",
            "offered",
            "dependency_attempts",
            "goodput",
            "latency_p50_ms",
            "latency_p99_ms",
        ]
        .map(col);
        let [variant, t_s, offered, dep, goodput, p50, p99] = cols;
        let mut out = TimeSeries::default();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut rec = csv::StringRecord::new();
        let mut rows: u64 = 0;
        while r.read_record(&mut rec).map_err(bad)? {
            if rows.is_multiple_of(POLL_ROWS as u64) {
                interrupt::check()?;
            }
            rows += 1;
            if rows > MAX_TIMESERIES_ROWS {
                return Err(ReportError::Table(format!(
                    "timeseries.csv has more than {MAX_TIMESERIES_ROWS} rows, more than any \
                     run writes"
                )));
            }
            if let Some(c) = check.as_mut() {
                c.row(&rec).map_err(table_error)?;
            }
            let cell = |c: Option<usize>| c.and_then(|i| rec.get(i)).unwrap_or("");
            let num = |c: Option<usize>| parse_num(cell(c));
            let name = cell(variant);
            let t = num(t_s);
            if let Some(t) = t {
                out.extent.add(t);
            }
            if bins.is_none() {
                out.extent.variant(name);
            }
            let Some(bins) = bins.filter(|_| !name.is_empty()) else {
                continue;
            };
            let v = match index.get(name) {
                Some(&v) => v,
                None => {
                    index.insert(name.to_string(), out.names.len());
                    out.names.push(name.to_string());
                    out.series.push(Default::default());
                    out.names.len() - 1
                }
            };
            let Some(t) = t else { continue };
            let acc = &mut out.series[v];
            let (o, d) = (num(offered), num(dep));
            let bucket_s = bins.bucket_s;
            push(&mut acc[0], bins, t, d.map(|d| d / bucket_s));
            push(&mut acc[1], bins, t, o.map(|o| o / bucket_s));
            let amp = match (d, o) {
                (Some(d), Some(o)) if o > 0.0 => Some(d / o),
                _ => None,
            };
            push(&mut acc[2], bins, t, amp);
            push(&mut acc[3], bins, t, num(goodput));
            push(&mut acc[4], bins, t, num(p50));
            push(&mut acc[5], bins, t, num(p99));
        }
        if let Some(c) = check.as_mut() {
            c.finish().map_err(table_error)?;
        }
        Ok(out)
    }
}

/// Reads a table file of a run folder: a regular file under `cap` bytes.
fn read_table(dir: &Path, file: &str, cap: u64) -> Result<Vec<u8>, ReportError> {
    input_file::read_capped(&dir.join(file), cap)
        .map_err(|e| ReportError::Table(format!("{}: {e}", crate::escape::path(&dir.join(file)))))
}

impl ChartData {
    /// Reads a finished run's folder, every file checked
    /// (`super::table_check`): `scenario.resolved.yaml` must load as a
    /// valid scenario, and the tables must be the ones its run writes.
    /// `timeseries.csv` is streamed.
    pub fn from_dir(dir: &Path) -> Result<ChartData, ReportError> {
        let resolved_path = dir.join("scenario.resolved.yaml");
        let label = crate::escape::path(&resolved_path);
        let yaml = input_file::read_capped(&resolved_path, scenario::load::MAX_FILE_BYTES)
            .map_err(|e| ReportError::Table(format!("{label}: {e}")))?;
        let s = scenario::load_bytes(&yaml, &label)
            .map_err(|e| ReportError::Table(format!("{label} is not a valid scenario:\n{e}")))?;
        let shape = RunShape::of(&s)
            .map_err(|e| ReportError::Table(format!("{label} is not a valid scenario:\n{e}")))?;
        let checked = Checked {
            shape,
            folder: Some(dir.to_path_buf()),
        };
        let summary = read_table(dir, "summary.csv", MAX_SUMMARY_BYTES)?;
        let by_variant = read_table(dir, "summary_by_variant.csv", MAX_SUMMARY_BYTES)?;
        let ts_path = dir.join("timeseries.csv");
        let open = || {
            input_file::open_capped(&ts_path, MAX_TIMESERIES_BYTES)
                .map_err(|e| ReportError::Table(format!("{}: {e}", crate::escape::path(&ts_path))))
        };
        let data = ChartData::build(
            |bins, check| TimeSeries::read(open()?, bins, check),
            &summary,
            &by_variant,
            Some(&s),
            Some(checked),
        )?;
        // A folder from before the graph tables has none of them; one
        // that has some has all three.
        let open_graph = |file: &str, cap: u64| -> Result<Option<_>, ReportError> {
            let path = dir.join(file);
            match input_file::open_capped(&path, cap) {
                Ok(f) => Ok(Some(f)),
                Err(InputError::NotFound) => Ok(None),
                Err(e) => Err(ReportError::Table(format!(
                    "{}: {e}",
                    crate::escape::path(&path)
                ))),
            }
        };
        // classes.csv: only a run whose clients send priority classes has
        // one.
        let classes_path = dir.join("classes.csv");
        let data = match input_file::read_capped(&classes_path, MAX_SUMMARY_BYTES) {
            Ok(bytes) => data.with_classes(Some(&bytes))?,
            Err(InputError::NotFound) => data,
            Err(e) => {
                return Err(ReportError::Table(format!(
                    "{}: {e}",
                    crate::escape::path(&classes_path)
                )));
            }
        };
        let services = open_graph("services.csv", MAX_SUMMARY_BYTES)?;
        let calls = open_graph("calls.csv", MAX_SUMMARY_BYTES)?;
        let timeseries = open_graph("services_timeseries.csv", MAX_TIMESERIES_BYTES)?;
        match (services, timeseries, calls) {
            (Some(services), Some(timeseries), Some(calls)) => data.with_graph(GraphSources {
                services,
                timeseries,
                calls,
            }),
            (None, None, None) => Ok(data),
            (s, t, c) => {
                let missing: Vec<&str> = [
                    (s.is_none(), "services.csv"),
                    (t.is_none(), "services_timeseries.csv"),
                    (c.is_none(), "calls.csv"),
                ]
                .iter()
                .filter(|(m, _)| *m)
                .map(|(_, f)| *f)
                .collect();
                Err(ReportError::Table(format!(
                    "{} has some of the services graph's tables but not {} (a run writes \
                     all three: was the folder changed?)",
                    crate::escape::path(dir),
                    missing.join(" or ")
                )))
            }
        }
    }

    /// Adds `classes.csv` (its bytes; `None`: the run has no classes),
    /// checked like the other tables when they were.
    pub fn with_classes(mut self, classes: Option<&[u8]>) -> Result<ChartData, ReportError> {
        if let Some(bytes) = classes {
            let mut check = self.checked.as_ref().map(|c| c.check(TableKind::Classes));
            let label = self
                .checked
                .as_ref()
                .map_or_else(|| "classes.csv".to_string(), |c| c.label("classes.csv"));
            let table = Table::parse_checked(bytes, check.as_mut()).map_err(|e| match e {
                ReportError::Table(m) if !m.starts_with(&label) => {
                    ReportError::Table(format!("{label}: {m}"))
                }
                other => other,
            })?;
            self.classes = Some(table);
        }
        Ok(self)
    }

    /// Adds the services graph read from its three tables (bytes, or
    /// any reader: each is streamed once), checked like the others when
    /// they were.
    pub fn with_graph(
        mut self,
        sources: GraphSources<impl Read, impl Read, impl Read>,
    ) -> Result<ChartData, ReportError> {
        let n = self.variants.len();
        self.graph = Some(GraphData::read(
            sources,
            &self.index,
            n,
            Bins {
                bucket_s: self.bucket_s,
                ..self.bins
            },
            self.checked.as_ref(),
            self.capacity.as_ref(),
        )?);
        Ok(self)
    }

    /// Builds the chart data from the tables' bytes and the resolved
    /// scenario's text (optional: without it, no incidents or
    /// description), taking them as they are.
    pub fn from_bytes(
        timeseries: &[u8],
        summary: &[u8],
        by_variant: &[u8],
        resolved_yaml: Option<&str>,
    ) -> Result<ChartData, ReportError> {
        let s = resolved_yaml.and_then(|y| scenario::load_str(y, "scenario.resolved.yaml").ok());
        ChartData::build(
            |bins, check| TimeSeries::read(timeseries, bins, check),
            summary,
            by_variant,
            s.as_ref(),
            None,
        )
    }

    /// Builds the chart data from the tables' bytes of a run of the
    /// scenario `s`, checked against `shape` (its runs: `RunShape::of(s)`,
    /// or fewer replicates) as `from_dir` checks a folder's; `folder`
    /// names the tables in messages.
    pub fn from_checked_bytes(
        timeseries: &[u8],
        summary: &[u8],
        by_variant: &[u8],
        s: &crate::scenario::Scenario,
        shape: RunShape,
        folder: Option<&Path>,
    ) -> Result<ChartData, ReportError> {
        ChartData::from_checked_source(|| Ok(timeseries), summary, by_variant, s, shape, folder)
    }

    /// `from_checked_bytes` with `timeseries.csv` read from what `open`
    /// opens (each time it is read: a file written as the runs finished),
    /// in one streaming pass.
    pub fn from_checked_source<R: Read>(
        open: impl Fn() -> Result<R, ReportError>,
        summary: &[u8],
        by_variant: &[u8],
        s: &crate::scenario::Scenario,
        shape: RunShape,
        folder: Option<&Path>,
    ) -> Result<ChartData, ReportError> {
        ChartData::build(
            |bins, check| TimeSeries::read(open()?, bins, check),
            summary,
            by_variant,
            Some(s),
            Some(Checked {
                shape,
                folder: folder.map(Path::to_path_buf),
            }),
        )
    }

    /// `read_ts(bins, check)` reads `timeseries.csv` into the points of
    /// `bins`, or with `None` only the extent of its times (to infer the
    /// bucket width and the run's length when neither the scenario nor the
    /// checked shape gives them), each row checked by `check` when given.
    fn build(
        read_ts: impl Fn(Option<Bins>, Option<&mut TableCheck<'_>>) -> Result<TimeSeries, ReportError>,
        summary: &[u8],
        by_variant: &[u8],
        scenario: Option<&crate::scenario::Scenario>,
        checked: Option<Checked>,
    ) -> Result<ChartData, ReportError> {
        let in_file = |file: &str| {
            let file = checked
                .as_ref()
                .map_or_else(|| file.to_string(), |c| c.label(file));
            move |e: ReportError| match e {
                ReportError::Table(m) if !m.starts_with(&file) => {
                    ReportError::Table(format!("{file}: {m}"))
                }
                other => other,
            }
        };
        let check = |kind: TableKind| checked.as_ref().map(|c| c.check(kind));
        let mut summary_check = check(TableKind::Summary);
        let summary = Table::parse_checked(summary, summary_check.as_mut())
            .map_err(in_file("summary.csv"))?;
        let by_variant = Table::parse_checked(by_variant, check(TableKind::ByVariant).as_mut())
            .map_err(in_file("summary_by_variant.csv"))?;
        let mut data = ChartData::default();
        if let Some(s) = scenario {
            data.name = s.name.clone();
            data.description = s.description.trim().to_string();
            data.slo = scenario::slo::objectives(s).map(|o| o.describe());
            let b = s.bucket().secs_f64();
            if b > 0.0 {
                data.bucket_s = b;
            }
            data.incidents = s
                .dependency
                .incidents
                .iter()
                .map(|i| Span {
                    start_s: i.start.secs_f64(),
                    end_s: i.end.secs_f64(),
                    label: format!("{:?}", i.kind).to_lowercase(),
                })
                .collect();
        }
        // The points: from the buckets the runs have and their variants,
        // which the checked shape gives, else a first pass over the table
        // (constant memory).
        let planned = checked
            .as_ref()
            .filter(|_| data.bucket_s > 0.0)
            .and_then(|c| planned_buckets(&c.shape, data.bucket_s));
        let bins = match (planned, &checked) {
            (Some(buckets), Some(c)) => {
                Bins::for_buckets(data.bucket_s, buckets, c.shape.variants.len())
            }
            _ => {
                let extent = read_ts(None, None)?.extent;
                if data.bucket_s <= 0.0 {
                    data.bucket_s = extent.bucket_s();
                }
                let variants = match &checked {
                    Some(c) => c.shape.variants.len(),
                    None => extent.variants,
                };
                Bins::for_buckets(data.bucket_s, extent.buckets(data.bucket_s), variants)
            }
        };
        data.bins = bins;
        let mut ts_check = check(TableKind::Timeseries);
        let ts = read_ts(Some(bins), ts_check.as_mut())?;
        if let (Some(s), Some(t)) = (&summary_check, &ts_check) {
            table_check::totals_agree(s, t).map_err(table_error)?;
        }
        interrupt::check()?;
        // Variant order: as the tables list them.
        let mut variants: Vec<String> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut add = |v: &str| {
            if !v.is_empty() && !seen.contains_key(v) {
                seen.insert(v.to_string(), variants.len());
                variants.push(v.to_string());
            }
        };
        for t in [&by_variant, &summary] {
            let col = t.col("variant");
            for r in &t.rows {
                add(col.and_then(|i| r.get(i)).unwrap_or(""));
            }
        }
        for v in &ts.names {
            add(v);
        }
        let capacities = first_capacities(&summary, &seen);
        let mut by_name: HashMap<&str, &[Series; 6]> = HashMap::new();
        for (name, series) in ts.names.iter().zip(&ts.series) {
            by_name.insert(name, series);
        }
        let empty: [Series; 6] = Default::default();
        data.series = variants
            .iter()
            .zip(capacities)
            .map(|(v, capacity)| {
                let acc = by_name.get(v.as_str()).copied().unwrap_or(&empty);
                variant_series(v, acc, capacity, bins.group)
            })
            .collect();
        data.capacity = scenario.and_then(|s| CapacityModels::of(s, &seen, variants.len()));
        data.index = seen;
        data.variants = variants;
        data.summary = summary;
        data.by_variant = by_variant;
        data.checked = checked;
        Ok(data)
    }

    /// The palette index of a variant.
    pub fn variant_index(&self, name: &str) -> usize {
        self.index.get(name).copied().unwrap_or(0)
    }

    /// The last time covered by the time series (end of the last bucket).
    pub fn t_end(&self) -> f64 {
        self.series
            .iter()
            .flat_map(|s| s.load.iter().chain(&s.offered))
            .map(|p| p.t + self.bucket_s)
            .fold(0.0, f64::max)
    }
}

/// Each variant's nominal capacity: the first `capacity_per_s` number in
/// its rows of `summary.csv`, when positive; in one pass over the rows.
fn first_capacities(summary: &Table, index: &HashMap<String, usize>) -> Vec<Option<f64>> {
    let mut first: Vec<Option<Option<f64>>> = vec![None; index.len()];
    let (variant, capacity) = (summary.col("variant"), summary.col("capacity_per_s"));
    for r in &summary.rows {
        let name = variant.and_then(|i| r.get(i)).unwrap_or("");
        let Some(&v) = index.get(name) else { continue };
        if first[v].is_none()
            && let Some(c) = capacity.and_then(|i| r.get(i)).and_then(parse_num)
        {
            first[v] = Some(Some(c));
        }
    }
    first
        .into_iter()
        .map(|c| c.flatten().filter(|c| *c > 0.0))
        .collect()
}

/// Buckets per run at most, in buckets of `bucket_s`, when the shape
/// gives every variant's (not for the OCC workload, whose runs last until
/// its clients are done).
fn planned_buckets(shape: &RunShape, bucket_s: f64) -> Option<u64> {
    let bucket_ns = bucket_s * 1e9;
    shape
        .variants
        .iter()
        .map(|v| {
            v.rows
                .map(|rows| (rows as f64 * v.bucket_ns as f64 / bucket_ns).ceil() as u64)
        })
        .try_fold(0u64, |most, rows| rows.map(|r| most.max(r)))
        .filter(|&most| most > 0)
}

/// A variant's six series from its accumulators read in groups of
/// `read_group` buckets (`Bins::group`).
fn variant_series(
    name: &str,
    acc: &[Series; 6],
    capacity_per_s: Option<f64>,
    read_group: usize,
) -> VariantSeries {
    let [load, offered, amplification, goodput, p50, p99] =
        [0, 1, 2, 3, 4, 5].map(|i| reduce(&acc[i]));
    let thinned = [&load, &offered, &amplification, &goodput, &p50, &p99]
        .iter()
        .map(|p| group_for(p.len()))
        .max()
        .unwrap_or(1);
    let group = read_group.max(1) * thinned;
    VariantSeries {
        name: name.to_string(),
        load: decimate(load),
        offered: decimate(offered),
        amplification: decimate(amplification),
        goodput: decimate(goodput),
        latency_p50_ms: decimate(p50),
        latency_p99_ms: decimate(p99),
        capacity_per_s,
        group,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "variant,replicate,t_s,offered,dependency_attempts,goodput,latency_p50_ms,latency_p99_ms\n\
        a,0,0,10,20,9,5,,\n\
        a,1,0,10,40,8,,\n\
        a,0,1,0,0,0,,\n\
        b,0,0,oops,NaN,1,2,3\n";
    const SUMMARY: &str = "variant,replicate,capacity_per_s\na,0,100\na,1,100\nb,0,\n";

    #[test]
    fn reduces_over_replicates_and_tolerates_odd_cells() {
        let d =
            ChartData::from_bytes(TS.as_bytes(), SUMMARY.as_bytes(), b"variant\n", None).unwrap();
        assert_eq!(d.variants, ["a", "b"]);
        assert_eq!(d.bucket_s, 1.0);
        let a = &d.series[0];
        assert_eq!(
            a.load[0],
            Point {
                t: 0.0,
                mean: 30.0,
                min: 20.0,
                max: 40.0
            }
        );
        assert_eq!(a.amplification.len(), 1, "no amplification without offers");
        assert_eq!(a.latency_p50_ms.len(), 1);
        assert!(a.latency_p99_ms.is_empty());
        assert_eq!(a.capacity_per_s, Some(100.0));
        let b = &d.series[1];
        assert!(b.load.is_empty() && b.amplification.is_empty());
        assert_eq!(b.capacity_per_s, None);
    }

    #[test]
    fn long_series_are_thinned_keeping_peaks_in_the_band() {
        let series: Vec<Point> = (0..100_000)
            .map(|i| {
                let t = i as f64 * 0.01;
                let mean = match i {
                    31_337 => 500.0,  // a one-bucket spike
                    77_777 => -300.0, // and a one-bucket dip
                    _ => (t * 0.7).sin() * 10.0,
                };
                Point {
                    t,
                    mean,
                    min: mean - 1.0,
                    max: mean + 1.0,
                }
            })
            .collect();
        let thin = decimate(series.clone());
        assert_eq!(thin.len(), MAX_POINTS);
        assert!(thin.windows(2).all(|w| w[0].t < w[1].t), "time order");
        // Groups of 50 points: each point is its group's first time, the
        // mean of its means, and the extremes of its band.
        let g = &series[50 * 626..50 * 627];
        let p = thin[626];
        assert_eq!(p.t, g[0].t);
        assert_eq!(p.mean, g.iter().map(|q| q.mean).sum::<f64>() / 50.0);
        let g_min = g.iter().map(|q| q.min).fold(f64::INFINITY, f64::min);
        assert_eq!((p.min, p.max), (g_min, 501.0));
        let band_max = thin.iter().map(|p| p.max).fold(f64::MIN, f64::max);
        let band_min = thin.iter().map(|p| p.min).fold(f64::MAX, f64::min);
        assert_eq!((band_min, band_max), (-301.0, 501.0));
        // A short series is left alone.
        let short = series[..MAX_POINTS].to_vec();
        assert_eq!(decimate(short.clone()), short);
    }

    #[test]
    fn a_long_run_is_read_in_groups_of_buckets_with_the_group_extremes_in_the_band() {
        // Two replicates of 5 000 buckets of 100 ms (the width inferred
        // from the rows): read in groups of 3 buckets, 1 667 points, never
        // one accumulator per bucket.
        let mut ts = String::from(
            "variant,replicate,t_s,offered,dependency_attempts,goodput,latency_p50_ms,latency_p99_ms\n",
        );
        let attempts = |r: u32, k: u32| f64::from(k % 7) + f64::from(r) * 10.0;
        for r in 0..2 {
            for k in 0..5_000u32 {
                let t = f64::from(k) / 10.0;
                let p99 = if k == 4_001 && r == 1 { 900.0 } else { 50.0 };
                // The first bucket of each group: no p50 for replicate 0,
                // 40 ms for replicate 1; else 20 ms.
                let p50 = match (k % 3, r) {
                    (0, 0) => String::new(),
                    (0, _) => "40".into(),
                    _ => "20".into(),
                };
                ts.push_str(&format!("a,{r},{t},10,{},9,{p50},{p99}\n", attempts(r, k)));
            }
        }
        let d = ChartData::from_bytes(ts.as_bytes(), b"variant\n", b"variant\n", None).unwrap();
        assert_eq!(d.bucket_s, 0.1);
        assert_eq!(d.bins.group, 3);
        let a = &d.series[0];
        assert_eq!(a.group, 3);
        assert_eq!(a.load.len(), 1_667);
        // Group 10: buckets 30, 31, 32 of both replicates, pooled; rates
        // per second over 100 ms buckets.
        let p = a.load[10];
        assert!((p.t - 3.0).abs() < 1e-12);
        let values: Vec<f64> = (0..2)
            .flat_map(|r| (30..33).map(move |k| attempts(r, k) / 0.1))
            .collect();
        let mean = values.iter().sum::<f64>() / 6.0;
        assert!((p.mean - mean).abs() < 1e-9, "{} vs {mean}", p.mean);
        assert_eq!(p.min, values.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(
            p.max,
            values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        );
        // The one-bucket p99 spike of one replicate survives in its
        // group's band, and moves the group's mean by a sixth of it.
        let spike = a.latency_p99_ms[4_001 / 3];
        assert_eq!(spike.max, 900.0);
        assert!((spike.mean - (50.0 * 5.0 + 900.0) / 6.0).abs() < 1e-9);
        // A group whose first bucket lacks one replicate's value still
        // starts at its first bucket, and its mean is that of its five
        // values (40, 20, 20, 20, 20), not the mean of its buckets' means
        // (26.7).
        let p50 = a.latency_p50_ms[7];
        assert!((p50.t - 2.1).abs() < 1e-12);
        assert!((p50.mean - 24.0).abs() < 1e-12, "{}", p50.mean);
        // What is held while reading: one accumulator per group.
        let bins = Bins::for_buckets(0.1, 5_000, 1);
        let read = TimeSeries::read(ts.as_bytes(), Some(bins), None).unwrap();
        assert!(read.series[0].iter().all(|s| s.len() <= 1_667));
        // A run short enough keeps every bucket.
        let d =
            ChartData::from_bytes(TS.as_bytes(), SUMMARY.as_bytes(), b"variant\n", None).unwrap();
        assert_eq!(d.bins.group, 1);
    }

    #[test]
    fn many_variants_share_the_points_of_a_chart() {
        // 300 variants of 1 000 one-second buckets: 300 000 rows, three
        // times the points a table's series may hold together. Each
        // variant kept all its buckets before (six series of 300 000
        // accumulators in all, 1.5 GB for a 2 000-point sweep); they are
        // now read in groups of 3 buckets, 334 points a variant.
        let mut ts = String::from(
            "variant,replicate,t_s,offered,dependency_attempts,goodput,latency_p50_ms,latency_p99_ms\n",
        );
        let attempts = |v: u32, k: u32| f64::from(v + k % 7);
        for v in 0..300u32 {
            for k in 0..1_000u32 {
                ts.push_str(&format!("v{v},0,{k},10,{},9,20,50\n", attempts(v, k)));
            }
        }
        let d = ChartData::from_bytes(ts.as_bytes(), b"variant\n", b"variant\n", None).unwrap();
        assert_eq!(d.bins.group, 3);
        assert_eq!(d.series.len(), 300);
        let held = |bins: Bins| -> usize {
            let read = TimeSeries::read(ts.as_bytes(), Some(bins), None).unwrap();
            read.series.iter().flatten().map(Series::len).sum()
        };
        assert!(
            held(d.bins) <= 6 * (MAX_CHART_POINTS + 300),
            "{}",
            held(d.bins)
        );
        assert_eq!(held(Bins::every_bucket(1.0)), 6 * 300_000, "the rows' own");
        // Each variant's line: the mean of each group of three buckets,
        // at the group's start.
        let v7 = &d.series[7];
        assert_eq!((v7.group, v7.load.len()), (3, 334));
        let p = v7.load[100];
        assert_eq!(p.t, 300.0);
        let values = [300, 301, 302].map(|k| attempts(7, k));
        assert_eq!(p.mean, values.iter().sum::<f64>() / 3.0);
        assert_eq!((p.min, p.max), (7.0, 13.0), "{values:?}");
        assert_eq!(v7.load[333].t, 999.0, "the last group has one bucket");
    }

    #[test]
    fn the_points_of_a_table_are_shared_by_its_series() {
        // A few variants keep every bucket up to MAX_POINTS, as before.
        assert_eq!(group_for_series(1_000, 50), 1);
        assert_eq!(group_for_series(2_000, 50), 1);
        assert_eq!(group_for_series(100_000, 20), 50);
        // More series share MAX_CHART_POINTS.
        assert_eq!(group_for_series(2_000, 51), 2);
        assert_eq!(group_for_series(1_000, 100), 1);
        assert_eq!(group_for_series(1_000, 101), 2);
        assert_eq!(group_for_series(1_000, 2_000), 20);
        // At least one point a series, and nothing to group when the
        // buckets are not known.
        assert_eq!(group_for_series(100, 100_000), 100);
        assert_eq!(group_for_series(100, usize::MAX), 100);
        assert_eq!(group_for_series(0, 1_000_000), 1);
        for (buckets, series) in [(1_000u64, 2_000usize), (7_919, 333), (100, 100_000)] {
            let g = group_for_series(buckets, series);
            let points = (buckets as usize).div_ceil(g) * series;
            assert!(points <= MAX_CHART_POINTS + series, "{buckets} × {series}");
        }
        // A table of more series over the same buckets groups more.
        let bins = Bins::for_buckets(1.0, 1_000, 40);
        assert_eq!(bins.group, 1);
        assert_eq!(bins.shared_by(40).group, 1);
        assert_eq!(bins.shared_by(40 * 5).group, 2);
    }

    #[test]
    fn empty_tables_give_empty_data() {
        let d = ChartData::from_bytes(b"", b"", b"", Some("not: [yaml")).unwrap();
        assert!(d.variants.is_empty());
        assert_eq!(d.t_end(), 0.0);
    }
}
