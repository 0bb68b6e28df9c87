//! `check` along the paths of a services graph, with exact arithmetic:
//! amplification multiplies along a path and adds where paths meet; each
//! path's worst case against the deadline; stages (parallel calls) take
//! their slowest call, sequential stages add up.

use super::*;
use crate::scenario::fixtures::GRAPH;
use crate::scenario::load_str;

fn review(src: &str) -> Report {
    check(&load_str(src, "g.yaml").unwrap_or_else(|e| panic!("{e}\n{src}")))
}

/// `GRAPH` with `from` replaced by `to` (which must be there).
fn edit(from: &str, to: &str) -> String {
    assert!(GRAPH.contains(from), "{from}");
    GRAPH.replacen(from, to, 1)
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn service<'a>(r: &'a Report, name: &str) -> &'a graph::ServiceReport {
    r.services.iter().find(|s| s.name == name).unwrap()
}

fn call<'a>(r: &'a Report, name: &str) -> &'a graph::CallReport {
    r.calls.iter().find(|c| c.review.name == name).unwrap()
}

#[test]
fn amplification_multiplies_along_paths_and_adds_where_they_meet() {
    // clients → gateway: 2 attempts; gateway → orders: 3, → inventory: 1;
    // orders → postgres: 2; inventory → postgres (db): 4. At postgres:
    // 2 x 3 x 2 = 12 through orders, 2 x 1 x 4 = 8 through inventory.
    let r = review(GRAPH);
    let calls_in: Vec<(&str, f64)> = r
        .services
        .iter()
        .map(|s| (s.name.as_str(), s.calls_per_request))
        .collect();
    assert_eq!(
        calls_in,
        [
            ("gateway", 2.0),
            ("orders", 6.0),
            ("inventory", 2.0),
            ("postgres", 20.0)
        ]
    );
    assert_eq!(r.stack.amplification, 20.0);
    assert_eq!(r.stack.service.as_deref(), Some("postgres"));
    assert!(service(&r, "postgres").focus);
    // Calls into each edge: the requests its caller receives.
    let into: Vec<(&str, f64)> = r
        .calls
        .iter()
        .map(|c| (c.review.name.as_str(), c.review.calls_per_request))
        .collect();
    assert_eq!(
        into,
        [
            ("clients.gateway", 1.0),
            ("gateway.orders", 2.0),
            ("gateway.inventory", 2.0),
            ("orders.postgres", 6.0),
            ("inventory.db", 2.0)
        ]
    );
    assert_eq!(r.paths_total, Some(2));
    let paths: Vec<(String, f64)> = r
        .paths
        .iter()
        .map(|p| (p.calls.join(" → "), p.amplification))
        .collect();
    assert_eq!(
        paths,
        [
            (
                "clients.gateway → gateway.orders → orders.postgres".to_string(),
                12.0
            ),
            (
                "clients.gateway → gateway.inventory → inventory.db".into(),
                8.0
            )
        ]
    );
    // The path that amplifies most retries at all three of its calls.
    let f = r
        .findings
        .iter()
        .find(|f| f.code == "nested-retries-without-budget")
        .unwrap();
    assert_eq!(f.path, "services.orders.calls.postgres");
    assert!(
        f.message.contains("12 calls at `postgres`"),
        "{}",
        f.message
    );
    assert!(f.message.contains("2 x 3 x 2"), "{}", f.message);
    // Fan-out multiplies like attempts: 3 copies of each db attempt.
    let r = review(&edit("name: db, timeout", "name: db, fan_out: 3, timeout"));
    assert_eq!(
        service(&r, "postgres").calls_per_request,
        12.0 + 2.0 * 4.0 * 3.0
    );
    assert_eq!(r.paths[1].amplification, 24.0);
}

