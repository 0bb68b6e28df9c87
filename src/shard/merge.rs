//! `stormsim merge`: shard folders back into the outputs of one run.
//!
//! Nothing in a shard folder is trusted. [`plan`] reads and checks every
//! manifest ([`super::manifest`]); the manifests must agree (format,
//! stormsim version, scenario digest, number of shards and items) and
//! cover every shard `0..N` and every item exactly once; each
//! `scenario.resolved.yaml` must match its digest and load as a valid
//! scenario whose name, variants and replicates are the manifests'; and
//! each run's row count must be the one its scenario implies. [`merge`]
//! then works in two passes over the tables, neither holding their rows:
//!
//! - the check pass ([`super::scan`]) reads each shard's tables (regular
//!   files only, each under a byte cap) once, front to back, and checks
//!   them against the manifests: each table has exactly the rows of the
//!   manifest's runs, in order, and `timeseries.csv` exactly each run's
//!   row count; what it keeps is where each run's rows lie;
//! - the copy pass ([`super::copy`]) writes the merged tables into the
//!   output's work folder, the runs in item order, each run's rows copied
//!   from its shard's file as written (they already carry the columns of
//!   the whole run); `summary_by_variant.csv` is aggregated from the
//!   exact summary cells, a variant at a time; and the charts and report
//!   are drawn from the merged tables read back, in one streaming pass, as
//!   `stormsim plot` draws them.
//!
//! The result is byte for byte what the unsharded run writes. Memory
//! follows the runs' summaries and the charts' points (variants ×
//! buckets), not the rows. Both passes poll the stop flag
//! (`crate::interrupt`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::interrupt;
use crate::metrics::Cell;
use crate::report::output_dir::{OutputDir, OutputError};
use crate::report::shape::RunShape;
use crate::report::table_stream::TIMESERIES;
use crate::report::{self, tables};
use crate::scenario::validate::MAX_TIMESERIES_ROWS;
use crate::scenario::{self, Scenario};

/// The most rows of `timeseries.csv` a merge takes: the most a run writes
/// (the merge streams the tables, so its memory does not grow with them).
const MAX_MERGED_ROWS: u64 = MAX_TIMESERIES_ROWS;

use super::scan::{self, read};
use super::{
    CLASSES, EXACT_SUMMARY, GRAPH_TABLES, MANIFEST, Manifest, ShardSpec, copy, decode_cell,
    scenario_digest,
};

/// Why a merge failed.
#[derive(Debug)]
pub enum MergeError {
    /// The shard folders are missing, duplicated, mismatched, unreadable
    /// or inconsistent (bad input: exit 2).
    Input(String),
    /// The charts could not be drawn (exit 1).
    Draw(String),
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// The merged files could not be written.
    Output(OutputError),
}

impl From<OutputError> for MergeError {
    fn from(e: OutputError) -> Self {
        match e {
            OutputError::Interrupted => MergeError::Interrupted,
            e => MergeError::Output(e),
        }
    }
}

impl From<interrupt::Stopped> for MergeError {
    fn from(_: interrupt::Stopped) -> Self {
        MergeError::Interrupted
    }
}

impl From<report::ReportError> for MergeError {
    fn from(e: report::ReportError) -> Self {
        match e {
            report::ReportError::Interrupted => MergeError::Interrupted,
            report::ReportError::Table(m) => MergeError::Input(m),
            report::ReportError::Draw(m) => MergeError::Draw(m),
        }
    }
}

/// What a merge found, once its files are written.
#[derive(Debug)]
pub struct Merged {
    /// The runs a guard rail stopped early, in order: (variant, why, as
    /// the `aborted` column says).
    pub aborted: Vec<(String, String)>,
}

struct Shard {
    dir: PathBuf,
    manifest: Manifest,
}

/// Checked shard folders, ready to merge.
pub struct Plan {
    /// In shard order.
    shards: Vec<Shard>,
    resolved: Vec<u8>,
    scenario: String,
    /// The scenario, loaded from `resolved`, and its runs.
    loaded: Scenario,
    shape: RunShape,
}

impl Plan {
    /// The scenario's name (the default output folder).
    pub fn scenario(&self) -> &str {
        &self.scenario
    }

    /// The number of shards N.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Runs of the whole merge.
    pub fn items(&self) -> usize {
        self.shards.first().map_or(0, |s| s.manifest.items_total)
    }

