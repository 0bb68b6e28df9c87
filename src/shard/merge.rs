//! `stormsim merge`: shard folders back into the outputs of one run.
//!
//! The manifests must agree (format, stormsim version, scenario digest,
//! number of shards and items) and cover every shard `0..N` and every item
//! exactly once. Rows are then laid out in item order: `timeseries.csv`
//! and `summary.csv` are the shards' rows as written (they already carry
//! the columns of the whole run), `summary_by_variant.csv` is aggregated
//! from the exact summary cells, and the charts and report are drawn from
//! the merged tables as `stormsim plot` draws them. The result is byte for
//! byte what the unsharded run writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::metrics::Cell;
use crate::report::{self, tables};

use super::{EXACT_SUMMARY, FORMAT, MANIFEST, Manifest, ShardSpec, decode_cell, scenario_digest};

/// Why a merge failed.
#[derive(Debug)]
pub enum MergeError {
    /// The shard folders are missing, duplicated, mismatched or unreadable
    /// (bad input: exit 2).
    Input(String),
    /// The charts could not be drawn (exit 1).
    Draw(String),
}

/// The merged outputs, ready to write.
#[derive(Debug)]
pub struct Merged {
    /// The scenario's name (the default output folder).
    pub scenario: String,
    pub shards: usize,
    pub items: usize,
    /// (relative path, bytes): the three tables, `scenario.resolved.yaml`,
    /// the charts and `report.html`.
    pub files: Vec<(String, Vec<u8>)>,
}

struct Shard {
    dir: PathBuf,
    manifest: Manifest,
}

/// One item's share of the tables.
struct ItemData {
    variant_index: usize,
    variant: String,
    timeseries: Vec<u8>,
    summary: Vec<u8>,
    exact: Vec<(String, Cell)>,
}

/// The shard folders named by `dirs`: a shard folder (with a
/// `manifest.json`) stands for itself; a folder that holds shard folders
/// (`output/<name>/` after sharded runs with default folders) stands for
/// all of them.
pub fn expand_dirs(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|d| {
            let inner = super::shard_folders_in(d);
            if d.join(MANIFEST).is_file() || inner.is_empty() {
                vec![d.clone()]
            } else {
                inner.into_iter().map(|n| d.join(n)).collect()
            }
        })
        .collect()
}

