//! A picture of the services graph: where did the storm go? Each service
//! is a box coloured by its peak load ÷ capacity (green below 80%, amber
//! up to 100%, red above: saturated), each call an arrow labelled with its
//! amplification (attempts on the call ÷ logical requests). The clients
//! are the leftmost box; services stand in columns by their depth (the
//! longest chain of calls from the clients), ordered inside a column by
//! the mean row of their callers so arrows cross little. The picture is
//! 1200 pixels wide and as tall as its fullest column needs (100 pixels a
//! box, at least three); names and details too wide for their box are cut
//! with "…".
//!
//! `storm_graph` builds it from the run's tables (`services.csv`,
//! `calls.csv`) for the variant where the storm went furthest.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart_data::ChartData;
use super::figure::{Drawable, FONT, WIDTH, err, fit, tick};
use super::graph_data::CLIENTS;

/// Space above the boxes (title and subtitle) and below them.
const TOP: i32 = 90;
const BOTTOM: i32 = 30;
/// Height of a box, and the vertical room per box of the fullest column
/// (at least `MIN_ROWS` of them: a chain is a short picture).
const BOX_H: i32 = 58;
const SLOT_H: i32 = 100;
const MIN_ROWS: i32 = 3;

/// One box of the picture.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphNode {
    pub name: String,
    /// Peak load ÷ capacity (None for the clients and for services
    /// without a capacity limit).
    pub peak_load_ratio: Option<f64>,
    /// A second line under the name (for example "cap 2560/s").
    pub detail: String,
}

/// One arrow: from node `from` to node `to` (indices into `nodes`).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphEdge {
    pub from: usize,
    pub to: usize,
    pub label: String,
}

/// The whole picture. Node 0 is where requests enter (the clients).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphFigure {
    pub title: String,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
    /// A line under the title (what the colours mean).
    pub subtitle: String,
}

/// Fill colour of a box by its peak load ratio.
fn fill(ratio: Option<f64>) -> RGBColor {
    match ratio {
        None => RGBColor(236, 236, 236),
        Some(r) if r < 0.8 => RGBColor(199, 233, 192),
        Some(r) if r <= 1.0 => RGBColor(253, 208, 162),
        Some(_) => RGBColor(252, 146, 114),
    }
}

