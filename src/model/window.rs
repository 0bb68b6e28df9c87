//! A sum over a sliding time window, cut into slices (Finagle's
//! `WindowedAdder`, and how the SRE book's "last 2 minutes" is counted):
//! adding is O(1), and the window moves in steps of one slice.
//!
//! A window that few values reach keeps only the slices that hold one,
//! oldest first, so it costs memory for what it counts, not for its
//! slices: a layer of a million instances, each with a throttle of two
//! 120-slice windows, holds a few values per instance in use. Once half
//! its slices hold values it keeps a ring of every slice instead (the
//! same bytes as half the slices kept with their indices). Either way the
//! total is the one the ring summed in ring order gives, bit for bit:
//! slices holding zero add nothing to it, and the kept ones are summed in
//! the order of their places in the ring.

use std::collections::VecDeque;

use crate::engine::Nanos;
use crate::model::level::Holds;

#[derive(Clone, Debug)]
enum Slices {
    /// The slices holding a value other than zero, oldest first: (index
    /// (time / slice), sum); at most half the slices.
    Kept(VecDeque<(u64, f64)>),
    /// Every slice, at place index mod slices.
    Ring(Vec<f64>),
}

#[derive(Clone, Debug)]
pub struct Windowed {
    slice: Nanos,
    /// The slices of the window.
    n: u64,
    slices: Slices,
    /// Index (time / slice) of the newest slice written.
    head: u64,
    /// The total, kept as values come and go, while every value added has
    /// been a whole number (counts): such sums are exact in any order, so
    /// this is bit for bit the slices summed afresh. `None` once a
    /// fraction was added (then `total` sums the slices).
    running: Option<f64>,
    /// The last total summed, while it still holds: until something is
    /// added, or until the oldest value leaves the window.
    cached: Option<(f64, Nanos)>,
}

/// Whole numbers below this add exactly, in any order, into a total that
/// stays below 2⁵³ (2³⁶ of them, far more than any window takes).
const WHOLE: f64 = 131_072.0; // 2^17

/// The most slices kept with their indices before a window of `n` slices
/// keeps a ring: a kept slice takes two words, a slice of the ring one.
fn most_kept(n: u64) -> usize {
    (n / 2).max(1) as usize
}

impl Windowed {
    /// The most bytes `new(_, slices)` comes to hold: a ring, or half as
    /// many slices kept with their indices.
    pub fn heap_bytes(slices: usize) -> u64 {
        let n = slices.max(1) as u64;
        let kept = most_kept(n) * std::mem::size_of::<(u64, f64)>();
        (n * 8).max(kept as u64)
    }

    /// A window of `window` split into `slices` slices.
    pub fn new(window: Nanos, slices: usize) -> Self {
        let n = slices.max(1) as u64;
        Windowed {
            slice: (window / n).max(1),
            n,
            slices: Slices::Kept(VecDeque::new()),
            head: 0,
            running: Some(0.0),
            cached: None,
        }
    }

    /// Moves the head to `now`'s slice; the values that leave the window
    /// are dropped.
    fn advance(&mut self, now: Nanos) {
        let slot = now / self.slice;
        if slot <= self.head {
            return;
        }
        let n = self.n;
        match &mut self.slices {
            Slices::Kept(kept) => {
                while let Some(&(oldest, sum)) = kept.front() {
                    if oldest + n > slot {
                        break;
                    }
                    kept.pop_front();
                    if let Some(r) = self.running.as_mut() {
                        *r -= sum;
                    }
                }
            }
            Slices::Ring(ring) => {
                for k in 1..=(slot - self.head).min(n) {
                    let old = std::mem::replace(&mut ring[((self.head + k) % n) as usize], 0.0);
                    if let Some(r) = self.running.as_mut() {
                        *r -= old;
                    }
                }
            }
        }
        self.head = slot;
    }

