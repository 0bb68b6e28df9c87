//! The range each whole-number field really accepts, for type errors.
//! A type error is found by the reader, which knows only the field's
//! storage type ("a whole number from 0 to 4294967295" for a `u32`);
//! the range the format accepts is validation's (`replicates` 1 to
//! 10000, `instances` 1 to 1000000, `limits.max_events` at least 1). A
//! type error about one of these fields (`instances: 1e12`, `-1`, `2.5`)
//! says that range, so the fix it suggests is one that validation then
//! accepts.
//!
//! Every whole-number field of the format is either here or in
//! [`STORAGE_RANGE`] (validation takes its storage type's whole range);
//! a test walks the JSON Schema so that a new field cannot be missed.

use super::adaptive::MAX_LIMIT;
use super::tune::MAX_BUDGET;
use super::validate::{
    MAX_ATTEMPTS, MAX_CONCURRENCY, MAX_INSTANCES, MAX_QUEUE_CAPACITY, MAX_REPLICATES,
};
use super::validate_graph::{MAX_POOL_SIZE, MAX_REPLICAS};
use super::validate_hops::MAX_FAN_OUT;

const U32: u64 = u32::MAX as u64;
const U64: u64 = u64::MAX;

/// Where a call's policy is written: a layer, a service's call, the
/// clients' call.
const CALLERS: &[&str] = &["layers.*", "services.*.calls.*", "clients.calls"];

/// The whole-number fields of a call's policy (under each of
/// [`CALLERS`]) and the numbers each accepts, ends included.
const POLICY: &[(&str, u64, u64)] = &[
    ("retry.max_attempts", 1, MAX_ATTEMPTS as u64),
    ("hedging.max_attempts", 1, MAX_ATTEMPTS as u64),
    ("fan_out", 1, MAX_FAN_OUT as u64),
    // At most the call's fan_out, itself at most MAX_FAN_OUT.
    ("quorum", 1, MAX_FAN_OUT as u64),
    ("instances", 1, MAX_INSTANCES as u64),
    ("pool.size", 1, MAX_POOL_SIZE as u64),
    ("outlier_detection.consecutive_5xx", 1, U32),
    ("outlier_detection.max_ejection_percent", 0, 100),
    ("breaker.window_calls", 1, U32),
    ("breaker.min_calls", 1, U32),
    ("breaker.probes", 1, U32),
    ("bulkhead.max_concurrent", 1, U32),
];

/// Where a server is written: the dependency of a chain, a service.
const SERVERS: &[&str] = &["dependency", "services.*"];

/// The whole-number fields of a server (under each of [`SERVERS`]).
const SERVER: &[(&str, u64, u64)] = &[
    ("concurrency", 1, MAX_CONCURRENCY as u64),
    ("queue.capacity", 0, MAX_QUEUE_CAPACITY as u64),
    ("queue.timeout_status", 400, 599),
    ("overload.status", 400, 599),
    ("incidents.*.status", 400, 599),
];

/// Field path patterns (`*`: any one segment, a list item by name or
/// index) and the whole numbers each accepts, ends included.
const RANGES: &[(&str, u64, u64)] = &[
    ("replicates", 1, MAX_REPLICATES as u64),
    ("tune.budget", 1, MAX_BUDGET as u64),
    ("clients.arrival.clients", 1, 10_000_000),
    ("occ.clients", 1, 100_000),
    ("consumers.concurrency", 1, U32),
    ("consumers.max_receive_count", 1, 1000),
    ("consumers.poison_status", 400, 599),
    ("limits.max_events", 1, U64),
    ("limits.max_in_flight", 1, U64),
    ("services.*.replicas", 1, MAX_REPLICAS as u64),
    ("services.*.autoscale.min", 1, MAX_REPLICAS as u64),
    ("services.*.autoscale.max", 1, MAX_REPLICAS as u64),
    ("services.*.cache.keys", 1, U32),
    ("services.*.cache.capacity", 1, U32),
    (
        "services.*.adaptive_concurrency.min_concurrency",
        1,
        MAX_LIMIT as u64,
    ),
    (
        "services.*.adaptive_concurrency.request_count",
        1,
        MAX_LIMIT as u64,
    ),
    (
        "services.*.adaptive_concurrency.initial_limit",
        1,
        MAX_LIMIT as u64,
    ),
    (
        "services.*.adaptive_concurrency.min_limit",
        1,
        MAX_LIMIT as u64,
    ),
    (
        "services.*.adaptive_concurrency.max_limit",
        1,
        MAX_LIMIT as u64,
    ),
    (
        "services.*.adaptive_concurrency.long_window",
        1,
        MAX_LIMIT as u64,
    ),
    (
        "services.*.adaptive_concurrency.queue_size",
        0,
        MAX_LIMIT as u64,
    ),
    (
        "services.*.adaptive_concurrency.probe_multiplier",
        0,
        MAX_LIMIT as u64,
    ),
];

