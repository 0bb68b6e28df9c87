//! `stormsim run`: the command's raw arguments become settings in which
//! every decision is checked before anything runs (the scenario with its
//! overrides, the shard, the SLO `--fail-on-slo` needs, the output folder),
//! the way ripgrep turns its arguments into validated settings before
//! searching. The command is then a short sequence: simulate, write the
//! folder, print the summary, and turn what happened into the exit code
//! (README.md, "Commands").

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::{
    DEFAULT_LABEL, RunArgs, load, nothing_written, output_failed, progress_bar, report_errors,
    report_to_output,
};
use crate::escape::escape;
use crate::interrupt::{self, Stopped};
use crate::invariants;
use crate::metrics::RunResult;
use crate::metrics::slo::Objectives;
use crate::report::output_dir::{self, Committed, Contents, Options};
use crate::report::table_stream::{self, Columns, RunRows, TableStream};
use crate::report::tables::{Layout, VariantColumns};
use crate::report::{self, Mode, OutputDir, OutputError};
use crate::runner::{self, Interrupted, VariantPlan};
use crate::scenario::{self, Scenario, ScenarioErrors};
use crate::shard::{self, Manifest, ManifestItem, ShardSpec};
use crate::terminal::{errln, errout, out, outln};
use crate::workers;

/// `stormsim run`, start to finish; returns the exit code.
pub(super) fn run(args: RunArgs) -> i32 {
    // First thing: a signal from now on ends the command with a message.
    interrupt::install();
    let settings = match interrupt::reading(
        "interrupted: nothing was written (stopped while reading the scenario)",
        || Settings::from_args(&args),
    ) {
        Ok(s) => s,
        Err(e) => return e.report(),
    };
    // Every decision about the output folder, before simulating.
    let out = match settings.prepare_output() {
        Ok(out) => out,
        Err(e) => {
            return output_failed(
                e,
                &settings.out_path,
                settings.not_written(),
                "no run had started",
            );
        }
    };
    super::print_notes(&out, settings.quiet);
    let columns = settings.columns();
    let streamed = match settings.simulate(&out, &columns) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            drop(out);
            let runs = "the runs were stopped";
            return output_failed(e, &settings.out_path, settings.not_written(), runs);
        }
        Err(stopped) => {
            drop(out);
            errln!(
                "interrupted: {} of {} had finished; {}",
                stopped.finished,
                crate::human::plural(stopped.total, "run"),
                nothing_written(&settings.out_path, settings.not_written())
            );
            return interrupt::EXIT_CODE;
        }
    };
    let results = &streamed.results;
    let written = match settings.write(out, &streamed, &columns) {
        Ok(w) => w,
        Err(e) => {
            let runs = super::all_runs_finished(settings.items.len() as u64);
            return output_failed(e, &settings.out_path, settings.not_written(), &runs);
        }
    };
    let left_over = super::warn_left_over(&written);
    if !settings.quiet {
        settings.print(results, &written.path);
    }
    settings.exit_code(results).max(left_over)
}

/// Everything `run` needs, decided and checked before the first run.
struct Settings {
    scenario: Scenario,
    /// Every variant × sweep point, ready to run.
    plans: Vec<VariantPlan>,
    /// The runs this command makes: (variant index, replicate), all of
    /// them or one shard's.
    items: Vec<(usize, u32)>,
    shard: Option<ShardSpec>,
    slo: Option<Objectives>,
    out_path: PathBuf,
    force: bool,
    /// The files the command reads, which the output folder must not be.
    inputs: Vec<PathBuf>,
    /// The command line that reproduces a run, for a bug report.
    reproduce: String,
    quiet: bool,
    verbose: bool,
    fail_on_slo: bool,
}

/// Why `run` stops before simulating.
enum SettingsError {
    /// The worker threads cannot be started as asked (message, exit code).
    Threads(String, i32),
    /// The shard cannot be taken from the environment.
    Shard(String),
    /// The scenario or its overrides are invalid.
    Scenario(ScenarioErrors),
    /// `--fail-on-slo` without an `slo` section (the scenario's label).
    NoSlo(String),
    /// No default output folder can be named.
    OutFolder(String),
    /// The results would not fit in the memory the process may use.
    Memory(String),
    /// Every run is sure to stop at `limits.max_events` before its end.
    GuardRail(String),
}

