//! `stormsim import` and `stormsim export` as a user runs them: the layer
//! printed, the diff, `--dry-run` changing nothing, the edited file and no
//! other, a scenario as best.yaml (with `from`), and errors with exit 2.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::files::snapshot;
use assert_cmd::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs")
}

/// A folder with copies of the fixture files.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "service-config.json",
        "envoy.yaml",
        "application.yml",
        "virtualservice.yaml",
        "serviceprofile.yaml",
        "appsettings.json",
        "aws-config",
    ] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).unwrap();
    }
    dir
}

fn stormsim(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("stormsim").unwrap();
    c.current_dir(dir);
    c
}

/// `--method` of the gRPC fixture's CreateOrder, as `export` takes it
/// after `--into`: file, format, selector flag and value.
const GRPC_CREATE_ORDER: [&str; 4] = [
    "service-config.json",
    "grpc-service-config",
    "--method",
    "orders.v1.Orders/CreateOrder",
];

/// `stormsim export best.yaml --into FILE --format FORMAT SELECTOR VALUE
/// EXTRA...` in `dir`, with `into` as [file, format, selector, value].
fn export(dir: &Path, into: &[&str; 4], extra: &[&str]) -> Output {
    let [file, format, selector, value] = *into;
    let args = [
        "export",
        "best.yaml",
        "--into",
        file,
        "--format",
        format,
        selector,
        value,
    ];
    stormsim(dir).args(args).args(extra).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn import_prints_a_layer_and_warnings() {
    let dir = workspace();
    let out = stormsim(dir.path())
        .args([
            "import",
            "envoy.yaml",
            "--format",
            "envoy-route",
            "--route",
            "create-order",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("- name: create-order\n"), "{stdout}");
    assert!(stdout.contains("    max_attempts: 4 "), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("warning: envoy.yaml:47:31: virtual_hosts[0].routes[0].route.retry_policy.retry_host_predicate"), "{stderr}");
}

#[test]
fn export_dry_run_prints_the_diff_and_changes_nothing() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("best.yaml"),
        "layers.pay.retry.max_attempts: 5\nlayers.pay.retry.backoff.base: 300ms\n",
    )
    .unwrap();
    let before = snapshot(dir.path());
    let into = [
        "application.yml",
        "resilience4j",
        "--instance",
        "paymentService",
    ];
    let out = export(dir.path(), &into, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = String::from_utf8(out.stdout).unwrap();
    assert!(
        diff.starts_with("--- application.yml\n+++ application.yml\n@@ "),
        "{diff}"
    );
    assert!(
        diff.contains(
            "\n-      waitDuration: 250ms\n+      waitDuration: 300ms\n+      maxAttempts: 5\n"
        ),
        "{diff}"
    );
    // Only the note that the inherited maxAttempts goes into the instance,
    // and not into the base config it came from.
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "note: resilience4j.retry.instances.paymentService inherited maxAttempts from resilience4j.retry.configs.payments (line 28); the new value is written into the instance, so configs.payments is not changed\n"
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn export_edits_that_file_and_no_other() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("best.yaml"),
        "layers.orders.retry.max_attempts: 3\n",
    )
    .unwrap();
    let before = snapshot(dir.path());
    let out = export(dir.path(), &GRPC_CREATE_ORDER, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after = snapshot(dir.path());
    assert_eq!(after.len(), before.len(), "a file was added or removed");
    for ((name, a), (_, b)) in before.iter().zip(&after) {
        if name == "service-config.json" {
            let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
            assert_eq!(b, a.replace("\"maxAttempts\": 4,", "\"maxAttempts\": 3,"));
        } else {
            assert_eq!(a, b, "{name} changed");
        }
    }
    // Again: nothing left to change.
    let out = export(dir.path(), &GRPC_CREATE_ORDER, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already holds these values"));
}

/// A scenario whose layer takes its policy `from` the file, tuned by a
/// field beside it: exporting the scenario writes that field back.
#[test]
fn export_a_scenario_layer_with_from() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("best.yaml"),
        "name: tuned\nduration: 1m\nclients:\n  arrival: { kind: poisson, rate: 100/s }\nlayers:\n  - name: edge\n    from: { file: envoy.yaml, format: envoy-route, route: create-order }\n    timeout: 500ms\n    retry: { max_attempts: 3 }\ndependency:\n  concurrency: 4\n  service_time: { dist: constant, value: 10ms }\n",
    )
    .unwrap();
    stormsim(dir.path())
        .args(["validate", "best.yaml"])
        .assert()
        .code(0);
    let into = ["envoy.yaml", "envoy-route", "--route", "create-order"];
    let out = export(dir.path(), &into, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = String::from_utf8(out.stdout).unwrap();
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
            "-                              num_retries: 3",
            "-                              per_try_timeout: 0.75s",
            "+                              num_retries: 2",
            "+                              per_try_timeout: 0.5s",
        ],
        "{diff}"
    );
}

