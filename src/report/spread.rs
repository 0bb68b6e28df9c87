//! The time charts of a run with more variants than styles: the spread
//! across the variants instead of a line each.
//!
//! A line per variant tells variants apart only while each has a style
//! of its own: the palette gives 45 (`styles`), and past that colours and
//! markers repeat and no legend can say which line is which. Every line
//! also costs its points in the SVG, the PNG and `report.html`: a sweep of
//! 2000 points drew a 32 MB `goodput.svg`, and one of 100 000 points
//! needed 10 GB to draw its charts. So with more than [`MAX_LINES`]
//! variants the time charts (`load`, `amplification`, `goodput`,
//! `latency`) draw, per bucket, the median over the variants of their
//! means over replicates as one line, and the least and greatest value
//! any variant's replicates reached as its band: the size of the chart
//! no longer grows with the variants, and each variant's own series stays
//! in `timeseries.csv` (and its summary figures in the sweep charts).

use std::collections::BTreeMap;

use super::chart_data::{ChartData, Point, VariantSeries};
use super::figure::Figure;

/// The most variants the time charts draw a line each for.
pub const MAX_LINES: usize = 45;

/// The data of the time charts: `d` itself when it has at most
/// [`MAX_LINES`] variants, else one series, the spread across them
/// ([`spread`]), named for what it is.
pub fn time_view(d: &ChartData) -> Option<ChartData> {
    if d.series.len() <= MAX_LINES {
        return None;
    }
    let n = d.series.len();
    let field = |f: fn(&VariantSeries) -> &Vec<Point>| spread(d.series.iter().map(f));
    let first = d.series.first().map(|s| s.capacity_per_s);
    let capacity = first
        .filter(|c| d.series.iter().all(|s| s.capacity_per_s == *c))
        .flatten();
    let name = format!("median of {n} variants");
    let series = VariantSeries {
        name: name.clone(),
        load: field(|s| &s.load),
        offered: field(|s| &s.offered),
        amplification: field(|s| &s.amplification),
        goodput: field(|s| &s.goodput),
        latency_p50_ms: field(|s| &s.latency_p50_ms),
        latency_p99_ms: field(|s| &s.latency_p99_ms),
        capacity_per_s: capacity,
        group: d.series.iter().map(|s| s.group).max().unwrap_or(1),
    };
    Some(ChartData {
        name: d.name.clone(),
        description: d.description.clone(),
        bucket_s: d.bucket_s,
        incidents: d.incidents.clone(),
        variants: vec![name.clone()],
        series: vec![series],
        index: [(name, 0)].into_iter().collect(),
        ..ChartData::default()
    })
}

/// A time chart drawn from a [`time_view`] of `n` variants says so in
/// its title, and its dashed offered load is the median one too.
pub fn retitle(f: &mut Figure, n: usize) {
    f.title = match f.title.split_once(" (mean over replicates, min–max band)") {
        Some((what, _)) => format!("{what} (median of {n} variants, band: least–greatest)"),
        None => format!("{} — median of {n} variants", f.title),
    };
    for l in &mut f.lines {
        if l.label == "offered load" {
            l.label = "offered load (median)".into();
        }
    }
}

/// Per time `t` any of `all` has a point at: the median of their means
/// (the mean of the two middle ones for an even count), and the least
/// `min` and greatest `max` among them. Times in order; a time only some
/// series have (a sweep of the duration) takes those that have it.
pub fn spread<'a>(all: impl Iterator<Item = &'a Vec<Point>>) -> Vec<Point> {
    // Times are finite and at least 0, so their bits order as they do.
    let mut at: BTreeMap<u64, (Vec<f64>, f64, f64)> = BTreeMap::new();
    for points in all {
        for p in points {
            let e =
                at.entry(p.t.to_bits())
                    .or_insert((Vec::new(), f64::INFINITY, f64::NEG_INFINITY));
            e.0.push(p.mean);
            e.1 = e.1.min(p.min);
            e.2 = e.2.max(p.max);
        }
    }
    at.into_iter()
        .map(|(t, (mut means, min, max))| {
            means.sort_by(f64::total_cmp);
            let k = means.len();
            let median = if k % 2 == 1 {
                means[k / 2]
            } else {
                (means[k / 2 - 1] + means[k / 2]) / 2.0
            };
            Point {
                t: f64::from_bits(t),
                mean: median,
                min,
                max,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: f64, mean: f64, min: f64, max: f64) -> Point {
        Point { t, mean, min, max }
    }

    /// Three series: the median of the means at each time, the least
    /// min and the greatest max; a time one series lacks takes the two
    /// others (the mean of their means).
    #[test]
    fn the_spread_is_the_median_with_the_extremes() {
        let a = vec![p(0.0, 1.0, 0.5, 1.5), p(1.0, 10.0, 9.0, 11.0)];
        let b = vec![p(0.0, 3.0, 2.0, 4.0), p(1.0, 20.0, 19.0, 21.0)];
        let c = vec![p(0.0, 2.0, 1.0, 9.0)];
        let s = spread([&a, &b, &c].into_iter());
        assert_eq!(s, [p(0.0, 2.0, 0.5, 9.0), p(1.0, 15.0, 9.0, 21.0)]);
    }

    /// Up to 45 variants the charts draw each; one more, and they draw one
    /// line named for the spread, with the capacity kept when every
    /// variant has the same.
    #[test]
    fn more_variants_than_styles_draw_their_spread() {
        let data = |n: usize| ChartData {
            variants: (0..n).map(|i| format!("v{i}")).collect(),
            series: (0..n)
                .map(|i| VariantSeries {
                    name: format!("v{i}"),
                    load: vec![p(0.0, i as f64, i as f64, i as f64)],
                    capacity_per_s: Some(100.0),
                    ..VariantSeries::default()
                })
                .collect(),
            ..ChartData::default()
        };
        assert!(time_view(&data(MAX_LINES)).is_none());
        let v = time_view(&data(MAX_LINES + 1)).unwrap();
        assert_eq!(v.series.len(), 1);
        assert_eq!(v.series[0].name, "median of 46 variants");
        assert_eq!(v.series[0].load, [p(0.0, 22.5, 0.0, 45.0)]);
        assert_eq!(v.series[0].capacity_per_s, Some(100.0));
    }
}