impl SettingsError {
    /// Says what is wrong and returns the exit code.
    fn report(self) -> i32 {
        match self {
            SettingsError::Threads(m, code) => {
                errln!("error: {m}");
                code
            }
            SettingsError::Shard(m) => {
                errln!("error: {}", escape(&m));
                2
            }
            SettingsError::Scenario(e) => report_errors(&e),
            SettingsError::NoSlo(label) => {
                errln!(
                    "error: --fail-on-slo needs an SLO to judge the runs against, and {label} has no `slo` section; add one, for example slo: {{ success_rate: 0.999, peak_load_after: 1.2 }}, or --set slo.success_rate=0.999"
                );
                2
            }
            SettingsError::OutFolder(m)
            | SettingsError::Memory(m)
            | SettingsError::GuardRail(m) => super::refuse(m),
        }
    }
}

impl Settings {
    fn from_args(args: &RunArgs) -> Result<Settings, SettingsError> {
        workers::start(args.threads).map_err(|(m, code)| SettingsError::Threads(m, code))?;
        let shard = match (args.shard, args.shard_from_env) {
            (Some(spec), _) => Some(spec),
            (None, true) => {
                let (spec, _) =
                    shard::env::shard_from_env(|k| std::env::var(k).ok(), args.shard_count)
                        .map_err(|e| SettingsError::Shard(e.to_string()))?;
                Some(spec)
            }
            (None, false) => None,
        };
        let flags = [
            super::FieldFlag::new("--seed", "seed", args.seed),
            super::FieldFlag::new("--replicates", "replicates", args.replicates.map(u64::from)),
            super::FieldFlag::new("--max-events", "limits.max_events", args.max_events),
            super::FieldFlag::new(
                "--max-in-flight",
                "limits.max_in_flight",
                args.max_in_flight,
            ),
        ];
        let sets = super::FieldFlag::overrides(&args.set, &flags);
        let by_flag = |e| SettingsError::Scenario(super::FieldFlag::name_in(e, &flags));
        let scenario = load(args.file.as_deref(), &sets).map_err(by_flag)?;
        // From the counts, before the variants are built: a command whose
        // results alone cannot fit is refused at once.
        if let Some(budget) = crate::memory_gate::process_budget() {
            let replicates = u64::from(scenario.replicates.max(1));
            let total = runner::variant_count(&scenario).saturating_mul(replicates);
            let runs = shard
                .as_ref()
                .map_or(total, |spec| total / spec.count.max(1) as u64);
            let variants = runs.div_ceil(replicates);
            let held = runner::retained_bytes_at_least(variants, runs);
            if held > budget {
                return Err(SettingsError::Memory(format!(
                    "the results of {} ({}) would hold about {} or more in memory until the output folder is written, more than this process may use ({}: three quarters of the smaller of its address-space limit, ulimit -v, and the memory available); nothing was run: use fewer sweep points, variants or replicates, or split the work with --shard",
                    crate::human::plural(runs, "run"),
                    crate::human::plural(variants, "variant"),
                    scenario::memory::bytes_text(held),
                    scenario::memory::bytes_text(budget),
                )));
            }
        }
        let plans = runner::plan(&scenario).map_err(by_flag)?;
        // A run sure to stop at the events guard rail is refused: it would
        // simulate up to the limit only to be reported as aborted.
        if let Some(refusal) =
            super::guard_rail_refusal(plans.iter().map(|p| p.certain_stop.as_ref()))
        {
            return Err(SettingsError::GuardRail(refusal));
        }
        super::warn_events_over_limit(&scenario);
        if let Some((configured, effective)) = plans.iter().find_map(|p| p.in_flight_capped) {
            errln!(
                "note: limits.max_in_flight: {configured} calls in flight would not fit this process's address-space limit (ulimit -v); runs stop (ABORTED, max_in_flight) at {effective} instead: raise ulimit -v or lower limits.max_in_flight"
            );
        }
        let slo = scenario::slo::objectives(&scenario);
        let label = args.file.as_ref().map_or_else(
            || DEFAULT_LABEL.to_string(),
            |f| escape(&crate::escape::path(f)).into_owned(),
        );
        if args.fail_on_slo && slo.is_none() {
            return Err(SettingsError::NoSlo(label));
        }
        let out_path = match &args.out {
            Some(out) => out.clone(),
            None => {
                let dir = output_dir::default_folder(&scenario.name)
                    .map_err(|e| SettingsError::OutFolder(e.to_string()))?;
                match shard {
                    Some(spec) => dir.join(spec.folder_name()),
                    None => dir,
                }
            }
        };
        let replicates = scenario.replicates as usize;
        let items: Vec<(usize, u32)> = match shard {
            Some(spec) => spec
                .items(plans.len() * replicates)
                .map(|k| (k / replicates, (k % replicates) as u32))
                .collect(),
            None => (0..plans.len())
                .flat_map(|v| (0..scenario.replicates).map(move |r| (v, r)))
                .collect(),
        };
        // Results are kept to the end: refuse, before anything runs, a
        // command whose results alone would not fit (it would abort on a
        // failed allocation, after simulating for nothing).
        if let Some(budget) = crate::memory_gate::process_budget() {
            let held = runner::retained_bytes(&plans, &items);
            if held > budget {
                // One run cannot be split: what it holds follows its
                // buckets.
                let (what, way_out) = if items.len() == 1 {
                    (
                        "the results of the one run".to_string(),
                        "use a longer `bucket` or a shorter `duration` (its rows, one per bucket, wait to be written), or raise ulimit -v",
                    )
                } else {
                    (
                        format!(
                            "the results of {} ({})",
                            crate::human::plural(items.len(), "run"),
                            crate::human::plural(plans.len(), "variant")
                        ),
                        "use fewer sweep points, variants or replicates, a longer `bucket`, or split the work with --shard",
                    )
                };
                return Err(SettingsError::Memory(format!(
                    "{what} would hold about {} in memory until the output folder is written, more than this process may use ({}: three quarters of the smaller of its address-space limit, ulimit -v, and the memory available); nothing was run: {way_out}",
                    scenario::memory::bytes_text(held),
                    scenario::memory::bytes_text(budget),
                )));
            }
        }
        let mut reproduce = args
            .file
            .as_ref()
            .map_or("scenarios/outage-recovery.yaml".to_string(), |f| {
                crate::escape::path(f)
            });
        for set in &args.set {
            reproduce.push_str(&format!(" --set '{set}'"));
        }
        Ok(Settings {
            inputs: scenario::from_file::input_files(&scenario, args.file.as_deref()),
            scenario,
            plans,
            items,
            shard,
            slo,
            out_path,
            force: args.force,
            reproduce: escape(&reproduce).into_owned(),
            quiet: args.quiet,
            verbose: args.verbose,
            fail_on_slo: args.fail_on_slo,
        })
    }

