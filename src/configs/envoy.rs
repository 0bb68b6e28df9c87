//! `envoy-route`: an Envoy route configuration in YAML: a bootstrap
//! (`static_resources`, the route inside the HTTP connection manager) or an
//! RDS `RouteConfiguration`, with the route's cluster when the file has it.
//!
//! Sources (docs/sources/config-formats.md §2, docs/sources/presets.md §3):
//! envoyproxy/envoy `api/envoy/config/route/v3/route_components.proto`
//! (`RetryPolicy`, `HedgePolicy`, `RouteAction.timeout` 15 s; a route's
//! retry policy "will take precedence over" the virtual host's, "values
//! are not inherited"), `api/envoy/config/core/v3/backoff.proto`
//! (`max_interval` defaults to 10 × `base_interval`),
//! `api/envoy/config/cluster/v3/circuit_breaker.proto` (thresholds per
//! priority: `max_requests` 1024, `max_retries` 3, `retry_budget` 20 % and
//! 3, which replaces `max_retries`), `source/common/router/retry_state_impl.cc`
//! (base interval 25 ms, full jitter).
//!
//! What maps to what:
//!
//! | Envoy | layer |
//! |---|---|
//! | route `timeout` (15 s; `0s`: none) | `total_timeout` |
//! | `retry_policy.num_retries` (1) | `retry.max_attempts` = num_retries + 1 |
//! | `per_try_timeout` | `timeout` |
//! | `retry_on`, `retriable_status_codes` | `retry.retry_on` |
//! | `retry_back_off.base_interval` (25 ms), `max_interval` (10 × base) | `retry.backoff` exponential ×2, full jitter |
//! | `rate_limited_retry_back_off` | `retry.retry_after: envoy` (else `ignore`) |
//! | `hedge_policy.hedge_on_per_try_timeout` | `hedge_on_timeout` |
//! | cluster `circuit_breakers` `max_retries` / `retry_budget` | `retry.budget` `envoy_max_retries` / `envoy` (per Envoy: `scope: instance`) |
//! | cluster `circuit_breakers` `max_requests` (1024) | `bulkhead` (refused when full) |

use serde_json::{Map, Value, json};

use super::durations::{Notation, parse_proto};
use super::edit::{self, Lit};
use super::tree::{Doc, Kind, Node, Pos, Style};
use super::write::Writer;
use super::{
    Builder, Finding, Origin, Selector, boolean, get_path, join, num, number, sim_attempts, uint,
};
use crate::scenario::units::Duration;

/// Envoy's defaults (docs/sources/presets.md §3).
const ROUTE_TIMEOUT_MS: u64 = 15_000;
const BASE_INTERVAL_MS: u64 = 25;
const MAX_RETRIES: u64 = 3;
const MAX_REQUESTS: u64 = 1024;
const BUDGET_PERCENT: f64 = 20.0;
const MIN_RETRY_CONCURRENCY: u64 = 3;
/// `rate_limited_retry_back_off.max_interval` default: 300 s.
const RATE_LIMITED_MAX_S: u64 = 300;

/// Each `retry_on` condition and the simulated outcomes it retries.
/// A per-try timeout is a reset: `router.cc` `Filter::onPerTryTimeoutCommon`
/// resets the upstream stream and asks `maybeRetryReset(LocalReset, …)`,
/// and `retry_state_impl.cc` `RetryStateImpl::wouldRetryFromReset` retries
/// any reset but `Overflow` under `reset`, and under `5xx` and
/// `gateway-error` too (Envoy counts an upstream reset as a 5xx). A
/// connection failure that `connect-failure` does not claim falls through
/// to the same checks. So `reset` is a timeout and a connection failure;
/// `5xx` and `gateway-error` add their status codes to both;
/// `reset-before-request` only retries a reset before any byte went
/// upstream (a connection failure, never a per-try timeout, whose request
/// was sent); `retriable-4xx` is only 409; the gRPC conditions read the
/// status the response headers carry, which here is the dependency's
/// status (503 UNAVAILABLE, 429 RESOURCE_EXHAUSTED, 500 INTERNAL, as the
/// grpc presets read them).
pub(crate) const CONDITIONS: &[(&str, &[&str])] = &[
    ("5xx", &["timeout", "connection", "5xx"]),
    (
        "gateway-error",
        &["timeout", "connection", "502", "503", "504"],
    ),
    ("reset", &["timeout", "connection"]),
    ("reset-before-request", &["connection"]),
    ("connect-failure", &["connection"]),
    ("refused-stream", &["connection"]),
    ("retriable-4xx", &["409"]),
    ("retriable-status-codes", &[]),
    ("unavailable", &["503"]),
    ("resource-exhausted", &["429"]),
    ("internal", &["500"]),
];

/// Conditions no simulated response meets (retrying them changes nothing).
pub(crate) const INERT: &[&str] = &[
    "envoy-ratelimited",
    "retriable-headers",
    "http3-post-connect-failure",
    "cancelled",
    "deadline-exceeded",
];

/// Envoy's gRPC retry conditions: envoyproxy/envoy
/// `docs/root/configuration/http/http_filters/router_filter.rst`,
/// `x-envoy-retry-grpc-on`, lists these five, each matched against the
/// gRPC status a response carries in its headers (not its trailers);
/// `retry_on` takes them beside the HTTP ones of `x-envoy-retry-on`
/// (`5xx`, `gateway-error`, `reset`, `connect-failure`, `retriable-4xx`,
/// `refused-stream`, `retriable-status-codes`, ...), and so does Istio's
/// `retryOn` (istio/api `virtual_service.proto`, `HTTPRetry.retryOn`,
/// which points at both lists and adds bare HTTP status codes).
pub(crate) const GRPC_CONDITIONS: &[&str] = &[
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// What a route carries, as its retry conditions say: a `retry_on` that
/// names a gRPC condition is a gRPC route's (nobody writes one for HTTP
/// traffic, which never meets it); any other is an HTTP route's.
///
/// On an HTTP route the simulated dependency's status is the response's
/// HTTP status. On a gRPC route it is the gRPC status, in the response
/// headers, while the HTTP status is 200 (gRPC over HTTP/2 answers an
/// error with `:status` 200 and a `grpc-status`): 503 stands for
/// UNAVAILABLE, 429 for RESOURCE_EXHAUSTED, 500 for INTERNAL, as the grpc
/// presets read them. So there the gRPC conditions retry those statuses,
/// and the conditions that read the HTTP status (`5xx` and
/// `gateway-error` for their codes, `retriable-4xx`,
/// `retriable-status-codes`) retry no status, only what they retry
/// without a response (resets, per-try timeouts, connection failures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RouteKind {
    Http,
    Grpc,
}

impl RouteKind {
    pub(crate) fn of<'a>(tokens: impl IntoIterator<Item = &'a str>) -> RouteKind {
        let mut tokens = tokens.into_iter();
        if tokens.any(|t| GRPC_CONDITIONS.contains(&t.trim())) {
            RouteKind::Grpc
        } else {
            RouteKind::Http
        }
    }
}

/// The outcomes `token` retries on a route of `kind` (`None`: no
/// condition Envoy knows). `retriable-status-codes` retries the codes
/// listed with it, which are not here.
pub(crate) fn condition(token: &str, kind: RouteKind) -> Option<&'static [&'static str]> {
    match (kind, token) {
        (RouteKind::Grpc, "5xx" | "gateway-error") => Some(&["timeout", "connection"]),
        (RouteKind::Grpc, "retriable-4xx") => Some(&[]),
        // On an HTTP route no response carries a grpc-status.
        (RouteKind::Http, t) if GRPC_CONDITIONS.contains(&t) => Some(&[]),
        _ => CONDITIONS
            .iter()
            .find(|(c, _)| *c == token)
            .map(|(_, o)| *o),
    }
}

/// The gRPC condition that retries the simulated status `code` on a gRPC
/// route.
fn grpc_condition_for(code: &str) -> Option<&'static str> {
    CONDITIONS
        .iter()
        .find(|(c, o)| GRPC_CONDITIONS.contains(c) && o.contains(&code))
        .map(|(c, _)| *c)
}

/// The warning for HTTP status codes on a gRPC route.
pub(crate) fn grpc_codes_warning(codes: &[u16]) -> String {
    let list: Vec<String> = codes.iter().map(u16::to_string).collect();
    format!(
        "status code{} {} on a gRPC route (its retry conditions name gRPC ones): Envoy compares them with the HTTP status, which a gRPC response carries as 200 (the error is in grpc-status), so {} nothing here; a gRPC status is retried by its condition (`unavailable` for 503, `resource-exhausted` for 429, `internal` for 500)",
        if codes.len() == 1 { "" } else { "s" },
        list.join(", "),
        if codes.len() == 1 {
            "it retries"
        } else {
            "they retry"
        }
    )
}

