//! The scenario's `tune` section: the space `stormsim tune` searches for
//! the best retry constants (README, "Tuning"), the figure it optimizes,
//! and how many runs it may spend. This module reads and checks the
//! section; the search itself is `crate::tune`.
//!
//! ```yaml
//! tune:
//!   space:
//!     layers.api.retry.max_attempts: { int: [1, 6] }
//!     layers.api.retry.backoff.base: { log: [10ms, 2s] }
//!     layers.api.retry.jitter: [none, full, equal, decorrelated]
//!   objective: { maximize: success_rate }
//!   budget: 200
//! ```
//!
//! Each key of `space` is a dotted path, as `--set` and `sweep` take it;
//! its value is a list of values, `{ int: [lo, hi] }` (whole numbers, both
//! ends included), `{ log: [lo, hi] }` (durations or positive numbers,
//! spread evenly on a log scale) or `{ range: [lo, hi] }` (spread evenly).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::Scenario;
use super::units::{Duration, parse_duration};
use super::validate::Checker;

/// The most runs one `stormsim tune` may spend: each run's summary is kept
/// (about a kilobyte), so this bounds its memory.
pub const MAX_BUDGET: u32 = 100_000;
/// The most dimensions of a space.
pub const MAX_DIMENSIONS: usize = 32;
/// The most values of a list dimension.
pub const MAX_CHOICES: usize = 10_000;

/// The figures a search may optimize: per-run numbers of `summary.csv`.
pub const FIGURES: &[&str] = &[
    "success_rate",
    "success_rate_outside_incidents",
    "goodput",
    "amplification",
    "peak_amplification",
    "dependency_attempts",
    "retries",
    "retry_ratio",
    "peak_load_ratio",
    "peak_load_ratio_after",
    "peak_effective_load_ratio",
    "latency_mean_ms",
    "latency_p50_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_p99_outside_ms",
    "recovery_time_s",
    "time_to_full_goodput_s",
    "completion_time_s",
    "duplicate_side_effects",
    "orphaned_work_s",
];

/// The `tune` section.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tune {
    /// What to search: dotted path → a list of values, `{ int: [lo, hi] }`,
    /// `{ log: [lo, hi] }` or `{ range: [lo, hi] }`.
    #[serde(default)]
    pub space: serde_json::Map<String, Value>,
    /// The figure to optimize: `{ maximize: success_rate }` (the default)
    /// or `{ minimize: peak_load_ratio_after }`. Candidates that meet the
    /// scenario's `slo` always rank first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<TuneObjective>,
    /// The most simulated runs the search spends (default 100).
    #[serde(default = "default_budget")]
    pub budget: u32,
}

fn default_budget() -> u32 {
    100
}

/// `{ maximize: FIGURE }` or `{ minimize: FIGURE }`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TuneObjective {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximize: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimize: Option<String>,
}

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Maximize,
    Minimize,
}

impl Direction {
    pub fn word(self) -> &'static str {
        match self {
            Direction::Maximize => "maximize",
            Direction::Minimize => "minimize",
        }
    }
}

impl Tune {
    /// The figure and its direction (`maximize: success_rate` unless set).
    pub fn goal(&self) -> (String, Direction) {
        match &self.objective {
            Some(TuneObjective {
                maximize: Some(f), ..
            }) => (f.clone(), Direction::Maximize),
            Some(TuneObjective {
                minimize: Some(f), ..
            }) => (f.clone(), Direction::Minimize),
            _ => ("success_rate".to_string(), Direction::Maximize),
        }
    }
}

/// Whether numbers in a range are durations or plain numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Duration,
    Number,
}

/// One dimension of the space.
#[derive(Clone, Debug, PartialEq)]
pub enum Dimension {
    /// Whole numbers from `lo` to `hi`, both included.
    Int { lo: i64, hi: i64 },
    /// From `lo` to `hi` (> 0), spread evenly on a log scale; durations in
    /// nanoseconds.
    Log { lo: f64, hi: f64, unit: Unit },
    /// From `lo` to `hi`, spread evenly.
    Range { lo: f64, hi: f64, unit: Unit },
    /// One of these values.
    Choice(Vec<Value>),
}