    /// What the command would have written, for a message saying it did not.
    fn not_written(&self) -> &'static str {
        if self.shard.is_some() {
            "timeseries.csv, summary.csv, summary.exact.csv, services.csv, services_timeseries.csv, calls.csv, replicas.csv, scenario.resolved.yaml, manifest.json"
        } else {
            "timeseries.csv, summary.csv, summary_by_variant.csv, services.csv, services_timeseries.csv, calls.csv, replicas.csv, scenario.resolved.yaml, charts/, report.html"
        }
    }

    /// Takes the output folder (refusing a user's folder, an input, a
    /// symlink, a file), before any run.
    fn prepare_output(&self) -> Result<OutputDir, OutputError> {
        // A shard folder is never written over a folder of shard folders:
        // they would be carried inside it, where `merge` does not look.
        if self.shard.is_some() {
            let inner: Vec<String> = std::fs::read_dir(&self.out_path)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
                        && p.join(shard::MANIFEST).is_file()
                })
                .map(|p| crate::escape::path(&p))
                .collect();
            if !inner.is_empty() {
                let mut inner = inner;
                inner.sort();
                return Err(OutputError::Refused(format!(
                    "{} holds shard folders ({}); a shard folder written there would \
                     carry them inside it, where merge does not look: give this shard a \
                     folder of its own beside them (--out {})",
                    crate::escape::path(&self.out_path),
                    inner.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                    crate::escape::path(
                        &self
                            .out_path
                            .join(self.shard.map_or_else(String::new, |s| s.folder_name()))
                    )
                )));
            }
        }
        OutputDir::prepare(
            &self.out_path,
            Options {
                mode: Mode::Folder,
                contents: match self.shard {
                    Some(_) => Contents::Shard,
                    None => Contents::Results,
                },
                force: self.force,
                inputs: &self.inputs,
            },
        )
    }

    /// The columns of the tables written as the runs finish: an unsharded
    /// run's are those of its results (`Layout::of`), a shard's those of
    /// every variant of the scenario (`Layout::of_variants`), so that its
    /// rows are the unsharded run's.
    fn columns(&self) -> Columns {
        let names: Vec<Vec<String>> = self.plans.iter().map(VariantPlan::layer_names).collect();
        let of = |v: usize| VariantColumns {
            layers: names[v].as_slice(),
            params: self.plans[v].params.as_slice(),
            pools: self.plans[v].has_pools(),
            caches: self.plans[v].has_cache(),
        };
        let layout = match self.shard {
            Some(_) => Layout::of_variants((0..self.plans.len()).map(of)),
            None => Layout::of_variants(self.items.iter().map(|&(v, _)| of(v))),
        };
        Columns { layout }
    }

    /// Makes every run of `items` in parallel, with a progress bar (and a
    /// line per run with `--verbose`), writing `timeseries.csv` and
    /// `services_timeseries.csv` into `out` as they finish (`columns`:
    /// theirs); the results, without those rows, in (variant, replicate)
    /// order whatever the threads did. The inner error: the tables could
    /// not be written (the runs not yet started are not made).
    fn simulate(
        &self,
        out: &OutputDir,
        columns: &Columns,
    ) -> Result<Result<Streamed, OutputError>, Interrupted> {
        let total = self.items.len();
        let bar = progress_bar(total as u64, self.quiet);
        let started = Instant::now();
        let finished = AtomicUsize::new(0);
        let on_done = |r: &RunResult| {
            let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
            bar.inc(1);
            if self.verbose {
                let line = format!(
                    "run {n}/{total}: {} replicate {}: {} events{}, {:.2} s since start",
                    r.variant,
                    r.replicate,
                    r.summary.events,
                    r.summary
                        .aborted
                        .map_or(String::new(), |why| format!(" (aborted: {why})")),
                    started.elapsed().as_secs_f64()
                );
                if bar.is_hidden() {
                    errln!("{line}");
                } else {
                    bar.println(line);
                }
            }
        };
        let mut stream = match TableStream::create(out, columns) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let stop = interrupt::flag();
        let mut results = Vec::with_capacity(total);
        let mut counts = Vec::with_capacity(total);
        let ran = runner::run_items_in_order(
            &self.plans,
            &self.items,
            self.scenario.seed,
            &on_done,
            stop,
            |mut r| {
                let rows = RunRows::take(columns, &mut r, stop);
                (r, rows)
            },
            |(r, rows): (RunResult, Result<RunRows, Stopped>)| -> Result<(), OutputError> {
                let rows = rows?;
                stream.append(&rows)?;
                counts.push(rows.count());
                results.push(r);
                Ok(())
            },
        );
        bar.finish_and_clear();
        match ran {
            Err(stopped) => Err(stopped),
            Ok(Err(OutputError::Interrupted)) => Err(Interrupted {
                finished: finished.load(Ordering::Relaxed),
                total,
            }),
            Ok(Err(e)) => Ok(Err(e)),
            Ok(Ok(())) => Ok(stream.finish().map(|()| Streamed { results, counts })),
        }
    }

    /// Writes the output folder (a shard folder with `--shard`) and
    /// returns where it is.
    fn write(
        &self,
        out: OutputDir,
        streamed: &Streamed,
        columns: &Columns,
    ) -> Result<Committed, OutputError> {
        let layout = &columns.layout;
        match self.shard {
            Some(spec) => write_shard(out, spec, &self.scenario, &self.plans, streamed, layout),
            None => write_folder(out, &self.scenario, &self.plans, &streamed.results, layout),
        }
    }

    /// The console summary, ranked by the SLO when there is one.
    fn print(&self, results: &[RunResult], dir: &Path) {
        out!(
            "{}",
            report::console::summary_text(&self.scenario.name, results, self.slo.as_ref())
        );
        if let Some(spec) = self.shard {
            outln!(
                "shard {} of {}: {} of {}; merge all {} shards with `stormsim merge`",
                spec.index,
                spec.count,
                results.len(),
                crate::human::plural(self.plans.len() * self.scenario.replicates as usize, "run"),
                spec.count
            );
        }
        outln!("results: {}", crate::escape::path(dir));
    }

    /// 1 when a run broke an invariant (a bug report follows), when a run
    /// hit a guard rail, or with `--fail-on-slo` when a variant missed its
    /// SLO; 0 otherwise.
    fn exit_code(&self, results: &[RunResult]) -> i32 {
        let broken: Vec<&RunResult> = results
            .iter()
            .filter(|r| !r.violations.is_empty())
            .collect();
        if !broken.is_empty() {
            for r in &broken {
                errout!(
                    "{}",
                    invariants::bug_report(
                        &self.reproduce,
                        &r.variant,
                        r.replicate,
                        self.scenario.seed,
                        &r.violations
                    )
                );
            }
            return 1;
        }
        let mut aborted: Vec<String> = Vec::new();
        for r in results {
            if let Some(why) = &r.summary.aborted {
                let advice = why.limit_field().map_or(String::new(), |(_, flag)| {
                    format!("; raise it in the scenario or with {flag}")
                });
                let line = format!("error: variant {}: {why}{advice}", r.variant);
                if !aborted.contains(&line) {
                    aborted.push(line);
                }
            }
        }
        if !aborted.is_empty() {
            for line in &aborted {
                errln!("{line}");
            }
            errln!(
                "error: some runs hit a guard rail and stopped early (see the `aborted` column of summary.csv)"
            );
            return 1;
        }
        if self.fail_on_slo {
            let failed = report::console::slo_failures(results);
            if !failed.is_empty() {
                for line in &failed {
                    errln!("error: {line}");
                }
                errln!(
                    "error: {} of {} missed the SLO (--fail-on-slo)",
                    failed.len(),
                    crate::human::plural(self.plans.len(), "variant")
                );
                return 1;
            }
        }
        0
    }
}

