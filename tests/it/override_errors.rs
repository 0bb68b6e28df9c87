//! Errors inside overrides (issue 13, D2–D5, D9, D10, D14): a problem an
//! override brings names the path as the user typed it, even beside a
//! rename; one refused override (a duplicate `--set`, a variant's `seed`,
//! a sweep key that names nothing) is left out and every other problem
//! of the same run of `validate` is still reported; and a number is
//! quoted back as it was written, never as the float it reads as.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::files::stormsim;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `validate FILE --set …`, run from the file's folder: exit code, stderr.
fn validate(file: &Path, sets: &[&str]) -> (Option<i32>, String) {
    let mut c = stormsim();
    c.current_dir(file.parent().unwrap())
        .arg("validate")
        .arg(file.file_name().unwrap());
    for s in sets {
        c.arg("--set").arg(s);
    }
    let o = c.output().unwrap();
    // A refused file prints nothing but its errors.
    assert!(
        o.status.success() || o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The bundled outage scenario with its variants replaced by `tail`,
/// written as `name` in a fresh folder.
fn outage_with(dir: &tempfile::TempDir, name: &str, tail: &str) -> PathBuf {
    let src = fs::read_to_string(root().join("scenarios/outage-recovery.yaml")).unwrap();
    let head = src.split("\nvariants:").next().unwrap();
    let path = dir.path().join(name);
    fs::write(&path, format!("{head}\n{tail}")).unwrap();
    path
}

fn outage() -> PathBuf {
    root().join("scenarios/outage-recovery.yaml")
}

#[test]
fn a_type_error_beside_a_rename_names_the_field_as_typed() {
    // `--set`: the timeout is of the layer the file calls `api`, which
    // another override renames; the error is about `layers.api.timeout`
    // (what the user typed and can paste back), not `layers.edge…` nor
    // `layers.0…`.
    let (code, err) = validate(
        &outage(),
        &["layers.api.name=edge", "layers.api.timeout=abc"],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.lines().any(|l| l
            == "<--set>: layers.api.timeout: invalid duration `abc`: expected a number with a \
                unit, such as 250ms or 2s"),
        "{err}"
    );
    assert!(!err.contains("layers.edge.timeout"), "{err}");
    assert!(!err.contains("layers.0.timeout"), "{err}");

    // A variant's `set` alike.
    let dir = tempfile::tempdir().unwrap();
    let file = outage_with(
        &dir,
        "rename.yaml",
        "variants:\n  - { name: a, set: { layers.api.name: edge, layers.api.timeout: abc } }\n",
    );
    let (code, err) = validate(&file, &[]);
    assert_eq!(code, Some(2));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "rename.yaml:43:66: variants.0.set.layers.api.timeout: in variant `a`: invalid \
          duration `abc`: expected a number with a unit, such as 250ms or 2s"
        ],
        "{err}"
    );
}

#[test]
fn a_refused_variant_key_hides_none_of_the_others() {
    // Four independent mistakes in one variant's `set`: each is reported,
    // at its own line and column.
    let dir = tempfile::tempdir().unwrap();
    let file = outage_with(
        &dir,
        "four.yaml",
        "variants:\n  - { name: a, set: { seed: 5, replicates: 2, layers.api.timeout: 2s, \
         layers.0.timeout: 3s, dependency.concurrency: abc } }\n",
    );
    let (code, err) = validate(&file, &[]);
    assert_eq!(code, Some(2));
    let paths: Vec<&str> = err.lines().filter_map(|l| l.split(": ").nth(1)).collect();
    assert_eq!(
        paths,
        [
            "variants.0.set.seed",
            "variants.0.set.replicates",
            "variants.0.set.layers.0.timeout",
            "variants.0.set.dependency.concurrency",
        ],
        "{err}"
    );
    assert!(err.contains("found `abc`"), "{err}");
    assert!(err.ends_with("4 errors\n"), "{err}");
}

#[test]
fn a_duplicate_set_is_refused_and_the_other_overrides_still_judged() {
    let (code, err) = validate(
        &outage(),
        &["duration=10m", "duration=20m", "dependency.concurrency=abc"],
    );
    assert_eq!(code, Some(2));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "<--set>: duration: sets the same field as `duration`, so one of the two values \
             would never apply; keep one of them",
            "<--set>: dependency.concurrency: expected a whole number from 1 to 1000000, \
             found `abc`",
            "2 errors",
        ],
        "{err}"
    );
    // The first applies: with the rest right, the later duplicate is the
    // one error (and the run is refused, not run with either value).
    let (code, err) = validate(&outage(), &["duration=10m", "duration=20m"]);
    assert_eq!(code, Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_sweep_key_that_names_nothing_hides_no_bad_value_of_another() {
    let dir = tempfile::tempdir().unwrap();
    let file = outage_with(
        &dir,
        "sweep.yaml",
        "sweep:\n  no.such.key: [1, 2]\n  dependency.concurrency: [5, abc]\n",
    );
    let (code, err) = validate(&file, &[]);
    assert_eq!(code, Some(2));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].starts_with("sweep.yaml:43:16: sweep.no.such.key: "),
        "{err}"
    );
    assert_eq!(
        lines[1],
        "sweep.yaml:44:31: sweep.dependency.concurrency: sweep value abc: expected a whole \
         number from 1 to 1000000, found `abc`",
        "{err}"
    );
    assert_eq!(lines[2], "2 errors");
}