impl Dimension {
    /// How many distinct values it has, when it is a finite set.
    pub fn count(&self) -> Option<u64> {
        match self {
            Dimension::Int { lo, hi } => Some(hi.abs_diff(*lo).saturating_add(1)),
            Dimension::Choice(v) => Some(v.len() as u64),
            Dimension::Log { .. } | Dimension::Range { .. } => None,
        }
    }

    /// Its `i`-th value of a finite set (`i < count`).
    pub fn nth(&self, i: u64) -> Value {
        match self {
            Dimension::Int { lo, .. } => Value::from(lo.saturating_add(i as i64)),
            Dimension::Choice(v) => v[i as usize].clone(),
            _ => self.at(0.0),
        }
    }

    /// The value at `u` in [0, 1): a position along the dimension (the
    /// lower end at 0). Durations are rounded to two significant digits
    /// and numbers of a range to three, so that the settings found read
    /// as constants a person would write.
    pub fn at(&self, u: f64) -> Value {
        let u = u.clamp(0.0, 1.0);
        match self {
            Dimension::Int { .. } | Dimension::Choice(_) => {
                let n = self.count().unwrap_or(1);
                self.nth(((u * n as f64) as u64).min(n - 1))
            }
            Dimension::Log { lo, hi, unit } => {
                let v = (lo.ln() + u * (hi.ln() - lo.ln())).exp();
                number(v.clamp(*lo, *hi), *unit)
            }
            Dimension::Range { lo, hi, unit } => number(lo + u * (hi - lo), *unit),
        }
    }

    /// Both ends (for checking that the scenario takes them).
    pub fn ends(&self) -> Vec<Value> {
        match self {
            Dimension::Choice(v) => v.clone(),
            Dimension::Int { lo, hi } => vec![Value::from(*lo), Value::from(*hi)],
            Dimension::Log { lo, hi, unit } | Dimension::Range { lo, hi, unit } => {
                vec![number(*lo, *unit), number(*hi, *unit)]
            }
        }
    }
}

/// `v` as a scenario value: a duration rounded to two significant digits
/// (`37ms`, `1.2s` written `1200ms`), or a number to three.
fn number(v: f64, unit: Unit) -> Value {
    match unit {
        Unit::Duration => {
            let ns = round_significant(v, 2).max(1.0) as u64;
            Value::String(Duration(ns).to_string())
        }
        Unit::Number => {
            let r = round_significant(v, 3);
            if r.fract() == 0.0 && r.abs() < 1e15 {
                Value::from(r as i64)
            } else {
                serde_json::Number::from_f64(r).map_or(Value::Null, Value::Number)
            }
        }
    }
}

/// `v` rounded to `digits` significant digits.
pub fn round_significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    // By a power of ten that is exact (10^k for k ≥ 0): 10^-5 is not, and
    // 7.2e6 × 10^-5 rounds back to 7199999.999….
    let k = digits - 1 - v.abs().log10().floor() as i32;
    if k >= 0 {
        let scale = 10f64.powi(k);
        (v * scale).round() / scale
    } else {
        let scale = 10f64.powi(-k);
        (v / scale).round() * scale
    }
}

