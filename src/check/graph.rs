//! `stormsim check` along the paths of a services graph. A call is
//! reviewed exactly as a layer is (its attempts, sleeps, timing, budget
//! and findings), and the graph adds:
//!
//! - amplification: the requests one logical request can cause at each
//!   service, every call made and every attempt failing. Along a path the
//!   attempts × fan-out of its calls multiply; where paths meet (two
//!   callers sharing a callee, a diamond over one database) their products
//!   add up. Computed once per service in topological order, never by
//!   listing the paths (their number grows exponentially with depth).
//! - time: a service answers when its stages are done (the calls of a
//!   stage go out together, so a stage lasts as long as its slowest call;
//!   stages follow each other, so their times add up); a service that calls
//!   nothing may hang, so only its caller's timeouts bound the attempts
//!   into it (as for the innermost layer of a chain). So may a service
//!   that calls others but has a workers limit (a request may wait in its
//!   queue for as long as the queue holds it), work of its own that is
//!   not bounded (an exponential or lognormal service time) or an
//!   incident: only its callers' timeouts bound it too. A forwarding
//!   service (no workers limit, no incident) answers when its stages are
//!   done and its own work (a constant or uniform service time, at most
//!   its largest value) is; at mean draws, its mean service time is added
//!   to its stages'. The clients' call bounds the logical request; each path
//!   from the clients to a service that calls nothing gets its own timing,
//!   as a chain of its calls, against the deadline.
//! - findings per call, at the call's field path, and about the graph: a
//!   path that retries at several calls without a shared budget, no
//!   wall-clock budget, a request that does not fit the deadline, a service
//!   nothing reaches.

use serde::Serialize;

use crate::engine::NS_PER_S;
use crate::model::CallPolicy;
use crate::model::adaptive::AdaptiveConfig;
use crate::model::server::ServiceConfig;
use crate::model::service::ServiceDist;
use crate::model::topology::{EdgeId, ServiceId, Topology};
use crate::scenario::graph::CLIENTS;
use crate::scenario::locate::item_labels;
use crate::scenario::memory::edge_labels;
use crate::scenario::types::{Idempotency, Layer, Scope, SideEffects};
use crate::scenario::{Scenario, to_model};

use super::amplification::{
    LayerAmplification, RetryHold, attempts_per_call, calls_out, factor_words, layer_amplification,
};
use super::findings::{Hop, Out, count, hop_findings, time_budget_findings, unsafe_write_fix};
use super::timing::{LayerTiming, attempts_within, one_layer, worst_case_words};
use super::{LayerReport, Report, Severity, StackReport, peak_rate, times};

/// Paths listed at most; the figures of every service and call count all
/// of them.
pub const MAX_PATHS: usize = 64;

/// The review of one service of a graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServiceReport {
    pub name: String,
    /// Its field path (`services.orders`).
    pub path: String,
    /// Requests arriving at it per logical request at most (every call
    /// made, every attempt failing): over the paths into it, the sum of the
    /// products of attempts × fan-out along each.
    pub calls_per_request: f64,
    /// The same with the retry budgets (sustained, during an outage).
    pub budgeted_calls_per_request: f64,
    /// Requests per second it completes at full capacity (concurrency ÷
    /// mean service time); null when unlimited or without work of its own.
    pub capacity_per_s: Option<f64>,
    /// The peak offered rate × the budgeted calls per request: what it
    /// must absorb during an outage below it.
    pub peak_calls_per_s: f64,
    /// Whether it is the service of the classic single-dependency columns
    /// (`analysis.service`).
    pub focus: bool,
}

/// The review of one call edge: its policy's review as a layer's, and
/// where it is in the graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallReport {
    /// Its field path (`clients.calls`, `services.gateway.calls.orders`).
    pub path: String,
    /// The calling service, or `clients`.
    pub caller: String,
    pub callee: String,
    pub parallel: bool,
    pub optional: bool,
    /// The review of its policy; `name` is the call's (`gateway.orders`).
    #[serde(flatten)]
    pub review: LayerReport,
}

