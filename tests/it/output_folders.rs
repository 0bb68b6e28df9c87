//! Output folders: stormsim replaces only what it wrote, refuses an output
//! that is one of its inputs, a file, a symbolic link, a name the file
//! system cannot take or a folder another stormsim is writing, and
//! decides all of it before simulating (exit 2, nothing written).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::str::contains;

const BIN: &str = env!("CARGO_BIN_EXE_stormsim");

fn stormsim() -> Command {
    Command::cargo_bin("stormsim").unwrap()
}

fn quickstart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml")
}

/// Every file and folder under `dir` with the bytes of the files.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                out.push((rel + "/", Vec::new()));
                walk(root, &p, out);
            } else if meta.is_file() {
                out.push((rel, fs::read(&p).unwrap()));
            } else {
                out.push((rel, b"(special)".to_vec()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// `stormsim run` with `--verbose`: a refusal made before simulating
/// prints no "run 1/N" line.
fn run_verbose(cwd: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    stormsim()
        .current_dir(cwd)
        .env("CI", "1")
        .arg("run")
        .args(args)
        .arg("--verbose")
        .assert()
}

/// `stormsim run --quiet`.
fn run_quiet(cwd: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    stormsim()
        .current_dir(cwd)
        .arg("run")
        .args(args)
        .arg("--quiet")
        .assert()
}

fn refused_before_simulating(a: assert_cmd::assert::Assert, message: &str) {
    let a = a.code(2).stderr(contains(message));
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(!stderr.contains("run 1/"), "simulated first: {stderr}");
}

#[test]
fn a_folder_stormsim_did_not_write_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let mine = t.join("mine");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("notes.txt"), "precious").unwrap();
    fs::create_dir(mine.join("data")).unwrap();
    fs::write(mine.join("data/x.csv"), "1,2\n").unwrap();
    let before = tree(t);
    let q = quickstart();
    let q = q.to_str().unwrap();
    refused_before_simulating(
        run_verbose(t, &[q, "--out", "mine"]),
        "mine already exists and holds files stormsim did not write (\"data\", \"notes.txt\")",
    );
    run_verbose(t, &[q, "--out", "mine"]).stderr(contains("--force"));
    assert!(tree(t) == before, "nothing changed");

    // A folder stormsim wrote is replaced, but not once the user has added
    // a file to it.
    let ours = t.join("ours");
    run_quiet(t, &[q, "--out", "ours"]).success();
    assert!(ours.join(".stormsim").is_file());
    run_quiet(t, &[q, "--out", "ours"]).success();
    fs::write(ours.join("analysis.ipynb"), "{}").unwrap();
    refused_before_simulating(run_verbose(t, &[q, "--out", "ours"]), "\"analysis.ipynb\"");
    assert_eq!(
        fs::read_to_string(ours.join("analysis.ipynb")).unwrap(),
        "{}"
    );

    // The way out: --force replaces it.
    run_quiet(t, &[q, "--out", "mine", "--force"]).success();
    assert!(!mine.join("notes.txt").exists());
    assert!(mine.join("summary.csv").is_file());
}

#[test]
fn an_output_that_holds_the_scenario_is_refused_even_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let dir = t.join("work");
    fs::create_dir(&dir).unwrap();
    fs::copy(quickstart(), dir.join("s.yaml")).unwrap();
    let before = tree(t);
    for out in ["work", ".", ".."] {
        for force in [false, true] {
            let mut args = vec!["work/s.yaml", "--out", out];
            if force {
                args.push("--force");
            }
            let a = run_verbose(t, &args).code(2);
            let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
            assert!(!stderr.contains("run 1/"), "{stderr}");
            assert!(
                stderr.contains("holds the input")
                    || stderr.contains("does not name a folder")
                    || stderr.contains("current folder"),
                "{out}: {stderr}"
            );
        }
    }
    // The scenario's own folder, named through another path.
    let a = run_verbose(&dir, &["s.yaml", "--out", "../work", "--force"]).code(2);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(stderr.contains("current folder") || stderr.contains("holds the input"));
    assert!(tree(t) == before, "nothing changed");
}

