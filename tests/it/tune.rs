//! `stormsim tune` as a user runs it: it finds the optimum that follows
//! from arithmetic, never spends more than its budget, writes the same
//! bytes on a rerun and at any number of threads, leaves a run's folder
//! and its own results to each other, and refuses a bad `tune` section
//! with the field's path and line.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use assert_cmd::Command;

/// Each attempt fails with probability 1/2 (see the file): with k
/// attempts a request succeeds with probability 1 - 2^-k and makes
/// 2 - 2^(1-k) attempts on average.
const TIMEOUTS: &str = "tests/fixtures/tune/timeouts.yaml";

fn stormsim() -> Command {
    Command::cargo_bin("stormsim").unwrap()
}

fn tune(file: &str, out: &Path, extra: &[&str]) -> String {
    let o = stormsim()
        .args(["tune", file, "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// tune.csv as rows of column → value.
fn rows(out: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(out.join("tune.csv")).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(row: &BTreeMap<String, String>, col: &str) -> f64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("{col}: {:?}", row[col]))
}

#[test]
fn it_finds_the_fewest_attempts_that_meet_the_slo() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let console = tune(TIMEOUTS, &out, &[]);
    let rows = rows(&out);
    assert_eq!(rows.len(), 8, "the grid of 1..=8 attempts, whole");
    let k = |row: &BTreeMap<String, String>| num(row, "set.layers.api.retry.max_attempts") as i32;
    // The best: 5 attempts, the fewest with 1 - 2^-k >= 0.95.
    assert_eq!(k(&rows[0]), 5, "{rows:?}");
    assert_eq!(rows[0]["rank"], "1");
    for row in &rows {
        let k = k(row);
        // The SLO verdict follows from 1 - 2^-k against 0.95.
        let meets = 1.0 - 0.5f64.powi(k) >= 0.95;
        assert_eq!(row["slo_pass"], meets.to_string(), "k = {k}");
        // Amplification agrees with 2 - 2^(1-k) within 4 standard errors
        // of the candidate's runs (1.96 SE is its ci95), or within 0.01.
        let want = 2.0 - 0.5f64.powi(k - 1);
        let got = num(row, "amplification_mean");
        let tol = row["amplification_ci95"]
            .parse::<f64>()
            .map_or(0.01, |ci| (ci / 1.96 * 4.0).max(1e-9));
        assert!(
            (got - want).abs() <= tol,
            "k = {k}: {got} vs {want} ± {tol}"
        );
    }
    // Candidates that passed rank above those that did not.
    let first_fail = rows.iter().position(|r| r["slo_pass"] == "false").unwrap();
    assert!(rows[first_fail..].iter().all(|r| r["slo_pass"] == "false"));
    let best = fs::read_to_string(out.join("best.yaml")).unwrap();
    assert!(
        best.ends_with("layers.api.retry.max_attempts: 5\n"),
        "{best}"
    );
    assert!(
        console.contains("--set 'layers.api.retry.max_attempts=5'"),
        "{console}"
    );
    for f in [
        "charts/pareto.svg",
        "charts/pareto.png",
        "scenario.resolved.yaml",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
}

/// A space with a continuous dimension: first-round candidates from a
/// Latin hypercube, then rounds of halving.
const OPEN_SPACE: &str = "tune.space.layers.api.retry.backoff.base={log: [1ms, 1s]}";

#[test]
fn it_never_spends_more_than_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    for budget in [1u64, 2, 7, 23, 60] {
        for extra in [None, Some(OPEN_SPACE)] {
            let out = dir.path().join(format!("b{budget}-{}", extra.is_some()));
            let b = budget.to_string();
            let mut args = vec!["--budget", b.as_str(), "-q"];
            if let Some(e) = extra {
                args.extend(["--set", e]);
            }
            tune(TIMEOUTS, &out, &args);
            let rows = rows(&out);
            let runs: u64 = rows.iter().map(|r| num(r, "runs") as u64).sum();
            assert!(runs <= budget, "budget {budget}: {runs} runs");
            assert!(
                runs >= budget.min(8) / 2,
                "budget {budget}: only {runs} runs"
            );
            // Every candidate ran at least once, the best the most.
            let most = rows.iter().map(|r| num(r, "runs") as u64).max().unwrap();
            assert!(rows.iter().all(|r| num(r, "runs") >= 1.0));
            assert_eq!(num(&rows[0], "runs") as u64, most);
            if extra.is_some() {
                // The base's values, read as written: durations with units.
                let base = &rows[0]["set.layers.api.retry.backoff.base"];
                assert!(base.ends_with('s'), "{base}");
            }
        }
    }
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for f in [
        "tune.csv",
        "best.yaml",
        "charts/pareto.svg",
        "charts/pareto.png",
        "scenario.resolved.yaml",
    ] {
        out.insert(f.to_string(), fs::read(dir.join(f)).unwrap());
    }
    out
}

#[test]
fn the_same_bytes_on_a_rerun_and_at_any_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let set = ["--set", OPEN_SPACE, "--budget", "30", "-q"];
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let c = dir.path().join("c");
    tune(TIMEOUTS, &a, &[&set[..], &["--threads", "1"]].concat());
    tune(TIMEOUTS, &b, &[&set[..], &["--threads", "2"]].concat());
    tune(TIMEOUTS, &c, &set);
    assert_eq!(files(&a), files(&b));
    assert_eq!(files(&a), files(&c));
    // Another seed searches other candidates.
    let d = dir.path().join("d");
    tune(TIMEOUTS, &d, &[&set[..], &["--seed", "12"]].concat());
    assert_ne!(files(&a)["tune.csv"], files(&d)["tune.csv"]);
}

