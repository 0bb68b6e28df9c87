//! Semantic checks of a services graph (DESIGN-v2 §1): unique, usable
//! service names; each service's server fields as a dependency's; calls to
//! services that exist (with a suggestion), never to the caller itself,
//! uniquely named among the caller's calls, `parallel` never on a first
//! call, each call's policy exactly as a layer's; the clients' entry; no
//! cycle of calls (the cycle is named); `analysis.service`; and, for a
//! chain, none of the graph's fields.

use std::collections::HashMap;

use super::graph::{CLIENTS, Call, Service};
use super::locate::item_labels;
use super::suggest::did_you_mean;
use super::types::{Scenario, SideEffects};
use super::validate::Checker;
use super::validate_hops::Probe;

/// Services in one graph at most.
pub const MAX_SERVICES: usize = 100;
/// Call edges in one graph at most (the clients' entry included).
pub const MAX_CALLS: usize = 500;
/// Incidents of all services at most (one per replica it names).
pub const MAX_INCIDENTS: usize = 10_000;
/// Replicas of one service at most.
pub const MAX_REPLICAS: u32 = 1000;
/// Replicas a call with `retry_other_replica` can remember trying.
pub const MAX_REMEMBERED_REPLICAS: u32 = 64;

/// The most connections a pool may have per caller replica (a slot index
/// is 16 bits).
pub const MAX_POOL_SIZE: u32 = 10_000;

/// The replicas `svc` may have ([`Service::slots`]) when the fields that
/// say so are within their range (`replicas`, or an autoscaler's `max`),
/// else `None`: that field is refused, and nothing is judged against it.
fn counted_slots(svc: &Service) -> Option<u32> {
    let n = svc.slots();
    let replicas_ok = svc.autoscale.is_some() || (1..=MAX_REPLICAS).contains(&svc.replicas);
    (replicas_ok && (1..=MAX_REPLICAS).contains(&n)).then_some(n)
}

impl Checker {
    /// Everything about a services graph.
    pub(super) fn graph(&mut self, s: &Scenario) {
        if !s.dependency.is_unset() {
            self.push("dependency", "a scenario has either `services` (with `clients.calls`) or `dependency` (with `layers`), not both; describe the dependency as a service (named `dependency` to keep its name)");
        }
        if !s.layers.is_empty() {
            self.push("layers", "a scenario has either `services` (with `clients.calls`) or `layers` (in front of `dependency`), not both; put each layer's policy on a call (`clients.calls` or a service's `calls`)");
        }
        let services = &s.services;
        self.check(services.len() <= MAX_SERVICES, "services", || {
            format!(
                "{} services; expected at most {MAX_SERVICES}",
                services.len()
            )
        });
        let edges = 1 + services.iter().map(|x| x.calls.len()).sum::<usize>();
        self.check(edges <= MAX_CALLS, "services", || {
            format!("{edges} calls (the clients' included); expected at most {MAX_CALLS}")
        });
        let names: Vec<&str> = services.iter().map(|x| x.name.as_str()).collect();
        let labels = item_labels("services", &names);
        // The first service of each name (a second one is an error).
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        let mut seen = super::validate::Names::default();
        for (i, (svc, path)) in services.iter().zip(&labels).enumerate() {
            let name_path = format!("{path}.name");
            self.item_name("service", &svc.name, &name_path, &mut seen);
            self.check(svc.name != CLIENTS, &name_path, || {
                format!("service name `{CLIENTS}` names the clients in call names (`{CLIENTS}.gateway`); expected another name")
            });
            by_name.entry(svc.name.as_str()).or_insert(i);
            self.check(
                (1..=MAX_REPLICAS).contains(&svc.replicas),
                &format!("{path}.replicas"),
                || format!("replicas is {}; expected 1 to {MAX_REPLICAS}", svc.replicas),
            );
            self.server(
                path,
                svc.concurrency,
                svc.service_time.as_ref(),
                &svc.server_fields(),
                counted_slots(svc),
                s.duration,
            );
            if let Some(sd) = &svc.slowdown {
                self.slowdown(sd, &format!("{path}.slowdown"), svc.concurrency);
            }
            if let Some(a) = &svc.autoscale {
                self.autoscale(a, &format!("{path}.autoscale"), svc.concurrency);
            }
            if let Some(a) = &svc.adaptive_concurrency {
                self.adaptive(a, &format!("{path}.adaptive_concurrency"));
            }
            if let Some(c) = &svc.cache {
                let writes = svc.side_effects != SideEffects::Read;
                self.cache(c, &format!("{path}.cache"), svc.calls.len(), writes);
            }
            self.flushes(
                &svc.incidents,
                &format!("{path}.incidents"),
                svc.cache.is_some(),
            );
        }
        // Each incident on a list or count of replicas is one per replica.
        let incidents: usize = services
            .iter()
            .flat_map(|x| &x.incidents)
            .map(|i| i.replicas.as_ref().map_or(1, |t| t.indices().len()))
            .sum();
        self.check(incidents <= MAX_INCIDENTS, "services", || {
            format!(
                "{incidents} incidents (one per replica named); expected at most {MAX_INCIDENTS}"
            )
        });
        let mut callees: Vec<Vec<(usize, String)>> = vec![Vec::new(); services.len()];
        for (i, (svc, path)) in services.iter().zip(&labels).enumerate() {
            callees[i] = self.calls(svc, i, path, services, &labels, &by_name);
        }
        match &s.clients.calls {
            None => self.push(
                "clients.calls",
                "a services graph needs the service the clients call; expected for example clients: { calls: gateway, arrival: ... }",
            ),
            Some(entry) => {
                let path = "clients.calls";
                let callee = self.callee(entry, path, None, services, &by_name);
                for (set, field) in [(entry.parallel, "parallel"), (entry.optional, "optional")] {
                    self.check(!set, &format!("{path}.{field}"), || {
                        format!("`{field}` applies to a service's calls, not to the clients' entry; remove it")
                    });
                }
                self.call_policy(entry, path, callee, services, &labels);
            }
        }
        self.cycles(services, &callees);
        if let Some(name) = &s.analysis.service {
            self.known_service(name, "analysis.service", services);
        }
        let budgets = s
            .clients
            .calls
            .iter()
            .map(|c| {
                (
                    "clients.calls".to_string(),
                    format!("{CLIENTS}.{}", c.label()),
                    c,
                )
            })
            .chain(services.iter().zip(&labels).flat_map(|(svc, path)| {
                let call_names: Vec<&str> = svc.calls.iter().map(Call::label).collect();
                let call_labels = item_labels(&format!("{path}.calls"), &call_names);
                svc.calls
                    .iter()
                    .zip(call_labels)
                    .map(|(c, p)| (p, format!("{}.{}", svc.name, c.label()), c))
            }))
            .map(|(p, name, c)| (format!("{p}.retry.budget"), name, &c.retry.budget))
            .collect();
        self.same_global_budgets("call", budgets);
        self.consumers(s);
        self.sweep(s);
    }

