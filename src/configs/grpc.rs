//! `grpc-service-config`: a gRPC service config (JSON), as the client reads
//! it from DNS, xDS or a file handed to the channel.
//!
//! Sources (docs/sources/config-formats.md §1): grpc/grpc-proto
//! `grpc/service_config/service_config.proto` (the `MethodConfig` message
//! and its `Name` matching rule: "the most specific match wins": service
//! and method, else the service with no method, else the empty name);
//! grpc/proposal `A6-client-retries.md` (retryPolicy, hedgingPolicy,
//! retryThrottling, the cap of 5 attempts, the ±20 % jitter, pushback).
//!
//! What maps to what (a layer of stormsim):
//!
//! | service config | layer |
//! |---|---|
//! | `methodConfig[].timeout` | `total_timeout` (the call's deadline covers every attempt) |
//! | `retryPolicy.maxAttempts` (capped at 5) | `retry.max_attempts` |
//! | `initialBackoff`, `backoffMultiplier`, `maxBackoff` | `retry.backoff` exponential `base`, `multiplier`, `cap` |
//! | (fixed by gRPC) | `retry.jitter: { proportional: 0.2 }`, `retry.retry_after: grpc_pushback` |
//! | `retryableStatusCodes` | `retry.retry_on`: UNAVAILABLE is `connection` and `503`, RESOURCE_EXHAUSTED `429`, INTERNAL `500`, DEADLINE_EXCEEDED `timeout` |
//! | `perAttemptRecvTimeout` | `timeout` |
//! | `hedgingPolicy` | `hedging` (`delay`, `max_attempts`, `non_fatal`) |
//! | `retryThrottling` | `retry.budget: { kind: token_bucket }` (per channel: `scope: instance`) |
//!
//! A `timeout` of `0s` is not "no deadline": gRPC applies it as a deadline
//! that has already passed (grpc-go `stream.go`, `newClientStream`: `if
//! mc.Timeout != nil && *mc.Timeout >= 0 { ctx, cancel =
//! context.WithTimeout(ctx, *mc.Timeout) }`), so every call fails at once
//! with DEADLINE_EXCEEDED. A layer cannot say that (`total_timeout` must be
//! positive), so `import` refuses it at its position
//! (`layer_yaml::check_loads`), like any value the scenario refuses.

use serde_json::{Map, Value, json};

use super::durations::{Notation, parse_proto};
use super::edit::{self, Lit};
use super::tree::{Doc, Kind, Node};
use super::write::Writer;
use super::{
    Builder, Finding, Origin, Selector, Target, boolean, get_path, join, num, number, uint,
};
use crate::scenario::graph::BalancerKind;
use crate::scenario::units::Duration;

/// The outcomes each retryable status code stands for in the simulation,
/// as the `grpc-a6` preset reads them (docs/sources/presets.md §2): a
/// connection failure surfaces as UNAVAILABLE, the dependency's 503 is
/// UNAVAILABLE, 429 stands for RESOURCE_EXHAUSTED, 500 for INTERNAL.
const CODES: &[(&str, u8, &[&str])] = &[
    ("UNAVAILABLE", 14, &["connection", "503"]),
    ("RESOURCE_EXHAUSTED", 8, &["429"]),
    ("INTERNAL", 13, &["500"]),
    ("DEADLINE_EXCEEDED", 4, &["timeout"]),
];

/// Every gRPC status code, by number (grpc/grpc `doc/statuscodes.md`).
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// gRFC A6: "maxAttempts ... values greater than 5 are treated as 5".
pub const MAX_ATTEMPTS_CAP: u64 = 5;

/// The selected method config: its index and node, or none (gRPC's
/// defaults then apply).
pub(crate) struct Selected<'d> {
    pub root: &'d Node,
    pub config: Option<(usize, &'d Node)>,
    /// How the selected config names the method: 3 by service and
    /// method, 2 by its service alone, 1 by the empty name (every
    /// method's default).
    pub score: u8,
}

/// A `name` entry's (service, method), and where it was first given
/// (entry, index in its list, position).
type NamePath = (String, String);
type NameAt = (usize, usize, (u32, u32));

fn split_method(m: &str) -> (&str, &str) {
    let m = m.trim_start_matches('/');
    m.split_once('/').unwrap_or((m, ""))
}

/// The method config gRPC uses for `method`: an exact service and method
/// match, else the service's default, else the empty name's.
pub(crate) fn select<'d>(doc: &'d Doc, method: &str) -> Result<Selected<'d>, Finding> {
    let root = doc.roots.first().filter(|r| r.is_map()).ok_or(Finding {
        pos: doc.roots.first().map(|r| r.pos),
        key: String::new(),
        message: "a service config is a JSON object".into(),
    })?;
    let (service, name) = split_method(method);
    let mut best: Option<(u8, usize, &Node)> = None;
    // grpc-go `parseServiceConfig` keeps one set of paths for the whole
    // config and refuses it (errDuplicatedName) at the first name seen
    // twice, in one entry's list or in two entries.
    let mut paths: std::collections::HashMap<NamePath, NameAt> = std::collections::HashMap::new();
    for (i, mc) in root
        .get("methodConfig")
        .map_or(&[][..], Node::items)
        .iter()
        .enumerate()
    {
        for (j, n) in mc
            .get("name")
            .map_or(&[][..], Node::items)
            .iter()
            .enumerate()
        {
            let s = n.get("service").and_then(Node::scalar).unwrap_or("");
            let m = n.get("method").and_then(Node::scalar).unwrap_or("");
            if s.is_empty() && !m.is_empty() {
                // grpc-go `service_config.go`, `generatePath`:
                // errEmptyServiceNonEmptyMethod, and the whole service
                // config is refused.
                return Err(Finding {
                    pos: Some(n.pos),
                    key: format!("methodConfig[{i}].name[{j}]"),
                    message: format!(
                        "a method (`{m}`) without a service: gRPC refuses the whole service config (\"cannot combine empty 'service' and non-empty 'method'\"); name the service, or leave both out for the default of every method"
                    ),
                });
            }
            if let Some((fi, fj, fpos)) = paths.get(&(s.to_string(), m.to_string())) {
                return Err(Finding {
                    pos: Some(n.pos),
                    key: format!("methodConfig[{i}].name[{j}]"),
                    message: format!(
                        "this name is given twice (also methodConfig[{fi}].name[{fj}], line {}): gRPC refuses the whole service config (\"duplicated name\"); each name must be unique across the service config",
                        fpos.0
                    ),
                });
            }
            paths.insert((s.to_string(), m.to_string()), (i, j, n.pos));
            let score = if !s.is_empty() && s == service && !m.is_empty() && m == name {
                3
            } else if !s.is_empty() && s == service && m.is_empty() {
                2
            } else if s.is_empty() && m.is_empty() {
                1
            } else {
                0
            };
            if score == 0 {
                continue;
            }
            match best {
                Some((b, ..)) if b >= score => {}
                _ => best = Some((score, i, mc)),
            }
        }
    }
    Ok(Selected {
        root,
        config: best.map(|(_, i, n)| (i, n)),
        score: best.map_or(0, |(s, ..)| s),
    })
}

