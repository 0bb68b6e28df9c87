//! The services graph as the charts and report read it back from the
//! run's tables: `services.csv` (each service's figures), `calls.csv`
//! (each call edge's) and `services_timeseries.csv` (attempts per second
//! at each service over time). Figures are means over a variant's
//! replicates; the time series are reduced like `timeseries.csv` (mean,
//! minimum and maximum over replicates per bucket, thinned past
//! `MAX_POINTS`).
//!
//! Each table is read in one streaming pass, so memory follows the
//! services, calls and points drawn, not the size of the files. Rows of a
//! variant the other tables do not list are left out; odd cells are gaps.
//! A run folder from before the graph tables has none: no graph data.

use std::collections::HashMap;
use std::io::Read;

use super::ReportError;
use super::capacity_series::CapacityModels;
use super::chart_data::{
    Bins, Checked, Point, Series, decimate, group_for, parse_num, push, reduce, table_error,
};
use super::table_check::TableKind;
use super::tables::MAX_ROW_BYTES;
use crate::input_file::LineLimited;
use crate::interrupt::{self, POLL_ROWS};

/// The most distinct services, and call edges, the tables may name: far
/// more than a scenario may have (a guard against a table that is not
/// stormsim's filling memory).
pub const MAX_SERVICES: usize = 1_000;
pub const MAX_CALLS: usize = 5_000;

/// The caller of the clients' entry call in `calls.csv`.
pub const CLIENTS: &str = "clients";

/// A running mean.
#[derive(Clone, Copy, Debug, Default)]
struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    fn add(&mut self, v: Option<f64>) {
        if let Some(v) = v {
            self.sum += v;
            self.n += 1;
        }
    }

    fn get(self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / f64::from(self.n))
    }
}

/// The `services.csv` columns read, in the order of [`ServiceFigures`].
const SERVICE_COLUMNS: [&str; 8] = [
    "attempts",
    "served",
    "refused",
    "shed",
    "amplification",
    "peak_load_ratio",
    "utilization",
    "capacity_per_s",
];

/// The `calls.csv` columns read, in the order of [`CallFigures`].
const CALL_COLUMNS: [&str; 6] = [
    "calls",
    "attempts",
    "retries",
    "failed",
    "amplification",
    "orphaned_attempts",
];

/// One service's figures in one variant: means over its replicates
/// (`None` where no replicate has a value).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServiceFigures {
    pub attempts: Option<f64>,
    pub served: Option<f64>,
    pub refused: Option<f64>,
    pub shed: Option<f64>,
    /// Attempts ÷ logical requests.
    pub amplification: Option<f64>,
    /// The highest bucket's attempts per second ÷ capacity.
    pub peak_load_ratio: Option<f64>,
    pub utilization: Option<f64>,
    pub capacity_per_s: Option<f64>,
    /// Rows (replicates) read.
    pub replicates: u32,
}

/// One call edge's figures in one variant: means over its replicates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CallFigures {
    pub calls: Option<f64>,
    pub attempts: Option<f64>,
    pub retries: Option<f64>,
    pub failed: Option<f64>,
    /// Attempts on the edge ÷ logical requests.
    pub amplification: Option<f64>,
    pub orphaned_attempts: Option<f64>,
    pub replicates: u32,
}

/// A call edge, named as in `calls.csv`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// A service, or [`CLIENTS`].
    pub caller: String,
    pub callee: String,
    /// The edge's name (a chain's edges are named after its layers).
    pub name: String,
}

/// Everything the graph charts and the report's services section read.
#[derive(Clone, Debug, Default)]
pub struct GraphData {
    /// Service names in the order of `services.csv` (by depth from the
    /// clients).
    pub services: Vec<String>,
    /// Call edges in the order of `calls.csv`.
    pub calls: Vec<Call>,
    /// `[variant][service]`, variants in the order of `ChartData`.
    pub service_figures: Vec<Vec<ServiceFigures>>,
    /// `[variant][call]`.
    pub call_figures: Vec<Vec<CallFigures>>,
    /// `[service][variant]`: attempts per second at the service over time
    /// (mean over replicates, min–max band).
    pub load: Vec<Vec<Vec<Point>>>,
    /// `[service][variant]`: the capacity per second the service had in
    /// each bucket (mean over replicates), for the services whose capacity
    /// changes (`super::capacity_series`); empty for the others.
    pub capacity: Vec<Vec<Vec<Point>>>,
    /// `[service][variant]`: the adaptive concurrency limit over time (the
    /// `concurrency_limit` column, mean over replicates); empty for a
    /// service without one.
    pub limit: Vec<Vec<Vec<Point>>>,
    /// Buckets per point of the most thinned series (1: none thinned).
    pub group: usize,
}

