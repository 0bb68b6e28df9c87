//! The range each whole-number field really accepts, for type errors.
//! A type error is found by the reader, which knows only the field's
//! storage type ("a whole number (at most 4294967295)" for a `u32`);
//! the range the format accepts is validation's (`replicates` 1 to
//! 10000). A type error about one of these fields says that range, so
//! the fix it suggests is one that validation then accepts.

use super::tune::MAX_BUDGET;
use super::validate::{MAX_ATTEMPTS, MAX_CONCURRENCY, MAX_QUEUE_CAPACITY, MAX_REPLICATES};
use super::validate_graph::{MAX_POOL_SIZE, MAX_REPLICAS};
use super::validate_hops::MAX_FAN_OUT;

/// Field path patterns (`*`: any one segment, a list item by name or
/// index) and the whole numbers each accepts, ends included.
const RANGES: &[(&str, u64, u64)] = &[
    ("replicates", 1, MAX_REPLICATES as u64),
    ("layers.*.retry.max_attempts", 1, MAX_ATTEMPTS as u64),
    ("layers.*.hedging.max_attempts", 1, MAX_ATTEMPTS as u64),
    (
        "services.*.calls.*.hedging.max_attempts",
        1,
        MAX_ATTEMPTS as u64,
    ),
    ("layers.*.fan_out", 1, MAX_FAN_OUT as u64),
    ("services.*.calls.*.fan_out", 1, MAX_FAN_OUT as u64),
    ("services.*.calls.*.pool.size", 1, MAX_POOL_SIZE as u64),
    ("consumers.max_receive_count", 1, 1000),
    (
        "services.*.calls.*.retry.max_attempts",
        1,
        MAX_ATTEMPTS as u64,
    ),
    ("dependency.concurrency", 1, MAX_CONCURRENCY as u64),
    ("services.*.concurrency", 1, MAX_CONCURRENCY as u64),
    ("dependency.queue.capacity", 0, MAX_QUEUE_CAPACITY as u64),
    ("services.*.queue.capacity", 0, MAX_QUEUE_CAPACITY as u64),
    ("services.*.replicas", 1, MAX_REPLICAS as u64),
    ("tune.budget", 1, MAX_BUDGET as u64),
    ("clients.arrival.clients", 1, 10_000_000),
    ("occ.clients", 1, 100_000),
];

/// The whole numbers the field at `path` accepts, if the format limits
/// it more than its storage type does. A variant's `set` key
/// (`variants.0.set.replicates`) is the field it sets.
pub fn real_range(path: &str) -> Option<(u64, u64)> {
    let segs: Vec<&str> = path.split('.').collect();
    let segs = match segs.as_slice() {
        ["variants", _, "set", rest @ ..] => rest,
        all => all,
    };
    RANGES.iter().find_map(|&(pattern, lo, hi)| {
        let pat: Vec<&str> = pattern.split('.').collect();
        let same =
            pat.len() == segs.len() && pat.iter().zip(segs).all(|(p, s)| *p == "*" || p == s);
        same.then_some((lo, hi))
    })
}

/// `message` (a type error about the field at `path`) with the storage
/// type's range ("a whole number (at most 4294967295)") replaced by the
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
                "expected a whole number (at most 4294967295), found `x`".into()
            ),
            "expected a whole number from 1 to 1000000, found `x`"
        );
        let other = "expected a whole number (at most 255), found `x`".to_string();
        assert_eq!(with_real_range("seed", other.clone()), other);
    }
}
