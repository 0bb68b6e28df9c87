//! Priority classes and priority shedding (`clients.classes`, a server's
//! `shed_by_priority`), run whole:
//!
//! - conservation per class: every logical request of a class succeeded,
//!   failed, was shed or is still open, and the classes add up to the run's
//!   totals (in a services graph with retries, and in a chain);
//! - the classes drawn follow the mix within a binomial margin;
//! - under overload, shedding the background class keeps the critical
//!   class's success high while background's falls; without shedding the
//!   two classes' success rates agree within a binomial margin (the class
//!   is then independent of a request's fate);
//! - shedding starts exactly at the threshold (a replica whose one worker
//!   never finishes: exact counts);
//! - without classes nothing changes (no class rows; the goldens check the
//!   bytes).

use stormsim::invariants;
use stormsim::metrics::classes::{ClassRow, RunEnd, tabulate_classes};
use stormsim::metrics::services::GraphTables;
use stormsim::metrics::table::hung_bound;
use stormsim::metrics::{Summary, tabulate, tabulate_services};
use stormsim::model::{ModelConfig, World};
use stormsim::scenario::{load_str, to_model};

fn model(yaml: &str) -> ModelConfig {
    to_model(&load_str(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}")))
}

/// A run's summary, graph tables and class rows, its invariants checked.
fn run(cfg: &ModelConfig, seed: u64) -> (Summary, GraphTables, Vec<ClassRow>) {
    let (rec, info) = World::new(cfg, seed).run();
    let ctx = cfg.run_context();
    let (rows, s) = tabulate(&rec, &info, &ctx);
    let g = tabulate_services(&rec, &ctx, &s);
    let broken = invariants::violations(cfg, &s, &rows, &g);
    assert!(broken.is_empty(), "{broken:?}");
    let end = RunEnd {
        end: info.end,
        hung_bound: hung_bound(&rec, &ctx),
        aborted: info.aborted.is_some(),
    };
    let classes = tabulate_classes(&rec, cfg.classes.classes(), end);
    let broken = invariants::class_violations(&s, &classes);
    assert!(broken.is_empty(), "{broken:?}");
    (s, g, classes)
}

/// An API of 2 replicas × 50 workers at 50 ms (2000/s), a queue of 500
/// each, clients at 1600/s spiking to `spike`/s over [20 s, 60 s),
/// retrying timeouts (1 s) and 503s up to 3 attempts; 20% critical, 80%
/// background; `shed` is the API's `shed_by_priority` line (or empty).
fn overload(spike: u32, shed: &str) -> ModelConfig {
    let shed = if shed.is_empty() {
        String::new()
    } else {
        format!("    shed_by_priority: {shed}\n")
    };
    model(&format!(
        "name: priority-test
seed: 1
duration: 80s
bucket: 1s
clients:
  arrival: {{ kind: poisson, rate: 1600/s }}
  schedule:
    - {{ at: 20s, rate: {spike}/s, for: 40s }}
  deadline: 5s
  classes:
    - {{ name: critical, share: 0.2 }}
    - {{ name: background, share: 0.8 }}
  calls:
    to: api
    timeout: 1s
    retry:
      max_attempts: 3
      backoff: {{ kind: exponential, base: 100ms, cap: 1s }}
      jitter: full
      retry_on: [timeout, 503]
services:
  - name: api
    replicas: 2
    concurrency: 50
    queue: {{ capacity: 500 }}
    service_time: {{ dist: exponential, mean: 50ms }}
{shed}"
    ))
}

fn conserved(s: &Summary, classes: &[ClassRow]) {
    for c in classes {
        assert_eq!(
            c.requests,
            c.succeeded + c.failed + c.shed + c.open_at_end,
            "{c:?}"
        );
    }
    let sum = |f: fn(&ClassRow) -> u64| classes.iter().map(f).sum::<u64>();
    assert_eq!(sum(|c| c.requests), s.logical_requests);
    assert_eq!(sum(|c| c.succeeded), s.succeeded);
    assert_eq!(sum(|c| c.failed + c.shed), s.failed);
    assert_eq!(sum(|c| c.open_at_end), s.in_flight_at_end);
}

/// Whether two success proportions agree within `z` standard errors of
/// their difference (the two-proportion test's pooled variance).
fn agree(a: &ClassRow, b: &ClassRow, z: f64) -> bool {
    let ended = |c: &ClassRow| (c.succeeded + c.failed + c.shed) as f64;
    let (na, nb) = (ended(a), ended(b));
    let pooled = (a.succeeded + b.succeeded) as f64 / (na + nb);
    let se = (pooled * (1.0 - pooled) * (1.0 / na + 1.0 / nb)).sqrt();
    let diff = a.success_rate.unwrap() - b.success_rate.unwrap();
    diff.abs() <= z * se
}

#[test]
fn every_request_of_every_class_is_accounted_for() {
    for shed in ["", "{ background: 50 }", "{ critical: 400, background: 0 }"] {
        let (s, g, classes) = run(&overload(3000, shed), 3);
        assert_eq!(classes.len(), 2);
        conserved(&s, &classes);
        // Every attempt shed by priority is one the API counted as shed.
        let shed_attempts: u64 = classes.iter().map(|c| c.shed_attempts).sum();
        let api = &g.services[0];
        assert!(shed_attempts <= api.totals.shed, "{shed}");
        if shed.is_empty() {
            assert_eq!(shed_attempts, 0);
            assert!(classes.iter().all(|c| c.shed == 0));
        } else {
            assert!(shed_attempts > 0, "{shed}");
        }
    }
}

#[test]
fn a_chain_carries_the_class_to_its_dependency() {
    let cfg = model(
        "name: chain
seed: 1
duration: 30s
clients:
  arrival: { kind: poisson, rate: 900/s }
  classes:
    - { name: critical, share: 0.5 }
    - { name: background, share: 0.5 }
layers:
  - name: edge
    timeout: 2s
  - name: api
    timeout: 1s
    retry: { max_attempts: 2, retry_on: [503] }
dependency:
  concurrency: 8
  service_time: { dist: exponential, mean: 10ms }
  queue: { capacity: 1000 }
  shed_by_priority: { background: 5 }
",
    );
    let (s, _, classes) = run(&cfg, 1);
    conserved(&s, &classes);
    let [critical, background] = &classes[..] else {
        panic!("{classes:?}")
    };
    // 900/s against 800/s: the background class is shed, retried once,
    // and some of it ends shed; the critical class never is.
    assert_eq!(critical.shed_attempts, 0);
    assert_eq!(critical.shed, 0);
    assert!(background.shed_attempts > background.shed && background.shed > 0);
    assert!(critical.success_rate.unwrap() > 0.999, "{critical:?}");
}

#[test]
fn the_classes_drawn_follow_the_mix() {
    let cfg = overload(1600, "");
    for seed in 1..=3 {
        let (s, _, classes) = run(&cfg, seed);
        let n = s.logical_requests as f64;
        for (c, p) in classes.iter().zip([0.2, 0.8]) {
            let sd = (p * (1.0 - p) / n).sqrt();
            let got = c.requests as f64 / n;
            assert!((got - p).abs() < 4.0 * sd, "{}: {got} vs {p}", c.class);
            assert_eq!(c.share, p);
        }
    }
}

#[test]
fn shedding_the_background_class_keeps_the_critical_one_whole() {
    // 3000/s against 2000/s for 40 s: the queues fill, waits pass the 1 s
    // timeout, retries add to the load.
    let (_, _, none) = run(&overload(3000, ""), 1);
    let (_, _, shed) = run(&overload(3000, "{ background: 50 }"), 1);
    let rate = |c: &ClassRow| c.success_rate.unwrap();
    // Without priority: both classes fail together, alike.
    assert!(rate(&none[0]) < 0.95, "{:?}", none[0]);
    assert!(agree(&none[0], &none[1], 4.0), "{none:?}");
    // With it: critical keeps near 100%, background pays.
    assert!(rate(&shed[0]) > 0.999, "{:?}", shed[0]);
    assert!(rate(&shed[1]) < rate(&shed[0]) - 0.1, "{shed:?}");
    assert!(shed[1].shed > 0 && shed[0].shed == 0);
    assert!(shed[0].latency_p99_ms.unwrap() < none[0].latency_p99_ms.unwrap());
}

/// One replica, one worker whose request never finishes, a queue of 100:
/// everything after the first request waits, or is shed.
fn stuck(classes: &str, shed: &str) -> ModelConfig {
    model(&format!(
        "name: stuck
seed: 1
duration: 10s
clients:
  arrival: {{ kind: poisson, rate: 20/s }}
  classes: {classes}
dependency:
  concurrency: 1
  service_time: {{ dist: constant, value: 1000s }}
  queue: {{ capacity: 100 }}
  shed_by_priority: {shed}
"
    ))
}

#[test]
fn shedding_starts_exactly_at_the_threshold() {
    for threshold in [0u64, 1, 5, 30] {
        let cfg = stuck(
            "[{ name: batch, share: 1 }]",
            &format!("{{ batch: {threshold} }}"),
        );
        let (s, g, classes) = run(&cfg, 2);
        let c = &classes[0];
        let n = c.requests;
        assert!(n > 150, "{n}");
        // One in service, `threshold` waiting, every later one shed.
        assert_eq!(c.open_at_end, 1 + threshold, "threshold {threshold}");
        assert_eq!(c.shed, n - 1 - threshold);
        assert_eq!(c.shed_attempts, n - 1 - threshold);
        assert_eq!((c.succeeded, c.failed), (0, 0));
        assert_eq!(g.services[0].totals.shed, n - 1 - threshold);
        assert_eq!(s.in_flight_at_end, 1 + threshold);
    }
    // Without a threshold the queue's bound sheds instead: 1 + 100 kept,
    // none counted shed by priority (they failed).
    let (_, g, classes) = run(&stuck("[{ name: batch, share: 1 }]", "{}"), 2);
    let c = &classes[0];
    assert_eq!((c.open_at_end, c.shed, c.shed_attempts), (101, 0, 0));
    assert_eq!(c.failed, c.requests - 101);
    assert_eq!(g.services[0].totals.shed, c.requests - 101);
}

#[test]
fn a_class_without_a_threshold_is_never_shed_by_priority() {
    let cfg = stuck(
        "[{ name: critical, share: 0.3 }, { name: background, share: 0.7 }]",
        "{ background: 5 }",
    );
    let (s, _, classes) = run(&cfg, 4);
    conserved(&s, &classes);
    let [critical, background] = &classes[..] else {
        panic!()
    };
    // Critical requests queue until the queue's own bound (100 waiting).
    assert_eq!((critical.shed, critical.shed_attempts), (0, 0));
    assert_eq!(
        critical.open_at_end,
        critical.requests.min(101 - background.open_at_end)
    );
    // Background ones get in only while fewer than 5 wait: the first
    // six requests at most (one in service, five waiting).
    assert!(background.open_at_end <= 6, "{background:?}");
    assert_eq!(
        background.shed,
        background.requests - background.open_at_end
    );
    assert_eq!(
        critical.open_at_end + background.open_at_end,
        s.in_flight_at_end
    );
}

#[test]
fn without_classes_there_are_no_class_rows() {
    let cfg = model(
        "name: plain
duration: 5s
clients:
  arrival: { kind: poisson, rate: 100/s }
dependency:
  concurrency: 4
  service_time: { dist: exponential, mean: 10ms }
",
    );
    assert!(cfg.classes.is_empty());
    let (_, _, classes) = run(&cfg, 1);
    assert!(classes.is_empty());
}

#[test]
fn a_run_with_classes_is_deterministic() {
    let cfg = overload(3000, "{ background: 50 }");
    let (a, ga, ca) = run(&cfg, 9);
    let (b, gb, cb) = run(&cfg, 9);
    assert_eq!(ca, cb);
    assert_eq!(ga, gb);
    assert_eq!(a.logical_requests, b.logical_requests);
}
