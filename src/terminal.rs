//! What the commands print on standard output and standard error.
//!
//! Nothing printed can panic: `println!` and `eprintln!` panic when their
//! stream cannot be written (stdout on a full disk, `| head` that has
//! gone), and such a panic ended a command with exit 101 and a Rust
//! message. Here a failed write to stdout is remembered and later text for
//! stdout is dropped; [`finish`] turns it into the exit code: a reader
//! that has gone (a broken pipe) ends the command quietly with
//! [`BROKEN_PIPE_EXIT`], any other failure (a full disk) is said on
//! stderr and exits 1. A failed write to stderr is ignored: there is
//! nowhere left to say it.
//!
//! Every text is escaped on its way out ([`crate::escape::escape_lines`]:
//! line breaks stay, other control, bidirectional and invisible characters
//! are written as `\u{..}`), so a path, name or value from input cannot
//! act on the terminal, whichever message echoes it.

use std::fmt;
use std::io::{self, Write};
use std::sync::Mutex;

use crate::escape::escape_lines;

/// The exit code of a command whose standard output was a pipe closed by
/// its reader (`stormsim check s.yaml --format json | head -c 10`):
/// 128 + SIGPIPE (13), what a shell reports for a program that signal
/// stopped, so `set -o pipefail` treats stormsim as any other program.
pub const BROKEN_PIPE_EXIT: i32 = 141;

/// The first failure to write stdout, if any.
static STDOUT_FAILED: Mutex<Option<io::Error>> = Mutex::new(None);

/// Writes `args` (escaped) to stdout; after a failure, nothing more.
pub fn print(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    print_raw(escape_lines(&text).as_bytes());
}

/// Writes `bytes` as they are to stdout (a completion script: stormsim's
/// own text, which may hold tabs); after a failure, nothing more.
pub fn print_raw(bytes: &[u8]) {
    let Ok(mut failed) = STDOUT_FAILED.lock() else {
        return;
    };
    if failed.is_some() {
        return;
    }
    if let Err(e) = io::stdout().lock().write_all(bytes) {
        *failed = Some(e);
    }
}

/// Writes `args` (escaped) to stderr, ignoring a failure.
pub fn eprint(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let _ = io::stderr()
        .lock()
        .write_all(escape_lines(&text).as_bytes());
}

/// The exit code of a command that would exit with `code`, once stdout is
/// flushed: `code` when everything was written; after a broken pipe,
/// [`BROKEN_PIPE_EXIT`] (or `code` if it already says the command
/// failed); after any other failure, a message on stderr and 1 (or
/// `code`).
pub fn finish(code: i32) -> i32 {
    let Ok(mut failed) = STDOUT_FAILED.lock() else {
        return code;
    };
    if failed.is_none()
        && let Err(e) = io::stdout().lock().flush()
    {
        *failed = Some(e);
    }
    match failed.take() {
        None => code,
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            if code == 0 {
                BROKEN_PIPE_EXIT
            } else {
                code
            }
        }
        Some(e) => {
            eprint(format_args!(
                "error: cannot write to standard output: {e}\n"
            ));
            if code == 0 { 1 } else { code }
        }
    }
}

/// `print!` to stdout through [`print`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::terminal::print(format_args!($($arg)*))
    };
}

/// `println!` to stdout through [`print`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::terminal::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` through [`eprint`].
macro_rules! errout {
    ($($arg:tt)*) => {
        $crate::terminal::eprint(format_args!($($arg)*))
    };
}

/// `eprintln!` through [`eprint`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::terminal::eprint(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, errout, out, outln};
