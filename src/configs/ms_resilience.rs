//! `ms-resilience`: an `appsettings.json` section bound to
//! Microsoft.Extensions.Http.Resilience's `HttpStandardResilienceOptions`
//! (`AddStandardResilienceHandler(configuration.GetSection(...))`): the
//! standard handler's Polly v8 strategies, outermost first, rate limiter,
//! total request timeout, retry, circuit breaker, attempt timeout.
//!
//! Sources (docs/sources/config-formats.md §6, docs/sources/presets.md §5):
//! dotnet/extensions `src/Libraries/Microsoft.Extensions.Http.Resilience/`
//! `Resilience/HttpStandardResilienceOptions.cs` (the five strategies;
//! AttemptTimeout 10 s), `Polly/HttpRetryStrategyOptions.cs` (BackoffType
//! Exponential, UseJitter true, ShouldRetryAfterHeader true),
//! `Polly/HttpClientResiliencePredicates.cs` (what is transient),
//! `Resilience/Internal/Validators/HttpStandardResilienceOptionsCustomValidator.cs`
//! (attempt timeout at most the total one; sampling duration at least
//! twice the attempt timeout); App-vNext/Polly `src/Polly.Core/Retry/`
//! `RetryStrategyOptions.TResult.cs` and `RetryConstants.cs`
//! (MaxRetryAttempts 3, Delay 2 s, MaxDelay none), `RetryHelper.cs` (the
//! delays: constant `Delay`, linear `Delay·n`, exponential `Delay·2^(n−1)`;
//! with jitter, constant and linear are multiplied by U[0.75, 1.25) and
//! exponential is DecorrelatedJitterBackoffV2; MaxDelay caps the result),
//! `src/Polly.Core/CircuitBreaker/CircuitBreakerStrategyOptions.TResult.cs`
//! (FailureRatio 0.1, MinimumThroughput 100 (≥ 2), SamplingDuration 30 s,
//! BreakDuration 5 s, both 0.5 s to 1 day), `src/Polly.Core/Timeout/`
//! `TimeoutStrategyOptions.cs` (10 ms to 1 day; TotalRequestTimeout 30 s).
//!
//! How .NET reads the file (dotnet/runtime
//! `src/libraries/Microsoft.Extensions.Configuration.Json/src/JsonConfigurationFileParser.cs`,
//! `Microsoft.Extensions.Configuration.Binder/src/ConfigurationBinder.cs`):
//! comments and trailing commas are allowed; nested objects become keys
//! joined by `:`, and a key may itself hold `:` (`"Retry:Delay"`); keys
//! compare without regard to case, and a key given twice is an error;
//! `TimeSpan` values go through `TimeSpan.Parse` with the invariant
//! culture, enums through `Enum.Parse` ignoring case (a name or its
//! number), booleans through `bool.Parse`. A key that names no option is
//! skipped by the binder (a warning here).
//!
//! What maps to what (section `S`):
//!
//! | appsettings.json | layer |
//! |---|---|
//! | `S:Retry:MaxRetryAttempts` (3) | `retry.max_attempts` (+1) |
//! | `S:Retry:Delay` (2 s), `BackoffType` (Exponential), `MaxDelay` | `retry.backoff` base, kind (exponential: multiplier 2), cap |
//! | `S:Retry:UseJitter` (true) | `retry.jitter`: exponential `polly_v2`, constant and linear `{ proportional: 0.25 }`; false: `none` |
//! | `S:Retry:ShouldRetryAfterHeader` (true) | `retry.retry_after: exact`; false: `ignore` |
//! | `S:AttemptTimeout:Timeout` (10 s) | `timeout` |
//! | `S:TotalRequestTimeout:Timeout` (30 s) | `total_timeout` |
//! | `S:CircuitBreaker:FailureRatio`, `MinimumThroughput`, `SamplingDuration`, `BreakDuration` | `breaker` (`time`, one probe) |

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::durations::{Notation, TimeSpanText, parse_timespan, styled, timespan, timespan_syntax};
use super::edit::Lit;
use super::tree::{Doc, Node, Pos, Style};
use super::write::Writer;
use super::{
    Builder, Origin, Selector, boolean, fmt_num, get_path, num, number, sim_attempts, uint,
};
use crate::scenario::units::Duration;

