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

fn cfg(window: BreakerWindow, ratio: f64, min_calls: u32, probes: u32) -> BreakerConfig {
    BreakerConfig {
        window,
        failure_ratio: ratio,
        min_calls,
        open_for: 10 * S,
        probes,
        retries_only: false,
    }
}

/// Records `n` outcomes at `now`, every one admitted.
fn record(b: &mut Breaker, now: Nanos, n: u32, failed: bool) {
    for _ in 0..n {
        assert!(b.admit(now));
        b.record(now, failed);
    }
}

#[test]
fn opens_at_exactly_the_minimum_calls_and_exactly_the_ratio() {
    // 4 calls minimum, ratio 0.5: 1 success then 2 failures is 3 calls
    // (below the minimum); a 3rd failure makes 3 of 4 = 75%.
    let mut b = Breaker::new(cfg(BreakerWindow::Count(10), 0.5, 4, 1));
    record(&mut b, 0, 1, false);
    record(&mut b, 0, 2, true);
    assert_eq!(b.state(), State::Closed, "3 calls < 4");
    record(&mut b, 0, 1, true);
    assert_eq!(b.state(), State::Open { until: 10 * S });
    // Exactly the ratio: 2 failures in 4 calls opens (>=).
    let mut b = Breaker::new(cfg(BreakerWindow::Count(10), 0.5, 4, 1));
    record(&mut b, 0, 2, false);
    record(&mut b, 0, 1, true);
    assert_eq!(b.state(), State::Closed);
    record(&mut b, 0, 1, true);
    assert!(b.is_open(), "2 / 4 = 0.5 >= 0.5");
    // Just below: 2 in 5 (after 3 successes) stays closed.
    let mut b = Breaker::new(cfg(BreakerWindow::Count(10), 0.5, 4, 1));
    record(&mut b, 0, 3, false);
    record(&mut b, 0, 2, true);
    assert_eq!(b.state(), State::Closed, "0.4 < 0.5");
    // A success never opens, even above the ratio (the check runs on a
    // failure only).
    let mut b = Breaker::new(cfg(BreakerWindow::Count(4), 0.5, 4, 1));
    record(&mut b, 0, 1, false);
    b.cfg.failure_ratio = 2.0; // never by a failure
    record(&mut b, 0, 3, true);
    b.cfg.failure_ratio = 0.5;
    record(&mut b, 0, 1, false); // 3 of the last 4 failed, but it succeeded
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn open_admits_nothing_until_its_end_then_one_probe_at_a_time() {
    let mut b = Breaker::new(cfg(BreakerWindow::Count(10), 0.5, 1, 2));
    record(&mut b, 3 * S, 1, true);
    assert_eq!(b.state(), State::Open { until: 13 * S });
    assert!(!b.admit(13 * S - 1));
    assert!(b.is_open());
    // At exactly the end: half-open, the first probe admitted.
    assert!(b.admit(13 * S));
    assert_eq!(
        b.state(),
        State::HalfOpen {
            admitted: 1,
            completed: 0,
            failures: 0
        }
    );
    assert!(b.is_open(), "half-open counts as open");
    assert!(b.admit(13 * S));
    assert!(!b.admit(13 * S), "2 probes only");
    // The first probe's result does not decide alone.
    b.record(14 * S, false);
    assert_eq!(
        b.state(),
        State::HalfOpen {
            admitted: 2,
            completed: 1,
            failures: 0
        }
    );
    assert!(!b.admit(14 * S), "still 2 probes taken");
    // The second fails: 1 of 2 = 50% >= 50%: open again, from now.
    b.record(15 * S, true);
    assert_eq!(b.state(), State::Open { until: 25 * S });
    // A call admitted before it opened finishes: ignored.
    b.record(16 * S, false);
    assert_eq!(b.state(), State::Open { until: 25 * S });
}

#[test]
fn probes_below_the_ratio_close_and_reset_the_window() {
    let mut b = Breaker::new(cfg(BreakerWindow::Count(10), 0.5, 3, 4));
    record(&mut b, 0, 3, true);
    assert!(b.is_open());
    for _ in 0..4 {
        assert!(b.admit(10 * S));
    }
    // 1 failure of 4 probes: 25% < 50%: closed.
    b.record(10 * S, true);
    for _ in 0..3 {
        b.record(10 * S, false);
    }
    assert_eq!(b.state(), State::Closed);
    assert!(!b.is_open());
    // The window starts empty: 2 failures are below the minimum of 3.
    record(&mut b, 10 * S, 2, true);
    assert_eq!(b.state(), State::Closed);
    record(&mut b, 10 * S, 1, true);
    assert!(b.is_open());
}

#[test]
fn a_time_window_breaker_counts_only_its_window() {
    // 10 s in slices of 1 s; minimum 3 calls.
    let mut b = Breaker::new(cfg(BreakerWindow::Time(10 * S), 0.5, 3, 1));
    record(&mut b, 0, 2, true);
    // 10 s later those two have left: 1 failure of 1 call.
    record(&mut b, 10 * S, 1, true);
    assert_eq!(b.state(), State::Closed);
    record(&mut b, 10 * S, 1, true);
    record(&mut b, 10 * S, 1, false);
    assert_eq!(b.state(), State::Closed, "the success does not open");
    record(&mut b, 11 * S, 1, true);
    assert!(b.is_open(), "3 of 4");
}

#[test]
fn retries_only_and_memory() {
    let mut c = cfg(BreakerWindow::Count(10), 0.5, 1, 1);
    assert!(!Breaker::new(c).retries_only());
    c.retries_only = true;
    assert!(Breaker::new(c).retries_only());
    let own = std::mem::size_of::<Breaker>() as u64;
    assert_eq!(
        Breaker::state_bytes(&cfg(BreakerWindow::Count(100), 0.5, 1, 1)),
        own + 16
    );
    assert_eq!(
        Breaker::state_bytes(&cfg(BreakerWindow::Count(128), 0.5, 1, 1)),
        own + 16
    );
    assert_eq!(
        Breaker::state_bytes(&cfg(BreakerWindow::Count(129), 0.5, 1, 1)),
        own + 24
    );
    assert_eq!(
        Breaker::state_bytes(&cfg(BreakerWindow::Time(S), 0.5, 1, 1)),
        own + 160
    );
}
