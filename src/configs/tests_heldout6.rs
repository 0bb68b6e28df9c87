//! Held-out review 6 ("Repo constants"): import and export fidelity of
//! the formats' retry settings. Each test fails without its fix.

use serde_json::{Value, json};

use super::tests_heldout3::sel;
use super::write::{Wanted, export_text};
use super::*;

fn import_with(text: &str, format: Format, s: &Selector) -> Result<Policy, Vec<String>> {
    import_text(text, "f", format, s).map_err(|e| e.iter().map(ToString::to_string).collect())
}

fn import(text: &str, format: Format, value: &str) -> Result<Policy, Vec<String>> {
    import_with(text, format, &sel(format, value))
}

/// The errors of an import that must fail, one a line.
fn errors(text: &str, format: Format, value: &str) -> String {
    match import(text, format, value) {
        Ok(p) => panic!("imported {}", p.selected),
        Err(e) => e.join("\n"),
    }
}

fn get(p: &Policy, path: &str) -> Value {
    get_path(&p.fragment, path).cloned().unwrap_or(Value::Null)
}

/// The warnings of an import, one a line.
fn warnings(p: &Policy) -> String {
    p.warnings
        .iter()
        .map(|w| w.located("f").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[allow(dead_code)]
fn export(
    text: &str,
    format: Format,
    value: &str,
    sets: &[(&str, Value)],
) -> Result<(String, Vec<String>), Vec<String>> {
    let sets = sets
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect();
    export_text(text, "f", format, &sel(format, value), &Wanted::Sets(sets))
        .map(|e| (e.after, e.notes))
        .map_err(|e| e.iter().map(ToString::to_string).collect())
}

// ------------------------------------------ 1. attempts beyond the limit

const ENVOY: &str = r#"virtual_hosts:
- name: orders
  domains: ["orders.internal", "orders.internal:*"]
  routes:
  - name: create
    match: { prefix: "/create" }
    route:
      cluster: orders
      retry_policy:
        retry_on: connect-failure
        num_retries: 1000
"#;

#[test]
fn envoy_num_retries_beyond_the_simulator_blames_the_files_key() {
    let e = errors(ENVOY, Format::EnvoyRoute, "create");
    assert!(
        e.starts_with("f:11:22: virtual_hosts[0].routes[0].route.retry_policy.num_retries:"),
        "{e}"
    );
    assert!(e.contains("`1000` is valid"), "{e}");
    assert!(e.contains("1001 attempts a call"), "{e}");
    assert!(e.contains("at most 1000"), "{e}");
    // 999 retries are 1000 attempts: stormsim's limit, accepted.
    let ok = ENVOY.replace("num_retries: 1000", "num_retries: 999");
    let p = import(&ok, Format::EnvoyRoute, "create").unwrap();
    assert_eq!(get(&p, "retry.max_attempts"), json!(1000));
}

const ISTIO: &str = r#"apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: orders
  namespace: shop
spec:
  hosts: [orders.shop.svc.cluster.local]
  http:
  - route:
    - destination: { host: orders.shop.svc.cluster.local }
    retries:
      attempts: 5000
      retryOn: connect-failure
"#;

#[test]
fn istio_attempts_beyond_the_simulator_blames_the_files_key() {
    let e = errors(
        ISTIO,
        Format::IstioVirtualservice,
        "orders.shop.svc.cluster.local",
    );
    assert!(
        e.starts_with("f:12:17: spec.http[0].retries.attempts:"),
        "{e}"
    );
    assert!(e.contains("`5000` is valid"), "{e}");
    assert!(e.contains("5001 attempts a call"), "{e}");
}

// --------------------------------------------- 3. unknown virtual host

#[test]
fn envoy_an_unknown_virtual_host_lists_names_and_domains() {
    let s = Selector {
        route: Some("create".into()),
        virtual_host: Some("order".into()),
        ..Selector::default()
    };
    let e = import_with(ENVOY, Format::EnvoyRoute, &s)
        .unwrap_err()
        .join("\n");
    assert!(
        e.contains(
            "no virtual host named `order` or with that domain; the virtual hosts are `orders` (domains `orders.internal`, `orders.internal:*`)"
        ),
        "{e}"
    );
}

// ------------------------------- 7. Resilience4j relaxed binding twice

#[test]
fn resilience4j_two_spellings_of_one_property_are_an_error_naming_both() {
    let text = "resilience4j.retry:\n  instances:\n    svc:\n      maxAttempts: 3\n      waitDuration: 100ms\n      max-attempts: 4\n";
    let e = errors(text, Format::Resilience4j, "svc");
    assert!(
        e.contains("f:6:7: resilience4j.retry.instances.svc.max-attempts: `resilience4j.retry.instances.svc.maxAttempts` (line 4, column 7) and `resilience4j.retry.instances.svc.max-attempts` (line 6, column 7) are one property"),
        "{e}"
    );
    let snake = text.replace("max-attempts", "max_attempts");
    let e = errors(&snake, Format::Resilience4j, "svc");
    assert!(e.contains("(line 6, column 7) are one property"), "{e}");
    // A dotted key and the nested one are the same property too.
    let dotted = "resilience4j.retry.instances.svc.maxAttempts: 2\nresilience4j.retry:\n  instances:\n    svc:\n      max-attempts: 4\n";
    let e = errors(dotted, Format::Resilience4j, "svc");
    assert!(e.contains("(line 1, column 1) and"), "{e}");
    // One spelling once is fine.
    let one = text.replace("      max-attempts: 4\n", "");
    let p = import(&one, Format::Resilience4j, "svc").unwrap();
    assert_eq!(get(&p, "retry.max_attempts"), json!(3));
}

// ------------------------------------ 12. a misspelt gRPC method selector

const GRPC: &str = r#"{
  "methodConfig": [
    {
      "name": [{ "service": "users.v1.Users", "method": "GetUser" }],
      "retryPolicy": {
        "maxAttempts": 3,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]
      }
    },
    { "name": [{ "service": "billing.v1.Billing" }], "timeout": "2s" }
  ]
}
"#;

