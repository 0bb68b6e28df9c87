//! The charts of a services graph, drawn from the tables of a constructed
//! run (a diamond over a database that is down for the whole run, with and
//! without retries): one panel per service in `services`, the picture's
//! numbers equal to the means of `services.csv` and `calls.csv` (and to
//! the exact products of attempts along each path), no label drawn over
//! another, the report's services section, and the same bytes for the
//! same run.

use std::collections::HashMap;

use crate::common::*;
use stormsim::model::server::{Effect, Incident, ServiceConfig};
use stormsim::model::service::ServiceDist;
use stormsim::model::{EdgeConfig, EdgeId, ModelConfig, ServiceId, Topology};
use stormsim::report::ChartData;
use stormsim::report::charts::{Chart, all_charts};
use stormsim::report::figure::text_size;
use stormsim::report::graph_data::GraphSources;
use stormsim::report::services_chart::services_figure;
use stormsim::report::{graph_tables, html, tables};
use stormsim::runner::{self, VariantPlan};

const SECS: u64 = 20;
const RATE: f64 = 100.0;

/// A call edge from `caller` (None: the clients) to `callee` making up to
/// `attempts` attempts, at once (no backoff).
fn edge(name: &str, caller: Option<u16>, callee: u16, attempts: u32) -> EdgeConfig {
    EdgeConfig {
        caller: caller.map(ServiceId),
        callee: ServiceId(callee),
        policy: retrying_layer(name, attempts, None),
        parallel: false,
        optional: false,
    }
}

fn proxy(name: &str, call: u16) -> ServiceConfig {
    ServiceConfig::proxy(name, EdgeId(call))
}

/// clients → gateway (200 workers × 1 ms: 200 000/s) → orders and
/// inventory in parallel (proxies) → postgres (1 worker × 1 ms: 1000/s),
/// down for the whole run. `retries`: 3 attempts on gateway → orders and
/// orders → postgres, 2 on gateway → inventory and inventory → postgres;
/// else 1 everywhere.
fn diamond(retries: bool) -> ModelConfig {
    let (a, b) = if retries { (3, 2) } else { (1, 1) };
    let mut gateway = ServiceConfig::leaf("gateway", 200, ServiceDist::Constant(MS), 1000);
    gateway.calls = vec![EdgeId(1), EdgeId(2)];
    let mut postgres = ServiceConfig::leaf("postgres", 1, ServiceDist::Constant(MS), 100);
    postgres.incidents.push(Incident {
        start: 0,
        end: SECS * S,
        effect: Effect::Down,
        replica: None,
    });
    let mut inventory_call = edge("gateway.inventory", Some(0), 2, b);
    inventory_call.parallel = true;
    let mut cfg = config(
        RATE,
        SECS * S,
        vec![stormsim::model::CallPolicy::passthrough("client")],
        dependency(1, ServiceDist::Constant(MS), 1),
    );
    cfg.topology = Topology::new(
        vec![gateway, proxy("orders", 3), proxy("inventory", 4), postgres],
        vec![
            edge("clients.gateway", None, 0, 1),
            edge("gateway.orders", Some(0), 1, a),
            inventory_call,
            edge("orders.postgres", Some(1), 3, a),
            edge("inventory.postgres", Some(2), 3, b),
        ],
        ServiceId(3),
    )
    .unwrap();
    cfg
}

/// The tables of the run, as written, and the charts and report drawn
/// from them.
struct Drawn {
    services_csv: Vec<u8>,
    calls_csv: Vec<u8>,
    charts: Vec<Chart>,
    html: String,
    data: ChartData,
}

fn draw() -> Drawn {
    let plans: Vec<VariantPlan> = [("no-retries", false), ("retries", true)]
        .into_iter()
        .map(|(name, retries)| VariantPlan {
            name: name.into(),
            config: diamond(retries),
            occ: None,
            params: Vec::new(),
            slo: None,
            memory: 0,
            in_flight_capped: None,
            certain_stop: None,
        })
        .collect();
    let results = runner::run_all(&plans, 2, 11, &|_| {});
    for r in &results {
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }
    let layout = tables::Layout::of(&results);
    let [services, services_ts, calls, _] = graph_tables::all(&layout, &results);
    let data = ChartData::from_bytes(
        &tables::timeseries_csv(&results),
        &tables::summary_csv(&results),
        &tables::summary_by_variant_csv(&results),
        None,
    )
    .unwrap()
    .with_graph(GraphSources {
        services: &services.1[..],
        timeseries: &services_ts.1[..],
        calls: &calls.1[..],
    })
    .unwrap();
    let charts = all_charts(&data).unwrap();
    let html = html::report_html(&data, &charts).unwrap();
    Drawn {
        services_csv: services.1,
        calls_csv: calls.1,
        charts,
        html,
        data,
    }
}

