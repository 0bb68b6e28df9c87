//! The services graph format end to end: parsing, every validation error
//! with its message and location, `--set`, variants and sweeps by service
//! and call names, presets on calls, resolved files, the memory estimate
//! and the translation into a topology.

use crate::model::topology::{EdgeId, ServiceId};
use crate::scenario::fixtures::{GRAPH, MINIMAL};
use crate::scenario::graph::Call;
use crate::scenario::types::{Jitter, Scenario};
use crate::scenario::units::Duration;
use crate::scenario::{
    ScenarioErrors, apply_set, expand_all, load_str, parse_set_arg, resolved_yaml, to_model,
};

fn graph() -> Scenario {
    load_str(GRAPH, "g.yaml").unwrap_or_else(|e| panic!("{e}"))
}

/// `GRAPH` with `from` replaced by `to` (which must be there).
fn edit(from: &str, to: &str) -> String {
    assert!(GRAPH.contains(from), "{from}");
    GRAPH.replacen(from, to, 1)
}

fn errors(src: &str) -> ScenarioErrors {
    match load_str(src, "g.yaml") {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => e,
    }
}

/// The one error of `src`, as printed.
fn one(src: &str) -> String {
    let e = errors(src);
    assert_eq!(e.len(), 1, "{e}");
    e.to_string()
}

fn set(s: &Scenario, arg: &str) -> Result<Scenario, ScenarioErrors> {
    let (path, value) = parse_set_arg(arg).map_err(ScenarioErrors::from)?;
    apply_set(s, &path, value)
}

#[test]
fn loads_services_calls_and_the_entry() {
    let s = graph();
    assert!(s.is_graph());
    let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["gateway", "orders", "inventory", "postgres"]);
    let entry = s.clients.calls.as_ref().unwrap();
    assert_eq!((entry.to.as_str(), entry.label()), ("gateway", "gateway"));
    assert_eq!(entry.retry.max_attempts, 2);
    // Every policy field of a layer, with a layer's defaults.
    assert_eq!(entry.retry.backoff().multiplier, Some(2.0));
    let inv = &s.services[0].calls[1];
    assert!(inv.parallel && inv.optional);
    assert_eq!(inv.to_layer("x"), {
        let mut l = Call::to_service("inventory").unwrap().to_layer("x");
        l.timeout = Some(Duration::from_millis(500));
        l
    });
    assert_eq!(s.services[2].calls[0].label(), "db");
    // Absent concurrency: unlimited; absent service time: no own work;
    // hold_worker defaults to true.
    let inventory = &s.services[2];
    assert_eq!(
        (inventory.concurrency, inventory.service_time.is_none()),
        (None, true)
    );
    assert!(inventory.hold_worker);
    // The entry as a bare name is the call with every default.
    let bare = load_str(
        &edit(
            "calls: { to: gateway, timeout: 3s, retry: { max_attempts: 2 } }",
            "calls: gateway",
        ),
        "g.yaml",
    )
    .unwrap();
    assert_eq!(
        bare.clients.calls,
        Some(Call::to_service("gateway").unwrap())
    );
}

#[test]
fn service_names_are_unique_safe_and_not_clients() {
    let e = one(&format!("{GRAPH}  - name: gateway\n"));
    assert_eq!(
        e,
        "g.yaml:29:11: services.4.name: service name `gateway` is used twice; expected unique service names"
    );
    let e = errors(&edit("  - name: postgres\n", "  - name: \"pg\\u0007\"\n")).to_string();
    assert!(
        e.contains("services.3.name: service name `pg\\u{7}` contains"),
        "{e}"
    );
    let e = errors(&edit("  - name: postgres\n", "  - name: clients\n")).to_string();
    assert!(
        e.contains("g.yaml:24:11: services.clients.name: service name `clients` names the clients in call names"),
        "{e}"
    );
}

#[test]
fn calls_to_unknown_services_suggest_a_name() {
    let e = one(&edit("      - to: orders\n", "      - to: ordres\n"));
    assert_eq!(
        e,
        "g.yaml:12:13: services.gateway.calls.ordres.to: no service is named `ordres`; did you mean `orders`? services: gateway, orders, inventory, postgres"
    );
    let e = one(&edit("calls: { to: gateway,", "calls: { to: gatewya,"));
    assert!(
        e.starts_with(
            "g.yaml:6:16: clients.calls.to: no service is named `gatewya`; did you mean `gateway`?"
        ),
        "{e}"
    );
}

