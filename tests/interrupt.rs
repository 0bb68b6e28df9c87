//! Ctrl-C: a run stops within moments, writes nothing half-done, leaves an
//! existing output folder as it was and says what it did not write. (Its
//! own test binary: the stop flag is process-wide.)

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stormsim::interrupt;
use stormsim::report::output_dir::{Contents, Options};
use stormsim::report::{Mode, OutputDir, OutputError};

const BIN: &str = env!("CARGO_BIN_EXE_stormsim");

/// Held by the tests that raise the process-wide stop flag: one at a time.
static FLAG: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
        .filter(|n| n.starts_with('.') && n != ".stormsim")
        .collect()
}

/// Every file under `dir` (hidden ones too), with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// An earlier run's folder: the quickstart scenario, written by stormsim.
fn earlier_run(out: &Path) {
    let ok = Command::new(BIN)
        .args([
            "run",
            &format!("{}/scenarios/quickstart.yaml", env!("CARGO_MANIFEST_DIR")),
            "--quiet",
            "--out",
        ])
        .arg(out)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[cfg(unix)]
#[test]
fn ctrl_c_during_the_runs_writes_nothing_and_keeps_the_old_folder() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    earlier_run(&out);
    let before = tree(&out);

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
    // The old folder is exactly as it was; no work folder or lock is left.
    assert!(tree(&out) == before, "the earlier run's folder changed");
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
/// fails with `Interrupted`, and dropping the folder removes the work
/// folder and the lock, leaving the old results whole.
#[test]
fn a_stop_while_writing_abandons_the_staging_folder() {
    let _flag = FLAG.lock().unwrap_or_else(|e| e.into_inner());
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("out");
    let options = Options {
        mode: Mode::Folder,
        contents: Contents::Results,
        force: false,
        inputs: &[],
    };
    let old = OutputDir::prepare(&target, options).unwrap();
    old.write("summary.csv", b"old").unwrap();
    old.commit().unwrap();

    let out = OutputDir::prepare(&target, options).unwrap();
    out.write("timeseries.csv", b"new").unwrap();
    interrupt::flag().store(true, std::sync::atomic::Ordering::SeqCst);
    let err = out.write("summary.csv", b"new").unwrap_err();
    assert!(matches!(err, OutputError::Interrupted), "{err:?}");
    let err = out.commit().unwrap_err();
    assert!(matches!(err, OutputError::Interrupted), "{err:?}");
    interrupt::flag().store(false, std::sync::atomic::Ordering::SeqCst);

    assert_eq!(
        std::fs::read_to_string(target.join("summary.csv")).unwrap(),
        "old"
    );
    assert!(!target.join("timeseries.csv").exists());
    assert!(leftovers(root.path()).is_empty());
}

/// Whether the process has a handler for SIGTERM (signal 15): bit 14 of
/// `SigCgt` in /proc/PID/status (Linux).
fn catches_sigterm(pid: u32) -> bool {
    // Between fork and exec the child is still a copy of this test
    // process: a signal sent then is spent before stormsim runs. Only the
    // stormsim image's mask counts.
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"));
    let ours = std::fs::canonicalize(BIN);
    if !matches!((exe, ours), (Ok(e), Ok(b)) if e == b) {
        return false;
    }
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << 14) != 0)
}

/// Starts `stormsim ARGS`, sends SIGTERM as soon as its handler is in
/// place (within the first milliseconds: before it has read anything), and
/// returns the exit code and stderr.
#[cfg(target_os = "linux")]
fn sigterm_early(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start stormsim");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !catches_sigterm(child.id()) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "stormsim ended before installing its handler"
        );
        assert!(Instant::now() < deadline, "no SIGTERM handler installed");
        std::thread::sleep(Duration::from_micros(200));
    }
    signal(&child, "-TERM");
    let code = wait_bounded(&mut child);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (code, stderr)
}

/// `plot` and `merge` catch a signal from their first moments (they used
/// to install the handler only after reading and drawing: an early signal
/// killed them, 143 for SIGTERM, without a word), exit 130, say so, and
/// change nothing.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_early_in_plot_and_merge_exits_130_with_a_message() {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    earlier_run(&run);
    let before = tree(&run);
    let (code, stderr) = sigterm_early(&["plot".as_ref(), run.as_os_str()]);
    assert_eq!(code, interrupt::EXIT_CODE, "{stderr}");
    assert!(
        stderr.contains("interrupted: nothing was changed in"),
        "{stderr}"
    );
    assert!(tree(&run) == before, "plot changed the folder");
    assert!(leftovers(&run).is_empty(), "{:?}", leftovers(&run));

    let shard = root.path().join("shard");
    let ok = Command::new(BIN)
        .args(["run", &scenario(), "--quiet", "--shard", "0/1", "--out"])
        .arg(&shard)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let merged = root.path().join("merged");
    let (code, stderr) = sigterm_early(&[
        "merge".as_ref(),
        shard.as_os_str(),
        "--out".as_ref(),
        merged.as_os_str(),
    ]);
    assert_eq!(code, interrupt::EXIT_CODE, "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("interrupted: nothing was written"),
        "{stderr}"
    );
    assert!(!merged.exists());
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
}