    /// The shard folders (the merge's inputs).
    pub fn shard_dirs(&self) -> Vec<PathBuf> {
        self.shards.iter().map(|s| s.dir.clone()).collect()
    }

    /// The configuration files the scenario's layers and calls read
    /// (`from`), as (what reads it: ``layer `api` ``, file relative to the
    /// scenario file).
    pub fn from_files(&self) -> Vec<(String, String)> {
        self.loaded
            .from_files()
            .into_iter()
            .map(|(who, f)| (who, f.file.clone()))
            .collect()
    }
}

/// The file among the scenario's `from` files (see [`Plan::from_files`])
/// that the folder `out` holds, if any, as (layer, `from` path, the file
/// in `out`). A merge does not know where the scenario file is (a shard
/// folder keeps its `from` paths as written, relative to it), so every
/// place the path can name inside `out` counts: the path itself below
/// `out` (the scenario beside it), and, where one of its folders is named
/// like `out`, the rest of the path below `out` (`../deploy/x.json` with
/// `out` = `deploy`). Replacing such a folder would delete a file the
/// scenario needs to run again, even with `--force`, as `run` refuses.
pub fn from_file_inside(plan: &Plan, out: &Path) -> Option<(String, String, PathBuf)> {
    use std::path::Component;
    let out = out.canonicalize().ok()?;
    let out_name = out.file_name()?;
    for (layer, file) in plan.from_files() {
        let path = Path::new(&file);
        if path.is_absolute() {
            if path.canonicalize().is_ok_and(|p| p.starts_with(&out)) {
                return Some((layer, file.clone(), path.to_path_buf()));
            }
            continue;
        }
        let parts: Vec<&std::ffi::OsStr> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        for i in 0..parts.len() {
            if i > 0 && parts[i - 1] != out_name {
                continue;
            }
            let candidate: PathBuf = parts[i..].iter().fold(out.clone(), |p, c| p.join(c));
            if std::fs::symlink_metadata(&candidate).is_ok() {
                return Some((layer, file.clone(), candidate));
            }
        }
    }
    None
}

/// The shard folders named by `dirs`: a shard folder (with a
/// `manifest.json`, whatever it is: reading it says what is wrong with
/// it) stands for itself; a folder that holds shard folders
/// (`output/<name>/` after sharded runs with default folders) stands for
/// all of them. Anything else is an error naming what it is: nothing
/// there, a file or device, a folder with neither.
pub fn expand_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for d in dirs {
        let shown = crate::escape::path(d);
        let meta = std::fs::metadata(d).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("{shown}: no such folder"),
            _ => format!("{shown}: cannot read it: {e}"),
        })?;
        if meta.is_file() {
            return Err(format!("{shown} is a file, not a shard folder"));
        }
        if !meta.is_dir() {
            return Err(format!(
                "{shown} is {}, not a shard folder",
                crate::input_file::describe(d, &meta)
            ));
        }
        if std::fs::symlink_metadata(d.join(MANIFEST)).is_ok() {
            out.push(d.clone());
            continue;
        }
        let inner = super::shard_folders_in(d);
        if inner.is_empty() {
            return Err(format!(
                "{shown} is not a shard folder: it has no {MANIFEST}, and holds no shard \
                 folder (a folder with one)"
            ));
        }
        out.extend(inner.into_iter().map(|n| d.join(n)));
    }
    Ok(out)
}

/// Reads and checks the manifests and resolved scenarios of the shard
/// folders `dirs` (in any order; see [`expand_dirs`]), without reading
/// their tables.
pub fn plan(dirs: &[PathBuf]) -> Result<Plan, MergeError> {
    let input = MergeError::Input;
    let dirs = expand_dirs(dirs).map_err(input)?;
    if dirs.is_empty() {
        return Err(input("no shard folders given".into()));
    }
    let mut shards = Vec::with_capacity(dirs.len());
    for dir in dirs {
        interrupt::check()?;
        let manifest = Manifest::read(&dir).map_err(input)?;
        shards.push(Shard { dir, manifest });
    }
    check_manifests(&shards).map_err(input)?;
    shards.sort_by_key(|s| s.manifest.shard);

    let mut resolved: Option<Vec<u8>> = None;
    for shard in &shards {
        interrupt::check()?;
        let bytes = read_resolved(shard).map_err(input)?;
        resolved.get_or_insert(bytes);
    }
    let resolved = resolved.unwrap_or_default();
    let first = &shards[0];
    let (loaded, shape) = check_scenario(&shards, &first.dir, &resolved).map_err(input)?;
    Ok(Plan {
        shards,
        resolved,
        scenario: loaded.name.clone(),
        loaded,
        shape,
    })
}

