//! `stormsim run`, `merge` and `plot` draw the charts of a sweep of many
//! variants in memory that follows the points drawn, not the rows: the
//! variants of a table share at most `MAX_CHART_POINTS` points
//! (`report::chart_data::Bins`). Each variant kept a running mean per
//! bucket before, about 0.7 kB a row: `plot` of a 2 000-point sweep of
//! 1 000 buckets (2 million rows) peaked at 1.5 GB, and `merge` of it run
//! as two shards too (hostile review). Here a 250-point sweep of 800
//! buckets (200 000 rows) under `ulimit -v` 160 MB: `plot` and `merge`
//! needed about 195 MB of address space before and ran out of memory
//! (exit 1); they now need about 80 MB. `run` was refused before anything
//! ran (its charts' points were counted per variant, 435 MB); it now
//! runs. No timing is measured.

use std::path::Path;

/// The sweep: 250 points of 800 one-second buckets, one layer.
fn scenario() -> String {
    let points: Vec<String> = (1..=250).map(|c| c.to_string()).collect();
    format!(
        "name: plot-memory\n\
         description: 250 sweep points of 800 s, to bound the charts' memory.\n\
         seed: 7\nduration: 800s\nreplicates: 1\n\
         clients:\n  arrival: {{ kind: poisson, rate: 1/s }}\n\
         layers:\n  - name: api\n    timeout: 500ms\n    retry: {{ max_attempts: 3 }}\n\
         dependency:\n  concurrency: 8\n  service_time: {{ dist: exponential, mean: 40ms }}\n\
         sweep:\n  dependency.concurrency: [{}]\n",
        points.join(", ")
    )
}

/// Runs `stormsim ARGS` in `dir` under an address-space limit of
/// `limit_kb`, on two worker threads; (exit code, stderr).
fn limited(dir: &Path, limit_kb: u64, args: &str) -> (Option<i32>, String) {
    let bin = assert_cmd::cargo::cargo_bin("stormsim");
    let out = std::process::Command::new("sh")
        .current_dir(dir)
        .env("RAYON_NUM_THREADS", "2")
        .arg("-c")
        .arg(format!(
            "ulimit -v {limit_kb} && exec '{}' {args}",
            bin.display()
        ))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[cfg(target_os = "linux")]
#[test]
fn plot_merge_and_run_of_a_wide_sweep_fit_a_small_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("sweep.yaml"), scenario()).unwrap();
    // The shards, without a limit.
    for k in 0..2 {
        assert_cmd::Command::cargo_bin("stormsim")
            .unwrap()
            .current_dir(d)
            .args(["run", "sweep.yaml", "--quiet", "--threads", "2", "--shard"])
            .arg(format!("{k}/2"))
            .arg("--out")
            .arg(format!("s{k}"))
            .assert()
            .success();
    }
    const LIMIT_KB: u64 = 160 * 1024;
    let (code, stderr) = limited(d, LIMIT_KB, "merge s0 s1 --out m --quiet");
    assert_eq!(code, Some(0), "merge: {stderr}");
    let rows = std::fs::read_to_string(d.join("m/timeseries.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(rows, 250 * 800 + 1);
    let (code, stderr) = limited(d, LIMIT_KB, "plot m --quiet");
    assert_eq!(code, Some(0), "plot: {stderr}");
    let (code, stderr) = limited(d, LIMIT_KB, "run sweep.yaml --out r --quiet");
    assert_eq!(code, Some(0), "run: {stderr}");
    // The time charts draw the median of the variants, and run, merge and
    // plot draw the same bytes.
    let load = std::fs::read_to_string(d.join("r/charts/load.svg")).unwrap();
    assert!(load.contains("median of 250 variants"));
    for chart in ["load", "goodput", "latency", "amplification"] {
        let file = format!("charts/{chart}.svg");
        let run = std::fs::read(d.join("r").join(&file)).unwrap();
        assert!(
            run == std::fs::read(d.join("m").join(&file)).unwrap(),
            "{file}"
        );
    }
    assert!(
        std::fs::read(d.join("r/report.html")).unwrap()
            == std::fs::read(d.join("m/report.html")).unwrap()
    );
}

/// The points of `services_timeseries.csv` are shared by the variants ×
/// the services `services.csv` lists, so a table that names others (each
/// one more series of every variant: up to 1 000 services, a thousand
/// times the points planned) is refused, not read: a run writes the same
/// services to both.
#[test]
fn a_services_timeseries_naming_a_service_services_csv_does_not_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("q");
    assert_cmd::Command::cargo_bin("stormsim")
        .unwrap()
        .args(["run", "scenarios/quickstart.yaml", "--quiet", "--out"])
        .arg(&folder)
        .assert()
        .success();
    let table = folder.join("services_timeseries.csv");
    let text = std::fs::read_to_string(&table).unwrap();
    assert!(text.contains(",dependency,"));
    std::fs::write(&table, text.replace(",dependency,", ",ghost,")).unwrap();
    let out = assert_cmd::Command::cargo_bin("stormsim")
        .unwrap()
        .arg("plot")
        .arg(&folder)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "services_timeseries.csv: the service \"ghost\" is not in services.csv (a run \
             writes the same services to both: was the folder changed?); nothing was written"
        ),
        "{stderr}"
    );
}
