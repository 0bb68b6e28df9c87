//! One state per layer instance (or one for the whole layer), made the
//! first time an instance is used, and the mean level over every instance
//! for the time series.
//!
//! A layer of a million instances touches few of them in a short run, so
//! the states are made lazily: an instance gets its own state the first
//! time it is used, a copy of `fresh`, the state every instance starts in.
//! `fresh` receives every call an untouched state would (its level read
//! at every sample), so the copy is exactly the state an instance made at
//! the start and left alone would hold: the results are those of making
//! every state up front, at a cost that follows the instances used.
//!
//! The mean level is taken once per bucket. A layer of up to
//! [`SUMMED_IN_ORDER`] instances reads every state and sums in instance
//! order. A larger one keeps the sum as it goes: each state's last level,
//! rounded to a multiple of 2⁻⁶⁴, is held in an exact 128-bit fixed-point
//! total, and a sample reads again only the states touched since the last
//! one and those whose level changed with time alone (`model::level`), so
//! a sample costs what changed, not the instances in use. The exact sum
//! does not depend on the order of its terms; it differs from the sum in
//! instance order only in the rounding of the last bits (about 10⁻¹⁵ of the
//! mean), far below the six decimals the tables print.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZeroU32;

use crate::engine::Nanos;

use super::level::Holds;

/// Layers of at most this many instances read every state at every
/// sample and sum in instance order.
pub const SUMMED_IN_ORDER: usize = 4096;

/// A state whose level is sampled for the time series.
pub trait Level {
    /// The level now; reading it may move the state (see `Holds`).
    fn level(&mut self, now: Nanos) -> f64;
    /// How long the level just read holds.
    fn holds(&self) -> Holds;
}

/// 2⁶⁴: a level is held as a whole number of 2⁻⁶⁴.
const SCALE: f64 = 18_446_744_073_709_551_616.0;

/// Levels below this (in magnitude) are held exactly enough: a million of
/// them (2²⁰ × 2⁴² × 2⁶⁴ = 2¹²⁶) cannot overflow the 128-bit total.
const LARGEST: f64 = 4_398_046_511_104.0; // 2^42

/// `v` as a whole number of 2⁻⁶⁴, or `None` when it is too large or not
/// a number (the layer then goes back to reading every state).
fn fixed(v: f64) -> Option<i128> {
    (v.abs() < LARGEST).then(|| (v * SCALE).round() as i128)
}

/// The running sum of a large layer's levels.
struct Running {
    /// Each state's level as last read, in 2⁻⁶⁴.
    level: Vec<i128>,
    /// Each state's hold as last read.
    holds: Vec<Holds>,
    /// Each state's entry in `due`, if it has one: a state has at most
    /// one, so `due` holds no more entries than there are states.
    queued: Vec<Option<Nanos>>,
    /// Whether the state was touched since the last sample.
    touched: Vec<bool>,
    /// The states touched since the last sample, each once.
    touched_list: Vec<u32>,
    /// States whose level may change with time alone: (when, state). An
    /// entry may come due before the state's hold ends (the state was
    /// read since, and its hold moved later): it is then put back.
    due: BinaryHeap<Reverse<(Nanos, u32)>>,
    /// The sum of `level`.
    total: i128,
}

impl Running {
    fn new() -> Self {
        Running {
            level: Vec::new(),
            holds: Vec::new(),
            queued: Vec::new(),
            touched: Vec::new(),
            touched_list: Vec::new(),
            due: BinaryHeap::new(),
            total: 0,
        }
    }

    #[inline]
    fn touch(&mut self, index: usize) {
        if !self.touched[index] {
            self.touched[index] = true;
            self.touched_list.push(index as u32);
        }
    }

    fn add_state(&mut self) {
        self.level.push(0);
        self.holds.push(Holds::UntilTouched);
        self.queued.push(None);
        self.touched.push(false);
        self.touch(self.level.len() - 1);
    }

    /// Reads `state` again; `None` when its level cannot be held exactly.
    fn read<T: Level>(&mut self, index: usize, state: &mut T, now: Nanos) -> Option<()> {
        let level = fixed(state.level(now))?;
        self.total += level - self.level[index];
        self.level[index] = level;
        let holds = state.holds();
        self.holds[index] = holds;
        if let Holds::Until(t) = holds {
            // Never due again at the same sample (a hold that has already
            // ended is looked at next time).
            self.queue(index, t.max(now.saturating_add(1)));
        }
        Some(())
    }

    /// Makes sure `due` looks at the state by `t`.
    fn queue(&mut self, index: usize, t: Nanos) {
        if self.queued[index].is_none_or(|q| t < q) {
            self.due.push(Reverse((t, index as u32)));
            self.queued[index] = Some(t);
        }
    }

