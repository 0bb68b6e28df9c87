//! The scenario file format, as serde types. Field names here are the
//! contract the README documents ("Scenario format" and the sections after
//! it): rename none, add freely. Every struct
//! denies unknown fields so a typo is an error, never a silent default.
//!
//! Defaults are filled by serde so that `scenario.resolved.yaml` (the
//! re-serialised scenario) shows every value a run used.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::graph::{Call, Service};
use super::priority::{PriorityClass, ShedByPriority};
use super::units::{Duration, Rate};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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
    /// Time-series resolution; absent: derived from `duration`
    /// ([`Scenario::bucket`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Duration>,
    /// Seeds per variant, derived from `seed`.
    #[serde(default = "one")]
    pub replicates: u32,
    /// The fleet (absent with an `occ` workload).
    #[serde(default, skip_serializing_if = "Clients::is_unset")]
    pub clients: Clients,
    /// A graph of services (instead of `layers` and `dependency`): the
    /// clients call `clients.calls`, and each service its `calls`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<Service>,
    /// Outermost first; empty means clients call the dependency directly.
    #[serde(default)]
    pub layers: Vec<Layer>,
    /// The capacity-limited server (absent with an `occ` workload).
    #[serde(default, skip_serializing_if = "Dependency::is_unset")]
    pub dependency: Dependency,
    /// The optimistic-concurrency workload of AWS's "Exponential Backoff
    /// And Jitter" experiment instead of clients, layers and dependency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occ: Option<Occ>,
    /// Message consumers: the clients publish messages to a queue, and a
    /// pool of consumers handles them (each handling is one logical request
    /// through the layers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumers: Option<Consumers>,
    /// Compared side by side; each overrides the base scenario. A list of
    /// `{ name, description, set }`, or a mapping of each variant's name
    /// to its overrides (`{ no-retries: { layers.api.retry.max_attempts: 1 } }`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "variants_list"
    )]
    #[schemars(schema_with = "variants_schema")]
    pub variants: Vec<Variant>,
    /// A grid over dotted paths: every combination of the listed values
    /// (cartesian product, first path slowest) is a variant, applied to
    /// each explicit variant. The values appear as `sweep.<path>` columns.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub sweep: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub analysis: Analysis,
    /// Service-level objectives every run is judged against (`slo_pass`,
    /// `slo_failed`); absent: no verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<super::slo::Slo>,
    /// What `stormsim tune` searches, for which figure, in how many runs;
    /// `stormsim run` ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<super::tune::Tune>,
    #[serde(default)]
    pub limits: Limits,
}

fn default_seed() -> u64 {
    1
}
impl Scenario {
    /// The time-series bucket: the one written, or else 1 s, shortened to
    /// the run when the run is shorter, lengthened to whole seconds that
    /// keep the run within `MAX_BUCKETS` buckets when it is longer; and
    /// shortened to a written `analysis.recovery_window` shorter than that,
    /// when the run still fits in `MAX_BUCKETS` buckets of it (a default
    /// never contradicts a valid choice).
    pub fn bucket(&self) -> Duration {
        self.bucket.unwrap_or_else(|| {
            let d = default_bucket(self.duration);
            let max = crate::metrics::recorder::MAX_BUCKETS as u64;
            match self.analysis.recovery_window {
                Some(w) if w.ns() > 0 && w < d && w.ns() >= self.duration.ns().div_ceil(max) => w,
                _ => d,
            }
        })
    }

    /// The recovery window: the one written, or else 5 s, or one bucket
    /// when a bucket is longer.
    pub fn recovery_window(&self) -> Duration {
        self.analysis
            .recovery_window
            .unwrap_or_else(|| Duration::from_secs(5).max(self.bucket()))
    }
}

/// The bucket of a run of `duration` when none is written (see
/// [`Scenario::bucket`]).
pub fn default_bucket(duration: Duration) -> Duration {
    let max = crate::metrics::recorder::MAX_BUCKETS as u64;
    let secs = duration
        .ns()
        .div_ceil(max)
        .div_ceil(crate::engine::NS_PER_S)
        .max(1);
    let bucket = Duration(secs.saturating_mul(crate::engine::NS_PER_S));
    if duration.ns() > 0 && duration < bucket {
        duration
    } else {
        bucket
    }
}
pub(crate) fn one() -> u32 {
    1
}

// -------------------------------------------------------------------- occ

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OccPolicyName {
    NoBackoff,
    Exponential,
    FullJitter,
    EqualJitter,
    Decorrelated,
}

