//! `istio-virtualservice`: an Istio `VirtualService` (one or more YAML
//! documents, or the `items` of a `kind: List` as `kubectl get -o yaml`
//! prints them; other kinds in the file are skipped), one `spec.http[]`
//! route picked by host and, when the host has several, by name or, for a
//! route without one, by its index (`#N`).
//!
//! Istio turns the route into an Envoy route, so the simulated behaviour is
//! Envoy's (`envoy.rs`); what Istio adds is its own defaults and spelling.
//! Sources (docs/sources/config-formats.md §4): istio/istio
//! `pilot/pkg/networking/core/route/retry/retry.go` (`DefaultPolicy`: with
//! no `retries` block a route retries 2 times, `retry_on`
//! `connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes`
//! and no status code (503 was one until istio/istio PR #52111, 1.24; see
//! `DEFAULT_OUTCOMES` for what the simulation retries), the
//! `previous_hosts` predicate and 5 host selection attempts; `ConvertPolicy`: `attempts` ≤ 0 turns retries off, otherwise
//! the default is the starting point and `attempts`, `retryOn`,
//! `perTryTimeout` and `backoff` replace its fields; a bare number in
//! `retryOn` that is an HTTP status is a retriable status code, and
//! `retriable-status-codes` is added for it), istio/api
//! `networking/v1alpha3/virtual_service.proto` (`HTTPRetry`: `attempts`,
//! `perTryTimeout` at least 1 ms, `retryOn`, `retryRemoteLocalities`,
//! `retryIgnorePreviousHosts`, `backoff`; `HTTPRoute.timeout`, disabled by
//! default), and Envoy's back-off (`retry_state_impl.cc`: 25 ms base,
//! 10 × base cap, full jitter).
//!
//! What maps to what:
//!
//! | VirtualService | layer |
//! |---|---|
//! | `http[].timeout` (none) | `total_timeout` |
//! | `retries.attempts` (2 with no block; 0: off) | `retry.max_attempts` = attempts + 1 |
//! | `retries.perTryTimeout` | `timeout` |
//! | `retries.retryOn` (Envoy's conditions, gRPC names, status codes) | `retry.retry_on` |
//! | `retries.backoff` (25 ms; cap 10 × base) | `retry.backoff` exponential × 2, `retry.jitter: full` |
//!
//! Circuit breakers and retry budgets live in a `DestinationRule`, not
//! here: the layer's `retry.budget` and `bulkhead` are left to the
//! scenario.

use serde_json::{Map, Value, json};

use super::durations::{Notation, parse_go};
use super::edit::Lit;
use super::envoy::{INERT, RouteKind, condition, grpc_codes_warning, retry_on_tokens};
use super::tree::{Doc, Node};
use super::write::Writer;
use super::{Builder, Finding, Origin, Selector, get_path, join, sim_attempts, uint};
use crate::scenario::units::Duration;

/// `DefaultPolicy` (retry.go): 2 retries on these conditions, and no
/// retriable status code. Istio retried status 503 by default until
/// istio/istio PR #52111 ("exclude unsafe 503 from default RetryPolicy",
/// 1.24): `RetriableStatusCodes` [503] is now set only when the feature
/// `EXCLUDE_UNSAFE_503_FROM_DEFAULT_RETRY` (pilot/pkg/features, default
/// true) is turned off, as an older compatibility version does.
const DEFAULT_RETRIES: u64 = 2;
const DEFAULT_RETRY_ON: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";
/// What the default's conditions retry in the simulation. The default is
/// set on every route, HTTP and gRPC alike; `unavailable` and `cancelled`
/// are gRPC statuses (Envoy reads them from a response's `grpc-status`),
/// which an HTTP response never carries, so of the default only
/// `connect-failure` and `refused-stream` (a connection failure) retry,
/// and an HTTP 503 is not retried. (A `retryOn` that names `unavailable`
/// itself says the route carries gRPC, whose 503 stands for UNAVAILABLE,
/// as the grpc presets read it: there it retries 503.)
const DEFAULT_OUTCOMES: &[&str] = &["connection"];

