//! `stormsim export`: tuned values written back into the user's file.
//!
//! The tuned values come from `best.yaml`, which is either a scenario (the
//! layer picked by `--layer`, or the one whose `from` names the file, or
//! the only one) or a mapping of dotted paths to values, as `--set` and a
//! variant's `set` take them (`layers.api.retry.max_attempts: 4`; DESIGN
//! §3 has `stormsim tune` write that). The file is read as its format, the
//! values that differ from what it gives now are written in place
//! (`edit`), and the edited text is read again: it must give exactly the
//! tuned values, or nothing is written. The file is replaced atomically
//! (a temporary file beside it, then a rename), and only if it did not
//! change while stormsim was working; it keeps its owner, group, mode,
//! extended attributes (ACLs, labels) and hard links ([`replace_file`]);
//! no other file is ever touched. Two exports of one file take turns
//! (an advisory lock on it): the second finds the text changed and writes
//! nothing, rather than silently undoing the first's edit.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::durations::{self, Notation};
use super::edit::{self, Edit, Ins, Lit};
use super::tree::{Doc, Node};
use super::{Finding, Format, Selector, Target, changed_leaves, import_doc, join, parse, set_path};
use crate::scenario::ScenarioError;
use crate::scenario::graph::Call;
use crate::scenario::types::Layer;
use crate::scenario::units::Duration;

/// Where a value lives in the file: its node, or the mapping it would be
/// added to and the keys to add.
pub enum Place<'d> {
    At(&'d Node),
    Missing { map: &'d Node, keys: Vec<String> },
}

/// Walks `keys` down from the mapping `base`.
pub fn place<'d>(base: &'d Node, keys: &[&str]) -> Result<Place<'d>, String> {
    let mut node = base;
    for (i, k) in keys.iter().enumerate() {
        match node.get(k) {
            Some(next) if i + 1 == keys.len() => return Ok(Place::At(next)),
            Some(next) if next.is_map() => node = next,
            Some(next) if next.is_null() => {
                return Err(format!(
                    "`{k}` is empty at line {}; write it as a mapping first",
                    next.pos.0
                ));
            }
            Some(next) => return Err(format!("`{k}` is {}, not a mapping", next.describe())),
            None => {
                return Ok(Place::Missing {
                    map: node,
                    keys: keys[i..].iter().map(|s| s.to_string()).collect(),
                });
            }
        }
    }
    Ok(Place::At(node))
}

/// The edits of one export, gathered setting by setting.
pub struct Writer<'d> {
    pub doc: &'d Doc,
    notes: Vec<String>,
    refusals: Vec<Finding>,
    replaced: Vec<Edit>,
    inserts: Vec<(&'d Node, Vec<(String, Ins)>)>,
    copy: Option<Copy<'d>>,
}

/// A list item written again as a new item of its list, with the edits
/// meant for it, which leave the original as it was (gRPC: a shared
/// method config copied for one method).
struct Copy<'d> {
    /// The item copied, and the list it goes at the end of.
    item: &'d Node,
    list: &'d Node,
    /// A part of the item's text written anew in the copy (its name).
    swap: (std::ops::Range<usize>, String),
}

impl<'d> Writer<'d> {
    pub fn new(doc: &'d Doc) -> Self {
        Writer {
            doc,
            notes: Vec::new(),
            refusals: Vec::new(),
            replaced: Vec::new(),
            inserts: Vec::new(),
            copy: None,
        }
    }

    /// Makes the edits inside `item` (an item of the JSON or flow list
    /// `list`) go to a copy of it added at the end of `list`, with the
    /// text at `swap.0` (inside `item`) replaced by `swap.1`; `item`
    /// itself stays as it is.
    pub fn copy_item(
        &mut self,
        item: &'d Node,
        list: &'d Node,
        swap: (std::ops::Range<usize>, String),
    ) {
        self.copy = Some(Copy { item, list, swap });
    }

    /// Writes `lit` at `keys` below the mapping `base` (whose key path is
    /// `base_key`): in place when the key is there, else added.
    pub fn put(
        &mut self,
        base: &'d Node,
        base_key: &str,
        keys: &[&str],
        lit: Lit,
    ) -> Result<(), String> {
        let where_ = keys.iter().fold(base_key.to_string(), |p, k| join(&p, k));
        match place(base, keys).map_err(|e| format!("{where_}: {e}"))? {
            Place::At(node) => {
                if node.aliased {
                    return Err(format!(
                        "{where_} (line {}) comes from a YAML alias or merge key; change the anchor by hand",
                        node.pos.0
                    ));
                }
                let flow = self.doc.in_flow(&node.span);
                let e = edit::replace_in(&self.doc.text, self.doc.syntax, node, &lit, flow);
                if self.doc.text[e.range.clone()] != e.text {
                    self.shared_check(&where_, node)?;
                    self.replaced.retain(|r| r.range != e.range);
                    self.replaced.push(e);
                }
            }
            Place::Missing { map, keys } => self.insert(&where_, map, &keys, lit)?,
        }
        Ok(())
    }

    /// Writes the duration `d` at `keys` below `base`, as [`put`] does,
    /// in `notation` and in the style of the value it replaces (`0.100s`
    /// stays three decimals, `2000ms` milliseconds, `0:0:2` short), or
    /// for a new key that of a duration beside it. A protobuf duration
    /// written as an object (`{"seconds": 1, "nanos": 0}`, which gRPC
    /// reads) stays one: its fields are written.
    ///
    /// [`put`]: Writer::put
    pub fn put_duration(
        &mut self,
        base: &'d Node,
        base_key: &str,
        keys: &[&str],
        d: Duration,
        notation: Notation,
    ) -> Result<(), String> {
        let sample = match place(base, keys) {
            Ok(Place::At(node)) if notation == Notation::Proto && node.is_map() => {
                if node.get("seconds").is_some() || node.get("nanos").is_some() {
                    return self.put_proto_object(base_key, keys, node, d);
                }
                None
            }
            Ok(Place::At(node)) => node.scalar().map(str::to_string),
            // A new key: the style of a duration beside it.
            Ok(Place::Missing { map, .. }) => map
                .entries()
                .iter()
                .filter_map(|e| e.value.scalar())
                .find(|t| notation.reads(t))
                .map(str::to_string),
            Err(_) => None,
        };
        let text = durations::styled(notation, d, sample.as_deref());
        self.put(base, base_key, keys, Lit::Str(text))
    }

    /// [`put_duration`](Writer::put_duration) for a protobuf duration the
    /// file writes as `{seconds, nanos}`: each field in place, written as
    /// the file writes it (a number, or a quoted one); `nanos` only when
    /// the file has it or the value needs it.
    fn put_proto_object(
        &mut self,
        base_key: &str,
        keys: &[&str],
        node: &'d Node,
        d: Duration,
    ) -> Result<(), String> {
        const S: u64 = 1_000_000_000;
        let like = |field: Option<&Node>, n: u64| match field.and_then(Node::style) {
            Some(super::tree::Style::Single | super::tree::Style::Double) => {
                Lit::Str(n.to_string())
            }
            _ => Lit::Bare(n.to_string()),
        };
        let at = keys.iter().fold(base_key.to_string(), |p, k| join(&p, k));
        let (secs, nanos) = (d.0 / S, d.0 % S);
        if node.get("seconds").is_some() || nanos == 0 || secs != 0 {
            self.put(node, &at, &["seconds"], like(node.get("seconds"), secs))?;
        }
        if node.get("nanos").is_some() || nanos != 0 {
            self.put(node, &at, &["nanos"], like(node.get("nanos"), nanos))?;
        }
        Ok(())
    }

