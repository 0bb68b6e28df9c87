//! `scenario.resolved.yaml`: the scenario with every default filled in,
//! so that a run can be reproduced exactly from it alone.

use super::defaults::fill_derived;
use super::presets;
use super::types::Scenario;

/// The first line of every resolved scenario.
pub const HEADER: &str = "# stormsim resolved scenario: every default filled in; run it to reproduce these results exactly.";

/// `s` as YAML, every default filled in, behind the [`HEADER`] comment.
pub fn resolved_yaml(s: &Scenario) -> String {
    let mut full = s.clone();
    fill_derived(&mut full);
    // Every value read from a file is written out: the file is not read
    // again when this scenario is.
    let calls = full
        .clients
        .calls
        .iter_mut()
        .chain(full.services.iter_mut().flat_map(|s| s.calls.iter_mut()));
    let froms = full
        .layers
        .iter_mut()
        .filter_map(|l| l.from.as_mut())
        .chain(calls.filter_map(|c| c.from.as_mut()));
    for f in froms {
        f.resolved = true;
    }
    let body = if full.has_preset() {
        // Beside a preset, an absent option must be written as `null` (and a
        // false flag as `false`), or reading the file back would take the
        // preset's value for it.
        serde_json::to_value(&full)
            .map_err(|e| e.to_string())
            .and_then(|mut v| {
                presets::for_preset_policies(&mut v, |_| true, presets::make_explicit);
                serde_saphyr::to_string(&v).map_err(|e| e.to_string())
            })
    } else {
        serde_saphyr::to_string(&full).map_err(|e| e.to_string())
    }
    .unwrap_or_else(|e| format!("# the scenario could not be written as YAML: {e}\n"));
    format!("{HEADER}\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::{FULL, MINIMAL};
    use crate::scenario::load_str;

    #[test]
    fn round_trips_a_rich_scenario() {
        for src in [FULL, MINIMAL] {
            let s = load_str(src, "x.yaml").unwrap();
            let text = resolved_yaml(&s);
            assert!(text.starts_with(HEADER));
            let back = load_str(&text, "resolved.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
            let mut derived = s.clone();
            super::fill_derived(&mut derived);
            assert_eq!(back, derived, "{text}");
            // Resolved once more, the text is the same.
            assert_eq!(resolved_yaml(&back), text);
        }
    }

    #[test]
    fn shows_defaults() {
        let s = load_str(MINIMAL, "x.yaml").unwrap();
        let text = resolved_yaml(&s);
        for field in [
            "seed: 1",
            "bucket: 1s",
            "capacity: 1024",
            "recovery_threshold: 0.9",
            "max_events:",
        ] {
            assert!(text.contains(field), "{field} missing in\n{text}");
        }
    }
}
