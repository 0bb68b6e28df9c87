//! Semantic checks of a layer's policy fields beyond the basic retry
//! policy: `preset`, `instances`, `total_timeout`, the Retry-After knobs,
//! `max_elapsed`, the backoff's `throttle_base` and `truncate_ms`, and the
//! retry budget, throttle and circuit breaker. Ranges follow the real
//! systems' own constraints where docs/sources/presets.md gives them
//! (gRFC A6 maxTokens in (0, 1000], §2; Finagle ttl in [1 s, 60 s] and
//! percentCanRetry in [0, 1000], §4); every problem is reported.

use super::presets;
use super::suggest::did_you_mean;
use super::types::{
    BackoffKind, Breaker, BreakerKind, Budget, BudgetKind, Jitter, Layer, RetryAfterMode, Throttle,
    ThrottleKind,
};
use super::units::Duration;
use super::validate::{Checker, MAX_INSTANCES, kind_name};

/// gRFC A6: `maxTokens` must be in (0, 1000] (docs/sources/presets.md §2).
const MAX_A6_TOKENS: f64 = 1000.0;

impl Checker {
    /// The policy fields of one layer (`path` is its label, `layers.api`).
    pub(super) fn layer_policy(&mut self, layer: &Layer, path: &str) {
        if let Some(name) = &layer.preset {
            self.preset_name(name, &format!("{path}.preset"));
        }
        self.check(
            (1..=MAX_INSTANCES).contains(&layer.instances),
            &format!("{path}.instances"),
            || {
                format!(
                    "instances is {}; expected 1 to {MAX_INSTANCES}",
                    layer.instances
                )
            },
        );
        if let Some(t) = layer.total_timeout {
            self.positive(t, &format!("{path}.total_timeout"), "total_timeout");
        }
        let r = &layer.retry;
        let rp = format!("{path}.retry");
        let honor = r.retry_after == RetryAfterMode::Honor;
        let mode = retry_after_name(r.retry_after);
        if let Some(cap) = r.retry_after_cap {
            let p = format!("{rp}.retry_after_cap");
            if self.check(honor, &p, || {
                format!("retry_after_cap applies only with `retry_after: honor`, not {mode}; remove it or set retry_after: honor")
            }) {
                self.positive(cap, &p, "retry_after_cap");
            }
        }
        if let Some(j) = r.retry_after_jitter {
            let p = format!("{rp}.retry_after_jitter");
            if self.check(honor, &p, || {
                format!("retry_after_jitter applies only with `retry_after: honor`, not {mode}; remove it or set retry_after: honor")
            }) {
                self.fraction(j, &p, "[0, 1]", |v| (0.0..=1.0).contains(&v));
            }
        }
        if let Some(m) = r.max_elapsed {
            self.positive(m, &format!("{rp}.max_elapsed"), "max_elapsed");
        }
        let b = &r.backoff();
        let bp = format!("{rp}.backoff");
        if let Some(tb) = b.throttle_base {
            self.positive(tb, &format!("{bp}.throttle_base"), "throttle_base");
        }
        if b.truncate_ms && b.kind != BackoffKind::Exponential {
            self.push(
                format!("{bp}.truncate_ms"),
                format!(
                    "truncate_ms applies only to exponential backoff, not {}; remove it",
                    kind_name(b.kind)
                ),
            );
        }
        if r.jitter == Jitter::PollyV2 && b.kind != BackoffKind::Exponential {
            self.push(
                format!("{rp}.jitter"),
                format!(
                    "polly_v2 jitter (Polly's DecorrelatedJitterBackoffV2) needs exponential backoff, not {}; expected backoff: {{ kind: exponential, base: 2s }}",
                    kind_name(b.kind)
                ),
            );
        }
        if let Some(budget) = &r.budget {
            self.budget(budget, &format!("{rp}.budget"));
        }
        if let Some(t) = &layer.throttle {
            self.throttle(t, &format!("{path}.throttle"));
        }
        if let Some(br) = &layer.breaker {
            self.breaker(br, &format!("{path}.breaker"));
        }
    }

