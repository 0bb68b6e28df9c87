//! Held-out review 7, through the binary: for each format a realistic
//! file (comments, keys stormsim does not read) is imported as its
//! documented values; `export --dry-run` prints a diff that touches only
//! the tuned keys (and those the tuned policy makes wrong) and changes
//! nothing; import → export → import gives the values read first; and a
//! key stormsim does not model is named at its file:line:column.

use std::fs;
use std::path::Path;

use crate::common::files::stormsim;

struct Case {
    file: &'static str,
    format: &'static str,
    selector: &'static [&'static str],
    text: &'static str,
    /// Lines (trimmed, before any comment) the import prints.
    imported: &'static [&'static str],
    /// The tuned values (dotted paths), and the file's own values of the
    /// same paths, to write them back.
    tuned: &'static str,
    original: &'static str,
    /// The diff's removed and added lines, trimmed.
    removed: &'static [&'static str],
    added: &'static [&'static str],
    /// A key stormsim does not model, added after the line holding
    /// `after`, and the start of the message naming it.
    unmodelled: (&'static str, &'static str, &'static str),
}

const CASES: &[Case] = &[
    Case {
        file: "service-config.json",
        format: "grpc-service-config",
        selector: &["--method", "shop.v1.Orders/Create"],
        text: r#"{
  "loadBalancingConfig": [{ "round_robin": {} }],
  "methodConfig": [
    {
      "name": [{ "service": "shop.v1.Orders", "method": "Create" }],
      "timeout": "2s",
      "retryPolicy": {
        "maxAttempts": 3,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]
      }
    }
  ]
}
"#,
        imported: &[
            "total_timeout: 2s",
            "max_attempts: 3",
            "base: 100ms",
            "cap: 1s",
            "retry_on: [connection, 503]",
        ],
        tuned: "layers.x.retry.max_attempts: 4\nlayers.x.retry.retry_on: [connection, 503, 429]\n",
        original: "layers.x.retry.max_attempts: 3\nlayers.x.retry.retry_on: [connection, 503]\n",
        removed: &[
            r#""maxAttempts": 3,"#,
            r#""retryableStatusCodes": ["UNAVAILABLE"]"#,
        ],
        added: &[
            r#""maxAttempts": 4,"#,
            r#""retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]"#,
        ],
        unmodelled: (
            r#""timeout": "2s","#,
            r#"      "waitForReady": true,"#,
            "service-config.json:7:23: methodConfig[0].waitForReady: not modelled",
        ),
    },
    Case {
        file: "envoy.yaml",
        format: "envoy-route",
        selector: &["--route", "rpc"],
        text: "# RDS for the edge proxy\nname: edge\nvirtual_hosts:\n  - name: api\n    domains: [\"*\"]\n    routes:\n      - name: rpc   # the orders API, gRPC\n        match: { prefix: \"/orders.v1.Orders/\" }\n        route:\n          cluster: orders\n          timeout: 3s\n          retry_policy:\n            retry_on: unavailable,connect-failure\n            num_retries: 2\n            per_try_timeout: 0.5s\n",
        imported: &[
            "total_timeout: 3s",
            "timeout: 500ms",
            "max_attempts: 3",
            "retry_on: [503, connection]",
        ],
        tuned: "layers.x.retry.retry_on: [503, connection, 429]\nlayers.x.timeout: null\n",
        original: "layers.x.retry.retry_on: [503, connection]\nlayers.x.timeout: 500ms\n",
        removed: &[
            "retry_on: unavailable,connect-failure",
            "per_try_timeout: 0.5s",
        ],
        added: &["retry_on: unavailable,connect-failure,resource-exhausted"],
        unmodelled: (
            "timeout: 3s",
            "          idle_timeout: 5s",
            "envoy.yaml:12:11: virtual_hosts[0].routes[0].route.idle_timeout",
        ),
    },
    Case {
        file: "virtualservice.yaml",
        format: "istio-virtualservice",
        selector: &["--host", "web", "--route", "page"],
        text: "# Web front end (Argo CD applies deploy/istio/)\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: web\n  namespace: shop\n  labels: { team: web }\nspec:\n  hosts: [web]\n  http:\n    - name: page\n      route:\n        - destination: { host: web }\n      timeout: 5s\n      retries:\n        attempts: 2   # Istio's default retryOn\n",
        imported: &[
            "total_timeout: 5s",
            "max_attempts: 3",
            "retry_on: [connection]",
        ],
        tuned: "layers.x.retry.retry_on: [connection, 503]\n",
        original: "layers.x.retry.retry_on: [connection]\n",
        removed: &[],
        added: &["retryOn: connect-failure,refused-stream,503"],
        unmodelled: (
            "timeout: 5s",
            "      fault: { abort: { httpStatus: 503, percentage: { value: 1 } } }",
            "virtualservice.yaml:15:7: spec.http[0].fault: not modelled",
        ),
    },
    Case {
        file: "serviceprofile.yaml",
        format: "linkerd-serviceprofile",
        selector: &["--route", "GET /orders"],
        text: "# ServiceProfile for orders (generated, then edited)\napiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: orders.shop.svc.cluster.local\n  namespace: shop\nspec:\n  routes:\n    - name: GET /orders\n      condition: { method: GET, pathRegex: /orders }\n      isRetryable: true   # reads are safe\n      timeout: 2s\n  retryBudget:\n    retryRatio: 0.2\n    minRetriesPerSecond: 10\n    ttl: 10s\n",
        imported: &[
            "total_timeout: 2s",
            "max_attempts: 1000",
            "percent_can_retry: 0.2",
            "min_retries_per_sec: 10",
        ],
        tuned: "layers.x.total_timeout: 3s\nlayers.x.retry.budget.percent_can_retry: 0.1\n",
        original: "layers.x.total_timeout: 2s\nlayers.x.retry.budget.percent_can_retry: 0.2\n",
        removed: &["timeout: 2s", "retryRatio: 0.2"],
        added: &["timeout: 3s", "retryRatio: 0.1"],
        unmodelled: (
            "timeout: 2s",
            "      responseClasses:\n        - condition: { status: { min: 500, max: 599 } }\n          isFailure: false",
            "serviceprofile.yaml:14:11: spec.routes[0].responseClasses: not modelled",
        ),
    },
    Case {
        file: "application.yml",
        format: "resilience4j",
        selector: &["--instance", "orders"],
        text: "# Orders client\nspring:\n  application:\n    name: shop\nresilience4j:\n  retry:\n    instances:\n      orders:\n        maxAttempts: 3\n        waitDuration: 200ms\n        enableExponentialBackoff: true   # doubling\n        exponentialBackoffMultiplier: 2\n        exponentialMaxWaitDuration: 2s\n        retryExceptions:\n          - java.io.IOException\n  circuitbreaker:\n    instances:\n      orders:\n        failureRateThreshold: 50\n",
        imported: &[
            "max_attempts: 3",
            "kind: exponential",
            "base: 200ms",
            "multiplier: 2",
            "cap: 2s",
            "retry_on: [timeout, connection]",
        ],
        tuned: "layers.x.retry.backoff: { kind: constant, base: 300ms }\n",
        original: "layers.x.retry.backoff: { kind: exponential, base: 200ms, multiplier: 2, cap: 2s, truncate_ms: true }\n",
        removed: &[
            "waitDuration: 200ms",
            "enableExponentialBackoff: true   # doubling",
            "exponentialBackoffMultiplier: 2",
            "exponentialMaxWaitDuration: 2s",
        ],
        added: &[
            "waitDuration: 300ms",
            "enableExponentialBackoff: false   # doubling",
        ],
        unmodelled: (
            "failureRateThreshold: 50",
            "        slowCallRateThreshold: 80",
            "application.yml:20:32: resilience4j.circuitbreaker.instances.orders.slowCallRateThreshold: not modelled",
        ),
    },
    Case {
        file: "appsettings.json",
        format: "ms-resilience",
        selector: &["--section", "HttpClients:Orders:Resilience"],
        text: "{\n  // Orders client\n  \"Logging\": { \"LogLevel\": { \"Default\": \"Information\" } },\n  \"HttpClients\": {\n    \"Orders\": {\n      \"Resilience\": {\n        \"Retry\": {\n          \"MaxRetryAttempts\": 3,\n          \"BackoffType\": \"Exponential\",\n          \"Delay\": \"00:00:00.200\",\n          \"MaxDelay\": \"00:00:05\"\n        }\n      }\n    }\n  }\n}\n",
        imported: &[
            "max_attempts: 4",
            "kind: exponential",
            "base: 200ms",
            "cap: 5s",
        ],
        tuned: "layers.x.retry.backoff: { kind: constant, base: 1s }\nlayers.x.retry.jitter: { proportional: 0.25 }\n",
        original: "layers.x.retry.backoff: { kind: exponential, base: 200ms, multiplier: 2, cap: 5s }\nlayers.x.retry.jitter: polly_v2\n",
        removed: &[
            "\"BackoffType\": \"Exponential\",",
            "\"Delay\": \"00:00:00.200\",",
            "\"MaxDelay\": \"00:00:05\"",
        ],
        added: &[
            "\"BackoffType\": \"Constant\",",
            "\"Delay\": \"00:00:01.000\"",
        ],
        unmodelled: (
            "\"Resilience\": {",
            "        \"RateLimiter\": { \"DefaultRateLimiterOptions\": { \"PermitLimit\": 10 } },",
            "appsettings.json:7:57: HttpClients:Orders:Resilience:RateLimiter:DefaultRateLimiterOptions:PermitLimit: not modelled",
        ),
    },
    Case {
        file: "config",
        format: "aws-config",
        selector: &["--profile", "batch"],
        text: "# ~/.aws/config for the batch team\n[default]\nregion = eu-west-1\noutput = json\n\n[profile batch]\nregion = eu-west-1   \nretry_mode = standard\nmax_attempts = 4\n",
        imported: &["max_attempts: 4", "kind: aws_quota", "jitter: full"],
        tuned: "layers.x.retry.max_attempts: 6\n",
        original: "layers.x.retry.max_attempts: 4\n",
        removed: &["max_attempts = 4"],
        added: &["max_attempts = 6"],
        unmodelled: (
            "max_attempts = 4",
            "metadata_service_num_attempts = 3",
            "warning: config:10:1: [profile batch].metadata_service_num_attempts: not simulated",
        ),
    },
];

