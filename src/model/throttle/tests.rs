//! Both throttles against their sources' formulas.

use super::*;
use crate::engine::{NS_PER_MS, NS_PER_S, Purpose, Stream};

fn cubic(t: &mut Throttle) -> &mut AwsCubic {
    match t {
        Throttle::AwsAdaptive(c) => c,
        Throttle::Adaptive(_) => unreachable!(),
    }
}

#[test]
fn sre_throttle_rejects_about_requests_minus_twice_accepts() {
    let mut t = Throttle::new(ThrottleConfig::Adaptive {
        k: 2.0,
        window: 120 * NS_PER_S,
    });
    let mut rng = Stream::new(1, Purpose::Jitter, 0);
    // A backend that accepts nothing: after a while almost all is rejected.
    let mut rejected = 0;
    for i in 0..10_000u64 {
        if t.admit(i * NS_PER_MS, &mut rng) == Admit::Reject {
            rejected += 1;
        }
    }
    assert!(rejected > 9_900, "{rejected}");
    // With every request accepted, nothing is rejected.
    let mut ok = Throttle::new(ThrottleConfig::Adaptive {
        k: 2.0,
        window: 120 * NS_PER_S,
    });
    for i in 0..1000u64 {
        assert_eq!(ok.admit(i * NS_PER_MS, &mut rng), Admit::After(0));
        ok.on_response(i * NS_PER_MS, true, false);
    }
    // Probability formula: 10 requests, 3 accepts, K = 2: (10 - 6) / 11.
    let mut f = Throttle::new(ThrottleConfig::Adaptive {
        k: 2.0,
        window: 120 * NS_PER_S,
    });
    for i in 0..10u64 {
        let Throttle::Adaptive(a) = &mut f else {
            unreachable!()
        };
        a.requests.add(i, 1.0);
    }
    for i in 0..3u64 {
        let Throttle::Adaptive(a) = &mut f else {
            unreachable!()
        };
        a.accepts.add(i, 1.0);
    }
    assert!((f.level(10) - 4.0 / 11.0).abs() < 1e-12);
}

#[test]
fn aws_adaptive_is_off_until_a_throttle_then_limits_the_rate() {
    let mut t = Throttle::new(ThrottleConfig::AwsAdaptive);
    let mut rng = Stream::new(1, Purpose::Jitter, 0);
    // 100 sends per second for 2 s, no throttling: never delayed.
    for i in 0..200u64 {
        let now = i * 10 * NS_PER_MS;
        assert_eq!(t.admit(now, &mut rng), Admit::After(0));
        t.on_response(now, true, false);
    }
    assert_eq!(t.level(2 * NS_PER_S), 0.0);
    // A throttle: the fill rate drops to β × the measured rate.
    t.on_response(2 * NS_PER_S, false, true);
    let rate = t.level(2 * NS_PER_S);
    assert!((rate - 0.7 * cubic(&mut t).measured).abs() < 1e-9, "{rate}");
    assert!(rate > 30.0 && rate < 100.0, "{rate}");
    // Sending faster than the fill rate now waits.
    let mut waited = false;
    for i in 0..100u64 {
        if let Admit::After(w) = t.admit(2 * NS_PER_S + i, &mut rng) {
            waited |= w > 0;
        }
    }
    assert!(waited);
    // CUBIC growth: long after the throttle the rate is back above w_max,
    // bounded by twice the measured rate.
    let later = 10.0;
    let k = (cubic(&mut t).w_max * 0.3 / 0.4).cbrt();
    let expect = 0.4 * (later - 2.0 - k).powi(3) + cubic(&mut t).w_max;
    cubic(&mut t).measured = 1e9; // lift the 2 × measured bound for the check
    t.on_response(10 * NS_PER_S, true, false);
    assert!((cubic(&mut t).fill_rate - expect).abs() / expect < 1e-9);
}

