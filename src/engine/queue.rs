//! The pending-event queue: events come out in (time, sequence number)
//! order, and any event can be cancelled in O(1) without holding memory.
//!
//! The sequence number is assigned at scheduling time, one per schedule
//! call, so two events due at the same nanosecond come out in the order
//! they were scheduled (FIFO). Every scheduled event gets a [`TimerId`]; the
//! model keeps it where it keeps the state the event belongs to and
//! cancels the event when that state moves on (an attempt answered before
//! its timeout). A cancelled event is never delivered.
//!
//! Two structures hold the pending events:
//!
//! - **Lanes**: a timer set a fixed delay after now (a layer's per-attempt
//!   timeout, a hedging delay) goes into that delay's lane, registered with
//!   [`EventQueue::add_lane`]. Now never moves back, so a lane is sorted by
//!   (time, sequence) by construction: appending is O(1), and a lane is a
//!   doubly linked list through the slots, so cancelling unlinks the event
//!   and frees its slot at once, O(1). Most timers are cancelled (the
//!   attempt answers first); they never touch the heap.
//! - **The heap**: everything else (arrivals, service ends, jittered
//!   backoffs), a binary heap of (time, sequence). A cancelled heap event
//!   frees its slot at once and leaves a dead entry that is dropped when it
//!   reaches the top, or when dead entries outnumber live ones (plus a
//!   small constant) and the heap is rebuilt without them: O(1) amortized,
//!   and never more dead entries than live ones.
//!
//! The next event is the least of the heap's top and the lanes' heads.
//! Pending memory is therefore bounded by the events still to be delivered,
//! not by the events ever scheduled.
//!
//! Every delivered event is folded into a running digest of (time,
//! sequence, kind); two runs that delivered the same events in the same
//! order have the same digest, which makes determinism cheap to test.

use std::num::NonZeroU32;

use super::heap::{Keyed, MinHeap};
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

/// (time, sequence) in one `u128`, time in the high half, so ordering is
/// a single integer comparison.
type Key = u128;

fn key(time: Nanos, seq: u64) -> Key {
    ((time as u128) << 64) | seq as u128
}

fn time_of(key: Key) -> Nanos {
    (key >> 64) as Nanos
}

/// A heap entry. It is live while its slot still holds its sequence
/// number (a cancelled event's slot is freed, and reused with another).
#[derive(Clone, Copy)]
struct Entry<E> {
    key: Key,
    slot: u32,
    event: E,
}

impl<E: Copy> Keyed for Entry<E> {
    #[inline(always)]
    fn key(&self) -> u128 {
        self.key
    }
}

/// No slot, no lane.
const NIL: u32 = u32::MAX;

/// One pending event's slot. Slots are reused through a free list, so
/// there are never more than the most events pending at once.
#[derive(Clone, Copy)]
struct Slot {
    /// The sequence number of the pending event here; `None` when free.
    seq: Option<u64>,
    generation: NonZeroU32,
    /// The lane the event waits in, or `NIL` for the heap.
    lane: u32,
}

/// A lane event's place in its list, and the event itself (heap events
/// carry theirs in the heap entry). Parallel to `slots`.
#[derive(Clone, Copy)]
struct Link<E> {
    time: Nanos,
    prev: u32,
    next: u32,
    event: E,
}

/// A FIFO of the events set `delay` after the time they were scheduled.
#[derive(Clone, Copy)]
struct Lane {
    delay: Nanos,
    head: u32,
    tail: u32,
    /// The head's key (`Key::MAX` when empty), so finding the next event
    /// does not touch the slots.
    head_key: Key,
}

/// Lanes beyond this many are not created: their delays go to the heap
/// (still exact, only slower), and finding a lane stays a short scan.
pub const MAX_LANES: usize = 16;

/// Dead heap entries tolerated beyond the live ones before a rebuild.
const SLACK: usize = 64;

