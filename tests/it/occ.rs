//! The OCC contention workload of "Exponential Backoff And Jitter" (AWS
//! Architecture Blog, 2015; simulator `aws-samples/aws-arch-backoff-simulator`):
//! exact counts on tiny cases, the published conclusions
//! (docs/sources/experiments.md §1) and determinism.
//!
//! The statistical checks average 40 replicates per (N, policy) with fixed
//! seeds; their standard errors are around 1% of the means for calls and
//! 2-3% for completion times, far inside the margins asserted.

use std::collections::HashMap;
use std::sync::OnceLock;

use stormsim::engine::{NS_PER_MS, Nanos, Purpose, Stream, derive_seed};
use stormsim::model::occ::{OccConfig, OccPolicy, message_time, run_occ};

use OccPolicy::*;

const MS: Nanos = NS_PER_MS;
const REPLICATES: u64 = 40;
const SIZES: [u32; 3] = [50, 100, 150];

/// Every message takes exactly 10 ms.
fn constant(clients: u32, policy: OccPolicy) -> OccConfig {
    OccConfig {
        message_sd: 0,
        ..OccConfig::aws(clients, policy)
    }
}

// ---- exact cases -------------------------------------------------------

#[test]
fn one_client_makes_one_call_in_four_messages() {
    for seed in 0..50 {
        // Messages come from this stream, one draw per message, in order.
        let mut net = Stream::new(seed, Purpose::ServiceTimes, 0);
        let four: Nanos = (0..4)
            .map(|_| message_time(10 * MS, 2 * MS, &mut net))
            .sum();
        for policy in OccPolicy::ALL {
            let r = run_occ(&OccConfig::aws(1, policy), seed);
            assert_eq!(r.calls, 1);
            assert_eq!(r.completion, four);
            assert_eq!(r.events, 5, "send, read, version, write, outcome");
            assert_eq!(r.aborted, None);
        }
    }
}

#[test]
fn two_clients_in_lockstep_without_backoff() {
    // t = 0: both send reads; 10: both read version 0; 30: both writes
    // arrive, client 0's first (scheduled first): it wins, client 1 fails.
    // 40: client 1 learns it and reads again at once; 70: its write
    // succeeds; 80: done. Calls: 2 at 30 ms, 1 at 70 ms.
    let r = run_occ(&constant(2, NoBackoff), 9);
    assert_eq!(r.calls, 3);
    assert_eq!(r.completion, 80 * MS);
    assert_eq!(r.events, 15);
    assert_eq!(r.calls_per_bucket, vec![0, 0, 0, 2, 0, 0, 0, 1]);
}

#[test]
fn lockstep_clients_win_one_per_round() {
    // With constant messages every round has one winner, so N clients make
    // N + (N-1) + ... + 1 calls. Without backoff a round takes 40 ms.
    for n in [1u32, 2, 5, 10, 40] {
        let r = run_occ(&constant(n, NoBackoff), 1);
        let rounds = n as u64;
        assert_eq!(r.calls, rounds * (rounds + 1) / 2, "N = {n}");
        assert_eq!(r.completion, 40 * MS * rounds, "N = {n}");
        assert_eq!(r.events, 5 * r.calls);
    }
    // Exponential backoff without jitter keeps the losers in lockstep: the
    // same N(N+1)/2 calls, and round k+1 starts expo(k) = min(2 s, 5 ms·2^k)
    // later. N = 10: 400 ms + (10 + 20 + ... + 1280 + 2000) ms = 4950 ms.
    let r = run_occ(&constant(10, Exponential), 1);
    assert_eq!(r.calls, 55);
    assert_eq!(r.completion, 4_950 * MS);
    let r = run_occ(&constant(5, Exponential), 1);
    assert_eq!((r.calls, r.completion), (15, 350 * MS));
}

