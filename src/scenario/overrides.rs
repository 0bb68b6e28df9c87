//! Overrides: `--set PATH=VALUE` on the command line and the `set` map of
//! a variant. A path is dotted (`layers.api.retry.jitter`,
//! `dependency.incidents.0.end`): a numeric segment indexes a list, any
//! other segment in a list picks the item with that `name` (a layer).
//!
//! The scenario is serialised to JSON, the value is put at the path, and the
//! result is deserialised back (so unknown fields and wrong types are caught
//! by the same types as the file) and validated again.

use serde_json::{Map, Value};

use super::defaults::fill_defaults;
use super::error::{SET_LABEL, ScenarioError, ScenarioErrors, one_line};
use super::suggest::{did_you_mean, improve_message};
use super::types::Scenario;
use super::validate::{Issue, validate};

/// Why an override failed: problems with the path or value (their path is
/// the override's path) or validation problems of the result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetError {
    pub issues: Vec<Issue>,
}

impl SetError {
    fn at(path: &str, message: impl Into<String>) -> Self {
        SetError {
            issues: vec![Issue {
                path: path.to_string(),
                message: one_line(&message.into()),
            }],
        }
    }

    fn into_errors(self, file_label: &str) -> ScenarioErrors {
        ScenarioErrors(
            self.issues
                .into_iter()
                .map(|i| ScenarioError::new(file_label, i.message).with_path(i.path))
                .collect(),
        )
    }
}

/// `s` with `value` at `path`, validated; errors are labelled `<--set>`.
pub fn apply_set(s: &Scenario, path: &str, value: Value) -> Result<Scenario, ScenarioErrors> {
    set_value(s, path, value).map_err(|e| e.into_errors(SET_LABEL))
}

/// Splits a command-line `PATH=VALUE`; VALUE is YAML (`none`, `32`, `2s`,
/// `{proportional: 0.5}`, `[timeout, 503]`, `null` to remove an optional
/// field).
pub fn parse_set_arg(arg: &str) -> Result<(String, Value), ScenarioError> {
    let err = |m: String| ScenarioError::new(SET_LABEL, m);
    let Some((path, text)) = arg.split_once('=') else {
        return Err(err(format!(
            "`{arg}` has no `=`; expected PATH=VALUE, such as layers.api.retry.jitter=none"
        )));
    };
    let path = path.trim();
    if path.is_empty() {
        return Err(err(format!(
            "`{arg}` has no path before `=`; expected PATH=VALUE"
        )));
    }
    if text.trim().is_empty() {
        return Err(err(
            "no value after `=`; expected PATH=VALUE (use `null` to remove an optional field)"
                .into(),
        )
        .with_path(path));
    }
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! { max_depth: 16, max_aliases: 100, max_events: 10_000 },
        with_snippet: false,
    };
    let value = serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|e| {
        let m = serde_saphyr::MessageFormatter::format_message(
            &serde_saphyr::DefaultMessageFormatter,
            e.without_snippet(),
        );
        err(format!("the value `{text}` is not valid YAML: {m}")).with_path(path)
    })?;
    Ok((path.to_string(), value))
}

/// `s` with `value` at `path`, re-read through the scenario types,
/// defaults filled and validated.
pub(crate) fn set_value(s: &Scenario, path: &str, value: Value) -> Result<Scenario, SetError> {
    let mut json = serde_json::to_value(s)
        .map_err(|e| SetError::at(path, format!("cannot represent the scenario: {e}")))?;
    let target = preset_target(&json, path);
    put(&mut json, path, value)?;
    if let Some(target) = target {
        apply_presets_after_set(&mut json, target);
    }
    let mut out: Scenario = serde_json::from_value(json)
        .map_err(|e| SetError::at(path, improve_message(&strip_position(&e.to_string()), None)))?;
    fill_defaults(&mut out);
    let issues = validate(&out);
    if issues.is_empty() {
        Ok(out)
    } else {
        Err(SetError { issues })
    }
}

/// Which layers a `--set` path touches in a way that involves presets.
#[derive(Clone, Copy, Debug)]
enum PresetTarget {
    /// `layers`: the whole list was replaced; fill every preset layer.
    AllLayers,
    /// `layers.X`: the layer was replaced; fill its preset.
    Layer(usize),
    /// `layers.X.preset`: the preset was set; its fields replace the layer's.
    Preset(usize),
}