/// The three tables' sources.
pub struct GraphSources<S, T, C> {
    pub services: S,
    pub timeseries: T,
    pub calls: C,
}

fn csv_reader<R: Read>(source: R) -> csv::Reader<LineLimited<R>> {
    csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(LineLimited::new(source, MAX_ROW_BYTES))
}

/// Streams the rows of a table: `each(row, column index)` for every row,
/// after `check` when given.
fn rows<R: Read>(
    kind: TableKind,
    source: R,
    checked: Option<&Checked>,
    mut each: impl FnMut(&csv::StringRecord, &dyn Fn(&str) -> Option<usize>) -> Result<(), String>,
) -> Result<(), ReportError> {
    let file = checked.map_or_else(|| kind.file().to_string(), |c| c.label(kind.file()));
    let bad = |m: String| ReportError::Table(format!("{file}: {m}"));
    let mut check = checked.map(|c| c.check(kind));
    let mut r = csv_reader(source);
    let header = r.headers().map_err(|e| bad(e.to_string()))?.clone();
    if let Some(c) = check.as_mut() {
        c.header(&header).map_err(table_error)?;
    }
    let col = |name: &str| header.iter().position(|h| h == name);
    let mut rec = csv::StringRecord::new();
    let mut n: u64 = 0;
    while r.read_record(&mut rec).map_err(|e| bad(e.to_string()))? {
        if n.is_multiple_of(POLL_ROWS as u64) {
            interrupt::check()?;
        }
        n += 1;
        if let Some(c) = check.as_mut() {
            c.row(&rec).map_err(table_error)?;
        }
        each(&rec, &col).map_err(bad)?;
    }
    if let Some(c) = check.as_mut() {
        c.finish().map_err(table_error)?;
    }
    Ok(())
}

