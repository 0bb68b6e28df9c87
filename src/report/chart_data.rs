//! What the charts and the HTML report draw, read back from the written
//! tables (`timeseries.csv`, `summary.csv`, `summary_by_variant.csv`) and
//! `scenario.resolved.yaml`. `stormsim run` and `stormsim plot` both go
//! through here, so both draw from the same bytes and produce the same
//! files. Odd data (empty cells, NaN, a single bucket, a missing or
//! unreadable scenario file) gives gaps or defaults, never a panic.

use std::collections::BTreeMap;
use std::path::Path;

use crate::scenario;

/// A CSV table as text cells, with its header.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub header: Vec<String>,
    /// One `StringRecord` a row: its fields in one buffer, not one string
    /// each (a long run's table has millions of cells).
    pub rows: Vec<Row>,
}

/// A row of a [`Table`].
pub type Row = csv::StringRecord;

impl Table {
    /// Parses CSV bytes; a malformed table is an error.
    pub fn parse(bytes: &[u8]) -> Result<Table, String> {
        let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
        let header = r
            .headers()
            .map_err(|e| e.to_string())?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| e.to_string())?;
            rows.push(rec);
        }
        Ok(Table { header, rows })
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The text of a cell ("" when the column or cell is absent).
    pub fn text<'a>(&'a self, row: &'a Row, name: &str) -> &'a str {
        self.col(name).and_then(|i| row.get(i)).unwrap_or("")
    }

    /// A cell as a finite number (None when empty, absent or not finite).
    pub fn num(&self, row: &Row, name: &str) -> Option<f64> {
        parse_num(self.text(row, name))
    }
}

pub fn parse_num(s: &str) -> Option<f64> {
    match s.trim() {
        "true" => Some(1.0),
        "false" => Some(0.0),
        t => t.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

/// One point of a series over replicates: mean, min and max.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub t: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

/// The time series of one variant, each over its replicates.
#[derive(Clone, Debug, Default)]
pub struct VariantSeries {
    pub name: String,
    /// Dependency attempts per second.
    pub load: Vec<Point>,
    /// Offered logical requests per second.
    pub offered: Vec<Point>,
    /// Dependency attempts ÷ offered logical requests (buckets with offers).
    pub amplification: Vec<Point>,
    /// Succeeded logical requests per second.
    pub goodput: Vec<Point>,
    pub latency_p50_ms: Vec<Point>,
    pub latency_p99_ms: Vec<Point>,
    /// Nominal capacity per second (from summary.csv), if known.
    pub capacity_per_s: Option<f64>,
    /// Buckets per group of a thinned series (`decimate`); 1 (or 0) when
    /// every bucket is drawn.
    pub group: usize,
}

/// A time span shaded on the time charts.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub start_s: f64,
    pub end_s: f64,
    pub label: String,
}

/// Everything the charts and report read.
#[derive(Clone, Debug, Default)]
pub struct ChartData {
    pub name: String,
    pub description: String,
    pub bucket_s: f64,
    pub incidents: Vec<Span>,
    /// Variant names in output order (their palette index).
    pub variants: Vec<String>,
    pub series: Vec<VariantSeries>,
    pub summary: Table,
    pub by_variant: Table,
}

/// Mean, min and max of the values per time key, in time order.
fn reduce(map: &BTreeMap<i64, (f64, Vec<f64>)>) -> Vec<Point> {
    map.values()
        .filter(|(_, v)| !v.is_empty())
        .map(|(t, v)| Point {
            t: *t,
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
        .collect()
}

/// The most points a time chart draws of one series: more than its
/// pixels across. A longer series (a long run in fine buckets) is thinned
/// by `decimate`; the CSV tables keep every bucket.
pub const MAX_POINTS: usize = 2_000;

/// Thins a series to at most [`MAX_POINTS`]: the points are cut into
/// groups of equal length, and each group becomes one point at its first
/// time, whose mean is the mean of the group's means and whose band (min
/// and max over replicates) spans the group's extremes. The line is
/// smoothed; peaks and troughs survive in the band. A series short enough
/// is unchanged.
pub fn decimate(points: Vec<Point>) -> Vec<Point> {
    let group = group_for(points.len());
    if group == 1 {
        return points;
    }
    points
        .chunks(group)
        .map(|chunk| Point {
            t: chunk[0].t,
            mean: chunk.iter().map(|p| p.mean).sum::<f64>() / chunk.len() as f64,
            min: chunk.iter().map(|p| p.min).fold(f64::INFINITY, f64::min),
            max: chunk
                .iter()
                .map(|p| p.max)
                .fold(f64::NEG_INFINITY, f64::max),
        })
        .collect()
}

/// The points per group with which `decimate` thins `len` points.
pub fn group_for(len: usize) -> usize {
    if len <= MAX_POINTS {
        1
    } else {
        len.div_ceil(MAX_POINTS)
    }
}

/// The bucket width: the smallest positive step between bucket starts.
fn infer_bucket(ts: &Table) -> f64 {
    let mut times: Vec<f64> = ts.rows.iter().filter_map(|r| ts.num(r, "t_s")).collect();
    times.sort_by(f64::total_cmp);
    times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 1e-9)
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.min(d))))
        .unwrap_or(1.0)
}