    fn preset_name(&mut self, name: &str, path: &str) {
        if presets::find(name).is_some() {
            return;
        }
        let names = presets::names();
        let hint = did_you_mean(name, names.iter().copied())
            .map(|n| format!("did you mean `{n}`? "))
            .unwrap_or_default();
        self.push(
            path,
            format!(
                "unknown preset `{name}`; {hint}expected one of {} (see `stormsim presets`)",
                names.join(", ")
            ),
        );
    }

    /// A positive finite number.
    fn positive_number(&mut self, v: f64, path: &str, what: &str) {
        if self.finite_in(v, path, "a number > 0") {
            self.check(v > 0.0, path, || {
                format!("{what} is {v}; expected a number > 0")
            });
        }
    }

    /// A finite number >= 0.
    fn non_negative(&mut self, v: f64, path: &str, what: &str) {
        if self.finite_in(v, path, "a number >= 0") {
            self.check(v >= 0.0, path, || {
                format!("{what} is {v}; expected a number >= 0")
            });
        }
    }

    fn budget(&mut self, b: &Budget, path: &str) {
        let kind = budget_kind_name(b.kind);
        let allowed = super::types::budget_defaults(b.kind);
        let shape = budget_shape(b.kind);
        for (name, set, ok) in budget_fields(b, &allowed) {
            if set && !ok {
                self.push(
                    format!("{path}.{name}"),
                    format!(
                        "`{name}` does not apply to {} {kind} budget; expected {shape} (with --set, set the whole budget)",
                        crate::human::a_or_an(kind)
                    ),
                );
            }
        }
        let p = |f: &str| format!("{path}.{f}");
        if let Some(v) = b.max_tokens.filter(|_| allowed.max_tokens.is_some())
            && self.finite_in(v, &p("max_tokens"), "a number in (0, 1000]")
        {
            self.check(v > 0.0 && v <= MAX_A6_TOKENS, &p("max_tokens"), || {
                format!("max_tokens is {v}; expected a number in (0, 1000] (gRFC A6)")
            });
        }
        if let Some(v) = b.token_ratio.filter(|_| allowed.token_ratio.is_some()) {
            self.positive_number(v, &p("token_ratio"), "token_ratio");
        }
        if let Some(v) = b.capacity.filter(|_| allowed.capacity.is_some()) {
            if b.kind == BudgetKind::AwsQuota {
                self.whole(v, &p("capacity"), "capacity", 1.0);
            } else {
                self.positive_number(v, &p("capacity"), "capacity");
            }
        }
        if let Some(v) = b.per_request.filter(|_| allowed.per_request.is_some()) {
            self.non_negative(v, &p("per_request"), "per_request");
        }
        for (name, v) in [
            (
                "retry_cost",
                b.retry_cost.filter(|_| allowed.retry_cost.is_some()),
            ),
            (
                "timeout_cost",
                b.timeout_cost.filter(|_| allowed.timeout_cost.is_some()),
            ),
            (
                "throttle_cost",
                b.throttle_cost.filter(|_| allowed.throttle_cost.is_some()),
            ),
            (
                "success_increment",
                b.success_increment
                    .filter(|_| allowed.success_increment.is_some()),
            ),
        ] {
            let Some(v) = v else { continue };
            if b.kind == BudgetKind::AwsQuota {
                self.whole(v, &p(name), name, 0.0);
            } else {
                self.positive_number(v, &p(name), name);
            }
        }
        if let Some(t) = b.ttl.filter(|_| allowed.ttl.is_some()) {
            self.check(
                t >= Duration::from_secs(1) && t <= Duration::from_secs(60),
                &p("ttl"),
                || format!("ttl is {t}; expected 1s to 60s (Finagle's RetryBudget bounds)"),
            );
        }
        if let Some(v) = b
            .min_retries_per_sec
            .filter(|_| allowed.min_retries_per_sec.is_some())
        {
            self.non_negative(v, &p("min_retries_per_sec"), "min_retries_per_sec");
        }
        if let Some(v) = b
            .percent_can_retry
            .filter(|_| allowed.percent_can_retry.is_some())
        {
            self.fraction(
                v,
                &p("percent_can_retry"),
                "(0, 1000] (Finagle's bounds; 0.2 = 20%)",
                |v| v > 0.0 && v <= 1000.0,
            );
        }
        if let Some(v) = b
            .max_requeues_fraction
            .filter(|_| allowed.max_requeues_fraction.is_some())
        {
            // 0: no per-call cap (Linkerd's proxy has none; the model's
            // Finagle budget takes 0 as no cap).
            self.fraction(
                v,
                &p("max_requeues_fraction"),
                "[0, 1] (0: no per-call cap)",
                |v| (0.0..=1.0).contains(&v),
            );
        }
        if let Some(v) = b
            .budget_percent
            .filter(|_| allowed.budget_percent.is_some())
        {
            let bp = p("budget_percent");
            if self.finite_in(v, &bp, "a percentage in (0, 100]") {
                self.check(v > 0.0 && v <= 100.0, &bp, || {
                    format!("budget_percent is {v}; expected a percentage in (0, 100]")
                });
            }
        }
        if let Some(v) = b.ratio.filter(|_| allowed.ratio.is_some()) {
            self.fraction(v, &p("ratio"), "(0, 1]", |v| v > 0.0 && v <= 1.0);
        }
        if let Some(w) = b.window.filter(|_| allowed.window.is_some()) {
            self.positive(w, &p("window"), "window");
        }
        if let Some(v) = b.per_minute.filter(|_| allowed.per_minute.is_some()) {
            self.positive_number(v, &p("per_minute"), "per_minute");
        }
        if let Some(r) = b.rate.filter(|_| allowed.rate.is_some()) {
            self.positive_number(r.per_sec(), &p("rate"), "rate");
        }
        if let Some(v) = b.burst.filter(|_| allowed.burst.is_some()) {
            let bp = p("burst");
            if self.finite_in(v, &bp, "a number >= 1") {
                self.check(v >= 1.0, &bp, || {
                    format!("burst is {v}; expected a number >= 1")
                });
            }
        }
    }

