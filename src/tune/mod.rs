//! `stormsim tune`: a search of the scenario's `tune.space` for the
//! settings that do best under its SLO, in at most `tune.budget` runs
//! (README, "Tuning").
//!
//! A candidate is a value per searched path, applied to the scenario as
//! `--set` would apply it. The first round is a space-filling sample
//! ([`space`]); rounds of successive halving ([`schedule`]) then give the
//! promising candidates more replicates. Candidates are ranked
//! ([`Standing`]): those whose every run met the SLO first, then by the
//! share of runs that met it and the objectives missed, then by the mean
//! of the objective's figure; a candidate that reached a later round
//! ranks above one dropped earlier. Everything is deterministic for the
//! scenario's seed, at any number of threads.

pub mod output;
pub mod pareto;
pub mod schedule;
pub mod space;

use std::cmp::Ordering;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use crate::metrics::Summary;
use crate::metrics::abort::Abort;
use crate::metrics::columns::{Cell, summary_cells};
use crate::metrics::slo::{Objectives, aggregate};
use crate::runner::{self, Interrupted, RunResult, VariantPlan};
use crate::scenario::tune::{Direction, search_base};
use crate::scenario::{Scenario, apply_sets};

pub use schedule::Round;
pub use space::Space;

/// One candidate: its values, and what its runs gave.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its number, in first-round order (`c0`, `c1`, ...).
    pub id: usize,
    /// A value per searched path, in the space's order.
    pub values: Vec<Value>,
    /// Why the scenario does not take these values together, if it does
    /// not (then it never runs).
    pub invalid: Option<String>,
    /// The last round it ran in (0: the first).
    pub round: usize,
    /// The summaries of its runs, replicate 0 first.
    pub runs: Vec<Summary>,
}

impl Candidate {
    /// Why a guard rail stopped one of its runs, if one did (the first
    /// such run's reason). Such a candidate is not ranked: its figures
    /// cover only the time its stopped run reached.
    pub fn aborted(&self) -> Option<Abort> {
        self.runs.iter().find_map(|s| s.aborted)
    }

    /// Whether it ran and every run reached its end: it can be ranked.
    pub fn finished(&self) -> bool {
        self.invalid.is_none() && self.aborted().is_none()
    }
}

/// Where a candidate stands: the figures it is ranked by.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    /// With an SLO: whether every run met it, and the share that did.
    pub slo_pass: Option<bool>,
    pub slo_pass_fraction: Option<f64>,
    pub slo_failed: Option<String>,
    /// The objective's mean over the runs (None when a run has no value:
    /// ranked last).
    pub objective: Option<f64>,
    /// Half the width of its 95% confidence interval (normal
    /// approximation; None with fewer than two runs).
    pub objective_ci95: Option<f64>,
}

/// The outcome of a search.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub space: Space,
    /// The objective's figure and direction.
    pub figure: String,
    pub direction: Direction,
    pub slo: Option<Objectives>,
    /// The rounds as they ran: the candidates each one ran (after
    /// repeated draws and candidates the scenario does not take were left
    /// out), not the schedule's plan.
    pub rounds: Vec<Round>,
    /// The first-round candidates the schedule drew, and how many of
    /// them were distinct (a draw that repeats another runs once).
    pub drawn: u64,
    pub distinct: u64,
    /// Every candidate, best first: those a guard rail stopped after the
    /// ranked ones (they are not ranked), invalid ones last.
    pub ranked: Vec<(Candidate, Standing)>,
    /// Runs spent.
    pub runs: u64,
    pub budget: u64,
    /// Runs that broke an invariant: (candidate, replicate, violations).
    pub violations: Vec<(usize, u32, Vec<String>)>,
}

impl Outcome {
    /// The best candidate, if one earned it: it ran, and it met the SLO
    /// or has a value of the objective (a search whose objective no run
    /// could measure, `recovery_time_s` without an incident say, has no
    /// best: every candidate would be as good as any other).
    pub fn best(&self) -> Option<&(Candidate, Standing)> {
        self.ranked
            .first()
            .filter(|(c, st)| c.finished() && (st.objective.is_some() || st.slo_pass == Some(true)))
    }

    /// The candidates a guard rail stopped (some run of theirs), in rank
    /// order.
    pub fn stopped(&self) -> impl Iterator<Item = (&Candidate, Abort)> {
        self.ranked
            .iter()
            .filter_map(|(c, _)| c.aborted().map(|a| (c, a)))
    }
}

/// Why a search did not finish.
#[derive(Debug)]
pub enum TuneError {
    /// The scenario has no `tune` section.
    NoTune,
    /// No candidate could run: the scenario takes none of them.
    NothingValid(String),
    Interrupted(Interrupted),
}

