//! Parser messages in a scenario author's words: "did you mean `kind`?"
//! for a misspelt field or variant name, and no Rust in them: the YAML
//! parser's errors are worded by [`Wording`] (a serde-saphyr message
//! formatter), and [`plain_words`] replaces any type name that still gets
//! through ("expected u32" becomes "expected a whole number (at most
//! 4294967295)"; the range a field accepts, which the type does not
//! know, is said by validation once the value is a whole number).

use std::borrow::Cow;

use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{DefaultMessageFormatter, Error, MessageFormatter};

/// The wording of serde-saphyr's errors for people who write scenarios:
/// what was expected and found in YAML terms (a list, a mapping, a whole
/// number from 0 to 255), and the parser's limits in the units a file
/// has (levels, documents, nodes) rather than its internal counters.
pub struct Wording;

impl MessageFormatter for Wording {
    fn format_message<'a>(&self, err: &'a Error) -> Cow<'a, str> {
        // The error itself, not the wrappers that say where an alias was.
        let mut err = err;
        while let Error::AliasError { error, .. } | Error::WithSnippet { error, .. } = err {
            err = error;
        }
        let text = match err {
            Error::InvalidScalar { ty, .. } => format!("invalid {ty}"),
            Error::Unexpected { expected, .. } => format!("expected {}", node_words(expected)),
            Error::SerdeInvalidType {
                unexpected,
                expected,
                ..
            }
            | Error::SerdeInvalidValue {
                unexpected,
                expected,
                ..
            } => format!(
                "expected {}, found {}",
                expected_words(expected),
                found_words(unexpected)
            ),
            Error::SerdeInvalidLength { len, expected, .. } => {
                format!(
                    "found {}; expected {}",
                    crate::human::plural(*len, "item"),
                    expected_words(expected)
                )
            }
            Error::NullIntoString { .. } => "expected text, found nothing (null)".into(),
            Error::SerdeUnknownVariant {
                variant, expected, ..
            } => unknown_value(variant, expected.iter().copied()),
            Error::ExternallyTaggedEnumExpectedScalarOrMapping { .. } => {
                "expected one of the names this field takes, found a list".into()
            }
            Error::ExpectedStringKeyForExternallyTaggedEnum { .. } => {
                "expected a name as the key of this mapping".into()
            }
            Error::UnexpectedValueForUnitEnumVariant { .. } => {
                "this name takes no value; write it alone".into()
            }
            Error::InvalidBooleanStrict { .. } => "expected true or false".into(),
            Error::NonFiniteFloat { value, .. } => {
                format!("`{value}` is not a finite number; expected a number")
            }
            Error::MultipleDocuments { .. } => {
                "the file holds more than one YAML document (a `---` line starts another); a scenario is one document".into()
            }
            Error::DuplicateMappingKey { key: Some(k), .. } => {
                format!("`{k}` is given twice; expected each field once")
            }
            Error::DuplicateMappingKey { key: None, .. } => {
                "a field is given twice; expected each field once".into()
            }
            Error::AliasReplayLimitExceeded {
                max_total_replayed_events,
                ..
            } => format!(
                "anchors and aliases expand to too much data (more than {max_total_replayed_events} nodes replayed); expected a scenario without alias bombs"
            ),
            Error::AliasExpansionLimitExceeded {
                max_expansions_per_anchor,
                ..
            } => format!(
                "anchors and aliases expand to too much data (an anchor used more than {max_expansions_per_anchor} times); expected a scenario without alias bombs"
            ),
            Error::AliasReplayStackDepthExceeded { max_depth, .. } => format!(
                "anchors and aliases expand to too much data (aliases nested more than {max_depth} deep); expected a scenario without alias bombs"
            ),
            Error::Budget { breach, .. } => budget_words(breach),
            Error::Message { msg, .. } if msg.contains("recursion limit") => {
                "the document nests too deeply; a scenario nests only a few levels".into()
            }
            other => {
                let text = DefaultMessageFormatter.format_message(other);
                return match super::yaml_words::syntax_words(&text) {
                    Some(words) => Cow::Owned(words),
                    None => text,
                };
            }
        };
        Cow::Owned(text)
    }
}