#[test]
fn a_run_and_a_search_keep_each_others_results() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.yaml");
    fs::copy(TIMEOUTS, &scenario).unwrap();
    let in_dir = |args: &[&str]| {
        stormsim()
            .current_dir(dir.path())
            .args(args)
            .assert()
            .success();
    };
    in_dir(&["tune", "s.yaml", "-q", "--budget", "8"]);
    let tuned = dir.path().join("output/tune-timeouts/tune/tune.csv");
    let before = fs::read(&tuned).unwrap();
    // A run writes output/<name>/ around the search's folder, and again.
    in_dir(&["run", "s.yaml", "-q"]);
    in_dir(&["run", "s.yaml", "-q"]);
    assert_eq!(fs::read(&tuned).unwrap(), before);
    assert!(
        dir.path()
            .join("output/tune-timeouts/summary.csv")
            .is_file()
    );
    // And a search again, beside the run's tables.
    in_dir(&["tune", "s.yaml", "-q", "--budget", "8"]);
    assert!(
        dir.path()
            .join("output/tune-timeouts/summary.csv")
            .is_file()
    );
    assert_eq!(fs::read(&tuned).unwrap(), before);
}

/// The error output of `tune` (and `validate`) on a scenario whose `tune`
/// section is `section`.
fn refused(section: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(TIMEOUTS).unwrap();
    let cut = text.find("\ntune:").unwrap();
    let file = dir.path().join("bad.yaml");
    fs::write(&file, format!("{}\n{section}", &text[..cut])).unwrap();
    let out = dir.path().join("out");
    let o = stormsim()
        .args(["tune"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{section}");
    assert!(!out.exists(), "nothing written");
    let v = stormsim().arg("validate").arg(&file).output().unwrap();
    assert_eq!(v.status.code(), Some(2));
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn a_bad_tune_section_is_refused_with_its_path_and_line() {
    let e = refused("tune:\n  space:\n    layers.api.retry.max_attempts: { int: [6, 1] }\n");
    assert!(
        e.contains("tune.space.layers.api.retry.max_attempts") && e.contains("above its end"),
        "{e}"
    );
    let e = refused("tune:\n  space:\n    layers.api.retry.max_attempts: { int: [0, 3] }\n");
    assert!(e.contains("with layers.api.retry.max_attempts = 0"), "{e}");
    let e = refused("tune:\n  space:\n    layers.nope.retry.max_attempts: [1, 2]\n");
    assert!(
        e.contains("tune.space.layers.nope.retry.max_attempts"),
        "{e}"
    );
    let e = refused(
        "tune:\n  space:\n    layers.api.retry.max_attempts: [1, 2]\n  objective: { maximize: sucess_rate }\n",
    );
    assert!(e.contains("did you mean `success_rate`"), "{e}");
    let e = refused("tune:\n  space:\n    layers.api.retry.max_attempts: [1, 2]\n  budget: 0\n");
    assert!(e.contains("tune.budget"), "{e}");
    let e = refused("tune:\n  space: {}\n");
    assert!(e.contains("tune.space") && e.contains("empty"), "{e}");
    let e = refused("tune:\n  space:\n    seed: [1, 2]\n");
    assert!(e.contains("cannot be searched"), "{e}");
    // The line of the entry.
    let e = refused("tune:\n  space:\n    layers.api.retry.jitter: { log: [1, 2], int: [1, 2] }\n");
    assert!(e.contains("bad.yaml:"), "{e}");
}

#[test]
fn a_scenario_without_a_tune_section_says_how_to_write_one() {
    let o = stormsim()
        .args([
            "tune",
            "scenarios/quickstart.yaml",
            "--out",
            "/nonexistent/x",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(
        e.contains("no `tune` section") && e.contains("space:"),
        "{e}"
    );
}

/// An objective no run can measure (`recovery_time_s` without an incident)
/// and no SLO: every candidate is as good as any other, so the search names
/// no best (no command to paste, no best.yaml), says why and exits 1.
#[test]
fn a_search_without_grounds_names_no_best() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let o = stormsim()
        .args(["tune", TIMEOUTS, "--out"])
        .arg(&out)
        .args([
            "--set",
            "slo=null",
            "--set",
            "tune.objective={minimize: recovery_time_s}",
            "--set",
            "tune.budget=4",
            "--set",
            "duration=5s",
        ])
        .output()
        .unwrap();
    // A search that chose nothing is a failure, and writes no best.yaml.
    assert_eq!(o.status.code(), Some(1));
    let console = String::from_utf8(o.stdout).unwrap();
    assert!(
        console.contains("no best: no run of any candidate had a value of recovery_time_s"),
        "{console}"
    );
    assert!(!console.contains("\nbest: "), "{console}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no best.yaml was written"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.join("best.yaml").exists());
    assert!(out.join("tune.csv").is_file());
}

/// The command the console prints runs what the search ran: the search
/// leaves a scenario's variants and sweep out, so the command does too
/// (`--set 'variants=[]'`, `--set 'sweep={}'`); else each variant would
/// run over the settings, and one that sets a tuned field would replace
/// its value. The note names that variant.
#[test]
fn the_printed_command_runs_what_the_search_ran() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let extra = [
        "--set",
        "variants=[{name: eager, set: {layers.api.retry.max_attempts: 8}}, {name: calm, set: {layers.api.retry.jitter: full}}]",
        "--set",
        "sweep={layers.api.retry.backoff.base: [1ms, 2ms]}",
        "--set",
        "tune.budget=4",
        "--set",
        "duration=5s",
    ];
    let console = tune(TIMEOUTS, &out, &extra);
    let line = console
        .lines()
        .find(|l| l.trim_start().starts_with("stormsim run "))
        .unwrap_or_else(|| panic!("{console}"));
    assert!(
        line.ends_with("--set 'variants=[]' --set 'sweep={}'"),
        "{line}"
    );
    assert!(
        console.contains("without the scenario's 2 variants and sweep")
            && console.contains("variant `eager` sets layers.api.retry.max_attempts")
            && !console.contains("`calm`"),
        "{console}"
    );
    // Run as printed (over the same scenario): one variant, no sweep.
    let sets: Vec<&str> = line
        .split(" --set ")
        .skip(1)
        .map(|a| a.trim_matches('\''))
        .collect();
    // The scenario's own overrides, but those of a field the printed
    // command sets too (its `variants=[]` replaces the `--set variants`
    // above): two overrides of one field are refused.
    let key = |a: &str| a.split('=').next().unwrap_or(a).to_string();
    let printed: Vec<String> = sets.iter().map(|a| key(a)).collect();
    let mut cmd = stormsim();
    cmd.args(["validate", TIMEOUTS]);
    for pair in extra.chunks(2) {
        if !printed.contains(&key(pair[1])) {
            cmd.args(pair);
        }
    }
    for s in &sets {
        cmd.args(["--set", s]);
    }
    let o = cmd.output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("ok (1 variant"), "{said}");
}

/// A candidate a guard rail stopped has figures over only the time its
/// stopped run reached: it is shown as ABORTED, never ranked nor chosen,
/// the search says it is incomplete (how many, which limit, how to raise
/// it) and exits 1 as `run` does; with every candidate stopped there is
/// no best.yaml and the message says why.
#[test]
fn candidates_a_guard_rail_stopped_are_not_ranked_and_the_search_fails() {
    let dir = tempfile::tempdir().unwrap();
    let search = |out: &Path, max_events: &str| {
        stormsim()
            .args(["tune", TIMEOUTS, "--out"])
            .arg(out)
            .args(["--budget", "8", "--set", "duration=10s", "--set"])
            .arg(format!("limits.max_events={max_events}"))
            .output()
            .unwrap()
    };
    // 2 attempts stay within 40 000 events; 3, 6 and 8 do not.
    let out = dir.path().join("some");
    let o = search(&out, "40000");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    let table = rows(&out);
    let stopped: Vec<_> = table.iter().filter(|r| !r["aborted"].is_empty()).collect();
    assert_eq!(stopped.len(), 3, "{table:?}");
    for r in &stopped {
        assert_eq!(r["rank"], "", "a stopped candidate is not ranked: {r:?}");
        assert!(r["aborted"].contains("limits.max_events"), "{r:?}");
    }
    assert_eq!(table[0]["rank"], "1");
    assert_eq!(table[0]["set.layers.api.retry.max_attempts"], "2");
    let best = fs::read_to_string(out.join("best.yaml")).unwrap();
    assert!(best.contains("layers.api.retry.max_attempts: 2"), "{best}");
    assert!(stdout.contains("best: c"), "{stdout}");
    assert_eq!(stdout.matches("ABORTED  ").count(), 3, "{stdout}");
    assert!(
        stderr.contains("3 of 4 candidates")
            && stderr.contains("limits.max_events")
            && stderr.contains("--set 'limits.max_events=N'")
            && stderr.contains("the search is incomplete"),
        "{stderr}"
    );
    // Every candidate stopped: nothing to choose from.
    let out = dir.path().join("all");
    let o = search(&out, "15000");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!out.join("best.yaml").exists());
    assert!(rows(&out).iter().all(|r| r["rank"].is_empty()));
    assert!(!stdout.contains("best: c"), "{stdout}");
    assert!(
        stdout.contains("a guard rail stopped every candidate"),
        "{stdout}"
    );
    assert!(stderr.contains("no best.yaml was written"), "{stderr}");
}

/// A `--set` on a field the search sets in every candidate changes nothing
/// there: tune says so, naming the field, whichever way the path is
/// written (by layer name or index, the field or a section holding it);
/// a `--set` on another field, or on the space itself, is not warned about.
#[test]
fn a_set_on_a_searched_field_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = |sets: &[&str]| {
        let mut cmd = stormsim();
        cmd.args(["tune", TIMEOUTS, "--out"])
            .arg(dir.path().join("w"))
            .args(["--force", "--budget", "1", "-q", "--set", "duration=2s"]);
        for s in sets {
            cmd.args(["--set", s]);
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stderr).unwrap()
    };
    for set in [
        "layers.api.retry.max_attempts=7",
        "layers.0.retry.max_attempts=7",
    ] {
        let e = stderr(&[set]);
        assert!(
            e.contains("warning: --set")
                && e.contains("has no effect")
                && e.contains("layers.api.retry.max_attempts"),
            "{set}: {e}"
        );
    }
    let e = stderr(&[
        "layers.api.retry={max_attempts: 7, backoff: {kind: constant, base: 2ms}, jitter: none, retry_on: [timeout]}",
    ]);
    assert!(
        e.contains("replaced in part") && e.contains("layers.api.retry.max_attempts"),
        "{e}"
    );
    let e = stderr(&[
        "layers.api.retry.backoff.base=2ms",
        "tune.space.layers.api.retry.max_attempts=[3]",
    ]);
    assert!(!e.contains("warning"), "{e}");
}

