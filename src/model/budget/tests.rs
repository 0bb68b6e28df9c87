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

/// Whether `b` grants a retry now.
fn grants(b: &mut Budget, now: Nanos, call: &mut CallBudget, cause: Cause) -> bool {
    matches!(b.try_retry(now, call, cause, 0), Gate::Allow { .. })
}

#[test]
fn token_bucket_floors_at_zero_and_caps_at_max() {
    let mut b = Budget::new(BudgetConfig::TokenBucket {
        max_tokens: 10.0,
        token_ratio: 1.0,
    });
    let mut c = b.on_call_start(0);
    // 15 failures take 10 tokens, not 15: the bucket stops at zero.
    for _ in 0..15 {
        b.on_attempt_end(&mut c, Some(Cause::Timeout));
    }
    assert_eq!(b.level(0), 0.0);
    // So 5 successes bring it to 5 (not > 5: still no retry) and the 6th
    // to 6 (> 5: a retry). Without the floor it would be at 1.
    for _ in 0..5 {
        b.on_attempt_end(&mut c, None);
    }
    assert_eq!(b.level(0), 5.0);
    assert!(!grants(&mut b, 0, &mut c, Cause::Timeout));
    b.on_attempt_end(&mut c, None);
    assert_eq!(b.level(0), 6.0);
    assert!(grants(&mut b, 0, &mut c, Cause::Timeout));
    // Asking does not spend: only failures take tokens.
    assert_eq!(b.level(0), 6.0);
    // Successes never lift it above the maximum.
    for _ in 0..20 {
        b.on_attempt_end(&mut c, None);
    }
    assert_eq!(b.level(0), 10.0);
    // The threshold is max / 2 of this bucket: 2.5 of 5.
    let mut small = Budget::new(BudgetConfig::TokenBucket {
        max_tokens: 5.0,
        token_ratio: 0.5,
    });
    let mut c = small.on_call_start(0);
    for _ in 0..2 {
        small.on_attempt_end(&mut c, Some(Cause::Timeout));
    }
    assert!(grants(&mut small, 0, &mut c, Cause::Timeout), "3 > 2.5");
    small.on_attempt_end(&mut c, Some(Cause::Timeout));
    small.on_attempt_end(&mut c, None);
    assert_eq!(small.level(0), 2.5);
    assert!(!grants(&mut small, 0, &mut c, Cause::Timeout), "2.5 = 2.5");
}

#[test]
fn retry_tokens_need_more_than_the_cost_and_refill_per_call_up_to_capacity() {
    let mut b = Budget::new(BudgetConfig::RetryTokens {
        capacity: 3.0,
        per_request: 0.5,
        retry_cost: 1.5,
    });
    let mut c = b.on_call_start(0); // 3 + 0.5, capped at 3
    assert_eq!(b.level(0), 3.0);
    assert!(grants(&mut b, 0, &mut c, Cause::Timeout)); // 3 > 1.5: 1.5 left
    assert_eq!(b.level(0), 1.5);
    assert!(
        !grants(&mut b, 0, &mut c, Cause::Timeout),
        "1.5 is not > 1.5"
    );
    assert_eq!(b.level(0), 1.5, "a refusal spends nothing");
    b.on_call_start(0); // 2.0
    assert_eq!(b.level(0), 2.0);
    assert!(grants(&mut b, 0, &mut c, Cause::Timeout));
    assert_eq!(b.level(0), 0.5);
    // Attempt outcomes do not move it.
    b.on_attempt_end(&mut c, None);
    b.on_attempt_end(&mut c, Some(Cause::Timeout));
    assert_eq!(b.level(0), 0.5);
}

