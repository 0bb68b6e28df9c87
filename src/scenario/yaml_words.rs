//! The YAML reader's syntax errors in a scenario author's words. The
//! scanner says what state it was in ("while scanning an anchor or
//! alias, did not find expected alphabetic or numeric character"); an
//! author needs what in the text causes it and how to write it instead
//! (a value that starts with `*` is an alias: quote it). Used for scenario
//! files and `--set` values alike.

/// The plain words for the YAML reader's message `msg`, if it is one of
/// the scanner's or parser's syntax errors stormsim knows.
pub fn syntax_words(msg: &str) -> Option<String> {
    let has = |s: &str| msg.contains(s);
    if let Some(rest) = msg.strip_prefix("unexpected character: `") {
        let c = rest.strip_suffix('\'').unwrap_or(rest);
        // A control character comes escaped (`\u{0}`): not one to quote.
        return Some(if c.starts_with('\\') {
            format!(
                "the text holds the control character `{c}`, which YAML does not allow; remove it"
            )
        } else {
            format!(
                "`{c}` is a character YAML reserves and cannot start a value; quote the value (\"{c}...\")"
            )
        });
    }
    let words = if has("while scanning an anchor or alias") {
        "a value that starts with `*` is a YAML alias, and one that starts with `&` an anchor, each followed by a name; to mean the text itself, quote it (\"*\")"
    } else if has("mapping values are not allowed") || has("illegal placement of ':'") {
        "a `: ` inside a value starts a mapping there; quote the value if the colon is part of its text, or check the indentation"
    } else if has("cannot start any token") {
        "a value starts with a character YAML reserves (`@`, a backtick, `%`); quote the value"
    } else if has("while scanning a tag")
        || has("while parsing a tag")
        || has("handle wasn't declared")
    {
        "a value that starts with `!` is a YAML tag, which stormsim does not support; quote the value if `!` is part of its text"
    } else if has("unexpected EOF while parsing a flow sequence") || has("unclosed bracket '['") {
        "a list written in brackets (`[a, b]`) is never closed: its `]` is missing"
    } else if has("unexpected EOF while parsing a flow mapping")
        || has("implicit flow mapping")
        || has("unclosed bracket '{'")
    {
        "a mapping written in braces (`{ a: 1 }`) is never closed: its `}` is missing"
    } else if has("flow sequence, expected ',' or ']'") {
        "in a list written in brackets (`[a, b]`), items are separated by `,` and the list ends with `]`; a `,` or the `]` is missing"
    } else if has("flow mapping, did not find expected ',' or '}'") {
        "in a mapping written in braces (`{ a: 1, b: 2 }`), fields are separated by `,` and it ends with `}`; a `,` or the `}` is missing"
    } else if has("mismatched bracket") {
        "a bracket is closed by the other kind (`[` by `}`, or `{` by `]`)"
    } else if has("misplaced bracket") {
        "a closing bracket (`]` or `}`) has no opening one"
    } else if has("unclosed quote") || has("quoted scalar, found unexpected end") {
        "a quoted value is never closed: its closing quote is missing"
    } else if has("unknown escape character") {
        "a double-quoted value holds an unknown escape (a `\\` the YAML reader does not know); write `\\\\` for a backslash, or use single quotes"
    } else if has("surrogate") || has("hexadecimal number") || has("Unicode character escape") {
        "a double-quoted value holds an invalid `\\u` or `\\x` escape (not hexadecimal digits, or half of a UTF-16 pair); write the character itself"
    } else if has("tab") && (has("indentation") || has("disallowed")) {
        "a tab is used to indent; YAML indents with spaces only"
    } else if has("block mapping, did not find expected key") || has("invalid indentation") {
        "the indentation is off: the fields of one mapping start in the same column, deeper than the field they belong to"
    } else if has("did not find expected '-' indicator")
        || has("block sequence entries are not allowed")
    {
        "a list item is out of place: items of one list each start with `- ` in the same column"
    } else if has("did not find expected node content") {
        "a value is missing where one is expected (or it starts with a character YAML reserves; quote it)"
    } else if has("simple key expected ':'") || has("simple key is no longer valid") {
        "a field name is not followed by `:` on its line"
    } else if has("unexpected EOF") || has("unexpected eof") {
        "the text ends in the middle of a value"
    } else {
        return None;
    };
    Some(words.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scanners_messages_are_explained() {
        let alias = syntax_words(
            "while scanning an anchor or alias, did not find expected alphabetic or numeric character",
        )
        .unwrap();
        assert!(alias.contains("quote it"), "{alias}");
        assert!(
            syntax_words("unclosed bracket '['")
                .unwrap()
                .contains("`]`")
        );
        assert_eq!(syntax_words("something else"), None);
        let nul = syntax_words("unexpected character: `\\u{0}'").unwrap();
        assert!(nul.contains("control character `\\u{0}`"), "{nul}");
        let at = syntax_words("unexpected character: `@'").unwrap();
        assert!(at.starts_with("`@` is a character YAML reserves"), "{at}");
    }
}
