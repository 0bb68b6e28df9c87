//! Identities between the cells of one table row that hold in every run
//! stormsim makes, exactly as the writer computes them (`metrics::table`,
//! `metrics::columns`), checked by [`super::table_check`] after each cell
//! has its column's type:
//!
//! - `timeseries.csv`: `attempts` is the outermost layer's attempts (the
//!   first `attempts_<layer>` column: the recorder counts an attempt in
//!   `attempts` only at layer 0); a bucket with 0 `succeeded` has a
//!   `goodput` of 0;
//! - `summary.csv`: a run with 0 `succeeded` has a `goodput` of 0;
//!   `amplification` is `dependency_attempts / logical_requests`, within
//!   the rounding to six decimals (and empty without a logical request).
//!
//! - between the two tables: a run's totals in `summary.csv` are the
//!   sums of its buckets in `timeseries.csv` ([`TOTALS`]: every bucket
//!   counts what ended in it, and a run ends in its last bucket; a run a
//!   guard rail stopped has empty cells after the stop, which add
//!   nothing), checked by [`Totals::agree`] once both were read.
//!
//! Not checked, because they do not hold exactly for every run:
//! `dependency_attempts` against the innermost layer's attempts and the
//! probes (the focus service also counts pool connects, and in a graph
//! any caller's attempts), and counters of `services_timeseries.csv`
//! against each other (a request arrives in one bucket and is served in
//! a later one).
//!
//! A problem is the column (0-based) and what is wrong; the caller adds
//! the file, line and run.

use csv::StringRecord;

/// The slack of a ratio written rounded to six decimals: half the last
/// decimal, and a little more for the float's own error.
fn close(written: f64, exact: f64) -> bool {
    (written - exact).abs() <= 5e-7 + 1e-9 + exact.abs() * 1e-12
}

fn col(header: &[String], name: &str) -> Option<usize> {
    header.iter().position(|h| h == name)
}

fn number(rec: &StringRecord, i: usize) -> Option<f64> {
    rec.get(i).filter(|t| !t.is_empty())?.parse::<f64>().ok()
}

fn whole(rec: &StringRecord, i: usize) -> Option<u64> {
    rec.get(i).filter(|t| !t.is_empty())?.parse::<u64>().ok()
}

/// A `goodput` above 0 where nothing succeeded.
fn goodput(
    header: &[String],
    rec: &StringRecord,
    succeeded: Option<u64>,
) -> Result<(), (usize, String)> {
    if let (Some(0), Some(gi)) = (succeeded, col(header, "goodput"))
        && let Some(g) = number(rec, gi).filter(|&g| g > 0.0)
    {
        return Err((
            gi,
            format!(
                "goodput is {}, but succeeded is 0; goodput is the requests that succeeded \
                 per second",
                crate::metrics::columns::format_float(g)
            ),
        ));
    }
    Ok(())
}

/// The identities of a `timeseries.csv` row; `counts`: its count cells,
/// parsed (None: empty, or not a count column).
pub fn bucket(
    header: &[String],
    rec: &StringRecord,
    counts: &[Option<u64>],
) -> Result<(), (usize, String)> {
    let count = |name: &str| col(header, name).and_then(|i| counts.get(i).copied().flatten());
    goodput(header, rec, count("succeeded"))?;
    let outer = header.iter().position(|h| h.starts_with("attempts_"));
    if let (Some(ai), Some(li)) = (col(header, "attempts"), outer)
        && let (Some(a), Some(l)) = (counts[ai], counts[li])
        && a != l
    {
        return Err((
            ai,
            format!(
                "attempts is {a}, but {} = {l}; attempts counts the attempts of the \
                 outermost layer",
                crate::escape::escape(&header[li])
            ),
        ));
    }
    Ok(())
}

/// The identities of a `summary.csv` row.
pub fn summary(header: &[String], rec: &StringRecord) -> Result<(), (usize, String)> {
    let get = |name: &str| col(header, name).and_then(|i| whole(rec, i));
    goodput(header, rec, get("succeeded"))?;
    if let (Some(ai), Some(lr), Some(da)) = (
        col(header, "amplification"),
        get("logical_requests"),
        get("dependency_attempts"),
    ) {
        let written = number(rec, ai);
        let bad = match (lr, written) {
            (0, Some(_)) => true,
            (0, None) => false,
            (_, None) => true,
            (_, Some(w)) => !close(w, da as f64 / lr as f64),
        };
        if bad {
            let shown = rec.get(ai).unwrap_or("");
            let exact = if lr == 0 {
                "empty (no logical request)".to_string()
            } else {
                crate::metrics::columns::format_float(da as f64 / lr as f64)
            };
            return Err((
                ai,
                format!(
                    "amplification is `{}`, but dependency_attempts / logical_requests = \
                     {da} / {lr} = {exact}",
                    crate::escape::escape(shown)
                ),
            ));
        }
    }
    Ok(())
}

