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

/// `#[schemars(transform)]` of the mappings a preset may fill: no field of
/// them is required by the schema (the loader reports a missing one).
pub fn fillable_by_preset(schema: &mut Schema) {
    schema.remove("required");
}