    /// Queues `keys` (nested, the last one given `lit`) to be added to the
    /// mapping `map`, unless it comes from an alias or an anchor aliases
    /// read.
    fn insert(
        &mut self,
        where_: &str,
        map: &'d Node,
        keys: &[String],
        lit: Lit,
    ) -> Result<(), String> {
        if map.aliased {
            return Err(format!(
                "{where_}: the mapping comes from a YAML alias or merge key; change the anchor by hand"
            ));
        }
        self.shared_check(where_, map)?;
        let i = match self.inserts.iter().position(|(m, _)| m.span == map.span) {
            Some(i) => i,
            None => {
                self.inserts.push((map, Vec::new()));
                self.inserts.len() - 1
            }
        };
        Ins::add(&mut self.inserts[i].1, keys, lit);
        Ok(())
    }

    /// Adds `key: lit` to the mapping `map` as an entry of its own, even
    /// when `map` has `key` from a `<<` merge key (a key of the mapping
    /// itself overrides a merged one, YAML's merge rule).
    pub fn add(
        &mut self,
        map: &'d Node,
        base_key: &str,
        key: &str,
        lit: Lit,
    ) -> Result<(), String> {
        let where_ = join(base_key, key);
        self.insert(&where_, map, &[key.to_string()], lit)?;
        Ok(())
    }

    /// Writes `lit` in place of `node` (not an alias: the caller checked).
    pub fn put_node(&mut self, node: &'d Node, lit: &Lit) -> Result<(), String> {
        let flow = self.doc.in_flow(&node.span);
        let e = edit::replace_in(&self.doc.text, self.doc.syntax, node, lit, flow);
        if self.doc.text[e.range.clone()] != e.text {
            self.shared_check(&format!("line {}", node.pos.0), node)?;
            self.replaced.retain(|r| r.range != e.range);
            self.replaced.push(e);
        }
        Ok(())
    }

    /// Deletes from the file the key whose value is `value`, with its
    /// line (block YAML, INI) or its comma (JSON, flow YAML), and nothing
    /// else: for a key the tuned policy makes wrong (a Resilience4j
    /// multiplier once the backoff is constant, Envoy status codes no
    /// condition reads any more). `where_` names it in a refusal. Refused
    /// as an edit is (an alias, a shared anchor), and where
    /// [`edit::remove`] refuses.
    pub fn remove(&mut self, value: &Node, where_: &str) -> Result<(), String> {
        let Some((map, index)) = entry_of(&self.doc.roots, value) else {
            return Err(format!("{where_}: not a key of a mapping"));
        };
        if value.aliased || map.aliased {
            return Err(format!(
                "{where_} (line {}) comes from a YAML alias or merge key; remove it from the anchor by hand",
                value.pos.0
            ));
        }
        let value = &map.entries()[index].value;
        self.shared_check(where_, value)?;
        let e = edit::remove(&self.doc.text, map, index).map_err(|e| {
            format!(
                "{where_} (line {}) no longer applies, but cannot be removed: {e}",
                value.pos.0
            )
        })?;
        // An edit of text inside what goes is moot.
        self.replaced
            .retain(|r| !(e.range.start <= r.range.start && r.range.end <= e.range.end));
        if !self.replaced.iter().any(|r| r.range == e.range) {
            self.replaced.push(e);
        }
        Ok(())
    }

    /// Refuses an edit of `node`'s text when the text is (inside) a YAML
    /// anchor that aliases elsewhere read: the edit would change each of
    /// them too, policies the export was not asked to touch.
    fn shared_check(&self, where_: &str, node: &Node) -> Result<(), String> {
        let Some(a) = self.doc.shared_at(&node.span) else {
            return Ok(());
        };
        let at: Vec<String> = a
            .aliases
            .iter()
            .map(|(l, c)| format!("line {l}, column {c}"))
            .collect();
        // Where `&name` stands: before the node (a block mapping's node
        // starts on the line below it).
        let mark = format!("&{}", a.name);
        let (al, ac) = self.doc.text[..a.span.start]
            .rfind(&mark)
            .map_or(a.pos, |i| self.doc.pos_of(i));
        let (who, them) = if at.len() == 1 {
            ("the alias".to_string(), "that policy")
        } else {
            (format!("{} aliases", at.len()), "those policies")
        };
        Err(format!(
            "{where_} (line {}) is inside the YAML anchor `&{}` (line {al}, column {ac}), which {who} `*{}` also read{} ({}): the edit would change {them} too, so nothing was written. Give this policy its own copy first (write the values out in place of `&{}` here, or in place of the alias), then export again",
            node.pos.0,
            a.name,
            a.name,
            if at.len() == 1 { "s" } else { "" },
            at.join("; "),
            a.name,
        ))
    }

    /// A tuned layer field the file cannot hold.
    pub fn refuse_leaf(&mut self, leaf: &str, why: &str) -> Result<(), String> {
        self.refusals.push(Finding {
            pos: None,
            key: leaf.to_string(),
            message: format!("cannot be written to this file: {why}"),
        });
        Ok(())
    }

    pub fn refuse(&mut self, key: &str, why: &str) {
        self.refusals.push(Finding {
            pos: None,
            key: key.to_string(),
            message: why.to_string(),
        });
    }

    /// Something the user should know about the change.
    pub fn note(&mut self, text: String) {
        if !self.notes.contains(&text) {
            self.notes.push(text);
        }
    }

    fn finish(self) -> Result<(Vec<Edit>, Vec<String>), Vec<Finding>> {
        if !self.refusals.is_empty() {
            return Err(self.refusals);
        }
        let mut edits = self.replaced;
        for (map, entries) in &self.inserts {
            match edit::insert(&self.doc.text, self.doc.syntax, map, entries) {
                Ok(e) => edits.push(e),
                Err(e) => {
                    return Err(vec![Finding {
                        pos: Some(map.pos),
                        key: String::new(),
                        message: format!(
                            "cannot add {} here: {e}",
                            entries
                                .iter()
                                .map(|(k, _)| k.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    }]);
                }
            }
        }
        let Some(copy) = self.copy else {
            return Ok((edits, self.notes));
        };
        let span = copy.item.span.clone();
        let (inside, mut outside): (Vec<Edit>, Vec<Edit>) = edits
            .into_iter()
            .partition(|e| span.start <= e.range.start && e.range.end <= span.end);
        let mut shifted: Vec<Edit> = inside
            .into_iter()
            .map(|e| Edit {
                range: e.range.start - span.start..e.range.end - span.start,
                text: e.text,
            })
            .collect();
        let (swap, swap_text) = copy.swap;
        shifted.push(Edit {
            range: swap.start - span.start..swap.end - span.start,
            text: swap_text,
        });
        let fail = |m: String| {
            vec![Finding {
                pos: Some(copy.item.pos),
                key: String::new(),
                message: m,
            }]
        };
        let body = edit::apply(&self.doc.text[span.clone()], shifted).map_err(fail)?;
        let added = edit::append_item(&self.doc.text, copy.list, &body).map_err(fail)?;
        outside.push(added);
        Ok((outside, self.notes))
    }
}

/// The mapping holding the entry whose value is `value` (the node of
/// the file's own text at its place: not one a YAML alias copies), and
/// the entry's index.
fn entry_of<'d>(roots: &'d [Node], value: &Node) -> Option<(&'d Node, usize)> {
    fn walk<'d>(n: &'d Node, value: &Node) -> Option<(&'d Node, usize)> {
        if let Some(i) = n.entries().iter().position(|e| {
            std::ptr::eq(&e.value, value)
                || (!e.value.aliased && e.value.span == value.span && e.value.pos == value.pos)
        }) {
            return Some((n, i));
        }
        n.entries()
            .iter()
            .map(|e| &e.value)
            .chain(n.items())
            .find_map(|c| walk(c, value))
    }
    roots.iter().find_map(|r| walk(r, value))
}