/// The counters `summary.csv` gives for a whole run and `timeseries.csv`
/// for each bucket: (the summary's column, the time series' column).
pub const TOTALS: [(&str, &str); 10] = [
    ("logical_requests", "offered"),
    ("succeeded", "succeeded"),
    ("failed", "failed"),
    ("retries", "retries"),
    ("dependency_attempts", "dependency_attempts"),
    ("shed", "shed"),
    ("failed_timeout", "failed_timeout"),
    ("failed_connection", "failed_connection"),
    ("failed_status", "failed_status"),
    ("failed_deadline", "failed_deadline"),
];

/// One run's [`TOTALS`] as one table gives them (`None`: the column is
/// absent or the cell empty), and the line it starts at.
#[derive(Clone, Copy, Debug)]
pub struct RunTotal {
    pub line: u64,
    pub values: [Option<u64>; TOTALS.len()],
}

/// The [`TOTALS`] of each run of one table, in the table's run order:
/// from `summary.csv` its cells, from `timeseries.csv` the sums of the
/// run's buckets.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// The position of each of [`TOTALS`]' columns in the header.
    cols: [Option<usize>; TOTALS.len()],
    /// Whether the table is `summary.csv` (a run's row gives its totals)
    /// rather than `timeseries.csv` (its buckets add up to them).
    summary: bool,
    runs: Vec<RunTotal>,
}

impl Totals {
    /// The totals of a `summary.csv` (`summary`) or a `timeseries.csv`
    /// with this header.
    pub fn new(header: &[String], summary: bool) -> Totals {
        Totals {
            cols: TOTALS.map(|(total, bucket)| col(header, if summary { total } else { bucket })),
            summary,
            runs: Vec::new(),
        }
    }

    /// A new run starts at `line`.
    pub fn start(&mut self, line: u64) {
        let values = self.cols.map(|c| c.map(|_| 0));
        self.runs.push(RunTotal { line, values });
    }

    /// Adds a row of the current run: a summary's row gives its cells, a
    /// bucket adds its counts (an empty cell adds nothing).
    pub fn add(&mut self, rec: &StringRecord) {
        let Some(run) = self.runs.last_mut() else {
            return;
        };
        for (value, c) in run.values.iter_mut().zip(self.cols) {
            let Some(i) = c else { continue };
            let cell = whole(rec, i);
            if self.summary {
                *value = cell;
            } else if let (Some(sum), Some(n)) = (value.as_mut(), cell) {
                *sum = sum.saturating_add(n);
            }
        }
    }

    /// The first run whose summary total is not the sum of its buckets:
    /// the run's index, the summary's column (in `summary`'s header), the
    /// total and the sum. Runs or columns one table lacks are skipped
    /// (the tables' own checks name a missing run).
    pub fn agree(summary: &Totals, buckets: &Totals) -> Result<(), Mismatch> {
        for (run, (s, b)) in summary.runs.iter().zip(&buckets.runs).enumerate() {
            for (k, (&total, &sum)) in s.values.iter().zip(&b.values).enumerate() {
                if let (Some(total), Some(sum), Some(column)) = (total, sum, summary.cols[k])
                    && total != sum
                {
                    return Err(Mismatch {
                        run,
                        line: s.line,
                        column,
                        first_bucket_line: b.line,
                        summary_name: TOTALS[k].0,
                        bucket_name: TOTALS[k].1,
                        total,
                        sum,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A run whose total in `summary.csv` is not the sum of its buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The run's index in the tables' run order.
    pub run: usize,
    /// The summary's row and column (0-based) holding the total.
    pub line: u64,
    pub column: usize,
    /// The line of the run's first bucket in `timeseries.csv`.
    pub first_bucket_line: u64,
    pub summary_name: &'static str,
    pub bucket_name: &'static str,
    pub total: u64,
    pub sum: u64,
}
