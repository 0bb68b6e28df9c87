//! Twelfth hostile review: a number that is not finite is one value
//! error among the others (H1), numbers are quoted as written wherever an
//! error is found (H2), a number field refuses text that spells a number
//! (H3), `check` judges each layer by the deadline that reaches it (H4),
//! `export` names the tuned values as BEST gives them (their fields'
//! ranges, full paths, no error about a default: H5), and every refused
//! `--out` says that nothing was written (H6).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::files::{SMALL, stormsim};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `SMALL` with each `(from, to)` replaced, written as `name` in `dir`.
fn small_with(dir: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut src = SMALL.to_string();
    for (from, to) in edits {
        assert!(src.contains(from), "{from}");
        src = src.replacen(from, to, 1);
    }
    let f = dir.join(name);
    fs::write(&f, src).unwrap();
    f
}

/// `validate FILE ARGS…`: exit code and stderr (a refused file prints
/// nothing on stdout).
fn validate(file: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = stormsim()
        .arg("validate")
        .arg(file)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success() || o.stdout.is_empty());
    (o.status.code(), stderr(&o))
}

/// H1: `.nan`, `.inf` or a number too large for a float, in a field, a
/// sweep or a variant, is reported at its file:line:column and path as
/// a value error, and the file's other problems (a type error, a
/// semantic one, a variant's) are all reported beside it.
#[test]
fn a_non_finite_number_hides_no_other_problem() {
    let tmp = tempfile::tempdir().unwrap();
    for (spelling, shown) in [(".nan", "`.nan`"), (".inf", "`.inf`"), ("-.Inf", "`-.Inf`")] {
        let f = small_with(
            tmp.path(),
            "nan.yaml",
            &[
                ("multiplier: 2", &format!("multiplier: {spelling}")),
                ("concurrency: 8", "concurrency: -8"),
                ("timeout: 200ms", "timeout: 0ms"),
            ],
        );
        let src = fs::read_to_string(&f).unwrap()
            + &format!(
                "variants:\n  a: {{ layers.edge.retry.max_attempts: 0 }}\n  b: {{ layers.edge.retry.backoff.cap: {spelling} }}\nsweep: {{ dependency.queue.capacity: [1, {spelling}] }}\n"
            );
        fs::write(&f, src).unwrap();
        let (code, err) = validate(&f, &[]);
        assert_eq!(code, Some(2), "{err}");
        for want in [
            format!(
                "nan.yaml:13:61: layers.edge.retry.backoff.multiplier: {shown} is not a finite number; expected a number > 0"
            ),
            "nan.yaml:17:16: dependency.concurrency: expected a whole number from 1 to 1000000, found `-8`".to_string(),
            "nan.yaml:10:14: layers.edge.timeout: timeout is 0s".to_string(),
            "variants.0.set.layers.edge.retry.max_attempts: in variant `a`: max_attempts is 0".to_string(),
            "variants.1.set.layers.edge.retry.backoff.cap: in variant `b`".to_string(),
            "sweep.dependency.queue.capacity: sweep value".to_string(),
        ] {
            assert!(err.contains(&want), "{spelling}: {want}\n{err}");
        }
        // Each problem once.
        assert_eq!(err.matches("backoff.multiplier").count(), 1, "{err}");
    }
}

/// H1, with overrides: a `--set` puts its value in place through JSON,
/// which has no NaN, so a file's `.nan` came back as the field's default
/// and the run went ahead. It is still the file's error, at its place,
/// and nothing is written; a `--set` of that very field replaces it.
#[test]
fn a_non_finite_number_in_the_file_is_not_lost_to_a_set() {
    let tmp = tempfile::tempdir().unwrap();
    let f = small_with(
        tmp.path(),
        "nan.yaml",
        &[("multiplier: 2", "multiplier: .nan")],
    );
    let want =
        "nan.yaml:13:61: layers.edge.retry.backoff.multiplier: `.nan` is not a finite number";
    for sets in [
        &["--set", "duration=7s"][..],
        &["--set", "layers.edge.timeout=300ms"],
    ] {
        let (code, err) = validate(&f, sets);
        assert_eq!(code, Some(2), "{sets:?}: {err}");
        assert!(err.contains(want), "{sets:?}: {err}");
        assert_eq!(err.matches("multiplier").count(), 1, "{err}");
        let out = tmp.path().join("out");
        let o = stormsim()
            .arg("run")
            .arg(&f)
            .args(sets)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
        assert!(!out.exists(), "nothing is written");
    }
    let (code, err) = validate(&f, &["--set", "layers.edge.retry.backoff.multiplier=3"]);
    assert_eq!(code, Some(0), "{err}");
}