    /// Brings the total up to now: the touched states, and those whose
    /// level was due to change. `None` when a level cannot be held.
    fn update<T: Level>(&mut self, states: &mut [T], now: Nanos) -> Option<f64> {
        while let Some(index) = self.touched_list.pop() {
            let i = index as usize;
            self.touched[i] = false;
            self.read(i, &mut states[i], now)?;
        }
        while let Some(&Reverse((t, index))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            let i = index as usize;
            if self.queued[i] != Some(t) {
                continue; // an entry a sooner one replaced
            }
            self.queued[i] = None;
            match self.holds[i] {
                Holds::Until(until) if until <= now => self.read(i, &mut states[i], now)?,
                Holds::Until(until) => self.queue(i, until),
                Holds::UntilTouched | Holds::ReadAlways => {}
            }
        }
        Some(self.total as f64 / SCALE)
    }
}

/// Where each instance's states lie, for every kind of state a layer
/// keeps per instance (budget, throttle, breaker, bulkhead): a row per
/// instance and a column per kind, each cell the index of the state in its
/// kind's `Scoped` plus one, once made. An attempt asks several kinds about
/// the same instance; with their cells side by side one lookup (one cache
/// line) finds them all, where a table per kind cost a cache miss per kind
/// in a layer of a million instances. The same 4 bytes per instance and
/// kind as a table per kind.
pub struct Slots {
    /// Columns: the kinds kept per instance (shared kinds keep their one
    /// state's cell themselves).
    kinds: usize,
    instances: usize,
    table: Vec<Option<NonZeroU32>>,
}

impl Slots {
    /// A table for `instances` instances (at least one) and `kinds` kinds.
    pub fn new(instances: u32, kinds: usize) -> Self {
        let instances = instances.max(1) as usize;
        Slots {
            kinds,
            instances,
            table: vec![None; if kinds == 0 { 0 } else { instances * kinds }],
        }
    }

    /// The cells of `instance`, a column per kind.
    #[inline]
    pub fn row(&mut self, instance: u32) -> &mut [Option<NonZeroU32>] {
        let start = (instance as usize % self.instances) * self.kinds;
        &mut self.table[start..start + self.kinds]
    }
}

/// One kind of state, one per instance or one for all.
pub struct Scoped<T> {
    fresh: T,
    /// The number of states there may be: the instances, or 1 when shared.
    instances: usize,
    /// This kind's column in the layer's `Slots`; `None` when shared.
    column: Option<usize>,
    /// A shared kind's cell (its one state, once made).
    own: Option<NonZeroU32>,
    states: Vec<T>,
    /// The instances used, each with its state's index, in the order of
    /// their first use; sorted (into instance order) when the levels are
    /// next summed in order.
    used: Vec<(u32, u32)>,
    /// How many of `used` are in instance order.
    sorted: usize,
    /// Scratch space for the sum in order: a value per state.
    values: Vec<f64>,
    /// The running sum of a large layer whose levels can be held; `None`
    /// where every state is read at every sample.
    running: Option<Running>,
}

impl<T: Clone> Scoped<T> {
    /// `states` states (1 when `shared`), each made from `fresh`; their
    /// levels are never sampled. A kind kept per instance finds its states
    /// through `column` of the layer's `Slots` (ignored when shared).
    pub fn new(fresh: T, states: u32, shared: bool, column: usize) -> Self {
        Scoped {
            fresh,
            instances: if shared { 1 } else { states.max(1) as usize },
            column: (!shared).then_some(column),
            own: None,
            states: Vec::new(),
            used: Vec::new(),
            sorted: 0,
            values: Vec::new(),
            running: None,
        }
    }

    /// The state of `instance`, whose cells are `row` (its row of the
    /// layer's `Slots`).
    #[inline]
    pub fn get(&mut self, row: &mut [Option<NonZeroU32>], instance: u32) -> &mut T {
        let (cell, instance) = match self.column {
            Some(c) => (&mut row[c], instance as usize % self.instances),
            None => (&mut self.own, 0),
        };
        let index = match *cell {
            Some(slot) => slot.get() as usize - 1,
            None => {
                let index = self.states.len();
                // At most `instances` (a u32) states are ever made.
                *cell = NonZeroU32::new(index as u32 + 1);
                self.make(instance as u32);
                index
            }
        };
        if let Some(r) = self.running.as_mut() {
            r.touch(index);
        }
        &mut self.states[index]
    }

