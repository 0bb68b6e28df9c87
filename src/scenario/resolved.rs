//! `scenario.resolved.yaml`: the scenario with every default filled in,
//! so that a run can be reproduced exactly from it alone.

use super::defaults::fill_defaults;
use super::types::Scenario;

/// The first line of every resolved scenario.
pub const HEADER: &str = "# stormsim resolved scenario: every default filled in; run it to reproduce these results exactly.";

/// `s` as YAML, every default filled in, behind the [`HEADER`] comment.
pub fn resolved_yaml(s: &Scenario) -> String {
    let mut full = s.clone();
    fill_defaults(&mut full);
    let body = serde_saphyr::to_string(&full)
        .unwrap_or_else(|e| format!("# the scenario could not be written as YAML: {e}\n"));
    format!("{HEADER}\n{body}")
}