/// Every name the service config's `methodConfig` entries give, as a
/// selector writes it: `pkg.Service/Method`, `pkg.Service`, or `` (the
/// empty name, every method's default) as `""`.
fn configured_names(root: &Node) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for mc in root.get("methodConfig").map_or(&[][..], Node::items) {
        for n in mc.get("name").map_or(&[][..], Node::items) {
            let s = n.get("service").and_then(Node::scalar).unwrap_or("");
            let m = n.get("method").and_then(Node::scalar).unwrap_or("");
            let name = match (s.is_empty(), m.is_empty()) {
                (true, _) => String::new(),
                (false, true) => s.to_string(),
                (false, false) => format!("{s}/{m}"),
            };
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// A selector that names no method the file configures, when that is
/// likely a slip rather than a wish for gRPC's defaults: a name that
/// differs from a configured one only in case (gRPC matches service and method exactly, case
/// included: gRFC A6 / doc/service_config.md, "the most specific name
/// wins", and grpc-go `getMethodConfig` looks the path up as written), so
/// `Getuser` would quietly take a default instead of `GetUser`'s config;
/// or one no entry applies to at all, which would mean "no retries, no
/// deadline" while the file configures other methods (with a did-you-mean
/// when a configured name is close). Both are errors listing what the
/// file configures.
fn unconfigured(selected: &Selected, method: &str) -> Option<Finding> {
    if selected.score == 3 {
        return None;
    }
    let names = configured_names(selected.root);
    if names.is_empty() {
        return None;
    }
    let want = method.trim_start_matches('/');
    let shown = |n: &String| {
        if n.is_empty() {
            "the empty name (every method's default)".to_string()
        } else {
            format!("`{}`", crate::escape::escape(n))
        }
    };
    let listed = names.iter().map(shown).collect::<Vec<_>>().join(", ");
    let close = names
        .iter()
        .filter(|n| !n.is_empty() && n.as_str() != want)
        .find(|n| n.eq_ignore_ascii_case(want))
        .map(String::as_str)
        .or_else(|| {
            // A near name is only a slip when no config applies: beside
            // a service default, `GetOrders` may well be a method of its
            // own that the default is meant for.
            (selected.score == 0).then(|| {
                crate::scenario::suggest::did_you_mean(
                    want,
                    names.iter().filter(|n| !n.is_empty()).map(String::as_str),
                )
            })?
        });
    let now = match selected.score {
        2 => "its service's default config",
        1 => "the default config of the empty name",
        _ => "gRPC's defaults (no retries, no deadline)",
    };
    let want = crate::escape::escape(want);
    if let Some(c) = close {
        return Some(Finding {
            pos: None,
            key: String::new(),
            message: format!(
                "no methodConfig names `{want}`; did you mean `{}`? gRPC matches service and method names exactly, so `{want}` would get {now}; the file configures {listed}",
                crate::escape::escape(c)
            ),
        });
    }
    (selected.score == 0).then(|| Finding {
        pos: None,
        key: String::new(),
        message: format!(
            "no methodConfig applies to `{want}` (gRPC would give it its defaults: no retries, no deadline); the file configures {listed}; to simulate a method this file leaves to gRPC's defaults, write the layer's retry without `from:`"
        ),
    })
}

pub(crate) fn read(doc: &Doc, sel: &Selector, b: &mut Builder) {
    let Some(method) = sel.method.as_deref() else {
        b.error(
            "",
            None,
            "which method? a gRPC service config needs `method: pkg.Service/Method` (or `pkg.Service` for the service's defaults)",
        );
        return;
    };
    let selected = match select(doc, method) {
        Ok(s) => s,
        Err(f) => {
            b.errors.push(f);
            return;
        }
    };
    if let Some(f) = unconfigured(&selected, method) {
        b.errors.push(f);
        return;
    }
    check_others(b, selected.root, selected.config.map(|(i, _)| i), method);
    if b.target.is_call() {
        load_balancing(b, selected.root);
    }
    for e in selected.root.entries() {
        match e.key.as_str() {
            "methodConfig" | "retryThrottling" => {}
            "loadBalancingConfig" | "loadBalancingPolicy" if b.target.is_call() => {}
            "healthCheckConfig" if b.target.is_call() => b.unmodelled(
                &e.key,
                Some(e.key_pos),
                "on a call, no health check takes a replica of the called service out of its `balancer`",
            ),
            "loadBalancingConfig" | "loadBalancingPolicy" | "healthCheckConfig" => b.warn(
                e.key.clone(),
                Some(e.key_pos),
                "not simulated: a layer calls one dependency, so load balancing and health checks change nothing",
            ),
            other => b.unmodelled(other, Some(e.key_pos), "a service config field stormsim does not know"),
        }
    }
    b.absent("timeout");
    b.absent("total_timeout");
    b.absent("hedging");
    b.set(
        "retry.max_attempts",
        json!(1),
        Origin {
            key: "no retryPolicy".into(),
            pos: None,
        },
    );
    let mut retry_policy: PolicyAt = None;
    let mut hedging_policy: PolicyAt = None;
    match selected.config {
        None => {
            b.policy.selected = format!(
                "no methodConfig names `{method}`: gRPC's defaults (no retries, no deadline)"
            );
        }
        Some((i, mc)) => {
            let at = format!("methodConfig[{i}]");
            b.policy.selected = format!("{at} (line {})", mc.pos.0);
            (retry_policy, hedging_policy) = read_entry(b, &at, mc);
        }
    }
    if let (Some((rk, _)), Some((_, h))) = (&retry_policy, &hedging_policy) {
        b.error(
            rk.clone(),
            Some(h.pos),
            "a methodConfig has either a retryPolicy or a hedgingPolicy, never both (gRFC A6)",
        );
        return;
    }
    // Fixed by gRPC whatever the policy (gRFC A6).
    b.set(
        "retry.backoff",
        json!({ "kind": "exponential", "base": "100ms", "multiplier": 2, "cap": "1s" }),
        Origin {
            key: "no retryPolicy".into(),
            pos: None,
        },
    );
    b.absent("retry.backoff.throttle_base");
    b.set(
        "retry.backoff.truncate_ms",
        json!(false),
        Origin {
            key: "gRPC".into(),
            pos: None,
        },
    );
    b.set(
        "retry.jitter",
        json!({ "proportional": 0.2 }),
        Origin {
            key: "gRFC A6: each delay × U(0.8, 1.2)".into(),
            pos: None,
        },
    );
    b.set(
        "retry.retry_after",
        json!("grpc_pushback"),
        Origin {
            key: "gRFC A6: grpc-retry-pushback-ms".into(),
            pos: None,
        },
    );
    b.set(
        "retry.retry_on",
        json!(["connection", 503]),
        Origin {
            key: "no retryPolicy".into(),
            pos: None,
        },
    );
    for f in [
        "retry.retry_after_cap",
        "retry.retry_after_jitter",
        "retry.max_elapsed",
    ] {
        b.absent(f);
    }
    b.set(
        "retry.backoff.kind",
        json!("exponential"),
        Origin {
            key: "gRFC A6: exponential backoff".into(),
            pos: None,
        },
    );
    if let Some((key, p)) = retry_policy {
        read_retry(b, p, &key);
    }
    if let Some((key, h)) = hedging_policy {
        read_hedging(b, h, &key);
    }
    read_throttling(b, selected.root);
}

/// A methodConfig's retryPolicy or hedgingPolicy: its key path and node.
type PolicyAt<'n> = Option<(String, &'n Node)>;

/// Reads the fields of the methodConfig `mc` (at key path `at`) that are
/// its own (`timeout`, `waitForReady`, ...), and hands back its
/// retryPolicy and hedgingPolicy for `read_retry` / `read_hedging`.
fn read_entry<'n>(b: &mut Builder, at: &str, mc: &'n Node) -> (PolicyAt<'n>, PolicyAt<'n>) {
    let (mut retry_policy, mut hedging_policy) = (None, None);
    if !mc.is_map() {
        b.error(
            at,
            Some(mc.pos),
            format!("expected a methodConfig object, found {}", mc.describe()),
        );
        return (None, None);
    }
    for e in mc.entries() {
        let key = join(at, &e.key);
        match e.key.as_str() {
            "name" => {}
            "timeout" => {
                if let Some(d) = duration(b, &e.value, &key) {
                    b.set(
                        "total_timeout",
                        json!(d.to_string()),
                        Origin {
                            key,
                            pos: Some(e.value.pos),
                        },
                    );
                }
            }
            "waitForReady" => {
                if boolean(b, &e.value, &key) == Some(true) {
                    b.unmodelled(
                        &key,
                        Some(e.value.pos),
                        "an RPC waits for a connection instead of failing at once with UNAVAILABLE",
                    );
                }
            }
            "maxRequestMessageBytes" | "maxResponseMessageBytes" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: requests have no size in stormsim",
            ),
            "retryPolicy" => retry_policy = Some((key, &e.value)),
            "hedgingPolicy" => hedging_policy = Some((key, &e.value)),
            _ => b.unmodelled(
                &key,
                Some(e.key_pos),
                "a methodConfig field stormsim does not know",
            ),
        }
    }
    (retry_policy, hedging_policy)
}

