//! Shards and merge (`stormsim run --shard I/N`, `--shard-from-env`,
//! `stormsim merge`): merged shards give the unsharded run byte for byte;
//! missing, duplicate and mismatched shards are refused with exit 2.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::files::{copy_dir, set_cell};
use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

const SCENARIO: &str = "scenarios/capacity-sweep.yaml";

/// Variables that choose a shard: cleared so the host's do not leak in.
const SHARD_VARS: [&str; 7] = [
    "JOB_COMPLETION_INDEX",
    "STORMSIM_SHARDS",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_STEP",
];

fn stormsim() -> Command {
    let mut c = Command::cargo_bin("stormsim").unwrap();
    for v in SHARD_VARS {
        c.env_remove(v);
    }
    c
}

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO)
}

/// `stormsim run` of the sweep with 2 replicates and extra arguments.
fn run(out: &Path, extra: &[&str]) {
    stormsim()
        .arg("run")
        .arg(scenario())
        .args(["--replicates", "2", "--quiet", "--out"])
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

fn shard(out: &Path, i: usize, n: usize) {
    run(out, &["--shard", &format!("{i}/{n}")]);
}

/// Every file under `dir`, by relative path.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn merge(dirs: &[PathBuf], out: &Path) -> assert_cmd::assert::Assert {
    stormsim()
        .arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .assert()
}

#[test]
fn merged_shards_are_byte_identical_to_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    run(&full, &[]);
    let expected = tree(&full);
    for f in [
        "timeseries.csv",
        "summary.csv",
        "summary_by_variant.csv",
        "replicas.csv",
        "scenario.resolved.yaml",
        "report.html",
        "charts/load.svg",
        "charts/load.png",
    ] {
        assert!(expected.contains_key(f), "the unsharded run wrote {f}");
    }
    for n in [1, 2, 3, 7] {
        let base = tmp.path().join(format!("n{n}"));
        // Shards given in reverse order: the merge orders them itself.
        let dirs: Vec<PathBuf> = (0..n)
            .rev()
            .map(|i| {
                let d = base.join(format!("shard-{i}"));
                shard(&d, i, n);
                d
            })
            .collect();
        for d in &dirs {
            let files = tree(d);
            assert!(!files.contains_key("report.html"), "no report in a shard");
            assert!(files.contains_key("manifest.json"));
        }
        let merged = base.join("merged");
        merge(&dirs, &merged).success();
        let got = tree(&merged);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "N = {n}: the same files"
        );
        for (path, bytes) in &expected {
            assert!(got[path] == *bytes, "N = {n}: {path} differs");
        }
    }
}

#[test]
fn shards_hold_only_their_rows_and_a_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("s");
    shard(&d, 1, 3);
    let m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["shard"], 1);
    assert_eq!(m["shards"], 3);
    assert_eq!(m["stormsim_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["items_total"], 20);
    let digest = m["scenario_digest"].as_str().unwrap();
    assert!(digest.starts_with("fnv1a64:") && digest.len() == 8 + 16);
    let items = m["items"].as_array().unwrap();
    let ks: Vec<u64> = items.iter().map(|i| i["item"].as_u64().unwrap()).collect();
    assert_eq!(ks, [1, 4, 7, 10, 13, 16, 19]);
    assert_eq!(items[1]["variant_index"], 2);
    assert_eq!(items[1]["replicate"], 0);
    assert_eq!(items[1]["variant"], "max_attempts=2 jitter=none");
    let summary = fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 1 + 7);
    let ts = fs::read_to_string(d.join("timeseries.csv")).unwrap();
    assert_eq!(ts.lines().count(), 1 + 7 * 60);
}

#[test]
fn default_folders_are_under_the_scenario_and_survive_the_merge() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..2 {
        stormsim()
            .current_dir(tmp.path())
            .arg("run")
            .arg(scenario())
            .args(["--replicates", "2", "--quiet", "--shard", &format!("{i}/2")])
            .assert()
            .success();
    }
    let root = tmp.path().join("output/capacity-sweep");
    let shards = [root.join("shard-0-of-2"), root.join("shard-1-of-2")];
    stormsim()
        .current_dir(tmp.path())
        .arg("merge")
        .args(&shards)
        .assert()
        .success()
        .stdout(contains("merged 2 shards (20 runs)"));
    assert!(root.join("report.html").is_file());
    assert!(root.join("summary_by_variant.csv").is_file());
    for s in &shards {
        assert!(s.join("manifest.json").is_file(), "{} kept", s.display());
    }
    let merged = tree(&root);
    // Merging again from the kept shards, named by their parent folder,
    // gives the same files.
    stormsim()
        .current_dir(tmp.path())
        .args(["merge", "output/capacity-sweep", "--quiet"])
        .assert()
        .success();
    assert!(tree(&root) == merged);
}

