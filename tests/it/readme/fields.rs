//! The scenario format's fields as a YAML example shows them, against the
//! JSON Schema the binary prints (`stormsim schema`): the dotted path of
//! every field (`layers[].retry.backoff.cap`, `[]` for a list's items) and
//! the value written beside it. A whole-line comment that is itself a
//! field (`# budget: { kind: ratio, ratio: 0.1 }`, an alternative to the
//! line above it) counts as written, in the mapping its indentation puts it.

use std::collections::BTreeMap;

use serde_json::Value;

/// A field written in an example.
#[derive(Clone, Debug)]
pub struct Written {
    pub path: String,
    pub value: String,
    /// False for a commented-out alternative.
    pub active: bool,
    /// 1-based line within the example.
    pub line: usize,
}

/// Mappings whose keys are dotted paths or free (`set`, `sweep`, a
/// server's `shed_by_priority`, keyed by class name): their keys are not
/// fields of the format.
fn free_form(path: &str) -> bool {
    path == "sweep" || path.ends_with(".set") || path.ends_with(".shed_by_priority")
}

fn key_of(content: &str) -> Option<(&str, &str)> {
    let (key, rest) = content.split_once(':')?;
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    (ok && (rest.is_empty() || rest.starts_with(' '))).then(|| (key, rest.trim()))
}

/// The value without a trailing comment (` # ...` outside brackets).
fn strip_comment(value: &str) -> &str {
    let mut depth = 0i32;
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            b'#' if depth <= 0 && (i == 0 || bytes[i - 1] == b' ') => {
                return value[..i].trim_end();
            }
            _ => {}
        }
    }
    value.trim_end()
}

/// Splits a flow collection's inside at its top-level commas.
fn split_top(inner: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = inner[start..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

fn record(out: &mut Vec<Written>, path: String, value: &str, active: bool, line: usize) {
    let value = value.trim();
    if !free_form(&path)
        && let Some(inner) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}'))
    {
        for part in split_top(inner) {
            if let Some((k, v)) = key_of(part) {
                record(out, format!("{path}.{k}"), v, active, line);
            }
        }
    }
    out.push(Written {
        path,
        value: value.to_string(),
        active,
        line,
    });
}

/// Every field written in a YAML example.
pub fn written(yaml: &str) -> Vec<Written> {
    let mut out = Vec::new();
    // (indentation of the key, its path); list items push `path[]` at the
    // dash's column.
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (n, raw) in yaml.lines().enumerate() {
        let line = n + 1;
        let trimmed = raw.trim_start();
        let lead = raw.len() - trimmed.len();
        let (indent, content, active) = if let Some(c) = trimmed.strip_prefix('#') {
            let c = c.strip_prefix(' ').unwrap_or(c);
            let inner = c.trim_start();
            let more = c.len() - inner.len();
            if key_of(inner.strip_prefix("- ").unwrap_or(inner)).is_none() {
                continue; // prose
            }
            (lead + more, inner, false)
        } else if trimmed.is_empty() {
            continue;
        } else {
            (lead, trimmed, true)
        };
        let (indent, content, item) = match content.strip_prefix("- ") {
            Some(rest) => (indent + 2, rest.trim_start(), Some(indent)),
            None => (indent, content, None),
        };
        if let Some(dash) = item {
            while stack.last().is_some_and(|(i, _)| *i >= dash) {
                stack.pop();
            }
            let parent = stack.last().map(|(_, p)| p.clone()).unwrap_or_default();
            stack.push((dash, format!("{parent}[]")));
        } else {
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
        }
        let parent = stack.last().map(|(_, p)| p.clone());
        if parent.as_deref().is_some_and(free_form) {
            continue;
        }
        let content = strip_comment(content);
        if item.is_some() && content.starts_with('{') {
            let inner = &content[1..content.len() - 1];
            for part in split_top(inner) {
                if let Some((k, v)) = key_of(part) {
                    record(
                        &mut out,
                        format!("{}.{k}", parent.clone().unwrap()),
                        v,
                        active,
                        line,
                    );
                }
            }
            continue;
        }
        let Some((key, value)) = key_of(content) else {
            continue;
        };
        let path = match &parent {
            Some(p) => format!("{p}.{key}"),
            None => key.to_string(),
        };
        record(&mut out, path.clone(), value, active, line);
        if value.is_empty() {
            stack.push((indent, path));
        }
    }
    out
}

/// Every field of the format (dotted paths as `written` gives them) and
/// its default, from the JSON Schema.
pub fn schema_fields(schema: &Value) -> BTreeMap<String, Option<Value>> {
    type Defs = serde_json::Map<String, Value>;
    fn resolve<'a>(defs: &'a Defs, mut v: &'a Value) -> &'a Value {
        while let Some(r) = v.get("$ref").and_then(Value::as_str) {
            v = &defs[r.rsplit('/').next().unwrap()];
        }
        v
    }
    fn walk(
        defs: &Defs,
        node: &Value,
        path: &str,
        out: &mut BTreeMap<String, Option<Value>>,
        depth: usize,
    ) {
        let node = resolve(defs, node);
        if depth > 12 {
            return;
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            for alt in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                walk(defs, alt, path, out, depth + 1);
            }
        }
        if let Some(items) = node.get("items") {
            walk(defs, items, &format!("{path}[]"), out, depth + 1);
        }
        for (k, v) in node
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            let default = v
                .get("default")
                .or_else(|| resolve(defs, v).get("default"))
                .cloned();
            let entry = out.entry(p.clone()).or_insert(None);
            if entry.is_none() {
                *entry = default.clone();
            }
            // An object's default gives its fields' defaults.
            if let Some(Value::Object(fields)) = &default {
                for (fk, fv) in fields {
                    let e = out.entry(format!("{p}.{fk}")).or_insert(None);
                    if e.is_none() {
                        *e = Some(fv.clone());
                    }
                }
            }
            if !free_form(&p) {
                walk(defs, v, &p, out, depth + 1);
            }
        }
    }
    let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
    let mut out = BTreeMap::new();
    walk(&defs, schema, "", &mut out, 0);
    out
}