/// The dimension a space entry describes, or what is wrong with it.
pub fn dimension(v: &Value) -> Result<Dimension, String> {
    const EXPECTED: &str =
        "expected a list of values, { int: [lo, hi] }, { log: [lo, hi] } or { range: [lo, hi] }";
    match v {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(format!("an empty list; {EXPECTED}"));
            }
            if items.len() > MAX_CHOICES {
                return Err(format!(
                    "{} values; expected at most {MAX_CHOICES}",
                    items.len()
                ));
            }
            for (i, a) in items.iter().enumerate() {
                if items[..i].contains(a) {
                    return Err(format!("the value {a} is listed twice"));
                }
            }
            Ok(Dimension::Choice(items.clone()))
        }
        Value::Object(m) if m.len() == 1 => {
            let (kind, ends) = m.iter().next().expect("one entry");
            let Some([a, b]) = ends.as_array().map(Vec::as_slice) else {
                return Err(format!(
                    "`{kind}` takes two ends, as in {{ {kind}: [lo, hi] }}"
                ));
            };
            match kind.as_str() {
                "int" => {
                    let (Some(lo), Some(hi)) = (a.as_i64(), b.as_i64()) else {
                        return Err(format!(
                            "`int` takes two whole numbers, as in {{ int: [1, 6] }}; found {a} and {b}"
                        ));
                    };
                    if lo > hi {
                        return Err(format!("the range starts at {lo}, above its end {hi}"));
                    }
                    Ok(Dimension::Int { lo, hi })
                }
                "log" | "range" => {
                    let (lo, hi, unit) = ends_of(a, b)?;
                    if lo >= hi {
                        return Err(format!("the range starts at {a}, not below its end {b}"));
                    }
                    if kind == "log" {
                        if lo <= 0.0 {
                            return Err(format!("a log range needs ends above zero; found {a}"));
                        }
                        Ok(Dimension::Log { lo, hi, unit })
                    } else {
                        Ok(Dimension::Range { lo, hi, unit })
                    }
                }
                other => Err(format!("unknown kind `{other}`; {EXPECTED}")),
            }
        }
        _ => Err(EXPECTED.to_string()),
    }
}

/// The ends of a `log` or `range`: two durations or two numbers.
fn ends_of(a: &Value, b: &Value) -> Result<(f64, f64, Unit), String> {
    let as_duration = |v: &Value| v.as_str().map(parse_duration);
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => Ok((x, y, Unit::Number)),
            _ => Err("the ends must be finite numbers".into()),
        },
        _ => match (as_duration(a), as_duration(b)) {
            (Some(Ok(x)), Some(Ok(y))) => Ok((x.ns() as f64, y.ns() as f64, Unit::Duration)),
            (Some(Err(e)), _) | (_, Some(Err(e))) => Err(e),
            _ => Err(format!(
                "the ends must be two numbers or two durations (such as [10ms, 2s]); found {a} and {b}"
            )),
        },
    }
}

/// What an end of `{ int | log | range: [lo, hi] }` (`v`, searching the
/// field at `path`) written as text is told where the field takes
/// numbers (`{ range: ["1.5", 3] }`): the text is no number of it, as
/// anywhere else.
fn text_end(path: &str, v: &Value) -> Option<String> {
    let Value::Object(m) = v else {
        return None;
    };
    let segs: Vec<&str> = path.split('.').collect();
    m.values()
        .filter_map(Value::as_array)
        .flatten()
        .find_map(|end| super::text_numbers::refusal(&segs, end.as_str()?, false))
}

/// The scenario a search starts from: `s` without `tune`, `variants` and
/// `sweep` (a search makes its own candidates).
pub fn search_base(s: &Scenario) -> Scenario {
    let mut base = s.clone();
    base.tune = None;
    base.variants.clear();
    base.sweep.clear();
    base
}

