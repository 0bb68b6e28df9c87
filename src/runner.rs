//! Runs every (variant, replicate) of a plan, in parallel with rayon, and
//! returns the results in index order, so that the output does not depend
//! on the number of threads or on which run finished first.
//!
//! Seeds: replicate r of every variant runs with
//! `derive_seed([scenario seed, r])`. Variants deliberately share seeds
//! (common random numbers): two policies compared under one seed see the
//! same arrivals and service times until their histories diverge, so their
//! difference is the policy's, not the dice's.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use crate::invariants;
use crate::memory_gate::MemoryGate;
use crate::metrics::recorder::MAX_BUCKETS;
use crate::metrics::shape::{RunShape, VariantShape};
use crate::metrics::slo::Objectives;
use crate::metrics::{
    Abort, Recorder, RecoveryCriteria, RunContext, RunInfo, tabulate, tabulate_services,
};
use crate::model::occ::{OccConfig, run_occ_until};
use crate::model::{ModelConfig, World};
use crate::reorder::Halted;
use crate::report::chart_data::{MAX_CHART_POINTS, MAX_POINTS};
use crate::scenario::{self, Scenario, ScenarioErrors};

/// The stop flag of runs nobody can interrupt (`run_one`, `run_all`).
static NEVER: AtomicBool = AtomicBool::new(false);

/// The one layer of an OCC workload's tables.
const OCC_LAYER: &str = "occ";

/// One variant, ready to run.
#[derive(Clone, Debug)]
pub struct VariantPlan {
    pub name: String,
    pub config: ModelConfig,
    /// The OCC workload instead of `config`, when the scenario has one.
    pub occ: Option<OccConfig>,
    /// Swept (path, value) pairs that made this variant (empty without a
    /// sweep); written as `sweep.<path>` columns.
    pub params: Vec<(String, String)>,
    /// The scenario's SLO, which every run is judged against.
    pub slo: Option<Objectives>,
    /// The memory one of its runs allocates from its start
    /// (`scenario::memory::Estimate::at_start`), and under an
    /// address-space limit also what it may grow to with load (up to
    /// `limits.max_in_flight`, see [`fit_in_flight`]): runs in parallel
    /// are admitted by it ([`MemoryGate`]).
    pub memory: u64,
    /// `Some((configured, effective))` when `limits.max_in_flight` was
    /// lowered so that one run fits the address-space limit.
    pub in_flight_capped: Option<(u64, u64)>,
    /// When every run of this variant is sure to stop at
    /// `limits.max_events` before its end: what to tell and what to
    /// change (`check::events_certainly_over_limit`).
    pub certain_stop: Option<(String, String)>,
}

/// A growing table of calls in flight is copied when it grows: the old
/// and the new one are both allocated for a moment.
const GROWTH_PEAK: u64 = 2;
/// The lowest `limits.max_in_flight` a cap gives.
const MIN_IN_FLIGHT: u64 = 1_000;

/// The effective `limits.max_in_flight` of a run that allocates `at_start`
/// bytes from its start, under the address-space budget `budget` (none:
/// no limit), and the memory the run is admitted with. A run that grows
/// past an address-space limit aborts the process on a failed allocation
/// (exit 134), so under one the growth is counted when runs are admitted
/// (two runs that may each grow to 1.5 GB run one after the other under
/// `ulimit -v 4000000`), and the guard rail is lowered to what the budget
/// holds when even one run alone would not fit: the run then stops at the
/// lower rail (ABORTED, max_in_flight) instead of aborting the process.
/// Without a limit runs are admitted by what they hold from their start.
pub fn fit_in_flight(at_start: u64, max_in_flight: u64, budget: Option<u64>) -> (u64, u64) {
    let Some(budget) = budget else {
        return (max_in_flight, at_start);
    };
    let per = scenario::memory::IN_FLIGHT_BYTES * GROWTH_PEAK;
    let room = budget.saturating_sub(at_start) / per;
    let effective = max_in_flight.min(room.max(MIN_IN_FLIGHT));
    (
        effective,
        at_start.saturating_add(effective.saturating_mul(per)),
    )
}

pub use crate::metrics::run::{RunResult, replicate_seed};

