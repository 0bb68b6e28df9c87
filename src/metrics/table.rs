//! The tables of one run, computed from its recorder: the time-series rows
//! and the summary, with the recovery time and the metastability verdict.
//!
//! Recovery (README, "Recovery and metastability"): the *baseline* is the
//! success ratio (succeeded ÷ offered) over the full buckets before the
//! trigger starts (the first bucket skipped as warm-up when there are
//! others). When no request was offered there it is a ratio of nothing:
//! empty in the summary, and recovery is judged against 1.0. When requests
//! were offered there and none succeeded (a baseline of 0), there is no
//! healthy level to recover to: the run is *undecided*, as below, and has
//! no time to full goodput. After the trigger ends, a sliding
//! window of `window` is *healthy* when its success ratio is at least
//! `threshold` × baseline. The run *recovered* when, from some window on,
//! every window until the end of the run is healthy; the recovery time is
//! the start of the first such window minus the trigger's end. A run that
//! never gets there is metastable (`recovered = false`). A run that ends
//! before one full window after the trigger has no verdict: it is
//! *undecided* (`recovered` empty in the summary, `undecided` in the
//! tables), since it could not show either; so is a run that ends
//! unhealthy while the warm-up after the incident is still going on (its
//! capacity was not yet back: "never" and "not yet" look alike).
//!
//! A run stopped early by a guard rail (`aborted`) earns no verdict: its
//! recovery cells and its success rate are empty (the requests still open
//! at the stop have no outcome; the buckets after it are empty, and empty
//! buckets would look healthy), and its other figures cover only the time
//! it reached.

use crate::engine::{NS_PER_S, NS_PER_US, Nanos};

use super::abort::Abort;
use super::columns::held_ratio;
use super::criteria::RecoveryCriteria;
use super::reason::Reason;
use super::recorder::Recorder;
use super::services::{
    AfterIncident, EdgeInfo, EdgeTotals, GraphTables, ServiceInfo, measured_capacity,
    tabulate_graph,
};

/// What a finished run hands back besides its recorder.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    pub events: u64,
    pub digest: u64,
    /// Why the run stopped early, if it did (a guard rail was hit).
    pub aborted: Option<Abort>,
    /// Time the run reached (the duration unless aborted).
    pub end: Nanos,
    /// Workloads that end by themselves (OCC): when the last client was
    /// done.
    pub completion: Option<Nanos>,
}

/// Why a run that had an incident has no recovery verdict.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Undecided {
    /// It ends `after_s` seconds (of full buckets) after the trigger, less
    /// than the `window_s` one healthy window needs.
    TooShort { after_s: f64, window_s: f64 },
    /// No request was offered after the trigger: nothing shows whether the
    /// system would have served one.
    NoTraffic,
    /// Requests were offered before the trigger but none succeeded (a
    /// baseline of 0): every window would be "at least 0.9 × 0" and read
    /// "recovered in 0 s" while the system served nothing. There is no
    /// healthy level to recover to.
    NoBaseline,
    /// The run ends `after_s` seconds (of full buckets) after the trigger
    /// without a healthy stretch to its end, while the warm-up after the
    /// incident still had `warming_s` seconds to go: the system was not
    /// yet back to its capacity, so "never" could not be told from "not
    /// yet".
    WarmingUp { after_s: f64, warming_s: f64 },
}

/// Facts about the system that the tables are judged against.
#[derive(Clone, Debug)]
pub struct RunContext {
    /// Nominal capacity of the dependency, requests per second.
    pub capacity_per_sec: f64,
    /// Workers of the dependency; 0 when there are none (an OCC run):
    /// utilization is then not applicable.
    pub concurrency: u32,
    pub recovery: RecoveryCriteria,
    pub layer_names: Vec<String>,
    /// The graph's services and call edges (empty for workloads without
    /// one).
    pub services: Vec<ServiceInfo>,
    pub edges: Vec<EdgeInfo>,
    /// The time incidents disturb (each incident of any service and the
    /// warm-up after it), sorted and disjoint: what the figures "outside
    /// incidents" leave out.
    pub incident_windows: Vec<(Nanos, Nanos)>,
    /// Per service (as `services`), per bucket: the mean fraction of its
    /// nominal capacity it had (empty: whole capacity throughout).
    pub capacity_factors: Vec<Vec<f64>>,
    /// The service the single-dependency columns describe (its index in
    /// `services`), if the run has services.
    pub focus: Option<usize>,
    /// The SLO's latency objective, when it has one: a request open at the
    /// end of the run is not called hung before it has waited this long
    /// (`hung_bound`).
    pub slo_latency: Option<Nanos>,
}

/// One row of `timeseries.csv` (without variant and replicate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeRow {
    pub t_s: f64,
    /// The bucket starts at or after the time a guard rail stopped the run
    /// (`Recorder::end`): nothing in it was simulated, and its cells are
    /// empty (none of its zeros was measured).
    pub after_stop: bool,
    pub offered: u64,
    pub attempts: u64,
    pub retries: u64,
    pub dependency_attempts: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub failed_by: [u64; Reason::COUNT],
    pub shed: u64,
    pub queue_depth: f64,
    pub in_flight: f64,
    /// Busy workers ÷ workers; `None` without workers (an OCC run).
    pub utilization: Option<f64>,
    pub goodput: f64,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub orphaned: u64,
    pub blackholed: u64,
    pub queue_timeouts: u64,
    pub open_requests: u64,
    pub commits: u64,
    pub duplicate_side_effects: u64,
    pub ambiguous_successes: u64,
    pub deduplicated: u64,
    pub cancelled: u64,
    pub probes: u64,
    pub messages: u64,
    pub deliveries: u64,
    pub redeliveries: u64,
    pub duplicate_deliveries: u64,
    pub processed: u64,
    pub dead_lettered: u64,
    /// Attempts sent by calls whose caller had given up, per layer.
    pub layer_orphaned: Vec<u64>,
    /// Dependency attempts per second ÷ nominal capacity; `None` without
    /// a capacity (an OCC run).
    pub load_ratio: Option<f64>,
    pub layer_attempts: Vec<u64>,
    pub layer_retries: Vec<u64>,
    /// Per layer: refusals by the budget, the throttle and the breaker.
    pub layer_gates: Vec<[u64; 3]>,
    /// Per layer at the bucket's end: budget level, throttle level,
    /// fraction of breakers open (None where not configured).
    pub layer_levels: Vec<[Option<f64>; 3]>,
}

