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

/// Whether `text` ends its lines in CRLF (as its first line does).
pub fn is_crlf(text: &str) -> bool {
    text.find('\n').is_some_and(|i| text[..i].ends_with('\r'))
}

/// Gives the lines `edits` write the CRLF line endings of `text`, a CRLF
/// file (the edits are written with LF): a line stormsim adds ends like
/// the file's other lines.
pub fn crlf_edits(text: &str, edits: &mut [Edit]) {
    for e in edits.iter_mut() {
        let mut out = String::with_capacity(e.text.len() + 8);
        let mut prev_cr = text[..e.range.start].ends_with('\r');
        for c in e.text.chars() {
            if c == '\n' && !prev_cr {
                out.push('\r');
            }
            out.push(c);
            prev_cr = c == '\r';
        }
        e.text = out;
    }
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
    render_in(lit, syntax, style, false)
}

/// As [`render`]; `flow`: the value stands inside a YAML flow mapping or
/// list (`{ ... }`, `[ ... ]`), where a plain scalar ends at `,`, `[`,
/// `]`, `{`, `}` (and `:`), so a string holding one is quoted (YAML 1.2
/// §7.3.3, plain scalars in flow context).
pub fn render_in(lit: &Lit, syntax: Syntax, style: Option<Style>, flow: bool) -> String {
    match (lit, syntax) {
        (Lit::Bare(b), _) => b.clone(),
        (Lit::Str(s), Syntax::Json) => json_string(s),
        (Lit::Str(s), Syntax::Ini) => s.clone(),
        (Lit::Str(s), Syntax::Yaml) => match style {
            Some(Style::Single) if !s.contains('\n') => format!("'{}'", s.replace('\'', "''")),
            Some(Style::Double) => json_string(s),
            _ if yaml_plain_ok(s) && !(flow && s.contains([',', '[', ']', '{', '}', ':'])) => {
                s.clone()
            }
            _ => json_string(s),
        },
        (Lit::List(items), _) => {
            let inner: Vec<String> = items
                .iter()
                .map(|i| render_in(i, syntax, style, true))
                .collect();
            format!("[{}]", inner.join(", "))
        }
    }
}

/// The edit that writes `lit` in place of `node`'s value. A block list is
/// rewritten as a block list at the same indentation.
pub fn replace(text: &str, syntax: Syntax, node: &Node, lit: &Lit) -> Edit {
    replace_in(text, syntax, node, lit, false)
}

/// A block scalar (`|`, `>-`) holding one line of its own: the edit that
/// writes `value` as that line, the header (`|`, `>-`, its comment) and
/// whatever follows the scalar (the next key, comments, blank lines, the
/// file's last line break) kept. `None`: not such a scalar.
fn replace_block_scalar(text: &str, node: &Node, value: &str) -> Option<Edit> {
    if value.contains('\n') {
        return None;
    }
    let indent_of = |line: &str| line.len() - line.trim_start_matches(' ').len();
    let line_at = |b: usize| text[..b].rfind('\n').map_or(0, |i| i + 1);
    // The header line (`key: |`): where the span starts, or (a span that
    // starts at the content) the line above the content indented less.
    let header_start = if text[node.span.start..].starts_with(['|', '>']) {
        line_at(node.span.start)
    } else {
        let content = line_at(node.span.start);
        let n = indent_of(&text[content..]);
        let mut at = content;
        loop {
            if at == 0 {
                return None;
            }
            let prev = line_at(at - 1);
            let line = &text[prev..at - 1];
            if !line.trim().is_empty() && indent_of(line) < n {
                break prev;
            }
            at = prev;
        }
    };
    let header_end = header_start + text[header_start..].find('\n')?;
    let parent = indent_of(&text[header_start..header_end]);
    // The content lines: indented deeper than the header's line; blank
    // lines between them belong to the scalar, blank lines after it not.
    let mut at = header_end + 1;
    let mut first: Option<(usize, usize)> = None;
    let mut last_end = None;
    while at < text.len() {
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let line = &text[at..end];
        if line.trim().is_empty() {
            at = end + 1;
            continue;
        }
        let n = indent_of(line);
        if n <= parent {
            break;
        }
        if first.is_none() {
            first = Some((at, n));
        }
        last_end = Some(end);
        at = end + 1;
    }
    let ((start, n), end) = (first?, last_end?);
    Some(Edit {
        range: start + n..end,
        text: value.to_string(),
    })
}

