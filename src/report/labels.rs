//! Labels shortened to fit a width while staying distinct: a chart that
//! names 36 variants in a legend or under an axis gives 36 different
//! texts. Cutting each label at its end loses what tells variants apart
//! (`max_attempts=1 base=10ms` and `max_attempts=1 base=22ms` both become
//! `max_attempts=1 base…`), so labels are shortened by what they share:
//! field names move out into a heading (`1, 10ms` under
//! `max_attempts, base`), a beginning or end common to all is replaced by
//! "…", and only then is the middle elided; two labels that would still
//! read alike are numbered instead. Labels that already fit are kept.

use std::collections::HashMap;

/// Labels as shortened, and what their values are of when field names
/// were moved out of them (`max_attempts, base`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Short {
    pub labels: Vec<String>,
    pub heading: Option<String>,
}

/// Separators after which a shared beginning may be cut (and before which
/// a shared end may).
const SEPARATORS: [char; 7] = ['-', '_', '.', ' ', '=', ',', '/'];

/// `labels` shortened so that each `fits`, labels that differ staying
/// different (see the module's doc).
pub fn shorten(labels: &[String], fits: &dyn Fn(&str) -> bool) -> Short {
    let keep = |labels: Vec<String>, heading: Option<String>| Short { labels, heading };
    if labels.iter().all(|l| fits(l)) {
        return keep(labels.to_vec(), None);
    }
    let ok = |c: &[String]| c.iter().all(|l| fits(l)) && distinct_as(labels, c);
    let (work, heading) = match without_field_names(labels) {
        Some((values, keys)) => (values, Some(keys)),
        None => (labels.to_vec(), None),
    };
    if ok(&work) {
        return keep(work, heading);
    }
    let work = without_common_prefix(&work);
    if ok(&work) {
        return keep(work, heading);
    }
    let work = without_common_suffix(&work);
    if ok(&work) {
        return keep(work, heading);
    }
    let middle: Vec<String> = work.iter().map(|l| elide_middle(l, fits)).collect();
    if distinct_as(labels, &middle) {
        return keep(middle, heading);
    }
    let ends: Vec<String> = work.iter().map(|l| elide_start(l, fits)).collect();
    if distinct_as(labels, &ends) {
        return keep(ends, heading);
    }
    // Numbered: the number alone tells them apart.
    let numbered = work
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let n = format!("#{} ", i + 1);
            let rest = elide_end(l, &|t: &str| fits(&format!("{n}{t}")));
            if rest == "…" {
                n.trim_end().to_string()
            } else {
                format!("{n}{rest}")
            }
        })
        .collect();
    keep(numbered, heading)
}

/// Whether `short[i]` and `short[j]` differ wherever `original[i]` and
/// `original[j]` do.
fn distinct_as(original: &[String], short: &[String]) -> bool {
    let mut of: HashMap<&str, &str> = HashMap::new();
    original
        .iter()
        .zip(short)
        .all(|(o, s)| *of.entry(s.as_str()).or_insert(o.as_str()) == o.as_str())
}

/// A `field=value` word's field and value.
fn field(w: &str) -> Option<(&str, &str)> {
    w.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
}

/// Labels made of `field=value` words (a sweep's variant names:
/// `max_attempts=1 base=10ms`), every one naming the same fields in the
/// same order, as their values (`1, 10ms`) and the fields' names
/// (`max_attempts, base`). Words without `=` stay as they are; labels with
/// no such word at all too. None when no label has fields, or two name
/// different ones.
fn without_field_names(labels: &[String]) -> Option<(Vec<String>, String)> {
    let mut keys: Option<Vec<&str>> = None;
    for l in labels {
        let ks: Vec<&str> = l
            .split_whitespace()
            .filter_map(field)
            .map(|f| f.0)
            .collect();
        if ks.is_empty() {
            continue;
        }
        match &keys {
            Some(k) if *k != ks => return None,
            Some(_) => {}
            None => keys = Some(ks),
        }
    }
    let keys = keys?;
    let values = labels
        .iter()
        .map(|l| {
            let mut out = String::new();
            let mut last_field = false;
            for w in l.split_whitespace() {
                let (text, is_field) = field(w).map_or((w, false), |(_, v)| (v, true));
                if !out.is_empty() {
                    out.push_str(if is_field && last_field { ", " } else { " " });
                }
                out.push_str(text);
                last_field = is_field;
            }
            out
        })
        .collect();
    Some((values, keys.join(", ")))
}

/// Labels that all begin alike with their shared beginning (up to a
/// separator) replaced by "…", so that a cut label still tells itself
/// from its neighbours: `retry-policy-07`, `retry-policy-12` become
/// `…07`, `…12`. Unchanged when they share no such beginning.
pub fn without_common_prefix(labels: &[String]) -> Vec<String> {
    let Some(first) = labels.first() else {
        return Vec::new();
    };
    let mut common = first.len();
    for l in &labels[1..] {
        common = common.min(
            first
                .char_indices()
                .zip(l.chars())
                .find(|((_, a), b)| a != b)
                .map_or(first.len().min(l.len()), |((i, _), _)| i),
        );
    }
    // Back to just after a separator.
    let cut = first[..common].rfind(SEPARATORS).map_or(0, |i| i + 1);
    if labels.len() < 2 || cut < 4 {
        return labels.to_vec();
    }
    labels.iter().map(|l| format!("…{}", &l[cut..])).collect()
}

/// Labels that all end alike with their shared end (from a separator)
/// replaced by "…". Unchanged when they share no such end.
fn without_common_suffix(labels: &[String]) -> Vec<String> {
    let rev: Vec<String> = labels.iter().map(|l| l.chars().rev().collect()).collect();
    let cut = without_common_prefix(&rev);
    if cut == rev {
        return labels.to_vec();
    }
    // Keep the separator at the end of what stays, as the prefix cut does
    // at the beginning of what stays: reversed back, "…" comes last.
    cut.iter().map(|l| l.chars().rev().collect()).collect()
}