/// A shard's `scenario.resolved.yaml`, checked against its digest.
fn read_resolved(shard: &Shard) -> Result<Vec<u8>, String> {
    let dir = &shard.dir;
    let m = &shard.manifest;
    let resolved = read(
        dir,
        "scenario.resolved.yaml",
        scenario::load::MAX_FILE_BYTES,
    )?;
    let digest = scenario_digest(&String::from_utf8_lossy(&resolved));
    if digest != m.scenario_digest {
        return Err(format!(
            "{}: scenario.resolved.yaml does not match the digest in its {MANIFEST} \
             ({digest}, manifest says {}): the folder was changed after the run",
            crate::escape::path(dir),
            m.scenario_digest
        ));
    }
    Ok(resolved)
}

/// Checks the manifests against the scenario they name (every shard's is
/// the same, by digest): its name, its variants in order, its replicates,
/// and each run's rows of `timeseries.csv` where the scenario fixes them.
/// Returns the scenario and the shape of its run.
fn check_scenario(
    shards: &[Shard],
    dir: &Path,
    resolved: &[u8],
) -> Result<(Scenario, RunShape), String> {
    let label = crate::escape::path(&dir.join("scenario.resolved.yaml"));
    let s = scenario::load_bytes(resolved, &label)
        .map_err(|e| format!("{label} is not a valid scenario:\n{e}"))?;
    let variants = scenario::expand_all(&s).map_err(|e| format!("{label}:\n{e}"))?;
    let m0 = &shards[0].manifest;
    if m0.scenario != s.name {
        return Err(format!(
            "{}: the manifest names the scenario `{}` but its scenario.resolved.yaml names `{}`",
            crate::escape::path(&shards[0].dir),
            m0.scenario,
            s.name
        ));
    }
    if m0.variants != variants.len() || m0.replicates != s.replicates {
        return Err(format!(
            "the manifests describe {} × {} but the scenario has {} × {}",
            crate::human::plural(m0.variants, "variant"),
            crate::human::plural(m0.replicates, "replicate"),
            variants.len(),
            s.replicates
        ));
    }
    let rows: Vec<Option<usize>> = variants
        .iter()
        .map(|v| {
            scenario::to_occ(&v.scenario)
                .is_none()
                .then(|| scenario::validate::buckets(&v.scenario) as usize)
        })
        .collect();
    let mut total_rows: u64 = 0;
    for shard in shards {
        for item in &shard.manifest.items {
            let v = &variants[item.variant_index];
            if item.variant != v.name {
                return Err(format!(
                    "{}: run {} is variant `{}` in the manifest but `{}` in the scenario",
                    crate::escape::path(&shard.dir),
                    item.item,
                    item.variant,
                    v.name
                ));
            }
            if let Some(expected) = rows[item.variant_index].filter(|&r| r != item.rows) {
                return Err(format!(
                    "{}: run {} (variant `{}`, replicate {}) has {} of timeseries.csv \
                     in the manifest, but the scenario gives every run {expected}",
                    crate::escape::path(&shard.dir),
                    item.item,
                    item.variant,
                    item.replicate,
                    crate::human::plural(item.rows, "row")
                ));
            }
            total_rows += item.rows as u64;
        }
    }
    if total_rows > MAX_MERGED_ROWS {
        return Err(format!(
            "the manifests describe {total_rows} rows of timeseries.csv; merge takes at most \
             {MAX_MERGED_ROWS} (the most a run writes)"
        ));
    }
    let shape = RunShape::of_expanded(&variants, &s);
    Ok((s, shape))
}

