//! The command line as a user runs it: outputs, exit codes, determinism
//! across thread counts, and clear errors on bad input.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

fn stormsim() -> Command {
    Command::cargo_bin("stormsim").unwrap()
}

const TABLES: [&str; 4] = [
    "timeseries.csv",
    "summary.csv",
    "summary_by_variant.csv",
    "scenario.resolved.yaml",
];

fn run_quickstart(out: &Path, threads: &str) {
    stormsim()
        .env("RAYON_NUM_THREADS", threads)
        .args(["run", "scenarios/quickstart.yaml", "--quiet", "--out"])
        .arg(out)
        .assert()
        .success();
}

#[test]
fn run_writes_every_table_with_the_contract_columns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    run_quickstart(&out, "2");
    for f in TABLES {
        let text = fs::read_to_string(out.join(f)).unwrap();
        assert!(text.lines().count() > 1, "{f} has rows");
    }
    let ts = fs::read_to_string(out.join("timeseries.csv")).unwrap();
    assert!(ts.starts_with(
        "variant,replicate,t_s,offered,attempts,retries,dependency_attempts,succeeded,failed,\
         failed_timeout,failed_connection,failed_status,failed_deadline,shed,queue_depth,\
         in_flight,utilization,goodput,latency_p50_ms,latency_p99_ms,orphaned"
    ));
    // 2 variants × 2 replicates × 40 buckets, plus the header.
    assert_eq!(ts.lines().count(), 1 + 2 * 2 * 40);
    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.starts_with(
        "variant,replicate,seed,logical_requests,succeeded,failed,success_rate,\
         dependency_attempts,retries,retry_ratio,retry_delay_p50_ms,retry_delay_p99_ms,\
         amplification,peak_amplification,goodput,latency_mean_ms,latency_p50_ms,\
         latency_p99_ms,latency_p999_ms,dependency_utilization,dependency_queue_wait_mean_ms,\
         peak_load_ratio,recovery_time_s,recovered,orphaned_work_s,events"
    ));
    let by_variant = fs::read_to_string(out.join("summary_by_variant.csv")).unwrap();
    assert_eq!(by_variant.lines().count(), 3);
    assert!(by_variant.contains("amplification_mean,amplification_ci95"));
}

#[test]
fn output_is_byte_identical_across_reruns_and_thread_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    run_quickstart(&a, "1");
    run_quickstart(&b, "2");
    run_quickstart(&c, "2");
    for f in TABLES {
        let x = fs::read(a.join(f)).unwrap();
        assert_eq!(x, fs::read(b.join(f)).unwrap(), "{f}: 1 vs 2 threads");
        assert_eq!(x, fs::read(c.join(f)).unwrap(), "{f}: rerun");
    }
}

/// Every file under `dir` (its path relative to `dir`), sorted.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_services_graph_run_is_byte_identical_with_1_and_2_threads() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, threads: &str| {
        let out = dir.path().join(name);
        stormsim()
            .args(["run", "docs/examples/diamond.yaml", "--replicates", "4"])
            .args(["--threads", threads, "--quiet", "--out"])
            .arg(&out)
            .assert()
            .success();
        out
    };
    let (one, two) = (run("one", "1"), run("two", "2"));
    let files = files_under(&one);
    assert_eq!(files, files_under(&two));
    for table in [
        "services.csv",
        "services_timeseries.csv",
        "calls.csv",
        "summary.csv",
        "timeseries.csv",
    ] {
        assert!(files.iter().any(|f| f.as_os_str() == table), "no {table}");
    }
    for f in &files {
        assert!(
            fs::read(one.join(f)).unwrap() == fs::read(two.join(f)).unwrap(),
            "{}: 1 vs 2 threads",
            f.display()
        );
    }
    // One row per replicate and service (4 services), and per replicate
    // and call (the clients' and 4 services' calls), in file order.
    let services = fs::read_to_string(one.join("services.csv")).unwrap();
    assert_eq!(services.lines().count(), 1 + 4 * 4);
    assert_eq!(
        column(&services, "service")[..4],
        ["gateway", "orders", "inventory", "postgres"]
    );
    let calls = fs::read_to_string(one.join("calls.csv")).unwrap();
    assert_eq!(calls.lines().count(), 1 + 4 * 5);
    assert_eq!(
        column(&calls, "call")[..5],
        [
            "clients.gateway",
            "gateway.orders",
            "gateway.inventory",
            "orders.postgres",
            "inventory.db"
        ]
    );
}

