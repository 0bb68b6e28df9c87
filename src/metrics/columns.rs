//! The columns of the output tables, in order: the contract documented in
//! README.md ("Outputs") first, extra columns after. Each row becomes a
//! list of named `Cell`s so that writing CSV and aggregating over
//! replicates need no per-column code.

use std::fmt;

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
            Cell::Float(v) => push_float(out, *v),
            Cell::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Cell::Text(s) => out.push_str(s),
            Cell::Missing => {}
        }
    }
}

/// The largest figure a table holds, in size: no count, wait or rate of a
/// run within stormsim's limits reaches it, and it is exact as a float.
/// The tables' reader (`report::table_check`) refuses more.
pub const MAX_FIGURE: f64 = 1e15;

/// A ratio as the tables hold it: at most [`MAX_FIGURE`]. Only a load
/// against a capacity close to none reaches that (a thousand billion
/// times too much is as decided as more); without the cap a run could
/// write a table its own `plot` and `merge` then refuse.
pub fn held_ratio(v: f64) -> f64 {
    v.min(MAX_FIGURE)
}

pub fn format_float(v: f64) -> String {
    let mut out = String::new();
    push_float(&mut out, v);
    out
}

/// `format_float`, appended to `out`.
fn push_float(out: &mut String, v: f64) {
    use std::fmt::Write;
    if !v.is_finite() {
        return;
    }
    let start = out.len();
    let _ = write!(out, "{v:.6}");
    // `{:.6}` always has a point: trim its trailing zeros, then the point.
    while out.ends_with('0') {
        out.pop();
    }
    if out.ends_with('.') {
        out.pop();
    }
    if &out[start..] == "-0" {
        out.truncate(start);
        out.push('0');
    }
}

/// A column name that `summary.csv` or `timeseries.csv` would hold twice
/// with layers named `layer_names`, if any: a layer's columns are its
/// name after a prefix (`attempts_<layer>`), so a layer named
/// `after_deadline` makes `attempts_after_deadline`, a column of its own.
/// Checked on the headers themselves, so a column added later is covered.
pub fn repeated_column(layer_names: &[String]) -> Option<String> {
    let n = layer_names.len();
    let row = TimeRow {
        layer_orphaned: vec![0; n],
        layer_attempts: vec![0; n],
        layer_retries: vec![0; n],
        layer_gates: vec![[0; 3]; n],
        layer_levels: vec![[None; 3]; n],
        ..TimeRow::default()
    };
    let summary = Summary {
        layer_attempts: vec![0; n],
        layer_retries: vec![0; n],
        layer_gates: vec![[0; 3]; n],
        layer_calls: vec![0; n],
        layer_orphaned: vec![0; n],
        layer_orphaned_work_s: vec![0.0; n],
        // Every optional column present.
        pools: true,
        ..Summary::default()
    };
    for names in [
        time_row_cells(&row, layer_names),
        summary_cells(&summary, layer_names),
    ] {
        let mut seen = std::collections::BTreeSet::new();
        if let Some((name, _)) = names
            .into_iter()
            .find(|(name, _)| !seen.insert(name.clone()))
        {
            return Some(name);
        }
    }
    None
}

/// Columns of a time-series row, after `variant, replicate`.
pub fn time_row_cells(r: &TimeRow, layer_names: &[String]) -> Vec<(String, Cell)> {
    let mut v = Vec::new();
    for_each_time_cell(r, layer_names, &[], |name, cell| {
        v.push((name.to_string(), cell))
    });
    v
}

/// Whether layer `i` of a table's layers is one the run has (`present`:
/// one flag per layer; empty: all of them). A layer of another variant
/// has empty cells in a run's row: it has no such layer, which is not
/// zero attempts on it.
fn has(present: &[bool], i: usize) -> bool {
    present.get(i).copied().unwrap_or(true)
}

/// `cell`, or an empty one where the run has no layer `i`.
fn of_layer(present: &[bool], i: usize, cell: Cell) -> Cell {
    if has(present, i) { cell } else { Cell::Missing }
}

