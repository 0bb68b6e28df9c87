//! The one-screen human summary printed after a run: per variant, the
//! figures a capacity reviewer looks at first, the figures after the
//! incident, and the verdicts against the scenario's SLO, best first.

use std::fmt::Write;

use crate::metrics::Cell;
use crate::metrics::slo::Objectives;
use crate::metrics::table::Undecided;

use super::tables::by_variant;
use super::{MAX_TABLE_ROWS, more_rows};
use crate::metrics::RunResult;

/// A ratio with nothing to divide by (0/0).
const NOT_APPLICABLE: &str = "n/a";

/// Writes `lines`, at most [`MAX_TABLE_ROWS`] of them, then the line that
/// says how many more there are (`what` in `file`).
fn capped(s: &mut String, lines: &[String], what: &str, file: &str) {
    for line in lines.iter().take(MAX_TABLE_ROWS) {
        let _ = writeln!(s, "{line}");
    }
    if let Some(more) = more_rows(lines.len(), what, file) {
        let _ = writeln!(s, "{more}");
    }
}

fn get(cells: &[(String, Cell)], name: &str) -> Option<f64> {
    cells
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, c)| c.number())
}

/// Seconds as the console shows them: `4 s`, `2.5 s`.
fn seconds(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0} s")
    } else {
        format!("{v:.1} s")
    }
}

/// The recovery column of a variant: `aborted` runs had no verdict, and
/// neither had the `undecided` ones (the first of them says why).
fn recovery_text(
    cells: &[(String, Cell)],
    runs: usize,
    aborted: usize,
    undecided: (usize, Option<Undecided>),
) -> String {
    let f = |n: &str| get(cells, n);
    let (undecided, why) = undecided;
    let verdict = match (f("recovered_fraction"), f("recovery_time_s_mean")) {
        _ if aborted > 0 && aborted == runs => None,
        (None, _) if undecided > 0 => Some(match why {
            Some(Undecided::TooShort { after_s, window_s }) => format!(
                "undecided: run ends {} after the trigger, needs a {} recovery_window",
                seconds(after_s),
                seconds(window_s)
            ),
            Some(Undecided::NoTraffic) => {
                "undecided: no request was offered after the trigger".to_string()
            }
            Some(Undecided::NoBaseline) => {
                "undecided: no request succeeded before the trigger (baseline 0)".to_string()
            }
            Some(Undecided::WarmingUp { after_s, warming_s }) => format!(
                "undecided: run ends {} after the trigger, still warming up ({} to go)",
                seconds(after_s),
                seconds(warming_s)
            ),
            None => "undecided".to_string(),
        }),
        (None, _) => Some("no trigger".to_string()),
        (Some(0.0), _) => Some("never (metastable)".to_string()),
        (Some(1.0), Some(t)) => Some(format!("{t:.1} s")),
        (Some(fr), Some(t)) => Some(format!("{t:.1} s ({:.0}% of runs)", fr * 100.0)),
        (Some(_), None) => Some("-".to_string()),
    };
    let verdict = match verdict {
        Some(v) if undecided > 0 && f("recovered_fraction").is_some() => {
            Some(format!("{v}; {undecided} of {runs} undecided"))
        }
        v => v,
    };
    match verdict {
        None => format!(
            "ABORTED ({aborted} of {})",
            crate::human::plural(runs, "run")
        ),
        Some(v) if aborted == 0 => v,
        Some(v) => format!("{v}; {aborted} of {runs} ABORTED"),
    }
}

/// The runs of variant `name` too short after the trigger to judge, and
/// why the first of them is.
fn undecided_of(results: &[RunResult], name: &str) -> (usize, Option<Undecided>) {
    let mut runs = results
        .iter()
        .filter(|r| r.variant == name)
        .filter_map(|r| r.summary.undecided);
    let first = runs.next();
    (first.map_or(0, |_| 1 + runs.count()), first)
}