/// `--quiet` means what it means for `run`: nothing but errors. The note
/// that the search leaves a scenario's variants and sweep out is printed
/// without it, and neither it nor anything else with it (nothing on
/// stdout, nothing on stderr, as `run -q` on the same file).
#[test]
fn quiet_prints_nothing_but_errors_as_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let src = fs::read_to_string(TIMEOUTS).unwrap()
        + "variants:\n  - { name: a, set: {} }\n  - { name: b, set: { layers.api.retry.max_attempts: 3 } }\n";
    let file = dir.path().join("s.yaml");
    fs::write(&file, src).unwrap();
    let cmd = |args: &[&str]| {
        stormsim()
            .arg(args[0])
            .arg(&file)
            .args(["--set", "duration=2s", "--out"])
            .arg(dir.path().join(args[0]))
            .args(&args[1..])
            .args(["--force"])
            .output()
            .unwrap()
    };
    let loud = cmd(&["tune", "--budget", "1"]);
    assert!(
        loud.status.success(),
        "{}",
        String::from_utf8_lossy(&loud.stderr)
    );
    assert!(
        String::from_utf8_lossy(&loud.stderr).contains("note: tune searches the scenario itself"),
        "{}",
        String::from_utf8_lossy(&loud.stderr)
    );
    for args in [&["tune", "--budget", "1", "-q"][..], &["run", "-q"][..]] {
        let o = cmd(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&o.stdout), "", "{args:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{args:?}");
    }
}
