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
    /// Per edge: calls that succeeded, and that failed.
    pub edge_outcomes: Vec<[u64; 2]>,
    /// Per service, when the run ended: requests queued or in service
    /// (admitted, not yet served).
    pub unserved_at_end: Vec<u64>,
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
            edge_outcomes: vec![[0; 2]; edges],
            unserved_at_end: vec![0; services],
        }
    }

    /// The memory `new` allocates.
    pub fn state_bytes(buckets: u64, services: usize, edges: usize) -> u64 {
        let per_bucket = std::mem::size_of::<ServiceCounts>() as u64 + 3 * 16;
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
    /// Its place in the tables (by depth from the clients).
    pub rank: usize,
}

/// Names of a call edge, per edge.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeInfo {
    pub name: String,
    /// The calling service, or `clients`.
    pub caller: String,
    pub callee: String,
}

/// One row of `services_timeseries.csv` (without variant and replicate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceRow {
    pub t_s: f64,
    pub service: usize,
    pub counts: ServiceCounts,
    /// Attempts per second ÷ capacity (None without a capacity).
    pub load_ratio: Option<f64>,
    /// Mean busy workers ÷ workers (None with unlimited workers).
    pub utilization: Option<f64>,
    pub queue_depth: f64,
    /// Mean requests inside: queued, in service or waiting for calls.
    pub in_flight: f64,
    /// Replicas serving (1 until services have replicas).
    pub replicas: u32,
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
}

/// The graph tables of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphTables {
    pub rows: Vec<ServiceRow>,
    pub services: Vec<ServiceSummary>,
    pub edges: Vec<EdgeSummary>,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
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
    let buckets = m.counts.len().checked_div(m.services).unwrap_or(0);
    let mut rows = Vec::with_capacity(buckets * n);
    let run_ns: Nanos = (0..buckets).map(&len_of).sum();
    let run_secs = run_ns as f64 / NS_PER_S as f64;
    let mut peaks: Vec<Option<f64>> = vec![None; n];
    let mut peaks_after: Vec<Option<f64>> = vec![None; n];
    let mut peaks_effective: Vec<Option<f64>> = vec![None; n];
    let raise = |p: &mut Option<f64>, v: f64| *p = Some(p.map_or(v, |p: f64| p.max(v)));
    // Services in the order of the tables (by depth from the clients).
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&s| (services[s].rank, s));
    for b in 0..buckets {
        let len = len_of(b);
        let secs = len as f64 / NS_PER_S as f64;
        for &s in &order {
            let info = &services[s];
            let c = m.counts[b * m.services + s];
            let load = info
                .capacity_per_s
                .map(|cap| ratio(ratio(c.attempts as f64, secs), cap));
            if let Some(l) = load {
                raise(&mut peaks[s], l);
            }
            if let (Some(l), Some(cap)) = (load, info.capacity_per_s)
                && len == bucket
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
                if factor > 1e-9 {
                    let let_in = c.attempts.saturating_sub(c.refused + c.vanished);
                    raise(
                        &mut peaks_effective[s],
                        ratio(let_in as f64, secs) / (cap * factor),
                    );
                }
            }
            let busy = m.busy[s].mean(b, len);
            rows.push(ServiceRow {
                t_s: (b as u64 * bucket) as f64 / NS_PER_S as f64,
                service: s,
                counts: c,
                load_ratio: load,
                utilization: info.concurrency.map(|w| ratio(busy, w as f64)),
                queue_depth: m.queue[s].mean(b, len),
                in_flight: m.inside[s].mean(b, len),
                replicas: 1,
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
                t.queue_timeouts += c.queue_timeouts;
                t.served += c.served;
                t.cancelled += c.cancelled;
                t.reset += c.reset;
            }
            let (wait_ns, waits) = m.queue_wait[s];
            let info = &services[s];
            ServiceSummary {
                service: s,
                totals: t,
                amplification: (logical_requests > 0)
                    .then(|| t.attempts as f64 / logical_requests as f64),
                peak_load_ratio: peaks[s],
                peak_load_ratio_after: peaks_after[s],
                peak_effective_load_ratio: peaks_effective[s],
                utilization: info
                    .concurrency
                    .map(|w| ratio(m.busy[s].total_secs(), run_secs * w as f64)),
                capacity_per_s: info.capacity_per_s,
                queue_wait_mean_ms: (waits > 0).then(|| wait_ns as f64 / waits as f64 / 1e6),
                in_flight_mean: ratio(m.inside[s].total_secs(), run_secs),
                sojourn_mean_ms: {
                    let (ns, n) = m.sojourn[s];
                    (n > 0).then(|| ns as f64 / n as f64 / 1e6)
                },
                inside_at_end: m.inside[s].value(),
                unserved_at_end: m.unserved_at_end[s],
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
            }
        })
        .collect();
    GraphTables {
        rows,
        services,
        edges,
    }
}