/// One row of `summary.csv` (without variant, replicate and seed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub logical_requests: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub in_flight_at_end: u64,
    /// Of `in_flight_at_end`, the requests that had waited longer than the
    /// hung bound (`hung_bound`) when the run ended: they count as not
    /// succeeded in the success rates and the SLO's verdict.
    pub hung_at_end: u64,
    /// Succeeded ÷ (succeeded + failed + hung at the end); `None` for an
    /// aborted run and when no request ended.
    pub success_rate: Option<f64>,
    pub dependency_attempts: u64,
    pub retries: u64,
    /// Retries ÷ attempts; `None` when nothing was attempted.
    pub retry_ratio: Option<f64>,
    pub retry_delay_p50_ms: Option<f64>,
    pub retry_delay_p99_ms: Option<f64>,
    /// Dependency attempts ÷ logical requests; `None` without a logical
    /// request (0/0 is not 0).
    pub amplification: Option<f64>,
    /// The highest full bucket's dependency attempts ÷ logical requests;
    /// `None` when no full bucket had a request.
    pub peak_amplification: Option<f64>,
    pub goodput: f64,
    pub latency_mean_ms: Option<f64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_p999_ms: Option<f64>,
    /// `None` without workers (an OCC run).
    pub dependency_utilization: Option<f64>,
    pub dependency_queue_wait_mean_ms: Option<f64>,
    /// The largest `load_ratio` of a full bucket; `None` when no full
    /// bucket has one (no capacity, or a run shorter than a bucket).
    pub peak_load_ratio: Option<f64>,
    /// `None` without a trigger, and for an aborted run.
    pub recovery_time_s: Option<f64>,
    /// `None` without a trigger, for a run too short to judge
    /// (`undecided`), and for an aborted run.
    pub recovered: Option<bool>,
    /// A run that ends too soon after the trigger for one full recovery
    /// window: no verdict (see the module documentation).
    pub undecided: Option<Undecided>,
    pub orphaned_work_s: f64,
    pub events: u64,
    /// Dependency requests refused at the door while it was down
    /// (connection errors): attempts it did no work for.
    pub refused: u64,
    /// Succeeded ÷ ended, over the logical requests whose whole life lay
    /// outside the incident windows; `None` for an aborted run or when
    /// none ended there.
    pub success_rate_outside_incidents: Option<f64>,
    /// p99 latency of those requests.
    pub latency_p99_outside_ms: Option<f64>,
    /// The largest `load_ratio` of a full bucket from the end of the
    /// trigger on (the whole run without a trigger); `None` when no full
    /// bucket follows it.
    pub peak_load_ratio_after: Option<f64>,
    /// The largest per-bucket ratio of the requests the dependency let in
    /// (not refused, not blackholed) per second to the capacity it had
    /// then (`model::capacity`); buckets in which it had none are left
    /// out. `None` without a capacity.
    pub peak_effective_load_ratio: Option<f64>,
    /// Seconds from the end of the trigger until every full bucket to the
    /// end of the run has a healthy success ratio (`recovery`, bucket by
    /// bucket); `None` without a trigger, when that never happens, and
    /// for an aborted run.
    pub time_to_full_goodput_s: Option<f64>,
    /// The verdict against the scenario's SLO, when it has one (set by
    /// the runner, which knows the SLO).
    pub slo: Option<super::slo::Verdict>,
    /// Some call has a connection pool: the summary then lists
    /// `failed_pool_timeout` (a column only such scenarios have).
    pub pools: bool,
    pub failed_by: [u64; Reason::COUNT],
    pub shed: u64,
    pub blackholed: u64,
    pub queue_timeouts: u64,
    pub orphaned: u64,
    pub commits: u64,
    pub duplicate_side_effects: u64,
    pub ambiguous_successes: u64,
    pub deduplicated: u64,
    pub cancelled: u64,
    pub cancelled_work_s: f64,
    pub probes: u64,
    /// Attempts sent at or after their logical request's deadline.
    pub attempts_after_deadline: u64,
    /// Logical requests that committed at least once (writes).
    pub committed_requests: u64,
    /// Message consumers (zero without them).
    pub messages: u64,
    pub deliveries: u64,
    pub redeliveries: u64,
    pub duplicate_deliveries: u64,
    pub processed: u64,
    pub dead_lettered: u64,
    pub messages_open: u64,
    pub dead_letter_age_mean_s: Option<f64>,
    pub message_latency_p50_ms: Option<f64>,
    pub message_latency_p99_ms: Option<f64>,
    pub layer_orphaned: Vec<u64>,
    pub layer_orphaned_work_s: Vec<f64>,
    pub layer_calls: Vec<u64>,
    pub layer_attempts: Vec<u64>,
    pub layer_retries: Vec<u64>,
    pub layer_gates: Vec<[u64; 3]>,
    /// The success ratio before the trigger (module documentation);
    /// `None` when no request was offered in a full bucket before it: a
    /// ratio of nothing (recovery is then judged against 1.0).
    pub baseline_success_ratio: Option<f64>,
    /// The focus service's capacity, requests per second; `None` without
    /// one (an OCC run, unlimited workers).
    pub capacity_per_s: Option<f64>,
    pub aborted: Option<Abort>,
    pub event_digest: u64,
    /// OCC workloads: the time of the last event (the blog's completion time).
    pub completion_time_s: Option<f64>,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

pub(super) fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The per-service and per-edge tables of a run, from its recorder and
/// its summary (whose per-layer totals are the per-edge ones).
pub fn tabulate_services(rec: &Recorder, ctx: &RunContext, s: &Summary) -> GraphTables {
    if ctx.services.is_empty() {
        return GraphTables::default();
    }
    tabulate_graph(
        &rec.svc,
        &ctx.services,
        EdgeTotals {
            calls: &s.layer_calls,
            attempts: &s.layer_attempts,
            retries: &s.layer_retries,
            gates: &s.layer_gates,
            orphaned: &s.layer_orphaned,
        },
        s.logical_requests,
        rec.bucket_len(),
        AfterIncident {
            end: rec.end,
            aborted: s.aborted.is_some(),
            first_bucket: ctx
                .recovery
                .trigger_end
                .map_or(0, |e| e.div_ceil(rec.bucket_len()) as usize),
            capacity_factors: &ctx.capacity_factors,
        },
        |b| rec.len_of(b),
    )
}

/// How long a request open at the end of the run must have waited to count
/// as hung (not succeeded in the success rates and the SLO's verdict): the
/// longest of the recovery window, the longest any request that ended took,
/// and the SLO's latency objective. A request that started just before the
/// end is never judged: it may yet have succeeded.
pub fn hung_bound(rec: &Recorder, ctx: &RunContext) -> Nanos {
    let longest_ended = if rec.latency.is_empty() {
        0
    } else {
        rec.latency.max().saturating_mul(NS_PER_US)
    };
    ctx.recovery
        .window
        .max(longest_ended)
        .max(ctx.slo_latency.unwrap_or(0))
}