/// botocore's limiter step by step, against values worked out by hand
/// from `throttling.py` and `bucket.py` (β = 0.7, C = 0.4, smoothing 0.8
/// over 0.5 s buckets, fill rate at least 0.5/s, capacity at least 1).
#[test]
fn aws_cubic_follows_botocore_step_by_step() {
    let ms = |m: u64| m * NS_PER_MS;
    let mut t = Throttle::new(ThrottleConfig::AwsAdaptive);
    let mut rng = Stream::new(1, Purpose::Jitter, 0);
    let close = |a: f64, b: f64| assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
    // Two successes: the first inside bucket 0, the second closes it at
    // 0.5 s with 2 responses: 4/s, smoothed 0.8 × 4 = 3.2.
    t.on_response(ms(250), true, false);
    assert_eq!(cubic(&mut t).measured, 0.0);
    t.on_response(ms(500), true, false);
    close(cubic(&mut t).measured, 3.2);
    // Disabled: never delays, level 0; the bucket still fills at 0.5/s.
    assert_eq!(t.admit(ms(500), &mut rng), Admit::After(0));
    assert_eq!(t.level(ms(500)), 0.0);
    close(cubic(&mut t).current, 0.375);
    // A throttle at 0.6 s: w_max = 3.2, rate 0.7 × 3.2 = 2.24.
    t.on_response(ms(600), false, true);
    let c = cubic(&mut t);
    assert!(c.enabled);
    close(c.w_max, 3.2);
    close(c.fill_rate, 2.24);
    close(c.capacity, 2.24);
    close(c.current, 0.425);
    close(t.level(ms(600)), 2.24);
    // 0.425 tokens: the send waits for 0.575 / 2.24 s, rounded up to the
    // nanosecond; the next for 1.575 / 2.24 s.
    assert_eq!(t.admit(ms(600), &mut rng), Admit::After(256_696_429));
    assert_eq!(t.admit(ms(600), &mut rng), Admit::After(703_125_000));
    // A success at 1.1 s closes bucket 0.5 (2 responses in 0.5 s: 4/s,
    // measured 0.8 × 4 + 0.2 × 3.2 = 3.84) and grows along the cubic:
    // 0.4 × (0.5 − ∛(3.2 × 0.3 / 0.4))³ + 3.2.
    t.on_response(ms(1_100), true, false);
    let c = cubic(&mut t);
    close(c.measured, 3.84);
    close(c.fill_rate, 2.963_877_369_124_418_2);
    close(c.current, -0.454_999_999_999_999_85);
    // A throttle while enabled starts from min(measured, fill rate).
    t.on_response(ms(1_200), false, true);
    let c = cubic(&mut t);
    close(c.w_max, 2.963_877_369_124_418_2);
    close(c.fill_rate, 2.074_714_158_387_092_5);
    close(c.current, -0.158_612_263_087_558_44);
    assert_eq!(t.admit(2 * NS_PER_S, &mut rng), Admit::After(0));
    close(cubic(&mut t).current, 0.501_159_063_622_115_7);
    // A success long after: the cubic would give 171/s, but the rate is
    // held to twice the measured one (bucket 10 s after 1 s: 2 responses
    // in 9 s, measured 0.8 × 2/9 + 0.2 × 3.84), and the bucket, full at
    // its old capacity, is cut to the new one.
    t.on_response(10 * NS_PER_S, true, false);
    let c = cubic(&mut t);
    close(c.measured, 0.945_777_777_777_777_9);
    close(c.fill_rate, 1.891_555_555_555_555_9);
    close(c.capacity, 1.891_555_555_555_555_9);
    close(c.current, 1.891_555_555_555_555_9);
}

