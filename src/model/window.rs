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
        self.advance(now);
        let i = (self.head % self.sums.len() as u64) as usize;
        self.sums[i] += v;
    }

    /// The sum over the last window (the current slice included).
    pub fn total(&mut self, now: Nanos) -> f64 {
        self.advance(now);
        self.sums.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