/// N clients each update one contended row once (read the version, write
/// with it; the write fails if the version moved) and back off after a
/// failed write: docs/sources/experiments.md §1. Defaults are the
/// blog's: base 5 ms, cap 2 s, every message |Normal(10 ms, 2 ms)|.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Occ {
    pub clients: u32,
    pub policy: OccPolicyName,
    /// Absent: the blog's 5 ms, or `cap` when that is shorter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Duration>,
    /// Absent: the blog's 2 s, or `base` when that is longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Duration>,
    #[serde(default = "occ_message_mean")]
    pub message_mean: Duration,
    #[serde(default = "occ_message_sd")]
    pub message_sd: Duration,
}

impl Occ {
    /// The base: the one written, or else 5 ms, or `cap` when that is
    /// shorter.
    pub fn base(&self) -> Duration {
        self.base.unwrap_or_else(|| {
            let blog = Duration::from_millis(5);
            self.cap.map_or(blog, |c| blog.min(c))
        })
    }

    /// The cap: the one written, or else 2 s, or `base` when that is longer.
    pub fn cap(&self) -> Duration {
        self.cap
            .unwrap_or_else(|| Duration::from_secs(2).max(self.base()))
    }
}
fn occ_message_mean() -> Duration {
    Duration::from_millis(10)
}
fn occ_message_sd() -> Duration {
    Duration::from_millis(2)
}

// ---------------------------------------------------------------- clients

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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
    /// With `services`: the service the clients call, as a name
    /// (`calls: gateway`) or a call edge (`{ to: gateway, timeout: 3s }`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::graph::entry_call"
    )]
    #[schemars(schema_with = "super::graph::entry_call_schema")]
    pub calls: Option<Call>,
    /// The priority classes the clients send, most important first, each
    /// with its share of the logical requests (the shares sum to 1):
    /// `[{ name: critical, share: 0.2 }, { name: background, share: 0.8 }]`.
    /// Absent: requests carry no class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<PriorityClass>,
}

impl Default for Clients {
    /// Unset: what an `occ` scenario has (validation requires clients
    /// otherwise).
    fn default() -> Self {
        Clients {
            arrival: Arrival {
                kind: ArrivalKind::Poisson,
                rate: None,
                clients: None,
                think: None,
            },
            schedule: Vec::new(),
            deadline: None,
            calls: None,
            classes: Vec::new(),
        }
    }
}

impl Clients {
    pub fn is_unset(&self) -> bool {
        *self == Clients::default()
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalKind {
    /// Open loop: requests arrive at `rate` whatever happens to them.
    Poisson,
    /// Closed loop: `clients` clients, each sending its next request a
    /// `think` time after its previous one ended.
    Closed,
}

/// `{ kind: poisson, rate: 2000/s }` or
/// `{ kind: closed, clients: 500, think: { dist: exponential, mean: 1s } }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Arrival {
    pub kind: ArrivalKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<ServiceTime>,
}

/// One point of the rate schedule. Exactly one of:
/// - `{ at, rate }`: a step to `rate` at `at`;
/// - `{ at, rate, for }`: a spike: `rate` from `at` for `for`, then back to
///   the rate before it;
/// - `{ at, ramp_to, by }`: a linear ramp from the current rate at `at` to
///   `ramp_to` at `by`, held after.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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

/// A queue with visibility timeout, max receive count and a dead-letter
/// queue, as Amazon SQS (docs/sources/presets.md §9.3), and a pool of
/// consumers that handle its messages.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Consumers {
    /// Handlers running at once.
    pub concurrency: u32,
    /// A received message is invisible this long; if it is not deleted by
    /// then (its handler failed, or is still running), it is delivered
    /// again. SQS default: 30 s.
    #[serde(default = "default_visibility")]
    pub visibility_timeout: Duration,
    /// A receive that would make a message's receive count exceed this
    /// moves it to the dead-letter queue instead (SQS redrive; 1 to 1000).
    pub max_receive_count: u32,
    /// Fraction of messages that always fail (poison).
    #[serde(default)]
    pub poison: f64,
    /// The status the dependency answers a poison message's requests with,
    /// after serving them.
    #[serde(default = "default_poison_status")]
    pub poison_status: u16,
}

fn default_visibility() -> Duration {
    Duration::from_secs(30)
}

fn default_poison_status() -> u16 {
    500
}

// ----------------------------------------------------------------- layers