/// The shares of the focus service's replicas serving, and serving or
/// draining, in bucket `b` (the run's mean with `None`) when it
/// autoscales: its capacity is the first share of all its replicas', its
/// workers that may be busy the second (a draining replica works through
/// what it holds, so the utilization stays within [0, 1]); 1 and 1 for a
/// fixed fleet.
fn focus_share(rec: &Recorder, ctx: &RunContext, b: Option<usize>) -> (f64, f64) {
    let Some(f) = ctx.focus else {
        return (1.0, 1.0);
    };
    let Some(Some(l)) = rec.svc.scaled.get(f) else {
        return (1.0, 1.0);
    };
    let slots = ctx.services.get(f).map_or(1, |s| s.replicas.max(1)) as f64;
    match b {
        Some(b) => {
            let len = rec.len_of(b);
            (
                ratio(l.serving.mean(b, len), slots),
                ratio(l.working.mean(b, len), slots),
            )
        }
        None => {
            let run: Nanos = (0..rec.buckets.len()).map(|b| rec.len_of(b)).sum();
            let slot_secs = slots * run as f64 / NS_PER_S as f64;
            (
                ratio(l.serving.total_secs(), slot_secs),
                ratio(l.working.total_secs(), slot_secs),
            )
        }
    }
}

/// The focus service's capacity, requests per second before an
/// autoscaler's share: per bucket, and over the run. Its nominal capacity
/// (workers ÷ mean service time), except for a thread-per-request service
/// whose workers are held while its calls are out: there, as in
/// `services.csv`, the capacity its workers had at the hold times measured
/// (per bucket, else over the run), so the dependency columns of the
/// summary and the time series mean what that service's row means.
struct FocusCapacity {
    per_bucket: Vec<Option<f64>>,
    run: Option<f64>,
    /// Measured from hold times: never less loaded than its workers were
    /// busy.
    held: bool,
}

fn focus_capacity(rec: &Recorder, ctx: &RunContext) -> FocusCapacity {
    let n = rec.buckets.len();
    let nominal = (ctx.capacity_per_sec > 0.0).then_some(ctx.capacity_per_sec);
    let held = ctx
        .focus
        .filter(|&f| f < rec.svc.services)
        .and_then(|f| Some((f, ctx.services.get(f)?)))
        .filter(|(_, i)| i.holds_while_calling);
    match held {
        Some((f, i)) => {
            let run = measured_capacity(&rec.svc, f, i, 0..n);
            FocusCapacity {
                per_bucket: (0..n)
                    .map(|b| measured_capacity(&rec.svc, f, i, b..b + 1).or(run))
                    .collect(),
                run: run.or(nominal),
                held: true,
            }
        }
        None => FocusCapacity {
            per_bucket: vec![nominal; n],
            run: nominal,
            held: false,
        },
    }
}

