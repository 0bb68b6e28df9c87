//! Presets: `preset: NAME` on a layer (or a call of a services graph, or
//! the clients' entry call: every policy object merges the same way) pulls
//! in the exact retry defaults of a real library or system. The constants come from
//! docs/sources/presets.md (its §10 summary table and the section each
//! preset file cites); each preset is a YAML file under `presets/`,
//! embedded in the binary, that holds part of a layer and a comment header
//! naming its sources.
//!
//! Merging: every field a preset defines is used unless the user wrote
//! that field, leaf by leaf inside `retry`, `backoff`, `budget`, `throttle`
//! and `breaker` (so `retry.backoff.base` beside a preset overrides only
//! the base). A budget, throttle, breaker or backoff written with a
//! different `kind` from the preset's replaces the preset's one whole.
//! A preset also defines, as absent, the policy fields it does not name
//! (`total_timeout`, `throttle`, `breaker`, `retry.budget`,
//! `retry.max_elapsed`, the Retry-After knobs, the backoff's `multiplier`,
//! `cap`, `throttle_base` and `truncate_ms`), so that switching presets
//! with `--set layers.X.preset=...` leaves nothing of the old one behind.
//! `timeout`, `instances` and `deadline` stay the user's unless a preset
//! names them.

use serde_json::{Map, Value};

/// One preset: its name, the library it reproduces, a one-line summary, the
/// section of docs/sources/presets.md it comes from, and its YAML text.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub library: &'static str,
    pub summary: &'static str,
    pub yaml: &'static str,
}

macro_rules! preset {
    ($name:literal, $library:literal, $summary:literal) => {
        Preset {
            name: $name,
            library: $library,
            summary: $summary,
            yaml: include_str!(concat!("presets/", $name, ".yaml")),
        }
    };
}

/// Every preset, in `stormsim presets` order.
pub const PRESETS: &[Preset] = &[
    preset!(
        "aws-standard-2.0",
        "AWS SDKs (botocore, Go, Rust, .NET), standard mode",
        "3 attempts, full jitter 1s x2 cap 20s, quota 500 (cost 5, timeout 10)"
    ),
    preset!(
        "aws-standard-2.1",
        "AWS SDKs, standard mode, retry behaviour 2.1 (2026)",
        "3 attempts, full jitter 50ms x2 cap 20s (throttled: 1s), quota 500 (cost 14), x-amz-retry-after clamp"
    ),
    preset!(
        "aws-legacy-botocore",
        "botocore / boto3, legacy mode",
        "5 attempts, full jitter 1s x2 with no cap, no quota, 429/500/502/503/504/509"
    ),
    preset!(
        "aws-adaptive",
        "AWS SDKs, adaptive mode",
        "standard 2.0 plus the client-side CUBIC rate limiter"
    ),
    preset!(
        "grpc-a6",
        "gRPC (gRFC A6, current spec)",
        "4 attempts, 100ms x2 cap 1s +-20%, UNAVAILABLE (503 and connection failures), retry throttling 10/0.1, pushback"
    ),
    preset!(
        "grpc-a6-legacy",
        "gRPC (A6 before 2024: grpc-java < PR #11858, grpc-node)",
        "as grpc-a6 with full jitter"
    ),
    preset!(
        "envoy-default",
        "Envoy router",
        "2 attempts, full jitter 25ms x2 cap 250ms, 3 concurrent retries per cluster, route timeout 15s"
    ),
    preset!(
        "envoy-retry-budget",
        "Envoy router with retry_budget",
        "as envoy-default, retries <= max(20% of active, 3) per cluster"
    ),
    preset!(
        "finagle-default",
        "Finagle (Twitter) default client",
        "immediate requeue of connection failures, RetryBudget 20% + 10/s, <= 20 requeues"
    ),
    preset!(
        "polly-v8-default",
        "Polly v8 (.NET)",
        "4 attempts, constant 2s, no jitter, any failure"
    ),
    preset!(
        "polly-v8-exp-jitter",
        "Polly v8 (.NET), exponential + jitter",
        "4 attempts, DecorrelatedJitterBackoffV2 base 2s"
    ),
    preset!(
        "ms-http-standard",
        "Microsoft.Extensions.Http.Resilience standard handler",
        "4 attempts DJV2 2s, attempt 10s, total 30s, breaker 10%/100/30s/5s, Retry-After exact"
    ),
    preset!(
        "resilience4j-default",
        "Resilience4j",
        "3 attempts, constant 500ms, all failures"
    ),
    preset!(
        "resilience4j-exp-random",
        "Resilience4j, exponential random backoff",
        "3 attempts, 500ms x1.5 (whole ms) +-50%"
    ),
    preset!(
        "tenacity-random-exponential",
        "Tenacity (Python), wait_random_exponential",
        "unbounded attempts, full jitter 1s x2, no cap"
    ),
    preset!(
        "cenkalti-v4",
        "cenkalti/backoff v4 (Go)",
        "500ms x1.5 cap 60s +-50%, stop after 15 min elapsed"
    ),
    preset!(
        "backon-exponential",
        "backon (Rust), ExponentialBuilder::default()",
        "4 attempts, 1, 2, 4 s, no jitter"
    ),
    preset!(
        "k8s-workqueue-default",
        "Kubernetes client-go workqueue",
        "unbounded, 5ms x2 cap 1000s, global bucket 10/s burst 100"
    ),
    preset!(
        "sre-retry-budget",
        "Google SRE book retry budget",
        "3 attempts, full jitter, retries < 10% of requests per client"
    ),
    preset!(
        "axios-retry-default",
        "axios-retry (Node.js)",
        "4 attempts, no delay, network errors and 5xx, Retry-After honoured"
    ),
];

