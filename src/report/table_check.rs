//! The tables of a run read back (`plot`, `merge`, and `run` itself, which
//! draws its charts from the bytes it writes), checked row by row before
//! anything is drawn or merged from them. Nothing in a folder is trusted:
//! a table may have been emptied, cut, edited or replaced.
//!
//! What a table must be, as stormsim writes it:
//!
//! - a header: the table's leading columns in order (`variant, replicate,
//!   t_s` for `timeseries.csv`, ...), the contract columns of README.md
//!   ("Outputs"), no empty, repeated or unprintable name, and exactly the
//!   scenario's `sweep.<path>` columns, in order;
//! - rows of as many fields as the header, with no control character (a
//!   line break inside a cell is an unterminated quote);
//! - cells of their column's type: numbers as stormsim writes them
//!   (decimal digits, at most six decimals, no exponent, `inf` or `NaN`;
//!   empty for "no value"), `true`/`false`, whole numbers for `replicate`
//!   and `seed`, 16 hex digits for `event_digest`, names that are not
//!   empty;
//! - the runs of the scenario ([`super::shape::RunShape`]), or of a shard
//!   ([`Runs::Only`]), in order, each run's rows together: one row per run
//!   in `summary.csv`, one per variant (with its number of replicates) in
//!   `summary_by_variant.csv`, one per bucket in `timeseries.csv` with `t_s`
//!   the bucket's start, any number in the graph tables (with `t_s` one of
//!   the run's buckets in `services_timeseries.csv`); and each row's
//!   `sweep.` cells its variant's swept values.
//!
//! The first problem is reported with the file, the line, and the column
//! by number and name ([`TableError`]).

use std::collections::HashSet;
use std::fmt;

use csv::StringRecord;

use super::shape::RunShape;
use super::table_identities::Totals;
use crate::escape::{escape, is_unsafe_char};
// The largest figure a table may hold (the writer holds its ratios to it).
use crate::metrics::columns::MAX_FIGURE;

/// The tables of a run folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableKind {
    Timeseries,
    Summary,
    ByVariant,
    Services,
    ServicesTimeseries,
    Calls,
    Replicas,
    Classes,
}

/// The contract columns of `timeseries.csv` (README.md, "Outputs"), first
/// in every header.
const TIMESERIES_CONTRACT: &[&str] = &[
    "variant",
    "replicate",
    "t_s",
    "offered",
    "attempts",
    "retries",
    "dependency_attempts",
    "succeeded",
    "failed",
    "failed_timeout",
    "failed_connection",
    "failed_status",
    "failed_deadline",
    "shed",
    "queue_depth",
    "in_flight",
    "utilization",
    "goodput",
    "latency_p50_ms",
    "latency_p99_ms",
    "orphaned",
];

/// The contract columns of `summary.csv`, first in every header.
const SUMMARY_CONTRACT: &[&str] = &[
    "variant",
    "replicate",
    "seed",
    "logical_requests",
    "succeeded",
    "failed",
    "success_rate",
    "dependency_attempts",
    "retries",
    "retry_ratio",
    "retry_delay_p50_ms",
    "retry_delay_p99_ms",
    "amplification",
    "peak_amplification",
    "goodput",
    "latency_mean_ms",
    "latency_p50_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "dependency_utilization",
    "dependency_queue_wait_mean_ms",
    "peak_load_ratio",
    "recovery_time_s",
    "recovered",
    "orphaned_work_s",
    "events",
];

/// How many rows a table has per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PerRun {
    /// Exactly one.
    One,
    /// One per bucket of the run.
    Buckets,
    /// Any number, none included.
    Any,
}

impl TableKind {
    /// The table's file name.
    pub fn file(self) -> &'static str {
        match self {
            TableKind::Timeseries => "timeseries.csv",
            TableKind::Summary => "summary.csv",
            TableKind::ByVariant => "summary_by_variant.csv",
            TableKind::Services => "services.csv",
            TableKind::ServicesTimeseries => "services_timeseries.csv",
            TableKind::Calls => "calls.csv",
            TableKind::Replicas => "replicas.csv",
            TableKind::Classes => "classes.csv",
        }
    }

    /// The columns the header starts with, in order.
    fn lead(self) -> &'static [&'static str] {
        match self {
            TableKind::Timeseries => TIMESERIES_CONTRACT,
            TableKind::Summary => SUMMARY_CONTRACT,
            TableKind::ByVariant => &["variant", "replicates"],
            TableKind::Services => &["variant", "replicate", "service"],
            TableKind::ServicesTimeseries => &["variant", "replicate", "t_s", "service"],
            TableKind::Calls => &["variant", "replicate", "caller", "callee", "call"],
            TableKind::Replicas => &["variant", "replicate", "service", "replica"],
            TableKind::Classes => &["variant", "replicate", "class"],
        }
    }

    /// Further columns the header must have (those the report reads).
    fn required(self) -> &'static [&'static str] {
        match self {
            TableKind::Timeseries => &[],
            TableKind::Summary => &["aborted", "capacity_per_s"],
            TableKind::ByVariant => &["aborted_runs", "recovered_fraction"],
            TableKind::Services => &[
                "attempts",
                "served",
                "refused",
                "shed",
                "amplification",
                "peak_load_ratio",
                "utilization",
                "capacity_per_s",
            ],
            TableKind::ServicesTimeseries => &["attempts"],
            TableKind::Calls => &[
                "calls",
                "attempts",
                "retries",
                "failed",
                "amplification",
                "orphaned_attempts",
            ],
            TableKind::Replicas => &["attempts"],
            TableKind::Classes => &[
                "requests",
                "succeeded",
                "failed",
                "shed",
                "open_at_end",
                "hung_at_end",
                "success_rate",
                "latency_p99_ms",
            ],
        }
    }

    fn per_run(self) -> PerRun {
        match self {
            TableKind::Timeseries => PerRun::Buckets,
            TableKind::Summary | TableKind::ByVariant => PerRun::One,
            TableKind::Services
            | TableKind::ServicesTimeseries
            | TableKind::Calls
            | TableKind::Replicas
            | TableKind::Classes => PerRun::Any,
        }
    }
}

