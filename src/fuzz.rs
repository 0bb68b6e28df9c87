//! What stormsim does with bytes it did not write: the body of the fuzz
//! targets (`fuzz/fuzz_targets/scenario.rs` calls `exercise`,
//! `fuzz/fuzz_targets/sets.rs` calls `exercise_sets`), kept in the library
//! so that the regression tests (`tests/it/fuzz_regressions.rs`) replay the
//! fuzz corpora on stable Rust, without cargo-fuzz.
//!
//! `exercise` loads the bytes as a scenario file, exactly as `stormsim
//! run` would; `exercise_sets` applies `--set` overrides spelled by the
//! bytes to a bundled scenario. A refusal is fine (that is the point of most inputs); what
//! it must never do is panic, hang or exhaust memory. When the scenario
//! loads, it goes through everything `run` does with it, briefly, under
//! tight guard rails: `stormsim check`, the resolved scenario (which must
//! load back to itself), a few of its runs, their invariants (a violation
//! is a bug, so it panics here) and the tables.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::Value;

use crate::runner::{self, RunResult};
use crate::scenario::{self, Scenario, ScenarioErrors};

/// The guard rails of a fuzzed run: small enough that thousands of inputs
/// run per minute, large enough to get through incidents and retries.
#[derive(Clone, Copy, Debug)]
pub struct FuzzLimits {
    /// Events per run (the scenario's `limits.max_events`, if lower).
    pub max_events: u64,
    /// Calls and dependency requests in flight (likewise).
    pub max_in_flight: u64,
    /// Runs simulated: the first variants, replicate 0 only.
    pub max_runs: usize,
    /// Draw the charts and the report too (slow: off for the fuzzers, on
    /// for the replayed corpus).
    pub charts: bool,
}

impl Default for FuzzLimits {
    fn default() -> Self {
        FuzzLimits {
            max_events: 20_000,
            max_in_flight: 2_000,
            max_runs: 3,
            charts: false,
        }
    }
}

/// What became of one input.
#[derive(Debug)]
pub enum Exercised {
    /// Refused with these errors (as `stormsim validate` prints them).
    Refused(String),
    /// Loaded; these runs were simulated.
    Ran(Vec<RunResult>),
}

/// Loads `bytes` as a scenario file and, when it loads, checks, resolves,
/// simulates and tabulates it under `limits`. Panics only on a bug in
/// stormsim: that is what the fuzzer looks for.
pub fn exercise(bytes: &[u8], limits: FuzzLimits) -> Exercised {
    match scenario::load_bytes(bytes, LABEL) {
        Ok(s) => exercise_scenario(&s, limits),
        Err(e) => refused(&e),
    }
}

/// A bundled scenario with `--set` overrides decoded from `bytes` (see
/// [`decode_sets`]), applied as the command line applies them, then
/// exercised like [`exercise`]. Where [`exercise`] mostly explores the
/// YAML grammar, this explores values: every field of real scenarios set
/// to zero, huge, negative, NaN, the wrong unit or the wrong type.
pub fn exercise_sets(bytes: &[u8], limits: FuzzLimits) -> Exercised {
    let (base, sets) = decode_sets(bytes);
    let mut parsed = Vec::with_capacity(sets.len());
    for arg in &sets {
        match scenario::parse_set_arg(arg) {
            Ok(set) => parsed.push(set),
            Err(e) => return refused(&ScenarioErrors::from(e)),
        }
    }
    let (label, text) = BASES[base];
    match scenario::load_str_with(text, label, &parsed) {
        Ok(loaded) => exercise_scenario(&loaded.scenario, limits),
        Err(e) => refused(&e),
    }
}

/// The command line that [`exercise_sets`] runs for `bytes`, to reproduce
/// a finding with `stormsim run`.
pub fn describe_sets(bytes: &[u8]) -> String {
    let (base, sets) = decode_sets(bytes);
    let mut line = format!("stormsim run {}", BASES[base].0);
    for arg in sets {
        line.push_str(&format!(" --set '{arg}'"));
    }
    line
}

const LABEL: &str = "fuzz.yaml";

/// The scenarios the value fuzzer starts from.
const BASES: &[(&str, &str)] = &[
    (
        "scenarios/quickstart.yaml",
        include_str!("../scenarios/quickstart.yaml"),
    ),
    (
        "scenarios/outage-recovery.yaml",
        include_str!("../scenarios/outage-recovery.yaml"),
    ),
    (
        "scenarios/retry-budgets.yaml",
        include_str!("../scenarios/retry-budgets.yaml"),
    ),
    (
        "scenarios/nested-layers.yaml",
        include_str!("../scenarios/nested-layers.yaml"),
    ),
    (
        "scenarios/payments-idempotency.yaml",
        include_str!("../scenarios/payments-idempotency.yaml"),
    ),
    (
        "scenarios/orphaned-work.yaml",
        include_str!("../scenarios/orphaned-work.yaml"),
    ),
    (
        "scenarios/queue-consumer-dlq.yaml",
        include_str!("../scenarios/queue-consumer-dlq.yaml"),
    ),
    (
        "scenarios/aws-jitter-blog.yaml",
        include_str!("../scenarios/aws-jitter-blog.yaml"),
    ),
    (
        "scenarios/capacity-sweep.yaml",
        include_str!("../scenarios/capacity-sweep.yaml"),
    ),
    (
        "scenarios/published/metastable-retry-storm.yaml",
        include_str!("../scenarios/published/metastable-retry-storm.yaml"),
    ),
    (
        "scenarios/published/sre-adaptive-throttling.yaml",
        include_str!("../scenarios/published/sre-adaptive-throttling.yaml"),
    ),
];

