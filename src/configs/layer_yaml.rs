//! `stormsim import` output: an imported policy as a layer to paste under
//! `layers:` of a scenario (or, with `--to`, as a call edge to paste under
//! a service's `calls:`), in the scenario format's field order, each value
//! with a comment saying where in the file it came from (or that it is the
//! format's default, or fixed by the system).

use serde_json::{Map, Value};

use super::Policy;
use super::edit::{Lit, render};
use super::tree::Syntax;
use crate::scenario::graph::Call;
use crate::scenario::types::Layer;

/// The column comments start at.
const COMMENT_COLUMN: usize = 44;

/// The layer `name` as YAML text: a sequence item (`- name: ...`) with the
/// policy's fields, two spaces in.
pub fn layer_yaml(policy: &Policy, name: &str, header: &[String]) -> String {
    let mut out = String::new();
    for h in header {
        out += &format!("# {h}\n");
    }
    out += &format!("- name: {}\n", scalar(&Value::String(name.to_string())));
    let ordered = in_layer_order(&policy.fragment);
    emit(policy, &ordered, "", 2, &mut out);
    out
}

/// The call edge to the service `to` (named `name` when given) as YAML
/// text: a sequence item (`- to: ...`) with the policy's fields, two
/// spaces in.
pub fn call_yaml(policy: &Policy, to: &str, name: Option<&str>, header: &[String]) -> String {
    let mut out = String::new();
    for h in header {
        out += &format!("# {h}\n");
    }
    out += &format!("- to: {}\n", scalar(&Value::String(to.to_string())));
    if let Some(n) = name {
        out += &format!("  name: {}\n", scalar(&Value::String(n.to_string())));
    }
    let ordered = in_call_order(&policy.fragment);
    emit(policy, &ordered, "", 2, &mut out);
    out
}

/// The fragment's keys in the order a `Call` serialises its fields.
fn in_call_order(fragment: &Map<String, Value>) -> Map<String, Value> {
    in_serialised_order::<Call>(fragment, "to")
}

/// The fragment's keys in the order a `Layer` serialises its fields.
fn in_layer_order(fragment: &Map<String, Value>) -> Map<String, Value> {
    in_serialised_order::<Layer>(fragment, "name")
}

/// The fragment's keys in the order `T` serialises its fields, read with a
/// placeholder for the one field `T` requires (`required`); the fragment
/// as it is when it does not read as a `T`.
fn in_serialised_order<T>(fragment: &Map<String, Value>, required: &str) -> Map<String, Value>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let mut m = fragment.clone();
    m.insert(required.into(), Value::String("x".into()));
    let order = serde_json::from_value::<T>(Value::Object(m))
        .ok()
        .and_then(|t| serde_json::to_value(t).ok());
    match order {
        Some(Value::Object(o)) => reorder(fragment, &o),
        _ => fragment.clone(),
    }
}

