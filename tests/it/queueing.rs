//! With retries off, the dependency is an M/M/c queue and must agree with
//! queueing theory (docs/sources/experiments.md §5).

use crate::common;
use crate::common::*;
use stormsim::model::CallPolicy;
use stormsim::model::service::ServiceDist;

/// Erlang C: probability that an arrival waits, for c servers and offered
/// load a = λ/μ.
fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0; // k = 0
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let last = term * a / c as f64;
    let rho = a / c as f64;
    let top = last / (1.0 - rho);
    top / (sum + top)
}

fn mean_wait_ms(c: u32, lambda: f64, mean_service_ms: f64) -> f64 {
    let mu = 1000.0 / mean_service_ms;
    let a = lambda / mu;
    erlang_c(c, a) / (c as f64 * mu - lambda) * 1000.0
}

fn check(c: u32, lambda: f64, service_ms: u64, secs: u64, tol: f64) {
    let dep = common::dependency(
        c,
        ServiceDist::Exponential {
            mean: service_ms * MS,
        },
        u32::MAX,
    );
    let cfg = config(
        lambda,
        secs * S,
        vec![CallPolicy::passthrough("client")],
        dep,
    );
    let (rows, s) = run(&cfg, 2024);
    assert_conserved(&s);
    let theory = mean_wait_ms(c, lambda, service_ms as f64);
    let got = s.dependency_queue_wait_mean_ms.unwrap();
    assert!(
        (got / theory - 1.0).abs() < tol,
        "M/M/{c} λ={lambda}: W_q {got:.4} ms vs theory {theory:.4} ms"
    );
    let rho = lambda * service_ms as f64 / 1000.0 / c as f64;
    assert!(
        (s.dependency_utilization.unwrap() / rho - 1.0).abs() < 0.01,
        "utilization {:?} vs {rho}",
        s.dependency_utilization
    );
    // Little's law: mean number in system = λ × mean time in system.
    eprintln!(
        "lat mean {:?} p50 {:?} p99 {:?} wq {:?}",
        s.latency_mean_ms, s.latency_p50_ms, s.latency_p99_ms, s.dependency_queue_wait_mean_ms
    );
    let rows_l: f64 = rows.iter().map(|r| r.in_flight).sum::<f64>() / rows.len() as f64;
    let lambda_obs = s.logical_requests as f64 / secs as f64;
    let w_s = s.latency_mean_ms.unwrap() / 1000.0;
    assert!(
        (rows_l / (lambda_obs * w_s) - 1.0).abs() < 0.01,
        "Little: L {rows_l} vs λW {}",
        lambda_obs * w_s
    );
    eprintln!(
        "M/M/{c} λ={lambda}: W_q {got:.4} vs {theory:.4}; L {rows_l:.4} vs λW {:.4}; events {}",
        lambda_obs * w_s,
        s.events
    );
}

#[test]
fn mm1_mean_wait_matches_theory() {
    // ρ = 0.8, 2 M customers: W_q = 40 ms.
    check(1, 80.0, 10, 25_000, 0.03);
}

#[test]
fn mmc_mean_wait_matches_erlang_c() {
    // c = 8, ρ = 0.9.
    check(8, 720.0, 10, 3_000, 0.03);
}