/// Merges checked shard folders into `out` (not committed): checks every
/// shard's tables ([`scan::check_shard`]), then writes the tables, a run
/// after another in item order, copied from the shards' files
/// ([`copy::Interleaved`]), and draws the charts and the report from the
/// merged tables read back. Memory follows the runs' summaries and the
/// charts' points, not the rows.
pub fn merge(plan: &Plan, out: &OutputDir) -> Result<Merged, MergeError> {
    let input = MergeError::Input;
    let total = plan.items();
    let n = plan.shards.len();

    // The check pass: every shard, one after the other.
    let mut ts_header: Option<Seen> = None;
    let mut summary_header: Option<Seen> = None;
    let mut empty_ts: Option<Vec<u8>> = None;
    let mut empty_summary: Option<Vec<u8>> = None;
    let mut graph_headers: Vec<Option<Seen>> = vec![None; GRAPH_TABLES.len()];
    let mut checked: Vec<scan::Checked> = Vec::with_capacity(n);
    for shard in &plan.shards {
        interrupt::check()?;
        let c = scan::check_shard(&shard.dir, &shard.manifest, &plan.shape)?;
        agree(
            &mut ts_header,
            c.timeseries_header(),
            shard,
            "timeseries.csv",
        )
        .map_err(input)?;
        agree(
            &mut summary_header,
            c.summary_header(),
            shard,
            "summary.csv",
        )
        .map_err(input)?;
        if empty_ts.is_none() && !c.timeseries.spans.any_rows() {
            empty_ts = Some(c.timeseries.head.clone());
        }
        if empty_summary.is_none() && shard.manifest.items.is_empty() {
            empty_summary = Some(c.summary.clone());
        }
        for (t, g) in c.graph.iter().enumerate() {
            agree(
                &mut graph_headers[t],
                Some(g.head.clone()),
                shard,
                GRAPH_TABLES[t],
            )
            .map_err(input)?;
        }
        checked.push(c);
    }
    if let Some(k) = (0..total).find(|&k| {
        let (i, j) = copy::place(k, n);
        plan.shards[i]
            .manifest
            .items
            .get(j)
            .is_none_or(|m| m.item != k)
    }) {
        return Err(input(format!("item {k} is in no shard")));
    }
    let item = |k: usize| {
        let (i, j) = copy::place(k, n);
        &plan.shards[i].manifest.items[j]
    };

    // The copy pass: each table, run by run in item order.
    let checked: &[scan::Checked] = &checked;
    // A shard's copy of `file`, opened again: the length the check pass
    // read (`len(shard)`), or an error.
    let shard_file = |file: &'static str, len: fn(&scan::Checked) -> &scan::Scanned| {
        move |i: usize| -> std::io::Result<std::fs::File> {
            let f = std::fs::File::open(plan.shards[i].dir.join(file))?;
            let (now, then) = (f.metadata()?.len(), len(&checked[i]).len);
            if now != then {
                return Err(std::io::Error::other(format!(
                    "it changed while being merged ({then} bytes when checked, {now} now)"
                )));
            }
            Ok(f)
        }
    };
    let copy_table = |file: &'static str,
                      header: Vec<u8>,
                      table: fn(&scan::Checked) -> &scan::Scanned|
     -> Result<(), MergeError> {
        let mut f = out.create(file)?;
        f.append(&header)?;
        let spans = checked.iter().map(|c| &table(c).spans).collect();
        let mut rows = copy::Interleaved::new(spans, shard_file(file, table));
        for k in 0..total {
            if k % 256 == 0 {
                interrupt::check()?;
            }
            rows.copy(k, |bytes| f.append(bytes))
                .map_err(|e| copy_failed(e, plan, k, file))?;
        }
        Ok(f.finish()?)
    };
    // No shard with a row: the table of an empty run, as a shard wrote it.
    let header = |seen: Option<Seen>, empty: Option<Vec<u8>>| {
        seen.map(|s| s.0).or(empty).unwrap_or_default()
    };
    copy_table(TIMESERIES, header(ts_header, empty_ts), |c| &c.timeseries)?;
    // classes.csv only when some run has classes, as an unsharded run.
    let has_classes = checked.iter().any(|c| c.graph[CLASSES].spans.any_rows());
    let graph: [fn(&scan::Checked) -> &scan::Scanned; GRAPH_TABLES.len()] = [
        |c| &c.graph[0],
        |c| &c.graph[1],
        |c| &c.graph[2],
        |c| &c.graph[3],
        |c| &c.graph[4],
    ];
    for (t, file) in GRAPH_TABLES.iter().enumerate() {
        if t == CLASSES && !has_classes {
            continue;
        }
        let header = graph_headers[t].as_ref().map(|s| s.0.clone());
        copy_table(file, header.unwrap_or_default(), graph[t])?;
    }
    let mut summary = header(summary_header, empty_summary);
    for k in 0..total {
        let (i, j) = copy::place(k, n);
        let c = &checked[i];
        if let Some(r) = c.summary_spans.of(j) {
            summary.extend_from_slice(&c.summary[r.start as usize..r.end as usize]);
        }
    }
    out.write("summary.csv", &summary)?;

    // summary_by_variant.csv from the exact cells, a variant at a time.
    let mut by_variant = tables::ByVariantRows::default();
    let mut aborted = Vec::new();
    let mut exact = copy::Interleaved::new(
        checked.iter().map(|c| &c.exact.spans).collect(),
        shard_file(EXACT_SUMMARY, |c| &c.exact),
    );
    let mut replicates: Vec<tables::Cells> = Vec::new();
    let mut row = Vec::new();
    let names: Vec<String> = summary_names(&summary);
    for k in 0..total {
        if k % 256 == 0 {
            interrupt::check()?;
        }
        let it = item(k);
        row.clear();
        exact
            .copy(k, |bytes| -> Result<(), MergeError> {
                row.extend_from_slice(bytes);
                Ok(())
            })
            .map_err(|e| copy_failed(e, plan, k, EXACT_SUMMARY))?;
        let cells = exact_cells(&names, &row).ok_or_else(|| {
            input(format!(
                "{}: {EXACT_SUMMARY} changed while being merged",
                crate::escape::path(&plan.shards[k % n].dir)
            ))
        })?;
        if let Some(why) = cells.iter().find_map(|(name, cell)| match cell {
            Cell::Text(why) if name == "aborted" => Some(why.clone()),
            _ => None,
        }) {
            aborted.push((it.variant.clone(), why));
        }
        replicates.push(cells);
        let last = k + 1 == total || item(k + 1).variant_index != it.variant_index;
        if last {
            by_variant.push(it.variant.clone(), &replicates);
            replicates.clear();
        }
    }
    drop(exact);
    let by_variant = by_variant.csv();
    out.write("summary_by_variant.csv", &by_variant)?;
    out.write("scenario.resolved.yaml", &plan.resolved)?;

    // The charts and the report, from the merged tables read back.
    let read_back = |file: &str| {
        out.open_written(file)
            .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
            .map_err(|e| match e {
                OutputError::Interrupted => report::ReportError::Interrupted,
                e => report::ReportError::Table(e.to_string()),
            })
    };
    let classes = if has_classes {
        let mut bytes = Vec::new();
        read_back(GRAPH_TABLES[CLASSES])?
            .read_to_end(&mut bytes)
            .map_err(|e| MergeError::Output(OutputError::Io(e.to_string())))?;
        Some(bytes)
    } else {
        None
    };
    // GRAPH_TABLES: services.csv, services_timeseries.csv, calls.csv,
    // replicas.csv (which no chart reads).
    let data = report::ChartData::from_checked_source(
        || read_back(TIMESERIES),
        &summary,
        &by_variant,
        &plan.loaded,
        plan.shape.clone(),
        None,
    )?
    .with_graph(report::graph_data::GraphSources {
        services: read_back(GRAPH_TABLES[0])?,
        timeseries: read_back(GRAPH_TABLES[1])?,
        calls: read_back(GRAPH_TABLES[2])?,
    })?
    .with_classes(classes.as_deref())?;
    for (path, bytes) in report::visual_files(&data)? {
        out.write(&path, &bytes)?;
    }
    Ok(Merged { aborted })
}