/// The runs of a loaded scenario: every variant × sweep point, ready to run.
pub fn plan(s: &Scenario) -> Result<Vec<VariantPlan>, ScenarioErrors> {
    Ok(scenario::expand_all(s)?
        .into_iter()
        .map(|e| {
            let mut config = scenario::to_model(&e.scenario);
            let occ = scenario::to_occ(&e.scenario);
            let at_start = scenario::memory::estimate(&e.scenario).at_start();
            let budget = occ
                .is_none()
                .then(crate::memory_gate::address_space_budget)
                .flatten();
            let configured = config.limits.max_in_flight;
            let (effective, memory) = fit_in_flight(at_start, configured, budget);
            config.limits.max_in_flight = effective;
            VariantPlan {
                memory,
                in_flight_capped: (effective < configured).then_some((configured, effective)),
                certain_stop: crate::check::events_certainly_over_limit(&e.scenario),
                config,
                occ,
                slo: scenario::slo::objectives(&e.scenario),
                name: e.name,
                params: e.params,
            }
        })
        .collect())
}

/// Bytes a variant holds until the output folder is written, whatever
/// its runs: its summary cells, aggregates, chart data and report rows
/// (measured: a sweep of 4 000 one-layer variants of one bucket each
/// peaked 173 MB above a single run, about 43 kB a variant).
const VARIANT_BYTES: u64 = 48_000;
/// Bytes more a variant holds per service, call edge or layer (measured: a
/// three-service graph's variants held about 58 kB each).
const VARIANT_ITEM_BYTES: u64 = 6_000;
/// Bytes the charts hold per point of a variant's series while they read
/// the tables back, per layer or service it describes, with the point
/// itself (its running means over replicates, 48 bytes a series, and the
/// point drawn, 32: six series of `timeseries.csv`, one to three of
/// `services_timeseries.csv` a service). Measured with heaptrack: `plot`
/// of a 2 000-point sweep of 1 000 buckets, one layer and one service
/// (100 000 points of each table, the most), held 57 MB for them, about
/// 570 bytes a point of both tables (it was about 2 kB a bucket while the
/// series were maps). A run of more than `MAX_POINTS` buckets is read in
/// groups of buckets, at most `MAX_POINTS` points, and the variants of a
/// table share at most `MAX_CHART_POINTS` (`report::chart_data::Bins`):
/// twice that (the time series, then those of the services, beside
/// them), and a point a series past it.
const VARIANT_BUCKET_BYTES: u64 = 350;
/// Bytes a run's result holds until the folder is written: its summary
/// cells and names (its rows of `timeseries.csv` and
/// `services_timeseries.csv` are written as it ends, not kept).
const RUN_BYTES: u64 = 4_000;
/// Bytes more a run's result holds per service, call edge or layer (its
/// rows of `services.csv`, `calls.csv` and `replicas.csv`).
const RUN_ITEM_BYTES: u64 = 1_000;
/// Bytes a row of `timeseries.csv` waiting in the reorder buffer holds,
/// per layer or service it describes, with the row itself (rendered text,
/// about 100 bytes a row of each table, and its share of the run's
/// buckets while the run renders them). Measured on two threads: 20
/// replicates of 100 000 buckets, one layer and one service (2 million
/// rows), peaked at 380 MB, and 20 such variants at 342 MB, whose
/// estimate at this figure is 565 MB: an upper bound, not four times one.
const ROW_ITEM_BYTES: u64 = 400;

/// How many variants `s` runs (every variant × every sweep point), from
/// the counts alone: before they are built (a 100 000-point sweep takes a
/// minute to build).
pub fn variant_count(s: &Scenario) -> u64 {
    let points = s
        .sweep
        .values()
        .map(|v| v.as_array().map_or(1, |a| a.len() as u64))
        .fold(1u64, u64::saturating_mul);
    (s.variants.len().max(1) as u64).saturating_mul(points)
}

/// A lower bound of [`retained_bytes`] from the counts alone (what each
/// of `variants` variants and `runs` runs keeps at the least), so that a
/// command whose results cannot fit is refused before its variants are
/// built.
pub fn retained_bytes_at_least(variants: u64, runs: u64) -> u64 {
    variants
        .saturating_mul(VARIANT_BYTES)
        .saturating_add(runs.saturating_mul(RUN_BYTES))
}

