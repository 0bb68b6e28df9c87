//! Where each field of a scenario file is: a map from field path to the
//! line and column of its node, built from the YAML event stream without
//! expanding aliases, iteratively (no recursion, so any nesting depth is
//! safe), and with a bounded amount of work.
//!
//! Paths are dotted (`dependency.queue.capacity`), with the index for
//! sequence items (`dependency.incidents.0.end`), except that a layer, a
//! service and a service's call are named by their `name` (a call without
//! one by the service it calls, `to`) when that name is a usable, unique
//! label (`layers.api.retry.jitter`, `services.gateway.calls.orders.timeout`);
//! see [`item_labels`]. They are the paths `--set` and a variant's `set`
//! take, so an error's path can be pasted into `--set`.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, Tag};

/// Events read at most; a scenario has a few hundred.
const MAX_EVENTS: usize = 2_000_000;
/// Tags read at most (an unsupported one is an error of its own).
const MAX_TAGS: usize = 100;
/// Nodes deeper than this are not indexed (their ancestors still are).
const MAX_INDEXED_DEPTH: usize = 64;

/// A 1-based (line, column) position.
pub type Pos = (u32, u32);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Clone, Debug)]
struct Node {
    segs: Vec<Seg>,
    start: Pos,
    end: Pos,
    is_key: bool,
    scalar: Option<String>,
    /// Whether the node is a plain `null` (`~`, `null`, nothing): not a
    /// name, even in a list of named items.
    null: bool,
}

/// Field path → position, for one YAML document.
#[derive(Clone, Debug, Default)]
pub struct LocationIndex {
    /// (path, start, end, is_key, scalar text), in document order.
    nodes: Vec<(String, Pos, Pos, bool, Option<String>)>,
    /// Path → index in `nodes` of its value node (or key node if no value).
    by_path: HashMap<String, usize>,
    /// Path → index in `nodes` of its key node.
    keys: HashMap<String, usize>,
    /// Keys given a second time in their mapping: (path, position).
    duplicates: Vec<(String, Pos)>,
    /// Nodes with a YAML tag the format does not read: (path, position
    /// of the tag, the tag as written).
    tags: Vec<(String, Pos, String)>,
    /// Nodes with one of the core schema's tags (`!!str`, `!!int`): path
    /// → the tag as written. Read as plain YAML, but an error about such a
    /// value names the tag, which is likely its cause.
    core_tags: HashMap<String, String>,
    /// The lines (1-based) whose indentation holds a tab, which YAML does
    /// not allow there.
    tab_indented: Vec<u32>,
    /// The label of each item of each named list (`layers`, `services`, a
    /// service's `calls`), by the list's segments.
    labels: HashMap<Vec<Seg>, Vec<String>>,
}

/// The label of each layer in field paths: `layers.NAME` when the name is
/// usable in a path ([`usable_layer_name`]) and unique, else `layers.i`.
/// Linear in the number of layers.
pub fn layer_labels(names: &[&str]) -> Vec<String> {
    item_labels("layers", names)
}

/// The label of each item of the named list at `prefix` (`layers`,
/// `services`, `services.gateway.calls`): `PREFIX.NAME` when the name is
/// usable in a path and unique in the list, else `PREFIX.i`.
pub fn item_labels(prefix: &str, names: &[&str]) -> Vec<String> {
    item_segments(names)
        .into_iter()
        .map(|seg| format!("{prefix}.{seg}"))
        .collect()
}

/// The segment naming each item of a named list: its name when usable and
/// unique, else its index.
pub(crate) fn item_segments(names: &[&str]) -> Vec<String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for n in names {
        *counts.entry(n).or_default() += 1;
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            if usable_layer_name(name) && counts.get(name) == Some(&1) {
                name.to_string()
            } else {
                i.to_string()
            }
        })
        .collect()
}

/// Whether a layer name can stand in a dotted path: non-empty, without
/// `.`, `=` (where `--set PATH=VALUE` splits), brackets, whitespace or
/// unsafe characters (`crate::escape`), and not a number (which a path
/// reads as an index).
pub fn usable_layer_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains(['.', '=', '[', ']'])
        && !name.chars().any(char::is_whitespace)
        && !name.chars().any(crate::escape::is_unsafe_char)
        && !name.chars().all(|c| c.is_ascii_digit())
}

