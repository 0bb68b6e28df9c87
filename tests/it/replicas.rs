//! Replicas, load balancers and outlier ejection, checked against the
//! arithmetic that decides them: random balancing over three replicas with
//! one down and two attempts succeeds with probability 1 − (1/3)², and
//! always when a retry avoids the replica that failed; round robin spreads
//! exactly; the power of two choices sends a replica that holds nothing in
//! flight exactly the attempts where it is one of the two draws,
//! 1 − (2/3)², and least-requests nearly all of them; Envoy's outlier
//! detection ejects after exactly `consecutive_5xx` failures for base ×
//! times ejected (returning at the next sweep); every replica accounts for
//! every request it received; and the bundled scenario is byte-identical
//! with one thread or two.

use std::fs;

use crate::common::*;
use assert_cmd::Command;
use stormsim::engine::Nanos;
use stormsim::metrics::{Recorder, tabulate, tabulate_services};
use stormsim::model::balancer::Balancer;
use stormsim::model::outlier::OutlierConfig;
use stormsim::model::server::{Effect, Incident};
use stormsim::model::service::ServiceDist;
use stormsim::model::{ModelConfig, World};

/// `replicas` replicas of a fast, roomy backend behind `balancer`, called
/// by the clients with `attempts` attempts (no backoff); replica 0 down
/// for the whole run.
fn one_down(replicas: u32, balancer: Balancer, attempts: u32, secs: u64, rate: f64) -> ModelConfig {
    let mut backend = dependency(1000, ServiceDist::Constant(MS), 0);
    backend.replicas = replicas;
    backend.balancer = balancer;
    backend.incidents.push(Incident {
        start: 0,
        end: secs * S,
        effect: Effect::Down,
        replica: Some(0),
    });
    config(
        rate,
        secs * S,
        vec![retrying_layer("client", attempts, None)],
        backend,
    )
}

/// Like `one_down`, but replica 0 suffers `effect` and the clients give
/// each attempt `timeout`.
fn one_bad(effect: Effect, secs: u64, timeout: Nanos) -> ModelConfig {
    one_bad_behind(effect, secs, timeout, Balancer::RoundRobin, true)
}

/// Like `one_bad`, behind `balancer`, with or without outlier detection.
fn one_bad_behind(
    effect: Effect,
    secs: u64,
    timeout: Nanos,
    balancer: Balancer,
    outlier: bool,
) -> ModelConfig {
    let mut backend = dependency(1000, ServiceDist::Constant(MS), 0);
    backend.replicas = 3;
    backend.balancer = balancer;
    backend.incidents.push(Incident {
        start: 0,
        end: secs * S,
        effect,
        replica: Some(0),
    });
    let mut layer = retrying_layer("client", 1, Some(timeout));
    layer.outlier = outlier.then(OutlierConfig::default);
    config(300.0, secs * S, vec![layer], backend)
}

fn record(cfg: &ModelConfig, seed: u64) -> Recorder {
    World::new(cfg, seed).run().0
}

/// Binomial: `k` successes of `n` agree with `p` within 4 standard errors.
fn assert_binomial(k: u64, n: u64, p: f64, what: &str) {
    let phat = k as f64 / n as f64;
    let se = (p * (1.0 - p) / n as f64).sqrt();
    assert!(
        (phat - p).abs() < 4.0 * se,
        "{what}: {phat:.5} vs {p:.5} (4 se = {:.5})",
        4.0 * se
    );
}

#[test]
fn random_balancing_succeeds_with_one_minus_a_third_squared() {
    let cfg = one_down(3, Balancer::Random, 2, 20, 1000.0);
    let (_, s) = run(&cfg, 1);
    assert_conserved(&s);
    let n = s.succeeded + s.failed;
    assert!(n > 15_000, "{n}");
    assert_binomial(s.succeeded, n, 1.0 - 1.0 / 9.0, "success rate");

    // A retry that avoids the replica it tried always finds a good one.
    let cfg = cfg.clone_with_edge(|p| p.retry_other_replica = true);
    let (_, s) = run(&cfg, 1);
    assert_eq!(s.failed, 0);
    // Exactly the first attempts that met replica 0 were retried: a third.
    let rec = record(&cfg, 1);
    let down = rec.svc.replicas[0].counts;
    assert_eq!(down.attempts, down.refused);
    assert_binomial(
        down.refused,
        s.succeeded,
        1.0 / 3.0,
        "first attempts refused",
    );
}

