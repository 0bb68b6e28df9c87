//! What a run records while it runs: counters per time bucket, per layer,
//! time-integrated gauges and latency histograms. The model calls these
//! cheap methods from its event handlers; nothing here allocates per event
//! (the per-bucket latency histogram is reused from bucket to bucket).
//!
//! Latencies are recorded in microseconds in HdrHistogram (3 significant
//! digits for the whole run, 2 for each bucket): integer counts, so they
//! merge exactly in any order.

use std::cell::Cell;

use hdrhistogram::Histogram;

use super::reason::Reason;
use crate::engine::{NS_PER_US, Nanos};

use super::gauge::Gauge;
use super::services::{ReplicaCounts, ServiceCounts, ServiceMetrics};

/// What a cache lookup found (see `metrics::services::CacheCounts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheLookup {
    Hit,
    Miss,
    Coalesced,
}

/// What became of a request at a service (see `metrics::services`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceEvent {
    Refused,
    Vanished,
    Error,
    Shed,
    /// Rejected by an adaptive concurrency limit.
    Limited,
    QueueTimeout,
    Served,
    Cancelled,
    Reset,
}

impl ServiceEvent {
    /// Adds it to `c`.
    #[inline]
    pub fn count(self, c: &mut ServiceCounts) {
        match self {
            ServiceEvent::Refused => c.refused += 1,
            ServiceEvent::Vanished => c.vanished += 1,
            ServiceEvent::Error => c.errors += 1,
            ServiceEvent::Shed => c.shed += 1,
            ServiceEvent::Limited => c.limited += 1,
            ServiceEvent::QueueTimeout => c.queue_timeouts += 1,
            ServiceEvent::Served => c.served += 1,
            ServiceEvent::Cancelled => c.cancelled += 1,
            ServiceEvent::Reset => c.reset += 1,
        }
    }
}

/// Counters of one time bucket.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BucketCounts {
    pub offered: u64,
    /// Attempts sent by the outermost layer.
    pub attempts: u64,
    /// Retries sent by all layers.
    pub retries: u64,
    pub dependency_attempts: u64,
    pub succeeded: u64,
    pub failed: [u64; Reason::COUNT],
    pub shed: u64,
    /// Dependency requests that vanished in a blackhole.
    pub blackholed: u64,
    /// Dependency requests dropped at the head of the queue after waiting
    /// longer than the queue timeout.
    pub queue_timeouts: u64,
    /// Dependency requests completed whose caller had already given up.
    pub orphaned: u64,
    /// Writes committed by a worker.
    pub commits: u64,
    /// Commits of a non-idempotent write after its logical request's first.
    pub duplicate_side_effects: u64,
    /// Commits whose caller had already given up (it saw a timeout).
    pub ambiguous_successes: u64,
    /// Requests answered from the idempotency store instead of committing.
    pub deduplicated: u64,
    /// Work cancelled by a caller: removed from the queue, stopped in
    /// service, or calls cancelled at a layer.
    pub cancelled: u64,
    /// Status probes sent before retrying a timed-out write.
    pub probes: u64,
    /// Message consumers: messages published, receives (deliveries),
    /// redeliveries, deliveries while an earlier handler of the same
    /// message still ran, messages processed (deleted) and dead-lettered.
    pub messages: u64,
    pub deliveries: u64,
    pub redeliveries: u64,
    pub duplicate_deliveries: u64,
    pub processed: u64,
    pub dead_lettered: u64,
    pub latency_p50_us: Option<u64>,
    pub latency_p99_us: Option<u64>,
    /// Logical requests still open at the end of the bucket.
    pub open_requests: u64,
}

impl BucketCounts {
    pub fn failed_total(&self) -> u64 {
        self.failed.iter().sum()
    }
}

