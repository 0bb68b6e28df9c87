//! The command line: `stormsim run` (whole or one shard), `stormsim merge`,
//! `stormsim validate`, `stormsim plot`, `stormsim presets`, `stormsim
//! check`, `stormsim tune` (in `tune`), `stormsim import`, `stormsim
//! export`, `stormsim schema`, `stormsim completions`. Exit codes: 0 success, 1 the run
//! failed (for `check`: a finding is an error), 2 bad input, 130
//! interrupted (README.md, "Commands").

mod run;
mod tune;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crate::configs;
use crate::escape::{escape, escape_lines};
use crate::interrupt;
use crate::report::output_dir::{self, Committed, Contents, Options};
use crate::report::{self, Mode, OutputDir, OutputError};
use crate::scenario::{self, Scenario, ScenarioError, ScenarioErrors, presets};
use crate::shard::{self, ShardSpec};
use crate::terminal::{self, errln, errout, out, outln};
use crate::workers;

/// The scenario `stormsim run` uses when given no file.
pub const DEFAULT_SCENARIO: &str = include_str!("../../scenarios/outage-recovery.yaml");
const DEFAULT_LABEL: &str = "<default scenario: scenarios/outage-recovery.yaml>";

#[derive(Parser, Debug)]
#[command(
    name = "stormsim",
    version,
    about = "Deterministic discrete-event simulator of retry storms"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a scenario and write CSV tables to output/<name>/.
    Run(RunArgs),
    /// Merge the shard folders of a run made with --shard (or
    /// --shard-from-env) into the outputs of one run: tables, charts and
    /// report, byte for byte those of the unsharded run.
    Merge(MergeArgs),
    /// Check a scenario file and report every problem with its location.
    Validate(ScenarioArgs),
    /// Draw the charts and report.html again from the CSV tables of an
    /// earlier run (no simulation).
    Plot(PlotArgs),
    /// List the presets of real retry libraries, or show one as YAML.
    Presets {
        #[command(subcommand)]
        action: Option<PresetsAction>,
    },
    /// Review a scenario's retry policy without simulating it: time against
    /// the deadline, amplification, and retry anti-patterns.
    Check(CheckArgs),
    /// Search the scenario's `tune.space` for the retry settings that do
    /// best under its SLO, in at most `tune.budget` runs; writes
    /// output/<name>/tune/ (tune.csv, best.yaml, charts/pareto).
    Tune(tune::TuneArgs),
    /// Print the JSON Schema of the scenario format (for an editor's YAML
    /// extension).
    Schema,
    /// Read the retry settings of one method, route or instance from a
    /// configuration file (gRPC service config, Envoy route, Istio, Linkerd,
    /// Resilience4j, appsettings.json, AWS config) and print them as a layer to paste into a scenario.
    Import(ImportArgs),
    /// Write tuned settings (a scenario's layer, or dotted paths to values)
    /// back into a configuration file as a minimal edit, and print the diff.
    Export(ExportArgs),
    /// Print the shell completion script for bash, zsh or fish.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
}