/// What `best.yaml` asks for.
#[derive(Clone, Debug)]
pub enum Wanted {
    /// A whole layer (from a scenario), serialised.
    Layer(Map<String, Value>),
    /// Values for some of the layer's fields, by dotted path below the
    /// layer (`retry.max_attempts`).
    Sets(Vec<(String, Value)>),
}

/// Who gives the tuned values, for what an export says: the policy's
/// place in BEST and what BEST itself writes of it.
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// The policy's path in BEST (`layers.orders`,
    /// `services.api.calls.db`, `clients.calls`): the paths an error
    /// names start with it, as `--set` takes them (empty: the paths below
    /// the policy).
    pub at: String,
    /// What BEST writes of the policy, below it, as written (a preset's
    /// and a `from`'s values included). `None`: every field is given.
    pub written: Option<Map<String, Value>>,
    /// Whether BEST is a scenario's layer (or call), whose fields left
    /// out are the format's defaults: such a field is not exported, the
    /// file keeps its own value there. Otherwise (dotted paths) each
    /// value replaces its field's whole value, defaults inside it
    /// included, and the fields BEST does not name are the file's.
    pub layer: bool,
}

impl Given {
    /// `path`, a field of the policy, as an error names it: below
    /// [`Given::at`].
    pub fn full(&self, path: &str) -> String {
        match (self.at.is_empty(), path.is_empty()) {
            (true, _) => path.to_string(),
            (false, true) => self.at.clone(),
            (false, false) => format!("{}.{path}", self.at),
        }
    }

    /// Whether BEST writes the field `path` of the policy: a value at it
    /// or below it, or a value above it that holds it (`jitter: full`
    /// holds `jitter.proportional`, `breaker: null` all of the breaker).
    fn writes(&self, path: &str) -> bool {
        let Some(mut map) = self.written.as_ref() else {
            return true;
        };
        let segs: Vec<&str> = path.split('.').collect();
        for (i, seg) in segs.iter().enumerate() {
            match map.get(*seg) {
                None => return false,
                Some(Value::Object(m)) if i + 1 < segs.len() => map = m,
                Some(_) => return true,
            }
        }
        true
    }
}

/// `want` with every field that differs from `cur` (both canonical) and
/// that BEST does not write (a default of the scenario format: a jitter,
/// a budget's scope, a breaker the tuned layer has not) given the file's
/// value again, so that the export leaves it as the file has it. Returns
/// those fields (the shortest path of each that BEST writes nothing of).
fn keep_unwritten(
    cur: &Map<String, Value>,
    want: &mut Map<String, Value>,
    owned: &[String],
    given: &Given,
) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let Some(written) = given.written.as_ref().filter(|_| given.layer) else {
        return kept;
    };
    for p in changed_leaves(cur, want, owned) {
        if given.writes(&p) {
            continue;
        }
        let segs: Vec<&str> = p.split('.').collect();
        let Some(at) = (1..=segs.len())
            .map(|k| segs[..k].join("."))
            .find(|q| !given.writes(q))
        else {
            continue;
        };
        // A field of a mapping whose kind BEST chooses (`backoff: { kind:
        // constant }`, a budget's `kind`) takes that kind's default: the
        // file's value is of another kind.
        let parent = at.rsplit_once('.').map_or("", |(h, _)| h);
        let chosen = !parent.is_empty()
            && super::get_path(written, parent)
                .and_then(Value::as_object)
                .is_some_and(|m| m.contains_key("kind") || m.contains_key("dist"));
        if chosen {
            continue;
        }
        if kept
            .iter()
            .any(|k| at == *k || at.starts_with(&format!("{k}.")))
        {
            continue;
        }
        match super::get_path(cur, &at) {
            Some(v) => set_path(want, &at, v.clone()),
            None => remove_path(want, &at),
        }
        kept.push(at);
    }
    kept
}

/// Whether `path` is a field of a layer or a call (`retry.jitter`), not
/// a key path of a configuration file (`methodConfig[1].timeout`).
fn is_policy_field(path: &str) -> bool {
    let head = path.split('.').next().unwrap_or(path);
    [&["layers", "0"][..], &["services", "0", "calls", "0"][..]]
        .iter()
        .filter_map(|at| crate::scenario::schema::fields_at(at))
        .any(|fields| fields.iter().any(|(f, _)| f == head))
}

/// Removes the dotted `path` from a nested map, if it is there.
fn remove_path(map: &mut Map<String, Value>, path: &str) {
    match path.split_once('.') {
        None => {
            map.remove(path);
        }
        Some((head, rest)) => {
            if let Some(Value::Object(m)) = map.get_mut(head) {
                remove_path(m, rest);
            }
        }
    }
}

/// The result of an export: the file before and after, and remarks.
#[derive(Clone, Debug)]
pub struct Exported {
    pub before: String,
    pub after: String,
    pub notes: Vec<String>,
}

/// A layer (or call) fragment as the scenario format has it once read and
/// written again, so that two spellings of one value (`0.1s`, `100ms`)
/// compare equal. A fragment with the fields only a call edge has
/// (`outlier_detection`, `retry_other_replica`: read for a call) is read
/// as a call.
pub(crate) fn canonical(
    fragment: &Map<String, Value>,
    label: &str,
) -> Result<Map<String, Value>, Vec<ScenarioError>> {
    let refused = |e: serde_json::Error| {
        vec![ScenarioError::new(
            label,
            format!(
                "the tuned values are not a layer: {}",
                crate::scenario::suggest::serde_words(&e.to_string())
            ),
        )]
    };
    let call_only = ["outlier_detection", "retry_other_replica"];
    let is_call = call_only.iter().any(|k| fragment.contains_key(*k));
    let mut m = fragment.clone();
    let (layer, extra) = if is_call {
        m.insert("to".into(), Value::String("service".into()));
        let call: Call = serde_json::from_value(Value::Object(m)).map_err(refused)?;
        let mut extra = Map::new();
        extra.insert(
            "retry_other_replica".into(),
            Value::Bool(call.retry_other_replica),
        );
        extra.insert(
            "outlier_detection".into(),
            serde_json::to_value(&call.outlier_detection).unwrap_or(Value::Null),
        );
        (call.to_layer("layer"), extra)
    } else {
        m.insert("name".into(), Value::String("layer".into()));
        let layer: Layer = serde_json::from_value(Value::Object(m)).map_err(refused)?;
        (layer, Map::new())
    };
    let mut layer = layer;
    if let Some(b) = layer.retry.budget.as_mut() {
        crate::scenario::defaults::fill_budget(b);
    }
    if let Some(b) = layer.breaker.as_mut() {
        crate::scenario::defaults::fill_breaker(b);
    }
    match serde_json::to_value(&layer) {
        Ok(Value::Object(mut m)) => {
            m.extend(extra);
            Ok(m)
        }
        _ => Err(vec![ScenarioError::new(
            label,
            "the tuned values are not a layer",
        )]),
    }
}

/// Writes the tuned values of `wanted` into `text` (the file `label`, in
/// `format`, the policy `selector` picks).
pub fn export_text(
    text: &str,
    label: &str,
    format: Format,
    selector: &Selector,
    wanted: &Wanted,
) -> Result<Exported, Vec<ScenarioError>> {
    export_given(text, label, format, selector, wanted, &Given::default())
}

