//! Spring property placeholders in a Resilience4j `application.yml`:
//! `${NAME:default}` (Spring Framework `PropertyPlaceholderHelper`, with
//! the `${` prefix, `}` suffix and `:` value separator that Spring Boot's
//! `PropertySourcesPlaceholderConfigurer` uses). Spring replaces one with
//! the property or environment variable `NAME` when it is set, else with
//! the default; with no default and `NAME` unset the application fails to
//! start ("Could not resolve placeholder").
//!
//! stormsim does not read the environment: a placeholder is read as its
//! default, with a warning that the deployment may set `NAME`; one
//! without a default is an error wherever its value is used.

use super::tree::{Doc, Kind, Node, Pos};

/// What resolving found, by the position of each value with placeholders.
#[derive(Default)]
pub(crate) struct Found {
    /// Values read as their placeholders' defaults: (position, names,
    /// text as written, text read).
    pub defaulted: Vec<(Pos, Vec<String>, String, String)>,
    /// Values with a placeholder that has no default: (position, text).
    pub unresolved: Vec<(Pos, String)>,
}

/// `text` with each `${NAME:default}` replaced by its default, and the
/// names; `Err`: a placeholder without a default (or unterminated).
pub(crate) fn resolve(text: &str) -> Result<(String, Vec<String>), ()> {
    let mut out = String::new();
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let inner_from = &rest[start + 2..];
        // Nested placeholders (`${A:${B:1}}`) are matched by depth.
        let mut depth = 1usize;
        let mut end = None;
        let bytes = inner_from.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'$' && bytes.get(i + 1) == Some(&b'{') {
                depth += 1;
                i += 2;
                continue;
            }
            if bytes[i] == b'}' {
                depth -= 1;
                if depth == 0 {
                    end = Some(i);
                    break;
                }
            }
            i += 1;
        }
        let end = end.ok_or(())?;
        let inner = &inner_from[..end];
        let (name, default) = inner.split_once(':').ok_or(())?;
        names.push(name.to_string());
        let (default, more) = resolve(default)?;
        names.extend(more);
        out.push_str(&default);
        rest = &inner_from[end + 1..];
    }
    out.push_str(rest);
    Ok((out, names))
}

/// A copy of `doc` whose scalars with placeholders hold their defaults
/// (positions and spans unchanged), and what was found.
pub(crate) fn resolved(doc: &Doc) -> (Doc, Found) {
    let mut copy = doc.clone();
    let mut found = Found::default();
    for root in &mut copy.roots {
        walk(root, &mut found);
    }
    (copy, found)
}

fn walk(node: &mut Node, found: &mut Found) {
    let pos = node.pos;
    match &mut node.kind {
        Kind::Map { entries, .. } => {
            for e in entries {
                walk(&mut e.value, found);
            }
        }
        Kind::Seq { items, .. } => {
            for i in items {
                walk(i, found);
            }
        }
        Kind::Scalar { text, .. } => {
            if !text.contains("${") {
                return;
            }
            match resolve(text) {
                Ok((value, names)) => {
                    found
                        .defaulted
                        .push((pos, names, text.clone(), value.clone()));
                    *text = value;
                }
                Err(()) => found.unresolved.push((pos, text.clone())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn defaults_replace_placeholders() {
        assert_eq!(
            resolve("${RETRY_ATTEMPTS:2}"),
            Ok(("2".into(), vec!["RETRY_ATTEMPTS".into()]))
        );
        assert_eq!(resolve("${A:${B:750}}ms").map(|r| r.0), Ok("750ms".into()));
        assert_eq!(resolve("${A:}").map(|r| r.0), Ok(String::new()));
        assert_eq!(resolve("${RETRY_ATTEMPTS}"), Err(()));
        assert_eq!(resolve("${A:1"), Err(()));
        assert_eq!(resolve("plain").map(|r| r.0), Ok("plain".into()));
    }
}