/// The fields of `VirtualHost`, `Route` and `RouteAction`, as
/// envoyproxy/envoy `api/envoy/config/route/v3/route_components.proto`
/// declares them (`cluster_specifier_plugin` and `per_try_idle_timeout`,
/// which this reader already knew, kept).
const VHOST_FIELDS: &[&str] = &[
    "name",
    "domains",
    "routes",
    "require_tls",
    "virtual_clusters",
    "rate_limits",
    "request_headers_to_add",
    "request_headers_to_remove",
    "response_headers_to_add",
    "response_headers_to_remove",
    "cors",
    "typed_per_filter_config",
    "include_request_attempt_count",
    "include_attempt_count_in_response",
    "retry_policy",
    "retry_policy_typed_config",
    "hedge_policy",
    "per_request_buffer_limit_bytes",
];
const ROUTE_FIELDS: &[&str] = &[
    "name",
    "match",
    "route",
    "redirect",
    "direct_response",
    "filter_action",
    "non_forwarding_action",
    "metadata",
    "decorator",
    "typed_per_filter_config",
    "request_headers_to_add",
    "request_headers_to_remove",
    "response_headers_to_add",
    "response_headers_to_remove",
    "tracing",
    "per_request_buffer_limit_bytes",
];
const ACTION_FIELDS: &[&str] = &[
    "cluster",
    "cluster_header",
    "weighted_clusters",
    "cluster_specifier_plugin",
    "cluster_not_found_response_code",
    "metadata_match",
    "prefix_rewrite",
    "regex_rewrite",
    "host_rewrite_literal",
    "auto_host_rewrite",
    "host_rewrite_header",
    "host_rewrite_path_regex",
    "timeout",
    "idle_timeout",
    "retry_policy",
    "retry_policy_typed_config",
    "request_mirror_policies",
    "priority",
    "rate_limits",
    "include_vh_rate_limits",
    "hash_policy",
    "cors",
    "max_grpc_timeout",
    "grpc_timeout_offset",
    "upgrade_configs",
    "internal_redirect_policy",
    "internal_redirect_action",
    "max_internal_redirects",
    "hedge_policy",
    "max_stream_duration",
    "per_try_idle_timeout",
];

/// Keys of `node` (a `what`, at key path `at`) that are none of its
/// `fields`: a misspelling of one (`retry_polcy`) would leave out what
/// the key meant to say (a route's own retry policy, so the virtual
/// host's applies), so a key close to a field is an error with a
/// did-you-mean; one close to none says nothing stormsim reads, so it is
/// a warning. (Envoy itself refuses a configuration with an unknown
/// field when it loads it.)
fn unknown_keys(b: &mut Builder, node: &Node, at: &str, what: &str, fields: &[&str]) {
    for e in node.entries() {
        if fields.contains(&e.key.as_str()) {
            continue;
        }
        let key = join(at, &e.key);
        let shown = crate::escape::escape(&e.key);
        match crate::scenario::suggest::did_you_mean(&e.key, fields.iter().copied()) {
            Some(near) => b.error(
                key,
                Some(e.key_pos),
                format!("`{shown}` is not a field of an Envoy {what} (route_components.proto); did you mean `{near}`?"),
            ),
            None => b.warn(
                key,
                Some(e.key_pos),
                format!("`{shown}` is not a field of an Envoy {what} (route_components.proto; Envoy refuses the configuration with it): ignored, as nothing stormsim reads depends on it"),
            ),
        }
    }
}

/// One route of the file.
pub(crate) struct RouteAt<'d> {
    pub key: String,
    pub route: &'d Node,
    pub vhost_key: String,
    pub vhost: &'d Node,
}

/// Every mapping under `node` that has `key` (a list), with its key path.
fn find_all<'d>(node: &'d Node, path: &str, key: &str, out: &mut Vec<(String, &'d Node)>) {
    if let Some(v) = node.get(key)
        && v.is_seq()
    {
        out.push((path.to_string(), node));
    }
    for e in node.entries() {
        find_all(&e.value, &join(path, &e.key), key, out);
    }
    for (i, item) in node.items().iter().enumerate() {
        find_all(item, &join(path, &format!("[{i}]")), key, out);
    }
}

fn routes(doc: &Doc) -> Vec<RouteAt<'_>> {
    let mut hosts = Vec::new();
    for root in &doc.roots {
        find_all(root, "", "virtual_hosts", &mut hosts);
    }
    let mut out = Vec::new();
    for (path, rc) in hosts {
        for (vi, vh) in rc
            .get("virtual_hosts")
            .map_or(&[][..], Node::items)
            .iter()
            .enumerate()
        {
            // Key paths start at the route configuration (the line number
            // tells two of them apart).
            let _ = &path;
            let vkey = format!("virtual_hosts[{vi}]");
            for (ri, r) in vh
                .get("routes")
                .map_or(&[][..], Node::items)
                .iter()
                .enumerate()
            {
                out.push(RouteAt {
                    key: join(&vkey, &format!("routes[{ri}]")),
                    route: r,
                    vhost_key: vkey.clone(),
                    vhost: vh,
                });
            }
        }
    }
    out
}

/// The name of a virtual host, else its first domain, for people.
fn vhost_label(vh: &Node) -> String {
    vh.get("name")
        .and_then(Node::scalar)
        .map(|n| format!("`{n}`"))
        .or_else(|| {
            vh.get("domains")?
                .items()
                .first()?
                .scalar()
                .map(|d| format!("domain `{d}`"))
        })
        .unwrap_or_else(|| format!("unnamed (line {})", vh.pos.0))
}

/// A virtual host for a list of the choices: its name and every domain
/// (either selects it), `` `orders` (domains `orders.internal`, `*`) ``.
fn vhost_with_domains(vh: &Node) -> String {
    let name = vh.get("name").and_then(Node::scalar).map_or_else(
        || format!("unnamed (line {})", vh.pos.0),
        |n| format!("`{}`", crate::escape::escape(n)),
    );
    let domains: Vec<String> = vh
        .get("domains")
        .map_or(&[][..], Node::items)
        .iter()
        .filter_map(Node::scalar)
        .map(|d| format!("`{}`", crate::escape::escape(d)))
        .collect();
    if domains.is_empty() {
        format!("{name} (no domains)")
    } else {
        format!("{name} (domains {})", domains.join(", "))
    }
}

/// Whether the virtual host is the one `want` names: its `name`, or one
/// of its `domains` as written (`*.example.com` included).
fn vhost_is(vh: &Node, want: &str) -> bool {
    vh.get("name").and_then(Node::scalar) == Some(want)
        || vh
            .get("domains")
            .map_or(&[][..], Node::items)
            .iter()
            .filter_map(Node::scalar)
            .any(|d| d == want)
}

