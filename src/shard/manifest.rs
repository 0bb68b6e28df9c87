//! `manifest.json` of a shard folder: what a shard ran, written by
//! `stormsim run --shard` and read back, untrusted, by `stormsim merge`.
//!
//! A manifest decides the merge's output folder and the sizes it
//! allocates, so it is checked like a scenario file before anything is
//! used: only a regular file of at most [`MAX_MANIFEST_BYTES`] is read;
//! every field must be present, of its type and in its range (numbers
//! bounded by the largest run stormsim writes: [`MAX_ITEMS`] runs,
//! `scenario::validate::MAX_TIMESERIES_ROWS` rows); names must be plain
//! text (the scenario's, one folder name); unknown fields are refused.
//! Errors name the file and the field path (`items.3.replicate`).

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{FORMAT, MANIFEST, RULE, json_position};
use crate::input_file::{InputError, read_capped};
use crate::scenario::validate::MAX_TIMESERIES_ROWS;

/// Manifests larger than this are refused (one of a 2-million-run sweep
/// is some 300 MB).
pub const MAX_MANIFEST_BYTES: u64 = 512 * 1024 * 1024;
/// Names (scenario, variant, version) longer than this are refused.
pub const MAX_NAME_BYTES: usize = 4096;
/// The most runs (items) a manifest may describe, the most a run can
/// have: results of more would not fit in memory
/// (`runner::retained_bytes`, some 60 kB a run).
pub const MAX_ITEMS: u64 = 2_000_000;

/// One run of a shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ManifestItem {
    /// k = variant_index × replicates + replicate.
    pub item: usize,
    pub variant_index: usize,
    pub variant: String,
    pub replicate: u32,
    /// Its rows in the shard's `timeseries.csv`.
    pub rows: usize,
    /// Its rows in the shard's graph tables, in the order of
    /// [`super::GRAPH_TABLES`] (`services.csv`,
    /// `services_timeseries.csv`, `calls.csv`, `replicas.csv`,
    /// `classes.csv`).
    pub graph_rows: [usize; 5],
}

/// `manifest.json` of a shard folder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    pub stormsim_version: String,
    /// The scenario's name (the default output folder of the merge).
    pub scenario: String,
    /// [`super::scenario_digest`] of `scenario.resolved.yaml`.
    pub scenario_digest: String,
    /// This shard's index I (0-based).
    pub shard: usize,
    /// The number of shards N.
    pub shards: usize,
    pub variants: usize,
    pub replicates: u32,
    /// Items of the whole run (variants × replicates).
    pub items_total: usize,
    /// [`RULE`].
    pub rule: String,
    pub items: Vec<ManifestItem>,
}

