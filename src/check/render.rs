//! The check report as text for people and as JSON for machines.

use std::fmt::Write;

use super::variants::Reviews;
use super::{LayerReport, Report, Severity};
use crate::escape::escape;
use crate::human::plural;

/// A time for the tables: `250 ms`, `16.70 s`, `25 min`, `3 h 20 min`,
/// `12 d 4 h`, `over a year`, or `unbounded`.
fn secs(v: Option<f64>) -> String {
    v.map_or("unbounded".to_string(), super::findings::fmt_s)
}

/// How long a request takes in the worst case, in a sentence.
fn takes(worst: Option<f64>, expected: Option<f64>) -> String {
    let year = super::findings::OVER_A_YEAR;
    match (worst, expected) {
        (Some(w), _) if secs(Some(w)) == year => format!("can take {year}"),
        (Some(w), Some(e)) => format!("takes up to {} (about {} at mean draws)", secs(Some(w)), secs(Some(e))),
        (Some(w), None) => format!("takes up to {}", secs(Some(w))),
        _ => "has no time bound: nothing gives up on an attempt that is never answered (no timeout, deadline or total_timeout bounds it)".into(),
    }
}

/// A multiple as people read it: `4x`, `1.10x`, `18x`; from 10^12 on,
/// only its order of magnitude ("at least 10^48x"), never a long float.
pub fn times(v: f64) -> String {
    if !v.is_finite() {
        "at least 10^308x".into()
    } else if v >= 1e12 {
        format!("at least 10^{}x", v.log10().floor() as i64)
    } else if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}x")
    } else {
        format!("{v:.2}x")
    }
}

/// "up to 4x", or "at least 10^48x" for a multiple too large to give
/// in full (never "up to at least").
fn up_to(v: f64) -> String {
    let t = times(v);
    if t.starts_with("at least") {
        t
    } else {
        format!("up to {t}")
    }
}

/// A rate in calls per second as people read it: `2000`; from 10^12 on,
/// its order of magnitude only (never 24 digits, never `inf`).
fn per_s(v: f64) -> String {
    if !v.is_finite() || v >= 1e12 {
        super::findings::count(v)
    } else {
        format!("{v:.0}")
    }
}

/// An offered rate in requests per second: whole rates as they are
/// (`500`), others to four significant digits (`0.01667` for one a
/// minute, never `0.016666666666666666`), from 10^12 on the order of
/// magnitude.
fn offered_per_s(v: f64) -> String {
    if !v.is_finite() || v >= 1e12 {
        return super::findings::count(v);
    }
    if v == v.trunc() {
        return format!("{v:.0}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    let mut t = format!("{v:.digits$}");
    if t.contains('.') {
        while t.ends_with('0') {
            t.pop();
        }
        if t.ends_with('.') {
            t.pop();
        }
    }
    t
}

/// The reviews of a scenario's variants as JSON (pretty-printed, one
/// trailing newline): the one review as [`json`] gives it when the
/// scenario runs one variant, else every different review with the
/// variants it is the review of.
pub fn json_reviews(r: &Reviews) -> String {
    if let Some(one) = r.single() {
        return json(one);
    }
    let mut text = serde_json::to_string_pretty(r)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot write the report: {e}\"}}"));
    text.push('\n');
    text
}

/// Names for a heading: `a`, `b` and `c`, the first few of many.
fn names_text(names: &[String], shown: usize) -> String {
    let quoted: Vec<String> = names
        .iter()
        .take(shown)
        .map(|n| format!("`{}`", escape(n)))
        .collect();
    let more = names.len().saturating_sub(shown);
    if more > 0 {
        format!("{} and {more} more", quoted.join(", "))
    } else {
        quoted.join(", ")
    }
}