/// A bundled scenario, loaded, with every path of it.
type Base = (Scenario, Vec<(String, Kind)>);

/// The bundled scenarios, loaded, each with its paths.
fn bases() -> &'static [Base] {
    static BASES_LOADED: OnceLock<Vec<Base>> = OnceLock::new();
    BASES_LOADED.get_or_init(|| {
        BASES
            .iter()
            .map(|(name, text)| {
                let s = match scenario::load_str(text, name) {
                    Ok(s) => s,
                    Err(e) => panic!("bundled scenario {name} does not load: {e}"),
                };
                let mut all = Vec::new();
                if let Ok(v) = serde_json::to_value(&s) {
                    paths(&v, "", &mut all);
                }
                (s, all)
            })
            .collect()
    })
}

/// Field names and enum values of the scenario format, from its schema.
fn words() -> &'static [String] {
    static WORDS: OnceLock<Vec<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut words = BTreeSet::new();
        collect_words(&scenario::schema::scenario_schema(), &mut words);
        words.into_iter().collect()
    })
}

fn collect_words(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            for key in ["enum", "const"] {
                match map.get(key) {
                    Some(Value::Array(items)) => {
                        out.extend(items.iter().filter_map(|i| i.as_str().map(String::from)))
                    }
                    Some(Value::String(word)) => {
                        out.insert(word.clone());
                    }
                    _ => {}
                }
            }
            map.values().for_each(|v| collect_words(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_words(v, out)),
        _ => {}
    }
}

/// What a field holds, so that most values tried for it are of its kind
/// (a duration for a duration) and get past the type check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Duration,
    Rate,
    Word,
    Other,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Number(n) if n.is_u64() || n.is_i64() => Kind::Int,
        Value::Number(_) => Kind::Float,
        Value::String(t) if t.contains('/') => Kind::Rate,
        Value::String(t) if t.starts_with(|c: char| c.is_ascii_digit()) => Kind::Duration,
        Value::String(_) => Kind::Word,
        _ => Kind::Other,
    }
}

/// Every dotted path of `v` with the kind of its value: leaves and the
/// mappings and lists above them (list items by index, as `--set
/// layers.0.timeout=...` takes them).
fn paths(v: &Value, prefix: &str, out: &mut Vec<(String, Kind)>) {
    let join = |seg: &str| {
        if prefix.is_empty() {
            seg.to_string()
        } else {
            format!("{prefix}.{seg}")
        }
    };
    let children: Vec<(String, &Value)> = match v {
        Value::Object(map) => map.iter().map(|(k, v)| (join(k), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (join(&i.to_string()), v))
            .collect(),
        _ => return,
    };
    for (p, v) in children {
        out.push((p.clone(), kind_of(v)));
        paths(v, &p, out);
    }
}

/// The bundled scenario's index and the `--set PATH=VALUE` arguments that
/// `bytes` spell: a byte picks the base, then each group of bytes one
/// path (an existing one, or a schema word below an existing mapping) and
/// one value, mostly of the field's kind (a small, round or huge number,
/// NaN, a duration or rate in some unit, a word of the format, a list,
/// `null`).
pub fn decode_sets(bytes: &[u8]) -> (usize, Vec<String>) {
    let mut b = Cursor(bytes);
    let base = b.byte() as usize % BASES.len();
    let all = &bases()[base].1;
    let words = words();
    let mut sets = Vec::new();
    let count = 1 + b.byte() % 3;
    for _ in 0..count {
        if b.is_empty() || all.is_empty() {
            break;
        }
        let (mut path, mut kind) = all[b.u16() as usize % all.len()].clone();
        if b.byte() % 8 == 0 {
            path = format!("{path}.{}", words[b.u16() as usize % words.len()]);
            kind = Kind::Other;
        }
        if b.byte() % 4 == 0 {
            kind = Kind::Other;
        }
        let value = decode_value(&mut b, kind, words);
        sets.push(format!("{path}={value}"));
    }
    (base, sets)
}

fn decode_value(b: &mut Cursor, kind: Kind, words: &[String]) -> String {
    const UNITS: [&str; 9] = ["ns", "us", "ms", "s", "m", "h", "d", "", "x"];
    let choice = match kind {
        Kind::Int => [0, 1, 2, 0][b.byte() as usize % 4],
        Kind::Float => [3, 4, 4, 0][b.byte() as usize % 4],
        Kind::Duration => 5,
        Kind::Rate => 6,
        Kind::Word => [7, 7, 8][b.byte() as usize % 3],
        Kind::Other => b.byte() % 11,
    };
    match choice {
        0 => (b.byte() as i64 - 16).to_string(),
        1 => match b.byte() % 3 {
            0 => b.u64().to_string(),
            1 => 10u64.pow(b.byte() as u32 % 20).to_string(),
            _ => (1u64 << (b.byte() % 64)).to_string(),
        },
        2 => format!("-{}", b.u64()),
        3 => match f64::from_bits(b.u64()) {
            x if x.is_nan() => ".nan".into(),
            x if x.is_infinite() => if x > 0.0 { ".inf" } else { "-.inf" }.into(),
            x => format!("{x:e}"),
        },
        4 => format!("{}.{}", b.byte() % 4, b.byte()),
        5 => format!(
            "{}{}",
            b.u32() >> (b.byte() % 32),
            UNITS[b.byte() as usize % UNITS.len()]
        ),
        6 => format!(
            "{}/{}",
            b.u32() >> (b.byte() % 32),
            ["s", "m", "h", "ms", "x"][b.byte() as usize % 5]
        ),
        7 => words[b.u16() as usize % words.len()].clone(),
        8 => {
            let n = b.byte() % 4;
            let items: Vec<String> = (0..n)
                .map(|_| words[b.u16() as usize % words.len()].clone())
                .collect();
            format!("[{}]", items.join(", "))
        }
        9 => "null".into(),
        _ => ["true", "false", "{}", "[]", "''", "0", "1"][b.byte() as usize % 7].into(),
    }
}

/// Reads numbers off the front of the fuzzer's bytes; zeros once they run
/// out.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&first, rest)) => {
                self.0 = rest;
                first
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    fn u64(&mut self) -> u64 {
        (self.u32() as u64) << 32 | self.u32() as u64
    }
}