/// The preset called `name`.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Every preset name, in order.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// Mappings whose fields merge one by one (the others are single values).
const STRUCT_KEYS: &[&str] = &[
    "retry",
    "backoff",
    "budget",
    "throttle",
    "breaker",
    "outlier_detection",
];

/// Policy fields a preset defines as absent when it does not name them,
/// by the mapping they belong to. `truncate_ms` is a flag (absent = false).
const IMPLICIT: &[(&str, &[&str])] = &[
    ("", &["total_timeout", "throttle", "breaker"]),
    (
        "retry",
        &[
            "retry_after_cap",
            "retry_after_jitter",
            "max_elapsed",
            "budget",
        ],
    ),
    (
        "backoff",
        &["multiplier", "cap", "throttle_base", "truncate_ms"],
    ),
];

impl Preset {
    /// The preset as a layer fragment, with every policy field it defines,
    /// including the implicit absent ones (`null`, or `false` for flags).
    /// `None` only if the embedded YAML were broken (a test guards that).
    pub fn fragment(&self) -> Option<Map<String, Value>> {
        let value: Value = serde_saphyr::from_str(self.yaml).ok()?;
        let Value::Object(mut map) = value else {
            return None;
        };
        add_implicit(&mut map, "");
        Some(map)
    }
}

fn add_implicit(map: &mut Map<String, Value>, here: &str) {
    for (at, fields) in IMPLICIT {
        if *at == here {
            for f in *fields {
                let empty = if *f == "truncate_ms" {
                    Value::Bool(false)
                } else {
                    Value::Null
                };
                map.entry(f.to_string()).or_insert(empty);
            }
        }
    }
    for key in ["retry", "backoff"] {
        if let Some(Value::Object(inner)) = map.get_mut(key) {
            add_implicit(inner, key);
        }
    }
}

/// Whether two mappings name different `kind`s (a different backoff,
/// budget, throttle or breaker).
fn kinds_differ(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    matches!((a.get("kind"), b.get("kind")), (Some(x), Some(y)) if x != y)
}

/// Fills `layer` (as the user wrote it) with the preset's fields the user
/// did not write.
pub fn fill_layer(layer: &mut Map<String, Value>, preset: &Map<String, Value>) {
    for (key, pv) in preset {
        match layer.get_mut(key) {
            None => {
                layer.insert(key.clone(), pv.clone());
            }
            Some(Value::Object(user)) if STRUCT_KEYS.contains(&key.as_str()) => {
                if let Value::Object(p) = pv
                    && !kinds_differ(user, p)
                {
                    fill_layer(user, p);
                }
            }
            Some(_) => {}
        }
    }
}

