//! Circuit breakers: Closed → Open → HalfOpen → Closed/Open, over a
//! failure ratio measured either over a sliding time window (Polly v8) or
//! over the last N calls (Resilience4j). Constants are in
//! docs/sources/presets.md §5 (Polly: ratio 0.1, minimum throughput
//! 100, sampling 30 s in 10 windows, break 5 s, one probe) and §6
//! (Resilience4j: 50%, window 100 calls, minimum 100, open 60 s, 10 probes).
//!
//! In HalfOpen the breaker admits `probes` calls and rejects the rest;
//! once they have all completed it closes (metrics reset) when their
//! failure ratio is below the threshold and opens again otherwise. With one
//! probe that is Polly's rule: probe success closes, probe failure reopens.
//! `blocks: retries` is Brooker's retry breaker: first attempts always pass,
//! only retries are refused while open.
//!
//! The failure ratio is measured by one of two windows, each in a file of
//! its own behind [`FailureWindow`]: [`TimeWindow`] (Polly) and
//! [`CountWindow`] (Resilience4j).

mod count_window;
#[cfg(test)]
mod tests;
mod time_window;

pub use count_window::CountWindow;
pub use time_window::TimeWindow;

use crate::engine::Nanos;

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

/// How the failure ratio is measured.
#[derive(Clone, Debug)]
pub enum FailureWindow {
    Time(TimeWindow),
    Count(CountWindow),
}

impl FailureWindow {
    fn new(window: BreakerWindow) -> Self {
        match window {
            BreakerWindow::Time(w) => FailureWindow::Time(TimeWindow::new(w)),
            BreakerWindow::Count(n) => FailureWindow::Count(CountWindow::new(n)),
        }
    }

    /// Records one outcome; returns (calls, failures) in the window.
    fn add(&mut self, now: Nanos, failed: bool) -> (f64, f64) {
        match self {
            FailureWindow::Time(w) => w.add(now, failed),
            FailureWindow::Count(w) => w.add(failed),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Breaker {
    cfg: BreakerConfig,
    state: State,
    window: FailureWindow,
}

impl Breaker {
    /// The memory one breaker of `cfg` takes: a count window holds one
    /// bit per call of the window.
    pub fn state_bytes(cfg: &BreakerConfig) -> u64 {
        let own = std::mem::size_of::<Breaker>() as u64;
        match cfg.window {
            BreakerWindow::Time(_) => own + TimeWindow::heap_bytes(),
            BreakerWindow::Count(n) => own + CountWindow::heap_bytes(n),
        }
    }

    pub fn new(cfg: BreakerConfig) -> Self {
        Breaker {
            cfg,
            state: State::Closed,
            window: FailureWindow::new(cfg.window),
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
                let (calls, fails) = self.window.add(now, failed);
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
