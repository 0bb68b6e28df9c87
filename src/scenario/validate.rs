//! Semantic checks of a parsed scenario: everything serde cannot see
//! (ranges, orderings, combinations of fields). Every problem is reported,
//! not just the first, each with the dotted path of the field it is about;
//! `load` adds file positions to them.

use std::collections::HashMap;

use super::locate::{layer_labels, usable_layer_name};
use super::types::{
    ArrivalKind, Backoff, BackoffKind, Clients, Dependency, DistKind, Incident, IncidentKind,
    Jitter, Layer, ReplicaTargets, Retry, RetryOn, Scenario, SchedulePoint, ServerFields,
    ServiceTime,
};
use super::units::Duration;
use super::validate_hops::Probe;
use crate::escape::{formula_start, unsafe_char_in};

pub const MAX_LAYERS: usize = 16;
pub const MAX_REPLICATES: u32 = 10_000;
pub const MAX_ATTEMPTS: u32 = 1_000;
pub const MAX_CONCURRENCY: u32 = 1_000_000;
pub const MAX_QUEUE_CAPACITY: u32 = 100_000_000;
pub const MAX_INSTANCES: u32 = 1_000_000;
/// Logical requests per second: far above any real fleet, low enough that
/// a typo (`1e300/s`) is refused instead of running for ever.
pub const MAX_RATE_PER_SEC: f64 = 10_000_000.0;
/// Buckets per run (`duration / bucket`): a day in seconds fits.
pub const MAX_BUCKETS: u64 = crate::metrics::recorder::MAX_BUCKETS as u64;
/// Rows of `timeseries.csv` (runs × buckets), and of
/// `services_timeseries.csv` (× services). They are written as the runs
/// finish and never held in memory (`report::table_stream`); this is a
/// bound on disk space (100 million rows of `timeseries.csv` are at least
/// some 15 GB), not on memory, which `runner::retained_bytes` bounds.
pub const MAX_TIMESERIES_ROWS: u64 = 100_000_000;

/// The number of buckets (rows of `timeseries.csv`) of one run.
pub fn buckets(s: &Scenario) -> u64 {
    s.duration.ns().div_ceil(s.bucket().ns().max(1)).max(1)
}

/// The size of the whole run's `timeseries.csv`, when it is too large:
/// every variant and sweep point (`runs`, each with its own duration and
/// bucket) times the replicates.
pub fn timeseries_rows_issue<'a>(
    runs: impl Iterator<Item = &'a Scenario>,
    replicates: u32,
) -> Option<Issue> {
    let (mut variants, mut rows, mut service_rows) = (0u64, 0u64, 0u64);
    for s in runs {
        variants += 1;
        let per_run = buckets(s).saturating_mul(replicates as u64);
        rows = rows.saturating_add(per_run);
        service_rows = service_rows.saturating_add(per_run.saturating_mul(service_count(s)));
    }
    let runs = variants * replicates as u64;
    if rows > MAX_TIMESERIES_ROWS {
        return Some(Issue {
            path: "replicates".into(),
            message: format!(
                "the run would write {rows} rows of timeseries.csv ({runs} runs, one row per bucket each); expected at most {MAX_TIMESERIES_ROWS}: use fewer replicates or sweep points, or a longer bucket"
            ),
        });
    }
    (service_rows > MAX_TIMESERIES_ROWS).then(|| Issue {
        path: "bucket".into(),
        message: format!(
            "the run would write {service_rows} rows of services_timeseries.csv ({runs} runs, one row per bucket and service each); expected at most {MAX_TIMESERIES_ROWS}: use a longer bucket, fewer services, or fewer replicates or sweep points"
        ),
    })
}

/// The services a run of `s` writes rows of `services_timeseries.csv`
/// for: a graph's services, or a chain's one dependency.
fn service_count(s: &Scenario) -> u64 {
    if s.occ.is_some() {
        0
    } else if s.is_graph() {
        s.services.len() as u64
    } else {
        1
    }
}

/// One semantic problem: the field path and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

/// What a value error says of a number that is not finite (`.nan`,
/// `.inf`): `load` looks for it in a file whose overrides would hide it.
pub(crate) const NOT_FINITE: &str = "is not a finite number";

/// Every semantic problem of `s`, in file order (roughly); empty when the
/// scenario is valid.
pub fn validate(s: &Scenario) -> Vec<Issue> {
    let mut c = Checker::default();
    c.top_level(s);
    c.slo(s);
    c.tune(s);
    if s.occ.is_some() {
        c.occ(s);
        c.variants(s);
        return c.issues;
    }
    // Each part is checked on its own, so a missing part hides nothing else.
    if s.clients.is_unset() {
        c.push("clients", "missing field `clients`; expected for example clients: { arrival: { kind: poisson, rate: 100/s } }");
    } else {
        c.clients(&s.clients, s.duration);
    }
    if s.is_graph() {
        c.graph(s);
    } else {
        c.layers(&s.layers);
        c.hops(s);
        if s.dependency.is_unset() {
            c.push("dependency", "missing field `dependency`; expected for example dependency: { concurrency: 8, service_time: { dist: exponential, mean: 20ms } }");
        } else {
            c.dependency(&s.dependency, s.duration);
        }
        c.not_a_graph(s);
    }
    c.priority(s);
    c.analysis(s);
    c.variants(s);
    c.issues
}

#[derive(Default)]
pub(super) struct Checker {
    pub(super) issues: Vec<Issue>,
}

