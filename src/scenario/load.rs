//! Reading a scenario: file → text → typed `Scenario` (serde-saphyr, with
//! budgets against alias bombs and deep nesting) → field-dependent
//! defaults → validation, including every variant. All errors carry the
//! file, line, column and field path.

use std::path::Path;

use serde_saphyr::{DefaultMessageFormatter, MessageFormatter};

use super::defaults::fill_defaults;
use super::error::{ScenarioError, ScenarioErrors, one_line};
use super::locate::LocationIndex;
use super::suggest::improve_message;
use super::types::Scenario;
use super::validate::{Issue, validate};
use super::variants::variant_errors;

/// Scenario files larger than this are refused (a real one is a few KiB).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

const EMPTY: &str =
    "the file is empty; a scenario needs at least name, duration, clients and dependency";

/// Reads, parses and validates the scenario file at `path`.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioErrors> {
    let label = path.display().to_string();
    let text = read_text(path, &label)?;
    load_str(&text, &label)
}

/// Parses and validates a scenario given as text; `file_label` names it in
/// errors.
pub fn load_str(src: &str, file_label: &str) -> Result<Scenario, ScenarioErrors> {
    let mut s = parse(src, file_label)?;
    fill_defaults(&mut s);
    let issues = validate(&s);
    let index = LocationIndex::build(src);
    if !issues.is_empty() {
        return Err(ScenarioErrors(locate_issues(
            issues,
            file_label,
            Some(&index),
        )));
    }
    let errors = variant_errors(&s, file_label, Some(&index));
    if errors.is_empty() {
        Ok(s)
    } else {
        Err(ScenarioErrors(errors))
    }
}

/// Turns validation issues into errors, with positions from `index`.
pub(crate) fn locate_issues(
    issues: Vec<Issue>,
    file_label: &str,
    index: Option<&LocationIndex>,
) -> Vec<ScenarioError> {
    issues
        .into_iter()
        .map(|issue| {
            let e = ScenarioError::new(file_label, issue.message).with_path(issue.path.clone());
            match index.and_then(|i| i.position(&issue.path)) {
                Some((line, col)) => e.at(line, col),
                None => e,
            }
        })
        .collect()
}

fn read_text(path: &Path, label: &str) -> Result<String, ScenarioError> {
    let err = |m: String| ScenarioError::new(label, m);
    let meta = std::fs::metadata(path).map_err(|e| err(io_message(&e)))?;
    if meta.is_dir() {
        return Err(err("is a directory; expected a scenario YAML file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(err(format!(
            "the file is {} bytes; a scenario file may be at most {MAX_FILE_BYTES} bytes",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| err(io_message(&e)))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let (line, col) = end_position(valid);
        err("the file is not UTF-8 text; a scenario is a YAML text file".into()).at(line, col)
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

fn parse(src: &str, label: &str) -> Result<Scenario, ScenarioError> {
    if is_empty_document(src) {
        return Err(ScenarioError::new(label, EMPTY));
    }
    let options = serde_saphyr::options! {
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
            max_total_replayed_events: 200_000,
            max_replay_stack_depth: 16,
        },
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options::<Scenario>(src, options)
        .map_err(|e| serde_error(&e, src, label))
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

/// A serde-saphyr error as a one-line `ScenarioError` with its field path.
fn serde_error(e: &serde_saphyr::Error, src: &str, label: &str) -> ScenarioError {
    let inner = e.without_snippet();
    let message = one_line(&DefaultMessageFormatter.format_message(inner));
    let position = inner
        .location()
        .map(|l| (clamp(l.line()), clamp(l.column())))
        .filter(|&(line, _)| line > 0);
    let Some((line, col)) = position else {
        return ScenarioError::new(label, improve_message(&message, None));
    };
    let index = LocationIndex::build(src);
    let (path, found) = match index.path_at((line, col)) {
        Some((path, is_key, scalar)) => (
            error_path(path, is_key, &message),
            scalar.filter(|_| !is_key).map(str::to_string),
        ),
        None => (String::new(), None),
    };
    ScenarioError::new(label, improve_message(&message, found.as_deref()))
        .at(line, col)
        .with_path(path)
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
    path.rfind(['.', '[']).map_or("", |i| &path[..i])
}