impl Manifest {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a manifest is plain data");
        s.push('\n');
        s
    }

    /// Reads and checks the manifest of the shard folder `dir`. Errors
    /// name the file, the line and column, and the field.
    pub fn read(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join(MANIFEST);
        let shown = crate::escape::path(&path);
        let bytes = read_capped(&path, MAX_MANIFEST_BYTES).map_err(|e| match e {
            InputError::NotFound => format!(
                "{} is not a shard folder: it has no {MANIFEST}",
                crate::escape::path(dir)
            ),
            e => format!("{shown}: {e}"),
        })?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            // serde_json says "… at line L column C": as a location first.
            let text = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let what = match e.classify() {
                // serde_json says "EOF while parsing an object".
                serde_json::error::Category::Eof => {
                    "the file ends before its JSON does (was it cut short?)"
                }
                _ => text.strip_suffix(&suffix).unwrap_or(&text),
            };
            let what = json_words(what, &bytes);
            format!(
                "{shown}:{}:{}: not a valid shard manifest: {what}",
                e.line(),
                e.column().max(1)
            )
        })?;
        // serde_json keeps the last of two equal keys without a word.
        if let Some((key, (line, column))) = json_position::duplicate_key(&bytes) {
            return Err(format!(
                "{shown}:{line}:{column}: not a valid shard manifest: the key `{}` \
                 appears twice",
                crate::escape::escape(&key)
            ));
        }
        Manifest::from_value(&value).map_err(|e| {
            let (line, column) = json_position::locate(&bytes, &e.path);
            format!("{shown}:{line}:{column}: {e}")
        })
    }

    /// Checks a manifest's fields (see the module's documentation).
    pub fn from_value(v: &Value) -> Result<Manifest, FieldError> {
        let top = Obj::new(v, &[], TOP_FIELDS)?;
        let format = top.text("format")?;
        if format != FORMAT {
            return Err(FieldError::at(
                &["format"],
                format!(
                    "unknown shard format {} (expected {FORMAT:?}: a shard \
                     written by this version of stormsim)",
                    crate::escape::quoted(&format)
                ),
            ));
        }
        let rule = top.text("rule")?;
        if rule != RULE {
            return Err(FieldError::at(
                &["rule"],
                format!("expected {RULE:?}, got {}", crate::escape::quoted(&rule)),
            ));
        }
        let scenario = top.text("scenario")?;
        if crate::report::output_dir::default_folder(&scenario).is_err() {
            return Err(FieldError::at(
                &["scenario"],
                format!(
                    "{} is not a scenario name (expected one folder name of at most \
                     255 bytes, without `/`, `..` or control characters)",
                    crate::escape::quoted(&scenario)
                ),
            ));
        }
        let digest = top.text("scenario_digest")?;
        let hex = digest.strip_prefix("fnv1a64:").unwrap_or("");
        if hex.len() != 16
            || !hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return Err(FieldError::at(
                &["scenario_digest"],
                format!(
                    "expected `fnv1a64:` and 16 lowercase hex digits, got {}",
                    crate::escape::quoted(&digest)
                ),
            ));
        }
        let shards = top.whole("shards", 1, MAX_ITEMS)?;
        let shard = top.whole("shard", 0, shards - 1)?;
        let variants = top.whole("variants", 1, MAX_ITEMS)?;
        let replicates = top.whole("replicates", 1, u64::from(u32::MAX))?;
        let items_total = top.whole("items_total", 1, MAX_ITEMS)?;
        if variants.checked_mul(replicates) != Some(items_total) {
            return Err(FieldError::at(
                &["items_total"],
                format!("{items_total} is not variants × replicates ({variants} × {replicates})"),
            ));
        }
        let list = top
            .get("items")?
            .as_array()
            .ok_or_else(|| FieldError::at(&["items"], "expected a list of runs"))?;
        if list.len() as u64 > items_total {
            return Err(FieldError::at(
                &["items"],
                format!(
                    "{}, more than items_total ({items_total})",
                    crate::human::plural(list.len(), "run")
                ),
            ));
        }
        let mut items = Vec::with_capacity(list.len());
        for (i, v) in list.iter().enumerate() {
            let o = Obj::new(v, &["items".to_string(), i.to_string()], ITEM_FIELDS)?;
            items.push(ManifestItem {
                item: o.whole("item", 0, items_total - 1)? as usize,
                variant_index: o.whole("variant_index", 0, variants - 1)? as usize,
                variant: o.text("variant")?,
                replicate: o.whole("replicate", 0, replicates - 1)? as u32,
                rows: o.whole("rows", 0, MAX_TIMESERIES_ROWS)? as usize,
                graph_rows: o.graph_rows("graph_rows")?,
            });
        }
        Ok(Manifest {
            format,
            stormsim_version: top.text("stormsim_version")?,
            scenario,
            scenario_digest: digest,
            shard: shard as usize,
            shards: shards as usize,
            variants: variants as usize,
            replicates: replicates as u32,
            items_total: items_total as usize,
            rule,
            items,
        })
    }
}

/// A field of a manifest that is wrong: its path (`items.3.replicate`,
/// each part as the file spells it) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub path: Vec<String>,
    pub message: String,
}

impl FieldError {
    fn at(path: &[&str], message: impl Into<String>) -> FieldError {
        FieldError {
            path: path.iter().map(|p| p.to_string()).collect(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path: Vec<String> = self.path.iter().map(|p| printable(p)).collect();
        if path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", path.join("."), self.message)
        }
    }
}

impl std::error::Error for FieldError {}

const TOP_FIELDS: &[&str] = &[
    "format",
    "stormsim_version",
    "scenario",
    "scenario_digest",
    "shard",
    "shards",
    "variants",
    "replicates",
    "items_total",
    "rule",
    "items",
];
const ITEM_FIELDS: &[&str] = &[
    "item",
    "variant_index",
    "variant",
    "replicate",
    "rows",
    "graph_rows",
];

/// A JSON object whose fields are read with their paths in errors.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: Vec<String>,
}

impl<'a> Obj<'a> {
    /// The path of the field `key` (and further parts).
    fn at(&self, key: &str, more: &[String]) -> Vec<String> {
        let mut p = self.path.clone();
        p.push(key.to_string());
        p.extend(more.iter().cloned());
        p
    }