/// One value of the file, under its configuration key.
#[derive(Clone)]
struct Prop<'d> {
    /// Segments as written (`:` inside keys split).
    segs: Vec<String>,
    node: &'d Node,
    key_pos: Pos,
}

/// One JSON object of the file, under its configuration key.
struct MapAt<'d> {
    segs: Vec<String>,
    node: &'d Node,
}

/// Every key of the file, flattened as .NET's JSON provider flattens it.
struct File<'d> {
    props: Vec<Prop<'d>>,
    maps: Vec<MapAt<'d>>,
}

fn lower(segs: &[String]) -> Vec<String> {
    segs.iter().map(|s| s.to_lowercase()).collect()
}

fn flatten<'d>(node: &'d Node, segs: &[String], key_pos: Pos, file: &mut File<'d>) {
    if node.is_map() {
        file.maps.push(MapAt {
            segs: segs.to_vec(),
            node,
        });
        for e in node.entries() {
            let mut s = segs.to_vec();
            s.extend(e.key.split(':').map(str::to_string));
            flatten(&e.value, &s, e.key_pos, file);
        }
    } else if node.is_seq() {
        for (i, item) in node.items().iter().enumerate() {
            let mut s = segs.to_vec();
            s.push(i.to_string());
            flatten(item, &s, item.pos, file);
        }
    } else if !segs.is_empty() {
        file.props.push(Prop {
            segs: segs.to_vec(),
            node,
            key_pos,
        });
    }
}

impl<'d> File<'d> {
    fn new(doc: &'d Doc) -> Self {
        let mut file = File {
            props: Vec::new(),
            maps: Vec::new(),
        };
        if let Some(root) = doc.roots.first() {
            flatten(root, &[], root.pos, &mut file);
        }
        file
    }

    /// The properties below `section` (lower-case segments), by their
    /// path below it in lower case, joined by `:`.
    fn below(&self, section: &[String]) -> Vec<(String, &Prop<'d>)> {
        self.props
            .iter()
            .filter(|p| p.segs.len() > section.len() && lower(&p.segs[..section.len()]) == section)
            .map(|p| (lower(&p.segs[section.len()..]).join(":"), p))
            .collect()
    }

    fn has_section(&self, section: &[String]) -> bool {
        self.maps
            .iter()
            .map(|m| &m.segs)
            .chain(self.props.iter().map(|p| &p.segs))
            .any(|s| s.len() >= section.len() && lower(&s[..section.len()]) == section)
    }

    /// The sections with a `Retry` below them, for the error that lists them.
    fn candidates(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let all = self
            .maps
            .iter()
            .map(|m| &m.segs)
            .chain(self.props.iter().map(|p| &p.segs));
        for segs in all {
            if let Some(i) = segs.iter().position(|s| s.eq_ignore_ascii_case("retry"))
                && i > 0
            {
                let s = segs[..i].join(":");
                if seen.insert(s.to_lowercase()) {
                    out.push(s);
                }
            }
        }
        out
    }
}

/// The section path of the selector, in lower case.
fn section_segs(sel: &Selector) -> Option<Vec<String>> {
    let s = sel.section.as_deref()?.trim();
    (!s.is_empty()).then(|| s.split(':').map(|p| p.trim().to_lowercase()).collect())
}

fn key_of(p: &Prop) -> String {
    p.segs.join(":")
}

