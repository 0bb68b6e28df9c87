//! Variants: the scenarios compared side by side, each the base scenario
//! with its `set` overrides applied in file order, and the sweep grid on
//! top of them: every combination of the swept values (cartesian product,
//! first path varying slowest, values in file order) applied to each
//! variant, named after its values (`max_attempts=3 jitter=full`).

use super::error::{ScenarioError, ScenarioErrors, UNKNOWN_LABEL};
use super::locate::LocationIndex;
use super::overrides::{SetError, set_value};
use super::types::Scenario;
use super::validate::timeseries_rows_issue;

/// The variant of a scenario without `variants`.
pub const BASE_VARIANT: &str = "base";

/// One scenario per variant, in file order, each with `variants` cleared;
/// a scenario without variants gives one named `base`. Sweeps included.
pub fn expand_variants(s: &Scenario) -> Result<Vec<(String, Scenario)>, ScenarioErrors> {
    Ok(expand_all(s)?
        .into_iter()
        .map(|e| (e.name, e.scenario))
        .collect())
}

/// A variant ready to run, with the swept values that made it.
#[derive(Clone, Debug)]
pub struct Expanded {
    pub name: String,
    pub scenario: Scenario,
    /// (dotted path, value as written) of each swept field, in sweep order.
    pub params: Vec<(String, String)>,
}

/// Every variant × every sweep grid point, in order.
pub fn expand_all(s: &Scenario) -> Result<Vec<Expanded>, ScenarioErrors> {
    let variants = expand(s, UNKNOWN_LABEL, None)?;
    let named = !s.variants.is_empty();
    let grid = grid(&s.sweep);
    let short = short_names(&s.sweep);
    let mut out = Vec::with_capacity(variants.len() * grid.len().max(1));
    let mut errors = Vec::new();
    for (name, v) in variants {
        if grid.is_empty() {
            out.push(Expanded {
                name,
                scenario: v,
                params: Vec::new(),
            });
            continue;
        }
        for point in &grid {
            let mut scenario = v.clone();
            // With explicit variants, the variant is one more dimension of
            // the grid (a `sweep.variant` column).
            let mut params = if named {
                vec![("variant".to_string(), name.clone())]
            } else {
                Vec::new()
            };
            let mut label = Vec::new();
            let mut ok = true;
            for ((path, value), short) in point.iter().zip(&short) {
                let text = value_text(value);
                label.push(format!("{short}={text}"));
                params.push((path.clone(), text));
                match set_value(&scenario, path, value.clone()) {
                    Ok(next) => scenario = next,
                    Err(e) => {
                        ok = false;
                        errors.extend(e.issues.into_iter().map(|issue| {
                            ScenarioError::new(
                                UNKNOWN_LABEL,
                                format!("sweep value {}: {}", label.join(" "), issue.message),
                            )
                            .with_path(format!("sweep.{path}"))
                        }));
                    }
                }
            }
            scenario.sweep.clear();
            if ok {
                let grid_name = label.join(" ");
                out.push(Expanded {
                    name: if named {
                        format!("{name} {grid_name}")
                    } else {
                        grid_name
                    },
                    scenario,
                    params,
                });
            }
        }
    }
    if errors.is_empty()
        && let Some(issue) = timeseries_rows_issue(out.iter().map(|e| &e.scenario), s.replicates)
    {
        errors.push(ScenarioError::new(UNKNOWN_LABEL, issue.message).with_path(issue.path));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        errors.dedup();
        Err(ScenarioErrors(errors))
    }
}

/// The grid's points: one list of (path, value) per combination.
fn grid(
    sweep: &serde_json::Map<String, serde_json::Value>,
) -> Vec<Vec<(String, serde_json::Value)>> {
    let mut points: Vec<Vec<(String, serde_json::Value)>> = vec![Vec::new()];
    if sweep.is_empty() {
        return Vec::new();
    }
    for (path, values) in sweep {
        let values = values.as_array().cloned().unwrap_or_default();
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((path.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    points
}

/// The last segment of each swept path, or the whole path where two would
/// read the same.
fn short_names(sweep: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    let last = |p: &str| p.rsplit('.').next().unwrap_or(p).to_string();
    let lasts: Vec<String> = sweep.keys().map(|k| last(k)).collect();
    sweep
        .keys()
        .zip(&lasts)
        .map(|(k, l)| {
            if lasts.iter().filter(|x| *x == l).count() > 1 {
                k.clone()
            } else {
                l.clone()
            }
        })
        .collect()
}

/// A swept value as a user wrote it: strings bare, the rest as compact JSON.
fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
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
    base.sweep.clear();
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

#[cfg(test)]
mod sweep_tests {
    use super::*;
    use crate::scenario::load_str;

    const BASE: &str = "name: s\nduration: 10s\nclients:\n  arrival: { kind: poisson, rate: 10/s }\nlayers:\n  - name: api\n    retry: { max_attempts: 2 }\ndependency:\n  concurrency: 2\n  service_time: { dist: exponential, mean: 10ms }\n";

    #[test]
    fn a_sweep_is_the_cartesian_product_in_order() {
        let src = format!(
            "{BASE}sweep:\n  layers.api.retry.max_attempts: [1, 3]\n  layers.api.retry.jitter: [none, full, equal]\n"
        );
        let s = load_str(&src, "s.yaml").unwrap();
        let all = expand_all(&s).unwrap();
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "max_attempts=1 jitter=none",
                "max_attempts=1 jitter=full",
                "max_attempts=1 jitter=equal",
                "max_attempts=3 jitter=none",
                "max_attempts=3 jitter=full",
                "max_attempts=3 jitter=equal",
            ]
        );
        assert_eq!(all[4].scenario.layers[0].retry.max_attempts, 3);
        assert_eq!(
            all[4].params,
            vec![
                ("layers.api.retry.max_attempts".to_string(), "3".to_string()),
                ("layers.api.retry.jitter".to_string(), "full".to_string()),
            ]
        );
        assert!(all.iter().all(|e| e.scenario.sweep.is_empty()));
    }

    #[test]
    fn a_sweep_applies_to_every_explicit_variant() {
        let src = format!(
            "{BASE}variants:\n  - {{ name: a, set: {{}} }}\n  - {{ name: b, set: {{ dependency.concurrency: 4 }} }}\nsweep:\n  clients.arrival.rate: [5/s, 20/s]\n"
        );
        let s = load_str(&src, "s.yaml").unwrap();
        let names: Vec<String> = expand_all(&s)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(
            names,
            ["a rate=5/s", "a rate=20/s", "b rate=5/s", "b rate=20/s"]
        );
    }

    #[test]
    fn bad_sweeps_are_located_errors() {
        let e = load_str(
            &format!("{BASE}sweep:\n  layers.api.retry.max_attempts: 3\n"),
            "s.yaml",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("sweep.layers.api.retry.max_attempts"),
            "{e}"
        );
        let e = load_str(
            &format!("{BASE}sweep:\n  layers.api.retry.max_attempts: [1, 0]\n"),
            "s.yaml",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("s.yaml:12:") && text.contains("max_attempts is 0"),
            "{text}"
        );
    }
}