/// Istio's default retryOn, as the simulation reads it, with a warning
/// about the gRPC statuses it also names.
fn default_outcomes(b: &mut Builder, key: &str) -> Vec<Value> {
    b.warn(
        key,
        None,
        "Istio's default retryOn also retries the gRPC statuses UNAVAILABLE and CANCELLED (`unavailable`, `cancelled`), which an HTTP response never carries: simulated as an HTTP route, retrying connection failures only (no status code since Istio 1.24, PR #52111). For a gRPC service, whose 503 stands for UNAVAILABLE, add 503 to retry.retry_on beside `from` (an `export` of that writes a retryOn replacing the default, and its note says to keep `unavailable,cancelled` in it)",
    );
    DEFAULT_OUTCOMES.iter().map(|o| json!(o)).collect()
}
/// Envoy's back-off base when `backoff` is absent (the cap is 10 × base).
const BASE_INTERVAL_MS: u64 = 25;

/// The status codes Go's `http.StatusText` knows (retry.go takes a number
/// in `retryOn` as a status code only when it is one of these).
fn is_http_status(c: u16) -> bool {
    matches!(c,
        100..=103 | 200..=208 | 226 | 300..=305 | 307 | 308 | 400..=418 | 421..=426
        | 428 | 429 | 431 | 451 | 500..=508 | 510 | 511)
}

/// One `http` route of a VirtualService.
pub(crate) struct HttpAt<'d> {
    pub key: String,
    /// Its index in `spec.http` (what `route: "#N"` selects).
    pub index: usize,
    pub node: &'d Node,
    /// `metadata.name` of its VirtualService, for people.
    pub vs: String,
}

/// The VirtualServices of the file, with the key path prefix of each: a
/// document of `kind: VirtualService`, or an item of a `kind: List`
/// document (what `kubectl get virtualservices -o yaml` prints: Kubernetes
/// API conventions, "Lists and Simple kinds", a `v1` `List` whose `items`
/// are the objects).
fn virtual_services(doc: &Doc) -> Vec<(String, &Node)> {
    let is_vs = |n: &Node| n.get("kind").and_then(Node::scalar) == Some("VirtualService");
    let mut out = Vec::new();
    for root in &doc.roots {
        if is_vs(root) {
            out.push((String::new(), root));
        } else if root.get("kind").and_then(Node::scalar) == Some("List") {
            for (i, item) in root
                .get("items")
                .map_or(&[][..], Node::items)
                .iter()
                .enumerate()
            {
                if is_vs(item) {
                    out.push((format!("items[{i}]."), item));
                }
            }
        }
    }
    out
}

/// How well the host `have` of a file matches the host `want` given:
/// `None` for not at all; a greater value for a more specific match.
/// Exactly, or by its short name (`reviews` for
/// `reviews.prod.svc.cluster.local`): best. A wildcard host of the
/// VirtualService's `hosts` (`*.example.com`, and `*` for every host)
/// matches the hosts under it, as Istio matches them (a `*` stands for
/// one or more leading labels), and among wildcards the longer one is the
/// more specific, as Istio picks it: `exact` is false for a destination's
/// host, which names one service and is never a wildcard.
///
/// A short host of the file (`reviews`, no dot) is the service of that
/// name in the VirtualService's namespace `ns`, as Istio reads it
/// (istio/api `virtual_service.proto`, `hosts`: "Istio will interpret the
/// short name based on the namespace of the rule"; pilot
/// `model.ResolveShortnameToFQDN`: a host without a dot, not `*`, gets
/// `.<namespace>.svc.<domain>`, `cluster.local` by default); without a
/// namespace in the file (kubectl's current one applies), by its first
/// label. Ranking exact hosts first, then the longer wildcard, then `*`,
/// is Istio's (`pilot/pkg/model/config.go` `MostSpecificHostMatch`: an
/// exact match, else the wildcard `host.MoreSpecific` ranks first;
/// `ResolveShortnameToFQDN` is in the same file).
fn host_rank(have: &str, want: &str, wildcard: bool, ns: Option<&str>) -> Option<(u8, usize)> {
    let short = !have.contains('.') && have != "*";
    let fqdn = match ns {
        Some(ns) if short => Some(format!("{have}.{ns}.svc.cluster.local")),
        _ => None,
    };
    if have == want
        || fqdn.as_deref() == Some(want)
        || (!want.contains('.') && have.split('.').next() == Some(want))
        || (short && ns.is_none() && want.split('.').next() == Some(have))
    {
        return Some((2, 0));
    }
    if !wildcard {
        return None;
    }
    if have == "*" {
        return Some((0, 0));
    }
    let suffix = have.strip_prefix('*')?;
    (suffix.starts_with('.') && want.len() > suffix.len() && want.ends_with(suffix))
        .then_some((1, suffix.len()))
}

