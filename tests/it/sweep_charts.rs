//! Sweep charts read: drawn from a constructed `summary_by_variant.csv`
//! of 120 variants (a backoff base swept over 10 ms–1 s × 30 policies with
//! long names), 30 lines get 30 distinct colour-and-marker styles, the
//! duration axis is logarithmic and labelled in ms and s, no two labels
//! overlap (measured in the embedded font, upright ones too), the success
//! axis spans the data rather than starting at 0, and the legend lies
//! beside the points, not over them. And a run's charts of many variants
//! (constructed tables of 4 to 200 variants): the time charts give 30
//! variants 30 colour-and-marker styles, in their lines and legends
//! alike, and the recovery chart's names, values and notes never overlap.

use std::collections::{BTreeMap, BTreeSet};

use stormsim::report::ChartData;
use stormsim::report::charts::{Chart, all_charts};
use stormsim::report::figure::text_size;

const BASES: [&str; 4] = ["10ms", "30ms", "100ms", "1s"];
const POLICIES: usize = 30;

fn policy(p: usize) -> String {
    format!("retry-policy-with-a-long-name-{p:02}")
}

/// Success rates from 0.847 to 0.853: policy p, base b.
fn success(p: usize, b: usize) -> f64 {
    0.847 + 0.006 * (p * BASES.len() + b) as f64 / (POLICIES * BASES.len()) as f64
}

fn data(policies: usize) -> ChartData {
    let mut csv = String::from(
        "variant,replicates,success_rate_mean,success_rate_ci95,sweep.layers.api.retry.backoff.base,sweep.layers.api.retry.policy_name\n",
    );
    for p in 0..policies {
        for (b, base) in BASES.iter().enumerate() {
            csv.push_str(&format!(
                "v{p}-{b},3,{:.6},0.0001,{base},{}\n",
                success(p, b),
                policy(p)
            ));
        }
    }
    ChartData::from_bytes(b"", b"", csv.as_bytes(), None).unwrap()
}

fn chart<'a>(charts: &'a [Chart], name: &str) -> &'a Chart {
    charts
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no chart {name}"))
}

/// A text of an SVG and its box in pixels (upright text turned as the
/// SVG turns it).
#[derive(Debug)]
struct TextBox {
    text: String,
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl TextBox {
    fn overlaps(&self, o: &TextBox) -> bool {
        // One pixel of slack: anti-aliased edges may touch.
        self.x0 < o.x1 - 1.0 && o.x0 < self.x1 - 1.0 && self.y0 < o.y1 - 1.0 && o.y0 < self.y1 - 1.0
    }
}

/// Every text of an SVG (but empty ones, which draw nothing), measured in the embedded font at the size the
/// PNG draws it (the SVG's `font-size` × 1.24).
fn texts(svg: &str) -> Vec<TextBox> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("text") && !n.text().unwrap_or("").trim().is_empty())
        .map(|n| {
            let num = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
            let text = n.text().unwrap_or("").trim().to_string();
            let px = num("font-size") * 1.24;
            let (w, h) = text_size(&text, px);
            let (w, h) = (f64::from(w), f64::from(h));
            let (x, y) = (num("x"), num("y"));
            // The box before turning, relative to the anchor (x, y).
            let dx0 = match n.attribute("text-anchor") {
                Some("middle") => -w / 2.0,
                Some("end") => -w,
                _ => 0.0,
            };
            let dy0 = match n.attribute("dy") {
                Some("0.76em") => 0.0,
                Some("0.5ex") => -h / 2.0,
                Some("-0.5ex") => -h,
                _ => -0.76 * h,
            };
            let (dx1, dy1) = (dx0 + w, dy0 + h);
            let (a, b, c, d) = match n.attribute("transform") {
                None => (dx0, dy0, dx1, dy1),
                // rotate(270) about the anchor: (dx, dy) → (dy, −dx).
                Some(t) if t.starts_with("rotate(270") => (dy0, -dx1, dy1, -dx0),
                // rotate(90): (dx, dy) → (−dy, dx).
                Some(t) if t.starts_with("rotate(90") => (-dy1, dx0, -dy0, dx1),
                Some(t) => panic!("unexpected transform {t}"),
            };
            TextBox {
                text,
                x0: x + a,
                y0: y + b,
                x1: x + c,
                y1: y + d,
            }
        })
        .collect()
}

