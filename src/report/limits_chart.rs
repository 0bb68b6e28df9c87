//! The `limits` chart: each adaptive concurrency limit over time (the
//! `concurrency_limit` column of `services_timeseries.csv`: the mean of a
//! service's replicas' limits over each bucket, then over replicates, with
//! the min–max band), one line per variant and limited service, against
//! the workers of one replica (dashed) when every line shares them: a
//! limit above the workers lets everything through to the queue, one
//! below them turns work away. A limit pinned at one value more than
//! [`OFF_SCALE`] times above every other line (a floor set far above what
//! the service can hold) would flatten the others: it keeps its legend
//! entry, with its value, and is not drawn. Drawn only when some service
//! has a limit.

use plotters::style::BLACK;

use super::chart_data::ChartData;
use super::charts::{line, time_figure};
use super::figure::{Figure, HLine, Line, tick};

/// How many times the other lines' peak a pinned limit may be and still
/// be drawn.
pub const OFF_SCALE: f64 = 5.0;

/// The figure, or `None` when no service of the run has an adaptive
/// limit.
pub fn limits_figure(d: &ChartData) -> Option<Figure> {
    let g = d.graph.as_ref()?;
    let limited: Vec<usize> = (0..g.services.len())
        .filter(|&s| {
            g.limit
                .get(s)
                .is_some_and(|v| v.iter().any(|p| !p.is_empty()))
        })
        .collect();
    if limited.is_empty() {
        return None;
    }
    let title = match limited.as_slice() {
        [s] => format!(
            "Adaptive concurrency limit of {} (mean of its replicas, over replicates)",
            g.services[*s]
        ),
        _ => "Adaptive concurrency limits (mean of each service's replicas, over replicates)"
            .to_string(),
    };
    let mut f = time_figure(d, &title, "concurrency limit per replica");
    let mut workers: Vec<f64> = Vec::new();
    for (k, &s) in limited.iter().enumerate() {
        for (v, variant) in d.variants.iter().enumerate() {
            let Some(points) = g.limit[s].get(v).filter(|p| !p.is_empty()) else {
                continue;
            };
            let label = if limited.len() == 1 {
                variant.clone()
            } else {
                format!("{variant} · {}", g.services[s])
            };
            let mut l = line(v, points, label, true);
            // A second limited service of the same variant: dashed.
            l.dashed = k % 2 == 1;
            f.lines.push(l);
            if let Some(w) = d
                .capacity
                .as_ref()
                .and_then(|m| m.limited_workers(v, &g.services[s]))
            {
                workers.push(w);
            }
        }
    }
    off_scale(&mut f);
    if let Some(&w) = workers.first()
        && workers.iter().all(|x| *x == w)
    {
        f.hlines.push(HLine {
            y: w,
            label: format!("workers per replica ({})", tick(w)),
            colour: BLACK,
        });
    }
    Some(f)
}

/// A limit that never moves (pinned at its floor) and sits more than
/// [`OFF_SCALE`] times above every other line's peak becomes a legend
/// entry with its value, not a line.
fn off_scale(f: &mut Figure) {
    let peak = |l: &Line| {
        l.points
            .iter()
            .map(|p| p.max)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let pinned = |l: &Line| {
        let lo = l.points.iter().map(|p| p.min).fold(f64::INFINITY, f64::min);
        !l.points.is_empty() && lo == peak(l)
    };
    let off: Vec<bool> = f
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let others = f
                .lines
                .iter()
                .enumerate()
                .filter(|&(j, o)| j != i && !o.points.is_empty())
                .map(|(_, o)| peak(o))
                .fold(f64::NEG_INFINITY, f64::max);
            pinned(l) && others > 0.0 && peak(l) > others * OFF_SCALE
        })
        .collect();
    for (l, off) in f.lines.iter_mut().zip(off) {
        if off {
            l.label = format!("{} (off scale: {})", l.label, tick(peak(l)));
            l.points.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::graph_data::GraphSources;

    fn data(ts: &str) -> ChartData {
        let summary = "variant,replicate\na,0\na,1\nb,0\n";
        let services = "variant,replicate,service,attempts\na,0,api,1\na,1,api,1\nb,0,api,1\n";
        ChartData::from_bytes(b"", summary.as_bytes(), b"", None)
            .unwrap()
            .with_graph(GraphSources {
                services: services.as_bytes(),
                timeseries: ts.as_bytes(),
                calls: &b""[..],
            })
            .unwrap()
    }

    #[test]
    fn a_line_per_limited_variant_with_its_band_and_none_without_limits() {
        let ts = "variant,replicate,t_s,service,attempts,concurrency_limit\n\
            a,0,0,api,1,10\na,1,0,api,1,30\na,0,1,api,1,5\na,1,1,api,1,5\n\
            b,0,0,api,1,\nb,0,1,api,1,\n";
        let f = limits_figure(&data(ts)).unwrap();
        assert!(f.title.contains("of api"), "{}", f.title);
        assert_eq!(f.lines.len(), 1, "b has no limit");
        let p = &f.lines[0].points;
        assert_eq!((p[0].mean, p[0].min, p[0].max), (20.0, 10.0, 30.0));
        assert_eq!(p[1].mean, 5.0);
        assert!(f.hlines.is_empty(), "no scenario: workers unknown");
        // A limit pinned far above the other: its value in the legend.
        let pinned = "variant,replicate,t_s,service,attempts,concurrency_limit\n\
            a,0,0,api,1,10\na,1,0,api,1,30\nb,0,0,api,1,20000\nb,0,1,api,1,20000\n";
        let f = limits_figure(&data(pinned)).unwrap();
        assert_eq!(f.lines.len(), 2);
        assert!(f.lines[1].points.is_empty());
        assert_eq!(f.lines[1].label, "b (off scale: 20000)");
        assert_eq!(f.lines[0].label, "a");
        // Not far enough above: drawn.
        let near = pinned.replace("20000", "140");
        let f = limits_figure(&data(&near)).unwrap();
        assert_eq!(f.lines[1].points.len(), 2);
        let none = "variant,replicate,t_s,service,attempts,concurrency_limit\na,0,0,api,1,\n";
        assert!(limits_figure(&data(none)).is_none());
    }
}