/// The columns of `summary.csv` (those of `summary.exact.csv`).
fn summary_names(summary: &[u8]) -> Vec<String> {
    csv::ReaderBuilder::new()
        .from_reader(summary)
        .headers()
        .map(|h| h.iter().map(str::to_string).collect())
        .unwrap_or_default()
}

/// One run's cells of `summary.exact.csv` (its row `row`, under the
/// columns `names`: variant, replicate, seed, then the cells), as the
/// check pass found them; `None` if they are not.
fn exact_cells(names: &[String], row: &[u8]) -> Option<tables::Cells> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(row);
    let mut rec = csv::StringRecord::new();
    if !r.read_record(&mut rec).ok()? || rec.len() != names.len() {
        return None;
    }
    names
        .iter()
        .zip(rec.iter())
        .skip(3)
        .map(|(name, text)| decode_cell(text).ok().map(|c| (name.clone(), c)))
        .collect()
}

/// The error of a copy of item `k`'s rows of `file`.
fn copy_failed(
    e: copy::CopyError<impl Into<MergeError>>,
    plan: &Plan,
    k: usize,
    file: &str,
) -> MergeError {
    match e {
        copy::CopyError::Write(e) => e.into(),
        copy::CopyError::NoItem(k) => MergeError::Input(format!("item {k} is in no shard")),
        copy::CopyError::Read(i, e) => MergeError::Input(format!(
            "{}: cannot read the rows of run {k}: {e}",
            crate::escape::path(&plan.shards[i].dir.join(file))
        )),
    }
}