fn assert_no_overlap(svg: &str, what: &str) {
    let boxes = texts(svg);
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            assert!(!a.overlaps(b), "{what}: {a:?} overlaps {b:?}");
        }
    }
}

/// A marker: its shape (`circle`, or a polygon's corners on a 3 × 3 grid
/// of its box) and fill, and its centre's x.
#[derive(Debug)]
struct Marker {
    style: (String, String),
    x: f64,
}

/// The markers of an SVG: circles, and polygons of 3 or 4 corners no
/// more than 16 pixels across (the CI bands are polygons too, larger and
/// translucent).
fn markers(svg: &str) -> Vec<Marker> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let mut out = Vec::new();
    for n in doc.descendants() {
        let fill = n.attribute("fill").unwrap_or("").to_string();
        if n.attribute("opacity").is_some_and(|o| o != "1") {
            continue;
        }
        if n.has_tag_name("circle") {
            let num = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
            out.push(Marker {
                style: ("circle".into(), fill),
                x: num("cx"),
            });
        } else if n.has_tag_name("polygon") {
            let pts: Vec<(f64, f64)> = n
                .attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            let (xs, ys): (Vec<f64>, Vec<f64>) = pts.iter().copied().unzip();
            let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let (x0, x1, y0, y1) = (min(&xs), max(&xs), min(&ys), max(&ys));
            if pts.len() > 4 || x1 - x0 > 16.0 || y1 - y0 > 16.0 {
                continue;
            }
            let grid: Vec<String> = pts
                .iter()
                .map(|(x, y)| {
                    format!(
                        "{}{}",
                        ((x - x0) / (x1 - x0) * 2.0).round(),
                        ((y - y0) / (y1 - y0) * 2.0).round()
                    )
                })
                .collect();
            out.push(Marker {
                style: (grid.join(" "), fill),
                x: (x0 + x1) / 2.0,
            });
        }
    }
    out
}

#[test]
fn thirty_lines_get_thirty_styles_and_the_legend_is_beside_the_points() {
    let charts = all_charts(&data(POLICIES)).unwrap();
    let c = chart(
        &charts,
        "sweep-success_rate-vs-layers.api.retry.backoff.base",
    );
    let labels = texts(&c.svg);
    // The legend: one label per policy (its title is the field's name).
    let legend: Vec<&TextBox> = labels
        .iter()
        .filter(|t| t.text.starts_with("retry-policy"))
        .collect();
    assert_eq!(legend.len(), POLICIES, "every policy in the legend");
    let legend_left = legend.iter().map(|t| t.x0).fold(f64::INFINITY, f64::min);
    assert!(labels.iter().any(|t| t.text == "policy_name"));
    let all = markers(&c.svg);
    // Markers in the legend sit just left of its labels; every other
    // marker is a point of the plot, clear of the legend.
    let (in_legend, points): (Vec<&Marker>, Vec<&Marker>) =
        all.iter().partition(|m| m.x > legend_left - 40.0);
    assert_eq!(points.len(), POLICIES * BASES.len());
    assert_eq!(in_legend.len(), POLICIES);
    let mut per_style: BTreeMap<&(String, String), (usize, usize)> = BTreeMap::new();
    for m in &points {
        per_style.entry(&m.style).or_default().0 += 1;
    }
    for m in &in_legend {
        per_style.entry(&m.style).or_default().1 += 1;
    }
    assert_eq!(
        per_style.len(),
        POLICIES,
        "30 distinct styles: {per_style:?}"
    );
    for (style, counts) in &per_style {
        assert_eq!(
            *counts,
            (BASES.len(), 1),
            "{style:?}: one line's points and its legend entry"
        );
    }
    let shapes: BTreeSet<&String> = per_style.keys().map(|s| &s.0).collect();
    let fills: BTreeSet<&String> = per_style.keys().map(|s| &s.1).collect();
    assert_eq!((shapes.len(), fills.len()), (5, 9), "{shapes:?} {fills:?}");
    assert_no_overlap(&c.svg, &c.name);
}