#[test]
fn grpc_a_misspelt_method_is_an_error_with_did_you_mean() {
    let e = errors(GRPC, Format::GrpcServiceConfig, "users.v1.Users/Getuser");
    assert!(
        e.contains(
            "no methodConfig names `users.v1.Users/Getuser`; did you mean `users.v1.Users/GetUser`?"
        ),
        "{e}"
    );
    assert!(
        e.contains("the file configures `users.v1.Users/GetUser`, `billing.v1.Billing`"),
        "{e}"
    );
    let e = errors(GRPC, Format::GrpcServiceConfig, "users.v1.User/GetUser");
    assert!(e.contains("did you mean `users.v1.Users/GetUser`?"), "{e}");
    let e = errors(GRPC, Format::GrpcServiceConfig, "other.v1.Other/Call");
    assert!(
        e.contains("no methodConfig applies to `other.v1.Other/Call`"),
        "{e}"
    );
    // The exact name, and a method its service's default covers, import.
    let p = import(GRPC, Format::GrpcServiceConfig, "users.v1.Users/GetUser").unwrap();
    assert_eq!(get(&p, "retry.max_attempts"), json!(3));
    let p = import(GRPC, Format::GrpcServiceConfig, "billing.v1.Billing/Charge").unwrap();
    assert_eq!(get(&p, "total_timeout"), json!("2s"));
}

// ------------------------------------------ 8. unknown Envoy route keys

#[test]
fn envoy_a_misspelt_route_key_is_an_error_with_did_you_mean() {
    let text = ENVOY
        .replace("num_retries: 1000", "num_retries: 2")
        .replace("      retry_policy:", "      retry_polcy:");
    let e = errors(&text, Format::EnvoyRoute, "create");
    assert!(
        e.contains("f:9:7: virtual_hosts[0].routes[0].route.retry_polcy: `retry_polcy` is not a field of an Envoy route action (route_components.proto); did you mean `retry_policy`?"),
        "{e}"
    );
    let text = ENVOY
        .replace("num_retries: 1000", "num_retries: 2")
        .replace("    match:", "    mach:");
    let e = errors(&text, Format::EnvoyRoute, "create");
    assert!(e.contains("did you mean `match`?"), "{e}");
    let text = ENVOY
        .replace("num_retries: 1000", "num_retries: 2")
        .replace("  domains:", "  domain:");
    let e = errors(&text, Format::EnvoyRoute, "create");
    assert!(
        e.contains("virtual_hosts[0].domain: `domain` is not a field of an Envoy virtual host"),
        "{e}"
    );
}

