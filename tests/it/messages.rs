//! Messages and the command line, one test per class of defect: names
//! with control characters, text echoed from input, every independent
//! error reported, error paths that `--set` accepts, `--set` order,
//! overrides without effect, addressable sweep keys, no Rust in messages,
//! defaults that follow the user's values, and memory bounded up front.

use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

fn stormsim(args: &[&str]) -> Output {
    Command::cargo_bin("stormsim")
        .unwrap()
        .args(args)
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const BASE: &str = "\
name: base
duration: 1m
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

/// Whether `text` holds a character a terminal would act on or hide.
fn has_unsafe(text: &str) -> bool {
    text.chars()
        .any(|c| c != '\n' && stormsim::escape::is_unsafe_char(c))
}

#[test]
fn names_with_control_characters_are_refused_and_never_echoed_raw() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "scenario",
            BASE.replace("name: base", "name: \"base\\e[2J\""),
        ),
        (
            "layer",
            BASE.replace("name: api", "name: \"api\\u202Egnp\"")
                .replace("layers.api", "layers.0"),
        ),
        (
            "variant",
            format!("{BASE}variants:\n  - {{ name: \"fake\\0result\", set: {{}} }}\n"),
        ),
        (
            "variant (bidi isolate)",
            format!("{BASE}variants:\n  - {{ name: \"a\\u2066b\", set: {{}} }}\n"),
        ),
        (
            "sweep label",
            format!("{BASE}sweep:\n  description: [\"x\\e]0;owned\\a\"]\n"),
        ),
    ];
    for (what, src) in cases {
        let f = file(dir.path(), "bad.yaml", &src);
        let o = stormsim(&["validate", &f]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains("control or invisible formatting characters"),
            "{what}: {err}"
        );
        assert!(
            !has_unsafe(&err),
            "{what}: raw control character in {err:?}"
        );
        assert!(err.contains("\\u{"), "{what}: not escaped: {err}");
    }
    // Anything echoed from input is escaped: a `--set` value, a preset name,
    // a file name.
    let f = file(dir.path(), "ok.yaml", BASE);
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "layers.api.retry.jitter=\u{1b}[31mred",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !has_unsafe(&stderr(&o)) && stderr(&o).contains("\\u{1b}[31mred"),
        "{}",
        stderr(&o)
    );
    let o = stormsim(&["presets", "show", "x\u{202e}y"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!has_unsafe(&stderr(&o)), "{:?}", stderr(&o));
    let o = stormsim(&["validate", "no\u{7}such.yaml"]);
    assert!(
        !has_unsafe(&stderr(&o)) && stderr(&o).contains("no\\u{7}such.yaml"),
        "{:?}",
        stderr(&o)
    );
    let o = stormsim(&["run", "--threads", "\u{202e}2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!has_unsafe(&stderr(&o)), "{:?}", stderr(&o));
}

#[test]
fn three_independent_mistakes_give_three_messages() {
    let dir = tempfile::tempdir().unwrap();
    let src = BASE
        .replace("concurrency: 4", "concurrency: four")
        .replace("timeout: 500ms", "timeuot: 500ms")
        .replace("max_attempts: 3", "max_attempts: 0");
    let f = file(dir.path(), "three.yaml", &src);
    for cmd in ["validate", "run", "check"] {
        let o = stormsim(&[cmd, &f]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 4, "{cmd}: {err}");
        assert!(
            lines[0].contains(":7:5: layers.api.timeuot: unknown field"),
            "{err}"
        );
        assert!(
            lines[1].contains(":10:16: dependency.concurrency: expected a whole number"),
            "{err}"
        );
        assert!(
            lines[2].contains(":8:28: layers.api.retry.max_attempts: max_attempts is 0"),
            "{err}"
        );
        assert_eq!(lines[3], "3 errors");
    }
    // Variants and sweep points are judged even when the base has a
    // problem, and the base's problem is not repeated for each of them.
    let src = format!(
        "{}variants:\n  - {{ name: a, set: {{ dependency.concurrency: 0 }} }}\n  - {{ name: b, set: {{}} }}\n",
        BASE.replace("max_attempts: 3", "max_attempts: 0")
    );
    let f = file(dir.path(), "v.yaml", &src);
    let err = stderr(&stormsim(&["validate", &f]));
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(
        err.contains("variants.0.set.dependency.concurrency: in variant `a`: concurrency is 0"),
        "{err}"
    );
    // A variant's entry of the wrong type hides nothing of its other entries,
    // and neither does a bad --set.
    let src = format!(
        "{BASE}variants:\n  - {{ name: b, set: {{ layers.api.retry.max_attempts: 0, layers.api.retry.jitter: bogus, dependency.concurrency: 0 }} }}\n"
    );
    let f = file(dir.path(), "v2.yaml", &src);
    let err = stderr(&stormsim(&["validate", &f]));
    assert!(err.ends_with("3 errors\n"), "{err}");
    let f = file(dir.path(), "ok.yaml", BASE);
    let err = stderr(&stormsim(&[
        "validate",
        &f,
        "--set",
        "layers.api.retry.jitter=bogus",
        "--set",
        "dependency.concurrency=0",
    ]));
    assert!(
        err.ends_with("2 errors\n") && err.contains("concurrency is 0"),
        "{err}"
    );
}

#[test]
fn error_paths_can_be_pasted_into_set() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "{}variants:\n  - {{ name: a, set: {{ layers.api.retry.max_attempts: 0 }} }}\n",
        BASE.replace("end: 20s", "end: 5s")
    );
    let f = file(dir.path(), "p.yaml", &src);
    let err = stderr(&stormsim(&["validate", &f]));
    let paths: Vec<String> = err
        .lines()
        .filter_map(|l| l.split(": ").nth(1).map(str::to_string))
        .filter(|p| !p.contains(' '))
        .collect();
    assert_eq!(
        paths,
        [
            "dependency.incidents.0.end",
            "variants.0.set.layers.api.retry.max_attempts"
        ],
        "{err}"
    );
    // Each path, pasted into --set with a good value, fixes its error.
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "dependency.incidents.0.end=30s",
        "--set",
        "variants.0.set.layers.api.retry.max_attempts=2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Brackets appear in no message path.
    assert!(!err.contains('['), "{err}");
}

