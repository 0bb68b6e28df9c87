//! `stormsim check`: a static review of a scenario's retry policy, without
//! simulating it (a services graph: along its paths, `graph`). Per layer
//! and for the whole stack it reports how long a
//! logical request can take when every attempt fails slowly (worst draws
//! and mean draws of the jitter), against the user's deadline; how many
//! calls one request can cause at the dependency, without and with the
//! retry budgets; and the anti-patterns of the retry playbook
//! (docs/sources/retry-backoff-patterns.md, "Anti-Patterns" and
//! "Workflow") as findings with a severity and a one-line fix.

mod amplification;
mod capacity;
mod findings;
pub mod graph;
mod priority;
mod render;
mod timing;
pub mod variants;

use serde::Serialize;

use crate::engine::NS_PER_S;
use crate::scenario::{Scenario, to_model};

pub use render::{human, human_reviews, json, json_reviews, times};
pub use timing::sleep_bounds;
pub use variants::{Reviews, check_variants};

/// How serious a finding is: `error` makes `stormsim check` exit with 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

/// One anti-pattern or risk found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// A stable identifier (`nested-retries-without-budget`).
    pub code: &'static str,
    /// The field path it is about (`layers.api.retry.jitter`), or empty for
    /// the whole stack.
    pub path: String,
    pub message: String,
    pub fix: String,
}

/// The review of one layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerReport {
    pub name: String,
    pub preset: Option<String>,
    pub max_attempts: u32,
    /// The longest one attempt can last (its timeout or the inner call);
    /// null = unbounded.
    pub attempt_s: Option<f64>,
    /// Worst and mean sleep before each retry.
    pub sleeps_worst_s: Vec<f64>,
    pub sleeps_mean_s: Vec<f64>,
    /// One call at this layer when every attempt times out: worst draws,
    /// mean draws (null = unbounded).
    pub worst_case_s: Option<f64>,
    pub expected_s: Option<f64>,
    pub bounded_by: Vec<String>,
    /// Every attempt calls the next hop this many times.
    pub fan_out: u32,
    /// Calls entering this layer per logical request (product of the outer
    /// layers' attempts × fan-out), and with budgets.
    pub calls_per_request: f64,
    pub budgeted_calls_per_request: f64,
    /// Attempts per call at this layer with its budget (sustained, in an
    /// outage), and why.
    pub budgeted_attempts: f64,
    pub budget_note: String,
    /// What the worst case is for this layer's policy, in words.
    pub worst_case: String,
}

/// The review of the whole stack.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StackReport {
    pub deadline_s: Option<f64>,
    /// One logical request in the worst case (`worst_case`), before the
    /// deadline cuts it.
    pub worst_case_s: Option<f64>,
    /// The worst case in words (the outermost layer's).
    pub worst_case: String,
    pub expected_s: Option<f64>,
    pub fits_deadline: Option<bool>,
    /// Outermost attempts that fit in the deadline at mean draws.
    pub attempts_within_deadline: Option<u32>,
    /// Calls at the dependency per logical request (per message with
    /// consumers): product of attempts × fan-out (and status probes, and
    /// deliveries of a message), and the budgeted bound.
    pub amplification: f64,
    pub budgeted_amplification: f64,
    /// How `amplification` is counted, in words: every factor of the
    /// product of a chain (`3 x fan-out 2 x (4 attempts + 3 status
    /// probes) x 5 deliveries`), what is summed in a graph.
    #[serde(skip)]
    pub amplification_words: String,
    /// Deliveries of one message at most (consumers), counted in the
    /// amplification; 1 without consumers.
    pub deliveries: u32,
    pub peak_offered_per_s: f64,
    /// A services graph: the service the amplification is counted at
    /// (`analysis.service`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub scenario: String,
    pub layers: Vec<LayerReport>,
    pub stack: StackReport,
    pub findings: Vec<Finding>,
    /// A services graph: every service, every call and the paths from the
    /// clients (at most `graph::MAX_PATHS` of them; `paths_total` counts
    /// them all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<graph::ServiceReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<graph::CallReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<graph::PathReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths_total: Option<u64>,
}