#[test]
fn aws_quota_allows_a_retry_costing_exactly_what_is_left() {
    let mut b = Budget::new(BudgetConfig::AwsQuota {
        capacity: 28,
        retry_cost: 14,
        timeout_cost: 10,
        throttle_cost: 4,
        success_increment: 1,
    });
    let mut c = b.on_call_start(0);
    assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Status(500), 0));
    assert_eq!(b.level(0), 14.0);
    // 14 left, a retry costs 14: allowed (refused only when less is left).
    assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Status(503), 1));
    assert_eq!(b.level(0), 0.0);
    assert!(!fail_then_ask(&mut b, &mut c, 0, Cause::Status(429), 2));
    assert_eq!(b.level(0), 0.0, "a refusal costs nothing");
    // The success refunds the last cost paid (14), not the increment.
    b.on_attempt_end(&mut c, None);
    assert_eq!(b.level(0), 14.0);
    // Each cause has its own cost: timeout 10, throttle 4.
    assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 0));
    assert_eq!(b.level(0), 4.0);
    assert!(!fail_then_ask(&mut b, &mut c, 0, Cause::Timeout, 1));
    assert!(fail_then_ask(&mut b, &mut c, 0, Cause::Status(429), 1));
    assert_eq!(b.level(0), 0.0);
    assert_eq!(c.last_cost, 4);
    // Refunds stop at the capacity.
    for _ in 0..10 {
        b.on_attempt_end(&mut c, None);
    }
    assert_eq!(b.level(0), 28.0);
    let mut fresh = b.on_call_start(0);
    b.on_attempt_end(&mut fresh, None);
    assert_eq!(b.level(0), 28.0);
}

#[test]
fn finagle_reserve_pays_down_to_exactly_one_withdrawal() {
    // 0% never deposits and withdraws 1: only the reserve of
    // min_retries_per_sec × ttl = 3 retries pays. No requeue cap.
    let mut b = Budget::new(BudgetConfig::Finagle {
        ttl: 3 * S,
        min_retries_per_sec: 1.0,
        percent_can_retry: 0.0,
        max_requeues_fraction: 0.0,
    });
    let mut c = b.on_call_start(0);
    assert_eq!(c.requeue_cap, u32::MAX);
    let granted = (0..10)
        .take_while(|&r| {
            matches!(
                b.try_retry(0, &mut c, Cause::Timeout, r),
                Gate::Allow { .. }
            )
        })
        .count();
    // 3 → 2 → 1 → 0: the third retry finds exactly one withdrawal left.
    assert_eq!(granted, 3);
    assert_eq!(b.level(0), 0.0);
    // Successes deposit nothing at 0%.
    let mut s = b.on_call_start(0);
    b.on_call_end(0, &mut s, true);
    assert_eq!(b.level(0), 0.0);
    // The withdrawals leave the window after the ttl.
    assert_eq!(b.level(3 * S), 3.0);
}

#[test]
fn finagle_withdrawal_is_the_floor_of_1000_over_percent_and_caps_requeues() {
    // 30%: a retry withdraws floor(1000 / 0.3) = 3333; the reserve is
    // 10/s × 10 s = 100 retries; a success deposits 1000 = 0.3 retry.
    let mut b = Budget::new(BudgetConfig::Finagle {
        ttl: 10 * S,
        min_retries_per_sec: 10.0,
        percent_can_retry: 0.3,
        max_requeues_fraction: 0.25,
    });
    assert_eq!(b.level(0), 100.0);
    let mut s = b.on_call_start(0);
    // ceil(0.25 × 100) = 25 retries for this call.
    assert_eq!(s.requeue_cap, 25);
    b.on_call_end(0, &mut s, true);
    assert!((b.level(0) - (100.0 + 1000.0 / 3333.0)).abs() < 1e-12);
    // A failed call deposits nothing.
    let mut f = b.on_call_start(0);
    b.on_call_end(0, &mut f, false);
    assert!((b.level(0) - (100.0 + 1000.0 / 3333.0)).abs() < 1e-12);
    // ceil(0.25 × 100.3) = 26.
    assert_eq!(b.on_call_start(0).requeue_cap, 26);
    // The cap counts the call's retries so far: the 26th (index 25) is
    // allowed, the 27th is not, whatever the balance.
    let mut c = b.on_call_start(0);
    assert!(matches!(
        b.try_retry(0, &mut c, Cause::Timeout, 25),
        Gate::Allow { .. }
    ));
    assert_eq!(b.try_retry(0, &mut c, Cause::Timeout, 26), Gate::Deny);
}

