//! The columns of the output tables, in order: the contract of DESIGN.md
//! first, extra columns after. Each row becomes a list of named `Cell`s so
//! that writing CSV and aggregating over replicates need no per-column code.

use super::reason::Reason;
use super::table::{Summary, TimeRow};

/// One value of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(u64),
    Float(f64),
    Bool(bool),
    Text(String),
    /// No value (for example a latency percentile of a bucket in which no
    /// request ended). Written as an empty cell.
    Missing,
}

impl Cell {
    pub fn opt_f(v: Option<f64>) -> Cell {
        v.map_or(Cell::Missing, Cell::Float)
    }

    /// The value as a number, for aggregation (`true` is 1).
    pub fn number(&self) -> Option<f64> {
        match *self {
            Cell::Int(v) => Some(v as f64),
            Cell::Float(v) if v.is_finite() => Some(v),
            Cell::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }

    /// How the cell is written: integers exactly, floats rounded to six
    /// decimals with trailing zeros trimmed, booleans as `true`/`false`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    /// `render`, appended to `out` (no allocation for integers).
    pub fn render_into(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            Cell::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Cell::Float(v) => out.push_str(&format_float(*v)),
            Cell::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Cell::Text(s) => out.push_str(s),
            Cell::Missing => {}
        }
    }
}

