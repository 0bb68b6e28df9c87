//! The breakers of Polly v8 and Resilience4j on their sources' examples.

use super::*;
use crate::engine::NS_PER_S;

const S: Nanos = NS_PER_S;

fn polly() -> BreakerConfig {
    BreakerConfig {
        window: BreakerWindow::Time(30 * S),
        failure_ratio: 0.1,
        min_calls: 100,
        open_for: 5 * S,
        probes: 1,
        retries_only: false,
    }
}

#[test]
fn polly_opens_at_ten_percent_after_minimum_throughput() {
    let mut b = Breaker::new(polly());
    // 90 successes then 9 failures: 99 calls, below the minimum.
    for _ in 0..90 {
        assert!(b.admit(0));
        b.record(0, false);
    }
    for _ in 0..9 {
        assert!(b.admit(0));
        b.record(0, true);
    }
    assert_eq!(b.state(), State::Closed);
    // The 100th call fails: 10/100 = 10% >= 10%.
    assert!(b.admit(S));
    b.record(S, true);
    assert_eq!(b.state(), State::Open { until: 6 * S });
    assert!(!b.admit(5 * S));
    // After the break: one probe, everything else rejected.
    assert!(b.admit(6 * S));
    assert!(!b.admit(6 * S));
    b.record(6 * S, true); // probe fails: open again
    assert_eq!(b.state(), State::Open { until: 11 * S });
    assert!(b.admit(11 * S));
    b.record(11 * S, false); // probe succeeds: closed, metrics reset
    assert_eq!(b.state(), State::Closed);
    b.record(11 * S, true);
    assert_eq!(
        b.state(),
        State::Closed,
        "one failure after a reset is not 100 calls"
    );
}

#[test]
fn polly_window_forgets_old_failures() {
    let mut b = Breaker::new(polly());
    for _ in 0..100 {
        b.admit(0);
        b.record(0, false);
    }
    for _ in 0..9 {
        b.admit(0);
        b.record(0, true);
    }
    // 31 s later the window holds only the new calls.
    for _ in 0..100 {
        b.admit(31 * S);
        b.record(31 * S, false);
    }
    b.admit(31 * S);
    b.record(31 * S, true);
    assert_eq!(b.state(), State::Closed, "1 / 101 < 10%");
}

#[test]
fn resilience4j_count_window_and_ten_probes() {
    let mut b = Breaker::new(BreakerConfig {
        window: BreakerWindow::Count(100),
        failure_ratio: 0.5,
        min_calls: 100,
        open_for: 60 * S,
        probes: 10,
        retries_only: false,
    });
    for i in 0..99 {
        b.admit(0);
        b.record(0, i % 2 == 0); // 50 failures in 99
    }
    assert_eq!(b.state(), State::Closed);
    b.admit(0);
    b.record(0, false); // 50 / 100 = 50%: but the last call succeeded
    assert_eq!(b.state(), State::Closed);
    b.admit(0);
    b.record(0, true); // window slides: 50 of the last 100 failed, this one failed
    assert!(b.is_open());
    for _ in 0..10 {
        assert!(b.admit(60 * S));
    }
    assert!(!b.admit(60 * S), "only 10 probes");
    for i in 0..10 {
        b.record(60 * S, i < 4); // 4 of 10 failed: below 50%
    }
    assert_eq!(b.state(), State::Closed);
}
