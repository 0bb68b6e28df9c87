//! Reading a scenario: file → text → typed `Scenario` (serde-saphyr, with
//! budgets against alias bombs and deep nesting) → field-dependent
//! defaults → the command line's `--set` overrides, all applied before
//! anything is judged → validation, including every variant and sweep
//! point. All errors carry the file, line, column and field path, and
//! every independent problem of a file is reported, not only the first:
//! type errors are collected by `collect`, semantic ones by `validate`.

use std::path::Path;

use serde_json::Value;
use serde_saphyr::MessageFormatter;

use super::collect::{TypeError, collect, refine_path, related};
use super::error::{SET_LABEL, ScenarioError, ScenarioErrors, one_line};
use super::from_file::FromWarning;
use super::locate::LocationIndex;
use super::overrides::{apply_overrides, apply_the_rest};
use super::presets;
use super::suggest::{Wording, improve_message};
use super::types::Scenario;
use super::validate::{Issue, NOT_FINITE, validate};
use super::variants::{expansion_errors, normalize_path, set_warnings};

/// Scenario files larger than this are refused (a real one is a few KiB).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

const EMPTY: &str =
    "the file is empty; a scenario needs at least name, duration, clients and dependency";

/// A scenario loaded with its overrides, and what the user should hear
/// about them.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub scenario: Scenario,
    /// Overrides that change nothing that runs (a `--set` on a field that
    /// every variant, or the sweep, sets again), one sentence each.
    pub warnings: Vec<String>,
}

/// Reads, parses and validates the scenario file at `path`.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioErrors> {
    load_file_with(path, &[]).map(|l| l.scenario)
}

/// Reads and parses the scenario file at `path`, applies the `--set`
/// overrides `sets` (in order), and validates the result once.
pub fn load_file_with(path: &Path, sets: &[(String, Value)]) -> Result<Loaded, ScenarioErrors> {
    let label = crate::escape::path(path);
    let text = read_text(path, &label)?;
    load_str_in(&text, &label, path.parent(), sets)
}

/// Parses and validates the contents of a scenario file given as bytes,
/// exactly as `load_file` does once it has read them (the fuzz target's
/// entry point).
pub fn load_bytes(bytes: &[u8], file_label: &str) -> Result<Scenario, ScenarioErrors> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64, file_label).into());
    }
    let text = utf8_text(bytes.to_vec(), file_label)?;
    load_str(&text, file_label)
}

/// Parses and validates a scenario given as text; `file_label` names it in
/// errors.
pub fn load_str(src: &str, file_label: &str) -> Result<Scenario, ScenarioErrors> {
    load_str_with(src, file_label, &[]).map(|l| l.scenario)
}

/// Parses a scenario given as text, applies `sets` (every one of them, in
/// order) and validates the result once. A problem about a field an
/// override touches is labelled `<--set>`; any other is located in the
/// file.
pub fn load_str_with(
    src: &str,
    file_label: &str,
    sets: &[(String, Value)],
) -> Result<Loaded, ScenarioErrors> {
    load_str_in(src, file_label, None, sets)
}

/// As [`load_str_with`], for a scenario whose file is in `dir`: the folder
/// a layer's `from: { file }` is relative to (else the current folder).
pub fn load_str_in(
    src: &str,
    file_label: &str,
    dir: Option<&Path>,
    sets: &[(String, Value)],
) -> Result<Loaded, ScenarioErrors> {
    load_unbounded(src, file_label, dir, sets).map_err(|e| e.bounded(MAX_LISTED_ERRORS))
}

/// The warnings about configuration files that `sets` leave standing: a
/// `--set` that replaces an item (`layers`, `layers.edge`, the scenario)
/// replaces what its `from` read, so the file's warnings are no longer
/// about the run; one of a field inside it (even `from` itself, whose
/// values read stay) leaves them. Items are named as `base`, the scenario
/// before the overrides, labels them.
fn still_read(
    base: &Scenario,
    warnings: Vec<FromWarning>,
    sets: &[(String, Value)],
) -> Vec<String> {
    let replaced: Vec<String> = sets.iter().map(|(k, _)| normalize_path(base, k)).collect();
    warnings
        .into_iter()
        .filter(|w| {
            !replaced.iter().any(|k| {
                k.is_empty()
                    || *k == w.at
                    || w.at
                        .strip_prefix(k.as_str())
                        .is_some_and(|t| t.starts_with('.'))
            })
        })
        .map(|w| w.to_string())
        .collect()
}

/// How many errors a file's load lists at most; the count line says how
/// many more were found (thousands of variants with one mistake each
/// would otherwise print thousands of lines).
pub const MAX_LISTED_ERRORS: usize = 50;

fn load_unbounded(
    src: &str,
    file_label: &str,
    dir: Option<&Path>,
    sets: &[(String, Value)],
) -> Result<Loaded, ScenarioErrors> {
    let index = LocationIndex::build(src);
    let mut from_warnings = Vec::new();
    let broken = match parse_file(src, file_label, &index, dir, &mut from_warnings) {
        Ok(base) => {
            let checked = check_with(&base, sets, file_label, &index, dir);
            return match checked {
                Ok(s) => {
                    let mut warnings = still_read(&base, from_warnings, sets);
                    warnings.extend(set_warnings(&base, &s, sets));
                    warnings.extend(super::fleet::scale_warnings_all(&s));
                    Ok(Loaded {
                        scenario: s,
                        warnings,
                    })
                }
                Err(e) => Err(e),
            };
        }
        Err(b) => b,
    };
    let Broken { errors, repaired } = broken;
    let Some(r) = repaired else {
        return Err(errors);
    };
    // The file has errors of its own, but could be read with them
    // repaired: the problems of its `--set`s, variants and sweep points are
    // independent of them, and reported too, but none about a repaired
    // field and none a stand-in made up (the same scenario with other
    // stand-ins has it too, word for word).
    let ScenarioErrors(mut reported, mut omitted) = errors;
    if sets.is_empty() {
        reported.extend(r.semantic.iter().cloned());
    }
    // A `--set` replaces the file's value of its field (and of everything
    // under it) before the file is judged: the file's type errors there
    // are not errors, and what the set makes of the field is.
    let set_paths: Vec<String> = sets
        .iter()
        .map(|(k, _)| normalize_path(&r.scenario, k))
        .collect();
    let replaced = |p: &str| {
        set_paths.iter().any(|k| {
            p == k
                || p.strip_prefix(k.as_str())
                    .is_some_and(|t| t.starts_with('.'))
        })
    };
    reported.retain(|e| {
        !(e.file == file_label
            && e.path
                .as_deref()
                .is_some_and(|p| !p.is_empty() && replaced(p)))
    });
    if reported.is_empty() && omitted.count == 0 {
        // Every error of the file was in a field a `--set` replaces.
        return check_with(&r.scenario, sets, file_label, &index, dir).map(|s| {
            let mut warnings = still_read(&r.scenario, from_warnings, sets);
            warnings.extend(set_warnings(&r.scenario, &s, sets));
            warnings.extend(super::fleet::scale_warnings_all(&s));
            Loaded {
                scenario: s,
                warnings,
            }
        });
    }
    let extra = check_with(&r.scenario, sets, file_label, &index, dir)
        .err()
        .unwrap_or_default();
    let other = match (&r.other, r.stand_ins) {
        (_, false) => None,
        (Some(o), true) => Some(
            check_with(o, sets, file_label, &index, dir)
                .err()
                .unwrap_or_default(),
        ),
        (None, true) => Some(ScenarioErrors::default()),
    };
    // A variant's or a sweep point's error names the field inside it
    // (`in variant `a`: dependency.concurrency: ...`).
    let about_repaired = |e: &ScenarioError| {
        r.paths.iter().filter(|p| !replaced(p)).any(|p| {
            e.path.as_deref().is_some_and(|q| related(p, q))
                || e.message.contains(&format!(": {p}:"))
                || e.message.contains(&format!(": {p}."))
        })
    };
    let same = |a: &ScenarioError, b: &ScenarioError| a.path == b.path && a.message == b.message;
    // A field of the file already reported (`1e400`: a number too large
    // to read, and so not finite either) is one problem.
    let file_errors: Vec<(String, Option<String>)> = reported
        .iter()
        .map(|x| (x.file.clone(), x.path.clone()))
        .collect();
    let known = |e: &ScenarioError| {
        e.path.is_some()
            && file_errors
                .iter()
                .any(|(file, path)| *file == e.file && *path == e.path)
    };
    for e in extra.0 {
        let made_up = other
            .as_ref()
            .is_some_and(|o| !o.0.iter().any(|x| same(x, &e)));
        if made_up || about_repaired(&e) || known(&e) || reported.iter().any(|x| same(x, &e)) {
            continue;
        }
        reported.push(e);
    }
    omitted = omitted.and(extra.1);
    Err(ScenarioErrors(reported, omitted))
}