#[test]
fn self_calls_and_cycles_are_refused() {
    let e = one(&edit(
        "      - { to: postgres, timeout: 200ms",
        "      - { to: orders, timeout: 200ms",
    ));
    assert_eq!(
        e,
        "g.yaml:20:15: services.orders.calls.orders.to: service `orders` calls itself; expected a call to another service"
    );
    let src = format!("{GRAPH}    calls:\n      - {{ to: gateway }}\n");
    let e = one(&src);
    assert_eq!(
        e,
        "g.yaml:30:15: services.postgres.calls.gateway.to: the calls form a cycle: gateway → orders → postgres → gateway; expected calls that never lead back to their caller"
    );
}

#[test]
fn call_names_are_unique_among_a_services_calls() {
    // Two calls to the same service need a name.
    let e = one(&edit(
        "      - { to: inventory, parallel: true,",
        "      - { to: orders, parallel: true,",
    ));
    assert_eq!(
        e,
        "g.yaml:15:15: services.gateway.calls.1.to: call name `orders` is used twice in the calls of `gateway`; expected unique call names: give a second call to the same service a `name`"
    );
    let ok = edit(
        "      - { to: inventory, parallel: true,",
        "      - { to: orders, name: orders-again, parallel: true,",
    );
    let s = load_str(&ok, "g.yaml").unwrap();
    assert_eq!(s.services[0].calls[1].label(), "orders-again");
    let e = one(&edit(
        "      - { to: inventory, parallel: true,",
        "      - { to: inventory, name: orders, parallel: true,",
    ));
    assert!(
        e.contains("services.gateway.calls.1.name: call name `orders` is used twice"),
        "{e}"
    );
}

#[test]
fn parallel_needs_a_call_before_it_and_not_on_the_entry() {
    let e = one(&edit(
        "      - to: orders\n",
        "      - to: orders\n        parallel: true\n",
    ));
    assert_eq!(
        e,
        "g.yaml:13:19: services.gateway.calls.orders.parallel: the first call of `gateway` cannot be parallel: `parallel: true` sends a call together with the call before it; remove it"
    );
    let e = errors(&edit(
        "calls: { to: gateway,",
        "calls: { to: gateway, parallel: true, optional: true,",
    ))
    .to_string();
    assert!(
        e.contains("clients.calls.parallel: `parallel` applies to a service's calls, not to the clients' entry")
            && e.contains("clients.calls.optional: `optional` applies"),
        "{e}"
    );
}

#[test]
fn a_calls_policy_is_validated_as_a_layers() {
    let e = one(&edit(
        "        retry: { max_attempts: 3 }\n",
        "        retry: { max_attempts: 3 }\n        fan_out: 2\n        quorum: 3\n",
    ));
    assert_eq!(
        e,
        "g.yaml:16:17: services.gateway.calls.orders.quorum: quorum is 3 with fan_out 2; expected 1 <= quorum <= fan_out"
    );
    let e = one(&edit(
        "retry: { max_attempts: 4 }",
        "retry: { max_attempts: 0 }",
    ));
    assert!(
        e.starts_with("g.yaml:23:")
            && e.contains(
                "services.inventory.calls.db.retry.max_attempts: max_attempts is 0; expected 1 to 1000"
            ),
        "{e}"
    );
    let e = one(&edit(
        "calls: { to: gateway,",
        "calls: { to: gateway, preset: grcp-a6,",
    ));
    assert!(
        e.contains("clients.calls.preset: unknown preset `grcp-a6`; did you mean `grpc-a6`?"),
        "{e}"
    );
    // A status probe asks the service called, which must write.
    let e = one(&edit(
        "name: db, timeout: 100ms,",
        "name: db, status_probe: true, timeout: 100ms,",
    ));
    assert!(
        e.contains("services.inventory.calls.db.status_probe: a status probe is for writes; expected services.postgres.side_effects: write or idempotent_write"),
        "{e}"
    );
}