/// As [`export_text`], for the values `given` says who gives: a field of
/// the policy is named by its full path in BEST (as `--set` takes it), a
/// field BEST does not write keeps the file's value (a note says which),
/// and a field the file cannot hold is one error, not one more for each
/// part of it or default below it.
pub fn export_given(
    text: &str,
    label: &str,
    format: Format,
    selector: &Selector,
    wanted: &Wanted,
    given: &Given,
) -> Result<Exported, Vec<ScenarioError>> {
    export_inner(text, label, format, selector, wanted, given).map_err(|errors| {
        // The paths of the policy's fields in full; a field's error
        // once, not again for each part of it.
        let field =
            |e: &ScenarioError| e.file == label && e.path.as_deref().is_some_and(is_policy_field);
        let paths: Vec<String> = errors
            .iter()
            .filter(|e| field(e))
            .filter_map(|e| e.path.clone())
            .collect();
        // A field BEST does not write (a default filled in beside the
        // fields it does, such as a budget's `scope`) is not the user's
        // mistake when one it does write beside it is refused too.
        let written_near = |p: &str| {
            let parent = p.rsplit_once('.').map_or("", |(h, _)| h);
            !parent.is_empty()
                && paths.iter().any(|q| {
                    given.writes(q) && (q == parent || q.starts_with(&format!("{parent}.")))
                })
        };
        errors
            .into_iter()
            .filter(|e| {
                !(field(e)
                    && e.path.as_deref().is_some_and(|p| {
                        paths
                            .iter()
                            .any(|q| !q.is_empty() && p.starts_with(&format!("{q}.")))
                            || (!given.writes(p) && written_near(p))
                    }))
            })
            .map(|mut e| {
                if field(&e) {
                    e.path = e.path.map(|p| given.full(&p));
                }
                e
            })
            .collect()
    })
}

fn export_inner(
    text: &str,
    label: &str,
    format: Format,
    selector: &Selector,
    wanted: &Wanted,
    given: &Given,
) -> Result<Exported, Vec<ScenarioError>> {
    let doc = parse(text, label, format)?;
    let current = import_doc(&doc, label, format, selector)?;
    let owned: Vec<String> = current.fragment.keys().cloned().collect();
    let cur = canonical(&current.fragment, label)?;
    let want = match wanted {
        Wanted::Layer(layer) => layer.clone(),
        Wanted::Sets(sets) => {
            let mut m = current.fragment.clone();
            let mut errors = Vec::new();
            for (path, v) in sets {
                let top = path.split('.').next().unwrap_or(path);
                if !owned.iter().any(|o| o == top) {
                    errors.push(
                        ScenarioError::new(
                            label,
                            format!(
                                "{} {format} file holds no `{top}`; it holds {}",
                                format.article(),
                                owned.join(", ")
                            ),
                        )
                        .with_path(path.clone()),
                    );
                }
                set_path(&mut m, path, v.clone());
            }
            if !errors.is_empty() {
                return Err(errors);
            }
            canonical(&m, label)?
        }
    };
    let mut want = want;
    let mut implied = Vec::new();
    if let (Format::Resilience4j, Wanted::Sets(sets)) = (format, wanted) {
        const FLAG: &str = "retry.backoff.truncate_ms";
        if !sets
            .iter()
            .any(|(p, _)| p == FLAG || FLAG.starts_with(&format!("{p}.")))
        {
            implied.extend(super::resilience4j::implied_truncation(&mut want));
        }
    }
    let kept = keep_unwritten(&cur, &mut want, &owned, given);
    if !kept.is_empty()
        && let Ok(again) = canonical(&want, label)
    {
        want = again;
    }
    let changed = changed_leaves(&cur, &want, &owned);
    if changed.is_empty() {
        return Ok(Exported {
            before: text.to_string(),
            after: text.to_string(),
            notes: Vec::new(),
        });
    }
    let mut w = Writer::new(&doc);
    match format {
        Format::GrpcServiceConfig => super::grpc::write(&mut w, selector, &want, &changed),
        Format::EnvoyRoute => super::envoy::write(&mut w, selector, &want, &changed),
        Format::IstioVirtualservice => super::istio::write(&mut w, selector, &want, &changed),
        Format::LinkerdServiceprofile => super::linkerd::write(&mut w, selector, &want, &changed),
        Format::Resilience4j => super::resilience4j::write(&mut w, selector, &want, &changed),
        Format::MsResilience => super::ms_resilience::write(&mut w, selector, &want, &changed),
        Format::AwsConfig => super::aws::write(&mut w, selector, &want, &changed),
    }
    let (mut edits, mut notes) = w
        .finish()
        .map_err(|fs| fs.iter().map(|f| f.located(label)).collect::<Vec<_>>())?;
    if edit::is_crlf(text) {
        edit::crlf_edits(text, &mut edits);
    }
    notes.extend(implied);
    if !kept.is_empty() {
        let kept: Vec<String> = kept.iter().map(|k| given.full(k)).collect();
        notes.push(format!(
            "the tuned values do not write {}: the file keeps its own there (the scenario's defaults are not exported)",
            kept.join(", ")
        ));
    }
    let after = edit::apply(text, edits).map_err(|e| vec![ScenarioError::new(label, e)])?;
    // The edited file must read back as exactly the tuned values.
    let again = super::import_text(&after, label, format, selector).map_err(|e| {
        let mut v = vec![ScenarioError::new(
            label,
            "the edited file would not read back; nothing was written",
        )];
        v.extend(e);
        v
    })?;
    // And it must give settings a scenario takes, as `stormsim import`
    // checks before printing them: a base written beside the file's
    // smaller cap reads back as written, but no layer takes it.
    // A policy with settings only a call takes (Envoy's outlier detection,
    // `retry_other_replica`) is checked as a call to a service with
    // replicas, as `import --to` prints it.
    let probe = super::layer_yaml::layer_yaml(&again, "exported", &[]);
    if let Err(e) = super::layer_yaml::check_loads(&probe, &again, "exported", label) {
        let call = super::layer_yaml::call_yaml(&again, "exported", None, &[]);
        let replicas = Some(CALL_CHECK_REPLICAS);
        if super::layer_yaml::check_call_loads(&call, &again, "exported", None, replicas, label)
            .is_err()
        {
            let mut v = vec![ScenarioError::new(
                label,
                "the edited file would give settings no scenario takes (stormsim import would refuse it); nothing was written",
            )];
            v.extend(e);
            return Err(v);
        }
    }
    let back = canonical(&again.fragment, label)?;
    let off = changed_leaves(&back, &want, &owned);
    if !off.is_empty() {
        let leaves_w = super::leaves(&want);
        let leaves_b = super::leaves(&back);
        let show = |v: Option<&Value>| v.map_or("absent".to_string(), Value::to_string);
        // A value the user did not give (a `--set` style best.yaml names
        // some fields) that the edit changes all the same: the file ties
        // it to one that was given (an Istio `retries` block without
        // `attempts` ignores its `retryOn` and `perTryTimeout` until
        // `attempts` is written). Say what to give.
        let was_given = |p: &str| match wanted {
            Wanted::Layer(_) => true,
            Wanted::Sets(sets) => sets.iter().any(|(s, _)| {
                s == p || p.starts_with(&format!("{s}.")) || s.starts_with(&format!("{p}."))
            }),
        };
        return Err(off
            .iter()
            .map(|p| {
                let message = if was_given(p) {
                    format!(
                        "the file cannot hold {} exactly: it would read back as {}; nothing was written",
                        show(leaves_w.get(p)),
                        show(leaves_b.get(p))
                    )
                } else {
                    format!(
                        "not given, but the change would make the file give {} here (it gives {} now): the file ties it to a value that was given; nothing was written. Give `{}` too, this value to accept it or one of your own",
                        show(leaves_b.get(p)),
                        show(leaves_w.get(p)),
                        given.full(p)
                    )
                };
                ScenarioError::new(label, message).with_path(p.clone())
            })
            .collect());
    }
    Ok(Exported {
        before: text.to_string(),
        after,
        notes,
    })
}

