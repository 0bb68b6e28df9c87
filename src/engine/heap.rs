//! A binary min-heap of `Copy` entries ordered by a `u128` key, for the
//! event queue. Written out rather than `std::collections::BinaryHeap`
//! so that the few lines of each operation inline into the event loop
//! (measured: `BinaryHeap::pop` stayed an out-of-line call and cost the
//! M/M/16 loop about 15%); the algorithm is std's: push sifts the new
//! entry up through a hole; pop moves the hole from the root down to a
//! leaf along the smaller children, then sifts the last entry up from
//! there (fewer comparisons than a plain sift-down on random keys).

/// An entry with its ordering key (smallest first).
pub trait Keyed: Copy {
    fn key(&self) -> u128;
}

pub struct MinHeap<T> {
    v: Vec<T>,
}

impl<T: Keyed> MinHeap<T> {
    pub fn with_capacity(n: usize) -> Self {
        MinHeap {
            v: Vec::with_capacity(n),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.v.len()
    }

    #[inline]
    pub fn peek(&self) -> Option<&T> {
        self.v.first()
    }

    #[inline(always)]
    pub fn push(&mut self, e: T) {
        self.v.push(e);
        self.sift_up(self.v.len() - 1, e);
    }

    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        let last = self.v.pop()?;
        if self.v.is_empty() {
            return Some(last);
        }
        let top = self.v[0];
        let hole = self.hole_to_bottom();
        self.sift_up(hole, last);
        Some(top)
    }

    /// Keeps the entries for which `keep` holds, in heap order again.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.v.retain(keep);
        for i in (0..self.v.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// Puts `e` in the hole at `pos`, moving larger parents down.
    #[inline(always)]
    fn sift_up(&mut self, mut pos: usize, e: T) {
        let v = &mut self.v;
        let k = e.key();
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let p = v[parent];
            if p.key() <= k {
                break;
            }
            v[pos] = p;
            pos = parent;
        }
        v[pos] = e;
    }

    /// Moves the hole at the root down to a leaf along the smaller child;
    /// returns where it ended.
    #[inline(always)]
    fn hole_to_bottom(&mut self) -> usize {
        let v = &mut self.v[..];
        let n = v.len();
        let mut pos = 0;
        let mut child = 1;
        while child + 1 < n {
            // Branch-free: which child is smaller is a coin toss on random
            // keys, and a mispredicted branch costs more than the add.
            child += usize::from(v[child + 1].key() < v[child].key());
            v[pos] = v[child];
            pos = child;
            child = 2 * pos + 1;
        }
        if child < n {
            v[pos] = v[child];
            pos = child;
        }
        pos
    }

    /// Plain sift-down, for rebuilding.
    fn sift_down(&mut self, mut pos: usize) {
        let n = self.v.len();
        let e = self.v[pos];
        loop {
            let mut child = 2 * pos + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.v[child + 1].key() < self.v[child].key() {
                child += 1;
            }
            if e.key() <= self.v[child].key() {
                break;
            }
            self.v[pos] = self.v[child];
            pos = child;
        }
        self.v[pos] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Purpose, Stream};

    impl Keyed for u128 {
        fn key(&self) -> u128 {
            *self
        }
    }

    #[test]
    fn sorts_random_keys_and_survives_retain() {
        let mut rng = Stream::new(3, Purpose::Jitter, 0);
        let mut h = MinHeap::with_capacity(0);
        let mut all = Vec::new();
        for _ in 0..5_000 {
            let k = (rng.unit() * 1e6) as u128;
            h.push(k);
            all.push(k);
        }
        h.retain(|k| k % 3 != 0);
        all.retain(|k| k % 3 != 0);
        all.sort();
        let mut got = Vec::new();
        while let Some(k) = h.pop() {
            got.push(k);
        }
        assert_eq!(got, all);
        assert_eq!(h.len(), 0);
    }
}