#[test]
fn a_duration_sweep_over_more_than_ten_times_gets_a_log_axis_with_units() {
    let charts = all_charts(&data(3)).unwrap();
    let c = chart(
        &charts,
        "sweep-success_rate-vs-layers.api.retry.backoff.base",
    );
    let labels = texts(&c.svg);
    let x_of = |s: &str| {
        let t = labels
            .iter()
            .find(|t| t.text == s)
            .unwrap_or_else(|| panic!("no tick {s}: {labels:?}"));
        (t.x0 + t.x1) / 2.0
    };
    let (a, b, c1, d) = (x_of("10 ms"), x_of("30 ms"), x_of("100 ms"), x_of("1 s"));
    assert!(a < b && b < c1 && c1 < d);
    // Equal ratios, equal distances: 10 ms → 100 ms as far as 100 ms → 1 s,
    // and 30 ms at log10(3) of the way from 10 ms to 100 ms.
    assert!(((c1 - a) - (d - c1)).abs() <= 2.0, "{a} {c1} {d}");
    assert!(((b - a) / (c1 - a) - 3f64.log10()).abs() < 0.01);
    assert!(
        labels
            .iter()
            .any(|t| t.text == "layers.api.retry.backoff.base (log scale)")
    );
    // The success axis fits 0.847–0.853: every y tick label lies near it.
    let y_ticks: Vec<f64> = labels
        .iter()
        .filter(|t| t.x1 < a - 20.0)
        .filter_map(|t| t.text.parse::<f64>().ok())
        .collect();
    assert!(y_ticks.len() >= 4, "{y_ticks:?}");
    assert!(
        y_ticks.iter().all(|&y| (0.845..=0.855).contains(&y)),
        "{y_ticks:?}"
    );
    // Distinct labels for distinct ticks (enough decimals).
    let distinct: BTreeSet<String> = y_ticks.iter().map(|y| y.to_string()).collect();
    assert_eq!(distinct.len(), y_ticks.len());
}

#[test]
fn long_category_labels_turn_upright_and_never_overlap() {
    for policies in [POLICIES, 200] {
        let charts = all_charts(&data(policies)).unwrap();
        let c = chart(
            &charts,
            "sweep-success_rate-vs-layers.api.retry.policy_name",
        );
        // Upright labels, each a policy's name or (when cut) its end.
        let ticks: Vec<TextBox> = texts(&c.svg)
            .into_iter()
            .filter(|t| t.y1 - t.y0 > t.x1 - t.x0 && !t.text.contains("success"))
            .collect();
        let names: BTreeSet<String> = ticks
            .iter()
            .map(|t| {
                let end = t.text.trim_start_matches('…');
                let name = (0..policies)
                    .map(policy)
                    .find(|p| p.ends_with(end))
                    .unwrap_or_else(|| panic!("{:?} is no policy's", t.text));
                assert!(
                    t.text == name || end.len() <= 3,
                    "{:?}: cut to what tells it apart",
                    t.text
                );
                name
            })
            .collect();
        assert_eq!(names.len(), ticks.len(), "each label a different policy");
        // 30 fit side by side upright; of 200, every few.
        if policies == POLICIES {
            assert_eq!(ticks.len(), POLICIES);
        } else {
            assert!((20..policies).contains(&ticks.len()), "{}", ticks.len());
        }
        assert_no_overlap(&c.svg, &format!("{} ({policies})", c.name));
    }
}