/// The replicas of the service an exported call is checked against: a
/// few, so that settings of calls to replicated services (outlier
/// detection, retrying another replica) are taken.
const CALL_CHECK_REPLICAS: u32 = 3;

/// A unified diff of `before` and `after`, labelled with `label`.
/// A CRLF file's diff is shown without the CRs (each would show as a
/// control character): see [`edit::is_crlf`].
pub fn unified_diff(before: &str, after: &str, label: &str) -> String {
    if edit::is_crlf(before) {
        let (b, a) = (before.replace("\r\n", "\n"), after.replace("\r\n", "\n"));
        return unified_diff(&b, &a, label);
    }
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(label, label)
        .to_string()
}

/// Which policy of `best.yaml` to write: a layer, or a call edge
/// (`CALLER.CALL`, or `clients` for the clients' entry call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick<'a> {
    Layer(&'a str),
    Call(&'a str),
}

/// The policy objects of a scenario that `export` can write: each as
/// (`layers.NAME` or `services.S.calls.C` / `clients.calls`, its `--layer`
/// or `--call` name, the serialised object, its `from` file, what it is
/// for).
fn policies(s: &crate::scenario::Scenario) -> Vec<(String, String, Value, Option<String>, Target)> {
    let mut out = Vec::new();
    for l in &s.layers {
        out.push((
            format!("layers.{}", l.name),
            l.name.clone(),
            serde_json::to_value(l).unwrap_or(Value::Null),
            from_file(l).map(str::to_string),
            Target::Layer,
        ));
    }
    let replicas = |to: &str| s.services.iter().find(|x| x.name == to).map(|x| x.slots());
    let balancer = |to: &str| s.services.iter().find(|x| x.name == to).map(|x| x.balancer);
    if let Some(c) = &s.clients.calls {
        out.push((
            "clients.calls".into(),
            crate::scenario::graph::CLIENTS.to_string(),
            serde_json::to_value(c).unwrap_or(Value::Null),
            c.from.as_ref().map(|f| f.file.clone()),
            Target::Call {
                replicas: replicas(&c.to),
                balancer: balancer(&c.to),
            },
        ));
    }
    for svc in &s.services {
        for c in &svc.calls {
            out.push((
                format!("services.{}.calls.{}", svc.name, c.label()),
                format!("{}.{}", svc.name, c.label()),
                serde_json::to_value(c).unwrap_or(Value::Null),
                c.from.as_ref().map(|f| f.file.clone()),
                Target::Call {
                    replicas: replicas(&c.to),
                    balancer: balancer(&c.to),
                },
            ));
        }
    }
    out
}

/// Whether a layer's or call's `from` (in `policy`, its JSON value)
/// agrees with every selector flag `given`: each one given names the
/// same method, route, host... as the `from` does.
fn from_agrees(policy: &Value, given: &Selector) -> bool {
    policy
        .get("from")
        .and_then(|f| serde_json::from_value::<crate::scenario::types::FromFile>(f.clone()).ok())
        .is_some_and(|from| given.agrees_with(&from.selector()))
}

/// Reads `best.yaml`: a scenario (and which of its layers or calls), or a
/// mapping of dotted paths to values. Also says what the policy is for (a
/// layer, or a call and the replicas of the service it calls when the
/// scenario says).
pub fn wanted_from_best(
    best: &Path,
    pick: Option<Pick<'_>>,
    into: &Path,
    given: &Selector,
) -> Result<(Wanted, Target, Given), Vec<ScenarioError>> {
    let label = crate::escape::path(best);
    let text = super::read_file(best, &label).map_err(|e| vec![e])?;
    // A key given twice, as the scenario loader says it.
    let located = crate::scenario::locate::LocationIndex::build(&text);
    let twice: Vec<ScenarioError> = located
        .duplicates()
        .iter()
        .map(|(path, (line, col))| {
            let key = path.rsplit('.').next().unwrap_or(path);
            ScenarioError::new(
                &label,
                format!("`{key}` is given twice; expected each field once"),
            )
            .with_path(path.clone())
            .at(*line, *col)
        })
        .collect();
    if !twice.is_empty() {
        // `layers.a.retry: {max_attempts: 3}` beside
        // `layers.a.retry.max_attempts: 4` names one path twice too: the
        // overlap is the mistake to name.
        if let Some(Value::Object(m)) = crate::scenario::load::parse_value_first_wins(&text) {
            let overlaps = overlapping(&m, &located, &label);
            if !overlaps.is_empty() {
                return Err(overlaps);
            }
        }
        return Err(twice);
    }
    let value: Value =
        serde_saphyr::from_str_with_options(&text, crate::scenario::load::parse_options())
            .map_err(|e| {
                vec![ScenarioError::new(
                    &label,
                    format!(
                        "not YAML: {}",
                        crate::scenario::error::one_line(&e.to_string())
                    ),
                )]
            })?;
    let Value::Object(map) = value else {
        return Err(vec![ScenarioError::new(
            &label,
            "expected a scenario or a mapping of dotted paths to values (layers.NAME.retry.max_attempts: 4)",
        )]);
    };
    let is_scenario = map.keys().any(|k| {
        matches!(
            k.as_str(),
            "name" | "duration" | "layers" | "dependency" | "services"
        )
    });
    if is_scenario {
        let s = crate::scenario::load_file(best).map_err(|e| e.0)?;
        let all = policies(&s);
        let layer_names: Vec<&str> = all
            .iter()
            .filter(|p| p.4 == Target::Layer)
            .map(|p| p.1.as_str())
            .collect();
        let call_names: Vec<&str> = all
            .iter()
            .filter(|p| p.4 != Target::Layer)
            .map(|p| p.1.as_str())
            .collect();
        let found = match pick {
            Some(Pick::Layer(n)) => all.iter().find(|p| p.4 == Target::Layer && p.1 == n),
            Some(Pick::Call(n)) => all.iter().find(|p| p.4 != Target::Layer && p.1 == n),
            None => {
                let into_abs = std::fs::canonicalize(into).ok();
                let dir = best.parent().unwrap_or(Path::new(""));
                let from_this: Vec<_> = all
                    .iter()
                    .filter(|p| {
                        p.3.as_ref().is_some_and(|f| {
                            into_abs.is_some()
                                && std::fs::canonicalize(dir.join(f)).ok() == into_abs
                        })
                    })
                    .collect();
                // Several name the file: the selector flags given (--route
                // and the like) pick the one whose `from` says the same.
                let selected: Vec<_> = from_this
                    .iter()
                    .copied()
                    .filter(|p| from_agrees(&p.2, given))
                    .collect();
                match (
                    from_this.len(),
                    selected.len(),
                    s.layers.len(),
                    s.is_graph(),
                ) {
                    (1, ..) => Some(from_this[0]),
                    (_, 1, ..) => Some(selected[0]),
                    (0, _, 1, false) => all.first(),
                    (0, ..) => None,
                    (n, m, ..) => {
                        let (what, flag) = if s.is_graph() {
                            ("call", "--call")
                        } else {
                            ("layer", "--layer")
                        };
                        let list = |v: &[&(String, String, Value, Option<String>, Target)]| {
                            v.iter()
                                .map(|p| p.1.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        };
                        let file = crate::escape::path(into);
                        let message = if m > 1 && given.names_any() {
                            format!(
                                "which {what}? the `from` of {n} {what}s names {file}, and {m} of them ({}) agree with the selector given; pick one with {flag}",
                                list(&selected)
                            )
                        } else if m == 0 {
                            format!(
                                "which {what}? the `from` of {n} {what}s names {file} ({}), and none of them agrees with the selector given; pick one with {flag}",
                                list(&from_this)
                            )
                        } else {
                            format!(
                                "which {what}? the `from` of {n} {what}s names {file} ({}); pick one with {flag}, or give its selector (--route, --method...)",
                                list(&from_this)
                            )
                        };
                        return Err(vec![ScenarioError::new(&label, message)]);
                    }
                }
            }
        };
        let Some((at, _, v, _, target)) = found else {
            let names = |what: &str, v: &[&str]| {
                if v.is_empty() {
                    format!("the scenario has no {what}")
                } else {
                    format!("the {what} are {}", v.join(", "))
                }
            };
            return Err(vec![ScenarioError::new(
                &label,
                match pick {
                    Some(Pick::Layer(n)) => {
                        format!("no layer `{n}`; {}", names("layers", &layer_names))
                    }
                    Some(Pick::Call(n)) => format!(
                        "no call `{n}` (CALLER.CALL, or `clients` for the clients' call); {}",
                        names("calls", &call_names)
                    ),
                    None if s.is_graph() => format!(
                        "which call? pick one of {} with --call (no call's `from` names {})",
                        call_names.join(", "),
                        crate::escape::path(into)
                    ),
                    None => format!(
                        "which layer? pick one of {} with --layer",
                        layer_names.join(", ")
                    ),
                },
            )]);
        };
        let given = Given {
            at: at.clone(),
            written: written_policy(&text, best, &label, at),
            layer: true,
        };
        return match v {
            Value::Object(m) => Ok((Wanted::Layer(m.clone()), *target, given)),
            _ => Err(vec![ScenarioError::new(&label, "the layer cannot be read")]),
        };
    }
    // Dotted paths: layers.NAME.FIELD..., services.S.calls.C.FIELD...,
    // clients.calls.FIELD...
    let mut sets = Vec::new();
    let mut names: Vec<(String, bool)> = Vec::new();
    let mut errors = Vec::new();
    let below = "expected a path below layers.NAME, services.SERVICE.calls.CALL or clients.calls";
    for (k, v) in &map {
        let split = if let Some(rest) = k.strip_prefix("layers.") {
            rest.split_once('.').map(|(n, f)| (n.to_string(), false, f))
        } else if let Some(field) = k.strip_prefix("clients.calls.") {
            Some((crate::scenario::graph::CLIENTS.to_string(), true, field))
        } else if let Some(rest) = k.strip_prefix("services.") {
            rest.split_once(".calls.").and_then(|(svc, r)| {
                r.split_once('.')
                    .map(|(call, f)| (format!("{svc}.{call}"), true, f))
            })
        } else {
            None
        };
        let Some((name, is_call, field)) = split else {
            errors.push(ScenarioError::new(&label, below).with_path(k.clone()));
            continue;
        };
        if !names.iter().any(|(n, c)| *n == name && *c == is_call) {
            names.push((name.clone(), is_call));
        }
        sets.push((name, is_call, field.to_string(), v.clone()));
    }
    errors.extend(overlapping(&map, &located, &label));
    if !errors.is_empty() {
        return Err(errors);
    }
    let shown = |n: &(String, bool)| {
        if n.1 {
            format!("call {}", n.0)
        } else {
            format!("layer {}", n.0)
        }
    };
    let chosen: (String, bool) = match (pick, names.len()) {
        (Some(Pick::Layer(n)), _) => (n.to_string(), false),
        (Some(Pick::Call(n)), _) => (n.to_string(), true),
        (None, 1) => names[0].clone(),
        (None, 0) => return Err(vec![ScenarioError::new(&label, "no values to export")]),
        (None, _) => {
            return Err(vec![ScenarioError::new(
                &label,
                format!(
                    "values for several layers or calls ({}); pick one with --layer or --call",
                    names.iter().map(shown).collect::<Vec<_>>().join(", ")
                ),
            )]);
        }
    };
    let picked: Vec<(String, Value)> = sets
        .into_iter()
        .filter(|(n, c, ..)| *n == chosen.0 && *c == chosen.1)
        .map(|(_, _, f, v)| (f, v))
        .collect();
    if picked.is_empty() {
        return Err(vec![ScenarioError::new(
            &label,
            match chosen.1 {
                true => format!("no values for call `{}`", chosen.0),
                false => format!("no values for layer `{}`", chosen.0),
            },
        )]);
    }
    // Each value read as its field of a layer (or call), on its own: one
    // that is not (a duration `banana`, a negative count) is an error of
    // this file, at its line and column, not of the file it would be
    // written into. (A value valid alone but not with the other file's is
    // that file's error, found when the values are written into it.)
    let prefix = match (chosen.1, chosen.0.split_once('.')) {
        (false, _) => format!("layers.{}", chosen.0),
        (true, Some((svc, call))) => format!("services.{svc}.calls.{call}"),
        (true, None) => "clients.calls".to_string(),
    };
    let index = crate::scenario::locate::LocationIndex::build(&text);
    let mut errors = Vec::new();
    for (field, v) in &picked {
        let mut one = Map::new();
        super::set_path(&mut one, field, v.clone());
        // A whole number out of the field's range (`max_attempts: 5000`):
        // no scenario takes it, whatever file it would be written into.
        for (at, n) in whole_numbers(&format!("{prefix}.{field}"), v) {
            let Some((lo, hi)) = crate::scenario::ranges::real_range(&at) else {
                continue;
            };
            if n.is_some_and(|n| (lo..=hi).contains(&n)) {
                continue;
            }
            let shown = index
                .scalar(&at)
                .map_or_else(|| get_number(v, &at).unwrap_or_default(), str::to_string);
            let mut e = ScenarioError::new(
                &label,
                format!("expected a whole number from {lo} to {hi}, found {shown}"),
            )
            .with_path(at.clone());
            if let Some((line, col)) = index.position(&at) {
                e = e.at(line, col);
            }
            errors.push(e);
        }
        if errors.iter().any(|e| {
            e.path.as_deref().is_some_and(|p| {
                p == format!("{prefix}.{field}") || p.starts_with(&format!("{prefix}.{field}."))
            })
        }) {
            continue;
        }
        if let Err(e) = canonical(&one, &label) {
            let key = format!("{prefix}.{field}");
            // A field this one needs beside it (a backoff's `kind`) is
            // the other file's to give.
            for mut e in e
                .into_iter()
                .filter(|e| !e.message.contains("missing field `"))
            {
                e.path = Some(key.clone());
                if let Some(m) = e.message.strip_prefix("the tuned values are not a layer: ") {
                    e.message = m.to_string();
                }
                // The field's range, not its storage type's.
                e.message = crate::scenario::ranges::with_real_range(&key, e.message);
                if let Some((line, col)) = index.position(&key) {
                    e = e.at(line, col);
                }
                errors.push(e);
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let target = if chosen.1 {
        Target::Call {
            replicas: None,
            balancer: None,
        }
    } else {
        Target::Layer
    };
    let mut written = Map::new();
    for (field, v) in &picked {
        set_path(&mut written, field, v.clone());
    }
    let given = Given {
        at: prefix,
        written: Some(written),
        layer: false,
    };
    Ok((Wanted::Sets(picked), target, given))
}

/// The numbers of `v`, the value at `path`, by path: each whole number
/// (`None` for one that is negative, too large or not whole, which no
/// whole-number field takes).
fn whole_numbers(path: &str, v: &Value) -> Vec<(String, Option<u64>)> {
    match v {
        Value::Number(n) => vec![(path.to_string(), n.as_u64())],
        Value::Object(m) => m
            .iter()
            .flat_map(|(k, v)| whole_numbers(&format!("{path}.{k}"), v))
            .collect(),
        _ => Vec::new(),
    }
}

/// The number at `path` (below `v`'s own path, whatever it is) as JSON
/// writes it.
fn get_number(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::Object(m) => m.iter().find_map(|(k, x)| {
            path.ends_with(&format!(".{k}"))
                .then(|| get_number(x, path))
                .flatten()
        }),
        _ => None,
    }
}

/// What the scenario `text` (the file `best`) writes of the policy at
/// `at` (`layers.orders`, `services.api.calls.db`, `clients.calls`), with
/// the values of its preset and its `from` file, but none of the format's
/// defaults; `None` when it cannot be told.
fn written_policy(text: &str, best: &Path, label: &str, at: &str) -> Option<Map<String, Value>> {
    let mut value = crate::scenario::load::parse_value_first_wins(text)?;
    let index = crate::scenario::locate::LocationIndex::build(text);
    let mut warnings = Vec::new();
    let _ = crate::scenario::from_file::fill_from_layers(
        &mut value,
        best.parent(),
        label,
        &index,
        &mut warnings,
    );
    crate::scenario::presets::for_preset_policies(
        &mut value,
        |_| true,
        crate::scenario::presets::fill_layer,
    );
    let item = |list: Option<&Value>, name: &str, or: &str| -> Option<Value> {
        list?
            .as_array()?
            .iter()
            .find(|v| {
                let label = v.get("name").or_else(|| v.get(or)).and_then(Value::as_str);
                label == Some(name)
            })
            .cloned()
    };
    let policy = if let Some(name) = at.strip_prefix("layers.") {
        item(value.get("layers"), name, "name")?
    } else if at == "clients.calls" {
        value.get("clients")?.get("calls")?.clone()
    } else {
        let (svc, call) = at.strip_prefix("services.")?.split_once(".calls.")?;
        let svc = item(value.get("services"), svc, "name")?;
        item(svc.get("calls"), call, "to")?
    };
    match policy {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The keys of a dotted-path BEST file that set one field (or a field and
/// a part of it) as an earlier key does, refused as `--set` refuses them:
/// one of the values would never apply.
fn overlapping(
    map: &Map<String, Value>,
    located: &crate::scenario::locate::LocationIndex,
    label: &str,
) -> Vec<ScenarioError> {
    let related = |a: &str, b: &str| {
        a == b || a.starts_with(&format!("{b}.")) || b.starts_with(&format!("{a}."))
    };
    let keys: Vec<&String> = map.keys().collect();
    let mut errors = Vec::new();
    for (j, k) in keys.iter().enumerate() {
        if let Some(i) = (0..j).find(|&i| related(keys[i], k)) {
            let mut e = ScenarioError::new(
                label,
                format!(
                    "sets the same field as `{}`, so one of the two values would never apply; keep one of them",
                    keys[i]
                ),
            )
            .with_path(k.to_string());
            // The key's own line: a path the earlier key's value also
            // holds stands twice in the file, this key second.
            let second = located.duplicates().iter().find(|(p, _)| p == *k);
            if let Some((line, col)) = second.map(|d| d.1).or_else(|| located.position(k)) {
                e = e.at(line, col);
            }
            errors.push(e);
        }
    }
    errors
}

/// Replaces `path` with `text` (following a symbolic link to the file it
/// names), keeping what makes it the user's file: its owner, group and
/// mode, and its identity (inode) when other names share it. Refuses when
/// the file no longer holds `expected` (someone changed it meanwhile).
///
/// Normally atomically: a temporary file in the same folder, given the
/// original's owner, group and mode, flushed, then renamed over the
/// original. Two cases write the new content into the file itself
/// instead (it was fully prepared and read back before this is called,
/// so only the write itself remains): the file has other hard links
/// (a rename would give this name a new inode and leave the others
/// holding the old text), or the new file cannot be given the original's
/// owner (not run by root: only the owner may keep the file theirs). An
/// in-place write cut short by a crash can leave the file partly
/// written; a rename cannot, but it would break the links or hand the
/// file to another owner, which the user did not ask for.
pub fn replace_file(path: &Path, expected: &str, text: &str) -> Result<(), String> {
    let real: PathBuf =
        std::fs::canonicalize(path).map_err(|e| format!("cannot find the file: {e}"))?;
    // Held until the file is replaced: another export of the same file
    // waits, then finds the text changed and writes nothing.
    let _turn = file_lock::take(&real)?;
    // A stop asked for while waiting: the file is not touched. From here
    // on the write runs to its end (a second signal waits for it), so the
    // file is either as it was or wholly replaced.
    if crate::interrupt::requested() {
        return Err("stopped (Ctrl-C) before writing; the file was not changed".into());
    }
    crate::interrupt::uninterrupted(|| replace_locked(&real, expected, text))
}

/// [`replace_file`] once the file is locked.
fn replace_locked(real: &Path, expected: &str, text: &str) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let now = std::fs::read(real).map_err(|e| format!("cannot read the file again: {e}"))?;
    if now != expected.as_bytes() {
        return Err("the file changed while stormsim was editing it; nothing was written".into());
    }
    let meta = std::fs::metadata(real).map_err(|e| format!("cannot read the file again: {e}"))?;
    if meta.nlink() > 1 {
        return write_in_place(real, &now, text);
    }
    let dir = real.parent().unwrap_or(Path::new("."));
    let name = real
        .file_name()
        .map_or("file".into(), |n| n.to_string_lossy().into_owned());
    for n in 0..100u32 {
        let tmp = dir.join(format!(".{name}.stormsim-{}-{n}.tmp", std::process::id()));
        // Readable by its owner alone until it has the file's own mode:
        // it holds the file's contents before the mode is set.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp);
        let mut file = match file {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot write beside the file: {e}")),
        };
        let fresh = file
            .metadata()
            .map_err(|e| format!("cannot write beside the file: {e}"))?;
        let same_owner = fresh.uid() == meta.uid() && fresh.gid() == meta.gid();
        if !same_owner
            && std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid())).is_err()
        {
            // Not allowed to give the file to its owner: keep the
            // original file, and so its owner, by writing into it.
            drop(file);
            let _ = std::fs::remove_file(&tmp);
            return write_in_place(real, &now, text);
        }
        if xattrs::copy(real, &file).is_err() {
            // An attribute (an ACL, a label) the new file cannot be
            // given: keep the original file, and so all of them.
            drop(file);
            let _ = std::fs::remove_file(&tmp);
            return write_in_place(real, &now, text);
        }
        let written = file
            .set_permissions(meta.permissions())
            .and_then(|()| file.write_all(text.as_bytes()))
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, real));
        return written.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write the file: {e}")
        });
    }
    Err("cannot create a temporary file beside the file".into())
}

