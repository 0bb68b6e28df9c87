//! Drawing primitives for the charts: the shared palette, the embedded
//! font, a line figure (lines with min–max bands, reference lines, shaded
//! spans, numeric or categorical x axis, full size or as a compact panel of
//! small multiples) and rendering any figure to SVG and PNG, at 1200×700
//! unless the figure asks for another size. Deterministic: the same figure
//! gives the same bytes.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{self, XAxis};
use super::chart_data::{Point, Span};
use super::legend::{Entry, Legend};
use super::styles::{Marker, draw_marker};

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 700;
pub const FONT: &str = "sans-serif";

pub use super::styles::{PALETTE, colour};

/// The palette as CSS hex colours, for the HTML report.
pub fn css_colour(i: usize) -> String {
    let RGBColor(r, g, b) = colour(i);
    format!("#{r:02x}{g:02x}{b:02x}")
}

static FONT_ONCE: Once = Once::new();

/// Registers the committed DejaVu Sans (assets/fonts) as `sans-serif`.
pub fn register_font() {
    FONT_ONCE.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
        plotters::style::register_font(FONT, FontStyle::Normal, bytes)
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans font is valid"));
    });
}

pub fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The error a drawing returns when a stop was asked for
/// (`crate::interrupt`): `render`'s caller turns it into an interruption.
pub const STOPPED: &str = "interrupted";

/// `Err(STOPPED)` once a stop was asked for: drawing loops poll it for
/// every series, so a chart of thousands of lines stops within moments.
pub fn stop_point() -> Result<(), String> {
    if crate::interrupt::requested() {
        Err(STOPPED.to_string())
    } else {
        Ok(())
    }
}

/// The most labels of a category axis (variants, swept values): more
/// would overlap into a smear, and take seconds to draw.
pub const MAX_CATEGORY_LABELS: usize = 40;

/// Something that draws itself on any plotters backend.
pub trait Drawable {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;

    /// Its size in pixels (width, height).
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }
}

/// Renders a figure to SVG text and PNG bytes.
pub fn render<D: Drawable>(fig: &D) -> Result<(String, Vec<u8>), String> {
    register_font();
    let (width, height) = fig.size();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        fig.draw(&root)?;
        root.present().map_err(err)?;
    }
    let mut rgb = vec![255u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        fig.draw(&root)?;
        root.present().map_err(err)?;
    }
    let mut png_bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png_bytes, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // Chosen by measurement on the bundled charts (flat colours, thin
        // lines): the Paeth filter with the fast deflater encodes the five
        // charts of a run about 10× faster than the default settings (the
        // Sub filter, zlib level 6), where encoding was more than half of
        // a short run's whole-process time, for files about 2.7× larger
        // (about 120 kB a chart). README "Speed".
        enc.set_compression(png::Compression::Fast);
        enc.set_filter(png::FilterType::Paeth);
        enc.set_adaptive_filter(png::AdaptiveFilterType::NonAdaptive);
        let mut w = enc.write_header().map_err(err)?;
        w.write_image_data(&rgb).map_err(err)?;
    }
    Ok((svg, png_bytes))
}

/// The size in pixels of `text` drawn `px` pixels high in the embedded
/// font, as the PNG draws it (the SVG names 1/1.24 of that size: plotters'
/// scale for SVG text).
pub fn text_size(text: &str, px: f64) -> (u32, u32) {
    register_font();
    FontDesc::new(FontFamily::Name(FONT), px, FontStyle::Normal)
        .box_size(text)
        .unwrap_or((0, 0))
}

