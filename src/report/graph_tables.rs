//! The tables of the services graph, tidy and long like the others (one
//! row per observation, so pandas groups by service or call):
//!
//! - `services.csv`: one row per run and service;
//! - `services_timeseries.csv`: one row per run, time bucket and service;
//! - `calls.csv`: one row per run and call edge;
//! - `replicas.csv`: one row per run and replica of a service;
//! - `classes.csv`: one row per run and priority class of the clients,
//!   written only when the clients send classes.
//!
//! Every row starts with `variant, replicate` and ends with the run's
//! `sweep.<path>` columns, as in `summary.csv`. The cache columns
//! (`hits, misses, coalesced, hit_ratio`) are there only when a service of
//! some variant has a cache (`Layout::caches`), so the tables of a
//! scenario without one keep their columns.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::interrupt::{POLL_ROWS, Stopped};
use crate::metrics::Cell;
use crate::metrics::RunResult;
use crate::metrics::classes::ClassRow;
use crate::metrics::services::{
    CacheCounts, EdgeSummary, ReplicaRow, ServiceCounts, ServiceRow, ServiceSummary,
};

use super::tables::{Layout, param_cells};

fn count_cells(c: &ServiceCounts) -> [(&'static str, Cell); 10] {
    [
        ("attempts", Cell::Int(c.attempts)),
        ("served", Cell::Int(c.served)),
        ("refused", Cell::Int(c.refused)),
        ("shed", Cell::Int(c.shed)),
        ("limited", Cell::Int(c.limited)),
        ("vanished", Cell::Int(c.vanished)),
        ("errors", Cell::Int(c.errors)),
        ("queue_timeouts", Cell::Int(c.queue_timeouts)),
        ("cancelled", Cell::Int(c.cancelled)),
        ("reset", Cell::Int(c.reset)),
    ]
}

fn opt(v: Option<f64>) -> Cell {
    v.map_or(Cell::Missing, Cell::Float)
}

/// The cache columns of a service's row (empty cells without a cache).
fn cache_cells(c: Option<&CacheCounts>) -> [(&'static str, Cell); 4] {
    let int = |v: fn(&CacheCounts) -> u64| c.map_or(Cell::Missing, |c| Cell::Int(v(c)));
    [
        ("hits", int(|c| c.hits)),
        ("misses", int(|c| c.misses)),
        ("coalesced", int(|c| c.coalesced)),
        ("hit_ratio", opt(c.and_then(CacheCounts::hit_ratio))),
    ]
}

/// The cells of one `services.csv` row, after `variant, replicate,
/// service`; `caches`: with the cache columns.
pub fn service_cells(s: &ServiceSummary, caches: bool) -> Vec<(&'static str, Cell)> {
    let mut cells: Vec<(&'static str, Cell)> = count_cells(&s.totals).into();
    cells.extend([
        ("amplification", opt(s.amplification)),
        ("peak_load_ratio", opt(s.peak_load_ratio)),
        ("peak_load_ratio_after", opt(s.peak_load_ratio_after)),
        (
            "peak_effective_load_ratio",
            opt(s.peak_effective_load_ratio),
        ),
        ("utilization", opt(s.utilization)),
        ("capacity_per_s", opt(s.capacity_per_s)),
        ("queue_wait_mean_ms", opt(s.queue_wait_mean_ms)),
        ("in_flight_mean", Cell::Float(s.in_flight_mean)),
        ("sojourn_mean_ms", opt(s.sojourn_mean_ms)),
        ("inside_at_end", Cell::Int(s.inside_at_end)),
        ("unserved_at_end", Cell::Int(s.unserved_at_end)),
        ("concurrency_limit_mean", opt(s.concurrency_limit_mean)),
        ("concurrency_limit_at_end", opt(s.concurrency_limit_at_end)),
    ]);
    if caches {
        cells.extend(cache_cells(s.cache.as_ref()));
    }
    cells
}

/// The cells of one `services_timeseries.csv` row, after `variant,
/// replicate, t_s, service`; `caches`: with the cache columns.
pub fn service_row_cells(r: &ServiceRow, caches: bool) -> Vec<(&'static str, Cell)> {
    let c = &r.counts;
    let mut cells = vec![
        ("attempts", Cell::Int(c.attempts)),
        ("load_ratio", opt(r.load_ratio)),
        ("utilization", opt(r.utilization)),
        ("queue_depth", Cell::Float(r.queue_depth)),
        ("in_flight", Cell::Float(r.in_flight)),
        ("replicas", Cell::Int(u64::from(r.replicas))),
        ("ejected", Cell::Int(u64::from(r.ejected))),
        (
            "desired_replicas",
            r.desired_replicas
                .map_or(Cell::Missing, |d| Cell::Int(u64::from(d))),
        ),
        ("concurrency_limit", opt(r.concurrency_limit)),
        ("served", Cell::Int(c.served)),
        ("refused", Cell::Int(c.refused)),
        ("shed", Cell::Int(c.shed)),
        ("limited", Cell::Int(c.limited)),
        ("vanished", Cell::Int(c.vanished)),
        ("errors", Cell::Int(c.errors)),
        ("queue_timeouts", Cell::Int(c.queue_timeouts)),
    ];
    if caches {
        cells.extend(cache_cells(r.cache.as_ref()));
    }
    // A bucket after a guard rail stopped the run: nothing was simulated
    // in it (as in `timeseries.csv`).
    if r.after_stop {
        for (_, c) in &mut cells {
            *c = Cell::Missing;
        }
    }
    cells
}

/// The cells of one `calls.csv` row, after `variant, replicate, caller,
/// callee, call`.
pub fn edge_cells(e: &EdgeSummary) -> Vec<(&'static str, Cell)> {
    vec![
        ("calls", Cell::Int(e.calls)),
        ("attempts", Cell::Int(e.attempts)),
        ("retries", Cell::Int(e.retries)),
        ("succeeded", Cell::Int(e.succeeded)),
        ("failed", Cell::Int(e.failed)),
        ("amplification", opt(e.amplification)),
        ("budget_exhausted", Cell::Int(e.gates[0])),
        ("throttled", Cell::Int(e.gates[1])),
        ("breaker_rejected", Cell::Int(e.gates[2])),
        ("orphaned_attempts", Cell::Int(e.orphaned_attempts)),
        ("pool_waits", Cell::Int(e.pool.waits)),
        ("pool_timeouts", Cell::Int(e.pool.timeouts)),
        ("connects", Cell::Int(e.pool.connects)),
        ("connect_failures", Cell::Int(e.pool.connect_failures)),
        ("connections_dropped", Cell::Int(e.pool.dropped)),
    ]
}

/// The cells of one `replicas.csv` row, after `variant, replicate,
/// service, replica`.
pub fn replica_cells(r: &ReplicaRow) -> Vec<(&'static str, Cell)> {
    let mut cells: Vec<(&'static str, Cell)> = count_cells(&r.counts.counts).into();
    cells.extend([
        ("peak_in_flight", Cell::Int(u64::from(r.counts.peak_inside))),
        ("ejections", Cell::Int(u64::from(r.counts.ejections))),
        ("unserved_at_end", Cell::Int(r.counts.unserved_at_end)),
    ]);
    cells
}

/// The header line of a table: `prefix`, the names of the `empty` cells
/// and the `sweep.<path>` columns.
fn header_line(prefix: &[&str], empty: &[(&'static str, Cell)], params: &[String]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = prefix.iter().map(|p| p.to_string()).collect();
    header.extend(empty.iter().map(|(n, _)| n.to_string()));
    header.extend(params.iter().map(|p| format!("sweep.{p}")));
    w.write_record(&header).expect("writing to memory");
    w.into_inner().expect("writing to memory")
}

/// Writes one table: the header (from the fallback cells `empty`), then
/// every row.
fn table(
    prefix: &[&str],
    empty: Vec<(&'static str, Cell)>,
    params: &[String],
    rows: impl Iterator<Item = (Vec<String>, Vec<(&'static str, Cell)>, Vec<(String, Cell)>)>,
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let mut out = header_line(prefix, &empty, params);
    out.extend_from_slice(&table_rows(rows, stop)?);
    Ok(out)
}

/// The lines of a table's `rows`, without its header.
fn table_rows(
    rows: impl Iterator<Item = (Vec<String>, Vec<(&'static str, Cell)>, Vec<(String, Cell)>)>,
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut field = String::new();
    for (i, (lead, cells, sweep)) in rows.enumerate() {
        if i.is_multiple_of(POLL_ROWS) && stop.load(Ordering::Relaxed) {
            return Err(Stopped);
        }
        for f in &lead {
            w.write_field(f).expect("writing to memory");
        }
        for (_, c) in cells.iter() {
            field.clear();
            c.render_into(&mut field);
            w.write_field(&field).expect("writing to memory");
        }
        for (_, c) in &sweep {
            field.clear();
            c.render_into(&mut field);
            w.write_field(&field).expect("writing to memory");
        }
        w.write_record(None::<&[u8]>).expect("writing to memory");
    }
    Ok(w.into_inner().expect("writing to memory"))
}

/// `services.csv`.
fn services_csv(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let caches = layout.caches;
    let rows = results.iter().flat_map(|r| {
        let sweep = param_cells(r, &layout.params);
        r.graph.services.iter().map(move |s| {
            let lead = vec![
                r.variant.clone(),
                r.replicate.to_string(),
                r.services[s.service].name.clone(),
            ];
            (lead, service_cells(s, caches), sweep.clone())
        })
    });
    table(
        &["variant", "replicate", "service"],
        service_cells(&ServiceSummary::default(), caches),
        &layout.params,
        rows,
        stop,
    )
}

/// `services_timeseries.csv`.
fn services_timeseries_csv(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let caches = layout.caches;
    let mut out = services_timeseries_header(layout, caches);
    for r in results {
        out.extend_from_slice(&services_timeseries_rows(layout, caches, r, stop)?);
    }
    Ok(out)
}

/// The header line of `services_timeseries.csv` with the columns of
/// `layout`; `caches`: with the cache columns (some service of the runs
/// has a cache).
pub fn services_timeseries_header(layout: &Layout, caches: bool) -> Vec<u8> {
    header_line(
        &["variant", "replicate", "t_s", "service"],
        &service_row_cells(&ServiceRow::default(), caches),
        &layout.params,
    )
}

/// One run's lines of `services_timeseries.csv` (after the header),
/// given up once `stop` is raised.
pub fn services_timeseries_rows(
    layout: &Layout,
    caches: bool,
    r: &RunResult,
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let sweep = param_cells(r, &layout.params);
    let rows = r.graph.rows.iter().map(|row| {
        let lead = vec![
            r.variant.clone(),
            r.replicate.to_string(),
            Cell::Float(row.t_s).render(),
            r.services[row.service].name.clone(),
        ];
        (lead, service_row_cells(row, caches), sweep.clone())
    });
    table_rows(rows, stop)
}

/// `calls.csv`.
fn calls_csv(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let rows = results.iter().flat_map(|r| {
        let sweep = param_cells(r, &layout.params);
        r.graph.edges.iter().map(move |e| {
            let info = &r.edges[e.edge];
            let lead = vec![
                r.variant.clone(),
                r.replicate.to_string(),
                info.caller.clone(),
                info.callee.clone(),
                info.name.clone(),
            ];
            (lead, edge_cells(e), sweep.clone())
        })
    });
    table(
        &["variant", "replicate", "caller", "callee", "call"],
        edge_cells(&EdgeSummary::default()),
        &layout.params,
        rows,
        stop,
    )
}

/// `replicas.csv`.
fn replicas_csv(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let rows = results.iter().flat_map(|r| {
        let sweep = param_cells(r, &layout.params);
        r.graph.replicas.iter().map(move |x| {
            let lead = vec![
                r.variant.clone(),
                r.replicate.to_string(),
                r.services[x.service].name.clone(),
                x.replica.to_string(),
            ];
            (lead, replica_cells(x), sweep.clone())
        })
    });
    table(
        &["variant", "replicate", "service", "replica"],
        replica_cells(&ReplicaRow::default()),
        &layout.params,
        rows,
        stop,
    )
}

/// The cells of one `classes.csv` row, after `variant, replicate, class`.
pub fn class_cells(c: &ClassRow) -> Vec<(&'static str, Cell)> {
    vec![
        ("share", Cell::Float(c.share)),
        ("requests", Cell::Int(c.requests)),
        ("succeeded", Cell::Int(c.succeeded)),
        ("failed", Cell::Int(c.failed)),
        ("shed", Cell::Int(c.shed)),
        ("open_at_end", Cell::Int(c.open_at_end)),
        ("hung_at_end", Cell::Int(c.hung_at_end)),
        ("shed_attempts", Cell::Int(c.shed_attempts)),
        ("success_rate", opt(c.success_rate)),
        ("latency_p99_ms", opt(c.latency_p99_ms)),
    ]
}

/// `classes.csv`; `None` when no run has priority classes.
pub fn classes_csv(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Option<Vec<u8>>, Stopped> {
    if results.iter().all(|r| r.classes.is_empty()) {
        return Ok(None);
    }
    classes_table(layout, results, stop).map(Some)
}

/// The rows of `classes.csv` of these results, under its header even when
/// none has classes (a shard's: the merge writes `classes.csv` when some
/// run has them).
pub fn classes_table(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<Vec<u8>, Stopped> {
    let rows = results.iter().flat_map(|r| {
        let sweep = param_cells(r, &layout.params);
        r.classes.iter().map(move |c| {
            let lead = vec![r.variant.clone(), r.replicate.to_string(), c.class.clone()];
            (lead, class_cells(c), sweep.clone())
        })
    });
    table(
        &["variant", "replicate", "class"],
        class_cells(&ClassRow::default()),
        &layout.params,
        rows,
        stop,
    )
}

/// The four graph tables of these results, as (file name, bytes).
pub fn all(layout: &Layout, results: &[RunResult]) -> [(&'static str, Vec<u8>); 4] {
    match all_until(layout, results, &NEVER) {
        Ok(tables) => tables,
        Err(Stopped) => unreachable!("the flag NEVER is never raised"),
    }
}

/// `all`, given up once `stop` is raised.
pub fn all_until(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<[(&'static str, Vec<u8>); 4], Stopped> {
    Ok([
        ("services.csv", services_csv(layout, results, stop)?),
        (
            "services_timeseries.csv",
            services_timeseries_csv(layout, results, stop)?,
        ),
        ("calls.csv", calls_csv(layout, results, stop)?),
        ("replicas.csv", replicas_csv(layout, results, stop)?),
    ])
}

/// `all_until` without `services_timeseries.csv` (written as the runs
/// finish: `super::table_stream`), as (file name, bytes).
pub fn all_but_timeseries_until(
    layout: &Layout,
    results: &[RunResult],
    stop: &AtomicBool,
) -> Result<[(&'static str, Vec<u8>); 3], Stopped> {
    Ok([
        ("services.csv", services_csv(layout, results, stop)?),
        ("calls.csv", calls_csv(layout, results, stop)?),
        ("replicas.csv", replicas_csv(layout, results, stop)?),
    ])
}

/// A stop flag never raised.
static NEVER: AtomicBool = AtomicBool::new(false);
