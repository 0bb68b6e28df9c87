//! `resilience4j`: a Spring Boot `application.yml` configuring Resilience4j
//! (`resilience4j.retry`, and the circuit breaker, time limiter and
//! bulkhead of the same instance name).
//!
//! Sources (docs/sources/config-formats.md §3, docs/sources/presets.md §6):
//! resilience4j/resilience4j
//! `resilience4j-framework-common/.../retry/configuration/CommonRetryConfigurationProperties.java`
//! (the properties; `baseConfig`, else `configs.default`, is the base an
//! instance's own values override; the interval function is rebuilt only
//! from an instance's own `waitDuration`, with the exponential and
//! randomized flags, multiplier and maximum merged down from the base;
//! `exponentialMaxWaitDuration` is used only with
//! `exponentialBackoffMultiplier`, and when randomized only with
//! `randomizedWaitFactor` too), `.../utils/ConfigUtils.java` (what is merged),
//! `resilience4j-core/.../IntervalFunction.java` (multiplier 1.5, factor 0.5,
//! truncation to whole milliseconds at every step),
//! `CircuitBreakerConfig.java` (its defaults). Property names bind
//! relaxed, as Spring Boot binds them: `maxAttempts`, `max-attempts` and
//! `max_attempts` are one property, and `resilience4j.retry:` may be one
//! dotted key.
//!
//! What maps to what:
//!
//! | Resilience4j | layer |
//! |---|---|
//! | `retry.instances.NAME.maxAttempts` (3) | `retry.max_attempts` |
//! | `waitDuration` (500 ms) | `retry.backoff.base` |
//! | `enableExponentialBackoff`, `exponentialBackoffMultiplier` (1.5), `exponentialMaxWaitDuration` | `retry.backoff` `exponential` (whole milliseconds), `multiplier`, `cap`; else `constant` |
//! | `enableRandomizedWait`, `randomizedWaitFactor` (0.5) | `retry.jitter: { proportional: F }`; else `none` |
//! | `retryExceptions`, `ignoreExceptions` | `retry.retry_on`, through the well-known exception classes |
//! | `circuitbreaker.instances.NAME` | `breaker` (`count` or `time`) |
//! | `timelimiter.instances.NAME.timeoutDuration` | `timeout` |
//! | `bulkhead.instances.NAME.maxConcurrentCalls` | `bulkhead` |

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::durations::{SpringStyle, parse_spring, spring_like};
use super::edit::Lit;
use super::tree::{Doc, Node, Style};
use super::write::Writer;
use super::{
    Builder, Origin, Selector, boolean, fmt_num, get_path, num, number, sim_attempts, uint,
};
use crate::scenario::units::Duration;

/// A property name as Spring's relaxed binding compares it.
fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// One value of the file, under its full property path.
#[derive(Clone)]
struct Prop<'d> {
    /// Segments as written (dotted keys split).
    segs: Vec<String>,
    node: &'d Node,
    key_pos: (u32, u32),
}

/// One mapping of the file, under its property path.
struct MapAt<'d> {
    segs: Vec<String>,
    node: &'d Node,
}

#[derive(Default)]
struct Index<'d> {
    props: Vec<Prop<'d>>,
    maps: Vec<MapAt<'d>>,
}

fn flatten<'d>(node: &'d Node, segs: &[String], index: &mut Index<'d>) {
    index.maps.push(MapAt {
        segs: segs.to_vec(),
        node,
    });
    for e in node.entries() {
        let mut s = segs.to_vec();
        s.extend(e.key.split('.').map(str::to_string));
        if e.value.is_map() {
            flatten(&e.value, &s, index);
        } else {
            index.props.push(Prop {
                segs: s,
                node: &e.value,
                key_pos: e.key_pos,
            });
        }
    }
}

/// Two spellings of one Resilience4j property in one document
/// (`maxAttempts` and `max-attempts`, or `max_attempts`; a dotted key and
/// the nested one): Spring Boot's relaxed binding gives both the one
/// canonical name (Spring Boot reference, "Externalized Configuration",
/// "Relaxed Binding": kebab case, camel case and underscore notation bind
/// the same property; `ConfigurationPropertyName` compares the forms
/// alike), and which value it binds is not the file's to say: an error at
/// the second one, naming both positions. (The later document of a
/// multi-document file overriding an earlier one is Spring's order and
/// is read as such.)
fn one_key_twice(props: &[Prop], b: &mut Builder) {
    let mut seen: BTreeMap<Vec<String>, &Prop> = BTreeMap::new();
    for p in props {
        if p.segs.first().map(|s| norm(s)).as_deref() != Some("resilience4j") {
            continue;
        }
        let canonical: Vec<String> = p.segs.iter().map(|s| norm(s)).collect();
        match seen.get(&canonical) {
            Some(first) => b.error(
                key_of(p),
                Some(p.key_pos),
                format!(
                    "`{}` (line {}, column {}) and `{}` (line {}, column {}) are one property to Spring Boot's relaxed binding (kebab case, camel case and underscores bind alike), and which of the two it binds is not defined: keep one",
                    crate::escape::escape(&key_of(first)),
                    first.key_pos.0,
                    first.key_pos.1,
                    crate::escape::escape(&key_of(p)),
                    p.key_pos.0,
                    p.key_pos.1,
                ),
            ),
            None => {
                seen.insert(canonical, p);
            }
        }
    }
}

/// The modules read, as (property segment, what it is).
const MODULES: &[&str] = &["retry", "circuitbreaker", "timelimiter", "bulkhead"];

/// Properties of one instance or config, by normalised name (the file's
/// later documents win, as Spring reads them).
#[derive(Default, Clone)]
struct Props<'d> {
    by: BTreeMap<String, Prop<'d>>,
}

impl<'d> Props<'d> {
    fn get(&self, name: &str) -> Option<&Prop<'d>> {
        self.by.get(&norm(name))
    }
}

/// The display key of a property.
fn key_of(p: &Prop) -> String {
    p.segs.join(".")
}

struct File<'d> {
    index: Index<'d>,
}

impl<'d> File<'d> {
    fn new(doc: &'d Doc, b: &mut Builder) -> Self {
        let mut index = Index::default();
        for root in &doc.roots {
            let mut one = Index::default();
            if root.is_map() {
                flatten(root, &[], &mut one);
            }
            let profile = one.props.iter().find(|p| {
                let n: Vec<String> = p.segs.iter().map(|s| norm(s)).collect();
                n == ["spring", "config", "activate", "onprofile"] || n == ["spring", "profiles"]
            });
            if let Some(p) = profile {
                b.warn(
                    key_of(p),
                    Some(p.key_pos),
                    format!("a document for the profile `{}`: not read (stormsim reads the default profile)", p.node.scalar().unwrap_or("?")),
                );
                continue;
            }
            one_key_twice(&one.props, b);
            index.props.extend(one.props);
            index.maps.extend(one.maps);
        }
        File { index }
    }

