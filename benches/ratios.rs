//! Speed against a yardstick, as ratios measured side by side in one run.
//!
//! Run with `cargo bench --bench ratios`. Two groups, each followed by one
//! printed line with the ratio (median of alternating pairs, so a drift of
//! the machine's speed during the run cancels out):
//!
//! - `mm16_rho0.9`: M/M/16 at ρ = 0.9 with retries off, in customers per
//!   second, simulated by stormsim and by a minimal `BinaryHeap` event loop
//!   of the same model (integer-nanosecond times, (time, sequence) keys,
//!   arrivals and completions, the same random generator and streams).
//!   Goal (README, "Speed"): stormsim at least 0.6 × the bare loop.
//! - `timers`: the same calm service behind a layer that retries timeouts,
//!   with a 30 s per-attempt timeout and with a 100 ms one, in events per
//!   second. Almost every timeout is cancelled (the attempt answers long
//!   before it); goal: 30 s at least 0.8 × 100 ms.
//! - `million_instances`: `docs/examples/million-instances.yaml` (a layer
//!   whose every instance has its own token bucket, adaptive throttle and
//!   count breaker) with 1 000 000 instances and with 1, in events per
//!   second; goal: a million at least 0.5 × one.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use stormsim::engine::time::from_f64_ns;
use stormsim::engine::{NS_PER_MS, NS_PER_S, Nanos, Purpose, Stream};
use stormsim::metrics::{RecoveryCriteria, tabulate};
use stormsim::model::backoff::{Backoff, Jitter};
use stormsim::model::rate::RateProfile;
use stormsim::model::retry::{RetryOn, RetryPolicy};
use stormsim::model::server::ServiceConfig;
use stormsim::model::service::ServiceDist;
use stormsim::model::{CallPolicy, Limits, ModelConfig, Topology, World};

const SERVERS: u32 = 16;
const RHO: f64 = 0.9;
const MEAN: Nanos = 10 * NS_PER_MS;
/// Simulated seconds of one M/M/16 run (about 290 000 customers).
const MM16_SECS: u64 = 200;
/// Simulated seconds of one timer run.
const TIMER_SECS: u64 = 100;
const SEED: u64 = 7;

fn lambda() -> f64 {
    RHO * SERVERS as f64 * NS_PER_S as f64 / MEAN as f64
}

/// The minimal event loop: a `BinaryHeap` of ((time, sequence), kind), a
/// FIFO queue of waiting customers, `SERVERS` workers. Returns the
/// customers that arrived (and a checksum, so nothing is optimised away).
fn bare_mmc(secs: u64, seed: u64) -> (u64, u64) {
    const ARRIVAL: u8 = 0;
    const DONE: u8 = 1;
    let end = secs * NS_PER_S;
    let per_ns = lambda() / NS_PER_S as f64;
    let mut arrivals = Stream::new(seed, Purpose::Arrivals, 0);
    let mut service = Stream::new(seed, Purpose::ServiceTimes, 0);
    let mut heap: BinaryHeap<Reverse<(Nanos, u64, u8)>> = BinaryHeap::with_capacity(64);
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<_>, t: Nanos, kind: u8| {
        heap.push(Reverse((t, seq, kind)));
        seq += 1;
    };
    let mut waiting: VecDeque<Nanos> = VecDeque::new();
    let (mut busy, mut customers, mut wait_sum) = (0u32, 0u64, 0u64);
    let first = (arrivals.exp1() / per_ns).ceil() as Nanos;
    push(&mut heap, first, ARRIVAL);
    while let Some(Reverse((now, _, kind))) = heap.pop() {
        if now >= end {
            break;
        }
        if kind == ARRIVAL {
            customers += 1;
            let next = now + (arrivals.exp1() / per_ns).ceil() as Nanos;
            if next < end {
                push(&mut heap, next, ARRIVAL);
            }
            if busy < SERVERS {
                busy += 1;
                let s = from_f64_ns(MEAN as f64 * service.exp1()).max(1);
                push(&mut heap, now + s, DONE);
            } else {
                waiting.push_back(now);
            }
        } else if let Some(arrived) = waiting.pop_front() {
            wait_sum += now - arrived;
            let s = from_f64_ns(MEAN as f64 * service.exp1()).max(1);
            push(&mut heap, now + s, DONE);
        } else {
            busy -= 1;
        }
    }
    (customers, wait_sum)
}

