//! Load against capacity at every service, as small multiples: one panel
//! per service (in the order of `services.csv`, by depth from the
//! clients) with each variant's attempts per second over time (mean over
//! replicates, min–max band) and the service's capacity (dashed), the
//! incidents shaded. Each panel has its own y scale: services differ in
//! capacity by orders of magnitude, and a shared scale would flatten the
//! small ones; the dashed line is what each is read against.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::capacity_lines::{self, Capacity, Drawn};
use super::chart_data::ChartData;
use super::figure::{Drawable, FONT, Figure, Line, WIDTH, colour, err, fit, tick};
use super::labels::shorten;

/// The most panels drawn; past it, the services with the highest peak
/// load ÷ capacity are drawn and a note names how many were left out.
pub const MAX_PANELS: usize = 48;

/// Height of the title and legend above the panels.
const HEAD: u32 = 92;
/// The smallest panel height.
const PANEL_H: u32 = 300;
/// The chart's smallest height (as the other charts).
const MIN_H: u32 = 700;

/// The small multiples.
#[derive(Clone, Debug, Default)]
pub struct ServicesFigure {
    pub title: String,
    /// Variant names and colours, in order.
    pub legend: Vec<(String, RGBColor)>,
    /// One compact figure per service.
    pub panels: Vec<Figure>,
    /// A line under the legend (services left out).
    pub note: Option<String>,
}

/// Panels across, for `n` panels.
pub fn columns(n: usize) -> usize {
    match n {
        0 | 1 => 1,
        2..=4 => 2,
        _ => 3,
    }
}

impl ServicesFigure {
    fn rows(&self) -> usize {
        self.panels
            .len()
            .div_ceil(columns(self.panels.len()))
            .max(1)
    }

    /// The pixel rectangle of panel `i`: (x, y, width, height).
    pub fn panel_rect(&self, i: usize) -> (u32, u32, u32, u32) {
        let cols = columns(self.panels.len()) as u32;
        let rows = self.rows() as u32;
        let (_, h) = self.size();
        let w = WIDTH / cols;
        let ph = (h - HEAD) / rows;
        let (c, r) = (i as u32 % cols, i as u32 / cols);
        (c * w, HEAD + r * ph, w, ph)
    }
}

impl Drawable for ServicesFigure {
    fn size(&self) -> (u32, u32) {
        let rows = self.rows() as u32;
        (WIDTH, (HEAD + rows * PANEL_H).max(MIN_H))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (w, _) = root.dim_in_pixel();
        let title_font = (FONT, 26).into_font();
        let title = TextStyle::from(title_font.clone()).pos(Pos::new(HPos::Center, VPos::Top));
        let t = fit(root, &self.title, &title_font, w - 20);
        root.draw(&Text::new(t, (w as i32 / 2, 10), title))
            .map_err(err)?;
        // One legend for every panel: a swatch and a name per variant, as
        // many as fit on one line, then how many more there are.
        let font = (FONT, 15).into_font();
        let label = TextStyle::from(font.clone()).pos(Pos::new(HPos::Left, VPos::Center));
        let width = |t: &str| -> Result<i32, String> {
            Ok(root.estimate_text_size(t, &label).map_err(err)?.0 as i32)
        };
        // Too long, shortened alike (staying distinct), then cut.
        let all: Vec<String> = self.legend.iter().map(|(n, _)| n.clone()).collect();
        let short = shorten(&all, &|n: &str| width(n).is_ok_and(|w| w <= 300));
        let names: Vec<String> = short
            .labels
            .iter()
            .map(|n| fit(root, n, &font, 300))
            .collect();
        let items: Vec<i32> = names
            .iter()
            .map(|n| Ok(30 + width(n)? + 22))
            .collect::<Result<_, String>>()?;
        let limit = w as i32 - 20;
        let (y, mut x) = (54, 20i32);
        // What the shortened names are values of, first.
        if let Some(h) = short.heading {
            let h = format!("{h}:");
            let hw = width(&h)?;
            root.draw(&Text::new(h, (x, y), label.clone()))
                .map_err(err)?;
            x += hw + 12;
        }
        let all_fit = x + items.iter().sum::<i32>() <= limit;
        for (i, ((name, (_, c)), item)) in names.iter().zip(&self.legend).zip(&items).enumerate() {
            let more = format!("… and {} more", self.legend.len() - i);
            if !all_fit && x + item + width(&more)? > limit {
                root.draw(&Text::new(more, (x, y), label.clone()))
                    .map_err(err)?;
                break;
            }
            root.draw(&PathElement::new(
                vec![(x, y), (x + 24, y)],
                c.stroke_width(3),
            ))
            .map_err(err)?;
            root.draw(&Text::new(name.clone(), (x + 30, y), label.clone()))
                .map_err(err)?;
            x += item;
        }
        if let Some(note) = &self.note {
            let grey = BLACK.mix(0.7);
            let style = TextStyle::from(font.clone())
                .color(&grey)
                .pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new(note.clone(), (w as i32 / 2, 78), style))
                .map_err(err)?;
        }
        for (i, panel) in self.panels.iter().enumerate() {
            let (x, y, pw, ph) = self.panel_rect(i);
            let area = root.clone().shrink((x, y), (pw, ph));
            panel.draw(&area)?;
        }
        Ok(())
    }
}