/// "unknown value `x`; expected one of: a, b, c": a word an enumeration
/// does not have, with the words it has.
pub fn unknown_value<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        return format!("unknown value `{word}`; this field takes no name here");
    }
    format!(
        "unknown value `{word}`; expected one of: {}",
        names.join(", ")
    )
}

/// serde's own message templates (as serde_json and serde's derive write
/// them: "unknown variant `x`, expected one of `a`, `b`", "invalid type:
/// integer `5`, expected a string", "invalid length 2, expected ...",
/// "invalid boolean") in a scenario author's words; any other message is
/// returned with its Rust type names replaced ([`plain_words`]).
pub fn serde_words(message: &str) -> String {
    let message = message.trim();
    let names = |list: &str| -> Vec<String> {
        list.split([',', ' '])
            .map(|n| n.trim().trim_matches('`'))
            .filter(|n| !n.is_empty() && *n != "or" && *n != "one" && *n != "of")
            .map(str::to_string)
            .collect()
    };
    if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some((word, rest)) = rest.split_once('`')
    {
        let list = rest
            .trim_start_matches([',', ' '])
            .strip_prefix("expected ")
            .unwrap_or("");
        let list = list.strip_prefix("one of ").unwrap_or(list);
        let listed = if rest.contains("there are no variants") {
            Vec::new()
        } else {
            names(list)
        };
        return unknown_value(word, listed.iter().map(String::as_str));
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((found, expected)) = rest.split_once(", expected ")
        {
            return format!(
                "expected {}, found {}",
                expected_words(expected.trim()),
                found_words(found.trim())
            );
        }
    }
    if let Some(rest) = message.strip_prefix("invalid length ")
        && let Some((len, expected)) = rest.split_once(", expected ")
    {
        return format!(
            "found {len} {}; expected {}",
            if len.trim() == "1" { "item" } else { "items" },
            expected_words(expected.trim())
        );
    }
    if message.starts_with("invalid boolean") {
        return "expected true or false".into();
    }
    if message.starts_with("externally tagged enum") {
        return "expected one of the names this field takes, found a list".into();
    }
    plain_words(message)
}

/// The parser's limits, as a file's author counts.
fn budget_words(breach: &BudgetBreach) -> String {
    match breach {
        BudgetBreach::Depth { depth } => format!(
            "the document nests too deeply (more than {} levels); a scenario nests only a few levels",
            depth.saturating_sub(1)
        ),
        BudgetBreach::Documents { .. } => {
            "the file holds more than one YAML document (a `---` line starts another); a scenario is one document".into()
        }
        BudgetBreach::Aliases { .. } | BudgetBreach::Anchors { .. } => {
            "anchors and aliases expand to too much data (too many of them); expected a scenario without alias bombs".into()
        }
        BudgetBreach::Events { .. } | BudgetBreach::Nodes { .. } => {
            "the document is too large (too many values); a scenario has a few hundred".into()
        }
        BudgetBreach::ScalarBytes { .. } => {
            "the document is too large (too much text in its values)".into()
        }
        _ => "the document is too large".into(),
    }
}

/// A YAML node kind the parser expected, in YAML terms.
fn node_words(expected: &str) -> String {
    match expected {
        "sequence start" => "a list".into(),
        "mapping start" => "a mapping (field: value lines, or { field: value })".into(),
        "string scalar" | "scalar" => "a single value (text or a number)".into(),
        other => plain_words(other),
    }
}