fn chart<'a>(d: &'a Drawn, name: &str) -> &'a Chart {
    d.charts
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no chart {name}"))
}

/// Rows of a CSV table as maps from column to cell.
fn rows(bytes: &[u8]) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_reader(bytes);
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

/// The mean of `column` over the rows that match every (column, value).
fn mean(rows: &[HashMap<String, String>], filter: &[(&str, &str)], column: &str) -> f64 {
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| filter.iter().all(|(c, v)| r[*c] == *v))
        .map(|r| r[column].parse::<f64>().unwrap())
        .collect();
    assert!(!values.is_empty(), "no rows for {filter:?}");
    values.iter().sum::<f64>() / values.len() as f64
}

/// A text of an SVG: its content and its box in the PNG's pixels.
#[derive(Debug)]
struct TextBox {
    text: String,
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
    fill: String,
}

impl TextBox {
    fn overlaps(&self, o: &TextBox) -> bool {
        // One pixel of slack: anti-aliased edges may touch.
        self.x0 < o.x1 - 1.0 && o.x0 < self.x1 - 1.0 && self.y0 < o.y1 - 1.0 && o.y0 < self.y1 - 1.0
    }

    fn inside(&self, x0: f64, y0: f64, x1: f64, y1: f64) -> bool {
        self.x0 >= x0 && self.x1 <= x1 && self.y0 >= y0 && self.y1 <= y1
    }
}

/// Every horizontal text of an SVG, measured in the embedded font at the
/// size the PNG draws it (the SVG's `font-size` × 1.24).
fn texts(svg: &str) -> Vec<TextBox> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("transform").is_none())
        .map(|n| {
            let num = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
            let text = n.text().unwrap_or("").trim().to_string();
            let px = num("font-size") * 1.24;
            let (w, h) = text_size(&text, px);
            let (w, h) = (f64::from(w), f64::from(h));
            let (x, y) = (num("x"), num("y"));
            let x0 = match n.attribute("text-anchor") {
                Some("middle") => x - w / 2.0,
                Some("end") => x - w,
                _ => x,
            };
            let y0 = match n.attribute("dy") {
                Some("0.76em") => y,
                Some("0.5ex") => y - h / 2.0,
                Some("-0.5ex") => y - h,
                _ => y - 0.76 * h,
            };
            TextBox {
                text,
                x0,
                y0,
                x1: x0 + w,
                y1: y0 + h,
                fill: n.attribute("fill").unwrap_or("").to_string(),
            }
        })
        .collect()
}

fn assert_no_overlap(boxes: &[&TextBox], what: &str) {
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            assert!(!a.overlaps(b), "{what}: {a:?} overlaps {b:?}");
        }
    }
}

/// The filled rectangles of an SVG with one of `fills`: (x0, y0, x1, y1).
fn rects(svg: &str, fills: &[&str]) -> Vec<(f64, f64, f64, f64)> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && fills.contains(&n.attribute("fill").unwrap_or("")))
        .map(|n| {
            let num = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
            let (x, y) = (num("x"), num("y"));
            (x, y, x + num("width"), y + num("height"))
        })
        .collect()
}

/// The box fills of the graph picture: no limit, below 0.8×, to 1×, above.
const BOX_FILLS: [&str; 4] = ["#ECECEC", "#C7E9C0", "#FDD0A2", "#FC9272"];

/// A number printed as "1.23×" (the picture's ratios) and the largest
/// error its rounding allows ("< 0.01×": above 0, below 0.005).
fn ratio(text: &str) -> (f64, f64) {
    let t = text.trim().trim_end_matches('×');
    if t == "< 0.01" {
        return (0.0025, 0.0025);
    }
    let decimals = t.split_once('.').map_or(0, |(_, d)| d.len());
    (
        t.parse().unwrap(),
        0.5 * 10f64.powi(-(decimals as i32)) + 1e-9,
    )
}