/// The runs a table holds, in order.
#[derive(Clone, Copy, Debug)]
pub enum Runs<'a> {
    /// Every run of the scenario (a run's folder).
    All,
    /// These runs (`k = variant index × replicates + replicate`): a
    /// shard's.
    Only(&'a [usize]),
}

/// A problem in a table: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    /// The file as the message names it.
    pub file: String,
    /// 1-based; the header is line 1.
    pub line: u64,
    /// The column: 1-based number and name.
    pub column: Option<(usize, String)>,
    pub message: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: line {}", self.file, self.line)?;
        if let Some((n, name)) = &self.column {
            write!(f, ", column {n} ({})", escape(name))?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for TableError {}

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    /// The run's variant (the first column).
    Variant,
    /// A whole number (`replicate`, `replicates`, `seed`).
    Whole,
    /// A number of seconds from the start (`t_s`).
    Time,
    /// A number from 0 to `MAX_FIGURE`, or empty.
    Number,
    /// A fraction: a number from 0 to 1, or empty.
    Fraction,
    /// A budget's level: a number of either sign (a budget in debt) up to
    /// `MAX_FIGURE` in size, or empty.
    Level,
    /// `true`, `false`, or empty.
    Bool,
    /// A recovery verdict: `true`, `false`, `undecided` (the run ended too
    /// soon after the incident to tell), or empty (nothing to judge).
    Verdict,
    /// Text (or empty).
    Text,
    /// A name (not empty).
    Name,
    /// 16 lowercase hex digits.
    Digest,
    /// The value of the swept path `params[i]`.
    Sweep(usize),
}

fn column_kind(name: &str) -> Col {
    match name {
        "variant" => Col::Variant,
        "replicate" | "replicates" | "seed" => Col::Whole,
        "t_s" => Col::Time,
        "recovered" => Col::Verdict,
        "slo_pass" => Col::Bool,
        "aborted" | "slo_failed" | "call" => Col::Text,
        "service" | "caller" | "callee" | "class" => Col::Name,
        "event_digest" => Col::Digest,
        n if is_fraction(n) => Col::Fraction,
        n if n.starts_with("budget_level_") => Col::Level,
        _ => Col::Number,
    }
}

/// Whether the column `name` holds a fraction (0 to 1): success rates,
/// ratios of a part to its whole, fractions of runs and of breakers
/// (with their `_mean` over a variant's runs).
fn is_fraction(name: &str) -> bool {
    let base = name.strip_suffix("_mean").unwrap_or(name);
    matches!(
        base,
        "success_rate"
            | "success_rate_outside_incidents"
            | "retry_ratio"
            | "baseline_success_ratio"
            | "recovered_fraction"
            | "slo_pass_fraction"
            // Busy time of the worker time that may be busy (the writer
            // keeps it within [0, 1]: `metrics::table`, `metrics::services`).
            | "utilization"
            | "dependency_utilization"
    ) || base.starts_with("breaker_open_")
}

/// At most this many characters of a cell are quoted in a message.
const QUOTED: usize = 40;

fn quoted(text: &str) -> String {
    let mut cut: String = text.chars().take(QUOTED).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("`{}`", escape(&cut))
}

/// Whether `text` is a number as stormsim writes one: an optional minus,
/// digits, and at most six decimals (how large it may be is its column's
/// limit: [`beyond_figures`]).
fn is_number(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    all_digits(int) && frac.is_none_or(|f| all_digits(f) && f.len() <= 6)
}

/// Whether the number `text` ([`is_number`]) is larger in size than
/// [`MAX_FIGURE`]; its digits are counted first, so that a number of any
/// length is judged without parsing it.
fn beyond_figures(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let int = digits.split('.').next().unwrap_or(digits);
    let int = int.trim_start_matches('0');
    int.len() > 16 || text.parse::<f64>().is_ok_and(|v| v.abs() > MAX_FIGURE)
}

/// Why `text` is not a cell of a column of kind `col` (None: it is).
fn cell_problem(col: Col, text: &str) -> Option<String> {
    if text.chars().any(is_unsafe_char) {
        return Some(
            "holds a control character or a line break (an unterminated quote?), which \
             stormsim never writes"
                .to_string(),
        );
    }
    let bad = |what: &str| Some(format!("expected {what}, got {}", quoted(text)));
    match col {
        Col::Number | Col::Level if !text.is_empty() && !is_number(text) => bad(
            "a number (digits with at most six decimals, or empty for no value; no \
             exponent, inf or NaN)",
        ),
        Col::Number | Col::Fraction if !text.is_empty() && text.starts_with('-') => {
            bad("a number of 0 or more (stormsim writes no negative figure; empty for no value)")
        }
        Col::Number | Col::Level if !text.is_empty() && beyond_figures(text) => {
            bad("a number up to 10^15 (no run within stormsim's limits reaches more)")
        }
        Col::Fraction if !text.is_empty() && !is_number(text) => bad(
            "a number from 0 to 1 (a fraction: digits with at most six decimals, or empty for no value)",
        ),
        Col::Fraction if text.parse::<f64>().is_ok_and(|v| v > 1.0) => {
            bad("a number from 0 to 1 (a fraction; or empty for no value)")
        }
        Col::Time if !is_number(text) || text.starts_with('-') => {
            bad("a time in seconds from the start (a number, 0 or more)")
        }
        Col::Time if beyond_figures(text) => bad(
            "a time in seconds from the start up to 10^15 (no run within stormsim's limits lasts longer)",
        ),
        Col::Whole if !text.bytes().all(|b| b.is_ascii_digit()) || text.parse::<u64>().is_err() => {
            bad("a whole number from 0 to 18446744073709551615")
        }
        Col::Bool if !matches!(text, "" | "true" | "false") => {
            bad("`true`, `false`, or empty for no value")
        }
        Col::Verdict if !matches!(text, "" | "true" | "false" | "undecided") => {
            bad("`true`, `false`, `undecided`, or empty for no value")
        }
        Col::Digest
            if text.len() != 16
                || !text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
        {
            bad("16 lowercase hex digits")
        }
        Col::Variant | Col::Name if text.is_empty() => Some("is empty; expected a name".into()),
        _ => None,
    }
}

