//! Import and export against the fixture files of tests/fixtures/configs/
//! (shaped like real repositories' files: comments, unrelated keys,
//! inheritance): the values each selector gives, the identity of import
//! then export, exports that touch only the tuned values, and the errors
//! for settings stormsim does not model, with their positions.

use serde_json::{Value, json};

use super::write::{Wanted, export_text};
use super::*;

const GRPC: &str = include_str!("../../tests/fixtures/configs/service-config.json");
const ENVOY: &str = include_str!("../../tests/fixtures/configs/envoy.yaml");
const R4J: &str = include_str!("../../tests/fixtures/configs/application.yml");
const ISTIO: &str = include_str!("../../tests/fixtures/configs/virtualservice.yaml");
const LINKERD: &str = include_str!("../../tests/fixtures/configs/serviceprofile.yaml");
const MS: &str = include_str!("../../tests/fixtures/configs/appsettings.json");
const AWS: &str = include_str!("../../tests/fixtures/configs/aws-config");

fn sel(format: Format, value: &str) -> Selector {
    let mut s = Selector::default();
    match format {
        Format::GrpcServiceConfig => s.method = Some(value.into()),
        Format::EnvoyRoute | Format::LinkerdServiceprofile => s.route = Some(value.into()),
        // `HOST` or `HOST#ROUTE`.
        Format::IstioVirtualservice => match value.split_once('#') {
            Some((h, r)) => {
                s.host = Some(h.into());
                s.route = Some(r.into());
            }
            None => s.host = Some(value.into()),
        },
        Format::Resilience4j => s.instance = Some(value.into()),
        Format::MsResilience => s.section = Some(value.into()),
        Format::AwsConfig => s.profile = Some(value.into()),
    }
    s
}

fn text(format: Format) -> &'static str {
    match format {
        Format::GrpcServiceConfig => GRPC,
        Format::EnvoyRoute => ENVOY,
        Format::IstioVirtualservice => ISTIO,
        Format::LinkerdServiceprofile => LINKERD,
        Format::Resilience4j => R4J,
        Format::MsResilience => MS,
        Format::AwsConfig => AWS,
    }
}