    /// Whether `segs` starts with resilience4j.MODULE.GROUP.NAME.
    fn under(segs: &[String], module: &str, group: &str, name: &str) -> bool {
        segs.len() >= 4
            && norm(&segs[0]) == "resilience4j"
            && norm(&segs[1]) == module
            && (norm(&segs[2]) == group || (group == "instances" && norm(&segs[2]) == "backends"))
            && segs[3] == name
    }

    fn props(&self, module: &str, group: &str, name: &str) -> Option<Props<'d>> {
        let mut out = Props::default();
        let mut any = false;
        for m in &self.index.maps {
            if m.segs.len() == 4 && Self::under(&m.segs, module, group, name) {
                any = true;
            }
        }
        for p in &self.index.props {
            if Self::under(&p.segs, module, group, name) && p.segs.len() > 4 {
                any = true;
                out.by.insert(norm(&p.segs[4..].join(".")), p.clone());
            }
        }
        any.then_some(out)
    }

    fn names(&self, module: &str, group: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for segs in self
            .index
            .props
            .iter()
            .map(|p| &p.segs)
            .chain(self.index.maps.iter().map(|m| &m.segs))
        {
            if segs.len() >= 4
                && norm(&segs[0]) == "resilience4j"
                && norm(&segs[1]) == module
                && (norm(&segs[2]) == group
                    || (group == "instances" && norm(&segs[2]) == "backends"))
                && !out.contains(&segs[3])
            {
                out.push(segs[3].clone());
            }
        }
        out
    }

    /// The mapping that holds the instance's own properties.
    fn instance_map(&self, module: &str, name: &str) -> Option<(&'d Node, String)> {
        self.index
            .maps
            .iter()
            .find(|m| m.segs.len() == 4 && Self::under(&m.segs, module, "instances", name))
            .map(|m| (m.node, m.segs.join(".")))
    }

    /// An instance's properties, then its base's (`baseConfig`, else
    /// `configs.default`), then that base's base, and so on: the chain
    /// Resilience4j builds a configuration from, nearest first, with the
    /// name of each level.
    fn chain(&self, b: &mut Builder, module: &str, name: &str) -> Option<Vec<(Props<'d>, String)>> {
        let own = self.props(module, "instances", name)?;
        let mut out = vec![(own, format!("instances.{name}"))];
        while out.len() < 8 {
            let (last, label) = out.last()?;
            let next = match last.get("baseConfig").and_then(|p| p.node.scalar()) {
                Some(bn) => match self.props(module, "configs", bn) {
                    Some(p) => (p, bn.to_string()),
                    None => {
                        let p = last.get("baseConfig").cloned();
                        b.error(
                            p.as_ref().map(key_of).unwrap_or_default(),
                            p.map(|p| p.node.pos),
                            format!("no resilience4j.{module}.configs.{bn}: Resilience4j fails with ConfigurationNotFoundException"),
                        );
                        break;
                    }
                },
                None if label != "default" => match self.props(module, "configs", "default") {
                    Some(p) => (p, "default".to_string()),
                    None => break,
                },
                None => break,
            };
            if out.iter().any(|(_, l)| *l == next.1) {
                // Resilience4j follows `baseConfig` by recursion with no
                // check for a loop (`CommonRetryConfigurationProperties.
                // createRetryConfig` calls itself on the base's
                // properties), so a circle never ends: the application
                // fails at startup with a StackOverflowError.
                let p = last.get("baseConfig").cloned();
                let mut names: Vec<&str> = out.iter().map(|(_, l)| l.as_str()).collect();
                names.push(&next.1);
                b.error(
                    p.as_ref().map(key_of).unwrap_or_default(),
                    p.map(|p| p.node.pos),
                    format!(
                        "baseConfig goes round in a circle ({}): Resilience4j follows it without end and the application fails at startup (StackOverflowError); end the chain at a config without baseConfig",
                        names.join(" → ")
                    ),
                );
                break;
            }
            out.push(next);
        }
        Some(out)
    }
}

/// The first value of `n` along a chain.
fn pick<'d>(chain: &[(Props<'d>, String)], n: &str) -> Option<Prop<'d>> {
    chain.iter().find_map(|(p, _)| p.get(n)).cloned()
}

/// Java exception classes and the simulated failures they stand for.
/// Subclasses of a listed class are retried too (Resilience4j tests
/// `isAssignableFrom`), so `java.io.IOException` covers connection
/// failures and socket timeouts.
const CLASSES: &[(&str, &[&str])] = &[
    (
        "java.lang.Throwable",
        &["timeout", "connection", "4xx", "5xx"],
    ),
    (
        "java.lang.Exception",
        &["timeout", "connection", "4xx", "5xx"],
    ),
    ("java.lang.RuntimeException", &["4xx", "5xx"]),
    ("java.io.IOException", &["timeout", "connection"]),
    ("java.net.SocketException", &["connection"]),
    ("java.net.ConnectException", &["connection"]),
    ("java.net.NoRouteToHostException", &["connection"]),
    ("java.net.SocketTimeoutException", &["timeout"]),
    ("java.util.concurrent.TimeoutException", &["timeout"]),
    ("java.net.http.HttpTimeoutException", &["timeout"]),
    ("java.net.http.HttpConnectTimeoutException", &["connection"]),
    (
        "org.springframework.web.client.ResourceAccessException",
        &["timeout", "connection"],
    ),
    (
        "org.springframework.web.client.RestClientException",
        &["timeout", "connection", "4xx", "5xx"],
    ),
    (
        "org.springframework.web.client.RestClientResponseException",
        &["4xx", "5xx"],
    ),
    (
        "org.springframework.web.client.HttpStatusCodeException",
        &["4xx", "5xx"],
    ),
    (
        "org.springframework.web.client.HttpServerErrorException",
        &["5xx"],
    ),
    (
        "org.springframework.web.client.HttpClientErrorException",
        &["4xx"],
    ),
    (
        "org.springframework.web.reactive.function.client.WebClientRequestException",
        &["timeout", "connection"],
    ),
    (
        "org.springframework.web.reactive.function.client.WebClientResponseException",
        &["4xx", "5xx"],
    ),
    ("feign.RetryableException", &["timeout", "connection"]),
    (
        "feign.FeignException",
        &["timeout", "connection", "4xx", "5xx"],
    ),
];

/// Spring's nested status classes (`HttpServerErrorException$ServiceUnavailable`,
/// `WebClientResponseException.TooManyRequests`, `FeignException.BadGateway`).
const STATUS_CLASSES: &[(&str, u16)] = &[
    ("InternalServerError", 500),
    ("BadGateway", 502),
    ("ServiceUnavailable", 503),
    ("GatewayTimeout", 504),
    ("TooManyRequests", 429),
    ("RequestTimeout", 408),
    ("Conflict", 409),
];

/// The outcomes a class stands for, or `None` for a class stormsim does
/// not know.
fn class_outcomes(class: &str) -> Option<Vec<String>> {
    let c = class.trim();
    if let Some((_, o)) = CLASSES.iter().find(|(n, _)| *n == c) {
        return Some(o.iter().map(|s| s.to_string()).collect());
    }
    let (outer, inner) = c.rsplit_once(['$', '.'])?;
    let (_, code) = STATUS_CLASSES.iter().find(|(n, _)| *n == inner)?;
    let parent = CLASSES.iter().find(|(n, _)| *n == outer)?;
    let class = if *code >= 500 { "5xx" } else { "4xx" };
    parent.1.contains(&class).then(|| vec![code.to_string()])
}

