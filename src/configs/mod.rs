//! Retry settings read from, and written back to, the files where real
//! systems keep them: a gRPC service config, an Envoy route configuration,
//! an Istio VirtualService, a Linkerd ServiceProfile, a Spring Boot
//! `application.yml` for Resilience4j, an `appsettings.json` for
//! Microsoft.Extensions.Http.Resilience, the AWS SDKs' shared `config`
//! file (README, "Settings
//! from configuration files"; the formats' keys, units and defaults are in
//! docs/sources/config-formats.md with their upstream sources).
//!
//! Reading (`import`): the file and a selector (which method, route or
//! instance) give a [`Policy`]: a layer fragment, exactly like a preset's,
//! holding every policy field the format decides (a field it decides as
//! absent is `null`), the file position each value came from, and
//! warnings. A setting stormsim does not model is an error naming the key
//! and its position, unless ignoring it cannot change a result (a name, a
//! log option: a warning) or the user listed the key in `ignore`.
//!
//! Writing (`export`): the values of a tuned layer go back into the file as
//! a minimal textual edit (`edit`): only the values that differ from what
//! the file gives now are touched, each in its own span, and the edited
//! file is read again to prove it gives exactly the tuned values.
//!
//! This module knows files and the scenario format's layer fields; the
//! model knows nothing of it.

pub mod aws;
pub mod durations;
pub mod edit;
pub mod envoy;
pub mod envoy_outlier;
pub mod grpc;
pub mod istio;
pub mod layer_yaml;
pub mod linkerd;
pub mod ms_resilience;
pub(crate) mod placeholders;
pub mod resilience4j;
pub mod tree;
pub mod write;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scenario::ScenarioError;
use tree::{Doc, Node, Pos, Syntax};

/// The formats stormsim reads and writes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// gRPC service config JSON: `methodConfig` with retryPolicy,
    /// hedgingPolicy and timeout; `retryThrottling`.
    GrpcServiceConfig,
    /// Envoy route configuration (a bootstrap or an RDS file): the route's
    /// retry_policy and timeout, its cluster's circuit breakers.
    EnvoyRoute,
    /// Istio `VirtualService`: an `http` route's `retries` and `timeout`
    /// (Istio's default retry policy when `retries` is absent).
    IstioVirtualservice,
    /// Linkerd `ServiceProfile`: a route's `isRetryable` and `timeout`, the
    /// profile's `retryBudget`.
    LinkerdServiceprofile,
    /// Spring Boot `application.yml` with `resilience4j.retry` (and the
    /// circuit breaker, time limiter and bulkhead of the same instance).
    Resilience4j,
    /// `appsettings.json` with the options of
    /// Microsoft.Extensions.Http.Resilience's standard resilience handler
    /// (Polly v8): Retry, AttemptTimeout, TotalRequestTimeout, CircuitBreaker.
    MsResilience,
    /// The AWS SDKs' shared config file (`~/.aws/config`): a profile's
    /// `retry_mode` and `max_attempts`.
    AwsConfig,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::GrpcServiceConfig => "grpc-service-config",
            Format::EnvoyRoute => "envoy-route",
            Format::IstioVirtualservice => "istio-virtualservice",
            Format::LinkerdServiceprofile => "linkerd-serviceprofile",
            Format::Resilience4j => "resilience4j",
            Format::MsResilience => "ms-resilience",
            Format::AwsConfig => "aws-config",
        }
    }

    pub fn syntax(self) -> Syntax {
        match self {
            Format::GrpcServiceConfig | Format::MsResilience => Syntax::Json,
            Format::AwsConfig => Syntax::Ini,
            Format::EnvoyRoute
            | Format::IstioVirtualservice
            | Format::LinkerdServiceprofile
            | Format::Resilience4j => Syntax::Yaml,
        }
    }

    /// The selector key this format takes, and whether it is required.
    pub fn selector_key(self) -> (&'static str, bool) {
        match self {
            Format::GrpcServiceConfig => ("method", true),
            Format::EnvoyRoute | Format::LinkerdServiceprofile => ("route", true),
            Format::IstioVirtualservice => ("host", true),
            Format::Resilience4j => ("instance", true),
            Format::MsResilience => ("section", true),
            Format::AwsConfig => ("profile", true),
        }
    }

    /// Every selector key this format takes: the main one, and those that
    /// narrow it down when a file holds several candidates (Istio: `route`
    /// among the host's `http` routes; Envoy: `virtual_host`, when two
    /// virtual hosts have a route of the same name or match; Linkerd:
    /// `profile`, when two ServiceProfiles of a file have the same route).
    pub fn selector_keys(self) -> &'static [&'static str] {
        match self {
            Format::GrpcServiceConfig => &["method"],
            Format::EnvoyRoute => &["route", "virtual_host"],
            Format::IstioVirtualservice => &["host", "route"],
            Format::LinkerdServiceprofile => &["route", "profile"],
            Format::Resilience4j => &["instance"],
            Format::MsResilience => &["section"],
            Format::AwsConfig => &["profile"],
        }
    }
}

