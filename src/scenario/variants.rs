//! Variants: the scenarios compared side by side, each the base scenario
//! with its `set` overrides applied (all of them, in file order, then
//! validated once), and the sweep grid on top of them: every combination
//! of the swept values (cartesian product, first path varying slowest,
//! values in file order) applied to each variant, named after its values
//! (`max_attempts=3 jitter=full`). Problems the base scenario has are
//! reported once, about the base, not again for every variant.

use serde_json::Value;

use super::collect::related;
use super::error::{Omitted, SET_LABEL, ScenarioError, ScenarioErrors, UNKNOWN_LABEL};
use super::load::locate_issue;
use super::locate::{LocationIndex, item_segments};
use super::memory::memory_issue;
use super::overrides::{apply_overrides, apply_the_rest};
use super::types::Scenario;
use super::validate::{Issue, timeseries_rows_issue, validate};

/// Overrides as (dotted path, value), in the order they apply.
type Overrides = Vec<(String, Value)>;

/// The variant of a scenario without `variants`.
pub const BASE_VARIANT: &str = "base";
/// Errors reported at most for the points of a sweep (a grid of 100 000
/// points can fail the same way at every one).
const MAX_SWEEP_ERRORS: usize = 20;

/// One scenario per variant, in file order, each with `variants` cleared;
/// a scenario without variants gives one named `base`. Sweeps included.
pub fn expand_variants(s: &Scenario) -> Result<Vec<(String, Scenario)>, ScenarioErrors> {
    Ok(expand_all(s)?
        .into_iter()
        .map(|e| (e.name, e.scenario))
        .collect())
}

/// A variant ready to run, with the swept values that made it.
#[derive(Clone, Debug)]
pub struct Expanded {
    pub name: String,
    pub scenario: Scenario,
    /// (dotted path, value as written) of each swept field, in sweep order.
    pub params: Vec<(String, String)>,
}

/// Every variant × every sweep grid point, in order.
pub fn expand_all(s: &Scenario) -> Result<Vec<Expanded>, ScenarioErrors> {
    let (out, errors, omitted) = expand(s, &validate(s), &[], UNKNOWN_LABEL, None);
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ScenarioErrors(errors, omitted))
    }
}

/// The problems of `s`'s variants and sweep points that the base scenario
/// (whose own problems are `base_issues`) does not have, and, when there
/// are none, those of the whole run's size (rows, memory); with the runs
/// that could be built.
pub(crate) fn expansion_errors(
    s: &Scenario,
    base_issues: &[Issue],
    set_paths: &[String],
    file_label: &str,
    index: Option<&LocationIndex>,
) -> (Vec<ScenarioError>, Omitted, Vec<Expanded>) {
    let (out, errors, omitted) = expand(s, base_issues, set_paths, file_label, index);
    (errors, omitted, out)
}

/// The base scenario of the variants: `s` without `variants` and `sweep`,
/// with its analysis service decided ([`pinned_focus`]).
fn base_of(s: &Scenario) -> Scenario {
    let mut base = s.clone();
    base.variants.clear();
    base.sweep.clear();
    if let Some(name) = pinned_focus(s) {
        base.analysis.service = Some(name);
    }
    base
}

/// The analysis service of a graph scenario that names none: its default
/// (the service named `dependency`, else the first that calls nothing),
/// decided once, on the scenario itself, for every variant and sweep
/// point. Decided per point, a sweep or a variant that adds a call to
/// that service (or a service before it) would move the dependency
/// columns, the load chart and the SLO's yardstick to another service
/// from one point to the next, and `scenario.resolved.yaml`, which holds
/// the scenario's default, would no longer reproduce the run (`plot`,
/// `merge`). A variant may still name its own (`analysis.service` in its
/// `set`, without an SLO).
pub(crate) fn pinned_focus(s: &Scenario) -> Option<String> {
    if !s.is_graph() || s.analysis.service.is_some() {
        return None;
    }
    s.focus_service().map(|i| s.services[i].name.clone())
}

/// `validate(sc)` of a variant or sweep point of `s`, which says so when
/// the analysis service decided for `s` ([`pinned_focus`]) is not one of
/// the point's services.
fn validate_in(sc: &Scenario, s: &Scenario) -> Vec<Issue> {
    let mut issues = validate(sc);
    let Some(pinned) = pinned_focus(s) else {
        return issues;
    };
    if sc.analysis.service.as_deref() != Some(pinned.as_str()) {
        return issues;
    }
    for i in &mut issues {
        if i.path == "analysis.service" {
            i.message = format!(
                "the variant has no service `{pinned}`, the scenario's analysis service (the service the dependency columns, the load chart and the SLO describe: by default the one named `dependency`, else the first that calls nothing, decided once for the whole scenario, so that every variant and sweep point describes the same service); name one every variant has with `analysis.service` in the scenario"
            );
        }
    }
    issues
}

