//! Review 10, through the binary: an exported setting that is not the
//! selected policy's own (gRPC `retryThrottling`, Linkerd `retryBudget`,
//! an Envoy cluster's circuit breakers) is written with a note on stderr
//! naming what else it changes, beside the diff of `--dry-run` and after
//! a real write alike; and a Resilience4j duration keeps the file's style
//! (a bare number of milliseconds, ISO-8601 inherited from configs.default).

use std::fs;
use std::path::Path;

use crate::common::files::stormsim;

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = stormsim().current_dir(dir).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const GRPC: &str = r#"{
  "methodConfig": [
    {
      "name": [{ "service": "shop.Cart", "method": "Get" }],
      "timeout": "2s",
      "retryPolicy": {
        "maxAttempts": 3,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]
      }
    },
    { "name": [{ "service": "shop.Cart", "method": "Put" }], "timeout": "5s" }
  ],
  "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
}
"#;

#[test]
fn grpc_retry_throttling_note_on_dry_run_and_on_write() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("sc.json"), GRPC).unwrap();
    fs::write(
        dir.path().join("best.yaml"),
        "layers.x.retry.budget.kind: token_bucket\nlayers.x.retry.budget.token_ratio: 0.2\n",
    )
    .unwrap();
    let args = [
        "export",
        "best.yaml",
        "--into",
        "sc.json",
        "--format",
        "grpc-service-config",
        "--method",
        "shop.Cart/Get",
    ];
    let note = "note: retryThrottling is the channel's, not `shop.Cart/Get`'s: one token bucket for every call on the channel, whatever its method, so the change applies to every method of this service config; the service config also names `shop.Cart/Put`";
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let (code, out, err) = run(dir.path(), &dry);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("+  \"retryThrottling\": { \"maxTokens\": 10, \"tokenRatio\": 0.2 }"),
        "{out}"
    );
    assert!(err.contains(note), "{err}");
    assert_eq!(
        fs::read_to_string(dir.path().join("sc.json")).unwrap(),
        GRPC
    );
    let (code, _, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(note), "{err}");
    assert_eq!(
        fs::read_to_string(dir.path().join("sc.json")).unwrap(),
        GRPC.replace("\"tokenRatio\": 0.1", "\"tokenRatio\": 0.2")
    );
}

#[test]
fn linkerd_and_envoy_shared_settings_name_the_other_routes() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("sp.yaml"),
        "# orders profile\napiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: orders.shop.svc.cluster.local\nspec:\n  routes:\n  - name: GET /orders\n    condition: { method: GET, pathRegex: /orders }\n    isRetryable: true\n  - name: POST /orders\n    condition: { method: POST, pathRegex: /orders }\n  retryBudget:\n    retryRatio: 0.2\n    minRetriesPerSecond: 10\n    ttl: 10s\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("best.yaml"),
        "layers.x.retry.budget.kind: finagle\nlayers.x.retry.budget.percent_can_retry: 0.1\n",
    )
    .unwrap();
    let (code, out, err) = run(
        dir.path(),
        &[
            "export",
            "best.yaml",
            "--into",
            "sp.yaml",
            "--format",
            "linkerd-serviceprofile",
            "--route",
            "GET /orders",
            "--dry-run",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("+    retryRatio: 0.1"), "{out}");
    assert!(
        err.contains("note: spec.retryBudget is the ServiceProfile's (`orders.shop.svc.cluster.local`), not the route's: the change applies to every route of the profile; that is also the route `POST /orders`"),
        "{err}"
    );

    fs::write(
        dir.path().join("envoy.yaml"),
        "# routes of the edge\nvirtual_hosts:\n- name: shop\n  domains: [\"*\"]\n  routes:\n  - name: cart\n    match: { prefix: /cart }\n    route: { cluster: shop, timeout: 2s }\n  - name: admin\n    match: { prefix: /admin }\n    route: { cluster: admin }\n  - match: { prefix: / }\n    route: { cluster: shop }\nclusters:\n- name: shop\n  circuit_breakers:\n    thresholds:\n    - priority: DEFAULT\n      max_requests: 100\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("best2.yaml"),
        "layers.x.bulkhead.max_concurrent: 50\n",
    )
    .unwrap();
    let (code, out, err) = run(
        dir.path(),
        &[
            "export",
            "best2.yaml",
            "--into",
            "envoy.yaml",
            "--format",
            "envoy-route",
            "--route",
            "cart",
            "--dry-run",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("+      max_requests: 50"), "{out}");
    assert!(
        err.contains("note: clusters[0].circuit_breakers (cluster `shop`, line 15) is the cluster's, not the route's: the change applies to every route that sends to `shop`; in this file that is also the route `/` (line 12, virtual host `shop`)"),
        "{err}"
    );
    assert!(!err.contains("`admin`"), "{err}");
}

#[test]
fn resilience4j_durations_keep_the_files_style() {
    let dir = tempfile::tempdir().unwrap();
    let yml = "# checkout\nresilience4j:\n  retry:\n    configs:\n      default:\n        waitDuration: PT2S\n    instances:\n      inventory:\n        baseConfig: default\n        maxAttempts: 4\n      payments:\n        maxAttempts: 2\n        waitDuration: 100   # ms\n";
    fs::write(dir.path().join("application.yml"), yml).unwrap();
    fs::write(
        dir.path().join("best.yaml"),
        "layers.x.retry.backoff.base: 200ms\n",
    )
    .unwrap();
    let base = [
        "export",
        "best.yaml",
        "--into",
        "application.yml",
        "--format",
        "resilience4j",
        "--instance",
    ];
    let mut args = base.to_vec();
    args.push("payments");
    let (code, _, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let after = fs::read_to_string(dir.path().join("application.yml")).unwrap();
    assert_eq!(
        after,
        yml.replace("waitDuration: 100   # ms", "waitDuration: 200   # ms")
    );
    let mut args = base.to_vec();
    args.push("inventory");
    let (code, _, err) = run(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("configs.default is not changed"), "{err}");
    let after2 = fs::read_to_string(dir.path().join("application.yml")).unwrap();
    assert_eq!(
        after2,
        after.replace(
            "        maxAttempts: 4\n",
            "        maxAttempts: 4\n        waitDuration: PT0.2S\n"
        )
    );
    // Read back: both instances wait 200 ms.
    for inst in ["payments", "inventory"] {
        let (code, out, err) = run(
            dir.path(),
            &[
                "import",
                "application.yml",
                "--format",
                "resilience4j",
                "--instance",
                inst,
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("base: 200ms"), "{inst}: {out}");
    }
}
