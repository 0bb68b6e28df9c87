//! A bulkhead: at most `max_concurrent` outgoing requests of a layer
//! instance at once; others wait in a FIFO of at most `max_queue` (when
//! `wait`), or are refused at once (reason `bulkhead_full`). Polly's
//! bulkhead/concurrency limiter and the playbook's "bulkheads and
//! per-dependency concurrency limits" (docs/sources/retry-backoff-patterns.md,
//! "Layering And Budgets").

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkheadConfig {
    pub max_concurrent: u32,
    pub max_queue: u32,
    /// Wait for a slot (bounded by `max_queue`) instead of refusing.
    pub wait: bool,
}

/// The answer to "may this request go now?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// A slot is taken; release it when the request ends.
    Now,
    /// Queued; `release` will hand the slot over later.
    Queued,
    Refused,
}

/// A waiter: an opaque pair (the simulation's call id and epoch).
pub type Waiter = (u32, u32);

#[derive(Clone, Debug)]
pub struct Bulkhead {
    cfg: BulkheadConfig,
    in_use: u32,
    waiting: VecDeque<Waiter>,
}

impl Bulkhead {
    pub fn new(cfg: BulkheadConfig) -> Self {
        Bulkhead {
            cfg,
            in_use: 0,
            waiting: VecDeque::new(),
        }
    }

    pub fn acquire(&mut self, who: Waiter) -> Acquire {
        if self.in_use < self.cfg.max_concurrent {
            self.in_use += 1;
            Acquire::Now
        } else if self.cfg.wait && (self.waiting.len() as u64) < self.cfg.max_queue as u64 {
            self.waiting.push_back(who);
            Acquire::Queued
        } else {
            Acquire::Refused
        }
    }

    /// A request ended: its slot goes to the next waiter `is_live` accepts
    /// (stale waiters, whose call moved on, are dropped), or back to the pool.
    pub fn release(&mut self, mut is_live: impl FnMut(Waiter) -> bool) -> Option<Waiter> {
        while let Some(w) = self.waiting.pop_front() {
            if is_live(w) {
                return Some(w); // the slot passes to it: in_use unchanged
            }
        }
        self.in_use = self.in_use.saturating_sub(1);
        None
    }

    pub fn in_use(&self) -> u32 {
        self.in_use
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_queues_and_hands_over() {
        let mut b = Bulkhead::new(BulkheadConfig {
            max_concurrent: 2,
            max_queue: 1,
            wait: true,
        });
        assert_eq!(b.acquire((1, 0)), Acquire::Now);
        assert_eq!(b.acquire((2, 0)), Acquire::Now);
        assert_eq!(b.acquire((3, 0)), Acquire::Queued);
        assert_eq!(b.acquire((4, 0)), Acquire::Refused);
        assert_eq!(b.release(|_| true), Some((3, 0)));
        assert_eq!(b.in_use(), 2);
        assert_eq!(b.release(|_| true), None);
        assert_eq!(b.in_use(), 1);
    }

    #[test]
    fn stale_waiters_are_skipped_and_reject_mode_never_queues() {
        let mut b = Bulkhead::new(BulkheadConfig {
            max_concurrent: 1,
            max_queue: 5,
            wait: true,
        });
        b.acquire((1, 0));
        b.acquire((2, 0));
        b.acquire((3, 0));
        assert_eq!(b.release(|w| w.0 != 2), Some((3, 0)));
        let mut r = Bulkhead::new(BulkheadConfig {
            max_concurrent: 1,
            max_queue: 5,
            wait: false,
        });
        assert_eq!(r.acquire((1, 0)), Acquire::Now);
        assert_eq!(r.acquire((2, 0)), Acquire::Refused);
    }
}
