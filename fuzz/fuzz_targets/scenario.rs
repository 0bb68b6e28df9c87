//! Arbitrary bytes as a scenario file: loaded as `stormsim run` loads one,
//! and when it loads, checked, resolved and briefly simulated under tight
//! guard rails (`stormsim::fuzz::exercise`). A panic, a hang or runaway
//! memory is a bug. See README.md, "Fuzzing".

#![no_main]

use libfuzzer_sys::fuzz_target;
use stormsim::fuzz::{FuzzLimits, exercise};

fuzz_target!(|bytes: &[u8]| {
    let _ = exercise(bytes, FuzzLimits::default());
});
