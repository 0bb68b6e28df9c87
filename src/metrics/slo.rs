//! Service-level objectives: what "good" means for a service (the
//! scenario's `slo`), and the verdict of a run and of a variant against
//! them (README, "Service-level objectives").
//!
//! A run passes when it meets every objective:
//!
//! - `success_rate`: `success_rate_outside_incidents` at least this;
//! - `latency_p99`: `latency_p99_outside_ms` at most this;
//! - `peak_load_after`: `peak_load_ratio_after` at most this;
//! - `recovery_within`: `recovery_time_s` at most this (a run that never
//!   recovered misses it, and so does one too short after the trigger to
//!   tell, `undecided`; without a trigger there is nothing to recover
//!   from, and it is met).
//!
//! A figure that has no value (a ratio of nothing: nothing ended outside
//! the incidents, say) is `undecided`, like a recovery too short to tell:
//! nothing showed the objective met, so it counts as missed (`slo_pass`
//! false, `--fail-on-slo` exits 1) and reads `success_rate undecided <
//! 0.99`, never a value. A run stopped by a guard rail misses the SLO as
//! a whole (`aborted`). `slo_failed` lists the objectives
//! missed as `<objective> <measured> <op> <target>`, separated by `; `
//! (`success_rate 0.9912 < 0.999; recovery_within never > 60s`; a
//! measured value to 4 significant digits, more where needed to tell it
//! from the target).
//!
//! A variant passes when every one of its replicates passes; its
//! `slo_failed` lists each objective some replicate missed, with the worst
//! value measured and in how many runs (`peak_load_after 1.41 > 1.2 in 2
//! of 5 runs`). Variants are ranked ([`rank`]): passing ones first, then
//! by the share of replicates that passed, the number of objectives
//! missed, and then by the figures the objectives judge, best first:
//! success rate outside incidents, peak load after the incident, p99
//! latency outside incidents, recovery time.

use std::cmp::Ordering;
use std::fmt::Write;

use super::columns::{Cell, format_float};
use super::table::Summary;

/// The objectives of an SLO; `None` where the SLO sets none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Objectives {
    /// The least success rate outside the incident windows.
    pub success_rate: Option<f64>,
    /// The most p99 latency outside the incident windows, in ms.
    pub latency_p99_ms: Option<f64>,
    /// The most peak load ÷ capacity after the incident.
    pub peak_load_after: Option<f64>,
    /// The longest recovery time, in seconds.
    pub recovery_within_s: Option<f64>,
}

/// One objective of an SLO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Objective {
    SuccessRate,
    LatencyP99,
    PeakLoadAfter,
    RecoveryWithin,
}

impl Objective {
    pub const ALL: [Objective; 4] = [
        Objective::SuccessRate,
        Objective::LatencyP99,
        Objective::PeakLoadAfter,
        Objective::RecoveryWithin,
    ];

    /// Its field in the scenario's `slo`.
    pub fn name(self) -> &'static str {
        match self {
            Objective::SuccessRate => "success_rate",
            Objective::LatencyP99 => "latency_p99",
            Objective::PeakLoadAfter => "peak_load_after",
            Objective::RecoveryWithin => "recovery_within",
        }
    }

    fn from_name(name: &str) -> Option<Objective> {
        Objective::ALL.into_iter().find(|o| o.name() == name)
    }

    /// The summary column it judges.
    pub fn column(self) -> &'static str {
        match self {
            Objective::SuccessRate => "success_rate_outside_incidents",
            Objective::LatencyP99 => "latency_p99_outside_ms",
            Objective::PeakLoadAfter => "peak_load_ratio_after",
            Objective::RecoveryWithin => "recovery_time_s",
        }
    }

    /// Whether more is better.
    fn higher_is_better(self) -> bool {
        self == Objective::SuccessRate
    }

    fn unit(self) -> &'static str {
        match self {
            Objective::LatencyP99 => "ms",
            Objective::RecoveryWithin => "s",
            Objective::SuccessRate | Objective::PeakLoadAfter => "",
        }
    }

    /// A value of this objective with its unit.
    fn show(self, v: f64) -> String {
        format!("{}{}", format_float(v), self.unit())
    }

    /// How a value that misses is compared with the target.
    fn op(self) -> &'static str {
        if self.higher_is_better() { "<" } else { ">" }
    }
}

/// What a run measured for an objective it missed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measured {
    Value(f64),
    /// It never recovered (metastable).
    Never,
    /// Nothing showed it met or missed: the run ended too soon after the
    /// trigger to tell, or the figure has no value (a ratio of nothing).
    Undecided,
}

