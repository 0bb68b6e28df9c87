//! Ctrl-C (SIGINT) and SIGTERM while results are being made.
//!
//! The first signal asks politely: it raises a flag that the runs poll
//! (between runs, and inside a run every few thousand events) and that the
//! writer checks before every file, so the command stops at the next such
//! point, removes its staging folder and says what it did not write. The
//! second signal quits at once, after removing the staging folders it
//! knows of. Commands that write nothing (`validate`, `check`, ...) do not
//! install the handler and keep the default: they die at once.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit code of a command stopped by a signal (128 + SIGINT), as
/// shells report it.
pub const EXIT_CODE: i32 = 130;

static REQUESTED: AtomicBool = AtomicBool::new(false);
static STAGING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs the handler (once per process; later calls do nothing).
pub fn install() {
    // An error means a handler is already set, ours or the embedder's.
    let _ = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            remove_staging();
            eprintln!("\ninterrupted twice: quit at once; nothing was written");
            std::process::exit(EXIT_CODE);
        }
        eprintln!("\ninterrupted: stopping at the next safe point (Ctrl-C again to quit at once)");
    });
}

/// The flag the runs poll.
pub fn flag() -> &'static AtomicBool {
    &REQUESTED
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Remembers a staging folder to remove if the process quits at once.
pub fn register_staging(path: &Path) {
    if let Ok(mut dirs) = STAGING.lock() {
        dirs.push(path.to_path_buf());
    }
}

/// Forgets a staging folder (committed or removed by its owner).
pub fn unregister_staging(path: &Path) {
    if let Ok(mut dirs) = STAGING.lock() {
        dirs.retain(|d| d != path);
    }
}

fn remove_staging() {
    if let Ok(dirs) = STAGING.lock() {
        for dir in dirs.iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
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