fn import(format: Format, value: &str) -> Policy {
    import_text(text(format), "f", format, &sel(format, value)).unwrap_or_else(|e| {
        panic!(
            "{value}: {}",
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

/// The policy's leaves as `path=value` lines, sorted.
fn shown(p: &Policy) -> Vec<String> {
    leaves(&p.fragment)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

fn has(p: &Policy, want: &[&str]) {
    let got = shown(p);
    for w in want {
        assert!(
            got.iter().any(|g| g == w),
            "missing {w} in\n{}",
            got.join("\n")
        );
    }
}

fn lacks(p: &Policy, paths: &[&str]) {
    let l = leaves(&p.fragment);
    for path in paths {
        assert!(
            !l.keys()
                .any(|k| k == path || k.starts_with(&format!("{path}."))),
            "{path} in {:?}",
            shown(p)
        );
    }
}

#[test]
fn grpc_the_most_specific_method_config_wins() {
    let p = import(Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder");
    assert_eq!(p.selected, "methodConfig[1] (line 15)");
    has(
        &p,
        &[
            "total_timeout=\"2500ms\"",
            "retry.max_attempts=4.0",
            "retry.backoff.kind=\"exponential\"",
            "retry.backoff.base=\"100ms\"",
            "retry.backoff.cap=\"1s\"",
            "retry.backoff.multiplier=2.0",
            "retry.jitter.proportional=0.2",
            "retry.retry_on=[\"429\",\"503\",\"connection\"]",
            "retry.retry_after=\"grpc_pushback\"",
            "retry.budget.kind=\"token_bucket\"",
            "retry.budget.max_tokens=10.0",
            "retry.budget.token_ratio=0.1",
            "retry.budget.scope=\"instance\"",
        ],
    );
    lacks(&p, &["timeout", "hedging"]);
    let o = &p.origins["retry.max_attempts"];
    assert_eq!(
        (o.key.as_str(), o.pos),
        ("methodConfig[1].retryPolicy.maxAttempts", Some((23, 24)))
    );
    // The service's default for a method it does not name.
    let p = import(Format::GrpcServiceConfig, "orders.v1.Orders/ListOrders");
    assert_eq!(p.selected, "methodConfig[0] (line 4)");
    has(
        &p,
        &[
            "total_timeout=\"5s\"",
            "retry.max_attempts=3.0",
            "retry.backoff.base=\"200ms\"",
            "retry.retry_on=[\"503\",\"connection\"]",
        ],
    );
    // Another service: the empty name, which has no retries.
    let p = import(Format::GrpcServiceConfig, "billing.v1.Billing/Charge");
    assert_eq!(p.selected, "methodConfig[3] (line 39)");
    has(&p, &["total_timeout=\"10s\"", "retry.max_attempts=1.0"]);
    // The load balancing config is only a warning.
    assert!(
        p.warnings
            .iter()
            .any(|w| w.key == "loadBalancingConfig" && w.pos == Some((2, 3))),
        "{:?}",
        p.warnings
    );
}

#[test]
fn grpc_hedging() {
    let p = import(Format::GrpcServiceConfig, "orders.v1.Orders/GetOrder");
    has(
        &p,
        &[
            "total_timeout=\"800ms\"",
            "hedging.max_attempts=3.0",
            "hedging.delay=\"50ms\"",
            "hedging.non_fatal=[\"500\",\"503\",\"connection\"]",
            "retry.max_attempts=1.0",
            "retry.budget.kind=\"token_bucket\"",
        ],
    );
}

#[test]
fn grpc_unmodelled_settings_are_named_with_their_position() {
    let src = GRPC
        .replace("\"waitForReady\": false", "\"waitForReady\": true")
        .replace("\"backoffMultiplier\": 2,\n        \"retryableStatusCodes\": [\"UNAVAILABLE\", \"RESOURCE", "\"backoffMultiplier\": 2,\n        \"jitter\": 0.5,\n        \"retryableStatusCodes\": [\"UNAVAILABLE\", \"RESOURCE");
    let e = import_text(
        &src,
        "svc.json",
        Format::GrpcServiceConfig,
        &sel(Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder"),
    )
    .unwrap_err();
    let lines: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].starts_with("svc.json:21:23: methodConfig[1].waitForReady: not modelled: an RPC waits for a connection"), "{}", lines[0]);
    assert!(
        lines[1].starts_with("svc.json:27:9: methodConfig[1].retryPolicy.jitter: not modelled"),
        "{}",
        lines[1]
    );
    // Listed in `ignore`, the same settings are warnings.
    let mut s = sel(Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder");
    s.ignore = vec![
        "waitForReady".into(),
        "methodConfig[1].retryPolicy.jitter".into(),
    ];
    let p = import_text(&src, "svc.json", Format::GrpcServiceConfig, &s).unwrap();
    assert_eq!(
        p.warnings
            .iter()
            .filter(|w| w.message.contains("ignored as `ignore` asks"))
            .count(),
        2
    );
}

#[test]
fn grpc_caps_attempts_at_five_and_checks_required_fields() {
    let src = GRPC.replace("\"maxAttempts\": 4", "\"maxAttempts\": 7");
    let p = import_text(
        &src,
        "f",
        Format::GrpcServiceConfig,
        &sel(Format::GrpcServiceConfig, "orders.v1.Orders/CancelOrder"),
    )
    .unwrap();
    has(&p, &["retry.max_attempts=5.0"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("cap maxAttempts at 5"))
    );
    let src = GRPC.replace("        \"maxBackoff\": \"1s\",\n", "");
    let e = import_text(
        &src,
        "f",
        Format::GrpcServiceConfig,
        &sel(Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder"),
    )
    .unwrap_err();
    assert!(
        e[0].to_string().contains("retryPolicy has no maxBackoff"),
        "{}",
        e[0]
    );
}

/// One mistake, one message: a refused `retryThrottling.maxTokens` is not
/// also reported as missing.
#[test]
fn grpc_a_bad_max_tokens_is_one_error() {
    for bad in ["0", "1001", "\"ten\""] {
        let src = GRPC.replace("\"maxTokens\": 10", &format!("\"maxTokens\": {bad}"));
        let e = import_text(
            &src,
            "f",
            Format::GrpcServiceConfig,
            &sel(Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder"),
        )
        .unwrap_err();
        let msgs: Vec<String> = e.iter().map(ToString::to_string).collect();
        assert_eq!(msgs.len(), 1, "{bad}: {msgs:?}");
        assert!(msgs[0].contains("retryThrottling.maxTokens"), "{msgs:?}");
    }
    // A field that is really missing is still named, and only it.
    let src = GRPC.replace("\"maxTokens\": 10,", "");
    let e = import_text(
        &src,
        "f",
        Format::GrpcServiceConfig,
        &sel(Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder"),
    )
    .unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].to_string()
            .contains("retryThrottling needs maxTokens (gRFC A6)"),
        "{}",
        e[0]
    );
}

#[test]
fn envoy_route_vhost_and_cluster() {
    let p = import(Format::EnvoyRoute, "create-order");
    has(
        &p,
        &[
            "total_timeout=\"3s\"",
            "timeout=\"750ms\"",
            "retry.max_attempts=4.0",
            "retry.retry_on=[\"502\",\"503\",\"504\",\"connection\",\"timeout\"]",
            "retry.backoff.base=\"50ms\"",
            "retry.backoff.cap=\"500ms\"",
            "retry.jitter=\"full\"",
            "retry.retry_after=\"ignore\"",
            "retry.budget.kind=\"envoy\"",
            "retry.budget.budget_percent=25.0",
            "retry.budget.min_retry_concurrency=5.0",
            "bulkhead.max_concurrent=2000.0",
            "bulkhead.when_full=\"reject\"",
        ],
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.key.ends_with("retry_host_predicate")),
        "{:?}",
        p.warnings
    );
    // get-order: the virtual host's policy (5xx, 2 retries), default backoff, hedging.
    let p = import(Format::EnvoyRoute, "get-order");
    has(
        &p,
        &[
            "total_timeout=\"15s\"",
            "retry.max_attempts=3.0",
            "retry.retry_on=[\"5xx\",\"connection\",\"timeout\"]",
            "retry.backoff.base=\"25ms\"",
            "retry.backoff.cap=\"250ms\"",
        ],
    );
    // hedge_on_per_try_timeout without a per_try_timeout never hedges.
    lacks(&p, &["hedge_on_timeout", "timeout"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("no per_try_timeout")),
        "{:?}",
        p.warnings
    );
    assert_eq!(p.origins["retry.max_attempts"].pos, Some((33, 38)));
    // A cluster the file does not define: the warning is at the route's
    // `cluster` key.
    let src = ENVOY.replacen("cluster: orders\n", "cluster: nowhere\n", 1);
    let p = import_text(
        &src,
        "f",
        Format::EnvoyRoute,
        &sel(Format::EnvoyRoute, "create-order"),
    )
    .unwrap();
    let w = p
        .warnings
        .iter()
        .find(|w| w.message.contains("cluster `nowhere` is not in this file"))
        .expect("a missing-cluster warning");
    assert_eq!(w.pos, Some((38, 29)), "{w:?}");
    assert!(w.key.ends_with("routes[0].route.cluster"), "{}", w.key);
    // By match prefix.
    let p = import(Format::EnvoyRoute, "/");
    has(&p, &["total_timeout=\"10s\"", "retry.max_attempts=3.0"]);
}

#[test]
fn envoy_unmodelled_settings_are_named_with_their_position() {
    let src = ENVOY
        .replace(
            "            max_requests: 2000\n",
            "            max_requests: 2000\n            max_pending_requests: 100\n",
        )
        .replace(
            "      lb_policy: LEAST_REQUEST\n",
            "      lb_policy: LEAST_REQUEST\n      outlier_detection: { consecutive_5xx: 5 }\n",
        );
    let e = import_text(
        &src,
        "envoy.yaml",
        Format::EnvoyRoute,
        &sel(Format::EnvoyRoute, "create-order"),
    )
    .unwrap_err();
    let lines: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].starts_with(
            "envoy.yaml:63:7: clusters[0].outlier_detection: not modelled: outlier ejection"
        ),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("envoy.yaml:73:13: clusters[0].circuit_breakers.thresholds[0].max_pending_requests: not modelled"), "{}", lines[1]);
}

#[test]
fn resilience4j_base_configs_and_other_modules() {
    let p = import(Format::Resilience4j, "paymentService");
    has(
        &p,
        &[
            "retry.max_attempts=4.0",
            "retry.backoff.kind=\"exponential\"",
            "retry.backoff.base=\"250ms\"",
            "retry.backoff.multiplier=2.0",
            "retry.backoff.cap=\"2s\"",
            "retry.backoff.truncate_ms=true",
            "retry.jitter.proportional=0.5",
            // configs.payments has no baseConfig: it is built on configs.default,
            // whose retryExceptions it keeps.
            "retry.retry_on=[\"5xx\",\"connection\",\"timeout\"]",
            "retry.retry_after=\"ignore\"",
            "breaker.kind=\"count\"",
            "breaker.failure_ratio=0.4",
            "breaker.window_calls=50.0",
            "breaker.min_calls=20.0",
            "breaker.open_for=\"10s\"",
            "breaker.probes=5.0",
            "timeout=\"2s\"",
        ],
    );
    lacks(&p, &["bulkhead"]);
    assert_eq!(
        p.origins["retry.max_attempts"].key,
        "resilience4j.retry.configs.payments.max-attempts"
    );
    // inventoryService: the default config's exceptions, its own attempts.
    let p = import(Format::Resilience4j, "inventoryService");
    has(
        &p,
        &[
            "retry.max_attempts=2.0",
            "retry.backoff.kind=\"constant\"",
            "retry.backoff.base=\"500ms\"",
            "retry.jitter=\"none\"",
            "retry.retry_on=[\"5xx\",\"connection\",\"timeout\"]",
        ],
    );
    lacks(&p, &["breaker", "timeout"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("BusinessException")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn resilience4j_unmodelled_settings_are_named_with_their_position() {
    let src = R4J
        .replace(
            "      failureRateThreshold: 40\n",
            "      failureRateThreshold: 40\n      slowCallRateThreshold: 80\n",
        )
        .replace(
            "        - java.io.IOException\n",
            "        - java.io.IOException\n        - com.example.RetryableThing\n",
        );
    let e = import_text(
        &src,
        "application.yml",
        Format::Resilience4j,
        &sel(Format::Resilience4j, "inventoryService"),
    )
    .unwrap_err();
    let lines: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].starts_with("application.yml:24:11: resilience4j.retry.configs.default.retryExceptions: not modelled: `com.example.RetryableThing`"), "{}", lines[0]);
    let e = import_text(
        &src.replace("        - com.example.RetryableThing\n", ""),
        "application.yml",
        Format::Resilience4j,
        &sel(Format::Resilience4j, "paymentService"),
    )
    .unwrap_err();
    let lines: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].starts_with("application.yml:56:30: resilience4j.circuitbreaker.instances.paymentService.slowCallRateThreshold: not modelled"), "{}", lines[0]);
}

/// Every selector of every fixture: importing, then exporting exactly what
/// was imported, leaves the file byte for byte as it was.
#[test]
fn import_then_export_is_the_identity() {
    let cases = [
        (Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder"),
        (Format::GrpcServiceConfig, "orders.v1.Orders/ListOrders"),
        (Format::GrpcServiceConfig, "orders.v1.Orders/GetOrder"),
        (Format::GrpcServiceConfig, "x.Y/Z"),
        (Format::EnvoyRoute, "create-order"),
        (Format::EnvoyRoute, "get-order"),
        (Format::EnvoyRoute, "/"),
        (Format::Resilience4j, "paymentService"),
        (Format::Resilience4j, "inventoryService"),
        (
            Format::IstioVirtualservice,
            "orders.shop.svc.cluster.local#create-order",
        ),
        (Format::IstioVirtualservice, "orders#get-order"),
        (Format::IstioVirtualservice, "orders#reports"),
        (Format::IstioVirtualservice, "inventory"),
        (Format::LinkerdServiceprofile, "GET /orders/{id}"),
        (Format::LinkerdServiceprofile, "POST /orders"),
        (Format::LinkerdServiceprofile, "GET /orders"),
        (Format::MsResilience, "HttpClients:Inventory:Resilience"),
        (Format::MsResilience, "httpclients:payments:resilience"),
        (Format::MsResilience, "Resilience:Standard"),
        (Format::AwsConfig, "orders-prod"),
        (Format::AwsConfig, "batch"),
        (Format::AwsConfig, "legacy-tools"),
        (Format::AwsConfig, "dev"),
        (Format::AwsConfig, "default"),
    ];
    for (format, value) in cases {
        let p = import(format, value);
        let mut layer = p.fragment.clone();
        layer.insert("name".into(), json!("x"));
        let layer: crate::scenario::types::Layer =
            serde_json::from_value(Value::Object(layer)).unwrap();
        let Value::Object(m) = serde_json::to_value(&layer).unwrap() else {
            panic!()
        };
        let out = export_text(
            text(format),
            "f",
            format,
            &sel(format, value),
            &Wanted::Layer(m),
        )
        .unwrap_or_else(|e| panic!("{value}: {e:?}"));
        assert_eq!(out.after, text(format), "{value}");
    }
}

fn export(format: Format, value: &str, sets: &[(&str, Value)]) -> Result<String, Vec<String>> {
    let sets = sets
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect();
    export_text(
        text(format),
        "f",
        format,
        &sel(format, value),
        &Wanted::Sets(sets),
    )
    .map(|e| e.after)
    .map_err(|e| e.iter().map(ToString::to_string).collect())
}

/// The lines that differ between two texts (old, new).
fn changed_lines(a: &str, b: &str) -> Vec<(String, String)> {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(la.len(), lb.len(), "lines added or removed:\n{b}");
    la.iter()
        .zip(&lb)
        .filter(|(x, y)| x != y)
        .map(|(x, y)| (x.to_string(), y.to_string()))
        .collect()
}

#[test]
fn grpc_export_changes_only_the_tuned_values() {
    let out = export(
        Format::GrpcServiceConfig,
        "orders.v1.Orders/CreateOrder",
        &[
            ("retry.max_attempts", json!(3)),
            ("retry.backoff.base", json!("250ms")),
            ("retry.backoff.cap", json!("1s")), // unchanged: not touched
            ("total_timeout", json!("4s")),
            ("retry.retry_on", json!(["connection", 503])),
            ("retry.budget.token_ratio", json!(0.2)),
        ],
    )
    .unwrap();
    assert_eq!(
        changed_lines(GRPC, &out),
        [
            (
                "      \"timeout\": \"2.5s\",".into(),
                "      \"timeout\": \"4s\",".into()
            ),
            (
                "        \"maxAttempts\": 4,".into(),
                "        \"maxAttempts\": 3,".into()
            ),
            (
                "        \"initialBackoff\": \"0.1s\",".into(),
                "        \"initialBackoff\": \"0.25s\",".into()
            ),
            (
                "        \"retryableStatusCodes\": [\"UNAVAILABLE\", \"RESOURCE_EXHAUSTED\"]"
                    .into(),
                "        \"retryableStatusCodes\": [\"UNAVAILABLE\"]".into()
            ),
            (
                "    \"tokenRatio\": 0.1".into(),
                "    \"tokenRatio\": 0.2".into()
            ),
        ]
    );
    let back = import_text(
        &out,
        "f",
        Format::GrpcServiceConfig,
        &sel(Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder"),
    )
    .unwrap();
    has(
        &back,
        &[
            "retry.max_attempts=3.0",
            "retry.backoff.base=\"250ms\"",
            "total_timeout=\"4s\"",
            "retry.budget.token_ratio=0.2",
        ],
    );
    // A per-attempt timeout is added where gRPC has it.
    let out = export(
        Format::GrpcServiceConfig,
        "orders.v1.Orders/CreateOrder",
        &[("timeout", json!("500ms"))],
    )
    .unwrap();
    assert!(out.contains("\"retryableStatusCodes\": [\"UNAVAILABLE\", \"RESOURCE_EXHAUSTED\"],\n        \"perAttemptRecvTimeout\": \"0.5s\"\n"), "{out}");
}

#[test]
fn grpc_export_refuses_what_grpc_cannot_say() {
    let e = export(
        Format::GrpcServiceConfig,
        "orders.v1.Orders/CreateOrder",
        &[("retry.jitter", json!("full"))],
    )
    .unwrap_err();
    assert!(
        e[0].contains("retry.jitter: cannot be written to this file: fixed by gRPC"),
        "{e:?}"
    );
    let e = export(
        Format::GrpcServiceConfig,
        "orders.v1.Orders/CreateOrder",
        &[("retry.max_attempts", json!(6))],
    )
    .unwrap_err();
    assert!(e[0].contains("takes 2 to 5"), "{e:?}");
    let e = export(
        Format::GrpcServiceConfig,
        "orders.v1.Orders/CreateOrder",
        &[("retry.retry_on", json!(["connection"]))],
    )
    .unwrap_err();
    assert!(e[0].contains("without 503: both are UNAVAILABLE"), "{e:?}");
    let e = export(
        Format::GrpcServiceConfig,
        "orders.v1.Orders/CreateOrder",
        &[("instances", json!(4))],
    )
    .unwrap_err();
    assert!(e[0].contains("holds no `instances`"), "{e:?}");
}

#[test]
fn envoy_export_changes_only_the_tuned_values() {
    let out = export(
        Format::EnvoyRoute,
        "create-order",
        &[
            ("retry.max_attempts", json!(3)),
            ("retry.backoff.base", json!("100ms")),
            ("retry.budget.budget_percent", json!(10)),
        ],
    )
    .unwrap();
    assert_eq!(
        changed_lines(ENVOY, &out),
        [
            (
                "                              num_retries: 3".into(),
                "                              num_retries: 2".into()
            ),
            (
                "                                base_interval: 0.05s".into(),
                "                                base_interval: 0.1s".into()
            ),
            (
                "              budget_percent: { value: 25.0 }".into(),
                "              budget_percent: { value: 10.0 }".into()
            ),
        ]
    );
    // 429 takes a status list, added after the policy's last key.
    let out = export(
        Format::EnvoyRoute,
        "create-order",
        &[(
            "retry.retry_on",
            json!(["timeout", "connection", 502, 503, 504, 429]),
        )],
    )
    .unwrap();
    assert!(out.contains("                              retry_on: gateway-error,connect-failure,reset,retriable-status-codes\n"), "{out}");
    assert!(out.contains("                              host_selection_retry_max_attempts: 3\n                              retriable_status_codes: [429]\n"), "{out}");
    let back = import_text(
        &out,
        "f",
        Format::EnvoyRoute,
        &sel(Format::EnvoyRoute, "create-order"),
    )
    .unwrap();
    has(
        &back,
        &["retry.retry_on=[\"429\",\"502\",\"503\",\"504\",\"connection\",\"timeout\"]"],
    );
    // A route on the virtual host's policy gets a complete copy of it,
    // with the change: the virtual host's is left to its other routes
    // (a route's retry_policy replaces the virtual host's whole).
    let e = export_text(
        ENVOY,
        "f",
        Format::EnvoyRoute,
        &sel(Format::EnvoyRoute, "get-order"),
        &Wanted::Sets(vec![("retry.max_attempts".into(), json!(2))]),
    )
    .unwrap();
    let added = "                            retry_policy:\n                              retry_on: 5xx\n                              num_retries: 1\n";
    assert!(
        e.after
            .contains(&format!("hedge_on_per_try_timeout: true\n{added}")),
        "{}",
        e.after
    );
    assert_eq!(e.after.replacen(added, "", 1), ENVOY);
    assert!(e.notes[0].contains("virtual host"), "{:?}", e.notes);
    let get = |text: &str, route: &str| {
        let p = import_text(
            text,
            "f",
            Format::EnvoyRoute,
            &sel(Format::EnvoyRoute, route),
        )
        .unwrap();
        serde_json::to_string(&p.fragment).unwrap()
    };
    let back = import_text(
        &e.after,
        "f",
        Format::EnvoyRoute,
        &sel(Format::EnvoyRoute, "get-order"),
    )
    .unwrap();
    has(
        &back,
        &[
            "retry.max_attempts=2.0",
            "retry.retry_on=[\"5xx\",\"connection\",\"timeout\"]",
        ],
    );
    assert_eq!(get(&e.after, "/"), get(ENVOY, "/"));
    assert_eq!(get(&e.after, "create-order"), get(ENVOY, "create-order"));
}

#[test]
fn resilience4j_export_writes_into_the_instance() {
    let out = export(
        Format::Resilience4j,
        "paymentService",
        &[
            ("retry.max_attempts", json!(5)),
            ("retry.backoff.base", json!("300ms")),
            ("breaker.failure_ratio", json!(0.3)),
            ("timeout", json!("1500ms")),
        ],
    )
    .unwrap();
    let changed = changed_lines(R4J, &out.replace("      maxAttempts: 5\n", ""));
    assert_eq!(changed.len(), 3, "{changed:?}\n{out}");
    // maxAttempts is the base config's: the instance gets its own.
    assert!(
        out.contains("      waitDuration: 300ms\n      maxAttempts: 5\n"),
        "{out}"
    );
    assert!(out.contains("      failureRateThreshold: 30\n"), "{out}");
    assert!(out.contains("      timeoutDuration: 1500ms\n"), "{out}");
    let back = import_text(
        &out,
        "f",
        Format::Resilience4j,
        &sel(Format::Resilience4j, "paymentService"),
    )
    .unwrap();
    has(
        &back,
        &[
            "retry.max_attempts=5.0",
            "retry.backoff.base=\"300ms\"",
            "breaker.failure_ratio=0.3",
            "timeout=\"1500ms\"",
        ],
    );
}

/// The layer `stormsim import` prints is a layer a scenario accepts.
#[test]
fn the_printed_layer_validates_in_a_scenario() {
    for (format, value) in [
        (Format::GrpcServiceConfig, "orders.v1.Orders/CreateOrder"),
        (Format::GrpcServiceConfig, "orders.v1.Orders/GetOrder"),
        (Format::EnvoyRoute, "create-order"),
        (Format::EnvoyRoute, "get-order"),
        (Format::Resilience4j, "paymentService"),
        (Format::Resilience4j, "inventoryService"),
        (Format::IstioVirtualservice, "orders#create-order"),
        (Format::IstioVirtualservice, "orders#get-order"),
        (Format::IstioVirtualservice, "orders#reports"),
        (Format::IstioVirtualservice, "inventory"),
        (Format::LinkerdServiceprofile, "GET /orders/{id}"),
        (Format::LinkerdServiceprofile, "POST /orders"),
        (Format::MsResilience, "HttpClients:Inventory:Resilience"),
        (Format::MsResilience, "HttpClients:Payments:Resilience"),
        (Format::AwsConfig, "orders-prod"),
        (Format::AwsConfig, "batch"),
        (Format::AwsConfig, "legacy-tools"),
    ] {
        let p = import(format, value);
        let layer = layer_yaml::layer_yaml(&p, "imported", &["header".into()]);
        let indented: String = layer.lines().map(|l| format!("  {l}\n")).collect();
        let scenario = format!(
            "name: pasted\nduration: 1m\nclients:\n  arrival: {{ kind: poisson, rate: 100/s }}\nlayers:\n{indented}dependency:\n  concurrency: 4\n  service_time: {{ dist: constant, value: 10ms }}\n"
        );
        let s = crate::scenario::load_str(&scenario, "pasted.yaml")
            .unwrap_or_else(|e| panic!("{value}:\n{scenario}\n{e}"));
        // The pasted layer is the imported one.
        let Value::Object(m) = serde_json::to_value(&s.layers[0]).unwrap() else {
            panic!()
        };
        let owned: Vec<String> = p.fragment.keys().cloned().collect();
        let mut frag = p.fragment.clone();
        frag.insert("name".into(), json!("imported"));
        let l: crate::scenario::types::Layer = serde_json::from_value(Value::Object(frag)).unwrap();
        let Value::Object(f) = serde_json::to_value(&l).unwrap() else {
            panic!()
        };
        assert_eq!(
            changed_leaves(&f, &m, &owned),
            Vec::<String>::new(),
            "{value}:\n{layer}"
        );
    }
}

#[test]
fn istio_routes_and_defaults() {
    let p = import(Format::IstioVirtualservice, "orders#create-order");
    assert_eq!(p.selected, "VirtualService orders spec.http[0] (line 27)");
    has(
        &p,
        &[
            "total_timeout=\"3s\"",
            "timeout=\"750ms\"",
            "retry.max_attempts=4.0",
            "retry.retry_on=[\"429\",\"502\",\"503\",\"504\",\"connection\",\"timeout\"]",
            "retry.backoff.kind=\"exponential\"",
            "retry.backoff.base=\"25ms\"",
            "retry.backoff.cap=\"250ms\"",
            "retry.backoff.multiplier=2.0",
            "retry.jitter=\"full\"",
            "retry.retry_after=\"ignore\"",
        ],
    );
    lacks(&p, &["retry.budget", "bulkhead"]);
    let o = &p.origins["retry.max_attempts"];
    assert_eq!(
        (o.key.as_str(), o.pos),
        ("spec.http[0].retries.attempts", Some((42, 19)))
    );
    assert!(
        p.warnings.iter().any(
            |w| w.key == "spec.http[0].retries.retryRemoteLocalities" && w.pos == Some((45, 9))
        ),
        "{:?}",
        p.warnings
    );
    // No retries block: Istio's default policy (retry.go), no route timeout;
    // no status code retried (istio/istio PR #52111).
    let p = import(Format::IstioVirtualservice, "orders#get-order");
    has(
        &p,
        &[
            "retry.max_attempts=3.0",
            "retry.retry_on=[\"connection\"]",
            "retry.backoff.base=\"25ms\"",
        ],
    );
    lacks(&p, &["total_timeout", "timeout"]);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].message.contains("`unavailable`, `cancelled`"));
    // attempts: 0 turns retries off.
    let p = import(Format::IstioVirtualservice, "orders#reports");
    has(
        &p,
        &[
            "total_timeout=\"30s\"",
            "retry.max_attempts=1.0",
            "retry.retry_on=[]",
        ],
    );
    // A retries block without attempts: no retries, and a warning.
    let src = ISTIO.replace("      retries:\n        attempts: 2\n", "      retries:\n");
    let p = import_text(
        &src,
        "vs.yaml",
        Format::IstioVirtualservice,
        &sel(Format::IstioVirtualservice, "inventory"),
    )
    .unwrap();
    has(&p, &["retry.max_attempts=1.0", "retry.retry_on=[]"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("no `attempts`") && w.pos == Some((86, 9))),
        "{:?}",
        p.warnings
    );
    // By destination host, short name; gRPC names, a back-off base.
    let p = import(Format::IstioVirtualservice, "inventory");
    has(
        &p,
        &[
            "retry.max_attempts=3.0",
            "retry.retry_on=[\"429\",\"503\"]",
            "retry.backoff.base=\"50ms\"",
            "retry.backoff.cap=\"500ms\"",
        ],
    );
    assert!(
        p.warnings.iter().any(|w| w.message.contains("`cancelled`")),
        "{:?}",
        p.warnings
    );
    // A host with several routes needs `route`.
    let e = import_text(
        ISTIO,
        "vs.yaml",
        Format::IstioVirtualservice,
        &sel(Format::IstioVirtualservice, "orders"),
    )
    .unwrap_err();
    assert!(
        e[0].to_string().contains("has 3 http routes (`create-order`, `get-order`, `reports`); pick one with `route: NAME`"),
        "{}",
        e[0]
    );
}

#[test]
fn istio_unmodelled_settings_are_named_with_their_position() {
    let src = ISTIO
        .replace(
            "      timeout: 3s\n",
            "      timeout: 3s\n      fault:\n        abort: { percentage: { value: 1 }, httpStatus: 503 }\n",
        )
        .replace("        retryOn: gateway-error,connect-failure,refused-stream,429\n", "        retryOn: gateway-error,connect-failure,refused-stream,429,bogus\n");
    let e = import_text(
        &src,
        "vs.yaml",
        Format::IstioVirtualservice,
        &sel(Format::IstioVirtualservice, "orders#create-order"),
    )
    .unwrap_err();
    let lines: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].starts_with(
            "vs.yaml:41:7: spec.http[0].fault: not modelled: injected delays or aborts"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(
            "vs.yaml:46:18: spec.http[0].retries.retryOn: `bogus` is neither a retry_on condition"
        ),
        "{}",
        lines[1]
    );
    let e = import_text(
        &ISTIO.replace("perTryTimeout: 750ms", "perTryTimeout: 500us"),
        "vs.yaml",
        Format::IstioVirtualservice,
        &sel(Format::IstioVirtualservice, "orders#create-order"),
    )
    .unwrap_err();
    assert!(
        e[0].to_string().starts_with(
            "vs.yaml:43:24: spec.http[0].retries.perTryTimeout: perTryTimeout must be at least 1ms"
        ),
        "{}",
        e[0]
    );
}

#[test]
fn istio_export_changes_only_the_tuned_values() {
    let out = export(
        Format::IstioVirtualservice,
        "orders#create-order",
        &[
            ("retry.max_attempts", json!(2)),
            ("timeout", json!("1s")),
            ("total_timeout", json!("2500ms")),
        ],
    )
    .unwrap();
    assert_eq!(
        changed_lines(ISTIO, &out),
        [
            ("      timeout: 3s".into(), "      timeout: 2.5s".into()),
            ("        attempts: 3".into(), "        attempts: 1".into()),
            (
                // The file's unit kept: a whole number of milliseconds.
                "        perTryTimeout: 750ms".into(),
                "        perTryTimeout: 1000ms".into()
            ),
        ]
    );
    // retryOn: a status code joins the string as a bare number.
    let out = export(
        Format::IstioVirtualservice,
        "orders#create-order",
        &[(
            "retry.retry_on",
            json!(["timeout", "connection", 502, 503, 504]),
        )],
    )
    .unwrap();
    assert_eq!(
        changed_lines(ISTIO, &out),
        [(
            "        retryOn: gateway-error,connect-failure,refused-stream,429".into(),
            "        retryOn: gateway-error,connect-failure,refused-stream".into()
        )]
    );
    // A route on Istio's default gets a retries block that keeps its retryOn.
    let out = export(
        Format::IstioVirtualservice,
        "orders#get-order",
        &[
            ("retry.max_attempts", json!(5)),
            ("retry.backoff.base", json!("100ms")),
            ("retry.backoff.cap", json!("1s")),
        ],
    )
    .unwrap();
    assert!(
        out.contains("            subset: v1\n      retries:\n        backoff: 100ms\n        attempts: 4\n    # Reports"),
        "{out}"
    );
    let back = import_text(
        &out,
        "f",
        Format::IstioVirtualservice,
        &sel(Format::IstioVirtualservice, "orders#get-order"),
    )
    .unwrap();
    has(
        &back,
        &[
            "retry.max_attempts=5.0",
            "retry.retry_on=[\"connection\"]",
            "retry.backoff.cap=\"1s\"",
        ],
    );
    // What Istio cannot say.
    let e = export(
        Format::IstioVirtualservice,
        "inventory",
        &[("retry.backoff.cap", json!("2s"))],
    )
    .unwrap_err();
    assert!(e[0].contains("10 × base"), "{e:?}");
    let e = export(
        Format::IstioVirtualservice,
        "inventory",
        &[("retry.budget", json!({"kind": "envoy"}))],
    )
    .unwrap_err();
    assert!(
        e[0].contains("holds no `retry.budget`") || e[0].contains("DestinationRule"),
        "{e:?}"
    );
}

#[test]
fn linkerd_routes_and_budget() {
    let p = import(Format::LinkerdServiceprofile, "GET /orders/{id}");
    assert_eq!(
        p.selected,
        "ServiceProfile orders.shop.svc.cluster.local spec.routes[0] (line 11)"
    );
    has(
        &p,
        &[
            "total_timeout=\"800ms\"",
            "retry.max_attempts=1000.0",
            "retry.retry_on=[\"5xx\"]",
            "retry.backoff.kind=\"constant\"",
            "retry.backoff.base=\"0s\"",
            "retry.jitter=\"none\"",
            "retry.budget.kind=\"finagle\"",
            "retry.budget.scope=\"instance\"",
            "retry.budget.percent_can_retry=0.25",
            "retry.budget.min_retries_per_sec=5.0",
            "retry.budget.ttl=\"10s\"",
            "retry.budget.max_requeues_fraction=0.0",
        ],
    );
    lacks(&p, &["timeout"]);
    assert_eq!(
        p.origins["retry.budget.percent_can_retry"].pos,
        Some((38, 17))
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.key == "spec.routes[0].condition" && w.pos == Some((12, 7))),
        "{:?}",
        p.warnings
    );
    let p = import(Format::LinkerdServiceprofile, "POST /orders");
    has(&p, &["total_timeout=\"3s\"", "retry.max_attempts=1.0"]);
    // The default timeout; a response class saying what the default says.
    let p = import(Format::LinkerdServiceprofile, "GET /orders");
    has(&p, &["total_timeout=\"10s\"", "retry.max_attempts=1000.0"]);
    // Linkerd's default budget when the profile has none.
    let src = LINKERD.split("  # At most").next().unwrap();
    let p = import_text(
        src,
        "f",
        Format::LinkerdServiceprofile,
        &sel(Format::LinkerdServiceprofile, "GET /orders"),
    )
    .unwrap();
    has(
        &p,
        &[
            "retry.budget.percent_can_retry=0.2",
            "retry.budget.min_retries_per_sec=10.0",
            "retry.budget.ttl=\"10s\"",
        ],
    );
    // A ratio the proxy rounds: 0.3 withdraws trunc(3.33) = 3.
    let p = import_text(
        &LINKERD.replace("retryRatio: 0.25", "retryRatio: 0.3"),
        "f",
        Format::LinkerdServiceprofile,
        &sel(Format::LinkerdServiceprofile, "GET /orders"),
    )
    .unwrap();
    let ratio = leaves(&p.fragment)["retry.budget.percent_can_retry"]
        .as_f64()
        .unwrap();
    assert!((ratio - 1.0 / 3.0).abs() < 1e-12, "{ratio}");
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("trunc(1 / 0.3) = 3")),
        "{:?}",
        p.warnings
    );
    // The layer validates with the budget (no per-call cap).
    let layer = layer_yaml::layer_yaml(
        &import(Format::LinkerdServiceprofile, "GET /orders"),
        "x",
        &[],
    );
    assert!(layer.contains("max_requeues_fraction: 0"), "{layer}");
}

