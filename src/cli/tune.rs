//! `stormsim tune FILE`: searches the scenario's `tune.space` (see
//! `crate::tune`) and writes `output/<name>/tune/`: `tune.csv`,
//! `best.yaml`, `charts/pareto.svg|png` and the scenario as resolved.

use std::path::PathBuf;

use clap::Args;

use super::{FieldFlag, load, nothing_written, output_failed, progress_bar, refuse, report_errors};
use crate::escape::escape;
use crate::report::OutputDir;
use crate::report::output_dir::{self, Committed, Contents, Mode, Options, OutputError};
use crate::scenario;
use crate::terminal::{errln, out, outln};
use crate::tune::{self, TuneError, output, pareto::Pareto, schedule};
use crate::{interrupt, workers};

#[derive(Args, Debug)]
pub(super) struct TuneArgs {
    /// The scenario file (YAML), with a `tune` section.
    file: PathBuf,
    /// Output folder (default: output/<scenario name>/tune).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the output folder even if it holds files stormsim did not
    /// write (they are deleted).
    #[arg(long)]
    force: bool,
    /// Override a field: PATH=VALUE (repeatable); `tune.*` too.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Scenario seed (replaces `seed`).
    #[arg(long, value_parser = super::whole_u64, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// The most runs to spend (replaces `tune.budget`).
    #[arg(long, value_parser = super::whole_budget, allow_negative_numbers = true)]
    budget: Option<u32>,
    /// Worker threads (default: one per core): up to 4 per core, or up to 64 on a machine with fewer than 16 cores; never more than 1024
    /// (default: one per core, or RAYON_NUM_THREADS).
    #[arg(long, value_parser = super::whole_threads, allow_negative_numbers = true)]
    threads: Option<usize>,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
}

const NOT_WRITTEN: &str =
    "tune.csv, best.yaml, charts/pareto.svg, charts/pareto.png, scenario.resolved.yaml";