/// A deterministic priority queue of events with a simulated clock.
pub struct EventQueue<E> {
    heap: MinHeap<Entry<E>>,
    /// Entries of `heap` whose event was cancelled.
    dead: usize,
    slots: Vec<Slot>,
    links: Vec<Link<E>>,
    free: Vec<u32>,
    lanes: Vec<Lane>,
    /// Events still to be delivered.
    live: usize,
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
            heap: MinHeap::with_capacity(256),
            dead: 0,
            slots: Vec::with_capacity(256),
            links: Vec::with_capacity(256),
            free: Vec::with_capacity(256),
            lanes: Vec::new(),
            live: 0,
            next_seq: 0,
            now: 0,
            delivered: 0,
            digest: DIGEST_SEED,
        }
    }

    /// Declares that timers are often set exactly `delay` after now (a
    /// timeout, a hedging delay): they get a lane of their own, where
    /// scheduling and cancelling are O(1). Only a matter of speed: the
    /// order of events is the same with or without lanes. A delay already
    /// registered, or one beyond `MAX_LANES`, is ignored.
    pub fn add_lane(&mut self, delay: Nanos) {
        if self.lanes.len() < MAX_LANES && self.lane_of(delay).is_none() {
            self.lanes.push(Lane {
                delay,
                head: NIL,
                tail: NIL,
                head_key: Key::MAX,
            });
        }
    }

    #[inline]
    fn lane_of(&self, delay: Nanos) -> Option<u32> {
        self.lanes
            .iter()
            .position(|l| l.delay == delay)
            .map(|i| i as u32)
    }

    /// The time of the event being handled (or last handled).
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at absolute time `time`. Times in the past are
    /// clamped to now: the engine never moves backwards.
    #[inline(always)]
    pub fn schedule_at(&mut self, time: Nanos, event: E) -> TimerId {
        let time = time.max(self.now);
        if !self.lanes.is_empty()
            && let Some(lane) = self.lane_of(time - self.now)
        {
            return self.schedule_in_lane(lane, time, event);
        }
        let (slot, seq, id) = self.take_slot(NIL, time, event);
        self.heap.push(Entry {
            key: key(time, seq),
            slot,
            event,
        });
        id
    }

    #[inline(never)]
    fn schedule_in_lane(&mut self, lane: u32, time: Nanos, event: E) -> TimerId {
        let (slot, seq, id) = self.take_slot(lane, time, event);
        self.links[slot as usize] = Link {
            time,
            prev: NIL,
            next: NIL,
            event,
        };
        self.append(lane, slot, key(time, seq));
        id
    }

    /// The next sequence number and a slot for an event in `lane`.
    #[inline(always)]
    fn take_slot(&mut self, lane: u32, time: Nanos, event: E) -> (u32, u64, TimerId) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.live += 1;
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => self.new_slot(time, event),
        };
        let s = &mut self.slots[slot as usize];
        s.seq = Some(seq);
        s.lane = lane;
        let id = TimerId {
            slot,
            generation: s.generation,
        };
        (slot, seq, id)
    }

    #[cold]
    #[inline(never)]
    fn new_slot(&mut self, time: Nanos, event: E) -> u32 {
        self.slots.push(Slot {
            seq: None,
            generation: NonZeroU32::MIN,
            lane: NIL,
        });
        self.links.push(Link {
            time,
            prev: NIL,
            next: NIL,
            event,
        });
        (self.slots.len() - 1) as u32
    }

    /// Schedules `event` after `delay` from now, saturating at `u64::MAX`.
    #[inline]
    pub fn schedule_in(&mut self, delay: Nanos, event: E) -> TimerId {
        self.schedule_at(self.now.saturating_add(delay), event)
    }

    /// Appends `slot` (its key is `k`) at the tail of `lane`.
    #[inline]
    fn append(&mut self, lane: u32, slot: u32, k: Key) {
        let l = &mut self.lanes[lane as usize];
        let tail = l.tail;
        l.tail = slot;
        if tail == NIL {
            l.head = slot;
            l.head_key = k;
        } else {
            self.links[slot as usize].prev = tail;
            self.links[tail as usize].next = slot;
        }
    }

    /// Takes `slot` out of its lane.
    #[inline]
    fn unlink(&mut self, lane: u32, slot: u32) {
        let Link { prev, next, .. } = self.links[slot as usize];
        if prev == NIL {
            let head_key = if next == NIL {
                Key::MAX
            } else {
                key(self.links[next as usize].time, self.seq_of(next))
            };
            let l = &mut self.lanes[lane as usize];
            l.head = next;
            l.head_key = head_key;
        } else {
            self.links[prev as usize].next = next;
        }
        if next == NIL {
            self.lanes[lane as usize].tail = prev;
        } else {
            self.links[next as usize].prev = prev;
        }
    }

    #[inline]
    fn seq_of(&self, slot: u32) -> u64 {
        self.slots[slot as usize].seq.unwrap_or(u64::MAX)
    }

    /// Frees a slot: its handles go stale, a heap entry still pointing at
    /// it is dead.
    #[inline(always)]
    fn release(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        s.seq = None;
        s.generation = s.generation.checked_add(1).unwrap_or(NonZeroU32::MIN);
        self.free.push(slot);
        self.live -= 1;
    }

    /// Cancels a pending event: it will not be delivered, and it holds no
    /// slot from now on. Returns whether it was pending; cancelling an
    /// event already delivered or cancelled does nothing and returns false.
    #[inline]
    pub fn cancel(&mut self, id: TimerId) -> bool {
        let s = self.slots[id.slot as usize];
        if s.generation != id.generation || s.seq.is_none() {
            return false;
        }
        if s.lane == NIL {
            self.dead += 1;
        } else {
            self.unlink(s.lane, id.slot);
        }
        self.release(id.slot);
        if self.dead > self.heap.len() - self.dead + SLACK {
            self.drop_dead();
        }
        true
    }

    /// Rebuilds the heap without its dead entries: O(heap), once per at
    /// least as many cancellations as live entries.
    #[cold]
    fn drop_dead(&mut self) {
        let slots = &self.slots;
        self.heap
            .retain(|e| slots[e.slot as usize].seq == Some(e.key as u64));
        self.dead = 0;
    }

    /// The heap's earliest live entry's key (`Key::MAX` when none).
    #[inline(always)]
    fn heap_head(&mut self) -> Key {
        match self.heap.peek() {
            None => Key::MAX,
            Some(top) if self.dead == 0 || self.is_live(top) => top.key,
            Some(_) => self.drop_dead_tops(),
        }
    }

    #[inline]
    fn is_live(&self, e: &Entry<E>) -> bool {
        self.slots[e.slot as usize].seq == Some(e.key as u64)
    }

    /// Drops the dead entries on top of the heap; returns `heap_head`.
    #[cold]
    #[inline(never)]
    fn drop_dead_tops(&mut self) -> Key {
        while let Some(top) = self.heap.peek() {
            if self.is_live(top) {
                return top.key;
            }
            self.heap.pop();
            self.dead -= 1;
        }
        Key::MAX
    }

    /// The earliest lane head: (its key, its lane).
    #[inline]
    fn lanes_head(&self) -> (Key, u32) {
        let mut best = (Key::MAX, NIL);
        for (i, l) in self.lanes.iter().enumerate() {
            if l.head_key < best.0 {
                best = (l.head_key, i as u32);
            }
        }
        best
    }

    /// Removes the earliest pending event if it is due strictly before
    /// `end`, advances the clock to its time and returns it.
    #[inline(always)]
    pub fn pop_before(&mut self, end: Nanos) -> Option<E> {
        let next = self.heap_head();
        if !self.lanes.is_empty() {
            let (lane_key, lane) = self.lanes_head();
            if lane_key < next {
                return self.pop_lane(lane, lane_key, end);
            }
        }
        // `Key::MAX` (nothing pending) is never due either.
        if time_of(next) >= end {
            return None;
        }
        let entry = self.heap.pop()?;
        self.release(entry.slot);
        Some(self.deliver(next, entry.event))
    }

    /// `pop_before` when the earliest event is the head of `lane`.
    #[inline(never)]
    fn pop_lane(&mut self, lane: u32, k: Key, end: Nanos) -> Option<E> {
        if time_of(k) >= end {
            return None;
        }
        let slot = self.lanes[lane as usize].head;
        self.unlink(lane, slot);
        self.release(slot);
        Some(self.deliver(k, self.links[slot as usize].event))
    }

    /// Moves the clock to the event's time, counts it and folds it into
    /// the digest.
    #[inline(always)]
    fn deliver(&mut self, k: Key, event: E) -> E {
        let (time, seq) = (time_of(k), k as u64);
        self.now = time;
        self.delivered += 1;
        self.digest = fold(self.digest, time);
        self.digest = fold(self.digest, (seq << 8) | event.kind() as u64);
        event
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
        self.live
    }

    /// Entries the queue holds: the pending events and the cancelled heap
    /// entries not dropped yet (never more than `pending() + 64`).
    pub fn held(&self) -> usize {
        self.heap.len() + (self.live - (self.heap.len() - self.dead))
    }

    /// Slots ever allocated: the most events pending at once.
    pub fn slots(&self) -> usize {
        self.slots.len()
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
    fn matches_reference(seed: u64, steps: usize, lanes: &[Nanos]) {
        let mut rng = Stream::new(seed, Purpose::Jitter, 0);
        let mut pick = |n: u64| (rng.unit() * n as f64) as u64;
        let mut q: EventQueue<(u64, u8)> = EventQueue::new();
        for &delay in lanes {
            q.add_lane(delay);
        }
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
            // Heap only; lanes for the fixed delays (one never used, and
            // 0: ties with now); every delay of a small range a lane.
            matches_reference(seed, 20_000, &[]);
            matches_reference(seed, 20_000, &[100, 250, 30_000, 7, 0]);
            matches_reference(seed, 5_000, &(0..16).map(|d| d * 3).collect::<Vec<_>>());
        }
    }

    #[test]
    fn lanes_and_heap_break_ties_by_sequence() {
        let mut q = EventQueue::new();
        q.add_lane(10);
        q.schedule_in(10, Ev(1)); // lane, t = 10, seq 0
        q.schedule_at(10, Ev(2)); // lane too (10 after now)
        q.schedule_in(5, Ev(3)); // heap, t = 5
        q.schedule_at(10, Ev(4)); // lane
        assert_eq!(q.pop_before(u64::MAX), Some(Ev(3)));
        q.schedule_in(5, Ev(5)); // heap, t = 10, after the lane's three
        q.schedule_in(10, Ev(6)); // lane, t = 15
        let mut got = vec![];
        while let Some(e) = q.pop_before(u64::MAX) {
            got.push((q.now(), e.0));
        }
        assert_eq!(got, vec![(10, 1), (10, 2), (10, 4), (10, 5), (15, 6)]);
    }

    #[test]
    fn cancelling_inside_a_lane_keeps_its_order() {
        let mut q = EventQueue::new();
        q.add_lane(100);
        let ids: Vec<TimerId> = (0..5)
            .map(|i| {
                q.advance_to(i);
                q.schedule_in(100, Ev(i as u8))
            })
            .collect();
        assert!(q.cancel(ids[0])); // the head
        assert!(q.cancel(ids[2])); // the middle
        assert!(q.cancel(ids[4])); // the tail
        q.advance_to(4);
        q.schedule_in(100, Ev(9)); // appended after a cancelled tail
        let mut got = vec![];
        while let Some(e) = q.pop_before(u64::MAX) {
            got.push((q.now(), e.0));
        }
        assert_eq!(got, vec![(101, 1), (103, 3), (104, 9)]);
    }

    /// A timer at a registered delay waits in its lane and never touches
    /// the heap; any other delay goes to the heap. At most `MAX_LANES`
    /// lanes exist, and registering a delay twice makes no second lane.
    #[test]
    fn timers_at_a_lanes_delay_never_touch_the_heap() {
        let mut q = EventQueue::new();
        for d in 0..=MAX_LANES as u64 {
            q.add_lane(100 + d); // the last one is past MAX_LANES
        }
        q.add_lane(100);
        assert_eq!(q.lanes.len(), MAX_LANES);
        q.advance_to(1_000);
        for d in 0..MAX_LANES as u64 {
            q.schedule_in(100 + d, Ev(1));
            q.schedule_at(1_000 + 100 + d, Ev(1));
        }
        assert_eq!(q.heap.len(), 0, "every lane delay waits in its lane");
        q.schedule_in(100 + MAX_LANES as u64, Ev(2)); // the unregistered delay
        q.schedule_in(99, Ev(2));
        q.schedule_at(1_100, Ev(2)); // a lane's delay, but given as a time: still its lane
        assert_eq!(q.heap.len(), 2);
        assert_eq!(q.pending(), 2 * MAX_LANES + 3);
        let mut last = 0;
        while q.pop_before(u64::MAX).is_some() {
            assert!(q.now() >= last);
            last = q.now();
        }
        assert_eq!(q.events(), 2 * MAX_LANES as u64 + 3);
    }

    /// The heap is rebuilt without its cancelled entries exactly when they
    /// outnumber the live ones by more than `SLACK`, not one earlier.
    #[test]
    fn the_heap_drops_cancelled_entries_past_the_slack() {
        let mut q = EventQueue::new();
        q.add_lane(1_000);
        let ids: Vec<TimerId> = (0..100).map(|t| q.schedule_at(t, Ev(1))).collect();
        for _ in 0..5 {
            q.schedule_in(1_000, Ev(2)); // lane events: held, never in the heap
        }
        assert_eq!((q.slots(), q.pending(), q.held()), (105, 105, 105));
        // Cancelled c of 100: rebuilt once c > (100 - c) + 64, at c = 83.
        for (c, id) in ids.iter().enumerate().take(82) {
            assert!(q.cancel(*id));
            assert_eq!(q.heap.len(), 100, "after {} cancellations", c + 1);
        }
        // The 82 cancelled heap entries are still held; their slots are free.
        assert_eq!((q.slots(), q.pending(), q.held()), (105, 23, 105));
        assert!(q.cancel(ids[82]));
        assert_eq!(q.heap.len(), 17);
        assert_eq!((q.dead, q.pending(), q.held(), q.slots()), (0, 22, 22, 105));
    }

    /// Long timeouts that are all cancelled, interleaved with short-lived
    /// events: what the queue holds follows what is pending, not what was
    /// ever scheduled, with lanes and on the heap alone.
    #[test]
    fn cancelled_timers_hold_no_memory() {
        for lanes in [false, true] {
            let mut q = EventQueue::new();
            if lanes {
                q.add_lane(30_000_000_000);
            }
            let (mut most_held, mut most_pending) = (0, 0);
            let mut timeout = None;
            for i in 0..1_000_000u64 {
                // An attempt every 100 ns: it answers before the next, so
                // its 30 s timeout is cancelled; a third of the backoffs
                // (1 to 2 µs) are cancelled too.
                while q.pop_before(i * 100).is_some() {}
                q.advance_to(i * 100);
                if let Some(t) = timeout {
                    assert!(q.cancel(t));
                }
                timeout = Some(q.schedule_in(30_000_000_000, Ev(1)));
                let backoff = q.schedule_in(1_000 + i % 977, Ev(2));
                q.schedule_in(10 + i % 13, Ev(3));
                if i % 3 == 0 {
                    q.cancel(backoff);
                }
                most_held = most_held.max(q.held());
                most_pending = most_pending.max(q.pending());
            }
            // About 14 backoffs, one short event and one timeout pending.
            assert!(most_pending < 20, "pending {most_pending}");
            assert!(most_held <= 2 * most_pending + SLACK, "held {most_held}");
            assert!(q.slots() <= most_pending, "slots {}", q.slots());
            // Every event scheduled is delivered, cancelled, or pending.
            let cancelled = 999_999 + 333_334;
            assert_eq!(q.events() + q.pending() as u64, 3_000_000 - cancelled);
            while q.pop_before(u64::MAX).is_some() {}
            assert_eq!(q.events(), 3_000_000 - cancelled);
            assert_eq!((q.pending(), q.held()), (0, 0));
        }
    }
}