/// `text` cut to fit `width` pixels in `font` (its end replaced by "…"),
/// as measured with the embedded font.
pub fn fit<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    font: &FontDesc<'_>,
    width: u32,
) -> String {
    let style = TextStyle::from(font.clone());
    let fits = |t: &str| {
        root.estimate_text_size(t, &style)
            .is_ok_and(|(w, _)| w <= width)
    };
    if fits(text) {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    // The longest prefix that fits with the ellipsis (binary search: the
    // width grows with the prefix).
    let (mut lo, mut hi) = (0, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let t: String = chars[..mid].iter().chain(['…'].iter()).collect();
        if fits(&t) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    chars[..lo].iter().chain(['…'].iter()).collect()
}

/// A tick label: at most three decimals, trailing zeros trimmed.
pub fn tick(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// About `target` round tick positions (1, 2, 5 × 10^k apart) in [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let span = hi - lo;
    if !(span > 0.0 && span.is_finite()) {
        return vec![lo];
    }
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = mag
        * match raw / mag {
            n if n <= 1.0 => 1.0,
            n if n <= 2.0 => 2.0,
            n if n <= 5.0 => 5.0,
            _ => 10.0,
        };
    let mut out = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 && out.len() < 1000 {
        out.push(k * step);
        k += 1.0;
    }
    out
}

/// One line of a figure.
#[derive(Clone, Debug)]
pub struct Line {
    pub label: String,
    pub colour: RGBColor,
    pub points: Vec<Point>,
    /// Shade the min–max band around the mean.
    pub band: bool,
    pub dashed: bool,
    /// The shape of its points, when the figure marks them.
    pub marker: Marker,
}

/// A horizontal reference line (capacity).
#[derive(Clone, Debug)]
pub struct HLine {
    pub y: f64,
    pub label: String,
    pub colour: RGBColor,
}

/// A line chart.
#[derive(Clone, Debug, Default)]
pub struct Figure {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub lines: Vec<Line>,
    pub hlines: Vec<HLine>,
    pub spans: Vec<Span>,
    /// Points further apart than this are not joined (a gap in the data).
    pub max_gap: f64,
    /// Categorical x axis: the label of each integer position.
    pub categories: Option<Vec<String>>,
    /// Fixed x range (else from the data).
    pub x_range: Option<(f64, f64)>,
    /// An x axis with ticks of its own (sweeps: swept values with their
    /// units, log positions, categories); its range is the x range.
    pub x_axis: Option<XAxis>,
    /// The y axis spans the data (with a margin) rather than starting at
    /// 0: small differences between variants stay visible.
    pub fit_y: bool,
    /// The values the figure can take (a fraction: 0 to 1; a count, a
    /// ratio or a time: 0 and up). Bands are clipped to it (a 95% CI of
    /// two replicates can be wider than the whole range) and the y axis
    /// stays within it.
    pub y_domain: Option<(f64, f64)>,
    /// What the legend's labels are (the fields whose values they give).
    pub legend_title: Option<String>,
    /// A note drawn in the plot area (for example "no data").
    pub note: Option<String>,
    /// Mark every data point, each line with its own marker (sweeps: few
    /// points, each a run set).
    pub markers: bool,
    /// Mark about `SPARSE_MARKERS` points of each line, each line with its
    /// own marker (time charts: hundreds of points), the marked points
    /// staggered from line to line so markers do not sit on one another.
    pub sparse_markers: bool,
    /// Drawn as one panel of small multiples: smaller text and margins,
    /// the title cut to the panel's width, no incident labels and no
    /// legend (the figure holding the panels has one).
    pub compact: bool,
}

/// Text sizes and margins of a figure, full size or compact.
struct Sizes {
    caption: u32,
    margin: u32,
    x_area: u32,
    y_area: u32,
    label: u32,
    desc: u32,
    x_labels: usize,
    y_labels: usize,
}

const FULL: Sizes = Sizes {
    caption: 26,
    margin: 18,
    x_area: 56,
    y_area: 84,
    label: 16,
    desc: 18,
    x_labels: 12,
    y_labels: 10,
};

const COMPACT: Sizes = Sizes {
    caption: 17,
    margin: 8,
    x_area: 40,
    y_area: 70,
    label: 13,
    desc: 14,
    x_labels: 8,
    y_labels: 6,
};

/// About how many points of a line `sparse_markers` marks.
pub const SPARSE_MARKERS: usize = 8;

/// The indices of the points of the `i`-th of a figure's lines that
/// `sparse_markers` marks, out of its `n` points: every k-th, k such
/// that about `SPARSE_MARKERS` are marked, starting at an offset that
/// moves on with `i` (so that lines do not put their markers at the
/// same times).
pub fn sparse_marks(n: usize, i: usize) -> impl Iterator<Item = usize> {
    let k = n.div_ceil(SPARSE_MARKERS).max(1);
    // A stride coprime to most k spreads neighbouring lines apart.
    let offset = (i * 7 + k / 2) % k;
    (offset..n).step_by(k)
}

/// The most dashes the dashed lines of one chart draw together. Each dash
/// is an element of the SVG: a p99 line that swings across the chart at
/// each of its 2 000 points is over a million pixels long, some 100 000
/// dashes of 8 and 5 pixels (a 99 000-bucket run's `latency.svg` was
/// 16 MB), so lines that long have longer dashes and gaps instead, in the
/// same proportion, each line its share of the budget.
pub const MAX_DASHES: f64 = 4_000.0;

/// The dash and gap lengths, in pixels, of a dashed line through the
/// pixels `px` allowed `budget` dashes: 8 and 5, stretched so that the
/// line draws at most that many.
fn dash_lengths(px: &[(i32, i32)], budget: f64) -> (u32, u32) {
    let (dash, gap) = (8.0, 5.0);
    let length: f64 = px
        .windows(2)
        .map(|w| {
            let dx = f64::from(w[1].0) - f64::from(w[0].0);
            let dy = f64::from(w[1].1) - f64::from(w[0].1);
            dx.hypot(dy)
        })
        .sum();
    let stretch = (length / (dash + gap) / budget.max(1.0)).max(1.0);
    (
        (dash * stretch).round().min(f64::from(u32::MAX)) as u32,
        (gap * stretch).round().min(f64::from(u32::MAX)) as u32,
    )
}

/// Runs of points whose steps stay within `max_gap`.
fn runs(points: &[Point], max_gap: f64) -> Vec<&[Point]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=points.len() {
        if i == points.len() || points[i].t - points[i - 1].t > max_gap {
            if i > start {
                out.push(&points[start..i]);
            }
            start = i;
        }
    }
    out
}

fn finite_max(values: impl Iterator<Item = f64>) -> Option<f64> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
}

