//! Exact sequences of every budget kind, from the sources' own examples.

use super::*;
use crate::engine::NS_PER_S;

const S: Nanos = NS_PER_S;

/// One failed attempt followed by a retry request, as the layer does it.
fn fail_then_ask(
    b: &mut Budget,
    call: &mut CallBudget,
    now: Nanos,
    cause: Cause,
    retries: u32,
) -> bool {
    b.on_attempt_end(call, Some(cause));
    matches!(b.try_retry(now, call, cause, retries), Gate::Allow { .. })
}

#[test]
fn grpc_a6_token_bucket_exact_sequence() {
    let mut b = Budget::new(BudgetConfig::TokenBucket {
        max_tokens: 10.0,
        token_ratio: 0.1,
    });
    let mut c = b.on_call_start(0);
    let mut seen = vec![];
    for r in 0..7 {
        let ok = fail_then_ask(&mut b, &mut c, 0, Cause::Status(503), r);
        seen.push((b.level(0), ok));
    }
    assert_eq!(
        seen,
        vec![
            (9.0, true),
            (8.0, true),
            (7.0, true),
            (6.0, true),
            (5.0, false), // not > max/2
            (4.0, false),
            (3.0, false),
        ]
    );
    // Successes earn 0.1 each: 20 of them bring 3 back to 5, still not > 5.
    for _ in 0..20 {
        b.on_attempt_end(&mut c, None);
    }
    assert!((b.level(0) - 5.0).abs() < 1e-9);
    b.on_attempt_end(&mut c, None);
    assert!(matches!(
        b.try_retry(0, &mut c, Cause::Timeout, 0),
        Gate::Allow { .. }
    ));
}

#[test]
fn brooker_retry_tokens() {
    let mut b = Budget::new(BudgetConfig::RetryTokens {
        capacity: 5.0,
        per_request: 0.1,
        retry_cost: 1.0,
    });
    let mut c = b.on_call_start(0); // 5 (capped)
    let mut allowed = 0;
    while matches!(
        b.try_retry(0, &mut c, Cause::Timeout, allowed),
        Gate::Allow { .. }
    ) {
        allowed += 1;
    }
    // 5 → 4 → 3 → 2 → 1: the fifth needs more than 1.
    assert_eq!(allowed, 4);
    for _ in 0..10 {
        b.on_call_start(0);
    }
    assert!((b.level(0) - 2.0).abs() < 1e-9);
}

#[test]
fn aws_quota_standard_2_1_test_vector() {
    // docs/sources/presets.md §1.3: 500 responses cost 14 each: 500 → 486 → 472 → 458 → 444.
    let mut b = Budget::new(BudgetConfig::AwsQuota {
        capacity: 500,
        retry_cost: 14,
        timeout_cost: 14,
        throttle_cost: 5,
        success_increment: 1,
    });
    let mut c = b.on_call_start(0);
    let mut levels = vec![];
    for r in 0..4 {
        assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Status(500), r));
        levels.push(b.level(0));
    }
    assert_eq!(levels, vec![486.0, 472.0, 458.0, 444.0]);
    // Success refunds only the last cost.
    b.on_attempt_end(&mut c, None);
    assert_eq!(b.level(0), 458.0);
    // A call that never retried earns +1 on success, capped at capacity.
    let mut fresh = b.on_call_start(0);
    b.on_attempt_end(&mut fresh, None);
    assert_eq!(b.level(0), 459.0);
    // A throttle costs 5.
    assert!(fail_then_ask(&mut b, &mut fresh, 0, Cause::Status(429), 0));
    assert_eq!(b.level(0), 454.0);
}

#[test]
fn aws_quota_2_0_worked_example_and_refusal() {
    // docs/sources/presets.md §1.2: 30 tokens, retry (-14) → 16, retry (-14) → 2, success → 16.
    let mut b = Budget::new(BudgetConfig::AwsQuota {
        capacity: 30,
        retry_cost: 14,
        timeout_cost: 14,
        throttle_cost: 5,
        success_increment: 1,
    });
    let mut c = b.on_call_start(0);
    assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 0));
    assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 1));
    assert_eq!(b.level(0), 2.0);
    assert!(!fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 2));
    b.on_attempt_end(&mut c, None);
    assert_eq!(b.level(0), 16.0);
}

