//! A configuration file as a tree of nodes that know where their text is:
//! every mapping, sequence and scalar carries its byte span, line and
//! column, and every mapping entry the span of its key. Readers use the
//! positions in their errors; `stormsim export` uses the spans to change a
//! value in place without touching the rest of the file (comments, key
//! order, quoting, indentation).
//!
//! YAML is read from serde-saphyr's event parser (granit), every document
//! of a stream (Kubernetes manifests come several to a file), with anchors,
//! aliases and `<<` merge keys resolved; a node reached through an alias
//! is marked, since its text is somewhere else. JSON is read by a small
//! parser of its own that also accepts `//` and `/* */` comments and
//! trailing commas, as .NET's configuration reader does for
//! `appsettings.json` (dotnet/runtime,
//! `Microsoft.Extensions.Configuration.Json/JsonConfigurationFileParser.cs`:
//! `CommentHandling = JsonCommentHandling.Skip, AllowTrailingCommas = true`).
//!
//! INI (the AWS SDKs' shared `config` file) is read line by line as
//! Python's `configparser` reads it for botocore (`[section]` headers,
//! `key = value` or `key: value`, `#` and `;` comment lines, indented
//! lines continuing the value above); the root is a mapping of sections,
//! each a mapping of its keys, in file order, repeats kept (the reader
//! decides about them).
//!
//! The readers are bounded: nesting deeper than [`MAX_DEPTH`] or more than
//! [`MAX_NODES`] nodes (aliases counted as they expand) is an error, never
//! a stack overflow or unbounded memory.

use std::collections::HashMap;
use std::ops::Range;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, StructureStyle};

/// A 1-based (line, column) position; the column counts characters.
pub type Pos = (u32, u32);

/// Nesting deeper than this is refused (real configuration files nest a
/// dozen levels at most; Envoy's bootstrap about fifteen).
pub const MAX_DEPTH: usize = 64;
/// Nodes at most, aliases expanded (a large Envoy bootstrap has a few
/// thousand).
pub const MAX_NODES: usize = 200_000;

/// How a scalar is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Unquoted: a YAML plain scalar, or a JSON number, `true`, `false`, `null`.
    Plain,
    /// YAML `'...'`.
    Single,
    /// YAML `"..."` or a JSON string.
    Double,
    /// A YAML block scalar (`|` or `>`).
    Block,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Map { entries: Vec<Entry>, flow: bool },
    Seq { items: Vec<Node>, flow: bool },
    Scalar { text: String, style: Style },
}

/// One node of the tree.
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: Kind,
    /// The node's text (quotes and brackets included; a block collection
    /// ends with its last child).
    pub span: Range<usize>,
    pub pos: Pos,
    /// Reached through a YAML alias or merge key: its text is the anchor's.
    pub aliased: bool,
}

/// One `key: value` of a mapping.
#[derive(Clone, Debug)]
pub struct Entry {
    pub key: String,
    pub key_span: Range<usize>,
    pub key_pos: Pos,
    pub value: Node,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
    Ini,
}

/// A parsed file: its text, syntax, and one root per document.
#[derive(Clone, Debug)]
pub struct Doc {
    pub syntax: Syntax,
    pub text: String,
    pub roots: Vec<Node>,
    /// YAML: every anchored node (`&name`) that at least one alias
    /// (`*name`, a `<<: *name` merge included) reads, with those aliases:
    /// its text is the value of each of them, so an edit inside it
    /// changes them all.
    pub shared: Vec<Anchored>,
}

/// An anchored YAML node and the aliases that read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anchored {
    /// The anchor's name (without `&`).
    pub name: String,
    /// The anchored node's text.
    pub span: Range<usize>,
    pub pos: Pos,
    /// Where each alias of it stands.
    pub aliases: Vec<Pos>,
}

/// Why a file could not be read as a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub pos: Option<Pos>,
    pub message: String,
}

