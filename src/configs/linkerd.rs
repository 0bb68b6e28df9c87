//! `linkerd-serviceprofile`: a Linkerd `ServiceProfile` (one or more YAML
//! documents; other kinds in the file are skipped), one `spec.routes[]`
//! entry picked by its `name` (and, when two profiles of the file have
//! the route, the profile by its `metadata.name`: `profile`), with the
//! profile's `retryBudget`.
//!
//! Sources (docs/sources/config-formats.md §5): linkerd/website
//! `reference/service-profiles.md` (a route's `condition`,
//! `responseClasses`, `isRetryable`, `timeout` "including retries";
//! `retryBudget{retryRatio, minRetriesPerSecond, ttl}`, the ratio of
//! retries to original requests plus a per-second allowance over the
//! window `ttl`), linkerd/linkerd2 `controller/gen/apis/serviceprofile`
//! (`timeout` and `ttl` are Go duration strings), Linkerd's documented
//! defaults (route timeout 10 s; budget 0.2, 10/s, 10 s), and
//! tower-rs/tower `tower/src/retry/budget` (the budget the Linkerd proxy
//! retries against, whose bounds and arithmetic are "taken from finagle":
//! ttl 1 s to 60 s, ratio 0 to 1000, a retry withdraws `trunc(1 /
//! ratio)` deposits when the ratio is at most 1).
//!
//! The proxy retries at once (no back-off), as long as the budget pays,
//! with no count per request: stormsim's `finagle` budget with no per-call
//! cap (`max_requeues_fraction: 0`), and the largest `max_attempts`.
//!
//! What maps to what:
//!
//! | ServiceProfile | layer |
//! |---|---|
//! | `routes[].timeout` (10 s) | `total_timeout` |
//! | `routes[].isRetryable` (false) | `retry.max_attempts`: 1, or as many as the budget allows (1000) |
//! | failures (5xx, or the route's `responseClasses` marking 5xx failed) | `retry.retry_on: [5xx]` |
//! | `retryBudget.retryRatio` (0.2) | `retry.budget.percent_can_retry` (`finagle`) |
//! | `retryBudget.minRetriesPerSecond` (10) | `retry.budget.min_retries_per_sec` |
//! | `retryBudget.ttl` (10 s) | `retry.budget.ttl` |

use serde_json::{Map, Value, json};

use super::durations::{Notation, parse_go};
use super::edit::Lit;
use super::tree::{Doc, Node};
use super::write::Writer;
use super::{Builder, Finding, Origin, Selector, get_path, join, number, uint};
use crate::scenario::units::Duration;
use crate::scenario::validate::MAX_ATTEMPTS;

/// Linkerd's route timeout when `timeout` is absent.
const ROUTE_TIMEOUT_S: u64 = 10;
/// Linkerd's default retry budget.
const RETRY_RATIO: f64 = 0.2;
const MIN_RETRIES_PER_SECOND: u64 = 10;
const TTL_S: u64 = 10;

/// One ServiceProfile route.
pub(crate) struct RouteAt<'d> {
    pub key: String,
    pub node: &'d Node,
    /// The profile's `spec`.
    pub spec: &'d Node,
    /// `metadata.name` of its profile, for people.
    pub profile: String,
}

