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
