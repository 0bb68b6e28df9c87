//! A connection pool of a caller (one per caller instance and call edge):
//! at most `size` connections to the service called. A request needs a
//! free connection to send an attempt. It takes an idle one at once;
//! otherwise, when a connection does not exist yet, one is established
//! (a connect costs the callee `connect` of work), and the request waits
//! in a FIFO for the first connection that frees up, at most
//! `acquire_timeout`, then fails with `pool_timeout`.
//!
//! A connection is bound to the replica it was made to (the replica is
//! chosen when it connects, as an L4 balancer or a client-side pool per
//! host does). A replica that goes down drops every connection to it; the
//! pool reconnects when a request next needs a connection, and a connect
//! that fails is tried again after the call's retry backoff (with its
//! jitter) for that slot's consecutive failures: without jitter, slots
//! that lost their connections at the same instant reconnect in phase.
//!
//! Real-world sources: Envoy's cluster connection pools and circuit
//! breakers, where a request waits "for a ready connection pool
//! connection" among the cluster's pending requests, up to the cluster's
//! maximum connections (envoyproxy.io, intro/arch_overview/upstream/
//! circuit_breaking); HikariCP's `maximumPoolSize` (default 10) and
//! `connectionTimeout`, "the maximum number of milliseconds that a client
//! will wait for a connection from the pool" (default 30 s), after which
//! it throws (HikariCP README, "Frequently used"). Retrying connection
//! acquisition is how pools storm a database after a restart (HikariCP
//! issue #312; teleport#6889 for a fleet reconnecting in the same second).
//!
//! This is a state machine of plain data: the simulation passes `now`-free
//! decisions in and out (which slot, which waiter), and owns the timers.

use std::collections::VecDeque;
use std::num::NonZeroU32;

use crate::engine::Nanos;

use super::backoff::SleepState;

/// `pool: { size, acquire_timeout, connect }` of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Connections at most, per caller instance.
    pub size: u32,
    /// The longest a request waits for a connection.
    pub acquire_timeout: Nanos,
    /// The callee's work to establish one connection.
    pub connect: Nanos,
}

/// A waiter: an opaque pair (the simulation's call id and epoch).
pub type Waiter = (u32, u32);

/// What one slot of a pool holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// No connection (never made, or dropped).
    Empty,
    /// A connect to `replica` is out.
    Connecting,
    /// The last connect failed; a reconnect is due after a backoff.
    Backoff,
    /// Connected, free.
    Idle,
    /// Connected, carrying an attempt.
    Busy,
}

/// One connection slot.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub state: SlotState,
    /// The callee's replica (its index within the service) it is bound
    /// to, while connecting or connected.
    pub replica: u32,
    /// Its replica went down while it carried an attempt: it is gone once
    /// the attempt is over.
    pub dropped: bool,
    /// Connects that failed in a row (for the backoff).
    pub failures: u32,
    /// The backoff's memory between reconnects (decorrelated jitter).
    pub sleep: SleepState,
}

impl Slot {
    const EMPTY: Slot = Slot {
        state: SlotState::Empty,
        replica: 0,
        dropped: false,
        failures: 0,
        sleep: SleepState {
            prev: 0,
            polly_prev: 0.0,
        },
    };
}

/// The answer to "may this request have a connection?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// This idle slot is the request's now.
    Now(u16),
    /// The request waits; with `Some(slot)`, that empty slot must connect
    /// first (the caller starts the connect).
    Wait(Option<u16>),
}

/// What a released or newly connected slot does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// It goes to this waiter (now busy).
    To(Waiter),
    /// Idle, or empty: nobody waits.
    Rest,
    /// It was dropped: it backs off (`connect_failed` was applied), and
    /// the caller schedules its reconnect.
    Reconnect,
}

pub use crate::metrics::services::PoolCounts;

/// One pool.
#[derive(Clone, Debug)]
pub struct Pool {
    slots: Vec<Slot>,
    waiting: VecDeque<Waiter>,
}

impl Pool {
    pub fn new(size: u32) -> Self {
        Pool {
            slots: vec![Slot::EMPTY; size as usize],
            waiting: VecDeque::new(),
        }
    }

    pub fn slot(&self, i: u16) -> &Slot {
        &self.slots[i as usize]
    }

    pub fn slot_mut(&mut self, i: u16) -> &mut Slot {
        &mut self.slots[i as usize]
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Connections carrying an attempt now.
    pub fn held(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.state == SlotState::Busy)
            .count() as u64
    }

