//! Sweep charts: when `summary_by_variant.csv` carries `sweep.<path>`
//! columns (one per swept field, values as in the scenario: numbers,
//! durations such as `250ms`, rates such as `2000/s`, or words), each
//! summary figure is drawn against each swept field, one line per
//! combination of the other swept fields. No `sweep.` column, no chart.

use std::collections::HashMap;

use super::axis::{Unit, XAxis, category_axis, numeric_axis, position};
use super::chart_data::{ChartData, Point, Table, parse_num};
use super::figure::{Figure, Line};
use super::styles::{colour, marker};
use crate::scenario::units::{parse_duration, parse_rate};

/// Counts, ratios and times: 0 and up.
const NOT_NEGATIVE: (f64, f64) = (0.0, f64::INFINITY);
/// Fractions.
const FRACTION: (f64, f64) = (0.0, 1.0);

/// The summary figures drawn against a swept field: (column, axis label,
/// the values it can take; its CI bands are clipped to them).
pub const FIGURES: [(&str, &str, (f64, f64)); 8] = [
    (
        "amplification",
        "amplification (attempts per request, ×)",
        NOT_NEGATIVE,
    ),
    (
        "dependency_attempts",
        "calls reaching the dependency (per run)",
        NOT_NEGATIVE,
    ),
    ("completion_time_s", "completion time (s)", NOT_NEGATIVE),
    ("peak_load_ratio", "peak load ÷ capacity (×)", NOT_NEGATIVE),
    ("success_rate", "success rate (fraction)", FRACTION),
    ("goodput", "goodput (requests per second)", NOT_NEGATIVE),
    ("latency_p99_ms", "p99 latency (ms)", NOT_NEGATIVE),
    ("recovery_time_s", "recovery time (s)", NOT_NEGATIVE),
];

/// A swept value as a number: plain, a duration (seconds) or a rate (/s).
pub fn sweep_number(s: &str) -> Option<f64> {
    let s = s.trim();
    parse_num(s)
        .or_else(|| parse_duration(s).ok().map(|d| d.secs_f64()))
        .or_else(|| parse_rate(s).ok().map(|r| r.per_sec()))
        .filter(|v| v.is_finite())
}

/// The `sweep.` columns of a table, in order.
pub fn sweep_columns(t: &Table) -> Vec<String> {
    t.header
        .iter()
        .filter(|h| h.starts_with("sweep."))
        .cloned()
        .collect()
}

/// `s` with every character but ASCII letters, digits, `.`, `-` and `_`
/// replaced by `_`: safe in a file name.
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What the swept values of a column are: all plain numbers, all
/// durations, all rates, or (None) words.
pub fn sweep_unit(values: &[&str]) -> Option<Unit> {
    let all = |f: &dyn Fn(&str) -> bool| values.iter().all(|v| f(v.trim()));
    if all(&|v| parse_num(v).is_some()) {
        Some(Unit::Number)
    } else if all(&|v| parse_num(v).is_some() || parse_duration(v).is_ok()) {
        Some(Unit::Duration)
    } else if all(&|v| parse_num(v).is_some() || parse_rate(v).is_ok()) {
        Some(Unit::Rate)
    } else {
        None
    }
}

/// The x axis of the swept column `col` and the x position of every row
/// on it: swept values with their units (on a log axis when durations or
/// rates span more than ten times), or one category per distinct word.
pub fn x_axis(t: &Table, col: &str) -> (XAxis, Vec<f64>) {
    let texts: Vec<&str> = t.rows.iter().map(|r| t.text(r, col)).collect();
    let nums: Option<Vec<f64>> = texts.iter().map(|s| sweep_number(s)).collect();
    if let (Some(nums), Some(unit)) = (nums, sweep_unit(&texts)) {
        let axis = numeric_axis(&nums, unit);
        let xs = nums.iter().map(|&v| position(&axis, v)).collect();
        return (axis, xs);
    }
    let (cats, xs) = first_seen(texts.into_iter().map(str::to_string));
    (
        category_axis(&cats),
        xs.into_iter().map(|i| i as f64).collect(),
    )
}