pub fn format_float(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// Columns of a time-series row, after `variant, replicate`.
pub fn time_row_cells(r: &TimeRow, layer_names: &[String]) -> Vec<(String, Cell)> {
    let mut v: Vec<(String, Cell)> = vec![
        ("t_s".into(), Cell::Float(r.t_s)),
        ("offered".into(), Cell::Int(r.offered)),
        ("attempts".into(), Cell::Int(r.attempts)),
        ("retries".into(), Cell::Int(r.retries)),
        (
            "dependency_attempts".into(),
            Cell::Int(r.dependency_attempts),
        ),
        ("succeeded".into(), Cell::Int(r.succeeded)),
        ("failed".into(), Cell::Int(r.failed)),
        (
            "failed_timeout".into(),
            Cell::Int(r.failed_by[Reason::Timeout as usize]),
        ),
        (
            "failed_connection".into(),
            Cell::Int(r.failed_by[Reason::Connection as usize]),
        ),
        (
            "failed_status".into(),
            Cell::Int(r.failed_by[Reason::Status as usize]),
        ),
        (
            "failed_deadline".into(),
            Cell::Int(r.failed_by[Reason::Deadline as usize]),
        ),
        ("shed".into(), Cell::Int(r.shed)),
        ("queue_depth".into(), Cell::Float(r.queue_depth)),
        ("in_flight".into(), Cell::Float(r.in_flight)),
        ("utilization".into(), Cell::Float(r.utilization)),
        ("goodput".into(), Cell::Float(r.goodput)),
        ("latency_p50_ms".into(), Cell::opt_f(r.latency_p50_ms)),
        ("latency_p99_ms".into(), Cell::opt_f(r.latency_p99_ms)),
        ("orphaned".into(), Cell::Int(r.orphaned)),
        // Extra columns.
        (
            "failed_retry_after_exceeds_budget".into(),
            Cell::Int(r.failed_by[Reason::RetryAfterExceedsBudget as usize]),
        ),
        (
            "failed_budget_exhausted".into(),
            Cell::Int(r.failed_by[Reason::BudgetExhausted as usize]),
        ),
        (
            "failed_throttled".into(),
            Cell::Int(r.failed_by[Reason::Throttled as usize]),
        ),
        (
            "failed_breaker_open".into(),
            Cell::Int(r.failed_by[Reason::BreakerOpen as usize]),
        ),
        ("blackholed".into(), Cell::Int(r.blackholed)),
        ("queue_timeouts".into(), Cell::Int(r.queue_timeouts)),
        ("open_requests".into(), Cell::Int(r.open_requests)),
        ("load_ratio".into(), Cell::Float(r.load_ratio)),
        ("commits".into(), Cell::Int(r.commits)),
        (
            "duplicate_side_effects".into(),
            Cell::Int(r.duplicate_side_effects),
        ),
        (
            "ambiguous_successes".into(),
            Cell::Int(r.ambiguous_successes),
        ),
        ("deduplicated".into(), Cell::Int(r.deduplicated)),
        ("cancelled".into(), Cell::Int(r.cancelled)),
        ("probes".into(), Cell::Int(r.probes)),
        ("messages".into(), Cell::Int(r.messages)),
        ("deliveries".into(), Cell::Int(r.deliveries)),
        ("redeliveries".into(), Cell::Int(r.redeliveries)),
        (
            "duplicate_deliveries".into(),
            Cell::Int(r.duplicate_deliveries),
        ),
        ("processed".into(), Cell::Int(r.processed)),
        ("dead_lettered".into(), Cell::Int(r.dead_lettered)),
    ];
    for (i, name) in layer_names.iter().enumerate() {
        v.push((format!("attempts_{name}"), Cell::Int(r.layer_attempts[i])));
    }
    for (i, name) in layer_names.iter().enumerate() {
        v.push((format!("retries_{name}"), Cell::Int(r.layer_retries[i])));
    }
    push_gates(&mut v, &r.layer_gates, layer_names);
    for (i, name) in layer_names.iter().enumerate() {
        v.push((
            format!("orphaned_attempts_{name}"),
            Cell::Int(r.layer_orphaned[i]),
        ));
    }
    for (i, name) in layer_names.iter().enumerate() {
        let [budget, throttle, breaker] = r.layer_levels[i];
        v.push((format!("budget_level_{name}"), Cell::opt_f(budget)));
        v.push((format!("throttle_level_{name}"), Cell::opt_f(throttle)));
        v.push((format!("breaker_open_{name}"), Cell::opt_f(breaker)));
    }
    v
}

/// `a ÷ b`, 0 when there is nothing to divide.
fn per(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Per-layer refusals: `budget_exhausted_<layer>`, `throttled_<layer>`,
/// `breaker_rejected_<layer>`.
fn push_gates(v: &mut Vec<(String, Cell)>, gates: &[[u64; 3]], layer_names: &[String]) {
    for (i, name) in layer_names.iter().enumerate() {
        let [budget, throttle, breaker] = gates[i];
        v.push((format!("budget_exhausted_{name}"), Cell::Int(budget)));
        v.push((format!("throttled_{name}"), Cell::Int(throttle)));
        v.push((format!("breaker_rejected_{name}"), Cell::Int(breaker)));
    }
}

/// Columns of a summary row, after `variant, replicate, seed`.
pub fn summary_cells(s: &Summary, layer_names: &[String]) -> Vec<(String, Cell)> {
    let mut v: Vec<(String, Cell)> = vec![
        ("logical_requests".into(), Cell::Int(s.logical_requests)),
        ("succeeded".into(), Cell::Int(s.succeeded)),
        ("failed".into(), Cell::Int(s.failed)),
        ("success_rate".into(), Cell::Float(s.success_rate)),
        (
            "dependency_attempts".into(),
            Cell::Int(s.dependency_attempts),
        ),
        ("retries".into(), Cell::Int(s.retries)),
        ("retry_ratio".into(), Cell::Float(s.retry_ratio)),
        (
            "retry_delay_p50_ms".into(),
            Cell::opt_f(s.retry_delay_p50_ms),
        ),
        (
            "retry_delay_p99_ms".into(),
            Cell::opt_f(s.retry_delay_p99_ms),
        ),
        ("amplification".into(), Cell::Float(s.amplification)),
        (
            "peak_amplification".into(),
            Cell::Float(s.peak_amplification),
        ),
        ("goodput".into(), Cell::Float(s.goodput)),
        ("latency_mean_ms".into(), Cell::opt_f(s.latency_mean_ms)),
        ("latency_p50_ms".into(), Cell::opt_f(s.latency_p50_ms)),
        ("latency_p99_ms".into(), Cell::opt_f(s.latency_p99_ms)),
        ("latency_p999_ms".into(), Cell::opt_f(s.latency_p999_ms)),
        (
            "dependency_utilization".into(),
            Cell::Float(s.dependency_utilization),
        ),
        (
            "dependency_queue_wait_mean_ms".into(),
            Cell::opt_f(s.dependency_queue_wait_mean_ms),
        ),
        ("peak_load_ratio".into(), Cell::Float(s.peak_load_ratio)),
        ("recovery_time_s".into(), Cell::opt_f(s.recovery_time_s)),
        (
            "recovered".into(),
            s.recovered.map_or(Cell::Missing, Cell::Bool),
        ),
        ("orphaned_work_s".into(), Cell::Float(s.orphaned_work_s)),
        ("events".into(), Cell::Int(s.events)),
        // Extra columns.
        ("in_flight_at_end".into(), Cell::Int(s.in_flight_at_end)),
    ];
    for r in Reason::ALL {
        v.push((
            format!("failed_{}", r.name()),
            Cell::Int(s.failed_by[r as usize]),
        ));
    }
    v.extend([
        ("shed".into(), Cell::Int(s.shed)),
        ("blackholed".into(), Cell::Int(s.blackholed)),
        ("queue_timeouts".into(), Cell::Int(s.queue_timeouts)),
        ("orphaned".into(), Cell::Int(s.orphaned)),
        ("commits".into(), Cell::Int(s.commits)),
        ("committed_requests".into(), Cell::Int(s.committed_requests)),
        (
            "duplicate_side_effects".into(),
            Cell::Int(s.duplicate_side_effects),
        ),
        (
            "ambiguous_successes".into(),
            Cell::Int(s.ambiguous_successes),
        ),
        ("deduplicated".into(), Cell::Int(s.deduplicated)),
        ("cancelled".into(), Cell::Int(s.cancelled)),
        ("cancelled_work_s".into(), Cell::Float(s.cancelled_work_s)),
        ("probes".into(), Cell::Int(s.probes)),
        (
            "attempts_after_deadline".into(),
            Cell::Int(s.attempts_after_deadline),
        ),
        ("messages".into(), Cell::Int(s.messages)),
        ("deliveries".into(), Cell::Int(s.deliveries)),
        (
            "deliveries_per_message".into(),
            Cell::Float(per(s.deliveries, s.messages)),
        ),
        (
            "work_per_message".into(),
            Cell::Float(per(s.dependency_attempts, s.messages)),
        ),
        ("redeliveries".into(), Cell::Int(s.redeliveries)),
        (
            "duplicate_deliveries".into(),
            Cell::Int(s.duplicate_deliveries),
        ),
        ("processed".into(), Cell::Int(s.processed)),
        ("dead_lettered".into(), Cell::Int(s.dead_lettered)),
        ("messages_open".into(), Cell::Int(s.messages_open)),
        (
            "dead_letter_age_mean_s".into(),
            Cell::opt_f(s.dead_letter_age_mean_s),
        ),
        (
            "message_latency_p50_ms".into(),
            Cell::opt_f(s.message_latency_p50_ms),
        ),
        (
            "message_latency_p99_ms".into(),
            Cell::opt_f(s.message_latency_p99_ms),
        ),
    ]);
    for (i, name) in layer_names.iter().enumerate() {
        v.push((format!("attempts_{name}"), Cell::Int(s.layer_attempts[i])));
    }
    for (i, name) in layer_names.iter().enumerate() {
        v.push((format!("retries_{name}"), Cell::Int(s.layer_retries[i])));
    }
    push_gates(&mut v, &s.layer_gates, layer_names);
    for (i, name) in layer_names.iter().enumerate() {
        let per_request = if s.logical_requests == 0 {
            0.0
        } else {
            s.layer_attempts[i] as f64 / s.logical_requests as f64
        };
        v.push((format!("amplification_{name}"), Cell::Float(per_request)));
    }
    for (i, name) in layer_names.iter().enumerate() {
        v.push((format!("calls_{name}"), Cell::Int(s.layer_calls[i])));
        v.push((
            format!("orphaned_attempts_{name}"),
            Cell::Int(s.layer_orphaned[i]),
        ));
        v.push((
            format!("orphaned_work_s_{name}"),
            Cell::Float(s.layer_orphaned_work_s[i]),
        ));
    }
    v.extend([
        (
            "baseline_success_ratio".into(),
            Cell::Float(s.baseline_success_ratio),
        ),
        ("capacity_per_s".into(), Cell::Float(s.capacity_per_s)),
        (
            "aborted".into(),
            s.aborted.clone().map_or(Cell::Missing, Cell::Text),
        ),
        ("completion_time_s".into(), Cell::opt_f(s.completion_time_s)),
        (
            "event_digest".into(),
            Cell::Text(format!("{:016x}", s.event_digest)),
        ),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_short_and_stable() {
        assert_eq!(format_float(0.1 + 0.2), "0.3");
        assert_eq!(format_float(2.0), "2");
        assert_eq!(format_float(-0.0000001), "0");
        assert_eq!(format_float(1234.5678912), "1234.567891");
        assert_eq!(format_float(f64::NAN), "");
    }
}