/// A figure's mean over replicates, formatted, or `n/a` when no
/// replicate has it (a ratio of nothing: no request ended outside the
/// incidents, no full bucket after the trigger).
fn mean_text(cells: &[(String, Cell)], name: &str, show: impl Fn(f64) -> String) -> String {
    get(cells, &format!("{name}_mean")).map_or_else(|| NOT_APPLICABLE.to_string(), show)
}

/// The figures after the incident, one row per variant (README, "After
/// the incident").
fn after_text(s: &mut String, agg: &[(String, Vec<(String, Cell)>)], width: usize) {
    let width = width.max("after incident".len());
    let _ = writeln!(
        s,
        "{:<width$}  {:>15}  {:>11}  {:>15}  {:>14}  {:>12}  {:>10}",
        "after incident",
        "success outside",
        "p99 outside",
        "peak load after",
        "peak effective",
        "full goodput",
        "refused"
    );
    for (name, cells) in agg.iter().take(MAX_TABLE_ROWS) {
        let full = match (
            get(cells, "time_to_full_goodput_s_mean"),
            get(cells, "recovered_fraction"),
        ) {
            (Some(t), _) => format!("{t:.1} s"),
            (None, Some(_)) => "never".to_string(),
            (None, None) => "-".to_string(),
        };
        let _ = writeln!(
            s,
            "{:<width$}  {:>15}  {:>11}  {:>15}  {:>14}  {:>12}  {:>10}",
            name,
            mean_text(cells, "success_rate_outside_incidents", |v| format!(
                "{:.2}%",
                v * 100.0
            )),
            mean_text(cells, "latency_p99_outside_ms", |v| format!("{v:.0} ms")),
            mean_text(cells, "peak_load_ratio_after", |v| format!("{v:.2}x")),
            mean_text(cells, "peak_effective_load_ratio", |v| format!("{v:.2}x")),
            full,
            mean_text(cells, "refused", |v| format!("{v:.0}")),
        );
        if let Some(flag) = stopped_flag(cells) {
            // The row's end: the figures' alignment is kept.
            if s.ends_with('\n') {
                s.pop();
            }
            let _ = writeln!(s, "  {flag}");
        }
    }
    if let Some(more) = more_rows(agg.len(), "variants", "summary_by_variant.csv") {
        let _ = writeln!(s, "{more}");
    }
}

/// How a variant's figures stand to the runs a guard rail stopped: None
/// when none was; else which runs they are over (summary_by_variant's
/// means leave stopped runs out unless every run was stopped).
fn stopped_flag(cells: &[(String, Cell)]) -> Option<String> {
    let runs = get(cells, "replicates").unwrap_or(0.0) as usize;
    let aborted = get(cells, "aborted_runs").unwrap_or(0.0) as usize;
    match aborted {
        0 => None,
        a if a >= runs && runs == 1 => {
            Some("ABORTED: its 1 run stopped early; figures only up to the stop".to_string())
        }
        a if a >= runs => Some(format!(
            "ABORTED: all {runs} runs stopped early; figures only up to the stop"
        )),
        a if runs - a == 1 => Some(format!(
            "{a} of {runs} ABORTED: figures over the 1 run that reached its end"
        )),
        a => Some(format!(
            "{a} of {runs} ABORTED: figures over the {} runs that reached their end",
            runs - a
        )),
    }
}

