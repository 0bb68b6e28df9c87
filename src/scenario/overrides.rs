//! Overrides: `--set PATH=VALUE` on the command line, the `set` map of a
//! variant, and the values of a sweep point. A path is dotted
//! (`layers.api.retry.jitter`, `dependency.incidents.0.end`): a numeric
//! segment indexes a list, any other segment in a list picks the item with
//! that `name` (a layer). In the maps whose keys are themselves dotted
//! paths, `sweep`, a variant's `set` and `tune.space`, the rest of the
//! path is one key (`sweep.dependency.concurrency`,
//! `variants.0.set.layers.api.timeout`).
//! These are the paths error messages print, so an error's path can be
//! pasted into `--set`.
//!
//! Every override of a set is applied first, in order, and the result is
//! validated once, so the order of overrides never matters to validation
//! (`--set duration=10s --set dependency.incidents.0.end=10s` is the same
//! as the reverse). The scenario is serialised to JSON, each value is put
//! at its path (a missing mapping the format knows, such as `sweep` or a
//! layer's `breaker`, is created), and the result is read back through the
//! scenario types, so unknown fields and wrong types are caught exactly as
//! in a file.

use serde_json::{Map, Value};

use super::collect::item_name;
use super::error::{SET_LABEL, ScenarioError, ScenarioErrors, one_line};
use super::presets::Step;
use super::schema::fields_at;
use super::suggest::{Wording, did_you_mean, serde_words};
use super::types::Scenario;
use super::validate::{Issue, validate};

/// `s` with `value` at `path`, validated; errors are labelled `<--set>`.
pub fn apply_set(s: &Scenario, path: &str, value: Value) -> Result<Scenario, ScenarioErrors> {
    apply_sets(s, &[(path.to_string(), value)])
}

/// `s` with every override applied in order, then validated once; errors
/// are labelled `<--set>`.
pub fn apply_sets(s: &Scenario, sets: &[(String, Value)]) -> Result<Scenario, ScenarioErrors> {
    let labelled = |issues: Vec<Issue>| {
        ScenarioErrors::new(
            issues
                .into_iter()
                .map(|i| ScenarioError::new(SET_LABEL, i.message).with_path(i.path))
                .collect(),
        )
    };
    let out = apply_overrides(s, sets).map_err(labelled)?;
    let issues = validate(&out);
    if issues.is_empty() {
        Ok(out)
    } else {
        Err(labelled(issues))
    }
}

/// Splits a command-line `PATH=VALUE`; VALUE is YAML (`none`, `32`, `2s`,
/// `{proportional: 0.5}`, `[timeout, 503]`, `null` to remove an optional
/// field).
pub fn parse_set_arg(arg: &str) -> Result<(String, Value), ScenarioError> {
    use super::error::clip;
    let err = |m: String| ScenarioError::new(SET_LABEL, m);
    let Some((path, text)) = arg.split_once('=') else {
        return Err(err(format!(
            "`{}` has no `=`; expected PATH=VALUE, such as layers.api.retry.jitter=none",
            clip(arg)
        )));
    };
    let path = path.trim();
    if path.is_empty() {
        return Err(err(format!(
            "`{}` has no path before `=`; expected PATH=VALUE",
            clip(arg)
        )));
    }
    if text.trim().is_empty() {
        return Err(err(
            "no value after `=`; expected PATH=VALUE (use `null` to remove an optional field)"
                .into(),
        )
        .with_path(path));
    }
    // The same limits as a scenario file's, no smaller: a value may be
    // as large as the file could hold it.
    let limit = super::load::MAX_FILE_BYTES;
    if text.len() as u64 > limit {
        return Err(err(format!(
            "the value is {} bytes; a value may be at most {limit} bytes, as a scenario file",
            text.len()
        ))
        .with_path(path));
    }
    // YAML reads a carriage return (and a line or paragraph separator,
    // as a YAML 1.1 reader would) as a line break, which would fold the
    // value into another one ("x\ry" read as "x y"): a value given on
    // the command line holds none of them.
    if let Some(c) = text
        .chars()
        .find(|c| matches!(c, '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'))
    {
        return Err(err(format!(
            "the value `{}` holds {}, which YAML reads as a line break; a value on the \
             command line takes none: remove it",
            clip(text),
            match c {
                '\r' => "a carriage return (U+000D)".to_string(),
                c => crate::escape::unsafe_char_in(&c.to_string()).unwrap_or_default(),
            }
        ))
        .with_path(path));
    }
    let value = serde_saphyr::from_str_with_options::<Value>(text, super::load::parse_options())
        .map_err(|e| {
            let m = serde_saphyr::MessageFormatter::format_message(&Wording, e.without_snippet());
            err(format!("the value `{}` is not valid YAML: {m}", clip(text))).with_path(path)
        })?;
    // A tag (`!include x.yaml`) would be dropped without a word.
    let index = super::locate::LocationIndex::build(text);
    if let Some((_, _, tag)) = index.unsupported_tags().first() {
        return Err(err(super::load::tag_message(tag)).with_path(path));
    }
    Ok((path.to_string(), value))
}

