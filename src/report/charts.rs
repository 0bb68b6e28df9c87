//! The charts of a run, drawn from `ChartData` (the tables read back):
//! `load`, `amplification`, `goodput`, `latency`, `recovery`; `limits`
//! when a service has an adaptive concurrency limit (`limits_chart`);
//! `services`
//! and `graph` when the run's graph has more than one service (see
//! `services_chart` and `graph_figure`); the sweep charts when the
//! tables carry `sweep.*` columns, and the stability maps when exactly
//! two fields were swept (`stability`). Each is written as
//! `charts/<name>.svg` and `charts/<name>.png`.

use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use rayon::prelude::*;

use super::ReportError;
use super::axis;
use super::capacity_lines::{self, Capacity};
use super::chart_data::{ChartData, Point, Row, Table, parse_num};
use super::figure::{Drawable, FONT, Figure, Line, STOPPED, colour, err, render, stop_point, tick};
use super::graph_figure::{GraphFigure, storm_graph};
use super::limits_chart::limits_figure;
use super::services_chart::{ServicesFigure, services_figure};
use super::stability::{StabilityMap, stability_maps};
use super::styles::marker;
use super::sweep;
use crate::interrupt;

/// One rendered chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File stem under `charts/`.
    pub name: String,
    pub title: String,
    pub svg: String,
    pub png: Vec<u8>,
}

impl Chart {
    /// The files to write: (relative path, bytes).
    pub fn files(&self) -> [(String, &[u8]); 2] {
        [
            (format!("charts/{}.svg", self.name), self.svg.as_bytes()),
            (format!("charts/{}.png", self.name), &self.png),
        ]
    }
}

pub(super) fn time_figure(d: &ChartData, title: &str, y_desc: &str) -> Figure {
    let t_end = d.t_end();
    // A missing bucket is a gap in the line; the points of a thinned
    // series lie a group of buckets apart.
    let group = d.series.iter().map(|s| s.group).max().unwrap_or(1).max(1);
    let max_gap = d.bucket_s * group as f64 * 1.5;
    Figure {
        title: title.into(),
        x_desc: "time (s)".into(),
        y_desc: y_desc.into(),
        spans: d.incidents.clone(),
        max_gap,
        x_range: (t_end > 0.0).then_some((0.0, t_end)),
        sparse_markers: true,
        ..Figure::default()
    }
}

pub(super) fn line(i: usize, points: &[Point], label: String, band: bool) -> Line {
    Line {
        label,
        colour: colour(i),
        points: points.to_vec(),
        band,
        dashed: false,
        marker: marker(i),
    }
}

fn empty_note(fig: &mut Figure) {
    if fig.lines.iter().all(|l| l.points.is_empty()) {
        fig.note = Some("no data".into());
    }
}

/// Attempts per second at the dependency against its capacity.
pub fn load_figure(d: &ChartData) -> Figure {
    let mut f = time_figure(
        d,
        "Load at the dependency (mean over replicates, min–max band)",
        "dependency attempts per second",
    );
    for (i, s) in d.series.iter().enumerate() {
        f.lines.push(line(i, &s.load, s.name.clone(), true));
    }
    empty_note(&mut f);
    // The dependency's capacity per bucket where it changes, else its
    // nominal capacity (summary.csv).
    let graph = d.graph.as_ref();
    let caps: Vec<(usize, Capacity)> = d
        .series
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let changing = graph.zip(d.capacity.as_ref()).and_then(|(g, m)| {
                let name = m.focus(i)?;
                let at = g.services.iter().position(|n| n == name)?;
                g.capacity
                    .get(at)?
                    .get(i)
                    .filter(|p| !p.is_empty())
                    .cloned()
            });
            match changing {
                Some(p) => Some((i, Capacity::Buckets(p))),
                None => s.capacity_per_s.map(|c| (i, Capacity::Flat(c))),
            }
        })
        .collect();
    let width = d.bucket_s * graph.map_or(1, |g| g.group.max(1)) as f64;
    capacity_lines::draw(&mut f, caps, width, &d.variants, true);
    f
}

pub fn amplification_figure(d: &ChartData) -> Figure {
    let mut f = time_figure(
        d,
        "Amplification: dependency attempts ÷ offered requests",
        "attempts per logical request (×)",
    );
    for (i, s) in d.series.iter().enumerate() {
        f.lines
            .push(line(i, &s.amplification, s.name.clone(), true));
    }
    empty_note(&mut f);
    f
}