    fn error(&self, key: &str, message: impl Into<String>) -> FieldError {
        FieldError {
            path: self.at(key, &[]),
            message: message.into(),
        }
    }

    /// Five row counts, each bounded like `rows`.
    fn graph_rows(&self, key: &str) -> Result<[usize; 5], FieldError> {
        let list = self
            .get(key)?
            .as_array()
            .filter(|l| l.len() == 5)
            .ok_or_else(|| self.error(key, "expected a list of five row counts"))?;
        let mut out = [0usize; 5];
        for (i, v) in list.iter().enumerate() {
            out[i] = v
                .as_u64()
                .filter(|&n| n <= MAX_TIMESERIES_ROWS)
                .ok_or_else(|| FieldError {
                    path: self.at(key, &[i.to_string()]),
                    message: format!("expected a whole number from 0 to {MAX_TIMESERIES_ROWS}"),
                })? as usize;
        }
        Ok(out)
    }

    /// The object at `path`, with exactly the fields `known`.
    fn new(v: &'a Value, path: &[String], known: &[&str]) -> Result<Obj<'a>, FieldError> {
        let map = v.as_object().ok_or_else(|| FieldError {
            path: path.to_vec(),
            message: if path.is_empty() {
                "expected a JSON object".to_string()
            } else {
                "expected an object".to_string()
            },
        })?;
        let obj = Obj {
            map,
            path: path.to_vec(),
        };
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                return Err(obj.error(
                    key,
                    format!(
                        "unknown field `{}`, expected one of {}",
                        printable(key),
                        known.join(", ")
                    ),
                ));
            }
        }
        for key in known {
            if !map.contains_key(*key) {
                return Err(obj.error(key, "missing"));
            }
        }
        Ok(obj)
    }

    fn get(&self, key: &str) -> Result<&'a Value, FieldError> {
        self.map.get(key).ok_or_else(|| self.error(key, "missing"))
    }

    /// A whole number from `min` to `max`.
    fn whole(&self, key: &str, min: u64, max: u64) -> Result<u64, FieldError> {
        let v = self.get(key)?;
        v.as_u64()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                self.error(
                    key,
                    format!(
                        "expected a whole number from {min} to {max}, got {}",
                        printable(&v.to_string())
                    ),
                )
            })
    }

    /// Plain text: no control characters, at most [`MAX_NAME_BYTES`].
    fn text(&self, key: &str) -> Result<String, FieldError> {
        let v = self.get(key)?;
        let s = v.as_str().ok_or_else(|| self.error(key, "expected text"))?;
        if s.len() > MAX_NAME_BYTES {
            return Err(self.error(
                key,
                format!(
                    "{} bytes of text; expected at most {MAX_NAME_BYTES}",
                    s.len()
                ),
            ));
        }
        if s.chars().any(crate::input_file::is_unsafe_char) {
            return Err(self.error(
                key,
                format!(
                    "`{}` holds control or invisible formatting characters",
                    printable(s)
                ),
            ));
        }
        Ok(s.to_string())
    }
}