#[test]
fn resolved_scenario_reproduces_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    stormsim()
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--quiet",
            "--seed",
            "99",
            "--out",
        ])
        .arg(&first)
        .assert()
        .success();
    let again = dir.path().join("again");
    stormsim()
        .args(["run", "--quiet", "--out"])
        .arg(&again)
        .arg(first.join("scenario.resolved.yaml"))
        .assert()
        .success();
    for f in ["timeseries.csv", "summary.csv", "summary_by_variant.csv"] {
        assert_eq!(
            fs::read(first.join(f)).unwrap(),
            fs::read(again.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn set_overrides_a_field_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    stormsim()
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--quiet",
            "--replicates",
            "1",
            "--set",
            "layers.client.retry.max_attempts=1",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    // Both variants now make one attempt: no retries anywhere.
    for line in summary.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        assert_eq!(cols[8], "0", "retries column in {line}");
    }
}

fn bad(yaml: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    fs::write(&file, yaml).unwrap();
    let out = dir.path().join("out");
    let assert = stormsim()
        .current_dir(dir.path())
        .args(["run", "bad.yaml", "--out"])
        .arg(&out)
        .assert();
    let output = assert.get_output();
    assert!(!out.exists(), "nothing written on bad input");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no stray files"
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (output.status.code().unwrap(), stderr)
}

const GOOD: &str = "name: t\nduration: 10s\nclients:\n  arrival: { kind: poisson, rate: 10/s }\ndependency:\n  concurrency: 2\n  service_time: { dist: exponential, mean: 10ms }\n";

#[test]
fn bad_inputs_exit_2_with_line_and_column() {
    let cases: &[(&str, &str)] = &[
        // Malformed YAML.
        ("name: [t\nduration: 10s\n", "bad.yaml:1:"),
        // Unknown field, with a suggestion.
        (
            &GOOD.replace("concurrency: 2", "concurency: 2"),
            "bad.yaml:6:3",
        ),
        // Wrong type.
        (
            &GOOD.replace("concurrency: 2", "concurrency: lots"),
            "bad.yaml:6:16",
        ),
        // Invalid value.
        (&GOOD.replace("rate: 10/s", "rate: -10/s"), "bad.yaml:4:"),
        // Duration without a unit.
        (
            &GOOD.replace("duration: 10s", "duration: 10"),
            "bad.yaml:2:11",
        ),
    ];
    for (yaml, location) in cases {
        let (code, stderr) = bad(yaml);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(location),
            "expected {location} in: {stderr}"
        );
    }
    let (_, stderr) = bad(&GOOD.replace("concurrency: 2", "concurency: 2"));
    assert!(stderr.contains("did you mean `concurrency`"), "{stderr}");
    assert!(stderr.contains("dependency"), "field path in: {stderr}");
}

#[test]
fn validate_reports_ok_or_every_problem() {
    stormsim()
        .args(["validate", "scenarios/outage-recovery.yaml"])
        .assert()
        .success()
        .stdout(predicates::str::contains("ok (4 variants"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.yaml");
    fs::write(
        &file,
        GOOD.replace("concurrency: 2", "concurrency: 0")
            .replace("duration: 10s", "duration: 10s\nreplicates: 0"),
    )
    .unwrap();
    let assert = stormsim().arg("validate").arg(&file).assert().code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("replicates") && stderr.contains("concurrency"),
        "{stderr}"
    );
}

#[test]
fn missing_file_and_unknown_set_path_are_bad_input() {
    stormsim()
        .args(["run", "no/such/file.yaml"])
        .assert()
        .code(2);
    let assert = stormsim()
        .args([
            "validate",
            "scenarios/quickstart.yaml",
            "--set",
            "layers.nope.timeout=1s",
        ])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("<--set>") && stderr.contains("nope"),
        "{stderr}"
    );
}

#[test]
fn presets_list_and_show() {
    let out = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("presets")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 20, "{text}");
    assert!(text.lines().any(|l| l.starts_with("grpc-a6 ")), "{text}");
    let out = Command::cargo_bin("stormsim")
        .unwrap()
        .args(["presets", "show", "envoy-default"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("# envoy-default:") && text.contains("docs/sources/presets.md §3"),
        "{text}"
    );
    let out = Command::cargo_bin("stormsim")
        .unwrap()
        .args(["presets", "show", "envoy-defalt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `envoy-default`?"));
}

