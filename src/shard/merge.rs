//! `stormsim merge`: shard folders back into the outputs of one run.
//!
//! Nothing in a shard folder is trusted. [`plan`] reads and checks every
//! manifest ([`super::manifest`]); the manifests must agree (format,
//! stormsim version, scenario digest, number of shards and items) and
//! cover every shard `0..N` and every item exactly once; each
//! `scenario.resolved.yaml` must match its digest and load as a valid
//! scenario whose name, variants and replicates are the manifests'; and
//! each run's row count must be the one its scenario implies. [`merge`]
//! then reads the tables (regular files only, each under a byte cap) and
//! checks them against the manifests: each table has exactly the rows of
//! the manifest's runs, in order, and `timeseries.csv` exactly each run's
//! row count. Rows are laid out in item order: `timeseries.csv` and
//! `summary.csv` are the shards' rows as written (they already carry the
//! columns of the whole run), `summary_by_variant.csv` is aggregated from
//! the exact summary cells, and the charts and report are drawn from the
//! merged tables as `stormsim plot` draws them. The result is byte for
//! byte what the unsharded run writes. Both poll the stop flag
//! (`crate::interrupt`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::input_file::{InputError, read_capped};
use crate::interrupt::{self, POLL_ROWS};
use crate::metrics::Cell;
use crate::report::shape::RunShape;
use crate::report::table_check::{Runs, TableCheck, TableKind};
use crate::report::{self, tables};
use crate::scenario::{self, Scenario};

/// The most rows of `timeseries.csv` a merge takes: it holds every
/// shard's tables in memory (unlike `run`, which writes them as the runs
/// finish), and a million rows peak at about 1.8 GB.
const MAX_MERGED_ROWS: u64 = 2_000_000;
/// The most bytes of one shard's `timeseries.csv` (or
/// `services_timeseries.csv`) a merge reads into memory.
const MAX_MERGED_TABLE_BYTES: u64 = 8 << 30;

use super::{
    CLASSES, EXACT_SUMMARY, GRAPH_TABLES, MANIFEST, Manifest, ShardSpec, decode_cell,
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

/// The merged outputs, ready to write.
#[derive(Debug)]
pub struct Merged {
    /// (relative path, bytes): the three tables, `scenario.resolved.yaml`,
    /// the charts and `report.html`.
    pub files: Vec<(String, Vec<u8>)>,
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
            "the manifests describe {} variants × {} replicates but the scenario has {} × {}",
            m0.variants,
            m0.replicates,
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
                    "{}: run {} (variant `{}`, replicate {}) has {} rows of timeseries.csv \
                     in the manifest, but the scenario gives every run {expected}",
                    crate::escape::path(&shard.dir),
                    item.item,
                    item.variant,
                    item.replicate,
                    item.rows
                ));
            }
            total_rows += item.rows as u64;
        }
    }
    if total_rows > MAX_MERGED_ROWS {
        return Err(format!(
            "the manifests describe {total_rows} rows of timeseries.csv; merge takes at most \
             {MAX_MERGED_ROWS} (it holds the shards' tables in memory)"
        ));
    }
    let shape = RunShape::of_expanded(&variants, &s);
    Ok((s, shape))
}

/// One item's share of the tables: byte ranges in its shard's files.
struct ItemData {
    shard: usize,
    variant_index: usize,
    variant: String,
    timeseries: Range<usize>,
    summary: Range<usize>,
    exact: Vec<(String, Cell)>,
    /// Its rows in each graph table.
    graph: [Range<usize>; GRAPH_TABLES.len()],
}

