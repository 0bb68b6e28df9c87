//! A bundled scenario with `--set` overrides spelled by the fuzzer's
//! bytes: every field of real scenarios set to zero, huge, negative, NaN,
//! the wrong unit or the wrong type, then checked, resolved and briefly
//! simulated (`stormsim::fuzz::exercise_sets`). Reproduce a crash with
//! `stormsim::fuzz::describe_sets` (README.md, "Fuzzing").

#![no_main]

use libfuzzer_sys::fuzz_target;
use stormsim::fuzz::{FuzzLimits, exercise_sets};

fuzz_target!(|bytes: &[u8]| {
    let _ = exercise_sets(bytes, FuzzLimits::default());
});
