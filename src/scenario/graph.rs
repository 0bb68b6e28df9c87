//! The services graph of the scenario format (DESIGN-v2 §1): `services`,
//! each a server with its own workers, queue, incidents and side effects
//! (the fields of a chain's `dependency`), and the call edges each
//! service's requests make (`calls`), each carrying every policy field of a
//! layer; and the clients' entry `clients.calls`, a service name or a call
//! edge. Field names are the contract; the types deny unknown fields like
//! every other part of the format.
//!
//! A call is named by its `name`, or else by the service it calls: that is
//! how `--set` and error paths address it
//! (`services.gateway.calls.orders.retry.max_attempts`).

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::adaptive::AdaptiveConcurrency;
use super::cache::Cache;
use super::fleet::{Autoscale, Slowdown};
use super::priority::ShedByPriority;
use super::types::{
    Breaker, Bulkhead, CancellationMode, DeadlineMode, FromFile, Hedging, Idempotency, Incident,
    Layer, OnCancel, Overload, Queue, Recovery, Retry, Scenario, ServerFields, ServiceTime,
    SideEffects, Throttle, default_dedupe_cost, is_false, one, policy_struct, server_struct,
    with_policy_fields, with_server_fields,
};
use super::units::Duration;

/// The name of the service a chain's dependency becomes, and the default
/// of `analysis.service`.
pub const DEPENDENCY: &str = "dependency";
/// Names the clients in call names (`clients.gateway`): no service may be
/// called so.
pub const CLIENTS: &str = "clients";

fn yes() -> bool {
    true
}

with_server_fields! {server_struct! {
    /// One service of the graph: its workers, own work, queue, incidents and
    /// side effects, and the calls each of its requests makes.
    #[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Service {
        /// Names the service in field paths (`services.orders`), tables and
        /// charts.
        pub name: String,
        /// Workers serving requests in parallel; absent: unlimited (every
        /// request starts at once).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub concurrency: Option<u32>,
        /// The service's own work on a worker, before its calls; absent: none
        /// (a proxy that only forwards).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub service_time: Option<ServiceTime>,
        /// The worker stays busy while the request's calls are out (a thread
        /// per request); `false`: it is freed once the service's own work is
        /// done.
        #[serde(default = "yes")]
        pub hold_worker: bool,
        /// Copies of the service, each with its own `concurrency` workers and
        /// its own queue.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        pub replicas: u32,
        /// How requests are spread over the replicas: `round_robin` (default,
        /// Envoy's cluster default), `random`, `least_requests` (fewest in
        /// flight), `p2c` (two random choices, the one with fewer in flight).
        #[serde(default, skip_serializing_if = "is_round_robin")]
        pub balancer: BalancerKind,
        /// The service's work stretches with the fraction of its replica's
        /// workers busy: `{ kind: linear, factor: 2 }` is × (1 + 2u).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub slowdown: Option<Slowdown>,
        /// The replicas follow the load by the Kubernetes HPA rule:
        /// `{ target_utilization: 0.6, max: 30 }`; `replicas` is then where
        /// the fleet starts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub autoscale: Option<Autoscale>,
        /// Each replica limits the requests it holds by a limit that adapts
        /// to its latency, and rejects the others at once with a 503:
        /// `{ kind: gradient }` (Envoy), `gradient2`, `vegas` or `aimd`
        /// (Netflix concurrency-limits).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub adaptive_concurrency: Option<AdaptiveConcurrency>,
        /// An LRU cache of keyed requests in front of the service's calls:
        /// `{ keys: 10000, exponent: 1, capacity: 1000 }`; hits are
        /// answered here, misses go to the calls (the hit ratio follows).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub cache: Option<Cache>,
    } {
        /// The calls each request makes, in order; `parallel` sends a call
        /// together with the one before it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub calls: Vec<Call>,
    }
}}