/// The lines (1-based) of `src` whose leading blanks hold a tab.
fn tab_indented_lines(src: &str) -> Vec<u32> {
    src.lines()
        .zip(1u32..)
        .filter(|(l, _)| {
            l.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .any(|c| c == '\t')
        })
        .map(|(_, n)| n)
        .collect()
}

impl LocationIndex {
    /// Indexes the first document of `src`. Stops quietly at a syntax error:
    /// what was read before it is still indexed.
    pub fn build(src: &str) -> Self {
        let (raw, tags) = walk(src);
        let labels = list_labels(&raw);
        let mut index = LocationIndex {
            tab_indented: tab_indented_lines(src),
            ..LocationIndex::default()
        };
        for TagAt {
            segs,
            at,
            tag,
            core,
        } in tags
        {
            let path = render(&segs, &labels);
            if core {
                index.core_tags.entry(path).or_insert(tag);
            } else {
                index.tags.push((path, at, tag));
            }
        }
        index.labels = labels.clone();
        for node in raw {
            let path = render(&node.segs, &labels);
            let i = index.nodes.len();
            if node.is_key {
                match index.keys.entry(path.clone()) {
                    std::collections::hash_map::Entry::Occupied(_) => {
                        // Not again for every key below a key given twice.
                        let inside = index
                            .duplicates
                            .iter()
                            .any(|(d, _)| path.starts_with(&format!("{d}.")));
                        if !inside {
                            index.duplicates.push((path.clone(), node.start));
                        }
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(i);
                    }
                }
            }
            let entry = index.by_path.entry(path.clone()).or_insert(i);
            if index.nodes[..].get(*entry).is_some_and(|n| n.3) && !node.is_key {
                *entry = i;
            }
            index
                .nodes
                .push((path, node.start, node.end, node.is_key, node.scalar));
        }
        index
    }

    /// `line`, or else the line before it, when its indentation holds a
    /// tab (the YAML reader reports such a line's error there or at the
    /// next token).
    pub fn tab_indented_near(&self, line: u32) -> Option<u32> {
        [line, line.saturating_sub(1)]
            .into_iter()
            .find(|l| self.tab_indented.contains(l))
    }

