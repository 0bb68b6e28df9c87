//! The graph a run simulates, read-only once built: services (each a
//! server with workers, a queue and incidents, and the calls its requests
//! make) and call edges (each carrying its caller's client policy:
//! timeouts, retries, budgets, breakers...). The clients' entry is edge 0;
//! the topology says where a request goes next. Nodes address each other
//! by typed ids ([`ServiceId`], [`EdgeId`]), never by "the next index".
//!
//! A chain of layers in front of one dependency (the first scenario
//! format) is the graph [`Topology::chain`] builds: service 0 is the
//! dependency; layer i ≥ 1 runs on a proxy service of its own name that
//! only forwards each request to edge i; edge i carries layer i's policy.

use std::fmt;

use super::config::CallPolicy;
use super::server::ServiceConfig;

/// A service of the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceId(pub u16);

/// A call edge of the topology (edge 0: the clients' entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EdgeId(pub u16);

/// One replica of one service: an index into the flat list of every
/// service's replicas (service 0's first, then service 1's...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplicaId(pub u32);

impl ReplicaId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl ServiceId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl EdgeId {
    pub const ENTRY: EdgeId = EdgeId(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One call edge: who calls whom, under which policy.
#[derive(Clone, Debug)]
pub struct EdgeConfig {
    /// The calling service; `None` for the clients.
    pub caller: Option<ServiceId>,
    pub callee: ServiceId,
    /// The caller's client policy on this call; its `name` names the edge.
    pub policy: CallPolicy,
    /// Sent together with the call before it, not after it.
    pub parallel: bool,
    /// Its failure does not fail the caller's request.
    pub optional: bool,
}

/// Why a set of services and edges is not a usable topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyError {
    NoEntry,
    TooLarge,
    EntryHasCaller,
    UnknownService { edge: String },
    CallerMismatch { service: String, edge: String },
    EdgeNotCalled { edge: String },
    Cycle { path: Vec<String> },
    NoFocus,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::NoEntry => f.write_str("the clients call nothing (no entry edge)"),
            TopologyError::TooLarge => f.write_str("more than 65535 services or calls"),
            TopologyError::EntryHasCaller => f.write_str("edge 0 must be the clients' entry"),
            TopologyError::UnknownService { edge } => {
                write!(f, "call `{edge}` names a service that does not exist")
            }
            TopologyError::CallerMismatch { service, edge } => {
                write!(
                    f,
                    "service `{service}` lists call `{edge}` of another caller"
                )
            }
            TopologyError::EdgeNotCalled { edge } => {
                write!(f, "call `{edge}` is made by no service")
            }
            TopologyError::Cycle { path } => {
                write!(f, "the calls form a cycle: {}", path.join(" → "))
            }
            TopologyError::NoFocus => f.write_str("the focus service does not exist"),
        }
    }
}

impl std::error::Error for TopologyError {}

/// The graph, with what is derived from it once.
#[derive(Clone, Debug)]
pub struct Topology {
    services: Vec<ServiceConfig>,
    edges: Vec<EdgeConfig>,
    /// The service the classic single-dependency columns describe.
    focus: ServiceId,
    /// Per service: its calls grouped into stages (parallel calls share a
    /// stage; stages run one after the other).
    stages: Vec<Vec<Vec<EdgeId>>>,
    /// Per service: the one call a request simply passes through to (no
    /// workers limit, no work, no incidents, one required call).
    pass_through: Vec<Option<EdgeId>>,
    /// Per service: its first replica; then the total (one past the last).
    first_replica: Vec<u32>,
    /// Per replica: its service.
    replica_service: Vec<ServiceId>,
}

