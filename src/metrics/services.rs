//! What a run records per service and per call edge of its graph, and the
//! tables computed from it: `services.csv` (one row per run and service),
//! `services_timeseries.csv` (per run, bucket and service) and `calls.csv`
//! (per run and call edge).
//!
//! Per service, every request that arrives is counted once as an
//! *attempt* and ends in exactly one of: refused at the door (the service
//! is down: a connection error), vanished (blackholed), failed by an error
//! burst, shed (queue full), dropped at the queue's head (queue timeout),
//! served (its own work done), cancelled before service, or still inside
//! when the run ends. Forwarding services (a hop of a chain of layers)
//! only count arrivals.

use crate::engine::{NS_PER_S, Nanos};

use super::columns::held_ratio;
use super::gauge::Gauge;

/// Counters of one service in one time bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceCounts {
    /// Requests that arrived (every attempt and status probe).
    pub attempts: u64,
    /// Refused at the door while down (connection errors).
    pub refused: u64,
    /// Vanished in a blackhole.
    pub vanished: u64,
    /// Failed at once by an error burst.
    pub errors: u64,
    /// Shed because the queue was full.
    pub shed: u64,
    /// Rejected at once by the replica's adaptive concurrency limit.
    pub limited: u64,
    /// Dropped at the queue's head after waiting longer than its timeout.
    pub queue_timeouts: u64,
    /// Own work done (on a worker).
    pub served: u64,
    /// Removed from the queue, or stopped in service, by a caller's
    /// cancellation.
    pub cancelled: u64,
    /// Lost to a crash (`down`) while queued or in service.
    pub reset: u64,
}

/// What one replica of a service did over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaCounts {
    /// Its requests, counted as a service's are.
    pub counts: ServiceCounts,
    /// The most requests inside it at once.
    pub peak_inside: u32,
    /// Times a caller's outlier detection ejected it.
    pub ejections: u32,
    /// Queued or in service when the run ended.
    pub unserved_at_end: u64,
}

/// What the connection pools of one call edge did over a run (summed over
/// its caller instances' pools).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolCounts {
    /// Connections handed to a request, and given back.
    pub acquired: u64,
    pub released: u64,
    /// Requests that had to wait for a connection.
    pub waits: u64,
    /// Requests that waited the acquire timeout in vain.
    pub timeouts: u64,
    /// Connects sent to the callee, and those that failed.
    pub connects: u64,
    pub connect_failures: u64,
    /// Connections dropped because their replica went down.
    pub dropped: u64,
    /// When the run ended: connections carrying an attempt, and those
    /// established (idle or busy).
    pub held_at_end: u64,
    pub open_at_end: u64,
}

/// Per-service state of a recorder: counters per bucket, gauges, totals.
#[derive(Clone, Debug)]
pub struct ServiceMetrics {
    pub services: usize,
    /// `[bucket * services + service]`.
    pub counts: Vec<ServiceCounts>,
    /// Per service: requests waiting in its queue, busy workers, requests
    /// inside (queued, in service, or waiting for their calls).
    pub queue: Vec<Gauge>,
    pub busy: Vec<Gauge>,
    pub inside: Vec<Gauge>,
    /// Per service: queue waits (sum in ns, count).
    pub queue_wait: Vec<(u128, u64)>,
    /// Per service: times spent inside by requests that left (sum in ns,
    /// count), for Little's law.
    pub sojourn: Vec<(u128, u64)>,
    /// `[bucket * services + service]`: how long the workers given back in
    /// the bucket had been held (sum in ns, count).
    pub held: Vec<(u64, u64)>,
    /// Per edge: calls that succeeded, and that failed.
    pub edge_outcomes: Vec<[u64; 2]>,
    /// Per service, when the run ended: requests queued or in service
    /// (admitted, not yet served).
    pub unserved_at_end: Vec<u64>,
    /// Per replica (of every service, flat; see `Topology::replica`).
    pub replicas: Vec<ReplicaCounts>,
    /// `[bucket * services + service]`: replicas ejected by a caller's
    /// outlier detection at the bucket's end, and those of them that were
    /// not down or blackholed then.
    pub ejected: Vec<[u32; 2]>,
    /// Per service: its replicas over time when it autoscales (`None`:
    /// a fixed fleet).
    pub scaled: Vec<Option<ScaleLevels>>,
    /// Per edge: its connection pools' counters (all zero without a pool).
    pub pools: Vec<PoolCounts>,
    /// Per service: its replicas' adaptive concurrency limits over time
    /// (`None`: no adaptive limit).
    pub limits: Vec<Option<LimitLevels>>,
    /// Per service with a cache: per bucket, its lookups
    /// (`None`: no cache).
    pub caches: Vec<Option<Vec<CacheCounts>>>,
}

