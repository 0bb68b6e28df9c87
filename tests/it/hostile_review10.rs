//! Tenth hostile review, messages: a type error says the field's real
//! range (L1), `merge` checks a shard's rows against the runner's
//! invariants (L3), control characters are escaped one way everywhere
//! (L4), an `--out` inside another run's folder is refused for its real
//! reason (L6), and `plot` on a folder being written says what is the
//! matter (L10).

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::common::files::stormsim;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small run: one layer, a dependency down for 2 s.
const SMALL: &str = "\
name: small
seed: 3
duration: 6s
bucket: 1s
replicates: 1
clients:
  arrival: { kind: poisson, rate: 50/s }
layers:
  - name: edge
    timeout: 200ms
    retry:
      max_attempts: 3
      backoff: { kind: constant, base: 10ms }
      jitter: none
      retry_on: [timeout, connection, 503]
dependency:
  concurrency: 8
  service_time: { dist: exponential, mean: 5ms }
  queue: { capacity: 64 }
  incidents:
    - { kind: down, start: 2s, end: 4s }
";

fn write_small(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("small.yaml");
    fs::write(&f, SMALL).unwrap();
    f
}

/// L1: a whole-number field whose validation is narrower than its
/// storage type says the validated range in its type errors, whatever
/// the wrong value (too large, negative, a fraction) and wherever it is
/// written (the file, `--set`, a variant, a sweep).
#[test]
fn type_errors_state_the_fields_validated_range() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write_small(tmp.path());
    for (set, want) in [
        ("layers.edge.instances=1e12", "from 1 to 1000000"),
        ("layers.edge.instances=-1", "from 1 to 1000000"),
        ("layers.edge.instances=2.5", "from 1 to 1000000"),
        ("limits.max_events=-1", "from 1 to 18446744073709551615"),
        ("limits.max_in_flight=0.5", "from 1 to 18446744073709551615"),
        (
            "layers.edge.breaker={ kind: count, window_calls: -3 }",
            "from 1 to 4294967295",
        ),
        ("dependency.overload.status=70000", "from 400 to 599"),
        ("dependency.queue.capacity=-1", "from 0 to 100000000"),
        ("variants=[{ name: v, set: { layers.edge.instances: 2.5 } }]", "from 1 to 1000000"),
        ("sweep.layers.edge.instances=[1, -2]", "from 1 to 1000000"),
    ] {
        let out = stormsim()
            .arg("validate")
            .arg(&f)
            .args(["--set", set])
            .output()
            .unwrap();
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{set}: {e}");
        assert!(
            e.contains(&format!("expected a whole number {want}")),
            "{set}: {e}"
        );
        assert!(!e.contains("at most 4294967295"), "{set}: {e}");
        assert!(!e.contains("at most 18446744073709551615"), "{set}: {e}");
    }
    // In the file, with its position.
    let bad = SMALL.replace(
        "    timeout: 200ms\n",
        "    timeout: 200ms\n    instances: 99999999999\n",
    );
    fs::write(&f, bad).unwrap();
    let out = stormsim().arg("validate").arg(&f).output().unwrap();
    let e = stderr(&out);
    assert!(
        e.contains(":11:16: layers.edge.instances: expected a whole number from 1 to 1000000"),
        "{e}"
    );
}