#[test]
fn linkerd_unmodelled_settings_are_named_with_their_position() {
    let src = LINKERD
        .replace("              min: 500\n", "              min: 502\n")
        .replace(
            "      isRetryable: false\n",
            "      isRetryable: false\n      retryPolicy: always\n",
        );
    let e = import_text(
        &src,
        "sp.yaml",
        Format::LinkerdServiceprofile,
        &sel(Format::LinkerdServiceprofile, "GET /orders"),
    )
    .unwrap_err();
    let lines: Vec<String> = e.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].starts_with("sp.yaml:31:11: spec.routes[2].responseClasses: not modelled: responseClasses[0], a response class"), "{}", lines[0]);
    let e = import_text(
        &src,
        "sp.yaml",
        Format::LinkerdServiceprofile,
        &sel(Format::LinkerdServiceprofile, "POST /orders"),
    )
    .unwrap_err();
    assert!(
        e[0].to_string()
            .starts_with("sp.yaml:23:7: spec.routes[1].retryPolicy: not modelled"),
        "{}",
        e[0]
    );
    let e = import_text(
        LINKERD,
        "sp.yaml",
        Format::LinkerdServiceprofile,
        &sel(Format::LinkerdServiceprofile, "PUT /orders"),
    )
    .unwrap_err();
    assert!(e[0].to_string().contains("no route named `PUT /orders`; the routes are `GET /orders/{id}`, `POST /orders`, `GET /orders`"), "{}", e[0]);
}

