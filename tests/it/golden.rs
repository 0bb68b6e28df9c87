//! Golden results: every bundled scenario's `summary.csv` (which carries
//! each run's `events` and `event_digest`), a digest of its
//! `timeseries.csv` and digests of its graph tables (`services.csv`,
//! `services_timeseries.csv`, `calls.csv`, `replicas.csv`, and
//! `classes.csv` where the clients send priority classes, in
//! `graph.fnv1a64`), compared byte for byte with the files under
//! `tests/golden/`. A change of engine or model that is meant to keep
//! results (a faster queue, a redesign) must keep these; a change of
//! numbers must be deliberate: regenerate with
//!
//! ```sh
//! STORMSIM_UPDATE_GOLDEN=1 cargo test --release --test it golden::
//! ```
//!
//! and say in the commit why the numbers moved. The test then fails once
//! more, on purpose, so an update is never silent.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// Every scenario shipped in `scenarios/` (published ones included).
fn bundled() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for dir in ["scenarios", "scenarios/published"] {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                all.push(path);
            }
        }
    }
    all.sort();
    all
}

/// FNV-1a 64 of a file's bytes, as 16 hex digits.
fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn golden_dir(scenario: &Path) -> PathBuf {
    let stem = scenario.file_stem().unwrap().to_string_lossy().to_string();
    let sub = if scenario.parent().is_some_and(|p| p.ends_with("published")) {
        format!("published-{stem}")
    } else {
        stem
    };
    Path::new("tests/golden").join(sub)
}

/// The tables of the services graph, each digested on its own.
const GRAPH_TABLES: [&str; 4] = [
    "services.csv",
    "services_timeseries.csv",
    "calls.csv",
    "replicas.csv",
];

#[test]
fn bundled_scenarios_keep_their_results() {
    let update = std::env::var_os("STORMSIM_UPDATE_GOLDEN").is_some();
    let tmp = tempfile::tempdir().unwrap();
    let mut changed = Vec::new();
    let scenarios = bundled();
    assert!(scenarios.len() >= 14, "found {} scenarios", scenarios.len());
    for scenario in scenarios {
        let out = tmp.path().join(scenario.file_stem().unwrap());
        Command::cargo_bin("stormsim")
            .unwrap()
            .args(["run", "--quiet", "--out"])
            .arg(&out)
            .arg(&scenario)
            .assert()
            .success();
        let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
        let timeseries = fnv(&fs::read(out.join("timeseries.csv")).unwrap());
        let mut graph: String = GRAPH_TABLES
            .iter()
            .map(|t| format!("{t} {}\n", fnv(&fs::read(out.join(t)).unwrap())))
            .collect();
        // Written only when the clients send priority classes.
        if let Ok(classes) = fs::read(out.join("classes.csv")) {
            graph.push_str(&format!("classes.csv {}\n", fnv(&classes)));
        }
        let dir = golden_dir(&scenario);
        let want_graph = fs::read_to_string(dir.join("graph.fnv1a64")).ok();
        let want_summary = fs::read_to_string(dir.join("summary.csv")).ok();
        let want_ts = fs::read_to_string(dir.join("timeseries.fnv1a64"))
            .ok()
            .map(|s| s.trim().to_string());
        if want_summary.as_deref() != Some(summary.as_str())
            || want_ts.as_deref() != Some(timeseries.as_str())
            || want_graph.as_deref() != Some(graph.as_str())
        {
            changed.push(scenario.display().to_string());
            if update {
                fs::create_dir_all(&dir).unwrap();
                fs::write(dir.join("summary.csv"), &summary).unwrap();
                fs::write(dir.join("timeseries.fnv1a64"), format!("{timeseries}\n")).unwrap();
                fs::write(dir.join("graph.fnv1a64"), &graph).unwrap();
            } else if let Some(want) = &want_summary {
                for (i, (w, g)) in want.lines().zip(summary.lines()).enumerate() {
                    if w != g {
                        eprintln!(
                            "{}: summary.csv line {}:\n  want {w}\n  got  {g}",
                            scenario.display(),
                            i + 1
                        );
                        break;
                    }
                }
            }
        }
    }
    assert!(
        changed.is_empty(),
        "results changed for {changed:?}{}",
        if update {
            " (golden files updated: review and commit them)"
        } else {
            " (if on purpose: STORMSIM_UPDATE_GOLDEN=1 cargo test --release --test it golden::)"
        }
    );
}