/// Three shards of the sweep, written once for the refusal cases.
fn three_shards(tmp: &Path) -> Vec<PathBuf> {
    (0..3)
        .map(|i| {
            let d = tmp.join(format!("s{i}"));
            shard(&d, i, 3);
            d
        })
        .collect()
}

fn refused(dirs: &[PathBuf], out: &Path, message: &str) {
    merge(dirs, out).code(2).stderr(contains(message));
    assert!(!out.exists(), "a refused merge writes nothing");
}

#[test]
fn merge_refuses_missing_duplicate_and_mismatched_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = three_shards(t);
    let out = t.join("merged");

    // Missing.
    refused(&s[..2], &out, "missing shard 2 of 3");
    refused(&s[1..2], &out, "missing shards 0, 2 of 3");

    // Duplicate (the same shard in two folders).
    let copy = t.join("s0-copy");
    copy_dir(&s[0], &copy);
    let dup = [s[0].clone(), s[1].clone(), s[2].clone(), copy.clone()];
    merge(&dup, &out)
        .code(2)
        .stderr(contains("shard 0 of 3 given twice"))
        .stderr(contains("s0-copy"));

    // A key written twice in a manifest (serde_json would keep the
    // last): refused with its position and path, at any depth.
    for (from, to, key) in [
        ("\"shard\": 1,", "\"shard\": 1,\n  \"shard\": 1,", "`shard`"),
        ("\"rows\":", "\"rows\": 1, \"rows\":", "`items.0.rows`"),
    ] {
        let twice = t.join("twice");
        let _ = fs::remove_dir_all(&twice);
        copy_dir(&s[1], &twice);
        let m = twice.join("manifest.json");
        let text = fs::read_to_string(&m).unwrap().replacen(from, to, 1);
        assert!(text.contains(to), "{text}");
        fs::write(&m, text).unwrap();
        merge(&[s[0].clone(), twice.clone(), s[2].clone()], &out)
            .code(2)
            .stderr(contains("manifest.json:"))
            .stderr(contains(format!("the key {key} appears twice")));
        assert!(!out.exists());
    }

    // Another scenario (another seed).
    let other = t.join("other-seed");
    run(&other, &["--shard", "2/3", "--seed", "12"]);
    merge(&[s[0].clone(), s[1].clone(), other.clone()], &out)
        .code(2)
        .stderr(contains("different scenarios"))
        .stderr(contains("other-seed"));

    // Another version.
    let old = t.join("old-version");
    copy_dir(&s[2], &old);
    let m = old.join("manifest.json");
    let text = fs::read_to_string(&m).unwrap().replace(
        &format!("\"stormsim_version\": \"{}\"", env!("CARGO_PKG_VERSION")),
        "\"stormsim_version\": \"0.0.1\"",
    );
    assert!(text.contains("0.0.1"));
    fs::write(&m, text).unwrap();
    merge(&[s[0].clone(), s[1].clone(), old.clone()], &out)
        .code(2)
        .stderr(contains("different stormsim versions"))
        .stderr(contains("0.0.1 in"))
        .stderr(contains("old-version"));
    refused(
        std::slice::from_ref(&old),
        &out,
        "written by stormsim 0.0.1",
    );

    // Another number of shards.
    let of2 = t.join("one-of-two");
    shard(&of2, 1, 2);
    merge(
        &[s[0].clone(), s[1].clone(), s[2].clone(), of2.clone()],
        &out,
    )
    .code(2)
    .stderr(contains("different numbers of shards"))
    .stderr(contains("one-of-two"));

    // A folder that is not a shard, and a shard whose tables were changed.
    refused(&[t.join("nowhere")], &out, "nowhere: no such folder");
    let edited = t.join("edited");
    copy_dir(&s[1], &edited);
    fs::write(edited.join("scenario.resolved.yaml"), "name: x\n").unwrap();
    refused(
        &[s[0].clone(), edited, s[2].clone()],
        &out,
        "does not match the digest",
    );

    // And the complete set merges.
    merge(&s, &out).success();
}

