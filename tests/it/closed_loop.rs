//! Closed-loop fleets: N clients, each waiting for its request and a think
//! time before the next.

use crate::common::*;
use stormsim::model::backoff::Backoff;
use stormsim::model::server::{Effect, Incident};
use stormsim::model::service::ServiceDist;
use stormsim::model::{CallPolicy, ClosedLoop, ModelConfig};

fn closed(
    clients: u32,
    think_mean: u64,
    concurrency: u32,
    layer: CallPolicy,
    secs: u64,
) -> ModelConfig {
    let dep = dependency(
        concurrency,
        ServiceDist::Exponential { mean: 10 * MS },
        100_000,
    );
    let mut cfg = config(0.0, secs * S, vec![layer], dep);
    cfg.closed = Some(ClosedLoop {
        clients,
        think: ServiceDist::Exponential { mean: think_mean },
    });
    cfg
}

#[test]
fn interactive_response_time_law_holds() {
    // X = N / (R + Z), at light and at heavy load (no retries).
    for (clients, think_ms, workers) in [(50, 1000, 4), (200, 500, 4), (400, 200, 8)] {
        let cfg = closed(
            clients,
            think_ms * MS,
            workers,
            CallPolicy::passthrough("client"),
            600,
        );
        let (_, s) = run(&cfg, 11);
        assert_conserved(&s);
        // Every client has at most one request open.
        assert!(s.in_flight_at_end <= clients as u64);
        let x = s.succeeded as f64 / 600.0;
        let r = s.latency_mean_ms.unwrap() / 1000.0;
        let z = think_ms as f64 / 1000.0;
        let law = clients as f64 / (r + z);
        assert!(
            (x / law - 1.0).abs() < 0.02,
            "N={clients}: X {x:.2}/s vs N/(R+Z) {law:.2}/s (R {r:.4} s)"
        );
    }
}

#[test]
fn backoff_slows_a_closed_fleet_but_not_an_open_one() {
    // During an outage a closed fleet's clients sit in backoff instead of
    // sending new requests; an open fleet keeps arriving regardless.
    let mut layer = retrying_layer("client", 4, Some(200 * MS));
    layer.retry.backoff = Backoff::Constant { base: 2 * S };
    let outage = Incident {
        start: 20 * S,
        end: 40 * S,
        effect: Effect::Down,
        replica: None,
    };
    let closed_cfg =
        closed(100, 500 * MS, 8, layer.clone(), 60).with_dependency(|d| d.incidents.push(outage));
    let (c_rows, _) = run(&closed_cfg, 12);
    let open_cfg = config(
        190.0,
        60 * S,
        vec![layer],
        dependency(8, ServiceDist::Exponential { mean: 10 * MS }, 100_000),
    )
    .with_dependency(|d| d.incidents.push(outage));
    let (o_rows, _) = run(&open_cfg, 12);
    let offered = |rows: &[stormsim::metrics::TimeRow], a: usize, b: usize| {
        rows[a..b].iter().map(|r| r.offered).sum::<u64>() as f64 / (b - a) as f64
    };
    let closed_drop = offered(&c_rows, 25, 40) / offered(&c_rows, 5, 20);
    let open_drop = offered(&o_rows, 25, 40) / offered(&o_rows, 5, 20);
    assert!(
        closed_drop < 0.3,
        "closed fleet offers {closed_drop} of its rate"
    );
    assert!(open_drop > 0.9, "open fleet offers {open_drop} of its rate");
}
