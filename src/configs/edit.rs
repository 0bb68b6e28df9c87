//! Minimal textual edits of a configuration file: a value replaced in its
//! own span, written in the style it had (quoted stays quoted), or a
//! missing key added after the last entry of its mapping with the
//! mapping's indentation (block YAML) or inline (JSON, flow YAML). Nothing
//! else of the file moves: comments, key order, blank lines and
//! formatting are kept byte for byte.

use std::ops::Range;

use super::tree::{Kind, Node, Style, Syntax};

/// A value to write.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// Text that a reader takes as a string (quoted where needed).
    Str(String),
    /// A number or boolean, written bare.
    Bare(String),
    /// A list of values, written inline.
    List(Vec<Lit>),
}

/// Replace `range` of the text with `text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub text: String,
}

/// Applies non-overlapping edits (in any order).
pub fn apply(text: &str, mut edits: Vec<Edit>) -> Result<String, String> {
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    for w in edits.windows(2) {
        if w[0].range.end > w[1].range.start {
            return Err("two changes to the same part of the file".into());
        }
    }
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.range.start]);
        out.push_str(&e.text);
        at = e.range.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

pub(crate) fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Whether a YAML plain scalar `s` reads back as the string `s`.
fn yaml_plain_ok(s: &str) -> bool {
    let looks_typed = matches!(
        s,
        "" | "~"
            | "null"
            | "Null"
            | "NULL"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
    ) || s.parse::<f64>().is_ok();
    !looks_typed
        && !s.starts_with([
            '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%',
            '@', '`', ' ',
        ])
        && !s.ends_with([' ', ':'])
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.contains(['\n', '\t'])
}

/// `lit` as YAML or JSON text; `style` is the style of the value it
/// replaces (kept when it can hold the value).
pub fn render(lit: &Lit, syntax: Syntax, style: Option<Style>) -> String {
    match (lit, syntax) {
        (Lit::Bare(b), _) => b.clone(),
        (Lit::Str(s), Syntax::Json) => json_string(s),
        (Lit::Str(s), Syntax::Ini) => s.clone(),
        (Lit::Str(s), Syntax::Yaml) => match style {
            Some(Style::Single) if !s.contains('\n') => format!("'{}'", s.replace('\'', "''")),
            Some(Style::Double) => json_string(s),
            _ if yaml_plain_ok(s) => s.clone(),
            _ => json_string(s),
        },
        (Lit::List(items), _) => {
            let inner: Vec<String> = items.iter().map(|i| render(i, syntax, style)).collect();
            format!("[{}]", inner.join(", "))
        }
    }
}

/// The edit that writes `lit` in place of `node`'s value. A block list is
/// rewritten as a block list at the same indentation.
pub fn replace(text: &str, syntax: Syntax, node: &Node, lit: &Lit) -> Edit {
    let new = match (&node.kind, lit) {
        (Kind::Seq { flow: false, items }, Lit::List(values)) if syntax == Syntax::Yaml => {
            let style = items.first().and_then(Node::style);
            let col = node.pos.1 as usize - 1;
            let pad = " ".repeat(col);
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let item = render(v, syntax, style);
                    if i == 0 {
                        format!("- {item}")
                    } else {
                        format!("\n{pad}- {item}")
                    }
                })
                .collect::<String>()
        }
        (Kind::Seq { items, .. }, Lit::List(_)) => {
            let style = items.first().and_then(Node::style);
            let multiline = text[node.span.clone()].contains('\n');
            match (multiline, lit, items.first()) {
                (true, Lit::List(values), Some(first)) => {
                    // One item per line, as the file had them.
                    let line_start = text[..first.span.start].rfind('\n').map_or(0, |i| i + 1);
                    let pad = &text[line_start..first.span.start];
                    let close_start = text[..node.span.end - 1].rfind('\n').map_or(0, |i| i + 1);
                    let close_pad = &text[close_start..node.span.end - 1];
                    let close_pad = if close_pad.trim().is_empty() {
                        close_pad
                    } else {
                        ""
                    };
                    let inner: Vec<String> = values
                        .iter()
                        .map(|v| format!("{pad}{}", render(v, syntax, style)))
                        .collect();
                    format!("[\n{}\n{close_pad}]", inner.join(",\n"))
                }
                _ => render(lit, syntax, style),
            }
        }
        _ => render(lit, syntax, node.style()),
    };
    Edit {
        range: node.span.clone(),
        text: new,
    }
}

/// A value to add under a mapping: a scalar, or a mapping of more.
#[derive(Clone, Debug, PartialEq)]
pub enum Ins {
    Leaf(Lit),
    Map(Vec<(String, Ins)>),
}

