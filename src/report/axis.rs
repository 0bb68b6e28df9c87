//! The x axis of a sweep chart: where its ticks go and what they say. A
//! swept field's values are numbers, durations (labelled with their unit:
//! `250 µs`, `10 ms`, `1.5 s`), rates (`2000/s`) or words (categories, one
//! tick each). Durations and rates spanning more than ten times are drawn
//! on a log axis, so that 10 ms, 100 ms and 1 s sit equally apart. Labels
//! never overlap: measured in the embedded font, category labels too wide
//! for their slot are turned upright (and past a length shortened so
//! that they stay distinct: `labels`), and labels that would still touch
//! a neighbour are thinned out.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::figure::{FONT, err, fit, nice_ticks, tick};
use super::labels::shorten;

/// What a swept value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Number,
    /// Seconds.
    Duration,
    /// Per second.
    Rate,
}

/// A value with its unit: durations in µs, ms or s, rates per second.
pub fn format_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Number => tick(v),
        Unit::Rate => format!("{}/s", tick(v)),
        Unit::Duration => {
            let a = v.abs();
            if a == 0.0 {
                "0 s".into()
            } else if a < 1e-3 {
                format!("{} µs", tick(v * 1e6))
            } else if a < 1.0 {
                format!("{} ms", tick(v * 1e3))
            } else {
                format!("{} s", tick(v))
            }
        }
    }
}

/// One tick: its position on the axis (log10 of the value on a log axis)
/// and its label.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub at: f64,
    pub label: String,
}

/// An x axis with ticks of its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct XAxis {
    pub ticks: Vec<Tick>,
    /// Positions are log10 of the values.
    pub log: bool,
    /// The drawn range, in positions.
    pub range: (f64, f64),
}

/// The most swept values that each get a tick of their own; more are
/// labelled at round values.
const MAX_VALUE_TICKS: usize = 15;

/// Whether values of this unit spanning `lo..=hi` go on a log axis.
pub fn wants_log(unit: Unit, lo: f64, hi: f64) -> bool {
    unit != Unit::Number && lo > 0.0 && hi / lo > 10.0
}

/// The axis of numeric swept values (with their unit): a tick at each
/// distinct value while there are few, else at round values; log10
/// positions when `wants_log`. Returns the axis and the position of a
/// value on it.
pub fn numeric_axis(values: &[f64], unit: Unit) -> XAxis {
    let mut distinct: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let (lo, hi) = match (distinct.first(), distinct.last()) {
        (Some(&lo), Some(&hi)) => (lo, hi),
        _ => (0.0, 1.0),
    };
    let log = wants_log(unit, lo, hi);
    let pos = |v: f64| if log { v.log10() } else { v };
    let tick_values: Vec<f64> = if distinct.len() <= MAX_VALUE_TICKS {
        distinct.clone()
    } else if log {
        log_ticks(lo, hi)
    } else {
        nice_ticks(lo, hi, 10)
    };
    let (p0, p1) = (pos(lo), pos(hi));
    let pad = if p1 > p0 { (p1 - p0) * 0.06 } else { 0.5 };
    XAxis {
        ticks: tick_values
            .into_iter()
            .map(|v| Tick {
                at: pos(v),
                label: format_value(v, unit),
            })
            .collect(),
        log,
        range: (p0 - pad, p1 + pad),
    }
}

/// Position of a value on an axis made by `numeric_axis`.
pub fn position(axis: &XAxis, v: f64) -> f64 {
    if axis.log { v.log10() } else { v }
}

/// 1, 2 and 5 times each power of ten in [lo, hi] (lo > 0).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi && out.len() < 100 {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

/// One tick per category, at 0, 1, 2, …
pub fn category_axis(names: &[String]) -> XAxis {
    XAxis {
        ticks: names
            .iter()
            .enumerate()
            .map(|(i, n)| Tick {
                at: i as f64,
                label: n.clone(),
            })
            .collect(),
        log: false,
        range: (-0.5, names.len().max(1) as f64 - 0.5),
    }
}

/// Tick label size in pixels.
pub const LABEL_PX: u32 = 16;
/// The longest upright label, in pixels: longer ones are cut with "…".
const MAX_UPRIGHT: u32 = 170;
/// Space between neighbouring labels, in pixels.
const GAP: f64 = 6.0;

/// How the labels of an axis are laid out.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Turned upright (reading upwards).
    pub upright: bool,
    /// Height of the label band below the axis, in pixels.
    pub height: u32,
    /// The label of each tick as drawn: upright ones too long are
    /// shortened, staying distinct (`labels::shorten`).
    pub labels: Vec<String>,
    /// What the shortened labels are values of, when their field names
    /// were moved out of them (`max_attempts, base`): for the axis's
    /// description.
    pub heading: Option<String>,
}

