//! Held-out review 8: what makes a file's own system refuse it as a whole
//! (gRPC), keys misspelt at any level (Linkerd, AWS), Istio's default gRPC
//! retry conditions kept on export, and notes on shared settings. Each
//! test fails without its fix.

use serde_json::{Value, json};

use super::write::{Wanted, export_text};
use super::*;

fn method_sel(m: &str) -> Selector {
    Selector {
        method: Some(m.into()),
        ..Selector::default()
    }
}

/// The errors of an import, one a line, or "" when it succeeds.
fn errors(text: &str, format: Format, s: &Selector) -> String {
    match import_text(text, "f", format, s) {
        Ok(_) => String::new(),
        Err(e) => e
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
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

// ------------------------------------------------------------------ D1

/// A service config of two entries: `Hello` (selected or not) and the
/// service default, which `Bye` takes; `{BAD}` stands for a retryPolicy
/// field of the `Hello` entry, on line 8.
const TWO: &str = r#"{
  "methodConfig": [
    {
      "name": [{ "service": "g.Greeter", "method": "Hello" }],
      "retryPolicy": {
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        {BAD}
      }
    },
    {
      "name": [{ "service": "g.Greeter" }],
      "timeout": "3s"
    }
  ]
}
"#;

const GOOD: &str =
    r#""maxAttempts": 3, "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#;

#[test]
fn grpc_an_entry_grpc_refuses_refuses_the_file_whatever_method_is_selected() {
    let good = TWO.replace("{BAD}", GOOD);
    assert_eq!(
        errors(
            &good,
            Format::GrpcServiceConfig,
            &method_sel("g.Greeter/Bye")
        ),
        ""
    );
    for (bad, col, what) in [
        // codes.Code.UnmarshalJSON: exact capitals, or a bare number.
        (
            r#""maxAttempts": 3, "backoffMultiplier": 2, "retryableStatusCodes": ["unavailable"]"#,
            76,
            "in capitals",
        ),
        (
            r#""maxAttempts": 3, "backoffMultiplier": 2, "retryableStatusCodes": ["14"]"#,
            76,
            "not a number in quotes",
        ),
        (
            r#""maxAttempts": 3, "backoffMultiplier": 2, "retryableStatusCodes": ["NOPE"]"#,
            76,
            "not a gRPC status code",
        ),
        // convertRetryPolicy.
        (
            r#""maxAttempts": 1, "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            24,
            "needs 2 or more",
        ),
        (
            r#""maxAttempts": 3, "backoffMultiplier": 2, "retryableStatusCodes": []"#,
            75,
            "must not be empty",
        ),
        (
            r#""maxAttempts": 3, "backoffMultiplier": 0, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            48,
            "greater than 0",
        ),
        (
            r#""maxAttempts": 3, "backoffMultiplier": -1.5, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            48,
            "greater than 0",
        ),
        (
            r#""backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#,
            0,
            "has no maxAttempts",
        ),
    ] {
        let text = TWO.replace("{BAD}", bad);
        for method in ["g.Greeter/Hello", "g.Greeter/Bye", "g.Greeter"] {
            let e = errors(&text, Format::GrpcServiceConfig, &method_sel(method));
            assert!(e.contains(what), "{bad} / {method}: {e}");
            if col > 0 {
                assert!(
                    e.starts_with(&format!("f:8:{col}: methodConfig[0].retryPolicy.")),
                    "{bad} / {method}: {e}"
                );
            } else {
                assert!(e.starts_with("f:5:"), "{bad} / {method}: {e}");
            }
            assert_eq!(
                e.contains("refuses the whole service config for it"),
                method != "g.Greeter/Hello",
                "{bad} / {method}: {e}"
            );
        }
    }
}

#[test]
fn grpc_non_durations_and_both_policies_in_another_entry_refuse_the_file() {
    let bye = method_sel("g.Greeter/Bye");
    let ms = TWO.replace("\"0.1s\"", "\"100ms\"").replace("{BAD}", GOOD);
    let e = errors(&ms, Format::GrpcServiceConfig, &bye);
    assert!(
        e.starts_with("f:6:27: methodConfig[0].retryPolicy.initialBackoff:"),
        "{e}"
    );
    let timeout = TWO.replace("{BAD}", GOOD).replace(
        r#""retryPolicy": {"#,
        r#""timeout": "2 s", "retryPolicy": {"#,
    );
    let e = errors(&timeout, Format::GrpcServiceConfig, &bye);
    assert!(e.contains("methodConfig[0].timeout"), "{e}");
    let both = TWO.replace(
        "{BAD}",
        &format!(r#"{GOOD} }}, "hedgingPolicy": {{ "maxAttempts": 2"#),
    );
    let e = errors(&both, Format::GrpcServiceConfig, &bye);
    assert!(e.contains("never both"), "{e}");
    let hedge1 = TWO.replace(
        r#""retryPolicy": {
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        {BAD}
      }"#,
        r#""hedgingPolicy": { "maxAttempts": 1 }"#,
    );
    let e = errors(&hedge1, Format::GrpcServiceConfig, &bye);
    assert!(e.contains("a hedgingPolicy needs 2 or more"), "{e}");
}

#[test]
fn grpc_what_stormsim_does_not_model_in_another_entry_changes_nothing() {
    // waitForReady, an unknown field, a multiplier beyond the simulator's
    // bound and a code the simulation never produces, all in an entry
    // `Bye` does not use: gRPC takes the file, and so does stormsim,
    // with no word about them.
    let text = TWO
        .replace(
            "{BAD}",
            r#""maxAttempts": 3, "backoffMultiplier": 5000000, "retryableStatusCodes": ["ABORTED"], "extra": 1"#,
        )
        .replace(r#""retryPolicy": {"#, r#""waitForReady": true, "retryPolicy": {"#);
    let p = import(
        &text,
        Format::GrpcServiceConfig,
        &method_sel("g.Greeter/Bye"),
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(get_path(&p.fragment, "total_timeout"), Some(&json!("3s")));
    assert!(
        errors(
            &text,
            Format::GrpcServiceConfig,
            &method_sel("g.Greeter/Hello")
        )
        .contains("waitForReady")
    );
}

// ------------------------------------------------------------------ D2

const PROFILE: &str = "apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata:
  name: web.shop.svc.cluster.local
spec:
  routes:
    - name: GET /list
      isRetryable: true
      timeout: 500ms
  retryBudget:
    retryRatio: 0.5
    minRetriesPerSecond: 3
    ttl: 30s
";

fn route_sel(route: &str) -> Selector {
    Selector {
        route: Some(route.into()),
        ..Selector::default()
    }
}

#[test]
fn linkerd_a_misspelt_key_at_any_level_is_an_error_with_did_you_mean() {
    let sel = route_sel("GET /list");
    let p = import(PROFILE, Format::LinkerdServiceprofile, &sel);
    assert_eq!(
        get_path(&p.fragment, "retry.budget.percent_can_retry"),
        Some(&json!(0.5))
    );
    for (from, to, at, meant) in [
        (
            "  retryBudget:",
            "  retryBudjet:",
            "f:10:3: spec.retryBudjet:",
            "retryBudget",
        ),
        ("  routes:", "  route:", "f:6:3: spec.route:", "routes"),
        (
            "      isRetryable:",
            "      isRetriable:",
            "f:8:7: spec.routes[0].isRetriable:",
            "isRetryable",
        ),
        (
            "    ttl:",
            "    ttls:",
            "f:13:5: spec.retryBudget.ttls:",
            "ttl",
        ),
    ] {
        let text = PROFILE.replace(from, to);
        let e = errors(&text, Format::LinkerdServiceprofile, &sel);
        assert!(e.contains(at), "{to}: {e}");
        assert!(e.contains(&format!("did you mean `{meant}`?")), "{to}: {e}");
    }
    // A spec field nothing like a known one: named at its position.
    let text = PROFILE.replace("  retryBudget:", "  shadowTraffic: 1\n  retryBudget:");
    let e = errors(&text, Format::LinkerdServiceprofile, &sel);
    assert!(
        e.starts_with("f:10:3: spec.shadowTraffic: not modelled"),
        "{e}"
    );
    // The CRD's own spec fields are known.
    let text = PROFILE.replace(
        "  retryBudget:",
        "  dstOverrides:\n    - authority: web-v2\n      weight: 1\n  retryBudget:",
    );
    let p = import(&text, Format::LinkerdServiceprofile, &sel);
    assert!(
        p.warnings.iter().any(|w| w.key == "spec.dstOverrides"),
        "{:?}",
        p.warnings
    );
    let text = PROFILE.replace("  retryBudget:", "  opaquePorts: [5432]\n  retryBudget:");
    assert!(
        errors(&text, Format::LinkerdServiceprofile, &sel)
            .contains("spec.opaquePorts: not modelled")
    );
}

// ------------------------------------------------------------ D8 (Linkerd)

#[test]
fn linkerd_is_retryable_in_quotes_is_refused() {
    let sel = route_sel("GET /list");
    for v in ["\"true\"", "'false'"] {
        let text = PROFILE.replace("isRetryable: true", &format!("isRetryable: {v}"));
        let e = errors(&text, Format::LinkerdServiceprofile, &sel);
        assert!(e.starts_with("f:8:20: spec.routes[0].isRetryable:"), "{e}");
        assert!(e.contains("a string"), "{e}");
    }
}

// ------------------------------------------------------------------ D3

const VS: &str = "apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: web, namespace: shop }
spec:
  hosts: [web]
  http:
    - name: plain
      route:
        - destination: { host: web }
    - name: own
      route:
        - destination: { host: web }
      retries:
        attempts: 2
        retryOn: connect-failure
";

#[test]
fn istio_a_retry_on_replacing_the_default_says_what_grpc_loses() {
    let sel = |route: &str| Selector {
        host: Some("web".into()),
        route: Some(route.into()),
        ..Selector::default()
    };
    // The import's advice for a gRPC service names what its export does.
    let p = import(VS, Format::IstioVirtualservice, &sel("plain"));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("keep `unavailable,cancelled`")),
        "{:?}",
        p.warnings
    );
    let (after, notes) = export(
        VS,
        Format::IstioVirtualservice,
        &sel("plain"),
        &[("retry.retry_on", json!(["connection", 503]))],
    );
    assert!(
        after.contains("retryOn: connect-failure,refused-stream,503"),
        "{after}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("Istio's default retryOn")
                && n.contains("add `unavailable,cancelled`")),
        "{notes:?}"
    );
    // A route with a retryOn of its own had no default to lose.
    let (_, notes) = export(
        VS,
        Format::IstioVirtualservice,
        &sel("own"),
        &[("retry.retry_on", json!(["connection", 503]))],
    );
    assert!(
        !notes.iter().any(|n| n.contains("Istio's default retryOn")),
        "{notes:?}"
    );
}

// ------------------------------------------------------------------ D7

#[test]
fn grpc_a_byte_order_mark_is_refused_as_grpc_go_would() {
    let good = TWO.replace("{BAD}", GOOD);
    let e = errors(
        &format!("\u{feff}{good}"),
        Format::GrpcServiceConfig,
        &method_sel("g.Greeter/Bye"),
    );
    assert!(
        e.starts_with("f:1:1: not valid JSON: a byte order mark"),
        "{e}"
    );
}