pub fn goodput_figure(d: &ChartData) -> Figure {
    let mut f = time_figure(
        d,
        "Goodput: successful logical requests per second",
        "requests per second",
    );
    for (i, s) in d.series.iter().enumerate() {
        f.lines.push(line(i, &s.goodput, s.name.clone(), true));
    }
    let first = d.series.first().map(|s| &s.offered);
    let same = first.is_some_and(|o| d.series.iter().all(|s| &s.offered == o));
    if same {
        if let Some(o) = first.filter(|o| !o.is_empty()) {
            f.lines.push(Line {
                label: "offered load".into(),
                colour: RGBColor(90, 90, 90),
                points: o.clone(),
                band: false,
                dashed: true,
                marker: Default::default(),
            });
        }
    } else {
        for (i, s) in d.series.iter().enumerate() {
            let mut l = line(i, &s.offered, format!("{} offered", s.name), false);
            l.dashed = true;
            f.lines.push(l);
        }
    }
    empty_note(&mut f);
    f
}

pub fn latency_figure(d: &ChartData) -> Figure {
    let mut f = time_figure(
        d,
        "Latency of logical requests: p50 (solid) and p99 (dashed)",
        "latency (ms)",
    );
    for (i, s) in d.series.iter().enumerate() {
        f.lines
            .push(line(i, &s.latency_p50_ms, s.name.clone(), false));
        // One legend entry per variant: the title says which is which.
        let mut p99 = line(i, &s.latency_p99_ms, String::new(), false);
        p99.dashed = true;
        f.lines.push(p99);
    }
    empty_note(&mut f);
    f
}

/// Recovery time per variant: its mean with the 95% CI, each replicate as
/// a dot, and replicates that never recovered marked as metastable.
#[derive(Clone, Debug, Default)]
pub struct RecoveryFigure {
    pub variants: Vec<RecoveryRow>,
}

#[derive(Clone, Debug, Default)]
pub struct RecoveryRow {
    pub name: String,
    pub mean: Option<f64>,
    pub ci95: Option<f64>,
    /// Recovery times of the replicates that recovered.
    pub recovered: Vec<f64>,
    /// Replicates that never recovered.
    pub metastable: usize,
    /// Replicates with a verdict (recovered or not).
    pub judged: usize,
    /// Replicates stopped early by a guard rail: no verdict.
    pub aborted: usize,
    /// Replicates that ended too soon after the trigger to judge: no
    /// verdict.
    pub undecided: usize,
    /// Of the undecided, those in which no request succeeded before the
    /// trigger (a `baseline_success_ratio` of 0): nothing to recover to.
    pub no_baseline: usize,
}

/// The recovery figure, in one pass over each table (a sweep has
/// thousands of variants).
pub fn recovery_figure(d: &ChartData) -> RecoveryFigure {
    let mut variants: Vec<RecoveryRow> = d
        .variants
        .iter()
        .map(|v| RecoveryRow {
            name: v.clone(),
            ..RecoveryRow::default()
        })
        .collect();
    let n = variants.len();
    let index_of = |t: &Table, r: &Row| {
        let name = t.col("variant").and_then(|i| r.get(i)).unwrap_or("");
        d.index.get(name).copied().filter(|&i| i < n)
    };
    let s = &d.summary;
    let (recovered, time) = (s.col("recovered"), s.col("recovery_time_s"));
    let aborted = s.col("aborted");
    let baseline = s.col("baseline_success_ratio");
    let num = |r: &Row, c: Option<usize>| c.and_then(|i| r.get(i)).and_then(parse_num);
    for r in &s.rows {
        let Some(i) = index_of(s, r) else { continue };
        let row = &mut variants[i];
        if aborted
            .and_then(|c| r.get(c))
            .is_some_and(|a| !a.is_empty())
        {
            row.aborted += 1;
            continue;
        }
        let cell = recovered.and_then(|c| r.get(c));
        if cell == Some(crate::metrics::columns::UNDECIDED) {
            row.undecided += 1;
            if num(r, baseline) == Some(0.0) {
                row.no_baseline += 1;
            }
            continue;
        }
        match num(r, recovered) {
            Some(x) if x > 0.5 => {
                row.judged += 1;
                if let Some(t) = num(r, time) {
                    row.recovered.push(t);
                }
            }
            Some(_) => {
                row.judged += 1;
                row.metastable += 1;
            }
            None => {}
        }
    }
    let b = &d.by_variant;
    let (mean, ci95) = (b.col("recovery_time_s_mean"), b.col("recovery_time_s_ci95"));
    let mut seen = vec![false; variants.len()];
    for r in &b.rows {
        let Some(i) = index_of(b, r) else { continue };
        if !std::mem::replace(&mut seen[i], true) {
            variants[i].mean = num(r, mean);
            variants[i].ci95 = num(r, ci95);
        }
    }
    for row in &mut variants {
        if row.mean.is_none() && !row.recovered.is_empty() {
            row.mean = Some(row.recovered.iter().sum::<f64>() / row.recovered.len() as f64);
        }
    }
    RecoveryFigure { variants }
}

