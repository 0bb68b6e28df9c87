//! `aws-config`: the AWS SDKs' shared config file (`~/.aws/config`, INI):
//! a profile's `retry_mode` and `max_attempts`, onto stormsim's AWS
//! presets.
//!
//! Sources (docs/sources/config-formats.md §7, docs/sources/presets.md §1):
//! the AWS SDKs and Tools Reference Guide, "Retry behavior"
//! (`sdkref/latest/guide/feature-retry-behavior.html`: `retry_mode`
//! legacy | standard | adaptive, its default specific to each SDK;
//! `max_attempts` a number greater than 0, the first attempt included,
//! default 3 in standard and adaptive mode, the SDK's own in legacy
//! mode), "Smart configuration defaults" (`defaults_mode` other than
//! `legacy` selects standard retries), and "Shared config and credentials
//! files" (`[default]`, `[profile NAME]`); boto/botocore
//! `botocore/configloader.py` (`raw_config_parse`: Python's
//! `configparser`, `#` and `;` comment lines, option names without regard
//! to case, a repeated section or option an error) and
//! `botocore/config.py` (`retry_mode` must be one of the three, exactly).
//!
//! What maps to what:
//!
//! | config | layer |
//! |---|---|
//! | `retry_mode = standard` (and when absent: see below) | preset `aws-standard-2.0` |
//! | `retry_mode = adaptive` | preset `aws-adaptive` |
//! | `retry_mode = legacy` | preset `aws-legacy-botocore` (botocore's legacy mode: legacy is each SDK's own) |
//! | `max_attempts` | `retry.max_attempts` |
//!
//! Without `retry_mode` the mode is the SDK's default (standard in the
//! AWS CLI v2 and the newer SDKs, legacy in botocore/boto3): stormsim
//! reads standard and says so in a warning.

use serde_json::{Map, Value};

use super::edit::Lit;
use super::tree::{Doc, Entry, Node};
use super::write::Writer;
use super::{Builder, Origin, Selector, changed_leaves, get_path, sim_attempts, uint};

/// The retry modes and the preset each one is.
const MODES: &[(&str, &str)] = &[
    ("standard", "aws-standard-2.0"),
    ("adaptive", "aws-adaptive"),
    ("legacy", "aws-legacy-botocore"),
];

/// Keys of a profile that bear on retries or timeouts without being
/// `retry_mode` or `max_attempts`: left out with a warning. Every other
/// key (region, credentials, endpoints, output) is left out silently.
const NEAR_RETRIES: &[(&str, &str)] = &[
    (
        "defaults_mode",
        "not simulated: its connect and TLS timeouts (its retry mode is read when retry_mode is absent)",
    ),
    (
        "cli_read_timeout",
        "not simulated: the AWS CLI's socket read timeout per attempt; write `timeout` beside `from`",
    ),
    (
        "cli_connect_timeout",
        "not simulated: the AWS CLI's connect timeout",
    ),
    (
        "metadata_service_num_attempts",
        "not simulated: retries of the credential fetch from the instance metadata service, not of the requests",
    ),
    (
        "metadata_service_timeout",
        "not simulated: the timeout of the credential fetch from the instance metadata service, not of the requests",
    ),
];

/// The profile a section header names: `default`, or NAME of
/// `profile NAME` (botocore also reads `[profile default]` as the default).
/// botocore `configloader.build_profile_map` takes a header that starts
/// with `profile` and splits it with `shlex.split` (`_parse_section`): two
/// words make a profile, the second its name, so `[profile "data
/// science"]` is the profile `data science`; a header shlex cannot split
/// (an open quote) names none.
fn profile_of(header: &str) -> Option<String> {
    if header == "default" {
        return Some("default".into());
    }
    if !header.starts_with("profile") {
        return None;
    }
    match shlex_split(header)?.as_slice() {
        [_, name] => Some(name.clone()),
        _ => None,
    }
}

/// Python's `shlex.split` (POSIX mode, no comments): words split at
/// whitespace; `'…'` keeps everything literally; in `"…"` a backslash
/// escapes only `"` and a backslash; a backslash outside quotes escapes
/// the next character. `None` where shlex raises ValueError (an open
/// quote, a trailing backslash).
pub(crate) fn shlex_split(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = cur.take() {
                    words.push(w);
                }
            }
            '\\' => cur.get_or_insert_with(String::new).push(chars.next()?),
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('\\' | '"') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(cur);
    Some(words)
}

/// The sections of the file that make the profile `name`.
fn sections<'d>(doc: &'d Doc, name: &str) -> Vec<&'d Entry> {
    doc.roots
        .first()
        .map(|r| r.entries())
        .unwrap_or_default()
        .iter()
        .filter(|e| profile_of(&e.key).as_deref() == Some(name))
        .collect()
}

/// A setting of the profile, by its lower-case name.
fn setting<'d>(section: &'d Node, key: &str) -> Option<&'d Entry> {
    section
        .entries()
        .iter()
        .rev()
        .find(|e| e.key.eq_ignore_ascii_case(key))
}

