//! Each preset against docs/sources/presets.md: its delay sequence,
//! attempt count and budget behaviour, exactly where the library is
//! deterministic, by bounds and means over many draws where it is random.
//! Everything goes through the model config `scenario::to_model` builds.

use super::PRESETS;
use crate::engine::{NS_PER_MS, NS_PER_S, Nanos, Purpose, Stream};
use crate::model::CallPolicy;
use crate::model::backoff::{Jitter, SleepState, sleep_before_retry};
use crate::model::breaker::BreakerWindow;
use crate::model::budget::{Budget, BudgetConfig, Gate};
use crate::model::outcome::{Cause, Failure};
use crate::model::retry::{Decision, RetryAfterMode, RetryState, decide};
use crate::model::throttle::ThrottleConfig;
use crate::scenario::fixtures::MINIMAL;
use crate::scenario::{load_str, to_model};

const MS: f64 = NS_PER_MS as f64;
const S: f64 = NS_PER_S as f64;

fn layer(preset: &str) -> CallPolicy {
    let src = format!("{MINIMAL}layers:\n  - name: a\n    preset: {preset}\n");
    let s = load_str(&src, "x.yaml").unwrap_or_else(|e| panic!("{e}"));
    to_model(&s).topology.edges()[0].policy.clone()
}

/// Ceilings (delays before jitter) of retries 1..=n, in ms.
fn ceilings_ms(l: &CallPolicy, n: u32) -> Vec<f64> {
    (1..=n)
        .map(|k| l.retry.backoff.delay(k) as f64 / MS)
        .collect()
}

/// `draws` sleep sequences of `n` retries: per retry, (min, mean, max) in ns.
fn sample(l: &CallPolicy, n: u32, draws: usize) -> Vec<(f64, f64, f64)> {
    let mut rng = Stream::new(11, Purpose::Jitter, 0);
    let mut stats = vec![(f64::MAX, 0.0, 0.0f64); n as usize];
    for _ in 0..draws {
        let mut st = SleepState::default();
        for k in 1..=n {
            let s =
                sleep_before_retry(&l.retry.backoff, l.retry.jitter, k, &mut st, &mut rng) as f64;
            let e = &mut stats[k as usize - 1];
            e.0 = e.0.min(s);
            e.1 += s / draws as f64;
            e.2 = e.2.max(s);
        }
    }
    stats
}