/// Column (depth) and row of every node: depth is the longest path from
/// node 0; rows are ordered by the mean row of each node's callers, ties by
/// index. Nodes not reachable from node 0 go in column 0 after it.
pub fn layout(nodes: usize, edges: &[GraphEdge]) -> Vec<(usize, usize)> {
    let mut depth = vec![0usize; nodes];
    // Longest path in a DAG by relaxation; `nodes` rounds suffice, and a
    // cycle (refused by validation) cannot loop here.
    for _ in 0..nodes {
        let mut changed = false;
        for e in edges {
            if e.from < nodes && e.to < nodes && e.to != e.from && depth[e.to] < depth[e.from] + 1 {
                depth[e.to] = depth[e.from] + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let columns = depth.iter().copied().max().map_or(0, |d| d + 1);
    let mut row = vec![0usize; nodes];
    for col in 0..columns {
        let mut members: Vec<(f64, usize)> = (0..nodes)
            .filter(|&n| depth[n] == col)
            .map(|n| {
                let callers: Vec<f64> = edges
                    .iter()
                    .filter(|e| e.to == n && e.from < nodes && depth[e.from] < col)
                    .map(|e| row[e.from] as f64)
                    .collect();
                let key = if callers.is_empty() {
                    n as f64 * 1e-6
                } else {
                    callers.iter().sum::<f64>() / callers.len() as f64 + n as f64 * 1e-6
                };
                (key, n)
            })
            .collect();
        members.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (r, (_, n)) in members.into_iter().enumerate() {
            row[n] = r;
        }
    }
    (0..nodes).map(|n| (depth[n], row[n])).collect()
}

/// A ratio as the picture prints it: "1.87×", "10.8×", "250×"; a ratio
/// above zero that two decimals would round to zero is "< 0.01×".
pub fn times(v: f64) -> String {
    if v > 0.0 && v < 0.005 {
        "< 0.01×".to_string()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}×")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}×")
    } else {
        format!("{v:.2}×")
    }
}

/// The picture of the services graph of a run, for its worst variant
/// (`GraphData::worst_variant`): each service's peak load ÷ capacity, and
/// each caller → callee's amplification (the mean over replicates of the
/// attempts on its calls ÷ logical requests; several calls between the
/// same two add up). `None` when there is nothing to add to the other
/// charts: no graph tables, or one service (a chain of one layer).
pub fn storm_graph(d: &ChartData) -> Option<GraphFigure> {
    let g = d.graph.as_ref().filter(|g| g.is_graph())?;
    let v = g.worst_variant()?;
    let figures = &g.service_figures[v];
    let mut nodes = vec![GraphNode {
        name: CLIENTS.into(),
        peak_load_ratio: None,
        detail: String::new(),
    }];
    for (s, name) in g.services.iter().enumerate() {
        let f = figures.get(s).copied().unwrap_or_default();
        let detail = match (f.peak_load_ratio, f.capacity_per_s) {
            (Some(p), Some(c)) => format!("peak {} of {}/s", times(p), tick(c)),
            (None, Some(c)) => format!("capacity {}/s", tick(c)),
            _ => "no capacity limit".to_string(),
        };
        nodes.push(GraphNode {
            name: name.clone(),
            peak_load_ratio: f.peak_load_ratio.filter(|_| f.capacity_per_s.is_some()),
            detail,
        });
    }
    // A name as a node: a service, or the clients.
    let node = |name: &str| {
        g.services
            .iter()
            .position(|s| s == name)
            .map(|s| s + 1)
            .or((name == CLIENTS).then_some(0))
    };
    let mut pairs: Vec<(usize, usize, f64)> = Vec::new();
    for (e, call) in g.calls.iter().enumerate() {
        let (Some(from), Some(to)) = (node(&call.caller), node(&call.callee)) else {
            continue;
        };
        let Some(a) = g.call_figures[v].get(e).and_then(|c| c.amplification) else {
            continue;
        };
        match pairs.iter_mut().find(|p| (p.0, p.1) == (from, to)) {
            Some(p) => p.2 += a,
            None => pairs.push((from, to, a)),
        }
    }
    let edges = pairs
        .into_iter()
        .map(|(from, to, a)| GraphEdge {
            from,
            to,
            label: times(a),
        })
        .collect();
    let replicates = figures.iter().map(|f| f.replicates).max().unwrap_or(0);
    let title = if d.variants.len() > 1 {
        format!(
            "Where did the storm go? Variant {} (the highest peak load ÷ capacity)",
            d.variants[v]
        )
    } else {
        "Where did the storm go?".to_string()
    };
    let mean = if replicates == 1 {
        "one replicate".to_string()
    } else {
        format!("mean of {replicates} replicates")
    };
    Some(GraphFigure {
        title,
        nodes,
        edges,
        subtitle: format!(
            "box: peak load ÷ capacity, {mean} (green below 0.8×, amber to 1×, red above; grey: no limit) · arrow: attempts per logical request"
        ),
    })
}

impl GraphFigure {
    /// Boxes in the fullest column.
    fn most_rows(&self) -> usize {
        let place = layout(self.nodes.len(), &self.edges);
        let columns = place.iter().map(|p| p.0).max().map_or(0, |c| c + 1);
        (0..columns)
            .map(|c| place.iter().filter(|p| p.0 == c).count())
            .max()
            .unwrap_or(0)
    }
}

impl Drawable for GraphFigure {
    fn size(&self) -> (u32, u32) {
        let rows = (self.most_rows() as i32).max(MIN_ROWS);
        (WIDTH, (TOP + BOTTOM + SLOT_H * rows) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (w, h) = root.dim_in_pixel();
        let (w, h) = (w as i32, h as i32);
        let title_font = (FONT, 26).into_font();
        let title = TextStyle::from(title_font.clone()).pos(Pos::new(HPos::Center, VPos::Top));
        let text = fit(root, &self.title, &title_font, (w - 20).max(0) as u32);
        root.draw(&Text::new(text, (w / 2, 14), title))
            .map_err(err)?;
        let grey = BLACK.mix(0.7);
        let sub_font = (FONT, 16).into_font();
        let sub = TextStyle::from(sub_font.clone())
            .color(&grey)
            .pos(Pos::new(HPos::Center, VPos::Top));
        let text = fit(root, &self.subtitle, &sub_font, (w - 20).max(0) as u32);
        root.draw(&Text::new(text, (w / 2, 48), sub)).map_err(err)?;
        if self.nodes.is_empty() {
            return Ok(());
        }
        let place = layout(self.nodes.len(), &self.edges);
        let columns = place.iter().map(|p| p.0).max().unwrap_or(0) + 1;
        let mut rows = vec![0usize; columns];
        for &(c, r) in &place {
            rows[c] = rows[c].max(r + 1);
        }
        let (top, bottom, side) = (TOP, BOTTOM, 30);
        let col_w = (w - 2 * side) / columns as i32;
        let box_w = (col_w * 3 / 5).clamp(90, 220);
        let box_h = BOX_H;
        let centre = |n: usize| -> (i32, i32) {
            let (c, r) = place[n];
            let x = side + col_w * c as i32 + col_w / 2;
            let slot = (h - top - bottom) / rows[c].max(1) as i32;
            let y = top + slot * r as i32 + slot / 2;
            (x, y)
        };
        // Arrows first, boxes over them, edge labels over everything.
        let label_font = (FONT, 15).into_font();
        let label_style = TextStyle::from(label_font.clone())
            .color(&RGBColor(40, 40, 40))
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        let mut labels = Vec::new();
        for e in &self.edges {
            if e.from >= self.nodes.len() || e.to >= self.nodes.len() {
                continue;
            }
            let (x0, y0) = centre(e.from);
            let (x1, y1) = centre(e.to);
            let (sx, ex) = if x1 >= x0 {
                (x0 + box_w / 2, x1 - box_w / 2)
            } else {
                (x0 - box_w / 2, x1 + box_w / 2)
            };
            let colour = RGBColor(90, 90, 90);
            root.draw(&PathElement::new(
                vec![(sx, y0), (ex, y1)],
                colour.stroke_width(2),
            ))
            .map_err(err)?;
            // Arrowhead at the callee's side.
            let (dx, dy) = ((ex - sx) as f64, (y1 - y0) as f64);
            let len = (dx * dx + dy * dy).sqrt().max(1.0);
            let (ux, uy) = (dx / len, dy / len);
            let back = |d: f64, side: f64| {
                (
                    (ex as f64 - ux * d - uy * side).round() as i32,
                    (y1 as f64 - uy * d + ux * side).round() as i32,
                )
            };
            root.draw(&Polygon::new(
                vec![(ex, y1), back(12.0, 6.0), back(12.0, -6.0)],
                colour.filled(),
            ))
            .map_err(err)?;
            let mid = ((sx + ex) / 2, (y0 + y1) / 2 - 4);
            labels.push((e.label.clone(), mid));
        }
        let name_font = (FONT, 17).into_font();
        let name_style =
            TextStyle::from(name_font.clone()).pos(Pos::new(HPos::Center, VPos::Center));
        let dark = BLACK.mix(0.75);
        let detail_font = (FONT, 14).into_font();
        let detail_style = TextStyle::from(detail_font.clone())
            .color(&dark)
            .pos(Pos::new(HPos::Center, VPos::Center));
        let inner = (box_w - 8).max(0) as u32;
        for (n, node) in self.nodes.iter().enumerate() {
            let (x, y) = centre(n);
            let corner = [
                (x - box_w / 2, y - box_h / 2),
                (x + box_w / 2, y + box_h / 2),
            ];
            root.draw(&Rectangle::new(corner, fill(node.peak_load_ratio).filled()))
                .map_err(err)?;
            root.draw(&Rectangle::new(corner, BLACK.mix(0.6).stroke_width(1)))
                .map_err(err)?;
            let name_y = if node.detail.is_empty() { y } else { y - 10 };
            root.draw(&Text::new(
                fit(root, &node.name, &name_font, inner),
                (x, name_y),
                name_style.clone(),
            ))
            .map_err(err)?;
            if !node.detail.is_empty() {
                root.draw(&Text::new(
                    fit(root, &node.detail, &detail_font, inner),
                    (x, y + 13),
                    detail_style.clone(),
                ))
                .map_err(err)?;
            }
        }
        // Each edge label on a light ground, readable over the arrows.
        for (text, (x, y)) in labels {
            let (tw, th) = root.estimate_text_size(&text, &label_style).map_err(err)?;
            let (tw, th) = (tw as i32, th as i32);
            root.draw(&Rectangle::new(
                [(x - tw / 2 - 3, y - th - 1), (x + tw / 2 + 3, y + 1)],
                WHITE.mix(0.85).filled(),
            ))
            .map_err(err)?;
            root.draw(&Text::new(text, (x, y), label_style.clone()))
                .map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::figure::render;

    fn edge(from: usize, to: usize) -> GraphEdge {
        GraphEdge {
            from,
            to,
            label: String::new(),
        }
    }

    #[test]
    fn ratios_keep_two_or_three_significant_digits() {
        assert_eq!(times(1.0), "1.00×");
        assert_eq!(times(11.448), "11.4×");
        assert_eq!(times(250.4), "250×");
        assert_eq!(times(0.0), "0.00×");
        assert_eq!(times(0.004), "< 0.01×");
        assert_eq!(times(0.005), "0.01×");
    }

    #[test]
    fn columns_follow_the_longest_path_and_rows_the_callers() {
        // clients -> gateway -> {orders, inventory} -> postgres, and a
        // shortcut gateway -> postgres that must not pull postgres left.
        let edges = [
            edge(0, 1),
            edge(1, 2),
            edge(1, 3),
            edge(2, 4),
            edge(3, 4),
            edge(1, 4),
        ];
        let place = layout(5, &edges);
        assert_eq!(place[0], (0, 0));
        assert_eq!(place[1], (1, 0));
        assert_eq!((place[2].0, place[3].0), (2, 2));
        assert_ne!(place[2].1, place[3].1);
        assert_eq!(place[4], (3, 0));
    }

    #[test]
    fn a_diamond_renders_with_every_label() {
        let node = |name: &str, r: Option<f64>| GraphNode {
            name: name.into(),
            peak_load_ratio: r,
            detail: r.map(|r| format!("peak {r:.2}x")).unwrap_or_default(),
        };
        let fig = GraphFigure {
            title: "Where did the storm go?".into(),
            subtitle: "green < 0.8x capacity".into(),
            nodes: vec![
                node("clients", None),
                node("gateway", Some(0.5)),
                node("orders", Some(0.95)),
                node("postgres", Some(3.2)),
            ],
            edges: vec![
                GraphEdge {
                    from: 0,
                    to: 1,
                    label: "x1".into(),
                },
                GraphEdge {
                    from: 1,
                    to: 2,
                    label: "x3".into(),
                },
                GraphEdge {
                    from: 2,
                    to: 3,
                    label: "x9".into(),
                },
            ],
        };
        let (svg, png) = render(&fig).unwrap();
        for text in [
            "gateway",
            "postgres",
            "peak 3.20x",
            "x9",
            "Where did the storm go?",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(png.starts_with(b"\x89PNG"));
        assert_eq!(render(&fig).unwrap().0, svg, "deterministic");
        if let Ok(path) = std::env::var("STORMSIM_GRAPH_PNG") {
            std::fs::write(path, &png).unwrap();
        }
    }
}