/// The route named `want`, among the routes of the ServiceProfile
/// `profile` names (its `metadata.name`) when it is given.
pub(crate) fn select<'d>(
    doc: &'d Doc,
    want: &str,
    profile: Option<&str>,
) -> Result<RouteAt<'d>, Finding> {
    let mut all = Vec::new();
    let mut profiles: Vec<String> = Vec::new();
    for root in &doc.roots {
        if root.get("kind").and_then(Node::scalar) != Some("ServiceProfile") {
            continue;
        }
        let Some(spec) = root.get("spec") else {
            continue;
        };
        let name = root
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Node::scalar)
            .unwrap_or("")
            .to_string();
        profiles.push(format!("`{name}`"));
        if profile.is_some_and(|p| p != name) {
            continue;
        }
        for (i, r) in spec
            .get("routes")
            .map_or(&[][..], Node::items)
            .iter()
            .enumerate()
        {
            all.push(RouteAt {
                key: format!("spec.routes[{i}]"),
                node: r,
                spec,
                profile: name.clone(),
            });
        }
    }
    if all.is_empty() {
        // `route:` for `routes:` leaves the profile without routes: the
        // misspelt key, at its position, says why.
        let near = doc
            .roots
            .iter()
            .filter(|r| r.get("kind").and_then(Node::scalar) == Some("ServiceProfile"))
            .filter_map(|r| r.get("spec"))
            .filter(|s| s.get("routes").is_none())
            .flat_map(Node::entries)
            .find(|e| crate::scenario::suggest::did_you_mean(&e.key, ["routes"]).is_some());
        if let Some(e) = near {
            return Err(Finding {
                pos: Some(e.key_pos),
                key: join("spec", &e.key),
                message: format!(
                    "unknown field `{}`; did you mean `routes`? The ServiceProfile CRD has no such field (the API server refuses it), and without `routes` the profile has no route to select",
                    crate::escape::escape(&e.key)
                ),
            });
        }
        let message = match profile {
            Some(p) if !profiles.is_empty() => format!(
                "no ServiceProfile named `{p}` with `spec.routes`; the profiles are {}",
                profiles.join(", ")
            ),
            _ => "no `kind: ServiceProfile` document with `spec.routes` in this file".into(),
        };
        return Err(Finding {
            pos: None,
            key: String::new(),
            message,
        });
    }
    let name = |r: &RouteAt| {
        r.node
            .get("name")
            .and_then(Node::scalar)
            .map(str::to_string)
    };
    let known: Vec<String> = all
        .iter()
        .filter_map(|r| name(r).map(|n| format!("`{n}`")))
        .collect();
    let mut hits: Vec<RouteAt> = all
        .into_iter()
        .filter(|r| name(r).as_deref() == Some(want))
        .collect();
    match hits.len() {
        1 => Ok(hits.remove(0)),
        0 => Err(Finding {
            pos: None,
            key: String::new(),
            message: format!(
                "no route named `{want}`; the routes are {}",
                known.join(", ")
            ),
        }),
        n => {
            let mut in_profiles: Vec<String> =
                hits.iter().map(|h| format!("`{}`", h.profile)).collect();
            in_profiles.dedup();
            let how = if in_profiles.len() > 1 {
                format!(
                    "pick the ServiceProfile with `profile: NAME` (its `metadata.name`: {})",
                    in_profiles.join(", ")
                )
            } else {
                "rename one of them: stormsim selects a route by its name".to_string()
            };
            Err(Finding {
                pos: Some(hits[1].node.pos),
                key: hits[1].key.clone(),
                message: format!(
                    "{n} routes are named `{want}` (lines {}); {how}",
                    hits.iter()
                        .map(|h| h.node.pos.0.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
        }
    }
}

fn duration(b: &mut Builder, node: &Node, key: &str) -> Option<Duration> {
    if let Some(m) =
        super::durations::space_refusal(node.scalar(), "Linkerd (Go's time.ParseDuration)")
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
                "expected a duration such as 10s or 500ms (Go), found {}",
                node.describe()
            ),
        );
    }
    d
}

/// Whether a response class says exactly what Linkerd's default does: a
/// 5xx is a failure.
fn is_default_class(class: &Node) -> bool {
    let status = class.get("condition").and_then(|c| c.get("status"));
    let n = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Node::scalar)
            .and_then(|v| v.parse::<u16>().ok())
    };
    class.get("isFailure").and_then(Node::scalar) == Some("true")
        && class
            .get("condition")
            .is_some_and(|c| c.entries().len() == 1)
        && status.is_some_and(|s| s.entries().len() == 2)
        && n("min") == Some(500)
        && n("max") == Some(599)
}

