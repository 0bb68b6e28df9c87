//! The scenario file format, as serde types. Field names here are the
//! contract of shared/DESIGN.md: rename none, add freely. Every struct
//! denies unknown fields so a typo is an error, never a silent default.
//!
//! Defaults are filled by serde so that `scenario.resolved.yaml` (the
//! re-serialised scenario) shows every value a run used.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::units::{Duration, Rate};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Also the default output folder name.
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time of one run.
    pub duration: Duration,
    /// Time-series resolution.
    #[serde(default = "default_bucket")]
    pub bucket: Duration,
    /// Seeds per variant, derived from `seed`.
    #[serde(default = "one")]
    pub replicates: u32,
    pub clients: Clients,
    /// Outermost first; empty means clients call the dependency directly.
    #[serde(default)]
    pub layers: Vec<Layer>,
    pub dependency: Dependency,
    /// Compared side by side; each overrides the base scenario.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    #[serde(default)]
    pub analysis: Analysis,
    #[serde(default)]
    pub limits: Limits,
}

fn default_seed() -> u64 {
    1
}
fn default_bucket() -> Duration {
    Duration::from_secs(1)
}
fn one() -> u32 {
    1
}

// ---------------------------------------------------------------- clients

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Clients {
    pub arrival: Arrival,
    /// The offered rate over time, piecewise; replaces `arrival.rate` from
    /// the first point on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<SchedulePoint>,
    /// The user's budget for one logical request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Duration>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalKind {
    Poisson,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Arrival {
    pub kind: ArrivalKind,
    pub rate: Rate,
}

/// One point of the rate schedule. Exactly one of:
/// - `{ at, rate }`: a step to `rate` at `at`;
/// - `{ at, rate, for }`: a spike: `rate` from `at` for `for`, then back to
///   the rate before it;
/// - `{ at, ramp_to, by }`: a linear ramp from the current rate at `at` to
///   `ramp_to` at `by`, held after.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SchedulePoint {
    pub at: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
    pub for_: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_to: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Duration>,
}

// ----------------------------------------------------------------- layers

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    pub name: String,
    /// Per-attempt timeout; absent means the layer waits as long as its
    /// caller lets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Absent means no retries (one attempt).
    #[serde(default)]
    pub retry: Retry,
    /// `propagate`: this layer never starts an attempt or a backoff sleep
    /// that outlives its caller's attempt.
    #[serde(default)]
    pub deadline: DeadlineMode,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DeadlineMode {
    #[default]
    None,
    Propagate,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// Total attempts, the first included.
    #[serde(default = "one")]
    pub max_attempts: u32,
    #[serde(default)]
    pub backoff: Backoff,
    #[serde(default)]
    pub jitter: Jitter,
    /// Outcomes that are retried; everything else fails fast.
    #[serde(default = "default_retry_on")]
    pub retry_on: Vec<RetryOn>,
    #[serde(default)]
    pub retry_after: RetryAfterMode,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_attempts: 1,
            backoff: Backoff::default(),
            jitter: Jitter::default(),
            retry_on: default_retry_on(),
            retry_after: RetryAfterMode::default(),
        }
    }
}

/// The playbook's transient set (shared/reference/retry-backoff-patterns.md,
/// "Classify the error"): timeouts, connection failures, 429 and 5xx
/// gateway/unavailable codes. 408/425 are omitted: the dependency never
/// returns them.
pub fn default_retry_on() -> Vec<RetryOn> {
    vec![
        RetryOn::Timeout,
        RetryOn::Connection,
        RetryOn::Status(429),
        RetryOn::Status(500),
        RetryOn::Status(502),
        RetryOn::Status(503),
        RetryOn::Status(504),
    ]
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BackoffKind {
    Constant,
    Linear,
    Exponential,
}

/// `{ kind: exponential, base, multiplier, cap }`, `{ kind: constant, base }`
/// or `{ kind: linear, base, cap }`. Delay before retry n (n = 1 is the
/// first retry): constant `base`; linear `min(cap, base * n)`; exponential
/// `min(cap, base * multiplier^(n-1))`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub base: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Duration>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            base: Duration::from_millis(100),
            multiplier: Some(2.0),
            cap: Some(Duration::from_secs(5)),
        }
    }
}

/// `none | full | equal | decorrelated | { proportional: FACTOR }`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    None,
    #[default]
    Full,
    Equal,
    Decorrelated,
    Proportional(f64),
}

/// One retryable outcome: `timeout`, `connection`, or an HTTP status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryOn {
    Timeout,
    Connection,
    Status(u16),
}

impl Serialize for RetryOn {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RetryOn::Timeout => s.serialize_str("timeout"),
            RetryOn::Connection => s.serialize_str("connection"),
            RetryOn::Status(c) => s.serialize_u16(*c),
        }
    }
}

