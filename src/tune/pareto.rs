//! The Pareto chart of a search (`tune/charts/pareto.svg|png`): every
//! candidate that ran, its mean success rate against its mean peak load ÷
//! capacity after the incident (or over the whole run when nothing has an
//! after-incident figure), the front of candidates no other beats on both
//! (more success and less load) joined by a line, and the best candidate
//! marked. A candidate's colour says how far it went in the search.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::Outcome;
use super::output::mean;
use crate::report::figure::{Drawable, FONT, colour, err, render, stop_point, tick};

/// One candidate on the chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Dot {
    pub id: usize,
    pub load: f64,
    pub success: f64,
    pub round: usize,
    pub best: bool,
    /// With an SLO: whether every run of it met it.
    pub slo_pass: Option<bool>,
}

/// The chart's data.
#[derive(Clone, Debug)]
pub struct Pareto {
    pub x_figure: &'static str,
    pub dots: Vec<Dot>,
    /// The front, by increasing load.
    pub front: Vec<Dot>,
    pub rounds: usize,
}

impl Pareto {
    pub fn of(o: &Outcome) -> Pareto {
        let after = o
            .ranked
            .iter()
            .any(|(c, _)| mean(c, "peak_load_ratio_after").is_some());
        let x_figure = if after {
            "peak_load_ratio_after"
        } else {
            "peak_load_ratio"
        };
        let best = o.best().map(|(c, _)| c.id);
        let dots: Vec<Dot> = o
            .ranked
            .iter()
            .filter(|(c, _)| c.finished())
            .filter_map(|(c, st)| {
                Some(Dot {
                    id: c.id,
                    load: mean(c, x_figure)?,
                    success: mean(c, "success_rate")?,
                    round: c.round,
                    best: Some(c.id) == best,
                    slo_pass: st.slo_pass,
                })
            })
            .collect();
        Pareto {
            x_figure,
            front: front(&dots),
            dots,
            rounds: o.rounds.len(),
        }
    }

    /// The chart as SVG text and PNG bytes.
    pub fn files(&self) -> Result<(String, Vec<u8>), String> {
        render(self)
    }
}

/// The dots no other dot dominates (at least as much success with at
/// most as much load, and better in one), by increasing load.
pub fn front(dots: &[Dot]) -> Vec<Dot> {
    let mut sorted: Vec<&Dot> = dots.iter().collect();
    // Least load first; at equal load, most success first.
    sorted.sort_by(|a, b| {
        a.load
            .total_cmp(&b.load)
            .then(b.success.total_cmp(&a.success))
            .then(a.id.cmp(&b.id))
    });
    let mut out: Vec<Dot> = Vec::new();
    let mut best_success = f64::NEG_INFINITY;
    for d in sorted {
        if d.success > best_success {
            best_success = d.success;
            out.push(d.clone());
        }
    }
    out
}

/// The width of the legend beside the plot.
const LEGEND_WIDTH: u32 = 330;

impl Drawable for Pareto {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (width, _) = root.dim_in_pixel();
        let (plot, legend) = root.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
        let (x0, x1) = span(self.dots.iter().map(|d| d.load));
        let (y0, y1) = span(self.dots.iter().map(|d| d.success));
        let mut chart = ChartBuilder::on(&plot)
            .caption(
                "Candidates of the search: success against peak load",
                (FONT, 26),
            )
            .margin(18)
            .x_label_area_size(56)
            .y_label_area_size(90)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(format!(
                "{} (mean over its runs, × capacity)",
                self.x_figure
            ))
            .y_desc("success_rate (mean over its runs)")
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|y| tick(*y))
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 18))
            .light_line_style(BLACK.mix(0.04))
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(err)?;
        let rounds = self.rounds.max(1);
        let shade = |round: usize| colour(0).mix(0.3 + 0.7 * (round + 1) as f64 / rounds as f64);
        // Filled: met the SLO in every run (or no SLO); hollow: missed it.
        let style = |d: &Dot| {
            let c = shade(d.round);
            if d.slo_pass == Some(false) {
                c.stroke_width(2)
            } else {
                c.filled()
            }
        };
        stop_point()?;
        chart
            .draw_series(
                self.dots
                    .iter()
                    .map(|d| Circle::new((d.load, d.success), 5, style(d))),
            )
            .map_err(err)?;
        if self.front.len() > 1 {
            chart
                .draw_series(LineSeries::new(
                    self.front.iter().map(|d| (d.load, d.success)),
                    colour(1).stroke_width(2),
                ))
                .map_err(err)?;
        }
        for d in self.dots.iter().filter(|d| d.best) {
            chart
                .draw_series(std::iter::once(Cross::new(
                    (d.load, d.success),
                    9,
                    BLACK.stroke_width(3),
                )))
                .map_err(err)?;
        }
        // The legend, beside the plot (never over a point).
        let font = (FONT, 15).into_font();
        let mut y = 90;
        let mut entry = |text: String, mark: &dyn Fn(i32, i32) -> Result<(), String>| {
            mark(14, y)?;
            legend
                .draw(&Text::new(text, (34, y - 8), font.clone()))
                .map_err(err)?;
            y += 28;
            Ok::<(), String>(())
        };
        for round in 0..rounds {
            let text = if round + 1 == rounds {
                format!("reached round {} (the last)", round + 1)
            } else {
                format!("dropped after round {}", round + 1)
            };
            entry(text, &|x, y| {
                legend
                    .draw(&Circle::new((x, y), 5, shade(round).filled()))
                    .map_err(err)
            })?;
        }
        if self.dots.iter().any(|d| d.slo_pass == Some(false)) {
            entry("hollow: missed the SLO".into(), &|x, y| {
                legend
                    .draw(&Circle::new((x, y), 5, shade(rounds - 1).stroke_width(2)))
                    .map_err(err)
            })?;
        }
        if self.front.len() > 1 {
            entry("the front: nothing has more".into(), &|x, y| {
                legend
                    .draw(&PathElement::new(
                        vec![(x - 10, y), (x + 10, y)],
                        colour(1).stroke_width(2),
                    ))
                    .map_err(err)
            })?;
            entry("success at less load".into(), &|_, _| Ok(()))?;
        }
        if let Some(d) = self.dots.iter().find(|d| d.best) {
            entry(format!("the best (c{})", d.id), &|x, y| {
                legend
                    .draw(&Cross::new((x, y), 6, BLACK.stroke_width(3)))
                    .map_err(err)
            })?;
        }
        Ok(())
    }
}

/// The axis range around `values`, with a margin; (0, 1) without values.
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.08
    } else {
        lo.abs().max(1e-3) * 0.05
    };
    (lo - pad, hi + pad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(id: usize, load: f64, success: f64) -> Dot {
        Dot {
            id,
            load,
            success,
            round: 0,
            best: false,
            slo_pass: None,
        }
    }

    #[test]
    fn the_front_holds_only_undominated_candidates() {
        let dots = vec![
            dot(0, 1.0, 0.90),
            dot(1, 2.0, 0.95),
            dot(2, 1.5, 0.80), // dominated by 0
            dot(3, 3.0, 0.95), // dominated by 1 (same success, more load)
            dot(4, 0.5, 0.70),
            dot(5, 2.5, 0.99),
        ];
        let ids: Vec<usize> = front(&dots).iter().map(|d| d.id).collect();
        assert_eq!(ids, [4, 0, 1, 5]);
    }
}
