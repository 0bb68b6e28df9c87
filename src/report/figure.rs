//! Drawing primitives for the charts: the shared palette, the embedded
//! font, a line figure (lines with min–max bands, reference lines, shaded
//! spans, numeric or categorical x axis, full size or as a compact panel of
//! small multiples) and rendering any figure to SVG and PNG, at 1200×700
//! unless the figure asks for another size. Deterministic: the same figure
//! gives the same bytes.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::chart_data::{Point, Span};

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 700;
pub const FONT: &str = "sans-serif";

/// Colours by variant order (matplotlib's tab10), the same in every chart.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

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

/// The most entries of a legend: past them, the rest is one entry ("and
/// N more"); more would run off the chart, and take seconds to draw.
pub const MAX_LEGEND: usize = 20;

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
        enc.set_compression(png::Compression::Default);
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
    /// A note drawn in the plot area (for example "no data").
    pub note: Option<String>,
    /// Mark every data point (sweeps: few points, each a run set).
    pub markers: bool,
    /// Label only integer x ticks (the swept values are all integers).
    pub integer_x: bool,
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

impl Figure {
    fn x_bounds(&self) -> (f64, f64) {
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

    fn y_top(&self) -> f64 {
        let data = self.lines.iter().flat_map(|l| {
            l.points
                .iter()
                .map(move |p| if l.band { p.max.max(p.mean) } else { p.mean })
        });
        let top = finite_max(data.chain(self.hlines.iter().map(|h| h.y))).unwrap_or(0.0);
        if top > 0.0 { top * 1.12 } else { 1.0 }
    }
}

impl Drawable for Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (x0, x1) = self.x_bounds();
        let y1 = self.y_top();
        let z = if self.compact { &COMPACT } else { &FULL };
        // Categories sit at integer positions: as many labels as
        // categories makes plotters put one tick on each.
        let x_labels = self
            .categories
            .as_ref()
            .map_or(z.x_labels, |c| c.len().clamp(1, MAX_CATEGORY_LABELS));
        let caption_font = (FONT, z.caption).into_font();
        let title = if self.compact {
            let width = root.dim_in_pixel().0.saturating_sub(2 * z.margin);
            fit(root, &self.title, &caption_font, width)
        } else {
            self.title.clone()
        };
        let mut chart = ChartBuilder::on(root)
            .caption(&title, caption_font)
            .margin(z.margin)
            .x_label_area_size(z.x_area)
            .y_label_area_size(z.y_area)
            .build_cartesian_2d(x0..x1, 0f64..y1)
            .map_err(err)?;
        let cats = self.categories.clone();
        let integer_x = self.integer_x;
        let xfmt = move |x: &f64| match &cats {
            Some(c) => {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                    c[i as usize].clone()
                } else {
                    String::new()
                }
            }
            None if integer_x && (x - x.round()).abs() > 1e-9 => String::new(),
            None => tick(*x),
        };
        chart
            .configure_mesh()
            .x_desc(self.x_desc.as_str())
            .y_desc(self.y_desc.as_str())
            .x_label_formatter(&xfmt)
            .x_labels(x_labels)
            .y_label_formatter(&|y| tick(*y))
            .y_labels(z.y_labels)
            .label_style((FONT, z.label))
            .axis_desc_style((FONT, z.desc))
            .light_line_style(BLACK.mix(0.04))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(err)?;

        for s in &self.spans {
            let (a, b) = (s.start_s.max(x0), s.end_s.min(x1));
            if b <= a {
                continue;
            }
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(a, 0.0), (b, y1)],
                    BLACK.mix(0.09).filled(),
                )))
                .map_err(err)?;
            if self.compact {
                continue;
            }
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("incident: {}", s.label),
                    (a, y1 * 0.985),
                    (FONT, 15).into_font().color(&BLACK.mix(0.7)),
                )))
                .map_err(err)?;
        }
        for l in self.lines.iter().filter(|l| l.band) {
            stop_point()?;
            for run in runs(&l.points, self.max_gap) {
                let mut poly: Vec<(f64, f64)> = run.iter().map(|p| (p.t, p.max)).collect();
                poly.extend(run.iter().rev().map(|p| (p.t, p.min)));
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        poly,
                        l.colour.mix(0.18).filled(),
                    )))
                    .map_err(err)?;
            }
        }
        // Legend entries: every label while they fit, else all but one,
        // and that one says how many more there are.
        let labelled =
            self.hlines.len() + self.lines.iter().filter(|l| !l.label.is_empty()).count();
        let mut room = if labelled > MAX_LEGEND {
            MAX_LEGEND - 1
        } else {
            labelled
        };
        for h in &self.hlines {
            stop_point()?;
            let c = h.colour;
            let drawn = chart
                .draw_series(DashedLineSeries::new(
                    [(x0, h.y), (x1, h.y)],
                    10,
                    6,
                    c.stroke_width(2),
                ))
                .map_err(err)?;
            if room > 0 {
                room -= 1;
                drawn.label(h.label.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(2))
                });
            }
        }
        for l in &self.lines {
            stop_point()?;
            let c = l.colour;
            let style = c.stroke_width(2);
            let pieces = runs(&l.points, self.max_gap);
            for run in &pieces {
                let pts: Vec<(f64, f64)> = run.iter().map(|p| (p.t, p.mean)).collect();
                if pts.len() == 1 {
                    chart
                        .draw_series(std::iter::once(Circle::new(pts[0], 4, c.filled())))
                        .map_err(err)?;
                } else if l.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(pts, 8, 5, style))
                        .map_err(err)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(pts, style))
                        .map_err(err)?;
                }
            }
            if self.markers {
                chart
                    .draw_series(
                        l.points
                            .iter()
                            .map(|p| Circle::new((p.t, p.mean), 5, c.filled())),
                    )
                    .map_err(err)?;
            }
            if l.label.is_empty() || room == 0 {
                continue;
            }
            room -= 1;
            let width = if l.dashed { 1 } else { 3 };
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(err)?
                .label(l.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(width))
                });
        }
        if labelled > MAX_LEGEND {
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(err)?
                .label(format!("and {} more", labelled - (MAX_LEGEND - 1)))
                .legend(|(x, y)| EmptyElement::at((x, y)));
        }
        if let Some(note) = &self.note {
            chart
                .draw_series(std::iter::once(Text::new(
                    note.clone(),
                    (x0 + (x1 - x0) * 0.02, y1 * 0.5),
                    (FONT, if self.compact { z.desc } else { 20 }).into_font(),
                )))
                .map_err(err)?;
        }
        if !self.compact && (!self.lines.is_empty() || !self.hlines.is_empty()) {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.88))
                .border_style(BLACK.mix(0.3))
                .label_font((FONT, 16))
                .draw()
                .map_err(err)?;
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
