//! `report.html`: one self-contained page (inline SVG charts and CSS, no
//! script, no network, no external fonts) with the scenario's description,
//! the metastability verdicts in words, one table comparing the variants
//! (ranked best first) from `summary_by_variant.csv`, the charts, the services graph (when the run
//! has more than one service: its two charts and compact tables of
//! `services.csv` and `calls.csv`), the priority classes (when the clients
//! send some: `classes.csv`, see `classes_table`) and a short guide to
//! reading them.

use std::fmt::Write;

use super::chart_data::{ChartData, Row};
use super::charts::{Chart, GRAPH_CHARTS, RecoveryRow, recovery_figure};
use super::figure::{css_colour, tick};
use super::graph_data::{CallFigures, GraphData, ServiceFigures};
use super::graph_figure::times;
use super::sweep::sweep_columns;
use super::{MAX_TABLE_ROWS, more_rows};

/// A figure without a value (a ratio of nothing: no request ended, no
/// capacity), as every table of the page shows it.
pub(super) const NOT_APPLICABLE: &str = "n/a";

/// After a table cut at [`MAX_TABLE_ROWS`] of `total` rows: the line that
/// says how many more there are and which CSV has them (nothing when none
/// was cut).
pub(super) fn more_note(h: &mut String, total: usize, what: &str, file: &str) {
    if let Some(more) = more_rows(total, what, file) {
        let (text, _) = more.split_at(more.len() - file.len());
        let _ = writeln!(
            h,
            "<p class=\"more\">{}<code>{}</code></p>",
            escape(text),
            escape(file)
        );
    }
}

