//! Running the README's commands as a reader would, from the repository's
//! root: each in a scratch folder that holds copies of `scenarios/` and
//! `docs/examples/`, with `stormsim` on the PATH (this build's binary),
//! stdout and stderr together as a terminal shows them. A command that
//! several checks need runs once (`run`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_stormsim"))
}

/// What a command did.
#[derive(Debug)]
pub struct Ran {
    /// The folder it ran in.
    pub dir: PathBuf,
    pub code: i32,
    /// Its stdout and stderr, interleaved.
    pub out: String,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

/// This process's folder of scratch folders; those of earlier runs of this
/// test whose process is gone are removed on the way.
fn base() -> &'static Path {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        if let Ok(entries) = std::fs::read_dir(tmp) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("readme-")
                    && Path::new("/proc").is_dir()
                    && !Path::new("/proc").join(pid).exists()
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let base = tmp.join(format!("readme-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        base
    })
}

/// A new scratch folder with copies of `scenarios/` and `docs/examples/`.
pub fn scratch() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = base().join(N.fetch_add(1, Ordering::Relaxed).to_string());
    copy_dir(&repo().join("scenarios"), &dir.join("scenarios"));
    copy_dir(&repo().join("docs/examples"), &dir.join("docs/examples"));
    // The configuration files "Settings from configuration files" reads.
    copy_dir(
        &repo().join("tests/fixtures/configs"),
        &dir.join("tests/fixtures/configs"),
    );
    dir
}

/// The environment of a reader's shell: `stormsim` on the PATH, no
/// progress bar (`CI`).
pub fn command(program: &str, dir: &Path) -> Command {
    let mut c = Command::new(program);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin().parent().unwrap().to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    c.current_dir(dir)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("CI", "1")
        .env_remove("STORMSIM_SHARDS")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID");
    c
}

/// Runs a shell command line in `dir`.
pub fn shell(dir: &Path, line: &str) -> Ran {
    let out = command("sh", dir)
        .arg("-c")
        .arg(format!("exec 2>&1\n{line}"))
        .output()
        .unwrap();
    Ran {
        dir: dir.to_path_buf(),
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// `cargo run --release -- ARGS` is `stormsim ARGS` once installed.
pub fn as_installed(line: &str) -> String {
    match line.strip_prefix("cargo run --release -- ") {
        Some(rest) => format!("stormsim {rest}"),
        None => line.to_string(),
    }
}

/// Runs `line` in a scratch folder of its own, once for the whole test
/// binary: every check that quotes the same command reads the same run.
pub fn run(line: &str) -> &'static Ran {
    type Cell = Arc<OnceLock<&'static Ran>>;
    static RUNS: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell: Cell = RUNS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(line.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let ran = shell(&scratch(), line);
        &*Box::leak(Box::new(ran))
    })
}

/// Runs `line` and requires exit 0.
pub fn run_ok(line: &str) -> &'static Ran {
    let ran = run(line);
    assert_eq!(ran.code, 0, "`{line}` failed:\n{}", ran.out);
    ran
}

/// Whether `actual` is what `expected` shows: a line `...` stands for any
/// lines (none included), `…` within a line for any text.
pub fn output_matches(expected: &str, actual: &str) -> bool {
    let exp: Vec<&str> = expected.lines().map(str::trim_end).collect();
    let act: Vec<&str> = actual.lines().map(str::trim_end).collect();
    fn lines(e: &[&str], a: &[&str]) -> bool {
        match e.split_first() {
            None => a.is_empty(),
            Some((first, rest)) if first.trim() == "..." => {
                (0..=a.len()).any(|skip| lines(rest, &a[skip..]))
            }
            Some((first, rest)) => {
                !a.is_empty() && line_matches(first, a[0]) && lines(rest, &a[1..])
            }
        }
    }
    lines(&exp, &act)
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split('…').collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    if !actual.ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// A CSV file as rows of named cells.
pub fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

pub fn csv_header(path: &Path) -> Vec<String> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.headers().unwrap().iter().map(str::to_string).collect()
}

impl Ran {
    /// The output folder of scenario `name` (`output/<name>`).
    pub fn folder(&self, name: &str) -> PathBuf {
        self.dir.join("output").join(name)
    }

    /// `summary_by_variant.csv` of `name`, by variant.
    pub fn by_variant(&self, name: &str) -> Figures {
        let rows = csv_rows(&self.folder(name).join("summary_by_variant.csv"));
        Figures {
            rows: rows
                .into_iter()
                .map(|r| (r["variant"].clone(), r))
                .collect(),
        }
    }
}

/// The means of a run's variants.
pub struct Figures {
    rows: HashMap<String, HashMap<String, String>>,
}

impl Figures {
    /// `<column>` of `variant` as a number (`amplification_mean`).
    pub fn get(&self, variant: &str, column: &str) -> f64 {
        let row = self
            .rows
            .get(variant)
            .unwrap_or_else(|| panic!("no variant {variant:?}"));
        let cell = row
            .get(column)
            .unwrap_or_else(|| panic!("no column {column:?}"));
        cell.parse()
            .unwrap_or_else(|_| panic!("{variant}: {column} is {cell:?}"))
    }

    /// `<figure>_mean` of `variant`.
    pub fn mean(&self, variant: &str, figure: &str) -> f64 {
        self.get(variant, &format!("{figure}_mean"))
    }

    pub fn variants(&self) -> Vec<String> {
        let mut v: Vec<String> = self.rows.keys().cloned().collect();
        v.sort();
        v
    }
}

#[test]
fn shown_output_matches_with_its_wildcards() {
    assert!(output_matches("a\n...\nd\n", "a\nb\nc\nd\n"));
    assert!(output_matches("a\n  ...\nb", "a\nb"));
    assert!(!output_matches("a\nd", "a\nb\nd"));
    assert!(output_matches("x … of 200 runs", "x 6 of 200 runs"));
    assert!(!output_matches("x … of 200 runs", "x 6 of 100 runs"));
    assert!(output_matches(
        "d fnv:… in a; fnv:… in b",
        "d fnv:12 in a; fnv:34 in b"
    ));
    assert!(!output_matches("abc", "abcd"));
}