/// Per priority class (when the clients send classes), one row per
/// variant: each class's success rate and the share of its requests shed
/// by priority, means over the replicates (README, "Priority classes and
/// shedding").
fn classes_text<'a>(
    s: &mut String,
    results: &[RunResult],
    variants: impl ExactSizeIterator<Item = &'a str>,
    width: usize,
) {
    let Some(first) = results.iter().find(|r| !r.classes.is_empty()) else {
        return;
    };
    let names: Vec<&str> = first.classes.iter().map(|c| c.class.as_str()).collect();
    let width = width.max("by class".len());
    let col = |n: &str| n.len().max(22);
    let _ = write!(s, "{:<width$}", "by class");
    for n in &names {
        let _ = write!(s, "  {:>w$}", n, w = col(n));
    }
    let _ = writeln!(s);
    let total = variants.len();
    for variant in variants.take(MAX_TABLE_ROWS) {
        let _ = write!(s, "{variant:<width$}");
        for (k, n) in names.iter().enumerate() {
            let runs: Vec<&RunResult> = results.iter().filter(|r| r.variant == variant).collect();
            let rows: Vec<_> = runs.iter().filter_map(|r| r.classes.get(k)).collect();
            // Every run stopped by a guard rail: no class has a rate.
            let all_aborted = !runs.is_empty() && runs.iter().all(|r| r.summary.aborted.is_some());
            let rates: Vec<f64> = rows.iter().filter_map(|c| c.success_rate).collect();
            let shed: Vec<f64> = rows
                .iter()
                .filter(|c| c.requests > 0)
                .map(|c| c.shed as f64 / c.requests as f64)
                .collect();
            let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            let cell = match (mean(&rates), mean(&shed)) {
                (Some(ok), Some(sh)) => format!("{:.2}% ok, {:.1}% shed", ok * 100.0, sh * 100.0),
                _ if all_aborted => "ABORTED".to_string(),
                _ => NOT_APPLICABLE.to_string(),
            };
            let _ = write!(s, "  {:>w$}", cell, w = col(n));
        }
        let _ = writeln!(s);
    }
    if let Some(more) = more_rows(total, "variants", "classes.csv") {
        let _ = writeln!(s, "{more}");
    }
}

/// The variants' verdicts against the SLO, best first.
fn slo_text(s: &mut String, agg: &[(String, Vec<(String, Cell)>)], slo: &Objectives, width: usize) {
    let _ = writeln!(s, "SLO: {}", slo.describe());
    let rank = |cells: &[(String, Cell)]| get(cells, "slo_rank").unwrap_or(f64::MAX) as usize;
    let mut ranked: Vec<&(String, Vec<(String, Cell)>)> = agg.iter().collect();
    ranked.sort_by_key(|(_, cells)| rank(cells));
    let digits = agg.len().to_string().len();
    for (name, cells) in ranked.iter().take(MAX_TABLE_ROWS) {
        // A variant whose every run stopped at a guard rail is not ranked.
        let (rank, dot) = match get(cells, "slo_rank") {
            Some(r) => ((r as usize).to_string(), "."),
            None => ("-".to_string(), " "),
        };
        let verdict = if get(cells, "slo_pass") == Some(1.0) {
            "pass".to_string()
        } else {
            let failed = cells
                .iter()
                .find(|(n, _)| n == "slo_failed")
                .map_or(String::new(), |(_, c)| c.render());
            format!("{}  {failed}", crate::metrics::slo::miss_word(&failed))
        };
        let _ = writeln!(s, "{rank:>digits$}{dot} {name:<width$}  {verdict}");
    }
    if let Some(more) = more_rows(agg.len(), "variants", "summary_by_variant.csv") {
        let _ = writeln!(s, "{more}");
    }
}

