//! The scenario side of trust, one test per class of defect found by a
//! second review: `check` reviews every variant, defaults follow the
//! user's values, `validate` reports every independent error (variants,
//! sweep entries and `--set`s included), error paths, counts and labels,
//! `null` unsets, no serde wording, memory errors at the sweep entry that
//! causes them, honest verdicts for runs too short to judge, readable
//! times in `check`, and variants written as a mapping.

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

fn stormsim(args: &[&str]) -> Output {
    Command::cargo_bin("stormsim")
        .unwrap()
        .args(args)
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const BASE: &str = "\
name: base
duration: 30s
clients:
  arrival: { kind: poisson, rate: 50/s }
layers:
  - name: api
    timeout: 500ms
    retry: { max_attempts: 3 }
dependency:
  concurrency: 4
  service_time: { dist: exponential, mean: 20ms }
  incidents:
    - { kind: down, start: 10s, end: 20s }
";

fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// The words of serde and of Rust types that must never reach a user.
const LEAKS: &[&str] = &[
    "unknown variant",
    "invalid type",
    "invalid value",
    "invalid length",
    "externally tagged",
    "untagged enum",
    "unit value",
    "sequence",
    "struct ",
    "enum ",
    "Option<",
    " u8",
    " u16",
    " u32",
    " u64",
    " i64",
    " f64",
    "usize",
    "strict mode",
];

fn assert_plain(text: &str, what: &str) {
    for leak in LEAKS {
        assert!(!text.contains(leak), "{what}: `{leak}` in\n{text}");
    }
}

/// Every value of the wrong type, from a file or from `--set`, is
/// explained in the scenario's words, about the field itself (never a
/// `.0` or a key inside a value that should have been a single one).
#[test]
fn type_errors_speak_the_users_words() {
    let dir = tempfile::tempdir().unwrap();
    let base = file(dir.path(), "base.yaml", BASE);
    let cases: &[(&str, &str, &str)] = &[
        (
            "layers.api.retry.jitter=fulll",
            "layers.api.retry.jitter",
            "unknown value `fulll`; expected one of: none, full",
        ),
        (
            "layers.api.retry.jitter=[a]",
            "layers.api.retry.jitter",
            "found a list",
        ),
        (
            "layers.api.timeout={a: 1}",
            "layers.api.timeout",
            "expected a duration with a unit, such as 250ms, 2s, 5m or 1h, found a mapping",
        ),
        (
            "dependency.concurrency=[1]",
            "dependency.concurrency",
            "expected a whole number from 1 to 1000000, found a list",
        ),
        (
            "dependency.concurrency=-1",
            "dependency.concurrency",
            "expected a whole number from 1 to 1000000, found `-1`",
        ),
        ("name=[1]", "name", "expected text, found a list"),
        (
            "layers.api.hedge_on_timeout=3",
            "layers.api.hedge_on_timeout",
            "expected true or false, found `3`",
        ),
        (
            "layers.api.retry.retry_on={a: 1}",
            "layers.api.retry.retry_on",
            "expected a list, found a mapping",
        ),
        (
            "clients.arrival.kind=foo",
            "clients.arrival.kind",
            "unknown value `foo`; expected one of: poisson, closed",
        ),
        (
            "dependency.overload.status=70000",
            "dependency.overload.status",
            // The range validation takes (review 10, L1), not the storage type's.
            "expected a whole number from 400 to 599",
        ),
        (
            "layers.api.from={file: x, format: bogus}",
            "layers.api.from.format",
            "unknown value `bogus`; expected one of: grpc-service-config",
        ),
    ];
    for (set, path, words) in cases {
        let o = stormsim(&["validate", &base, "--set", set]);
        assert_eq!(o.status.code(), Some(2), "{set}");
        let e = stderr(&o);
        assert!(e.contains(&format!("<--set>: {path}: ")), "{set}: {e}");
        assert!(e.contains(words), "{set}: {e}");
        assert_plain(&e, set);
    }
    // The same mistakes in a file.
    let src = BASE
        .replace("concurrency: 4", "concurrency: [4]")
        .replace(
            "retry: { max_attempts: 3 }",
            "retry: { max_attempts: 3, jitter: [full] }",
        )
        .replace("kind: poisson", "kind: poison");
    let bad = file(dir.path(), "bad.yaml", &src);
    let o = stormsim(&["validate", &bad]);
    let e = stderr(&o);
    assert_plain(&e, "file");
    for path in [
        "dependency.concurrency: expected a whole number",
        "layers.api.retry.jitter: expected one of",
        "clients.arrival.kind: unknown value `poison`",
    ] {
        assert!(e.contains(path), "{path}: {e}");
    }
    assert!(!e.contains(".0:"), "{e}");
}

/// `variants` written as a mapping of names to overrides is read as the
/// list form; a variant whose overrides are not a mapping is an error
/// about that variant, in either form.
#[test]
fn variants_as_a_mapping_and_overrides_that_are_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let good = file(
        dir.path(),
        "good.yaml",
        &format!(
            "{BASE}variants:\n  no-retries: {{ layers.api.retry.max_attempts: 1 }}\n  baseline: {{}}\n"
        ),
    );
    let s = stormsim::scenario::load_file(Path::new(&good)).unwrap();
    let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["no-retries", "baseline"]);
    let o = stormsim(&["validate", &good]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("ok (2 variants"), "{}", stdout(&o));

    let bad = file(
        dir.path(),
        "bad.yaml",
        &format!("{BASE}variants: {{a: 1}}\n"),
    );
    let o = stormsim(&["validate", &bad]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("bad.yaml:14:12: variants.a: expected a mapping of overrides"),
        "{e}"
    );
    assert_plain(&e, "variants: {a: 1}");

    let bad = file(
        dir.path(),
        "list.yaml",
        &format!(
            "{BASE}variants:\n  - {{ name: x, set: 5 }}\n  - {{ name: y, set: [1] }}\n  - 7\n"
        ),
    );
    let e = stderr(&stormsim(&["validate", &bad]));
    for want in [
        "list.yaml:15:16: variants.0.set: expected a mapping of overrides",
        "list.yaml:16:16: variants.1.set: expected a mapping of overrides (dotted path: value), such as { layers.api.retry.max_attempts: 3 }, found a list",
        "list.yaml:17:5: variants.2: expected a mapping",
        "3 errors",
    ] {
        assert!(e.contains(want), "{want}\n{e}");
    }

    // An error in a variant of the mapping form points at its override.
    let src =
        format!("{BASE}variants:\n  ok: {{}}\n  many: {{ layers.api.retry.max_attempts: 0 }}\n");
    let bad = file(dir.path(), "many.yaml", &src);
    let e = stderr(&stormsim(&["validate", &bad]));
    assert!(
        e.contains("many.yaml:16:42: variants.1.set.layers.api.retry.max_attempts: in variant `many`: max_attempts is 0"),
        "{e}"
    );
}

