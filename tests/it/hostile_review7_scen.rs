//! Seventh hostile review, scenario side: YAML 1.1's booleans read alike
//! everywhere, memory refusals at the field that drives them, errors of a
//! rename at the renamed item's own line, a search's ends checked beside
//! the other searched fields, a search's table honest when nothing is
//! ranked or a verdict is undecided, the README's classes, timers that
//! make a run enormous warned about, no cascade from `replicas: 0`, and
//! text fields refused in a search space.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::files::{scenario, stormsim};

/// A graph of two services: `api` (called by the clients, calls `db`)
/// and `db`; `services:` is on line 11, `to: db` on line 16 (its value
/// at column 13) and db's `name` on line 18 (column 11).
const GRAPH: &str = "\
name: g
seed: 1
duration: 20s
bucket: 1s
replicates: 1

clients:
  arrival: { kind: poisson, rate: 100/s }
  calls: { to: api, timeout: 1s }

services:
  - name: api
    concurrency: 8
    service_time: { dist: exponential, mean: 5ms }
    calls:
      - to: db
        timeout: 500ms
  - name: db
    concurrency: 8
    service_time: { dist: exponential, mean: 5ms }
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

/// `text` with `from` replaced by `to` (which must be there).
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "no `{from}` in\n{text}");
    text.replacen(from, to, 1)
}

fn validate(path: &Path, sets: &[&str]) -> Output {
    let mut c = stormsim();
    c.arg("validate").arg(path);
    for s in sets {
        c.args(["--set", s]);
    }
    c.output().unwrap()
}

/// `stormsim validate` refused with exit 2, nothing on stdout: stderr.
fn refused(path: &Path, sets: &[&str]) -> String {
    let out = validate(path, sets);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

/// `stormsim validate` accepted: stderr (its warnings).
fn accepted(path: &Path, sets: &[&str]) -> String {
    let out = validate(path, sets);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

const YAML11: &str = "(`on` is a boolean in YAML 1.1 only; stormsim reads YAML 1.2, where it is text: write true or false)";

/// N6: `on` for a boolean field is refused alike in the file, a `--set`,
/// a variant's `set` and a sweep, each at its place and naming
/// `true or false`; and `no` for a text field is the text `no`
/// everywhere (a `--set` named a layer `false`).
#[test]
fn yaml11_booleans_are_text_in_a_file_a_set_a_variant_and_a_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let cold = fs::read_to_string(scenario("cold-cache.yaml")).unwrap();
    let file = write(
        tmp.path(),
        "f.yaml",
        &edit(&cold, "cache: {", "cache: { coalesce: on,"),
    );
    let err = refused(&file, &[]);
    assert!(
        err.contains(&format!(
            "f.yaml:52:24: services.app.cache.coalesce: expected true or false, found `on` {YAML11}"
        )),
        "{err}"
    );
    let err = refused(
        &scenario("cold-cache.yaml"),
        &["services.app.cache.coalesce=on"],
    );
    assert!(
        err.contains(&format!(
            "<--set>: services.app.cache.coalesce: expected true or false, found `on` {YAML11}"
        )),
        "{err}"
    );
    let variant = write(
        tmp.path(),
        "v.yaml",
        &edit(
            &cold,
            "services.app.cache.coalesce: true",
            "services.app.cache.coalesce: on",
        ),
    );
    let err = refused(&variant, &[]);
    assert!(
        err.contains("v.yaml:69:67: variants.1.set.services.app.cache.coalesce: in variant `retries-coalesce`: expected true or false, found `on`")
            && err.contains(YAML11),
        "{err}"
    );
    let quick = fs::read_to_string(scenario("quickstart.yaml")).unwrap();
    let swept = write(
        tmp.path(),
        "s.yaml",
        &format!("{quick}sweep:\n  layers.client.hedge_on_timeout: [true, off]\n"),
    );
    let err = refused(&swept, &[]);
    assert!(
        err.contains("sweep.layers.client.hedge_on_timeout")
            && err.contains("expected true or false, found `off`"),
        "{err}"
    );
    // Text stays text: the layer is named `no`, not `false`.
    let err = refused(&scenario("quickstart.yaml"), &["layers.client.name=no"]);
    assert!(err.contains("names there: no"), "{err}");
    assert!(!err.contains("false"), "{err}");
}

/// N4: a memory refusal driven by a pool's count of instances is blamed
/// at what set it: a sweep entry, a variant's key, a `--set`, or the
/// file's `instances`, and names both fields.
#[test]
fn a_pool_memory_refusal_names_the_field_that_drives_it() {
    let tmp = tempfile::tempdir().unwrap();
    let pooled = edit(
        GRAPH,
        "        timeout: 500ms\n",
        "        timeout: 500ms\n        pool: { size: 10000, connect: 1ms }\n",
    );
    let how = "1000000 connection pools (services.api.calls.db.instances) × 320.1 kB each (services.api.calls.db.pool.size: 10000 connections)";
    let swept = write(
        tmp.path(),
        "s.yaml",
        &format!("{pooled}sweep:\n  services.api.calls.db.instances: [1, 1000000]\n"),
    );
    let err = refused(&swept, &[]);
    assert!(
        err.contains(
            "s.yaml:23:40: sweep.services.api.calls.db.instances: sweep value 1000000: one run"
        ) && err.contains(how),
        "{err}"
    );
    let variant = write(
        tmp.path(),
        "v.yaml",
        &format!(
            "{pooled}variants:\n  - {{ name: a, set: {{}} }}\n  - {{ name: b, set: {{ services.api.calls.db.instances: 1000000 }} }}\n"
        ),
    );
    let err = refused(&variant, &[]);
    assert!(
        err.contains(
            "v.yaml:24:56: variants.1.set.services.api.calls.db.instances: one run (variant `b`)"
        ),
        "{err}"
    );
    let base = write(tmp.path(), "p.yaml", &pooled);
    let err = refused(&base, &["services.api.calls.db.instances=1000000"]);
    assert!(
        err.contains("<--set>: services.api.calls.db.instances: one run would need about"),
        "{err}"
    );
    let inline = write(
        tmp.path(),
        "i.yaml",
        &edit(
            &pooled,
            "        timeout: 500ms\n",
            "        timeout: 500ms\n        instances: 1000000\n",
        ),
    );
    let err = refused(&inline, &[]);
    assert!(
        err.contains("i.yaml:18:20: services.api.calls.db.instances: one run would need about"),
        "{err}"
    );
}

/// N3: a `--set` rename that makes a name twice, or leaves a call without
/// its service, is blamed at the items' own lines, not at `services:`,
/// each named as the file names it (issue 13: a path names an item by
/// its name before any override).
#[test]
fn errors_of_a_rename_point_at_the_items_own_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let g = write(tmp.path(), "g.yaml", GRAPH);
    let err = refused(&g, &["services.api.name=db"]);
    assert!(
        err.contains("g.yaml:18:11: services.db.name: service name `db` is used twice"),
        "{err}"
    );
    assert!(
        err.contains("g.yaml:16:13: services.api.calls.db.to: service `db` calls itself"),
        "{err}"
    );
    let err = refused(&g, &["services.db.name=api"]);
    assert!(
        err.contains("<--set>: services.db.name: service name `api` is used twice")
            && err.contains("g.yaml:16:13: services.api.calls.db.to: no service is named `db`"),
        "{err}"
    );
    assert!(!err.contains(":11:1:"), "{err}");
}