/// Decides how to lay out the labels, given the pixel position of each
/// tick (approximately: the plot is not built yet).
pub fn layout<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &XAxis,
    px: impl Fn(f64) -> f64,
) -> Layout {
    let style = TextStyle::from((FONT, LABEL_PX).into_font());
    let size = |t: &str| area.estimate_text_size(t, &style).unwrap_or((0, 0));
    let widths: Vec<f64> = axis
        .ticks
        .iter()
        .map(|t| f64::from(size(&t.label).0))
        .collect();
    let positions: Vec<f64> = axis.ticks.iter().map(|t| px(t.at)).collect();
    let slot = positions
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(f64::INFINITY, f64::min);
    let widest = widths.iter().copied().fold(0.0, f64::max);
    let line = f64::from(size("Ag").1);
    // Categories: every label or none make sense, so a label too wide is
    // turned upright rather than dropped. Numbers: thinned (below).
    let categorical = axis.ticks.iter().all(|t| t.at.fract() == 0.0)
        && !axis.log
        && axis.ticks.iter().any(|t| t.label.parse::<f64>().is_err());
    let all: Vec<String> = axis.ticks.iter().map(|t| t.label.clone()).collect();
    if categorical && widest + GAP > slot {
        let short = shorten(&all, &|l: &str| size(l).0 <= MAX_UPRIGHT);
        let (labels, heading) = (short.labels, short.heading);
        let longest = labels
            .iter()
            .map(|l| f64::from(size(l).0))
            .fold(0.0, f64::max)
            .min(f64::from(MAX_UPRIGHT));
        Layout {
            upright: true,
            height: (longest + 10.0).ceil() as u32,
            labels,
            heading,
        }
    } else {
        Layout {
            upright: false,
            height: (line + 10.0).ceil() as u32,
            labels: all,
            heading: None,
        }
    }
}

/// Draws the ticks, labels and grid of `axis` on `area` (pixels), below
/// the plot whose x pixels are given by `px` and whose top and bottom
/// are `top` and `bottom`; labels that would overlap a neighbour already
/// drawn are left out.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &XAxis,
    layout: &Layout,
    px: impl Fn(f64) -> i32,
    (top, bottom): (i32, i32),
) -> Result<(), String> {
    let font = (FONT, LABEL_PX).into_font();
    let style = TextStyle::from(font.clone()).color(&BLACK);
    let mut last_end = f64::NEG_INFINITY;
    for (t, shown) in axis.ticks.iter().zip(&layout.labels) {
        let x = px(t.at);
        area.draw(&PathElement::new(
            vec![(x, top), (x, bottom)],
            BLACK.mix(0.08).stroke_width(1),
        ))
        .map_err(err)?;
        area.draw(&PathElement::new(
            vec![(x, bottom), (x, bottom + 5)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
        if layout.upright {
            let label = fit(area, shown, &font, MAX_UPRIGHT);
            let h = f64::from(area.estimate_text_size(&label, &style).map_or(0, |s| s.1));
            let (a, b) = (f64::from(x) - h / 2.0, f64::from(x) + h / 2.0);
            if a < last_end + 2.0 {
                continue;
            }
            last_end = b;
            let s = style
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Right, VPos::Center));
            area.draw_text(&label, &s, (x, bottom + 8)).map_err(err)?;
        } else {
            let w = f64::from(area.estimate_text_size(shown, &style).map_or(0, |s| s.0));
            let (a, b) = (f64::from(x) - w / 2.0, f64::from(x) + w / 2.0);
            if a < last_end + GAP {
                continue;
            }
            last_end = b;
            let s = style.pos(Pos::new(HPos::Center, VPos::Top));
            area.draw_text(shown, &s, (x, bottom + 8)).map_err(err)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_carry_their_unit() {
        assert_eq!(format_value(0.01, Unit::Duration), "10 ms");
        assert_eq!(format_value(0.00025, Unit::Duration), "250 µs");
        assert_eq!(format_value(1.5, Unit::Duration), "1.5 s");
        assert_eq!(format_value(2000.0, Unit::Rate), "2000/s");
        assert_eq!(format_value(3.0, Unit::Number), "3");
    }

    #[test]
    fn wide_duration_sweeps_are_logarithmic() {
        let a = numeric_axis(&[0.01, 0.03, 0.1, 0.3, 1.0], Unit::Duration);
        assert!(a.log);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["10 ms", "30 ms", "100 ms", "300 ms", "1 s"]);
        assert!((a.ticks[2].at - (-1.0)).abs() < 1e-12);
        // Ten times or less, or plain numbers: linear.
        assert!(!numeric_axis(&[0.1, 1.0], Unit::Duration).log);
        assert!(!numeric_axis(&[1.0, 50.0], Unit::Number).log);
        // Many values: round ticks, 1-2-5 per decade.
        let many: Vec<f64> = (0..40).map(|i| 0.001 * 1.2f64.powi(i)).collect();
        let a = numeric_axis(&many, Unit::Duration);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms", "100 ms", "200 ms", "500 ms",
                "1 s"
            ]
        );
    }
}
