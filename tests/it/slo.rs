//! SLO verdicts (README, "Service-level objectives"): each run's verdict
//! is exactly its figures against the objectives; a variant passes when
//! all its replicates do, and the variants are ranked; `--fail-on-slo`
//! exits 1 when one misses (after writing everything), 0 when all pass,
//! 2 without an SLO; a scenario without `slo` has no verdict columns.

use std::path::Path;

use assert_cmd::Command;
use stormsim::runner;
use stormsim::scenario;

const GATE: &str = "scenarios/slo-gate.yaml";

fn stormsim() -> Command {
    Command::cargo_bin("stormsim").unwrap()
}

/// The header and rows of a CSV file.
fn table(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

fn cell<'a>(t: &'a (Vec<String>, Vec<Vec<String>>), row: usize, col: &str) -> &'a str {
    let i =
        t.0.iter()
            .position(|h| h == col)
            .unwrap_or_else(|| panic!("{col}"));
    &t.1[row][i]
}

#[test]
fn a_verdict_is_the_figures_against_the_objectives() {
    let s = scenario::load_file(Path::new(GATE)).unwrap();
    let slo = s.slo.clone().unwrap();
    let plans = runner::plan(&s).unwrap();
    let results = runner::run_all(&plans, s.replicates, s.seed, &|_| {});
    assert_eq!(results.len(), 9);
    for r in &results {
        let f = &r.summary;
        let v = f.slo.as_ref().expect("every run has a verdict");
        let meets = f.success_rate_outside_incidents.unwrap() >= slo.success_rate.unwrap()
            && f.latency_p99_outside_ms.unwrap() <= slo.latency_p99.unwrap().ns() as f64 / 1e6
            && f.peak_load_ratio_after.unwrap() <= slo.peak_load_after.unwrap()
            && f.recovered == Some(true)
            && f.recovery_time_s.unwrap() <= slo.recovery_within.unwrap().secs_f64();
        assert_eq!(v.pass(), meets, "{} {}: {v:?}", r.variant, r.replicate);
        // The bundled scenario's point: only the retry budget keeps the
        // load after the outage within 1.5 times the capacity; everything
        // else is met by all three.
        match r.variant.as_str() {
            "budgeted" => assert!(v.pass(), "{v:?}"),
            _ => {
                assert_eq!(v.misses.len(), 1, "{v:?}");
                assert_eq!(v.misses[0].objective.name(), "peak_load_after");
            }
        }
    }
}

#[test]
fn fail_on_slo_exits_1_after_writing_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("gate");
    let assert = stormsim()
        .args(["run", GATE, "--fail-on-slo", "--out"])
        .arg(&out)
        .assert()
        .code(1);
    let o = assert.get_output();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // The console ranks the variants, best first.
    let ranked: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("SLO: "))
        .skip(1)
        .take(3)
        .collect();
    assert!(
        ranked[0].starts_with("1. budgeted") && ranked[0].ends_with("pass"),
        "{stdout}"
    );
    assert!(
        ranked[1].starts_with("2. backoff") && ranked[1].contains("FAIL"),
        "{stdout}"
    );
    assert!(ranked[2].starts_with("3. aggressive"), "{stdout}");
    assert!(
        stderr.contains("error: variant aggressive missed the SLO: peak_load_after ")
            && stderr.contains("> 1.5 in 3 of 3 runs")
            && stderr.contains("error: 2 of 3 variants missed the SLO (--fail-on-slo)"),
        "{stderr}"
    );
    // Everything was written, verdicts included.
    let summary = table(&out.join("summary.csv"));
    assert_eq!(summary.1.len(), 9);
    for row in 0..9 {
        let pass = cell(&summary, row, "slo_pass");
        let failed = cell(&summary, row, "slo_failed");
        match cell(&summary, row, "variant") {
            "budgeted" => assert_eq!((pass, failed), ("true", "")),
            _ => {
                assert_eq!(pass, "false");
                assert!(failed.starts_with("peak_load_after "), "{failed}");
            }
        }
    }
    let by = table(&out.join("summary_by_variant.csv"));
    let ranks: Vec<(&str, &str, &str)> = (0..3)
        .map(|r| {
            (
                cell(&by, r, "variant"),
                cell(&by, r, "slo_rank"),
                cell(&by, r, "slo_pass_fraction"),
            )
        })
        .collect();
    assert_eq!(
        ranks,
        [
            ("aggressive", "3", "0"),
            ("backoff", "2", "0"),
            ("budgeted", "1", "1")
        ]
    );
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("<h2>Against the SLO</h2>"));

    // Without --fail-on-slo the same run succeeds; with an SLO every
    // variant meets, so does --fail-on-slo.
    stormsim()
        .args(["run", GATE, "--quiet", "--replicates", "1", "--out"])
        .arg(tmp.path().join("plain"))
        .assert()
        .code(0);
    stormsim()
        .args([
            "run",
            GATE,
            "--quiet",
            "--replicates",
            "1",
            "--fail-on-slo",
            "--set",
            "slo.peak_load_after=4",
            "--out",
        ])
        .arg(tmp.path().join("lenient"))
        .assert()
        .code(0);
}

