//! `envoy-route` read for a call edge of a services graph (the callee may
//! have several replicas): the route cluster's `outlier_detection` as the
//! call's `outlier_detection`, and the settings of the cluster that decide
//! which replicas a call may use (its `lb_policy`, which must be the
//! called service's `balancer`; active health checks; the load balancer's
//! panic threshold). On a chain's layer, which calls one host,
//! `envoy.rs` refuses `outlier_detection` as before.
//!
//! Sources (docs/sources/config-formats.md §2): envoyproxy/envoy
//! `api/envoy/config/cluster/v3/outlier_detection.proto` (every key, its
//! default and its validation), `docs/root/intro/arch_overview/upstream/outlier.rst`
//! (the ejection algorithm), `api/envoy/config/cluster/v3/cluster.proto`
//! (`CommonLbConfig.healthy_panic_threshold`, 50 % by default; `lb_policy`,
//! ROUND_ROBIN by default; `LeastRequestLbConfig.choice_count`, 2).
//!
//! | Envoy `outlier_detection` | call |
//! |---|---|
//! | `consecutive_5xx` (5) | `outlier_detection.consecutive_5xx` |
//! | `interval` (10 s) | `outlier_detection.interval` |
//! | `base_ejection_time` (30 s) | `outlier_detection.base_ejection` |
//! | `max_ejection_percent` (10) | `outlier_detection.max_ejection_percent` |
//! | `max_ejection_time` (300 s, or `base_ejection_time` when longer) | `outlier_detection.max_ejection` |
//!
//! `consecutive_5xx: 0` or `enforcing_consecutive_5xx: 0` turn the
//! consecutive-5xx ejection off (no `outlier_detection` on the call).

use serde_json::{Map, Value, json};

use super::durations::Notation;
use super::edit::Lit;
use super::tree::Node;
use super::write::Writer;
use super::{Builder, Origin, Target, get_path, join, number, uint};
use crate::scenario::graph::BalancerKind;
use crate::scenario::units::{Duration, parse_duration};

/// Envoy's defaults (outlier_detection.proto).
const CONSECUTIVE_5XX: u64 = 5;
const INTERVAL_S: u64 = 10;
const BASE_EJECTION_S: u64 = 30;
const MAX_EJECTION_PERCENT: u64 = 10;
const MAX_EJECTION_S: u64 = 300;
const ENFORCING_SUCCESS_RATE: u64 = 100;
const SUCCESS_RATE_MINIMUM_HOSTS: u64 = 5;
const FAILURE_PERCENTAGE_MINIMUM_HOSTS: u64 = 5;
/// `CommonLbConfig.healthy_panic_threshold` (cluster.proto), percent.
const PANIC_THRESHOLD: f64 = 50.0;

/// One value read, with where it came from.
struct Read<T> {
    value: T,
    origin: Origin,
}

impl<T> Read<T> {
    fn fixed(value: T, key: String) -> Self {
        Read {
            value,
            origin: Origin { key, pos: None },
        }
    }
}

/// Reads what the cluster `c` (key path `ckey`) says about the replicas of
/// the service a call goes to. `None`: the route's cluster is not in the
/// file (Envoy's defaults: no outlier detection).
pub(crate) fn read_cluster(b: &mut Builder, cluster: Option<(&str, &Node)>) {
    let Target::Call { replicas, balancer } = b.target else {
        return;
    };
    let Some((ckey, c)) = cluster else {
        b.absent("outlier_detection");
        return;
    };
    lb_policy(b, ckey, c, replicas, balancer);
    for e in c.entries() {
        let key = join(ckey, &e.key);
        if e.key == "health_checks" && !e.value.items().is_empty() {
            b.unmodelled(
                &key,
                Some(e.key_pos),
                "active health checking (it takes replicas out of the balancing by probes of its own)",
            );
        }
    }
    let Some(od) = c.entry("outlier_detection") else {
        b.absent("outlier_detection");
        return;
    };
    let okey = join(ckey, "outlier_detection");
    if od.value.is_null() {
        // `outlier_detection:` with nothing below it: Envoy's defaults.
    } else if !od.value.is_map() {
        b.error(
            &okey,
            Some(od.value.pos),
            "expected an outlier_detection mapping",
        );
        return;
    }
    read_outlier(b, &okey, od.key_pos, &od.value, replicas);
    panic_threshold(b, ckey, c, replicas);
}

