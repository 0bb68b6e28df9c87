//! Charts and report.html: every chart is written as valid SVG and PNG for
//! a run with several variants, the same seed gives the same bytes, and
//! `stormsim plot` redraws byte-identical files from the CSV tables alone,
//! sweep charts included; and the notebook colours variants as they do.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

const CHARTS: [&str; 5] = ["load", "amplification", "goodput", "latency", "recovery"];

fn stormsim() -> Command {
    Command::cargo_bin("stormsim").unwrap()
}

fn run_quickstart(out: &Path) {
    stormsim()
        .args(["run", "scenarios/quickstart.yaml", "--quiet", "--out"])
        .arg(out)
        .assert()
        .success();
}

fn check_svg(path: &Path) {
    check_svg_sized(path, 1200, 700);
}

fn check_svg_sized(path: &Path, width: u32, height: u32) {
    let text = fs::read_to_string(path).unwrap();
    assert!(
        text.starts_with("<svg"),
        "{} starts with <svg",
        path.display()
    );
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not well-formed XML: {e}", path.display()));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some(width.to_string().as_str()));
    assert_eq!(root.attribute("height"), Some(height.to_string().as_str()));
    assert!(
        doc.descendants().any(|n| n.has_tag_name("text")),
        "has text"
    );
}

fn check_png(path: &Path) {
    check_png_sized(path, 1200, 700);
}

fn check_png_sized(path: &Path, width: u32, height: u32) {
    let decoder = png::Decoder::new(fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(
        (info.width, info.height),
        (width, height),
        "{}",
        path.display()
    );
    let bytes = &buf[..info.buffer_size()];
    let non_white = bytes
        .chunks(3)
        .filter(|p| p.iter().any(|&c| c < 250))
        .count();
    assert!(non_white > 10_000, "{} has a drawing", path.display());
}

/// Every file under `dir/charts` and report.html, sorted: (name, bytes).
fn visuals(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(dir.join("charts"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (PathBuf::from(p.file_name().unwrap()), fs::read(&p).unwrap())
        })
        .collect();
    out.push((
        "report.html".into(),
        fs::read(dir.join("report.html")).unwrap(),
    ));
    out.sort();
    out
}

#[test]
fn every_chart_is_valid_svg_and_png_and_reruns_are_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run_quickstart(&a);
    run_quickstart(&b);
    for c in CHARTS {
        check_svg(&a.join(format!("charts/{c}.svg")));
        check_png(&a.join(format!("charts/{c}.png")));
    }
    // A chain of one layer is one service: no `services` or `graph`
    // chart, no services section (the `load` chart is its one panel).
    assert_eq!(
        fs::read_dir(a.join("charts")).unwrap().count(),
        2 * CHARTS.len()
    );
    let html = fs::read_to_string(a.join("report.html")).unwrap();
    assert!(!html.contains("id=\"services\""));
    assert!(html.contains("retries-full-jitter") && html.contains("no-retries"));
    assert!(!html.contains("src=\"http") && !html.contains("<script"));
    assert_eq!(visuals(&a), visuals(&b), "same seed, same chart bytes");
}

#[test]
fn plot_redraws_byte_identical_files_from_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    run_quickstart(&out);
    let before = visuals(&out);
    fs::remove_dir_all(out.join("charts")).unwrap();
    fs::remove_file(out.join("report.html")).unwrap();
    stormsim().arg("plot").arg(&out).assert().success();
    assert_eq!(visuals(&out), before);
    // The tables are untouched.
    assert!(out.join("timeseries.csv").exists() && out.join("scenario.resolved.yaml").exists());
}

#[test]
fn two_layers_are_two_services_with_their_charts_and_plot_redraws_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("two");
    // The quickstart behind one more layer: services `client` (a hop)
    // and `dependency`.
    stormsim()
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--quiet",
            "--set",
            "layers=[{name: edge, retry: {max_attempts: 2}}, {name: client, timeout: 500ms, retry: {max_attempts: 4}}]",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    // Two panels side by side; the picture: one row of boxes.
    check_svg_sized(&out.join("charts/services.svg"), 1200, 700);
    check_png_sized(&out.join("charts/services.png"), 1200, 700);
    check_svg_sized(&out.join("charts/graph.svg"), 1200, 420);
    check_png_sized(&out.join("charts/graph.png"), 1200, 420);
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    let section = html.split_once("<h2 id=\"services\">").unwrap().1;
    assert!(section.contains("<svg") && section.contains("charts/graph.svg"));
    assert!(section.contains("edge</td><td class=\"l\" rowspan=\"2\">clients → client"));
    let before = visuals(&out);
    fs::remove_dir_all(out.join("charts")).unwrap();
    fs::remove_file(out.join("report.html")).unwrap();
    stormsim().arg("plot").arg(&out).assert().success();
    assert_eq!(visuals(&out), before, "plot redraws the same bytes");
    // A folder from before the graph tables: no graph charts, no error.
    for t in ["services.csv", "services_timeseries.csv", "calls.csv"] {
        fs::remove_file(out.join(t)).unwrap();
    }
    stormsim().arg("plot").arg(&out).assert().success();
    assert!(!out.join("charts/services.svg").exists());
    assert!(out.join("charts/load.svg").exists());
}

#[test]
fn plot_on_a_missing_folder_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    stormsim()
        .arg("plot")
        .arg(dir.path().join("nothing"))
        .assert()
        .code(2);
}