/// The shells `stormsim completions` writes a script for.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Subcommand, Debug)]
enum PresetsAction {
    /// Print a preset as YAML, with its sources.
    Show {
        /// The preset's name (see `stormsim presets`).
        name: String,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Format {
    Human,
    Json,
}

#[derive(Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

/// Which policy of a configuration file (`from:` takes the same keys).
#[derive(Args, Debug)]
struct SelectorArgs {
    /// The file's format.
    #[arg(long, value_enum)]
    format: configs::Format,
    /// grpc-service-config: the method, `pkg.Service/Method` (or
    /// `pkg.Service` for the service's defaults).
    #[arg(long)]
    method: Option<String>,
    /// envoy-route: the route's name, or its match prefix or path;
    /// istio-virtualservice: the route's name, or `#N` for `spec.http[N]`
    /// (from 0; an unnamed route); linkerd-serviceprofile: the route's name.
    #[arg(long)]
    route: Option<String>,
    /// envoy-route: the route's virtual host, by its `name` or a domain.
    #[arg(long, value_name = "NAME")]
    virtual_host: Option<String>,
    /// istio-virtualservice: the destination host (or one of `hosts`).
    #[arg(long)]
    host: Option<String>,
    /// resilience4j: the instance name.
    #[arg(long)]
    instance: Option<String>,
    /// ms-resilience: the configuration section path, `:` between keys
    /// (`HttpClients:Orders:Resilience`).
    #[arg(long)]
    section: Option<String>,
    /// aws-config: the profile (`default`, or NAME of `[profile NAME]`);
    /// linkerd-serviceprofile: the ServiceProfile's `metadata.name`.
    #[arg(long)]
    profile: Option<String>,
    /// A setting stormsim does not model that may be left out all the same
    /// (its key name, or the key path an error shows). Repeatable.
    #[arg(long, value_name = "KEY")]
    ignore: Vec<String>,
    /// For a call (import --to, export --call): the replicas of the
    /// service called, which decide whether Envoy's success-rate ejection
    /// can run (default: taken from the scenario, else not known).
    #[arg(long, value_name = "N")]
    replicas: Option<u32>,
}

impl SelectorArgs {
    fn selector(&self) -> configs::Selector {
        configs::Selector {
            method: self.method.clone(),
            route: self.route.clone(),
            virtual_host: self.virtual_host.clone(),
            host: self.host.clone(),
            instance: self.instance.clone(),
            section: self.section.clone(),
            profile: self.profile.clone(),
            ignore: self.ignore.clone(),
            target: configs::Target::Layer,
        }
    }
}

#[derive(Args, Debug)]
struct ImportArgs {
    /// The configuration file.
    file: PathBuf,
    #[command(flatten)]
    select: SelectorArgs,
    /// The layer's name (default: from the method, route, host or
    /// instance); with --to, the call's `name` (default: none, the call is
    /// named by the service it calls).
    #[arg(long)]
    name: Option<String>,
    /// Print a call edge to the service SERVICE, to paste under a
    /// service's `calls:` (or as `clients.calls`), instead of a layer: the
    /// file is read for a call (an Envoy cluster's outlier_detection, a
    /// retry's previous_hosts predicate).
    #[arg(long, value_name = "SERVICE")]
    to: Option<String>,
}

#[derive(Args, Debug)]
struct ExportArgs {
    /// The tuned settings: a scenario (see --layer) or a mapping of dotted
    /// paths to values (layers.NAME.retry.max_attempts: 4), as `stormsim
    /// tune` writes best.yaml.
    best: PathBuf,
    /// The configuration file to edit.
    #[arg(long)]
    into: PathBuf,
    #[command(flatten)]
    select: SelectorArgs,
    /// The layer of best.yaml to write (default: the layer or call whose
    /// `from` names the file, or the only layer).
    #[arg(long, conflicts_with = "call")]
    layer: Option<String>,
    /// The call edge of best.yaml to write: CALLER.CALL (the service and
    /// the call's name, as in `services.CALLER.calls.CALL` paths), or
    /// `clients` for the clients' call.
    #[arg(long, value_name = "CALLER.CALL")]
    call: Option<String>,
    /// Print the diff only; change nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// The folder of a finished run (with timeseries.csv, summary.csv,
    /// summary_by_variant.csv and scenario.resolved.yaml).
    dir: PathBuf,
    /// Replace charts/ and report.html even in a folder stormsim did not
    /// write.
    #[arg(long)]
    force: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// The shard folders, one for each shard 0..N, in any order; or a
    /// folder holding them (as output/<name>/ after sharded runs).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Output folder (default: output/<scenario name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the output folder even if it holds files stormsim did not
    /// write (they are deleted).
    #[arg(long)]
    force: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct ScenarioArgs {
    /// The scenario file (YAML).
    file: PathBuf,
    /// Override a field: PATH=VALUE, with the dotted paths of `variants`
    /// (for example layers.api.retry.jitter=none). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The scenario file (YAML). Without one, runs the bundled
    /// outage-recovery scenario.
    file: Option<PathBuf>,
    /// Output folder (default: output/<scenario name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the output folder even if it holds files stormsim did not
    /// write (they are deleted).
    #[arg(long)]
    force: bool,
    /// Override a field: PATH=VALUE (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Scenario seed (replaces `seed`).
    #[arg(long, value_parser = whole_u64, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Replicates per variant (replaces `replicates`).
    #[arg(long, value_parser = whole_replicates, allow_negative_numbers = true)]
    replicates: Option<u32>,
    /// Worker threads (default: one per core): up to 4 per core, or up to 64 on a machine with fewer than 16 cores; never more than 1024
    /// (default: one per core, or RAYON_NUM_THREADS).
    #[arg(long, value_parser = whole_threads, allow_negative_numbers = true)]
    threads: Option<usize>,
    /// Guard rail: events per run (replaces `limits.max_events`).
    #[arg(long, value_parser = whole_limit, allow_negative_numbers = true)]
    max_events: Option<u64>,
    /// Guard rail: calls and dependency requests in flight at once
    /// (replaces `limits.max_in_flight`).
    #[arg(long, value_parser = whole_limit, allow_negative_numbers = true)]
    max_in_flight: Option<u64>,
    /// Print nothing but errors.
    #[arg(long, short, conflicts_with = "verbose")]
    quiet: bool,
    /// Print a line per finished run (events, time since start).
    #[arg(long, short)]
    verbose: bool,
    /// Run only shard I of N (0-based): the runs k = variant index ×
    /// replicates + replicate with k mod N = I. Writes a shard folder
    /// (default output/<name>/shard-I-of-N) for `stormsim merge`.
    #[arg(long, value_name = "I/N", conflicts_with = "shard_from_env")]
    shard: Option<ShardSpec>,
    /// Take the shard from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX,
    /// with --shard-count or STORMSIM_SHARDS) or a Slurm job array
    /// (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN).
    #[arg(long)]
    shard_from_env: bool,
    /// The number of shards, with --shard-from-env (Kubernetes does not
    /// export the Job's completions).
    #[arg(
        long,
        value_name = "N",
        requires = "shard_from_env",
        value_parser = whole_usize,
        allow_negative_numbers = true
    )]
    shard_count: Option<usize>,
    /// Exit 1 when a variant misses the scenario's SLO (its `slo`
    /// section), after writing the results: for CI.
    #[arg(long)]
    fail_on_slo: bool,
}

/// A flag that replaces one field of the scenario (`--seed` for `seed`):
/// applied as a `--set` override after the user's own, and named as the
/// user typed it in an error about its value (`--budget: budget is 0`),
/// not as `<--set>`. `run` and `tune` share it.
#[derive(Clone, Copy, Debug)]
struct FieldFlag {
    /// The flag, as typed: `--budget`.
    flag: &'static str,
    /// The field it sets: `tune.budget`.
    field: &'static str,
    /// Its value, when given.
    value: Option<u64>,
}

impl FieldFlag {
    fn new(flag: &'static str, field: &'static str, value: Option<u64>) -> FieldFlag {
        FieldFlag { flag, field, value }
    }

    /// The user's `--set` overrides, then one for each flag given.
    fn overrides(sets: &[String], flags: &[FieldFlag]) -> Vec<String> {
        let given = flags
            .iter()
            .filter_map(|f| Some(format!("{}={}", f.field, f.value?)));
        sets.iter().cloned().chain(given).collect()
    }

