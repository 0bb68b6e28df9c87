//! The shared state in front of a layer's attempts: its retry budget,
//! client-side throttle, circuit breaker and bulkhead, one per layer
//! instance or one per layer (`scope: shared`). A budget may also be
//! `global`: one budget for every layer that says so, owned by the
//! simulation and passed in (the playbook's "single budget" across stacked
//! retry layers). `sim` asks here whether an attempt or a retry may go,
//! and reports every outcome back.

use crate::engine::{Nanos, Stream};

use super::breaker::Breaker;
use super::budget::{Budget, CallBudget, Gate};
use super::bulkhead::{Acquire, Bulkhead, Waiter};
use super::config::CallPolicy;
use super::level::Holds;
use super::outcome::Cause;
use super::scoped::{Level, Scoped, Slots};
use super::throttle::{Admit, Throttle};

/// The gates of one layer.
pub struct LayerGates {
    /// Where each instance's gates lie: one row per instance holds them
    /// all, so the gates an attempt asks cost one lookup.
    slots: Slots,
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
        let n = l.instances;
        // Each kind kept per instance takes the next column of `slots`.
        let mut kinds = 0;
        let mut column = |shared: bool| {
            let c = kinds;
            kinds += usize::from(!shared);
            c
        };
        let budget = (l.budget)
            .filter(|_| !l.global_budget)
            .map(|b| Scoped::sampled(Budget::new(b.config), n, b.shared, column(b.shared)));
        let throttle = (l.throttle)
            .map(|t| Scoped::sampled(Throttle::new(t.config), n, t.shared, column(t.shared)));
        let breaker = (l.breaker)
            .map(|b| Scoped::sampled(Breaker::new(b.config), n, b.shared, column(b.shared)));
        let bulkhead = (l.bulkhead)
            .map(|b| Scoped::new(Bulkhead::new(b.config), n, b.shared, column(b.shared)));
        LayerGates {
            slots: Slots::new(n, kinds),
            budget,
            global: l.global_budget && l.budget.is_some(),
            throttle,
            breaker,
            bulkhead,
        }
    }

    pub fn any(&self) -> bool {
        self.budget.is_some() || self.throttle.is_some() || self.breaker.is_some()
    }

    /// Asks the bulkhead for a slot for one outgoing request.
    pub fn bulkhead_acquire(&mut self, instance: u32, who: Waiter) -> Acquire {
        match self.bulkhead.as_mut() {
            Some(b) => b.get(self.slots.row(instance), instance).acquire(who),
            None => Acquire::Now,
        }
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
        let b = self.bulkhead.as_mut()?;
        b.get(self.slots.row(instance), instance).release(is_live)
    }

    pub fn call_started(
        &mut self,
        instance: u32,
        now: Nanos,
        global: &mut Option<Budget>,
    ) -> CallBudget {
        let row = self.slots.row(instance);
        budget_for(&mut self.budget, self.global, row, instance, global)
            .map_or_else(CallBudget::default, |b| b.on_call_start(now))
    }

    /// The throttle's word on sending an attempt now.
    pub fn throttle(&mut self, instance: u32, now: Nanos, rng: &mut Stream) -> Admit {
        match self.throttle.as_mut() {
            Some(t) => t.get(self.slots.row(instance), instance).admit(now, rng),
            None => Admit::After(0),
        }
    }

    /// Whether the breaker lets this attempt through (`retry` tells a
    /// retry from a first attempt; a retries-only breaker is asked when the
    /// retry is decided, see `breaker_allows_retry`).
    pub fn breaker_admits(&mut self, instance: u32, now: Nanos) -> bool {
        match self.breaker.as_mut() {
            Some(b) => {
                let b = b.get(self.slots.row(instance), instance);
                b.retries_only() || b.admit(now)
            }
            None => true,
        }
    }

    /// A retries-only breaker's word on retrying now.
    pub fn breaker_allows_retry(&mut self, instance: u32, now: Nanos) -> bool {
        match self.breaker.as_mut() {
            Some(b) => {
                let b = b.get(self.slots.row(instance), instance);
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
        let row = self.slots.row(instance);
        if let Some(b) = budget_for(&mut self.budget, self.global, row, instance, global) {
            match failure {
                Some(_) if !qualified => b.on_unqualified_failure(call),
                f => b.on_attempt_end(call, f),
            }
        }
        if let Some(t) = self.throttle.as_mut() {
            t.get(row, instance).on_response(
                now,
                failure.is_none(),
                failure == Some(Cause::Status(429)),
            );
        }
        if let Some(b) = self.breaker.as_mut() {
            b.get(row, instance).record(now, failure.is_some());
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
        let row = self.slots.row(instance);
        match budget_for(&mut self.budget, self.global, row, instance, global) {
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
        let row = self.slots.row(instance);
        if let Some(b) = budget_for(&mut self.budget, self.global, row, instance, global) {
            b.on_call_end(now, call, success);
        }
    }

    pub fn levels(&mut self, now: Nanos, global: &mut Option<Budget>) -> Levels {
        let global_level = if self.global {
            global.as_mut().map(|b| b.level(now))
        } else {
            None
        };
        Levels {
            budget: (self.budget.as_mut())
                .map(|b| b.mean_level(now))
                .or(global_level),
            throttle: self.throttle.as_mut().map(|t| t.mean_level(now)),
            breaker_open: self.breaker.as_mut().map(|b| b.mean_level(now)),
        }
    }
}

/// A layer's budget for `instance` (whose cells are `row`): its own, or
/// the global one when `global`.
fn budget_for<'a>(
    budget: &'a mut Option<Scoped<Budget>>,
    global: bool,
    row: &mut [Option<std::num::NonZeroU32>],
    instance: u32,
    global_budget: &'a mut Option<Budget>,
) -> Option<&'a mut Budget> {
    if global {
        global_budget.as_mut()
    } else {
        budget.as_mut().map(|b| b.get(row, instance))
    }
}

impl Level for Budget {
    fn level(&mut self, now: Nanos) -> f64 {
        Budget::level(self, now)
    }

    fn holds(&self) -> Holds {
        Budget::holds(self)
    }
}

impl Level for Throttle {
    fn level(&mut self, now: Nanos) -> f64 {
        Throttle::level(self, now)
    }

    fn holds(&self) -> Holds {
        Throttle::holds(self)
    }
}

/// A breaker's level: 1 when it is not closed.
impl Level for Breaker {
    fn level(&mut self, _: Nanos) -> f64 {
        f64::from(u8::from(self.is_open()))
    }

    fn holds(&self) -> Holds {
        Holds::UntilTouched
    }
}
