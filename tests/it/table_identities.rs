//! `plot` and `merge` refuse a table whose figures no run could have
//! written (the identities of `src/report/table_identities.rs` and the
//! fractions of `table_check`): a real run's folder, one cell edited as a
//! user editing the CSV would, is refused with exit 2 naming the file,
//! the line and the column; untouched folders still plot and merge.

use std::fs;
use std::path::{Path, PathBuf};

use predicates::str::contains;

use crate::common::files::{copy_dir, scenario, set_cell, stormsim};

fn run(name: &str, out: &Path, extra: &[&str]) {
    stormsim()
        .arg("run")
        .arg(scenario(&format!("{name}.yaml")))
        .args(["--replicates", "1", "--quiet", "--out"])
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

fn rows(path: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn col(path: &Path, name: &str) -> usize {
    rows(path)[0].iter().position(|h| h == name).unwrap()
}

/// The first data row (1-based) whose `column` is `value`.
fn row_where(path: &Path, column: &str, value: &str) -> usize {
    let i = col(path, column);
    rows(path)
        .iter()
        .skip(1)
        .position(|r| r[i] == value)
        .expect("a row with that cell")
        + 1
}

fn plot_refuses(dir: &Path, message: &str) {
    stormsim()
        .arg("plot")
        .arg(dir)
        .arg("--quiet")
        .assert()
        .code(2)
        .stderr(contains(message));
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

/// Each edit: the table, the data row (1: the first), the column, the
/// new cell, and the message expected after `<file>: `.
type Edit = (&'static str, usize, &'static str, String, String);

fn edits(dir: &Path) -> Vec<Edit> {
    let ts = dir.join("timeseries.csv");
    let idle = row_where(&ts, "succeeded", "0");
    let first = &rows(&ts)[1];
    let attempts: u64 = first[col(&ts, "attempts")].parse().unwrap();
    vec![
        (
            "timeseries.csv",
            1,
            "utilization",
            "7777".into(),
            "line 2, column 17 (utilization): expected a number from 0 to 1".into(),
        ),
        (
            "timeseries.csv",
            idle,
            "goodput",
            "5".into(),
            format!(
                "line {}, column 18 (goodput): bucket {} of the run of variant",
                idle + 1,
                idle - 1
            ),
        ),
        (
            "timeseries.csv",
            1,
            "attempts",
            (attempts + 1).to_string(),
            format!(
                "line 2, column 5 (attempts): bucket 0 of the run of variant `{}`, replicate 0: \
                 attempts is {}, but attempts_client = {attempts}; attempts counts the attempts \
                 of the outermost layer",
                first[0],
                attempts + 1
            ),
        ),
        (
            "summary.csv",
            1,
            "amplification",
            "9.5".into(),
            "line 2, column 13 (amplification): the run of variant".into(),
        ),
        (
            "summary.csv",
            1,
            "dependency_utilization",
            "1.5".into(),
            "line 2, column 20 (dependency_utilization): expected a number from 0 to 1".into(),
        ),
    ]
}

#[test]
fn plot_refuses_figures_no_run_writes() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("quickstart");
    run("quickstart", &base, &[]);
    for (i, (file, row, column, value, message)) in edits(&base).into_iter().enumerate() {
        let dir = t.path().join(format!("edit{i}"));
        copy_dir(&base, &dir);
        let path = dir.join(file);
        set_cell(&path, row, column, &value);
        let label = path.display().to_string();
        plot_refuses(&dir, &format!("{label}: {message}"));
    }
}

#[test]
fn merge_refuses_figures_no_run_writes_and_real_shards_merge() {
    let t = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| {
            let d = t.path().join(format!("s{i}"));
            run("quickstart", &d, &["--shard", &format!("{i}/2")]);
            d
        })
        .collect();
    let merged = t.path().join("merged");
    merge(&shards, &merged).success();
    stormsim()
        .arg("plot")
        .arg(&merged)
        .arg("--quiet")
        .assert()
        .success();
    for (i, (file, row, column, value, message)) in edits(&shards[0]).into_iter().enumerate() {
        let bad = t.path().join(format!("bad{i}"));
        copy_dir(&shards[0], &bad);
        let path = bad.join(file);
        set_cell(&path, row, column, &value);
        let out = t.path().join(format!("out{i}"));
        merge(&[bad.clone(), shards[1].clone()], &out)
            .code(2)
            .stderr(contains(format!("{}: {message}", path.display())));
        assert!(!out.exists(), "a refused merge writes nothing");
    }
}

#[test]
fn untouched_folders_of_several_scenarios_still_plot() {
    let t = tempfile::tempdir().unwrap();
    // Several layers; services, calls and replicas tables; a sweep.
    for name in ["nested-layers", "three-tier", "capacity-sweep"] {
        let dir = t.path().join(name);
        run(name, &dir, &[]);
        stormsim()
            .arg("plot")
            .arg(&dir)
            .arg("--quiet")
            .assert()
            .success();
    }
}