    #[cold]
    fn make(&mut self, instance: u32) {
        let index = self.states.len() as u32;
        self.states.push(self.fresh.clone());
        self.used.push((instance, index));
        if let Some(r) = self.running.as_mut() {
            r.add_state();
        }
    }
}

impl<T: Clone + Level> Scoped<T> {
    /// Like `new`, for states whose mean level is sampled: a layer of more
    /// than `SUMMED_IN_ORDER` instances keeps a running sum where the
    /// kind's levels allow it.
    pub fn sampled(fresh: T, states: u32, shared: bool, column: usize) -> Self {
        let mut s = Scoped::new(fresh, states, shared, column);
        if s.instances > SUMMED_IN_ORDER && s.fresh.holds() != Holds::ReadAlways {
            s.running = Some(Running::new());
        }
        s
    }

    /// The mean level over every instance's state now: the states in use,
    /// then the instances never used, which all hold `fresh`'s level, at
    /// once (count × level).
    pub fn mean_level(&mut self, now: Nanos) -> f64 {
        let running = (self.running.as_mut()).and_then(|r| r.update(&mut self.states, now));
        let mut sum = match running {
            Some(sum) => sum,
            None => {
                // No running sum, or a level too large to hold in one:
                // every state is read, from now on.
                self.running = None;
                self.sum_in_order(now)
            }
        };
        let unused = self.instances - self.used.len();
        if unused > 0 {
            sum += unused as f64 * self.fresh.level(now);
        }
        sum / self.instances as f64
    }

    /// The sum of the levels of the states in use, in instance order.
    fn sum_in_order(&mut self, now: Nanos) -> f64 {
        if self.sorted < self.used.len() {
            // A sorted run, then the instances used since: the stable
            // sort merges the two runs in linear time.
            self.used.sort();
            self.sorted = self.used.len();
        }
        // Each state's value in the order the states lie in memory, then
        // summed in instance order: the same sum, with the states read
        // one after the other.
        let values = &mut self.values;
        values.clear();
        values.extend(self.states.iter_mut().map(|t| t.level(now)));
        (self.used.iter())
            .map(|&(_, index)| values[index as usize])
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Purpose, Stream};

    /// A state that counts the reads of its level and the time of the
    /// last; its level is its `hits`, or `late` from `change` on.
    #[derive(Clone, Debug, PartialEq)]
    struct Probe {
        reads: u32,
        last: Nanos,
        hits: f64,
        /// The level changes with time alone at this time (to `late`).
        change: Option<(Nanos, f64)>,
        /// Reading it moves it (a refill).
        moves: bool,
    }

    impl Probe {
        fn new() -> Self {
            Probe {
                reads: 0,
                last: 0,
                hits: 0.0,
                change: None,
                moves: false,
            }
        }
    }

    /// A layer that keeps one kind of state: its slots and the states.
    struct One {
        slots: Slots,
        s: Scoped<Probe>,
    }

    impl One {
        fn sampled(fresh: Probe, n: u32, shared: bool) -> Self {
            One {
                slots: Slots::new(n, usize::from(!shared)),
                s: Scoped::sampled(fresh, n, shared, 0),
            }
        }

        fn at(&mut self, instance: u32) -> &mut Probe {
            self.s.get(self.slots.row(instance), instance)
        }
    }

    impl std::ops::Deref for One {
        type Target = Scoped<Probe>;
        fn deref(&self) -> &Scoped<Probe> {
            &self.s
        }
    }

    impl std::ops::DerefMut for One {
        fn deref_mut(&mut self) -> &mut Scoped<Probe> {
            &mut self.s
        }
    }

    impl Level for Probe {
        fn level(&mut self, now: Nanos) -> f64 {
            self.reads += 1;
            self.last = now;
            match self.change {
                Some((t, late)) if now >= t => late,
                _ => self.hits,
            }
        }

        fn holds(&self) -> Holds {
            match self.change {
                _ if self.moves => Holds::ReadAlways,
                Some((t, _)) if self.last < t => Holds::Until(t),
                _ => Holds::UntilTouched,
            }
        }
    }

