//! A command-line flag's type error states the range its field accepts:
//! `--max-events` and `--max-in-flight` said "from 0" although 0 is then
//! refused (hostile review 11, D11).

use crate::common::files::stormsim;

#[test]
fn guard_rail_flags_state_their_fields_range() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("o");
    for flag in ["--max-events", "--max-in-flight"] {
        for bad in ["1e3", "-1", "2.5", "99999999999999999999999"] {
            let out = stormsim()
                .args(["run", "scenarios/quickstart.yaml", flag, bad, "--out"])
                .arg(&out_dir)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{flag} {bad}: {err}");
            assert!(
                err.contains("expected a whole number from 1 to 18446744073709551615"),
                "{flag} {bad}: {err}"
            );
            assert!(!out_dir.exists(), "{flag} {bad}: nothing is written");
        }
    }
}