/// `errors` with every number a `--set` in `args` wrote shown as it was
/// typed: YAML reads `1e3` and `18446744073709551616` as floats, which
/// print as `1000.0` and `1.8446744073709552e+19`; an error about the
/// field quotes it as `1e3`.
pub fn show_as_typed(errors: &mut [ScenarioError], args: &[String]) {
    for arg in args {
        let Some((path, text)) = arg.split_once('=') else {
            continue;
        };
        let Ok((_, value)) = parse_set_arg(arg) else {
            continue;
        };
        // The value, or each value of a list (a sweep's), as typed.
        let index = super::locate::LocationIndex::build(text);
        let typed: Vec<(&Value, &str)> = match &value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((v, index.scalar(&i.to_string())?)))
                .collect(),
            v => vec![(v, text.trim())],
        };
        let field = path.trim().rsplit('.').next().unwrap_or_default();
        let about = |e: &ScenarioError| {
            e.file == SET_LABEL
                && e.path
                    .as_deref()
                    .is_some_and(|p| p.rsplit('.').next() == Some(field))
        };
        // The errors about the path set or a field inside it.
        let typed_path = path.trim();
        let under = |e: &ScenarioError| {
            e.file == SET_LABEL
                && e.path
                    .as_deref()
                    .is_some_and(|p| super::collect::related(p, typed_path))
        };
        // A number written as text with a tag (`!!str 3`): the tag is what
        // to remove.
        if let Some(tag) = index.core_tag("") {
            for e in errors.iter_mut().filter(|e| under(e)) {
                e.message = super::text_numbers::with_tag(std::mem::take(&mut e.message), tag);
            }
        }
        // A value that is not finite inside a mapping (`{ base: -.Inf }`,
        // a variant's overrides) is held as YAML's canonical text
        // (`-.inf`): quoted as typed too, in those errors.
        let mut inner: Vec<(&Value, &str)> = Vec::new();
        if value.is_object() {
            non_finite_inside(&value, "", &index, &mut inner);
        }
        for (value, typed) in inner {
            for s in spellings(value, typed) {
                for e in errors.iter_mut().filter(|e| under(e)) {
                    e.message = e.message.replace(&format!("`{s}`"), &format!("`{typed}`"));
                }
            }
        }
        for (value, typed) in typed {
            let shown = spellings(value, typed);
            if shown.is_empty() {
                continue;
            }
            for e in errors.iter_mut().filter(|e| about(e)) {
                for s in &shown {
                    e.message = e.message.replace(&format!("`{s}`"), &format!("`{typed}`"));
                }
                // A sweep value's label (`sweep value 2.5: `) too.
                e.message = super::load::as_written(std::mem::take(&mut e.message), typed);
            }
        }
    }
    // Quoted as typed, a number with a leading zero says why it is refused.
    for e in errors.iter_mut().filter(|e| e.file == SET_LABEL) {
        e.message = super::error::leading_zero_note(std::mem::take(&mut e.message));
    }
}

