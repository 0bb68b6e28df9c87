//! The offered rate of an open-loop fleet over time: a piecewise-linear
//! function (steps, spikes and ramps), and exact sampling of a
//! non-homogeneous Poisson process from it by inverting the integrated rate:
//! draw E ~ Exp(1) and find the t at which the expected number of arrivals
//! since now reaches E.

use crate::engine::{NS_PER_S, Nanos};

/// One linear piece: the rate is `rate + slope * (t - start)` from `start`
/// to the next piece. Rates are per nanosecond, slopes per ns².
#[derive(Clone, Copy, Debug, PartialEq)]
struct Piece {
    start: Nanos,
    rate: f64,
    slope: f64,
}

/// A rate schedule. The last piece extends forever.
#[derive(Clone, Debug, PartialEq)]
pub struct RateProfile {
    pieces: Vec<Piece>,
}

/// One change of the rate, in the scenario's terms (rates per second).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RateChange {
    /// From `at` on, the rate is `rate`.
    Step { at: Nanos, rate: f64 },
    /// `rate` from `at` for `length`, then back to the rate before `at`.
    Spike { at: Nanos, rate: f64, length: Nanos },
    /// Linear from the rate at `at` to `to` at `by`, then held.
    Ramp { at: Nanos, to: f64, by: Nanos },
}

impl RateProfile {
    /// A constant rate (per second).
    pub fn constant(per_sec: f64) -> Self {
        Self::new(per_sec, &[])
    }

    /// `initial` (per second) from time 0, then each change in order.
    /// Changes must be sorted and must not overlap (scenario validation
    /// guarantees it).
    pub fn new(initial: f64, changes: &[RateChange]) -> Self {
        let per_ns = |r: f64| r / NS_PER_S as f64;
        let mut p = RateProfile {
            pieces: vec![Piece {
                start: 0,
                rate: per_ns(initial),
                slope: 0.0,
            }],
        };
        for c in changes {
            match *c {
                RateChange::Step { at, rate } => p.push(at, per_ns(rate), 0.0),
                RateChange::Spike { at, rate, length } => {
                    let before = p.rate_at(at);
                    p.push(at, per_ns(rate), 0.0);
                    p.push(at.saturating_add(length), before, 0.0);
                }
                RateChange::Ramp { at, to, by } => {
                    let from = p.rate_at(at);
                    let len = by.saturating_sub(at).max(1) as f64;
                    p.push(at, from, (per_ns(to) - from) / len);
                    p.push(by, per_ns(to), 0.0);
                }
            }
        }
        p
    }

    fn push(&mut self, start: Nanos, rate: f64, slope: f64) {
        // A change at the start of the last piece replaces it.
        while self.pieces.last().is_some_and(|l| l.start >= start) && self.pieces.len() > 1 {
            self.pieces.pop();
        }
        if self.pieces.len() == 1 && self.pieces[0].start >= start {
            self.pieces[0] = Piece { start, rate, slope };
        } else {
            self.pieces.push(Piece { start, rate, slope });
        }
    }

    /// The rate at `t`, per nanosecond.
    fn rate_at(&self, t: Nanos) -> f64 {
        let i = self.piece_index(t);
        let p = self.pieces[i];
        (p.rate + p.slope * (t - p.start.min(t)) as f64).max(0.0)
    }

    /// The rate at `t`, per second.
    pub fn per_sec_at(&self, t: Nanos) -> f64 {
        self.rate_at(t) * NS_PER_S as f64
    }

    /// The expected number of arrivals in [a, b).
    pub fn mass(&self, a: Nanos, b: Nanos) -> f64 {
        let mut m = 0.0;
        let mut t = a;
        let mut i = self.piece_index(a);
        while t < b {
            let end = self.pieces.get(i + 1).map_or(b, |n| n.start.min(b));
            m += self.piece_mass(i, t, end);
            t = end;
            i += 1;
        }
        m
    }

    fn piece_index(&self, t: Nanos) -> usize {
        self.pieces
            .partition_point(|p| p.start <= t)
            .saturating_sub(1)
    }

    fn piece_mass(&self, i: usize, a: Nanos, b: Nanos) -> f64 {
        let p = self.pieces[i];
        let r0 = p.rate + p.slope * (a - p.start) as f64;
        let d = (b - a) as f64;
        (r0 * d + 0.5 * p.slope * d * d).max(0.0)
    }

