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

/// Each edit of [`totals_edits`]: the table, the data row, the column,
/// the new cell, and the message expected (after `summary.csv: `).
fn totals_edits(dir: &Path) -> Vec<Edit> {
    let summary = dir.join("summary.csv");
    let ts = dir.join("timeseries.csv");
    // The first run: its summary row (line 2) and its first bucket.
    let run_row = rows(&summary)[1].clone();
    let variant = run_row[0].clone();
    let total = |name: &str| -> u64 { run_row[col(&summary, name)].parse().unwrap() };
    let bucket = |name: &str| -> u64 { rows(&ts)[1][col(&ts, name)].parse().unwrap() };
    let at = |name: &str| {
        format!(
            "line 2, column {} ({name}): the run of variant `{variant}`, replicate 0: ",
            col(&summary, name) + 1
        )
    };
    vec![
        (
            "summary.csv",
            1,
            "shed",
            (total("shed") + 1).to_string(),
            format!(
                "{}shed is {}, but its buckets in {} (from line 2) add up to {} shed",
                at("shed"),
                total("shed") + 1,
                ts.display(),
                total("shed")
            ),
        ),
        (
            "timeseries.csv",
            1,
            "dependency_attempts",
            (bucket("dependency_attempts") + 2).to_string(),
            format!(
                "{}dependency_attempts is {}, but its buckets in {} (from line 2) add up to \
                 {} dependency_attempts",
                at("dependency_attempts"),
                total("dependency_attempts"),
                ts.display(),
                total("dependency_attempts") + 2
            ),
        ),
    ]
}

/// A run's totals in `summary.csv` are the sums of its buckets in
/// `timeseries.csv`: one counter changed in either table (each table's
/// own identities still hold) is refused by `plot` and by `merge`,
/// named at the summary's cell with the line the run's buckets start
/// at; a run a guard rail stopped (empty buckets after the stop) still
/// plots.
#[test]
fn a_runs_totals_are_the_sums_of_its_buckets() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().join("quickstart");
    run("quickstart", &base, &[]);
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| {
            let d = t.path().join(format!("s{i}"));
            run("quickstart", &d, &["--shard", &format!("{i}/2")]);
            d
        })
        .collect();
    for (from, merged) in [(&base, false), (&shards[0], true)] {
        for (i, (file, row, column, value, message)) in totals_edits(from).into_iter().enumerate() {
            let dir = t.path().join(format!("edit{i}-{merged}"));
            copy_dir(from, &dir);
            set_cell(&dir.join(file), row, column, &value);
            let message = message.replace(&from.display().to_string(), &dir.display().to_string());
            let expected = format!("{}: {message}", dir.join("summary.csv").display());
            if merged {
                let out = t.path().join(format!("out{i}"));
                merge(&[dir.clone(), shards[1].clone()], &out)
                    .code(2)
                    .stderr(contains(expected));
                assert!(!out.exists(), "a refused merge writes nothing");
            } else {
                plot_refuses(&dir, &expected);
            }
        }
    }
    // A run a guard rail stopped: its buckets after the stop are empty,
    // its totals those of the buckets before; it plots.
    let stopped = t.path().join("stopped");
    stormsim()
        .arg("run")
        .arg(scenario("quickstart.yaml"))
        .args([
            "--replicates",
            "1",
            "--quiet",
            "--max-events",
            "20000",
            "--out",
        ])
        .arg(&stopped)
        .assert()
        .code(1);
    assert!(
        fs::read_to_string(stopped.join("summary.csv"))
            .unwrap()
            .contains("stopped after")
    );
    stormsim()
        .arg("plot")
        .arg(&stopped)
        .arg("--quiet")
        .assert()
        .success();
}