/// The longest `keep(n)` for n in 0..=len that fits (the width grows
/// with n), or `keep(0)`.
fn longest(len: usize, keep: &dyn Fn(usize) -> String, fits: &dyn Fn(&str) -> bool) -> String {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(&keep(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    keep(lo)
}

/// `label` with its middle replaced by "…", keeping as much of both ends
/// as fits.
pub fn elide_middle(label: &str, fits: &dyn Fn(&str) -> bool) -> String {
    if fits(label) {
        return label.to_string();
    }
    let c: Vec<char> = label.chars().collect();
    let keep = |n: usize| -> String {
        let head = n.div_ceil(2);
        let tail = n - head;
        c[..head]
            .iter()
            .chain(['…'].iter())
            .chain(c[c.len() - tail..].iter())
            .collect()
    };
    longest(c.len().saturating_sub(1), &keep, fits)
}

/// `label` with its beginning replaced by "…", keeping as much of its end
/// as fits.
fn elide_start(label: &str, fits: &dyn Fn(&str) -> bool) -> String {
    if fits(label) {
        return label.to_string();
    }
    let c: Vec<char> = label.chars().collect();
    let keep = |n: usize| -> String { ['…'].iter().chain(c[c.len() - n..].iter()).collect() };
    longest(c.len().saturating_sub(1), &keep, fits)
}

/// `label` with its end replaced by "…", keeping as much of its beginning
/// as fits.
fn elide_end(label: &str, fits: &dyn Fn(&str) -> bool) -> String {
    if fits(label) {
        return label.to_string();
    }
    let c: Vec<char> = label.chars().collect();
    let keep = |n: usize| -> String { c[..n].iter().chain(['…'].iter()).collect() };
    longest(c.len().saturating_sub(1), &keep, fits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn within(n: usize) -> impl Fn(&str) -> bool {
        move |s: &str| s.chars().count() <= n
    }

    #[test]
    fn shared_beginnings_are_cut() {
        assert_eq!(
            without_common_prefix(&l(&["retry-policy-07", "retry-policy-12"])),
            l(&["…07", "…12"])
        );
        assert_eq!(
            without_common_prefix(&l(&[
                "max_attempts=1 jitter=none",
                "max_attempts=2 jitter=none"
            ])),
            l(&["…1 jitter=none", "…2 jitter=none"])
        );
        assert_eq!(
            without_common_prefix(&l(&["full", "fuller"])),
            l(&["full", "fuller"])
        );
        assert_eq!(without_common_prefix(&l(&["a-b-c"])), l(&["a-b-c"]));
        assert_eq!(
            without_common_suffix(&l(&["a-1-shared-end", "b-2-shared-end"])),
            l(&["a-1…", "b-2…"])
        );
    }

    #[test]
    fn labels_that_fit_are_kept() {
        let s = shorten(&l(&["a", "b"]), &within(3));
        assert_eq!(s.labels, l(&["a", "b"]));
        assert_eq!(s.heading, None);
    }

    #[test]
    fn field_names_move_to_the_heading() {
        // A 6 × 6 sweep's names, with a reference line's label among
        // them: cut at their end, 6 of 36 texts differed.
        let mut names = vec!["capacity (800/s)".to_string()];
        for a in 1..=6 {
            for b in ["10ms", "22ms", "46ms", "100ms", "220ms", "1s"] {
                names.push(format!("max_attempts={a} base={b}"));
            }
        }
        let s = shorten(&names, &within(20));
        assert_eq!(s.heading.as_deref(), Some("max_attempts, base"));
        assert_eq!(s.labels[0], "capacity (800/s)");
        assert_eq!(s.labels[1], "1, 10ms");
        assert_eq!(s.labels[36], "6, 1s");
        let mut distinct = s.labels.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), names.len());
        // Different fields in different labels: not moved out.
        assert_eq!(
            without_field_names(&l(&["a=1 b=2", "a=1 c=2"])),
            None,
            "different fields"
        );
        assert_eq!(
            without_field_names(&l(&["capacity a=1 b=2 (9/s)", "a=3 b=4 offered"])),
            Some((l(&["capacity 1, 2 (9/s)", "3, 4 offered"]), "a, b".into()))
        );
    }

    #[test]
    fn labels_stay_distinct_whatever_the_width() {
        // Differing only in their middle, then only in their ends.
        let mid: Vec<String> = (0..40)
            .map(|i| format!("a-long-shared-start-{i:02}-and-a-long-shared-end"))
            .collect();
        let ends: Vec<String> = (0..40)
            .map(|i| format!("{i:02}-some-words-in-the-middle-{}", i % 7))
            .collect();
        for labels in [&mid, &ends] {
            for width in [1, 3, 5, 8, 12, 30] {
                let s = shorten(labels, &within(width));
                assert!(distinct_as(labels, &s.labels), "{width}: {:?}", s.labels);
                // Only the bare number may be wider than asked.
                for t in &s.labels {
                    assert!(
                        within(width)(t) || t.starts_with('#'),
                        "{width}: {t:?} too wide"
                    );
                }
            }
        }
        // The middle elided where both ends tell labels apart.
        assert_eq!(
            elide_middle("abcdefghij", &within(5)),
            "ab…ij",
            "head and tail"
        );
        // Labels alike stay alike (a p99 line's empty label).
        let s = shorten(&l(&["same long label", "same long label"]), &within(6));
        assert_eq!(s.labels[0], s.labels[1]);
    }
}