/// `base` (the file's scenario) with `sets` applied, validated with its
/// variants and sweep points; or every problem found, those of the
/// overrides labelled `<--set>`. A `--set` that cannot be applied does not
/// hide the problems of the others, nor those of the variants.
fn check_with(
    base: &Scenario,
    sets: &[(String, Value)],
    file_label: &str,
    index: &LocationIndex,
    dir: Option<&Path>,
) -> Result<Scenario, ScenarioErrors> {
    // A sweep entry is one list, set whole: an index into it is no field.
    let indexed: Vec<ScenarioError> = sets
        .iter()
        .filter_map(|(p, _)| {
            let (key, last) = p.strip_prefix("sweep.")?.rsplit_once('.')?;
            let digits = !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit());
            (digits && base.sweep.contains_key(key)).then(|| {
                ScenarioError::new(
                    SET_LABEL,
                    format!(
                        "a sweep entry cannot be indexed: `sweep.{key}` is one list of values, \
                         set whole (--set 'sweep.{key}=[1, 2, 3]')"
                    ),
                )
                .with_path(p)
            })
        })
        .collect();
    if !indexed.is_empty() {
        return Err(ScenarioErrors::new(indexed));
    }
    // Two overrides of one field (or of a field and a part of it): which
    // one applied would depend on their order. The later one is refused
    // and left out; the first applies, so that the problems of the
    // others are reported too.
    let keys: Vec<String> = sets.iter().map(|(k, _)| k.clone()).collect();
    let overlapping = super::variants::overlapping(base, &keys);
    let overlaps: Vec<ScenarioError> = overlapping
        .iter()
        .map(|(_, i)| ScenarioError::new(SET_LABEL, &i.message).with_path(&i.path))
        .collect();
    let kept: Vec<(String, Value)>;
    let sets = if overlapping.is_empty() {
        sets
    } else {
        kept = sets
            .iter()
            .enumerate()
            .filter(|(j, _)| !overlapping.iter().any(|(o, _)| o == j))
            .map(|(_, set)| set.clone())
            .collect();
        &kept[..]
    };
    let (s, mut errors) = if sets.is_empty() {
        (base.clone(), Vec::new())
    } else {
        match apply_overrides(base, sets) {
            Ok(s) => (s, Vec::new()),
            Err(issues) => {
                // What the other overrides make of the scenario, too (and
                // the problems of those that one hid).
                let mut more = Vec::new();
                let rest = apply_the_rest(base, sets, &issues, &mut more);
                let errors: Vec<ScenarioError> = issues
                    .iter()
                    .chain(&more)
                    .map(|i| ScenarioError::new(SET_LABEL, &i.message).with_path(&i.path))
                    .collect();
                match rest {
                    Some(rest) => (rest, errors),
                    None if issues.iter().any(|i| i.path.is_empty()) => {
                        return Err(ScenarioErrors::new(errors));
                    }
                    None => (base.clone(), errors),
                }
            }
        }
    };
    let failed = !errors.is_empty();
    // Each set's field as `s` labels it: found by the item the set named
    // in the file's scenario (`--set layers.client.name=x` renames the
    // layer it names), or else in `s`.
    let mut set_paths: Vec<String> = sets.iter().map(|(p, _)| normalize_path(&s, p)).collect();
    // The fields of the sets that rename the item their path names.
    let set_fields: Vec<(String, &str)> = sets
        .iter()
        .zip(&set_paths)
        .filter_map(|((p, _), in_s)| {
            let by_base = normalize_path(&s, &super::variants::indexed_path(base, p));
            (by_base != *in_s).then_some((by_base, p.as_str()))
        })
        .collect();
    set_paths.extend(set_fields.iter().map(|(p, _)| p.clone()));
    // A problem of such a field says the path the user typed.
    let as_typed = |mut e: ScenarioError| {
        if e.file == SET_LABEL
            && let Some(path) = &e.path
            && let Some(typed) = set_fields.iter().find_map(|(field, typed)| {
                let rest = path.strip_prefix(field.as_str())?;
                (rest.is_empty() || rest.starts_with('.')).then(|| format!("{typed}{rest}"))
            })
        {
            e.path = Some(typed);
        }
        e
    };
    // The fields of the `--set`s that could not be applied still hold the
    // file's values, which those sets replace: one error per field (the
    // set's), none about the value it replaces.
    let unapplied: Vec<String> = errors
        .iter()
        .filter_map(|e| e.path.as_deref())
        .map(|p| normalize_path(&s, p))
        .collect();
    let issues = validate(&s);
    errors.extend(
        issues
            .iter()
            .filter(|i| !unapplied.iter().any(|p| related(p, &i.path)))
            .cloned()
            .map(|i| {
                let e = locate_issue(i.clone(), &set_paths, file_label, Some(index));
                if e.file == SET_LABEL {
                    return as_typed(e);
                }
                // A problem in the file is about an item as the file names
                // it (as a path names it: `--set layers.1.name=x` leaves
                // `layers.1.timeout` the file's `layers.1.timeout`), and
                // located there.
                let in_file = normalize_path(base, &super::variants::indexed_path(&s, &i.path));
                if in_file == i.path {
                    return e;
                }
                let moved = Issue {
                    path: in_file,
                    message: i.message,
                };
                locate_issue(moved, &[], file_label, Some(index))
            }),
    );
    // A number that is not finite does not survive putting the overrides
    // in place (the scenario goes through JSON, which has no NaN: it
    // would come back as the field's default), so the file's own are
    // looked for in the file's scenario, unless an override replaces them.
    if !sets.is_empty() {
        errors.extend(
            (validate(base).into_iter())
                .filter(|i| i.message.contains(NOT_FINITE))
                .filter(|i| !set_paths.iter().any(|p| related(p, &i.path)))
                .map(|i| locate_issue(i, &[], file_label, Some(index))),
        );
    }
    let (more, omitted, runs) = expansion_errors(&s, &issues, &set_paths, file_label, Some(index));
    errors.extend(more);
    // A `from` on a call was read for the service called as the file's
    // scenario has it: read it again for every run whose service called
    // a variant, a sweep point or a `--set` changed.
    let searched = tune_runs(&s);
    errors.extend(super::from_file::recheck_calls(
        base,
        runs.iter()
            .map(|r| (r.name.as_str(), &r.scenario))
            .chain(searched.iter().map(|(n, sc)| (n.as_str(), sc))),
        dir,
        file_label,
        index,
    ));
    if errors.is_empty() && !failed && overlaps.is_empty() {
        return Ok(s);
    }
    // Each problem once, however many of the checks found it.
    let mut seen = std::collections::BTreeSet::new();
    let errors: Vec<ScenarioError> = overlaps
        .into_iter()
        .chain(errors)
        .filter(|e| seen.insert(e.to_string()))
        .collect();
    Err(ScenarioErrors(errors, omitted))
}

