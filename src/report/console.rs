//! The one-screen human summary printed after a run: per variant, the
//! figures a capacity reviewer looks at first.

use std::fmt::Write;

use crate::metrics::Cell;

use super::tables::by_variant;
use crate::runner::RunResult;

fn get(cells: &[(String, Cell)], name: &str) -> Option<f64> {
    cells
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, c)| c.number())
}

/// Formats the summary table. `capacity` is shown in the heading.
pub fn summary_text(scenario: &str, results: &[RunResult]) -> String {
    let agg = by_variant(results);
    let mut s = String::new();
    let width = agg.iter().map(|(n, _)| n.len()).max().unwrap_or(7).max(7);
    let _ = writeln!(s, "stormsim: {scenario} ({} runs)", results.len());
    let _ = writeln!(
        s,
        "{:<width$}  {:>13}  {:>12}  {:>14}  {:>14}  {:>20}",
        "variant", "amplification", "success rate", "peak load/cap", "goodput (/s)", "recovery"
    );
    for (name, cells) in &agg {
        let f = |n: &str| get(cells, n);
        let recovery = match (f("recovered_fraction"), f("recovery_time_s_mean")) {
            (None, _) => "no trigger".to_string(),
            (Some(0.0), _) => "never (metastable)".to_string(),
            (Some(1.0), Some(t)) => format!("{t:.1} s"),
            (Some(fr), Some(t)) => format!("{t:.1} s ({:.0}% of runs)", fr * 100.0),
            (Some(_), None) => "-".to_string(),
        };
        let _ = writeln!(
            s,
            "{:<width$}  {:>12.2}x  {:>11.2}%  {:>13.2}x  {:>14.1}  {:>20}",
            name,
            f("amplification_mean").unwrap_or(0.0),
            f("success_rate_mean").unwrap_or(0.0) * 100.0,
            f("peak_load_ratio_mean").unwrap_or(0.0),
            f("goodput_mean").unwrap_or(0.0),
            recovery,
        );
    }
    for r in results {
        if let Some(why) = &r.summary.aborted {
            let _ = writeln!(
                s,
                "warning: {} replicate {} was aborted: {why}",
                r.variant, r.replicate
            );
        }
    }
    s
}