/// The memory the results of `items` (variant, replicate) hold until the
/// output folder is written: what a variant keeps (with its chart data,
/// per bucket), what each run keeps (its summary, not its rows), and the
/// rows of the runs waiting in the reorder buffer ([`AHEAD_PER_THREAD`]
/// per worker thread, at most). It adds up over the whole command,
/// unlike a run's own memory, which is freed when it ends.
pub fn retained_bytes(plans: &[VariantPlan], items: &[(usize, u32)]) -> u64 {
    // Never more runs waiting than there are.
    let ahead = (AHEAD_PER_THREAD * rayon::current_num_threads().max(1)).min(items.len()) as u64;
    let mut variants = vec![false; plans.len()];
    let mut bytes = 0u64;
    let mut waiting = 0u64;
    // The charts' points, per layer or service they describe: each
    // variant's, and what they share at most.
    let mut points = 0u64;
    let mut shared = 2 * MAX_CHART_POINTS as u64;
    for &(v, _) in items {
        let Some(plan) = plans.get(v) else {
            continue;
        };
        let topo = &plan.config.topology;
        let parts = (topo.services().len() + topo.edges().len()) as u64;
        // A run's rows of timeseries.csv (one when it writes none: OCC).
        let rows = match plan.occ {
            Some(_) => 1,
            None => plan
                .config
                .duration
                .div_ceil(plan.config.bucket.max(1))
                .max(1),
        };
        if !std::mem::replace(&mut variants[v], true) {
            let own = rows.min(MAX_POINTS as u64);
            points = points.saturating_add(own.saturating_mul(1 + parts));
            shared = shared.saturating_add(1 + parts);
            bytes = bytes.saturating_add(VARIANT_BYTES + VARIANT_ITEM_BYTES * parts);
        }
        bytes = bytes.saturating_add(RUN_BYTES + RUN_ITEM_BYTES * parts);
        waiting = waiting.max(rows.saturating_mul(ROW_ITEM_BYTES * (1 + parts)));
    }
    bytes
        .saturating_add(points.min(shared).saturating_mul(VARIANT_BUCKET_BYTES))
        .saturating_add(waiting.saturating_mul(ahead))
}

impl VariantPlan {
    /// The layers its runs' tables have columns for (`RunResult::layer_names`).
    pub fn layer_names(&self) -> Vec<String> {
        match self.occ {
            Some(_) => vec![OCC_LAYER.to_string()],
            None => self.config.topology.edge_names(),
        }
    }

    /// Whether a service of its runs has a cache (`services.csv` and
    /// `services_timeseries.csv` then have the cache columns).
    pub fn has_cache(&self) -> bool {
        self.occ.is_none()
            && self
                .config
                .topology
                .services()
                .iter()
                .any(|s| s.cache.is_some())
    }

    /// Whether a call of its runs has a connection pool (`summary.csv`
    /// then has `failed_pool_timeout`).
    pub fn has_pools(&self) -> bool {
        self.occ.is_none()
            && self
                .config
                .topology
                .edges()
                .iter()
                .any(|e| e.policy.pool.is_some())
    }

    /// What its runs' tables hold (run metadata for the report).
    pub fn shape(&self) -> VariantShape {
        let bucket = self.config.bucket.max(1);
        VariantShape {
            bucket_ns: bucket,
            rows: self
                .occ
                .is_none()
                .then(|| self.config.duration.div_ceil(bucket).max(1)),
            name: self.name.clone(),
            params: self.params.clone(),
        }
    }
}

/// The shape of the runs of `s` planned as `plans` (`plan(s)`), without
/// expanding its variants again.
pub fn shape(plans: &[VariantPlan], s: &Scenario) -> RunShape {
    RunShape::new(plans.iter().map(VariantPlan::shape), s.replicates, s.seed)
}

/// Runs one (variant, replicate).
pub fn run_one(
    plan: &VariantPlan,
    variant_index: usize,
    replicate: u32,
    scenario_seed: u64,
) -> RunResult {
    run_one_until(plan, variant_index, replicate, scenario_seed, &NEVER)
}

