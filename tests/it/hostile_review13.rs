//! Thirteenth hostile review: an output written inside a folder another
//! stormsim command is writing is refused at once (L1), `check` shows
//! every factor of its amplification and never advises what is already
//! set (C1), and counts agree with their nouns (W1).

use std::fs;

use crate::common::files::{SMALL, names, snapshot, stormsim};
use stormsim::report::folder_lock::FolderLock;

/// L1: while another command writes `c2` (this test holds its lock, as
/// a run would), `run --out c2/sub` is refused at once, exit 2, naming the
/// folder and the process, and writes nothing, not even `c2`; `plot` of
/// a run folder inside it is refused the same way. It used to write
/// `c2/sub`, and the command writing `c2` failed at its end.
#[test]
fn an_output_inside_a_folder_being_written_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = tempfile::tempdir().unwrap();
    let scenario = inputs.path().join("small.yaml");
    fs::write(&scenario, SMALL).unwrap();
    let lock = FolderLock::acquire(tmp.path(), "c2".as_ref()).unwrap();
    let before = names(tmp.path());
    let o = stormsim()
        .current_dir(tmp.path())
        .arg("run")
        .arg(&scenario)
        .args(["--out", "c2/sub", "-q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: another stormsim command (process {}) is writing c2 (it holds the lock ",
            std::process::id()
        )) && err.contains("c2/sub lies inside it")
            && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(names(tmp.path()), before, "nothing written");
    drop(lock);

    // A run folder inside c2, then c2 being written: plot refuses it.
    stormsim()
        .current_dir(tmp.path())
        .arg("run")
        .arg(&scenario)
        .args(["--out", "c2/sub", "-q"])
        .assert()
        .success();
    let lock = FolderLock::acquire(tmp.path(), "c2".as_ref()).unwrap();
    let sub = tmp.path().join("c2/sub");
    let (kept, kept_names) = (snapshot(&sub), names(&sub));
    let o = stormsim()
        .current_dir(tmp.path())
        .args(["plot", "c2/sub"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is writing c2 (it holds the lock"), "{err}");
    assert!(snapshot(&sub) == kept, "c2/sub unchanged");
    assert_eq!(names(&sub), kept_names);
    drop(lock);
}

/// W1: a count of one takes the singular, in run, tune and check
/// ("1 runs", "1 candidates", "its 1 swept path are", "error(s)"), and
/// an error of a flag checked as its field says `error:` as every other
/// error of the command line (`--replicates 0` printed without it).
#[test]
fn counts_agree_with_their_nouns_and_flag_errors_say_error() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("small.yaml");
    fs::write(&scenario, SMALL).unwrap();
    let o = stormsim()
        .current_dir(tmp.path())
        .arg("run")
        .arg(&scenario)
        .args(["--replicates", "0", "--out", "o"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "error: --replicates: replicates is 0; expected 1 to 10000\n"
    );
    assert!(!tmp.path().join("o").exists());

    let o = stormsim()
        .current_dir(tmp.path())
        .arg("run")
        .arg(&scenario)
        .args(["--out", "o"])
        .env("CI", "1")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("stormsim: small (1 run)"), "{out}");

    let o = stormsim().arg("check").arg(&scenario).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("(s)"), "{out}");
    assert!(out.contains("0 errors, 1 warning, 1 info"), "{out}");

    let tuned = tmp.path().join("tuned.yaml");
    fs::write(
        &tuned,
        format!(
            "{SMALL}sweep:\n  layers.edge.retry.max_attempts: [2, 3]\ntune:\n  space:\n    \
             layers.edge.retry.max_attempts: {{ int: [1, 4] }}\n  objective: {{ maximize: \
             success_rate }}\n  budget: 1\n"
        ),
    )
    .unwrap();
    let o = stormsim()
        .current_dir(tmp.path())
        .arg("tune")
        .arg(&tuned)
        .args(["--out", "t"])
        .env("CI", "1")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}{err}");
    assert!(
        err.contains(
            "note: tune searches the scenario itself; its 1 swept path is not used (`stormsim run` compares it)"
        ),
        "{err}"
    );
    assert!(
        out.contains("stormsim tune: small: 1 candidate, 1 run of a budget of 1"),
        "{out}"
    );
    assert!(out.contains(" over 1 run"), "{out}");
    assert!(
        !out.contains("1 runs") && !out.contains("1 candidates"),
        "{out}"
    );
}