/// The scenarios a search (`tune.space`) will run with another value of a
/// service's field (its replicas, autoscale or balancer may decide what
/// a call's `from` means): each value of a finite dimension (the ends of
/// a continuous one, or of one over 256 values), named
/// `tune.space.PATH = VALUE`. Values that do not apply are reported by
/// the search's own checks.
fn tune_runs(s: &Scenario) -> Vec<(String, Scenario)> {
    let Some(t) = &s.tune else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (path, v) in &t.space {
        if !path.starts_with("services.") {
            continue;
        }
        let Ok(d) = super::tune::dimension(v) else {
            continue;
        };
        let values = match d.count() {
            Some(n) if n <= 256 => (0..n).map(|i| d.nth(i)).collect(),
            _ => d.ends(),
        };
        for value in values {
            if let Ok(sc) = apply_overrides(s, &[(path.clone(), value.clone())]) {
                let shown = super::tune::show(&value);
                out.push((format!("tune.space.{path} = {shown}"), sc));
            }
        }
    }
    out
}

/// An issue as an error: labelled `<--set>` when it is about a field an
/// override set (`set_paths`, normalised), else located in the file.
pub(crate) fn locate_issue(
    issue: Issue,
    set_paths: &[String],
    file_label: &str,
    index: Option<&LocationIndex>,
) -> ScenarioError {
    if set_paths.iter().any(|p| related(p, &issue.path)) {
        return ScenarioError::new(SET_LABEL, issue.message).with_path(issue.path);
    }
    let message = match index.and_then(|i| i.scalar(&issue.path)) {
        Some(text) => as_written(issue.message, text),
        None => issue.message,
    };
    let e = ScenarioError::new(file_label, message).with_path(issue.path.clone());
    match index.and_then(|i| i.position(&issue.path)) {
        Some((line, col)) => e.at(line, col),
        None => e,
    }
}

/// `message` about a number the file wrote as `written`, with the number
/// as it was read (`1e400` read as `inf`, `0.30000000000000004` as
/// `0.30000000000000004`, `1.00000000000000001` as `1`) put back as
/// written, so that the message quotes what the author can find in the
/// file. Only a whole number token is replaced, the first one; a message
/// without it is returned as it is.
pub(crate) fn as_written(message: String, written: &str) -> String {
    let written = written.trim();
    match yaml_float(written) {
        Some(read) => quote_as(message, read, &[], written),
        None => message,
    }
}