#[test]
fn round_robin_spreads_exactly() {
    let mut cfg = one_down(3, Balancer::RoundRobin, 1, 10, 500.0);
    cfg.topology = cfg
        .topology
        .with_service(cfg.topology.focus(), |s| s.incidents.clear())
        .unwrap();
    let rec = record(&cfg, 3);
    let a: Vec<u64> = rec.svc.replicas.iter().map(|r| r.counts.attempts).collect();
    let total: u64 = a.iter().sum();
    assert!(total > 4000, "{total}");
    // Each request goes to the next replica: 0, 1, 2, 0, 1...
    let third = total / 3;
    let want: Vec<u64> = (0..3).map(|r| third + u64::from(r < total % 3)).collect();
    assert_eq!(a, want);
}

#[test]
fn p2c_prefers_the_idle_replica_exactly_when_it_draws_it() {
    // Healthy replicas hold every request for 10 s, so from the first
    // second on they always hold more than the refusing replica's zero.
    let mut cfg = one_down(3, Balancer::P2c, 1, 30, 300.0);
    cfg.topology = cfg
        .topology
        .with_service(cfg.topology.focus(), |s| {
            s.service = Some(ServiceDist::Constant(10 * S))
        })
        .unwrap();
    let rec = record(&cfg, 5);
    let r = &rec.svc.replicas;
    let total: u64 = r.iter().map(|x| x.counts.attempts).sum();
    // Drawn at least once in two: 1 − (2/3)² = 5/9 (ties, only in the
    // first instants, cannot move it past the margin). Picking one of the
    // two at random would give 1/3.
    assert_binomial(
        r[0].counts.attempts,
        total,
        5.0 / 9.0,
        "p2c to the idle replica",
    );

    // Least requests sends it everything (ties aside).
    let cfg = {
        let mut c = cfg.clone();
        c.topology = c
            .topology
            .with_service(c.topology.focus(), |s| s.balancer = Balancer::LeastRequests)
            .unwrap();
        c
    };
    let rec = record(&cfg, 5);
    let r = &rec.svc.replicas;
    let total: u64 = r.iter().map(|x| x.counts.attempts).sum();
    // A healthy replica wins only a tie at zero in flight: at most once
    // each per 10 s of holding.
    let healthy = r[1].counts.attempts + r[2].counts.attempts;
    assert!(
        healthy <= 6,
        "least requests sent {healthy} of {total} elsewhere"
    );
}

#[test]
fn least_loaded_balancers_count_what_the_callers_still_wait_for() {
    // Envoy's least-request balancers compare each host's active requests
    // as the caller sees them (sent, not yet answered nor given up on). A
    // replica that swallows every request holds about 300/s × 1/9 × 1 s
    // ≈ 33 of them until the 1 s timeouts, the healthy ones a fraction of
    // one (1 ms of work): p2c picks the blackhole only when both draws are
    // it, 1/9; least requests only when it ties at none in flight.
    for (balancer, want) in [(Balancer::P2c, 1.0 / 9.0), (Balancer::LeastRequests, 0.0)] {
        let cfg = one_bad_behind(Effect::Blackhole, 60, S, balancer, false);
        let rec = record(&cfg, 11);
        let r = &rec.svc.replicas;
        let total: u64 = r.iter().map(|x| x.counts.attempts).sum();
        let lost = r[0].counts.attempts;
        if want > 0.0 {
            assert_binomial(lost, total, want, "p2c into the blackhole");
        } else {
            // Each timeout leaves it with nothing in flight, tied with the
            // idle healthy ones, until one more is sent to it: about one
            // a second (a server-side count would make it the least
            // loaded always, and send it nearly everything).
            assert!(
                (30..=120).contains(&lost),
                "least requests sent {lost} of {total} into it"
            );
        }
    }
}

#[test]
fn ejection_after_exactly_consecutive_5xx_for_base_times_ejections() {
    let secs = 200;
    let cfg = one_down(3, Balancer::RoundRobin, 1, secs, 300.0)
        .clone_with_edge(|p| p.outlier = Some(OutlierConfig::default()));
    let (rec, info) = World::new(&cfg, 9).run();
    // Five refusals eject it at t1 ≈ 50 ms: back at the first sweep after
    // t1 + 30 s (40 s); five more eject it for 60 s (back at the sweep
    // after 100 s: 110 s); five more for 90 s (past the end of the run).
    let down = rec.svc.replicas[0];
    assert_eq!(down.ejections, 3);
    assert_eq!(down.counts.refused, 15);
    assert_eq!(down.counts.attempts, 15);
    let ctx = cfg.run_context();
    let (_, summary) = tabulate(&rec, &info, &ctx);
    assert_eq!(summary.failed, 15);
    let graph = tabulate_services(&rec, &ctx, &summary);
    let ejected_at_end = |t_end: u64| {
        graph
            .rows
            .iter()
            .find(|r| r.t_s as u64 + 1 == t_end)
            .map(|r| (r.ejected, r.replicas))
            .unwrap()
    };
    for (t, want) in [
        (1, 1),
        (39, 1),
        (40, 0),
        (41, 1),
        (109, 1),
        (110, 0),
        (111, 1),
        (secs, 1),
    ] {
        let (ejected, _) = ejected_at_end(t);
        assert_eq!(ejected, want, "ejected at {t} s");
    }
    // Replicas serving: two while it is ejected (it is down throughout).
    assert_eq!(ejected_at_end(40).1, 2);
    assert_eq!(ejected_at_end(41).1, 2);
}