fn mode_of(text: &str) -> Option<&'static str> {
    MODES.iter().map(|(m, _)| *m).find(|m| *m == text)
}

/// Sets every field of the preset, with `origin` for each leaf.
fn set_all(b: &mut Builder, prefix: &str, map: &Map<String, Value>, origin: &Origin) {
    for (k, v) in map {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Object(inner) if !inner.is_empty() && k != "jitter" => {
                set_all(b, &path, inner, origin)
            }
            Value::Null => b.absent(&path),
            other => b.set(&path, other.clone(), origin.clone()),
        }
    }
}

/// The layer fragment a mode and a number of attempts give.
fn fragment(mode: &str, attempts: Option<u64>) -> Option<Map<String, Value>> {
    let preset = MODES.iter().find(|(m, _)| *m == mode)?.1;
    let mut f = crate::scenario::presets::find(preset)?.fragment()?;
    if let (Some(n), Some(Value::Object(r))) = (attempts, f.get_mut("retry")) {
        r.insert("max_attempts".into(), Value::from(n));
    }
    Some(f)
}

pub(crate) fn read(doc: &Doc, sel: &Selector, b: &mut Builder) {
    let Some(name) = sel
        .profile
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    else {
        b.error(
            "",
            None,
            "which profile? an AWS config file needs `profile: NAME` (`default`, or NAME of [profile NAME])",
        );
        return;
    };
    let found = sections(doc, name);
    let Some(section) = found.last() else {
        let root = doc.roots.first();
        let all: Vec<String> = root
            .map(|r| r.entries())
            .unwrap_or_default()
            .iter()
            .filter_map(|e| profile_of(&e.key))
            .collect();
        let bare = root.and_then(|r| r.entry(name));
        let hint = match bare {
            Some(e) => format!(
                "; [{name}] at line {} is the credentials file's form: in the config file a named profile is [profile {name}]",
                e.key_pos.0
            ),
            None => String::new(),
        };
        b.error(
            "",
            None,
            format!(
                "no profile `{name}`; the profiles are {}{hint}",
                if all.is_empty() {
                    "none".to_string()
                } else {
                    all.join(", ")
                }
            ),
        );
        return;
    };
    // The same header twice: configparser refuses the file
    // (DuplicateSectionError). Two headers that name the same profile
    // (`[default]` and `[profile default]`): botocore reads both, and in
    // `build_profile_map` (botocore/configloader.py) the later section in
    // the file replaces the earlier one, whole.
    if let Some(first) = found[..found.len() - 1]
        .iter()
        .find(|e| e.key == section.key)
    {
        b.error(
            section.key.clone(),
            Some(section.key_pos),
            format!(
                "the section [{}] is given twice (lines {} and {}); botocore refuses a repeated section",
                section.key, first.key_pos.0, section.key_pos.0
            ),
        );
        return;
    }
    for earlier in &found[..found.len() - 1] {
        b.warn(
            earlier.key.clone(),
            Some(earlier.key_pos),
            format!(
                "not read: [{}] at line {} names the same profile `{name}`, and botocore keeps the later section whole (configloader.py, build_profile_map)",
                section.key, section.key_pos.0
            ),
        );
    }
    let key = |e: &Entry| format!("[{}].{}", section.key, e.key);
    let settings = &section.value;
    let mut seen: std::collections::BTreeMap<String, &Entry> = std::collections::BTreeMap::new();
    for e in settings.entries() {
        if let Some(first) = seen.get(&e.key.to_ascii_lowercase()) {
            b.error(
                key(e),
                Some(e.key_pos),
                format!(
                    "`{}` is given twice in the profile (first at line {}); botocore refuses a repeated option",
                    e.key, first.key_pos.0
                ),
            );
        } else {
            seen.insert(e.key.to_ascii_lowercase(), e);
        }
        let lower = e.key.to_ascii_lowercase();
        if let Some((_, why)) = NEAR_RETRIES.iter().find(|(k, _)| *k == lower) {
            b.warn(key(e), Some(e.key_pos), *why);
        } else if lower != "retry_mode"
            && lower != "max_attempts"
            && let Some(m) =
                crate::scenario::suggest::did_you_mean(&lower, ["retry_mode", "max_attempts"])
        {
            // botocore reads only the exact option names (case aside) and
            // ignores every other key, so a near miss leaves the default.
            b.warn(
                key(e),
                Some(e.key_pos),
                format!("not read: `{}` is no option botocore knows, so its default applies; did you mean `{m}`?", e.key),
            );
        }
    }
    b.policy.selected = format!("[{}] (line {})", section.key, section.key_pos.0);
    let (mode, origin) = match setting(settings, "retry_mode") {
        Some(e) => match e.value.scalar().and_then(mode_of) {
            Some(m) => (
                m,
                Origin {
                    key: format!("{} ({} preset)", key(e), preset_of(m)),
                    pos: Some(e.value.pos),
                },
            ),
            None => {
                b.error(
                    key(e),
                    Some(e.value.pos),
                    format!(
                        "expected legacy, standard or adaptive, found {}",
                        e.value.describe()
                    ),
                );
                return;
            }
        },
        None => {
            let dm = setting(settings, "defaults_mode");
            match dm.and_then(|e| e.value.scalar()).map(str::trim) {
                Some(v) if v != "legacy" => (
                    "standard",
                    Origin {
                        key: format!(
                            "{} {v}: standard retries (aws-standard-2.0 preset)",
                            dm.map(key).unwrap_or_default()
                        ),
                        pos: dm.map(|e| e.value.pos),
                    },
                ),
                _ => {
                    b.warn(
                        format!("[{}].retry_mode", section.key),
                        Some(section.key_pos),
                        "no retry_mode: the SDK's own default applies (standard in the AWS CLI v2 and the newer SDKs, legacy in botocore/boto3); stormsim reads standard: write retry_mode to be sure",
                    );
                    (
                        "standard",
                        Origin {
                            key: "retry_mode (absent: standard, aws-standard-2.0 preset)".into(),
                            pos: None,
                        },
                    )
                }
            }
        }
    };
    let Some(f) = fragment(mode, None) else {
        b.error("", None, format!("the {mode} preset is missing"));
        return;
    };
    set_all(b, "", &f, &origin);
    if let Some(e) = setting(settings, "max_attempts")
        // botocore reads max_attempts as an int and sets no upper bound
        // (configprovider.py; the AWS SDKs reference guide, "Retry
        // behavior": "max_attempts", at least 1).
        && let Some(n) = uint(b, &e.value, &key(e), 1, u64::from(u32::MAX))
        && let Some(n) = sim_attempts(b, &e.value, &key(e), n, "botocore sets no upper bound on max_attempts")
    {
        b.set(
            "retry.max_attempts",
            Value::from(n),
            Origin {
                key: key(e),
                pos: Some(e.value.pos),
            },
        );
    }
}