#[test]
fn every_client_finishes_and_the_histogram_adds_up() {
    for policy in OccPolicy::ALL {
        let r = run_occ(&OccConfig::aws(60, policy), 3);
        assert_eq!(r.aborted, None);
        assert_eq!(r.calls_per_bucket.iter().sum::<u64>(), r.calls);
        // One successful write per client; a completion bounds the last call.
        assert!(r.calls >= 60);
        assert!((r.calls_per_bucket.len() as u64 - 1) * 10 * MS <= r.completion);
        assert_eq!(r.events, 5 * r.calls);
    }
}

#[test]
fn the_guard_stops_a_run() {
    let cfg = OccConfig {
        max_events: 1_000,
        ..OccConfig::aws(100, NoBackoff)
    };
    let r = run_occ(&cfg, 1);
    assert!(matches!(
        r.aborted,
        Some(stormsim::metrics::Abort::MaxEvents { .. })
    ));
    assert_eq!(r.events, 1_000);
}

// ---- determinism -------------------------------------------------------

#[test]
fn same_seed_same_run_other_seed_other_run() {
    for policy in OccPolicy::ALL {
        let cfg = OccConfig::aws(40, policy);
        let a = run_occ(&cfg, 11);
        assert_eq!(a, run_occ(&cfg, 11), "{policy:?}");
        assert_ne!(a.digest, run_occ(&cfg, 12).digest, "{policy:?}");
    }
}

#[test]
fn pinned_run() {
    // The contract of byte stability: these change only if the engine, the
    // random streams or the model change on purpose. Update them then.
    let r = run_occ(&OccConfig::aws(20, FullJitter), 42);
    assert_eq!(
        (r.calls, r.completion, r.events, r.digest),
        PINNED,
        "pinned figures changed"
    );
}
const PINNED: (u64, Nanos, u64, u64) = (104, 1_027_952_758, 520, 6_872_216_955_851_611_840);

// ---- the published conclusions -----------------------------------------

/// Mean calls and mean completion time (ms) over the replicates, for every
/// (N, policy) of `SIZES` × `OccPolicy::ALL`. Seeds do not depend on the
/// policy (common random numbers). Computed once, printed once.
fn table() -> &'static HashMap<(u32, OccPolicy), (f64, f64)> {
    static TABLE: OnceLock<HashMap<(u32, OccPolicy), (f64, f64)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = HashMap::new();
        eprintln!("OCC, {REPLICATES} replicates: mean calls / mean completion (ms)");
        for n in SIZES {
            let mut line = format!("N = {n:3}:");
            for policy in OccPolicy::ALL {
                let (c, ms) = mean(n, policy);
                line += &format!("  {} {c:.1} / {ms:.0}", policy.name());
                t.insert((n, policy), (c, ms));
            }
            eprintln!("{line}");
        }
        t
    })
}

fn mean(clients: u32, policy: OccPolicy) -> (f64, f64) {
    let cfg = OccConfig::aws(clients, policy);
    let (mut calls, mut time) = (0u64, 0u64);
    for rep in 0..REPLICATES {
        let r = run_occ(&cfg, derive_seed(&[2015, clients as u64, rep]));
        assert_eq!(r.aborted, None);
        calls += r.calls;
        time += r.completion;
    }
    let reps = REPLICATES as f64;
    (calls as f64 / reps, time as f64 / reps / MS as f64)
}

fn calls(n: u32, p: OccPolicy) -> f64 {
    table()[&(n, p)].0
}

fn time_ms(n: u32, p: OccPolicy) -> f64 {
    table()[&(n, p)].1
}

#[test]
fn no_backoff_work_grows_like_n_squared() {
    // Linear growth would give ratios 2 and 1.5, N² gives 4 and 2.25.
    let (c50, c100, c150) = (
        calls(50, NoBackoff),
        calls(100, NoBackoff),
        calls(150, NoBackoff),
    );
    assert!(c100 / c50 > 3.0, "calls(100)/calls(50) = {}", c100 / c50);
    assert!(c150 / c100 > 1.9, "calls(150)/calls(100) = {}", c150 / c100);
    let slope = (c150 / c50).ln() / 3f64.ln();
    assert!((1.6..2.3).contains(&slope), "log-log slope {slope}");
    // And far more than one call per client.
    assert!(c150 > 20.0 * 150.0);
}