fn run(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = stormsim().current_dir(dir).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn import(dir: &Path, c: &Case) -> String {
    let mut args = vec!["import", c.file, "--format", c.format];
    args.extend(c.selector);
    let (ok, out, err) = run(dir, &args);
    assert!(ok, "{}: {err}", c.file);
    out
}

/// The layer's values as printed, without the comments saying where each
/// came from (their line numbers move with an edit).
fn values(printed: &str) -> Vec<String> {
    printed
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split("  #").next().unwrap_or(l).trim_end().to_string())
        .collect()
}

fn export(dir: &Path, c: &Case, best: &str, dry: bool) -> (String, String) {
    fs::write(dir.join("best.yaml"), best).unwrap();
    let mut args = vec![
        "export",
        "best.yaml",
        "--into",
        c.file,
        "--format",
        c.format,
    ];
    args.extend(c.selector);
    if dry {
        args.push("--dry-run");
    }
    let (ok, out, err) = run(dir, &args);
    assert!(ok, "{}: {err}", c.file);
    (out, err)
}

/// The diff's removed and added lines, trimmed.
fn diff_lines(diff: &str) -> (Vec<String>, Vec<String>) {
    let pick = |p: char| -> Vec<String> {
        diff.lines()
            .filter(|l| l.starts_with(p) && !l.starts_with("---") && !l.starts_with("+++"))
            .map(|l| l[1..].trim().to_string())
            .collect()
    };
    (pick('-'), pick('+'))
}