impl Format {
    /// "a" or "an", for "a gRPC file", "an envoy-route file".
    pub fn article(self) -> &'static str {
        if self.name().starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which policy of the file: the keys for the format (`method`, `route`,
/// `host`, `instance`), and the unmodelled keys the user accepts being ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// grpc-service-config: `pkg.Service/Method`, or `pkg.Service` for the
    /// service's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// envoy-route: the route's `name`, or its match prefix or path;
    /// istio-virtualservice: the `http` route's `name`, or `#N` for the
    /// route at index N of `spec.http` (from 0, as the key path
    /// `spec.http[N]` counts; the only way to pick an unnamed route);
    /// linkerd-serviceprofile: the route's `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// envoy-route: the virtual host of the route, by its `name` or one of
    /// its `domains` (needed when routes of two virtual hosts have the
    /// same name or match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_host: Option<String>,
    /// istio-virtualservice: a destination host of the route, or one of
    /// the VirtualService's `hosts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// resilience4j: the instance name (its `baseConfig` is followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// ms-resilience: the configuration section path, `:` between keys
    /// (`HttpClients:Orders:Resilience`), compared without regard to case
    /// as .NET's configuration does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// aws-config: the profile (`default`, or NAME of `[profile NAME]`);
    /// linkerd-serviceprofile: the ServiceProfile's `metadata.name` (needed
    /// when two profiles of the file have a route of the same name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Keys of the file stormsim does not model that may be left out of the
    /// simulation all the same (by key name, or by the dotted key path an
    /// error shows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// What the policy is for: a chain's layer, or a call edge of a
    /// services graph (not a key of the file's selector: where `from`
    /// stands, or `import --to`, decides it).
    #[serde(skip)]
    pub target: Target,
}

/// What an imported policy is for. A layer calls one host, so what a
/// configuration says about several hosts (where a retry goes, which
/// hosts are ejected) changes nothing; a call edge goes to a service that
/// may have several replicas, and then it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Target {
    /// A chain's layer.
    #[default]
    Layer,
    /// A call edge of a services graph to a service with `replicas`
    /// replicas (with `autoscale`, its `max`) behind `balancer`; `None`:
    /// not known (`import --to` without `--replicas`), so any count or
    /// balancer is possible.
    Call {
        replicas: Option<u32>,
        balancer: Option<crate::scenario::graph::BalancerKind>,
    },
}

impl Target {
    pub fn is_call(self) -> bool {
        matches!(self, Target::Call { .. })
    }
}

impl Selector {
    /// The selector value for `format`.
    pub fn value(&self, format: Format) -> Option<&str> {
        match format {
            Format::GrpcServiceConfig => self.method.as_deref(),
            Format::EnvoyRoute | Format::LinkerdServiceprofile => self.route.as_deref(),
            Format::IstioVirtualservice => self.route.as_deref().or(self.host.as_deref()),
            Format::Resilience4j => self.instance.as_deref(),
            Format::MsResilience => self.section.as_deref(),
            Format::AwsConfig => self.profile.as_deref(),
        }
    }

