//! Errors about a scenario, each pointing at the file, line, column and
//! field path it is about, with a message that says what was expected.
//!
//! One error renders as one line, the way compilers do:
//! `scenarios/x.yaml:12:7: layers.api.retry.backoff.cap: cap (50ms) is below base (100ms); expected cap >= base`.
//! Validation reports every problem it finds, so most functions return
//! [`ScenarioErrors`], a non-empty list rendered one error per line.

use std::fmt;

use crate::escape::escape;

/// File label of errors about a `--set PATH=VALUE` argument.
pub const SET_LABEL: &str = "<--set>";
/// File label of errors about the built-in default scenario.
pub const DEFAULT_LABEL: &str = "<default scenario>";
/// File label of errors about a scenario whose file is not known.
pub const UNKNOWN_LABEL: &str = "<scenario>";

/// One problem in a scenario.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file name as given, or one of the `<...>` labels.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column, when known (only with a line).
    pub column: Option<u32>,
    /// Dotted field path (`layers.api.retry.backoff.cap`, `layers.1`).
    pub path: Option<String>,
    /// What is wrong and what was expected.
    pub message: String,
}

impl ScenarioError {
    /// An error about the whole file, without a position.
    pub fn new(file: &str, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.to_string(),
            line: None,
            column: None,
            path: None,
            message: leading_zero_note(yaml11_boolean_note(one_line(&message.into()))),
        }
    }

    /// The same error at a 1-based line and column.
    pub fn at(mut self, line: u32, column: u32) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// The same error about a field path (an empty path means none).
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.path = (!path.is_empty()).then_some(path);
        self
    }
}

impl fmt::Display for ScenarioError {
    /// One line; every part that may echo input (the file name, the path,
    /// values quoted in the message) is escaped (`crate::escape`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", escape(&self.file))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if let Some(path) = &self.path {
            write!(f, ": {}", escape(path))?;
        }
        write!(f, ": {}", escape(&shorten_numbers(&self.message)))
    }
}

/// Digits of a number a message shows, at most (more are cut, with `…`).
const NUMBER_SHOWN: usize = 20;

