//! The worker threads of `run`, `merge` and `plot` (rayon's pool: runs in
//! parallel, and the charts), counted and checked before any work starts.
//!
//! The count is `--threads N`, else `RAYON_NUM_THREADS` (rayon's own
//! variable, empty or 0 meaning "not set", as rayon reads it), else one
//! per core. Either is refused (exit 2) past [`limit`]: the work is
//! CPU-bound, so threads beyond the cores add no speed, only memory (each
//! worker holds a run's state, and a stack) and start-up time; an
//! unbounded count let `--threads 100000` spend minutes creating threads,
//! deaf to Ctrl-C, before failing.

/// The most worker threads for a machine with `cores` cores: four per
/// core (room for machines whose cores the count undercounts, containers
/// with a CPU quota), at least 64 (so a small machine can still run a
/// determinism check with many threads), at most 1024.
pub fn limit_for(cores: usize) -> usize {
    cores.saturating_mul(4).clamp(64, 1024)
}

/// The most worker threads on this machine.
pub fn limit() -> usize {
    limit_for(cores())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The number of worker threads from `--threads` (`flag`) and the value
/// of `RAYON_NUM_THREADS` (`env`); `None` means one per core. Errors say
/// what was given and what is allowed.
pub fn count(
    flag: Option<usize>,
    env: Option<&str>,
    limit: usize,
) -> Result<Option<usize>, String> {
    let why = "the runs are CPU-bound: more threads than cores add memory, not speed";
    if let Some(n) = flag {
        if n == 0 || n > limit {
            return Err(format!(
                "--threads {n}: expected a whole number from 1 to {limit} ({why}; \
                 leave --threads out for one thread per core)"
            ));
        }
        return Ok(Some(n));
    }
    let Some(text) = env.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    match text.parse::<usize>() {
        Ok(0) => Ok(None),
        Ok(n) if n <= limit => Ok(Some(n)),
        _ => Err(format!(
            "RAYON_NUM_THREADS={}: expected a whole number from 1 to {limit} (0 or unset: \
             one thread per core; {why})",
            crate::escape::escape(text)
        )),
    }
}

/// Checks the count and starts the pool every parallel part of the
/// command uses. `Err((message, exit code))`: 2 for a count refused, 1
/// when the threads cannot be started.
pub fn start(flag: Option<usize>) -> Result<(), (String, i32)> {
    let env = std::env::var("RAYON_NUM_THREADS").ok();
    let n = count(flag, env.as_deref(), limit())
        .map_err(|m| (m, 2))?
        .unwrap_or_else(cores);
    room_for_threads(n)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| (format!("cannot start the worker threads: {e}"), 1))
}

/// The address space one worker thread maps as it starts: its stack
/// (Rust's default for a spawned thread, 2 MiB, which rayon keeps) and
/// the alternate signal stack the standard library maps inside the new
/// thread for its stack-overflow handler (a few pages; 64 KiB covers the
/// largest `AT_MINSIGSTKSZ` of current x86-64 and AArch64 kernels).
const THREAD_BYTES: usize = 2 * 1024 * 1024 + 64 * 1024;

/// Checks, before any thread starts, that `n` workers' stacks fit under
/// the address-space limit (`ulimit -v`): a thread whose stack could be
/// mapped but whose alternate signal stack could not aborts the process
/// from inside the standard library ("failed to allocate an alternative
/// stack"), which no caller can catch. Reserving the room once, and
/// giving it back, turns that into an error with exit 1.
fn room_for_threads(n: usize) -> Result<(), (String, i32)> {
    use std::alloc::{GlobalAlloc, Layout, System};
    let bytes = n.saturating_mul(THREAD_BYTES);
    let refused = || {
        (
            format!(
                "cannot start the worker threads: {} need about {} of address space, more than this process may still map (ulimit -v); raise the limit or use fewer threads (--threads)",
                crate::human::plural(n, "thread stack"),
                crate::scenario::memory::bytes_text(bytes as u64)
            ),
            1,
        )
    };
    let layout = Layout::from_size_align(bytes, 4096).map_err(|_| refused())?;
    // The system allocator itself, not the process's, which exits on a
    // failed allocation: here a failure is an answer.
    // SAFETY: `layout` has a non-zero size (n ≥ 1), and the block is
    // given back at once with the same layout.
    let probe = unsafe { System.alloc(layout) };
    if probe.is_null() {
        return Err(refused());
    }
    // SAFETY: allocated just above with `layout`.
    unsafe { System.dealloc(probe, layout) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_four_per_core_between_64_and_1024() {
        assert_eq!(limit_for(1), 64);
        assert_eq!(limit_for(16), 64);
        assert_eq!(limit_for(17), 68);
        assert_eq!(limit_for(256), 1024);
        assert_eq!(limit_for(1000), 1024);
    }

    #[test]
    fn counts_from_the_flag_or_the_variable_within_the_limit() {
        assert_eq!(count(None, None, 64), Ok(None));
        assert_eq!(count(Some(3), Some("9999"), 64), Ok(Some(3)));
        assert_eq!(count(None, Some(" 8 "), 64), Ok(Some(8)));
        assert_eq!(count(None, Some("0"), 64), Ok(None));
        assert_eq!(count(None, Some(""), 64), Ok(None));
        assert_eq!(count(Some(64), None, 64), Ok(Some(64)));
        let e = count(Some(65), None, 64).unwrap_err();
        assert!(
            e.starts_with("--threads 65: expected a whole number from 1 to 64"),
            "{e}"
        );
        assert!(
            count(Some(0), None, 64)
                .unwrap_err()
                .contains("from 1 to 64")
        );
        let e = count(None, Some("100000"), 64).unwrap_err();
        assert!(e.starts_with("RAYON_NUM_THREADS=100000: expected"), "{e}");
        let e = count(None, Some("four\u{1b}"), 64).unwrap_err();
        assert!(e.contains("four\\u{1b}"), "{e}");
    }
}