impl Measured {
    /// Larger is worse, for `o`: never, then by value, then undecided. A
    /// miss some run measured outweighs one no run could judge, so a
    /// variant whose runs missed by a value and by having none reads as
    /// the value it missed by (`FAIL`), not as `undecided`.
    fn badness(self, o: Objective) -> (u8, f64) {
        match self {
            Measured::Undecided => (0, 0.0),
            Measured::Value(v) if o.higher_is_better() => (1, -v),
            Measured::Value(v) => (1, v),
            Measured::Never => (2, 0.0),
        }
    }

    /// As `Objective::show`, to 4 significant digits, or more when that
    /// is needed to tell it from `target` (at most 6 decimals): `3.353 >
    /// 1.5`, `0.99899 < 0.999`.
    fn show(self, o: Objective, target: f64) -> String {
        match self {
            Measured::Value(v) => {
                let round = |x: f64, d: i32| (x * 10f64.powi(d)).round();
                let magnitude = if v == 0.0 {
                    0
                } else {
                    v.abs().log10().floor() as i32
                };
                let decimals = |sig: i32| (sig - 1 - magnitude).clamp(0, 6);
                let d = (4..12)
                    .map(decimals)
                    .find(|&d| d == 6 || round(v, d) != round(target, d))
                    .unwrap_or(6);
                o.show(round(v, d) / 10f64.powi(d))
            }
            Measured::Never => "never".into(),
            Measured::Undecided => "undecided".into(),
        }
    }
}

/// An objective missed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Miss {
    pub objective: Objective,
    pub measured: Measured,
    pub target: f64,
}

/// A run's verdict: the objectives it missed (none: it passed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    pub aborted: bool,
    pub misses: Vec<Miss>,
}

impl Verdict {
    pub fn pass(&self) -> bool {
        !self.aborted && self.misses.is_empty()
    }

    /// The `slo_failed` cell: `<objective> <measured> <op> <target>`
    /// joined by `; ` (empty when it passed).
    pub fn failed_text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.aborted {
            parts.push("aborted".into());
        }
        for m in &self.misses {
            parts.push(format!(
                "{} {} {} {}",
                m.objective.name(),
                m.measured.show(m.objective, m.target),
                m.objective.op(),
                m.objective.show(m.target)
            ));
        }
        parts.join("; ")
    }
}

impl Objectives {
    /// Whether the SLO sets no objective.
    pub fn is_empty(&self) -> bool {
        Objective::ALL.iter().all(|&o| self.target(o).is_none())
    }

    pub fn target(&self, o: Objective) -> Option<f64> {
        match o {
            Objective::SuccessRate => self.success_rate,
            Objective::LatencyP99 => self.latency_p99_ms,
            Objective::PeakLoadAfter => self.peak_load_after,
            Objective::RecoveryWithin => self.recovery_within_s,
        }
    }

    /// The verdict of one run.
    pub fn judge(&self, s: &Summary) -> Verdict {
        let mut misses = Vec::new();
        for o in Objective::ALL {
            let Some(target) = self.target(o) else {
                continue;
            };
            let measured = match o {
                Objective::SuccessRate => s.success_rate_outside_incidents,
                Objective::LatencyP99 => s.latency_p99_outside_ms,
                Objective::PeakLoadAfter => s.peak_load_ratio_after,
                Objective::RecoveryWithin => match s.recovered {
                    // Too short after the trigger to tell: not shown to be
                    // met.
                    None if s.undecided.is_some() => {
                        misses.push(Miss {
                            objective: o,
                            measured: Measured::Undecided,
                            target,
                        });
                        continue;
                    }
                    // No trigger: nothing to recover from.
                    None if s.aborted.is_none() => continue,
                    Some(false) => {
                        misses.push(Miss {
                            objective: o,
                            measured: Measured::Never,
                            target,
                        });
                        continue;
                    }
                    _ => s.recovery_time_s,
                },
            };
            let met = measured.is_some_and(|v| {
                if o.higher_is_better() {
                    v >= target
                } else {
                    v <= target
                }
            });
            if !met {
                misses.push(Miss {
                    objective: o,
                    // No value (nothing ended outside the incidents, no
                    // full bucket after the trigger): nothing showed it
                    // met or missed.
                    measured: measured.map_or(Measured::Undecided, Measured::Value),
                    target,
                });
            }
        }
        Verdict {
            aborted: s.aborted.is_some(),
            misses,
        }
    }