/// The variants' names in the order the report's comparison table lists
/// them, and what it says the order is.
fn table_order(d: &ChartData) -> (Vec<String>, String) {
    let html = stormsim::report::html::report_html(d, &[]).unwrap();
    let start = html
        .find("<h2 id=\"comparison\">")
        .expect("a comparison table");
    let section = &html[start..];
    let section = &section[..section.find("</table>").unwrap()];
    assert_eq!(html.matches("id=\"comparison-table\"").count(), 1);
    let names = section
        .split("<tr><td>")
        .skip(1)
        .map(|row| {
            let after = row.split("</span>").nth(1).unwrap();
            after[..after.find("</td>").unwrap()].to_string()
        })
        .collect();
    let how = section[section.find("<p>").unwrap()..section.find("</p>").unwrap()].to_string();
    (names, how)
}

#[test]
fn one_table_ranks_the_variants_best_first() {
    // No SLO: success rate (highest first), then amplification (lowest).
    let csv = "variant,replicates,success_rate_mean,success_rate_ci95,amplification_mean\n\
               a,3,0.9,0.01,1.5\nb,3,0.95,0.01,2.0\nc,3,0.95,0.01,1.2\nd,3,,,1.0\n";
    let d = ChartData::from_bytes(b"", b"", csv.as_bytes(), None).unwrap();
    let (names, how) = table_order(&d);
    assert_eq!(names, ["c", "b", "a", "d"]);
    assert!(how.contains("by success rate"), "{how}");
    // An SLO: by its rank, whatever the success rates.
    let csv = "variant,replicates,success_rate_mean,slo_pass,slo_pass_fraction,slo_failed,slo_rank\n\
               a,3,0.99,false,0,x,3\nb,3,0.9,true,1,,1\nc,3,0.95,false,0.67,y,2\n";
    let d = ChartData::from_bytes(b"", b"", csv.as_bytes(), None).unwrap();
    let (names, how) = table_order(&d);
    assert_eq!(names, ["b", "c", "a"]);
    assert!(how.contains("by the SLO"), "{how}");
    // The rank column counts from 1.
    let html = stormsim::report::html::report_html(&d, &[]).unwrap();
    assert!(html.contains("<tr><td>1</td><td class=\"l\"><span class=\"sw\""));
}

/// The stability map of the bundled scenario: one cell per sweep point,
/// each printing and coloured by the `recovered_fraction` of
/// `summary_by_variant.csv` for its load and spike length, load ascending
/// left to right, spike length ascending bottom to top.
#[test]
fn the_stability_map_shows_the_summary_fractions() {
    let dir = tempfile::tempdir().unwrap();
    assert_cmd::Command::cargo_bin("stormsim")
        .unwrap()
        .args(["run", "scenarios/stability-map.yaml", "--quiet", "--out"])
        .arg(dir.path())
        .assert()
        .success();
    let name = "stability-recovered_fraction-clients.arrival.rate-x-clients.schedule.0.for";
    let svg = std::fs::read_to_string(dir.path().join(format!("charts/{name}.svg"))).unwrap();
    assert!(dir.path().join(format!("charts/{name}.png")).exists());
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains(&format!("<figure id=\"{name}\">")));
    // The expected grid, from the table.
    let table = std::fs::read_to_string(dir.path().join("summary_by_variant.csv")).unwrap();
    let mut rows = table.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (f, rate, len) = (
        col("recovered_fraction"),
        col("sweep.clients.arrival.rate"),
        col("sweep.clients.schedule.0.for"),
    );
    let rates = ["100/s", "150/s", "300/s", "450/s", "570/s"];
    let lens = ["100ms", "200ms", "300ms", "400ms", "800ms"];
    let mut want = vec![vec![String::new(); rates.len()]; lens.len()];
    for r in rows {
        let c: Vec<&str> = r.split(',').collect();
        let x = rates.iter().position(|v| *v == c[rate]).unwrap();
        let y = lens.iter().position(|v| *v == c[len]).unwrap();
        let v: f64 = c[f].parse().unwrap();
        want[y][x] = format!("{:.0}%", v * 100.0);
    }
    // Not all alike: the map has a boundary.
    assert!(want.iter().flatten().any(|c| c == "0%"));
    assert!(want.iter().flatten().any(|c| c == "100%"));
    // The drawn cells: texts ending in % inside the grid (the colour
    // scale's labels lie right of it), by position.
    let labels = texts(&svg);
    let tick_x: Vec<f64> = ["100/s", "150/s", "300/s", "450/s", "570/s"]
        .iter()
        .map(|s| {
            let t = labels.iter().find(|t| t.text == *s).unwrap();
            (t.x0 + t.x1) / 2.0
        })
        .collect();
    let tick_y: Vec<f64> = ["100 ms", "200 ms", "300 ms", "400 ms", "800 ms"]
        .iter()
        .map(|s| {
            let t = labels.iter().find(|t| t.text == *s).unwrap();
            (t.y0 + t.y1) / 2.0
        })
        .collect();
    let cells: Vec<&TextBox> = labels
        .iter()
        .filter(|t| t.text.ends_with('%') && t.x0 < tick_x[4] + 100.0)
        .collect();
    assert_eq!(cells.len(), rates.len() * lens.len());
    let nearest = |v: f64, ticks: &[f64]| {
        (0..ticks.len())
            .min_by(|&a, &b| (ticks[a] - v).abs().total_cmp(&(ticks[b] - v).abs()))
            .unwrap()
    };
    let mut seen = vec![vec![false; rates.len()]; lens.len()];
    for t in cells {
        let x = nearest((t.x0 + t.x1) / 2.0, &tick_x);
        let y = nearest((t.y0 + t.y1) / 2.0, &tick_y);
        assert_eq!(t.text, want[y][x], "cell {} × {}", rates[x], lens[y]);
        assert!(!std::mem::replace(&mut seen[y][x], true));
    }
    assert_no_overlap(&svg, name);
    // Each cell's colour is the scale's colour for its fraction.
    let fills: BTreeSet<String> = roxmltree::Document::parse(&svg)
        .unwrap()
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .filter_map(|n| n.attribute("fill").map(str::to_string))
        .collect();
    for v in [0.0, 1.0 / 3.0, 1.0] {
        let c = stormsim::report::stability::cell_colour(Some(v));
        let hex = format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        assert!(fills.contains(&hex), "{hex} in {fills:?}");
    }
}

