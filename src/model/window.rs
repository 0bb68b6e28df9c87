//! A sum over a sliding time window, kept in a ring of slices (Finagle's
//! `WindowedAdder`, and how the SRE book's "last 2 minutes" is counted):
//! adding is O(1), and the window moves in steps of one slice.

use crate::engine::Nanos;

#[derive(Clone, Debug)]
pub struct Windowed {
    slice: Nanos,
    sums: Vec<f64>,
    /// Index (time / slice) of the newest slice written.
    head: u64,
    /// The last total computed, while it still holds: until something is
    /// added, or until the slice index at which the oldest non-zero slice
    /// leaves the window (kept as the time that slice begins, so checking
    /// costs no division). Clearing a slice that holds zero changes no
    /// term of the sum, so the cached value is exactly what summing again
    /// would give (a sampled level costs O(1) while a window is idle).
    cached: Option<(f64, Nanos)>,
}

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
        for k in 1..=clear {
            let i = ((self.head + k) % n) as usize;
            self.sums[i] = 0.0;
        }
        self.head = slot;
    }

    pub fn add(&mut self, now: Nanos, v: f64) {
        self.cached = None;
        self.advance(now);
        let i = (self.head % self.sums.len() as u64) as usize;
        self.sums[i] += v;
    }

    /// The sum over the last window (the current slice included).
    pub fn total(&mut self, now: Nanos) -> f64 {
        if let Some((total, until)) = self.cached
            && now < until
        {
            return total;
        }
        self.advance(now);
        let total = self.sums.iter().sum();
        // The oldest non-zero slice, `age` slices before the head, leaves
        // the window when the head reaches its index plus the slices.
        let n = self.sums.len() as u64;
        let oldest = (0..n)
            .rev()
            .find(|&age| self.sums[((self.head + n - age) % n) as usize] != 0.0);
        let until = oldest.map_or(u64::MAX, |age| {
            (self.head - age.min(self.head) + n).saturating_mul(self.slice)
        });
        self.cached = Some((total, until));
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cached total is exactly the sum the ring holds, at every step
    /// of a long random history of adds and reads (gaps from within a
    /// slice to beyond the window), against the ring summed afresh.
    #[test]
    fn the_cached_total_is_the_sum_of_the_ring() {
        use crate::engine::{Purpose, Stream};
        let mut rng = Stream::new(7, Purpose::Throttle, 0);
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
                    w.add(now, (rng.unit() * 4.0).floor());
                } else {
                    let hit = w.cached.is_some_and(|(_, until)| now < until);
                    cache_hits += u32::from(hit);
                    let cached = w.total(now);
                    let mut fresh = w.clone();
                    fresh.cached = None;
                    assert_eq!(cached.to_bits(), fresh.total(now).to_bits(), "at {now}");
                }
            }
            assert!(cache_hits > 1_000, "the cache was used {cache_hits} times");
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