/// One path from the clients to a service that calls nothing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathReport {
    /// The calls along it, the clients' first.
    pub calls: Vec<String>,
    /// The services it reaches, in order.
    pub services: Vec<String>,
    /// One logical request along this path alone, every attempt failing
    /// slowly: worst draws and mean draws (null = unbounded).
    pub worst_case_s: Option<f64>,
    pub expected_s: Option<f64>,
    pub fits_deadline: Option<bool>,
    /// Attempts of the clients' call that fit in the deadline at mean
    /// draws, along this path.
    pub attempts_within_deadline: Option<u32>,
    /// Requests at its last service per logical request through this path:
    /// the product of attempts × fan-out along it, and with the budgets.
    pub amplification: f64,
    pub budgeted_amplification: f64,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / NS_PER_S as f64
}

/// The longer of two times (`None`: unbounded).
fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a?.max(b?))
}

/// The sum of two times (`None`: unbounded).
fn add_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// How long a service that calls others takes for its own part of an
/// answer, at most and at mean draws, in seconds (`None`: unbounded).
/// A workers limit means a queue, and a request may wait there as long
/// as the queue keeps it; an incident may stall it; an exponential or
/// lognormal service time has no largest value.
fn own_work(svc: &ServiceConfig) -> (Option<f64>, Option<f64>) {
    let mean = svc.service.map_or(0.0, |d| d.mean() / NS_PER_S as f64);
    let may_wait = svc.concurrency.is_some() || !svc.incidents.is_empty();
    let worst = match svc.service {
        _ if may_wait => None,
        None => Some(0.0),
        Some(ServiceDist::Constant(v)) => Some(secs(v)),
        Some(ServiceDist::Uniform { max, .. }) => Some(secs(max)),
        Some(ServiceDist::Exponential { .. } | ServiceDist::Lognormal { .. }) => None,
    };
    (worst, Some(mean))
}

/// The services, every caller before its callees (file order among
/// services that do not depend on each other).
pub fn topological_order(t: &Topology) -> Vec<ServiceId> {
    let n = t.services().len();
    let mut callers = vec![0usize; n];
    for e in t.edges().iter().filter(|e| e.caller.is_some()) {
        callers[e.callee.index()] += 1;
    }
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    // Kahn's algorithm, always taking the first ready service in file
    // order: O(n²) for at most a hundred services.
    while order.len() < n {
        let Some(next) = (0..n).find(|&i| !done[i] && callers[i] == 0) else {
            break; // a cycle: refused by validation
        };
        done[next] = true;
        order.push(ServiceId(next as u16));
        for &e in &t.services()[next].calls {
            let c = t.edge(e).callee.index();
            callers[c] = callers[c].saturating_sub(1);
        }
    }
    order
}

