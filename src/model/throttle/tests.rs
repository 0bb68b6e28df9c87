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
