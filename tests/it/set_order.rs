//! Overrides whose order must not matter (issue 13, S1, S2, L9): a path
//! names a list item (a layer, a service, a call, a variant) by its name
//! in the file, before any override, so an override that renames an item
//! changes nothing of the others' paths, in `--set` and in a variant's
//! `set` alike; a `preset` applies before the fields set beside it; an
//! override of a `from` is blamed alone and hides no other problem; and
//! every problem is listed once, with the overrides applied.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::common::files::stormsim;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn validate(file: &Path, sets: &[&str]) -> Output {
    let mut c = stormsim();
    c.current_dir(file.parent().unwrap())
        .arg("validate")
        .arg(file);
    for s in sets {
        c.arg("--set").arg(s);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `validate` with `sets` in their order and reversed: the same exit
/// code, the same stdout, the same set of stderr lines (a message lists
/// the problems in the order the overrides were given).
fn same_either_way(file: &Path, sets: &[&str]) -> Output {
    let forward = validate(file, sets);
    let reversed: Vec<&str> = sets.iter().rev().copied().collect();
    let backward = validate(file, &reversed);
    assert_eq!(forward.status.code(), backward.status.code(), "{sets:?}");
    assert_eq!(forward.stdout, backward.stdout, "{sets:?}");
    let lines = |o: &Output| {
        let mut l: Vec<String> = stderr(o).lines().map(str::to_string).collect();
        l.sort();
        l
    };
    assert_eq!(
        lines(&forward),
        lines(&backward),
        "{sets:?}\n{}\n---\n{}",
        stderr(&forward),
        stderr(&backward)
    );
    forward
}

#[test]
fn a_rename_changes_no_other_path_in_either_order() {
    let three = root().join("scenarios/three-tier.yaml");
    let outage = root().join("scenarios/outage-recovery.yaml");
    let cases: [(&Path, &[&str]); 6] = [
        // A layer: renamed, and a field of it by its file name.
        (&outage, &["layers.api.name=edge", "layers.api.timeout=0s"]),
        // A service.
        (
            &three,
            &["services.postgres.replicas=0", "services.postgres.name=db2"],
        ),
        // A call, named by the service it calls.
        (
            &three,
            &[
                "services.orders.calls.postgres.to=catalog",
                "services.orders.calls.postgres.timeout=0s",
            ],
        ),
        // A variant.
        (
            &outage,
            &[
                "variants.no-jitter.name=nj",
                "variants.no-jitter.description=plain",
            ],
        ),
        // Two layers swapping names.
        (&three, &["services.orders.name=x", "services.x.replicas=2"]),
        (
            &outage,
            &[
                "variants.no-jitter.name=full-jitter",
                "variants.full-jitter.name=no-jitter",
            ],
        ),
    ];
    for (file, sets) in cases {
        same_either_way(file, sets);
    }
    // The field of the renamed item is the one the path named in the file.
    let o = same_either_way(&outage, &["layers.api.name=edge", "layers.api.timeout=0s"]);
    assert!(
        stderr(&o).contains("<--set>: layers.api.timeout: timeout is 0s"),
        "{}",
        stderr(&o)
    );
    let o = same_either_way(
        &outage,
        &[
            "variants.no-jitter.name=nj",
            "variants.no-jitter.description=plain",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // A path by the new name is refused, saying why and which override
    // gave the name.
    let o = same_either_way(&three, &["services.orders.name=x", "services.x.replicas=2"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("<--set>: services.x.replicas: no item named `x` in `services`")
            && e.contains("`services.orders.name` gives one the name `x`"),
        "{e}"
    );
    // Swapping two names works in either order.
    let o = same_either_way(
        &outage,
        &[
            "variants.no-jitter.name=full-jitter",
            "variants.full-jitter.name=no-jitter",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_variants_set_names_items_as_the_scenario_does_in_either_order() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fs::read_to_string(root().join("scenarios/outage-recovery.yaml")).unwrap();
    let base = &src[..src.find("variants:").unwrap()];
    let run = |set: &str| {
        let f = tmp.path().join("v.yaml");
        fs::write(
            &f,
            format!("{base}variants:\n  - {{ name: a, set: {{ {set} }} }}\n"),
        )
        .unwrap();
        validate(&f, &[])
    };
    // The renamed layer's field, by its file name: one error, at that key.
    for set in [
        "layers.api.name: edge, layers.api.timeout: 0s",
        "layers.api.timeout: 0s, layers.api.name: edge",
    ] {
        let o = run(set);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(
            e.contains("variants.0.set.layers.api.timeout: in variant `a`: layers.edge.timeout: timeout is 0s"),
            "{set}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{set}: {e}");
    }
    // By the new name: refused in both orders.
    for set in [
        "layers.api.name: edge, layers.edge.timeout: 1s",
        "layers.edge.timeout: 1s, layers.api.name: edge",
    ] {
        let e = stderr(&run(set));
        assert!(e.contains("no item named `edge` in `layers`"), "{set}: {e}");
    }
}

#[test]
fn a_preset_applies_before_the_fields_set_beside_it() {
    let quick = root().join("scenarios/quickstart.yaml");
    let check = |sets: &[&str]| {
        let mut c = stormsim();
        c.arg("check").arg(&quick).args(["--format", "json"]);
        for s in sets {
            c.arg("--set").arg(s);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    let a = check(&[
        "layers.client.preset=grpc-a6",
        "layers.client.retry.max_attempts=2",
    ]);
    let b = check(&[
        "layers.client.retry.max_attempts=2",
        "layers.client.preset=grpc-a6",
    ]);
    assert_eq!(a, b);
    // The field set beside it wins: 2 attempts, not the preset's 4.
    let preset_alone = check(&["layers.client.preset=grpc-a6"]);
    assert_ne!(a, preset_alone);
}

/// Two layers reading routes of one Envoy file, in `dir`.
fn two_from(dir: &Path, extra: &str) -> std::path::PathBuf {
    fs::copy(
        root().join("tests/fixtures/configs/envoy.yaml"),
        dir.join("envoy.yaml"),
    )
    .unwrap();
    let f = dir.join("best.yaml");
    fs::write(
        &f,
        format!(
            "name: two\nduration: 10s\nclients: {{ arrival: {{ kind: poisson, rate: 10/s }} }}\n\
             layers:\n\
             \x20 - {{ name: outer, from: {{ file: envoy.yaml, format: envoy-route, route: create-order }}, retry: {{ max_attempts: 5 }} }}\n\
             \x20 - {{ name: inner, from: {{ file: envoy.yaml, format: envoy-route, route: get-order }}, retry: {{ max_attempts: 4 }} }}\n\
             dependency: {{ concurrency: {extra}, service_time: {{ dist: exponential, mean: 10ms }} }}\n"
        ),
    )
    .unwrap();
    f
}

#[test]
fn an_override_of_a_from_is_blamed_alone_and_hides_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // The file's own problem (concurrency 0) and the other overrides'.
    let f = two_from(tmp.path(), "0");
    for sets in [
        &[
            "layers.outer.from.route=get-order",
            "duration=5s",
            "layers.inner.timeout=0s",
        ][..],
        &[
            "layers.outer.from.route=get-order",
            "layers.outer.name=o2",
            "layers.inner.timeout=abc",
        ][..],
        &[
            "layers.1={name: i, from: { file: envoy.yaml, format: envoy-route, route: create-order }}",
            "layers.0.timeout=0s",
        ][..],
    ] {
        let o = same_either_way(&f, sets);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        let from_lines: Vec<&str> = e
            .lines()
            .filter(|l| l.contains("changes the `from`"))
            .collect();
        assert_eq!(from_lines.len(), 1, "{sets:?}: {e}");
        assert!(
            from_lines[0].starts_with(&format!(
                "<--set>: {}: ",
                sets[0].split('=').next().unwrap()
            )),
            "{sets:?}: {e}"
        );
        assert!(
            e.contains("best.yaml:7:28: dependency.concurrency: concurrency is 0"),
            "{sets:?}: {e}"
        );
        assert!(
            e.contains("timeout is 0s") || e.contains("invalid duration `abc`"),
            "{sets:?}: {e}"
        );
    }
    // Renaming a layer that has a `from` changes no `from`.
    let f = two_from(tmp.path(), "4");
    let o = validate(&f, &["layers.outer.name=o2", "layers.inner.timeout=0s"]);
    let e = stderr(&o);
    assert!(!e.contains("`from`"), "{e}");
    assert!(
        e.contains("<--set>: layers.inner.timeout: timeout is 0s"),
        "{e}"
    );
    // The same in a variant's `set`.
    let src = fs::read_to_string(&f).unwrap();
    fs::write(
        &f,
        format!("{src}variants:\n  - {{ name: a, set: {{ duration: 5s, layers.outer.from.route: get-order, layers.inner.timeout: 0s }} }}\n"),
    )
    .unwrap();
    let e = stderr(&validate(&f, &[]));
    assert!(!e.contains("variants.0.set.duration"), "{e}");
    assert!(
        e.contains("variants.0.set.layers.outer.from.route: in variant `a`: changes the `from` of layers.outer"),
        "{e}"
    );
    assert!(
        e.contains("variants.0.set.layers.inner.timeout: in variant `a`: timeout is 0s"),
        "{e}"
    );
}

/// Each problem once: a schedule point past the run (its start and its
/// end), a file with errors of its own judged with `--set duration`.
#[test]
fn every_problem_is_listed_once() {
    let dlq = root().join("scenarios/queue-consumer-dlq.yaml");
    let e = stderr(&validate(&dlq, &["duration=60s"]));
    assert_eq!(e.matches("clients.schedule.0.").count(), 1, "{e}");
    assert!(e.contains("point at 4m is not inside the run (1m)"), "{e}");
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("h.yaml");
    fs::write(
        &f,
        "name: h\nduration: 30s\nclients:\n  arrival: { kind: poisson, rate: 10/s }\n\
         layers:\n  - name: api\n    timeout: abc\n  - name: api\n    timeout: 0s\n\
         dependency:\n  concurrency: 0\n  service_time: { dist: exponential, mean: 10ms }\n\
         \x20 incidents: [ { kind: down, start: 10s, end: 45s } ]\n",
    )
    .unwrap();
    for sets in [
        &["duration=12s"][..],
        &["duration=12s", "layers.0.name=x"][..],
    ] {
        let o = same_either_way(&f, sets);
        let e = stderr(&o);
        let paths: Vec<&str> = e
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .filter(|p| p.contains('.'))
            .collect();
        let mut unique = paths.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(paths.len(), unique.len(), "{sets:?}: {e}");
        // Judged with the override applied, once.
        assert!(
            e.contains("incident ends at 45s, after the run (12s)"),
            "{e}"
        );
        assert!(!e.contains("after the run (30s)"), "{e}");
        // The second layer as the file names it, at its line.
        assert!(
            e.contains("h.yaml:9:14: layers.1.timeout: timeout is 0s"),
            "{e}"
        );
    }
}