#[test]
fn timeouts_count_as_5xx_toward_ejection() {
    // Envoy maps a local-origin timeout to 504 when it does not split
    // local from external errors (its default), so a replica that swallows
    // requests, or answers after the caller gave up, is ejected like one
    // that refuses them: after five timeouts, back at the sweep after
    // 30 s (40 s), out again for 60 s (110 s), then 90 s (to the end).
    let secs = 200;
    for (what, effect) in [
        ("blackholed", Effect::Blackhole),
        ("slow", Effect::Latency { add: S }),
    ] {
        let cfg = one_bad(effect, secs, 100 * MS);
        let (rec, info) = World::new(&cfg, 9).run();
        let bad = rec.svc.replicas[0];
        assert_eq!(bad.ejections, 3, "{what}");
        let ctx = cfg.run_context();
        let (_, summary) = tabulate(&rec, &info, &ctx);
        let graph = tabulate_services(&rec, &ctx, &summary);
        let ejected_at_end = |t_end: u64| {
            (graph.rows.iter())
                .find(|r| r.t_s as u64 + 1 == t_end)
                .map(|r| r.ejected)
                .unwrap()
        };
        for (t, want) in [(1, 1), (39, 1), (40, 0), (41, 1), (110, 0), (111, 1)] {
            assert_eq!(ejected_at_end(t), want, "{what}: ejected at {t} s");
        }
        // Each return costs the five timeouts that eject it and whatever
        // round robin sent it while they ran (100 ms at 100/s): about 15
        // requests per ejection, never fewer than 5.
        let sent = bad.counts.attempts;
        assert!((15..=3 * 30).contains(&sent), "{what}: {sent} sent to it");
    }
}

#[test]
fn each_caller_instance_keeps_its_own_outlier_detection() {
    // Ten caller instances (ten Envoys), each with its own view: each must
    // see five refusals of its own before it ejects the down replica, so
    // in a run shorter than the 30 s ejection it is ejected exactly ten
    // times, once by each, and each instance's first five requests to it
    // fail (one attempt, no retry): 50 refusals in all.
    let cfg = one_down(3, Balancer::RoundRobin, 1, 20, 500.0).clone_with_edge(|p| {
        p.outlier = Some(OutlierConfig::default());
        p.instances = 10;
    });
    let rec = record(&cfg, 3);
    let down = rec.svc.replicas[0];
    assert_eq!(down.ejections, 10);
    assert_eq!(down.counts.refused, 50);
    assert_eq!(
        rec.svc.replicas[1].ejections + rec.svc.replicas[2].ejections,
        0
    );
}