/// Checks one table, fed its header then its rows (see the module's
/// documentation).
pub struct TableCheck<'a> {
    kind: TableKind,
    file: String,
    shape: &'a RunShape,
    runs: Runs<'a>,
    header: Vec<String>,
    cols: Vec<Col>,
    /// The run whose rows come now (an index into the table's runs), and
    /// its rows so far (0: none yet).
    at: usize,
    rows_in: u64,
    line: u64,
    /// The position of `t_s`, for the time tables.
    time: Option<usize>,
    /// The services of the current run's first bucket, in order
    /// (`services_timeseries.csv`: every bucket lists them again), and
    /// whether that bucket is complete.
    bucket_services: Vec<String>,
    first_bucket_done: bool,
    /// The services (call edges) of the current run so far.
    names_seen: HashSet<String>,
    /// `timeseries.csv`: the current run's `open_requests` at the end of
    /// its last bucket with cells (0 before its first).
    open_before: u64,
    /// `summary.csv` and `timeseries.csv`: each run's totals, for
    /// [`totals_agree`].
    totals: Option<Totals>,
}

/// Whether the `timeseries.csv` column `name` counts things (requests,
/// attempts, messages: a whole number), as the runner writes them.
fn is_count(name: &str) -> bool {
    const COUNTS: &[&str] = &[
        "offered",
        "attempts",
        "retries",
        "dependency_attempts",
        "succeeded",
        "failed",
        "shed",
        "orphaned",
        "blackholed",
        "queue_timeouts",
        "open_requests",
        "commits",
        "duplicate_side_effects",
        "ambiguous_successes",
        "deduplicated",
        "cancelled",
        "probes",
        "messages",
        "deliveries",
        "redeliveries",
        "duplicate_deliveries",
        "processed",
        "dead_lettered",
    ];
    const PER_LAYER: &[&str] = &[
        "failed_",
        "attempts_",
        "retries_",
        "budget_exhausted_",
        "throttled_",
        "breaker_rejected_",
        "orphaned_attempts_",
    ];
    COUNTS.contains(&name) || PER_LAYER.iter().any(|p| name.starts_with(p))
}

impl<'a> TableCheck<'a> {
    /// A check of the table `kind`, named `file` in messages.
    pub fn new(kind: TableKind, file: String, shape: &'a RunShape, runs: Runs<'a>) -> Self {
        TableCheck {
            kind,
            file,
            shape,
            runs,
            header: Vec::new(),
            cols: Vec::new(),
            at: 0,
            rows_in: 0,
            line: 1,
            time: None,
            bucket_services: Vec::new(),
            first_bucket_done: false,
            names_seen: HashSet::new(),
            open_before: 0,
            totals: None,
        }
    }

    /// The table's name in messages.
    pub fn file(&self) -> &str {
        &self.file
    }

    fn error(&self, column: Option<usize>, message: impl Into<String>) -> TableError {
        TableError {
            file: self.file.clone(),
            line: self.line,
            column: column.map(|i| (i + 1, self.header.get(i).cloned().unwrap_or_default())),
            message: message.into(),
        }
    }

    /// The number of runs (of variants, for `summary_by_variant.csv`).
    fn run_count(&self) -> usize {
        match (self.kind, self.runs) {
            (TableKind::ByVariant, _) => self.shape.variants.len(),
            (_, Runs::All) => self.shape.items(),
            (_, Runs::Only(list)) => list.len(),
        }
    }

    /// The variant and replicate of the table's `i`-th run (no replicate
    /// for `summary_by_variant.csv`).
    fn run(&self, i: usize) -> (usize, Option<u32>) {
        match (self.kind, self.runs) {
            (TableKind::ByVariant, _) => (i, None),
            (_, Runs::All) => {
                let (v, r) = self.shape.item(i);
                (v, Some(r))
            }
            (_, Runs::Only(list)) => {
                let (v, r) = self.shape.item(list[i]);
                (v, Some(r))
            }
        }
    }

    fn describe(&self, i: usize) -> String {
        let (v, r) = self.run(i);
        let name = escape(&self.shape.variants[v].name).into_owned();
        match r {
            Some(r) => format!("the run of variant `{name}`, replicate {r}"),
            None => format!("the row of variant `{name}`"),
        }
    }

    fn is_run(&self, i: usize, rec: &StringRecord) -> bool {
        let (v, r) = self.run(i);
        rec.get(0) == Some(self.shape.variants[v].name.as_str())
            && r.is_none_or(|r| rec.get(1) == Some(r.to_string().as_str()))
    }