    pub fn add(&mut self, now: Nanos, v: f64) {
        self.cached = None;
        self.advance(now);
        let (head, n) = (self.head, self.n);
        // A time before the head adds into the head's slice.
        match &mut self.slices {
            Slices::Kept(kept) => {
                if let Some((slot, sum)) = kept.back_mut()
                    && *slot == head
                {
                    *sum += v;
                    if *sum == 0.0 {
                        kept.pop_back();
                    }
                } else if v == 0.0 {
                } else if kept.len() < most_kept(n) {
                    if kept.len() == kept.capacity() {
                        let grown = (kept.len() * 2).max(4).min(most_kept(n));
                        kept.reserve_exact(grown - kept.len());
                    }
                    kept.push_back((head, 0.0 + v));
                } else {
                    let mut ring = vec![0.0; n as usize];
                    for &(slot, sum) in kept.iter() {
                        ring[(slot % n) as usize] = sum;
                    }
                    ring[(head % n) as usize] += v;
                    self.slices = Slices::Ring(ring);
                }
            }
            Slices::Ring(ring) => ring[(head % n) as usize] += v,
        }
        self.running = match self.running {
            Some(r) if v.fract() == 0.0 && v.abs() < WHOLE => Some(r + v),
            _ => None,
        };
    }

    /// How long the last `total` holds while nothing is added: until the
    /// oldest value leaves the window.
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

    /// When the oldest value leaves the window: when the head reaches its
    /// index plus the slices (`Nanos::MAX`: the window holds none).
    fn until(&self) -> Nanos {
        let n = self.n;
        let oldest = match &self.slices {
            Slices::Kept(kept) => kept.front().map(|&(slot, _)| slot),
            // `age` slices before the head.
            Slices::Ring(ring) => (0..n)
                .rev()
                .find(|&age| ring[((self.head + n - age) % n) as usize] != 0.0)
                .map(|age| self.head - age.min(self.head)),
        };
        oldest.map_or(Nanos::MAX, |o| (o + n).saturating_mul(self.slice))
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
        let total = self.ring_sum();
        self.cached = Some((total, self.until()));
        total
    }