pub(super) fn tune(args: TuneArgs) -> i32 {
    interrupt::install();
    if let Err((m, code)) = workers::start(args.threads) {
        errln!("error: {m}");
        return code;
    }
    let flags = [
        FieldFlag::new("--seed", "seed", args.seed),
        FieldFlag::new("--budget", "tune.budget", args.budget.map(u64::from)),
    ];
    let sets = FieldFlag::overrides(&args.set, &flags);
    let s = match interrupt::reading(
        "interrupted: nothing was written (stopped while reading the scenario)",
        || load(Some(&args.file), &sets),
    ) {
        Ok(s) => s,
        Err(e) => return report_errors(&FieldFlag::name_in(e, &flags)),
    };
    let file = escape(&crate::escape::path(&args.file)).into_owned();
    let Some(t) = &s.tune else {
        errln!(
            "error: {file} has no `tune` section: nothing to search. Add one, for example\n\
             tune:\n  space:\n    layers.<layer>.retry.max_attempts: {{ int: [1, 6] }}\n    \
             layers.<layer>.retry.backoff.base: {{ log: [10ms, 2s] }}\n  \
             objective: {{ maximize: success_rate }}\n  budget: 100"
        );
        return 2;
    };
    // Every candidate sure to stop at the events guard rail (the space
    // changes none of what the estimate reads): refused, as `run` does.
    let reads_load = |k: &String| {
        ["duration", "clients", "limits", "services"]
            .iter()
            .any(|f| k == f || k.starts_with(&format!("{f}.")))
    };
    if !t.space.keys().any(reads_load)
        && let Some(sure) = crate::check::events_certainly_over_limit(&s)
    {
        return refuse(super::sure_stop("every candidate's run", &sure, ""));
    }
    let counts = [(s.variants.len(), "variant"), (s.sweep.len(), "swept path")];
    let unused: Vec<String> = counts
        .into_iter()
        .filter(|&(n, _)| n > 0)
        .map(|(n, w)| plural(n, w))
        .collect();
    // One thing, as "its 1 variant is": a verb and a pronoun to agree.
    let one = counts.iter().map(|&(n, _)| n).sum::<usize>() == 1;
    if !unused.is_empty() && !args.quiet {
        errln!(
            "note: tune searches the scenario itself; its {} {} not used (`stormsim run` compares {})",
            unused.join(" and "),
            if one { "is" } else { "are" },
            if one { "it" } else { "them" }
        );
    }
    for w in searched_sets(&s, &args.set) {
        errln!("warning: {}", escape(&w));
    }
    let out_path = match &args.out {
        Some(out) => out.clone(),
        None => match output_dir::default_folder(&s.name) {
            Ok(dir) => dir.join("tune"),
            Err(e) => return refuse(e),
        },
    };
    let inputs = crate::scenario::from_file::input_files(&s, Some(&args.file));
    let out = match OutputDir::prepare(
        &out_path,
        Options {
            mode: Mode::Folder,
            contents: Contents::Tune,
            force: args.force,
            inputs: &inputs,
        },
    ) {
        Ok(out) => out,
        Err(e) => return output_failed(e, &out_path, NOT_WRITTEN, "no run had started"),
    };
    super::print_notes(&out, args.quiet);
    let planned = schedule::cost(&schedule::schedule(
        t.budget as u64,
        tune::Space::of(t).ok().and_then(|sp| sp.size()),
    ));
    let bar = progress_bar(planned, args.quiet);
    let outcome = tune::search(&s, interrupt::flag(), &|_| bar.inc(1));
    bar.finish_and_clear();
    let outcome = match outcome {
        Ok(o) => o,
        Err(TuneError::Interrupted(stopped)) => {
            drop(out);
            errln!(
                "interrupted: {} of {} of the round had finished; {}",
                stopped.finished,
                plural(stopped.total, "run"),
                nothing_written(&out_path, NOT_WRITTEN)
            );
            return interrupt::EXIT_CODE;
        }
        Err(TuneError::NothingValid(why)) => {
            errln!(
                "error: the scenario takes none of the candidates, for example: {}; nothing was written",
                escape(&why)
            );
            return 2;
        }
        Err(TuneError::NoTune) => return 2,
    };
    let write = |out: OutputDir| -> Result<Committed, OutputError> {
        let csv = output::tune_csv(&outcome)
            .map_err(|e| OutputError::Io(format!("cannot write tune.csv: {e}")))?;
        out.write("tune.csv", &csv)?;
        // With no candidate that reached its end, or none with a value
        // of the objective (nor an SLO met), there is nothing to choose
        // from: no best.yaml (the console says why).
        if outcome.best().is_some() {
            out.write(
                "best.yaml",
                output::best_yaml(&outcome, &s.name, s.seed, &file).as_bytes(),
            )?;
        }
        let (svg, png) = Pareto::of(&outcome).files().map_err(|m| {
            if m == crate::report::figure::STOPPED {
                OutputError::Interrupted
            } else {
                OutputError::Io(format!("cannot draw the charts: {m}"))
            }
        })?;
        out.write("charts/pareto.svg", svg.as_bytes())?;
        out.write("charts/pareto.png", &png)?;
        out.write(
            "scenario.resolved.yaml",
            scenario::resolved_yaml(&s).as_bytes(),
        )?;
        out.commit()
    };
    let written = match write(out) {
        Ok(w) => w,
        Err(e) => {
            let runs = super::all_runs_finished(outcome.runs as u64);
            return output_failed(e, &out_path, NOT_WRITTEN, &runs);
        }
    };
    if !args.quiet {
        let left_out = output::LeftOut {
            variants: s
                .variants
                .iter()
                .map(|v| {
                    (
                        escape(&v.name).into_owned(),
                        v.set.keys().cloned().collect(),
                    )
                })
                .collect(),
            sweep: s.sweep.keys().cloned().collect(),
        };
        out!(
            "{}",
            output::console_text(&outcome, &s.name, &file, &left_out)
        );
        outln!("results: {}", crate::escape::path(&written.path));
    }
    if super::warn_left_over(&written) != 0 {
        return 1;
    }
    if !outcome.violations.is_empty() {
        for (c, r, broken) in &outcome.violations {
            errln!(
                "error: candidate c{c}, replicate {r} broke stormsim's invariants (a bug in stormsim; please report it with the scenario): {}",
                broken.join("; ")
            );
        }
        return 1;
    }
    // Finished candidates, none of which measured the objective: a
    // search that chose nothing is a failure.
    if outcome.best().is_none() && outcome.ranked.iter().any(|(c, _)| c.finished()) {
        let measured = outcome
            .ranked
            .iter()
            .any(|(c, st)| c.finished() && st.objective.is_some());
        if measured {
            errln!(
                "error: the candidate that met the SLO in the most runs has no value of {}, so \
                 none is ranked and no best.yaml was written: choose an objective every run measures",
                escape(&outcome.figure)
            );
        } else {
            errln!(
                "error: no run of any candidate measured {} (and none met an SLO), so none is \
                 ranked and no best.yaml was written: choose an objective this scenario measures",
                escape(&outcome.figure)
            );
        }
        return 1;
    }
    // As `run` does when a guard rail stopped runs: say so on stderr, exit 1.
    let stopped = outcome.stopped().count();
    if stopped > 0 {
        for line in output::stopped_lines(&outcome) {
            errln!("error: guard rail: {line}");
        }
        let ran = outcome
            .ranked
            .iter()
            .filter(|(c, _)| c.invalid.is_none())
            .count();
        if stopped == ran {
            errln!(
                "error: the search is incomplete: a guard rail stopped every candidate, so none is ranked and no best.yaml was written (see the `aborted` column of tune.csv)"
            );
        } else {
            errln!(
                "error: the search is incomplete: {stopped} of {} hit a guard rail and stopped early; {} not ranked and the best is chosen among the rest (see the `aborted` column of tune.csv)",
                plural(ran, "candidate"),
                if stopped == 1 { "it is" } else { "they are" }
            );
        }
        return 1;
    }
    0
}

