//! Memory running out under an address-space limit (`ulimit -v`) ends a
//! command with a message and exit 1, never an abort (exit 134, "memory
//! allocation of N bytes failed", a backtrace) that leaves a work folder
//! behind: `stormsim plot` on an `outage-recovery` folder aborted so under
//! 25 to 30 MB (hostile review 11, D1b). The binary's allocator
//! (`out_of_memory::ExitOnFailure`) says so, removes its staging folder
//! and exits 1; the folder's results are as they were.

use crate::common::files::snapshot;

#[cfg(target_os = "linux")]
#[test]
fn out_of_memory_under_a_limit_is_an_error_with_a_message_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = std::fs::canonicalize("scenarios/outage-recovery.yaml").unwrap();
    let bin = assert_cmd::cargo::cargo_bin("stormsim");
    let folder = dir.path().join("o");
    let ok = std::process::Command::new(&bin)
        .args(["run", scenario.to_str().unwrap(), "--quiet", "--out"])
        .arg(&folder)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let before = snapshot(&folder);
    let mut out_of_memory = 0;
    // From too little to start the worker threads to enough to draw.
    for limit in (22_000..=40_000).step_by(2_000) {
        for command in [
            format!("plot '{}'", folder.display()),
            format!("run '{}' --quiet --out r{limit}", scenario.display()),
        ] {
            let out = std::process::Command::new("sh")
                .current_dir(dir.path())
                .arg("-c")
                .arg(format!(
                    "ulimit -v {limit} && exec '{}' {command}",
                    bin.display()
                ))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            assert!(
                code == Some(0) || code == Some(1),
                "{limit} kB, {command}: {:?}\n{stderr}",
                out.status
            );
            assert!(
                !stderr.contains("memory allocation of") && !stderr.contains("backtrace"),
                "{limit} kB, {command}: {stderr}"
            );
            if stderr.contains("error: out of memory: an allocation of ") {
                out_of_memory += 1;
                assert_eq!(code, Some(1), "{stderr}");
                assert!(
                    stderr.contains("under the address-space limit of ")
                        && stderr.contains("stopped with nothing written"),
                    "{stderr}"
                );
            }
            // No work folder or lock is left, and the results are whole.
            let leftovers: Vec<_> = std::fs::read_dir(&folder)
                .unwrap()
                .chain(std::fs::read_dir(dir.path()).unwrap())
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".stormsim-"))
                .collect();
            assert!(leftovers.is_empty(), "{limit} kB, {command}: {leftovers:?}");
            assert!(
                snapshot(&folder) == before,
                "{limit} kB: the folder changed"
            );
        }
    }
    // The test bites: some of these limits do run out of memory.
    assert!(out_of_memory >= 3, "only {out_of_memory} ran out of memory");
}