/// As [`replace`]; `flow`: `node` stands inside a YAML flow collection.
pub fn replace_in(text: &str, syntax: Syntax, node: &Node, lit: &Lit, flow: bool) -> Edit {
    if let (
        Kind::Scalar {
            style: Style::Block,
            ..
        },
        Lit::Str(v) | Lit::Bare(v),
    ) = (&node.kind, lit)
        && syntax == Syntax::Yaml
        && let Some(e) = replace_block_scalar(text, node, v)
    {
        return e;
    }
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
                _ => {
                    // `[ a, b ]` keeps its inner spaces.
                    let was = &text[node.span.clone()];
                    let out = render_in(lit, syntax, style, flow);
                    if was.starts_with("[ ") && was.ends_with(" ]") && out.len() > 2 {
                        format!("[ {} ]", &out[1..out.len() - 1])
                    } else {
                        out
                    }
                }
            }
        }
        (
            Kind::Scalar {
                style: Style::Plain,
                ..
            },
            Lit::Bare(v),
        ) => decimals_as(&text[node.span.clone()], v)
            .unwrap_or_else(|| render_in(lit, syntax, node.style(), flow)),
        _ => render_in(lit, syntax, node.style(), flow),
    };
    Edit {
        range: node.span.clone(),
        text: new,
    }
}