/// Whole-run totals that are not sums of bucket counters.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub queue_wait_sum_ns: u128,
    pub queue_wait_count: u64,
    pub orphaned_work_ns: u128,
    pub busy_work_ns: u128,
    /// Worker time of requests stopped by cancellation before finishing.
    pub cancelled_work_ns: u128,
    /// Attempts sent at or after their logical request's deadline.
    pub late_attempts: u64,
    /// Orphaned worker time by the layer whose caller gave up first.
    pub layer_orphaned_work_ns: Vec<u128>,
    /// Logical requests whose write committed at least once.
    pub committed_requests: u64,
    /// Calls started at each layer (layer 0: one per logical request).
    pub layer_calls: Vec<u64>,
    /// Sum of the ages of dead-lettered messages (publish to DLQ).
    pub dead_letter_age_ns: u128,
    /// Messages still in the queue when the run ended.
    pub messages_open: u64,
    /// Logical requests that lived entirely outside the incident windows
    /// (`Recorder::exclude`), by how they ended.
    pub succeeded_outside: u64,
    pub failed_outside: u64,
}

pub struct Recorder {
    bucket: Nanos,
    duration: Nanos,
    /// When the run ended (`finish`): the duration, or earlier for a run a
    /// guard rail stopped; its buckets that start at or after it were
    /// never simulated.
    pub end: Nanos,
    layers: usize,
    pub buckets: Vec<BucketCounts>,
    /// Attempts and retries per bucket and layer, `[bucket * layers + layer]`.
    pub layer_attempts: Vec<u64>,
    pub layer_retries: Vec<u64>,
    /// Gate refusals per bucket and layer: `[(bucket * layers + layer) * 3 +
    /// k]`, k = 0 budget exhausted, 1 throttled, 2 breaker open.
    pub layer_gates: Vec<u64>,
    /// Gate levels sampled at each bucket's end, same layout: budget level,
    /// throttle level, fraction of breakers open. NaN where not configured.
    pub layer_levels: Vec<f64>,
    /// Attempts sent by calls whose caller had given up, per bucket and layer.
    pub layer_orphaned: Vec<u64>,
    /// Requests waiting in the dependency's queue.
    pub queue: Gauge,
    /// Busy workers (requests in service).
    pub busy: Gauge,
    pub latency: Histogram<u64>,
    /// Latency of the logical requests that lived entirely outside the
    /// incident windows; `None` without windows (then it is `latency`).
    pub latency_outside: Option<Histogram<u64>>,
    /// The incident windows (sorted, disjoint `[start, end)`).
    excluded: Vec<(Nanos, Nanos)>,
    pub retry_delay: Histogram<u64>,
    /// Message consumers: publish to deletion, in microseconds.
    pub message_latency: Histogram<u64>,
    bucket_latency: Histogram<u64>,
    latency_bucket: usize,
    pub totals: Totals,
    /// Per service and per call edge of the graph.
    pub svc: ServiceMetrics,
    /// Per priority class of the clients (empty without classes).
    pub classes: Vec<ClassCounts>,
    open_requests: u64,
    /// When each logical request still open at the end of the run
    /// arrived (set by `finish_open`), sorted: what `hung` judges.
    open_since: Vec<Nanos>,
    open_bucket: usize,
    /// The last bucket looked up, as (start, end, index): most records
    /// fall in the bucket of the one before, and a division costs more
    /// than the rest of a record.
    last: Cell<(Nanos, Nanos, usize)>,
}

/// What became of the logical requests of one priority class.
#[derive(Clone, Debug)]
pub struct ClassCounts {
    /// Logical requests started.
    pub requests: u64,
    pub succeeded: u64,
    /// Ended failed, not by a priority shed.
    pub failed: u64,
    /// Ended failed with a priority shed as their last answer.
    pub shed: u64,
    /// When each of its logical requests still open at the end of the
    /// run arrived, sorted (set by `Recorder::finish_open`).
    pub open_since: Vec<Nanos>,
    /// Attempts of the class shed by priority at any service.
    pub shed_attempts: u64,
    /// Latency of the requests that ended, in microseconds.
    pub latency: Histogram<u64>,
}

impl ClassCounts {
    fn new() -> Self {
        ClassCounts {
            requests: 0,
            succeeded: 0,
            failed: 0,
            shed: 0,
            open_since: Vec::new(),
            shed_attempts: 0,
            latency: histogram(3),
        }
    }
}

/// The most buckets a run records: every bucket costs up to a few KiB of
/// counters while the run lasts. Scenarios are refused above it
/// (`scenario::validate`), and the OCC workload, whose length is known only
/// when it ends, stops there.
pub const MAX_BUCKETS: usize = 100_000;