#[cfg(unix)]
#[test]
fn files_links_and_names_too_long_are_refused_before_simulating() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let q = quickstart();
    let q = q.to_str().unwrap();
    fs::write(t.join("file"), "mine").unwrap();
    fs::create_dir(t.join("real")).unwrap();
    std::os::unix::fs::symlink(t.join("real"), t.join("link")).unwrap();
    std::os::unix::fs::symlink(t.join("nowhere"), t.join("dangling")).unwrap();
    let before = tree(t);
    refused_before_simulating(
        run_verbose(t, &[q, "--out", "file"]),
        "file exists and is not a folder",
    );
    refused_before_simulating(
        run_verbose(t, &[q, "--out", "link", "--force"]),
        "link is a symbolic link",
    );
    refused_before_simulating(
        run_verbose(t, &[q, "--out", "dangling"]),
        "dangling is a symbolic link",
    );
    refused_before_simulating(run_verbose(t, &[q, "--out", "file/inside"]), "cannot");
    let long = "n".repeat(256);
    refused_before_simulating(run_verbose(t, &[q, "--out", &long]), "too long");
    // A scenario name of 256 bytes, used as the default folder.
    let yaml = fs::read_to_string(q).unwrap();
    let yaml = yaml.replacen("name: quickstart", &format!("name: {long}"), 1);
    assert!(yaml.contains(&long));
    fs::write(t.join("long.yaml"), yaml).unwrap();
    let before_long = tree(t);
    refused_before_simulating(run_verbose(t, &["long.yaml"]), "too long");
    assert!(tree(t) == before_long, "no output/ folder left behind");
    fs::remove_file(t.join("long.yaml")).unwrap();
    assert!(tree(t) == before, "nothing changed");
    // 255 bytes is a valid name.
    let ok = "n".repeat(255);
    run_quiet(t, &[q, "--out", &ok]).success();
}

/// Two runs into one folder: the second is refused at once (exit 2) and
/// writes nothing; the first finishes normally.
#[test]
fn a_second_run_into_the_same_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/outage-recovery.yaml");
    let mut first = StdCommand::new(BIN)
        .arg("run")
        .arg(&scenario)
        .args(["--replicates", "6", "--verbose", "--out"])
        .arg(&out)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(first.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("run 1/24"), "{line}");
    // The first is simulating; the second must not wait for it.
    run_verbose(tmp.path(), &[scenario.to_str().unwrap(), "--out", "out"])
        .code(2)
        .stderr(contains("another stormsim command is writing"))
        .stderr(contains("nothing was written"));
    assert!(!out.exists());
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = first.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the first run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    assert!(out.join("summary.csv").is_file());
    let names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["out"], "no lock or work folder left");
}

/// `plot` replaces charts/ and report.html and nothing else: a user's
/// `a.csv` and `a.tmp` beside the tables survive (temporary names cannot
/// collide with them), and in a folder stormsim did not write, existing
/// charts are replaced only with --force.
#[test]
fn plot_touches_only_its_charts_and_report() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    stormsim()
        .args(["run", "--quiet", "--out"])
        .arg(&run)
        .arg(quickstart())
        .assert()
        .success();
    for (name, text) in [
        ("a.csv", "mine"),
        ("a.tmp", "mine too"),
        ("summary.tmp", "x"),
    ] {
        fs::write(run.join(name), text).unwrap();
    }
    // A file of the user's inside charts/ is not stormsim's: plot stops.
    fs::write(run.join("charts/load.tmp"), "keep!").unwrap();
    stormsim()
        .arg("plot")
        .arg(&run)
        .assert()
        .code(2)
        .stderr(contains(
            "holds \"charts/load.tmp\" that stormsim did not write",
        ));
    assert_eq!(
        fs::read_to_string(run.join("charts/load.tmp")).unwrap(),
        "keep!"
    );
    fs::remove_file(run.join("charts/load.tmp")).unwrap();
    stormsim().arg("plot").arg(&run).assert().success();
    // From inside the folder, too.
    stormsim()
        .current_dir(&run)
        .args(["plot", "."])
        .assert()
        .success();
    assert_eq!(fs::read_to_string(run.join("a.tmp")).unwrap(), "mine too");
    assert_eq!(fs::read_to_string(run.join("a.csv")).unwrap(), "mine");
    assert_eq!(fs::read_to_string(run.join("summary.tmp")).unwrap(), "x");
    // charts/ is stormsim's (listed in the marker, file by file): redrawn.
    assert!(run.join("charts/load.svg").is_file());

    // Tables copied into a folder of the user's: plot adds the charts...
    let theirs = tmp.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    for f in [
        "timeseries.csv",
        "summary.csv",
        "summary_by_variant.csv",
        "scenario.resolved.yaml",
    ] {
        fs::copy(run.join(f), theirs.join(f)).unwrap();
    }
    stormsim().arg("plot").arg(&theirs).assert().success();
    assert!(theirs.join("report.html").is_file());
    // ...and a marker that lists only them: the tables stay the user's...
    let marker = fs::read_to_string(theirs.join(".stormsim")).unwrap();
    assert!(marker.contains("file report.html"), "{marker}");
    assert!(
        !marker.contains(".csv") && !marker.contains(".yaml"),
        "{marker}"
    );
    // ...and the next plot redraws its own output, and nothing else.
    let tables = |t: &Path| ["timeseries.csv", "summary.csv"].map(|f| fs::read(t.join(f)).unwrap());
    let before = tables(&theirs);
    stormsim().arg("plot").arg(&theirs).assert().success();
    assert!(tables(&theirs) == before);
    // A run there still refuses the user's tables.
    stormsim()
        .args(["run", "--out"])
        .arg(&theirs)
        .assert()
        .code(2)
        .stderr(contains("summary.csv"))
        .stderr(contains("stormsim did not write"));
    stormsim()
        .arg("plot")
        .arg(&theirs)
        .arg("--force")
        .assert()
        .success();
    let leftovers: Vec<String> = fs::read_dir(&theirs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n != ".stormsim")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The default output folder `output/<name>` of shards is a folder of
