//! How much memory one run needs, estimated from the scenario before
//! anything runs, so that a value that drives an allocation (a breaker's
//! `window_calls` times the layer's `instances`, a long run in short
//! buckets, a million closed-loop clients, a high rate of messages over a
//! long run) is refused with the estimate and the fields that make it,
//! instead of aborting the process on a failed allocation hours in.
//!
//! Counted, per run: the time series (counters per bucket and layer or
//! call, two gauges, four latency histograms: `metrics::recorder`), the
//! state of every budget, throttle, breaker and bulkhead (one per instance
//! of each layer or call, or one per layer or call when shared:
//! `model::gates`), the counters of each priority class, every connection pool (one per caller instance, its
//! slots: `model::pool`), every service of a graph, the closed-loop clients (an
//! event each), and what grows with every logical request by design: a
//! commit counter per request at each server that writes, a record per
//! message for consumers (expected requests: the offered rate over the run, at most
//! `limits.max_events`), and what grows with load (requests in flight,
//! queued work, pending events) up to its guard rail
//! `limits.max_in_flight`, which the run enforces even within one event
//! (a fan-out below a fan-out stops expanding at the limit). Runs go in parallel, one per worker
//! thread, so the peak is about this times the number of threads.

use crate::metrics::Recorder;
use crate::model::gates;

use super::build::to_model;
use super::locate::{item_labels, layer_labels};
use super::types::{Scenario, SideEffects};
use super::validate::Issue;

/// The most memory one run may need (bytes, decimal: 4 GB).
pub const MAX_RUN_BYTES: u64 = 4_000_000_000;

/// Bytes a closed-loop client holds from the start (its first event).
const CLIENT_BYTES: u64 = 48;
/// Bytes a published message keeps until the run ends (its record).
const MESSAGE_BYTES: u64 = 40;
/// Bytes per OCC client (its state and completion time).
const OCC_CLIENT_BYTES: u64 = 16;
/// Bytes one call or request alive at once holds, with its pending events
/// (measured: a run stopped by the guard rail at 20 000 000 in flight
/// peaked at about 4.1 GB).
pub const IN_FLIGHT_BYTES: u64 = 200;
/// Bytes a service of a graph holds from the start, whatever its load: its
/// server's state and its random streams (work and incidents), rounded up.
const SERVICE_BYTES: u64 = 512;

/// One part of the estimate: the field that drives it, how, and its size.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The field path to change to make it smaller.
    pub path: String,
    /// How the size comes about, in words.
    pub how: String,
    pub bytes: u64,
    /// Whether it grows with load up to a guard rail (requests in flight,
    /// records per request) rather than being allocated from the start.
    pub grows: bool,
    /// Another field that drives it as much (a part per instance: the
    /// layer's or call's `instances`, beside `path`'s size of each).
    pub also: Option<String>,
}

/// The estimate of one run, largest part first.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub bytes: u64,
    pub parts: Vec<Part>,
}

impl Estimate {
    /// What the run allocates from its start, whatever its load: the
    /// parts that do not grow. Runs held in memory at once are admitted
    /// by this (`runner`), so that runs that each fit do not together
    /// exhaust the machine.
    pub fn at_start(&self) -> u64 {
        self.parts
            .iter()
            .filter(|p| !p.grows)
            .fold(0u64, |t, p| t.saturating_add(p.bytes))
    }
}

