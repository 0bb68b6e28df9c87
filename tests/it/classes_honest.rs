//! The priority classes' figures are judged as the run's: a request that
//! hung counts against its class as against the run, and a run stopped by
//! a guard rail has no class rate (`classes.csv`, the console's `by class`
//! block), as it has no run rate.

use std::path::Path;

use assert_cmd::Command;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/classes")
        .join(name)
}

/// The rows of a CSV file, header first.
fn rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn column<'a>(table: &'a [Vec<String>], row: usize, name: &str) -> &'a str {
    let i = table[0]
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no {name}"));
    &table[row][i]
}

fn int(table: &[Vec<String>], row: usize, name: &str) -> u64 {
    column(table, row, name).parse().unwrap()
}

/// Requests hang in a blackhole with no timeout: each class's rate is
/// succeeded ÷ (ended + hung), its hung requests add up to the run's, and
/// the classes' successes over all their judged requests give exactly the
/// run's success rate, so no class reads better than the whole.
#[test]
fn hung_requests_count_against_their_class() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    Command::cargo_bin("stormsim")
        .unwrap()
        .args([
            "run",
            fixture("hung.yaml").to_str().unwrap(),
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let summary = rows(&out.join("summary.csv"));
    let classes = rows(&out.join("classes.csv"));
    assert_eq!(classes.len(), 3, "two classes, one run");
    let run_hung = int(&summary, 1, "hung_at_end");
    assert!(
        run_hung > 100,
        "the blackhole leaves requests hanging: {run_hung}"
    );
    let (mut hung, mut succeeded, mut judged) = (0, 0, 0);
    for r in 1..classes.len() {
        let c_hung = int(&classes, r, "hung_at_end");
        assert!(c_hung <= int(&classes, r, "open_at_end"));
        let ended =
            int(&classes, r, "succeeded") + int(&classes, r, "failed") + int(&classes, r, "shed");
        let rate: f64 = column(&classes, r, "success_rate").parse().unwrap();
        let expected = int(&classes, r, "succeeded") as f64 / (ended + c_hung) as f64;
        assert!(
            (rate - expected).abs() < 1e-6,
            "class {r}: {rate} against {expected}"
        );
        hung += c_hung;
        succeeded += int(&classes, r, "succeeded");
        judged += ended + c_hung;
    }
    assert_eq!(
        hung, run_hung,
        "the classes' hung requests add up to the run's"
    );
    let run_rate: f64 = column(&summary, 1, "success_rate").parse().unwrap();
    assert!((succeeded as f64 / judged as f64 - run_rate).abs() < 1e-6);
}

/// A run stopped at `--max-events` has no success rate and no latency
/// for any class, in `classes.csv` and on the console, as it has none for
/// the run.
#[test]
fn an_aborted_run_has_no_class_rate() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = Command::cargo_bin("stormsim")
        .unwrap()
        .args([
            "run",
            fixture("aborted.yaml").to_str().unwrap(),
            "--max-events",
            "3000",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    // A run a guard rail stopped is a failure (exit 1); its tables are
    // written.
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = rows(&out.join("summary.csv"));
    assert!(!column(&summary, 1, "aborted").is_empty());
    assert_eq!(column(&summary, 1, "success_rate"), "");
    let classes = rows(&out.join("classes.csv"));
    for r in 1..classes.len() {
        assert!(int(&classes, r, "requests") > 0);
        assert_eq!(column(&classes, r, "success_rate"), "", "row {r}");
        assert_eq!(column(&classes, r, "latency_p99_ms"), "", "row {r}");
    }
    let console = String::from_utf8(run.stdout).unwrap();
    let block: Vec<&str> = console
        .lines()
        .skip_while(|l| !l.starts_with("by class"))
        .take(2)
        .collect();
    assert_eq!(block.len(), 2, "{console}");
    assert!(block[1].starts_with("base"), "{console}");
    assert_eq!(block[1].matches("ABORTED").count(), 2, "{console}");
    assert!(!console.contains("% ok"), "{console}");
}
