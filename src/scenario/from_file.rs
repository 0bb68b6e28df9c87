//! `from: { file, format, ... }` on a layer or a call edge: the policy read
//! from a configuration file of the system (`crate::configs`), then the
//! fields written beside `from` laid over it leaf by leaf, exactly as
//! beside a preset (`presets::fill_layer`); a preset on the same layer or
//! call fills what both leave out. The file is relative to the scenario
//! file. On a call edge the file is read for a call
//! (`configs::Target::Call`, with the replicas of the service called), so
//! that what it says about several hosts (an Envoy cluster's outlier
//! detection, a retry's host predicate) is read too. A `from` that says
//! `resolved: true` (as `scenario.resolved.yaml` writes it) already holds
//! the file's values: the file is not read again.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::ScenarioError;
use super::locate::{LocationIndex, item_labels, layer_labels};
use super::presets;
use super::types::FromFile;
use crate::configs::Target;

/// One policy object of a JSON scenario that may carry a `from`: its field
/// path (`layers.api`, `services.gateway.calls.orders`, `clients.calls`),
/// what it is for, and the object.
struct Site<'v> {
    at: String,
    target: Target,
    map: &'v mut Map<String, Value>,
}

/// The name of a JSON list item (`name`, or for a call the service it
/// calls), "" when it has none.
fn item_name(v: &Value, fallback: &str) -> String {
    v.get("name")
        .or_else(|| v.get(fallback))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The replicas a service of a JSON scenario may have: `autoscale.max`,
/// else `replicas` (default 1); `None` when no service has that name or
/// the count is not a number yet (a later error says so).
fn slots(services: &[Value], name: &str) -> Option<u32> {
    let svc = services
        .iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))?;
    let n = match svc.get("autoscale").and_then(|a| a.get("max")) {
        Some(max) => max.as_u64(),
        None => svc.get("replicas").map_or(Some(1), Value::as_u64),
    };
    n.and_then(|n| u32::try_from(n).ok())
}

/// The balancer of a service of a JSON scenario (`round_robin` when it
/// names none); `None` when no service has that name or its `balancer` is
/// not one (a later error says so).
fn balancer(services: &[Value], name: &str) -> Option<crate::scenario::graph::BalancerKind> {
    let svc = services
        .iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))?;
    match svc.get("balancer") {
        None => Some(crate::scenario::graph::BalancerKind::RoundRobin),
        Some(b) => serde_json::from_value(b.clone()).ok(),
    }
}

/// Every layer and call of `scenario` (a JSON scenario), in file order.
fn sites(scenario: &mut Value) -> Vec<Site<'_>> {
    let Value::Object(root) = scenario else {
        return Vec::new();
    };
    let services: Vec<Value> = match root.get("services") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|s| {
                let mut light = Map::new();
                for k in ["name", "replicas", "autoscale", "balancer"] {
                    if let Some(v) = s.get(k) {
                        light.insert(k.into(), v.clone());
                    }
                }
                Value::Object(light)
            })
            .collect(),
        _ => Vec::new(),
    };
    let call_target = |to: Option<&Value>| {
        let to = to.and_then(Value::as_str);
        Target::Call {
            replicas: to.and_then(|name| slots(&services, name)),
            balancer: to.and_then(|name| balancer(&services, name)),
        }
    };
    let mut out = Vec::new();
    let mut layers = None;
    let mut entry = None;
    let mut graph = None;
    for (key, value) in root.iter_mut() {
        match (key.as_str(), value) {
            ("layers", Value::Array(list)) => layers = Some(list),
            ("clients", Value::Object(clients)) => entry = clients.get_mut("calls"),
            ("services", Value::Array(list)) => graph = Some(list),
            _ => {}
        }
    }
    if let Some(list) = layers {
        let names: Vec<String> = list.iter().map(|l| item_name(l, "name")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        for (layer, at) in list.iter_mut().zip(layer_labels(&names)) {
            if let Value::Object(map) = layer {
                out.push(Site {
                    at,
                    target: Target::Layer,
                    map,
                });
            }
        }
    }
    if let Some(Value::Object(map)) = entry {
        out.push(Site {
            at: "clients.calls".into(),
            target: call_target(map.get("to")),
            map,
        });
    }
    if let Some(list) = graph {
        let names: Vec<String> = list.iter().map(|s| item_name(s, "name")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        for (svc, spath) in list.iter_mut().zip(item_labels("services", &names)) {
            let Some(Value::Array(calls)) = svc.get_mut("calls") else {
                continue;
            };
            let names: Vec<String> = calls.iter().map(|c| item_name(c, "to")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let labels = item_labels(&format!("{spath}.calls"), &names);
            for (call, at) in calls.iter_mut().zip(labels) {
                if let Value::Object(map) = call {
                    let target = call_target(map.get("to"));
                    out.push(Site { at, target, map });
                }
            }
        }
    }
    out
}

/// A warning about what a configuration file says, for the item whose
/// `from` read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FromWarning {
    /// The item, as a path labels it (`layers.edge`,
    /// `services.gateway.calls.orders`, `clients.calls`).
    pub at: String,
    /// The warning, located in the configuration file.
    pub text: String,
}

impl std::fmt::Display for FromWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (from {})", self.text, self.at)
    }
}