impl Checker {
    pub(super) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.issues.push(Issue {
            path: path.into(),
            message: message.into(),
        });
    }

    /// `ok` or an issue; returns `ok`.
    pub(super) fn check(&mut self, ok: bool, path: &str, message: impl FnOnce() -> String) -> bool {
        if !ok {
            self.push(path, message());
        }
        ok
    }

    pub(super) fn positive(&mut self, d: Duration, path: &str, what: &str) -> bool {
        self.check(d.ns() > 0, path, || {
            format!("{what} is 0s; expected a duration > 0")
        })
    }

    pub(super) fn finite(&mut self, v: f64, path: &str) -> bool {
        self.finite_in(v, path, "a real number")
    }

    /// As [`Self::finite`], for a field that takes `expected` (`a number
    /// > 0`): the message says the range the field takes.
    pub(super) fn finite_in(&mut self, v: f64, path: &str, expected: &str) -> bool {
        self.check(v.is_finite(), path, || {
            format!("`{v}` {NOT_FINITE}; expected {expected}")
        })
    }

    pub(super) fn status(&mut self, code: u16, path: &str) {
        self.check((100..=599).contains(&code), path, || {
            format!("status {code} is not an HTTP status code; expected 100-599")
        });
    }

    /// A status a failure answers with: an HTTP error (4xx or 5xx). A 2xx
    /// or 3xx there would count as a failure an answer every client reads
    /// as a success.
    pub(super) fn error_status(&mut self, code: u16, path: &str) {
        self.check((400..=599).contains(&code), path, || {
            format!("status {code} is not an error status; expected 400-599 (a failure answers with a 4xx or a 5xx)")
        });
    }

    pub(super) fn fraction(&mut self, v: f64, path: &str, range: &str, ok: impl Fn(f64) -> bool) {
        if self.finite_in(v, path, &format!("a fraction in {range}")) {
            self.check(ok(v), path, || {
                format!(
                    "{} is out of range; expected a fraction in {range}",
                    crate::human::num(v)
                )
            });
        }
    }

    // ------------------------------------------------------------ top level

    fn top_level(&mut self, s: &Scenario) {
        if let Some(bad) = unsafe_char_in(&s.name) {
            self.push("name", unsafe_name(&format!("name `{}`", s.name), &bad));
        } else if let Some(why) = formula_start(&s.name) {
            self.push("name", format!("name `{}` {why}", s.name));
        } else {
            self.check(usable_folder_name(&s.name), "name", || {
            format!(
                "name `{}` cannot be a folder name; expected a non-empty name without `/` or `\\`, other than `.` and `..`",
                s.name
            )
            });
        }
        self.positive(s.duration, "duration", "duration");
        let bucket = s.bucket();
        if self.positive(bucket, "bucket", "bucket") {
            self.check(bucket <= s.duration, "bucket", || {
                format!(
                    "bucket ({}) is longer than the run ({}); expected bucket <= duration",
                    bucket, s.duration
                )
            });
            let buckets = buckets(s);
            self.check(buckets <= MAX_BUCKETS, "bucket", || {
                format!(
                    "a bucket of {} cuts the run ({}) into {buckets} buckets; expected at most {MAX_BUCKETS}: use a longer bucket",
                    bucket, s.duration
                )
            });
        }
        self.check(
            (1..=MAX_REPLICATES).contains(&s.replicates),
            "replicates",
            || {
                format!(
                    "replicates is {}; expected 1 to {MAX_REPLICATES}",
                    s.replicates
                )
            },
        );
        self.check(s.limits.max_events > 0, "limits.max_events", || {
            "max_events is 0; expected > 0".into()
        });
        self.check(s.limits.max_in_flight > 0, "limits.max_in_flight", || {
            "max_in_flight is 0; expected > 0".into()
        });
    }

    // -------------------------------------------------------------- clients

    fn clients(&mut self, c: &Clients, run: Duration) {
        let a = &c.arrival;
        match a.kind {
            ArrivalKind::Poisson => {
                match a.rate {
                    Some(r) if self.finite(r.per_sec(), "clients.arrival.rate") => {
                        self.check(r.per_sec() > 0.0, "clients.arrival.rate", || {
                            format!("arrival rate is {r}; expected a rate > 0")
                        });
                        self.rate_bound(r.per_sec(), "clients.arrival.rate");
                    }
                    Some(_) => {}
                    None => self.push(
                        "clients.arrival",
                        "poisson arrivals need `rate`; expected { kind: poisson, rate: 2000/s }",
                    ),
                }
                for (field, set) in [
                    ("clients", a.clients.is_some()),
                    ("think", a.think.is_some()),
                ] {
                    self.check(!set, &format!("clients.arrival.{field}"), || {
                        format!("`{field}` applies to closed-loop clients only; expected it with kind: closed")
                    });
                }
            }
            ArrivalKind::Closed => {
                match a.clients {
                    Some(n) => {
                        self.check((1..=10_000_000).contains(&n), "clients.arrival.clients", || {
                            format!("clients is {n}; expected 1 to 10000000")
                        });
                    }
                    None => self.push(
                        "clients.arrival",
                        "closed-loop clients need `clients` and `think`; expected { kind: closed, clients: 500, think: { dist: exponential, mean: 1s } }",
                    ),
                }
                match &a.think {
                    Some(think) => self.distribution(think, "clients.arrival.think", "think time"),
                    None => self.push(
                        "clients.arrival.think",
                        "closed-loop clients need a `think` time; expected for example { dist: exponential, mean: 1s }",
                    ),
                }
                self.check(a.rate.is_none(), "clients.arrival.rate", || {
                    "`rate` does not apply to closed-loop clients (they send when ready); expected it only with kind: poisson".into()
                });
                self.check(c.schedule.is_empty(), "clients.schedule", || {
                    "a rate schedule does not apply to closed-loop clients; expected it only with kind: poisson".into()
                });
            }
        }
        if let Some(d) = c.deadline {
            self.positive(d, "clients.deadline", "deadline");
        }
        let mut prev_end: Option<(Duration, usize)> = None;
        for (i, p) in c.schedule.iter().enumerate() {
            let path = format!("clients.schedule.{i}");
            let Some(end) = self.schedule_point(p, &path, run) else {
                continue;
            };
            if let Some((prev, j)) = prev_end {
                self.check(p.at >= prev, &format!("{path}.at"), || {
                    format!(
                        "point at {} starts before point {j} ends ({prev}); expected points sorted by `at` and not overlapping"
                    , p.at)
                });
            }
            prev_end = Some((end, i));
        }
    }

    /// Refuses a rate above `MAX_RATE_PER_SEC`.
    fn rate_bound(&mut self, per_sec: f64, path: &str) {
        self.check(per_sec <= MAX_RATE_PER_SEC, path, || {
            format!("rate {per_sec:e}/s is absurdly large; expected at most {MAX_RATE_PER_SEC:e}/s")
        });
    }

    /// Checks one schedule point; returns its end when its shape is valid.
    fn schedule_point(&mut self, p: &SchedulePoint, path: &str, run: Duration) -> Option<Duration> {
        for (rate, field) in [(p.rate, "rate"), (p.ramp_to, "ramp_to")] {
            if let Some(r) = rate {
                let field = format!("{path}.{field}");
                if self.finite(r.per_sec(), &field) {
                    self.rate_bound(r.per_sec(), &field);
                }
            }
        }
        // A point that starts after the run also ends after it: one
        // problem, reported once (at its start).
        let inside = self.check(p.at < run, &format!("{path}.at"), || {
            format!(
                "point at {} is not inside the run ({}); expected at < duration",
                p.at, run
            )
        });
        let end = match (p.rate, p.for_, p.ramp_to, p.by) {
            (Some(_), None, None, None) => p.at,
            (Some(_), Some(len), None, None) => {
                if !self.positive(len, &format!("{path}.for"), "for") {
                    return None;
                }
                Duration(p.at.ns().saturating_add(len.ns()))
            }
            (None, None, Some(_), Some(by)) => {
                if !self.check(by > p.at, &format!("{path}.by"), || {
                    format!(
                        "ramp ends ({by}) before it starts ({}); expected by > at",
                        p.at
                    )
                }) {
                    return None;
                }
                by
            }
            _ => {
                self.push(path, format!(
                    "a schedule point has {}; expected exactly one of {{at, rate}}, {{at, rate, for}} or {{at, ramp_to, by}}",
                    present_fields(p)
                ));
                return None;
            }
        };
        let end_field = if p.by.is_some() {
            "by"
        } else if p.for_.is_some() {
            "for"
        } else {
            "at"
        };
        if inside {
            self.check(end <= run, &format!("{path}.{end_field}"), || {
                format!(
                    "point ends at {end}, after the run ({run}); expected it to end within the run"
                )
            });
        }
        Some(end)
    }

    // --------------------------------------------------------------- layers

    fn layers(&mut self, layers: &[Layer]) {
        self.check(layers.len() <= MAX_LAYERS, "layers", || {
            format!("{} layers; expected at most {MAX_LAYERS}", layers.len())
        });
        let names: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
        let labels = layer_labels(&names);
        let mut seen = Names::default();
        for (layer, path) in layers.iter().zip(&labels) {
            self.item_name("layer", &layer.name, &format!("{path}.name"), &mut seen);
            self.policy(layer, path);
        }
        self.column_names(layers, &labels);
    }

    /// Layer names that make a column of `summary.csv` or `timeseries.csv`
    /// twice (`attempts_<layer>` for a layer `after_deadline` is the
    /// column `attempts_after_deadline`): refused here, before any run,
    /// rather than when the tables are written.
    fn column_names(&mut self, layers: &[Layer], labels: &[String]) {
        if layers.len() > MAX_LAYERS {
            return;
        }
        let names: Vec<String> = layers.iter().map(|l| l.name.clone()).collect();
        let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
        if distinct.len() < names.len() {
            // A name given twice is its own error.
            return;
        }
        let Some(column) = crate::metrics::columns::repeated_column(&names) else {
            return;
        };
        let culprit = layers
            .iter()
            .zip(labels)
            .find(|(l, _)| column.ends_with(&format!("_{}", l.name)));
        if let Some((layer, path)) = culprit {
            self.push(
                format!("{path}.name"),
                format!(
                    "layer name `{}` makes the column `{column}` of the tables, which stormsim already writes for something else; expected another name",
                    layer.name
                ),
            );
        }
    }

    /// The name of a layer, service or call (`what`) at `path`: safe to
    /// show, usable in field paths, and not in `seen` (the names before it
    /// in its list).
    pub(super) fn item_name(&mut self, what: &str, n: &str, path: &str, seen: &mut Names) {
        if let Some(problem) = item_name_problem(what, n) {
            self.push(path, problem);
        } else if let Err(first) = seen.insert(n) {
            self.push(path, Names::clash(what, n, &first));
        }
    }

    /// The client policy of a layer or a call (as a layer) at `path`.
    pub(super) fn policy(&mut self, layer: &Layer, path: &str) {
        // A timeout longer than the run is fine: it never fires
        // (`stormsim check` says so).
        if let Some(t) = layer.timeout {
            self.positive(t, &format!("{path}.timeout"), "timeout");
        }
        self.retry(&layer.retry, &format!("{path}.retry"));
        self.layer_policy(layer, path);
    }

    fn hops(&mut self, s: &Scenario) {
        let names: Vec<&str> = s.layers.iter().map(|l| l.name.as_str()).collect();
        let labels = layer_labels(&names);
        for (i, (layer, path)) in s.layers.iter().zip(&labels).enumerate() {
            let probe = Probe {
                innermost: i + 1 == s.layers.len(),
                side_effects: Some(s.dependency.side_effects),
                field: "dependency.side_effects",
            };
            self.layer_hops(layer, path, probe);
        }
        self.global_budgets(s);
        self.consumers(s);
        self.sweep(s);
    }

    fn retry(&mut self, r: &Retry, path: &str) {
        self.check((1..=MAX_ATTEMPTS).contains(&r.max_attempts), &format!("{path}.max_attempts"), || {
            format!("max_attempts is {}; expected 1 to {MAX_ATTEMPTS} (total attempts, the first included)", r.max_attempts)
        });
        self.backoff(&r.backoff(), r.jitter, &format!("{path}.backoff"));
        if let Jitter::Proportional(f) = r.jitter {
            self.fraction(f, &format!("{path}.jitter.proportional"), "[0, 1)", |v| {
                (0.0..1.0).contains(&v)
            });
        }
        for (i, on) in r.retry_on.iter().enumerate() {
            let p = format!("{path}.retry_on.{i}");
            if let RetryOn::Status(code) = on {
                self.status(*code, &p);
            }
            self.check(!r.retry_on[..i].contains(on), &p, || {
                format!(
                    "{} is listed twice; expected each outcome once",
                    retry_on_text(*on)
                )
            });
        }
    }

    fn backoff(&mut self, b: &Backoff, jitter: Jitter, path: &str) {
        let kind = kind_name(b.kind);
        match (b.kind, b.multiplier) {
            (BackoffKind::Exponential, Some(m)) => {
                let p = format!("{path}.multiplier");
                if self.finite_in(m, &p, "a number > 0") {
                    self.check(m > 0.0, &p, || format!("multiplier is {m}; expected a number > 0"));
                }
            }
            (_, Some(_)) => self.push(format!("{path}.multiplier"), format!(
                "multiplier applies only to exponential backoff, not {kind}; remove it (with --set, set the whole backoff, e.g. {path}={{kind: {kind}, base: 100ms}})"
            )),
            _ => {}
        }
        match (b.kind, b.cap) {
            (BackoffKind::Constant, Some(_)) => self.push(format!("{path}.cap"), format!(
                "cap does not apply to constant backoff; remove it (with --set, set the whole backoff, e.g. {path}={{kind: constant, base: 100ms}})")),
            (_, Some(cap)) => {
                self.check(cap >= b.base, &format!("{path}.cap"), || {
                    format!("cap ({cap}) is below base ({}); expected cap >= base", b.base)
                });
            }
            (_, None) => {
                self.check(jitter != Jitter::Decorrelated || b.kind == BackoffKind::Constant, &format!("{path}.cap"), || {
                    format!("decorrelated jitter needs a cap on {kind} backoff; expected a cap such as 5s")
                });
            }
        }
    }

    // ----------------------------------------------------------- dependency

    fn dependency(&mut self, d: &Dependency, run: Duration) {
        self.server(
            "dependency",
            Some(d.concurrency),
            Some(&d.service_time),
            &d.server_fields(),
            Some(1),
            run,
        );
        self.flushes(&d.incidents, "dependency.incidents", false);
    }

    /// A server (a chain's dependency, a graph's service) at `path`: its
    /// workers, service time, queue, overload answer, incidents within the
    /// run and recovery. `replicas` is how many it has, `None` when that
    /// count is itself refused (`replicas: 0`): what depends on it (the
    /// replicas an incident names) is then not judged against a count
    /// that does not stand, which would only echo the root cause.
    pub(super) fn server(
        &mut self,
        path: &str,
        concurrency: Option<u32>,
        service_time: Option<&ServiceTime>,
        f: &ServerFields,
        replicas: Option<u32>,
        run: Duration,
    ) {
        if let Some(c) = concurrency {
            self.check(
                (1..=MAX_CONCURRENCY).contains(&c),
                &format!("{path}.concurrency"),
                || format!("concurrency is {c}; expected 1 to {MAX_CONCURRENCY} workers"),
            );
        }
        if let Some(st) = service_time {
            self.distribution(st, &format!("{path}.service_time"), "service time");
        }
        self.check(
            f.queue.capacity <= MAX_QUEUE_CAPACITY,
            &format!("{path}.queue.capacity"),
            || {
                format!(
                    "queue capacity {} is too large; expected at most {MAX_QUEUE_CAPACITY}",
                    f.queue.capacity
                )
            },
        );
        if let Some(t) = f.queue.timeout {
            self.positive(t, &format!("{path}.queue.timeout"), "queue timeout");
        }
        self.error_status(
            f.queue.timeout_status,
            &format!("{path}.queue.timeout_status"),
        );
        self.error_status(f.overload.status, &format!("{path}.overload.status"));
        if let Some(ra) = f.overload.retry_after {
            self.positive(ra, &format!("{path}.overload.retry_after"), "retry_after");
        }
        for (i, inc) in f.incidents.iter().enumerate() {
            self.incident(inc, &format!("{path}.incidents.{i}"), run);
            if let Some(replicas) = replicas {
                self.incident_replicas(inc, &format!("{path}.incidents.{i}.replicas"), replicas);
            }
        }
        self.incident_overlaps(&f.incidents, &format!("{path}.incidents"));
        self.fraction(
            f.recovery.from,
            &format!("{path}.recovery.from"),
            "(0, 1]",
            |v| v > 0.0 && v <= 1.0,
        );
    }

    /// A distribution of durations (service times, think times): exactly
    /// the fields of its `dist`, all > 0.
    fn distribution(&mut self, st: &ServiceTime, path: &str, what: &str) {
        let needed: &[&str] = match st.dist {
            DistKind::Constant => &["value"],
            DistKind::Exponential => &["mean"],
            DistKind::Lognormal => &["median", "p99"],
            DistKind::Uniform => &["min", "max"],
        };
        let fields = [
            ("value", st.value),
            ("mean", st.mean),
            ("median", st.median),
            ("p99", st.p99),
            ("min", st.min),
            ("max", st.max),
        ];
        let dist = dist_name(st.dist);
        let mut complete = true;
        for (name, value) in fields {
            let p = format!("{path}.{name}");
            match (needed.contains(&name), value) {
                (true, None) => {
                    complete = false;
                    self.push(
                        path,
                        format!(
                            "{dist} {what} needs `{name}`; expected {}",
                            dist_shape(st.dist)
                        ),
                    );
                }
                (true, Some(v)) => complete &= self.positive(v, &p, name),
                (false, Some(_)) => self.push(
                    p,
                    format!(
                        "`{name}` does not apply to {} {dist} {what}; expected {}",
                        crate::human::a_or_an(dist),
                        dist_shape(st.dist)
                    ),
                ),
                (false, None) => {}
            }
        }
        if !complete {
            return;
        }
        if let (Some(median), Some(p99)) = (st.median, st.p99) {
            self.check(p99 > median, &format!("{path}.p99"), || {
                format!("p99 ({p99}) is not above the median ({median}); expected p99 > median")
            });
        }
        if let (Some(min), Some(max)) = (st.min, st.max) {
            self.check(min < max, &format!("{path}.max"), || {
                format!("max ({max}) is not above min ({min}); expected min < max")
            });
        }
    }

    fn incident(&mut self, inc: &Incident, path: &str, run: Duration) {
        if self.check(inc.start < inc.end, &format!("{path}.end"), || {
            format!(
                "incident ends ({}) before it starts ({}); expected start < end",
                inc.end, inc.start
            )
        }) {
            self.check(inc.end <= run, &format!("{path}.end"), || {
                format!(
                    "incident ends at {}, after the run ({run}); expected end <= duration",
                    inc.end
                )
            });
        }
        let kind = incident_name(inc.kind);
        let needed: &[&str] = match inc.kind {
            IncidentKind::Down | IncidentKind::Blackhole | IncidentKind::Flush => &[],
            IncidentKind::Brownout => &["capacity"],
            IncidentKind::Errors => &["rate"],
            IncidentKind::Latency => &["add"],
        };
        let present = [
            ("capacity", inc.capacity.is_some()),
            ("rate", inc.rate.is_some()),
            ("status", inc.status.is_some()),
            ("add", inc.add.is_some()),
        ];
        for (name, is_set) in present {
            let allowed =
                needed.contains(&name) || (name == "status" && inc.kind == IncidentKind::Errors);
            if is_set && !allowed {
                self.push(
                    format!("{path}.{name}"),
                    format!(
                        "`{name}` does not apply to {} {kind} incident; expected {}",
                        crate::human::a_or_an(kind),
                        incident_shape(inc.kind)
                    ),
                );
            } else if !is_set && needed.contains(&name) {
                self.push(
                    path,
                    format!(
                        "{kind} incident needs `{name}`; expected {}",
                        incident_shape(inc.kind)
                    ),
                );
            }
        }
        if let Some(c) = inc.capacity {
            self.fraction(c, &format!("{path}.capacity"), "(0, 1]", |v| {
                v > 0.0 && v <= 1.0
            });
        }
        if let Some(r) = inc.rate {
            self.fraction(r, &format!("{path}.rate"), "[0, 1]", |v| {
                (0.0..=1.0).contains(&v)
            });
        }
        if let Some(s) = inc.status {
            self.error_status(s, &format!("{path}.status"));
        }
        if let Some(add) = inc.add {
            self.positive(add, &format!("{path}.add"), "add");
        }
    }

    /// An incident's `replicas` (at `path`) on a server of `replicas`: a
    /// count from 1 to all of them, or distinct indices below it.
    fn incident_replicas(&mut self, inc: &Incident, path: &str, replicas: u32) {
        match &inc.replicas {
            None => {}
            Some(ReplicaTargets::First(n)) => {
                self.check((1..=replicas).contains(n), path, || {
                    format!("the incident hits {n} replicas of {replicas}; expected 1 to {replicas} (or a list of replica indices)")
                });
            }
            Some(ReplicaTargets::List(list)) => {
                self.check(!list.is_empty(), path, || {
                    "an empty list of replicas; expected replica indices such as [0, 2], or no `replicas` for all of them".to_string()
                });
                for (k, &r) in list.iter().enumerate() {
                    let at = format!("{path}.{k}");
                    if !self.check(r < replicas, &at, || {
                        format!("replica {r} does not exist; expected an index from 0 to {} (replicas count from 0)", replicas.saturating_sub(1))
                    }) {
                        continue;
                    }
                    self.check(!list[..k].contains(&r), &at, || {
                        format!("replica {r} is listed twice; expected distinct indices")
                    });
                }
            }
        }
    }

    /// Incidents of one kind must not overlap where they hit the same
    /// replica: sorted by start, each must start at or after the latest
    /// end of the same kind before it.
    fn incident_overlaps(&mut self, incidents: &[Incident], path: &str) {
        let mut order: Vec<usize> = (0..incidents.len()).collect();
        order.sort_by_key(|&i| (incidents[i].start, i));
        let mut latest: Vec<(IncidentKind, usize)> = Vec::new();
        // Incidents on replicas: pairs that share a replica.
        if incidents.iter().any(|i| i.replicas.is_some()) {
            return self.replica_overlaps(incidents, path);
        }
        for i in order {
            let a = &incidents[i];
            let slot = latest.iter_mut().find(|(k, _)| *k == a.kind);
            match slot {
                Some((_, j)) if incidents[*j].end > a.start => {
                    let b = &incidents[*j];
                    self.push(format!("{path}.{i}.start"), format!(
                        "this {} incident ({} to {}) overlaps incident {j} ({} to {}); expected incidents of the same kind not to overlap",
                        incident_name(a.kind), a.start, a.end, b.start, b.end
                    ));
                    if a.end > b.end {
                        *j = i;
                    }
                }
                Some((_, j)) => *j = i,
                None => latest.push((a.kind, i)),
            }
        }
    }

    /// [`Self::incident_overlaps`] when incidents name replicas: every
    /// pair of one kind that shares a replica must not overlap in time.
    fn replica_overlaps(&mut self, incidents: &[Incident], path: &str) {
        let hits =
            |i: &Incident, r: u32| i.replicas.as_ref().is_none_or(|t| t.indices().contains(&r));
        let shares = |a: &Incident, b: &Incident| match (&a.replicas, &b.replicas) {
            (None, _) | (_, None) => true,
            (Some(t), _) => t.indices().iter().any(|&r| hits(b, r)),
        };
        for (i, a) in incidents.iter().enumerate() {
            for (j, b) in incidents.iter().enumerate().take(i) {
                if a.kind == b.kind && a.start < b.end && b.start < a.end && shares(a, b) {
                    self.push(format!("{path}.{i}.start"), format!(
                        "this {} incident ({} to {}) overlaps incident {j} ({} to {}) on a replica they both hit; expected incidents of the same kind not to overlap on a replica",
                        incident_name(a.kind), a.start, a.end, b.start, b.end
                    ));
                    break;
                }
            }
        }
    }

    // ------------------------------------------------- analysis and variants

    fn analysis(&mut self, s: &Scenario) {
        let a = &s.analysis;
        self.fraction(
            a.recovery_threshold,
            "analysis.recovery_threshold",
            "(0, 1]",
            |v| v > 0.0 && v <= 1.0,
        );
        let window = s.recovery_window();
        self.check(window >= s.bucket() && window.ns() > 0, "analysis.recovery_window", || {
            let why = if s.bucket.is_none() && window.ns() > 0 {
                format!(
                    " (a {} run needs buckets of {} or longer to stay within {} buckets)",
                    s.duration,
                    s.bucket(),
                    crate::metrics::recorder::MAX_BUCKETS
                )
            } else {
                String::new()
            };
            format!("recovery_window ({window}) is shorter than a bucket ({}){why}; expected recovery_window >= bucket", s.bucket())
        });
        if let Some(t) = a.trigger_end {
            self.check(t <= s.duration, "analysis.trigger_end", || {
                format!(
                    "trigger_end ({t}) is after the run ({}); expected trigger_end <= duration",
                    s.duration
                )
            });
            if let Some(start) = super::build::trigger_start(s) {
                self.check(t.ns() >= start, "analysis.trigger_end", || {
                    format!(
                        "trigger_end ({t}) is before the trigger starts ({}, the first incident or change of the clients' schedule); expected trigger_end at or after it",
                        crate::scenario::units::Duration(start)
                    )
                });
            }
        }
    }

    fn variants(&mut self, s: &Scenario) {
        let mut seen = Names::default();
        for (i, v) in s.variants.iter().enumerate() {
            let path = format!("variants.{i}.name");
            if let Some(bad) = unsafe_char_in(&v.name) {
                self.push(
                    path,
                    unsafe_name(&format!("variant name `{}`", v.name), &bad),
                );
            } else if let Some(why) = formula_start(&v.name) {
                self.push(path, format!("variant name `{}` {why}", v.name));
            } else if v.name.trim().is_empty() {
                self.push(path, "variant name is empty; expected a name");
            } else if v.name.contains('=') {
                self.push(
                    path,
                    format!(
                        "variant name `{}` contains `=`, which reads as a sweep label (`key=value`) or splits a `--set PATH=VALUE`; expected a name without `=`",
                        v.name
                    ),
                );
            } else if let Err(first) = seen.insert(&v.name) {
                self.push(path, Names::clash("variant", &v.name, &first));
            }
        }
    }
}