fn dependency() -> ServiceConfig {
    ServiceConfig::leaf(
        "dependency",
        SERVERS,
        ServiceDist::Exponential { mean: MEAN },
        u32::MAX,
    )
}

fn model(secs: u64, layer: CallPolicy) -> ModelConfig {
    ModelConfig {
        duration: secs * NS_PER_S,
        bucket: NS_PER_S,
        arrivals: RateProfile::constant(lambda()),
        closed: None,
        consumers: None,
        deadline: None,
        topology: Topology::chain(vec![layer], dependency()),
        recovery: RecoveryCriteria {
            trigger_start: None,
            trigger_end: None,
            threshold: 0.9,
            window: 5 * NS_PER_S,
        },
        limits: Limits {
            max_events: u64::MAX,
            max_in_flight: u64::MAX,
        },
        classes: Default::default(),
    }
}

/// stormsim's M/M/16: one pass-through layer, no timeouts, no retries.
fn mm16() -> ModelConfig {
    model(MM16_SECS, CallPolicy::passthrough("client"))
}

/// The calm M/M/16 behind a layer with a per-attempt `timeout` that
/// retries timeouts (up to 3 attempts, 100 ms exponential backoff).
fn timed(timeout: Nanos) -> ModelConfig {
    let mut retry_on = RetryOn::nothing().with_status(503);
    retry_on.timeout = true;
    retry_on.connection = true;
    let layer = CallPolicy {
        timeout: Some(timeout),
        retry: RetryPolicy {
            max_attempts: 3,
            backoff: Backoff::exponential(100 * NS_PER_MS, 2.0, NS_PER_S),
            jitter: Jitter::Full,
            retry_on,
            ..RetryPolicy::default()
        },
        ..CallPolicy::passthrough("api")
    };
    model(TIMER_SECS, layer)
}

/// `docs/examples/million-instances.yaml` with its layer's `instances`
/// set to `instances`.
fn million(instances: u32) -> ModelConfig {
    let path = "docs/examples/million-instances.yaml";
    let src = std::fs::read_to_string(path).expect("run from the crate root");
    let src = src.replace("instances: 1000000", &format!("instances: {instances}"));
    let s = stormsim::scenario::load_str(&src, path).expect("the bundled example loads");
    let variants = stormsim::scenario::expand_variants(&s).expect("the bundled example expands");
    stormsim::scenario::to_model(&variants[0].1)
}

/// One stormsim run: its events.
fn run_sim(cfg: &ModelConfig) -> u64 {
    World::new(cfg, SEED).run().1.events
}

/// The customers (logical requests) of one stormsim run.
fn customers(cfg: &ModelConfig) -> u64 {
    let (rec, info) = World::new(cfg, SEED).run();
    tabulate(&rec, &info, &cfg.run_context()).1.logical_requests
}

/// Median of `pairs` alternating measurements of `a` and `b` (each timed
/// over `reps` calls): (a per second, b per second, median of a/b).
fn paired(
    pairs: usize,
    reps: u32,
    a: (u64, &dyn Fn() -> u64),
    b: (u64, &dyn Fn() -> u64),
) -> (f64, f64, f64) {
    let time = |f: &dyn Fn() -> u64| {
        let t = Instant::now();
        for _ in 0..reps {
            black_box(f());
        }
        t.elapsed()
    };
    let rate = |n: u64, d: Duration| n as f64 * reps as f64 / d.as_secs_f64();
    let (mut ra, mut rb, mut ratio) = (vec![], vec![], vec![]);
    for _ in 0..pairs {
        let x = rate(a.0, time(a.1));
        let y = rate(b.0, time(b.1));
        ra.push(x);
        rb.push(y);
        ratio.push(x / y);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut ra), median(&mut rb), median(&mut ratio))
}