/// Every value of `value` (at `at` in the text `index` was built from)
/// that is not finite (`.nan`, `-.Inf`, held as text), with its text as
/// typed; at most a few thousand.
fn non_finite_inside<'v, 'i>(
    value: &'v Value,
    at: &str,
    index: &'i super::locate::LocationIndex,
    out: &mut Vec<(&'v Value, &'i str)>,
) {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match value {
        _ if out.len() >= 4096 => {}
        Value::Object(map) => {
            for (k, v) in map {
                non_finite_inside(v, &join(k), index, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                non_finite_inside(v, &join(&i.to_string()), index, out);
            }
        }
        Value::String(text) if super::load::yaml_float(text).is_some_and(|v| !v.is_finite()) => {
            if let Some(typed) = index.scalar(at) {
                out.push((value, typed));
            }
        }
        _ => {}
    }
}

/// How messages may spell `value`, a number typed as `typed` (or one
/// that is not finite, `.inf`, held as its text), other than as typed:
/// none for another value, or a long one (only a short scalar is a
/// number).
fn spellings(value: &Value, typed: &str) -> Vec<String> {
    let read = match value {
        _ if typed.len() > 64 => return Vec::new(),
        Value::Number(n) => n.as_f64(),
        Value::String(text) => match super::load::yaml_float(text) {
            Some(read) if !read.is_finite() => Some(read),
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    let mut shown = vec![value.to_string()];
    if let Value::String(text) = value {
        shown.push(text.clone());
    }
    if let Ok(yaml) = serde_saphyr::to_string(value) {
        shown.push(yaml.trim().to_string());
    }
    // As the reader quotes a float it was handed (`1e23`, `3` for
    // `3.0`, `inf`).
    if let Some(read) = read {
        shown.push(crate::human::compact(read));
    }
    shown.retain(|s| s != typed);
    shown
}

/// `s` with every override put in place, in order, read back through the
/// scenario types and with its field-dependent defaults filled; not
/// validated. Problems with a path, a value's shape or type come back as
/// issues, all of them (each about the path it concerns).
pub(crate) fn apply_overrides(
    s: &Scenario,
    sets: &[(String, Value)],
) -> Result<Scenario, Vec<Issue>> {
    let mut json = serde_json::to_value(s).map_err(|e| {
        vec![Issue {
            path: String::new(),
            message: format!("cannot represent the scenario: {e}"),
        }]
    })?;
    let before = json.clone();
    let mut issues = Vec::new();
    // Every path names its items as the scenario before any override has
    // them (a rename by another override changes nothing of it), so the
    // order of the overrides never matters.
    let renames = renames(sets);
    let mut resolved: Vec<(String, Value)> = Vec::with_capacity(sets.len());
    let mut ok: Vec<bool> = Vec::with_capacity(sets.len());
    for (path, value) in sets {
        match resolve_items(&json, path, &renames) {
            Ok(r) => {
                resolved.push((r, value.clone()));
                ok.push(true);
            }
            Err(mut e) => {
                issues.append(&mut e);
                resolved.push((path.clone(), value.clone()));
                ok.push(false);
            }
        }
    }
    // A `preset` is put before every other override, so that the fields
    // set beside it override it (as beside a preset in a file) whatever
    // their order; the rest keep theirs.
    let is_preset = |i: &usize| resolved[*i].0.rsplit('.').next() == Some("preset");
    let order: Vec<usize> = (0..sets.len())
        .filter(is_preset)
        .chain((0..sets.len()).filter(|i| !is_preset(i)))
        .filter(|i| ok[*i])
        .collect();
    let applied: Vec<(String, Value)> = order.iter().map(|&i| resolved[i].clone()).collect();
    let mut seeded: Vec<(String, usize)> = Vec::new();
    for (i, &at) in order.iter().enumerate() {
        let (typed, (path, value)) = (&sets[at].0, &applied[i]);
        let target = preset_target(&json, path);
        let mut seeds = Vec::new();
        let put = put_seeding(&mut json, typed, path, value.clone(), &mut seeds);
        seeded.extend(seeds.into_iter().map(|p| (p, i)));
        match put {
            Ok(()) => {
                if let Some(t) = target {
                    apply_presets_after_set(&mut json, &t);
                }
            }
            Err(mut e) => issues.append(&mut e),
        }
    }
    // A number written as text (`"3"`, `1_000`): refused at the path
    // typed, as in a file.
    for (i, &at) in order.iter().enumerate() {
        let segs: Vec<String> = applied[i].0.split('.').map(str::to_string).collect();
        for (below, text) in super::text_numbers::in_value(&segs, &applied[i].1) {
            if let Some(message) = super::text_numbers::refusal(&below, &text, false) {
                let rest: Vec<&str> = below[segs.len()..].iter().map(String::as_str).collect();
                let typed = &sets[at].0;
                issues.push(Issue {
                    path: if rest.is_empty() {
                        typed.clone()
                    } else {
                        format!("{typed}.{}", rest.join("."))
                    },
                    message,
                });
            }
        }
    }
    derive_seeded(&mut json, &seeded, &applied);
    // `null` on a field the format does not require: its default (an
    // optional field unset, the base scenario's value removed).
    super::schema::strip_nulls(&mut json);
    // Judged on the values, so that a type error elsewhere in the same
    // override hides it not.
    issues.extend(changed_from(s, &before, &json, sets, &resolved));
    let out = match serde_json::from_value::<Scenario>(json.clone()) {
        Ok(out) => out,
        Err(e) => {
            // Read as a file is read (a YAML scalar `5` is also text), with
            // every type error located.
            let found = super::collect::collect(json.clone());
            match found.scenario {
                Some(out) if found.errors.is_empty() => out,
                _ if found.errors.is_empty() => {
                    // The fast reader and the located one disagree: report
                    // the fast one's message at the only path known.
                    let path = match sets {
                        [(p, _)] => p.clone(),
                        _ => String::new(),
                    };
                    issues.push(Issue {
                        path,
                        message: one_line(&serde_words(&strip_position(&e.to_string()))),
                    });
                    return Err(issues);
                }
                _ => {
                    // Each error's path names items as the overrides were
                    // typed (a renamed item by its name in the file).
                    let ok_sets: Vec<(&str, &str)> = sets
                        .iter()
                        .zip(&resolved)
                        .zip(&ok)
                        .filter(|(_, ok)| **ok)
                        .map(|(((typed, _), (at, _)), _)| (typed.as_str(), at.as_str()))
                        .collect();
                    issues.extend(found.errors.into_iter().map(|e| Issue {
                        path: as_typed(&json, s, &ok_sets, &e.path),
                        message: e.message,
                    }));
                    return Err(issues);
                }
            }
        }
    };
    if !issues.is_empty() {
        return Err(issues);
    }
    Ok(out)
}

/// `path`, a field of `after` (the scenario with the overrides put in
/// place) that names its items by their names there, as the user names
/// it: under an override's field (`sets`: as typed, and by index), by the
/// path typed (`--set layers.a.timeout=x` beside a rename of `a` is about
/// `layers.a.timeout`, not the new name); else by the names `base`, the
/// scenario before the overrides, gives its items.
fn as_typed(after: &Value, base: &Scenario, sets: &[(&str, &str)], path: &str) -> String {
    let at = indexed_in(after, path);
    for (typed, by_index) in sets {
        if let Some(rest) = at.strip_prefix(by_index)
            && (rest.is_empty() || rest.starts_with('.'))
        {
            return format!("{typed}{rest}");
        }
    }
    super::variants::normalize_path(base, &at)
}

/// `path` with every list item it names written as its index in `root`
/// (the rest of a path past what `root` holds, or inside a map whose keys
/// are paths, as it is).
fn indexed_in(root: &Value, path: &str) -> String {
    let mut segs: Vec<String> = path.split('.').map(str::to_string).collect();
    let mut cur = root;
    for depth in 0..segs.len() {
        let here: Vec<&str> = segs[..depth].iter().map(String::as_str).collect();
        if dotted_keys(&here) {
            break;
        }
        cur = match cur {
            Value::Object(map) => match map.get(&segs[depth]) {
                Some(v) => v,
                None => break,
            },
            Value::Array(items) => {
                let i = match segs[depth].parse::<usize>() {
                    Ok(i) => i,
                    Err(_) => match items
                        .iter()
                        .position(|v| item_name(v) == Some(segs[depth].as_str()))
                    {
                        Some(i) => i,
                        None => break,
                    },
                };
                let Some(v) = items.get(i) else { break };
                segs[depth] = i.to_string();
                v
            }
            _ => break,
        };
    }
    segs.join(".")
}

/// Every `from` of a scenario (as JSON): where it is by index
/// (`layers.0`, `services.1.calls.0`, `clients.calls`) and the `from`
/// itself, its unset fields left out.
fn from_specs(s: &Value) -> Vec<(String, Value)> {
    let from = |item: &Value| {
        let mut f = item.get("from").filter(|f| !f.is_null())?.clone();
        super::schema::strip_nulls(&mut f);
        Some(f)
    };
    let items = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (i, l) in items(s.get("layers")).iter().enumerate() {
        if let Some(f) = from(l) {
            out.push((format!("layers.{i}"), f));
        }
    }
    for (k, sv) in items(s.get("services")).iter().enumerate() {
        for (i, c) in items(sv.get("calls")).iter().enumerate() {
            if let Some(f) = from(c) {
                out.push((format!("services.{k}.calls.{i}"), f));
            }
        }
    }
    if let Some(f) = s.get("clients").and_then(|c| c.get("calls")).and_then(from) {
        out.push(("clients.calls".to_string(), f));
    }
    out
}

/// An issue about each override that gives `out` a `from` that `s` has
/// not at the same place (a new one, or one changed): a file's settings
/// are read when the scenario file loads, so an override of `from` would
/// be recorded as resolved beside values the file never gave. Removing a
/// `from` is fine (the values read stay, written out); so is renaming
/// the item that has it. `sets` are the overrides as typed, `resolved`
/// the same with their items by index ([`resolve_items`]): an override
/// is blamed only when it writes the `from` or what holds it, never
/// another one beside it.
fn changed_from(
    s: &Scenario,
    before: &Value,
    after: &Value,
    sets: &[(String, Value)],
    resolved: &[(String, Value)],
) -> Vec<Issue> {
    let before = from_specs(before);
    let changed: Vec<(String, String)> = from_specs(after)
        .into_iter()
        .filter(|(at, f)| !before.iter().any(|(b_at, b)| b_at == at && b == f))
        .map(|(at, _)| {
            // Labelled as the scenario before the overrides labels it.
            let label = super::variants::normalize_path(s, &at);
            (format!("{at}.from"), label)
        })
        .collect();
    if changed.is_empty() {
        return Vec::new();
    }
    let mut culprits: Vec<(&str, Vec<&str>)> = sets
        .iter()
        .zip(resolved)
        .filter_map(|((typed, _), (p, _))| {
            let which: Vec<&str> = changed
                .iter()
                .filter(|(at, _)| super::collect::related(p, at))
                .map(|(_, shown)| shown.as_str())
                .collect();
            (!which.is_empty()).then_some((typed.as_str(), which))
        })
        .collect();
    if culprits.is_empty() {
        // Not recognisably one override's doing: every override may be.
        let all: Vec<&str> = changed.iter().map(|(_, shown)| shown.as_str()).collect();
        culprits = sets
            .iter()
            .map(|(p, _)| (p.as_str(), all.clone()))
            .collect();
    }
    culprits
        .into_iter()
        .map(|(p, which)| Issue {
            path: p.to_string(),
            message: format!(
                "changes the `from` of {}: a configuration file's settings are read when the scenario file loads, not after an override; set the fields themselves (they override the file's, leaf by leaf), or change `from` in the scenario file",
                which.join(", ")
            ),
        })
        .collect()
}

/// `s` with those of `sets` that none of `issues` is about, when any: what
/// the other overrides make of the scenario, so that its problems can be
/// reported beside the bad overrides' own. Overrides that cannot be
/// applied beside the others are left out too, until the rest applies;
/// their problems (which `issues` did not have: one override's may hide
/// another's) go to `more`.
pub(crate) fn apply_the_rest(
    s: &Scenario,
    sets: &[(String, Value)],
    issues: &[Issue],
    more: &mut Vec<Issue>,
) -> Option<Scenario> {
    let keep = |sets: &[(String, Value)], issues: &[Issue]| -> Vec<(String, Value)> {
        sets.iter()
            .filter(|(p, _)| {
                !issues.iter().any(|i| {
                    i.path.is_empty()
                        || super::collect::related(p, &i.path)
                        || i.path.starts_with(p.as_str())
                })
            })
            .cloned()
            .collect()
    };
    let mut rest = keep(sets, issues);
    if rest.len() == sets.len() {
        return None;
    }
    loop {
        match apply_overrides(s, &rest) {
            Ok(out) => return Some(out),
            Err(found) => {
                let fewer = keep(&rest, &found);
                for i in found {
                    if !issues.contains(&i) && !more.contains(&i) {
                        more.push(i);
                    }
                }
                if fewer.len() == rest.len() {
                    return None;
                }
                rest = fewer;
            }
        }
    }
}

/// How a `--set` path touches presets: the steps (indexes, not names) it
/// leads to, resolved before the value is put (a replaced item may change
/// its name). A path that leads to a policy object or to something that
/// holds policy objects (`layers`, `services.gateway`, `clients`) replaced
/// them: their presets fill the fields they do not write. A path to a
/// policy object's `preset` set it: its fields replace the object's.
fn preset_target(json: &Value, path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut cur = Some(json);
    for seg in path.split('.') {
        let step = match cur {
            Some(Value::Array(items)) => {
                let i = match seg.parse::<usize>() {
                    Ok(i) => i,
                    Err(_) => items.iter().position(|v| item_name(v) == Some(seg))?,
                };
                cur = items.get(i);
                Step::Index(i)
            }
            Some(v) => {
                cur = v.get(seg);
                Step::Key(seg.to_string())
            }
            None => Step::Key(seg.to_string()),
        };
        steps.push(step);
    }
    Some(steps)
}

/// Fills or overwrites preset fields after a `--set` that led to `steps`
/// (see [`preset_target`]).
fn apply_presets_after_set(json: &mut Value, steps: &[Step]) {
    use super::presets::{fill_layer, for_preset_policies, overwrite_layer};
    let preset = Step::Key("preset".into());
    if let [policy @ .., last] = steps
        && *last == preset
    {
        for_preset_policies(json, |at| at.steps() == policy, overwrite_layer);
    }
    for_preset_policies(json, |at| at.steps().starts_with(steps), fill_layer);
}

/// serde_json appends " at line 1 column 0"-style positions that mean
/// nothing for an in-memory value.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn issue(path: &str, message: impl Into<String>) -> Vec<Issue> {
    vec![Issue {
        path: path.to_string(),
        message: one_line(&message.into()),
    }]
}

/// Whether the container reached by `segs` is a map whose keys are dotted
/// paths themselves: `sweep`, the `set` of a variant, or `tune.space`.
pub(super) fn dotted_keys(segs: &[&str]) -> bool {
    matches!(segs, ["sweep"] | ["variants", _, "set"] | ["tune", "space"])
}

/// The names overrides give list items: (new name, the override's path)
/// for each override of an item's `name` (or a call's `to`, which names a
/// call without a `name`) to a text.
fn renames(sets: &[(String, Value)]) -> Vec<(String, String)> {
    sets.iter()
        .filter(|(p, _)| {
            let segs: Vec<&str> = p.split('.').collect();
            matches!(segs.last(), Some(&"name") | Some(&"to")) && segs.len() >= 3
        })
        .filter_map(|(p, v)| Some((v.as_str()?.to_string(), p.clone())))
        .collect()
}

/// `path` with every list item it names (`layers.api`,
/// `services.db.calls.cache`, `variants.fast`) written as its index in
/// `root`, the scenario before any override: a path names an item by the
/// name the file gives it, whatever another override renames it to
/// (`--set services.db.name=db2 --set services.db.capacity=4` in either
/// order). In a map whose keys are paths (`sweep`, a variant's `set`,
/// `tune.space`) the rest is one key, left as it is (a variant's keys
/// name the base scenario's items when the variant is applied); so is
/// the rest of a path past what `root` has (a mapping an override
/// creates). A name no item has is an error (naming the override that
/// gives an item that name, if one does: `renames`).
fn resolve_items(
    root: &Value,
    path: &str,
    renames: &[(String, String)],
) -> Result<String, Vec<Issue>> {
    let mut segs: Vec<String> = path.split('.').map(str::to_string).collect();
    let mut cur = root;
    for depth in 0..segs.len() {
        let here: Vec<&str> = segs[..depth].iter().map(String::as_str).collect();
        if dotted_keys(&here) && cur.is_object() {
            break;
        }
        let seg = segs[depth].clone();
        cur = match cur {
            Value::Object(map) => match map.get(&seg) {
                Some(v) => v,
                None => break,
            },
            Value::Array(items) => {
                let shown: Vec<&str> = path.split('.').take(depth).collect();
                let i = item_index(items, &seg, &shown.join("."), path).map_err(|mut e| {
                    if let Some((_, by)) = renames.iter().find(|(n, by)| *n == seg && by != path)
                    {
                        for i in &mut e {
                            i.message = format!(
                                "{}; a path names an item by its name before any override (`{by}` gives one the name `{seg}`, which the other overrides do not see, so that their order never matters): use its name in the file, or its index",
                                i.message
                            );
                        }
                    }
                    e
                })?;
                segs[depth] = i.to_string();
                &items[i]
            }
            _ => break,
        };
    }
    Ok(segs.join("."))
}

/// The default of a mapping field whose default is not empty, written when
/// an override creates it to set one of its fields: a retry policy's
/// `backoff` (`Backoff::default`'s kind and base; its cap is derived by
/// [`derive_seeded`]).
fn seed(here: &[&str], seg: &str) -> Option<Value> {
    (seg == "backoff" && here.last() == Some(&"retry")).then(|| {
        let d = super::types::Backoff::default();
        serde_json::json!({ "kind": "exponential", "base": d.base.to_string() })
    })
}

/// The fields of the default backoff an override did not set, derived from
/// those it did: the cap is 5 s, or the base when that is longer (none for
/// constant backoff); the base is 100 ms, or the cap when that is shorter.
/// `seeded` holds each backoff created by `put_seeding` with the index of
/// the override that created it; a later override of it whole (or of what
/// holds it) is the user's own and left alone.
fn derive_seeded(json: &mut Value, seeded: &[(String, usize)], sets: &[(String, Value)]) {
    use super::units::{Duration, parse_duration};
    for (at, first) in seeded {
        let replaced = sets[first + 1..]
            .iter()
            .any(|(p, _)| p == at || at.starts_with(&format!("{p}.")));
        if replaced {
            continue;
        }
        let user: Vec<&str> = sets
            .iter()
            .filter_map(|(p, _)| p.strip_prefix(&format!("{at}.")))
            .map(|rest| rest.split('.').next().unwrap_or(rest))
            .collect();
        let Some(Value::Object(b)) = node_mut(json, at) else {
            continue;
        };
        let d = super::types::Backoff::default();
        let read = |v: Option<&Value>| {
            v.and_then(Value::as_str)
                .and_then(|t| parse_duration(t).ok())
        };
        let kind = b
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("exponential")
            .to_string();
        if !user.contains(&"base")
            && let Some(cap) = read(b.get("cap"))
        {
            b.insert("base".into(), Value::from(d.base.min(cap).to_string()));
        }
        if !user.contains(&"cap") && kind != "constant" {
            let base = read(b.get("base")).unwrap_or(d.base);
            let cap = d.cap.unwrap_or(Duration::from_secs(5)).max(base);
            b.insert("cap".into(), Value::from(cap.to_string()));
        }
    }
}

/// The node at `path` (segments as [`put`] takes them), if there is one.
pub(super) fn node<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(map) => map.get(seg)?,
            Value::Array(items) => &items[item_index(items, seg, "", path).ok()?],
            _ => return None,
        };
    }
    Some(cur)
}