/// Space between neighbouring texts of the recovery chart, in pixels.
const TEXT_GAP: f64 = 6.0;

/// The texts of the recovery chart drawn so far (their boxes in pixels):
/// a text is drawn in the first of its wordings that fits its variant's
/// column and touches no text already drawn, or not at all (every number
/// it gives is in the tables), so that no two texts overlap however many
/// variants there are.
struct Notes<'a, DB: DrawingBackend> {
    area: &'a DrawingArea<DB, Shift>,
    style: TextStyle<'a>,
    /// The width of a variant's column.
    slot: f64,
    drawn: Vec<[f64; 4]>,
}

impl<DB: DrawingBackend> Notes<'_, DB> {
    /// Draws the first of `wordings` that fits, centred on `x`, with its
    /// bottom (`bottom`) or its middle at `y`.
    fn put(&mut self, wordings: &[String], (x, y): (i32, i32), bottom: bool) -> Result<(), String> {
        for t in wordings {
            let (w, h) = self.area.estimate_text_size(t, &self.style).map_err(err)?;
            let (w, h) = (f64::from(w), f64::from(h));
            if w + TEXT_GAP > self.slot {
                continue;
            }
            let (cx, cy) = (f64::from(x), f64::from(y));
            let (y0, y1) = if bottom {
                (cy - h, cy)
            } else {
                (cy - h / 2.0, cy + h / 2.0)
            };
            let b = [cx - w / 2.0, y0, cx + w / 2.0, y1];
            let clear = |o: &[f64; 4]| {
                b[0] >= o[2] + TEXT_GAP
                    || o[0] >= b[2] + TEXT_GAP
                    || b[1] >= o[3] + 2.0
                    || o[1] >= b[3] + 2.0
            };
            if !self.drawn.iter().all(clear) {
                continue;
            }
            self.drawn.push(b);
            let v = if bottom { VPos::Bottom } else { VPos::Center };
            let s = self.style.pos(Pos::new(HPos::Center, v));
            return self.area.draw_text(t, &s, (x, y)).map_err(err);
        }
        Ok(())
    }
}