/// Every methodConfig entry but the selected one, checked for what makes
/// gRPC refuse the whole service config, so that no method gets any of
/// it: a wrong entry anywhere is an error at its position, whatever
/// method is selected.
///
/// grpc-go `service_config.go`, `parseServiceConfig`, reads the whole
/// config with one `json.Unmarshal`: a status code name not spelt as
/// `codes.Code.UnmarshalJSON` knows it (capitals, or a bare JSON number:
/// `"unavailable"`, `"14"` and `"FOO"` all fail), a duration
/// `internal/serviceconfig` `Duration.UnmarshalJSON` cannot read (`"100ms"`,
/// no `s` suffix, more than 9 decimals) or a value of the wrong JSON type
/// fails the parse, and with it the config. It then converts each
/// methodConfig's retryPolicy in turn and returns the first error of
/// `convertRetryPolicy`: maxAttempts below 2, initialBackoff or
/// maxBackoff not above 0, backoffMultiplier not above 0, or empty
/// retryableStatusCodes (an error since grpc-go 1.70, PR #7905, "reject
/// service configs containing an invalid retryPolicy"; before, the policy
/// was dropped with a log line). gRFC A6 ("Validation of retryPolicy",
/// "Validation of hedgingPolicy") and gRFC A21 (service config error
/// handling) make an invalid policy invalidate the whole service config
/// in every language, as do a retryPolicy beside a hedgingPolicy and a
/// missing required field. So each entry is read as the selected one is
/// (`read_entry`, `read_retry`, `read_hedging`) into a scratch policy,
/// with `check_only`: what stormsim does not model in an entry the method
/// does not use changes nothing, and warnings about it would be noise.
fn check_others(b: &mut Builder, root: &Node, selected: Option<usize>, method: &str) {
    let Some(list) = root.get("methodConfig") else {
        return;
    };
    if !list.is_seq() {
        b.error(
            "methodConfig",
            Some(list.pos),
            format!(
                "expected a list of method configs, found {}; gRPC refuses the whole service config",
                list.describe()
            ),
        );
        return;
    }
    for (i, mc) in list.items().iter().enumerate() {
        if Some(i) == selected {
            continue;
        }
        let at = format!("methodConfig[{i}]");
        let mut s = Builder {
            policy: super::Policy::default(),
            errors: Vec::new(),
            ignore: &[],
            target: b.target,
            check_only: true,
        };
        let (retry, hedging) = read_entry(&mut s, &at, mc);
        match (retry, hedging) {
            (Some((rk, _)), Some((_, h))) => s.error(
                rk,
                Some(h.pos),
                "a methodConfig has either a retryPolicy or a hedgingPolicy, never both (gRFC A6)",
            ),
            (Some((key, p)), None) => read_retry(&mut s, p, &key),
            (None, Some((key, h))) => read_hedging(&mut s, h, &key),
            (None, None) => {}
        }
        let method = crate::escape::escape(method);
        for f in s.errors {
            b.errors.push(Finding {
                message: format!(
                    "{}; {at} (line {}) is not the config of `{method}`, but gRPC refuses the whole service config for it, so no method would get this file's settings: fix it, or import a copy without it",
                    f.message, mc.pos.0
                ),
                ..f
            });
        }
    }
}