impl Node {
    /// The entry `key` of a mapping (the last one, when a key repeats, as
    /// YAML and JSON readers keep the last).
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.kind {
            Kind::Map { entries, .. } => entries.iter().rev().find(|e| e.key == key),
            _ => None,
        }
    }

    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.kind {
            Kind::Map { entries, .. } => entries,
            _ => &[],
        }
    }

    pub fn items(&self) -> &[Node] {
        match &self.kind {
            Kind::Seq { items, .. } => items,
            _ => &[],
        }
    }

    pub fn is_map(&self) -> bool {
        matches!(self.kind, Kind::Map { .. })
    }

    pub fn is_seq(&self) -> bool {
        matches!(self.kind, Kind::Seq { .. })
    }

    /// A scalar's text (after unquoting), or `None` for a collection.
    pub fn scalar(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn style(&self) -> Option<Style> {
        match &self.kind {
            Kind::Scalar { style, .. } => Some(*style),
            _ => None,
        }
    }

    /// Whether the node is null: JSON `null`, or a YAML plain `~`, `null`
    /// or nothing at all (`key:`).
    pub fn is_null(&self) -> bool {
        match &self.kind {
            Kind::Scalar {
                text,
                style: Style::Plain,
            } => matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"),
            _ => false,
        }
    }

    /// What the node is, for messages ("a mapping", "a list", "`abc`").
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Map { .. } => "a mapping".into(),
            Kind::Seq { .. } => "a list".into(),
            Kind::Scalar { text, .. } => {
                let short: String = text.chars().take(40).collect();
                format!("`{short}`")
            }
        }
    }

    fn mark_aliased(&mut self) {
        self.aliased = true;
        match &mut self.kind {
            Kind::Map { entries, .. } => entries.iter_mut().for_each(|e| e.value.mark_aliased()),
            Kind::Seq { items, .. } => items.iter_mut().for_each(Node::mark_aliased),
            Kind::Scalar { .. } => {}
        }
    }

    fn count(&self) -> usize {
        1 + match &self.kind {
            Kind::Map { entries, .. } => entries.iter().map(|e| 1 + e.value.count()).sum(),
            Kind::Seq { items, .. } => items.iter().map(Node::count).sum(),
            Kind::Scalar { .. } => 0,
        }
    }
}

/// Byte offset → (line, column) for one text. Readers ask in increasing
/// order, so the column is counted on from the last answer on the same
/// line: a minified file of one long line costs linear time, not
/// quadratic.
pub struct Lines {
    starts: Vec<usize>,
    /// The last (byte, column) answered.
    last: std::cell::Cell<(usize, usize)>,
}

impl Lines {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines {
            starts,
            last: std::cell::Cell::new((0, 0)),
        }
    }

    pub fn pos(&self, text: &str, byte: usize) -> Pos {
        let byte = byte.min(text.len());
        let line = self.starts.partition_point(|&s| s <= byte).max(1);
        let start = self.starts[line - 1];
        let (last_byte, last_col) = self.last.get();
        let (from, base) =
            if last_byte >= start && last_byte <= byte && text.is_char_boundary(last_byte) {
                (last_byte, last_col)
            } else {
                (start, 0)
            };
        let col = base + text.get(from..byte).map_or(0, |s| s.chars().count());
        self.last.set((byte, col));
        let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        (clamp(line), clamp(col + 1))
    }

    /// The byte offset where `line` (1-based) starts.
    pub fn start(&self, line: u32) -> usize {
        self.starts
            .get((line as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0)
    }
}

impl Doc {
    /// Parses `text` as `syntax`.
    pub fn parse(text: &str, syntax: Syntax) -> Result<Doc, SyntaxError> {
        let (roots, shared) = match syntax {
            Syntax::Json => (vec![json::parse(text)?], Vec::new()),
            Syntax::Yaml => yaml::parse(text)?,
            Syntax::Ini => (vec![ini::parse(text)?], Vec::new()),
        };
        Ok(Doc {
            syntax,
            text: text.to_string(),
            roots,
            shared,
        })
    }

    /// Whether the text `span` stands inside a flow collection (YAML
    /// `{ ... }` or `[ ... ]`; JSON's are all flow).
    pub fn in_flow(&self, span: &Range<usize>) -> bool {
        fn walk(n: &Node, span: &Range<usize>) -> bool {
            if n.aliased || n.span.start > span.start || n.span.end < span.end {
                return false;
            }
            let flow = matches!(
                n.kind,
                Kind::Map { flow: true, .. } | Kind::Seq { flow: true, .. }
            );
            if flow && n.span != *span {
                return true;
            }
            n.entries().iter().any(|e| walk(&e.value, span))
                || n.items().iter().any(|i| walk(i, span))
        }
        self.roots.iter().any(|r| walk(r, span))
    }

    /// The anchored node that holds the text `span` and that aliases
    /// elsewhere read (the innermost, when anchors nest).
    pub fn shared_at(&self, span: &Range<usize>) -> Option<&Anchored> {
        self.shared
            .iter()
            .filter(|a| a.span.start <= span.start && span.end <= a.span.end)
            .min_by_key(|a| a.span.end - a.span.start)
    }

    /// The (line, column) of byte offset `byte`.
    pub fn pos_of(&self, byte: usize) -> Pos {
        Lines::new(&self.text).pos(&self.text, byte)
    }
}

// ----------------------------------------------------------------- YAML

