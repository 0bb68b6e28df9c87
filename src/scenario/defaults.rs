//! Defaults that depend on other fields, so serde cannot fill them, and
//! that are never stored while a user may still change the fields they
//! follow (`--set`, a variant, a sweep point): a default never contradicts
//! a value chosen later.
//!
//! Field-dependent defaults ([`fill_defaults`]): the multiplier of
//! exponential backoff (2), the status of an `errors` incident (503), the
//! fields of a budget, throttle or breaker of a given `kind` (changing the
//! kind changes them all), and a count breaker's `window_calls` and
//! `min_calls`, each following the other (Resilience4j's 100 and 100,
//! `min_calls` never more than the window), and a bulkhead's `max_queue`
//! (0 when it refuses, `max_concurrent` when it waits). The model's translation
//! (`build`) reads absent fields through the same defaults.
//!
//! Defaults derived from the run: `bucket` (from `duration`),
//! `analysis.recovery_window` (from the bucket), `occ.base` and `occ.cap`
//! (each from the other), read through `Scenario::bucket`,
//! `Scenario::recovery_window`, `Occ::base` and `Occ::cap`, so that
//! `--set bucket=10s` moves the default recovery window with it; a call's
//! `name` (its callee's by default) and `analysis.service` (derived from
//! the graph).
//!
//! [`fill_derived`] writes all of them out, for `scenario.resolved.yaml`.

use super::types::{
    BackoffKind, Breaker, BreakerKind, Budget, Bulkhead, IncidentKind, Retry, Scenario, Throttle,
    ThrottleKind, budget_defaults,
};
use super::units::Duration;

/// The multiplier of exponential backoff when none is given.
pub const DEFAULT_MULTIPLIER: f64 = 2.0;
/// The status of an `errors` incident when none is given.
pub const DEFAULT_ERROR_STATUS: u16 = 503;

/// Fills every field-dependent default of `s` in place.
pub fn fill_defaults(s: &mut Scenario) {
    for layer in &mut s.layers {
        fill_policy(
            &mut layer.retry,
            &mut layer.throttle,
            &mut layer.breaker,
            &mut layer.bulkhead,
        );
    }
    let calls = s
        .clients
        .calls
        .iter_mut()
        .chain(s.services.iter_mut().flat_map(|svc| svc.calls.iter_mut()));
    for c in calls {
        fill_policy(
            &mut c.retry,
            &mut c.throttle,
            &mut c.breaker,
            &mut c.bulkhead,
        );
    }
    let incidents = s.dependency.incidents.iter_mut().chain(
        s.services
            .iter_mut()
            .flat_map(|svc| svc.incidents.iter_mut()),
    );
    for incident in incidents {
        if incident.kind == IncidentKind::Errors && incident.status.is_none() {
            incident.status = Some(DEFAULT_ERROR_STATUS);
        }
    }
}

/// The field-dependent defaults of one policy (a layer or a call).
fn fill_policy(
    retry: &mut Retry,
    throttle: &mut Option<Throttle>,
    breaker: &mut Option<Breaker>,
    bulkhead: &mut Option<Bulkhead>,
) {
    if let Some(b) = bulkhead.as_mut() {
        b.max_queue = Some(b.max_queue());
    }
    let b = retry.backoff.get_or_insert_with(Default::default);
    if b.kind == BackoffKind::Exponential && b.multiplier.is_none() {
        b.multiplier = Some(DEFAULT_MULTIPLIER);
    }
    if let Some(budget) = retry.budget.as_mut() {
        fill_budget(budget);
    }
    if let Some(t) = throttle.as_mut() {
        fill_throttle(t);
    }
    if let Some(b) = breaker.as_mut() {
        fill_breaker(b);
    }
}

/// Writes out the derived defaults (see the module documentation), for a
/// scenario that will not change any more: the field-dependent ones
/// ([`fill_defaults`]) and those derived from the run.
pub fn fill_derived(s: &mut Scenario) {
    fill_defaults(s);
    s.bucket = Some(s.bucket());
    s.analysis.recovery_window = Some(s.recovery_window());
    if let Some(o) = s.occ.as_mut() {
        o.cap = Some(o.cap());
        o.base = Some(o.base());
    }
    // A graph's call names (the callee's by default) and its focus service.
    let calls = s
        .clients
        .calls
        .iter_mut()
        .chain(s.services.iter_mut().flat_map(|svc| svc.calls.iter_mut()));
    for c in calls {
        if c.name.is_none() {
            c.name = Some(c.to.clone());
        }
    }
    if s.is_graph() && s.analysis.service.is_none() {
        s.analysis.service = s.focus_service().map(|i| s.services[i].name.clone());
    }
}

/// Fills the absent fields of a budget with its kind's real defaults.
pub fn fill_budget(b: &mut Budget) {
    let d = budget_defaults(b.kind);
    macro_rules! fill {
        ($($f:ident),*) => { $( if b.$f.is_none() { b.$f = d.$f; } )* };
    }
    super::types::budget_fields!(fill);
}

/// SRE adaptive throttling: K = 2 over the last 2 minutes (docs/sources/presets.md §8).
pub fn fill_throttle(t: &mut Throttle) {
    if t.kind == ThrottleKind::Adaptive {
        t.k.get_or_insert(2.0);
        t.window.get_or_insert(Duration::from_secs(120));
    }
}

/// Polly v8 (docs/sources/presets.md §5) for `time`, Resilience4j (§6) for `count`.
pub fn fill_breaker(b: &mut Breaker) {
    match b.kind {
        BreakerKind::Time => {
            b.failure_ratio.get_or_insert(0.1);
            b.min_calls.get_or_insert(100);
            b.window.get_or_insert(Duration::from_secs(30));
            b.open_for.get_or_insert(Duration::from_secs(5));
            b.probes.get_or_insert(1);
        }
        BreakerKind::Count => {
            // Resilience4j: 100 calls, at least 100 of them, and never more
            // than the window holds (its builder caps minimumNumberOfCalls
            // at slidingWindowSize): each default follows the other's value.
            b.failure_ratio.get_or_insert(0.5);
            let (window, min) = (b.window_calls, b.min_calls);
            b.window_calls = Some(window.unwrap_or(min.map_or(100, |m| m.max(100))));
            b.min_calls = Some(min.unwrap_or(window.map_or(100, |w| w.min(100))));
            b.open_for.get_or_insert(Duration::from_secs(60));
            b.probes.get_or_insert(10);
        }
    }
}