/// The value of `figure` in a run's summary, if it has one.
pub fn figure_of(s: &Summary, figure: &str) -> Option<f64> {
    summary_cells(s, &[])
        .into_iter()
        .find(|(k, _)| k == figure)
        .and_then(|(_, c)| c.number())
}

/// The standing of a candidate from its runs.
pub fn standing(runs: &[Summary], figure: &str, slo: Option<&Objectives>) -> Standing {
    let values: Vec<Option<f64>> = runs.iter().map(|s| figure_of(s, figure)).collect();
    let all: Option<Vec<f64>> = values.iter().copied().collect();
    let (objective, objective_ci95) = match all {
        Some(v) if !v.is_empty() => {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let ci = (v.len() > 1).then(|| {
                let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
                1.96 * (var / n).sqrt()
            });
            (Some(mean), ci)
        }
        _ => (None, None),
    };
    let (slo_pass, slo_pass_fraction, slo_failed) = match slo {
        None => (None, None, None),
        Some(_) => {
            let verdicts: Vec<_> = runs.iter().filter_map(|s| s.slo.as_ref()).collect();
            let passes: Vec<Cell> = verdicts.iter().map(|v| Cell::Bool(v.pass())).collect();
            let failed: Vec<Cell> = verdicts
                .iter()
                .map(|v| Cell::Text(v.failed_text()))
                .collect();
            let [pass, fraction, text] = aggregate(&passes, &failed);
            (
                Some(pass.1 == Cell::Bool(true)),
                fraction.1.number(),
                match text.1 {
                    Cell::Text(t) => Some(t),
                    _ => None,
                },
            )
        }
    };
    Standing {
        slo_pass,
        slo_pass_fraction,
        slo_failed,
        objective,
        objective_ci95,
    }
}

/// Better first: the SLO met in every run, in more runs, fewer objectives
/// missed, then the objective (a missing one last).
fn better(a: &Standing, b: &Standing, direction: Direction) -> Ordering {
    let missed = |s: &Standing| s.slo_failed.as_ref().map_or(0, |t| t.split("; ").count());
    b.slo_pass
        .cmp(&a.slo_pass)
        .then(
            b.slo_pass_fraction
                .unwrap_or(0.0)
                .total_cmp(&a.slo_pass_fraction.unwrap_or(0.0)),
        )
        .then(missed(a).cmp(&missed(b)))
        .then_with(|| match (a.objective, b.objective) {
            (Some(x), Some(y)) => match direction {
                Direction::Maximize => y.total_cmp(&x),
                Direction::Minimize => x.total_cmp(&y),
            },
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        })
}

/// How many more draws replace the first round's candidates that the
/// scenario does not take (a space whose corners cross a rule, `cap`
/// below `base`), before the round runs with fewer.
const REFILL_BATCHES: usize = 8;