/// The route the selector names: by `name`, else by its match prefix or
/// path; among the routes of the virtual host `vhost` names (by name or
/// domain) when it is given.
pub(crate) fn select<'d>(
    doc: &'d Doc,
    want: &str,
    vhost: Option<&str>,
) -> Result<RouteAt<'d>, Finding> {
    let mut all = routes(doc);
    if all.is_empty() {
        return Err(Finding {
            pos: None,
            key: String::new(),
            message:
                "no `virtual_hosts` with `routes` in this file: not an Envoy route configuration"
                    .into(),
        });
    }
    let mut vhosts: Vec<&Node> = Vec::new();
    for r in &all {
        if !vhosts.iter().any(|v| std::ptr::eq(*v, r.vhost)) {
            vhosts.push(r.vhost);
        }
    }
    let vhost_list = || {
        vhosts
            .iter()
            .map(|v| vhost_with_domains(v))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if let Some(vh) = vhost {
        all.retain(|r| vhost_is(r.vhost, vh));
        if all.is_empty() {
            return Err(Finding {
                pos: None,
                key: String::new(),
                message: format!(
                    "no virtual host named `{}` or with that domain; the virtual hosts are {}",
                    crate::escape::escape(vh),
                    vhost_list()
                ),
            });
        }
    }
    let name = |r: &RouteAt| {
        r.route
            .get("name")
            .and_then(Node::scalar)
            .map(str::to_string)
    };
    let matcher = |r: &RouteAt| {
        let m = r.route.get("match")?;
        ["prefix", "path", "path_separated_prefix"]
            .iter()
            .find_map(|k| m.get(k).and_then(Node::scalar).map(str::to_string))
    };
    let mut hits: Vec<&RouteAt> = Vec::new();
    let mut by_match: Vec<&RouteAt> = Vec::new();
    for r in all.iter() {
        if name(r).as_deref() == Some(want) {
            hits.push(r);
        } else if matcher(r).as_deref() == Some(want) {
            by_match.push(r);
        }
    }
    if hits.is_empty() {
        hits = by_match;
    }
    match hits.len() {
        1 => {
            let h = hits[0];
            Ok(RouteAt {
                key: h.key.clone(),
                route: h.route,
                vhost_key: h.vhost_key.clone(),
                vhost: h.vhost,
            })
        }
        0 => {
            let known: Vec<String> = all
                .iter()
                .filter_map(|r| name(r).or_else(|| matcher(r)))
                .collect();
            Err(Finding {
                pos: None,
                key: String::new(),
                message: format!(
                    "no route named `{want}` or matching it; the routes are {}",
                    known.join(", ")
                ),
            })
        }
        n => {
            let lines = hits
                .iter()
                .map(|h| h.route.pos.0.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let mut in_vhosts: Vec<&Node> = Vec::new();
            for h in &hits {
                if !in_vhosts.iter().any(|v| std::ptr::eq(*v, h.vhost)) {
                    in_vhosts.push(h.vhost);
                }
            }
            let how = if in_vhosts.len() > 1 {
                format!(
                    "pick the virtual host with `virtual_host: NAME` (a name or a domain; these routes are in {}), or name the route (`name:`) and select it by name",
                    in_vhosts
                        .iter()
                        .map(|v| vhost_label(v))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                "name the route (`name:`) and select it by name".to_string()
            };
            Err(Finding {
                pos: Some(hits[1].route.pos),
                key: hits[1].key.clone(),
                message: format!("{n} routes match `{want}` (lines {lines}); {how}"),
            })
        }
    }
}

/// The clusters of a `weighted_clusters` that this file defines with
/// `circuit_breakers` (`blue`, `green`), and "has" or "have": their
/// thresholds differ from the defaults an unknown cluster gets, so
/// leaving them out would change results.
fn weighted_breakers(doc: &Doc, weighted: &Node) -> Option<(String, &'static str)> {
    let names: Vec<String> = weighted
        .get("clusters")
        .map_or(&[][..], Node::items)
        .iter()
        .filter_map(|c| c.get("name").and_then(Node::scalar))
        .filter(|n| cluster(doc, n).is_some_and(|(_, c)| c.get("circuit_breakers").is_some()))
        .map(|n| format!("`{n}`"))
        .collect();
    match names.len() {
        0 => None,
        1 => Some((format!("cluster {}", names[0]), "has")),
        _ => Some((format!("clusters {}", names.join(", ")), "have")),
    }
}

/// The cluster named `name`, if the file defines it.
fn cluster<'d>(doc: &'d Doc, name: &str) -> Option<(String, &'d Node)> {
    let mut lists = Vec::new();
    for root in &doc.roots {
        find_all(root, "", "clusters", &mut lists);
    }
    for (path, holder) in lists {
        for (i, c) in holder
            .get("clusters")
            .map_or(&[][..], Node::items)
            .iter()
            .enumerate()
        {
            if c.get("name").and_then(Node::scalar) == Some(name) {
                let _ = &path;
                return Some((format!("clusters[{i}]"), c));
            }
        }
    }
    None
}

/// The thresholds of a cluster for the route's `priority` (`DEFAULT` or
/// `HIGH`): the first entry of that priority, as Envoy takes it
/// (circuit_breaker.proto: "If multiple Thresholds are defined with the
/// same RoutingPriority, the first one in the list is used"; with none,
/// the default values apply, the same for either priority).
fn thresholds<'d>(c: &'d Node, ckey: &str, priority: &str) -> Option<(String, &'d Node)> {
    let list = c.get("circuit_breakers")?.get("thresholds")?;
    list.items()
        .iter()
        .enumerate()
        .find(|(_, t)| {
            t.get("priority")
                .and_then(Node::scalar)
                .unwrap_or("DEFAULT")
                == priority
        })
        .map(|(i, t)| (format!("{ckey}.circuit_breakers.thresholds[{i}]"), t))
}

/// The route's `priority` (RouteAction.priority, a RoutingPriority:
/// DEFAULT, or HIGH), which picks the cluster's circuit breaker
/// thresholds.
fn route_priority(action: &Node) -> &str {
    action
        .get("priority")
        .and_then(Node::scalar)
        .filter(|p| *p == "HIGH")
        .unwrap_or("DEFAULT")
}

fn duration(b: &mut Builder, node: &Node, key: &str) -> Option<Duration> {
    if let Some(m) = super::durations::space_refusal(node.scalar(), "Envoy (protobuf JSON)") {
        b.error(key, Some(node.pos), m);
        return None;
    }
    let d = node.scalar().and_then(parse_proto);
    if d.is_none() {
        b.error(
            key,
            Some(node.pos),
            format!(
                "{}, found {}",
                super::durations::proto_refusal(
                    node.scalar(),
                    "expected a duration such as 0.25s (protobuf JSON)"
                ),
                node.describe()
            ),
        );
    }
    d
}

/// The outcomes of a `retry_on` string (and its status codes), on a
/// route of the kind its conditions say ([`RouteKind`]).
fn outcomes(b: &mut Builder, node: &Node, key: &str, codes: &[u16]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut push = |v: Value| {
        if !out.contains(&v) {
            out.push(v);
        }
    };
    let tokens: Vec<&str> = node
        .scalar()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let kind = RouteKind::of(tokens.iter().copied());
    for token in tokens {
        if INERT.contains(&token) {
            b.warn(
                key,
                Some(node.pos),
                format!("`{token}`: no simulated response meets it, so it changes nothing"),
            );
            continue;
        }
        let Some(outs) = condition(token, kind) else {
            b.error(
                key,
                Some(node.pos),
                format!("`{token}` is not a retry_on condition Envoy knows"),
            );
            continue;
        };
        if token == "retriable-status-codes" {
            if kind == RouteKind::Grpc {
                if !codes.is_empty() {
                    b.warn(key, Some(node.pos), grpc_codes_warning(codes));
                }
            } else {
                for c in codes {
                    push(json!(c));
                }
            }
        }
        if kind == RouteKind::Grpc && matches!(token, "5xx" | "gateway-error" | "retriable-4xx") {
            b.warn(
                key,
                Some(node.pos),
                format!(
                    "`{token}` on a gRPC route (its retry conditions name gRPC ones): it reads the HTTP status, which a gRPC response carries as 200, so it retries no gRPC status{}",
                    if token == "retriable-4xx" { ": nothing here" } else { ", only resets, per-try timeouts and connection failures" }
                ),
            );
        }
        for o in outs {
            push(o.parse::<u16>().map_or(json!(o), |n| json!(n)));
        }
    }
    out
}

pub(crate) fn read(doc: &Doc, sel: &Selector, b: &mut Builder) {
    let Some(want) = sel.route.as_deref() else {
        b.error("", None, "which route? an Envoy route configuration needs `route: NAME` (the route's name, or its match prefix)");
        return;
    };
    let r = match select(doc, want, sel.virtual_host.as_deref()) {
        Ok(r) => r,
        Err(f) => {
            b.errors.push(f);
            return;
        }
    };
    b.policy.selected = format!("{} (line {})", r.key, r.route.pos.0);
    let Some(action) = r.route.get("route") else {
        b.error(
            r.key.clone(),
            Some(r.route.pos),
            "this route does not forward (no `route` action: a redirect or a direct response)",
        );
        return;
    };
    unknown_keys(b, r.vhost, &r.vhost_key, "virtual host", VHOST_FIELDS);
    unknown_keys(b, r.route, &r.key, "route", ROUTE_FIELDS);
    let akey = join(&r.key, "route");
    unknown_keys(b, action, &akey, "route action", ACTION_FIELDS);
    let mut policy = None;
    let mut hedge = None;
    let mut timeout = None;
    let mut cluster_name = None;
    let mut cluster_at = None;
    for e in action.entries() {
        let key = join(&akey, &e.key);
        match e.key.as_str() {
            "timeout" => timeout = Some((key, &e.value)),
            "retry_policy" => policy = Some((key, &e.value)),
            "hedge_policy" => hedge = Some((key, &e.value)),
            "cluster" => {
                cluster_name = e.value.scalar();
                cluster_at = Some((key, e.key_pos));
            }
            "weighted_clusters" if weighted_breakers(doc, &e.value).is_some() => {
                let (names, at) = weighted_breakers(doc, &e.value).unwrap_or_default();
                b.unmodelled(
                    &key,
                    Some(e.key_pos),
                    &format!("the route spreads over several clusters, and {names} in this file {at} circuit breakers of {}; stormsim simulates one cluster's, so which to take would change the results", if names.contains(',') { "their own" } else { "its own" }),
                );
            }
            "weighted_clusters" | "cluster_header" | "cluster_specifier_plugin" => b.warn(
                key,
                Some(e.key_pos),
                "the route spreads over several clusters: no cluster's circuit breakers are read (Envoy's defaults are used)",
            ),
            "rate_limits" | "max_stream_duration" | "retry_policy_typed_config" | "per_try_idle_timeout" => {
                b.unmodelled(&key, Some(e.key_pos), "a route setting that limits or times out requests")
            }
            // route_components.proto, RouteAction: `max_grpc_timeout`
            // (23) makes a gRPC request's deadline its `grpc-timeout`
            // header (capped here; 0: no cap) instead of `timeout`, and
            // `grpc_timeout_offset` (28) subtracts from that header; the
            // simulated calls carry no grpc-timeout, so which deadline
            // Envoy would apply is not known.
            "max_grpc_timeout" | "grpc_timeout_offset" => b.unmodelled(
                &key,
                Some(e.key_pos),
                "a gRPC request's deadline taken from its grpc-timeout header instead of the route's timeout (route_components.proto, RouteAction.max_grpc_timeout / grpc_timeout_offset); simulated calls carry no grpc-timeout header, so the deadline Envoy applies is not known",
            ),
            "idle_timeout" => b.unmodelled(
                &key,
                Some(e.key_pos),
                "the route's stream idle timeout (a request whose response sends nothing for this long is reset, 504 upstream), which stormsim has no timer for",
            ),
            "request_mirror_policies" => b.warn(key, Some(e.key_pos), "not simulated: it does not change the attempts this route sends"),
            "priority" if !matches!(e.value.scalar(), Some("DEFAULT" | "HIGH")) => {
                b.error(key, Some(e.value.pos), format!("expected DEFAULT or HIGH (a RoutingPriority), found {}", e.value.describe()));
            }
            _ => {}
        }
    }
    for e in r.vhost.entries() {
        let key = join(&r.vhost_key, &e.key);
        match e.key.as_str() {
            "retry_policy" if policy.is_none() => policy = Some((key, &e.value)),
            "hedge_policy" if hedge.is_none() => hedge = Some((key, &e.value)),
            "rate_limits" | "retry_policy_typed_config" => b.unmodelled(
                &key,
                Some(e.key_pos),
                "a virtual host setting that limits or retries requests",
            ),
            _ => {}
        }
    }
    // The route timeout covers every attempt and backoff.
    match timeout {
        Some((key, node)) => {
            if let Some(d) = duration(b, node, &key) {
                if d.0 == 0 {
                    b.absent("total_timeout");
                } else {
                    b.set(
                        "total_timeout",
                        json!(d.to_string()),
                        Origin {
                            key,
                            pos: Some(node.pos),
                        },
                    );
                }
            }
        }
        None => b.set(
            "total_timeout",
            json!(Duration::from_millis(ROUTE_TIMEOUT_MS).to_string()),
            Origin {
                key: format!("{akey}.timeout (default)"),
                pos: None,
            },
        ),
    }
    envoy_retry_mechanics(b);
    let per_try = policy
        .as_ref()
        .is_some_and(|(_, p)| p.get("per_try_timeout").is_some());
    read_policy(b, policy);
    read_hedge(b, hedge, per_try);
    read_cluster(b, doc, cluster_name, cluster_at, route_priority(action));
    let found = cluster_name.and_then(|n| cluster(doc, n));
    super::envoy_outlier::read_cluster(b, found.as_ref().map(|(k, c)| (k.as_str(), *c)));
}