/// The small multiples of a run, or `None` when there is nothing they
/// would add: no graph tables, or a single service (a chain of one layer),
/// whose one panel would be the `load` chart again.
pub fn services_figure(d: &ChartData) -> Option<ServicesFigure> {
    let g = d.graph.as_ref().filter(|g| g.is_graph())?;
    // The services drawn: all of them, or the MAX_PANELS with the highest
    // peak load ÷ capacity (any variant), in table order.
    let peak = |s: usize| {
        g.service_figures
            .iter()
            .filter_map(|v| v.get(s).and_then(|f| f.peak_load_ratio))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let mut shown: Vec<usize> = (0..g.services.len()).collect();
    let mut note = None;
    if shown.len() > MAX_PANELS {
        shown.sort_by(|&a, &b| peak(b).total_cmp(&peak(a)).then(a.cmp(&b)));
        shown.truncate(MAX_PANELS);
        shown.sort_unstable();
        note = Some(format!(
            "the {MAX_PANELS} services with the highest peak load ÷ capacity; {} more in services.csv",
            g.services.len() - MAX_PANELS
        ));
    }
    let t_end = d.t_end();
    let max_gap = d.bucket_s * g.group.max(1) as f64 * 1.5;
    let panels = shown
        .iter()
        .map(|&s| {
            let name = &g.services[s];
            let mut f = Figure {
                x_desc: "time (s)".into(),
                y_desc: "attempts per second".into(),
                spans: d.incidents.clone(),
                max_gap,
                x_range: (t_end > 0.0).then_some((0.0, t_end)),
                compact: true,
                ..Figure::default()
            };
            let per_variant = g.load.get(s);
            for (v, variant) in d.variants.iter().enumerate() {
                let points = per_variant
                    .and_then(|p| p.get(v))
                    .cloned()
                    .unwrap_or_default();
                f.lines.push(Line {
                    label: variant.clone(),
                    colour: colour(v),
                    points,
                    band: true,
                    dashed: false,
                    marker: Default::default(),
                });
            }
            if f.lines.iter().all(|l| l.points.is_empty()) {
                f.note = Some("no data".into());
            }
            // Capacity per variant that has one, per bucket where it
            // changes; one black line when all agree.
            let caps: Vec<(usize, Capacity)> = g
                .service_figures
                .iter()
                .enumerate()
                .filter_map(|(v, figs)| {
                    let changing = g
                        .capacity
                        .get(s)
                        .and_then(|c| c.get(v))
                        .filter(|p| !p.is_empty());
                    match changing {
                        Some(p) => Some((v, Capacity::Buckets(p.clone()))),
                        None => figs
                            .get(s)
                            .and_then(|x| x.capacity_per_s)
                            .map(|c| (v, Capacity::Flat(c))),
                    }
                })
                .collect();
            let width = d.bucket_s * g.group.max(1) as f64;
            f.title = match capacity_lines::draw(&mut f, caps, width, &d.variants, false) {
                Drawn::Nothing => format!("{name}: no capacity limit"),
                Drawn::Flat(c) => format!("{name}: capacity {}/s (dashed)", tick(c)),
                Drawn::FlatPerVariant => format!("{name}: capacity per variant (dashed)"),
                Drawn::Changing => format!("{name}: capacity per bucket (dashed)"),
                Drawn::ChangingPerVariant => {
                    format!("{name}: capacity per bucket and variant (dashed)")
                }
            };
            f
        })
        .collect();
    Some(ServicesFigure {
        title: "Load against capacity at each service (mean over replicates, min–max band)".into(),
        legend: d
            .variants
            .iter()
            .enumerate()
            .map(|(v, n)| (n.clone(), colour(v)))
            .collect(),
        panels,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::figure::render;
    use crate::report::graph_data::GraphSources;

    /// `services` services, `variants` variants, one replicate, two
    /// buckets; service i's peak load ratio is i ÷ 10.
    fn data(services: usize, variants: usize) -> ChartData {
        let mut summary = String::from("variant,replicate\n");
        let mut table =
            String::from("variant,replicate,service,attempts,peak_load_ratio,capacity_per_s\n");
        let mut ts = String::from("variant,replicate,t_s,service,attempts\n");
        for v in 0..variants {
            summary.push_str(&format!("variant-with-a-long-name-{v},0\n"));
            for s in 0..services {
                table.push_str(&format!(
                    "variant-with-a-long-name-{v},0,s{s},{s},{},100\n",
                    s as f64 / 10.0
                ));
                for t in 0..2 {
                    ts.push_str(&format!("variant-with-a-long-name-{v},0,{t},s{s},{s}\n"));
                }
            }
        }
        ChartData::from_bytes(b"", summary.as_bytes(), b"", None)
            .unwrap()
            .with_graph(GraphSources {
                services: table.as_bytes(),
                timeseries: ts.as_bytes(),
                calls: &b""[..],
            })
            .unwrap()
    }

    #[test]
    fn one_service_draws_no_panels() {
        assert!(services_figure(&data(1, 2)).is_none());
        assert!(services_figure(&ChartData::default()).is_none());
    }

    #[test]
    fn panels_grow_the_chart_in_rows_of_three() {
        let f = services_figure(&data(7, 1)).unwrap();
        assert_eq!(f.panels.len(), 7);
        assert_eq!(f.size(), (WIDTH, HEAD + 3 * PANEL_H));
        assert_eq!(f.panel_rect(4), (400, HEAD + PANEL_H, 400, PANEL_H));
        assert_eq!(f.panels[6].title, "s6: capacity 100/s (dashed)");
        assert!(f.note.is_none());
        let f = services_figure(&data(2, 1)).unwrap();
        assert_eq!(f.size(), (WIDTH, MIN_H));
        assert_eq!(f.panel_rect(1), (600, HEAD, 600, MIN_H - HEAD));
    }

    #[test]
    fn past_the_limit_the_most_loaded_services_are_drawn_in_table_order() {
        let f = services_figure(&data(MAX_PANELS + 5, 1)).unwrap();
        assert_eq!(f.panels.len(), MAX_PANELS);
        // s0 … s4 have the lowest peaks: left out.
        assert!(f.panels[0].title.starts_with("s5:"));
        assert!(
            f.panels[MAX_PANELS - 1]
                .title
                .starts_with(&format!("s{}:", MAX_PANELS + 4))
        );
        assert!(
            f.note
                .as_deref()
                .unwrap()
                .contains("5 more in services.csv")
        );
    }

    #[test]
    fn a_legend_too_long_for_one_line_says_how_many_more() {
        let f = services_figure(&data(2, 40)).unwrap();
        let (svg, _) = render(&f).unwrap();
        let shown = (0..40)
            .filter(|v| svg.contains(&format!(">\nvariant-with-a-long-name-{v}\n<")))
            .count();
        let more = svg
            .split("… and ")
            .nth(1)
            .and_then(|r| r.split(" more").next())
            .and_then(|n| n.trim().parse::<usize>().ok())
            .expect("an … and N more");
        assert!(shown > 1 && shown < 40, "{shown}");
        assert_eq!(shown + more, 40);
    }
}
