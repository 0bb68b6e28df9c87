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
            "expected a whole number from 0 to 4294967295, found a list",
        ),
        (
            "dependency.concurrency=-1",
            "dependency.concurrency",
            "expected a whole number from 0 to 4294967295, found `-1`",
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
            "expected a whole number from 0 to 65535",
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