fn mm16_group(c: &mut Criterion) {
    let cfg = mm16();
    let customers = customers(&cfg);
    let (bare_customers, _) = bare_mmc(MM16_SECS, SEED);
    let mut g = c.benchmark_group("mm16_rho0.9");
    g.sample_size(10);
    g.throughput(Throughput::Elements(bare_customers));
    g.bench_function("bare_binaryheap_loop", |b| {
        b.iter(|| bare_mmc(MM16_SECS, SEED))
    });
    g.throughput(Throughput::Elements(customers));
    g.bench_function("stormsim", |b| b.iter(|| run_sim(&cfg)));
    g.finish();
}

fn timers_group(c: &mut Criterion) {
    let mut g = c.benchmark_group("timers");
    g.sample_size(10);
    for (name, timeout) in [
        ("timeout_30s", 30 * NS_PER_S),
        ("timeout_100ms", 100 * NS_PER_MS),
    ] {
        let cfg = timed(timeout);
        let events = run_sim(&cfg);
        g.throughput(Throughput::Elements(events));
        g.bench_function(name, |b| b.iter(|| run_sim(&cfg)));
    }
    g.finish();
}

fn million_group(c: &mut Criterion) {
    let mut g = c.benchmark_group("million_instances");
    g.sample_size(10);
    for (name, instances) in [("instances_1000000", 1_000_000), ("instances_1", 1)] {
        let cfg = million(instances);
        g.throughput(Throughput::Elements(run_sim(&cfg)));
        g.bench_function(name, |b| b.iter(|| run_sim(&cfg)));
    }
    g.finish();
}

/// The ratio lines, measured in alternating pairs.
fn print_ratios() {
    let cfg = mm16();
    let customers = customers(&cfg);
    let (bare_customers, _) = bare_mmc(MM16_SECS, SEED);
    let (s, b, r) = paired(
        9,
        3,
        (customers, &|| run_sim(&cfg)),
        (bare_customers, &|| bare_mmc(MM16_SECS, SEED).0),
    );
    println!(
        "ratio mm16_rho0.9: stormsim {:.2} M customers/s, bare BinaryHeap loop {:.2} M customers/s: {r:.2}x (goal >= 0.6x)",
        s / 1e6,
        b / 1e6
    );
    let (long, short) = (timed(30 * NS_PER_S), timed(100 * NS_PER_MS));
    let (long_events, short_events) = (run_sim(&long), run_sim(&short));
    let (l, s, r) = paired(
        9,
        3,
        (long_events, &|| run_sim(&long)),
        (short_events, &|| run_sim(&short)),
    );
    println!(
        "ratio timers: 30 s timeouts {:.2} M events/s, 100 ms timeouts {:.2} M events/s: {r:.2}x (goal >= 0.8x)",
        l / 1e6,
        s / 1e6
    );
    let (many, one) = (million(1_000_000), million(1));
    let (many_events, one_events) = (run_sim(&many), run_sim(&one));
    let (m, o, r) = paired(
        9,
        1,
        (many_events, &|| run_sim(&many)),
        (one_events, &|| run_sim(&one)),
    );
    println!(
        "ratio million_instances: 1 000 000 instances {:.2} M events/s, 1 instance {:.2} M events/s: {r:.2}x (goal >= 0.5x)",
        m / 1e6,
        o / 1e6
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    mm16_group(&mut c);
    timers_group(&mut c);
    million_group(&mut c);
    // Only when benchmarking (`cargo bench`), not in test mode.
    if std::env::args().any(|a| a == "--bench") {
        print_ratios();
    }
    c.final_summary();
}