/// What a cache's lookups found: hits (answered by the cache), misses
/// (sent to the service's calls) and coalesced (waited for a miss of the
/// same key in flight).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    pub hits: u64,
    pub misses: u64,
    pub coalesced: u64,
}

impl CacheCounts {
    /// Every lookup: hits + misses + coalesced.
    pub fn lookups(&self) -> u64 {
        self.hits + self.misses + self.coalesced
    }

    /// Hits ÷ lookups; `None` without a lookup.
    pub fn hit_ratio(&self) -> Option<f64> {
        let n = self.lookups();
        (n > 0).then(|| self.hits as f64 / n as f64)
    }

    fn add(&mut self, o: &CacheCounts) {
        self.hits += o.hits;
        self.misses += o.misses;
        self.coalesced += o.coalesced;
    }
}

/// A service's adaptive concurrency limits over a run.
#[derive(Clone, Debug)]
pub struct LimitLevels {
    /// The sum of its replicas' limits, integrated over time.
    pub sum: Gauge,
    /// Its replicas (every replica an autoscaler may start included).
    pub replicas: u32,
}

impl LimitLevels {
    /// The mean limit per replica over bucket `b` (of length `len`).
    pub fn mean(&self, b: usize, len: Nanos) -> f64 {
        ratio(self.sum.mean(b, len), f64::from(self.replicas.max(1)))
    }
}

/// An autoscaled service's replicas over a run.
#[derive(Clone, Debug)]
pub struct ScaleLevels {
    /// Replicas serving, integrated over time (each bucket's mean): the
    /// capacity that takes new work.
    pub serving: Gauge,
    /// Replicas serving or draining, integrated over time: those whose
    /// workers may be busy, the denominator of the utilization (a
    /// draining replica still works through what it holds).
    pub working: Gauge,
    /// Per bucket: replicas serving and desired at the bucket's end.
    pub at_end: Vec<[u32; 2]>,
    value: [u32; 2],
    /// Buckets whose end values are final.
    filled: usize,
    bucket: Nanos,
}

impl ScaleLevels {
    fn new(bucket: Nanos, buckets: usize) -> Self {
        ScaleLevels {
            serving: Gauge::new(bucket, buckets),
            working: Gauge::new(bucket, buckets),
            at_end: vec![[0; 2]; buckets],
            value: [0; 2],
            filled: 0,
            bucket: bucket.max(1),
        }
    }

    /// The buckets that ended by `now` keep the values they ended with.
    fn fill(&mut self, upto: usize) {
        let upto = upto.min(self.at_end.len());
        while self.filled < upto {
            self.at_end[self.filled] = self.value;
            self.filled += 1;
        }
    }

    /// `serving` replicas serve, `working` serve or drain, and `desired`
    /// are wanted from `now` on.
    pub fn set(&mut self, now: Nanos, serving: u32, working: u32, desired: u32) {
        self.serving.set(now, u64::from(serving));
        self.working.set(now, u64::from(working));
        self.fill((now / self.bucket) as usize);
        self.value = [serving, desired];
    }