fn read_outlier(b: &mut Builder, okey: &str, at: (u32, u32), od: &Node, replicas: Option<u32>) {
    let dflt = |f: &str| format!("{okey}.{f} (default)");
    let mut consecutive = Read::fixed(CONSECUTIVE_5XX, dflt("consecutive_5xx"));
    let mut interval = Read::fixed(Duration::from_secs(INTERVAL_S), dflt("interval"));
    let mut base = Read::fixed(
        Duration::from_secs(BASE_EJECTION_S),
        dflt("base_ejection_time"),
    );
    let mut percent = Read::fixed(MAX_EJECTION_PERCENT, dflt("max_ejection_percent"));
    let mut max: Option<Read<Duration>> = None;
    let mut enforcing_5xx = 100;
    let mut success_rate = Read::fixed(ENFORCING_SUCCESS_RATE, dflt("enforcing_success_rate"));
    let mut success_hosts = SUCCESS_RATE_MINIMUM_HOSTS;
    let mut failure_percentage: Option<(String, (u32, u32), u64)> = None;
    let mut failure_hosts = FAILURE_PERCENTAGE_MINIMUM_HOSTS;
    let mut split = false;
    let mut local_origin = Vec::new();
    for e in od.entries() {
        let key = join(okey, &e.key);
        let here = Origin {
            key: key.clone(),
            pos: Some(e.value.pos),
        };
        let percent_of = |b: &mut Builder| uint(b, &e.value, &key, 0, 100);
        match e.key.as_str() {
            "consecutive_5xx" => {
                if let Some(n) = uint(b, &e.value, &key, 0, u64::from(u32::MAX)) {
                    consecutive = Read { value: n, origin: here };
                }
            }
            "interval" | "base_ejection_time" | "max_ejection_time" => {
                let Some(d) = positive(b, &e.value, &key) else { continue };
                let read = Read { value: d, origin: here };
                match e.key.as_str() {
                    "interval" => interval = read,
                    "base_ejection_time" => base = read,
                    _ => max = Some(read),
                }
            }
            "max_ejection_percent" => {
                if let Some(n) = percent_of(b) {
                    percent = Read { value: n, origin: here };
                }
            }
            "enforcing_consecutive_5xx" => match percent_of(b) {
                Some(n @ (0 | 100)) => enforcing_5xx = n,
                Some(n) => b.unmodelled(
                    &key,
                    Some(e.key_pos),
                    &format!("a consecutive-5xx ejection enforced at random ({n}% of the times it is detected); stormsim ejects every time (100) or never (0)"),
                ),
                None => {}
            },
            "enforcing_success_rate" => {
                if let Some(n) = percent_of(b) {
                    success_rate = Read { value: n, origin: Origin { key: key.clone(), pos: Some(e.key_pos) } };
                }
            }
            "success_rate_minimum_hosts" => {
                if let Some(n) = uint(b, &e.value, &key, 0, u64::from(u32::MAX)) {
                    success_hosts = n;
                }
            }
            "success_rate_request_volume" | "success_rate_stdev_factor" | "failure_percentage_request_volume" => {
                uint(b, &e.value, &key, 0, u64::from(u32::MAX));
            }
            "failure_percentage_threshold" => {
                percent_of(b);
            }
            "enforcing_failure_percentage" => {
                if let Some(n) = percent_of(b)
                    && n > 0
                {
                    failure_percentage = Some((key.clone(), e.key_pos, n));
                }
            }
            "failure_percentage_minimum_hosts" => {
                if let Some(n) = uint(b, &e.value, &key, 0, u64::from(u32::MAX)) {
                    failure_hosts = n;
                }
            }
            "consecutive_gateway_failure" => {
                uint(b, &e.value, &key, 0, u64::from(u32::MAX));
            }
            "enforcing_consecutive_gateway_failure" => {
                if let Some(n) = percent_of(b)
                    && n > 0
                {
                    b.unmodelled(
                        &key,
                        Some(e.key_pos),
                        "ejection after consecutive gateway failures (502, 503, 504) counted apart from the other 5xx",
                    );
                }
            }
            "split_external_local_origin_errors" => {
                if let Some(true) = super::boolean(b, &e.value, &key) {
                    split = true;
                    b.unmodelled(
                        &key,
                        Some(e.key_pos),
                        "local-origin failures (timeouts, resets, refused connections) counted apart from the upstream's 5xx",
                    );
                }
            }
            "consecutive_local_origin_failure"
            | "enforcing_consecutive_local_origin_failure"
            | "enforcing_local_origin_success_rate"
            | "enforcing_failure_percentage_local_origin" => {
                uint(b, &e.value, &key, 0, u64::from(u32::MAX));
                local_origin.push((key, e.key_pos));
            }
            "max_ejection_time_jitter" => {
                let d = e.value.scalar().and_then(super::durations::parse_proto);
                match d {
                    None => {
                        positive(b, &e.value, &key);
                    }
                    Some(d) if d.0 > 0 => b.unmodelled(
                        &key,
                        Some(e.key_pos),
                        "a random jitter added to each ejection time",
                    ),
                    Some(_) => {}
                }
            }
            "successful_active_health_check_uneject_host" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: it acts only with active health checks, which the cluster does not have",
            ),
            "monitors" => b.warn(
                key,
                Some(e.key_pos),
                "not simulated: Envoy does not implement it (outlier_detection.proto hides it as not implemented)",
            ),
            _ => b.unmodelled(&key, Some(e.key_pos), "an outlier_detection field stormsim does not know"),
        }
    }
    if !split {
        for (key, pos) in local_origin {
            b.warn(
                key,
                Some(pos),
                "not simulated: it takes effect only with split_external_local_origin_errors: true",
            );
        }
    }
    // Envoy runs the success-rate and failure-percentage detectors only
    // over clusters of at least their minimum hosts.
    let may_reach = |min: u64| replicas.is_none_or(|n| u64::from(n) >= min);
    let callee = |min: u64| match replicas {
        Some(n) => {
            format!("the service called has {n} replicas, at least the {min} hosts it needs")
        }
        None => format!(
            "the replicas of the service called are not known (`--replicas`), and it runs over {min} hosts or more"
        ),
    };
    if success_rate.value > 0 {
        let what = format!(
            "success-rate ejection (enforcing_success_rate {}{}: ejects a host whose success rate falls far below the others'); {}; set enforcing_success_rate: 0 in the file to turn it off",
            success_rate.value,
            if success_rate.origin.pos.is_none() {
                ", Envoy's default"
            } else {
                ""
            },
            callee(success_hosts)
        );
        let key = format!("{okey}.enforcing_success_rate");
        let pos = success_rate.origin.pos.or(Some(at));
        if may_reach(success_hosts) {
            b.unmodelled(&key, pos, &what);
        } else if success_rate.origin.pos.is_some() {
            b.warn(key, pos, too_few(success_hosts, replicas));
        }
    }
    if let Some((key, pos, n)) = failure_percentage {
        if may_reach(failure_hosts) {
            b.unmodelled(
                &key,
                Some(pos),
                &format!(
                    "failure-percentage ejection (enforcing_failure_percentage {n}); {}",
                    callee(failure_hosts)
                ),
            );
        } else {
            b.warn(key, Some(pos), too_few(failure_hosts, replicas));
        }
    }
    // Envoy refuses the cluster (`DetectorImpl::create`, source/common/
    // upstream/outlier_detection_impl.cc): "outlier detector's
    // max_ejection_time cannot be smaller than base_ejection_time".
    if let Some(m) = &max
        && m.value < base.value
    {
        b.error(
            m.origin.key.clone(),
            m.origin.pos,
            format!(
                "max_ejection_time {} is shorter than base_ejection_time {}: Envoy refuses the cluster (\"outlier detector's max_ejection_time cannot be smaller than base_ejection_time\")",
                m.value, base.value
            ),
        );
        return;
    }
    if consecutive.value == 0 || enforcing_5xx == 0 {
        // No consecutive-5xx ejection: the only detector stormsim models
        // is off.
        b.absent("outlier_detection");
        return;
    }
    let max = max.unwrap_or_else(|| {
        let d = Duration::from_secs(MAX_EJECTION_S).max(base.value);
        Read::fixed(
            d,
            format!("{okey}.max_ejection_time (default: 300s, or base_ejection_time when longer)"),
        )
    });
    b.set(
        "outlier_detection.consecutive_5xx",
        json!(consecutive.value),
        consecutive.origin,
    );
    b.set(
        "outlier_detection.interval",
        json!(interval.value.to_string()),
        interval.origin,
    );
    b.set(
        "outlier_detection.base_ejection",
        json!(base.value.to_string()),
        base.origin,
    );
    b.set(
        "outlier_detection.max_ejection_percent",
        json!(percent.value),
        percent.origin,
    );
    b.set(
        "outlier_detection.max_ejection",
        json!(max.value.to_string()),
        max.origin,
    );
}