/// `with_policy_fields! { $m! { ARGS } }` expands `$m! { ARGS; FIELDS }`
/// with every policy field of a layer, each with its documentation and
/// serde attributes: the one list of them, used
/// by [`policy_struct!`] for both a chain's [`Layer`] and a graph's call
/// edge ([`super::graph::Call`]), so the two accept exactly the same policy
/// with the same defaults.
macro_rules! with_policy_fields {
    ($m:ident! { $($args:tt)* }) => {
        $m!($($args)*;
            /// A real library's defaults (`stormsim presets`); the fields written
            /// beside it override the preset's.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            preset: Option<String>,
            /// Copies of the caller (clients of a fleet, replicas of a service).
            /// Calls are spread over them by a hash of the logical request; state
            /// with `scope: instance` (budgets, throttles, breakers) is per copy.
            #[serde(default = "one")]
            instances: u32,
            /// Per-attempt timeout; absent means the caller waits as long as its
            /// own caller lets it.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            timeout: Option<Duration>,
            /// Bounds all attempts and sleeps of one call (Envoy's route timeout,
            /// a total-request timeout); the call then fails with a timeout.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            total_timeout: Option<Duration>,
            /// Absent means no retries (one attempt).
            #[serde(default)]
            retry: Retry,
            /// `propagate`: never start an attempt or a backoff sleep that
            /// outlives the caller's own attempt.
            #[serde(default)]
            deadline: DeadlineMode,
            /// A gate in front of every attempt (client-side throttling).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            throttle: Option<Throttle>,
            /// A circuit breaker in front of every attempt (or only retries).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            breaker: Option<Breaker>,
            /// When the caller gives up on an attempt (timeout, deadline, a
            /// winning hedge or quorum), what happens to the work it started
            /// below: `none` leaves it running as orphaned work, `propagate`
            /// cancels it.
            #[serde(default)]
            cancellation: CancellationMode,
            /// A concurrency limit on the outgoing attempts.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            bulkhead: Option<Bulkhead>,
            /// Each attempt calls the next hop this many times in parallel.
            #[serde(default = "one")]
            fan_out: u32,
            /// With fan-out: the attempt succeeds when this many branches have
            /// (default: all of them).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            quorum: Option<u32>,
            /// gRPC hedging: send the next attempt every `delay` until one
            /// succeeds (replaces the retry policy's sleeps).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            hedging: Option<Hedging>,
            /// Envoy `hedge_on_per_try_timeout`: on a per-attempt timeout, retry
            /// without abandoning the attempt that timed out; either may win.
            #[serde(default, skip_serializing_if = "is_false")]
            hedge_on_timeout: bool,
            /// Before retrying a write that timed out, ask the service called
            /// whether it committed (the playbook's alternative to a blind
            /// re-POST).
            #[serde(default, skip_serializing_if = "is_false")]
            status_probe: bool,
        );
    };
}
pub(crate) use with_policy_fields;

/// A struct of the scenario format with its own leading fields followed by
/// every policy field of a layer (see [`with_policy_fields!`]), and
/// `to_layer`, its policy as a [`Layer`] of the given name (so that a call
/// edge is validated, reviewed and built exactly as a layer is).
macro_rules! policy_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident: $fty:ty,)* };
        $($(#[$pmeta:meta])* $p:ident: $pty:ty,)*
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $fty,)*
            $($(#[$pmeta])* pub $p: $pty,)*
        }

        impl $name {
            /// The policy fields as a layer named `name`.
            pub fn to_layer(&self, name: &str) -> Layer {
                Layer {
                    name: name.to_string(),
                    from: None,
                    $($p: self.$p.clone(),)*
                }
            }
        }
    };
}
pub(crate) use policy_struct;

with_policy_fields! {policy_struct! {
    /// One hop of a chain: the client policy a layer applies to its calls
    /// into the next layer (the last one: into the dependency).
    #[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Layer {
        pub name: String,
        /// The policy as a configuration file of the system sets it (README,
        /// "Settings from configuration files"); the fields written beside it
        /// override the file's, leaf by leaf, as with a preset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub from: Option<FromFile>,
    }
}}

/// `from: { file, format, method | route | virtual_host | host | instance | section | profile, ignore }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FromFile {
    /// The configuration file, relative to the scenario file.
    pub file: String,
    pub format: crate::configs::Format,
    /// grpc-service-config: `pkg.Service/Method`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// envoy-route: the route's name or match prefix; istio-virtualservice:
    /// the route's name, or `#N` for `spec.http[N]`; linkerd-serviceprofile:
    /// the route's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// envoy-route: the route's virtual host, by `name` or a domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_host: Option<String>,
    /// istio-virtualservice: the destination host (or one of `hosts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// resilience4j: the instance name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// ms-resilience: the configuration section path
    /// (`HttpClients:Orders:Resilience`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// aws-config: the profile (`default`, or NAME of `[profile NAME]`);
    /// linkerd-serviceprofile: the ServiceProfile's `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Unmodelled keys of the file to leave out all the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// Written by stormsim in `scenario.resolved.yaml`: the values beside
    /// are the file's as it was read, and the file is not read again.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resolved: bool,
}