    /// An instance first used late holds exactly what a state made at the
    /// start and read at every sample would hold; the mean counts the
    /// unused instances at the fresh level; a shared scope is one state.
    #[test]
    fn states_made_late_are_states_made_at_the_start() {
        let mut fresh = Probe::new();
        fresh.moves = true;
        let mut s = One::sampled(fresh, 1_000_000, false);
        assert!(
            s.running.is_none(),
            "a level read always is summed in order"
        );
        for t in 1..=3 {
            s.at(999_999).hits += 2.0;
            s.at(7).hits += 1.0;
            assert_eq!(s.mean_level(t), (3 * t) as f64 / 1e6);
        }
        assert_eq!(s.states.len(), 2, "only the instances used have a state");
        let late = s.at(1_000_000 + 42).clone(); // instance 42, first used now
        assert_eq!((late.reads, late.last, late.hits), (3, 3, 0.0));
        assert_eq!(s.at(7).reads, 3);
        assert_eq!(s.mean_level(4), 9.0 / 1e6);
        let instances: Vec<u32> = s.used.iter().map(|&(i, _)| i).collect();
        assert_eq!(instances, vec![7, 42, 999_999], "sorted for the sum");
        let mut shared = One::sampled(Probe::new(), 1_000, true);
        shared.at(5).hits += 1.0;
        shared.at(6).hits += 1.0;
        assert_eq!((shared.states.len(), shared.mean_level(1)), (1, 2.0));
        assert!(shared.running.is_none());
    }

    /// Kinds that share a layer's `Slots` each find their own state of an
    /// instance, whatever order their states were made in; a shared kind
    /// takes no column and has one state for every instance.
    #[test]
    fn kinds_side_by_side_each_find_their_own_state() {
        let mut slots = Slots::new(1_000, 2);
        let mut a = Scoped::new(Probe::new(), 1_000, false, 0);
        let mut shared = Scoped::new(Probe::new(), 1_000, true, 0);
        let mut b = Scoped::new(Probe::new(), 1_000, false, 1);
        for (i, hits) in [(5, 1.0), (9, 2.0), (700, 3.0)] {
            a.get(slots.row(i), i).hits = hits;
        }
        for (i, hits) in [(700, 30.0), (5, 10.0)] {
            b.get(slots.row(i), i).hits = hits;
        }
        shared.get(slots.row(5), 5).hits += 1.0;
        shared.get(slots.row(700), 700).hits += 1.0;
        let got = |s: &mut Scoped<Probe>, slots: &mut Slots, i: u32| s.get(slots.row(i), i).hits;
        assert_eq!(
            [5, 9, 700].map(|i| got(&mut a, &mut slots, i)),
            [1.0, 2.0, 3.0]
        );
        assert_eq!(
            [5, 9, 700].map(|i| got(&mut b, &mut slots, i)),
            [10.0, 0.0, 30.0]
        );
        assert_eq!(got(&mut shared, &mut slots, 9), 2.0);
        assert_eq!(
            (a.states.len(), b.states.len(), shared.states.len()),
            (3, 3, 1)
        );
        let five = slots.row(5).to_vec();
        assert_eq!(slots.row(1_005), five, "instances wrap");
    }

    /// A large layer reads only the states touched since the last sample
    /// and those whose level was due to change; its mean is exactly the
    /// in-order mean where the levels are whole (any order sums them
    /// exactly), at every sample of a long random history.
    #[test]
    fn a_running_sum_reads_what_changed_and_agrees_with_the_sum_in_order() {
        let n = 100_000;
        let mut running = One::sampled(Probe::new(), n, false);
        let mut in_order = One::sampled(Probe::new(), n, false);
        in_order.running = None;
        assert!(running.running.is_some());
        let mut rng = Stream::new(3, Purpose::Throttle, 0);
        for t in 1..=200u64 {
            for _ in 0..50 {
                let i = (rng.unit() * 300.0) as u32 * 331;
                let hits = (rng.unit() * 8.0).floor();
                let change = rng.chance(0.2).then(|| (t + 5, 100.0));
                for s in [&mut running, &mut in_order] {
                    let p = s.at(i);
                    p.hits = hits;
                    p.change = change;
                }
            }
            let a = running.mean_level(t);
            let b = in_order.mean_level(t);
            assert_eq!(a.to_bits(), b.to_bits(), "at sample {t}");
        }
        let reads = |s: &One| s.states.iter().map(|p| u64::from(p.reads)).sum::<u64>();
        let (r, o) = (reads(&running), reads(&in_order));
        assert!(
            r * 5 < o,
            "the running sum read {r} times, the sum in order {o}"
        );
        // A change due with no touch is read at its time, and only then.
        let mut s = One::sampled(Probe::new(), n, false);
        s.at(9).change = Some((50, 4.0));
        assert_eq!(s.mean_level(10), 0.0);
        assert_eq!(s.mean_level(49), 0.0);
        assert_eq!(s.at(9).reads, 1, "not read again before it was due");
        assert_eq!(s.mean_level(50), 4.0 / n as f64);
        assert_eq!(s.at(9).reads, 2);
    }