/// `null` on a field with a default removes it (an optional field is
/// unset, a defaulted one takes its default), in a file, in a variant
/// (unsetting the base scenario's value) and in `--set`; on a required
/// field it is an error that says so.
#[test]
fn null_unsets_a_field() {
    use stormsim::scenario::{expand_variants, load_str, load_str_with, parse_set_arg};
    let src = BASE.replace(
        "    retry: { max_attempts: 3 }\n",
        "    breaker: null\n    bulkhead: ~\n    total_timeout: null\n    retry: { max_attempts: null, backoff: null, budget: null, retry_on: null }\n",
    ) + "analysis: { recovery_window: null, trigger_end: null }\n";
    let s = load_str(&src, "nulls.yaml").unwrap_or_else(|e| panic!("{e}"));
    let l = &s.layers[0];
    assert_eq!((l.breaker.is_none(), l.bulkhead.is_none()), (true, true));
    assert_eq!(l.retry, stormsim::scenario::types::Retry::default());
    assert_eq!(s.analysis.recovery_window, None);

    // A variant unsets what the base scenario has.
    let src = BASE.replace(
        "    retry: { max_attempts: 3 }\n",
        "    breaker: { kind: time }\n    retry: { max_attempts: 3, jitter: none }\n",
    ) + "variants:\n  plain: { layers.api.breaker: null, layers.api.timeout: null, layers.api.retry: null }\n  half: { layers.api.retry.jitter: null }\n";
    let s = load_str(&src, "v.yaml").unwrap_or_else(|e| panic!("{e}"));
    let v = expand_variants(&s).unwrap();
    let plain = &v[0].1.layers[0];
    assert!(plain.breaker.is_none() && plain.timeout.is_none());
    assert_eq!(plain.retry.max_attempts, 1);
    assert_eq!(
        v[1].1.layers[0].retry.jitter,
        stormsim::scenario::types::Jitter::Full,
        "the default jitter"
    );
    assert_eq!(v[1].1.layers[0].retry.max_attempts, 3);

    // --set.
    let sets: Vec<_> = [
        "layers.api.breaker=null",
        "layers.api.retry.max_attempts=null",
    ]
    .iter()
    .map(|a| parse_set_arg(a).unwrap())
    .collect();
    let l = load_str_with(&src, "v.yaml", &sets).unwrap();
    assert!(l.scenario.layers[0].breaker.is_none());
    assert_eq!(l.scenario.layers[0].retry.max_attempts, 1);

    // A required field.
    let dir = tempfile::tempdir().unwrap();
    let base = file(dir.path(), "base.yaml", BASE);
    let o = stormsim(&[
        "validate",
        &base,
        "--set",
        "dependency.concurrency=null",
        "--set",
        "clients.arrival.kind=~",
    ]);
    let e = stderr(&o);
    assert!(
        e.contains("<--set>: dependency.concurrency: expected a whole number from 1 to 1000000, found nothing (null); null removes only a field that has a default"),
        "{e}"
    );
    assert!(
        e.contains(
            "<--set>: clients.arrival.kind: expected one of: poisson, closed, found nothing (null)"
        ),
        "{e}"
    );
}

/// The model's policy of the first layer of each variant of `src` with
/// `sets` (`--set` arguments).
fn policies(src: &str, sets: &[&str]) -> Vec<(String, stormsim::model::CallPolicy)> {
    use stormsim::scenario::{expand_variants, load_str_with, parse_set_arg, to_model};
    let sets: Vec<_> = sets.iter().map(|a| parse_set_arg(a).unwrap()).collect();
    let s = load_str_with(src, "d.yaml", &sets)
        .unwrap_or_else(|e| panic!("{e}"))
        .scenario;
    expand_variants(&s)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|(n, v)| (n, to_model(&v).topology.edges()[0].policy.clone()))
        .collect()
}

/// A default never contradicts a value the user chose, wherever the value
/// comes from (the file, a variant, a sweep point, `--set`): it follows it.
#[test]
fn defaults_follow_the_users_values() {
    use stormsim::engine::{NS_PER_MS, NS_PER_S};
    use stormsim::model::breaker::BreakerWindow;
    // The default backoff (none written): a base above its 5 s cap, a cap
    // below its 100 ms base, another kind.
    let p = policies(BASE, &["layers.api.retry.backoff.base=10s"]);
    let b = &p[0].1.retry.backoff;
    assert_eq!((b.base(), b.cap()), (10 * NS_PER_S, 10 * NS_PER_S));
    let p = policies(BASE, &["layers.api.retry.backoff.cap=10ms"]);
    let b = &p[0].1.retry.backoff;
    assert_eq!((b.base(), b.cap()), (10 * NS_PER_MS, 10 * NS_PER_MS));
    let p = policies(BASE, &["layers.api.retry.backoff.kind=constant"]);
    assert_eq!(p[0].1.retry.backoff.delay(3), 100 * NS_PER_MS);
    // A sweep point's value under each variant (a variant may not set
    // the swept field itself: that is refused, see
    // `a_field_set_twice_in_one_sweep_or_variant_is_refused`).
    let src = format!(
        "{BASE}variants:\n  slow: {{ layers.api.retry.max_attempts: 5 }}\n  fast: {{}}\nsweep:\n  layers.api.retry.backoff.base: [20s, 1ms]\n"
    );
    let p = policies(&src, &[]);
    let caps: Vec<u64> = p.iter().map(|(_, c)| c.retry.backoff.cap()).collect();
    assert_eq!(
        caps,
        [20 * NS_PER_S, 5 * NS_PER_S, 20 * NS_PER_S, 5 * NS_PER_S]
    );

    // A count breaker's window and minimum follow each other.
    let breaker = |sets: &[&str]| {
        let b = policies(BASE, sets)[0].1.breaker.unwrap().config;
        let BreakerWindow::Count(n) = b.window else {
            panic!("{b:?}")
        };
        (n, b.min_calls)
    };
    assert_eq!(
        breaker(&["layers.api.breaker={kind: count, window_calls: 10}"]),
        (10, 10)
    );
    assert_eq!(
        breaker(&["layers.api.breaker={kind: count, min_calls: 500}"]),
        (500, 500)
    );
    assert_eq!(breaker(&["layers.api.breaker.kind=count"]), (100, 100));
    // Another kind in a variant: the base's kind's defaults do not stay.
    let src = BASE.replace(
        "    retry: { max_attempts: 3 }\n",
        "    breaker: { kind: time }\n    retry: { max_attempts: 3, budget: { kind: token_bucket } }\n",
    ) + "    - { kind: errors, start: 22s, end: 25s, rate: 0.5 }\n"
        + "variants:\n  count: { layers.api.breaker.kind: count, layers.api.breaker.window_calls: 20 }\n  ratio: { layers.api.retry.budget.kind: ratio }\n  slow: { dependency.incidents.1.kind: latency, dependency.incidents.1.rate: null, dependency.incidents.1.add: 1s }\n";
    let p = policies(&src, &[]);
    assert_eq!(p.len(), 3);
    let c = p[0].1.breaker.unwrap().config;
    assert_eq!((c.window, c.min_calls), (BreakerWindow::Count(20), 20));

    // A bulkhead that waits has room to wait.
    let p = policies(
        BASE,
        &["layers.api.bulkhead={max_concurrent: 8, when_full: wait}"],
    );
    let b = p[0].1.bulkhead.unwrap().config;
    assert_eq!((b.max_queue, b.wait), (8, true));

    // A recovery window shorter than the default bucket: the bucket follows.
    let s = stormsim::scenario::load_str(
        &format!("{BASE}analysis: {{ recovery_window: 500ms }}\n"),
        "w.yaml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.bucket(),
        stormsim::scenario::units::Duration::from_millis(500)
    );

    // OCC: a cap below the blog's 5 ms base.
    let occ = stormsim::scenario::load_str(
        "name: occ\nduration: 1m\nocc: { clients: 10, policy: full_jitter, cap: 1ms }\n",
        "occ.yaml",
    )
    .unwrap();
    let o = occ.occ.unwrap();
    assert_eq!(
        (o.base(), o.cap()),
        (o.cap(), stormsim::scenario::units::Duration::from_millis(1))
    );
}