/// The memory one run of `s` needs (see the module documentation).
pub fn estimate(s: &Scenario) -> Estimate {
    let mut parts = Vec::new();
    if let Some(o) = &s.occ {
        parts.push(Part {
            path: "occ.clients".into(),
            how: crate::human::plural(o.clients, "client"),
            bytes: u64::from(o.clients) * OCC_CLIENT_BYTES,
            grows: false,
            also: None,
        });
        // Its length is known only when it ends: the most buckets.
        let max = crate::metrics::recorder::MAX_BUCKETS as u64;
        parts.push(Part {
            path: "bucket".into(),
            how: format!("up to {max} time buckets"),
            bytes: Recorder::state_bytes(max, 1, 1),
            grows: false,
            also: None,
        });
        return total(parts);
    }
    let m = to_model(s);
    let buckets = m.duration.div_ceil(m.bucket.max(1)).max(1);
    // A chain's series are per layer; a graph's per call edge (the
    // clients' entry call and every service's calls).
    let edges = m.topology.edges().len();
    let per = match (s.is_graph(), edges) {
        (false, 1) => "1 layer".to_string(),
        (false, n) => format!("{n} layers"),
        (true, 1) => "1 call edge".to_string(),
        (true, n) => format!("{n} call edges"),
    };
    parts.push(Part {
        path: "bucket".into(),
        how: format!(
            "{} (duration / bucket) × {per}",
            crate::human::plural(buckets, "time bucket")
        ),
        bytes: Recorder::state_bytes(m.duration, m.bucket, m.topology.edges().len()),
        grows: false,
        also: None,
    });
    // Per service and bucket: its counters and gauges while the run goes,
    // then a row of `services_timeseries.csv` kept with the run's results.
    let services = m.topology.services().len();
    if services > 0 {
        let state = crate::metrics::services::ServiceMetrics::state_bytes(
            buckets,
            services,
            m.topology.edges().len(),
        );
        let rows = buckets
            .saturating_mul(services as u64)
            .saturating_mul(std::mem::size_of::<crate::metrics::services::ServiceRow>() as u64);
        parts.push(Part {
            path: "bucket".into(),
            how: format!(
                "{buckets} time buckets (duration / bucket) × {}: counters and rows of services_timeseries.csv",
                if services == 1 { "1 service".to_string() } else { format!("{services} services") }
            ),
            bytes: state.saturating_add(rows),
            grows: false,
            also: None,
        });
    }
    if !m.classes.is_empty() {
        let n = m.classes.len() as u64;
        parts.push(Part {
            path: "clients.classes".into(),
            how: format!(
                "{n} priority classes × {} each (counts and a latency histogram)",
                bytes_text(Recorder::class_bytes())
            ),
            bytes: n * Recorder::class_bytes(),
            grows: false,
            also: None,
        });
    }
    let labels = edge_labels(s);
    let instance_fields = edge_instance_fields(s);
    for ((l, label), instances) in m
        .topology
        .edges()
        .iter()
        .map(|e| &e.policy)
        .zip(&labels)
        .zip(&instance_fields)
    {
        for (what, count, each) in gates::state_bytes(l) {
            let per_instance = count > 1;
            let path = match (what, l.breaker.map(|b| b.config.window)) {
                ("breaker", Some(crate::model::breaker::BreakerWindow::Count(n))) if n >= 1000 => {
                    format!("{label}.breaker.window_calls")
                }
                _ if per_instance => instances.clone(),
                _ => format!("{label}.{what}"),
            };
            let how = if per_instance {
                format!(
                    "{} ({instances}) × {} each",
                    crate::human::plural(count, &format!("{what} state")),
                    bytes_text(each)
                )
            } else {
                format!("one {what} state of {}", bytes_text(each))
            };
            let also = (per_instance && path != *instances).then(|| instances.clone());
            parts.push(Part {
                path,
                how,
                bytes: count.saturating_mul(each),
                grows: false,
                also,
            });
        }
    }
    // Connection pools: one per caller instance that uses it, each with its
    // slots (made when first used; counted as if every instance did).
    for ((l, label), instances) in m
        .topology
        .edges()
        .iter()
        .map(|e| &e.policy)
        .zip(&labels)
        .zip(&instance_fields)
    {
        if let Some(pool) = l.pool {
            let each =
                std::mem::size_of::<crate::model::pool::Slot>() as u64 * u64::from(pool.size) + 64;
            let count = u64::from(l.instances.max(1));
            // The larger factor is the field to name first; the other
            // drives it too (a sweep or variant of either is blamed).
            let (path, also) = if count > u64::from(pool.size) {
                (instances.clone(), format!("{label}.pool.size"))
            } else {
                (format!("{label}.pool.size"), instances.clone())
            };
            parts.push(Part {
                path,
                how: format!(
                    "{count} connection pools ({instances}) × {} each ({label}.pool.size: {} connections)",
                    bytes_text(each),
                    pool.size
                ),
                bytes: count.saturating_mul(each),
                grows: false,
                also: Some(also),
            });
        }
    }
    // Per service of a graph: its adaptive concurrency limits (one per
    // replica; Envoy's keeps a window's samples, up to `MAX_KEPT`) and its
    // cache (per key its state, per entry its place in the LRU list).
    if s.is_graph() {
        let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
        for (svc, label) in s.services.iter().zip(item_labels("services", &names)) {
            if let Some(a) = &svc.adaptive_concurrency {
                let each = match a.kind {
                    crate::scenario::adaptive::AdaptiveKind::Gradient => {
                        crate::model::adaptive::gradient::MAX_KEPT as u64 * 8 + 256
                    }
                    _ => 256,
                };
                let count = u64::from(svc.slots().max(1));
                parts.push(Part {
                    path: format!("{label}.adaptive_concurrency"),
                    how: format!(
                        "{count} adaptive limits ({label}.replicas) × up to {} each",
                        bytes_text(each)
                    ),
                    bytes: count.saturating_mul(each),
                    grows: false,
                    also: None,
                });
            }
            if let Some(c) = &svc.cache {
                use crate::model::cache::{ENTRY_BYTES, KEY_STATE_BYTES};
                let entries = u64::from(c.capacity.min(c.keys));
                parts.push(Part {
                    path: format!("{label}.cache.keys"),
                    how: format!(
                        "{} keys ({label}.cache.keys) × {KEY_STATE_BYTES} B of state each and {entries} entries × {ENTRY_BYTES} B",
                        c.keys
                    ),
                    bytes: u64::from(c.keys)
                        .saturating_mul(KEY_STATE_BYTES)
                        .saturating_add(entries.saturating_mul(ENTRY_BYTES)),
                    grows: false,
                    also: None,
                });
            }
        }
    }
    // What grows with load, up to its guard rail.
    parts.push(Part {
        path: "limits.max_in_flight".into(),
        how: format!(
            "up to {} calls and requests in flight (limits.max_in_flight) × {IN_FLIGHT_BYTES} B each",
            m.limits.max_in_flight
        ),
        bytes: m.limits.max_in_flight.saturating_mul(IN_FLIGHT_BYTES),
        grows: true,
        also: None,
    });
    if s.is_graph() {
        parts.push(Part {
            path: "services".into(),
            how: if services == 1 {
                "1 service's servers and random streams".to_string()
            } else {
                format!("{services} services' servers and random streams")
            },
            bytes: services as u64 * SERVICE_BYTES,
            grows: false,
            also: None,
        });
    }
    if let Some(c) = m.closed {
        parts.push(Part {
            path: "clients.arrival.clients".into(),
            how: crate::human::plural(c.clients, "closed-loop client"),
            bytes: u64::from(c.clients) * CLIENT_BYTES,
            grows: false,
            also: None,
        });
    }
    // A record per message; a commit count per request at each service
    // that writes.
    let mut per_request: Vec<(u64, &str, String)> = Vec::new();
    if s.consumers.is_some() {
        per_request.push((MESSAGE_BYTES, "a record per message", "consumers".into()));
    } else if s.is_graph() {
        let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
        for (svc, label) in s.services.iter().zip(item_labels("services", &names)) {
            if svc.side_effects != SideEffects::Read {
                per_request.push((
                    1,
                    "a commit count per request",
                    format!("{label}.side_effects"),
                ));
            }
        }
    } else if s.dependency.side_effects != SideEffects::Read {
        per_request.push((
            1,
            "a commit count per request",
            "dependency.side_effects".into(),
        ));
    }
    for (each, what, field) in per_request {
        let requests = match m.closed {
            Some(c) => {
                let think = c.think.mean().max(1.0);
                f64::from(c.clients) * (1.0 + m.duration as f64 / think)
            }
            None => m.arrivals.mass(0, m.duration),
        };
        let requests = (requests.max(0.0) as u64).min(m.limits.max_events);
        parts.push(Part {
            path: if m.closed.is_some() {
                "clients.arrival.clients".into()
            } else {
                "clients.arrival.rate".into()
            },
            how: format!("about {requests} logical requests over the run ({field}: {what})"),
            bytes: requests.saturating_mul(each),
            grows: true,
            also: None,
        });
    }
    total(parts)
}

