//! Translation of a validated scenario into the model's configuration:
//! durations to nanoseconds, rates to per second, the schedule to rate
//! changes, and the recovery criteria from incidents and schedule.
//! Infallible and panic-free on any scenario that passed validation.

use crate::engine::NS_PER_S;
use crate::model::backoff::{Backoff as ModelBackoff, Jitter as ModelJitter};
use crate::model::balancer::Balancer;
use crate::model::breaker::{BreakerConfig, BreakerWindow};
use crate::model::budget::BudgetConfig;
use crate::model::bulkhead::BulkheadConfig;
use crate::model::config::{HedgingConfig, Shared};
use crate::model::occ::{OccConfig, OccPolicy};
use crate::model::outlier::OutlierConfig;
use crate::model::pool::PoolConfig;
use crate::model::rate::{RateChange, RateProfile};
use crate::model::retry::{
    RetryAfterMode as ModelRetryAfter, RetryOn as ModelRetryOn, RetryPolicy,
};
use crate::model::server::SideEffects as ModelSideEffects;
use crate::model::server::{Effect, Incident as ModelIncident, ServiceConfig};
use crate::model::service::ServiceDist;
use crate::model::throttle::ThrottleConfig;
use crate::model::topology::{EdgeConfig, EdgeId, ServiceId, Topology};
use crate::model::{CallPolicy, ClosedLoop, ConsumerConfig, Limits, ModelConfig, RecoveryCriteria};

use std::collections::HashMap;

use super::defaults::{DEFAULT_ERROR_STATUS, DEFAULT_MULTIPLIER, fill_breaker};
use super::graph::{BalancerKind, CLIENTS, Call, DEPENDENCY};
use super::priority::thresholds;
use super::types::{
    ArrivalKind, Backoff, BackoffKind, Breaker, BreakerBlocks, BreakerKind, Budget, BudgetKind,
    CancellationMode, DeadlineMode, Dependency, Discipline, DistKind, Idempotency, Incident,
    IncidentKind, Jitter, Layer, OccPolicyName, OnCancel, Retry, RetryAfterMode, RetryOn, Scenario,
    SchedulePoint, Scope, ServerFields, ServiceTime, SideEffects, Throttle, ThrottleKind, WhenFull,
    budget_defaults,
};
use super::units::Duration;

/// The OCC workload of a validated scenario that has one.
pub fn to_occ(s: &Scenario) -> Option<OccConfig> {
    s.occ.as_ref().map(|o| OccConfig {
        clients: o.clients,
        policy: match o.policy {
            OccPolicyName::NoBackoff => OccPolicy::NoBackoff,
            OccPolicyName::Exponential => OccPolicy::Exponential,
            OccPolicyName::FullJitter => OccPolicy::FullJitter,
            OccPolicyName::EqualJitter => OccPolicy::EqualJitter,
            OccPolicyName::Decorrelated => OccPolicy::Decorrelated,
        },
        base: o.base().ns(),
        cap: o.cap().ns(),
        message_mean: o.message_mean.ns(),
        message_sd: o.message_sd.ns(),
        bucket: s.bucket().ns(),
        max_events: s.limits.max_events,
    })
}

/// The model configuration of a validated scenario.
pub fn to_model(s: &Scenario) -> ModelConfig {
    let topology = if s.is_graph() {
        graph(s)
    } else {
        let layers = if s.layers.is_empty() {
            vec![CallPolicy::passthrough("client")]
        } else {
            s.layers.iter().map(layer).collect()
        };
        let mut dep = dependency(&s.dependency);
        dep.shed_by_priority = thresholds(s, &s.dependency.shed_by_priority);
        Topology::chain(layers, dep)
    };
    ModelConfig {
        duration: s.duration.ns(),
        bucket: s.bucket().ns(),
        arrivals: RateProfile::new(
            s.clients.arrival.rate.map_or(0.0, |r| r.per_sec()),
            &rate_changes(&s.clients.schedule),
        ),
        closed: match s.clients.arrival.kind {
            ArrivalKind::Poisson => None,
            ArrivalKind::Closed => Some(ClosedLoop {
                clients: s.clients.arrival.clients.unwrap_or(1),
                think: s
                    .clients
                    .arrival
                    .think
                    .as_ref()
                    .map_or(ServiceDist::Constant(0), service),
            }),
        },
        consumers: s.consumers.as_ref().map(|c| ConsumerConfig {
            concurrency: c.concurrency.max(1),
            visibility: c.visibility_timeout.ns(),
            max_receive_count: c.max_receive_count.max(1),
            poison: c.poison,
            poison_status: c.poison_status,
        }),
        deadline: s.clients.deadline.map(Duration::ns),
        topology,
        recovery: recovery(s),
        limits: Limits {
            max_events: s.limits.max_events,
            max_in_flight: s.limits.max_in_flight,
        },
        classes: super::priority::class_mix(s),
    }
}