impl Checker {
    /// The `tune` section: a space of known dimensions whose every path
    /// the scenario takes at both ends, a figure a run reports, a budget
    /// from 1 to [`MAX_BUDGET`].
    pub(super) fn tune(&mut self, s: &Scenario) {
        let Some(t) = &s.tune else {
            return;
        };
        if t.space.is_empty() {
            self.push(
                "tune.space",
                "the space is empty; expected at least one dotted path, such as layers.api.retry.max_attempts: { int: [1, 6] }",
            );
        }
        if t.space.len() > MAX_DIMENSIONS {
            self.push(
                "tune.space",
                format!(
                    "{} dimensions; expected at most {MAX_DIMENSIONS}",
                    t.space.len()
                ),
            );
        }
        self.check((1..=MAX_BUDGET).contains(&t.budget), "tune.budget", || {
            format!(
                "budget is {}; expected a number of runs from 1 to {MAX_BUDGET}",
                t.budget
            )
        });
        if let Some(o) = &t.objective {
            match (&o.maximize, &o.minimize) {
                (Some(_), Some(_)) | (None, None) => self.push(
                    "tune.objective",
                    "expected exactly one of `maximize` or `minimize`, as in { maximize: success_rate }",
                ),
                (Some(f), None) | (None, Some(f)) => {
                    let which = if o.maximize.is_some() {
                        "maximize"
                    } else {
                        "minimize"
                    };
                    if !FIGURES.contains(&f.as_str()) {
                        let hint = super::suggest::did_you_mean(f, FIGURES.iter().copied())
                            .map_or(String::new(), |c| format!("did you mean `{c}`? "));
                        self.push(
                            format!("tune.objective.{which}"),
                            format!(
                                "unknown figure `{f}`; {hint}expected one of: {}",
                                FIGURES.join(", ")
                            ),
                        );
                    }
                }
            }
        }
        let base = search_base(s);
        // Two dimensions on one field (or on a field and a part of it):
        // one would silently win, and the candidates' labels would name
        // values that never ran.
        let keys: Vec<String> = t.space.keys().cloned().collect();
        for issue in super::variants::overlapping_keys(&base, &keys) {
            self.push(format!("tune.space.{}", issue.path), issue.message);
        }
        let mut base_issues: Option<Vec<super::validate::Issue>> = None;
        // The other dimensions' ends: the search replaces the base value
        // of every searched field, so an end of one dimension is checked
        // beside the others' ends, not beside their base values, which
        // never run.
        let dims: Vec<(String, Option<Dimension>)> = t
            .space
            .iter()
            .map(|(p, v)| (p.clone(), dimension(v).ok()))
            .collect();
        let others_at = |path: &str, pick: fn(&[Value]) -> Option<&Value>| {
            dims.iter()
                .filter(|(p, _)| p != path)
                .filter_map(|(p, d)| {
                    let ends = d.as_ref()?.ends();
                    pick(&ends).map(|v| (p.clone(), v.clone()))
                })
                .collect::<Vec<(String, Value)>>()
        };
        for (path, v) in &t.space {
            let at = format!("tune.space.{path}");
            if path == "description" {
                self.push(
                    at,
                    "`description` changes nothing a run does, so there is nothing to search; search a setting of the scenario",
                );
                continue;
            }
            if super::slo::is_slo_path(path)
                || ["tune", "variants", "sweep", "seed", "replicates", "name"]
                    .iter()
                    .any(|k| path == k || path.starts_with(&format!("{k}.")))
            {
                self.push(
                    at,
                    format!(
                        "`{path}` cannot be searched: a search compares settings of the same scenario under the same seeds and SLO"
                    ),
                );
                continue;
            }
            if let Some(why) = part_of_the_test(path) {
                self.push(
                    at,
                    format!(
                        "`{path}` cannot be searched: a search compares settings of the same scenario under the same seeds and SLO, and {why}"
                    ),
                );
                continue;
            }
            if let Some(why) = not_searchable(path) {
                self.push(at, why);
                continue;
            }
            if let Some(why) = text_end(path, v) {
                self.push(at, why);
                continue;
            }
            let d = match dimension(v) {
                Ok(d) => d,
                Err(e) => {
                    self.push(at, e);
                    continue;
                }
            };
            // A `range` or `log` of numbers steps through fractions: on a
            // field of whole numbers its ends run and the candidates
            // between them are refused only once the search has begun.
            if let Dimension::Range {
                lo,
                hi,
                unit: Unit::Number,
            }
            | Dimension::Log {
                lo,
                hi,
                unit: Unit::Number,
            } = d
            {
                let segs: Vec<&str> = path.split('.').collect();
                if super::schema::takes_whole_numbers_only(&segs) {
                    let kind = if matches!(d, Dimension::Log { .. }) {
                        "log"
                    } else {
                        "range"
                    };
                    self.push(
                        at,
                        format!(
                            "`{path}` takes whole numbers, and a `{kind}` gives the fractions between its ends too; search it with {{ int: [{}, {}] }} or a list of values",
                            lo.ceil(),
                            hi.floor()
                        ),
                    );
                    continue;
                }
            }
            let low = others_at(path, <[Value]>::first);
            let high = others_at(path, <[Value]>::last);
            // The scenario must take every value at the ends. A problem
            // the scenario has whatever the value is reported once, as the
            // scenario's own, not again here for every dimension.
            let own = base_issues.get_or_insert_with(|| super::validate::validate(&base));
            for end in d.ends() {
                let with_others = |others: &[(String, Value)]| {
                    let mut sets = vec![(path.clone(), end.clone())];
                    sets.extend(others.iter().cloned());
                    super::apply_sets(&base, &sets).is_ok()
                };
                if let Err(e) = super::apply_set(&base, path, end.clone()) {
                    // Taken beside the other searched fields' ends (all
                    // low, or all high): candidates with it run.
                    if (!low.is_empty() && with_others(&low))
                        || (!high.is_empty() && with_others(&high))
                    {
                        continue;
                    }
                    let new: Vec<String> = e
                        .0
                        .iter()
                        .filter(|e| {
                            !own.iter().any(|i| {
                                e.path.as_deref() == Some(i.path.as_str()) && e.message == i.message
                            })
                        })
                        .map(|e| e.message.clone())
                        .collect();
                    if new.is_empty() {
                        continue;
                    }
                    let why = new.join("; ");
                    self.push(at.clone(), format!("with {path} = {}: {why}", show(&end)));
                    break;
                }
            }
        }
    }
}