/// The overrides of a variant's `set`, in file order.
fn variant_sets(v: &super::types::Variant) -> Vec<(String, Value)> {
    v.set.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Why a `set` or sweep path cannot be applied to a variant, if it cannot.
/// With an SLO (and so a ranking of the variants), the analysis that
/// judges the runs (`analysis.*`: the recovery threshold and window, the
/// service) cannot change either: each variant would be judged by another
/// yardstick. `analysis.trigger_end` may: it follows the variant's own
/// incident or load (a shorter spike ends sooner).
fn inner_path_problem(path: &str, has_slo: bool) -> Option<Issue> {
    if super::slo::is_slo_path(path) {
        return Some(Issue {
            path: path.to_string(),
            message: "the SLO cannot be set from inside a variant or a sweep: every variant is judged against the same one; set it in the scenario itself or with --set".into(),
        });
    }
    if has_slo
        && (path == "analysis" || path.starts_with("analysis."))
        && path != "analysis.trigger_end"
    {
        return Some(Issue {
            path: path.to_string(),
            message: "the analysis cannot be set from inside a variant or a sweep when the scenario has an SLO: every variant is judged and ranked by the same recovery criteria (only `analysis.trigger_end` may follow a variant's incident); set it in the scenario itself or with --set".into(),
        });
    }
    let first = path.split('.').next().unwrap_or(path);
    if let Some(reason) = scenario_wide(first, has_slo) {
        return Some(Issue {
            path: path.to_string(),
            message: format!(
                "`{first}` cannot be set from inside a variant or a sweep: {reason}; set it in the scenario itself or with --set"
            ),
        });
    }
    matches!(first, "variants" | "sweep" | "tune").then(|| Issue {
        path: path.to_string(),
        message: format!(
            "`{first}` cannot be set from inside a variant or a sweep; set it in the scenario itself"
        ),
    })
}

/// An issue when the first segment of `path` is no field of a scenario
/// (in the words a file's unknown field gets): such a sweep key is
/// refused at once, each one, without building the points it would make
/// (a sweep of many unknown keys is then counted exactly, in time linear
/// in the keys).
fn unknown_field(path: &str) -> Option<Issue> {
    let first = path.split('.').next().unwrap_or(path);
    let mut probe = serde_json::Map::new();
    probe.insert(first.to_string(), Value::Null);
    let e = serde_json::from_value::<Scenario>(Value::Object(probe)).err()?;
    let message = e.to_string();
    let (unknown, expected) = message.split_once(", expected ")?;
    unknown.starts_with("unknown field `").then(|| {
        // Names listed bare, as a file's unknown field lists them.
        let message = format!("{unknown}, expected {}", expected.replace('`', ""));
        Issue {
            path: path.to_string(),
            message: super::suggest::improve_message(&message, None),
        }
    })
}

/// Why a top-level field belongs to the whole scenario rather than to one
/// variant or sweep point, if it does: the seeds, the number of replicates
/// and the output's name are the run's own, and with an SLO the windows
/// every verdict compares (`duration`, `bucket`) are too.
fn scenario_wide(field: &str, has_slo: bool) -> Option<&'static str> {
    match field {
        "seed" => Some(
            "each variant's and replicate's seed is derived from the scenario's seed, so that variants differ only by what they set",
        ),
        "replicates" => Some(
            "every variant runs the scenario's number of replicates, so that their spreads compare",
        ),
        "name" => Some("it names the output folder of the whole run"),
        "duration" | "bucket" if has_slo => Some(
            "the scenario has an SLO, and its verdicts compare every variant over the same windows",
        ),
        _ => None,
    }
}

/// Keys of one `set` or one `sweep` that name the same field, or a field
/// and a part of it (`layers.api.timeout` and `layers.0.timeout`;
/// `layers.api.retry` and `layers.api.retry.max_attempts`): one would
/// silently win over the other, and a label would name a value that did
/// not apply. An issue about each later key.
pub(super) fn overlapping_keys(base: &Scenario, keys: &[String]) -> Vec<Issue> {
    overlapping(base, keys)
        .into_iter()
        .map(|(_, i)| i)
        .collect()
}

/// [`overlapping_keys`], each issue with the index of the key it is
/// about (two keys may be written alike: `--set duration=5s --set
/// duration=6s`). The first key of each field is never one of them, so
/// the keys not listed apply without overlap: their problems can still
/// be reported.
pub(super) fn overlapping(base: &Scenario, keys: &[String]) -> Vec<(usize, Issue)> {
    let norm: Vec<String> = keys.iter().map(|k| normalize_path(base, k)).collect();
    let mut issues = Vec::new();
    for (j, key) in keys.iter().enumerate() {
        if let Some(i) = (0..j).find(|&i| related(&norm[i], &norm[j])) {
            issues.push((
                j,
                Issue {
                    path: key.clone(),
                    message: format!(
                        "sets the same field as `{}`, so one of the two values would never apply; keep one of them",
                        keys[i]
                    ),
                },
            ));
        }
    }
    issues
}

/// The keys of one `set` or sweep that are refused and left out, with
/// their index and why: those `own` refuses (a field a variant or a sweep
/// cannot set), then the later of two keys of one field
/// ([`overlapping`]). The keys left apply together, so that their
/// problems are reported beside these.
fn refused_keys(
    base: &Scenario,
    keys: &[String],
    own: impl Fn(&str) -> Option<Issue>,
) -> Vec<(usize, Issue)> {
    let mut refused: Vec<(usize, Issue)> = keys
        .iter()
        .enumerate()
        .filter_map(|(j, k)| Some((j, own(k)?)))
        .collect();
    let later: Vec<(usize, Issue)> = overlapping(base, keys)
        .into_iter()
        .filter(|(j, _)| !refused.iter().any(|(r, _)| r == j))
        .collect();
    refused.extend(later);
    refused
}

/// Sweep keys that name a field a variant's `set` also sets (or a part of
/// it, or the whole it is part of): the sweep applies on top of the
/// variant, so the variant's value would silently never apply while its
/// name says it does. An issue about each such sweep key, naming the
/// variants' keys (the first few).
fn swept_and_set(
    base: &Scenario,
    keys: &[String],
    variants: &[super::types::Variant],
) -> Vec<Issue> {
    let mut issues = Vec::new();
    for key in keys {
        let k = normalize_path(base, key);
        let clashes: Vec<String> = variants
            .iter()
            .enumerate()
            .flat_map(|(i, v)| {
                v.set
                    .keys()
                    .filter(|set| related(&normalize_path(base, set), &k))
                    .map(move |set| format!("`variants.{i}.set.{set}` (variant `{}`)", v.name))
            })
            .collect();
        if clashes.is_empty() {
            continue;
        }
        let shown = clashes
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        let more = match clashes.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        issues.push(Issue {
            path: key.clone(),
            message: format!(
                "sweeps the same field as {shown}{more}: the sweep applies on top of the variant, so the variant's value would never apply; keep one of them (sweep it, or set it in each variant)"
            ),
        });
    }
    issues
}