    /// The slices summed in ring order. Kept slices: the window spans fewer
    /// than `n` consecutive indices, so their places (index mod n) rise
    /// from the oldest, wrap to 0 at most once, and rise again; the values
    /// after the wrap come first. Empty, the ring's zeros sum to +0.
    fn ring_sum(&self) -> f64 {
        match &self.slices {
            Slices::Ring(ring) => ring.iter().sum(),
            Slices::Kept(kept) => {
                let place = |k: usize| kept[k].0 % self.n;
                let wrap = (1..kept.len())
                    .find(|&k| place(k) < place(k - 1))
                    .unwrap_or(0);
                let (older, newer) = (kept.range(..wrap), kept.range(wrap..));
                newer.chain(older).fold(0.0, |sum, &(_, v)| sum + v)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window as a ring of every slice (how it was first written, and
    /// how Finagle's `WindowedAdder` keeps it): the reference the kept
    /// slices must agree with, bit for bit.
    struct Ring {
        slice: Nanos,
        sums: Vec<f64>,
        head: u64,
    }

    impl Ring {
        fn new(window: Nanos, slices: usize) -> Self {
            let slices = slices.max(1);
            Ring {
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
            for k in 1..=(slot - self.head).min(n) {
                self.sums[((self.head + k) % n) as usize] = 0.0;
            }
            self.head = slot;
        }

        fn add(&mut self, now: Nanos, v: f64) {
            self.advance(now);
            let i = (self.head % self.sums.len() as u64) as usize;
            self.sums[i] += v;
        }

        fn total(&mut self, now: Nanos) -> f64 {
            self.advance(now);
            self.sums.iter().sum()
        }

        /// When the oldest non-zero slice leaves the window.
        fn holds(&self) -> Holds {
            let n = self.sums.len() as u64;
            let age = (0..n)
                .rev()
                .find(|&age| self.sums[((self.head + n - age) % n) as usize] != 0.0);
            match age {
                None => Holds::UntilTouched,
                Some(age) => Holds::Until((self.head - age.min(self.head) + n) * self.slice),
            }
        }
    }

    /// The total (cached, kept as counts come and go, or summed from the
    /// kept slices) is exactly a ring of every slice summed afresh, bit for
    /// bit, at every step of a long random history of adds and reads (gaps
    /// from within a slice to beyond the window, values that cancel a
    /// slice out), for whole counts and for fractions alike; the time the
    /// total holds until is right; and only slices holding a value are kept.
    #[test]
    fn the_total_is_the_sum_of_a_ring_of_every_slice() {
        use crate::engine::{Purpose, Stream};
        let mut rng = Stream::new(7, Purpose::Throttle, 0);
        for whole in [true, false] {
            // Reads with the ring, and with the slices kept.
            let (mut rings, mut kept) = (0, 0);
            for (window, slices) in [(100, 10), (1_000, 7), (50, 1), (30, 60), (120, 120)] {
                let mut w = Windowed::new(window, slices);
                let mut ring = Ring::new(window, slices);
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
                        let v = if whole { v.floor() } else { v };
                        // Now and then a value that cancels the slice out.
                        let v = if rng.chance(0.1) { -ring.total(now) } else { v };
                        w.add(now, v);
                        ring.add(now, v);
                    } else {
                        let hit = w.cached.is_some_and(|(_, until)| now < until);
                        cache_hits += u32::from(hit);
                        let total = w.total(now);
                        let expected = ring.total(now);
                        assert_eq!(total.to_bits(), expected.to_bits(), "at {now}");
                        assert_eq!(w.holds(), ring.holds(), "at {now}");
                        if let Holds::Until(t) = w.holds() {
                            assert!(t > now, "holds until {t}, now {now}");
                        }
                        if let Slices::Kept(k) = &w.slices {
                            let nonzero = ring.sums.iter().filter(|&&v| v != 0.0).count();
                            assert_eq!(k.len(), nonzero, "at {now}");
                            assert!(k.len() <= most_kept(slices as u64));
                            assert!(k.capacity() <= most_kept(slices as u64).max(4));
                            kept += 1;
                        } else {
                            rings += 1;
                        }
                    }
                }
                assert_eq!(w.running.is_some(), whole);
                if !whole {
                    assert!(cache_hits > 1_000, "the cache was used {cache_hits} times");
                }
            }
            assert!(
                rings > 1_000 && kept > 1_000,
                "{rings} reads with a ring, {kept} kept"
            );
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
        assert_eq!(Windowed::heap_bytes(120), 960);
        assert_eq!(Windowed::heap_bytes(7), 56);
        assert_eq!(Windowed::heap_bytes(0), 16);
        let mut one = Windowed::new(100, 0);
        one.add(0, 1.0);
        assert_eq!(one.total(99), 1.0);
        assert_eq!(one.total(100), 0.0);
    }

    /// A window that few values reach keeps only their slices, and never
    /// more than half its slices' worth: its kept list grows by doubling
    /// (a few reallocations, not one a value) up to that bound, and only
    /// past it does the window become a ring (`heap_bytes`' promise).
    #[test]
    fn few_values_keep_few_slices_and_the_list_stays_within_half() {
        let slice = 1_000;
        let mut w = Windowed::new(120 * slice, 120);
        for k in 0..5 {
            w.add(k * slice, 1.0);
        }
        let Slices::Kept(kept) = &w.slices else {
            panic!("5 values of 120 slices are kept, not a ring");
        };
        assert_eq!(kept.len(), 5);
        assert!(kept.capacity() >= 8, "doubled: {}", kept.capacity());
        for k in 5..60 {
            w.add(k * slice, 1.0);
        }
        let Slices::Kept(kept) = &w.slices else {
            panic!("60 of 120 slices are still kept");
        };
        assert!(kept.capacity() <= 60, "{} slots", kept.capacity());
        assert!(
            (kept.capacity() * std::mem::size_of::<(u64, f64)>()) as u64
                <= Windowed::heap_bytes(120)
        );
        w.add(60 * slice, 1.0);
        assert!(matches!(w.slices, Slices::Ring(_)), "61 slices: a ring");
        assert_eq!(w.total(60 * slice), 61.0);
    }
}