/// The fields of a ServiceProfile (linkerd2
/// `controller/gen/apis/serviceprofile/v1alpha2/types.go`: `ServiceProfileSpec`,
/// `RouteSpec`, `RetryBudget`).
const SPEC_FIELDS: &[&str] = &["routes", "retryBudget", "dstOverrides", "opaquePorts"];
const ROUTE_FIELDS: &[&str] = &[
    "name",
    "condition",
    "responseClasses",
    "isRetryable",
    "timeout",
];
const BUDGET_FIELDS: &[&str] = &["retryRatio", "minRetriesPerSecond", "ttl"];

/// A field the ServiceProfile CRD does not define. Close to one it does
/// (`retryBudjet`): an error with a did-you-mean, since the field meant
/// is then left to its default (a budget of 0.2 / 10 per second / 10 s
/// for a misspelt `retryBudget`), and the API server would refuse the
/// profile anyway (kubectl applies with strict field validation since
/// Kubernetes 1.27: an unknown field is an error). Otherwise, as any
/// setting stormsim does not know: `unmodelled`.
fn unknown(
    b: &mut Builder,
    key: &str,
    pos: super::tree::Pos,
    field: &str,
    known: &[&str],
    what: &str,
) {
    match crate::scenario::suggest::did_you_mean(field, known.iter().copied()) {
        Some(meant) => b.error(
            key,
            Some(pos),
            format!(
                "unknown field `{}`; did you mean `{meant}`? The ServiceProfile CRD has no such field (the API server refuses it), and stormsim would read `{meant}` as absent",
                crate::escape::escape(field)
            ),
        ),
        None => b.unmodelled(key, Some(pos), what),
    }
}