/// shard folders only: a run or a merge there replaces it and keeps them.
#[test]
fn a_run_into_a_folder_of_shard_folders_keeps_them() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    for i in 0..2 {
        stormsim()
            .current_dir(t)
            .arg("run")
            .arg(quickstart())
            .args(["--quiet", "--shard", &format!("{i}/2")])
            .assert()
            .success();
    }
    stormsim()
        .current_dir(t)
        .arg("run")
        .arg(quickstart())
        .arg("--quiet")
        .assert()
        .success();
    let root = t.join("output/quickstart");
    assert!(root.join("shard-0-of-2/manifest.json").is_file());
    assert!(root.join("shard-1-of-2/manifest.json").is_file());
    assert!(root.join("summary.csv").is_file());
    // A shard written over them would carry them inside it, where merge
    // does not look: refused, before simulating, with the way out.
    let before = tree(&root);
    for shard in ["0/2", "1/3"] {
        refused_before_simulating(
            run_verbose(
                t,
                &[
                    q(&quickstart()),
                    "--shard",
                    shard,
                    "--out",
                    "output/quickstart",
                    "--force",
                ],
            ),
            "holds shard folders",
        );
        assert_eq!(tree(&root), before);
    }
    // Shard folders nested in one (an older stormsim put them there):
    // merge says which shards it found where, and where the others are.
    let nested = t.join("nested");
    copy_tree(&root.join("shard-0-of-2"), &nested);
    copy_tree(&root.join("shard-1-of-2"), &nested.join("s1"));
    stormsim()
        .current_dir(t)
        .args(["merge", "nested", "--out", "merged"])
        .assert()
        .code(2)
        .stderr(contains("missing shard 1 of 2"))
        .stderr(contains("found shard 0 in nested"))
        .stderr(contains("give them too: nested/s1"));
}