/// Replaces every field the preset defines in `layer` (a preset set by a
/// variant or `--set` after loading). Mappings are replaced whole, except
/// `retry`, whose fields are replaced one by one.
pub fn overwrite_layer(layer: &mut Map<String, Value>, preset: &Map<String, Value>) {
    for (key, pv) in preset {
        match (layer.get_mut(key), pv) {
            (Some(Value::Object(user)), Value::Object(p)) if key == "retry" => {
                overwrite_layer(user, p);
            }
            _ => {
                layer.insert(key.clone(), pv.clone());
            }
        }
    }
}

/// Writes explicitly, in a serialised layer, the preset-defined fields that
/// serialisation left out (absent options, false flags), so that reading
/// the layer back with its preset gives the same values.
pub fn make_explicit(layer: &mut Map<String, Value>, preset: &Map<String, Value>) {
    for (key, pv) in preset {
        match layer.get_mut(key) {
            None => {
                let empty = if pv.is_boolean() {
                    Value::Bool(false)
                } else {
                    Value::Null
                };
                layer.insert(key.clone(), empty);
            }
            Some(Value::Object(user)) if STRUCT_KEYS.contains(&key.as_str()) => {
                if let Value::Object(p) = pv
                    && !kinds_differ(user, p)
                {
                    make_explicit(user, p);
                }
            }
            Some(_) => {}
        }
    }
}

/// Where a policy object (a layer, or a call of a services graph) is in a
/// scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyAt {
    /// `layers.i`.
    Layer(usize),
    /// `clients.calls`.
    Entry,
    /// `services.i.calls.j`.
    Call { service: usize, call: usize },
}

/// One step of a path through a scenario's JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

impl PolicyAt {
    /// The steps from the scenario's root to the policy object.
    pub fn steps(self) -> Vec<Step> {
        let key = |k: &str| Step::Key(k.to_string());
        match self {
            PolicyAt::Layer(i) => vec![key("layers"), Step::Index(i)],
            PolicyAt::Entry => vec![key("clients"), key("calls")],
            PolicyAt::Call { service, call } => vec![
                key("services"),
                Step::Index(service),
                key("calls"),
                Step::Index(call),
            ],
        }
    }
}

/// Every policy object of `scenario` (a JSON scenario) as a mapping, with
/// where it is: the layers, the clients' entry call and every service's
/// calls, in file order.
fn policies_mut(scenario: &mut Value) -> Vec<(PolicyAt, &mut Map<String, Value>)> {
    let Value::Object(root) = scenario else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut services = None;
    for (key, value) in root.iter_mut() {
        match (key.as_str(), value) {
            ("layers", Value::Array(layers)) => {
                for (i, layer) in layers.iter_mut().enumerate() {
                    if let Value::Object(map) = layer {
                        out.push((PolicyAt::Layer(i), map));
                    }
                }
            }
            ("clients", Value::Object(clients)) => {
                if let Some(Value::Object(map)) = clients.get_mut("calls") {
                    out.push((PolicyAt::Entry, map));
                }
            }
            ("services", Value::Array(list)) => services = Some(list),
            _ => {}
        }
    }
    for (si, svc) in services.into_iter().flatten().enumerate() {
        let Some(Value::Array(calls)) = svc.get_mut("calls") else {
            continue;
        };
        for (ci, call) in calls.iter_mut().enumerate() {
            if let Value::Object(map) = call {
                out.push((
                    PolicyAt::Call {
                        service: si,
                        call: ci,
                    },
                    map,
                ));
            }
        }
    }
    out
}

/// Whether any policy object of `scenario` (a JSON scenario) has a
/// `preset`.
pub fn has_preset(scenario: &mut Value) -> bool {
    policies_mut(scenario)
        .iter()
        .any(|(_, map)| map.contains_key("preset"))
}

/// Applies `f` with its preset's fragment to every policy object of
/// `scenario` (a JSON scenario: layers, `clients.calls`, every service's
/// calls) that names a known preset and passes `pick`.
pub fn for_preset_policies(
    scenario: &mut Value,
    mut pick: impl FnMut(PolicyAt) -> bool,
    f: fn(&mut Map<String, Value>, &Map<String, Value>),
) {
    for (at, map) in policies_mut(scenario) {
        let Some(fragment) = map
            .get("preset")
            .and_then(Value::as_str)
            .and_then(find)
            .and_then(Preset::fragment)
        else {
            continue;
        };
        if pick(at) {
            f(map, &fragment);
        }
    }
}

#[cfg(test)]
mod merge_tests;
#[cfg(test)]
mod tests;