#[test]
fn jitter_does_the_least_work() {
    for n in SIZES {
        let (full, equal) = (calls(n, FullJitter), calls(n, EqualJitter));
        // Full and equal jitter: about the same work...
        assert!(
            (equal / full - 1.0).abs() < 0.1,
            "N = {n}: {full} vs {equal}"
        );
        // ...the least of all policies.
        for other in [NoBackoff, Exponential, Decorrelated] {
            let o = calls(n, other);
            assert!(full < o && equal < o, "N = {n}: {other:?} {o}");
        }
        // Far less than without backoff or without jitter.
        assert!(full.max(equal) < 0.7 * calls(n, Exponential), "N = {n}");
        assert!(full.max(equal) < 0.6 * calls(n, NoBackoff), "N = {n}");
    }
}

#[test]
fn exponential_without_jitter_helps_a_small_amount() {
    for n in SIZES {
        let (expo, none) = (calls(n, Exponential), calls(n, NoBackoff));
        assert!(expo < none, "N = {n}: {expo} vs {none}");
        // Still far more work than full jitter (1.9x to 2.7x here).
        assert!(expo > 1.5 * calls(n, FullJitter), "N = {n}");
    }
}

#[test]
fn exponential_without_jitter_takes_by_far_the_longest() {
    for n in SIZES {
        let expo = time_ms(n, Exponential);
        for other in [NoBackoff, FullJitter, EqualJitter, Decorrelated] {
            let t = time_ms(n, other);
            assert!(expo > 5.0 * t, "N = {n}: {expo} ms vs {other:?} {t} ms");
        }
    }
}

#[test]
fn equal_jitter_takes_longer_than_full_jitter() {
    for n in SIZES {
        let (full, equal) = (time_ms(n, FullJitter), time_ms(n, EqualJitter));
        assert!(equal > 1.15 * full, "N = {n}: {equal} ms vs {full} ms");
    }
}

#[test]
fn decorrelated_does_more_work_than_full_jitter_at_larger_n() {
    let ratio = |n| calls(n, Decorrelated) / calls(n, FullJitter);
    assert!(ratio(50) > 1.05, "N = 50: {}", ratio(50));
    assert!(ratio(100) > 1.15, "N = 100: {}", ratio(100));
    assert!(ratio(150) > 1.2, "N = 150: {}", ratio(150));
    // The gap widens with N.
    assert!(ratio(150) > ratio(50) + 0.1);
}

/// The post's whole sweep, N = 10, 30, ..., 190, for quoting:
/// `cargo test --release --test it occ:: -- --ignored --nocapture`.
#[test]
#[ignore]
fn sweep_10_to_190() {
    let start = std::time::Instant::now();
    let mut events = 0u64;
    for n in (10..=190).step_by(20) {
        let mut line = format!("N = {n:3}:");
        for policy in OccPolicy::ALL {
            let cfg = OccConfig::aws(n, policy);
            let (mut c, mut t) = (0u64, 0u64);
            for rep in 0..REPLICATES {
                let r = run_occ(&cfg, derive_seed(&[2015, n as u64, rep]));
                (c, t, events) = (c + r.calls, t + r.completion, events + r.events);
            }
            let reps = REPLICATES as f64;
            let (c, ms) = (c as f64 / reps, t as f64 / reps / MS as f64);
            line += &format!("  {} {c:.1} / {ms:.0}", policy.name());
        }
        eprintln!("{line}");
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{events} events in {secs:.2} s: {:.1} M events/s",
        events as f64 / secs / 1e6
    );
}