/// The channel's load-balancing policy, on a call to a service that may
/// have several replicas. grpc-go `service_config.go`
/// (`parseServiceConfig`): `loadBalancingConfig` when present (gRPC takes
/// the first policy of the list it knows), else `loadBalancingPolicy`
/// when it names a registered balancer, else `pick_first`. pick_first
/// sends every RPC of a channel to one address (the first that connects)
/// and stays there; stormsim spreads a service's requests over its
/// replicas by the service's `balancer`, so it cannot say pick_first: an
/// error naming the ways out. `round_robin` is `balancer: round_robin`
/// and must be the called service's. With one replica the policy has
/// nothing to choose: a warning when the file sets one, nothing when it
/// does not.
fn load_balancing(b: &mut Builder, root: &Node) {
    let Target::Call { replicas, balancer } = b.target else {
        return;
    };
    let config = root.entry("loadBalancingConfig");
    let legacy = root.entry("loadBalancingPolicy");
    // (policy name, key, position, written in the file)
    let (name, key, pos, written) = if let Some(e) = config {
        let first = e.value.items().first();
        let name = first
            .and_then(|p| p.entries().first())
            .map(|p| p.key.clone())
            .unwrap_or_default();
        let pos = first.map_or(e.key_pos, |p| p.pos);
        (name, "loadBalancingConfig".to_string(), pos, true)
    } else if let Some(e) = legacy {
        let name = e.value.scalar().unwrap_or("").trim().to_ascii_lowercase();
        let name = if ["round_robin", "pick_first"].contains(&name.as_str()) {
            name
        } else {
            "pick_first".to_string()
        };
        (name, "loadBalancingPolicy".to_string(), e.key_pos, true)
    } else {
        (
            "pick_first".to_string(),
            "loadBalancingConfig".to_string(),
            root.pos,
            false,
        )
    };
    if replicas == Some(1) {
        if written {
            b.warn(
                key,
                Some(pos),
                format!("not simulated: the service called has one replica, so the channel's `{name}` has nothing to choose"),
            );
        }
        return;
    }
    let callee = match replicas {
        Some(n) => format!("the service called has {n} replicas"),
        None => "the replicas of the service called are not known (`--replicas`)".to_string(),
    };
    match name.as_str() {
        "round_robin" => {
            let ours = BalancerKind::RoundRobin;
            match balancer {
                Some(theirs) if theirs != ours => b.unmodelled(
                    &key,
                    Some(pos),
                    &format!(
                        "the channel balances by round_robin, stormsim's `balancer: round_robin`, but the service called balances by `{}`: set `balancer: round_robin` on it",
                        super::envoy_outlier::kind_name(theirs)
                    ),
                ),
                Some(_) => {}
                None => b.warn(
                    key,
                    Some(pos),
                    "the replicas a call goes to are picked by the called service's `balancer`: round_robin is `balancer: round_robin`",
                ),
            }
        }
        "pick_first" => {
            let how = if written {
                "the channel's pick_first"
            } else {
                "no loadBalancingConfig: gRPC's default policy, pick_first,"
            };
            b.unmodelled(
                &key,
                Some(pos),
                &format!(
                    "{how} sends every RPC of a channel to one replica (the first address that connects) and stays there; {callee}, and stormsim spreads a service's requests over its replicas by its `balancer`, so it cannot simulate pick_first. If your clients balance, write it in the file (`\"loadBalancingConfig\": [{{ \"round_robin\": {{}} }}]`); else give the service called `replicas: 1`"
                ),
            );
        }
        other => b.unmodelled(
            &key,
            Some(pos),
            &format!("the load-balancing policy `{other}` (stormsim balances by round_robin, random, least_requests or p2c; gRPC's round_robin is `balancer: round_robin`)"),
        ),
    }
}

/// A proto3 JSON duration (`"0.1s"`, or `{seconds, nanos}`).
fn duration(b: &mut Builder, node: &Node, key: &str) -> Option<Duration> {
    if let Some(m) = super::durations::space_refusal(node.scalar(), "gRPC (grpc-go parseDuration)")
    {
        b.error(key, Some(node.pos), m);
        return None;
    }
    let d = match &node.kind {
        Kind::Scalar { text, .. } => parse_proto(text),
        Kind::Map { .. } => {
            let part = |k: &str| {
                node.get(k)
                    .and_then(Node::scalar)
                    .map(|s| s.parse::<u64>().ok())
            };
            match (part("seconds"), part("nanos")) {
                (Some(Some(_)), None | Some(Some(_))) | (None, Some(Some(_))) => {
                    let s = part("seconds").flatten().unwrap_or(0);
                    let n = part("nanos").flatten().unwrap_or(0);
                    (n < 1_000_000_000).then(|| Duration(s.saturating_mul(1_000_000_000) + n))
                }
                _ => None,
            }
        }
        Kind::Seq { .. } => None,
    };
    if d.is_none() {
        b.error(
            key,
            Some(node.pos),
            format!(
                "{}, found {}",
                super::durations::proto_refusal(
                    node.scalar(),
                    "expected a duration in seconds such as \"0.1s\" (protobuf JSON)"
                ),
                node.describe()
            ),
        );
    }
    d
}