/// The names of one list seen so far, by their Unicode-normalized form
/// (NFKC): `café` written with `é` and with `e` and a combining accent
/// print alike, in tables and terminals, so they are one name twice.
#[derive(Default)]
pub(super) struct Names(HashMap<String, String>);

impl Names {
    /// Records `n`, or returns the name before it that it clashes with
    /// (itself, or one that normalizes to the same).
    pub(super) fn insert(&mut self, n: &str) -> Result<(), String> {
        use unicode_normalization::UnicodeNormalization;
        let key: String = n.nfkc().collect();
        match self.0.get(&key) {
            Some(first) => Err(first.clone()),
            None => {
                self.0.insert(key, n.to_string());
                Ok(())
            }
        }
    }

    /// What is said of `n`, a name of a `what` that clashes with `first`.
    pub(super) fn clash(what: &str, n: &str, first: &str) -> String {
        if n == first {
            format!("{what} name `{n}` is used twice; expected unique {what} names")
        } else {
            format!(
                "{what} name `{n}` is the same as the earlier `{first}` written with other Unicode characters (equal once normalized, NFKC), so the two would print alike; expected unique {what} names"
            )
        }
    }
}

fn usable_folder_name(name: &str) -> bool {
    !name.trim().is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

/// The message about a name that holds an unsafe character: names end up
/// on terminals, in tables and in folder names, where such a character
/// could hide or rewrite what is shown.
/// What is wrong with `n` as the name of a layer, service or call
/// (`what`), if anything: a name is shown in tables and terminals and
/// stands in field paths, so it holds no control or invisible characters,
/// does not start as a spreadsheet formula, is not a number (a path reads
/// that as an index) and has no `.`, `=`, brackets or spaces. `stormsim
/// import --name` is held to the same rule, so what it prints pastes.
pub fn item_name_problem(what: &str, n: &str) -> Option<String> {
    if let Some(bad) = unsafe_char_in(n) {
        Some(unsafe_name(&format!("{what} name `{n}`"), &bad))
    } else if let Some(why) = formula_start(n) {
        Some(format!("{what} name `{n}` {why}"))
    } else if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() {
        Some(format!(
            "{what} name `{n}` is a number, which a field path reads as an index; expected a name with a letter, such as api"
        ))
    } else if !usable_layer_name(n) {
        Some(format!(
            "{what} name `{n}` is not usable in field paths; expected a non-empty name without `.`, `=`, brackets or spaces"
        ))
    } else {
        None
    }
}

pub(super) fn unsafe_name(what: &str, bad: &str) -> String {
    format!(
        "{what} contains {bad}; expected a name without control or invisible formatting characters (they could rewrite what a terminal or a table shows)"
    )
}

fn present_fields(p: &SchedulePoint) -> String {
    let fields: Vec<&str> = [
        ("rate", p.rate.is_some()),
        ("for", p.for_.is_some()),
        ("ramp_to", p.ramp_to.is_some()),
        ("by", p.by.is_some()),
    ]
    .iter()
    .filter(|f| f.1)
    .map(|f| f.0)
    .collect();
    if fields.is_empty() {
        "only `at`".to_string()
    } else {
        format!("`at`, `{}`", fields.join("`, `"))
    }
}

fn retry_on_text(on: RetryOn) -> String {
    match on {
        RetryOn::Timeout => "timeout".into(),
        RetryOn::Connection => "connection".into(),
        RetryOn::Status(c) => c.to_string(),
        RetryOn::Class(c) => format!("{c}xx"),
    }
}

pub(super) fn kind_name(k: BackoffKind) -> &'static str {
    match k {
        BackoffKind::Constant => "constant",
        BackoffKind::Linear => "linear",
        BackoffKind::Exponential => "exponential",
    }
}