/// The key of `keys` that an issue at `path` is about, or the first key.
/// Keys name items as `base` has them (the scenario they apply to); the
/// issue's path labels them as `after` does (`base` with the keys
/// applied, when it could be built), which may have renamed one: a key
/// is found by the item it names in `base`, labelled as in `after`.
fn key_for<'a>(
    base: &Scenario,
    after: Option<&Scenario>,
    keys: &'a [String],
    path: &str,
) -> Option<&'a String> {
    let field = |k: &String| match after {
        Some(a) => normalize_path(a, &indexed_path(base, k)),
        None => normalize_path(base, k),
    };
    keys.iter()
        .find(|k| *k == path)
        .or_else(|| keys.iter().find(|k| related(&field(k), path)))
        .or_else(|| {
            keys.iter()
                .find(|k| related(&normalize_path(base, k), path))
        })
        .or_else(|| keys.first())
}

/// Where errors about overrides go: the file (at the override's line and
/// column) or `<--set>` when a `--set` wrote the override itself.
struct Locator<'a> {
    s: &'a Scenario,
    set_paths: &'a [String],
    file_label: &'a str,
    index: Option<&'a LocationIndex>,
}

impl Locator<'_> {
    /// An error about `path` (`variants.0.set.KEY`, `sweep.KEY`), placed at
    /// `at` in the file (a sweep entry), else at `path`.
    fn error(&self, path: &str, at: Option<&str>, message: String) -> ScenarioError {
        self.error_about(path, at, at, message)
    }

    /// As [`Locator::error`], for a message about the value at `about`
    /// (a value inside the one at `path` or `at`), which it quotes as
    /// written.
    fn error_about(
        &self,
        path: &str,
        at: Option<&str>,
        about: Option<&str>,
        message: String,
    ) -> ScenarioError {
        if self.set_paths.iter().any(|p| related(p, path)) {
            return ScenarioError::new(SET_LABEL, message).with_path(path);
        }
        let at_or_about = about.or(at);
        let written = self.index.and_then(|i| {
            at_or_about
                .and_then(|a| i.scalar(a).or_else(|| i.scalar(&in_file(i, self.s, a))))
                .or_else(|| i.scalar(&in_file(i, self.s, path)))
        });
        let message = match written {
            Some(text) => super::load::as_written(message, text),
            None => message,
        };
        // A number written as text with a tag (`!!str 3`): the tag is
        // what to remove.
        let tag = self.index.and_then(|i| {
            at_or_about
                .and_then(|a| i.core_tag(a).or_else(|| i.core_tag(&in_file(i, self.s, a))))
                .or_else(|| i.core_tag(&in_file(i, self.s, path)))
        });
        let message = match tag {
            Some(tag) => super::text_numbers::with_tag(message, tag),
            None => message,
        };
        let e = ScenarioError::new(self.file_label, message).with_path(path);
        let pos = self.index.and_then(|i| {
            at.filter(|a| i.contains(a))
                .and_then(|a| i.position(a))
                .or_else(|| position(i, self.s, path))
        });
        match pos {
            Some((line, col)) => e.at(line, col),
            None => e,
        }
    }
}

/// The path of entry `j` of the swept `key` (`sweep.KEY.j`).
fn entry_path(key: &str, j: usize) -> String {
    format!("sweep.{key}.{j}")
}