    /// The time of the next arrival after `now`, given `e` drawn from
    /// Exp(1); `None` when the rate stays zero forever.
    pub fn next_arrival(&self, now: Nanos, mut e: f64) -> Option<Nanos> {
        let mut t = now;
        let mut i = self.piece_index(now);
        // Fast path: a constant rate for the rest of time.
        if i + 1 == self.pieces.len() && self.pieces[i].slope == 0.0 {
            let r = self.pieces[i].rate;
            if r <= 0.0 {
                return None;
            }
            let d = e / r;
            if d >= u64::MAX as f64 || d.is_nan() {
                return None;
            }
            // The ceiling, without a libm call.
            let whole = d as u64;
            let up = if (whole as f64) < d { whole + 1 } else { whole };
            return Some(now.saturating_add(up));
        }
        loop {
            let p = self.pieces[i];
            let end = self.pieces.get(i + 1).map(|n| n.start);
            let r0 = (p.rate + p.slope * (t - p.start.min(t)) as f64).max(0.0);
            let seg_mass = end.map(|end| self.piece_mass(i, t, end));
            match seg_mass {
                Some(m) if m < e => {
                    e -= m;
                    t = end.unwrap_or(t);
                    i += 1;
                }
                _ => {
                    // Solve r0*d + slope*d²/2 = e for the smallest d >= 0, in
                    // the form that stays exact when slope is tiny.
                    let s = p.slope;
                    let disc = r0 * r0 + 2.0 * s * e;
                    if disc < 0.0 || (r0 == 0.0 && s <= 0.0) {
                        // Only reachable on the last piece: the rate falls
                        // to zero before another arrival.
                        return None;
                    }
                    let d = 2.0 * e / (r0 + disc.sqrt());
                    if !d.is_finite() {
                        return None;
                    }
                    let d = d.ceil().max(0.0);
                    return Some(t.saturating_add(if d >= u64::MAX as f64 {
                        u64::MAX
                    } else {
                        d as u64
                    }));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NS_PER_S;

    #[test]
    fn steps_spikes_and_ramps_shape_the_rate() {
        let p = RateProfile::new(
            100.0,
            &[
                RateChange::Spike {
                    at: 10 * S,
                    rate: 300.0,
                    length: 5 * S,
                },
                RateChange::Ramp {
                    at: 20 * S,
                    to: 0.0,
                    by: 30 * S,
                },
                RateChange::Step {
                    at: 40 * S,
                    rate: 50.0,
                },
            ],
        );
        let r = |t| (p.per_sec_at(t) * 1e6).round() / 1e6;
        assert_eq!(r(0), 100.0);
        assert_eq!(r(12 * S), 300.0);
        assert_eq!(r(15 * S), 100.0);
        assert_eq!(r(25 * S), 50.0);
        assert_eq!(r(30 * S), 0.0);
        assert_eq!(r(35 * S), 0.0);
        assert_eq!(r(40 * S), 50.0);
        // 10 s at 100/s + 5 s at 300/s + 5 s at 100/s + a ramp 100 -> 0 over 10 s.
        assert!((p.mass(0, 30 * S) - (1000.0 + 1500.0 + 500.0 + 500.0)).abs() < 1e-6);
    }

    #[test]
    fn inversion_matches_the_integrated_rate() {
        let p = RateProfile::new(
            100.0,
            &[RateChange::Ramp {
                at: S,
                to: 1000.0,
                by: 2 * S,
            }],
        );
        for e in [0.01, 0.5, 1.0, 50.0, 100.0, 300.0, 2000.0] {
            let t = p.next_arrival(0, e).unwrap();
            assert!((p.mass(0, t) - e).abs() < 1e-3, "e={e} t={t}");
        }
    }

    #[test]
    fn zero_rate_forever_has_no_arrival() {
        let p = RateProfile::new(10.0, &[RateChange::Step { at: S, rate: 0.0 }]);
        assert_eq!(p.next_arrival(0, 100.0), None);
        assert!(p.next_arrival(0, 1.0).is_some());
    }

    #[test]
    fn poisson_count_matches_rate() {
        let p = RateProfile::constant(1000.0);
        let mut s = crate::engine::Stream::new(3, crate::engine::Purpose::Arrivals, 0);
        let (mut t, mut n) = (0, 0u64);
        while let Some(next) = p.next_arrival(t, s.exp1()) {
            if next >= 100 * S {
                break;
            }
            t = next;
            n += 1;
        }
        // 100 000 expected, sd 316: 5 sd is 1 581.
        assert!((n as f64 - 100_000.0).abs() < 1_600.0, "{n}");
    }
}