/// The results of the runs, once their long tables are written
/// (`table_stream`), in (variant, replicate) order.
struct Streamed {
    /// Without their rows of `timeseries.csv` and
    /// `services_timeseries.csv`.
    results: Vec<RunResult>,
    /// Each result's rows of those tables ([`RunRows::count`]).
    counts: Vec<(usize, usize)>,
}

/// Writes the rest of a whole run's folder (`timeseries.csv` and
/// `services_timeseries.csv` are written as the runs finish), with the
/// columns of `layout`: the other tables, the resolved scenario, and the
/// charts and report drawn from the tables as written.
fn write_folder(
    out: OutputDir,
    s: &Scenario,
    plans: &[VariantPlan],
    results: &[RunResult],
    layout: &Layout,
) -> Result<Committed, OutputError> {
    let stop = interrupt::flag();
    let summary = report::tables::summary_csv_until(layout, results, stop)?;
    let by_variant = report::tables::summary_by_variant_csv_until(results, stop)?;
    let resolved = scenario::resolved_yaml(s);
    out.write("summary.csv", &summary)?;
    out.write("summary_by_variant.csv", &by_variant)?;
    let [services, calls, replicas] =
        report::graph_tables::all_but_timeseries_until(layout, results, stop)?;
    for (name, bytes) in [&services, &calls, &replicas] {
        out.write(name, bytes)?;
    }
    let classes = report::graph_tables::classes_csv(layout, results, stop)?;
    if let Some(classes) = &classes {
        out.write("classes.csv", classes)?;
    }
    out.write("scenario.resolved.yaml", resolved.as_bytes())?;
    // Charts are drawn from the tables as written, read back and checked as
    // `stormsim plot` reads them, against the shape of the runs made (the
    // scenario is the one scenario.resolved.yaml holds: resolving is a
    // fixed point).
    // Read back from the work folder, in one streaming pass each.
    let read_back = |file: &str| {
        out.open_written(file)
            .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
            .map_err(|e| match e {
                OutputError::Interrupted => report::ReportError::Interrupted,
                e => report::ReportError::Table(e.to_string()),
            })
    };
    let data = report::ChartData::from_checked_source(
        || read_back(table_stream::TIMESERIES),
        &summary,
        &by_variant,
        s,
        runner::shape(plans, s),
        None,
    )
    .and_then(|d| {
        d.with_graph(report::graph_data::GraphSources {
            services: &services.1[..],
            timeseries: read_back(table_stream::SERVICES_TIMESERIES)?,
            calls: &calls.1[..],
        })
    })
    .and_then(|d| d.with_classes(classes.as_deref()))
    .map_err(report_to_output)?;
    for (path, bytes) in report::visual_files(&data).map_err(report_to_output)? {
        out.write(&path, &bytes)?;
    }
    out.commit()
}

