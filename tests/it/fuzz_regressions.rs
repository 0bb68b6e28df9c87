//! Replays the committed fuzz corpus (`fuzz/regressions/`) on stable Rust,
//! without cargo-fuzz: every input that once found new code, or once
//! crashed stormsim, goes through the fuzz targets' own body again
//! (`stormsim::fuzz`). None may panic, break an invariant, or resolve to a
//! scenario that does not load back, or draw charts that cannot be drawn;
//! the corpus must hold inputs that load and run, not only refusals.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use stormsim::fuzz::{Exercised, FuzzLimits, describe_sets, exercise, exercise_sets};

/// The fuzzers' guard rails, and the charts and report drawn too.
const CHARTED: FuzzLimits = FuzzLimits {
    max_events: 20_000,
    max_in_flight: 2_000,
    max_runs: 3,
    charts: true,
};

fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Runs `target` on every input of `dir`; returns (inputs, ran), failing
/// with the names of the inputs that panicked.
fn replay(
    dir: &str,
    target: fn(&[u8]) -> Exercised,
    describe: fn(&[u8]) -> String,
) -> (usize, usize) {
    let inputs = inputs(dir);
    let mut ran = 0;
    let mut failures = Vec::new();
    for (name, bytes) in &inputs {
        match catch_unwind(AssertUnwindSafe(|| target(bytes))) {
            Ok(Exercised::Ran(results)) => {
                assert!(
                    !results.is_empty() || bytes.is_empty(),
                    "{name}: loaded but no run"
                );
                ran += 1;
            }
            Ok(Exercised::Refused(message)) => assert!(!message.trim().is_empty(), "{name}"),
            Err(_) => failures.push(format!("{dir}/{name}: {}", describe(bytes))),
        }
    }
    assert!(
        failures.is_empty(),
        "inputs that panic:\n{}",
        failures.join("\n")
    );
    eprintln!("{dir}: {} inputs, {ran} loaded and ran", inputs.len());
    (inputs.len(), ran)
}

#[test]
fn the_scenario_corpus_replays_cleanly() {
    let (inputs, ran) = replay(
        "fuzz/regressions/scenario",
        |b| exercise(b, CHARTED),
        |b| format!("{} bytes", b.len()),
    );
    assert!(inputs >= 100, "only {inputs} inputs");
    assert!(ran >= 20, "only {ran} of {inputs} inputs load and run");
}

#[test]
fn the_value_corpus_replays_cleanly() {
    let (inputs, ran) = replay(
        "fuzz/regressions/sets",
        |b| exercise_sets(b, CHARTED),
        describe_sets,
    );
    assert!(inputs >= 100, "only {inputs} inputs");
    assert!(ran >= 20, "only {ran} of {inputs} inputs load and run");
}

/// The value fuzzer's decoding is part of the corpus's meaning: the same
/// bytes must keep spelling the same command line, or the committed corpus
/// silently tests something else. Words added to the format (the services
/// graph's `services`, `calls`, `to`, `parallel`; `from`'s `host`, `section`, `profile`, `virtual_host`; Gradient2's `rtt_tolerance`...) move the schema words
/// a byte picks: the commit that adds them updates this expectation.
#[test]
fn value_inputs_decode_as_they_did() {
    assert_eq!(
        describe_sets(b"\x00\x00\x05\x00\x00\x01\x05"),
        "stormsim run scenarios/quickstart.yaml --set 'replicates.shed_by_priority=-16'"
    );
}