impl FromFile {
    pub fn selector(&self) -> crate::configs::Selector {
        crate::configs::Selector {
            method: self.method.clone(),
            route: self.route.clone(),
            virtual_host: self.virtual_host.clone(),
            host: self.host.clone(),
            instance: self.instance.clone(),
            section: self.section.clone(),
            profile: self.profile.clone(),
            ignore: self.ignore.clone(),
            target: crate::configs::Target::Layer,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancellationMode {
    #[default]
    None,
    Propagate,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Refuse the attempt at once (reason `bulkhead_full`).
    #[default]
    Reject,
    /// Wait for a slot (bounded by `max_queue`, then refused).
    Wait,
}

/// `{ max_concurrent: 64, max_queue: 0, when_full: reject }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bulkhead {
    pub max_concurrent: u32,
    /// Attempts that may wait for a slot (`when_full: wait`); absent: as
    /// many as `max_concurrent` when waiting ([`Bulkhead::max_queue`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queue: Option<u32>,
    #[serde(default)]
    pub when_full: WhenFull,
    #[serde(default)]
    pub scope: Scope,
}

impl Bulkhead {
    /// The attempts that may wait: the number written, or else none when
    /// the bulkhead refuses and `max_concurrent` when it waits (a default
    /// of 0 would make `when_full: wait` never wait).
    pub fn max_queue(&self) -> u32 {
        self.max_queue.unwrap_or(match self.when_full {
            WhenFull::Reject => 0,
            WhenFull::Wait => self.max_concurrent,
        })
    }
}

/// gRPC hedging policy (gRFC A6): `{ delay: 50ms, max_attempts: 3,
/// non_fatal: [503] }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hedging {
    /// Between hedges; 0 sends all at once.
    pub delay: Duration,
    /// Attempts in all, the first included (gRPC caps it at 5).
    pub max_attempts: u32,
    /// Failures that do not stop hedging: the next hedge goes at once.
    /// Any other failure cancels the call.
    #[serde(default = "default_retry_on")]
    pub non_fatal: Vec<RetryOn>,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeadlineMode {
    #[default]
    None,
    Propagate,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// Total attempts, the first included.
    #[serde(default = "one")]
    pub max_attempts: u32,
    /// Absent: exponential from 100 ms, × 2, capped at 5 s
    /// ([`Retry::backoff`]); an override of one of its fields derives the
    /// others from it (`overrides`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    #[serde(default)]
    pub jitter: Jitter,
    /// Outcomes that are retried; everything else fails fast.
    #[serde(default = "default_retry_on")]
    pub retry_on: Vec<RetryOn>,
    #[serde(default)]
    pub retry_after: RetryAfterMode,
    /// `retry_after: honor` only: the longest Retry-After obeyed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_cap: Option<Duration>,
    /// `retry_after: honor` only: stretch the wait by up to this fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_jitter: Option<f64>,
    /// No retry whose sleep would end more than this after the call started
    /// (cenkalti/backoff's MaxElapsedTime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_elapsed: Option<Duration>,
    /// A retry budget shared by the calls of this layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_attempts: 1,
            backoff: None,
            jitter: Jitter::default(),
            retry_on: default_retry_on(),
            retry_after: RetryAfterMode::default(),
            retry_after_cap: None,
            retry_after_jitter: None,
            max_elapsed: None,
            budget: None,
        }
    }
}

impl Retry {
    /// The backoff: the one written, or else the default one.
    pub fn backoff(&self) -> Backoff {
        self.backoff.clone().unwrap_or_default()
    }

    /// The backoff, the default one written in when there is none.
    pub fn backoff_mut(&mut self) -> &mut Backoff {
        self.backoff.get_or_insert_with(Backoff::default)
    }
}

/// The playbook's transient set (docs/sources/retry-backoff-patterns.md,
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

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::scenario::schema::fillable_by_preset)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub base: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<Duration>,
    /// Base used after a throttling error (429) instead of `base`
    /// (AWS retry behaviour 2.1: 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_base: Option<Duration>,
    /// Exponential only: truncate to whole milliseconds at every step, as
    /// Resilience4j does.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncate_ms: bool,
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            base: Duration::from_millis(100),
            multiplier: Some(2.0),
            cap: Some(Duration::from_secs(5)),
            throttle_base: None,
            truncate_ms: false,
        }
    }
}

/// `none | full | equal | decorrelated | polly_v2 | { proportional: FACTOR }`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    None,
    #[default]
    Full,
    Equal,
    Decorrelated,
    /// Polly v8's DecorrelatedJitterBackoffV2 (uses `base` and `cap`).
    PollyV2,
    Proportional(f64),
}

/// One retryable outcome: `timeout`, `connection`, an HTTP status code, or
/// a class of them (`4xx`, `5xx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryOn {
    Timeout,
    Connection,
    Status(u16),
    /// Every status of the class: 4 for `4xx`, 5 for `5xx`.
    Class(u8),
}