impl Topology {
    /// Checks and derives a topology. Edge 0 is the clients' entry; every
    /// other edge is listed by exactly its caller; the calls are acyclic.
    pub fn new(
        services: Vec<ServiceConfig>,
        edges: Vec<EdgeConfig>,
        focus: ServiceId,
    ) -> Result<Topology, TopologyError> {
        if edges.is_empty() {
            return Err(TopologyError::NoEntry);
        }
        if services.len() > u16::MAX as usize || edges.len() > u16::MAX as usize {
            return Err(TopologyError::TooLarge);
        }
        if edges[0].caller.is_some() {
            return Err(TopologyError::EntryHasCaller);
        }
        if focus.index() >= services.len() {
            return Err(TopologyError::NoFocus);
        }
        let mut listed = vec![false; edges.len()];
        listed[0] = true;
        for (s, svc) in services.iter().enumerate() {
            for &e in &svc.calls {
                let edge = edges.get(e.index()).ok_or(TopologyError::TooLarge)?;
                if edge.caller != Some(ServiceId(s as u16)) || listed[e.index()] {
                    return Err(TopologyError::CallerMismatch {
                        service: svc.name.clone(),
                        edge: edge.policy.name.clone(),
                    });
                }
                listed[e.index()] = true;
            }
        }
        for (e, edge) in edges.iter().enumerate() {
            if edge.callee.index() >= services.len() {
                return Err(TopologyError::UnknownService {
                    edge: edge.policy.name.clone(),
                });
            }
            if !listed[e] {
                return Err(TopologyError::EdgeNotCalled {
                    edge: edge.policy.name.clone(),
                });
            }
        }
        let stages: Vec<Vec<Vec<EdgeId>>> = services
            .iter()
            .map(|svc| {
                let mut out: Vec<Vec<EdgeId>> = Vec::new();
                for &e in &svc.calls {
                    match out.last_mut() {
                        Some(stage) if edges[e.index()].parallel => stage.push(e),
                        _ => out.push(vec![e]),
                    }
                }
                out
            })
            .collect();
        let pass_through = services
            .iter()
            .map(|svc| {
                let simple = svc.concurrency.is_none()
                    && svc.replicas <= 1
                    && svc.service.is_none()
                    && svc.incidents.is_empty()
                    && svc.calls.len() == 1
                    && !edges[svc.calls[0].index()].optional;
                simple.then(|| svc.calls[0])
            })
            .collect();
        let mut first_replica = Vec::with_capacity(services.len() + 1);
        let mut replica_service = Vec::new();
        let mut total: u32 = 0;
        for (s, svc) in services.iter().enumerate() {
            first_replica.push(total);
            let n = svc.replicas.max(1);
            total = total.checked_add(n).ok_or(TopologyError::TooLarge)?;
            replica_service.extend(std::iter::repeat_n(ServiceId(s as u16), n as usize));
        }
        first_replica.push(total);
        let t = Topology {
            services,
            edges,
            focus,
            stages,
            pass_through,
            first_replica,
            replica_service,
        };
        if let Some(path) = t.find_cycle() {
            return Err(TopologyError::Cycle { path });
        }
        Ok(t)
    }

    /// The graph of a chain of layers (outermost first, at least one) in
    /// front of `dependency`: service 0 is the dependency, layer i ≥ 1 runs
    /// on a proxy named after it, edge i carries layer i's policy.
    pub fn chain(layers: Vec<CallPolicy>, mut dependency: ServiceConfig) -> Topology {
        assert!(!layers.is_empty(), "a chain has at least one layer");
        let n = layers.len();
        dependency.calls.clear();
        let mut services = vec![dependency];
        for (i, l) in layers.iter().enumerate().skip(1) {
            services.push(ServiceConfig::proxy(&l.name, EdgeId(i as u16)));
        }
        let edges = layers
            .into_iter()
            .enumerate()
            .map(|(i, policy)| EdgeConfig {
                caller: (i > 0).then_some(ServiceId(i as u16)),
                callee: if i + 1 < n {
                    ServiceId(i as u16 + 1)
                } else {
                    ServiceId(0)
                },
                policy,
                parallel: false,
                optional: false,
            })
            .collect();
        Topology::new(services, edges, ServiceId(0)).expect("a chain is a valid topology")
    }

    pub fn services(&self) -> &[ServiceConfig] {
        &self.services
    }

    pub fn edges(&self) -> &[EdgeConfig] {
        &self.edges
    }

    #[inline]
    pub fn service(&self, s: ServiceId) -> &ServiceConfig {
        &self.services[s.index()]
    }

    #[inline]
    pub fn edge(&self, e: EdgeId) -> &EdgeConfig {
        &self.edges[e.index()]
    }

    /// The service the classic single-dependency columns describe.
    pub fn focus(&self) -> ServiceId {
        self.focus
    }