/// Why a periodic detector never runs on this call.
fn too_few(min: u64, replicas: Option<u32>) -> String {
    format!(
        "not simulated: Envoy runs this detector over {min} hosts or more, and the service called has {}",
        replicas.unwrap_or(0)
    )
}

/// A duration greater than 0 (`validate.rules` `gt {}`).
fn positive(b: &mut Builder, node: &Node, key: &str) -> Option<Duration> {
    let d = node.scalar().and_then(super::durations::parse_proto);
    match d {
        Some(d) if d.0 > 0 => Some(d),
        Some(_) => {
            b.error(
                key,
                Some(node.pos),
                "must be greater than 0s (outlier_detection.proto)",
            );
            None
        }
        None => {
            b.error(
                key,
                Some(node.pos),
                format!(
                    "{}, found {}",
                    super::durations::proto_refusal(
                        node.scalar(),
                        "expected a duration such as 30s (protobuf JSON)"
                    ),
                    node.describe()
                ),
            );
            None
        }
    }
}

/// Envoy balances over every host, ejected ones included, once fewer than
/// `healthy_panic_threshold` percent of them are healthy; stormsim keeps
/// ejected replicas out while any other is left. The difference can only
/// show when the outlier detection may eject that many.
fn panic_threshold(b: &mut Builder, ckey: &str, c: &Node, replicas: Option<u32>) {
    let Some(Value::Number(p)) =
        get_path(&b.policy.fragment, "outlier_detection.max_ejection_percent").cloned()
    else {
        return;
    };
    let percent = p.as_f64().unwrap_or(0.0);
    let lb = c.get("common_lb_config");
    let set = lb.and_then(|l| l.entry("healthy_panic_threshold"));
    let key = join(ckey, "common_lb_config.healthy_panic_threshold");
    let threshold = match set {
        Some(e) => {
            let v = e.value.get("value").unwrap_or(&e.value);
            match number(b, v, &join(&key, "value"), 0.0, 100.0) {
                Some(t) => t,
                None => return,
            }
        }
        None => PANIC_THRESHOLD,
    };
    let pos = set.map(|e| e.key_pos);
    // The most replicas the detection ejects at once (one always may be),
    // and whether the rest are then fewer than the threshold.
    let panics = |n: u32| {
        let n = f64::from(n);
        let ejected = (n * percent / 100.0).floor().max(1.0).min(n);
        n >= 2.0 && (n - ejected) * 100.0 < threshold * n
    };
    let reach = match replicas {
        Some(n) => panics(n).then(|| format!("with {n} replicas")),
        None => (100.0 - percent < threshold).then(|| "with enough replicas".to_string()),
    };
    if let Some(with) = reach {
        b.unmodelled(
            &key,
            pos,
            &format!(
                "the load balancer's panic threshold ({}% healthy, {}): {with}, max_ejection_percent {} may leave fewer healthy, and then Envoy balances over every replica, ejected ones included",
                super::fmt_num(threshold),
                if set.is_some() { "from the file" } else { "Envoy's default" },
                super::fmt_num(percent)
            ),
        );
    }
}

