//! What `stormsim tune` writes and prints: `tune.csv` (one row per
//! candidate, best first), `best.yaml` (the best settings as dotted paths,
//! which `--set`, a variant's `set` and `stormsim export --best` take) and
//! the console's ranked table.

use std::fmt::Write;

use serde_json::Value;

use super::{Candidate, Outcome, Standing, figure_of};
use crate::metrics::abort::Abort;
use crate::metrics::columns::format_float;
use crate::scenario::tune::show;

/// The figures every row of `tune.csv` carries (means over the runs), beside
/// the objective's.
pub const FIGURES: &[&str] = &[
    "success_rate",
    "success_rate_outside_incidents",
    "peak_load_ratio_after",
    "peak_load_ratio",
    "amplification",
    "latency_p99_ms",
    "recovery_time_s",
];

/// The mean of `figure` over a candidate's runs; None when any run has no
/// value (a run that never recovered has no recovery time).
pub fn mean(c: &Candidate, figure: &str) -> Option<f64> {
    let v: Option<Vec<f64>> = c.runs.iter().map(|s| figure_of(s, figure)).collect();
    v.filter(|v| !v.is_empty())
        .map(|v| v.iter().sum::<f64>() / v.len() as f64)
}

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), format_float)
}

/// The figures of the table: the objective's first, then [`FIGURES`].
fn figures(o: &Outcome) -> Vec<&str> {
    let mut f = vec![o.figure.as_str()];
    f.extend(FIGURES.iter().copied().filter(|&x| x != o.figure));
    f
}

/// `tune.csv`.
pub fn tune_csv(o: &Outcome) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["rank".into(), "candidate".into()];
    header.extend(o.space.paths.iter().map(|p| format!("set.{p}")));
    header.extend(["round".into(), "runs".into()]);
    if o.slo.is_some() {
        header.extend([
            "slo_pass".into(),
            "slo_pass_fraction".into(),
            "slo_failed".into(),
        ]);
    }
    let figs = figures(o);
    header.push(format!("{}_mean", figs[0]));
    header.push(format!("{}_ci95", figs[0]));
    header.extend(figs[1..].iter().map(|f| format!("{f}_mean")));
    header.push("aborted".into());
    header.push("invalid".into());
    w.write_record(&header)?;
    let ranks = o.best().is_some();
    for (i, (c, st)) in o.ranked.iter().enumerate() {
        let mut row: Vec<String> = vec![
            if c.finished() && ranks {
                (i + 1).to_string()
            } else {
                String::new()
            },
            format!("c{}", c.id),
        ];
        row.extend(c.values.iter().map(show));
        row.push(if c.invalid.is_none() {
            (c.round + 1).to_string()
        } else {
            String::new()
        });
        row.push(c.runs.len().to_string());
        if o.slo.is_some() {
            row.push(st.slo_pass.map_or(String::new(), |p| p.to_string()));
            row.push(opt(st.slo_pass_fraction));
            row.push(st.slo_failed.clone().unwrap_or_default());
        }
        row.push(opt(st.objective));
        row.push(opt(st.objective_ci95));
        row.extend(figs[1..].iter().map(|f| opt(mean(c, f))));
        row.push(c.aborted().map_or(String::new(), |a| a.to_string()));
        row.push(c.invalid.clone().unwrap_or_default());
        w.write_record(&row)?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// A value as YAML: plain when it reads back as the same string, else as
/// JSON (which YAML takes).
fn yaml_value(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let plain = !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
                && s.parse::<f64>().is_err()
                && !matches!(
                    s.to_ascii_lowercase().as_str(),
                    "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~"
                );
            if plain { s.clone() } else { v.to_string() }
        }
        other => other.to_string(),
    }
}

/// The settings of `c` as `--set` arguments.
pub fn set_args(o: &Outcome, c: &Candidate) -> Vec<String> {
    o.space
        .paths
        .iter()
        .zip(&c.values)
        .map(|(p, v)| format!("{p}={}", yaml_value(v)))
        .collect()
}