fn variant(v: usize) -> String {
    format!("retry-variant-with-a-long-name-{v:03}")
}

/// A run's tables of `variants` variants, 3 replicates each, 120 one-second
/// buckets: variant v's load rises with v; every 7th variant has one
/// metastable replicate, every 11th one aborted, every 13th no verdict
/// at all (no incident).
fn run(variants: usize) -> ChartData {
    run_of(&(0..variants).map(variant).collect::<Vec<_>>())
}

/// `run`'s tables for variants of these names.
fn run_of(names: &[String]) -> ChartData {
    let mut ts = String::from(
        "variant,replicate,t_s,offered,dependency_attempts,goodput,latency_p50_ms,latency_p99_ms\n",
    );
    let mut summary =
        String::from("variant,replicate,recovery_time_s,recovered,capacity_per_s,aborted\n");
    let mut by_variant = String::from(
        "variant,replicates,recovery_time_s_mean,recovery_time_s_ci95,recovered_fraction\n",
    );
    for (v, name) in names.iter().enumerate() {
        for r in 0..3 {
            for t in 0..120 {
                let load = 100.0 + v as f64 * 3.0 + (t as f64 * 0.1).sin() * 20.0 + r as f64;
                ts.push_str(&format!(
                    "{name},{r},{t},100,{load:.3},{:.3},{:.3},{:.3}\n",
                    load * 0.9,
                    5.0 + v as f64,
                    20.0 + v as f64
                ));
            }
            let (time, recovered, aborted) = match r {
                _ if v % 13 == 12 => ("", "", ""),
                0 if v % 7 == 6 => ("", "false", ""),
                1 if v % 11 == 10 => ("", "", "guard rail"),
                _ => (
                    &*format!("{:.3}", 10.0 + v as f64 * 0.37 + r as f64),
                    "true",
                    "",
                ),
            };
            summary.push_str(&format!("{name},{r},{time},{recovered},400,{aborted}\n"));
        }
        let mean = if v % 13 == 12 {
            String::new()
        } else {
            format!("{:.3}", 11.0 + v as f64 * 0.37)
        };
        by_variant.push_str(&format!("{name},3,{mean},1.5,0.67\n"));
    }
    ChartData::from_bytes(
        ts.as_bytes(),
        summary.as_bytes(),
        by_variant.as_bytes(),
        None,
    )
    .unwrap()
}