/// Why the field at `path` cannot be searched, when it is text: a name
/// (`layers.api.name`, `services.db.name`), the service a call goes to
/// (`services.api.calls.db.to`), a file or a description. A search steps
/// through numbers, durations, rates, booleans and the names a field
/// takes (`jitter: [none, full]`), and whole mappings or lists given as
/// choices; text names what the candidates are about, not a setting of
/// their policy. The message lists the searchable fields there.
fn not_searchable(path: &str) -> Option<String> {
    let segs: Vec<&str> = path.split('.').collect();
    let (last, parent) = segs.split_last()?;
    if *last == "preset" {
        return None;
    }
    let words = super::schema::expects(&segs)?;
    if words != "text" {
        return None;
    }
    let fields = searchable_fields(parent);
    let there = if parent.is_empty() {
        "the top level".to_string()
    } else {
        format!("`{}`", parent.join("."))
    };
    let list = if fields.is_empty() {
        String::new()
    } else {
        format!("; searchable fields in {there}: {}", fields.join(", "))
    };
    Some(format!(
        "`{last}` is text (a name, a service called, a file), which a search cannot step through: a search compares settings of one scenario's policies; search numbers, durations, rates, booleans or the names a field takes{list}"
    ))
}

/// The fields at `segs` a search can step through (not text), with the
/// mappings among them written `NAME.*`.
fn searchable_fields(segs: &[&str]) -> Vec<String> {
    let Some(fields) = super::schema::fields_at(segs) else {
        return Vec::new();
    };
    fields
        .into_iter()
        .filter_map(|(name, is_map)| {
            if name == "from" {
                // A configuration file's place and format: text.
                return None;
            }
            let mut at: Vec<&str> = segs.to_vec();
            at.push(&name);
            if is_map {
                return Some(format!("{name}.*"));
            }
            let words = super::schema::expects(&at)?;
            (words != "text" || name == "preset").then_some(name)
        })
        .collect()
}