    /// The calls of service `i` (at `path`); returns the services they call
    /// (those that exist, self-calls left out), each with the field path of
    /// its call.
    fn calls(
        &mut self,
        svc: &Service,
        i: usize,
        path: &str,
        services: &[Service],
        service_labels: &[String],
        by_name: &HashMap<&str, usize>,
    ) -> Vec<(usize, String)> {
        let names: Vec<&str> = svc.calls.iter().map(Call::label).collect();
        let labels = item_labels(&format!("{path}.calls"), &names);
        let mut seen = super::validate::Names::default();
        let mut out = Vec::new();
        for (j, (call, cpath)) in svc.calls.iter().zip(&labels).enumerate() {
            match &call.name {
                Some(n) => self.item_name("call", n, &format!("{cpath}.name"), &mut seen),
                None => {
                    if seen.insert(&call.to).is_err() {
                        self.push(format!("{cpath}.to"), format!(
                            "call name `{}` is used twice in the calls of `{}`; expected unique call names: give a second call to the same service a `name`",
                            call.to, svc.name
                        ));
                    }
                }
            }
            if j == 0 && call.parallel {
                self.push(format!("{cpath}.parallel"), format!(
                    "the first call of `{}` cannot be parallel: `parallel: true` sends a call together with the call before it; remove it",
                    svc.name
                ));
            }
            let callee = self.callee(call, cpath, Some(i), services, by_name);
            if let Some(c) = callee {
                out.push((c, cpath.clone()));
            }
            self.call_policy(call, cpath, callee, services, service_labels);
        }
        out
    }

    /// The service `call` goes to (its index), when it exists and is not
    /// the caller (`caller`) itself.
    fn callee(
        &mut self,
        call: &Call,
        path: &str,
        caller: Option<usize>,
        services: &[Service],
        by_name: &HashMap<&str, usize>,
    ) -> Option<usize> {
        let to = call.to.as_str();
        let Some(&c) = by_name.get(to) else {
            self.known_service(to, &format!("{path}.to"), services);
            return None;
        };
        if caller == Some(c) {
            self.push(
                format!("{path}.to"),
                format!("service `{to}` calls itself; expected a call to another service"),
            );
            return None;
        }
        Some(c)
    }

    /// `name` at `path` must name a service.
    fn known_service(&mut self, name: &str, path: &str, services: &[Service]) {
        if services.iter().any(|x| x.name == name) {
            return;
        }
        let mut names: Vec<&str> = Vec::new();
        for x in services {
            if !names.contains(&x.name.as_str()) {
                names.push(&x.name);
            }
        }
        let hint = did_you_mean(name, names.iter().copied())
            .map(|n| format!("did you mean `{n}`? "))
            .unwrap_or_default();
        self.push(
            path,
            format!(
                "no service is named `{name}`; {hint}services: {}",
                names.join(", ")
            ),
        );
    }

