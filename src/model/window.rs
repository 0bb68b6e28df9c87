//! A sum over a sliding time window, kept in a ring of slices (Finagle's
//! `WindowedAdder`, and how the SRE book's "last 2 minutes" is counted):
//! adding is O(1), and the window moves in steps of one slice.

use crate::engine::Nanos;
use crate::model::level::Holds;

#[derive(Clone, Debug)]
pub struct Windowed {
    slice: Nanos,
    sums: Vec<f64>,
    /// Index (time / slice) of the newest slice written.
    head: u64,
    /// How many slices hold a value other than zero.
    nonzero: usize,
    /// The index of the oldest slice that holds a value other than zero.
    oldest: Option<u64>,
    /// The sum of the slices, kept as values come and go, while every
    /// value added has been a whole number (counts): such sums are exact
    /// in any order, so this is bit for bit the ring summed afresh. `None`
    /// once a fraction was added (then `total` sums the ring).
    running: Option<f64>,
    /// The last total computed, while it still holds: until something is
    /// added, or until the slice index at which the oldest non-zero slice
    /// leaves the window (kept as the time that slice begins, so checking
    /// costs no division). Clearing a slice that holds zero changes no
    /// term of the sum, so the cached value is exactly what summing again
    /// would give (a sampled level costs O(1) while a window is idle).
    cached: Option<(f64, Nanos)>,
}

/// Whole numbers below this add exactly, in any order, into a total that
/// stays below 2⁵³ (2³⁶ of them, far more than any window takes).
const WHOLE: f64 = 131_072.0; // 2^17

impl Windowed {
    /// The bytes `new(_, slices)` allocates (its slices).
    pub fn heap_bytes(slices: usize) -> u64 {
        (slices.max(1) * std::mem::size_of::<f64>()) as u64
    }

    /// A window of `window` split into `slices` slices.
    pub fn new(window: Nanos, slices: usize) -> Self {
        let slices = slices.max(1);
        Windowed {
            slice: (window / slices as u64).max(1),
            sums: vec![0.0; slices],
            head: 0,
            nonzero: 0,
            oldest: None,
            running: Some(0.0),
            cached: None,
        }
    }

    fn advance(&mut self, now: Nanos) {
        let slot = now / self.slice;
        if slot <= self.head {
            return;
        }
        let n = self.sums.len() as u64;
        let clear = (slot - self.head).min(n);
        // Slices that hold zero need no clearing: stop at the last value.
        let mut k = 1;
        while k <= clear && self.nonzero > 0 {
            let i = ((self.head + k) % n) as usize;
            let old = std::mem::replace(&mut self.sums[i], 0.0);
            if old != 0.0 {
                self.nonzero -= 1;
                if let Some(r) = self.running.as_mut() {
                    *r -= old;
                }
            }
            k += 1;
        }
        self.head = slot;
        // The oldest value left the window: the next one is the oldest.
        if let Some(o) = self.oldest
            && o + n <= slot
        {
            self.oldest = ((o + 1).max((slot + 1).saturating_sub(n))..=slot)
                .find(|&j| self.sums[(j % n) as usize] != 0.0);
        }
    }

    pub fn add(&mut self, now: Nanos, v: f64) {
        self.cached = None;
        self.advance(now);
        let i = (self.head % self.sums.len() as u64) as usize;
        let was_zero = self.sums[i] == 0.0;
        self.sums[i] += v;
        let is_zero = self.sums[i] == 0.0;
        if was_zero != is_zero {
            if is_zero {
                self.nonzero -= 1;
                // Only the newest slice changes; when it was the oldest
                // value, it was the only one.
                if self.oldest == Some(self.head) {
                    self.oldest = None;
                }
            } else {
                self.nonzero += 1;
                self.oldest = self.oldest.or(Some(self.head));
            }
        }
        self.running = match self.running {
            Some(r) if v.fract() == 0.0 && v.abs() < WHOLE => Some(r + v),
            _ => None,
        };
    }

    /// How long the last `total` holds while nothing is added: until the
    /// oldest non-zero slice leaves the window.
    pub fn holds(&self) -> Holds {
        let until = match self.cached {
            Some((_, until)) => until,
            None if self.running.is_some() => self.until(),
            None => 0,
        };
        match until {
            Nanos::MAX => Holds::UntilTouched,
            until => Holds::Until(until),
        }
    }

    /// When the oldest non-zero slice leaves the window: when the head
    /// reaches its index plus the slices (`Nanos::MAX`: every slice holds
    /// zero).
    fn until(&self) -> Nanos {
        let n = self.sums.len() as u64;
        self.oldest
            .map_or(Nanos::MAX, |o| (o + n).saturating_mul(self.slice))
    }

