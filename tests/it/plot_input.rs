//! `plot` trusts nothing in the folder it reads: every table and the
//! resolved scenario are checked before anything is drawn. Each kind of
//! damage (emptied, cut, short rows, bad headers, unterminated quotes,
//! cells that are not numbers, rows out of order, hostile scenarios) is
//! refused with exit 2, naming the file, the line and the column, and
//! nothing in the folder changes.

use std::fs;
use std::path::Path;

use crate::common::files::copy_dir;
use assert_cmd::Command;

fn stormsim() -> Command {
    Command::cargo_bin("stormsim").unwrap()
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A table as rows of fields (the tables stormsim writes quote nothing).
fn rows(path: &Path) -> Vec<Vec<String>> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn write_rows(path: &Path, rows: &[Vec<String>]) {
    let text: String = rows.iter().map(|r| r.join(",") + "\n").collect();
    fs::write(path, text).unwrap();
}

/// Sets the cell of `column` on the data row `row` (1: the first).
fn set_cell(path: &Path, row: usize, column: &str, value: &str) {
    let mut r = rows(path);
    let i = r[0].iter().position(|h| h == column).unwrap();
    r[row][i] = value.to_string();
    write_rows(path, &r);
}

type Damage = Box<dyn Fn(&Path)>;

#[test]
fn damaged_tables_and_scenarios_are_refused_with_file_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    stormsim()
        .args([
            "run",
            "scenarios/capacity-sweep.yaml",
            "--quiet",
            "--replicates",
            "2",
            "--out",
        ])
        .arg(&good)
        .assert()
        .success();
    let cases: Vec<(Damage, &str)> = vec![
        (
            Box::new(|d| fs::write(d.join("timeseries.csv"), "").unwrap()),
            "timeseries.csv: line 1: empty",
        ),
        (
            Box::new(|d| fs::write(d.join("summary.csv"), "").unwrap()),
            "summary.csv: line 1: empty",
        ),
        (
            Box::new(|d| fs::write(d.join("summary_by_variant.csv"), "").unwrap()),
            "summary_by_variant.csv: line 1: empty",
        ),
        (
            Box::new(|d| fs::write(d.join("calls.csv"), "").unwrap()),
            "calls.csv: line 1: empty",
        ),
        (
            Box::new(|d| {
                let r = rows(&d.join("timeseries.csv"));
                write_rows(&d.join("timeseries.csv"), &r[..1]);
            }),
            "timeseries.csv: line 2: the table ends before the rows of the run of variant",
        ),
        (
            Box::new(|d| {
                let r = rows(&d.join("summary.csv"));
                write_rows(&d.join("summary.csv"), &r[..1]);
            }),
            "summary.csv: line 2: the table ends before",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("timeseries.csv"));
                r[5].pop();
                write_rows(&d.join("timeseries.csv"), &r);
            }),
            "timeseries.csv: line 6: ",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("services.csv"));
                r[2].push("extra".into());
                write_rows(&d.join("services.csv"), &r);
            }),
            "services.csv: line 3: ",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("timeseries.csv"));
                r[0][17] = "goodbye".into();
                write_rows(&d.join("timeseries.csv"), &r);
            }),
            "timeseries.csv: line 1, column 18 (goodbye): expected the column `goodput` here",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("summary.csv"));
                r[0][1] = "variant".into();
                write_rows(&d.join("summary.csv"), &r);
            }),
            "summary.csv: line 1, column 2 (variant): the column is given twice",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("timeseries.csv"));
                r[3][0] = format!("\"{}", r[3][0]);
                write_rows(&d.join("timeseries.csv"), &r);
            }),
            "timeseries.csv: line 4, column 1 (variant): holds a control character or a line break (an unterminated quote?)",
        ),
        (
            Box::new(|d| set_cell(&d.join("timeseries.csv"), 2, "goodput", "banana")),
            "timeseries.csv: line 3, column 18 (goodput): expected a number",
        ),
        (
            Box::new(|d| set_cell(&d.join("timeseries.csv"), 2, "t_s", "-1e308")),
            "timeseries.csv: line 3, column 3 (t_s): expected a time",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "success_rate", "inf")),
            "summary.csv: line 2, column 7 (success_rate): expected a number",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary_by_variant.csv"), 3, "goodput_mean", "NaN")),
            "summary_by_variant.csv: line 4, column ",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "recovered", "maybe")),
            "summary.csv: line 2, column 24 (recovered): expected `true`, `false`",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("timeseries.csv"));
                r.swap(3, 4);
                write_rows(&d.join("timeseries.csv"), &r);
            }),
            "timeseries.csv: line 4, column 3 (t_s): row 3 of the run of variant",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("summary.csv"));
                r.swap(1, 2);
                write_rows(&d.join("summary.csv"), &r);
            }),
            "summary.csv: line 2, column 1 (variant): expected the run of variant",
        ),
        (
            Box::new(|d| {
                let mut r = rows(&d.join("services_timeseries.csv"));
                r.remove(7);
                write_rows(&d.join("services_timeseries.csv"), &r);
            }),
            "services_timeseries.csv: line ",
        ),
        (
            Box::new(|d| {
                let p = d.join("summary.csv");
                let i = rows(&p)[0]
                    .iter()
                    .position(|h| h.starts_with("sweep."))
                    .unwrap();
                let mut r = rows(&p);
                r[1][i] = "7".into();
                write_rows(&p, &r);
            }),
            "summary.csv: line 2, column ",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "seed", "1")),
            "summary.csv: line 2, column 3 (seed): the run of variant",
        ),
        (
            Box::new(|d| fs::remove_file(d.join("calls.csv")).unwrap()),
            "has some of the services graph's tables but not calls.csv",
        ),
        (
            Box::new(|d| fs::write(d.join("scenario.resolved.yaml"), "").unwrap()),
            "scenario.resolved.yaml is not a valid scenario",
        ),
        (
            Box::new(|d| fs::remove_file(d.join("scenario.resolved.yaml")).unwrap()),
            "it has no scenario.resolved.yaml",
        ),
        (
            Box::new(|d| fs::write(d.join("scenario.resolved.yaml"), "name: [\n").unwrap()),
            "scenario.resolved.yaml:1:7: name: ",
        ),
    ];
    let yaml = fs::read_to_string(good.join("scenario.resolved.yaml")).unwrap();
    let mut cases = cases;
    let set_line = |key: &str, line: &str| -> String {
        yaml.lines()
            .map(|l| if l.starts_with(key) { line } else { l })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    };
    for (text, message) in [
        (
            set_line("duration:", "duration: 1000d"),
            "scenario.resolved.yaml:7:9: bucket: a bucket of 1s cuts the run (1000d)",
        ),
        (
            set_line("bucket:", "bucket: 1ns"),
            "scenario.resolved.yaml:7:9: bucket: a bucket of 1ns",
        ),
        (
            set_line("name:", "name: \"../../evil\""),
            "scenario.resolved.yaml:2:7: name: name `../../evil` cannot be a folder name",
        ),
        // Another sweep: the tables are no longer its runs.
        (
            yaml.replacen("max_attempts:\n  - 1\n", "max_attempts:\n  - 9\n", 1),
            "summary.csv: line 2, column 1 (variant): expected the run of variant \
             `max_attempts=9 jitter=none`, replicate 0, got variant `max_attempts=1 \
             jitter=none`",
        ),
    ] {
        assert_ne!(text, yaml);
        cases.push((
            Box::new(move |d: &Path| fs::write(d.join("scenario.resolved.yaml"), &text).unwrap()),
            message,
        ));
    }
    for (i, (damage, message)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        copy_dir(&good, &dir);
        damage(&dir);
        let before = tree(&dir);
        let o = stormsim().arg("plot").arg(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "case {i} ({message}): {err}");
        assert!(
            err.contains(message) && err.contains(&dir.display().to_string()),
            "case {i}: expected {message:?} in {err}"
        );
        assert!(tree(&dir) == before, "case {i}: the folder changed");
    }
    // The folder as run wrote it draws.
    stormsim().arg("plot").arg(&good).assert().success();
}
