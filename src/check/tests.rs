//! `check` on small scenarios: the 64x nested stack and one test per finding.

use super::*;
use crate::scenario::fixtures::MINIMAL;
use crate::scenario::load_str;

fn report(extra: &str) -> Report {
    let src = format!("{MINIMAL}{extra}");
    check(&load_str(&src, "x.yaml").unwrap_or_else(|e| panic!("{e}\n{src}")))
}

fn codes(r: &Report) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.code).collect()
}

fn finding<'a>(r: &'a Report, code: &str) -> &'a Finding {
    r.findings
        .iter()
        .find(|f| f.code == code)
        .unwrap_or_else(|| panic!("no {code} in {:#?}", r.findings))
}

const THREE_BY_FOUR: &str = "\
layers:
  - { name: sdk, timeout: 4s, retry: { max_attempts: 4 } }
  - { name: api, timeout: 1s, retry: { max_attempts: 4 } }
  - { name: db, timeout: 200ms, retry: { max_attempts: 4 } }
";

#[test]
fn three_layers_of_four_attempts_give_64x_and_no_shared_budget() {
    let r = report(THREE_BY_FOUR);
    assert_eq!(r.stack.amplification, 64.0);
    assert_eq!(r.stack.budgeted_amplification, 64.0);
    let calls: Vec<f64> = r.layers.iter().map(|l| l.calls_per_request).collect();
    assert_eq!(calls, [1.0, 4.0, 16.0]);
    let f = finding(&r, "nested-retries-without-budget");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message.contains("64 calls") && f.message.contains("4 x 4 x 4"),
        "{}",
        f.message
    );
    assert!(!r.has_errors());
    // A shared budget on one of them removes the finding; a ratio budget
    // caps the bound.
    let r = report(&THREE_BY_FOUR.replace(
        "name: api, timeout: 1s, retry: { max_attempts: 4 }",
        "name: api, timeout: 1s, retry: { max_attempts: 4, budget: { kind: ratio, scope: shared } }",
    ));
    assert!(
        !codes(&r).contains(&"nested-retries-without-budget"),
        "{:?}",
        codes(&r)
    );
    assert!((r.stack.budgeted_amplification - 4.0 * 1.1 * 4.0).abs() < 1e-9);
}

#[test]
fn worst_and_expected_time_of_a_stack() {
    // db: 4 x 200 ms + full-jitter sleeps (100, 200, 400 ms worst; half mean).
    let r = report(THREE_BY_FOUR);
    let db = &r.layers[2];
    assert_eq!(db.sleeps_worst_s, [0.1, 0.2, 0.4]);
    assert_eq!(db.sleeps_mean_s, [0.05, 0.1, 0.2]);
    assert!((db.worst_case_s.unwrap() - 1.5).abs() < 1e-9);
    assert!((db.expected_s.unwrap() - 1.15).abs() < 1e-9);
    // api: attempts last min(1 s, db's call) = 1 s.
    assert_eq!(r.layers[1].attempt_s, Some(1.0));
    assert!((r.layers[1].worst_case_s.unwrap() - 4.7).abs() < 1e-9);
    // sdk: min(4 s, 4.7 s) x 4 + 0.7 s.
    assert!((r.stack.worst_case_s.unwrap() - 16.7).abs() < 1e-9);
    assert_eq!(r.stack.fits_deadline, None);
    // db's worst case (1.5 s) outlives api's 1 s attempt, api's (4.7 s) sdk's 4 s.
    let outlive: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.code == "inner-retries-outlive-caller")
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(outlive, ["layers.api.deadline", "layers.db.deadline"]);
    assert!(codes(&r).contains(&"no-wall-clock-budget"));
}

#[test]
fn deadline_findings() {
    let r = report("layers:\n  - { name: a, timeout: 2s, retry: { max_attempts: 4 } }\n");
    assert!(codes(&r).contains(&"no-wall-clock-budget"));
    let src = MINIMAL.replace("rate: 100/s }", "rate: 100/s }\n  deadline: 3s");
    let r = check(
        &load_str(
            &format!(
                "{src}layers:\n  - {{ name: a, timeout: 2s, retry: {{ max_attempts: 4 }} }}\n"
            ),
            "x",
        )
        .unwrap(),
    );
    let f = finding(&r, "retries-exceed-deadline");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(r.stack.attempts_within_deadline, Some(1));
    assert!(!codes(&r).contains(&"no-wall-clock-budget"));
    let r = check(
        &load_str(
            &format!(
                "{src}layers:\n  - {{ name: a, timeout: 3s, retry: {{ max_attempts: 2 }} }}\n"
            ),
            "x",
        )
        .unwrap(),
    );
    assert_eq!(
        finding(&r, "timeout-exceeds-deadline").path,
        "layers.a.timeout"
    );
}