#[test]
fn the_recovery_chart_never_overlaps_its_texts() {
    for variants in [4, 30, 200] {
        let charts = all_charts(&run(variants)).unwrap();
        let c = chart(&charts, "recovery");
        assert_no_overlap(&c.svg, &format!("recovery ({variants})"));
        let labels = texts(&c.svg);
        let names: BTreeSet<&str> = labels
            .iter()
            .filter_map(|t| {
                let end = t.text.trim_start_matches('…');
                (t.text.contains("…") || t.text.starts_with("retry-variant"))
                    .then(|| {
                        (0..variants)
                            .find(|&v| variant(v).ends_with(end))
                            .map(|_| end)
                    })
                    .flatten()
            })
            .collect();
        let values = labels.iter().filter(|t| t.text.ends_with(" s")).count();
        let metastable = labels
            .iter()
            .filter(|t| t.text.starts_with("metastable:"))
            .count();
        match variants {
            // Room for every name, value and note, in full.
            4 => {
                assert_eq!(names.len(), 4, "{labels:?}");
                assert_eq!(values, 4, "{labels:?}");
                assert_eq!(metastable, 0);
            }
            // Every name (upright); most values ("17.28 s") are wider
            // than their columns and left out, the metastable notes
            // shortened ("1/3").
            30 => {
                assert_eq!(names.len(), 30, "{labels:?}");
                assert!(values < 5, "{labels:?}");
                assert_eq!(labels.iter().filter(|t| t.text == "1/3").count(), 4);
            }
            // Names thinned out, none overlapping.
            _ => assert!((20..200).contains(&names.len()), "{}", names.len()),
        }
    }
    // A metastable variant among few: its note in the longest wording
    // that fits its column, and every value.
    let charts = all_charts(&run(7)).unwrap();
    let c = chart(&charts, "recovery");
    let labels = texts(&c.svg);
    assert!(
        labels.iter().any(|t| t.text == "1 of 3 metastable"),
        "{labels:?}"
    );
    assert_eq!(labels.iter().filter(|t| t.text.ends_with(" s")).count(), 7);
    assert_no_overlap(&c.svg, "recovery (7)");
}

#[test]
fn thirty_variants_over_time_get_thirty_styles() {
    let charts = all_charts(&run(30)).unwrap();
    for name in ["load", "goodput", "amplification", "latency"] {
        let c = chart(&charts, name);
        let labels = texts(&c.svg);
        // The legend's labels (cut alike when too long): its left edge.
        let legend: Vec<&TextBox> = labels
            .iter()
            .filter(|t| t.text.starts_with("retry-variant") || t.text.starts_with('…'))
            .collect();
        assert_eq!(legend.len(), 30, "{name}: every variant in the legend");
        let legend_left = legend.iter().map(|t| t.x0).fold(f64::INFINITY, f64::min);
        let (in_legend, points): (Vec<Marker>, Vec<Marker>) = markers(&c.svg)
            .into_iter()
            .partition(|m| m.x > legend_left - 40.0);
        let mut per_style: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
        for m in points {
            per_style.entry(m.style).or_default().0 += 1;
        }
        for m in in_legend {
            per_style.entry(m.style).or_default().1 += 1;
        }
        // Goodput: the offered load, the same for all, in grey circles.
        per_style.retain(|s, _| s.1 != "#5A5A5A");
        assert_eq!(per_style.len(), 30, "{name}: 30 styles: {per_style:?}");
        // 120 points a line: a marker every 15th; latency's p50 and p99
        // both.
        let per_line = if name == "latency" { 16 } else { 8 };
        for (style, counts) in &per_style {
            assert_eq!(*counts, (per_line, 1), "{name} {style:?}");
        }
        let shapes: BTreeSet<&String> = per_style.keys().map(|s| &s.0).collect();
        let fills: BTreeSet<&String> = per_style.keys().map(|s| &s.1).collect();
        assert_eq!((shapes.len(), fills.len()), (5, 9), "{name}");
        assert_no_overlap(&c.svg, name);
    }
}

