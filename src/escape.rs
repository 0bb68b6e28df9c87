//! Text from input, made safe to print on a terminal. Anything stormsim
//! echoes from a file, a command-line argument or an environment variable
//! (field names, values, paths, names) goes through [`escape`] before it
//! reaches the terminal, so that an escape sequence, a NUL or a
//! right-to-left override in a scenario cannot clear the screen, hide text
//! or reorder what a message says. Names stormsim writes into tables and
//! folder names are refused outright when they hold such a character
//! ([`unsafe_char_in`], used by validation).
//!
//! Unsafe characters: the Unicode control characters (C0, DEL, C1), the
//! line and paragraph separators, and the invisible format characters
//! (category Cf: bidirectional embeddings, overrides and isolates, zero
//! width characters, the byte-order mark, tags, ...), as listed by
//! Unicode 15.1's `DerivedGeneralCategory.txt`.

use std::borrow::Cow;

/// The format characters (general category Cf), as inclusive ranges.
const FORMAT: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether `c` must not reach a terminal as itself: a control character,
/// a line or paragraph separator, or an invisible format character.
pub fn is_unsafe_char(c: char) -> bool {
    if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
        return true;
    }
    let u = c as u32;
    FORMAT.iter().any(|&(lo, hi)| (lo..=hi).contains(&u))
}

/// `text` with every unsafe character written as `\u{XX}` (its code point
/// in hexadecimal); borrowed when there is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_but(text, |_| false)
}

/// A path as a message shows it: as [`std::path::Path::display`] does
/// (a byte that is not UTF-8 shown as U+FFFD), with every unsafe
/// character escaped as [`escape`] does, line breaks included, so that
/// a path (`--out $'o\nerror: x'`) cannot start a line of its own in
/// what stormsim prints. Every path that reaches the terminal or a
/// message goes through it.
pub fn path(path: &std::path::Path) -> String {
    escape(&path.to_string_lossy()).into_owned()
}

/// As [`escape`], but line breaks stay line breaks (for multi-line text
/// such as a command-line parser's usage message).
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_but(text, |c| c == '\n')
}

/// How [`escape`] writes the unsafe character `c`: `\u{1b}`, its code
/// point in lowercase hexadecimal, as Rust writes it. Every place that
/// shows input (the console, messages, `report.html`) writes it so.
pub fn escaped_char(c: char) -> String {
    format!("\\u{{{:x}}}", c as u32)
}

/// `text` escaped ([`escape`]) between double quotes, as a message quotes
/// a name or a path (instead of Rust's `{:?}`, which writes a line break
/// as `\n` but an escape as `\u{1b}`).
pub fn quoted(text: &str) -> String {
    format!("\"{}\"", escape(text))
}

/// `message` on one line: runs of spaces and line feeds (a parser's
/// message may span lines) become one space, and every other unsafe
/// character is escaped ([`escape`]), so that a carriage return or a line
/// or paragraph separator from input is shown as itself (`\u{d}`,
/// `\u{2028}`), never as a space.
pub fn one_line(message: &str) -> String {
    escape_lines(message)
        .split([' ', '\n'])
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn escape_but(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| is_unsafe_char(c) && !keep(c);
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.push_str(&escaped_char(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The first unsafe character of `name`, described for a message
/// ("U+001B, a control character"), or `None` when there is none.
pub fn unsafe_char_in(name: &str) -> Option<String> {
    let c = name.chars().find(|&c| is_unsafe_char(c))?;
    let kind = if c.is_control() {
        "a control character"
    } else if matches!(c, '\u{2028}' | '\u{2029}') {
        "a line or paragraph separator"
    } else if matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
    {
        "a bidirectional text control"
    } else {
        "an invisible formatting character"
    };
    Some(format!("U+{:04X}, {kind}", c as u32))
}

/// What a spreadsheet would do with `name` as the first thing in a CSV
/// cell: a name that starts with `=`, `+`, `-` or `@` is read as a formula
/// when the table is opened (CSV injection, OWASP "CSV Injection"), so
/// names stormsim writes into its tables are refused when they do.
pub fn formula_start(name: &str) -> Option<String> {
    let c = name
        .chars()
        .next()
        .filter(|c| matches!(c, '=' | '+' | '-' | '@'))?;
    Some(format!(
        "starts with `{c}`, which a spreadsheet opening the CSV tables reads as a formula; expected a name that starts with a letter or a digit"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_a_spreadsheet_reads_as_formulas() {
        for bad in ["=1+1", "+x", "-x", "@SUM(A1)"] {
            assert!(formula_start(bad).is_some(), "{bad}");
        }
        for ok in ["api", "x=1", "1-a", ""] {
            assert!(formula_start(ok).is_none(), "{ok}");
        }
    }

    #[test]
    fn escapes_controls_bidi_and_invisible_characters() {
        assert_eq!(escape("plain: ü, 名前, é"), "plain: ü, 名前, é");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("nul\0"), "nul\\u{0}");
        assert_eq!(escape("x\u{202e}gnp.exe"), "x\\u{202e}gnp.exe");
        assert_eq!(escape("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(escape("del\u{7f} c1\u{9b}"), "del\\u{7f} c1\\u{9b}");
        assert_eq!(escape("tag\u{e0041}"), "tag\\u{e0041}");
        assert_eq!(escape("two\nlines"), "two\\u{a}lines");
        assert_eq!(escape_lines("two\nlines\u{1b}"), "two\nlines\\u{1b}");
    }

    #[test]
    fn one_line_escapes_carriage_returns_and_separators_visibly() {
        assert_eq!(one_line("a\n  b\n"), "a b");
        assert_eq!(one_line("name `a\rb`"), "name `a\\u{d}b`");
        assert_eq!(one_line("x\u{2028}y\u{2029}z"), "x\\u{2028}y\\u{2029}z");
        assert_eq!(one_line("tab\there\u{85}"), "tab\\u{9}here\\u{85}");
        // Escaping twice changes nothing.
        assert_eq!(escape(&one_line("a\u{1b}b")), one_line("a\u{1b}b"));
        assert_eq!(quoted("a\u{1b}\r"), "\"a\\u{1b}\\u{d}\"");
        assert_eq!(
            unsafe_char_in("a\u{2028}").as_deref(),
            Some("U+2028, a line or paragraph separator")
        );
    }

    #[test]
    fn names_the_first_unsafe_character() {
        assert_eq!(unsafe_char_in("fine-name_1.2"), None);
        assert_eq!(
            unsafe_char_in("a\u{1b}b").as_deref(),
            Some("U+001B, a control character")
        );
        assert_eq!(
            unsafe_char_in("\u{202e}x").as_deref(),
            Some("U+202E, a bidirectional text control")
        );
        assert_eq!(
            unsafe_char_in("x\u{feff}").as_deref(),
            Some("U+FEFF, an invisible formatting character")
        );
    }
}