/// The field path of each edge's policy: a chain's layers (`layers.api`),
/// or a graph's entry (`clients.calls`) and calls
/// (`services.gateway.calls.orders`), in edge order.
pub(crate) fn edge_labels(s: &Scenario) -> Vec<String> {
    if !s.is_graph() {
        let names: Vec<&str> = s.layers.iter().map(|l| l.name.as_str()).collect();
        return layer_labels(&names);
    }
    let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
    let mut out = vec!["clients.calls".to_string()];
    for (svc, label) in s.services.iter().zip(item_labels("services", &names)) {
        let calls: Vec<&str> = svc.calls.iter().map(|c| c.label()).collect();
        out.extend(item_labels(&format!("{label}.calls"), &calls));
    }
    out
}

/// The field that says how many instances each edge's policy state has
/// (in the order of [`edge_labels`]): a layer's or a call's `instances`,
/// or for a call of a replicated service that leaves it at 1, the
/// caller's `replicas` (its autoscaler's `max`), which the call's state
/// is kept per.
pub(crate) fn edge_instance_fields(s: &Scenario) -> Vec<String> {
    let labels = edge_labels(s);
    if !s.is_graph() {
        return labels.iter().map(|l| format!("{l}.instances")).collect();
    }
    let mut out = vec!["clients.calls.instances".to_string()];
    let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
    let mut k = 1;
    for (svc, label) in s.services.iter().zip(item_labels("services", &names)) {
        for call in &svc.calls {
            let edge = labels.get(k).cloned().unwrap_or_default();
            k += 1;
            out.push(if call.instances == 1 && svc.slots() > 1 {
                match svc.autoscale {
                    Some(_) => format!("{label}.autoscale.max"),
                    None => format!("{label}.replicas"),
                }
            } else {
                format!("{edge}.instances")
            });
        }
    }
    out
}

