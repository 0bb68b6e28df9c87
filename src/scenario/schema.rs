//! The JSON Schema of the scenario format (`stormsim schema`), derived
//! from the serde types with `schemars`, for editors' YAML extensions.
//!
//! The schema accepts what the loader accepts: fields with defaults are
//! optional, and the mappings a layer's `preset` can fill (`backoff`,
//! `budget`, `throttle`, `breaker`) require nothing, since beside a preset
//! `backoff: { base: 2s }` takes its `kind` from the preset. What the schema
//! cannot say (cap below base, overlapping incidents...) `stormsim validate`
//! reports.

use std::sync::OnceLock;

use schemars::Schema;
use serde_json::Value;

use super::types::Scenario;

/// The scenario format's JSON Schema (draft 2020-12).
pub fn scenario_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(Scenario);
    schema.insert("title".into(), "stormsim scenario".into());
    schema.to_value()
}

/// The schema as pretty-printed JSON, newline-terminated.
pub fn scenario_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&scenario_schema()).expect("a JSON value prints");
    text.push('\n');
    text
}

/// The scenario format's JSON Schema, made once.
fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(scenario_schema)
}

/// `node` with `$ref`s followed and an optional (`anyOf` with null) or a
/// choice (`oneOf`) reduced to its mapping branch, if any.
fn resolve(node: &Value) -> &Value {
    let mut node = node;
    for _ in 0..16 {
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/$defs/");
            match schema().get("$defs").and_then(|d| d.get(name)) {
                Some(def) => node = def,
                None => return node,
            }
            continue;
        }
        let branches = node
            .get("anyOf")
            .or_else(|| node.get("oneOf"))
            .and_then(Value::as_array);
        match branches.and_then(|b| {
            b.iter()
                .find(|x| x.get("$ref").is_some() || x.get("properties").is_some())
        }) {
            Some(b) => node = b,
            None => return node,
        }
    }
    node
}

/// The fields the format has at `segs` (names, and whether each is a
/// mapping), or `None` where the schema does not say (free maps).
pub(crate) fn fields_at(segs: &[&str]) -> Option<Vec<(String, bool)>> {
    let mut node = resolve(schema());
    for seg in segs {
        if let Some(items) = node.get("items") {
            // A list item, by index or name.
            let _ = seg;
            node = resolve(items);
            continue;
        }
        node = resolve(node.get("properties")?.get(*seg)?);
    }
    let props = node.get("properties")?.as_object()?;
    Some(
        props
            .iter()
            .map(|(name, sub)| {
                let sub = resolve(sub);
                let is_map = sub.get("properties").is_some()
                    || sub.get("type").and_then(Value::as_str) == Some("object");
                (name.clone(), is_map)
            })
            .collect(),
    )
}

/// The schema node of the field at `segs` (list items by index or name),
/// as written (not resolved), or `None` where the schema does not say.
fn node_at(segs: &[&str]) -> Option<&'static Value> {
    walk(segs, false)
}

/// The node at `segs`; with `free_keys`, a segment no property names
/// goes into a mapping whose keys are free and whose values have a type
/// (`shed_by_priority`: class → a count).
fn walk(segs: &[&str], free_keys: bool) -> Option<&'static Value> {
    let mut node = schema();
    for seg in segs {
        let here = resolve(node);
        if let Some(items) = here.get("items") {
            node = items;
            continue;
        }
        node = match here.get("properties").and_then(|p| p.get(*seg)) {
            Some(n) => n,
            None if free_keys => here.get("additionalProperties").filter(|a| a.is_object())?,
            None => return None,
        };
    }
    Some(node)
}

/// What the field at `segs` takes, in words ("a whole number from 0 to
/// 4294967295", "a duration with a unit, such as 250ms, 2s, 5m or 1h",
/// "one of: none, full, equal"), or `None` where the schema does not say.
pub(crate) fn expects(segs: &[&str]) -> Option<String> {
    node_at(segs).map(|n| words(n, 0))
}

/// Whether the field at `segs` takes whole numbers only (an integer in
/// every numeric form it has, never a fraction).
pub(crate) fn takes_whole_numbers_only(segs: &[&str]) -> bool {
    node_at(segs).is_some_and(|n| takes(n, "integer", 0) && !takes(n, "number", 0))
}

/// Whether the field at `segs` takes a number (whole or not) and never
/// text: a count, a ratio, a multiplier; not a duration or a rate
/// (`100ms`, `50/s`), and not a list of outcomes, whose status codes may
/// be words (`5xx`) as well.
pub(crate) fn takes_numbers_not_text(segs: &[&str]) -> bool {
    node_or_key_at(segs).is_some_and(|n| {
        (takes(n, "integer", 0) || takes(n, "number", 0)) && !takes(n, "string", 0)
    })
}

/// As [`expects`], also for a key of a mapping whose keys are free and
/// whose values have a type (`dependency.shed_by_priority.high`).
pub(crate) fn expects_at_key(segs: &[&str]) -> Option<String> {
    node_or_key_at(segs).map(|n| words(n, 0))
}

/// As [`node_at`], also into a mapping whose keys are free and whose
/// values have a type (`dependency.shed_by_priority.high`).
fn node_or_key_at(segs: &[&str]) -> Option<&'static Value> {
    walk(segs, true)
}

