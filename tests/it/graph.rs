//! The services graph, built directly as a topology: exact arithmetic of
//! retries along paths, conservation per service and per call, Little's
//! law per service, a tandem of M/M/c services against Jackson-network
//! theory, and a slow database exhausting the thread pool above it.

use crate::common::*;
use stormsim::invariants;
use stormsim::metrics::{GraphTables, Summary, TimeRow, tabulate, tabulate_services};
use stormsim::model::backoff::{Backoff, Jitter};
use stormsim::model::server::{Effect, Incident, ServiceConfig};
use stormsim::model::service::ServiceDist;
use stormsim::model::{CallPolicy, EdgeConfig, EdgeId, ModelConfig, ServiceId, Topology, World};

/// A call edge from `caller` (None: the clients) to `callee`.
fn edge(name: &str, caller: Option<u16>, callee: u16, attempts: u32) -> EdgeConfig {
    let mut policy = retrying_layer(name, attempts, None);
    policy.retry.backoff = Backoff::Constant { base: 0 };
    policy.retry.jitter = Jitter::None;
    EdgeConfig {
        caller: caller.map(ServiceId),
        callee: ServiceId(callee),
        policy,
        parallel: false,
        optional: false,
    }
}

fn proxy(name: &str, calls: &[u16]) -> ServiceConfig {
    let mut s = ServiceConfig::proxy(name, EdgeId(calls[0]));
    s.calls = calls.iter().map(|&e| EdgeId(e)).collect();
    s
}

fn model(
    rate: f64,
    secs: u64,
    services: Vec<ServiceConfig>,
    edges: Vec<EdgeConfig>,
    focus: u16,
) -> ModelConfig {
    let mut cfg = config(
        rate,
        secs * S,
        vec![CallPolicy::passthrough("client")],
        dependency(1, ServiceDist::Constant(MS), 1),
    );
    cfg.topology = Topology::new(services, edges, ServiceId(focus)).unwrap();
    cfg
}

struct Run {
    rows: Vec<TimeRow>,
    summary: Summary,
    graph: GraphTables,
}

fn run_graph(cfg: &ModelConfig, seed: u64) -> Run {
    let (rec, info) = World::new(cfg, seed).run();
    let ctx = cfg.run_context();
    let (rows, summary) = tabulate(&rec, &info, &ctx);
    let graph = tabulate_services(&rec, &ctx, &summary);
    let broken = invariants::violations(cfg, &summary, &rows, &graph);
    assert!(broken.is_empty(), "invariants: {broken:?}");
    Run {
        rows,
        summary,
        graph,
    }
}

/// Runs `cfg` once per seed on all cores, results in seed order.
fn run_seeds_graph(cfg: &ModelConfig, seeds: &[u64]) -> Vec<Run> {
    par_seeds(seeds, |seed| run_graph(cfg, seed))
}

fn service<'a>(
    r: &'a Run,
    cfg: &ModelConfig,
    name: &str,
) -> &'a stormsim::metrics::services::ServiceSummary {
    let id = cfg.topology.service_id(name).unwrap().index();
    r.graph.services.iter().find(|s| s.service == id).unwrap()
}

fn down_all_run(secs: u64) -> Incident {
    Incident {
        start: 0,
        end: secs * S,
        effect: Effect::Down,
        replica: None,
    }
}

/// clients → gateway → {orders, inventory} → postgres, postgres down for
/// the whole run. Services: 0 gateway, 1 orders, 2 inventory, 3 postgres.
fn diamond(parallel: bool) -> ModelConfig {
    let mut postgres = dependency(8, ServiceDist::Constant(MS), 100);
    postgres.name = "postgres".into();
    postgres.incidents.push(down_all_run(20));
    let mut inventory_call = edge("gateway.inventory", Some(0), 2, 2);
    inventory_call.parallel = parallel;
    model(
        50.0,
        20,
        vec![
            proxy("gateway", &[1, 2]),
            proxy("orders", &[3]),
            proxy("inventory", &[4]),
            postgres,
        ],
        vec![
            edge("clients.gateway", None, 0, 1),
            edge("gateway.orders", Some(0), 1, 3),
            inventory_call,
            edge("orders.postgres", Some(1), 3, 3),
            edge("inventory.postgres", Some(2), 3, 2),
        ],
        3,
    )
}