    /// A request `who` asks for a connection: an idle one whose replica
    /// `prefer` accepts, else an empty slot to connect (the request waits
    /// for it), else any idle one, else it waits.
    pub fn acquire(&mut self, who: Waiter, prefer: impl Fn(u32) -> bool) -> Take {
        let idle = |s: &Slot| s.state == SlotState::Idle;
        let pick = (self.slots.iter())
            .position(|s| idle(s) && prefer(s.replica))
            .or_else(|| {
                self.slots
                    .iter()
                    .any(|s| s.state == SlotState::Empty)
                    .then_some(usize::MAX)
            })
            .or_else(|| self.slots.iter().position(idle));
        match pick {
            Some(i) if i != usize::MAX => {
                self.slots[i].state = SlotState::Busy;
                Take::Now(i as u16)
            }
            _ => {
                self.waiting.push_back(who);
                let empty = (self.slots.iter()).position(|s| s.state == SlotState::Empty);
                if let Some(i) = empty {
                    self.slots[i].state = SlotState::Connecting;
                }
                Take::Wait(empty.map(|i| i as u16))
            }
        }
    }

    /// Slot `i` starts connecting to `replica`.
    pub fn connecting(&mut self, i: u16, replica: u32) {
        let s = &mut self.slots[i as usize];
        s.state = SlotState::Connecting;
        s.replica = replica;
        s.dropped = false;
    }

    /// The first waiter `is_live` accepts (stale ones, whose request moved
    /// on, are dropped).
    fn next_waiter(&mut self, is_live: &mut impl FnMut(Waiter) -> bool) -> Option<Waiter> {
        while let Some(w) = self.waiting.pop_front() {
            if is_live(w) {
                return Some(w);
            }
        }
        None
    }

    /// Whether a live request waits (stale waiters at the head are dropped).
    pub fn has_waiter(&mut self, mut is_live: impl FnMut(Waiter) -> bool) -> bool {
        while let Some(&w) = self.waiting.front() {
            if is_live(w) {
                return true;
            }
            self.waiting.pop_front();
        }
        false
    }

    /// Slot `i` is free (connected just now, or its attempt is over): it
    /// goes to the first live waiter, or rests.
    pub fn free(&mut self, i: u16, mut is_live: impl FnMut(Waiter) -> bool) -> Next {
        let s = &mut self.slots[i as usize];
        if s.dropped {
            s.dropped = false;
            self.connect_failed(i);
            return Next::Reconnect;
        }
        match self.next_waiter(&mut is_live) {
            Some(w) => {
                self.slots[i as usize].state = SlotState::Busy;
                Next::To(w)
            }
            None => {
                self.slots[i as usize].state = SlotState::Idle;
                Next::Rest
            }
        }
    }

    /// The connect of slot `i` succeeded.
    pub fn connected(&mut self, i: u16, is_live: impl FnMut(Waiter) -> bool) -> Next {
        let s = &mut self.slots[i as usize];
        s.failures = 0;
        s.sleep = SleepState::default();
        s.dropped = false;
        self.free(i, is_live)
    }

    /// The connect of slot `i` failed: it backs off. Returns the slot, for
    /// the caller to plan the sleep (its `failures`, its `sleep` state).
    pub fn connect_failed(&mut self, i: u16) -> &mut Slot {
        let s = &mut self.slots[i as usize];
        s.state = SlotState::Backoff;
        s.failures = s.failures.saturating_add(1);
        s
    }

    /// The backoff of slot `i` is over: it reconnects (true) when a
    /// request waits, else it is empty until one needs it.
    pub fn backoff_over(&mut self, i: u16, is_live: impl FnMut(Waiter) -> bool) -> bool {
        if self.slots[i as usize].state != SlotState::Backoff {
            return false;
        }
        let again = self.has_waiter(is_live);
        self.slots[i as usize].state = if again {
            SlotState::Connecting
        } else {
            SlotState::Empty
        };
        again
    }

    /// Replica `replica` went down: connection `i` is lost if it was made
    /// to it. An idle one backs off at once (returns true: the caller
    /// schedules its reconnect, as for a failed connect); a busy one when
    /// its attempt ends (`free`). Returns whether it was lost, and whether
    /// it backs off now.
    pub fn drop_if_to(&mut self, i: u16, replica: u32) -> (bool, bool) {
        let s = &mut self.slots[i as usize];
        if s.replica != replica {
            return (false, false);
        }
        match s.state {
            SlotState::Idle => {
                self.connect_failed(i);
                (true, true)
            }
            SlotState::Busy if !s.dropped => {
                s.dropped = true;
                (true, false)
            }
            _ => (false, false),
        }
    }
}

/// The pools of one call edge, one per caller instance, made when first
/// used (a million instances cost 4 bytes each until then).
#[derive(Clone, Debug)]
pub struct PoolSet {
    pub cfg: PoolConfig,
    slot_of: Vec<Option<NonZeroU32>>,
    pools: Vec<Pool>,
    /// The instance of each pool in `pools`.
    owners: Vec<u32>,
    pub counts: PoolCounts,
}

