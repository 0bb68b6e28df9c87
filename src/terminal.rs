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
//!
//! Messages on stderr also say an operating system's error in words only:
//! Rust writes an `io::Error` as "No such file or directory (os error 2)",
//! and the number means nothing to a reader. [`plain_os_errors`] drops
//! the "(os error N)" and starts the words in lower case, as the rest of a
//! message after a colon ("cannot lock out: no such file or directory"),
//! whichever error type carried the `io::Error` into the message.

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
    let text = plain_os_errors(args.to_string());
    let _ = io::stderr()
        .lock()
        .write_all(escape_lines(&text).as_bytes());
}

/// `text` with every operating system error said in words only: each
/// " (os error N)" dropped, and the words before it ("No such file or
/// directory", back to the colon that introduces them) started in lower
/// case.
pub fn plain_os_errors(text: String) -> String {
    const MARK: &str = " (os error ";
    if !text.contains(MARK) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || !after[digits..].starts_with(')') {
            out.push_str(&rest[..at + MARK.len()]);
            rest = after;
            continue;
        }
        let words = &rest[..at];
        let start = words.rfind(": ").map_or(0, |i| i + 2);
        out.push_str(&words[..start]);
        out.push_str(&lower_first(&words[start..]));
        rest = &after[digits + 1..];
    }
    out.push_str(rest);
    out
}

/// `words` with its first letter in lower case when it starts a sentence
/// ("No such file" → "no such file"), not when it is an acronym ("EOF").
fn lower_first(words: &str) -> String {
    let mut chars = words.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if first.is_ascii_uppercase() && second.is_lowercase() => {
            let mut out = String::with_capacity(words.len());
            out.push(first.to_ascii_lowercase());
            out.push_str(&words[1..]);
            out
        }
        _ => words.to_string(),
    }
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

#[cfg(test)]
mod tests {
    use super::plain_os_errors;

    #[test]
    fn os_errors_are_said_in_words_only() {
        let io = std::io::Error::from_raw_os_error(2);
        let said = plain_os_errors(format!("error: cannot lock out/x (lock file out/.l): {io}"));
        assert_eq!(
            said,
            "error: cannot lock out/x (lock file out/.l): no such file or directory"
        );
        let two = plain_os_errors(format!(
            "a: {}; b: {}",
            std::io::Error::from_raw_os_error(13),
            std::io::Error::from_raw_os_error(28)
        ));
        assert_eq!(two, "a: permission denied; b: no space left on device");
        // Not an errno: kept as written.
        let kept = "x (os error two) and (os error 5";
        assert_eq!(plain_os_errors(kept.to_string()), kept);
        // An acronym stays as it is.
        assert_eq!(
            plain_os_errors("m: EOF reached (os error 5)".to_string()),
            "m: EOF reached"
        );
    }
}