/// The options the standard handler binds, by path below the section in
/// lower case, and what each is to stormsim.
enum Known {
    /// Read into the layer.
    Read,
    /// A strategy's telemetry name.
    Name,
    /// Changes results; not modelled.
    Unmodelled(&'static str),
}

fn known(path: &str) -> Option<Known> {
    Some(match path {
        "retry:maxretryattempts"
        | "retry:backofftype"
        | "retry:usejitter"
        | "retry:delay"
        | "retry:maxdelay"
        | "retry:shouldretryafterheader"
        | "attempttimeout:timeout"
        | "totalrequesttimeout:timeout"
        | "circuitbreaker:failureratio"
        | "circuitbreaker:minimumthroughput"
        | "circuitbreaker:samplingduration"
        | "circuitbreaker:breakduration" => Known::Read,
        "retry:name"
        | "attempttimeout:name"
        | "totalrequesttimeout:name"
        | "circuitbreaker:name"
        | "ratelimiter:name" => Known::Name,
        "ratelimiter:defaultratelimiteroptions:permitlimit"
        | "ratelimiter:defaultratelimiteroptions:queuelimit"
        | "ratelimiter:defaultratelimiteroptions:queueprocessingorder" => Known::Unmodelled(
            "the standard handler's concurrency limiter (stormsim's bulkhead limits attempts, this limits whole calls); the default 1000 permits is left out too",
        ),
        _ => return None,
    })
}

/// Upstream's validation ranges, as messages name them.
const DAY: u64 = 86_400_000;

fn timespan_of(b: &mut Builder, p: &Prop, lo_ms: u64, hi_ms: u64) -> Option<Duration> {
    let Some(d) = p.node.scalar().and_then(parse_timespan) else {
        // Valid TimeSpan text that is out of range (negative, or longer
        // than any retry setting takes, TimeSpan.MaxValue included) fails
        // Polly's range validation at start-up, not TimeSpan.Parse.
        let show = |v: u64| timespan(Duration::from_millis(v));
        let range = format!(
            "outside {} to {}, the range Polly validates (the application would not start)",
            show(lo_ms),
            show(hi_ms)
        );
        let why = match p.node.scalar().and_then(timespan_syntax) {
            Some(TimeSpanText::Negative(_)) => Some(format!(
                "{}: a negative TimeSpan (TimeSpan.Parse reads it) is {range}",
                p.node.describe()
            )),
            Some(TimeSpanText::Span(_)) => Some(format!(
                "{}: a valid TimeSpan, but {range}",
                p.node.describe()
            )),
            None => None,
        };
        if let Some(why) = why {
            b.error(key_of(p), Some(p.node.pos), why);
            return None;
        }
        b.error(
            key_of(p),
            Some(p.node.pos),
            format!(
                "expected a .NET TimeSpan string such as \"00:00:02\" or \"00:00:00.500\" ([d.]hh:mm:ss[.fffffff], as TimeSpan.Parse reads it), found {}",
                p.node.describe()
            ),
        );
        return None;
    };
    let ms = d.0 / 1_000_000;
    if d.0 < lo_ms * 1_000_000 || ms > hi_ms || (ms == hi_ms && d.0 % 1_000_000 != 0) {
        let show = |v: u64| timespan(Duration::from_millis(v));
        b.error(
            key_of(p),
            Some(p.node.pos),
            format!(
                "{} is outside {} to {}, the range Polly validates (the application would not start)",
                timespan(d),
                show(lo_ms),
                show(hi_ms)
            ),
        );
        return None;
    }
    Some(d)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BackoffType {
    Constant,
    Linear,
    Exponential,
}

impl BackoffType {
    fn name(self) -> &'static str {
        match self {
            BackoffType::Constant => "Constant",
            BackoffType::Linear => "Linear",
            BackoffType::Exponential => "Exponential",
        }
    }

    fn number(self) -> u8 {
        match self {
            BackoffType::Constant => 0,
            BackoffType::Linear => 1,
            BackoffType::Exponential => 2,
        }
    }
}

/// `DelayBackoffType` as `Enum.Parse(ignoreCase: true)` reads it: a name
/// or the number of one.
fn backoff_type(b: &mut Builder, p: &Prop) -> Option<BackoffType> {
    let t = p.node.scalar().map(str::trim).unwrap_or("");
    let v = match t.to_ascii_lowercase().as_str() {
        "constant" | "0" => Some(BackoffType::Constant),
        "linear" | "1" => Some(BackoffType::Linear),
        "exponential" | "2" => Some(BackoffType::Exponential),
        _ => None,
    };
    if v.is_none() {
        b.error(
            key_of(p),
            Some(p.node.pos),
            format!(
                "expected a DelayBackoffType: Constant, Linear or Exponential (or 0, 1, 2), found {}",
                p.node.describe()
            ),
        );
    }
    v
}

/// The section's values, by lower-case path, the last one of a key that
/// is given twice reported as .NET reports it.
struct Section<'d> {
    props: Vec<(String, &'d Prop<'d>)>,
}

impl<'d> Section<'d> {
    fn get(&self, path: &str) -> Option<&'d Prop<'d>> {
        self.props
            .iter()
            .find(|(k, p)| k == path && !p.node.is_null())
            .map(|(_, p)| *p)
    }
}