/// The first thing of `text` (read as JSON) that strict JSON (RFC 8259)
/// does not allow but [`Doc::parse`] accepts, as .NET's reader does: a
/// `//` or `/* */` comment, or a trailing comma; with its position. A
/// format whose system reads strict JSON refuses the file with it.
pub fn json_extension(text: &str) -> Option<(Pos, &'static str)> {
    let bytes = text.as_bytes();
    let lines = Lines::new(text);
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'/' if matches!(bytes.get(i + 1), Some(b'/' | b'*')) => {
                    return Some((lines.pos(text, i), "a comment"));
                }
                b',' => {
                    let next = bytes[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
                    if matches!(next, Some(b'}' | b']')) {
                        return Some((lines.pos(text, i), "a trailing comma"));
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

mod yaml {
    use super::*;

    enum Frame {
        Map {
            start: usize,
            pos: Pos,
            flow: bool,
            anchor: usize,
            entries: Vec<Entry>,
            key: Option<(String, Range<usize>, Pos)>,
            end: usize,
        },
        Seq {
            start: usize,
            pos: Pos,
            flow: bool,
            anchor: usize,
            items: Vec<Node>,
            end: usize,
        },
    }

    fn err(pos: Option<Pos>, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            pos,
            message: message.into(),
        }
    }

    pub fn parse(text: &str) -> Result<(Vec<Node>, Vec<Anchored>), SyntaxError> {
        let lines = Lines::new(text);
        // Anchors by id (granit numbers them across the stream): their
        // node's span and position, and the aliases that read them.
        let mut anchored: HashMap<usize, Anchored> = HashMap::new();
        let char_to_byte = |m: &serde_saphyr::granit_parser::Marker| -> usize {
            m.byte_offset().unwrap_or_else(|| {
                text.char_indices()
                    .nth(m.index())
                    .map_or(text.len(), |(b, _)| b)
            })
        };
        let mut roots = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        let mut anchors: HashMap<usize, Node> = HashMap::new();
        let mut nodes = 0usize;
        for item in Parser::new_from_str(text) {
            let (event, span) = item.map_err(|e| {
                let b = char_to_byte(e.marker());
                err(Some(lines.pos(text, b)), e.info())
            })?;
            let start = char_to_byte(&span.start);
            let end = char_to_byte(&span.end);
            let pos = lines.pos(text, start);
            let done: Option<(Node, usize)> = match event {
                Event::MappingStart(style, anchor, _) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(err(Some(pos), "the file nests too deeply"));
                    }
                    stack.push(Frame::Map {
                        start,
                        pos,
                        flow: style == StructureStyle::Flow,
                        anchor,
                        entries: Vec::new(),
                        key: None,
                        end,
                    });
                    None
                }
                Event::SequenceStart(style, anchor, _) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(err(Some(pos), "the file nests too deeply"));
                    }
                    stack.push(Frame::Seq {
                        start,
                        pos,
                        flow: style == StructureStyle::Flow,
                        anchor,
                        items: Vec::new(),
                        end,
                    });
                    None
                }
                Event::MappingEnd => match stack.pop() {
                    Some(Frame::Map {
                        start,
                        pos,
                        flow,
                        anchor,
                        entries,
                        end: last,
                        ..
                    }) => {
                        let stop = if flow { end } else { last.max(start) };
                        let entries = merge_keys(entries, pos)?;
                        let node = Node {
                            kind: Kind::Map { entries, flow },
                            span: start..stop,
                            pos,
                            aliased: false,
                        };
                        Some((node, anchor))
                    }
                    _ => return Err(err(Some(pos), "unbalanced mapping")),
                },
                Event::SequenceEnd => match stack.pop() {
                    Some(Frame::Seq {
                        start,
                        pos,
                        flow,
                        anchor,
                        items,
                        end: last,
                    }) => {
                        let stop = if flow { end } else { last.max(start) };
                        let node = Node {
                            kind: Kind::Seq { items, flow },
                            span: start..stop,
                            pos,
                            aliased: false,
                        };
                        Some((node, anchor))
                    }
                    _ => return Err(err(Some(pos), "unbalanced list")),
                },
                Event::Scalar(value, style, anchor, _) => {
                    let style = match style {
                        ScalarStyle::Plain => Style::Plain,
                        ScalarStyle::SingleQuoted => Style::Single,
                        ScalarStyle::DoubleQuoted => Style::Double,
                        _ => Style::Block,
                    };
                    let node = Node {
                        kind: Kind::Scalar {
                            text: value.to_string(),
                            style,
                        },
                        span: start..end,
                        pos,
                        aliased: false,
                    };
                    Some((node, anchor))
                }
                Event::Alias(id) => match anchors.get(&id) {
                    Some(target) => {
                        if let Some(a) = anchored.get_mut(&id) {
                            if a.name.is_empty() {
                                a.name =
                                    text[start..end].trim_start_matches('*').trim().to_string();
                            }
                            a.aliases.push(pos);
                        }
                        let mut node = target.clone();
                        nodes += node.count();
                        node.mark_aliased();
                        Some((node, 0))
                    }
                    None => return Err(err(Some(pos), "an alias to an unknown anchor")),
                },
                Event::DocumentEnd => {
                    anchors.clear();
                    None
                }
                _ => None,
            };
            let Some((node, anchor)) = done else { continue };
            nodes += 1;
            if nodes > MAX_NODES {
                return Err(err(
                    Some(pos),
                    format!(
                        "more than {MAX_NODES} nodes (aliases expanded): not a configuration file stormsim reads"
                    ),
                ));
            }
            if anchor != 0 {
                anchored.insert(
                    anchor,
                    Anchored {
                        name: String::new(),
                        span: node.span.clone(),
                        pos: node.pos,
                        aliases: Vec::new(),
                    },
                );
                anchors.insert(anchor, node.clone());
            }
            attach(&mut stack, &mut roots, node)?;
        }
        let mut shared: Vec<Anchored> = anchored
            .into_values()
            .filter(|a| !a.aliases.is_empty())
            .collect();
        shared.sort_by_key(|a| a.span.start);
        Ok((roots, shared))
    }

    /// Hands a finished node to its parent (or to the document list).
    fn attach(stack: &mut [Frame], roots: &mut Vec<Node>, node: Node) -> Result<(), SyntaxError> {
        // A key given twice in one mapping: YAML forbids it, and a reader
        // would silently keep one of the two.
        if let Some((
            Frame::Map {
                entries, key: None, ..
            },
            parents,
        )) = stack.split_last()
            && let Kind::Scalar { text, .. } = &node.kind
            && text != "<<"
            && let Some(first) = entries.iter().find(|e| e.key == *text)
        {
            let mut path: Vec<String> = parents
                .iter()
                .map(|f| match f {
                    Frame::Map { key, .. } => key.as_ref().map_or(String::new(), |k| k.0.clone()),
                    Frame::Seq { items, .. } => format!("[{}]", items.len()),
                })
                .collect();
            path.push(text.clone());
            return Err(err(
                Some(node.pos),
                format!(
                    "duplicate key `{}` (first at line {}, column {}): a reader would \
                     silently keep only one of them; remove or merge one",
                    crate::escape::escape(&super::json::key_path(&path)),
                    first.key_pos.0,
                    first.key_pos.1
                ),
            ));
        }
        match stack.last_mut() {
            None => roots.push(node),
            Some(Frame::Seq { items, end, .. }) => {
                *end = (*end).max(node.span.end);
                items.push(node);
            }
            Some(Frame::Map {
                entries, key, end, ..
            }) => match key.take() {
                None => match &node.kind {
                    Kind::Scalar { text, .. } => {
                        *key = Some((text.clone(), node.span.clone(), node.pos));
                    }
                    _ => {
                        return Err(err(
                            Some(node.pos),
                            "a mapping key that is not a plain value",
                        ));
                    }
                },
                Some((k, key_span, key_pos)) => {
                    *end = (*end).max(node.span.end).max(key_span.end);
                    entries.push(Entry {
                        key: k,
                        key_span,
                        key_pos,
                        value: node,
                    });
                }
            },
        }
        Ok(())
    }

    /// Resolves `<<` merge keys: the merged mappings' entries come after
    /// the mapping's own, marked as aliased, and only for keys it lacks.
    fn merge_keys(entries: Vec<Entry>, pos: Pos) -> Result<Vec<Entry>, SyntaxError> {
        if !entries.iter().any(|e| e.key == "<<") {
            return Ok(entries);
        }
        let (merges, mut own): (Vec<Entry>, Vec<Entry>) =
            entries.into_iter().partition(|e| e.key == "<<");
        for m in merges {
            let sources: Vec<Node> = match m.value.kind {
                Kind::Map { .. } => vec![m.value],
                Kind::Seq { items, .. } => items,
                _ => return Err(err(Some(pos), "`<<` merges a value that is not a mapping")),
            };
            for source in sources {
                let Kind::Map { entries, .. } = source.kind else {
                    return Err(err(Some(pos), "`<<` merges a value that is not a mapping"));
                };
                for mut e in entries {
                    if !own.iter().any(|o| o.key == e.key) {
                        e.value.mark_aliased();
                        own.push(e);
                    }
                }
            }
        }
        Ok(own)
    }
}