/// Reviews a loaded (validated) services graph.
pub(super) fn check_graph(s: &Scenario) -> Report {
    let model = to_model(s);
    let t = &model.topology;
    let edges = t.edges();
    let labels = edge_labels(s);
    let service_names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
    let service_labels = item_labels("services", &service_names);
    // Each call as a layer named after it.
    let layers: Vec<Layer> = s
        .clients
        .calls
        .iter()
        .chain(s.services.iter().flat_map(|x| &x.calls))
        .zip(edges)
        .map(|(c, e)| c.to_layer(&e.policy.name))
        .collect();
    let order = topological_order(t);
    // The callee's Retry-After reaches a call that retries its status.
    let retry_after: Vec<Option<f64>> = edges
        .iter()
        .map(|e| {
            let ov = &s.services[e.callee.index()].overload;
            ov.retry_after
                .map(|d| secs(d.ns()))
                .filter(|_| e.policy.retry.retry_on.status(ov.status))
        })
        .collect();

    // Time, callees first: how long each service takes to answer at most.
    let mut timing: Vec<Option<LayerTiming>> = vec![None; edges.len()];
    let mut answer: Vec<(Option<f64>, Option<f64>)> = vec![(None, None); t.services().len()];
    let mut timed = |e: EdgeId, answer: &[(Option<f64>, Option<f64>)]| {
        let edge = t.edge(e);
        let tm = one_layer(
            &edge.policy,
            answer[edge.callee.index()],
            retry_after[e.index()],
        );
        let out = (tm.worst, tm.expected);
        timing[e.index()] = Some(tm);
        out
    };
    for &sv in order.iter().rev() {
        let stages = t.stages(sv);
        if stages.is_empty() {
            continue; // it may hang: only its callers' timeouts bound it
        }
        let mut total = own_work(t.service(sv));
        for stage in stages {
            let mut longest = (Some(0.0), Some(0.0));
            for &e in stage {
                let (w, m) = timed(e, &answer);
                longest = (max_opt(longest.0, w), max_opt(longest.1, m));
            }
            total = (add_opt(total.0, longest.0), add_opt(total.1, longest.1));
        }
        answer[sv.index()] = total;
    }
    timed(EdgeId::ENTRY, &answer);
    let timing: Vec<LayerTiming> = timing
        .into_iter()
        .map(|tm| {
            tm.unwrap_or(LayerTiming {
                sleeps_worst: Vec::new(),
                sleeps_mean: Vec::new(),
                attempt_worst: None,
                attempt_mean: None,
                worst: None,
                expected: None,
                bounded_by: Vec::new(),
            })
        })
        .collect();

    // Amplification, callers first: requests at each service per logical
    // request, without and with the budgets.
    let peak = peak_rate(s);
    let n = t.services().len();
    let (mut calls, mut budgeted) = (vec![0.0; n], vec![0.0; n]);
    let mut into: Vec<(f64, f64)> = vec![(0.0, 0.0); edges.len()];
    let mut amp: Vec<Option<LayerAmplification>> = vec![None; edges.len()];
    let edge_order = std::iter::once(EdgeId::ENTRY).chain(
        order
            .iter()
            .flat_map(|&sv| t.service(sv).calls.iter().copied()),
    );
    for e in edge_order {
        let edge = t.edge(e);
        let (c, b) = match edge.caller {
            None => (1.0, 1.0),
            Some(sv) => (calls[sv.index()], budgeted[sv.index()]),
        };
        let tm = &timing[e.index()];
        let hold = RetryHold::of(
            &edge.policy,
            tm.sleeps_mean.first().copied().unwrap_or(0.0),
            tm.attempt_mean,
        );
        let a = layer_amplification(&edge.policy, peak * b, &hold);
        let callee = edge.callee.index();
        calls[callee] += c * calls_out(&edge.policy, attempts_per_call(&edge.policy) as f64);
        budgeted[callee] += b * calls_out(&edge.policy, a.budgeted);
        into[e.index()] = (c, b);
        amp[e.index()] = Some(a);
    }
    let amp: Vec<LayerAmplification> = amp
        .into_iter()
        .zip(edges)
        .map(|(a, e)| {
            a.unwrap_or_else(|| {
                layer_amplification(&e.policy, 0.0, &RetryHold::of(&e.policy, 0.0, None))
            })
        })
        .collect();

    let call_reports: Vec<CallReport> = edges
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let tm = &timing[i];
            CallReport {
                path: labels.get(i).cloned().unwrap_or_default(),
                caller: e
                    .caller
                    .map_or(CLIENTS.to_string(), |c| t.service(c).name.clone()),
                callee: t.service(e.callee).name.clone(),
                parallel: e.parallel,
                optional: e.optional,
                review: LayerReport {
                    name: e.policy.name.clone(),
                    preset: layers[i].preset.clone(),
                    max_attempts: attempts_per_call(&e.policy),
                    attempt_s: tm.attempt_worst,
                    sleeps_worst_s: tm.sleeps_worst.clone(),
                    sleeps_mean_s: tm.sleeps_mean.clone(),
                    worst_case_s: tm.worst,
                    expected_s: tm.expected,
                    bounded_by: tm.bounded_by.clone(),
                    fan_out: e.policy.fan_out.max(1),
                    calls_per_request: into[i].0,
                    budgeted_calls_per_request: into[i].1,
                    budgeted_attempts: amp[i].budgeted,
                    budget_note: amp[i].note.clone(),
                    worst_case: worst_case_words(&e.policy, &layers[i], tm),
                },
            }
        })
        .collect();
    let service_reports: Vec<ServiceReport> = t
        .services()
        .iter()
        .enumerate()
        .map(|(i, svc)| ServiceReport {
            name: svc.name.clone(),
            path: service_labels.get(i).cloned().unwrap_or_default(),
            calls_per_request: calls[i],
            budgeted_calls_per_request: budgeted[i],
            capacity_per_s: svc.capacity_per_sec(),
            peak_calls_per_s: peak * budgeted[i],
            focus: i == t.focus().index(),
        })
        .collect();

    let (listed, total) = paths(t, MAX_PATHS);
    let deadline = model.deadline.map(secs);
    let path_reports: Vec<PathReport> = listed
        .iter()
        .map(|p| {
            let policies: Vec<&CallPolicy> = p.iter().map(|&e| &t.edge(e).policy).collect();
            // The path's calls as a chain, innermost first: each caller
            // answers when its own work and the call below are done.
            let mut inner: (Option<f64>, Option<f64>) = (None, None);
            let mut first = None;
            for &e in p.iter().rev() {
                let edge = t.edge(e);
                let tm = one_layer(&edge.policy, inner, retry_after[e.index()]);
                if let Some(caller) = edge.caller {
                    let own = own_work(t.service(caller));
                    inner = (add_opt(own.0, tm.worst), add_opt(own.1, tm.expected));
                }
                first = Some(tm);
            }
            let first = &first.expect("a path has a call");
            let product = |per: &dyn Fn(usize) -> f64| {
                p.iter()
                    .map(|e| calls_out(&t.edge(*e).policy, per(e.index())))
                    .product::<f64>()
            };
            PathReport {
                calls: p.iter().map(|&e| t.edge(e).policy.name.clone()).collect(),
                services: p
                    .iter()
                    .map(|&e| t.service(t.edge(e).callee).name.clone())
                    .collect(),
                worst_case_s: first.worst,
                expected_s: first.expected,
                fits_deadline: deadline.map(|d| first.worst.is_some_and(|w| w <= d)),
                attempts_within_deadline: deadline
                    .map(|d| attempts_within(first, policies[0].retry.max_attempts, d)),
                amplification: product(&|e| attempts_per_call(&edges[e].policy) as f64),
                budgeted_amplification: product(&|e| amp[e].budgeted),
            }
        })
        .collect();

    let deliveries = s
        .consumers
        .as_ref()
        .map_or(1, |c| c.max_receive_count.max(1));
    let focus = t.focus().index();
    let entry = &timing[0];
    let stack = StackReport {
        deadline_s: deadline,
        worst_case_s: entry.worst,
        worst_case: format!(
            "call `{}`: {}",
            edges[0].policy.name, call_reports[0].review.worst_case
        ),
        expected_s: entry.expected,
        fits_deadline: deadline.map(|d| entry.worst.is_some_and(|w| w <= d)),
        attempts_within_deadline: deadline
            .map(|d| attempts_within(entry, edges[0].policy.retry.max_attempts, d)),
        amplification: calls[focus] * f64::from(deliveries),
        budgeted_amplification: budgeted[focus] * f64::from(deliveries),
        amplification_words: format!(
            "products of attempts x fan-out{} along each path, summed over the paths into it{}",
            if edges.iter().any(|e| e.policy.status_probe) {
                " (and a status probe before each retry of a call that has one)"
            } else {
                ""
            },
            if deliveries > 1 {
                ", times the deliveries"
            } else {
                ""
            }
        ),
        deliveries,
        peak_offered_per_s: peak,
        service: Some(t.service(t.focus()).name.clone()),
    };
    let findings = graph_findings(
        s,
        t,
        &GraphReview {
            layers: &layers,
            labels: &labels,
            service_labels: &service_labels,
            calls: &call_reports,
            services: &service_reports,
            paths: &path_reports,
            listed: &listed,
        },
        &stack,
    );
    Report {
        scenario: s.name.clone(),
        layers: Vec::new(),
        stack,
        findings,
        services: service_reports,
        calls: call_reports,
        paths: path_reports,
        paths_total: Some(total),
    }
}

