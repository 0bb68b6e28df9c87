//! Circuit breakers: Closed → Open → HalfOpen → Closed/Open, over a
//! failure ratio measured either over a sliding time window (Polly v8) or
//! over the last N calls (Resilience4j). Constants are in
//! shared/reference/presets.md §5 (Polly: ratio 0.1, minimum throughput
//! 100, sampling 30 s in 10 windows, break 5 s, one probe) and §6
//! (Resilience4j: 50%, window 100 calls, minimum 100, open 60 s, 10 probes).
//!
//! In HalfOpen the breaker admits `probes` calls and rejects the rest;
//! once they have all completed it closes (metrics reset) when their
//! failure ratio is below the threshold and opens again otherwise. With one
//! probe that is Polly's rule: probe success closes, probe failure reopens.
//! `blocks: retries` is Brooker's retry breaker: first attempts always pass,
//! only retries are refused while open.

use crate::engine::Nanos;

use super::window::Windowed;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerWindow {
    /// Sliding time window (Polly), in 10 slices.
    Time(Nanos),
    /// The last N recorded calls (Resilience4j COUNT_BASED).
    Count(u32),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BreakerConfig {
    pub window: BreakerWindow,
    /// Opens when failures ÷ calls ≥ this (with enough calls).
    pub failure_ratio: f64,
    /// Calls the window must hold before the ratio counts.
    pub min_calls: u32,
    pub open_for: Nanos,
    pub probes: u32,
    /// Only retries are blocked while open (not first attempts).
    pub retries_only: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Closed,
    Open {
        until: Nanos,
    },
    HalfOpen {
        admitted: u32,
        completed: u32,
        failures: u32,
    },
}

#[derive(Clone, Debug)]
pub struct Breaker {
    cfg: BreakerConfig,
    state: State,
    calls: Option<Windowed>,
    failures: Option<Windowed>,
    ring: Vec<bool>,
    ring_next: usize,
    ring_len: usize,
    ring_failures: u32,
}

/// Slices of a time window (Polly's health metrics: 10 windows).
const TIME_SLICES: usize = 10;

impl Breaker {
    /// The memory one breaker of `cfg` takes: a count window holds one
    /// flag per call of the window.
    pub fn state_bytes(cfg: &BreakerConfig) -> u64 {
        let own = std::mem::size_of::<Breaker>() as u64;
        match cfg.window {
            BreakerWindow::Time(_) => own + 2 * Windowed::heap_bytes(TIME_SLICES),
            BreakerWindow::Count(n) => own + u64::from(n.max(1)),
        }
    }

    pub fn new(cfg: BreakerConfig) -> Self {
        let (calls, failures, ring) = match cfg.window {
            BreakerWindow::Time(w) => (
                Some(Windowed::new(w, TIME_SLICES)),
                Some(Windowed::new(w, TIME_SLICES)),
                Vec::new(),
            ),
            BreakerWindow::Count(n) => (None, None, vec![false; n.max(1) as usize]),
        };
        Breaker {
            cfg,
            state: State::Closed,
            calls,
            failures,
            ring,
            ring_next: 0,
            ring_len: 0,
            ring_failures: 0,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// Whether the breaker currently refuses calls (open, or half-open with
    /// every probe taken).
    pub fn is_open(&self) -> bool {
        !matches!(self.state, State::Closed)
    }

    pub fn retries_only(&self) -> bool {
        self.cfg.retries_only
    }

    /// May a call go through now? An admitted call must later be
    /// `record`ed.
    pub fn admit(&mut self, now: Nanos) -> bool {
        match self.state {
            State::Closed => true,
            State::Open { until } if now >= until => {
                self.state = State::HalfOpen {
                    admitted: 1,
                    completed: 0,
                    failures: 0,
                };
                true
            }
            State::Open { .. } => false,
            State::HalfOpen {
                admitted,
                completed,
                failures,
            } => {
                if admitted < self.cfg.probes {
                    self.state = State::HalfOpen {
                        admitted: admitted + 1,
                        completed,
                        failures,
                    };
                    true
                } else {
                    false
                }
            }
        }
    }

    /// The outcome of an admitted call.
    pub fn record(&mut self, now: Nanos, failed: bool) {
        match self.state {
            State::Closed => {
                let (calls, fails) = self.add(now, failed);
                if failed
                    && calls >= self.cfg.min_calls as f64
                    && fails / calls >= self.cfg.failure_ratio
                {
                    self.open(now);
                }
            }
            State::HalfOpen {
                admitted,
                completed,
                failures,
            } => {
                let completed = completed + 1;
                let failures = failures + u32::from(failed);
                if completed >= self.cfg.probes {
                    if failures as f64 / completed as f64 >= self.cfg.failure_ratio {
                        self.open(now);
                    } else {
                        self.close();
                    }
                } else {
                    self.state = State::HalfOpen {
                        admitted,
                        completed,
                        failures,
                    };
                }
            }
            // A call admitted before the breaker opened: ignored.
            State::Open { .. } => {}
        }
    }

    fn add(&mut self, now: Nanos, failed: bool) -> (f64, f64) {
        match (self.calls.as_mut(), self.failures.as_mut()) {
            (Some(c), Some(f)) => {
                c.add(now, 1.0);
                f.add(now, if failed { 1.0 } else { 0.0 });
                (c.total(now), f.total(now))
            }
            _ => {
                let n = self.ring.len();
                let evicted = self.ring_len == n && self.ring[self.ring_next];
                self.ring_failures = self.ring_failures + u32::from(failed) - u32::from(evicted);
                self.ring[self.ring_next] = failed;
                self.ring_next = (self.ring_next + 1) % n;
                self.ring_len = (self.ring_len + 1).min(n);
                (self.ring_len as f64, self.ring_failures as f64)
            }
        }
    }

    fn open(&mut self, now: Nanos) {
        self.state = State::Open {
            until: now.saturating_add(self.cfg.open_for),
        };
    }

    fn close(&mut self) {
        self.state = State::Closed;
        let cfg = self.cfg;
        *self = Breaker::new(cfg);
    }
}

#[cfg(test)]
mod tests {
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
}