#[test]
fn the_graph_picture_shows_the_tables_figures_of_the_worst_variant() {
    let d = draw();
    let services = rows(&d.services_csv);
    let calls = rows(&d.calls_csv);
    let svg = &chart(&d, "graph").svg;
    let t = texts(svg);
    // The worst variant is the one with retries: 13 attempts per request
    // at a database of 1000/s under 100 requests/s.
    assert!(
        t.iter().any(|b| b.text.contains("Variant retries")),
        "{:?}",
        t.iter().map(|b| &b.text).collect::<Vec<_>>()
    );
    let peak_pg = mean(
        &services,
        &[("variant", "retries"), ("service", "postgres")],
        "peak_load_ratio",
    );
    assert!(peak_pg > 1.3, "{peak_pg}");
    // Each service's box: its name, and under it (same x) its detail.
    for service in ["gateway", "orders", "inventory", "postgres"] {
        let name = t.iter().find(|b| b.text == service).unwrap();
        let detail = t
            .iter()
            .find(|b| {
                (b.x0 + b.x1 - name.x0 - name.x1).abs() < 2.0
                    && b.y0 > name.y1
                    && b.y0 < name.y1 + 20.0
            })
            .unwrap_or_else(|| panic!("{service} has no detail"));
        let cap = services
            .iter()
            .find(|r| r["variant"] == "retries" && r["service"] == service)
            .unwrap()["capacity_per_s"]
            .clone();
        if cap.is_empty() {
            assert_eq!(detail.text, "no capacity limit");
            continue;
        }
        // "peak 1.42× of 1000/s"
        let (peak, of) = detail
            .text
            .strip_prefix("peak ")
            .and_then(|r| r.split_once(" of "))
            .unwrap_or_else(|| panic!("{service}: {}", detail.text));
        let (shown, tol) = ratio(peak);
        let want = mean(
            &services,
            &[("variant", "retries"), ("service", service)],
            "peak_load_ratio",
        );
        assert!((shown - want).abs() <= tol, "{service}: {shown} vs {want}");
        assert_eq!(of, format!("{cap}/s"));
    }
    // Postgres is red (above its capacity), the gateway green.
    let boxes = rects(svg, &BOX_FILLS);
    let fill_at = |service: &str| {
        let name = t.iter().find(|b| b.text == service).unwrap();
        let doc = roxmltree::Document::parse(svg).unwrap();
        let (cx, cy) = ((name.x0 + name.x1) / 2.0, (name.y0 + name.y1) / 2.0);
        doc.descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter(|n| {
                let num = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
                BOX_FILLS.contains(&n.attribute("fill").unwrap_or(""))
                    && num("x") < cx
                    && cx < num("x") + num("width")
                    && num("y") < cy
                    && cy < num("y") + num("height")
            })
            .map(|n| n.attribute("fill").unwrap().to_string())
            .next()
            .unwrap()
    };
    assert_eq!(fill_at("postgres"), "#FC9272");
    assert_eq!(fill_at("gateway"), "#C7E9C0");
    assert_eq!(fill_at("orders"), "#ECECEC");
    // Each arrow's label is its call's mean amplification in calls.csv,
    // which here is exactly the product of attempts along the path.
    let mut labels: Vec<f64> = t
        .iter()
        .filter(|b| b.fill == "#282828")
        .map(|b| ratio(&b.text).0)
        .collect();
    labels.sort_by(f64::total_cmp);
    let mut want: Vec<f64> = [
        "clients.gateway",
        "gateway.orders",
        "gateway.inventory",
        "orders.postgres",
        "inventory.postgres",
    ]
    .iter()
    .map(|call| {
        let m = mean(
            &calls,
            &[("variant", "retries"), ("call", call)],
            "amplification",
        );
        (m * 100.0).round() / 100.0
    })
    .collect();
    want.sort_by(f64::total_cmp);
    assert_eq!(labels, want);
    assert_eq!(
        want,
        [1.0, 2.0, 3.0, 4.0, 9.0],
        "attempts multiply along each path"
    );
    // No text over another, no arrow label over a box, every name and
    // detail inside its box.
    assert_no_overlap(&t.iter().collect::<Vec<_>>(), "graph");
    for label in t.iter().filter(|b| b.fill == "#282828") {
        for &(x0, y0, x1, y1) in &boxes {
            let b = TextBox {
                text: String::new(),
                x0,
                y0,
                x1,
                y1,
                fill: String::new(),
            };
            assert!(!label.overlaps(&b), "{label:?} over a box");
        }
    }
    for name in t.iter().filter(|b| b.fill == "#000000" && b.y0 > 80.0) {
        assert!(
            boxes
                .iter()
                .any(|&(x0, y0, x1, y1)| name.inside(x0, y0, x1, y1)),
            "{name:?} outside every box"
        );
    }
}