    /// `errors`, each one about the override of a flag given naming the
    /// flag instead of `<--set>` and the field, after `error:` as every
    /// other error of the command line (`error: --replicates: replicates
    /// is 0; expected 1 to 10000`), not as a place in a file.
    fn name_in(mut errors: ScenarioErrors, flags: &[FieldFlag]) -> ScenarioErrors {
        for err in &mut errors.0 {
            if err.file != scenario::error::SET_LABEL {
                continue;
            }
            let flag = flags
                .iter()
                .find(|f| f.value.is_some() && err.path.as_deref() == Some(f.field));
            if let Some(f) = flag {
                err.file = format!("error: {}", f.flag);
                err.path = None;
            }
        }
        errors
    }
}

/// A flag's whole number, refused in words a user reads (clap's own
/// message is Rust's: "invalid digit found in string", "0..=4294967295").
fn parse_whole(text: &str, max: u64) -> Result<u64, String> {
    parse_shown(text, max, (0, max))
}

/// As [`parse_whole`], for a flag whose field accepts only `shown` (ends
/// included), which its refusal says: validation refuses a number in
/// `0..=max` outside it, with the field's own words.
fn parse_shown(text: &str, max: u64, shown: (u64, u64)) -> Result<u64, String> {
    let (lo, hi) = shown;
    match text.parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ if text.starts_with('-') => Err(format!(
            "expected a whole number from {lo} to {hi}, not a negative one"
        )),
        // Digits, too many of them: only the range is wrong.
        _ if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("expected a whole number from {lo} to {hi}"))
        }
        _ => Err(format!(
            "expected a whole number from {lo} to {hi} (digits only: no sign, unit, decimal point or exponent)"
        )),
    }
}

/// `--threads`: 1 to this machine's [`workers::limit`], which its refusal
/// says (`workers::count` refuses a number in range of the storage but
/// not of the machine, in the same words).
pub(crate) fn whole_threads(text: &str) -> Result<usize, String> {
    let shown = (1, workers::limit() as u64);
    parse_shown(text, u64::from(u32::MAX), shown).map(|v| v as usize)
}

/// `--replicates`: 1 to `MAX_REPLICATES`, as the field.
pub(crate) fn whole_replicates(text: &str) -> Result<u32, String> {
    let shown = (1, u64::from(scenario::validate::MAX_REPLICATES));
    parse_shown(text, u64::from(u32::MAX), shown).map(|v| v as u32)
}

/// `--budget`: 1 to `MAX_BUDGET`, as `tune.budget`.
pub(crate) fn whole_budget(text: &str) -> Result<u32, String> {
    let shown = (1, u64::from(scenario::tune::MAX_BUDGET));
    parse_shown(text, u64::from(u32::MAX), shown).map(|v| v as u32)
}

pub(crate) fn whole_u64(text: &str) -> Result<u64, String> {
    parse_whole(text, u64::MAX)
}

/// `--max-events`, `--max-in-flight`: 1 and up, as their fields (0 is
/// then refused with the field's message).
pub(crate) fn whole_limit(text: &str) -> Result<u64, String> {
    parse_shown(text, u64::MAX, (1, u64::MAX))
}

pub(crate) fn whole_usize(text: &str) -> Result<usize, String> {
    parse_whole(text, u64::from(u32::MAX)).map(|v| v as usize)
}

/// Prints clap's message for a command line it refused (or its help), as
/// clap would, unless the message quotes an argument holding a character
/// a terminal would act on (`crate::escape`): then it is printed without
/// colours, each such character escaped. The check reads the message as
/// written, from the command without styles: clap's coloured rendering,
/// shown as plain text, drops escape sequences and control characters
/// without a trace, and printed to a terminal it writes them raw.
fn print_parse_error(e: &clap::Error) {
    let plain = Cli::command()
        .styles(clap::builder::Styles::plain())
        .try_get_matches_from(std::env::args_os())
        .err();
    let text = match &plain {
        Some(p) => p.render().ansi().to_string(),
        None => e.render().to_string(),
    };
    match escape_lines(&text) {
        std::borrow::Cow::Borrowed(_) => {
            let _ = e.print();
        }
        std::borrow::Cow::Owned(safe) if e.use_stderr() => errout!("{safe}"),
        std::borrow::Cow::Owned(safe) => out!("{safe}"),
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    crate::memory_gate::one_arena_under_a_limit();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            print_parse_error(&e);
            return terminal::finish(code);
        }
    };
    let code = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Merge(args) => merge(args),
        Command::Validate(args) => checking(|| validate(args)),
        Command::Plot(args) => plot(args),
        Command::Presets { action: None } => list_presets(),
        Command::Presets {
            action: Some(PresetsAction::Show { name }),
        } => show_preset(&name),
        Command::Check(args) => checking(|| check(args)),
        Command::Schema => {
            out!("{}", scenario::schema::scenario_schema_text());
            0
        }
        Command::Completions { shell } => completions(shell),
        Command::Tune(args) => tune::tune(args),
        Command::Import(args) => checking(|| import(args)),
        Command::Export(args) => export(args),
    };
    terminal::finish(code)
}

/// Runs a command that writes no file (`validate`, `check`, `import`)
/// with the signal handler installed first thing: Ctrl-C or SIGTERM at
/// any moment (a sweep of 100 000 points takes seconds to check) ends it
/// at once with a message and [`interrupt::EXIT_CODE`], as it ends `run`.
fn checking(f: impl FnOnce() -> i32) -> i32 {
    interrupt::install();
    interrupt::reading(
        "interrupted: nothing was written (stopped while checking)",
        f,
    )
}

fn print_located(errors: &[ScenarioError], warning: bool) {
    for e in errors {
        if warning {
            errln!("warning: {e}");
        } else {
            errln!("{e}");
        }
    }
    if !warning && errors.len() > 1 {
        errln!("{} errors", errors.len());
    }
}