#[test]
fn linkerd_export_changes_only_the_tuned_values() {
    let out = export(
        Format::LinkerdServiceprofile,
        "POST /orders",
        &[
            ("total_timeout", json!("2s")),
            ("retry.max_attempts", json!(1000)),
            ("retry.budget.percent_can_retry", json!(0.1)),
            ("retry.budget.ttl", json!("20s")),
        ],
    )
    .unwrap();
    assert_eq!(
        changed_lines(LINKERD, &out),
        [
            (
                "      isRetryable: false".into(),
                "      isRetryable: true".into()
            ),
            ("      timeout: 3s".into(), "      timeout: 2s".into()),
            ("    retryRatio: 0.25".into(), "    retryRatio: 0.10".into()),
            ("    ttl: 10s".into(), "    ttl: 20s".into()),
        ]
    );
    let e = export(
        Format::LinkerdServiceprofile,
        "POST /orders",
        &[("retry.max_attempts", json!(3))],
    )
    .unwrap_err();
    assert!(e[0].contains("no per-request retry limit"), "{e:?}");
    // A ratio the proxy cannot hold exactly is refused, nothing written.
    let e = export(
        Format::LinkerdServiceprofile,
        "POST /orders",
        &[("retry.budget.percent_can_retry", json!(0.3))],
    )
    .unwrap_err();
    assert!(e[0].contains("cannot hold 0.3 exactly"), "{e:?}");
}

// ------------------------------------------------------------ ms-resilience

