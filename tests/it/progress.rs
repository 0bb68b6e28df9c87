//! Progress output of `stormsim run`: nothing on stderr in a pipe by
//! default (the bar is hidden), one line per run with `--verbose`, and
//! `--quiet` with `--verbose` is bad input.

use assert_cmd::Command;

fn run(extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("stormsim")
        .unwrap()
        .args(["run", "scenarios/quickstart.yaml", "--out"])
        .arg(dir.path().join("q"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn stderr_stays_quiet_in_a_pipe() {
    let out = run(&[]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn verbose_prints_a_line_per_run() {
    let out = run(&["--verbose"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("run ")).collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(lines.iter().all(|l| l.contains(" events")), "{err}");
}

#[test]
fn quiet_and_verbose_conflict() {
    let out = run(&["--quiet", "--verbose"]);
    assert_eq!(out.status.code(), Some(2));
}
