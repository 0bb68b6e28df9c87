//! Friendlier parser messages: "did you mean `kind`?" for a misspelt field
//! or variant name, and plain words for number-type errors.

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
/// and "unknown variant `x`, expected ..." messages, and replaces terse
/// number-type errors ("invalid u32") with what was expected and found.
pub fn improve_message(message: &str, found: Option<&str>) -> String {
    if let Some(better) = number_message(message, found)
        .or_else(|| budget_message(message))
        .or_else(|| duplicate_message(message))
    {
        return better;
    }
    let Some((word, candidates)) = unknown_name(message) else {
        return message.to_string();
    };
    match did_you_mean(word, candidates.iter().copied()) {
        Some(best) => format!("{message}; did you mean `{best}`?"),
        None => message.to_string(),
    }
}

/// The unknown word and the expected names of an "unknown field/variant"
/// message.
fn unknown_name(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))?;
    let (word, rest) = rest.split_once('`')?;
    let (_, expected) = rest.split_once("expected ")?;
    let expected = expected.strip_prefix("one of ").unwrap_or(expected);
    let names = expected
        .split(", ")
        .map(|n| n.trim().trim_matches('`'))
        .filter(|n| !n.is_empty())
        .collect();
    Some((word, names))
}

/// serde-saphyr's duplicate-key message names a developer option.
fn duplicate_message(message: &str) -> Option<String> {
    let rest = message.strip_prefix("duplicate mapping key: ")?;
    let key = rest
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or(rest);
    Some(format!("`{key}` is given twice; expected each field once"))
}

/// Resource-limit errors in words a scenario author can act on.
fn budget_message(message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    if lower.contains("alias") && (lower.contains("limit") || lower.contains("budget")) {
        Some(format!(
            "anchors and aliases expand to too much data ({message}); expected a scenario without alias bombs"
        ))
    } else if lower.contains("recursion limit")
        || lower.contains("depth")
        || lower.contains("nesting")
    {
        Some(format!(
            "the document nests too deeply ({message}); a scenario nests only a few levels"
        ))
    } else if lower.starts_with("budget") || lower.contains("budget exceeded") {
        Some(format!("the document is too large ({message})"))
    } else {
        None
    }
}

fn number_message(message: &str, found: Option<&str>) -> Option<String> {
    let ty = message.strip_prefix("invalid ")?;
    let what = match ty {
        "u8" | "u16" | "u32" | "u64" | "usize" => format!("a whole number >= 0 ({ty})"),
        "i8" | "i16" | "i32" | "i64" | "isize" => format!("a whole number ({ty})"),
        "f32" | "f64" => "a number".to_string(),
        "bool" => "true or false".to_string(),
        _ => return None,
    };
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
        assert!(m.ends_with("did you mean `full`?"), "{m}");
        let m = improve_message("unknown field `zzzzzz`, expected one of kind, base", None);
        assert!(!m.contains("did you mean"));
        let m = improve_message("unknown field `capcity`, expected `capacity`", None);
        assert!(m.ends_with("did you mean `capacity`?"), "{m}");
    }

    #[test]
    fn explains_number_errors() {
        assert_eq!(
            improve_message("invalid u32", Some("lots")),
            "expected a whole number >= 0 (u32), found `lots`"
        );
        assert_eq!(
            improve_message("something else", Some("x")),
            "something else"
        );
    }
}