/// What serde says it expected, without Rust types.
fn expected_words(expected: &str) -> String {
    if let Some(words) = type_words(expected) {
        return words.to_string();
    }
    match expected {
        "a string" | "a borrowed string" | "string" => "text".into(),
        "a boolean" | "bool" => "true or false".into(),
        "a sequence" | "sequence" => "a list".into(),
        "a map" | "map" => "a mapping".into(),
        "option" => "a value or null".into(),
        "unit" => "nothing".into(),
        other if other.starts_with("struct ") => "a mapping of fields".into(),
        other if other.starts_with("enum ") => "one of the names this field takes".into(),
        other => plain_words(other),
    }
}

/// What serde says it found (`integer `5``, `floating point `1.5``,
/// `string "x"`, `sequence`), in YAML terms.
fn found_words(unexpected: &str) -> String {
    // A float as serde writes it (`100000000000000000000000.0` for a 1e23
    // read from a 23-digit number) in its compact spelling (`1e23`), which
    // `load::as_written` puts back as the file wrote it.
    if let Some(v) = unexpected.strip_prefix("floating point ")
        && let Ok(read) = v.trim_matches('`').parse::<f64>()
    {
        return crate::human::compact(read);
    }
    for prefix in ["integer ", "floating point ", "boolean ", "char "] {
        if let Some(v) = unexpected.strip_prefix(prefix) {
            return v.trim_matches('`').to_string();
        }
    }
    if let Some(v) = unexpected.strip_prefix("string ") {
        return format!("`{}`", super::error::clip(v.trim_matches('"')));
    }
    match unexpected {
        "sequence" => "a list".into(),
        "map" => "a mapping".into(),
        "unit value" | "unit" | "null" => "nothing (null)".into(),
        other => plain_words(other),
    }
}

/// The plain words for a Rust number or boolean type name.
pub(crate) fn type_words(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "u8" => "a whole number from 0 to 255",
        "u16" => "a whole number from 0 to 65535",
        "u32" => "a whole number from 0 to 4294967295",
        "u64" | "usize" | "u128" => "a whole number from 0 to 18446744073709551615",
        "i8" => "a whole number from -128 to 127",
        "i16" => "a whole number from -32768 to 32767",
        "i32" => "a whole number from -2147483648 to 2147483647",
        "i64" | "isize" | "i128" => {
            "a whole number from -9223372036854775808 to 9223372036854775807"
        }
        "f32" | "f64" | "floating point" | "float" => "a number",
        "bool" => "true or false",
        "char" => "a single character",
        _ => return None,
    })
}