/// Refuses a file the user may not write (a read-only mode, a read-only
/// file system) before anything is shown or written: replacing it by a
/// rename would succeed in a writable folder, overriding the protection
/// the user gave it. A mode with no write bit at all is the user's own
/// "do not change" and is refused whoever runs stormsim (root included,
/// whom the system would let write); otherwise opening the file for
/// writing, without truncating, asks the system and changes nothing.
pub fn check_writable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777);
    let refused = || {
        let mode = mode.map_or_else(String::new, |m| format!(" (mode {m:04o})"));
        format!(
            "the file is not writable{mode}; nothing was written: make it writable (chmod u+w) to export into it, or see the change with --dry-run"
        )
    };
    if mode.is_some_and(|m| m & 0o222 == 0) {
        return Err(refused());
    }
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(refused()),
        Err(e) => Err(format!(
            "cannot open the file for writing: {e}; nothing was written"
        )),
    }
}

/// Writes `text` into the file `real` itself (its inode, owner, group
/// and mode unchanged), over `old`, its current content: see
/// [`replace_file`] and [`overwrite`].
fn write_in_place(real: &Path, old: &[u8], text: &str) -> Result<(), String> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(real)
        .map_err(|e| format!("cannot write the file: {e}; it was not changed"))?;
    overwrite(&mut file, old, text.as_bytes())
}