impl<'de> Deserialize<'de> for RetryOn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RetryOn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`timeout`, `connection` or an HTTP status code (100-599)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RetryOn, E> {
                match v {
                    "timeout" => Ok(RetryOn::Timeout),
                    "connection" => Ok(RetryOn::Connection),
                    other => match other.parse::<u64>() {
                        Ok(n) => self.visit_u64(n),
                        Err(_) => Err(E::custom(format!(
                            "unknown outcome `{other}`; expected `timeout`, `connection` or an HTTP status code (100-599)"
                        ))),
                    },
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RetryOn, E> {
                if (100..=599).contains(&v) {
                    Ok(RetryOn::Status(v as u16))
                } else {
                    Err(E::custom(format!(
                        "status `{v}` is not an HTTP status code; expected 100-599"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RetryOn, E> {
                if v < 0 {
                    Err(E::custom(format!(
                        "status `{v}` is not an HTTP status code; expected 100-599"
                    )))
                } else {
                    self.visit_u64(v as u64)
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RetryAfterMode {
    /// Wait at least the Retry-After value before the next attempt; if it
    /// ends past the deadline, fail now with `retry_after_exceeds_budget`.
    #[default]
    Honor,
    Ignore,
}

// ------------------------------------------------------------- dependency

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    /// Workers serving requests in parallel.
    pub concurrency: u32,
    pub service_time: ServiceTime,
    #[serde(default)]
    pub queue: Queue,
    #[serde(default)]
    pub overload: Overload,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incidents: Vec<Incident>,
    #[serde(default)]
    pub recovery: Recovery,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DistKind {
    Constant,
    Exponential,
    Lognormal,
    Uniform,
}

/// `{ dist: constant, value }`, `{ dist: exponential, mean }`,
/// `{ dist: lognormal, median, p99 }` or `{ dist: uniform, min, max }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServiceTime {
    pub dist: DistKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Duration>,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    #[default]
    Fifo,
    Lifo,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Queue {
    /// Requests waiting for a worker (not counting those in service).
    #[serde(default = "default_queue_capacity")]
    pub capacity: u32,
    #[serde(default)]
    pub discipline: Discipline,
    /// A request that waited longer than this is dropped when it reaches
    /// the head of the queue, answered with `timeout_status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    #[serde(default = "default_503")]
    pub timeout_status: u16,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            capacity: default_queue_capacity(),
            discipline: Discipline::Fifo,
            timeout: None,
            timeout_status: 503,
        }
    }
}

fn default_queue_capacity() -> u32 {
    1024
}
fn default_503() -> u16 {
    503
}

/// How the dependency sheds a request when its queue is full.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Overload {
    #[serde(default = "default_503")]
    pub status: u16,
    /// Sent with the shed response (typically with 429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Duration>,
}

impl Default for Overload {
    fn default() -> Self {
        Overload {
            status: 503,
            retry_after: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IncidentKind {
    /// Fast connection errors; work in progress is lost.
    Down,
    /// Requests hang until their caller times out.
    Blackhole,
    /// Capacity times `capacity` (a fraction).
    Brownout,
    /// A fraction `rate` of requests fail at once with `status`.
    Errors,
    /// `add` is added to every response.
    Latency,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Incident {
    pub kind: IncidentKind,
    pub start: Duration,
    pub end: Duration,
    /// brownout: remaining fraction of capacity, in (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<f64>,
    /// errors: fraction of requests that fail, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// errors: the status they fail with (default 503).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// latency: delay added to each response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add: Option<Duration>,
}

/// After an incident that removes capacity (down, blackhole, brownout),
/// capacity ramps back linearly from `from` to 1 over `warmup`, as when
/// caches are cold.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Recovery {
    #[serde(default)]
    pub warmup: Duration,
    /// Fraction of capacity right after the incident ends.
    #[serde(default = "default_warmup_from")]
    pub from: f64,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            warmup: Duration(0),
            from: default_warmup_from(),
        }
    }
}

fn default_warmup_from() -> f64 {
    0.1
}

// --------------------------------------------------------------- variants

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Dotted path (`layers.api.retry.jitter`) to a value that replaces the
    /// base scenario's value in this variant. Applied in file order.
    #[serde(default)]
    pub set: serde_json::Map<String, serde_json::Value>,
}

// --------------------------------------------------------------- analysis

/// How the summary judges recovery (see README, "Recovery and
/// metastability").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Analysis {
    /// A window is healthy when its success ratio (goodput ÷ offered) is at
    /// least this fraction of the pre-trigger ratio.
    #[serde(default = "default_recovery_threshold")]
    pub recovery_threshold: f64,
    /// Length of the sliding window that judges health.
    #[serde(default = "default_recovery_window")]
    pub recovery_window: Duration,
    /// When the trigger ends. Default: the end of the last incident, or the
    /// last schedule change when there is no incident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_end: Option<Duration>,
}

impl Default for Analysis {
    fn default() -> Self {
        Analysis {
            recovery_threshold: default_recovery_threshold(),
            recovery_window: default_recovery_window(),
            trigger_end: None,
        }
    }
}

fn default_recovery_threshold() -> f64 {
    0.9
}
fn default_recovery_window() -> Duration {
    Duration::from_secs(5)
}

// ----------------------------------------------------------------- limits

/// Guard rails: a run that reaches one stops and is marked aborted.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Events handled in one run.
    #[serde(default = "default_max_events")]
    pub max_events: u64,
    /// Logical requests, calls and dependency requests alive at once.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_events: default_max_events(),
            max_in_flight: default_max_in_flight(),
        }
    }
}

fn default_max_events() -> u64 {
    2_000_000_000
}
fn default_max_in_flight() -> u64 {
    20_000_000
}