    /// A state touched at every sample, whose level holds a long time,
    /// keeps one entry waiting in `due`, not one per reading; an entry
    /// that comes due before the state's hold ends is put back, and the
    /// change is read when it comes.
    #[test]
    fn a_state_waits_in_due_once() {
        let mut s = One::sampled(Probe::new(), 10_000, false);
        for t in 1..=500u64 {
            for i in 0..20 {
                let p = s.at(i);
                p.hits = 1.0;
                p.change = Some((t + 1_000, 3.0));
            }
            assert_eq!(s.mean_level(t), 20.0 / 1e4);
            let r = s.running.as_ref().unwrap();
            assert!(r.due.len() <= 20, "{} entries waiting at {t}", r.due.len());
        }
        // Left alone, each state's change is read when it comes.
        assert_eq!(s.mean_level(1_499), 20.0 / 1e4);
        assert_eq!(s.mean_level(1_500), 60.0 / 1e4);
    }

    /// A state whose hold moves sooner (read again with an earlier
    /// change than the one it waited for) is looked at by the sooner time;
    /// one whose hold moves later is not read when its old entry comes
    /// due, only put back, and read when the new hold ends.
    #[test]
    fn a_hold_that_moves_is_looked_at_when_it_ends() {
        let mut s = One::sampled(Probe::new(), 10_000, false);
        s.at(3).change = Some((1_000, 5.0));
        assert_eq!(s.mean_level(1), 0.0);
        s.at(3).change = Some((10, 7.0));
        assert_eq!(s.mean_level(2), 0.0);
        assert_eq!(s.mean_level(9), 0.0);
        assert_eq!(s.mean_level(10), 7.0 / 1e4, "the sooner change is read");

        let mut s = One::sampled(Probe::new(), 10_000, false);
        s.at(4).change = Some((1_000, 5.0));
        assert_eq!(s.mean_level(1), 0.0);
        s.at(4).change = Some((2_000, 6.0));
        assert_eq!(s.mean_level(2), 0.0);
        // Looked at without `at`, which would touch it.
        assert_eq!(s.states.len(), 1);
        let reads = s.states[0].reads;
        assert_eq!(s.mean_level(1_000), 0.0);
        assert_eq!(s.states[0].reads, reads, "not read before its hold ends");
        assert_eq!(s.mean_level(2_000), 6.0 / 1e4);
        assert_eq!(s.states[0].reads, reads + 1);
    }

    /// The instances never used count at the fresh state's level, also
    /// when it is not zero (a full token bucket); a layer of exactly
    /// `SUMMED_IN_ORDER` instances sums in order, one more keeps a running
    /// sum, and both give the same mean.
    #[test]
    fn unused_instances_count_at_the_fresh_level() {
        for n in [SUMMED_IN_ORDER as u32, SUMMED_IN_ORDER as u32 + 1] {
            let mut fresh = Probe::new();
            fresh.hits = 1.0;
            let mut s = One::sampled(fresh, n, false);
            assert_eq!(s.running.is_some(), n as usize > SUMMED_IN_ORDER, "{n}");
            s.at(0).hits = 3.0;
            s.at(7).hits = 5.0;
            let want = (3.0 + 5.0 + f64::from(n - 2)) / f64::from(n);
            assert_eq!(s.mean_level(1), want, "{n}");
        }
    }

    /// Fractional levels: the exact sum rounds once, so it stays within a
    /// few units of the last place of the sum in order.
    #[test]
    fn fractional_levels_sum_within_rounding() {
        let n = 50_000;
        let mut running = One::sampled(Probe::new(), n, false);
        let mut in_order = One::sampled(Probe::new(), n, false);
        in_order.running = None;
        let mut rng = Stream::new(5, Purpose::Throttle, 0);
        for t in 1..=50u64 {
            for _ in 0..500 {
                let i = (rng.unit() * n as f64) as u32;
                let hits = rng.unit() * 10.0;
                running.at(i).hits = hits;
                in_order.at(i).hits = hits;
            }
            let (a, b) = (running.mean_level(t), in_order.mean_level(t));
            assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} against {b}");
        }
    }

    /// A level too large to hold exactly sends the layer back to reading
    /// every state, in order.
    #[test]
    fn a_huge_level_falls_back_to_the_sum_in_order() {
        let mut s = One::sampled(Probe::new(), 10_000, false);
        s.at(1).hits = 1e13;
        s.at(2).hits = 1.0;
        assert_eq!(s.mean_level(1), (1e13 + 1.0) / 1e4);
        assert!(s.running.is_none());
        assert_eq!(fixed(f64::NAN), None);
        assert_eq!(fixed(-0.5), Some(-(1i128 << 63)));
        assert_eq!(fixed(LARGEST), None);
    }
}