fn q(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Copies the files of `from` (one level of folders deep) into `to`.
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// The marker lists every file and folder stormsim wrote, with its kind:
/// a file of the user's inside `charts/` (or inside a folder of their own
/// there), or a folder put in place of a table, stops `run` and `plot`
/// (exit 2, named) and is never deleted. `--force` is the way out.
#[test]
fn files_inside_a_folder_stormsim_wrote_are_never_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let q = quickstart();
    let q = q.to_str().unwrap();
    let o = t.join("o");
    run_quiet(t, &[q, "--out", "o"]).success();
    let marker = fs::read_to_string(o.join(".stormsim")).unwrap();
    for line in ["folder charts", "file charts/load.svg", "file summary.csv"] {
        assert!(marker.lines().any(|l| l == line), "{line} in\n{marker}");
    }

    fs::write(o.join("charts/analysis.ipynb"), "{}").unwrap();
    let before = tree(t);
    stormsim()
        .arg("plot")
        .arg(&o)
        .assert()
        .code(2)
        .stderr(contains("\"charts/analysis.ipynb\""));
    refused_before_simulating(
        run_verbose(t, &[q, "--out", "o"]),
        "holds files stormsim did not write (\"charts/analysis.ipynb\")",
    );
    assert!(tree(t) == before, "nothing changed");
    fs::remove_file(o.join("charts/analysis.ipynb")).unwrap();

    fs::create_dir(o.join("charts/sub")).unwrap();
    fs::write(o.join("charts/sub/x"), "mine").unwrap();
    let before = tree(t);
    stormsim()
        .arg("plot")
        .arg(&o)
        .assert()
        .code(2)
        .stderr(contains("\"charts/sub\""));
    refused_before_simulating(run_verbose(t, &[q, "--out", "o"]), "\"charts/sub\"");
    assert!(tree(t) == before, "nothing changed");
    fs::remove_dir_all(o.join("charts/sub")).unwrap();

    // A table replaced by a folder of the user's.
    fs::remove_file(o.join("summary_by_variant.csv")).unwrap();
    fs::create_dir(o.join("summary_by_variant.csv")).unwrap();
    fs::write(o.join("summary_by_variant.csv/p.txt"), "p").unwrap();
    let before = tree(t);
    refused_before_simulating(
        run_verbose(t, &[q, "--out", "o"]),
        "(\"summary_by_variant.csv\")",
    );
    assert!(tree(t) == before, "nothing changed");
    run_quiet(t, &[q, "--out", "o", "--force"]).success();
    assert!(o.join("summary_by_variant.csv").is_file());

    // An older marker (bare names): what is inside its folders is not
    // known to be stormsim's; the message says how to go on.
    let old: String = marker
        .lines()
        .filter(|l| !l.contains('/'))
        .map(|l| {
            let l = l.strip_prefix("file ").unwrap_or(l);
            format!("{}\n", l.strip_prefix("folder ").unwrap_or(l))
        })
        .collect();
    fs::write(o.join(".stormsim"), old).unwrap();
    refused_before_simulating(run_verbose(t, &[q, "--out", "o"]), "from an older stormsim");
}

