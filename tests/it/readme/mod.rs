//! The README stays true: every command it shows runs as shown and prints
//! what it shows, and every figure it quotes is what the command beside it
//! gives, within the printed rounding.
//!
//! Why a test of our own rather than `trycmd`: trycmd compares command
//! output with text, which covers the README's output blocks, but most of
//! what drifts in a README is figures quoted in tables and sentences (a
//! table of means from `summary_by_variant.csv`, "about 11 900 customers"),
//! which need the run's tables and a rounding rule, not a text diff; and
//! the "every field" block must be compared with the format's schema.
//! Here one run serves every check that quotes it.
//!
//! How the README marks what it shows (see its "Testing" section): blocks
//! fenced `console` hold `$ COMMAND` lines and their output (`…` for text
//! that varies, a line `...` for lines left out); blocks fenced `sh` hold
//! commands to type; an HTML comment just before a block (invisible on the
//! page) says what else a block is: `test: NAME` (a check below),
//! `output of: COMMAND`, `exit: CODES` (one per `$` line; 0 when absent),
//! `file: PATH` (the file's text).

mod fields;
mod figures;
mod markdown;
mod shell;

use std::collections::{BTreeSet, HashMap};

use figures::{Checker, TableChecker};
use markdown::{Block, blocks, inline_code, named, readme_text, table};
use shell::{
    as_installed, csv_header, csv_rows, output_matches, repo, run, run_ok, scratch, shell,
};

const OUTAGE: &str = "stormsim run scenarios/outage-recovery.yaml";

/// Every `test:` name the README uses, each checked by one test below.
const NAMED: [&str; 37] = [
    "outage-recovery reading",
    "after-incident reading",
    "interrupt messages",
    "every field",
    "retry-budgets table",
    "retry-budgets prose",
    "hop semantics scenarios",
    "aws jitter table",
    "aws jitter conclusions",
    "queue consumers",
    "queueing theory",
    "queueing scenario",
    "brooker table",
    "brooker prose",
    "sre",
    "metastable table",
    "metastable prose",
    "report verdicts",
    "charts",
    "graph picture",
    "timeseries columns",
    "summary columns",
    "commands table",
    "run options",
    "rust version",
    "fuzz corpus",
    "layout",
    "exit codes",
    "presets table",
    "three-tier table",
    "three-tier prose",
    "slow-db table",
    "slow-db prose",
    "stability map",
    "one-bad-replica table",
    "one-bad-replica prose",
    "reconnect-storm table",
];

// ---------------------------------------------------------------------
// What the README is made of

/// Every block is one the checks know: code is `sh`, `console` or `yaml`,
/// or says by its note what it is; every note is one of the kinds above;
/// every `test:` name is checked, once.
#[test]
fn every_block_is_checked() {
    let mut names = BTreeSet::new();
    let mut problems = Vec::new();
    for b in blocks() {
        if let Some(note) = &b.note {
            let kind = note.split(':').next().unwrap_or("");
            match kind {
                "test" => {
                    let name = b.note_value("test").unwrap().to_string();
                    if !NAMED.contains(&name.as_str()) {
                        problems.push(format!("{}: no check named {name:?}", b.at()));
                    }
                    if !names.insert(name.clone()) {
                        problems.push(format!("{}: `test: {name}` twice", b.at()));
                    }
                }
                "output of" | "file" => {}
                "exit" => {
                    if b.lang.as_deref() != Some("console") {
                        problems.push(format!("{}: exit codes on a non-console block", b.at()));
                    }
                }
                _ => problems.push(format!("{}: unknown note {note:?}", b.at())),
            }
        }
        match b.lang.as_deref() {
            None | Some("sh") | Some("console") | Some("yaml") => {}
            Some(other) if b.note.is_some() => {
                let _ = other;
            }
            Some(other) => problems.push(format!(
                "{}: a code block ({other:?}) that no check reads: fence it sh, console or yaml, or say what it is",
                b.at()
            )),
        }
    }
    for n in NAMED {
        if !names.contains(n) {
            problems.push(format!("no block is `test: {n}`"));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

// ---------------------------------------------------------------------
// Commands and their output

/// A command line the README shows but the test does not run, and what is
/// checked instead.
fn not_run(line: &str) -> Option<Result<(), String>> {
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let exists = |p: &str| {
        if repo().join(p).exists() {
            Ok(())
        } else {
            Err(format!("{p} does not exist"))
        }
    };
    let r = match line {
        // This very suite.
        "cargo test --release" => Ok(()),
        "cargo install --path ." => {
            if cargo.contains("name = \"stormsim\"") && repo().join("src/main.rs").exists() {
                Ok(())
            } else {
                Err("Cargo.toml builds no `stormsim` binary".into())
            }
        }
        // rustup's own installer and update, and the check the next
        // lines' comment names (see `rust version`).
        "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"
        | "rustup update stable"
        | "rustc --version"
        | "cargo install cargo-fuzz"
        | "cargo install cargo-mutants" => Ok(()),
        // cargo-mutants: its configuration, and the file it is pointed at.
        mutants if mutants.starts_with("cargo mutants -j 1") => exists(".cargo/mutants.toml")
            .and_then(|()| match mutants.split_once(" -f ") {
                Some((_, file)) => exists(file),
                None => Ok(()),
            }),
        // The SimPy comparison (README "Speed"): its scripts exist.
        "pip install simpy==4.1.2" | "cargo build --release" => Ok(()),
        "python3 benches/simpy/compare.py" => {
            exists("benches/simpy/compare.py").and_then(|()| exists("benches/simpy/storm.py"))
        }
        bench if bench.starts_with("cargo bench --bench ") => {
            let name = &bench["cargo bench --bench ".len()..];
            if cargo.contains(&format!("[[bench]]\nname = \"{name}\"")) {
                exists(&format!("benches/{name}.rs"))
            } else {
                Err(format!("no bench `{name}` in Cargo.toml"))
            }
        }
        "cargo run --release -- run scenarios/outage-recovery.yaml && cp output/outage-recovery/charts/load.png docs/" =>
        {
            let ran = run_ok(OUTAGE);
            let made =
                std::fs::read(ran.folder("outage-recovery").join("charts/load.png")).unwrap();
            let kept = std::fs::read(repo().join("docs/load.png")).unwrap();
            if made == kept {
                Ok(())
            } else {
                Err("docs/load.png is not the chart the run draws: regenerate it".into())
            }
        }
        _ => {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["mkdir", "-p", dir] if dir.starts_with('~') => Ok(()),
                [script @ ("fuzz/run.sh" | "fuzz/keep.sh"), target, ..] => {
                    exists(script).and_then(|()| exists(&format!("fuzz/fuzz_targets/{target}.rs")))
                }
                _ => return None,
            }
        }
    };
    Some(r)
}

/// The command without a trailing comment (`  # ...`).
fn without_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let bytes: Vec<char> = line.chars().collect();
    let mut byte = 0;
    for (i, &c) in bytes.iter().enumerate() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i > 0 && bytes[i - 1] == ' ' => return line[..byte].trim_end(),
            _ => {}
        }
        byte += c.len_utf8();
    }
    line.trim_end()
}