impl PoolSet {
    pub fn new(cfg: PoolConfig, instances: u32) -> Self {
        PoolSet {
            cfg,
            slot_of: vec![None; instances.max(1) as usize],
            pools: Vec::new(),
            owners: Vec::new(),
            counts: PoolCounts::default(),
        }
    }

    /// Instance `instance`'s pool.
    pub fn get(&mut self, instance: u32) -> &mut Pool {
        let i = instance as usize % self.slot_of.len();
        let index = match self.slot_of[i] {
            Some(k) => k.get() as usize - 1,
            None => {
                self.pools.push(Pool::new(self.cfg.size));
                self.owners.push(i as u32);
                let k = self.pools.len();
                self.slot_of[i] = NonZeroU32::new(k as u32);
                k - 1
            }
        };
        &mut self.pools[index]
    }

    /// How many pools were made so far; pool `k` and its instance.
    pub fn made(&self) -> usize {
        self.pools.len()
    }

    pub fn nth(&mut self, k: usize) -> (u32, &mut Pool) {
        (self.owners[k], &mut self.pools[k])
    }

    /// Connections carrying an attempt now, over every pool.
    pub fn held(&self) -> u64 {
        self.pools.iter().map(Pool::held).sum()
    }

    /// Connections established now (idle or busy), over every pool.
    pub fn open(&self) -> u64 {
        (self.pools.iter())
            .flat_map(|p| p.slots.iter())
            .filter(|s| matches!(s.state, SlotState::Idle | SlotState::Busy) && !s.dropped)
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_first_then_connect_then_wait() {
        let mut p = Pool::new(2);
        // Empty: the first request connects slot 0 and waits.
        assert_eq!(p.acquire((1, 0), |_| true), Take::Wait(Some(0)));
        p.connecting(0, 3);
        // The second connects slot 1; the third only waits.
        assert_eq!(p.acquire((2, 0), |_| true), Take::Wait(Some(1)));
        p.connecting(1, 4);
        assert_eq!(p.acquire((3, 0), |_| true), Take::Wait(None));
        // Connections go to the waiters in order.
        assert_eq!(p.connected(1, |_| true), Next::To((1, 0)));
        assert_eq!(p.connected(0, |_| true), Next::To((2, 0)));
        assert_eq!(p.held(), 2);
        // A freed connection skips a stale waiter... and the live one gets it.
        assert_eq!(p.free(0, |w| w.0 == 3), Next::To((3, 0)));
        assert_eq!(p.free(0, |_| true), Next::Rest);
        assert_eq!(p.slot(0).state, SlotState::Idle);
        // An idle connection to a preferred replica is taken at once.
        assert_eq!(p.free(1, |_| true), Next::Rest);
        assert_eq!(p.acquire((4, 0), |r| r == 4), Take::Now(1));
    }

    #[test]
    fn a_drop_empties_idle_slots_and_busy_ones_after_their_attempt() {
        let mut p = Pool::new(2);
        p.acquire((1, 0), |_| true);
        p.connecting(0, 0);
        p.acquire((2, 0), |_| true);
        p.connecting(1, 0);
        p.connected(0, |_| true);
        assert_eq!(p.connected(1, |_| true), Next::To((2, 0)));
        p.free(0, |_| true); // slot 0 idle, slot 1 busy
        assert_eq!(p.drop_if_to(0, 1), (false, false));
        assert_eq!(p.drop_if_to(0, 0), (true, true));
        assert_eq!(p.drop_if_to(1, 0), (true, false));
        assert_eq!(p.slot(0).state, SlotState::Backoff);
        assert_eq!(p.slot(0).failures, 1);
        assert_eq!(p.slot(1).state, SlotState::Busy);
        // Slot 1's attempt ends: it backs off too.
        assert_eq!(p.free(1, |_| true), Next::Reconnect);
        assert_eq!(p.slot(1).state, SlotState::Backoff);
    }

    #[test]
    fn failed_connects_back_off_and_reconnect_only_for_a_waiter() {
        let mut p = Pool::new(1);
        p.acquire((1, 0), |_| true);
        p.connecting(0, 0);
        assert_eq!(p.connect_failed(0).failures, 1);
        assert!(p.backoff_over(0, |_| true));
        assert_eq!(p.connect_failed(0).failures, 2);
        // The waiter gave up meanwhile: the slot rests, empty.
        assert!(!p.backoff_over(0, |_| false));
        assert_eq!(p.slot(0).state, SlotState::Empty);
        assert_eq!(p.slot(0).failures, 2);
    }
}
