//! Settings from configuration files on the call edges of a services
//! graph: `from:` on a call (values, leaf-by-leaf overrides, the resolved
//! scenario, errors in the file, the file as an input of the output
//! folder), `stormsim import --to`, `stormsim export --call`, and an Envoy
//! cluster's `outlier_detection` read as the call's.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use stormsim::scenario::graph::Call;
use stormsim::scenario::units::Duration;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs/envoy-mesh.yaml")
}

fn stormsim(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("stormsim").unwrap();
    c.current_dir(dir);
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The 1-based line and column of the first `needle` in the fixture.
/// `stormsim export best.yaml --into envoy-mesh.yaml --format envoy-route
/// --route orders-api EXTRA...` in `dir`.
fn export_orders_api(dir: &Path, extra: &[&str]) -> Output {
    stormsim(dir)
        .args([
            "export",
            "best.yaml",
            "--into",
            "envoy-mesh.yaml",
            "--format",
            "envoy-route",
            "--route",
            "orders-api",
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn position(needle: &str) -> (usize, usize) {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in the fixture"));
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Every file below `dir` with its bytes, sorted.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A graph whose gateway calls `orders` (4 replicas) with `call` (YAML
/// lines of the call, 6 spaces in, without `- to: orders`).
fn graph(call: &str) -> String {
    format!(
        "name: mesh\nseed: 7\nduration: 6s\nbucket: 1s\nreplicates: 1\n\
         clients:\n  arrival: {{ kind: poisson, rate: 200/s }}\n  calls: gateway\n\
         services:\n  - name: gateway\n    calls:\n      - to: orders\n{call}\
         \x20 - name: orders\n    replicas: 4\n    concurrency: 8\n    service_time: {{ dist: exponential, mean: 10ms }}\n\
         \x20   incidents:\n      - {{ kind: errors, rate: 1.0, status: 500, start: 1s, end: 4s, replicas: [3] }}\n"
    )
}

/// A workspace: `deploy/envoy-mesh.yaml` and `scen/mesh.yaml` holding
/// `scenario`.
fn workspace(scenario: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("deploy")).unwrap();
    std::fs::create_dir_all(root.path().join("scen")).unwrap();
    std::fs::copy(fixture(), root.path().join("deploy/envoy-mesh.yaml")).unwrap();
    std::fs::write(root.path().join("scen/mesh.yaml"), scenario).unwrap();
    root
}

const FROM_ORDERS: &str =
    "        from: { file: ../deploy/envoy-mesh.yaml, format: envoy-route, route: orders-api }\n";

fn the_call(s: &stormsim::scenario::Scenario) -> &Call {
    &s.services[0].calls[0]
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_call_takes_its_policy_and_outlier_detection_from_the_file() {
    let root = workspace(&graph(&format!(
        "{FROM_ORDERS}        retry: {{ max_attempts: 4, backoff: {{ cap: 80ms }} }}\n        outlier_detection: {{ consecutive_5xx: 7 }}\n"
    )));
    let s = stormsim::scenario::load_file(&root.path().join("scen/mesh.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let c = the_call(&s);
    // The file's values.
    assert_eq!(c.total_timeout, Some(ms(2000)));
    assert_eq!(c.timeout, Some(ms(500)));
    assert!(
        c.retry_other_replica,
        "previous_hosts is retry_other_replica"
    );
    assert_eq!(c.retry.backoff().base, ms(20));
    let budget = c.retry.budget.as_ref().unwrap();
    assert_eq!(budget.max_retries, Some(16));
    assert_eq!(c.bulkhead.as_ref().unwrap().max_concurrent, 512);
    let o = c.outlier_detection.as_ref().unwrap();
    assert_eq!(o.interval, ms(5000));
    assert_eq!(o.base_ejection, ms(15_000));
    assert_eq!(o.max_ejection_percent, 50);
    // Envoy's default: 300 s, as base_ejection_time is shorter.
    assert_eq!(o.max_ejection, ms(300_000));
    // Fields beside `from` override leaf by leaf.
    assert_eq!(c.retry.max_attempts, 4);
    assert_eq!(c.retry.backoff().cap, Some(ms(80)));
    assert_eq!(o.consecutive_5xx, 7);
    // validate prints the file's warnings, located in it.
    let out = stormsim(root.path())
        .args(["validate", "scen/mesh.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (line, col) = position("host_selection_retry_max_attempts");
    let want = format!(
        "warning: scen/../deploy/envoy-mesh.yaml:{line}:{col}: virtual_hosts[0].routes[0].route.retry_policy.host_selection_retry_max_attempts: not simulated as such"
    );
    assert!(stderr(&out).contains(&want), "{}\n{want}", stderr(&out));
    assert!(
        stderr(&out).contains("(from services.gateway.calls.orders)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_clients_call_takes_from_too() {
    let scenario = graph("").replace(
        "  calls: gateway\n",
        "  calls: { to: gateway, from: { file: ../deploy/envoy-mesh.yaml, format: envoy-route, route: payments-api } }\n",
    );
    let root = workspace(&scenario);
    let s = stormsim::scenario::load_file(&root.path().join("scen/mesh.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let c = s.clients.calls.as_ref().unwrap();
    assert_eq!(c.total_timeout, Some(ms(5000)));
    assert_eq!(c.retry.max_attempts, 2);
    // The gateway has one replica, fewer than the 5 hosts success-rate
    // ejection needs: Envoy's defaults with the file's ejection time.
    let o = c.outlier_detection.as_ref().unwrap();
    assert_eq!(
        (
            o.consecutive_5xx,
            o.interval,
            o.base_ejection,
            o.max_ejection_percent,
            o.max_ejection
        ),
        (5, ms(10_000), ms(60_000), 10, ms(300_000))
    );
}

#[test]
fn the_resolved_scenario_keeps_from_and_reproduces_the_run_without_the_file() {
    let root = workspace(&graph(&format!(
        "{FROM_ORDERS}        retry: {{ max_attempts: 3 }}\n"
    )));
    let out = stormsim(root.path())
        .args(["run", "scen/mesh.yaml", "--out", "first", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let resolved =
        std::fs::read_to_string(root.path().join("first/scenario.resolved.yaml")).unwrap();
    assert!(
        resolved.contains("from:") && resolved.contains("resolved: true"),
        "{resolved}"
    );
    assert!(resolved.contains("consecutive_5xx: 3"), "{resolved}");
    assert!(resolved.contains("retry_other_replica: true"), "{resolved}");
    // Elsewhere, without the configuration file.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("again.yaml"), &resolved).unwrap();
    let out = stormsim(other.path())
        .args(["run", "again.yaml", "--out", "second", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for table in [
        "summary.csv",
        "timeseries.csv",
        "calls.csv",
        "services.csv",
        "replicas.csv",
    ] {
        let a = std::fs::read(root.path().join("first").join(table)).unwrap();
        let b = std::fs::read(other.path().join("second").join(table)).unwrap();
        assert!(a == b, "{table} differs");
    }
    let again =
        std::fs::read_to_string(other.path().join("second/scenario.resolved.yaml")).unwrap();
    assert_eq!(again, resolved);
    // The file's outlier detection ran: the bad replica (3) was ejected.
    let replicas = std::fs::read_to_string(root.path().join("first/replicas.csv")).unwrap();
    let mut lines = replicas.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (replica, ejections) = (col("replica"), col("ejections"));
    let ejected: Vec<(String, u64)> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[ejections] != "0" && !c[ejections].is_empty())
        .map(|c| (c[replica].to_string(), c[ejections].parse().unwrap()))
        .collect();
    assert!(
        !ejected.is_empty() && ejected.iter().all(|(r, _)| r == "3"),
        "{replicas}"
    );
}

#[test]
fn unmodelled_outlier_settings_are_errors_in_the_file() {
    let call = "        from: { file: ../deploy/envoy-mesh.yaml, format: envoy-route, route: inventory-api }\n";
    let root = workspace(&graph(call).replace("replicas: 4", "replicas: 6"));
    let before = snapshot(root.path());
    let out = stormsim(root.path())
        .args(["run", "scen/mesh.yaml", "--out", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("scen/mesh.yaml:13:15: services.gateway.calls.orders.from: ../deploy/envoy-mesh.yaml cannot be read as envoy-route"),
        "{err}"
    );
    for key in [
        "split_external_local_origin_errors",
        "enforcing_failure_percentage",
        "max_ejection_time_jitter",
    ] {
        let (line, col) = position(&format!("{key}:"));
        let want = format!(
            "envoy-mesh.yaml:{line}:{col}: clusters[2].outlier_detection.{key}: not modelled"
        );
        assert!(err.contains(&want), "{err}\nwanted {want}");
    }
    // The inventory cluster leaves success-rate ejection on (Envoy's
    // default), and orders has 6 replicas, enough for it.
    assert!(
        err.contains("outlier_detection.enforcing_success_rate: not modelled"),
        "{err}"
    );
    assert!(err.contains("the service called has 6 replicas"), "{err}");
    assert_eq!(snapshot(root.path()), before, "nothing is written");
    // With 5 replicas success-rate ejection may run: an error at the
    // outlier_detection key (the setting is Envoy's default).
    let root = workspace(
        &graph("        from: { file: ../deploy/envoy-mesh.yaml, format: envoy-route, route: payments-api }\n")
            .replace("replicas: 4", "replicas: 5"),
    );
    let out = stormsim(root.path())
        .args(["validate", "scen/mesh.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = std::fs::read_to_string(fixture()).unwrap();
    let payments = text.find("\n    - name: payments\n").unwrap();
    let at = payments + text[payments..].find("outlier_detection:").unwrap();
    let line = text[..at].matches('\n').count() + 1;
    let want = format!(
        "envoy-mesh.yaml:{line}:7: clusters[1].outlier_detection.enforcing_success_rate: not modelled: success-rate ejection (enforcing_success_rate 100, Envoy's default"
    );
    assert!(
        stderr(&out).contains(&want),
        "{}\nwanted {want}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("has 5 replicas"), "{}", stderr(&out));
    // `ignore` accepts leaving it out, with a warning.
    let root = workspace(
        &graph("        from: { file: ../deploy/envoy-mesh.yaml, format: envoy-route, route: payments-api, ignore: [enforcing_success_rate] }\n")
            .replace("replicas: 4", "replicas: 5"),
    );
    let out = stormsim(root.path())
        .args(["validate", "scen/mesh.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ignored as `ignore` asks"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn on_a_layer_outlier_detection_stays_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(), dir.path().join("envoy-mesh.yaml")).unwrap();
    let out = stormsim(dir.path())
        .args([
            "import",
            "envoy-mesh.yaml",
            "--format",
            "envoy-route",
            "--route",
            "orders-api",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let (line, col) = position("outlier_detection:");
    assert!(
        stderr(&out).contains(&format!(
            "envoy-mesh.yaml:{line}:{col}: clusters[0].outlier_detection: not modelled: outlier ejection"
        )),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_call_edges_configuration_file_is_an_input_even_with_force() {
    use predicates::prelude::PredicateBooleanExt;
    use predicates::str::contains;
    let scenario = graph(FROM_ORDERS)
        + "tune:\n  space: { services.gateway.calls.orders.retry.max_attempts: [2, 3] }\n  budget: 2\n";
    let root = workspace(&scenario);
    let deploy = root.path().join("deploy");
    let before = snapshot(&deploy);
    for args in [
        vec!["run", "scen/mesh.yaml", "--out", "deploy", "--force"],
        vec![
            "run",
            "scen/mesh.yaml",
            "--shard",
            "0/1",
            "--out",
            "deploy",
            "--force",
        ],
        vec!["tune", "scen/mesh.yaml", "--out", "deploy", "--force"],
    ] {
        stormsim(root.path())
            .args(&args)
            .assert()
            .code(2)
            .stderr(contains("the input").and(contains("envoy-mesh.yaml")));
        assert_eq!(snapshot(&deploy), before, "{args:?} touched the folder");
    }
    stormsim(root.path())
        .args([
            "run",
            "scen/mesh.yaml",
            "--shard",
            "0/1",
            "--out",
            "sh0",
            "--quiet",
        ])
        .assert()
        .code(0);
    stormsim(root.path())
        .args(["merge", "sh0", "--out", "deploy", "--force"])
        .assert()
        .code(2)
        .stderr(
            contains("call `services.gateway.calls.orders` reads").and(contains("envoy-mesh.yaml")),
        );
    assert_eq!(snapshot(&deploy), before, "merge touched the folder");
}

/// `import --to` prints a call; pasted into a scenario, tuned, exported
/// with `--call` and imported again it gives the tuned values; an export
/// of what the file already says changes nothing.
#[test]
fn import_to_a_service_export_a_call_and_import_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(), dir.path().join("envoy-mesh.yaml")).unwrap();
    let import = |dir: &Path| {
        stormsim(dir)
            .args([
                "import",
                "envoy-mesh.yaml",
                "--format",
                "envoy-route",
                "--route",
                "orders-api",
                "--to",
                "orders",
            ])
            .output()
            .unwrap()
    };
    let out = import(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let call = stdout(&out);
    assert!(call.contains("\n- to: orders\n"), "{call}");
    assert!(call.contains("paste under a service's `calls:`"), "{call}");
    for line in [
        "  retry_other_replica: true",
        "  outlier_detection:\n    consecutive_5xx: 3",
        "    interval: 5s",
        "    base_ejection: 15s",
        "    max_ejection_percent: 50",
        "    max_ejection: 5m",
    ] {
        assert!(call.contains(line), "{line:?} missing in\n{call}");
    }
    // The printed call, pasted under the gateway's calls.
    let pasted: String = call
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("      {l}\n"))
        .collect();
    let scenario = graph("").replace("      - to: orders\n", &pasted);
    std::fs::write(dir.path().join("best.yaml"), &scenario).unwrap();
    let export = |dir: &Path, extra: &[&str]| {
        export_orders_api(dir, &[&["--call", "gateway.orders"], extra].concat())
    };
    let out = export(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("already holds these values"),
        "{}",
        stderr(&out)
    );
    // Tuned: two ejection settings and the attempts.
    let tuned = scenario
        .replace("consecutive_5xx: 3", "consecutive_5xx: 4")
        .replace("base_ejection: 15s", "base_ejection: 20s")
        .replace("max_attempts: 3", "max_attempts: 2");
    std::fs::write(dir.path().join("best.yaml"), &tuned).unwrap();
    let before = std::fs::read_to_string(dir.path().join("envoy-mesh.yaml")).unwrap();
    let out = export(dir.path(), &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = stdout(&out);
    let changed: Vec<&str> = diff
        .lines()
        .filter(|l| {
            (l.starts_with('-') || l.starts_with('+'))
                && !l.starts_with("---")
                && !l.starts_with("+++")
        })
        .collect();
    assert_eq!(
        changed,
        [
            "-                              num_retries: 2",
            "+                              num_retries: 1",
            "-        consecutive_5xx: 3",
            "+        consecutive_5xx: 4",
            "-        base_ejection_time: 15s",
            "+        base_ejection_time: 20s",
        ],
        "{diff}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("envoy-mesh.yaml")).unwrap(),
        before
    );
    let out = export(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after = std::fs::read_to_string(dir.path().join("envoy-mesh.yaml")).unwrap();
    assert!(after.contains("        consecutive_5xx: 4\n"), "{after}");
    assert!(
        after.contains("# Eject a replica after three failures in a row"),
        "comments kept"
    );
    let again = stdout(&import(dir.path()));
    for line in [
        "    max_attempts: 2",
        "    consecutive_5xx: 4",
        "    base_ejection: 20s",
        "    max_ejection: 5m",
    ] {
        assert!(again.contains(line), "{line:?} missing in\n{again}");
    }
    // Without --call: the call whose `from` names the file.
    let with_from = tuned.replace(
        "      - to: orders\n",
        "      - to: orders\n        from: { file: envoy-mesh.yaml, format: envoy-route, route: orders-api }\n",
    );
    let with_from = with_from.replace("consecutive_5xx: 4", "consecutive_5xx: 6");
    std::fs::write(dir.path().join("best.yaml"), with_from).unwrap();
    let out = export_orders_api(dir.path(), &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("+        consecutive_5xx: 6\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn import_to_reads_defaults_and_the_replicas() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(), dir.path().join("envoy-mesh.yaml")).unwrap();
    let run = |extra: &[&str]| {
        stormsim(dir.path())
            .args([
                "import",
                "envoy-mesh.yaml",
                "--format",
                "envoy-route",
                "--route",
                "payments-api",
                "--to",
                "payments",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    // Replicas not known: success-rate ejection (on by default) may run.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("enforcing_success_rate: not modelled"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--replicas"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let out = run(&["--replicas", "3", "--name", "pay"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let call = stdout(&out);
    let (line, _) = position("base_ejection_time: 60s");
    for want in [
        "- to: payments\n  name: pay\n".to_string(),
        "    consecutive_5xx: 5                      # clusters[1].outlier_detection.consecutive_5xx (default)".into(),
        "    interval: 10s".into(),
        format!("    base_ejection: 1m                       # clusters[1].outlier_detection.base_ejection_time, line {line}"),
        "    max_ejection_percent: 10".into(),
        "    max_ejection: 5m".into(),
    ] {
        assert!(call.contains(&want), "{want:?} missing in\n{call}");
    }
    assert!(!call.contains("retry_other_replica"), "{call}");
    // A bad --to.
    let out = run(&["--to", "a.b"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn export_call_errors_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(), dir.path().join("envoy-mesh.yaml")).unwrap();
    std::fs::write(
        dir.path().join("best.yaml"),
        graph("        outlier_detection: { consecutive_5xx: 2 }\n"),
    )
    .unwrap();
    let before = snapshot(dir.path());
    let run = |call: &str| export_orders_api(dir.path(), &["--call", call]);
    let out = run("gateway.nowhere");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no call `gateway.nowhere`"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("the calls are clients, gateway.orders"),
        "{}",
        stderr(&out)
    );
    // Dotted paths of a call; a value the file cannot hold (no
    // retry_other_replica to take away by a simple edit).
    std::fs::write(
        dir.path().join("best.yaml"),
        "services.gateway.calls.orders.retry_other_replica: false\n",
    )
    .unwrap();
    let before_sets = snapshot(dir.path());
    let out = export_orders_api(dir.path(), &["--replicas", "4"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("retry_other_replica: cannot be written to this file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(dir.path()), before_sets);
    let _ = before;
}

/// The balancing of a call is the called service's `balancer`: a cluster
/// that balances otherwise is an error at its `lb_policy`, naming the
/// balancer to set; with that balancer the call loads.
#[test]
fn a_clusters_lb_policy_must_be_the_services_balancer() {
    let root =
        workspace(&graph(FROM_ORDERS).replace("replicas: 4", "replicas: 4\n    balancer: p2c"));
    let out = stormsim(root.path())
        .args(["validate", "scen/mesh.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let (line, col) = position("lb_policy: ROUND_ROBIN");
    let want = format!(
        "envoy-mesh.yaml:{line}:{col}: clusters[0].lb_policy: not modelled: the cluster balances by ROUND_ROBIN, stormsim's `balancer: round_robin`, but the service called balances by `p2c`: set `balancer: round_robin` on it"
    );
    assert!(
        stderr(&out).contains(&want),
        "{}\nwanted {want}",
        stderr(&out)
    );
    // LEAST_REQUEST is p2c.
    let text = std::fs::read_to_string(root.path().join("deploy/envoy-mesh.yaml"))
        .unwrap()
        .replace("lb_policy: ROUND_ROBIN", "lb_policy: LEAST_REQUEST");
    std::fs::write(root.path().join("deploy/envoy-mesh.yaml"), text).unwrap();
    let out = stormsim(root.path())
        .args(["validate", "scen/mesh.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn istio_and_grpc_on_a_call() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs");
    let import = |args: &[&str]| stormsim(&dir).arg("import").args(args).output().unwrap();
    // Istio's default policy (no retries block) avoids the hosts tried.
    let out = import(&[
        "virtualservice.yaml",
        "--format",
        "istio-virtualservice",
        "--host",
        "orders.shop.svc.cluster.local",
        "--route",
        "get-order",
        "--to",
        "orders",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("  retry_other_replica: true                 # Istio's default retry policy: the previous_hosts predicate (retry.go)"),
        "{}",
        stdout(&out)
    );
    // The same route as a layer has no such field.
    let out = import(&[
        "virtualservice.yaml",
        "--format",
        "istio-virtualservice",
        "--host",
        "orders.shop.svc.cluster.local",
        "--route",
        "get-order",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("retry_other_replica"),
        "{}",
        stdout(&out)
    );
    // A gRPC client's round_robin, on a call to a service whose balancer
    // is not known: a reminder at the policy.
    let out = import(&[
        "service-config.json",
        "--format",
        "grpc-service-config",
        "--method",
        "orders.v1.Orders/CreateOrder",
        "--to",
        "orders",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("service-config.json:2:27: loadBalancingConfig: the replicas a call goes to are picked by the called service's `balancer`: round_robin is `balancer: round_robin`"),
        "{}",
        stderr(&out)
    );
}

/// Issue 20, review item 2: gRPC's default load-balancing policy is
/// pick_first (grpc-go `service_config.go`), which sends every RPC of a
/// channel to one replica; stormsim cannot simulate it, so a call from a
/// service config without `loadBalancingConfig` to a replicated service
/// is an error at the file's start naming the ways out; with one replica
/// the policy is irrelevant, and an explicit `round_robin` is accepted
/// with one replica (a warning) and with several behind `balancer:
/// round_robin`, refused behind another balancer.
#[test]
fn grpc_pick_first_on_a_call_to_a_replicated_service() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs");
    let root = tempfile::tempdir().unwrap();
    for f in ["grpc-no-lb.json", "service-config.json"] {
        std::fs::copy(dir.join(f), root.path().join(f)).unwrap();
    }
    let scenario = |file: &str, replicas: u32, balancer: &str| {
        format!(
            "name: g\nseed: 1\nduration: 2s\nreplicates: 1\nclients:\n  arrival: {{ kind: poisson, rate: 50/s }}\n  calls: gateway\n\
             services:\n  - name: gateway\n    calls:\n      - to: orders\n        from: {{ file: {file}, format: grpc-service-config, method: orders.v1.Orders/CreateOrder }}\n\
             \x20 - name: orders\n    replicas: {replicas}\n    balancer: {balancer}\n    concurrency: 4\n    service_time: {{ dist: constant, value: 5ms }}\n"
        )
    };
    let validate = |text: String| {
        std::fs::write(root.path().join("s.yaml"), text).unwrap();
        stormsim(root.path())
            .args(["validate", "s.yaml"])
            .output()
            .unwrap()
    };
    // No loadBalancingConfig, 3 replicas: pick_first, an error.
    let out = validate(scenario("grpc-no-lb.json", 3, "round_robin"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("grpc-no-lb.json:1:1: loadBalancingConfig: not modelled: no loadBalancingConfig: gRPC's default policy, pick_first, sends every RPC of a channel to one replica (the first address that connects) and stays there; the service called has 3 replicas"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("`\"loadBalancingConfig\": [{ \"round_robin\": {} }]`"),
        "{}",
        stderr(&out)
    );
    // One replica: nothing to balance.
    let out = validate(scenario("grpc-no-lb.json", 1, "round_robin"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("loadBalancingConfig"),
        "{}",
        stderr(&out)
    );
    // An explicit round_robin with one replica: accepted, a warning.
    let out = validate(scenario("service-config.json", 1, "round_robin"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("loadBalancingConfig: not simulated: the service called has one replica, so the channel's `round_robin` has nothing to choose"),
        "{}",
        stderr(&out)
    );
    // Several replicas behind round_robin: the same balancing.
    let out = validate(scenario("service-config.json", 3, "round_robin"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Behind p2c: an error naming the balancer to set.
    let out = validate(scenario("service-config.json", 3, "p2c"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("service-config.json:2:27: loadBalancingConfig: not modelled: the channel balances by round_robin, stormsim's `balancer: round_robin`, but the service called balances by `p2c`: set `balancer: round_robin` on it"),
        "{}",
        stderr(&out)
    );
    // The old loadBalancingPolicy field, and an explicit pick_first.
    let text = std::fs::read_to_string(dir.join("grpc-no-lb.json")).unwrap();
    std::fs::write(
        root.path().join("grpc-no-lb.json"),
        text.replacen("{\n", "{\n  \"loadBalancingPolicy\": \"pick_first\",\n", 1),
    )
    .unwrap();
    let out = validate(scenario("grpc-no-lb.json", 2, "round_robin"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("grpc-no-lb.json:2:3: loadBalancingPolicy: not modelled: the channel's pick_first sends every RPC"),
        "{}",
        stderr(&out)
    );
}

/// Issue 20, review item 1: the checks a call's `from` makes against the
/// service it calls run for every run, not only for the file's scenario:
/// a variant, a `--set` or a searched value that gives the service called
/// more replicas (Envoy's success-rate ejection, on by default, runs over
/// 5 hosts or more) or another balancer is an error in the file, after
/// one at the `from` naming the run.
#[test]
fn from_checks_run_on_every_variant_set_and_searched_value() {
    let payments = FROM_ORDERS.replace("route: orders-api", "route: payments-api");
    let base = graph(&payments);
    // 4 replicas: below the 5 hosts success-rate ejection needs.
    let root = workspace(&base);
    let validate = |extra: &[&str]| {
        stormsim(root.path())
            .args(["validate", "scen/mesh.yaml"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = validate(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (line, col) = position("      outlier_detection:\n        base_ejection_time: 60s");
    let success_rate = format!(
        "envoy-mesh.yaml:{line}:{}: clusters[1].outlier_detection.enforcing_success_rate: not modelled: success-rate ejection (enforcing_success_rate 100, Envoy's default",
        col + 6
    );
    // A variant with 6 replicas.
    std::fs::write(
        root.path().join("scen/mesh.yaml"),
        format!(
            "{base}variants:\n  - name: small\n    set: {{ services.orders.concurrency: 4 }}\n  - name: big\n    set: {{ services.orders.replicas: 6 }}\n"
        ),
    )
    .unwrap();
    let out = validate(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("scen/mesh.yaml:13:15: services.gateway.calls.orders.from: in the run `big` (the service called has 6 replicas behind `balancer: round_robin`): ../deploy/envoy-mesh.yaml cannot be read as envoy-route for this call"),
        "{err}"
    );
    assert!(err.contains(&success_rate), "{err}\nwanted {success_rate}");
    assert!(!err.contains("run `small`"), "{err}");
    assert!(err.contains("2 errors"), "{err}");
    // `run` refuses it too, before anything is written.
    let out = stormsim(root.path())
        .args(["run", "scen/mesh.yaml", "--out", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!root.path().join("out").exists());
    // A `--set` that changes the balancer: the cluster's ROUND_ROBIN no
    // longer matches; one message for the two runs that show it.
    std::fs::write(root.path().join("scen/mesh.yaml"), &base).unwrap();
    let out = validate(&["--set", "services.orders.balancer=p2c"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("in the scenario with its --set overrides (the service called has 4 replicas behind `balancer: p2c`)"),
        "{err}"
    );
    assert!(
        err.contains("clusters[1].lb_policy: not modelled: the cluster balances by ROUND_ROBIN (Envoy's default), stormsim's `balancer: round_robin`, but the service called balances by `p2c`"),
        "{err}"
    );
    // A search over the replicas.
    std::fs::write(
        root.path().join("scen/mesh.yaml"),
        format!(
            "{base}slo:\n  success_rate: 0.5\ntune:\n  budget: 4\n  space:\n    services.orders.replicas: {{ int: [2, 8] }}\n"
        ),
    )
    .unwrap();
    let out = validate(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("in the run `tune.space.services.orders.replicas = 5` (the service called has 5 replicas"),
        "{err}"
    );
    assert!(err.contains(&success_rate), "{err}");
}

/// `export --call` without `--route`: the route the call's `from` names
/// is the one edited (as `export` without `--layer` picks the layer whose
/// `from` names the file); a `--route` given still wins.
#[test]
fn export_call_takes_the_route_of_its_from() {
    let root = workspace(&graph(&format!(
        "{FROM_ORDERS}        outlier_detection: {{ consecutive_5xx: 7 }}\n"
    )));
    let before = snapshot(root.path());
    let run = |extra: &[&str]| {
        stormsim(root.path())
            .args([
                "export",
                "scen/mesh.yaml",
                "--into",
                "deploy/envoy-mesh.yaml",
                "--format",
                "envoy-route",
                "--call",
                "gateway.orders",
                "--dry-run",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = stdout(&out);
    assert!(diff.contains("-        consecutive_5xx: 3\n"), "{diff}");
    assert!(diff.contains("+        consecutive_5xx: 7\n"), "{diff}");
    assert_eq!(
        diff.lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .count(),
        1,
        "{diff}"
    );
    // --route on the command line wins over the `from`'s.
    let out = run(&["--route", "nowhere"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(snapshot(root.path()), before);
}