#[test]
fn numbers_are_quoted_as_written() {
    for written in ["1e12", "99999999999999999999999", "1.5e300"] {
        let (code, err) = validate(&outage(), &[&format!("dependency.concurrency={written}")]);
        assert_eq!(code, Some(2), "{written}");
        assert_eq!(
            err,
            format!(
                "<--set>: dependency.concurrency: expected a whole number from 1 to 1000000, \
                 found `{written}`\n"
            ),
        );
    }
    // A number where a duration or a name belongs, read as a float and
    // passed on: quoted as typed, not as the float's `1000000000000.0` or
    // `1.0e+23`.
    let cases = [
        ("layers.api.timeout=1e12", "duration `1e12` has no unit"),
        ("clients.deadline=1.5e-9", "duration `1.5e-9` has no unit"),
        (
            "layers.api.retry.jitter=99999999999999999999999",
            "unknown value `99999999999999999999999`;",
        ),
    ];
    for (set, quoted) in cases {
        let (code, err) = validate(&outage(), &[set]);
        assert_eq!(code, Some(2), "{set}");
        assert!(err.contains(quoted), "{set}: {err}");
        assert!(!err.contains(".0`") && !err.contains("e+"), "{set}: {err}");
    }
    // In the file too.
    let dir = tempfile::tempdir().unwrap();
    let src = fs::read_to_string(outage()).unwrap();
    let file = dir.path().join("big.yaml");
    fs::write(
        &file,
        src.replace("concurrency: 64", "concurrency: 99999999999999999999999"),
    )
    .unwrap();
    let (code, err) = validate(&file, &[]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        "big.yaml:34:16: dependency.concurrency: expected a whole number from 1 to 1000000, \
         found `99999999999999999999999`\n"
    );
}

/// Two layers reading routes of one Envoy file, in `dir`; the `outer`
/// one's route draws warnings from the file.
fn two_from(dir: &Path) -> PathBuf {
    fs::copy(
        root().join("tests/fixtures/configs/envoy.yaml"),
        dir.join("envoy.yaml"),
    )
    .unwrap();
    let f = dir.join("best.yaml");
    fs::write(
        &f,
        "name: two\nduration: 10s\nclients: { arrival: { kind: poisson, rate: 10/s } }\n\
         layers:\n\
         \x20 - { name: outer, from: { file: envoy.yaml, format: envoy-route, route: create-order }, retry: { max_attempts: 5 } }\n\
         \x20 - { name: inner, from: { file: envoy.yaml, format: envoy-route, route: get-order }, retry: { max_attempts: 4 } }\n\
         dependency: { concurrency: 4, service_time: { dist: exponential, mean: 10ms } }\n",
    )
    .unwrap();
    f
}

#[test]
fn a_type_error_in_an_override_hides_not_that_it_changes_a_from() {
    let tmp = tempfile::tempdir().unwrap();
    let f = two_from(tmp.path());
    let (code, err) = validate(
        &f,
        &[
            "layers.outer={name: outer, from: { file: envoy.yaml, format: envoy-route, \
           route: get-order }, timeout: abc}",
        ],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.contains("<--set>: layers.outer: changes the `from` of layers.outer: "),
        "{err}"
    );
    assert!(
        err.contains("<--set>: layers.outer.timeout: invalid duration `abc`"),
        "{err}"
    );
    assert!(err.ends_with("2 errors\n"), "{err}");
}

#[test]
fn a_file_warning_goes_with_the_item_an_override_replaces() {
    let tmp = tempfile::tempdir().unwrap();
    let f = two_from(tmp.path());
    let from = |err: &str, item: &str| {
        err.lines()
            .filter(|l| {
                l.starts_with("warning: envoy.yaml:") && l.ends_with(&format!("(from {item})"))
            })
            .count()
    };
    // As the file is: two warnings about the outer route, one the inner.
    let (code, err) = validate(&f, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        (from(&err, "layers.outer"), from(&err, "layers.inner")),
        (2, 1),
        "{err}"
    );
    // The outer layer replaced, by index or by name: its warnings go.
    for set in ["layers.0={name: x}", "layers.outer={name: x}"] {
        let (code, err) = validate(&f, &[set]);
        assert_eq!(code, Some(0), "{set}: {err}");
        assert_eq!(
            (from(&err, "layers.outer"), from(&err, "layers.inner")),
            (0, 1),
            "{set}: {err}"
        );
    }
    // Every layer replaced: none left.
    let (code, err) = validate(&f, &["layers=[{name: x}]"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("warning: envoy.yaml"), "{err}");
    // A field inside it, even `from` (whose values read stay): they stay.
    let (code, err) = validate(&f, &["layers.outer.from=null", "layers.outer.timeout=1s"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        (from(&err, "layers.outer"), from(&err, "layers.inner")),
        (2, 1),
        "{err}"
    );
}

/// A message's suggested `--set` names the field by its whole path, so
/// that pasting it works (it said `backoff={kind: constant, ...}`, which
/// `--set` refuses as an unknown field).
#[test]
fn a_suggested_set_can_be_pasted() {
    let file = root().join("scenarios/quickstart.yaml");
    let (code, err) = validate(&file, &["layers.client.retry.backoff.kind=constant"]);
    assert_eq!(code, Some(2), "{err}");
    let suggested = err
        .split("e.g. ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("no suggestion in: {err}"))
        .to_string();
    assert!(
        suggested.starts_with("layers.client.retry.backoff="),
        "{err}"
    );
    let (code, err) = validate(&file, &[&suggested]);
    assert_eq!(code, Some(0), "--set {suggested}: {err}");
}