fn total(mut parts: Vec<Part>) -> Estimate {
    parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    let bytes = parts.iter().fold(0u64, |t, p| t.saturating_add(p.bytes));
    Estimate { bytes, parts }
}

/// The problem with the largest of `runs` (variant name, scenario) when
/// one needs more than [`MAX_RUN_BYTES`]: which run (its index), the
/// estimate, and the fields that drive it, largest first (also as paths).
pub(crate) fn memory_issue<'a>(
    runs: impl Iterator<Item = (&'a str, &'a Scenario)>,
) -> Option<(usize, Issue, Vec<String>)> {
    let (run, (name, e)) = runs
        .map(|(name, s)| (name, estimate(s)))
        .enumerate()
        .max_by_key(|(_, (_, e))| e.bytes)?;
    if e.bytes <= MAX_RUN_BYTES {
        return None;
    }
    // The parts that matter: the largest three, each a tenth of the whole
    // at least.
    let parts: Vec<&Part> = e
        .parts
        .iter()
        .take(3)
        .filter(|p| p.bytes >= e.bytes / 10)
        .collect();
    let drivers: Vec<String> = parts
        .iter()
        .map(|p| format!("{}: {} = {}", p.path, p.how, bytes_text(p.bytes)))
        .collect();
    // The fields named first, then those that drive the parts too.
    let paths: Vec<String> = parts
        .iter()
        .map(|p| p.path.clone())
        .chain(parts.iter().filter_map(|p| p.also.clone()))
        .collect();
    let which = if name == super::variants::BASE_VARIANT {
        String::new()
    } else {
        format!(" (variant `{name}`)")
    };
    let issue = Issue {
        path: e.parts[0].path.clone(),
        message: format!(
            "one run{which} would need about {} of memory, more than the {} a run may use; it comes from {}: make these smaller",
            bytes_text(e.bytes),
            bytes_text(MAX_RUN_BYTES),
            drivers.join("; ")
        ),
    };
    Some((run, issue, paths))
}