#[test]
fn a_diamond_over_a_dead_database_multiplies_along_each_path_and_adds_where_they_meet() {
    // Parallel calls: both branches run to the end of their retries (the
    // one that fails second is orphaned, and keeps retrying).
    let cfg = diamond(true);
    let r = run_graph(&cfg, 1);
    let n = r.summary.logical_requests;
    assert!(n > 800);
    assert_eq!(r.summary.failed, n, "nothing succeeds");
    let pg = service(&r, &cfg, "postgres");
    assert_eq!(
        pg.totals.attempts,
        (3 * 3 + 2 * 2) * n,
        "3×3 + 2×2 per request"
    );
    assert_eq!(pg.totals.refused, pg.totals.attempts);
    assert_eq!(service(&r, &cfg, "orders").totals.attempts, 3 * n);
    assert_eq!(service(&r, &cfg, "inventory").totals.attempts, 2 * n);
    assert_eq!(
        r.summary.dependency_attempts,
        13 * n,
        "postgres is the focus"
    );
    // Sequential calls: a failed first call fails the request, and the
    // second is never made.
    let cfg = diamond(false);
    let r = run_graph(&cfg, 1);
    let n = r.summary.logical_requests;
    assert_eq!(service(&r, &cfg, "postgres").totals.attempts, 9 * n);
    assert_eq!(service(&r, &cfg, "inventory").totals.attempts, 0);
    let calls = &r.graph.edges;
    assert_eq!((calls[1].calls, calls[1].attempts), (n, 3 * n));
    assert_eq!(calls[3].attempts, 9 * n);
    assert_eq!(calls[1].failed, n);
}

#[test]
fn an_optional_call_does_not_fail_the_request() {
    let mut cfg = diamond(false);
    let mut edges = cfg.topology.edges().to_vec();
    edges[1].optional = true; // orders
    let services = cfg.topology.services().to_vec();
    cfg.topology = Topology::new(services, edges, ServiceId(3)).unwrap();
    let r = run_graph(&cfg, 2);
    let n = r.summary.logical_requests;
    // orders fails (optional), inventory is still called, and fails.
    assert_eq!(service(&r, &cfg, "postgres").totals.attempts, (9 + 4) * n);
    assert_eq!(r.summary.failed, n);
}

/// clients → api (8 workers, 2 ms own work, holds its worker) → db (4
/// workers, exponential 5 ms), calm: ρ_db = 0.5.
fn two_tier(hold: bool, db_latency: Option<(u64, u64, u64)>) -> ModelConfig {
    let mut api = dependency(8, ServiceDist::Constant(2 * MS), 10_000);
    api.name = "api".into();
    api.hold_worker = hold;
    api.calls = vec![EdgeId(1)];
    let mut db = dependency(4, ServiceDist::Exponential { mean: 5 * MS }, 10_000);
    db.name = "db".into();
    if let Some((start, end, add_ms)) = db_latency {
        db.incidents.push(Incident {
            start: start * S,
            end: end * S,
            effect: Effect::Latency { add: add_ms * MS },
            replica: None,
        });
    }
    model(
        400.0,
        60,
        vec![api, db],
        vec![
            edge("clients.api", None, 0, 1),
            edge("api.db", Some(0), 1, 1),
        ],
        1,
    )
}

#[test]
fn every_service_conserves_its_requests_and_obeys_littles_law() {
    let cfg = two_tier(true, Some((20, 25, 40)));
    let r = run_graph(&cfg, 3);
    for name in ["api", "db"] {
        let s = service(&r, &cfg, name);
        // Little's law on the sample path: mean inside = arrival rate ×
        // mean time inside; only the requests inside at the end are on one
        // side and not the other.
        let lambda = s.totals.attempts as f64 / 60.0;
        let w = s.sojourn_mean_ms.unwrap() / 1000.0;
        let l = s.in_flight_mean;
        assert!(
            (l / (lambda * w) - 1.0).abs() < 0.002,
            "{name}: L = {l} vs λW = {}",
            lambda * w
        );
    }
    // Every request that reached api made exactly one call to db.
    let api = service(&r, &cfg, "api");
    assert_eq!(r.graph.edges[1].calls, api.totals.served);
}