/// Up to `max` paths from the clients to a service that calls nothing
/// (depth first, each service's calls in order), as edges, and the number
/// of all of them (saturating).
pub fn paths(t: &Topology, max: usize) -> (Vec<Vec<EdgeId>>, u64) {
    // Paths from each service to the services that call nothing below it.
    let mut below = vec![0u64; t.services().len()];
    for &sv in topological_order(t).iter().rev() {
        let calls = &t.service(sv).calls;
        below[sv.index()] = if calls.is_empty() {
            1
        } else {
            calls.iter().fold(0u64, |n, &e| {
                n.saturating_add(below[t.edge(e).callee.index()])
            })
        };
    }
    let total = below[t.edge(EdgeId::ENTRY).callee.index()];
    let mut out = Vec::new();
    let mut stack: Vec<Vec<EdgeId>> = vec![vec![EdgeId::ENTRY]];
    while let Some(path) = stack.pop() {
        if out.len() >= max {
            break;
        }
        let last = path.last().map_or(EdgeId::ENTRY, |&e| e);
        let calls = &t.service(t.edge(last).callee).calls;
        if calls.is_empty() || path.len() > t.edges().len() {
            out.push(path);
            continue;
        }
        for &e in calls.iter().rev() {
            let mut next = path.clone();
            next.push(e);
            stack.push(next);
        }
    }
    (out, total)
}