/// The whole-number fields validation takes in their storage type's
/// whole range (a seed, a cap where 0 means none, a count with no bound
/// of its own): a type error's storage range is theirs.
#[cfg(test)]
const STORAGE_RANGE: &[&str] = &[
    "seed",
    "layers.*.retry.budget.max_retries",
    "layers.*.retry.budget.min_retry_concurrency",
    "layers.*.bulkhead.max_queue",
    "services.*.calls.*.retry.budget.max_retries",
    "services.*.calls.*.retry.budget.min_retry_concurrency",
    "services.*.calls.*.bulkhead.max_queue",
    "clients.calls.retry.budget.max_retries",
    "clients.calls.retry.budget.min_retry_concurrency",
    "clients.calls.bulkhead.max_queue",
    "dependency.shed_by_priority.*",
    "services.*.shed_by_priority.*",
    // A count of replicas or replica indices: bounded by the service's
    // replicas, which validation names.
    "dependency.incidents.*.replicas",
    "dependency.incidents.*.replicas.*",
    "services.*.incidents.*.replicas",
    "services.*.incidents.*.replicas.*",
];

/// Whether the path `pattern` (`*`: any one segment) matches `segs`.
fn matches(pattern: &str, segs: &[&str]) -> bool {
    let pat: Vec<&str> = pattern.split('.').collect();
    pat.len() == segs.len() && pat.iter().zip(segs).all(|(p, s)| *p == "*" || p == s)
}

/// Every pattern with its range: [`RANGES`], and [`POLICY`] and
/// [`SERVER`] under each of their places.
fn all_ranges() -> impl Iterator<Item = (String, u64, u64)> {
    let under = |places: &'static [&'static str], fields: &'static [(&'static str, u64, u64)]| {
        places.iter().flat_map(move |place| {
            fields
                .iter()
                .map(move |&(f, lo, hi)| (format!("{place}.{f}"), lo, hi))
        })
    };
    RANGES
        .iter()
        .map(|&(p, lo, hi)| (p.to_string(), lo, hi))
        .chain(under(CALLERS, POLICY))
        .chain(under(SERVERS, SERVER))
}

/// The whole numbers the field at `path` accepts, if the format limits
/// it more than its storage type does. A variant's `set` key
/// (`variants.0.set.replicates`) and a sweep's (`sweep.replicates.2`, a
/// value of its list) are the field they set.
pub fn real_range(path: &str) -> Option<(u64, u64)> {
    let segs: Vec<&str> = path.split('.').collect();
    let field = |segs: &[&str]| {
        all_ranges().find_map(|(pattern, lo, hi)| matches(&pattern, segs).then_some((lo, hi)))
    };
    match segs.as_slice() {
        ["variants", _, "set", rest @ ..] => field(rest),
        ["sweep", rest @ ..] => field(rest).or_else(|| match rest {
            [head @ .., last] if last.bytes().all(|b| b.is_ascii_digit()) => field(head),
            _ => None,
        }),
        all => field(all),
    }
}