/// The classes of a list property (a YAML list, or a comma-separated
/// string as Spring also binds).
fn classes(p: &Prop) -> Vec<(String, (u32, u32))> {
    if p.node.is_seq() {
        p.node
            .items()
            .iter()
            .filter_map(|i| i.scalar().map(|s| (s.trim().to_string(), i.pos)))
            .collect()
    } else {
        p.node
            .scalar()
            .unwrap_or("")
            .split(',')
            .map(|s| (s.trim().to_string(), p.node.pos))
            .filter(|(s, _)| !s.is_empty())
            .collect()
    }
}

/// Which outcomes an instance retries.
fn retry_on(b: &mut Builder, retry: Option<&Prop>, ignore: Option<&Prop>) -> (Vec<Value>, Origin) {
    let all = ["timeout", "connection", "4xx", "5xx"];
    let mut set: Vec<String> = all.iter().map(|s| s.to_string()).collect();
    let mut origin = Origin {
        key: "retryExceptions (default: every exception)".into(),
        pos: None,
    };
    if let Some(p) = retry {
        origin = Origin {
            key: key_of(p),
            pos: Some(p.node.pos),
        };
        set.clear();
        for (class, pos) in classes(p) {
            match class_outcomes(&class) {
                Some(o) => set.extend(o),
                None => b.unmodelled(&key_of(p), Some(pos), &format!("`{class}` is not an exception class stormsim can tie to a simulated failure (write retry.retry_on beside `from` instead)")),
            }
        }
    }
    if let Some(p) = ignore {
        for (class, pos) in classes(p) {
            match class_outcomes(&class) {
                Some(o) => {
                    // An ignored class removes what it stands for; a
                    // status class removes one status from its class.
                    for x in o {
                        if let Ok(code) = x.parse::<u16>() {
                            let cls = if code >= 500 { "5xx" } else { "4xx" };
                            if set.iter().any(|s| s == cls) {
                                b.unmodelled(&key_of(p), Some(pos), &format!("`{class}` ignores one status of a retried class"));
                            }
                        }
                        set.retain(|s| *s != x);
                    }
                }
                None => b.warn(
                    key_of(p),
                    Some(pos),
                    format!("`{class}`: an application exception the simulated dependency never raises, so ignoring it changes nothing"),
                ),
            }
        }
    }
    let mut out: Vec<Value> = Vec::new();
    for s in set {
        let v = s.parse::<u16>().map_or(json!(s), |n| json!(n));
        if !out.contains(&v) {
            out.push(v);
        }
    }
    (out, origin)
}

fn duration(b: &mut Builder, p: &Prop) -> Option<(Duration, SpringStyle)> {
    if let Some(m) = super::durations::space_refusal(p.node.scalar(), "Spring Boot (DurationStyle)")
    {
        b.error(key_of(p), Some(p.node.pos), m);
        return None;
    }
    let d = p.node.scalar().and_then(parse_spring);
    if d.is_none() {
        // Well-formed but too long: the same text with each number 1
        // reads.
        let in_form = p.node.scalar().is_some_and(|t| {
            let mut one = String::new();
            let mut digits = false;
            for c in t.chars() {
                if c.is_ascii_digit() {
                    if !digits {
                        one.push('1');
                    }
                    digits = true;
                } else {
                    one.push(c);
                    digits = false;
                }
            }
            parse_spring(&one).is_some()
        });
        let message = if in_form {
            format!(
                "{} is a well-formed duration, but longer than stormsim can hold (at most {}, about 584 years)",
                p.node.describe(),
                Duration(u64::MAX)
            )
        } else {
            format!(
                "expected a duration such as 500ms, 2s or PT2S, found {}",
                p.node.describe()
            )
        };
        b.error(key_of(p), Some(p.node.pos), message);
    }
    d
}

/// Which properties of each module stormsim reads, and what the others are.
fn check_known(b: &mut Builder, props: &Props, known: &[&str], harmless: &[&str], module: &str) {
    for (n, p) in &props.by {
        if known.iter().any(|k| norm(k) == *n) {
            continue;
        }
        if harmless.iter().any(|k| norm(k) == *n) {
            b.warn(
                key_of(p),
                Some(p.key_pos),
                "not simulated: monitoring and events only",
            );
        } else {
            b.unmodelled(
                &key_of(p),
                Some(p.key_pos),
                &format!("a Resilience4j {module} setting stormsim does not model"),
            );
        }
    }
}

const HARMLESS: &[&str] = &[
    "eventConsumerBufferSize",
    "registerHealthIndicator",
    "allowHealthIndicatorToFail",
    "writableStackTraceEnabled",
    "failAfterMaxAttempts",
    "metricsEnabled",
];

/// Reads the instance, with Spring placeholders (`${NAME:default}`) read
/// as their defaults (`placeholders.rs`): a warning for each one a value
/// read comes from, and an error for a used value whose placeholder has
/// no default.
pub(crate) fn read(doc: &Doc, sel: &Selector, b: &mut Builder) {
    let (doc, found) = super::placeholders::resolved(doc);
    read_resolved(&doc, sel, b);
    for e in &mut b.errors {
        if let Some((_, text)) = found.unresolved.iter().find(|(p, _)| Some(*p) == e.pos) {
            e.message = format!(
                "`{text}` is a Spring placeholder with no default: Spring fails to start unless the property is set elsewhere, and stormsim does not read the environment; give it a default (`${{NAME:value}}`) or write the value"
            );
        }
    }
    for (pos, names, written, value) in &found.defaulted {
        if let Some(o) = b.policy.origins.values().find(|o| o.pos == Some(*pos)) {
            let key = o.key.clone();
            b.warn(
                key,
                Some(*pos),
                format!(
                    "`{written}` read as its default `{value}`: Spring takes {} from the environment or another property source when set, which this file does not show",
                    names.join(", ")
                ),
            );
        }
    }
}