/// `message` with every Rust number type name that stands as a word
/// (`u32`, `f64`, `usize`, ...) replaced by what it means.
pub fn plain_words(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match type_words(word) {
            Some(w) if word != "bool" && word != "char" => out.push_str(w),
            _ => out.push_str(word),
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Levenshtein distance, by characters (two rows; inputs are short).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `word` within edit distance 2 (and closer
/// than the word's own length, so `x` does not suggest `rate`).
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= 2 && d < word.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Adds a suggestion to serde's "unknown field `x`, expected one of a, b"
/// and "unknown value `x`; expected one of: ..." messages (serde's
/// "unknown variant" reworded by [`serde_words`]), and replaces terse
/// number-type errors ("invalid u32") with what was expected and found.
pub fn improve_message(message: &str, found: Option<&str>) -> String {
    let clipped = found.map(super::error::clip);
    let found = clipped.as_deref();
    if let Some(better) = number_message(message, found) {
        return better;
    }
    if message.contains("recursion limit") {
        return "the document nests too deeply; a scenario nests only a few levels".into();
    }
    let mut message = serde_words(message);
    if let Some(text) = found
        && message.starts_with("expected ")
        && !message.contains(", found ")
        && !message.contains("; ")
    {
        message = format!("{message}, found `{text}`");
    }
    let Some((word, candidates)) = unknown_name(&message) else {
        return message;
    };
    match did_you_mean(word, candidates.iter().copied()) {
        Some(best) => format!("{message}; did you mean `{best}`?"),
        None => message.clone(),
    }
}

/// The unknown word and the expected names of an "unknown field/variant"
/// message.
fn unknown_name(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown value `"))?;
    let (word, rest) = rest.split_once('`')?;
    let (_, expected) = rest.split_once("expected ")?;
    let expected = expected
        .strip_prefix("one of: ")
        .or_else(|| expected.strip_prefix("one of "))
        .unwrap_or(expected);
    let names = expected
        .split(", ")
        .map(|n| n.trim().trim_matches('`'))
        .filter(|n| !n.is_empty())
        .collect();
    Some((word, names))
}

fn number_message(message: &str, found: Option<&str>) -> Option<String> {
    let what = type_words(message.strip_prefix("invalid ")?)?;
    Some(match found {
        Some(text) => format!("expected {what}, found `{text}`"),
        None => format!("expected {what}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kidn", "kind"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("capacity", "capacity"), 0);
        assert_eq!(edit_distance("capcity", "capacity"), 1);
    }

    #[test]
    fn suggests_close_names_only() {
        let m = improve_message(
            "unknown field `kidn`, expected one of kind, base, multiplier, cap",
            None,
        );
        assert!(m.ends_with("; did you mean `kind`?"), "{m}");
        let m = improve_message(
            "unknown variant `fulll`, expected one of `none`, `full`",
            None,
        );
        assert_eq!(
            m,
            "unknown value `fulll`; expected one of: none, full; did you mean `full`?"
        );
        let m = improve_message("unknown field `zzzzzz`, expected one of kind, base", None);
        assert!(!m.contains("did you mean"));
        let m = improve_message("unknown field `capcity`, expected `capacity`", None);
        assert!(m.ends_with("did you mean `capacity`?"), "{m}");
    }

    /// serde's templates, as serde_json and serde's derive write them,
    /// never reach a user as they are.
    #[test]
    fn rewords_serde_templates() {
        for (raw, plain) in [
            (
                "unknown variant `x`, expected `a` or `b`",
                "unknown value `x`; expected one of: a, b",
            ),
            (
                "invalid type: integer `5`, expected a string",
                "expected text, found 5",
            ),
            (
                "invalid type: sequence, expected u32",
                "expected a whole number from 0 to 4294967295, found a list",
            ),
            (
                "invalid value: integer `-1`, expected u64",
                "expected a whole number from 0 to 18446744073709551615, found -1",
            ),
            (
                "invalid type: unit value, expected struct Backoff",
                "expected a mapping of fields, found nothing (null)",
            ),
            (
                "invalid length 2, expected a tuple of size 3",
                "found 2 items; expected a tuple of size 3",
            ),
            ("invalid boolean", "expected true or false"),
            (
                "externally tagged enum expected scalar or mapping",
                "expected one of the names this field takes, found a list",
            ),
        ] {
            let m = serde_words(raw);
            assert_eq!(m, plain, "{raw}");
            for leak in [
                "unknown variant",
                "invalid type",
                "invalid value",
                "externally tagged",
                "u32",
                "u64",
                "struct ",
            ] {
                assert!(!m.contains(leak), "{m}");
            }
        }
    }

    #[test]
    fn explains_number_errors() {
        assert_eq!(
            improve_message("invalid u32", Some("lots")),
            "expected a whole number from 0 to 4294967295, found `lots`"
        );
        assert_eq!(
            improve_message("something else", Some("x")),
            "something else"
        );
        assert_eq!(
            plain_words("invalid value: integer `-1`, expected u64; f64 or usize"),
            "invalid value: integer `-1`, expected a whole number from 0 to 18446744073709551615; a number or a whole number from 0 to 18446744073709551615"
        );
        assert_eq!(
            plain_words("u32x bool_u8 u8"),
            "u32x bool_u8 a whole number from 0 to 255"
        );
    }
}
