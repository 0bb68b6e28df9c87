//! Held-out review 7: retry conditions per route kind (Istio, Envoy), and
//! keys an export makes wrong removed. Each test fails without its fix.

use serde_json::{Value, json};

use super::write::{Wanted, export_text};
use super::*;

fn istio_sel(host: &str, route: &str) -> Selector {
    Selector {
        host: Some(host.into()),
        route: Some(route.into()),
        ..Selector::default()
    }
}

fn route_sel(route: &str) -> Selector {
    Selector {
        route: Some(route.into()),
        ..Selector::default()
    }
}

fn instance_sel(name: &str) -> Selector {
    Selector {
        instance: Some(name.into()),
        ..Selector::default()
    }
}

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

fn export(text: &str, format: Format, s: &Selector, sets: &[(&str, Value)]) -> String {
    let sets = sets
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect();
    export_text(text, "f", format, s, &Wanted::Sets(sets))
        .map(|e| e.after)
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

fn retry_on(p: &Policy) -> Value {
    get_path(&p.fragment, "retry.retry_on")
        .cloned()
        .unwrap_or(Value::Null)
}

/// The one line of `after` that `before` does not have, and the one of
/// `before` it replaces, if any.
fn changed_lines(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
    let b: Vec<&str> = before.lines().collect();
    let a: Vec<&str> = after.lines().collect();
    (
        b.iter()
            .filter(|l| !a.contains(l))
            .map(|l| l.trim().to_string())
            .collect(),
        a.iter()
            .filter(|l| !b.contains(l))
            .map(|l| l.trim().to_string())
            .collect(),
    )
}

const VS: &str = "apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: web, namespace: shop }
spec:
  hosts: [web]
  http:
    - name: page
      route:
        - destination: { host: web }
      retries:
        attempts: 2
    - name: rpc
      route:
        - destination: { host: web }
      retries:
        attempts: 2
        retryOn: unavailable,cancelled
";

/// Item 1: an HTTP route running on Istio's default retryOn gets HTTP
/// conditions and a status code, not the default's gRPC conditions.
#[test]
fn istio_http_route_gets_http_conditions() {
    let s = istio_sel("web", "page");
    let out = export(
        VS,
        Format::IstioVirtualservice,
        &s,
        &[("retry.retry_on", json!([503, "connection"]))],
    );
    let (_, added) = changed_lines(VS, &out);
    assert_eq!(
        added,
        ["retryOn: connect-failure,refused-stream,503"],
        "{out}"
    );
    let p = import(&out, Format::IstioVirtualservice, &s);
    assert_eq!(retry_on(&p), json!(["connection", 503]));
    // And exported again: nothing to change.
    let again = export(
        &out,
        Format::IstioVirtualservice,
        &s,
        &[("retry.retry_on", retry_on(&p))],
    );
    assert_eq!(again, out);
}

/// Item 2: a gRPC route retries throttling as `resource-exhausted`,
/// never as the HTTP status 429, both ways.
#[test]
fn istio_grpc_route_throttling_is_resource_exhausted() {
    let s = istio_sel("web", "rpc");
    let out = export(
        VS,
        Format::IstioVirtualservice,
        &s,
        &[("retry.retry_on", json!([503, 429]))],
    );
    let (gone, added) = changed_lines(VS, &out);
    assert_eq!(gone, ["retryOn: unavailable,cancelled"]);
    assert_eq!(
        added,
        ["retryOn: unavailable,cancelled,resource-exhausted"],
        "{out}"
    );
    let p = import(&out, Format::IstioVirtualservice, &s);
    assert_eq!(retry_on(&p), json!([503, 429]));
    // A bare 429 on a gRPC route matches no gRPC response: a warning,
    // and nothing retried for it.
    let http_code = VS.replace("unavailable,cancelled", "unavailable,429");
    let p = import(&http_code, Format::IstioVirtualservice, &s);
    assert_eq!(retry_on(&p), json!([503]));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("status code 429 on a gRPC route")),
        "{:?}",
        p.warnings
    );
    // A status a gRPC condition cannot say is refused.
    let sets = vec![("retry.retry_on".to_string(), json!([502]))];
    let e = export_text(
        VS,
        "f",
        Format::IstioVirtualservice,
        &s,
        &Wanted::Sets(sets),
    )
    .err()
    .map(|e| {
        e.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })
    .unwrap_or_default();
    assert!(e.contains("none stands for `502`"), "{e}");
}