#[test]
fn import_gives_the_documented_values() {
    for c in CASES {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(c.file), c.text).unwrap();
        let v = values(&import(dir.path(), c));
        for want in c.imported {
            assert!(
                v.iter().any(|l| l.trim() == *want),
                "{}: no `{want}` in\n{}",
                c.file,
                v.join("\n")
            );
        }
    }
}

#[test]
fn dry_run_diff_touches_only_the_tuned_keys() {
    for c in CASES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(c.file);
        fs::write(&path, c.text).unwrap();
        let (diff, _) = export(dir.path(), c, c.tuned, true);
        let (removed, added) = diff_lines(&diff);
        assert_eq!(removed, c.removed, "{}:\n{diff}", c.file);
        assert_eq!(added, c.added, "{}:\n{diff}", c.file);
        assert_eq!(fs::read_to_string(&path).unwrap(), c.text, "{}", c.file);
    }
}

#[test]
fn import_export_import_is_the_identity() {
    for c in CASES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(c.file);
        fs::write(&path, c.text).unwrap();
        let first = values(&import(dir.path(), c));
        // The file's own values change nothing.
        let (diff, _) = export(dir.path(), c, c.original, true);
        assert_eq!(diff.trim(), "", "{}: {diff}", c.file);
        // Tuned, then back.
        export(dir.path(), c, c.tuned, false);
        assert_ne!(fs::read_to_string(&path).unwrap(), c.text, "{}", c.file);
        let tuned = values(&import(dir.path(), c));
        assert_ne!(tuned, first, "{}", c.file);
        export(dir.path(), c, c.original, false);
        assert_eq!(values(&import(dir.path(), c)), first, "{}", c.file);
        // Exporting the tuned values again gives the tuned file's values.
        export(dir.path(), c, c.tuned, false);
        assert_eq!(values(&import(dir.path(), c)), tuned, "{}", c.file);
    }
}

#[test]
fn an_unmodelled_key_is_named_at_its_position() {
    for c in CASES {
        let (after, add, message) = c.unmodelled;
        let dir = tempfile::tempdir().unwrap();
        let i = c
            .text
            .find(after)
            .unwrap_or_else(|| panic!("{}: {after}", c.file));
        let eol = i + c.text[i..].find('\n').unwrap() + 1;
        let text = format!("{}{add}\n{}", &c.text[..eol], &c.text[eol..]);
        fs::write(dir.path().join(c.file), &text).unwrap();
        let mut args = vec!["import", c.file, "--format", c.format];
        args.extend(c.selector);
        let (_, _, err) = run(dir.path(), &args);
        assert!(
            err.lines().any(|l| l.starts_with(message)),
            "{}: no `{message}` in\n{err}\n{text}",
            c.file
        );
    }
}
