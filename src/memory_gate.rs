//! How many runs may hold their memory at once.
//!
//! Each run is checked on its own before anything runs (at most 4 GB:
//! `scenario::memory`), but runs go in parallel, one per worker thread, so
//! runs that each fit could together exhaust the machine: two breakers of
//! 3.7 GB each under a 4 GB address-space limit aborted the process on a
//! failed allocation, while `--threads 1` finished. The gate admits a run
//! only while the memory the runs in progress allocated from their start
//! (`Estimate::at_start`) stays within the process's budget; a run larger
//! than the whole budget runs alone. Results do not depend on it: it only
//! decides when a run starts, never what it computes.
//!
//! The budget is three quarters of the smaller of the address-space limit
//! (`ulimit -v`, getrlimit(2) `RLIMIT_AS`) and the memory the kernel says
//! is available (`MemAvailable` in /proc/meminfo, see proc(5)); with
//! neither known, runs are not held back.

use std::sync::{Condvar, Mutex};

/// Admits runs while the memory they hold together fits a budget.
#[derive(Debug)]
pub struct MemoryGate {
    budget: u64,
    held: Mutex<u64>,
    freed: Condvar,
}

impl MemoryGate {
    /// A gate of `budget` bytes.
    pub fn new(budget: u64) -> Self {
        MemoryGate {
            budget,
            held: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// A gate with this process's budget (see the module documentation).
    pub fn for_this_process() -> Self {
        MemoryGate::new(process_budget().unwrap_or(u64::MAX))
    }

    /// Runs `f` once `bytes` fit beside what the runs in progress hold (at
    /// once when none is in progress), and gives them back afterwards.
    pub fn admit<T>(&self, bytes: u64, f: impl FnOnce() -> T) -> T {
        {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            while *held > 0 && held.saturating_add(bytes) > self.budget {
                held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
            }
            *held = held.saturating_add(bytes);
        }
        let out = f();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        *held = held.saturating_sub(bytes);
        self.freed.notify_all();
        out
    }
}

/// Makes the whole process share one malloc arena when an address-space
/// limit (`ulimit -v`) is set. glibc gives each thread that allocates an
/// arena of its own, and each new arena reserves 64 MB of address space
/// at once (`HEAP_MAX_SIZE`, twice the largest mmap threshold on 64-bit:
/// glibc `malloc/arena.c`; mallopt(3), `M_ARENA_MAX`) whatever it holds,
/// so under a limit of 150 to 220 MB a one-run `stormsim run` on two
/// worker threads aborted on a failed allocation of 8 bytes while the
/// memory it used was well within the budget. With one arena the address
/// space follows the memory used. The threads then share the arena,
/// which costs little: the hot paths do not allocate per event. Called
/// first thing, before any other thread exists. Without a limit (or on
/// another C library) nothing changes.
pub fn one_arena_under_a_limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if address_space_limit().is_some() {
        // SAFETY: mallopt(3) only sets a parameter of glibc's allocator;
        // it is called before any other thread is started.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// Three quarters of the smaller of the address-space limit and the
/// available memory, when either is known.
pub fn process_budget() -> Option<u64> {
    let limits = [address_space_limit(), available_memory()];
    limits.into_iter().flatten().min().map(|b| b / 4 * 3)
}

/// Three quarters of the address-space limit (`ulimit -v`), when one is
/// set: a run that allocates past it aborts the whole process, so what a
/// run may grow to with load (`limits.max_in_flight`) is counted against
/// it (`runner::plan`).
pub fn address_space_budget() -> Option<u64> {
    address_space_limit().map(|b| b / 4 * 3)
}

/// The address-space limit (`ulimit -v`, getrlimit(2) `RLIMIT_AS`), when
/// one is set. Allocates nothing.
#[cfg(unix)]
pub fn address_space_limit() -> Option<u64> {
    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit};
    let (soft, _) = getrlimit(Resource::RLIMIT_AS).ok()?;
    (soft != RLIM_INFINITY).then_some(soft)
}

#[cfg(not(unix))]
fn address_space_limit() -> Option<u64> {
    None
}

/// `MemAvailable` of /proc/meminfo, in bytes (Linux).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available(&text)
}

fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn reads_mem_available() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(text), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
    }

    /// Runs of 3 units under a budget of 7: never more than two at once,
    /// whatever the threads do; a run larger than the budget still runs,
    /// alone.
    #[test]
    fn admitted_runs_never_exceed_the_budget() {
        let gate = MemoryGate::new(7);
        let now = AtomicU64::new(0);
        let peak = AtomicU64::new(0);
        std::thread::scope(|s| {
            for i in 0..8 {
                let (gate, now, peak) = (&gate, &now, &peak);
                s.spawn(move || {
                    let bytes = if i == 7 { 100 } else { 3 };
                    gate.admit(bytes, || {
                        let held = now.fetch_add(bytes, Ordering::SeqCst) + bytes;
                        if bytes == 100 {
                            assert_eq!(held, 100, "the large run runs alone");
                        } else {
                            peak.fetch_max(held, Ordering::SeqCst);
                        }
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        now.fetch_sub(bytes, Ordering::SeqCst);
                    });
                });
            }
        });
        // Two runs of 3 fit in 7, three do not.
        assert!(peak.load(Ordering::SeqCst) <= 6, "{peak:?}");
        assert_eq!(*gate.held.lock().unwrap(), 0);
    }
}