/// Computes the time series and the summary of one run.
pub fn tabulate(rec: &Recorder, info: &RunInfo, ctx: &RunContext) -> (Vec<TimeRow>, Summary) {
    let layers = rec.layers();
    let n = rec.buckets.len();
    let mut rows = Vec::with_capacity(n);
    let capacity = focus_capacity(rec, ctx);
    for (b, c) in rec.buckets.iter().enumerate() {
        let len = rec.len_of(b);
        let secs = len as f64 / NS_PER_S as f64;
        let busy = rec.busy.mean(b, len);
        let (share, working) = focus_share(rec, ctx, Some(b));
        // None without workers, nor with none serving or draining in the
        // bucket (an autoscaled fleet at zero): busy time of no worker
        // time. A draining replica's workers count (they finish what it
        // holds), so the utilization stays within [0, 1].
        let workers = ctx.concurrency as f64 * working;
        let utilization = (workers > 0.0).then(|| busy / workers);
        rows.push(TimeRow {
            t_s: (b as u64 * rec.bucket_len()) as f64 / NS_PER_S as f64,
            after_stop: b as u64 * rec.bucket_len() >= info.end,
            offered: c.offered,
            attempts: c.attempts,
            retries: c.retries,
            dependency_attempts: c.dependency_attempts,
            succeeded: c.succeeded,
            failed: c.failed_total(),
            failed_by: c.failed,
            shed: c.shed,
            queue_depth: rec.queue.mean(b, len),
            in_flight: rec.queue.mean(b, len) + busy,
            utilization,
            goodput: ratio(c.succeeded as f64, secs),
            latency_p50_ms: c.latency_p50_us.map(us_to_ms),
            latency_p99_ms: c.latency_p99_us.map(us_to_ms),
            orphaned: c.orphaned,
            blackholed: c.blackholed,
            queue_timeouts: c.queue_timeouts,
            open_requests: c.open_requests,
            commits: c.commits,
            duplicate_side_effects: c.duplicate_side_effects,
            ambiguous_successes: c.ambiguous_successes,
            deduplicated: c.deduplicated,
            cancelled: c.cancelled,
            probes: c.probes,
            messages: c.messages,
            deliveries: c.deliveries,
            redeliveries: c.redeliveries,
            duplicate_deliveries: c.duplicate_deliveries,
            processed: c.processed,
            dead_lettered: c.dead_lettered,
            layer_orphaned: rec.layer_orphaned[b * layers..(b + 1) * layers].to_vec(),
            // None without a capacity in the bucket: attempts against no
            // capacity are no ratio.
            load_ratio: capacity.per_bucket[b]
                .map(|cap| cap * share)
                .filter(|&cap| cap > 0.0)
                .map(|cap| {
                    let load = ratio(c.dependency_attempts as f64, secs) / cap;
                    held_ratio(match utilization {
                        Some(u) if capacity.held => load.max(u),
                        _ => load,
                    })
                }),
            layer_attempts: rec.layer_attempts[b * layers..(b + 1) * layers].to_vec(),
            layer_retries: rec.layer_retries[b * layers..(b + 1) * layers].to_vec(),
            layer_gates: (0..layers)
                .map(|l| {
                    let i = (b * layers + l) * 3;
                    [
                        rec.layer_gates[i],
                        rec.layer_gates[i + 1],
                        rec.layer_gates[i + 2],
                    ]
                })
                .collect(),
            layer_levels: (0..layers)
                .map(|l| {
                    let i = (b * layers + l) * 3;
                    let v = |x: f64| (!x.is_nan()).then_some(x);
                    [
                        v(rec.layer_levels[i]),
                        v(rec.layer_levels[i + 1]),
                        v(rec.layer_levels[i + 2]),
                    ]
                })
                .collect(),
        });
    }

    let sum = |f: fn(&TimeRow) -> u64| rows.iter().map(f).sum::<u64>();
    let logical_requests = sum(|r| r.offered);
    let succeeded = sum(|r| r.succeeded);
    let failed = sum(|r| r.failed);
    let dependency_attempts = sum(|r| r.dependency_attempts);
    let retries = sum(|r| r.retries);
    let all_attempts: u64 = rec.layer_attempts.iter().sum();
    let mut failed_by = [0; Reason::COUNT];
    for r in &rows {
        for (t, v) in failed_by.iter_mut().zip(r.failed_by) {
            *t += v;
        }
    }
    let mut layer_attempts = vec![0; layers];
    let mut layer_retries = vec![0; layers];
    let mut layer_gates = vec![[0; 3]; layers];
    for r in &rows {
        for l in 0..layers {
            layer_attempts[l] += r.layer_attempts[l];
            layer_retries[l] += r.layer_retries[l];
            for (total, v) in layer_gates[l].iter_mut().zip(r.layer_gates[l]) {
                *total += v;
            }
        }
    }
    let run_secs = info.end.max(1) as f64 / NS_PER_S as f64;
    // Only full buckets judge peaks: a short last bucket would be noise.
    let full = |b: usize| rec.len_of(b) == rec.bucket_len();
    let peak_amplification = rows
        .iter()
        .enumerate()
        .filter(|(b, r)| full(*b) && r.offered > 0)
        .map(|(_, r)| r.dependency_attempts as f64 / r.offered as f64)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let peak_load_ratio = rows
        .iter()
        .enumerate()
        .filter(|(b, _)| full(*b))
        .filter_map(|(_, r)| r.load_ratio)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let hist_ms = |h: &hdrhistogram::Histogram<u64>, q: f64| {
        (!h.is_empty()).then(|| us_to_ms(h.value_at_quantile(q)))
    };
    let (baseline, mut recovery_time_s, mut recovered, mut undecided) =
        recovery(rec, &rows, &ctx.recovery, warm_until(ctx));
    let aborted = info.aborted.is_some();
    if aborted {
        (recovery_time_s, recovered, undecided) = (None, None, None);
    }
    let after = after_incident(rec, &rows, ctx, &capacity, baseline.unwrap_or(1.0));
    let (hung, hung_out) = rec.hung(info.end, hung_bound(rec, ctx));
    let (succeeded_out, failed_out) = (
        rec.totals.succeeded_outside,
        rec.totals.failed_outside + hung_out,
    );
    let summary = Summary {
        logical_requests,
        succeeded,
        failed,
        in_flight_at_end: rec.open_requests(),
        hung_at_end: hung,
        // None when no request ended and none hung: 0/0 is not 0%. A hung
        // request counts as failed (it waited past the bound), so a run
        // whose every request hung earned its 0.
        success_rate: (!aborted && succeeded + failed + hung > 0)
            .then(|| succeeded as f64 / (succeeded + failed + hung) as f64),
        dependency_attempts,
        retries,
        retry_ratio: (all_attempts > 0).then(|| retries as f64 / all_attempts as f64),
        retry_delay_p50_ms: hist_ms(&rec.retry_delay, 0.5),
        retry_delay_p99_ms: hist_ms(&rec.retry_delay, 0.99),
        amplification: (logical_requests > 0)
            .then(|| dependency_attempts as f64 / logical_requests as f64),
        peak_amplification,
        goodput: succeeded as f64 / run_secs,
        latency_mean_ms: (!rec.latency.is_empty()).then(|| rec.latency.mean() / 1000.0),
        latency_p50_ms: hist_ms(&rec.latency, 0.5),
        latency_p99_ms: hist_ms(&rec.latency, 0.99),
        latency_p999_ms: hist_ms(&rec.latency, 0.999),
        // None without workers, nor with none serving or draining over
        // the whole run (an autoscaled fleet at zero): busy time of no
        // worker time.
        dependency_utilization: Some(
            run_secs * ctx.concurrency as f64 * focus_share(rec, ctx, None).1,
        )
        .filter(|&workers| workers > 0.0)
        .map(|workers| rec.busy.total_secs() / workers),
        dependency_queue_wait_mean_ms: (rec.totals.queue_wait_count > 0).then(|| {
            rec.totals.queue_wait_sum_ns as f64 / rec.totals.queue_wait_count as f64 / 1e6
        }),
        peak_load_ratio,
        recovery_time_s,
        recovered,
        undecided,
        orphaned_work_s: rec.totals.orphaned_work_ns as f64 / 1e9,
        events: info.events,
        refused: after.refused,
        success_rate_outside_incidents: (!aborted && succeeded_out + failed_out > 0)
            .then(|| succeeded_out as f64 / (succeeded_out + failed_out) as f64),
        // A run stopped by a guard rail never reached "after" (nor the
        // rest of its time outside the incidents).
        latency_p99_outside_ms: hist_ms(rec.latency_outside.as_ref().unwrap_or(&rec.latency), 0.99)
            .filter(|_| !aborted),
        peak_load_ratio_after: after.peak_load_ratio_after.filter(|_| !aborted),
        peak_effective_load_ratio: after.peak_effective_load_ratio,
        time_to_full_goodput_s: if aborted {
            None
        } else {
            after.time_to_full_goodput_s
        },
        slo: None,
        pools: ctx.edges.iter().any(|e| e.pool),
        failed_by,
        shed: sum(|r| r.shed),
        blackholed: sum(|r| r.blackholed),
        queue_timeouts: sum(|r| r.queue_timeouts),
        orphaned: sum(|r| r.orphaned),
        commits: sum(|r| r.commits),
        duplicate_side_effects: sum(|r| r.duplicate_side_effects),
        ambiguous_successes: sum(|r| r.ambiguous_successes),
        deduplicated: sum(|r| r.deduplicated),
        cancelled: sum(|r| r.cancelled),
        cancelled_work_s: rec.totals.cancelled_work_ns as f64 / 1e9,
        probes: sum(|r| r.probes),
        attempts_after_deadline: rec.totals.late_attempts,
        committed_requests: rec.totals.committed_requests,
        messages: sum(|r| r.messages),
        deliveries: sum(|r| r.deliveries),
        redeliveries: sum(|r| r.redeliveries),
        duplicate_deliveries: sum(|r| r.duplicate_deliveries),
        processed: sum(|r| r.processed),
        dead_lettered: sum(|r| r.dead_lettered),
        messages_open: rec.totals.messages_open,
        dead_letter_age_mean_s: {
            let n = sum(|r| r.dead_lettered);
            (n > 0).then(|| rec.totals.dead_letter_age_ns as f64 / n as f64 / 1e9)
        },
        message_latency_p50_ms: hist_ms(&rec.message_latency, 0.5),
        message_latency_p99_ms: hist_ms(&rec.message_latency, 0.99),
        layer_orphaned: (0..layers)
            .map(|l| rows.iter().map(|r| r.layer_orphaned[l]).sum())
            .collect(),
        layer_calls: rec.totals.layer_calls.clone(),
        layer_orphaned_work_s: rec
            .totals
            .layer_orphaned_work_ns
            .iter()
            .map(|&ns| ns as f64 / 1e9)
            .collect(),
        layer_attempts,
        layer_retries,
        layer_gates,
        baseline_success_ratio: baseline,
        capacity_per_s: capacity
            .run
            .map(|c| c * focus_share(rec, ctx, None).0)
            .filter(|&c| c > 0.0),
        aborted: info.aborted,
        event_digest: info.digest,
        completion_time_s: info.completion.map(|c| c as f64 / 1e9),
    };
    (rows, summary)
}