#[test]
fn bad_shard_arguments_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x");
    for bad in ["3/3", "1", "a/2", "0/0"] {
        stormsim()
            .arg("run")
            .arg(scenario())
            .args(["--quiet", "--shard", bad, "--out"])
            .arg(&out)
            .assert()
            .code(2);
    }
    assert!(!out.exists());
    // More shards than `merge` takes (its bound on a manifest's `shards`):
    // refused by `run` too, from the flag or the environment, before
    // simulating, rather than written and refused by the merge.
    let too_many =
        "more than `stormsim merge` takes (at most 2000000, the most runs a run can have)";
    for bad in [
        "5/18446744073709551615",
        "0/2000001",
        "5/99999999999999999999999",
    ] {
        stormsim()
            .arg("run")
            .arg(scenario())
            .args(["--quiet", "--shard", bad, "--out"])
            .arg(&out)
            .assert()
            .code(2)
            .stderr(contains(too_many));
    }
    from_env(
        &out,
        &[("JOB_COMPLETION_INDEX", "0")],
        &["--shard-count", "2000001"],
    )
    .code(2)
    .stderr(contains(too_many));
    from_env(
        &out,
        &[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "4000000"),
        ],
        &[],
    )
    .code(2)
    .stderr(contains(too_many));
    assert!(!out.exists());
    // The bound itself is a shard count `run` takes.
    stormsim()
        .arg("run")
        .arg(scenario())
        .args(["--quiet", "--shard", "0/2000000", "--out"])
        .arg(&out)
        .assert()
        .success();
}

/// Environment variables and extra arguments of a case.
type Vars = &'static [(&'static str, &'static str)];
type Args = &'static [&'static str];

fn from_env(out: &Path, vars: &[(&str, &str)], extra: &[&str]) -> assert_cmd::assert::Assert {
    let mut c = stormsim();
    for (k, v) in vars {
        c.env(k, v);
    }
    c.arg("run")
        .arg(scenario())
        .args(["--replicates", "2", "--quiet", "--shard-from-env", "--out"])
        .arg(out)
        .args(extra)
        .assert()
}