    /// A call's policy, exactly as a layer's; a status probe asks the
    /// service called (`callee`, an index of `services`, when known).
    fn call_policy(
        &mut self,
        call: &Call,
        path: &str,
        callee: Option<usize>,
        services: &[Service],
        service_labels: &[String],
    ) {
        let layer = call.to_layer(call.label());
        self.policy(&layer, path);
        if let Some(c) = callee
            && call.retry_other_replica
        {
            // Only against a count that stands (`replicas: 0` is its own
            // error).
            let n = counted_slots(&services[c]).unwrap_or(0);
            self.check(n <= MAX_REMEMBERED_REPLICAS, &format!("{path}.retry_other_replica"), || {
                format!("`{}` has {n} replicas; a call remembers the replicas it tried among at most {MAX_REMEMBERED_REPLICAS}; expected fewer replicas, or no retry_other_replica", services[c].name)
            });
        }
        if let Some(pool) = &call.pool {
            let at = |f: &str| format!("{path}.pool.{f}");
            self.check(pool.size >= 1, &at("size"), || {
                "size is 0; expected at least 1 connection".to_string()
            });
            self.check(pool.size <= MAX_POOL_SIZE, &at("size"), || {
                format!(
                    "size is {}; expected at most {MAX_POOL_SIZE} connections per caller replica",
                    pool.size
                )
            });
            self.positive(
                pool.acquire_timeout,
                &at("acquire_timeout"),
                "acquire_timeout",
            );
            self.positive(pool.connect, &at("connect"), "connect");
            let layer = call.to_layer(call.label());
            let unsupported = [
                (layer.fan_out > 1, "fan_out"),
                (layer.hedging.is_some(), "hedging"),
                (layer.hedge_on_timeout, "hedge_on_timeout"),
            ];
            for (set, what) in unsupported {
                self.check(!set, &format!("{path}.pool"), || {
                    format!("a pool with {what} is not modelled (one connection per attempt); expected no {what} on a pooled call")
                });
            }
            if let Some(c) = callee {
                let svc = &services[c];
                let works = svc.concurrency.is_some() || svc.service_time.is_some();
                self.check(works, &format!("{path}.pool"), || {
                    format!("`{}` has neither concurrency nor service_time: it only forwards, and a connection to it costs nothing; expected a pool on a call to a service that does work", svc.name)
                });
            }
        }
        if let Some(o) = &call.outlier_detection {
            let at = |f: &str| format!("{path}.outlier_detection.{f}");
            self.check(o.consecutive_5xx >= 1, &at("consecutive_5xx"), || {
                "consecutive_5xx is 0; expected at least 1 failure in a row".to_string()
            });
            self.positive(o.interval, &at("interval"), "interval");
            self.positive(o.base_ejection, &at("base_ejection"), "base_ejection");
            self.positive(o.max_ejection, &at("max_ejection"), "max_ejection");
            self.check(
                o.max_ejection_percent <= 100,
                &at("max_ejection_percent"),
                || {
                    format!(
                        "max_ejection_percent is {}; expected 0 to 100",
                        o.max_ejection_percent
                    )
                },
            );
        }
        let field = callee
            .and_then(|c| service_labels.get(c))
            .map_or_else(String::new, |l| format!("{l}.side_effects"));
        let probe = Probe {
            innermost: true,
            side_effects: callee.map(|c| services[c].side_effects),
            field: &field,
        };
        self.layer_hops(&layer, path, probe);
    }

    /// A cycle of calls (self-calls are reported on their own): the first
    /// found, in file order, named service by service, at the call that
    /// closes it (`callees`: per service, the services its calls go to and
    /// the calls' field paths).
    fn cycles(&mut self, services: &[Service], callees: &[Vec<(usize, String)>]) {
        // Iterative depth-first search with colours: 0 new, 1 on the path,
        // 2 done.
        let mut colour = vec![0u8; services.len()];
        for start in 0..services.len() {
            if colour[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            colour[start] = 1;
            while let Some(&mut (s, ref mut next)) = stack.last_mut() {
                let Some((c, call)) = callees[s].get(*next) else {
                    colour[s] = 2;
                    stack.pop();
                    continue;
                };
                let c = *c;
                *next += 1;
                match colour[c] {
                    0 => {
                        colour[c] = 1;
                        stack.push((c, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(x, _)| x == c).unwrap_or(0);
                        let mut names: Vec<&str> = stack[from..]
                            .iter()
                            .map(|&(x, _)| services[x].name.as_str())
                            .collect();
                        names.push(&services[c].name);
                        self.push(
                            format!("{call}.to"),
                            format!(
                                "the calls form a cycle: {}; expected calls that never lead back to their caller",
                                names.join(" → ")
                            ),
                        );
                        return;
                    }
                    _ => {}
                }
            }
        }
    }

    /// A chain (or an OCC workload) has none of the graph's fields.
    pub(super) fn not_a_graph(&mut self, s: &Scenario) {
        self.check(s.clients.calls.is_none(), "clients.calls", || {
            "`clients.calls` names the service the clients call in a `services` graph; a chain's clients call its first layer: remove it, or describe the system as `services`".into()
        });
        self.check(s.analysis.service.is_none(), "analysis.service", || {
            "`analysis.service` chooses among `services`; a chain's tables describe its `dependency`: remove it".into()
        });
    }
}