    /// The objectives in words, for the console and the report:
    /// `success rate ≥ 99.9%, p99 latency ≤ 800 ms, ...`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.success_rate {
            parts.push(format!(
                "success rate outside incidents >= {}%",
                format_float(v * 100.0)
            ));
        }
        if let Some(v) = self.latency_p99_ms {
            parts.push(format!(
                "p99 latency outside incidents <= {} ms",
                format_float(v)
            ));
        }
        if let Some(v) = self.peak_load_after {
            parts.push(format!(
                "peak load after the incident <= {}x capacity",
                format_float(v)
            ));
        }
        if let Some(v) = self.recovery_within_s {
            parts.push(format!("recovery within {} s", format_float(v)));
        }
        parts.join(", ")
    }
}

/// How a run or variant that did not pass reads, from its `slo_failed`
/// cell: `undecided` when every objective it missed had nothing to judge
/// it by (`<objective> undecided ...`: nothing showed it met or missed;
/// it still counts as missed), else `FAIL`.
pub fn miss_word(failed: &str) -> &'static str {
    let mut entries = failed.split("; ").filter(|e| !e.is_empty()).peekable();
    let undecided = entries.peek().is_some()
        && entries.all(|e| e.split_whitespace().nth(1) == Some("undecided"));
    if undecided { "undecided" } else { "FAIL" }
}

/// One entry of an `slo_failed` cell read back.
fn parse_entry(entry: &str) -> Option<(Option<Miss>, bool)> {
    let words: Vec<&str> = entry.split_whitespace().collect();
    if words == ["aborted"] {
        return Some((None, true));
    }
    let [name, measured, _op, target] = words[..] else {
        return None;
    };
    let objective = Objective::from_name(name)?;
    let number = |w: &str| -> Option<f64> {
        w.strip_suffix(objective.unit())
            .unwrap_or(w)
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
    };
    let measured = match measured {
        "never" => Measured::Never,
        // `none`: how older tables wrote a figure without a value.
        "undecided" | "none" => Measured::Undecided,
        w => Measured::Value(number(w)?),
    };
    Some((
        Some(Miss {
            objective,
            measured,
            target: number(target)?,
        }),
        false,
    ))
}

/// The per-variant `slo_pass`, `slo_pass_fraction` and `slo_failed` cells
/// from its replicates' `slo_pass` and `slo_failed` cells.
pub fn aggregate(passes: &[Cell], failed: &[Cell]) -> [(String, Cell); 3] {
    let runs = passes.len();
    let passed = passes.iter().filter(|c| **c == Cell::Bool(true)).count();
    // Per objective: the worst miss and how many runs missed it.
    let mut worst: Vec<(Miss, usize)> = Vec::new();
    let mut aborted = 0;
    for cell in failed {
        let Cell::Text(text) = cell else { continue };
        for entry in text.split("; ").filter(|e| !e.is_empty()) {
            match parse_entry(entry) {
                Some((_, true)) => aborted += 1,
                Some((Some(m), _)) => {
                    match worst.iter_mut().find(|(w, _)| w.objective == m.objective) {
                        Some((w, n)) => {
                            *n += 1;
                            let o = m.objective;
                            if m.measured.badness(o).partial_cmp(&w.measured.badness(o))
                                == Some(Ordering::Greater)
                            {
                                *w = m;
                            }
                        }
                        None => worst.push((m, 1)),
                    }
                }
                _ => {}
            }
        }
    }
    worst.sort_by_key(|(m, _)| m.objective);
    let mut text = String::new();
    if aborted > 0 {
        let _ = write!(
            text,
            "aborted in {aborted} of {}",
            crate::human::plural(runs, "run")
        );
    }
    for (m, n) in &worst {
        if !text.is_empty() {
            text.push_str("; ");
        }
        let one = Verdict {
            aborted: false,
            misses: vec![*m],
        };
        let _ = write!(
            text,
            "{} in {n} of {}",
            one.failed_text(),
            crate::human::plural(runs, "run")
        );
    }
    [
        ("slo_pass".into(), Cell::Bool(runs > 0 && passed == runs)),
        (
            "slo_pass_fraction".into(),
            if runs == 0 {
                Cell::Missing
            } else {
                Cell::Float(passed as f64 / runs as f64)
            },
        ),
        (
            "slo_failed".into(),
            if text.is_empty() {
                Cell::Missing
            } else {
                Cell::Text(text)
            },
        ),
    ]
}

/// The figures a variant is ranked by, from its aggregated cells.
pub struct RankKey {
    pub pass: bool,
    pub pass_fraction: f64,
    pub objectives_missed: usize,
    /// The means of the judged figures, in `RANK_ORDER`, each signed so
    /// that larger is better (missing: worst).
    pub figures: [f64; 4],
}