fn read_resolved(doc: &Doc, sel: &Selector, b: &mut Builder) {
    let Some(name) = sel.instance.as_deref() else {
        b.error("", None, "which instance? a Resilience4j application.yml needs `instance: NAME` (the name in @Retry(name = ...))");
        return;
    };
    let file = File::new(doc, b);
    let Some(chain) = file.chain(b, "retry", name) else {
        let known = file.names("retry", "instances");
        b.error(
            "resilience4j.retry.instances",
            None,
            format!(
                "no retry instance `{name}`; the instances are {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
        );
        return;
    };
    b.policy.selected = format!("resilience4j.retry.instances.{name}");
    let known = [
        "baseConfig",
        "maxAttempts",
        "waitDuration",
        "enableExponentialBackoff",
        "exponentialBackoffMultiplier",
        "exponentialMaxWaitDuration",
        "enableRandomizedWait",
        "randomizedWaitFactor",
        "retryExceptions",
        "ignoreExceptions",
    ];
    for (props, _) in &chain {
        check_known(b, props, &known, HARMLESS, "retry");
    }
    // maxAttempts below 1 fails the binding: the properties' setter
    // throws "maxAttempts must be greater than or equal to 1"
    // (CommonRetryConfigurationProperties.InstanceProperties).
    let attempts = chain
        .iter()
        .find_map(|(p, _)| p.get("maxAttempts"))
        .cloned();
    match attempts {
        Some(p) => {
            if p.node
                .scalar()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .is_some_and(|n| n < 1)
            {
                b.error(
                    key_of(&p),
                    Some(p.node.pos),
                    "Resilience4j refuses it: maxAttempts must be greater than or equal to 1 (the binding fails at startup)",
                );
            } else if let Some(n) = uint(b, p.node, &key_of(&p), 1, i32::MAX as u64)
                && let Some(n) = sim_attempts(
                    b,
                    p.node,
                    &key_of(&p),
                    n,
                    "Resilience4j's maxAttempts is an int of at least 1",
                )
            {
                b.set(
                    "retry.max_attempts",
                    json!(n),
                    Origin {
                        key: key_of(&p),
                        pos: Some(p.node.pos),
                    },
                );
            }
        }
        None => b.set(
            "retry.max_attempts",
            json!(3),
            Origin {
                key: "maxAttempts (default)".into(),
                pos: None,
            },
        ),
    }
    // The interval function: built at the nearest level with a
    // waitDuration of its own, with the flags, multiplier and maximum
    // merged down from the levels above it (its randomizedWaitFactor is
    // its own); else Resilience4j's default, 500 ms constant.
    const INTERVAL: [&str; 5] = [
        "enableExponentialBackoff",
        "enableRandomizedWait",
        "exponentialBackoffMultiplier",
        "exponentialMaxWaitDuration",
        "randomizedWaitFactor",
    ];
    let level = chain
        .iter()
        .position(|(p, _)| p.get("waitDuration").is_some());
    let nearer = level.unwrap_or(chain.len());
    for (props, _) in &chain[..nearer] {
        for n in INTERVAL {
            if let Some(p) = props.get(n) {
                let why = match level {
                    Some(l) => format!("no effect: the interval is built where waitDuration is written ({}), so this level's value is not used", chain[l].1),
                    None => "no effect without a waitDuration: Resilience4j keeps its default interval (500 ms, constant)".to_string(),
                };
                b.warn(key_of(p), Some(p.key_pos), why);
            }
        }
    }
    let (wait_prop, exp, rand, mult, max, factor) = match level {
        Some(l) => {
            let above = &chain[l..];
            (
                chain[l].0.get("waitDuration").cloned(),
                pick(above, "enableExponentialBackoff"),
                pick(above, "enableRandomizedWait"),
                pick(above, "exponentialBackoffMultiplier"),
                pick(above, "exponentialMaxWaitDuration"),
                chain[l].0.get("randomizedWaitFactor").cloned(),
            )
        }
        None => (None, None, None, None, None, None),
    };
    let flag = |b: &mut Builder, p: &Option<Prop>| {
        p.as_ref()
            .and_then(|p| boolean(b, p.node, &key_of(p)))
            .unwrap_or(false)
    };
    let (exp_on, rand_on) = (flag(b, &exp), flag(b, &rand));
    let (wait, wait_origin) = match &wait_prop {
        Some(p) => (
            duration(b, p).map_or(Duration::from_millis(500), |d| d.0),
            Origin {
                key: key_of(p),
                pos: Some(p.node.pos),
            },
        ),
        None => (
            Duration::from_millis(500),
            Origin {
                key: "waitDuration (default)".into(),
                pos: None,
            },
        ),
    };
    // Resilience4j builds a randomized or exponential interval function
    // from waitDuration.toMillis() (CommonRetryConfigurationProperties),
    // and IntervalFunction's `of(interval, backoff)` and `ofRandomized`
    // (resilience4j-core IntervalFunction.java) call `checkInterval`,
    // which throws IllegalArgumentException ("… millis is less than 1")
    // for an interval under 1 ms: the retry is never built. A constant
    // wait of 0 is fine (RetryConfig.Builder.waitDuration takes >= 0).
    if (exp_on || rand_on)
        && wait < Duration::from_millis(1)
        && let Some(p) = &wait_prop
    {
        let flag = if exp_on {
            "enableExponentialBackoff"
        } else {
            "enableRandomizedWait"
        };
        b.error(
            key_of(p),
            Some(p.key_pos),
            format!(
                "Resilience4j refuses it: with {flag} the waitDuration must be at least 1 ms (IntervalFunction.checkInterval throws IllegalArgumentException for an interval of {} millis, less than 1, and the application does not start)",
                wait.0 / 1_000_000
            ),
        );
    }
    b.set("retry.backoff.base", json!(wait.to_string()), wait_origin);
    b.absent("retry.backoff.throttle_base");
    let prop_origin = |p: &Prop| Origin {
        key: key_of(p),
        pos: Some(p.node.pos),
    };
    if exp_on {
        let o = exp.as_ref().map_or(
            Origin {
                key: "enableExponentialBackoff".into(),
                pos: None,
            },
            prop_origin,
        );
        b.set("retry.backoff.kind", json!("exponential"), o);
        b.set(
            "retry.backoff.truncate_ms",
            json!(true),
            Origin {
                key: "IntervalFunction: whole milliseconds at every step".into(),
                pos: None,
            },
        );
        match &mult {
            Some(p) => {
                if let Some(m) = number(b, p.node, &key_of(p), 1.0, 1e6) {
                    b.set("retry.backoff.multiplier", num(m), prop_origin(p));
                }
            }
            None => b.set(
                "retry.backoff.multiplier",
                json!(1.5),
                Origin {
                    key: "exponentialBackoffMultiplier (default)".into(),
                    pos: None,
                },
            ),
        }
        // The maximum counts only with the multiplier (and the factor, when
        // randomized): CommonRetryConfigurationProperties.
        let max_used = mult.is_some() && (!rand_on || factor.is_some());
        match (&max, max_used) {
            (Some(p), true) => {
                if let Some((d, _)) = duration(b, p) {
                    b.set("retry.backoff.cap", json!(d.to_string()), prop_origin(p));
                    if rand_on {
                        b.warn(key_of(p), Some(p.node.pos), "Resilience4j caps the randomized delay; stormsim randomizes the capped delay (the two differ only near the cap)");
                    }
                }
            }
            (Some(p), false) => {
                b.warn(key_of(p), Some(p.key_pos), "no effect: Resilience4j uses exponentialMaxWaitDuration only with exponentialBackoffMultiplier (and randomizedWaitFactor when randomized)");
                b.absent("retry.backoff.cap");
            }
            (None, _) => b.absent("retry.backoff.cap"),
        }
    } else {
        let o = exp.as_ref().map_or(
            Origin {
                key: "enableExponentialBackoff (default false)".into(),
                pos: None,
            },
            prop_origin,
        );
        b.set("retry.backoff.kind", json!("constant"), o);
        b.absent("retry.backoff.multiplier");
        b.absent("retry.backoff.cap");
        b.set(
            "retry.backoff.truncate_ms",
            json!(false),
            Origin {
                key: "constant".into(),
                pos: None,
            },
        );
        for p in [&mult, &max].into_iter().flatten() {
            b.warn(
                key_of(p),
                Some(p.key_pos),
                "no effect: enableExponentialBackoff is not true",
            );
        }
    }
    if rand_on {
        let f = match &factor {
            Some(p) => number(b, p.node, &key_of(p), 0.0, 1.0).map(|f| (f, prop_origin(p))),
            None => Some((
                0.5,
                Origin {
                    key: "randomizedWaitFactor (default)".into(),
                    pos: None,
                },
            )),
        };
        if let Some((f, o)) = f {
            b.set("retry.jitter", json!({ "proportional": num(f) }), o);
        }
    } else {
        let o = rand.as_ref().map_or(
            Origin {
                key: "enableRandomizedWait (default false)".into(),
                pos: None,
            },
            prop_origin,
        );
        b.set("retry.jitter", json!("none"), o);
    }
    let (list, o) = retry_on(
        b,
        pick(&chain, "retryExceptions").as_ref(),
        pick(&chain, "ignoreExceptions").as_ref(),
    );
    b.set("retry.retry_on", Value::Array(list), o);
    b.set(
        "retry.retry_after",
        json!("ignore"),
        Origin {
            key: "Resilience4j reads no Retry-After".into(),
            pos: None,
        },
    );
    for f in [
        "retry.retry_after_cap",
        "retry.retry_after_jitter",
        "retry.max_elapsed",
        "retry.budget",
    ] {
        b.absent(f);
    }
    read_breaker(b, &file, name);
    read_time_limiter(b, &file, name);
    read_bulkhead(b, &file, name);
    for module in ["ratelimiter", "thread-pool-bulkhead", "threadpoolbulkhead"] {
        if let Some(p) = file
            .props(&norm(module), "instances", name)
            .and_then(|p| p.by.values().next().cloned())
        {
            b.unmodelled(
                &key_of(&p),
                Some(p.key_pos),
                &format!("a Resilience4j {module} on the instance"),
            );
        }
    }
    let _ = MODULES;
}

fn read_breaker(b: &mut Builder, file: &File, name: &str) {
    let Some(chain) = file.chain(b, "circuitbreaker", name) else {
        b.absent("breaker");
        return;
    };
    let known = [
        "baseConfig",
        "failureRateThreshold",
        "slidingWindowType",
        "slidingWindowSize",
        "minimumNumberOfCalls",
        "waitDurationInOpenState",
        "permittedNumberOfCallsInHalfOpenState",
        "slowCallRateThreshold",
        "slowCallDurationThreshold",
        "automaticTransitionFromOpenToHalfOpenEnabled",
        "ignoreExceptions",
        "maxWaitDurationInHalfOpenState",
    ];
    for (props, _) in &chain {
        check_known(b, props, &known, HARMLESS, "circuit breaker");
    }
    let pick = |n: &str| pick(&chain, n);
    let o = |p: &Prop| Origin {
        key: key_of(p),
        pos: Some(p.node.pos),
    };
    let def = |n: &str| Origin {
        key: format!("{n} (default)"),
        pos: None,
    };
    let time = match pick("slidingWindowType") {
        Some(p) => match p.node.scalar().map(str::to_ascii_uppercase).as_deref() {
            Some("TIME_BASED") => {
                b.set("breaker.kind", json!("time"), o(&p));
                true
            }
            Some("COUNT_BASED") => {
                b.set("breaker.kind", json!("count"), o(&p));
                false
            }
            _ => {
                b.error(
                    key_of(&p),
                    Some(p.node.pos),
                    "expected COUNT_BASED or TIME_BASED",
                );
                false
            }
        },
        None => {
            b.set("breaker.kind", json!("count"), def("slidingWindowType"));
            false
        }
    };
    b.set(
        "breaker.scope",
        json!("instance"),
        Origin {
            key: "a Resilience4j registry per process".into(),
            pos: None,
        },
    );
    b.set(
        "breaker.blocks",
        json!("all"),
        Origin {
            key: "Resilience4j".into(),
            pos: None,
        },
    );
    match pick("failureRateThreshold") {
        Some(p) => {
            if let Some(v) = number(b, p.node, &key_of(&p), 0.001, 100.0) {
                b.set("breaker.failure_ratio", num(v / 100.0), o(&p));
            }
        }
        None => b.set(
            "breaker.failure_ratio",
            json!(0.5),
            def("failureRateThreshold"),
        ),
    }
    let size = match pick("slidingWindowSize") {
        Some(p) => uint(b, p.node, &key_of(&p), 1, 1_000_000).map(|n| (n, o(&p))),
        None => Some((100, def("slidingWindowSize"))),
    };
    if let Some((n, origin)) = size {
        if time {
            b.set(
                "breaker.window",
                json!(Duration::from_secs(n).to_string()),
                origin,
            );
            b.absent("breaker.window_calls");
        } else {
            b.set("breaker.window_calls", json!(n), origin);
            b.absent("breaker.window");
        }
    }
    match pick("minimumNumberOfCalls") {
        Some(p) => {
            if let Some(n) = uint(b, p.node, &key_of(&p), 1, 1_000_000) {
                b.set("breaker.min_calls", json!(n), o(&p));
            }
        }
        None => b.set("breaker.min_calls", json!(100), def("minimumNumberOfCalls")),
    }
    match pick("waitDurationInOpenState") {
        Some(p) => {
            if let Some((d, _)) = duration(b, &p) {
                b.set("breaker.open_for", json!(d.to_string()), o(&p));
            }
        }
        None => b.set(
            "breaker.open_for",
            json!("1m"),
            def("waitDurationInOpenState"),
        ),
    }
    match pick("permittedNumberOfCallsInHalfOpenState") {
        Some(p) => {
            if let Some(n) = uint(b, p.node, &key_of(&p), 1, 1_000_000) {
                b.set("breaker.probes", json!(n), o(&p));
            }
        }
        None => b.set(
            "breaker.probes",
            json!(10),
            def("permittedNumberOfCallsInHalfOpenState"),
        ),
    }
    if let Some(p) = pick("slowCallRateThreshold")
        && number(b, p.node, &key_of(&p), 0.0, 100.0).is_some_and(|v| v < 100.0)
    {
        b.unmodelled(
            &key_of(&p),
            Some(p.node.pos),
            "a breaker that opens on slow calls",
        );
    }
    if let Some(p) = pick("maxWaitDurationInHalfOpenState")
        && duration(b, &p).is_some_and(|d| d.0.0 > 0)
    {
        b.unmodelled(
            &key_of(&p),
            Some(p.node.pos),
            "a limit on the time spent half-open",
        );
    }
    if let Some(p) = pick("automaticTransitionFromOpenToHalfOpenEnabled") {
        b.warn(key_of(&p), Some(p.key_pos), "no difference here: the next call after open_for finds the breaker half-open either way");
    }
    if let Some(p) = pick("ignoreExceptions") {
        for (class, pos) in classes(&p) {
            if class_outcomes(&class).is_some() {
                b.unmodelled(&key_of(&p), Some(pos), &format!("the breaker not counting `{class}` (stormsim's breaker counts every failed attempt)"));
            } else {
                b.warn(
                    key_of(&p),
                    Some(pos),
                    format!(
                        "`{class}`: an application exception the simulated dependency never raises"
                    ),
                );
            }
        }
    }
}

fn read_time_limiter(b: &mut Builder, file: &File, name: &str) {
    let Some(chain) = file.chain(b, "timelimiter", name) else {
        b.absent("timeout");
        return;
    };
    for (props, _) in &chain {
        check_known(
            b,
            props,
            &["baseConfig", "timeoutDuration", "cancelRunningFuture"],
            HARMLESS,
            "time limiter",
        );
    }
    let pick = |n: &str| pick(&chain, n);
    match pick("timeoutDuration") {
        Some(p) => {
            if let Some((d, _)) = duration(b, &p) {
                b.set(
                    "timeout",
                    json!(d.to_string()),
                    Origin {
                        key: key_of(&p),
                        pos: Some(p.node.pos),
                    },
                );
            }
        }
        // TimeLimiterConfig: 1 s.
        None => b.set(
            "timeout",
            json!("1s"),
            Origin {
                key: "timeoutDuration (default)".into(),
                pos: None,
            },
        ),
    }
    if let Some(p) = pick("cancelRunningFuture") {
        b.warn(
            key_of(&p),
            Some(p.key_pos),
            "not simulated: cancelling the future does not stop the request already sent",
        );
    }
}

fn read_bulkhead(b: &mut Builder, file: &File, name: &str) {
    let Some(chain) = file.chain(b, "bulkhead", name) else {
        b.absent("bulkhead");
        return;
    };
    for (props, _) in &chain {
        check_known(
            b,
            props,
            &["baseConfig", "maxConcurrentCalls", "maxWaitDuration"],
            HARMLESS,
            "bulkhead",
        );
    }
    let pick = |n: &str| pick(&chain, n);
    match pick("maxConcurrentCalls") {
        Some(p) => {
            if let Some(n) = uint(b, p.node, &key_of(&p), 1, u64::from(u32::MAX)) {
                b.set(
                    "bulkhead.max_concurrent",
                    json!(n),
                    Origin {
                        key: key_of(&p),
                        pos: Some(p.node.pos),
                    },
                );
            }
        }
        // BulkheadConfig: 25.
        None => b.set(
            "bulkhead.max_concurrent",
            json!(25),
            Origin {
                key: "maxConcurrentCalls (default)".into(),
                pos: None,
            },
        ),
    }
    if let Some(p) = pick("maxWaitDuration")
        && duration(b, &p).is_some_and(|d| d.0.0 > 0)
    {
        b.unmodelled(&key_of(&p), Some(p.node.pos), "a bulkhead that waits a while for a slot (stormsim's bulkhead refuses, or waits without a time limit)");
    }
    b.set(
        "bulkhead.max_queue",
        json!(0),
        Origin {
            key: "Resilience4j".into(),
            pos: None,
        },
    );
    b.set(
        "bulkhead.when_full",
        json!("reject"),
        Origin {
            key: "maxWaitDuration 0: refused at once".into(),
            pos: None,
        },
    );
    b.set(
        "bulkhead.scope",
        json!("instance"),
        Origin {
            key: "a Resilience4j registry per process".into(),
            pos: None,
        },
    );
}

// ---------------------------------------------------------------- export

/// The property name in the file's spelling (kebab-case when the instance
/// writes its keys so).
fn spelled(own: &Props, camel: &str) -> String {
    let kebab = own
        .by
        .values()
        .any(|p| p.segs.last().is_some_and(|s| s.contains('-')));
    if !kebab {
        return camel.to_string();
    }
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The Spring duration whose style a written one copies, and whether it
/// is quoted: that of the value it replaces (the instance's own `prop`), else of the
/// value it overrides (`prop` along the `baseConfig` chain: the new key
/// follows the style the file already uses for it), else of the
/// instance's other durations, else of the file's first Resilience4j
/// duration (`1s`, `500ms`; a bare number is milliseconds and `PT1S`
/// ISO-8601: Spring Boot's `DurationStyle`), else `500ms`. Only duration
/// properties count (a `maxAttempts: 2` is no duration).
fn style_of<'a>(
    file: &'a File,
    chain: &'a [(Props, String)],
    prop: &str,
) -> Option<(&'a str, bool)> {
    let is_duration = |p: &&Prop| {
        p.segs.last().is_some_and(|s| norm(s).contains("duration"))
            && p.node.scalar().and_then(parse_spring).is_some()
    };
    let own = chain.first().map(|(p, _)| p);
    chain
        .iter()
        .find_map(|(p, _)| p.get(prop).filter(is_duration))
        .or_else(|| own.and_then(|o| o.by.values().find(is_duration)))
        .or_else(|| {
            file.index.props.iter().find(|p| {
                p.segs.first().is_some_and(|s| norm(s) == "resilience4j") && is_duration(p)
            })
        })
        .and_then(|p| {
            let quoted = matches!(p.node.style(), Some(Style::Single | Style::Double));
            p.node.scalar().map(|t| (t, quoted))
        })
}

/// `d` as the literal of `prop`, in the style [`style_of`] finds
/// ([`spring_like`]): a bare number of milliseconds stays a bare number
/// (Spring Boot binds it as milliseconds), unless the file quotes it.
fn duration_lit(file: &File, chain: &[(Props, String)], prop: &str, d: Duration) -> Lit {
    let sample = style_of(file, chain, prop);
    let text = spring_like(d, sample.map(|s| s.0));
    if !sample.is_some_and(|s| s.1) && text.chars().all(|c| c.is_ascii_digit()) {
        Lit::Bare(text)
    } else {
        Lit::Str(text)
    }
}

/// Writes `lit` as `prop` of the module's instance `name`.
fn put_prop<'d>(
    w: &mut Writer<'d>,
    file: &File<'d>,
    module: &str,
    name: &str,
    prop: &str,
    lit: Lit,
) -> Result<(), String> {
    let own = file.props(module, "instances", name).unwrap_or_default();
    if let Some(p) = own.get(prop) {
        if let Some(t) = p.node.scalar().filter(|t| t.contains("${")) {
            return Err(format!(
                "{} is a Spring placeholder (`{t}`): stormsim does not replace it by a literal, which would drop the environment's override; change its default by hand",
                key_of(p)
            ));
        }
        if p.node.aliased {
            // From a `<<` merge key into the instance's own mapping: a
            // key written in the instance itself overrides the merged
            // one (YAML's merge rule), and the anchor, which others may
            // merge too, stays as it is.
            if let Some((map, key)) = file.instance_map(module, name)
                && !map.aliased
                && p.segs.len() == 5
            {
                return w.add(map, &key, &p.segs[4], lit);
            }
            return Err(format!(
                "{} comes from a YAML alias or merge key; change the anchor by hand",
                key_of(p)
            ));
        }
        return w.put_node(p.node, &lit);
    }
    let Some((map, key)) = file.instance_map(module, name) else {
        return Err(format!(
            "resilience4j.{module}.instances.{name} is not a mapping of its own in this file: add {prop} by hand"
        ));
    };
    let spelled = spelled(&own, prop);
    w.put(map, &key, &[spelled.as_str()], lit)?;
    if let Some(n) = inherited_note(file, module, name, prop) {
        w.note(n);
    }
    Ok(())
}