/// The columns of a time-series row, in order, each as (name, cell) given
/// to `f`; the name is formatted only if `f` uses it (the CSV writer
/// streams a long run's rows and needs the names once, for its header).
/// `present`: which of `layer_names` the run has (empty: all); the cells
/// of the others are empty.
pub fn for_each_time_cell(
    r: &TimeRow,
    layer_names: &[String],
    present: &[bool],
    mut f: impl FnMut(fmt::Arguments, Cell),
) {
    f(format_args!("t_s"), Cell::Float(r.t_s));
    // A bucket after a guard rail stopped the run: only its time.
    let stopped = r.after_stop;
    let mut f =
        |name: fmt::Arguments, cell: Cell| f(name, if stopped { Cell::Missing } else { cell });
    f(format_args!("offered"), Cell::Int(r.offered));
    f(format_args!("attempts"), Cell::Int(r.attempts));
    f(format_args!("retries"), Cell::Int(r.retries));
    f(
        format_args!("dependency_attempts"),
        Cell::Int(r.dependency_attempts),
    );
    f(format_args!("succeeded"), Cell::Int(r.succeeded));
    f(format_args!("failed"), Cell::Int(r.failed));
    f(
        format_args!("failed_timeout"),
        Cell::Int(r.failed_by[Reason::Timeout as usize]),
    );
    f(
        format_args!("failed_connection"),
        Cell::Int(r.failed_by[Reason::Connection as usize]),
    );
    f(
        format_args!("failed_status"),
        Cell::Int(r.failed_by[Reason::Status as usize]),
    );
    f(
        format_args!("failed_deadline"),
        Cell::Int(r.failed_by[Reason::Deadline as usize]),
    );
    f(format_args!("shed"), Cell::Int(r.shed));
    f(format_args!("queue_depth"), Cell::Float(r.queue_depth));
    f(format_args!("in_flight"), Cell::Float(r.in_flight));
    f(format_args!("utilization"), Cell::opt_f(r.utilization));
    f(format_args!("goodput"), Cell::Float(r.goodput));
    f(
        format_args!("latency_p50_ms"),
        Cell::opt_f(r.latency_p50_ms),
    );
    f(
        format_args!("latency_p99_ms"),
        Cell::opt_f(r.latency_p99_ms),
    );
    f(format_args!("orphaned"), Cell::Int(r.orphaned));
    // Extra columns.
    f(
        format_args!("failed_retry_after_exceeds_budget"),
        Cell::Int(r.failed_by[Reason::RetryAfterExceedsBudget as usize]),
    );
    f(
        format_args!("failed_budget_exhausted"),
        Cell::Int(r.failed_by[Reason::BudgetExhausted as usize]),
    );
    f(
        format_args!("failed_throttled"),
        Cell::Int(r.failed_by[Reason::Throttled as usize]),
    );
    f(
        format_args!("failed_breaker_open"),
        Cell::Int(r.failed_by[Reason::BreakerOpen as usize]),
    );
    f(
        format_args!("failed_bulkhead_full"),
        Cell::Int(r.failed_by[Reason::BulkheadFull as usize]),
    );
    f(format_args!("blackholed"), Cell::Int(r.blackholed));
    f(format_args!("queue_timeouts"), Cell::Int(r.queue_timeouts));
    f(format_args!("open_requests"), Cell::Int(r.open_requests));
    f(format_args!("load_ratio"), Cell::opt_f(r.load_ratio));
    f(format_args!("commits"), Cell::Int(r.commits));
    f(
        format_args!("duplicate_side_effects"),
        Cell::Int(r.duplicate_side_effects),
    );
    f(
        format_args!("ambiguous_successes"),
        Cell::Int(r.ambiguous_successes),
    );
    f(format_args!("deduplicated"), Cell::Int(r.deduplicated));
    f(format_args!("cancelled"), Cell::Int(r.cancelled));
    f(format_args!("probes"), Cell::Int(r.probes));
    f(format_args!("messages"), Cell::Int(r.messages));
    f(format_args!("deliveries"), Cell::Int(r.deliveries));
    f(format_args!("redeliveries"), Cell::Int(r.redeliveries));
    f(
        format_args!("duplicate_deliveries"),
        Cell::Int(r.duplicate_deliveries),
    );
    f(format_args!("processed"), Cell::Int(r.processed));
    f(format_args!("dead_lettered"), Cell::Int(r.dead_lettered));
    let p = present;
    for (i, name) in layer_names.iter().enumerate() {
        f(
            format_args!("attempts_{name}"),
            of_layer(p, i, Cell::Int(r.layer_attempts[i])),
        );
    }
    for (i, name) in layer_names.iter().enumerate() {
        f(
            format_args!("retries_{name}"),
            of_layer(p, i, Cell::Int(r.layer_retries[i])),
        );
    }
    gate_cells(&r.layer_gates, layer_names, p, &mut f);
    for (i, name) in layer_names.iter().enumerate() {
        f(
            format_args!("orphaned_attempts_{name}"),
            of_layer(p, i, Cell::Int(r.layer_orphaned[i])),
        );
    }
    for (i, name) in layer_names.iter().enumerate() {
        let [budget, throttle, breaker] = r.layer_levels[i];
        f(format_args!("budget_level_{name}"), Cell::opt_f(budget));
        f(format_args!("throttle_level_{name}"), Cell::opt_f(throttle));
        f(format_args!("breaker_open_{name}"), Cell::opt_f(breaker));
    }
}