/// Text from a manifest, safe to print: characters that must not reach a
/// terminal escaped (`crate::input_file::is_unsafe_char`), cut short.
fn printable(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 80 {
            out.push('…');
            break;
        }
        if crate::input_file::is_unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// serde_json's message `what` about the manifest `bytes`, in plain
/// words: what in the text is wrong ("number out of range" is a number
/// too large, "recursion limit exceeded" nesting too deep), and a file
/// that starts with a byte-order mark is named so.
fn json_words<'a>(what: &'a str, bytes: &[u8]) -> std::borrow::Cow<'a, str> {
    use std::borrow::Cow;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Cow::Borrowed(
            "the file starts with a byte-order mark (U+FEFF), which JSON does not allow: save it as UTF-8 without a BOM",
        );
    }
    let words = if what.contains("number out of range") {
        "a number is too large (beyond what a 64-bit float holds); a manifest's numbers are counts"
    } else if what.contains("recursion limit exceeded") {
        "the JSON nests too deeply (over 128 levels); a manifest nests two or three"
    } else if what.contains("invalid escape") {
        "a text holds an unknown escape (a `\\` before a character JSON does not know)"
    } else if what.contains("hex escape")
        || what.contains("surrogate")
        || what.contains("unicode code point")
    {
        "a text holds an invalid \\u escape (not four hexadecimal digits, or half of a UTF-16 surrogate pair)"
    } else if what.contains("control character") {
        "a text holds a control character (a tab or line break inside quotes); write it escaped"
    } else if what.contains("trailing characters") {
        "more text follows the JSON object; a manifest is one object"
    } else if what.contains("trailing comma") {
        "a `,` comes before a closing bracket; remove it"
    } else if what.contains("key must be a string") {
        "a key is not in double quotes"
    } else if what == "expected value" {
        "a value is missing, or is not JSON (a number, \"text\", true, false, null, a [list] or an {object})"
    } else {
        return Cow::Borrowed(what);
    };
    Cow::Borrowed(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Value {
        serde_json::json!({
            "format": FORMAT,
            "stormsim_version": "0.1.0",
            "scenario": "s",
            "scenario_digest": "fnv1a64:0123456789abcdef",
            "shard": 1,
            "shards": 2,
            "variants": 2,
            "replicates": 2,
            "items_total": 4,
            "rule": RULE,
            "items": [
                {"item": 1, "variant_index": 0, "variant": "a", "replicate": 1, "rows": 10, "graph_rows": [1, 10, 1, 1, 0]},
                {"item": 3, "variant_index": 1, "variant": "b", "replicate": 1, "rows": 10, "graph_rows": [1, 10, 1, 1, 0]}
            ]
        })
    }

    fn error_with(path: &str, value: Value) -> String {
        let mut v = good();
        let mut at = &mut v;
        let parts: Vec<&str> = path.split('.').collect();
        for p in &parts[..parts.len() - 1] {
            at = match p.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*p],
            };
        }
        at[parts[parts.len() - 1]] = value;
        Manifest::from_value(&v).unwrap_err().to_string()
    }

    #[test]
    fn a_good_manifest_reads_back() {
        let m = Manifest::from_value(&good()).unwrap();
        assert_eq!(m.items[1].variant, "b");
        let again: Value = serde_json::from_str(&m.to_json()).unwrap();
        assert_eq!(again, good());
    }

    #[test]
    fn every_field_is_checked_with_its_path() {
        let cases: &[(&str, Value, &str)] = &[
            (
                "scenario",
                "../../x".into(),
                "scenario: \"../../x\" is not a scenario name",
            ),
            ("scenario", "/abs".into(), "is not a scenario name"),
            ("scenario", "".into(), "is not a scenario name"),
            ("scenario", "..".into(), "is not a scenario name"),
            ("scenario", "a\u{1b}[2J".into(), "control or invisible"),
            ("scenario", "x".repeat(5000).into(), "5000 bytes"),
            ("scenario", "x".repeat(256).into(), "is not a scenario name"),
            ("scenario", 3.into(), "scenario: expected text"),
            (
                "items_total",
                1_000_000_000_000_000u64.into(),
                "items_total: expected a whole number from 1 to 2000000",
            ),
            ("items_total", (-1).into(), "got -1"),
            ("items_total", 2.5.into(), "got 2.5"),
            (
                "shard",
                2.into(),
                "shard: expected a whole number from 0 to 1",
            ),
            ("shards", 0.into(), "shards: expected a whole number from 1"),
            ("replicates", 3.into(), "is not variants × replicates"),
            (
                "scenario_digest",
                "fnv1a64:XYZ".into(),
                "16 lowercase hex digits",
            ),
            ("format", "stormsim-shard/1".into(), "unknown shard format"),
            (
                "items.1.replicate",
                7.into(),
                "items.1.replicate: expected a whole number from 0 to 1",
            ),
            ("items.0.variant_index", 2.into(), "items.0.variant_index"),
            ("items.0.item", 4.into(), "items.0.item"),
            ("items.0.rows", "ten".into(), "items.0.rows"),
            (
                "items.0.extra",
                1.into(),
                "items.0.extra: unknown field `extra`",
            ),
            (
                "items.1.variant",
                "\u{202e}evil".into(),
                "control or invisible",
            ),
        ];
        for (path, value, expected) in cases {
            let e = error_with(path, value.clone());
            assert!(e.contains(expected), "{path}: {e}");
        }
        let mut v = good();
        v.as_object_mut().unwrap().remove("rule");
        assert_eq!(
            Manifest::from_value(&v).unwrap_err().to_string(),
            "rule: missing"
        );
        assert!(Manifest::from_value(&Value::Null).is_err());
    }
}