/// Status codes (names in capitals, or JSON numbers) as outcomes; codes the
/// simulation never produces are warned about.
fn outcomes(b: &mut Builder, list: &Node, key: &str) -> Option<Vec<Value>> {
    if !list.is_seq() {
        b.error(
            key,
            Some(list.pos),
            format!("expected a list of status codes, found {}", list.describe()),
        );
        return None;
    }
    let mut out: Vec<Value> = Vec::new();
    for (i, item) in list.items().iter().enumerate() {
        let ikey = join(key, &format!("[{i}]"));
        // grpc-go `codes.Code.UnmarshalJSON` (codes/codes.go): a JSON
        // number below 17, or a name exactly as `strToCode` spells it (in
        // capitals); anything else refuses the service config. grpc-java
        // (`Status.Code.valueOf`) is as strict.
        let text = item.scalar().unwrap_or("");
        let quoted = item.style() != Some(super::tree::Style::Plain);
        let name = match (quoted, text.parse::<usize>()) {
            (false, Ok(n)) => NAMES.get(n).copied(),
            (true, Ok(_)) => {
                b.error(
                    ikey,
                    Some(item.pos),
                    format!("\"{text}\": gRPC reads a status code as a JSON number or a name, not a number in quotes; write {text} or its name"),
                );
                continue;
            }
            _ => NAMES.iter().find(|c| **c == text).copied(),
        };
        if name.is_none()
            && let Some(upper) = NAMES.iter().find(|c| c.eq_ignore_ascii_case(text.trim()))
        {
            b.error(
                ikey,
                Some(item.pos),
                format!("\"{text}\": gRPC reads status code names exactly, in capitals, and refuses the service config otherwise; write \"{upper}\""),
            );
            continue;
        }
        let Some(name) = name else {
            b.error(
                ikey,
                Some(item.pos),
                format!("{} is not a gRPC status code", item.describe()),
            );
            continue;
        };
        match CODES.iter().find(|c| c.0 == name) {
            Some((_, _, outs)) => {
                for o in *outs {
                    let v = o.parse::<u16>().map_or(json!(o), |n| json!(n));
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
            }
            None => b.warn(
                ikey,
                Some(item.pos),
                format!("{name}: the simulated dependency never fails with it, so retrying it changes nothing"),
            ),
        }
    }
    Some(out)
}

fn read_retry(b: &mut Builder, p: &Node, at: &str) {
    if !p.is_map() {
        b.error(at, Some(p.pos), "expected a retryPolicy object");
        return;
    }
    let pos = |k: &str| p.entry(k).map(|e| e.value.pos);
    for e in p.entries() {
        let key = join(at, &e.key);
        let o = Origin {
            key: key.clone(),
            pos: Some(e.value.pos),
        };
        match e.key.as_str() {
            "maxAttempts" => {
                if below_two(b, &e.value, &key, "retryPolicy") {
                    continue;
                }
                if let Some(n) = uint(b, &e.value, &key, 2, u64::from(u32::MAX)) {
                    if n > MAX_ATTEMPTS_CAP {
                        b.warn(key.clone(), Some(e.value.pos), format!("{n} attempts: gRPC clients cap maxAttempts at {MAX_ATTEMPTS_CAP} (gRFC A6), so {MAX_ATTEMPTS_CAP} are simulated"));
                    }
                    b.set("retry.max_attempts", json!(n.min(MAX_ATTEMPTS_CAP)), o);
                }
            }
            "initialBackoff" => {
                if let Some(d) =
                    duration(b, &e.value, &key).filter(|d| positive(b, *d, &e.value, &key))
                {
                    b.set("retry.backoff.base", json!(d.to_string()), o);
                }
            }
            "maxBackoff" => {
                if let Some(d) =
                    duration(b, &e.value, &key).filter(|d| positive(b, *d, &e.value, &key))
                {
                    b.set("retry.backoff.cap", json!(d.to_string()), o);
                }
            }
            "backoffMultiplier" => {
                // gRPC takes any multiplier above 0 (a number not above 0
                // refuses the service config: gRFC A6, grpc-go
                // `convertRetryPolicy`); the simulator's own bound matters
                // only for the method simulated.
                let v = e.value.scalar().and_then(|t| t.trim().parse::<f64>().ok());
                if let Some(v) = v.filter(|v| *v <= 0.0) {
                    b.error(
                        key,
                        Some(e.value.pos),
                        format!("backoffMultiplier {}: gRPC needs a multiplier greater than 0 (gRFC A6) and refuses the whole service config otherwise", super::fmt_num(v)),
                    );
                    continue;
                }
                if b.check_only && v.is_some_and(f64::is_finite) {
                    continue;
                }
                if let Some(m) = number(b, &e.value, &key, f64::MIN_POSITIVE, 1e6) {
                    b.set("retry.backoff.multiplier", num(m), o);
                }
            }
            "retryableStatusCodes" => {
                if let Some(list) = outcomes(b, &e.value, &key) {
                    if e.value.items().is_empty() {
                        b.error(
                            key,
                            Some(e.value.pos),
                            "retryableStatusCodes must not be empty (gRFC A6)",
                        );
                    } else {
                        b.set("retry.retry_on", Value::Array(list), o);
                    }
                }
            }
            "perAttemptRecvTimeout" => {
                if let Some(d) = duration(b, &e.value, &key) {
                    b.set("timeout", json!(d.to_string()), o);
                }
            }
            _ => b.unmodelled(
                &key,
                Some(e.key_pos),
                "a retryPolicy field stormsim does not know",
            ),
        }
    }
    for required in [
        "maxAttempts",
        "initialBackoff",
        "maxBackoff",
        "backoffMultiplier",
        "retryableStatusCodes",
    ] {
        if pos(required).is_none() {
            b.error(
                at,
                Some(p.pos),
                format!(
                    "retryPolicy has no {required}; gRPC rejects a retryPolicy without it (gRFC A6)"
                ),
            );
        }
    }
}

/// A whole-number maxAttempts below 2, refused by name: gRFC A6 requires
/// "two or greater" for a retryPolicy and a hedgingPolicy, and grpc-go's
/// `convertRetryPolicy` refuses the service config for `maxAttempts <= 1`.
fn below_two(b: &mut Builder, node: &Node, key: &str, policy: &str) -> bool {
    let Some(n) = node
        .scalar()
        .filter(|_| node.style() == Some(super::tree::Style::Plain))
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|n| *n < 2)
    else {
        return false;
    };
    b.error(
        key,
        Some(node.pos),
        format!(
            "maxAttempts {n}: a {policy} needs 2 or more (gRFC A6: the first attempt included), and gRPC refuses the whole service config otherwise; for no retries, leave the {policy} out"
        ),
    );
    true
}

fn positive(b: &mut Builder, d: Duration, node: &Node, key: &str) -> bool {
    if d.0 == 0 {
        b.error(key, Some(node.pos), "must be greater than 0 (gRFC A6)");
    }
    d.0 > 0
}