/// The number a YAML scalar spells, YAML 1.2's `.nan` and `.inf` (any
/// case, `.inf` signed) included.
pub(crate) fn yaml_float(text: &str) -> Option<f64> {
    let (sign, rest) = match text.strip_prefix('-') {
        Some(r) => (-1.0, r),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    match rest {
        ".nan" | ".NaN" | ".NAN" if rest.len() == text.len() => Some(f64::NAN),
        ".inf" | ".Inf" | ".INF" => Some(sign * f64::INFINITY),
        _ => text.parse().ok(),
    }
}

/// As [`as_written`] for a number stormsim itself wrote as `emitted`
/// (its YAML for a value it read: `1.0e+23`, `1000000000000.0`): quoted in
/// its compact spelling (`1e23`, `1e12`), the way a user most likely typed
/// it.
fn as_compact(message: String, emitted: &str) -> String {
    let emitted = emitted.trim();
    // A whole number (a text stormsim kept as typed) is shown as it is.
    let whole = emitted.strip_prefix('-').unwrap_or(emitted);
    if !whole.is_empty() && whole.bytes().all(|b| b.is_ascii_digit()) {
        return message;
    }
    match emitted.parse::<f64>() {
        Ok(read) => quote_as(message, read, &[emitted], &crate::human::compact(read)),
        Err(_) => message,
    }
}

/// `message` with the whole tokens that spell `read` (as Rust, JSON,
/// serde and YAML write it, compactly, or as one of `also`) replaced by
/// `shown`: every one quoted in backticks, and the first bare one.
fn quote_as(message: String, read: f64, also: &[&str], shown: &str) -> String {
    let mut spellings = vec![
        read.to_string(),
        format!("{read:?}"),
        crate::human::compact(read),
    ];
    // As YAML writes it (`.nan`, `.inf`, `-.inf`): the reader hands a
    // number that is not finite on so.
    if !read.is_finite() {
        spellings.push(match read {
            r if r.is_nan() => ".nan".into(),
            r if r > 0.0 => ".inf".into(),
            _ => "-.inf".into(),
        });
    }
    spellings.extend(also.iter().map(|s| s.to_string()));
    spellings.sort_by_key(|s| std::cmp::Reverse(s.len()));
    spellings.dedup();
    spellings.retain(|s| s != shown);
    // Every quoted one (`found `2.5``, `sweep value 2.5: … found `2.5``);
    let mut message = message;
    // A message that already quotes the value as shown (`found `1.0``)
    // has nothing bare to put back: a bare `1` there is a bound.
    let mut quoted = message.contains(&format!("`{shown}`"));
    for spelling in &spellings {
        let q = format!("`{spelling}`");
        if message.contains(&q) {
            message = message.replace(&q, &format!("`{shown}`"));
            quoted = true;
        }
    }
    // and the first bare one, unless the value was quoted: then only in
    // the label before the message (`sweep value 2.5: `), never a bound
    // of the range the message gives (`from 1 to 1000`).
    let end = if quoted {
        message.find(": ").unwrap_or(0)
    } else {
        message.len()
    };
    for spelling in &spellings {
        let mut from = 0;
        while let Some(i) = message[from..end].find(spelling.as_str()).map(|i| i + from) {
            let stop = i + spelling.len();
            let before = message[..i].chars().next_back();
            let after = message[stop..].chars().next();
            let alone = !before
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
                && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.');
            if alone {
                return format!("{}{shown}{}", &message[..i], &message[stop..]);
            }
            from = stop;
        }
    }
    message
}

/// The file's scenario, typed, presets merged and field-dependent defaults
/// filled, not validated; or every type error of the file (and, when the
/// file could be read by dropping only optional fields, its semantic
/// problems too).
fn parse_file(
    src: &str,
    label: &str,
    index: &LocationIndex,
    dir: Option<&Path>,
    warnings: &mut Vec<FromWarning>,
) -> Result<Scenario, Broken> {
    if is_empty_document(src) {
        return Err(ScenarioError::new(label, EMPTY).into());
    }
    let direct = serde_saphyr::from_str_with_options::<Scenario>(src, parse_options());
    if direct.is_err()
        && let Some((line, col)) = second_document(src)
    {
        // Whatever else is wrong, this is what to fix first: the second
        // document is not part of the scenario, and no field path fits.
        return Err(ScenarioError::new(label, MULTIPLE_DOCUMENTS)
            .at(line, col)
            .into());
    }
    let tags = tag_errors(index, label);
    let texts = text_number_errors(src, index, label);
    if let Ok(s) = &direct
        && !s.has_preset()
        && s.from_files().is_empty()
        && tags.is_empty()
        && texts.is_empty()
    {
        return Ok(s.clone());
    }
    // Every key given twice is an error of its own; the rest of the file
    // is read with the first of each.
    let duplicates: Vec<ScenarioError> = index
        .duplicates()
        .iter()
        .map(|(path, (line, col))| {
            let key = path.rsplit('.').next().unwrap_or(path);
            ScenarioError::new(
                label,
                format!("`{key}` is given twice; expected each field once"),
            )
            .with_path(path.clone())
            .at(*line, *col)
        })
        .collect();
    let first_wins = !duplicates.is_empty();
    let value = if first_wins {
        parse_value_first_wins(src)
    } else {
        parse_value(src)
    };
    let Some(mut value) = value else {
        // A YAML-level error: nothing after it can be read. The first
        // field error serde met, and why the file cannot be read as a
        // whole (an alias bomb, nesting too deep), each its own error: the
        // one must not hide the other.
        let mut errors = Vec::new();
        if let Err(e) = &direct {
            errors.push(serde_error(e, src, label));
        }
        let mut options = parse_options();
        if first_wins {
            options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::FirstWins;
        }
        if let Err(e) = serde_saphyr::from_str_with_options::<Value>(src, options)
            && is_limit(&e)
        {
            let whole = serde_error(&e, src, label);
            if !errors.contains(&whole) {
                errors.push(whole);
            }
        }
        if errors.is_empty() {
            errors.push(ScenarioError::new(label, "the file cannot be read as YAML"));
        }
        let mut all = duplicates;
        all.extend(tags);
        all.extend(texts);
        all.extend(errors);
        return Err(Broken {
            errors: ScenarioErrors::new(all),
            repaired: None,
        });
    };
    // Beside a preset or `from` a field may be missing on purpose
    // (`backoff: { base: 2s }` takes its kind from the preset): read the
    // merged scenario. The file's values come first, then the preset's.
    let from_errors = super::from_file::fill_from_layers(&mut value, dir, label, index, warnings);
    let with_presets = presets::has_preset(&mut value) || super::from_file::has_from(&mut value);
    if with_presets {
        presets::for_preset_policies(&mut value, |_| true, presets::fill_layer);
    }
    // `null` on a field the format does not require: its default.
    let stripped = super::schema::strip_nulls(&mut value);
    let mut reported: Vec<ScenarioError> = duplicates;
    reported.extend(tags);
    reported.extend(texts);
    reported.extend(from_errors);
    if !with_presets
        && !stripped
        && !first_wins
        && let Err(e) = &direct
    {
        // Not again about a value an unsupported tag was reported on: the
        // tag is the cause.
        let e = serde_error(e, src, label);
        let tagged = index
            .unsupported_tags()
            .iter()
            .any(|(tagged, ..)| e.path.as_deref().is_some_and(|p| related(p, tagged)));
        // Nor about a number written as text (`!!str 3`), said already.
        let known = reported
            .iter()
            .any(|r| r.path.is_some() && r.path == e.path);
        if !tagged && !known {
            reported.push(e);
        }
    }
    let found = collect(value);
    let omitted = found.omitted;
    for TypeError {
        path,
        is_key,
        message,
    } in found.errors
    {
        let known = |r: &ScenarioError| r.path.as_deref().is_some_and(|p| related(p, &path));
        if (path.is_empty() && !reported.is_empty()) || reported.iter().any(known) {
            continue;
        }
        // Quoted as the file wrote it, not as stormsim wrote it again
        // for the rounds of reading (`2.50`, not `2.5`).
        let message = match index.scalar(&path).filter(|_| !is_key) {
            Some(text) => as_written(message, text),
            None => message,
        };
        let e = ScenarioError::new(label, message).with_path(path.clone());
        let pos = if is_key {
            index.key_position(&path)
        } else {
            index.position(&path)
        };
        reported.push(match pos {
            Some((line, col)) => e.at(line, col),
            None => e,
        });
    }
    for e in &mut reported {
        if let Some(tag) = e.path.as_deref().and_then(|p| index.core_tag(p)) {
            e.message = format!("{} ({})", e.message, core_tag_note(tag));
        }
    }
    let repaired = match found.scenario {
        Some(s) if reported.is_empty() => {
            return Ok(s);
        }
        // Semantic problems too, but none about a repaired field, and none
        // a stand-in made up (the same scenario with other stand-ins must
        // have it too, word for word).
        Some(s) => {
            let other = found.other.as_ref().map(validate);
            let mut semantic = Vec::new();
            for issue in validate(&s) {
                let made_up =
                    found.stand_ins && !other.as_ref().is_some_and(|o| o.contains(&issue));
                let dropped = made_up || found.repaired.iter().any(|r| related(r, &issue.path));
                let known = reported
                    .iter()
                    .any(|r| r.path.as_deref().is_some_and(|p| related(p, &issue.path)));
                if !dropped && !known {
                    semantic.push(locate_issue(issue, &[], label, Some(index)));
                }
            }
            Some(Repaired {
                scenario: Box::new(s),
                other: found.other.map(Box::new),
                stand_ins: found.stand_ins,
                paths: found.repaired,
                semantic,
            })
        }
        None => None,
    };
    if reported.is_empty() {
        reported.push(ScenarioError::new(
            label,
            "the file cannot be read as a scenario",
        ));
    }
    Err(Broken {
        errors: ScenarioErrors(reported, omitted),
        repaired,
    })
}

/// What a file of more than one YAML document is told.
const MULTIPLE_DOCUMENTS: &str = "the file holds more than one YAML document (a `---` line starts another); a scenario is one document";

/// Where the second YAML document of `src` starts (its `---`), if there
/// is one.
fn second_document(src: &str) -> Option<(u32, u32)> {
    use serde_saphyr::granit_parser::{Event, Parser};
    let mut starts = 0;
    for item in Parser::new_from_str(src) {
        let Ok((event, span)) = item else {
            return None;
        };
        if matches!(event, Event::DocumentStart(..)) {
            starts += 1;
            if starts == 2 {
                let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
                return Some((clamp(span.start.line()), clamp(span.start.col()) + 1));
            }
        }
    }
    None
}

/// What a YAML tag in a scenario (or a `--set` value) is told: stormsim
/// reads plain YAML, so a tag such as `!include` would otherwise be
/// dropped without a word (its value read as text).
pub(crate) fn tag_message(tag: &str) -> String {
    format!(
        "YAML tags such as `{tag}` are not supported (stormsim reads plain YAML, and includes nothing); write the value itself, or quote it if it is text that starts with `!`"
    )
}

/// What an error about a value written with one of the core schema's
/// tags (`!!str 3`) adds: the tag is likely its cause.
pub(crate) fn core_tag_note(tag: &str) -> String {
    format!(
        "the value is written with the YAML tag `{tag}`: stormsim does not take YAML tags; write the plain value, without the tag"
    )
}

/// An error for each YAML tag of the file `index` was built from, at the
/// tag, with the path of the field it is on.
fn tag_errors(index: &LocationIndex, label: &str) -> Vec<ScenarioError> {
    index
        .unsupported_tags()
        .iter()
        .map(|(path, (line, col), tag)| {
            ScenarioError::new(label, tag_message(tag))
                .with_path(path.clone())
                .at(*line, *col)
        })
        .collect()
}

/// An error for each number field of the file `src` written as text
/// (`max_attempts: "3"`, `!!str 3`, `1_000`), at its value, with its
/// path (`text_numbers`). The values of a variant or a sweep are judged
/// where they are applied.
fn text_number_errors(src: &str, index: &LocationIndex, label: &str) -> Vec<ScenarioError> {
    let Some(value) = parse_value_first_wins(src) else {
        return Vec::new();
    };
    super::text_numbers::in_value(&[], &value)
        .into_iter()
        .filter_map(|(segs, text)| {
            let path = index.label(&segs.join("."));
            let tagged = index.core_tag(&path).is_some();
            let message = super::text_numbers::refusal(&segs, &text, tagged)?;
            let e = ScenarioError::new(label, message).with_path(path.clone());
            Some(match index.position(&path) {
                Some((line, col)) => e.at(line, col),
                None => e,
            })
        })
        .collect()
}

/// A file with errors: every error found, and the scenario read with them
/// repaired, if it could be.
struct Broken {
    errors: ScenarioErrors,
    repaired: Option<Repaired>,
}

impl From<ScenarioError> for Broken {
    fn from(e: ScenarioError) -> Self {
        Broken {
            errors: e.into(),
            repaired: None,
        }
    }
}

/// The scenario read with its type errors repaired (`collect`).
struct Repaired {
    scenario: Box<Scenario>,
    /// The same with other stand-in values, if it reads.
    other: Option<Box<Scenario>>,
    /// Whether a required field got a stand-in value.
    stand_ins: bool,
    /// Paths of the repaired fields.
    paths: Vec<String>,
    /// The problems of the file's values (not of their types), without
    /// any override: with overrides they are found again, with them
    /// applied (else a `--set duration=…` would see both the file's and
    /// its own version of one problem).
    semantic: Vec<ScenarioError>,
}

/// Reads the file: a regular file only (never a device, FIFO or folder),
/// at most `MAX_FILE_BYTES` (`crate::input_file`).
fn read_text(path: &Path, label: &str) -> Result<String, ScenarioError> {
    use crate::input_file::{InputError, read_capped};
    let err = |m: String| ScenarioError::new(label, m);
    let bytes = read_capped(path, MAX_FILE_BYTES).map_err(|e| match e {
        InputError::NotRegular {
            kind: "a folder",
            via_link: false,
        } => err("is a directory; expected a scenario YAML file".into()),
        InputError::NotRegular { .. } => err(format!("{e}; expected a scenario YAML file")),
        InputError::TooLarge { len, .. } => too_large(len, label),
        InputError::NotFound => err(io_message(&std::io::ErrorKind::NotFound.into())),
        InputError::Io(e) => err(io_message(&e)),
    })?;
    utf8_text(bytes, label)
}

fn too_large(len: u64, label: &str) -> ScenarioError {
    ScenarioError::new(
        label,
        format!("the file is {len} bytes; a scenario file may be at most {MAX_FILE_BYTES} bytes"),
    )
}

/// The file's bytes as text, or where they stop being UTF-8.
fn utf8_text(bytes: Vec<u8>, label: &str) -> Result<String, ScenarioError> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let (line, col) = end_position(valid);
        ScenarioError::new(
            label,
            "the file is not UTF-8 text; a scenario is a YAML text file",
        )
        .at(line, col)
    })
}