#[test]
fn no_jitter_on_a_large_fleet() {
    let r = report(
        "layers:\n  - { name: a, instances: 50, retry: { max_attempts: 3, jitter: none } }\n",
    );
    let f = finding(&r, "no-jitter");
    assert_eq!(
        (f.severity, f.path.as_str()),
        (Severity::Warning, "layers.a.retry.jitter")
    );
    // 100/s offered counts as large too; a small fleet at 10/s does not.
    let r = report("layers:\n  - { name: a, retry: { max_attempts: 3, jitter: none } }\n");
    assert!(codes(&r).contains(&"no-jitter"));
    let slow = MINIMAL.replace("100/s", "10/s");
    let r = check(
        &load_str(
            &format!(
                "{slow}layers:\n  - {{ name: a, retry: {{ max_attempts: 3, jitter: none }} }}\n"
            ),
            "x",
        )
        .unwrap(),
    );
    assert!(!codes(&r).contains(&"no-jitter"));
}

#[test]
fn unbounded_attempts_are_an_error() {
    let r = report("layers:\n  - { name: a, preset: tenacity-random-exponential }\n");
    let f = finding(&r, "unbounded-retries");
    assert_eq!(f.severity, Severity::Error);
    assert!(r.has_errors());
    // cenkalti's 15 min max_elapsed bounds it.
    let r = report("layers:\n  - { name: a, preset: cenkalti-v4, timeout: 1s }\n");
    assert!(!codes(&r).contains(&"unbounded-retries"));
    assert!(r.layers[0].bounded_by.contains(&"max_elapsed".to_string()));
    assert!((r.stack.worst_case_s.unwrap() - 901.0).abs() < 1e-9);
}

#[test]
fn non_retryable_statuses() {
    let r = report(
        "layers:\n  - { name: a, retry: { max_attempts: 3, retry_on: [timeout, 503, 404] } }\n",
    );
    let f = finding(&r, "retries-non-retryable-status");
    assert_eq!(
        (f.severity, f.path.as_str()),
        (Severity::Error, "layers.a.retry.retry_on")
    );
    assert!(f.message.contains("404"));
    let r = report("layers:\n  - { name: a, preset: resilience4j-default }\n");
    assert!(
        finding(&r, "retries-non-retryable-status")
            .message
            .contains("4xx")
    );
    // One attempt: nothing is retried, nothing to report.
    let r = report("layers:\n  - { name: a, retry: { max_attempts: 1, retry_on: [404] } }\n");
    assert!(r.findings.is_empty(), "{:?}", codes(&r));
}

#[test]
fn retry_after_findings() {
    let overloaded = MINIMAL.replace(
        "  concurrency: 4\n",
        "  concurrency: 4\n  overload: { status: 429, retry_after: 5s }\n",
    );
    let load = |extra: &str, src: &str| check(&load_str(&format!("{src}{extra}"), "x").unwrap());
    let r = load(
        "layers:\n  - { name: a, retry: { max_attempts: 3, retry_after: ignore } }\n",
        &overloaded,
    );
    assert_eq!(
        finding(&r, "retry-after-ignored").severity,
        Severity::Warning
    );
    let r = load(
        "layers:\n  - { name: a, retry: { max_attempts: 3, retry_after: ignore } }\n",
        MINIMAL,
    );
    assert_eq!(finding(&r, "retry-after-ignored").severity, Severity::Info);
    let with_deadline = overloaded.replace("rate: 100/s }", "rate: 100/s }\n  deadline: 2s");
    let r = load(
        "layers:\n  - { name: a, timeout: 100ms, retry: { max_attempts: 3 } }\n",
        &with_deadline,
    );
    assert_eq!(
        finding(&r, "retry-after-exceeds-deadline").severity,
        Severity::Info
    );
    // Honoured Retry-After lengthens the worst-case sleeps.
    assert_eq!(r.layers[0].sleeps_worst_s, [5.0, 5.0]);
    let r = load(
        "layers:\n  - { name: a, retry: { max_attempts: 3 } }\n",
        MINIMAL,
    );
    assert!(codes(&r).contains(&"retry-after-unbounded"));
}

