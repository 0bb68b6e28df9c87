//! The check pass of `stormsim merge`: every table of one shard folder
//! read once, front to back, checked as `plot` checks a run's
//! (`crate::report::table_check`) and against the shard's manifest, and
//! reduced to where each run's rows lie ([`Spans`]) — never held whole.
//!
//! What a checked shard keeps is small: its headers, its `summary.csv`
//! (a row per run; the merged `summary.csv` is drawn from in memory, as a
//! run's is), and per table a byte offset per run. The copy pass
//! (`super::copy`) reads the rows again from the files.
//!
//! The checks and the order of their messages are those of a merge that
//! read every table into memory: first each file opened (regular, under
//! its cap), then each table's own checks (`timeseries.csv`, the graph
//! tables, `summary.csv`, `summary.exact.csv`), then the runs one by
//! one — its summary row against its exact cells, then its rows of each
//! table against the manifest's counts — and last rows past the
//! manifest's runs.

use std::io::{self, Read};
use std::path::Path;

use crate::input_file::{self, InputError, LineLimited};
use crate::interrupt::{self, POLL_ROWS};
use crate::report::shape::RunShape;
use crate::report::table_check::{Runs, TableCheck, TableError, TableKind};
use crate::report::tables;

use super::copy::Spans;
use super::merge::MergeError;
use super::{EXACT_SUMMARY, GRAPH_TABLES, MANIFEST, Manifest, ManifestItem, decode_cell};

/// A shard folder, checked.
pub struct Checked {
    /// `timeseries.csv`.
    pub timeseries: Scanned,
    /// The graph tables, in the order of [`GRAPH_TABLES`].
    pub graph: Vec<Scanned>,
    /// `summary.csv`, whole, and its rows' spans in it.
    pub summary: Vec<u8>,
    pub summary_spans: Spans,
    /// `summary.exact.csv` (its head is not kept).
    pub exact: Scanned,
}

impl Checked {
    /// `timeseries.csv`'s header, when the shard has rows of it.
    pub fn timeseries_header(&self) -> Option<Vec<u8>> {
        self.timeseries
            .spans
            .any_rows()
            .then(|| self.timeseries.head.clone())
    }

    /// `summary.csv`'s header, when the shard has runs.
    pub fn summary_header(&self) -> Option<Vec<u8>> {
        (!self.summary_spans.ends.is_empty())
            .then(|| self.summary[..self.summary_spans.start as usize].to_vec())
    }
}

/// One table of a shard, read in one pass.
pub struct Scanned {
    /// Its bytes up to its first row: the header (the whole file when it
    /// has no rows).
    pub head: Vec<u8>,
    /// Where each run's rows lie.
    pub spans: Spans,
    /// Its length in bytes, as read.
    pub len: u64,
    /// The first run of the shard whose rows are not as many as its
    /// manifest says: (its position in the shard, the rows found).
    miscount: Option<(usize, usize)>,
    /// The first row past the manifest's runs or out of their order: its
    /// variant and replicate.
    stray: Option<(String, String)>,
}

/// Matches a table's rows, in order, to the runs of a manifest: each run
/// takes the rows that follow that name it (variant, replicate).
struct Matcher<'a> {
    items: &'a [ManifestItem],
    expected: &'a dyn Fn(&ManifestItem) -> usize,
    /// The run taking rows, its replicate as the table writes it, and its
    /// rows so far.
    at: usize,
    replicate: String,
    rows: usize,
    ends: Vec<u64>,
    miscount: Option<(usize, usize)>,
    stray: Option<(String, String)>,
}

impl<'a> Matcher<'a> {
    fn new(items: &'a [ManifestItem], expected: &'a dyn Fn(&ManifestItem) -> usize) -> Self {
        Matcher {
            items,
            expected,
            at: 0,
            replicate: items
                .first()
                .map(|i| i.replicate.to_string())
                .unwrap_or_default(),
            rows: 0,
            ends: Vec::with_capacity(items.len()),
            miscount: None,
            stray: None,
        }
    }