fn io_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied: cannot read the file".into(),
        _ => format!("cannot read the file: {e}"),
    }
}

/// The 1-based position just after `bytes` (valid UTF-8).
fn end_position(bytes: &[u8]) -> (u32, u32) {
    let text = String::from_utf8_lossy(bytes);
    let line = text.matches('\n').count() + 1;
    let col = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    (clamp(line), clamp(col))
}

/// Parser options: budgets against alias bombs and deep nesting, and
/// YAML 1.2's booleans only (`true`, `false`). YAML 1.1 also read `y`,
/// `n`, `yes`, `no`, `on` and `off` as booleans; read so in a scenario
/// file they were booleans where a field takes one and text elsewhere,
/// but in a `--set` value, a variant's `set` or a sweep (read before the
/// field is known) always booleans, so `--set layers.0.name=no` named a
/// layer `false`. Strict, they are text everywhere: a boolean field
/// refuses them with `expected true or false` wherever they are written,
/// and a text field takes them as written.
///
/// A non-finite number (`.nan`, `.inf`, `1e400`) read where any value
/// goes (a plain value, a sweep's or a variant's values, a `--set`) is
/// kept as its canonical text (`.nan`, `.inf`, `-.inf`), which a number
/// field reads back as that number: it is then refused where it is, as
/// a value that is not finite, beside every other problem (refused by
/// the reader, the whole file could not be read as a value; dropped, as
/// a JSON value would, the problem would be lost).
///
/// A number spelt with `_` (`1_000`) is text, as YAML 1.2 reads it.
pub(crate) fn parse_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::options! {
        strict_booleans: true,
        budget: serde_saphyr::budget! {
            max_depth: 32,
            max_events: 500_000,
            max_nodes: 200_000,
            max_aliases: 10_000,
            max_anchors: 10_000,
            max_documents: 1,
            max_total_scalar_bytes: 16 * 1024 * 1024,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 20_000,
            max_replay_stack_depth: 16,
        },
        with_snippet: false,
    };
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    // YAML 1.2 reads `1_000` as text (YAML 1.1 read it as a number): so
    // does every value read before its field is known (a variant's, a
    // sweep's, a `--set`), and a number field refuses it as text
    // (`text_numbers`), as it does where the field is known.
    options.underscored_numbers_as_strings = true;
    options
}

/// `src` as a plain value, if it parses.
fn parse_value(src: &str) -> Option<Value> {
    serde_saphyr::from_str_with_options(src, parse_options()).ok()
}

/// `src` as a plain value, the first of any key given twice kept.
pub(crate) fn parse_value_first_wins(src: &str) -> Option<Value> {
    let mut options = parse_options();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::FirstWins;
    serde_saphyr::from_str_with_options(src, options).ok()
}