#[test]
fn presets_review_cleanly_where_they_should() {
    let src = MINIMAL.replace("rate: 100/s }", "rate: 100/s }\n  deadline: 30s");
    let r = check(
        &load_str(
            &format!("{src}layers:\n  - {{ name: a, preset: grpc-a6, timeout: 1s }}\n"),
            "x",
        )
        .unwrap(),
    );
    assert!(
        r.findings.iter().all(|f| f.severity == Severity::Info),
        "{:#?}",
        r.findings
    );
    assert_eq!(r.layers[0].budgeted_attempts, 1.0);
    // JSON carries everything.
    let v: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
    assert_eq!(v["layers"][0]["preset"], "grpc-a6");
    assert_eq!(v["stack"]["amplification"], 4.0);
    let text = human(&r, "x.yaml");
    assert!(text.contains("amplification: up to 4x"), "{text}");
}

#[test]
fn fan_out_and_hedging_count_in_the_amplification() {
    // 3 attempts x fan-out 2 over 3 attempts: 18 calls at the dependency.
    let r = report(
        "layers:\n  - { name: a, fan_out: 2, retry: { max_attempts: 3 } }\n  - { name: b, retry: { max_attempts: 3 } }\n",
    );
    assert_eq!(r.stack.amplification, 18.0);
    let calls: Vec<f64> = r.layers.iter().map(|l| l.calls_per_request).collect();
    assert_eq!(calls, [1.0, 6.0]);
    assert_eq!(r.layers[0].fan_out, 2);
    let f = finding(&r, "nested-retries-without-budget");
    assert!(
        f.message.contains("become 18 calls") && f.message.contains("3 x fan-out 2 x 3 = 18x"),
        "{}",
        f.message
    );
    assert!(human(&r, "x").contains("amplification: up to 18x"));
    // A hedging policy sends up to its hedges: 4 x 2 = 8.
    let r = report(
        "layers:\n  - { name: a, hedging: { delay: 50ms, max_attempts: 4 } }\n  - { name: b, retry: { max_attempts: 2 } }\n",
    );
    assert_eq!(r.stack.amplification, 8.0);
    assert_eq!(r.layers[0].max_attempts, 4);
    // Hedges go 50 ms apart: the call lasts 3 x 50 ms + the last attempt.
    let r = report(
        "layers:\n  - { name: a, timeout: 1s, hedging: { delay: 50ms, max_attempts: 4 } }\n",
    );
    assert!((r.stack.worst_case_s.unwrap() - 1.15).abs() < 1e-9);
    assert!(
        r.stack.worst_case.contains("all 4 hedges sent, 50ms apart"),
        "{}",
        r.stack.worst_case
    );
    // Every delivery of a message is a logical request.
    let r = report(
        "consumers: { concurrency: 4, max_receive_count: 5 }\nlayers:\n  - { name: a, retry: { max_attempts: 3 } }\n",
    );
    assert_eq!((r.stack.deliveries, r.stack.amplification), (5, 15.0));
    assert!(human(&r, "x").contains("per message (up to 5 deliveries"));
}

#[test]
fn huge_amplification_prints_as_an_order_of_magnitude() {
    let layers: String = (0..16)
        .map(|i| {
            format!("  - {{ name: l{i}, retry: {{ max_attempts: 1000, max_elapsed: 1s }} }}\n")
        })
        .collect();
    let r = report(&format!("layers:\n{layers}"));
    assert!(r.stack.amplification >= 1e47);
    let text = human(&r, "x");
    assert!(text.contains("amplification: at least 10^48x"), "{text}");
    for line in text.lines() {
        // No number longer than 13 digits anywhere.
        assert!(longest_number(line) <= 13, "{line}");
    }
    let f = finding(&r, "nested-retries-without-budget");
    assert!(
        f.message.contains("become at least 10^48 calls"),
        "{}",
        f.message
    );
    assert_eq!(times(1e12), "at least 10^12x");
    assert_eq!(times(18.0), "18x");
    assert_eq!(times(1.1), "1.10x");
}