/// What Envoy's retry mechanism fixes whatever the route says (also
/// under an Istio route, which Envoy runs): no layer timeout of its own,
/// full jitter (`random() % ceiling`), no Retry-After cap or jitter, no
/// elapsed bound, and backoffs not truncated to whole milliseconds.
pub(super) fn envoy_retry_mechanics(b: &mut Builder) {
    b.absent("timeout");
    b.set(
        "retry.jitter",
        json!("full"),
        Origin {
            key: "Envoy: random() % ceiling".into(),
            pos: None,
        },
    );
    for f in [
        "retry.retry_after_cap",
        "retry.retry_after_jitter",
        "retry.max_elapsed",
        "retry.backoff.throttle_base",
    ] {
        b.absent(f);
    }
    b.set(
        "retry.backoff.truncate_ms",
        json!(false),
        Origin {
            key: "Envoy".into(),
            pos: None,
        },
    );
}

fn read_policy(b: &mut Builder, policy: Option<(String, &Node)>) {
    let default_backoff =
        || json!({ "kind": "exponential", "base": "25ms", "multiplier": 2, "cap": "250ms" });
    let Some((at, p)) = policy else {
        b.set(
            "retry.max_attempts",
            json!(1),
            Origin {
                key: "no retry_policy: Envoy retries nothing".into(),
                pos: None,
            },
        );
        b.set(
            "retry.retry_on",
            json!([]),
            Origin {
                key: "no retry_policy".into(),
                pos: None,
            },
        );
        b.set(
            "retry.backoff",
            default_backoff(),
            Origin {
                key: "no retry_policy".into(),
                pos: None,
            },
        );
        b.set(
            "retry.retry_after",
            json!("ignore"),
            Origin {
                key: "no retry_policy".into(),
                pos: None,
            },
        );
        return;
    };
    if !p.is_map() {
        b.error(at, Some(p.pos), "expected a retry_policy mapping");
        return;
    }
    let codes: Vec<u16> = p
        .get("retriable_status_codes")
        .map_or(&[][..], Node::items)
        .iter()
        .filter_map(|c| c.scalar().and_then(|s| s.parse().ok()))
        .collect();
    let mut base = Duration::from_millis(BASE_INTERVAL_MS);
    let mut base_origin = Origin {
        key: format!("{at}.retry_back_off.base_interval (default)"),
        pos: None,
    };
    let mut cap = None;
    if b.target.is_call() {
        b.set(
            "retry_other_replica",
            json!(false),
            Origin {
                key: format!("{at}: no retry_host_predicate previous_hosts"),
                pos: None,
            },
        );
    }
    b.set(
        "retry.max_attempts",
        json!(2),
        Origin {
            key: format!("{at}.num_retries (default 1)"),
            pos: None,
        },
    );
    b.set(
        "retry.retry_on",
        json!([]),
        Origin {
            key: format!("{at}.retry_on (none)"),
            pos: None,
        },
    );
    b.set(
        "retry.retry_after",
        json!("ignore"),
        Origin {
            key: format!("{at}: no rate_limited_retry_back_off"),
            pos: None,
        },
    );
    for e in p.entries() {
        let key = join(&at, &e.key);
        let o = Origin {
            key: key.clone(),
            pos: Some(e.value.pos),
        };
        match e.key.as_str() {
            "num_retries" | "max_retries" => {
                // route_components.proto: `google.protobuf.UInt32Value
                // num_retries = 2` (renamed max_retries): any uint32 is
                // Envoy's; more than stormsim simulates is refused at
                // this key, as the simulator's limit (`sim_attempts`).
                if let Some(n) = uint(b, &e.value, &key, 0, u64::from(u32::MAX))
                    && let Some(n) = sim_attempts(
                        b,
                        &e.value,
                        &key,
                        n + 1,
                        "route_components.proto: num_retries is a UInt32Value",
                    )
                {
                    b.set("retry.max_attempts", json!(n), o);
                }
            }
            "retry_on" => {
                let outs = outcomes(b, &e.value, &key, &codes);
                b.set("retry.retry_on", Value::Array(outs), o);
            }
            "per_try_timeout" => {
                if let Some(d) = duration(b, &e.value, &key)
                    && d.0 > 0
                {
                    b.set("timeout", json!(d.to_string()), o);
                }
            }
            "retriable_status_codes" => {
                for (i, c) in e.value.items().iter().enumerate() {
                    uint(b, c, &join(&key, &format!("[{i}]")), 100, 599);
                }
            }
            "retry_back_off" => {
                if e.value.get("base_interval").is_none() {
                    b.error(
                        key.clone(),
                        Some(e.key_pos),
                        "retry_back_off without base_interval: Envoy refuses the route (backoff.proto: base_interval is required); write it, such as `base_interval: 0.025s` (Envoy's interval without a retry_back_off)",
                    );
                }
                for f in e.value.entries() {
                    let fkey = join(&key, &f.key);
                    match f.key.as_str() {
                        "base_interval" => {
                            if let Some(d) = duration(b, &f.value, &fkey) {
                                base = d;
                                base_origin = Origin { key: fkey, pos: Some(f.value.pos) };
                            }
                        }
                        "max_interval" => cap = duration(b, &f.value, &fkey).map(|d| (d, Origin { key: fkey, pos: Some(f.value.pos) })),
                        _ => b.unmodelled(&fkey, Some(f.key_pos), "a retry_back_off field stormsim does not know"),
                    }
                }
            }
            "rate_limited_retry_back_off" => {
                b.set("retry.retry_after", json!("envoy"), o);
                if let Some(m) = e.value.get("max_interval") {
                    let mkey = join(&key, "max_interval");
                    if let Some(d) = duration(b, m, &mkey)
                        && d != Duration::from_secs(RATE_LIMITED_MAX_S)
                    {
                        b.unmodelled(&mkey, Some(m.pos), "a rate-limited backoff longer or shorter than Envoy's default 300 s");
                    }
                }
            }
            "retry_host_predicate" if b.target.is_call() => host_predicates(b, &key, &e.value),
            "host_selection_retry_max_attempts" if b.target.is_call() => {
                if uint(b, &e.value, &key, 1, u64::from(u32::MAX)).is_some() {
                    b.warn(key, Some(e.key_pos), "not simulated as such: with retry_other_replica a retry never goes to a replica the call already tried while another is left (as if host selection were re-drawn as often as it takes)");
                }
            }
            "retry_priority" | "retry_options_predicates" if b.target.is_call() => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: the replicas of a service have no priorities or options to choose by",
            ),
            "retry_host_predicate" | "host_selection_retry_max_attempts" | "retry_priority" | "retry_options_predicates" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: a layer's dependency is one host, so where a retry goes changes nothing",
            ),
            "retriable_headers" => b.warn(key, Some(e.key_pos), "not simulated: simulated responses carry no headers to match"),
            "retriable_request_headers" | "per_try_idle_timeout" => {
                b.unmodelled(&key, Some(e.key_pos), "it decides which requests are retried, or when an attempt times out")
            }
            _ => b.unmodelled(&key, Some(e.key_pos), "a retry_policy field stormsim does not know"),
        }
    }
    if base.0 == 0 {
        b.error(
            base_origin.key.clone(),
            base_origin.pos,
            "base_interval must be greater than 0 (backoff.proto)",
        );
    }
    // Envoy counts the intervals in whole milliseconds, truncated, and at
    // least 1 ms (`RetryPolicyImpl`, source/common/router/
    // retry_policy_impl.cc, in config_impl.cc before it moved:
    // `PROTOBUF_GET_MS_REQUIRED`, then `if (count() < 1) = 1ms`, the same
    // for max_interval).
    let whole_ms = |b: &mut Builder, d: Duration, origin: &Origin| {
        let ms = Duration::from_millis((d.0 / 1_000_000).max(1));
        if ms != d && d.0 > 0 && origin.pos.is_some() {
            b.warn(
                origin.key.clone(),
                origin.pos,
                format!("Envoy counts whole milliseconds, at least 1: {d} is {ms}"),
            );
        }
        ms
    };
    if base.0 > 0 {
        base = whole_ms(b, base, &base_origin);
    }
    let cap = cap.map(|(d, o)| (whole_ms(b, d, &o), o));
    let (cap, cap_origin) = cap.unwrap_or((
        Duration(base.0.saturating_mul(10)),
        Origin {
            key: format!("{at}.retry_back_off.max_interval (default: 10 × base_interval)"),
            pos: None,
        },
    ));
    if cap < base {
        b.error(
            cap_origin.key.clone(),
            cap_origin.pos,
            "max_interval must be at least base_interval (backoff.proto)",
        );
    }
    b.set(
        "retry.backoff.kind",
        json!("exponential"),
        Origin {
            key: "Envoy: JitteredExponentialBackOffStrategy".into(),
            pos: None,
        },
    );
    b.set(
        "retry.backoff.multiplier",
        json!(2),
        Origin {
            key: "Envoy: doubles".into(),
            pos: None,
        },
    );
    b.set("retry.backoff.base", json!(base.to_string()), base_origin);
    b.set("retry.backoff.cap", json!(cap.to_string()), cap_origin);
}

