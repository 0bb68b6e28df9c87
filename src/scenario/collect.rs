//! Every type error of a scenario, not only the first. serde stops at the
//! first field it cannot read, so the scenario (as a YAML value) is read
//! again and again: each time the field the error is about is repaired
//! and the error noted, until the scenario reads or nothing more can be
//! learnt. A repair drops the field when it can (an unknown field, or a
//! wrong value that has a default), or else puts a stand-in value of the
//! right type there (a required field); the caller knows which fields were
//! repaired, and whether a stand-in was used, so that it does not report
//! problems that only the repairs made up.
//!
//! Bounded work: at most [`MAX_TYPE_ERRORS`] errors listed (the rest
//! counted), a fixed number of rounds, and a budget of bytes parsed in all.

use serde_json::{Map, Value};

use super::load::{Writer, describe, parse_options};
use super::locate::LocationIndex;
use super::overrides::dotted_keys;
use super::types::Scenario;

/// Type errors reported at most per file.
pub const MAX_TYPE_ERRORS: usize = 50;
/// Rounds of reading at most (repairs and stand-in trials included).
const MAX_ROUNDS: usize = 400;
/// YAML bytes read in all, at most, over the rounds (a few KiB a round
/// for a real scenario; a well under a second for a hostile one).
const MAX_BYTES: usize = 4 * 1024 * 1024;

/// One type error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    /// Dotted field path (empty when the parser gives no position).
    pub path: String,
    /// Whether the error is about a mapping key (an unknown field).
    pub is_key: bool,
    pub message: String,
}

/// What reading found.
#[derive(Debug, Default)]
pub struct Collected {
    /// The scenario read at last (with the repairs), if it could be.
    pub scenario: Option<Scenario>,
    /// The errors, in the order found; none of them about a field that
    /// contains, or is contained in, another's.
    pub errors: Vec<TypeError>,
    /// Paths of the repaired fields.
    pub repaired: Vec<String>,
    /// Whether a required field got a stand-in value.
    pub stand_ins: bool,
    /// Errors found beyond [`MAX_TYPE_ERRORS`], not listed.
    pub omitted: super::error::Omitted,
    /// The scenario read with every stand-in changed (a number plus one, a
    /// longer duration, another word): a problem of `scenario` that this
    /// one has too, word for word, does not come from a stand-in.
    pub other: Option<Scenario>,
}

/// Whether two paths are the same field or one contains the other.
pub fn related(a: &str, b: &str) -> bool {
    !a.is_empty()
        && !b.is_empty()
        && (a == b
            || a.strip_prefix(b).is_some_and(|r| r.starts_with('.'))
            || b.strip_prefix(a).is_some_and(|r| r.starts_with('.')))
}

/// Reads `value` as a scenario, collecting its type errors.
pub fn collect(mut value: Value) -> Collected {
    let mut c = Collected::default();
    let mut reader = Reader {
        budget: MAX_BYTES,
        rounds: MAX_ROUNDS,
    };
    let mut last: Option<(String, String)> = None;
    let mut stand_ins: Vec<String> = Vec::new();
    while let Some(result) = reader.read(&value) {
        let err = match result {
            Ok(s) => {
                c.scenario = Some(s);
                if !stand_ins.is_empty() {
                    for path in &stand_ins {
                        if let Some(v) = get(&mut value, path).map(other_value) {
                            put(&mut value, path, v);
                        }
                    }
                    c.other = reader.read(&value).and_then(Result::ok);
                }
                break;
            }
            Err(e) => e,
        };
        if err.path.is_empty() {
            if c.errors.is_empty() {
                c.errors.push(err);
            }
            break;
        }
        let key = (err.path.clone(), err.message.clone());
        if last.as_ref() == Some(&key) {
            break;
        }
        last = Some(key);
        let path = err.path.clone();
        let missing = err.message.starts_with("missing field `");
        // A field missing because its name was misspelt is the misspelling.
        let misspelt = missing
            && c.errors.iter().any(|e| {
                e.is_key
                    && parent(&e.path) == parent(&path)
                    && e.message
                        .contains(&format!("did you mean `{}`?", last_segment(&path)))
            });
        if !misspelt && !c.errors.iter().any(|e| related(&e.path, &path)) {
            if c.errors.len() < MAX_TYPE_ERRORS {
                c.errors.push(err);
            } else {
                // Counted, not listed.
                c.omitted.count += 1;
            }
        }
        match repair(&mut value, &path, missing, &mut reader) {
            Some(stand_in) => {
                c.stand_ins |= stand_in;
                if stand_in {
                    stand_ins.push(path.clone());
                }
                // The field that chooses its mapping's shape (`dist`,
                // `kind`): with it repaired, what the other fields of the
                // mapping are checked against is made up, so the whole
                // mapping counts as repaired (`weibul` is one error, not
                // also "`mean` does not apply to a constant service time").
                let repaired = match path.rsplit_once('.') {
                    Some((mapping, "dist" | "kind")) => mapping.to_string(),
                    _ => path,
                };
                c.repaired.push(repaired);
            }
            None => break,
        }
    }
    // Stopped before the scenario read: there may be more.
    c.omitted.at_least = c.omitted.count > 0 && c.scenario.is_none();
    c
}

