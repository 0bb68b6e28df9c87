//! Held-out review rev31: Envoy/Istio `reset` and `gateway-error`, AWS
//! legacy 502/504, attempt counts beyond the simulator's limit, a new
//! gRPC retryPolicy, Resilience4j sub-millisecond intervals and quoted
//! AWS profile names. Each test fails without its fix.

use serde_json::{Value, json};

use super::write::{Wanted, export_text};
use super::*;

/// The selector that picks `value` in a file of `format` (also used by
/// the other held-out test modules).
pub(super) fn sel(format: Format, value: &str) -> Selector {
    let mut s = Selector::default();
    match format {
        Format::GrpcServiceConfig => s.method = Some(value.into()),
        Format::EnvoyRoute | Format::LinkerdServiceprofile => s.route = Some(value.into()),
        Format::IstioVirtualservice => s.host = Some(value.into()),
        Format::Resilience4j => s.instance = Some(value.into()),
        Format::MsResilience => s.section = Some(value.into()),
        Format::AwsConfig => s.profile = Some(value.into()),
    }
    s
}

fn import(text: &str, format: Format, value: &str) -> Result<Policy, Vec<String>> {
    import_text(text, "f", format, &sel(format, value))
        .map_err(|e| e.iter().map(ToString::to_string).collect())
}

fn get(p: &Policy, path: &str) -> Value {
    get_path(&p.fragment, path).cloned().unwrap_or(Value::Null)
}

fn export(
    text: &str,
    format: Format,
    value: &str,
    sets: &[(&str, Value)],
) -> Result<String, Vec<String>> {
    let sets = sets
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect();
    export_text(text, "f", format, &sel(format, value), &Wanted::Sets(sets))
        .map(|e| e.after)
        .map_err(|e| e.iter().map(ToString::to_string).collect())
}

// ------------------------------------------------ ENV-RESET-TIMEOUT

const ENVOY_RDS: &str = r#"name: catalog_routes
virtual_hosts:
- name: catalog
  domains: ["catalog.internal"]
  routes:
  - name: list-products
    match: { prefix: "/v1/products" }
    route:
      cluster: catalog
      timeout: 3s
      retry_policy:
        retry_on: reset
        num_retries: 2
        per_try_timeout: 0.5s
  - name: get-product
    match: { prefix: "/v1/product/" }
    route:
      cluster: catalog
      retry_policy:
        retry_on: gateway-error
        num_retries: 3
        per_try_timeout: 0.25s
  - name: plain
    match: { prefix: "/" }
    route: { cluster: catalog, timeout: 5s }
"#;

const VS: &str = r#"apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: catalog
spec:
  hosts: [catalog]
  http:
  - route:
    - destination: { host: catalog }
    retries:
      attempts: 2
      perTryTimeout: 250ms
      retryOn: gateway-error
"#;

#[test]
fn envoy_reset_retries_per_try_timeouts_and_gateway_error_connection_failures() {
    // A per-try timeout resets the stream (router.cc onPerTryTimeoutCommon),
    // and wouldRetryFromReset retries any reset under reset, 5xx and
    // gateway-error.
    let p = import(ENVOY_RDS, Format::EnvoyRoute, "list-products").unwrap();
    assert_eq!(get(&p, "retry.retry_on"), json!(["timeout", "connection"]));
    let p = import(ENVOY_RDS, Format::EnvoyRoute, "get-product").unwrap();
    assert_eq!(
        get(&p, "retry.retry_on"),
        json!(["timeout", "connection", 502, 503, 504])
    );
    let p = import(VS, Format::IstioVirtualservice, "catalog").unwrap();
    assert_eq!(
        get(&p, "retry.retry_on"),
        json!(["timeout", "connection", 502, 503, 504])
    );
}