/// `message` with every number written with more than [`NUMBER_SHOWN`]
/// digits (a 300-digit value echoed back) cut to its first
/// [`NUMBER_SHOWN`] characters and `…`.
pub(crate) fn shorten_numbers(message: &str) -> std::borrow::Cow<'_, str> {
    let is_part = |c: char| c.is_ascii_digit() || c == '.';
    let mut out = String::new();
    let mut rest = message;
    let mut changed = false;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let len = rest[start..]
            .find(|c: char| !is_part(c))
            .unwrap_or(rest.len() - start);
        let run = &rest[start..start + len];
        out.push_str(&rest[..start]);
        if len > NUMBER_SHOWN + 4 {
            out.push_str(&run[..NUMBER_SHOWN]);
            out.push('…');
            changed = true;
        } else {
            out.push_str(run);
        }
        rest = &rest[start + len..];
    }
    if !changed {
        return std::borrow::Cow::Borrowed(message);
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Characters of a value a message echoes, at most.
const VALUE_SHOWN: usize = 60;

/// `text` as a message echoes a value the user wrote: whole when short,
/// else its first [`VALUE_SHOWN`] characters and `…` (a 40 KB `--set`
/// value is not printed back).
pub fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(VALUE_SHOWN) {
        Some((end, _)) => std::borrow::Cow::Owned(format!("{}…", &text[..end])),
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// The words YAML 1.1 read as booleans and YAML 1.2 reads as text.
pub const YAML11_BOOLEANS: &[&str] = &["y", "n", "yes", "no", "on", "off"];

/// `message` with a word on YAML 1.1's booleans when it refuses one of
/// them for a boolean field (`expected true or false, found `on``):
/// stormsim reads YAML 1.2 everywhere (a file, `--set`, a variant's
/// `set`, a sweep), where `on` is text, so the author learns why `on` is
/// not `true`.
pub(crate) fn yaml11_boolean_note(message: String) -> String {
    const REFUSED: &str = "expected true or false, found `";
    let Some(at) = message.find(REFUSED) else {
        return message;
    };
    let rest = &message[at + REFUSED.len()..];
    let Some(word) = rest.split('`').next() else {
        return message;
    };
    if !YAML11_BOOLEANS.iter().any(|b| b.eq_ignore_ascii_case(word)) || message.contains("YAML 1.1")
    {
        return message;
    }
    format!(
        "{message} (`{word}` is a boolean in YAML 1.1 only; stormsim reads YAML 1.2, where it is text: write true or false)"
    )
}

/// `message` with a word on the leading zero when it refuses a whole
/// number written with one (`expected a whole number from 1 to 10000,
/// found `010``): YAML 1.1 reads `010` as octal 8, YAML 1.2 as 10, so
/// stormsim takes neither, and the author learns why a number that looks
/// whole is refused, and how to write either.
pub(crate) fn leading_zero_note(message: String) -> String {
    const REFUSED: &str = "expected a whole number";
    let Some(at) = message.find(REFUSED) else {
        return message;
    };
    let Some(word) = message[at..]
        .split_once(", found `")
        .and_then(|(_, rest)| rest.split('`').next())
    else {
        return message;
    };
    let digits = word.trim_start_matches(['+', '-']);
    if digits.len() < 2
        || !digits.starts_with('0')
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || message.contains("a leading zero")
    {
        return message;
    }
    let decimal = match digits.trim_start_matches('0') {
        "" => "0",
        d => d,
    };
    let sign = if word.starts_with('-') { "-" } else { "" };
    // `09` is not octal in either: only the decimal reading is offered.
    let octal = if decimal.contains(['8', '9']) {
        String::new()
    } else {
        format!(", or {sign}0o{decimal} for octal")
    };
    format!(
        "{message} (YAML 1.1 reads a number with a leading zero as octal, YAML 1.2 as decimal, so `{word}` is refused: write {sign}{decimal}{octal})"
    )
}

/// Turns a possibly multi-line message into one line, input's control
/// characters escaped ([`crate::escape::one_line`]).
pub(crate) fn one_line(message: &str) -> String {
    crate::escape::one_line(message)
}

/// Several errors, in the order they were found (never empty when
/// returned as an `Err`), and how many more were found but not listed.
#[derive(Clone, Debug, Default, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioErrors(pub Vec<ScenarioError>, pub Omitted);

/// Errors found but not listed (a bound on how many are reported).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Omitted {
    pub count: usize,
    /// Whether the search stopped before the end (its work bound): there
    /// may be more than `count`.
    pub at_least: bool,
}

impl Omitted {
    /// `count` more, exactly.
    pub fn exactly(count: usize) -> Self {
        Omitted {
            count,
            at_least: false,
        }
    }

    /// Both counts together.
    pub fn and(self, other: Omitted) -> Self {
        Omitted {
            count: self.count + other.count,
            at_least: self.at_least || other.at_least,
        }
    }
}

impl ScenarioErrors {
    /// The errors, none omitted.
    pub fn new(errors: Vec<ScenarioError>) -> Self {
        ScenarioErrors(errors, Omitted::default())
    }
    /// At most `max` errors listed, those after moved into the omitted
    /// count.
    pub fn bounded(mut self, max: usize) -> Self {
        if self.0.len() > max {
            let more = self.0.len() - max;
            self.0.truncate(max);
            self.1 = self.1.and(Omitted::exactly(more));
        }
        self
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> std::slice::Iter<'_, ScenarioError> {
        self.0.iter()
    }
}

impl From<ScenarioError> for ScenarioErrors {
    fn from(e: ScenarioError) -> Self {
        ScenarioErrors::new(vec![e])
    }
}

impl IntoIterator for ScenarioErrors {
    type Item = ScenarioError;
    type IntoIter = std::vec::IntoIter<ScenarioError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl fmt::Display for ScenarioErrors {
    /// One error per line; a count line follows when there are several
    /// (and says how many more were found but not listed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        if let Some(count) = self.count_line() {
            write!(f, "\n{count}")?;
        }
        Ok(())
    }
}

