//! Out of memory: a failed allocation ends the command with a message and
//! exit code 1, never with an abort and a backtrace.
//!
//! Rust's standard library aborts the process when the allocator returns
//! nothing (`std::alloc::handle_alloc_error`), printing "memory allocation
//! of N bytes failed" and, with `RUST_BACKTRACE` unset, "stack backtrace:"
//! on some builds; the shell then reports 134 (SIGABRT) and a work folder
//! stays behind. Under an address-space limit (`ulimit -v`, as batch
//! schedulers set it) that is what `stormsim plot` did on a folder whose
//! charts needed 30 MB. The runs themselves are checked up front against
//! the limit (`scenario::memory`, `memory_gate`), but no estimate covers
//! every allocation of every command, so the binary's allocator is this
//! wrapper of the system allocator: when an allocation fails it writes one
//! line to standard error (from a buffer on the stack: nothing is
//! allocated to say it), removes the staging folders and lock files the
//! command registered with [`crate::interrupt`] (an existing output folder
//! stays as it was), and exits 1 ("the run failed", README "Exit codes").
//! A reserve of 256 kB set aside at start is given back first, so that the
//! clean-up has room even when the failed allocation was a small one.
//! Allocations that succeed cost one null check.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write as _;

use crate::human::Bytes;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The system allocator, ending the process cleanly when it fails.
pub struct ExitOnFailure;

// SAFETY: every method forwards to `System` with the same arguments and
// returns what it returned; only a null result is acted on, and then the
// process ends without returning.
unsafe impl GlobalAlloc for ExitOnFailure {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received (see above).
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            failed(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            failed(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            failed(new_size);
        }
        p
    }
}

/// Address space set aside at start ([`keep_a_reserve`]) and given back
/// when an allocation fails, so that the clean-up has room to work.
static RESERVE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());

/// The reserve's size: above glibc's mmap threshold (128 kB), so freeing
/// it returns its address space to the system at once.
const RESERVE_BYTES: usize = 256 << 10;

fn reserve_layout() -> Layout {
    Layout::from_size_align(RESERVE_BYTES, 16).expect("a valid layout")
}

/// Sets the reserve aside; called first thing by the binary.
pub fn keep_a_reserve() {
    // SAFETY: a non-zero size; the pointer is freed once, in `failed`.
    let p = unsafe { System.alloc(reserve_layout()) };
    RESERVE.store(p, Ordering::SeqCst);
}

/// Set by the first thread whose allocation failed.
static FAILING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Whether this thread is already saying so (a second failure while
    /// cleaning up ends the process at once).
    static HERE: Cell<bool> = const { Cell::new(false) };
}

/// Says that `size` bytes could not be had, cleans up, exits 1.
fn failed(size: usize) -> ! {
    if HERE.with(|h| h.replace(true)) {
        exit_now();
    }
    if FAILING.swap(true, Ordering::SeqCst) {
        // Another thread is saying it and will end the process.
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    let mut line = Line::default();
    let _ = write!(
        line,
        "\nerror: out of memory: an allocation of {} failed",
        Bytes(size as u64)
    );
    if let Some(limit) = crate::memory_gate::address_space_limit() {
        let _ = write!(
            line,
            " under the address-space limit of {} (`ulimit -v`)",
            Bytes(limit)
        );
    }
    let _ = writeln!(
        line,
        "; stopped with nothing written (an existing output folder is as it was): \
         raise the limit, or give the command less to hold (fewer runs or \
         threads, longer buckets)"
    );
    line.print();
    let reserve = RESERVE.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if !reserve.is_null() {
        // SAFETY: allocated by `keep_a_reserve` with this layout, freed once.
        unsafe { System.dealloc(reserve, reserve_layout()) };
    }
    crate::interrupt::remove_staging_if_free();
    exit_now();
}

fn exit_now() -> ! {
    // SAFETY: _exit(2) ends the process without running destructors or
    // atexit handlers, which could allocate again.
    unsafe { libc::_exit(1) }
}

/// A line of text on the stack.
struct Line {
    bytes: [u8; 512],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            bytes: [0; 512],
            len: 0,
        }
    }
}

impl Line {
    fn print(&self) {
        let mut rest = &self.bytes[..self.len];
        while !rest.is_empty() {
            // SAFETY: write(2) reads `rest.len()` bytes from a live buffer.
            let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
            if n <= 0 {
                return;
            }
            rest = &rest[n as usize..];
        }
    }
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.bytes.len() - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_keeps_what_fits() {
        let mut line = Line::default();
        let long = "x".repeat(600);
        let _ = write!(line, "{long}");
        assert_eq!(line.len, 512);
    }
}