    /// The replicas wanted now.
    pub fn desired(&self) -> u32 {
        self.value[1]
    }

    fn finish(&mut self, end: Nanos) {
        self.serving.advance(end);
        self.working.advance(end);
        self.fill(self.at_end.len());
    }
}

impl ServiceMetrics {
    pub fn new(bucket: Nanos, buckets: usize, services: usize, edges: usize) -> Self {
        ServiceMetrics {
            services,
            counts: vec![ServiceCounts::default(); buckets * services],
            queue: (0..services).map(|_| Gauge::new(bucket, buckets)).collect(),
            busy: (0..services).map(|_| Gauge::new(bucket, buckets)).collect(),
            inside: (0..services).map(|_| Gauge::new(bucket, buckets)).collect(),
            queue_wait: vec![(0, 0); services],
            sojourn: vec![(0, 0); services],
            held: vec![(0, 0); buckets * services],
            edge_outcomes: vec![[0; 2]; edges],
            unserved_at_end: vec![0; services],
            replicas: Vec::new(),
            ejected: vec![[0; 2]; buckets * services],
            scaled: vec![None; services],
            limits: vec![None; services],
            caches: vec![None; services],
            pools: vec![PoolCounts::default(); edges],
        }
    }

    /// Service `s` autoscales: its replicas are recorded over time.
    pub fn autoscaled(&mut self, s: usize, bucket: Nanos) {
        let buckets = self.counts.len().checked_div(self.services).unwrap_or(0);
        if let Some(x) = self.scaled.get_mut(s) {
            *x = Some(ScaleLevels::new(bucket, buckets));
        }
    }

    /// Service `s` has an adaptive concurrency limit on each of its
    /// `replicas`, all at `initial` from the start.
    pub fn limited(&mut self, s: usize, bucket: Nanos, replicas: u32, initial: u32) {
        let buckets = self.counts.len().checked_div(self.services).unwrap_or(0);
        if let Some(x) = self.limits.get_mut(s) {
            let mut sum = Gauge::new(bucket, buckets);
            sum.set(0, u64::from(initial) * u64::from(replicas));
            *x = Some(LimitLevels { sum, replicas });
        }
    }

    /// Service `s` has a cache: its lookups are counted per bucket.
    pub fn cached(&mut self, s: usize) {
        let buckets = self.counts.len().checked_div(self.services).unwrap_or(0);
        if let Some(x) = self.caches.get_mut(s) {
            *x = Some(vec![CacheCounts::default(); buckets]);
        }
    }

    /// The memory `new` allocates.
    pub fn state_bytes(buckets: u64, services: usize, edges: usize) -> u64 {
        let per_bucket = std::mem::size_of::<ServiceCounts>() as u64 + 3 * 16 + 16 + 4;
        buckets
            .saturating_mul(services as u64)
            .saturating_mul(per_bucket)
            .saturating_add(edges as u64 * 16)
    }

    #[inline]
    pub fn at(&mut self, b: usize, s: usize) -> &mut ServiceCounts {
        &mut self.counts[b * self.services + s]
    }

    pub fn advance(&mut self, end: Nanos) {
        for g in self
            .queue
            .iter_mut()
            .chain(self.busy.iter_mut())
            .chain(self.inside.iter_mut())
        {
            g.advance(end);
        }
        for l in self.scaled.iter_mut().flatten() {
            l.finish(end);
        }
        for l in self.limits.iter_mut().flatten() {
            l.sum.advance(end);
        }
    }
}

/// What the service tables are judged against, per service.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceInfo {
    pub name: String,
    /// Requests per second at full capacity (None: unlimited workers or no
    /// own work).
    pub capacity_per_s: Option<f64>,
    pub concurrency: Option<u32>,
    /// Its workers stay busy while the request's calls are out (thread per
    /// request): how long a worker is held then depends on the services
    /// below, so its capacity is measured from the run rather than taken
    /// from its own service time (see [`graph_tables`]).
    pub holds_while_calling: bool,
    /// Its place in the tables (by depth from the clients).
    pub rank: usize,
    /// Its replicas, and per bucket those serving (neither down nor
    /// blackholed) at the bucket's end (empty: all of them, always).
    pub replicas: u32,
    pub up: Vec<u32>,
}