#[test]
fn envoy_an_unknown_key_far_from_any_field_is_a_warning() {
    let text = ENVOY
        .replace("num_retries: 1000", "num_retries: 2")
        .replace("  routes:\n", "  x-owner: team-orders\n  routes:\n");
    let p = import(&text, Format::EnvoyRoute, "create").unwrap();
    let w = warnings(&p);
    assert!(
        w.contains(
            "f:4:3: virtual_hosts[0].x-owner: `x-owner` is not a field of an Envoy virtual host"
        ),
        "{w}"
    );
    assert_eq!(get(&p, "retry.max_attempts"), json!(3));
}

// ------------------------------- 9. max_grpc_timeout, grpc_timeout_offset

#[test]
fn envoy_grpc_timeout_keys_are_refused_at_their_position() {
    for key in ["max_grpc_timeout", "grpc_timeout_offset"] {
        let text = ENVOY
            .replace("num_retries: 1000", "num_retries: 2")
            .replace(
                "      cluster: orders\n",
                &format!("      cluster: orders\n      {key}: 5s\n"),
            );
        let e = errors(&text, Format::EnvoyRoute, "create");
        assert!(
            e.contains(&format!("f:9:7: virtual_hosts[0].routes[0].route.{key}: not modelled: a gRPC request's deadline taken from its grpc-timeout header")),
            "{e}"
        );
    }
}

// ------------------------------------------ 10. gRPC JSON is strict JSON

#[test]
fn grpc_service_config_comments_and_trailing_commas_are_refused_at_their_position() {
    let commented = GRPC.replace("  \"methodConfig\"", "  // retries\n  \"methodConfig\"");
    let e = errors(
        &commented,
        Format::GrpcServiceConfig,
        "users.v1.Users/GetUser",
    );
    assert_eq!(
        e,
        "f:2:3: not valid JSON: a comment; gRPC reads a service config as strict JSON and refuses the whole config with it"
    );
    let trailing = GRPC.replace("\"timeout\": \"2s\" }", "\"timeout\": \"2s\", }");
    let e = errors(
        &trailing,
        Format::GrpcServiceConfig,
        "users.v1.Users/GetUser",
    );
    assert!(
        e.starts_with("f:13:69: not valid JSON: a trailing comma"),
        "{e}"
    );
    let unquoted = GRPC.replace("\"methodConfig\"", "methodConfig");
    let e = errors(
        &unquoted,
        Format::GrpcServiceConfig,
        "users.v1.Users/GetUser",
    );
    assert!(e.starts_with("f:2:3: not valid JSON"), "{e}");
    // A `//` inside a string is text, not a comment.
    let url = GRPC.replace("billing.v1.Billing", "billing.v1//Billing");
    assert!(import(&url, Format::GrpcServiceConfig, "users.v1.Users/GetUser").is_ok());
    // .NET's appsettings.json still takes both, as its reader does.
    let ms = "{\n  // a comment\n  \"R\": { \"Retry\": { \"MaxRetryAttempts\": 2, }, },\n}\n";
    assert!(
        import(ms, Format::MsResilience, "R").is_ok(),
        "{:?}",
        import(ms, Format::MsResilience, "R").err()
    );
}

// ------------------------------ 13. a duration with white space around it

#[test]
fn durations_with_a_leading_space_are_refused_where_upstream_refuses_them() {
    let e = errors(
        &GRPC.replace("\"2s\"", "\" 2s\""),
        Format::GrpcServiceConfig,
        "billing.v1.Billing/Charge",
    );
    assert!(
        e.contains(
            "white space around the duration \" 2s\": gRPC (grpc-go parseDuration) does not trim it"
        ),
        "{e}"
    );
    let envoy = ENVOY.replace(
        "num_retries: 1000",
        "num_retries: 2\n        per_try_timeout: \" 1s\"",
    );
    let e = errors(&envoy, Format::EnvoyRoute, "create");
    assert!(
        e.contains("retry_policy.per_try_timeout: white space around the duration \" 1s\": Envoy"),
        "{e}"
    );
    let istio = ISTIO.replace(
        "attempts: 5000",
        "attempts: 2\n      perTryTimeout: \" 1s\"",
    );
    let e = errors(
        &istio,
        Format::IstioVirtualservice,
        "orders.shop.svc.cluster.local",
    );
    assert!(e.contains("retries.perTryTimeout: white space around the duration \" 1s\": Istio (Go's time.ParseDuration)"), "{e}");
    let r4j = "resilience4j.retry:\n  instances:\n    svc:\n      waitDuration: \" 1s\"\n";
    let e = errors(r4j, Format::Resilience4j, "svc");
    assert!(e.contains("f:4:21: resilience4j.retry.instances.svc.waitDuration: white space around the duration \" 1s\": Spring Boot (DurationStyle)"), "{e}");
}