/// `stormsim import`: the file's policy as a layer (or, with `--to`, a
/// call edge), on stdout.
fn import(args: ImportArgs) -> i32 {
    let what = if args.to.is_some() { "call" } else { "layer" };
    if let Some(problem) = args
        .name
        .as_deref()
        .and_then(|n| scenario::validate::item_name_problem(what, n))
    {
        errln!("error: --name: {problem}");
        return 2;
    }
    if let Some(problem) = args
        .to
        .as_deref()
        .and_then(|n| scenario::validate::item_name_problem("service", n))
    {
        errln!("error: --to: {problem}");
        return 2;
    }
    let label = crate::escape::path(&args.file);
    let mut selector = args.select.selector();
    if args.to.is_some() {
        selector.target = configs::Target::Call {
            replicas: args.select.replicas,
            balancer: None,
        };
    }
    let format = args.select.format;
    let policy = match configs::import_file(&args.file, format, &selector) {
        Ok(p) => p,
        Err(e) => {
            print_located(&e, false);
            return 2;
        }
    };
    let warnings: Vec<ScenarioError> = policy.warnings.iter().map(|f| f.located(&label)).collect();
    print_located(&warnings, true);
    let source = format!(
        "imported by stormsim from {} ({format}), {}",
        escape(&label),
        escape(&policy.selected)
    );
    if let Some(to) = &args.to {
        let header = vec![
            source,
            "paste under a service's `calls:` (or as `clients.calls`); or keep it in sync with `from: { file, format, ... }` on the call"
                .to_string(),
        ];
        let name = args.name.as_deref();
        let text = configs::layer_yaml::call_yaml(&policy, to, name, &header);
        // Never print a call that would not load once pasted.
        if let Err(e) = configs::layer_yaml::check_call_loads(
            &text,
            &policy,
            to,
            name,
            args.select.replicas,
            &label,
        ) {
            print_located(&e, false);
            return 2;
        }
        out!("{text}");
        return 0;
    }
    let name = args.name.clone().unwrap_or_else(|| {
        let raw = selector.value(format).unwrap_or("imported");
        // The default name: the last part of a gRPC method or an Envoy
        // path (`CreateOrder`); a Linkerd route's whole name, method and
        // path (`GET /x.json`: `get-x-json`), as its last part alone
        // (`json`) would name every `.json` route alike; an Istio route
        // picked by index, its host and index (`reviews-1`); an Istio host
        // alone, its first label.
        let whole;
        let last = match format {
            configs::Format::LinkerdServiceprofile => raw,
            configs::Format::IstioVirtualservice if raw.starts_with('#') => {
                let host = selector.host.as_deref().unwrap_or("route");
                let host = host.split('.').next().unwrap_or(host);
                whole = format!("{host}-{}", &raw[1..]);
                whole.as_str()
            }
            // An Istio host (no route given): its service, the first
            // label (`details` of `details.bookinfo.svc.cluster.local`).
            configs::Format::IstioVirtualservice if selector.host.as_deref() == Some(raw) => raw
                .split('.')
                .find(|s| !s.is_empty() && *s != "*")
                .unwrap_or(raw),
            _ => raw
                .rsplit(['/', '.'])
                .find(|s| !s.is_empty())
                .unwrap_or(raw),
        };
        let mut slug = String::new();
        for c in last.chars() {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug = slug.trim_matches('-').to_string();
        if slug.is_empty() {
            "imported".into()
        } else if scenario::validate::item_name_problem("layer", &slug).is_some() {
            // A route named `2`: a number is not a layer name.
            format!("imported-{slug}")
        } else {
            slug
        }
    });
    let header = vec![
        source,
        "paste under `layers:`; or keep it in sync with `from: { file, format, ... }` on the layer"
            .to_string(),
    ];
    let text = configs::layer_yaml::layer_yaml(&policy, &name, &header);
    // Never print a layer that would not load once pasted.
    if let Err(e) = configs::layer_yaml::check_loads(&text, &policy, &name, &label) {
        print_located(&e, false);
        return 2;
    }
    out!("{text}");
    0
}

/// `stormsim export`: tuned values into the user's file, with a diff.
fn export(args: ExportArgs) -> i32 {
    // First thing: a signal while reading and checking quits at once; one
    // while waiting for the file's lock or writing stops before the file
    // is replaced (the replacement itself is a rename, never half done).
    interrupt::install();
    let label = crate::escape::path(&args.into);
    let (done, diff, notes) = match interrupt::reading(
        "interrupted: nothing was written (stopped while reading the files)",
        || export_prepare(&args, &label),
    ) {
        Ok(ready) => ready,
        Err(code) => return code,
    };
    let notes = || {
        for n in &notes {
            errln!("note: {}", escape(n));
        }
    };
    // The diff only once it is true of the file: a script reading stdout
    // must not see a change that was not made.
    match configs::write::replace_file(&args.into, &done.before, &done.after) {
        Ok(()) => {
            out!("{diff}");
            notes();
            errln!("wrote {}", escape(&label));
            0
        }
        Err(_) if interrupt::requested() => {
            errln!(
                "interrupted: nothing was written: {} was not changed",
                escape(&label)
            );
            interrupt::EXIT_CODE
        }
        Err(e) => {
            notes();
            errln!("error: {}: {}", escape(&label), escape(&e));
            1
        }
    }
}

/// Everything `export` does before it replaces the file: `Err` holds the
/// exit code of a command that ends there (an error, `--dry-run`, nothing
/// to change); `Ok` the new text, its diff and the notes to print.
#[allow(clippy::type_complexity)]
fn export_prepare(
    args: &ExportArgs,
    label: &str,
) -> Result<(configs::write::Exported, String, Vec<String>), i32> {
    use configs::write::{export_given, unified_diff, wanted_from_best};
    let label = label.to_string();
    let mut selector = args.select.selector();
    let pick = match (&args.layer, &args.call) {
        (Some(l), _) => Some(configs::write::Pick::Layer(l)),
        (None, Some(c)) => Some(configs::write::Pick::Call(c)),
        (None, None) => None,
    };
    let (wanted, given) = match wanted_from_best(&args.best, pick, &args.into, &selector) {
        Ok((w, target, given)) => {
            selector.target = match (target, args.select.replicas) {
                (configs::Target::Call { balancer, .. }, Some(n)) => configs::Target::Call {
                    replicas: Some(n),
                    balancer,
                },
                (t, _) => t,
            };
            (w, given)
        }
        Err(e) => {
            print_located(&e, false);
            return Err(2);
        }
    };
    // No --route (or another selector flag): the picked layer's or call's
    // own `from:` selector, when it is of this format, names the policy
    // (the layer or call picked by --layer or --call, or, without either,
    // the one whose `from` names the file).
    if let configs::write::Wanted::Layer(m) = &wanted
        && let Some(from) = m
            .get("from")
            .and_then(|f| serde_json::from_value::<scenario::types::FromFile>(f.clone()).ok())
        && from.format == args.select.format
    {
        let f = from.selector();
        let fill = |mine: &mut Option<String>, theirs: Option<String>| {
            if mine.is_none() {
                *mine = theirs;
            }
        };
        fill(&mut selector.method, f.method);
        fill(&mut selector.route, f.route);
        fill(&mut selector.virtual_host, f.virtual_host);
        fill(&mut selector.host, f.host);
        fill(&mut selector.instance, f.instance);
        fill(&mut selector.section, f.section);
        fill(&mut selector.profile, f.profile);
        if selector.ignore.is_empty() {
            selector.ignore = f.ignore;
        }
    }
    let text = match configs::read_file(&args.into, &label) {
        Ok(t) => t,
        Err(e) => {
            print_located(&[e], false);
            return Err(2);
        }
    };
    if !args.dry_run
        && let Err(e) = configs::write::check_writable(&args.into)
    {
        errln!("error: {}: {}", escape(&label), escape(&e));
        return Err(2);
    }
    let done = match export_given(
        &text,
        &label,
        args.select.format,
        &selector,
        &wanted,
        &given,
    ) {
        Ok(d) => d,
        Err(e) => {
            print_located(&e, false);
            return Err(2);
        }
    };
    if done.after == done.before {
        if !args.dry_run {
            errln!(
                "{}: already holds these values; nothing to change",
                escape(&label)
            );
        }
        return Err(0);
    }
    let diff = unified_diff(&done.before, &done.after, &label);
    let mut notes = Vec::new();
    if configs::edit::is_crlf(&done.before) {
        notes.push(format!(
            "{label} has CRLF line endings; the diff shows them as LF"
        ));
    }
    notes.extend(done.notes.iter().cloned());
    if args.dry_run {
        out!("{diff}");
        for n in &notes {
            errln!("note: {}", escape(n));
        }
        return Err(0);
    }
    Ok((done, diff, notes))
}

/// Writes the completion script of `shell` to stdout, generated by
/// clap_complete from the same definitions as the parser, so it always
/// offers the commands and options this binary has.
fn completions(shell: CompletionShell) -> i32 {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "stormsim", &mut script);
    // As it is: a script may hold characters the terminal text escapes.
    terminal::print_raw(&script);
    0
}