/// Whether `src` holds no YAML node at all (only blanks, comments or
/// document markers).
fn is_empty_document(src: &str) -> bool {
    use serde_saphyr::granit_parser::{Event, Parser};
    for item in Parser::new_from_str(src) {
        match item {
            Ok((Event::Scalar(v, ..), _)) => return v.trim().is_empty() || v == "~" || v == "null",
            Ok((Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(_), _)) => {
                return false;
            }
            Ok((Event::StreamEnd, _)) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Whether `e` is a limit of the reader (an alias bomb, a budget, nesting
/// too deep) rather than a mistake in the text.
fn is_limit(e: &serde_saphyr::Error) -> bool {
    use serde_saphyr::Error;
    let mut e = e;
    while let Error::AliasError { error, .. } | Error::WithSnippet { error, .. } = e {
        e = error;
    }
    match e {
        Error::AliasReplayLimitExceeded { .. }
        | Error::AliasExpansionLimitExceeded { .. }
        | Error::AliasReplayStackDepthExceeded { .. }
        | Error::Budget { .. } => true,
        Error::Message { msg, .. } => msg.contains("recursion limit"),
        _ => false,
    }
}

/// A serde-saphyr error as a one-line `ScenarioError` with its field path.
fn serde_error(e: &serde_saphyr::Error, src: &str, label: &str) -> ScenarioError {
    let d = describe(
        e,
        &LocationIndex::build(src),
        parse_value(src).as_ref(),
        Writer::User,
    );
    let e = ScenarioError::new(label, d.message).with_path(d.path);
    match d.position {
        Some((line, col)) => e.at(line, col),
        None => e,
    }
}

/// What a parser error says, in the scenario's terms.
pub(crate) struct Described {
    pub position: Option<(u32, u32)>,
    /// The field path (empty when unknown).
    pub path: String,
    /// Whether the error is at a mapping key (an unknown field).
    pub is_key: bool,
    pub message: String,
}

/// Who wrote the text an error is about.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writer {
    /// The user: a number is quoted back as it is spelt there.
    User,
    /// stormsim, emitting values it read (`1e12` as `1000000000000.0`):
    /// a number is quoted in its compact spelling ([`crate::human::compact`]),
    /// the way a user most likely typed it.
    Stormsim,
}

/// A serde-saphyr error about the text `index` was built from: its
/// position, field path and message in plain words.
pub(crate) fn describe(
    e: &serde_saphyr::Error,
    index: &LocationIndex,
    value: Option<&Value>,
    writer: Writer,
) -> Described {
    let inner = e.without_snippet();
    let message = one_line(&Wording.format_message(inner));
    let position = inner
        .location()
        .map(|l| (clamp(l.line()), clamp(l.column())))
        .filter(|&(line, _)| line > 0);
    let Some(pos) = position else {
        return Described {
            position: None,
            path: String::new(),
            is_key: false,
            message: improve_message(&message, None),
        };
    };
    // A syntax error at a line indented with a tab: the tab is the cause,
    // and the field it belongs to cannot be known (the reader's path is
    // the previous field's).
    if value.is_none()
        && let Some(line) = index.tab_indented_near(pos.0)
    {
        return Described {
            position: Some((line, 1)),
            path: String::new(),
            is_key: false,
            message: format!(
                "line {line} is indented with a tab: a tab cannot indent YAML; use spaces"
            ),
        };
    }
    let (mut path, mut is_key, found) = match index.path_at(pos) {
        Some((path, is_key, scalar)) => (
            error_path(path, is_key, &message),
            is_key && !message.starts_with("missing field `"),
            scalar.filter(|_| !is_key).map(str::to_string),
        ),
        None => (String::new(), false, None),
    };
    let mut position = Some(pos);
    // A key given twice: the path of that key (the nodes around it may
    // belong to its first occurrence).
    if matches!(inner, serde_saphyr::Error::DuplicateMappingKey { .. })
        && let Some(key) = index.key_at(pos)
    {
        path = key.to_string();
        is_key = true;
    }
    // Unknown and missing fields are placed only roughly by the parser.
    let missing = message.starts_with("missing field `");
    let hint = if missing {
        parent(&path)
    } else {
        path.as_str()
    };
    if let Some(refined) = value.and_then(|v| refine_path(hint, &message, v))
        && refined != path
    {
        position = if missing {
            index.position(parent(&refined))
        } else {
            index.key_position(&refined)
        }
        .or(position);
        path = refined;
        is_key = !missing;
    }
    let mut message = improve_message(&message, found.as_deref());
    // A field left out: what it takes, in the words of the schema
    // (`missing field `base`; expected a duration with a unit, ...`).
    if missing
        && message.ends_with('`')
        && let Some(expects) = super::schema::expects(&path.split('.').collect::<Vec<_>>())
    {
        message = format!("{message}; expected {expects}");
    }
    // A number quoted back as the file wrote it (`99999999999999999999999`,
    // not the float it reads as).
    if let Some(text) = &found {
        message = match writer {
            Writer::User => as_written(message, text),
            Writer::Stormsim => as_compact(message, text),
        };
    }
    // A list or a mapping where one value belongs: the parser stops inside
    // it (`dependency.concurrency.0`); the error is about the field.
    if message.starts_with("expected ")
        && let Some((field, what)) =
            container_for_scalar(&path, message.starts_with("expected a list"))
    {
        let segs: Vec<&str> = field.split('.').collect();
        let expects = super::schema::expects(&segs).unwrap_or_else(|| "a single value".into());
        message = format!("expected {expects}, found {what}");
        position = index.position(&field).or(position);
        path = field;
        is_key = false;
    }
    // A `null` left by `schema::strip_nulls`: a field without a default.
    for word in ["null", "~"] {
        if let Some(rest) = message.strip_prefix(&format!("unknown value `{word}`; expected ")) {
            message = format!("expected {rest}, found nothing (null)");
        }
    }
    for null in ["found `null`", "found `~`", "found nothing (null)"] {
        if let Some(head) = message.strip_suffix(null) {
            message =
                format!("{head}found nothing (null); null removes only a field that has a default");
            break;
        }
    }
    // The field's real range, not its storage type's.
    let message = super::ranges::with_real_range(&path, message);
    Described {
        position,
        path,
        is_key,
        message,
    }
}

/// When `path` goes into a list or a mapping written where the format
/// takes one value (or a list where it takes a mapping): that field's
/// path and what was found there (`a list`, `a mapping`).
fn container_for_scalar(path: &str, wants_list: bool) -> Option<(String, &'static str)> {
    use super::schema::{fields_at, is_list, is_mapping};
    let segs: Vec<&str> = path.split('.').collect();
    for k in (1..segs.len()).rev() {
        let (field, next) = (&segs[..k], segs[k]);
        if matches!(field, ["sweep", ..] | ["variants", _, "set", ..]) {
            return None;
        }
        let numeric = next.bytes().all(|b| b.is_ascii_digit());
        let is_map = is_mapping(field);
        let known = super::schema::expects(field).is_some();
        if !known {
            continue;
        }
        if numeric && !is_list(field) {
            return Some((field.join("."), "a list"));
        }
        // A list of named items (layers) is addressed by name too.
        // (unless the list itself was written as a mapping).
        let named_items = is_list(field)
            && fields_at(&[field, &["0"]].concat()).is_some()
            && !(wants_list && k + 1 == segs.len());
        if !numeric && !is_map && !named_items {
            return Some((field.join("."), "a mapping"));
        }
    }
    None
}

fn clamp(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The path an error is about: for "missing field `x`", the mapping the
/// node belongs to, plus `x`.
fn error_path(path: &str, is_key: bool, message: &str) -> String {
    let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|r| r.split_once('`'))
        .map(|(f, _)| f)
    else {
        return path.to_string();
    };
    let mapping = if is_key { parent(path) } else { path };
    if mapping.is_empty() {
        field.to_string()
    } else {
        format!("{mapping}.{field}")
    }
}

fn parent(path: &str) -> &str {
    path.rfind('.').map_or("", |i| &path[..i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::{FULL, MINIMAL};
    use crate::scenario::types::{Discipline, IncidentKind, Jitter, RetryOn};
    use crate::scenario::units::Duration;

    fn err(src: &str) -> ScenarioErrors {
        match load_str(src, "x.yaml") {
            Ok(_) => panic!("expected an error for:\n{src}"),
            Err(e) => e,
        }
    }

    fn one(src: &str) -> ScenarioError {
        let e = err(src);
        assert_eq!(e.len(), 1, "{e}");
        e.0.into_iter().next().unwrap()
    }

    /// The minimal scenario with `extra` appended.
    fn with(extra: &str) -> String {
        format!("{MINIMAL}{extra}")
    }

    #[test]
    fn loads_the_full_example() {
        let s = load_str(FULL, "full.yaml").unwrap();
        assert_eq!(s.name, "outage-recovery");
        assert_eq!(s.seed, 42);
        assert_eq!(s.duration, Duration::from_secs(600));
        assert_eq!(s.replicates, 5);
        assert_eq!(s.clients.arrival.rate.unwrap().per_sec(), 2000.0);
        assert_eq!(s.clients.schedule.len(), 3);
        assert_eq!(s.clients.deadline, Some(Duration::from_secs(10)));
        let api = &s.layers[0];
        assert_eq!(api.retry.max_attempts, 4);
        assert_eq!(api.retry.backoff().multiplier, Some(2.0));
        assert_eq!(
            api.retry.retry_on,
            vec![
                RetryOn::Timeout,
                RetryOn::Connection,
                RetryOn::Status(429),
                RetryOn::Status(503)
            ]
        );
        assert_eq!(s.layers[1].retry.jitter, Jitter::Proportional(0.5));
        assert_eq!(s.dependency.queue.discipline, Discipline::Lifo);
        assert_eq!(s.dependency.incidents[3].kind, IncidentKind::Errors);
        // A field-dependent default is not stored (a variant may change the
        // kind), but derived when the scenario is written out.
        assert_eq!(s.dependency.incidents[3].status, None);
        let mut derived = s.clone();
        crate::scenario::defaults::fill_derived(&mut derived);
        assert_eq!(derived.dependency.incidents[3].status, Some(503));
        assert_eq!(s.dependency.recovery.warmup, Duration::from_secs(30));
        assert_eq!(s.variants.len(), 2);
    }

    #[test]
    fn derives_the_exponential_multiplier() {
        let mut s = load_str(
            &with(
                "layers:\n  - name: a\n    retry: { backoff: { kind: exponential, base: 10ms } }\n",
            ),
            "x",
        )
        .unwrap();
        assert_eq!(s.layers[0].retry.backoff().multiplier, None);
        crate::scenario::defaults::fill_derived(&mut s);
        assert_eq!(s.layers[0].retry.backoff().multiplier, Some(2.0));
    }

    #[test]
    fn malformed_yaml() {
        let e = one("name: 'abc\nduration: 1m\n");
        assert_eq!((e.line, e.column), (Some(1), Some(7)), "{e}");
        assert!(e.message.contains("quote"), "{e}");
        let e = one("name: x\nclients:\n  arrival: {kind: poisson\n  bad: [\n");
        assert!(e.line.is_some() && e.column.is_some(), "{e}");
    }

    #[test]
    fn unknown_field_with_suggestion() {
        let e = one(&with(
            "layers:\n  - name: api\n    retry:\n      backoff: { kidn: constant, base: 1s }\n",
        ));
        assert_eq!(
            e.to_string(),
            "x.yaml:11:18: layers.api.retry.backoff.kidn: unknown field `kidn`, expected one of kind, base, multiplier, cap, throttle_base, truncate_ms; did you mean `kind`?"
        );
    }

    #[test]
    fn unknown_variant_with_suggestion() {
        let e = one(&with(
            "layers:\n  - name: api\n    retry: { jitter: fulll }\n",
        ));
        assert_eq!(e.path.as_deref(), Some("layers.api.retry.jitter"), "{e}");
        assert_eq!((e.line, e.column), (Some(10), Some(22)), "{e}");
        assert!(e.message.ends_with("did you mean `full`?"), "{e}");
    }

    #[test]
    fn wrong_type() {
        let src = MINIMAL.replace("concurrency: 4", "concurrency: lots");
        let e = one(&src);
        assert_eq!(
            e.to_string(),
            "x.yaml:6:16: dependency.concurrency: expected a whole number from 1 to 1000000, found `lots`"
        );
    }

    #[test]
    fn missing_field_names_it() {
        let e = one(&with(
            "layers:\n  - name: api\n    retry:\n      backoff: { base: 1s }\n",
        ));
        assert_eq!(
            e.path.as_deref(),
            Some("layers.api.retry.backoff.kind"),
            "{e}"
        );
        assert!(
            e.line.is_some() && e.message.contains("missing field `kind`"),
            "{e}"
        );
    }

    #[test]
    fn duration_without_unit() {
        let e = one(&with("layers:\n  - name: api\n    timeout: 5\n"));
        assert_eq!((e.line, e.column), (Some(10), Some(14)), "{e}");
        assert_eq!(e.path.as_deref(), Some("layers.api.timeout"));
        assert!(e.message.contains("has no unit"), "{e}");
    }

    #[test]
    fn negative_rate() {
        let e = one(&MINIMAL.replace("100/s", "-5/s"));
        assert_eq!((e.line, e.column), (Some(4), Some(35)), "{e}");
        assert_eq!(e.path.as_deref(), Some("clients.arrival.rate"));
        assert!(e.message.contains("negative"), "{e}");
    }

    #[test]
    fn cap_below_base() {
        let e = one(&with(
            "layers:\n  - name: api\n    retry:\n      backoff: { kind: exponential, base: 100ms, cap: 50ms }\n",
        ));
        assert_eq!(
            e.to_string(),
            "x.yaml:11:55: layers.api.retry.backoff.cap: cap (50ms) is below base (100ms); expected cap >= base"
        );
    }

    #[test]
    fn zero_attempts() {
        let e = one(&with(
            "layers:\n  - name: api\n    retry:\n      max_attempts: 0\n",
        ));
        assert_eq!((e.line, e.column), (Some(11), Some(21)), "{e}");
        assert_eq!(e.path.as_deref(), Some("layers.api.retry.max_attempts"));
        assert!(e.message.contains("expected 1 to 1000"), "{e}");
    }

    #[test]
    fn incident_outside_the_run() {
        let src = MINIMAL.replace(
            "  concurrency: 4\n",
            "  concurrency: 4\n  incidents:\n    - { kind: down, start: 30s, end: 2m }\n",
        );
        let e = one(&src);
        assert_eq!((e.line, e.column), (Some(8), Some(38)), "{e}");
        assert_eq!(e.path.as_deref(), Some("dependency.incidents.0.end"));
        assert!(e.message.contains("after the run (1m)"), "{e}");
    }

    #[test]
    fn reports_every_semantic_problem() {
        let src = with("replicates: 0\nlayers:\n  - name: a\n    retry: { max_attempts: 0 }\n");
        let src = src.replace("duration: 1m", "duration: 1m\nbucket: 2m");
        // The default recovery window follows the bucket: no fourth error.
        assert_eq!(err(&src).len(), 3, "{}", err(&src));
    }

    /// Three independent mistakes, three messages: a type error, an unknown
    /// field and a range error, and more of each kind.
    #[test]
    fn reports_every_independent_mistake() {
        let src = with(
            "replicates: 0\nlayers:\n  - name: a\n    timout: 1s\n    retry: { max_attempts: 0, jitter: ful }\n",
        )
        .replace("concurrency: 4", "concurrency: lots");
        let e = err(&src);
        let paths: Vec<&str> = e.iter().filter_map(|e| e.path.as_deref()).collect();
        assert_eq!(
            paths,
            [
                "dependency.concurrency",
                "layers.a.timout",
                "layers.a.retry.jitter",
                "replicates",
                "layers.a.retry.max_attempts"
            ],
            "{e}"
        );
        assert!(e.iter().all(|e| e.line.is_some()), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("x.yaml:11:5: layers.a.timout: unknown field `timout`"),
            "{text}"
        );
        assert!(
            text.contains("did you mean `timeout`?") && text.contains("did you mean `full`?"),
            "{text}"
        );
        // A required field with a wrong type hides nothing: the range error
        // after it is reported too, and nothing made up about a stand-in.
        let src = with("bucket: 2m\n").replace("duration: 1m", "duration: 60");
        let e = err(&src);
        assert_eq!(e.len(), 1, "{e}");
        let src = with("replicates: 0\n").replace("duration: 1m", "duration: 60");
        let e = err(&src);
        assert_eq!(e.len(), 2, "{e}");
        assert_eq!(e.0[1].path.as_deref(), Some("replicates"), "{e}");
    }

    #[test]
    fn duplicate_layer_names() {
        let e = one(&with("layers:\n  - name: api\n  - name: api\n"));
        assert_eq!(
            e.to_string(),
            "x.yaml:10:11: layers.1.name: layer name `api` is used twice; expected unique layer names"
        );
    }

    #[test]
    fn empty_file() {
        for src in ["", "   \n", "# only a comment\n", "---\n"] {
            let e = one(src);
            assert_eq!(e.to_string(), format!("x.yaml: {EMPTY}"));
        }
    }

    #[test]
    fn alias_bomb_fails_fast() {
        let mut src = String::from(
            "name: x\nvariants:\n  - name: a\n    set:\n      a: &a [x, x, x, x, x, x, x, x, x, x]\n",
        );
        for i in 1..12u8 {
            let (prev, cur) = ((b'a' + i - 1) as char, (b'a' + i) as char);
            src += &format!(
                "      {cur}: &{cur} [{}]\n",
                vec![format!("*{prev}"); 10].join(", ")
            );
        }
        let start = std::time::Instant::now();
        let e = err(&src);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        assert!(e.0[0].line.is_some(), "{e}");
        assert!(e.to_string().contains("alias bombs"), "{e}");
    }

    #[test]
    fn deep_nesting_fails_fast() {
        let src = format!(
            "name: x\nvariants:\n  - name: a\n    set:\n      a: {}{}\n",
            "[".repeat(5000),
            "]".repeat(5000)
        );
        let start = std::time::Instant::now();
        let e = one(&src);
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        assert!(e.line.is_some() && e.column.is_some(), "{e}");
        assert!(e.message.contains("nests too deeply"), "{e}");
        let src = format!(
            "name: x\nvariants:\n  - name: a\n    set:\n      a:\n        {}1\n",
            "- ".repeat(5000)
        );
        let e = one(&src);
        assert!(e.line.is_some(), "{e}");
    }

    #[test]
    fn binary_garbage() {
        let garbage: Vec<u8> = (0..512u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("garbage.yaml");
        std::fs::write(&path, &garbage).unwrap();
        let e = load_file(&path).unwrap_err();
        assert!(e.0[0].message.contains("not UTF-8"), "{e}");
        assert!(e.0[0].line.is_some(), "{e}");
        // Valid UTF-8 control characters are a YAML error, not a panic.
        let text: String = garbage.iter().map(|&b| char::from(b % 32)).collect();
        assert!(load_str(&text, "x").is_err());
    }

    #[test]
    fn file_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = load_file(dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let missing = dir.path().join("nope.yaml");
        let e = load_file(&missing).unwrap_err();
        assert!(e.to_string().ends_with("nope.yaml: no such file"), "{e}");
        let ok = dir.path().join("ok.yaml");
        std::fs::write(&ok, FULL).unwrap();
        assert_eq!(load_file(&ok).unwrap().name, "outage-recovery");
    }

    #[test]
    fn variant_set_error_points_at_the_variant() {
        let src = FULL.replace("dependency.concurrency: 32", "dependency.concurrency: 0");
        let e = one(&src);
        assert_eq!((e.line, e.column), (Some(52), Some(31)), "{e}");
        assert_eq!(
            e.path.as_deref(),
            Some("variants.1.set.dependency.concurrency")
        );
        assert!(
            e.message
                .starts_with("in variant `full-jitter`: concurrency is 0"),
            "{e}"
        );
        let src = FULL.replace(
            "layers.api.retry.jitter: none",
            "layers.apii.retry.jitter: none",
        );
        let e = one(&src);
        assert_eq!(e.line, Some(48), "{e}");
        assert!(e.message.contains("did you mean `api`?"), "{e}");
    }

    /// F9: a number in a message is quoted as the file wrote it.
    #[test]
    fn numbers_in_messages_are_quoted_as_written() {
        let m = |msg: &str, written: &str| as_written(msg.to_string(), written);
        assert_eq!(
            m(
                "multiplier is -1; expected a number > 0",
                "-1.00000000000000001"
            ),
            "multiplier is -1.00000000000000001; expected a number > 0"
        );
        assert_eq!(
            m(
                "`inf` is not a finite number; expected a real number",
                "1e400"
            ),
            "`1e400` is not a finite number; expected a real number"
        );
        // Written as read, or not a number: as it is.
        assert_eq!(m("is 0.5; expected", "0.5"), "is 0.5; expected");
        assert_eq!(m("is 1s; expected", "1.0s"), "is 1s; expected");
        // Only a whole token: `1` inside `10` or `1.5` is left alone.
        assert_eq!(
            m("from 10 to 1.5, found 1", "1.0"),
            "from 10 to 1.5, found 1.0"
        );
        // Already quoted as written: a bound that spells the value as
        // read (`1`, `01`) stays the bound.
        assert_eq!(
            m(
                "expected a whole number from 1 to 1000000, found `1.0`",
                "1.0"
            ),
            "expected a whole number from 1 to 1000000, found `1.0`"
        );
        assert_eq!(
            m("expected a whole number from 1 to 10000, found `01`", "01"),
            "expected a whole number from 1 to 10000, found `01`"
        );
    }

    #[test]
    fn a_broken_file_with_sets_judges_its_values_once() {
        let src =
            FULL.replacen("timeout: 1s", "timeout: abc", 1)
                .replacen("end: 9m30s", "end: 11m", 1);
        let sets = vec![("duration".to_string(), serde_json::json!("8m"))];
        let e = load_str_with(&src, "b.yaml", &sets)
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid duration `abc`"), "{e}");
        assert_eq!(e.matches("dependency.incidents.4.end").count(), 1, "{e}");
        assert!(
            e.contains("incident ends at 11m, after the run (8m)"),
            "{e}"
        );
    }
}