/// Formats the summary table, then the figures after the incident (when
/// the scenario has one) and the verdicts against its SLO (when it has
/// one). A variant with runs stopped by a guard rail says so in its row:
/// those runs have no success rate and no recovery verdict, and its other
/// figures cover only the time they reached.
pub fn summary_text(scenario: &str, results: &[RunResult], slo: Option<&Objectives>) -> String {
    let agg = by_variant(results);
    let mut s = String::new();
    let width = agg.iter().map(|(n, _)| n.len()).max().unwrap_or(7).max(7);
    let aborted_runs = results
        .iter()
        .filter(|r| r.summary.aborted.is_some())
        .count();
    let aborted_note = if aborted_runs > 0 {
        format!(", {aborted_runs} ABORTED by a guard rail")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "stormsim: {scenario} ({}{aborted_note})",
        crate::human::plural(results.len(), "run")
    );
    let _ = writeln!(
        s,
        "{:<width$}  {:>13}  {:>12}  {:>14}  {:>14}  {:>20}",
        "variant", "amplification", "success rate", "peak load/cap", "goodput (/s)", "recovery"
    );
    for (name, cells) in agg.iter().take(MAX_TABLE_ROWS) {
        let f = |n: &str| get(cells, n);
        let runs = f("replicates").unwrap_or(0.0) as usize;
        let aborted = f("aborted_runs").unwrap_or(0.0) as usize;
        // A ratio with nothing to divide by (no request ended, no capacity)
        // is not applicable: `n/a`, never 0.
        let success = match f("success_rate_mean") {
            Some(rate) => format!("{:.2}%", rate * 100.0),
            None if aborted > 0 => "ABORTED".to_string(),
            None => NOT_APPLICABLE.to_string(),
        };
        let times =
            |n: &str| f(n).map_or_else(|| NOT_APPLICABLE.to_string(), |v| format!("{v:.2}x"));
        let _ = writeln!(
            s,
            "{:<width$}  {:>13}  {:>12}  {:>14}  {:>14.1}  {:>20}",
            name,
            times("amplification_mean"),
            success,
            times("peak_load_ratio_mean"),
            f("goodput_mean").unwrap_or(0.0),
            recovery_text(cells, runs, aborted, undecided_of(results, name)),
        );
    }
    if let Some(more) = more_rows(agg.len(), "variants", "summary_by_variant.csv") {
        let _ = writeln!(s, "{more}");
    }
    classes_text(&mut s, results, agg.iter().map(|(n, _)| n.as_str()), width);
    if results
        .iter()
        .any(|r| r.summary.recovered.is_some() || r.summary.undecided.is_some())
    {
        after_text(&mut s, &agg, width);
    }
    if let Some(slo) = slo {
        slo_text(&mut s, &agg, slo, width);
    }
    let stopped: Vec<String> = agg
        .iter()
        .filter_map(|(name, cells)| Some(format!("note: {name}: {}", stopped_flag(cells)?)))
        .collect();
    capped(
        &mut s,
        &stopped,
        "variants with runs stopped early",
        "summary_by_variant.csv (aborted_runs)",
    );
    let partial = partial_notes(results, agg.iter().map(|(n, _)| n.as_str()));
    capped(
        &mut s,
        &partial,
        "figures without a value in some runs",
        "summary.csv",
    );
    let aborted: Vec<String> = results
        .iter()
        .filter_map(|r| {
            let why = r.summary.aborted.as_ref()?;
            Some(format!(
                "warning: {} replicate {} was aborted: {why}",
                r.variant, r.replicate
            ))
        })
        .collect();
    capped(&mut s, &aborted, "aborted runs", "summary.csv (aborted)");
    if aborted_runs > 0 {
        let _ = writeln!(
            s,
            "warning: aborted runs have no success rate or recovery verdict; a variant's \
             figures leave them out (when all its runs stopped, they cover only the time \
             before the stop)"
        );
    }
    let unended = unended_warnings(results, agg.iter().map(|(n, _)| n.as_str()));
    capped(
        &mut s,
        &unended,
        "variants with requests that had not ended",
        "summary.csv (in_flight_at_end)",
    );
    s
}

/// The success rates a variant's mean is over only some of its runs for:
/// a run in which no request ended (outside the incidents, for the second)
/// has none, and `summary_by_variant.csv`'s mean is over the runs that
/// have one. One line per variant and figure, when some (not all) of its
/// runs that reached their end have no value.
fn partial_notes<'a>(
    results: &[RunResult],
    variants: impl Iterator<Item = &'a str>,
) -> Vec<String> {
    type Figure = fn(&crate::metrics::table::Summary) -> Option<f64>;
    const FIGURES: [(&str, &str, Figure); 2] = [
        ("success_rate", "no request ended", |s| s.success_rate),
        (
            "success_rate_outside_incidents",
            "no request ended outside the incidents",
            |s| s.success_rate_outside_incidents,
        ),
    ];
    let mut out = Vec::new();
    for name in variants {
        let runs: Vec<_> = results
            .iter()
            .filter(|r| r.variant == name && r.summary.aborted.is_none())
            .collect();
        for (column, why, figure) in FIGURES {
            let missing = runs.iter().filter(|r| figure(&r.summary).is_none()).count();
            if missing == 0 || missing == runs.len() {
                continue;
            }
            let (n, with) = (runs.len(), runs.len() - missing);
            let over = if with == 1 {
                "the 1 run that has one".to_string()
            } else {
                format!("the {with} runs that have one")
            };
            out.push(format!(
                "note: {name}: {column} has no value in {missing} of {} ({why}); its mean is over {over}",
                crate::human::plural(n, "run")
            ));
        }
    }
    out
}

