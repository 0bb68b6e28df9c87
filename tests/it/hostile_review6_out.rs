//! Hostile review #6, output folders and the command line: a folder of
//! one kind (a run's, a shard's, a search's) is not replaced by a command
//! writing another without --force; `plot` says what a shard or tune
//! folder is; stormsim's own names are refused as output folders; a lock
//! path in the way is to be moved, never removed; clap's messages escape
//! what a terminal would act on; an error in a flag's value names the
//! flag as typed.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn stormsim(cwd: &Path) -> Command {
    let mut c = Command::cargo_bin("stormsim").unwrap();
    c.current_dir(cwd).env("CI", "1");
    c
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn quickstart() -> PathBuf {
    scenario("scenarios/quickstart.yaml")
}

fn timeouts() -> PathBuf {
    scenario("tests/fixtures/tune/timeouts.yaml")
}

/// Runs stormsim in `cwd`; returns (exit code, stderr).
fn exec(cwd: &Path, args: &[&str]) -> (i32, String) {
    let out = stormsim(cwd).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(cwd: &Path, args: &[&str]) {
    let (code, err) = exec(cwd, args);
    assert_eq!(code, 0, "{args:?}: {err}");
}

/// Every file and folder under `dir`, with the bytes of the files.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.push((rel + "/", Vec::new()));
                walk(root, &p, out);
            } else {
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// One of each kind of folder in `t`: `run/` (a run), `tuned/` (a
/// search), `shards/shard-0-of-2` and `shards/shard-1-of-2`.
fn folders_of_each_kind(t: &Path) {
    let q = quickstart();
    let q = q.to_str().unwrap();
    ok(t, &["run", q, "--out", "run", "-q"]);
    let tf = timeouts();
    ok(
        t,
        &[
            "tune",
            tf.to_str().unwrap(),
            "--out",
            "tuned",
            "--budget",
            "4",
            "-q",
        ],
    );
    for shard in ["0/2", "1/2"] {
        let name = format!("shards/shard-{}-of-2", &shard[..1]);
        ok(t, &["run", q, "--shard", shard, "--out", &name, "-q"]);
    }
}

#[test]
fn a_folder_of_another_kind_is_refused_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    folders_of_each_kind(t);
    let before = tree(t);
    let q = quickstart();
    let q = q.to_str().unwrap();
    let tf = timeouts();
    let tf = tf.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["run", q, "--out", "tuned"], "holds a tune search"),
        (
            &["run", q, "--out", "shards/shard-0-of-2"],
            "holds a shard of a run",
        ),
        (
            &["run", q, "--shard", "0/2", "--out", "run"],
            "holds the results of a run",
        ),
        (
            &["tune", tf, "--out", "run", "--budget", "4"],
            "holds the results of a run",
        ),
        (
            &["merge", "shards", "--out", "tuned"],
            "holds a tune search",
        ),
    ];
    for (args, what) in cases {
        let (code, err) = exec(t, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(what) && err.contains("--out") && err.contains("--force"),
            "{args:?}: {err}"
        );
        assert_eq!(tree(t), before, "{args:?} changed something");
    }
    // The same kind is replaced as before; another with --force.
    ok(t, &["run", q, "--out", "run", "-q"]);
    ok(t, &["merge", "shards", "--out", "run", "-q"]);
    ok(t, &["run", q, "--out", "tuned", "--force", "-q"]);
    assert!(t.join("tuned/summary.csv").is_file());
    assert!(!t.join("tuned/tune.csv").exists());
}

#[test]
fn plot_says_what_a_shard_or_tune_folder_is() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    folders_of_each_kind(t);
    let before = tree(t);
    for (dir, advice) in [
        (
            "shards/shard-0-of-2",
            "merge the shards first with `stormsim merge`",
        ),
        ("tuned", "plot the run folder instead"),
    ] {
        for force in [false, true] {
            let mut args = vec!["plot", dir];
            if force {
                args.push("--force");
            }
            let (code, err) = exec(t, &args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(
                err.contains("not a run folder") && err.contains(advice),
                "{args:?}: {err}"
            );
            assert_eq!(tree(t), before, "{args:?} changed something");
        }
    }
    ok(t, &["plot", "run", "-q"]);
}

#[test]
fn stormsims_own_names_are_refused_as_output_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let q = quickstart();
    for out in [
        ".stormsim",
        "new/.stormsim",
        ".stormsim-0123-1-0",
        "new/.stormsim-lock-x",
    ] {
        let (code, err) = exec(t, &["run", q.to_str().unwrap(), "--out", out, "--force"]);
        assert_eq!(code, 2, "{out}: {err}");
        assert!(err.contains("stormsim's own"), "{out}: {err}");
        assert!(tree(t).is_empty(), "{out}: {:?}", tree(t));
    }
}

#[test]
fn a_folder_at_the_lock_path_is_to_be_moved_not_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let hash = stormsim::shard::fnv1a64(b"out");
    let lock = t.join(format!(".stormsim-lock-{hash:016x}"));
    fs::create_dir(&lock).unwrap();
    fs::write(lock.join("mine.txt"), "precious").unwrap();
    let q = quickstart();
    let (code, err) = exec(t, &["run", q.to_str().unwrap(), "--out", "out"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("move it"), "{err}");
    let lower = err.to_lowercase();
    assert!(
        !lower.contains("remove") && !lower.contains("delet"),
        "{err}"
    );
    assert_eq!(fs::read(lock.join("mine.txt")).unwrap(), b"precious");
    assert!(!t.join("out").exists());
}

#[test]
fn clap_messages_escape_control_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for (args, shown) in [
        (
            vec!["run", "--seed", "\u{1b}[2J\u{1}x"],
            "'\\u{1b}[2J\\u{1}x'",
        ),
        (vec!["run", "--shard", "1\u{202e}/2"], "'1\\u{202e}/2'"),
        (
            vec!["run", "x.yaml", "--bo\u{1b}[31mgus"],
            "'--bo\\u{1b}[31mgus'",
        ),
        (vec!["tune", "x.yaml", "--budget", "\u{7f}9"], "'\\u{7f}9'"),
    ] {
        let out = stormsim(t).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(shown), "{args:?}: {err}");
        assert!(
            !err.chars().any(|c| c.is_control() && c != '\n') && !err.contains('\u{202e}'),
            "{args:?}: {err:?}"
        );
        assert!(err.contains("--help"), "{args:?}: clap's usage kept: {err}");
    }
}

#[test]
fn an_error_in_a_flags_value_names_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let q = quickstart();
    let q = q.to_str().unwrap();
    let tf = timeouts();
    let tf = tf.to_str().unwrap();
    for (args, flag) in [
        (vec!["tune", tf, "--budget", "0"], "error: --budget: "),
        (vec!["tune", tf, "--budget", "200000"], "error: --budget: "),
        (
            vec!["tune", tf, "--seed", "5", "--set", "seed=3"],
            "error: --seed: ",
        ),
        (
            vec!["run", q, "--seed", "5", "--set", "seed=3"],
            "error: --seed: ",
        ),
        (vec!["run", q, "--replicates", "0"], "error: --replicates: "),
        (vec!["run", q, "--max-events", "0"], "error: --max-events: "),
    ] {
        let (code, err) = exec(t, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.lines().any(|l| l.starts_with(flag)) && !err.contains("<--set>"),
            "{args:?}: {err}"
        );
        assert!(tree(t).is_empty(), "{args:?}: {:?}", tree(t));
    }
}
