//! Connection pools on a call, checked against arithmetic that decides
//! them: a constructed fleet of closed-loop clients that all ask one
//! connection at the same instant gives exact counts of waits, pool
//! timeouts, connects and the callee's work; connections handed out are
//! given back or still held (exactly); no request waits longer than the
//! acquire timeout; after a restart every pool reconnects at most its
//! size of connections; and the bundled reconnect storm shows the peak
//! load after the restart higher without jitter than with each jitter
//! strategy, by a margin measured across seeds.

use std::fs;

use crate::common::*;
use assert_cmd::Command;
use stormsim::engine::Nanos;
use stormsim::metrics::{Reason, Recorder, tabulate};
use stormsim::model::backoff::{Backoff, Jitter};
use stormsim::model::pool::PoolConfig;
use stormsim::model::server::{Effect, Incident};
use stormsim::model::service::ServiceDist;
use stormsim::model::{ClosedLoop, EdgeId, ModelConfig, World};

/// `clients` closed-loop clients that all send their first request at
/// 1 s (think time 1 s), through one pool of `size` connections (acquire
/// timeout 100 ms, connect 10 ms, one attempt, no attempt timeout) to a
/// roomy dependency that takes exactly 300 ms a request.
fn herd(clients: u32, size: u32, duration: Nanos) -> ModelConfig {
    let dep = dependency(100, ServiceDist::Constant(300 * MS), 0);
    let mut cfg = config(0.0, duration, vec![retrying_layer("client", 1, None)], dep);
    cfg.closed = Some(ClosedLoop {
        clients,
        think: ServiceDist::Constant(S),
    });
    cfg.topology = cfg.topology.with_policy(EdgeId::ENTRY, |p| {
        p.pool = Some(PoolConfig {
            size,
            acquire_timeout: 100 * MS,
            connect: 10 * MS,
        })
    });
    cfg
}

fn record(cfg: &ModelConfig, seed: u64) -> Recorder {
    World::new(cfg, seed).run().0
}

#[test]
fn a_herd_on_one_connection_counts_exactly() {
    let c = 7;
    // At 1 s all 7 ask; the first makes the connect (ready at 1.010 s)
    // and gets it; the other 6 wait and give up at 1.100 s. The first is
    // answered at 1.310 s and gives the connection back.
    let cfg = herd(c, 1, 1500 * MS);
    let rec = record(&cfg, 1);
    let p = rec.svc.pools[0];
    assert_eq!(p.connects, 1);
    assert_eq!(p.connect_failures, 0);
    assert_eq!(p.waits, c as u64);
    assert_eq!(p.timeouts, c as u64 - 1);
    assert_eq!((p.acquired, p.released, p.held_at_end), (1, 1, 0));
    assert_eq!(p.open_at_end, 1);
    // The connect is the callee's work too: one request of 300 ms and one
    // connect of 10 ms, and two arrivals.
    assert_eq!(rec.totals.busy_work_ns, (310 * MS) as u128);
    let (_, s) = tabulate(&rec, &World::new(&cfg, 1).run().1, &cfg.run_context());
    assert_eq!(s.dependency_attempts, 2);
    assert_eq!(s.succeeded, 1);
    assert_eq!(s.failed_by[Reason::PoolTimeout as usize], c as u64 - 1);

    // Run on to 2.25 s: the 6 that failed think until 2.100 s and ask
    // again; the connection is idle, one takes it at once (busy to
    // 2.400 s), the 5 others wait and give up at 2.200 s. The first
    // client asks again only at 2.310 s.
    let rec = record(&herd(c, 1, 2250 * MS), 1);
    let p = rec.svc.pools[0];
    assert_eq!(p.connects, 1);
    assert_eq!(p.waits, c as u64 + (c as u64 - 2));
    assert_eq!(p.timeouts, (c as u64 - 1) + (c as u64 - 2));
    assert_eq!((p.acquired, p.released, p.held_at_end), (2, 1, 1));

    // Two connections: two connects at 1 s, two served, 5 time out.
    let rec = record(&herd(c, 2, 1500 * MS), 1);
    let p = rec.svc.pools[0];
    assert_eq!((p.connects, p.timeouts, p.acquired), (2, c as u64 - 2, 2));
    assert_eq!(rec.totals.busy_work_ns, (2 * 310 * MS) as u128);
}

/// 20 caller instances with pools of `size` to a backend that is down
/// from 5 s to 10 s of a 20 s run, under Poisson load, retrying with an
/// exponential backoff and `jitter`.
fn restart(size: u32, jitter: Jitter, service: ServiceDist) -> ModelConfig {
    let mut dep = dependency(64, service, 200);
    dep.incidents.push(Incident {
        start: 5 * S,
        end: 10 * S,
        effect: Effect::Down,
        replica: None,
    });
    let mut layer = retrying_layer("client", 3, Some(500 * MS));
    layer.instances = 20;
    layer.retry.backoff = Backoff::exponential(50 * MS, 2.0, 2 * S);
    layer.retry.jitter = jitter;
    layer.pool = Some(PoolConfig {
        size,
        acquire_timeout: 200 * MS,
        connect: 20 * MS,
    });
    config(800.0, 20 * S, vec![layer], dep)
}