fn dist_name(d: DistKind) -> &'static str {
    match d {
        DistKind::Constant => "constant",
        DistKind::Exponential => "exponential",
        DistKind::Lognormal => "lognormal",
        DistKind::Uniform => "uniform",
    }
}

fn dist_shape(d: DistKind) -> &'static str {
    match d {
        DistKind::Constant => "{ dist: constant, value: 20ms }",
        DistKind::Exponential => "{ dist: exponential, mean: 25ms }",
        DistKind::Lognormal => "{ dist: lognormal, median: 20ms, p99: 120ms }",
        DistKind::Uniform => "{ dist: uniform, min: 10ms, max: 30ms }",
    }
}

fn incident_name(k: IncidentKind) -> &'static str {
    match k {
        IncidentKind::Down => "down",
        IncidentKind::Blackhole => "blackhole",
        IncidentKind::Brownout => "brownout",
        IncidentKind::Errors => "errors",
        IncidentKind::Latency => "latency",
        IncidentKind::Flush => "flush",
    }
}

fn incident_shape(k: IncidentKind) -> &'static str {
    match k {
        IncidentKind::Down => "{ kind: down, start, end }",
        IncidentKind::Blackhole => "{ kind: blackhole, start, end }",
        IncidentKind::Brownout => "{ kind: brownout, start, end, capacity: 0.3 }",
        IncidentKind::Errors => "{ kind: errors, start, end, rate: 0.5, status: 503 }",
        IncidentKind::Latency => "{ kind: latency, start, end, add: 400ms }",
        IncidentKind::Flush => "{ kind: flush, start, end }",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::FULL;
    use crate::scenario::load_str;
    use crate::scenario::units::Rate;

    fn full() -> Scenario {
        load_str(FULL, "full.yaml").unwrap()
    }

    /// Applies `edit` to the full example and expects exactly one issue at
    /// `path` whose message contains `fragment`.
    fn expect(edit: impl FnOnce(&mut Scenario), path: &str, fragment: &str) {
        let mut s = full();
        edit(&mut s);
        let issues = validate(&s);
        assert!(
            issues
                .iter()
                .any(|i| i.path == path && i.message.contains(fragment)),
            "expected {path}: …{fragment}… in {issues:#?}"
        );
    }

    #[test]
    fn the_full_example_is_valid() {
        assert_eq!(validate(&full()), vec![]);
    }

    #[test]
    fn top_level_rules() {
        expect(|s| s.name = "a/b".into(), "name", "folder name");
        expect(|s| s.name = "..".into(), "name", "folder name");
        expect(
            |s| s.duration = Duration(0),
            "duration",
            "expected a duration > 0",
        );
        expect(
            |s| s.bucket = Some(Duration::from_secs(601)),
            "bucket",
            "bucket <= duration",
        );
        expect(
            |s| s.replicates = 10_001,
            "replicates",
            "expected 1 to 10000",
        );
        expect(|s| s.limits.max_events = 0, "limits.max_events", "> 0");
    }

    #[test]
    fn client_rules() {
        expect(
            |s| s.clients.arrival.rate = Some(Rate(f64::NAN)),
            "clients.arrival.rate",
            "not a finite number",
        );
        expect(
            |s| s.clients.arrival.rate = Some(Rate(0.0)),
            "clients.arrival.rate",
            "expected a rate > 0",
        );
        expect(
            |s| s.clients.deadline = Some(Duration(0)),
            "clients.deadline",
            "> 0",
        );
        expect(
            |s| s.clients.schedule.swap(0, 1),
            "clients.schedule.1.at",
            "sorted",
        );
        expect(
            |s| s.clients.schedule[1].at = Duration::from_secs(601),
            "clients.schedule.1.at",
            "inside the run",
        );
        expect(
            |s| s.clients.schedule[2].ramp_to = None,
            "clients.schedule.2",
            "exactly one of",
        );
        expect(
            |s| s.clients.schedule[2].by = Some(Duration::from_secs(300)),
            "clients.schedule.2.by",
            "by > at",
        );
        expect(
            |s| s.clients.schedule[1].for_ = Some(Duration::from_secs(200)),
            "clients.schedule.2.at",
            "overlapping",
        );
    }

    #[test]
    fn layer_rules() {
        expect(
            |s| s.layers[1].name = "a.b".into(),
            "layers.1.name",
            "not usable",
        );
        expect(
            |s| s.layers[0].timeout = Some(Duration(0)),
            "layers.api.timeout",
            "> 0",
        );
        // A timeout longer than the run never fires: that is no error.
        let mut long = full();
        long.layers[0].timeout = Some(Duration::from_secs(3600));
        assert_eq!(validate(&long), vec![]);
        expect(
            |s| s.layers[0].retry.max_attempts = 1001,
            "layers.api.retry.max_attempts",
            "1 to 1000",
        );
        expect(
            |s| s.layers[0].retry.backoff_mut().multiplier = Some(f64::INFINITY),
            "layers.api.retry.backoff.multiplier",
            "finite",
        );
        expect(
            |s| s.layers[0].retry.backoff_mut().multiplier = Some(0.0),
            "layers.api.retry.backoff.multiplier",
            "> 0",
        );
        expect(
            |s| s.layers[1].retry.backoff_mut().multiplier = Some(2.0),
            "layers.storage.retry.backoff.multiplier",
            "only to exponential",
        );
        expect(
            |s| s.layers[1].retry.backoff_mut().kind = BackoffKind::Constant,
            "layers.storage.retry.backoff.cap",
            "does not apply to constant",
        );
        expect(
            |s| {
                s.layers[0].retry.backoff_mut().cap = None;
                s.layers[0].retry.jitter = Jitter::Decorrelated;
            },
            "layers.api.retry.backoff.cap",
            "needs a cap",
        );
        expect(
            |s| s.layers[1].retry.jitter = Jitter::Proportional(1.0),
            "layers.storage.retry.jitter.proportional",
            "[0, 1)",
        );
        expect(
            |s| s.layers[0].retry.retry_on.push(RetryOn::Timeout),
            "layers.api.retry.retry_on.4",
            "twice",
        );
        expect(
            |s| s.layers = vec![s.layers[0].clone(); 17],
            "layers",
            "at most 16",
        );
    }

    #[test]
    fn dependency_rules() {
        expect(
            |s| s.dependency.concurrency = 0,
            "dependency.concurrency",
            "1 to 1000000",
        );
        expect(
            |s| s.dependency.service_time.p99 = Some(Duration::from_millis(10)),
            "dependency.service_time.p99",
            "p99 > median",
        );
        expect(
            |s| s.dependency.service_time.value = Some(Duration(1)),
            "dependency.service_time.value",
            "does not apply",
        );
        expect(
            |s| s.dependency.service_time.median = None,
            "dependency.service_time",
            "needs `median`",
        );
        expect(
            |s| s.dependency.queue.capacity = 100_000_001,
            "dependency.queue.capacity",
            "too large",
        );
        expect(
            |s| s.dependency.overload.status = 600,
            "dependency.overload.status",
            "400-599",
        );
        expect(
            |s| s.dependency.overload.status = 204,
            "dependency.overload.status",
            "not an error status",
        );
        expect(
            |s| s.dependency.overload.retry_after = Some(Duration(0)),
            "dependency.overload.retry_after",
            "> 0",
        );
        expect(
            |s| s.dependency.incidents[0].end = Duration::from_secs(60),
            "dependency.incidents.0.end",
            "start < end",
        );
        expect(
            |s| s.dependency.incidents[2].capacity = Some(0.0),
            "dependency.incidents.2.capacity",
            "(0, 1]",
        );
        expect(
            |s| s.dependency.incidents[2].capacity = None,
            "dependency.incidents.2",
            "needs `capacity`",
        );
        expect(
            |s| s.dependency.incidents[0].add = Some(Duration(1)),
            "dependency.incidents.0.add",
            "does not apply to a down",
        );
        expect(
            |s| s.dependency.incidents[3].rate = Some(f64::NAN),
            "dependency.incidents.3.rate",
            "finite",
        );
        expect(
            |s| s.dependency.incidents[3].status = Some(99),
            "dependency.incidents.3.status",
            "400-599",
        );
        expect(
            |s| s.dependency.incidents[4].add = Some(Duration(0)),
            "dependency.incidents.4.add",
            "> 0",
        );
        expect(
            |s| {
                let mut d = s.dependency.incidents[0].clone();
                d.start = Duration::from_secs(150);
                d.end = Duration::from_secs(200);
                s.dependency.incidents.push(d);
            },
            "dependency.incidents.5.start",
            "overlaps incident 0",
        );
        expect(
            |s| s.dependency.recovery.from = 0.0,
            "dependency.recovery.from",
            "(0, 1]",
        );
    }

    #[test]
    fn analysis_and_variant_rules() {
        expect(
            |s| s.analysis.recovery_threshold = 1.5,
            "analysis.recovery_threshold",
            "(0, 1]",
        );
        expect(
            |s| s.analysis.recovery_window = Some(Duration::from_millis(10)),
            "analysis.recovery_window",
            ">= bucket",
        );
        expect(
            |s| s.analysis.trigger_end = Some(Duration::from_secs(700)),
            "analysis.trigger_end",
            "<= duration",
        );
        // The example's first incident starts at 60 s: a trigger cannot
        // end before it starts (and at its start it may).
        expect(
            |s| s.analysis.trigger_end = Some(Duration::from_secs(59)),
            "analysis.trigger_end",
            "before the trigger starts (1m",
        );
        expect(
            |s| s.variants[1].name = "no-jitter".into(),
            "variants.1.name",
            "twice",
        );
        expect(
            |s| s.variants[0].name = " ".into(),
            "variants.0.name",
            "empty",
        );
    }

    #[test]
    fn a_schedule_point_after_the_run_is_one_problem() {
        let mut s = full();
        s.duration = Duration::from_secs(30);
        s.clients.schedule.truncate(2);
        s.dependency.incidents.clear();
        let issues: Vec<Issue> = validate(&s)
            .into_iter()
            .filter(|i| i.path.starts_with("clients.schedule"))
            .collect();
        // Point 0 at 1m and point 1 at 2m (for 10s): each once, at its start.
        assert_eq!(
            issues.iter().map(|i| i.path.as_str()).collect::<Vec<_>>(),
            ["clients.schedule.0.at", "clients.schedule.1.at"],
            "{issues:?}"
        );
        // A point that starts inside and ends after: its end.
        s.duration = Duration::from_secs(125);
        let ends: Vec<String> = validate(&s)
            .into_iter()
            .filter(|i| i.path.starts_with("clients.schedule"))
            .map(|i| i.path)
            .collect();
        assert_eq!(ends, ["clients.schedule.1.for"]);
    }
}
