//! `from: { file, format, ... }` on a layer: the layer's policy read from a
//! configuration file of the system (`crate::configs`), then the fields
//! written beside `from` laid over it leaf by leaf, exactly as beside a
//! preset (`presets::fill_layer`); a preset on the same layer fills what
//! both leave out. The file is relative to the scenario file. A layer
//! whose `from` says `resolved: true` (as `scenario.resolved.yaml` writes
//! it) already holds the file's values: the file is not read again.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::ScenarioError;
use super::locate::{LocationIndex, layer_labels};
use super::presets;
use super::types::FromFile;

/// Merges the file of every layer with a `from` into the layer (a JSON
/// scenario). Returns the errors (in the scenario, about `from` itself; in
/// the configuration file, about what it says); warnings go to `warnings`.
pub fn fill_from_layers(
    scenario: &mut Value,
    dir: Option<&Path>,
    label: &str,
    index: &LocationIndex,
    warnings: &mut Vec<String>,
) -> Vec<ScenarioError> {
    let mut errors = Vec::new();
    let Some(Value::Array(layers)) = scenario.get_mut("layers") else {
        return errors;
    };
    let names: Vec<String> = layers
        .iter()
        .map(|l| {
            l.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let labels = layer_labels(&names);
    for (layer, at) in layers.iter_mut().zip(&labels) {
        let Value::Object(map) = layer else { continue };
        let Some(raw) = map.get("from") else { continue };
        let path = format!("{at}.from");
        let located = |message: String, p: &str| {
            let e = ScenarioError::new(label, message).with_path(p.to_string());
            match index.position(p) {
                Some((l, c)) => e.at(l, c),
                None => e,
            }
        };
        let from: FromFile = match serde_json::from_value(raw.clone()) {
            Ok(f) => f,
            Err(e) => {
                errors.push(located(
                    format!(
                        "expected {{ file, format, method | route | host | instance | section | profile, ignore }}: {}",
                        super::suggest::serde_words(&strip_position(&e.to_string()))
                    ),
                    &path,
                ));
                continue;
            }
        };
        if from.resolved {
            continue;
        }
        let file = config_path(dir, &from);
        let file_label = file.display().to_string();
        let text = match crate::configs::read_file(&file, &file_label) {
            Ok(t) => t,
            Err(e) => {
                errors.push(located(
                    format!("{}: {}", from.file, e.message),
                    &format!("{path}.file"),
                ));
                continue;
            }
        };
        match crate::configs::import_text(&text, &file_label, from.format, &from.selector()) {
            Ok(policy) => {
                for w in &policy.warnings {
                    warnings.push(format!("{} (from {at})", w.located(&file_label)));
                }
                presets::fill_layer(map, &policy.fragment);
            }
            Err(e) => {
                errors.push(located(
                    format!(
                        "{} cannot be read as {} (the errors follow)",
                        from.file, from.format
                    ),
                    &path,
                ));
                errors.extend(e);
            }
        }
    }
    errors
}

/// Where `from.file` is: relative to the scenario's folder `dir`.
fn config_path(dir: Option<&Path>, from: &FromFile) -> PathBuf {
    match dir {
        Some(d) => d.join(&from.file),
        None => PathBuf::from(&from.file),
    }
}

/// Every file a scenario read: the scenario file itself and each layer's
/// `from.file` (relative to the scenario's folder). A command's output must
/// never be, hold or lie inside one of them.
pub fn input_files(s: &super::Scenario, scenario_file: Option<&Path>) -> Vec<PathBuf> {
    let dir = scenario_file.and_then(Path::parent);
    let mut files: Vec<PathBuf> = scenario_file.iter().map(|f| f.to_path_buf()).collect();
    for from in s.layers.iter().filter_map(|l| l.from.as_ref()) {
        let file = config_path(dir, from);
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

/// serde_json's message without its " at line 1 column 0" (meaningless
/// for an in-memory value).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{load_file, load_str_in, resolved_yaml};

    fn dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs")
    }

    const HEAD: &str =
        "name: from\nduration: 1m\nclients:\n  arrival: { kind: poisson, rate: 100/s }\n";
    const TAIL: &str =
        "dependency:\n  concurrency: 4\n  service_time: { dist: constant, value: 10ms }\n";

    fn load(layers: &str) -> Result<crate::scenario::Scenario, crate::scenario::ScenarioErrors> {
        let src = format!("{HEAD}layers:\n{layers}{TAIL}");
        load_str_in(&src, "s.yaml", Some(&dir()), &[]).map(|l| l.scenario)
    }

    #[test]
    fn fields_beside_from_override_leaf_by_leaf() {
        let s = load(
            "  - name: orders\n    from: { file: service-config.json, format: grpc-service-config, method: orders.v1.Orders/CreateOrder }\n    retry:\n      max_attempts: 2\n      backoff: { base: 300ms }\n",
        )
        .unwrap();
        let r = &s.layers[0].retry;
        assert_eq!(r.max_attempts, 2);
        assert_eq!(r.backoff().base.to_string(), "300ms");
        // The rest is the file's.
        assert_eq!(
            r.backoff().cap.map(|c| c.to_string()).as_deref(),
            Some("1s")
        );
        assert_eq!(
            s.layers[0].total_timeout.map(|t| t.to_string()).as_deref(),
            Some("2500ms")
        );
        assert_eq!(r.budget.as_ref().and_then(|b| b.max_tokens), Some(10.0));
    }

    #[test]
    fn the_resolved_scenario_keeps_from_and_reloads_without_the_file() {
        let s = load(
            "  - name: pay\n    from: { file: application.yml, format: resilience4j, instance: paymentService }\n    instances: 3\n",
        )
        .unwrap();
        let text = resolved_yaml(&s);
        assert!(
            text.contains("from:") && text.contains("resolved: true"),
            "{text}"
        );
        assert!(text.contains("failure_ratio: 0.4"), "{text}");
        // Read back from anywhere: the file is not needed.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("scenario.resolved.yaml");
        std::fs::write(&path, &text).unwrap();
        let back = load_file(&path).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(
            back.layers,
            s.layers
                .iter()
                .cloned()
                .map(|mut l| {
                    l.from.as_mut().unwrap().resolved = true;
                    l
                })
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn errors_point_at_from_or_into_the_file() {
        let e = load("  - name: a\n    from: { file: nope.json, format: grpc-service-config, method: a.B/C }\n").unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("s.yaml:7:19: layers.a.from.file: nope.json: no such file"),
            "{text}"
        );
        let e = load("  - name: a\n    from: { file: service-config.json, format: grpc-service-config, route: x }\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("`route` selects nothing in a grpc-service-config file"),
            "{e}"
        );
        let e = load(
            "  - name: a\n    from: { file: envoy.yaml, format: envoy-route, route: nowhere }\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("no route named `nowhere`"), "{e}");
        assert!(e.to_string().contains("create-order, get-order, /"), "{e}");
    }
}