#[test]
fn aws_cubic_floors_its_rate_and_capacity() {
    // A throttle with nothing measured: rate 0 → fill rate 0.5/s,
    // capacity 1.
    let mut t = Throttle::new(ThrottleConfig::AwsAdaptive);
    t.on_response(NS_PER_S / 10, false, true);
    let c = cubic(&mut t);
    assert!(c.enabled);
    assert_eq!((c.fill_rate, c.capacity), (0.5, 1.0));
    assert_eq!(t.level(0), 0.5);
    // The bucket never holds more than its capacity: after a long quiet
    // spell one send passes, the next waits 2 s.
    let mut rng = Stream::new(1, Purpose::Jitter, 0);
    assert_eq!(t.admit(100 * NS_PER_S, &mut rng), Admit::After(0));
    assert_eq!(
        t.admit(100 * NS_PER_S, &mut rng),
        Admit::After(2 * NS_PER_S)
    );
}

/// With the windows holding many requests, the rejection probability is
/// (requests − K·accepts) ÷ (requests + 1) at every send, and the number
/// of rejections is a sum of Bernoulli trials: its mean is the sum of the
/// probabilities and its standard error the root of Σ p(1 − p). Checked
/// within 4 standard errors, at p ≈ 0.5 and p ≈ 0.1.
#[test]
fn sre_throttle_rejects_with_its_probability() {
    for (requests, accepts) in [(100_000.0, 25_000.0), (100_000.0, 45_000.0)] {
        let mut t = Throttle::new(ThrottleConfig::Adaptive {
            k: 2.0,
            window: 120 * NS_PER_S,
        });
        let Throttle::Adaptive(a) = &mut t else {
            unreachable!()
        };
        a.requests.add(0, requests);
        a.accepts.add(0, accepts);
        let mut rng = Stream::new(31, Purpose::Throttle, 0);
        let (mut rejected, mut mean, mut var) = (0u32, 0.0, 0.0);
        for i in 0..20_000u32 {
            let req = requests + i as f64;
            let p = (req - 2.0 * accepts) / (req + 1.0);
            assert!((t.level(0) - p).abs() < 1e-12);
            mean += p;
            var += p * (1.0 - p);
            if t.admit(0, &mut rng) == Admit::Reject {
                rejected += 1;
            }
        }
        let se = f64::sqrt(var);
        assert!(
            (rejected as f64 - mean).abs() < 4.0 * se,
            "{rejected} rejected, expected {mean:.1} ± {se:.1}"
        );
    }
}

#[test]
fn sre_throttle_never_rejects_below_k_times_accepts_and_forgets() {
    let mut t = Throttle::new(ThrottleConfig::Adaptive {
        k: 2.0,
        window: 120 * NS_PER_S,
    });
    let mut rng = Stream::new(2, Purpose::Throttle, 0);
    // Every other request accepted: requests − 2 × accepts never exceeds
    // 0, so nothing is rejected; 10 requests, 5 accepted.
    for _ in 0..5 {
        assert_eq!(t.admit(0, &mut rng), Admit::After(0));
        t.on_response(0, true, false);
        assert_eq!(t.admit(0, &mut rng), Admit::After(0));
    }
    t.on_response(0, false, true); // a failure is not an accept
    assert_eq!(t.level(0), 0.0);
    // At probability 0 no number is drawn: the stream is untouched.
    let fresh = Stream::new(2, Purpose::Throttle, 0);
    assert_eq!(rng.clone().unit(), fresh.clone().unit());
    // One more request makes it (11 − 10) / 12.
    assert_eq!(t.admit(0, &mut rng), Admit::After(0));
    assert!((t.level(0) - 1.0 / 12.0).abs() < 1e-12);
    // Two minutes later the window is empty again.
    assert_eq!(t.level(120 * NS_PER_S), 0.0);
    // Memory: two windows of 120 slices.
    assert_eq!(
        Throttle::state_bytes(&ThrottleConfig::Adaptive {
            k: 2.0,
            window: NS_PER_S
        }),
        std::mem::size_of::<Throttle>() as u64 + 2 * 120 * 8
    );
    assert_eq!(
        Throttle::state_bytes(&ThrottleConfig::AwsAdaptive),
        std::mem::size_of::<Throttle>() as u64
    );
}