#[test]
fn shard_from_kubernetes_and_slurm_environments() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let reference = t.join("ref");
    shard(&reference, 2, 3);
    let expected = tree(&reference);

    let cases: [(&str, Vars, Args); 5] = [
        (
            "k8s-flag",
            &[("JOB_COMPLETION_INDEX", "2")],
            &["--shard-count", "3"],
        ),
        (
            "k8s-env",
            &[("JOB_COMPLETION_INDEX", "2"), ("STORMSIM_SHARDS", "3")],
            &[],
        ),
        (
            "slurm",
            &[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_MAX", "2"),
            ],
            &[],
        ),
        (
            "slurm-from-1",
            &[
                ("SLURM_ARRAY_TASK_ID", "3"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_MAX", "3"),
            ],
            &[],
        ),
        (
            "slurm-step",
            &[
                ("SLURM_ARRAY_TASK_ID", "14"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
                ("SLURM_ARRAY_TASK_MIN", "10"),
                ("SLURM_ARRAY_TASK_STEP", "2"),
            ],
            &[],
        ),
    ];
    for (name, vars, extra) in cases {
        let out = t.join(name);
        from_env(&out, vars, extra).success();
        assert!(
            tree(&out) == expected,
            "{name}: the same folder as --shard 2/3"
        );
    }

    let errors: [(Vars, Args, &str); 7] = [
        (&[], &[], "no shard in the environment"),
        (
            &[("JOB_COMPLETION_INDEX", "1")],
            &[],
            "--shard-count N or set STORMSIM_SHARDS",
        ),
        (
            &[("JOB_COMPLETION_INDEX", "3")],
            &["--shard-count", "3"],
            "out of range",
        ),
        (
            &[("JOB_COMPLETION_INDEX", "1"), ("STORMSIM_SHARDS", "4")],
            &["--shard-count", "3"],
            "disagree",
        ),
        (
            &[("SLURM_ARRAY_TASK_ID", "1")],
            &[],
            "SLURM_ARRAY_TASK_COUNT is not",
        ),
        (
            &[
                ("SLURM_ARRAY_TASK_ID", "0"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
                ("SLURM_ARRAY_TASK_MIN", "1"),
            ],
            &[],
            "is not in the array",
        ),
        (
            &[
                ("JOB_COMPLETION_INDEX", "0"),
                ("SLURM_ARRAY_TASK_ID", "0"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ],
            &["--shard-count", "3"],
            "both JOB_COMPLETION_INDEX",
        ),
    ];
    for (i, (vars, extra, message)) in errors.into_iter().enumerate() {
        let out = t.join(format!("bad-{i}"));
        from_env(&out, vars, extra)
            .code(2)
            .stderr(contains(message));
        assert!(!out.exists());
    }

    // --shard-count belongs to --shard-from-env; --shard and it exclude
    // each other.
    stormsim()
        .arg("run")
        .arg(scenario())
        .args(["--shard", "0/2", "--shard-from-env"])
        .assert()
        .code(2);
    stormsim()
        .arg("run")
        .arg(scenario())
        .args(["--shard-count", "2"])
        .assert()
        .code(2);
}

/// Variants with different layers: a shard's per-layer columns are those
/// of the whole run, in the whole run's order, not only of its variants.
const LAYERED: &str = r#"
name: layered
seed: 7
duration: 20s
bucket: 1s
replicates: 2
clients:
  arrival: { kind: poisson, rate: 200/s }
  deadline: 5s
layers:
  - name: client
    timeout: 500ms
    retry:
      max_attempts: 4
      backoff: { kind: exponential, base: 50ms, multiplier: 2, cap: 1s }
      jitter: full
      retry_on: [timeout, connection, 503]
dependency:
  concurrency: 8
  service_time: { dist: exponential, mean: 20ms }
  queue: { capacity: 64 }
  incidents:
    - { kind: down, start: 5s, end: 10s }
variants:
  - { name: direct, set: { layers: [] } }
  - { name: with-client, set: {} }
  - name: two-layers
    set:
      layers: [ { name: edge, timeout: 2s }, { name: client, timeout: 1s } ]
"#;

#[test]
fn shards_of_variants_with_different_layers_merge_byte_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("layered.yaml");
    fs::write(&file, LAYERED).unwrap();
    let run = |out: &Path, extra: &[&str]| {
        stormsim()
            .arg("run")
            .arg(&file)
            .args(["--quiet", "--out"])
            .arg(out)
            .args(extra)
            .assert()
            .success();
    };
    let full = tmp.path().join("full");
    run(&full, &[]);
    // Shard 0 of 5 holds items 0 (direct) and 5 (two-layers): no variant
    // of its own lists `client` first, the whole run does.
    let dirs: Vec<PathBuf> = (0..5)
        .map(|i| {
            let d = tmp.path().join(format!("s{i}"));
            run(&d, &["--shard", &format!("{i}/5")]);
            d
        })
        .collect();
    let header = |d: &Path| {
        fs::read_to_string(d.join("summary.csv"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(header(&dirs[0]), header(&full));
    let merged = tmp.path().join("merged");
    merge(&dirs, &merged).success();
    assert!(tree(&merged) == tree(&full));
}

/// Rewrites one field of a shard folder's manifest.
fn tamper(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut m);
    fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

/// Every file and folder under `dir`, by relative path (to show that a
/// refused merge wrote nothing anywhere).
fn all_paths(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A manifest is untrusted input: a scenario name that would lead outside
/// `output/` (`../../x`, an absolute path, an empty name, a control
/// character), an absurd size, a field of the wrong type or an unknown one
/// are refused with the file and field named, before anything is written
/// or allocated.
#[test]
fn tampered_manifests_are_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    // The merges run two folders down, so `../../x` would land in `tmp`.
    let cwd = tmp.path().join("a/b");
    fs::create_dir_all(&cwd).unwrap();
    let good = tmp.path().join("good");
    shard(&good, 0, 1);
    let escape = tmp.path().join("x");
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        (
            "scenario",
            "../../x".into(),
            "scenario: \"../../x\" is not a scenario name",
        ),
        (
            "scenario",
            escape.display().to_string().into(),
            "is not a scenario name",
        ),
        ("scenario", "".into(), "is not a scenario name"),
        (
            "scenario",
            "a\u{1b}[2Jb".into(),
            "scenario: `a\\u{1b}[2Jb` holds control",
        ),
        (
            "items_total",
            1_000_000_000_000_000u64.into(),
            "items_total: expected a whole number from 1 to 2000000",
        ),
        (
            "shards",
            1_000_000_000_000u64.into(),
            "shards: expected a whole number from 1 to 2000000",
        ),
        (
            "replicates",
            "two".into(),
            "replicates: expected a whole number",
        ),
        ("extra", 1.into(), "extra: unknown field `extra`"),
    ];
    for (field, value, message) in cases {
        let bad = tmp.path().join(format!("bad-{field}"));
        let _ = fs::remove_dir_all(&bad);
        copy_dir(&good, &bad);
        tamper(&bad, |m| m[field] = value.clone());
        let before = all_paths(tmp.path());
        stormsim()
            .current_dir(&cwd)
            .arg("merge")
            .arg(&bad)
            .assert()
            .code(2)
            .stderr(
                predicates::str::is_match(format!(
                    "{}:[0-9]+:[0-9]+: ",
                    regex_escape(&bad.join("manifest.json").display().to_string())
                ))
                .unwrap(),
            )
            .stderr(contains(message));
        assert_eq!(all_paths(tmp.path()), before, "{field}: nothing written");
        assert!(!escape.exists());
    }
    // A name that is valid but not the scenario's is refused too.
    let renamed = tmp.path().join("renamed");
    copy_dir(&good, &renamed);
    tamper(&renamed, |m| m["scenario"] = "other".into());
    stormsim()
        .current_dir(&cwd)
        .arg("merge")
        .arg(&renamed)
        .assert()
        .code(2)
        .stderr(contains("names the scenario `other`"));
    assert!(!cwd.join("output").exists());
}

/// The tables are checked against the manifests: a shard whose
/// timeseries.csv was cut (to its header, or by one row), or whose
/// manifest claims other row counts, is refused naming the file.
#[test]
fn cut_or_inconsistent_tables_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = [t.join("s0"), t.join("s1")];
    shard(&s[0], 0, 2);
    shard(&s[1], 1, 2);
    let out = t.join("merged");

    let cut = t.join("cut");
    copy_dir(&s[1], &cut);
    let ts = fs::read_to_string(cut.join("timeseries.csv")).unwrap();
    let header = ts.lines().next().unwrap();
    fs::write(cut.join("timeseries.csv"), format!("{header}\n")).unwrap();
    refused(
        &[s[0].clone(), cut.clone()],
        &out,
        &format!(
            "{}: line 2: the table ends before the rows of the run of variant",
            cut.join("timeseries.csv").display()
        ),
    );

    let lines: Vec<&str> = ts.lines().collect();
    fs::write(
        cut.join("timeseries.csv"),
        lines[..lines.len() - 1].join("\n") + "\n",
    )
    .unwrap();
    refused(
        &[s[0].clone(), cut.clone()],
        &out,
        "replicate 1 has 59 rows, but its scenario gives it 60 buckets",
    );

    // A manifest whose row counts agree with a cut table: the scenario
    // says how many rows every run has.
    tamper(&cut, |m| m["items"][9]["rows"] = 59.into());
    refused(
        &[s[0].clone(), cut.clone()],
        &out,
        "has 59 rows of timeseries.csv in the manifest, but the scenario gives every run 60",
    );

    // A summary row gone.
    let short = t.join("short");
    copy_dir(&s[0], &short);
    let summary = fs::read_to_string(short.join("summary.csv")).unwrap();
    let lines: Vec<&str> = summary.lines().collect();
    fs::write(
        short.join("summary.csv"),
        lines[..lines.len() - 1].join("\n") + "\n",
    )
    .unwrap();
    refused(
        &[short, s[1].clone()],
        &out,
        "summary.csv: line 11: the table ends before the rows of the run of variant",
    );
    merge(&s, &out).success();
}

/// `merge --out` may not be, lie inside or hold (other than as a shard
/// folder directly inside it, which is carried over) one of the shards.
#[test]
fn merge_output_that_is_an_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let group = t.join("runs/sweep");
    let s = [group.join("shard-0-of-2"), group.join("shard-1-of-2")];
    shard(&s[0], 0, 2);
    shard(&s[1], 1, 2);
    let before = tree(t);
    for (out, relation) in [
        (s[0].clone(), "is the input"),
        (s[1].join("merged"), "lies inside the input"),
        (t.join("runs"), "holds the input"),
        (t.to_path_buf(), "holds the input"),
    ] {
        merge(&s, &out).code(2).stderr(contains(format!(
            "the output folder {} {relation}",
            out.display()
        )));
        // Even with --force.
        stormsim()
            .arg("merge")
            .args(&s)
            .arg("--out")
            .arg(&out)
            .arg("--force")
            .assert()
            .code(2);
        assert!(tree(t) == before, "{}: nothing changed", out.display());
    }
    // The folder holding the shards directly is fine: they are kept.
    merge(&s, &group).success();
    for d in &s {
        assert!(d.join("manifest.json").is_file());
    }
    assert!(group.join("report.html").is_file());
}

/// `path` as a regular expression matching it literally.
fn regex_escape(path: &str) -> String {
    path.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// The rows of every table are checked as `plot` checks a run's, and
/// `summary.csv` against `summary.exact.csv`: cells that are not numbers,
/// extra fields, rows out of order, a swept value or a seed changed, a
/// summary cell that is not its exact cell rounded (a NaN that the merged
/// summary would show beside a number in `summary_by_variant.csv`), all
/// refused naming the shard's file, line and column.
#[test]
fn tampered_table_contents_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = [t.join("s0"), t.join("s1")];
    shard(&s[0], 0, 2);
    shard(&s[1], 1, 2);
    let out = t.join("merged");
    type Damage = Box<dyn Fn(&Path)>;
    let cases: Vec<(Damage, &str)> = vec![
        (
            Box::new(|d| set_cell(&d.join("timeseries.csv"), 2, "goodput", "banana")),
            "timeseries.csv: line 3, column 18 (goodput): expected a number",
        ),
        (
            Box::new(|d| set_cell(&d.join("calls.csv"), 1, "attempts", "1e9")),
            "calls.csv: line 2, column 7 (attempts): expected a number",
        ),
        (
            Box::new(|d| {
                let p = d.join("timeseries.csv");
                let mut lines: Vec<String> = fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect();
                lines[2].push_str(",extra");
                fs::write(&p, lines.join("\n") + "\n").unwrap();
            }),
            "timeseries.csv: line 3: 54 fields, but the header has 53 columns",
        ),
        (
            Box::new(|d| {
                let p = d.join("timeseries.csv");
                let mut lines: Vec<String> = fs::read_to_string(&p)
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect();
                lines.swap(5, 6);
                fs::write(&p, lines.join("\n") + "\n").unwrap();
            }),
            "timeseries.csv: line 6, column 3 (t_s): row 5 of the run",
        ),
        (
            Box::new(|d| {
                set_cell(
                    &d.join("services.csv"),
                    1,
                    "sweep.layers.api.retry.max_attempts",
                    "9",
                )
            }),
            "swept to `",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "success_rate", "NaN")),
            "summary.csv: line 2, column 7 (success_rate): expected a number",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "success_rate", "0.5")),
            "summary.csv: line 2, column 7 (success_rate): `0.5`, but summary.exact.csv holds",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 2, "seed", "42")),
            "summary.csv: line 3, column 3 (seed): the run of variant",
        ),
        // Numbers out of the range stormsim writes: negative counts,
        // absurd figures, fractions above 1, counts that do not add up.
        (
            Box::new(|d| set_cell(&d.join("timeseries.csv"), 2, "offered", "-5")),
            "timeseries.csv: line 3, column 4 (offered): expected a number of 0 or more",
        ),
        (
            Box::new(|d| {
                set_cell(
                    &d.join("calls.csv"),
                    1,
                    "attempts",
                    "9999999999999999999999",
                )
            }),
            "calls.csv: line 2, column 7 (attempts): expected a number up to 10^15",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "success_rate", "1.5")),
            "summary.csv: line 2, column 7 (success_rate): expected a number from 0 to 1",
        ),
        (
            Box::new(|d| set_cell(&d.join("replicas.csv"), 1, "attempts", "-0.25")),
            "replicas.csv: line 2, column 5 (attempts): expected a number of 0 or more",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "succeeded", "3")),
            "summary.csv: line 2, column 4 (logical_requests): ",
        ),
        (
            Box::new(|d| set_cell(&d.join("summary.csv"), 1, "failed", "0.5")),
            "summary.csv: line 2, column 6 (failed): expected a whole number of requests",
        ),
    ];
    for (i, (damage, message)) in cases.iter().enumerate() {
        let bad = t.join(format!("bad{i}"));
        copy_dir(&s[1], &bad);
        damage(&bad);
        let a = merge(&[s[0].clone(), bad.clone()], &out).code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert!(
            err.contains(message) && err.contains(&bad.display().to_string()),
            "case {i}: expected {message:?} in {err}"
        );
        assert!(!out.exists(), "case {i}: a refused merge writes nothing");
    }
    merge(&s, &out).success();
}