    /// A whole number >= `min` (the AWS quota counts whole tokens).
    fn whole(&mut self, v: f64, path: &str, what: &str, min: f64) {
        if self.finite_in(v, path, &format!("a whole number of tokens >= {min}")) {
            self.check(
                v >= min && v.fract() == 0.0 && v <= u32::MAX as f64,
                path,
                || format!("{what} is {v}; expected a whole number of tokens >= {min}"),
            );
        }
    }

    fn throttle(&mut self, t: &Throttle, path: &str) {
        match t.kind {
            ThrottleKind::Adaptive => {
                if let Some(k) = t.k {
                    self.positive_number(k, &format!("{path}.k"), "k");
                }
                if let Some(w) = t.window {
                    self.positive(w, &format!("{path}.window"), "window");
                }
            }
            ThrottleKind::AwsAdaptive => {
                for (name, set) in [("k", t.k.is_some()), ("window", t.window.is_some())] {
                    if set {
                        self.push(
                            format!("{path}.{name}"),
                            format!("`{name}` applies only to an adaptive throttle, not aws_adaptive (which has no parameters); remove it"),
                        );
                    }
                }
            }
        }
    }

    fn breaker(&mut self, b: &Breaker, path: &str) {
        let p = |f: &str| format!("{path}.{f}");
        match b.kind {
            BreakerKind::Time => {
                if b.window_calls.is_some() {
                    self.push(p("window_calls"), "`window_calls` applies only to a count breaker; a time breaker takes `window` (a duration)");
                }
                if let Some(w) = b.window {
                    self.positive(w, &p("window"), "window");
                }
            }
            BreakerKind::Count => {
                if b.window.is_some() {
                    self.push(p("window"), "`window` applies only to a time breaker; a count breaker takes `window_calls` (a number of calls)");
                }
                if let Some(n) = b.window_calls {
                    self.check(n >= 1, &p("window_calls"), || {
                        "window_calls is 0; expected at least 1 call".into()
                    });
                }
            }
        }
        if let Some(r) = b.failure_ratio {
            self.fraction(r, &p("failure_ratio"), "(0, 1]", |v| v > 0.0 && v <= 1.0);
        }
        if let Some(n) = b.min_calls {
            self.check(n >= 1, &p("min_calls"), || {
                "min_calls is 0; expected at least 1 call".into()
            });
        }
        if let Some(n) = b.probes {
            self.check(n >= 1, &p("probes"), || {
                "probes is 0; expected at least 1 half-open probe".into()
            });
        }
        if let Some(d) = b.open_for {
            self.positive(d, &p("open_for"), "open_for");
        }
    }
}