#[test]
fn worst_case_time_per_path_against_the_deadline() {
    // Default backoff: exponential from 100 ms, full jitter (worst sleeps
    // 100, 200, 400 ms; mean half of that). postgres calls nothing, and
    // gateway, orders and inventory have workers limits (a request may
    // wait in their queues): only their callers' timeouts bound an
    // attempt into them. At mean draws a service adds its mean service
    // time (gateway 1 ms, orders 3 ms; inventory only forwards) to its
    // calls'.
    //   orders.postgres:   2 x 200 ms + 100 ms            = 0.5 s (mean 0.45)
    //   inventory.db:      4 x 100 ms + 700 ms            = 1.1 s (mean 0.75)
    //   gateway.orders:    3 x 1 s + 300 ms               = 3.3 s (mean 3 x 0.453 + 0.15 = 1.509)
    //   gateway.inventory: 500 ms                         = 0.5 s (mean min(0.5, 0.752) = 0.5)
    // gateway's one stage (inventory is parallel) lasts its slowest call:
    //   clients.gateway:   2 x 3 s + 100 ms               = 6.1 s (mean 2 x (0.001 + 1.509) + 0.05 = 3.07)
    let r = review(GRAPH);
    let worst: Vec<(&str, Option<f64>)> = r
        .calls
        .iter()
        .map(|c| (c.review.name.as_str(), c.review.worst_case_s))
        .collect();
    for (name, w) in [
        ("orders.postgres", 0.5),
        ("inventory.db", 1.1),
        ("gateway.orders", 3.3),
        ("gateway.inventory", 0.5),
        ("clients.gateway", 6.1),
    ] {
        assert!(
            close(call(&r, name).review.worst_case_s, w),
            "{name}: {worst:?}"
        );
    }
    assert!(close(call(&r, "gateway.orders").review.expected_s, 1.509));
    assert!(close(r.stack.worst_case_s, 6.1), "{:?}", r.stack);
    assert!(close(r.stack.expected_s, 3.07), "{:?}", r.stack);
    assert_eq!(r.stack.fits_deadline, Some(true));
    // Each path alone: gateway may queue, so through either call the
    // clients' attempt lasts up to its 3 s timeout.
    assert!(close(r.paths[0].worst_case_s, 6.1));
    assert!(close(r.paths[1].worst_case_s, 6.1));
    // A 5 s deadline: neither path fits; at mean draws one clients'
    // attempt (1.51 s) fits, and the second (after a sleep) too.
    let r = review(&edit("deadline: 10s", "deadline: 5s"));
    let fits: Vec<Option<bool>> = r.paths.iter().map(|p| p.fits_deadline).collect();
    assert_eq!(fits, [Some(false), Some(false)]);
    assert_eq!(r.stack.fits_deadline, Some(false));
    assert_eq!(r.stack.attempts_within_deadline, Some(2));
    let f = r
        .findings
        .iter()
        .find(|f| f.code == "retries-exceed-deadline")
        .unwrap();
    assert_eq!(f.path, "clients.deadline");
    assert!(f.message.contains("up to 6.10 s"), "{}", f.message);
    // Sequential instead of parallel: gateway's two stages add up,
    // but gateway may queue: the clients' attempts still last up to 3 s.
    let r = review(&edit("parallel: true, ", ""));
    assert!(close(r.stack.worst_case_s, 6.1), "{:?}", r.stack);
    // Without workers limits a service answers within its calls plus its
    // own work, when that work has a largest value.
    let forward = GRAPH
        .replace("    concurrency: 100\n", "")
        .replace("    concurrency: 50\n", "");
    let r = review(&forward);
    //   orders: no limit, but exponential work has no largest value, so
    //   gateway.orders is still 3 x 1 s + 300 ms = 3.3 s.
    assert!(close(call(&r, "gateway.orders").review.worst_case_s, 3.3));
    let constant = forward.replace(
        "service_time: { dist: exponential, mean: 3ms }",
        "service_time: { dist: constant, value: 3ms }",
    );
    let r = review(&constant);
    //   orders answers within 3 ms + orders.postgres's 0.5 s:
    //   gateway.orders: 3 x min(1 s, 0.503) + 300 ms = 1.809 s.
    assert!(
        close(call(&r, "gateway.orders").review.worst_case_s, 1.809),
        "{:?}",
        call(&r, "gateway.orders").review.worst_case_s
    );
}

#[test]
fn findings_name_the_call_and_its_callers() {
    let r = review(GRAPH);
    // gateway.orders can spend 3.3 s, longer than the clients' 3 s
    // attempt; inventory.db can spend 1.1 s, longer than
    // gateway.inventory's 500 ms attempt; orders.postgres (0.5 s) fits in
    // gateway.orders's 1 s.
    let outlive: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.code == "inner-retries-outlive-caller")
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        outlive,
        [
            "services.gateway.calls.orders.deadline",
            "services.inventory.calls.db.deadline"
        ]
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.path == "services.inventory.calls.db.deadline")
        .unwrap();
    assert!(
        f.message
            .starts_with("call `inventory.db` can spend 1.10 s")
            && f.message.contains("caller `gateway.inventory`"),
        "{}",
        f.message
    );
    // A service nothing calls.
    let r = review(&format!(
        "{GRAPH}  - name: batch\n    concurrency: 1\n    service_time: {{ dist: constant, value: 1ms }}\n"
    ));
    let f = r
        .findings
        .iter()
        .find(|f| f.code == "unreachable-service")
        .unwrap();
    assert_eq!(f.path, "services.batch");
    // A write without an idempotency key below a retried call.
    let r = review(&edit(
        "  - name: postgres\n",
        "  - name: postgres\n    side_effects: write\n",
    ));
    let paths: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.code == "non-idempotent-retries")
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "clients.calls.retry",
            "services.gateway.calls.orders.retry",
            "services.orders.calls.postgres.retry",
            "services.inventory.calls.db.retry"
        ]
    );
    assert!(r.has_errors());
}