fn list_presets() -> i32 {
    let width = presets::PRESETS
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    for p in presets::PRESETS {
        outln!("{:<width$}  {}: {}", p.name, p.library, p.summary);
    }
    0
}

fn show_preset(name: &str) -> i32 {
    match presets::find(name) {
        Some(p) => {
            out!("{}", p.yaml);
            0
        }
        None => {
            let names = presets::names();
            let hint = crate::scenario::suggest::did_you_mean(name, names.iter().copied())
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            errln!(
                "error: unknown preset `{}`; {hint}expected one of {}",
                escape(name),
                names.join(", ")
            );
            2
        }
    }
}

fn check(args: CheckArgs) -> i32 {
    let file = &args.scenario.file;
    let s = match load(Some(file), &args.scenario.set) {
        Ok(s) => s,
        Err(e) => return report_errors(&e),
    };
    // Every variant (every sweep point) is reviewed.
    let reviews = match crate::check::check_variants(&s) {
        Ok(r) => r,
        Err(e) => return report_errors(&e),
    };
    match args.format {
        Format::Human => out!(
            "{}",
            crate::check::human_reviews(&reviews, &escape(&crate::escape::path(file)))
        ),
        Format::Json => out!("{}", crate::check::json_reviews(&reviews)),
    }
    i32::from(reviews.has_errors())
}

fn report_errors(errors: &ScenarioErrors) -> i32 {
    let errors = errors.clone().bounded(scenario::load::MAX_LISTED_ERRORS);
    errln!("{errors}");
    2
}

/// Loads a scenario with its `--set` overrides: every one applied, in
/// order, then the result validated once. Every problem is reported, those
/// of the overrides' syntax and those of the file; overrides that change
/// nothing (every variant sets the field again) are warned about.
/// Warns (stderr) when a run of `s` will stop at `limits.max_events`
/// before its end (`check::events_over_limit`).
pub(crate) fn warn_events_over_limit(s: &Scenario) {
    if let Some((message, fix)) = crate::check::events_over_limit(s) {
        errln!("warning: limits.max_events: {message}; {fix}");
    }
}