/// Merges the file of every layer and call with a `from` into it (a JSON
/// scenario). Returns the errors (in the scenario, about `from` itself; in
/// the configuration file, about what it says); warnings go to `warnings`.
pub fn fill_from_layers(
    scenario: &mut Value,
    dir: Option<&Path>,
    label: &str,
    index: &LocationIndex,
    warnings: &mut Vec<FromWarning>,
) -> Vec<ScenarioError> {
    let mut errors = Vec::new();
    for Site { at, target, map } in sites(scenario) {
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
        let file_label = crate::escape::path(&file);
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
        let mut selector = from.selector();
        selector.target = target;
        match crate::configs::import_text(&text, &file_label, from.format, &selector) {
            Ok(policy) => {
                for w in &policy.warnings {
                    warnings.push(FromWarning {
                        at: at.clone(),
                        text: w.located(&file_label).to_string(),
                    });
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

/// The calls of a typed scenario whose `from` is read from its file (not
/// `resolved: true`): the call's field path (as [`sites`] names it), what
/// the file is read for (the replicas and balancer of the service called,
/// as the scenario now says them) and the `from`.
fn call_froms(s: &super::Scenario) -> Vec<(String, Target, &FromFile)> {
    use super::locate::item_labels;
    let target = |to: &str| {
        let svc = s.services.iter().find(|v| v.name == to);
        Target::Call {
            replicas: svc.map(|v| v.autoscale.as_ref().map_or(v.replicas, |a| a.max)),
            balancer: svc.map(|v| v.balancer),
        }
    };
    let mut out = Vec::new();
    if let Some(c) = &s.clients.calls
        && let Some(f) = c.from.as_ref().filter(|f| !f.resolved)
    {
        out.push(("clients.calls".to_string(), target(&c.to), f));
    }
    let names: Vec<&str> = s.services.iter().map(|v| v.name.as_str()).collect();
    for (svc, spath) in s.services.iter().zip(item_labels("services", &names)) {
        let calls: Vec<&str> = svc.calls.iter().map(super::graph::Call::label).collect();
        let labels = item_labels(&format!("{spath}.calls"), &calls);
        for (call, at) in svc.calls.iter().zip(labels) {
            if let Some(f) = call.from.as_ref().filter(|f| !f.resolved) {
                out.push((at, target(&call.to), f));
            }
        }
    }
    out
}

/// The checks a call's `from` makes against the service it calls (Envoy's
/// success-rate ejection over enough replicas, the panic threshold, the
/// cluster's `lb_policy` against the service's `balancer`, gRPC's
/// pick_first...), made again for every run that will really be simulated:
/// `runs` (each variant and sweep point, named, with the `--set`s applied)
/// whose service called has other replicas or another balancer than the
/// file's scenario `base`, which the file was read for when it loaded. A
/// variant that makes `orders` 10 replicas must not slip past the check
/// that 4 replicas passed. The errors are in the configuration file, after
/// one at the `from` naming the run; each distinct case once.
pub(crate) fn recheck_calls<'s>(
    base: &super::Scenario,
    runs: impl IntoIterator<Item = (&'s str, &'s super::Scenario)>,
    dir: Option<&Path>,
    label: &str,
    index: &LocationIndex,
) -> Vec<ScenarioError> {
    let before: Vec<(String, Target)> = call_froms(base)
        .into_iter()
        .map(|(at, t, _)| (at, t))
        .collect();
    let mut seen: Vec<(String, Target)> = before.clone();
    let mut errors = Vec::new();
    for (run, s) in runs {
        for (at, target, from) in call_froms(s) {
            if seen.iter().any(|(a, t)| *a == at && *t == target) {
                continue;
            }
            seen.push((at.clone(), target));
            let file = config_path(dir, from);
            let file_label = crate::escape::path(&file);
            let Ok(text) = crate::configs::read_file(&file, &file_label) else {
                // Reported when the scenario loaded.
                continue;
            };
            let mut selector = from.selector();
            selector.target = target;
            let Err(e) = crate::configs::import_text(&text, &file_label, from.format, &selector)
            else {
                continue;
            };
            // One mistake, one message: what an earlier run showed already
            // is not shown again.
            let e: Vec<ScenarioError> = e.into_iter().filter(|x| !errors.contains(x)).collect();
            if e.is_empty() {
                continue;
            }
            let Target::Call { replicas, balancer } = target else {
                continue;
            };
            let callee = match (replicas, balancer) {
                (Some(n), Some(b)) => format!(
                    " (the service called has {n} replica{} behind `balancer: {}`)",
                    if n == 1 { "" } else { "s" },
                    serde_json::to_value(b)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                ),
                _ => String::new(),
            };
            let path = format!("{at}.from");
            let head = ScenarioError::new(
                label,
                format!(
                    "in {}{callee}: {} cannot be read as {} for this call (the errors follow); the scenario as written passes, the run does not",
                    if run == super::variants::BASE_VARIANT {
                        "the scenario with its --set overrides".to_string()
                    } else {
                        format!("the run `{run}`")
                    },
                    from.file,
                    from.format
                ),
            )
            .with_path(path.clone());
            errors.push(match index.position(&path) {
                Some((l, c)) => head.at(l, c),
                None => head,
            });
            errors.extend(e);
        }
    }
    errors
}

/// Whether any layer or call of `scenario` (a JSON scenario) has a `from`.
pub fn has_from(scenario: &mut Value) -> bool {
    sites(scenario).iter().any(|s| s.map.contains_key("from"))
}

/// Where `from.file` is: relative to the scenario's folder `dir`.
fn config_path(dir: Option<&Path>, from: &FromFile) -> PathBuf {
    match dir {
        Some(d) => d.join(&from.file),
        None => PathBuf::from(&from.file),
    }
}

/// Every file a scenario read: the scenario file itself and the
/// `from.file` of each layer and call (relative to the scenario's folder).
/// A command's output must never be, hold or lie inside one of them.
pub fn input_files(s: &super::Scenario, scenario_file: Option<&Path>) -> Vec<PathBuf> {
    let dir = scenario_file.and_then(Path::parent);
    let mut files: Vec<PathBuf> = scenario_file.iter().map(|f| f.to_path_buf()).collect();
    for (_, from) in s.from_files() {
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
