//! Standard output and standard error that cannot be written: a full disk
//! (`/dev/full`) and a pipe whose reader has gone (`| head`). No command
//! panics (exit 101, "panicked" on stderr): a full stdout is an error on
//! stderr and exit 1, a closed pipe ends the command quietly with 141
//! (128 + SIGPIPE), a full stderr changes nothing but the message.

#![cfg(unix)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_stormsim");

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn quickstart() -> String {
    repo("scenarios/quickstart.yaml").display().to_string()
}

fn stormsim(args: &[&str], stdout: Stdio, stderr: Stdio) -> Output {
    Command::new(BIN)
        .args(args)
        .env("CI", "1")
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .unwrap()
}

/// Commands that print on stdout, each with a folder of its own.
fn printing(dir: &Path) -> Vec<Vec<String>> {
    let q = quickstart();
    let out = dir.join("run").display().to_string();
    [
        vec!["schema"],
        vec!["presets"],
        vec!["presets", "show", "grpc-a6"],
        vec!["check", &q],
        vec!["validate", &q],
        vec!["completions", "bash"],
        vec!["run", &q, "--out", &out, "--force"],
    ]
    .iter()
    .map(|a| a.iter().map(|s| s.to_string()).collect())
    .collect()
}

#[test]
fn a_full_disk_on_stdout_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let full = File::options().write(true).open("/dev/full").unwrap();
        let o = stormsim(&args, Stdio::from(full), Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("error: cannot write to standard output: no space left on device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The run's results are written all the same.
    assert!(dir.path().join("run/summary.csv").is_file());
}

#[test]
fn a_closed_pipe_on_stdout_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = stormsim(&args, Stdio::from(writer), Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        // `check` exits 1 for a finding that is an error; otherwise 141.
        let expected = if args[0] == "check" && o.status.code() == Some(1) {
            1
        } else {
            141
        };
        assert_eq!(o.status.code(), Some(expected), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: quiet, but: {err}");
    }
}

#[test]
fn a_full_stderr_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bad = repo("docs/examples/bad.yaml").display().to_string();
    let out = dir.path().join("o").display().to_string();
    for (args, code) in [
        (vec!["validate", bad.as_str()], 2),
        (vec!["run", bad.as_str()], 2),
        (vec!["run", "--threads", "100000"], 2),
        (vec!["merge", "/nowhere"], 2),
        (vec!["plot", "/nowhere"], 2),
        (vec!["run", &quickstart(), "--out", &out, "--verbose"], 0),
    ] {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let o = stormsim(&args, Stdio::null(), Stdio::from(full));
        assert_eq!(o.status.code(), Some(code), "{args:?}");
    }
}