/// Searches `s.tune.space`. `on_done` is called after every run (a
/// progress bar); a raised `stop` ends the search as `Interrupted`.
pub fn search(
    s: &Scenario,
    stop: &AtomicBool,
    on_done: &(dyn Fn(&RunResult) + Sync),
) -> Result<Outcome, TuneError> {
    let tune = s.tune.as_ref().ok_or(TuneError::NoTune)?;
    let space = Space::of(tune).map_err(TuneError::NothingValid)?;
    let (figure, direction) = tune.goal();
    let slo = crate::scenario::slo::objectives(s);
    let base = search_base(s);
    let rounds = schedule::schedule(tune.budget as u64, space.size());
    let first = space.first_round(rounds[0].candidates as usize, s.seed);
    let mut drawn = rounds[0].candidates.min(space.size().unwrap_or(u64::MAX));
    let mut distinct = first.len() as u64;
    // Each candidate's scenario, made as `--set` makes it.
    let make = |id: usize, values: Vec<Value>| -> (Candidate, Option<VariantPlan>) {
        let sets: Vec<(String, Value)> = space.paths.iter().cloned().zip(values.clone()).collect();
        let messages = |e: crate::scenario::ScenarioErrors| {
            e.0.iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let made = apply_sets(&base, &sets).map_err(messages);
        let (invalid, plan) = match made.and_then(|c| runner::plan(&c).map_err(messages)) {
            Ok(mut p) if p.len() == 1 => {
                let mut plan = p.remove(0);
                plan.name = format!("c{id}");
                (None, Some(plan))
            }
            Ok(_) => (Some("not one run".to_string()), None),
            Err(e) => (Some(e), None),
        };
        let candidate = Candidate {
            id,
            values,
            invalid,
            round: 0,
            runs: Vec::new(),
        };
        (candidate, plan)
    };
    let want = first.len();
    let mut candidates: Vec<Candidate> = Vec::with_capacity(want);
    let mut plans: Vec<Option<VariantPlan>> = Vec::with_capacity(want);
    let mut pending = first;
    // A candidate the scenario does not take costs no run of the budget:
    // others are drawn in its place (each batch from its own stream of
    // the seed), so the first round has as many as it would have had, up
    // to `REFILL_BATCHES` more draws.
    for batch in 1..=REFILL_BATCHES + 1 {
        for values in pending {
            let (c, p) = make(candidates.len(), values);
            candidates.push(c);
            plans.push(p);
        }
        let taken = plans.iter().filter(|p| p.is_some()).count();
        let missing = want.saturating_sub(taken);
        if missing == 0 || batch > REFILL_BATCHES || space.is_grid(rounds[0].candidates as usize) {
            break;
        }
        drawn += missing as u64;
        pending = space
            .sample(missing, s.seed, batch as u64)
            .into_iter()
            .filter(|v| !candidates.iter().any(|c| &c.values == v))
            .collect();
        distinct += pending.len() as u64;
    }
    let valid: Vec<usize> = (0..candidates.len())
        .filter(|&i| plans[i].is_some())
        .collect();
    if valid.is_empty() {
        let why = candidates
            .first()
            .and_then(|c| c.invalid.clone())
            .unwrap_or_default();
        return Err(TuneError::NothingValid(why));
    }
    // The runner takes a dense list of plans.
    let dense: Vec<VariantPlan> = valid
        .iter()
        .map(|&i| plans[i].clone().expect("valid"))
        .collect();
    let mut alive: Vec<usize> = (0..valid.len()).collect();
    let mut done_reps = 0u64;
    let mut runs = 0u64;
    let mut violations = Vec::new();
    let mut ran: Vec<Round> = Vec::with_capacity(rounds.len());
    for (k, round) in rounds.iter().enumerate() {
        if k > 0 {
            // Keep the best of the round before, as many as this round runs.
            let st: Vec<Standing> = alive
                .iter()
                .map(|&d| standing(&candidates[valid[d]].runs, &figure, slo.as_ref()))
                .collect();
            let mut order: Vec<usize> = (0..alive.len()).collect();
            // A candidate a guard rail stopped goes on only when too few
            // finished ones are left to fill the round.
            let stopped: Vec<bool> = alive
                .iter()
                .map(|&d| candidates[valid[d]].aborted().is_some())
                .collect();
            order.sort_by(|&a, &b| {
                stopped[a]
                    .cmp(&stopped[b])
                    .then_with(|| better(&st[a], &st[b], direction))
                    .then(a.cmp(&b))
            });
            order.truncate(round.candidates as usize);
            let mut kept: Vec<usize> = order.into_iter().map(|i| alive[i]).collect();
            kept.sort_unstable();
            alive = kept;
        }
        ran.push(Round {
            candidates: alive.len() as u64,
            replicates: round.replicates,
        });
        let items: Vec<(usize, u32)> = alive
            .iter()
            .flat_map(|&d| (done_reps..round.replicates).map(move |r| (d, r as u32)))
            .collect();
        let results = runner::run_items_keeping(&dense, &items, s.seed, on_done, stop, |r| {
            (r.summary, r.violations)
        })
        .map_err(TuneError::Interrupted)?;
        runs += items.len() as u64;
        for (&(d, r), (summary, broken)) in items.iter().zip(results) {
            let c = &mut candidates[valid[d]];
            c.runs.push(summary);
            c.round = k;
            if !broken.is_empty() {
                violations.push((c.id, r, broken));
            }
        }
        done_reps = round.replicates;
    }
    // Rank: the later the round reached, the better; then the standing.
    let mut ranked: Vec<(Candidate, Standing)> = candidates
        .into_iter()
        .map(|c| {
            let st = standing(&c.runs, &figure, slo.as_ref());
            (c, st)
        })
        .collect();
    ranked.sort_by(|(a, sa), (b, sb)| {
        a.invalid
            .is_some()
            .cmp(&b.invalid.is_some())
            .then(a.aborted().is_some().cmp(&b.aborted().is_some()))
            .then(b.round.cmp(&a.round))
            .then_with(|| better(sa, sb, direction))
            .then(a.id.cmp(&b.id))
    });
    Ok(Outcome {
        space,
        figure,
        direction,
        slo,
        rounds: ran,
        drawn,
        distinct,
        ranked,
        runs,
        budget: tune.budget as u64,
        violations,
    })
}