impl Ins {
    /// Adds `lit` at `keys` below this mapping (creating mappings).
    pub fn add(entries: &mut Vec<(String, Ins)>, keys: &[String], lit: Lit) {
        let Some((first, rest)) = keys.split_first() else {
            return;
        };
        if rest.is_empty() {
            entries.retain(|(k, _)| k != first);
            entries.push((first.clone(), Ins::Leaf(lit)));
            return;
        }
        let i = match entries
            .iter()
            .position(|(k, v)| k == first && matches!(v, Ins::Map(_)))
        {
            Some(i) => i,
            None => {
                entries.push((first.clone(), Ins::Map(Vec::new())));
                entries.len() - 1
            }
        };
        if let Ins::Map(inner) = &mut entries[i].1 {
            Ins::add(inner, rest, lit);
        }
    }
}

fn key_text(syntax: Syntax, k: &str) -> String {
    match syntax {
        Syntax::Json => json_string(k),
        Syntax::Ini => k.to_string(),
        Syntax::Yaml if yaml_plain_ok(k) => k.to_string(),
        Syntax::Yaml => json_string(k),
    }
}

fn inline(syntax: Syntax, v: &Ins) -> String {
    match v {
        Ins::Leaf(l) => render(l, syntax, None),
        Ins::Map(entries) => {
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", key_text(syntax, k), inline(syntax, v)))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        }
    }
}

fn block(syntax: Syntax, entries: &[(String, Ins)], col: usize, out: &mut String) {
    for (k, v) in entries {
        out.push_str(&" ".repeat(col));
        out.push_str(&key_text(syntax, k));
        out.push(':');
        match v {
            Ins::Leaf(l) => {
                out.push(' ');
                out.push_str(&render(l, syntax, None));
                out.push('\n');
            }
            Ins::Map(inner) => {
                out.push('\n');
                block(syntax, inner, col + 2, out);
            }
        }
    }
}

/// The edit that adds `entries` to the mapping `map`, after its last
/// entry: one line each at the mapping's indentation (block YAML), or
/// inline, one per line when the mapping has one per line (JSON, flow).
pub fn insert(
    text: &str,
    syntax: Syntax,
    map: &Node,
    entries: &[(String, Ins)],
) -> Result<Edit, String> {
    let Kind::Map {
        entries: have,
        flow,
    } = &map.kind
    else {
        return Err("not a mapping".into());
    };
    if syntax == Syntax::Ini {
        return ini_insert(text, map, have, entries);
    }
    if *flow {
        let items: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("{}: {}", key_text(syntax, k), inline(syntax, v)))
            .collect();
        let Some(last) = have.last() else {
            return Ok(Edit {
                range: map.span.clone(),
                text: format!("{{ {} }}", items.join(", ")),
            });
        };
        let first = &have[0];
        let at = last.value.span.end;
        let new = if first.key_pos.0 != map.pos.0 {
            let line_start = text[..first.key_span.start]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let pad = &text[line_start..first.key_span.start];
            items
                .iter()
                .map(|i| format!(",\n{pad}{i}"))
                .collect::<String>()
        } else {
            items.iter().map(|i| format!(", {i}")).collect::<String>()
        };
        return Ok(Edit {
            range: at..at,
            text: new,
        });
    }
    let Some(last) = have.last() else {
        return Err("an empty block mapping".into());
    };
    let col = have[0].key_pos.1 as usize - 1;
    let mut lines = String::new();
    block(syntax, entries, col, &mut lines);
    let end = last.value.span.end.max(last.key_span.end);
    let at = if end > 0 && text.as_bytes().get(end - 1) == Some(&b'\n') {
        end
    } else {
        match text[end..].find('\n') {
            Some(i) => end + i + 1,
            None => {
                return Ok(Edit {
                    range: text.len()..text.len(),
                    text: format!("\n{}", lines.trim_end_matches('\n')),
                });
            }
        }
    };
    Ok(Edit {
        range: at..at,
        text: lines,
    })
}