/// As [`node`], to change it.
fn node_mut<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = root;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(map) => map.get_mut(seg)?,
            Value::Array(items) => {
                let i = item_index(items, seg, "", path).ok()?;
                &mut items[i]
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// Puts `value` at `nav` (`path`, the override as typed, with its items
/// resolved by [`resolve_items`]) in `root`. The last segment may create
/// a missing mapping key (the typed re-read rejects unknown ones); a
/// missing mapping on the way is created when the scenario format has it
/// (`sweep`, a layer's `breaker`), else the path is an error that lists
/// the fields there. In `sweep` and a variant's `set` the rest of the
/// path is one key; `null` there removes the key. Messages say `path`.
/// Notes in `seeds` the path (as `nav`) of every mapping it created from
/// its default ([`seed`]).
fn put_seeding(
    root: &mut Value,
    path: &str,
    nav: &str,
    value: Value,
    seeds: &mut Vec<String>,
) -> Result<(), Vec<Issue>> {
    let segs: Vec<&str> = nav.split('.').collect();
    let typed: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.trim().is_empty()) || typed.len() != segs.len() {
        return Err(issue(
            path,
            "the path has an empty segment; expected dotted names such as layers.api.retry.jitter",
        ));
    }
    let mut cur = root;
    let mut depth = 0;
    loop {
        let here = &segs[..depth];
        let shown = typed[..depth].join(".");
        let rest = &segs[depth..];
        if dotted_keys(here)
            && let Value::Object(map) = cur
        {
            let key = rest.join(".");
            if !map.contains_key(&key)
                && let Some(n) = within_key(map, rest)
            {
                // `tune.space.layers.api.retry.max_attempts.int`: a field
                // of the mapping at an existing key, not a new key.
                let inner = map.get_mut(&rest[..n].join("."));
                return put_within(inner, &rest[n..], value, path);
            }
            if value.is_null() {
                map.remove(&key);
            } else {
                map.insert(key, value);
            }
            return Ok(());
        }
        let seg = rest[0];
        if rest.len() == 1 {
            return match cur {
                Value::Object(map) => {
                    map.insert(seg.to_string(), value);
                    Ok(())
                }
                Value::Array(items) => {
                    let i = item_index(items, seg, &shown, path)?;
                    items[i] = value;
                    Ok(())
                }
                other => Err(not_a_container(other, typed[depth], &shown, path)),
            };
        }
        cur = child(cur, seg, here, &typed[..depth], path, seeds)?;
        depth += 1;
    }
}