/// A table's header as the first shard with rows has it, and that shard.
type Seen = (Vec<u8>, std::path::PathBuf);

/// Records the header of a shard's table; shards with rows must agree.
/// A header with a carriage return is that shard's fault (stormsim writes
/// `\n` line endings; an editor or a copy through Windows made them
/// `\r\n`); any other difference names both shards and the columns
/// that differ.
fn agree(
    seen: &mut Option<Seen>,
    header: Option<Vec<u8>>,
    shard: &Shard,
    file: &str,
) -> Result<(), String> {
    let Some(h) = header else { return Ok(()) };
    if h.contains(&b'\r') {
        return Err(format!(
            "{}: {file} has Windows line endings (CRLF), which stormsim never writes \
             (was it opened and saved in an editor, or copied through a tool that converts \
             line endings?); convert it back to LF endings, or run that shard again",
            crate::escape::path(&shard.dir)
        ));
    }
    match seen {
        Some((s, from)) if *s != h => Err(format!(
            "{}: the columns of {file} differ from those of {} ({}); every shard of a run \
             writes the same columns",
            crate::escape::path(&shard.dir),
            crate::escape::path(from),
            column_difference(s, &h)
        )),
        Some(_) => Ok(()),
        None => {
            *seen = Some((h, shard.dir.clone()));
            Ok(())
        }
    }
}

/// What differs between two headers (`first`, then `other`): the first
/// column that does, or the counts.
fn column_difference(first: &[u8], other: &[u8]) -> String {
    let cols = |h: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(h)
            .trim_end_matches('\n')
            .split(',')
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (cols(first), cols(other));
    let clip = |c: &str| crate::escape::escape(&crate::scenario::error::clip(c)).into_owned();
    match a.iter().zip(&b).position(|(x, y)| x != y) {
        Some(i) => format!(
            "column {} is `{}` there and `{}` here",
            i + 1,
            clip(&a[i]),
            clip(&b[i])
        ),
        None => format!("{} columns there, {} here", a.len(), b.len()),
    }
}