/// Labels of a y axis from `lo` to `hi` with about `n` ticks: as many
/// decimals as the tick step needs (0.847, 0.848, … on a fitted axis).
pub fn y_label(lo: f64, hi: f64, n: usize) -> impl Fn(&f64) -> String {
    let step = (hi - lo) / n.max(1) as f64;
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10().floor()).clamp(0.0, 8.0) as usize
    } else {
        3
    };
    move |v: &f64| {
        if decimals <= 3 {
            return tick(*v);
        }
        let s = format!("{v:.decimals$}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" { "0".into() } else { s.to_string() }
    }
}

impl Figure {
    fn x_bounds(&self) -> (f64, f64) {
        if let Some(a) = &self.x_axis {
            return a.range;
        }
        if let Some(r) = self.x_range {
            return r;
        }
        if let Some(c) = &self.categories {
            return (-0.5, c.len().max(1) as f64 - 0.5);
        }
        let pts = || self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.t));
        let lo = pts()
            .filter(|v| v.is_finite())
            .fold(f64::INFINITY, f64::min);
        let hi = finite_max(pts()).unwrap_or(1.0);
        let lo = if lo.is_finite() { lo } else { 0.0 };
        if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, lo + 0.5)
        }
    }

    /// `v` within `y_domain`.
    fn clip(&self, v: f64) -> f64 {
        match self.y_domain {
            Some((lo, hi)) => v.clamp(lo, hi),
            None => v,
        }
    }

    fn y_top(&self) -> f64 {
        let data = self.lines.iter().flat_map(|l| {
            l.points.iter().map(move |p| {
                if l.band {
                    self.clip(p.max).max(p.mean)
                } else {
                    p.mean
                }
            })
        });
        let top = finite_max(data.chain(self.hlines.iter().map(|h| h.y))).unwrap_or(0.0);
        if top > 0.0 { top * 1.12 } else { 1.0 }
    }

    /// The y range: from 0 to above the data, or (`fit_y`) the data's
    /// own range with a margin.
    pub fn y_bounds(&self) -> (f64, f64) {
        if !self.fit_y {
            return (0.0, self.y_top());
        }
        let values = self.lines.iter().flat_map(|l| {
            l.points.iter().flat_map(move |p| {
                let band = if l.band {
                    [self.clip(p.min), self.clip(p.max)]
                } else {
                    [p.mean; 2]
                };
                [p.mean, band[0], band[1]]
            })
        });
        let values = values.chain(self.hlines.iter().map(|h| h.y));
        let (lo, hi) = values
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        if !(lo.is_finite() && hi.is_finite()) {
            return (0.0, 1.0);
        }
        let pad = if hi > lo {
            (hi - lo) * 0.08
        } else {
            (hi.abs() * 0.05).max(1e-3)
        };
        // Not below 0 for figures that cannot be negative, nor outside
        // the figure's domain.
        let y0 = if lo >= 0.0 {
            (lo - pad).max(0.0)
        } else {
            lo - pad
        };
        let (y0, y1) = (y0, hi + pad);
        match self.y_domain {
            Some((a, b)) if lo >= a && hi <= b => (y0.max(a), y1.min(b)),
            _ => (y0, y1),
        }
    }

    /// The legend: reference lines, then labelled lines (past what fits,
    /// the legend says how many more there are).
    fn legend(&self) -> Legend {
        let hlines = self.hlines.iter().map(|h| Entry {
            label: h.label.clone(),
            colour: h.colour,
            dashed: true,
            width: 2,
            marker: None,
        });
        let lines = self
            .lines
            .iter()
            .filter(|l| !l.label.is_empty())
            .map(|l| Entry {
                label: l.label.clone(),
                colour: l.colour,
                dashed: l.dashed,
                width: if l.dashed { 1 } else { 3 },
                marker: (self.markers || self.sparse_markers).then_some(l.marker),
            });
        Legend {
            title: self.legend_title.clone(),
            entries: hlines.chain(lines).collect(),
        }
    }
}