/// `validate` reports every independent error: a type error in the file
/// hides neither the variants' errors, nor the sweep entries', nor the
/// `--set`s'; each bad sweep entry is reported at its own line and
/// column, and one bad entry does not hide another in the same point.
#[test]
fn validate_reports_every_independent_error() {
    let dir = tempfile::tempdir().unwrap();
    let src = BASE.replace("concurrency: 4", "concurrency: lots")
        + "variants:\n  - { name: a, set: { layers.api.retry.max_attempts: 0 } }\n  - { name: b, set: { layers.nope.timeout: 1s } }\nsweep:\n  layers.api.timeout: [100ms, 0s, 5x]\n  dependency.queue.capacity: [10, -1]\n";
    let f = file(dir.path(), "broken.yaml", &src);
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "replicates=0",
        "--set",
        "layers.api.retry.jitter=fulll",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    for want in [
        "broken.yaml:10:16: dependency.concurrency: expected a whole number",
        "<--set>: layers.api.retry.jitter: unknown value `fulll`",
        "<--set>: replicates: replicates is 0",
        "broken.yaml:15:54: variants.0.set.layers.api.retry.max_attempts: in variant `a`: max_attempts is 0",
        "broken.yaml:16:44: variants.1.set.layers.nope.timeout: in variant `b`: no item named `nope`",
        "broken.yaml:18:31: sweep.layers.api.timeout: sweep value 0s: timeout is 0s",
        "broken.yaml:18:35: sweep.layers.api.timeout: sweep value 5x: duration `5x` has an unknown unit",
        "broken.yaml:19:35: sweep.dependency.queue.capacity: sweep value -1: expected a whole number",
        "8 errors",
    ] {
        assert!(e.contains(want), "{want}\n{e}");
    }
    // Nothing made up by a stand-in for a required field that has the
    // wrong type: with a duration the file does not give, an incident's
    // end is neither right nor wrong.
    let src = BASE.replace("duration: 30s", "duration: 60")
        + "variants:\n  late: { dependency.incidents.0.end: 25s }\n  bad: { layers.api.retry.max_attempts: 0 }\n";
    let f = file(dir.path(), "stand-in.yaml", &src);
    let e = stderr(&stormsim(&["validate", &f, "--set", "bucket=0s"]));
    assert!(e.contains("stand-in.yaml:2:11: duration:"), "{e}");
    assert!(e.contains("<--set>: bucket: bucket is 0s"), "{e}");
    assert!(e.contains("in variant `bad`: max_attempts is 0"), "{e}");
    assert!(e.contains("3 errors") && !e.contains("late"), "{e}");
}

/// Error paths, counts and labels: a key given twice is reported at its
/// own path (each one, with the rest of the file); when errors are left
/// out the count says how many; an error about an override that a `--set`
/// wrote (a sweep's values, a variant's overrides) is labelled `<--set>`.
#[test]
fn error_paths_counts_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let src = BASE.replace("  concurrency: 4\n", "  concurrency: 4\n  concurrency: 5\n")
        + "layers:\n  - name: web\n    retry: { max_attempts: 2 }\n    retry: {}\nreplicates: 0\n";
    let f = file(dir.path(), "dup.yaml", &src);
    let e = stderr(&stormsim(&["validate", &f]));
    for want in [
        "dup.yaml:11:3: dependency.concurrency: `concurrency` is given twice",
        "dup.yaml:15:1: layers: `layers` is given twice",
        "dup.yaml:19:13: replicates: replicates is 0",
        "3 errors",
    ] {
        assert!(e.contains(want), "{want}\n{e}");
    }
    assert!(!e.contains("layers.web"), "{e}");

    // More type errors than are listed.
    let mut src = BASE.replace(
        "layers:\n  - name: api\n    timeout: 500ms\n    retry: { max_attempts: 3 }\n",
        "",
    );
    src += "layers:\n";
    for i in 0..60 {
        src += &format!("  - {{ name: l{i}, timeout: {i}x }}\n");
    }
    let f = file(dir.path(), "many.yaml", &src);
    let e = stderr(&stormsim(&["validate", &f]));
    assert!(
        e.trim_end()
            .ends_with("and 10 more not shown (60 errors in all)"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 51, "{e}");
    // More sweep errors than are listed.
    let values: Vec<String> = (0..30).map(|i| format!("{i}x")).collect();
    let src = format!(
        "{BASE}sweep:\n  layers.api.timeout: [{}]\n",
        values.join(", ")
    );
    let f = file(dir.path(), "sweep.yaml", &src);
    let e = stderr(&stormsim(&["validate", &f]));
    assert!(
        e.trim_end()
            .ends_with("and 10 more not shown (30 errors in all)"),
        "{e}"
    );

    // Overrides a --set wrote.
    let base = file(dir.path(), "base.yaml", BASE);
    let e = stderr(&stormsim(&[
        "validate",
        &base,
        "--set",
        "sweep.layers.api.timeout=[1s, 0s]",
        "--set",
        "layers={name: x}",
    ]));
    assert!(
        e.contains("<--set>: sweep.layers.api.timeout: sweep value 0s: timeout is 0s"),
        "{e}"
    );
    assert!(
        e.contains("<--set>: layers: expected a list, found a mapping"),
        "{e}"
    );
    let v = file(
        dir.path(),
        "v.yaml",
        &format!(
            "{BASE}variants:\n  - {{ name: few, set: {{ layers.api.retry.max_attempts: 1 }} }}\n"
        ),
    );
    let e = stderr(&stormsim(&[
        "validate",
        &v,
        "--set",
        "variants.0.set.layers.api.timeout=0s",
    ]));
    assert!(
        e.starts_with(
            "<--set>: variants.0.set.layers.api.timeout: in variant `few`: timeout is 0s"
        ),
        "{e}"
    );
}

