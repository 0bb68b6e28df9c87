//! Stability maps: for a sweep of exactly two fields, a heatmap of a
//! fraction over the grid of their values, such as load × trigger length
//! → the fraction of replicates that recovered ("how big a trigger does
//! this policy survive at this load?"). One cell per sweep point, coloured
//! on the viridis scale (readable in grey and by colour-blind readers:
//! Nuñez, Anderton and Renslow, PLOS ONE 2018) and labelled with its
//! percentage; numeric values are ordered and labelled with their units.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{self, Unit, category_axis, format_value};
use super::chart_data::{ChartData, Table};
use super::figure::{Drawable, FONT, err, fit, stop_point, tick};
use super::sweep::{sweep_columns, sweep_number, sweep_unit};

/// The fractions mapped: (column of `summary_by_variant.csv`, what it is).
pub const MAP_FIGURES: [(&str, &str); 2] = [
    (
        "recovered_fraction",
        "fraction of replicates that recovered",
    ),
    (
        "slo_pass_fraction",
        "fraction of replicates that met the SLO",
    ),
];

/// A heatmap over two swept fields.
#[derive(Clone, Debug, PartialEq)]
pub struct StabilityMap {
    pub title: String,
    /// What the cells hold.
    pub what: String,
    pub x_field: String,
    pub y_field: String,
    /// The labels of the x values (left to right) and y values (bottom
    /// to top).
    pub x_labels: Vec<String>,
    pub y_labels: Vec<String>,
    /// `cells[y][x]`: the fraction, when that sweep point has one.
    pub cells: Vec<Vec<Option<f64>>>,
}

/// The distinct values of a swept column in axis order (numeric values
/// ascending, words as first seen), their labels, and each row's index
/// among them.
fn values(t: &Table, col: &str) -> (Vec<String>, Vec<usize>) {
    let texts: Vec<&str> = t.rows.iter().map(|r| t.text(r, col)).collect();
    let mut distinct: Vec<&str> = Vec::new();
    for s in &texts {
        if !distinct.contains(s) {
            distinct.push(s);
        }
    }
    let unit = sweep_unit(&distinct);
    let nums: Option<Vec<f64>> = distinct.iter().map(|s| sweep_number(s)).collect();
    let labels: Vec<String> = match (unit, nums) {
        (Some(unit), Some(nums)) => {
            let mut order: Vec<usize> = (0..distinct.len()).collect();
            order.sort_by(|&a, &b| nums[a].total_cmp(&nums[b]));
            distinct = order.iter().map(|&i| distinct[i]).collect();
            order
                .iter()
                .map(|&i| match unit {
                    Unit::Number => tick(nums[i]),
                    u => format_value(nums[i], u),
                })
                .collect()
        }
        _ => distinct.iter().map(|s| s.to_string()).collect(),
    };
    let index = texts
        .iter()
        .map(|s| distinct.iter().position(|d| d == s).unwrap_or(0))
        .collect();
    (labels, index)
}

/// (file stem, title, map) for every stability map of a run: one per
/// fraction the table has, when exactly two fields were swept.
pub fn stability_maps(d: &ChartData) -> Vec<(String, String, StabilityMap)> {
    let t = &d.by_variant;
    let cols = sweep_columns(t);
    let [xc, yc] = cols.as_slice() else {
        return Vec::new();
    };
    let (x_labels, xi) = values(t, xc);
    let (y_labels, yi) = values(t, yc);
    let (xf, yf) = (
        xc.trim_start_matches("sweep."),
        yc.trim_start_matches("sweep."),
    );
    let mut out = Vec::new();
    for (fig, what) in MAP_FIGURES {
        if t.col(fig).is_none() || t.rows.iter().all(|r| t.num(r, fig).is_none()) {
            continue;
        }
        let mut cells = vec![vec![None; x_labels.len()]; y_labels.len()];
        for (r, row) in t.rows.iter().enumerate() {
            let cell = &mut cells[yi[r]][xi[r]];
            if cell.is_none() {
                *cell = t.num(row, fig);
            }
        }
        let safe = |s: &str| super::sweep::file_safe(s);
        out.push((
            format!("stability-{fig}-{}-x-{}", safe(xf), safe(yf)),
            format!("Stability map: {what}, {xf} × {yf}"),
            StabilityMap {
                title: format!("{what}: {xf} × {yf}"),
                what: what.to_string(),
                x_field: xf.to_string(),
                y_field: yf.to_string(),
                x_labels: x_labels.clone(),
                y_labels: y_labels.clone(),
                cells,
            },
        ));
    }
    out
}

/// Eight stops of matplotlib's viridis colour map, evenly spaced from 0
/// to 1 (the stops plotters' own `ViridisRGB` interpolates; its
/// `colormaps` feature does not build alone in plotters 0.3.7).
const VIRIDIS: [(u8, u8, u8); 8] = [
    (68, 1, 84),
    (70, 50, 127),
    (54, 92, 141),
    (39, 127, 143),
    (31, 162, 136),
    (74, 194, 110),
    (160, 219, 57),
    (254, 232, 37),
];