/// Why a search whose candidates ran names no best (`Outcome::best`).
/// Then no candidate is ranked either: the table and `tune.csv` leave
/// their rank empty (`-`), since an order without grounds is no ranking.
fn no_best(o: &Outcome) -> Option<String> {
    let ran = o.ranked.first().is_some_and(|(c, _)| c.invalid.is_none());
    if !ran || o.best().is_some() {
        return None;
    }
    if !o.ranked.iter().any(|(c, _)| c.finished()) {
        return Some(
            "no best: a guard rail stopped every candidate that ran, so none can be ranked".into(),
        );
    }
    let measured = o
        .ranked
        .iter()
        .any(|(c, st)| c.finished() && st.objective.is_some());
    if measured && let Some((c, _)) = o.ranked.first() {
        return Some(format!(
            "no best: the candidate that met the SLO in the most runs, c{}, has no value of {} (a run of it measured none), so the candidates cannot be ranked on it",
            c.id, o.figure
        ));
    }
    Some(format!(
        "no best: no run of any candidate had a value of {} (and none met an SLO), so none is ranked",
        o.figure
    ))
}

/// The SLO cell of the console's table: `pass`, or how the candidate
/// missed it with the share of its runs that met it: `fail` when a run
/// missed an objective by a value (or was aborted), `undecided` when
/// every miss had nothing to judge it by (`success_rate undecided`).
fn slo_cell(st: &Standing) -> String {
    match (st.slo_pass, st.slo_pass_fraction) {
        (Some(true), _) => "pass".into(),
        (_, Some(f)) => {
            let word = crate::metrics::slo::miss_word(st.slo_failed.as_deref().unwrap_or(""));
            let word = if word == "undecided" {
                "undecided"
            } else {
                "fail"
            };
            format!("{word} ({}% met)", format_float((f * 100.0).round()))
        }
        _ => String::new(),
    }
}

/// `best.yaml`: the best settings, commented with what they achieved.
pub fn best_yaml(o: &Outcome, scenario: &str, seed: u64, file: &str) -> String {
    let mut s = String::new();
    let Some((c, st)) = o.best() else {
        return match no_best(o) {
            Some(why) => format!("# stormsim tune: {why}\n"),
            None => "# stormsim tune: no candidate ran\n".into(),
        };
    };
    let _ = writeln!(
        s,
        "# stormsim tune: the best of {} for scenario `{scenario}` (seed {seed}), {} of {}",
        plural(o.ranked.len(), "candidate"),
        o.runs,
        plural(o.budget, "run")
    );
    let _ = writeln!(s, "# {}", achieved(o, c, st));
    let _ = writeln!(
        s,
        "# use it with `stormsim run {file} --set PATH=VALUE` for each line, under a variant's `set:`, or `stormsim export best.yaml --into FILE --format F ...`"
    );
    for (p, v) in o.space.paths.iter().zip(&c.values) {
        let _ = writeln!(s, "{p}: {}", yaml_value(v));
    }
    s
}

/// "maximize success_rate: 0.9987 ± 0.0004 over 27 runs; SLO met in 27 of 27 runs".
fn achieved(o: &Outcome, c: &Candidate, st: &Standing) -> String {
    let mut s = format!(
        "{} {}: {}",
        o.direction.word(),
        o.figure,
        st.objective.map_or("no value".into(), format_float)
    );
    if let Some(ci) = st.objective_ci95 {
        let _ = write!(s, " ± {}", format_float(ci));
    }
    let _ = write!(s, " over {}", plural(c.runs.len(), "run"));
    if let (Some(pass), Some(f)) = (st.slo_pass, st.slo_pass_fraction) {
        let met = (f * c.runs.len() as f64).round() as usize;
        if pass {
            let _ = match c.runs.len() {
                1 => write!(s, "; SLO met in its 1 run"),
                n => write!(s, "; SLO met in all {n} runs"),
            };
        } else {
            let _ = write!(
                s,
                "; SLO met in {met} of {} ({})",
                plural(c.runs.len(), "run"),
                st.slo_failed.as_deref().unwrap_or("")
            );
        }
    }
    s
}

/// The most candidates the console lists.
pub const SHOWN: usize = 10;