/// Whether the field at `segs` takes a list (one of its forms).
pub(crate) fn is_list(segs: &[&str]) -> bool {
    node_at(segs).is_some_and(|n| takes(n, "array", 0))
}

/// Whether the field at `segs` takes a mapping (one of its forms).
pub(crate) fn is_mapping(segs: &[&str]) -> bool {
    node_at(segs).is_some_and(|n| takes(n, "object", 0))
}

/// Whether `node` (or one of its branches) is of JSON type `ty`.
fn takes(node: &Value, ty: &str, depth: usize) -> bool {
    if depth > 8 {
        return false;
    }
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return schema()
            .get("$defs")
            .and_then(|d| d.get(name))
            .is_some_and(|def| takes(def, ty, depth + 1));
    }
    if let Some(branches) = node
        .get("anyOf")
        .or_else(|| node.get("oneOf"))
        .and_then(Value::as_array)
        && branches.iter().any(|b| takes(b, ty, depth + 1))
    {
        return true;
    }
    let is = |t: &Value| t.as_str() == Some(ty);
    match node.get("type") {
        Some(Value::Array(types)) => types.iter().any(is),
        Some(t) => is(t),
        None => match ty {
            "object" => node.get("properties").is_some(),
            "array" => node.get("items").is_some(),
            _ => false,
        },
    }
}

fn words(node: &Value, depth: usize) -> String {
    if depth > 8 {
        return "a value".into();
    }
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return match name {
            "Duration" => "a duration with a unit, such as 250ms, 2s, 5m or 1h".into(),
            "Rate" => "a rate such as 2000/s, 30/m or 100/h".into(),
            _ => match schema().get("$defs").and_then(|d| d.get(name)) {
                Some(def) => words(def, depth + 1),
                None => "a value".into(),
            },
        };
    }
    if let Some(branches) = node
        .get("anyOf")
        .or_else(|| node.get("oneOf"))
        .and_then(Value::as_array)
    {
        let branches: Vec<&Value> = branches
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        let mut names: Vec<String> = Vec::new();
        let mut other: Vec<String> = Vec::new();
        for b in branches {
            if let Some(list) = b.get("enum").and_then(Value::as_array) {
                names.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
            } else if let Some(c) = b.get("const").and_then(Value::as_str) {
                names.push(c.to_string());
            } else if let Some(props) = b.get("properties").and_then(Value::as_object)
                && props.len() == 1
                && let Some((k, v)) = props.iter().next()
            {
                other.push(format!("{{ {k}: {} }}", words(v, depth + 1)));
            } else {
                other.push(words(b, depth + 1));
            }
        }
        if !names.is_empty() {
            other.insert(0, format!("one of: {}", names.join(", ")));
        }
        other.dedup();
        return other.join(", or ");
    }
    if let Some(list) = node.get("enum").and_then(Value::as_array) {
        let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
        return format!("one of: {}", names.join(", "));
    }
    let ty = match node.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        Some(t) => t.as_str(),
        None => None,
    };
    match ty {
        Some("integer") => {
            let ty = match node.get("format").and_then(Value::as_str) {
                Some("uint8") => "u8",
                Some("uint16") => "u16",
                Some("uint32") => "u32",
                Some("uint64" | "uint") => "u64",
                Some("int32") => "i32",
                _ => "i64",
            };
            super::suggest::type_words(ty)
                .unwrap_or("a whole number")
                .to_string()
        }
        Some("number") => "a number".into(),
        Some("boolean") => "true or false".into(),
        Some("string") => "text".into(),
        Some("array") => "a list".into(),
        Some("object") => "a mapping".into(),
        _ => "a value".into(),
    }
}

/// Removes from `value` (a scenario as JSON) every field written as
/// `null` that the format does not require, so that it takes its default
/// (an optional field: none; `retry: null`: one attempt). A required field
/// keeps its `null`, which reading then reports. The overrides of
/// `variants` and the values of `sweep` are left as they are: there
/// `null` unsets the base scenario's value when applied.
/// Returns whether it removed any.
pub(crate) fn strip_nulls(value: &mut Value) -> bool {
    let mut removed = false;
    strip_at(value, &mut Vec::new(), 0, &mut removed);
    removed
}

fn strip_at(value: &mut Value, segs: &mut Vec<String>, depth: usize, removed: &mut bool) {
    if depth > 64 {
        return;
    }
    let here: Vec<&str> = segs.iter().map(String::as_str).collect();
    if matches!(here[..], ["sweep"] | ["variants"]) {
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(node) = node_at(&here)
                .map(resolve)
                .filter(|n| n.get("properties").is_some())
            else {
                return;
            };
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let before = map.len();
            map.retain(|k, v| !v.is_null() || required.contains(&k.as_str()));
            *removed |= map.len() != before;
            for (k, v) in map.iter_mut() {
                segs.push(k.clone());
                strip_at(v, segs, depth + 1, removed);
                segs.pop();
            }
        }
        Value::Array(items) => {
            for v in items.iter_mut() {
                segs.push("0".into());
                strip_at(v, segs, depth + 1, removed);
                segs.pop();
            }
        }
        _ => {}
    }
}

/// `#[schemars(transform)]` of the mappings a preset may fill: no field of
/// them is required by the schema (the loader reports a missing one).
pub fn fillable_by_preset(schema: &mut Schema) {
    schema.remove("required");
}