    /// Checks the header (line 1).
    pub fn header(&mut self, rec: &StringRecord) -> Result<(), TableError> {
        self.line = 1;
        self.header = rec.iter().map(str::to_string).collect();
        if self.header.iter().all(String::is_empty) {
            let lead = self.kind.lead();
            return Err(self.error(
                None,
                format!(
                    "empty: expected the header of a table stormsim writes (its first \
                     columns: {}, ...)",
                    lead[..lead.len().min(3)].join(", ")
                ),
            ));
        }
        for (i, name) in self.header.iter().enumerate() {
            if name.is_empty() || name.chars().any(is_unsafe_char) {
                return Err(self.error(Some(i), format!("{} is not a column name", quoted(name))));
            }
            if self.header[..i].contains(name) {
                return Err(self.error(Some(i), "the column is given twice"));
            }
        }
        for (i, want) in self.kind.lead().iter().enumerate() {
            if self.header.get(i).map(String::as_str) != Some(*want) {
                return Err(self.error(
                    Some(i.min(self.header.len().saturating_sub(1))),
                    format!(
                        "expected the column `{want}` here (column {} of those every {} \
                         starts with, as README.md lists them)",
                        i + 1,
                        self.kind.file()
                    ),
                ));
            }
        }
        for want in self.kind.required() {
            if !self.header.iter().any(|h| h == want) {
                return Err(self.error(None, format!("no column `{want}`")));
            }
        }
        let sweeps: Vec<&str> = self
            .header
            .iter()
            .filter_map(|h| h.strip_prefix("sweep."))
            .collect();
        if sweeps != self.shape.params {
            let expected = if self.shape.params.is_empty() {
                "none: the scenario sweeps nothing".to_string()
            } else {
                self.shape
                    .params
                    .iter()
                    .map(|p| format!("sweep.{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(self.error(
                None,
                format!(
                    "the sweep columns are not the scenario's (expected {})",
                    escape(&expected)
                ),
            ));
        }
        self.cols = self
            .header
            .iter()
            .map(|h| match h.strip_prefix("sweep.") {
                Some(p) => Col::Sweep(self.shape.params.iter().position(|q| q == p).unwrap_or(0)),
                None => column_kind(h),
            })
            .collect();
        self.time = self.header.iter().position(|h| h == "t_s");
        self.totals = match self.kind {
            TableKind::Summary => Some(Totals::new(&self.header, true)),
            TableKind::Timeseries => Some(Totals::new(&self.header, false)),
            _ => None,
        };
        Ok(())
    }

    /// Checks the next row.
    pub fn row(&mut self, rec: &StringRecord) -> Result<(), TableError> {
        self.line = rec.position().map_or(self.line + 1, |p| p.line());
        for (i, text) in rec.iter().enumerate() {
            let col = self.cols.get(i).copied().unwrap_or(Col::Text);
            if let Some(why) = cell_problem(col, text).filter(|_| text.chars().any(is_unsafe_char))
            {
                return Err(self.error(Some(i).filter(|&i| i < self.header.len()), why));
            }
        }
        if rec.len() != self.header.len() {
            return Err(self.error(
                None,
                format!(
                    "{} fields, but the header has {} columns",
                    rec.len(),
                    self.header.len()
                ),
            ));
        }
        for (i, (text, &col)) in rec.iter().zip(&self.cols).enumerate() {
            if let Some(why) = cell_problem(col, text) {
                return Err(self.error(Some(i), why));
            }
        }
        self.place(rec)?;
        let (v, r) = self.run(self.at);
        let variant = &self.shape.variants[v];
        for (i, (text, &col)) in rec.iter().zip(&self.cols).enumerate() {
            if let Col::Sweep(p) = col {
                let want = variant.param(&self.shape.params[p]);
                if text != want {
                    return Err(self.error(
                        Some(i),
                        format!(
                            "{} swept to {}, not {}",
                            self.describe(self.at),
                            quoted(want),
                            quoted(text)
                        ),
                    ));
                }
            }
        }
        match self.kind {
            TableKind::Timeseries => {
                let want = variant.t_text(self.rows_in - 1);
                let i = self.time.unwrap_or(2);
                if rec.get(i) != Some(want.as_str()) {
                    return Err(self.error(
                        Some(i),
                        format!(
                            "row {} of {} should start bucket {} at {want} s, not {} \
                             (rows out of order, missing or changed)",
                            self.rows_in,
                            self.describe(self.at),
                            self.rows_in - 1,
                            quoted(rec.get(i).unwrap_or(""))
                        ),
                    ));
                }
                self.bucket_invariants(rec)?;
                if let Some(t) = self.totals.as_mut() {
                    if self.rows_in == 1 {
                        t.start(self.line);
                    }
                    t.add(rec);
                }
            }
            TableKind::ServicesTimeseries => self.service_bucket(rec)?,
            TableKind::Services | TableKind::Calls | TableKind::Replicas | TableKind::Classes => {
                // One row per service (per call edge, per replica, per
                // priority class) of the run.
                let key = match self.kind {
                    TableKind::Services | TableKind::Classes => {
                        rec.get(2).unwrap_or("").to_string()
                    }
                    TableKind::Replicas => {
                        rec.iter().skip(2).take(2).collect::<Vec<_>>().join("\u{0}")
                    }
                    _ => rec.iter().skip(2).take(3).collect::<Vec<_>>().join("\u{0}"),
                };
                if !self.names_seen.insert(key) {
                    return Err(self.error(
                        Some(2),
                        format!(
                            "a second row of the same {} for {}",
                            match self.kind {
                                TableKind::Services => "service",
                                TableKind::Replicas => "replica",
                                TableKind::Classes => "priority class",
                                _ => "call",
                            },
                            self.describe(self.at)
                        ),
                    ));
                }
            }
            TableKind::Summary => {
                let want = crate::metrics::run::replicate_seed(self.shape.seed, r.unwrap_or(0));
                if rec.get(2) != Some(want.to_string().as_str()) {
                    return Err(self.error(
                        Some(2),
                        format!(
                            "{} runs with the seed {want} (from the scenario's seed {}), not {}",
                            self.describe(self.at),
                            self.shape.seed,
                            quoted(rec.get(2).unwrap_or(""))
                        ),
                    ));
                }
                self.conservation(rec)?;
                let who = self.describe(self.at);
                super::table_identities::summary(&self.header, rec).map_err(|(i, why)| {
                    self.error(
                        Some(i),
                        format!("{who}: {why} (the row was changed: stormsim never writes this)"),
                    )
                })?;
                if let Some(t) = self.totals.as_mut() {
                    t.start(self.line);
                    t.add(rec);
                }
            }
            TableKind::ByVariant => {
                let want = self.shape.replicates.to_string();
                if rec.get(1) != Some(want.as_str()) {
                    return Err(self.error(
                        Some(1),
                        format!(
                            "the scenario runs {want} {} of each variant, not {}",
                            if want == "1" {
                                "replicate"
                            } else {
                                "replicates"
                            },
                            quoted(rec.get(1).unwrap_or(""))
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A `timeseries.csv` row's counters agree with each other as in every
    /// run stormsim makes (the identities `crate::invariants` holds the
    /// run to, bucket by bucket): each count a whole number; the run's
    /// open requests at the bucket's end are those at the previous end,
    /// plus those offered, less those that ended (`succeeded`, `failed`);
    /// `failed` is the sum of its reasons (`failed_*`); `retries` is the
    /// sum of the layers' (`retries_<layer>`), and no layer retries more
    /// than it attempts; a bucket in which requests ended has latencies,
    /// `latency_p50_ms` at most `latency_p99_ms`, and one in which none
    /// did has none; the mean queue is at most the mean work in the
    /// dependency (`queue_depth <= in_flight`). The cells of a bucket
    /// after a guard rail stopped the run are empty: nothing to check.
    fn bucket_invariants(&mut self, rec: &StringRecord) -> Result<(), TableError> {
        if self.rows_in == 1 {
            self.open_before = 0;
        }
        let changed = "(the row was changed: stormsim never writes this)";
        let mut counts: Vec<Option<u64>> = vec![None; self.header.len()];
        for (i, name) in self.header.iter().enumerate() {
            let text = rec.get(i).unwrap_or("");
            if text.is_empty() || !is_count(name) {
                continue;
            }
            match text.parse::<u64>() {
                Ok(n) if text.bytes().all(|b| b.is_ascii_digit()) => counts[i] = Some(n),
                _ => {
                    return Err(self.error(
                        Some(i),
                        format!(
                            "expected a whole number (a count of the bucket), got {}",
                            quoted(text)
                        ),
                    ));
                }
            }
        }
        let col = |name: &str| self.header.iter().position(|h| h == name);
        let count = |name: &str| col(name).and_then(|i| counts[i].map(|n| (i, n)));
        let bucket = format!("bucket {} of {}", self.rows_in - 1, self.describe(self.at));
        // Requests: open at the end = open before + offered - ended.
        if let (Some((_, offered)), Some((si, ok)), Some((_, failed)), Some((oi, open))) = (
            count("offered"),
            count("succeeded"),
            count("failed"),
            count("open_requests"),
        ) {
            let want =
                (self.open_before.saturating_add(offered)).checked_sub(ok.saturating_add(failed));
            if want != Some(open) {
                let why = match want {
                    None => format!(
                        "{ok} succeeded + {failed} failed, more than the {} open \
                         before it and the {offered} offered in it",
                        crate::human::plural(self.open_before, "request")
                    ),
                    Some(w) => format!(
                        "open_requests is {open}, but {} open before it + {offered} offered \
                         - {ok} succeeded - {failed} failed = {w}",
                        self.open_before
                    ),
                };
                return Err(self.error(
                    Some(if want.is_none() { si } else { oi }),
                    format!("{bucket}: {why}; a run's requests always add up {changed}"),
                ));
            }
            self.open_before = open;
        }
        // Failures: the reasons add up.
        if let Some((fi, failed)) = count("failed") {
            let reasons: Vec<(usize, u64)> = (self.header.iter().enumerate())
                .filter(|(_, h)| h.starts_with("failed_"))
                .filter_map(|(i, _)| counts[i].map(|n| (i, n)))
                .collect();
            let sum = reasons.iter().fold(0u64, |s, r| s.saturating_add(r.1));
            if !reasons.is_empty() && sum != failed {
                return Err(self.error(
                    Some(fi),
                    format!(
                        "{bucket}: {failed} failed, but its reasons (the failed_ columns) add \
                         up to {sum}; every failure has one reason {changed}"
                    ),
                ));
            }
        }
        // Retries: the layers' add up, and none retries more than it attempts.
        let layers: Vec<(usize, usize)> = (self.header.iter().enumerate())
            .filter_map(|(i, h)| {
                let layer = h.strip_prefix("retries_")?;
                Some((col(&format!("attempts_{layer}"))?, i))
            })
            .collect();
        for &(ai, ri) in &layers {
            if let (Some(a), Some(r)) = (counts[ai], counts[ri])
                && r > a
            {
                return Err(self.error(
                    Some(ri),
                    format!(
                        "{bucket}: {r} {}, more than its {a} {}; a layer's retries are \
                         among its attempts {changed}",
                        escape(&self.header[ri]),
                        escape(&self.header[ai])
                    ),
                ));
            }
        }
        if let Some((ri, retries)) = count("retries") {
            let sum =
                (layers.iter().filter_map(|&(_, ri)| counts[ri])).fold(0u64, u64::saturating_add);
            if !layers.is_empty() && sum != retries {
                return Err(self.error(
                    Some(ri),
                    format!(
                        "{bucket}: {}, but the layers' (the retries_ \
                         columns) add up to {sum} {changed}",
                        crate::human::plural(retries, "retry")
                    ),
                ));
            }
        }
        // Latencies: there when requests ended, in order.
        let number =
            |name: &str| col(name).map(|i| (i, rec.get(i).unwrap_or("").parse::<f64>().ok()));
        if let (Some((_, ok)), Some((_, failed))) = (count("succeeded"), count("failed")) {
            let ended = ok.saturating_add(failed);
            for name in ["latency_p50_ms", "latency_p99_ms"] {
                if let Some((i, v)) = number(name) {
                    if ended > 0 && v.is_none() {
                        return Err(self.error(
                            Some(i),
                            format!(
                                "{bucket}: {} ended in it, but {name} is empty \
                                 {changed}",
                                crate::human::plural(ended, "request")
                            ),
                        ));
                    }
                    if ended == 0 && v.is_some() {
                        return Err(self.error(
                            Some(i),
                            format!(
                                "{bucket}: no request ended in it, but {name} is {} {changed}",
                                quoted(rec.get(i).unwrap_or(""))
                            ),
                        ));
                    }
                }
            }
        }
        if let (Some((_, Some(p50))), Some((i, Some(p99)))) =
            (number("latency_p50_ms"), number("latency_p99_ms"))
            && p50 > p99
        {
            return Err(self.error(
                Some(i),
                format!(
                    "{bucket}: latency_p99_ms {p99} is below latency_p50_ms {p50}; a \
                     percentile never falls below a lower one {changed}"
                ),
            ));
        }
        if let (Some((_, Some(q))), Some((i, Some(f)))) =
            (number("queue_depth"), number("in_flight"))
            && q > f + 1e-6
        {
            return Err(self.error(
                Some(i),
                format!(
                    "{bucket}: in_flight {f} is below queue_depth {q}; the requests in the \
                     dependency include those waiting in its queue {changed}"
                ),
            ));
        }
        super::table_identities::bucket(&self.header, rec, &counts)
            .map_err(|(i, why)| self.error(Some(i), format!("{bucket}: {why} {changed}")))
    }

    /// A summary row's requests add up: `logical_requests = succeeded +
    /// failed + in_flight_at_end` (each a whole number), and
    /// `hung_at_end <= in_flight_at_end`, as in every run stormsim makes.
    fn conservation(&self, rec: &StringRecord) -> Result<(), TableError> {
        let names = [
            "logical_requests",
            "succeeded",
            "failed",
            "in_flight_at_end",
            "hung_at_end",
        ];
        let mut v = [None; 5];
        for (slot, name) in v.iter_mut().zip(names) {
            let Some(i) = self.header.iter().position(|h| h == name) else {
                continue;
            };
            let text = rec.get(i).unwrap_or("");
            match text.parse::<u64>() {
                Ok(n) => *slot = Some(n),
                Err(_) => {
                    return Err(self.error(
                        Some(i),
                        format!("expected a whole number of requests, got {}", quoted(text)),
                    ));
                }
            }
        }
        if let [Some(all), Some(ok), Some(failed), Some(open), hung] = v {
            if ok.checked_add(failed).and_then(|n| n.checked_add(open)) != Some(all) {
                return Err(self.error(
                    self.header.iter().position(|h| h == "logical_requests"),
                    format!(
                        "{}, but succeeded + failed + in_flight_at_end = {ok} + {failed} + {open}: a run's requests always add up (the row was changed)",
                        crate::human::plural(all, "logical request")
                    ),
                ));
            }
            if hung.is_some_and(|h| h > open) {
                return Err(self.error(
                    self.header.iter().position(|h| h == "hung_at_end"),
                    format!("more requests hung at the end than in flight ({open})"),
                ));
            }
        }
        Ok(())
    }

    /// Finds the row's run: the current one, or the next (the next with
    /// rows, for the tables that may have none for a run).
    fn place(&mut self, rec: &StringRecord) -> Result<(), TableError> {
        let n = self.run_count();
        if self.rows_in > 0 && self.is_run(self.at, rec) {
            self.rows_in += 1;
            let (v, _) = self.run(self.at);
            let max = self.shape.variants[v].max_rows();
            if self.kind.per_run() == PerRun::One
                || (self.kind.per_run() == PerRun::Buckets && self.rows_in > max)
            {
                return Err(self.error(
                    None,
                    format!(
                        "one row too many for {} (a repeated row?)",
                        self.describe(self.at)
                    ),
                ));
            }
            return Ok(());
        }
        if self.rows_in > 0 {
            self.run_done()?;
            self.at += 1;
        }
        let who = || {
            let v = quoted(rec.get(0).unwrap_or(""));
            match self.kind {
                TableKind::ByVariant => format!("variant {v}"),
                _ => format!(
                    "variant {v}, replicate {}",
                    quoted(rec.get(1).unwrap_or(""))
                ),
            }
        };
        match self.kind.per_run() {
            PerRun::One | PerRun::Buckets => {
                if self.at >= n {
                    return Err(self.error(
                        Some(0),
                        format!(
                            "a row of {} after the last run the table should hold",
                            who()
                        ),
                    ));
                }
                if !self.is_run(self.at, rec) {
                    return Err(self.error(
                        Some(0),
                        format!(
                            "expected {}, got {}: rows out of order, or not of this \
                             scenario's runs",
                            self.describe(self.at),
                            who()
                        ),
                    ));
                }
            }
            PerRun::Any => {
                let from = self.at;
                while self.at < n && !self.is_run(self.at, rec) {
                    self.at += 1;
                }
                if self.at >= n {
                    self.at = from;
                    return Err(self.error(
                        Some(0),
                        format!(
                            "a row of {}, which is not a run of the table or comes out of \
                             order (after {})",
                            who(),
                            self.describe(from)
                        ),
                    ));
                }
            }
        }
        self.rows_in = 1;
        self.bucket_services.clear();
        self.first_bucket_done = false;
        self.names_seen.clear();
        Ok(())
    }

    /// A row of `services_timeseries.csv`: the run's buckets in order,
    /// each listing the services of the first, in its order.
    fn service_bucket(&mut self, rec: &StringRecord) -> Result<(), TableError> {
        let (v, _) = self.run(self.at);
        let variant = &self.shape.variants[v];
        let i = self.time.unwrap_or(2);
        let (t, service) = (rec.get(i).unwrap_or(""), rec.get(3).unwrap_or(""));
        if !self.first_bucket_done {
            if t == variant.t_text(0) {
                if self.bucket_services.iter().any(|s| s == service) {
                    return Err(self.error(
                        Some(3),
                        format!(
                            "a second row of the service {} in the first bucket of {}",
                            quoted(service),
                            self.describe(self.at)
                        ),
                    ));
                }
                self.bucket_services.push(service.to_string());
                return Ok(());
            }
            if self.bucket_services.is_empty() {
                return Err(self.error(
                    Some(i),
                    format!(
                        "expected {} (the first bucket of {}), got {}",
                        variant.t_text(0),
                        self.describe(self.at),
                        quoted(t)
                    ),
                ));
            }
            self.first_bucket_done = true;
        }
        let n = self.bucket_services.len() as u64;
        let j = self.rows_in - 1;
        let (bucket, k) = (j / n, (j % n) as usize);
        let want_t = variant.t_text(bucket);
        if bucket >= variant.max_rows() || t != want_t {
            return Err(self.error(
                Some(i),
                format!(
                    "expected {want_t} (bucket {bucket} of {}), got {}: rows out of order, \
                     missing or changed",
                    self.describe(self.at),
                    quoted(t)
                ),
            ));
        }
        if service != self.bucket_services[k] {
            return Err(self.error(
                Some(3),
                format!(
                    "expected the service {} (each bucket lists the services of the first, \
                     in its order), got {}",
                    quoted(&self.bucket_services[k]),
                    quoted(service)
                ),
            ));
        }
        Ok(())
    }

    /// Checks that the current run has all its rows.
    fn run_done(&self) -> Result<(), TableError> {
        let (v, _) = self.run(self.at);
        if self.kind == TableKind::ServicesTimeseries {
            let n = self.bucket_services.len().max(1) as u64;
            let buckets = self.rows_in.div_ceil(n);
            let whole = self.rows_in.is_multiple_of(n);
            if !whole || self.shape.variants[v].rows.is_some_and(|r| r != buckets) {
                return Err(self.error(
                    None,
                    format!(
                        "{} has {}, not one for each of its services ({n}) in each of \
                         its buckets (rows cut, added or out of order)",
                        self.describe(self.at),
                        crate::human::plural(self.rows_in, "row")
                    ),
                ));
            }
            return Ok(());
        }
        if self.kind.per_run() != PerRun::Buckets {
            return Ok(());
        }
        match self.shape.variants[v].rows {
            Some(want) if self.rows_in != want => Err(self.error(
                None,
                format!(
                    "{} has {}, but its scenario gives it {} (rows cut, \
                     added or out of order)",
                    self.describe(self.at),
                    crate::human::plural(self.rows_in, "row"),
                    crate::human::plural(want, "bucket")
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Checks the end of the table (after its last row, `lines` lines).
    pub fn finish(&mut self) -> Result<(), TableError> {
        self.line += 1;
        let n = self.run_count();
        if self.rows_in > 0 {
            self.run_done()?;
            self.at += 1;
        }
        if self.kind.per_run() != PerRun::Any && self.at < n {
            return Err(self.error(
                None,
                format!(
                    "the table ends before the rows of {}: it holds {} of its {n} {} \
                     (was it cut?)",
                    self.describe(self.at),
                    self.at,
                    if self.kind == TableKind::ByVariant {
                        "variants"
                    } else {
                        "runs"
                    }
                ),
            ));
        }
        Ok(())
    }
}

/// Checks, once both tables of the same runs were read, that each run's
/// totals in `summary.csv` are the sums of its buckets in
/// `timeseries.csv` (the identity of [`Totals::agree`]); the first that
/// is not is named at its summary cell, with the line its buckets start
/// at.
pub fn totals_agree(
    summary: &TableCheck<'_>,
    timeseries: &TableCheck<'_>,
) -> Result<(), TableError> {
    let (Some(s), Some(b)) = (&summary.totals, &timeseries.totals) else {
        return Ok(());
    };
    Totals::agree(s, b).map_err(|m| TableError {
        file: summary.file.clone(),
        line: m.line,
        column: Some((m.column + 1, m.summary_name.to_string())),
        message: format!(
            "{}: {} is {}, but its buckets in {} (from line {}) add up to {} {}; a run's \
             total is the sum of its buckets (a table was changed: stormsim never writes \
             this)",
            summary.describe(m.run),
            m.summary_name,
            m.total,
            timeseries.file,
            m.first_bucket_line,
            m.sum,
            m.bucket_name,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::shape::VariantShape;

    fn shape() -> RunShape {
        let v = |name: &str, c: &str| VariantShape {
            name: name.into(),
            bucket_ns: 1_000_000_000,
            rows: Some(2),
            params: vec![("dependency.concurrency".into(), c.into())],
        };
        RunShape {
            variants: vec![v("a", "1"), v("b", "2")],
            replicates: 1,
            seed: 1,
            params: vec!["dependency.concurrency".into()],
        }
    }

    const HEADER: &str = "variant,replicate,t_s,offered,attempts,retries,dependency_attempts,\
        succeeded,failed,failed_timeout,failed_connection,failed_status,failed_deadline,shed,\
        queue_depth,in_flight,utilization,goodput,latency_p50_ms,latency_p99_ms,orphaned,\
        sweep.dependency.concurrency";

    fn row(v: &str, t: &str, goodput: &str, c: &str) -> String {
        format!("{v},0,{t},1,1,0,1,1,0,0,0,0,0,0,0,0,0.5,{goodput},1.5,2,0,{c}")
    }

    fn check(text: &str) -> Result<(), TableError> {
        let shape = shape();
        let mut c = TableCheck::new(TableKind::Timeseries, "t.csv".into(), &shape, Runs::All);
        let mut r = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(text.as_bytes());
        c.header(
            &r.headers()
                .map_err(|e| c.error(None, e.to_string()))?
                .clone(),
        )?;
        for rec in r.records() {
            c.row(&rec.map_err(|e| c.error(None, e.to_string()))?)?;
        }
        c.finish()
    }

    fn table(rows: &[String]) -> String {
        let mut s = format!("{HEADER}\n");
        for r in rows {
            s.push_str(r);
            s.push('\n');
        }
        s
    }

    fn good() -> Vec<String> {
        vec![
            row("a", "0", "9", "1"),
            row("a", "1", "9.25", "1"),
            row("b", "0", "9", "2"),
            row("b", "1", "9", "2"),
        ]
    }

    #[test]
    fn a_table_as_stormsim_writes_it_passes() {
        check(&table(&good())).unwrap();
    }

    #[test]
    fn counters_that_no_run_writes_are_named() {
        // Latencies only where requests ended, in order; failures that
        // add up to their reasons; counts that are whole numbers.
        for (edit, want) in [
            (
                ("1.5,2,", "3,2,"),
                "line 2, column 20 (latency_p99_ms): bucket 0 of the run of variant `a`, replicate 0: latency_p99_ms 2 is below latency_p50_ms 3",
            ),
            (
                ("1.5,2,", "1.5,,"),
                "column 20 (latency_p99_ms): bucket 0 of the run of variant `a`, replicate 0: 1 request ended in it, but latency_p99_ms is empty",
            ),
            (
                (",1,0,0,0,0,0,0,0,", ",1,0,1,0,0,0,0,0,"),
                "column 9 (failed): bucket 0 of the run of variant `a`, replicate 0: 0 failed, but its reasons",
            ),
            (
                ("a,0,0,1,", "a,0,0,1.5,"),
                "column 4 (offered): expected a whole number",
            ),
        ] {
            let mut g = good();
            g[0] = g[0].replacen(edit.0, edit.1, 1);
            assert_ne!(g[0], good()[0], "{edit:?}");
            let e = check(&table(&g)).unwrap_err().to_string();
            assert!(e.contains(want), "{edit:?}: {e}");
        }
    }

    #[test]
    fn each_kind_of_damage_is_named_with_line_and_column() {
        let cases: Vec<(Vec<String>, &str)> = vec![
            (
                {
                    let mut g = good();
                    g[1] = row("a", "1", "banana", "1");
                    g
                },
                "t.csv: line 3, column 18 (goodput): expected a number",
            ),
            (
                {
                    let mut g = good();
                    g[1] = row("a", "1", "inf", "1");
                    g
                },
                "column 18 (goodput)",
            ),
            (
                {
                    let mut g = good();
                    g[0] = row("a", "-1e308", "1", "1");
                    g
                },
                "line 2, column 3 (t_s): expected a time",
            ),
            (
                {
                    let mut g = good();
                    g.swap(0, 1);
                    g
                },
                "line 2, column 3 (t_s): row 1 of the run of variant `a`, replicate 0 should start bucket 0",
            ),
            (
                {
                    let mut g = good();
                    g.swap(1, 2);
                    g
                },
                "line 3: the run of variant `a`, replicate 0 has 1 row,",
            ),
            (
                good()[..2].to_vec(),
                "line 4: the table ends before the rows of the run of variant `b`",
            ),
            (
                Vec::new(),
                "line 2: the table ends before the rows of the run of variant `a`",
            ),
            (
                {
                    let mut g = good();
                    g[2] = row("b", "0", "9", "7");
                    g
                },
                "line 4, column 22 (sweep.dependency.concurrency): the run of variant `b`, replicate 0 swept to `2`, not `7`",
            ),
            (
                {
                    let mut g = good();
                    g[3].push_str(",extra");
                    g
                },
                "line 5: 23 fields, but the header has 22 columns",
            ),
            (
                {
                    let mut g = good();
                    g[3] = "b,0,1".into();
                    g
                },
                "line 5: 3 fields",
            ),
            (
                {
                    let mut g = good();
                    g[2] = g[2].replacen("b,", "\"b\n,", 1);
                    g
                },
                "holds a control character",
            ),
            (
                {
                    let mut g = good();
                    g.push(row("c", "0", "1", "1"));
                    g
                },
                "line 6, column 1 (variant): a row of variant `c`, replicate `0` after the last run",
            ),
        ];
        for (rows, expected) in cases {
            let e = check(&table(&rows)).unwrap_err().to_string();
            assert!(e.contains(expected), "expected {expected:?} in {e:?}");
        }
        let e = check("").unwrap_err().to_string();
        assert!(e.starts_with("t.csv: line 1: empty"), "{e}");
        let e = check(&table(&good()).replace(",goodput,", ",goodput2,")).unwrap_err();
        assert_eq!(e.column, Some((18, "goodput2".into())), "{e}");
        let e = check(&table(&good()).replace(",orphaned,", ",orphaned,orphaned,"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("given twice"), "{e}");
        let e = check(&table(&good()).replace(",sweep.dependency.concurrency", ",x"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the sweep columns are not the scenario's"),
            "{e}"
        );
    }

    #[test]
    fn numbers_are_as_stormsim_writes_them() {
        for ok in [
            "0",
            "12",
            "-3",
            "0.5",
            "1234.567891",
            "18446744073709551615",
        ] {
            assert!(is_number(ok), "{ok}");
        }
        for bad in [
            "",
            "-",
            ".5",
            "1.",
            "1e5",
            "inf",
            "NaN",
            "1.1234567",
            " 1",
            "+1",
            "0x1",
        ] {
            assert!(!is_number(bad), "{bad}");
        }
    }

    /// A number of any length is judged by the column's limit, in words
    /// (not the 26 digits' shape, nor a storage type).
    #[test]
    fn numbers_beyond_a_tables_figures_say_the_limit() {
        let huge = "9".repeat(26);
        for col in [Col::Number, Col::Level] {
            let why = cell_problem(col, &huge).unwrap();
            assert!(why.starts_with("expected a number up to 10^15"), "{why}");
            let why = cell_problem(col, &format!("{huge}.5")).unwrap();
            assert!(why.starts_with("expected a number up to 10^15"), "{why}");
        }
        let why = cell_problem(Col::Time, &huge).unwrap();
        assert!(why.contains("up to 10^15"), "{why}");
        assert_eq!(cell_problem(Col::Number, "1000000000000000"), None);
        assert_eq!(cell_problem(Col::Number, "0001000000000000000"), None);
        assert!(cell_problem(Col::Number, "1000000000000000.5").is_some());
    }
}