/// Runs stopped by a guard rail in their shards: the merge writes the
/// results (with the `aborted` column) but says which variants stopped
/// early and exits 1, as `run` does.
#[test]
fn a_merge_of_runs_stopped_by_a_guard_rail_fails_like_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let s = [t.join("s0"), t.join("s1")];
    for (i, d) in s.iter().enumerate() {
        stormsim()
            .arg("run")
            .arg(scenario())
            .args([
                "--quiet",
                "--max-events",
                "20000",
                "--shard",
                &format!("{i}/2"),
                "--out",
            ])
            .arg(d)
            .assert()
            .code(1)
            .stderr(contains("stopped after 20000 events (limits.max_events)"));
    }
    let out = t.join("merged");
    let a = merge(&s, &out).code(1);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("error: variant max_attempts=1 jitter=none: stopped after 20000 events (limits.max_events); raise it in the scenario or with --max-events"),
        "{err}"
    );
    assert!(
        err.contains("error: 50 of 50 runs hit a guard rail and stopped early"),
        "{err}"
    );
    assert!(out.join("summary.csv").is_file(), "the results are written");
}

/// What is wrong with `merge`'s inputs is named: a device, a file, a
/// folder that does not exist or holds no shard, a manifest that is a
/// FIFO inside a folder of shards (it used to be skipped, and the shard
/// reported missing), and JSON errors with their line and column.
#[cfg(unix)]
#[test]
fn merge_names_what_is_wrong_with_its_inputs() {
    use predicates::Predicate;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let out = t.join("merged");
    fs::write(t.join("afile"), "x").unwrap();
    fs::create_dir(t.join("empty")).unwrap();
    for (input, message) in [
        (
            PathBuf::from("/dev/zero"),
            "/dev/zero is a character device, not a shard folder",
        ),
        (t.join("afile"), "afile is a file, not a shard folder"),
        (t.join("nowhere"), "nowhere: no such folder"),
        (
            t.join("empty"),
            "empty is not a shard folder: it has no manifest.json, and holds no shard folder",
        ),
    ] {
        refused(&[input], &out, message);
    }
    let group = t.join("group");
    shard(&group.join("s0"), 0, 2);
    shard(&group.join("s1"), 1, 2);
    let manifest = group.join("s0/manifest.json");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::remove_file(&manifest).unwrap();
    let ok = std::process::Command::new("mkfifo")
        .arg(&manifest)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    refused(
        std::slice::from_ref(&group),
        &out,
        &format!("{}: is a FIFO", manifest.display()),
    );
    fs::remove_file(&manifest).unwrap();
    fs::write(&manifest, &text[..text.len() / 2]).unwrap();
    refused(
        std::slice::from_ref(&group),
        &out,
        &format!("{}:", manifest.display()),
    );
    let a = merge(std::slice::from_ref(&group), &out).code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        predicates::str::is_match(format!(
            "{}:[0-9]+:[0-9]+: not a valid shard manifest: the file ends before its JSON does \\(was it cut short\\?\\)",
            regex_escape(&manifest.display().to_string())
        ))
        .unwrap()
        .eval(&err),
        "{err}"
    );
    // A field refused: the line and column of its value.
    let shards_line = text.lines().position(|l| l.contains("\"shards\"")).unwrap() + 1;
    fs::write(
        &manifest,
        text.replacen("\"shards\": 2", "\"shards\": \"two\"", 1),
    )
    .unwrap();
    refused(
        std::slice::from_ref(&group),
        &out,
        &format!(
            "{}:{shards_line}:13: shards: expected a whole number",
            manifest.display()
        ),
    );
}