/// A value as a user writes it.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Why `path` is part of the test a search holds fixed rather than a
/// setting it may change: the analysis that judges the runs, the length
/// of the runs and the window they are measured over, the guard rails that
/// stop them, the load the clients offer, the incidents, or a whole section (which would replace
/// them too).
fn part_of_the_test(path: &str) -> Option<&'static str> {
    let under = |k: &str| path == k || path.starts_with(&format!("{k}."));
    if under("analysis") {
        return Some(
            "the analysis (`analysis.*`: the recovery threshold and window, the trigger) is the yardstick the candidates are judged by",
        );
    }
    if path == "duration" {
        return Some(
            "the duration is how long the candidates are tested: a shorter run would hide a late collapse and look better",
        );
    }
    if path == "bucket" {
        return Some(
            "the bucket is the window the SLO and the recovery are measured over: a wider one smooths a dip away and looks better",
        );
    }
    if under("limits") {
        return Some(
            "the guard rails (`limits.*`) stop a run and mark it aborted: they bound the test, they are not a setting of the policy",
        );
    }
    if path.split('.').any(|seg| seg == "incidents") {
        return Some("the incidents are the test the candidates go through");
    }
    if under("clients.arrival") || under("clients.schedule") {
        return Some("the load the clients offer is the test the candidates go through");
    }
    if [
        "dependency",
        "clients",
        "layers",
        "services",
        "occ",
        "consumers",
    ]
    .contains(&path)
    {
        return Some(
            "a whole section would replace the load, the incidents or the analysis too; search its settings one by one (`dependency.concurrency`, `layers.api.retry.max_attempts`)",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dimensions_read_their_kinds() {
        assert_eq!(
            dimension(&json!({"int": [1, 6]})),
            Ok(Dimension::Int { lo: 1, hi: 6 })
        );
        assert_eq!(
            dimension(&json!({"log": ["10ms", "2s"]})),
            Ok(Dimension::Log {
                lo: 1e7,
                hi: 2e9,
                unit: Unit::Duration
            })
        );
        assert_eq!(
            dimension(&json!({"range": [0.1, 0.5]})),
            Ok(Dimension::Range {
                lo: 0.1,
                hi: 0.5,
                unit: Unit::Number
            })
        );
        assert!(dimension(&json!(["none", "full"])).is_ok());
        for bad in [
            json!([]),
            json!({"int": [6, 1]}),
            json!({"int": [1.5, 3]}),
            json!({"log": [0, 1]}),
            json!({"log": ["2s", "10ms"]}),
            json!({"log": ["10ms", 2]}),
            json!({"grid": [1, 2]}),
            json!({"int": [1]}),
            json!(["a", "a"]),
            json!(3),
        ] {
            assert!(dimension(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_along_a_dimension() {
        let d = Dimension::Int { lo: 1, hi: 6 };
        assert_eq!(d.count(), Some(6));
        let got: Vec<Value> = (0..6).map(|i| d.at((i as f64 + 0.5) / 6.0)).collect();
        assert_eq!(got, (1..=6).map(Value::from).collect::<Vec<_>>());
        let log = dimension(&json!({"log": ["10ms", "1s"]})).unwrap();
        assert_eq!(log.at(0.0), json!("10ms"));
        assert_eq!(log.at(0.5), json!("100ms"));
        assert_eq!(log.at(1.0), json!("1s"));
        // Two significant digits: 10^(0.25·2) × 10 ms = 31.6 ms → 32ms.
        assert_eq!(log.at(0.25), json!("32ms"));
        let r = dimension(&json!({"range": [0.1, 0.5]})).unwrap();
        assert_eq!(r.at(0.5), json!(0.3));
        assert_eq!(round_significant(123456.0, 3), 123000.0);
        // A duration of 7.2 ms drawn as 7 199 999.6 ns: 7.2 ms, not
        // 7199999ns (a scale of 10^-5 is not exact in binary).
        assert_eq!(round_significant(7_199_999.6, 2), 7_200_000.0);
        assert_eq!(number(7_199_999.6, Unit::Duration), Value::from("7200us"));
        assert_eq!(round_significant(0.012345, 2), 0.012);
    }
}