impl Drawable for RecoveryFigure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let top = self
            .variants
            .iter()
            .flat_map(|r| {
                let m = r.mean.map(|m| m + r.ci95.unwrap_or(0.0));
                r.recovered.iter().copied().chain(m)
            })
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let y1 = if top > 0.0 { top * 1.3 } else { 10.0 };
        // The variants' names, laid out as the sweep charts' categories
        // (measured, upright when too wide, thinned when crowded).
        let names: Vec<String> = self.variants.iter().map(|r| r.name.clone()).collect();
        let x_axis = axis::category_axis(&names);
        let (x0, x1) = x_axis.range;
        let (margin, y_area, desc_px) = (18u32, 84u32, 18u32);
        let left = f64::from(margin + y_area);
        let width = f64::from(root.dim_in_pixel().0.saturating_sub(2 * margin + y_area));
        let layout = axis::layout(root, &x_axis, |x| left + (x - x0) / (x1 - x0) * width);
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Recovery time after the last incident (mean, 95% CI, replicates)",
                (FONT, 26),
            )
            .margin(margin)
            .x_label_area_size(layout.height + desc_px + 14)
            .y_label_area_size(y_area)
            .build_cartesian_2d(x0..x1, 0f64..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .y_desc("recovery time (s)")
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|y| tick(*y))
            .y_labels(10)
            .disable_x_mesh()
            .set_tick_mark_size(LabelAreaPosition::Bottom, 0)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, desc_px))
            .light_line_style(BLACK.mix(0.04))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(err)?;
        let base = root.get_base_pixel();
        let coord = chart.as_coord_spec().clone();
        let at = |x: f64, y: f64| {
            let (px, py) = coord.translate(&(x, y));
            (px - base.0, py - base.1)
        };
        let bottom = at(x0, 0.0).1;
        axis::draw(
            root,
            &x_axis,
            &layout,
            |x| at(x, 0.0).0,
            (at(x0, y1).1, bottom),
        )?;
        let desc = TextStyle::from((FONT, desc_px).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        let centre = (at(x0, 0.0).0 + at(x1, 0.0).0) / 2;
        let x_desc = match &layout.heading {
            Some(h) => format!("variant ({h})"),
            None => "variant".to_string(),
        };
        root.draw_text(&x_desc, &desc, (centre, bottom + layout.height as i32 + 6))
            .map_err(err)?;
        let mut notes = Notes {
            area: root,
            style: TextStyle::from((FONT, 15).into_font()).color(&BLACK),
            slot: f64::from((at(1.0, 0.0).0 - at(0.0, 0.0).0).abs()),
            drawn: Vec::new(),
        };
        for (i, r) in self.variants.iter().enumerate() {
            stop_point()?;
            let x = i as f64;
            let c = colour(i);
            let mean = r.mean.filter(|_| !r.recovered.is_empty());
            if let Some(m) = mean {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.3, 0.0), (x + 0.3, m)],
                        c.mix(0.35).filled(),
                    )))
                    .map_err(err)?;
                if let Some(ci) = r.ci95 {
                    let (lo, hi) = ((m - ci).max(0.0), m + ci);
                    for seg in [
                        vec![(x, lo), (x, hi)],
                        vec![(x - 0.08, lo), (x + 0.08, lo)],
                        vec![(x - 0.08, hi), (x + 0.08, hi)],
                    ] {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                seg,
                                BLACK.stroke_width(2),
                            )))
                            .map_err(err)?;
                    }
                }
            }
            let k = r.recovered.len().max(1) as f64;
            for (j, t) in r.recovered.iter().enumerate() {
                let dx = (j as f64 - (k - 1.0) / 2.0) * (0.4 / k);
                chart
                    .draw_series(std::iter::once(Circle::new((x + dx, *t), 5, c.filled())))
                    .map_err(err)?;
            }
            if r.metastable > 0 {
                chart
                    .draw_series(std::iter::once(Cross::new(
                        (x, y1 * 0.9),
                        9,
                        BLACK.stroke_width(3),
                    )))
                    .map_err(err)?;
                let (m, j) = (r.metastable, r.judged);
                notes.put(
                    &[
                        format!("metastable: {m} of {j} never recovered"),
                        format!("{m} of {j} metastable"),
                        format!("{m}/{j}"),
                    ],
                    at(x, y1 * 0.84),
                    false,
                )?;
            }
            if r.judged == 0 {
                let wordings = if r.aborted > 0 {
                    ["aborted (guard rail): no verdict", "aborted: no verdict"]
                } else if r.undecided > 0 && r.no_baseline == r.undecided {
                    [
                        "undecided: nothing succeeded before the incident",
                        "undecided",
                    ]
                } else if r.undecided > 0 {
                    [
                        "undecided: too short, no traffic or still warming up after the incident",
                        "undecided",
                    ]
                } else {
                    ["no incident: not judged", "not judged"]
                };
                notes.put(&wordings.map(String::from), at(x, y1 * 0.5), false)?;
            } else if r.aborted > 0 {
                let a = r.aborted;
                notes.put(
                    &[format!("{a} aborted: no verdict"), format!("{a} aborted")],
                    at(x, y1 * 0.76),
                    false,
                )?;
            }
            // The mean above its bar and CI, when its column has room
            // (the value is in the tables either way).
            if let Some(m) = mean {
                let (px, py) = at(x, m + r.ci95.unwrap_or(0.0));
                notes.put(&[format!("{} s", tick(m))], (px, py - 6), true)?;
            }
        }
        Ok(())
    }
}

/// The charts of the services graph, shown in the report's own section.
pub const GRAPH_CHARTS: [&str; 2] = ["services", "graph"];

/// A figure to render, of any kind.
enum Job {
    Lines(Box<Figure>),
    Recovery(RecoveryFigure),
    Services(ServicesFigure),
    Graph(GraphFigure),
    Stability(StabilityMap),
}