/// `message` (a type error about the field at `path`) with the storage
/// type's range ("a whole number from 0 to 4294967295") replaced by the
/// field's real one ("a whole number from 1 to 10000").
pub fn with_real_range(path: &str, message: String) -> String {
    let Some((lo, hi)) = real_range(path) else {
        return message;
    };
    for ty in ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"] {
        let Some(storage) = super::suggest::type_words(ty) else {
            continue;
        };
        if message.contains(storage) {
            return message.replacen(storage, &format!("a whole number from {lo} to {hi}"), 1);
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fields_range_replaces_its_storage_types() {
        assert_eq!(real_range("replicates"), Some((1, 10_000)));
        assert_eq!(real_range("variants.2.set.replicates"), Some((1, 10_000)));
        assert_eq!(real_range("layers.api.retry.max_attempts"), Some((1, 1000)));
        assert_eq!(
            real_range("services.gw.calls.orders.fan_out"),
            Some((1, 1000))
        );
        assert_eq!(real_range("seed"), None);
        assert_eq!(
            with_real_range(
                "dependency.concurrency",
                "expected a whole number from 0 to 4294967295, found `x`".into()
            ),
            "expected a whole number from 1 to 1000000, found `x`"
        );
        let other = "expected a whole number from 0 to 255, found `x`".to_string();
        assert_eq!(with_real_range("seed", other.clone()), other);
    }

    #[test]
    fn policy_server_and_sweep_paths_have_their_fields_range() {
        for (path, want) in [
            ("layers.api.instances", (1, 1_000_000)),
            ("clients.calls.instances", (1, 1_000_000)),
            (
                "services.gw.calls.db.breaker.window_calls",
                (1, u32::MAX as u64),
            ),
            ("clients.calls.retry.max_attempts", (1, 1000)),
            ("limits.max_events", (1, u64::MAX)),
            ("limits.max_in_flight", (1, u64::MAX)),
            ("services.db.queue.capacity", (0, 100_000_000)),
            ("dependency.overload.status", (400, 599)),
            ("dependency.incidents.0.status", (400, 599)),
            (
                "services.api.adaptive_concurrency.queue_size",
                (0, 1_000_000),
            ),
            ("variants.0.set.layers.api.instances", (1, 1_000_000)),
            ("sweep.layers.api.instances", (1, 1_000_000)),
            ("sweep.layers.api.instances.3", (1, 1_000_000)),
        ] {
            assert_eq!(real_range(path), Some(want), "{path}");
        }
        assert_eq!(real_range("layers.api.retry.budget.max_retries"), None);
        assert_eq!(
            with_real_range(
                "limits.max_events",
                "expected a whole number from 0 to 18446744073709551615, found `-1`".into()
            ),
            "expected a whole number from 1 to 18446744073709551615, found `-1`"
        );
    }

    /// Every whole-number field of the JSON Schema, as a path pattern
    /// (`*` for a list item or a free mapping's key).
    fn whole_number_fields() -> Vec<String> {
        use serde_json::Value;
        fn walk(
            node: &Value,
            defs: &Value,
            path: &str,
            seen: &mut Vec<String>,
            out: &mut Vec<String>,
        ) {
            if let Some(r) = node.get("$ref").and_then(Value::as_str) {
                let name = r.trim_start_matches("#/$defs/").to_string();
                if !seen.contains(&name) {
                    seen.push(name.clone());
                    walk(&defs[&name], defs, path, seen, out);
                    seen.pop();
                }
            }
            for key in ["anyOf", "oneOf", "allOf"] {
                for b in node
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    walk(b, defs, path, seen, out);
                }
            }
            let integer = match node.get("type") {
                Some(Value::Array(t)) => t.iter().any(|t| t == "integer"),
                Some(t) => t == "integer",
                None => false,
            };
            if integer && !out.iter().any(|p| p == path) {
                out.push(path.to_string());
            }
            let join = |f: &str| {
                if path.is_empty() {
                    f.to_string()
                } else {
                    format!("{path}.{f}")
                }
            };
            for (f, sub) in node
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                walk(sub, defs, &join(f), seen, out);
            }
            for key in ["items", "additionalProperties"] {
                if let Some(sub) = node.get(key).filter(|s| s.is_object()) {
                    walk(sub, defs, &join("*"), seen, out);
                }
            }
        }
        let schema = crate::scenario::schema::scenario_schema();
        let mut out = Vec::new();
        walk(&schema, &schema["$defs"], "", &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn every_whole_number_field_has_a_known_range() {
        let fields = whole_number_fields();
        assert!(fields.len() > 50, "{fields:?}");
        let known: Vec<String> = all_ranges().map(|(p, _, _)| p).collect();
        let mut unknown = Vec::new();
        for f in &fields {
            // Status codes in lists (`retry_on`) are read by their own
            // parser, which says 100-599.
            if f.ends_with("retry_on.*") || f.ends_with("non_fatal.*") {
                continue;
            }
            if !known.contains(f) && !STORAGE_RANGE.contains(&f.as_str()) {
                unknown.push(f.clone());
            }
        }
        assert!(
            unknown.is_empty(),
            "whole-number fields with no range in scenario::ranges (add the range \
             validation takes, or list them in STORAGE_RANGE): {unknown:?}"
        );
        // And nothing listed that the format does not have (a policy's
        // or a server's field at one of its places at least).
        let has = |p: &str| fields.iter().any(|f| f == p);
        for p in RANGES
            .iter()
            .map(|r| r.0)
            .chain(STORAGE_RANGE.iter().copied())
        {
            assert!(has(p), "{p} is no whole-number field of the format");
        }
        for (places, list) in [(CALLERS, POLICY), (SERVERS, SERVER)] {
            for (f, _, _) in list {
                assert!(
                    places.iter().any(|place| has(&format!("{place}.{f}"))),
                    "{f} is no whole-number field of the format"
                );
            }
        }
    }
}