/// Longest latency or delay tracked exactly: 100 hours, in microseconds.
/// Longer values are recorded as this value (`saturating_record`); no
/// scenario can run that long with a wait that long in it.
const MAX_US: u64 = 100 * 3600 * 1_000_000;

fn histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, sigfig).expect("valid histogram bounds")
}

impl Recorder {
    /// The memory `new(duration, bucket, layers)` allocates: counters per
    /// bucket (and per layer), two gauges, five histograms (with the
    /// latency outside incidents), and the capacity factor of the run's
    /// context.
    pub fn state_bytes(duration: Nanos, bucket: Nanos, layers: usize) -> u64 {
        let n = duration.div_ceil(bucket.max(1)).max(1);
        let per_bucket = std::mem::size_of::<BucketCounts>() as u64
            // attempts, retries and orphaned; gates; levels.
            + layers as u64 * (3 * 8 + 3 * 8 + 3 * 8)
            + 2 * std::mem::size_of::<u128>() as u64
            + std::mem::size_of::<f64>() as u64;
        static HISTOGRAMS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let histograms = *HISTOGRAMS.get_or_init(|| {
            let bytes = |h: Histogram<u64>| h.distinct_values() as u64 * 8;
            4 * bytes(histogram(3)) + bytes(histogram(2))
        });
        n.saturating_mul(per_bucket)
            .saturating_add(histograms)
            .saturating_add(layers as u64 * 16)
    }

    /// The memory one priority class's counters take (`with_classes`):
    /// its counts and its latency histogram.
    pub fn class_bytes() -> u64 {
        static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        *BYTES.get_or_init(|| {
            histogram(3).distinct_values() as u64 * 8 + std::mem::size_of::<ClassCounts>() as u64
        })
    }

    pub fn new(duration: Nanos, bucket: Nanos, layers: usize) -> Self {
        Recorder::with_services(duration, bucket, layers, 0)
    }

    /// A recorder for a graph of `services` services and `layers` call
    /// edges.
    pub fn with_services(duration: Nanos, bucket: Nanos, layers: usize, services: usize) -> Self {
        let n = duration.div_ceil(bucket).max(1) as usize;
        Recorder {
            bucket,
            duration,
            end: duration,
            layers,
            buckets: vec![BucketCounts::default(); n],
            layer_attempts: vec![0; n * layers],
            layer_retries: vec![0; n * layers],
            layer_gates: vec![0; n * layers * 3],
            layer_levels: vec![f64::NAN; n * layers * 3],
            layer_orphaned: vec![0; n * layers],
            queue: Gauge::new(bucket, n),
            busy: Gauge::new(bucket, n),
            latency: histogram(3),
            latency_outside: None,
            excluded: Vec::new(),
            retry_delay: histogram(3),
            message_latency: histogram(3),
            bucket_latency: histogram(2),
            latency_bucket: 0,
            totals: Totals {
                layer_orphaned_work_ns: vec![0; layers],
                layer_calls: vec![0; layers],
                ..Totals::default()
            },
            svc: ServiceMetrics::new(bucket, n, services, layers),
            classes: Vec::new(),
            open_requests: 0,
            open_since: Vec::new(),
            open_bucket: 0,
            last: Cell::new((0, 0, 0)),
        }
    }

    /// Leaves `windows` (sorted, disjoint `[start, end)`: the incidents
    /// and their warm-ups) out of the figures outside incidents: a logical
    /// request counts there only if its whole life, arrival to end, lies
    /// outside every window.
    pub fn exclude(&mut self, windows: Vec<(Nanos, Nanos)>) {
        self.latency_outside = (!windows.is_empty()).then(|| histogram(3));
        self.excluded = windows;
    }

    pub fn bucket_len(&self) -> Nanos {
        self.bucket
    }

    pub fn duration(&self) -> Nanos {
        self.duration
    }

    pub fn layers(&self) -> usize {
        self.layers
    }

    /// Length of bucket `b` (the last may be cut short by the run's end).
    pub fn len_of(&self, b: usize) -> Nanos {
        let start = b as u64 * self.bucket;
        (start + self.bucket).min(self.duration) - start
    }