/// Merges checked shard folders: reads their tables and builds the
/// outputs of one run.
pub fn merge(plan: &Plan) -> Result<Merged, MergeError> {
    let input = MergeError::Input;
    let total = plan.items();
    let mut ts_header: Option<Seen> = None;
    let mut summary_header: Option<Seen> = None;
    let mut empty_ts: Option<Vec<u8>> = None;
    let mut empty_summary: Option<Vec<u8>> = None;
    let mut tables: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(plan.shards.len());
    let mut graph_tables: Vec<Vec<Vec<u8>>> = Vec::with_capacity(plan.shards.len());
    let mut graph_headers: Vec<Option<Seen>> = vec![None; GRAPH_TABLES.len()];
    let mut items: Vec<Option<ItemData>> = (0..total).map(|_| None).collect();
    for (i, shard) in plan.shards.iter().enumerate() {
        interrupt::check()?;
        let data = read_shard(shard, i, &plan.shape)?;
        agree(&mut ts_header, data.ts_header, shard, "timeseries.csv").map_err(input)?;
        agree(
            &mut summary_header,
            data.summary_header,
            shard,
            "summary.csv",
        )
        .map_err(input)?;
        if empty_ts.is_none() && !data.has_ts_rows {
            empty_ts = Some(data.ts.clone());
        }
        if empty_summary.is_none() && data.items.is_empty() {
            empty_summary = Some(data.summary.clone());
        }
        for (k, item) in data.items {
            items[k] = Some(item);
        }
        let mut own = Vec::with_capacity(GRAPH_TABLES.len());
        for (t, (bytes, header)) in data.graph.into_iter().enumerate() {
            let h = Some(bytes[header].to_vec());
            agree(&mut graph_headers[t], h, shard, GRAPH_TABLES[t]).map_err(input)?;
            own.push(bytes);
        }
        graph_tables.push(own);
        tables.push((data.ts, data.summary));
    }
    let items: Vec<ItemData> = items
        .into_iter()
        .enumerate()
        .map(|(k, i)| i.ok_or_else(|| format!("item {k} is in no shard")))
        .collect::<Result<_, _>>()
        .map_err(input)?;

    let timeseries = assemble(
        ts_header.map(|s| s.0),
        empty_ts,
        items
            .iter()
            .map(|i| &tables[i.shard].0[i.timeseries.clone()]),
    );
    let summary = assemble(
        summary_header.map(|s| s.0),
        empty_summary,
        items.iter().map(|i| &tables[i.shard].1[i.summary.clone()]),
    );
    drop(tables);
    // classes.csv only when some run has classes, as an unsharded run.
    let has_classes = items.iter().any(|i| !i.graph[CLASSES].is_empty());
    let graph: Vec<(String, Vec<u8>)> = GRAPH_TABLES
        .iter()
        .enumerate()
        .filter(|&(t, _)| t != CLASSES || has_classes)
        .map(|(t, name)| {
            let mut out = graph_headers[t]
                .as_ref()
                .map(|s| s.0.clone())
                .unwrap_or_default();
            for i in &items {
                out.extend_from_slice(&graph_tables[i.shard][t][i.graph[t].clone()]);
            }
            (name.to_string(), out)
        })
        .collect();
    drop(graph_tables);
    let mut groups: Vec<(String, Vec<tables::Cells>)> = Vec::new();
    let mut last_variant = None;
    for (k, item) in items.iter().enumerate() {
        if k % 256 == 0 {
            interrupt::check()?;
        }
        if last_variant != Some(item.variant_index) {
            groups.push((item.variant.clone(), Vec::new()));
            last_variant = Some(item.variant_index);
        }
        if let Some((_, rows)) = groups.last_mut() {
            rows.push(item.exact.clone());
        }
    }
    let by_variant = tables::summary_by_variant_csv_from_rows_until(&groups, interrupt::flag())?;
    // GRAPH_TABLES: services.csv, services_timeseries.csv, calls.csv,
    // replicas.csv (which no chart reads).
    let table = |t: usize| graph.get(t).map_or(&[][..], |(_, b)| &b[..]);
    let data = report::ChartData::from_checked_bytes(
        &timeseries,
        &summary,
        &by_variant,
        &plan.loaded,
        plan.shape.clone(),
        None,
    )?
    .with_graph(report::graph_data::GraphSources {
        services: table(0),
        timeseries: table(1),
        calls: table(2),
    })?
    .with_classes(has_classes.then(|| table(CLASSES)))?;
    let visuals = report::visual_files(&data)?;

    let mut files = vec![
        ("timeseries.csv".to_string(), timeseries),
        ("summary.csv".to_string(), summary),
        ("summary_by_variant.csv".to_string(), by_variant),
        ("scenario.resolved.yaml".to_string(), plan.resolved.clone()),
    ];
    files.extend(graph);
    files.extend(visuals);
    let aborted = items
        .iter()
        .filter_map(|i| {
            i.exact.iter().find_map(|(name, cell)| match cell {
                Cell::Text(why) if name == "aborted" => Some((i.variant.clone(), why.clone())),
                _ => None,
            })
        })
        .collect();
    Ok(Merged { files, aborted })
}