fn reorder(fragment: &Map<String, Value>, order: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, ov) in order {
        if let Some(v) = fragment.get(k) {
            let v = match (v, ov) {
                (Value::Object(f), Value::Object(o)) => Value::Object(reorder(f, o)),
                _ => v.clone(),
            };
            out.insert(k.clone(), v);
        }
    }
    for (k, v) in fragment {
        if !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => render(&Lit::Str(s.clone()), Syntax::Yaml, None),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(scalar).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => format!(
            "{{ {} }}",
            m.iter()
                .map(|(k, v)| format!("{k}: {}", scalar(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// The origin of `path`, or of its nearest ancestor that has one.
fn origin_text(policy: &Policy, path: &str) -> Option<String> {
    let mut p = path;
    loop {
        if let Some(o) = policy.origins.get(p) {
            return Some(match o.pos {
                Some((line, _)) => format!("{}, line {line}", o.key),
                None => o.key.clone(),
            });
        }
        p = &p[..p.rfind('.')?];
    }
}

fn emit(policy: &Policy, map: &Map<String, Value>, prefix: &str, indent: usize, out: &mut String) {
    for (k, v) in map {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let pad = " ".repeat(indent);
        match v {
            Value::Null | Value::Bool(false) => {}
            // A jitter factor reads best inline.
            Value::Object(inner)
                if inner.values().any(|v| !v.is_null()) && path != "retry.jitter" =>
            {
                out.push_str(&format!("{pad}{k}:\n"));
                emit(policy, inner, &path, indent + 2, out);
            }
            Value::Object(_) if path != "retry.jitter" => {}
            _ => {
                let line = format!("{pad}{k}: {}", scalar(v));
                match origin_text(policy, &path) {
                    Some(o) => {
                        let width = COMMENT_COLUMN.max(line.chars().count() + 2);
                        out.push_str(&format!("{line:<width$}# {o}\n"));
                    }
                    None => out.push_str(&format!("{line}\n")),
                }
            }
        }
    }
}

/// Checks that `text` (the layer `name` that [`layer_yaml`] printed for
/// `policy`, read from the file `label`) loads when pasted under
/// `layers:` of a scenario, so that `import` never prints a layer the
/// scenario format refuses. A field the scenario refuses is reported at
/// the setting of the file it came from (its line, column and key path),
/// when the policy knows it.
pub fn check_loads(
    text: &str,
    policy: &Policy,
    name: &str,
    label: &str,
) -> Result<(), Vec<crate::scenario::ScenarioError>> {
    let scenario = format!(
        "name: import-check\nduration: 1m\nclients:\n  arrival: {{ kind: poisson, rate: 1/s }}\n\
         layers:\n{text}\
         dependency: {{ concurrency: 1, service_time: {{ dist: constant, value: 1ms }} }}\n"
    );
    refused(
        &scenario,
        policy,
        &format!("layers.{name}."),
        "layer",
        label,
    )
}

/// As [`check_loads`], for the call edge `text` that [`call_yaml`]
/// printed: pasted under the `calls:` of a service calling `to`, a
/// service with `replicas` replicas (1 when not known).
pub fn check_call_loads(
    text: &str,
    policy: &Policy,
    to: &str,
    name: Option<&str>,
    replicas: Option<u32>,
    label: &str,
) -> Result<(), Vec<crate::scenario::ScenarioError>> {
    let caller = if to == "import-caller" {
        "import-caller-2"
    } else {
        "import-caller"
    };
    let indented: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("      {l}\n"))
        .collect();
    let callee = scalar(&Value::String(to.to_string()));
    let scenario = format!(
        "name: import-check\nduration: 1m\nclients:\n  arrival: {{ kind: poisson, rate: 1/s }}\n  calls: {caller}\n\
         services:\n  - name: {caller}\n    calls:\n{indented}\
         \x20 - name: {callee}\n    replicas: {}\n    concurrency: 1\n    service_time: {{ dist: constant, value: 1ms }}\n",
        replicas.unwrap_or(1).max(1)
    );
    let call = name.unwrap_or(to);
    let segment = if crate::scenario::locate::usable_layer_name(call) {
        call.to_string()
    } else {
        "0".to_string()
    };
    refused(
        &scenario,
        policy,
        &format!("services.{caller}.calls.{segment}."),
        "call",
        label,
    )
}

/// The errors of loading `scenario`, each about a field below `prefix`
/// located at the setting of the file it came from.
fn refused(
    scenario: &str,
    policy: &Policy,
    prefix: &str,
    what_it_is: &str,
    label: &str,
) -> Result<(), Vec<crate::scenario::ScenarioError>> {
    use crate::scenario::ScenarioError;
    let Err(errors) = crate::scenario::load_str(scenario, "<import>") else {
        return Ok(());
    };
    Err(errors
        .0
        .into_iter()
        .map(|e| {
            let field = e.path.as_deref().and_then(|p| p.strip_prefix(prefix));
            // The origin of the field, or of the nearest field above it.
            let origin = field.and_then(|f| {
                let mut f = f;
                loop {
                    if let Some(o) = policy.origins.get(f) {
                        return Some(o);
                    }
                    f = &f[..f.rfind('.')?];
                }
            });
            let message = match field {
                Some(f) => format!(
                    "gives the {what_it_is}'s `{f}` a value a scenario refuses ({}); \
                     nothing was printed: change the setting in the file",
                    e.message
                ),
                None => format!(
                    "gives the {what_it_is} a value a scenario refuses ({}); \
                     nothing was printed: change the setting in the file",
                    e.message
                ),
            };
            let mut out = ScenarioError::new(label, message);
            if let Some(o) = origin {
                out = out.with_path(o.key.clone());
                if let Some((line, column)) = o.pos {
                    out.line = Some(line);
                    out.column = Some(column);
                }
            }
            out
        })
        .collect())
}