/// N5: an end of one searched field is checked beside the ends of the
/// other searched fields, not beside their base values (which the search
/// replaces): backoff bases up to 5 s with caps from 6 s are fine though
/// the file's cap is 1 s; an end no combination takes is still refused.
#[test]
fn a_search_checks_its_ends_beside_the_other_searched_fields() {
    let q = scenario("quickstart.yaml");
    accepted(
        &q,
        &[
            "tune.space={layers.client.retry.backoff.base: {log: [10ms, 5s]}, layers.client.retry.backoff.cap: {log: [6s, 20s]}}",
        ],
    );
    let err = refused(
        &q,
        &["tune.space={layers.client.retry.backoff.base: {log: [10ms, 5s]}}"],
    );
    assert!(
        err.contains("tune.space.layers.client.retry.backoff.base: with layers.client.retry.backoff.base = 5s: cap (1s) is below base (5s)"),
        "{err}"
    );
    let err = refused(
        &q,
        &[
            "tune.space={layers.client.retry.max_attempts: {int: [0, 3]}, layers.client.retry.backoff.cap: {log: [6s, 20s]}}",
        ],
    );
    assert!(
        err.contains("with layers.client.retry.max_attempts = 0: max_attempts is 0"),
        "{err}"
    );
}

const TIMEOUTS: &str = "tests/fixtures/tune/timeouts.yaml";

fn tune(out: &Path, sets: &[&str]) -> (Option<i32>, String) {
    let mut c = stormsim();
    c.args(["tune", TIMEOUTS, "--out"]).arg(out);
    for s in sets {
        c.args(["--set", s]);
    }
    let o = c.output().unwrap();
    (o.status.code(), String::from_utf8(o.stdout).unwrap())
}