pub(crate) fn read(doc: &Doc, sel: &Selector, b: &mut Builder) {
    let Some(want) = sel.route.as_deref() else {
        b.error(
            "",
            None,
            "which route? a ServiceProfile needs `route: NAME` (a route's `name`)",
        );
        return;
    };
    let r = match select(doc, want, sel.profile.as_deref()) {
        Ok(r) => r,
        Err(f) => {
            b.errors.push(f);
            return;
        }
    };
    b.policy.selected = format!(
        "ServiceProfile {} {} (line {})",
        r.profile, r.key, r.node.pos.0
    );
    b.set(
        "total_timeout",
        json!(Duration::from_secs(ROUTE_TIMEOUT_S).to_string()),
        Origin {
            key: format!("{}.timeout (default 10s)", r.key),
            pos: None,
        },
    );
    b.set(
        "retry.max_attempts",
        json!(1),
        Origin {
            key: format!("{}.isRetryable (default false)", r.key),
            pos: None,
        },
    );
    for e in r.node.entries() {
        let key = join(&r.key, &e.key);
        match e.key.as_str() {
            "name" => {}
            "condition" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: it picks which requests take this route, and the layer's calls are taken to be this route's",
            ),
            "timeout" => {
                if let Some(d) = duration(b, &e.value, &key) {
                    if d.0 == 0 {
                        b.error(key, Some(e.value.pos), "a timeout of 0 is not one Linkerd applies; write the route's real timeout");
                    } else {
                        b.set("total_timeout", json!(d.to_string()), Origin { key, pos: Some(e.value.pos) });
                    }
                }
            }
            "isRetryable" if e.value.style() != Some(super::tree::Style::Plain) => b.error(
                key,
                Some(e.value.pos),
                format!(
                    "\"{}\": a string, but the ServiceProfile CRD types isRetryable as a boolean and the API server refuses the profile; write true or false without quotes",
                    crate::escape::escape(e.value.scalar().unwrap_or(""))
                ),
            ),
            "isRetryable" => {
                if let Some(true) = super::boolean(b, &e.value, &key) {
                    b.set("retry.max_attempts", json!(MAX_ATTEMPTS), Origin { key, pos: Some(e.value.pos) });
                }
            }
            "responseClasses" => {
                for (i, c) in e.value.items().iter().enumerate() {
                    if !is_default_class(c) {
                        b.unmodelled(
                            &key,
                            Some(c.pos),
                            &format!("responseClasses[{i}], a response class other than `isFailure: true` on status 500 to 599 (it changes which responses are retried)"),
                        );
                    }
                }
            }
            other => unknown(b, &key, e.key_pos, other, ROUTE_FIELDS, "a route field stormsim does not know"),
        }
    }
    for e in r.spec.entries() {
        let key = join("spec", &e.key);
        match e.key.as_str() {
            "routes" | "retryBudget" => {}
            "dstOverrides" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: it splits the traffic between destinations, and a layer calls one dependency",
            ),
            "opaquePorts" => b.unmodelled(
                &key,
                Some(e.key_pos),
                "on an opaque port the proxy forwards bytes, so no route, timeout or retry of this profile applies there",
            ),
            other => unknown(b, &key, e.key_pos, other, SPEC_FIELDS, "a ServiceProfile spec field stormsim does not know"),
        }
    }
    b.absent("timeout");
    b.set(
        "retry.retry_on",
        json!(["5xx"]),
        Origin {
            key: "Linkerd: a response classified as a failure (5xx)".into(),
            pos: None,
        },
    );
    b.set(
        "retry.backoff",
        json!({ "kind": "constant", "base": "0s" }),
        Origin {
            key: "Linkerd: retries at once".into(),
            pos: None,
        },
    );
    b.set(
        "retry.jitter",
        json!("none"),
        Origin {
            key: "Linkerd: retries at once".into(),
            pos: None,
        },
    );
    b.set(
        "retry.retry_after",
        json!("ignore"),
        Origin {
            key: "Linkerd".into(),
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
    read_budget(b, r.spec);
}

fn read_budget(b: &mut Builder, spec: &Node) {
    let at = "spec.retryBudget";
    b.set(
        "retry.budget.kind",
        json!("finagle"),
        Origin {
            key: "Linkerd: a Finagle-style retry budget (tower)".into(),
            pos: None,
        },
    );
    b.set(
        "retry.budget.scope",
        json!("instance"),
        Origin {
            key: "Linkerd: each proxy keeps its own budget".into(),
            pos: None,
        },
    );
    b.set(
        "retry.budget.max_requeues_fraction",
        json!(0),
        Origin {
            key: "Linkerd: no per-request retry limit".into(),
            pos: None,
        },
    );
    let mut ratio = (
        RETRY_RATIO,
        Origin {
            key: format!("{at}.retryRatio (default)"),
            pos: None,
        },
    );
    let mut min = (
        MIN_RETRIES_PER_SECOND,
        Origin {
            key: format!("{at}.minRetriesPerSecond (default)"),
            pos: None,
        },
    );
    let mut ttl = (
        Duration::from_secs(TTL_S),
        Origin {
            key: format!("{at}.ttl (default)"),
            pos: None,
        },
    );
    if let Some(entry) = spec.entry("retryBudget") {
        // A retryBudget written in the profile is read as Linkerd reads
        // it (linkerd2 `pkg/profiles/profiles.go`, `Validate`, over the Go
        // struct of `controller/gen/apis/serviceprofile/v1alpha2`): a
        // missing retryRatio or minRetriesPerSecond is the zero value, a
        // missing ttl refuses the profile. The defaults are only for a
        // profile without a retryBudget.
        let rb = &entry.value;
        let missing = |f: &str| rb.get(f).is_none();
        if missing("ttl") {
            b.error(
                at,
                Some(entry.key_pos),
                "retryBudget has no ttl: Linkerd refuses the profile (\"RetryBudget missing TTL field\"); write the window, such as `ttl: 10s`",
            );
        }
        if missing("retryRatio") {
            b.unmodelled(
                &join(at, "retryRatio"),
                Some(entry.key_pos),
                "retryBudget without retryRatio: Linkerd reads it as 0 (only the per-second allowance pays for retries), a ratio stormsim's budget cannot say; write the ratio you mean",
            );
        }
        if missing("minRetriesPerSecond") {
            min = (
                0,
                Origin {
                    key: format!(
                        "{at}.minRetriesPerSecond (absent in a retryBudget: 0, as Linkerd reads it)"
                    ),
                    pos: None,
                },
            );
        }
        for e in rb.entries() {
            let key = join(at, &e.key);
            let o = Origin {
                key: key.clone(),
                pos: Some(e.value.pos),
            };
            match e.key.as_str() {
                "retryRatio" => {
                    if let Some(v) = number(b, &e.value, &key, 0.0, 1000.0) {
                        if v == 0.0 {
                            b.unmodelled(&key, Some(e.value.pos), "a retry ratio of 0 (only the per-second allowance pays for retries)");
                        } else if v <= 1.0 && (1.0 / v).fract() != 0.0 {
                            // tower withdraws trunc(1 / ratio) per retry.
                            let effective = 1.0 / (1.0 / v).trunc();
                            b.warn(
                                key.clone(),
                                Some(e.value.pos),
                                format!("the proxy withdraws trunc(1 / {v}) = {} deposits per retry, so the ratio in force is {effective}", (1.0 / v).trunc()),
                            );
                            ratio = (effective, o);
                        } else {
                            ratio = (v, o);
                        }
                    }
                }
                "minRetriesPerSecond" => {
                    if let Some(n) = uint(b, &e.value, &key, 0, u64::from(i32::MAX as u32)) {
                        min = (n, o);
                    }
                }
                "ttl" => {
                    if let Some(d) = duration(b, &e.value, &key) {
                        if d < Duration::from_secs(1) || d > Duration::from_secs(60) {
                            b.error(
                                key,
                                Some(e.value.pos),
                                "ttl must be from 1s to 60s (the proxy's budget bounds)",
                            );
                        } else {
                            ttl = (d, o);
                        }
                    }
                }
                other => unknown(
                    b,
                    &key,
                    e.key_pos,
                    other,
                    BUDGET_FIELDS,
                    "a retryBudget field stormsim does not know",
                ),
            }
        }
    }
    b.set("retry.budget.percent_can_retry", json!(ratio.0), ratio.1);
    b.set("retry.budget.min_retries_per_sec", json!(min.0), min.1);
    b.set("retry.budget.ttl", json!(ttl.0.to_string()), ttl.1);
}

// ---------------------------------------------------------------- export

/// The note for an edit of `spec.retryBudget`, made for the route `r`:
/// the budget is the ServiceProfile's, one for all its routes (Linkerd's
/// proxy keeps one budget per profile, and every retryable route draws
/// on it), so the note names the profile's other routes.
fn shared_budget_note(r: &RouteAt) -> String {
    let others: Vec<String> = r
        .spec
        .get("routes")
        .map_or(&[][..], Node::items)
        .iter()
        .filter(|o| !std::ptr::eq(*o, r.node))
        .map(|o| match o.get("name").and_then(Node::scalar) {
            Some(n) => format!("`{}`", crate::escape::escape(n)),
            None => format!("the route at line {}", o.pos.0),
        })
        .collect();
    let also = if others.is_empty() {
        "the profile has no other route".to_string()
    } else {
        format!(
            "that is also {} {}",
            if others.len() == 1 {
                "the route"
            } else {
                "the routes"
            },
            others.join(", ")
        )
    };
    format!(
        "spec.retryBudget is the ServiceProfile's (`{}`), not the route's: the change applies to every route of the profile; {also}",
        crate::escape::escape(&r.profile)
    )
}

pub(crate) fn write(
    w: &mut Writer<'_>,
    sel: &Selector,
    wanted: &Map<String, Value>,
    changed: &[String],
) {
    let Ok(r) = select(
        w.doc,
        sel.route.as_deref().unwrap_or(""),
        sel.profile.as_deref(),
    ) else {
        return;
    };
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    let dur = |p: &str| {
        want(p)
            .and_then(Value::as_str)
            .and_then(|s| crate::scenario::units::parse_duration(s).ok())
    };
    let at = "spec.retryBudget";
    for leaf in changed {
        let leaf = leaf.as_str();
        let res = match leaf {
            "total_timeout" => match dur(leaf) {
                Some(d) if d.0 > 0 => w.put_duration(r.node, &r.key, &["timeout"], d, Notation::Go),
                _ => w.refuse_leaf(leaf, "a Linkerd route always has a timeout (10s when absent)"),
            },
            "retry.max_attempts" => match want(leaf).and_then(Value::as_u64) {
                Some(1) => w.put(r.node, &r.key, &["isRetryable"], Lit::Bare("false".into())),
                Some(n) if n == u64::from(MAX_ATTEMPTS) => w.put(r.node, &r.key, &["isRetryable"], Lit::Bare("true".into())),
                _ => w.refuse_leaf(leaf, &format!("Linkerd has no per-request retry limit: 1 (isRetryable: false) or {MAX_ATTEMPTS} (isRetryable: true, the budget limits retries)")),
            },
            "retry.budget.percent_can_retry" => match want(leaf).and_then(Value::as_f64) {
                Some(v) => w.put(r.spec, "spec", &["retryBudget", "retryRatio"], Lit::Bare(super::fmt_num(v))),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "retry.budget.min_retries_per_sec" => match want(leaf).and_then(Value::as_f64) {
                Some(v) if v.fract() == 0.0 && v >= 0.0 => w.put(r.spec, "spec", &["retryBudget", "minRetriesPerSecond"], Lit::Bare(super::fmt_num(v))),
                _ => w.refuse_leaf(leaf, "minRetriesPerSecond is a whole number"),
            },
            "retry.budget.ttl" => match dur(leaf) {
                Some(d) => w.put_duration(r.spec, "spec", &["retryBudget", "ttl"], d, Notation::Go),
                None => w.refuse_leaf(leaf, "missing"),
            },
            _ => w.refuse_leaf(leaf, &format!("fixed by Linkerd (immediate retries of failed responses, a Finagle-style budget in {at})")),
        };
        if let Err(e) = res {
            w.refuse_leaf(leaf, &e).ok();
        } else if leaf.starts_with("retry.budget.") {
            w.note(shared_budget_note(&r));
        }
    }
    // Linkerd reads a missing retryRatio or minRetriesPerSecond of a
    // retryBudget as 0 and refuses one without ttl: a budget written (or
    // created) here says all three.
    if changed.iter().any(|c| c.starts_with("retry.budget.")) {
        let have = r.spec.get("retryBudget");
        for (field, leaf) in [
            ("retryRatio", "retry.budget.percent_can_retry"),
            ("minRetriesPerSecond", "retry.budget.min_retries_per_sec"),
            ("ttl", "retry.budget.ttl"),
        ] {
            if have.is_some_and(|rb| rb.get(field).is_some()) || changed.iter().any(|c| c == leaf) {
                continue;
            }
            let res = match field {
                "ttl" => match dur(leaf) {
                    Some(d) => {
                        w.put_duration(r.spec, "spec", &["retryBudget", field], d, Notation::Go)
                    }
                    None => Err("missing".to_string()),
                },
                _ => match want(leaf).and_then(Value::as_f64) {
                    Some(v) => w.put(
                        r.spec,
                        "spec",
                        &["retryBudget", field],
                        Lit::Bare(super::fmt_num(v)),
                    ),
                    None => Err("missing".to_string()),
                },
            };
            if let Err(e) = res {
                w.refuse_leaf(leaf, &e).ok();
            }
        }
    }
}