    /// The stages of service `s`'s calls.
    #[inline]
    pub fn stages(&self, s: ServiceId) -> &[Vec<EdgeId>] {
        &self.stages[s.index()]
    }

    /// The call a request at `s` passes straight through to, when `s` is a
    /// plain forwarder.
    #[inline]
    pub fn pass_through(&self, s: ServiceId) -> Option<EdgeId> {
        self.pass_through[s.index()]
    }

    /// Replica `r` (0-based) of service `s`.
    #[inline]
    pub fn replica(&self, s: ServiceId, r: u32) -> ReplicaId {
        ReplicaId(self.first_replica[s.index()] + r)
    }

    /// How many replicas service `s` has.
    #[inline]
    pub fn replica_count(&self, s: ServiceId) -> u32 {
        self.first_replica[s.index() + 1] - self.first_replica[s.index()]
    }

    /// The replicas of every service together.
    pub fn total_replicas(&self) -> usize {
        self.replica_service.len()
    }

    /// The service a replica belongs to, and its number there.
    #[inline]
    pub fn replica_of(&self, r: ReplicaId) -> (ServiceId, u32) {
        let s = self.replica_service[r.index()];
        (s, r.0 - self.first_replica[s.index()])
    }

    /// The names of the edges, in order (the layer names of a chain).
    pub fn edge_names(&self) -> Vec<String> {
        self.edges.iter().map(|e| e.policy.name.clone()).collect()
    }

    /// The policies met from the clients' entry through forwarding
    /// services down to the first service that does work: every layer of
    /// a chain, outermost first.
    pub fn entry_chain(&self) -> Vec<CallPolicy> {
        let mut out = vec![self.edges[0].policy.clone()];
        let mut e = EdgeId::ENTRY;
        while let Some(next) = self.pass_through(self.edge(e).callee) {
            if out.len() > self.edges.len() {
                break;
            }
            out.push(self.edge(next).policy.clone());
            e = next;
        }
        out
    }