/// A sweep's variant names: `max_attempts=1 base=10ms`, … for every
/// combination of the fields' values (the names `stormsim run` gives).
fn sweep_names(fields: &[(&str, &[&str])]) -> Vec<String> {
    let mut names = vec![String::new()];
    for (field, values) in fields {
        names = names
            .iter()
            .flat_map(|n| {
                values.iter().map(move |v| {
                    let sep = if n.is_empty() { "" } else { " " };
                    format!("{n}{sep}{field}={v}")
                })
            })
            .collect();
    }
    names
}

const BASES_6: [&str; 6] = ["10ms", "22ms", "46ms", "100ms", "220ms", "1s"];

/// The texts of a chart's legend: right of every number (the x axis's
/// ticks end at the plot's right edge).
fn legend_texts(svg: &str) -> Vec<String> {
    let all = texts(svg);
    let right = all
        .iter()
        .filter(|t| t.text.parse::<f64>().is_ok())
        .map(|t| t.x1)
        .fold(f64::NEG_INFINITY, f64::max);
    all.into_iter()
        .filter(|t| t.x0 > right)
        .map(|t| t.text)
        .collect()
}

/// The upright texts of a chart but its y axis's description and
/// numbers (a tick label "0" is higher than wide): the recovery chart's
/// variant names.
fn upright_texts(svg: &str, y_desc: &str) -> Vec<String> {
    texts(svg)
        .into_iter()
        .filter(|t| t.y1 - t.y0 > t.x1 - t.x0 && t.text != y_desc)
        .filter(|t| t.text.parse::<f64>().is_err())
        .map(|t| t.text)
        .collect()
}

fn distinct(texts: &[String]) -> usize {
    texts.iter().collect::<BTreeSet<_>>().len()
}

/// A 6 × 6 sweep's 36 variants (`max_attempts=1 base=10ms`, …): cut at
/// their end, the time charts' legends read `max_attempts=1 base…` six
/// times over. Every chart names the 36 apart: 36 distinct legend texts,
/// 36 distinct names under the recovery chart, the fields' names moved
/// into the legend's title and the axis's description.
#[test]
fn the_variants_of_a_two_field_sweep_keep_distinct_labels() {
    let attempts = ["1", "2", "3", "4", "5", "6"];
    let names = sweep_names(&[("max_attempts", &attempts), ("base", &BASES_6)]);
    assert_eq!(names.len(), 36);
    let charts = all_charts(&run_of(&names)).unwrap();
    for name in ["load", "goodput", "amplification", "latency"] {
        let c = chart(&charts, name);
        let legend = legend_texts(&c.svg);
        let labels: Vec<String> = legend
            .iter()
            .filter(|t| !t.starts_with("capacity") && !t.starts_with("offered"))
            .cloned()
            .collect();
        assert_eq!(labels[0], "max_attempts, base", "{name}: the title");
        assert_eq!(labels.len(), 37, "{name}: {legend:?}");
        assert_eq!(distinct(&labels), 37, "{name}: {labels:?}");
        assert!(labels.contains(&"4, 220ms".to_string()), "{labels:?}");
        assert_no_overlap(&c.svg, name);
    }
    let c = chart(&charts, "recovery");
    let labels = upright_texts(&c.svg, "recovery time (s)");
    assert_eq!(labels.len(), 36, "{labels:?}");
    assert_eq!(distinct(&labels), 36, "{labels:?}");
    assert!(
        texts(&c.svg)
            .iter()
            .any(|t| t.text == "variant (max_attempts, base)")
    );
    assert_no_overlap(&c.svg, "recovery");
    // 60 variants of three fields: every name drawn is a different one
    // (cut at the end, 12 texts told 60 variants).
    let names = sweep_names(&[
        ("max_attempts", &["1", "3"]),
        ("base", &BASES_6),
        ("timeout", &["50ms", "100ms", "200ms", "400ms", "800ms"]),
    ]);
    let charts = all_charts(&run_of(&names)).unwrap();
    let c = chart(&charts, "recovery");
    let labels = upright_texts(&c.svg, "recovery time (s)");
    assert!(labels.len() >= 30, "{labels:?}");
    assert_eq!(distinct(&labels), labels.len(), "{labels:?}");
    assert_no_overlap(&c.svg, "recovery (60)");
    let c = chart(&charts, "load");
    let legend = legend_texts(&c.svg);
    assert_eq!(distinct(&legend), legend.len(), "{legend:?}");
}