#[test]
fn a_services_server_fields_are_validated_as_the_dependencys() {
    let e = one(&edit("start: 20s, end: 30s", "start: 20s, end: 2m"));
    assert_eq!(
        e,
        "g.yaml:28:40: services.postgres.incidents.0.end: incident ends at 2m, after the run (1m); expected end <= duration"
    );
    let e = one(&edit("    concurrency: 16\n", "    concurrency: 0\n"));
    assert!(
        e.contains(
            "services.postgres.concurrency: concurrency is 0; expected 1 to 1000000 workers"
        ),
        "{e}"
    );
    let e = errors(&edit(
        "service_time: { dist: exponential, mean: 4ms }",
        "service_time: { dist: exponential, median: 4ms }",
    ))
    .to_string();
    assert!(
        e.contains("services.postgres.service_time: exponential service time needs `mean`")
            && e.contains("services.postgres.service_time.median: `median` does not apply"),
        "{e}"
    );
}

#[test]
fn a_graph_and_a_chain_do_not_mix() {
    let deps = "dependency:\n  concurrency: 4\n  service_time: { dist: exponential, mean: 25ms }\n";
    let e = errors(&format!("{GRAPH}{deps}layers: [ {{ name: api }} ]\n")).to_string();
    assert!(
        e.contains("g.yaml:30:3: dependency: a scenario has either `services` (with `clients.calls`) or `dependency` (with `layers`), not both")
            && e.contains("layers: a scenario has either `services` (with `clients.calls`) or `layers`"),
        "{e}"
    );
    let e = one(&edit(
        "  calls: { to: gateway, timeout: 3s, retry: { max_attempts: 2 } }\n",
        "",
    ));
    assert_eq!(
        e,
        "g.yaml:3:1: clients.calls: a services graph needs the service the clients call; expected for example clients: { calls: gateway, arrival: ... }"
    );
    let chain = MINIMAL.replace("rate: 100/s }", "rate: 100/s }\n  calls: dependency");
    let e = match load_str(&chain, "m.yaml") {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.starts_with("m.yaml:5:10: clients.calls: `clients.calls` names the service the clients call in a `services` graph"),
        "{e}"
    );
    let e = load_str(
        &format!("{MINIMAL}analysis: {{ service: dependency }}\n"),
        "m.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("analysis.service: `analysis.service` chooses among `services`"),
        "{e}"
    );
}

#[test]
fn analysis_service_names_a_service() {
    let e = one(&format!("{GRAPH}analysis: {{ service: postgress }}\n"));
    assert_eq!(
        e,
        "g.yaml:29:22: analysis.service: no service is named `postgress`; did you mean `postgres`? services: gateway, orders, inventory, postgres"
    );
    let s = load_str(
        &format!("{GRAPH}analysis: {{ service: orders }}\n"),
        "g.yaml",
    )
    .unwrap();
    assert_eq!(s.focus_service(), Some(1));
}

#[test]
fn every_error_is_reported_with_its_location() {
    let src = edit("      - to: orders\n", "      - to: ordres\n")
        .replacen("    concurrency: 16\n", "    concurrency: 0\n", 1)
        .replacen(
            "retry: { max_attempts: 4 }",
            "retry: { max_attempts: 0 }",
            1,
        );
    let e = errors(&src);
    assert_eq!(e.len(), 3, "{e}");
    assert!(e.iter().all(|e| e.line.is_some()), "{e}");
}

#[test]
fn the_memory_estimate_counts_every_calls_gates() {
    let e = one(&edit(
        "        retry: { max_attempts: 3 }\n",
        "        retry: { max_attempts: 3 }\n        instances: 10\n        breaker: { kind: count, window_calls: 4294967295 }\n",
    ));
    assert!(
        e.contains("services.gateway.calls.orders.breaker.window_calls: one run would need about 6.4 GB of memory")
            && e.contains("10 breaker states (services.gateway.calls.orders.instances)"),
        "{e}"
    );
    let m = crate::scenario::memory::estimate(&graph());
    assert!(
        m.parts
            .iter()
            .any(|p| p.path == "services" && p.how == "4 services' servers and random streams"),
        "{m:?}"
    );
    let writes = edit(
        "    concurrency: 16\n",
        "    concurrency: 16\n    side_effects: write\n",
    );
    let m = crate::scenario::memory::estimate(&load_str(&writes, "g.yaml").unwrap());
    assert!(
        m.parts.iter().any(|p| p
            .how
            .contains("(services.postgres.side_effects: a commit count per request)")),
        "{m:?}"
    );
}

