//! A run under an address-space limit (`ulimit -v`) that fits its budget
//! finishes: it is never aborted by a failed allocation. glibc's per-thread
//! malloc arenas each reserve 64 MB of address space, and a one-run
//! `quickstart` in 1 ms buckets (40 000 buckets) on two worker threads
//! aborted with "memory allocation of 8 bytes failed" (exit 134) under
//! limits of 150 to 220 MB while using far less (hostile review 11, D1);
//! the process now shares one arena when a limit is set
//! (`memory_gate::one_arena_under_a_limit`).

#[cfg(target_os = "linux")]
#[test]
fn a_run_that_fits_its_address_space_limit_is_not_aborted() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = std::fs::canonicalize("scenarios/quickstart.yaml").unwrap();
    let bin = assert_cmd::cargo::cargo_bin("stormsim");
    for (i, limit) in [150_000, 170_000, 220_000].into_iter().enumerate() {
        let out = std::process::Command::new("sh")
            .current_dir(dir.path())
            .arg("-c")
            .arg(format!(
                "ulimit -v {limit} && exec '{}' run '{}' --out o{i} --quiet --threads 2 \
                 --replicates 1 --set bucket=1ms",
                bin.display(),
                scenario.display()
            ))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("memory allocation of"),
            "ulimit -v {limit}: {stderr}"
        );
        assert_eq!(out.status.code(), Some(0), "ulimit -v {limit}: {stderr}");
        assert!(dir.path().join(format!("o{i}/summary.csv")).is_file());
    }
}