    /// A row of `variant` and `replicate` starting at byte `start`.
    fn row(&mut self, variant: &str, replicate: &str, start: u64) {
        while let Some(item) = self.items.get(self.at) {
            if item.variant == variant && self.replicate == replicate {
                self.rows += 1;
                return;
            }
            self.close(start);
        }
        if self.stray.is_none() {
            self.stray = Some((variant.to_string(), replicate.to_string()));
        }
    }

    /// Ends the run taking rows at byte `end`.
    fn close(&mut self, end: u64) {
        let item = &self.items[self.at];
        if self.miscount.is_none() && self.rows != (self.expected)(item) {
            self.miscount = Some((self.at, self.rows));
        }
        self.ends.push(end);
        self.at += 1;
        self.rows = 0;
        self.replicate = self
            .items
            .get(self.at)
            .map(|i| i.replicate.to_string())
            .unwrap_or_default();
    }

    /// Ends every run left at byte `len`, the end of the table.
    fn finish(mut self, start: u64, head: Vec<u8>, len: u64) -> Scanned {
        while self.at < self.items.len() {
            self.close(len);
        }
        Scanned {
            head,
            spans: Spans {
                start,
                ends: self.ends,
            },
            len,
            miscount: self.miscount,
            stray: self.stray,
        }
    }
}

/// A reader that counts the bytes read through it.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Opens a file of a shard folder: a regular file of at most `cap` bytes.
fn open(dir: &Path, file: &str, cap: u64) -> Result<input_file::Capped, MergeError> {
    input_file::open_capped(&dir.join(file), cap)
        .map_err(|e| MergeError::Input(opening(dir, file, e)))
}

/// Reads a whole file of a shard folder, as [`open`] opens it.
pub fn read(dir: &Path, file: &str, cap: u64) -> Result<Vec<u8>, String> {
    input_file::read_capped(&dir.join(file), cap).map_err(|e| opening(dir, file, e))
}

fn opening(dir: &Path, file: &str, e: InputError) -> String {
    match e {
        InputError::NotFound => format!("{}: {file} is missing", crate::escape::path(dir)),
        e => format!("{}: {e}", crate::escape::path(&dir.join(file))),
    }
}

fn table_error(e: TableError) -> MergeError {
    MergeError::Input(e.to_string())
}

/// Reads a table of a shard from `source` (named `file` in messages), each
/// row checked by `check` when given and matched to the shard's runs
/// `items`, each of which should have `expected(item)` rows. `head` reads
/// the bytes before the first row again, once their length is known.
fn scan(
    source: impl Read,
    file: &str,
    mut check: Option<&mut TableCheck<'_>>,
    items: &[ManifestItem],
    expected: &dyn Fn(&ManifestItem) -> usize,
    head: impl FnOnce(u64) -> Result<Vec<u8>, MergeError>,
) -> Result<Scanned, MergeError> {
    let bad = |e: csv::Error| MergeError::Input(format!("{file}: {e}"));
    let source = Counted {
        inner: LineLimited::new(source, tables::MAX_ROW_BYTES),
        read: 0,
    };
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(source);
    let header = r.headers().map_err(bad)?.clone();
    if let Some(c) = check.as_mut() {
        c.header(&header).map_err(table_error)?;
    }
    let mut matcher = Matcher::new(items, expected);
    let mut first: Option<u64> = None;
    let mut rec = csv::StringRecord::new();
    let mut rows: u64 = 0;
    while r.read_record(&mut rec).map_err(bad)? {
        if rows.is_multiple_of(POLL_ROWS as u64) {
            interrupt::check()?;
        }
        rows += 1;
        if let Some(c) = check.as_mut() {
            c.row(&rec).map_err(table_error)?;
        }
        let start = rec.position().map_or(0, |p| p.byte());
        first.get_or_insert(start);
        matcher.row(
            rec.get(0).unwrap_or_default(),
            rec.get(1).unwrap_or_default(),
            start,
        );
    }
    if let Some(c) = check.as_mut() {
        c.finish().map_err(table_error)?;
    }
    let len = r.get_ref().read;
    let start = first.unwrap_or(len);
    Ok(matcher.finish(start, head(start)?, len))
}