impl ScenarioErrors {
    /// The line that counts the errors: `3 errors`, or `and 12 more not
    /// shown (62 errors in all)` when some were left out; none for a
    /// single error.
    pub fn count_line(&self) -> Option<String> {
        let shown = self.0.len();
        let Omitted { count, at_least } = self.1;
        if count > 0 {
            let more = if at_least { "at least " } else { "" };
            Some(format!(
                "and {more}{count} more not shown ({more}{} errors in all)",
                shown + count
            ))
        } else {
            (shown > 1).then(|| format!("{shown} errors"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml11_booleans_refused_are_explained() {
        let z = leading_zero_note(
            "replicates: expected a whole number from 1 to 10000, found `010`".into(),
        );
        assert!(
            z.ends_with("(YAML 1.1 reads a number with a leading zero as octal, YAML 1.2 as decimal, so `010` is refused: write 10, or 0o10 for octal)"),
            "{z}"
        );
        assert_eq!(leading_zero_note(z.clone()), z);
        for plain in ["found `0`", "found `10`", "found `0.5`", "found `0x2`"] {
            let m = format!("expected a whole number from 0 to 9, {plain}");
            assert_eq!(leading_zero_note(m.clone()), m);
        }
        let m = yaml11_boolean_note("expected true or false, found `Off`".into());
        assert!(m.ends_with("(`Off` is a boolean in YAML 1.1 only; stormsim reads YAML 1.2, where it is text: write true or false)"), "{m}");
        // Not for other values, nor twice.
        let five = "expected true or false, found `5`".to_string();
        assert_eq!(yaml11_boolean_note(five.clone()), five);
        assert_eq!(yaml11_boolean_note(m.clone()), m);
        let e = ScenarioError::new(
            "x.yaml",
            "in variant `a`: expected true or false, found `y`",
        );
        assert!(
            e.message.contains("`y` is a boolean in YAML 1.1 only"),
            "{e}"
        );
    }

    #[test]
    fn long_numbers_are_cut_in_messages() {
        let long = "1".repeat(300);
        let e = ScenarioError::new("f.yaml", format!("{long}.5 is too large; 12345 is not"));
        assert_eq!(
            e.to_string(),
            format!("f.yaml: {}… is too large; 12345 is not", "1".repeat(20))
        );
        // Up to 24 characters stay whole.
        let n = "9".repeat(24);
        assert_eq!(shorten_numbers(&n), n.as_str());
        assert_eq!(
            shorten_numbers(&format!("x{n}9y")),
            format!("x{}…y", &n[..20])
        );
    }

    #[test]
    fn renders_one_line_with_all_parts() {
        let e = ScenarioError::new(
            "scenarios/x.yaml",
            "cap (50ms) is below base (100ms);\n expected cap >= base",
        )
        .at(12, 7)
        .with_path("layers.api.retry.backoff.cap");
        assert_eq!(
            e.to_string(),
            "scenarios/x.yaml:12:7: layers.api.retry.backoff.cap: cap (50ms) is below base (100ms); expected cap >= base"
        );
        assert_eq!(
            ScenarioError::new("<--set>", "bad").to_string(),
            "<--set>: bad"
        );
    }

    #[test]
    fn renders_several() {
        let mut es = ScenarioErrors::new(vec![
            ScenarioError::new("a.yaml", "one").at(1, 1),
            ScenarioError::new("a.yaml", "two").with_path("name"),
        ]);
        assert_eq!(
            es.to_string(),
            "a.yaml:1:1: one\na.yaml: name: two\n2 errors"
        );
        es.1 = Omitted::exactly(5);
        assert!(
            es.to_string()
                .ends_with("\nand 5 more not shown (7 errors in all)"),
            "{es}"
        );
        es.1.at_least = true;
        assert!(
            es.to_string()
                .ends_with("\nand at least 5 more not shown (at least 7 errors in all)"),
            "{es}"
        );
    }
}