/// A default as an example would write it, for comparison.
pub fn same_value(default: &Value, written: &str) -> bool {
    let written = written.trim().trim_matches('"').trim_matches('\'');
    if written.is_empty() {
        return true; // a mapping or a list, written on the lines below
    }
    match default {
        Value::Number(n) => written
            .parse::<f64>()
            .is_ok_and(|w| (w - n.as_f64().unwrap()).abs() < 1e-12),
        Value::String(s) => s == written,
        Value::Bool(b) => written == b.to_string(),
        Value::Array(items) => {
            let shown: Vec<String> = items
                .iter()
                .map(|i| match i {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            written.replace(' ', "") == format!("[{}]", shown.join(","))
        }
        Value::Object(_) | Value::Null => true,
    }
}

#[test]
fn fields_are_read_with_their_paths() {
    let yaml = "\
name: x
layers:
  - name: api
    # preset: grpc-a6        # alternative
    retry:
      backoff: { kind: exponential, base: 100ms }   # a comment
      # backoff: { kind: linear, cap: 2s }
      #        { kind: constant }   (prose)
  - { name: b, fan_out: 2 }
variants:
  - { name: v, set: { layers.api.retry.jitter: none } }
# sweep: { a.b: [1, 2] }
";
    let w = written(yaml);
    let paths: Vec<(&str, bool)> = w.iter().map(|f| (f.path.as_str(), f.active)).collect();
    for (p, active) in [
        ("name", true),
        ("layers[].name", true),
        ("layers[].preset", false),
        ("layers[].retry.backoff.base", true),
        ("layers[].retry.backoff.cap", false),
        ("layers[].fan_out", true),
        ("variants[].set", true),
        ("sweep", false),
    ] {
        assert!(paths.contains(&(p, active)), "{p} {active}: {paths:?}");
    }
    assert!(
        !paths
            .iter()
            .any(|(p, _)| p.contains("jitter") || p.starts_with("sweep."))
    );
    let base = w
        .iter()
        .find(|f| f.path == "layers[].retry.backoff.base")
        .unwrap();
    assert_eq!(base.value, "100ms");
    assert!(same_value(&serde_json::json!(2.0), "2"));
    assert!(same_value(
        &serde_json::json!(["timeout", 429]),
        "[timeout, 429]"
    ));
    assert!(!same_value(&serde_json::json!("full"), "none"));
}