#[test]
fn errors_exit_2_and_write_nothing() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("best.yaml"),
        "layers.orders.retry.jitter: full\n",
    )
    .unwrap();
    let before = snapshot(dir.path());
    let out = export(dir.path(), &GRPC_CREATE_ORDER, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with(
            "service-config.json: layers.orders.retry.jitter: cannot be written to this file: fixed by gRPC"
        ),
        "{stderr}"
    );
    assert_eq!(snapshot(dir.path()), before);
    // An unknown method config field, by position.
    let text = std::fs::read_to_string(dir.path().join("service-config.json")).unwrap();
    std::fs::write(
        dir.path().join("bad.json"),
        text.replace("\"waitForReady\": false", "\"waitForReady\": true"),
    )
    .unwrap();
    let out = stormsim(dir.path())
        .args([
            "import",
            "bad.json",
            "--format",
            "grpc-service-config",
            "--method",
            "orders.v1.Orders/CancelOrder",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("bad.json:21:23: methodConfig[1].waitForReady: not modelled"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// Istio: `--host` and `--route`, the default policy printed with where
/// each value comes from.
#[test]
fn import_an_istio_route_on_the_default_policy() {
    let dir = workspace();
    let out = stormsim(dir.path())
        .args([
            "import",
            "virtualservice.yaml",
            "--format",
            "istio-virtualservice",
            "--host",
            "orders",
            "--route",
            "get-order",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("- name: get-order\n"), "{stdout}");
    assert!(stdout.contains("    max_attempts: 3 "), "{stdout}");
    assert!(
        stdout.contains("Istio's default 2 retries (retry.go)"),
        "{stdout}"
    );
    // No status code retried by default (istio/istio PR #52111), and a
    // warning about the default's gRPC conditions.
    assert!(stdout.contains("    retry_on: [connection] "), "{stdout}");
    assert!(
        stderr(&out).contains("gRPC statuses UNAVAILABLE and CANCELLED"),
        "{}",
        stderr(&out)
    );
    // A selector key the format does not take.
    let out = stormsim(dir.path())
        .args([
            "import",
            "virtualservice.yaml",
            "--format",
            "istio-virtualservice",
            "--instance",
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`instance` selects nothing in an istio-virtualservice file"),
        "{}",
        stderr(&out)
    );
}

/// Linkerd: a scenario layer `from` a ServiceProfile, a field beside it
/// tuned, exported as the one line that changes.
#[test]
fn export_a_linkerd_route_from_a_scenario() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("best.yaml"),
        "name: tuned\nduration: 1m\nclients:\n  arrival: { kind: poisson, rate: 100/s }\nlayers:\n  - name: orders\n    from: { file: serviceprofile.yaml, format: linkerd-serviceprofile, route: \"GET /orders/{id}\" }\n    total_timeout: 1200ms\n    retry: { budget: { kind: finagle, min_retries_per_sec: 2 } }\ndependency:\n  concurrency: 4\n  service_time: { dist: constant, value: 10ms }\n",
    )
    .unwrap();
    stormsim(dir.path())
        .args(["validate", "best.yaml"])
        .assert()
        .code(0);
    let into = [
        "serviceprofile.yaml",
        "linkerd-serviceprofile",
        "--route",
        "GET /orders/{id}",
    ];
    let before = snapshot(dir.path());
    let out = export(dir.path(), &into, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let diff = String::from_utf8(out.stdout).unwrap();
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
            "-      timeout: 800ms",
            "+      timeout: 1200ms",
            "-    minRetriesPerSecond: 5",
            "+    minRetriesPerSecond: 2",
        ],
        "{diff}"
    );
    assert_eq!(snapshot(dir.path()), before);
}

/// The edited file stays the user's, however it is shared: its owner,
/// group and mode, and its inode when another name (a hard link) shares
/// it, so that every name sees the change.
#[test]
fn export_keeps_the_files_owner_mode_and_links() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = workspace();
    let p = dir.path();
    std::fs::write(p.join("best.yaml"), "layers.orders.retry.max_attempts: 3\n").unwrap();
    let original = std::fs::read_to_string(p.join("service-config.json")).unwrap();
    let edited = original.replace("\"maxAttempts\": 4,", "\"maxAttempts\": 3,");
    // Alone, with an unusual mode (and, under root, another owner); then
    // with a second hard link.
    for linked in [false, true] {
        let file = p.join("service-config.json");
        std::fs::write(&file, &original).unwrap();
        let _ = std::fs::remove_file(p.join("other-name.json"));
        if linked {
            std::fs::hard_link(&file, p.join("other-name.json")).unwrap();
        }
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let is_root = std::fs::metadata(p).unwrap().uid() == 0
            && std::os::unix::fs::chown(&file, Some(65534), Some(65534)).is_ok();
        let before = std::fs::metadata(&file).unwrap();
        let out = export(p, &GRPC_CREATE_ORDER, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
        assert_eq!(after.mode(), before.mode(), "linked {linked}");
        assert_eq!(after.mode() & 0o777, 0o640);
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        if is_root {
            assert_eq!((after.uid(), after.gid()), (65534, 65534));
        }
        if linked {
            assert_eq!(after.ino(), before.ino(), "the hard link was broken");
            assert_eq!(
                std::fs::read_to_string(p.join("other-name.json")).unwrap(),
                edited
            );
            assert_eq!(after.nlink(), 2);
        }
        // No temporary file left beside it.
        let names: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    }
}

/// A key written twice in a JSON configuration file (a JSON reader keeps
/// one of them without a word) is refused, at any depth, with the file,
/// the line and column of the second one and its key path, for `import`,
/// `export` and a scenario's `from`; a YAML file's likewise.
#[test]
fn a_key_written_twice_is_refused_wherever_it_is() {
    let dir = workspace();
    let p = dir.path();
    std::fs::write(p.join("best.yaml"), "layers.orders.retry.max_attempts: 3\n").unwrap();
    let cases: [(&str, &str, &str, &str); 3] = [
        (
            "{\"methodConfig\": [],\n \"methodConfig\": []}\n",
            "dup.json:2:2:",
            "`methodConfig`",
            "orders.v1.Orders/CreateOrder",
        ),
        (
            "{\"methodConfig\": [{\"name\": [{\"service\": \"orders.v1.Orders\"}],\n  \"timeout\": \"1s\", \"timeout\": \"2s\"}]}\n",
            "dup.json:2:20:",
            "`methodConfig[0].timeout`",
            "orders.v1.Orders/CreateOrder",
        ),
        (
            "{\"methodConfig\": [{\"name\": [{\"service\": \"orders.v1.Orders\", \"service\": \"x\"}]}]}\n",
            "dup.json:1:61:",
            "`methodConfig[0].name[0].service`",
            "orders.v1.Orders/CreateOrder",
        ),
    ];
    for (text, at, key, method) in cases {
        std::fs::write(p.join("dup.json"), text).unwrap();
        let import = stormsim(p)
            .args([
                "import",
                "dup.json",
                "--format",
                "grpc-service-config",
                "--method",
                method,
            ])
            .output()
            .unwrap();
        let into = ["dup.json", "grpc-service-config", "--method", method];
        let exported = export(p, &into, &[]);
        std::fs::write(
            p.join("s.yaml"),
            format!(
                "name: s\nduration: 1s\nclients: {{ arrival: {{ kind: poisson, rate: 1/s }} }}\n\
                 layers:\n  - name: a\n    from: {{ file: dup.json, format: grpc-service-config, method: {method} }}\n\
                 dependency: {{ concurrency: 1, service_time: {{ dist: constant, value: 1ms }} }}\n"
            ),
        )
        .unwrap();
        let check = stormsim(p).args(["check", "s.yaml"]).output().unwrap();
        for out in [import, exported, check] {
            let e = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{e}");
            assert!(
                e.contains(at) && e.contains(key) && e.contains("duplicate key"),
                "{e}"
            );
        }
        assert_eq!(std::fs::read_to_string(p.join("dup.json")).unwrap(), text);
    }
    // YAML refuses it too.
    std::fs::write(
        p.join("dup.yaml"),
        "resilience4j:\n  retry:\n    instances:\n      pay:\n        maxAttempts: 3\n        maxAttempts: 4\n",
    )
    .unwrap();
    let out = stormsim(p)
        .args([
            "import",
            "dup.yaml",
            "--format",
            "resilience4j",
            "--instance",
            "pay",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("dup.yaml:6:"), "{}", stderr(&out));
}

/// Every layer `import` prints loads once pasted under `layers:` of a
/// scenario: for every fixture file and every policy it holds, and for
/// each fixture with every value of a kind (durations, numbers) set to
/// zero in turn. An import that cannot give a loadable layer refuses
/// (exit 2) at the setting's line and column, printing nothing.
#[test]
fn every_imported_layer_loads_in_a_scenario() {
    let cases: [(&str, &str, &str, &[&str]); 5] = [
        (
            "service-config.json",
            "grpc-service-config",
            "--method",
            &[
                "orders.v1.Orders/CreateOrder",
                "orders.v1.Orders/CancelOrder",
                "orders.v1.Orders/GetOrder",
                "orders.v1.Orders",
                "other.v1.Other/Thing",
            ],
        ),
        (
            "envoy.yaml",
            "envoy-route",
            "--route",
            &["create-order", "get-order"],
        ),
        (
            "virtualservice.yaml",
            "istio-virtualservice",
            "--route",
            &["create-order", "get-order", "reports"],
        ),
        (
            "serviceprofile.yaml",
            "linkerd-serviceprofile",
            "--route",
            &["GET /orders/{id}", "POST /orders", "GET /orders"],
        ),
        (
            "application.yml",
            "resilience4j",
            "--instance",
            &["paymentService", "inventoryService"],
        ),
    ];
    let dir = workspace();
    let p = dir.path();
    let mut loaded = 0;
    let mut refused = 0;
    for (file, format, flag, values) in cases {
        let original = std::fs::read_to_string(fixtures().join(file)).unwrap();
        // The file as it is, then with each duration or number set to zero.
        let mut texts = vec![original.clone()];
        let re = regex_lite_zeroes(&original);
        texts.extend(re);
        for text in &texts {
            std::fs::write(p.join(file), text).unwrap();
            for value in values {
                let out = stormsim(p)
                    .args(["import", file, "--format", format, flag, value])
                    .output()
                    .unwrap();
                let e = stderr(&out);
                if out.status.code() == Some(2) {
                    assert!(out.stdout.is_empty(), "{file} {value}: printed and refused");
                    assert!(
                        e.lines().any(|l| l.starts_with(&format!("{file}:"))
                            || l.starts_with(&format!("error: {file}:"))),
                        "{file} {value}: {e}"
                    );
                    refused += 1;
                    continue;
                }
                assert_eq!(out.status.code(), Some(0), "{file} {value}: {e}");
                let layer = String::from_utf8(out.stdout).unwrap();
                std::fs::write(
                    p.join("pasted.yaml"),
                    format!(
                        "name: pasted\nduration: 1m\nclients:\n  arrival: {{ kind: poisson, rate: 10/s }}\n\
                         layers:\n{layer}\
                         dependency: {{ concurrency: 4, service_time: {{ dist: constant, value: 10ms }} }}\n"
                    ),
                )
                .unwrap();
                let check = stormsim(p).args(["check", "pasted.yaml"]).output().unwrap();
                assert_eq!(
                    check.status.code(),
                    Some(0),
                    "{file} {value}: the printed layer does not load:\n{layer}\n{}",
                    stderr(&check)
                );
                loaded += 1;
            }
        }
    }
    assert!(
        loaded > 20 && refused > 0,
        "loaded {loaded}, refused {refused}"
    );
}

/// `text` with each duration or plain number value (after a `:`) set to
/// zero, one at a time.
fn regex_lite_zeroes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(k) = text[i..].find(": ") {
        let start = i + k + 2;
        let quoted = bytes.get(start) == Some(&b'"');
        let from = start + usize::from(quoted);
        let mut end = from;
        while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
            end += 1;
        }
        if end > from {
            let mut unit_end = end;
            while unit_end < bytes.len() && bytes[unit_end].is_ascii_alphabetic() {
                unit_end += 1;
            }
            let unit = &text[end..unit_end];
            if matches!(unit, "" | "s" | "ms") {
                out.push(format!("{}0{}", &text[..from], &text[end..]));
            }
        }
        i = start;
    }
    out
}

/// ms-resilience: a scenario layer `from` an appsettings.json section
/// (selected in another case), a field beside it overriding one leaf; the
/// resolved scenario shows the file's values and keeps `from`.
#[test]
fn a_layer_from_an_appsettings_section() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("s.yaml"),
        "name: dotnet\nduration: 10s\nclients:\n  arrival: { kind: poisson, rate: 50/s }\nlayers:\n  - name: inventory\n    from: { file: appsettings.json, format: ms-resilience, section: httpclients:inventory:resilience }\n    retry: { max_attempts: 3 }\ndependency:\n  concurrency: 8\n  service_time: { dist: constant, value: 10ms }\n",
    )
    .unwrap();
    let out = stormsim(dir.path())
        .args(["run", "s.yaml", "--out", "out", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let resolved = std::fs::read_to_string(dir.path().join("out/scenario.resolved.yaml")).unwrap();
    for want in [
        "format: ms-resilience",
        "section: httpclients:inventory:resilience",
        "resolved: true",
        "max_attempts: 3",
        "base: 500ms",
        "cap: 5s",
        "jitter: polly_v2",
        "timeout: 2s",
        "total_timeout: 20s",
        "failure_ratio: 0.2",
    ] {
        assert!(resolved.contains(want), "{want}:\n{resolved}");
    }
    // A bad TimeSpan in the file: exit 2, the file's own line and column.
    let bad = std::fs::read_to_string(dir.path().join("appsettings.json"))
        .unwrap()
        .replace("\"Delay\": \"00:00:00.500\"", "\"Delay\": \"500ms\"");
    std::fs::write(dir.path().join("appsettings.json"), bad).unwrap();
    let out = stormsim(dir.path())
        .args(["validate", "s.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("appsettings.json:24:20: HttpClients:Inventory:Resilience:Retry:Delay: expected a .NET TimeSpan string"),
        "{}",
        stderr(&out)
    );
}

/// aws-config: an export that writes the file (and no other), comments
/// kept; a profile that is not there is exit 2 with nothing written.
#[test]
fn export_into_an_aws_profile() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("best.yaml"),
        "layers.orders.retry.max_attempts: 6\n",
    )
    .unwrap();
    let into = ["aws-config", "aws-config", "--profile", "orders-prod"];
    let out = export(dir.path(), &into, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after = std::fs::read_to_string(dir.path().join("aws-config")).unwrap();
    let before = std::fs::read_to_string(fixtures().join("aws-config")).unwrap();
    assert_eq!(
        after,
        before.replace("max_attempts = 4", "max_attempts = 6")
    );
    assert!(
        stderr(&out).contains("wrote aws-config"),
        "{}",
        stderr(&out)
    );
    let snap = snapshot(dir.path());
    let into = ["aws-config", "aws-config", "--profile", "orders"];
    let out = export(dir.path(), &into, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "no profile `orders`; the profiles are default, orders-prod, batch, legacy-tools, dev"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(dir.path()), snap);
}

/// A value of best.yaml that is not a value of its field (a duration
/// `banana`, a negative count) is an error of best.yaml, at its line,
/// column and path, not of the file it would be written into; nothing
/// is written. Values valid alone whose companions the other file gives
/// (a backoff's `base` without its `kind`) are not errors.
#[test]
fn an_error_in_best_yaml_is_reported_in_best_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(
        fixtures().join("service-config.json"),
        d.join("service-config.json"),
    )
    .unwrap();
    std::fs::write(
        d.join("best.yaml"),
        "# stormsim tune: the best\nlayers.api.retry.max_attempts: -3\nlayers.api.timeout: banana\n",
    )
    .unwrap();
    let before = snapshot(d);
    let o = export(d, &GRPC_CREATE_ORDER, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("best.yaml:2:32: layers.api.retry.max_attempts: expected a whole number"),
        "{e}"
    );
    assert!(
        e.contains("best.yaml:3:21: layers.api.timeout: invalid duration `banana`"),
        "{e}"
    );
    assert!(!e.contains("service-config.json"), "{e}");
    assert!(snapshot(d) == before, "something was written");
    std::fs::write(
        d.join("best.yaml"),
        "layers.api.retry.backoff.base: 20ms\nlayers.api.timeout: 2s\n",
    )
    .unwrap();
    let o = export(d, &GRPC_CREATE_ORDER, &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Resilience4j's properties refuse a `maxAttempts` below 1 when they are
/// bound (`InstanceProperties.setMaxAttempts` throws), so the application
/// never starts: import refuses it at its position, rather than reading it
/// as the default of 3, and prints nothing.
#[test]
fn a_resilience4j_max_attempts_below_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    for value in ["0", "-1"] {
        std::fs::write(
            p.join("application.yml"),
            format!(
                "# payments\nresilience4j:\n  retry:\n    instances:\n      pay:\n        maxAttempts: {value}\n        waitDuration: 100ms\n"
            ),
        )
        .unwrap();
        let out = stormsim(p)
            .args([
                "import",
                "application.yml",
                "--format",
                "resilience4j",
                "--instance",
                "pay",
            ])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(out.stdout.is_empty(), "{value}: printed a layer");
        assert!(
            err.contains("application.yml:6:22: resilience4j.retry.instances.pay.maxAttempts:")
                && err.contains("greater than or equal to 1"),
            "{value}: {err}"
        );
    }
}

/// Issue 20, review item 3: a retryBudget is read as Linkerd reads it
/// (linkerd2 `pkg/profiles/profiles.go`): a missing minRetriesPerSecond
/// is 0, a missing retryRatio 0 (which stormsim cannot say: an error), a
/// missing ttl refuses the profile; and `export` writes a budget with all
/// three fields.
#[test]
fn a_linkerd_retry_budget_reads_and_writes_as_linkerd_does() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "serviceprofile-partial-budget.yaml",
        "serviceprofile-no-budget.yaml",
    ] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).unwrap();
    }
    let import = |file: &str| {
        stormsim(dir.path())
            .args([
                "import",
                file,
                "--format",
                "linkerd-serviceprofile",
                "--route",
                "GET /payments/{id}",
            ])
            .output()
            .unwrap()
    };
    let out = import("serviceprofile-partial-budget.yaml");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("      min_retries_per_sec: 0                # spec.retryBudget.minRetriesPerSecond (absent in a retryBudget: 0, as Linkerd reads it)"),
        "{text}"
    );
    assert!(text.contains("percent_can_retry: 0.5"), "{text}");
    // No ttl: refused at the retryBudget.
    let partial =
        std::fs::read_to_string(dir.path().join("serviceprofile-partial-budget.yaml")).unwrap();
    std::fs::write(
        dir.path().join("no-ttl.yaml"),
        partial.replace("    ttl: 5s\n", ""),
    )
    .unwrap();
    let out = import("no-ttl.yaml");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no-ttl.yaml:16:3: spec.retryBudget: retryBudget has no ttl: Linkerd refuses the profile (\"RetryBudget missing TTL field\")"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    // No retryRatio: 0, an error.
    std::fs::write(
        dir.path().join("no-ratio.yaml"),
        partial.replace("    retryRatio: 0.5\n", ""),
    )
    .unwrap();
    let out = import("no-ratio.yaml");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no-ratio.yaml:16:3: spec.retryBudget.retryRatio: not modelled: retryBudget without retryRatio: Linkerd reads it as 0"),
        "{}",
        stderr(&out)
    );
    // Export of one budget value into a profile without a budget: the
    // budget written says all three fields, and reads back as tuned.
    std::fs::write(
        dir.path().join("best.yaml"),
        "layers.pay.retry.budget.percent_can_retry: 0.1\n",
    )
    .unwrap();
    let into = [
        "serviceprofile-no-budget.yaml",
        "linkerd-serviceprofile",
        "--route",
        "GET /payments/{id}",
    ];
    let out = export(dir.path(), &into, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after = std::fs::read_to_string(dir.path().join("serviceprofile-no-budget.yaml")).unwrap();
    assert!(
        after.ends_with(
            "      timeout: 500ms\n  retryBudget:\n    retryRatio: 0.1\n    minRetriesPerSecond: 10\n    ttl: 10s\n"
        ),
        "{after}"
    );
    // Into the partial budget: the missing minRetriesPerSecond is added
    // (0, what the file gives now), the rest edited in place.
    std::fs::write(
        dir.path().join("best.yaml"),
        "layers.pay.retry.budget.ttl: 8s\n",
    )
    .unwrap();
    let into = [
        "serviceprofile-partial-budget.yaml",
        "linkerd-serviceprofile",
        "--route",
        "GET /payments/{id}",
    ];
    let out = export(dir.path(), &into, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after =
        std::fs::read_to_string(dir.path().join("serviceprofile-partial-budget.yaml")).unwrap();
    assert!(
        after.ends_with(
            "  retryBudget:\n    retryRatio: 0.5\n    ttl: 8s\n    minRetriesPerSecond: 0\n"
        ),
        "{after}"
    );
}

/// `stormsim import FILE --format envoy-route --route ROUTE EXTRA...` in
/// the fixtures folder.
fn import_envoy(route: &str, extra: &[&str]) -> Output {
    stormsim(&fixtures())
        .args([
            "import",
            "envoy-refused.yaml",
            "--format",
            "envoy-route",
            "--route",
            route,
        ])
        .args(extra)
        .output()
        .unwrap()
}

/// Issue 20, review items 4 to 6: what Envoy refuses or reads otherwise.
/// A max_ejection_time shorter than base_ejection_time (Envoy refuses the
/// cluster, outlier_detection_impl.cc), a route's idle_timeout (it resets
/// slow responses: it changes results), a retry_back_off without its
/// required base_interval: errors at their positions, nothing printed.
/// Intervals below 1 ms: Envoy counts whole milliseconds, at least 1
/// (RetryPolicyImpl, retry_policy_impl.cc; config_impl.cc in older
/// releases), and so does stormsim, with a warning.
#[test]
fn envoy_values_envoy_refuses_or_rounds() {
    let refused = |route: &str, extra: &[&str], want: &str| {
        let out = import_envoy(route, extra);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
        assert!(
            stderr(&out).contains(want),
            "{}\nwanted {want}",
            stderr(&out)
        );
    };
    refused(
        "short-max",
        &["--to", "flaky", "--replicas", "3"],
        "envoy-refused.yaml:42:26: clusters[1].outlier_detection.max_ejection_time: max_ejection_time 30s is shorter than base_ejection_time 1m: Envoy refuses the cluster",
    );
    refused(
        "idle",
        &[],
        "envoy-refused.yaml:12:11: virtual_hosts[0].routes[0].route.idle_timeout: not modelled: the route's stream idle timeout",
    );
    refused(
        "no-base",
        &[],
        "envoy-refused.yaml:21:13: virtual_hosts[0].routes[1].route.retry_policy.retry_back_off: retry_back_off without base_interval: Envoy refuses the route (backoff.proto: base_interval is required)",
    );
    let out = import_envoy("sub-ms", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("envoy-refused.yaml:29:46: virtual_hosts[0].routes[2].route.retry_policy.retry_back_off.base_interval: Envoy counts whole milliseconds, at least 1: 500us is 1ms"),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("      base: 1ms "), "{text}");
    assert!(text.contains("      cap: 15ms "), "{text}");
}

/// Issue 20, review item 7: gRPC reads status codes strictly (grpc-go
/// `codes.Code.UnmarshalJSON`: a JSON number, or the name in capitals;
/// grpc-java's `Status.Code.valueOf` alike) and refuses a name entry with
/// a method but no service (grpc-go `errEmptyServiceNonEmptyMethod`): the
/// whole service config is refused, so both are errors at their place.
#[test]
fn grpc_status_codes_and_names_are_read_as_grpc_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixtures().join("grpc-strict.json")).unwrap();
    std::fs::write(dir.path().join("grpc-strict.json"), &text).unwrap();
    let import = || {
        stormsim(dir.path())
            .args([
                "import",
                "grpc-strict.json",
                "--format",
                "grpc-service-config",
                "--method",
                "orders.v1.Orders/CreateOrder",
            ])
            .output()
            .unwrap()
    };
    let out = import();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains("grpc-strict.json:15:16: methodConfig[1].name[0]: a method (`GetOrder`) without a service: gRPC refuses the whole service config (\"cannot combine empty 'service' and non-empty 'method'\")"),
        "{}",
        stderr(&out)
    );
    // Without that entry: the codes.
    let fixed = text.replace(
        "{ \"method\": \"GetOrder\" }",
        "{ \"service\": \"orders.v1.Orders\", \"method\": \"GetOrder\" }",
    );
    std::fs::write(dir.path().join("grpc-strict.json"), &fixed).unwrap();
    let out = import();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("grpc-strict.json:11:34: methodConfig[0].retryPolicy.retryableStatusCodes[0]: \"unavailable\": gRPC reads status code names exactly, in capitals, and refuses the service config otherwise; write \"UNAVAILABLE\""),
        "{err}"
    );
    assert!(
        err.contains("grpc-strict.json:11:52: methodConfig[0].retryPolicy.retryableStatusCodes[2]: \"14\": gRPC reads a status code as a JSON number or a name, not a number in quotes"),
        "{err}"
    );
    assert!(err.contains("2 errors"), "{err}");
    // Capitals and a bare number: read.
    std::fs::write(
        dir.path().join("grpc-strict.json"),
        fixed.replace("[\"unavailable\", 8, \"14\"]", "[\"UNAVAILABLE\", 8]"),
    )
    .unwrap();
    let out = import();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("retry_on: [connection, 503, 429]"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Issue 20, review item 8: `[default]` and `[profile default]` in one
/// file are two sections botocore reads both of; in `build_profile_map`
/// (botocore/configloader.py) the later replaces the earlier, whole. So
/// does stormsim, with a warning at the section not read; `export` edits
/// the one read.
#[test]
fn aws_default_and_profile_default_the_later_wins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures().join("aws-config-two-defaults"),
        dir.path().join("aws-config"),
    )
    .unwrap();
    let out = stormsim(dir.path())
        .args([
            "import",
            "aws-config",
            "--format",
            "aws-config",
            "--profile",
            "default",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: aws-config:3:2: default: not read: [profile default] at line 7 names the same profile `default`, and botocore keeps the later section whole"),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[profile default] (line 7)"), "{text}");
    assert!(
        text.contains(
            "max_attempts: 6                         # [profile default].max_attempts, line 10"
        ),
        "{text}"
    );
    // Export edits the section botocore reads.
    std::fs::write(
        dir.path().join("best.yaml"),
        "layers.default.retry.max_attempts: 4\n",
    )
    .unwrap();
    let out = export(
        dir.path(),
        &["aws-config", "aws-config", "--profile", "default"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after = std::fs::read_to_string(dir.path().join("aws-config")).unwrap();
    assert!(
        after.ends_with("retry_mode = standard\nmax_attempts = 4\n"),
        "{after}"
    );
    assert!(
        after.contains("[default]\nregion = eu-west-1\nretry_mode = legacy\n"),
        "{after}"
    );
}

/// Without a selector flag, export takes the selector from the `from` of
/// the layer it picks: the one whose `from` names the file (no --layer),
/// or the one --layer names; a note is printed with --dry-run too.
#[test]
fn export_takes_the_selector_from_the_picked_layers_from() {
    let dir = workspace();
    std::fs::write(
        dir.path().join("best.yaml"),
        "name: tuned\nduration: 1m\nclients:\n  arrival: { kind: poisson, rate: 100/s }\nlayers:\n  - name: edge\n    from: { file: envoy.yaml, format: envoy-route, route: create-order }\n    retry: { max_attempts: 3 }\n  - name: orders\n    from: { file: service-config.json, format: grpc-service-config, method: orders.v1.Orders/CreateOrder }\n    retry: { max_attempts: 2 }\ndependency:\n  concurrency: 4\n  service_time: { dist: constant, value: 10ms }\n",
    )
    .unwrap();
    for extra in [&[][..], &["--layer", "edge"][..]] {
        let out = stormsim(dir.path())
            .args([
                "export",
                "best.yaml",
                "--into",
                "envoy.yaml",
                "--format",
                "envoy-route",
                "--dry-run",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", stderr(&out));
        let diff = String::from_utf8(out.stdout).unwrap();
        assert!(
            diff.contains("+                              num_retries: 2"),
            "{extra:?}: {diff}"
        );
    }
    let out = stormsim(dir.path())
        .args([
            "export",
            "best.yaml",
            "--into",
            "service-config.json",
            "--format",
            "grpc-service-config",
            "--layer",
            "orders",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("+        \"maxAttempts\": 2,"));
    // The note a real export prints is printed with --dry-run too.
    assert!(
        stderr(&out).contains("note: methodConfig[1] names 2 methods"),
        "{}",
        stderr(&out)
    );
}

/// The selector flags that narrow a choice down (`--route '#N'`,
/// `--virtual-host`, `--profile` for Linkerd), and default layer names
/// that tell routes apart (`GET /a.json` and `GET /b.json` are not both
/// `json`).
#[test]
fn import_selector_flags_and_default_names() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "reviews-unnamed.yaml",
        "envoy-two-vhosts.yaml",
        "two-serviceprofiles.yaml",
    ] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(
        dir.path().join("json.yaml"),
        "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: { name: web }\nspec:\n  routes:\n  - name: GET /a.json\n    condition: { method: GET, pathRegex: /a\\.json }\n  - name: GET /b.json\n    condition: { method: GET, pathRegex: /b\\.json }\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = stormsim(dir.path())
            .arg("import")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, stdout, stderr) = run(&[
        "reviews-unnamed.yaml",
        "--format",
        "istio-virtualservice",
        "--host",
        "reviews",
        "--route",
        "#1",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("- name: reviews-1\n"), "{stdout}");
    assert!(stdout.contains("    max_attempts: 2 "), "{stdout}");
    let (code, stdout, stderr) = run(&[
        "envoy-two-vhosts.yaml",
        "--format",
        "envoy-route",
        "--route",
        "/",
        "--virtual-host",
        "b.example.com",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("    max_attempts: 5 "), "{stdout}");
    let (code, _, stderr) = run(&[
        "two-serviceprofiles.yaml",
        "--format",
        "linkerd-serviceprofile",
        "--route",
        "GET /healthz",
    ]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("`profile: NAME`"), "{stderr}");
    let (code, stdout, stderr) = run(&[
        "two-serviceprofiles.yaml",
        "--format",
        "linkerd-serviceprofile",
        "--route",
        "GET /healthz",
        "--profile",
        "web.shop.svc.cluster.local",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("total_timeout: 1s"), "{stdout}");
    for (route, name) in [("GET /a.json", "get-a-json"), ("GET /b.json", "get-b-json")] {
        let (code, stdout, stderr) = run(&[
            "json.yaml",
            "--format",
            "linkerd-serviceprofile",
            "--route",
            route,
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stdout.contains(&format!("- name: {name}\n")), "{stdout}");
    }
}