/// `retry_host_predicate` on a call: `previous_hosts` is the call's
/// `retry_other_replica`; the other predicates pick hosts by what the
/// simulated replicas do not have (canary flags, metadata).
fn host_predicates(b: &mut Builder, key: &str, list: &Node) {
    for (i, p) in list.items().iter().enumerate() {
        let pkey = join(key, &format!("[{i}]"));
        match p.get("name").and_then(Node::scalar) {
            Some("envoy.retry_host_predicates.previous_hosts") => b.set(
                "retry_other_replica",
                json!(true),
                Origin {
                    key: join(&pkey, "name"),
                    pos: Some(p.pos),
                },
            ),
            Some(
                "envoy.retry_host_predicates.omit_canary_hosts"
                | "envoy.retry_host_predicates.omit_host_metadata",
            ) => b.warn(
                pkey,
                Some(p.pos),
                "not simulated: replicas carry no canary flag or metadata to omit",
            ),
            _ => b.unmodelled(
                &pkey,
                Some(p.pos),
                "a retry host predicate stormsim does not know",
            ),
        }
    }
}

fn read_hedge(b: &mut Builder, hedge: Option<(String, &Node)>, per_try: bool) {
    b.set(
        "hedge_on_timeout",
        json!(false),
        Origin {
            key: "no hedge_policy".into(),
            pos: None,
        },
    );
    let Some((at, h)) = hedge else { return };
    for e in h.entries() {
        let key = join(&at, &e.key);
        match e.key.as_str() {
            "hedge_on_per_try_timeout" => {
                match boolean(b, &e.value, &key) {
                    Some(true) if !per_try => b.warn(
                        key,
                        Some(e.value.pos),
                        "no effect: the retry policy has no per_try_timeout, so no attempt times out to hedge on",
                    ),
                    Some(v) => b.set("hedge_on_timeout", json!(v), Origin { key, pos: Some(e.value.pos) }),
                    None => {}
                }
            }
            "initial_requests" | "additional_request_chance" => {
                b.warn(key, Some(e.key_pos), "not implemented by Envoy (route_components.proto), so ignored here too")
            }
            _ => b.unmodelled(&key, Some(e.key_pos), "a hedge_policy field stormsim does not know"),
        }
    }
}

/// `at`: the route's `cluster` key and its position, for the warning
/// when the file does not define the cluster.
fn read_cluster(
    b: &mut Builder,
    doc: &Doc,
    name: Option<&str>,
    at: Option<(String, Pos)>,
    priority: &str,
) {
    let default_budget = |b: &mut Builder, why: String| {
        b.set(
            "retry.budget.kind",
            json!("envoy_max_retries"),
            Origin {
                key: why.clone(),
                pos: None,
            },
        );
        b.set(
            "retry.budget.scope",
            json!("instance"),
            Origin {
                key: "Envoy: circuit breakers are per proxy".into(),
                pos: None,
            },
        );
        b.set(
            "retry.budget.max_retries",
            json!(MAX_RETRIES),
            Origin {
                key: why,
                pos: None,
            },
        );
    };
    let bulkhead = |b: &mut Builder, n: u64, origin: Origin| {
        b.set("bulkhead.max_concurrent", json!(n), origin);
        b.set(
            "bulkhead.max_queue",
            json!(0),
            Origin {
                key: "Envoy: overflow is refused at once".into(),
                pos: None,
            },
        );
        b.set(
            "bulkhead.when_full",
            json!("reject"),
            Origin {
                key: "Envoy: overflow is refused at once (503)".into(),
                pos: None,
            },
        );
        b.set(
            "bulkhead.scope",
            json!("instance"),
            Origin {
                key: "Envoy: circuit breakers are per proxy".into(),
                pos: None,
            },
        );
    };
    let found = name.and_then(|n| cluster(doc, n));
    let Some((ckey, c)) = found else {
        if let Some(n) = name {
            let (key, pos) = at.map_or(("route.cluster".to_string(), None), |(k, p)| (k, Some(p)));
            b.warn(key, pos, format!("cluster `{n}` is not in this file: Envoy's default circuit breakers are simulated (max_retries 3, max_requests 1024)"));
        }
        default_budget(b, "circuit_breakers.max_retries (default)".into());
        bulkhead(
            b,
            MAX_REQUESTS,
            Origin {
                key: "circuit_breakers.max_requests (default)".into(),
                pos: None,
            },
        );
        return;
    };
    for e in c.entries() {
        let key = join(&ckey, &e.key);
        if e.key == "outlier_detection" && !b.target.is_call() {
            b.unmodelled(
                &key,
                Some(e.key_pos),
                "outlier ejection (a layer's dependency is one host; ejecting it is not simulated)",
            );
        }
    }
    let Some((tkey, t)) = thresholds(c, &ckey, priority) else {
        let of = if priority == "DEFAULT" {
            String::new()
        } else {
            format!(", no {priority} priority thresholds")
        };
        default_budget(
            b,
            format!("{ckey}.circuit_breakers (default max_retries{of})"),
        );
        bulkhead(
            b,
            MAX_REQUESTS,
            Origin {
                key: format!("{ckey}.circuit_breakers (default max_requests{of})"),
                pos: None,
            },
        );
        return;
    };
    let mut max_requests = (
        MAX_REQUESTS,
        Origin {
            key: format!("{tkey}.max_requests (default)"),
            pos: None,
        },
    );
    let mut max_retries = (
        MAX_RETRIES,
        Origin {
            key: format!("{tkey}.max_retries (default)"),
            pos: None,
        },
    );
    let mut budget = None;
    for e in t.entries() {
        let key = join(&tkey, &e.key);
        match e.key.as_str() {
            "priority" => {}
            "max_requests" => {
                if let Some(n) = uint(b, &e.value, &key, 1, u64::from(u32::MAX)) {
                    max_requests = (n, Origin { key, pos: Some(e.value.pos) });
                }
            }
            "max_retries" => {
                if let Some(n) = uint(b, &e.value, &key, 0, u64::from(u32::MAX)) {
                    max_retries = (n, Origin { key, pos: Some(e.value.pos) });
                }
            }
            "retry_budget" => budget = Some((key, &e.value)),
            "max_connections" | "max_pending_requests" | "max_connection_pools" => {
                b.unmodelled(&key, Some(e.key_pos), "connection pool limits (stormsim limits a layer's concurrent requests: max_requests)")
            }
            "track_remaining" => b.warn(key, Some(e.key_pos), "statistics only"),
            _ => b.unmodelled(&key, Some(e.key_pos), "a circuit breaker threshold stormsim does not know"),
        }
    }
    bulkhead(b, max_requests.0, max_requests.1);
    b.set(
        "retry.budget.scope",
        json!("instance"),
        Origin {
            key: "Envoy: circuit breakers are per proxy".into(),
            pos: None,
        },
    );
    match budget {
        Some((bkey, rb)) => {
            b.set(
                "retry.budget.kind",
                json!("envoy"),
                Origin {
                    key: bkey.clone(),
                    pos: Some(rb.pos),
                },
            );
            let mut percent = (
                BUDGET_PERCENT,
                Origin {
                    key: format!("{bkey}.budget_percent (default)"),
                    pos: None,
                },
            );
            let mut min = (
                MIN_RETRY_CONCURRENCY,
                Origin {
                    key: format!("{bkey}.min_retry_concurrency (default)"),
                    pos: None,
                },
            );
            for e in rb.entries() {
                let key = join(&bkey, &e.key);
                match e.key.as_str() {
                    "budget_percent" => {
                        let v = e.value.get("value").unwrap_or(&e.value);
                        if let Some(p) = number(b, v, &join(&key, "value"), 0.0, 100.0) {
                            percent = (
                                p,
                                Origin {
                                    key: join(&key, "value"),
                                    pos: Some(v.pos),
                                },
                            );
                        }
                    }
                    "min_retry_concurrency" => {
                        if let Some(n) = uint(b, &e.value, &key, 0, u64::from(u32::MAX)) {
                            min = (
                                n,
                                Origin {
                                    key,
                                    pos: Some(e.value.pos),
                                },
                            );
                        }
                    }
                    _ => b.unmodelled(
                        &key,
                        Some(e.key_pos),
                        "a retry_budget field stormsim does not know",
                    ),
                }
            }
            b.set("retry.budget.budget_percent", num(percent.0), percent.1);
            b.set("retry.budget.min_retry_concurrency", json!(min.0), min.1);
        }
        None => {
            b.set(
                "retry.budget.kind",
                json!("envoy_max_retries"),
                Origin {
                    key: max_retries.1.key.clone(),
                    pos: max_retries.1.pos,
                },
            );
            b.set(
                "retry.budget.max_retries",
                json!(max_retries.0),
                max_retries.1,
            );
        }
    }
}