/// With 2 replicates the 95% CI half-width of a success rate (Student t,
/// 1 degree of freedom) can be 2.697: drawn as it is, the band runs from
/// −2.4 to 3.2 and fitting the axis to it flattens 0.71 against 0.26.
/// Bands are clipped to what the figure can be (a fraction to 0–1,
/// counts, ratios and times to 0 and up) and the axis fits the points
/// and the clipped bands.
#[test]
fn ci_bands_are_clipped_to_the_figures_range() {
    let mut csv = String::from(
        "variant,replicates,success_rate_mean,success_rate_ci95,peak_load_ratio_mean,peak_load_ratio_ci95,sweep.layers.api.retry.max_attempts,sweep.layers.api.retry.backoff.base\n",
    );
    for (a, rate, ci) in [(2, 0.71, 0.14), (3, 0.26, 2.697)] {
        for base in ["10ms", "22ms"] {
            csv.push_str(&format!(
                "max_attempts={a} base={base},2,{rate},{ci},0.4,3.1,{a},{base}\n"
            ));
        }
    }
    let d = ChartData::from_bytes(b"", b"", csv.as_bytes(), None).unwrap();
    let charts = all_charts(&d).unwrap();
    let sweep: Vec<&Chart> = charts
        .iter()
        .filter(|c| c.name.starts_with("sweep-"))
        .collect();
    assert_eq!(sweep.len(), 4);
    for c in sweep {
        // The y ticks: numbers left of the plot.
        let labels = texts(&c.svg);
        // (The plot's left edge: 18 pixels of margin and 84 of labels.)
        let first_x = 100.0;
        let y: Vec<f64> = labels
            .iter()
            .filter(|t| t.x1 < first_x)
            .filter_map(|t| t.text.parse::<f64>().ok())
            .collect();
        assert!(y.len() >= 4, "{}: {y:?}", c.name);
        let (lo, hi) = y
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        assert!(lo >= 0.0, "{}: {y:?}", c.name);
        if c.name.starts_with("sweep-success_rate") {
            assert!(hi <= 1.0, "{}: {y:?}", c.name);
            // The points span most of the axis.
            assert!(hi - lo <= 1.0);
        } else {
            // 0.4 + 3.1: the band's top, not its bottom at −2.7.
            assert!((3.4..=4.0).contains(&hi), "{}: {y:?}", c.name);
        }
        // No band reaches outside the plot (its polygons' y within the
        // ticks' span).
        let doc = roxmltree::Document::parse(&c.svg).unwrap();
        let tick_y = |v: f64| {
            labels
                .iter()
                .find(|t| t.text.parse::<f64>().ok() == Some(v) && t.x1 < first_x)
                .map(|t| (t.y0 + t.y1) / 2.0)
                .unwrap()
        };
        let (top, bottom) = (tick_y(hi) - 40.0, tick_y(lo) + 2.0);
        for n in doc.descendants().filter(|n| n.has_tag_name("polygon")) {
            for p in n.attribute("points").unwrap().split_whitespace() {
                let y: f64 = p.split_once(',').unwrap().1.parse().unwrap();
                assert!(
                    (top..=bottom).contains(&y),
                    "{}: a polygon at y {y} outside {top}..{bottom}",
                    c.name
                );
            }
        }
    }
}