    #[inline]
    fn b(&self, t: Nanos) -> usize {
        let (start, end, b) = self.last.get();
        if start <= t && t < end {
            return b;
        }
        let last = self.buckets.len() - 1;
        let b = ((t / self.bucket) as usize).min(last);
        let start = b as u64 * self.bucket;
        // Times past the end count in the last bucket.
        let end = if b == last {
            Nanos::MAX
        } else {
            start + self.bucket
        };
        self.last.set((start, end, b));
        b
    }

    #[inline]
    pub fn offered(&mut self, t: Nanos) {
        self.note_open(t);
        let b = self.b(t);
        self.buckets[b].offered += 1;
        self.open_requests += 1;
    }

    #[inline]
    pub fn attempt(&mut self, t: Nanos, layer: usize, retry: bool) {
        let b = self.b(t);
        if layer == 0 {
            self.buckets[b].attempts += 1;
        }
        self.layer_attempts[b * self.layers + layer] += 1;
        if retry {
            self.buckets[b].retries += 1;
            self.layer_retries[b * self.layers + layer] += 1;
        }
    }

    /// A budget, throttle or breaker of `layer` refused an attempt or retry.
    #[inline]
    pub fn gate(&mut self, t: Nanos, layer: usize, reason: Reason) {
        let k = match reason {
            Reason::BudgetExhausted => 0,
            Reason::Throttled => 1,
            Reason::BreakerOpen => 2,
            _ => return,
        };
        let b = self.b(t);
        self.layer_gates[(b * self.layers + layer) * 3 + k] += 1;
    }

    /// The gate levels of `layer` at the end of `bucket`.
    pub fn levels(&mut self, bucket: usize, layer: usize, levels: [Option<f64>; 3]) {
        if bucket >= self.buckets.len() {
            return;
        }
        for (k, v) in levels.into_iter().enumerate() {
            self.layer_levels[(bucket * self.layers + layer) * 3 + k] = v.unwrap_or(f64::NAN);
        }
    }

