//! Engine speed, in events per second on one core.
//!
//! Run with `cargo bench --bench engine`. Target (README, "Speed", where
//! the current figures are): at least 10 M events/s on one core for the
//! M/M/c model with retries off. `benches/ratios.rs` measures the same
//! model against a minimal `BinaryHeap` event loop, side by side.
//!
//! Criterion reports time per iteration; with `Throughput::Elements` set
//! to the events of one run it also reports events/s.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use stormsim::engine::{NS_PER_MS, NS_PER_S};
use stormsim::metrics::RecoveryCriteria;
use stormsim::model::rate::RateProfile;
use stormsim::model::server::ServiceConfig;
use stormsim::model::service::ServiceDist;
use stormsim::model::{CallPolicy, Limits, ModelConfig, Topology, World};

fn mmc(c: u32, rho: f64, secs: u64) -> ModelConfig {
    let mean_ms = 10;
    let rate = rho * c as f64 * 1000.0 / mean_ms as f64;
    ModelConfig {
        duration: secs * NS_PER_S,
        bucket: NS_PER_S,
        arrivals: RateProfile::constant(rate),
        closed: None,
        consumers: None,
        deadline: None,
        topology: Topology::chain(
            vec![CallPolicy::passthrough("client")],
            ServiceConfig::leaf(
                "dependency",
                c,
                ServiceDist::Exponential {
                    mean: mean_ms * NS_PER_MS,
                },
                u32::MAX,
            ),
        ),
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

fn bench_model(c: &mut Criterion, name: &str, cfg: &ModelConfig) {
    let events = World::new(cfg, 1).run().1.events;
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(events));
    g.sample_size(10);
    g.bench_function("run", |b| b.iter(|| World::new(cfg, 1).run().1.events));
    g.finish();
}

fn engine(c: &mut Criterion) {
    bench_model(c, "mm1_rho0.9", &mmc(1, 0.9, 2_000));
    bench_model(c, "mm100_rho0.95", &mmc(100, 0.95, 20));
    let src =
        std::fs::read_to_string("scenarios/outage-recovery.yaml").expect("run from the crate root");
    let s = stormsim::scenario::load_str(&src, "scenarios/outage-recovery.yaml")
        .expect("bundled scenario loads");
    let variants = stormsim::scenario::expand_variants(&s).expect("bundled scenario expands");
    let cfg = stormsim::scenario::to_model(&variants[0].1);
    bench_model(c, "outage_recovery_no_jitter", &cfg);
}

criterion_group!(benches, engine);
criterion_main!(benches);