use crate::human::plural;

/// The `--set` overrides on a field `tune.space` searches (or a part of
/// one, or a section holding one): the search replaces the value in every
/// candidate, so the override changes nothing there; one sentence each.
fn searched_sets(s: &scenario::Scenario, sets: &[String]) -> Vec<String> {
    use crate::scenario::variants::normalize_path;
    let Some(t) = &s.tune else {
        return Vec::new();
    };
    let within = |x: &str, y: &str| x == y || x.strip_prefix(y).is_some_and(|r| r.starts_with('.'));
    let searched: Vec<(String, String)> = t
        .space
        .keys()
        .map(|k| (k.clone(), normalize_path(s, k)))
        .collect();
    sets.iter()
        .filter_map(|arg| arg.split_once('=').map(|(p, _)| p.trim()))
        .filter(|p| !p.starts_with("tune.") && *p != "tune")
        .filter_map(|path| {
            let norm = normalize_path(s, path);
            let hit: Vec<&str> = searched
                .iter()
                .filter(|(_, n)| within(&norm, n) || within(n, &norm))
                .map(|(k, _)| k.as_str())
                .collect();
            let whole = searched.iter().any(|(_, n)| within(&norm, n));
            (!hit.is_empty()).then(|| {
                let what = if whole {
                    format!("has no effect: tune.space searches {}, and every candidate sets it", hit.join(", "))
                } else {
                    format!("is replaced in part: tune.space searches {} within it, and every candidate sets that", hit.join(", "))
                };
                format!(
                    "--set {path} {what} (to fix a value, make it the only one in the space: --set 'tune.space.{}=[VALUE]')",
                    hit[0]
                )
            })
        })
        .collect()
}