fn parent(path: &str) -> &str {
    path.rfind('.').map_or("", |i| &path[..i])
}

fn last_segment(path: &str) -> &str {
    path.rfind('.').map_or(path, |i| &path[i + 1..])
}

/// Reads values as scenarios within a budget.
struct Reader {
    budget: usize,
    rounds: usize,
}

impl Reader {
    /// `value` read as a scenario, or its first error; `None` once the
    /// budget is spent.
    fn read(&mut self, value: &Value) -> Option<Result<Scenario, TypeError>> {
        self.rounds = self.rounds.checked_sub(1)?;
        let yaml = serde_saphyr::to_string(value).ok()?;
        self.budget = self.budget.checked_sub(yaml.len())?;
        Some(
            serde_saphyr::from_str_with_options::<Scenario>(&yaml, parse_options()).map_err(|e| {
                let d = describe(
                    &e,
                    &LocationIndex::build(&yaml),
                    Some(value),
                    Writer::Stormsim,
                );
                TypeError {
                    path: d.path,
                    is_key: d.is_key,
                    message: d.message,
                }
            }),
        )
    }
}

/// Where a field lives: its container and its key there.
enum Slot<'a> {
    Field(&'a mut Map<String, Value>, String),
    Item(&'a mut Vec<Value>, usize),
}

/// The slot of `path` in `root`: segments name fields, list indexes, or
/// list items by `name`; in `sweep` and a variant's `set` the rest of the
/// path is one key.
fn slot<'a>(root: &'a mut Value, path: &str) -> Option<Slot<'a>> {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = root;
    let mut depth = 0;
    loop {
        let dotted = dotted_keys(&segs[..depth]);
        let last = dotted || depth + 1 == segs.len();
        let seg = if dotted {
            segs[depth..].join(".")
        } else {
            segs[depth].to_string()
        };
        if last {
            return match cur {
                Value::Object(map) => Some(Slot::Field(map, seg)),
                Value::Array(items) => {
                    let i = item(items, &seg)?;
                    Some(Slot::Item(items, i))
                }
                _ => None,
            };
        }
        cur = match cur {
            Value::Object(map) => map.get_mut(&seg)?,
            Value::Array(items) => {
                let i = item(items, &seg)?;
                &mut items[i]
            }
            _ => return None,
        };
        depth += 1;
    }
}

/// The field an "unknown field `f`" or "missing field `f`" message is
/// about. The parser places these errors only roughly (where it was when
/// it noticed), so `hint` is a path at or below the mapping in question:
/// the mapping is the nearest of `hint`'s ancestors (itself included) that
/// has the unknown key the format does not know, or lacks the missing key
/// the format has there.
pub fn refine_path(hint: &str, message: &str, value: &Value) -> Option<String> {
    let (unknown, rest) = match (
        message.strip_prefix("unknown field `"),
        message.strip_prefix("missing field `"),
    ) {
        (Some(r), _) => (true, r),
        (None, Some(r)) => (false, r),
        _ => return None,
    };
    let field = rest.split_once('`')?.0;
    let mut candidate = Some(hint);
    while let Some(p) = candidate {
        let node = if p.is_empty() {
            Some(value)
        } else {
            get_ro(value, p)
        };
        if let Some(Value::Object(map)) = node {
            let segs: Vec<&str> = if p.is_empty() {
                Vec::new()
            } else {
                p.split('.').collect()
            };
            if let Some(known) = super::schema::fields_at(&segs) {
                let in_format = known.iter().any(|(n, _)| n == field);
                let present = map.contains_key(field);
                if (unknown && present && !in_format) || (!unknown && !present && in_format) {
                    return Some(if p.is_empty() {
                        field.to_string()
                    } else {
                        format!("{p}.{field}")
                    });
                }
            }
        }
        candidate = if p.is_empty() {
            None
        } else {
            Some(p.rfind('.').map_or("", |i| &p[..i]))
        };
    }
    None
}

/// The node at `path`, read-only (see [`slot`]).
fn get_ro<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = root;
    let mut depth = 0;
    while depth < segs.len() {
        if dotted_keys(&segs[..depth]) {
            return cur.get(segs[depth..].join("."));
        }
        cur = match cur {
            Value::Object(map) => map.get(segs[depth])?,
            Value::Array(items) => &items[item(items, segs[depth])?],
            _ => return None,
        };
        depth += 1;
    }
    Some(cur)
}

/// The index of the item `seg` names: a number, or an item's name
/// ([`item_name`]).
fn item(items: &[Value], seg: &str) -> Option<usize> {
    let i = match seg.parse::<usize>() {
        Ok(i) => i,
        Err(_) => items.iter().position(|v| item_name(v) == Some(seg))?,
    };
    (i < items.len()).then_some(i)
}

