//! A number written as text. A field that takes a number and never text
//! (a count, a ratio, a multiplier) refuses a value the YAML reader reads
//! as text although it spells a number: quoted (`max_attempts: "3"`),
//! tagged as text (`!!str 3`), or spelt as only YAML 1.1 spelt numbers
//! (`1_000`, which YAML 1.2 reads as text). The reader would take the
//! text for the number it spells without a word, where another YAML
//! reader keeps it as text. It is refused where it is written, in a
//! file, a `--set`, a variant's `set` and a sweep alike, with the range
//! the field takes. Durations and rates are text by design (`100ms`,
//! `50/s`), and a status code in `retry_on` may be a word (`5xx`), so a
//! quoted one is read there too.

use serde_json::Value;

/// Values walked at most in one value (a sweep's list of 10 000 values
/// fits).
const MAX_WALKED: usize = 200_000;

/// What the text `text`, written where the field at `segs` takes a
/// number, is told: what the field takes, the text, and how to write
/// the number (`tagged`: the value has a YAML tag, which the caller names
/// instead). `None` when the field takes text, or when `text` spells no
/// number (the reader's own error says what it found) or one that is not
/// finite (refused as such).
pub(crate) fn refusal<S: AsRef<str>>(segs: &[S], text: &str, tagged: bool) -> Option<String> {
    let segs: Vec<&str> = segs.iter().map(AsRef::as_ref).collect();
    if !super::schema::takes_numbers_not_text(&segs) {
        return None;
    }
    let hint = hint(text)?;
    let expects = super::schema::expects_at_key(&segs)?;
    let shown = crate::escape::quoted(&super::error::clip(text));
    let message = if tagged {
        format!("expected {expects}, found the text {shown}")
    } else {
        format!("expected {expects}, found the text {shown} ({hint})")
    };
    Some(super::ranges::with_real_range(&segs.join("."), message))
}

/// `message` with the way out it gives a number written as text (remove
/// the quotes) replaced by the YAML tag `tag` the value was written
/// with: removing the tag is the way out.
pub(crate) fn with_tag(message: String, tag: &str) -> String {
    message.replacen(
        &format!("({QUOTES})"),
        &format!("({})", super::load::core_tag_note(tag)),
        1,
    )
}

const QUOTES: &str = "remove the quotes";

/// How to write the number `text` spells, if it spells one.
fn hint(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() || t.len() > 64 {
        return None;
    }
    if is_number(t) {
        return Some(QUOTES.into());
    }
    let plain = t.replace('_', "");
    if plain.len() < t.len() && is_number(&plain) {
        return Some(format!(
            "YAML 1.2 reads a number written with `_` as text: write {plain}"
        ));
    }
    None
}

/// Whether the plain YAML scalar `t` is a finite number.
fn is_number(t: &str) -> bool {
    matches!(
        serde_saphyr::from_str_with_options::<Value>(t, super::load::parse_options()),
        Ok(Value::Number(_))
    )
}

/// Every text in `value` (the value of the field at `segs`) that spells
/// a number where the field takes only numbers: the path of each, as
/// segments (`segs` and those below it, list items by index), and the
/// text. Keys of free maps (`sweep`, a variant's overrides) name no
/// field here: their values are judged where they are applied.
pub(crate) fn in_value(segs: &[String], value: &Value) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut walked = 0;
    let mut stack: Vec<(Vec<String>, &Value)> = vec![(segs.to_vec(), value)];
    while let Some((segs, v)) = stack.pop() {
        walked += 1;
        if walked > MAX_WALKED {
            break;
        }
        match v {
            Value::String(text) if refusal(&segs, text, false).is_some() => {
                out.push((segs, text.clone()));
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    let mut s = segs.clone();
                    s.push(i.to_string());
                    stack.push((s, item));
                }
            }
            Value::Object(map) => {
                let mut children: Vec<(Vec<String>, &Value)> = map
                    .iter()
                    .map(|(k, item)| {
                        let mut s = segs.clone();
                        s.push(k.clone());
                        (s, item)
                    })
                    .collect();
                children.reverse();
                stack.extend(children);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_number_field_refuses_a_number_written_as_text() {
        let at = |p: &str| p.split('.').map(str::to_string).collect::<Vec<_>>();
        let m = refusal(&at("layers.api.retry.max_attempts"), "3", false).unwrap();
        assert_eq!(
            m,
            "expected a whole number from 1 to 1000, found the text \"3\" (remove the quotes)"
        );
        let m = refusal(&at("dependency.concurrency"), "1_000", false).unwrap();
        assert!(m.ends_with("found the text \"1_000\" (YAML 1.2 reads a number written with `_` as text: write 1000)"), "{m}");
        let m = refusal(&at("layers.api.retry.backoff.multiplier"), " 2.5", false).unwrap();
        assert!(
            m.starts_with("expected a number, found the text \" 2.5\""),
            "{m}"
        );
        // Text that spells no number is the reader's to refuse; a
        // duration, a rate and a status code may be text.
        assert_eq!(refusal(&at("dependency.concurrency"), "abc", false), None);
        assert_eq!(refusal(&at("dependency.concurrency"), ".nan", false), None);
        assert_eq!(refusal(&at("layers.api.timeout"), "3", false), None);
        assert_eq!(refusal(&at("clients.arrival.rate"), "3", false), None);
        assert_eq!(
            refusal(&at("layers.api.retry.retry_on.0"), "503", false),
            None
        );
        assert_eq!(refusal(&at("name"), "3", false), None);
        // A count under a free key.
        let m = refusal(&at("dependency.shed_by_priority.low"), "5", false).unwrap();
        assert!(
            m.ends_with("found the text \"5\" (remove the quotes)"),
            "{m}"
        );
        // Free maps name no field.
        assert_eq!(
            refusal(&at("sweep.dependency.concurrency.0"), "3", false),
            None
        );
    }

    #[test]
    fn every_text_number_of_a_value_is_found() {
        let v: Value = serde_json::json!({
            "layers": [{ "name": "a", "instances": "2", "retry": { "max_attempts": 3 } }],
            "dependency": { "concurrency": "1_0", "queue": { "capacity": "x" } },
            "sweep": { "dependency.concurrency": ["5"] },
        });
        let found = in_value(&[], &v);
        let paths: Vec<String> = found.iter().map(|(s, _)| s.join(".")).collect();
        assert_eq!(paths, ["layers.0.instances", "dependency.concurrency"]);
    }
}