/// What of the scenario a search left out (it searches the scenario
/// itself): its variants, each with the paths it sets, and its swept
/// paths. `stormsim run` would run them, each over the printed settings.
#[derive(Clone, Debug, Default)]
pub struct LeftOut {
    pub variants: Vec<(String, Vec<String>)>,
    pub sweep: Vec<String>,
}

/// Whether setting `a` sets `b` or a part of it, or the other way round
/// (`layers.api.retry` and `layers.api.retry.max_attempts`).
fn overlaps(a: &str, b: &str) -> bool {
    let within = |x: &str, y: &str| x == y || x.strip_prefix(y).is_some_and(|r| r.starts_with('.'));
    within(a, b) || within(b, a)
}

/// The `--set` arguments that run what the search ran: the best settings,
/// and when the scenario has variants or a sweep, `variants=[]` and
/// `sweep={}` (else each variant and sweep point would run over the
/// settings, and one that sets a tuned field would replace its value);
/// and a note saying so.
fn run_command(o: &Outcome, c: &Candidate, left_out: &LeftOut) -> (Vec<String>, Option<String>) {
    let mut args = set_args(o, c);
    let mut dropped = Vec::new();
    if !left_out.variants.is_empty() {
        args.push("variants=[]".into());
        dropped.push(plural(left_out.variants.len(), "variant"));
    }
    if !left_out.sweep.is_empty() {
        args.push("sweep={}".into());
        dropped.push("sweep".to_string());
    }
    if dropped.is_empty() {
        return (args, None);
    }
    let tuned = |p: &str| o.space.paths.iter().any(|t| overlaps(t, p));
    let mut clash: Vec<String> = left_out
        .variants
        .iter()
        .filter_map(|(name, sets)| {
            let hit: Vec<&str> = sets
                .iter()
                .map(String::as_str)
                .filter(|p| tuned(p))
                .collect();
            (!hit.is_empty()).then(|| format!("variant `{name}` sets {}", hit.join(", ")))
        })
        .collect();
    let swept: Vec<&str> = left_out
        .sweep
        .iter()
        .map(String::as_str)
        .filter(|p| tuned(p))
        .collect();
    if !swept.is_empty() {
        clash.push(format!("the sweep sets {}", swept.join(", ")));
    }
    let mut note = format!(
        "  (without the scenario's {}, as the search ran it",
        dropped.join(" and ")
    );
    // One thing left out (the sweep, or one variant): "it".
    let one = dropped.len() == 1 && left_out.variants.len() <= 1;
    if clash.is_empty() {
        let _ = write!(
            note,
            "; drop `--set 'variants=[]'` or `--set 'sweep={{}}'` to compare {} over these settings)",
            if one { "it" } else { "them" }
        );
    } else {
        let _ = write!(
            note,
            "; kept, {} would replace tuned values: {})",
            if one { "it" } else { "they" },
            clash.join("; ")
        );
    }
    (args, Some(note))
}

use crate::human::{noun, plural};