with_policy_fields! {policy_struct! {
    /// A call edge: the service called, how the call is placed among its
    /// caller's calls, and the caller's client policy on it (every policy
    /// field of a layer, with the same defaults).
    #[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Call {
        /// The service called.
        pub to: String,
        /// Names the call among its caller's calls (default: the name of the
        /// service called): `services.gateway.calls.NAME` in paths.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub name: Option<String>,
        /// The policy as a configuration file of the system sets it (README,
        /// "Settings from configuration files"); the fields written beside it
        /// override the file's, leaf by leaf, as with a preset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub from: Option<FromFile>,
        /// Sent together with the call before it, not after it.
        #[serde(default, skip_serializing_if = "is_false")]
        pub parallel: bool,
        /// Its failure does not fail the caller's request.
        #[serde(default, skip_serializing_if = "is_false")]
        pub optional: bool,
        /// A retry avoids the replicas of the service called that this call
        /// already tried (Envoy's `previous_hosts` retry predicate).
        #[serde(default, skip_serializing_if = "is_false")]
        pub retry_other_replica: bool,
        /// Ejects replicas that keep failing from this call's balancing, by
        /// Envoy's consecutive-5xx rule.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub outlier_detection: Option<OutlierDetection>,
        /// A connection pool per caller replica: an attempt needs one of its
        /// `size` connections, waits at most `acquire_timeout` for one, and a
        /// new connection costs the service called `connect` of work.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub pool: Option<Pool>,
    }
}}

/// A service's load balancer.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BalancerKind {
    /// Each replica in turn.
    #[default]
    RoundRobin,
    /// Uniformly at random.
    Random,
    /// The replica with the fewest requests in flight (ties at random).
    LeastRequests,
    /// Two random replicas, the one with fewer in flight.
    P2c,
}

impl Service {
    /// The replicas the service may have: `replicas`, or with `autoscale`
    /// its `max` (every replica an autoscaler may start exists from the
    /// start, off).
    pub fn slots(&self) -> u32 {
        self.autoscale.as_ref().map_or(self.replicas, |a| a.max)
    }
}

fn is_round_robin(b: &BalancerKind) -> bool {
    *b == BalancerKind::RoundRobin
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `outlier_detection` of a call: Envoy's consecutive-5xx ejection, with
/// Envoy's defaults.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutlierDetection {
    /// Failures in a row (5xx or connection errors) that eject a replica.
    #[serde(default = "default_consecutive_5xx")]
    pub consecutive_5xx: u32,
    /// Time between analysis sweeps (when ejected replicas come back).
    #[serde(default = "default_interval")]
    pub interval: Duration,
    /// Ejection time, multiplied by the times the replica was ejected.
    #[serde(default = "default_base_ejection")]
    pub base_ejection: Duration,
    /// Ejected replicas at most, in percent of all (one is always allowed).
    #[serde(default = "default_max_ejection_percent")]
    pub max_ejection_percent: u32,
    /// The longest ejection.
    #[serde(default = "default_max_ejection")]
    pub max_ejection: Duration,
}

/// `pool` of a call: `{ size: 20, acquire_timeout: 1s, connect: 50ms }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// Connections at most, per caller replica.
    pub size: u32,
    /// The longest a request waits for a free connection before it fails
    /// with `pool_timeout` (HikariCP's `connectionTimeout` is 30 s).
    #[serde(default = "default_acquire_timeout")]
    pub acquire_timeout: Duration,
    /// The work a new connection costs the service called (a TLS
    /// handshake, a database session), taken on one of its workers.
    pub connect: Duration,
}

fn default_acquire_timeout() -> Duration {
    Duration::from_secs(30)
}

fn default_consecutive_5xx() -> u32 {
    5
}
fn default_interval() -> Duration {
    Duration::from_secs(10)
}
fn default_base_ejection() -> Duration {
    Duration::from_secs(30)
}
fn default_max_ejection_percent() -> u32 {
    10
}
fn default_max_ejection() -> Duration {
    Duration::from_secs(300)
}

impl Call {
    /// The call's name: its `name`, or the service it calls.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.to)
    }

    /// A call to `service` with every other field at its default.
    pub fn to_service(service: &str) -> Result<Call, de::value::Error> {
        let fields = std::iter::once(("to", service));
        Call::deserialize(de::value::MapDeserializer::new(fields))
    }
}

/// `clients.calls`: a service name (`calls: gateway`) or a call edge
/// mapping (`{ to: gateway, timeout: 3s }`); a name is the call to that
/// service with every default.
pub(crate) fn entry_call<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Call>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Call>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a service name, or a call such as { to: gateway, timeout: 3s }")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Call::to_service(v).map(Some).map_err(E::custom)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Call::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    d.deserialize_any(V)
}

/// The schema of `clients.calls`: a service name or a call edge.
pub(crate) fn entry_call_schema(g: &mut SchemaGenerator) -> Schema {
    let call = g.subschema_for::<Call>();
    json_schema!({
        "description": "The service the clients call: its name, or a call edge such as { to: gateway, timeout: 3s, retry: { max_attempts: 3 } }.",
        "anyOf": [ { "type": "string" }, call ]
    })
}