/// Whether a deadline bounds each edge's calls: the user's (`user`) on
/// the clients' call; on a service's call, one that every call into the
/// service hands down (`findings::hands_down_deadline`). The least
/// solution: a cycle hands down nothing it was not given.
fn deadline_reaches(t: &Topology, user: bool) -> Vec<bool> {
    let edges = t.edges();
    let mut reaches = vec![false; edges.len()];
    for _ in 0..=edges.len() {
        let next: Vec<bool> = edges
            .iter()
            .map(|e| match e.caller {
                None => user,
                Some(c) => {
                    let into: Vec<usize> =
                        (0..edges.len()).filter(|&j| edges[j].callee == c).collect();
                    !into.is_empty()
                        && into.iter().all(|&j| {
                            super::findings::hands_down_deadline(&edges[j].policy, reaches[j])
                        })
                }
            })
            .collect();
        if next == reaches {
            break;
        }
        reaches = next;
    }
    reaches
}

/// What the graph's findings read.
struct GraphReview<'a> {
    layers: &'a [Layer],
    labels: &'a [String],
    service_labels: &'a [String],
    calls: &'a [CallReport],
    services: &'a [ServiceReport],
    paths: &'a [PathReport],
    listed: &'a [Vec<EdgeId>],
}

/// The findings of a graph: every call's, as a layer's (at the call's
/// path), and the graph's own.
fn graph_findings(
    s: &Scenario,
    t: &Topology,
    g: &GraphReview,
    stack: &StackReport,
) -> Vec<crate::check::Finding> {
    let mut out = Out(Vec::new());
    let edges = t.edges();
    let name = |e: usize| edges[e].policy.name.as_str();
    // The first non-idempotent write without a key at or below each
    // service (a retried call into it may repeat that write).
    let unsafe_at: Vec<Option<usize>> = (0..t.services().len())
        .map(|sv| {
            let mut seen = vec![false; t.services().len()];
            let mut stack = vec![sv];
            while let Some(x) = stack.pop() {
                if std::mem::replace(&mut seen[x], true) {
                    continue;
                }
                let svc = &s.services[x];
                if svc.side_effects == SideEffects::Write && svc.idempotency == Idempotency::None {
                    return Some(x);
                }
                for &e in t.services()[x].calls.iter().rev() {
                    stack.push(t.edge(e).callee.index());
                }
            }
            None
        })
        .collect();
    let reaches = deadline_reaches(t, stack.deadline_s.is_some());
    let propagated = deadline_reaches(t, true);
    for (i, e) in edges.iter().enumerate() {
        let callee = e.callee.index();
        let outer = match e.caller {
            None => Vec::new(),
            Some(c) => edges
                .iter()
                .enumerate()
                .filter(|(_, x)| x.callee == c)
                .filter_map(|(j, x)| {
                    g.layers[j]
                        .timeout
                        .map(|to| (name(j).to_string(), to, x.policy.propagate_deadline))
                })
                .collect(),
        };
        let unsafe_write = unsafe_at[callee].map(|w| {
            (
                format!(" at `{}`", s.services[w].name),
                unsafe_write_fix(
                    &format!("{}.idempotency", g.service_labels[w]),
                    w == callee,
                    &g.layers[i],
                    "call",
                    &format!("service `{}`", s.services[w].name),
                ),
            )
        });
        let hop = Hop {
            layer: &g.layers[i],
            model: &e.policy,
            report: &g.calls[i].review,
            path: g.labels[i].clone(),
            who: format!("call `{}`", name(i)),
            outer,
            deadline_reaches: reaches[i],
            callers_propagate: propagated[i],
            unsafe_write,
            overload: &s.services[callee].overload,
            server: format!("service `{}`", s.services[callee].name),
        };
        hop_findings(&mut out, s, &hop, stack);
    }
    let retrying: Vec<usize> = (0..edges.len())
        .filter(|&e| g.layers[e].retry.max_attempts > 1)
        .collect();
    // A path that retries at several calls without a shared budget (the
    // one that amplifies most).
    let unshared = g
        .listed
        .iter()
        .zip(g.paths)
        .filter(|(p, _)| {
            let r: Vec<usize> = p
                .iter()
                .map(|e| e.index())
                .filter(|e| retrying.contains(e))
                .collect();
            r.len() >= 2
                && !r.iter().any(|&e| {
                    g.layers[e]
                        .retry
                        .budget
                        .as_ref()
                        .is_some_and(|b| b.scope == Scope::Shared)
                })
        })
        .max_by(|a, b| a.1.amplification.total_cmp(&b.1.amplification));
    if let Some((p, report)) = unshared {
        let retried: Vec<usize> = p
            .iter()
            .map(|e| e.index())
            .filter(|e| retrying.contains(e))
            .collect();
        // Every factor the path's amplification multiplies (a path is
        // counted per logical request: no deliveries).
        let product: Vec<String> = p
            .iter()
            .map(|e| {
                let c = &g.calls[e.index()].review;
                factor_words(
                    c.max_attempts,
                    c.fan_out,
                    edges[e.index()].policy.status_probe,
                )
            })
            .collect();
        let innermost = *retried.last().unwrap_or(&0);
        let which = if retried.len() == p.len() {
            String::new()
        } else {
            format!(
                " ({})",
                retried
                    .iter()
                    .map(|&e| name(e))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        out.add(
            if report.budgeted_amplification >= 10.0 { Severity::Warning } else { Severity::Info },
            "nested-retries-without-budget",
            &g.labels[innermost],
            format!(
                "{} calls retry along the path {}{which} without a shared retry budget: one logical request can become {} calls at `{}` through it ({} = {}; {} with the budgets there are)",
                retried.len(),
                p.iter().map(|e| name(e.index())).collect::<Vec<_>>().join(" → "),
                count(report.amplification),
                report.services.last().map_or("", String::as_str),
                product.join(" x "),
                times(report.amplification),
                times(report.budgeted_amplification)
            ),
            "retry at one call of each path only (max_attempts: 1 elsewhere), or give the retrying calls a budget with `scope: shared`",
        );
    }
    let first = "clients' call's";
    // The calls into a service that calls others, and keep the deadline.
    let keep_it: Vec<String> = edges
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.policy.propagate_deadline && !t.service(e.callee).calls.is_empty())
        .map(|(i, _)| format!("call `{}`", name(i)))
        .collect();
    time_budget_findings(
        &mut out,
        stack,
        g.layers,
        !retrying.is_empty(),
        first,
        "the calls below",
        &keep_it,
    );
    let focus = s.focus_service();
    for (i, (svc, label)) in g.services.iter().zip(g.service_labels).enumerate() {
        if svc.calls_per_request == 0.0 {
            // The analysis service idle: every figure of the run about it
            // (load, recovery, the SLO objectives judged by them) is of a
            // service that is never called.
            let (severity, why, fix) = if focus == Some(i) {
                (
                    Severity::Warning,
                    format!(
                        ", and it is the analysis service: {}",
                        Scenario::IDLE_ANALYSIS
                    ),
                    "call it from a service the clients reach, or name another in analysis.service",
                )
            } else {
                (
                    Severity::Info,
                    String::new(),
                    "call it from a service the clients reach, or remove it",
                )
            };
            out.add(
                severity,
                "unreachable-service",
                label,
                format!(
                    "service `{}` is not reached from the clients' call: it receives no requests{why}",
                    svc.name
                ),
                fix,
            );
        }
    }
    for (i, svc) in t.services().iter().enumerate() {
        let Some(curve) = svc.slowdown else { continue };
        let (peak, at) = curve.peak_throughput();
        let full = 1.0 / curve.at_full_load();
        if peak <= full * 1.01 {
            continue;
        }
        let cap = svc.capacity_per_sec();
        let rate = |f: f64| {
            cap.map_or_else(
                || format!("{:.1}% of its nominal capacity", f * 100.0),
                |c| format!("{}/s", count(c * f)),
            )
        };
        out.add(
            Severity::Warning,
            "slowdown-sustains-overload",
            &format!("{}.slowdown", g.service_labels[i]),
            format!(
                "service `{}` completes at most {} (with {:.0}% of its workers busy) but only {} once every worker is busy: a load between the two is served until a spike fills it, then it stays full with no retry at all",
                svc.name,
                rate(peak),
                at * 100.0,
                rate(full)
            ),
            "keep the load below what a full replica completes, or shed early (a short queue, a queue timeout) so the workers never all stay busy",
        );
    }
    for (i, svc) in t.services().iter().enumerate() {
        let (Some(a), Some(workers)) = (svc.adaptive, svc.concurrency) else {
            continue;
        };
        let floor = a.floor();
        if floor < workers {
            continue;
        }
        let (field, envoy) = match a {
            AdaptiveConfig::Gradient(_) => (
                "min_concurrency",
                "; it is also the limit while Envoy measures the minimum RTT, so a measurement made in an overload takes overloaded latencies for normal ones and the limit never recovers (envoy#38338)",
            ),
            _ => ("min_limit", ""),
        };
        out.add(
            Severity::Warning,
            "adaptive-floor-never-limits",
            &format!("{}.adaptive_concurrency.{field}", g.service_labels[i]),
            format!(
                "the {} limit of service `{}` never falls below {floor}, and a replica has {workers} workers: however slow it gets, it rejects nothing before all its workers are busy and up to {} requests queue, so it cannot shed an overload{envoy}",
                a.kind(),
                svc.name,
                floor - workers
            ),
            &format!("set {field} below the workers ({workers}); Envoy's default min_concurrency is 3"),
        );
    }
    out.0.sort_by_key(|f| f.severity);
    out.0
}
