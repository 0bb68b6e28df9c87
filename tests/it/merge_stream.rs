//! `stormsim merge` streams: it checks every shard's tables in one pass,
//! then copies each run's rows from its shard's file in item order,
//! holding neither. The merged folder is still the unsharded run's byte
//! for byte (a multi-variant sweep through a services graph, with
//! priority classes, split many ways); a cut shard is still refused
//! before anything is written; and the reorder of the copy pass puts
//! every run's bytes back in item order from real files, also past the
//! shards it keeps open.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::files::stormsim;
use predicates::str::contains;
use stormsim::shard::copy::{Interleaved, KEPT_OPEN, Spans, place};

/// A sweep of four variants through a small services graph, with two
/// priority classes: every table of a run has rows, `classes.csv`
/// included.
const SWEEP: &str = r#"
name: stream-sweep
seed: 11
duration: 6s
bucket: 500ms
replicates: 3
clients:
  arrival: { kind: poisson, rate: 150/s }
  classes:
    - { name: interactive, share: 0.7 }
    - { name: background, share: 0.3 }
  calls: { to: api, timeout: 800ms, retry: { max_attempts: 3 } }
services:
  - name: api
    concurrency: 16
    service_time: { dist: exponential, mean: 4ms }
    calls:
      - { to: db, timeout: 300ms, retry: { max_attempts: 2 } }
  - name: db
    concurrency: 4
    service_time: { dist: exponential, mean: 20ms }
    queue: { capacity: 32 }
    incidents:
      - { kind: down, start: 2s, end: 3s }
sweep:
  services.db.concurrency: [3, 4, 6, 9]
"#;

fn run(file: &Path, out: &Path, extra: &[&str]) {
    stormsim()
        .arg("run")
        .arg(file)
        .args(["--quiet", "--out"])
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

fn merge(dirs: &[PathBuf], out: &Path) -> assert_cmd::assert::Assert {
    stormsim()
        .arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .assert()
}

/// Every file under `dir`, by relative path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The shards 0..n of the sweep, under `base`.
fn shards(file: &Path, base: &Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let d = base.join(format!("shard-{i}-of-{n}"));
            run(file, &d, &["--shard", &format!("{i}/{n}")]);
            d
        })
        .collect()
}

fn sweep(tmp: &Path) -> PathBuf {
    let file = tmp.join("sweep.yaml");
    fs::write(&file, SWEEP).unwrap();
    file
}

#[test]
fn a_streamed_merge_of_a_sweep_is_the_unsharded_run_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let file = sweep(tmp.path());
    let full = tmp.path().join("full");
    run(&file, &full, &[]);
    let expected = tree(&full);
    for f in [
        "timeseries.csv",
        "services_timeseries.csv",
        "calls.csv",
        "classes.csv",
        "summary_by_variant.csv",
        "report.html",
    ] {
        assert!(expected.contains_key(f), "the unsharded run wrote {f}");
    }
    let rows = |f: &str| expected[f].iter().filter(|&&b| b == b'\n').count() - 1;
    assert_eq!(rows("timeseries.csv"), 4 * 3 * 12, "12 buckets a run");
    assert_eq!(rows("summary_by_variant.csv"), 4);
    // 5 shards: some hold runs of two variants, one of a variant's
    // replicates only; 13: one holds no run at all.
    for n in [2, 5, 13] {
        let base = tmp.path().join(format!("n{n}"));
        let mut dirs = shards(&file, &base, n);
        dirs.reverse();
        let merged = base.join("merged");
        merge(&dirs, &merged).success();
        let got = tree(&merged);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "N = {n}: the same files"
        );
        for (path, bytes) in &expected {
            assert!(got[path] == *bytes, "N = {n}: {path} differs");
        }
    }
}

/// A shard whose long tables were cut in the middle of a row, or by whole
/// rows at the end, is refused naming the file; nothing is written.
#[test]
fn a_cut_shard_is_still_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let file = sweep(tmp.path());
    let dirs = shards(&file, tmp.path(), 2);
    let out = tmp.path().join("merged");
    for (table, keep, message) in [
        // Mid-row: the last row is short of fields.
        ("timeseries.csv", 0.6, "timeseries.csv: line "),
        (
            "services_timeseries.csv",
            0.5,
            "services_timeseries.csv: line ",
        ),
    ] {
        let cut = tmp.path().join(format!("cut-{table}"));
        fs::create_dir_all(&cut).unwrap();
        for e in fs::read_dir(&dirs[1]).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), cut.join(e.file_name())).unwrap();
        }
        let bytes = fs::read(cut.join(table)).unwrap();
        let at = (bytes.len() as f64 * keep) as usize;
        fs::write(cut.join(table), &bytes[..at]).unwrap();
        merge(&[dirs[0].clone(), cut.clone()], &out)
            .code(2)
            .stderr(contains(cut.join(message).display().to_string()));
        assert!(!out.exists(), "{table}: a refused merge writes nothing");
    }
    merge(&dirs, &out).success();
}

/// Shard files of `n` shards of `total` items: a header, then item `k`'s
/// rows (`k mod 3` rows naming `k`), with the spans the check pass
/// records.
fn shard_files(dir: &Path, total: usize, n: usize) -> Vec<(PathBuf, Spans)> {
    (0..n)
        .map(|i| {
            let mut bytes = b"variant,replicate\n".to_vec();
            let mut spans = Spans {
                start: bytes.len() as u64,
                ends: Vec::new(),
            };
            for k in (i..total).step_by(n) {
                for r in 0..k % 3 {
                    bytes.extend_from_slice(format!("v{k},{r}\n").as_bytes());
                }
                spans.ends.push(bytes.len() as u64);
            }
            let path = dir.join(format!("s{i}.csv"));
            fs::write(&path, bytes).unwrap();
            (path, spans)
        })
        .collect()
}

/// The copy pass's reorder, on real files: item k comes from shard
/// k mod N at its position k div N, each file read front to back, for a
/// few shards and for more than it keeps open.
#[test]
fn the_copy_pass_reorders_real_files_into_item_order() {
    let tmp = tempfile::tempdir().unwrap();
    for (total, n) in [(7, 1), (30, 4), (KEPT_OPEN * 2 + 5, KEPT_OPEN + 9)] {
        let dir = tmp.path().join(format!("{total}-{n}"));
        fs::create_dir_all(&dir).unwrap();
        let files = shard_files(&dir, total, n);
        let spans: Vec<&Spans> = files.iter().map(|(_, s)| s).collect();
        let mut table = Interleaved::new(spans, |i| fs::File::open(&files[i].0));
        let mut got = Vec::new();
        for k in 0..total {
            let (i, j) = place(k, n);
            assert_eq!((i, j), (k % n, k / n));
            table
                .copy(k, |b| -> Result<(), ()> {
                    got.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
        }
        let want: String = (0..total)
            .flat_map(|k| (0..k % 3).map(move |r| format!("v{k},{r}\n")))
            .collect();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{total} in {n}");
    }
}