#[test]
fn a_slow_database_exhausts_the_thread_pool_above_it() {
    // A 40 ms latency injected on db's responses from t = 20 s to 40 s:
    // every api request holds its worker ≥ 42 ms, and 400/s × 42 ms = 16.8
    // workers are needed where api has 8: api saturates while db's workers
    // stay mostly idle (the latency is on the way back, not on a worker).
    let cfg = two_tier(true, Some((20, 40, 40)));
    let r = run_graph(&cfg, 4);
    let util = |name: &str, from: u64, to: u64| {
        let id = cfg.topology.service_id(name).unwrap().index();
        let rows: Vec<f64> = r
            .graph
            .rows
            .iter()
            .filter(|row| row.service == id && row.t_s >= from as f64 && row.t_s < to as f64)
            .map(|row| row.utilization.unwrap())
            .collect();
        rows.iter().sum::<f64>() / rows.len() as f64
    };
    assert!(
        util("api", 25, 40) > 0.99,
        "api saturated: {}",
        util("api", 25, 40)
    );
    assert!(
        util("db", 25, 40) < 0.3,
        "db mostly idle: {}",
        util("db", 25, 40)
    );
    // Before: 400/s × (2 ms + db's ~5.7 ms) ≈ 3.1 of 8 workers.
    assert!(
        util("api", 5, 20) < 0.5,
        "api calm before: {}",
        util("api", 5, 20)
    );
    // Its queue grows while db is slow.
    let api = cfg.topology.service_id("api").unwrap().index();
    let peak_queue = r
        .graph
        .rows
        .iter()
        .filter(|row| row.service == api)
        .map(|row| row.queue_depth)
        .fold(0.0, f64::max);
    assert!(peak_queue > 1000.0, "{peak_queue}");
    // Without holding the worker (async calls), api never saturates.
    let cfg = two_tier(false, Some((20, 40, 40)));
    let r2 = run_graph(&cfg, 4);
    let id = cfg.topology.service_id("api").unwrap().index();
    let max_util = r2
        .graph
        .rows
        .iter()
        .filter(|row| row.service == id)
        .map(|row| row.utilization.unwrap())
        .fold(0.0, f64::max);
    assert!(max_util < 0.3, "{max_util}");
    assert!(r.rows.len() == 60);
}