/// Review 8 C2: when `total_timeout` or `max_elapsed` bounds the call, the
/// story says what fits inside that bound, not "all N attempts timing out".
#[test]
fn the_worst_case_story_matches_the_bound_that_made_it() {
    let layer = |extra: &str| {
        report(&format!(
            "layers:\n  - {{ name: a, timeout: 500ms{extra}, retry: {{ max_attempts: 4, backoff: {{ kind: exponential, base: 50ms, multiplier: 2, cap: 1s }}, jitter: none, retry_on: [timeout, connection, 503]{{retry}} }} }}\n"
        ).replace("{retry}", ""))
    };
    // 0-500 ms, sleep 50 ms, 550 ms: the second attempt is cut at 700 ms.
    let r = layer(", total_timeout: 700ms");
    assert_eq!(
        r.stack.worst_case,
        "layer `a`: attempts timing out until `total_timeout` ends the call at 700ms: 2 of the 4 attempts start"
    );
    assert!((r.stack.worst_case_s.unwrap() - 0.7).abs() < 1e-9);
    // Attempt 2 would start at 550 ms: exactly at a 550 ms total_timeout it does not.
    let r = layer(", total_timeout: 550ms");
    assert!(
        r.stack
            .worst_case
            .ends_with("only the first of the 4 attempts starts"),
        "{}",
        r.stack.worst_case
    );
    let r = layer(", total_timeout: 551ms");
    assert!(r.stack.worst_case.ends_with("2 of the 4 attempts start"));
    // 4 × 500 ms + 50 + 100 + 200 = 2350 ms: 2100 ms cuts the last one.
    let r = layer(", total_timeout: 2100ms");
    assert!(
        r.stack
            .worst_case
            .ends_with("the last of the 4 attempts cut short"),
        "{}",
        r.stack.worst_case
    );
    // max_elapsed 120 ms: fast failures retried within it, then one timeout.
    let r = report(
        "layers:\n  - { name: a, timeout: 500ms, retry: { max_attempts: 4, max_elapsed: 120ms, retry_on: [timeout, connection, 503] } }\n",
    );
    assert_eq!(
        r.stack.worst_case,
        "layer `a`: failures that come at once (connection errors, 503) retried until `max_elapsed` (120ms) lets no more retries start, then the last attempt timing out (at most 4 attempts)"
    );
    assert!((r.stack.worst_case_s.unwrap() - 0.62).abs() < 1e-9);
    // Only timeouts retried: no retry starts after the first timeout.
    let r = report(
        "layers:\n  - { name: a, timeout: 500ms, retry: { max_attempts: 4, max_elapsed: 120ms, retry_on: [timeout] } }\n",
    );
    assert!(
        r.stack
            .worst_case
            .ends_with("lets retries start: 1 of the 4 attempts goes"),
        "{}",
        r.stack.worst_case
    );
    // Not binding: the unbounded story.
    let r = layer(", total_timeout: 10s");
    assert_eq!(r.stack.worst_case, "layer `a`: all 4 attempts timing out");
}