impl JsonSchema for RetryOn {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RetryOn".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`timeout`, `connection`, `4xx`, `5xx` or an HTTP status code (100-599).",
            "anyOf": [
                { "type": "string", "enum": ["timeout", "connection", "4xx", "5xx"] },
                { "type": "string", "pattern": "^[1-5][0-9][0-9]$" },
                { "type": "integer", "minimum": 100, "maximum": 599 }
            ]
        })
    }
}

impl Serialize for RetryOn {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RetryOn::Timeout => s.serialize_str("timeout"),
            RetryOn::Connection => s.serialize_str("connection"),
            RetryOn::Status(c) => s.serialize_u16(*c),
            RetryOn::Class(c) => s.serialize_str(&format!("{c}xx")),
        }
    }
}

impl<'de> Deserialize<'de> for RetryOn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RetryOn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "`timeout`, `connection`, `4xx`, `5xx` or an HTTP status code (100-599)",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RetryOn, E> {
                match v {
                    "timeout" => Ok(RetryOn::Timeout),
                    "connection" => Ok(RetryOn::Connection),
                    "4xx" => Ok(RetryOn::Class(4)),
                    "5xx" => Ok(RetryOn::Class(5)),
                    other => match other.parse::<u64>() {
                        Ok(n) => self.visit_u64(n),
                        Err(_) => Err(E::custom(format!(
                            "unknown outcome `{other}`; expected `timeout`, `connection`, `4xx`, `5xx` or an HTTP status code (100-599)"
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

/// What a layer does with a server's Retry-After (or gRPC pushback). In
/// every mode that uses it, a wait that does not fit in the remaining
/// deadline or `max_elapsed` fails at once with `retry_after_exceeds_budget`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RetryAfterMode {
    /// Wait at least the Retry-After (optionally capped and jittered).
    #[default]
    Honor,
    /// Ignore it; the backoff alone decides.
    Ignore,
    /// The wait is exactly the Retry-After, uncapped and unjittered
    /// (Microsoft.Extensions.Http.Resilience).
    Exact,
    /// `clamp(retry_after, backoff, backoff + 5 s)` (AWS retry behaviour 2.1).
    AwsClamp,
    /// `U[ra, 1.5 ra)`, ignored above 300 s (Envoy's rate-limited backoff).
    Envoy,
    /// Exactly the pushback, then the backoff starts over (gRPC).
    GrpcPushback,
}

/// Whose state a budget, throttle or breaker is.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One per layer instance (per client, per channel): the default of
    /// every library modelled.
    #[default]
    Instance,
    /// One for the whole layer, shared by all its instances.
    Shared,
    /// Budgets only: one for every layer whose budget says `global` (a
    /// single retry budget across stacked layers).
    Global,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// gRFC A6 retry throttling: `max_tokens`, `token_ratio`.
    TokenBucket,
    /// Brooker's retry token bucket: `capacity`, `per_request`, `retry_cost`.
    RetryTokens,
    /// Finagle RetryBudget: `ttl`, `min_retries_per_sec`,
    /// `percent_can_retry`, `max_requeues_fraction`.
    Finagle,
    /// Envoy retry_budget: `budget_percent`, `min_retry_concurrency`.
    Envoy,
    /// Envoy max_retries circuit breaker: `max_retries`.
    EnvoyMaxRetries,
    /// AWS SDK retry quota: `capacity`, `retry_cost`, `timeout_cost`,
    /// `throttle_cost`, `success_increment`.
    AwsQuota,
    /// SRE per-client retry ratio: `ratio`, `window`.
    Ratio,
    /// SRE per-process budget: `per_minute`.
    PerMinute,
    /// A rate limiter that delays retries: `rate`, `burst`.
    RateLimiter,
}

/// A retry budget: `{ kind, scope, ... }` with the fields of its kind
/// (defaults are the real systems', filled in when absent).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::scenario::schema::fillable_by_preset)]
pub struct Budget {
    pub kind: BudgetKind,
    #[serde(default)]
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_increment: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_retries_per_sec: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent_can_retry: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requeues_fraction: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_retry_concurrency: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_minute: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<f64>,
}

/// Expands `$m!(field, ...)` with every optional field of `Budget`, so the
/// code that walks them (defaults, validation) lists them in one place.
macro_rules! budget_fields {
    ($m:ident) => {
        $m!(
            max_tokens,
            token_ratio,
            capacity,
            per_request,
            retry_cost,
            timeout_cost,
            throttle_cost,
            success_increment,
            ttl,
            min_retries_per_sec,
            percent_can_retry,
            max_requeues_fraction,
            budget_percent,
            min_retry_concurrency,
            max_retries,
            ratio,
            window,
            per_minute,
            rate,
            burst
        )
    };
}
pub(crate) use budget_fields;

/// The fields each budget kind takes, with the real system's default.
/// Sources: docs/sources/presets.md, section named beside each kind.
pub fn budget_defaults(kind: BudgetKind) -> Budget {
    let mut b = Budget::empty(kind);
    match kind {
        // gRFC A6's example retryThrottling config (§2).
        BudgetKind::TokenBucket => {
            b.max_tokens = Some(10.0);
            b.token_ratio = Some(0.1);
        }
        // Brooker 2022: size 5, +0.1 per request, a retry spends 1 (docs/sources/experiments.md §2).
        BudgetKind::RetryTokens => {
            b.capacity = Some(5.0);
            b.per_request = Some(0.1);
            b.retry_cost = Some(1.0);
        }
        // Finagle RetryBudget() = (10 s, 10/s, 20%); MaxRequeuesPerReq 0.2 (§4).
        BudgetKind::Finagle => {
            b.ttl = Some(Duration::from_secs(10));
            b.min_retries_per_sec = Some(10.0);
            b.percent_can_retry = Some(0.2);
            b.max_requeues_fraction = Some(0.2);
        }
        // Envoy retry_budget defaults 20%, 3 (§3).
        BudgetKind::Envoy => {
            b.budget_percent = Some(20.0);
            b.min_retry_concurrency = Some(3);
        }
        // Envoy max_retries circuit breaker: 3 (§3).
        BudgetKind::EnvoyMaxRetries => b.max_retries = Some(3),
        // AWS standard mode 2.0: 500, cost 5, timeout 10, throttle 5, +1 (§1.2).
        BudgetKind::AwsQuota => {
            b.capacity = Some(500.0);
            b.retry_cost = Some(5.0);
            b.timeout_cost = Some(10.0);
            b.throttle_cost = Some(5.0);
            b.success_increment = Some(1.0);
        }
        // SRE book: retries < 10% of requests (§8); window as the throttle's 2 min.
        BudgetKind::Ratio => {
            b.ratio = Some(0.1);
            b.window = Some(Duration::from_secs(120));
        }
        // SRE book: 60 retries per minute per process (§8).
        BudgetKind::PerMinute => b.per_minute = Some(60.0),
        // client-go workqueue: 10 qps, burst 100 (§7.4).
        BudgetKind::RateLimiter => {
            b.rate = Some(Rate(10.0));
            b.burst = Some(100.0);
        }
    }
    b
}

impl Budget {
    /// A budget of `kind` with no field set.
    pub fn empty(kind: BudgetKind) -> Self {
        Budget {
            kind,
            scope: Scope::Instance,
            max_tokens: None,
            token_ratio: None,
            capacity: None,
            per_request: None,
            retry_cost: None,
            timeout_cost: None,
            throttle_cost: None,
            success_increment: None,
            ttl: None,
            min_retries_per_sec: None,
            percent_can_retry: None,
            max_requeues_fraction: None,
            budget_percent: None,
            min_retry_concurrency: None,
            max_retries: None,
            ratio: None,
            window: None,
            per_minute: None,
            rate: None,
            burst: None,
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleKind {
    /// SRE client-side adaptive throttling: `k`, `window`.
    Adaptive,
    /// AWS SDK adaptive mode's CUBIC client rate limiter (no fields).
    AwsAdaptive,
}

/// `{ kind: adaptive, k: 2, window: 2m }` or `{ kind: aws_adaptive }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::scenario::schema::fillable_by_preset)]
pub struct Throttle {
    pub kind: ThrottleKind,
    #[serde(default)]
    pub scope: Scope,
    /// SRE: K (2 in the book; lower is more aggressive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<f64>,
    /// SRE: the window requests and accepts are counted over (2 minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Duration>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakerKind {
    /// Failure ratio over a sliding time window (Polly v8).
    Time,
    /// Failure ratio over the last N calls (Resilience4j).
    Count,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakerBlocks {
    /// Every attempt is refused while open.
    #[default]
    All,
    /// Only retries are refused while open (Brooker's retry breaker).
    Retries,
}

/// A circuit breaker. Defaults are Polly v8's for `time` (ratio 0.1,
/// minimum 100 calls, 30 s window, open 5 s, 1 probe) and Resilience4j's
/// for `count` (ratio 0.5, 100 calls, minimum 100, open 60 s, 10 probes;
/// `window_calls` and `min_calls` follow each other: `defaults`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::scenario::schema::fillable_by_preset)]
pub struct Breaker {
    pub kind: BreakerKind,
    #[serde(default)]
    pub scope: Scope,
    #[serde(default)]
    pub blocks: BreakerBlocks,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_calls: Option<u32>,
    /// `time`: the sampling duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Duration>,
    /// `count`: the number of calls in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_calls: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_for: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<u32>,
}

// ------------------------------------------------------------- dependency

/// `with_server_fields! { $m! { ARGS } }` expands `$m! { ARGS; FIELDS }`
/// with the fields every server has (its queue, overload answer,
/// incidents, recovery and side effects), each with its documentation and
/// serde attributes: the one list of them, shared by a chain's
/// [`Dependency`] and a graph's [`super::graph::Service`].
macro_rules! with_server_fields {
    ($m:ident! { $($args:tt)* }) => {
        $m!($($args)*;
            #[serde(default)]
            queue: Queue,
            #[serde(default)]
            overload: Overload,
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            incidents: Vec<Incident>,
            #[serde(default)]
            recovery: Recovery,
            /// What a request does when a worker finishes it.
            #[serde(default)]
            side_effects: SideEffects,
            /// `key`: retried writes carry an idempotency key and are
            /// deduplicated.
            #[serde(default)]
            idempotency: Idempotency,
            /// Service time of a request deduplicated by its key (the stored
            /// response is returned).
            #[serde(default = "default_dedupe_cost")]
            dedupe_cost: Duration,
            /// A cancelled request already in service: `finish` it anyway, or
            /// `stop` and free the worker.
            #[serde(default)]
            on_cancel: OnCancel,
            /// Priority shedding: per class of `clients.classes`, the queue
            /// length (per replica) from which a request of that class is
            /// shed at once rather than queued (`{ background: 50 }`); a class
            /// not named is never shed this way.
            #[serde(default, skip_serializing_if = "ShedByPriority::is_empty")]
            shed_by_priority: ShedByPriority,
        );
    };
}
pub(crate) use with_server_fields;

/// A struct of the scenario format with its own leading fields, every
/// server field (see [`with_server_fields!`]) and its own trailing fields
/// (after the `;`), and `server_fields`, the server fields alone.
macro_rules! server_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$fmeta:meta])* pub $field:ident: $fty:ty,)*
        } {
            $($(#[$tmeta:meta])* pub $tail:ident: $tty:ty,)*
        };
        $($(#[$smeta:meta])* $f:ident: $sty:ty,)*
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $fty,)*
            $($(#[$smeta])* pub $f: $sty,)*
            $($(#[$tmeta])* pub $tail: $tty,)*
        }

        impl $name {
            /// The server fields alone.
            pub fn server_fields(&self) -> ServerFields {
                ServerFields {
                    $($f: self.$f.clone(),)*
                }
            }
        }
    };
}
pub(crate) use server_struct;

with_server_fields! {server_struct! {
    /// The fields every server has, apart from its workers, its service
    /// time and its calls: what validation and the model's translation
    /// read of a dependency and of a service alike.
    #[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
    pub struct ServerFields {} {}
}}

with_server_fields! {server_struct! {
    /// The capacity-limited service at the end of a chain of layers.
    #[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Dependency {
        /// Workers serving requests in parallel.
        pub concurrency: u32,
        pub service_time: ServiceTime,
    } {}
}}

impl Default for Dependency {
    /// Unset: what an `occ` scenario has (validation requires a dependency
    /// otherwise).
    fn default() -> Self {
        Dependency {
            concurrency: 0,
            service_time: ServiceTime {
                dist: DistKind::Constant,
                value: None,
                mean: None,
                median: None,
                p99: None,
                min: None,
                max: None,
            },
            queue: Queue::default(),
            overload: Overload::default(),
            incidents: Vec::new(),
            recovery: Recovery::default(),
            side_effects: SideEffects::default(),
            idempotency: Idempotency::default(),
            dedupe_cost: default_dedupe_cost(),
            on_cancel: OnCancel::default(),
            shed_by_priority: ShedByPriority::new(),
        }
    }
}

impl Dependency {
    pub fn is_unset(&self) -> bool {
        *self == Dependency::default()
    }
}

pub(crate) fn default_dedupe_cost() -> Duration {
    Duration::from_millis(1)
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SideEffects {
    /// Nothing is written: duplicates are harmless.
    #[default]
    Read,
    /// A write that is safe to repeat (PUT, upsert).
    IdempotentWrite,
    /// A write that must happen once (charge a card, send an email).
    Write,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Idempotency {
    #[default]
    None,
    Key,
}

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnCancel {
    #[default]
    Finish,
    Stop,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DistKind {
    Constant,
    Exponential,
    Lognormal,
    Uniform,
}

/// `{ dist: constant, value }`, `{ dist: exponential, mean }`,
/// `{ dist: lognormal, median, p99 }` or `{ dist: uniform, min, max }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    #[default]
    Fifo,
    Lifo,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
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
    /// The service's cache is emptied at `start` and stores nothing until
    /// `end` (a cache restarting).
    Flush,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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
    /// The replicas it hits: a count (the first N) or a list of replica
    /// indices (`[0, 2]`); absent: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaTargets>,
}

/// `replicas` of an incident: the first N, or the listed indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicaTargets {
    First(u32),
    List(Vec<u32>),
}

impl ReplicaTargets {
    /// The replica indices it names.
    pub fn indices(&self) -> Vec<u32> {
        match self {
            ReplicaTargets::First(n) => (0..*n).collect(),
            ReplicaTargets::List(v) => v.clone(),
        }
    }
}

impl Serialize for ReplicaTargets {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ReplicaTargets::First(n) => s.serialize_u32(*n),
            ReplicaTargets::List(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ReplicaTargets {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ReplicaTargets;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a count of replicas (the first N) or a list of replica indices such as [0, 2]",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                u32::try_from(v)
                    .map(ReplicaTargets::First)
                    .map_err(|_| E::custom(format!("{v} replicas is too many")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("{v} replicas; expected a count of at least 1")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(i) = seq.next_element::<u32>()? {
                    if out.len() >= 10_000 {
                        return Err(serde::de::Error::custom("too many replica indices"));
                    }
                    out.push(i);
                }
                Ok(ReplicaTargets::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for ReplicaTargets {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ReplicaTargets".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The replicas an incident hits: a count (the first N) or a list of replica indices such as [0, 2].",
            "anyOf": [
                { "type": "integer", "minimum": 1 },
                { "type": "array", "items": { "type": "integer", "minimum": 0 } }
            ]
        })
    }
}

/// After an incident that removes capacity (down, blackhole, brownout),
/// capacity ramps back linearly from `from` to 1 over `warmup`, as when
/// caches are cold.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Dotted path (`layers.api.retry.jitter`) to a value that replaces the
    /// base scenario's value in this variant. Applied in file order.
    #[serde(default, deserialize_with = "overrides")]
    pub set: serde_json::Map<String, serde_json::Value>,
}

/// What a variant's overrides are, in an error message.
const OVERRIDES: &str =
    "a mapping of overrides (dotted path: value), such as { layers.api.retry.max_attempts: 3 }";

/// A variant's `set`: a mapping of overrides (`null`: none).
fn overrides<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<serde_json::Map<String, serde_json::Value>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = serde_json::Map<String, serde_json::Value>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(OVERRIDES)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(serde_json::Map::new())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(serde_json::Map::new())
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = serde_json::Map::new();
            while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
                out.insert(k, v);
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// `variants`: a list of variants, or a mapping of names to overrides.
fn variants_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Variant>, D::Error> {
    /// One value of the mapping form: the overrides of a variant.
    struct Set(serde_json::Map<String, serde_json::Value>);
    impl<'de> Deserialize<'de> for Set {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            overrides(d).map(Set)
        }
    }
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<Variant>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(
                "a list of variants ({ name, set }), or a mapping of each variant's name to its overrides",
            )
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(v) = seq.next_element::<Variant>()? {
                out.push(v);
            }
            Ok(out)
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((name, Set(set))) = map.next_entry::<String, Set>()? {
                out.push(Variant {
                    name,
                    description: String::new(),
                    set,
                });
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// The schema of `variants`: a list of variants, or a mapping of names to
/// overrides.
fn variants_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let variant = g.subschema_for::<Variant>();
    schemars::json_schema!({
        "description": "Compared side by side; each overrides the base scenario: a list of { name, description, set }, or a mapping of each variant's name to its overrides.",
        "anyOf": [
            { "type": "array", "items": variant },
            { "type": "object", "additionalProperties": { "type": "object" } }
        ]
    })
}

// --------------------------------------------------------------- analysis

/// How the summary judges recovery (see README, "Recovery and
/// metastability").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Analysis {
    /// A window is healthy when its success ratio (goodput ÷ offered) is at
    /// least this fraction of the pre-trigger ratio.
    #[serde(default = "default_recovery_threshold")]
    pub recovery_threshold: f64,
    /// Length of the sliding window that judges health; absent: 5 s, or
    /// one bucket when a bucket is longer ([`Scenario::recovery_window`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_window: Option<Duration>,
    /// When the trigger ends. Default: the end of the last incident, or the
    /// last schedule change when there is no incident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_end: Option<Duration>,
    /// With `services`: the service the classic single-dependency columns
    /// (dependency attempts, queue depth, utilisation, capacity...)
    /// describe. Absent: the service named `dependency`, else the first
    /// service (in file order) that calls nothing
    /// ([`Scenario::focus_service`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

impl Default for Analysis {
    fn default() -> Self {
        Analysis {
            recovery_threshold: default_recovery_threshold(),
            recovery_window: None,
            trigger_end: None,
            service: None,
        }
    }
}

fn default_recovery_threshold() -> f64 {
    0.9
}

// ----------------------------------------------------------------- limits

/// Guard rails: a run that reaches one stops and is marked aborted.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
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
/// 5 000 000 calls and requests in flight: about 1 GB at
/// `memory::IN_FLIGHT_BYTES` each, counted in every run's memory estimate.
fn default_max_in_flight() -> u64 {
    5_000_000
}