/// When every variant's runs are sure to stop at `limits.max_events`
/// before their end (`sure`: each variant's
/// `check::events_certainly_over_limit`): why, and the way out, for a
/// refusal before anything runs.
pub(crate) fn guard_rail_refusal<'a>(
    sure: impl IntoIterator<Item = Option<&'a (String, String)>>,
) -> Option<String> {
    let sure: Vec<_> = sure.into_iter().collect::<Option<_>>()?;
    let variants = match sure.len() {
        1 => String::new(),
        n => format!(" (all {n} variants)"),
    };
    Some(sure_stop("every run", sure.first()?, &variants))
}

/// What had happened when writing the results failed: `all 4 runs had
/// finished`, `its 1 run had finished`.
pub(crate) fn all_runs_finished(n: u64) -> String {
    match n {
        1 => "its 1 run had finished".to_string(),
        n => format!("all {n} runs had finished"),
    }
}

/// The words of a refusal of runs sure to stop at the guard rail: the
/// finding of `check::events_certainly_over_limit` said of `subject`
/// ("every run", "every candidate's run"), `more` after it, then the fix.
pub(crate) fn sure_stop(subject: &str, (message, fix): &(String, String), more: &str) -> String {
    let message = message.replacen("every run will stop", &format!("{subject} would stop"), 1);
    format!("limits.max_events: {message}{more}; {fix}")
}

fn load(file: Option<&Path>, sets: &[String]) -> Result<Scenario, ScenarioErrors> {
    let mut errors = Vec::new();
    let mut parsed = Vec::with_capacity(sets.len());
    for arg in sets {
        match scenario::parse_set_arg(arg) {
            Ok(set) => parsed.push(set),
            Err(e) => errors.push(e),
        }
    }
    let loaded = match file {
        Some(path) => scenario::load_file_with(path, &parsed),
        None => scenario::load_str_with(DEFAULT_SCENARIO, DEFAULT_LABEL, &parsed),
    };
    match loaded {
        Ok(l) if errors.is_empty() => {
            for w in &l.warnings {
                errln!("warning: {}", escape(w));
            }
            Ok(l.scenario)
        }
        Ok(_) => Err(ScenarioErrors::new(errors)),
        Err(ScenarioErrors(more, omitted)) => {
            errors.extend(more);
            scenario::show_as_typed(&mut errors, sets);
            Err(ScenarioErrors(errors, omitted))
        }
    }
}

fn validate(args: ScenarioArgs) -> i32 {
    let s = match load(Some(&args.file), &args.set) {
        Ok(s) => s,
        Err(e) => return report_errors(&e),
    };
    match scenario::expand_variants(&s) {
        Ok(variants) => {
            // What `run` refuses: every run sure to stop at the guard rail.
            let sure: Vec<_> = variants
                .iter()
                .map(|(_, v)| crate::check::events_certainly_over_limit(v))
                .collect();
            if let Some(refusal) = guard_rail_refusal(sure.iter().map(Option::as_ref)) {
                errln!("error: {refusal} (`stormsim run` refuses it)");
                return 2;
            }
            warn_events_over_limit(&s);
            outln!(
                "{}: ok ({} variant{}, {} replicate{} each)",
                escape(&crate::escape::path(&args.file)),
                variants.len(),
                if variants.len() == 1 { "" } else { "s" },
                s.replicates,
                if s.replicates == 1 { "" } else { "s" },
            );
            0
        }
        Err(e) => report_errors(&e),
    }
}

/// A report error while writing an output folder.
fn report_to_output(e: report::ReportError) -> OutputError {
    match e {
        report::ReportError::Interrupted => OutputError::Interrupted,
        report::ReportError::Table(m) | report::ReportError::Draw(m) => {
            OutputError::Io(format!("cannot draw the charts: {m}"))
        }
    }
}

/// Says why an output folder was not written (`done`: what had happened
/// before, for an interruption) and returns the exit code.
/// What an output folder found and cleaned up of a command stopped
/// outright before (`note:` lines on stderr), unless `--quiet`.
fn print_notes(out: &OutputDir, quiet: bool) {
    if !quiet {
        for n in out.notes() {
            errln!("note: {}", escape(n));
        }
    }
}

/// Before the folders `dirs` are read: puts right each of them, and each
/// missing folder on the way to one, that a stormsim command stopped
/// outright was writing (a folder moved aside in the middle of its swap
/// goes back), as the next command writing it would; says what was done.
fn recover_inputs(dirs: &[PathBuf], quiet: bool) {
    for d in dirs {
        for folder in d.ancestors().filter(|a| !a.as_os_str().is_empty()) {
            for n in output_dir::recover_for_reading(folder) {
                if !quiet {
                    errln!("note: {}", escape(&n));
                }
            }
            if std::fs::symlink_metadata(folder).is_ok() {
                break;
            }
        }
    }
}

/// Says on stderr what of the folder (or entries) a command replaced
/// could not be removed, and returns the exit code that follows: 1 when
/// anything is left, 0 otherwise (README.md, "Outputs").
fn warn_left_over(written: &Committed) -> i32 {
    match written.left_over() {
        Some(warning) => {
            errln!("warning: {}", escape(&warning));
            1
        }
        None => 0,
    }
}

fn output_failed(e: OutputError, out: &Path, not_written: &str, done: &str) -> i32 {
    let code = e.exit_code();
    match &e {
        OutputError::Refused(m) => return refuse(m),
        OutputError::Interrupted => {
            errln!("interrupted: {done}; {}", nothing_written(out, not_written))
        }
        OutputError::Io(m) => errln!(
            "error: could not write results to {}: {m}; nothing was written",
            crate::escape::path(out)
        ),
    }
    code
}