fn preset_of(mode: &str) -> &'static str {
    MODES
        .iter()
        .find(|(m, _)| *m == mode)
        .map_or("", |(_, p)| p)
}

// ---------------------------------------------------------------- export

/// Writes `value` as the profile's `key`: in place, or added after its
/// last setting.
fn put<'d>(w: &mut Writer<'d>, section: &'d Entry, key: &str, value: String) -> Result<(), String> {
    match setting(&section.value, key) {
        Some(e) => w.put_node(&e.value, &Lit::Bare(value)),
        None => w.put(&section.value, &section.key, &[key], Lit::Bare(value)),
    }
}

pub(crate) fn write<'d>(
    w: &mut Writer<'d>,
    sel: &Selector,
    wanted: &Map<String, Value>,
    changed: &[String],
) {
    let doc = w.doc;
    let name = sel.profile.as_deref().map(str::trim).unwrap_or("");
    let Some(section) = sections(doc, name).last().copied() else {
        return;
    };
    let settings = &section.value;
    // The mode the file gives now (standard when it names none, as read).
    let current_mode = Some(
        setting(settings, "retry_mode")
            .and_then(|e| e.value.scalar())
            .and_then(mode_of)
            .unwrap_or("standard"),
    );
    let attempts = get_path(wanted, "retry.max_attempts").and_then(Value::as_u64);
    // The file's own mode first, so that it changes only when it must.
    let mut order: Vec<&str> = current_mode.into_iter().collect();
    order.extend(
        MODES
            .iter()
            .map(|(m, _)| *m)
            .filter(|m| Some(*m) != current_mode),
    );
    let fits = |mode: &str| -> bool {
        let Some(f) = fragment(mode, attempts) else {
            return false;
        };
        let owned: Vec<String> = f.keys().cloned().collect();
        match super::write::canonical(&f, "") {
            Ok(c) => changed_leaves(&c, wanted, &owned).is_empty(),
            Err(_) => false,
        }
    };
    let Some(mode) = order.into_iter().find(|m| fits(m)) else {
        for leaf in changed {
            w.refuse_leaf(
                leaf,
                "an AWS config profile holds only retry_mode and max_attempts, and the tuned values are none of the AWS presets (aws-standard-2.0, aws-adaptive, aws-legacy-botocore) with any max_attempts",
            )
            .ok();
        }
        return;
    };
    let mut result = Ok(());
    if current_mode != Some(mode) {
        result = put(w, section, "retry_mode", mode.to_string());
    }
    // What the file gives for max_attempts once the mode is written.
    let have = setting(settings, "max_attempts")
        .and_then(|e| e.value.scalar())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .or_else(|| {
            fragment(mode, None)
                .and_then(|f| get_path(&f, "retry.max_attempts").and_then(Value::as_u64))
        });
    if let Some(n) = attempts
        && have != Some(n)
        && result.is_ok()
    {
        result = put(w, section, "max_attempts", n.to_string());
    }
    if let Err(e) = result {
        w.refuse("", &e);
    }
}