impl Report {
    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// The highest offered rate of logical requests over the run.
fn peak_rate(s: &Scenario) -> f64 {
    s.clients
        .schedule
        .iter()
        .filter_map(|p| p.rate.or(p.ramp_to))
        .map(|r| r.per_sec())
        .fold(
            s.clients.arrival.rate.map_or(0.0, |r| r.per_sec()),
            f64::max,
        )
}

/// Events the engine handles per attempt, about (an arrival, the
/// attempt's start and its end): a run of `q.yaml`-like scenarios
/// measures about 2 per request.
const EVENTS_PER_ATTEMPT: f64 = 2.0;

/// A lower estimate of the events one run simulates: the lowest rate the
/// clients offer × the duration × the events of one attempt (no retry
/// counted), and the periodic timers, whatever the load: each
/// autoscaler's decisions (duration / `autoscale.interval`; the time
/// buckets are at most `MAX_BUCKETS`, and the adaptive limiters' sample
/// windows are not events). `None` when neither gives any (a closed loop
/// without an autoscaler).
pub fn events_estimate(s: &Scenario) -> Option<f64> {
    let events = fewest_arrivals(s) * EVENTS_PER_ATTEMPT + periodic_events(s);
    (events.is_finite() && events > 0.0).then_some(events)
}

/// The open-loop arrivals of one run at the lowest rate the clients offer
/// over it (the base rate and every step, spike or ramp target of the
/// schedule) × the duration: 0 for a closed loop.
fn fewest_arrivals(s: &Scenario) -> f64 {
    s.clients.arrival.rate.map_or(0.0, |base| {
        let rate = s
            .clients
            .schedule
            .iter()
            .filter_map(|p| p.rate.or(p.ramp_to))
            .map(|r| r.per_sec())
            .fold(base.per_sec(), f64::min);
        rate * s.duration.secs_f64()
    })
}

/// The events of the periodic timers of one run: every autoscaler decides
/// once an `autoscale.interval` over the whole duration.
pub fn periodic_events(s: &Scenario) -> f64 {
    if s.occ.is_some() || !s.is_graph() {
        return 0.0;
    }
    let m = to_model(s);
    m.topology
        .services()
        .iter()
        .filter_map(|svc| svc.autoscale.as_ref())
        .map(|a| m.duration as f64 / a.interval.max(1) as f64)
        .sum()
}

/// When the estimate of [`events_estimate`] is over `limits.max_events`:
/// the sentence that says the run will stop at the guard rail, and the
/// fields to change.
pub fn events_over_limit(s: &Scenario) -> Option<(String, String)> {
    let events = events_estimate(s)?;
    let limit = s.limits.max_events;
    if events <= limit as f64 {
        return None;
    }
    let ticks = periodic_events(s);
    let (why, fix) = if ticks > limit as f64 {
        (
            "the autoscalers' decisions: the duration / autoscale.interval, each",
            "shorten `duration`, lengthen `autoscale.interval`, or raise `limits.max_events` (or --max-events)",
        )
    } else if ticks > 0.0 {
        (
            "the offered rate x the duration x 2 events per attempt, before any retry, with the autoscalers' decisions: the duration / autoscale.interval, each",
            "shorten `duration` (or lower the offered rate, or lengthen `autoscale.interval`), or raise `limits.max_events` (or --max-events)",
        )
    } else {
        (
            "the offered rate x the duration x 2 events per attempt, before any retry",
            "shorten `duration` (or lower the offered rate), or raise `limits.max_events` (or --max-events)",
        )
    };
    Some((
        format!(
            "every run will stop at the guard rail before its end: a run of {} simulates at least about {events:.0e} events ({why}), over limits.max_events ({limit})",
            findings::fmt_s(s.duration.secs_f64()),
        ),
        fix.to_string(),
    ))
}

/// How many standard deviations of a Poisson count of arrivals
/// [`events_certainly_over_limit`] takes off their mean: a run that
/// draws fewer arrivals than that happens less than once in 10^9 runs.
const POISSON_MARGIN_SD: f64 = 6.0;

/// As [`events_over_limit`], only when the run is sure to stop at the
/// guard rail, not just likely to: its open-loop arrivals alone (each one
/// event, at the lowest rate of the schedule, less six standard
/// deviations of their Poisson count) with the autoscalers' decisions are
/// over `limits.max_events`. A run of such a scenario would simulate up to
/// the limit only to be reported as aborted, so `run` refuses it.
pub fn events_certainly_over_limit(s: &Scenario) -> Option<(String, String)> {
    let over = events_over_limit(s)?;
    let arrivals = fewest_arrivals(s);
    let sure = (arrivals - POISSON_MARGIN_SD * arrivals.sqrt()).max(0.0) + periodic_events(s);
    (sure > s.limits.max_events as f64).then_some(over)
}

/// Reviews a loaded (validated) scenario.
pub fn check(s: &Scenario) -> Report {
    let mut report = if s.is_graph() {
        graph::check_graph(s)
    } else {
        check_chain(s)
    };
    report.findings.extend(priority::findings(s));
    report.findings.extend(capacity::findings(s));
    if let Some((message, fix)) = events_over_limit(s) {
        let sure = events_certainly_over_limit(s).is_some();
        report.findings.push(Finding {
            // A run that cannot end is refused by `run`: an error.
            severity: if sure {
                Severity::Error
            } else {
                Severity::Warning
            },
            code: "events-over-guard-rail",
            path: "limits.max_events".to_string(),
            message,
            fix,
        });
    }
    report
}

/// Reviews a chain of layers in front of one dependency.
fn check_chain(s: &Scenario) -> Report {
    let model = to_model(s);
    let secs = |ns: u64| ns as f64 / NS_PER_S as f64;
    let chain = model.topology.entry_chain();
    let layers = if s.layers.is_empty() {
        &chain[..0]
    } else {
        &chain[..]
    };
    // The dependency's Retry-After reaches a layer that retries its status.
    let ra = s.dependency.overload.retry_after.map(|d| d.secs_f64());
    let status = s.dependency.overload.status;
    let retry_after: Vec<Option<f64>> = layers
        .iter()
        .map(|l| ra.filter(|_| l.retry.retry_on.status(status)))
        .collect();
    let timings = timing::layer_timings(layers, &retry_after);
    let peak = peak_rate(s);
    let mut reports = Vec::with_capacity(layers.len());
    let (mut calls, mut budgeted_calls) = (1.0, 1.0);
    let mut factors = Vec::with_capacity(layers.len());
    for ((l, t), sl) in layers.iter().zip(&timings).zip(&s.layers) {
        let hold = amplification::RetryHold::of(
            l,
            t.sleeps_mean.first().copied().unwrap_or(0.0),
            t.attempt_mean,
        );
        let amp = amplification::layer_amplification(l, peak * budgeted_calls, &hold);
        let attempts = amplification::attempts_per_call(l);
        reports.push(LayerReport {
            name: l.name.clone(),
            preset: sl.preset.clone(),
            max_attempts: attempts,
            fan_out: l.fan_out.max(1),
            attempt_s: t.attempt_worst,
            sleeps_worst_s: t.sleeps_worst.clone(),
            sleeps_mean_s: t.sleeps_mean.clone(),
            worst_case_s: t.worst,
            expected_s: t.expected,
            bounded_by: t.bounded_by.clone(),
            calls_per_request: calls,
            budgeted_calls_per_request: budgeted_calls,
            budgeted_attempts: amp.budgeted,
            budget_note: amp.note,
            worst_case: timing::worst_case_words(l, sl, t),
        });
        factors.push(amplification::factor_words(
            attempts,
            l.fan_out.max(1),
            l.status_probe,
        ));
        calls *= amplification::calls_out(l, attempts as f64);
        budgeted_calls *= amplification::calls_out(l, amp.budgeted);
    }
    // Each delivery of a message is a logical request of its own.
    let deliveries = s
        .consumers
        .as_ref()
        .map_or(1, |c| c.max_receive_count.max(1));
    let deadline = model.deadline.map(secs);
    let (worst, expected) = timings
        .first()
        .map_or((None, None), |t| (t.worst, t.expected));
    let stack = StackReport {
        deadline_s: deadline,
        worst_case_s: worst,
        worst_case: reports
            .first()
            .map_or("one attempt, no retries".to_string(), |r| {
                format!("layer `{}`: {}", r.name, r.worst_case)
            }),
        expected_s: expected,
        fits_deadline: deadline.map(|d| worst.is_some_and(|w| w <= d)),
        attempts_within_deadline: match (deadline, timings.first(), layers.first()) {
            (Some(d), Some(t), Some(l)) => {
                Some(timing::attempts_within(t, l.retry.max_attempts, d))
            }
            _ => None,
        },
        amplification: calls * f64::from(deliveries),
        budgeted_amplification: budgeted_calls * f64::from(deliveries),
        amplification_words: if factors.is_empty() {
            amplification::product_words(&["1".to_string()], deliveries)
        } else {
            amplification::product_words(&factors, deliveries)
        },
        deliveries,
        peak_offered_per_s: peak,
        service: None,
    };
    let findings = findings::findings(s, layers, &reports, &stack);
    Report {
        scenario: s.name.clone(),
        layers: reports,
        stack,
        findings,
        services: Vec::new(),
        calls: Vec::new(),
        paths: Vec::new(),
        paths_total: None,
    }
}

#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod tests;