#[test]
fn envoy_export_never_retries_timeouts_the_layer_excludes() {
    // [connection, 503] without timeout: no `reset` (it retries per-try
    // timeouts), and the result reads back as exactly what was tuned.
    let out = export(
        ENVOY_RDS,
        Format::EnvoyRoute,
        "plain",
        &[
            ("retry.max_attempts", json!(3)),
            ("timeout", json!("250ms")),
            ("retry.retry_on", json!(["connection", 503])),
        ],
    )
    .unwrap();
    let plain = out
        .lines()
        .find(|l| l.contains("cluster: catalog, timeout: 5s"))
        .unwrap();
    assert!(
        plain.contains(
            "retry_on: \"connect-failure,retriable-status-codes\", retriable_status_codes: [503]"
        ) && !plain.contains("reset"),
        "{out}"
    );
    let back = import(&out, Format::EnvoyRoute, "plain").unwrap();
    assert_eq!(get(&back, "retry.retry_on"), json!(["connection", 503]));
    // With timeouts and without the gateway codes: `reset`, round trip.
    let out = export(
        ENVOY_RDS,
        Format::EnvoyRoute,
        "get-product",
        &[("retry.retry_on", json!(["timeout", "connection"]))],
    )
    .unwrap();
    let back = import(&out, Format::EnvoyRoute, "get-product").unwrap();
    assert_eq!(
        get(&back, "retry.retry_on"),
        json!(["timeout", "connection"]),
        "{out}"
    );
    // Timeouts without connection failures: no condition says it.
    let e = export(
        ENVOY_RDS,
        Format::EnvoyRoute,
        "get-product",
        &[("retry.retry_on", json!(["timeout", 502, 503, 504]))],
    )
    .unwrap_err()
    .join("\n");
    assert!(
        e.contains("also retries connection failures") && e.contains("add `connection`"),
        "{e}"
    );
    // Istio: the same conditions.
    let out = export(
        VS,
        Format::IstioVirtualservice,
        "catalog",
        &[("retry.retry_on", json!(["connection", 503]))],
    )
    .unwrap();
    assert!(
        !out.contains("reset") && !out.contains("gateway-error"),
        "{out}"
    );
    let back = import(&out, Format::IstioVirtualservice, "catalog").unwrap();
    assert_eq!(get(&back, "retry.retry_on"), json!(["connection", 503]));
}

// ------------------------------------------------ AWS-LEGACY-502-504

#[test]
fn aws_legacy_mode_retries_502_and_504() {
    // botocore _retry.json @6403a357: bad_gateway, gateway_timeout.
    let text = "[profile etl]\nregion = us-east-1\nretry_mode = legacy\n";
    let p = import(text, Format::AwsConfig, "etl").unwrap();
    assert_eq!(
        get(&p, "retry.retry_on"),
        json!(["timeout", "connection", 429, 500, 502, 503, 504, 509])
    );
}

// ------------------------------------------------ MS-MAXRETRY-999

#[test]
fn attempt_counts_upstream_accepts_are_refused_as_the_simulators_limit() {
    let ms = |n: &str| format!("{{ \"R\": {{ \"Retry\": {{ \"MaxRetryAttempts\": {n} }} }} }}");
    let p = import(&ms("999"), Format::MsResilience, "R").unwrap();
    assert_eq!(get(&p, "retry.max_attempts"), json!(1000));
    for n in ["1000", "2147483647"] {
        let e = import(&ms(n), Format::MsResilience, "R")
            .unwrap_err()
            .join("\n");
        assert!(
            e.contains("is valid (Polly's MaxRetryAttempts")
                && e.contains("stormsim simulates at most 1000")
                && e.contains("a limit of the simulator, not of the file")
                && !e.contains("expected a whole number"),
            "{e}"
        );
    }
    // Past int.MaxValue, Polly's own range is the message.
    let e = import(&ms("2147483648"), Format::MsResilience, "R")
        .unwrap_err()
        .join("\n");
    assert!(e.contains("from 1 to 2147483647"), "{e}");
    let aws = |n: &str| format!("[profile etl]\nretry_mode = standard\nmax_attempts = {n}\n");
    let p = import(&aws("1000"), Format::AwsConfig, "etl").unwrap();
    assert_eq!(get(&p, "retry.max_attempts"), json!(1000));
    let e = import(&aws("5000"), Format::AwsConfig, "etl")
        .unwrap_err()
        .join("\n");
    assert!(
        e.contains("botocore sets no upper bound") && e.contains("stormsim simulates at most 1000"),
        "{e}"
    );
}

// ------------------------------------------------ GRPC-ADD-RETRYPOLICY

const GRPC: &str = r#"{
  "methodConfig": [
    {
      "name": [{ "service": "inventory.v1.Stock", "method": "Reserve" }],
      "timeout": "2s"
    }
  ]
}
"#;