    /// Keys set that `format` does not take (a `route:` given for a gRPC
    /// file), by name.
    pub fn foreign_keys(&self, format: Format) -> Vec<&'static str> {
        let own = format.selector_keys();
        self.keys()
            .into_iter()
            .filter(|(k, v)| v.is_some() && !own.contains(k))
            .map(|(k, _)| k)
            .collect()
    }

    /// The keys that name a policy in a file, by name, with their values.
    fn keys(&self) -> [(&'static str, &Option<String>); 7] {
        [
            ("method", &self.method),
            ("route", &self.route),
            ("virtual_host", &self.virtual_host),
            ("host", &self.host),
            ("instance", &self.instance),
            ("section", &self.section),
            ("profile", &self.profile),
        ]
    }

    /// Whether any key naming a policy is given.
    pub fn names_any(&self) -> bool {
        self.keys().iter().any(|(_, v)| v.is_some())
    }

    /// Whether `other` says what this one says wherever this one says
    /// something (a `from:`'s selector against the flags given).
    pub fn agrees_with(&self, other: &Selector) -> bool {
        self.keys()
            .iter()
            .zip(other.keys())
            .all(|((_, mine), (_, theirs))| mine.is_none() || *mine == theirs)
    }
}

/// Where a value of a policy came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file's key path (`methodConfig[1].retryPolicy.maxAttempts`), or
    /// what stands for it (`default of initialBackoff`).
    pub key: String,
    /// `None`: the format's default, not written in the file.
    pub pos: Option<Pos>,
}

/// A problem or a remark about one place in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub pos: Option<Pos>,
    /// The file's key path.
    pub key: String,
    pub message: String,
}

impl Finding {
    /// As a located error (or warning) about `file`.
    pub fn located(&self, file: &str) -> ScenarioError {
        let e = ScenarioError::new(file, &self.message).with_path(self.key.clone());
        match self.pos {
            Some((l, c)) => e.at(l, c),
            None => e,
        }
    }
}

/// What a file says about one layer's policy.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// The layer fragment: every field the format decides, `null` for one
    /// it decides as absent (as a preset's fragment).
    pub fragment: Map<String, Value>,
    /// Each leaf's origin, by the layer's dotted field path.
    pub origins: BTreeMap<String, Origin>,
    /// Settings read but left out, harmlessly (or because `ignore` says so).
    pub warnings: Vec<Finding>,
    /// What was selected, for people: `methodConfig[1] (line 12)`.
    pub selected: String,
}

/// The policy being read, and the errors found on the way.
pub(crate) struct Builder<'a> {
    pub policy: Policy,
    pub errors: Vec<Finding>,
    ignore: &'a [String],
    /// What the policy is for (a layer, a call edge).
    pub target: Target,
    /// Reading a part of the file only to find what makes the file's own
    /// system refuse the whole file (gRPC: a methodConfig the selected
    /// method does not use): what stormsim does not model there changes
    /// nothing, so `unmodelled` says nothing.
    pub check_only: bool,
}

impl<'a> Builder<'a> {
    pub fn new(selector: &'a Selector) -> Self {
        Builder {
            policy: Policy::default(),
            errors: Vec::new(),
            ignore: &selector.ignore,
            target: selector.target,
            check_only: false,
        }
    }

    /// Sets the layer field at dotted `path`.
    pub fn set(&mut self, path: &str, value: Value, origin: Origin) {
        set_path(&mut self.policy.fragment, path, value);
        self.policy.origins.insert(path.to_string(), origin);
    }

    /// Decides the layer field at `path` as absent.
    pub fn absent(&mut self, path: &str) {
        set_path(&mut self.policy.fragment, path, Value::Null);
    }

    pub fn warn(&mut self, key: impl Into<String>, pos: Option<Pos>, message: impl Into<String>) {
        self.policy.warnings.push(Finding {
            pos,
            key: key.into(),
            message: message.into(),
        });
    }