/// The figures after the incident, of the focus service (README,
/// "After the incident").
struct After {
    refused: u64,
    peak_load_ratio_after: Option<f64>,
    peak_effective_load_ratio: Option<f64>,
    time_to_full_goodput_s: Option<f64>,
}

fn after_incident(
    rec: &Recorder,
    rows: &[TimeRow],
    ctx: &RunContext,
    capacity: &FocusCapacity,
    baseline: f64,
) -> After {
    let bucket = rec.bucket_len();
    let full = |b: usize| rec.len_of(b) == bucket;
    let svc = &rec.svc;
    let focus = ctx.focus.filter(|&f| f < svc.services);
    let refused_in = |b: usize| focus.map_or(0, |f| svc.counts[b * svc.services + f].refused);
    let factors: &[f64] = focus
        .and_then(|f| ctx.capacity_factors.get(f))
        .map_or(&[], Vec::as_slice);
    let end = ctx.recovery.trigger_end;
    // Buckets that start at or after the end of the trigger.
    let first_after = end.map_or(0, |e| e.div_ceil(bucket) as usize);
    let max = |acc: Option<f64>, v: f64| Some(acc.map_or(v, |a: f64| a.max(v)));
    let peak_load_ratio_after = rows
        .iter()
        .enumerate()
        .filter(|(b, _)| *b >= first_after && full(*b))
        .filter_map(|(_, r)| r.load_ratio)
        .fold(None, max);
    let peak_effective_load_ratio = {
        let secs = bucket as f64 / NS_PER_S as f64;
        rows.iter()
            .enumerate()
            .filter(|(b, _)| full(*b))
            .filter_map(|(b, r)| {
                let cap = capacity.per_bucket.get(b).copied().flatten()?;
                let factor = factors.get(b).copied().unwrap_or(1.0);
                // No capacity at all (down, blackholed): nothing to
                // compare with; what arrived was turned away.
                if factor <= 1e-9 {
                    return None;
                }
                // A measured hold already holds the slower own work.
                let factor = if capacity.held { 1.0 } else { factor };
                let let_in = r.dependency_attempts - refused_in(b).min(r.dependency_attempts);
                let let_in = let_in.saturating_sub(r.blackholed);
                Some(held_ratio(
                    let_in as f64 / secs / (cap * factor * focus_share(rec, ctx, Some(b)).0),
                ))
            })
            .fold(None, max)
    };
    // Full goodput is a share of the baseline's: with a baseline of 0
    // (nothing succeeded before the trigger) every span would reach it.
    let end = end.filter(|_| baseline > 0.0);
    let time_to_full_goodput_s = end.and_then(|end| {
        let healthy = |offered: u64, succeeded: u64| {
            offered == 0 || succeeded as f64 >= ctx.recovery.threshold * baseline * offered as f64
        };
        // Judged a whole second at a time (buckets of a second or more one
        // by one): a 100 ms bucket holds too few requests for its success
        // ratio to say anything, and requests that end in the next bucket
        // would fail it by chance.
        let span = NS_PER_S.div_ceil(bucket).max(1) as usize;
        let spans: Vec<usize> = (first_after..rows.len())
            .step_by(span)
            .filter(|&b| b + span <= rows.len() && (b..b + span).all(full))
            .collect();
        spans.last()?;
        // No request offered after the trigger: every second would pass
        // for healthy, and "full goodput at once" would be said of a
        // system nobody asked anything (the clients had stopped). There
        // is nothing to judge (as recovery's `Undecided::NoTraffic`).
        // Seconds without requests at the end of a run that had some
        // after the trigger still count as healthy: the system served
        // what it was asked, then nothing more was asked.
        let offered_after: u64 = (spans.iter())
            .map(|&b| rows[b..b + span].iter().map(|r| r.offered).sum::<u64>())
            .sum();
        if offered_after == 0 {
            return None;
        }
        let mut settled = None;
        for &b in spans.iter().rev() {
            let (offered, succeeded) = (rows[b..b + span].iter())
                .fold((0, 0), |(o, s), r| (o + r.offered, s + r.succeeded));
            if healthy(offered, succeeded) {
                settled = Some(b);
            } else {
                break;
            }
        }
        let b = settled?;
        Some(((b as u64 * bucket).max(end) - end) as f64 / NS_PER_S as f64)
    });
    After {
        refused: (0..rows.len()).map(refused_in).sum(),
        peak_load_ratio_after,
        peak_effective_load_ratio,
        time_to_full_goodput_s,
    }
}

/// Returns (baseline ratio, none when nothing was offered before the
/// trigger; recovery time in seconds; recovered; why there is no verdict
/// when the run is too short for one).
/// When the warm-up after the trigger ends: the end of the disturbed
/// time (an incident and the warm-up after it) the trigger's end falls in,
/// when it goes on after it.
fn warm_until(ctx: &RunContext) -> Option<Nanos> {
    let end = ctx.recovery.trigger_end?;
    ctx.incident_windows
        .iter()
        .find(|&&(from, to)| from <= end && end < to)
        .map(|&(_, to)| to)
}