fn rate_changes(schedule: &[SchedulePoint]) -> Vec<RateChange> {
    schedule
        .iter()
        .filter_map(|p| {
            let at = p.at.ns();
            match (p.rate, p.for_, p.ramp_to, p.by) {
                (Some(rate), None, _, _) => Some(RateChange::Step {
                    at,
                    rate: rate.per_sec(),
                }),
                (Some(rate), Some(len), _, _) => Some(RateChange::Spike {
                    at,
                    rate: rate.per_sec(),
                    length: len.ns(),
                }),
                (None, _, Some(to), Some(by)) => Some(RateChange::Ramp {
                    at,
                    to: to.per_sec(),
                    by: by.ns(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// When a schedule point's change is over: at + for for a spike, by for a
/// ramp, at for a step.
fn point_end(p: &SchedulePoint) -> Duration {
    match (p.for_, p.by) {
        (Some(len), _) => Duration(p.at.ns().saturating_add(len.ns())),
        (None, Some(by)) => by,
        (None, None) => p.at,
    }
}

fn layer(l: &Layer) -> CallPolicy {
    CallPolicy {
        name: l.name.clone(),
        instances: l.instances.max(1),
        timeout: l.timeout.map(Duration::ns),
        total_timeout: l.total_timeout.map(Duration::ns),
        retry: retry(&l.retry),
        propagate_deadline: l.deadline == DeadlineMode::Propagate,
        budget: l.retry.budget.as_ref().map(|b| Shared {
            config: budget(b),
            shared: b.scope != Scope::Instance,
        }),
        global_budget: l
            .retry
            .budget
            .as_ref()
            .is_some_and(|b| b.scope == Scope::Global),
        throttle: l.throttle.as_ref().map(|t| Shared {
            config: throttle(t),
            shared: t.scope == Scope::Shared,
        }),
        breaker: l.breaker.as_ref().map(|b| Shared {
            config: breaker(b),
            shared: b.scope == Scope::Shared,
        }),
        cancel_propagates: l.cancellation == CancellationMode::Propagate,
        bulkhead: l.bulkhead.as_ref().map(|b| Shared {
            config: BulkheadConfig {
                max_concurrent: b.max_concurrent.max(1),
                max_queue: b.max_queue(),
                wait: b.when_full == WhenFull::Wait,
            },
            shared: b.scope == Scope::Shared,
        }),
        fan_out: l.fan_out.max(1),
        quorum: l.quorum.unwrap_or(l.fan_out).clamp(1, l.fan_out.max(1)),
        hedging: l.hedging.as_ref().map(|h| HedgingConfig {
            delay: h.delay.ns(),
            max_attempts: h.max_attempts.max(1),
            non_fatal: retry_on(&h.non_fatal),
        }),
        hedge_on_timeout: l.hedge_on_timeout,
        status_probe: l.status_probe,
        retry_other_replica: false,
        outlier: None,
        pool: None,
    }
}

fn retry(r: &Retry) -> RetryPolicy {
    RetryPolicy {
        max_attempts: r.max_attempts.max(1),
        backoff: backoff(&r.backoff()),
        jitter: jitter(r.jitter),
        throttle_base: r.backoff().throttle_base.map(Duration::ns),
        retry_on: retry_on(&r.retry_on),
        retry_after: retry_after(r),
        max_elapsed: r.max_elapsed.map(Duration::ns),
    }
}

fn retry_after(r: &Retry) -> ModelRetryAfter {
    match r.retry_after {
        RetryAfterMode::Honor => ModelRetryAfter::AtLeast {
            cap: r.retry_after_cap.map_or(u64::MAX, Duration::ns),
            jitter: r.retry_after_jitter.unwrap_or(0.0),
        },
        RetryAfterMode::Ignore => ModelRetryAfter::Ignore,
        RetryAfterMode::Exact => ModelRetryAfter::Exact,
        // AWS retry behaviour 2.1: clamp to [t, t + 5 s] (docs/sources/presets.md §1.3).
        RetryAfterMode::AwsClamp => ModelRetryAfter::AwsClamp {
            window: 5 * NS_PER_S,
        },
        // Envoy: headers above max_interval (300 s) are ignored (docs/sources/presets.md §3).
        RetryAfterMode::Envoy => ModelRetryAfter::Envoy {
            max: 300 * NS_PER_S,
        },
        RetryAfterMode::GrpcPushback => ModelRetryAfter::GrpcPushback,
    }
}

/// Budget fields are filled with their kind's defaults by `fill_defaults`;
/// the fallbacks here only keep this function total.
fn budget(b: &Budget) -> BudgetConfig {
    let d = budget_defaults(b.kind);
    let f = |v: Option<f64>, dv: Option<f64>| v.or(dv).unwrap_or(0.0);
    match b.kind {
        BudgetKind::TokenBucket => BudgetConfig::TokenBucket {
            max_tokens: f(b.max_tokens, d.max_tokens),
            token_ratio: f(b.token_ratio, d.token_ratio),
        },
        BudgetKind::RetryTokens => BudgetConfig::RetryTokens {
            capacity: f(b.capacity, d.capacity),
            per_request: f(b.per_request, d.per_request),
            retry_cost: f(b.retry_cost, d.retry_cost),
        },
        BudgetKind::Finagle => BudgetConfig::Finagle {
            ttl: b.ttl.or(d.ttl).map_or(NS_PER_S, Duration::ns),
            min_retries_per_sec: f(b.min_retries_per_sec, d.min_retries_per_sec),
            percent_can_retry: f(b.percent_can_retry, d.percent_can_retry),
            max_requeues_fraction: f(b.max_requeues_fraction, d.max_requeues_fraction),
        },
        BudgetKind::Envoy => BudgetConfig::EnvoyBudget {
            percent: f(b.budget_percent, d.budget_percent),
            min_concurrency: b
                .min_retry_concurrency
                .or(d.min_retry_concurrency)
                .unwrap_or(0),
        },
        BudgetKind::EnvoyMaxRetries => BudgetConfig::EnvoyMaxRetries {
            max: b.max_retries.or(d.max_retries).unwrap_or(0),
        },
        BudgetKind::AwsQuota => {
            let u = |v: Option<f64>, dv: Option<f64>| f(v, dv).round().max(0.0) as u32;
            BudgetConfig::AwsQuota {
                capacity: u(b.capacity, d.capacity),
                retry_cost: u(b.retry_cost, d.retry_cost),
                timeout_cost: u(b.timeout_cost, d.timeout_cost),
                throttle_cost: u(b.throttle_cost, d.throttle_cost),
                success_increment: u(b.success_increment, d.success_increment),
            }
        }
        BudgetKind::Ratio => BudgetConfig::Ratio {
            ratio: f(b.ratio, d.ratio),
            window: b.window.or(d.window).map_or(NS_PER_S, Duration::ns),
        },
        BudgetKind::PerMinute => BudgetConfig::PerMinute {
            per_minute: f(b.per_minute, d.per_minute),
        },
        BudgetKind::RateLimiter => BudgetConfig::RateLimiter {
            rate_per_sec: b.rate.or(d.rate).map_or(1.0, |r| r.per_sec()),
            burst: f(b.burst, d.burst),
        },
    }
}

fn throttle(t: &Throttle) -> ThrottleConfig {
    match t.kind {
        ThrottleKind::Adaptive => ThrottleConfig::Adaptive {
            k: t.k.unwrap_or(2.0),
            window: t.window.map_or(120 * NS_PER_S, Duration::ns),
        },
        ThrottleKind::AwsAdaptive => ThrottleConfig::AwsAdaptive,
    }
}

fn breaker(b: &Breaker) -> BreakerConfig {
    let mut filled = b.clone();
    fill_breaker(&mut filled);
    let window = match b.kind {
        BreakerKind::Time => BreakerWindow::Time(filled.window.map_or(NS_PER_S, Duration::ns)),
        BreakerKind::Count => BreakerWindow::Count(filled.window_calls.unwrap_or(1)),
    };
    let mut min_calls = filled.min_calls.unwrap_or(1);
    if let BreakerWindow::Count(n) = window {
        // Resilience4j's CircuitBreakerConfig.Builder caps
        // minimumNumberOfCalls at a count window's slidingWindowSize.
        min_calls = min_calls.min(n);
    }
    BreakerConfig {
        window,
        failure_ratio: filled.failure_ratio.unwrap_or(1.0),
        min_calls,
        open_for: filled.open_for.map_or(0, Duration::ns),
        probes: filled.probes.unwrap_or(1).max(1),
        retries_only: b.blocks == BreakerBlocks::Retries,
    }
}

fn backoff(b: &Backoff) -> ModelBackoff {
    let base = b.base.ns();
    let cap = b.cap.map_or(u64::MAX, Duration::ns);
    match b.kind {
        BackoffKind::Constant => ModelBackoff::Constant { base },
        BackoffKind::Linear => ModelBackoff::Linear { base, cap },
        BackoffKind::Exponential => ModelBackoff::Exponential {
            base,
            multiplier: b.multiplier.unwrap_or(DEFAULT_MULTIPLIER),
            cap,
            truncate_ms: b.truncate_ms,
        },
    }
}

fn jitter(j: Jitter) -> ModelJitter {
    match j {
        Jitter::None => ModelJitter::None,
        Jitter::Full => ModelJitter::Full,
        Jitter::Equal => ModelJitter::Equal,
        Jitter::Decorrelated => ModelJitter::Decorrelated,
        Jitter::PollyV2 => ModelJitter::PollyV2,
        Jitter::Proportional(f) => ModelJitter::Proportional(f),
    }
}

fn retry_on(list: &[RetryOn]) -> ModelRetryOn {
    let mut out = ModelRetryOn::nothing();
    for on in list {
        match *on {
            RetryOn::Timeout => out.timeout = true,
            RetryOn::Connection => out.connection = true,
            RetryOn::Status(code) => out = out.with_status(code),
            RetryOn::Class(class) => {
                let first = class as u16 * 100;
                for code in first..first + 100 {
                    out = out.with_status(code);
                }
            }
        }
    }
    out
}

/// A services graph: service ids in file order; edge 0 is the clients'
/// entry (`clients.NAME`), then each service's calls in file order
/// (`SERVICE.NAME`); the focus is `Scenario::focus_service`.
fn graph(s: &Scenario) -> Topology {
    let mut index: HashMap<&str, u16> = HashMap::new();
    for (i, svc) in s.services.iter().enumerate() {
        index.entry(svc.name.as_str()).or_insert(i as u16);
    }
    let callee = |to: &str| ServiceId(index.get(to).copied().unwrap_or(0));
    let mut edges = Vec::with_capacity(1 + s.services.iter().map(|x| x.calls.len()).sum::<usize>());
    edges.push(match &s.clients.calls {
        Some(entry) => EdgeConfig {
            caller: None,
            callee: callee(&entry.to),
            policy: call_policy(entry, CLIENTS),
            parallel: false,
            optional: false,
        },
        // Refused by validation; kept total.
        None => EdgeConfig {
            caller: None,
            callee: ServiceId(0),
            policy: CallPolicy::passthrough(CLIENTS),
            parallel: false,
            optional: false,
        },
    });
    let mut services = Vec::with_capacity(s.services.len());
    for (i, svc) in s.services.iter().enumerate() {
        let mut cfg = server(
            &svc.name,
            svc.concurrency,
            svc.service_time.as_ref(),
            svc.hold_worker,
            &svc.server_fields(),
        );
        cfg.replicas = svc.replicas.max(1);
        cfg.shed_by_priority = thresholds(s, &svc.shed_by_priority);
        cfg.slowdown = svc.slowdown.as_ref().map(|sd| sd.to_model());
        cfg.adaptive = svc.adaptive_concurrency.as_ref().map(|a| a.to_model());
        cfg.cache = svc.cache.as_ref().map(|c| c.to_model());
        if let Some(a) = &svc.autoscale {
            let a = a.to_model(svc.replicas.max(1));
            // Every replica the fleet may have exists from the start; the
            // autoscaler turns them on and off.
            cfg.replicas = a.max;
            cfg.autoscale = Some(a);
        }
        cfg.balancer = match svc.balancer {
            BalancerKind::RoundRobin => Balancer::RoundRobin,
            BalancerKind::Random => Balancer::Random,
            BalancerKind::LeastRequests => Balancer::LeastRequests,
            BalancerKind::P2c => Balancer::P2c,
        };
        for call in &svc.calls {
            cfg.calls.push(EdgeId(edges.len() as u16));
            let mut policy = call_policy(call, &svc.name);
            // Policy state per caller replica, unless the call says how many
            // instances its caller has.
            if cfg.replicas > 1 && call.instances == 1 {
                policy.instances = cfg.replicas;
            }
            edges.push(EdgeConfig {
                caller: Some(ServiceId(i as u16)),
                callee: callee(&call.to),
                policy,
                parallel: call.parallel,
                optional: call.optional,
            });
        }
        services.push(cfg);
    }
    let focus = ServiceId(s.focus_service().unwrap_or(0) as u16);
    Topology::new(services, edges, focus).expect("a validated services graph is a valid topology")
}

/// The policy of `call` made by `caller` (a service's name, or `clients`),
/// named `CALLER.CALL`.
fn call_policy(call: &Call, caller: &str) -> CallPolicy {
    let mut p = layer(&call.to_layer(&format!("{caller}.{}", call.label())));
    p.retry_other_replica = call.retry_other_replica;
    p.pool = call.pool.as_ref().map(|pool| PoolConfig {
        size: pool.size.max(1),
        acquire_timeout: pool.acquire_timeout.ns().max(1),
        connect: pool.connect.ns(),
    });
    p.outlier = call.outlier_detection.as_ref().map(|o| OutlierConfig {
        consecutive_5xx: o.consecutive_5xx.max(1),
        interval: o.interval.ns().max(1),
        base_ejection: o.base_ejection.ns(),
        max_ejection_percent: o.max_ejection_percent,
        max_ejection: o.max_ejection.ns(),
    });
    p
}

fn dependency(d: &Dependency) -> ServiceConfig {
    server(
        DEPENDENCY,
        Some(d.concurrency),
        Some(&d.service_time),
        true,
        &d.server_fields(),
    )
}

/// A service's server: `concurrency` workers (`None`: unlimited), its own
/// work (`None`: none), and the fields every server has.
fn server(
    name: &str,
    concurrency: Option<u32>,
    service_time: Option<&ServiceTime>,
    hold_worker: bool,
    d: &ServerFields,
) -> ServiceConfig {
    ServiceConfig {
        name: name.to_string(),
        concurrency,
        service: service_time.map(service),
        queue_capacity: d.queue.capacity,
        lifo: d.queue.discipline == Discipline::Lifo,
        queue_timeout: d.queue.timeout.map(Duration::ns),
        queue_timeout_status: d.queue.timeout_status,
        shed_status: d.overload.status,
        shed_retry_after: d.overload.retry_after.map_or(0, Duration::ns),
        incidents: d.incidents.iter().flat_map(incident).collect(),
        warmup: d.recovery.warmup.ns(),
        warmup_from: d.recovery.from,
        side_effects: match d.side_effects {
            SideEffects::Read => ModelSideEffects::Read,
            SideEffects::IdempotentWrite => ModelSideEffects::IdempotentWrite,
            SideEffects::Write => ModelSideEffects::Write,
        },
        dedupe: d.idempotency == Idempotency::Key,
        dedupe_cost: d.dedupe_cost.ns(),
        stop_on_cancel: d.on_cancel == OnCancel::Stop,
        hold_worker,
        calls: Vec::new(),
        replicas: 1,
        balancer: Balancer::RoundRobin,
        slowdown: None,
        autoscale: None,
        adaptive: None,
        cache: None,
        shed_by_priority: Default::default(),
    }
}

fn service(st: &ServiceTime) -> ServiceDist {
    let ns = |d: Option<Duration>| d.map_or(1, Duration::ns);
    match st.dist {
        DistKind::Constant => ServiceDist::Constant(ns(st.value)),
        DistKind::Exponential => ServiceDist::Exponential { mean: ns(st.mean) },
        DistKind::Lognormal => ServiceDist::lognormal_from_median_p99(ns(st.median), ns(st.p99)),
        DistKind::Uniform => ServiceDist::Uniform {
            min: ns(st.min),
            max: ns(st.max),
        },
    }
}

/// An incident of the scenario: one of the model's, or one per replica it
/// names.
fn incident(i: &Incident) -> Vec<ModelIncident> {
    let effect = match i.kind {
        IncidentKind::Down => Effect::Down,
        IncidentKind::Blackhole => Effect::Blackhole,
        IncidentKind::Brownout => Effect::Brownout {
            capacity: i.capacity.unwrap_or(1.0),
        },
        IncidentKind::Errors => Effect::Errors {
            rate: i.rate.unwrap_or(0.0),
            status: i.status.unwrap_or(DEFAULT_ERROR_STATUS),
        },
        IncidentKind::Latency => Effect::Latency {
            add: i.add.map_or(0, Duration::ns),
        },
        IncidentKind::Flush => Effect::Flush,
    };
    let one = |replica| ModelIncident {
        start: i.start.ns(),
        end: i.end.ns(),
        effect,
        replica,
    };
    match &i.replicas {
        None => vec![one(None)],
        Some(t) => t.indices().into_iter().map(|r| one(Some(r))).collect(),
    }
}

/// When the trigger starts: the first incident (of any service) or the
/// first schedule change after 0, whichever comes first.
pub(crate) fn trigger_start(s: &Scenario) -> Option<crate::engine::Nanos> {
    let first_incident = s
        .dependency
        .incidents
        .iter()
        .chain(s.services.iter().flat_map(|x| &x.incidents))
        .map(|i| i.start.ns())
        .min();
    let first_change = s
        .clients
        .schedule
        .iter()
        .map(|p| p.at.ns())
        .filter(|&t| t > 0)
        .min();
    match (first_incident, first_change) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The trigger starts at the first incident (of any service) or the first
/// schedule change after 0, and ends at `analysis.trigger_end`, else the
/// last incident's end, else the end of the last schedule change.
fn recovery(s: &Scenario) -> RecoveryCriteria {
    let incidents: Vec<&Incident> = s
        .dependency
        .incidents
        .iter()
        .chain(s.services.iter().flat_map(|x| &x.incidents))
        .collect();
    let trigger_start = trigger_start(s);
    let trigger_end = s
        .analysis
        .trigger_end
        .map(Duration::ns)
        .or_else(|| incidents.iter().map(|i| i.end.ns()).max())
        .or_else(|| {
            s.clients
                .schedule
                .last()
                .map(|p| point_end(p).ns())
                .filter(|&t| t > 0)
        });
    RecoveryCriteria {
        trigger_start,
        trigger_end,
        threshold: s.analysis.recovery_threshold,
        window: s.recovery_window().ns(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, NS_PER_S};
    use crate::model::backoff::Backoff as B;
    use crate::model::outcome::Cause;
    use crate::scenario::fixtures::{FULL, MINIMAL};
    use crate::scenario::load_str;

    #[test]
    fn translates_the_full_example() {
        let m = to_model(&load_str(FULL, "full.yaml").unwrap());
        assert_eq!(m.duration, 600 * NS_PER_S);
        assert_eq!(m.bucket, NS_PER_S);
        assert_eq!(m.deadline, Some(10 * NS_PER_S));
        // Rates per second through the schedule: step, spike, ramp.
        assert!((m.arrivals.per_sec_at(0) - 2000.0).abs() < 1e-6);
        assert!((m.arrivals.per_sec_at(90 * NS_PER_S) - 2500.0).abs() < 1e-6);
        assert!((m.arrivals.per_sec_at(125 * NS_PER_S) - 6000.0).abs() < 1e-6);
        assert!((m.arrivals.per_sec_at(135 * NS_PER_S) - 2500.0).abs() < 1e-6);
        assert!((m.arrivals.per_sec_at(330 * NS_PER_S) - 1500.0).abs() < 1e-6);
        assert!((m.arrivals.per_sec_at(400 * NS_PER_S) - 500.0).abs() < 1e-6);

        let api = &m.topology.edges()[0].policy;
        assert_eq!(api.name, "api");
        assert_eq!(api.timeout, Some(NS_PER_S));
        assert_eq!(api.retry.max_attempts, 4);
        assert_eq!(
            api.retry.backoff,
            B::Exponential {
                base: 100 * NS_PER_MS,
                multiplier: 2.0,
                cap: 5 * NS_PER_S,
                truncate_ms: false,
            }
        );
        assert_eq!(api.retry.jitter, ModelJitter::Full);
        let on = api.retry.retry_on;
        assert!(on.timeout && on.connection && on.status(429) && on.status(503));
        assert!(!on.status(500) && !on.retries(Cause::Status(502)));
        assert_eq!(
            api.retry.retry_after,
            ModelRetryAfter::AtLeast {
                cap: u64::MAX,
                jitter: 0.0
            }
        );
        assert!(!api.propagate_deadline);

        let st = &m.topology.edges()[1].policy;
        assert_eq!(
            st.retry.backoff,
            B::Linear {
                base: 50 * NS_PER_MS,
                cap: 200 * NS_PER_MS
            }
        );
        assert_eq!(st.retry.jitter, ModelJitter::Proportional(0.5));
        assert_eq!(st.retry.retry_after, ModelRetryAfter::Ignore);
        assert!(st.propagate_deadline);
        // The default retry_on of a layer without one.
        assert!(st.retry.retry_on.status(500) && st.retry.retry_on.status(504));

        let d = m.topology.service(m.topology.focus());
        assert_eq!(
            (d.concurrency, d.queue_capacity, d.lifo),
            (Some(64), 512, true)
        );
        assert_eq!(d.queue_timeout, Some(2 * NS_PER_S));
        assert_eq!((d.shed_status, d.shed_retry_after), (429, 2 * NS_PER_S));
        assert_eq!(
            d.service,
            Some(ServiceDist::lognormal_from_median_p99(
                20 * NS_PER_MS,
                120 * NS_PER_MS
            ))
        );
        assert_eq!(d.incidents.len(), 5);
        assert_eq!(
            d.incidents[0],
            ModelIncident {
                start: 120 * NS_PER_S,
                end: 180 * NS_PER_S,
                effect: Effect::Down,
                replica: None
            }
        );
        assert_eq!(d.incidents[2].effect, Effect::Brownout { capacity: 0.3 });
        assert_eq!(
            d.incidents[3].effect,
            Effect::Errors {
                rate: 0.5,
                status: 503
            }
        );
        assert_eq!(
            d.incidents[4].effect,
            Effect::Latency {
                add: 400 * NS_PER_MS
            }
        );
        assert_eq!((d.warmup, d.warmup_from), (30 * NS_PER_S, 0.1));

        // First schedule change at 1m precedes the first incident at 2m.
        assert_eq!(m.recovery.trigger_start, Some(60 * NS_PER_S));
        assert_eq!(m.recovery.trigger_end, Some(570 * NS_PER_S));
        assert_eq!(
            (m.recovery.threshold, m.recovery.window),
            (0.9, 5 * NS_PER_S)
        );
        assert_eq!(
            (m.limits.max_events, m.limits.max_in_flight),
            (2_000_000_000, 5_000_000)
        );
    }

    #[test]
    fn passthrough_layer_and_no_trigger() {
        let m = to_model(&load_str(MINIMAL, "m.yaml").unwrap());
        assert_eq!(m.topology.edges().len(), 1);
        assert_eq!(m.topology.edges()[0].policy.name, "client");
        assert_eq!(m.topology.edges()[0].policy.retry.max_attempts, 1);
        assert_eq!(m.topology.service(m.topology.focus()).shed_retry_after, 0);
        assert_eq!(
            m.topology.service(m.topology.focus()).service,
            Some(ServiceDist::Exponential {
                mean: 25 * NS_PER_MS
            })
        );
        assert_eq!(
            (m.recovery.trigger_start, m.recovery.trigger_end),
            (None, None)
        );
    }

    #[test]
    fn trigger_from_schedule_only() {
        let src = MINIMAL.replace(
            "  arrival: { kind: poisson, rate: 100/s }\n",
            "  arrival: { kind: poisson, rate: 100/s }\n  schedule: [ { at: 10s, rate: 500/s, for: 5s } ]\n",
        );
        let m = to_model(&load_str(&src, "m.yaml").unwrap());
        assert_eq!(m.recovery.trigger_start, Some(10 * NS_PER_S));
        assert_eq!(m.recovery.trigger_end, Some(15 * NS_PER_S));
        let cap = MINIMAL.replace("rate: 100/s }", "rate: 100/s }\nlayers: [ { name: a, retry: { backoff: { kind: linear, base: 1ms } } } ]");
        let m = to_model(&load_str(&cap, "m.yaml").unwrap());
        assert_eq!(
            m.topology.edges()[0].policy.retry.backoff,
            B::Linear {
                base: NS_PER_MS,
                cap: u64::MAX
            }
        );
    }
}