/// In a map whose keys are paths, the length of the longest key among
/// the first segments of `rest` (fewer than all) whose value is a
/// mapping: `rest` then names a field inside that mapping (a tune range's
/// `int`, a field of a policy a variant sets whole). A sweep's values are
/// lists, never entered this way.
fn within_key(map: &Map<String, Value>, rest: &[&str]) -> Option<usize> {
    (1..rest.len())
        .rev()
        .find(|&n| map.get(&rest[..n].join(".")).is_some_and(Value::is_object))
}

/// Puts `value` at `rest` inside `cur` (a mapping), making the mappings
/// on the way; `null` removes the last key.
fn put_within(
    cur: Option<&mut Value>,
    rest: &[&str],
    value: Value,
    path: &str,
) -> Result<(), Vec<Issue>> {
    let mut cur = cur.ok_or_else(|| issue(path, "internal error: a field vanished"))?;
    for (i, seg) in rest.iter().enumerate() {
        match cur {
            Value::Object(map) if i + 1 == rest.len() => {
                if value.is_null() {
                    map.remove(*seg);
                } else {
                    map.insert(seg.to_string(), value);
                }
                return Ok(());
            }
            Value::Object(map) => {
                cur = map
                    .entry(seg.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            other => {
                let shown = path.rsplitn(rest.len() - i + 1, '.').last().unwrap_or(path);
                return Err(not_a_container(other, seg, shown, path));
            }
        }
    }
    Ok(())
}

/// The child `seg` of `cur` at `here` (as [`put_seeding`] navigates;
/// `shown`, as the override was typed, for messages).
fn child<'a>(
    cur: &'a mut Value,
    seg: &str,
    here: &[&str],
    shown: &[&str],
    path: &str,
    seeds: &mut Vec<String>,
) -> Result<&'a mut Value, Vec<Issue>> {
    let here_text = shown.join(".");
    match cur {
        Value::Object(map) => {
            if !map.contains_key(seg) {
                if !known_mapping(here, seg) {
                    return Err(missing_key(map, seg, shown, path));
                }
                let fresh = match seed(here, seg) {
                    Some(v) => {
                        seeds.push(
                            here.iter()
                                .chain([&seg])
                                .copied()
                                .collect::<Vec<_>>()
                                .join("."),
                        );
                        v
                    }
                    None => Value::Object(Map::new()),
                };
                map.insert(seg.to_string(), fresh);
            }
            let next = map
                .get_mut(seg)
                .ok_or_else(|| issue(path, "internal error: a field vanished"))?;
            if next.is_null() && known_mapping(here, seg) {
                *next = Value::Object(Map::new());
            }
            Ok(next)
        }
        Value::Array(items) => {
            let i = item_index(items, seg, &here_text, path)?;
            Ok(&mut items[i])
        }
        other => Err(not_a_container(other, seg, &here_text, path)),
    }
}

