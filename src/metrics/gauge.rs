//! A piecewise-constant quantity (queue length, busy workers) integrated
//! over time, bucket by bucket, so the time series can show its mean in
//! each bucket rather than a sample at one instant.

use crate::engine::Nanos;

#[derive(Clone, Debug)]
pub struct Gauge {
    value: u64,
    since: Nanos,
    bucket: Nanos,
    /// Integral of the value over each bucket, in value × nanoseconds.
    area: Vec<u128>,
    /// The bucket of `since` and its end: time only moves forward, so a
    /// division is needed only when a bucket is left.
    cur: usize,
    cur_end: Nanos,
}

impl Gauge {
    pub fn new(bucket: Nanos, n_buckets: usize) -> Self {
        Gauge {
            value: 0,
            since: 0,
            bucket,
            area: vec![0; n_buckets],
            cur: 0,
            cur_end: 0,
        }
    }

    #[inline]
    pub fn value(&self) -> u64 {
        self.value
    }

    /// The value changes to `v` at time `now`.
    #[inline]
    pub fn set(&mut self, now: Nanos, v: u64) {
        if v == self.value {
            return;
        }
        self.advance(now);
        self.value = v;
    }

    /// Accounts the current value up to `now`.
    pub fn advance(&mut self, now: Nanos) {
        if now <= self.since {
            return;
        }
        if self.value > 0 {
            let mut t = self.since;
            while t < now {
                if t >= self.cur_end {
                    self.cur = (t / self.bucket) as usize;
                    self.cur_end = (self.cur as u64 + 1).saturating_mul(self.bucket);
                }
                let b = self.cur;
                if b >= self.area.len() {
                    break;
                }
                let end = self.cur_end.min(now);
                self.area[b] += self.value as u128 * (end - t) as u128;
                t = end;
            }
        }
        self.since = now;
    }

    /// The time-mean of bucket `b`, whose length is `len` (the last bucket
    /// of a run may be shorter).
    pub fn mean(&self, b: usize, len: Nanos) -> f64 {
        if len == 0 {
            0.0
        } else {
            self.area[b] as f64 / len as f64
        }
    }

    /// The integral over the whole run, in value × seconds.
    pub fn total_secs(&self) -> f64 {
        self.area.iter().map(|&a| a as f64).sum::<f64>() / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrates_across_buckets() {
        let mut g = Gauge::new(10, 3);
        g.set(5, 2); // 2 from t=5
        g.set(25, 1); // 1 from t=25
        g.advance(30);
        assert_eq!(g.mean(0, 10), 1.0); // 2 × 5 / 10
        assert_eq!(g.mean(1, 10), 2.0);
        assert_eq!(g.mean(2, 10), 1.5); // (2×5 + 1×5) / 10
        assert_eq!(g.total_secs(), 45.0 / 1e9);
    }
}