/// Requests that had not ended when the run did: some are always in
/// flight, more in a storm; more than 5% of a variant's requests means
/// something held them (no timeout, no deadline, a long backoff, a run that
/// ends inside the incident): say so, and how many of them waited long
/// enough to count as hung (not succeeded in the success rates and the
/// SLO's verdict, `metrics::table::hung_bound`).
fn unended_warnings<'a>(
    results: &[RunResult],
    variants: impl Iterator<Item = &'a str>,
) -> Vec<String> {
    variants
        .filter_map(|name| {
            let runs = results.iter().filter(|r| r.variant == name && r.summary.aborted.is_none());
            let (open, hung, all) = runs.fold((0u64, 0u64, 0u64), |(o, h, a), r| {
                (
                    o + r.summary.in_flight_at_end,
                    h + r.summary.hung_at_end,
                    a + r.summary.logical_requests,
                )
            });
            (all > 0 && open * 20 > all).then(|| {
                format!(
                    "warning: variant {name}: {open} of {} ({:.1}%) had not ended when the run did (in_flight_at_end: held by no timeout or deadline, a long backoff, or an incident that lasts to the end); {hung} of them had waited longer than any request that ended and the recovery window (hung_at_end) and count as failed in the success rates and the SLO",
                    crate::human::plural(all, "request"),
                    open as f64 * 100.0 / all as f64
                )
            })
        })
        .collect()
}

/// One line per variant that missed the SLO, in variant order:
/// `variant NAME missed the SLO: <slo_failed>` (for `--fail-on-slo`).
pub fn slo_failures(results: &[RunResult]) -> Vec<String> {
    by_variant(results)
        .iter()
        .filter(|(_, cells)| get(cells, "slo_pass") == Some(0.0))
        .map(|(name, cells)| {
            let failed = cells
                .iter()
                .find(|(n, _)| n == "slo_failed")
                .map_or(String::new(), |(_, c)| c.render());
            format!("variant {name} missed the SLO: {failed}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(pairs: &[(&str, f64)]) -> Vec<(String, Cell)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), Cell::Float(*v)))
            .collect()
    }

    #[test]
    fn aborted_runs_have_no_recovery_verdict() {
        let none = cells(&[]);
        let no = (0, None);
        assert_eq!(recovery_text(&none, 3, 0, no), "no trigger");
        assert_eq!(recovery_text(&none, 3, 3, no), "ABORTED (3 of 3 runs)");
        assert_eq!(recovery_text(&none, 3, 1, no), "no trigger; 1 of 3 ABORTED");
        let some = cells(&[("recovered_fraction", 1.0), ("recovery_time_s_mean", 4.0)]);
        assert_eq!(recovery_text(&some, 3, 1, no), "4.0 s; 1 of 3 ABORTED");
        assert_eq!(recovery_text(&some, 3, 0, no), "4.0 s");
    }

    /// A run too short after the trigger has no verdict, and says why.
    #[test]
    fn undecided_runs_have_no_recovery_verdict() {
        let why = Undecided::TooShort {
            after_s: 2.0,
            window_s: 5.0,
        };
        let none = cells(&[]);
        assert_eq!(
            recovery_text(&none, 2, 0, (2, Some(why))),
            "undecided: run ends 2 s after the trigger, needs a 5 s recovery_window"
        );
        let some = cells(&[("recovered_fraction", 1.0), ("recovery_time_s_mean", 4.0)]);
        assert_eq!(
            recovery_text(&some, 3, 0, (1, Some(why))),
            "4.0 s; 1 of 3 undecided"
        );
    }
}