#[test]
fn set_addresses_services_and_calls_by_name() {
    let s = graph();
    let t = set(&s, "services.orders.concurrency=8").unwrap();
    assert_eq!(t.services[1].concurrency, Some(8));
    let t = set(&s, "services.gateway.calls.orders.retry.max_attempts=5").unwrap();
    assert_eq!(t.services[0].calls[0].retry.max_attempts, 5);
    let t = set(&s, "services.inventory.calls.db.timeout=50ms").unwrap();
    assert_eq!(
        t.services[2].calls[0].timeout,
        Some(Duration::from_millis(50))
    );
    let t = set(&s, "clients.calls.retry.max_attempts=4").unwrap();
    assert_eq!(t.clients.calls.as_ref().unwrap().retry.max_attempts, 4);
    let mut t = set(&s, "services.gateway.calls.orders.breaker.kind=count").unwrap();
    crate::scenario::defaults::fill_derived(&mut t);
    assert_eq!(
        t.services[0].calls[0]
            .breaker
            .as_ref()
            .unwrap()
            .window_calls,
        Some(100)
    );
    // By index too; errors name the item by its label.
    let e = set(&s, "services.1.concurrency=0").unwrap_err().to_string();
    assert_eq!(
        e,
        "<--set>: services.orders.concurrency: concurrency is 0; expected 1 to 1000000 workers"
    );
    let e = set(&s, "services.gateway.calls.ordrs.timeout=1s")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "<--set>: services.gateway.calls.ordrs.timeout: no item named `ordrs` in `services.gateway.calls`; did you mean `orders`? names there: orders, inventory"
    );
    let e = set(&s, "services.gateway.calls.orders.timout=1s")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown field `timout`") && e.contains("did you mean `timeout`?"),
        "{e}"
    );
    // The entry replaced by a bare name.
    let t = set(&s, "clients.calls=orders").unwrap();
    assert_eq!(t.clients.calls, Some(Call::to_service("orders").unwrap()));
}

#[test]
fn variants_and_sweeps_set_service_and_call_fields() {
    let src = format!(
        "{GRAPH}variants:\n  - {{ name: a, set: {{ services.gateway.calls.orders.retry.jitter: none }} }}\n  - {{ name: b, set: {{ services.postgres.concurrency: 32 }} }}\nsweep:\n  services.gateway.calls.orders.retry.max_attempts: [1, 4]\n"
    );
    let s = load_str(&src, "g.yaml").unwrap();
    let all = expand_all(&s).unwrap();
    let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "a max_attempts=1",
            "a max_attempts=4",
            "b max_attempts=1",
            "b max_attempts=4"
        ]
    );
    assert_eq!(
        all[1].scenario.services[0].calls[0].retry.jitter,
        Jitter::None
    );
    assert_eq!(all[1].scenario.services[0].calls[0].retry.max_attempts, 4);
    assert_eq!(all[2].scenario.services[3].concurrency, Some(32));
    // A variant's bad value is located at the variant.
    let bad = format!(
        "{GRAPH}variants:\n  - {{ name: a, set: {{ services.gateway.calls.orders.retry.max_attempts: 0 }} }}\n"
    );
    let e = one(&bad);
    assert!(
        e.starts_with("g.yaml:30:")
            && e.contains("variants.0.set.services.gateway.calls.orders.retry.max_attempts: in variant `a`: max_attempts is 0"),
        "{e}"
    );
}

#[test]
fn presets_merge_on_calls_as_on_layers() {
    let with = |src: &str| load_str(src, "g.yaml").unwrap_or_else(|e| panic!("{e}"));
    let s = with(&edit(
        "        retry: { max_attempts: 3 }\n",
        "        preset: grpc-a6\n        retry: { backoff: { base: 5ms } }\n",
    ));
    let layer = with(&format!(
        "{MINIMAL}layers:\n  - name: x\n    preset: grpc-a6\n    timeout: 1s\n    retry: {{ backoff: {{ base: 5ms }} }}\n"
    ))
    .layers[0]
        .clone();
    assert_eq!(s.services[0].calls[0].to_layer("x"), layer);
    assert_eq!(layer.retry.max_attempts, 4);
    // On the entry, and through --set: a preset set later replaces the
    // policy fields it defines.
    let s = with(&edit(
        "calls: { to: gateway,",
        "calls: { to: gateway, preset: envoy-default,",
    ));
    assert_eq!(s.clients.calls.as_ref().unwrap().retry.max_attempts, 2);
    assert_eq!(
        s.clients.calls.as_ref().unwrap().total_timeout,
        Some(Duration::from_secs(15))
    );
    let t = set(&graph(), "services.gateway.calls.orders.preset=grpc-a6").unwrap();
    assert_eq!(t.services[0].calls[0].retry.max_attempts, 4);
    assert_eq!(t.services[0].calls[0].retry.jitter, layer.retry.jitter);
    let t = set(&graph(), "clients.calls.preset=polly-v8-default").unwrap();
    assert_eq!(t.clients.calls.as_ref().unwrap().retry.max_attempts, 4);
    // A call replaced whole takes its preset's fields.
    let t = set(
        &graph(),
        "services.orders.calls.postgres={ to: postgres, preset: resilience4j-default }",
    )
    .unwrap();
    assert_eq!(t.services[1].calls[0].retry.max_attempts, 3);
}