/// A run that would need too much memory because of a sweep entry is
/// reported at that entry (its path in the sweep, its line and column).
#[test]
fn a_memory_error_points_at_the_sweep_entry() {
    let dir = tempfile::tempdir().unwrap();
    let src = BASE.replace(
        "    timeout: 500ms\n",
        "    timeout: 500ms\n    breaker: { kind: count }\n",
    ) + "sweep:\n  layers.api.instances: [1, 10]\n  layers.api.breaker.window_calls: [100,\n     4294967295]\n";
    let f = file(dir.path(), "mem.yaml", &src);
    let o = stormsim(&["validate", &f]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.starts_with("mem.yaml:18:6: sweep.layers.api.breaker.window_calls: sweep value 4294967295: one run (variant `instances=10 window_calls=4294967295`) would need about 6.4 GB of memory")
            || e.contains("/mem.yaml:18:6: sweep.layers.api.breaker.window_calls: sweep value 4294967295: one run (variant `instances=10 window_calls=4294967295`) would need about 6.4 GB of memory"),
        "{e}"
    );
    // From a variant: at the variant's override.
    let src = BASE.replace(
        "    timeout: 500ms\n",
        "    timeout: 500ms\n    instances: 10\n    breaker: { kind: count }\n",
    ) + "variants:\n  - { name: ok, set: {} }\n  - { name: huge, set: { layers.api.breaker.window_calls: 4294967295 } }\n";
    let f = file(dir.path(), "memv.yaml", &src);
    let e = stderr(&stormsim(&["validate", &f]));
    assert!(
        e.contains("memv.yaml:18:59: variants.1.set.layers.api.breaker.window_calls: one run (variant `huge`)"),
        "{e}"
    );
}

/// `check` reviews every variant and sweep point, not only the base
/// scenario: one section per different review, the variants side by side,
/// an error finding in any variant exits 1, and a large sweep stays
/// bounded (what was not shown or not reviewed is counted).
#[test]
fn check_reviews_every_variant() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "{BASE}variants:\n  few: {{ layers.api.retry.max_attempts: 1 }}\n  same: {{ layers.api.retry.max_attempts: 1 }}\n  bad: {{ layers.api.retry.retry_on: [timeout, 404] }}\n"
    );
    let f = file(dir.path(), "v.yaml", &src);
    let o = stormsim(&["check", &f]);
    assert_eq!(o.status.code(), Some(1), "the variant `bad` has an error");
    let out = stdout(&o);
    assert!(
        out.contains("(scenario `base`): 3 of 3 variants reviewed, 2 different reviews"),
        "{out}"
    );
    assert!(
        out.contains("== variants `few`, `same` (the same review) =="),
        "{out}"
    );
    assert!(out.contains("== variant `bad` =="), "{out}");
    assert!(
        out.contains("retries-non-retryable-status [layers.api.retry.retry_on]"),
        "{out}"
    );
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("variants "))
        .collect();
    assert_eq!(table.len(), 3, "{out}");
    assert!(
        table[2].starts_with("`bad`") && table[2].contains(" 1 "),
        "{out}"
    );

    // JSON: every review with its variants.
    let o = stormsim(&["check", "--format", "json", &f]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["variants_total"], 3);
    assert_eq!(
        v["reviews"][0]["variants"],
        serde_json::json!(["few", "same"])
    );
    assert_eq!(v["reviews"][1]["review"]["stack"]["amplification"], 3.0);
    // One variant: the review alone, as before.
    let one = file(dir.path(), "one.yaml", BASE);
    let v: serde_json::Value =
        serde_json::from_slice(&stormsim(&["check", "--format", "json", &one]).stdout).unwrap();
    assert_eq!(v["stack"]["amplification"], 3.0);

    // A sweep of 3000 points: bounded.
    let attempts: Vec<String> = (1..=50).map(|i| i.to_string()).collect();
    let rates: Vec<String> = (1..=60).map(|i| format!("{i}/s")).collect();
    let src = format!(
        "{BASE}sweep:\n  layers.api.retry.max_attempts: [{}]\n  clients.arrival.rate: [{}]\n",
        attempts.join(", "),
        rates.join(", ")
    );
    let f = file(dir.path(), "big.yaml", &src);
    let out = stdout(&stormsim(&["check", &f]));
    assert!(out.lines().count() < 400, "{}", out.lines().count());
    assert!(
        out.contains("480 more variants reviewed but not shown"),
        "{out}"
    );
    assert!(out.contains("2500 more variants not reviewed"), "{out}");
}

/// The cells of one column of a CSV table, by header name.
fn column(table: &str, name: &str) -> Vec<String> {
    let mut r = csv::Reader::from_reader(table.as_bytes());
    let i = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    r.records().map(|rec| rec.unwrap()[i].to_string()).collect()
}