fn preset_target(json: &Value, path: &str) -> Option<PresetTarget> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.first() != Some(&"layers") {
        return None;
    }
    let index = |seg: &str| {
        let items = json.get("layers")?.as_array()?;
        match seg.parse::<usize>() {
            Ok(i) => (i < items.len()).then_some(i),
            Err(_) => items
                .iter()
                .position(|v| v.get("name").and_then(Value::as_str) == Some(seg)),
        }
    };
    match segs[..] {
        [_] => Some(PresetTarget::AllLayers),
        [_, layer] => index(layer).map(PresetTarget::Layer),
        [_, layer, "preset"] => index(layer).map(PresetTarget::Preset),
        _ => None,
    }
}

/// Fills or overwrites preset fields after a `--set` (see [`PresetTarget`]).
fn apply_presets_after_set(json: &mut Value, target: PresetTarget) {
    use super::presets::{fill_layer, for_preset_layers, overwrite_layer};
    match target {
        PresetTarget::AllLayers => for_preset_layers(json, |_| true, fill_layer),
        PresetTarget::Layer(i) => for_preset_layers(json, |j| j == i, fill_layer),
        PresetTarget::Preset(i) => for_preset_layers(json, |j| j == i, overwrite_layer),
    }
}

/// serde_json appends " at line 1 column 0"-style positions that mean
/// nothing for an in-memory value.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// Puts `value` at `path` in `root`. The last segment may create a missing
/// mapping key (the typed re-read rejects unknown ones); every other
/// segment must exist.
fn put(root: &mut Value, path: &str, value: Value) -> Result<(), SetError> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.trim().is_empty()) {
        return Err(SetError::at(
            path,
            "the path has an empty segment; expected dotted names such as layers.api.retry.jitter",
        ));
    }
    let (last, parents) = segs
        .split_last()
        .ok_or_else(|| SetError::at(path, "empty path"))?;
    let mut cur = root;
    for (depth, seg) in parents.iter().enumerate() {
        let here = segs[..depth].join(".");
        cur = child(cur, seg, &here, path)?;
    }
    let here = parents.join(".");
    match cur {
        Value::Object(map) => {
            map.insert((*last).to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i = item_index(items, last, &here, path)?;
            items[i] = value;
            Ok(())
        }
        other => Err(not_a_container(other, last, &here, path)),
    }
}

fn child<'a>(
    cur: &'a mut Value,
    seg: &str,
    here: &str,
    path: &str,
) -> Result<&'a mut Value, SetError> {
    match cur {
        Value::Object(map) => {
            if !map.contains_key(seg) {
                return Err(missing_key(map, seg, here, path));
            }
            map.get_mut(seg)
                .ok_or_else(|| SetError::at(path, "internal error"))
        }
        Value::Array(items) => {
            let i = item_index(items, seg, here, path)?;
            Ok(&mut items[i])
        }
        other => Err(not_a_container(other, seg, here, path)),
    }
}

fn where_(here: &str) -> String {
    if here.is_empty() {
        "the top level".to_string()
    } else {
        format!("`{here}`")
    }
}

fn missing_key(map: &Map<String, Value>, seg: &str, here: &str, path: &str) -> SetError {
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    let hint = did_you_mean(seg, keys.iter().copied())
        .map(|k| format!("did you mean `{k}`? "))
        .unwrap_or_default();
    SetError::at(
        path,
        format!(
            "no `{seg}` in {}; {hint}fields there: {}",
            where_(here),
            keys.join(", ")
        ),
    )
}

/// The index of the item `seg` names in a list: a number, or the `name`
/// of an item.
fn item_index(items: &[Value], seg: &str, here: &str, path: &str) -> Result<usize, SetError> {
    if let Ok(i) = seg.parse::<usize>() {
        return if i < items.len() {
            Ok(i)
        } else {
            Err(SetError::at(
                path,
                format!(
                    "index {i} is out of range: {} has {} items",
                    where_(here),
                    items.len()
                ),
            ))
        };
    }
    let names: Vec<&str> = items
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    if let Some(i) = items
        .iter()
        .position(|v| v.get("name").and_then(Value::as_str) == Some(seg))
    {
        return Ok(i);
    }
    let hint = did_you_mean(seg, names.iter().copied())
        .map(|k| format!("did you mean `{k}`? "))
        .unwrap_or_default();
    let known = if names.is_empty() {
        format!("it has {} items, use an index", items.len())
    } else {
        format!("names there: {}", names.join(", "))
    };
    Err(SetError::at(
        path,
        format!("no item named `{seg}` in {}; {hint}{known}", where_(here)),
    ))
}