/// The figures shown per variant: (column stem, label, unit suffix).
const ROWS: [(&str, &str, &str); 19] = [
    ("success_rate", "success rate", ""),
    (
        "success_rate_outside_incidents",
        "success rate outside incidents and warm-up",
        "",
    ),
    (
        "latency_p99_outside_ms",
        "latency p99 outside incidents and warm-up",
        " ms",
    ),
    (
        "amplification",
        "amplification (dependency attempts ÷ requests)",
        "×",
    ),
    ("peak_amplification", "peak amplification (one bucket)", "×"),
    ("peak_load_ratio", "peak load ÷ capacity", "×"),
    (
        "peak_load_ratio_after",
        "peak load ÷ capacity after the incident",
        "×",
    ),
    (
        "peak_effective_load_ratio",
        "peak load ÷ capacity it had (warming, browned out)",
        "×",
    ),
    (
        "time_to_full_goodput_s",
        "time to full goodput after the incident",
        " s",
    ),
    (
        "refused",
        "dependency requests refused at the door (down)",
        "",
    ),
    ("goodput", "goodput", "/s"),
    ("latency_p50_ms", "latency p50", " ms"),
    ("latency_p99_ms", "latency p99", " ms"),
    ("latency_p999_ms", "latency p99.9", " ms"),
    ("retry_ratio", "retries ÷ attempts", ""),
    ("dependency_utilization", "dependency utilization", ""),
    (
        "recovery_time_s",
        "recovery time (replicates that recovered)",
        " s",
    ),
    ("orphaned_work_s", "orphaned work (worker-seconds)", " s"),
    ("failed", "failed requests", ""),
];

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // A control or invisible formatting character from a scenario
            // (an ESC sequence in a description) is shown, not obeyed.
            c if crate::escape::is_unsafe_char(c) => {
                out.push_str(&crate::escape::escaped_char(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// The metastability verdict of a variant, in words; replicates stopped
/// by a guard rail have none, and are said to be aborted; replicates that
/// end too soon after the incident have none either, and are said to be
/// undecided.
pub fn verdict(r: &RecoveryRow) -> String {
    let judged = match (r.undecided, r.judged) {
        (0, _) => judged_verdict(r),
        (u, 0) if r.no_baseline == u => format!(
            "undecided: no request succeeded before the incident in {} (a baseline_success_ratio of 0), so there is no healthy level to recover to",
            if u == 1 {
                "its replicate".to_string()
            } else {
                format!("any of its {u} replicates")
            }
        ),
        (u, 0) => format!(
            "undecided: {} too soon after the incident, or with no request offered after it, to judge recovery (it needs one full analysis.recovery_window of traffic after the incident; see the recovered column of summary.csv)",
            if u == 1 {
                "its replicate ends".to_string()
            } else {
                format!("all {u} replicates end")
            }
        ),
        (u, _) => format!(
            "{}; {u} more replicate{} could not be judged: too short, or no request, after the incident, or none succeeded before it (undecided)",
            judged_verdict(r),
            if u == 1 { "" } else { "s" }
        ),
    };
    match (r.aborted, r.judged + r.undecided) {
        (0, _) => judged,
        (a, 0) => format!(
            "aborted: {} stopped early at a guard rail, no verdict (see the aborted column of summary.csv)",
            if a == 1 {
                "its replicate".to_string()
            } else {
                format!("all {a} replicates")
            }
        ),
        (a, _) => format!(
            "{judged}; {a} more replicate{} aborted at a guard rail, without a verdict",
            if a == 1 { "" } else { "s" }
        ),
    }
}

fn judged_verdict(r: &RecoveryRow) -> String {
    let n = r.judged;
    let k = r.recovered.len();
    let when = |m: Option<f64>, ci: Option<f64>| match (m, ci) {
        (Some(m), Some(ci)) if tick(ci) != "0" => format!("{} s (± {} s)", tick(m), tick(ci)),
        (Some(m), _) => format!("{} s", tick(m)),
        _ => "an unknown time".to_string(),
    };
    if n == 0 {
        "no incident or trigger: recovery not judged".to_string()
    } else if r.metastable == 0 {
        let all = if n == 1 {
            "its only replicate".to_string()
        } else {
            format!("all {n} replicates")
        };
        format!("recovered in {} in {all}", when(r.mean, r.ci95))
    } else if r.metastable == n {
        format!(
            "never recovered: metastable (in {n} of {})",
            crate::human::plural(n, "replicate")
        )
    } else {
        format!(
            "recovered in {k} of {n} replicates (mean {}); the other {} never recovered: metastable",
            when(r.mean, None),
            r.metastable
        )
    }
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Verdana,sans-serif;max-width:1240px;\
margin:1.5em auto;padding:0 1em;color:#222;line-height:1.45}\
h1{font-size:1.7em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.5em 1.5em 1em 0;display:inline-table;vertical-align:top}\
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}\
th:first-child,td:first-child{text-align:left}caption{font-weight:bold;text-align:left}\
.sw{display:inline-block;width:1em;height:1em;vertical-align:-.15em;margin-right:.4em}\
.metastable,.over{color:#b00;font-weight:bold}td.l{text-align:left}figure{margin:1em 0}\
figure svg{max-width:100%;height:auto;border:1px solid #eee}\
.wide{overflow-x:auto}.wide table{display:table;font-size:.9em}small{color:#555}";

fn cell(d: &ChartData, row: &Row, stem: &str, unit: &str) -> (String, String) {
    let t = &d.by_variant;
    let fmt =
        |v: Option<f64>| v.map_or(NOT_APPLICABLE.to_string(), |v| format!("{}{unit}", tick(v)));
    (
        fmt(t.num(row, &format!("{stem}_mean"))),
        t.num(row, &format!("{stem}_ci95"))
            .map_or(String::new(), |c| format!("± {}", tick(c))),
    )
}

/// A chart inline, with its caption and files.
fn figure(h: &mut String, c: &Chart) {
    let svg = c.svg.trim_start();
    let svg = svg
        .strip_prefix("<?xml")
        .and_then(|rest| rest.split_once("?>").map(|(_, s)| s.trim_start()))
        .unwrap_or(svg);
    let _ = writeln!(
        h,
        "<figure id=\"{n}\">\n<figcaption><b>{t}</b> (<code>charts/{n}.svg</code>, <code>charts/{n}.png</code>)</figcaption>\n{svg}\n</figure>",
        n = escape(&c.name),
        t = escape(&c.title)
    );
}

/// A number of the services tables: `n/a` when absent.
pub(super) fn num(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or(NOT_APPLICABLE.to_string(), f)
}

/// The variant's name with its colour.
pub(super) fn swatch(i: usize, name: &str) -> String {
    format!(
        "<span class=\"sw\" style=\"background:{}\"></span>{}",
        css_colour(i),
        escape(name)
    )
}

/// The first cell of a group of `n` rows, spanning them (nothing in the
/// group's other rows).
pub(super) fn first_cell(k: usize, n: usize, html: &str) -> String {
    match (k, n) {
        (0, 1) => format!("<td class=\"l\">{html}</td>"),
        (0, n) => format!("<td class=\"l\" rowspan=\"{n}\">{html}</td>"),
        _ => String::new(),
    }
}

/// The compact tables of `services.csv` and `calls.csv`: one row per
/// service (call) and variant, means over replicates.
fn services_tables(h: &mut String, d: &ChartData, g: &GraphData) {
    h.push_str("<p>Means over replicates, from <code>services.csv</code> and <code>calls.csv</code> (which have every figure, per replicate).</p>\n");
    h.push_str("<table id=\"services-table\">\n<caption>Services</caption>\n<tr><th>service</th><th>variant</th><th>capacity</th><th>peak load ÷ capacity</th><th>utilization</th><th>attempts per request</th><th>shed</th><th>refused</th></tr>\n");
    // Per service (call), the first MAX_TABLE_ROWS variants in variant
    // order; `variants` counts those with rows.
    let mut variants = 0;
    for (s, name) in g.services.iter().enumerate() {
        let rows: Vec<(usize, &String, ServiceFigures)> = d
            .variants
            .iter()
            .enumerate()
            .filter_map(|(v, variant)| {
                let f = *g.service_figures.get(v)?.get(s)?;
                (f.replicates > 0).then_some((v, variant, f))
            })
            .collect();
        variants = variants.max(rows.len());
        let rows = &rows[..rows.len().min(MAX_TABLE_ROWS)];
        for (k, (v, variant, f)) in rows.iter().enumerate() {
            let over = f.peak_load_ratio.is_some_and(|p| p > 1.0);
            let _ = writeln!(
                h,
                "<tr>{}<td class=\"l\">{}</td><td>{}</td><td{}>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                first_cell(k, rows.len(), &escape(name)),
                swatch(*v, variant),
                num(f.capacity_per_s, |c| format!("{}/s", tick(c))),
                if over { " class=\"over\"" } else { "" },
                num(f.peak_load_ratio, times),
                num(f.utilization, |u| format!("{:.1}%", u * 100.0)),
                num(f.amplification, times),
                num(f.shed, tick),
                num(f.refused, tick),
            );
        }
    }
    h.push_str("</table>\n");
    more_note(h, variants, "variants", "services.csv");
    let mut variants = 0;
    h.push_str("<table id=\"calls-table\">\n<caption>Calls</caption>\n<tr><th>call</th><th>caller → callee</th><th>variant</th><th>attempts per request</th><th>retries</th><th>failed calls</th></tr>\n");
    for (e, call) in g.calls.iter().enumerate() {
        let rows: Vec<(usize, &String, CallFigures)> = d
            .variants
            .iter()
            .enumerate()
            .filter_map(|(v, variant)| {
                let f = *g.call_figures.get(v)?.get(e)?;
                (f.replicates > 0).then_some((v, variant, f))
            })
            .collect();
        variants = variants.max(rows.len());
        let rows = &rows[..rows.len().min(MAX_TABLE_ROWS)];
        let edge = format!(
            "{}</td><td class=\"l\" rowspan=\"{}\">{} → {}",
            escape(&call.name),
            rows.len(),
            escape(&call.caller),
            escape(&call.callee)
        );
        for (k, (v, variant, f)) in rows.iter().enumerate() {
            let _ = writeln!(
                h,
                "<tr>{}<td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                first_cell(k, rows.len(), &edge),
                swatch(*v, variant),
                num(f.amplification, times),
                num(f.retries, tick),
                num(f.failed, tick),
            );
        }
    }
    h.push_str("</table>\n");
    more_note(h, variants, "variants", "calls.csv");
}

/// Builds the page from the data and the already rendered charts.
pub fn report_html(d: &ChartData, charts: &[Chart]) -> Result<String, crate::interrupt::Stopped> {
    let mut h = String::new();
    let title = if d.name.is_empty() {
        "stormsim report".to_string()
    } else {
        format!("stormsim report: {}", d.name)
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{t}</h1>\n",
        t = escape(&title)
    );
    if !d.description.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape(&d.description));
    }
    let incidents: Vec<String> = d
        .incidents
        .iter()
        .map(|s| {
            format!(
                "{} from {} s to {} s",
                s.label,
                tick(s.start_s),
                tick(s.end_s)
            )
        })
        .collect();
    if !incidents.is_empty() {
        let _ = writeln!(h, "<p>Incidents: {}.</p>", escape(&incidents.join("; ")));
    }

    h.push_str("<h2>Does it recover?</h2>\n<ul>\n");
    let recovery = recovery_figure(d);
    for (i, r) in recovery.variants.iter().enumerate().take(MAX_TABLE_ROWS) {
        crate::interrupt::check()?;
        let v = verdict(r);
        let class = if r.metastable > 0 || r.aborted > 0 {
            " class=\"metastable\""
        } else {
            ""
        };
        let _ = writeln!(
            h,
            "<li><span class=\"sw\" style=\"background:{}\"></span><b>{}</b>: <span{class}>{}</span></li>",
            css_colour(i),
            escape(&r.name),
            escape(&v)
        );
    }
    h.push_str("</ul>\n");
    more_note(
        &mut h,
        recovery.variants.len(),
        "variants",
        "summary_by_variant.csv",
    );

    slo_section(&mut h, d);

    h.push_str("<h2>Charts</h2>\n");
    let is_graph = |c: &&Chart| GRAPH_CHARTS.contains(&c.name.as_str());
    for c in charts.iter().filter(|c| !is_graph(c)) {
        figure(&mut h, c);
    }
    if let Some(g) = d.graph.as_ref().filter(|g| g.is_graph()) {
        h.push_str("<h2 id=\"services\">Where did the storm go? Services and calls</h2>\n");
        for c in charts.iter().filter(is_graph) {
            figure(&mut h, c);
        }
        services_tables(&mut h, d, g);
    }
    super::classes_table::classes_section(&mut h, d);
    comparison_table(&mut h, d)?;

    h.push_str(HOW_TO_READ);
    if d.graph.as_ref().is_some_and(|g| g.is_graph()) {
        h.push_str(HOW_TO_READ_GRAPH);
    }
    h.push_str("</ul>\n</body>\n</html>\n");
    Ok(h)
}

/// The order of the variants in the comparison table (indices into the
/// rows of `summary_by_variant.csv`), best first, and how they were
/// ranked: by `slo_rank` when the scenario has an SLO, else by success
/// rate (highest first), then amplification (lowest first); ties keep
/// variant order.
pub fn ranked_rows(d: &ChartData) -> (Vec<usize>, &'static str) {
    let t = &d.by_variant;
    let mut order: Vec<usize> = (0..t.rows.len()).collect();
    if t.col("slo_rank").is_some() {
        let rank = |i: usize| t.num(&t.rows[i], "slo_rank").unwrap_or(f64::INFINITY);
        order.sort_by(|&a, &b| rank(a).total_cmp(&rank(b)).then(a.cmp(&b)));
        return (
            order,
            "ranked best first by the SLO (see \"Against the SLO\")",
        );
    }
    let get = |i: usize, c: &str, missing: f64| t.num(&t.rows[i], c).unwrap_or(missing);
    let aborted = |i: usize| all_runs_aborted(t, &t.rows[i]);
    order.sort_by(|&a, &b| {
        aborted(a).cmp(&aborted(b)).then_with(|| {
            get(b, "success_rate_mean", f64::NEG_INFINITY)
                .total_cmp(&get(a, "success_rate_mean", f64::NEG_INFINITY))
                .then(get(a, "amplification_mean", f64::INFINITY).total_cmp(&get(
                    b,
                    "amplification_mean",
                    f64::INFINITY,
                )))
                .then(a.cmp(&b))
        })
    });
    (
        order,
        "ranked best first by success rate (highest first), then amplification (lowest first): the scenario has no SLO",
    )
}

/// Whether a guard rail stopped every run of the variant in `row`.
fn all_runs_aborted(t: &super::chart_data::Table, row: &Row) -> bool {
    match (t.num(row, "aborted_runs"), t.num(row, "replicates")) {
        (Some(a), Some(r)) => r > 0.0 && a >= r,
        _ => false,
    }
}

/// A variant's rank: its `slo_rank` when the scenario has an SLO, else
/// `position`; "not ranked" when every run stopped at a guard rail (it
/// has no figures to rank by).
fn rank_text(t: &super::chart_data::Table, row: &Row, position: Option<usize>) -> String {
    if all_runs_aborted(t, row) {
        return "not ranked".to_string();
    }
    if t.col("slo_rank").is_some() {
        return escape(t.text(row, "slo_rank"));
    }
    position.map_or(String::new(), |p| p.to_string())
}

/// One table comparing every variant (and sweep point), ranked best
/// first: a row per variant, a column per figure (mean ± the half-width
/// of its 95% CI).
fn comparison_table(h: &mut String, d: &ChartData) -> Result<(), crate::interrupt::Stopped> {
    let t = &d.by_variant;
    let sweeps = sweep_columns(t);
    let (order, how) = ranked_rows(d);
    let figures: Vec<&(&str, &str, &str)> = ROWS
        .iter()
        .filter(|(stem, _, _)| t.col(&format!("{stem}_mean")).is_some())
        .collect();
    let _ = writeln!(
        h,
        "<h2 id=\"comparison\">Variants compared</h2>\n<p>One row per variant, {how}. Each figure is the mean over replicates ± the half-width of its 95% confidence interval (from <code>summary_by_variant.csv</code>, which has every figure).</p>\n<div class=\"wide\"><table id=\"comparison-table\">"
    );
    h.push_str("<tr><th>rank</th><th>variant</th>");
    for s in &sweeps {
        let _ = write!(h, "<th>{}</th>", escape(s.trim_start_matches("sweep.")));
    }
    h.push_str("<th>replicates</th>");
    for (_, label, _) in &figures {
        let _ = write!(h, "<th>{}</th>", escape(label));
    }
    h.push_str("<th>replicates that recovered</th><th>runs aborted (guard rail)</th></tr>\n");
    for (rank, &i) in order.iter().enumerate().take(MAX_TABLE_ROWS) {
        crate::interrupt::check()?;
        let row = &t.rows[i];
        let name = t.text(row, "variant");
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td>",
            rank_text(t, row, Some(rank + 1)),
            swatch(d.variant_index(name), name)
        );
        for s in &sweeps {
            let _ = write!(h, "<td>{}</td>", escape(t.text(row, s)));
        }
        let _ = write!(h, "<td>{}</td>", escape(t.text(row, "replicates")));
        for (stem, _, unit) in &figures {
            let (m, ci) = cell(d, row, stem, unit);
            let sep = if ci.is_empty() { "" } else { " " };
            let _ = write!(
                h,
                "<td>{}{sep}<small>{}</small></td>",
                escape(&m),
                escape(&ci)
            );
        }
        let recovered = t
            .num(row, "recovered_fraction")
            .map_or(NOT_APPLICABLE.to_string(), |f| {
                format!("{}%", tick(f * 100.0))
            });
        let aborted = t.num(row, "aborted_runs").filter(|a| *a > 0.0);
        let _ = writeln!(
            h,
            "<td>{}</td><td{}>{}</td></tr>",
            recovered,
            if aborted.is_some() {
                " class=\"metastable\""
            } else {
                ""
            },
            aborted.map_or("0".to_string(), tick)
        );
    }
    h.push_str("</table></div>\n");
    more_note(h, order.len(), "variants", "summary_by_variant.csv");
    Ok(())
}

/// The variants' verdicts against the SLO, ranked best first (when the
/// scenario has one: `slo_rank` in `summary_by_variant.csv`).
fn slo_section(h: &mut String, d: &ChartData) {
    let t = &d.by_variant;
    if t.col("slo_rank").is_none() {
        return;
    }
    let mut rows: Vec<&Row> = t.rows.iter().collect();
    rows.sort_by(|a, b| {
        let rank = |r: &Row| t.num(r, "slo_rank").unwrap_or(f64::INFINITY);
        rank(a).total_cmp(&rank(b))
    });
    let _ = writeln!(
        h,
        "<h2>Against the SLO</h2>\n<p>The SLO: {}. A variant passes when every replicate meets every objective; best first.</p>\n<table>\n<tr><th>rank</th><th>variant</th><th>verdict</th><th>replicates that passed</th><th>objectives missed (worst replicate)</th></tr>",
        escape(d.slo.as_deref().unwrap_or("see the scenario's `slo`"))
    );
    for row in rows.iter().take(MAX_TABLE_ROWS) {
        let name = t.text(row, "variant");
        let pass = t.num(row, "slo_pass") == Some(1.0);
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td{}>{}</td><td>{}</td><td>{}</td></tr>",
            rank_text(t, row, None),
            css_colour(d.variant_index(name)),
            escape(name),
            if pass { "" } else { " class=\"metastable\"" },
            if pass {
                "pass"
            } else {
                crate::metrics::slo::miss_word(t.text(row, "slo_failed"))
            },
            t.num(row, "slo_pass_fraction")
                .map_or(NOT_APPLICABLE.to_string(), |f| format!(
                    "{}%",
                    tick(f * 100.0)
                )),
            escape(t.text(row, "slo_failed"))
        );
    }
    h.push_str("</table>\n");
    more_note(h, rows.len(), "variants", "summary_by_variant.csv");
}

const HOW_TO_READ: &str = "<h2>How to read this</h2>\n<ul>\n\
<li><b>Load</b>: requests per second that reach the dependency, against its capacity (dashed: flat when it never changes, else stepping bucket by bucket with the replicas an autoscaler has serving, the share an incident leaves and an adaptive limit below the workers). Above the line, work queues up or is shed; shaded bands are the incidents. A line that stays above capacity after the incident is a retry storm that feeds itself.</li>\n\
<li><b>Amplification</b>: dependency attempts per logical request in each second. 1× means no retries; during an outage it climbs towards the product of the layers' attempts.</li>\n\
<li><b>Goodput</b>: requests that succeeded per second, with the offered load (dashed) for reference. Recovery is goodput returning to the offered load.</li>\n\
<li><b>Latency</b>: p50 (solid) and p99 (dashed) of the requests that ended in each second, success or failure.</li>\n\
<li><b>Recovery</b>: seconds from the end of the last incident until the success ratio stays healthy (at least the threshold × the pre-incident baseline) to the end of the run. A run that never gets there is <span class=\"metastable\">metastable</span>: the system stays down after the trigger is gone.</li>\n\
<li><b>After the incident</b>: the rows of each variant's table that leave the incident out. Success rate and p99 latency count only the requests that lived entirely outside the incidents and their warm-up; peak load after the incident starts when the incident ends; the peak against the capacity the service had divides by what it could serve then (less while warming or browned out); refused requests were turned away at the door, with no work done.</li>\n\
<li>Lines are means over replicates; the shaded band around a line spans the replicates' minimum and maximum. Colours mean the same variant in every chart.</li>\n";

const HOW_TO_READ_GRAPH: &str = "<li><b>Load at each service</b>: one panel per service, requests per second arriving there (every attempt) against its capacity (dashed); each panel has its own scale. A tier above its line queues, sheds or exhausts its workers; a tier without a capacity limit only forwards.</li>\n\
<li><b>The services graph</b>: for the variant with the highest peak load ÷ capacity, each service coloured by its peak load ÷ capacity (green below 0.8×, amber to 1×, red above) and each arrow labelled with the attempts it carried per logical request. Amplification multiplies down each path and adds up where paths meet: the red box is where the storm went.</li>\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn row(judged: usize, rec: &[f64], mean: Option<f64>) -> RecoveryRow {
        RecoveryRow {
            name: "v".into(),
            mean,
            ci95: None,
            recovered: rec.to_vec(),
            metastable: judged - rec.len(),
            judged,
            aborted: 0,
            undecided: 0,
            no_baseline: 0,
        }
    }

    #[test]
    fn undecided_replicates_have_no_verdict() {
        let mut r = row(0, &[], None);
        r.undecided = 2;
        assert!(
            verdict(&r).starts_with("undecided: all 2 replicates end too soon after the incident"),
            "{}",
            verdict(&r)
        );
        // Undecided because nothing succeeded before the incident: that
        // is the reason given, when it is every undecided replicate's.
        r.no_baseline = 2;
        assert!(
            verdict(&r).starts_with(
                "undecided: no request succeeded before the incident in any of its 2 replicates"
            ),
            "{}",
            verdict(&r)
        );
        r.no_baseline = 1;
        assert!(verdict(&r).starts_with("undecided: all 2 replicates end too soon"));
        let mut r = row(1, &[2.0], Some(2.0));
        r.undecided = 1;
        assert_eq!(
            verdict(&r),
            "recovered in 2 s in its only replicate; 1 more replicate could not be judged: too short, or no request, after the incident, or none succeeded before it (undecided)"
        );
    }

    #[test]
    fn aborted_replicates_have_no_verdict() {
        let mut r = row(0, &[], None);
        r.aborted = 3;
        assert_eq!(
            verdict(&r),
            "aborted: all 3 replicates stopped early at a guard rail, no verdict (see the aborted column of summary.csv)"
        );
        let mut r = row(2, &[1.0, 3.0], Some(2.0));
        r.aborted = 1;
        assert_eq!(
            verdict(&r),
            "recovered in 2 s in all 2 replicates; 1 more replicate aborted at a guard rail, without a verdict"
        );
    }

    #[test]
    fn verdicts_in_words() {
        assert_eq!(
            verdict(&row(3, &[1.0, 2.0, 3.0], Some(2.0))),
            "recovered in 2 s in all 3 replicates"
        );
        assert_eq!(
            verdict(&row(2, &[], None)),
            "never recovered: metastable (in 2 of 2 replicates)"
        );
        assert!(verdict(&row(3, &[4.0], Some(4.0))).starts_with("recovered in 1 of 3 replicates"));
        assert!(verdict(&row(0, &[], None)).contains("not judged"));
    }

    #[test]
    fn a_zero_interval_is_not_shown() {
        let mut r = row(2, &[3.0, 3.0], Some(3.0));
        r.ci95 = Some(0.0);
        assert_eq!(verdict(&r), "recovered in 3 s in all 2 replicates");
        r.ci95 = Some(1.5);
        assert_eq!(
            verdict(&r),
            "recovered in 3 s (± 1.5 s) in all 2 replicates"
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("<a&'\">"), "&lt;a&amp;&#39;&quot;&gt;");
        assert_eq!(escape("a\u{1b}[31m\u{202e}b"), "a\\u{1b}[31m\\u{202e}b");
    }
}