#[test]
fn resolved_graphs_load_back_to_the_same_scenario() {
    let preset = edit(
        "        retry: { max_attempts: 3 }\n",
        "        preset: grpc-a6\n",
    );
    for src in [GRAPH, &preset] {
        let s = load_str(src, "g.yaml").unwrap();
        let text = resolved_yaml(&s);
        for shown in [
            "hold_worker: true",
            "name: gateway",
            "service: postgres",
            "dedupe_cost: 1ms",
        ] {
            assert!(text.contains(shown), "{shown} missing in\n{text}");
        }
        let back = load_str(&text, "r.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut derived = s.clone();
        crate::scenario::defaults::fill_derived(&mut derived);
        assert_eq!(back, derived, "{text}");
        assert_eq!(resolved_yaml(&back), text);
        // And runs the same model.
        assert_eq!(
            format!("{:?}", to_model(&back).topology),
            format!("{:?}", to_model(&s).topology)
        );
    }
}

#[test]
fn the_build_numbers_services_and_edges_in_file_order() {
    let m = to_model(&graph());
    let t = &m.topology;
    let names: Vec<&str> = t.services().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["gateway", "orders", "inventory", "postgres"]);
    assert_eq!(
        t.edge_names(),
        [
            "clients.gateway",
            "gateway.orders",
            "gateway.inventory",
            "orders.postgres",
            "inventory.db"
        ]
    );
    let callers: Vec<Option<ServiceId>> = t.edges().iter().map(|e| e.caller).collect();
    assert_eq!(
        callers,
        [
            None,
            Some(ServiceId(0)),
            Some(ServiceId(0)),
            Some(ServiceId(1)),
            Some(ServiceId(2))
        ]
    );
    let callees: Vec<u16> = t.edges().iter().map(|e| e.callee.0).collect();
    assert_eq!(callees, [0, 1, 2, 3, 3]);
    assert_eq!(t.service(ServiceId(0)).calls, [EdgeId(1), EdgeId(2)]);
    assert_eq!(t.stages(ServiceId(0)), &[vec![EdgeId(1), EdgeId(2)]]);
    assert!(t.edge(EdgeId(2)).parallel && t.edge(EdgeId(2)).optional);
    assert_eq!(t.edge(EdgeId(0)).policy.timeout, Some(3_000_000_000));
    assert_eq!(t.edge(EdgeId(4)).policy.retry.max_attempts, 4);
    // inventory: unlimited workers, no work of its own.
    let inv = t.service(ServiceId(2));
    assert_eq!((inv.concurrency, inv.service.is_none()), (None, true));
    // The focus: the first service that calls nothing, else the one named
    // `dependency`, else `analysis.service`.
    assert_eq!(t.focus(), ServiceId(3));
    assert_eq!(m.run_context().concurrency, 16);
    let named = GRAPH.replace("postgres", "dependency");
    assert_eq!(
        to_model(&load_str(&named, "g.yaml").unwrap())
            .topology
            .focus(),
        ServiceId(3)
    );
    let chosen = format!("{GRAPH}analysis: {{ service: orders }}\n");
    assert_eq!(
        to_model(&load_str(&chosen, "g.yaml").unwrap())
            .topology
            .focus(),
        ServiceId(1)
    );
    let first = edit(
        "  - name: gateway\n",
        "  - name: cache\n    concurrency: 4\n    service_time: { dist: constant, value: 1ms }\n  - name: gateway\n",
    );
    assert_eq!(
        to_model(&load_str(&first, "g.yaml").unwrap())
            .topology
            .focus(),
        ServiceId(0)
    );
    // hold_worker and the recovery trigger from the services' incidents.
    let released = edit(
        "    concurrency: 100\n",
        "    concurrency: 100\n    hold_worker: false\n",
    );
    assert!(
        !to_model(&load_str(&released, "g.yaml").unwrap())
            .topology
            .service(ServiceId(0))
            .hold_worker
    );
    assert_eq!(m.recovery.trigger_start, Some(20_000_000_000));
    assert_eq!(m.recovery.trigger_end, Some(30_000_000_000));
}