impl Drawable for Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (x0, x1) = self.x_bounds();
        let (y0, y1) = self.y_bounds();
        let z = if self.compact { &COMPACT } else { &FULL };
        // Categories sit at integer positions: as many labels as
        // categories makes plotters put one tick on each.
        let x_labels = self
            .categories
            .as_ref()
            .map_or(z.x_labels, |c| c.len().clamp(1, MAX_CATEGORY_LABELS));
        let caption_font = (FONT, z.caption).into_font();
        // A full figure: the title across the whole width, the legend
        // beside the plot.
        let (body, legend) = if self.compact {
            (root.clone(), None)
        } else {
            let body = root
                .margin(8, 0, 0, 0)
                .titled(&self.title, caption_font.clone())
                .map_err(err)?;
            let legend = self.legend();
            let w = legend.width(&body);
            if w == 0 {
                (body, None)
            } else {
                let (plot, side) = body.split_horizontally(body.dim_in_pixel().0.saturating_sub(w));
                (plot, Some((legend, side)))
            }
        };
        // The x axis's labels, laid out before the plot is built (their
        // band's height depends on them).
        let x_layout = self.x_axis.as_ref().map(|a| {
            let left = f64::from(z.margin + z.y_area);
            let width = f64::from(
                body.dim_in_pixel()
                    .0
                    .saturating_sub(2 * z.margin + z.y_area),
            );
            axis::layout(&body, a, |x| left + (x - x0) / (x1 - x0) * width)
        });
        let x_area = match &x_layout {
            Some(l) => l.height + z.desc + 14,
            None => z.x_area,
        };
        let mut builder = ChartBuilder::on(&body);
        if self.compact {
            let width = root.dim_in_pixel().0.saturating_sub(2 * z.margin);
            builder.caption(fit(root, &self.title, &caption_font, width), caption_font);
        }
        let mut chart = builder
            .margin(z.margin)
            .margin_top(if self.compact { z.margin } else { 4 })
            .x_label_area_size(x_area)
            .y_label_area_size(z.y_area)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        let cats = self.categories.clone();
        let own_axis = self.x_axis.is_some();
        let xfmt = move |x: &f64| match &cats {
            _ if own_axis => String::new(),
            Some(c) => {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                    c[i as usize].clone()
                } else {
                    String::new()
                }
            }
            None => tick(*x),
        };
        let yfmt = y_label(y0, y1, z.y_labels);
        let mut mesh = chart.configure_mesh();
        mesh.y_desc(self.y_desc.as_str())
            .x_label_formatter(&xfmt)
            .x_labels(x_labels)
            .y_label_formatter(&yfmt)
            .y_labels(z.y_labels)
            .label_style((FONT, z.label))
            .axis_desc_style((FONT, z.desc))
            .light_line_style(BLACK.mix(0.04))
            .bold_line_style(BLACK.mix(0.12));
        if own_axis {
            mesh.disable_x_mesh()
                .set_tick_mark_size(LabelAreaPosition::Bottom, 0);
        } else {
            mesh.x_desc(self.x_desc.as_str());
        }
        mesh.draw().map_err(err)?;
        if let (Some(a), Some(layout)) = (&self.x_axis, &x_layout) {
            let base = body.get_base_pixel();
            let at = |x: f64, y: f64| {
                let (px, py) = chart.backend_coord(&(x, y));
                (px - base.0, py - base.1)
            };
            let (top, bottom) = (at(x0, y1).1, at(x0, y0).1);
            axis::draw(&body, a, layout, |x| at(x, y0).0, (top, bottom))?;
            let centre = (at(x0, y0).0 + at(x1, y0).0) / 2;
            let desc = TextStyle::from((FONT, z.desc).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top));
            let x_desc = match &layout.heading {
                Some(h) => format!("{} ({h})", self.x_desc),
                None => self.x_desc.clone(),
            };
            body.draw_text(&x_desc, &desc, (centre, bottom + layout.height as i32 + 6))
                .map_err(err)?;
        }

        for s in &self.spans {
            let (a, b) = (s.start_s.max(x0), s.end_s.min(x1));
            if b <= a {
                continue;
            }
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(a, y0), (b, y1)],
                    BLACK.mix(0.09).filled(),
                )))
                .map_err(err)?;
            if self.compact {
                continue;
            }
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("incident: {}", s.label),
                    (a, y1 - (y1 - y0) * 0.015),
                    (FONT, 15).into_font().color(&BLACK.mix(0.7)),
                )))
                .map_err(err)?;
        }
        for l in self.lines.iter().filter(|l| l.band) {
            stop_point()?;
            for run in runs(&l.points, self.max_gap) {
                let mut poly: Vec<(f64, f64)> =
                    run.iter().map(|p| (p.t, self.clip(p.max))).collect();
                poly.extend(run.iter().rev().map(|p| (p.t, self.clip(p.min))));
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        poly,
                        l.colour.mix(0.18).filled(),
                    )))
                    .map_err(err)?;
            }
        }
        for h in &self.hlines {
            stop_point()?;
            chart
                .draw_series(DashedLineSeries::new(
                    [(x0, h.y), (x1, h.y)],
                    10,
                    6,
                    h.colour.stroke_width(2),
                ))
                .map_err(err)?;
        }
        let dashed_lines = self.lines.iter().filter(|l| l.dashed).count().max(1);
        let dash_budget = MAX_DASHES / dashed_lines as f64;
        for (i, l) in self.lines.iter().enumerate() {
            stop_point()?;
            let c = l.colour;
            let style = c.stroke_width(2);
            let pieces = runs(&l.points, self.max_gap);
            for run in &pieces {
                let pts: Vec<(f64, f64)> = run.iter().map(|p| (p.t, p.mean)).collect();
                if pts.len() == 1 && !self.markers {
                    chart
                        .draw_series(std::iter::once(Circle::new(pts[0], 4, c.filled())))
                        .map_err(err)?;
                } else if l.dashed {
                    let px: Vec<(i32, i32)> = pts.iter().map(|p| chart.backend_coord(p)).collect();
                    let (dash, gap) = dash_lengths(&px, dash_budget);
                    chart
                        .draw_series(DashedLineSeries::new(pts, dash, gap, style))
                        .map_err(err)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(pts, style))
                        .map_err(err)?;
                }
            }
            if self.markers {
                for p in &l.points {
                    draw_marker(chart.plotting_area(), (p.t, p.mean), l.marker, 5, c)?;
                }
            } else if self.sparse_markers {
                for j in sparse_marks(l.points.len(), i) {
                    let p = &l.points[j];
                    if p.mean.is_finite() {
                        draw_marker(chart.plotting_area(), (p.t, p.mean), l.marker, 5, c)?;
                    }
                }
            }
        }
        if let Some(note) = &self.note {
            chart
                .draw_series(std::iter::once(Text::new(
                    note.clone(),
                    (x0 + (x1 - x0) * 0.02, (y0 + y1) * 0.5),
                    (FONT, if self.compact { z.desc } else { 20 }).into_font(),
                )))
                .map_err(err)?;
        }
        if let Some((legend, side)) = legend {
            legend.draw(&side)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(nice_ticks(0.0, 10.0, 5), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(nice_ticks(3.0, 3.0, 5), [3.0]);
        assert_eq!(tick(0.30000000004), "0.3");
        assert_eq!(tick(2560.4), "2560");
        assert_eq!(tick(-0.0001), "0");
    }

    #[test]
    fn long_dashed_lines_draw_at_most_max_dashes() {
        // A short line keeps 8 and 5 pixels.
        assert_eq!(dash_lengths(&[(0, 0), (1300, 0)], 100.0), (8, 5));
        assert_eq!(dash_lengths(&[], 100.0), (8, 5));
        // 2 000 swings of 600 pixels: 1.2 million pixels, 46x the 2 000
        // dashes allowed at 8 + 5.
        let zigzag: Vec<(i32, i32)> = (0..=2000)
            .map(|i| (i, if i % 2 == 0 { 0 } else { 600 }))
            .collect();
        let (dash, gap) = dash_lengths(&zigzag, 2000.0);
        let length: f64 = 2000.0 * (600f64.hypot(1.0));
        let dashes = length / f64::from(dash + gap);
        assert!((1900.0..=2050.0).contains(&dashes), "{dashes}");
        assert!(
            (f64::from(dash) / f64::from(gap) - 1.6).abs() < 0.1,
            "{dash}/{gap}"
        );
    }

    #[test]
    fn gaps_split_lines() {
        let p = |t| Point {
            t,
            mean: 1.0,
            min: 1.0,
            max: 1.0,
        };
        let pts = [p(0.0), p(1.0), p(5.0), p(6.0), p(9.0)];
        let r = runs(&pts, 1.5);
        assert_eq!(r.iter().map(|r| r.len()).collect::<Vec<_>>(), [2, 2, 1]);
        assert!(runs(&[], 1.0).is_empty());
    }

    #[test]
    fn sparse_markers_are_few_and_staggered() {
        let marks = |n, i| sparse_marks(n, i).collect::<Vec<_>>();
        // 240 points: every 30th, 8 of them.
        assert_eq!(marks(240, 0), [15, 45, 75, 105, 135, 165, 195, 225]);
        assert_eq!(marks(240, 1), [22, 52, 82, 112, 142, 172, 202, 232]);
        assert_eq!(marks(240, 0).len(), SPARSE_MARKERS);
        // Few points: each marked; none: none.
        assert_eq!(marks(3, 5), [0, 1, 2]);
        assert!(marks(0, 0).is_empty());
    }

    #[test]
    fn bands_are_clipped_to_the_domain_and_the_axis_fits_the_data() {
        // Two replicates: a success rate's 95% CI half-width of 2.697
        // (Student t, 1 degree of freedom) around 0.26; and 0.71 ± 0.1.
        let p = |t, mean, ci| Point {
            t,
            mean,
            min: mean - ci,
            max: mean + ci,
        };
        let line = |points| Line {
            label: String::new(),
            colour: BLACK,
            points,
            band: true,
            dashed: false,
            marker: Default::default(),
        };
        let mut f = Figure {
            lines: vec![
                line(vec![p(0.0, 0.26, 2.697), p(1.0, 0.3, 0.0)]),
                line(vec![p(0.0, 0.71, 0.1), p(1.0, 0.71, 0.1)]),
            ],
            fit_y: true,
            ..Figure::default()
        };
        let (y0, y1) = f.y_bounds();
        assert!(y0 < -2.0 && y1 > 2.9, "unclipped: {y0} {y1}");
        f.y_domain = Some((0.0, 1.0));
        assert_eq!(f.y_bounds(), (0.0, 1.0));
        // Narrow bands: the axis fits the data, within the domain.
        f.lines.remove(0);
        let (y0, y1) = f.y_bounds();
        assert!((0.59..0.61).contains(&y0) && (0.81..0.83).contains(&y1));
        // From 0 (not fitted): the top is the clipped band's.
        f.fit_y = false;
        f.lines[0].points[0].max = 40.0;
        assert!((f.y_top() - 1.12).abs() < 1e-9);
    }

    #[test]
    fn an_empty_figure_renders() {
        let (svg, png) = render(&Figure {
            title: "empty".into(),
            note: Some("no data".into()),
            ..Figure::default()
        })
        .unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(png.starts_with(b"\x89PNG"));
    }
}