// ---------------------------------------------------------------- export

/// The `retry_on` tokens and status codes that give the outcomes `want`
/// on a route of `kind` (what the file's tokens say, [`RouteKind`]),
/// changing the file's tokens as little as possible: HTTP conditions and
/// status codes on an HTTP route, gRPC conditions for the statuses on a
/// gRPC route (`resource-exhausted` for 429, never the HTTP code).
pub(crate) fn retry_on_tokens(
    current: &[String],
    codes: &[u16],
    want: &[String],
    kind: RouteKind,
) -> Result<(Vec<String>, Vec<u16>), String> {
    let r = tokens_for(current, codes, want, kind)?;
    if kind == RouteKind::Grpc && RouteKind::of(r.0.iter().map(String::as_str)) == RouteKind::Http {
        // Without a gRPC condition the route reads as an HTTP one again
        // (whose `5xx` retries every 5xx): written as one.
        return tokens_for(current, codes, want, RouteKind::Http);
    }
    Ok(r)
}

fn tokens_for(
    current: &[String],
    codes: &[u16],
    want: &[String],
    kind: RouteKind,
) -> Result<(Vec<String>, Vec<u16>), String> {
    let grpc = kind == RouteKind::Grpc;
    let contributes = |t: &str| -> Vec<String> {
        if t == "retriable-status-codes" {
            if grpc {
                return Vec::new();
            }
            return codes.iter().map(|c| c.to_string()).collect();
        }
        condition(t, kind).map_or(Vec::new(), |o| o.iter().map(|s| s.to_string()).collect())
    };
    let mut tokens: Vec<String> = current
        .iter()
        .filter(|t| {
            // A gRPC condition says nothing on an HTTP route (Istio's
            // default names two): not written there.
            !(kind == RouteKind::Http && GRPC_CONDITIONS.contains(&t.as_str()))
                && (t.as_str() == "retriable-status-codes"
                    || contributes(t).iter().all(|o| want.contains(o)))
        })
        .cloned()
        .collect();
    let covered = |tokens: &[String]| -> Vec<String> {
        tokens
            .iter()
            .filter(|t| t.as_str() != "retriable-status-codes")
            .flat_map(|t| contributes(t))
            .collect()
    };
    let mut missing: Vec<String> = want
        .iter()
        .filter(|o| !covered(&tokens).contains(o))
        .cloned()
        .collect();
    // Envoy retries a per-try timeout only as a reset (`reset`,
    // `gateway-error`, `5xx`), and each of those retries connection
    // failures too; `connect-failure` retries a connection failure alone.
    if missing.iter().any(|o| o == "timeout") {
        if !want.iter().any(|w| w == "connection") {
            return Err("Envoy retries a per-try timeout only as a reset, under `reset`, `gateway-error` or `5xx`, and each of them also retries connection failures (retry_state_impl.cc, wouldRetryFromReset): add `connection` to retry_on, or drop `timeout`".into());
        }
        if !grpc
            && ["502", "503", "504"]
                .iter()
                .all(|s| want.iter().any(|w| w == s))
        {
            tokens.push("gateway-error".into());
        } else {
            tokens.push("reset".into());
        }
        missing.retain(|o| o != "timeout" && o != "connection");
    }
    if missing.iter().any(|o| o == "connection") {
        tokens.push("connect-failure".into());
        missing.retain(|o| o != "connection");
    }
    let mut new_codes: Vec<u16> = Vec::new();
    for o in &missing {
        if o == "5xx" {
            if grpc {
                return Err("a gRPC route has no condition for every 5xx: Envoy's `5xx` reads the HTTP status, which a gRPC response carries as 200; name the statuses (503 is `unavailable`, 429 `resource-exhausted`, 500 `internal`)".into());
            }
            return Err("retrying every 5xx is Envoy's `5xx`, which also retries connection failures and per-try timeouts".into());
        }
        if grpc {
            if covered(&tokens).contains(o) {
                continue;
            }
            match grpc_condition_for(o) {
                Some(c) => tokens.push(c.to_string()),
                None => {
                    return Err(format!(
                        "a gRPC route retries gRPC statuses, by Envoy's gRPC conditions ({}: unavailable is 503, resource-exhausted 429, internal 500); none stands for `{o}`, and an HTTP status code never matches a gRPC response (its HTTP status is 200)",
                        GRPC_CONDITIONS.join(", ")
                    ));
                }
            }
            continue;
        }
        match o.parse::<u16>() {
            Ok(c) if !covered(&tokens).contains(o) => new_codes.push(c),
            Ok(_) => {}
            Err(_) => return Err(format!("Envoy has no retry_on condition for `{o}`")),
        }
    }
    if grpc {
        // The file's status codes match no gRPC response: left as they
        // are (they change nothing here).
        tokens.dedup();
        return Ok((tokens, codes.to_vec()));
    }
    // Codes already listed that are still wanted stay, in their order.
    let mut all_codes: Vec<u16> = codes
        .iter()
        .copied()
        .filter(|c| want.contains(&c.to_string()) && !covered(&tokens).contains(&c.to_string()))
        .collect();
    for c in new_codes {
        if !all_codes.contains(&c) {
            all_codes.push(c);
        }
    }
    tokens.retain(|t| t != "retriable-status-codes");
    if !all_codes.is_empty() {
        tokens.push("retriable-status-codes".into());
    }
    tokens.dedup();
    Ok((tokens, all_codes))
}