/// What [`overwrite`] does to a file, apart so that a test can make a
/// step fail (a full disk) at will.
pub(crate) trait InPlace {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()>;
    fn set_len(&mut self, len: u64) -> std::io::Result<()>;
    fn sync(&mut self) -> std::io::Result<()>;
}

impl InPlace for std::fs::File {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, bytes, offset)
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        std::fs::File::set_len(self, len)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.sync_all()
    }
}

/// Replaces the content `old` of `f` with `new`, in place, so that a
/// failed write (a full disk) leaves the file as it was whenever that is
/// possible, and says which it is.
///
/// When the new text is longer, the part beyond the old length is
/// written first, after the old bytes, and flushed: that claims the disk
/// space the new text needs while the old text is still whole, and if it
/// fails the file is cut back to its old length, unchanged. Only then are
/// the old bytes overwritten (blocks the file already has) and the file
/// cut to the new length. Should that still fail (a copy-on-write file
/// system needs new blocks for any write), the old text, kept in memory,
/// is written back.
pub(crate) fn overwrite(f: &mut impl InPlace, old: &[u8], new: &[u8]) -> Result<(), String> {
    let old_len = old.len() as u64;
    if new.len() > old.len()
        && let Err(e) = f
            .write_at(old_len, &new[old.len()..])
            .and_then(|()| f.sync())
    {
        return Err(match f.set_len(old_len).and_then(|()| f.sync()) {
            Ok(()) => format!("cannot write the file: {e}; it was not changed"),
            Err(e2) => format!(
                "cannot write the file: {e}; its text is unchanged, but it could not be \
                 cut back to its old length ({e2}), so it may end in part of the new text"
            ),
        });
    }
    let shared = old.len().min(new.len());
    let written = f
        .write_at(0, &new[..shared])
        .and_then(|()| f.set_len(new.len() as u64))
        .and_then(|()| f.sync());
    if let Err(e) = written {
        let back = f
            .write_at(0, old)
            .and_then(|()| f.set_len(old_len))
            .and_then(|()| f.sync());
        return Err(match back {
            Ok(()) => format!(
                "cannot write the file: {e}; its old text was written back, so it is unchanged"
            ),
            Err(e2) => format!(
                "cannot write the file: {e}, nor write its old text back ({e2}): \
                 THE FILE IS PARTLY WRITTEN; restore it from a copy"
            ),
        });
    }
    Ok(())
}