/// Drawing polls the stop flag series by series: a chart of thousands of
/// lines (a large sweep), which takes seconds to draw whole, gives up
/// midway once a stop is asked for, and every chart job and the report
/// then end as `Interrupted`. (Before, a chart was drawn to its end, and
/// `plot` of a 10 000-variant sweep took up to 7 s to stop.)
#[test]
fn a_chart_of_many_lines_stops_midway() {
    let _flag = FLAG.lock().unwrap_or_else(|e| e.into_inner());
    use stormsim::report::chart_data::Point;
    use stormsim::report::figure::{Figure, Line, STOPPED, render};
    let lines: Vec<Line> = (0..20_000)
        .map(|i| Line {
            label: format!("variant {i}"),
            colour: stormsim::report::figure::colour(i),
            points: (0..50)
                .map(|t| Point {
                    t: f64::from(t),
                    mean: f64::from((t * 7 + i as i32) % 13),
                    min: 0.0,
                    max: 13.0,
                })
                .collect(),
            band: true,
            dashed: false,
            marker: stormsim::report::styles::marker(i),
        })
        .collect();
    let fig = Figure {
        title: "many".into(),
        lines,
        ..Figure::default()
    };
    let raise = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(100));
        interrupt::flag().store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let drawn = render(&fig);
    raise.join().unwrap();
    let err = drawn.expect_err("drawn to the end despite the stop");
    assert_eq!(err, STOPPED);
    // Every chart job after it.
    let data = stormsim::report::ChartData::default();
    assert!(matches!(
        stormsim::report::visual_files(&data),
        Err(stormsim::report::ReportError::Interrupted)
    ));
    interrupt::flag().store(false, std::sync::atomic::Ordering::SeqCst);
}

/// `plot` of a sweep of many variants stops at a signal sent while it
/// draws, with exit 130 and its message, and changes nothing.
#[cfg(unix)]
#[test]
fn sigterm_while_drawing_a_large_sweep_stops_plot() {
    let root = tempfile::tempdir().unwrap();
    let yaml = root.path().join("sweep.yaml");
    // 10 000 variants: more than a second to plot.
    let values: Vec<String> = (1..=100).map(|v| v.to_string()).collect();
    std::fs::write(
        &yaml,
        format!(
            "name: sweep\nduration: 2s\nbucket: 1s\n\
             clients: {{ arrival: {{ kind: poisson, rate: 20/s }} }}\n\
             layers: [{{ name: api, timeout: 200ms, retry: {{ max_attempts: 2 }} }}]\n\
             dependency: {{ concurrency: 4, service_time: {{ dist: exponential, mean: 10ms }} }}\n\
             sweep:\n  dependency.concurrency: [{v}]\n  dependency.queue.capacity: [{v}]\n",
            v = values.join(", ")
        ),
    )
    .unwrap();
    let out = root.path().join("out");
    let ok = Command::new(BIN)
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .arg(&yaml)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    // A whole plot first, timed: the signal then lands mid-way through
    // the second, however fast the machine (a fixed delay outlived a
    // whole plot of a smaller sweep).
    let start = Instant::now();
    let ok = Command::new(BIN)
        .args(["plot", "--quiet"])
        .arg(&out)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let whole = start.elapsed();
    let before = tree(&out);
    let mut child = Command::new(BIN)
        .arg("plot")
        .arg(&out)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(whole.mul_f64(0.6));
    signal(&child, "-TERM");
    let code = wait_bounded(&mut child);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(code, interrupt::EXIT_CODE, "{stderr}");
    assert!(
        stderr.contains("interrupted: nothing was changed in"),
        "{stderr}"
    );
    assert!(tree(&out) == before, "plot changed the folder");
}