/// The `recovered` cell of a run too short after its trigger to judge.
pub const UNDECIDED: &str = "undecided";

/// `a` per `b`; none when there is no `b` (0/0 is not 0).
fn per(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// Per-layer refusals: `budget_exhausted_<layer>`, `throttled_<layer>`,
/// `breaker_rejected_<layer>`.
fn push_gates(
    v: &mut Vec<(String, Cell)>,
    gates: &[[u64; 3]],
    layer_names: &[String],
    present: &[bool],
) {
    gate_cells(gates, layer_names, present, &mut |name, cell| {
        v.push((name.to_string(), cell))
    });
}

fn gate_cells(
    gates: &[[u64; 3]],
    layer_names: &[String],
    present: &[bool],
    f: &mut impl FnMut(fmt::Arguments, Cell),
) {
    for (i, name) in layer_names.iter().enumerate() {
        let [budget, throttle, breaker] = gates[i];
        let cell = |v| of_layer(present, i, Cell::Int(v));
        f(format_args!("budget_exhausted_{name}"), cell(budget));
        f(format_args!("throttled_{name}"), cell(throttle));
        f(format_args!("breaker_rejected_{name}"), cell(breaker));
    }
}

/// Whether `cell` is of the type [`summary_cells`] writes in the column
/// `name`: `Err` says what the column holds. A shard's
/// `summary.exact.csv` is read back through this, so that a cell of
/// another type (text where a number is due, a float that is not finite)
/// is refused rather than merged.
pub fn check_summary_cell(name: &str, cell: &Cell) -> Result<(), &'static str> {
    const NUMBER_OR_EMPTY: &str = "a finite number (`f:`) or an empty cell";
    const FLOAT: &str = "a finite number (`f:`)";
    const INT: &str = "a whole number (`i:`, 0 or more)";
    const INT_OR_EMPTY: &str =
        "a whole number (`i:`, 0 or more), or an empty cell for a layer the run does not have";
    const FLOAT_OR_EMPTY: &str =
        "a finite number (`f:`), or an empty cell for a layer the run does not have";
    let finite = |v: &f64| v.is_finite();
    let (ok, want) = match name {
        _ if name.starts_with("sweep.") => (
            matches!(cell, Cell::Text(_) | Cell::Missing),
            "a text (`t:`) or an empty cell",
        ),
        "recovered" => (
            matches!(cell, Cell::Bool(_) | Cell::Missing)
                || matches!(cell, Cell::Text(t) if t == UNDECIDED),
            "`b:true`, `b:false`, `t:undecided` or an empty cell",
        ),
        "slo_pass" => (matches!(cell, Cell::Bool(_)), "`b:true` or `b:false`"),
        "slo_failed" | "aborted" => (
            matches!(cell, Cell::Text(t) if !t.is_empty()) || matches!(cell, Cell::Missing),
            "a text (`t:`) or an empty cell",
        ),
        "event_digest" => (
            matches!(cell, Cell::Text(t) if t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit())),
            "`t:` and 16 hex digits",
        ),
        _ => {
            // The type of the fixed columns, from the row of an empty
            // summary (a value that may be absent is empty there); the
            // per-layer columns by their prefix.
            let fixed = summary_cells(
                &Summary {
                    pools: true,
                    ..Summary::default()
                },
                &[],
            );
            let kind = fixed.into_iter().find(|(n, _)| n == name).map(|(_, c)| c);
            // A per-layer column is empty in the row of a run of a
            // variant without that layer.
            let want = match kind {
                Some(Cell::Int(_)) => INT,
                Some(Cell::Float(_)) => FLOAT,
                Some(_) => NUMBER_OR_EMPTY,
                None if name.starts_with("amplification_") => NUMBER_OR_EMPTY,
                None if name.starts_with("orphaned_work_s_") => FLOAT_OR_EMPTY,
                None => INT_OR_EMPTY,
            };
            let ok = match want {
                INT => matches!(cell, Cell::Int(_)),
                INT_OR_EMPTY => matches!(cell, Cell::Int(_) | Cell::Missing),
                FLOAT => matches!(cell, Cell::Float(v) if finite(v)),
                _ => matches!(cell, Cell::Missing) || matches!(cell, Cell::Float(v) if finite(v)),
            };
            (ok, want)
        }
    };
    if ok { Ok(()) } else { Err(want) }
}