#[test]
fn set_overrides_are_validated_together_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "o.yaml", BASE);
    for sets in [
        ["duration=15s", "dependency.incidents.0.end=12s"],
        ["dependency.incidents.0.end=12s", "duration=15s"],
    ] {
        let o = stormsim(&["validate", &f, "--set", sets[0], "--set", sets[1]]);
        assert!(o.status.success(), "{sets:?}: {}", stderr(&o));
    }
    // The same inside a variant's `set`.
    let src = format!(
        "{BASE}variants:\n  - {{ name: short, set: {{ dependency.incidents.0.end: 12s, duration: 15s }} }}\n"
    );
    let f = file(dir.path(), "v.yaml", &src);
    assert!(stormsim(&["validate", &f]).status.success());
    // Every bad override is reported, not only the first.
    let f = file(dir.path(), "o2.yaml", BASE);
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "dependency.concurrency=x",
        "--set",
        "bucket=5",
        "--set",
        "nope=1",
    ]);
    let err = stderr(&o);
    assert!(err.ends_with("3 errors\n"), "{err}");
}

#[test]
fn a_set_that_every_variant_overrides_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "{BASE}variants:\n  - {{ name: none, set: {{ layers.api.retry.jitter: none }} }}\n  - {{ name: full, set: {{ layers.api.retry.jitter: full }} }}\n"
    );
    let f = file(dir.path(), "w.yaml", &src);
    let o = stormsim(&["validate", &f, "--set", "layers.0.retry.jitter=equal"]);
    assert!(o.status.success());
    assert_eq!(
        stderr(&o),
        "warning: --set layers.0.retry.jitter has no effect: every variant sets it again (none, full)\n"
    );
    // One that does change a variant is not.
    let o = stormsim(&["validate", &f, "--set", "layers.api.retry.max_attempts=2"]);
    assert_eq!(stderr(&o), "");
    // Nor one the sweep sets at every point.
    let src = format!("{BASE}sweep:\n  dependency.concurrency: [2, 8]\n");
    let f = file(dir.path(), "s.yaml", &src);
    let o = stormsim(&["validate", &f, "--set", "dependency.concurrency=3"]);
    assert!(
        stderr(&o).contains("--set dependency.concurrency has no effect: the sweep sets `dependency.concurrency` at every point"),
        "{}",
        stderr(&o)
    );
    // A mapping above the swept field: the part the sweep sets again is
    // named; the rest of the mapping does change the runs (it replaces
    // the file's `retry`), so the set as a whole is not said to do nothing.
    let src = format!("{BASE}sweep:\n  layers.api.retry.max_attempts: [1, 3]\n");
    let f = file(dir.path(), "m.yaml", &src);
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "layers.api.retry={max_attempts: 2, jitter: none}",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "warning: --set layers.api.retry: its `max_attempts` has no effect: the sweep sets `layers.api.retry.max_attempts` at every point\n"
    );
    let o = stormsim(&["validate", &f, "--set", "layers.api.retry={jitter: none}"]);
    assert_eq!(stderr(&o), "", "no part of it is swept");
}