// ------------------------------------- 11. Istio sub-millisecond backoff

#[test]
fn istio_backoff_counts_whole_milliseconds_as_envoy_does() {
    let text = ISTIO.replace("attempts: 5000", "attempts: 2\n      backoff: 500us");
    let p = import(
        &text,
        Format::IstioVirtualservice,
        "orders.shop.svc.cluster.local",
    )
    .unwrap();
    assert_eq!(get(&p, "retry.backoff.base"), json!("1ms"));
    assert_eq!(get(&p, "retry.backoff.cap"), json!("10ms"));
    let w = warnings(&p);
    assert!(w.contains("retries.backoff: Envoy, which runs Istio's retries, counts whole milliseconds, at least 1: 500us is 1ms"), "{w}");
    let text = ISTIO.replace("attempts: 5000", "attempts: 2\n      backoff: 2.7ms");
    let p = import(
        &text,
        Format::IstioVirtualservice,
        "orders.shop.svc.cluster.local",
    )
    .unwrap();
    assert_eq!(get(&p, "retry.backoff.base"), json!("2ms"));
    assert_eq!(get(&p, "retry.backoff.cap"), json!("20ms"));
}

// ------------------------ 4. Istio short hosts in the namespace; wildcards

const BOOKINFO: &str = r#"apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
  namespace: bookinfo
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: { host: reviews }
    retries: { attempts: 4, retryOn: connect-failure }
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: wild
  namespace: bookinfo
spec:
  hosts: ["*.bookinfo.svc.cluster.local"]
  http:
  - route:
    - destination: { host: ratings }
    retries: { attempts: 1, retryOn: connect-failure }
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: all
  namespace: bookinfo
spec:
  hosts: ["*"]
  http:
  - route:
    - destination: { host: x }
    retries: { attempts: 2, retryOn: connect-failure }
"#;

fn istio_attempts(host: &str) -> Value {
    let p = import(BOOKINFO, Format::IstioVirtualservice, host).unwrap();
    get(&p, "retry.max_attempts")
}

#[test]
fn istio_short_hosts_resolve_in_their_namespace_and_the_most_specific_wins() {
    // `reviews` in namespace bookinfo is reviews.bookinfo.svc.cluster.local:
    // an exact host, more specific than the wildcards.
    assert_eq!(
        istio_attempts("reviews.bookinfo.svc.cluster.local"),
        json!(5)
    );
    assert_eq!(istio_attempts("reviews"), json!(5));
    // Another service of the namespace: the namespace's wildcard.
    assert_eq!(
        istio_attempts("details.bookinfo.svc.cluster.local"),
        json!(2)
    );
    // `reviews` of another namespace is not this one: `*`.
    assert_eq!(istio_attempts("reviews.other.svc.cluster.local"), json!(3));
    assert_eq!(istio_attempts("foo.example.com"), json!(3));
}

// ------------------------------------ 6. a JSON file stays JSON on export

const ENVOY_JSON: &str = r#"{
  "virtual_hosts": [
    {
      "name": "orders",
      "domains": ["orders.internal"],
      "routes": [
        {
          "name": "create",
          "match": { "prefix": "/create" },
          "route": {
            "cluster": "orders",
            "retry_policy": {
              "retry_on": "connect-failure",
              "num_retries": 2
            }
          }
        }
      ]
    }
  ]
}
"#;

#[test]
fn envoy_json_file_export_adds_keys_as_json() {
    let (after, _) = export(
        ENVOY_JSON,
        Format::EnvoyRoute,
        "create",
        &[
            ("retry.retry_on", json!(["connection", 503])),
            ("timeout", json!("300ms")),
        ],
    )
    .unwrap();
    let parsed: Result<serde_json::Value, _> = serde_json::from_str(&after);
    assert!(parsed.is_ok(), "not JSON any more:\n{after}");
    assert!(
        after.contains("              \"num_retries\": 2,\n              \""),
        "{after}"
    );
    assert!(
        after.contains("\"retriable_status_codes\": [503]"),
        "{after}"
    );
    assert!(after.contains("\"per_try_timeout\": \"0.3s\""), "{after}");
}
