//! Ctrl-C: a run stops within moments, writes nothing half-done, leaves an
//! existing output folder as it was and says what it did not write. (Its
//! own test binary: the stop flag is process-wide.)

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stormsim::interrupt;
use stormsim::report::OutputDir;

const BIN: &str = env!("CARGO_BIN_EXE_stormsim");

fn scenario() -> String {
    format!(
        "{}/scenarios/outage-recovery.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Starts a long run (200 runs) with `--verbose` and waits for its first
/// "run 1/200" line, so that the signal lands while runs are going on.
fn start_long_run(out: &Path) -> (Child, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(BIN)
        .args([
            "run",
            &scenario(),
            "--replicates",
            "50",
            "--verbose",
            "--out",
        ])
        .arg(out)
        .env("CI", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start stormsim");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("run 1/200"), "first line: {line:?}");
    (child, stderr)
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill {name} failed");
}

/// Waits for the child, failing the test (and killing the child) if it
/// does not exit within a generous bound: a stop must not hang.
fn wait_bounded(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("exited, not killed by the signal");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("stormsim did not stop after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn leftovers(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[cfg(unix)]
#[test]
fn ctrl_c_during_the_runs_writes_nothing_and_keeps_the_old_folder() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("summary.csv"), "old results\n").unwrap();

    let (mut child, mut stderr) = start_long_run(&out);
    signal(&child, "-INT");
    let code = wait_bounded(&mut child);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();

    assert_eq!(code, interrupt::EXIT_CODE, "stderr: {rest}");
    assert!(stdout.is_empty(), "no summary printed: {stdout}");
    let last = rest.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("interrupted: ") && last.contains(" of 200 runs had finished"),
        "{rest}"
    );
    assert!(
        last.contains("nothing was written")
            && last.contains("is as it was")
            && last.contains("summary.csv")
            && last.contains("report.html not written"),
        "{last}"
    );
    // The old folder is exactly as it was; no staging folder is left.
    let names: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert_eq!(names.len(), 1);
    assert_eq!(
        std::fs::read_to_string(out.join("summary.csv")).unwrap(),
        "old results\n"
    );
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
}

#[cfg(unix)]
#[test]
fn sigterm_stops_a_run_like_ctrl_c() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("fresh");
    let (mut child, mut stderr) = start_long_run(&out);
    signal(&child, "-TERM");
    let code = wait_bounded(&mut child);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(code, interrupt::EXIT_CODE, "{rest}");
    assert!(rest.contains("was not created"), "{rest}");
    assert!(!out.exists());
    assert!(leftovers(root.path()).is_empty());
}

/// A stop asked for while the files are being written: the next write
/// fails with `Interrupted`, and dropping the folder removes the staging
/// folder, leaving the old results whole.
#[test]
fn a_stop_while_writing_abandons_the_staging_folder() {
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("out");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("summary.csv"), "old").unwrap();

    let out = OutputDir::create(&target).unwrap();
    out.write("timeseries.csv", b"new").unwrap();
    interrupt::flag().store(true, std::sync::atomic::Ordering::SeqCst);
    let err = out.write("summary.csv", b"new").unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Interrupted);
    let err = out.commit().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Interrupted);
    interrupt::flag().store(false, std::sync::atomic::Ordering::SeqCst);

    assert_eq!(
        std::fs::read_to_string(target.join("summary.csv")).unwrap(),
        "old"
    );
    assert!(!target.join("timeseries.csv").exists());
    assert!(leftovers(root.path()).is_empty());
}
