//! The pending-event queue: a binary heap ordered by (time, sequence number).
//!
//! The sequence number is assigned at scheduling time, so two events due at
//! the same nanosecond come out in the order they were scheduled (FIFO).
//! Every scheduled event gets a [`TimerId`]; the model keeps it where it
//! keeps the state the event belongs to and cancels the event when that
//! state moves on (an attempt answered before its timeout). A cancelled
//! event is never handed out: it is skipped when it reaches the head.
//! Every delivered event is folded into a running digest of (time,
//! sequence, kind); two runs that delivered the same events in the same
//! order have the same digest, which makes determinism cheap to test.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::num::NonZeroU32;

use super::time::Nanos;

/// What the digest needs to know of an event: a small number naming its kind.
pub trait EventKind: Copy {
    fn kind(&self) -> u8;
}

/// A scheduled event, for cancelling it. Cheap to copy and store
/// (`Option<TimerId>` is 8 bytes). A handle stays valid until its event is
/// delivered or cancelled; after that, cancelling it does nothing (its slot
/// carries a new generation), so a model may cancel a timer that has just
/// fired without keeping track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerId {
    slot: u32,
    generation: NonZeroU32,
}

/// A pending event. The key packs (time, sequence) into one `u128`, time
/// in the high half, so ordering is a single integer comparison.
#[derive(Clone, Copy)]
struct Entry<E> {
    key: u128,
    slot: u32,
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

/// The state of one event's slot: its generation, and whether the event
/// in it is still to be delivered.
#[derive(Clone, Copy)]
struct Slot {
    generation: NonZeroU32,
    pending: bool,
}

/// A deterministic priority queue of events with a simulated clock.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Entries of `heap` cancelled but not yet skipped.
    cancelled: usize,
    next_seq: u64,
    now: Nanos,
    delivered: u64,
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
            slots: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            cancelled: 0,
            next_seq: 0,
            now: 0,
            delivered: 0,
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
    pub fn schedule_at(&mut self, time: Nanos, event: E) -> TimerId {
        let time = time.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Slot {
                    generation: NonZeroU32::MIN,
                    pending: false,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[slot as usize];
        s.pending = true;
        let id = TimerId {
            slot,
            generation: s.generation,
        };
        self.heap.push(Entry {
            key: ((time as u128) << 64) | seq as u128,
            slot,
            event,
        });
        id
    }

    /// Schedules `event` after `delay` from now, saturating at `u64::MAX`.
    #[inline]
    pub fn schedule_in(&mut self, delay: Nanos, event: E) -> TimerId {
        self.schedule_at(self.now.saturating_add(delay), event)
    }

    /// Cancels a pending event: it will not be delivered. Returns whether
    /// it was pending; cancelling an event already delivered or cancelled
    /// does nothing and returns false.
    #[inline]
    pub fn cancel(&mut self, id: TimerId) -> bool {
        let s = &mut self.slots[id.slot as usize];
        if s.generation != id.generation || !s.pending {
            return false;
        }
        s.pending = false;
        self.cancelled += 1;
        true
    }

    /// Gives a slot back: its handles go stale.
    #[inline]
    fn release(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        s.pending = false;
        s.generation = s.generation.checked_add(1).unwrap_or(NonZeroU32::MIN);
        self.free.push(slot);
    }

    /// Removes the earliest pending event if it is due strictly before
    /// `end`, advances the clock to its time and returns it.
    #[inline]
    pub fn pop_before(&mut self, end: Nanos) -> Option<E> {
        loop {
            if self.heap.peek()?.time() >= end {
                return None;
            }
            let entry = self.heap.pop()?;
            let live = self.slots[entry.slot as usize].pending;
            self.release(entry.slot);
            if !live {
                self.cancelled -= 1;
                continue;
            }
            let (time, seq, event) = (entry.time(), entry.key as u64, entry.event);
            self.now = time;
            self.delivered += 1;
            self.digest = fold(self.digest, time);
            self.digest = fold(self.digest, (seq << 8) | event.kind() as u64);
            return Some(event);
        }
    }

    /// Moves the clock to `t` without handling an event (the end of a run).
    pub fn advance_to(&mut self, t: Nanos) {
        self.now = self.now.max(t);
    }

    /// Number of events delivered so far (cancelled ones are not).
    pub fn events(&self) -> u64 {
        self.delivered
    }

    /// Number of events still to be delivered (cancelled ones are not).
    pub fn pending(&self) -> usize {
        self.heap.len() - self.cancelled
    }

    /// A digest of every (time, sequence, kind) delivered so far, in order.
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
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use super::*;
    use crate::engine::rng::{Purpose, Stream};

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
    fn an_event_due_exactly_at_the_end_stays_pending() {
        let mut q = EventQueue::new();
        q.schedule_at(10, Ev(1));
        q.schedule_at(9, Ev(2));
        assert_eq!(q.pop_before(10), Some(Ev(2)));
        assert_eq!(q.pop_before(10), None);
        assert_eq!((q.now(), q.pending(), q.events()), (9, 1, 1));
        assert_eq!(q.pop_before(11), Some(Ev(1)));
        // Nothing is ever due before time 0, and `u64::MAX` never comes.
        q.schedule_at(u64::MAX, Ev(3));
        assert_eq!(q.pop_before(u64::MAX), None);
        assert_eq!(q.pending(), 1);
    }

    #[test]
    fn cancelling_the_head_delivers_the_next_in_order() {
        let mut q = EventQueue::new();
        let head = q.schedule_at(10, Ev(1));
        q.schedule_at(10, Ev(2));
        q.schedule_at(20, Ev(3));
        assert!(q.cancel(head));
        assert_eq!(q.pending(), 2);
        assert_eq!(q.pop_before(u64::MAX), Some(Ev(2)));
        assert_eq!(q.pop_before(u64::MAX), Some(Ev(3)));
        assert_eq!(q.pop_before(u64::MAX), None);
        assert_eq!(q.events(), 2);
    }

    #[test]
    fn cancelling_a_delivered_or_cancelled_event_does_nothing() {
        let mut q = EventQueue::new();
        let a = q.schedule_at(1, Ev(1));
        assert_eq!(q.pop_before(u64::MAX), Some(Ev(1)));
        assert!(!q.cancel(a), "already delivered");
        // The slot is reused by the next event; the old handle must not
        // reach it.
        let b = q.schedule_at(2, Ev(2));
        assert!(!q.cancel(a));
        assert_eq!(q.pending(), 1);
        assert!(q.cancel(b));
        assert!(!q.cancel(b), "cancelled twice");
        assert_eq!(q.pending(), 0);
        assert_eq!(q.pop_before(u64::MAX), None);
        assert_eq!(q.events(), 1);
    }

    #[test]
    fn digest_and_count_cover_delivered_events_only() {
        let mut q = EventQueue::new();
        q.schedule_at(5, Ev(1)); // seq 0
        let gone = q.schedule_at(6, Ev(2)); // seq 1
        q.schedule_at(7, Ev(3)); // seq 2
        q.cancel(gone);
        while q.pop_before(u64::MAX).is_some() {}
        let mut want = DIGEST_SEED;
        for (time, seq, kind) in [(5u64, 0u64, 1u64), (7, 2, 3)] {
            want = fold(want, time);
            want = fold(want, (seq << 8) | kind);
        }
        assert_eq!(q.digest(), want);
        assert_eq!(q.events(), 2);
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

    /// The specification: std's `BinaryHeap` of (time, sequence), one
    /// sequence number per schedule call, cancelled events skipped.
    struct Reference {
        heap: BinaryHeap<Reverse<(Nanos, u64)>>,
        /// Per sequence number: still to be delivered.
        pending: Vec<bool>,
        live: usize,
        now: Nanos,
    }

    impl Reference {
        fn schedule_at(&mut self, time: Nanos) -> u64 {
            let seq = self.pending.len() as u64;
            self.pending.push(true);
            self.live += 1;
            self.heap.push(Reverse((time.max(self.now), seq)));
            seq
        }
        fn cancel(&mut self, seq: u64) -> bool {
            let was = std::mem::replace(&mut self.pending[seq as usize], false);
            self.live -= was as usize;
            was
        }
        fn pop_before(&mut self, end: Nanos) -> Option<(Nanos, u64)> {
            while let Some(&Reverse((time, seq))) = self.heap.peek() {
                if !self.pending[seq as usize] {
                    self.heap.pop();
                    continue;
                }
                if time >= end {
                    return None;
                }
                self.heap.pop();
                self.pending[seq as usize] = false;
                self.live -= 1;
                self.now = time;
                return Some((time, seq));
            }
            None
        }
        fn len(&self) -> usize {
            self.live
        }
    }

    /// Random schedules (ties, fixed delays, far-future timeouts, times in
    /// the past), random cancellations (of pending, delivered and already
    /// cancelled events) and random horizons: the queue delivers exactly
    /// the reference's events, in the reference's order, at its times.
    fn matches_reference(seed: u64, steps: usize) {
        let mut rng = Stream::new(seed, Purpose::Jitter, 0);
        let mut pick = |n: u64| (rng.unit() * n as f64) as u64;
        let mut q: EventQueue<(u64, u8)> = EventQueue::new();
        let mut r = Reference {
            heap: BinaryHeap::new(),
            pending: Vec::new(),
            live: 0,
            now: 0,
        };
        let mut ids: Vec<TimerId> = Vec::new();
        let mut digest = DIGEST_SEED;
        let check_pop = |q: &mut EventQueue<(u64, u8)>, r: &mut Reference, end, d: &mut u64| {
            let got = q.pop_before(end).map(|(seq, _)| (q.now(), seq));
            let want = r.pop_before(end);
            assert_eq!(got, want, "seed {seed}");
            if let Some((t, seq)) = want {
                *d = fold(fold(*d, t), (seq << 8) | (seq % 7));
            }
            assert_eq!(q.now(), r.now);
        };
        for _ in 0..steps {
            match pick(100) {
                0..=49 => {
                    let now = r.now;
                    let time = match pick(6) {
                        0 => now,
                        1 => now + [100, 250, 30_000][pick(3) as usize],
                        2 => now.saturating_sub(pick(50)),
                        3 => now + 1_000_000 + pick(1_000),
                        _ => now + pick(2_000),
                    };
                    let seq = r.schedule_at(time);
                    ids.push(q.schedule_at(time, (seq, (seq % 7) as u8)));
                }
                50..=74 if !ids.is_empty() => {
                    // Mostly recent handles, sometimes any handle at all.
                    let n = ids.len() as u64;
                    let i = if pick(4) == 0 {
                        pick(n)
                    } else {
                        n - 1 - pick(n.min(64))
                    };
                    assert_eq!(q.cancel(ids[i as usize]), r.cancel(i), "seed {seed}");
                }
                _ => {
                    let end = r.now + pick(600);
                    check_pop(&mut q, &mut r, end, &mut digest);
                }
            }
            assert_eq!(q.pending(), r.len(), "seed {seed}");
        }
        while r.len() > 0 && r.heap.peek().is_some_and(|e| e.0.0 < u64::MAX) {
            check_pop(&mut q, &mut r, u64::MAX, &mut digest);
        }
        assert_eq!(q.pop_before(u64::MAX), None);
        assert_eq!(q.digest(), digest, "seed {seed}");
    }

    impl EventKind for (u64, u8) {
        fn kind(&self) -> u8 {
            self.1
        }
    }

    #[test]
    fn delivers_exactly_the_reference_order_under_cancellation() {
        for seed in 0..40 {
            matches_reference(seed, 20_000);
        }
    }
}
