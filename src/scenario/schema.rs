//! The JSON Schema of the scenario format (`stormsim schema`), derived
//! from the serde types with `schemars`, for editors' YAML extensions.
//!
//! The schema accepts what the loader accepts: fields with defaults are
//! optional, and the mappings a layer's `preset` can fill (`backoff`,
//! `budget`, `throttle`, `breaker`) require nothing, since beside a preset
//! `backoff: { base: 2s }` takes its `kind` from the preset. What the schema
//! cannot say (cap below base, overlapping incidents...) `stormsim validate`
//! reports.

use schemars::Schema;

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

/// `#[schemars(transform)]` of the mappings a preset may fill: no field of
/// them is required by the schema (the loader reports a missing one).
pub fn fillable_by_preset(schema: &mut Schema) {
    schema.remove("required");
}
