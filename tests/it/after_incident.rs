//! The figures after the incident (README, "After the incident") on
//! constructed cases where they are known exactly: a `down` incident
//! refuses every attempt that arrives during it and does no work; the
//! peak after the incident is the peak of the buckets after it; the load
//! against the capacity the service had is never below the load against
//! its nominal capacity; the figures outside the incidents leave out
//! exactly the requests that lived through one.

use stormsim::runner::{self, RunResult};
use stormsim::scenario;

fn run(yaml: &str) -> Vec<RunResult> {
    let s = scenario::load_str(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"));
    let plans = runner::plan(&s).unwrap();
    runner::run_all(&plans, s.replicates, s.seed, &|_| {})
}

/// 400 requests/s, 3 attempts with no backoff, against 16 workers at a
/// constant 10 ms (1600/s), down from 10 s to 20 s.
fn down(warmup: &str) -> String {
    format!(
        "
name: down
seed: 3
duration: 40s
bucket: 1s
clients:
  arrival: {{ kind: poisson, rate: 400/s }}
layers:
  - name: api
    timeout: 1s
    retry:
      max_attempts: 3
      backoff: {{ kind: constant, base: 0s }}
      jitter: none
      retry_on: [timeout, connection, 503]
dependency:
  concurrency: 16
  service_time: {{ dist: constant, value: 10ms }}
  queue: {{ capacity: 1000 }}
  incidents:
    - {{ kind: down, start: 10s, end: 20s }}
  recovery: {{ warmup: {warmup} }}
"
    )
}

#[test]
fn a_down_incident_refuses_every_attempt_and_does_no_work() {
    for warmup in ["0s", "5s"] {
        let results = run(&down(warmup));
        let r = &results[0];
        let s = &r.summary;
        let during = 10..20;
        // Every attempt that arrived during the outage was refused, and
        // none outside it (the buckets align with the incident).
        let arrived: u64 = r.rows[during.clone()]
            .iter()
            .map(|row| row.dependency_attempts)
            .sum();
        assert!(arrived > 3 * 3500, "{arrived}: 3 attempts per request");
        assert_eq!(s.refused, arrived, "warm-up {warmup}");
        let dep = r
            .graph
            .services
            .iter()
            .find(|x| r.services[x.service].name == "dependency")
            .unwrap();
        assert_eq!(dep.totals.refused, s.refused, "services.csv agrees");
        // No work during it: nothing served, no worker busy.
        for row in r.graph.rows.iter().filter(|row| {
            r.services[row.service].name == "dependency" && (10.0..20.0).contains(&row.t_s)
        }) {
            assert_eq!(row.counts.served, 0, "at {} s", row.t_s);
            assert_eq!(row.counts.refused, row.counts.attempts, "at {} s", row.t_s);
            assert_eq!(row.utilization, Some(0.0), "at {} s", row.t_s);
        }
        // The peak after the incident is the peak of the buckets from its
        // end on, and no more than the peak of the whole run.
        let after = r.rows[20..]
            .iter()
            .filter_map(|row| row.load_ratio)
            .fold(0.0, f64::max);
        assert_eq!(s.peak_load_ratio_after, Some(after));
        assert!(after <= s.peak_load_ratio.unwrap());
        // Against the capacity it had, bucket by bucket: none during the
        // outage (left out), then a linear ramp from 10% over the warm-up
        // (a bucket's mean is the ramp at its middle), then all of it.
        let warm = if warmup == "0s" { 0.0 } else { 5.0 };
        let had = |b: usize| {
            let since = b as f64 + 0.5 - 20.0;
            if b >= 20 && since < warm {
                0.1 + 0.9 * since / warm
            } else {
                1.0
            }
        };
        let expected = r
            .rows
            .iter()
            .enumerate()
            .filter(|(b, _)| !during.contains(b))
            .map(|(b, row)| row.dependency_attempts as f64 / (1600.0 * had(b)))
            .fold(0.0, f64::max);
        let effective = s.peak_effective_load_ratio.unwrap();
        assert!(
            (effective - expected).abs() < 1e-9 * expected,
            "warm-up {warmup}: {effective} vs {expected}"
        );
        assert!(effective >= after, "less capacity than nominal, never more");
        if warmup == "0s" {
            // During the outage the refused retries triple the load: the
            // run's peak is there, not after it; with the capacity back
            // at once, so is the goodput.
            assert!(
                s.peak_load_ratio.unwrap() > 2.0 * after,
                "{} vs {after}",
                s.peak_load_ratio.unwrap()
            );
            assert_eq!(s.time_to_full_goodput_s, Some(0.0));
        } else {
            // 400/s against a service warming from 160/s: more than it
            // can serve, where nominally it is a quarter.
            assert!(effective > 1.2, "{effective}");
            assert!(after < 0.4, "{after}");
            assert!(s.time_to_full_goodput_s.unwrap() > 0.0);
        }
    }
}

#[test]
fn figures_outside_incidents_leave_out_the_requests_that_lived_through_one() {
    // Constant 100 ms of work on ample workers: every request takes
    // exactly 100 ms, except during a latency incident that adds 1 s to
    // every response (10 s to 20 s), and an error burst that fails every
    // request (30 s to 35 s).
    let yaml = "
name: outside
seed: 5
duration: 60s
bucket: 1s
clients:
  arrival: { kind: poisson, rate: 200/s }
dependency:
  concurrency: 1000
  service_time: { dist: constant, value: 100ms }
  queue: { capacity: 10 }
  incidents:
    - { kind: latency, start: 10s, end: 20s, add: 1s }
    - { kind: errors, start: 30s, end: 35s, rate: 1.0, status: 503 }
";
    let r = &run(yaml)[0];
    let s = &r.summary;
    // Overall, the incidents show: a p99 of 1.1 s and failures.
    assert!(s.latency_p99_ms.unwrap() > 1000.0);
    assert!(s.failed > 900, "{}", s.failed);
    // Outside them, every request succeeded in 100 ms (to HdrHistogram's
    // 3 significant digits).
    assert_eq!(s.success_rate_outside_incidents, Some(1.0));
    let p99 = s.latency_p99_outside_ms.unwrap();
    assert!((p99 - 100.0).abs() <= 0.1, "{p99}");
    // Neither incident takes capacity away: its load is its nominal load.
    assert_eq!(s.peak_effective_load_ratio, s.peak_load_ratio);
    // The trigger ends at 35 s: the peak after is over the buckets from 35.
    let after = r.rows[35..]
        .iter()
        .filter_map(|row| row.load_ratio)
        .fold(0.0, f64::max);
    assert_eq!(s.peak_load_ratio_after, Some(after));
    assert_eq!(s.refused, 0, "nothing was down");

    // Without incidents, the figures outside them are the run's own.
    let calm = yaml
        .lines()
        .take_while(|l| !l.starts_with("  incidents"))
        .collect::<Vec<_>>()
        .join("\n");
    let s = &run(&calm)[0].summary;
    assert_eq!(s.success_rate_outside_incidents, s.success_rate);
    assert_eq!(s.latency_p99_outside_ms, s.latency_p99_ms);
    assert_eq!(s.peak_load_ratio_after, s.peak_load_ratio);
    assert_eq!(s.time_to_full_goodput_s, None, "no trigger");
}

#[test]
fn a_metastable_run_never_gets_its_goodput_back() {
    let s = scenario::load_file(std::path::Path::new("scenarios/orphaned-work.yaml")).unwrap();
    let plans = runner::plan(&s).unwrap();
    let results = runner::run_all(&plans, 1, s.seed, &|_| {});
    let stuck = results
        .iter()
        .find(|r| r.variant == "no-cancellation")
        .unwrap();
    assert_eq!(stuck.summary.recovered, Some(false));
    assert_eq!(stuck.summary.time_to_full_goodput_s, None);
    // Bucket by bucket is stricter than the sliding window: every window
    // over healthy buckets is healthy, not the other way round.
    let recovered: Vec<_> = results
        .iter()
        .filter(|r| r.summary.recovered == Some(true))
        .collect();
    assert!(!recovered.is_empty());
    for r in recovered {
        let full = r.summary.time_to_full_goodput_s.unwrap();
        let window = r.summary.recovery_time_s.unwrap();
        assert!(full >= window, "{}: {full} < {window}", r.variant);
    }
}

#[test]
fn a_thread_per_request_focus_has_the_capacity_its_row_in_services_has() {
    // `analysis.service` names a tier whose 50 threads are held while its
    // call below is out (`hold_worker`, the default): a 500 ms latency
    // incident below holds each thread 100× longer than its own 1 ms of
    // work, so its capacity is what the hold times allowed (as in
    // `services.csv`), not 50 ÷ 1 ms. The summary's figures for the focus
    // must be that row's; they were 0.005× against 50 000/s, so an SLO on
    // the peak after the incident passed on a tier shedding requests.
    let yaml = "
name: thread-per-request-focus
duration: 30s
seed: 5
clients:
  arrival: { kind: poisson, rate: 200/s }
  calls: web
services:
  - name: web
    concurrency: 50
    service_time: { dist: constant, value: 1ms }
    queue: { capacity: 100 }
    calls: [ { to: db } ]
  - name: db
    concurrency: 20
    service_time: { dist: exponential, mean: 5ms }
    incidents:
      - { kind: latency, start: 10s, end: 20s, add: 500ms }
analysis:
  service: web
  trigger_end: 11s
";
    let r = &run(yaml)[0];
    let web = r.services.iter().position(|s| s.name == "web").unwrap();
    let row = r.graph.services.iter().find(|s| s.service == web).unwrap();
    let s = &r.summary;
    assert!(row.totals.shed > 0, "the tier sheds: {:?}", row.totals);
    assert!(row.peak_load_ratio_after.unwrap() > 1.5);
    assert_eq!(s.peak_load_ratio, row.peak_load_ratio);
    assert_eq!(s.peak_load_ratio_after, row.peak_load_ratio_after);
    assert_eq!(s.peak_effective_load_ratio, row.peak_effective_load_ratio);
    assert_eq!(s.capacity_per_s, row.capacity_per_s);
    // Bucket by bucket, the time series says what services_timeseries says.
    let rows = r.graph.rows.iter().filter(|x| x.service == web);
    for (t, g) in r.rows.iter().zip(rows) {
        assert_eq!(t.load_ratio, g.load_ratio, "at {} s", t.t_s);
    }
}