/// While `run` only reads and checks its scenario (a sweep of 100 000
/// points takes seconds to check), there is no safe point to wait for:
/// the first signal quits at once, says so, and nothing is written.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_while_reading_a_large_sweep_quits_at_once() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("big.yaml");
    let list = |n: u32| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    std::fs::write(
        &file,
        format!(
            "name: big\nduration: 2s\n\
             dependency: {{ concurrency: 8, service_time: {{ dist: exponential, mean: 20ms }} }}\n\
             clients: {{ arrival: {{ kind: poisson, rate: 50/s }} }}\n\
             layers:\n  - {{ name: api, timeout: 1s, retry: {{ max_attempts: 3 }} }}\n\
             sweep:\n  layers.api.retry.max_attempts: [{}]\n  dependency.concurrency: [{}]\n  \
             layers.api.timeout: [100ms, 200ms, 300ms, 400ms, 500ms, 600ms, 700ms, 800ms, 900ms, 1s]\n",
            list(100),
            list(100)
        ),
    )
    .unwrap();
    let out = root.path().join("out");
    let (code, stderr) = sigterm_early(&[
        "run".as_ref(),
        file.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, interrupt::EXIT_CODE, "{stderr}");
    assert!(
        stderr.contains("interrupted: nothing was written (stopped while reading the scenario)"),
        "{stderr}"
    );
    assert!(!out.exists());
    assert!(
        leftovers(root.path()).is_empty(),
        "{:?}",
        leftovers(root.path())
    );
}

/// `validate` and `check` write nothing but take seconds on a large
/// sweep: they catch a signal from their first moments too (they used to
/// die silently, 143 for SIGTERM), exit 130 and say so.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_early_in_validate_and_check_exits_130_with_a_message() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("big.yaml");
    let list = |n: u32| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // 100 000 points: seconds to check, so the signal lands mid-way.
    std::fs::write(
        &file,
        format!(
            "name: big\nduration: 2s\n\
             dependency: {{ concurrency: 8, service_time: {{ dist: exponential, mean: 20ms }} }}\n\
             clients: {{ arrival: {{ kind: poisson, rate: 50/s }} }}\n\
             layers:\n  - {{ name: api, timeout: 1s, retry: {{ max_attempts: 3 }} }}\n\
             sweep:\n  layers.api.retry.max_attempts: [{}]\n  dependency.concurrency: [{}]\n  \
             layers.api.timeout: [100ms, 200ms, 300ms, 400ms, 500ms, 600ms, 700ms, 800ms, 900ms, 1s]\n",
            list(100),
            list(100)
        ),
    )
    .unwrap();
    for command in ["validate", "check"] {
        let (code, stderr) = sigterm_early(&[command.as_ref(), file.as_os_str()]);
        assert_eq!(code, interrupt::EXIT_CODE, "{command}: {stderr}");
        assert!(
            stderr.contains("interrupted: nothing was written"),
            "{command}: {stderr}"
        );
    }
}

/// `export` waits for another program's lock on the file (an advisory
/// `flock`, as two exports take turns): a signal while it waits ends it
/// with exit 130 and a message, the file as it was and nothing left
/// beside it; a lock released in time lets it write.
#[cfg(target_os = "linux")]
#[test]
fn export_waiting_for_a_lock_stops_on_a_signal_and_writes_once_it_is_free() {
    use nix::fcntl::{Flock, FlockArg};
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let manifest = env!("CARGO_MANIFEST_DIR");
    let into = dir.join("service-config.json");
    std::fs::copy(
        format!("{manifest}/tests/fixtures/configs/service-config.json"),
        &into,
    )
    .unwrap();
    let before = std::fs::read(&into).unwrap();
    let export = || {
        Command::new(BIN)
            .args([
                "export",
                &format!("{manifest}/docs/examples/best.yaml"),
                "--format",
                "grpc-service-config",
                "--method",
                "orders.v1.Orders/CreateOrder",
                "--into",
            ])
            .arg(&into)
            .env("CI", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start stormsim")
    };
    let lock = || {
        Flock::lock(std::fs::File::open(&into).unwrap(), FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .expect("lock the file")
    };
    let stderr_of = |child: &mut Child| {
        let mut s = String::new();
        child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
        s
    };
    // Still waiting after a second (an export takes milliseconds).
    let waiting = |child: &mut Child| {
        std::thread::sleep(Duration::from_secs(1));
        assert!(
            child.try_wait().unwrap().is_none(),
            "export did not wait for the lock: {}",
            stderr_of(child)
        );
    };
    let held = lock();
    let mut child = export();
    waiting(&mut child);
    signal(&child, "-TERM");
    let code = wait_bounded(&mut child);
    let stderr = stderr_of(&mut child);
    drop(held);
    assert_eq!(code, interrupt::EXIT_CODE, "{stderr}");
    assert!(
        stderr.contains("interrupted: nothing was written") && stderr.contains("was not changed"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&into).unwrap(),
        before,
        "the file is unchanged"
    );
    let beside: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["service-config.json"], "nothing left beside it");

    // Released while it waits: it writes.
    let held = lock();
    let mut child = export();
    waiting(&mut child);
    drop(held);
    let code = wait_bounded(&mut child);
    let stderr = stderr_of(&mut child);
    assert_eq!(code, 0, "{stderr}");
    let after = std::fs::read_to_string(&into).unwrap();
    assert_ne!(after.as_bytes(), before.as_slice(), "the export wrote");
    assert!(after.contains("\"initialBackoff\": \"0.25s\""), "{after}");
}