/// H2: a number is quoted as written wherever the error is found: after
/// a first error of the file (`2.50`, not `2.5`), in a `--set` (`3.0`,
/// not `3`), in a sweep given by `--set` or in the file, and `.nan` or
/// `-.INF` as written, not `NaN` or `-inf`; and `--set FIELD=.inf` is
/// valid YAML, refused for not being finite, with the field's range.
#[test]
fn numbers_are_quoted_as_written_after_any_error() {
    let tmp = tempfile::tempdir().unwrap();
    let f = small_with(
        tmp.path(),
        "q.yaml",
        &[
            ("max_attempts: 3", "max_attempts: x"),
            ("capacity: 64", "capacity: 2.50"),
        ],
    );
    let src =
        fs::read_to_string(&f).unwrap() + "sweep: { dependency.concurrency: [2, 1.50, 1e9] }\n";
    fs::write(&f, src).unwrap();
    let (code, err) = validate(&f, &[]);
    assert_eq!(code, Some(2), "{err}");
    for want in [
        "q.yaml:12:21: layers.edge.retry.max_attempts: expected a whole number from 1 to 1000, found `x`",
        "q.yaml:19:22: dependency.queue.capacity: expected a whole number from 0 to 100000000, found `2.50`",
        "sweep value 1.50: expected a whole number from 1 to 1000000, found `1.50`",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
    let good = small_with(tmp.path(), "good.yaml", &[]);
    let (code, err) = validate(
        &good,
        &[
            "--set",
            "layers.edge.retry.max_attempts=3.0",
            "--set",
            "layers.edge.retry.backoff.multiplier=-.INF",
            "--set",
            "dependency.queue.capacity=.nan",
            "--set",
            "sweep.dependency.concurrency=[2.50, 4.0]",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    for want in [
        "<--set>: layers.edge.retry.max_attempts: expected a whole number from 1 to 1000, found `3.0`",
        "<--set>: layers.edge.retry.backoff.multiplier: `-.INF` is not a finite number; expected a number > 0",
        "<--set>: dependency.queue.capacity: expected a whole number from 0 to 100000000, found `.nan`",
        "sweep value 2.50: expected a whole number from 1 to 1000000, found `2.50`",
        "sweep value 4.0: expected a whole number from 1 to 1000000, found `4.0`",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
    assert!(!err.contains("not valid YAML"), "{err}");
}

/// `check FILE`: exit code and stdout.
fn check(file: &Path) -> (Option<i32>, String) {
    let o = stormsim().arg("check").arg(file).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// H4: `clients.deadline` bounds the retries only of the layers (or
/// calls) it reaches: below a caller that does not propagate it, 1000
/// attempts are unbounded, an error (exit 1); with `deadline: propagate`
/// on every caller above they are bounded. Retries are counted as
/// attempts − 1.
#[test]
fn check_judges_each_hop_by_the_deadline_that_reaches_it() {
    let tmp = tempfile::tempdir().unwrap();
    let chain = "\
name: ck
duration: 60s
clients:
  arrival: { kind: poisson, rate: 50/s }
  deadline: 2s
layers:
  - name: edge
    timeout: 1s
    deadline: none
    retry: { max_attempts: 2 }
  - name: inner
    timeout: 100ms
    retry: { max_attempts: 1000 }
dependency:
  concurrency: 8
  service_time: { dist: exponential, mean: 5ms }
";
    let graph = "\
name: g
duration: 20s
clients:
  arrival: { kind: poisson, rate: 20/s }
  deadline: 10s
  calls: { to: gateway, timeout: 3s, deadline: none, retry: { max_attempts: 2 } }
services:
  - name: gateway
    concurrency: 100
    service_time: { dist: constant, value: 1ms }
    calls:
      - { to: db, timeout: 100ms, retry: { max_attempts: 1000 } }
  - name: db
    concurrency: 16
    service_time: { dist: exponential, mean: 4ms }
";
    for (src, who) in [
        (
            chain,
            "unbounded-retries [layers.inner.retry.max_attempts]: layer `inner`",
        ),
        (
            graph,
            "unbounded-retries [services.gateway.calls.db.retry.max_attempts]: call `gateway.db`",
        ),
    ] {
        let f = tmp.path().join("ck.yaml");
        fs::write(&f, src).unwrap();
        let (code, out) = check(&f);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains(who), "{out}");
        assert!(
            out.contains("retries 999 times (1000 attempts, unbounded)"),
            "{out}"
        );
        assert!(out.contains("clients.deadline does not reach it"), "{out}");
        // Propagated by every caller above: bounded.
        fs::write(&f, src.replace("deadline: none", "deadline: propagate")).unwrap();
        let (code, out) = check(&f);
        assert!(!out.contains("unbounded-retries"), "{out}");
        assert_eq!(code, Some(0), "{out}");
    }
}

/// H6: every exit-2 refusal of an output (`run`, `tune`, `merge`,
/// `plot`) says that nothing was written, and writes nothing.
#[test]
fn every_refused_output_says_nothing_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let small = small_with(dir, "small.yaml", &[]);
    let tuned = small_with(
        dir,
        "tuned.yaml",
        &[(
            "dependency:",
            "tune:\n  space: { layers.edge.retry.max_attempts: { int: [1, 3] } }\n  objective: { maximize: success_rate }\n  budget: 2\ndependency:",
        )],
    );
    fs::write(dir.join("a-file"), "x").unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("link")).unwrap();
    fs::create_dir(dir.join("foreign")).unwrap();
    fs::write(dir.join("foreign/x"), "x").unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let cases: Vec<Vec<String>> = vec![
        vec![
            "run".into(),
            s(&small),
            "--out".into(),
            s(&dir.join("link")),
        ],
        vec![
            "run".into(),
            s(&small),
            "--out".into(),
            s(&dir.join("a-file")),
        ],
        vec![
            "run".into(),
            s(&small),
            "--out".into(),
            s(&dir.join("foreign")),
        ],
        vec![
            "tune".into(),
            s(&tuned),
            "--out".into(),
            s(&dir.join("link")),
        ],
        vec![
            "merge".into(),
            s(&dir.join("foreign")),
            "--out".into(),
            s(&dir.join("m")),
        ],
        vec!["plot".into(), s(&dir.join("nowhere"))],
        vec!["plot".into(), s(&dir.join("link"))],
        vec!["plot".into(), s(&dir.join("foreign"))],
    ];
    for args in cases {
        let o = stormsim().current_dir(dir).args(&args).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("nothing was written"), "{args:?}: {err}");
    }
    assert!(!dir.join("m").exists() && !dir.join("output").exists());
    assert_eq!(fs::read_to_string(dir.join("a-file")).unwrap(), "x");
    assert_eq!(fs::read_dir(dir.join("foreign")).unwrap().count(), 1);
}

/// H3: a number field given text that spells a number (quoted, tagged
/// `!!str`, or spelt `1_000` as only YAML 1.1 reads it as a number) is
/// refused at the value's line and column with the field's range, in the
/// file, in a `--set`, in a variant's overrides, in a sweep and in a
/// search space alike; durations stay text, and plain numbers pass.
#[test]
fn a_number_written_as_text_is_refused_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let attempts =
        "layers.edge.retry.max_attempts: expected a whole number from 1 to 1000, found the text";
    let tag_note = "(the value is written with the YAML tag `!!str`";
    for (spelling, col, found) in [
        ("\"3\"", 21, "\"3\" (remove the quotes)"),
        ("'3'", 21, "\"3\" (remove the quotes)"),
        ("!!str 3", 27, &format!("\"3\" {tag_note}")),
        (
            "1_000",
            21,
            "\"1_000\" (YAML 1.2 reads a number written with `_` as text: write 1000)",
        ),
    ] {
        let f = small_with(
            tmp.path(),
            "q.yaml",
            &[
                ("max_attempts: 3", &format!("max_attempts: {spelling}")),
                // A float field, a server's, beside it: each one error.
                ("multiplier: 2", "multiplier: '2.5'"),
                ("concurrency: 8", "concurrency: \"8\""),
            ],
        );
        let (code, err) = validate(&f, &[]);
        assert_eq!(code, Some(2), "{spelling}: {err}");
        for want in [
            format!("q.yaml:12:{col}: {attempts} {found}"),
            "q.yaml:13:61: layers.edge.retry.backoff.multiplier: expected a number, found the text \"2.5\" (remove the quotes)".to_string(),
            "q.yaml:17:16: dependency.concurrency: expected a whole number from 1 to 1000000, found the text \"8\" (remove the quotes)".to_string(),
        ] {
            assert!(err.contains(&want), "{spelling}: {want}\n{err}");
        }
        assert!(err.ends_with("3 errors\n"), "{spelling}: {err}");
    }
    // A `--set` value is YAML: quoted, it is text.
    let good = small_with(tmp.path(), "good.yaml", &[]);
    for (value, found) in [
        ("\"3\"", "\"3\" (remove the quotes)"),
        ("1_000", "\"1_000\" (YAML 1.2"),
        ("!!str 3", &format!("\"3\" {tag_note}")),
    ] {
        let (code, err) = validate(
            &good,
            &["--set", &format!("layers.edge.retry.max_attempts={value}")],
        );
        assert_eq!(code, Some(2), "{value}: {err}");
        assert!(
            err.starts_with(&format!("<--set>: {attempts} {found}")),
            "{value}: {err}"
        );
    }
    let (code, err) = validate(
        &good,
        &["--set", "layers.edge={name: edge, instances: '2'}"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("<--set>: layers.edge.instances: expected a whole number from 1 to 1000000, found the text \"2\" (remove the quotes)"),
        "{err}"
    );
    // Variants, a sweep and a search space, in the file and by `--set`.
    let f = small_with(
        tmp.path(),
        "v.yaml",
        &[(
            "dependency:",
            "variants:\n  a: { layers.edge.retry.max_attempts: \"3\" }\n  b: { layers.edge.retry.max_attempts: 1_000 }\nsweep:\n  dependency.concurrency: [\"5\", 6]\ntune:\n  space:\n    layers.edge.retry.backoff.multiplier: { range: [\"1.5\", 3] }\ndependency:",
        )],
    );
    let (code, err) = validate(&f, &[]);
    assert_eq!(code, Some(2), "{err}");
    for want in [
        "v.yaml:17:40: variants.0.set.layers.edge.retry.max_attempts: in variant `a`: expected a whole number from 1 to 1000, found the text \"3\" (remove the quotes)",
        "v.yaml:18:40: variants.1.set.layers.edge.retry.max_attempts: in variant `b`: expected a whole number from 1 to 1000, found the text \"1_000\"",
        "v.yaml:20:28: sweep.dependency.concurrency: sweep value 5: expected a whole number from 1 to 1000000, found the text \"5\" (remove the quotes)",
        "tune.space.layers.edge.retry.backoff.multiplier: expected a number, found the text \"1.5\" (remove the quotes)",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
    let (code, err) = validate(
        &good,
        &[
            "--set",
            "sweep.dependency.concurrency=['5', 6]",
            "--set",
            "variants={a: {layers.edge.retry.max_attempts: '3'}}",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    for want in [
        "<--set>: sweep.dependency.concurrency: sweep value 5: expected a whole number from 1 to 1000000, found the text \"5\" (remove the quotes)",
        "<--set>: variants.0.set.layers.edge.retry.max_attempts: in variant `a`: expected a whole number from 1 to 1000, found the text \"3\" (remove the quotes)",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
    // Durations are text by design; plain numbers, and the shell's own
    // quotes (`--set x="3"` passes 3), are numbers.
    let (code, err) = validate(
        &good,
        &[
            "--set",
            "layers.edge.timeout='250ms'",
            "--set",
            "layers.edge.retry.max_attempts=4",
            "--set",
            "dependency.concurrency=0x10",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
}

/// `export BEST --into FILE ARGS… --dry-run` in `dir`: exit code, stdout
/// and stderr.
fn export_in(dir: &Path, best: &str, into: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let o = stormsim()
        .current_dir(dir)
        .args(["export", best, "--into", into, "--dry-run"])
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr(&o),
    )
}

/// H5: `export` speaks of the tuned values as BEST gives them: a value
/// out of its field's range is refused with that range (not its storage
/// type's), a field is named by the full path `--set` takes, and a field
/// BEST does not write (a default: a jitter, a budget's `scope`, a part of
/// a value refused already) is no error: the file keeps its own value
/// there, and a note says so.
#[test]
fn export_names_what_best_gives_as_best_gives_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs");
    for f in ["service-config.json", "application.yml"] {
        fs::copy(fixtures.join(f), dir.join(f)).unwrap();
    }
    let grpc = [
        "--format",
        "grpc-service-config",
        "--method",
        "orders.v1.Orders/CreateOrder",
    ];
    let r4j = ["--format", "resilience4j", "--instance", "paymentService"];
    // (a) The field's own range, at BEST's line and column.
    for (line, want) in [
        (
            "layers.orders.retry.max_attempts: 5000000000",
            "best.yaml:1:35: layers.orders.retry.max_attempts: expected a whole number from 1 to 1000, found 5000000000",
        ),
        (
            "layers.orders.retry.max_attempts: 5000",
            "best.yaml:1:35: layers.orders.retry.max_attempts: expected a whole number from 1 to 1000, found 5000",
        ),
        (
            "layers.orders.instances: 4294967296",
            "best.yaml:1:26: layers.orders.instances: expected a whole number from 1 to 1000000, found 4294967296",
        ),
    ] {
        fs::write(dir.join("best.yaml"), format!("{line}\n")).unwrap();
        let (code, _, err) = export_in(dir, "best.yaml", "service-config.json", &grpc);
        assert_eq!(code, Some(2), "{line}: {err}");
        assert!(err.contains(want), "{line}: {want}\n{err}");
        assert!(!err.contains("4294967295"), "{line}: {err}");
    }
    // (b) Full paths, as `--set` takes them; (c) one error for a value
    // the file cannot hold, none for what it replaces.
    fs::write(dir.join("best.yaml"), "layers.orders.retry.jitter: full\n").unwrap();
    let (code, _, err) = export_in(dir, "best.yaml", "service-config.json", &grpc);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        "service-config.json: layers.orders.retry.jitter: cannot be written to this file: fixed by gRPC (exponential backoff, jitter ×U(0.8, 1.2), pushback honoured: gRFC A6)\n"
    );
    fs::write(
        dir.join("best.yaml"),
        "layers.orders.hedging.delay: 5ms\nlayers.orders.retry.budget: { kind: token_bucket, max_tokens: 20, token_ratio: 0.2 }\n",
    )
    .unwrap();
    let (code, _, err) = export_in(dir, "best.yaml", "application.yml", &r4j);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "application.yml: layers.orders.hedging.delay: a resilience4j file holds no `hedging`"
        ),
        "{err}"
    );
    // (c) A scenario as BEST: the fields it leaves to their defaults
    // (jitter, Retry-After, a budget's scope, the breaker it has not) are
    // no errors; what it writes is exported, or refused by its own path.
    let scenario = "\
name: best
duration: 60s
clients:
  arrival: { kind: poisson, rate: 100/s }
layers:
  - name: orders
    total_timeout: 4s
    retry:
      max_attempts: 3
      backoff: { kind: exponential, base: 250ms, multiplier: 2, cap: 1s }
      retry_on: [connection, 503]
      budget: { kind: token_bucket, max_tokens: 20, token_ratio: 0.2 }
dependency:
  concurrency: 8
  service_time: { dist: exponential, mean: 5ms }
";
    fs::write(dir.join("best.yaml"), scenario).unwrap();
    let (code, out, err) = export_in(dir, "best.yaml", "service-config.json", &grpc);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("+        \"maxAttempts\": 3,"), "{out}");
    assert!(
        err.contains("note: the tuned values do not write layers.orders.retry.jitter, layers.orders.retry.retry_after: the file keeps its own there"),
        "{err}"
    );
    let (code, _, err) = export_in(dir, "best.yaml", "application.yml", &r4j);
    assert_eq!(code, Some(2), "{err}");
    for want in [
        "application.yml: layers.orders.retry.budget.kind: cannot be written to this file",
        "application.yml: layers.orders.retry.retry_on: cannot be written to this file",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
    for unwritten in ["budget.scope", "jitter", "retry_after", "breaker"] {
        assert!(!err.contains(unwritten), "{unwritten}\n{err}");
    }
    // Nothing was written.
    for f in ["service-config.json", "application.yml"] {
        assert_eq!(
            fs::read(dir.join(f)).unwrap(),
            fs::read(fixtures.join(f)).unwrap()
        );
    }
}

/// H7: a duration that is not finite (`.nan`, `.inf`, `-.Inf`) is said to
/// be so wherever it is written (a field, a variant's overrides, a sweep,
/// a `--set`), never read as a number with an unknown unit `nan`; and it
/// is quoted as written, also inside a mapping, from a file and from a
/// `--set` alike.
#[test]
fn a_duration_that_is_not_finite_is_said_so_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    for spelling in [".nan", ".inf", "-.Inf", ".NaN"] {
        let f = small_with(
            tmp.path(),
            "d.yaml",
            &[
                ("timeout: 200ms", &format!("timeout: {spelling}")),
                (
                    "dependency:",
                    &format!(
                        "variants:\n  a: {{ layers.edge.retry.backoff.base: {spelling} }}\n  b: {{ layers.edge.retry.backoff: {{ kind: exponential, base: {spelling} }} }}\nsweep:\n  dependency.queue.timeout: [{spelling}, 1s]\ndependency:"
                    ),
                ),
            ],
        );
        let not_finite = format!(
            "duration `{spelling}` is not a finite duration; expected a number with a unit, such as 250ms or 2s"
        );
        let (code, err) = validate(&f, &[]);
        assert_eq!(code, Some(2), "{err}");
        for want in [
            format!("d.yaml:10:14: layers.edge.timeout: {not_finite}"),
            format!("variants.0.set.layers.edge.retry.backoff.base: in variant `a`: {not_finite}"),
            format!(
                "variants.1.set.layers.edge.retry.backoff: in variant `b`: layers.edge.retry.backoff.base: {not_finite}"
            ),
            format!("sweep.dependency.queue.timeout: sweep value {spelling}: {not_finite}"),
        ] {
            assert!(err.contains(&want), "{want}\n{err}");
        }
        assert!(
            !err.contains("unknown unit") && !err.contains("no unit"),
            "{err}"
        );
        let good = small_with(tmp.path(), "good.yaml", &[]);
        let (code, err) = validate(
            &good,
            &[
                "--set",
                &format!("layers.edge.timeout={spelling}"),
                "--set",
                &format!("layers.edge.retry.backoff={{kind: exponential, base: {spelling}}}"),
                "--set",
                &format!("variants={{b: {{layers.edge.retry.backoff: {{base: {spelling}}}}}}}"),
                "--set",
                &format!("sweep.dependency.queue.timeout=[{spelling}, 1s]"),
            ],
        );
        assert_eq!(code, Some(2), "{err}");
        for want in [
            format!("<--set>: layers.edge.timeout: {not_finite}"),
            format!("<--set>: layers.edge.retry.backoff.base: {not_finite}"),
            format!(
                "<--set>: variants.0.set.layers.edge.retry.backoff: in variant `b`: layers.edge.retry.backoff.base: {not_finite}"
            ),
            format!(
                "<--set>: sweep.dependency.queue.timeout: sweep value {spelling}: {not_finite}"
            ),
        ] {
            assert!(err.contains(&want), "{want}\n{err}");
        }
        assert!(
            !err.contains("unknown unit") && !err.contains("no unit"),
            "{err}"
        );
    }
}

/// H3, a count under a key the file names (`shed_by_priority`: a class of
/// clients → a queue length): text that spells a number is refused there
/// too, in the file and in a `--set`.
#[test]
fn a_count_under_a_named_key_refuses_text() {
    let tmp = tempfile::tempdir().unwrap();
    let f = small_with(
        tmp.path(),
        "s.yaml",
        &[(
            "queue: { capacity: 64 }",
            "queue: { capacity: 64 }\n  shed_by_priority: { background: \"50\" }",
        )],
    );
    let (code, err) = validate(&f, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("s.yaml:20:35: dependency.shed_by_priority.background: expected a whole number from 0 to 4294967295, found the text \"50\" (remove the quotes)"),
        "{err}"
    );
    let good = small_with(tmp.path(), "good.yaml", &[]);
    let (code, err) = validate(
        &good,
        &["--set", "dependency.shed_by_priority={background: '50'}"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("<--set>: dependency.shed_by_priority.background: expected a whole number from 0 to 4294967295, found the text \"50\" (remove the quotes)"),
        "{err}"
    );
}