pub(crate) fn write(
    w: &mut Writer<'_>,
    sel: &Selector,
    wanted: &Map<String, Value>,
    changed: &[String],
) {
    let doc = w.doc;
    let Ok(r) = select(
        doc,
        sel.route.as_deref().unwrap_or(""),
        sel.virtual_host.as_deref(),
    ) else {
        return;
    };
    let Some(action) = r.route.get("route") else {
        return;
    };
    let akey = join(&r.key, "route");
    // The retry policy in force: the route's, else the virtual host's.
    // Changes are always written to the route: a route's retry_policy
    // replaces the virtual host's whole (Envoy does not merge them), so an
    // inherited policy is first copied to the route, complete, and the
    // other routes of the virtual host keep the one they had.
    let (pbase, pkey, pnode): (&Node, String, &str) = (action, akey.clone(), "retry_policy");
    let policy = action
        .get("retry_policy")
        .or_else(|| r.vhost.get("retry_policy"));
    let edits_policy = changed.iter().any(|l| {
        matches!(
            l.as_str(),
            "timeout" | "retry.max_attempts" | "retry.retry_on"
        ) || l.starts_with("retry.backoff.")
    });
    if action.get("retry_policy").is_none()
        && edits_policy
        && let Some(vp) = r.vhost.get("retry_policy")
    {
        let vkey = join(&r.vhost_key, "retry_policy");
        w.note(format!(
            "the route had no retry_policy of its own: the virtual host's ({vkey}, line {}) is copied to it with the change, so the virtual host's other routes keep theirs",
            vp.pos.0
        ));
        let mut keys = vec!["retry_policy".to_string()];
        if let Err(e) = copy_policy(w, action, &akey, &mut keys, vp) {
            w.refuse(&vkey, &e);
            return;
        }
    }
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    let dur = |p: &str| {
        want(p)
            .and_then(Value::as_str)
            .and_then(|s| crate::scenario::units::parse_duration(s).ok())
    };
    let cluster_node = action
        .get("cluster")
        .and_then(Node::scalar)
        .and_then(|n| cluster(doc, n));
    let mut did_retry_on = false;
    let mut did_backoff = false;
    for leaf in changed {
        let leaf = leaf.as_str();
        let r = if leaf == "total_timeout" {
            let d = dur(leaf).unwrap_or(Duration(0));
            w.put_duration(action, &akey, &["timeout"], d, Notation::Proto)
        } else if leaf == "timeout" {
            match dur(leaf) {
                Some(d) => w.put_duration(
                    pbase,
                    &pkey,
                    &[pnode, "per_try_timeout"],
                    d,
                    Notation::Proto,
                ),
                // No per-try timeout: the route's own goes (one its
                // virtual host's policy gives is the other routes' too).
                None => match action
                    .get("retry_policy")
                    .and_then(|p| p.get("per_try_timeout"))
                {
                    Some(t) => w.remove(t, &format!("{akey}.retry_policy.per_try_timeout")),
                    None => w.refuse_leaf(
                        leaf,
                        "the per_try_timeout is the virtual host's retry_policy's, which other routes share: remove it there by hand",
                    ),
                },
            }
        } else if leaf == "retry.max_attempts" {
            match want(leaf).and_then(Value::as_u64) {
                Some(n) if n >= 1 => {
                    if policy.is_none() && n > 1 {
                        w.note(
                            "the route had no retry_policy: one is added; check its retry_on"
                                .into(),
                        );
                    }
                    w.put(
                        pbase,
                        &pkey,
                        &[pnode, "num_retries"],
                        Lit::Bare((n - 1).to_string()),
                    )
                }
                _ => w.refuse_leaf(leaf, "missing"),
            }
        } else if leaf == "retry.retry_on" {
            if did_retry_on {
                Ok(())
            } else {
                did_retry_on = true;
                let wanted_list: Vec<String> = want(leaf)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|v| v.to_string().trim_matches('"').to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                let cur_tokens: Vec<String> = policy
                    .and_then(|p| p.get("retry_on"))
                    .and_then(Node::scalar)
                    .map(|s| {
                        s.split(',')
                            .map(|t| t.trim().to_string())
                            .filter(|t| !t.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                let cur_codes: Vec<u16> = policy
                    .and_then(|p| p.get("retriable_status_codes"))
                    .map_or(&[][..], Node::items)
                    .iter()
                    .filter_map(|c| c.scalar().and_then(|s| s.parse().ok()))
                    .collect();
                let kind = RouteKind::of(cur_tokens.iter().map(String::as_str));
                match retry_on_tokens(&cur_tokens, &cur_codes, &wanted_list, kind) {
                    Ok((tokens, codes)) => {
                        let mut res = Ok(());
                        if tokens != cur_tokens {
                            res = w.put(
                                pbase,
                                &pkey,
                                &[pnode, "retry_on"],
                                Lit::Str(tokens.join(",")),
                            );
                        }
                        if res.is_ok() && codes != cur_codes && !codes.is_empty() {
                            res = w.put(
                                pbase,
                                &pkey,
                                &[pnode, "retriable_status_codes"],
                                Lit::List(codes.iter().map(|c| Lit::Bare(c.to_string())).collect()),
                            );
                        }
                        // No condition reads the route's status codes any
                        // more: the list goes, rather than stay in the file
                        // as codes it seems to retry.
                        if res.is_ok()
                            && codes.is_empty()
                            && let Some(list) = action
                                .get("retry_policy")
                                .and_then(|p| p.get("retriable_status_codes"))
                        {
                            res = w.remove(
                                list,
                                &format!("{akey}.retry_policy.retriable_status_codes"),
                            );
                        }
                        res
                    }
                    Err(e) => w.refuse_leaf(leaf, &e),
                }
            }
        } else if leaf == "retry.backoff.base" || leaf == "retry.backoff.cap" {
            if did_backoff {
                Ok(())
            } else {
                did_backoff = true;
                let base =
                    dur("retry.backoff.base").unwrap_or(Duration::from_millis(BASE_INTERVAL_MS));
                let cap = dur("retry.backoff.cap").unwrap_or(Duration(base.0 * 10));
                let mut res = w.put_duration(
                    pbase,
                    &pkey,
                    &[pnode, "retry_back_off", "base_interval"],
                    base,
                    Notation::Proto,
                );
                let has_max = policy
                    .and_then(|p| p.get("retry_back_off"))
                    .and_then(|b| b.get("max_interval"))
                    .is_some();
                if res.is_ok() && (has_max || cap.0 != base.0 * 10) {
                    res = w.put_duration(
                        pbase,
                        &pkey,
                        &[pnode, "retry_back_off", "max_interval"],
                        cap,
                        Notation::Proto,
                    );
                }
                res
            }
        } else if leaf == "retry.retry_after" {
            w.refuse_leaf(leaf, "Envoy's rate-limited backoff needs its reset_headers: change rate_limited_retry_back_off by hand")
        } else if leaf == "hedge_on_timeout" {
            let on = want(leaf).and_then(Value::as_bool).unwrap_or(false);
            w.put(
                action,
                &akey,
                &["hedge_policy", "hedge_on_per_try_timeout"],
                Lit::Bare(on.to_string()),
            )
        } else if leaf.starts_with("outlier_detection") {
            let c = cluster_node.as_ref().map(|(k, c)| (k.as_str(), *c));
            let res = super::envoy_outlier::write(w, c, leaf, wanted, changed);
            if res.is_ok()
                && let Some((ckey, c)) = &cluster_node
            {
                w.note(shared_cluster_note(doc, &r, ckey, c, "outlier_detection"));
            }
            res
        } else if leaf == "retry_other_replica" {
            w.refuse_leaf(
                leaf,
                "a retry_host_predicate is a list of typed extensions: add or remove envoy.retry_host_predicates.previous_hosts by hand",
            )
        } else if leaf.starts_with("retry.budget") || leaf.starts_with("bulkhead") {
            match &cluster_node {
                None => w.refuse_leaf(leaf, "the route's cluster is not in this file, so its circuit breakers cannot be edited here"),
                Some((ckey, c)) => {
                    let res = write_breakers(w, ckey, c, route_priority(action), leaf, wanted);
                    if res.is_ok() {
                        let what = if leaf.starts_with("retry.budget") {
                            "circuit_breakers (the retry budget)"
                        } else {
                            "circuit_breakers"
                        };
                        w.note(shared_cluster_note(doc, &r, ckey, c, what));
                    }
                    res
                }
            }
        } else {
            w.refuse_leaf(
                leaf,
                "fixed by Envoy (exponential backoff doubling, full jitter)",
            )
        };
        if let Err(e) = r {
            w.refuse_leaf(leaf, &e).ok();
        }
    }
}

/// The note for an edit of the cluster `c` (its `what`: circuit breakers,
/// retry budget, outlier detection) made for the route `r`: those are the
/// cluster's, so they hold for every route that sends to it (Envoy keeps
/// one set per cluster, shared by all its callers), and the note names
/// the file's other routes to it, by name, else match, with their line.
fn shared_cluster_note(doc: &Doc, r: &RouteAt, ckey: &str, c: &Node, what: &str) -> String {
    let cname = c.get("name").and_then(Node::scalar).unwrap_or("");
    let sends_to = |route: &Node| {
        let Some(action) = route.get("route") else {
            return false;
        };
        action.get("cluster").and_then(Node::scalar) == Some(cname)
            || action
                .get("weighted_clusters")
                .and_then(|wc| wc.get("clusters"))
                .map_or(&[][..], Node::items)
                .iter()
                .any(|wc| wc.get("name").and_then(Node::scalar) == Some(cname))
    };
    let others: Vec<String> = routes(doc)
        .iter()
        .filter(|o| !std::ptr::eq(o.route, r.route) && sends_to(o.route))
        .map(|o| {
            let label = o
                .route
                .get("name")
                .and_then(Node::scalar)
                .or_else(|| {
                    let m = o.route.get("match")?;
                    ["prefix", "path", "path_separated_prefix"]
                        .iter()
                        .find_map(|k| m.get(k).and_then(Node::scalar))
                })
                .map_or_else(String::new, |l| format!("`{}` ", crate::escape::escape(l)));
            format!(
                "{label}(line {}, virtual host {})",
                o.route.pos.0,
                vhost_label(o.vhost)
            )
        })
        .collect();
    let also = if others.is_empty() {
        "no other route in this file sends to it (routes in other files, or other listeners, may)"
            .to_string()
    } else {
        format!(
            "in this file that is also {} {}",
            if others.len() == 1 {
                "the route"
            } else {
                "the routes"
            },
            others.join(", ")
        )
    };
    format!(
        "{ckey}.{what} (cluster `{}`, line {}) is the cluster's, not the route's: the change applies to every route that sends to `{}`; {also}",
        crate::escape::escape(cname),
        c.pos.0,
        crate::escape::escape(cname),
    )
}

/// Adds `node` (a mapping of the virtual host's retry policy) below
/// `base` at `keys`, value by value, as the file wrote them.
fn copy_policy<'d>(
    w: &mut Writer<'d>,
    base: &'d Node,
    base_key: &str,
    keys: &mut Vec<String>,
    node: &Node,
) -> Result<(), String> {
    for e in node.entries() {
        keys.push(e.key.clone());
        let lit = match &e.value.kind {
            Kind::Map { entries, .. } if !entries.is_empty() => {
                copy_policy(w, base, base_key, keys, &e.value)?;
                keys.pop();
                continue;
            }
            Kind::Scalar {
                text,
                style: Style::Block,
            } => Lit::Str(text.clone()),
            Kind::Scalar { text, style } => {
                let raw = &w.doc.text[e.value.span.clone()];
                let typed = text.parse::<f64>().is_ok()
                    || matches!(text.as_str(), "true" | "false" | "null");
                if raw.contains('\n') || (*style == Style::Plain && !typed) {
                    // A string: written again as the place it goes to
                    // needs (`5xx,reset` is quoted inside `{ ... }`).
                    Lit::Str(text.clone())
                } else {
                    Lit::Bare(raw.to_string())
                }
            }
            _ => Lit::Bare(flow(&e.value)),
        };
        let k: Vec<&str> = keys.iter().map(String::as_str).collect();
        w.put(base, base_key, &k, lit)?;
        keys.pop();
    }
    Ok(())
}

/// `node` written on one line (a flow collection, or JSON).
fn flow(node: &Node) -> String {
    match &node.kind {
        Kind::Map { entries, .. } => {
            let inner: Vec<String> = entries
                .iter()
                .map(|e| format!("{}: {}", edit::json_string(&e.key), flow(&e.value)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        Kind::Seq { items, .. } => {
            let inner: Vec<String> = items.iter().map(flow).collect();
            format!("[{}]", inner.join(", "))
        }
        Kind::Scalar { text, style } => {
            let bare = *style == Style::Plain
                && (text.parse::<f64>().is_ok()
                    || matches!(text.as_str(), "true" | "false" | "null"));
            if bare {
                text.clone()
            } else {
                edit::json_string(text)
            }
        }
    }
}

fn write_breakers<'d>(
    w: &mut Writer<'d>,
    ckey: &str,
    c: &'d Node,
    priority: &str,
    leaf: &str,
    wanted: &Map<String, Value>,
) -> Result<(), String> {
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    let Some((tkey, t)) = thresholds(c, ckey, priority) else {
        return w.refuse_leaf(
            leaf,
            &format!("the cluster has no circuit_breakers.thresholds for the route's priority {priority}: add one by hand"),
        );
    };
    let kind = want("retry.budget.kind").and_then(Value::as_str);
    match (leaf, kind) {
        ("bulkhead.max_concurrent", _) => match want(leaf).and_then(Value::as_u64) {
            Some(n) => w.put(t, &tkey, &["max_requests"], Lit::Bare(n.to_string())),
            None => w.refuse_leaf(leaf, "Envoy always limits requests (max_requests)"),
        },
        ("retry.budget.max_retries", Some("envoy_max_retries")) if t.get("retry_budget").is_none() => {
            match want(leaf).and_then(Value::as_u64) {
                Some(n) => w.put(t, &tkey, &["max_retries"], Lit::Bare(n.to_string())),
                None => w.refuse_leaf(leaf, "missing"),
            }
        }
        ("retry.budget.budget_percent", Some("envoy")) if t.get("retry_budget").is_some() => match want(leaf).and_then(Value::as_f64) {
            Some(p) => w.put(t, &tkey, &["retry_budget", "budget_percent", "value"], Lit::Bare(super::fmt_num(p))),
            None => w.refuse_leaf(leaf, "missing"),
        },
        ("retry.budget.min_retry_concurrency", Some("envoy")) if t.get("retry_budget").is_some() => {
            match want(leaf).and_then(Value::as_u64) {
                Some(n) => w.put(t, &tkey, &["retry_budget", "min_retry_concurrency"], Lit::Bare(n.to_string())),
                None => w.refuse_leaf(leaf, "missing"),
            }
        }
        _ => w.refuse_leaf(
            leaf,
            "switching between max_retries and retry_budget, or a budget Envoy does not have, is an edit to make by hand",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn retry_on_changes_little() {
        let cur = s(&["gateway-error", "connect-failure", "reset"]);
        // Same outcomes: same tokens.
        let want = s(&["timeout", "502", "503", "504", "connection"]);
        assert_eq!(
            retry_on_tokens(&cur, &[], &want, RouteKind::Http).unwrap(),
            (cur.clone(), vec![])
        );
        // Add 429: retriable-status-codes.
        let mut more = want.clone();
        more.push("429".into());
        assert_eq!(
            retry_on_tokens(&cur, &[], &more, RouteKind::Http).unwrap(),
            (
                s(&[
                    "gateway-error",
                    "connect-failure",
                    "reset",
                    "retriable-status-codes"
                ]),
                vec![429]
            )
        );
        // Drop per-try timeouts: only connect-failure stays.
        let fewer = s(&["connection", "502", "503", "504"]);
        assert_eq!(
            retry_on_tokens(&cur, &[], &fewer, RouteKind::Http).unwrap(),
            (
                s(&["connect-failure", "retriable-status-codes"]),
                vec![502, 503, 504]
            )
        );
        // A timeout without connection failures cannot be said.
        let h = RouteKind::Http;
        assert!(retry_on_tokens(&cur, &[], &s(&["timeout"]), h).is_err());
        assert!(retry_on_tokens(&cur, &[], &s(&["timeout", "502", "503", "504"]), h).is_err());
    }

    #[test]
    fn retry_on_per_route_kind() {
        let g = RouteKind::Grpc;
        let h = RouteKind::Http;
        // A gRPC route retries a 429 as RESOURCE_EXHAUSTED, never as the
        // HTTP status.
        let cur = s(&["unavailable", "cancelled"]);
        assert_eq!(
            retry_on_tokens(&cur, &[], &s(&["503", "429"]), g).unwrap(),
            (
                s(&["unavailable", "cancelled", "resource-exhausted"]),
                vec![]
            )
        );
        assert_eq!(
            retry_on_tokens(&cur, &[], &s(&["500", "connection"]), g).unwrap(),
            (s(&["cancelled", "connect-failure", "internal"]), vec![])
        );
        assert!(retry_on_tokens(&cur, &[], &s(&["502"]), g).is_err());
        assert!(retry_on_tokens(&cur, &[], &s(&["5xx"]), g).is_err());
        // A gRPC route left without a gRPC condition is written as an
        // HTTP one (its `5xx` would retry every 5xx there).
        let cur = s(&["5xx", "unavailable"]);
        assert_eq!(
            retry_on_tokens(&cur, &[], &s(&["timeout", "connection"]), g).unwrap(),
            (s(&["reset"]), vec![])
        );
        // An HTTP route drops gRPC conditions (Istio's default) and
        // writes status codes.
        let cur = s(&[
            "connect-failure",
            "refused-stream",
            "unavailable",
            "cancelled",
            "retriable-status-codes",
        ]);
        assert_eq!(
            retry_on_tokens(&cur, &[], &s(&["503", "connection"]), h).unwrap(),
            (
                s(&[
                    "connect-failure",
                    "refused-stream",
                    "retriable-status-codes"
                ]),
                vec![503]
            )
        );
        assert_eq!(RouteKind::of(["5xx", " unavailable"]), g);
        assert_eq!(RouteKind::of(["5xx", "reset"]), h);
        assert_eq!(condition("5xx", g), Some(&["timeout", "connection"][..]));
        assert_eq!(condition("unavailable", h), Some(&[][..]));
        assert_eq!(condition("resource-exhausted", g), Some(&["429"][..]));
    }
}