/// Bytes for people: `512 B`, `3.2 MB`, `40.0 GB`, `1.2 PB`.
pub fn bytes_text(b: u64) -> String {
    crate::human::Bytes(b).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::MINIMAL;
    use crate::scenario::load_str;

    fn with(extra: &str) -> Result<Scenario, crate::scenario::ScenarioErrors> {
        load_str(&format!("{MINIMAL}{extra}"), "x.yaml")
    }

    /// A graph of 100 services over 100 000 buckets: every service keeps
    /// counters and a row of services_timeseries.csv per bucket, counted
    /// exactly (it aborted the process on a failed allocation of 1.76 GB
    /// when only the chain's series were counted); the file's rows are
    /// refused when they do not fit a run's memory.
    #[test]
    fn every_services_series_is_counted() {
        use crate::metrics::services::{ServiceMetrics, ServiceRow};
        let graph = |services: usize, duration: &str| {
            let mut src = format!(
                "name: g\nduration: {duration}\nbucket: 1s\nreplicates: 1\n\
                 clients: {{ arrival: {{ kind: poisson, rate: 10/s }}, calls: {{ to: s0, timeout: 1s }} }}\nservices:\n"
            );
            for i in 0..services {
                src.push_str(&format!(
                    "  - {{ name: s{i}, concurrency: 4, service_time: {{ dist: constant, value: 1ms }} }}\n"
                ));
            }
            src
        };
        let s = load_str(&graph(100, "10000s"), "g.yaml").unwrap();
        let e = estimate(&s);
        let part = e
            .parts
            .iter()
            .find(|p| p.how.contains("× 100 services:"))
            .expect("the services' series are a part");
        let rows = 10_000u64 * 100;
        assert_eq!(
            part.bytes,
            ServiceMetrics::state_bytes(10_000, 100, 1)
                + rows * std::mem::size_of::<ServiceRow>() as u64
        );
        assert!(!part.grows);
        assert!(e.at_start() >= part.bytes && e.at_start() < e.bytes);
        // 10 M rows: within the row limit (a bound on disk space, the
        // rows are written as the runs end), but one run's counters and
        // rows do not fit its memory.
        let err = load_str(&graph(100, "100000s"), "g.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("100000 time buckets (duration / bucket) × 100 services: counters and rows of services_timeseries.csv = 3.6 GB"),
            "{err}"
        );
    }

    /// N10: a graph's series are per call edge (the clients' entry call
    /// and every service's calls), and the estimate says so; a chain's
    /// are per layer.
    #[test]
    fn series_are_counted_per_call_edge_or_layer() {
        let graph = "name: g\nduration: 10s\nbucket: 1s\nreplicates: 1\n\
             clients: { arrival: { kind: poisson, rate: 10/s }, calls: { to: a, timeout: 1s } }\n\
             services:\n  - { name: a, concurrency: 4, service_time: { dist: constant, value: 1ms }, calls: [{ to: b }, { to: c }] }\n\
             \x20 - { name: b, concurrency: 4, service_time: { dist: constant, value: 1ms } }\n\
             \x20 - { name: c, concurrency: 4, service_time: { dist: constant, value: 1ms } }\n";
        let e = estimate(&load_str(graph, "g.yaml").unwrap_or_else(|e| panic!("{e}")));
        assert!(
            e.parts
                .iter()
                .any(|p| p.how == "10 time buckets (duration / bucket) × 3 call edges"),
            "{e:?}"
        );
        let e = estimate(&with("layers:\n  - name: api\n").unwrap());
        assert!(
            e.parts.iter().any(|p| p.how.ends_with("× 1 layer")),
            "{e:?}"
        );
    }

    #[test]
    fn a_small_scenario_needs_little() {
        let e = estimate(&with("").unwrap());
        // What may be in flight (5 000 000 × 200 B), then 60 buckets and
        // the histograms: well under 10 MB.
        assert_eq!(e.parts[0].path, "limits.max_in_flight");
        assert_eq!(e.parts[0].bytes, 1_000_000_000);
        assert_eq!(e.parts[1].path, "bucket");
        assert!(
            e.parts[1].bytes > 100_000 && e.parts[1].bytes < 10_000_000,
            "{e:?}"
        );
    }

    #[test]
    fn breaker_windows_times_instances_are_counted_exactly() {
        let s = with(
            "layers:\n  - name: api\n    instances: 10\n    breaker: { kind: count, window_calls: 1000000 }\n",
        )
        .unwrap();
        let e = estimate(&s);
        let part = e
            .parts
            .iter()
            .find(|p| p.path == "layers.api.breaker.window_calls")
            .unwrap();
        let one = crate::model::breaker::Breaker::state_bytes(
            &crate::scenario::to_model(&s).topology.edges()[0]
                .policy
                .breaker
                .unwrap()
                .config,
        );
        assert_eq!(part.bytes, 10 * one);
        // One bit per call of the window.
        assert!((125_000..126_000).contains(&one), "{one}");
    }

    #[test]
    fn a_huge_breaker_window_is_refused_with_the_estimate() {
        let e = with(
            "layers:\n  - name: api\n    instances: 10\n    breaker: { kind: count, window_calls: 4294967295 }\n",
        )
        .unwrap_err();
        let text = e.to_string();
        assert_eq!(e.len(), 1, "{text}");
        assert!(
            text.contains("layers.api.breaker.window_calls: one run would need about 6.4 GB of memory, more than the 4.0 GB")
                && text.contains("10 breaker states (layers.api.instances) × 536.9 MB each"),
            "{text}"
        );
    }

    #[test]
    fn per_instance_state_and_messages_are_counted() {
        let s = with(
            "layers:\n  - name: api\n    instances: 1000000\n    throttle: { kind: adaptive }\n    retry: { budget: { kind: ratio } }\nlimits: { max_in_flight: 100000 }\n",
        )
        .unwrap();
        let m = crate::scenario::to_model(&s);
        let e = estimate(&s);
        let throttle = crate::model::throttle::Throttle::state_bytes(
            &m.topology.edges()[0].policy.throttle.unwrap().config,
        );
        let part = e
            .parts
            .iter()
            .find(|p| p.how.starts_with("1000000 throttle states"))
            .unwrap();
        assert_eq!(part.path, "layers.api.instances");
        assert_eq!(part.bytes, 1_000_000 * throttle);
        assert!(
            e.parts
                .iter()
                .any(|p| p.how.starts_with("1000000 budget states"))
        );
        // 10 M messages/s for a day, each kept: refused (max_events bounds it at 2e9).
        let src = MINIMAL
            .replace("duration: 1m", "duration: 1d\nbucket: 1h")
            .replace("rate: 100/s", "rate: 10000000/s")
            + "consumers: { concurrency: 10, max_receive_count: 3 }\n";
        let e = load_str(&src, "x.yaml").unwrap_err().to_string();
        assert!(
            e.contains("clients.arrival.rate") && e.contains("about 2000000000 logical requests"),
            "{e}"
        );
    }

    #[test]
    fn bytes_read_well() {
        assert_eq!(bytes_text(512), "512 B");
        assert_eq!(bytes_text(4_000_000_000), "4.0 GB");
        assert_eq!(bytes_text(42_949_672_950), "42.9 GB");
    }
}
