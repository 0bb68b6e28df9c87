//! The bundled scenarios answer their questions: each loads, validates and,
//! run through the library, shows what its header comment claims.

use stormsim::runner::{self, RunResult, VariantPlan};
use stormsim::scenario;

fn run_file(path: &str, replicates: u32) -> Vec<RunResult> {
    let s = scenario::load_file(std::path::Path::new(path)).expect("bundled scenario loads");
    let plans: Vec<VariantPlan> = runner::plan(&s).expect("variants expand");
    runner::run_all(&plans, replicates, s.seed, &|_| {})
}

fn variant<'a>(results: &'a [RunResult], name: &str) -> &'a RunResult {
    results
        .iter()
        .find(|r| r.variant == name)
        .unwrap_or_else(|| panic!("variant {name}"))
}

#[test]
fn every_bundled_scenario_loads_and_validates() {
    for entry in std::fs::read_dir("scenarios").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let s =
                scenario::load_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            scenario::expand_variants(&s).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.starts_with("# Question:"),
                "{} starts with its question",
                path.display()
            );
        }
    }
}

#[test]
fn payments_duplicates_need_a_key() {
    let r = run_file("scenarios/payments-idempotency.yaml", 1);
    let no_key = &variant(&r, "no-key").summary;
    let keyed = &variant(&r, "idempotency-key").summary;
    assert!(no_key.duplicate_side_effects > 1000);
    assert_eq!(
        no_key.duplicate_side_effects,
        no_key.commits - no_key.committed_requests
    );
    assert_eq!(keyed.duplicate_side_effects, 0);
    assert!(keyed.deduplicated > 1000);
}

#[test]
fn nested_layers_multiply_to_64_during_the_outage() {
    let r = run_file("scenarios/nested-layers.yaml", 1);
    let three = variant(&r, "three-layers");
    // Buckets fully inside the outage (60..90 s): 64 database calls per
    // request, give or take requests that straddle bucket edges.
    let (mut dep, mut offered) = (0u64, 0u64);
    for row in &three.rows[65..85] {
        dep += row.dependency_attempts;
        offered += row.offered;
    }
    let amp = dep as f64 / offered as f64;
    assert!((amp - 64.0).abs() < 2.0, "{amp}");
    let single = variant(&r, "single-layer");
    let budget = variant(&r, "global-budget");
    assert!(single.summary.peak_load_ratio.unwrap() < three.summary.peak_load_ratio.unwrap() / 5.0);
    assert!(budget.summary.amplification.unwrap() < 1.3);
}

#[test]
fn orphaned_work_is_what_keeps_the_database_down() {
    let r = run_file("scenarios/orphaned-work.yaml", 1);
    let none = &variant(&r, "no-cancellation").summary;
    let stop = &variant(&r, "cancel-in-service").summary;
    assert_eq!(
        none.recovered,
        Some(false),
        "metastable without cancellation"
    );
    assert!(none.orphaned_work_s > 1000.0);
    assert_eq!(stop.recovered, Some(true));
    assert_eq!(stop.orphaned_work_s, 0.0);
    assert!(stop.success_rate.unwrap() > 0.9);
}

#[test]
fn check_flags_retried_writes_without_a_key() {
    let path = std::path::Path::new("scenarios/payments-idempotency.yaml");
    let s = scenario::load_file(path).unwrap();
    let has = |s: &stormsim::scenario::Scenario| {
        stormsim::check::check(s)
            .findings
            .iter()
            .any(|f| f.code == "non-idempotent-retries")
    };
    assert!(has(&s));
    let keyed =
        scenario::apply_set(&s, "dependency.idempotency", serde_json::json!("key")).unwrap();
    assert!(!has(&keyed));
}

#[test]
fn adaptive_limits_shed_the_storm_unless_the_floor_is_too_high() {
    let r = run_file("scenarios/adaptive-limits.yaml", 1);
    let outside = |name: &str| {
        variant(&r, name)
            .summary
            .success_rate_outside_incidents
            .unwrap()
    };
    let none = variant(&r, "no-limit");
    assert_eq!(
        none.summary.recovered,
        Some(false),
        "the storm outlives the incident"
    );
    assert!(outside("no-limit") < 0.5, "{}", outside("no-limit"));
    // Envoy's gradient controller and AIMD shed it: the api recovers.
    for v in ["gradient", "aimd"] {
        assert_eq!(variant(&r, v).summary.recovered, Some(true), "{v}");
        assert!(outside(v) > 0.99, "{v}: {}", outside(v));
    }
    // A floor above what the api holds never limits: the run is the one
    // without a limit, request for request.
    let high = variant(&r, "gradient-high-floor");
    assert_eq!(high.summary.succeeded, none.summary.succeeded);
    assert_eq!(high.summary.failed, none.summary.failed);
    assert_eq!(
        high.summary.dependency_attempts,
        none.summary.dependency_attempts
    );
    let per_bucket = |res: &RunResult| -> Vec<(u64, u64, u64)> {
        res.rows
            .iter()
            .map(|b| (b.attempts, b.succeeded, b.failed))
            .collect()
    };
    assert_eq!(per_bucket(high), per_bucket(none));
    // Gradient's limit falls during the incident and is back at its
    // maximum after it.
    let api = |res: &RunResult, from: f64, to: f64| {
        let limits: Vec<f64> = res
            .graph
            .rows
            .iter()
            .filter(|row| res.services[row.service].name == "api" && (from..to).contains(&row.t_s))
            .filter_map(|row| row.concurrency_limit)
            .collect();
        limits.iter().sum::<f64>() / limits.len() as f64
    };
    let g = variant(&r, "gradient");
    assert!(api(g, 65.0, 90.0) < 100.0, "{}", api(g, 65.0, 90.0));
    assert!(api(g, 120.0, 200.0) > 900.0, "{}", api(g, 120.0, 200.0));
}