/// A symbolic link to a folder is refused however it is written (`lnk/`
/// used to pass the check, simulate, then fail replacing the link with a
/// real folder): before anything runs, exit 2, the link and its folder
/// unchanged; for `merge` too.
#[cfg(unix)]
#[test]
fn a_link_to_a_folder_is_refused_however_it_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let q = quickstart();
    let q = q.to_str().unwrap();
    fs::create_dir(t.join("real")).unwrap();
    fs::write(t.join("real/mine.txt"), "mine").unwrap();
    std::os::unix::fs::symlink(t.join("real"), t.join("lnk")).unwrap();
    stormsim()
        .current_dir(t)
        .args(["run", q, "--quiet", "--shard", "0/1", "--out", "shard"])
        .assert()
        .success();
    let before = tree(t);
    for out in ["lnk", "lnk/", "lnk/.", "lnk//", "./lnk/"] {
        for force in [false, true] {
            let mut args = vec![q, "--out", out];
            if force {
                args.push("--force");
            }
            refused_before_simulating(run_verbose(t, &args), "lnk is a symbolic link");
        }
        stormsim()
            .current_dir(t)
            .args(["merge", "shard", "--out", out])
            .assert()
            .code(2)
            .stderr(contains("lnk is a symbolic link"));
    }
    assert!(tree(t) == before, "nothing changed");
    assert!(
        fs::symlink_metadata(t.join("lnk"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// The `--out` that a refusal names as the way to replace those results
/// is one stormsim accepts: from inside the results folder (where `.`
/// would be refused as the current folder) and through a symbolic link
/// (which `--out` refuses) it names the folder itself.
#[test]
fn the_way_out_a_refusal_names_is_one_stormsim_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().canonicalize().unwrap();
    let q = quickstart();
    let q = q.to_str().unwrap();
    run_quiet(&t, &[q, "--out", "o1"]).success();
    std::os::unix::fs::symlink(t.join("o1"), t.join("l2")).unwrap();
    fs::create_dir(t.join("elsewhere")).unwrap();
    let before = tree(&t);
    for (cwd, out) in [
        (t.join("o1"), "charts"),
        (t.join("o1/charts"), "../charts/x"),
        (t.clone(), "l2/charts"),
        (t.clone(), "o1/charts"),
    ] {
        let a = run_verbose(&cwd, &[q, "--out", out]).code(2);
        let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        let way = stderr
            .rsplit_once("--out ")
            .map(|(_, w)| w.split_whitespace().next().unwrap_or(""))
            .unwrap_or_else(|| panic!("no way out in: {stderr}"));
        assert!(
            way != "." && way != "l2",
            "{out} from {}: suggests --out {way}: {stderr}",
            cwd.display()
        );
        // Run from outside the folder it names, as the message says.
        let from = if stderr.contains("run from outside") {
            t.join("elsewhere")
        } else {
            cwd.clone()
        };
        let dest = from.join(way).canonicalize().unwrap();
        assert_eq!(dest, t.join("o1"), "{out}: --out {way}");
        run_quiet(&from, &[q, "--out", way]).success();
    }
    assert_eq!(tree(&t).len(), before.len(), "only o1 was rewritten");
}

/// A configuration file a layer reads (`from.file`) is an input like the
/// scenario: `run`, a shard and `tune` refuse an output folder holding it,
/// even with `--force`, before simulating, and the file survives.
#[test]
fn a_layers_configuration_file_is_an_input_even_with_force() {
    use predicates::prelude::PredicateBooleanExt;
    let root = tempfile::tempdir().unwrap();
    let deploy = root.path().join("deploy");
    let scen = root.path().join("scen");
    fs::create_dir_all(&deploy).unwrap();
    fs::create_dir_all(&scen).unwrap();
    let config =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs/service-config.json");
    fs::copy(&config, deploy.join("service-config.json")).unwrap();
    let text = fs::read_to_string(&config).unwrap();
    let method = if text.contains("CreateOrder") {
        "orders.v1.Orders/CreateOrder"
    } else {
        panic!("the fixture names no CreateOrder method")
    };
    fs::write(
        scen.join("orders.yaml"),
        format!(
            "name: orders\nduration: 5s\nclients:\n  arrival: {{ kind: poisson, rate: 20/s }}\n\
             layers:\n  - name: api\n    from: {{ file: ../deploy/service-config.json, format: grpc-service-config, method: {method} }}\n\
             dependency:\n  concurrency: 4\n  service_time: {{ dist: constant, value: 10ms }}\n\
             tune:\n  space: {{ layers.api.retry.max_attempts: [2, 3] }}\n  budget: 2\n"
        ),
    )
    .unwrap();
    let before = tree(&deploy);
    for args in [
        vec!["run", "scen/orders.yaml", "--out", "deploy", "--force"],
        vec![
            "run",
            "scen/orders.yaml",
            "--shard",
            "0/1",
            "--out",
            "deploy",
            "--force",
        ],
        vec!["tune", "scen/orders.yaml", "--out", "deploy", "--force"],
    ] {
        stormsim()
            .current_dir(root.path())
            .args(&args)
            .assert()
            .code(2)
            .stderr(contains("the input").and(contains("service-config.json")));
        assert_eq!(tree(&deploy), before, "{args:?} touched the folder");
    }
    // `merge` knows the `from` paths only as the scenario wrote them
    // (relative to a scenario file it never sees): it refuses every folder
    // they can name, here a sibling of the scenario's folder and the
    // scenario's own folder, with the config beside the scenario.
    let beside = root.path().join("beside");
    fs::create_dir_all(&beside).unwrap();
    fs::copy(&config, beside.join("service-config.json")).unwrap();
    let own = fs::read_to_string(scen.join("orders.yaml"))
        .unwrap()
        .replace("../deploy/service-config.json", "service-config.json");
    fs::write(beside.join("orders.yaml"), own).unwrap();
    for (scenario, shard, out) in [
        ("scen/orders.yaml", "sh0", "deploy"),
        ("beside/orders.yaml", "sh1", "beside"),
    ] {
        stormsim()
            .current_dir(root.path())
            .args(["run", scenario, "--shard", "0/1", "--out", shard, "--quiet"])
            .assert()
            .code(0);
        let before = tree(&root.path().join(out));
        stormsim()
            .current_dir(root.path())
            .args(["merge", shard, "--out", out, "--force"])
            .assert()
            .code(2)
            .stderr(contains("layer `api` reads").and(contains("service-config.json")));
        assert_eq!(tree(&root.path().join(out)), before, "merge touched {out}");
    }
}

/// `stormsim` as a user that permission bits apply to: this user, or,
/// when the tests run as root (whom permission bits do not stop), the
/// user `nobody` (uid and gid 65534), so that the case is tested there
/// too. `None` (with the reason printed) only if that user cannot be
/// taken.
fn unprivileged(cwd: &Path) -> Option<impl Fn(&[&str]) -> assert_cmd::assert::Assert> {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    let probe = cwd.join(".whoami");
    fs::write(&probe, "").unwrap();
    let root = fs::metadata(&probe).unwrap().uid() == 0;
    fs::remove_file(&probe).unwrap();
    let make = move |args: &[&str]| {
        let mut c = StdCommand::new(BIN);
        c.current_dir(cwd).env("CI", "1").args(args);
        if root {
            c.uid(65534).gid(65534);
        }
        c
    };
    if root && make(&["--version"]).output().is_err() {
        eprintln!("skipped: running as root and cannot run a command as uid 65534 (no CAP_SETUID)");
        return None;
    }
    Some(move |args: &[&str]| Command::from_std(make(args)).assert())
}

/// An output folder stormsim cannot replace (read-only, a read-only
/// folder inside it) or whose parent it cannot write in is refused
/// before simulating (exit 2), naming the folder; nothing changes. As
/// root, the commands run as `nobody`, for whom the bits hold.
#[test]
#[cfg(unix)]
fn a_folder_that_cannot_be_written_is_refused_before_simulating() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let mode = |p: &Path, m: u32| fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap();
    mode(t, 0o777);
    fs::copy(quickstart(), t.join("q.yaml")).unwrap();
    mode(&t.join("q.yaml"), 0o644);
    let Some(stormsim) = unprivileged(t) else {
        return;
    };
    let run = |out: &str| stormsim(&["run", "q.yaml", "--out", out, "--verbose"]);
    run("out").success();
    let refused = |a: assert_cmd::assert::Assert, message: &str| {
        let before = tree(t);
        refused_before_simulating(a, message);
        assert!(tree(t) == before, "something changed");
    };
    // The folder itself.
    mode(&t.join("out"), 0o555);
    refused(
        run("out"),
        "cannot write out: it is read-only for this user (permission denied); nothing was written",
    );
    refused(
        stormsim(&["plot", "out"]),
        "cannot write out: it is read-only",
    );
    mode(&t.join("out"), 0o755);
    // A folder inside it, which replacing it would have to empty.
    mode(&t.join("out/charts"), 0o555);
    refused(
        run("out"),
        "cannot write out: the folder charts inside it is read-only for this user",
    );
    refused(
        stormsim(&["plot", "out"]),
        "the folder charts inside it is read-only",
    );
    mode(&t.join("out/charts"), 0o755);
    // The folder that would hold it.
    fs::create_dir(t.join("locked")).unwrap();
    mode(&t.join("locked"), 0o555);
    refused(
        run("locked/out"),
        "cannot write locked/out: the folder that holds it,",
    );
    refused(run("locked/out"), "locked, is read-only for this user");
    mode(&t.join("locked"), 0o777);
    // Writable again: the run replaces it.
    run("out").success();
    run("locked/out").success();
}

/// The work folders `.stormsim-<hash>-<pid>-<n>` beside `dir`.
fn work_folders(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".stormsim-") && !n.starts_with(".stormsim-lock-"))
        .collect();
    v.sort();
    v
}