#[test]
fn pools_conserve_connections_across_a_crash() {
    for (seed, jitter) in [
        (1, Jitter::None),
        (2, Jitter::Full),
        (3, Jitter::Decorrelated),
    ] {
        let cfg = restart(4, jitter, ServiceDist::Constant(30 * MS));
        let rec = record(&cfg, seed);
        let p = rec.svc.pools[0];
        assert_eq!(p.acquired, p.released + p.held_at_end, "{jitter:?}");
        assert!(p.held_at_end <= 20 * 4);
        assert!(
            p.timeouts > 0 && p.dropped > 0 && p.connect_failures > 0,
            "{p:?}"
        );
    }
}

#[test]
fn no_request_waits_longer_than_the_acquire_timeout() {
    // 800/s of exactly 30 ms need 24 connections; 20 pools of one have
    // 20: requests wait, many in vain. With one attempt and no attempt
    // timeout a request's time is its wait (the connect included) plus
    // 30 ms, so none may take longer than 200 + 30 ms, and those that
    // waited in vain took exactly 200 ms.
    let dep = dependency(64, ServiceDist::Constant(30 * MS), 200);
    let mut layer = retrying_layer("client", 1, None);
    layer.instances = 20;
    layer.pool = Some(PoolConfig {
        size: 1,
        acquire_timeout: 200 * MS,
        connect: 20 * MS,
    });
    let cfg = config(800.0, 20 * S, vec![layer], dep);
    let (rec, info) = World::new(&cfg, 9).run();
    let (_, s) = tabulate(&rec, &info, &cfg.run_context());
    let timeouts = s.failed_by[Reason::PoolTimeout as usize];
    assert!(timeouts > 1000, "{timeouts}");
    assert_eq!(s.failed, timeouts);
    assert_eq!(rec.svc.pools[0].timeouts, timeouts);
    // Latencies are kept in microseconds, within 0.1%.
    let max = rec.latency.max() as f64;
    assert!(max <= 230e3 * 1.001, "max {max}");
    assert!(max >= 200e3 * 0.999, "max {max}");
    let p = rec.svc.pools[0];
    assert_eq!(p.acquired, p.released + p.held_at_end);
    assert_eq!(p.connects, 20);
}

#[test]
fn a_request_that_only_waits_fails_at_exactly_the_acquire_timeout() {
    // One connection, held 300 ms; the others give up after exactly
    // 100 ms: every failed request's latency is 100 ms.
    let cfg = herd(5, 1, 1500 * MS);
    let (rec, info) = World::new(&cfg, 3).run();
    let (_, s) = tabulate(&rec, &info, &cfg.run_context());
    assert_eq!(s.failed, 4);
    let lo = rec.latency.min() as f64;
    let hi = rec.latency.max() as f64;
    // Latencies are kept in microseconds, within 0.1%.
    assert!((lo - 100e3).abs() <= 100e3 * 1e-3, "min {lo}");
    // The success: 10 ms connect + 300 ms.
    assert!((hi - 310e3).abs() <= 310e3 * 1e-3, "max {hi}");
}

#[test]
fn reconnects_after_a_restart_are_bounded_by_the_pool_sizes() {
    for (size, jitter) in [(2, Jitter::None), (4, Jitter::Full), (8, Jitter::Equal)] {
        let cfg = restart(size, jitter, ServiceDist::Exponential { mean: 20 * MS });
        let rec = record(&cfg, 5);
        let p = rec.svc.pools[0];
        let slots = 20 * size as u64;
        // Each slot connects once before the crash and once after the
        // restart (the roomy backend never refuses a connect then): every
        // successful connect beyond that would be a leak.
        assert!(p.connects - p.connect_failures <= 2 * slots, "{p:?}");
        assert!(p.open_at_end <= slots);
        assert!(p.dropped <= slots, "{p:?}");
    }
}

#[test]
fn without_jitter_the_fleet_reconnects_in_phase_and_peaks_higher() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    Command::cargo_bin("stormsim")
        .unwrap()
        .args(["run", "--quiet", "--replicates", "6", "--out"])
        .arg(&out)
        .arg("scenarios/reconnect-storm.yaml")
        .assert()
        .success();
    let text = fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (v, peak) = (col("variant"), col("peak_load_ratio_after"));
    let peaks = |variant: &str| -> Vec<f64> {
        text.lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f[v] == variant)
            .map(|f| f[peak].parse().unwrap())
            .collect()
    };
    let none = peaks("no-jitter");
    assert_eq!(none.len(), 6);
    let (m0, se0) = mean_se(&none);
    let min0 = none.iter().cloned().fold(f64::MAX, f64::min);
    for jittered in ["full-jitter", "equal-jitter", "decorrelated"] {
        let xs = peaks(jittered);
        let (m, se) = mean_se(&xs);
        let max = xs.iter().cloned().fold(0.0, f64::max);
        // Every seed's peak without jitter is above every jittered one,
        // and the means differ by more than 6 standard errors.
        assert!(min0 > max, "{jittered}: {none:?} vs {xs:?}");
        let margin = 6.0 * (se0 * se0 + se * se).sqrt();
        assert!(
            m0 - m > margin,
            "{jittered}: {m0:.3} - {m:.3} <= {margin:.3}"
        );
    }
}