/// A cell's colour: viridis from 0 (dark purple) to 1 (yellow), linear
/// between its stops; grey without a value.
pub fn cell_colour(v: Option<f64>) -> RGBColor {
    let Some(v) = v else {
        return RGBColor(220, 220, 220);
    };
    let x = v.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: u8, q: u8| (f64::from(p) + (f64::from(q) - f64::from(p)) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// A fraction as the cells print it.
pub fn percent(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.0}%", v * 100.0))
}

const SCALE_W: u32 = 110;

impl Drawable for StabilityMap {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = root
            .margin(8, 0, 0, 0)
            .titled(&self.title, (FONT, 24).into_font())
            .map_err(err)?;
        let (plot, scale) = body.split_horizontally(body.dim_in_pixel().0 - SCALE_W);
        let (nx, ny) = (self.x_labels.len().max(1), self.y_labels.len().max(1));
        let x_axis = category_axis(&self.x_labels);
        let (margin, y_area) = (18u32, 110u32);
        let width = f64::from(plot.dim_in_pixel().0.saturating_sub(2 * margin + y_area));
        let layout = axis::layout(&plot, &x_axis, |x| {
            f64::from(margin + y_area) + (x + 0.5) / nx as f64 * width
        });
        let ylabels: Vec<String> = self
            .y_labels
            .iter()
            .map(|l| fit(&plot, l, &(FONT, 16).into_font(), y_area - 12))
            .collect();
        let mut chart = ChartBuilder::on(&plot)
            .margin(margin)
            .margin_top(4)
            .x_label_area_size(layout.height + 32)
            .y_label_area_size(y_area)
            .build_cartesian_2d(-0.5..nx as f64 - 0.5, -0.5..ny as f64 - 0.5)
            .map_err(err)?;
        let yfmt = move |y: &f64| {
            let i = y.round();
            if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < ylabels.len() {
                ylabels[i as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(2)
            .x_label_formatter(&|_| String::new())
            .set_tick_mark_size(LabelAreaPosition::Bottom, 0)
            .y_labels(ny.clamp(1, 40))
            .y_label_formatter(&yfmt)
            .y_desc(self.y_field.as_str())
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 18))
            .draw()
            .map_err(err)?;
        for (y, row) in self.cells.iter().enumerate() {
            stop_point()?;
            for (x, v) in row.iter().enumerate() {
                let (xf, yf) = (x as f64, y as f64);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(xf - 0.5, yf - 0.5), (xf + 0.5, yf + 0.5)],
                        cell_colour(*v).filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(xf - 0.5, yf - 0.5), (xf + 0.5, yf + 0.5)],
                        WHITE.stroke_width(1),
                    )))
                    .map_err(err)?;
            }
        }
        // Cell labels, in white on the dark half of the scale.
        let base = plot.get_base_pixel();
        let at = |x: f64, y: f64| {
            let (px, py) = chart.backend_coord(&(x, y));
            (px - base.0, py - base.1)
        };
        let cell_w = at(1.0, 0.0).0 - at(0.0, 0.0).0;
        let cell_h = at(0.0, 0.0).1 - at(0.0, 1.0).1;
        let label_px = 15;
        if cell_w >= 44 && cell_h >= 22 {
            for (y, row) in self.cells.iter().enumerate() {
                for (x, v) in row.iter().enumerate() {
                    let ink = if v.is_some_and(|v| v < 0.6) {
                        WHITE
                    } else {
                        BLACK
                    };
                    let style = TextStyle::from((FONT, label_px).into_font())
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    plot.draw_text(&percent(*v), &style, at(x as f64, y as f64))
                        .map_err(err)?;
                }
            }
        }
        let (top, bottom) = (at(0.0, ny as f64 - 0.5).1, at(0.0, -0.5).1);
        axis::draw(&plot, &x_axis, &layout, |x| at(x, 0.0).0, (top, bottom))?;
        let desc = TextStyle::from((FONT, 18).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        let centre = (at(-0.5, 0.0).0 + at(nx as f64 - 0.5, 0.0).0) / 2;
        plot.draw_text(
            &self.x_field,
            &desc,
            (centre, bottom + layout.height as i32 + 6),
        )
        .map_err(err)?;
        // The colour scale: 0% at the bottom, 100% at the top.
        let (sx, steps) = (12, 50);
        let span = bottom - top;
        for k in 0..steps {
            let v = (k as f64 + 0.5) / steps as f64;
            let y1 = bottom - span * k / steps;
            let y0 = bottom - span * (k + 1) / steps;
            scale
                .draw(&Rectangle::new(
                    [(sx, y0), (sx + 24, y1)],
                    cell_colour(Some(v)).filled(),
                ))
                .map_err(err)?;
        }
        let text = TextStyle::from((FONT, 14).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (v, label) in [(0.0, "0%"), (0.5, "50%"), (1.0, "100%")] {
            let y = bottom - (f64::from(span) * v) as i32;
            scale.draw_text(label, &text, (sx + 30, y)).map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_field_sweep_gets_a_map_in_axis_order() {
        let csv = "variant,recovered_fraction,sweep.rate,sweep.for\n\
                   a,1,300/s,1s\nb,0.5,100/s,1s\nc,0,300/s,200ms\nd,,100/s,200ms\n";
        let d = ChartData::from_bytes(b"", b"", csv.as_bytes(), None).unwrap();
        let maps = stability_maps(&d);
        assert_eq!(maps.len(), 1);
        let (name, _, m) = &maps[0];
        assert_eq!(name, "stability-recovered_fraction-rate-x-for");
        assert_eq!(m.x_labels, ["100/s", "300/s"]);
        assert_eq!(m.y_labels, ["200 ms", "1 s"]);
        assert_eq!(m.cells, [[None, Some(0.0)], [Some(0.5), Some(1.0)]]);
        // One field, or three: no map.
        let one = "variant,recovered_fraction,sweep.rate\na,1,300/s\n";
        let d = ChartData::from_bytes(b"", b"", one.as_bytes(), None).unwrap();
        assert!(stability_maps(&d).is_empty());
    }
}