/// The last part of a swept field's path (`jitter` for
/// `layers.api.retry.jitter`), or the whole when that is not unique
/// among `all`.
fn short_name<'a>(field: &'a str, all: &[&'a str]) -> &'a str {
    let last = |f: &'a str| f.rsplit('.').next().unwrap_or(f);
    let short = last(field);
    if all.iter().filter(|f| last(f) == short).count() > 1 {
        field
    } else {
        short
    }
}

/// The distinct keys in order of first appearance, and each key's index
/// among them.
fn first_seen(keys: impl Iterator<Item = String>) -> (Vec<String>, Vec<usize>) {
    let mut distinct: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let of = keys
        .map(|k| {
            *index.entry(k).or_insert_with_key(|k| {
                distinct.push(k.clone());
                distinct.len() - 1
            })
        })
        .collect();
    (distinct, of)
}

/// (file stem, title, figure) for every sweep chart. Linear in the rows:
/// each row is given its line once per swept field. Each line (a
/// combination of the other swept fields' values) has its own colour and
/// marker; the legend gives the values, its title the fields.
pub fn sweep_figures(d: &ChartData) -> Vec<(String, String, Figure)> {
    let t = &d.by_variant;
    let cols = sweep_columns(t);
    let fields: Vec<&str> = cols
        .iter()
        .map(|c| c.trim_start_matches("sweep."))
        .collect();
    let mut out = Vec::new();
    for col in &cols {
        let field = col.trim_start_matches("sweep.");
        let others: Vec<&String> = cols.iter().filter(|c| *c != col).collect();
        let (axis, xs) = x_axis(t, col);
        // Groups: the other swept fields' values, in order of appearance.
        let (groups, group_of) = first_seen(t.rows.iter().map(|r| {
            others
                .iter()
                .map(|o| t.text(r, o).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }));
        let legend_title = (!others.is_empty()).then(|| {
            others
                .iter()
                .map(|o| short_name(o.trim_start_matches("sweep."), &fields))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
        for (row, &g) in group_of.iter().enumerate() {
            members[g].push(row);
        }
        for (fig, y_desc, domain) in FIGURES {
            let (Some(mean_col), ci_col) =
                (t.col(&format!("{fig}_mean")), t.col(&format!("{fig}_ci95")))
            else {
                continue;
            };
            let num =
                |r: usize, c: Option<usize>| c.and_then(|i| t.rows[r].get(i)).and_then(parse_num);
            if (0..t.rows.len()).all(|r| num(r, Some(mean_col)).is_none()) {
                continue;
            }
            let mut lines = Vec::new();
            for (g, label) in groups.iter().enumerate() {
                let mut pts: Vec<Point> = members[g]
                    .iter()
                    .filter_map(|&r| {
                        let m = num(r, Some(mean_col))?;
                        let ci = num(r, ci_col).unwrap_or(0.0);
                        Some(Point {
                            t: xs[r],
                            mean: m,
                            min: (m - ci).clamp(domain.0, domain.1),
                            max: (m + ci).clamp(domain.0, domain.1),
                        })
                    })
                    .collect();
                pts.sort_by(|a, b| a.t.total_cmp(&b.t));
                lines.push(Line {
                    label: if label.is_empty() {
                        fig.to_string()
                    } else {
                        label.clone()
                    },
                    colour: colour(g),
                    points: pts,
                    band: true,
                    dashed: false,
                    marker: marker(g),
                });
            }
            // More combinations than styles: their spread, as the time
            // charts draw it (`spread`).
            let many = lines.len() > super::spread::MAX_LINES;
            let title = if many {
                let n = lines.len();
                let pts = super::spread::spread(lines.iter().map(|l| &l.points));
                lines = vec![Line {
                    label: format!("median of {n} lines"),
                    colour: colour(0),
                    points: pts,
                    band: true,
                    dashed: false,
                    marker: marker(0),
                }];
                format!("{fig} against {field} (median of {n} lines, band: least–greatest)")
            } else {
                format!("{fig} against {field} (mean, 95% CI band)")
            };
            let scale = if axis.log { " (log scale)" } else { "" };
            let mut f = Figure {
                title,
                x_desc: format!("{field}{scale}"),
                y_desc: y_desc.to_string(),
                lines,
                max_gap: f64::INFINITY,
                x_axis: Some(axis.clone()),
                fit_y: true,
                y_domain: Some(domain),
                legend_title: legend_title.clone().filter(|_| !many),
                markers: true,
                ..Figure::default()
            };
            if f.lines.iter().all(|l| l.points.is_empty()) {
                f.note = Some("no data".into());
            }
            out.push((
                format!("sweep-{fig}-vs-{}", file_safe(field)),
                format!("{fig} against {field}"),
                f,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swept_values_become_numbers() {
        assert_eq!(sweep_number("3"), Some(3.0));
        assert_eq!(sweep_number("250ms"), Some(0.25));
        assert_eq!(sweep_number("2000/s"), Some(2000.0));
        assert_eq!(sweep_number("full"), None);
    }

    #[test]
    fn one_line_per_other_dimension() {
        let csv = "variant,amplification_mean,amplification_ci95,sweep.a,sweep.b\n\
                   v1,1,0.1,1,full\nv2,2,,2,full\nv3,1.5,0.2,1,none\nv4,,,2,none\n";
        let d = ChartData::from_bytes(b"", b"", csv.as_bytes(), None).unwrap();
        let figs = sweep_figures(&d);
        let names: Vec<&str> = figs.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            ["sweep-amplification-vs-a", "sweep-amplification-vs-b"]
        );
        let by_a = &figs[0].2;
        assert_eq!(by_a.lines.len(), 2);
        assert_eq!(by_a.lines[0].label, "full");
        assert_eq!(by_a.legend_title.as_deref(), Some("b"));
        assert_eq!(by_a.lines[0].points.len(), 2);
        assert_eq!(by_a.lines[1].points.len(), 1, "empty cell skipped");
        let by_b = &figs[1].2;
        let labels: Vec<&str> = by_b
            .x_axis
            .as_ref()
            .unwrap()
            .ticks
            .iter()
            .map(|t| t.label.as_str())
            .collect();
        assert_eq!(labels, ["full", "none"]);
    }
}