fn expand(
    s: &Scenario,
    base_issues: &[Issue],
    set_paths: &[String],
    file_label: &str,
    index: Option<&LocationIndex>,
) -> (Vec<Expanded>, Vec<ScenarioError>, Omitted) {
    let base = base_of(s);
    let new_issues = |issues: Vec<Issue>| -> Vec<Issue> {
        issues
            .into_iter()
            .filter(|i| !base_issues.contains(i))
            .collect()
    };
    let loc = Locator {
        s,
        set_paths,
        file_label,
        index,
    };
    let mut errors = Vec::new();
    // Each variant with its overrides: a sweep point is applied with them,
    // in one go, to the base scenario (so that a default one of them
    // derives follows the point's values too).
    let mut variants: Vec<(String, Scenario, Overrides)> = Vec::new();
    if s.variants.is_empty() {
        variants.push((BASE_VARIANT.to_string(), base.clone(), Vec::new()));
    }
    for (i, v) in s.variants.iter().enumerate() {
        let sets = variant_sets(v);
        let keys: Vec<String> = sets.iter().map(|(k, _)| k.clone()).collect();
        // Entries that cannot be set from a variant, and the later of two
        // entries of one field, are refused and left out; the others are
        // applied, so that their problems are reported too.
        let refused = refused_keys(&base, &keys, |k| inner_path_problem(k, s.slo.is_some()));
        let usable: Overrides = sets
            .iter()
            .enumerate()
            .filter(|(j, _)| !refused.iter().any(|(r, _)| r == j))
            .map(|(_, set)| set.clone())
            .collect();
        let mut issues: Vec<Issue> = refused.into_iter().map(|(_, i)| i).collect();
        // The scenario the issues' paths label items by.
        let mut labelled_by: Option<Scenario> = None;
        let scenario = match apply_overrides(&base, &usable) {
            Ok(sc) => {
                issues.extend(new_issues(validate_in(&sc, s)));
                Some(sc)
            }
            Err(e) => {
                // The other entries' problems too.
                let mut more = Vec::new();
                labelled_by = apply_the_rest(&base, &usable, &e, &mut more);
                let rest = labelled_by
                    .as_ref()
                    .map(|sc| new_issues(validate_in(sc, s)))
                    .unwrap_or_default();
                issues.extend(e);
                issues.extend(more);
                issues.extend(rest);
                None
            }
        };
        if issues.is_empty()
            && let Some(sc) = scenario
        {
            variants.push((v.name.clone(), sc, sets));
            continue;
        }
        let after = scenario.as_ref().or(labelled_by.as_ref());
        for issue in issues {
            let key = key_for(&base, after, &keys, &issue.path)
                .cloned()
                .unwrap_or_default();
            let message = if issue.path == key || issue.path.is_empty() {
                format!("in variant `{}`: {}", v.name, issue.message)
            } else {
                format!("in variant `{}`: {}: {}", v.name, issue.path, issue.message)
            };
            let path = if key.is_empty() {
                format!("variants.{i}.set")
            } else {
                format!("variants.{i}.set.{key}")
            };
            // The value the issue is about, when it is inside the entry's
            // (`base` of `layers.api.retry.backoff: { base: -.Inf }`):
            // quoted as written there.
            let inner = issue
                .path
                .strip_prefix(key.as_str())
                .filter(|rest| !key.is_empty() && rest.starts_with('.'))
                .map(|rest| format!("{path}{rest}"));
            errors.push(loc.error_about(&path, None, inner.as_deref(), message));
        }
    }
    let named = !s.variants.is_empty();
    // A grid too large to build is refused by validation (`sweep`): never
    // built here.
    if !super::validate_hops::grid_fits(s) {
        errors.dedup();
        return (Vec::new(), errors, Omitted::default());
    }
    let keys: Vec<String> = s.sweep.keys().cloned().collect();
    // Keys that name no field, or one a sweep cannot set, and the later
    // of two keys of one field are refused and left out of the grid; a
    // key that a variant also sets stays in, so that its values' own
    // problems are reported too. Any of them refuses the run.
    let unusable = refused_keys(&base, &keys, |k| {
        unknown_field(k).or_else(|| inner_path_problem(k, s.slo.is_some()))
    });
    let mut inner: Vec<Issue> = unusable.iter().map(|(_, i)| i.clone()).collect();
    inner.extend(swept_and_set(&base, &keys, &s.variants));
    for issue in &inner {
        errors.push(loc.error(
            &format!("sweep.{}", issue.path),
            None,
            issue.message.clone(),
        ));
    }
    let mut omitted = Omitted::default();
    let mut out = Vec::new();
    // The sweep of the usable keys.
    let trimmed = (!unusable.is_empty()).then(|| {
        let mut t = s.clone();
        for (j, _) in &unusable {
            t.sweep.remove(&keys[*j]);
        }
        t
    });
    let swept = trimmed.as_ref().unwrap_or(s);
    if s.sweep.is_empty() {
        out = variants
            .into_iter()
            .map(|(name, scenario, _)| Expanded {
                name,
                scenario,
                params: Vec::new(),
            })
            .collect();
    } else if !swept.sweep.is_empty() {
        let usable: Vec<String> = swept.sweep.keys().cloned().collect();
        let sweep = Sweep {
            s: swept,
            base: &base,
            keys: &usable,
            named,
            new_issues: &new_issues,
            loc: &loc,
        };
        let (grid_out, sweep_errors, more) = sweep.expand(&variants);
        out = grid_out;
        errors.extend(sweep_errors);
        omitted = more;
    }
    if !inner.is_empty() {
        out.clear();
    }
    if errors.is_empty() && base_issues.is_empty() {
        let size = timeseries_rows_issue(out.iter().map(|e| &e.scenario), s.replicates);
        if let Some(issue) = size {
            errors.push(locate_issue(issue, set_paths, file_label, index));
        }
        if let Some((run, issue, drivers)) =
            memory_issue(out.iter().map(|e| (e.name.as_str(), &e.scenario)))
        {
            errors.push(memory_error(&loc, s, &out[run], issue, &drivers));
        }
    }
    errors.dedup();
    (out, errors, omitted)
}

/// The memory error of one run: at the override that makes the largest
/// part of it, when a sweep point or a variant wrote it (the sweep entry's
/// line and column), else at the base scenario's field.
fn memory_error(
    loc: &Locator,
    s: &Scenario,
    run: &Expanded,
    issue: Issue,
    drivers: &[String],
) -> ScenarioError {
    let about = |key: &str| {
        let k = normalize_path(s, key);
        drivers.iter().any(|d| related(&k, d))
    };
    // The first driver a sweep key is about decides (the fields the
    // estimate names come before those that drive it too).
    let rank = |key: &str| {
        let k = normalize_path(s, key);
        drivers.iter().position(|d| related(&k, d))
    };
    let mut swept: Vec<&(String, String)> = run
        .params
        .iter()
        .filter(|(k, _)| k != "variant" && about(k))
        .collect();
    swept.sort_by_key(|(k, _)| rank(k));
    if let Some((key, text)) = swept.first() {
        let j = s
            .sweep
            .get(key)
            .and_then(Value::as_array)
            .and_then(|vs| vs.iter().position(|v| value_text(v) == *text));
        let at = j.map(|j| entry_path(key, j));
        return loc.error(
            &format!("sweep.{key}"),
            at.as_deref(),
            format!("sweep value {text}: {}", issue.message),
        );
    }
    let by_rank = |keys: Vec<&String>| keys.into_iter().min_by_key(|k| rank(k)).cloned();
    let variant = run
        .params
        .iter()
        .find(|(k, _)| k == "variant")
        .map_or(run.name.as_str(), |(_, v)| v.as_str());
    if let Some((i, v)) = s
        .variants
        .iter()
        .enumerate()
        .find(|(_, v)| v.name == variant)
        && let Some(key) = by_rank(v.set.keys().filter(|k| about(k)).collect())
    {
        return loc.error(&format!("variants.{i}.set.{key}"), None, issue.message);
    }
    // A `--set` of a field that drives it (`instances` beside a pool's
    // size): the set is the cause, whichever field the estimate names.
    if !loc.set_paths.iter().any(|p| related(p, &issue.path))
        && let Some(set) = by_rank(loc.set_paths.iter().filter(|p| about(p)).collect())
    {
        return ScenarioError::new(SET_LABEL, issue.message).with_path(set);
    }
    locate_issue(issue, loc.set_paths, loc.file_label, loc.index)
}