/// The cluster's load balancer against the called service's `balancer`:
/// the balancing is the service's in stormsim (shared by its callers), so
/// a cluster that balances otherwise is an error when the service is
/// known, and a reminder when it is not. One replica: nothing to balance.
fn lb_policy(
    b: &mut Builder,
    ckey: &str,
    c: &Node,
    replicas: Option<u32>,
    callee: Option<BalancerKind>,
) {
    if replicas == Some(1) {
        return;
    }
    let entry = c.entry("lb_policy");
    let name = entry
        .and_then(|e| e.value.scalar())
        .unwrap_or("ROUND_ROBIN");
    let key = join(ckey, "lb_policy");
    let pos = Some(entry.map_or(c.pos, |e| e.key_pos));
    if let Some(e) = c.entry("load_balancing_policy") {
        b.unmodelled(
            &join(ckey, "load_balancing_policy"),
            Some(e.key_pos),
            "a load balancer given as a typed extension (stormsim balances by round_robin, random, least_requests or p2c)",
        );
        return;
    }
    let choice = c
        .get("least_request_lb_config")
        .and_then(|l| l.get("choice_count"))
        .and_then(|n| n.get("value").or(Some(n)))
        .and_then(Node::scalar)
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(2);
    let ours = match name {
        "ROUND_ROBIN" => Some(BalancerKind::RoundRobin),
        "RANDOM" => Some(BalancerKind::Random),
        "LEAST_REQUEST" if choice == 2 => Some(BalancerKind::P2c),
        _ => None,
    };
    let default = if entry.is_none() {
        " (Envoy's default)"
    } else {
        ""
    };
    match (ours, callee) {
        (None, _) => b.unmodelled(
            &key,
            pos,
            &format!("the load balancer {name}{default} (stormsim balances by round_robin, random, least_requests or p2c: Envoy's ROUND_ROBIN, RANDOM, and LEAST_REQUEST with its default choice_count 2)"),
        ),
        (Some(o), Some(theirs)) if o != theirs => b.unmodelled(
            &key,
            pos,
            &format!(
                "the cluster balances by {name}{default}, stormsim's `balancer: {}`, but the service called balances by `{}`: set `balancer: {}` on it",
                kind_name(o),
                kind_name(theirs),
                kind_name(o)
            ),
        ),
        (Some(o), None) => b.warn(
            key,
            pos,
            format!(
                "the replicas a call goes to are picked by the called service's `balancer`: {name}{default} is `balancer: {}`",
                kind_name(o)
            ),
        ),
        _ => {}
    }
}