impl Scenario {
    /// Whether the scenario is a services graph (else a chain of layers in
    /// front of one dependency, or an OCC workload).
    pub fn is_graph(&self) -> bool {
        !self.services.is_empty()
    }

    /// Whether any layer or call names a preset.
    pub fn has_preset(&self) -> bool {
        self.layers.iter().any(|l| l.preset.is_some())
            || self
                .clients
                .calls
                .iter()
                .chain(self.services.iter().flat_map(|s| &s.calls))
                .any(|c| c.preset.is_some())
    }

    /// Every `from` of the scenario's layers and calls, in file order, with
    /// what holds it for people: ``layer `api` `` or
    /// ``call `services.gateway.calls.orders` ``.
    pub fn from_files(&self) -> Vec<(String, &FromFile)> {
        use super::locate::item_labels;
        let mut out: Vec<(String, &FromFile)> = self
            .layers
            .iter()
            .filter_map(|l| l.from.as_ref().map(|f| (format!("layer `{}`", l.name), f)))
            .collect();
        if let Some(f) = self.clients.calls.as_ref().and_then(|c| c.from.as_ref()) {
            out.push(("call `clients.calls`".into(), f));
        }
        let names: Vec<&str> = self.services.iter().map(|s| s.name.as_str()).collect();
        for (svc, spath) in self.services.iter().zip(item_labels("services", &names)) {
            let calls: Vec<&str> = svc.calls.iter().map(Call::label).collect();
            let labels = item_labels(&format!("{spath}.calls"), &calls);
            for (call, at) in svc.calls.iter().zip(labels) {
                if let Some(f) = &call.from {
                    out.push((format!("call `{at}`"), f));
                }
            }
        }
        out
    }

    /// The index of the service the classic single-dependency columns
    /// describe: `analysis.service`, else the service named `dependency`,
    /// else the first service (in file order) that calls nothing. `None`
    /// for a chain, or when `analysis.service` names no service.
    pub fn focus_service(&self) -> Option<usize> {
        let by_name = |n: &str| self.services.iter().position(|s| s.name == n);
        match &self.analysis.service {
            Some(name) => by_name(name),
            None => by_name(DEPENDENCY)
                .or_else(|| self.services.iter().position(|s| s.calls.is_empty())),
        }
    }

    /// What a run's figures are worth when no call reaches its analysis
    /// service (the words of `run`'s warning and `check`'s finding).
    pub const IDLE_ANALYSIS: &'static str = "its load, utilization and recovery figures (and the SLO objectives judged by them) describe an idle service";

    /// Whether service `i` receives requests: the clients' call reaches
    /// it, directly or through the calls of services it reaches.
    pub fn reached_from_clients(&self, i: usize) -> bool {
        let by_name = |n: &str| self.services.iter().position(|s| s.name == n);
        let mut seen = vec![false; self.services.len()];
        let mut todo: Vec<usize> = self
            .clients
            .calls
            .as_ref()
            .and_then(|c| by_name(&c.to))
            .into_iter()
            .collect();
        while let Some(at) = todo.pop() {
            if std::mem::replace(&mut seen[at], true) {
                continue;
            }
            todo.extend(
                self.services[at]
                    .calls
                    .iter()
                    .filter_map(|c| by_name(&c.to)),
            );
        }
        seen.get(i).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_a_name_or_a_call() {
        #[derive(Deserialize)]
        struct Holder {
            #[serde(deserialize_with = "entry_call")]
            calls: Option<Call>,
        }
        let h: Holder = serde_saphyr::from_str("calls: gateway\n").unwrap();
        let c = h.calls.unwrap();
        assert_eq!(
            (c.to.as_str(), c.label(), c.instances),
            ("gateway", "gateway", 1)
        );
        assert_eq!(c.retry, Retry::default());
        let h: Holder =
            serde_saphyr::from_str("calls: { to: gateway, name: gw, timeout: 3s }\n").unwrap();
        let c = h.calls.unwrap();
        assert_eq!((c.label(), c.timeout), ("gw", Some(Duration::from_secs(3))));
        let e = serde_saphyr::from_str::<Holder>("calls: { to: gateway, timout: 3s }\n")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown field `timout`"), "{e}");
        let e = serde_saphyr::from_str::<Holder>("calls: 5\n")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("expected a service name"), "{e}");
    }

    #[test]
    fn a_call_is_a_layer_of_its_name() {
        let c = Call::to_service("orders").unwrap();
        let l = c.to_layer("gateway.orders");
        assert_eq!(l.name, "gateway.orders");
        assert_eq!((l.instances, l.fan_out, l.quorum), (1, 1, None));
    }
}
