//! Resilience4j's `COUNT_BASED` sliding window (resilience4j
//! `CircuitBreakerConfig`, `slidingWindowSize`; docs/sources/presets.md
//! §6): the outcomes of the last N calls, a ring of one bit per call.

#[derive(Clone, Debug)]
pub struct CountWindow {
    /// Failed (1) or not (0), one bit per slot of the ring.
    bits: Vec<u64>,
    size: usize,
    next: usize,
    len: usize,
    failures: u32,
}

impl CountWindow {
    /// The last `size` calls (at least one).
    pub fn new(size: u32) -> Self {
        let size = size.max(1) as usize;
        CountWindow {
            bits: vec![0; size.div_ceil(64)],
            size,
            next: 0,
            len: 0,
            failures: 0,
        }
    }

    /// The bytes a window of `size` calls allocates.
    pub fn heap_bytes(size: u32) -> u64 {
        u64::from(size.max(1)).div_ceil(64) * 8
    }

    fn get(&self, i: usize) -> bool {
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: usize, v: bool) {
        let mask = 1 << (i % 64);
        if v {
            self.bits[i / 64] |= mask;
        } else {
            self.bits[i / 64] &= !mask;
        }
    }

    /// Records one outcome, evicting the oldest when full; returns (calls,
    /// failures) in the window.
    pub fn add(&mut self, failed: bool) -> (f64, f64) {
        let evicted = self.len == self.size && self.get(self.next);
        self.failures = self.failures + u32::from(failed) - u32::from(evicted);
        self.set(self.next, failed);
        self.next = (self.next + 1) % self.size;
        self.len = (self.len + 1).min(self.size);
        (self.len as f64, self.failures as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_last_n_outcomes_across_word_boundaries() {
        let mut w = CountWindow::new(70);
        for i in 0..70 {
            assert_eq!(w.add(i % 3 == 0), ((i + 1) as f64, (i / 3 + 1) as f64));
        }
        // 24 failures among 70; each new success evicts the oldest outcome.
        for i in 0..70 {
            let (calls, fails) = w.add(false);
            assert_eq!(calls, 70.0);
            let left = (i + 1..70).filter(|k| k % 3 == 0).count();
            assert_eq!(fails, left as f64, "after {} evictions", i + 1);
        }
    }
}