/// Priority classes in two of three variants (the third's runs have no
/// class rows), a shed threshold on the api.
const CLASSES: &str = "name: classes-shards
seed: 3
duration: 6s
bucket: 1s
replicates: 2
clients:
  arrival: { kind: poisson, rate: 400/s }
  deadline: 2s
  classes:
    - { name: critical, share: 0.3 }
    - { name: background, share: 0.7 }
  calls:
    to: api
    timeout: 500ms
    retry: { max_attempts: 2 }
services:
  - name: api
    concurrency: 4
    queue: { capacity: 40 }
    service_time: { dist: exponential, mean: 10ms }
    shed_by_priority: { background: 5 }
variants:
  - { name: shed, set: {} }
  - { name: no-classes, set: { clients.classes: null, services.api.shed_by_priority: null } }
  - { name: no-shed, set: { services.api.shed_by_priority: null } }
";

#[test]
fn classes_go_through_shards_and_merge_byte_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("classes.yaml");
    fs::write(&file, CLASSES).unwrap();
    let run = |out: &Path, extra: &[&str]| {
        stormsim()
            .arg("run")
            .arg(&file)
            .args(["--quiet", "--out"])
            .arg(out)
            .args(extra)
            .assert()
            .success();
    };
    let full = tmp.path().join("full");
    run(&full, &[]);
    let expected = tree(&full);
    let classes = String::from_utf8(expected["classes.csv"].clone()).unwrap();
    // Two classes × two replicates × the two variants with classes.
    assert_eq!(classes.lines().count(), 1 + 8, "{classes}");
    assert!(!classes.contains("no-classes"), "{classes}");
    let report = String::from_utf8(expected["report.html"].clone()).unwrap();
    assert!(report.contains("<h2 id=\"classes\">Priority classes</h2>"));
    for n in [2, 3, 6] {
        let base = tmp.path().join(format!("n{n}"));
        let dirs: Vec<PathBuf> = (0..n)
            .map(|i| {
                let d = base.join(format!("shard-{i}"));
                run(&d, &["--shard", &format!("{i}/{n}")]);
                d
            })
            .collect();
        // Each shard has classes.csv, with its own runs' rows only (the
        // header alone in a shard of `no-classes` runs).
        let rows: usize = dirs
            .iter()
            .map(|d| {
                fs::read_to_string(d.join("classes.csv"))
                    .unwrap()
                    .lines()
                    .count()
                    - 1
            })
            .sum();
        assert_eq!(rows, 8, "N = {n}");
        let merged = base.join("merged");
        merge(&dirs, &merged).success();
        let got = tree(&merged);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "N = {n}: the same files"
        );
        for (path, bytes) in &expected {
            assert!(got[path] == *bytes, "N = {n}: {path} differs");
        }
    }
    // A shard whose classes.csv lost a row is refused, nothing written.
    let dirs: Vec<PathBuf> = (0..2)
        .map(|i| tmp.path().join("n2").join(format!("shard-{i}")))
        .collect();
    let path = dirs[0].join("classes.csv");
    let text = fs::read_to_string(&path).unwrap();
    let cut: Vec<&str> = text.lines().collect();
    fs::write(&path, format!("{}\n", cut[..cut.len() - 1].join("\n"))).unwrap();
    let out = tmp.path().join("cut");
    merge(&dirs, &out)
        .code(2)
        .stderr(contains("classes.csv").and(contains("the file was cut or changed")));
    assert!(!out.exists());
}