fn assemble<'a>(
    header: Option<Vec<u8>>,
    empty: Option<Vec<u8>>,
    chunks: impl Iterator<Item = &'a [u8]>,
) -> Vec<u8> {
    match header {
        Some(mut out) => {
            for c in chunks {
                out.extend_from_slice(c);
            }
            out
        }
        // No shard had a row: the table of an empty run, as a shard wrote it.
        None => empty.unwrap_or_default(),
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
            "{} items ({} variants × {} replicates)",
            m.items_total, m.variants, m.replicates
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

/// What one shard folder contributes.
struct ShardData {
    /// The graph tables ([`super::GRAPH_TABLES`]): their bytes and header.
    graph: Vec<(Vec<u8>, Range<usize>)>,
    ts: Vec<u8>,
    summary: Vec<u8>,
    ts_header: Option<Vec<u8>>,
    summary_header: Option<Vec<u8>>,
    has_ts_rows: bool,
    items: Vec<(usize, ItemData)>,
}

/// Reads a file of a shard folder: a regular file of at most `cap` bytes.
fn read(dir: &Path, file: &str, cap: u64) -> Result<Vec<u8>, String> {
    read_capped(&dir.join(file), cap).map_err(|e| match e {
        InputError::NotFound => format!("{}: {file} is missing", crate::escape::path(dir)),
        e => format!("{}: {e}", crate::escape::path(&dir.join(file))),
    })
}

/// A CSV table split into its header's byte range and each record's
/// (variant, replicate, byte range); with `keep`, every record's fields.
struct Split {
    header: Range<usize>,
    names: Vec<String>,
    records: Vec<(String, String, Range<usize>)>,
    fields: Vec<Vec<String>>,
}

/// Splits a table of a shard, named `file` in messages, each row checked
/// by `check` (the table of the shard's runs) when given.
fn split_csv(
    bytes: &[u8],
    file: &str,
    mut check: Option<TableCheck<'_>>,
    keep: bool,
) -> Result<Split, MergeError> {
    let bad = |e: csv::Error| MergeError::Input(format!("{file}: {e}"));
    let checked = |e: report::table_check::TableError| MergeError::Input(e.to_string());
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let header = r.headers().map_err(bad)?.clone();
    if let Some(c) = check.as_mut() {
        c.header(&header).map_err(checked)?;
    }
    let mut starts = Vec::new();
    let mut keys = Vec::new();
    let mut fields = Vec::new();
    let mut rec = csv::StringRecord::new();
    while r.read_record(&mut rec).map_err(bad)? {
        if keys.len() % POLL_ROWS == 0 {
            interrupt::check()?;
        }
        if let Some(c) = check.as_mut() {
            c.row(&rec).map_err(checked)?;
        }
        let start = rec.position().map_or(0, |p| p.byte()) as usize;
        starts.push(start);
        let field = |i| rec.get(i).unwrap_or_default().to_string();
        keys.push((field(0), field(1)));
        if keep {
            fields.push(rec.iter().map(str::to_string).collect());
        }
    }
    if let Some(c) = check.as_mut() {
        c.finish().map_err(checked)?;
    }
    let header_end = starts.first().copied().unwrap_or(bytes.len());
    let records = keys
        .into_iter()
        .enumerate()
        .map(|(i, (v, r))| {
            let end = starts.get(i + 1).copied().unwrap_or(bytes.len());
            (v, r, starts[i]..end)
        })
        .collect();
    Ok(Split {
        header: 0..header_end,
        names: header.iter().map(str::to_string).collect(),
        records,
        fields,
    })
}

fn read_shard(shard: &Shard, index: usize, plan_shape: &RunShape) -> Result<ShardData, MergeError> {
    let dir = &shard.dir;
    let m = &shard.manifest;
    let input = MergeError::Input;
    // Caps from the manifest: no row stormsim writes is longer than
    // MAX_ROW_BYTES, so a larger file is not the shard's.
    let row = tables::MAX_ROW_BYTES as u64;
    let rows: u64 = m.items.iter().map(|i| i.rows as u64).sum();
    let ts_cap = (rows + 1).saturating_mul(row).min(MAX_MERGED_TABLE_BYTES);
    let summary_cap = (m.items.len() as u64 + 1)
        .saturating_mul(row)
        .min(tables::MAX_SUMMARY_BYTES);
    let ts_bytes = read(dir, "timeseries.csv", ts_cap).map_err(input)?;
    let summary_bytes = read(dir, "summary.csv", summary_cap).map_err(input)?;
    let exact_bytes = read(dir, EXACT_SUMMARY, summary_cap).map_err(input)?;
    let bad = |file: &str, why: String| {
        MergeError::Input(format!("{}: {why}", crate::escape::path(&dir.join(file))))
    };
    // The tables of the shard's runs, checked as `plot` checks a run's
    // (a shard without runs has empty tables).
    let runs: Vec<usize> = m.items.iter().map(|i| i.item).collect();
    let label = |file: &str| crate::escape::path(&dir.join(file));
    let check = |kind: TableKind| {
        (!runs.is_empty())
            .then(|| TableCheck::new(kind, label(kind.file()), plan_shape, Runs::Only(&runs)))
    };
    let ts = split_csv(
        &ts_bytes,
        &label("timeseries.csv"),
        check(TableKind::Timeseries),
        false,
    )?;
    let mut graph_split = Vec::with_capacity(GRAPH_TABLES.len());
    let mut graph = Vec::with_capacity(GRAPH_TABLES.len());
    let graph_kinds = [
        TableKind::Services,
        TableKind::ServicesTimeseries,
        TableKind::Calls,
        TableKind::Replicas,
        TableKind::Classes,
    ];
    for (t, file) in GRAPH_TABLES.iter().enumerate() {
        let rows: u64 = m.items.iter().map(|i| i.graph_rows[t] as u64).sum();
        let cap = (rows + 1).saturating_mul(row).min(MAX_MERGED_TABLE_BYTES);
        let bytes = read(dir, file, cap).map_err(input)?;
        let split = split_csv(&bytes, &label(file), check(graph_kinds[t]), false)?;
        graph.push((bytes, split.header.clone()));
        graph_split.push(split.records.into_iter().peekable());
    }
    let summary = split_csv(
        &summary_bytes,
        &label("summary.csv"),
        check(TableKind::Summary),
        true,
    )?;

    let mut exact_reader = csv::ReaderBuilder::new().from_reader(exact_bytes.as_slice());
    let exact_header: Vec<String> = if m.items.is_empty() {
        Vec::new()
    } else {
        exact_reader
            .headers()
            .map_err(|e| bad(EXACT_SUMMARY, e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect()
    };
    let mut exact_rows = Vec::new();
    for rec in exact_reader.records() {
        if exact_rows.len() % POLL_ROWS == 0 {
            interrupt::check()?;
        }
        let rec = rec.map_err(|e| bad(EXACT_SUMMARY, e.to_string()))?;
        exact_rows.push(rec.iter().map(str::to_string).collect::<Vec<String>>());
    }

    let n_items = m.items.len();
    if summary.records.len() != n_items || exact_rows.len() != n_items {
        return Err(input(format!(
            "{}: the manifest lists {n_items} runs but summary.csv has {} rows and \
             {EXACT_SUMMARY} {}: the folder was changed after the run",
            crate::escape::path(dir),
            summary.records.len(),
            exact_rows.len()
        )));
    }
    let mut ts_records = ts.records.into_iter().peekable();
    let mut items = Vec::with_capacity(n_items);
    if n_items > 0 && summary.names != exact_header {
        return Err(bad(
            EXACT_SUMMARY,
            "its columns are not those of summary.csv: the folder was changed after the run"
                .to_string(),
        ));
    }
    let rows = m.items.iter().zip(summary.records).zip(exact_rows);
    for (line, (((item, srec), erow), shown)) in (2..).zip(rows.zip(&summary.fields)) {
        if line % 256 == 0 {
            interrupt::check()?;
        }
        let replicate = item.replicate.to_string();
        let names_item = |v: &str, r: &str| v == item.variant && r == replicate;
        if !names_item(&srec.0, &srec.1)
            || erow.len() < 3
            || !names_item(&erow[0], &erow[1])
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
        let mut exact = Vec::with_capacity(erow.len() - 3);
        for (column, ((name, text), shown)) in exact_header
            .iter()
            .zip(&erow)
            .zip(shown)
            .enumerate()
            .skip(3)
        {
            let cell = decode_cell(text).map_err(|e| bad(EXACT_SUMMARY, e))?;
            // summary.csv shows the exact cell, rounded: the two agree.
            let rendered = cell.render();
            if *shown != rendered {
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
            exact.push((name.clone(), cell));
        }
        let mut timeseries: Option<Range<usize>> = None;
        let mut rows = 0usize;
        while let Some((v, r, _)) = ts_records.peek() {
            if !names_item(v, r) {
                break;
            }
            if let Some((_, _, range)) = ts_records.next() {
                timeseries = Some(timeseries.map_or(range.clone(), |t| t.start..range.end));
                rows += 1;
            }
        }
        if rows != item.rows {
            return Err(bad(
                "timeseries.csv",
                format!(
                    "{rows} rows of run {} (variant `{}`, replicate {}), but its {MANIFEST} \
                     says {}: the file was cut or changed after the run",
                    item.item, item.variant, item.replicate, item.rows
                ),
            ));
        }
        let mut graph_ranges: [Range<usize>; GRAPH_TABLES.len()] = Default::default();
        for (t, records) in graph_split.iter_mut().enumerate() {
            let mut range: Option<Range<usize>> = None;
            let mut rows = 0usize;
            while let Some((v, r, _)) = records.peek() {
                if !names_item(v, r) {
                    break;
                }
                if let Some((_, _, next)) = records.next() {
                    range = Some(range.map_or(next.clone(), |t| t.start..next.end));
                    rows += 1;
                }
            }
            if rows != item.graph_rows[t] {
                return Err(bad(
                    GRAPH_TABLES[t],
                    format!(
                        "{rows} rows of run {} (variant `{}`, replicate {}), but its {MANIFEST} \
                         says {}: the file was cut or changed after the run",
                        item.item, item.variant, item.replicate, item.graph_rows[t]
                    ),
                ));
            }
            graph_ranges[t] = range.unwrap_or(0..0);
        }
        items.push((
            item.item,
            ItemData {
                graph: graph_ranges,
                shard: index,
                variant_index: item.variant_index,
                variant: item.variant.clone(),
                timeseries: timeseries.unwrap_or(0..0),
                summary: srec.2,
                exact,
            },
        ));
    }
    if let Some((v, r, _)) = ts_records.next() {
        return Err(bad(
            "timeseries.csv",
            format!(
                "rows of variant {v:?} replicate {r:?} out of the manifest's runs or their order"
            ),
        ));
    }
    for (t, records) in graph_split.iter_mut().enumerate() {
        if let Some((v, r, _)) = records.next() {
            return Err(bad(
                GRAPH_TABLES[t],
                format!(
                    "rows of variant {v:?} replicate {r:?} out of the manifest's runs or their order"
                ),
            ));
        }
    }
    let has_ts_rows = items.iter().any(|(_, i)| !i.timeseries.is_empty());
    Ok(ShardData {
        graph,
        ts_header: has_ts_rows.then(|| ts_bytes[ts.header.clone()].to_vec()),
        summary_header: (n_items > 0).then(|| summary_bytes[summary.header.clone()].to_vec()),
        has_ts_rows,
        ts: ts_bytes,
        summary: summary_bytes,
        items,
    })
}