fn where_(here: &str) -> String {
    if here.is_empty() {
        "the top level".to_string()
    } else {
        format!("`{here}`")
    }
}

/// The error for a missing key: the fields the format has there (all of
/// them, present or not), with the closest as a suggestion.
fn missing_key(map: &Map<String, Value>, seg: &str, here: &[&str], path: &str) -> Vec<Issue> {
    let known = fields_at(here).map(|f| f.into_iter().map(|(n, _)| n).collect::<Vec<_>>());
    let keys: Vec<String> = known.unwrap_or_else(|| map.keys().cloned().collect());
    if keys.iter().any(|k| k == seg) {
        // A field of the format the file leaves out: a list with no items
        // (a mapping is made as needed), which an index cannot reach into.
        let full: Vec<&str> = here.iter().copied().chain([seg]).collect();
        let full = full.join(".");
        let item = path
            .strip_prefix(full.as_str())
            .and_then(|r| r.strip_prefix('.'))
            .and_then(|r| r.split('.').next())
            .unwrap_or("0");
        return issue(
            path,
            format!(
                "`{full}` is empty: the file has no `{seg}`, so there is no item `{item}`; to add items, set the whole list: --set '{full}=[...]'"
            ),
        );
    }
    let hint = did_you_mean(seg, keys.iter().map(String::as_str))
        .map(|k| format!("did you mean `{k}`? "))
        .unwrap_or_default();
    issue(
        path,
        format!(
            "no `{seg}` in {}; {hint}fields there: {}",
            where_(&here.join(".")),
            keys.join(", ")
        ),
    )
}