/// The host `h` of a file as Istio reads it: a short name (no dot, not
/// `*`) is `h.<namespace>.svc.cluster.local` in a VirtualService with a
/// namespace (pilot `model.ResolveShortnameToFQDN`), so the same short
/// name in two namespaces is two hosts.
fn full_host(h: &str, ns: Option<&str>) -> String {
    match ns {
        Some(ns) if !h.contains('.') && h != "*" => format!("{h}.{ns}.svc.cluster.local"),
        _ => h.to_string(),
    }
}

/// The route the selector picks: among the `http` routes of every
/// VirtualService whose `hosts` hold the host, or whose destinations go to
/// it, the one named `route` (or the only one). Of several matches, only
/// the most specific count (see [`host_rank`]).
pub(crate) fn select<'d>(
    doc: &'d Doc,
    host: &str,
    route: Option<&str>,
) -> Result<HttpAt<'d>, Finding> {
    // Each route, with how well it matches and the file's host it matched.
    type Rank = Option<((u8, usize), String)>;
    let mut all: Vec<(HttpAt<'d>, Rank)> = Vec::new();
    let mut known_hosts: Vec<String> = Vec::new();
    let mut seen_vs = false;
    let best = |a: Rank, b: Rank| match (&a, &b) {
        (Some(x), Some(y)) if y.0 > x.0 => b,
        (None, _) => b,
        _ => a,
    };
    for (prefix, root) in virtual_services(doc) {
        seen_vs = true;
        let vs = root
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Node::scalar)
            .unwrap_or("")
            .to_string();
        let ns = root
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Node::scalar);
        let Some(spec) = root.get("spec") else {
            continue;
        };
        let mut hosts_rank: Rank = None;
        for h in spec
            .get("hosts")
            .map_or(&[][..], Node::items)
            .iter()
            .filter_map(Node::scalar)
        {
            if !known_hosts.iter().any(|k| k == h) {
                known_hosts.push(h.to_string());
            }
            hosts_rank = best(
                hosts_rank,
                host_rank(h, host, true, ns).map(|r| (r, full_host(h, ns))),
            );
        }
        for (i, h) in spec
            .get("http")
            .map_or(&[][..], Node::items)
            .iter()
            .enumerate()
        {
            let mut rank = hosts_rank.clone();
            for d in h
                .get("route")
                .map_or(&[][..], Node::items)
                .iter()
                .filter_map(|d| d.get("destination")?.get("host")?.scalar())
            {
                if !known_hosts.iter().any(|k| k == d) {
                    known_hosts.push(d.to_string());
                }
                rank = best(
                    rank,
                    host_rank(d, host, false, ns).map(|r| (r, full_host(d, ns))),
                );
            }
            all.push((
                HttpAt {
                    key: format!("{prefix}spec.http[{i}]"),
                    index: i,
                    node: h,
                    vs: vs.clone(),
                },
                rank,
            ));
        }
    }
    if !seen_vs {
        return Err(Finding {
            pos: None,
            key: String::new(),
            message: "no `kind: VirtualService` document in this file (nor one in the `items` of a `kind: List`)".into(),
        });
    }
    let name = |h: &HttpAt| {
        h.node
            .get("name")
            .and_then(Node::scalar)
            .map(str::to_string)
    };
    let top = all
        .iter()
        .filter_map(|(_, r)| r.as_ref().map(|r| r.0))
        .max();
    let (for_host, matched): (Vec<HttpAt>, Vec<String>) = all
        .into_iter()
        .filter_map(|(h, r)| r.filter(|r| Some(r.0) == top).map(|r| (h, r.1)))
        .unzip();
    if for_host.is_empty() {
        let listed = known_hosts
            .iter()
            .map(|h| format!("`{h}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Finding {
            pos: None,
            key: String::new(),
            message: format!(
                "no VirtualService route for host `{host}` (in `hosts` or a route's `destination.host`); {}",
                if listed.is_empty() {
                    "the file names no host".to_string()
                } else {
                    format!("the file's hosts are {listed}")
                }
            ),
        });
    }
    let by_node: Vec<(&Node, String)> = for_host.iter().map(|h| h.node).zip(matched).collect();
    let matched_for = |h: &HttpAt| -> &str {
        by_node
            .iter()
            .find(|(n, _)| std::ptr::eq(*n, h.node))
            .map_or("", |(_, m)| m.as_str())
    };
    let names = |v: &[HttpAt]| -> String {
        v.iter()
            .map(|h| {
                name(h).map_or(
                    format!("`#{}` (unnamed, line {})", h.index, h.node.pos.0),
                    |n| format!("`{n}`"),
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut hits: Vec<HttpAt> = match route {
        Some(r) => {
            let known = names(&for_host);
            // `#N`: the route at index N of its VirtualService's `http`.
            let index = r
                .strip_prefix('#')
                .and_then(|n| n.trim().parse::<usize>().ok());
            let hits: Vec<HttpAt> = for_host
                .into_iter()
                .filter(|h| match index {
                    Some(i) => h.index == i,
                    None => name(h).as_deref() == Some(r),
                })
                .collect();
            if hits.is_empty() {
                let what = match index {
                    Some(i) => format!("no http route at index {i} (`spec.http[{i}]`)"),
                    None => format!("no http route named `{r}`"),
                };
                return Err(Finding {
                    pos: None,
                    key: String::new(),
                    message: format!("{what} for host `{host}`; its routes are {known}"),
                });
            }
            hits
        }
        None => for_host,
    };
    if hits.len() == 1 {
        return Ok(hits.remove(0));
    }
    // The host given matched several of the file's hosts (a short name
    // of a host in two namespaces): the full host picks one.
    let mut full: Vec<&str> = Vec::new();
    for h in &hits {
        let m = matched_for(h);
        if !full.contains(&m) {
            full.push(m);
        }
    }
    if full.len() > 1 {
        return Err(Finding {
            pos: Some(hits[1].node.pos),
            key: hits[1].key.clone(),
            message: format!(
                "host `{host}` matches {} hosts of the file ({}){}; give the full host, e.g. `host: {}`",
                full.len(),
                full.iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                match route {
                    Some(r) => format!(", each with an http route `{r}`"),
                    None => String::new(),
                },
                full[0]
            ),
        });
    }
    Err(Finding {
        pos: Some(hits[1].node.pos),
        key: hits[1].key.clone(),
        message: format!(
            "host `{host}` has {} http routes ({}); pick one with `route: NAME` (a route's `name:`) or `route: \"#N\"` (the route at `spec.http[N]`, for one without a name)",
            hits.len(),
            names(&hits)
        ),
    })
}

fn duration(b: &mut Builder, node: &Node, key: &str) -> Option<Duration> {
    if let Some(m) =
        super::durations::space_refusal(node.scalar(), "Istio (Go's time.ParseDuration)")
    {
        b.error(key, Some(node.pos), m);
        return None;
    }
    let d = node.scalar().and_then(parse_go);
    if d.is_none() {
        b.error(
            key,
            Some(node.pos),
            format!(
                "expected a duration such as 2s or 500ms (Go), found {}",
                node.describe()
            ),
        );
    }
    d
}

/// `retryOn` split as retry.go splits it: conditions, and status codes.
fn split_retry_on(text: &str) -> (Vec<String>, Vec<u16>) {
    let mut tokens = Vec::new();
    let mut codes = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u16>() {
            Ok(c) if is_http_status(c) => codes.push(c),
            _ => tokens.push(part.to_string()),
        }
    }
    if !codes.is_empty() && !tokens.iter().any(|t| t == "retriable-status-codes") {
        tokens.push("retriable-status-codes".into());
    }
    (tokens, codes)
}

/// The simulated outcomes of conditions and codes; `at` is where they
/// are written (`None`: Istio's default, which is not checked again).
fn outcomes(
    b: &mut Builder,
    tokens: &[String],
    codes: &[u16],
    at: Option<(&str, &Node)>,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut push = |v: Value| {
        if !out.contains(&v) {
            out.push(v);
        }
    };
    // A retryOn that names a gRPC condition is a gRPC route's
    // (`RouteKind`): its bare status codes match no gRPC response.
    let kind = RouteKind::of(tokens.iter().map(String::as_str));
    for t in tokens {
        if INERT.contains(&t.as_str()) {
            if let Some((key, node)) = at {
                b.warn(
                    key,
                    Some(node.pos),
                    format!("`{t}`: no simulated response meets it, so it changes nothing"),
                );
            }
            continue;
        }
        let Some(outs) = condition(t, kind) else {
            if let Some((key, node)) = at {
                b.error(
                    key,
                    Some(node.pos),
                    format!(
                        "`{t}` is neither a retry_on condition Envoy knows nor an HTTP status code"
                    ),
                );
            }
            continue;
        };
        if t == "retriable-status-codes" {
            if kind == RouteKind::Grpc {
                if let (Some((key, node)), false) = (at, codes.is_empty()) {
                    b.warn(key, Some(node.pos), grpc_codes_warning(codes));
                }
            } else {
                for c in codes {
                    push(json!(c));
                }
            }
        }
        if kind == RouteKind::Grpc
            && matches!(t.as_str(), "5xx" | "gateway-error" | "retriable-4xx")
            && let Some((key, node)) = at
        {
            b.warn(
                key,
                Some(node.pos),
                format!(
                    "`{t}` on a gRPC route (its retryOn names gRPC conditions): it reads the HTTP status, which a gRPC response carries as 200, so it retries no gRPC status{}",
                    if t == "retriable-4xx" { ": nothing here" } else { ", only resets, per-try timeouts and connection failures" }
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
    let Some(host) = sel.host.as_deref() else {
        b.error("", None, "which route? a VirtualService needs `host: NAME` (a destination host, or one of `hosts`), and `route: NAME` when the host has several http routes");
        return;
    };
    let r = match select(doc, host, sel.route.as_deref()) {
        Ok(r) => r,
        Err(f) => {
            b.errors.push(f);
            return;
        }
    };
    b.policy.selected = format!("VirtualService {} {} (line {})", r.vs, r.key, r.node.pos.0);
    let mut retries = None;
    b.absent("total_timeout");
    for e in r.node.entries() {
        let key = join(&r.key, &e.key);
        match e.key.as_str() {
            "name" | "match" | "route" | "headers" | "rewrite" | "corsPolicy" => {}
            "timeout" => {
                if let Some(d) = duration(b, &e.value, &key)
                    && d.0 > 0
                {
                    b.set("total_timeout", json!(d.to_string()), Origin { key, pos: Some(e.value.pos) });
                }
            }
            "retries" => retries = Some((key, &e.value)),
            "mirror" | "mirrors" | "mirrorPercentage" | "mirrorPercent" | "mirror_percent" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: a mirrored copy goes elsewhere and its answer is dropped, so this route's attempts do not change",
            ),
            "fault" => b.unmodelled(&key, Some(e.key_pos), "injected delays or aborts"),
            "redirect" | "directResponse" | "delegate" => b.error(
                key,
                Some(e.key_pos),
                "this route does not forward to a destination (a redirect, a direct response or a delegate)",
            ),
            _ => b.unmodelled(&key, Some(e.key_pos), "an http route field stormsim does not know"),
        }
    }
    super::envoy::envoy_retry_mechanics(b);
    b.set(
        "retry.retry_after",
        json!("ignore"),
        Origin {
            key: "Istio sets no rate-limited back-off".into(),
            pos: None,
        },
    );
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
    let mut base = (
        Duration::from_millis(BASE_INTERVAL_MS),
        Origin {
            key: "Envoy's default base_interval".into(),
            pos: None,
        },
    );
    let Some((at, p)) = retries else {
        let outs = default_outcomes(b, &r.key);
        b.set(
            "retry.max_attempts",
            json!(DEFAULT_RETRIES + 1),
            Origin {
                key: format!(
                    "{}: no retries, Istio's default 2 retries (retry.go)",
                    r.key
                ),
                pos: None,
            },
        );
        b.set(
            "retry.retry_on",
            Value::Array(outs),
            Origin {
                key: "Istio's default retryOn (retry.go)".into(),
                pos: None,
            },
        );
        set_backoff(b, base);
        other_replica(
            b,
            true,
            Origin {
                key: "Istio's default retry policy: the previous_hosts predicate (retry.go)".into(),
                pos: None,
            },
        );
        return;
    };
    if !p.is_map() {
        b.error(at, Some(p.pos), "expected a retries mapping");
        return;
    }
    // ConvertPolicy starts from the default policy, previous_hosts
    // included; `retryIgnorePreviousHosts` replaces it.
    let mut previous_hosts = (
        true,
        Origin {
            key: format!("{at}.retryIgnorePreviousHosts (default true: previous_hosts, retry.go)"),
            pos: None,
        },
    );
    let mut attempts = (
        0,
        Origin {
            key: format!("{at}.attempts (absent: 0, no retries)"),
            pos: None,
        },
    );
    let mut retry_on: Option<(Vec<Value>, Origin)> = None;
    let mut per_try = None;
    for e in p.entries() {
        let key = join(&at, &e.key);
        let o = Origin {
            key: key.clone(),
            pos: Some(e.value.pos),
        };
        match e.key.as_str() {
            "attempts" => {
                // virtual_service.proto: `int32 attempts = 1` (Istio's
                // validation refuses a negative one): any int32 is
                // Istio's; more than stormsim simulates is refused at
                // this key, as the simulator's limit (`sim_attempts`).
                if let Some(n) = uint(b, &e.value, &key, 0, i32::MAX as u64)
                    && let Some(n) = sim_attempts(
                        b,
                        &e.value,
                        &key,
                        n + 1,
                        "virtual_service.proto: attempts is an int32",
                    )
                {
                    attempts = (n - 1, o);
                }
            }
            "perTryTimeout" => {
                if let Some(d) = duration(b, &e.value, &key) {
                    if d < Duration::from_millis(1) {
                        b.error(key, Some(e.value.pos), "perTryTimeout must be at least 1ms (Istio's validation)");
                    } else {
                        per_try = Some((d, o));
                    }
                }
            }
            "retryOn" => {
                let (tokens, codes) = split_retry_on(e.value.scalar().unwrap_or(""));
                let outs = outcomes(b, &tokens, &codes, Some((&key, &e.value)));
                retry_on = Some((outs, o));
            }
            "backoff" => {
                if let Some(d) = duration(b, &e.value, &key) {
                    if d.0 == 0 {
                        b.error(key, Some(e.value.pos), "backoff must be greater than 0 (Envoy's base_interval)");
                    } else {
                        // retry.go `ConvertPolicy` hands `backoff` to Envoy
                        // as it is (`RetryBackOff{BaseInterval: in.Backoff}`),
                        // and Envoy counts whole milliseconds, truncated and
                        // at least 1 (`RetryPolicyImpl`, retry_policy_impl.cc,
                        // config_impl.cc before it moved:
                        // `PROTOBUF_GET_MS_REQUIRED`, then 1 ms when below;
                        // the cap is 10 × that), as for envoy-route.
                        let ms = Duration::from_millis((d.0 / 1_000_000).max(1));
                        if ms != d {
                            b.warn(
                                key,
                                Some(e.value.pos),
                                format!("Envoy, which runs Istio's retries, counts whole milliseconds, at least 1: {d} is {ms}"),
                            );
                        }
                        base = (ms, o);
                    }
                }
            }
            "retryIgnorePreviousHosts" if b.target.is_call() => {
                if let Some(v) = super::boolean(b, &e.value, &key) {
                    previous_hosts = (v, o);
                }
            }
            "retryRemoteLocalities" if b.target.is_call() => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: the replicas of a service are in no localities to prefer",
            ),
            "retryRemoteLocalities" | "retryIgnorePreviousHosts" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: a layer's dependency is one host, so where a retry goes changes nothing",
            ),
            _ => b.unmodelled(&key, Some(e.key_pos), "a retries field stormsim does not know"),
        }
    }
    if p.get("attempts").is_none() {
        b.warn(
            at.clone(),
            Some(p.pos),
            "no `attempts`: Istio reads 0, which turns retries off (retry.go); write `attempts` to retry",
        );
    }
    if attempts.0 == 0 {
        // retry.go: attempts ≤ 0 is no retry policy at all.
        b.set("retry.max_attempts", json!(1), attempts.1);
        b.set(
            "retry.retry_on",
            json!([]),
            Origin {
                key: format!("{at}: retries off"),
                pos: None,
            },
        );
        if let Some((_, o)) = per_try {
            b.warn(
                o.key,
                o.pos,
                "no effect: with attempts 0 Istio sets no retry policy, so no per-try timeout",
            );
        }
        other_replica(
            b,
            false,
            Origin {
                key: format!("{at}: retries off"),
                pos: None,
            },
        );
    } else {
        b.set("retry.max_attempts", json!(attempts.0 + 1), attempts.1);
        let retry_on = match retry_on {
            Some(r) => r,
            None => (
                default_outcomes(b, &at),
                Origin {
                    key: "Istio's default retryOn (retry.go)".into(),
                    pos: None,
                },
            ),
        };
        b.set("retry.retry_on", Value::Array(retry_on.0), retry_on.1);
        if let Some((d, o)) = per_try {
            b.set("timeout", json!(d.to_string()), o);
        }
        other_replica(b, previous_hosts.0, previous_hosts.1);
    }
    set_backoff(b, base);
}

/// On a call edge: whether a retry avoids the replicas already tried
/// (Envoy's `previous_hosts` predicate, which Istio sets unless
/// `retryIgnorePreviousHosts: false`).
fn other_replica(b: &mut Builder, on: bool, origin: Origin) {
    if b.target.is_call() {
        b.set("retry_other_replica", json!(on), origin);
    }
}

fn set_backoff(b: &mut Builder, (base, origin): (Duration, Origin)) {
    b.set("retry.backoff.base", json!(base.to_string()), origin);
    b.set(
        "retry.backoff.cap",
        json!(Duration(base.0.saturating_mul(10)).to_string()),
        Origin {
            key: "Envoy: max_interval 10 × base_interval".into(),
            pos: None,
        },
    );
}

// ---------------------------------------------------------------- export

pub(crate) fn write(
    w: &mut Writer<'_>,
    sel: &Selector,
    wanted: &Map<String, Value>,
    changed: &[String],
) {
    let Ok(r) = select(
        w.doc,
        sel.host.as_deref().unwrap_or(""),
        sel.route.as_deref(),
    ) else {
        return;
    };
    let node = r.node;
    let retries = node.get("retries");
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    let dur = |p: &str| {
        want(p)
            .and_then(Value::as_str)
            .and_then(|s| crate::scenario::units::parse_duration(s).ok())
    };
    let mut did_backoff = false;
    // A retries block Istio reads without `attempts` turns retries off: one
    // added for another field takes the attempts too.
    let needs_block = changed
        .iter()
        .any(|l| l == "timeout" || l == "retry.retry_on" || l.starts_with("retry.backoff"));
    if retries.is_none() && needs_block && !changed.iter().any(|l| l == "retry.max_attempts") {
        let n = want("retry.max_attempts")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_RETRIES + 1);
        w.put(
            node,
            &r.key,
            &["retries", "attempts"],
            Lit::Bare(n.saturating_sub(1).to_string()),
        )
        .ok();
    }
    for leaf in changed {
        let leaf = leaf.as_str();
        let res = match leaf {
            "total_timeout" => {
                let d = dur(leaf).unwrap_or(Duration(0));
                w.put_duration(node, &r.key, &["timeout"], d, Notation::Go)
            }
            "timeout" => match dur(leaf) {
                Some(d) => w.put_duration(node, &r.key, &["retries", "perTryTimeout"], d, Notation::Go),
                // No per-try timeout: the route's perTryTimeout goes.
                None => match retries.and_then(|p| p.get("perTryTimeout")) {
                    Some(t) => w.remove(t, &format!("{}.retries.perTryTimeout", r.key)),
                    None => Ok(()),
                },
            },
            "retry.max_attempts" => match want(leaf).and_then(Value::as_u64) {
                Some(n) if n >= 1 => {
                    if retries.is_none() {
                        w.note("the route had no retries block (Istio's default policy): one is added, and the default retryOn still applies".into());
                    }
                    w.put(node, &r.key, &["retries", "attempts"], Lit::Bare((n - 1).to_string()))
                }
                _ => w.refuse_leaf(leaf, "missing"),
            },
            "retry.retry_on" => {
                let wanted_list: Vec<String> = want(leaf)
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|v| v.to_string().trim_matches('"').to_string()).collect())
                    .unwrap_or_default();
                let written = retries
                    .and_then(|p| p.get("retryOn"))
                    .and_then(Node::scalar);
                let (cur_tokens, cur_codes) = split_retry_on(written.unwrap_or(DEFAULT_RETRY_ON));
                // Istio's default, set on every route, is read as an HTTP
                // route's (`DEFAULT_OUTCOMES`): its gRPC conditions are
                // not written into an HTTP route's retryOn. A retryOn of
                // the file's own says what the route carries.
                let kind = match written {
                    Some(_) => RouteKind::of(cur_tokens.iter().map(String::as_str)),
                    None => RouteKind::Http,
                };
                match retry_on_tokens(&cur_tokens, &cur_codes, &wanted_list, kind) {
                    Ok((tokens, codes)) => {
                        let mut parts: Vec<String> = tokens
                            .into_iter()
                            .filter(|t| t != "retriable-status-codes")
                            .collect();
                        parts.extend(codes.iter().map(u16::to_string));
                        if parts.is_empty() {
                            w.refuse_leaf(leaf, "an empty retryOn means Istio's default; retry nothing with attempts: 0 (retry.max_attempts: 1)")
                        } else {
                            // An explicit retryOn replaces Istio's default
                            // whole (retry.go `ConvertPolicy`): on a gRPC
                            // service, whose errors come back as HTTP 200
                            // with a grpc-status, the default's
                            // `unavailable` and `cancelled` stop retrying,
                            // and a bare 503 does not stand for them.
                            if written.is_none() {
                                w.note(format!(
                                    "{}: the route had Istio's default retryOn ({DEFAULT_RETRY_ON}); the retryOn written replaces it, so if this service speaks gRPC its UNAVAILABLE and CANCELLED statuses are no longer retried: add `unavailable,cancelled` to the written retryOn by hand to keep them",
                                    r.key
                                ));
                            }
                            w.put(node, &r.key, &["retries", "retryOn"], Lit::Str(parts.join(",")))
                        }
                    }
                    Err(e) => w.refuse_leaf(leaf, &e),
                }
            }
            "retry.backoff.base" | "retry.backoff.cap" => {
                if did_backoff {
                    Ok(())
                } else {
                    did_backoff = true;
                    let base = dur("retry.backoff.base").unwrap_or(Duration::from_millis(BASE_INTERVAL_MS));
                    let cap = dur("retry.backoff.cap").unwrap_or(Duration(base.0 * 10));
                    if cap.0 != base.0.saturating_mul(10) {
                        w.refuse_leaf("retry.backoff.cap", "Istio sets only the base interval; Envoy caps the back-off at 10 × base")
                    } else {
                        w.put_duration(node, &r.key, &["retries", "backoff"], base, Notation::Go)
                    }
                }
            }
            "retry_other_replica" => match (retries, want(leaf).and_then(Value::as_bool).unwrap_or(false)) {
                (Some(_), on) => w.put(node, &r.key, &["retries", "retryIgnorePreviousHosts"], Lit::Bare(on.to_string())),
                (None, _) => w.refuse_leaf(leaf, "the route has no retries block (Istio's default policy avoids the hosts tried): add one by hand"),
            },
            _ => w.refuse_leaf(leaf, "fixed by Istio and Envoy (exponential back-off doubling, full jitter); circuit breakers and outlier detection live in a DestinationRule"),
        };
        if let Err(e) = res {
            w.refuse_leaf(leaf, &e).ok();
        }
    }
}