/// About one run in two of this scenario has no request at all (a 1 s run
/// at 0.7 requests/s): its ratios are empty, and a variant's mean is over
/// the runs that have one.
const SOMETIMES_EMPTY: &str = "name: sometimes-empty\nseed: 3\nduration: 1s\nbucket: 1s\nreplicates: 8\n\
clients: { arrival: { kind: poisson, rate: 0.7/s } }\n\
layers: [ { name: api } ]\n\
dependency: { concurrency: 4, service_time: { dist: constant, value: 1ms } }\n";

/// Figures some replicates have no value for (ratios of nothing) are
/// averaged over those that have one, in the unsharded run and in the
/// merge alike: merged shards give the unsharded folder byte for byte.
#[test]
fn ratios_of_nothing_merge_as_the_unsharded_run_aggregates_them() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("sometimes.yaml");
    fs::write(&file, SOMETIMES_EMPTY).unwrap();
    let run = |out: &Path, extra: &[&str]| {
        stormsim()
            .arg("run")
            .arg(&file)
            .args(["--out"])
            .arg(out)
            .args(extra)
            .assert()
            .success()
    };
    let full = tmp.path().join("full");
    let console = String::from_utf8(run(&full, &[]).get_output().stdout.clone()).unwrap();
    let read = |d: &Path, f: &str| fs::read_to_string(d.join(f)).unwrap();
    let column = |table: &str, name: &str| -> Vec<String> {
        let mut lines = table.lines();
        let i = lines
            .next()
            .unwrap()
            .split(',')
            .position(|c| c == name)
            .unwrap();
        lines
            .map(|l| l.split(',').nth(i).unwrap().to_string())
            .collect()
    };
    let rates = column(&read(&full, "summary.csv"), "success_rate");
    let values: Vec<f64> = rates.iter().filter_map(|r| r.parse().ok()).collect();
    let empty = rates.iter().filter(|r| r.is_empty()).count();
    assert!(
        empty > 0 && !values.is_empty(),
        "some runs without a request, some with: {rates:?}"
    );
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let by_variant = read(&full, "summary_by_variant.csv");
    let shown: f64 = column(&by_variant, "success_rate_mean")[0].parse().unwrap();
    assert!((shown - mean).abs() < 1e-6, "{shown} vs {mean}");
    assert!(
        console.contains(&format!(
            "note: base: success_rate has no value in {empty} of 8 runs (no request ended); its mean is over the"
        )),
        "{console}"
    );
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| {
            let d = tmp.path().join(format!("s{i}"));
            run(&d, &["--quiet", "--shard", &format!("{i}/3")]);
            d
        })
        .collect();
    let merged = tmp.path().join("merged");
    merge(&dirs, &merged).success();
    assert!(tree(&merged) == tree(&full));
}