/// The number `new` written with at least as many decimals as `was`,
/// the number it replaces, when `was` has fixed decimals (`2.0` tuned to
/// 3 is written `3.0`, `0.10` tuned to 0.25 `0.25`, to 0.125 `0.125`):
/// a number keeps its style as a duration does. `None` when either is
/// not a plain decimal number (an exponent, a word) or `was` has none.
fn decimals_as(was: &str, new: &str) -> Option<String> {
    /// The decimals of a plain decimal number (`""` for a whole one).
    fn decimals(t: &str) -> Option<&str> {
        let digits = t.strip_prefix('-').unwrap_or(t);
        let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        (!whole.is_empty() && all_digits(whole) && all_digits(frac)).then_some(frac)
    }
    let was_frac = decimals(was.trim())?;
    let new_frac = decimals(new)?;
    if was_frac.is_empty() || new_frac.len() >= was_frac.len() {
        return None;
    }
    let point = if new_frac.is_empty() { "." } else { "" };
    Some(format!(
        "{new}{point}{}",
        "0".repeat(was_frac.len() - new_frac.len())
    ))
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
        Ins::Leaf(l) => render_in(l, syntax, None, true),
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
    // The mapping's own entries: those a `<<` merge key brought in have
    // their text (and key) in the merged anchor, elsewhere in the file.
    let have: Vec<&super::tree::Entry> = have
        .iter()
        .filter(|e| map.span.start <= e.key_span.start && e.key_span.start < map.span.end)
        .collect();
    // A mapping of only a `<<` merge key (`inventory: {<<: *defaults}`):
    // the new keys are its own, after the merge key, indented like it
    // (or after it in the braces); they override the merged ones.
    if have.is_empty() && !map.entries().is_empty() {
        return merge_only_insert(text, syntax, map, *flow, entries);
    }
    // The end of an entry's text: its value's, unless the value is an
    // alias (a copy of text that stands elsewhere): then its key's.
    let end_of = |e: &super::tree::Entry| {
        if e.value.aliased {
            e.key_span.end
        } else {
            e.value.span.end.max(e.key_span.end)
        }
    };
    if *flow {
        // A YAML flow mapping whose keys are in double quotes is JSON (an
        // Envoy, Istio or Linkerd file may be JSON, which YAML reads): the
        // new entries are written as JSON too, key quoted and value in
        // JSON, so that the file stays valid JSON.
        // (JSON is YAML, so a flow mapping of a YAML file may take JSON
        // whatever it is: an empty one is taken as JSON when the whole
        // file is written as JSON.)
        let json_like = match have.first() {
            Some(e) => text[e.key_span.clone()].starts_with('"'),
            None => text.trim_start().starts_with(['{', '[']),
        };
        let syntax = if syntax == Syntax::Yaml && json_like {
            Syntax::Json
        } else {
            syntax
        };
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
        let at = end_of(last);
        let new = if first.key_pos.0 != map.pos.0 {
            let line_start = text[..first.key_span.start]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let pad = &text[line_start..first.key_span.start];
            // The last entry's line ends in a comment (`"a": 1, // why`):
            // the comment stays with its entry, and the new entries go on
            // the lines below it (with a trailing comma when the last
            // entry had one, as the file writes them).
            if let Some(le) = text[at..].find('\n').map(|i| at + i) {
                let rest = &text[at..le];
                let comma = rest.trim_start().starts_with(',');
                let after = rest.trim_start().trim_start_matches(',').trim_start();
                let comment = after.starts_with("//")
                    || (after.starts_with("/*")
                        && after.trim_end().ends_with("*/")
                        && after.find("*/").map(|i| i + 2) == Some(after.trim_end().len()));
                if comment {
                    let new: String = if comma {
                        items.iter().map(|i| format!("\n{pad}{i},")).collect()
                    } else {
                        let lines: Vec<String> =
                            items.iter().map(|i| format!("{pad}{i}")).collect();
                        format!(",{rest}\n{}", lines.join(",\n"))
                    };
                    let (range, text) = if comma { (le..le, new) } else { (at..le, new) };
                    return Ok(Edit { range, text });
                }
            }
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
    let end = end_of(last);
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

/// [`insert`] into a mapping whose text holds only a `<<` merge key.
fn merge_only_insert(
    text: &str,
    syntax: Syntax,
    map: &Node,
    flow: bool,
    entries: &[(String, Ins)],
) -> Result<Edit, String> {
    let refuse = || {
        "the mapping holds only keys a `<<` merge key brings in, written in a way stormsim cannot add to; add a key of its own by hand first".to_string()
    };
    let own = &text[map.span.clone()];
    if flow {
        let close = own.rfind('}').ok_or_else(refuse)?;
        let at = map.span.start + own[..close].trim_end().len();
        let items: String = entries
            .iter()
            .map(|(k, v)| format!(", {}: {}", key_text(syntax, k), inline(syntax, v)))
            .collect();
        return Ok(Edit {
            range: at..at,
            text: items,
        });
    }
    if !own.starts_with("<<") {
        return Err(refuse());
    }
    let line_start = text[..map.span.start].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..map.span.start].chars().all(|c| c == ' ') {
        // `key: <<: …` cannot be; a `- <<: *a` item: its column.
        if !text[line_start..map.span.start]
            .trim_start()
            .starts_with('-')
        {
            return Err(refuse());
        }
    }
    let col = map.span.start - line_start;
    let mut lines = String::new();
    block(syntax, entries, col, &mut lines);
    let end = map.span.end.max(map.span.start + 2);
    Ok(lines_after(text, end, lines))
}

/// The edit that puts whole `lines` after the line holding byte `end`
/// (at the end of the file, on a new last line without a final newline,
/// when that line is the last).
fn lines_after(text: &str, end: usize, lines: String) -> Edit {
    match text[end..].find('\n') {
        Some(i) => Edit {
            range: end + i + 1..end + i + 1,
            text: lines,
        },
        None => Edit {
            range: text.len()..text.len(),
            text: format!("\n{}", lines.trim_end_matches('\n')),
        },
    }
}

/// The edit that adds `item` (text) after the last item of the flow or
/// JSON list `list`: on a line of its own at the items' indentation when
/// they stand one per line, else after `, `.
pub fn append_item(text: &str, list: &Node, item: &str) -> Result<Edit, String> {
    let Kind::Seq { items, flow: true } = &list.kind else {
        return Err("not a list written in brackets".into());
    };
    let Some(last) = items.last() else {
        return Err("an empty list".into());
    };
    let first = &items[0];
    let line_start = text[..first.span.start].rfind('\n').map_or(0, |i| i + 1);
    let pad = &text[line_start..first.span.start];
    let at = last.span.end;
    let sep = if pad.trim().is_empty() && first.pos.0 != list.pos.0 {
        format!(",\n{pad}")
    } else {
        ", ".to_string()
    };
    Ok(Edit {
        range: at..at,
        text: format!("{sep}{item}"),
    })
}

/// The edit that deletes the entry `index` of the mapping `map`, key and
/// value, and nothing else of the file. In a block mapping (YAML, and an
/// INI section) the entry's lines go whole, a comment at the end of them
/// with them (it is about the entry); the lines around it, comments
/// included, stay. In a flow mapping or JSON object the entry goes with
/// the comma that separates it from the next entry (or, for the last one,
/// from the previous), so the others keep their layout. Refused for the
/// only entry of its mapping (what is left would read as empty, a value
/// of its own), for an entry a `<<` merge key brings in (its text is the
/// anchor's), and for a block entry that shares its line with something
/// before it (`- key: value`, the first key of a list item).
pub fn remove(text: &str, map: &Node, index: usize) -> Result<Edit, String> {
    let Kind::Map { entries, flow } = &map.kind else {
        return Err("not a mapping".into());
    };
    let own: Vec<(usize, &super::tree::Entry)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| map.span.start <= e.key_span.start && e.key_span.start < map.span.end)
        .collect();
    let Some(at) = own.iter().position(|(i, _)| *i == index) else {
        return Err("the key comes from a YAML merge key (its text is the anchor's); remove it there by hand".into());
    };
    if own.len() == 1 {
        return Err("it is the only key of its mapping; remove the mapping by hand".into());
    }
    let e = own[at].1;
    let end = e.value.span.end.max(e.key_span.end);
    if *flow {
        let range = match own.get(at + 1) {
            Some((_, next)) => e.key_span.start..next.key_span.start,
            None => {
                let prev = own[at - 1].1;
                prev.value.span.end.max(prev.key_span.end)..end
            }
        };
        return Ok(Edit {
            range,
            text: String::new(),
        });
    }
    let line_start = text[..e.key_span.start].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..e.key_span.start].trim().is_empty() {
        return Err("the key shares its line with what comes before it; remove it by hand".into());
    }
    let line_end = match text[end..].find('\n') {
        Some(i) => end + i + 1,
        None => text.len(),
    };
    // A block value's text ends with its last child, which may end its
    // line already.
    let line_end = if end > 0 && text.as_bytes()[end - 1] == b'\n' {
        end
    } else {
        line_end
    };
    Ok(Edit {
        range: line_start..line_end,
        text: String::new(),
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
    Ok(lines_after(text, end, lines))
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
    fn removes_an_entry_and_only_it() {
        let src = "top:\n  # about a\n  a: 1 # why\n  b:\n    c: 2\n  d: 3\nlast: x\n";
        let doc = yaml(src);
        let top = doc.roots[0].get("top").unwrap();
        let out = apply(src, vec![remove(src, top, 0).unwrap()]).unwrap();
        assert_eq!(out, "top:\n  # about a\n  b:\n    c: 2\n  d: 3\nlast: x\n");
        let out = apply(src, vec![remove(src, top, 1).unwrap()]).unwrap();
        assert_eq!(out, "top:\n  # about a\n  a: 1 # why\n  d: 3\nlast: x\n");
        let out = apply(src, vec![remove(src, top, 2).unwrap()]).unwrap();
        assert_eq!(
            out,
            "top:\n  # about a\n  a: 1 # why\n  b:\n    c: 2\nlast: x\n"
        );
        // The only key of a mapping stays.
        let b = top.get("b").unwrap();
        assert!(remove(src, b, 0).is_err());
        // JSON: the entry and one comma.
        let src = "{\n  \"a\": 1,\n  \"b\": {\"x\": 2},\n  \"c\": 3\n}\n";
        let doc = Doc::parse(src, Syntax::Json).unwrap();
        let r = &doc.roots[0];
        let one = |i| apply(src, vec![remove(src, r, i).unwrap()]).unwrap();
        assert_eq!(one(0), "{\n  \"b\": {\"x\": 2},\n  \"c\": 3\n}\n");
        assert_eq!(one(1), "{\n  \"a\": 1,\n  \"c\": 3\n}\n");
        assert_eq!(one(2), "{\n  \"a\": 1,\n  \"b\": {\"x\": 2}\n}\n");
        for i in 0..3 {
            Doc::parse(&one(i), Syntax::Json).unwrap();
        }
        // A flow mapping.
        let src = "m: {a: 1, b: 2}\n";
        let doc = yaml(src);
        let m = doc.roots[0].get("m").unwrap();
        assert_eq!(
            apply(src, vec![remove(src, m, 1).unwrap()]).unwrap(),
            "m: {a: 1}\n"
        );
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