    /// The position of `path`'s value, or of its nearest ancestor present in
    /// the file (a defaulted field points at the block it belongs in).
    pub fn position(&self, path: &str) -> Option<Pos> {
        if let Some(&i) = self.by_path.get(path) {
            return Some(self.nodes[i].1);
        }
        // An item named by its index where the file's path names it, or
        // by a name the file's path does not use (an override renamed it,
        // or made two names alike): the item at that place in the file.
        let as_file = self.as_file(path);
        if let Some(&i) = self.by_path.get(&as_file) {
            return Some(self.nodes[i].1);
        }
        let mut p = as_file.as_str();
        loop {
            if let Some(&i) = self.keys.get(p).or_else(|| self.by_path.get(p)) {
                return Some(self.nodes[i].1);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
        }
    }

    /// `path` as an error shows it: each item of a named list by the
    /// file's label of it (`layers.0.timeout` is `layers.api.timeout`).
    pub fn label(&self, path: &str) -> String {
        self.as_file(path)
    }

    /// `path` with each item of a named list written as the file labels
    /// it: an index (`services.1`) or a label of the file
    /// (`services.db`) both become the file's label of that item.
    fn as_file(&self, path: &str) -> String {
        let mut segs: Vec<Seg> = Vec::new();
        for part in path.split('.') {
            let label = self
                .labels
                .get(&segs)
                .and_then(|l| l.iter().position(|x| x == part));
            segs.push(match (part.parse::<usize>(), label) {
                (_, Some(i)) | (Ok(i), None) => Seg::Index(i),
                (Err(_), None) => Seg::Key(part.to_string()),
            });
        }
        render(&segs, &self.labels)
    }

    /// The position of `path`'s key (where an unknown field is written), or
    /// else as [`position`](Self::position).
    pub fn key_position(&self, path: &str) -> Option<Pos> {
        match self.keys.get(path) {
            Some(&i) => Some(self.nodes[i].1),
            None => self.position(path),
        }
    }

    /// The text of the scalar written at `path`, if a scalar is.
    pub fn scalar(&self, path: &str) -> Option<&str> {
        let &i = self.by_path.get(path)?;
        let (_, _, _, is_key, scalar) = &self.nodes[i];
        scalar.as_deref().filter(|_| !is_key)
    }

    /// Whether `path` has a node of its own in the file.
    pub fn contains(&self, path: &str) -> bool {
        self.by_path.contains_key(path)
    }

    /// The keys given a second time in their mapping, in file order: path
    /// and position of each repetition.
    pub fn duplicates(&self) -> &[(String, Pos)] {
        &self.duplicates
    }

    /// The YAML tags (`!include`, `!env`) written in the document, which
    /// stormsim does not read (a tag would otherwise be dropped without a
    /// word): the path of each tagged node, where its tag is and the tag.
    /// The core schema's tags (`!!str`, `!!int`...) are plain YAML and
    /// not listed.
    pub fn unsupported_tags(&self) -> &[(String, Pos, String)] {
        &self.tags
    }

    /// The core schema's tag (`!!str`, `!!int`...) written on the value
    /// at `path`, if one is.
    pub fn core_tag(&self, path: &str) -> Option<&str> {
        self.core_tags.get(path).map(String::as_str)
    }

    /// The field path of the mapping key that starts at `pos`, if one does
    /// (where the parser reports a key given twice).
    pub fn key_at(&self, pos: Pos) -> Option<&str> {
        self.nodes
            .iter()
            .rev()
            .find(|n| n.3 && n.1 == pos)
            .map(|n| n.0.as_str())
    }

    /// The field path of the node at `pos`: the deepest node that spans it,
    /// else the last node that starts before it. Returns the path, whether
    /// the node is a mapping key, and its scalar text.
    pub fn path_at(&self, pos: Pos) -> Option<(&str, bool, Option<&str>)> {
        let depth = |p: &str| p.matches(['.', '[']).count() + usize::from(!p.is_empty());
        let spanning = self
            .nodes
            .iter()
            .filter(|n| n.1 <= pos && pos <= n.2)
            .max_by_key(|n| (depth(&n.0), n.1));
        let node = spanning.or_else(|| self.nodes.iter().rev().find(|n| n.1 <= pos))?;
        Some((node.0.as_str(), node.3, node.4.as_deref()))
    }
}

/// One open collection while walking.
struct Frame {
    is_map: bool,
    /// Whether the next node is a key (mappings only).
    awaiting_key: bool,
    /// Index of the next item (sequences only).
    next_index: usize,
    /// This collection's node in the index, if indexed.
    node: Option<usize>,
    /// Whether this collection pushed a segment onto the path.
    pushed: bool,
}

fn pos(mark: &serde_saphyr::granit_parser::Marker) -> Pos {
    let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    (clamp(mark.line()), clamp(mark.col()).saturating_add(1))
}

/// A tag as written (`!include`, `!!binary`, `!!str`), and whether it is
/// one of the core schema's (`!!str`, `!!int`, `!!float`, `!!bool`,
/// `!!null`, `!!map`, `!!seq`), which only say what plain YAML would.
fn written_tag(tag: &Tag) -> (String, bool) {
    const CORE: &[&str] = &["str", "int", "float", "bool", "null", "map", "seq"];
    let core = tag.handle() == "tag:yaml.org,2002:" && CORE.contains(&tag.suffix());
    (format!("{}{}", tag.original_handle(), tag.suffix()), core)
}

/// A tagged node: its segments, where its tag is, the tag as written and
/// whether it is one of the core schema's.
struct TagAt {
    segs: Vec<Seg>,
    at: Pos,
    tag: String,
    core: bool,
}

/// Reads the events of the first document into nodes with segment paths,
/// and the tags it finds.
fn walk(src: &str) -> (Vec<Node>, Vec<TagAt>) {
    let mut tags: Vec<TagAt> = Vec::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut segs: Vec<Seg> = Vec::new();
    for (count, item) in Parser::new_from_str(src).enumerate() {
        let Ok((event, span)) = item else { break };
        if count > MAX_EVENTS {
            break;
        }
        let (start, end) = (pos(&span.start), pos(&span.end));
        let tag = match &event {
            Event::Scalar(.., t) | Event::MappingStart(.., t) | Event::SequenceStart(.., t) => {
                t.as_deref().map(written_tag)
            }
            _ => None,
        };
        let null = matches!(&event, Event::Scalar(v, ScalarStyle::Plain, ..)
            if matches!(v.as_ref(), "" | "~" | "null" | "Null" | "NULL"));
        let (scalar, opens) = match &event {
            Event::Scalar(v, ..) => (Some(v.to_string()), None),
            Event::Alias(_) => (None, None),
            Event::MappingStart(..) => (None, Some(true)),
            Event::SequenceStart(..) => (None, Some(false)),
            Event::MappingEnd | Event::SequenceEnd => {
                close(&mut frames, &mut segs, &mut nodes, end);
                continue;
            }
            Event::DocumentEnd => break,
            _ => continue,
        };
        // A node: a key, a mapping value, a sequence item or the root.
        let mut is_key = false;
        let mut pushed = true;
        match frames.last_mut() {
            Some(f) if f.is_map && f.awaiting_key => {
                is_key = true;
                f.awaiting_key = false;
                let key = scalar.clone().unwrap_or_else(|| "<complex key>".into());
                segs.push(Seg::Key(key));
            }
            Some(f) if f.is_map => f.awaiting_key = true,
            Some(f) => {
                segs.push(Seg::Index(f.next_index));
                f.next_index += 1;
            }
            None => pushed = false,
        }
        if let Some((tag, core)) = tag
            && tags.len() < MAX_TAGS
        {
            let at = span.tag_start.as_ref().map_or(start, pos);
            tags.push(TagAt {
                segs: segs.clone(),
                at,
                tag,
                core,
            });
        }
        let node = (segs.len() <= MAX_INDEXED_DEPTH).then(|| {
            nodes.push(Node {
                segs: segs.clone(),
                start,
                end,
                is_key,
                scalar,
                null,
            });
            nodes.len() - 1
        });
        if is_key {
            // The key's segment stays for its value; complex keys are
            // walked as if they were values of a key of their own.
            if let Some(is_map) = opens {
                frames.push(Frame {
                    is_map,
                    awaiting_key: is_map,
                    next_index: 0,
                    node,
                    pushed: false,
                });
            }
            continue;
        }
        match opens {
            Some(is_map) => frames.push(Frame {
                is_map,
                awaiting_key: is_map,
                next_index: 0,
                node,
                pushed,
            }),
            None => pop_value_segment(&frames, &mut segs, pushed),
        }
    }
    (nodes, tags)
}

/// After a value, its segment leaves the path (a mapping value's key
/// segment, or a sequence item's index).
fn pop_value_segment(frames: &[Frame], segs: &mut Vec<Seg>, pushed: bool) {
    let in_map = frames.last().is_some_and(|f| f.is_map);
    if in_map || pushed {
        segs.pop();
    }
}

fn close(frames: &mut Vec<Frame>, segs: &mut Vec<Seg>, nodes: &mut [Node], end: Pos) {
    let Some(frame) = frames.pop() else { return };
    if let Some(n) = frame.node.and_then(|i| nodes.get_mut(i)) {
        n.end = end;
    }
    pop_value_segment(frames, segs, frame.pushed);
}

/// Whether the list at `segs` names its items (see [`item_labels`]), and
/// whether an item without a `name` is named by its `to` (a call).
fn named_list(segs: &[Seg]) -> Option<bool> {
    match segs {
        [Seg::Key(l)] if l == "layers" || l == "services" => Some(false),
        [Seg::Key(c), Seg::Key(l)] if c == "clients" && l == "classes" => Some(false),
        [Seg::Key(s), Seg::Index(_), Seg::Key(c)] if s == "services" && c == "calls" => Some(true),
        _ => None,
    }
}

/// The segment naming each item of every named list, by the list's raw
/// path.
fn list_labels(nodes: &[Node]) -> HashMap<Vec<Seg>, Vec<String>> {
    // (name, to) of each item, by list.
    type NameTo = (Option<String>, Option<String>);
    let mut found: HashMap<Vec<Seg>, Vec<NameTo>> = HashMap::new();
    for n in nodes {
        let [list @ .., Seg::Index(i), Seg::Key(k)] = n.segs.as_slice() else {
            continue;
        };
        let Some(by_to) = named_list(list) else {
            continue;
        };
        if n.is_key || !(k == "name" || (by_to && k == "to")) {
            continue;
        }
        let items = found.entry(list.to_vec()).or_default();
        if items.len() <= *i {
            items.resize(*i + 1, (None, None));
        }
        // `name: null` names nothing: the item goes by its index.
        let text = (!n.null).then(|| n.scalar.clone().unwrap_or_default());
        if k == "name" {
            items[*i].0 = text;
        } else {
            items[*i].1 = text;
        }
    }
    found
        .into_iter()
        .map(|(list, items)| {
            let names: Vec<&str> = items
                .iter()
                .map(|(name, to)| name.as_deref().or(to.as_deref()).unwrap_or_default())
                .collect();
            (list, item_segments(&names))
        })
        .collect()
}

fn render(segs: &[Seg], labels: &HashMap<Vec<Seg>, Vec<String>>) -> String {
    let mut out = String::new();
    for (depth, seg) in segs.iter().enumerate() {
        if !out.is_empty() {
            out.push('.');
        }
        match seg {
            Seg::Key(k) => out.push_str(k),
            Seg::Index(i) => match labels.get(&segs[..depth]).and_then(|l| l.get(*i)) {
                Some(label) => out.push_str(label),
                None => out.push_str(&i.to_string()),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
name: x
layers:
  - timeout: 1s
    name: api
    retry:
      backoff: { kind: constant, base: 1s }
  - name: db
dependency:
  incidents:
    - { kind: down, start: 1m, end: 2m }
";

    /// An item named by its index, or by a name an override gave it, is
    /// found where the file writes it.
    #[test]
    fn items_by_index_are_found_at_their_file_labels() {
        let index = LocationIndex::build(SRC);
        let by_name = index.position("layers.db.name");
        assert!(by_name.is_some());
        assert_eq!(index.position("layers.1.name"), by_name);
        assert_eq!(
            index.position("layers.0.retry.backoff.base"),
            index.position("layers.api.retry.backoff.base")
        );
        assert_eq!(index.position("layers.1.name").unwrap().0, 7);
    }

    #[test]
    fn finds_values_keys_and_layer_names() {
        let idx = LocationIndex::build(SRC);
        assert_eq!(idx.position("name"), Some((1, 7)));
        assert_eq!(idx.position("layers.api.timeout"), Some((3, 14)));
        assert_eq!(idx.position("layers.api.retry.backoff.base"), Some((6, 40)));
        assert_eq!(idx.position("layers.db.name"), Some((7, 11)));
        assert_eq!(idx.position("dependency.incidents.0.end"), Some((10, 37)));
        // Absent fields point at the nearest ancestor.
        assert_eq!(idx.position("layers.api.retry.jitter"), Some((5, 5)));
        assert!(idx.contains("layers"));
    }

    #[test]
    fn path_at_picks_the_deepest_node() {
        let idx = LocationIndex::build(SRC);
        assert_eq!(
            idx.path_at((6, 20)).unwrap().0,
            "layers.api.retry.backoff.kind"
        );
        assert!(idx.path_at((6, 20)).unwrap().1);
        assert_eq!(idx.path_at((6, 26)).unwrap().2, Some("constant"));
        assert_eq!(idx.path_at((10, 7)).unwrap().0, "dependency.incidents.0");
    }

    #[test]
    fn duplicate_layer_names_use_indexes() {
        let idx = LocationIndex::build("layers:\n  - name: a\n  - name: a\n");
        assert_eq!(idx.position("layers.1.name"), Some((3, 11)));
    }

    #[test]
    fn deep_and_broken_input_is_safe() {
        let deep = format!("a: {}{}\n", "[".repeat(20_000), "]".repeat(20_000));
        let _ = LocationIndex::build(&deep);
        let deep_block = format!(
            "a:\n{}",
            (0..3000)
                .map(|i| format!("{}- \n", " ".repeat(i)))
                .collect::<String>()
        );
        let _ = LocationIndex::build(&deep_block);
        let idx = LocationIndex::build("a: 1\nb: [\n");
        assert_eq!(idx.position("a"), Some((1, 4)));
    }
}