#[test]
fn envoy_budget_floor_and_releases() {
    // 20% of 5 active calls is 1, below the floor of 3: 3 retries.
    let mut b = Budget::new(BudgetConfig::EnvoyBudget {
        percent: 20.0,
        min_concurrency: 3,
    });
    let mut calls: Vec<CallBudget> = (0..5).map(|_| b.on_call_start(0)).collect();
    let granted: Vec<bool> = calls
        .iter_mut()
        .map(|c| grants(&mut b, 0, c, Cause::Timeout))
        .collect();
    assert_eq!(granted, vec![true, true, true, false, false]);
    assert_eq!(b.level(0), 3.0);
    assert!(calls[0].holds_retry && !calls[3].holds_retry);
    // An unqualified failure releases the slot it held, once.
    b.on_unqualified_failure(&mut calls[0]);
    assert_eq!(b.level(0), 2.0);
    b.on_unqualified_failure(&mut calls[0]);
    assert_eq!(b.level(0), 2.0);
    // A call that ends releases its slot and stops counting as active.
    b.on_call_end(0, &mut calls[1], false);
    assert_eq!(b.level(0), 1.0);
    // A call that never held a slot releases nothing.
    b.on_call_end(0, &mut calls[3], true);
    assert_eq!(b.level(0), 1.0);
    // 15 active calls at 20% allow exactly 3; a 16th call makes it 3.2.
    let mut more: Vec<CallBudget> = (0..12).map(|_| b.on_call_start(0)).collect();
    let n = more
        .iter_mut()
        .filter(|c| !c.holds_retry)
        .map(|c| grants(&mut b, 0, c, Cause::Timeout))
        .filter(|&ok| ok)
        .count();
    assert_eq!((n, b.level(0)), (2, 3.0));
    let mut extra = b.on_call_start(0);
    assert!(grants(&mut b, 0, &mut extra, Cause::Timeout), "3 < 3.2");
    assert!(!grants(&mut b, 0, &mut more[11], Cause::Timeout), "4 > 3.2");
}

#[test]
fn envoy_max_retries_releases_on_attempt_end_and_call_end() {
    let mut b = Budget::new(BudgetConfig::EnvoyMaxRetries { max: 1 });
    let mut a = b.on_call_start(0);
    let mut z = b.on_call_start(0);
    assert!(grants(&mut b, 0, &mut a, Cause::Timeout));
    assert!(!grants(&mut b, 0, &mut z, Cause::Timeout));
    b.on_call_end(0, &mut a, true);
    assert_eq!(b.level(0), 0.0);
    assert!(grants(&mut b, 0, &mut z, Cause::Timeout));
    b.on_unqualified_failure(&mut z);
    assert_eq!(b.level(0), 0.0);
}

#[test]
fn sre_ratio_allows_a_retry_reaching_the_ratio_exactly() {
    let mut b = Budget::new(BudgetConfig::Ratio {
        ratio: 0.25,
        window: 60 * S,
    });
    let mut c = CallBudget::default();
    // No calls yet: nothing to retry against.
    assert!(!grants(&mut b, 0, &mut c, Cause::Timeout));
    assert_eq!(b.level(0), 0.0);
    for _ in 0..4 {
        b.on_call_start(0);
    }
    // (0 + 1) / 4 = 0.25 <= 0.25: allowed; (1 + 1) / 4 > 0.25: refused.
    assert!(grants(&mut b, 0, &mut c, Cause::Timeout));
    assert_eq!(b.level(0), 0.25);
    assert!(!grants(&mut b, 0, &mut c, Cause::Timeout));
    // Three more calls: (1 + 1) / 7 = 0.286: still refused; the 8th: 0.25.
    for _ in 0..3 {
        b.on_call_start(S);
    }
    assert!(!grants(&mut b, S, &mut c, Cause::Timeout));
    b.on_call_start(S);
    assert!(grants(&mut b, S, &mut c, Cause::Timeout));
    assert_eq!(b.level(S), 0.25);
    // A minute later the window holds nothing.
    assert_eq!(b.level(62 * S), 0.0);
}