/// The figures that order variants with the same verdict: success first,
/// then the load the service sees after the incident, then latency and
/// recovery.
const RANK_ORDER: [Objective; 4] = [
    Objective::SuccessRate,
    Objective::PeakLoadAfter,
    Objective::LatencyP99,
    Objective::RecoveryWithin,
];

impl RankKey {
    pub fn of(cells: &[(String, Cell)]) -> RankKey {
        let get = |n: &str| cells.iter().find(|(k, _)| k == n).map(|(_, c)| c);
        let num = |n: &str| get(n).and_then(Cell::number);
        let missed = match get("slo_failed") {
            Some(Cell::Text(t)) => t.split("; ").count(),
            _ => 0,
        };
        let mut figures = [f64::NEG_INFINITY; 4];
        for (f, o) in figures.iter_mut().zip(RANK_ORDER) {
            let mean = num(&format!("{}_mean", o.column()));
            if let Some(v) = mean {
                *f = if o.higher_is_better() { v } else { -v };
            } else if o == Objective::RecoveryWithin && num("recovered_fraction").is_none() {
                // No trigger: nothing to recover from, as good as can be.
                *f = 0.0;
            }
        }
        RankKey {
            pass: num("slo_pass") == Some(1.0),
            pass_fraction: num("slo_pass_fraction").unwrap_or(0.0),
            objectives_missed: missed,
            figures,
        }
    }

    /// Better first.
    fn order(&self, other: &RankKey) -> Ordering {
        other
            .pass
            .cmp(&self.pass)
            .then(other.pass_fraction.total_cmp(&self.pass_fraction))
            .then(self.objectives_missed.cmp(&other.objectives_missed))
            .then_with(|| {
                for (a, b) in self.figures.iter().zip(&other.figures) {
                    match b.total_cmp(a) {
                        Ordering::Equal => continue,
                        o => return o,
                    }
                }
                Ordering::Equal
            })
    }
}