/// INI: `key = value` lines after the section's last setting (or its
/// header), at the indentation of its settings.
fn ini_insert(
    text: &str,
    map: &Node,
    have: &[super::tree::Entry],
    entries: &[(String, Ins)],
) -> Result<Edit, String> {
    let col = have.first().map_or(0, |e| e.key_pos.1 as usize - 1);
    let mut lines = String::new();
    for (k, v) in entries {
        match v {
            Ins::Leaf(l) => {
                lines += &format!(
                    "{}{k} = {}\n",
                    " ".repeat(col),
                    render(l, Syntax::Ini, None)
                );
            }
            Ins::Map(_) => return Err(format!("`{k}`: an INI section holds no nested settings")),
        }
    }
    let end = map.span.end;
    Ok(match text[end..].find('\n') {
        Some(i) => Edit {
            range: end + i + 1..end + i + 1,
            text: lines,
        },
        None => Edit {
            range: text.len()..text.len(),
            text: format!("\n{}", lines.trim_end_matches('\n')),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::tree::Doc;
    use super::*;

    fn yaml(src: &str) -> Doc {
        Doc::parse(src, Syntax::Yaml).unwrap()
    }

    #[test]
    fn replaces_in_the_same_style() {
        let src = "a: 1 # keep\nb: '2s'\nc: \"x\"\nd: [x, y]\n";
        let doc = yaml(src);
        let r = &doc.roots[0];
        let edits = vec![
            replace(
                src,
                Syntax::Yaml,
                r.get("a").unwrap(),
                &Lit::Bare("3".into()),
            ),
            replace(
                src,
                Syntax::Yaml,
                r.get("b").unwrap(),
                &Lit::Str("5s".into()),
            ),
            replace(
                src,
                Syntax::Yaml,
                r.get("c").unwrap(),
                &Lit::Str("y".into()),
            ),
            replace(
                src,
                Syntax::Yaml,
                r.get("d").unwrap(),
                &Lit::List(vec![Lit::Str("z".into())]),
            ),
        ];
        assert_eq!(
            apply(src, edits).unwrap(),
            "a: 3 # keep\nb: '5s'\nc: \"y\"\nd: [z]\n"
        );
    }

    #[test]
    fn inserts_into_block_and_flow_mappings() {
        let src =
            "top:\n  inner:\n    a: 1\n    list:\n      - x\n  # trailing comment\nother: {p: 1}\n";
        let doc = yaml(src);
        let inner = doc.roots[0].get("top").unwrap().get("inner").unwrap();
        let e1 = insert(
            src,
            Syntax::Yaml,
            inner,
            &[(
                "b".into(),
                Ins::Map(vec![("c".into(), Ins::Leaf(Lit::Bare("2".into())))]),
            )],
        )
        .unwrap();
        let other = doc.roots[0].get("other").unwrap();
        let e2 = insert(
            src,
            Syntax::Yaml,
            other,
            &[("q".into(), Ins::Leaf(Lit::Str("0.5s".into())))],
        )
        .unwrap();
        let out = apply(src, vec![e1, e2]).unwrap();
        assert_eq!(
            out,
            "top:\n  inner:\n    a: 1\n    list:\n      - x\n    b:\n      c: 2\n  # trailing comment\nother: {p: 1, q: 0.5s}\n"
        );
        yaml(&out);
    }

    #[test]
    fn inserts_into_json_keeping_its_layout() {
        let src = "{\n  \"a\": {\n    \"x\": 1\n  },\n  \"b\": {}\n}\n";
        let doc = Doc::parse(src, Syntax::Json).unwrap();
        let a = doc.roots[0].get("a").unwrap();
        let b = doc.roots[0].get("b").unwrap();
        let e1 = insert(
            src,
            Syntax::Json,
            a,
            &[("y".into(), Ins::Leaf(Lit::Str("2s".into())))],
        )
        .unwrap();
        let mut nested = Vec::new();
        Ins::add(
            &mut nested,
            &["z".to_string(), "w".to_string()],
            Lit::Bare("3".into()),
        );
        let e2 = insert(src, Syntax::Json, b, &nested).unwrap();
        let out = apply(src, vec![e1, e2]).unwrap();
        assert_eq!(
            out,
            "{\n  \"a\": {\n    \"x\": 1,\n    \"y\": \"2s\"\n  },\n  \"b\": { \"z\": { \"w\": 3 } }\n}\n"
        );
        Doc::parse(&out, Syntax::Json).unwrap();
    }

    #[test]
    fn plain_yaml_strings_that_would_change_type_are_quoted() {
        assert_eq!(render(&Lit::Str("5".into()), Syntax::Yaml, None), "\"5\"");
        assert_eq!(
            render(&Lit::Str("true".into()), Syntax::Yaml, None),
            "\"true\""
        );
        assert_eq!(
            render(&Lit::Str("5xx,reset".into()), Syntax::Yaml, None),
            "5xx,reset"
        );
        assert_eq!(
            render(&Lit::Str("a: b".into()), Syntax::Yaml, None),
            "\"a: b\""
        );
    }
}