/// Reads `text` as an appsettings.json, section `section`: the errors as
/// `line:col: key: message` lines.
fn ms_errors(text: &str, section: &str) -> Vec<String> {
    match import_text(
        text,
        "f",
        Format::MsResilience,
        &sel(Format::MsResilience, section),
    ) {
        Ok(p) => panic!("expected errors, got {:?}", shown(&p)),
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn ms_resilience_sections_case_and_colon_keys() {
    let p = import(Format::MsResilience, "HttpClients:Inventory:Resilience");
    assert_eq!(p.selected, "section HttpClients:Inventory:Resilience");
    has(
        &p,
        &[
            "retry.max_attempts=6.0",
            "retry.backoff.kind=\"exponential\"",
            "retry.backoff.base=\"500ms\"",
            "retry.backoff.multiplier=2.0",
            "retry.backoff.cap=\"5s\"",
            "retry.jitter=\"polly_v2\"",
            "retry.retry_after=\"exact\"",
            "retry.retry_on=[\"408\",\"429\",\"5xx\",\"connection\",\"timeout\"]",
            "timeout=\"2s\"",
            "total_timeout=\"20s\"",
            "breaker.kind=\"time\"",
            "breaker.failure_ratio=0.2",
            "breaker.min_calls=50.0",
            "breaker.window=\"10s\"",
            "breaker.open_for=\"15s\"",
            "breaker.probes=1.0",
        ],
    );
    let o = &p.origins["retry.backoff.base"];
    assert_eq!(
        (o.key.as_str(), o.pos),
        (
            "HttpClients:Inventory:Resilience:Retry:Delay",
            Some((24, 20))
        )
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    // Keys in any case (as .NET compares them), a number as a string, the
    // backoff type as its number, the section path in another case.
    let p = import(Format::MsResilience, "HTTPCLIENTS:payments:Resilience");
    has(
        &p,
        &[
            "retry.max_attempts=3.0",
            "retry.backoff.kind=\"constant\"",
            "retry.backoff.base=\"1s\"",
            "retry.jitter=\"none\"",
            "timeout=\"5s\"",
            "total_timeout=\"30s\"",
            "breaker.failure_ratio=0.1",
        ],
    );
    lacks(&p, &["retry.backoff.cap", "retry.backoff.multiplier"]);
    // A key that holds `:` itself.
    let p = import(Format::MsResilience, "Resilience:Standard");
    has(&p, &["retry.max_attempts=5.0"]);
    assert_eq!(p.origins["retry.max_attempts"].pos, Some((55, 49)));
}

/// An empty section is the standard handler's defaults: exactly the
/// `ms-http-standard` preset (the fields it names; the breaker's scope and
/// blocks are the defaults a preset leaves to stormsim).
#[test]
fn ms_resilience_defaults_are_the_ms_http_standard_preset() {
    let p = import_text(
        "{ \"Http\": { \"Resilience\": { } } }",
        "f",
        Format::MsResilience,
        &sel(Format::MsResilience, "Http:Resilience"),
    )
    .unwrap();
    let preset = crate::scenario::presets::find("ms-http-standard")
        .and_then(|p| p.fragment())
        .unwrap();
    let owned: Vec<String> = preset.keys().cloned().collect();
    let a = write::canonical(&p.fragment, "f").unwrap();
    let b = write::canonical(&preset, "f").unwrap();
    assert_eq!(changed_leaves(&a, &b, &owned), Vec::<String>::new());
    assert_eq!(
        p.origins["retry.max_attempts"].key,
        "Retry:MaxRetryAttempts 3 (default)"
    );
}

#[test]
fn ms_resilience_backoff_types_and_jitter() {
    let file = |retry: &str| format!("{{ \"R\": {{ \"Retry\": {{ {retry} }} }} }}");
    let cases = [
        (
            "\"BackoffType\": \"linear\", \"UseJitter\": true",
            "retry.backoff.kind=\"linear\"",
            "retry.jitter.proportional=0.25",
        ),
        (
            "\"BackoffType\": 1, \"UseJitter\": \"False\"",
            "retry.backoff.kind=\"linear\"",
            "retry.jitter=\"none\"",
        ),
        (
            "\"BackoffType\": \"2\"",
            "retry.backoff.kind=\"exponential\"",
            "retry.jitter=\"polly_v2\"",
        ),
        (
            "\"BackoffType\": \"CONSTANT\"",
            "retry.backoff.kind=\"constant\"",
            "retry.jitter.proportional=0.25",
        ),
        (
            "\"ShouldRetryAfterHeader\": false",
            "retry.retry_after=\"ignore\"",
            "retry.backoff.kind=\"exponential\"",
        ),
        (
            "\"Delay\": \"0:0:0.25\", \"MaxDelay\": \"2.5:00:00\"",
            "retry.backoff.base=\"250ms\"",
            "retry.backoff.cap=\"2d5h\"",
        ),
    ];
    for (retry, a, b) in cases {
        let text = file(retry);
        let p = import_text(
            &text,
            "f",
            Format::MsResilience,
            &sel(Format::MsResilience, "r"),
        )
        .unwrap_or_else(|e| panic!("{retry}: {e:?}"));
        has(&p, &[a, b]);
    }
}

#[test]
fn ms_resilience_bad_values_are_named_with_their_position() {
    let e = ms_errors(
        "{\n  \"R\": {\n    \"Retry\": { \"Delay\": \"2s\" }\n  }\n}\n",
        "R",
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with(
            "f:3:25: R:Retry:Delay: expected a .NET TimeSpan string such as \"00:00:02\""
        ),
        "{e:?}"
    );
    let e = ms_errors(
        "{ \"R\": { \"Retry\": { \"BackoffType\": \"Exponentail\" } } }",
        "R",
    );
    assert!(e[0].contains("f:1:36: R:Retry:BackoffType: expected a DelayBackoffType: Constant, Linear or Exponential (or 0, 1, 2), found `Exponentail`"), "{e:?}");
    let e = ms_errors("{ \"R\": { \"Retry\": { \"BackoffType\": 3 } } }", "R");
    assert!(e[0].contains("expected a DelayBackoffType"), "{e:?}");
    // Polly's validation ranges.
    let e = ms_errors(
        "{ \"R\": { \"Retry\": { \"Delay\": \"1.00:00:01\" } } }",
        "R",
    );
    assert!(
        e[0].contains("1.00:00:01 is outside 00:00:00 to 1.00:00:00"),
        "{e:?}"
    );
    let e = ms_errors("{ \"R\": { \"Retry\": { \"MaxRetryAttempts\": 0 } } }", "R");
    assert!(
        e[0].contains("expected a whole number from 1 to 2147483647, found `0`"),
        "{e:?}"
    );
    let e = ms_errors(
        "{ \"R\": { \"CircuitBreaker\": { \"BreakDuration\": \"00:00:00.1\" } } }",
        "R",
    );
    assert!(
        e[0].contains("00:00:00.1 is outside 00:00:00.5 to 1.00:00:00"),
        "{e:?}"
    );
    // The standard handler's own validation.
    let e = ms_errors(
        "{ \"R\": { \"AttemptTimeout\": { \"Timeout\": \"00:01:00\" } } }",
        "R",
    );
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e[0].contains("R:AttemptTimeout:Timeout: AttemptTimeout 00:01:00 is longer than TotalRequestTimeout 00:00:30"), "{e:?}");
    assert!(
        e[1].contains("SamplingDuration 00:00:30 is less than twice AttemptTimeout 00:01:00"),
        "{e:?}"
    );
    // A key given twice, in another case.
    let e = ms_errors(
        "{ \"R\": { \"Retry\": { \"Delay\": \"00:00:01\" } },\n  \"r\": { \"retry\": { \"delay\": \"00:00:02\" } } }",
        "R",
    );
    assert!(
        e[0].contains("f:2:21: r:retry:delay: the key is given twice (first at line 1)"),
        "{e:?}"
    );
    // A missing section lists the sections that have a Retry.
    let e = ms_errors(MS, "HttpClients:Orders:Resilience");
    assert_eq!(
        e,
        [
            "f: no configuration section `HttpClients:Orders:Resilience`; the sections with a Retry are HttpClients:Inventory:Resilience, HttpClients:Payments:resilience, HttpClients:Reports:Resilience, Resilience:Standard"
        ]
    );
    let e = ms_errors(MS, "");
    assert!(e[0].contains("which section?"), "{e:?}");
}

#[test]
fn ms_resilience_unmodelled_settings_are_named_with_their_position() {
    let e = ms_errors(MS, "HttpClients:Reports:Resilience");
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e[0].starts_with("f:48:42: HttpClients:Reports:Resilience:RateLimiter:DefaultRateLimiterOptions:PermitLimit: not modelled: the standard handler's concurrency limiter"), "{e:?}");
    assert!(e[1].starts_with("f:48:62: HttpClients:Reports:Resilience:RateLimiter:DefaultRateLimiterOptions:QueueLimit"), "{e:?}");
    // Listed in `ignore`: warnings, with the misspelt option and the name.
    let mut s = sel(Format::MsResilience, "HttpClients:Reports:Resilience");
    s.ignore = vec!["PermitLimit".into(), "QueueLimit".into()];
    let p = import_text(MS, "f", Format::MsResilience, &s).unwrap();
    let w: Vec<String> = p
        .warnings
        .iter()
        .map(|f| f.located("f").to_string())
        .collect();
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(
        w.iter().any(|x| x
            .starts_with("f:50:20: HttpClients:Reports:Resilience:Retry:Name: a strategy's name")),
        "{w:?}"
    );
    assert!(
        w.iter().any(|x| x.starts_with(
            "f:50:45: HttpClients:Reports:Resilience:Retry:MaxRetryAttempt: not an option"
        )),
        "{w:?}"
    );
    // The misspelt option is not read: the default stands.
    has(&p, &["retry.max_attempts=4.0"]);
}

#[test]
fn ms_resilience_export_changes_only_the_tuned_values() {
    let out = export(
        Format::MsResilience,
        "HttpClients:Inventory:Resilience",
        &[
            ("retry.max_attempts", json!(4)),
            ("retry.backoff.base", json!("250ms")),
            ("retry.backoff.cap", json!("5s")), // unchanged: not touched
            ("timeout", json!("1500ms")),
            ("breaker.failure_ratio", json!(0.3)),
            ("breaker.open_for", json!("1m")),
        ],
    )
    .unwrap();
    assert_eq!(
        changed_lines(MS, &out),
        [
            (
                "          \"MaxRetryAttempts\": 5,".into(),
                "          \"MaxRetryAttempts\": 3,".into()
            ),
            (
                // The file's three decimals kept.
                "          \"Delay\": \"00:00:00.500\",".into(),
                "          \"Delay\": \"00:00:00.250\",".into()
            ),
            (
                "        \"AttemptTimeout\": { \"Timeout\": \"00:00:02\" },".into(),
                "        \"AttemptTimeout\": { \"Timeout\": \"00:00:01.5\" },".into()
            ),
            (
                "          \"FailureRatio\": 0.2,".into(),
                "          \"FailureRatio\": 0.3,".into()
            ),
            (
                "          \"BreakDuration\": \"00:00:15\",".into(),
                "          \"BreakDuration\": \"00:01:00\",".into()
            ),
        ]
    );
    // Comments and trailing commas are kept: the edited file is read again.
    assert!(out.contains("\"Polly\": \"Warning\", // resilience events are noisy"));
    let back = import_text(
        &out,
        "f",
        Format::MsResilience,
        &sel(Format::MsResilience, "HttpClients:Inventory:Resilience"),
    )
    .unwrap();
    has(
        &back,
        &[
            "retry.max_attempts=4.0",
            "retry.backoff.base=\"250ms\"",
            "timeout=\"1500ms\"",
            "breaker.open_for=\"1m\"",
        ],
    );
    // Keys written in the file's case; a numeric BackoffType stays a
    // number; a missing option is added to its object.
    let out = export(
        Format::MsResilience,
        "HttpClients:Payments:Resilience",
        &[
            ("retry.backoff.kind", json!("linear")),
            ("retry.jitter", json!({ "proportional": 0.25 })),
            ("total_timeout", json!("12s")),
        ],
    )
    .unwrap();
    let added = "\n        \"TotalRequestTimeout\": { \"Timeout\": \"00:00:12\" },";
    assert_eq!(
        changed_lines(MS, &out.replace(added, "")),
        [(
            "        \"retry\": { \"maxRetryAttempts\": \"2\", \"backoffType\": 0, \"useJitter\": false, \"delay\": \"00:00:01\" },".into(),
            "        \"retry\": { \"maxRetryAttempts\": \"2\", \"backoffType\": 1, \"useJitter\": true, \"delay\": \"00:00:01\" },".into()
        )]
    );
    assert!(out.contains("        \"attemptTimeout\": { \"timeout\": \"00:00:05\" },\n        \"TotalRequestTimeout\": { \"Timeout\": \"00:00:12\" },\n      }"), "{out}");
}

/// ms-resilience export writes only the keys whose value changes: a
/// section without `UseJitter` (the default, true) exported unchanged is
/// left as it is, and a changed MaxRetryAttempts adds no UseJitter.
#[test]
fn ms_resilience_export_adds_no_key_whose_value_is_the_default() {
    let cases = [
        (
            "HttpClients:Inventory:Resilience",
            MS.replace("          \"UseJitter\": true,\n", ""),
        ),
        (
            "HttpClients:Payments:Resilience",
            MS.replace(" \"useJitter\": false,", ""),
        ),
        (
            "HttpClients:Payments:Resilience",
            MS.replace(" \"backoffType\": 0, \"useJitter\": false,", ""),
        ),
    ];
    for (section, src) in &cases {
        let s = sel(Format::MsResilience, section);
        let p = import_text(src, "f", Format::MsResilience, &s).unwrap();
        // Unchanged, as a scenario layer (best.yaml) has it.
        let mut layer = p.fragment.clone();
        layer.insert("name".into(), json!("x"));
        let layer: crate::scenario::types::Layer =
            serde_json::from_value(Value::Object(layer)).unwrap();
        let Value::Object(mut m) = serde_json::to_value(&layer).unwrap() else {
            panic!()
        };
        let out = export_text(
            src,
            "f",
            Format::MsResilience,
            &s,
            &Wanted::Layer(m.clone()),
        )
        .unwrap_or_else(|e| panic!("{section}: {e:?}"));
        assert_eq!(&out.after, src, "{section}");
        // Only max_attempts changed: only MaxRetryAttempts changes.
        m["retry"]["max_attempts"] = json!(8);
        let out = export_text(src, "f", Format::MsResilience, &s, &Wanted::Layer(m))
            .unwrap_or_else(|e| panic!("{section}: {e:?}"));
        let changed = changed_lines(src, &out.after);
        assert_eq!(changed.len(), 1, "{section}: {changed:?}");
        let (a, b) = &changed[0];
        let want = a
            .replace("\"MaxRetryAttempts\": 5", "\"MaxRetryAttempts\": 7")
            .replace("\"maxRetryAttempts\": \"2\"", "\"maxRetryAttempts\": \"7\"");
        assert_eq!(b, &want, "{section}");
    }
}

/// A section without `UseJitter` (true) moved from a constant backoff
/// (jitter `{ proportional: 0.25 }`) to an exponential one (`polly_v2`):
/// both are UseJitter true, so only `backoffType` changes. Before, the
/// export also wrote a `UseJitter` the file did not have.
#[test]
fn ms_resilience_export_changes_the_backoff_kind_alone() {
    let src = MS.replace(" \"useJitter\": false,", "");
    let s = sel(Format::MsResilience, "HttpClients:Payments:Resilience");
    let p = import_text(&src, "f", Format::MsResilience, &s).unwrap();
    let mut layer = p.fragment.clone();
    layer.insert("name".into(), json!("x"));
    let layer: crate::scenario::types::Layer =
        serde_json::from_value(Value::Object(layer)).unwrap();
    let Value::Object(mut m) = serde_json::to_value(&layer).unwrap() else {
        panic!()
    };
    assert_eq!(
        m["retry"]["jitter"],
        json!({ "proportional": 0.25 }),
        "{m:?}"
    );
    m["retry"]["backoff"]["kind"] = json!("exponential");
    m["retry"]["backoff"]["multiplier"] = json!(2.0);
    m["retry"]["jitter"] = json!("polly_v2");
    let out = export_text(&src, "f", Format::MsResilience, &s, &Wanted::Layer(m))
        .unwrap_or_else(|e| panic!("{e:?}"));
    let changed = changed_lines(&src, &out.after);
    assert_eq!(changed.len(), 1, "{changed:?}");
    let (a, b) = &changed[0];
    assert_eq!(
        b,
        &a.replace("\"backoffType\": 0", "\"backoffType\": 2"),
        "{b}"
    );
}

/// Exponential to constant or linear: the multiplier leaves with the
/// kind, and only `BackoffType` changes (before, the missing multiplier
/// was refused as "Polly's exponential backoff doubles").
#[test]
fn ms_resilience_export_from_exponential_to_constant_or_linear() {
    let s = sel(Format::MsResilience, "HttpClients:Inventory:Resilience");
    let p = import_text(MS, "f", Format::MsResilience, &s).unwrap();
    let mut layer = p.fragment.clone();
    layer.insert("name".into(), json!("x"));
    let layer: crate::scenario::types::Layer =
        serde_json::from_value(Value::Object(layer)).unwrap();
    let Value::Object(m) = serde_json::to_value(&layer).unwrap() else {
        panic!()
    };
    assert_eq!(m["retry"]["backoff"]["kind"], json!("exponential"), "{m:?}");
    for (kind, number) in [("constant", 0), ("linear", 1)] {
        let mut m = m.clone();
        m["retry"]["backoff"]["kind"] = json!(kind);
        m["retry"]["backoff"]
            .as_object_mut()
            .unwrap()
            .remove("multiplier");
        // A constant 0.5 s never reaches the MaxDelay of 5 s: it has no
        // cap, and the MaxDelay, which would say one, goes (held-out 7).
        let mut src = MS.to_string();
        if kind == "constant" {
            m["retry"]["backoff"].as_object_mut().unwrap().remove("cap");
            src = src.replace("          \"MaxDelay\": \"00:00:05\",\n", "");
        }
        m["retry"]["jitter"] = json!({ "proportional": 0.25 });
        let out = export_text(MS, "f", Format::MsResilience, &s, &Wanted::Layer(m))
            .unwrap_or_else(|e| panic!("{kind}: {e:?}"));
        assert!(
            kind != "constant" || src.len() < MS.len(),
            "the fixture's MaxDelay"
        );
        let changed = changed_lines(&src, &out.after);
        assert_eq!(changed.len(), 1, "{kind}: {changed:?}");
        let back = import_text(&out.after, "f", Format::MsResilience, &s).unwrap();
        assert_eq!(
            back.fragment["retry"]["backoff"]["kind"],
            json!(kind),
            "{kind}"
        );
        assert!(
            back.fragment["retry"]["backoff"]
                .get("multiplier")
                .is_none_or(Value::is_null),
            "{kind}"
        );
        let (a, b) = &changed[0];
        assert_eq!(
            b,
            &a.replace(
                "\"Exponential\"",
                &format!("\"{}\"", ["Constant", "Linear"][number])
            ),
            "{kind}"
        );
    }
}

#[test]
fn ms_resilience_export_refuses_what_polly_cannot_say() {
    let cases: [(&str, &str, Value, &str); 5] = [
        (
            "HttpClients:Inventory:Resilience",
            "retry.jitter",
            json!("full"),
            "Polly's jitter is UseJitter",
        ),
        (
            "HttpClients:Inventory:Resilience",
            "retry.backoff.multiplier",
            json!(3),
            "doubles (multiplier 2)",
        ),
        (
            "HttpClients:Inventory:Resilience",
            "retry.max_attempts",
            json!(1),
            "MaxRetryAttempts is at least 1",
        ),
        (
            "HttpClients:Inventory:Resilience",
            "retry.retry_on",
            json!(["5xx"]),
            "HttpClientResiliencePredicates",
        ),
        (
            "Resilience:Standard",
            "retry.backoff.base",
            json!("1s"),
            "the section Resilience:Standard is not an object of its own in this file",
        ),
    ];
    for (section, path, v, why) in cases {
        let e = export(Format::MsResilience, section, &[(path, v)]).unwrap_err();
        assert!(e.iter().any(|x| x.contains(why)), "{path}: {e:?}");
    }
}

// --------------------------------------------------------------- aws-config

fn aws_errors(text: &str, profile: &str) -> Vec<String> {
    match import_text(
        text,
        "f",
        Format::AwsConfig,
        &sel(Format::AwsConfig, profile),
    ) {
        Ok(p) => panic!("expected errors, got {:?}", shown(&p)),
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn aws_profiles_onto_the_presets() {
    let p = import(Format::AwsConfig, "orders-prod");
    assert_eq!(p.selected, "[profile orders-prod] (line 8)");
    has(
        &p,
        &[
            "retry.max_attempts=4.0",
            "retry.backoff.base=\"1s\"",
            "retry.backoff.cap=\"20s\"",
            "retry.jitter=\"full\"",
            "retry.budget.kind=\"aws_quota\"",
            "retry.budget.retry_cost=5.0",
        ],
    );
    lacks(&p, &["throttle"]);
    assert_eq!(p.origins["retry.max_attempts"].pos, Some((14, 16)));
    assert_eq!(
        p.origins["retry.jitter"].key,
        "[profile orders-prod].retry_mode (aws-standard-2.0 preset)"
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let p = import(Format::AwsConfig, "batch");
    has(
        &p,
        &["retry.max_attempts=3.0", "throttle.kind=\"aws_adaptive\""],
    );
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].key, "[profile batch].defaults_mode");
    let p = import(Format::AwsConfig, "legacy-tools");
    has(
        &p,
        &[
            "retry.max_attempts=5.0",
            "retry.retry_on=[\"429\",\"500\",\"502\",\"503\",\"504\",\"509\",\"connection\",\"timeout\"]",
        ],
    );
    lacks(&p, &["retry.budget", "retry.backoff.cap"]);
    assert_eq!(p.warnings[0].pos, Some((26, 1)));
    // No retry_mode: standard, with a warning; region and SSO keys are
    // left out silently.
    let p = import(Format::AwsConfig, "dev");
    has(
        &p,
        &["retry.max_attempts=3.0", "retry.budget.capacity=500.0"],
    );
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(p.warnings[0].message.contains("no retry_mode"));
    // defaults_mode other than legacy selects standard, said so.
    let p = import_text(
        "[profile x]\ndefaults_mode = standard\n",
        "f",
        Format::AwsConfig,
        &sel(Format::AwsConfig, "x"),
    )
    .unwrap();
    assert_eq!(
        p.origins["retry.jitter"].key,
        "[profile x].defaults_mode standard: standard retries (aws-standard-2.0 preset)"
    );
}

#[test]
fn aws_errors_are_named_with_their_position() {
    let e = aws_errors(AWS, "staging");
    assert_eq!(
        e,
        [
            "f: no profile `staging`; the profiles are default, orders-prod, batch, legacy-tools, dev"
        ]
    );
    let e = aws_errors(
        "[default]\nregion = x\n[staging]\nretry_mode = standard\n",
        "staging",
    );
    assert!(e[0].contains("[staging] at line 3 is the credentials file's form: in the config file a named profile is [profile staging]"), "{e:?}");
    let e = aws_errors("[profile a]\nretry_mode = Standard\n", "a");
    assert_eq!(
        e,
        ["f:2:14: [profile a].retry_mode: expected legacy, standard or adaptive, found `Standard`"]
    );
    let e = aws_errors(
        "[profile a]\nretry_mode = standard\nmax_attempts = 0\n",
        "a",
    );
    assert_eq!(
        e,
        [
            "f:3:16: [profile a].max_attempts: expected a whole number from 1 to 4294967295, found `0`"
        ]
    );
    let e = aws_errors("[profile a]\nmax_attempts = 3 # three\n", "a");
    assert!(e[0].contains("found `3 # three`"), "{e:?}");
    let e = aws_errors("[profile a]\nmax_attempts = 3\nMax_Attempts = 4\n", "a");
    assert!(e[0].starts_with("f:3:1: [profile a].Max_Attempts: `Max_Attempts` is given twice in the profile (first at line 2)"), "{e:?}");
    let e = aws_errors("[profile a]\nregion = x\n[profile a]\nregion = y\n", "a");
    assert!(
        e[0].contains("the section [profile a] is given twice (lines 1 and 3)"),
        "{e:?}"
    );
    let e = aws_errors("region = x\n[profile a]\n", "a");
    assert_eq!(
        e,
        ["f:1:1: not valid INI: a setting before the first [section] header"]
    );
    let e = aws_errors(AWS, "");
    assert!(e[0].contains("`profile:"), "{e:?}");
}

#[test]
fn aws_export_changes_only_the_tuned_values() {
    // max_attempts in place.
    let out = export(
        Format::AwsConfig,
        "orders-prod",
        &[("retry.max_attempts", json!(6))],
    )
    .unwrap();
    assert_eq!(
        changed_lines(AWS, &out),
        [("max_attempts = 4".into(), "max_attempts = 6".into())]
    );
    // Adaptive retries: the throttle of aws-adaptive; max_attempts stays.
    let out = export(
        Format::AwsConfig,
        "orders-prod",
        &[("throttle", json!({ "kind": "aws_adaptive" }))],
    )
    .unwrap();
    assert_eq!(
        changed_lines(AWS, &out),
        [(
            "retry_mode = standard".into(),
            "retry_mode = adaptive".into()
        )]
    );
    // legacy -> standard with three attempts: the mode only (standard's
    // default is 3).
    let standard = crate::scenario::presets::find("aws-standard-2.0")
        .and_then(|p| p.fragment())
        .unwrap();
    let mut layer = standard.clone();
    layer.insert("name".into(), json!("x"));
    let layer: crate::scenario::types::Layer =
        serde_json::from_value(Value::Object(layer)).unwrap();
    let Value::Object(m) = serde_json::to_value(&layer).unwrap() else {
        panic!()
    };
    let e = export_text(
        AWS,
        "f",
        Format::AwsConfig,
        &sel(Format::AwsConfig, "legacy-tools"),
        &Wanted::Layer(m),
    )
    .unwrap();
    assert_eq!(
        changed_lines(AWS, &e.after),
        [("retry_mode = legacy".into(), "retry_mode = standard".into())]
    );
    // A key the profile lacks is added after its last setting (here
    // after the indented s3 block), comments kept.
    let out = export(
        Format::AwsConfig,
        "dev",
        &[("retry.max_attempts", json!(5))],
    )
    .unwrap();
    assert_eq!(out, format!("{AWS}max_attempts = 5\n"));
    let out = export(
        Format::AwsConfig,
        "orders-prod",
        &[
            ("retry.backoff.base", json!("50ms")),
            ("retry.backoff.throttle_base", json!("1s")),
            ("retry.retry_after", json!("aws_clamp")),
            ("retry.budget.retry_cost", json!(14)),
            ("retry.budget.timeout_cost", json!(14)),
        ],
    );
    // aws-standard-2.1 is not a retry_mode.
    let e = out.unwrap_err();
    assert!(
        e[0].contains("holds only retry_mode and max_attempts"),
        "{e:?}"
    );
    let legacy = export(
        Format::AwsConfig,
        "batch",
        &[
            ("retry.max_attempts", json!(2)),
            ("throttle", Value::Null),
            ("retry.budget", Value::Null),
            (
                "retry.retry_on",
                json!(["timeout", "connection", 429, 500, 502, 503, 504, 509]),
            ),
            ("retry.backoff.cap", Value::Null),
        ],
    )
    .unwrap();
    assert_eq!(
        changed_lines(AWS, &legacy.replace("max_attempts = 2\n", "")),
        [("retry_mode = adaptive".into(), "retry_mode = legacy".into())]
    );
    assert!(
        legacy.contains("retry_mode = legacy\ndefaults_mode = in-region\nmax_attempts = 2\n"),
        "{legacy}"
    );
}

// ------------------------------------------- shared text, selection, defaults

/// Exports `sets` into `src` (format `format`, selector value as `sel`).
fn export_in(
    src: &str,
    format: Format,
    value: &str,
    sets: &[(&str, Value)],
) -> Result<super::write::Exported, Vec<String>> {
    let sets = sets
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect();
    export_text(src, "f", format, &sel(format, value), &Wanted::Sets(sets))
        .map_err(|e| e.iter().map(ToString::to_string).collect())
}

fn import_in(src: &str, format: Format, value: &str) -> Result<Policy, Vec<String>> {
    import_text(src, "f", format, &sel(format, value))
        .map_err(|e| e.iter().map(ToString::to_string).collect())
}

/// An anchored YAML node that an alias elsewhere reads is text two
/// policies share: an export that would edit it is refused (naming the
/// aliases and the way out) in every YAML format, and nothing is
/// written; a policy that has the text alone is still edited.
#[test]
fn yaml_export_refuses_to_edit_an_anchor_that_aliases_read() {
    let envoy = "\
static_resources:
  clusters: []
route_config:
  virtual_hosts:
    - name: shop
      domains: [\"*\"]
      routes:
        - name: pay
          match: { prefix: /pay }
          route:
            cluster: pay
            retry_policy: &shared
              retry_on: connect-failure
              num_retries: 1
        - name: refund
          match: { prefix: /refund }
          route:
            cluster: pay
            retry_policy: *shared
";
    let e = export_in(
        envoy,
        Format::EnvoyRoute,
        "pay",
        &[("retry.max_attempts", json!(4))],
    )
    .unwrap_err();
    assert!(
        e[0].contains("inside the YAML anchor `&shared` (line 12, column 27)")
            && e[0].contains("the alias `*shared` also reads (line 19, column 27)")
            && e[0].contains("Give this policy its own copy first"),
        "{e:?}"
    );
    // Adding a key to the anchored mapping is refused too.
    let e = export_in(
        envoy,
        Format::EnvoyRoute,
        "pay",
        &[("timeout", json!("2s"))],
    )
    .unwrap_err();
    assert!(e[0].contains("anchor `&shared`"), "{e:?}");
    // An anchor nothing aliases is an ordinary value.
    let alone = envoy.replace(
        "retry_policy: *shared",
        "retry_policy: { num_retries: 1, retry_on: connect-failure }",
    );
    let out = export_in(
        &alone,
        Format::EnvoyRoute,
        "pay",
        &[("retry.max_attempts", json!(4))],
    )
    .unwrap();
    assert!(out.after.contains("num_retries: 3"), "{}", out.after);

    let istio = "\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: shop }
spec:
  hosts: [shop]
  http:
  - name: browse
    route: [ { destination: { host: shop } } ]
    retries: { attempts: &tries 2, retryOn: connect-failure }
  - name: search
    route: [ { destination: { host: shop } } ]
    retries: { attempts: *tries, retryOn: connect-failure }
";
    let e = export_in(
        istio,
        Format::IstioVirtualservice,
        "shop#browse",
        &[("retry.max_attempts", json!(5))],
    )
    .unwrap_err();
    assert!(
        e[0].contains("anchor `&tries` (line 9, column 26)") && e[0].contains("line 12, column 26"),
        "{e:?}"
    );

    let r4j = "\
resilience4j:
  retry:
    instances:
      orders: &base
        maxAttempts: 3
        waitDuration: 200ms
      invoices: *base
";
    let e = export_in(
        r4j,
        Format::Resilience4j,
        "orders",
        &[("retry.max_attempts", json!(5))],
    )
    .unwrap_err();
    assert!(
        e[0].contains("anchor `&base`") && e[0].contains("line 7"),
        "{e:?}"
    );

    let linkerd = "\
apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata: { name: shop.default.svc.cluster.local }
spec:
  routes:
    - name: list
      condition: { method: GET, pathRegex: /items }
      timeout: &t 2s
    - name: get
      condition: { method: GET, pathRegex: '/items/[^/]*' }
      timeout: *t
";
    let e = export_in(
        linkerd,
        Format::LinkerdServiceprofile,
        "list",
        &[("total_timeout", json!("5s"))],
    )
    .unwrap_err();
    assert!(
        e[0].contains("anchor `&t`") && e[0].contains("line 11"),
        "{e:?}"
    );
}

/// A value a `<<` merge key brings into a Resilience4j instance is
/// written as a key of the instance itself (which overrides the merged
/// one), leaving the anchor the other instances merge as it was.
#[test]
fn resilience4j_export_overrides_a_merged_value_in_the_instance() {
    let src = "\
defaults: &defaults
  maxAttempts: 2
  waitDuration: 100ms
resilience4j:
  retry:
    instances:
      orders:
        <<: *defaults
        waitDuration: 300ms
      invoices:
        <<: *defaults
";
    let out = export_in(
        src,
        Format::Resilience4j,
        "orders",
        &[("retry.max_attempts", json!(4))],
    )
    .unwrap();
    assert_eq!(
        out.after,
        src.replace(
            "        waitDuration: 300ms\n",
            "        waitDuration: 300ms\n        maxAttempts: 4\n"
        )
    );
    let p = import_in(&out.after, Format::Resilience4j, "invoices").unwrap();
    has(&p, &["retry.max_attempts=2.0"]);
}

/// gRPC: a method that takes its service's default, or every method's
/// (`{}`), gets an entry of its own (a copy of the shared one, complete,
/// with the change), so no other method changes; import then picks the
/// new entry (the most specific name), and nothing is inherited.
#[test]
fn grpc_export_for_one_method_does_not_edit_a_shared_entry() {
    let src = r#"{
  "methodConfig": [
    {
      "name": [ { "service": "shop.Cart" } ],
      "timeout": "2s",
      "retryPolicy": {
        "maxAttempts": 3,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": [ "UNAVAILABLE" ]
      }
    },
    { "name": [ {} ], "timeout": "10s" }
  ]
}
"#;
    let out = export_in(
        src,
        Format::GrpcServiceConfig,
        "shop.Cart/Add",
        &[("retry.max_attempts", json!(4))],
    )
    .unwrap();
    assert!(
        out.after
            .starts_with(&src[..src.find("    { \"name\": [ {} ]").unwrap()])
    );
    assert!(
        out.after.contains("    { \"name\": [ {} ], \"timeout\": \"10s\" },\n    {\n      \"name\": [{\"service\": \"shop.Cart\", \"method\": \"Add\"}],\n      \"timeout\": \"2s\",\n      \"retryPolicy\": {\n        \"maxAttempts\": 4,"),
        "{}",
        out.after
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("the service's default")),
        "{:?}",
        out.notes
    );
    // The other methods of the service keep 3 attempts.
    let other = import_in(&out.after, Format::GrpcServiceConfig, "shop.Cart/Remove").unwrap();
    has(&other, &["retry.max_attempts=3.0"]);
    let mine = import_in(&out.after, Format::GrpcServiceConfig, "shop.Cart/Add").unwrap();
    has(&mine, &["retry.max_attempts=4.0", "total_timeout=\"2s\""]);
    // Every method's default: a `{service, method}` entry, the `{}` one kept.
    let out = export_in(
        src,
        Format::GrpcServiceConfig,
        "shop.Pay/Charge",
        &[("total_timeout", json!("3s"))],
    )
    .unwrap();
    assert!(
        out.after
            .contains("{ \"name\": [ {} ], \"timeout\": \"10s\" }"),
        "{}",
        out.after
    );
    assert!(
        out.after.contains("{ \"name\": [{\"service\": \"shop.Pay\", \"method\": \"Charge\"}], \"timeout\": \"3s\" }"),
        "{}",
        out.after
    );
    let other = import_in(&out.after, Format::GrpcServiceConfig, "shop.Pay/Refund").unwrap();
    has(&other, &["total_timeout=\"10s\""]);
    // The service's own default is the service's to change.
    let out = export_in(
        src,
        Format::GrpcServiceConfig,
        "shop.Cart",
        &[("total_timeout", json!("4s"))],
    )
    .unwrap();
    assert_eq!(
        out.after,
        src.replace("\"timeout\": \"2s\"", "\"timeout\": \"4s\"")
    );
}

/// grpc-go refuses a service config that gives one name twice, in two
/// entries or in one entry's list (errDuplicatedName), whichever method
/// is asked for.
#[test]
fn grpc_a_name_given_twice_anywhere_is_an_error() {
    let one = r#"{"methodConfig": [
  {"name": [{"service": "a.A", "method": "X"}, {"service": "a.A", "method": "X"}], "timeout": "1s"},
  {"name": [{"service": "b.B"}], "timeout": "2s"}
]}"#;
    for method in ["a.A/X", "b.B/Y"] {
        let e = import_in(one, Format::GrpcServiceConfig, method).unwrap_err();
        assert!(
            e[0].contains("methodConfig[0].name[1]") && e[0].contains("duplicated name"),
            "{method}: {e:?}"
        );
    }
}