/// The baseline, the recovery time, the verdict and why there is none
/// (see the module's documentation); `warm_until` is when the warm-up
/// after the trigger ends, if one follows it.
fn recovery(
    rec: &Recorder,
    rows: &[TimeRow],
    c: &RecoveryCriteria,
    warm_until: Option<Nanos>,
) -> (Option<f64>, Option<f64>, Option<bool>, Option<Undecided>) {
    let bucket = rec.bucket_len();
    let full: Vec<usize> = (0..rows.len())
        .filter(|&b| rec.len_of(b) == bucket)
        .collect();
    let ratio_of = |bs: &mut dyn Iterator<Item = usize>| {
        let (mut ok, mut offered) = (0u64, 0u64);
        for b in bs {
            ok += rows[b].succeeded;
            offered += rows[b].offered;
        }
        (offered > 0).then(|| ok as f64 / offered as f64)
    };
    let start = c.trigger_start.unwrap_or(u64::MAX);
    let before: Vec<usize> = full
        .iter()
        .copied()
        .filter(|&b| (b as u64 + 1) * bucket <= start)
        .collect();
    let skip = usize::from(before.len() > 1);
    let measured = ratio_of(&mut before.iter().copied().skip(skip)).map(|r| r.min(1.0));
    let baseline = measured.unwrap_or(1.0);
    let Some(end) = c.trigger_end else {
        return (measured, None, None, None);
    };
    if baseline <= 0.0 {
        return (measured, None, None, Some(Undecided::NoBaseline));
    }
    let w = c.window.div_ceil(bucket).max(1) as usize;
    let b0 = end.div_ceil(bucket) as usize;
    let last_full = full.last().copied();
    let Some(last) = last_full.filter(|&l| l + 1 >= b0 + w) else {
        // Not even one window fits after the trigger: no verdict.
        let secs = |ns: u64| ns as f64 / NS_PER_S as f64;
        let covered = last_full.map_or(0, |l| (l as u64 + 1) * bucket);
        let undecided = Undecided::TooShort {
            after_s: secs(covered.saturating_sub(end)),
            window_s: secs(w as u64 * bucket),
        };
        return (measured, None, None, Some(undecided));
    };
    if ratio_of(&mut (b0..=last).filter(|&b| rec.len_of(b) == bucket)).is_none() {
        return (measured, None, None, Some(Undecided::NoTraffic));
    }
    let healthy =
        |b: usize| ratio_of(&mut (b + 1 - w..=b)).is_none_or(|r| r >= c.threshold * baseline);
    let first = b0 + w - 1;
    let mut settled = last + 1;
    for b in (first..=last).rev() {
        if healthy(b) {
            settled = b;
        } else {
            break;
        }
    }
    if settled > last {
        let covered = (last as u64 + 1) * bucket;
        if let Some(warm) = warm_until.filter(|&w| covered < w) {
            let secs = |ns: u64| ns as f64 / NS_PER_S as f64;
            let undecided = Undecided::WarmingUp {
                after_s: secs(covered - end),
                warming_s: secs(warm - covered),
            };
            return (measured, None, None, Some(undecided));
        }
        return (measured, None, Some(false), None);
    }
    let window_start = ((settled + 1 - w) as u64 * bucket).max(end);
    (
        measured,
        Some((window_start - end) as f64 / NS_PER_S as f64),
        Some(true),
        None,
    )
}

#[cfg(test)]
mod tests {
    //! The recovery verdict on constructed rows, clause by clause of the
    //! README's definition ("Recovery and metastability").

    use super::*;
    use crate::engine::NS_PER_MS;

    const S: Nanos = NS_PER_S;

    /// A run of `duration` in buckets of `bucket` whose bucket b offered
    /// 100 requests of which `ok[b]` succeeded (0 offered where `ok[b]`
    /// is `None`).
    fn recorder(duration: Nanos, bucket: Nanos, ok: &[Option<u64>]) -> Recorder {
        let mut rec = Recorder::new(duration, bucket, 1);
        assert_eq!(rec.buckets.len(), ok.len(), "one entry per bucket");
        for (b, ok) in ok.iter().enumerate() {
            if let Some(ok) = *ok {
                rec.buckets[b].offered = 100;
                rec.buckets[b].succeeded = ok;
            }
        }
        rec
    }

    fn criteria(start: Option<Nanos>, end: Option<Nanos>) -> RecoveryCriteria {
        RecoveryCriteria {
            trigger_start: start,
            trigger_end: end,
            threshold: 0.9,
            window: 5 * S,
        }
    }

    /// (baseline, recovery time, recovered) as `summary.csv` gives them.
    fn undecided(rec: &Recorder, c: RecoveryCriteria) -> Option<Undecided> {
        let rows: Vec<TimeRow> = tabulate(rec, &info_of(rec), &ctx_of(c)).0;
        recovery(rec, &rows, &c, None).3
    }

    fn info_of(rec: &Recorder) -> RunInfo {
        RunInfo {
            end: rec.duration(),
            ..RunInfo::default()
        }
    }

    fn ctx_of(c: RecoveryCriteria) -> RunContext {
        RunContext {
            slo_latency: None,
            capacity_per_sec: 100.0,
            concurrency: 1,
            recovery: c,
            layer_names: vec!["client".into()],
            services: vec![],
            edges: vec![],
            incident_windows: vec![],
            capacity_factors: vec![],
            focus: None,
        }
    }

    fn verdict(rec: &Recorder, c: RecoveryCriteria) -> (Option<f64>, Option<f64>, Option<bool>) {
        let (_, s) = tabulate(rec, &info_of(rec), &ctx_of(c));
        (s.baseline_success_ratio, s.recovery_time_s, s.recovered)
    }

    /// `n` buckets of `ok` successes per 100.
    fn run_of(n: usize, ok: u64) -> Vec<Option<u64>> {
        vec![Some(ok); n]
    }

    #[test]
    fn baseline_skips_the_first_full_bucket_before_the_trigger() {
        // Bucket 0 (warm-up) 0%, buckets 1..4 80%, bucket 4 ends exactly
        // at the trigger's start (5 s) and counts; bucket 5 does not.
        let mut ok = vec![Some(0), Some(80), Some(80), Some(80), Some(80), Some(10)];
        ok.extend(run_of(14, 100));
        let rec = recorder(20 * S, S, &ok);
        let (baseline, _, _) = verdict(&rec, criteria(Some(5 * S), None));
        assert_eq!(baseline, Some(0.8));
        // A trigger starting inside bucket 4 leaves it out.
        let mut ok2 = ok.clone();
        ok2[4] = Some(40);
        let rec = recorder(20 * S, S, &ok2);
        assert_eq!(
            verdict(&rec, criteria(Some(4_500 * NS_PER_MS), None)).0,
            Some(0.8)
        );
        assert_eq!(verdict(&rec, criteria(Some(5 * S), None)).0, Some(0.7));
        // With a single bucket before the trigger, that bucket is the
        // baseline (nothing is skipped).
        assert_eq!(verdict(&rec, criteria(Some(S), None)).0, Some(0.0));
        // Two buckets: the second alone.
        assert_eq!(verdict(&rec, criteria(Some(2 * S), None)).0, Some(0.8));
        // None before (the trigger starts at once): a ratio of nothing.
        assert_eq!(verdict(&rec, criteria(Some(0), None)).0, None);
        assert_eq!(verdict(&rec, criteria(Some(S - 1), None)).0, None);
        // No trigger at all: every full bucket but the first.
        let all: f64 = (80.0 * 3.0 + 40.0 + 10.0 + 1400.0) / 1900.0;
        assert!((verdict(&rec, criteria(None, None)).0.unwrap() - all).abs() < 1e-12);
    }