/// N7: when nothing can be ranked the table and tune.csv give no rank
/// (`-`, an empty cell); an SLO verdict with nothing to judge it by reads
/// `undecided`, not `fail`.
#[test]
fn a_search_ranks_nothing_without_grounds_and_says_undecided() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t");
    let (code, console) = tune(
        &out,
        &[
            "slo=null",
            "tune.objective={minimize: recovery_time_s}",
            "tune.budget=4",
            "duration=5s",
        ],
    );
    assert_eq!(code, Some(1), "{console}");
    let rows: Vec<&str> = console
        .lines()
        .skip_while(|l| !l.starts_with("rank"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 4, "{console}");
    assert!(rows.iter().all(|r| r.starts_with("-  ")), "{console}");
    assert!(console.contains("so none is ranked"), "{console}");
    let csv = fs::read_to_string(out.join("tune.csv")).unwrap();
    assert!(csv.lines().skip(1).all(|l| l.starts_with(",c")), "{csv}");
    // An incident over the whole run: nothing ends outside it, so the
    // SLO on the success rate outside incidents is undecided.
    let out = tmp.path().join("u");
    let (code, console) = tune(
        &out,
        &[
            "tune.budget=2",
            "duration=5s",
            "dependency.incidents=[{kind: errors, start: 0s, end: 5s, rate: 0.1}]",
        ],
    );
    assert_eq!(code, Some(0), "{console}");
    assert!(console.contains("undecided (0% met)"), "{console}");
    assert!(!console.contains("fail ("), "{console}");
}

/// N9: every class a `shed_by_priority` of the README names is one of
/// the classes the README declares (`clients.classes`).
#[test]
fn the_readmes_shedding_names_declared_classes() {
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let mut declared: Vec<String> = Vec::new();
    for line in readme.lines() {
        if let Some(rest) = line.split("{ name: ").nth(1)
            && line.contains("share:")
        {
            declared.push(rest.split(',').next().unwrap().trim().to_string());
        }
    }
    assert!(declared.contains(&"background".to_string()), "{declared:?}");
    let mut named = 0;
    for line in readme.lines() {
        let mut rest = line;
        while let Some(i) = rest.find("shed_by_priority: {") {
            let after = &rest[i + "shed_by_priority: {".len()..];
            let inner = after.split('}').next().unwrap();
            for entry in inner.split(',') {
                let class = entry.split(':').next().unwrap().trim();
                assert!(
                    declared.iter().any(|d| d == class),
                    "README: `{class}` in `{line}` is no declared class ({declared:?})"
                );
                named += 1;
            }
            rest = after;
        }
        for (i, _) in line.match_indices(".shed_by_priority.") {
            let class: String = line[i + ".shed_by_priority.".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            // `bulk` is the README's example of an error.
            if class != "bulk" {
                assert!(declared.contains(&class), "README: `{class}` in `{line}`");
            }
        }
    }
    assert!(named >= 3, "{named}");
    let prose = readme
        .lines()
        .any(|l| l.contains("{ background: 50, default: 200 }"));
    assert!(!prose, "the README still names a class `default`");
}

/// N11: an autoscaler deciding every millisecond and closed-loop clients
/// thinking for a nanosecond are warned about, with the estimate and the
/// field; accepted all the same.
#[test]
fn tiny_intervals_and_think_times_are_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let auto = write(
        tmp.path(),
        "a.yaml",
        &edit(
            GRAPH,
            "  - name: db\n",
            "  - name: db\n    autoscale: { target_utilization: 0.6, min: 1, max: 4, interval: 1ms }\n",
        ),
    );
    let warned = accepted(&auto, &[]);
    assert!(
        warned.contains("warning: services.db.autoscale.interval: an autoscaler that decides every 1ms makes about 20000 decisions in a run of 20s"),
        "{warned}"
    );
    let closed = write(
        tmp.path(),
        "c.yaml",
        &edit(
            GRAPH,
            "arrival: { kind: poisson, rate: 100/s }",
            "arrival: { kind: closed, clients: 500, think: { dist: constant, value: 1ns } }",
        ),
    );
    let warned = accepted(&closed, &[]);
    assert!(
        warned.contains("warning: clients.arrival.think: a think time of 1ns")
            && warned.contains("up to about 1.0e13 requests in a run")
            && warned.contains("over limits.max_events"),
        "{warned}"
    );
    let out = stormsim().arg("check").arg(&closed).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning: clients.arrival.think"),
        "{out:?}"
    );
    // Set by a variant: warned about for that variant.
    let slow = edit(
        GRAPH,
        "  - name: db\n",
        "  - name: db\n    autoscale: { target_utilization: 0.6, min: 1, max: 4, interval: 15s }\n",
    );
    let variant = write(
        tmp.path(),
        "v.yaml",
        &format!(
            "{slow}variants:\n  - {{ name: hpa, set: {{}} }}\n  - {{ name: fast, set: {{ services.db.autoscale.interval: 1ms }} }}\n"
        ),
    );
    let warned = accepted(&variant, &[]);
    assert!(
        warned.contains("warning: in variant `fast`: services.db.autoscale.interval: an autoscaler that decides every 1ms")
            && !warned.contains("`hpa`"),
        "{warned}"
    );
    // A realistic interval and think time: no warning.
    assert!(accepted(&write(tmp.path(), "g.yaml", GRAPH), &[]).is_empty());
}