    /// The sum over the last window (the current slice included).
    pub fn total(&mut self, now: Nanos) -> f64 {
        if let Some((total, until)) = self.cached
            && now < until
        {
            return total;
        }
        self.advance(now);
        if let Some(total) = self.running {
            return total;
        }
        let total = self.sums.iter().sum();
        self.cached = Some((total, self.until()));
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The total (cached, or kept as counts come and go) is exactly the
    /// ring summed afresh, bit for bit, at every step of a long random
    /// history of adds and reads (gaps from within a slice to beyond the
    /// window), for whole counts and for fractions alike; the count of
    /// non-zero slices and the time the total holds until are right.
    #[test]
    fn the_total_is_the_sum_of_the_ring() {
        use crate::engine::{Purpose, Stream};
        let mut rng = Stream::new(7, Purpose::Throttle, 0);
        for whole in [true, false] {
            for (window, slices) in [(100, 10), (1_000, 7), (50, 1), (30, 60)] {
                let mut w = Windowed::new(window, slices);
                let mut now = 0;
                let mut cache_hits = 0;
                for _ in 0..20_000 {
                    now += match rng.unit() {
                        u if u < 0.5 => 0,
                        u if u < 0.9 => (rng.unit() * 15.0) as u64,
                        _ => (rng.unit() * 2.5 * window as f64) as u64,
                    };
                    if rng.chance(0.4) {
                        let v = rng.unit() * 4.0 - 1.0;
                        w.add(now, if whole { v.floor() } else { v });
                    } else {
                        let hit = w.cached.is_some_and(|(_, until)| now < until);
                        cache_hits += u32::from(hit);
                        let total = w.total(now);
                        let mut fresh = w.clone();
                        fresh.advance(now);
                        let ring: f64 = fresh.sums.iter().sum();
                        assert_eq!(total.to_bits(), ring.to_bits(), "at {now}");
                        let nonzero = fresh.sums.iter().filter(|&&v| v != 0.0).count();
                        assert_eq!(fresh.nonzero, nonzero, "at {now}");
                        // The oldest non-zero slice, found by looking.
                        let n = slices.max(1) as u64;
                        let age = (0..n)
                            .rev()
                            .find(|&age| fresh.sums[((fresh.head + n - age) % n) as usize] != 0.0);
                        let until = age.map_or(Nanos::MAX, |age| {
                            (fresh.head - age.min(fresh.head) + n) * fresh.slice
                        });
                        let expected = match until {
                            Nanos::MAX => Holds::UntilTouched,
                            t => Holds::Until(t),
                        };
                        assert_eq!(w.holds(), expected, "at {now}");
                        if let Holds::Until(t) = expected {
                            assert!(t > now, "holds until {t}, now {now}");
                        }
                    }
                }
                assert_eq!(w.running.is_some(), whole);
                if !whole {
                    assert!(cache_hits > 1_000, "the cache was used {cache_hits} times");
                }
            }
        }
    }

    #[test]
    fn values_age_out_slice_by_slice() {
        let mut w = Windowed::new(100, 10); // slices of 10
        w.add(0, 1.0);
        w.add(55, 2.0);
        assert_eq!(w.total(99), 3.0);
        assert_eq!(w.total(100), 2.0); // the slice [0, 10) left the window
        assert_eq!(w.total(149), 2.0);
        assert_eq!(w.total(150), 0.0); // [50, 60) left at 150
        w.add(10_000, 4.0); // a long gap clears everything
        assert_eq!(w.total(10_000), 4.0);
    }

    #[test]
    fn a_slice_leaves_exactly_one_window_after_it_began() {
        let mut w = Windowed::new(100, 10);
        w.add(3, 1.0); // slice [0, 10)
        assert_eq!(w.total(99), 1.0);
        // A jump of exactly one window clears every slice, the oldest too.
        assert_eq!(w.total(100), 0.0);
        let mut w = Windowed::new(100, 10);
        w.add(0, 1.0);
        w.add(95, 2.0); // slice [90, 100)
        assert_eq!(w.total(189), 2.0);
        assert_eq!(w.total(190), 0.0);
        // Adding into an old slice (time going back) lands in the current.
        w.add(5, 7.0);
        assert_eq!(w.total(190), 7.0);
        // Slices of a window that does not divide: 105 / 10 = 10 each.
        let mut w = Windowed::new(105, 10);
        w.add(0, 1.0);
        assert_eq!(w.total(99), 1.0);
        assert_eq!(w.total(100), 0.0);
        // A window shorter than its slice count: slices of 1.
        let mut w = Windowed::new(3, 10);
        w.add(0, 1.0);
        assert_eq!(w.total(9), 1.0);
        assert_eq!(w.total(10), 0.0);
        assert_eq!(Windowed::heap_bytes(10), 80);
        assert_eq!(Windowed::heap_bytes(0), 8);
        let mut one = Windowed::new(100, 0);
        one.add(0, 1.0);
        assert_eq!(one.total(99), 1.0);
        assert_eq!(one.total(100), 0.0);
    }
}