/// A run killed outright (SIGKILL) leaves its work folder and its lock
/// behind. The next command into that folder takes the lock over, says
/// what it found, puts back what the killed one had moved aside, removes
/// the work folder, and runs; files of the user's, even beside them with
/// names like stormsim's, are left alone.
#[test]
#[cfg(unix)]
fn what_a_killed_run_left_is_cleaned_up_by_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let q = quickstart();
    let q = q.to_str().unwrap();
    run_quiet(t, &[q, "--out", "out"]).success();
    let before_kill = tree(&t.join("out"));
    // The user's: a file and a folder whose names look like stormsim's.
    fs::write(t.join(".stormsim-notes"), "mine").unwrap();
    fs::create_dir(t.join(".stormsim-1-2-3")).unwrap();
    fs::write(t.join(".stormsim-1-2-3/keep.txt"), "mine").unwrap();
    let mut child = StdCommand::new(BIN)
        .current_dir(t)
        .args([
            "run",
            q,
            "--out",
            "out",
            "--replicates",
            "2000",
            "--verbose",
        ])
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("run 1/"), "{line}");
    let pid = child.id();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left = work_folders(t);
    let work = format!("-{pid}-0");
    assert!(
        left.iter().any(|n| n.ends_with(&work)),
        "the killed run left no work folder: {left:?}"
    );
    assert!(
        fs::read_dir(t).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".stormsim-lock-")),
        "the killed run left no lock"
    );
    assert!(tree(&t.join("out")) == before_kill, "the folder changed");
    // The next run says so, cleans up and runs.
    let a = stormsim()
        .current_dir(t)
        .args(["run", q, "--out", "out"])
        .env("CI", "1")
        .assert()
        .success();
    let e = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        e.contains(&format!(
            "note: a stormsim command (process {pid}) was stopped outright while writing out (killed?); removed its work folder .stormsim-"
        )),
        "{e}"
    );
    assert_eq!(work_folders(t), [".stormsim-1-2-3", ".stormsim-notes"]);
    assert_eq!(
        fs::read_to_string(t.join(".stormsim-notes")).unwrap(),
        "mine"
    );
    assert!(t.join(".stormsim-1-2-3/keep.txt").is_file());
    assert!(t.join("out/summary.csv").is_file());

    // Killed in the middle of its swap: the old folder moved aside into
    // the work folder, the new one not yet in place. Made by hand (the
    // window is a few renames wide), with the id of a process that has
    // ended. The next command puts the old folder back first.
    let mut gone = StdCommand::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    run_quiet(t, &[q, "--out", "swap"]).success();
    let lock_and_work = |before: &[String]| -> String {
        let now = work_folders(t);
        now.into_iter()
            .find(|n| !before.contains(n))
            .unwrap_or_default()
    };
    // The work folder's name for `swap`, from a run of it killed at once.
    let mut quick = StdCommand::new(BIN)
        .current_dir(t)
        .args([
            "run",
            q,
            "--out",
            "swap",
            "--replicates",
            "2000",
            "--verbose",
        ])
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(quick.stderr.take().unwrap());
    stderr.read_line(&mut String::new()).unwrap();
    let before = vec![".stormsim-1-2-3".to_string(), ".stormsim-notes".to_string()];
    let name = lock_and_work(&before);
    quick.kill().unwrap();
    quick.wait().unwrap();
    let hash = name.split('-').nth(1).unwrap().to_string();
    fs::remove_dir_all(t.join(&name)).unwrap();
    let work = t.join(format!(".stormsim-{hash}-{dead}-0"));
    fs::create_dir_all(work.join("new/swap")).unwrap();
    fs::write(work.join("new/swap/summary.csv"), "half").unwrap();
    // As a run lists each file it stages, before it writes it.
    fs::write(work.join("written"), "summary.csv\n").unwrap();
    fs::write(t.join("swap/mine.txt"), "the user's, inside").unwrap();
    let swapped = tree(&t.join("swap"));
    fs::rename(t.join("swap"), work.join("old")).unwrap();
    // A folder the user made inside a folder of that name is not one
    // stormsim made: kept.
    stormsim()
        .current_dir(t)
        .args(["run", q, "--out", "swap"])
        .env("CI", "1")
        .assert()
        .code(2)
        .stderr(contains("after putting back"))
        .stderr(contains(
            "holds files stormsim did not write (\"mine.txt\")",
        ));
    // Put back as it was, the user's file included; the run into it is
    // refused for that file, as it would have been before.
    assert!(tree(&t.join("swap")) == swapped, "not put back as it was");
    assert!(!work.exists());
    fs::remove_file(t.join("swap/mine.txt")).unwrap();
    run_quiet(t, &[q, "--out", "swap"]).success();
    assert_eq!(work_folders(t), before);
}