/// Istio's default policy (no `retries` block, or one without `retryOn`)
/// has retried no status code since istio/istio PR #52111: of its
/// conditions only connection failures meet an HTTP response.
#[test]
fn istio_default_retry_policy_retries_no_503() {
    let src = "\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: pay }
spec:
  hosts: [pay]
  http:
  - name: plain
    route: [ { destination: { host: pay } } ]
  - name: counted
    route: [ { destination: { host: pay } } ]
    retries: { attempts: 4 }
";
    for (route, attempts) in [("pay#plain", "3.0"), ("pay#counted", "5.0")] {
        let p = import_in(src, Format::IstioVirtualservice, route).unwrap();
        has(
            &p,
            &[
                &format!("retry.max_attempts={attempts}"),
                "retry.retry_on=[\"connection\"]",
            ],
        );
        assert!(
            p.warnings.iter().any(|w| w
                .message
                .contains("gRPC statuses UNAVAILABLE and CANCELLED")),
            "{:?}",
            p.warnings
        );
    }
    // Retrying 503 on top of the default writes it as a status code.
    let out = export_in(
        src,
        Format::IstioVirtualservice,
        "pay#counted",
        &[("retry.retry_on", json!(["connection", 503]))],
    )
    .unwrap();
    let p = import_in(&out.after, Format::IstioVirtualservice, "pay#counted").unwrap();
    has(&p, &["retry.retry_on=[\"503\",\"connection\"]"]);
}