#[test]
fn the_worst_case_is_described_for_the_policy_it_is() {
    // Timeouts retried: every attempt times out.
    let r = report("layers:\n  - { name: a, timeout: 1s, retry: { max_attempts: 3 } }\n");
    assert_eq!(r.stack.worst_case, "layer `a`: all 3 attempts timing out");
    assert!(
        human(&r, "x").contains("stack: in the worst case (layer `a`: all 3 attempts timing out)")
    );
    // Timeouts not retried (gRPC): the retried failures come just before
    // the timeout, and only the last attempt times out.
    let r = report("layers:\n  - { name: a, timeout: 1s, preset: grpc-a6 }\n");
    let w = &r.stack.worst_case;
    assert!(
        w.contains("3 attempts failing with a retried outcome (connection errors, 503) just before its timeout, then the last timing out (timeouts are not retried)"),
        "{w}"
    );
    assert!(!human(&r, "x").contains("every attempt timing out"));
    // Nothing retried but timeouts, and timeouts not retried.
    let r = report(
        "layers:\n  - { name: a, timeout: 1s, retry: { max_attempts: 3, retry_on: [timeout] } }\n",
    );
    assert!(r.stack.worst_case.contains("all 3 attempts timing out"));
    let r = report("layers:\n  - { name: a, timeout: 1s, retry: { max_attempts: 1 } }\n");
    assert_eq!(r.stack.worst_case, "layer `a`: its one attempt timing out");
    // The deadline finding says the same.
    let src = MINIMAL.replace("rate: 100/s }", "rate: 100/s }\n  deadline: 2s");
    let r = check(
        &load_str(
            &format!("{src}layers:\n  - {{ name: a, timeout: 1s, preset: grpc-a6 }}\n"),
            "x",
        )
        .unwrap(),
    );
    let f = finding(&r, "retries-exceed-deadline");
    assert!(
        f.message
            .starts_with("in the worst case (layer `a`: 3 attempts failing with a retried outcome"),
        "{}",
        f.message
    );
}

#[test]
fn a_timeout_longer_than_the_run_is_advice_not_an_error() {
    let r = report("layers:\n  - { name: a, timeout: 1h, retry: { max_attempts: 2 } }\n");
    let f = finding(&r, "timeout-never-fires");
    assert_eq!(
        (f.severity, f.path.as_str()),
        (Severity::Info, "layers.a.timeout")
    );
    assert!(!r.has_errors());
}

/// Times read as people read them, never as a 15-digit number of seconds.
#[test]
fn large_times_are_readable() {
    use super::findings::fmt_s;
    for (v, text) in [
        (0.25, "250 ms"),
        (16.7, "16.70 s"),
        (450.0, "450 s"),
        (1500.0, "25 min"),
        (12_000.0, "3 h 20 min"),
        (1_050_000.0, "12 d 4 h"),
        (40_000_000.0, "over a year"),
        (1e15, "over a year"),
        (f64::INFINITY, "over a year"),
    ] {
        assert_eq!(fmt_s(v), text, "{v}");
    }
}

/// A layer without a timeout of its own times nothing out: the worst case
/// says what happens instead (its attempts last as long as the call below
/// them, or, when nothing below gives up, its first attempt is never
/// answered).
#[test]
fn the_worst_case_of_a_layer_without_a_timeout() {
    let r = report(
        "layers:\n  - { name: outer, retry: { max_attempts: 3 } }\n  - { name: inner, timeout: 1s, retry: { max_attempts: 2 } }\n",
    );
    assert_eq!(
        r.layers[0].worst_case,
        "all 3 attempts lasting as long as the call below them, each failing when it gives up (no timeout of its own)"
    );
    assert_eq!(r.layers[1].worst_case, "all 2 attempts timing out");
    let r = report("layers:\n  - { name: only, retry: { max_attempts: 3 } }\n");
    assert_eq!(
        r.layers[0].worst_case,
        "its first attempt never answered: no timeout, and nothing below gives up, so the other 2 attempts never go"
    );
    let text = human(&r, "x.yaml");
    assert!(text.contains("a request has no time bound"), "{text}");
    assert!(!text.contains("timing out"), "{text}");
    // Hours of backoff read as hours, not seconds.
    let r = report(
        "layers:\n  - { name: slow, timeout: 1h, retry: { max_attempts: 3, backoff: { kind: constant, base: 2h } } }\n",
    );
    let text = human(&r, "x.yaml");
    assert!(text.contains("7 h 0 min"), "{text}");
    assert!(!text.contains("25200"), "{text}");
}

/// The digits of the longest number in `line`.
pub(super) fn longest_number(line: &str) -> usize {
    line.split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0)
}

/// Review 13: consumers (5 deliveries), `a` with fan-out 2, `b` with a
/// status probe, writes without a key.
const PROBED_WRITES: &str = "\
name: amp
duration: 60s
clients:
  arrival: { kind: poisson, rate: 50/s }
consumers:
  concurrency: 8
  visibility_timeout: 30s
  max_receive_count: 5
layers:
  - name: a
    timeout: 1s
    fan_out: 2
    retry: { max_attempts: 3, retry_on: [503] }
  - name: b
    timeout: 200ms
    status_probe: true
    retry: { max_attempts: 4, retry_on: [timeout, connection] }