/// Turn-taking between commands that edit the same file: an advisory
/// lock (`flock(2)`) on the file, held from the last read of its text to
/// its replacement. Without it two exports started together both find
/// the text they read unchanged, and the one that renames last silently
/// drops the other's edit. Programs that do not lock (an editor) are not
/// kept out: the compare-before-replace in [`replace_file`] is the
/// defence there.
mod file_lock {
    use std::fs::File;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use nix::errno::Errno;
    use nix::fcntl::{Flock, FlockArg};

    /// How long a command waits for another's edit before giving up.
    pub const PATIENCE: Duration = Duration::from_secs(30);
    const POLL: Duration = Duration::from_millis(20);

    /// The held lock; `None` on a file system without locks (some
    /// network file systems), where the compare is the only defence.
    pub type Turn = Option<Flock<File>>;

    /// Locks the file at `real`, waiting up to [`PATIENCE`] for another
    /// holder. A holder that renamed a new file over the name leaves the
    /// lock on the old one, so the lock is taken again until it is on
    /// the file the name holds now.
    pub fn take(real: &Path) -> Result<Turn, String> {
        let start = Instant::now();
        loop {
            let file = File::open(real).map_err(|e| format!("cannot read the file again: {e}"))?;
            let held = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(held) => held,
                Err((_, Errno::EWOULDBLOCK)) => {
                    if start.elapsed() >= PATIENCE {
                        return Err(format!(
                            "another program has been editing the file for {} s (it holds a lock \
                             on it); nothing was written; try again when it is done",
                            PATIENCE.as_secs()
                        ));
                    }
                    if crate::interrupt::requested() {
                        return Err(
                            "stopped (Ctrl-C) before writing; the file was not changed".into()
                        );
                    }
                    std::thread::sleep(POLL);
                    continue;
                }
                Err((_, Errno::ENOLCK | Errno::EOPNOTSUPP | Errno::EINVAL)) => return Ok(None),
                Err((_, e)) => return Err(format!("cannot lock the file: {e}")),
            };
            let locked = held
                .metadata()
                .map_err(|e| format!("cannot lock the file: {e}"))?;
            match std::fs::metadata(real) {
                Ok(now) if now.ino() == locked.ino() && now.dev() == locked.dev() => {
                    return Ok(Some(held));
                }
                Ok(_) => continue,
                Err(e) => return Err(format!("cannot find the file: {e}")),
            }
        }
    }
}

/// Extended attributes (POSIX ACLs are stored as `system.posix_acl_*`,
/// SELinux labels as `security.selinux`, user tags as `user.*`): a new
/// file made beside the original starts without them, so they are copied
/// before it replaces the original. When one cannot be copied the caller
/// writes into the original instead, which keeps them all.
mod xattrs {
    use std::ffi::{CStr, CString};
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    /// Largest attribute list or value read (the kernel's own limit for
    /// one value is 64 KiB).
    const MAX: usize = 1 << 16;

    /// Copies every extended attribute of the file at `from` onto `to`.
    pub fn copy(from: &Path, to: &File) -> Result<(), String> {
        let path = CString::new(from.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let mut names = vec![0u8; MAX];
        // SAFETY: `path` is NUL-terminated and `names` is writable for
        // the length given.
        let len = unsafe { libc::listxattr(path.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
        if len < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                // A file system without extended attributes: none to keep.
                Some(libc::ENOTSUP) => Ok(()),
                _ => Err(format!("cannot list its extended attributes: {e}")),
            };
        }
        names.truncate(len as usize);
        let mut value = vec![0u8; MAX];
        for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let name = CString::new(name).map_err(|e| e.to_string())?;
            let name: &CStr = &name;
            // SAFETY: both strings are NUL-terminated; `value` is writable
            // for the length given.
            let n = unsafe {
                libc::getxattr(
                    path.as_ptr(),
                    name.as_ptr(),
                    value.as_mut_ptr().cast(),
                    value.len(),
                )
            };
            if n < 0 {
                return Err(format!(
                    "cannot read the extended attribute {}: {}",
                    name.to_string_lossy(),
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: the descriptor is open, `name` NUL-terminated, and
            // `value` holds `n` bytes.
            let set = unsafe {
                libc::fsetxattr(
                    to.as_raw_fd(),
                    name.as_ptr(),
                    value.as_ptr().cast(),
                    n as usize,
                    0,
                )
            };
            if set < 0 {
                return Err(format!(
                    "cannot copy the extended attribute {}: {}",
                    name.to_string_lossy(),
                    std::io::Error::last_os_error()
                ));
            }
        }
        Ok(())
    }
}

/// The file a layer's `from` names.
fn from_file(layer: &Layer) -> Option<&str> {
    layer.from.as_ref().map(|f| f.file.as_str())
}