fn read_hedging(b: &mut Builder, h: &Node, at: &str) {
    if !h.is_map() {
        b.error(at, Some(h.pos), "expected a hedgingPolicy object");
        return;
    }
    let mut delay = None;
    let mut attempts = None;
    let mut non_fatal = Some(Vec::new());
    for e in h.entries() {
        let key = join(at, &e.key);
        match e.key.as_str() {
            "maxAttempts" => {
                if below_two(b, &e.value, &key, "hedgingPolicy") {
                    continue;
                }
                if let Some(n) = uint(b, &e.value, &key, 2, u64::from(u32::MAX)) {
                    if n > MAX_ATTEMPTS_CAP {
                        b.warn(key.clone(), Some(e.value.pos), format!("{n} attempts: gRPC clients cap maxAttempts at {MAX_ATTEMPTS_CAP} (gRFC A6), so {MAX_ATTEMPTS_CAP} are simulated"));
                    }
                    attempts = Some((n.min(MAX_ATTEMPTS_CAP), key, e.value.pos));
                }
            }
            "hedgingDelay" => delay = duration(b, &e.value, &key).map(|d| (d, key, e.value.pos)),
            "nonFatalStatusCodes" => non_fatal = outcomes(b, &e.value, &key),
            _ => b.unmodelled(
                &key,
                Some(e.key_pos),
                "a hedgingPolicy field stormsim does not know",
            ),
        }
    }
    let Some((n, akey, apos)) = attempts else {
        b.error(
            at,
            Some(h.pos),
            "hedgingPolicy has no maxAttempts; gRPC rejects it (gRFC A6)",
        );
        return;
    };
    // hedgingDelay absent: every copy at once (gRFC A6).
    let (d, dkey, dpos) = delay.map_or(
        (Duration(0), format!("{at}.hedgingDelay"), None),
        |(d, k, p)| (d, k, Some(p)),
    );
    b.set(
        "hedging.max_attempts",
        json!(n),
        Origin {
            key: akey,
            pos: Some(apos),
        },
    );
    b.set(
        "hedging.delay",
        json!(d.to_string()),
        Origin {
            key: dkey,
            pos: dpos,
        },
    );
    b.set(
        "hedging.non_fatal",
        Value::Array(non_fatal.unwrap_or_default()),
        Origin {
            key: join(at, "nonFatalStatusCodes"),
            pos: h.get("nonFatalStatusCodes").map(|n| n.pos),
        },
    );
}

fn read_throttling(b: &mut Builder, root: &Node) {
    let Some(t) = root.get("retryThrottling") else {
        b.absent("retry.budget");
        return;
    };
    let at = "retryThrottling";
    let mut tokens = None;
    let mut ratio = None;
    // A field given but refused has had its error: no second one saying
    // it is missing.
    let (mut has_tokens, mut has_ratio) = (false, false);
    for e in t.entries() {
        let key = join(at, &e.key);
        match e.key.as_str() {
            // gRFC A6: maxTokens in (0, 1000], tokenRatio > 0.
            "maxTokens" => {
                has_tokens = true;
                // grpc-go `parseServiceConfig`: `mt <= 0 || mt > 1000` is
                // refused; any float in between is taken.
                tokens = match number(b, &e.value, &key, 0.0, 1000.0) {
                    Some(v) if v > 0.0 => Some((v, key, e.value.pos)),
                    Some(_) => {
                        b.error(
                            key,
                            Some(e.value.pos),
                            "maxTokens must be greater than 0 (gRPC refuses the service config: \"maxTokens (0) out of range (0, 1000]\")",
                        );
                        None
                    }
                    None => None,
                }
            }
            "tokenRatio" => {
                has_ratio = true;
                ratio = number(b, &e.value, &key, 0.001, 1e6).map(|v| (v, key, e.value.pos))
            }
            _ => b.unmodelled(
                &key,
                Some(e.key_pos),
                "a retryThrottling field stormsim does not know",
            ),
        }
    }
    match (tokens, ratio) {
        (Some((t, tk, tp)), Some((r, rk, rp))) => {
            b.set(
                "retry.budget.kind",
                json!("token_bucket"),
                Origin {
                    key: at.into(),
                    pos: root.entry(at).map(|e| e.key_pos),
                },
            );
            b.set(
                "retry.budget.scope",
                json!("instance"),
                Origin {
                    key: "gRFC A6: per server name (per channel)".into(),
                    pos: None,
                },
            );
            b.set(
                "retry.budget.max_tokens",
                num(t),
                Origin {
                    key: tk,
                    pos: Some(tp),
                },
            );
            // gRFC A6 keeps three decimals of tokenRatio.
            b.set(
                "retry.budget.token_ratio",
                num((r * 1000.0).trunc() / 1000.0),
                Origin {
                    key: rk,
                    pos: Some(rp),
                },
            );
        }
        _ if t.is_map() && has_tokens && has_ratio => {}
        _ if t.is_map() => b.error(
            at,
            Some(t.pos),
            match (has_tokens, has_ratio) {
                (true, _) => "retryThrottling needs tokenRatio (gRFC A6)",
                (_, true) => "retryThrottling needs maxTokens (gRFC A6)",
                _ => "retryThrottling needs maxTokens and tokenRatio (gRFC A6)",
            },
        ),
        _ => b.error(at, Some(t.pos), "expected a retryThrottling object"),
    }
}

// ---------------------------------------------------------------- export