/// Columns of a summary row, after `variant, replicate, seed`.
pub fn summary_cells(s: &Summary, layer_names: &[String]) -> Vec<(String, Cell)> {
    summary_cells_of(s, layer_names, &[])
}

/// [`summary_cells`] of a run that has only the layers flagged in
/// `present` (one flag per layer of `layer_names`; empty: all): the cells
/// of the others are empty.
pub fn summary_cells_of(
    s: &Summary,
    layer_names: &[String],
    present: &[bool],
) -> Vec<(String, Cell)> {
    let mut v: Vec<(String, Cell)> = vec![
        ("logical_requests".into(), Cell::Int(s.logical_requests)),
        ("succeeded".into(), Cell::Int(s.succeeded)),
        ("failed".into(), Cell::Int(s.failed)),
        ("success_rate".into(), Cell::opt_f(s.success_rate)),
        (
            "dependency_attempts".into(),
            Cell::Int(s.dependency_attempts),
        ),
        ("retries".into(), Cell::Int(s.retries)),
        ("retry_ratio".into(), Cell::opt_f(s.retry_ratio)),
        (
            "retry_delay_p50_ms".into(),
            Cell::opt_f(s.retry_delay_p50_ms),
        ),
        (
            "retry_delay_p99_ms".into(),
            Cell::opt_f(s.retry_delay_p99_ms),
        ),
        // Per logical request: none without one (0/0 is not 0).
        ("amplification".into(), Cell::opt_f(s.amplification)),
        (
            "peak_amplification".into(),
            Cell::opt_f(s.peak_amplification),
        ),
        ("goodput".into(), Cell::Float(s.goodput)),
        ("latency_mean_ms".into(), Cell::opt_f(s.latency_mean_ms)),
        ("latency_p50_ms".into(), Cell::opt_f(s.latency_p50_ms)),
        ("latency_p99_ms".into(), Cell::opt_f(s.latency_p99_ms)),
        ("latency_p999_ms".into(), Cell::opt_f(s.latency_p999_ms)),
        (
            "dependency_utilization".into(),
            Cell::opt_f(s.dependency_utilization),
        ),
        (
            "dependency_queue_wait_mean_ms".into(),
            Cell::opt_f(s.dependency_queue_wait_mean_ms),
        ),
        ("peak_load_ratio".into(), Cell::opt_f(s.peak_load_ratio)),
        ("recovery_time_s".into(), Cell::opt_f(s.recovery_time_s)),
        (
            "recovered".into(),
            match (s.recovered, s.undecided) {
                (Some(r), _) => Cell::Bool(r),
                // No verdict: the run ended too soon after the trigger.
                (None, Some(_)) => Cell::Text(UNDECIDED.into()),
                (None, None) => Cell::Missing,
            },
        ),
        ("orphaned_work_s".into(), Cell::Float(s.orphaned_work_s)),
        ("events".into(), Cell::Int(s.events)),
        // Extra columns: the figures after the incident first.
        ("refused".into(), Cell::Int(s.refused)),
        (
            "success_rate_outside_incidents".into(),
            Cell::opt_f(s.success_rate_outside_incidents),
        ),
        (
            "latency_p99_outside_ms".into(),
            Cell::opt_f(s.latency_p99_outside_ms),
        ),
        (
            "peak_load_ratio_after".into(),
            Cell::opt_f(s.peak_load_ratio_after),
        ),
        (
            "peak_effective_load_ratio".into(),
            Cell::opt_f(s.peak_effective_load_ratio),
        ),
        (
            "time_to_full_goodput_s".into(),
            Cell::opt_f(s.time_to_full_goodput_s),
        ),
    ];
    // The SLO's verdict, only when the scenario has one (every run of a
    // scenario has the same SLO: variants and sweeps cannot change it).
    if let Some(verdict) = &s.slo {
        v.push(("slo_pass".into(), Cell::Bool(verdict.pass())));
        v.push((
            "slo_failed".into(),
            if verdict.pass() {
                Cell::Missing
            } else {
                Cell::Text(verdict.failed_text())
            },
        ));
    }
    v.push(("in_flight_at_end".into(), Cell::Int(s.in_flight_at_end)));
    v.push(("hung_at_end".into(), Cell::Int(s.hung_at_end)));
    for r in Reason::ALL {
        if r == Reason::PoolTimeout && !s.pools {
            continue;
        }
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
            Cell::opt_f(per(s.deliveries, s.messages)),
        ),
        (
            "work_per_message".into(),
            Cell::opt_f(per(s.dependency_attempts, s.messages)),
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
    let p = present;
    for (i, name) in layer_names.iter().enumerate() {
        let cell = of_layer(p, i, Cell::Int(s.layer_attempts[i]));
        v.push((format!("attempts_{name}"), cell));
    }
    for (i, name) in layer_names.iter().enumerate() {
        let cell = of_layer(p, i, Cell::Int(s.layer_retries[i]));
        v.push((format!("retries_{name}"), cell));
    }
    push_gates(&mut v, &s.layer_gates, layer_names, p);
    for (i, name) in layer_names.iter().enumerate() {
        let per_request = per(s.layer_attempts[i], s.logical_requests);
        let cell = of_layer(p, i, Cell::opt_f(per_request));
        v.push((format!("amplification_{name}"), cell));
    }
    for (i, name) in layer_names.iter().enumerate() {
        let cell = |c| of_layer(p, i, c);
        v.push((format!("calls_{name}"), cell(Cell::Int(s.layer_calls[i]))));
        v.push((
            format!("orphaned_attempts_{name}"),
            cell(Cell::Int(s.layer_orphaned[i])),
        ));
        v.push((
            format!("orphaned_work_s_{name}"),
            cell(Cell::Float(s.layer_orphaned_work_s[i])),
        ));
    }
    v.extend([
        (
            "baseline_success_ratio".into(),
            Cell::opt_f(s.baseline_success_ratio),
        ),
        ("capacity_per_s".into(), Cell::opt_f(s.capacity_per_s)),
        (
            "aborted".into(),
            s.aborted
                .map_or(Cell::Missing, |a| Cell::Text(a.to_string())),
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
        assert_eq!(format_float(100.0), "100");
        // Appending keeps what was there, even a trailing zero.
        let mut out = String::from("x0");
        Cell::Float(-0.0000001).render_into(&mut out);
        Cell::Float(2.50).render_into(&mut out);
        Cell::Int(10).render_into(&mut out);
        assert_eq!(out, "x002.510");
    }
}