/// Attempts a call makes when every attempt fails with `cause` at once
/// (time advances by each sleep when `max_elapsed` is set), and the sleeps.
fn attempts(l: &CallPolicy, cause: Cause) -> (u32, Vec<Nanos>) {
    let mut rng = Stream::new(3, Purpose::Jitter, 0);
    let mut st = RetryState {
        attempts: 1,
        ..RetryState::default()
    };
    let mut now = 0;
    let mut sleeps = vec![];
    loop {
        match decide(
            &l.retry,
            Failure::new(cause),
            &mut st,
            now,
            u64::MAX,
            &mut rng,
        ) {
            Decision::RetryAfter(s) => {
                sleeps.push(s);
                if l.retry.max_elapsed.is_some() {
                    now += s;
                }
                st.attempts += 1;
            }
            Decision::GiveUp(_) => return (st.attempts, sleeps),
        }
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

fn budget(l: &CallPolicy) -> (Budget, BudgetConfig, bool) {
    let b = l.budget.expect("the preset has a budget");
    (Budget::new(b.config), b.config, b.shared)
}

/// Full jitter: U(0, ceiling): within [0, ceiling], mean ceiling / 2.
fn assert_full_jitter(l: &CallPolicy, n: u32) {
    assert_eq!(l.retry.jitter, Jitter::Full);
    for (k, (lo, mean, hi)) in sample(l, n, 20_000).into_iter().enumerate() {
        let c = l.retry.backoff.delay(k as u32 + 1) as f64;
        assert!(lo >= 0.0 && hi <= c, "retry {}: [{lo}, {hi}] vs {c}", k + 1);
        assert!(
            close(mean, c / 2.0, 0.03),
            "retry {}: mean {mean} vs {}",
            k + 1,
            c / 2.0
        );
    }
}

#[test]
fn every_preset_builds() {
    for p in PRESETS {
        let l = layer(p.name);
        assert!(l.retry.max_attempts >= 2, "{}", p.name);
    }
}

#[test]
fn aws_standard_2_0() {
    // §1.2: 3 attempts; rand * min(1 s * 2^(k-1), 20 s): 1, 2, 4, 8, 16, 20, 20 s.
    let l = layer("aws-standard-2.0");
    assert_eq!(
        ceilings_ms(&l, 7),
        [1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 20000.0, 20000.0]
    );
    assert_full_jitter(&l, 7);
    assert_eq!(attempts(&l, Cause::Status(503)).0, 3);
    assert_eq!(attempts(&l, Cause::Status(400)).0, 1);
    assert_eq!(l.retry.retry_after, RetryAfterMode::Ignore);
    // Quota: 500; retry costs 5, 10 after a timeout; success refunds the last cost.
    let (mut b, _, shared) = budget(&l);
    assert!(!shared);
    let mut call = b.on_call_start(0);
    b.on_attempt_end(&mut call, Some(Cause::Status(500)));
    assert_eq!(
        b.try_retry(0, &mut call, Cause::Status(500), 0),
        Gate::Allow { min_sleep: 0 }
    );
    assert_eq!(b.level(0), 495.0);
    b.on_attempt_end(&mut call, Some(Cause::Timeout));
    b.try_retry(0, &mut call, Cause::Timeout, 1);
    assert_eq!(b.level(0), 485.0);
    b.on_attempt_end(&mut call, None);
    assert_eq!(b.level(0), 495.0);
    // A first-try success adds 1 (up to 500).
    let mut c2 = b.on_call_start(0);
    b.on_attempt_end(&mut c2, None);
    assert_eq!(b.level(0), 496.0);
}

#[test]
fn aws_standard_2_1() {
    // §1.3: x = 50 ms (1 s after throttling); Go test vector with rand = 1:
    // 50, 100, 200, 400 ms; quota 500 -> 486 -> 472 -> 458 -> 444.
    let l = layer("aws-standard-2.1");
    assert_eq!(ceilings_ms(&l, 4), [50.0, 100.0, 200.0, 400.0]);
    assert_eq!(l.retry.throttle_base, Some(NS_PER_S));
    assert_full_jitter(&l, 6);
    assert_eq!(attempts(&l, Cause::Timeout).0, 3);
    assert_eq!(
        l.retry.retry_after,
        RetryAfterMode::AwsClamp {
            window: 5 * NS_PER_S
        }
    );
    let (mut b, _, _) = budget(&l);
    let mut call = b.on_call_start(0);
    let mut levels = vec![b.level(0)];
    for r in 0..4 {
        b.on_attempt_end(&mut call, Some(Cause::Status(500)));
        assert!(matches!(
            b.try_retry(0, &mut call, Cause::Status(500), r),
            Gate::Allow { .. }
        ));
        levels.push(b.level(0));
    }
    assert_eq!(levels, [500.0, 486.0, 472.0, 458.0, 444.0]);
    // Throttling costs 5; timeouts cost 14 too.
    b.on_attempt_end(&mut call, Some(Cause::Status(429)));
    b.try_retry(0, &mut call, Cause::Status(429), 4);
    assert_eq!(b.level(0), 439.0);
    b.on_attempt_end(&mut call, Some(Cause::Timeout));
    b.try_retry(0, &mut call, Cause::Timeout, 5);
    assert_eq!(b.level(0), 425.0);
    // x-amz-retry-after 10000 ms with t = 50 ms: clamp to t + 5 s.
    let mut rng = Stream::new(1, Purpose::Jitter, 0);
    let mut st = RetryState {
        attempts: 1,
        ..RetryState::default()
    };
    let f = Failure {
        cause: Cause::Status(503),
        retry_after: 10 * NS_PER_S,
        by_priority: false,
    };
    match decide(&l.retry, f, &mut st, 0, u64::MAX, &mut rng) {
        Decision::RetryAfter(s) => assert!((5 * NS_PER_S..=5050 * NS_PER_MS).contains(&s), "{s}"),
        d => panic!("{d:?}"),
    }
}

#[test]
fn aws_legacy_botocore() {
    // §1.4: 5 attempts, rand * 2^(k-1) s with no cap; 502 and 504 retried
    // (botocore _retry.json @6403a357: bad_gateway, gateway_timeout).
    let l = layer("aws-legacy-botocore");
    assert_eq!(
        ceilings_ms(&l, 6),
        [1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0]
    );
    assert_full_jitter(&l, 4);
    assert_eq!(attempts(&l, Cause::Status(503)).0, 5);
    assert_eq!(attempts(&l, Cause::Status(509)).0, 5);
    assert_eq!(attempts(&l, Cause::Status(502)).0, 5);
    assert_eq!(attempts(&l, Cause::Status(504)).0, 5);
    assert!(l.budget.is_none() && l.throttle.is_none());
    assert_eq!(l.retry.retry_after, RetryAfterMode::Ignore);
}

#[test]
fn aws_adaptive() {
    // §1.5: standard 2.0 plus the CUBIC client rate limiter.
    let l = layer("aws-adaptive");
    let std = layer("aws-standard-2.0");
    assert_eq!(l.retry, std.retry);
    assert_eq!(l.budget, std.budget);
    let t = l.throttle.expect("throttle");
    assert_eq!((t.config, t.shared), (ThrottleConfig::AwsAdaptive, false));
}

fn token_bucket_allows_4_retries_then_denies(l: &CallPolicy) {
    // §2: tokens start at 10; a failure takes 1; retry only while > 5.
    let (mut b, cfg, _) = budget(l);
    assert_eq!(
        cfg,
        BudgetConfig::TokenBucket {
            max_tokens: 10.0,
            token_ratio: 0.1
        }
    );
    let mut call = b.on_call_start(0);
    let mut gates = vec![];
    for r in 0..5 {
        b.on_attempt_end(&mut call, Some(Cause::Status(503)));
        gates.push(b.try_retry(0, &mut call, Cause::Status(503), r) == Gate::Deny);
    }
    assert_eq!(gates, [false, false, false, false, true]);
    // 10 successes add 1 token: 5 -> 6, above half again.
    for _ in 0..10 {
        b.on_attempt_end(&mut call, None);
    }
    assert!((b.level(0) - 6.0).abs() < 1e-9);
}

#[test]
fn grpc_a6() {
    // §2: min(0.1 s * 2^(k-1), 1 s) * U(0.8, 1.2); 4 attempts; UNAVAILABLE only.
    let l = layer("grpc-a6");
    assert_eq!(ceilings_ms(&l, 5), [100.0, 200.0, 400.0, 800.0, 1000.0]);
    assert_eq!(l.retry.jitter, Jitter::Proportional(0.2));
    for (k, (lo, mean, hi)) in sample(&l, 5, 20_000).into_iter().enumerate() {
        let c = l.retry.backoff.delay(k as u32 + 1) as f64;
        assert!(
            lo >= 0.8 * c - 1.0 && hi <= 1.2 * c + 1.0,
            "retry {}",
            k + 1
        );
        assert!(close(mean, c, 0.01), "retry {}: {mean} vs {c}", k + 1);
    }
    assert_eq!(attempts(&l, Cause::Status(503)).0, 4);
    // A connection failure is UNAVAILABLE in gRPC: retried. A timeout is
    // the call's deadline: not retried.
    assert_eq!(attempts(&l, Cause::Connection).0, 4);
    assert_eq!(attempts(&l, Cause::Timeout).0, 1);
    assert_eq!(attempts(&l, Cause::Status(500)).0, 1);
    assert_eq!(l.retry.retry_after, RetryAfterMode::GrpcPushback);
    token_bucket_allows_4_retries_then_denies(&l);
}

#[test]
fn grpc_a6_legacy() {
    // §2: U(0, min(0.1 s * 2^(k-1), 1 s)).
    let l = layer("grpc-a6-legacy");
    assert_eq!(ceilings_ms(&l, 5), [100.0, 200.0, 400.0, 800.0, 1000.0]);
    assert_full_jitter(&l, 5);
    assert_eq!(attempts(&l, Cause::Status(503)).0, 4);
    assert_eq!(attempts(&l, Cause::Connection).0, 4);
    assert_eq!(attempts(&l, Cause::Timeout).0, 1);
    token_bucket_allows_4_retries_then_denies(&l);
}

/// How each preset treats the two failures every library sees, connection
/// errors and per-attempt timeouts, as its upstream source says (cited in
/// each preset file): retried (true) or not.
#[test]
fn connection_errors_and_timeouts_map_as_upstream() {
    let table: &[(&str, bool, bool)] = &[
        // (preset, connection retried, timeout retried)
        ("aws-standard-2.0", true, true),
        ("aws-standard-2.1", true, true),
        ("aws-legacy-botocore", true, true),
        ("aws-adaptive", true, true),
        // gRPC: connection failures are UNAVAILABLE; a timeout is the
        // call's DEADLINE_EXCEEDED.
        ("grpc-a6", true, false),
        ("grpc-a6-legacy", true, false),
        // Envoy: connect-failure, and per-try timeouts under gateway-error.
        ("envoy-default", true, true),
        ("envoy-retry-budget", true, true),
        // Finagle requeues only what was never written.
        ("finagle-default", true, false),
        ("polly-v8-default", true, true),
        ("polly-v8-exp-jitter", true, true),
        ("ms-http-standard", true, true),
        ("resilience4j-default", true, true),
        ("resilience4j-exp-random", true, true),
        ("tenacity-random-exponential", true, true),
        ("cenkalti-v4", true, true),
        ("backon-exponential", true, true),
        ("k8s-workqueue-default", true, true),
        ("sre-retry-budget", true, true),
        // axios-retry: network errors, not timeouts (ECONNABORTED).
        ("axios-retry-default", true, false),
    ];
    assert_eq!(table.len(), PRESETS.len());
    for &(name, connection, timeout) in table {
        let l = layer(name);
        assert_eq!(
            l.retry.retry_on.connection, connection,
            "{name}: connection"
        );
        assert_eq!(l.retry.retry_on.timeout, timeout, "{name}: timeout");
        assert_eq!(attempts(&l, Cause::Connection).0 > 1, connection, "{name}");
    }
}

fn envoy_common(l: &CallPolicy) {
    // §3: 2 attempts; ceilings 25, 50, 100, 200, 250 ms; route timeout 15 s.
    assert_eq!(ceilings_ms(l, 6), [25.0, 50.0, 100.0, 200.0, 250.0, 250.0]);
    assert_full_jitter(l, 6);
    assert_eq!(attempts(l, Cause::Status(503)).0, 2);
    assert_eq!(attempts(l, Cause::Connection).0, 2);
    assert_eq!(attempts(l, Cause::Status(429)).0, 1);
    assert_eq!(attempts(l, Cause::Status(500)).0, 1);
    assert_eq!(l.total_timeout, Some(15 * NS_PER_S));
    assert_eq!(l.retry.retry_after, RetryAfterMode::Ignore);
}

#[test]
fn envoy_default() {
    let l = layer("envoy-default");
    envoy_common(&l);
    // max_retries circuit breaker: 3 concurrent retries per cluster.
    let (mut b, cfg, shared) = budget(&l);
    assert_eq!(
        (cfg, shared),
        (BudgetConfig::EnvoyMaxRetries { max: 3 }, true)
    );
    let gates: Vec<bool> = (0..4)
        .map(|_| {
            let mut c = b.on_call_start(0);
            b.on_attempt_end(&mut c, Some(Cause::Status(503)));
            b.try_retry(0, &mut c, Cause::Status(503), 0) == Gate::Deny
        })
        .collect();
    assert_eq!(gates, [false, false, false, true]);
}

#[test]
fn envoy_retry_budget() {
    let l = layer("envoy-retry-budget");
    envoy_common(&l);
    // max(20% x active, 3): with 100 active calls, 20 concurrent retries.
    let (mut b, cfg, shared) = budget(&l);
    assert_eq!(
        (cfg, shared),
        (
            BudgetConfig::EnvoyBudget {
                percent: 20.0,
                min_concurrency: 3
            },
            true
        )
    );
    let mut calls: Vec<_> = (0..100).map(|_| b.on_call_start(0)).collect();
    let allowed = calls
        .iter_mut()
        .map(|c| b.try_retry(0, c, Cause::Status(503), 0))
        .filter(|g| *g != Gate::Deny)
        .count();
    assert_eq!(allowed, 20);
}

#[test]
fn finagle_default() {
    // §4: immediate requeues of connection failures only; RetryBudget(10 s,
    // 10/s, 20%): balance 100 at start, <= ceil(0.2 x 100) = 20 per request.
    let l = layer("finagle-default");
    let (n, sleeps) = attempts(&l, Cause::Connection);
    assert_eq!(n, 21);
    assert!(sleeps.iter().all(|&s| s == 0));
    assert_eq!(attempts(&l, Cause::Timeout).0, 1);
    assert_eq!(attempts(&l, Cause::Status(503)).0, 1);
    let (mut b, _, shared) = budget(&l);
    assert!(!shared);
    assert_eq!(b.level(0), 100.0);
    let mut call = b.on_call_start(0);
    assert_eq!(call.requeue_cap, 20);
    let granted = (0..25)
        .take_while(|&r| b.try_retry(0, &mut call, Cause::Connection, r) != Gate::Deny)
        .count();
    assert_eq!(granted, 20);
    // The reserve allows 100 retries per 10 s without deposits; each call's
    // cap shrinks with the balance (ceil(0.2 x balance)).
    let mut c = b.on_call_start(0);
    assert_eq!(c.requeue_cap, 16);
    let mut total = 20;
    total += (0..25)
        .take_while(|&r| b.try_retry(0, &mut c, Cause::Connection, r) != Gate::Deny)
        .count();
    for _ in 0..200 {
        let mut c = b.on_call_start(0);
        total += (0..25)
            .take_while(|&r| b.try_retry(0, &mut c, Cause::Connection, r) != Gate::Deny)
            .count();
    }
    assert_eq!(total, 100);
}

#[test]
fn polly_v8_default() {
    // §5: 1 + 3 retries, constant 2 s, no jitter, any exception.
    let l = layer("polly-v8-default");
    let (n, sleeps) = attempts(&l, Cause::Timeout);
    assert_eq!((n, sleeps), (4, vec![2 * NS_PER_S; 3]));
    assert_eq!(attempts(&l, Cause::Status(500)).0, 4);
    assert_eq!(attempts(&l, Cause::Status(404)).0, 4);
    assert!(l.budget.is_none() && l.breaker.is_none());
}

/// §5 DecorrelatedJitterBackoffV2 with base 2 s: first delay in
/// [0, 1.3772 x 2 s); the sum of sleeps telescopes to
/// next(t) / 1.4 x base, so its mean is E[2^t tanh(sqrt(4t))] / 1.4 x 2 s.
fn assert_polly_v2(l: &CallPolicy) {
    assert_eq!(l.retry.jitter, Jitter::PollyV2);
    let stats = sample(l, 3, 20_000);
    assert!(stats[0].0 >= 0.0 && stats[0].2 < 1.3772 * 2.0 * S);
    let f = |t: f64| 2f64.powf(t) * (4.0 * t).sqrt().tanh();
    let mean_next = |a: f64| {
        (0..10_000)
            .map(|i| f(a + (i as f64 + 0.5) / 10_000.0))
            .sum::<f64>()
            / 10_000.0
    };
    let total: f64 = stats.iter().map(|s| s.1).sum();
    assert!(
        close(total, mean_next(2.0) / 1.4 * 2.0 * S, 0.02),
        "{total}"
    );
    assert!(close(stats[0].1, mean_next(0.0) / 1.4 * 2.0 * S, 0.02));
    assert_eq!(attempts(l, Cause::Timeout).0, 4);
}

#[test]
fn polly_v8_exp_jitter() {
    let l = layer("polly-v8-exp-jitter");
    assert_polly_v2(&l);
    assert_eq!(l.retry.backoff.cap(), u64::MAX);
}

#[test]
fn ms_http_standard() {
    // §5: DJV2 base 2 s, attempt timeout 10 s, total 30 s, breaker
    // 10% / 100 / 30 s / 5 s, retry >= 500, 408, 429 and exceptions,
    // Retry-After exact.
    let l = layer("ms-http-standard");
    assert_polly_v2(&l);
    assert_eq!(
        (l.timeout, l.total_timeout),
        (Some(10 * NS_PER_S), Some(30 * NS_PER_S))
    );
    for code in [408, 429, 500, 503, 599] {
        assert_eq!(attempts(&l, Cause::Status(code)).0, 4, "{code}");
    }
    assert_eq!(attempts(&l, Cause::Status(404)).0, 1);
    assert_eq!(l.retry.retry_after, RetryAfterMode::Exact);
    let br = l.breaker.expect("breaker").config;
    assert_eq!(br.window, BreakerWindow::Time(30 * NS_PER_S));
    assert_eq!(
        (br.failure_ratio, br.min_calls, br.open_for, br.probes),
        (0.1, 100, 5 * NS_PER_S, 1)
    );
    assert!(!br.retries_only);
}

#[test]
fn resilience4j_default() {
    // §6: 3 attempts, constant 500 ms, all exceptions.
    let l = layer("resilience4j-default");
    let (n, sleeps) = attempts(&l, Cause::Connection);
    assert_eq!((n, sleeps), (3, vec![500 * NS_PER_MS; 2]));
    assert_eq!(attempts(&l, Cause::Status(400)).0, 3);
}

#[test]
fn resilience4j_exp_random() {
    // §6: 500, 750, 1125, 1687, 2530 ms (truncated each step) x U(0.5, 1.5).
    let l = layer("resilience4j-exp-random");
    assert_eq!(ceilings_ms(&l, 5), [500.0, 750.0, 1125.0, 1687.0, 2530.0]);
    for (k, (lo, mean, hi)) in sample(&l, 5, 20_000).into_iter().enumerate() {
        let c = l.retry.backoff.delay(k as u32 + 1) as f64;
        assert!(lo >= 0.5 * c - 1.0 && hi <= 1.5 * c + 1.0);
        assert!(close(mean, c, 0.01));
    }
    assert_eq!(attempts(&l, Cause::Timeout).0, 3);
}

#[test]
fn tenacity_random_exponential() {
    // §7.1: U(0, 1 s x 2^(k-1)), no cap; never stops (1000 = unbounded).
    let l = layer("tenacity-random-exponential");
    assert_eq!(
        ceilings_ms(&l, 5),
        [1000.0, 2000.0, 4000.0, 8000.0, 16000.0]
    );
    assert_eq!(l.retry.backoff.cap(), u64::MAX);
    assert_full_jitter(&l, 8);
    assert_eq!(
        l.retry.max_attempts,
        crate::scenario::validate::MAX_ATTEMPTS
    );
    assert_eq!(attempts(&l, Cause::Status(404)).0, 1000);
}

#[test]
fn cenkalti_v4() {
    // §7.2: current interval 500 ms x 1.5 up to 60 s; U[0.5 cur, 1.5 cur];
    // stop when elapsed + next > 15 min.
    let l = layer("cenkalti-v4");
    let c = ceilings_ms(&l, 13);
    assert_eq!(c[..5], [500.0, 750.0, 1125.0, 1687.5, 2531.25]);
    assert!(close(c[11], 43248.8, 1e-5) && c[12] == 60000.0, "{c:?}");
    for (k, (lo, mean, hi)) in sample(&l, 14, 20_000).into_iter().enumerate() {
        let cur = l.retry.backoff.delay(k as u32 + 1) as f64;
        assert!(lo >= 0.5 * cur - 1.0 && hi <= 1.5 * cur + 1.0);
        assert!(close(mean, cur, 0.01));
    }
    assert_eq!(l.retry.max_elapsed, Some(15 * 60 * NS_PER_S));
    let (n, sleeps) = attempts(&l, Cause::Connection);
    let total: Nanos = sleeps.iter().sum();
    assert!((15..60).contains(&n), "{n}");
    assert!(total <= 15 * 60 * NS_PER_S);
}

#[test]
fn backon_exponential() {
    // §7.3: 1, 2, 4 s then stop; no jitter.
    let l = layer("backon-exponential");
    let (n, sleeps) = attempts(&l, Cause::Timeout);
    assert_eq!((n, sleeps), (4, vec![NS_PER_S, 2 * NS_PER_S, 4 * NS_PER_S]));
    assert_eq!(ceilings_ms(&l, 8)[6..], [60000.0, 60000.0]);
}

#[test]
fn k8s_workqueue_default() {
    // §7.4: 5, 10, 20, 40 ms ... capped at 1000 s (from failure 18 on);
    // global bucket 10 qps, burst 100.
    let l = layer("k8s-workqueue-default");
    let (_, sleeps) = attempts(&l, Cause::Connection);
    assert_eq!(
        sleeps[..4],
        [
            5 * NS_PER_MS,
            10 * NS_PER_MS,
            20 * NS_PER_MS,
            40 * NS_PER_MS
        ]
    );
    assert_eq!(ceilings_ms(&l, 19)[17..], [655360.0, 1_000_000.0]);
    assert_eq!(sleeps.len(), 999);
    let (mut b, cfg, shared) = budget(&l);
    assert_eq!(
        (cfg, shared),
        (
            BudgetConfig::RateLimiter {
                rate_per_sec: 10.0,
                burst: 100.0
            },
            true
        )
    );
    let mut c = b.on_call_start(0);
    for r in 0..100 {
        assert_eq!(
            b.try_retry(0, &mut c, Cause::Connection, r),
            Gate::Allow { min_sleep: 0 }
        );
    }
    assert_eq!(
        b.try_retry(0, &mut c, Cause::Connection, 100),
        Gate::Allow {
            min_sleep: 100 * NS_PER_MS
        }
    );
    assert_eq!(
        b.try_retry(0, &mut c, Cause::Connection, 101),
        Gate::Allow {
            min_sleep: 200 * NS_PER_MS
        }
    );
}

#[test]
fn sre_retry_budget() {
    // §8: 3 attempts; retries / requests < 10% per client.
    let l = layer("sre-retry-budget");
    assert_eq!(attempts(&l, Cause::Status(503)).0, 3);
    assert_full_jitter(&l, 2);
    let (mut b, cfg, shared) = budget(&l);
    assert_eq!(
        (cfg, shared),
        (
            BudgetConfig::Ratio {
                ratio: 0.1,
                window: 120 * NS_PER_S
            },
            false
        )
    );
    let mut calls: Vec<_> = (0..100).map(|_| b.on_call_start(0)).collect();
    let allowed = calls
        .iter_mut()
        .map(|c| b.try_retry(0, c, Cause::Status(503), 0))
        .filter(|g| *g != Gate::Deny)
        .count();
    assert_eq!(allowed, 10);
}

#[test]
fn axios_retry_default() {
    // §7.5: 3 retries with no delay; network errors and 5xx, not timeouts or 429.
    let l = layer("axios-retry-default");
    let (n, sleeps) = attempts(&l, Cause::Connection);
    assert_eq!((n, sleeps), (4, vec![0; 3]));
    assert_eq!(attempts(&l, Cause::Status(503)).0, 4);
    assert_eq!(attempts(&l, Cause::Timeout).0, 1);
    assert_eq!(attempts(&l, Cause::Status(429)).0, 1);
    assert!(matches!(
        l.retry.retry_after,
        RetryAfterMode::AtLeast { .. }
    ));
}