#[test]
fn sweep_columns_give_sweep_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    // A 2 × 2 sweep of one variant.
    stormsim()
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--quiet",
            "--replicates",
            "2",
            "--set",
            "variants=[{name: s, set: {}}]",
            "--set",
            "sweep={layers.client.retry.max_attempts: [1, 4], layers.client.retry.jitter: [full, none]}",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        summary
            .lines()
            .next()
            .unwrap()
            .ends_with(",sweep.layers.client.retry.max_attempts,sweep.layers.client.retry.jitter")
    );
    stormsim().arg("plot").arg(&out).assert().success();
    for fig in [
        "amplification",
        "peak_load_ratio",
        "success_rate",
        "goodput",
        "latency_p99_ms",
        "recovery_time_s",
    ] {
        for param in [
            "layers.client.retry.max_attempts",
            "layers.client.retry.jitter",
        ] {
            let stem = format!("charts/sweep-{fig}-vs-{param}");
            check_svg(&out.join(format!("{stem}.svg")));
            check_png(&out.join(format!("{stem}.png")));
        }
    }
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("sweep-amplification-vs-layers.client.retry.max_attempts"));
    // And the sweep charts are reproducible too.
    let first = visuals(&out);
    stormsim().arg("plot").arg(&out).assert().success();
    assert_eq!(visuals(&out), first);
}

/// `notebooks/capacity-review.ipynb` colours variants as the charts do:
/// its palette is the charts' (Paul Tol's "muted"), in their order.
#[test]
fn the_notebook_colours_variants_as_the_charts_do() {
    let nb = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("notebooks/capacity-review.ipynb"),
    )
    .unwrap();
    let cell: serde_json::Value = serde_json::from_str(&nb).unwrap();
    let code: String = cell["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["source"].as_array().cloned().unwrap_or_default())
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect();
    let start = code.find("PALETTE = [").expect("a PALETTE list");
    let list = &code[start..start + code[start..].find(']').unwrap()];
    let hexes: Vec<String> = list
        .split('"')
        .filter(|s| s.starts_with('#'))
        .map(str::to_ascii_lowercase)
        .collect();
    let want: Vec<String> = (0..stormsim::report::figure::PALETTE.len())
        .map(stormsim::report::figure::css_colour)
        .collect();
    assert_eq!(hexes, want);
    assert!(!code.contains("tab10"), "no other palette named");
}

/// An api of replicas of 10 workers at 10 ms (1000/s each) under 1500/s,
/// with a brownout to half its capacity over [20 s, 30 s): autoscaled from
/// 2 (target 0.5, a decision every 5 s, serving 10 s later) or a fixed
/// fleet of 2.
const CHANGING: &str = "name: changing
seed: 4
duration: 60s
bucket: 5s
clients:
  arrival: { kind: poisson, rate: 1500/s }
  calls: { to: api, timeout: 1s }
services:
  - name: api
    replicas: 2
    concurrency: 10
    service_time: { dist: constant, value: 10ms }
    queue: { capacity: 200 }
    incidents:
      - { kind: brownout, start: 20s, end: 30s, capacity: 0.5 }
    autoscale: { target_utilization: 0.5, min: 2, max: 8, interval: 5s, provision: 10s }
variants:
  - { name: autoscaled, set: {} }
  - { name: fixed, set: { services.api.autoscale: null } }
";

#[test]
fn the_load_chart_draws_capacity_as_it_changes() {
    use stormsim::report::ChartData;
    use stormsim::report::charts::load_figure;
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("changing.yaml");
    fs::write(&file, CHANGING).unwrap();
    let out = tmp.path().join("out");
    stormsim()
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let d = ChartData::from_dir(&out).unwrap();
    let f = load_figure(&d);
    // The two variants' load, the legend's capacity entry, then each
    // variant's capacity as a step line (two points per bucket).
    assert!(f.hlines.is_empty(), "no flat capacity line");
    let caps: Vec<_> = f.lines.iter().filter(|l| l.dashed).collect();
    assert_eq!(
        caps.len(),
        3,
        "{:?}",
        f.lines.iter().map(|l| &l.label).collect::<Vec<_>>()
    );
    assert!(caps[0].points.is_empty() && caps[0].label.starts_with("capacity"));
    let per_bucket = |l: &stormsim::report::figure::Line| -> Vec<(f64, f64)> {
        l.points.chunks(2).map(|p| (p[0].t, p[0].mean)).collect()
    };
    // The fixed fleet: 2 × 1000/s, half of it in the brownout.
    let fixed = per_bucket(caps[2]);
    assert_eq!(fixed.len(), 12);
    for (t, c) in &fixed {
        let want = if (20.0..30.0).contains(t) {
            1000.0
        } else {
            2000.0
        };
        assert_eq!(*c, want, "fixed fleet at {t} s");
    }
    // Autoscaled: 1000/s per replica serving at the bucket's end (the
    // table's `replicas`), halved in the brownout.
    let table = fs::read_to_string(out.join("services_timeseries.csv")).unwrap();
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (v, t_s, replicas) = (col("variant"), col("t_s"), col("replicas"));
    let serving: Vec<(f64, f64)> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[v] == "autoscaled")
        .map(|r| (r[t_s].parse().unwrap(), r[replicas].parse().unwrap()))
        .collect();
    let scaled = per_bucket(caps[1]);
    assert_eq!(scaled.len(), serving.len());
    for ((t, c), (t2, r)) in scaled.iter().zip(&serving) {
        assert_eq!(t, t2);
        let factor = if (20.0..30.0).contains(t) { 0.5 } else { 1.0 };
        assert_eq!(*c, 1000.0 * r * factor, "autoscaled at {t} s");
    }
    // It did scale: 1500/s on 2 replicas is u = 0.75 against 0.5.
    assert!(serving.last().unwrap().1 > 2.0, "{serving:?}");
    // Nothing serves before a decision (5 s) plus provision (10 s).
    assert!(
        serving
            .iter()
            .filter(|(t, _)| *t < 10.0)
            .all(|(_, r)| *r == 2.0),
        "{serving:?}"
    );
}