/// Names of a call edge, per edge.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeInfo {
    pub name: String,
    /// The calling service, or `clients`.
    pub caller: String,
    pub callee: String,
    /// The call has a connection pool.
    pub pool: bool,
}

/// One row of `services_timeseries.csv` (without variant and replicate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceRow {
    pub t_s: f64,
    /// The bucket starts at or after the time a guard rail stopped the run:
    /// its cells are empty (`TimeRow::after_stop`).
    pub after_stop: bool,
    pub service: usize,
    pub counts: ServiceCounts,
    /// Attempts per second ÷ capacity (None without a capacity).
    pub load_ratio: Option<f64>,
    /// Mean busy workers ÷ workers (None with unlimited workers).
    pub utilization: Option<f64>,
    pub queue_depth: f64,
    /// Mean requests inside: queued, in service or waiting for calls.
    pub in_flight: f64,
    /// Replicas healthy at the bucket's end: neither down, blackholed nor
    /// ejected by a caller's outlier detection.
    pub replicas: u32,
    /// Replicas ejected by a caller's outlier detection at the bucket's
    /// end.
    pub ejected: u32,
    /// An autoscaled service: the replicas its autoscaler wanted at the
    /// bucket's end (serving, provisioning or not yet started); `None`
    /// for a fixed fleet.
    pub desired_replicas: Option<u32>,
    /// A service with an adaptive concurrency limit: the mean of its
    /// replicas' limits over the bucket; `None` without one.
    pub concurrency_limit: Option<f64>,
    /// A service with a cache: its lookups in the bucket; `None` without
    /// one.
    pub cache: Option<CacheCounts>,
}

/// One row of `services.csv` (without variant and replicate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceSummary {
    pub service: usize,
    pub totals: ServiceCounts,
    /// Attempts ÷ logical requests; `None` without a logical request.
    pub amplification: Option<f64>,
    /// The highest bucket's attempts per second ÷ capacity.
    pub peak_load_ratio: Option<f64>,
    /// The same over the full buckets from the end of the trigger on.
    pub peak_load_ratio_after: Option<f64>,
    /// The highest full bucket's requests let in (not refused, not
    /// vanished) per second ÷ the capacity the service had then (buckets
    /// without any left out).
    pub peak_effective_load_ratio: Option<f64>,
    pub utilization: Option<f64>,
    pub capacity_per_s: Option<f64>,
    pub queue_wait_mean_ms: Option<f64>,
    /// Mean requests inside over the run.
    pub in_flight_mean: f64,
    /// Mean time inside of the requests that left (ms).
    pub sojourn_mean_ms: Option<f64>,
    /// Requests inside when the run ended (queued, in service or waiting
    /// for their calls), and of them those not yet served.
    pub inside_at_end: u64,
    pub unserved_at_end: u64,
    /// A service with an adaptive concurrency limit: the mean of its
    /// replicas' limits over the run, and when the run ended.
    pub concurrency_limit_mean: Option<f64>,
    pub concurrency_limit_at_end: Option<f64>,
    /// A service with a cache: its lookups over the run; `None` without
    /// one.
    pub cache: Option<CacheCounts>,
}

/// One row of `calls.csv` (without variant and replicate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeSummary {
    pub edge: usize,
    pub calls: u64,
    pub attempts: u64,
    pub retries: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Attempts ÷ logical requests; `None` without a logical request.
    pub amplification: Option<f64>,
    /// Refusals by the budget, the throttle and the breaker.
    pub gates: [u64; 3],
    pub orphaned_attempts: u64,
    /// Its connection pools (all zero without a pool).
    pub pool: PoolCounts,
}

