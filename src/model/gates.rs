//! The shared state in front of a layer's attempts: its retry budget,
//! client-side throttle, circuit breaker and bulkhead, one per layer
//! instance or one per layer (`scope: shared`). A budget may also be
//! `global`: one budget for every layer that says so, owned by the
//! simulation and passed in (the playbook's "single budget" across stacked
//! retry layers). `sim` asks here whether an attempt or a retry may go,
//! and reports every outcome back.

use std::num::NonZeroU32;

use crate::engine::{Nanos, Stream};

use super::breaker::Breaker;
use super::budget::{Budget, CallBudget, Gate};
use super::bulkhead::{Acquire, Bulkhead, Waiter};
use super::config::{CallPolicy, Shared};
use super::outcome::Cause;
use super::throttle::{Admit, Throttle};

/// One kind of state, one per instance or one for all.
///
/// A layer of a million instances touches few of them in a short run, so
/// the states are made lazily: an instance gets its own state the first
/// time it is used, a copy of `fresh`, the state every instance starts in.
/// `fresh` receives every call an untouched state would (the level sampled
/// once per bucket), so the copy is exactly the state an instance made at
/// the start and left alone would hold: the results are those of making
/// every state up front, at a cost that follows the instances used.
struct Scoped<T> {
    fresh: T,
    /// Per instance, the index of its state in `states` plus one, once
    /// it has been used (4 bytes an instance).
    slot_of: Vec<Option<NonZeroU32>>,
    states: Vec<T>,
    /// The instances used, in the order of their first use; sorted (into
    /// instance order) when the levels are next sampled.
    used: Vec<u32>,
    /// How many of `used` are in instance order.
    sorted: usize,
    /// Scratch space for `mean`: a value per state.
    values: Vec<f64>,
}

/// `f` as a closure that can be passed by value while `f` is used again.
fn f_ref<T>(f: &impl Fn(&mut T) -> f64) -> impl FnMut(&mut T) -> f64 + '_ {
    move |t| f(t)
}

impl<T: Clone> Scoped<T> {
    fn new<C: Copy>(
        spec: &Option<Shared<C>>,
        instances: u32,
        make: impl Fn(C) -> T,
    ) -> Option<Self> {
        spec.as_ref().map(|s| {
            let n = if s.shared { 1 } else { instances.max(1) };
            Scoped {
                fresh: make(s.config),
                slot_of: vec![None; n as usize],
                states: Vec::new(),
                used: Vec::new(),
                sorted: 0,
                values: Vec::new(),
            }
        })
    }

    #[inline]
    fn get(&mut self, instance: u32) -> &mut T {
        let i = instance as usize % self.slot_of.len();
        let index = match self.slot_of[i] {
            Some(slot) => slot.get() as usize - 1,
            None => self.make(i),
        };
        &mut self.states[index]
    }

    #[cold]
    fn make(&mut self, i: usize) -> usize {
        self.states.push(self.fresh.clone());
        self.used.push(i as u32);
        let index = self.states.len() - 1;
        // At most `instances` (a u32) states are ever made.
        self.slot_of[i] = NonZeroU32::new(index as u32 + 1);
        index
    }

    /// The mean of `f` over every instance's state: the states in use in
    /// instance order, then the instances never used, which all hold
    /// `fresh`'s value, at once (count × value). When every instance is
    /// in use (the common case after the first moments of a run) this is
    /// the plain sum in instance order.
    fn mean(&mut self, f: impl Fn(&mut T) -> f64) -> f64 {
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
        values.extend(self.states.iter_mut().map(f_ref(&f)));
        let slot_of = &self.slot_of;
        let mut sum: f64 = (self.used.iter())
            .map(|&i| {
                let slot = slot_of[i as usize].expect("a used instance has a state");
                values[slot.get() as usize - 1]
            })
            .sum();
        let unused = self.slot_of.len() - self.used.len();
        if unused > 0 {
            sum += unused as f64 * f(&mut self.fresh);
        }
        sum / self.slot_of.len() as f64
    }
}

/// The gates of one layer.
pub struct LayerGates {
    budget: Option<Scoped<Budget>>,
    /// The layer uses the global budget.
    global: bool,
    throttle: Option<Scoped<Throttle>>,
    breaker: Option<Scoped<Breaker>>,
    bulkhead: Option<Scoped<Bulkhead>>,
}