/// N12: `replicas: 0` is one error; the replicas an incident names are
/// not judged against a count that does not stand.
#[test]
fn zero_replicas_is_reported_once() {
    let tmp = tempfile::tempdir().unwrap();
    for targets in ["[2]", "2"] {
        let path = write(
            tmp.path(),
            "r.yaml",
            &edit(
                GRAPH,
                "  - name: db\n",
                &format!(
                    "  - name: db\n    replicas: 0\n    incidents:\n      - {{ kind: down, start: 5s, end: 8s, replicas: {targets} }}\n"
                ),
            ),
        );
        let err = refused(&path, &[]);
        assert_eq!(
            err.trim_end(),
            "r.yaml:19:15: services.db.replicas: replicas is 0; expected 1 to 1000"
                .replace("r.yaml", &path.display().to_string()),
            "{err}"
        );
    }
}

/// N13: a search space on a text field (a call's `to`, a name) is refused
/// with the fields that can be searched there.
#[test]
fn a_search_space_refuses_text_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let g = write(tmp.path(), "g.yaml", GRAPH);
    let err = refused(&g, &["tune.space={services.api.calls.db.to: [db, api]}"]);
    assert!(
        err.contains("<--set>: tune.space.services.api.calls.db.to: `to` is text")
            && err.contains("searchable fields in `services.api.calls.db`: parallel, optional")
            && err.contains("timeout")
            && err.contains("retry.*"),
        "{err}"
    );
    assert!(!err.contains("from.*"), "{err}");
    let err = refused(
        &scenario("quickstart.yaml"),
        &["tune.space={layers.client.name: [a, b]}"],
    );
    assert!(
        err.contains("tune.space.layers.client.name: `name` is text")
            && err.contains("searchable fields in `layers.client`"),
        "{err}"
    );
    let err = refused(&g, &["tune.space={clients.calls.to: [api, db]}"]);
    assert!(
        err.contains("tune.space.clients.calls.to: `to` is text"),
        "{err}"
    );
}

/// R1 (review 7b): a `range` or `log` of numbers on a field of whole
/// numbers ran its two whole ends, so `validate` and `check` said ok, and
/// `tune` then failed on the fractions between them with no place named.
/// It is refused when the file is read, at the entry, with the `int` to
/// write instead; a range of a fractional field stays accepted.
#[test]
fn a_range_of_fractions_on_a_whole_number_field_is_refused_at_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "name: tn\nduration: 5s\nclients: { arrival: { kind: poisson, rate: 100/s } }\n\
                layers:\n  - { name: api, timeout: 100ms, retry: { max_attempts: 2, backoff: { kind: exponential, base: 10ms, multiplier: 2 } } }\n\
                dependency:\n  concurrency: 4\n  service_time: { dist: exponential, mean: 20ms }\n\
                slo: { success_rate: 0.9 }\ntune:\n  budget: 6\n  space:\n    SPACE\n";
    for (space, kind) in [
        ("layers.api.retry.max_attempts: { range: [1, 3] }", "range"),
        ("layers.api.retry.max_attempts: { log: [1, 8] }", "log"),
        ("dependency.concurrency: { range: [2, 8.5] }", "range"),
    ] {
        let f = write(tmp.path(), "tn.yaml", &edit(text, "SPACE", space));
        let err = refused(&f, &[]);
        let field = space.split(':').next().unwrap();
        assert!(
            err.contains("/tn.yaml:13:")
                && err.contains(&format!(": tune.space.{field}: `{field}` takes whole numbers, and a `{kind}` gives the fractions between its ends too")),
            "{err}"
        );
        assert!(err.contains("search it with { int: ["), "{err}");
    }
    let f = write(
        tmp.path(),
        "tn.yaml",
        &edit(
            text,
            "SPACE",
            "layers.api.retry.backoff.multiplier: { range: [1.5, 3] }",
        ),
    );
    accepted(&f, &[]);
}