#[test]
fn a_deep_graph_is_counted_without_listing_its_paths() {
    // A ladder of 20 diamonds: 2^20 paths to the bottom, each of one
    // attempt per call, so 2^20 requests there per logical request.
    let mut src = String::from(
        "name: ladder\nduration: 10s\nclients:\n  arrival: { kind: poisson, rate: 1/s }\n  calls: s0\nservices:\n",
    );
    for i in 0..20 {
        src.push_str(&format!(
            "  - name: s{i}\n    calls:\n      - {{ to: a{i} }}\n      - {{ to: b{i}, parallel: true }}\n  - name: a{i}\n    calls: [ {{ to: s{n} }} ]\n  - name: b{i}\n    calls: [ {{ to: s{n} }} ]\n",
            n = i + 1
        ));
    }
    src.push_str(
        "  - name: s20\n    concurrency: 4\n    service_time: { dist: constant, value: 1ms }\n",
    );
    let r = review(&src);
    assert_eq!(r.paths_total, Some(1 << 20));
    assert_eq!(r.paths.len(), graph::MAX_PATHS);
    assert_eq!(service(&r, "s20").calls_per_request, (1u64 << 20) as f64);
    assert_eq!(service(&r, "s10").calls_per_request, (1u64 << 10) as f64);
    assert_eq!(r.stack.amplification, (1u64 << 20) as f64);
}

#[test]
fn a_slowdown_that_falls_past_its_peak_is_a_warning() {
    // postgres: 16 workers of 4 ms, 4000/s nominal. e^(3u) completes at
    // most 4000/(3e) = 490.5/s (u = 1/3) and 4000·e^−3 = 199.1/s full.
    let sticky = review(&edit(
        "    service_time: { dist: exponential, mean: 4ms }\n    incidents:",
        "    service_time: { dist: exponential, mean: 4ms }\n    slowdown: { kind: exponential, factor: 3 }\n    incidents:",
    ));
    let f: Vec<_> = sticky
        .findings
        .iter()
        .filter(|f| f.code == "slowdown-sustains-overload")
        .collect();
    assert_eq!(f.len(), 1, "{:?}", sticky.findings);
    assert_eq!(f[0].path, "services.postgres.slowdown");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].message.contains("491/s") || f[0].message.contains("490/s"),
        "{}",
        f[0].message
    );
    assert!(f[0].message.contains("199/s"), "{}", f[0].message);
    // Linear slowdown only grows: nothing to say.
    let linear = review(&edit(
        "    service_time: { dist: exponential, mean: 4ms }\n    incidents:",
        "    service_time: { dist: exponential, mean: 4ms }\n    slowdown: { kind: linear, factor: 5 }\n    incidents:",
    ));
    assert!(
        !linear
            .findings
            .iter()
            .any(|f| f.code == "slowdown-sustains-overload")
    );
}

#[test]
fn an_adaptive_floor_at_or_above_the_workers_is_a_warning() {
    // postgres: 16 workers per replica.
    let at = |line: &str| {
        review(&edit(
            "    service_time: { dist: exponential, mean: 4ms }\n    incidents:",
            &format!("    service_time: {{ dist: exponential, mean: 4ms }}\n    adaptive_concurrency: {line}\n    incidents:"),
        ))
        .findings
        .into_iter()
        .filter(|f| f.code == "adaptive-floor-never-limits")
        .collect::<Vec<_>>()
    };
    let f = at("{ kind: gradient, min_concurrency: 16 }");
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].path,
        "services.postgres.adaptive_concurrency.min_concurrency"
    );
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].message.contains("never falls below 16"),
        "{}",
        f[0].message
    );
    assert!(f[0].message.contains("envoy#38338"), "{}", f[0].message);
    // Gradient2's default floor (20) is above 16 workers too.
    let f = at("{ kind: gradient2 }");
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].path,
        "services.postgres.adaptive_concurrency.min_limit"
    );
    assert!(
        f[0].message.contains("up to 4 requests queue"),
        "{}",
        f[0].message
    );
    // Envoy's default (3) and Vegas (floor 1): nothing to say.
    assert!(at("{ kind: gradient }").is_empty());
    assert!(at("{ kind: vegas }").is_empty());
    assert!(at("{ kind: gradient, min_concurrency: 15 }").is_empty());
}

/// A graph whose amplification is past what a float holds (10^588 over
/// 98 levels of 1000 attempts × fan-out 1000): every figure reads as an
/// order of magnitude, with no `inf`, no number of more than 13 digits
/// and no "up to at least".
#[test]
fn a_graph_past_floats_prints_orders_of_magnitude() {
    let mut src = String::from(
        "name: chain\nduration: 5s\nclients:\n  arrival: { kind: poisson, rate: 10/s }\n  calls: { to: s0, timeout: 5s }\nservices:\n",
    );
    for i in 0..98 {
        src.push_str(&format!(
            "  - name: s{i}\n    calls: [ {{ to: s{}, timeout: 4s, fan_out: 1000, retry: {{ max_attempts: 1000 }} }} ]\n",
            i + 1
        ));
    }
    src.push_str(
        "  - name: s98\n    concurrency: 4\n    service_time: { dist: exponential, mean: 10ms }\n",
    );
    let r = review(&src);
    let text = render::human(&r, "g.yaml");
    assert!(text.contains("amplification: at least 10^308x"), "{text}");
    assert!(!text.contains("up to at least"), "{text}");
    for line in text.lines() {
        assert!(!line.split_whitespace().any(|w| w == "inf"), "{line}");
        assert!(super::tests::longest_number(line) <= 13, "{line}");
    }
}