/// A balancer as the scenario format spells it.
pub(crate) fn kind_name(k: BalancerKind) -> &'static str {
    match k {
        BalancerKind::RoundRobin => "round_robin",
        BalancerKind::Random => "random",
        BalancerKind::LeastRequests => "least_requests",
        BalancerKind::P2c => "p2c",
    }
}

/// The Envoy keys of the call's `outlier_detection` fields.
const KEYS: &[(&str, &str)] = &[
    ("consecutive_5xx", "consecutive_5xx"),
    ("interval", "interval"),
    ("base_ejection", "base_ejection_time"),
    ("max_ejection_percent", "max_ejection_percent"),
    ("max_ejection", "max_ejection_time"),
];

/// Writes a changed `outlier_detection.FIELD` of a call back into the
/// cluster `c` (key path `ckey`).
pub(crate) fn write<'d>(
    w: &mut Writer<'d>,
    cluster: Option<(&str, &'d Node)>,
    leaf: &str,
    wanted: &Map<String, Value>,
    changed: &[String],
) -> Result<(), String> {
    let Some((ckey, c)) = cluster else {
        return w.refuse_leaf(
            leaf,
            "the route's cluster is not in this file, so its outlier_detection cannot be edited here",
        );
    };
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    if want("outlier_detection").is_none() {
        return w.refuse_leaf(
            leaf,
            "stormsim does not remove an outlier_detection; delete it by hand (or set enforcing_consecutive_5xx: 0)",
        );
    }
    let field = leaf.strip_prefix("outlier_detection.").unwrap_or(leaf);
    let Some((_, key)) = KEYS.iter().find(|(f, _)| *f == field) else {
        return w.refuse_leaf(leaf, "not an outlier_detection field Envoy has");
    };
    let dur = |f: &str| {
        want(&format!("outlier_detection.{f}"))
            .and_then(Value::as_str)
            .and_then(|s| parse_duration(s).ok())
    };
    let od = c.get("outlier_detection");
    match field {
        "consecutive_5xx" | "max_ejection_percent" => match want(leaf).and_then(Value::as_u64) {
            Some(n) => w.put(
                c,
                ckey,
                &["outlier_detection", key],
                Lit::Bare(n.to_string()),
            )?,
            None => return w.refuse_leaf(leaf, "missing"),
        },
        _ => match dur(field) {
            Some(d) => w.put_duration(c, ckey, &["outlier_detection", key], d, Notation::Proto)?,
            None => return w.refuse_leaf(leaf, "missing"),
        },
    }
    // Without a max_ejection_time of its own the file's maximum follows
    // base_ejection_time (the longer of it and 300 s): write it when that
    // would not give the tuned maximum.
    let has_max = od.is_some_and(|o| o.get("max_ejection_time").is_some());
    if field == "base_ejection"
        && !has_max
        && !changed
            .iter()
            .any(|c| c == "outlier_detection.max_ejection")
        && let (Some(base), Some(max)) = (dur("base_ejection"), dur("max_ejection"))
        && max != Duration::from_secs(MAX_EJECTION_S).max(base)
    {
        w.put_duration(
            c,
            ckey,
            &["outlier_detection", "max_ejection_time"],
            max,
            Notation::Proto,
        )?;
    }
    Ok(())
}