    #[test]
    fn baseline_is_pooled_capped_at_one_and_ignores_empty_and_short_buckets() {
        // Pooled: 50/100 and 0 offered and 100/100 → 150/200.
        let ok = vec![Some(0), Some(50), None, Some(100), Some(0)];
        let rec = recorder(5 * S, S, &ok);
        assert_eq!(verdict(&rec, criteria(Some(4 * S), None)).0, Some(0.75));
        // More successes than requests offered in the buckets (requests
        // offered earlier): the ratio is capped at 1.
        let mut rec = recorder(5 * S, S, &ok);
        rec.buckets[1].succeeded = 300;
        assert_eq!(verdict(&rec, criteria(Some(4 * S), None)).0, Some(1.0));
        // Nothing offered before the trigger: a ratio of nothing.
        let rec = recorder(5 * S, S, &[Some(0), None, None, Some(0), Some(0)]);
        assert_eq!(verdict(&rec, criteria(Some(3 * S), None)).0, None);
        // A short last bucket never counts (a 4.5 s run, no trigger).
        let rec = recorder(
            4_500 * NS_PER_MS,
            S,
            &[Some(0), Some(60), Some(60), Some(60), Some(0)],
        );
        assert_eq!(verdict(&rec, criteria(None, None)).0, Some(0.6));
    }

    #[test]
    fn no_trigger_end_means_no_verdict() {
        let rec = recorder(10 * S, S, &run_of(10, 100));
        assert_eq!(
            verdict(&rec, criteria(Some(2 * S), None)),
            (Some(1.0), None, None)
        );
        assert_eq!(verdict(&rec, criteria(None, None)), (Some(1.0), None, None));
    }

    /// Baseline 1 (buckets 0..9 at 100%), trigger 10–20 s, then `after`.
    fn storm(after: &[Option<u64>]) -> Recorder {
        let mut ok = run_of(10, 100);
        ok.extend(run_of(10, 0));
        ok.extend_from_slice(after);
        recorder(ok.len() as u64 * S, S, &ok)
    }

    fn trigger() -> RecoveryCriteria {
        criteria(Some(10 * S), Some(20 * S))
    }

    #[test]
    fn recovery_time_is_the_start_of_the_first_window_that_stays_healthy() {
        // 4 more bad seconds (20..23 s), then good: a 5 s window holding
        // one bad bucket is 80% < 90%; the first healthy one is [24, 29).
        let mut after = run_of(4, 0);
        after.extend(run_of(16, 100));
        assert_eq!(
            verdict(&storm(&after), trigger()),
            (Some(1.0), Some(4.0), Some(true))
        );
        // The window's ratio is pooled: bad buckets at 50% make [23, 28)
        // 450/500 = 90%, healthy exactly at the threshold: 3 s.
        let mut after = run_of(4, 50);
        after.extend(run_of(16, 100));
        assert_eq!(
            verdict(&storm(&after), trigger()),
            (Some(1.0), Some(3.0), Some(true))
        );
        // Healthy from the trigger's end: 0 s.
        assert_eq!(
            verdict(&storm(&run_of(20, 100)), trigger()),
            (Some(1.0), Some(0.0), Some(true))
        );
    }

    #[test]
    fn the_threshold_is_a_factor_of_the_baseline_and_inclusive() {
        // Baseline 50% (buckets 1..9); after the trigger 45% = 0.9 × 50%:
        // healthy (at least the threshold); 44%: not.
        let after = |pct: u64| {
            let mut ok = vec![Some(0)];
            ok.extend(run_of(9, 50));
            ok.extend(run_of(10, 0));
            ok.extend(run_of(20, pct));
            recorder(40 * S, S, &ok)
        };
        assert_eq!(
            verdict(&after(45), trigger()),
            (Some(0.5), Some(0.0), Some(true))
        );
        assert_eq!(
            verdict(&after(44), trigger()),
            (Some(0.5), None, Some(false))
        );
        // Another threshold moves the line: 0.85 × 50% = 42.5%.
        let mut c = trigger();
        c.threshold = 0.85;
        assert_eq!(verdict(&after(43), c), (Some(0.5), Some(0.0), Some(true)));
        assert_eq!(verdict(&after(42), c), (Some(0.5), None, Some(false)));
    }

    #[test]
    fn a_dip_after_a_healthy_spell_restarts_the_clock() {
        // Healthy from 20 s, a bad second at 30 s, healthy after: the
        // windows holding 30 s are [26, 31) … [30, 35), all 80%; the first
        // window from which every one is healthy starts at 31 s.
        let mut after = run_of(10, 100);
        after.push(Some(0));
        after.extend(run_of(15, 100));
        assert_eq!(
            verdict(&storm(&after), trigger()),
            (Some(1.0), Some(11.0), Some(true))
        );
        // A dip in the very last window: never recovered.
        let mut after = run_of(20, 100);
        after.push(Some(0));
        assert_eq!(
            verdict(&storm(&after), trigger()),
            (Some(1.0), None, Some(false))
        );
    }

    #[test]
    fn empty_windows_are_healthy_and_the_window_is_whole_buckets() {
        // Empty windows between requests: nothing failed in them (no
        // request at all after the trigger is undecided, below).
        let mut after = vec![None; 10];
        after[9] = Some(100);
        assert_eq!(
            verdict(&storm(&after), trigger()),
            (Some(1.0), Some(0.0), Some(true))
        );
        // A 4.5 s window is 5 buckets of 1 s (rounded up): bad buckets at
        // 20..23 and good from 24 give [24, 29) → 4 s, as with 5 s; a
        // 3.5 s window is 4 buckets: [24, 28).
        let mut after = run_of(4, 0);
        after.extend(run_of(10, 100));
        let mut c = trigger();
        c.window = 4_500 * NS_PER_MS;
        assert_eq!(
            verdict(&storm(&after), c),
            (Some(1.0), Some(4.0), Some(true))
        );
        c.window = 3_500 * NS_PER_MS;
        assert_eq!(
            verdict(&storm(&after), c),
            (Some(1.0), Some(4.0), Some(true))
        );
        // A window shorter than a bucket is one bucket.
        c.window = 10 * NS_PER_MS;
        assert_eq!(
            verdict(&storm(&after), c),
            (Some(1.0), Some(4.0), Some(true))
        );
    }

    #[test]
    fn a_trigger_ending_inside_a_bucket_measures_from_its_end() {
        // The trigger ends at 20.5 s: the first window starts with bucket
        // 21 (the first whole bucket after it); healthy from there: 0.5 s.
        let mut ok = run_of(10, 100);
        ok.extend(run_of(11, 0));
        ok.extend(run_of(10, 100));
        let rec = recorder(31 * S, S, &ok);
        let c = criteria(Some(10 * S), Some(20_500 * NS_PER_MS));
        assert_eq!(verdict(&rec, c), (Some(1.0), Some(0.5), Some(true)));
        // Healthy from bucket 23: 2.5 s.
        let mut ok = run_of(10, 100);
        ok.extend(run_of(13, 0));
        ok.extend(run_of(10, 100));
        let rec = recorder(33 * S, S, &ok);
        assert_eq!(verdict(&rec, c), (Some(1.0), Some(2.5), Some(true)));
    }

