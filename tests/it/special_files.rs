//! Special files: a scenario, a table or a manifest that is a device, a
//! FIFO, a folder or a symbolic link to one of them is refused (exit 2)
//! without hanging or reading without end; oversized files are refused by
//! their size.

#![cfg(unix)]

use std::fs;
use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_stormsim");

/// Makes a FIFO (with no writer: opening it for reading blocks).
fn fifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// Runs stormsim, killing it (and failing) if it has not ended within a
/// generous bound: a FIFO must not make it hang.
fn stormsim(cwd: &Path, args: &[&str]) -> (i32, String) {
    let mut child = Command::new(BIN)
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("stormsim {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code().expect("exited, not killed"), stderr)
}

fn refused(cwd: &Path, args: &[&str], message: &str) {
    let (code, stderr) = stormsim(cwd, args);
    assert_eq!(code, 2, "{args:?}: {stderr}");
    assert!(stderr.contains(message), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn scenario_files_that_are_not_regular_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    fifo(&t.join("pipe.yaml"));
    symlink("/dev/zero", t.join("zero.yaml")).unwrap();
    symlink(t.join("pipe.yaml"), t.join("to-pipe.yaml")).unwrap();
    fs::create_dir(t.join("folder.yaml")).unwrap();
    for command in ["run", "validate", "check"] {
        refused(
            t,
            &[command, "/dev/zero"],
            "/dev/zero: is a character device, not a regular file",
        );
        refused(
            t,
            &[command, "pipe.yaml"],
            "pipe.yaml: is a FIFO (named pipe), not a regular file",
        );
        refused(
            t,
            &[command, "zero.yaml"],
            "zero.yaml: is a symbolic link to a character device",
        );
        refused(
            t,
            &[command, "to-pipe.yaml"],
            "is a symbolic link to a FIFO",
        );
        refused(t, &[command, "folder.yaml"], "is a directory");
    }
    assert!(!t.join("output").exists(), "nothing written");
}

/// A finished quickstart run in `dir`.
fn quickstart_run(dir: &Path) {
    let ok = Command::new(BIN)
        .args(["run", "--quiet", "--out"])
        .arg(dir)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn replace_with(path: &Path, special: impl FnOnce(&Path)) {
    fs::remove_file(path).unwrap();
    special(path);
}

#[test]
fn tables_that_are_not_regular_files_are_refused_by_plot() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (file, make, message) in [
        (
            "timeseries.csv",
            Box::new(fifo) as Box<dyn Fn(&Path)>,
            "is a FIFO",
        ),
        (
            "summary.csv",
            Box::new(|p: &Path| symlink("/dev/zero", p).unwrap()),
            "is a symbolic link to a character device",
        ),
        (
            "summary_by_variant.csv",
            Box::new(|p: &Path| symlink("/dev/urandom", p).unwrap()),
            "is a symbolic link to a character device",
        ),
        ("scenario.resolved.yaml", Box::new(fifo), "is a FIFO"),
    ] {
        let run = t.join(file);
        quickstart_run(&run);
        replace_with(&run.join(file), make);
        let report = fs::read(run.join("report.html")).unwrap();
        refused(
            t,
            &["plot", run.to_str().unwrap()],
            &format!("{}: {message}", run.join(file).display()),
        );
        assert_eq!(fs::read(run.join("report.html")).unwrap(), report);
    }
}

fn shard(dir: &Path) {
    let ok = Command::new(BIN)
        .args(["run", "--quiet", "--shard", "0/1", "--out"])
        .arg(dir)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn shard_files_that_are_not_regular_files_are_refused_by_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let out: PathBuf = t.join("merged");
    for file in [
        "manifest.json",
        "scenario.resolved.yaml",
        "timeseries.csv",
        "summary.csv",
        "summary.exact.csv",
    ] {
        let dir = t.join(format!("fifo-{file}"));
        shard(&dir);
        replace_with(&dir.join(file), fifo);
        refused(
            t,
            &[
                "merge",
                dir.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            &format!("{}: is a FIFO", dir.join(file).display()),
        );
        let dir = t.join(format!("zero-{file}"));
        shard(&dir);
        replace_with(&dir.join(file), |p| symlink("/dev/zero", p).unwrap());
        refused(
            t,
            &[
                "merge",
                dir.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            "is a symbolic link to a character device",
        );
    }
    assert!(!out.exists());
}

/// A table with no line breaks (here a sparse file of zeros, 2 GiB, under
/// the size cap) is refused once a line passes the longest row stormsim
/// writes, instead of being held in memory whole; merge bounds each table
/// by the rows its manifest lists.
#[test]
fn tables_without_line_breaks_are_refused_without_filling_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let run = t.join("run");
    quickstart_run(&run);
    let sparse = |path: &Path| {
        let f = fs::File::create(path).unwrap();
        f.set_len(2 << 30).unwrap();
    };
    replace_with(&run.join("timeseries.csv"), sparse);
    refused(
        t,
        &["plot", run.to_str().unwrap()],
        "a line longer than 1048576 bytes",
    );

    let dir = t.join("shard");
    shard(&dir);
    replace_with(&dir.join("timeseries.csv"), sparse);
    refused(
        t,
        &[
            "merge",
            dir.to_str().unwrap(),
            "--out",
            t.join("m").to_str().unwrap(),
        ],
        "the file is 2147483648 bytes; at most",
    );
}