impl ChartData {
    /// Reads a finished run's folder.
    pub fn from_dir(dir: &Path) -> Result<ChartData, String> {
        let read = |f: &str| {
            std::fs::read(dir.join(f)).map_err(|e| format!("{}: {e}", dir.join(f).display()))
        };
        let yaml = std::fs::read_to_string(dir.join("scenario.resolved.yaml")).ok();
        ChartData::from_bytes(
            &read("timeseries.csv")?,
            &read("summary.csv")?,
            &read("summary_by_variant.csv")?,
            yaml.as_deref(),
        )
    }

    /// Builds the chart data from the tables' bytes and the resolved
    /// scenario's text (optional: without it, no incidents or description).
    pub fn from_bytes(
        timeseries: &[u8],
        summary: &[u8],
        by_variant: &[u8],
        resolved_yaml: Option<&str>,
    ) -> Result<ChartData, String> {
        let ts = Table::parse(timeseries).map_err(|e| format!("timeseries.csv: {e}"))?;
        let summary = Table::parse(summary).map_err(|e| format!("summary.csv: {e}"))?;
        let by_variant =
            Table::parse(by_variant).map_err(|e| format!("summary_by_variant.csv: {e}"))?;
        let mut data = ChartData {
            bucket_s: infer_bucket(&ts),
            ..ChartData::default()
        };
        if let Some(s) =
            resolved_yaml.and_then(|y| scenario::load_str(y, "scenario.resolved.yaml").ok())
        {
            data.name = s.name.clone();
            data.description = s.description.trim().to_string();
            let b = s.bucket().secs_f64();
            if b > 0.0 {
                data.bucket_s = b;
            }
            data.incidents = s
                .dependency
                .incidents
                .iter()
                .map(|i| Span {
                    start_s: i.start.secs_f64(),
                    end_s: i.end.secs_f64(),
                    label: format!("{:?}", i.kind).to_lowercase(),
                })
                .collect();
        }
        // Variant order: as the tables list them.
        let mut variants: Vec<String> = Vec::new();
        for t in [&by_variant, &summary, &ts] {
            for r in &t.rows {
                let v = t.text(r, "variant");
                if !v.is_empty() && !variants.iter().any(|x| x == v) {
                    variants.push(v.to_string());
                }
            }
        }
        data.series = variants
            .iter()
            .map(|v| variant_series(&ts, &summary, v, data.bucket_s))
            .collect();
        data.variants = variants;
        data.summary = summary;
        data.by_variant = by_variant;
        Ok(data)
    }

    /// The palette index of a variant.
    pub fn variant_index(&self, name: &str) -> usize {
        self.variants.iter().position(|v| v == name).unwrap_or(0)
    }

    /// The last time covered by the time series (end of the last bucket).
    pub fn t_end(&self) -> f64 {
        self.series
            .iter()
            .flat_map(|s| s.load.iter().chain(&s.offered))
            .map(|p| p.t + self.bucket_s)
            .fold(0.0, f64::max)
    }
}

type Acc = BTreeMap<i64, (f64, Vec<f64>)>;

fn push(acc: &mut Acc, t: f64, v: Option<f64>) {
    let e = acc
        .entry((t * 1e6).round() as i64)
        .or_insert_with(|| (t, Vec::new()));
    if let Some(v) = v.filter(|v| v.is_finite()) {
        e.1.push(v);
    }
}