/// A run that ends before one full recovery window after the incident has
/// no verdict, and says so everywhere the verdict appears: the console,
/// `summary.csv`, `summary_by_variant.csv`, `report.html` and the SLO.
#[test]
fn a_run_too_short_after_the_incident_has_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let src = BASE.replace("end: 20s", "end: 28s") + "slo: { recovery_within: 10s }\n";
    let f = file(dir.path(), "short.yaml", &src);
    let out = dir.path().join("out");
    let o = stormsim(&["run", &f, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let console = stdout(&o);
    assert!(
        console.contains("undecided: run ends 2 s after the trigger, needs a 5 s recovery_window"),
        "{console}"
    );
    assert!(!console.contains("metastable"), "{console}");
    assert!(
        console.contains("undecided  recovery_within undecided > 10s"),
        "{console}"
    );
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(column(&summary, "recovered"), ["undecided"]);
    assert_eq!(column(&summary, "recovery_time_s"), [""]);
    let by_variant = std::fs::read_to_string(out.join("summary_by_variant.csv")).unwrap();
    assert_eq!(column(&by_variant, "recovered_fraction"), [""]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains(
            "undecided: its replicate ends too soon after the incident, or with no request offered after it, to judge recovery"
        ),
        "no undecided verdict in the report"
    );
    assert!(!html.contains("never recovered"), "a verdict in the report");
    // One full window after the incident is enough for a verdict.
    let src = BASE.replace("end: 20s", "end: 25s");
    let f = file(dir.path(), "enough.yaml", &src);
    let out = dir.path().join("out2");
    let o = stormsim(&["run", &f, "--out", out.to_str().unwrap()]);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_ne!(
        column(&summary, "recovered"),
        ["undecided"],
        "{}",
        stdout(&o)
    );
    assert_ne!(column(&summary, "recovered"), [""]);
}

/// A ratio with nothing to divide by (0/0) is not applicable: empty in
/// the tables, `n/a` in the console, never 0 or 0%.
#[test]
fn ratios_of_nothing_are_not_applicable() {
    let dir = tempfile::tempdir().unwrap();
    // No request at all.
    let src = BASE.replace(
        "  arrival: { kind: poisson, rate: 50/s }\n",
        "  arrival: { kind: poisson, rate: 50/s }\n  schedule:\n    - { at: 0s, rate: 0/s }\n",
    );
    let f = file(dir.path(), "none.yaml", &src);
    let out = dir.path().join("out");
    let o = stormsim(&["run", &f, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let console = stdout(&o);
    let row = console.lines().nth(2).unwrap();
    assert!(row.starts_with("base"), "{console}");
    assert_eq!(row.matches("n/a").count(), 2, "{console}");
    assert!(!row.contains('%'), "{console}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    for c in [
        "success_rate",
        "retry_ratio",
        "amplification",
        "peak_amplification",
        "amplification_api",
        "deliveries_per_message",
        "work_per_message",
        "baseline_success_ratio",
    ] {
        assert_eq!(column(&summary, c), [""], "{c}");
    }
    assert_eq!(column(&summary, "logical_requests"), ["0"]);
    let by_variant = std::fs::read_to_string(out.join("summary_by_variant.csv")).unwrap();
    for c in [
        "success_rate_mean",
        "amplification_mean",
        "baseline_success_ratio_mean",
    ] {
        assert_eq!(column(&by_variant, c), [""], "{c}");
    }
    // OCC: no workers, no capacity.
    let f = file(
        dir.path(),
        "occ.yaml",
        "name: occ\nduration: 1m\nocc: { clients: 5, policy: full_jitter }\n",
    );
    let out = dir.path().join("occ");
    let o = stormsim(&["run", &f, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    for c in [
        "dependency_utilization",
        "peak_load_ratio",
        "peak_load_ratio_after",
        "capacity_per_s",
    ] {
        assert_eq!(column(&summary, c), [""], "{c}");
    }
    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    assert!(column(&ts, "utilization").iter().all(String::is_empty));
    assert!(column(&ts, "load_ratio").iter().all(String::is_empty));
    assert!(
        stdout(&o).lines().nth(2).unwrap().contains("n/a"),
        "{}",
        stdout(&o)
    );
}

/// Requests nothing bounds (a blackhole, no timeout, no deadline) never
/// end: they are in no success rate, and the console says how many there
/// are instead of letting "100.00%" speak for them; with no request offered
/// after the trigger there is no recovery verdict either. The base run,
/// whose in-flight requests at the end are a handful, gets no warning.
#[test]
fn requests_that_never_ended_are_named_and_silence_is_undecided() {
    let dir = tempfile::tempdir().unwrap();
    let hung = "name: hung\nduration: 60s\nclients: { arrival: { kind: poisson, rate: 100/s } }\n\
        layers:\n  - { name: a }\n\
        dependency:\n  concurrency: 8\n  service_time: { dist: constant, value: 1ms }\n  \
        incidents: [ { kind: blackhole, start: 10s, end: 50s } ]\n";
    let f = file(dir.path(), "hung.yaml", hung);
    let out = dir.path().join("out");
    let o = stormsim(&["run", &f, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let console = stdout(&o);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let open = &column(&summary, "in_flight_at_end")[0];
    let all = &column(&summary, "logical_requests")[0];
    assert!(
        console.contains(&format!("warning: variant base: {open} of {all} requests"))
            && console.contains("count as failed in the success rates and the SLO"),
        "{console}"
    );
    // About 4000 requests arrived into the blackhole: far above 5%.
    let (open, all): (f64, f64) = (open.parse().unwrap(), all.parse().unwrap());
    assert!(open / all > 0.5, "{open} of {all}");
    let o = stormsim(&[
        "run",
        &file(dir.path(), "base.yaml", BASE),
        "--out",
        dir.path().join("base").to_str().unwrap(),
    ]);
    assert!(!stdout(&o).contains("had not ended"), "{}", stdout(&o));
    // The clients stop at the incident: nothing after it to judge.
    let silent = BASE.to_string() + "  \n";
    let silent = silent.replace(
        "  arrival: { kind: poisson, rate: 50/s }\n",
        "  arrival: { kind: poisson, rate: 50/s }\n  schedule: [ { at: 10s, rate: 0/s } ]\n",
    );
    let out = dir.path().join("silent");
    let o = stormsim(&[
        "run",
        &file(dir.path(), "silent.yaml", &silent),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("undecided: no request was offered after the trigger"),
        "{}",
        stdout(&o)
    );
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(column(&summary, "recovered"), ["undecided"]);
}

/// A request still open when the run ends, that has waited longer than
/// the recovery window, than any request that ended and than the SLO's
/// latency objective, is hung: not succeeded in `success_rate`, in the
/// figures outside incidents (once the incident it touched has been over
/// that long) and in the SLO's verdict. One that started just before the
/// end, or that is no older than requests that did end, is not judged.
#[test]
fn hung_requests_count_as_failed_and_fresh_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    // 20 closed-loop clients: at the end each has exactly one request open.
    let scenario = |incident: &str, service: &str| {
        format!(
            "name: hang\nduration: 60s\n\
             clients: {{ arrival: {{ kind: closed, clients: 20, think: {{ dist: constant, value: 99ms }} }} }}\n\
             layers: [ {{ name: a }} ]\n\
             dependency: {{ concurrency: 100, service_time: {{ dist: constant, value: {service} }}{incident} }}\n\
             slo: {{ success_rate: 0.999, latency_p99: 2s }}\n"
        )
    };
    let run = |name: &str, src: &str| {
        let f = file(dir.path(), &format!("{name}.yaml"), src);
        let out = dir.path().join(name);
        let o = stormsim(&["run", &f, "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        let int = |c: &str| column(&summary, c)[0].parse::<u64>().unwrap();
        let rate = |c: &str| column(&summary, c)[0].parse::<f64>().unwrap();
        let (ok, failed, open, hung) = (
            int("succeeded"),
            int("failed"),
            int("in_flight_at_end"),
            int("hung_at_end"),
        );
        assert_eq!(ok + failed + open, int("logical_requests"));
        (
            ok,
            failed,
            open,
            hung,
            rate("success_rate"),
            rate("success_rate_outside_incidents"),
            column(&summary, "slo_pass")[0].clone(),
            stdout(&o),
        )
    };
    // A blackhole from 10 s to 50 s, no timeout: every client is stuck in
    // it from 10 s on, 50 s by the end, and the incident has been over
    // for 10 s.
    let (ok, failed, open, hung, rate, outside, pass, console) = run(
        "blackhole",
        &scenario(
            ", incidents: [ { kind: blackhole, start: 10s, end: 50s } ]",
            "1ms",
        ),
    );
    assert_eq!((failed, open, hung), (0, 20, 20), "{console}");
    assert!(ok > 1500, "{ok}");
    let expected = ok as f64 / (ok + 20) as f64;
    assert!((rate - expected).abs() < 1e-6, "{rate} vs {expected}");
    assert!(outside < 1.0, "{outside}");
    assert_eq!(pass, "false", "{console}");
    assert!(
        console.contains("FAIL  success_rate 0.99 < 0.999"),
        "{console}"
    );
    // The blackhole starts 3 s before the end: the 20 open requests are
    // younger than the recovery window (5 s) and the SLO's latency: not
    // judged.
    let (_, failed, open, hung, rate, outside, pass, _) = run(
        "fresh",
        &scenario(
            ", incidents: [ { kind: blackhole, start: 57s, end: 60s } ]",
            "1ms",
        ),
    );
    assert_eq!((failed, open, hung), (0, 20, 0));
    assert_eq!((rate, outside), (1.0, 1.0));
    assert_eq!(pass, "true");
    // Requests take 8 s each: those open at the end are up to 8 s old,
    // older than the recovery window but no older than those that ended.
    let (ok, failed, open, hung, rate, _, _, _) = run("slow", &scenario("", "8s"));
    assert_eq!((failed, open, hung), (0, 20, 0));
    assert!(ok >= 120, "{ok}");
    assert_eq!(rate, 1.0);
}

/// Two keys of one `sweep`, or of one variant's `set`, that name the same
/// field (by name and by index, or a field and a part of it) would let one
/// value silently win while a label names the other: refused, at the later
/// key, naming the earlier one.
#[test]
fn a_field_set_twice_in_one_sweep_or_variant_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = BASE.to_string()
        + "sweep:\n  layers.api.retry: [{ max_attempts: 1 }, { max_attempts: 3 }]\n  layers.api.retry.max_attempts: [4, 5]\n";
    let o = stormsim(&["validate", &file(dir.path(), "sweep.yaml", &sweep)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "sweep.yaml:16:34: sweep.layers.api.retry.max_attempts: sets the same field as `layers.api.retry`"
        ),
        "{}",
        stderr(&o)
    );
    let variant = BASE.to_string()
        + "variants:\n  - { name: v, set: { layers.api.timeout: 5s, layers.0.timeout: 7s } }\n";
    let o = stormsim(&["validate", &file(dir.path(), "variant.yaml", &variant)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "variants.0.set.layers.0.timeout: in variant `v`: sets the same field as `layers.api.timeout`"
        ),
        "{}",
        stderr(&o)
    );
    // Different fields of one layer are fine.
    let fine = BASE.to_string()
        + "sweep:\n  layers.api.timeout: [200ms, 500ms]\n  layers.api.retry.max_attempts: [2, 3]\n";
    let o = stormsim(&["validate", &file(dir.path(), "fine.yaml", &fine)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A variant and the sweep that set one field (by index and by name,
    // or a field and a part of it): the sweep wins over the variant.
    let both = BASE.to_string()
        + "variants:\n  - { name: calm, set: { layers.0.retry: { max_attempts: 1 } } }\n  - { name: other, set: { layers.api.timeout: 1s } }\n\
           sweep:\n  layers.api.retry.max_attempts: [2, 3]\n";
    let f = file(dir.path(), "both.yaml", &both);
    for cmd in ["validate", "run"] {
        let out = dir.path().join("both-out");
        let o = stormsim(
            &[cmd, &f, "--out", out.to_str().unwrap()][..if cmd == "run" { 4 } else { 2 }],
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(
                "both.yaml:18:34: sweep.layers.api.retry.max_attempts: sweeps the same field as `variants.0.set.layers.0.retry` (variant `calm`)"
            ),
            "{}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("variant `other`"), "{}", stderr(&o));
        assert!(!out.exists());
    }
}

/// A sweep entry that repeats an earlier one, as written (`[8, 8]`) or
/// once read (`1s` and `1000ms`, `200/s` and `12000/m`), would make the
/// same runs twice (under one name, or two): refused by `validate` and by
/// `run` before anything is simulated, at the repeated entry's line and
/// column, naming the earlier one; nothing written.
#[test]
fn a_repeated_sweep_value_is_refused_before_simulating() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "dependency.concurrency: [4, 8, 8]",
            "14:41: sweep.dependency.concurrency: sweep value 8 is given twice (entries 1 and 2)",
        ),
        (
            "layers.api.timeout: [1s, 250ms, 1000ms]",
            "14:42: sweep.layers.api.timeout: sweep value 1000ms is the same as 1s (entry 0) once read",
        ),
        (
            "clients.arrival.rate: [200/s, 12000/m]",
            "14:40: sweep.clients.arrival.rate: sweep value 12000/m is the same as 200/s (entry 0) once read",
        ),
    ];
    for (i, (sweep, expected)) in cases.iter().enumerate() {
        let src = format!("{BASE}sweep: {{ {sweep} }}\n");
        let f = file(dir.path(), &format!("repeat{i}.yaml"), &src);
        let out = dir.path().join(format!("out{i}"));
        for args in [
            vec!["validate", f.as_str()],
            vec!["run", f.as_str(), "--out", out.to_str().unwrap()],
        ] {
            let o = stormsim(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            let e = stderr(&o);
            assert!(
                e.contains(&format!("repeat{i}.yaml:{expected}")),
                "{args:?}: {e}"
            );
            assert_eq!(e.matches("sweep value").count(), 1, "{e}");
            assert!(!out.exists());
        }
    }
    // Different values that read differently are fine.
    let fine = format!("{BASE}sweep: {{ layers.api.timeout: [1s, 1001ms] }}\n");
    let o = stormsim(&["validate", &file(dir.path(), "fine.yaml", &fine)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `consumers.visibility_timeout: 0s` is valid (SQS takes it) but makes
/// every received message visible again at once: `check` warns, `validate`
/// accepts it.
#[test]
fn a_zero_visibility_timeout_is_a_warning_not_an_error() {
    let f = "scenarios/queue-consumer-dlq.yaml";
    let set = "consumers.visibility_timeout=0s";
    let o = stormsim(&["check", f, "--set", set]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("warning zero-visibility-timeout [consumers.visibility_timeout]"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&stormsim(&["check", f])).contains("zero-visibility-timeout"));
    assert_eq!(
        stormsim(&["validate", f, "--set", set]).status.code(),
        Some(0)
    );
}

/// A name stormsim writes into its CSV tables (the scenario's, a layer's,
/// a service's, a call's, a variant's) may not start with what a
/// spreadsheet reads as a formula (`=`, `+`, `-`, `@`): opening
/// `summary.csv` would run it.
#[test]
fn names_a_spreadsheet_would_run_are_refused() {
    use stormsim::scenario::load_str;
    for (src, at) in [
        (
            BASE.replacen("name: base", "name: \"=cmd\"", 1),
            "name: name `=cmd` starts with `=`",
        ),
        (
            format!("{BASE}variants:\n  - {{ name: \"@SUM(A1)\" }}\n"),
            "variants.0.name: variant name `@SUM(A1)` starts with `@`",
        ),
        (
            BASE.replace("- name: api", "- name: \"-api\""),
            "layers.-api.name: layer name `-api` starts with `-`",
        ),
    ] {
        let e = load_str(&src, "f.yaml")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains(at), "{e}");
    }
}

/// `stormsim import --name` is held to the rule of a layer's name, so what
/// it prints pastes into a scenario: a control character, a formula start
/// or a number is refused with exit 2 and nothing on stdout; a default
/// name made from a numeric route is still a usable name.
#[test]
fn import_names_follow_the_layer_name_rule() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs/application.yml");
    let fixture = fixture.to_str().unwrap();
    for (name, why) in [
        ("bad\u{1b}[31mname", "contains U+001B, a control character"),
        ("=cmd", "starts with `=`"),
        ("42", "is a number"),
        ("a.b", "not usable in field paths"),
    ] {
        let o = stormsim(&[
            "import",
            fixture,
            "--format",
            "resilience4j",
            "--instance",
            "paymentService",
            "--name",
            name,
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{name}");
        assert!(
            stderr(&o).contains("error: --name: layer name `"),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(why), "{name}: {}", stderr(&o));
    }
    let o = stormsim(&[
        "import",
        fixture,
        "--format",
        "resilience4j",
        "--instance",
        "paymentService",
        "--name",
        "payments_v2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("- name: payments_v2\n"),
        "{}",
        stdout(&o)
    );
}

/// An operating system's error is said in words, never as "(os error N)".
#[test]
fn os_errors_are_said_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "mine").unwrap();
    let out = file.join("sub");
    let o = stormsim(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!stderr(&o).contains("os error"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
}

/// A status that answers a failure (an errors incident, an overload, a
/// queue timeout, a poison message) must be an error: a 2xx there counted
/// as a failure an answer every client reads as a success.
#[test]
fn a_failure_answers_with_an_error_status() {
    use stormsim::scenario::load_str;
    for (extra, at) in [
        (
            "  overload: { status: 200 }\n",
            "dependency.overload.status: status 200 is not an error status",
        ),
        (
            "  queue: { capacity: 10, timeout: 1s, timeout_status: 302 }\n",
            "dependency.queue.timeout_status: status 302 is not an error status",
        ),
    ] {
        let src = BASE.replacen("dependency:\n", &format!("dependency:\n{extra}"), 1);
        let e = load_str(&src, "f.yaml")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains(at), "{e}");
    }
}

/// A ratio of nothing (no request ended and none hung, none offered
/// before the trigger) is empty in `summary.csv` and
/// `summary_by_variant.csv` and `n/a` on the console, and an objective
/// judged on it is `undecided`, never a value: missed (nothing showed it
/// met), so `--fail-on-slo` exits 1, and the console says `undecided`, not
/// `FAIL`. A run whose every request hung earned its 0: a hung request
/// counts as failed.
#[test]
fn ratios_of_nothing_are_empty_and_their_objectives_undecided() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |duration: &str, bucket: &str, rate: &str, incident: &str| {
        format!(
            "name: nothing\nseed: 1\nduration: {duration}\nbucket: {bucket}\n\
             clients: {{ arrival: {{ kind: poisson, rate: {rate} }} }}\n\
             layers: [ {{ name: api }} ]\n\
             dependency: {{ concurrency: 4, service_time: {{ dist: constant, value: 20ms }}{incident} }}\n\
             slo: {{ success_rate: 0.99 }}\n"
        )
    };
    let blackhole =
        |end: &str| format!(", incidents: [ {{ kind: blackhole, start: 0s, end: {end} }} ]");
    let cases = [
        // A blackhole from t=0, no timeout, a run shorter than the
        // recovery window: nothing ends, nothing is old enough to hang.
        (
            "blackhole",
            scenario("3s", "1s", "50/s", &blackhole("3s")),
            "",
        ),
        // Shorter than the first request's arrival.
        ("instant", scenario("1ms", "1ms", "1/s", ""), ""),
        // Ten seconds of it: the requests older than the recovery window
        // hung, and count as failed: 0, earned. Outside the incident
        // nothing ended: undecided.
        (
            "hung",
            scenario("10s", "1s", "50/s", &blackhole("10s")),
            "0",
        ),
    ];
    for (name, src, success) in &cases {
        let f = file(dir.path(), &format!("{name}.yaml"), src);
        let out = dir.path().join(name);
        let o = stormsim(&["run", &f, "--out", out.to_str().unwrap(), "--fail-on-slo"]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        assert_eq!(column(&summary, "success_rate"), [*success], "{name}");
        for c in ["success_rate_outside_incidents", "baseline_success_ratio"] {
            assert_eq!(column(&summary, c), [""], "{name}: {c}");
        }
        assert_eq!(column(&summary, "slo_pass"), ["false"], "{name}");
        assert_eq!(
            column(&summary, "slo_failed"),
            ["success_rate undecided < 0.99"],
            "{name}"
        );
        let by_variant = std::fs::read_to_string(out.join("summary_by_variant.csv")).unwrap();
        assert_eq!(
            column(&by_variant, "success_rate_mean"),
            [*success],
            "{name}"
        );
        for c in [
            "success_rate_outside_incidents_mean",
            "baseline_success_ratio_mean",
        ] {
            assert_eq!(column(&by_variant, c), [""], "{name}: {c}");
        }
        let console = stdout(&o);
        let row = console.lines().nth(2).unwrap_or_default();
        let shown = if success.is_empty() {
            " n/a "
        } else {
            " 0.00% "
        };
        assert!(
            row.starts_with("base ") && row.contains(shown),
            "{name}: {console}"
        );
        assert!(
            console.contains("1. base     undecided  success_rate undecided < 0.99 in 1 of 1 run"),
            "{name}: {console}"
        );
        assert!(
            !console.contains("FAIL") && !console.contains("none <"),
            "{console}"
        );
        assert!(
            stderr(&o).contains("variant base missed the SLO: success_rate undecided < 0.99"),
            "{}",
            stderr(&o)
        );
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(
            html.contains("<td class=\"metastable\">undecided</td>"),
            "{name}"
        );
        // Without --fail-on-slo the run itself succeeds.
        let o = stormsim(&["run", &f, "--out", out.to_str().unwrap(), "--force"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
    }
}

/// A sweep of many variants prints at most 40 rows per console table and
/// per table of `report.html` (the SLO's and the comparison best first),
/// then one line that says how many more there are and which CSV has them
/// all; a sweep of exactly 40 prints every row and no such line.
#[test]
fn huge_sweeps_print_at_most_40_rows_per_table() {
    let dir = tempfile::tempdir().unwrap();
    // Clients → api → db. A blackhole at db without a timeout for the
    // first second: every variant
    // has requests that never end (a warning each), a recovery verdict
    // (the after-incident table) and an SLO verdict.
    let scenario = |n: usize| {
        let values: Vec<String> = (1..=n).map(|c| c.to_string()).collect();
        format!(
            "name: many\nseed: 1\nduration: 3s\nbucket: 1s\n\
             analysis: {{ recovery_window: 1s, service: db }}\n\
             clients:\n  arrival: {{ kind: poisson, rate: 20/s }}\n  \
             classes: [ {{ name: critical, share: 0.5 }}, {{ name: background, share: 0.5 }} ]\n  \
             calls: {{ to: api }}\n\
             services:\n\
             \x20 - {{ name: api, concurrency: 100, service_time: {{ dist: constant, value: 1ms }}, calls: [ {{ to: db }} ] }}\n\
             \x20 - {{ name: db, concurrency: 4, service_time: {{ dist: constant, value: 1ms }}, \
             incidents: [ {{ kind: blackhole, start: 0s, end: 1s }} ] }}\n\
             slo: {{ success_rate: 0.5 }}\n\
             sweep:\n  services.db.concurrency: [{}]\n",
            values.join(", ")
        )
    };
    let sections = ["variant ", "by class", "after incident", "SLO: "];
    for (n, more) in [(100, Some(60)), (40, None)] {
        let f = file(dir.path(), &format!("many{n}.yaml"), &scenario(n));
        let out = dir.path().join(format!("many{n}"));
        let o = stormsim(&["run", &f, "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{n}: {}", stderr(&o));
        let console = stdout(&o);
        let lines: Vec<&str> = console.lines().collect();
        let mut starts: Vec<usize> = sections
            .iter()
            .map(|h| {
                lines
                    .iter()
                    .position(|l| l.starts_with(h))
                    .unwrap_or_else(|| panic!("{n}: no {h:?} table: {console}"))
            })
            .collect();
        let first_note = lines
            .iter()
            .position(|l| l.starts_with("warning: "))
            .unwrap_or_else(|| panic!("{n}: no warning: {console}"));
        starts.push(first_note);
        for (k, h) in sections.iter().enumerate() {
            let body = &lines[starts[k] + 1..starts[k + 1]];
            let rows = body.iter().filter(|l| !l.starts_with('…')).count();
            // The summary has one row per variant, the classes one, the
            // others one.
            assert_eq!(rows, n.min(40), "{n}: {h:?}: {console}");
            let file = if *h == "by class" {
                "classes.csv"
            } else {
                "summary_by_variant.csv"
            };
            let expected: Vec<String> = more
                .iter()
                .map(|m| format!("… and {m} more variants in {file}"))
                .collect();
            let said: Vec<&&str> = body.iter().filter(|l| l.starts_with('…')).collect();
            assert_eq!(said, expected.iter().collect::<Vec<_>>(), "{n}: {h:?}");
        }
        // The SLO's verdicts best first: ranks 1 to 40.
        let slo = &lines[starts[3] + 1..starts[3] + 1 + n.min(40)];
        for (i, row) in slo.iter().enumerate() {
            assert!(
                row.trim_start().starts_with(&format!("{}. ", i + 1)),
                "{n}: {row}"
            );
        }
        let warnings = &lines[first_note..];
        assert_eq!(
            warnings
                .iter()
                .filter(|l| l.starts_with("warning: variant "))
                .count(),
            n.min(40),
            "{n}: {console}"
        );
        let said: Vec<&&str> = warnings.iter().filter(|l| l.starts_with('…')).collect();
        let expected: Vec<String> = more
            .iter()
            .map(|m| {
                format!(
                    "… and {m} more variants with requests that had not ended in summary.csv (in_flight_at_end)"
                )
            })
            .collect();
        assert_eq!(said, expected.iter().collect::<Vec<_>>(), "{n}: {console}");
        // report.html: the comparison, the SLO's table, the recovery list
        // and the classes (40 per class).
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        let part = |from: &str, to: &str| {
            let start = html.find(from).unwrap_or_else(|| panic!("{n}: no {from}"));
            let len = html[start..].find(to).unwrap();
            &html[start..start + len]
        };
        for (from, to, row, per, file) in [
            (
                "<table id=\"comparison-table\">",
                "</table>",
                "<tr><td>",
                1,
                "summary_by_variant.csv",
            ),
            (
                "<h2>Against the SLO</h2>",
                "</table>",
                "<tr><td>",
                1,
                "summary_by_variant.csv",
            ),
            (
                "<h2>Does it recover?</h2>",
                "</ul>",
                "<li>",
                1,
                "summary_by_variant.csv",
            ),
            (
                "<table id=\"classes-table\">",
                "</table>",
                "<tr><td",
                2,
                "classes.csv",
            ),
            // Per service and per call: api and db; clients.api and
            // api.db.
            (
                "<table id=\"services-table\">",
                "</table>",
                "<tr><td",
                2,
                "services.csv",
            ),
            (
                "<table id=\"calls-table\">",
                "</table>",
                "<tr><td",
                2,
                "calls.csv",
            ),
        ] {
            assert_eq!(
                part(from, to).matches(row).count(),
                per * n.min(40),
                "{n}: {from}"
            );
            // Between the table's end and the next section or table.
            let after = &html[html.find(from).unwrap()..];
            let after = &after[after.find(to).unwrap() + to.len()..];
            let next = ["<h2", "<table"].map(|t| after.find(t).unwrap_or(after.len()));
            let after = &after[..next[0].min(next[1])];
            let notes: Vec<&str> = after
                .lines()
                .filter(|l| l.starts_with("<p class=\"more\">"))
                .collect();
            let expected: Vec<String> = more
                .iter()
                .map(|m| {
                    format!("<p class=\"more\">… and {m} more variants in <code>{file}</code></p>")
                })
                .collect();
            assert_eq!(notes, expected, "{n}: {from}");
        }
        if more.is_none() {
            assert!(!console.contains('…'), "{console}");
            assert!(!html.contains("class=\"more\""));
        }
    }
}