/// Names in order of first appearance, each with its index; at most `cap`.
#[derive(Default)]
struct Names {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Names {
    fn get_or_add(&mut self, name: &str, cap: usize, what: &str) -> Result<usize, String> {
        if let Some(&i) = self.index.get(name) {
            return Ok(i);
        }
        if self.names.len() >= cap {
            return Err(format!(
                "names more than {cap} {what}, more than any run has"
            ));
        }
        self.index.insert(name.to_string(), self.names.len());
        self.names.push(name.to_string());
        Ok(self.names.len() - 1)
    }
}

impl GraphData {
    /// Reads the three tables. `variants` maps a variant's name to its
    /// index (`ChartData::index`, `n` variants); attempts are turned into
    /// rates over the buckets of `bins`, read in its groups of buckets
    /// like `timeseries.csv`; the capacity per bucket of
    /// the services `models` holds is computed from their rows.
    pub fn read(
        sources: GraphSources<impl Read, impl Read, impl Read>,
        variants: &HashMap<String, usize>,
        n: usize,
        bins: Bins,
        checked: Option<&Checked>,
        models: Option<&CapacityModels>,
    ) -> Result<GraphData, ReportError> {
        let variant_of = |rec: &csv::StringRecord, col: Option<usize>| {
            col.and_then(|i| rec.get(i))
                .and_then(|v| variants.get(v).copied())
                .filter(|&v| v < n)
        };
        let mut services = Names::default();
        let mut figures: Vec<Vec<([Mean; 8], u32)>> = vec![Vec::new(); n];
        rows(
            TableKind::Services,
            sources.services,
            checked,
            |rec, col| {
                let Some(v) = variant_of(rec, col("variant")) else {
                    return Ok(());
                };
                let name = col("service").and_then(|i| rec.get(i)).unwrap_or("");
                if name.is_empty() {
                    return Ok(());
                }
                let s = services.get_or_add(name, MAX_SERVICES, "services")?;
                let row = &mut figures[v];
                if row.len() <= s {
                    row.resize(s + 1, Default::default());
                }
                let (means, count) = &mut row[s];
                for (m, c) in means.iter_mut().zip(SERVICE_COLUMNS) {
                    m.add(col(c).and_then(|i| rec.get(i)).and_then(parse_num));
                }
                *count += 1;
                Ok(())
            },
        )?;

        let mut calls = Names::default();
        let mut call_keys: Vec<Call> = Vec::new();
        let mut call_means: Vec<Vec<([Mean; 6], u32)>> = vec![Vec::new(); n];
        rows(TableKind::Calls, sources.calls, checked, |rec, col| {
            let Some(v) = variant_of(rec, col("variant")) else {
                return Ok(());
            };
            let text = |c: &str| col(c).and_then(|i| rec.get(i)).unwrap_or("");
            let (caller, callee, name) = (text("caller"), text("callee"), text("call"));
            if caller.is_empty() || callee.is_empty() {
                return Ok(());
            }
            // The key of an edge: its caller, callee and name, joined by
            // a character no name holds.
            let key = format!("{caller}\u{0}{callee}\u{0}{name}");
            let e = calls.get_or_add(&key, MAX_CALLS, "call edges")?;
            if e == call_keys.len() {
                call_keys.push(Call {
                    caller: caller.to_string(),
                    callee: callee.to_string(),
                    name: name.to_string(),
                });
            }
            let row = &mut call_means[v];
            if row.len() <= e {
                row.resize(e + 1, Default::default());
            }
            let (means, count) = &mut row[e];
            for (m, c) in means.iter_mut().zip(CALL_COLUMNS) {
                m.add(col(c).and_then(|i| rec.get(i)).and_then(parse_num));
            }
            *count += 1;
            Ok(())
        })?;

        // The series of `services_timeseries.csv`, one per variant and
        // service, share the chart's points (`Bins::shared_by`): a sweep
        // of many variants of several services is read in longer groups
        // of buckets than its `timeseries.csv`. A checked table names only
        // the services of `services.csv`, so that they stay within them.
        let planned = services.names.len();
        let bins = bins.shared_by(n.saturating_mul(planned.max(1)));
        // `[service][variant]`, grown as services appear.
        let mut load: Vec<Vec<Series>> = Vec::new();
        let mut capacity: Vec<Vec<Series>> = Vec::new();
        let mut limit: Vec<Vec<Series>> = Vec::new();
        rows(
            TableKind::ServicesTimeseries,
            sources.timeseries,
            checked,
            |rec, col| {
                let Some(v) = variant_of(rec, col("variant")) else {
                    return Ok(());
                };
                let text = |c: &str| col(c).and_then(|i| rec.get(i)).unwrap_or("");
                let name = text("service");
                let Some(t) = parse_num(text("t_s")) else {
                    return Ok(());
                };
                if name.is_empty() {
                    return Ok(());
                }
                let s = services.get_or_add(name, MAX_SERVICES, "services")?;
                if s >= planned && checked.is_some() {
                    return Err(format!(
                        "the service {} is not in services.csv (a run writes the same \
                         services to both: was the folder changed?)",
                        crate::escape::quoted(name)
                    ));
                }
                if load.len() <= s {
                    load.resize_with(s + 1, || vec![Series::new(); n]);
                }
                let rate = parse_num(text("attempts")).map(|a| a / bins.bucket_s);
                push(&mut load[s][v], bins, t, rate);
                let limit_now = parse_num(text("concurrency_limit"));
                if limit_now.is_some() {
                    if limit.len() <= s {
                        limit.resize_with(s + 1, || vec![Series::new(); n]);
                    }
                    push(&mut limit[s][v], bins, t, limit_now);
                }
                if let Some(m) = models.and_then(|m| m.get(v, name)) {
                    if capacity.len() <= s {
                        capacity.resize_with(s + 1, || vec![Series::new(); n]);
                    }
                    let cap = m.at(t, parse_num(text("replicas")), limit_now);
                    push(&mut capacity[s][v], bins, t, cap);
                }
                Ok(())
            },
        )?;
        interrupt::check()?;

        let count = services.names.len();
        load.resize_with(count, || vec![Series::new(); n]);
        let mut thinned = 1;
        let load: Vec<Vec<Vec<Point>>> = load
            .iter()
            .map(|per_variant| {
                per_variant
                    .iter()
                    .map(|series| {
                        let points = reduce(series);
                        thinned = thinned.max(group_for(points.len()));
                        decimate(points)
                    })
                    .collect()
            })
            .collect();
        let thin = |mut series: Vec<Vec<Series>>| -> Vec<Vec<Vec<Point>>> {
            series.resize_with(count, || vec![Series::new(); n]);
            series
                .iter()
                .map(|per_variant| per_variant.iter().map(|s| decimate(reduce(s))).collect())
                .collect()
        };
        let capacity = thin(capacity);
        let limit = thin(limit);
        let group = bins.group.max(1) * thinned;
        let service_figures = figures
            .into_iter()
            .map(|row| {
                (0..count)
                    .map(|s| match row.get(s) {
                        Some((m, k)) => ServiceFigures {
                            attempts: m[0].get(),
                            served: m[1].get(),
                            refused: m[2].get(),
                            shed: m[3].get(),
                            amplification: m[4].get(),
                            peak_load_ratio: m[5].get(),
                            utilization: m[6].get(),
                            capacity_per_s: m[7].get(),
                            replicates: *k,
                        },
                        None => ServiceFigures::default(),
                    })
                    .collect()
            })
            .collect();
        let call_figures = call_means
            .into_iter()
            .map(|row| {
                (0..call_keys.len())
                    .map(|e| match row.get(e) {
                        Some((m, k)) => CallFigures {
                            calls: m[0].get(),
                            attempts: m[1].get(),
                            retries: m[2].get(),
                            failed: m[3].get(),
                            amplification: m[4].get(),
                            orphaned_attempts: m[5].get(),
                            replicates: *k,
                        },
                        None => CallFigures::default(),
                    })
                    .collect()
            })
            .collect();
        Ok(GraphData {
            services: services.names,
            calls: call_keys,
            service_figures,
            call_figures,
            load,
            capacity,
            limit,
            group,
        })
    }