fn merge(args: MergeArgs) -> i32 {
    // First thing: a signal from now on ends the command with a message.
    interrupt::install();
    if let Err((m, code)) = workers::start(None) {
        errln!("error: {m}");
        return code;
    }
    let not_written = "the merged tables, charts/, report.html";
    let merge_failed = |e: shard::merge::MergeError, out: Option<&Path>| match e {
        shard::merge::MergeError::Input(e) => refuse(format!("cannot merge: {e}")),
        shard::merge::MergeError::Draw(e) => {
            errln!("error: cannot draw the charts: {e}; nothing was written");
            1
        }
        shard::merge::MergeError::Interrupted => {
            let what = match out {
                Some(out) => nothing_written(out, not_written),
                None => "nothing was written".to_string(),
            };
            errln!("interrupted: {what}");
            interrupt::EXIT_CODE
        }
        shard::merge::MergeError::Output(e) => output_failed(
            e,
            out.unwrap_or(Path::new(".")),
            not_written,
            "the shards were read",
        ),
    };
    recover_inputs(&args.dirs, args.quiet);
    let plan = match interrupt::reading(
        "interrupted: nothing was written (stopped while reading the shards)",
        || shard::merge::plan(&args.dirs),
    ) {
        Ok(p) => p,
        Err(e) => return merge_failed(e, None),
    };
    let out_path = match &args.out {
        Some(out) => out.clone(),
        None => match output_dir::default_folder(plan.scenario()) {
            Ok(dir) => dir,
            Err(e) => return refuse(e),
        },
    };
    if let Some((who, file, inside)) = shard::merge::from_file_inside(&plan, &out_path) {
        errln!(
            "error: the output folder {} holds {}, which the scenario's {who} reads \
             (from: {file}); merge will not replace that folder, even with --force: \
             choose another output folder",
            crate::escape::path(&out_path),
            crate::escape::path(&inside)
        );
        return 2;
    }
    let inputs = plan.shard_dirs();
    let out = match OutputDir::prepare(
        &out_path,
        Options {
            mode: Mode::Folder,
            contents: Contents::Results,
            force: args.force,
            inputs: &inputs,
        },
    ) {
        Ok(out) => out,
        Err(e) => return output_failed(e, &out_path, not_written, "the shards were read"),
    };
    print_notes(&out, args.quiet);
    let merged = match shard::merge::merge(&plan, &out) {
        Ok(m) => m,
        Err(e) => {
            drop(out);
            return merge_failed(e, Some(&out_path));
        }
    };
    match out.commit() {
        Ok(written) => {
            let left_over = warn_left_over(&written);
            let dir = written.path;
            if !args.quiet {
                outln!(
                    "merged {} ({}) of {}",
                    crate::human::plural(plan.shards(), "shard"),
                    crate::human::plural(plan.items(), "run"),
                    plan.scenario()
                );
                outln!("results: {}", crate::escape::path(&dir));
            }
            // As `run` does: a run a guard rail stopped is a failure.
            let mut lines: Vec<String> = Vec::new();
            for (variant, why) in &merged.aborted {
                let advice = [
                    ("limits.max_events", "--max-events"),
                    ("limits.max_in_flight", "--max-in-flight"),
                ]
                .iter()
                .find(|(field, _)| why.contains(field))
                .map_or(String::new(), |(_, flag)| {
                    format!("; raise it in the scenario or with {flag} when running the shards")
                });
                let line = format!("error: variant {variant}: {why}{advice}");
                if !lines.contains(&line) {
                    lines.push(line);
                }
            }
            if lines.is_empty() {
                return left_over;
            }
            for line in &lines {
                errln!("{line}");
            }
            errln!(
                "error: {} of {} hit a guard rail and stopped early (see the `aborted` \
                 column of summary.csv); the merged results are written",
                merged.aborted.len(),
                crate::human::plural(plan.items(), "run")
            );
            1
        }
        Err(e) => output_failed(e, &out_path, not_written, "the shards were merged"),
    }
}

/// What an interrupted command says of its output folder.
/// Prints the refusal `m` of a command that writes (exit 2), saying, as
/// every refusal does, that nothing was written; returns 2.
fn refuse(m: impl std::fmt::Display) -> i32 {
    let m = m.to_string();
    if m.to_lowercase().contains("nothing was written") {
        errln!("error: {m}");
    } else {
        errln!("error: {m}; nothing was written");
    }
    2
}

fn nothing_written(out: &Path, files: &str) -> String {
    let state = if out.exists() {
        "is as it was"
    } else {
        "was not created"
    };
    format!(
        "nothing was written: {} {state} ({files} not written)",
        crate::escape::path(out)
    )
}

/// A progress bar over runs on stderr; hidden when stderr is not a
/// terminal, in CI (`CI` set) and with `--quiet`.
fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs, eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// Why `plot` cannot draw the folder `dir`, when it is a shard's or a
/// search's rather than a run's (even with `--force`: its tables are not
/// a run's).
fn not_a_run_folder(dir: &Path) -> Option<String> {
    let shown = crate::escape::path(dir);
    let found = Contents::found_in(dir)?;
    let way_out = match found {
        Contents::Results => return None,
        Contents::Shard => {
            "merge the shards first with `stormsim merge` (the folders of all the \
             shards, or the folder holding them), then plot the merged folder"
        }
        Contents::Tune => {
            "its chart, charts/pareto.svg, is drawn by `stormsim tune` itself: plot the \
             run folder instead (output/<name>, after `stormsim run`)"
        }
    };
    Some(format!(
        "{shown} holds {} ({}), not a run folder, and plot draws a run's charts; \
         nothing was written: {way_out}",
        found.words(),
        match found {
            Contents::Shard => crate::shard::MANIFEST,
            _ => "tune.csv",
        }
    ))
}

/// The files every run folder holds, which `plot` reads.
const RUN_FILES: [&str; 4] = [
    "scenario.resolved.yaml",
    "timeseries.csv",
    "summary.csv",
    "summary_by_variant.csv",
];