/// (field, is set, applies to this kind) for every budget field.
fn budget_fields(b: &Budget, allowed: &Budget) -> Vec<(&'static str, bool, bool)> {
    macro_rules! fields {
        ($($f:ident),*) => { vec![ $( (stringify!($f), b.$f.is_some(), allowed.$f.is_some()) ),* ] };
    }
    super::types::budget_fields!(fields)
}

pub(crate) fn budget_kind_name(k: BudgetKind) -> &'static str {
    match k {
        BudgetKind::TokenBucket => "token_bucket",
        BudgetKind::RetryTokens => "retry_tokens",
        BudgetKind::Finagle => "finagle",
        BudgetKind::Envoy => "envoy",
        BudgetKind::EnvoyMaxRetries => "envoy_max_retries",
        BudgetKind::AwsQuota => "aws_quota",
        BudgetKind::Ratio => "ratio",
        BudgetKind::PerMinute => "per_minute",
        BudgetKind::RateLimiter => "rate_limiter",
    }
}

fn budget_shape(k: BudgetKind) -> &'static str {
    match k {
        BudgetKind::TokenBucket => "{ kind: token_bucket, max_tokens: 10, token_ratio: 0.1 }",
        BudgetKind::RetryTokens => {
            "{ kind: retry_tokens, capacity: 5, per_request: 0.1, retry_cost: 1 }"
        }
        BudgetKind::Finagle => {
            "{ kind: finagle, ttl: 10s, min_retries_per_sec: 10, percent_can_retry: 0.2, max_requeues_fraction: 0.2 }"
        }
        BudgetKind::Envoy => "{ kind: envoy, budget_percent: 20, min_retry_concurrency: 3 }",
        BudgetKind::EnvoyMaxRetries => "{ kind: envoy_max_retries, max_retries: 3 }",
        BudgetKind::AwsQuota => {
            "{ kind: aws_quota, capacity: 500, retry_cost: 5, timeout_cost: 10, throttle_cost: 5, success_increment: 1 }"
        }
        BudgetKind::Ratio => "{ kind: ratio, ratio: 0.1, window: 2m }",
        BudgetKind::PerMinute => "{ kind: per_minute, per_minute: 60 }",
        BudgetKind::RateLimiter => "{ kind: rate_limiter, rate: 10/s, burst: 100 }",
    }
}