#[test]
fn a_chain_keeps_its_topology() {
    let m = to_model(&load_str(crate::scenario::fixtures::FULL, "f.yaml").unwrap());
    assert_eq!(m.topology.edge_names(), ["api", "storage"]);
    assert_eq!(m.topology.service(m.topology.focus()).name, "dependency");
}

#[test]
fn replicas_balancers_and_their_calls_translate_and_validate() {
    use crate::model::balancer::Balancer;
    let src = include_str!("../../scenarios/one-bad-replica.yaml");
    let s = load_str(src, "r.yaml").unwrap_or_else(|e| panic!("{e}"));
    let m = to_model(&s);
    let t = &m.topology;
    let backend = t.service_id("backend").unwrap();
    assert_eq!(t.replica_count(backend), 4);
    let svc = t.service(backend);
    assert_eq!(svc.balancer, Balancer::RoundRobin);
    assert_eq!(svc.capacity_per_sec(), Some(1600.0));
    // `replicas: [3]`: one incident, on replica 3 only.
    assert_eq!(svc.incidents.len(), 1);
    assert_eq!(svc.incidents[0].replica, Some(3));
    // The variants set the balancer, retry_other_replica and outlier
    // detection (Envoy's defaults).
    let v = expand_all(&s).unwrap();
    let last = to_model(&v.last().unwrap().scenario);
    let e = &last.topology.edges()[1];
    assert_eq!(e.policy.name, "api.backend");
    assert_eq!(e.policy.outlier, Some(Default::default()));
    let svc = last.topology.service(backend);
    assert_eq!(svc.balancer, Balancer::LeastRequests);
    let retry_other = to_model(&v[4].scenario);
    assert!(retry_other.topology.edges()[1].policy.retry_other_replica);

    // A replicated caller keeps its policy state per replica.
    let src3 = src.replace("  - name: api\n", "  - name: api\n    replicas: 3\n");
    let m = to_model(&load_str(&src3, "r.yaml").unwrap_or_else(|e| panic!("{e}")));
    assert_eq!(m.topology.edges()[1].policy.instances, 3);

    // Errors name the field.
    for (from, to, want) in [
        (
            "replicas: 4",
            "replicas: 0",
            "services.backend.replicas: replicas is 0; expected 1 to 1000",
        ),
        (
            "replicas: [3]",
            "replicas: [3, 3]",
            "services.backend.incidents.0.replicas.1: replica 3 is listed twice",
        ),
        (
            "replicas: [3]",
            "replicas: 5",
            "services.backend.incidents.0.replicas: the incident hits 5 replicas of 4",
        ),
        (
            "replicas: [3]",
            "replicas: []",
            "services.backend.incidents.0.replicas: an empty list of replicas",
        ),
        (
            "timeout: 1s\n",
            "timeout: 1s\n        outlier_detection: { max_ejection_percent: 150 }\n",
            "services.api.calls.backend.outlier_detection.max_ejection_percent: max_ejection_percent is 150",
        ),
        (
            "timeout: 1s\n",
            "timeout: 1s\n        outlier_detection: { base_ejection: 0s }\n",
            "services.api.calls.backend.outlier_detection.base_ejection",
        ),
    ] {
        assert!(src.contains(from), "{from}");
        let e = errors(&src.replacen(from, to, 1)).to_string();
        assert!(e.contains(want), "{e}");
    }
    // Two error bursts may overlap on different replicas, not on one.
    let two = src.replace(
        "replicas: [3] }",
        "replicas: [3] }\n      - { kind: errors, rate: 0.5, start: 30s, end: 40s, replicas: [1, 2] }",
    );
    load_str(&two, "r.yaml").unwrap_or_else(|e| panic!("{e}"));
    let clash = src.replace(
        "replicas: [3] }",
        "replicas: [3] }\n      - { kind: errors, rate: 0.5, start: 30s, end: 40s, replicas: 4 }",
    );
    let e = errors(&clash).to_string();
    assert!(e.contains("on a replica they both hit"), "{e}");
}