    pub fn error(&mut self, key: impl Into<String>, pos: Option<Pos>, message: impl Into<String>) {
        self.errors.push(Finding {
            pos,
            key: key.into(),
            message: message.into(),
        });
    }

    /// A setting that can change results and that stormsim does not model:
    /// an error, unless the user's `ignore` names it (then a warning).
    pub fn unmodelled(&mut self, key: &str, pos: Option<Pos>, what: &str) {
        if self.check_only {
            return;
        }
        let name = key.rsplit(['.', '[', ':']).next().unwrap_or(key);
        let name = name.trim_end_matches(']');
        if self.ignore.iter().any(|i| i == key || i == name) {
            self.warn(
                key,
                pos,
                format!("not modelled, ignored as `ignore` asks: {what}"),
            );
        } else {
            self.error(
                key,
                pos,
                format!("not modelled: {what}; it can change the results, so stormsim will not leave it out silently (list `{name}` in the selector's `ignore` to simulate without it)"),
            );
        }
    }
}

/// Sets `path` (dotted) in a nested map, creating the mappings on the way.
pub(crate) fn set_path(map: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            map.insert(path.to_string(), value);
        }
        Some((head, rest)) => {
            let inner = map
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !inner.is_object() {
                *inner = Value::Object(Map::new());
            }
            if let Value::Object(m) = inner {
                set_path(m, rest, value);
            }
        }
    }
}

/// The value at dotted `path` of a nested map.
pub(crate) fn get_path<'v>(map: &'v Map<String, Value>, path: &str) -> Option<&'v Value> {
    match path.split_once('.') {
        None => map.get(path),
        Some((head, rest)) => match map.get(head) {
            Some(Value::Object(m)) => get_path(m, rest),
            _ => None,
        },
    }
}

/// The leaves of a layer fragment, by dotted path, normalised for
/// comparison: nulls and `false` left out (both mean "absent"), numbers as
/// floats, outcome lists sorted.
pub(crate) fn leaves(map: &Map<String, Value>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    fn walk(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
        match v {
            Value::Null | Value::Bool(false) => {}
            Value::Object(m) => {
                for (k, v) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, v, out);
                }
            }
            Value::Number(n) => {
                out.insert(
                    prefix.to_string(),
                    n.as_f64().map_or(v.clone(), Value::from),
                );
            }
            Value::Array(items) => {
                let mut items: Vec<Value> = items
                    .iter()
                    .map(|i| match i {
                        Value::Number(n) => Value::String(n.to_string()),
                        other => other.clone(),
                    })
                    .collect();
                items.sort_by_key(|a| a.to_string());
                items.dedup();
                out.insert(prefix.to_string(), Value::Array(items));
            }
            other => {
                out.insert(prefix.to_string(), other.clone());
            }
        }
    }
    walk("", &Value::Object(map.clone()), &mut out);
    out
}

/// The leaf paths whose values differ between two fragments, among the
/// fields `owned` (top-level keys) names.
pub(crate) fn changed_leaves(
    current: &Map<String, Value>,
    wanted: &Map<String, Value>,
    owned: &[String],
) -> Vec<String> {
    let (a, b) = (leaves(current), leaves(wanted));
    let top = |p: &str| p.split('.').next().unwrap_or(p).to_string();
    let mut out: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|p| owned.contains(&top(p)))
        .filter(|p| a.get(*p) != b.get(*p))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Reads `text` (the file `label`) as `format` and selects one policy.
pub fn import_text(
    text: &str,
    label: &str,
    format: Format,
    selector: &Selector,
) -> Result<Policy, Vec<ScenarioError>> {
    let doc = parse(text, label, format)?;
    import_doc(&doc, label, format, selector)
}