/// One row of `replicas.csv` (without variant and replicate): what one
/// replica of a service did over the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplicaRow {
    pub service: usize,
    /// Its index among its service's replicas, from 0.
    pub replica: u32,
    pub counts: ReplicaCounts,
}

/// The graph tables of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphTables {
    pub rows: Vec<ServiceRow>,
    pub services: Vec<ServiceSummary>,
    pub edges: Vec<EdgeSummary>,
    /// Per replica of every service, services in the order of `services`.
    pub replicas: Vec<ReplicaRow>,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

/// Requests per second service `s` could complete at full capacity over
/// `buckets`. For most services that is its workers ÷ its mean service
/// time (`info.capacity_per_s`). A thread-per-request service's worker is
/// held for its own work *and* the calls it waits for, so there it is
/// workers ÷ the mean time the workers given back over `buckets` had been
/// held; `None` when none was given back (nothing measured).
pub(super) fn measured_capacity(
    m: &ServiceMetrics,
    s: usize,
    info: &ServiceInfo,
    buckets: std::ops::Range<usize>,
) -> Option<f64> {
    if !info.holds_while_calling {
        return info.capacity_per_s;
    }
    let workers = info.concurrency? as f64;
    let (ns, n) = buckets
        .map(|b| m.held[b * m.services + s])
        .fold((0u128, 0u64), |(ns, n), (h, c)| (ns + h as u128, n + c));
    (n > 0 && ns > 0).then(|| workers * n as f64 * NS_PER_S as f64 / ns as f64)
}

/// Per-edge inputs from the recorder's layer arrays.
pub struct EdgeTotals<'a> {
    pub calls: &'a [u64],
    pub attempts: &'a [u64],
    pub retries: &'a [u64],
    pub gates: &'a [[u64; 3]],
    pub orphaned: &'a [u64],
}

/// When the figures after the incident start, and the capacity each
/// service had per bucket (`RunContext::capacity_factors`).
pub struct AfterIncident<'a> {
    /// When the run ended (`Recorder::end`): the figures are over the time
    /// simulated, and the buckets that start at or after it have empty
    /// rows.
    pub end: Nanos,
    /// A guard rail stopped the run: it never reached "after the
    /// incident" (`peak_load_ratio_after` is empty, as the summary's).
    pub aborted: bool,
    /// The first bucket that starts at or after the end of the trigger.
    pub first_bucket: usize,
    pub capacity_factors: &'a [Vec<f64>],
}