#[test]
fn per_minute_needs_one_whole_token() {
    let mut b = Budget::new(BudgetConfig::PerMinute { per_minute: 2.0 });
    let mut c = CallBudget::default();
    assert!(grants(&mut b, 0, &mut c, Cause::Timeout));
    assert!(grants(&mut b, 0, &mut c, Cause::Timeout));
    assert!(!grants(&mut b, 0, &mut c, Cause::Timeout));
    // 2 per minute: one token every 30 s; at 29 s not yet, at 30 s yes.
    assert!(!grants(&mut b, 29 * S, &mut c, Cause::Timeout));
    assert!((b.level(29 * S) - 29.0 / 30.0).abs() < 1e-12);
    assert!(grants(&mut b, 30 * S, &mut c, Cause::Timeout));
    assert!(b.level(30 * S).abs() < 1e-12);
    // Refills stop at the bucket's size.
    assert_eq!(b.level(3_600 * S), 2.0);
}

#[test]
fn rate_limiter_waits_for_the_reserved_token_exactly() {
    let mut b = Budget::new(BudgetConfig::RateLimiter {
        rate_per_sec: 4.0,
        burst: 2.0,
    });
    let mut c = CallBudget::default();
    let ask = |b: &mut Budget, now: Nanos, c: &mut CallBudget| match b.try_retry(
        now,
        c,
        Cause::Timeout,
        0,
    ) {
        Gate::Allow { min_sleep } => min_sleep,
        Gate::Deny => panic!("a rate limiter never refuses"),
    };
    assert_eq!(ask(&mut b, 0, &mut c), 0);
    assert_eq!(ask(&mut b, 0, &mut c), 0, "the last token of the burst");
    assert_eq!(b.level(0), 0.0);
    // One token every 250 ms: the next waits 250 ms, the one after 500.
    assert_eq!(ask(&mut b, 0, &mut c), 250_000_000);
    assert_eq!(ask(&mut b, 0, &mut c), 500_000_000);
    assert_eq!(b.level(0), -2.0);
    // 750 ms later one token is free again (−2 + 3).
    assert_eq!(b.level(750_000_000), 1.0);
    assert_eq!(ask(&mut b, 750_000_000, &mut c), 0);
    // Refills stop at the burst.
    assert_eq!(b.level(3_600 * S), 2.0);
    // The wait rounds up to the nanosecond: at 3/s a token takes 1/3 s.
    let mut b = Budget::new(BudgetConfig::RateLimiter {
        rate_per_sec: 3.0,
        burst: 1.0,
    });
    assert_eq!(ask(&mut b, 0, &mut c), 0);
    assert_eq!(ask(&mut b, 0, &mut c), 333_333_334);
}

#[test]
fn budgets_count_their_memory() {
    let own = std::mem::size_of::<Budget>() as u64;
    assert_eq!(
        Budget::state_bytes(&BudgetConfig::PerMinute { per_minute: 1.0 }),
        own
    );
    let finagle = BudgetConfig::Finagle {
        ttl: S,
        min_retries_per_sec: 1.0,
        percent_can_retry: 0.2,
        max_requeues_fraction: 0.2,
    };
    // Ten slices of 8 bytes; the ratio budget two windows of 60.
    assert_eq!(Budget::state_bytes(&finagle), own + 80);
    assert_eq!(
        Budget::state_bytes(&BudgetConfig::Ratio {
            ratio: 0.1,
            window: S
        }),
        own + 2 * 60 * 8
    );
}
