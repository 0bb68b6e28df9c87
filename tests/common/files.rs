//! File helpers of the tests that damage or copy output folders: one
//! cell of a table changed, a folder copied whole or its files read; and
//! the small scenario the hostile-review tests edit.

use std::fs;
use std::path::Path;

/// Sets the cell of `column` in data row `row` (row 0 is the header) of
/// a table stormsim wrote (its tables quote nothing).
pub fn set_cell(path: &Path, row: usize, column: &str, value: &str) {
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

/// Every file directly in `dir` (subfolders left out), by name, with its
/// bytes: to assert that a command left a folder as it was.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Copies the folder `from`, with its subfolders, to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
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

/// The `stormsim` binary, with the variables that choose a shard
/// (Kubernetes, Slurm, `STORMSIM_SHARDS`) cleared so the host's do not
/// leak into a test.
pub fn stormsim() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("stormsim").unwrap();
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

/// The bundled scenario `name` (`scenarios/NAME`).
pub fn scenario(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

/// A small run: one layer with an exponential backoff.
pub const SMALL: &str = "\
name: small
seed: 3
duration: 6s
bucket: 1s
replicates: 1
clients:
  arrival: { kind: poisson, rate: 50/s }
layers:
  - name: edge
    timeout: 200ms
    retry:
      max_attempts: 3
      backoff: { kind: exponential, base: 10ms, multiplier: 2, cap: 1s }
      jitter: none
      retry_on: [timeout, connection, 503]
dependency:
  concurrency: 8
  service_time: { dist: exponential, mean: 5ms }
  queue: { capacity: 64 }
";

/// The names in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
