//! The pending-event queue: a binary heap ordered by (time, sequence number).
//!
//! The sequence number is assigned at scheduling time, so two events due at
//! the same nanosecond come out in the order they were scheduled (FIFO).
//! Every popped event is folded into a running digest of (time, sequence,
//! kind); two runs that processed the same events in the same order have the
//! same digest, which makes determinism cheap to test.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::time::Nanos;

/// What the digest needs to know of an event: a small number naming its kind.
pub trait EventKind: Copy {
    fn kind(&self) -> u8;
}

/// A pending event. The key packs (time, sequence) into one `u128`, time
/// in the high half, so ordering is a single integer comparison.
#[derive(Clone, Copy)]
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn time(&self) -> Nanos {
        (self.key >> 64) as Nanos
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: `BinaryHeap` is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A deterministic priority queue of events with a simulated clock.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Nanos,
    popped: u64,
    digest: u64,
}

impl<E: EventKind> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: EventKind> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            next_seq: 0,
            now: 0,
            popped: 0,
            digest: DIGEST_SEED,
        }
    }

    /// The time of the event being handled (or last handled).
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at absolute time `time`. Times in the past are
    /// clamped to now: the engine never moves backwards.
    #[inline]
    pub fn schedule_at(&mut self, time: Nanos, event: E) {
        let time = time.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            key: ((time as u128) << 64) | seq as u128,
            event,
        });
    }

    /// Schedules `event` after `delay` from now, saturating at `u64::MAX`.
    #[inline]
    pub fn schedule_in(&mut self, delay: Nanos, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Removes the earliest event if it is due strictly before `end`,
    /// advances the clock to its time and returns it.
    #[inline]
    pub fn pop_before(&mut self, end: Nanos) -> Option<E> {
        if self.heap.peek()?.time() >= end {
            return None;
        }
        let entry = self.heap.pop()?;
        let (time, seq, event) = (entry.time(), entry.key as u64, entry.event);
        self.now = time;
        self.popped += 1;
        self.digest = fold(self.digest, time);
        self.digest = fold(self.digest, (seq << 8) | event.kind() as u64);
        Some(event)
    }

    /// Moves the clock to `t` without handling an event (the end of a run).
    pub fn advance_to(&mut self, t: Nanos) {
        self.now = self.now.max(t);
    }

    /// Number of events handled so far.
    pub fn events(&self) -> u64 {
        self.popped
    }

    /// Number of events still pending.
    pub fn pending(&self) -> usize {
        self.heap.len()
    }

    /// A digest of every (time, sequence, kind) handled so far, in order.
    pub fn digest(&self) -> u64 {
        self.digest
    }
}

const DIGEST_SEED: u64 = 0xcbf2_9ce4_8422_2325;
/// The multiplier of rustc's FxHasher.
const DIGEST_K: u64 = 0x517c_c1b7_2722_0a95;

/// Folds one word into the digest, FxHash-style (rotate, xor, multiply):
/// one multiplication a word, where a byte-wise hash chains eight, and
/// this runs on every event. Fixed forever (the `event_digest` column);
/// good enough to tell two event histories apart, not a cryptographic
/// hash. The sequence number shares its word with the event kind
/// (`seq << 8 | kind`; 2^56 events would take years).
#[inline]
fn fold(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(DIGEST_K)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Ev(u8);
    impl EventKind for Ev {
        fn kind(&self) -> u8 {
            self.0
        }
    }

    #[test]
    fn pops_in_time_order_and_ties_fifo() {
        let mut q = EventQueue::new();
        q.schedule_at(30, Ev(1));
        q.schedule_at(10, Ev(2));
        q.schedule_at(10, Ev(3));
        q.schedule_at(20, Ev(4));
        q.schedule_at(10, Ev(5));
        let mut got = vec![];
        while let Some(e) = q.pop_before(u64::MAX) {
            got.push((q.now(), e.0));
        }
        assert_eq!(got, vec![(10, 2), (10, 3), (10, 5), (20, 4), (30, 1)]);
        assert_eq!(q.events(), 5);
    }

    #[test]
    fn stops_at_end_and_never_goes_back() {
        let mut q = EventQueue::new();
        q.schedule_at(5, Ev(0));
        q.schedule_at(15, Ev(0));
        assert!(q.pop_before(10).is_some());
        assert!(q.pop_before(10).is_none());
        assert_eq!(q.pending(), 1);
        q.schedule_at(1, Ev(9)); // in the past: clamped to now = 5
        assert_eq!(q.pop_before(10), Some(Ev(9)));
        assert_eq!(q.now(), 5);
    }

    #[test]
    fn digest_tells_histories_apart() {
        let run = |kinds: &[u8]| {
            let mut q = EventQueue::new();
            for (i, k) in kinds.iter().enumerate() {
                q.schedule_at(i as u64, Ev(*k));
            }
            while q.pop_before(u64::MAX).is_some() {}
            q.digest()
        };
        assert_eq!(run(&[1, 2, 3]), run(&[1, 2, 3]));
        assert_ne!(run(&[1, 2, 3]), run(&[1, 3, 2]));
    }
}