/// The note for `prop` written into the instance `name` when it had it
/// from a base config (`baseConfig`, else `configs.default`): the value
/// goes into the instance, never into the base, which other instances may
/// read too; the note says so and names those that take `prop` from it.
fn inherited_note(file: &File, module: &str, name: &str, prop: &str) -> Option<String> {
    let none = Selector::default();
    let mut scratch = Builder::new(&none);
    let chain = file.chain(&mut scratch, module, name)?;
    let (base, p) = chain
        .iter()
        .skip(1)
        .find_map(|(props, label)| props.get(prop).map(|p| (label.clone(), p.node.pos.0)))?;
    let readers: Vec<String> = file
        .names(module, "instances")
        .into_iter()
        .filter(|other| other != name)
        .filter(|other| {
            file.chain(&mut scratch, module, other).is_some_and(|c| {
                c.iter()
                    .find(|(props, _)| props.get(prop).is_some())
                    .is_some_and(|(_, l)| *l == base)
            })
        })
        .map(|other| format!("`{}`", crate::escape::escape(&other)))
        .collect();
    let others = if readers.is_empty() {
        String::new()
    } else {
        format!(
            ": {} {}, which also {} {prop} from it, {} the old value",
            if readers.len() == 1 {
                "the instance"
            } else {
                "the instances"
            },
            readers.join(", "),
            if readers.len() == 1 { "takes" } else { "take" },
            if readers.len() == 1 { "keeps" } else { "keep" },
        )
    };
    Some(format!(
        "resilience4j.{module}.instances.{name} inherited {prop} from resilience4j.{module}.configs.{base} (line {p}); the new value is written into the instance, so configs.{base} is not changed{others}"
    ))
}