#[test]
fn check_exit_codes_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("nested.yaml");
    std::fs::write(
        &nested,
        "name: nested\nduration: 1m\nclients:\n  arrival: { kind: poisson, rate: 100/s }\n  deadline: 10s\nlayers:\n  - { name: a, timeout: 2s, retry: { max_attempts: 4 } }\n  - { name: b, timeout: 400ms, deadline: propagate, retry: { max_attempts: 4 } }\n  - { name: c, timeout: 100ms, deadline: propagate, retry: { max_attempts: 4 } }\ndependency:\n  concurrency: 4\n  service_time: { dist: exponential, mean: 25ms }\n",
    )
    .unwrap();
    let out = Command::cargo_bin("stormsim")
        .unwrap()
        .args(["check", "--format", "json"])
        .arg(&nested)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stack"]["amplification"], 64.0);
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "nested-retries-without-budget")
    );
    // An error finding exits with 1; --set applies first.
    let out = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("check")
        .arg(&nested)
        .args(["--set", "layers.a.retry.retry_on=[timeout, 403]"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("retries-non-retryable-status"));
    // Bad input exits with 2.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "name: x\n").unwrap();
    let out = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("check")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The cells of one column of a CSV table, by header name.
fn column(table: &str, name: &str) -> Vec<String> {
    let mut r = csv::Reader::from_reader(table.as_bytes());
    let i = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    r.records().map(|rec| rec.unwrap()[i].to_string()).collect()
}

/// A run stopped by a guard rail earns no verdict: no success rate and no
/// recovery (it used to read "100% success, recovered in 0 s": requests
/// still open at the stop had no outcome, and the empty buckets after it
/// looked healthy), and it is flagged as aborted in the console, the
/// summaries and the report.
#[test]
fn an_aborted_run_has_no_verdict_and_says_so_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("aborted");
    let assert = stormsim()
        .env("CI", "1")
        .args([
            "run",
            "scenarios/outage-recovery.yaml",
            "--replicates",
            "2",
            // Over the 720 000 arrivals the run is sure to have (so it is
            // not refused before it starts), under the two events each
            // of them takes at least: every run stops at the guard rail.
            "--max-events",
            "900000",
            "--out",
        ])
        .arg(&out)
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("hit a guard rail"), "{stderr}");
    assert!(
        stdout.contains("(8 runs, 8 ABORTED by a guard rail)"),
        "{stdout}"
    );
    for line in stdout.lines().skip(2).take(4) {
        assert!(
            line.contains("ABORTED (2 of 2 runs)") && !line.contains('%'),
            "{line}"
        );
    }
    assert!(!stdout.contains(" 0.0 s"), "{stdout}");

    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    for col in ["success_rate", "recovered", "recovery_time_s"] {
        assert!(
            column(&summary, col).iter().all(String::is_empty),
            "{col}: {:?}",
            column(&summary, col)
        );
    }
    assert!(
        column(&summary, "aborted")
            .iter()
            .all(|a| a.contains("max_events")),
        "{:?}",
        column(&summary, "aborted")
    );
    let by_variant = fs::read_to_string(out.join("summary_by_variant.csv")).unwrap();
    assert_eq!(column(&by_variant, "aborted_runs"), ["2", "2", "2", "2"]);
    for col in [
        "success_rate_mean",
        "recovered_fraction",
        "recovery_time_s_mean",
    ] {
        assert!(
            column(&by_variant, col).iter().all(String::is_empty),
            "{col}"
        );
    }
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(
        html.matches("aborted: all 2 replicates stopped early at a guard rail")
            .count(),
        4,
        "one verdict per variant"
    );
    assert!(!html.contains("recovered in"), "no recovery verdict");
    assert!(html.contains("runs aborted (guard rail)"));
    let chart = fs::read_to_string(out.join("charts/recovery.svg")).unwrap();
    assert!(chart.contains("aborted (guard rail): no verdict"));

    // A run that finishes keeps its verdicts (and no aborted runs).
    let ok = dir.path().join("ok");
    stormsim()
        .args(["run", "scenarios/quickstart.yaml", "--quiet", "--out"])
        .arg(&ok)
        .assert()
        .success();
    let summary = fs::read_to_string(ok.join("summary.csv")).unwrap();
    assert!(
        column(&summary, "success_rate")
            .iter()
            .all(|c| !c.is_empty())
    );
    let by_variant = fs::read_to_string(ok.join("summary_by_variant.csv")).unwrap();
    assert!(column(&by_variant, "aborted_runs").iter().all(|c| c == "0"));
}

/// Worker threads are bounded (four per core, from 64 to 1024), from
/// `--threads` or `RAYON_NUM_THREADS`, and checked before anything is
/// read or run: `--threads 100000` used to spend minutes starting threads,
/// deaf to Ctrl-C. `plot` and `merge` check the variable too (their charts
/// are drawn in parallel).
#[test]
fn worker_threads_are_bounded_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let limit = stormsim::workers::limit();
    for threads in ["0".to_string(), (limit + 1).to_string(), "100000".into()] {
        let o = stormsim()
            .args([
                "run",
                "scenarios/quickstart.yaml",
                "--verbose",
                "--threads",
                &threads,
                "--out",
            ])
            .arg(&out)
            .env("CI", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{threads}: {err}");
        assert!(
            err.contains(&format!(
                "--threads {threads}: expected a whole number from 1 to {limit}"
            )),
            "{err}"
        );
        assert!(!err.contains("run 1/"), "simulated first: {err}");
    }
    assert!(!out.exists());
    for cmd in [
        vec!["run", "scenarios/quickstart.yaml"],
        vec!["plot", "nowhere"],
        vec!["merge", "nowhere"],
    ] {
        for value in ["100000", "many", "-1"] {
            let o = stormsim()
                .args(&cmd)
                .env("RAYON_NUM_THREADS", value)
                .current_dir(dir.path())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd:?} {value}: {err}");
            assert!(
                err.contains(&format!(
                    "RAYON_NUM_THREADS={value}: expected a whole number"
                )),
                "{err}"
            );
        }
    }
    // Within the bound, and the flag over the variable: as before.
    stormsim()
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--quiet",
            "--threads",
            "3",
            "--out",
        ])
        .arg(&out)
        .env("RAYON_NUM_THREADS", "100000")
        .assert()
        .success();
}