dependency:
  concurrency: 16
  service_time: { dist: exponential, mean: 20ms }
  queue: { capacity: 500 }
  side_effects: write
";

fn review(src: &str) -> Report {
    check(&load_str(src, "x.yaml").unwrap_or_else(|e| panic!("{e}\n{src}")))
}

/// The product shown is the figure: every factor of it is listed, the
/// status probes and the deliveries too (it read `3 x fan-out 2 x 4 =
/// 210x`, per logical request).
#[test]
fn the_amplification_shown_lists_every_factor() {
    let r = review(PROBED_WRITES);
    assert_eq!(r.stack.amplification, 210.0);
    let f = finding(&r, "nested-retries-without-budget");
    assert!(
        f.message.contains(
            "one message can become 210 calls at the dependency (3 x fan-out 2 x (4 attempts + 3 status probes) x 5 deliveries = 210x;"
        ),
        "{}",
        f.message
    );
    let text = render::human(&r, "x.yaml");
    assert!(
        text.contains(
            "per message (up to 5 deliveries, each a logical request): 3 x fan-out 2 x (4 attempts + 3 status probes) x 5 deliveries;"
        ),
        "{text}"
    );
}

/// A fix never suggests what is already set, nor what would not help:
/// the status probe `b` has (it is no proof: still an error, with the key
/// as the fix), a probe for the retries of `a` above it (a probe asks
/// only before the retries of the layer that calls the dependency),
/// `deadline: propagate` on the inner layer whose retries outlive its
/// caller (the caller hands the deadline down), or on callers that
/// propagate already, or `retry_after: honor` where it is set.
#[test]
fn fixes_suggest_only_what_is_not_set_and_helps() {
    let r = review(PROBED_WRITES);
    let fixes = |path: &str| -> Vec<String> {
        r.findings
            .iter()
            .filter(|f| f.code == "non-idempotent-retries" && f.path == path)
            .map(|f| f.fix.clone())
            .collect()
    };
    for path in ["layers.a.retry", "layers.b.retry"] {
        let fix = fixes(path).pop().unwrap_or_else(|| panic!("{path}"));
        assert!(
            fix.starts_with("set `dependency.idempotency: key`"),
            "{fix}"
        );
        assert!(!fix.contains("status_probe: true"), "{path}: {fix}");
    }
    // Without the probe, b is told of it; a never is.
    let unprobed = review(&PROBED_WRITES.replace("    status_probe: true\n", ""));
    let fix_of = |r: &Report, path: &str| {
        r.findings
            .iter()
            .find(|f| f.code == "non-idempotent-retries" && f.path == path)
            .map(|f| f.fix.clone())
            .unwrap()
    };
    assert!(fix_of(&unprobed, "layers.b.retry").contains("`status_probe: true` on this layer"));
    assert!(!fix_of(&unprobed, "layers.a.retry").contains("status_probe: true"));
    // b's retries outlive a's attempt: the fix is a's deadline.
    let f = finding(&r, "inner-retries-outlive-caller");
    assert!(
        f.fix.contains("`deadline: propagate` on the caller `a`"),
        "{}",
        f.fix
    );
    let on_b = review(&PROBED_WRITES.replace(
        "    status_probe: true\n",
        "    status_probe: true\n    deadline: propagate\n",
    ));
    assert!(codes(&on_b).contains(&"inner-retries-outlive-caller"));
    let on_a = review(&PROBED_WRITES.replace(
        "    fan_out: 2\n",
        "    fan_out: 2\n    deadline: propagate\n",
    ));
    assert!(!codes(&on_a).contains(&"inner-retries-outlive-caller"));
    // No wall clock: propagate is suggested on a, and not once a has it.
    let wall = |r: &Report| finding(r, "no-wall-clock-budget").fix.clone();
    assert!(
        wall(&r).contains("`deadline: propagate` on layer `a`"),
        "{}",
        wall(&r)
    );
    assert!(!wall(&on_a).contains("propagate"), "{}", wall(&on_a));
    // `retry_after: honor` is the default: the cap alone is suggested.
    let f = finding(&r, "retry-after-unbounded");
    assert_eq!(f.fix, "set clients.deadline, or retry_after_cap");
}