/// `run_one`, stopped early (aborted) once `stop` is raised.
fn run_one_until(
    plan: &VariantPlan,
    variant_index: usize,
    replicate: u32,
    scenario_seed: u64,
    stop: &AtomicBool,
) -> RunResult {
    let cfg = &plan.config;
    let seed = replicate_seed(scenario_seed, replicate);
    let (rec, info, ctx) = match &plan.occ {
        Some(occ) => occ_run(occ, seed, stop),
        None => {
            let (rec, info) = World::new(cfg, seed).run_until(stop);
            let mut ctx = cfg.run_context();
            ctx.slo_latency = plan
                .slo
                .as_ref()
                .and_then(|o| o.latency_p99_ms)
                .map(|ms| (ms * 1e6) as crate::engine::Nanos);
            (rec, info, ctx)
        }
    };
    let (rows, mut summary) = tabulate(&rec, &info, &ctx);
    summary.slo = plan.slo.as_ref().map(|o| o.judge(&summary));
    let graph = tabulate_services(&rec, &ctx, &summary);
    let run_end = crate::metrics::classes::RunEnd {
        end: info.end,
        hung_bound: crate::metrics::table::hung_bound(&rec, &ctx),
        aborted: info.aborted.is_some(),
    };
    let classes = crate::metrics::classes::tabulate_classes(&rec, cfg.classes.classes(), run_end);
    // The OCC workload records its own shape (no dependency, no deadline).
    let violations = match plan.occ {
        Some(_) => Vec::new(),
        None => {
            let mut v = invariants::violations(cfg, &summary, &rows, &graph);
            v.extend(invariants::class_violations(&summary, &classes));
            v
        }
    };
    RunResult {
        variant: plan.name.clone(),
        variant_index,
        replicate,
        seed,
        layer_names: ctx.layer_names,
        params: plan.params.clone(),
        rows,
        summary,
        services: ctx.services,
        edges: ctx.edges,
        graph,
        classes,
        violations,
    }
}

/// Runs the OCC workload and records it in the shape of any other run: one
/// layer (`occ`) whose attempts are the writes, every client one logical
/// request that ends when its write succeeds. The run lasts until the last
/// client is done (its `completion_time_s`).
fn occ_run(occ: &OccConfig, seed: u64, stop: &AtomicBool) -> (Recorder, RunInfo, RunContext) {
    let r = run_occ_until(occ, seed, stop);
    let bucket = occ.bucket.max(1);
    // A run cut short by its guard rail may have got far in time; the
    // table covers what the workload could count (`MAX_BUCKETS`).
    let buckets = r.completion.max(1).div_ceil(bucket).min(MAX_BUCKETS as u64);
    let end = buckets.saturating_mul(bucket);
    let mut rec = Recorder::new(end, bucket, 1);
    for _ in 0..occ.clients {
        rec.offered(0);
    }
    for (b, (&calls, retries)) in r
        .calls_per_bucket
        .iter()
        .zip(r.retries_per_bucket.iter().chain(std::iter::repeat(&0)))
        .enumerate()
    {
        let t = b as u64 * bucket;
        for i in 0..calls {
            rec.attempt(t, 0, i < *retries);
            rec.dependency_attempt(t);
        }
    }
    let mut done = r.done_at.clone();
    done.sort_unstable();
    for t in done.into_iter().filter(|&t| t > 0) {
        rec.request_done(t.min(end - 1), t, None);
    }
    rec.finish(end, 0);
    let info = RunInfo {
        events: r.events,
        digest: r.digest,
        aborted: r.aborted,
        end,
        completion: Some(r.completion),
    };
    // No server with workers or a capacity: utilization and load ratios
    // are not applicable (empty), not 0.
    let ctx = RunContext {
        slo_latency: None,
        capacity_per_sec: 0.0,
        concurrency: 0,
        recovery: RecoveryCriteria {
            trigger_start: None,
            trigger_end: None,
            threshold: 0.9,
            window: bucket,
        },
        layer_names: vec![OCC_LAYER.to_string()],
        services: Vec::new(),
        edges: Vec::new(),
        incident_windows: Vec::new(),
        capacity_factors: Vec::new(),
        focus: None,
    };
    (rec, info, ctx)
}

/// Runs every variant × replicate; `on_done` is called after each run
/// (for a progress bar). Results come back in (variant, replicate) order.
pub fn run_all(
    variants: &[VariantPlan],
    replicates: u32,
    scenario_seed: u64,
    on_done: &(dyn Fn(&RunResult) + Sync),
) -> Vec<RunResult> {
    let items: Vec<(usize, u32)> = (0..variants.len())
        .flat_map(|v| (0..replicates).map(move |r| (v, r)))
        .collect();
    run_each(variants, &items, scenario_seed, on_done, &NEVER, |r| r)
        .into_iter()
        .flatten()
        .collect()
}