/// The reviews of a scenario's variants as text: the one review as
/// [`human`] gives it when the scenario runs one variant; else each
/// different review under a heading naming its variants, then a table of
/// the variants side by side and what was left out.
pub fn human_reviews(r: &Reviews, file: &str) -> String {
    if let Some(one) = r.single() {
        return human(one, file);
    }
    let mut o = String::new();
    let reviewed = r.variants_total - r.not_reviewed;
    let _ = writeln!(
        o,
        "stormsim check: {file} (scenario `{}`): {reviewed} of {} reviewed, {}{}",
        escape(&r.scenario),
        plural(r.variants_total, "variant"),
        plural(
            r.reviews.len() + usize::from(!r.not_shown.is_empty()),
            "different review"
        ),
        if r.not_shown.is_empty() {
            ""
        } else {
            " or more"
        }
    );
    for v in &r.reviews {
        let title = if v.variants.len() == 1 {
            format!("variant {}", names_text(&v.variants, 1))
        } else {
            format!("variants {} (the same review)", names_text(&v.variants, 6))
        };
        let _ = writeln!(o, "\n== {title} ==");
        let body = human(&v.review, file);
        // Its first line names the file and scenario, said once above.
        o.push_str(body.split_once('\n').map_or("", |(_, rest)| rest));
    }
    let names: Vec<String> = r
        .reviews
        .iter()
        .map(|v| names_text(&v.variants, 2))
        .collect();
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(7)
        .max(7);
    let _ = writeln!(
        o,
        "\n{:<w$} {:>6} {:>8} {:>4} {:>13} {:>12}",
        "variants", "errors", "warnings", "info", "amplification", "worst case"
    );
    for (v, name) in r.reviews.iter().zip(&names) {
        let (e, wn, i) = super::variants::counts(&v.review);
        let _ = writeln!(
            o,
            "{name:<w$} {e:>6} {wn:>8} {i:>4} {:>13} {:>12}",
            times(v.review.stack.amplification),
            secs(v.review.stack.worst_case_s)
        );
    }
    if !r.not_shown.is_empty() {
        let errors = if r.not_shown_with_errors > 0 {
            format!(
                ", {} of them with an error finding",
                r.not_shown_with_errors
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "{} reviewed but not shown: {} from the {} above ({}){errors}",
            plural(r.not_shown.len(), "more variant"),
            if r.not_shown.len() == 1 {
                "its review differs"
            } else {
                "their reviews differ"
            },
            r.reviews.len(),
            names_text(&r.not_shown, 3)
        );
    }
    if r.not_reviewed > 0 {
        let _ = writeln!(
            o,
            "{} not reviewed: a check reviews at most {} (fewer with many attempts); review {} with --set or a smaller sweep",
            plural(r.not_reviewed, "more variant"),
            super::variants::MAX_REVIEWED,
            if r.not_reviewed == 1 { "it" } else { "them" }
        );
    }
    o
}

/// The report as JSON (pretty-printed, one trailing newline).
pub fn json(r: &Report) -> String {
    let mut text = serde_json::to_string_pretty(r)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot write the report: {e}\"}}"));
    text.push('\n');
    text
}

/// The report as text: a table of layers (of calls, services and paths
/// for a services graph), the stack, the findings.
pub fn human(r: &Report, file: &str) -> String {
    if !r.calls.is_empty() {
        return human_graph(r, file);
    }
    let mut o = String::new();
    let s = &r.stack;
    let _ = writeln!(o, "stormsim check: {file} (scenario `{}`)", r.scenario);
    let _ = writeln!(
        o,
        "deadline: {}   peak offered: {}/s",
        s.deadline_s.map_or("none".into(), |d| secs(Some(d))),
        offered_per_s(s.peak_offered_per_s)
    );
    if r.layers.is_empty() {
        let _ = writeln!(
            o,
            "\nno layers: clients call the dependency once, no retries"
        );
    } else {
        let name = |l: &super::LayerReport| match &l.preset {
            Some(p) => format!("{} ({p})", l.name),
            None => l.name.clone(),
        };
        let w = r
            .layers
            .iter()
            .map(|l| name(l).len())
            .max()
            .unwrap_or(5)
            .max(5);
        let _ = writeln!(
            o,
            "\n{:<w$} {:>8} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10}",
            "layer",
            "attempts",
            "fan-out",
            "attempt max",
            "worst case",
            "expected",
            "calls in",
            "budgeted"
        );
        for l in &r.layers {
            let _ = writeln!(
                o,
                "{:<w$} {:>8} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10}",
                name(l),
                l.max_attempts,
                l.fan_out,
                secs(l.attempt_s),
                secs(l.worst_case_s),
                secs(l.expected_s),
                times(l.calls_per_request),
                times(l.budgeted_attempts)
            );
        }
        for l in &r.layers {
            if l.sleeps_worst_s.is_empty() {
                continue;
            }
            retry_notes(&mut o, l);
            let _ = writeln!(o, "  {}: worst case: {}", l.name, l.worst_case);
        }
    }
    let fits = match s.fits_deadline {
        Some(true) => " (fits the deadline)".to_string(),
        Some(false) => format!(
            " (does not fit the deadline: {})",
            attempts_that_fit(s.attempts_within_deadline, "outermost attempt", "")
        ),
        None => String::new(),
    };
    let _ = writeln!(
        o,
        "\nstack: in the worst case ({}), a request {}{fits}",
        s.worst_case,
        takes(s.worst_case_s, s.expected_s)
    );
    let per = if s.deliveries > 1 {
        format!(
            "per message (up to {} deliveries, each a logical request)",
            s.deliveries
        )
    } else {
        "per logical request".to_string()
    };
    let _ = writeln!(
        o,
        "amplification: {} calls at the dependency {per}: {}; {} sustained with the budgets during an outage",
        up_to(s.amplification),
        s.amplification_words,
        times(s.budgeted_amplification)
    );
    findings(&mut o, r);
    o
}

