//! The bundled scenarios of published experiments (scenarios/published/)
//! load, validate, start with their question, and run (one replicate)
//! to the published conclusion.

use stormsim::metrics::Summary;
use stormsim::runner::{self, RunResult, VariantPlan};
use stormsim::scenario;

fn run_file(path: &str, replicates: u32) -> Vec<RunResult> {
    let s = scenario::load_file(std::path::Path::new(path)).expect("scenario loads");
    let plans: Vec<VariantPlan> = runner::plan(&s).expect("variants expand");
    runner::run_all(&plans, replicates, s.seed, &|_| {})
}

fn summary<'a>(results: &'a [RunResult], name: &str) -> &'a Summary {
    &results
        .iter()
        .find(|r| r.variant == name)
        .unwrap_or_else(|| panic!("variant {name}"))
        .summary
}

#[test]
fn every_published_scenario_loads_validates_and_cites_its_source() {
    let mut n = 0;
    for entry in std::fs::read_dir("scenarios/published").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let s =
                scenario::load_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            scenario::expand_variants(&s).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.starts_with("# Question:"), "{}", path.display());
            assert!(text.contains("# Source:"), "{}", path.display());
            n += 1;
        }
    }
    assert_eq!(n, 5);
}

#[test]
fn brooker_retry_tokens_runs_to_the_published_loads() {
    let r = run_file("scenarios/published/brooker-retry-tokens.yaml", 1);
    assert!((summary(&r, "no-retries").amplification.unwrap() - 1.0).abs() < 1e-9);
    let three = summary(&r, "three-retries").amplification.unwrap();
    assert!((three / 1.875 - 1.0).abs() < 0.02, "{three}");
    let bucket = summary(&r, "token-bucket").amplification.unwrap();
    assert!((1.09..=1.106).contains(&bucket), "{bucket}");
    let breaker = summary(&r, "retry-breaker").amplification.unwrap();
    assert!(breaker < 1.05, "{breaker}");
}

#[test]
fn sre_retry_budgets_run_to_3x_1_1x_and_64x() {
    let r = run_file("scenarios/published/sre-retry-budgets.yaml", 1);
    let cap = summary(&r, "attempt-cap-3");
    assert_eq!(cap.dependency_attempts, 3 * cap.logical_requests);
    let ratio = summary(&r, "ratio-budget-10pct").amplification.unwrap();
    assert!((1.09..=1.1 + 1.0 / 1200.0).contains(&ratio), "{ratio}");
    let nested = summary(&r, "nested-4x4x4");
    assert_eq!(nested.dependency_attempts, 64 * nested.logical_requests);
}

#[test]
fn sre_adaptive_throttling_runs_to_one_reject_per_accept() {
    let r = run_file("scenarios/published/sre-adaptive-throttling.yaml", 1);
    let s = summary(&r, "adaptive-k2");
    let ratio = s.shed as f64 / s.succeeded as f64;
    assert!((ratio - 1.0).abs() < 0.1, "{ratio}");
    let none = summary(&r, "no-throttle");
    assert!(none.shed > 5 * none.succeeded);
}

#[test]
fn metastable_retry_storm_stays_down_and_its_controls_recover() {
    let r = run_file("scenarios/published/metastable-retry-storm.yaml", 1);
    for v in ["spike-8s", "brownout-10s"] {
        assert_eq!(summary(&r, v).recovered, Some(false), "{v}");
    }
    for v in ["spike-1s", "low-load-deep-cut", "spike-8s-token-bucket"] {
        assert_eq!(summary(&r, v).recovered, Some(true), "{v}");
    }
}
