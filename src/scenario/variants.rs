//! Variants: the scenarios compared side by side, each the base scenario
//! with its `set` overrides applied in file order.

use super::error::{ScenarioError, ScenarioErrors, UNKNOWN_LABEL};
use super::locate::LocationIndex;
use super::overrides::{SetError, set_value};
use super::types::Scenario;

/// The variant of a scenario without `variants`.
pub const BASE_VARIANT: &str = "base";

/// One scenario per variant, in file order, each with `variants` cleared;
/// a scenario without variants gives one named `base`.
pub fn expand_variants(s: &Scenario) -> Result<Vec<(String, Scenario)>, ScenarioErrors> {
    expand(s, UNKNOWN_LABEL, None)
}

/// Errors of every variant of `s`, located in the file when `index` is
/// given (at the variant's `set` entry).
pub(crate) fn variant_errors(
    s: &Scenario,
    file_label: &str,
    index: Option<&LocationIndex>,
) -> Vec<ScenarioError> {
    expand(s, file_label, index)
        .err()
        .map(|e| e.0)
        .unwrap_or_default()
}

fn expand(
    s: &Scenario,
    file_label: &str,
    index: Option<&LocationIndex>,
) -> Result<Vec<(String, Scenario)>, ScenarioErrors> {
    let mut base = s.clone();
    base.variants.clear();
    if s.variants.is_empty() {
        return Ok(vec![(BASE_VARIANT.to_string(), base)]);
    }
    let mut out = Vec::with_capacity(s.variants.len());
    let mut errors = Vec::new();
    for (i, v) in s.variants.iter().enumerate() {
        let mut scenario = base.clone();
        let mut failed = false;
        for (path, value) in &v.set {
            match set_value(&scenario, path, value.clone()) {
                Ok(next) => scenario = next,
                Err(e) => {
                    failed = true;
                    errors.extend(variant_error(e, i, &v.name, path, file_label, index));
                }
            }
        }
        if !failed {
            out.push((v.name.clone(), scenario));
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ScenarioErrors(errors))
    }
}

fn variant_error(
    e: SetError,
    i: usize,
    name: &str,
    set_path: &str,
    file_label: &str,
    index: Option<&LocationIndex>,
) -> Vec<ScenarioError> {
    let path = format!("variants[{i}].set.{set_path}");
    let position = index.and_then(|idx| idx.position(&path));
    e.issues
        .into_iter()
        .map(|issue| {
            let message = if issue.path == set_path || issue.path.is_empty() {
                format!("in variant `{name}`: {}", issue.message)
            } else {
                format!("in variant `{name}`: {}: {}", issue.path, issue.message)
            };
            let err = ScenarioError::new(file_label, message).with_path(path.clone());
            match position {
                Some((line, col)) => err.at(line, col),
                None => err,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::{FULL, MINIMAL};
    use crate::scenario::load_str;
    use crate::scenario::types::Jitter;

    #[test]
    fn expands_in_file_order() {
        let s = load_str(FULL, "full.yaml").unwrap();
        let v = expand_variants(&s).unwrap();
        let names: Vec<&str> = v.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["no-jitter", "full-jitter"]);
        assert_eq!(v[0].1.layers[0].retry.jitter, Jitter::None);
        assert_eq!(v[1].1.dependency.concurrency, 32);
        assert_eq!(v[0].1.dependency.concurrency, 64);
        assert!(v.iter().all(|(_, s)| s.variants.is_empty()));
    }

    #[test]
    fn no_variants_gives_base() {
        let s = load_str(MINIMAL, "m.yaml").unwrap();
        let v = expand_variants(&s).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0, "base");
        assert_eq!(v[0].1, s);
    }
}