fn variant_series(ts: &Table, summary: &Table, name: &str, bucket_s: f64) -> VariantSeries {
    let mut acc: [Acc; 6] = Default::default();
    for r in ts.rows.iter().filter(|r| ts.text(r, "variant") == name) {
        let Some(t) = ts.num(r, "t_s") else { continue };
        let offered = ts.num(r, "offered");
        let dep = ts.num(r, "dependency_attempts");
        push(&mut acc[0], t, dep.map(|d| d / bucket_s));
        push(&mut acc[1], t, offered.map(|o| o / bucket_s));
        let amp = match (dep, offered) {
            (Some(d), Some(o)) if o > 0.0 => Some(d / o),
            _ => None,
        };
        push(&mut acc[2], t, amp);
        push(&mut acc[3], t, ts.num(r, "goodput"));
        push(&mut acc[4], t, ts.num(r, "latency_p50_ms"));
        push(&mut acc[5], t, ts.num(r, "latency_p99_ms"));
    }
    let capacity_per_s = summary
        .rows
        .iter()
        .filter(|r| summary.text(r, "variant") == name)
        .find_map(|r| summary.num(r, "capacity_per_s"))
        .filter(|c| *c > 0.0);
    let [load, offered, amplification, goodput, p50, p99] = acc.map(|a| reduce(&a));
    let group = [&load, &offered, &amplification, &goodput, &p50, &p99]
        .iter()
        .map(|p| group_for(p.len()))
        .max()
        .unwrap_or(1);
    VariantSeries {
        name: name.to_string(),
        load: decimate(load),
        offered: decimate(offered),
        amplification: decimate(amplification),
        goodput: decimate(goodput),
        latency_p50_ms: decimate(p50),
        latency_p99_ms: decimate(p99),
        capacity_per_s,
        group,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "variant,replicate,t_s,offered,dependency_attempts,goodput,latency_p50_ms,latency_p99_ms\n\
        a,0,0,10,20,9,5,,\n\
        a,1,0,10,40,8,,\n\
        a,0,1,0,0,0,,\n\
        b,0,0,oops,NaN,1,2,3\n";
    const SUMMARY: &str = "variant,replicate,capacity_per_s\na,0,100\na,1,100\nb,0,\n";

    #[test]
    fn reduces_over_replicates_and_tolerates_odd_cells() {
        let d =
            ChartData::from_bytes(TS.as_bytes(), SUMMARY.as_bytes(), b"variant\n", None).unwrap();
        assert_eq!(d.variants, ["a", "b"]);
        assert_eq!(d.bucket_s, 1.0);
        let a = &d.series[0];
        assert_eq!(
            a.load[0],
            Point {
                t: 0.0,
                mean: 30.0,
                min: 20.0,
                max: 40.0
            }
        );
        assert_eq!(a.amplification.len(), 1, "no amplification without offers");
        assert_eq!(a.latency_p50_ms.len(), 1);
        assert!(a.latency_p99_ms.is_empty());
        assert_eq!(a.capacity_per_s, Some(100.0));
        let b = &d.series[1];
        assert!(b.load.is_empty() && b.amplification.is_empty());
        assert_eq!(b.capacity_per_s, None);
    }

    #[test]
    fn long_series_are_thinned_keeping_peaks_in_the_band() {
        let series: Vec<Point> = (0..100_000)
            .map(|i| {
                let t = i as f64 * 0.01;
                let mean = match i {
                    31_337 => 500.0,  // a one-bucket spike
                    77_777 => -300.0, // and a one-bucket dip
                    _ => (t * 0.7).sin() * 10.0,
                };
                Point {
                    t,
                    mean,
                    min: mean - 1.0,
                    max: mean + 1.0,
                }
            })
            .collect();
        let thin = decimate(series.clone());
        assert_eq!(thin.len(), MAX_POINTS);
        assert!(thin.windows(2).all(|w| w[0].t < w[1].t), "time order");
        // Groups of 50 points: each point is its group's first time, the
        // mean of its means, and the extremes of its band.
        let g = &series[50 * 626..50 * 627];
        let p = thin[626];
        assert_eq!(p.t, g[0].t);
        assert_eq!(p.mean, g.iter().map(|q| q.mean).sum::<f64>() / 50.0);
        let g_min = g.iter().map(|q| q.min).fold(f64::INFINITY, f64::min);
        assert_eq!((p.min, p.max), (g_min, 501.0));
        let band_max = thin.iter().map(|p| p.max).fold(f64::MIN, f64::max);
        let band_min = thin.iter().map(|p| p.min).fold(f64::MAX, f64::min);
        assert_eq!((band_min, band_max), (-301.0, 501.0));
        // A short series is left alone.
        let short = series[..MAX_POINTS].to_vec();
        assert_eq!(decimate(short.clone()), short);
    }

    #[test]
    fn empty_tables_give_empty_data() {
        let d = ChartData::from_bytes(b"", b"", b"", Some("not: [yaml")).unwrap();
        assert!(d.variants.is_empty());
        assert_eq!(d.t_end(), 0.0);
    }
}