    /// The variant where the storm went furthest: the highest peak load ÷
    /// capacity at any service (mean over replicates); without any
    /// capacity, the highest amplification at any service. Ties go to the
    /// earlier variant; `None` when no variant has figures.
    pub fn worst_variant(&self) -> Option<usize> {
        let score = |v: &Vec<ServiceFigures>, f: fn(&ServiceFigures) -> Option<f64>| {
            v.iter()
                .filter_map(f)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        };
        let best = |f: fn(&ServiceFigures) -> Option<f64>| {
            let mut best: Option<(usize, f64)> = None;
            for (i, v) in self.service_figures.iter().enumerate() {
                if let Some(x) = score(v, f)
                    && best.is_none_or(|(_, b)| x > b)
                {
                    best = Some((i, x));
                }
            }
            best.map(|(i, _)| i)
        };
        best(|s| s.peak_load_ratio).or_else(|| best(|s| s.amplification))
    }

    /// Whether the graph is worth its own charts and report section: more
    /// than one service. A chain of one layer is one service, the
    /// dependency, which the other charts and tables already show.
    pub fn is_graph(&self) -> bool {
        self.services.len() > 1
    }

    /// Whether the variant has any service figures (it ran).
    pub fn has_variant(&self, v: usize) -> bool {
        self.service_figures
            .get(v)
            .is_some_and(|s| s.iter().any(|f| f.replicates > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::chart_data::MAX_CHART_POINTS;

    fn read(services: &str, ts: &str, calls: &str) -> Result<GraphData, ReportError> {
        let index: HashMap<String, usize> = [("a".to_string(), 0), ("b".to_string(), 1)]
            .into_iter()
            .collect();
        GraphData::read(
            GraphSources {
                services: services.as_bytes(),
                timeseries: ts.as_bytes(),
                calls: calls.as_bytes(),
            },
            &index,
            2,
            Bins::every_bucket(2.0),
            None,
            None,
        )
    }

    #[test]
    fn means_over_replicates_per_variant_service_and_call() {
        let services = "variant,replicate,service,attempts,peak_load_ratio,capacity_per_s\n\
                        a,0,gw,10,,\na,0,db,40,2.5,100\na,1,gw,20,,\na,1,db,60,3.5,100\n\
                        b,0,gw,10,,\nb,0,db,12,0.5,100\nzz,0,db,1,9,1\n";
        let calls = "variant,replicate,caller,callee,call,attempts,amplification\n\
                     a,0,clients,gw,entry,10,1\na,0,gw,db,gw.db,40,4\na,1,clients,gw,entry,20,1\n\
                     a,1,gw,db,gw.db,60,3\nb,0,clients,gw,entry,10,1\n";
        let ts = "variant,replicate,t_s,service,attempts\n\
                  a,0,0,db,20\na,1,0,db,40\na,0,2,db,,\nb,0,0,gw,4\n";
        let g = read(services, ts, calls).unwrap();
        assert_eq!(g.services, ["gw", "db"]);
        let db = g.service_figures[0][1];
        assert_eq!(db.attempts, Some(50.0));
        assert_eq!(db.peak_load_ratio, Some(3.0));
        assert_eq!(db.replicates, 2);
        assert_eq!(g.service_figures[0][0].peak_load_ratio, None);
        assert_eq!(g.service_figures[1][1].peak_load_ratio, Some(0.5));
        assert_eq!(g.calls.len(), 2);
        assert_eq!(g.calls[1].name, "gw.db");
        assert_eq!(g.call_figures[0][1].amplification, Some(3.5));
        assert_eq!(
            g.call_figures[1][1],
            CallFigures::default(),
            "b never called db"
        );
        // Attempts per second over 2 s buckets, over replicates.
        assert_eq!(
            g.load[1][0],
            [Point {
                t: 0.0,
                mean: 15.0,
                min: 10.0,
                max: 20.0
            }]
        );
        assert_eq!(g.load[0][1][0].mean, 2.0);
        assert!(g.load[0][0].is_empty());
        // The unknown variant `zz` (peak 9) is not read.
        assert_eq!(g.worst_variant(), Some(0));
    }

    #[test]
    fn the_services_of_many_variants_share_the_chart_points() {
        // 200 variants of two services and 1 000 buckets: 400 series,
        // read in groups of 4 buckets (the variants alone: groups of 2).
        let n = 200;
        let index: HashMap<String, usize> = (0..n).map(|v| (format!("v{v}"), v)).collect();
        let mut services = String::from("variant,replicate,service\n");
        let mut ts = String::from("variant,replicate,t_s,service,attempts\n");
        for v in 0..n {
            services.push_str(&format!("v{v},0,gw\nv{v},0,db\n"));
            for k in 0..1_000 {
                ts.push_str(&format!("v{v},0,{k},gw,{}\nv{v},0,{k},db,{v}\n", k % 4));
            }
        }
        let bins = Bins::for_buckets(1.0, 1_000, n);
        assert_eq!(bins.group, 2);
        let g = GraphData::read(
            GraphSources {
                services: services.as_bytes(),
                timeseries: ts.as_bytes(),
                calls: &b"variant,caller,callee\n"[..],
            },
            &index,
            n,
            bins,
            None,
            None,
        )
        .unwrap();
        assert_eq!(g.group, 4);
        let held: usize = g.load.iter().flatten().map(Vec::len).sum();
        assert_eq!(held, 2 * n * 250);
        assert!(held <= MAX_CHART_POINTS + 2 * n);
        let p = g.load[0][9][10];
        assert_eq!((p.t, p.mean, p.min, p.max), (40.0, 1.5, 0.0, 3.0));
    }

    #[test]
    fn empty_and_odd_tables_give_empty_data() {
        let g = read("", "", "").unwrap();
        assert!(g.services.is_empty() && g.calls.is_empty());
        assert_eq!(g.worst_variant(), None);
        let g = read("variant,service\na,\n", "t_s\nNaN\n", "caller\nx\n").unwrap();
        assert!(g.services.is_empty());
        assert!(!g.has_variant(0));
    }

    #[test]
    fn too_many_services_is_refused() {
        let mut services = String::from("variant,replicate,service\n");
        for i in 0..=MAX_SERVICES {
            services.push_str(&format!("a,0,s{i}\n"));
        }
        let e = read(&services, "", "").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("services.csv: names more than 1000")
        );
    }

    #[test]
    fn without_capacity_the_worst_variant_has_the_most_amplification() {
        let services = "variant,service,amplification\na,x,2\nb,x,3\nb,y,1\n";
        let g = read(services, "", "").unwrap();
        assert_eq!(g.worst_variant(), Some(1));
    }
}