/// The index of the item `seg` names in a list: a number, or the name of
/// an item (its `name`, or a call's `to`).
fn item_index(items: &[Value], seg: &str, here: &str, path: &str) -> Result<usize, Vec<Issue>> {
    if let Ok(i) = seg.parse::<usize>() {
        return if i < items.len() {
            Ok(i)
        } else {
            Err(issue(
                path,
                format!(
                    "index {i} is out of range: {} has {}{}",
                    where_(here),
                    crate::human::plural(items.len(), "item"),
                    if i == items.len() {
                        format!("; to add one, set the whole list: --set '{here}=[...]'")
                    } else {
                        String::new()
                    }
                ),
            ))
        };
    }
    let names: Vec<&str> = items.iter().filter_map(item_name).collect();
    if let Some(i) = items.iter().position(|v| item_name(v) == Some(seg)) {
        return Ok(i);
    }
    let hint = did_you_mean(seg, names.iter().copied())
        .map(|k| format!("did you mean `{k}`? "))
        .unwrap_or_default();
    let known = if names.is_empty() {
        format!(
            "it has {}, use an index",
            crate::human::plural(items.len(), "item")
        )
    } else {
        format!("names there: {}", names.join(", "))
    };
    Err(issue(
        path,
        format!("no item named `{seg}` in {}; {hint}{known}", where_(here)),
    ))
}