/// What a sweep entry is checked against: a variant's name, scenario,
/// overrides and own problems.
type Target<'a> = (&'a str, &'a Scenario, &'a [(String, Value)], &'a [Issue]);

/// A sweep over the variants: its entries checked one by one, then its
/// points.
struct Sweep<'a, F: Fn(Vec<Issue>) -> Vec<Issue>> {
    s: &'a Scenario,
    base: &'a Scenario,
    keys: &'a [String],
    named: bool,
    new_issues: &'a F,
    loc: &'a Locator<'a>,
}

impl<F: Fn(Vec<Issue>) -> Vec<Issue>> Sweep<'_, F> {
    /// The problems of `sets` (a variant's overrides and a sweep point's,
    /// together) that the variant `own` does not have.
    fn problems(&self, sets: &[(String, Value)], own: &[Issue]) -> (Option<Scenario>, Vec<Issue>) {
        let fresh = |sc: &Scenario| -> Vec<Issue> {
            (self.new_issues)(validate_in(sc, self.s))
                .into_iter()
                .filter(|i| !own.contains(i))
                .collect()
        };
        match apply_overrides(self.base, sets) {
            Ok(sc) => {
                let issues = fresh(&sc);
                (Some(sc), issues)
            }
            // A value that cannot be applied hides nothing of the others.
            Err(mut e) => {
                let mut hidden = Vec::new();
                let rest = apply_the_rest(self.base, sets, &e, &mut hidden);
                e.extend(hidden);
                if let Some(rest) = rest {
                    let more: Vec<Issue> = fresh(&rest)
                        .into_iter()
                        .filter(|i| !e.contains(i))
                        .collect();
                    e.extend(more);
                }
                (None, e)
            }
        }
    }

    /// The message of an issue about swept `key` (`label` says which value
    /// or point).
    fn message(&self, key: &str, label: &str, issue: &Issue) -> String {
        let norm = normalize_path(self.s, key);
        let inner = if issue.path.is_empty() || issue.path == key || issue.path == norm {
            String::new()
        } else {
            format!("{}: ", issue.path)
        };
        format!("{label}: {inner}{}", issue.message)
    }

    /// Every variant × grid point that is valid, the errors of the others,
    /// and how many errors were left out.
    ///
    /// Each entry is checked on its own (against every variant, or the base
    /// scenario when no variant can be built); a problem it has alone that
    /// every point with it has too, word for word, is the entry's own and
    /// is reported once, at the entry. Any other problem of a point (of a
    /// combination of entries) is reported about the point.
    fn expand(
        &self,
        variants: &[(String, Scenario, Overrides)],
    ) -> (Vec<Expanded>, Vec<ScenarioError>, Omitted) {
        let own: Vec<Vec<Issue>> = variants
            .iter()
            .map(|(_, v, _)| validate_in(v, self.s))
            .collect();
        let grid = grid(&self.s.sweep);
        let short = short_names(&self.s.sweep);
        // Every point of every variant: its scenario, or its problems.
        let mut points: Vec<Vec<(Option<Scenario>, Vec<Issue>)>> = Vec::new();
        for ((_, _, sets), own) in variants.iter().zip(&own) {
            points.push(
                grid.iter()
                    .map(|point| {
                        let all: Vec<(String, Value)> = sets.iter().chain(point).cloned().collect();
                        self.problems(&all, own)
                    })
                    .collect(),
            );
        }
        let entry_of = |p: usize| entry_indexes(p, &self.s.sweep);
        let targets: Vec<Target> = if variants.is_empty() {
            vec![(BASE_VARIANT, self.base, &[][..], &[][..])]
        } else {
            variants
                .iter()
                .zip(&own)
                .map(|((n, v, sets), o)| (n.as_str(), v, &sets[..], &o[..]))
                .collect()
        };
        // The entries' own problems, per variant: (key index, value index,
        // variant index, issue).
        let mut owned: Vec<(usize, usize, usize, Issue)> = Vec::new();
        let mut errors = Vec::new();
        let (mut found, mut shown) = (0usize, 0usize);
        for (ki, key) in self.keys.iter().enumerate() {
            let values = self.s.sweep[key].as_array().cloned().unwrap_or_default();
            for (j, first, written) in repeated_values(self.base, key, &values) {
                found += 1;
                if shown < MAX_SWEEP_ERRORS {
                    shown += 1;
                    let (v, f) = (value_text(&values[j]), value_text(&values[first]));
                    let message = if written {
                        format!(
                            "sweep value {v} is given twice (entries {first} and {j}): its \
                             points would be the same runs under the same names; remove one"
                        )
                    } else {
                        format!(
                            "sweep value {v} is the same as {f} (entry {first}) once read: its \
                             points would be the same runs as those of {f}; remove one"
                        )
                    };
                    errors.push(self.loc.error(
                        &format!("sweep.{key}"),
                        Some(&entry_path(key, j)),
                        message,
                    ));
                }
            }
            for (j, value) in values.iter().enumerate() {
                let text = value_text(value);
                let mut said: Vec<String> = Vec::new();
                for (t, (name, _, sets, own)) in targets.iter().enumerate() {
                    let mut all = sets.to_vec();
                    all.push((key.clone(), value.clone()));
                    let (_, issues) = self.problems(&all, own);
                    for issue in issues {
                        // Its own when every point with it has it too.
                        let everywhere = variants.is_empty()
                            || points[t]
                                .iter()
                                .enumerate()
                                .filter(|(p, _)| entry_of(*p)[ki] == j)
                                .all(|(_, (_, is))| is.contains(&issue));
                        if !everywhere {
                            continue;
                        }
                        owned.push((ki, j, t, issue.clone()));
                        let generic = self.message(key, &format!("sweep value {text}"), &issue);
                        if said.contains(&generic) {
                            continue;
                        }
                        said.push(generic.clone());
                        found += 1;
                        if shown < MAX_SWEEP_ERRORS {
                            shown += 1;
                            let m = if self.named && targets.len() > 1 {
                                self.message(
                                    key,
                                    &format!("sweep value {text} (in variant `{name}`)"),
                                    &issue,
                                )
                            } else {
                                generic
                            };
                            errors.push(self.loc.error(
                                &format!("sweep.{key}"),
                                Some(&entry_path(key, j)),
                                m,
                            ));
                        }
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(variants.len() * grid.len());
        for (t, (name, _, _)) in variants.iter().enumerate() {
            for (p, point) in grid.iter().enumerate() {
                let entries = entry_of(p);
                let (scenario, issues) = std::mem::take(&mut points[t][p]);
                // With explicit variants, the variant is one more dimension
                // of the grid (a `sweep.variant` column).
                let mut params = if self.named {
                    vec![("variant".to_string(), name.clone())]
                } else {
                    Vec::new()
                };
                let mut label = Vec::new();
                for ((path, value), short) in point.iter().zip(&short) {
                    let text = value_text(value);
                    label.push(format!("{short}={text}"));
                    params.push((path.clone(), text));
                }
                let label = label.join(" ");
                if issues.is_empty()
                    && let Some(mut scenario) = scenario
                {
                    scenario.sweep.clear();
                    out.push(Expanded {
                        name: if self.named {
                            format!("{name} {label}")
                        } else {
                            label
                        },
                        scenario,
                        params,
                    });
                    continue;
                }
                for issue in issues {
                    let an_entrys = owned
                        .iter()
                        .any(|(ki, j, tt, i)| *tt == t && entries[*ki] == *j && *i == issue);
                    if an_entrys {
                        continue;
                    }
                    found += 1;
                    if shown >= MAX_SWEEP_ERRORS {
                        continue;
                    }
                    shown += 1;
                    let k = key_for(self.base, scenario.as_ref(), self.keys, &issue.path)
                        .cloned()
                        .unwrap_or_default();
                    let at = self
                        .keys
                        .iter()
                        .position(|x| *x == k)
                        .map(|ki| entry_path(&k, entries[ki]));
                    let what = if self.named {
                        format!("sweep point {label} (in variant `{name}`)")
                    } else {
                        format!("sweep point {label}")
                    };
                    errors.push(self.loc.error(
                        &format!("sweep.{k}"),
                        at.as_deref(),
                        self.message(&k, &what, &issue),
                    ));
                }
            }
        }
        (out, errors, Omitted::exactly(found - shown))
    }
}

/// The entries of the swept `key` that repeat an earlier one: (entry,
/// the earlier entry, whether it is written the same). An entry repeats another when it is written
/// the same (it would name its points the same: `8` and `8`, `1s` and
/// `"1s"`), or when it gives the scenario the same value once read (`1s`
/// and `1000ms`, `200/s` and `12000/m`): its points would be the same
/// runs as the other's. Entries that cannot be applied are left to the
/// errors about them. Linear in the entries (a hash of each applied
/// scenario; equal hashes are compared in full).
fn repeated_values(base: &Scenario, key: &str, values: &[Value]) -> Vec<(usize, usize, bool)> {
    use std::collections::HashMap;
    let applied = |v: &Value| -> Option<Scenario> {
        apply_overrides(base, &[(key.to_string(), v.clone())]).ok()
    };
    let digest = |sc: &Scenario| -> Option<u64> {
        serde_json::to_vec(sc)
            .ok()
            .map(|b| crate::shard::fnv1a64(&b))
    };
    let mut by_text: HashMap<String, usize> = HashMap::new();
    let mut by_value: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut out = Vec::new();
    for (j, v) in values.iter().enumerate() {
        if let Some(&first) = by_text.get(&value_text(v)) {
            out.push((j, first, true));
            continue;
        }
        by_text.insert(value_text(v), j);
        let Some(sc) = applied(v) else {
            continue;
        };
        let Some(h) = digest(&sc) else {
            continue;
        };
        let same = by_value.get(&h).and_then(|earlier| {
            earlier
                .iter()
                .copied()
                .find(|&i| applied(&values[i]).is_some_and(|o| o == sc))
        });
        match same {
            Some(first) => out.push((j, first, false)),
            None => by_value.entry(h).or_default().push(j),
        }
    }
    out
}

/// The index of each key's value at grid point `p` (the first key varying
/// slowest).
fn entry_indexes(p: usize, sweep: &serde_json::Map<String, Value>) -> Vec<usize> {
    let lens: Vec<usize> = sweep
        .values()
        .map(|v| v.as_array().map_or(1, Vec::len).max(1))
        .collect();
    let mut out = vec![0; lens.len()];
    let mut rest = p;
    for (k, len) in lens.iter().enumerate().rev() {
        out[k] = rest % len;
        rest /= len;
    }
    out
}

/// Where `path` is in the file: a variant's override
/// (`variants.1.set.layers.api.timeout`) written in the mapping form of
/// `variants` is found under the variant's name
/// (`variants.many.layers.api.timeout`).
pub(crate) fn position(index: &LocationIndex, s: &Scenario, path: &str) -> Option<(u32, u32)> {
    index.position(&in_file(index, s, path))
}

/// `path` as the file writes it: a variant of a mapping of variants by
/// its name (`variants.a.KEY` for `variants.0.set.KEY`).
fn in_file(index: &LocationIndex, s: &Scenario, path: &str) -> String {
    let segs: Vec<&str> = path.splitn(4, '.').collect();
    if let ["variants", i, rest @ ..] = &segs[..]
        && !index.contains(&format!("variants.{i}"))
        && let i = *i
        && let Some(v) = i.parse::<usize>().ok().and_then(|i| s.variants.get(i))
    {
        let by_name = match rest {
            [set, key] if *set == "set" => format!("variants.{}.{key}", v.name),
            _ => format!("variants.{}", v.name),
        };
        if index.contains(&by_name) {
            return by_name;
        }
    }
    path.to_string()
}

/// `path` with a layer, a service or a call given by index
/// (`layers.0.timeout`, `services.1.calls.0.retry`) written with its label
/// (`layers.api.timeout`, `services.orders.calls.postgres.retry`), as error
/// paths write it.
pub(crate) fn normalize_path(s: &Scenario, path: &str) -> String {
    item_path(s, path, true)
}

/// `path` with a layer, a service or a call given by its label written by
/// its index in `s` (`layers.client.name` is `layers.0.name`): the item a
/// `--set` names in the file's scenario, whatever the set renames it to.
pub(crate) fn indexed_path(s: &Scenario, path: &str) -> String {
    item_path(s, path, false)
}

/// `path` with each item segment written by its label (`labels`) or its
/// index in `s`.
fn item_path(s: &Scenario, path: &str, labels: bool) -> String {
    let mut segs: Vec<String> = path.split('.').map(str::to_string).collect();
    let relabel = |segs: &mut [String], at: usize, names: &[&str]| -> Option<usize> {
        let shown = item_segments(names);
        let seg = segs.get(at)?;
        let i = match seg.parse::<usize>() {
            Ok(i) => i,
            Err(_) => shown.iter().position(|l| l == seg)?,
        };
        segs[at] = if labels {
            shown.get(i)?.clone()
        } else {
            shown.get(i).map(|_| i.to_string())?
        };
        Some(i)
    };
    match segs.first().map(String::as_str) {
        Some("layers") => {
            let names: Vec<&str> = s.layers.iter().map(|l| l.name.as_str()).collect();
            relabel(&mut segs, 1, &names);
        }
        Some("services") => {
            let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
            if let Some(i) = relabel(&mut segs, 1, &names)
                && segs.get(2).is_some_and(|c| c == "calls")
            {
                let calls: Vec<&str> = s.services[i].calls.iter().map(|c| c.label()).collect();
                relabel(&mut segs, 3, &calls);
            }
        }
        // A variant is named in a path by its index either way: the one
        // its errors give (`variants.0.set.KEY`), so that a `--set` that
        // names it (`variants.no-retries.set.KEY`) is found as their cause.
        Some("variants") => {
            let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
            let shown = item_segments(&names);
            if let Some(seg) = segs.get_mut(1)
                && seg.parse::<usize>().is_err()
                && let Some(i) = shown.iter().position(|l| l == seg)
            {
                *seg = i.to_string();
            }
        }
        _ => {}
    }
    segs.join(".")
}

/// The overrides among `sets` that change nothing that runs: a field
/// every variant sets again, or the sweep sets at every point. `base` is
/// the file's scenario, `s` the one with `sets` applied.
pub(crate) fn set_warnings(base: &Scenario, s: &Scenario, sets: &[(String, Value)]) -> Vec<String> {
    let mut warnings = Vec::new();
    if s.variants.is_empty() && s.sweep.is_empty() {
        return warnings;
    }
    let with_base = base_of(s);
    let with: Vec<Option<Scenario>> = s
        .variants
        .iter()
        .map(|v| apply_overrides(&with_base, &variant_sets(v)).ok())
        .collect();
    for (k, (path, _)) in sets.iter().enumerate() {
        let norm = normalize_path(s, path);
        if let Some(key) = s.sweep.keys().find(|key| {
            let nk = normalize_path(s, key);
            norm == nk || norm.starts_with(&format!("{nk}."))
        }) {
            warnings.push(format!(
                "--set {path} has no effect: the sweep sets `{key}` at every point"
            ));
            continue;
        }
        // A mapping set above a swept field: the part of its value the
        // sweep sets again has no effect (the rest replaces the file's).
        let value = &sets[k].1;
        for key in s.sweep.keys() {
            let nk = normalize_path(s, key);
            let Some(rest) = nk.strip_prefix(&format!("{norm}.")) else {
                continue;
            };
            if super::overrides::node(value, rest).is_some() {
                warnings.push(format!(
                    "--set {path}: its `{rest}` has no effect: the sweep sets `{key}` at every point"
                ));
            }
        }
        if s.variants.is_empty() {
            continue;
        }
        let others: Vec<(String, Value)> = sets
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, x)| x.clone())
            .collect();
        let Ok(without) = apply_overrides(base, &others) else {
            continue;
        };
        let without_base = base_of(&without);
        if without_base == with_base {
            continue;
        }
        let unchanged = s.variants.iter().zip(&with).all(|(v, w)| {
            let w_o = apply_overrides(&without_base, &variant_sets(v)).ok();
            w.is_some() && *w == w_o
        });
        if unchanged {
            let names: Vec<&str> = s.variants.iter().map(|v| v.name.as_str()).collect();
            warnings.push(format!(
                "--set {path} has no effect: every variant sets it again ({})",
                names.join(", ")
            ));
        }
    }
    warnings
}

/// The grid's points: one list of (path, value) per combination.
fn grid(sweep: &serde_json::Map<String, Value>) -> Vec<Vec<(String, Value)>> {
    let mut points: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    if sweep.is_empty() {
        return Vec::new();
    }
    for (path, values) in sweep {
        let values = values.as_array().cloned().unwrap_or_default();
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((path.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    points
}

/// The last segment of each swept path, or the whole path where two would
/// read the same.
fn short_names(sweep: &serde_json::Map<String, Value>) -> Vec<String> {
    let last = |p: &str| p.rsplit('.').next().unwrap_or(p).to_string();
    let lasts: Vec<String> = sweep.keys().map(|k| last(k)).collect();
    sweep
        .keys()
        .zip(&lasts)
        .map(|(k, l)| {
            if lasts.iter().filter(|x| *x == l).count() > 1 {
                k.clone()
            } else {
                l.clone()
            }
        })
        .collect()
}

/// A swept value as a user wrote it: strings bare, the rest as compact JSON.
pub(crate) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => compact_json(other),
    }
}

/// `v` as JSON, each float of at least a billion or under a millionth in
/// its exponent spelling when that is shorter ([`crate::human::compact`]:
/// `1e12`, not `1000000000000.0`), every other number as JSON writes it
/// (`0.5`, `2.0`), so that a sweep label or a message quotes a large
/// value legibly.
fn compact_json(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            let short = crate::human::compact(f);
            if short.contains('e') {
                short
            } else {
                n.to_string()
            }
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(compact_json).collect();
            format!("[{}]", inner.join(","))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), compact_json(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::{FULL, MINIMAL};
    use crate::scenario::load_str;
    use crate::scenario::types::Jitter;

    #[test]
    fn expands_in_file_order() {
        let s = load_str(FULL, "full.yaml").unwrap();
        let v = expand_variants(&s).unwrap();
        let names: Vec<&str> = v.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["no-jitter", "full-jitter"]);
        assert_eq!(v[0].1.layers[0].retry.jitter, Jitter::None);
        assert_eq!(v[1].1.dependency.concurrency, 32);
        assert_eq!(v[0].1.dependency.concurrency, 64);
        assert!(v.iter().all(|(_, s)| s.variants.is_empty()));
    }

    #[test]
    fn no_variants_gives_base() {
        let s = load_str(MINIMAL, "m.yaml").unwrap();
        let v = expand_variants(&s).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0, "base");
        assert_eq!(v[0].1, s);
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::*;
    use crate::scenario::load_str;

    const BASE: &str = "name: s\nduration: 10s\nclients:\n  arrival: { kind: poisson, rate: 10/s }\nlayers:\n  - name: api\n    retry: { max_attempts: 2 }\ndependency:\n  concurrency: 2\n  service_time: { dist: exponential, mean: 10ms }\n";

    #[test]
    fn a_sweep_is_the_cartesian_product_in_order() {
        let src = format!(
            "{BASE}sweep:\n  layers.api.retry.max_attempts: [1, 3]\n  layers.api.retry.jitter: [none, full, equal]\n"
        );
        let s = load_str(&src, "s.yaml").unwrap();
        let all = expand_all(&s).unwrap();
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "max_attempts=1 jitter=none",
                "max_attempts=1 jitter=full",
                "max_attempts=1 jitter=equal",
                "max_attempts=3 jitter=none",
                "max_attempts=3 jitter=full",
                "max_attempts=3 jitter=equal",
            ]
        );
        assert_eq!(all[4].scenario.layers[0].retry.max_attempts, 3);
        assert_eq!(
            all[4].params,
            vec![
                ("layers.api.retry.max_attempts".to_string(), "3".to_string()),
                ("layers.api.retry.jitter".to_string(), "full".to_string()),
            ]
        );
        assert!(all.iter().all(|e| e.scenario.sweep.is_empty()));
    }

    #[test]
    fn a_sweep_applies_to_every_explicit_variant() {
        let src = format!(
            "{BASE}variants:\n  - {{ name: a, set: {{}} }}\n  - {{ name: b, set: {{ dependency.concurrency: 4 }} }}\nsweep:\n  clients.arrival.rate: [5/s, 20/s]\n"
        );
        let s = load_str(&src, "s.yaml").unwrap();
        let names: Vec<String> = expand_all(&s)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(
            names,
            ["a rate=5/s", "a rate=20/s", "b rate=5/s", "b rate=20/s"]
        );
    }

    #[test]
    fn bad_sweeps_are_located_errors() {
        let e = load_str(
            &format!("{BASE}sweep:\n  layers.api.retry.max_attempts: 3\n"),
            "s.yaml",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("sweep.layers.api.retry.max_attempts"),
            "{e}"
        );
        let e = load_str(
            &format!("{BASE}sweep:\n  layers.api.retry.max_attempts: [1, 0]\n"),
            "s.yaml",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("s.yaml:12:") && text.contains("max_attempts is 0"),
            "{text}"
        );
    }
}