/// gRPC status names for a set of outcomes, in the order given; an error
/// names an outcome no status code stands for.
fn codes_for(retry_on: &[Value]) -> Result<Vec<&'static str>, String> {
    let has = |o: &str| {
        retry_on
            .iter()
            .any(|v| v.to_string().trim_matches('"') == o)
    };
    let mut out = Vec::new();
    for (name, _, outs) in CODES {
        let n = outs.iter().filter(|o| has(o)).count();
        if n == outs.len() {
            out.push(*name);
        } else if n > 0 {
            return Err(format!(
                "gRPC cannot retry {} without {}: both are {name}",
                outs.iter()
                    .filter(|o| has(o))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                outs.iter()
                    .filter(|o| !has(o))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for v in retry_on {
        let o = v.to_string();
        let o = o.trim_matches('"');
        if !CODES.iter().any(|(_, _, outs)| outs.contains(&o)) {
            return Err(format!(
                "no gRPC status code stands for `{o}` in the simulation"
            ));
        }
    }
    Ok(out)
}

/// The list of status codes to write: the file's codes that still mean
/// what is wanted, in their order and spelling, then the new ones.
fn code_list(current: Option<&Node>, wanted: &[&'static str]) -> Lit {
    let mut out: Vec<Lit> = Vec::new();
    let mut have: Vec<&str> = Vec::new();
    for item in current.map_or(&[][..], Node::items) {
        let text = item.scalar().unwrap_or("").trim();
        let name = match text.parse::<usize>() {
            Ok(n) => NAMES.get(n).copied(),
            Err(_) => NAMES.iter().find(|c| c.eq_ignore_ascii_case(text)).copied(),
        };
        let Some(name) = name else { continue };
        let mapped = CODES.iter().any(|c| c.0 == name);
        if !mapped || wanted.contains(&name) {
            have.push(name);
            out.push(match item.style() {
                Some(super::tree::Style::Double) => Lit::Str(text.to_string()),
                _ => Lit::Bare(text.to_string()),
            });
        }
    }
    for w in wanted {
        if !have.contains(w) {
            out.push(Lit::Str((*w).to_string()));
        }
    }
    Lit::List(out)
}

/// The layer fields a new retryPolicy is written from, and the field of
/// each (gRFC A6: all five are required).
const REQUIRED_RETRY: [(&str, &str); 5] = [
    ("retry.max_attempts", "maxAttempts"),
    ("retry.backoff.base", "initialBackoff"),
    ("retry.backoff.cap", "maxBackoff"),
    ("retry.backoff.multiplier", "backoffMultiplier"),
    ("retry.retry_on", "retryableStatusCodes"),
];

/// The note for an edit of `retryThrottling`, made for `method`: the
/// token bucket is the channel's (gRFC A6: the client keeps the
/// throttling tokens per server, for all its methods together),
/// so the note names the other methods and services the service config's
/// `methodConfig` entries name.
fn shared_throttling_note(root: &Node, method: &str) -> String {
    let (service, mname) = split_method(method);
    let mut others: Vec<String> = Vec::new();
    for mc in root.get("methodConfig").map_or(&[][..], Node::items) {
        for n in mc.get("name").map_or(&[][..], Node::items) {
            let s = n.get("service").and_then(Node::scalar).unwrap_or("");
            let m = n.get("method").and_then(Node::scalar).unwrap_or("");
            if s == service && m == mname {
                continue;
            }
            let label = match (s, m) {
                ("", _) => "every method's default (`{}`)".to_string(),
                (s, "") => format!("`{}/*`", crate::escape::escape(s)),
                (s, m) => format!(
                    "`{}/{}`",
                    crate::escape::escape(s),
                    crate::escape::escape(m)
                ),
            };
            if !others.contains(&label) {
                others.push(label);
            }
        }
    }
    let also = if others.is_empty() {
        "the service config names no other method".to_string()
    } else {
        format!("the service config also names {}", others.join(", "))
    };
    format!(
        "retryThrottling is the channel's, not `{}`'s: one token bucket for every call on the channel, whatever its method, so the change applies to every method of this service config; {also}",
        crate::escape::escape(method)
    )
}

pub(crate) fn write(
    w: &mut Writer<'_>,
    sel: &Selector,
    wanted: &Map<String, Value>,
    changed: &[String],
) {
    let doc = w.doc;
    let method = sel.method.as_deref().unwrap_or("");
    let Ok(selected) = select(doc, method) else {
        return;
    };
    let Some((i, mc)) = selected.config else {
        w.refuse("", "no methodConfig applies to this method; add one by hand (stormsim edits values, it does not write new method configs)");
        return;
    };
    let at = format!("methodConfig[{i}]");
    // The method (or service) takes a method config that is another's
    // too: the service's default, or every method's (`{}`). gRPC uses the
    // most specific name and merges nothing between entries, so the
    // change goes into a copy of that entry, complete, that names this
    // method alone and so wins for it; the others keep theirs.
    let (service, mname) = split_method(method);
    let own_score = if mname.is_empty() { 2 } else { 3 };
    let shared = selected.score < own_score;
    if shared {
        let (Some(list), Some(name)) = (selected.root.get("methodConfig"), mc.get("name")) else {
            return;
        };
        let mut named = format!("{{\"service\": {}", edit::json_string(service));
        if !mname.is_empty() {
            named += &format!(", \"method\": {}", edit::json_string(mname));
        }
        named += "}";
        w.copy_item(mc, list, (name.span.clone(), format!("[{named}]")));
        w.note(format!(
            "{at} (line {}) is {}, not `{method}`'s own: it is copied, with the change, to a new methodConfig that names {named} alone, so the methods it also serves keep theirs (gRPC takes the most specific name, and entries are not merged)",
            mc.pos.0,
            if selected.score == 2 { "the service's default" } else { "every method's default (`{}`)" },
        ));
    }
    let names = mc.get("name").map_or(0, |n| n.items().len());
    if names > 1 && !shared {
        w.note(format!(
            "{at} names {names} methods: the change applies to all of them"
        ));
    }
    let hedged = mc.get("hedgingPolicy").is_some();
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    let dur = |p: &str| {
        want(p)
            .and_then(Value::as_str)
            .and_then(|s| crate::scenario::units::parse_duration(s).ok())
    };
    // A method config without a retryPolicy gets a whole one: gRFC A6
    // requires all of maxAttempts, initialBackoff, maxBackoff,
    // backoffMultiplier and retryableStatusCodes (a service config missing
    // one is invalid), so every one is written, including those the tuned
    // layer holds at the values import shows for "no retryPolicy".
    let mut changed: Vec<String> = changed.to_vec();
    let policy_leaf = |l: &str| {
        l == "timeout"
            || l.starts_with("timeout.")
            || l.starts_with("retry.") && !l.starts_with("retry.budget")
    };
    if !hedged && mc.get("retryPolicy").is_none() && changed.iter().any(|l| policy_leaf(l)) {
        let missing: Vec<String> = REQUIRED_RETRY
            .iter()
            .filter(|(leaf, _)| want(leaf).is_none())
            .map(|(leaf, field)| format!("{leaf} ({field})"))
            .collect();
        if !missing.is_empty() {
            w.refuse(
                "",
                &format!(
                    "{at} (line {}) has no retryPolicy, and a new one needs all five fields gRFC A6 requires (maxAttempts, initialBackoff, maxBackoff, backoffMultiplier, retryableStatusCodes); the tuned layer does not give {}",
                    mc.pos.0,
                    missing.join(", ")
                ),
            );
            return;
        }
        let mut all: Vec<String> = REQUIRED_RETRY.iter().map(|(l, _)| l.to_string()).collect();
        all.extend(
            changed
                .into_iter()
                .filter(|l| !REQUIRED_RETRY.iter().any(|(r, _)| r == l)),
        );
        changed = all;
    }
    for leaf in &changed {
        let leaf = leaf.as_str();
        let top = |p: &str| leaf == p || leaf.starts_with(&format!("{p}."));
        let r = if top("total_timeout") {
            match dur("total_timeout") {
                Some(d) => w.put_duration(mc, &at, &["timeout"], d, Notation::Proto),
                // No deadline: the methodConfig's timeout goes.
                None => match mc.get("timeout") {
                    Some(t) => w.remove(t, &join(&at, "timeout")),
                    None => Ok(()),
                },
            }
        } else if top("timeout") {
            match dur("timeout") {
                Some(d) if !hedged => w.put_duration(mc, &at, &["retryPolicy", "perAttemptRecvTimeout"], d, Notation::Proto),
                _ => w.refuse_leaf(leaf, "a per-attempt timeout is retryPolicy.perAttemptRecvTimeout: only with a retryPolicy"),
            }
        } else if leaf == "retry.max_attempts" && !hedged {
            match want(leaf).and_then(Value::as_u64) {
                Some(n) if (2..=MAX_ATTEMPTS_CAP).contains(&n) => w.put(
                    mc,
                    &at,
                    &["retryPolicy", "maxAttempts"],
                    Lit::Bare(n.to_string()),
                ),
                Some(n) => w.refuse_leaf(
                    leaf,
                    &format!(
                        "{}: a gRPC retryPolicy takes 2 to {MAX_ATTEMPTS_CAP} (gRFC A6)",
                        crate::human::plural(n, "attempt")
                    ),
                ),
                None => w.refuse_leaf(leaf, "missing"),
            }
        } else if leaf == "retry.backoff.base" && !hedged {
            dur(leaf).map_or(Ok(()), |d| {
                w.put_duration(
                    mc,
                    &at,
                    &["retryPolicy", "initialBackoff"],
                    d,
                    Notation::Proto,
                )
            })
        } else if leaf == "retry.backoff.cap" && !hedged {
            match dur(leaf) {
                Some(d) => {
                    w.put_duration(mc, &at, &["retryPolicy", "maxBackoff"], d, Notation::Proto)
                }
                None => w.refuse_leaf(leaf, "gRPC's backoff always has a maxBackoff"),
            }
        } else if leaf == "retry.backoff.multiplier" && !hedged {
            match want(leaf).and_then(Value::as_f64) {
                Some(m) => w.put(
                    mc,
                    &at,
                    &["retryPolicy", "backoffMultiplier"],
                    Lit::Bare(super::fmt_num(m)),
                ),
                None => w.refuse_leaf(leaf, "gRPC's backoff always has a multiplier"),
            }
        } else if leaf == "retry.retry_on" && !hedged {
            let list = want(leaf)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            match codes_for(&list) {
                Ok(codes) if !codes.is_empty() => {
                    let node = mc
                        .get("retryPolicy")
                        .and_then(|p| p.get("retryableStatusCodes"));
                    w.put(
                        mc,
                        &at,
                        &["retryPolicy", "retryableStatusCodes"],
                        code_list(node, &codes),
                    )
                }
                Ok(_) => w.refuse_leaf(leaf, "retryableStatusCodes must not be empty (gRFC A6)"),
                Err(e) => w.refuse_leaf(leaf, &e),
            }
        } else if leaf == "hedging.max_attempts" && hedged {
            match want(leaf).and_then(Value::as_u64) {
                Some(n) if (2..=MAX_ATTEMPTS_CAP).contains(&n) => w.put(
                    mc,
                    &at,
                    &["hedgingPolicy", "maxAttempts"],
                    Lit::Bare(n.to_string()),
                ),
                _ => w.refuse_leaf(
                    leaf,
                    &format!("a hedgingPolicy takes 2 to {MAX_ATTEMPTS_CAP} attempts (gRFC A6)"),
                ),
            }
        } else if leaf == "hedging.delay" && hedged {
            dur(leaf).map_or(Ok(()), |d| {
                w.put_duration(
                    mc,
                    &at,
                    &["hedgingPolicy", "hedgingDelay"],
                    d,
                    Notation::Proto,
                )
            })
        } else if leaf == "hedging.non_fatal" && hedged {
            let list = want(leaf)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            match codes_for(&list) {
                Ok(codes) => {
                    let node = mc
                        .get("hedgingPolicy")
                        .and_then(|p| p.get("nonFatalStatusCodes"));
                    w.put(
                        mc,
                        &at,
                        &["hedgingPolicy", "nonFatalStatusCodes"],
                        code_list(node, &codes),
                    )
                }
                Err(e) => w.refuse_leaf(leaf, &e),
            }
        } else if leaf == "retry.budget.max_tokens" || leaf == "retry.budget.token_ratio" {
            let key = if leaf.ends_with("max_tokens") {
                "maxTokens"
            } else {
                "tokenRatio"
            };
            match (
                want("retry.budget.kind").and_then(Value::as_str),
                want(leaf).and_then(Value::as_f64),
            ) {
                (Some("token_bucket"), Some(v)) => {
                    let res = w.put(
                        selected.root,
                        "",
                        &["retryThrottling", key],
                        Lit::Bare(super::fmt_num(v)),
                    );
                    if res.is_ok() {
                        w.note(shared_throttling_note(selected.root, method));
                    }
                    res
                }
                _ => w.refuse_leaf(
                    leaf,
                    "gRPC's only retry budget is retryThrottling (a token bucket)",
                ),
            }
        } else if leaf.starts_with("retry.budget") {
            w.refuse_leaf(leaf, "gRPC's only retry budget is retryThrottling: a token bucket per channel (maxTokens, tokenRatio)")
        } else if top("hedging") || leaf.starts_with("retry.") && hedged {
            w.refuse_leaf(leaf, "a methodConfig has either a retryPolicy or a hedgingPolicy: switch between them by hand")
        } else {
            w.refuse_leaf(leaf, "fixed by gRPC (exponential backoff, jitter ×U(0.8, 1.2), pushback honoured: gRFC A6)")
        };
        if let Err(e) = r {
            w.refuse_leaf(leaf, &e).ok();
        }
    }
}