#[test]
fn grpc_export_writes_a_whole_new_retry_policy() {
    // Values equal to what import shows for "no retryPolicy" are written
    // too: gRFC A6 requires all five fields.
    let out = export(
        GRPC,
        Format::GrpcServiceConfig,
        "inventory.v1.Stock/Reserve",
        &[
            ("retry.max_attempts", json!(3)),
            ("retry.backoff.base", json!("50ms")),
            ("retry.backoff.cap", json!("500ms")),
            ("retry.backoff.multiplier", json!(2)),
            ("retry.retry_on", json!(["connection", 503])),
        ],
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    for field in [
        "\"maxAttempts\": 3",
        "\"initialBackoff\": \"0.05s\"",
        "\"maxBackoff\": \"0.5s\"",
        "\"backoffMultiplier\": 2",
        "\"retryableStatusCodes\": [\"UNAVAILABLE\"]",
    ] {
        assert!(out.contains(field), "{field} in\n{out}");
    }
    let back = import(
        &out,
        Format::GrpcServiceConfig,
        "inventory.v1.Stock/Reserve",
    )
    .unwrap();
    assert_eq!(get(&back, "retry.max_attempts"), json!(3));
    assert_eq!(get(&back, "retry.backoff.cap"), json!("500ms"));
}

#[test]
fn grpc_export_names_the_fields_a_new_retry_policy_lacks() {
    // A scenario layer with attempts and codes but no backoff.
    let Value::Object(layer) = json!({
        "name": "x",
        "retry": { "max_attempts": 3, "retry_on": ["connection", 503] },
    }) else {
        panic!()
    };
    let e = export_text(
        GRPC,
        "f",
        Format::GrpcServiceConfig,
        &sel(Format::GrpcServiceConfig, "inventory.v1.Stock/Reserve"),
        &Wanted::Layer(layer),
    )
    .map(|e| e.after)
    .unwrap_err()
    .iter()
    .map(ToString::to_string)
    .collect::<Vec<_>>()
    .join("\n");
    assert!(
        e.contains("has no retryPolicy")
            && e.contains("retry.backoff.base (initialBackoff)")
            && !e.contains("would not read back"),
        "{e}"
    );
}

// ------------------------------------------------ R4J-ZERO-WAIT

const R4J: &str = "resilience4j:
  retry:
    configs:
      default:
        maxAttempts: 3
        waitDuration: 0
        enableRandomizedWait: true
    instances:
      pricing:
        baseConfig: default
      fx:
        maxAttempts: 4
        waitDuration: 500us
        enableExponentialBackoff: true
      flat:
        waitDuration: 0
        enableRandomizedWait: false
";

#[test]
fn r4j_sub_millisecond_interval_with_random_or_exponential_wait_is_an_error() {
    // IntervalFunction.checkInterval: less than 1 millis throws.
    let e = import(R4J, Format::Resilience4j, "pricing")
        .unwrap_err()
        .join("\n");
    assert!(
        e.contains("f:6:9:") && e.contains("enableRandomizedWait") && e.contains("checkInterval"),
        "{e}"
    );
    let e = import(R4J, Format::Resilience4j, "fx")
        .unwrap_err()
        .join("\n");
    assert!(
        e.contains("f:13:9:")
            && e.contains("enableExponentialBackoff")
            && e.contains("at least 1 ms"),
        "{e}"
    );
    // A constant wait of 0 is what RetryConfig takes.
    let p = import(R4J, Format::Resilience4j, "flat").unwrap();
    assert_eq!(get(&p, "retry.backoff.base"), json!("0s"));
}

// ------------------------------------------------ AWS-QUOTED-PROFILE

#[test]
fn aws_quoted_profile_names_split_as_shlex_does() {
    let text = "[default]\nregion = eu-west-1\n\n[profile \"data science\"]\nretry_mode = adaptive\nmax_attempts = 8\n\n[profile 'ops team']\nmax_attempts = 4\nretry_mode = standard\n";
    let p = import(text, Format::AwsConfig, "data science").unwrap();
    assert_eq!(get(&p, "retry.max_attempts"), json!(8));
    let p = import(text, Format::AwsConfig, "ops team").unwrap();
    assert_eq!(get(&p, "retry.max_attempts"), json!(4));
    let out = export(
        text,
        Format::AwsConfig,
        "data science",
        &[("retry.max_attempts", json!(6))],
    )
    .unwrap();
    assert!(out.contains("max_attempts = 6\n"), "{out}");
    let split = super::aws::shlex_split;
    assert_eq!(split("profile \"a \\\"b"), None);
    assert_eq!(
        split("profile \"a \\\"b\" 'c\\d'"),
        Some(vec!["profile".into(), "a \"b".into(), "c\\d".into()])
    );
}