/// The first `n` bytes of a shard's file.
fn head_of(dir: &Path, file: &str, cap: u64, n: u64) -> Result<Vec<u8>, MergeError> {
    let mut bytes = Vec::new();
    open(dir, file, cap)?
        .take(n)
        .read_to_end(&mut bytes)
        .map_err(|e| MergeError::Input(opening(dir, file, input_file::unwrap_too_large(e))))?;
    Ok(bytes)
}

/// The records of a positional table (a row per run): where each starts
/// and where the table ends, as [`Spans`] (`start`: the first row, or the
/// end when there is none).
fn positions(starts: &[u64], len: u64) -> Spans {
    Spans {
        start: starts.first().copied().unwrap_or(len),
        ends: starts
            .iter()
            .skip(1)
            .copied()
            .chain([len])
            .take(starts.len())
            .collect(),
    }
}

/// Checks the tables of the shard folder `dir`, whose manifest is `m`, of
/// a run of the shape `shape`: each read once.
pub fn check_shard(dir: &Path, m: &Manifest, shape: &RunShape) -> Result<Checked, MergeError> {
    let input = MergeError::Input;
    // Caps from the manifest: no row stormsim writes is longer than
    // MAX_ROW_BYTES, so a larger file is not the shard's.
    let row = tables::MAX_ROW_BYTES as u64;
    let rows: u64 = m.items.iter().map(|i| i.rows as u64).sum();
    let ts_cap = (rows + 1)
        .saturating_mul(row)
        .min(tables::MAX_TIMESERIES_BYTES);
    let summary_cap = (m.items.len() as u64 + 1)
        .saturating_mul(row)
        .min(tables::MAX_SUMMARY_BYTES);
    let ts_file = open(dir, "timeseries.csv", ts_cap)?;
    let summary_bytes = read(dir, "summary.csv", summary_cap).map_err(input)?;
    let exact_file = open(dir, EXACT_SUMMARY, summary_cap)?;
    let bad = |file: &str, why: String| {
        MergeError::Input(format!("{}: {why}", crate::escape::path(&dir.join(file))))
    };
    // The tables of the shard's runs, checked as `plot` checks a run's
    // (a shard without runs has empty tables).
    let runs: Vec<usize> = m.items.iter().map(|i| i.item).collect();
    let label = |file: &str| crate::escape::path(&dir.join(file));
    let check = |kind: TableKind| {
        (!runs.is_empty())
            .then(|| TableCheck::new(kind, label(kind.file()), shape, Runs::Only(&runs)))
    };
    let ts_rows = |i: &ManifestItem| i.rows;
    let mut check_timeseries = check(TableKind::Timeseries);
    let timeseries = scan(
        ts_file,
        &label("timeseries.csv"),
        check_timeseries.as_mut(),
        &m.items,
        &ts_rows,
        |n| head_of(dir, "timeseries.csv", ts_cap, n),
    )?;
    let graph_kinds = [
        TableKind::Services,
        TableKind::ServicesTimeseries,
        TableKind::Calls,
        TableKind::Replicas,
        TableKind::Classes,
    ];
    let mut graph = Vec::with_capacity(GRAPH_TABLES.len());
    for (t, file) in GRAPH_TABLES.iter().enumerate() {
        let rows: u64 = m.items.iter().map(|i| i.graph_rows[t] as u64).sum();
        let cap = (rows + 1)
            .saturating_mul(row)
            .min(tables::MAX_TIMESERIES_BYTES);
        let source = open(dir, file, cap)?;
        let expected = move |i: &ManifestItem| i.graph_rows[t];
        graph.push(scan(
            source,
            &label(file),
            check(graph_kinds[t]).as_mut(),
            &m.items,
            &expected,
            |n| head_of(dir, file, cap, n),
        )?);
    }

    // summary.csv: its rows checked and their starts kept.
    let summary_file = label("summary.csv");
    let mut check_summary = check(TableKind::Summary);
    let summary_csv = |e: csv::Error| input(format!("{summary_file}: {e}"));
    let mut r = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(summary_bytes.as_slice());
    let summary_names: Vec<String> = {
        let header = r.headers().map_err(summary_csv)?;
        if let Some(c) = check_summary.as_mut() {
            c.header(header).map_err(table_error)?;
        }
        header.iter().map(str::to_string).collect()
    };
    let mut summary_starts = Vec::new();
    let mut rec = csv::StringRecord::new();
    while r.read_record(&mut rec).map_err(summary_csv)? {
        if summary_starts.len() % POLL_ROWS == 0 {
            interrupt::check()?;
        }
        if let Some(c) = check_summary.as_mut() {
            c.row(&rec).map_err(table_error)?;
        }
        summary_starts.push(rec.position().map_or(0, |p| p.byte()));
    }
    if let Some(c) = check_summary.as_mut() {
        c.finish().map_err(table_error)?;
    }
    if let (Some(s), Some(t)) = (&check_summary, &check_timeseries) {
        crate::report::table_check::totals_agree(s, t).map_err(table_error)?;
    }
    let summary_spans = positions(&summary_starts, summary_bytes.len() as u64);

    // summary.exact.csv: its rows counted and their starts kept; their
    // cells are checked below, run by run.
    let exact_csv = |e: csv::Error| bad(EXACT_SUMMARY, e.to_string());
    let mut r = csv::ReaderBuilder::new().from_reader(Counted {
        inner: LineLimited::new(exact_file, tables::MAX_ROW_BYTES),
        read: 0,
    });
    let exact_header: Vec<String> = if m.items.is_empty() {
        Vec::new()
    } else {
        r.headers()
            .map_err(exact_csv)?
            .iter()
            .map(str::to_string)
            .collect()
    };
    let mut exact_starts = Vec::new();
    while r.read_record(&mut rec).map_err(exact_csv)? {
        if exact_starts.len() % POLL_ROWS == 0 {
            interrupt::check()?;
        }
        exact_starts.push(rec.position().map_or(0, |p| p.byte()));
    }
    let exact_len = r.get_ref().read;
    let exact = Scanned {
        head: Vec::new(),
        spans: positions(&exact_starts, exact_len),
        len: exact_len,
        miscount: None,
        stray: None,
    };

    let n_items = m.items.len();
    if summary_starts.len() != n_items || exact_starts.len() != n_items {
        return Err(input(format!(
            "{}: the manifest lists {} but summary.csv has {} rows and \
             {EXACT_SUMMARY} {}: the folder was changed after the run",
            crate::escape::path(dir),
            crate::human::plural(n_items, "run"),
            summary_starts.len(),
            exact_starts.len()
        )));
    }
    if n_items > 0 && summary_names != exact_header {
        return Err(bad(
            EXACT_SUMMARY,
            "its columns are not those of summary.csv: the folder was changed after the run"
                .to_string(),
        ));
    }

    // Run by run: its summary row against its exact cells, then its rows
    // of each table against the manifest.
    let mut summary_rows = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(summary_bytes.as_slice());
    let mut exact_rows = csv::ReaderBuilder::new().from_reader(Counted {
        inner: LineLimited::new(
            open(dir, EXACT_SUMMARY, summary_cap)?,
            tables::MAX_ROW_BYTES,
        ),
        read: 0,
    });
    if n_items > 0 {
        summary_rows.headers().map_err(summary_csv)?;
        exact_rows.headers().map_err(exact_csv)?;
    }
    let mut shown = csv::StringRecord::new();
    let mut erow = csv::StringRecord::new();
    for (j, item) in m.items.iter().enumerate() {
        let line = j + 2;
        if line % 256 == 0 {
            interrupt::check()?;
        }
        let changed = || {
            input(format!(
                "{}: summary.csv or {EXACT_SUMMARY} changed while being merged",
                crate::escape::path(dir)
            ))
        };
        if !summary_rows.read_record(&mut shown).map_err(summary_csv)?
            || !exact_rows.read_record(&mut erow).map_err(exact_csv)?
        {
            return Err(changed());
        }
        let replicate = item.replicate.to_string();
        let names_item = |v: Option<&str>, r: Option<&str>| {
            v.unwrap_or_default() == item.variant && r.unwrap_or_default() == replicate
        };
        if !names_item(shown.get(0), shown.get(1))
            || erow.len() < 3
            || !names_item(erow.get(0), erow.get(1))
            || erow.len() != exact_header.len()
        {
            return Err(input(format!(
                "{}: the rows of summary.csv or {EXACT_SUMMARY} do not match the \
                 manifest's run {} (variant `{}`, replicate {})",
                crate::escape::path(dir),
                item.item,
                item.variant,
                item.replicate
            )));
        }
        check_exact_row(&exact_header, &erow, &shown, line, &bad)?;
        let counts = std::iter::once((&timeseries, "timeseries.csv", item.rows)).chain(
            graph
                .iter()
                .zip(GRAPH_TABLES)
                .enumerate()
                .map(|(t, (g, file))| (g, file, item.graph_rows[t])),
        );
        for (table, file, expected) in counts {
            if let Some((_, rows)) = table.miscount.filter(|&(at, _)| at == j) {
                return Err(bad(
                    file,
                    format!(
                        "{} of run {} (variant `{}`, replicate {}), but its {MANIFEST} \
                         says {expected}: the file was cut or changed after the run",
                        crate::human::plural(rows, "row"),
                        item.item,
                        item.variant,
                        item.replicate
                    ),
                ));
            }
        }
    }
    let strays =
        std::iter::once((&timeseries, "timeseries.csv")).chain(graph.iter().zip(GRAPH_TABLES));
    for (table, file) in strays {
        if let Some((v, r)) = &table.stray {
            return Err(bad(
                file,
                format!(
                    "rows of variant {} replicate {} out of the manifest's runs or their order",
                    crate::escape::quoted(v),
                    crate::escape::quoted(r)
                ),
            ));
        }
    }
    Ok(Checked {
        timeseries,
        graph,
        summary: summary_bytes,
        summary_spans,
        exact,
    })
}