/// The tables `plot` reads whole (the summaries, and a graph's
/// `services.csv`, `calls.csv` and `classes.csv`; `timeseries.csv` is
/// streamed): their bytes are held, and then their parsed rows, which
/// take at least as much again. When that lower bound is over what this
/// process may use (`memory_gate::process_budget`), the command is
/// refused before reading, with the estimate; it used to grow until an
/// allocation failed.
fn tables_too_large_to_plot(dir: &Path) -> Option<String> {
    const READ_WHOLE: [&str; 5] = [
        "summary.csv",
        "summary_by_variant.csv",
        "classes.csv",
        "services.csv",
        "calls.csv",
    ];
    let budget = crate::memory_gate::process_budget()?;
    let bytes: u64 = READ_WHOLE
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let held = bytes.saturating_mul(2);
    (held > budget).then(|| {
        format!(
            "plot reads the summary tables of {} whole ({} together) and holds their parsed rows as well: about {} or more in memory, more than this process may use ({}: three quarters of the smaller of its address-space limit, ulimit -v, and the memory available); run plot where more memory is free, or rerun the scenario with fewer sweep points, variants or replicates",
            crate::escape::path(dir),
            scenario::memory::bytes_text(bytes),
            scenario::memory::bytes_text(held),
            scenario::memory::bytes_text(budget),
        )
    })
}

/// Why `dir` is not (yet) a run's folder `plot` can draw, when that is
/// something other than damage to its tables: a stormsim command writing
/// it now (the folder may not exist yet, or hold the run it replaces), an
/// empty folder, a folder missing files every run writes. `None`: what
/// follows (the folder's kind, its tables) decides.
fn plot_source_problem(dir: &Path) -> Option<String> {
    let shown = crate::escape::path(dir);
    if let Some((lock, pid)) = output_dir::writer_of(dir) {
        return Some(format!(
            "a stormsim command (process {pid}) is writing {shown} now (it holds the \
             folder's lock {}); nothing was written: plot it once that command has \
             finished",
            crate::escape::path(&lock)
        ));
    }
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    if Contents::found_in(dir).is_some_and(|c| c != Contents::Results) {
        return None;
    }
    let mut entries = std::fs::read_dir(dir).ok()?.filter_map(Result::ok);
    if entries.next().is_none() {
        return Some(format!(
            "{shown} is empty: no run has been written there; nothing was written: \
             plot the folder of a finished run (stormsim run writes output/<name>, or \
             the folder given to --out)"
        ));
    }
    let missing: Vec<&str> = RUN_FILES
        .iter()
        .copied()
        .filter(|f| std::fs::symlink_metadata(dir.join(f)).is_err())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let list = |names: &[&str]| match names {
        [one] => one.to_string(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
        [] => String::new(),
    };
    Some(format!(
        "{shown} is not the folder of a finished run: it has no {} (a run writes {} \
         together); nothing was written: plot the folder of a finished run",
        list(&missing),
        list(&RUN_FILES)
    ))
}

fn plot(args: PlotArgs) -> i32 {
    // First thing: a signal from now on ends the command with a message.
    interrupt::install();
    if let Err((m, code)) = workers::start(None) {
        errln!("error: {m}");
        return code;
    }
    let dir = &args.dir;
    let interrupted = || {
        errln!(
            "interrupted: nothing was changed in {} (charts/ and report.html not redrawn)",
            crate::escape::path(dir)
        );
        interrupt::EXIT_CODE
    };
    recover_inputs(std::slice::from_ref(dir), args.quiet);
    if let Some(refusal) = plot_source_problem(dir)
        .or_else(|| not_a_run_folder(dir))
        .or_else(|| tables_too_large_to_plot(dir))
    {
        return refuse(refusal);
    }
    // Decided before reading: only charts/ and report.html are replaced.
    let out = match OutputDir::prepare(
        dir,
        Options {
            mode: Mode::Entries(output_dir::VISUALS),
            contents: Contents::Results,
            force: args.force,
            inputs: &[],
        },
    ) {
        Ok(out) => out,
        Err(OutputError::Interrupted) => return interrupted(),
        Err(OutputError::Refused(m)) => return refuse(m),
        Err(e) => {
            errln!("error: {e}");
            return e.exit_code();
        }
    };
    print_notes(&out, args.quiet);
    let data = interrupt::reading(
        &format!(
            "interrupted: nothing was changed in {} (charts/ and report.html not redrawn; stopped while reading the run)",
            crate::escape::path(dir)
        ),
        || report::ChartData::from_dir(dir),
    );
    let files = match data.and_then(|d| report::visual_files(&d)) {
        Ok(f) => f,
        Err(report::ReportError::Table(e)) => {
            return refuse(format!(
                "cannot read the run in {}: {e}",
                crate::escape::path(dir)
            ));
        }
        Err(report::ReportError::Draw(e)) => {
            errln!("error: cannot draw the charts: {e}");
            return 1;
        }
        Err(report::ReportError::Interrupted) => {
            drop(out);
            return interrupted();
        }
    };
    let write = |out: OutputDir| -> Result<Committed, OutputError> {
        for (path, bytes) in &files {
            out.write(path, bytes)?;
        }
        out.commit()
    };
    match write(out) {
        Ok(written) => {
            let left_over = warn_left_over(&written);
            if !args.quiet {
                outln!(
                    "charts and report: {}",
                    crate::escape::path(&written.path.join("report.html"))
                );
            }
            left_over
        }
        Err(OutputError::Interrupted) => interrupted(),
        Err(OutputError::Refused(m)) => refuse(m),
        Err(OutputError::Io(m)) => {
            errln!(
                "error: could not write to {}: {m}; nothing was changed",
                crate::escape::path(dir)
            );
            1
        }
    }
}