fn parse(text: &str, label: &str, format: Format) -> Result<Doc, Vec<ScenarioError>> {
    // gRPC reads a service config as strict JSON: grpc-go
    // `parseServiceConfig` (service_config.go) with encoding/json's
    // `json.Unmarshal`, grpc core `JsonParse` (json_reader.cc), grpc-java
    // `JsonParser` (a non-lenient Gson JsonReader): a comment or a
    // trailing comma refuses the whole config, so it is refused here at
    // its position rather than read as .NET's reader would.
    // A byte order mark is not JSON either: Go's encoding/json refuses it
    // ("invalid character 'ï' looking for beginning of value"), so grpc-go
    // refuses the config (.NET strips it, so an appsettings.json keeps it).
    if format == Format::GrpcServiceConfig && text.starts_with('\u{feff}') {
        return Err(vec![
            ScenarioError::new(
                label,
                "not valid JSON: a byte order mark (U+FEFF) before the service config; gRPC reads a service config as strict JSON (grpc-go's encoding/json refuses it) and refuses the whole config with it: save the file without the BOM",
            )
            .at(1, 1),
        ]);
    }
    if format == Format::GrpcServiceConfig
        && let Some(((l, c), what)) = tree::json_extension(text)
    {
        return Err(vec![
            ScenarioError::new(
                label,
                format!("not valid JSON: {what}; gRPC reads a service config as strict JSON and refuses the whole config with it"),
            )
            .at(l, c),
        ]);
    }
    Doc::parse(text, format.syntax()).map_err(|e| {
        let err = ScenarioError::new(
            label,
            format!(
                "not valid {}: {}",
                match format.syntax() {
                    Syntax::Json => "JSON",
                    Syntax::Yaml => "YAML",
                    Syntax::Ini => "INI",
                },
                e.message
            ),
        );
        vec![match e.pos {
            Some((l, c)) => err.at(l, c),
            None => err,
        }]
    })
}

pub(crate) fn import_doc(
    doc: &Doc,
    label: &str,
    format: Format,
    selector: &Selector,
) -> Result<Policy, Vec<ScenarioError>> {
    let mut foreign: Vec<ScenarioError> = selector
        .foreign_keys(format)
        .into_iter()
        .map(|k| {
            ScenarioError::new(
                label,
                format!(
                    "`{k}` selects nothing in {} {format} file; its selector is `{}`",
                    format.article(),
                    format.selector_key().0
                ),
            )
        })
        .collect();
    if !foreign.is_empty() {
        return Err(std::mem::take(&mut foreign));
    }
    let mut b = Builder::new(selector);
    match format {
        Format::GrpcServiceConfig => grpc::read(doc, selector, &mut b),
        Format::EnvoyRoute => envoy::read(doc, selector, &mut b),
        Format::IstioVirtualservice => istio::read(doc, selector, &mut b),
        Format::LinkerdServiceprofile => linkerd::read(doc, selector, &mut b),
        Format::Resilience4j => resilience4j::read(doc, selector, &mut b),
        Format::MsResilience => ms_resilience::read(doc, selector, &mut b),
        Format::AwsConfig => aws::read(doc, selector, &mut b),
    }
    if b.errors.is_empty() {
        Ok(b.policy)
    } else {
        Err(b.errors.iter().map(|f| f.located(label)).collect())
    }
}

/// Reads the file at `path` (a regular file, at most [`MAX_FILE_BYTES`]).
pub fn read_file(path: &Path, label: &str) -> Result<String, ScenarioError> {
    use crate::input_file::{InputError, read_capped};
    let err = |m: String| ScenarioError::new(label, m);
    let bytes = read_capped(path, MAX_FILE_BYTES).map_err(|e| match e {
        InputError::NotFound => err("no such file".into()),
        other => err(other.to_string()),
    })?;
    String::from_utf8(bytes).map_err(|_| err("the file is not UTF-8 text".into()))
}

/// Configuration files larger than this are refused (an Envoy bootstrap
/// of a large mesh is a few hundred KiB).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Imports the file at `path`.
pub fn import_file(
    path: &Path,
    format: Format,
    selector: &Selector,
) -> Result<Policy, Vec<ScenarioError>> {
    let label = crate::escape::path(path);
    let text = read_file(path, &label).map_err(|e| vec![e])?;
    import_text(&text, &label, format, selector)
}