/// The name a list item goes by in paths: its `name`, or for a call
/// without one, the service it calls (`to`).
pub(crate) fn item_name(v: &Value) -> Option<&str> {
    match v.get("name") {
        Some(name) => name.as_str(),
        None => v.get("to").and_then(Value::as_str),
    }
}

/// Repairs the field at `path` so that reading gets past it: drops it
/// when it is a field that is there (its default, if any, applies), or
/// else puts a stand-in there. Returns whether a stand-in was used, or
/// `None` when no repair works.
fn repair(value: &mut Value, path: &str, missing: bool, reader: &mut Reader) -> Option<bool> {
    if !missing && let Slot::Field(map, key) = slot(value, path)? {
        map.remove(&key)?;
        return Some(false);
    }
    stand_in(value, path, reader).then_some(true)
}

/// Puts at `path` the first stand-in value with which reading gets past
/// `path`: a number, a duration, a rate, a word, a flag, a mapping, a
/// list, or the first name an enumeration lists.
fn stand_in(value: &mut Value, path: &str, reader: &mut Reader) -> bool {
    let mut candidates: Vec<Value> = vec![
        Value::from(1),
        Value::from(503),
        Value::from("1s"),
        Value::from("1/s"),
        Value::from("x"),
        Value::from(false),
        Value::Object(Map::new()),
        Value::Array(Vec::new()),
    ];
    let mut tried = 0;
    while tried < candidates.len() && tried < 16 {
        let candidate = candidates[tried].clone();
        tried += 1;
        if !put(value, path, candidate) {
            return false;
        }
        match reader.read(value) {
            None => return false,
            Some(Ok(_)) => return true,
            Some(Err(e)) if e.path != path => return true,
            Some(Err(e)) => {
                // An enumeration: take the first name it lists.
                if let Some(first) = e
                    .message
                    .strip_prefix("unknown value `")
                    .and_then(|r| r.split_once("expected one of: "))
                    .and_then(|(_, names)| names.split(", ").next())
                {
                    let name = first.trim_matches(['`', ';', ' ']).to_string();
                    if !name.is_empty() {
                        candidates.insert(tried, Value::from(name));
                    }
                }
            }
        }
    }
    false
}

fn get<'a>(value: &'a mut Value, path: &str) -> Option<&'a Value> {
    match slot(value, path)? {
        Slot::Field(map, key) => map.get(&key),
        Slot::Item(items, i) => items.get(i),
    }
}

/// Another value of the same type as the stand-in `v`.
fn other_value(v: &Value) -> Value {
    match v {
        Value::Number(n) => n.as_u64().map_or(v.clone(), |n| Value::from(n + 1)),
        Value::String(s) if s == "1s" => Value::from("97d"),
        Value::String(s) if s == "1/s" => Value::from("977/s"),
        Value::String(s) if s == "x" => Value::from("y"),
        Value::Bool(b) => Value::from(!b),
        other => other.clone(),
    }
}

fn put(value: &mut Value, path: &str, v: Value) -> bool {
    match slot(value, path) {
        Some(Slot::Field(map, key)) => {
            map.insert(key, v);
            true
        }
        Some(Slot::Item(items, i)) => {
            items[i] = v;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(src: &str) -> Value {
        serde_saphyr::from_str(src).unwrap()
    }

    const GOOD: &str = "name: x\nduration: 1m\nclients: { arrival: { kind: poisson, rate: 10/s } }\ndependency: { concurrency: 2, service_time: { dist: exponential, mean: 10ms } }\n";

    #[test]
    fn a_good_scenario_reads_at_once() {
        let c = collect(value(GOOD));
        assert!(c.scenario.is_some() && c.errors.is_empty() && c.repaired.is_empty());
    }

    #[test]
    fn finds_every_independent_type_error() {
        let src = GOOD
            .replace("duration: 1m", "duration: 60\ncolour: red")
            .replace("concurrency: 2", "concurrency: lots")
            + "layers:\n  - { name: a, timeout: 5x, retry: { jitter: fulll, retry_on: [timeout, bogus] } }\n";
        let c = collect(value(&src));
        let paths: Vec<&str> = c.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "duration",
                "layers.a.timeout",
                "layers.a.retry.jitter",
                "layers.a.retry.retry_on.1",
                "colour",
                "dependency.concurrency"
            ],
            "{:#?}",
            c.errors
        );
        assert!(c.errors[4].is_key);
        // `duration` and `concurrency` are required: stand-ins.
        assert!(c.stand_ins);
        assert!(c.scenario.is_some());
    }

    #[test]
    fn an_optional_field_is_dropped_without_a_stand_in() {
        let src = GOOD.replace("duration: 1m", "duration: 1m\nbucket: 5");
        let c = collect(value(&src));
        assert_eq!(c.errors.len(), 1, "{:#?}", c.errors);
        assert!(!c.stand_ins);
        assert_eq!(c.repaired, ["bucket"]);
    }

    #[test]
    fn related_paths() {
        assert!(related("a.b", "a.b.c") && related("a.b.c", "a.b") && related("a", "a"));
        assert!(!related("a.b", "a.bc") && !related("", "a"));
    }
}
