//! Ctrl-C (SIGINT) and SIGTERM while results are being made.
//!
//! The first signal asks politely: it raises a flag that the runs poll
//! (between runs, and inside a run every few thousand events) and that the
//! writer checks before every file, so the command stops at the next such
//! point, removes its staging folder and says what it did not write. The
//! second signal quits at once, after removing the staging folders and
//! lock files it knows of. The commands that write (`run`, `merge`,
//! `plot`) install the handler first thing, before reading anything, so a
//! signal at any moment ends them with [`EXIT_CODE`] and a message; their
//! reading and chart drawing poll the flag too. While a command only reads
//! and checks its input ([`reading`]: a scenario with a sweep of 100 000
//! points takes seconds to check), there is nothing to finish and nothing
//! to save, so the first signal quits at once. Commands that write nothing
//! (`validate`, `check`, `import`) run wholly in [`reading`]: the first
//! signal quits at once with the message and [`EXIT_CODE`]; `export` reads
//! that way and then replaces its file uninterrupted.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit code of a command stopped by a signal (128 + SIGINT), as
/// shells report it.
pub const EXIT_CODE: i32 = 130;

static REQUESTED: AtomicBool = AtomicBool::new(false);
static CLEANUP: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Raised while an output folder is being swapped into place: a second
/// signal then waits for the swap rather than quit halfway through it.
static CRITICAL: AtomicBool = AtomicBool::new(false);
/// Raised while a command only reads its input: a signal quits at once.
static READING: AtomicBool = AtomicBool::new(false);

/// What to say when a signal ends [`reading`].
static READING_MESSAGE: Mutex<String> = Mutex::new(String::new());

/// Runs `f` (reading and checking the input, nothing written yet) with
/// the first signal quitting at once, as a second one would: there is no
/// safe point to wait for. `message` is what the command then says (its
/// usual words for a stop: "interrupted: nothing was written"). Staging
/// folders and locks taken before are removed on the way out.
pub fn reading<T>(message: &str, f: impl FnOnce() -> T) -> T {
    if let Ok(mut m) = READING_MESSAGE.lock() {
        *m = message.to_string();
    }
    READING.store(true, Ordering::SeqCst);
    // A signal between `install` and here asked for a stop that no safe
    // point would see (a check runs to its end): quit now, as the
    // handler would have. With the handler's own second look at
    // `READING`, one of the two sees the other (both are sequentially
    // consistent), so no signal falls between them.
    if REQUESTED.load(Ordering::SeqCst) && !CRITICAL.load(Ordering::SeqCst) {
        quit_reading();
    }
    let out = f();
    READING.store(false, Ordering::SeqCst);
    out
}

/// Runs `f` (a few renames) with quitting at once held off: the second
/// signal then lets it finish. A stop asked for during `f` is still seen
/// by the caller afterwards.
pub fn uninterrupted<T>(f: impl FnOnce() -> T) -> T {
    CRITICAL.store(true, Ordering::SeqCst);
    let out = f();
    CRITICAL.store(false, Ordering::SeqCst);
    out
}

/// Installs the handler (once per process; later calls do nothing).
pub fn install() {
    // An error means a handler is already set, ours or the embedder's.
    let _ = ctrlc::set_handler(|| {
        let again = REQUESTED.swap(true, Ordering::SeqCst);
        // Looked at after raising the flag, so that [`reading`], which
        // looks at the flag after raising `READING`, and this see each
        // other.
        if READING.load(Ordering::SeqCst) && !CRITICAL.load(Ordering::SeqCst) {
            quit_reading();
        }
        if again {
            if CRITICAL.load(Ordering::SeqCst) {
                crate::terminal::errln!(
                    "\ninterrupted again: finishing the swap of the output folder first"
                );
                return;
            }
            remove_staging();
            crate::terminal::errln!("\ninterrupted twice: quit at once; nothing was written");
            std::process::exit(EXIT_CODE);
        }
        crate::terminal::errln!(
            "\ninterrupted: stopping at the next safe point (Ctrl-C again to quit at once)"
        );
    });
}

/// Raised by the first of the handler and [`reading`] to quit.
static QUITTING: AtomicBool = AtomicBool::new(false);

/// Ends a command stopped while reading: removes its staging folders and
/// locks, says the command's message and exits with [`EXIT_CODE`]. Only
/// the first caller does so; another waits for the exit.
fn quit_reading() -> ! {
    if QUITTING.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    remove_staging();
    let said = READING_MESSAGE
        .lock()
        .map(|m| m.clone())
        .unwrap_or_default();
    crate::terminal::errln!("\n{said}");
    std::process::exit(EXIT_CODE);
}

/// The flag the runs poll.
pub fn flag() -> &'static AtomicBool {
    &REQUESTED
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Remembers a path to remove if the process quits at once: a staging
/// folder or a lock file.
pub fn register_cleanup(path: &Path) {
    if let Ok(mut dirs) = CLEANUP.lock() {
        dirs.push(path.to_path_buf());
    }
}

/// Forgets a path (committed, or removed by its owner).
pub fn unregister_cleanup(path: &Path) {
    if let Ok(mut dirs) = CLEANUP.lock() {
        dirs.retain(|d| d != path);
    }
}

fn remove_staging() {
    if let Ok(paths) = CLEANUP.lock() {
        remove_all(&paths);
    }
}

/// Removes the registered staging folders and lock files unless the list
/// is in use (a thread whose allocation failed while it held the list:
/// waiting would never end). For [`crate::out_of_memory`].
pub fn remove_staging_if_free() {
    if let Ok(paths) = CLEANUP.try_lock() {
        remove_all(&paths);
    }
}

fn remove_all(paths: &[PathBuf]) {
    for path in paths {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                let _ = std::fs::remove_dir_all(path);
            }
            Ok(_) => {
                let _ = std::fs::remove_file(path);
            }
            Err(_) => {}
        }
    }
}

/// How often loops over rows check the flag: every this many rows.
pub const POLL_ROWS: usize = 4096;

/// A stop asked for by Ctrl-C or SIGTERM, as an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted")
    }
}

impl std::error::Error for Stopped {}

/// `Err(Stopped)` once a stop was asked for.
pub fn check() -> Result<(), Stopped> {
    if requested() { Err(Stopped) } else { Ok(()) }
}

/// The error a writer returns when a stop was asked for before it
/// finished; the caller drops its `OutputDir`, which removes the staging
/// folder.
pub fn check_io() -> std::io::Result<()> {
    if requested() {
        Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted",
        ))
    } else {
        Ok(())
    }
}