/// Every `sh` block runs: its `stormsim` lines (or `cargo run --release --`)
/// in order in one scratch folder, each exiting 0 (a redirection to a
/// file under `~` is dropped: the output must still come); every other
/// line is one `not_run` knows.
#[test]
fn sh_blocks_run() {
    let mut problems = Vec::new();
    for b in blocks()
        .into_iter()
        .filter(|b| b.lang.as_deref() == Some("sh"))
    {
        let lines: Vec<String> = b
            .text
            .lines()
            .map(without_comment)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        let runnable: Vec<String> = lines
            .iter()
            .filter(|l| not_run(l).is_none())
            .map(|l| as_installed(l))
            .collect();
        let dir = scratch();
        for line in &lines {
            if let Some(r) = not_run(line) {
                if let Err(e) = r {
                    problems.push(format!("{}: `{line}`: {e}", b.at()));
                }
                continue;
            }
            let cmd = as_installed(line);
            if !cmd.starts_with("stormsim ") {
                problems.push(format!(
                    "{}: `{line}`: a command the test does not know",
                    b.at()
                ));
                continue;
            }
            let (cmd, to_home) = match cmd.split_once(" > ~") {
                Some((c, _)) => (c.to_string(), true),
                None => (cmd.clone(), false),
            };
            let ran = if runnable.len() == 1 && !to_home && !cmd.contains('>') {
                run(&cmd)
            } else {
                &*Box::leak(Box::new(shell(&dir, &cmd)))
            };
            if ran.code != 0 {
                problems.push(format!(
                    "{}: `{line}` exits {}:\n{}",
                    b.at(),
                    ran.code,
                    ran.out
                ));
            } else if to_home && ran.out.trim().is_empty() {
                problems.push(format!("{}: `{line}` prints nothing", b.at()));
            } else if let Some((_, file)) = cmd.split_once(" > ") {
                let written = std::fs::read_to_string(dir.join(file.trim())).unwrap_or_default();
                if serde_json::from_str::<serde_json::Value>(&written).is_err() {
                    problems.push(format!("{}: `{line}` writes no JSON", b.at()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// A console block's `$` lines and the output shown after each.
fn sessions(b: &Block) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in b.text.lines() {
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push((as_installed(cmd), String::new()));
        } else {
            let (_, shown) = out
                .last_mut()
                .unwrap_or_else(|| panic!("{}: output before any `$` line", b.at()));
            shown.push_str(line);
            shown.push('\n');
        }
    }
    out
}

/// Every console block runs as shown, in one scratch folder: each command
/// prints what follows it and exits with its code (`exit:` note, else 0).
/// Only `stormsim` and a few file commands (mkdir, touch, cp, mv, head)
/// appear in them.
#[test]
fn console_blocks_print_what_they_show() {
    let mut problems = Vec::new();
    for b in blocks()
        .into_iter()
        .filter(|b| b.lang.as_deref() == Some("console"))
    {
        let steps = sessions(&b);
        let codes: Vec<i32> = match b.note_value("exit") {
            Some(codes) => codes
                .split_whitespace()
                .map(|c| c.parse().unwrap())
                .collect(),
            None => vec![0; steps.len()],
        };
        assert_eq!(
            codes.len(),
            steps.len(),
            "{}: exit codes for each `$` line",
            b.at()
        );
        let dir = scratch();
        for ((cmd, shown), code) in steps.iter().zip(codes) {
            for part in cmd.split("&&") {
                let program = part.split_whitespace().next().unwrap_or("");
                if !["stormsim", "mkdir", "touch", "cp", "mv", "head"].contains(&program) {
                    problems.push(format!("{}: `{cmd}`: {program} in a console block", b.at()));
                }
            }
            let ran = if steps.len() == 1 {
                run(cmd)
            } else {
                &*Box::leak(Box::new(shell(&dir, cmd)))
            };
            if ran.code != code {
                problems.push(format!(
                    "{}: `{cmd}` exits {}, the README says {code}:\n{}",
                    b.at(),
                    ran.code,
                    ran.out
                ));
            }
            if !output_matches(shown, &ran.out) {
                problems.push(format!(
                    "{}: `{cmd}` prints\n{}\nbut the README shows\n{shown}",
                    b.at(),
                    ran.out
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n\n"));
}

/// Output shown without its command (`output of: COMMAND`) is what the
/// command prints.
#[test]
fn output_blocks_are_what_their_command_prints() {
    let mut n = 0;
    for b in blocks() {
        let Some(cmd) = b.note_value("output of") else {
            continue;
        };
        n += 1;
        let ran = run_ok(cmd);
        assert!(
            output_matches(&b.text, &ran.out),
            "{}: `{cmd}` prints\n{}\nbut the README shows\n{}",
            b.at(),
            ran.out,
            b.text
        );
    }
    assert!(n > 0);
}

/// A YAML block noted `file: PATH` is that file's text; every other one
/// (but the "every field" block, checked on its own) names only fields the
/// format has.
#[test]
fn yaml_blocks_name_real_fields() {
    let schema = fields::schema_fields(&stormsim::scenario::schema::scenario_schema());
    let mut problems = Vec::new();
    for b in blocks()
        .into_iter()
        .filter(|b| b.lang.as_deref() == Some("yaml"))
    {
        if let Some(path) = b.note_value("file") {
            let file = std::fs::read_to_string(repo().join(path)).unwrap();
            if file != b.text {
                problems.push(format!("{}: not the text of {path}", b.at()));
            }
            if path.starts_with("deploy/") {
                // Another tool's file (a CI workflow): its stormsim
                // commands are checked in `deploy_files_name_real_options`.
                continue;
            }
        }
        if b.note_value("test") == Some("every field") {
            continue;
        }
        for w in fields::written(&b.text) {
            if !schema.contains_key(&w.path) {
                problems.push(format!(
                    "{}: line {}: `{}` is not a field of the format",
                    b.at(),
                    w.line,
                    w.path
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// `stormsim SUBCOMMAND --help`'s options (long names).
fn options_of(sub: &[&str]) -> BTreeSet<String> {
    let out = std::process::Command::new(shell::bin())
        .args(sub)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{sub:?} --help");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip_while(|l| *l != "Options:")
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("--"))
                .map(|w| {
                    w.trim_end_matches(',')
                        .split(['=', '<'])
                        .next()
                        .unwrap()
                        .to_string()
                })
        })
        .collect()
}

fn subcommands() -> Vec<String> {
    let out = std::process::Command::new(shell::bin())
        .arg("--help")
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect()
}

/// Commands quoted in the text (`stormsim run FILE --shard I/N`) name a
/// real subcommand and real options of it.
#[test]
fn inline_commands_name_real_options() {
    let subs = subcommands();
    let mut problems = Vec::new();
    let mut n = 0;
    for b in blocks().into_iter().filter(|b| b.lang.is_none()) {
        for code in inline_code(&b.flat()) {
            let code = as_installed(&code);
            let Some(rest) = code.strip_prefix("stormsim ") else {
                continue;
            };
            n += 1;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let sub = words[0];
            if !subs.iter().any(|s| s == sub) {
                problems.push(format!("{}: `{code}`: no subcommand {sub}", b.at()));
                continue;
            }
            let known = options_of(&[sub]);
            for w in &words[1..] {
                if let Some(opt) = w.strip_prefix("--") {
                    let opt = opt.split('=').next().unwrap();
                    if !known.contains(opt) {
                        problems.push(format!("{}: `{code}`: {sub} has no --{opt}", b.at()));
                    }
                }
            }
        }
    }
    assert!(n > 20, "only {n} inline commands found");
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The `stormsim` commands of the deploy files the README shows (a CI
/// workflow's `run:` steps) name a real subcommand and real options.
#[test]
fn deploy_files_name_real_options() {
    let subs = subcommands();
    let mut problems = Vec::new();
    let mut n = 0;
    for b in blocks() {
        let Some(path) = b.note_value("file").filter(|p| p.starts_with("deploy/")) else {
            continue;
        };
        for line in b.text.lines() {
            let line = line.trim_start().trim_start_matches("- ");
            let line = line.strip_prefix("run: ").unwrap_or(line);
            let Some(rest) = line.strip_prefix("stormsim ") else {
                continue;
            };
            n += 1;
            let words: Vec<&str> = rest.split_whitespace().collect();
            if !subs.iter().any(|s| s == words[0]) {
                problems.push(format!("{path}: `{line}`: no subcommand {}", words[0]));
                continue;
            }
            let known = options_of(&[words[0]]);
            for w in &words[1..] {
                if let Some(opt) = w.strip_prefix("--") {
                    let opt = opt.split('=').next().unwrap();
                    if !known.contains(opt) {
                        problems.push(format!("{path}: `{line}`: no --{opt}"));
                    }
                }
            }
        }
    }
    assert!(n > 0, "no deploy file with a stormsim command is shown");
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

// ---------------------------------------------------------------------
// The figures, each against the run that gives it

/// The figures of `b` come from `cmd`, and the text says so: the command is
/// named in the block, or before it in its section.
fn marked(b: &Block, cmd: &str) {
    let all = blocks();
    let mut i = all.iter().position(|x| x.line == b.line).unwrap();
    loop {
        let text = all[i]
            .flat()
            .replace("cargo run --release -- ", "stormsim ");
        if text.contains(cmd) {
            return;
        }
        if i == 0 || all[i - 1].section != b.section {
            panic!(
                "{}: figures from `{cmd}`, which the text does not name",
                b.at()
            );
        }
        i -= 1;
    }
}

/// `marked`, then the run.
fn run_for(b: &Block, cmd: &str) -> &'static shell::Ran {
    marked(b, cmd);
    run_ok(cmd)
}

#[test]
fn outage_recovery_reading() {
    let b = named("outage-recovery reading");
    let f = run_for(&b, OUTAGE).by_variant("outage-recovery");
    let warm = run_for(&b,
        "stormsim run scenarios/outage-recovery.yaml --set dependency.recovery.warmup=0s --replicates 1",
    )
    .by_variant("outage-recovery");
    let variants = f.variants();
    assert_eq!(variants.len(), 4);
    let mut c = Checker::new(&b);
    let all = |fig: &str, scale: f64| -> Vec<f64> {
        variants.iter().map(|v| f.mean(v, fig) * scale).collect()
    };
    // During the outage (2 min to 3 min), after its first second.
    let rows = csv_rows(
        &run_ok(OUTAGE)
            .folder("outage-recovery")
            .join("timeseries.csv"),
    );
    let during: Vec<f64> = variants
        .iter()
        .map(|v| {
            let xs: Vec<f64> = rows
                .iter()
                .filter(|r| &r["variant"] == v)
                .filter(|r| (121.0..180.0).contains(&r["t_s"].parse::<f64>().unwrap()))
                .map(|r| r["load_ratio"].parse().unwrap())
                .collect();
            xs.iter().sum::<f64>() / xs.len() as f64
        })
        .collect();
    c.figure_all("3.1 times", &during);
    c.given(&["4 ×"]);
    let peaks = all("peak_load_ratio", 1.0);
    c.figure("3.2", peaks.iter().copied().fold(f64::INFINITY, f64::min));
    c.figure("3.3 times", peaks.iter().copied().fold(0.0, f64::max));
    c.figure_all("18 s", &all("recovery_time_s", 1.0));
    c.given(&["10%", "90%"]);
    let capacity = f.mean("no-jitter", "capacity_per_s");
    c.figure("78% of full capacity", 2000.0 / capacity * 100.0);
    let instant: Vec<f64> = variants
        .iter()
        .map(|v| warm.mean(v, "recovery_time_s"))
        .collect();
    c.figure_all("0.0 s", &instant);
    c.figure("2.3 s", f.mean("decorrelated", "latency_p99_ms") / 1000.0);
    c.figure("0.7 s", f.mean("full-jitter", "latency_p99_ms") / 1000.0);
    c.finish();
}

/// The console's second table, read in words: the figures after the
/// incident of the same runs.
#[test]
fn after_incident_reading() {
    let b = named("after-incident reading");
    let f = run_for(&b, OUTAGE).by_variant("outage-recovery");
    let variants = f.variants();
    let all = |fig: &str| -> Vec<f64> { variants.iter().map(|v| f.mean(v, fig)).collect() };
    let min = |xs: &[f64]| xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |xs: &[f64]| xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut c = Checker::new(&b);
    let success: Vec<f64> = all("success_rate_outside_incidents")
        .iter()
        .map(|v| v * 100.0)
        .collect();
    c.figure_all("100.00%", &success);
    c.figure_all("115 ms", &all("latency_p99_outside_ms"));
    let after = all("peak_load_ratio_after");
    c.figure("3.1", min(&after));
    c.figure("3.2 times", max(&after));
    let peaks = all("peak_load_ratio");
    c.holds(
        "the peak after is close to the peak of the whole run",
        after.iter().zip(&peaks).all(|(a, p)| a <= p && a / p > 0.9),
    );
    let refused = all("refused");
    c.about(
        "about 477 000",
        refused.iter().sum::<f64>() / refused.len() as f64,
    );
    c.given(&["10%"]);
    let effective = all("peak_effective_load_ratio");
    c.figure("22.9", min(&effective));
    c.figure("23.9 times", max(&effective));
    c.figure_all("20 s after", &all("time_to_full_goodput_s"));
    c.given(&["5 s"]);
    c.figure_all("18 s", &all("recovery_time_s"));
    c.finish();
}

/// Ctrl-C during a run over an earlier run's folder, and SIGTERM at once
/// to `plot`: the messages shown, exit 130, and nothing changed.
#[cfg(target_os = "linux")]
#[test]
fn interrupt_messages() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let b = named("interrupt messages");
    let shown: Vec<&str> = b.text.lines().collect();
    assert_eq!(shown.len(), 2);
    let dir = scratch();
    let earlier = run_ok(OUTAGE).folder("outage-recovery");
    shell(
        &dir,
        &format!("mkdir -p output && cp -r {} output/", earlier.display()),
    );
    let flat: String = readme_text()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains("`stormsim run scenarios/outage-recovery.yaml --replicates 50`"));
    let wait = |child: &mut std::process::Child| -> i32 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s.code().expect("exited, not killed");
            }
            assert!(Instant::now() < deadline, "no stop after the signal");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let kill = |pid: u32, sig: &str| {
        assert!(
            std::process::Command::new("kill")
                .args([sig, &pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
    };
    // The run: wait for its first finished run (--verbose), then Ctrl-C.
    let mut child = shell::command(shell::bin().to_str().unwrap(), &dir)
        .args([
            "run",
            "scenarios/outage-recovery.yaml",
            "--replicates",
            "50",
            "--verbose",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.starts_with("run 1/200"), "{first}");
    kill(child.id(), "-INT");
    let code = wait(&mut child);
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let last = rest.lines().last().unwrap_or_default();
    assert_eq!(code, 130, "{rest}");
    assert!(
        output_matches(shown[0], last),
        "prints\n{last}\nshown\n{}",
        shown[0]
    );

    // plot, stopped as soon as it catches signals.
    let mut child = shell::command(shell::bin().to_str().unwrap(), &dir)
        .args(["plot", "output/outage-recovery"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let catches = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("SigCgt:"))
                    .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            })
            .is_some_and(|m| m & (1 << 14) != 0)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !catches(child.id()) {
        assert!(child.try_wait().unwrap().is_none(), "plot ended first");
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_micros(200));
    }
    kill(child.id(), "-TERM");
    let code = wait(&mut child);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(code, 130, "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        output_matches(shown[1], last),
        "prints\n{last}\nshown\n{}",
        shown[1]
    );
}

/// `path` and the paths of the same field where the block says two parts
/// of the format have the same type: a closed fleet's think time is a
/// service-time distribution; the clients' call is a call like a service's;
/// a call has every field of a layer; a service every field of the
/// dependency.
fn same_types(path: &str) -> Vec<String> {
    let mut out = vec![path.to_string()];
    if let Some(f) = path.strip_prefix("clients.arrival.think.") {
        out.push(format!("dependency.service_time.{f}"));
    }
    let call = path
        .strip_prefix("clients.calls.")
        .or_else(|| path.strip_prefix("services[].calls[]."));
    if let Some(f) = call {
        out.push(format!("services[].calls[].{f}"));
        out.push(format!("layers[].{f}"));
    } else if let Some(f) = path.strip_prefix("services[].") {
        out.push(format!("dependency.{f}"));
    }
    out
}

#[test]
fn every_field_block_is_the_whole_format() {
    let b = named("every field");
    let schema = fields::schema_fields(&stormsim::scenario::schema::scenario_schema());
    let written = fields::written(&b.text);
    let mut problems = Vec::new();
    let shown: BTreeSet<&str> = written.iter().map(|w| w.path.as_str()).collect();
    for path in schema.keys() {
        if !same_types(path).iter().any(|p| shown.contains(p.as_str())) {
            problems.push(format!("the block lacks `{path}`"));
        }
    }
    for w in &written {
        match schema.get(&w.path) {
            None => problems.push(format!(
                "line {}: `{}` is not a field of the format",
                w.line, w.path
            )),
            Some(Some(default)) if w.active && !fields::same_value(default, &w.value) => problems
                .push(format!(
                    "line {}: `{}: {}`, but its default is {default}",
                    w.line, w.path, w.value
                )),
            _ => {}
        }
    }
    // And it loads, as written.
    let dir = scratch();
    std::fs::write(dir.join("every-field.yaml"), &b.text).unwrap();
    let ran = shell(&dir, "stormsim validate every-field.yaml");
    if ran.code != 0 {
        problems.push(format!("it does not load:\n{}", ran.out));
    }
    assert!(problems.is_empty(), "{}:\n{}", b.at(), problems.join("\n"));
}

#[test]
fn retry_budgets_table() {
    let b = named("retry-budgets table");
    let f = run_for(&b, "stormsim run scenarios/retry-budgets.yaml").by_variant("retry-budgets");
    let mut t = TableChecker::new(&b, table(&b));
    let cols = [
        (t.col("amplification"), "amplification", 1.0),
        (t.col("peak load ÷ capacity"), "peak_load_ratio", 1.0),
        (t.col("success rate"), "success_rate", 100.0),
        (t.col("recovery"), "recovery_time_s", 1.0),
    ];
    assert_eq!(t.table.rows.len(), f.variants().len());
    for v in f.variants() {
        let r = t.row(&v);
        for (c, fig, scale) in cols {
            t.check(r, c, &[Some(f.mean(&v, fig) * scale)]);
        }
    }
    t.finish();
}

#[test]
fn retry_budgets_prose() {
    let b = named("retry-budgets prose");
    let ran = run_for(&b, "stormsim run scenarios/retry-budgets.yaml");
    let f = ran.by_variant("retry-budgets");
    let mut c = Checker::new(&b);
    c.given(&["10%", "2.1"]);
    c.about(
        "about 100 s",
        f.mean("adaptive-throttling", "recovery_time_s"),
    );
    let rows = csv_rows(&ran.folder("retry-budgets").join("timeseries.csv"));
    let series = |variant: &str, rep: &str, col: &str| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r["variant"] == variant && r["replicate"] == rep)
            .map(|r| (r["t_s"].parse().unwrap(), r[col].parse().unwrap_or(0.0)))
            .collect()
    };
    // The brownout is 60 s to 90 s; the throttle's window 2 minutes.
    for rep in ["0", "1"] {
        let open = series("circuit-breaker", rep, "breaker_open_api");
        let at = |t: f64| open.iter().find(|(s, _)| *s == t).unwrap().1;
        c.holds(
            "the breaker opens within a second",
            at(59.0) == 0.0 && at(61.0) > 0.5,
        );
        let level = series("adaptive-throttling", rep, "throttle_level_api");
        let peak = level
            .iter()
            .fold((0.0, 0.0), |m, &(t, l)| if l > m.1 { (t, l) } else { m });
        c.holds(
            "the rejection probability climbs until the bad minutes leave the window",
            peak.0 > 90.0 && peak.0 <= 210.0 && level.iter().all(|&(t, l)| t < 215.0 || l < 0.01),
        );
    }
    c.finish();
}

#[test]
fn hop_semantics_scenarios() {
    let b = named("hop semantics scenarios");
    let mut c = Checker::new(&b);
    let nested = run_for(&b, "stormsim run scenarios/nested-layers.yaml");
    let f = nested.by_variant("nested-layers");
    // Calls per user request over the outage (60 s to 90 s), after its
    // first second.
    let rows = csv_rows(&nested.folder("nested-layers").join("timeseries.csv"));
    let (calls, offered) = rows
        .iter()
        .filter(|r| r["variant"] == "three-layers")
        .filter(|r| (61.0..90.0).contains(&r["t_s"].parse::<f64>().unwrap()))
        .fold((0.0, 0.0), |(c, o), r| {
            (
                c + r["dependency_attempts"].parse::<f64>().unwrap(),
                o + r["offered"].parse::<f64>().unwrap(),
            )
        });
    c.holds(
        "64 calls per user request during the outage",
        (calls / offered - 64.0).abs() < 0.5,
    );
    c.figure("10.8×", f.mean("three-layers", "peak_load_ratio"));
    c.figure("0.69×", f.mean("single-layer", "peak_load_ratio"));
    c.figure("1.15×", f.mean("global-budget", "amplification"));

    let f = run_for(&b, "stormsim run scenarios/payments-idempotency.yaml")
        .by_variant("payments-idempotency");
    c.given(&["10%", "+1.2"]);
    c.about("about 11 900", f.mean("no-key", "duplicate_side_effects"));
    c.holds(
        "none with one",
        f.mean("idempotency-key", "duplicate_side_effects") == 0.0,
    );
    c.about(
        "about 11 200",
        f.mean("status-probe", "duplicate_side_effects"),
    );

    let f = run_for(&b, "stormsim run scenarios/orphaned-work.yaml").by_variant("orphaned-work");
    c.about("about 5 700", f.mean("no-cancellation", "orphaned_work_s"));
    c.holds(
        "never recovers",
        f.get("no-cancellation", "recovered_fraction") == 0.0
            && f.get("cancel-queued", "recovered_fraction") == 0.0,
    );
    c.figure("25%", f.mean("no-cancellation", "success_rate") * 100.0);
    c.figure_all(
        "95%",
        &[
            f.mean("cancel-in-service", "success_rate") * 100.0,
            f.mean("cancel-queued-lifo", "success_rate") * 100.0,
        ],
    );
    c.holds(
        "brings it back at once",
        f.mean("cancel-in-service", "recovery_time_s") == 0.0
            && f.mean("cancel-queued-lifo", "recovery_time_s") == 0.0,
    );
    c.finish();
}

fn aws(b: &Block) -> shell::Figures {
    run_for(b, "stormsim run scenarios/aws-jitter-blog.yaml").by_variant("aws-jitter-blog")
}

const POLICIES: [(&str, &str); 5] = [
    ("no backoff", "no-backoff"),
    ("exponential", "exponential"),
    ("full jitter", "full-jitter"),
    ("equal jitter", "equal-jitter"),
    ("decorrelated", "decorrelated"),
];

#[test]
fn aws_jitter_table() {
    let b = named("aws jitter table");
    let f = aws(&b);
    let mut t = TableChecker::new(&b, table(&b));
    for r in 0..t.table.rows.len() {
        let n = t.cell(r, 0).to_string();
        for (col, policy) in POLICIES {
            let c = t.col(col);
            let v = format!("{policy} clients={n}");
            t.check(
                r,
                c,
                &[
                    Some(f.mean(&v, "dependency_attempts")),
                    Some(f.mean(&v, "completion_time_s")),
                ],
            );
        }
    }
    t.finish();
}

#[test]
fn aws_jitter_conclusions() {
    let b = named("aws jitter conclusions");
    let f = aws(&b);
    let calls = |p: &str, n: u32| f.mean(&format!("{p} clients={n}"), "dependency_attempts");
    let time = |p: &str, n: u32| f.mean(&format!("{p} clients={n}"), "completion_time_s");
    let shown = [50, 110, 150];
    let mut c = Checker::new(&b);
    let growth = calls("no-backoff", 150) / calls("no-backoff", 50);
    c.figure("7.3 times", growth);
    c.figure("1.8", growth.ln() / 3f64.ln());
    c.figure(
        "11%",
        (1.0 - calls("exponential", 50) / calls("no-backoff", 50)) * 100.0,
    );
    c.figure(
        "31%",
        (1.0 - calls("exponential", 150) / calls("no-backoff", 150)) * 100.0,
    );
    let slowest_jitter = |n: u32| {
        ["full-jitter", "equal-jitter", "decorrelated"]
            .iter()
            .map(|p| time(p, n))
            .fold(0.0, f64::max)
    };
    let lead = shown
        .iter()
        .map(|&n| time("exponential", n) / slowest_jitter(n))
        .fold(f64::INFINITY, f64::min);
    c.figure("8.7 times", lead);
    let least = shown.iter().all(|&n| {
        POLICIES.iter().all(|(_, p)| {
            calls("full-jitter", n) <= calls(p, n) * 1.0001
                || calls("equal-jitter", n) <= calls(p, n)
        })
    });
    c.holds("full and equal jitter do the least work", least);
    let equal_over_full = shown
        .iter()
        .map(|&n| calls("equal-jitter", n) / calls("full-jitter", n) - 1.0)
        .fold(0.0, f64::max);
    c.figure("7%", equal_over_full * 100.0);
    let ratios: Vec<f64> = shown
        .iter()
        .map(|&n| time("equal-jitter", n) / time("full-jitter", n))
        .collect();
    c.figure("1.3", ratios.iter().copied().fold(f64::INFINITY, f64::min));
    c.figure("1.6", ratios.iter().copied().fold(0.0, f64::max));
    for (shown, n) in [("16%", 50), ("29%", 110), ("33%", 150)] {
        c.figure(
            shown,
            (calls("decorrelated", n) / calls("full-jitter", n) - 1.0) * 100.0,
        );
    }
    c.finish();
}

#[test]
fn queue_consumers() {
    let b = named("queue consumers");
    let f = run_for(&b, "stormsim run scenarios/queue-consumer-dlq.yaml")
        .by_variant("queue-consumer-dlq");
    let v = ["in-handler-retries", "redelivery-only", "both"];
    let mut c = Checker::new(&b);
    c.given(&["1%", "30%"]);
    for (shown, v) in ["1.07", "1.14", "1.22"].iter().zip(v) {
        c.figure(shown, f.mean(v, "work_per_message"));
    }
    for (shown, v) in ["131", "119", "107"].iter().zip(v) {
        c.figure(shown, f.mean(v, "dead_lettered"));
    }
    for v in v {
        c.holds(
            "of 12 075 messages",
            (f.mean(v, "messages") - 12075.0).abs() <= 0.5,
        );
    }
    c.figure("12 075", f.mean("both", "messages"));
    for (shown, v) in ["31 s", "10 s", "39 s"].iter().zip(v) {
        c.figure(shown, f.mean(v, "message_latency_p99_ms") / 1000.0);
    }
    c.holds(
        "only the double loop processes messages twice",
        f.mean("both", "duplicate_deliveries") > 0.0
            && f.mean("in-handler-retries", "duplicate_deliveries") == 0.0
            && f.mean("redelivery-only", "duplicate_deliveries") == 0.0,
    );
    c.finish();
}

/// Erlang C: the probability that an arrival waits (c servers, load a).
fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let top = term * a / c as f64 / (1.0 - a / c as f64);
    top / (sum + top)
}

/// (W_q in ms, utilization, blocking) of M/M/c, or of M/M/1/K with `k`,
/// at 10 ms mean service.
fn theory(c: u32, rho: f64, k: Option<u32>) -> (f64, f64, f64) {
    let mu = 100.0;
    match k {
        None => {
            let lambda = rho * mu * c as f64;
            let wq = erlang_c(c, lambda / mu) / (c as f64 * mu - lambda) * 1000.0;
            (wq, rho, 0.0)
        }
        Some(k) => {
            let norm = (1.0 - rho) / (1.0 - rho.powi(k as i32 + 1));
            let p: Vec<f64> = (0..=k).map(|n| norm * rho.powi(n as i32)).collect();
            let block = p[k as usize];
            let l: f64 = p.iter().enumerate().map(|(n, pn)| n as f64 * pn).sum();
            let w = l / (rho * mu * (1.0 - block));
            ((w - 1.0 / mu) * 1000.0, 1.0 - p[0], block)
        }
    }
}

/// "M/M/4 ρ = 0.95", "M/M/1/10 ρ = 0.9" → (c, ρ, K).
fn case(label: &str) -> (u32, f64, Option<u32>) {
    let (model, rho) = label.split_once(" ρ = ").unwrap();
    let parts: Vec<u32> = model
        .trim_start_matches("M/M/")
        .split('/')
        .map(|p| p.parse().unwrap())
        .collect();
    (parts[0], rho.parse().unwrap(), parts.get(1).copied())
}

#[test]
fn queueing_theory() {
    let b = named("queueing theory");
    let mut t = TableChecker::new(&b, table(&b));
    let (wq, util, block) = (t.col("W_q"), t.col("utilization"), t.col("blocking"));
    for r in 0..t.table.rows.len() {
        let (c, rho, k) = case(t.cell(r, 0));
        let (w, u, bl) = theory(c, rho, k);
        t.check(r, wq, &[Some(w)]);
        t.check(r, util, &[Some(u)]);
        if k.is_some() {
            t.check(r, block, &[Some(bl * 100.0)]);
        }
    }
    t.finish();
}

#[test]
fn queueing_scenario() {
    let b = named("queueing scenario");
    let ran = run_for(&b, "stormsim run scenarios/published/queueing-theory.yaml");
    let f = ran.by_variant("queueing-theory");
    let summary = csv_rows(&ran.folder("queueing-theory").join("summary.csv"));
    let mut t = TableChecker::new(&b, table(&b));
    let (wq, util, block) = (t.col("W_q"), t.col("utilization"), t.col("blocking"));
    for (v, c, rho, k) in [
        ("mm1-rho-0.8", 1, 0.8, None),
        ("mm8-rho-0.8", 8, 0.8, None),
        ("mm1k-k10-rho-0.9", 1, 0.9, Some(10)),
    ] {
        let r = t.row(v);
        let (w, u, bl) = theory(c, rho, k);
        t.check(
            r,
            wq,
            &[
                Some(f.mean(v, "dependency_queue_wait_mean_ms")),
                Some(f.get(v, "dependency_queue_wait_mean_ms_ci95")),
                Some(w),
            ],
        );
        t.check(
            r,
            util,
            &[Some(f.mean(v, "dependency_utilization")), Some(u)],
        );
        if k.is_some() {
            let runs: Vec<f64> = summary
                .iter()
                .filter(|s| s["variant"] == v)
                .map(|s| {
                    s["shed"].parse::<f64>().unwrap()
                        / s["logical_requests"].parse::<f64>().unwrap()
                })
                .collect();
            let mean = runs.iter().sum::<f64>() / runs.len() as f64;
            t.check(r, block, &[Some(mean * 100.0), Some(bl * 100.0)]);
        }
    }
    t.finish();
}

fn brooker(p: &str) -> shell::Figures {
    let cmd = if p == "0.5" {
        "stormsim run scenarios/published/brooker-retry-tokens.yaml".to_string()
    } else {
        format!(
            "stormsim run scenarios/published/brooker-retry-tokens.yaml --set dependency.incidents.0.rate={p}"
        )
    };
    run_ok(&cmd).by_variant("brooker-retry-tokens")
}

#[test]
fn brooker_table() {
    let b = named("brooker table");
    marked(
        &b,
        "stormsim run scenarios/published/brooker-retry-tokens.yaml --set dependency.incidents.0.rate=P",
    );
    let mut t = TableChecker::new(&b, table(&b));
    let [three, bucket, breaker, none] = [1, 2, 3, 4];
    for r in 0..t.table.rows.len() {
        let p = t.cell(r, 0).to_string();
        let f = brooker(&p);
        let pv: f64 = p.parse().unwrap();
        let success = |v: &str| f.mean(v, "success_rate") * 100.0;
        t.check(
            r,
            three,
            &[
                Some(f.mean("three-retries", "amplification")),
                Some(1.0 + pv + pv * pv + pv * pv * pv),
            ],
        );
        t.check(
            r,
            bucket,
            &[
                Some(f.mean("token-bucket", "amplification")),
                Some(success("token-bucket")),
            ],
        );
        t.check(
            r,
            breaker,
            &[
                Some(f.mean("retry-breaker", "amplification")),
                Some(success("retry-breaker")),
            ],
        );
        t.check(r, none, &[Some(success("no-retries"))]);
    }
    t.finish();
}

#[test]
fn brooker_prose() {
    let b = named("brooker prose");
    let mut c = Checker::new(&b);
    c.given(&[
        "2%",
        "+10%",
        "0.1 per call",
        "1%",
        "5%",
        "10%",
        "10%",
        "10%",
        "9%",
    ]);
    let loads: Vec<f64> = ["0.5", "0.9", "1.0"]
        .iter()
        .map(|p| brooker(p).mean("token-bucket", "amplification"))
        .collect();
    c.figure_all("1.104", &loads);
    for (shown, p) in [("100.0%", "0.01"), ("99.8%", "0.05"), ("84.7%", "0.1")] {
        let f = brooker(p);
        let s = |v: &str| f.mean(v, "success_rate");
        let kept = (s("token-bucket") - s("no-retries")) / (s("three-retries") - s("no-retries"));
        c.figure(shown, kept * 100.0);
    }
    let many = run_for(&b,
        "stormsim run scenarios/published/brooker-retry-tokens.yaml --set dependency.incidents.0.rate=0.05 --set layers.client.instances=1000 --set duration=10s --set dependency.incidents.0.end=10s",
    )
    .by_variant("brooker-retry-tokens");
    let extra = |v: &str| many.mean(v, "amplification") - 1.0;
    c.figure("0.006", extra("retry-breaker"));
    c.figure_all("0.055", &[extra("token-bucket"), extra("three-retries")]);
    c.given(&["0.01", "0.05", "0.1"]);
    c.finish();
}

#[test]
fn sre() {
    let b = named("sre");
    let mut c = Checker::new(&b);
    let f = run_for(
        &b,
        "stormsim run scenarios/published/sre-retry-budgets.yaml",
    )
    .by_variant("sre-retry-budgets");
    c.figure("3.000×", f.mean("attempt-cap-3", "amplification"));
    c.figure("1.0995×", f.mean("ratio-budget-10pct", "amplification"));
    c.given(&["10%", "1.1x", "10%", "1.1×", "10×"]);
    c.holds(
        "64 calls per request",
        f.mean("nested-4x4x4", "amplification") == 64.0,
    );
    let f = run_for(
        &b,
        "stormsim run scenarios/published/sre-adaptive-throttling.yaml",
    )
    .by_variant("sre-adaptive-throttling");
    let v = "adaptive-k2";
    c.figure(
        "1.01 requests per accepted one",
        f.mean(v, "shed") / f.mean(v, "succeeded"),
    );
    let secs = 600.0;
    c.about("about 100", f.mean(v, "dependency_attempts") / secs);
    c.about("about 50/s", f.mean(v, "succeeded") / secs);
    c.finish();
}

#[test]
fn metastable_table() {
    let b = named("metastable table");
    let ran = run_for(
        &b,
        "stormsim run scenarios/published/metastable-retry-storm.yaml",
    );
    let f = ran.by_variant("metastable-retry-storm");
    let rows = csv_rows(&ran.folder("metastable-retry-storm").join("timeseries.csv"));
    let last_minute = |v: &str, col: &str| -> f64 {
        let end = rows
            .iter()
            .map(|r| r["t_s"].parse::<f64>().unwrap())
            .fold(0.0, f64::max);
        let xs: Vec<f64> = rows
            .iter()
            .filter(|r| r["variant"] == v && r["t_s"].parse::<f64>().unwrap() > end - 60.0)
            .map(|r| r[col].parse().unwrap())
            .collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let mut t = TableChecker::new(&b, table(&b));
    let (rec, after) = (t.col("recovered"), t.col("after the trigger"));
    for v in f.variants() {
        let r = t.row(&v);
        let replicates = f.get(&v, "replicates");
        let recovered = f.get(&v, "recovered_fraction") * replicates;
        t.check(r, rec, &[Some(recovered), Some(replicates)]);
        let cell = t.cell(r, after).to_string();
        if recovered == 0.0 {
            t.check(
                r,
                after,
                &[
                    Some(last_minute(&v, "load_ratio")),
                    Some(last_minute(&v, "goodput")),
                ],
            );
        } else if cell == "at once" {
            assert_eq!(f.mean(&v, "recovery_time_s"), 0.0, "{v}");
        } else if cell.starts_with("in about ") {
            let p = figures::about(&cell);
            assert!(
                figures::within(p, f.mean(&v, "recovery_time_s")),
                "{v}: {cell}"
            );
            t.check(r, after, &[None]);
        } else {
            t.check(r, after, &[Some(f.mean(&v, "recovery_time_s"))]);
        }
    }
    t.finish();
}

#[test]
fn metastable_prose() {
    let b = named("metastable prose");
    let mut c = Checker::new(&b);
    c.given(&["4×", "4 × 0.93", "+10%", "1.1 × 0.93", "0.93"]);
    // Exponential service: P(S > 4 × mean) = e^-4.
    c.figure("1.8%", (-4f64).exp() * 100.0);
    c.finish();
}

#[test]
fn report_verdicts() {
    let b = named("report verdicts");
    let text = b.flat();
    let report = std::fs::read_to_string(
        run_for(&b, OUTAGE)
            .folder("outage-recovery")
            .join("report.html"),
    )
    .unwrap();
    let quoted = "recovered in 18 s in all 3 replicates";
    assert!(text.contains(&format!("\"{quoted}\"")));
    assert!(report.matches(quoted).count() >= 4, "{quoted}");
    let metastable = run_for(
        &b,
        "stormsim run scenarios/published/metastable-retry-storm.yaml",
    )
    .folder("metastable-retry-storm")
    .join("report.html");
    let quoted = "never recovered: metastable (in 3 of 3 replicates)";
    assert!(text.contains(&format!("\"{quoted}\"")));
    assert!(
        std::fs::read_to_string(metastable)
            .unwrap()
            .contains(quoted)
    );
}

/// The chart table names every chart a run draws, and no other.
#[test]
fn charts() {
    let b = named("charts");
    let t = table(&b);
    let documented: Vec<String> = t
        .rows
        .iter()
        .map(|r| r[0].trim_matches('`').to_string())
        .collect();
    let figures: BTreeSet<String> = inline_code(
        &t.rows[documented
            .iter()
            .position(|d| d == "sweep-<figure>-vs-<field>")
            .expect("a sweep row")][1],
    )
    .into_iter()
    .filter(|c| !c.contains(['<', '.', ' ', '-']) && !c.is_empty())
    .filter(|c| {
        c.chars()
            .all(|ch| ch.is_ascii_lowercase() || ch == '_' || ch.is_ascii_digit())
    })
    .collect();
    let known: BTreeSet<String> = stormsim::report::sweep::FIGURES
        .iter()
        .map(|(f, _, _)| f.to_string())
        .collect();
    assert_eq!(figures, known, "the sweep figures the table lists");
    let mut seen = BTreeSet::new();
    for (cmd, name) in [
        (OUTAGE, "outage-recovery"),
        (
            "stormsim run scenarios/capacity-sweep.yaml",
            "capacity-sweep",
        ),
        (
            "stormsim run scenarios/aws-jitter-blog.yaml",
            "aws-jitter-blog",
        ),
        // A chain of three layers: three services, so `services` and
        // `graph` too.
        (NESTED, "nested-layers"),
        // A sweep of two fields: its stability map.
        (STABILITY, "stability-map"),
        // Adaptive limits: the `limits` chart.
        (
            "stormsim run scenarios/adaptive-limits.yaml",
            "adaptive-limits",
        ),
    ] {
        let dir = run_ok(cmd).folder(name).join("charts");
        for e in std::fs::read_dir(dir).unwrap() {
            let file = e.unwrap().file_name().to_string_lossy().into_owned();
            let stem = file.rsplit_once('.').unwrap().0.to_string();
            let row = match stem.strip_prefix("sweep-") {
                Some(rest) => {
                    let (fig, field) = rest.split_once("-vs-").unwrap();
                    assert!(figures.contains(fig), "{file}: figure {fig} not listed");
                    if field == "variant" {
                        "sweep-<figure>-vs-variant".to_string()
                    } else {
                        "sweep-<figure>-vs-<field>".to_string()
                    }
                }
                None if stem.starts_with("stability-") => {
                    let rest = stem.trim_start_matches("stability-");
                    let fig = stormsim::report::stability::MAP_FIGURES
                        .iter()
                        .find(|(f, _)| rest.starts_with(&format!("{f}-")))
                        .unwrap_or_else(|| panic!("{file}: an unknown figure"));
                    assert!(rest[fig.0.len()..].contains("-x-"), "{file}");
                    "stability-<figure>-<fieldA>-x-<fieldB>".to_string()
                }
                None => stem,
            };
            assert!(
                documented.contains(&row),
                "{file} is not in the chart table"
            );
            seen.insert(row);
        }
    }
    for d in &documented {
        assert!(seen.contains(d), "the table lists {d}, which no run drew");
    }
}

const NESTED: &str = "stormsim run scenarios/nested-layers.yaml";

/// The labels the README quotes from nested-layers' graph picture are the
/// picture's: the variant, each arrow's amplification and the
/// dependency's box (red: above its capacity).
#[test]
fn graph_picture() {
    let b = named("graph picture");
    let text = b.flat();
    let svg = std::fs::read_to_string(
        run_for(&b, NESTED)
            .folder("nested-layers")
            .join("charts/graph.svg"),
    )
    .unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let labels: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_string())
        .collect();
    assert!(text.contains("variant `three-layers`"));
    assert!(
        labels.iter().any(|l| l.contains("Variant three-layers")),
        "{labels:?}"
    );
    // The arrows, in the order the text gives them (along the chain).
    let quoted: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.ends_with('×') && w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(quoted, ["1.50×", "3.49×", "11.4×", "10.8×"]);
    let arrows: Vec<&String> = labels
        .iter()
        .filter(|l| l.ends_with('×') && !l.contains(' '))
        .collect();
    assert_eq!(arrows, ["1.50×", "3.49×", "11.4×"]);
    let box_text = "peak 10.8× of 3200/s";
    assert!(text.contains(&format!("\"{box_text}\"")));
    assert!(labels.iter().any(|l| l == box_text), "{labels:?}");
    // Red: the fill of a box above its capacity.
    assert!(svg.contains("fill=\"#FC9272\""));
}

/// The columns a table documents (`attempts_<layer>`, `failed_<reason>`,
/// `sweep.<path>` as patterns) are exactly those the runs write.
fn documented_columns(block: &Block) -> Vec<String> {
    table(block)
        .rows
        .iter()
        .flat_map(|r| inline_code(&r[0]))
        .collect()
}

fn column_matches(pattern: &str, column: &str, layers: &[&str]) -> bool {
    if let Some((head, tail)) = pattern.split_once('<') {
        let (_, after) = tail.split_once('>').unwrap();
        let Some(middle) = column
            .strip_prefix(head)
            .and_then(|c| c.strip_suffix(after))
        else {
            return false;
        };
        match &tail[..tail.find('>').unwrap()] {
            "layer" => layers.contains(&middle),
            "reason" => stormsim::metrics::Reason::ALL
                .iter()
                .any(|r| r.name() == middle),
            "path" => !middle.is_empty(),
            other => panic!("unknown pattern <{other}>"),
        }
    } else {
        pattern == column
    }
}

fn columns_are_documented(name: &str, file: &str) {
    let b = named(name);
    let documented = documented_columns(&b);
    let runs = [
        (OUTAGE, "outage-recovery", vec!["api"]),
        (
            "stormsim run scenarios/capacity-sweep.yaml",
            "capacity-sweep",
            vec!["api"],
        ),
        (
            "stormsim run scenarios/queue-consumer-dlq.yaml",
            "queue-consumer-dlq",
            vec!["handler"],
        ),
        (
            "stormsim run scenarios/nested-layers.yaml",
            "nested-layers",
            vec!["edge", "api", "storage"],
        ),
        (
            "stormsim run scenarios/slo-gate.yaml",
            "slo-gate",
            vec!["api"],
        ),
    ];
    let mut used = BTreeSet::new();
    let mut problems = Vec::new();
    for (cmd, scenario, layers) in &runs {
        let header = csv_header(&run_ok(cmd).folder(scenario).join(file));
        for col in &header {
            match documented.iter().find(|p| column_matches(p, col, layers)) {
                Some(p) => {
                    used.insert(p.clone());
                }
                None => problems.push(format!(
                    "{scenario}/{file}: column `{col}` is not documented"
                )),
            }
        }
    }
    for d in &documented {
        if !used.contains(d) {
            problems.push(format!("`{d}` is documented but no run writes it"));
        }
    }
    assert!(problems.is_empty(), "{}:\n{}", b.at(), problems.join("\n"));
}

#[test]
fn timeseries_columns() {
    columns_are_documented("timeseries columns", "timeseries.csv");
}

#[test]
fn summary_columns() {
    columns_are_documented("summary columns", "summary.csv");
}

#[test]
fn commands_table() {
    let b = named("commands table");
    let t = table(&b);
    let listed: BTreeSet<String> = t
        .rows
        .iter()
        .map(|r| {
            r[0].trim_matches('`')
                .split_whitespace()
                .nth(1)
                .unwrap()
                .to_string()
        })
        .collect();
    let subs: BTreeSet<String> = subcommands().into_iter().collect();
    assert_eq!(listed, subs, "{}", b.at());
}

/// The options paragraph lists every option of `run`, and those of the
/// other commands in their "`X` takes ..." clause.
#[test]
fn run_options() {
    let b = named("run options");
    let text = b.flat();
    let mut problems = Vec::new();
    let mut clauses: HashMap<&str, &str> = HashMap::new();
    for sub in ["validate", "merge", "plot", "check"] {
        let marker = format!("`{sub}` takes");
        let Some(at) = text.find(&marker) else {
            problems.push(format!("no \"{marker}\""));
            continue;
        };
        let rest = &text[at + marker.len()..];
        let end = rest.find(['.', ';']).unwrap_or(rest.len());
        clauses.insert(sub, &rest[..end]);
    }
    for sub in ["run", "validate", "merge", "plot", "check"] {
        let scope = clauses.get(sub).copied().unwrap_or(&text);
        for o in options_of(&[sub]) {
            let listed = scope.contains(&format!("`--{o}`")) || scope.contains(&format!("`--{o} "));
            if o != "help" && !listed {
                problems.push(format!("`{sub} --{o}` is not listed"));
            }
        }
    }
    assert!(problems.is_empty(), "{}:\n{}", b.at(), problems.join("\n"));
}

/// The Rust the README asks for is `Cargo.toml`'s `rust-version`, which is
/// at least what every dependency declares.
#[test]
fn rust_version() {
    let b = named("rust version");
    let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let declared = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"')
        .to_string();
    assert!(
        b.flat().contains(&format!("Rust {declared} or newer")),
        "{}",
        b.at()
    );
    assert!(cargo.contains("edition = \"2024\"") && b.flat().contains("2024 edition"));
    let install = blocks()
        .into_iter()
        .find(|x| x.lang.as_deref() == Some("sh") && x.text.contains("rustc --version"))
        .unwrap();
    assert!(
        install.text.contains(&format!("# {declared}.0 or newer")),
        "{}",
        install.at()
    );
    let version = |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap()).collect() };
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let meta = std::process::Command::new(cargo_bin)
        .args(["metadata", "--format-version", "1", "--offline", "--locked"])
        .current_dir(repo())
        .output();
    let Ok(meta) = meta.map(|m| m.stdout) else {
        eprintln!("cargo metadata unavailable: dependencies not checked");
        return;
    };
    let Ok(meta) = serde_json::from_slice::<serde_json::Value>(&meta) else {
        eprintln!("cargo metadata unavailable: dependencies not checked");
        return;
    };
    let mut needs = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        if let Some(v) = p["rust_version"].as_str()
            && version(v) > version(&declared)
        {
            needs.push(format!("{} {} needs Rust {v}", p["name"], p["version"]));
        }
    }
    assert!(
        needs.is_empty(),
        "rust-version {declared} is too low: {needs:?}"
    );
}

#[test]
fn fuzz_corpus() {
    let b = named("fuzz corpus");
    let mut c = Checker::new(&b);
    c.given(&["2.8"]);
    let count = |d: &str| std::fs::read_dir(repo().join(d)).unwrap().count() as f64;
    c.holds(
        "1 826 scenario inputs",
        b.flat().contains("1 826 scenario inputs") && count("fuzz/regressions/scenario") == 1826.0,
    );
    c.holds(
        "720 value inputs",
        b.flat().contains("720 value inputs") && count("fuzz/regressions/sets") == 720.0,
    );
    c.finish();
}

/// Every path the layout names exists: each entry's folder or file, and
/// every file (`name.rs`) or folder (`name/`) its description names, in
/// that folder or from the repository's root.
#[test]
fn layout() {
    let b = named("layout");
    let (mut n, mut named_inside) = (0, 0);
    let mut folder = String::new();
    for line in b.text.lines() {
        let words = if line.starts_with(' ') {
            line
        } else {
            let path = line.split_whitespace().next().unwrap();
            assert!(
                repo().join(path).exists(),
                "{}: {path} does not exist",
                b.at()
            );
            folder = path.to_string();
            n += 1;
            &line[path.len()..]
        };
        let names = words
            .split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
            .map(|w| w.trim_end_matches('.'))
            .filter(|w| w.ends_with(".rs") || (w.ends_with('/') && w.len() > 1));
        for name in names {
            let inside = repo().join(&folder).join(name);
            assert!(
                inside.exists() || repo().join(name).exists() || tracked(name),
                "{}: the entry {folder} names {name}, which exists neither there nor at the root",
                b.at()
            );
            named_inside += 1;
        }
    }
    assert!(n > 10);
    assert!(
        named_inside > 10,
        "{named_inside} names inside descriptions"
    );
}

/// Whether git tracks `path` (a file, or a folder with a tracked file:
/// `output/` holds only its `.gitkeep` until a command writes into it,
/// and another test's command may be writing it at the moment).
fn tracked(path: &str) -> bool {
    std::process::Command::new("git")
        .args(["ls-files", "--", path])
        .current_dir(repo())
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// The exit codes the README lists are the ones the binary's interrupt
/// handling and CLI use.
#[test]
fn exit_codes() {
    let b = named("exit codes");
    let text = b.flat();
    assert_eq!(stormsim::interrupt::EXIT_CODE, 130);
    for code in [
        "0 success",
        "1 the run failed",
        "2 bad input",
        "130 stopped by Ctrl-C or SIGTERM",
    ] {
        assert!(text.contains(code), "{}: no {code:?}", b.at());
    }
    // Bad input and a refused folder: 2.
    let ran = run("stormsim validate docs/examples/bad.yaml");
    assert_eq!(ran.code, 2);
}

/// The preset table lists every preset `stormsim presets` knows, and each
/// row's attempts are the preset's.
#[test]
fn presets_table() {
    let b = named("presets table");
    let t = table(&b);
    let listed: Vec<String> = t
        .rows
        .iter()
        .map(|r| r[0].trim_matches('`').to_string())
        .collect();
    let known: Vec<String> = stormsim::scenario::presets::PRESETS
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(
        listed.iter().collect::<BTreeSet<_>>(),
        known.iter().collect::<BTreeSet<_>>(),
        "{}",
        b.at()
    );
    let attempts = t.header.iter().position(|h| h == "attempts").unwrap();
    let mut problems = Vec::new();
    for r in &t.rows {
        let name = r[0].trim_matches('`');
        let p = stormsim::scenario::presets::find(name).unwrap();
        let yaml: HashMap<String, String> = p
            .yaml
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.trim().split_once(": "))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let shown = figures::printed(&r[attempts]).unwrap().value;
        let actual: f64 = yaml
            .get("max_attempts")
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no max_attempts"));
        if shown != actual {
            problems.push(format!(
                "{name}: {shown} attempts shown, {actual} in the preset"
            ));
        }
    }
    assert!(problems.is_empty(), "{}:\n{}", b.at(), problems.join("\n"));
}

// ---------------------------------------------------------------------
// The services graph scenarios

/// A run's per-service time series, averaged over replicates and the
/// buckets from `from` to `to` (seconds, `to` excluded).
struct ServiceSeries {
    rows: Vec<HashMap<String, String>>,
}

impl ServiceSeries {
    fn of(ran: &shell::Ran, name: &str) -> ServiceSeries {
        ServiceSeries {
            rows: csv_rows(&ran.folder(name).join("services_timeseries.csv")),
        }
    }

    fn in_window<'a>(
        &'a self,
        variant: &'a str,
        service: &'a str,
        (from, to): (f64, f64),
    ) -> impl Iterator<Item = &'a HashMap<String, String>> + 'a {
        self.rows.iter().filter(move |r| {
            let t: f64 = r["t_s"].parse().unwrap();
            r["variant"] == variant && r["service"] == service && from <= t && t < to
        })
    }

    /// The mean of `col` (an empty cell is 0).
    fn mean(&self, variant: &str, service: &str, col: &str, window: (f64, f64)) -> f64 {
        let v: Vec<f64> = self
            .in_window(variant, service, window)
            .map(|r| r[col].parse().unwrap_or(0.0))
            .collect();
        assert!(!v.is_empty(), "no rows for {variant}/{service}");
        v.iter().sum::<f64>() / v.len() as f64
    }

    /// The bucket where `col` peaks, in every replicate.
    fn peaks_at(&self, variant: &str, service: &str, col: &str) -> Vec<f64> {
        let mut reps: Vec<&str> = self.rows.iter().map(|r| r["replicate"].as_str()).collect();
        reps.sort();
        reps.dedup();
        reps.iter()
            .map(|rep| {
                self.rows
                    .iter()
                    .filter(|r| {
                        r["variant"] == variant && r["service"] == service && r["replicate"] == *rep
                    })
                    .max_by(|a, b| {
                        let x: f64 = a[col].parse().unwrap();
                        x.total_cmp(&b[col].parse().unwrap())
                    })
                    .map(|r| r["t_s"].parse().unwrap())
                    .unwrap()
            })
            .collect()
    }
}

/// `services.csv`'s `col` of `service`, the mean over replicates.
fn service_total(ran: &shell::Ran, name: &str, variant: &str, service: &str, col: &str) -> f64 {
    let v: Vec<f64> = csv_rows(&ran.folder(name).join("services.csv"))
        .iter()
        .filter(|r| r["variant"] == variant && r["service"] == service)
        .map(|r| r[col].parse().unwrap())
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

/// The share of logical requests that succeeded among those that ended in
/// the buckets of `window`, over all replicates.
fn success_in(ran: &shell::Ran, name: &str, variant: &str, (from, to): (f64, f64)) -> f64 {
    let (mut ok, mut all) = (0.0, 0.0);
    for r in csv_rows(&ran.folder(name).join("timeseries.csv")) {
        let t: f64 = r["t_s"].parse().unwrap();
        if r["variant"] == variant && from <= t && t < to {
            let s: f64 = r["succeeded"].parse().unwrap();
            ok += s;
            all += s + r["failed"].parse::<f64>().unwrap();
        }
    }
    ok / all
}

const RECONNECT_STORM: &str = "stormsim run scenarios/reconnect-storm.yaml";

#[test]
fn reconnect_storm_table() {
    let b = named("reconnect-storm table");
    let ran = run_for(&b, RECONNECT_STORM);
    let f = ran.by_variant("reconnect-storm");
    let calls = csv_rows(&ran.folder("reconnect-storm").join("calls.csv"));
    let connects = |v: &str| -> f64 {
        let xs: Vec<f64> = (calls.iter())
            .filter(|r| r["variant"] == v && r["call"] == "app.db")
            .map(|r| r["connects"].parse().unwrap())
            .collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let mut t = TableChecker::new(&b, table(&b));
    let cols = (
        t.col("peak load after the restart"),
        t.col("success rate"),
        t.col("connects per run"),
    );
    assert_eq!(t.table.rows.len(), f.variants().len());
    for v in f.variants() {
        let r = t.row(&v);
        t.check(r, cols.0, &[Some(f.mean(&v, "peak_load_ratio_after"))]);
        t.check(r, cols.1, &[Some(f.mean(&v, "success_rate") * 100.0)]);
        t.check(r, cols.2, &[Some(connects(&v))]);
    }
    t.finish();
}

const THREE_TIER: &str = "stormsim run scenarios/three-tier.yaml";
const FAILOVER: (f64, f64) = (120.0, 180.0);
const BEFORE_FAILOVER: (f64, f64) = (60.0, 120.0);

#[test]
fn three_tier_table() {
    let b = named("three-tier table");
    let ran = run_for(&b, THREE_TIER);
    let f = ran.by_variant("three-tier");
    let ts = ServiceSeries::of(ran, "three-tier");
    let mut t = TableChecker::new(&b, table(&b));
    let cols = (
        t.col("success rate"),
        t.col("gateway threads busy, failover"),
        t.col("queries at Postgres, failover ÷ before"),
        t.col("peak load ÷ capacity, Postgres"),
    );
    assert_eq!(t.table.rows.len(), f.variants().len());
    for v in f.variants() {
        let r = t.row(&v);
        t.check(r, cols.0, &[Some(f.mean(&v, "success_rate") * 100.0)]);
        let busy = ts.mean(&v, "gateway", "utilization", FAILOVER);
        t.check(r, cols.1, &[Some(busy * 100.0)]);
        let queries = ts.mean(&v, "postgres", "attempts", FAILOVER)
            / ts.mean(&v, "postgres", "attempts", BEFORE_FAILOVER);
        t.check(r, cols.2, &[Some(queries)]);
        t.check(r, cols.3, &[Some(f.mean(&v, "peak_load_ratio"))]);
    }
    t.finish();
}

#[test]
fn three_tier_prose() {
    let b = named("three-tier prose");
    let ran = run_for(&b, THREE_TIER);
    let f = ran.by_variant("three-tier");
    let ts = ServiceSeries::of(ran, "three-tier");
    let mut c = Checker::new(&b);
    let all = "retries-everywhere";
    c.holds(
        "the gateway's queue fills within three seconds and stays full",
        ts.in_window(all, "gateway", (123.0, 180.0))
            .all(|r| r["queue_depth"].parse::<f64>().unwrap() >= 290.0),
    );
    c.about(
        "about 61 000",
        service_total(ran, "three-tier", all, "gateway", "shed"),
    );
    c.figure(
        "92.5%",
        success_in(ran, "three-tier", all, FAILOVER) * 100.0,
    );
    let others: Vec<f64> = ["db-only", "edge-only-budget", "budgets-everywhere"]
        .iter()
        .map(|v| success_in(ran, "three-tier", v, FAILOVER) * 100.0)
        .collect();
    c.figure_all("100.0%", &others);
    c.figure(
        "41.2%",
        ts.mean(all, "orders", "utilization", FAILOVER) * 100.0,
    );
    c.figure(
        "79.4%",
        ts.mean(all, "inventory", "utilization", FAILOVER) * 100.0,
    );
    c.about(
        "about 24 800",
        ts.mean(all, "postgres", "attempts", FAILOVER),
    );
    c.figure("4.70", f.mean(all, "peak_load_ratio"));
    c.holds(
        "retrying only at the edge: nothing is retried, Postgres gets what the pages ask",
        f.mean("edge-only-budget", "retries") == 0.0
            && (f.mean("edge-only-budget", "amplification") - 2.0).abs() < 1e-3,
    );
    c.holds(
        "retrying only the queries: the gateway below saturation, 3 times the load",
        ts.mean("db-only", "gateway", "utilization", FAILOVER) < 0.5
            && (ts.mean("db-only", "postgres", "attempts", FAILOVER)
                / ts.mean("db-only", "postgres", "attempts", BEFORE_FAILOVER)
                - 3.0)
                .abs()
                < 0.1,
    );
    c.figure("2.60", f.mean("budgets-everywhere", "peak_load_ratio"));
    c.holds(
        "budgets everywhere: the peak is the failover's first second",
        ts.peaks_at("budgets-everywhere", "postgres", "load_ratio")
            .iter()
            .all(|&t| t == 120.0),
    );
    c.finish();
}

const SLOW_DB: &str = "stormsim run scenarios/slow-db.yaml";
const SLOW: (f64, f64) = (120.0, 240.0);

#[test]
fn slow_db_table() {
    let b = named("slow-db table");
    let ran = run_for(&b, SLOW_DB);
    let f = ran.by_variant("slow-db");
    let ts = ServiceSeries::of(ran, "slow-db");
    let mut t = TableChecker::new(&b, table(&b));
    let cols = (
        t.col("success rate"),
        t.col("success during the incident"),
        t.col("web threads busy"),
        t.col("API threads busy"),
        t.col("Postgres busy"),
    );
    assert_eq!(t.table.rows.len(), f.variants().len());
    for v in f.variants() {
        let r = t.row(&v);
        t.check(r, cols.0, &[Some(f.mean(&v, "success_rate") * 100.0)]);
        t.check(
            r,
            cols.1,
            &[Some(success_in(ran, "slow-db", &v, SLOW) * 100.0)],
        );
        for (col, svc) in [(cols.2, "web"), (cols.3, "api"), (cols.4, "postgres")] {
            t.check(
                r,
                col,
                &[Some(ts.mean(&v, svc, "utilization", SLOW) * 100.0)],
            );
        }
    }
    t.finish();
}

#[test]
fn slow_db_prose() {
    let b = named("slow-db prose");
    let ran = run_for(&b, SLOW_DB);
    let ts = ServiceSeries::of(ran, "slow-db");
    let mut c = Checker::new(&b);
    let base = "as-deployed";
    c.given(&["0.51"]);
    c.holds(
        "both pools stay full for the two minutes",
        ["web", "api"].iter().all(|s| {
            ts.in_window(base, s, (125.0, 240.0))
                .all(|r| r["utilization"].parse::<f64>().unwrap() > 0.95)
        }),
    );
    c.about(
        "about 141 000",
        service_total(ran, "slow-db", base, "web", "shed"),
    );
    c.figure(
        "18.8%",
        ts.mean(base, "postgres", "utilization", (60.0, 120.0)) * 100.0,
    );
    c.figure(
        "14.6%",
        ts.mean(base, "postgres", "utilization", SLOW) * 100.0,
    );
    c.holds(
        "the database is sent fewer queries than before",
        ts.mean(base, "postgres", "attempts", SLOW)
            < ts.mean(base, "postgres", "attempts", (60.0, 120.0)),
    );
    c.holds(
        "a 100 ms query timeout: no request succeeds during the incident",
        success_in(ran, "slow-db", "query-timeout", SLOW) == 0.0,
    );
    c.figure(
        "56.2%",
        ts.mean("query-timeout", "postgres", "utilization", SLOW) * 100.0,
    );
    c.figure(
        "64.0%",
        ts.mean("double-threads", "web", "utilization", SLOW) * 100.0,
    );
    let p50: Vec<f64> = csv_rows(&ran.folder("slow-db").join("timeseries.csv"))
        .iter()
        .filter(|r| {
            let t: f64 = r["t_s"].parse().unwrap();
            r["variant"] == "async" && (125.0..240.0).contains(&t)
        })
        .map(|r| r["latency_p50_ms"].parse().unwrap())
        .collect();
    c.holds(
        "without held threads every request is served, half a second slower",
        p50.iter().all(|&ms| (500.0..600.0).contains(&ms)),
    );
    c.finish();
}

const STABILITY: &str = "stormsim run scenarios/stability-map.yaml";

/// The stability map's paragraph: its inputs, and the fractions of
/// replicates that recovered, as `summary_by_variant.csv` has them.
#[test]
fn stability_map() {
    let b = named("stability map");
    let f = run_for(&b, STABILITY).by_variant("stability-map");
    let mut c = Checker::new(&b);
    let rec =
        |rate: &str, len: &str| f.get(&format!("rate={rate}/s for={len}"), "recovered_fraction");
    c.given(&["104.5", "93%"]);
    let rates = ["100", "150", "300", "450", "570"];
    let lens = ["100ms", "200ms", "300ms", "400ms", "800ms"];
    c.holds(
        "at 100/s and 150/s every replicate recovers from every spike",
        ["100", "150"]
            .iter()
            .all(|r| lens.iter().all(|l| rec(r, l) == 1.0)),
    );
    c.figure("33%", rec("300", "300ms") * 100.0);
    c.holds(
        "at 300/s a 300 ms spike leaves two replicates of three down",
        (rec("300", "300ms") - 1.0 / 3.0).abs() < 1e-6,
    );
    c.figure("0%", rec("300", "400ms") * 100.0);
    c.holds(
        "at 570/s a 200 ms spike leaves two of three down",
        (rec("570", "200ms") - 1.0 / 3.0).abs() < 1e-6,
    );
    c.holds(
        "a staircase: longer spikes and higher loads never recover more often",
        rates.iter().enumerate().all(|(i, r)| {
            lens.iter().enumerate().all(|(j, l)| {
                (i == 0 || rec(rates[i - 1], l) >= rec(r, l))
                    && (j == 0 || rec(r, lens[j - 1]) >= rec(r, l))
            })
        }),
    );
    c.finish();
}

const ONE_BAD_REPLICA: &str = "stormsim run scenarios/one-bad-replica.yaml";
const BAD_DEPLOY: (f64, f64) = (20.0, 100.0);

#[test]
fn one_bad_replica_table() {
    let b = named("one-bad-replica table");
    let ran = run_for(&b, ONE_BAD_REPLICA);
    let f = ran.by_variant("one-bad-replica");
    let mut t = TableChecker::new(&b, table(&b));
    let cols = (
        t.col("success rate"),
        t.col("success during the bad deploy"),
        t.col("amplification"),
    );
    assert_eq!(t.table.rows.len(), f.variants().len());
    for v in f.variants() {
        let r = t.row(&v);
        t.check(r, cols.0, &[Some(f.mean(&v, "success_rate") * 100.0)]);
        t.check(
            r,
            cols.1,
            &[Some(
                success_in(ran, "one-bad-replica", &v, BAD_DEPLOY) * 100.0,
            )],
        );
        t.check(r, cols.2, &[Some(f.mean(&v, "amplification"))]);
    }
    t.finish();
}

#[test]
fn one_bad_replica_prose() {
    let b = named("one-bad-replica prose");
    let ran = run_for(&b, ONE_BAD_REPLICA);
    let f = ran.by_variant("one-bad-replica");
    let mut c = Checker::new(&b);
    c.given(&["1.6%"]);
    let random = 1.0 - success_in(ran, "one-bad-replica", "random", BAD_DEPLOY);
    c.holds(
        "about (1/4)³ of the requests fail with random",
        (random - 1.0 / 64.0).abs() < 0.004,
    );
    c.figure(
        "82.1%",
        (1.0 - success_in(ran, "one-bad-replica", "least-requests", BAD_DEPLOY)) * 100.0,
    );
    c.figure(
        "1.67",
        f.mean("least-requests-retry-other", "amplification"),
    );
    c.holds(
        "nearly no attempt is wasted with ejection",
        f.mean("least-requests-ejection", "amplification") < 1.001,
    );
    c.finish();
}