// ------------------------------------------------------------------ INI

mod ini {
    use super::*;

    struct Section {
        key: String,
        key_span: Range<usize>,
        key_pos: Pos,
        /// The header's text (`[profile x]`).
        header: Range<usize>,
        entries: Vec<Entry>,
    }

    fn scalar(text: &str, span: Range<usize>, pos: Pos) -> Node {
        Node {
            kind: Kind::Scalar {
                text: text.to_string(),
                style: Style::Plain,
            },
            span,
            pos,
            aliased: false,
        }
    }

    pub fn parse(text: &str) -> Result<Node, SyntaxError> {
        let lines = Lines::new(text);
        let mut sections: Vec<Section> = Vec::new();
        let mut nodes = 0usize;
        let mut at = 0usize;
        // A byte order mark is allowed before the first line.
        if text.starts_with('\u{FEFF}') {
            at = 3;
        }
        while at < text.len() {
            let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
            let line = &text[at..end];
            let line = line.strip_suffix('\r').unwrap_or(line);
            let trimmed = line.trim_start();
            let lead = line.len() - trimmed.len();
            let start = at + lead;
            let pos = lines.pos(text, start);
            at = end + 1;
            let body = trimmed.trim_end();
            if body.is_empty() || body.starts_with('#') || body.starts_with(';') {
                continue;
            }
            nodes += 1;
            if nodes > MAX_NODES {
                return Err(SyntaxError {
                    pos: Some(pos),
                    message: format!(
                        "more than {MAX_NODES} lines of settings: not a configuration file stormsim reads"
                    ),
                });
            }
            // An indented line continues the value of the key above.
            if lead > 0
                && let Some(e) = sections.last_mut().and_then(|s| s.entries.last_mut())
            {
                let stop = start + body.len();
                e.value.span.end = stop;
                if let Kind::Scalar { text: t, .. } = &mut e.value.kind {
                    t.push('\n');
                    t.push_str(body);
                }
                continue;
            }
            if body.starts_with('[') {
                let Some(inner) = body.strip_prefix('[').and_then(|b| b.strip_suffix(']')) else {
                    return Err(SyntaxError {
                        pos: Some(pos),
                        message: "a section header without its closing `]`".into(),
                    });
                };
                let key = inner.trim();
                let key_start = start + 1 + (inner.len() - inner.trim_start().len());
                sections.push(Section {
                    key: key.to_string(),
                    key_span: key_start..key_start + key.len(),
                    key_pos: lines.pos(text, key_start),
                    header: start..start + body.len(),
                    entries: Vec::new(),
                });
                continue;
            }
            let Some(section) = sections.last_mut() else {
                return Err(SyntaxError {
                    pos: Some(pos),
                    message: "a setting before the first [section] header".into(),
                });
            };
            let Some(d) = body.find(['=', ':']) else {
                return Err(SyntaxError {
                    pos: Some(pos),
                    message: format!(
                        "expected `key = value`, found `{}`",
                        body.chars().take(40).collect::<String>()
                    ),
                });
            };
            let key = body[..d].trim_end();
            if key.is_empty() {
                return Err(SyntaxError {
                    pos: Some(pos),
                    message: "a setting without a key".into(),
                });
            }
            let rest = &body[d + 1..];
            let value = rest.trim();
            let v_start = start + d + 1 + (rest.len() - rest.trim_start().len());
            section.entries.push(Entry {
                key: key.to_string(),
                key_span: start..start + key.len(),
                key_pos: pos,
                value: scalar(
                    value,
                    v_start..v_start + value.len(),
                    lines.pos(text, v_start),
                ),
            });
        }
        let entries = sections
            .into_iter()
            .map(|s| {
                let stop = s
                    .entries
                    .last()
                    .map_or(s.header.end, |e| e.value.span.end.max(e.key_span.end));
                Entry {
                    key: s.key,
                    key_pos: s.key_pos,
                    key_span: s.key_span,
                    value: Node {
                        kind: Kind::Map {
                            entries: s.entries,
                            flow: false,
                        },
                        span: s.header.start..stop,
                        pos: lines.pos(text, s.header.start),
                        aliased: false,
                    },
                }
            })
            .collect();
        Ok(Node {
            kind: Kind::Map {
                entries,
                flow: false,
            },
            span: 0..text.len(),
            pos: (1, 1),
            aliased: false,
        })
    }
}