    /// Per service: the longest chain of calls from the clients to it (1
    /// for the entry's callee; 0 for a service no request reaches).
    pub fn depths(&self) -> Vec<usize> {
        let mut depth = vec![0usize; self.services.len()];
        depth[self.edges[0].callee.index()] = 1;
        // Longest paths in a DAG by relaxation: at most one round per
        // service.
        for _ in 0..self.services.len() {
            let mut changed = false;
            for e in &self.edges[1..] {
                let (Some(from), to) = (e.caller, e.callee.index()) else {
                    continue;
                };
                let d = depth[from.index()];
                if d > 0 && depth[to] < d + 1 {
                    depth[to] = d + 1;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        depth
    }

    /// The services in the order tables list them: by depth from the
    /// clients, then as declared.
    pub fn display_order(&self) -> Vec<ServiceId> {
        let depth = self.depths();
        let mut order: Vec<ServiceId> = (0..self.services.len())
            .map(|i| ServiceId(i as u16))
            .collect();
        order.sort_by_key(|s| (depth[s.index()] == 0, depth[s.index()], s.index()));
        order
    }

    /// A service by name.
    pub fn service_id(&self, name: &str) -> Option<ServiceId> {
        self.services
            .iter()
            .position(|s| s.name == name)
            .map(|i| ServiceId(i as u16))
    }

    /// Changes a service's configuration (tests and builders; the derived
    /// stages are recomputed).
    pub fn with_service(
        &self,
        s: ServiceId,
        change: impl FnOnce(&mut ServiceConfig),
    ) -> Result<Topology, TopologyError> {
        let mut services = self.services.clone();
        change(&mut services[s.index()]);
        Topology::new(services, self.edges.clone(), self.focus)
    }

    /// Changes an edge's policy (tests and builders).
    pub fn with_policy(&self, e: EdgeId, change: impl FnOnce(&mut CallPolicy)) -> Topology {
        let mut t = self.clone();
        change(&mut t.edges[e.index()].policy);
        t
    }

    /// A cycle of calls, as service names from a service back to itself.
    fn find_cycle(&self) -> Option<Vec<String>> {
        // Iterative depth-first search with colours: 0 new, 1 on the path,
        // 2 done.
        let n = self.services.len();
        let mut colour = vec![0u8; n];
        for start in 0..n {
            if colour[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            colour[start] = 1;
            while let Some(&mut (s, ref mut next)) = stack.last_mut() {
                let calls = &self.services[s].calls;
                if *next < calls.len() {
                    let callee = self.edges[calls[*next].index()].callee.index();
                    *next += 1;
                    match colour[callee] {
                        0 => {
                            colour[callee] = 1;
                            stack.push((callee, 0));
                        }
                        1 => {
                            let from = stack.iter().position(|&(x, _)| x == callee).unwrap_or(0);
                            let mut path: Vec<String> = stack[from..]
                                .iter()
                                .map(|&(x, _)| self.services[x].name.clone())
                                .collect();
                            path.push(self.services[callee].name.clone());
                            return Some(path);
                        }
                        _ => {}
                    }
                } else {
                    colour[s] = 2;
                    stack.pop();
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::service::ServiceDist;

    fn leaf(name: &str) -> ServiceConfig {
        ServiceConfig::leaf(name, 4, ServiceDist::Constant(1_000), 10)
    }

    fn edge(name: &str, caller: Option<u16>, callee: u16) -> EdgeConfig {
        EdgeConfig {
            caller: caller.map(ServiceId),
            callee: ServiceId(callee),
            policy: CallPolicy::passthrough(name),
            parallel: false,
            optional: false,
        }
    }

    #[test]
    fn a_chain_forwards_through_proxies_to_service_zero() {
        let layers = vec![
            CallPolicy::passthrough("sdk"),
            CallPolicy::passthrough("api"),
            CallPolicy::passthrough("db-client"),
        ];
        let t = Topology::chain(layers, leaf("dependency"));
        assert_eq!(t.services().len(), 3);
        assert_eq!(t.edge(EdgeId(0)).callee, ServiceId(1));
        assert_eq!(t.pass_through(ServiceId(1)), Some(EdgeId(1)));
        assert_eq!(t.pass_through(ServiceId(2)), Some(EdgeId(2)));
        assert_eq!(t.edge(EdgeId(2)).callee, ServiceId(0));
        assert_eq!(t.pass_through(ServiceId(0)), None);
        assert_eq!(t.service(ServiceId(1)).name, "api");
    }

    #[test]
    fn parallel_calls_share_a_stage() {
        let mut gw = leaf("gateway");
        gw.calls = vec![EdgeId(1), EdgeId(2), EdgeId(3)];
        let mut e2 = edge("inventory", Some(0), 2);
        e2.parallel = true;
        let t = Topology::new(
            vec![gw, leaf("orders"), leaf("inventory"), leaf("audit")],
            vec![
                edge("in", None, 0),
                edge("orders", Some(0), 1),
                e2,
                edge("audit", Some(0), 3),
            ],
            ServiceId(1),
        )
        .unwrap();
        assert_eq!(
            t.stages(ServiceId(0)),
            &[vec![EdgeId(1), EdgeId(2)], vec![EdgeId(3)]]
        );
    }

    #[test]
    fn a_cycle_is_refused_with_its_path() {
        let mut a = leaf("a");
        a.calls = vec![EdgeId(1)];
        let mut b = leaf("b");
        b.calls = vec![EdgeId(2)];
        let err = Topology::new(
            vec![a, b],
            vec![
                edge("in", None, 0),
                edge("a.b", Some(0), 1),
                edge("b.a", Some(1), 0),
            ],
            ServiceId(0),
        )
        .unwrap_err();
        assert_eq!(
            err,
            TopologyError::Cycle {
                path: vec!["a".into(), "b".into(), "a".into()]
            }
        );
    }

    #[test]
    fn every_edge_has_exactly_its_caller() {
        let mut a = leaf("a");
        a.calls = vec![EdgeId(1)];
        let err = Topology::new(
            vec![a, leaf("b")],
            vec![edge("in", None, 0), edge("b.a", Some(1), 0)],
            ServiceId(0),
        )
        .unwrap_err();
        assert!(matches!(err, TopologyError::CallerMismatch { .. }));
        let err = Topology::new(
            vec![leaf("a")],
            vec![edge("in", None, 0), edge("lost", Some(0), 0)],
            ServiceId(0),
        )
        .unwrap_err();
        assert!(matches!(err, TopologyError::EdgeNotCalled { .. }));
    }
}
