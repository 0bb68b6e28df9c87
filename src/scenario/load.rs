//! Reading a scenario: file → text → typed `Scenario` (serde-saphyr, with
//! budgets against alias bombs and deep nesting) → field-dependent
//! defaults → validation, including every variant. All errors carry the
//! file, line, column and field path.

use std::path::Path;

use serde_saphyr::{DefaultMessageFormatter, MessageFormatter};

use super::defaults::fill_defaults;
use super::error::{ScenarioError, ScenarioErrors, one_line};
use super::locate::LocationIndex;
use super::presets;
use super::suggest::improve_message;
use super::types::Scenario;
use super::validate::{Issue, validate};
use super::variants::{expand_all, variant_errors};

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
    let mut s = match parse(src, file_label) {
        Ok(s) if s.layers.iter().any(|l| l.preset.is_some()) => with_presets(src, file_label)?,
        Ok(s) => s,
        // Beside a preset a field may be missing on purpose (`backoff:
        // { base: 2s }` takes its kind from the preset): parse again with
        // the presets filled in.
        Err(e) => match parse_value(src) {
            Some(v) if has_preset_layer(&v) => with_presets(src, file_label)?,
            _ => return Err(e.into()),
        },
    };
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
    let mut errors = variant_errors(&s, file_label, Some(&index));
    if errors.is_empty()
        && let Err(e) = expand_all(&s)
    {
        // Sweep values that do not fit their field, located at the sweep,
        // and a table too large, located at `replicates`.
        errors =
            e.0.into_iter()
                .map(|mut err| {
                    err.file = file_label.to_string();
                    if let Some(pos) = err.path.as_deref().and_then(|p| index.position(p)) {
                        err = err.at(pos.0, pos.1);
                    }
                    err
                })
                .collect();
    }
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

fn parse(src: &str, label: &str) -> Result<Scenario, ScenarioError> {
    if is_empty_document(src) {
        return Err(ScenarioError::new(label, EMPTY));
    }
    serde_saphyr::from_str_with_options::<Scenario>(src, parse_options())
        .map_err(|e| serde_error(&e, src, label))
}

/// Parser options: budgets against alias bombs and deep nesting.
fn parse_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
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
    }
}

/// The scenario of `src` (already known to parse) with every layer's
/// preset filled in where the file does not write the field itself.
/// A problem in the merged scenario is located by reading the merged
/// scenario as YAML: the error's position there gives its field path, and
/// the path gives the position in the user's file.
fn with_presets(src: &str, label: &str) -> Result<Scenario, ScenarioError> {
    let mut value: serde_json::Value = serde_saphyr::from_str_with_options(src, parse_options())
        .map_err(|e| serde_error(&e, src, label))?;
    presets::for_preset_layers(&mut value, |_| true, presets::fill_layer);
    if let Ok(s) = serde_json::from_value::<Scenario>(value.clone()) {
        return Ok(s);
    }
    let merged = serde_saphyr::to_string(&value)
        .map_err(|e| ScenarioError::new(label, format!("cannot fill in the presets: {e}")))?;
    match serde_saphyr::from_str_with_options::<Scenario>(&merged, parse_options()) {
        Ok(s) => Ok(s),
        Err(e) => {
            let err = serde_error(&e, &merged, label);
            let index = LocationIndex::build(src);
            let mut located = ScenarioError::new(label, err.message);
            if let Some(path) = err.path {
                if let Some((line, col)) = index.position(&path) {
                    located = located.at(line, col);
                }
                located = located.with_path(path);
            }
            Err(located)
        }
    }
}

/// `src` as a plain value, if it parses.
fn parse_value(src: &str) -> Option<serde_json::Value> {
    serde_saphyr::from_str_with_options(src, parse_options()).ok()
}

fn has_preset_layer(v: &serde_json::Value) -> bool {
    v.get("layers")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|ls| ls.iter().any(|l| l.get("preset").is_some()))
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
        assert_eq!(api.retry.backoff.multiplier, Some(2.0));
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
        // Field-dependent default filled in.
        assert_eq!(s.dependency.incidents[3].status, Some(503));
        assert_eq!(s.dependency.recovery.warmup, Duration::from_secs(30));
        assert_eq!(s.variants.len(), 2);
    }

    #[test]
    fn fills_the_exponential_multiplier() {
        let s = load_str(
            &with(
                "layers:\n  - name: a\n    retry: { backoff: { kind: exponential, base: 10ms } }\n",
            ),
            "x",
        )
        .unwrap();
        assert_eq!(s.layers[0].retry.backoff.multiplier, Some(2.0));
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
            "x.yaml:6:16: dependency.concurrency: expected a whole number >= 0 (u32), found `lots`"
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
        assert_eq!(e.path.as_deref(), Some("dependency.incidents[0].end"));
        assert!(e.message.contains("after the run (1m)"), "{e}");
    }

    #[test]
    fn reports_every_semantic_problem() {
        let src = with("replicates: 0\nlayers:\n  - name: a\n    retry: { max_attempts: 0 }\n");
        let src = src.replace("duration: 1m", "duration: 1m\nbucket: 2m");
        assert_eq!(err(&src).len(), 4, "{}", err(&src));
    }

    #[test]
    fn duplicate_layer_names() {
        let e = one(&with("layers:\n  - name: api\n  - name: api\n"));
        assert_eq!(
            e.to_string(),
            "x.yaml:10:11: layers[1].name: layer name `api` is used twice; expected unique layer names"
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
            Some("variants[1].set.dependency.concurrency")
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
}