pub(crate) fn read(doc: &Doc, sel: &Selector, b: &mut Builder) {
    let Some(section) = section_segs(sel) else {
        b.error(
            "",
            None,
            "which section? an appsettings.json needs `section: PATH`, the configuration section the standard resilience handler is bound to (`HttpClients:Orders:Resilience`)",
        );
        return;
    };
    let file = File::new(doc);
    // A key given twice (in any case) stops .NET's JSON provider.
    let mut seen: BTreeMap<Vec<String>, &Prop> = BTreeMap::new();
    for p in &file.props {
        match seen.get(&lower(&p.segs)) {
            Some(first) => b.error(
                key_of(p),
                Some(p.key_pos),
                format!(
                    "the key is given twice (first at line {}); .NET's JSON configuration provider refuses the file",
                    first.key_pos.0
                ),
            ),
            None => {
                seen.insert(lower(&p.segs), p);
            }
        }
    }
    if !file.has_section(&section) {
        let c = file.candidates();
        b.error(
            "",
            None,
            format!(
                "no configuration section `{}`; the sections with a Retry are {}",
                sel.section.as_deref().unwrap_or(""),
                if c.is_empty() {
                    "none".to_string()
                } else {
                    c.join(", ")
                }
            ),
        );
        return;
    }
    let below = file.below(&section);
    b.policy.selected = format!("section {}", sel.section.as_deref().unwrap_or("").trim());
    for (path, p) in &below {
        if p.node.is_null() {
            continue;
        }
        match known(path) {
            Some(Known::Read) => {}
            Some(Known::Name) => b.warn(
                key_of(p),
                Some(p.key_pos),
                "a strategy's name: telemetry only",
            ),
            Some(Known::Unmodelled(what)) => b.unmodelled(&key_of(p), Some(p.key_pos), what),
            None => b.warn(
                key_of(p),
                Some(p.key_pos),
                "not an option of HttpStandardResilienceOptions that stormsim knows: .NET's configuration binder skips a key that names no option (a misspelling?), so it is left out",
            ),
        }
    }
    let s = Section { props: below };
    let at = |p: &Prop| Origin {
        key: key_of(p),
        pos: Some(p.node.pos),
    };
    let def = |what: &str| Origin {
        key: format!("{what} (default)"),
        pos: None,
    };
    let fixed = |what: &str| Origin {
        key: what.to_string(),
        pos: None,
    };

    // Retry.
    match s.get("retry:maxretryattempts") {
        Some(p) => {
            // Polly v8 `RetryStrategyOptions.MaxRetryAttempts` is
            // `[Range(1, RetryConstants.MaxRetryCount)]`, and `MaxRetryCount`
            // is `int.MaxValue` (App-vNext/Polly
            // src/Polly.Core/Retry/RetryConstants.cs): int.MaxValue is how
            // a file says "retry forever".
            if let Some(n) = uint(b, p.node, &key_of(p), 1, i32::MAX as u64)
                && let Some(n) = sim_attempts(
                    b,
                    p.node,
                    &key_of(p),
                    n + 1,
                    "Polly's MaxRetryAttempts takes 1 to 2147483647 retries",
                )
            {
                b.set("retry.max_attempts", json!(n), at(p));
            }
        }
        None => b.set(
            "retry.max_attempts",
            json!(4),
            def("Retry:MaxRetryAttempts 3"),
        ),
    }
    let kind = match s.get("retry:backofftype") {
        Some(p) => backoff_type(b, p).map(|k| (k, at(p))),
        None => Some((
            BackoffType::Exponential,
            def("Retry:BackoffType Exponential"),
        )),
    };
    let jitter = match s.get("retry:usejitter") {
        Some(p) => boolean(b, p.node, &key_of(p)).map(|j| (j, at(p))),
        None => Some((true, def("Retry:UseJitter true"))),
    };
    let delay = match s.get("retry:delay") {
        Some(p) => timespan_of(b, p, 0, DAY).map(|d| (d, at(p))),
        None => Some((Duration::from_secs(2), def("Retry:Delay 00:00:02"))),
    };
    let max = s
        .get("retry:maxdelay")
        .and_then(|p| timespan_of(b, p, 0, u64::MAX / 1_000_000).map(|d| (d, p)));
    if let (Some((kind, ko)), Some((jit, jo)), Some((delay, dorg))) = (kind, jitter, delay) {
        b.set("retry.backoff.base", json!(delay.to_string()), dorg);
        b.absent("retry.backoff.throttle_base");
        b.set("retry.backoff.truncate_ms", json!(false), fixed("Polly"));
        let kind_name = match kind {
            BackoffType::Constant => "constant",
            BackoffType::Linear => "linear",
            BackoffType::Exponential => "exponential",
        };
        b.set("retry.backoff.kind", json!(kind_name), ko);
        if kind == BackoffType::Exponential {
            b.set(
                "retry.backoff.multiplier",
                json!(2),
                Origin {
                    key: "Polly: ExponentialFactor 2".into(),
                    pos: None,
                },
            );
        } else {
            b.absent("retry.backoff.multiplier");
        }
        match (kind, max) {
            (BackoffType::Constant, Some((m, p))) => {
                // Polly caps after the jitter: the cap matters only below
                // the largest delay.
                let top = if jit { delay.0 + delay.0 / 4 } else { delay.0 };
                if m.0 < top {
                    b.unmodelled(
                        &key_of(p),
                        Some(p.node.pos),
                        "a MaxDelay below a constant Delay (with its jitter): stormsim's constant backoff has no cap",
                    );
                } else {
                    b.warn(
                        key_of(p),
                        Some(p.key_pos),
                        "no effect: a constant delay never reaches MaxDelay",
                    );
                }
                b.absent("retry.backoff.cap");
            }
            (_, Some((m, p))) => {
                b.set("retry.backoff.cap", json!(m.to_string()), at(p));
                if jit && kind == BackoffType::Linear {
                    b.warn(key_of(p), Some(p.node.pos), "Polly caps the jittered delay; stormsim jitters the capped delay (the two differ only near the cap)");
                }
            }
            (_, None) => b.absent("retry.backoff.cap"),
        }
        let j = match (jit, kind) {
            (false, _) => json!("none"),
            (true, BackoffType::Exponential) => json!("polly_v2"),
            (true, _) => json!({ "proportional": 0.25 }),
        };
        b.set("retry.jitter", j, jo);
    }
    b.set(
        "retry.retry_on",
        json!(["timeout", "connection", 408, 429, "5xx"]),
        Origin {
            key: "HttpClientResiliencePredicates: 408, 429, 5xx, HttpRequestException, TimeoutRejectedException".into(),
            pos: None,
        },
    );
    match s.get("retry:shouldretryafterheader") {
        Some(p) => {
            if let Some(v) = boolean(b, p.node, &key_of(p)) {
                b.set(
                    "retry.retry_after",
                    json!(if v { "exact" } else { "ignore" }),
                    at(p),
                );
            }
        }
        None => b.set(
            "retry.retry_after",
            json!("exact"),
            def("Retry:ShouldRetryAfterHeader true"),
        ),
    }
    for f in [
        "retry.retry_after_cap",
        "retry.retry_after_jitter",
        "retry.max_elapsed",
        "retry.budget",
    ] {
        b.absent(f);
    }

    // Timeouts: 10 ms to 1 day (TimeoutStrategyOptions).
    let attempt = match s.get("attempttimeout:timeout") {
        Some(p) => timespan_of(b, p, 10, DAY).map(|d| (d, Some(p))),
        None => Some((Duration::from_secs(10), None)),
    };
    if let Some((d, p)) = attempt {
        let o = p.map_or(def("AttemptTimeout:Timeout 00:00:10"), at);
        b.set("timeout", json!(d.to_string()), o);
    }
    let total = match s.get("totalrequesttimeout:timeout") {
        Some(p) => timespan_of(b, p, 10, DAY).map(|d| (d, Some(p))),
        None => Some((Duration::from_secs(30), None)),
    };
    if let Some((d, p)) = total {
        let o = p.map_or(def("TotalRequestTimeout:Timeout 00:00:30"), at);
        b.set("total_timeout", json!(d.to_string()), o);
    }

    // Circuit breaker.
    b.set(
        "breaker.kind",
        json!("time"),
        fixed("Polly: failures sampled over a duration"),
    );
    b.set(
        "breaker.scope",
        json!("instance"),
        fixed("one pipeline per named client and process"),
    );
    b.set("breaker.blocks", json!("all"), fixed("Polly"));
    b.set(
        "breaker.probes",
        json!(1),
        fixed("Polly: one trial call half-open"),
    );
    b.absent("breaker.window_calls");
    match s.get("circuitbreaker:failureratio") {
        Some(p) => {
            if let Some(v) = number(b, p.node, &key_of(p), 0.0, 1.0) {
                if v > 0.0 {
                    b.set("breaker.failure_ratio", num(v), at(p));
                } else {
                    b.unmodelled(
                        &key_of(p),
                        Some(p.node.pos),
                        "FailureRatio 0 (stormsim's breaker takes a ratio above 0)",
                    );
                }
            }
        }
        None => b.set(
            "breaker.failure_ratio",
            json!(0.1),
            def("CircuitBreaker:FailureRatio 0.1"),
        ),
    }
    match s.get("circuitbreaker:minimumthroughput") {
        Some(p) => {
            if let Some(n) = uint(b, p.node, &key_of(p), 2, u64::from(u32::MAX)) {
                b.set("breaker.min_calls", json!(n), at(p));
            }
        }
        None => b.set(
            "breaker.min_calls",
            json!(100),
            def("CircuitBreaker:MinimumThroughput 100"),
        ),
    }
    let sampling = match s.get("circuitbreaker:samplingduration") {
        Some(p) => timespan_of(b, p, 500, DAY).map(|d| (d, Some(p))),
        None => Some((Duration::from_secs(30), None)),
    };
    if let Some((d, p)) = sampling {
        let o = p.map_or(def("CircuitBreaker:SamplingDuration 00:00:30"), at);
        b.set("breaker.window", json!(d.to_string()), o);
    }
    match s.get("circuitbreaker:breakduration") {
        Some(p) => {
            if let Some(d) = timespan_of(b, p, 500, DAY) {
                b.set("breaker.open_for", json!(d.to_string()), at(p));
            }
        }
        None => b.set(
            "breaker.open_for",
            json!("5s"),
            def("CircuitBreaker:BreakDuration 00:00:05"),
        ),
    }

    // HttpStandardResilienceOptionsCustomValidator: the application
    // would not start.
    if let (Some((a, ap)), Some((t, tp))) = (attempt, total)
        && a.0 > t.0
    {
        let p = ap.or(tp);
        b.error(
            p.map(key_of).unwrap_or_default(),
            p.map(|p| p.node.pos),
            format!("AttemptTimeout {} is longer than TotalRequestTimeout {}: the standard handler's validation refuses it (the application would not start)", timespan(a), timespan(t)),
        );
    }
    if let (Some((a, ap)), Some((w, wp))) = (attempt, sampling)
        && w.0 < 2 * a.0
    {
        let p = wp.or(ap);
        b.error(
            p.map(key_of).unwrap_or_default(),
            p.map(|p| p.node.pos),
            format!("CircuitBreaker SamplingDuration {} is less than twice AttemptTimeout {}: the standard handler's validation refuses it (the application would not start)", timespan(w), timespan(a)),
        );
    }
}