/// Writes a shard folder: its rows of the tables (with the columns of the
/// whole run), the exact summary cells, the resolved scenario and the
/// manifest. No charts: they come after `stormsim merge`.
fn write_shard(
    out: OutputDir,
    spec: ShardSpec,
    s: &Scenario,
    plans: &[VariantPlan],
    streamed: &Streamed,
    layout: &Layout,
) -> Result<Committed, OutputError> {
    let results = &streamed.results;
    let resolved = scenario::resolved_yaml(s);
    let cells = report::tables::summary_rows_with(layout, results);
    let exact: Vec<_> = results
        .iter()
        .zip(&cells)
        .map(|(r, c)| shard::ExactRow {
            variant: &r.variant,
            replicate: r.replicate,
            seed: r.seed,
            cells: c,
        })
        .collect();
    let replicates = s.replicates as usize;
    let manifest = Manifest {
        format: shard::FORMAT.into(),
        stormsim_version: env!("CARGO_PKG_VERSION").into(),
        scenario: s.name.clone(),
        scenario_digest: shard::scenario_digest(&resolved),
        shard: spec.index,
        shards: spec.count,
        variants: plans.len(),
        replicates: s.replicates,
        items_total: plans.len() * replicates,
        rule: shard::RULE.into(),
        items: results
            .iter()
            .zip(&streamed.counts)
            .map(|(r, &(rows, service_rows))| ManifestItem {
                item: r.variant_index * replicates + r.replicate as usize,
                variant_index: r.variant_index,
                variant: r.variant.clone(),
                replicate: r.replicate,
                rows,
                graph_rows: [
                    r.graph.services.len(),
                    service_rows,
                    r.graph.edges.len(),
                    r.graph.replicas.len(),
                    r.classes.len(),
                ],
            })
            .collect(),
    };
    out.write(
        "summary.csv",
        &report::tables::summary_csv_with(layout, results),
    )?;
    out.write(shard::EXACT_SUMMARY, &shard::exact_summary_csv(&exact))?;
    for (name, bytes) in
        report::graph_tables::all_but_timeseries_until(layout, results, interrupt::flag())?
    {
        out.write(name, &bytes)?;
    }
    out.write(
        shard::GRAPH_TABLES[shard::CLASSES],
        &report::graph_tables::classes_table(layout, results, interrupt::flag())?,
    )?;
    out.write("scenario.resolved.yaml", resolved.as_bytes())?;
    out.write(shard::MANIFEST, manifest.to_json().as_bytes())?;
    out.commit()
}