/// Envoy: a route's `priority: HIGH` takes the cluster's HIGH thresholds,
/// and Envoy's defaults when the cluster has none for HIGH.
#[test]
fn envoy_route_priority_picks_the_thresholds() {
    let src = "\
static_resources:
  listeners: []
  clusters:
    - name: api
      circuit_breakers:
        thresholds:
          - priority: DEFAULT
            max_retries: 2
            max_requests: 64
          - priority: HIGH
            max_retries: 20
            max_requests: 512
    - name: lone
      circuit_breakers:
        thresholds:
          - max_retries: 7
route_config:
  virtual_hosts:
    - name: v
      domains: [\"*\"]
      routes:
        - name: normal
          match: { prefix: /n }
          route: { cluster: api }
        - name: urgent
          match: { prefix: /u }
          route: { cluster: api, priority: HIGH }
        - name: urgent-lone
          match: { prefix: /l }
          route: { cluster: lone, priority: HIGH }
";
    let p = import_in(src, Format::EnvoyRoute, "normal").unwrap();
    has(
        &p,
        &[
            "retry.budget.max_retries=2.0",
            "bulkhead.max_concurrent=64.0",
        ],
    );
    let p = import_in(src, Format::EnvoyRoute, "urgent").unwrap();
    has(
        &p,
        &[
            "retry.budget.max_retries=20.0",
            "bulkhead.max_concurrent=512.0",
        ],
    );
    let p = import_in(src, Format::EnvoyRoute, "urgent-lone").unwrap();
    has(
        &p,
        &[
            "retry.budget.max_retries=3.0",
            "bulkhead.max_concurrent=1024.0",
        ],
    );
    // Export edits the HIGH thresholds.
    let out = export_in(
        src,
        Format::EnvoyRoute,
        "urgent",
        &[("bulkhead.max_concurrent", json!(300))],
    )
    .unwrap();
    assert_eq!(
        out.after,
        src.replace("max_requests: 512", "max_requests: 300")
    );
    let e = import_in(
        &src.replace("priority: HIGH }", "priority: URGENT }"),
        Format::EnvoyRoute,
        "urgent",
    )
    .unwrap_err();
    assert!(e[0].contains("expected DEFAULT or HIGH"), "{e:?}");
}

/// A weighted route whose clusters this file gives circuit breakers: an
/// error naming the key (which cluster's to simulate changes results).
#[test]
fn envoy_weighted_clusters_with_breakers_are_an_error() {
    let src = "\
static_resources:
  clusters:
    - name: blue
      circuit_breakers: { thresholds: [ { max_retries: 1 } ] }
route_config:
  virtual_hosts:
    - name: v
      domains: [\"*\"]
      routes:
        - name: split
          match: { prefix: / }
          route:
            weighted_clusters:
              clusters: [ { name: blue, weight: 90 }, { name: green, weight: 10 } ]
";
    let e = import_in(src, Format::EnvoyRoute, "split").unwrap_err();
    assert!(
        e[0].contains("routes[0].route.weighted_clusters") && e[0].contains("cluster `blue`"),
        "{e:?}"
    );
    // Clusters the file does not define: Envoy's defaults, a warning.
    let p = import_in(
        &src.replace("name: blue, weight", "name: teal, weight"),
        Format::EnvoyRoute,
        "split",
    )
    .unwrap();
    assert!(
        p.warnings
            .iter()
            .any(|w| w.key.ends_with("weighted_clusters"))
    );
}

/// A `baseConfig` chain that comes back to itself never ends in
/// Resilience4j (StackOverflowError at startup): an error.
#[test]
fn resilience4j_circular_base_config_is_an_error() {
    let src = "\
resilience4j:
  retry:
    configs:
      left: { baseConfig: right, maxAttempts: 2 }
      right: { baseConfig: left }
    instances:
      api: { baseConfig: left }
";
    let e = import_in(src, Format::Resilience4j, "api").unwrap_err();
    assert!(
        e.iter()
            .any(|e| e.contains("goes round in a circle (instances.api → left → right → left)")),
        "{e:?}"
    );
}

/// YAML values written into a flow mapping or list are quoted when a
/// plain scalar there would end early (`,` `:` `[` `]` `{` `}`), also
/// when an inherited policy is copied into a flow route.
#[test]
fn yaml_export_quotes_what_a_flow_collection_needs() {
    let istio = "\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: pay }
spec:
  hosts: [pay]
  http:
  - { name: one, route: [ { destination: { host: pay } } ], retries: { attempts: 2, retryOn: reset } }
";
    let out = export_in(
        istio,
        Format::IstioVirtualservice,
        "pay#one",
        &[("retry.retry_on", json!(["connection", 429, 503]))],
    )
    .unwrap();
    assert!(
        out.after.contains("retryOn: \"connect-failure,429,503\" }"),
        "{}",
        out.after
    );
    let envoy = "\
route_config:
  virtual_hosts:
    - name: v
      domains: [\"*\"]
      retry_policy: { retry_on: \"5xx,reset\", num_retries: 1 }
      routes:
        - name: all
          match: { prefix: / }
          route: { cluster: c }
";
    let out = export_in(
        envoy,
        Format::EnvoyRoute,
        "all",
        &[("retry.max_attempts", json!(3))],
    )
    .unwrap();
    assert!(
        out.after.contains(
            "route: { cluster: c, retry_policy: { retry_on: \"5xx,reset\", num_retries: 2 } }"
        ),
        "{}",
        out.after
    );
}

/// A block scalar (`|`, `>-`) edited: its content line is replaced, its
/// header and whatever follows it (a key, a comment, a blank line, the
/// file's last line break) stay.
#[test]
fn yaml_export_edits_a_block_scalar_in_place() {
    let head = "\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: pay }
spec:
  hosts: [pay]
  http:
  - route: [ { destination: { host: pay } } ]
    retries:
      attempts: 3
";
    let want = [(
        "retry.retry_on",
        json!(["connection", 502, 503, 504, "timeout"]),
    )];
    for (block, after) in [
        (
            "      retryOn: |\n        reset\n    timeout: 5s\n",
            "      retryOn: |\n        reset,502,503,504\n    timeout: 5s\n",
        ),
        (
            "      retryOn: >-\n        reset,\n        connect-failure\n      # keep\n\n    timeout: 5s\n",
            "      retryOn: >-\n        reset,connect-failure,502,503,504\n      # keep\n\n    timeout: 5s\n",
        ),
        (
            "      retryOn: >-\n        reset\n",
            "      retryOn: >-\n        reset,502,503,504\n",
        ),
    ] {
        let src = format!("{head}{block}");
        let out = export_in(&src, Format::IstioVirtualservice, "pay", &want)
            .unwrap_or_else(|e| panic!("{block}: {e:?}"));
        assert_eq!(out.after, format!("{head}{after}"), "{block}");
    }
}

/// grpc-go takes any maxTokens in (0, 1000], fractions included.
#[test]
fn grpc_max_tokens_may_be_a_fraction() {
    let src = GRPC.replace("\"maxTokens\": 10", "\"maxTokens\": 0.5");
    let p = import_in(
        &src,
        Format::GrpcServiceConfig,
        "orders.v1.Orders/CreateOrder",
    )
    .unwrap();
    has(&p, &["retry.budget.max_tokens=0.5"]);
}

/// A value not given that the edit changes all the same (an Istio block
/// without `attempts` ignores its retryOn and perTryTimeout until
/// `attempts` is written): the message names it and says to give it.
#[test]
fn export_names_the_values_to_give_with_the_one_given() {
    let src = "\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: cart }
spec:
  hosts: [cart]
  http:
  - name: cart
    route: [ { destination: { host: cart } } ]
    retries: { perTryTimeout: 1s, retryOn: connect-failure }
";
    let e = export_in(
        src,
        Format::IstioVirtualservice,
        "cart",
        &[("retry.max_attempts", json!(3))],
    )
    .unwrap_err();
    assert!(
        e.iter().any(|e| e.contains(
            "retry.retry_on: not given, but the change would make the file give [\"connection\"]"
        ) && e.contains("Give `retry.retry_on` too")),
        "{e:?}"
    );
    let out = export_in(
        src,
        Format::IstioVirtualservice,
        "cart",
        &[
            ("retry.max_attempts", json!(3)),
            ("retry.retry_on", json!(["connection"])),
            ("timeout", json!("1s")),
        ],
    )
    .unwrap();
    assert!(
        out.after
            .contains("retries: { perTryTimeout: 1s, retryOn: connect-failure, attempts: 2 }"),
        "{}",
        out.after
    );
}

const R4J_INHERITED: &str = "resilience4j:
  retry:
    configs:
      default:
        max-attempts: 4
        wait-duration: 1s
    instances:
      billing:
        max-attempts: 2
      tax:
        wait-duration: 500ms
";

/// A randomized wait written into an instance that inherits its
/// waitDuration would not be used (Resilience4j builds the interval
/// where waitDuration is written): the wait is written too, in the
/// file's duration style (`1s`, never the bare `1000` that the
/// instance's `max-attempts: 2` would suggest).
#[test]
fn resilience4j_export_jitter_with_an_inherited_wait() {
    let s = sel(Format::Resilience4j, "billing");
    let out = export_text(
        R4J_INHERITED,
        "f",
        Format::Resilience4j,
        &s,
        &Wanted::Sets(vec![(
            "retry.jitter".into(),
            json!({ "proportional": 0.2 }),
        )]),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        out.after.contains(
            "        max-attempts: 2\n        wait-duration: 1s\n        enable-randomized-wait: true\n        randomized-wait-factor: 0.2\n"
        ),
        "{}",
        out.after
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("inherited its waitDuration")),
        "{:?}",
        out.notes
    );
    let back = import_text(&out.after, "f", Format::Resilience4j, &s).unwrap();
    has(
        &back,
        &["retry.jitter.proportional=0.2", "retry.backoff.base=\"1s\""],
    );
    let out = export_text(
        R4J_INHERITED,
        "f",
        Format::Resilience4j,
        &s,
        &Wanted::Sets(vec![("retry.backoff.base".into(), json!("1100ms"))]),
    )
    .unwrap();
    assert!(
        out.after.contains("        wait-duration: 1100ms\n"),
        "{}",
        out.after
    );
}

#[test]
fn resilience4j_placeholders_read_as_their_defaults() {
    let text = "resilience4j.retry.instances:
  placeholder:
    maxAttempts: ${RETRY_ATTEMPTS:2}
    waitDuration: ${RETRY_WAIT:750ms}
  bare:
    maxAttempts: ${RETRY_ATTEMPTS}
";
    let s = sel(Format::Resilience4j, "placeholder");
    let p = import_text(text, "f", Format::Resilience4j, &s).unwrap_or_else(|e| panic!("{e:?}"));
    has(
        &p,
        &["retry.max_attempts=2.0", "retry.backoff.base=\"750ms\""],
    );
    assert!(
        p.warnings.iter().any(|w| w
            .message
            .contains("`${RETRY_ATTEMPTS:2}` read as its default `2`")
            && w.message.contains("RETRY_ATTEMPTS")
            && w.pos == Some((3, 18))),
        "{:?}",
        p.warnings
    );
    let e: Vec<String> = import_text(
        text,
        "f",
        Format::Resilience4j,
        &sel(Format::Resilience4j, "bare"),
    )
    .unwrap_err()
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("f:6:18"), "{e:?}");
    assert!(e[0].contains("maxAttempts"), "{e:?}");
    assert!(e[0].contains("Spring placeholder with no default"), "{e:?}");
    // Export does not turn a placeholder into a literal.
    let e = export_text(
        text,
        "f",
        Format::Resilience4j,
        &s,
        &Wanted::Sets(vec![("retry.max_attempts".into(), json!(3))]),
    )
    .unwrap_err();
    assert!(e[0].to_string().contains("Spring placeholder"), "{e:?}");
}

/// A key added after the last one leaves that key's `// comment` with it.
#[test]
fn json_export_keeps_the_last_keys_comment_on_its_line() {
    let text = "{\n  \"Svc\": {\n    \"Retry\": {\n      \"Delay\": \"00:00:01\", // one second\n    },\n    \"AttemptTimeout\": {\n      \"Timeout\": \"00:00:02\" /* per try */\n    }\n  }\n}\n";
    let out = export_text(
        text,
        "f",
        Format::MsResilience,
        &sel(Format::MsResilience, "Svc"),
        &Wanted::Sets(vec![("retry.max_attempts".into(), json!(2))]),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        out.after.contains(
            "      \"Delay\": \"00:00:01\", // one second\n      \"MaxRetryAttempts\": 1,\n    },"
        ),
        "{}",
        out.after
    );
    // Without a trailing comma, one is added before the comment.
    let text = text.replace("\"00:00:01\", //", "\"00:00:01\" //");
    let out = export_text(
        &text,
        "f",
        Format::MsResilience,
        &sel(Format::MsResilience, "Svc"),
        &Wanted::Sets(vec![("retry.max_attempts".into(), json!(2))]),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        out.after.contains(
            "      \"Delay\": \"00:00:01\", // one second\n      \"MaxRetryAttempts\": 1\n    },"
        ),
        "{}",
        out.after
    );
}

/// Valid TimeSpan text out of Polly's range is said to be that, not "not
/// a TimeSpan".
#[test]
fn ms_resilience_a_timespan_out_of_range_is_not_a_syntax_error() {
    let e = ms_errors(r#"{ "S": { "Retry": { "Delay": "-00:00:01" } } }"#, "S");
    assert!(
        e[0].contains("a negative TimeSpan (TimeSpan.Parse reads it)"),
        "{e:?}"
    );
    assert!(e[0].contains("the range Polly validates"), "{e:?}");
    assert!(!e[0].contains("expected a .NET TimeSpan"), "{e:?}");
    let e = ms_errors(
        r#"{ "S": { "Retry": { "Delay": "10675199.02:48:05.4775807" } } }"#,
        "S",
    );
    assert!(e[0].contains("a valid TimeSpan, but outside"), "{e:?}");
    let e = ms_errors(r#"{ "S": { "Retry": { "Delay": "soon" } } }"#, "S");
    assert!(e[0].contains("expected a .NET TimeSpan"), "{e:?}");
}