// ---------------------------------------------------------------- export

/// Writes `lit` at `path` (option names in their .NET spelling) below the
/// section: in place when the key is there (in any case), else added to
/// the deepest object on its way.
fn put<'d>(
    w: &mut Writer<'d>,
    file: &File<'d>,
    (section, shown): (&[String], &str),
    path: &[&str],
    lit: Lit,
) -> Result<(), String> {
    let mut full: Vec<String> = section.to_vec();
    full.extend(path.iter().map(|s| s.to_lowercase()));
    if let Some(p) = file.props.iter().rev().find(|p| lower(&p.segs) == full) {
        let lit = match (&lit, p.node.style()) {
            // A number stays a number, a string a string.
            (Lit::Str(s), Some(Style::Plain)) if s.parse::<f64>().is_ok() => Lit::Bare(s.clone()),
            (Lit::Bare(s), Some(Style::Double)) => Lit::Str(s.clone()),
            _ => lit,
        };
        return w.put_node(p.node, &lit);
    }
    let Some(m) = file
        .maps
        .iter()
        .filter(|m| m.segs.len() <= full.len() && lower(&m.segs) == full[..m.segs.len()])
        .filter(|m| m.segs.len() >= section.len())
        .max_by_key(|m| m.segs.len())
    else {
        return Err(format!(
            "the section {shown} is not an object of its own in this file: add {} by hand",
            path.join(":")
        ));
    };
    let depth = m.segs.len() - section.len();
    let keys: Vec<&str> = path[depth..].to_vec();
    w.put(m.node, &m.segs.join(":"), &keys, lit)
}