// ------------------------------------------------------ reading helpers

/// A key path one level down: `a.b` + `c`, or `a.b` + `[2]`.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else if key.starts_with('[') {
        format!("{path}{key}")
    } else {
        format!("{path}.{key}")
    }
}

/// A whole number from a scalar (`4`, `"4"`), within `lo..=hi`.
pub(crate) fn uint(b: &mut Builder, node: &Node, key: &str, lo: u64, hi: u64) -> Option<u64> {
    let v = node.scalar().and_then(|s| s.trim().parse::<u64>().ok());
    match v {
        Some(v) if (lo..=hi).contains(&v) => Some(v),
        _ => {
            b.error(
                key,
                Some(node.pos),
                format!(
                    "expected a whole number from {lo} to {hi}, found {}",
                    node.describe()
                ),
            );
            None
        }
    }
}

/// `attempts` (the first included), which the file's `node` gives and its
/// own system accepts, as far as the simulator goes: stormsim simulates at
/// most `MAX_ATTEMPTS` attempts a call (the scenario's `retry.max_attempts`
/// range, `scenario::ranges`), so a larger count is refused with that
/// limit named as stormsim's, not as the file's.
pub(crate) fn sim_attempts(
    b: &mut Builder,
    node: &Node,
    key: &str,
    attempts: u64,
    upstream: &str,
) -> Option<u64> {
    let max = u64::from(crate::scenario::validate::MAX_ATTEMPTS);
    if attempts <= max {
        return Some(attempts);
    }
    b.error(
        key,
        Some(node.pos),
        format!(
            "{} is valid ({upstream}), but it makes {attempts} attempts a call, and stormsim simulates at most {max} (the scenario's retry.max_attempts: a limit of the simulator, not of the file); to simulate this client, write the layer's retry.max_attempts (at most {max}) without `from:`, or import a copy of the file with a lower value",
            node.describe()
        ),
    );
    None
}

/// `lo..=hi` for people: `from 0.5 to 100`, and a `lo` of the smallest
/// positive float (a bound that only excludes 0) as `greater than 0`,
/// never its 300 digits.
fn range_words(lo: f64, hi: f64) -> String {
    use crate::human::num;
    if lo > 0.0 && lo <= f64::MIN_POSITIVE {
        format!("greater than 0 and at most {}", num(hi))
    } else {
        format!("from {} to {}", num(lo), num(hi))
    }
}

/// A number from a scalar, within `lo..=hi`.
pub(crate) fn number(b: &mut Builder, node: &Node, key: &str, lo: f64, hi: f64) -> Option<f64> {
    let v = node
        .scalar()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite());
    match v {
        Some(v) if v >= lo && v <= hi => Some(v),
        _ => {
            b.error(
                key,
                Some(node.pos),
                format!(
                    "expected a number {}, found {}",
                    range_words(lo, hi),
                    node.describe()
                ),
            );
            None
        }
    }
}

/// `true` / `false` from a scalar.
pub(crate) fn boolean(b: &mut Builder, node: &Node, key: &str) -> Option<bool> {
    match node.scalar().map(str::to_ascii_lowercase).as_deref() {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => {
            b.error(
                key,
                Some(node.pos),
                format!("expected true or false, found {}", node.describe()),
            );
            None
        }
    }
}

/// A JSON number for a float that is a whole number when it can be.
pub(crate) fn num(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// A float written without noise: `0.1`, `2`, `1.5` (`crate::human::num`:
/// a value computed from a file's, such as a percentage from a fraction,
/// loses the last-digit noise of its arithmetic).
pub(crate) fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        crate::human::num(v)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_export_style;
#[cfg(test)]
mod tests_heldout3;
#[cfg(test)]
mod tests_heldout3b;
#[cfg(test)]
mod tests_heldout6;
#[cfg(test)]
mod tests_heldout7;
#[cfg(test)]
mod tests_heldout8;
#[cfg(test)]
mod tests_heldout9;
#[cfg(test)]
mod tests_selectors;