/// Every chart of a run, in report order. Rendered in parallel (each chart
/// on its own, collected in order: the bytes do not depend on threads);
/// a stop asked for (`crate::interrupt`) skips the charts not yet begun.
pub fn all_charts(d: &ChartData) -> Result<Vec<Chart>, ReportError> {
    // More variants than styles: the time charts draw their spread.
    let view = super::spread::time_view(d);
    let td = view.as_ref().unwrap_or(d);
    let time = |mut f: Figure| {
        if view.is_some() {
            super::spread::retitle(&mut f, d.series.len());
        }
        Box::new(f)
    };
    let mut jobs: Vec<(String, String, Job)> = vec![
        (
            "load".into(),
            "Load at the dependency against its capacity".into(),
            Job::Lines(time(load_figure(td))),
        ),
        (
            "amplification".into(),
            "Amplification over time".into(),
            Job::Lines(time(amplification_figure(td))),
        ),
        (
            "goodput".into(),
            "Goodput and offered load".into(),
            Job::Lines(time(goodput_figure(td))),
        ),
        (
            "latency".into(),
            "Latency p50 and p99".into(),
            Job::Lines(time(latency_figure(td))),
        ),
        (
            "recovery".into(),
            "Recovery time per variant".into(),
            Job::Recovery(recovery_figure(d)),
        ),
    ];
    if let Some(f) = limits_figure(d) {
        jobs.push((
            "limits".into(),
            "Adaptive concurrency limits over time".into(),
            Job::Lines(Box::new(f)),
        ));
    }
    if let Some(f) = services_figure(d) {
        jobs.push((
            GRAPH_CHARTS[0].into(),
            "Load against capacity at each service".into(),
            Job::Services(f),
        ));
    }
    if let Some(f) = storm_graph(d) {
        jobs.push((
            GRAPH_CHARTS[1].into(),
            "The services graph: peak load ÷ capacity and amplification per call".into(),
            Job::Graph(f),
        ));
    }
    for (name, title, fig) in sweep::sweep_figures(d) {
        jobs.push((name, title, Job::Lines(Box::new(fig))));
    }
    for (name, title, map) in stability_maps(d) {
        jobs.push((name, title, Job::Stability(map)));
    }
    interrupt::check()?;
    jobs.par_iter()
        .map(|(name, title, job)| {
            interrupt::check()?;
            let (svg, png) = match job {
                Job::Lines(f) => render(f.as_ref()),
                Job::Recovery(f) => render(f),
                Job::Services(f) => render(f),
                Job::Graph(f) => render(f),
                Job::Stability(f) => render(f),
            }
            .map_err(|e| {
                if e == STOPPED && interrupt::requested() {
                    ReportError::Interrupted
                } else {
                    ReportError::Draw(e)
                }
            })?;
            Ok(Chart {
                name: name.clone(),
                title: title.clone(),
                svg,
                png,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_data_draws_without_panicking() {
        // One bucket, a variant with no successes, NaN and empty cells, a
        // metastable variant, no scenario file.
        let ts = "variant,replicate,t_s,offered,dependency_attempts,goodput,latency_p50_ms,latency_p99_ms\n\
                  ok,0,0,10,12,10,5,9\n\
                  dead,0,0,10,40,0,,\n\
                  nan,0,0,NaN,,,,\n";
        let summary = "variant,replicate,recovery_time_s,recovered,capacity_per_s\n\
                       ok,0,3,true,100\ndead,0,,false,100\nnan,0,,,\n";
        let by_variant = "variant,replicates,recovery_time_s_mean,recovery_time_s_ci95,recovered_fraction\n\
                          ok,1,3,,1\ndead,1,,,0\nnan,1,,,\n";
        let d = ChartData::from_bytes(
            ts.as_bytes(),
            summary.as_bytes(),
            by_variant.as_bytes(),
            None,
        )
        .unwrap();
        let charts = all_charts(&d).unwrap();
        assert_eq!(charts.len(), 5);
        let rec = recovery_figure(&d);
        assert_eq!(rec.variants[1].metastable, 1);
        assert_eq!(rec.variants[2].judged, 0);
        // Nothing at all.
        let empty = ChartData::from_bytes(b"", b"", b"", None).unwrap();
        assert_eq!(all_charts(&empty).unwrap().len(), 5);
    }
}
