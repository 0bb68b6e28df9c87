//! Fourth hostile review: a shard's exact summary cells checked against
//! their column's type, the memory gate counting what grows with load,
//! periodic timers in the events estimate, the yardstick kept out of a
//! search, and the largest sweep refused from counts.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::str::contains;

fn stormsim() -> Command {
    let mut c = Command::cargo_bin("stormsim").unwrap();
    for v in [
        "JOB_COMPLETION_INDEX",
        "STORMSIM_SHARDS",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_MAX",
        "SLURM_ARRAY_TASK_STEP",
    ] {
        c.env_remove(v);
    }
    c
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

/// Sets one cell of a shard's table (the tables quote nothing).
fn set_cell(path: &Path, row: usize, column: &str, value: &str) {
    let text = fs::read_to_string(path).unwrap();
    let mut rows: Vec<Vec<String>> = text
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let i = rows[0].iter().position(|h| h == column).unwrap();
    rows[row][i] = value.to_string();
    let text: String = rows.iter().map(|r| r.join(",") + "\n").collect();
    fs::write(path, text).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// R6: a cell of another type than its column's (text where a number is
/// due, with `summary.csv` emptied to match; a float that is not finite; a
/// negative integer) is refused naming the file, line and column, exit 2,
/// nothing written; it used to panic in the merged tables.
#[test]
fn exact_cells_of_the_wrong_type_are_refused_with_their_place() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = [t.join("s0"), t.join("s1")];
    for (i, dir) in s.iter().enumerate() {
        stormsim()
            .arg("run")
            .arg(scenario("quickstart.yaml"))
            .args(["--quiet", "--shard", &format!("{i}/2"), "--out"])
            .arg(dir)
            .assert()
            .success();
    }
    // (column, exact cell, summary.csv's cell (None: as it is), message)
    let cases: [(&str, &str, Option<&str>, &str); 6] = [
        ("amplification", "t:", Some(""), "a finite number"),
        ("success_rate", "t:x", Some(""), "a finite number"),
        ("amplification", "f:NaN", Some(""), "a finite number"),
        ("amplification", "f:inf", Some(""), "a finite number"),
        ("amplification", "f:1e400", Some(""), "a finite number"),
        ("succeeded", "i:-1", None, "`i:-1` is not an exact cell"),
    ];
    for (column, exact, shown, message) in cases {
        let d = t.join("damaged");
        let _ = fs::remove_dir_all(&d);
        copy_dir(&s[0], &d);
        set_cell(&d.join("summary.exact.csv"), 1, column, exact);
        if let Some(shown) = shown {
            set_cell(&d.join("summary.csv"), 1, column, shown);
        }
        let out = t.join("merged");
        stormsim()
            .arg("merge")
            .arg(&d)
            .arg(&s[1])
            .arg("--out")
            .arg(&out)
            .arg("--quiet")
            .assert()
            .code(2)
            .stderr(contains("summary.exact.csv: line 2, column "))
            .stderr(contains(format!("({column}): ")))
            .stderr(contains(message));
        assert!(!out.exists(), "{column} = {exact}: nothing is written");
    }
}