#[test]
fn finagle_defaults_start_with_100_retries_and_deposit_per_success() {
    let mut b = Budget::new(BudgetConfig::Finagle {
        ttl: 10 * S,
        min_retries_per_sec: 10.0,
        percent_can_retry: 0.2,
        max_requeues_fraction: 0.2,
    });
    assert_eq!(b.level(0), 100.0);
    let mut c = b.on_call_start(0);
    assert_eq!(c.requeue_cap, 20);
    let mut allowed = 0;
    while matches!(
        b.try_retry(0, &mut c, Cause::Connection, allowed),
        Gate::Allow { .. }
    ) {
        allowed += 1;
    }
    assert_eq!(allowed, 20, "capped by the per-request requeue limit");
    assert_eq!(b.level(0), 80.0);
    // Five successful calls deposit one retry (1000 each, 5000 per retry).
    for _ in 0..5 {
        let mut s = b.on_call_start(S);
        b.on_call_end(S, &mut s, true);
    }
    assert_eq!(b.level(S), 81.0);
    // Withdrawals and deposits age out after the ttl: back to the reserve.
    assert_eq!(b.level(30 * S), 100.0);
}

#[test]
fn envoy_counts_concurrent_retries() {
    let mut b = Budget::new(BudgetConfig::EnvoyMaxRetries { max: 3 });
    let mut calls: Vec<CallBudget> = (0..5).map(|_| b.on_call_start(0)).collect();
    let ok: Vec<bool> = calls
        .iter_mut()
        .map(|c| matches!(b.try_retry(0, c, Cause::Status(503), 0), Gate::Allow { .. }))
        .collect();
    assert_eq!(ok, vec![true, true, true, false, false]);
    // One retry resolves: a slot frees.
    b.on_attempt_end(&mut calls[0], Some(Cause::Status(503)));
    assert!(matches!(
        b.try_retry(0, &mut calls[3], Cause::Status(503), 0),
        Gate::Allow { .. }
    ));

    let mut budget = Budget::new(BudgetConfig::EnvoyBudget {
        percent: 20.0,
        min_concurrency: 3,
    });
    let mut many: Vec<CallBudget> = (0..100).map(|_| budget.on_call_start(0)).collect();
    let granted = many
        .iter_mut()
        .map(|c| {
            matches!(
                budget.try_retry(0, c, Cause::Timeout, 0),
                Gate::Allow { .. }
            )
        })
        .filter(|&ok| ok)
        .count();
    assert_eq!(granted, 20, "20% of 100 active calls");
}

#[test]
fn sre_ratio_budget_keeps_retries_near_ten_percent() {
    let mut b = Budget::new(BudgetConfig::Ratio {
        ratio: 0.1,
        window: 120 * S,
    });
    let mut retries = 0;
    for i in 0..1000u64 {
        let t = i * S / 10;
        let mut c = b.on_call_start(t);
        if matches!(
            b.try_retry(t, &mut c, Cause::Status(503), 0),
            Gate::Allow { .. }
        ) {
            retries += 1;
        }
    }
    assert_eq!(retries, 100);
}

#[test]
fn per_minute_budget_refills_continuously() {
    let mut b = Budget::new(BudgetConfig::PerMinute { per_minute: 60.0 });
    let mut c = CallBudget::default();
    let granted = (0..100)
        .filter(|_| {
            matches!(
                b.try_retry(0, &mut c, Cause::Timeout, 0),
                Gate::Allow { .. }
            )
        })
        .count();
    assert_eq!(granted, 60);
    // One token per second comes back.
    assert!(matches!(
        b.try_retry(S, &mut c, Cause::Timeout, 0),
        Gate::Allow { .. }
    ));
    assert_eq!(b.try_retry(S, &mut c, Cause::Timeout, 0), Gate::Deny);
}

#[test]
fn rate_limiter_delays_instead_of_refusing() {
    // client-go: 10 qps, burst 100.
    let mut b = Budget::new(BudgetConfig::RateLimiter {
        rate_per_sec: 10.0,
        burst: 100.0,
    });
    let mut c = CallBudget::default();
    for _ in 0..100 {
        assert_eq!(
            b.try_retry(0, &mut c, Cause::Timeout, 0),
            Gate::Allow { min_sleep: 0 }
        );
    }
    assert_eq!(
        b.try_retry(0, &mut c, Cause::Timeout, 0),
        Gate::Allow { min_sleep: S / 10 }
    );
    assert_eq!(
        b.try_retry(0, &mut c, Cause::Timeout, 0),
        Gate::Allow {
            min_sleep: 2 * S / 10
        }
    );
}