/// In a map whose keys are paths (`tune.space`, a variant's `set`), a
/// path that goes on past an existing key whose value is a mapping names a
/// field of that mapping, as it does anywhere else in the file.
#[test]
fn fields_inside_a_path_keyed_entry_are_addressable() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "{BASE}slo: {{ success_rate: 0.5 }}\ntune:\n  space: {{ layers.api.retry.max_attempts: {{ int: [1, 6] }} }}\n  budget: 4\n"
    );
    let f = file(dir.path(), "t.yaml", &src);
    let set = "tune.space.layers.api.retry.max_attempts.int";
    let o = stormsim(&["validate", &f, "--set", &format!("{set}=[2, 3]")]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The value lands in the range, where it is checked like the mapping.
    let o = stormsim(&["validate", &f, "--set", &format!("{set}=[0, 3]")]);
    let whole = stormsim(&[
        "validate",
        &f,
        "--set",
        "tune.space.layers.api.retry.max_attempts={int: [0, 3]}",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("max_attempts is 0; expected 1 to 1000"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o), stderr(&whole));
    // A variant that sets a policy whole: one field of it.
    let src = format!(
        "{BASE}variants:\n  - {{ name: two, set: {{ layers.api.retry: {{ max_attempts: 2 }} }} }}\n"
    );
    let f = file(dir.path(), "v.yaml", &src);
    let set = "variants.two.set.layers.api.retry.max_attempts";
    let o = stormsim(&["validate", &f, "--set", &format!("{set}=5")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = stormsim(&["validate", &f, "--set", &format!("{set}=0")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("max_attempts is 0"), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("sets the same field"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sweep_keys_are_addressable() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "s.yaml", BASE);
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "sweep.dependency.concurrency=[5,6,7]",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok (3 variants"));
    let src = format!("{BASE}sweep:\n  dependency.concurrency: [2, 8]\n");
    let f = file(dir.path(), "s2.yaml", &src);
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "sweep.dependency.concurrency=[1,2,3,4]",
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ok (4 variants"));
    // A misspelt sweep path says what is wrong with it.
    let o = stormsim(&["validate", &f, "--set", "sweep.dependency.concurency=[1]"]);
    assert!(
        stderr(&o).contains("did you mean `concurrency`?"),
        "{}",
        stderr(&o)
    );
    // Suggestions come from the fields the format has, present or not.
    let o = stormsim(&["validate", &f, "--set", "swep.x=[1]"]);
    assert!(
        stderr(&o).contains("did you mean `sweep`?"),
        "{}",
        stderr(&o)
    );
    // A missing mapping the format has is created.
    let o = stormsim(&["validate", &f, "--set", "layers.api.breaker.kind=count"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn messages_use_no_rust_type_names() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "m.yaml", BASE);
    let words = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "isize", "f32",
        "f64", "Option", "bool",
    ];
    let phrases = [
        "struct ",
        "enum ",
        "floating point",
        "sequence start",
        "mapping start",
        "string scalar",
        "budget breached",
        "{ depth",
        "DuplicateKeyPolicy",
    ];
    let mut texts = Vec::new();
    for set in [
        "dependency.concurrency=99999999999",
        "dependency.concurrency=-1",
        "dependency.concurrency=1.5",
        "seed=-1",
        "layers.api.retry.jitter={proportional: x}",
        "layers.api.fan_out=true",
        "name=[1]",
        "layers.api.retry=5",
        "dependency.incidents.0={kind: down}",
        "dependency.queue.timeout_status=70000",
        "layers.api.breaker={kind: count, window_calls: 1e12}",
    ] {
        texts.push(stderr(&stormsim(&["validate", &f, "--set", set])));
    }
    for entry in std::fs::read_dir("tests/bad_inputs").unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "expected") {
            texts.push(std::fs::read_to_string(p).unwrap());
        }
    }
    for text in &texts {
        for line in text.lines() {
            // The message, without the file name before it.
            let message = line.rsplit_once(".yaml:").map_or(line, |(_, m)| m);
            for token in message.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                assert!(!words.contains(&token), "`{token}` in: {line}");
            }
            for phrase in phrases {
                assert!(!message.contains(phrase), "`{phrase}` in: {line}");
            }
        }
    }
}

#[test]
fn defaults_follow_the_users_values() {
    let dir = tempfile::tempdir().unwrap();
    for (what, src) in [
        (
            "a 10 s bucket alone",
            BASE.replace("duration: 1m", "duration: 1m\nbucket: 10s"),
        ),
        (
            "a run shorter than the default bucket",
            BASE.replace("duration: 1m", "duration: 500ms")
                .replace("    - { kind: down, start: 10s, end: 20s }\n", "")
                .replace("  incidents:\n", ""),
        ),
        ("a 2-day run", BASE.replace("duration: 1m", "duration: 2d")),
        (
            "a timeout longer than the run (it never fires)",
            BASE.replace("timeout: 500ms", "timeout: 1h"),
        ),
    ] {
        let f = file(dir.path(), "d.yaml", &src);
        let o = stormsim(&["validate", &f]);
        assert!(o.status.success(), "{what}: {}", stderr(&o));
    }
    let f = file(dir.path(), "d.yaml", BASE);
    let o = stormsim(&["validate", &f, "--set", "bucket=10s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The resolved scenario writes the derived values out.
    let out = dir.path().join("out");
    let o = stormsim(&[
        "run",
        &f,
        "-q",
        "--set",
        "bucket=10s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let resolved = std::fs::read_to_string(out.join("scenario.resolved.yaml")).unwrap();
    assert!(
        resolved.contains("bucket: 10s") && resolved.contains("recovery_window: 10s"),
        "{resolved}"
    );
    // The OCC cap follows a longer base.
    let occ = "name: occ\nduration: 1m\nocc: { clients: 10, policy: full_jitter, base: 5s }\n";
    let f = file(dir.path(), "occ.yaml", occ);
    assert!(stormsim(&["validate", &f]).status.success());
}

#[test]
fn a_grid_too_large_is_refused_before_it_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
    let list = format!("[{}]", values.join(", "));
    let src = format!(
        "{BASE}sweep:\n  dependency.concurrency: {list}\n  layers.api.retry.max_attempts: {list}\n  dependency.queue.capacity: {list}\n"
    );
    let f = file(dir.path(), "g.yaml", &src);
    // (The command's own 60 s timeout catches a grid that is built.)
    let o = stormsim(&["validate", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("sweep: the grid has 1000000000 points; expected at most 100000"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn memory_is_bounded_up_front_with_the_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "m.yaml", BASE);
    let o = stormsim(&[
        "validate",
        &f,
        "--set",
        "layers.api.breaker={kind: count, window_calls: 4294967295}",
        "--set",
        "layers.api.instances=1000",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(
            "<--set>: layers.api.breaker.window_calls: one run would need about 537.9 GB of memory"
        ),
        "{err}"
    );
    assert!(
        err.contains("1000 breaker states (layers.api.instances) × 536.9 MB each"),
        "{err}"
    );
    // A sweep within the row limit whose runs each need too much.
    let src = format!(
        "{}sweep:\n  layers.api.breaker.window_calls: [100, 2000000000]\n",
        BASE.replace(
            "retry: { max_attempts: 3 }",
            "retry: { max_attempts: 3 }\n    instances: 100\n    breaker: { kind: count }"
        )
    );
    let f = file(dir.path(), "s.yaml", &src);
    let err = stderr(&stormsim(&["validate", &f]));
    assert!(
        err.contains("(variant `window_calls=2000000000`) would need about 26.0 GB"),
        "{err}"
    );
}

/// Paths are echoed escaped, whichever message holds them: the results
/// line of `run`, a refused output that is a file, `plot` and `merge` on
/// a folder that is not one, a table read back (every line of stdout and
/// stderr goes through the same escaping).
#[test]
fn paths_with_control_characters_are_echoed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = file(d, "s.yaml", BASE);
    let out = d.join("o\u{1b}[2Jut");
    let o = stormsim(&["run", &s, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        !has_unsafe(&stdout) && stdout.contains("results: ") && stdout.contains("o\\u{1b}[2Jut"),
        "{stdout:?}"
    );
    let esc_file = file(d, "f\u{1b}[2Jile", "mine");
    for args in [
        vec!["run", &s, "--out", &esc_file],
        vec!["plot", &esc_file],
        vec!["merge", &esc_file],
        vec!["merge", out.to_str().unwrap()],
    ] {
        let o = stormsim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            !has_unsafe(&stderr(&o)) && stderr(&o).contains("\\u{1b}[2J"),
            "{args:?}: {:?}",
            stderr(&o)
        );
    }
    // A table whose cell holds an escape sequence, read back by plot.
    let ts = out.join("timeseries.csv");
    let text = std::fs::read_to_string(&ts).unwrap();
    std::fs::write(&ts, text.replacen("\nbase,0,0,", "\nbase\u{1b}[2J,0,0,", 1)).unwrap();
    let o = stormsim(&["plot", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        !has_unsafe(&stderr(&o)) && stderr(&o).contains("line 2, column 1 (variant)"),
        "{:?}",
        stderr(&o)
    );
}

/// A flag's number that is not one (a word, a sign, a decimal) is refused
/// in words: what the flag expects, never Rust's "invalid digit found in
/// string" or a range written `0..=4294967295`, and `-1` is a value, not an
/// unknown flag.
#[test]
fn flag_numbers_say_what_the_flag_expects() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(dir.path(), "base.yaml", BASE);
    for (args, want) in [
        (
            vec!["run", &f, "--replicates", "abc"],
            "'--replicates <REPLICATES>': expected a whole number from 1 to 10000",
        ),
        (
            vec!["run", &f, "--seed", "-1"],
            "'--seed <SEED>': expected a whole number from 0 to 18446744073709551615, not a negative one",
        ),
        (
            vec!["run", &f, "--max-events", "1.5"],
            "expected a whole number from 1 to 18446744073709551615 (digits only",
        ),
        (
            vec!["tune", &f, "--budget", "-1"],
            "'--budget <BUDGET>': expected a whole number from 1 to 100000, not a negative one",
        ),
        (vec!["run", &f, "--threads", "99999999999"], "--threads"),
    ] {
        let o = stormsim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: {err}");
        for leak in ["invalid digit", "..=", "number too large", "tip: to pass"] {
            assert!(!err.contains(leak), "{args:?}: {err}");
        }
    }
}

/// An alias bomb is refused at once, and does not hide the file's other
/// errors: the first field error and the bomb each get a message.
#[test]
fn an_alias_bomb_is_refused_cheaply_beside_the_other_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut src = String::from("name: bomb\nduration: 10x\na: &a [x, x, x, x, x, x, x, x, x]\n");
    for (prev, cur) in ["a", "b", "c", "d", "e", "f", "g", "h"]
        .iter()
        .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
    {
        src += &format!(
            "{cur}: &{cur} [{}]\n",
            vec![format!("*{prev}"); 9].join(", ")
        );
    }
    let f = file(dir.path(), "bomb.yaml", &src);
    let o = stormsim(&["validate", &f]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("bomb.yaml:2:11: duration: duration `10x` has an unknown unit"),
        "{err}"
    );
    assert!(
        err.contains("anchors and aliases expand to too much data"),
        "{err}"
    );
    assert!(err.contains("2 errors"), "{err}");
}

/// Messages about files in the way say what the file is and what to do:
/// a lock file that is a symbolic link, a file where a folder of `--out`
/// should be, an oversized `.stormsim` marker; a flag's bad value names
/// the flag; a number of hundreds of digits is not echoed whole.
#[test]
fn messages_say_what_is_in_the_way_and_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = file(t, "s.yaml", BASE);
    let out = |o: &Output| (o.status.code(), stderr(o));
    // The lock of `o` (FNV-1a 64 of the folder name) is a symbolic link.
    let fnv = b"o".iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let lock = t.join(format!(".stormsim-lock-{fnv:016x}"));
    std::os::unix::fs::symlink(t.join("elsewhere"), &lock).unwrap();
    let (code, e) = out(&stormsim(&[
        "run",
        &s,
        "--out",
        t.join("o").to_str().unwrap(),
        "--quiet",
    ]));
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains("is a symbolic link") && e.contains("move it") && !e.contains("remove"),
        "{e}"
    );
    assert!(!e.contains("Too many levels"), "{e}");
    assert!(!t.join("o").exists());
    // A file on the way to --out.
    file(t, "plain", "x");
    let deep = t.join("plain/sub/o");
    let (code, e) = out(&stormsim(&[
        "run",
        &s,
        "--out",
        deep.to_str().unwrap(),
        "--quiet",
    ]));
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains(&format!(
            "{} is a file, not a folder",
            t.join("plain").display()
        )),
        "{e}"
    );
    // --replicates 0 names the flag.
    let (code, e) = out(&stormsim(&[
        "run",
        &s,
        "--replicates",
        "0",
        "--out",
        t.join("r").to_str().unwrap(),
    ]));
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains("--replicates: ") && !e.contains("<--set>"),
        "{e}"
    );
    // A 300-digit number is cut.
    let big = BASE.replace(
        "max_attempts: 3",
        &format!("max_attempts: {}", "7".repeat(300)),
    );
    let b = file(t, "big.yaml", &big);
    let (code, e) = out(&stormsim(&["check", &b]));
    assert_eq!(code, Some(2), "{e}");
    assert!(
        !e.contains(&"7".repeat(30)) && e.contains(&"7".repeat(20)),
        "{e}"
    );
    // plot on a folder whose marker is oversized.
    let run = t.join("run");
    let (code, e) = out(&stormsim(&[
        "run",
        &s,
        "--out",
        run.to_str().unwrap(),
        "--quiet",
    ]));
    assert_eq!(code, Some(0), "{e}");
    let marker = std::fs::OpenOptions::new()
        .append(true)
        .open(run.join(".stormsim"))
        .unwrap();
    marker.set_len(2 << 20).unwrap();
    let (code, e) = out(&stormsim(&["plot", run.to_str().unwrap()]));
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("too large to be stormsim's marker"), "{e}");
}

/// A layer name that makes a column the tables already have
/// (`attempts_<layer>` for `after_deadline` is `attempts_after_deadline`)
/// is refused by validate, and by run and a shard before simulating
/// (exit 2, nothing written); before, run failed after the whole
/// simulation (exit 1) and shards wrote the column twice.
#[test]
fn a_layer_name_that_repeats_a_column_is_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let q = file(
        dir.path(),
        "q.yaml",
        &BASE.replace("- name: api", "- name: after_deadline"),
    );
    let out = dir.path().join("out");
    for args in [
        vec!["validate", q.as_str()],
        vec!["run", q.as_str(), "--out", out.to_str().unwrap()],
        vec![
            "run",
            q.as_str(),
            "--shard",
            "0/2",
            "--out",
            out.to_str().unwrap(),
        ],
    ] {
        let o = stormsim(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("q.yaml:6:11: layers.after_deadline.name: layer name `after_deadline` makes the column `attempts_after_deadline`"),
            "{args:?}: {e}"
        );
        assert!(!out.exists(), "{args:?}");
    }
    // Names near it are fine.
    let ok = file(
        dir.path(),
        "ok.yaml",
        &BASE.replace("- name: api", "- name: deadline"),
    );
    let o = stormsim(&["validate", &ok]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