/// The rank of each variant (1 = best), given each variant's aggregated
/// cells in variant order; ties keep variant order.
pub fn rank(variants: &[&[(String, Cell)]]) -> Vec<usize> {
    let keys: Vec<RankKey> = variants.iter().map(|c| RankKey::of(c)).collect();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| keys[a].order(&keys[b]).then(a.cmp(&b)));
    let mut ranks = vec![0; keys.len()];
    for (r, &v) in order.iter().enumerate() {
        ranks[v] = r + 1;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(misses: &[(Objective, Measured, f64)]) -> Verdict {
        Verdict {
            aborted: false,
            misses: misses
                .iter()
                .map(|&(objective, measured, target)| Miss {
                    objective,
                    measured,
                    target,
                })
                .collect(),
        }
    }

    #[test]
    fn failed_text_reads_back() {
        let v = verdict(&[
            (Objective::SuccessRate, Measured::Value(0.99123), 0.999),
            (Objective::LatencyP99, Measured::Undecided, 800.0),
            (Objective::RecoveryWithin, Measured::Never, 60.0),
        ]);
        let text = v.failed_text();
        assert_eq!(
            text,
            "success_rate 0.9912 < 0.999; latency_p99 undecided > 800ms; recovery_within never > 60s"
        );
        let back: Vec<Miss> = text
            .split("; ")
            .filter_map(|e| parse_entry(e).and_then(|(m, _)| m))
            .collect();
        assert_eq!(back.len(), 3);
        assert_eq!(back[0].measured, Measured::Value(0.9912));
        assert_eq!(back[1..], v.misses[1..]);
        // Enough digits to tell the value from the target.
        let close = verdict(&[
            (Objective::SuccessRate, Measured::Value(0.998_99), 0.999),
            (Objective::PeakLoadAfter, Measured::Value(3.353_125), 1.5),
            (Objective::LatencyP99, Measured::Value(1234.56), 800.0),
            (Objective::RecoveryWithin, Measured::Value(60.000_01), 60.0),
        ]);
        assert_eq!(
            close.failed_text(),
            "success_rate 0.99899 < 0.999; peak_load_after 3.353 > 1.5; latency_p99 1235ms > 800ms; recovery_within 60.00001s > 60s"
        );
        assert_eq!(parse_entry("aborted"), Some((None, true)));
        assert_eq!(parse_entry("nonsense 1 > 2"), None);
    }

    /// A run no figure could judge is `undecided`; a variant whose runs
    /// missed by a value and by having none reads as the value (`FAIL`).
    #[test]
    fn a_miss_by_a_value_outweighs_an_undecided_one() {
        let run =
            |m: Measured| Cell::Text(verdict(&[(Objective::SuccessRate, m, 0.99)]).failed_text());
        let [_, _, text] = aggregate(
            &[Cell::Bool(false), Cell::Bool(false)],
            &[run(Measured::Undecided), run(Measured::Value(0.5))],
        );
        assert_eq!(
            text.1,
            Cell::Text("success_rate 0.5 < 0.99 in 2 of 2 runs".into())
        );
        assert_eq!(miss_word(&text.1.render()), "FAIL");
        let [_, _, text] = aggregate(
            &[Cell::Bool(false), Cell::Bool(true)],
            &[run(Measured::Undecided), Cell::Missing],
        );
        assert_eq!(
            text.1,
            Cell::Text("success_rate undecided < 0.99 in 1 of 2 runs".into())
        );
        assert_eq!(miss_word(&text.1.render()), "undecided");
        assert_eq!(
            miss_word("success_rate undecided < 0.99; latency_p99 900ms > 500ms"),
            "FAIL"
        );
        assert_eq!(miss_word("aborted in 1 of 2 runs"), "FAIL");
        assert_eq!(miss_word(""), "FAIL");
        // Never stays the worst of a recovery.
        let rec = |m: Measured| {
            Cell::Text(verdict(&[(Objective::RecoveryWithin, m, 60.0)]).failed_text())
        };
        let [_, _, text] = aggregate(
            &[Cell::Bool(false), Cell::Bool(false), Cell::Bool(false)],
            &[
                rec(Measured::Value(70.0)),
                rec(Measured::Never),
                rec(Measured::Undecided),
            ],
        );
        assert_eq!(
            text.1,
            Cell::Text("recovery_within never > 60s in 3 of 3 runs".into())
        );
    }

    #[test]
    fn a_variant_reports_the_worst_miss_and_how_often() {
        let run = |misses: &[(Objective, Measured, f64)]| {
            let v = verdict(misses);
            (
                Cell::Bool(v.pass()),
                if v.pass() {
                    Cell::Missing
                } else {
                    Cell::Text(v.failed_text())
                },
            )
        };
        let runs = [
            run(&[(Objective::PeakLoadAfter, Measured::Value(1.3), 1.2)]),
            run(&[]),
            run(&[
                (Objective::SuccessRate, Measured::Value(0.99), 0.999),
                (Objective::PeakLoadAfter, Measured::Value(1.5), 1.2),
            ]),
            run(&[(Objective::SuccessRate, Measured::Value(0.995), 0.999)]),
        ];
        let passes: Vec<Cell> = runs.iter().map(|r| r.0.clone()).collect();
        let failed: Vec<Cell> = runs.iter().map(|r| r.1.clone()).collect();
        let [pass, fraction, text] = aggregate(&passes, &failed);
        assert_eq!(pass.1, Cell::Bool(false));
        assert_eq!(fraction.1, Cell::Float(0.25));
        assert_eq!(
            text.1,
            Cell::Text(
                "success_rate 0.99 < 0.999 in 2 of 4 runs; peak_load_after 1.5 > 1.2 in 2 of 4 runs"
                    .into()
            )
        );
        let all_pass = aggregate(&vec![Cell::Bool(true); 3], &vec![Cell::Missing; 3]);
        assert_eq!(all_pass[0].1, Cell::Bool(true));
        assert_eq!(all_pass[2].1, Cell::Missing);
    }

    #[test]
    fn ranks_put_passing_variants_first_then_the_better_figures() {
        let cells = |pass: bool, fraction: f64, failed: Option<&str>, success: f64| {
            vec![
                (
                    "success_rate_outside_incidents_mean".to_string(),
                    Cell::Float(success),
                ),
                ("slo_pass".to_string(), Cell::Bool(pass)),
                ("slo_pass_fraction".to_string(), Cell::Float(fraction)),
                (
                    "slo_failed".to_string(),
                    failed.map_or(Cell::Missing, |t| Cell::Text(t.into())),
                ),
            ]
        };
        let a = cells(false, 0.0, Some("x; y"), 0.999);
        let b = cells(true, 1.0, None, 0.9991);
        let c = cells(false, 0.5, Some("x"), 0.99);
        let d = cells(true, 1.0, None, 0.9995);
        let e = cells(false, 0.0, Some("x"), 0.5);
        assert_eq!(rank(&[&a, &b, &c, &d, &e]), vec![5, 2, 3, 1, 4]);
    }
}