/// Levels sampled for the time series (None when not configured).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Levels {
    /// Mean budget level over the layer's budgets (see `Budget::level`).
    pub budget: Option<f64>,
    /// Mean throttle level (`Throttle::level`).
    pub throttle: Option<f64>,
    /// Fraction of the layer's breakers that are not closed.
    pub breaker_open: Option<f64>,
}

/// The memory of one layer's gates, as (what, number of states, bytes
/// each): one state per instance, or one for the layer when shared.
pub fn state_bytes(l: &CallPolicy) -> Vec<(&'static str, u64, u64)> {
    let count = |shared: bool| {
        if shared {
            1
        } else {
            u64::from(l.instances.max(1))
        }
    };
    let mut out = Vec::new();
    if let Some(b) = l.budget.filter(|_| !l.global_budget) {
        out.push(("budget", count(b.shared), Budget::state_bytes(&b.config)));
    }
    if let Some(t) = l.throttle {
        out.push((
            "throttle",
            count(t.shared),
            Throttle::state_bytes(&t.config),
        ));
    }
    if let Some(b) = l.breaker {
        out.push(("breaker", count(b.shared), Breaker::state_bytes(&b.config)));
    }
    if let Some(b) = l.bulkhead {
        out.push((
            "bulkhead",
            count(b.shared),
            std::mem::size_of::<Bulkhead>() as u64,
        ));
    }
    out
}

impl LayerGates {
    pub fn new(l: &CallPolicy) -> Self {
        LayerGates {
            budget: if l.global_budget {
                None
            } else {
                Scoped::new(&l.budget, l.instances, Budget::new)
            },
            global: l.global_budget && l.budget.is_some(),
            throttle: Scoped::new(&l.throttle, l.instances, Throttle::new),
            breaker: Scoped::new(&l.breaker, l.instances, Breaker::new),
            bulkhead: Scoped::new(&l.bulkhead, l.instances, Bulkhead::new),
        }
    }

    pub fn any(&self) -> bool {
        self.budget.is_some() || self.throttle.is_some() || self.breaker.is_some()
    }

    /// Asks the bulkhead for a slot for one outgoing request.
    pub fn bulkhead_acquire(&mut self, instance: u32, who: Waiter) -> Acquire {
        self.bulkhead
            .as_mut()
            .map_or(Acquire::Now, |b| b.get(instance).acquire(who))
    }

    pub fn has_bulkhead(&self) -> bool {
        self.bulkhead.is_some()
    }

    /// Gives a slot back; returns the waiter it passes to, if any.
    pub fn bulkhead_release(
        &mut self,
        instance: u32,
        is_live: impl FnMut(Waiter) -> bool,
    ) -> Option<Waiter> {
        self.bulkhead
            .as_mut()
            .and_then(|b| b.get(instance).release(is_live))
    }