#[test]
fn every_replica_accounts_for_every_request() {
    let secs = 30;
    let mut backend = dependency(2, ServiceDist::Exponential { mean: 10 * MS }, 5);
    backend.replicas = 3;
    backend.balancer = Balancer::P2c;
    backend.incidents = vec![
        Incident {
            start: 5 * S,
            end: 12 * S,
            effect: Effect::Down,
            replica: Some(1),
        },
        Incident {
            start: 10 * S,
            end: 20 * S,
            effect: Effect::Errors {
                rate: 0.5,
                status: 503,
            },
            replica: Some(2),
        },
    ];
    let mut layer = retrying_layer("client", 3, Some(30 * MS));
    layer.cancel_propagates = true;
    let cfg = config(550.0, secs * S, vec![layer], backend);
    let (rec, info) = World::new(&cfg, 4).run();
    let ctx = cfg.run_context();
    let (_, summary) = tabulate(&rec, &info, &ctx);
    assert_conserved(&summary);
    let mut sum = [0u64; 10];
    for (r, x) in rec.svc.replicas.iter().enumerate() {
        let c = x.counts;
        let ended = c.refused
            + c.vanished
            + c.errors
            + c.shed
            + c.queue_timeouts
            + c.served
            + c.cancelled
            + c.reset
            + x.unserved_at_end;
        assert_eq!(c.attempts, ended, "replica {r}: {x:?}");
        assert!(c.attempts > 1000, "replica {r}: {x:?}");
        assert!(x.peak_inside <= 2 + 5, "replica {r}: {x:?}");
        for (k, v) in [
            c.attempts,
            c.refused,
            c.vanished,
            c.errors,
            c.shed,
            c.queue_timeouts,
            c.served,
            c.cancelled,
            c.reset,
            x.unserved_at_end,
        ]
        .into_iter()
        .enumerate()
        {
            sum[k] += v;
        }
    }
    // The replicas add up to their service.
    let t = rec.svc.counts.iter().fold([0u64; 9], |mut a, c| {
        for (k, v) in [
            c.attempts,
            c.refused,
            c.vanished,
            c.errors,
            c.shed,
            c.queue_timeouts,
            c.served,
            c.cancelled,
            c.reset,
        ]
        .into_iter()
        .enumerate()
        {
            a[k] += v;
        }
        a
    });
    assert_eq!(&sum[..9], &t[..]);
    assert_eq!(sum[9], rec.svc.unserved_at_end[0]);
    // Each incident touched only its replica.
    let r = &rec.svc.replicas;
    assert!(r[1].counts.refused > 0 && r[1].counts.reset > 0);
    assert_eq!(r[0].counts.refused + r[2].counts.refused, 0);
    assert!(r[2].counts.errors > 0);
    assert_eq!(r[0].counts.errors + r[1].counts.errors, 0);
}

#[test]
fn the_bundled_scenario_is_byte_identical_with_one_thread_or_two() {
    let dir = std::env::temp_dir().join(format!("stormsim-replicas-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let out = |threads: &str| {
        let o = dir.join(threads);
        Command::cargo_bin("stormsim")
            .unwrap()
            .env("RAYON_NUM_THREADS", threads)
            .args(["run", "scenarios/one-bad-replica.yaml", "--quiet", "--out"])
            .arg(&o)
            .assert()
            .success();
        o
    };
    let (a, b) = (out("1"), out("2"));
    for table in [
        "summary.csv",
        "timeseries.csv",
        "services.csv",
        "services_timeseries.csv",
        "calls.csv",
        "replicas.csv",
    ] {
        let x = fs::read(a.join(table)).unwrap();
        assert!(!x.is_empty(), "{table}");
        assert!(x == fs::read(b.join(table)).unwrap(), "{table} differs");
    }
    // replicas.csv: the backend's four replicas add up to its services.csv
    // row, counter by counter, in every run; the bad one took the errors.
    let rows = |t: &str| -> Vec<Vec<String>> {
        let text = fs::read_to_string(a.join(t)).unwrap();
        text.lines()
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect()
    };
    let (reps, svcs) = (rows("replicas.csv"), rows("services.csv"));
    let counters = ["attempts", "served", "refused", "shed", "errors", "reset"];
    let col = |h: &[String], c: &str| h.iter().position(|x| x == c).unwrap();
    let mut checked = 0;
    for s in svcs.iter().skip(1).filter(|r| r[2] == "backend") {
        let mine: Vec<&Vec<String>> = (reps.iter().skip(1))
            .filter(|r| r[0] == s[0] && r[1] == s[1] && r[2] == "backend")
            .collect();
        assert_eq!(mine.len(), 4);
        for c in counters {
            let total: u64 = mine
                .iter()
                .map(|r| r[col(&reps[0], c)].parse::<u64>().unwrap())
                .sum();
            assert_eq!(total.to_string(), s[col(&svcs[0], c)], "{} {c}", s[0]);
        }
        let errors = |r: &Vec<String>| r[col(&reps[0], "errors")].parse::<u64>().unwrap();
        assert!(errors(mine[3]) > 0 && mine[..3].iter().all(|r| errors(r) == 0));
        checked += 1;
    }
    assert_eq!(checked, 6);
    let _ = fs::remove_dir_all(&dir);
}

trait EdgeChange {
    fn clone_with_edge(&self, change: impl FnOnce(&mut stormsim::model::CallPolicy)) -> Self;
}

impl EdgeChange for ModelConfig {
    fn clone_with_edge(&self, change: impl FnOnce(&mut stormsim::model::CallPolicy)) -> Self {
        let mut c = self.clone();
        c.topology = c
            .topology
            .with_policy(stormsim::model::EdgeId::ENTRY, change);
        c
    }
}