/// Merges the shard folders `dirs` (in any order; see [`expand_dirs`]).
pub fn merge(dirs: &[PathBuf]) -> Result<Merged, MergeError> {
    let input = MergeError::Input;
    let dirs = &expand_dirs(dirs);
    if dirs.is_empty() {
        return Err(input("no shard folders given".into()));
    }
    let shards = dirs
        .iter()
        .map(|d| {
            Manifest::read(d).map(|manifest| Shard {
                dir: d.clone(),
                manifest,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(input)?;
    check_manifests(&shards).map_err(input)?;
    let first = &shards[0].manifest;
    let total = first.items_total;

    let mut resolved: Option<Vec<u8>> = None;
    let mut ts_header: Option<Vec<u8>> = None;
    let mut summary_header: Option<Vec<u8>> = None;
    let mut empty_ts: Option<Vec<u8>> = None;
    let mut empty_summary: Option<Vec<u8>> = None;
    let mut items: Vec<Option<ItemData>> = (0..total).map(|_| None).collect();
    let mut by_index: Vec<&Shard> = shards.iter().collect();
    by_index.sort_by_key(|s| s.manifest.shard);
    for shard in by_index {
        let data = read_shard(shard).map_err(input)?;
        if resolved.is_none() {
            resolved = Some(data.resolved);
        }
        agree(&mut ts_header, data.ts_header, shard, "timeseries.csv").map_err(input)?;
        agree(
            &mut summary_header,
            data.summary_header,
            shard,
            "summary.csv",
        )
        .map_err(input)?;
        empty_ts.get_or_insert(data.ts_whole_if_empty);
        empty_summary.get_or_insert(data.summary_whole_if_empty);
        for (k, item) in data.items {
            items[k] = Some(item);
        }
    }
    let items: Vec<ItemData> = items
        .into_iter()
        .enumerate()
        .map(|(k, i)| i.ok_or_else(|| format!("item {k} is in no shard")))
        .collect::<Result<_, _>>()
        .map_err(input)?;

    let timeseries = assemble(ts_header, empty_ts, items.iter().map(|i| &i.timeseries));
    let summary = assemble(
        summary_header,
        empty_summary,
        items.iter().map(|i| &i.summary),
    );
    let mut groups: Vec<(String, Vec<tables::Cells>)> = Vec::new();
    let mut last_variant = None;
    for item in &items {
        if last_variant != Some(item.variant_index) {
            groups.push((item.variant.clone(), Vec::new()));
            last_variant = Some(item.variant_index);
        }
        if let Some((_, rows)) = groups.last_mut() {
            rows.push(item.exact.clone());
        }
    }
    let by_variant = tables::summary_by_variant_csv_from_rows(&groups);
    let resolved = resolved.unwrap_or_default();
    let resolved_text = String::from_utf8_lossy(&resolved).into_owned();
    let data =
        report::ChartData::from_bytes(&timeseries, &summary, &by_variant, Some(&resolved_text))
            .map_err(MergeError::Draw)?;
    let visuals = report::visual_files(&data).map_err(MergeError::Draw)?;

    let mut files = vec![
        ("timeseries.csv".to_string(), timeseries),
        ("summary.csv".to_string(), summary),
        ("summary_by_variant.csv".to_string(), by_variant),
        ("scenario.resolved.yaml".to_string(), resolved),
    ];
    files.extend(visuals);
    Ok(Merged {
        scenario: first.scenario.clone(),
        shards: first.shards,
        items: total,
        files,
    })
}

fn assemble<'a>(
    header: Option<Vec<u8>>,
    empty: Option<Vec<u8>>,
    chunks: impl Iterator<Item = &'a Vec<u8>>,
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

/// Records the header of a shard's table; shards with rows must agree.
fn agree(
    seen: &mut Option<Vec<u8>>,
    header: Option<Vec<u8>>,
    shard: &Shard,
    file: &str,
) -> Result<(), String> {
    let Some(h) = header else { return Ok(()) };
    match seen {
        Some(s) if *s != h => Err(format!(
            "{}: the columns of {file} differ from the other shards'",
            shard.dir.display()
        )),
        Some(_) => Ok(()),
        None => {
            *seen = Some(h);
            Ok(())
        }
    }
}

fn dirs_of<'a>(shards: impl Iterator<Item = &'a Shard>) -> String {
    shards
        .map(|s| s.dir.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Describes how the shards split over a field, when they disagree.
fn split_by<K: Ord + std::fmt::Display>(
    shards: &[Shard],
    key: impl Fn(&Manifest) -> K,
) -> Option<String> {
    let mut groups: BTreeMap<K, Vec<&Shard>> = BTreeMap::new();
    for s in shards {
        groups.entry(key(&s.manifest)).or_default().push(s);
    }
    (groups.len() > 1).then(|| {
        groups
            .iter()
            .map(|(k, v)| format!("{k} in {}", dirs_of(v.iter().copied())))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

fn check_manifests(shards: &[Shard]) -> Result<(), String> {
    for s in shards {
        if s.manifest.format != FORMAT {
            return Err(format!(
                "{}: unknown shard format `{}` (expected `{FORMAT}`)",
                s.dir.display(),
                s.manifest.format
            ));
        }
    }
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
        if s.manifest.shard >= n {
            return Err(format!(
                "{}: shard index {} is out of range for {n} shards",
                s.dir.display(),
                s.manifest.shard
            ));
        }
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
    let missing: Vec<String> = (0..n)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing shard{} {} of {n} (expected one folder for each of shards 0 to {}; \
             their default folder is shard-I-of-{n})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            n - 1
        ));
    }
    // Each shard holds exactly the items the rule gives it, named as in
    // the other shards.
    let m0 = &shards[0].manifest;
    let mut names: BTreeMap<usize, (&str, &Shard)> = BTreeMap::new();
    for s in shards {
        let m = &s.manifest;
        let spec = ShardSpec::new(m.shard, n)?;
        let expected: Vec<usize> = spec.items(m0.items_total).collect();
        let got: Vec<usize> = m.items.iter().map(|i| i.item).collect();
        let replicates = m.replicates.max(1) as usize;
        let consistent = m.items.iter().all(|i| {
            i.variant_index == i.item / replicates && i.replicate as usize == i.item % replicates
        });
        if got != expected || !consistent {
            return Err(format!(
                "{}: the items of shard {} of {n} do not follow the rule ({})",
                s.dir.display(),
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
                        s.dir.display(),
                        other.dir.display()
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
    resolved: Vec<u8>,
    ts_header: Option<Vec<u8>>,
    summary_header: Option<Vec<u8>>,
    ts_whole_if_empty: Vec<u8>,
    summary_whole_if_empty: Vec<u8>,
    items: Vec<(usize, ItemData)>,
}

fn read(dir: &Path, file: &str) -> Result<Vec<u8>, String> {
    std::fs::read(dir.join(file)).map_err(|e| format!("{}: cannot read {file}: {e}", dir.display()))
}

/// A CSV file split into its header bytes and each record's
/// (variant, replicate, bytes).
struct Split {
    header: Vec<u8>,
    records: Vec<(String, String, Vec<u8>)>,
}

fn split_csv(bytes: &[u8]) -> Result<Split, String> {
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    r.byte_headers().map_err(|e| e.to_string())?;
    let mut starts = Vec::new();
    let mut keys = Vec::new();
    let mut rec = csv::ByteRecord::new();
    while r.read_byte_record(&mut rec).map_err(|e| e.to_string())? {
        let start = rec.position().map_or(0, |p| p.byte()) as usize;
        starts.push(start);
        let field = |i| String::from_utf8_lossy(rec.get(i).unwrap_or_default()).into_owned();
        keys.push((field(0), field(1)));
    }
    let header_end = starts.first().copied().unwrap_or(bytes.len());
    let records = keys
        .into_iter()
        .enumerate()
        .map(|(i, (v, r))| {
            let end = starts.get(i + 1).copied().unwrap_or(bytes.len());
            (v, r, bytes[starts[i]..end].to_vec())
        })
        .collect();
    Ok(Split {
        header: bytes[..header_end].to_vec(),
        records,
    })
}

fn read_shard(shard: &Shard) -> Result<ShardData, String> {
    let dir = &shard.dir;
    let m = &shard.manifest;
    let resolved = read(dir, "scenario.resolved.yaml")?;
    let digest = scenario_digest(&String::from_utf8_lossy(&resolved));
    if digest != m.scenario_digest {
        return Err(format!(
            "{}: scenario.resolved.yaml does not match the digest in its {MANIFEST} \
             ({digest}, manifest says {}): the folder was changed after the run",
            dir.display(),
            m.scenario_digest
        ));
    }
    let ts_bytes = read(dir, "timeseries.csv")?;
    let summary_bytes = read(dir, "summary.csv")?;
    let exact_bytes = read(dir, EXACT_SUMMARY)?;
    let bad = |file: &str, why: String| format!("{}: {file}: {why}", dir.display());
    let ts = split_csv(&ts_bytes).map_err(|e| bad("timeseries.csv", e))?;
    let summary = split_csv(&summary_bytes).map_err(|e| bad("summary.csv", e))?;

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
        let rec = rec.map_err(|e| bad(EXACT_SUMMARY, e.to_string()))?;
        exact_rows.push(rec.iter().map(str::to_string).collect::<Vec<String>>());
    }

    let n_items = m.items.len();
    if summary.records.len() != n_items || exact_rows.len() != n_items {
        return Err(format!(
            "{}: the manifest lists {n_items} runs but summary.csv has {} rows and \
             {EXACT_SUMMARY} {}",
            dir.display(),
            summary.records.len(),
            exact_rows.len()
        ));
    }
    let mut ts_records = ts.records.into_iter().peekable();
    let mut items = Vec::with_capacity(n_items);
    for ((item, srec), erow) in m.items.iter().zip(summary.records).zip(exact_rows) {
        let replicate = item.replicate.to_string();
        let names_item = |v: &str, r: &str| v == item.variant && r == replicate;
        if !names_item(&srec.0, &srec.1)
            || erow.len() < 3
            || !names_item(&erow[0], &erow[1])
            || erow.len() != exact_header.len()
        {
            return Err(format!(
                "{}: the rows of summary.csv or {EXACT_SUMMARY} do not match the \
                 manifest's run {} (variant `{}`, replicate {})",
                dir.display(),
                item.item,
                item.variant,
                item.replicate
            ));
        }
        let mut exact = Vec::with_capacity(erow.len() - 3);
        for (name, text) in exact_header.iter().zip(&erow).skip(3) {
            let cell = decode_cell(text).map_err(|e| bad(EXACT_SUMMARY, e))?;
            exact.push((name.clone(), cell));
        }
        let mut timeseries = Vec::new();
        while let Some((v, r, _)) = ts_records.peek() {
            if !names_item(v, r) {
                break;
            }
            if let Some((_, _, bytes)) = ts_records.next() {
                timeseries.extend_from_slice(&bytes);
            }
        }
        items.push((
            item.item,
            ItemData {
                variant_index: item.variant_index,
                variant: item.variant.clone(),
                timeseries,
                summary: srec.2,
                exact,
            },
        ));
    }
    if let Some((v, r, _)) = ts_records.next() {
        return Err(format!(
            "{}: timeseries.csv has rows of variant `{v}` replicate {r} out of the \
             manifest's order",
            dir.display()
        ));
    }
    let has_ts_rows = items.iter().any(|(_, i)| !i.timeseries.is_empty());
    Ok(ShardData {
        resolved,
        ts_header: has_ts_rows.then(|| ts.header.clone()),
        summary_header: (n_items > 0).then(|| summary.header.clone()),
        ts_whole_if_empty: if has_ts_rows { Vec::new() } else { ts_bytes },
        summary_whole_if_empty: if n_items > 0 {
            Vec::new()
        } else {
            summary_bytes
        },
        items,
    })
}