const ENVOY: &str = "name: edge
virtual_hosts:
  - name: api
    domains: [\"*\"]
    routes:
      - name: web
        match: { prefix: \"/\" }
        route:
          cluster: web
          retry_policy:
            retry_on: connect-failure,retriable-status-codes
            retriable_status_codes: [503, 429]
            num_retries: 2
      - name: rpc
        match: { prefix: \"/orders.v1.Orders/\" }
        route:
          cluster: orders
          retry_policy:
            retry_on: unavailable,connect-failure
            num_retries: 2
";

/// Item 2, Envoy: the same mapping per route kind.
#[test]
fn envoy_grpc_route_throttling_is_resource_exhausted() {
    let s = route_sel("rpc");
    let out = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[("retry.retry_on", json!(["connection", 503, 429]))],
    );
    let (_, added) = changed_lines(ENVOY, &out);
    assert_eq!(
        added,
        ["retry_on: unavailable,connect-failure,resource-exhausted"],
        "{out}"
    );
    let p = import(&out, Format::EnvoyRoute, &s);
    assert_eq!(retry_on(&p), json!([503, "connection", 429]));
    // `5xx` on a gRPC route retries no gRPC status.
    let five = ENVOY.replace("unavailable,connect-failure", "5xx,unavailable");
    let p = import(&five, Format::EnvoyRoute, &s);
    assert_eq!(retry_on(&p), json!(["timeout", "connection", 503]));
}

/// Item 3, Envoy: status codes no condition reads any more go.
#[test]
fn envoy_unread_status_codes_are_removed() {
    let s = route_sel("web");
    let out = export(
        ENVOY,
        Format::EnvoyRoute,
        &s,
        &[("retry.retry_on", json!(["connection"]))],
    );
    let (gone, added) = changed_lines(ENVOY, &out);
    assert_eq!(
        gone,
        [
            "retry_on: connect-failure,retriable-status-codes",
            "retriable_status_codes: [503, 429]"
        ]
    );
    assert_eq!(added, ["retry_on: connect-failure"]);
}

const R4J: &str = "# retry settings
resilience4j:
  retry:
    instances:
      orders:
        maxAttempts: 3
        waitDuration: 200ms
        enableExponentialBackoff: true   # doubling
        exponentialBackoffMultiplier: 2
        exponentialMaxWaitDuration: 2s
        enableRandomizedWait: true
        randomizedWaitFactor: 0.3
        retryExceptions:
          - java.io.IOException
";

/// Item 3, Resilience4j: a constant backoff leaves no multiplier or
/// maximum behind, no jitter no factor, and no maximum means none in the
/// file.
#[test]
fn resilience4j_keys_that_no_longer_apply_are_removed() {
    let s = instance_sel("orders");
    let out = export(
        R4J,
        Format::Resilience4j,
        &s,
        &[
            (
                "retry.backoff",
                json!({ "kind": "constant", "base": "300ms" }),
            ),
            ("retry.jitter", json!("none")),
        ],
    );
    let (gone, added) = changed_lines(R4J, &out);
    assert_eq!(
        gone,
        [
            "waitDuration: 200ms",
            "enableExponentialBackoff: true   # doubling",
            "exponentialBackoffMultiplier: 2",
            "exponentialMaxWaitDuration: 2s",
            "enableRandomizedWait: true",
            "randomizedWaitFactor: 0.3",
        ],
        "{out}"
    );
    assert_eq!(
        added,
        [
            "waitDuration: 300ms",
            "enableExponentialBackoff: false   # doubling",
            "enableRandomizedWait: false",
        ]
    );
    assert!(out.starts_with("# retry settings\n"));
    // No cap: the instance's own maximum goes.
    let out = export(
        R4J,
        Format::Resilience4j,
        &s,
        &[("retry.backoff.cap", Value::Null)],
    );
    let (gone, added) = changed_lines(R4J, &out);
    assert_eq!(gone, ["exponentialMaxWaitDuration: 2s"], "{out}");
    assert!(added.is_empty());
    let p = import(&out, Format::Resilience4j, &s);
    assert_eq!(
        get_path(&p.fragment, "retry.backoff.cap"),
        Some(&Value::Null)
    );
}

/// Item 3, Istio and Envoy: no per-try timeout tuned removes the route's
/// (it used to be refused: "delete it by hand").
#[test]
fn per_try_timeouts_no_longer_tuned_are_removed() {
    let vs = VS.replace(
        "        attempts: 2\n    - name: rpc",
        "        attempts: 2\n        perTryTimeout: 750ms\n    - name: rpc",
    );
    let s = istio_sel("web", "page");
    let out = export(
        &vs,
        Format::IstioVirtualservice,
        &s,
        &[("timeout", Value::Null)],
    );
    assert_eq!(out, VS);
    let envoy = ENVOY.replace(
        "            num_retries: 2\n      - name: rpc",
        "            num_retries: 2\n            per_try_timeout: 0.5s\n      - name: rpc",
    );
    let out = export(
        &envoy,
        Format::EnvoyRoute,
        &route_sel("web"),
        &[("timeout", Value::Null)],
    );
    assert_eq!(out, ENVOY);
}