fn not_a_container(v: &Value, seg: &str, here: &str, path: &str) -> SetError {
    SetError::at(
        path,
        format!(
            "{} is {}, which has no field `{seg}`; set {} itself instead",
            where_(here),
            describe(v),
            where_(here)
        ),
    )
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "empty".into(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("`{n}`"),
        Value::String(s) => format!("`{s}`"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::FULL;
    use crate::scenario::load_str;
    use crate::scenario::types::Jitter;
    use crate::scenario::units::Duration;

    fn full() -> Scenario {
        load_str(FULL, "full.yaml").unwrap()
    }

    fn set(s: &Scenario, arg: &str) -> Result<Scenario, ScenarioErrors> {
        let (path, value) = parse_set_arg(arg).map_err(ScenarioErrors::from)?;
        apply_set(s, &path, value)
    }

    #[test]
    fn sets_each_example_path() {
        let s = full();
        assert_eq!(
            set(&s, "layers.api.retry.jitter=none").unwrap().layers[0]
                .retry
                .jitter,
            Jitter::None
        );
        let p = set(&s, "layers.api.retry.jitter={proportional: 0.25}").unwrap();
        assert_eq!(p.layers[0].retry.jitter, Jitter::Proportional(0.25));
        assert_eq!(
            set(&s, "dependency.queue.capacity=2048")
                .unwrap()
                .dependency
                .queue
                .capacity,
            2048
        );
        assert_eq!(
            set(&s, "dependency.concurrency=32")
                .unwrap()
                .dependency
                .concurrency,
            32
        );
        assert_eq!(
            set(&s, "clients.arrival.rate=30/m")
                .unwrap()
                .clients
                .arrival
                .rate
                .unwrap()
                .per_sec(),
            0.5
        );
        let e = set(&s, "dependency.incidents.0.end=2m30s").unwrap();
        assert_eq!(e.dependency.incidents[0].end, Duration::from_secs(150));
        // By index as well as by name; `null` removes an optional field.
        assert_eq!(
            set(&s, "layers.1.timeout=null").unwrap().layers[1].timeout,
            None
        );
    }

    #[test]
    fn unknown_paths_name_the_missing_segment() {
        let s = full();
        let e = set(&s, "layers.apii.retry.jitter=none").unwrap_err();
        assert_eq!(
            e.to_string(),
            "<--set>: layers.apii.retry.jitter: no item named `apii` in `layers`; did you mean `api`? names there: api, storage"
        );
        let e = set(&s, "dependency.queeu.capacity=1").unwrap_err();
        assert!(e.to_string().contains("no `queeu` in `dependency`; did you mean `queue`? fields there: concurrency, service_time, queue"), "{e}");
        let e = set(&s, "dependency.queue.capcity=1").unwrap_err();
        assert!(
            e.to_string().contains("unknown field `capcity`")
                && e.to_string().contains("did you mean `capacity`?"),
            "{e}"
        );
        let e = set(&s, "dependency.incidents.9.end=1m").unwrap_err();
        assert!(e.to_string().contains("index 9 is out of range"), "{e}");
        let e = set(&s, "name.x=1").unwrap_err();
        assert!(
            e.to_string()
                .contains("`name` is `outage-recovery`, which has no field `x`"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_are_errors() {
        let s = full();
        let e = set(&s, "dependency.concurrency=lots").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("<--set>: dependency.concurrency: "),
            "{e}"
        );
        let e = set(&s, "layers.api.retry.backoff.cap=10ms").unwrap_err();
        assert_eq!(
            e.to_string(),
            "<--set>: layers.api.retry.backoff.cap: cap (10ms) is below base (100ms); expected cap >= base"
        );
        assert!(parse_set_arg("novalue").is_err());
        assert!(parse_set_arg("a=").is_err());
        assert!(parse_set_arg("=1").is_err());
        assert!(parse_set_arg("a=[").is_err());
    }
}