/// Checks one run's exact cells (`erow`, under `header`) and that
/// `summary.csv`'s row (`shown`, at `line`) shows each rounded.
fn check_exact_row(
    header: &[String],
    erow: &csv::StringRecord,
    shown: &csv::StringRecord,
    line: usize,
    bad: &dyn Fn(&str, String) -> MergeError,
) -> Result<(), MergeError> {
    for (column, ((name, text), shown)) in header
        .iter()
        .zip(erow.iter())
        .zip(shown.iter())
        .enumerate()
        .skip(3)
    {
        let at = || {
            format!(
                "line {line}, column {} ({})",
                column + 1,
                crate::escape::escape(name)
            )
        };
        let cell = decode_cell(text).map_err(|e| bad(EXACT_SUMMARY, format!("{}: {e}", at())))?;
        if let Err(want) = crate::metrics::columns::check_summary_cell(name, &cell) {
            return Err(bad(
                EXACT_SUMMARY,
                format!(
                    "{}: `{}`, but the column holds {want}: the folder was changed after the run",
                    at(),
                    crate::escape::escape(text)
                ),
            ));
        }
        // summary.csv shows the exact cell, rounded: the two agree.
        let rendered = cell.render();
        if shown != rendered {
            return Err(bad(
                "summary.csv",
                format!(
                    "line {line}, column {} ({}): `{}`, but {EXACT_SUMMARY} holds `{}` \
                     for it: the folder was changed after the run",
                    column + 1,
                    crate::escape::escape(name),
                    crate::escape::escape(shown),
                    crate::escape::escape(&rendered)
                ),
            ));
        }
    }
    Ok(())
}