/// The findings and their count.
/// The notes of a policy that retries: its first sleeps (worst and mean)
/// and its budget.
fn retry_notes(o: &mut String, l: &LayerReport) {
    let shown = 6.min(l.sleeps_worst_s.len());
    let fmt = |v: &[f64]| {
        v[..shown]
            .iter()
            .map(|x| secs(Some(*x)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let more = if l.sleeps_worst_s.len() > shown {
        format!(", ... ({} retries)", l.sleeps_worst_s.len())
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "  {}: sleeps worst {}{more}; mean {}{more}",
        l.name,
        fmt(&l.sleeps_worst_s),
        fmt(&l.sleeps_mean_s)
    );
    let bounded = if l.bounded_by.is_empty() {
        String::new()
    } else {
        format!("; bounded by {}", l.bounded_by.join(", "))
    };
    let _ = writeln!(o, "  {}: budget: {}{bounded}", l.name, l.budget_note);
}

fn findings(o: &mut String, r: &Report) {
    if r.findings.is_empty() {
        let _ = writeln!(o, "\nno findings");
    } else {
        let _ = writeln!(o, "\nfindings:");
        for f in &r.findings {
            let sev = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            let _ = writeln!(o, "  {sev:<7} {} [{}]: {}", f.code, f.path, f.message);
            let _ = writeln!(o, "          fix: {}", f.fix);
        }
    }
    let count = |sev| r.findings.iter().filter(|f| f.severity == sev).count();
    let _ = writeln!(
        o,
        "\n{}, {}, {} info",
        plural(count(Severity::Error), "error"),
        plural(count(Severity::Warning), "warning"),
        count(Severity::Info)
    );
}

/// A column of `cells` as wide as its widest cell (at least `min`).
fn width<'a>(cells: impl Iterator<Item = &'a str>, min: usize) -> usize {
    cells.map(|c| c.chars().count()).max().unwrap_or(0).max(min)
}

/// The report of a services graph as text: its calls (as layers), its
/// services, its paths, the request as a whole and the findings.
fn human_graph(r: &Report, file: &str) -> String {
    let mut o = String::new();
    let s = &r.stack;
    let _ = writeln!(o, "stormsim check: {file} (scenario `{}`)", r.scenario);
    let _ = writeln!(
        o,
        "deadline: {}   peak offered: {}/s",
        s.deadline_s.map_or("none".into(), |d| secs(Some(d))),
        offered_per_s(s.peak_offered_per_s)
    );
    let name = |c: &super::graph::CallReport| match &c.review.preset {
        Some(p) => format!("{} ({p})", c.review.name),
        None => c.review.name.clone(),
    };
    let names: Vec<String> = r.calls.iter().map(name).collect();
    let w = width(names.iter().map(String::as_str), 4);
    let _ = writeln!(
        o,
        "\n{:<w$} {:>8} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "call",
        "attempts",
        "fan-out",
        "attempt max",
        "worst case",
        "expected",
        "calls in",
        "budgeted"
    );
    for (c, n) in r.calls.iter().zip(&names) {
        let l = &c.review;
        let _ = writeln!(
            o,
            "{n:<w$} {:>8} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10}",
            l.max_attempts,
            l.fan_out,
            secs(l.attempt_s),
            secs(l.worst_case_s),
            secs(l.expected_s),
            times(l.calls_per_request),
            times(l.budgeted_attempts)
        );
    }
    for c in &r.calls {
        let l = &c.review;
        let how = match (c.parallel, c.optional) {
            (true, true) => " (parallel, optional)",
            (true, false) => " (parallel)",
            (false, true) => " (optional)",
            (false, false) => "",
        };
        let _ = writeln!(o, "  {}: {} → {}{how}", l.name, c.caller, c.callee);
        if !l.sleeps_worst_s.is_empty() {
            retry_notes(&mut o, l);
        }
        let _ = writeln!(o, "  {}: worst case: {}", l.name, l.worst_case);
    }
    let sw = width(r.services.iter().map(|x| x.name.as_str()), 7);
    let _ = writeln!(
        o,
        "\n{:<sw$} {:>10} {:>10} {:>12} {:>14}",
        "service", "calls in", "budgeted", "capacity/s", "peak calls/s"
    );
    for x in &r.services {
        let focus = if x.focus { "  (analysis.service)" } else { "" };
        let _ = writeln!(
            o,
            "{:<sw$} {:>10} {:>10} {:>12} {:>14}{focus}",
            x.name,
            times(x.calls_per_request),
            times(x.budgeted_calls_per_request),
            x.capacity_per_s.map_or("unlimited".to_string(), per_s),
            per_s(x.peak_calls_per_s),
        );
    }
    let total = r.paths_total.unwrap_or(r.paths.len() as u64);
    let shown = if total > r.paths.len() as u64 {
        format!(" ({} of {total} shown)", r.paths.len())
    } else {
        String::new()
    };
    let _ = writeln!(o, "\npaths from the clients{shown}:");
    for p in &r.paths {
        let fits = match p.fits_deadline {
            Some(true) => "; fits the deadline".to_string(),
            Some(false) => format!(
                "; does not fit the deadline: {}",
                attempts_that_fit(
                    p.attempts_within_deadline,
                    "attempt",
                    " of the clients' call"
                )
            ),
            None => String::new(),
        };
        let _ = writeln!(
            o,
            "  {}: up to {} (about {} at mean draws); {} calls at `{}`{fits}",
            p.calls.join(" → "),
            secs(p.worst_case_s),
            secs(p.expected_s),
            times(p.amplification),
            p.services.last().map_or("", String::as_str)
        );
    }
    let fits = match s.fits_deadline {
        Some(true) => " (fits the deadline)".to_string(),
        Some(false) => format!(
            " (does not fit the deadline: {})",
            attempts_that_fit(
                s.attempts_within_deadline,
                "attempt",
                " of the clients' call"
            )
        ),
        None => String::new(),
    };
    let _ = writeln!(
        o,
        "\nrequest: in the worst case ({}), a request {}{fits}",
        s.worst_case,
        takes(s.worst_case_s, s.expected_s)
    );
    let per = if s.deliveries > 1 {
        format!(
            "per message (up to {} deliveries, each a logical request)",
            s.deliveries
        )
    } else {
        "per logical request".to_string()
    };
    let _ = writeln!(
        o,
        "amplification: {} calls at `{}` (analysis.service) {per} ({}); {} sustained with the budgets during an outage",
        up_to(s.amplification),
        s.service.as_deref().unwrap_or("?"),
        s.amplification_words,
        times(s.budgeted_amplification)
    );
    findings(&mut o, r);
    o
}

/// How many attempts fit the deadline, in words: `about 1 attempt of
/// the clients' call does`, `about 3 outermost attempts do` (`word` the
/// noun counted, `after` what follows it).
fn attempts_that_fit(attempts: Option<u32>, word: &str, after: &str) -> String {
    let n = attempts.unwrap_or(1);
    let verb = if n == 1 { "does" } else { "do" };
    format!("about {}{after} {verb}", plural(n, word))
}

#[cfg(test)]
mod tests {
    use super::offered_per_s;

    #[test]
    fn an_offered_rate_is_whole_or_four_significant_digits() {
        assert_eq!(offered_per_s(500.0), "500");
        assert_eq!(offered_per_s(1.0 / 60.0), "0.01667");
        assert_eq!(offered_per_s(2.5), "2.5");
        assert_eq!(offered_per_s(1200.5), "1200");
        assert_eq!(offered_per_s(33.333333), "33.33");
        assert_eq!(offered_per_s(0.0), "0");
        assert!(
            offered_per_s(1e15).contains("10^15"),
            "{}",
            offered_per_s(1e15)
        );
    }
}