/// Writes the duration `d` at `path` of the section as a TimeSpan in the
/// style of the value it replaces (`00:00:02`, `0:0:2`, `00:00:00.5000000`),
/// else of the section's first TimeSpan (a new key), else `hh:mm:ss`.
fn put_span<'d>(
    w: &mut Writer<'d>,
    file: &File<'d>,
    sec: (&[String], &str),
    path: &[&str],
    d: Duration,
) -> Result<(), String> {
    let mut full: Vec<String> = sec.0.to_vec();
    full.extend(path.iter().map(|s| s.to_lowercase()));
    let reads = |p: &&Prop| p.node.scalar().is_some_and(|t| Notation::TimeSpan.reads(t));
    let sample = file
        .props
        .iter()
        .rev()
        .find(|p| lower(&p.segs) == full)
        .filter(reads)
        .or_else(|| {
            file.props
                .iter()
                .filter(|p| {
                    p.segs.len() > sec.0.len() && lower(&p.segs[..sec.0.len()]) == lower(sec.0)
                })
                .find(reads)
        })
        .and_then(|p| p.node.scalar());
    put(
        w,
        file,
        sec,
        path,
        Lit::Str(styled(Notation::TimeSpan, d, sample)),
    )
}

pub(crate) fn write(
    w: &mut Writer<'_>,
    sel: &Selector,
    wanted: &Map<String, Value>,
    changed: &[String],
) {
    let doc = w.doc;
    let Some(section) = section_segs(sel) else {
        return;
    };
    let file = File::new(doc);
    let shown = sel.section.as_deref().unwrap_or("").trim();
    let sec = (section.as_slice(), shown);
    let below = file.below(&section);
    let cur = Section { props: below };
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    let dur = |p: &str| {
        want(p)
            .and_then(Value::as_str)
            .and_then(|s| crate::scenario::units::parse_duration(s).ok())
    };
    let kind = match want("retry.backoff.kind").and_then(Value::as_str) {
        Some("constant") => Some(BackoffType::Constant),
        Some("linear") => Some(BackoffType::Linear),
        Some("exponential") => Some(BackoffType::Exponential),
        _ => None,
    };
    for leaf in changed {
        let leaf = leaf.as_str();
        let r = match leaf {
            "retry.max_attempts" => match want(leaf).and_then(Value::as_u64) {
                Some(n) if n >= 2 => put(w, &file, sec, &["Retry", "MaxRetryAttempts"], Lit::Bare((n - 1).to_string())),
                _ => w.refuse_leaf(leaf, "Polly's MaxRetryAttempts is at least 1 (2 attempts); to stop retrying, remove the retry strategy in code"),
            },
            "retry.backoff.base" => match dur(leaf) {
                Some(d) => put_span(w, &file, sec, &["Retry", "Delay"], d),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "retry.backoff.cap" => match dur(leaf) {
                Some(d) => put_span(w, &file, sec, &["Retry", "MaxDelay"], d),
                // No cap: the section's MaxDelay goes. (A constant delay
                // that never reaches it is capped by nothing, as import
                // reads it, but the file would still say a cap.)
                None => match cur.get("retry:maxdelay") {
                    Some(p) => w.remove(p.node, &key_of(p)),
                    None => Ok(()),
                },
            },
            "retry.backoff.kind" => match kind {
                Some(k) => {
                    let numeric = cur
                        .get("retry:backofftype")
                        .is_some_and(|p| p.node.scalar().is_some_and(|t| t.trim().chars().all(|c| c.is_ascii_digit())));
                    let lit = if numeric {
                        Lit::Bare(k.number().to_string())
                    } else {
                        Lit::Str(k.name().to_string())
                    };
                    put(w, &file, sec, &["Retry", "BackoffType"], lit)
                }
                None => w.refuse_leaf(leaf, "Polly's BackoffType is Constant, Linear or Exponential"),
            },
            "retry.backoff.multiplier" => match want(leaf).and_then(Value::as_f64) {
                Some(m) if (m - 2.0).abs() < 1e-12 => Ok(()),
                // A constant or linear backoff has no multiplier: it goes
                // with the BackoffType the kind writes.
                None if matches!(kind, Some(BackoffType::Constant | BackoffType::Linear)) => Ok(()),
                _ => w.refuse_leaf(leaf, "Polly's exponential backoff doubles (multiplier 2)"),
            },
            "retry.backoff.truncate_ms" | "retry.backoff.throttle_base" => {
                w.refuse_leaf(leaf, "Polly has no such setting")
            }
            "retry.jitter" | "retry.jitter.proportional" => {
                let j = want("retry.jitter");
                let on = match (j, kind) {
                    (Some(Value::String(s)), _) if s == "none" => Some(false),
                    (Some(Value::String(s)), Some(BackoffType::Exponential)) if s == "polly_v2" => Some(true),
                    (Some(Value::Object(m)), Some(BackoffType::Constant | BackoffType::Linear))
                        if m.get("proportional").and_then(Value::as_f64) == Some(0.25) =>
                    {
                        Some(true)
                    }
                    _ => None,
                };
                // The file's UseJitter as read (true when it is not there):
                // a jitter leaf that changes with the backoff kind alone
                // (polly_v2 and { proportional: 0.25 } are both UseJitter
                // true) writes nothing, and adds no key the file lacks.
                let now = cur
                    .get("retry:usejitter")
                    .map_or(Some(true), |p| p.node.scalar().and_then(|t| t.trim().to_ascii_lowercase().parse::<bool>().ok()));
                match on {
                    Some(v) if now == Some(v) => Ok(()),
                    Some(v) => put(w, &file, sec, &["Retry", "UseJitter"], Lit::Bare(v.to_string())),
                    None => w.refuse_leaf(leaf, "Polly's jitter is UseJitter: polly_v2 with an exponential backoff, { proportional: 0.25 } with a constant or linear one, or none"),
                }
            }
            "retry.retry_after" => match want(leaf).and_then(Value::as_str) {
                Some("exact") => put(w, &file, sec, &["Retry", "ShouldRetryAfterHeader"], Lit::Bare("true".into())),
                Some("ignore") => put(w, &file, sec, &["Retry", "ShouldRetryAfterHeader"], Lit::Bare("false".into())),
                _ => w.refuse_leaf(leaf, "the standard handler uses Retry-After exactly (ShouldRetryAfterHeader true) or not at all"),
            },
            "retry.retry_on" => w.refuse_leaf(leaf, "what is transient is fixed by HttpClientResiliencePredicates (ShouldHandle is set in code)"),
            "timeout" => match dur(leaf) {
                Some(d) => put_span(w, &file, sec, &["AttemptTimeout", "Timeout"], d),
                None => w.refuse_leaf(leaf, "the standard handler always has an attempt timeout"),
            },
            "total_timeout" => match dur(leaf) {
                Some(d) => put_span(w, &file, sec, &["TotalRequestTimeout", "Timeout"], d),
                None => w.refuse_leaf(leaf, "the standard handler always has a total request timeout"),
            },
            "breaker.failure_ratio" => match want(leaf).and_then(Value::as_f64) {
                Some(r) => put(w, &file, sec, &["CircuitBreaker", "FailureRatio"], Lit::Bare(fmt_num(r))),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "breaker.min_calls" => match want(leaf).and_then(Value::as_u64) {
                Some(n) => put(w, &file, sec, &["CircuitBreaker", "MinimumThroughput"], Lit::Bare(n.to_string())),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "breaker.window" => match dur(leaf) {
                Some(d) => put_span(w, &file, sec, &["CircuitBreaker", "SamplingDuration"], d),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "breaker.open_for" => match dur(leaf) {
                Some(d) => put_span(w, &file, sec, &["CircuitBreaker", "BreakDuration"], d),
                None => w.refuse_leaf(leaf, "missing"),
            },
            l if l.starts_with("breaker") => w.refuse_leaf(l, "the standard handler's circuit breaker is Polly's: time-sampled, per client, one probe"),
            _ => w.refuse_leaf(leaf, "the standard resilience handler has no such setting"),
        };
        if let Err(e) = r {
            w.refuse_leaf(leaf, &e).ok();
        }
    }
}