/// The capacity of a thread-per-request tier is its workers ÷ the time a
/// request holds one, own work and calls together (Little's law), measured
/// from the run; an async tier's is its workers ÷ its own work.
#[test]
fn a_thread_per_request_tier_is_judged_by_how_long_it_holds_a_worker() {
    // api: 8 workers, 2 ms of own work, then one call to db: 5 ms exactly,
    // on 1000 workers (never a queue). A worker is held exactly 7 ms.
    let with_db = |hold: bool, slow: Option<(u64, u64, u64)>| {
        let mut cfg = two_tier(hold, slow);
        let db = cfg.topology.service_id("db").unwrap();
        let mut services = cfg.topology.services().to_vec();
        services[db.index()].service = Some(ServiceDist::Constant(5 * MS));
        services[db.index()].concurrency = Some(1000);
        let edges = cfg.topology.edges().to_vec();
        cfg.topology = Topology::new(services, edges, db).unwrap();
        cfg
    };
    let cfg = with_db(true, None);
    let r = run_graph(&cfg, 5);
    let api = service(&r, &cfg, "api");
    let held = 0.007;
    assert!(
        (api.capacity_per_s.unwrap() - 8.0 / held).abs() < 1e-6,
        "{:?}",
        api.capacity_per_s
    );
    // Every bucket: attempts per second × 7 ms ÷ 8 workers, or the share
    // of busy workers if higher.
    let id = cfg.topology.service_id("api").unwrap().index();
    for row in r.graph.rows.iter().filter(|row| row.service == id) {
        let offered = row.counts.attempts as f64 * held / 8.0;
        let want = offered.max(row.utilization.unwrap());
        assert!(
            (row.load_ratio.unwrap() - want).abs() < 1e-9,
            "t = {}: {:?} vs {want}",
            row.t_s,
            row.load_ratio
        );
    }
    // 400/s × 7 ms = 2.8 of 8 workers: about 0.35, never near 1.
    let peak = api.peak_load_ratio.unwrap();
    assert!((0.3..0.5).contains(&peak), "{peak}");
    // The same tier freeing its worker after its own work: 8 ÷ 2 ms.
    let cfg = with_db(false, None);
    let r = run_graph(&cfg, 5);
    let api = service(&r, &cfg, "api");
    assert_eq!(api.capacity_per_s, Some(4000.0));
    // A slow db (40 ms more on its answers from 20 s to 40 s) holds api's
    // workers 47 ms: 400/s needs 18.8 of 8, so api is over its capacity
    // although its own work never changed (at 4000/s it would read 0.1).
    let cfg = with_db(true, Some((20, 40, 40)));
    let r = run_graph(&cfg, 5);
    let api = service(&r, &cfg, "api");
    let peak = api.peak_load_ratio.unwrap();
    assert!(peak > 1.0, "{peak}");
    assert!(
        api.capacity_per_s.unwrap() < 8.0 / held,
        "{:?}",
        api.capacity_per_s
    );
}

/// Erlang C: the probability that an arrival waits in an M/M/c queue with
/// offered load a = λ/μ.
fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let top = term * a / c as f64 / (1.0 - a / c as f64);
    top / (sum + top)
}

#[test]
fn a_tandem_of_mmc_services_matches_jacksons_theorem() {
    // clients → A (4 workers, Exp mean 7.5 ms, releases its worker before
    // calling) → B (3 workers, Exp mean 6 ms), λ = 400/s: ρ_A = 0.75,
    // ρ_B = 0.8. By Burke's theorem A's departures are Poisson, so each
    // tier is an M/M/c queue of its own: W_q = C(c, a) / (cμ − λ).
    let lambda = 400.0;
    let (ca, ma, cb, mb) = (4u32, 7.5, 3u32, 6.0);
    let mut a = dependency(ca, ServiceDist::Exponential { mean: 7_500_000 }, u32::MAX);
    a.name = "a".into();
    a.hold_worker = false;
    a.calls = vec![EdgeId(1)];
    let mut b = dependency(cb, ServiceDist::Exponential { mean: 6 * MS }, u32::MAX);
    b.name = "b".into();
    let secs = 1000;
    let cfg = model(
        lambda,
        secs,
        vec![a, b],
        vec![edge("clients.a", None, 0, 1), edge("a.b", Some(0), 1, 1)],
        1,
    );
    let seeds: Vec<u64> = (1..=20).collect();
    let runs: Vec<Run> = run_seeds_graph(&cfg, &seeds);
    for (name, c, mean_ms) in [("a", ca, ma), ("b", cb, mb)] {
        let mu = 1000.0 / mean_ms;
        let theory = erlang_c(c, lambda / mu) / (c as f64 * mu - lambda) * 1000.0;
        let waits: Vec<f64> = runs
            .iter()
            .map(|r| service(r, &cfg, name).queue_wait_mean_ms.unwrap())
            .collect();
        let (m, se) = mean_se(&waits);
        // Within 2% of Erlang C, and the sampling error small enough for
        // that to mean something (4 standard errors inside the 2%).
        eprintln!("{name}: W_q = {m:.4} ± {se:.4} ms against Erlang C {theory:.4} ms");
        assert!(
            4.0 * se < 0.02 * theory,
            "{name}: SE {se} too large for {theory}"
        );
        assert!(
            (m / theory - 1.0).abs() < 0.02,
            "{name}: W_q = {m:.4} ± {se:.4} ms against Erlang C {theory:.4} ms"
        );
    }
}