#[test]
fn no_slo_no_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("q");
    stormsim()
        .args(["run", "scenarios/quickstart.yaml", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .code(0);
    let (header, _) = table(&out.join("summary.csv"));
    assert!(header.iter().any(|h| h == "peak_load_ratio_after"));
    assert!(!header.iter().any(|h| h.starts_with("slo_")), "{header:?}");
    let (header, _) = table(&out.join("summary_by_variant.csv"));
    assert!(!header.iter().any(|h| h.starts_with("slo_")), "{header:?}");

    // --fail-on-slo without an SLO is bad input: nothing runs or is written.
    let refused = tmp.path().join("refused");
    let assert = stormsim()
        .args(["run", "scenarios/quickstart.yaml", "--fail-on-slo", "--out"])
        .arg(&refused)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr);
    assert!(stderr.contains("has no `slo` section"), "{stderr}");
    assert!(!refused.exists());

    // An SLO from the command line (the section is created).
    let set = tmp.path().join("set");
    stormsim()
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--quiet",
            "--set",
            "slo.success_rate=0.5",
            "--fail-on-slo",
            "--out",
        ])
        .arg(&set)
        .assert()
        .code(0);
    let summary = table(&set.join("summary.csv"));
    assert!((0..summary.1.len()).all(|r| cell(&summary, r, "slo_pass") == "true"));
    let resolved = std::fs::read_to_string(set.join("scenario.resolved.yaml")).unwrap();
    assert!(resolved.contains("slo:\n  success_rate: 0.5"), "{resolved}");
}

/// A system that never serves a request (every attempt outlasts the
/// 500 ms timeout) has a baseline of 0: it used to read "recovered in
/// 0 s" and pass `recovery_within`. It has no verdict now, misses the
/// SLO, and says why in the console and `report.html`.
#[test]
fn a_system_that_never_served_a_request_has_not_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = stormsim()
        .args(["run", "scenarios/quickstart.yaml", "--out"])
        .arg(&out)
        .args([
            "--set",
            "dependency.service_time={dist: constant, value: 600ms}",
            "--set",
            "slo={recovery_within: 30s}",
            "--fail-on-slo",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("undecided: no request succeeded before the trigger (baseline 0)"),
        "{stdout}"
    );
    let t = table(&out.join("summary.csv"));
    assert_eq!(t.1.len(), 4);
    for row in 0..t.1.len() {
        assert_eq!(cell(&t, row, "baseline_success_ratio"), "0");
        assert_eq!(cell(&t, row, "recovered"), "undecided");
        assert_eq!(cell(&t, row, "recovery_time_s"), "");
        assert_eq!(cell(&t, row, "time_to_full_goodput_s"), "");
    }
    let by = table(&out.join("summary_by_variant.csv"));
    for row in 0..by.1.len() {
        assert_eq!(cell(&by, row, "recovered_fraction"), "");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(
        "undecided: no request succeeded before the incident in any of its 2 replicates"
    ));
}
