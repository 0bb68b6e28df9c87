//! `cache` on a service (DESIGN-v2 §2), as the scenario format writes it:
//! `{ keys: 10000, exponent: 1, capacity: 1000, ttl: 5m, coalesce: true }`
//! — the keys requests ask for and their Zipf popularity, the entries the
//! LRU cache holds, their time to live and request coalescing — and the
//! `flush` incident that empties it; their validation and translation into
//! the model's types (`model::cache`). The hit ratio is not an input: it
//! follows from the keys, the capacity and the TTL.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::{Incident, IncidentKind};
use super::units::Duration;
use super::validate::Checker;
use crate::model::cache::CacheConfig;

/// The largest Zipf exponent (beyond it every request asks for key 0).
pub const MAX_EXPONENT: f64 = 10.0;

fn default_exponent() -> f64 {
    1.0
}

/// `cache` on a service: requests ask for keys of a Zipf popularity; the
/// service answers a key it holds itself (a hit) and sends the others (a
/// miss) to its calls; a miss that succeeds fills the cache.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// Distinct keys requests ask for.
    pub keys: u32,
    /// The Zipf exponent of their popularity: key k (from 1) is asked for
    /// in proportion to 1 ÷ k^exponent (0: all alike; default 1).
    #[serde(default = "default_exponent")]
    pub exponent: f64,
    /// Entries the cache holds at most; the least recently used one makes
    /// room for a new one (LRU).
    pub capacity: u32,
    /// An entry expires this long after it was filled; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Duration>,
    /// At most one miss per key in flight: the other requests for the key
    /// wait for it and share its answer (singleflight).
    #[serde(default)]
    pub coalesce: bool,
    /// It starts holding the `capacity` most popular keys, as a cache in
    /// service for a while does (default); `false`: it starts empty.
    #[serde(default = "yes")]
    pub warm: bool,
}

fn yes() -> bool {
    true
}

impl Cache {
    /// The model's cache (validated input assumed).
    pub fn to_model(&self) -> CacheConfig {
        CacheConfig {
            keys: self.keys.max(1),
            exponent: self.exponent,
            capacity: self.capacity.max(1),
            ttl: self.ttl.map(Duration::ns),
            coalesce: self.coalesce,
            warm: self.warm,
        }
    }
}

impl Checker {
    /// A service's `cache` at `path`: `calls` its calls, `writes` whether
    /// its requests write.
    pub(super) fn cache(&mut self, c: &Cache, path: &str, calls: usize, writes: bool) {
        self.check(calls > 0, path, || {
            "a cache answers hits itself and sends misses to the service's calls, and this service has none; expected calls (the service behind the cache), or no cache".to_string()
        });
        self.check(!writes, path, || {
            "a cache answers reads, and this service's requests write (side_effects); expected side_effects: read, or no cache".to_string()
        });
        // No upper bound of its own: each key costs `KEY_STATE_BYTES` (16)
        // from the start of a run, counted in the memory estimate
        // (`scenario::memory`), which refuses a key space too large for a
        // run's memory (about 250 000 000 keys in 4 GB) with its figures.
        self.check(
            c.keys >= 1,
            &format!("{path}.keys"),
            || {
                format!(
                    "keys is {}; expected at least 1 (each key holds {} B for the run, counted in its memory estimate)",
                    c.keys,
                    crate::model::cache::KEY_STATE_BYTES
                )
            },
        );
        self.check(c.capacity >= 1, &format!("{path}.capacity"), || {
            "capacity is 0: a cache that holds nothing never hits; expected at least 1 entry, or no cache".to_string()
        });
        let ep = format!("{path}.exponent");
        if self.finite_in(
            c.exponent,
            &ep,
            &format!("a number from 0 to {MAX_EXPONENT}"),
        ) {
            self.check((0.0..=MAX_EXPONENT).contains(&c.exponent), &ep, || {
                format!(
                    "exponent is {}; expected a number from 0 (all keys alike) to {MAX_EXPONENT}",
                    c.exponent
                )
            });
        }
        if let Some(t) = c.ttl {
            self.positive(t, &format!("{path}.ttl"), "ttl");
        }
    }

    /// `flush` incidents of a server at `path` (its `incidents`): only a
    /// service with a cache has one to flush, and it is the service's (not
    /// a replica's).
    pub(super) fn flushes(&mut self, incidents: &[Incident], path: &str, has_cache: bool) {
        for (i, inc) in incidents.iter().enumerate() {
            if inc.kind != IncidentKind::Flush {
                continue;
            }
            let p = format!("{path}.{i}");
            self.check(has_cache, &format!("{p}.kind"), || {
                "a flush empties a cache, and this service has none; expected a `cache` on the service, or another kind".to_string()
            });
            self.check(inc.replicas.is_none(), &format!("{p}.replicas"), || {
                "a service's replicas share its cache: a flush empties it for all of them; remove `replicas`".to_string()
            });
        }
    }
}