    #[inline]
    pub fn dependency_attempt(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].dependency_attempts += 1;
    }

    #[inline]
    pub fn shed(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].shed += 1;
    }

    #[inline]
    pub fn blackholed(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].blackholed += 1;
    }

    #[inline]
    pub fn queue_timeout(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].queue_timeouts += 1;
    }

    #[inline]
    pub fn retry_sleep(&mut self, delay: Nanos) {
        self.retry_delay.saturating_record(delay / NS_PER_US);
    }

    #[inline]
    pub fn queue_wait(&mut self, wait: Nanos) {
        self.totals.queue_wait_sum_ns += wait as u128;
        self.totals.queue_wait_count += 1;
    }

    /// A dependency request finished service; `orphaned_by` names the
    /// layer whose caller gave up on it first, if one did.
    #[inline]
    pub fn service_done(&mut self, t: Nanos, service: Nanos, orphaned_by: Option<usize>) {
        self.totals.busy_work_ns += service as u128;
        if let Some(layer) = orphaned_by {
            let b = self.b(t);
            self.buckets[b].orphaned += 1;
            self.totals.orphaned_work_ns += service as u128;
            if let Some(w) = self.totals.layer_orphaned_work_ns.get_mut(layer) {
                *w += service as u128;
            }
        }
    }

    /// A call started at `layer`.
    #[inline]
    pub fn call(&mut self, layer: usize) {
        self.totals.layer_calls[layer] += 1;
    }

    /// A call whose caller had given up sent an attempt.
    #[inline]
    pub fn orphaned_attempt(&mut self, t: Nanos, layer: usize) {
        let b = self.b(t);
        self.layer_orphaned[b * self.layers + layer] += 1;
    }

    /// An attempt was sent at or after its logical request's deadline.
    #[inline]
    pub fn late_attempt(&mut self) {
        self.totals.late_attempts += 1;
    }

    /// A worker committed a write.
    #[inline]
    pub fn commit(&mut self, t: Nanos, first: bool, duplicate: bool, ambiguous: bool) {
        self.totals.committed_requests += u64::from(first);
        let b = self.b(t);
        let c = &mut self.buckets[b];
        c.commits += 1;
        c.duplicate_side_effects += u64::from(duplicate);
        c.ambiguous_successes += u64::from(ambiguous);
    }

    /// A committed write's caller gave up before its answer arrived.
    #[inline]
    pub fn ambiguous(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].ambiguous_successes += 1;
    }

    #[inline]
    pub fn deduplicated(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].deduplicated += 1;
    }

    /// Work was cancelled; `wasted` is worker time spent on it first.
    #[inline]
    pub fn cancelled(&mut self, t: Nanos, wasted: Nanos) {
        let b = self.b(t);
        self.buckets[b].cancelled += 1;
        self.totals.cancelled_work_ns += wasted as u128;
    }

    #[inline]
    pub fn probe(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].probes += 1;
    }

    /// A logical request ended: `None` is a success, else the reason.
    #[inline]
    pub fn request_done(&mut self, t: Nanos, latency: Nanos, failure: Option<Reason>) {
        self.note_open(t);
        let b = self.b(t);
        match failure {
            None => self.buckets[b].succeeded += 1,
            Some(r) => self.buckets[b].failed[r as usize] += 1,
        }
        self.open_requests -= 1;
        self.roll_latency(b);
        let us = (latency / NS_PER_US).max(1);
        self.latency.saturating_record(us);
        self.bucket_latency.saturating_record(us);
        let arrived = t.saturating_sub(latency);
        // A handful of windows at most: a scan is cheaper than a search.
        if !self
            .excluded
            .iter()
            .any(|&(start, end)| arrived < end && t >= start)
        {
            match failure {
                None => self.totals.succeeded_outside += 1,
                Some(_) => self.totals.failed_outside += 1,
            }
            if let Some(h) = &mut self.latency_outside {
                h.saturating_record(us);
            }
        }
    }

    /// Records the open-request count at the end of every bucket passed.
    #[inline]
    fn note_open(&mut self, t: Nanos) {
        let b = self.b(t);
        while self.open_bucket < b {
            self.buckets[self.open_bucket].open_requests = self.open_requests;
            self.open_bucket += 1;
        }
    }

    fn roll_latency(&mut self, b: usize) {
        if b != self.latency_bucket {
            self.close_latency_bucket();
            self.latency_bucket = b;
        }
    }

    fn close_latency_bucket(&mut self) {
        if !self.bucket_latency.is_empty() {
            let c = &mut self.buckets[self.latency_bucket];
            c.latency_p50_us = Some(self.bucket_latency.value_at_quantile(0.5));
            c.latency_p99_us = Some(self.bucket_latency.value_at_quantile(0.99));
            self.bucket_latency.reset();
        }
    }

    pub fn message_published(&mut self, t: Nanos) {
        let b = self.b(t);
        self.buckets[b].messages += 1;
    }

    /// A consumer received a message (`redelivery` when not its first
    /// receive; `duplicate` when an earlier handler of it still runs).
    pub fn message_received(&mut self, t: Nanos, redelivery: bool, duplicate: bool) {
        let b = self.b(t);
        let c = &mut self.buckets[b];
        c.deliveries += 1;
        c.redeliveries += u64::from(redelivery);
        c.duplicate_deliveries += u64::from(duplicate);
    }

    /// A handler succeeded and deleted its message.
    pub fn message_processed(&mut self, t: Nanos, latency: Nanos) {
        let b = self.b(t);
        self.buckets[b].processed += 1;
        self.message_latency
            .saturating_record((latency / NS_PER_US).max(1));
    }

    /// A message moved to the dead-letter queue, `age` after it was published.
    pub fn dead_lettered(&mut self, t: Nanos, age: Nanos) {
        let b = self.b(t);
        self.buckets[b].dead_lettered += 1;
        self.totals.dead_letter_age_ns += age as u128;
    }

    /// Closes the run at its end time; `messages_open` are still queued.
    pub fn finish(&mut self, end: Nanos, messages_open: u64) {
        self.end = end;
        self.totals.messages_open = messages_open;
        self.queue.advance(end);
        self.busy.advance(end);
        self.svc.advance(end);
        self.close_latency_bucket();
        let last = self.buckets.len() - 1;
        self.note_open(end.saturating_sub(1).max(last as u64 * self.bucket));
        self.buckets[last].open_requests = self.open_requests;
    }

    // ------------------------------------------------- services and edges

    /// A request arrived at service `s`.
    #[inline]
    pub fn service_arrival(&mut self, t: Nanos, s: usize) {
        let b = self.b(t);
        self.svc.at(b, s).attempts += 1;
    }

    /// What became of a request at service `s`.
    #[inline]
    pub fn service_event(&mut self, t: Nanos, s: usize, what: ServiceEvent) {
        let b = self.b(t);
        what.count(self.svc.at(b, s));
    }

    /// A request of service `s` waited `wait` in its queue.
    #[inline]
    pub fn service_queue_wait(&mut self, s: usize, wait: Nanos) {
        let w = &mut self.svc.queue_wait[s];
        w.0 += wait as u128;
        w.1 += 1;
    }

    /// A worker of service `s` was given back at `t` after being held for
    /// `held` (its own work, and for a thread-per-request service the
    /// calls it waited for).
    #[inline]
    pub fn worker_released(&mut self, t: Nanos, s: usize, held: Nanos) {
        let b = self.b(t);
        let h = &mut self.svc.held[b * self.svc.services + s];
        h.0 = h.0.saturating_add(held);
        h.1 += 1;
    }

    /// A request left service `s` after `sojourn` inside.
    #[inline]
    pub fn service_left(&mut self, s: usize, sojourn: Nanos) {
        let w = &mut self.svc.sojourn[s];
        w.0 += sojourn as u128;
        w.1 += 1;
    }

    /// Service `s` now has `queued` requests waiting, `busy` workers busy
    /// and `inside` requests inside.
    #[inline]
    pub fn service_levels(&mut self, t: Nanos, s: usize, queued: u64, busy: u64, inside: u64) {
        self.svc.queue[s].set(t, queued);
        self.svc.busy[s].set(t, busy);
        self.svc.inside[s].set(t, inside);
    }

    /// A call on `edge` ended, successfully or not.
    #[inline]
    pub fn call_done(&mut self, edge: usize, ok: bool) {
        self.svc.edge_outcomes[edge][usize::from(!ok)] += 1;
    }

    /// Sizes the per-class counters (`classes` priority classes; none
    /// kept for fewer than one).
    pub fn with_classes(&mut self, classes: usize) {
        self.classes = (0..classes).map(|_| ClassCounts::new()).collect();
    }

    /// A logical request of priority class `class` started.
    #[inline]
    pub fn class_offered(&mut self, class: u8) {
        if let Some(c) = self.classes.get_mut(class as usize) {
            c.requests += 1;
        }
    }

    /// A logical request of `class` ended after `latency`: succeeded, or
    /// failed (`shed`: its last answer was a priority shed).
    #[inline]
    pub fn class_done(&mut self, class: u8, latency: Nanos, failed: bool, shed: bool) {
        if let Some(c) = self.classes.get_mut(class as usize) {
            match (failed, shed) {
                (false, _) => c.succeeded += 1,
                (true, true) => c.shed += 1,
                (true, false) => c.failed += 1,
            }
            c.latency.saturating_record((latency / NS_PER_US).max(1));
        }
    }

    /// A service shed an attempt of `class` by priority.
    #[inline]
    pub fn class_shed_attempt(&mut self, class: u8) {
        if let Some(c) = self.classes.get_mut(class as usize) {
            c.shed_attempts += 1;
        }
    }

    /// Sizes the per-replica counters (`replicas` of all services).
    pub fn with_replicas(&mut self, replicas: usize) {
        self.svc.replicas = vec![ReplicaCounts::default(); replicas];
    }

    /// A request arrived at replica `r`.
    #[inline]
    pub fn replica_arrival(&mut self, r: usize) {
        self.svc.replicas[r].counts.attempts += 1;
    }

    /// What became of a request at replica `r`.
    #[inline]
    pub fn replica_event(&mut self, r: usize, what: ServiceEvent) {
        what.count(&mut self.svc.replicas[r].counts);
    }

    /// Replica `r` now has `inside` requests inside.
    #[inline]
    pub fn replica_inside(&mut self, r: usize, inside: u32) {
        let p = &mut self.svc.replicas[r].peak_inside;
        *p = (*p).max(inside);
    }

    /// A caller's outlier detection ejected replica `r`.
    #[inline]
    pub fn replica_ejected(&mut self, r: usize) {
        self.svc.replicas[r].ejections += 1;
    }

    /// At the end of `bucket`, `n[0]` replicas of service `s` were ejected,
    /// `n[1]` of them not down or blackholed.
    pub fn ejected(&mut self, bucket: usize, s: usize, n: [u32; 2]) {
        let i = bucket * self.svc.services + s;
        if let Some(e) = self.svc.ejected.get_mut(i) {
            *e = n;
        }
    }

    /// Service `s` autoscales: its replicas are recorded over time.
    pub fn autoscaled(&mut self, s: usize) {
        self.svc.autoscaled(s, self.bucket);
    }

    /// Service `s` has an adaptive concurrency limit on each of its
    /// `replicas`, at `initial` from the start.
    pub fn limited(&mut self, s: usize, replicas: u32, initial: u32) {
        self.svc.limited(s, self.bucket, replicas, initial);
    }

    /// Service `s` has a cache: its lookups are recorded.
    pub fn cached(&mut self, s: usize) {
        self.svc.cached(s);
    }

    /// A lookup of service `s`'s cache at `t`: a hit, a miss, or coalesced
    /// (waits for a miss in flight).
    #[inline]
    pub fn cache_lookup(&mut self, t: Nanos, s: usize, what: CacheLookup) {
        let b = self.b(t);
        if let Some(Some(per)) = self.svc.caches.get_mut(s)
            && let Some(c) = per.get_mut(b)
        {
            match what {
                CacheLookup::Hit => c.hits += 1,
                CacheLookup::Miss => c.misses += 1,
                CacheLookup::Coalesced => c.coalesced += 1,
            }
        }
    }

    /// The limits of service `s`'s replicas add up to `sum` from `t` on.
    pub fn limit_levels(&mut self, t: Nanos, s: usize, sum: u64) {
        if let Some(Some(l)) = self.svc.limits.get_mut(s) {
            l.sum.set(t, sum);
        }
    }

    /// Autoscaled service `s` has `serving` replicas serving, `working`
    /// serving or draining, and wants `desired` from `t` on.
    pub fn scale_levels(&mut self, t: Nanos, s: usize, serving: u32, working: u32, desired: u32) {
        if let Some(Some(l)) = self.svc.scaled.get_mut(s) {
            l.set(t, serving, working, desired);
        }
    }

    /// Logical requests that have not ended.
    pub fn open_requests(&self) -> u64 {
        self.open_requests
    }

    /// The arrival times of the logical requests still open when the run
    /// ended, each with its priority class (one per open request; the
    /// model knows them).
    pub fn finish_open(&mut self, open: Vec<(Nanos, u8)>) {
        for &(arrived, class) in &open {
            if let Some(c) = self.classes.get_mut(class as usize) {
                c.open_since.push(arrived);
            }
        }
        for c in &mut self.classes {
            c.open_since.sort_unstable();
        }
        let mut since: Vec<Nanos> = open.into_iter().map(|(arrived, _)| arrived).collect();
        since.sort_unstable();
        self.open_since = since;
    }

    /// Of the requests of class `class` open at `end`, those that had
    /// waited longer than `bound`: the class's share of [`Self::hung`]'s
    /// first figure.
    pub fn hung_in_class(&self, class: usize, end: Nanos, bound: Nanos) -> u64 {
        self.classes.get(class).map_or(0, |c| {
            // Sorted: those that waited longest come first.
            c.open_since
                .partition_point(|&arrived| end.saturating_sub(arrived) > bound) as u64
        })
    }

    /// Of the requests open at `end`, those that had waited longer than
    /// `bound` (`hung`): (all of them, those of the figures outside
    /// incidents). Outside incidents, a request counts once it has waited
    /// longer than `bound` since the last incident window its wait touched
    /// closed (its arrival, if it touched none): the incident was over and
    /// the request still had no answer.
    pub fn hung(&self, end: Nanos, bound: Nanos) -> (u64, u64) {
        let mut all = 0;
        let mut outside = 0;
        for &arrived in &self.open_since {
            if end.saturating_sub(arrived) <= bound {
                // Sorted: every later one arrived later still.
                break;
            }
            all += 1;
            let since = self
                .excluded
                .iter()
                .filter(|&&(start, stop)| arrived < stop && end >= start)
                .map(|&(_, stop)| stop)
                .fold(arrived, Nanos::max);
            if end.saturating_sub(since) > bound {
                outside += 1;
            }
        }
        (all, outside)
    }
}