/// The console's account of a search: the schedule, the best candidates
/// ranked, and the best settings as a command (that runs what the search
/// ran: see `run_command`).
pub fn console_text(o: &Outcome, scenario: &str, file: &str, left_out: &LeftOut) -> String {
    let mut s = String::new();
    let rounds: Vec<String> = o
        .rounds
        .iter()
        .map(|r| format!("{} × {}", r.candidates, r.replicates))
        .collect();
    let valid = o.ranked.iter().filter(|(c, _)| c.invalid.is_none()).count();
    let _ = writeln!(
        s,
        "stormsim tune: {scenario}: {}, {} of a budget of {} (rounds of candidates × replicates: {})",
        plural(valid, "candidate"),
        plural(o.runs, "run"),
        o.budget,
        rounds.join(", ")
    );
    if o.drawn > o.distinct {
        let repeats = o.drawn - o.distinct;
        let size = o
            .space
            .size()
            .map_or(String::new(), |n| format!(" of the space's {n}"));
        let _ = writeln!(
            s,
            "{} of the {} points drawn repeated another (values round to the same whole number or choice) and ran once: {} distinct {}{size} {} tried",
            repeats,
            o.drawn,
            o.distinct,
            noun(o.distinct, "point"),
            if o.distinct == 1 { "was" } else { "were" }
        );
    }
    let invalid = o.ranked.len() - valid;
    if invalid > 0 {
        let _ = writeln!(
            s,
            "{} the scenario does not take {} not run (see the `invalid` column of tune.csv)",
            plural(invalid, "candidate"),
            if invalid == 1 { "was" } else { "were" }
        );
    }
    let _ = write!(s, "objective: {} {}", o.direction.word(), o.figure);
    if let Some(slo) = &o.slo {
        let _ = write!(
            s,
            ", among the settings that meet the SLO ({})",
            slo.describe()
        );
    }
    s.push_str("\n\n");
    // The table: rank, candidate, a column per path (the shortest end of
    // it that no other path shares), runs, SLO, objective.
    let mut head: Vec<String> = vec!["rank".into(), "candidate".into()];
    head.extend(short_names(&o.space.paths));
    head.push("runs".into());
    if o.slo.is_some() {
        head.push("slo".into());
    }
    head.push(format!("{} (95% CI)", o.figure));
    let mut rows: Vec<Vec<String>> = vec![head];
    let ranks = o.best().is_some();
    for (i, (c, st)) in o
        .ranked
        .iter()
        .filter(|(c, _)| c.finished())
        .take(SHOWN)
        .enumerate()
    {
        let rank = if ranks {
            (i + 1).to_string()
        } else {
            "-".to_string()
        };
        let mut row = vec![rank, format!("c{}", c.id)];
        row.extend(c.values.iter().map(show));
        row.push(c.runs.len().to_string());
        if o.slo.is_some() {
            row.push(slo_cell(st));
        }
        let mut fig = st.objective.map_or("-".into(), format_float);
        if let Some(ci) = st.objective_ci95 {
            let _ = write!(fig, " ± {}", format_float(ci));
        }
        row.push(fig);
        rows.push(row);
    }
    // Candidates a guard rail stopped: shown, not ranked (their figures
    // cover only the time the stopped run reached).
    let stopped: Vec<(&Candidate, Abort)> = o.stopped().collect();
    for (c, _) in stopped.iter().take(SHOWN) {
        let mut row = vec!["-".to_string(), format!("c{}", c.id)];
        row.extend(c.values.iter().map(show));
        row.push(c.runs.len().to_string());
        if o.slo.is_some() {
            row.push("ABORTED".into());
        }
        row.push(if o.slo.is_some() { "-" } else { "ABORTED" }.into());
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|k| rows.iter().map(|r| r[k].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
    }
    let finished = valid - stopped.len();
    if finished > SHOWN {
        let _ = writeln!(s, "... {} more in tune.csv", finished - SHOWN);
    }
    if stopped.len() > SHOWN {
        let _ = writeln!(
            s,
            "... {} more stopped candidates in tune.csv",
            stopped.len() - SHOWN
        );
    }
    for line in stopped_lines(o) {
        let _ = writeln!(s, "ABORTED, not ranked: {line}");
    }
    if let Some(why) = no_best(o) {
        if o.ranked.iter().any(|(c, _)| c.finished()) {
            let _ = writeln!(
                s,
                "\n{why}; no best.yaml was written: choose an objective this scenario measures"
            );
        } else {
            let _ = writeln!(s, "\n{why}; no best.yaml was written");
        }
    }
    if let Some((c, st)) = o.best() {
        let _ = writeln!(s, "\nbest: c{} ({})", c.id, achieved(o, c, st));
        if let Some(close) = too_close(o) {
            let _ = writeln!(s, "{close}");
        }
        let (args, note) = run_command(o, c, left_out);
        let args: Vec<String> = args.iter().map(|a| format!("--set '{a}'")).collect();
        let _ = writeln!(s, "  stormsim run {file} {}", args.join(" "));
        if let Some(note) = note {
            let _ = writeln!(s, "{note}");
        }
    }
    s
}

/// What a guard rail stopped, one line per reason: how many candidates
/// (and which), why, and how to lift the limit. Empty when every run
/// reached its end.
pub fn stopped_lines(o: &Outcome) -> Vec<String> {
    let ran = o.ranked.iter().filter(|(c, _)| c.invalid.is_none()).count();
    let mut by_reason: Vec<(Abort, Vec<usize>)> = Vec::new();
    for (c, why) in o.stopped() {
        match by_reason.iter_mut().find(|(a, _)| *a == why) {
            Some((_, ids)) => ids.push(c.id),
            None => by_reason.push((why, vec![c.id])),
        }
    }
    by_reason
        .into_iter()
        .map(|(why, ids)| {
            let mut named: Vec<String> = ids.iter().take(SHOWN).map(|i| format!("c{i}")).collect();
            if ids.len() > SHOWN {
                named.push("...".into());
            }
            let advice = why.limit_field().map_or(String::new(), |(field, _)| {
                format!("; raise it in the scenario or with --set '{field}=N'")
            });
            format!(
                "{} of {} ({}) stopped early: {why}{advice}",
                ids.len(),
                plural(ran, "candidate"),
                named.join(", ")
            )
        })
        .collect()
}

/// A caution when the best candidate's lead over the runner-up of its
/// round is within their 95% confidence intervals.
fn too_close(o: &Outcome) -> Option<String> {
    let mut valid = o.ranked.iter().filter(|(c, _)| c.finished());
    let (a, sa) = valid.next()?;
    let (b, sb) = valid.next()?;
    if a.round != b.round || sa.slo_pass != sb.slo_pass {
        return None;
    }
    let (ma, mb) = (sa.objective?, sb.objective?);
    let (ca, cb) = (sa.objective_ci95?, sb.objective_ci95?);
    ((ma - mb).abs() <= ca + cb).then(|| {
        format!(
            "  c{} and c{} are within each other's 95% confidence intervals: the runs cannot tell them apart on {} (a larger budget narrows them)",
            a.id, b.id, o.figure
        )
    })
}

/// Each dotted path's shortest end (in whole segments) that no other of
/// `paths` ends with: `max_attempts` alone, but `calls.retry.max_attempts`
/// and `pg.retry.max_attempts` for two paths that both end in it (the
/// console's column names). A path that is the end of another is given
/// whole.
fn short_names(paths: &[String]) -> Vec<String> {
    let segments: Vec<Vec<&str>> = paths.iter().map(|p| p.split('.').collect()).collect();
    let ends_with =
        |q: &[&str], end: &[&str]| q.len() >= end.len() && q[q.len() - end.len()..] == *end;
    segments
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (1..=p.len())
                .map(|k| &p[p.len() - k..])
                .find(|end| {
                    segments
                        .iter()
                        .enumerate()
                        .all(|(j, q)| j == i || !ends_with(q, end))
                })
                .unwrap_or(p)
                .join(".")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn column_names_tell_paths_apart() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            short_names(&p(&[
                "clients.calls.retry.max_attempts",
                "services.gw.calls.pg.retry.max_attempts",
                "layers.api.retry.backoff.base",
            ])),
            p(&["calls.retry.max_attempts", "pg.retry.max_attempts", "base"])
        );
        // One path the end of another: given whole.
        assert_eq!(
            short_names(&p(&["retry.max_attempts", "api.retry.max_attempts"])),
            p(&["retry.max_attempts", "api.retry.max_attempts"])
        );
        assert_eq!(short_names(&p(&["a.b"])), p(&["b"]));
    }

    #[test]
    fn overlapping_paths() {
        assert!(overlaps(
            "layers.api.retry",
            "layers.api.retry.max_attempts"
        ));
        assert!(overlaps("a.b", "a.b"));
        assert!(!overlaps("a.b", "a.bc"));
        assert!(!overlaps("a.b.c", "a.b.d"));
    }

    #[test]
    fn yaml_values_read_back_as_written() {
        assert_eq!(yaml_value(&json!("full")), "full");
        assert_eq!(yaml_value(&json!("120ms")), "120ms");
        assert_eq!(yaml_value(&json!(3)), "3");
        assert_eq!(yaml_value(&json!(0.25)), "0.25");
        assert_eq!(yaml_value(&json!("3")), "\"3\"");
        assert_eq!(yaml_value(&json!("no")), "\"no\"");
        assert_eq!(yaml_value(&json!("a b")), "\"a b\"");
        assert_eq!(
            yaml_value(&json!({"proportional": 0.5})),
            "{\"proportional\":0.5}"
        );
    }
}