/// The graph tables of a run whose services recorded into `m`, over
/// buckets of `bucket` up to `end` (`len_of(b)` the length of bucket b).
pub fn tabulate_graph(
    m: &ServiceMetrics,
    services: &[ServiceInfo],
    edges: EdgeTotals<'_>,
    logical_requests: u64,
    bucket: Nanos,
    after: AfterIncident<'_>,
    len_of: impl Fn(usize) -> Nanos,
) -> GraphTables {
    let n = services.len().min(m.services);
    let services_info = services;
    let buckets = m.counts.len().checked_div(m.services).unwrap_or(0);
    let mut rows = Vec::with_capacity(buckets * n);
    // The time simulated: a run a guard rail stopped covers only part of
    // its buckets (the gauges integrate up to the stop).
    let run_ns: Nanos = (0..buckets)
        .map(&len_of)
        .sum::<Nanos>()
        .min(after.end.max(1));
    let run_secs = run_ns as f64 / NS_PER_S as f64;
    let mut peaks: Vec<Option<f64>> = vec![None; n];
    let mut peaks_after: Vec<Option<f64>> = vec![None; n];
    let mut peaks_effective: Vec<Option<f64>> = vec![None; n];
    let raise = |p: &mut Option<f64>, v: f64| *p = Some(p.map_or(v, |p: f64| p.max(v)));
    let capacity: Vec<Option<f64>> = (0..n)
        .map(|s| measured_capacity(m, s, &services[s], 0..buckets))
        .collect();
    // Services in the order of the tables (by depth from the clients).
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&s| (services[s].rank, s));
    for b in 0..buckets {
        let len = len_of(b);
        let secs = len as f64 / NS_PER_S as f64;
        let after_stop = b as u64 * bucket >= after.end;
        for &s in &order {
            let info = &services[s];
            let c = m.counts[b * m.services + s];
            let busy = m.busy[s].mean(b, len);
            // An autoscaled service: the fraction of its replicas serving
            // (on average over the bucket) scales its capacity; the
            // fraction serving or draining, the workers that may be busy
            // (so the utilization stays within [0, 1] while a busy
            // replica drains).
            let scaled = m.scaled.get(s).and_then(Option::as_ref);
            let slots = f64::from(info.replicas.max(1));
            let share = scaled.map_or(1.0, |l| ratio(l.serving.mean(b, len), slots));
            let working = scaled.map_or(1.0, |l| ratio(l.working.mean(b, len), slots));
            let utilization = info.concurrency.map(|w| ratio(busy, w as f64 * working));
            // A thread-per-request service: the capacity its workers had
            // at the hold times of this bucket, and never less loaded than
            // its workers were busy (a bucket where they were all held and
            // none came back).
            let cap = if info.holds_while_calling {
                measured_capacity(m, s, info, b..b + 1).or(capacity[s])
            } else {
                info.capacity_per_s
            }
            .map(|c| c * share);
            let load = cap.map(|cap| {
                let l = ratio(ratio(c.attempts as f64, secs), cap);
                held_ratio(match utilization {
                    Some(u) if info.holds_while_calling => l.max(u),
                    _ => l,
                })
            });
            if let Some(l) = load.filter(|_| !after_stop) {
                raise(&mut peaks[s], l);
            }
            if let (Some(l), Some(cap)) = (load, cap)
                && len == bucket
                && !after_stop
            {
                if b >= after.first_bucket {
                    raise(&mut peaks_after[s], l);
                }
                let factor = after
                    .capacity_factors
                    .get(s)
                    .and_then(|f| f.get(b))
                    .copied()
                    .unwrap_or(1.0);
                // A measured hold already holds the slower own work.
                let factor = if info.holds_while_calling && factor > 1e-9 {
                    1.0
                } else {
                    factor
                };
                if factor > 1e-9 {
                    let let_in = c.attempts.saturating_sub(c.refused + c.vanished);
                    raise(
                        &mut peaks_effective[s],
                        held_ratio(ratio(let_in as f64, secs) / (cap * factor)),
                    );
                }
            }
            let ejected = m.ejected.get(b * m.services + s).copied().unwrap_or([0; 2]);
            rows.push(ServiceRow {
                t_s: (b as u64 * bucket) as f64 / NS_PER_S as f64,
                after_stop,
                service: s,
                counts: c,
                load_ratio: load,
                utilization,
                queue_depth: m.queue[s].mean(b, len),
                in_flight: m.inside[s].mean(b, len),
                replicas: match scaled {
                    Some(l) => l.at_end[b][0],
                    None => info.up.get(b).copied().unwrap_or(info.replicas),
                }
                .saturating_sub(ejected[1]),
                ejected: ejected[0],
                desired_replicas: scaled.map(|l| l.at_end[b][1]),
                concurrency_limit: m
                    .limits
                    .get(s)
                    .and_then(Option::as_ref)
                    .map(|l| l.mean(b, len)),
                cache: m
                    .caches
                    .get(s)
                    .and_then(Option::as_ref)
                    .and_then(|c| c.get(b).copied()),
            });
        }
    }
    let services = order
        .iter()
        .map(|&s| {
            let mut t = ServiceCounts::default();
            for b in 0..buckets {
                let c = m.counts[b * m.services + s];
                t.attempts += c.attempts;
                t.refused += c.refused;
                t.vanished += c.vanished;
                t.errors += c.errors;
                t.shed += c.shed;
                t.limited += c.limited;
                t.queue_timeouts += c.queue_timeouts;
                t.served += c.served;
                t.cancelled += c.cancelled;
                t.reset += c.reset;
            }
            let (wait_ns, waits) = m.queue_wait[s];
            let info = &services[s];
            let limits = m.limits.get(s).and_then(Option::as_ref);
            // An autoscaled service: the mean share of its replicas serving
            // (its capacity), and serving or draining (its workers).
            let scaled = m.scaled.get(s).and_then(Option::as_ref);
            let slots = run_secs * f64::from(info.replicas.max(1));
            let share = scaled.map_or(1.0, |l| ratio(l.serving.total_secs(), slots));
            let working = scaled.map_or(1.0, |l| ratio(l.working.total_secs(), slots));
            ServiceSummary {
                service: s,
                totals: t,
                amplification: (logical_requests > 0)
                    .then(|| t.attempts as f64 / logical_requests as f64),
                peak_load_ratio: peaks[s],
                peak_load_ratio_after: peaks_after[s].filter(|_| !after.aborted),
                peak_effective_load_ratio: peaks_effective[s],
                utilization: info
                    .concurrency
                    .map(|w| ratio(m.busy[s].total_secs(), run_secs * w as f64 * working)),
                capacity_per_s: capacity[s].map(|c| c * share),
                queue_wait_mean_ms: (waits > 0).then(|| wait_ns as f64 / waits as f64 / 1e6),
                in_flight_mean: ratio(m.inside[s].total_secs(), run_secs),
                sojourn_mean_ms: {
                    let (ns, n) = m.sojourn[s];
                    (n > 0).then(|| ns as f64 / n as f64 / 1e6)
                },
                inside_at_end: m.inside[s].value(),
                unserved_at_end: m.unserved_at_end[s],
                concurrency_limit_mean: limits
                    .map(|l| ratio(l.sum.total_secs(), run_secs * f64::from(l.replicas.max(1)))),
                concurrency_limit_at_end: limits
                    .map(|l| ratio(l.sum.value() as f64, f64::from(l.replicas.max(1)))),
                cache: m.caches.get(s).and_then(Option::as_ref).map(|per| {
                    let mut t = CacheCounts::default();
                    for c in per {
                        t.add(c);
                    }
                    t
                }),
            }
        })
        .collect();
    let edges = (0..edges.calls.len())
        .map(|e| {
            let [succeeded, failed] = m.edge_outcomes.get(e).copied().unwrap_or([0, 0]);
            EdgeSummary {
                edge: e,
                calls: edges.calls[e],
                attempts: edges.attempts[e],
                retries: edges.retries[e],
                succeeded,
                failed,
                amplification: (logical_requests > 0)
                    .then(|| edges.attempts[e] as f64 / logical_requests as f64),
                gates: edges.gates[e],
                orphaned_attempts: edges.orphaned[e],
                pool: m.pools.get(e).copied().unwrap_or_default(),
            }
        })
        .collect();
    // Replicas are flat, service 0's first (`Topology::replica`).
    let mut starts = Vec::with_capacity(n);
    let mut at = 0usize;
    for info in services_info {
        starts.push(at);
        at += info.replicas.max(1) as usize;
    }
    let first = &starts;
    let replicas = (order.iter())
        .flat_map(|&s| {
            let k = services_info[s].replicas.max(1);
            (0..k).filter_map(move |r| Some((s, r, first.get(s)? + r as usize)))
        })
        .filter_map(|(s, r, flat)| {
            m.replicas.get(flat).map(|&counts| ReplicaRow {
                service: s,
                replica: r,
                counts,
            })
        })
        .collect();
    GraphTables {
        rows,
        services,
        edges,
        replicas,
    }
}