/// Runs stopped by their stop flag: how many had finished first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted {
    pub finished: usize,
    pub total: usize,
}

/// Runs the given (variant index, replicate) items (a shard's share of
/// `run_all`); results come back in the order of `items`, each identical
/// to the one `run_all` gives for the same item. Once `stop` is raised,
/// runs not yet started are skipped, running ones stop within
/// `STOP_POLL` events, and the whole set is `Interrupted` (a partial set
/// of results is never returned as if it were whole).
pub fn run_items(
    variants: &[VariantPlan],
    items: &[(usize, u32)],
    scenario_seed: u64,
    on_done: &(dyn Fn(&RunResult) + Sync),
    stop: &AtomicBool,
) -> Result<Vec<RunResult>, Interrupted> {
    run_items_keeping(variants, items, scenario_seed, on_done, stop, |r| r)
}

/// [`run_items`], keeping of each result only what `keep` takes from it
/// as soon as the run ends (a search keeps summaries, not tables).
pub fn run_items_keeping<T: Send>(
    variants: &[VariantPlan],
    items: &[(usize, u32)],
    scenario_seed: u64,
    on_done: &(dyn Fn(&RunResult) + Sync),
    stop: &AtomicBool,
    keep: impl Fn(RunResult) -> T + Sync,
) -> Result<Vec<T>, Interrupted> {
    let results = run_each(variants, items, scenario_seed, on_done, stop, keep);
    if stop.load(Ordering::Relaxed) {
        return Err(Interrupted {
            finished: results.iter().filter(|r| r.is_some()).count(),
            total: items.len(),
        });
    }
    Ok(results.into_iter().flatten().collect())
}

/// How many runs may start past the oldest one whose result has not yet
/// been handed on, per worker thread ([`run_items_in_order`]): room for
/// runs of uneven length, and a bound on the results waiting.
const AHEAD_PER_THREAD: usize = 2;

/// [`run_items_keeping`], handing each kept result to `sink` in the order
/// of `items` as soon as the ones before it have been (a reorder buffer:
/// `crate::reorder`), rather than keeping them all to the end. At most
/// [`AHEAD_PER_THREAD`] runs per worker thread wait there, so memory
/// follows the threads, not the runs. `keep` runs on the worker that made
/// the run (in parallel), `sink` on one at a time. The outer error is an
/// interruption (`stop`), the inner one the sink's refusal: either stops
/// the runs not yet started.
pub fn run_items_in_order<T: Send, E: Send>(
    variants: &[VariantPlan],
    items: &[(usize, u32)],
    scenario_seed: u64,
    on_done: &(dyn Fn(&RunResult) + Sync),
    stop: &AtomicBool,
    keep: impl Fn(RunResult) -> T + Sync,
    sink: impl FnMut(T) -> Result<(), E> + Send,
) -> Result<Result<(), E>, Interrupted> {
    let gate = MemoryGate::for_this_process();
    let ahead = AHEAD_PER_THREAD * rayon::current_num_threads().max(1);
    let work = |i: usize| {
        let (v, r) = items[i];
        run_gated(&gate, variants, v, r, scenario_seed, on_done, stop).map(&keep)
    };
    let interrupted = |finished| Interrupted {
        finished,
        total: items.len(),
    };
    match crate::reorder::in_order(items.len(), ahead, work, sink) {
        Ok(()) if stop.load(Ordering::Relaxed) => Err(interrupted(items.len())),
        Ok(()) => Ok(Ok(())),
        Err(Halted::Cancelled { finished }) => Err(interrupted(finished)),
        Err(Halted::Sink(e)) => Ok(Err(e)),
    }
}

/// Makes one run once the memory gate admits it; `None` when `stop` was
/// raised before it started or cut it short.
fn run_gated(
    gate: &MemoryGate,
    variants: &[VariantPlan],
    v: usize,
    r: u32,
    scenario_seed: u64,
    on_done: &(dyn Fn(&RunResult) + Sync),
    stop: &AtomicBool,
) -> Option<RunResult> {
    if stop.load(Ordering::Relaxed) {
        return None;
    }
    let plan = &variants[v];
    let result = gate.admit(plan.memory, || {
        run_one_until(plan, v, r, scenario_seed, stop)
    });
    if result.summary.aborted == Some(Abort::Interrupted) {
        return None;
    }
    on_done(&result);
    Some(result)
}