pub(crate) fn retry_after_name(m: RetryAfterMode) -> &'static str {
    match m {
        RetryAfterMode::Honor => "honor",
        RetryAfterMode::Ignore => "ignore",
        RetryAfterMode::Exact => "exact",
        RetryAfterMode::AwsClamp => "aws_clamp",
        RetryAfterMode::Envoy => "envoy",
        RetryAfterMode::GrpcPushback => "grpc_pushback",
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::fixtures::FULL;
    use crate::scenario::load_str;
    use crate::scenario::types::*;
    use crate::scenario::units::{Duration, Rate};
    use crate::scenario::validate::validate;

    /// The full example with `edit` applied must report `path: …fragment…`.
    fn expect(edit: impl FnOnce(&mut Layer), path: &str, fragment: &str) {
        let mut s = load_str(FULL, "full.yaml").unwrap();
        edit(&mut s.layers[0]);
        let issues = validate(&s);
        assert!(
            issues
                .iter()
                .any(|i| i.path == path && i.message.contains(fragment)),
            "expected {path}: …{fragment}… in {issues:#?}"
        );
    }

    fn budget(kind: BudgetKind, edit: impl FnOnce(&mut Budget)) -> impl FnOnce(&mut Layer) {
        move |l: &mut Layer| {
            let mut b = budget_defaults(kind);
            edit(&mut b);
            l.retry.budget = Some(b);
        }
    }

    const B: &str = "layers.api.retry.budget";

    #[test]
    fn budget_fields_belong_to_their_kind() {
        expect(
            budget(BudgetKind::TokenBucket, |b| b.ratio = Some(0.1)),
            &format!("{B}.ratio"),
            "does not apply to a token_bucket budget; expected { kind: token_bucket",
        );
        expect(
            budget(BudgetKind::AwsQuota, |b| b.max_tokens = Some(1.0)),
            &format!("{B}.max_tokens"),
            "aws_quota",
        );
    }

    #[test]
    fn budget_ranges() {
        type Edit = Box<dyn FnOnce(&mut Layer)>;
        let cases: Vec<(Edit, &str, &str)> = vec![
            (
                Box::new(budget(BudgetKind::TokenBucket, |b| {
                    b.max_tokens = Some(1001.0)
                })),
                "max_tokens",
                "(0, 1000]",
            ),
            (
                Box::new(budget(BudgetKind::TokenBucket, |b| {
                    b.token_ratio = Some(0.0)
                })),
                "token_ratio",
                "> 0",
            ),
            (
                Box::new(budget(BudgetKind::TokenBucket, |b| {
                    b.token_ratio = Some(f64::NAN)
                })),
                "token_ratio",
                "finite",
            ),
            (
                Box::new(budget(BudgetKind::AwsQuota, |b| b.capacity = Some(0.0))),
                "capacity",
                "whole number of tokens >= 1",
            ),
            (
                Box::new(budget(BudgetKind::AwsQuota, |b| b.retry_cost = Some(2.5))),
                "retry_cost",
                "whole number",
            ),
            (
                Box::new(budget(BudgetKind::RetryTokens, |b| {
                    b.per_request = Some(-1.0)
                })),
                "per_request",
                ">= 0",
            ),
            (
                Box::new(budget(BudgetKind::Finagle, |b| {
                    b.ttl = Some(Duration::from_secs(61))
                })),
                "ttl",
                "1s to 60s",
            ),
            (
                Box::new(budget(BudgetKind::Finagle, |b| {
                    b.percent_can_retry = Some(0.0)
                })),
                "percent_can_retry",
                "(0, 1000]",
            ),
            (
                Box::new(budget(BudgetKind::Finagle, |b| {
                    b.max_requeues_fraction = Some(2.0)
                })),
                "max_requeues_fraction",
                "[0, 1] (0: no per-call cap)",
            ),
            (
                Box::new(budget(BudgetKind::Envoy, |b| {
                    b.budget_percent = Some(150.0)
                })),
                "budget_percent",
                "(0, 100]",
            ),
            (
                Box::new(budget(BudgetKind::Ratio, |b| b.ratio = Some(0.0))),
                "ratio",
                "(0, 1]",
            ),
            (
                Box::new(budget(BudgetKind::Ratio, |b| b.window = Some(Duration(0)))),
                "window",
                "> 0",
            ),
            (
                Box::new(budget(BudgetKind::PerMinute, |b| b.per_minute = Some(0.0))),
                "per_minute",
                "> 0",
            ),
            (
                Box::new(budget(BudgetKind::RateLimiter, |b| {
                    b.rate = Some(Rate(0.0))
                })),
                "rate",
                "> 0",
            ),
            (
                Box::new(budget(BudgetKind::RateLimiter, |b| b.burst = Some(0.5))),
                "burst",
                ">= 1",
            ),
        ];
        for (edit, field, fragment) in cases {
            expect(edit, &format!("{B}.{field}"), fragment);
        }
    }

    #[test]
    fn throttle_and_breaker_rules() {
        let throttle = |kind, k, window| {
            move |l: &mut Layer| {
                l.throttle = Some(Throttle {
                    kind,
                    scope: Scope::Instance,
                    k,
                    window,
                })
            }
        };
        expect(
            throttle(ThrottleKind::Adaptive, Some(0.0), None),
            "layers.api.throttle.k",
            "> 0",
        );
        expect(
            throttle(ThrottleKind::Adaptive, None, Some(Duration(0))),
            "layers.api.throttle.window",
            "> 0",
        );
        expect(
            throttle(ThrottleKind::AwsAdaptive, Some(2.0), None),
            "layers.api.throttle.k",
            "only to an adaptive",
        );
        let breaker = |kind, edit: fn(&mut Breaker)| {
            move |l: &mut Layer| {
                let mut b = Breaker {
                    kind,
                    scope: Scope::Instance,
                    blocks: BreakerBlocks::All,
                    failure_ratio: None,
                    min_calls: None,
                    window: None,
                    window_calls: None,
                    open_for: None,
                    probes: None,
                };
                edit(&mut b);
                l.breaker = Some(b);
            }
        };
        let p = "layers.api.breaker";
        expect(
            breaker(BreakerKind::Time, |b| b.window_calls = Some(10)),
            &format!("{p}.window_calls"),
            "only to a count",
        );
        expect(
            breaker(BreakerKind::Count, |b| b.window = Some(Duration(1))),
            &format!("{p}.window"),
            "only to a time",
        );
        expect(
            breaker(BreakerKind::Count, |b| b.window_calls = Some(0)),
            &format!("{p}.window_calls"),
            "at least 1",
        );
        expect(
            breaker(BreakerKind::Time, |b| b.failure_ratio = Some(0.0)),
            &format!("{p}.failure_ratio"),
            "(0, 1]",
        );
        expect(
            breaker(BreakerKind::Time, |b| b.min_calls = Some(0)),
            &format!("{p}.min_calls"),
            "at least 1",
        );
        expect(
            breaker(BreakerKind::Time, |b| b.probes = Some(0)),
            &format!("{p}.probes"),
            "at least 1",
        );
        expect(
            breaker(BreakerKind::Time, |b| b.open_for = Some(Duration(0))),
            &format!("{p}.open_for"),
            "> 0",
        );
    }

    #[test]
    fn retry_and_layer_fields() {
        let r = "layers.api.retry";
        expect(
            |l| {
                l.retry.retry_after = RetryAfterMode::Ignore;
                l.retry.retry_after_cap = Some(Duration(1));
            },
            &format!("{r}.retry_after_cap"),
            "only with `retry_after: honor`, not ignore",
        );
        expect(
            |l| l.retry.retry_after_jitter = Some(1.5),
            &format!("{r}.retry_after_jitter"),
            "[0, 1]",
        );
        expect(
            |l| {
                l.retry.retry_after = RetryAfterMode::Exact;
                l.retry.retry_after_jitter = Some(0.5);
            },
            &format!("{r}.retry_after_jitter"),
            "not exact",
        );
        expect(
            |l| l.retry.retry_after_cap = Some(Duration(0)),
            &format!("{r}.retry_after_cap"),
            "> 0",
        );
        expect(
            |l| l.retry.max_elapsed = Some(Duration(0)),
            &format!("{r}.max_elapsed"),
            "> 0",
        );
        expect(
            |l| l.retry.backoff_mut().throttle_base = Some(Duration(0)),
            &format!("{r}.backoff.throttle_base"),
            "> 0",
        );
        expect(
            |l| {
                l.retry.backoff = Some(Backoff {
                    kind: BackoffKind::Linear,
                    base: Duration(1),
                    multiplier: None,
                    cap: None,
                    throttle_base: None,
                    truncate_ms: true,
                });
            },
            &format!("{r}.backoff.truncate_ms"),
            "only to exponential",
        );
        expect(
            |l| {
                l.retry.backoff = Some(Backoff {
                    kind: BackoffKind::Constant,
                    base: Duration(1),
                    multiplier: None,
                    cap: None,
                    throttle_base: None,
                    truncate_ms: false,
                });
                l.retry.jitter = Jitter::PollyV2;
            },
            &format!("{r}.jitter"),
            "needs exponential backoff",
        );
        expect(|l| l.instances = 0, "layers.api.instances", "1 to 1000000");
        expect(
            |l| l.instances = 1_000_001,
            "layers.api.instances",
            "1 to 1000000",
        );
        expect(
            |l| l.total_timeout = Some(Duration(0)),
            "layers.api.total_timeout",
            "> 0",
        );
        expect(
            |l| l.preset = Some("polly".into()),
            "layers.api.preset",
            "unknown preset `polly`; expected one of aws-standard-2.0",
        );
        expect(
            |l| l.preset = Some("envoy-defualt".into()),
            "layers.api.preset",
            "did you mean `envoy-default`?",
        );
    }
}
