//! Defaults that depend on other fields, so serde cannot fill them: the
//! multiplier of exponential backoff (2) and the status of an `errors`
//! incident (503). Filled in after every parse, so that validation, the
//! model and `scenario.resolved.yaml` all see the same values.

use super::types::{BackoffKind, IncidentKind, Scenario};

/// The multiplier of exponential backoff when none is given.
pub const DEFAULT_MULTIPLIER: f64 = 2.0;
/// The status of an `errors` incident when none is given.
pub const DEFAULT_ERROR_STATUS: u16 = 503;

/// Fills every field-dependent default of `s` in place.
pub fn fill_defaults(s: &mut Scenario) {
    for layer in &mut s.layers {
        let b = &mut layer.retry.backoff;
        if b.kind == BackoffKind::Exponential && b.multiplier.is_none() {
            b.multiplier = Some(DEFAULT_MULTIPLIER);
        }
    }
    for incident in &mut s.dependency.incidents {
        if incident.kind == IncidentKind::Errors && incident.status.is_none() {
            incident.status = Some(DEFAULT_ERROR_STATUS);
        }
    }
}