fn dirs_of<'a>(shards: impl Iterator<Item = &'a Shard>) -> String {
    shards
        .map(|s| crate::escape::path(&s.dir))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Describes how the shards split over a field, when they disagree.
/// The groups come in the order of their first shard, not of the value
/// (a digest's order would tell the user nothing).
fn split_by<K: PartialEq + std::fmt::Display>(
    shards: &[Shard],
    key: impl Fn(&Manifest) -> K,
) -> Option<String> {
    let mut groups: Vec<(K, Vec<&Shard>)> = Vec::new();
    for s in shards {
        let k = key(&s.manifest);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(s),
            None => groups.push((k, vec![s])),
        }
    }
    (groups.len() > 1).then(|| {
        groups
            .iter()
            .map(|(k, v)| format!("{k} in {}", dirs_of(v.iter().copied())))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// At most this many shard indices are listed in a message.
const LISTED: usize = 20;

fn check_manifests(shards: &[Shard]) -> Result<(), String> {
    if let Some(split) = split_by(shards, |m| m.scenario_digest.clone()) {
        return Err(format!(
            "the shards are from different scenarios (scenario digest {split})"
        ));
    }
    if let Some(split) = split_by(shards, |m| m.stormsim_version.clone()) {
        return Err(format!(
            "the shards were written by different stormsim versions ({split})"
        ));
    }
    let version = env!("CARGO_PKG_VERSION");
    if shards[0].manifest.stormsim_version != version {
        return Err(format!(
            "the shards were written by stormsim {}, this is stormsim {version}: \
             merge them with the version that ran them, or run them again",
            shards[0].manifest.stormsim_version
        ));
    }
    if let Some(split) = split_by(shards, |m| m.shards) {
        return Err(format!(
            "the shards come from splits into different numbers of shards ({split} shards)"
        ));
    }
    if let Some(split) = split_by(shards, |m| {
        format!(
            "{} ({} × {})",
            crate::human::plural(m.items_total, "item"),
            crate::human::plural(m.variants, "variant"),
            crate::human::plural(m.replicates, "replicate")
        )
    }) {
        return Err(format!("the shards disagree on the work: {split}"));
    }
    let n = shards[0].manifest.shards;
    let mut by_index: BTreeMap<usize, Vec<&Shard>> = BTreeMap::new();
    for s in shards {
        by_index.entry(s.manifest.shard).or_default().push(s);
    }
    let duplicates: Vec<String> = by_index
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(i, v)| {
            format!(
                "shard {i} of {n} given twice ({})",
                dirs_of(v.iter().copied())
            )
        })
        .collect();
    if !duplicates.is_empty() {
        return Err(format!("duplicate shards: {}", duplicates.join("; ")));
    }
    // `n` is at most the largest number of runs; only the first few
    // missing ones are listed.
    let missing_count = n - by_index.len();
    if missing_count > 0 {
        let missing: Vec<String> = (0..n)
            .filter(|i| !by_index.contains_key(i))
            .take(LISTED)
            .map(|i| i.to_string())
            .collect();
        let more = if missing_count > LISTED {
            format!(" and {} more", missing_count - LISTED)
        } else {
            String::new()
        };
        let found: Vec<String> = by_index
            .iter()
            .take(LISTED)
            .map(|(i, v)| format!("shard {i} in {}", dirs_of(v.iter().copied())))
            .collect();
        // Shard folders inside a shard folder (written there by an older
        // stormsim, or moved there) are not read: say where they are.
        let nested: Vec<String> = shards
            .iter()
            .filter_map(|s| std::fs::read_dir(&s.dir).ok())
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.join(MANIFEST).is_file())
            .take(LISTED)
            .map(|p| crate::escape::path(&p))
            .collect();
        let nested = if nested.is_empty() {
            String::new()
        } else {
            format!(
                "; shard folders inside a shard folder are not read, give them too: {}",
                nested.join(", ")
            )
        };
        return Err(format!(
            "missing shard{} {}{more} of {n} (expected one folder for each of shards 0 to {}; \
             their default folder is shard-I-of-{n}); found {}{nested}",
            if missing_count == 1 { "" } else { "s" },
            missing.join(", "),
            n - 1,
            found.join(", ")
        ));
    }
    // Each shard holds exactly the items the rule gives it, named as in
    // the other shards.
    let m0 = &shards[0].manifest;
    let mut names: BTreeMap<usize, (&str, &Shard)> = BTreeMap::new();
    for s in shards {
        let m = &s.manifest;
        let spec = ShardSpec::new(m.shard, n)?;
        let follows = m
            .items
            .iter()
            .map(|i| i.item)
            .eq(spec.items(m0.items_total));
        let replicates = m.replicates as usize;
        let consistent = m.items.iter().all(|i| {
            i.variant_index == i.item / replicates && i.replicate as usize == i.item % replicates
        });
        if !follows || !consistent {
            return Err(format!(
                "{}: the items of shard {} of {n} do not follow the rule ({})",
                crate::escape::path(&s.dir),
                m.shard,
                super::RULE
            ));
        }
        for i in &m.items {
            match names.get(&i.variant_index) {
                Some((name, other)) if *name != i.variant => {
                    return Err(format!(
                        "variant {} is `{}` in {} but `{name}` in {}",
                        i.variant_index,
                        i.variant,
                        crate::escape::path(&s.dir),
                        crate::escape::path(&other.dir)
                    ));
                }
                Some(_) => {}
                None => {
                    names.insert(i.variant_index, (&i.variant, s));
                }
            }
        }
    }
    Ok(())
}