    /// F5: a run that ends unhealthy while the dependency is still warming
    /// up after the incident is undecided, not "never"; once the warm-up
    /// is over within the run, the same rows are "never".
    #[test]
    fn a_run_ending_in_the_warm_up_is_undecided() {
        let c = trigger();
        let rec = storm(&run_of(10, 0));
        let judged = |warm: Nanos| {
            let ctx = RunContext {
                incident_windows: vec![(10 * S, warm)],
                ..ctx_of(c)
            };
            let (rows, s) = tabulate(&rec, &info_of(&rec), &ctx);
            let why = recovery(&rec, &rows, &c, warm_until(&ctx)).3;
            (s.recovered, s.recovery_time_s, why)
        };
        // The trigger ends at 20 s, the run at 30 s, warm-up until 45 s.
        assert_eq!(
            judged(45 * S),
            (
                None,
                None,
                Some(Undecided::WarmingUp {
                    after_s: 10.0,
                    warming_s: 15.0
                })
            )
        );
        // Warm-up over at 30 s (the run's end) or before: never.
        assert_eq!(judged(30 * S), (Some(false), None, None));
        assert_eq!(judged(25 * S), (Some(false), None, None));
        // No warm-up after the trigger (the window ends with it): never.
        assert_eq!(judged(20 * S), (Some(false), None, None));
        // Recovered while still warming up: recovered.
        let back = storm(&run_of(10, 100));
        let ctx = RunContext {
            incident_windows: vec![(10 * S, 45 * S)],
            ..ctx_of(c)
        };
        let (_, s) = tabulate(&back, &info_of(&back), &ctx);
        assert_eq!((s.recovered, s.recovery_time_s), (Some(true), Some(0.0)));
    }

    /// A run that ends before one full window after the trigger could not
    /// show recovery nor its absence: no verdict, and why.
    #[test]
    fn a_run_too_short_for_one_window_after_the_trigger_is_undecided() {
        // The trigger ends at 20 s; one 5 s window needs buckets 20..24.
        let exactly = storm(&run_of(5, 100));
        assert_eq!(
            verdict(&exactly, trigger()),
            (Some(1.0), Some(0.0), Some(true))
        );
        assert_eq!(undecided(&exactly, trigger()), None);
        let short = storm(&run_of(4, 100));
        assert_eq!(verdict(&short, trigger()), (Some(1.0), None, None));
        assert_eq!(
            undecided(&short, trigger()),
            Some(Undecided::TooShort {
                after_s: 4.0,
                window_s: 5.0
            })
        );
        // A short last bucket does not complete the window.
        let mut ok = run_of(10, 100);
        ok.extend(run_of(10, 0));
        ok.extend(run_of(5, 100));
        let rec = recorder(24_500 * NS_PER_MS, S, &ok);
        assert_eq!(verdict(&rec, trigger()), (Some(1.0), None, None));
        assert_eq!(
            undecided(&rec, trigger()),
            Some(Undecided::TooShort {
                after_s: 4.0,
                window_s: 5.0
            })
        );
        // Even a run that ends with the trigger.
        let rec = storm(&run_of(0, 100));
        assert_eq!(
            undecided(&rec, trigger()),
            Some(Undecided::TooShort {
                after_s: 0.0,
                window_s: 5.0
            })
        );
    }

    #[test]
    fn an_aborted_run_has_no_verdict_and_no_success_rate() {
        let rec = storm(&run_of(20, 100));
        let info = RunInfo {
            end: rec.duration(),
            aborted: Some(Abort::Interrupted),
            ..RunInfo::default()
        };
        let ctx = RunContext {
            slo_latency: None,
            capacity_per_sec: 100.0,
            concurrency: 1,
            recovery: trigger(),
            layer_names: vec!["client".into()],
            services: vec![],
            edges: vec![],
            incident_windows: vec![],
            capacity_factors: vec![],
            focus: None,
        };
        let (_, s) = tabulate(&rec, &info, &ctx);
        assert_eq!(
            (s.recovery_time_s, s.recovered, s.success_rate),
            (None, None, None)
        );
        // Nor the figures of a time it never reached.
        assert_eq!(
            (s.peak_load_ratio_after, s.latency_p99_outside_ms),
            (None, None)
        );
        assert_eq!(s.success_rate_outside_incidents, None);
        assert_eq!(s.time_to_full_goodput_s, None);
        assert_eq!(s.baseline_success_ratio, Some(1.0));
        assert_eq!(s.aborted, Some(Abort::Interrupted));
        // The same rows, not stopped: every figure is there.
        let (_, s) = tabulate(&rec, &info_of(&rec), &ctx);
        assert!(s.peak_load_ratio_after.is_some() && s.recovered.is_some());
    }

    /// Empty buckets after the trigger would all look healthy ("recovered
    /// in 0 s"): a run in which no request was offered after the trigger
    /// has no verdict, and one request in a full bucket is enough for one.
    #[test]
    fn no_traffic_after_the_trigger_is_undecided() {
        let silent = storm(&[None; 10]);
        assert_eq!(verdict(&silent, trigger()), (Some(1.0), None, None));
        assert_eq!(undecided(&silent, trigger()), Some(Undecided::NoTraffic));
        let mut after = vec![None; 10];
        after[7] = Some(100);
        let one = storm(&after);
        assert_eq!(verdict(&one, trigger()), (Some(1.0), Some(0.0), Some(true)));
        assert_eq!(undecided(&one, trigger()), None);
    }

    /// A baseline of 0 (requests offered before the trigger, none
    /// succeeded) would make every window healthy: "recovered in 0 s" for
    /// a system that never served a request. No verdict, and no time to
    /// full goodput; the smallest baseline above 0 still gets one.
    #[test]
    fn nothing_succeeding_before_the_trigger_is_undecided() {
        let dead = recorder(30 * S, S, &run_of(30, 0));
        assert_eq!(verdict(&dead, trigger()), (Some(0.0), None, None));
        assert_eq!(undecided(&dead, trigger()), Some(Undecided::NoBaseline));
        let (_, s) = tabulate(&dead, &info_of(&dead), &ctx_of(trigger()));
        assert_eq!(s.time_to_full_goodput_s, None);
        // One success in the 900 requests of the baseline's buckets (the
        // first of the ten is left out): a baseline of 1/900, judged.
        let mut ok = run_of(30, 0);
        ok[5] = Some(1);
        let faint = recorder(30 * S, S, &ok);
        let (baseline, time, recovered) = verdict(&faint, trigger());
        assert_eq!(baseline, Some(1.0 / 900.0));
        assert_eq!(recovered, Some(false));
        assert_eq!(time, None);
        assert_eq!(undecided(&faint, trigger()), None);
    }
}