fn not_a_container(v: &Value, seg: &str, here: &str, path: &str) -> Vec<Issue> {
    issue(
        path,
        format!(
            "{} is {}, which has no field `{seg}`; set {} itself instead",
            where_(here),
            describe(v),
            where_(here)
        ),
    )
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "empty".into(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("`{n}`"),
        Value::String(s) => format!("`{s}`"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// Whether the format has a mapping field `seg` at `here` (so a `--set`
/// below it may create it).
fn known_mapping(here: &[&str], seg: &str) -> bool {
    fields_at(here).is_some_and(|f| f.iter().any(|(n, m)| n == seg && *m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::FULL;
    use crate::scenario::load_str;
    use crate::scenario::types::Jitter;
    use crate::scenario::units::Duration;

    fn full() -> Scenario {
        load_str(FULL, "full.yaml").unwrap()
    }

    fn set(s: &Scenario, arg: &str) -> Result<Scenario, ScenarioErrors> {
        let (path, value) = parse_set_arg(arg).map_err(ScenarioErrors::from)?;
        apply_set(s, &path, value)
    }

    #[test]
    fn sets_each_example_path() {
        let s = full();
        assert_eq!(
            set(&s, "layers.api.retry.jitter=none").unwrap().layers[0]
                .retry
                .jitter,
            Jitter::None
        );
        let p = set(&s, "layers.api.retry.jitter={proportional: 0.25}").unwrap();
        assert_eq!(p.layers[0].retry.jitter, Jitter::Proportional(0.25));
        assert_eq!(
            set(&s, "dependency.queue.capacity=2048")
                .unwrap()
                .dependency
                .queue
                .capacity,
            2048
        );
        assert_eq!(
            set(&s, "dependency.concurrency=32")
                .unwrap()
                .dependency
                .concurrency,
            32
        );
        assert_eq!(
            set(&s, "clients.arrival.rate=30/m")
                .unwrap()
                .clients
                .arrival
                .rate
                .unwrap()
                .per_sec(),
            0.5
        );
        let e = set(&s, "dependency.incidents.0.end=2m30s").unwrap();
        assert_eq!(e.dependency.incidents[0].end, Duration::from_secs(150));
        // By index as well as by name; `null` removes an optional field.
        assert_eq!(
            set(&s, "layers.1.timeout=null").unwrap().layers[1].timeout,
            None
        );
    }

    #[test]
    fn unknown_paths_name_the_missing_segment() {
        let s = full();
        let e = set(&s, "layers.apii.retry.jitter=none").unwrap_err();
        assert_eq!(
            e.to_string(),
            "<--set>: layers.apii.retry.jitter: no item named `apii` in `layers`; did you mean `api`? names there: api, storage"
        );
        let e = set(&s, "dependency.queeu.capacity=1").unwrap_err();
        assert!(e.to_string().contains("no `queeu` in `dependency`; did you mean `queue`? fields there: concurrency, service_time, queue"), "{e}");
        let e = set(&s, "dependency.queue.capcity=1").unwrap_err();
        assert!(
            e.to_string().contains("unknown field `capcity`")
                && e.to_string().contains("did you mean `capacity`?"),
            "{e}"
        );
        let e = set(&s, "dependency.incidents.9.end=1m").unwrap_err();
        assert!(e.to_string().contains("index 9 is out of range"), "{e}");
        let e = set(&s, "name.x=1").unwrap_err();
        assert!(
            e.to_string()
                .contains("`name` is `outage-recovery`, which has no field `x`"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_are_errors() {
        let s = full();
        let e = set(&s, "dependency.concurrency=lots").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("<--set>: dependency.concurrency: "),
            "{e}"
        );
        let e = set(&s, "layers.api.retry.backoff.cap=10ms").unwrap_err();
        assert_eq!(
            e.to_string(),
            "<--set>: layers.api.retry.backoff.cap: cap (10ms) is below base (100ms); expected cap >= base"
        );
        assert!(parse_set_arg("novalue").is_err());
        assert!(parse_set_arg("a=").is_err());
        assert!(parse_set_arg("=1").is_err());
        assert!(parse_set_arg("a=[").is_err());
    }

    fn sets(args: &[&str]) -> Vec<(String, Value)> {
        args.iter().map(|a| parse_set_arg(a).unwrap()).collect()
    }

    #[test]
    fn paths_name_items_as_before_any_override() {
        let s = full();
        let forward = apply_sets(
            &s,
            &sets(&["layers.api.name=edge", "layers.api.timeout=3s"]),
        );
        let backward = apply_sets(
            &s,
            &sets(&["layers.api.timeout=3s", "layers.api.name=edge"]),
        );
        let forward = forward.unwrap();
        assert_eq!(forward, backward.unwrap());
        assert_eq!(forward.layers[0].name, "edge");
        assert_eq!(forward.layers[0].timeout, Some(Duration::from_secs(3)));
        // Two names swapped, in either order.
        let swap = ["layers.api.name=storage", "layers.storage.name=api"];
        let a = apply_sets(&s, &sets(&swap)).unwrap();
        let b = apply_sets(&s, &sets(&[swap[1], swap[0]])).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            (a.layers[0].name.as_str(), a.layers[1].name.as_str()),
            ("storage", "api")
        );
        // The new name is no path, whatever the order, and the message
        // names the override that gave it.
        for order in [
            ["layers.api.name=edge", "layers.edge.timeout=3s"],
            ["layers.edge.timeout=3s", "layers.api.name=edge"],
        ] {
            let e = apply_sets(&s, &sets(&order)).unwrap_err().to_string();
            assert!(
                e.contains("no item named `edge` in `layers`")
                    && e.contains("`layers.api.name` gives one the name `edge`"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_preset_is_put_before_the_fields_beside_it() {
        let s = full();
        let a = apply_sets(
            &s,
            &sets(&[
                "layers.api.preset=grpc-a6",
                "layers.api.retry.max_attempts=2",
            ]),
        )
        .unwrap();
        let b = apply_sets(
            &s,
            &sets(&[
                "layers.api.retry.max_attempts=2",
                "layers.api.preset=grpc-a6",
            ]),
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.layers[0].retry.max_attempts, 2);
        assert_eq!(a.layers[0].preset.as_deref(), Some("grpc-a6"));
    }

    #[test]
    fn resolving_stops_at_dotted_keys_and_past_the_document() {
        let json = serde_json::to_value(full()).unwrap();
        assert_eq!(
            resolve_items(&json, "layers.storage.retry.jitter", &[]).unwrap(),
            "layers.1.retry.jitter"
        );
        assert_eq!(
            resolve_items(&json, "layers.api.breaker.kind", &[]).unwrap(),
            "layers.0.breaker.kind"
        );
        assert_eq!(
            resolve_items(&json, "sweep.layers.api.timeout", &[]).unwrap(),
            "sweep.layers.api.timeout"
        );
        assert!(resolve_items(&json, "layers.nope.timeout", &[]).is_err());
    }
}