/// Every item's result as `keep` keeps it, `None` for one skipped or cut
/// short by `stop`.
fn run_each<T: Send>(
    variants: &[VariantPlan],
    items: &[(usize, u32)],
    scenario_seed: u64,
    on_done: &(dyn Fn(&RunResult) + Sync),
    stop: &AtomicBool,
    keep: impl Fn(RunResult) -> T + Sync,
) -> Vec<Option<T>> {
    let gate = MemoryGate::for_this_process();
    items
        .par_iter()
        .map(|&(v, r)| run_gated(&gate, variants, v, r, scenario_seed, on_done, stop).map(&keep))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under an address-space budget a run is admitted with what it may
    /// grow to (so two runs that may each grow to 1.5 GB do not run at
    /// once under a 3 GB budget), and the guard rail is lowered to what
    /// the budget holds; without a limit, nothing changes.
    #[test]
    fn in_flight_growth_is_counted_under_an_address_space_limit() {
        let per = scenario::memory::IN_FLIGHT_BYTES * GROWTH_PEAK;
        assert_eq!(fit_in_flight(5_000, 5_000_000, None), (5_000_000, 5_000));
        let budget = 4_000_000 * 1024 / 4 * 3;
        let (effective, memory) = fit_in_flight(5_000, 5_000_000, Some(budget));
        assert_eq!(effective, 5_000_000);
        assert_eq!(memory, 5_000 + 5_000_000 * per);
        assert!(2 * memory > budget && memory <= budget, "one at a time");
        let small = 1_500_000 * 1024 / 4 * 3;
        let (effective, memory) = fit_in_flight(5_000, 5_000_000, Some(small));
        assert!(
            effective < 5_000_000 && memory <= small,
            "{effective} {memory}"
        );
        assert_eq!(effective, (small - 5_000) / per);
        // A budget that holds nothing still leaves a rail to stop at.
        assert_eq!(fit_in_flight(10, 5_000_000, Some(0)).0, MIN_IN_FLIGHT);
    }

    /// Replicate r of every variant runs on this seed: literal values, so
    /// that a change of the derivation fails here (and in the golden
    /// results) rather than silently renumbering every replicate.
    #[test]
    fn replicate_seeds_are_pinned() {
        assert_eq!(replicate_seed(2024, 0), 0x014b7d56e4287a41);
        assert_eq!(replicate_seed(2024, 1), 0xd57036bfaa2b20ab);
        assert_eq!(replicate_seed(42, 3), 0x73085bffbaf14016);
    }

    /// The shape the runner reports for its runs (run metadata) is the one
    /// `plot` and `merge` derive from the scenario file: a sweep, variants
    /// of their own length and bucket, and the OCC workload.
    #[test]
    fn the_shape_of_the_runs_is_the_scenarios() {
        let sweep = "name: s\nduration: 5s\nbucket: 2s\nreplicates: 2\n\
             clients: { arrival: { kind: poisson, rate: 10/s } }\n\
             layers: [{ name: api, timeout: 1s, retry: { max_attempts: 2 } }]\n\
             dependency: { concurrency: 2, service_time: { dist: constant, value: 10ms } }\n\
             sweep: { dependency.concurrency: [1, 2] }\n";
        let variants = "name: s\nduration: 5s\nbucket: 1s\n\
             clients: { arrival: { kind: poisson, rate: 10/s } }\n\
             layers: [{ name: api, timeout: 1s, retry: { max_attempts: 2 } }]\n\
             dependency: { concurrency: 2, service_time: { dist: constant, value: 10ms } }\n\
             variants:\n\
             - { name: long, set: { duration: 7s, bucket: 500ms } }\n\
             - { name: base, set: {} }\n";
        let occ = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/aws-jitter-blog.yaml"
        ))
        .unwrap();
        for text in [sweep, variants, &occ] {
            let s = scenario::load_str(text, "s.yaml").unwrap();
            let plans = plan(&s).unwrap();
            assert_eq!(shape(&plans, &s), RunShape::of(&s).unwrap());
        }
    }
}
