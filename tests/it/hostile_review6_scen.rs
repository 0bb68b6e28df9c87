//! Sixth hostile review, scenario side: fields that belong to the whole
//! scenario refused inside variants and sweeps, the test a search holds
//! fixed, YAML tags and documents named as written, numbers beyond a
//! field's or a table's limit refused in words, what a run writes read
//! back, and the exact tally of many unknown sweep keys.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::files::{scenario, stormsim};

/// The published scenario `name` with `from` replaced by `to` (which must
/// be there), written to `dir/t.yaml`.
fn edited(dir: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let text = fs::read_to_string(scenario(name)).unwrap();
    assert!(text.contains(from), "{name} has no `{from}`");
    let path = dir.join("t.yaml");
    fs::write(&path, text.replacen(from, to, 1)).unwrap();
    path
}

/// `stormsim validate` of `path`: refused with exit 2; its stderr.
fn refused(path: &Path) -> String {
    let out = stormsim().arg("validate").arg(path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

/// F12: the seed, the replicates and the name belong to the scenario;
/// set inside a variant or swept they are refused with the reason, at the
/// key.
#[test]
fn seed_replicates_and_name_are_refused_inside_variants_and_sweeps() {
    let tmp = tempfile::tempdir().unwrap();
    let path = edited(
        tmp.path(),
        "quickstart.yaml",
        "set: {} }",
        "set: { seed: 3, replicates: 5, name: other } }",
    );
    let err = refused(&path);
    for (key, why) in [
        ("seed", "derived from the scenario's seed"),
        ("replicates", "the scenario's number of replicates"),
        ("name", "names the output folder"),
    ] {
        assert!(
            err.contains(&format!(
                "variants.1.set.{key}: in variant `retries-full-jitter`: `{key}` cannot be set from inside a variant or a sweep: "
            )) && err.contains(why),
            "{err}"
        );
    }
    let text = fs::read_to_string(scenario("quickstart.yaml")).unwrap();
    fs::write(&path, format!("{text}sweep:\n  seed: [1, 2]\n")).unwrap();
    let err = refused(&path);
    assert!(
        err.contains("sweep.seed: `seed` cannot be set from inside a variant or a sweep"),
        "{err}"
    );
}

/// F11: with an SLO, the windows every verdict compares (`duration`,
/// `bucket`) cannot differ between variants; without one they may.
#[test]
fn duration_and_bucket_are_refused_per_variant_only_under_an_slo() {
    let tmp = tempfile::tempdir().unwrap();
    let path = edited(
        tmp.path(),
        "slo-gate.yaml",
        "    set: {}",
        "    set: { duration: 1m, bucket: 2s }",
    );
    let err = refused(&path);
    for key in ["duration", "bucket"] {
        assert!(
            err.contains(&format!("variants.1.set.{key}: in variant `backoff`: `{key}` cannot be set from inside a variant or a sweep: the scenario has an SLO, and its verdicts compare every variant over the same windows")),
            "{err}"
        );
    }
    let path = edited(
        tmp.path(),
        "quickstart.yaml",
        "set: {} }",
        "set: { duration: 30s, bucket: 2s } }",
    );
    stormsim().arg("validate").arg(&path).assert().success();
}

/// F6: a search may not change the length of the runs, their window or
/// the guard rails: each refused with its reason.
#[test]
fn tune_space_refuses_duration_bucket_and_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let path = edited(
        tmp.path(),
        "slo-gate.yaml",
        "    layers.api.retry.jitter: [none, full]",
        "    duration: [1m, 2m]\n    bucket: [1s, 2s]\n    limits.max_events: [1000, 2000]",
    );
    let err = refused(&path);
    for (key, why) in [
        ("duration", "how long the candidates are tested"),
        (
            "bucket",
            "the window the SLO and the recovery are measured over",
        ),
        ("limits.max_events", "the guard rails (`limits.*`)"),
    ] {
        assert!(
            err.contains(&format!("tune.space.{key}: `{key}` cannot be searched: "))
                && err.contains(why),
            "{err}"
        );
    }
}

/// L5: a value with an explicit tag is refused naming the tag as written
/// (a core schema tag, with the type error it causes; a custom one alone,
/// without a type error besides).
#[test]
fn a_tagged_value_names_its_tag() {
    let tmp = tempfile::tempdir().unwrap();
    for tag in ["!!str", "!!float"] {
        let path = edited(
            tmp.path(),
            "quickstart.yaml",
            "replicates: 2",
            &format!("replicates: {tag} 2"),
        );
        let err = refused(&path);
        // `!!str` makes the number text (H3 of the twelfth review).
        let found = if tag == "!!str" {
            "the text \"2\""
        } else {
            "`2`"
        };
        assert!(
            err.contains(&format!("replicates: expected a whole number from 1 to 10000, found {found} (the value is written with the YAML tag `{tag}`: stormsim does not take YAML tags")),
            "{err}"
        );
    }
    let path = edited(
        tmp.path(),
        "quickstart.yaml",
        "replicates: 2",
        "replicates: !foo 2",
    );
    let err = refused(&path);
    assert!(
        err.contains("t.yaml:9:13: replicates: YAML tags such as `!foo` are not supported"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // A core tag that says what plain YAML would is read.
    let path = edited(
        tmp.path(),
        "quickstart.yaml",
        "replicates: 2",
        "replicates: !!int 2",
    );
    stormsim().arg("validate").arg(&path).assert().success();
}

/// A file of two YAML documents: one error at the second `---`, without
/// a field path, and nothing about the first document's fields.
#[test]
fn two_documents_are_one_error_at_the_second() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("two.yaml");
    fs::write(&path, "name: a\n---\nname: b\n").unwrap();
    let err = refused(&path);
    assert!(
        err.starts_with(&format!(
            "{}:2:1: the file holds more than one YAML document",
            path.display()
        )),
        "{err}"
    );
    assert!(!err.contains("missing field"), "{err}");
    let one = tmp.path().join("one.yaml");
    let text = fs::read_to_string(scenario("quickstart.yaml")).unwrap();
    fs::write(&one, format!("---\n{text}")).unwrap();
    stormsim().arg("validate").arg(&one).assert().success();
}

/// A duration beyond the largest one stormsim counts says that largest.
#[test]
fn a_duration_too_large_says_the_largest_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let path = edited(
        tmp.path(),
        "quickstart.yaml",
        "duration: 40s",
        "duration: 12345678901234567890123456s",
    );
    let err = refused(&path);
    assert!(
        err.contains("the largest duration accepted is 18446744073709551615ns"),
        "{err}"
    );
    assert!(!err.contains("u64"), "{err}");
}

/// F8: a load against a capacity close to none (a million requests a
/// second at one worker that takes 200000 days a request) is held to the
/// tables' 10^15 when the run writes it: the run completes, and `plot`
/// reads back what it wrote.
#[test]
fn a_load_ratio_beyond_the_tables_figures_is_written_as_their_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f8.yaml");
    fs::write(
        &path,
        "name: f8\nseed: 1\nduration: 1s\nbucket: 100ms\nreplicates: 1\n\
         clients:\n  arrival: { kind: poisson, rate: 1000000/s }\n\
         layers:\n  - name: client\n    timeout: 10ms\n\
         dependency:\n  concurrency: 1\n  service_time: { dist: constant, value: 200000d }\n  queue: { capacity: 0 }\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    stormsim()
        .arg("run")
        .arg(&path)
        .args(["--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let summary = fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(cell("peak_load_ratio"), "1000000000000000");
    stormsim().arg("plot").arg(&out).assert().success();
}

/// F9: a range error quotes the number as the file wrote it, not the
/// float it was read as.
#[test]
fn a_range_error_quotes_the_number_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let path = edited(
        tmp.path(),
        "quickstart.yaml",
        "multiplier: 2",
        "multiplier: -1.00000000000000001",
    );
    let err = refused(&path);
    assert!(
        err.contains("multiplier is -1.00000000000000001; expected a number > 0"),
        "{err}"
    );
}

/// F1: 2000 unknown sweep keys are 2000 errors, counted exactly, the
/// same every time, each at its key.
#[test]
fn many_unknown_sweep_keys_are_counted_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = fs::read_to_string(scenario("quickstart.yaml")).unwrap();
    text.push_str("sweep:\n");
    for i in 0..2000 {
        text.push_str(&format!("  nokey{i}: [1]\n"));
    }
    let path = tmp.path().join("t.yaml");
    fs::write(&path, text).unwrap();
    let started = std::time::Instant::now();
    let err = refused(&path);
    assert!(err.contains("(2000 errors in all)"), "{err}");
    assert!(
        err.contains("t.yaml:36:")
            && err.contains(
                "sweep.nokey0: unknown field `nokey0`, expected one of name, description, seed,"
            ),
        "{err}"
    );
    assert_eq!(refused(&path), err);
    // Linear and small: well under the minutes the old per-point checks
    // took (3.5 ms a key, more under load).
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}