#[test]
fn one_panel_per_service_in_table_order_without_overlapping_labels() {
    let d = draw();
    let c = chart(&d, "services");
    let doc = roxmltree::Document::parse(&c.svg).unwrap();
    let root = doc.root_element();
    let fig = services_figure(&d.data).unwrap();
    let height = root.attribute("height").unwrap();
    assert_eq!(root.attribute("width"), Some("1200"));
    assert_eq!(height, "700", "four panels in a 2 × 2 grid");
    let png = png::Decoder::new(&c.png[..])
        .read_info()
        .unwrap()
        .info()
        .clone();
    assert_eq!((png.width, png.height), (1200, 700));
    let t = texts(&c.svg);
    // One title per service, each in its own panel, in the order of
    // services.csv (by depth from the clients).
    let titles = [
        ("gateway", "gateway: capacity 200000/s (dashed)"),
        ("orders", "orders: no capacity limit"),
        ("inventory", "inventory: no capacity limit"),
        ("postgres", "postgres: capacity 1000/s (dashed)"),
    ];
    let order: Vec<String> = {
        let mut seen = Vec::new();
        for r in rows(&d.services_csv) {
            if !seen.contains(&r["service"]) {
                seen.push(r["service"].clone());
            }
        }
        seen
    };
    assert_eq!(order, ["gateway", "orders", "inventory", "postgres"]);
    assert_eq!(fig.panels.len(), 4);
    for (i, (_, title)) in titles.iter().enumerate() {
        let found: Vec<&TextBox> = t.iter().filter(|b| b.text == *title).collect();
        assert_eq!(found.len(), 1, "{title}");
        let (x, y, w, h) = fig.panel_rect(i);
        let (x, y, w, h) = (f64::from(x), f64::from(y), f64::from(w), f64::from(h));
        assert!(
            found[0].inside(x, y, x + w, y + h),
            "{title} outside panel {i}"
        );
        // Each panel has its axes: ticks and the y description.
        assert!(
            t.iter()
                .filter(|b| b.text == "time (s)")
                .any(|b| b.inside(x, y, x + w, y + h)),
            "panel {i} has an x axis"
        );
    }
    // The legend names both variants once.
    for v in ["no-retries", "retries"] {
        assert_eq!(t.iter().filter(|b| b.text == v).count(), 1, "{v}");
    }
    assert_no_overlap(&t.iter().collect::<Vec<_>>(), "services");
    // The panel for postgres draws each variant's load: with retries it
    // stays above its capacity line the whole run.
    let g = d.data.graph.as_ref().unwrap();
    let pg = g.services.iter().position(|s| s == "postgres").unwrap();
    let retries = d.data.variants.iter().position(|v| v == "retries").unwrap();
    let load = &g.load[pg][retries];
    assert_eq!(load.len(), SECS as usize);
    assert!(load.iter().all(|p| p.mean > 1000.0), "{load:?}");
}

#[test]
fn the_report_has_a_services_section_and_the_same_run_gives_the_same_bytes() {
    let d = draw();
    let h = &d.html;
    let section = h
        .split_once("<h2 id=\"services\">")
        .map(|(_, s)| s)
        .unwrap()
        .split_once("<h2>")
        .unwrap()
        .0;
    for id in [
        "id=\"services\"",
        "id=\"graph\"",
        "services-table",
        "calls-table",
    ] {
        assert!(section.contains(id), "{id} in the section");
    }
    // One row per service and variant, and postgres over capacity with
    // retries is flagged.
    let table = section
        .split_once("services-table")
        .unwrap()
        .1
        .split_once("</table>")
        .unwrap()
        .0;
    assert_eq!(table.matches("<tr>").count(), 1 + 4 * 2);
    assert_eq!(table.matches("class=\"over\"").count(), 1);
    let calls = section.split_once("calls-table").unwrap().1;
    assert!(calls.contains("orders → postgres"));
    assert!(calls.contains("<td>9.00×</td>"));
    // The same run draws the same bytes.
    let again = draw();
    for (a, b) in d.charts.iter().zip(&again.charts) {
        assert_eq!(a.name, b.name);
        assert!(a.svg == b.svg && a.png == b.png, "{} differs", a.name);
    }
    assert_eq!(d.html, again.html);
}
