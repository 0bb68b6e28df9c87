//! Review 10 (D5, D6): an exported duration is written in the style of
//! the value it replaces or inherits (a bare number of milliseconds stays
//! a bare number, ISO-8601 stays ISO, fixed decimals stay fixed, a unit
//! stays), and an exported setting that is not the selected policy's own
//! (gRPC `retryThrottling`, Linkerd `retryBudget`, an Envoy cluster's
//! circuit breakers, retry budget and outlier detection) says on a note
//! what else it changes. Each format has a realistic fixture with
//! comments and unrelated keys; every test checks the exact lines that
//! change (every other byte is kept), and import → export → import.

use serde_json::{Value, json};

use super::write::{Wanted, export_text};
use super::*;

fn import(text: &str, format: Format, s: &Selector) -> Policy {
    import_text(text, "f", format, s).unwrap_or_else(|e| {
        panic!(
            "{}",
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

/// The file after exporting `sets`, and the notes.
fn export(
    text: &str,
    format: Format,
    s: &Selector,
    sets: &[(&str, Value)],
) -> (String, Vec<String>) {
    let sets = sets
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect();
    export_text(text, "f", format, s, &Wanted::Sets(sets))
        .map(|e| (e.after, e.notes))
        .unwrap_or_else(|e| {
            panic!(
                "{}",
                e.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
}

/// The lines removed and the lines added, in order (a line-by-line
/// comparison after the common start and end): every other byte of the
/// file is the same.
fn diff(a: &str, b: &str) -> (Vec<String>, Vec<String>) {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.split('\n').collect(), b.split('\n').collect());
    let head = la.iter().zip(&lb).take_while(|(x, y)| x == y).count();
    let tail = la[head..]
        .iter()
        .rev()
        .zip(lb[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (
        la[head..la.len() - tail]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        lb[head..lb.len() - tail]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    )
}

fn lines(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The value import gives for a leaf, as text.
fn leaf(p: &Policy, path: &str) -> String {
    get_path(&p.fragment, path)
        .map(|v| match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        })
        .unwrap_or_else(|| panic!("no {path} in {:?}", p.fragment))
}

/// Import, export exactly what was imported: nothing changes.
fn identity(text: &str, format: Format, s: &Selector) {
    let p = import(text, format, s);
    let mut layer = p.fragment.clone();
    layer.insert("name".into(), json!("x"));
    let layer: crate::scenario::types::Layer =
        serde_json::from_value(Value::Object(layer)).unwrap();
    let Value::Object(m) = serde_json::to_value(&layer).unwrap() else {
        panic!()
    };
    let out =
        export_text(text, "f", format, s, &Wanted::Layer(m)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out.after, text);
}

// ------------------------------------------------------------ Resilience4j

const R4J: &str = "# checkout-service: Spring Boot settings (prod profile overrides below).
spring:
  application:
    name: checkout-service

resilience4j:
  retry:
    configs:
      default:
        maxAttempts: 3
        waitDuration: PT2S        # ISO-8601, as the platform starter writes it
    instances:
      inventory:
        baseConfig: default
        maxAttempts: 4
      payments:
        maxAttempts: 2
        waitDuration: 100         # bare number: milliseconds
      shipping:
        maxAttempts: 3
        waitDuration: \"250\"
      pricing:
        maxAttempts: 3
        waitDuration: 500ms
  timelimiter:
    instances:
      payments:
        timeoutDuration: 2500     # ms
  circuitbreaker:
    instances:
      payments:
        slidingWindowSize: 20
        minimumNumberOfCalls: 10
        failureRateThreshold: 50
        waitDurationInOpenState: PT30S

management:
  endpoints:
    web:
      exposure:
        include: health,info
";

fn instance(n: &str) -> Selector {
    Selector {
        instance: Some(n.into()),
        ..Selector::default()
    }
}

#[test]
fn resilience4j_a_bare_millisecond_wait_stays_a_bare_number() {
    let s = instance("payments");
    let (after, _) = export(
        R4J,
        Format::Resilience4j,
        &s,
        &[("retry.backoff.base", json!("200ms"))],
    );
    assert_eq!(
        diff(R4J, &after),
        (
            lines(&["        waitDuration: 100         # bare number: milliseconds"]),
            lines(&["        waitDuration: 200         # bare number: milliseconds"]),
        )
    );
    assert_eq!(
        leaf(
            &import(&after, Format::Resilience4j, &s),
            "retry.backoff.base"
        ),
        "200ms"
    );
    identity(&after, Format::Resilience4j, &s);
    identity(R4J, Format::Resilience4j, &s);
}

#[test]
fn resilience4j_a_quoted_number_stays_quoted_and_a_unit_stays() {
    let (after, _) = export(
        R4J,
        Format::Resilience4j,
        &instance("shipping"),
        &[("retry.backoff.base", json!("1s"))],
    );
    assert_eq!(
        diff(R4J, &after),
        (
            lines(&["        waitDuration: \"250\""]),
            lines(&["        waitDuration: \"1000\""]),
        )
    );
    let (after, _) = export(
        R4J,
        Format::Resilience4j,
        &instance("pricing"),
        &[("retry.backoff.base", json!("1s"))],
    );
    assert_eq!(
        diff(R4J, &after),
        (
            lines(&["        waitDuration: 500ms"]),
            lines(&["        waitDuration: 1000ms"]),
        )
    );
    identity(&after, Format::Resilience4j, &instance("pricing"));
}

#[test]
fn resilience4j_a_wait_inherited_in_iso_is_written_in_iso_into_the_instance() {
    let s = instance("inventory");
    let (after, notes) = export(
        R4J,
        Format::Resilience4j,
        &s,
        &[("retry.backoff.base", json!("200ms"))],
    );
    // One line added to the instance; the shared configs.default, which
    // other instances read, keeps its PT2S.
    assert_eq!(
        diff(R4J, &after),
        (lines(&[]), lines(&["        waitDuration: PT0.2S"]),)
    );
    assert!(after.contains("        waitDuration: PT2S        # ISO-8601"));
    let p = import(&after, Format::Resilience4j, &s);
    assert_eq!(leaf(&p, "retry.backoff.base"), "200ms");
    assert!(
        notes.iter().any(|n| n.contains("inherited waitDuration from resilience4j.retry.configs.default (line 11); the new value is written into the instance, so configs.default is not changed")
            && !n.contains("payments")),
        "{notes:?}"
    );
    // Another instance taking its wait from configs.default is named.
    let two = R4J.replace("      payments:\n        maxAttempts: 2\n        waitDuration: 100         # bare number: milliseconds\n", "      payments:\n        maxAttempts: 2\n");
    assert_ne!(two, R4J);
    let (_, notes) = export(
        &two,
        Format::Resilience4j,
        &s,
        &[("retry.backoff.base", json!("200ms"))],
    );
    assert!(
        notes.iter().any(|n| n.ends_with("configs.default is not changed: the instance `payments`, which also takes waitDuration from it, keeps the old value")),
        "{notes:?}"
    );
    identity(&after, Format::Resilience4j, &s);
}

#[test]
fn resilience4j_time_limiter_and_breaker_durations_keep_their_style() {
    let s = instance("payments");
    let (after, _) = export(
        R4J,
        Format::Resilience4j,
        &s,
        &[
            ("timeout", json!("1500ms")),
            ("breaker.open_for", json!("1m")),
        ],
    );
    assert_eq!(
        diff(R4J, &after),
        (
            lines(&[
                "        timeoutDuration: 2500     # ms",
                "  circuitbreaker:",
                "    instances:",
                "      payments:",
                "        slidingWindowSize: 20",
                "        minimumNumberOfCalls: 10",
                "        failureRateThreshold: 50",
                "        waitDurationInOpenState: PT30S",
            ]),
            lines(&[
                "        timeoutDuration: 1500     # ms",
                "  circuitbreaker:",
                "    instances:",
                "      payments:",
                "        slidingWindowSize: 20",
                "        minimumNumberOfCalls: 10",
                "        failureRateThreshold: 50",
                "        waitDurationInOpenState: PT1M",
            ]),
        )
    );
    let p = import(&after, Format::Resilience4j, &s);
    assert_eq!(leaf(&p, "timeout"), "1500ms");
    assert_eq!(leaf(&p, "breaker.open_for"), "1m");
}

// ---------------------------------------------------------------- gRPC

/// Strict JSON, as gRPC reads it (no comments): written by a generator
/// that prints durations with three decimals, and one as an object.
const GRPC: &str = r#"{
  "loadBalancingConfig": [{ "round_robin": {} }],
  "methodConfig": [
    {
      "name": [{ "service": "shop.cart.v1.Cart", "method": "GetCart" }],
      "timeout": { "seconds": 2, "nanos": 0 },
      "retryPolicy": {
        "maxAttempts": 3,
        "initialBackoff": "0.100s",
        "maxBackoff": "1.000s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]
      }
    },
    {
      "name": [
        { "service": "shop.cart.v1.Cart", "method": "AddItem" },
        { "service": "shop.checkout.v1.Checkout" }
      ],
      "timeout": "5s"
    }
  ],
  "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
}
"#;

fn method(m: &str) -> Selector {
    Selector {
        method: Some(m.into()),
        ..Selector::default()
    }
}

#[test]
fn grpc_durations_keep_their_decimals_and_object_form() {
    let s = method("shop.cart.v1.Cart/GetCart");
    let (after, _) = export(
        GRPC,
        Format::GrpcServiceConfig,
        &s,
        &[
            ("retry.backoff.base", json!("250ms")),
            ("retry.backoff.cap", json!("2s")),
            ("total_timeout", json!("2500ms")),
        ],
    );
    assert_eq!(
        diff(GRPC, &after),
        (
            lines(&[
                r#"      "timeout": { "seconds": 2, "nanos": 0 },"#,
                r#"      "retryPolicy": {"#,
                r#"        "maxAttempts": 3,"#,
                r#"        "initialBackoff": "0.100s","#,
                r#"        "maxBackoff": "1.000s","#,
            ]),
            lines(&[
                r#"      "timeout": { "seconds": 2, "nanos": 500000000 },"#,
                r#"      "retryPolicy": {"#,
                r#"        "maxAttempts": 3,"#,
                r#"        "initialBackoff": "0.250s","#,
                r#"        "maxBackoff": "2.000s","#,
            ]),
        )
    );
    let p = import(&after, Format::GrpcServiceConfig, &s);
    assert_eq!(leaf(&p, "retry.backoff.base"), "250ms");
    assert_eq!(leaf(&p, "retry.backoff.cap"), "2s");
    assert_eq!(leaf(&p, "total_timeout"), "2500ms");
    identity(&after, Format::GrpcServiceConfig, &s);
    identity(GRPC, Format::GrpcServiceConfig, &s);
}

#[test]
fn grpc_retry_throttling_says_it_is_the_whole_channels() {
    let s = method("shop.cart.v1.Cart/GetCart");
    let (after, notes) = export(
        GRPC,
        Format::GrpcServiceConfig,
        &s,
        &[
            ("retry.budget.kind", json!("token_bucket")),
            ("retry.budget.max_tokens", json!(20)),
        ],
    );
    assert_eq!(
        diff(GRPC, &after),
        (
            lines(&[r#"  "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }"#]),
            lines(&[r#"  "retryThrottling": { "maxTokens": 20, "tokenRatio": 0.1 }"#]),
        )
    );
    let note = notes
        .iter()
        .find(|n| n.starts_with("retryThrottling is the channel's"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(
        note.contains("every method of this service config")
            && note.contains("`shop.cart.v1.Cart/AddItem`, `shop.checkout.v1.Checkout/*`")
            && !note.contains("GetCart/"),
        "{note}"
    );
    // A method-local change says nothing of the kind.
    let (_, notes) = export(
        GRPC,
        Format::GrpcServiceConfig,
        &s,
        &[("retry.max_attempts", json!(4))],
    );
    assert!(
        !notes.iter().any(|n| n.contains("retryThrottling")),
        "{notes:?}"
    );
}

// ---------------------------------------------------------------- Envoy

const ENVOY: &str = "# Sidecar route table for the catalog service (xDS static snapshot).
static_resources:
  listeners:
    - name: inbound_http
      address:
        socket_address: { address: 0.0.0.0, port_value: 8080 }
      filter_chains:
        - filters:
            - name: envoy.filters.network.http_connection_manager
              typed_config:
                \"@type\": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                stat_prefix: inbound_http
                route_config:
                  name: catalog_routes
                  virtual_hosts:
                    - name: catalog
                      domains: [\"catalog.internal\"]
                      routes:
                        - name: search
                          match: { prefix: \"/search\" }
                          route:
                            cluster: catalog
                            timeout: 2.000s
                            retry_policy:
                              retry_on: 5xx,reset
                              num_retries: 2
                              per_try_timeout: 0.500s   # fixed width, like the generator
                              retry_back_off:
                                base_interval: 0.025s
                        - name: item
                          match: { prefix: \"/items/\" }
                          route: { cluster: catalog, timeout: 1s }
                        - match: { prefix: \"/\" }
                          route: { cluster: catalog_fallback }
  clusters:
    - name: catalog
      type: STRICT_DNS
      connect_timeout: 0.25s
      circuit_breakers:
        thresholds:
          - priority: DEFAULT
            max_requests: 1000
            retry_budget:
              budget_percent: { value: 20.0 }
              min_retry_concurrency: 3
      outlier_detection:
        consecutive_5xx: 5
        interval: 10.000s
        base_ejection_time: 30.000s
      load_assignment:
        cluster_name: catalog
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
                    socket_address: { address: catalog, port_value: 8080 }
";

fn route(r: &str) -> Selector {
    Selector {
        route: Some(r.into()),
        ..Selector::default()
    }
}

/// An Envoy route as a layer's: the cluster's outlier detection (one host
/// behind a layer) is left out, as the user says.
fn envoy_route(r: &str) -> Selector {
    Selector {
        ignore: vec!["outlier_detection".into()],
        ..route(r)
    }
}

#[test]
fn envoy_durations_keep_their_decimals() {
    let s = envoy_route("search");
    let (after, _) = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[("timeout", json!("750ms")), ("total_timeout", json!("3s"))],
    );
    assert_eq!(
        diff(ENVOY, &after),
        (
            lines(&[
                "                            timeout: 2.000s",
                "                            retry_policy:",
                "                              retry_on: 5xx,reset",
                "                              num_retries: 2",
                "                              per_try_timeout: 0.500s   # fixed width, like the generator",
            ]),
            lines(&[
                "                            timeout: 3.000s",
                "                            retry_policy:",
                "                              retry_on: 5xx,reset",
                "                              num_retries: 2",
                "                              per_try_timeout: 0.750s   # fixed width, like the generator",
            ]),
        )
    );
    let p = import(&after, Format::EnvoyRoute, &s);
    assert_eq!(leaf(&p, "timeout"), "750ms");
    assert_eq!(leaf(&p, "total_timeout"), "3s");
    identity(&after, Format::EnvoyRoute, &s);
    identity(ENVOY, Format::EnvoyRoute, &s);
}

#[test]
fn envoy_cluster_settings_say_which_routes_they_also_change() {
    let s = envoy_route("search");
    let (after, notes) = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[("bulkhead.max_concurrent", json!(500))],
    );
    assert_eq!(
        diff(ENVOY, &after),
        (
            lines(&["            max_requests: 1000"]),
            lines(&["            max_requests: 500"]),
        )
    );
    let note = notes
        .iter()
        .find(|n| n.contains("is the cluster's, not the route's"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(
        note.starts_with("clusters[0].circuit_breakers (cluster `catalog`")
            && note.contains("every route that sends to `catalog`")
            && note.contains("`item` (line 30, virtual host `catalog`)")
            && !note.contains("`search`")
            && !note.contains("`/`"),
        "{note}"
    );
    // The retry budget: the same note, named so.
    let (_, notes) = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[
            ("retry.budget.kind", json!("envoy")),
            ("retry.budget.budget_percent", json!(30.0)),
        ],
    );
    assert!(
        notes.iter().any(|n| n
            .starts_with("clusters[0].circuit_breakers (the retry budget) (cluster `catalog`")
            && n.contains("`item` (line 30")),
        "{notes:?}"
    );
    // A route-local change says nothing of the kind.
    let (_, notes) = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[("retry.max_attempts", json!(4))],
    );
    assert!(
        !notes.iter().any(|n| n.contains("the cluster's")),
        "{notes:?}"
    );
}

#[test]
fn envoy_outlier_detection_of_a_call_keeps_its_style_and_says_it_is_shared() {
    let s = Selector {
        route: Some("item".into()),
        target: Target::Call {
            replicas: Some(4),
            balancer: None,
        },
        ..Selector::default()
    };
    let (after, notes) = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[("outlier_detection.base_ejection", json!("45s"))],
    );
    assert_eq!(
        diff(ENVOY, &after),
        (
            lines(&["        base_ejection_time: 30.000s"]),
            lines(&["        base_ejection_time: 45.000s"]),
        )
    );
    let note = notes
        .iter()
        .find(|n| n.starts_with("clusters[0].outlier_detection (cluster `catalog`"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains("`search` (line 19"), "{note}");
    assert_eq!(
        leaf(
            &import(&after, Format::EnvoyRoute, &s),
            "outlier_detection.base_ejection"
        ),
        "45s"
    );
}

// --------------------------------------------------------------- Linkerd

const LINKERD: &str = "# ServiceProfile for the reviews service, kept beside its Deployment.
apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata:
  name: reviews.bookinfo.svc.cluster.local
  namespace: bookinfo
spec:
  routes:
  - name: GET /reviews/{id}
    condition:
      method: GET
      pathRegex: /reviews/[^/]*
    isRetryable: true
    timeout: 300ms            # p99 is 120ms
  - name: POST /reviews
    condition:
      method: POST
      pathRegex: /reviews
    timeout: 2s
  - name: GET /health
    condition:
      method: GET
      pathRegex: /health
  # One budget for the whole profile.
  retryBudget:
    retryRatio: 0.2
    minRetriesPerSecond: 10
    ttl: 10s
";

#[test]
fn linkerd_durations_keep_their_unit() {
    let s = route("GET /reviews/{id}");
    let (after, _) = export(
        LINKERD,
        Format::LinkerdServiceprofile,
        &s,
        &[("total_timeout", json!("1500ms"))],
    );
    assert_eq!(
        diff(LINKERD, &after),
        (
            lines(&["    timeout: 300ms            # p99 is 120ms"]),
            lines(&["    timeout: 1500ms            # p99 is 120ms"]),
        )
    );
    // A whole number of seconds stays in seconds; a value that is not
    // one takes Go's own spelling.
    let s2 = route("POST /reviews");
    let (after2, _) = export(
        LINKERD,
        Format::LinkerdServiceprofile,
        &s2,
        &[("total_timeout", json!("90s"))],
    );
    assert_eq!(
        diff(LINKERD, &after2),
        (lines(&["    timeout: 2s"]), lines(&["    timeout: 90s"]))
    );
    let (after3, _) = export(
        LINKERD,
        Format::LinkerdServiceprofile,
        &s2,
        &[("total_timeout", json!("200ms"))],
    );
    assert_eq!(
        diff(LINKERD, &after3),
        (lines(&["    timeout: 2s"]), lines(&["    timeout: 200ms"]))
    );
    assert_eq!(
        leaf(
            &import(&after, Format::LinkerdServiceprofile, &s),
            "total_timeout"
        ),
        "1500ms"
    );
    identity(&after, Format::LinkerdServiceprofile, &s);
    identity(LINKERD, Format::LinkerdServiceprofile, &s);
}

#[test]
fn linkerd_retry_budget_says_it_is_the_whole_profiles() {
    let s = route("GET /reviews/{id}");
    let (after, notes) = export(
        LINKERD,
        Format::LinkerdServiceprofile,
        &s,
        &[
            ("retry.budget.kind", json!("finagle")),
            ("retry.budget.ttl", json!("30s")),
        ],
    );
    assert_eq!(
        diff(LINKERD, &after),
        (lines(&["    ttl: 10s"]), lines(&["    ttl: 30s"]))
    );
    let note = notes
        .iter()
        .find(|n| n.starts_with("spec.retryBudget is the ServiceProfile's"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    assert!(
        note.contains("(`reviews.bookinfo.svc.cluster.local`)")
            && note.contains("every route of the profile")
            && note.contains("the routes `POST /reviews`, `GET /health`")
            && !note.contains("`GET /reviews/{id}`"),
        "{note}"
    );
    let (_, notes) = export(
        LINKERD,
        Format::LinkerdServiceprofile,
        &s,
        &[("total_timeout", json!("1s"))],
    );
    assert!(
        !notes.iter().any(|n| n.contains("retryBudget")),
        "{notes:?}"
    );
}

// ---------------------------------------------------------------- Istio

const ISTIO: &str = "# ratings: retries tuned after the March incident.
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings
  namespace: bookinfo
spec:
  hosts:
  - ratings
  http:
  - name: primary
    route:
    - destination:
        host: ratings
        subset: v2
    timeout: 2000ms
    retries:
      attempts: 3
      perTryTimeout: 0.5s
      retryOn: 5xx,reset
";

#[test]
fn istio_durations_keep_their_unit() {
    let s = Selector {
        host: Some("ratings".into()),
        route: Some("primary".into()),
        ..Selector::default()
    };
    let (after, _) = export(
        ISTIO,
        Format::IstioVirtualservice,
        &s,
        &[("total_timeout", json!("3s")), ("timeout", json!("250ms"))],
    );
    assert_eq!(
        diff(ISTIO, &after),
        (
            lines(&[
                "    timeout: 2000ms",
                "    retries:",
                "      attempts: 3",
                "      perTryTimeout: 0.5s",
            ]),
            lines(&[
                "    timeout: 3000ms",
                "    retries:",
                "      attempts: 3",
                "      perTryTimeout: 0.25s",
            ]),
        )
    );
    identity(&after, Format::IstioVirtualservice, &s);
}

// ------------------------------------------------------------ MS (Polly)

const MS: &str = r#"{
  // Written by hand; the resilience pipeline of the payments client.
  "Logging": { "LogLevel": { "Default": "Information" } },
  "HttpClients": {
    "Payments": {
      "Resilience": {
        "Retry": {
          "MaxRetryAttempts": 3,
          "BackoffType": "Exponential",
          "Delay": "0:0:2",
          "MaxDelay": "00:00:30"
        },
        "AttemptTimeout": { "Timeout": "00:00:10.0000000" },
        "TotalRequestTimeout": { "Timeout": "00:01:00" },
        "CircuitBreaker": {
          "FailureRatio": 0.1,
          "MinimumThroughput": 100,
          "SamplingDuration": "00:00:30",
          "BreakDuration": "00:00:05"
        }
      }
    }
  }
}
"#;

#[test]
fn ms_timespans_keep_their_widths_and_decimals() {
    let s = Selector {
        section: Some("HttpClients:Payments:Resilience".into()),
        ..Selector::default()
    };
    let (after, _) = export(
        MS,
        Format::MsResilience,
        &s,
        &[
            ("retry.backoff.base", json!("500ms")),
            ("timeout", json!("2500ms")),
            ("breaker.open_for", json!("90s")),
        ],
    );
    assert_eq!(
        diff(MS, &after),
        (
            lines(&[
                r#"          "Delay": "0:0:2","#,
                r#"          "MaxDelay": "00:00:30""#,
                r#"        },"#,
                r#"        "AttemptTimeout": { "Timeout": "00:00:10.0000000" },"#,
                r#"        "TotalRequestTimeout": { "Timeout": "00:01:00" },"#,
                r#"        "CircuitBreaker": {"#,
                r#"          "FailureRatio": 0.1,"#,
                r#"          "MinimumThroughput": 100,"#,
                r#"          "SamplingDuration": "00:00:30","#,
                r#"          "BreakDuration": "00:00:05""#,
            ]),
            lines(&[
                r#"          "Delay": "0:0:0.5","#,
                r#"          "MaxDelay": "00:00:30""#,
                r#"        },"#,
                r#"        "AttemptTimeout": { "Timeout": "00:00:02.5000000" },"#,
                r#"        "TotalRequestTimeout": { "Timeout": "00:01:00" },"#,
                r#"        "CircuitBreaker": {"#,
                r#"          "FailureRatio": 0.1,"#,
                r#"          "MinimumThroughput": 100,"#,
                r#"          "SamplingDuration": "00:00:30","#,
                r#"          "BreakDuration": "00:01:30""#,
            ]),
        )
    );
    let p = import(&after, Format::MsResilience, &s);
    assert_eq!(leaf(&p, "retry.backoff.base"), "500ms");
    assert_eq!(leaf(&p, "timeout"), "2500ms");
    assert_eq!(leaf(&p, "breaker.open_for"), "1m30s");
    identity(&after, Format::MsResilience, &s);
    identity(MS, Format::MsResilience, &s);
}

// ------------------------------------------------------------ durations

#[test]
fn styled_durations_read_back_as_the_value() {
    use super::durations::{
        Notation, parse_go, parse_proto, parse_spring, parse_timespan, spring_like, styled,
    };
    use crate::scenario::units::Duration;
    let values = [
        Duration(1),
        Duration(1_500),
        Duration::from_millis(1),
        Duration::from_millis(250),
        Duration::from_millis(1500),
        Duration::from_secs(90),
        Duration::from_secs(3 * 3600 + 7),
        Duration::from_secs(2 * 86_400),
    ];
    for d in values {
        for sample in [
            None,
            Some("0.100s"),
            Some("2s"),
            Some("1.5s"),
            Some("1.000000000s"),
        ] {
            let t = styled(Notation::Proto, d, sample);
            assert_eq!(parse_proto(&t), Some(d), "{t} from {sample:?}");
        }
        for sample in [
            None,
            Some("300ms"),
            Some("30s"),
            Some("0.50s"),
            Some("1m30s"),
            Some("2h"),
            Some("5us"),
        ] {
            let t = styled(Notation::Go, d, sample);
            assert_eq!(parse_go(&t), Some(d), "{t} from {sample:?}");
        }
        for sample in [
            None,
            Some("100"),
            Some("500ms"),
            Some("PT2S"),
            Some("1m"),
            Some("2s"),
        ] {
            let t = spring_like(d, sample);
            assert_eq!(
                parse_spring(&t).map(|p| p.0),
                Some(d),
                "{t} from {sample:?}"
            );
        }
        let ticks = Duration(d.0 - d.0 % 100);
        for sample in [
            None,
            Some("00:00:02"),
            Some("0:0:2"),
            Some("00:00:00.500"),
            Some("1.00:00:00"),
            Some("00:01"),
        ] {
            let t = styled(Notation::TimeSpan, d, sample);
            assert_eq!(parse_timespan(&t), Some(ticks), "{t} from {sample:?}");
        }
    }
    assert_eq!(
        styled(Notation::Proto, Duration::from_millis(200), Some("0.100s")),
        "0.200s"
    );
    assert_eq!(
        styled(Notation::Proto, Duration::from_millis(200), Some("0.1s")),
        "0.2s"
    );
    assert_eq!(
        styled(Notation::Go, Duration::from_secs(2), Some("300ms")),
        "2000ms"
    );
    assert_eq!(
        styled(Notation::Go, Duration::from_millis(200), Some("2s")),
        "200ms"
    );
    assert_eq!(
        styled(Notation::Go, Duration::from_millis(250), Some("0.5s")),
        "0.25s"
    );
    assert_eq!(
        styled(Notation::TimeSpan, Duration::from_secs(2), Some("0:0:5")),
        "0:0:2"
    );
    assert_eq!(
        styled(
            Notation::TimeSpan,
            Duration::from_secs(86_400 + 2),
            Some("1.00:00:00")
        ),
        "1.00:00:02"
    );
    assert_eq!(spring_like(Duration::from_millis(200), Some("100")), "200");
    assert_eq!(
        spring_like(Duration::from_millis(200), Some("PT2S")),
        "PT0.2S"
    );
}

/// A number keeps its decimals as a duration does (D15): gRPC's
/// `backoffMultiplier: 2.0` tuned to 3 is written `3.0`, Envoy's
/// `budget_percent: { value: 20.0 }` tuned to 30 `30.0`; a number with
/// more decimals than the file's keeps them all (`2.25`), and one
/// written without decimals stays without (`2` tuned to 3 is `3`).
#[test]
fn numbers_keep_their_decimals() {
    let s = method("shop.cart.v1.Cart/GetCart");
    let fixed = GRPC.replace(r#""backoffMultiplier": 2,"#, r#""backoffMultiplier": 2.0,"#);
    assert_ne!(fixed, GRPC, "the fixture has a backoffMultiplier");
    for (tuned, written) in [(3.0, "3.0"), (2.25, "2.25")] {
        let (after, _) = export(
            &fixed,
            Format::GrpcServiceConfig,
            &s,
            &[("retry.backoff.multiplier", json!(tuned))],
        );
        assert_eq!(
            diff(&fixed, &after),
            (
                lines(&[r#"        "backoffMultiplier": 2.0,"#]),
                lines(&[&format!(r#"        "backoffMultiplier": {written},"#)]),
            )
        );
        let p = import(&after, Format::GrpcServiceConfig, &s);
        assert_eq!(
            leaf(&p, "retry.backoff.multiplier").parse::<f64>(),
            Ok(tuned)
        );
        identity(&after, Format::GrpcServiceConfig, &s);
    }
    let (after, _) = export(
        GRPC,
        Format::GrpcServiceConfig,
        &s,
        &[("retry.backoff.multiplier", json!(3.0))],
    );
    assert_eq!(
        diff(GRPC, &after).1,
        lines(&[r#"        "backoffMultiplier": 3,"#])
    );

    let s = envoy_route("search");
    let (after, _) = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[
            ("retry.budget.kind", json!("envoy")),
            ("retry.budget.budget_percent", json!(30)),
        ],
    );
    let (removed, added) = diff(ENVOY, &after);
    assert!(
        removed
            .iter()
            .any(|l| l.contains("budget_percent: { value: 20.0 }"))
            && added
                .iter()
                .any(|l| l.contains("budget_percent: { value: 30.0 }"))
            && !added.iter().any(|l| l.contains("value: 30 ")),
        "{removed:?} -> {added:?}"
    );
    identity(&after, Format::EnvoyRoute, &s);
}