// ----------------------------------------------------------------- JSON

mod json {
    use super::*;

    struct P<'a> {
        text: &'a str,
        bytes: &'a [u8],
        at: usize,
        lines: Lines,
        nodes: usize,
        /// The keys and indexes down to the value being read, for the
        /// message about a duplicate key.
        path: Vec<String>,
    }

    pub fn parse(text: &str) -> Result<Node, SyntaxError> {
        let mut p = P {
            text,
            bytes: text.as_bytes(),
            at: 0,
            lines: Lines::new(text),
            nodes: 0,
            path: Vec::new(),
        };
        // A byte order mark is allowed before the value.
        if text.starts_with('\u{FEFF}') {
            p.at = 3;
        }
        p.blank()?;
        let node = p.value(0)?;
        p.blank()?;
        if p.at < p.bytes.len() {
            return Err(p.error("text after the end of the JSON value"));
        }
        Ok(node)
    }

    /// `a.b[0].c`, as the readers name a value.
    pub(super) fn key_path(parts: &[String]) -> String {
        let mut out = String::new();
        for p in parts {
            if !out.is_empty() && !p.starts_with('[') {
                out.push('.');
            }
            out.push_str(p);
        }
        out
    }

    impl P<'_> {
        fn pos(&self, at: usize) -> Pos {
            self.lines.pos(self.text, at)
        }

        fn error(&self, message: &str) -> SyntaxError {
            SyntaxError {
                pos: Some(self.pos(self.at)),
                message: message.to_string(),
            }
        }

        /// Skips white space and comments.
        fn blank(&mut self) -> Result<(), SyntaxError> {
            loop {
                match self.bytes.get(self.at) {
                    Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                    Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                        while self.at < self.bytes.len() && self.bytes[self.at] != b'\n' {
                            self.at += 1;
                        }
                    }
                    Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'*') => {
                        match self.text[self.at + 2..].find("*/") {
                            Some(i) => self.at += i + 4,
                            None => return Err(self.error("a comment that never ends")),
                        }
                    }
                    _ => return Ok(()),
                }
            }
        }

        fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
            if depth >= MAX_DEPTH {
                return Err(self.error("the file nests too deeply"));
            }
            self.nodes += 1;
            if self.nodes > MAX_NODES {
                return Err(self.error("too many values: not a configuration file stormsim reads"));
            }
            let start = self.at;
            let pos = self.pos(start);
            match self.bytes.get(self.at) {
                Some(b'{') => {
                    self.at += 1;
                    let mut entries = Vec::new();
                    loop {
                        self.blank()?;
                        if self.bytes.get(self.at) == Some(&b'}') {
                            self.at += 1;
                            break;
                        }
                        if self.bytes.get(self.at) != Some(&b'"') {
                            return Err(self.error("expected a quoted key or `}`"));
                        }
                        let key_start = self.at;
                        let key_pos = self.pos(key_start);
                        let key = self.string()?;
                        let key_span = key_start..self.at;
                        // JSON readers keep one of two equal keys (most the
                        // last) and drop the other without a word: refused,
                        // as YAML's duplicate keys are.
                        if let Some(first) = entries.iter().find(|e: &&Entry| e.key == key) {
                            let mut path = self.path.clone();
                            path.push(key.clone());
                            return Err(SyntaxError {
                                pos: Some(self.pos(key_start)),
                                message: format!(
                                    "duplicate key `{}` (first at line {}, column {}): \
                                     a JSON reader would silently keep only one of them; \
                                     remove or merge one",
                                    crate::escape::escape(&key_path(&path)),
                                    first.key_pos.0,
                                    first.key_pos.1
                                ),
                            });
                        }
                        self.blank()?;
                        if self.bytes.get(self.at) != Some(&b':') {
                            return Err(self.error("expected `:` after the key"));
                        }
                        self.at += 1;
                        self.blank()?;
                        self.path.push(key.clone());
                        let value = self.value(depth + 1)?;
                        self.path.pop();
                        entries.push(Entry {
                            key,
                            key_pos,
                            key_span,
                            value,
                        });
                        self.blank()?;
                        match self.bytes.get(self.at) {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.error("expected `,` or `}`")),
                        }
                    }
                    Ok(Node {
                        kind: Kind::Map {
                            entries,
                            flow: true,
                        },
                        span: start..self.at,
                        pos,
                        aliased: false,
                    })
                }
                Some(b'[') => {
                    self.at += 1;
                    let mut items = Vec::new();
                    loop {
                        self.blank()?;
                        if self.bytes.get(self.at) == Some(&b']') {
                            self.at += 1;
                            break;
                        }
                        self.path.push(format!("[{}]", items.len()));
                        items.push(self.value(depth + 1)?);
                        self.path.pop();
                        self.blank()?;
                        match self.bytes.get(self.at) {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.error("expected `,` or `]`")),
                        }
                    }
                    Ok(Node {
                        kind: Kind::Seq { items, flow: true },
                        span: start..self.at,
                        pos,
                        aliased: false,
                    })
                }
                Some(b'"') => {
                    let text = self.string()?;
                    Ok(Node {
                        kind: Kind::Scalar {
                            text,
                            style: Style::Double,
                        },
                        span: start..self.at,
                        pos,
                        aliased: false,
                    })
                }
                Some(c) if c.is_ascii_alphanumeric() || *c == b'-' || *c == b'+' || *c == b'.' => {
                    while self.bytes.get(self.at).is_some_and(|c| {
                        c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.')
                    }) {
                        self.at += 1;
                    }
                    let word = &self.text[start..self.at];
                    let ok = matches!(word, "true" | "false" | "null")
                        || word.parse::<f64>().is_ok_and(f64::is_finite);
                    if !ok {
                        self.at = start;
                        let shown = word.chars().take(40).collect::<String>();
                        // JSON's number grammar (RFC 8259, section 6) has
                        // no limit; a number beyond a double's range is
                        // well-formed, only too large.
                        let number = word.strip_prefix('-').unwrap_or(word);
                        if number.starts_with(|c: char| c.is_ascii_digit())
                            && word.parse::<f64>().is_ok()
                        {
                            return Err(self.error(&format!(
                                "`{shown}` is a JSON number, but too large (a number here must be within ±1.7e308)"
                            )));
                        }
                        return Err(self.error(&format!("`{shown}` is not a JSON value")));
                    }
                    Ok(Node {
                        kind: Kind::Scalar {
                            text: word.to_string(),
                            style: Style::Plain,
                        },
                        span: start..self.at,
                        pos,
                        aliased: false,
                    })
                }
                None => Err(self.error("the file ends where a value was expected")),
                Some(_) => Err(self.error("expected a JSON value")),
            }
        }

        /// A quoted string, unescaped; `self.at` is on the opening quote.
        fn string(&mut self) -> Result<String, SyntaxError> {
            self.at += 1;
            let mut out = String::new();
            loop {
                let Some(rest) = self.text.get(self.at..) else {
                    return Err(self.error("a string that never ends"));
                };
                let Some(c) = rest.chars().next() else {
                    return Err(self.error("a string that never ends"));
                };
                match c {
                    '"' => {
                        self.at += 1;
                        return Ok(out);
                    }
                    '\\' => {
                        let e = self.bytes.get(self.at + 1).copied();
                        self.at += 2;
                        match e {
                            Some(b'"') => out.push('"'),
                            Some(b'\\') => out.push('\\'),
                            Some(b'/') => out.push('/'),
                            Some(b'b') => out.push('\u{8}'),
                            Some(b'f') => out.push('\u{c}'),
                            Some(b'n') => out.push('\n'),
                            Some(b'r') => out.push('\r'),
                            Some(b't') => out.push('\t'),
                            Some(b'u') => {
                                let hi = self.hex4()?;
                                let c = if (0xD800..0xDC00).contains(&hi)
                                    && self.text.get(self.at..self.at + 2) == Some("\\u")
                                {
                                    self.at += 2;
                                    let lo = self.hex4()?;
                                    char::from_u32(
                                        0x10000
                                            + ((hi - 0xD800) << 10)
                                            + (lo.wrapping_sub(0xDC00) & 0x3FF),
                                    )
                                } else {
                                    char::from_u32(hi)
                                };
                                out.push(c.unwrap_or('\u{FFFD}'));
                            }
                            _ => {
                                self.at -= 2;
                                return Err(self.error("an unknown escape in a string"));
                            }
                        }
                    }
                    '\n' => return Err(self.error("a line break inside a string")),
                    c => {
                        out.push(c);
                        self.at += c.len_utf8();
                    }
                }
            }
        }

        fn hex4(&mut self) -> Result<u32, SyntaxError> {
            let digits = self
                .text
                .get(self.at..self.at + 4)
                .and_then(|h| u32::from_str_radix(h, 16).ok());
            match digits {
                Some(v) => {
                    self.at += 4;
                    Ok(v)
                }
                None => Err(self.error("`\\u` needs four hexadecimal digits")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_spans_cover_the_value_text() {
        let src = "a: 1  # c\nb:\n  c: 'x y'\n  e: {f: 2, g: [1, 2]}\n  h:\n    - i: 3\n      j: ü\nk: 5\n";
        let doc = Doc::parse(src, Syntax::Yaml).unwrap();
        let root = &doc.roots[0];
        let b = root.get("b").unwrap();
        let c = b.get("c").unwrap();
        assert_eq!(&src[c.span.clone()], "'x y'");
        assert_eq!(c.scalar(), Some("x y"));
        assert_eq!(c.pos, (3, 6));
        let e = b.get("e").unwrap();
        assert_eq!(&src[e.span.clone()], "{f: 2, g: [1, 2]}");
        let h = b.get("h").unwrap();
        let j = h.items()[0].get("j").unwrap();
        assert_eq!(&src[j.span.clone()], "ü");
        // A block mapping ends with its last child.
        assert_eq!(&src[b.span.clone()], &src[15..src.find("\nk:").unwrap()]);
        assert_eq!(root.get("k").unwrap().pos, (8, 4));
    }

    #[test]
    fn yaml_documents_anchors_and_merge_keys() {
        let src = "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n---\nsecond: true\n";
        let doc = Doc::parse(src, Syntax::Yaml).unwrap();
        assert_eq!(doc.roots.len(), 2);
        let u = doc.roots[0].get("use").unwrap();
        assert_eq!(u.get("y").unwrap().scalar(), Some("3"));
        assert!(!u.get("y").unwrap().aliased);
        assert_eq!(u.get("x").unwrap().scalar(), Some("1"));
        assert!(u.get("x").unwrap().aliased);
        assert_eq!(doc.roots[1].get("second").unwrap().scalar(), Some("true"));
    }

    #[test]
    fn yaml_alias_bombs_are_refused() {
        let mut src = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9u8 {
            let (p, c) = ((b'a' + i - 1) as char, (b'a' + i) as char);
            src += &format!("{c}: &{c} [{}]\n", vec![format!("*{p}"); 10].join(", "));
        }
        let e = Doc::parse(&src, Syntax::Yaml).unwrap_err();
        assert!(e.message.contains("nodes"), "{e:?}");
    }

    #[test]
    fn ini_sections_keys_comments_and_continuations() {
        let src = "# top\n[default]\nregion = eu-west-1\n; note\n[profile ci]\nretry_mode=adaptive\ns3 =\n  max_concurrent_requests = 20\nmax_attempts : 7\n";
        let doc = Doc::parse(src, Syntax::Ini).unwrap();
        let root = &doc.roots[0];
        let keys: Vec<&str> = root.entries().iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["default", "profile ci"]);
        let ci = root.get("profile ci").unwrap();
        let mode = ci.get("retry_mode").unwrap();
        assert_eq!((mode.scalar(), mode.pos), (Some("adaptive"), (6, 12)));
        assert_eq!(&src[mode.span.clone()], "adaptive");
        let s3 = ci.get("s3").unwrap();
        assert_eq!(&src[s3.span.clone()], "\n  max_concurrent_requests = 20");
        assert_eq!(s3.scalar(), Some("\nmax_concurrent_requests = 20"));
        let max = ci.get("max_attempts").unwrap();
        assert_eq!((max.scalar(), max.pos), (Some("7"), (9, 16)));
        assert_eq!(ci.span.end, src.len() - 1);
        for (bad, pos) in [
            ("region = x\n", (1, 1)),
            ("[default\n", (1, 1)),
            ("[a]\nnokey\n", (2, 1)),
        ] {
            assert_eq!(
                Doc::parse(bad, Syntax::Ini).unwrap_err().pos,
                Some(pos),
                "{bad}"
            );
        }
    }

    #[test]
    fn json_with_comments_and_trailing_commas() {
        let src = "{\n  // a comment\n  \"a\": { \"b\": [1, 2.5, \"x\\\"y\",], },\n  /* more */ \"c\": null\n}\n";
        let doc = Doc::parse(src, Syntax::Json).unwrap();
        let a = doc.roots[0].get("a").unwrap();
        let items = a.get("b").unwrap().items();
        assert_eq!(items[2].scalar(), Some("x\"y"));
        assert_eq!(&src[items[2].span.clone()], "\"x\\\"y\"");
        assert_eq!(items[1].pos, (3, 19));
        assert!(doc.roots[0].get("c").unwrap().is_null());
        assert_eq!(doc.roots[0].entry("c").unwrap().key_pos, (4, 14));
    }

    #[test]
    fn json_errors_have_positions() {
        for (src, pos) in [
            ("{\"a\": 1,\n \"b\" 2}", (2, 6)),
            ("{\"a\": tru}", (1, 7)),
            ("[1, 2", (1, 6)),
            ("{\"a\": \"x\n\"}", (1, 9)),
        ] {
            let e = Doc::parse(src, Syntax::Json).unwrap_err();
            assert_eq!(e.pos, Some(pos), "{src}: {e:?}");
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let e = Doc::parse(&deep, Syntax::Json).unwrap_err();
        assert!(e.message.contains("nests too deeply"));
    }
}