/// Removes the instance's own `prop`, a key the exported policy makes
/// wrong (it would stay in the file with no effect, saying another
/// policy). One the instance inherits, or one a `<<` merge key brings in,
/// is shared with other instances and stays, with a note.
fn drop_prop<'d>(
    w: &mut Writer<'d>,
    file: &File<'d>,
    module: &str,
    name: &str,
    prop: &str,
) -> Result<(), String> {
    let own = file.props(module, "instances", name).unwrap_or_default();
    match own.get(prop) {
        Some(p) if p.node.aliased => {
            w.note(format!(
                "{} comes from a YAML merge key and no longer applies to resilience4j.{module}.instances.{name}; it stays in the anchor, which other instances may read",
                key_of(p)
            ));
            Ok(())
        }
        Some(p) => w.remove(p.node, &key_of(p)),
        None => Ok(()),
    }
}

pub(crate) fn write(
    w: &mut Writer<'_>,
    sel: &Selector,
    wanted: &Map<String, Value>,
    changed: &[String],
) {
    let doc = w.doc;
    let name = sel.instance.as_deref().unwrap_or("");
    let mut scratch = Builder::new(sel);
    let file = File::new(doc, &mut scratch);
    let own = file.props("retry", "instances", name).unwrap_or_default();
    let chain =
        |module: &str, scratch: &mut Builder| file.chain(scratch, module, name).unwrap_or_default();
    let retry_chain = chain("retry", &mut scratch);
    let limiter_chain = chain("timelimiter", &mut scratch);
    let breaker_chain = chain("circuitbreaker", &mut scratch);
    let want = |p: &str| get_path(wanted, p).filter(|v| !v.is_null());
    let dur = |p: &str| {
        want(p)
            .and_then(Value::as_str)
            .and_then(|s| crate::scenario::units::parse_duration(s).ok())
    };
    let exp = want("retry.backoff.kind").and_then(Value::as_str) == Some("exponential");
    // Resilience4j builds the interval function at the level where
    // waitDuration is written, with that level's randomizedWaitFactor
    // (`read`): a flag, multiplier, maximum or factor written into an
    // instance that inherits its waitDuration would not be used. The wait
    // goes into the instance too (its value as tuned, the inherited one
    // when not tuned), so that they are.
    let interval_leaf = |l: &str| {
        l == "retry.backoff.kind"
            || (exp && (l == "retry.backoff.multiplier" || l == "retry.backoff.cap"))
            || l.starts_with("retry.jitter")
    };
    if own.get("waitDuration").is_none()
        && changed.iter().any(|l| interval_leaf(l))
        && !changed.iter().any(|l| l == "retry.backoff.base")
        && let Some(d) = dur("retry.backoff.base")
    {
        let lit = duration_lit(&file, &retry_chain, "waitDuration", d);
        match put_prop(w, &file, "retry", name, "waitDuration", lit) {
            Ok(()) => w.note(format!(
                "resilience4j.retry.instances.{name} inherited its waitDuration ({d}); it is written into the instance, because Resilience4j uses the backoff and randomized-wait settings of the level where waitDuration is written"
            )),
            Err(e) => {
                w.refuse_leaf("retry.backoff.base", &e).ok();
            }
        }
    }
    for leaf in changed {
        let leaf = leaf.as_str();
        let r = match leaf {
            "retry.max_attempts" => match want(leaf).and_then(Value::as_u64) {
                Some(n) => put_prop(w, &file, "retry", name, "maxAttempts", Lit::Bare(n.to_string())),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "retry.backoff.base" => match dur(leaf) {
                Some(d) => put_prop(w, &file, "retry", name, "waitDuration", duration_lit(&file, &retry_chain, "waitDuration", d)),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "retry.backoff.kind" => match want(leaf).and_then(Value::as_str) {
                Some("exponential") => put_prop(w, &file, "retry", name, "enableExponentialBackoff", Lit::Bare("true".into())),
                Some("constant") => {
                    // The multiplier and maximum of an exponential backoff
                    // no longer apply: they go, so that the file says the
                    // constant wait it now gives.
                    let mut res = put_prop(w, &file, "retry", name, "enableExponentialBackoff", Lit::Bare("false".into()));
                    for p in ["exponentialBackoffMultiplier", "exponentialMaxWaitDuration"] {
                        if res.is_ok() {
                            res = drop_prop(w, &file, "retry", name, p);
                        }
                    }
                    res
                }
                _ => w.refuse_leaf(leaf, "Resilience4j's backoff is constant or exponential"),
            },
            "retry.backoff.multiplier" if exp => match want(leaf).and_then(Value::as_f64) {
                Some(m) => put_prop(w, &file, "retry", name, "exponentialBackoffMultiplier", Lit::Bare(fmt_num(m))),
                None => w.refuse_leaf(leaf, "missing"),
            },
            "retry.backoff.cap" if exp => match dur(leaf) {
                Some(d) => {
                    let m = want("retry.backoff.multiplier").and_then(Value::as_f64).unwrap_or(1.5);
                    // Without its own multiplier Resilience4j ignores the maximum.
                    let mut res = put_prop(w, &file, "retry", name, "exponentialBackoffMultiplier", Lit::Bare(fmt_num(m)));
                    if res.is_ok() {
                        res = put_prop(w, &file, "retry", name, "exponentialMaxWaitDuration", duration_lit(&file, &retry_chain, "exponentialMaxWaitDuration", d));
                    }
                    res
                }
                // No maximum: the instance's own goes (an inherited one
                // cannot be taken away from this instance alone).
                None => match own.get("exponentialMaxWaitDuration") {
                    Some(_) => drop_prop(w, &file, "retry", name, "exponentialMaxWaitDuration"),
                    None => w.refuse_leaf(leaf, "the instance inherits its exponentialMaxWaitDuration: remove it from the config it comes from by hand, or give the instance a maximum"),
                },
            },
            "retry.backoff.multiplier" | "retry.backoff.cap" => Ok(()),
            "retry.backoff.truncate_ms" => Ok(()),
            "retry.jitter" | "retry.jitter.proportional" => match want("retry.jitter") {
                Some(Value::String(s)) if s == "none" => {
                    // Without a randomized wait its factor no longer applies.
                    let res = put_prop(w, &file, "retry", name, "enableRandomizedWait", Lit::Bare("false".into()));
                    res.and_then(|()| drop_prop(w, &file, "retry", name, "randomizedWaitFactor"))
                }
                Some(Value::Object(m)) if m.contains_key("proportional") => {
                    let f = m.get("proportional").and_then(Value::as_f64).unwrap_or(0.5);
                    let mut res = put_prop(w, &file, "retry", name, "enableRandomizedWait", Lit::Bare("true".into()));
                    if res.is_ok() {
                        res = put_prop(w, &file, "retry", name, "randomizedWaitFactor", Lit::Bare(fmt_num(f)));
                    }
                    res
                }
                _ => w.refuse_leaf(leaf, "Resilience4j's jitter is a randomized wait of ± a factor (`{ proportional: F }`) or none"),
            },
            "retry.retry_on" => w.refuse_leaf(leaf, "Resilience4j retries exception classes: change retryExceptions by hand"),
            "timeout" => match dur(leaf) {
                Some(d) if file.props("timelimiter", "instances", name).is_some() => {
                    put_prop(w, &file, "timelimiter", name, "timeoutDuration", duration_lit(&file, &limiter_chain, "timeoutDuration", d))
                }
                _ => w.refuse_leaf(leaf, &format!("the instance has no time limiter (resilience4j.timelimiter.instances.{name}): add one by hand")),
            },
            "bulkhead.max_concurrent" => match want(leaf).and_then(Value::as_u64) {
                Some(n) if file.props("bulkhead", "instances", name).is_some() => {
                    put_prop(w, &file, "bulkhead", name, "maxConcurrentCalls", Lit::Bare(n.to_string()))
                }
                _ => w.refuse_leaf(leaf, &format!("the instance has no bulkhead (resilience4j.bulkhead.instances.{name}): add one by hand")),
            },
            l if l.starts_with("breaker.") && file.props("circuitbreaker", "instances", name).is_some() => {
                let time = want("breaker.kind").and_then(Value::as_str) == Some("time");
                match l {
                    "breaker.failure_ratio" => match want(l).and_then(Value::as_f64) {
                        Some(r) => put_prop(w, &file, "circuitbreaker", name, "failureRateThreshold", Lit::Bare(fmt_num((r * 100.0 * 1e9).round() / 1e9))),
                        None => w.refuse_leaf(l, "missing"),
                    },
                    "breaker.window_calls" if !time => match want(l).and_then(Value::as_u64) {
                        Some(n) => put_prop(w, &file, "circuitbreaker", name, "slidingWindowSize", Lit::Bare(n.to_string())),
                        None => Ok(()),
                    },
                    "breaker.window" if time => match dur(l) {
                        Some(d) if d.0 % 1_000_000_000 == 0 => {
                            put_prop(w, &file, "circuitbreaker", name, "slidingWindowSize", Lit::Bare((d.0 / 1_000_000_000).to_string()))
                        }
                        _ => w.refuse_leaf(l, "a TIME_BASED window is a whole number of seconds"),
                    },
                    "breaker.min_calls" => match want(l).and_then(Value::as_u64) {
                        Some(n) => put_prop(w, &file, "circuitbreaker", name, "minimumNumberOfCalls", Lit::Bare(n.to_string())),
                        None => w.refuse_leaf(l, "missing"),
                    },
                    "breaker.open_for" => match dur(l) {
                        Some(d) => put_prop(w, &file, "circuitbreaker", name, "waitDurationInOpenState", duration_lit(&file, &breaker_chain, "waitDurationInOpenState", d)),
                        None => w.refuse_leaf(l, "missing"),
                    },
                    "breaker.probes" => match want(l).and_then(Value::as_u64) {
                        Some(n) => put_prop(w, &file, "circuitbreaker", name, "permittedNumberOfCallsInHalfOpenState", Lit::Bare(n.to_string())),
                        None => w.refuse_leaf(l, "missing"),
                    },
                    "breaker.kind" => put_prop(
                        w,
                        &file,
                        "circuitbreaker",
                        name,
                        "slidingWindowType",
                        Lit::Str(if time { "TIME_BASED" } else { "COUNT_BASED" }.into()),
                    ),
                    "breaker.window" | "breaker.window_calls" => Ok(()),
                    _ => w.refuse_leaf(l, "Resilience4j's circuit breaker has no such setting"),
                }
            }
            l if l.starts_with("breaker") => w.refuse_leaf(l, &format!("the instance has no circuit breaker (resilience4j.circuitbreaker.instances.{name}): add one by hand")),
            _ => w.refuse_leaf(leaf, "Resilience4j has no such setting"),
        };
        if let Err(e) = r {
            w.refuse_leaf(leaf, &e).ok();
        }
    }
}

/// A `--set` style export that switches the backoff's kind without
/// giving `retry.backoff.truncate_ms`: Resilience4j's kind decides it (its
/// exponential IntervalFunction works in whole milliseconds at every
/// step; a constant wait is used as written), so it is taken from the
/// kind rather than required. The note says so, when it changes.
pub(crate) fn implied_truncation(want: &mut Map<String, Value>) -> Option<String> {
    let backoff = want
        .get_mut("retry")
        .and_then(Value::as_object_mut)
        .and_then(|r| r.get_mut("backoff"))
        .and_then(Value::as_object_mut)?;
    let exponential = match backoff.get("kind").and_then(Value::as_str) {
        Some("exponential") => true,
        Some("constant") => false,
        _ => return None,
    };
    let now = backoff
        .get("truncate_ms")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if now == exponential {
        return None;
    }
    if exponential {
        backoff.insert("truncate_ms".into(), Value::Bool(true));
        Some("Resilience4j's exponential backoff works in whole milliseconds at every step: taken as retry.backoff.truncate_ms: true".into())
    } else {
        backoff.remove("truncate_ms");
        None
    }
}