fn refused(e: &ScenarioErrors) -> Exercised {
    let text = e.to_string();
    assert!(
        !e.0.is_empty() && e.0.iter().all(|err| !err.message.is_empty()),
        "a refusal without a message: {text:?}"
    );
    Exercised::Refused(text)
}

/// Everything `stormsim run` does with a loaded scenario but the files:
/// check, resolve, plan, simulate the first runs, verify their invariants,
/// tabulate.
fn exercise_scenario(s: &Scenario, limits: FuzzLimits) -> Exercised {
    let report = crate::check::check(s);
    let _ = crate::check::human(&report, LABEL);
    let _ = crate::check::json(&report);

    let mut plans = match runner::plan(s) {
        Ok(p) => p,
        // Variants are checked when a file loads, not after each `--set`.
        Err(e) => return refused(&e),
    };
    let resolved = round_trip(s);
    plans.truncate(limits.max_runs);
    let results: Vec<RunResult> = plans
        .iter_mut()
        .enumerate()
        .map(|(v, plan)| {
            let l = &mut plan.config.limits;
            l.max_events = l.max_events.min(limits.max_events);
            l.max_in_flight = l.max_in_flight.min(limits.max_in_flight);
            if let Some(occ) = plan.occ.as_mut() {
                occ.max_events = occ.max_events.min(limits.max_events);
            }
            let r = runner::run_one(plan, v, 0, s.seed);
            assert!(
                r.violations.is_empty(),
                "variant {}: invariants broken: {:?}",
                r.variant,
                r.violations
            );
            r
        })
        .collect();
    let timeseries = crate::report::tables::timeseries_csv(&results);
    let summary = crate::report::tables::summary_csv(&results);
    let by_variant = crate::report::tables::summary_by_variant_csv(&results);
    if limits.charts {
        let layout = crate::report::tables::Layout::of(&results);
        let [services, services_ts, calls, _] = crate::report::graph_tables::all(&layout, &results);
        let drawn = crate::report::ChartData::from_bytes(
            &timeseries,
            &summary,
            &by_variant,
            Some(&resolved),
        )
        .and_then(|data| {
            data.with_graph(crate::report::graph_data::GraphSources {
                services: &services.1[..],
                timeseries: &services_ts.1[..],
                calls: &calls.1[..],
            })
        })
        .and_then(|data| crate::report::visual_files(&data));
        if let Err(e) = drawn {
            panic!("the charts of a finished run cannot be drawn: {e}");
        }
    }
    Exercised::Ran(results)
}

/// The resolved scenario (`scenario.resolved.yaml`) loads, and resolves to
/// the same text again: `stormsim run` on it reproduces the run. Returns
/// the text.
fn round_trip(s: &Scenario) -> String {
    let resolved = scenario::resolved_yaml(s);
    let again = match scenario::load_str(&resolved, "scenario.resolved.yaml") {
        Ok(again) => again,
        Err(e) => panic!("the resolved scenario does not load: {e}\n{resolved}"),
    };
    let twice = scenario::resolved_yaml(&again);
    assert_eq!(resolved, twice, "resolving is not a fixed point");
    resolved
}