    /// This layer's budget for `instance`: its own, or the global one.
    fn budget_for<'a>(
        &'a mut self,
        instance: u32,
        global: &'a mut Option<Budget>,
    ) -> Option<&'a mut Budget> {
        if self.global {
            global.as_mut()
        } else {
            self.budget.as_mut().map(|b| b.get(instance))
        }
    }

    pub fn call_started(
        &mut self,
        instance: u32,
        now: Nanos,
        global: &mut Option<Budget>,
    ) -> CallBudget {
        self.budget_for(instance, global)
            .map_or_else(CallBudget::default, |b| b.on_call_start(now))
    }

    /// The throttle's word on sending an attempt now.
    pub fn throttle(&mut self, instance: u32, now: Nanos, rng: &mut Stream) -> Admit {
        self.throttle
            .as_mut()
            .map_or(Admit::After(0), |t| t.get(instance).admit(now, rng))
    }

    /// Whether the breaker lets this attempt through (`retry` tells a
    /// retry from a first attempt; a retries-only breaker is asked when the
    /// retry is decided, see `breaker_allows_retry`).
    pub fn breaker_admits(&mut self, instance: u32, now: Nanos) -> bool {
        match self.breaker.as_mut() {
            Some(b) => {
                let b = b.get(instance);
                b.retries_only() || b.admit(now)
            }
            None => true,
        }
    }

    /// A retries-only breaker's word on retrying now.
    pub fn breaker_allows_retry(&mut self, instance: u32, now: Nanos) -> bool {
        match self.breaker.as_mut() {
            Some(b) => {
                let b = b.get(instance);
                !b.retries_only() || b.admit(now)
            }
            None => true,
        }
    }

    /// An attempt ended: `None` is a success. `qualified` tells whether
    /// the layer's policy would retry this failure (only those cost gRPC
    /// tokens).
    pub fn attempt_ended(
        &mut self,
        instance: u32,
        now: Nanos,
        call: &mut CallBudget,
        failure: Option<Cause>,
        qualified: bool,
        global: &mut Option<Budget>,
    ) {
        if let Some(b) = self.budget_for(instance, global) {
            match failure {
                Some(_) if !qualified => b.on_unqualified_failure(call),
                f => b.on_attempt_end(call, f),
            }
        }
        if let Some(t) = self.throttle.as_mut() {
            t.get(instance).on_response(
                now,
                failure.is_none(),
                failure == Some(Cause::Status(429)),
            );
        }
        if let Some(b) = self.breaker.as_mut() {
            b.get(instance).record(now, failure.is_some());
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn try_retry(
        &mut self,
        instance: u32,
        now: Nanos,
        call: &mut CallBudget,
        cause: Cause,
        retries: u32,
        global: &mut Option<Budget>,
    ) -> Gate {
        match self.budget_for(instance, global) {
            Some(b) => b.try_retry(now, call, cause, retries),
            None => Gate::Allow { min_sleep: 0 },
        }
    }

    pub fn call_ended(
        &mut self,
        instance: u32,
        now: Nanos,
        call: &mut CallBudget,
        success: bool,
        global: &mut Option<Budget>,
    ) {
        if let Some(b) = self.budget_for(instance, global) {
            b.on_call_end(now, call, success);
        }
    }

    pub fn levels(&mut self, now: Nanos, global: &mut Option<Budget>) -> Levels {
        fn mean<T: Clone>(s: &mut Option<Scoped<T>>, f: impl Fn(&mut T) -> f64) -> Option<f64> {
            s.as_mut().map(|s| s.mean(f))
        }
        let global_level = if self.global {
            global.as_mut().map(|b| b.level(now))
        } else {
            None
        };
        Levels {
            budget: mean(&mut self.budget, |b| b.level(now)).or(global_level),
            throttle: mean(&mut self.throttle, |t| t.level(now)),
            breaker_open: mean(&mut self.breaker, |b| f64::from(u8::from(b.is_open()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state that counts the calls it got and the time of the last.
    #[derive(Clone, Debug, PartialEq)]
    struct Probe {
        samples: u32,
        last: Nanos,
        hits: u32,
    }

    fn probe_layer(instances: u32, shared: bool) -> Scoped<Probe> {
        let spec = Some(Shared { config: (), shared });
        Scoped::new(&spec, instances, |()| Probe {
            samples: 0,
            last: 0,
            hits: 0,
        })
        .unwrap()
    }

    /// An instance first used late holds exactly what a state made at the
    /// start and sampled at every bucket would hold; the mean counts the
    /// unused instances at the fresh value; a shared scope is one state.
    #[test]
    fn states_made_late_are_states_made_at_the_start() {
        let mut s = probe_layer(1_000_000, false);
        let level = |p: &mut Probe| f64::from(p.hits);
        for t in 1..=3 {
            s.get(999_999).hits += 2;
            s.get(7).hits += 1;
            let sample = |p: &mut Probe| {
                p.samples += 1;
                p.last = t;
                f64::from(p.hits)
            };
            let mean = s.mean(sample);
            assert_eq!(mean, (3 * t) as f64 / 1e6);
        }
        assert_eq!(s.states.len(), 2, "only the instances used have a state");
        let late = s.get(1_000_000 + 42).clone(); // instance 42, first used now
        assert_eq!(
            late,
            Probe {
                samples: 3,
                last: 3,
                hits: 0
            }
        );
        assert_eq!(s.get(7).samples, 3);
        assert_eq!(s.mean(level), 9.0 / 1e6);
        assert_eq!(s.used, vec![7, 42, 999_999], "sorted for the sum");
        let mut shared = probe_layer(1_000, true);
        shared.get(5).hits += 1;
        shared.get(6).hits += 1;
        assert_eq!((shared.states.len(), shared.mean(level)), (1, 2.0));
    }
}
