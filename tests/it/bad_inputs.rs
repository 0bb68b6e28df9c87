//! The corpus of hostile inputs in `tests/bad_inputs/`: every `NAME.yaml`
//! (with the extra arguments of `NAME.args`, one a line, if any) must make
//! both `stormsim validate` and `stormsim run --out DIR` exit 2 with exactly
//! the stderr of `NAME.expected`, without a panic and without writing the
//! output folder. `BLESS=1 cargo test --test it bad_inputs::` rewrites the
//! expectations (review the diff).

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

const CORPUS: &str = "tests/bad_inputs";

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(CORPUS)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    cases.sort();
    cases
}

fn extra_args(case: &Path) -> Vec<String> {
    std::fs::read_to_string(case.with_extension("args"))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

fn stormsim(args: &[&str], extra: &[String]) -> Output {
    Command::cargo_bin("stormsim")
        .unwrap()
        .args(args)
        .args(extra)
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap()
}

/// Checks `case` (a path relative to the crate) and returns its stderr.
fn check(case: &Path, name: &str, failures: &mut Vec<String>) -> String {
    let file = case.to_str().unwrap();
    let extra = extra_args(case);
    let validate = stormsim(&["validate", file], &extra);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = stormsim(&["run", file, "--out", out.to_str().unwrap(), "-q"], &extra);
    let stderr = String::from_utf8_lossy(&validate.stderr).into_owned();
    let run_stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    for (cmd, o, err) in [("validate", &validate, &stderr), ("run", &run, &run_stderr)] {
        if o.status.code() != Some(2) {
            failures.push(format!("{name}: {cmd} exited {:?}", o.status.code()));
        }
        if err.contains("panicked") {
            failures.push(format!("{name}: {cmd} panicked: {err}"));
        }
    }
    if run_stderr != stderr {
        failures.push(format!(
            "{name}: run and validate differ:\n{run_stderr}\n{stderr}"
        ));
    }
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    if !leftovers.is_empty() {
        failures.push(format!("{name}: run wrote {leftovers:?}"));
    }
    stderr
}

#[test]
fn every_hostile_input_is_refused_with_its_message() {
    let bless = std::env::var_os("BLESS").is_some();
    let cases = cases();
    assert!(cases.len() >= 40, "the corpus has {} inputs", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_stem().unwrap().to_str().unwrap().to_string();
        let stderr = check(case, &name, &mut failures);
        let expected_path = case.with_extension("expected");
        if bless {
            std::fs::write(&expected_path, &stderr).unwrap();
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(expected) if expected == stderr => {}
            Ok(expected) => failures.push(format!(
                "{name}: stderr differs\n--- expected\n{expected}--- got\n{stderr}"
            )),
            Err(_) => failures.push(format!("{name}: no {}", expected_path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A file that cannot be read. As root `chmod 000` does not stop reading
/// (root bypasses permission bits), so the case is skipped there.
#[test]
fn an_unreadable_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("locked.yaml");
    std::fs::copy(format!("{CORPUS}/zero-concurrency.yaml"), &file).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&file).is_ok() {
        eprintln!("skipped: running as root, chmod 000 does not prevent reading");
        return;
    }
    let o = stormsim(&["validate", file.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "{}: permission denied: cannot read the file\n",
            file.display()
        )
    );
}
