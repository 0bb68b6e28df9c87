//! Connection pools on call edges (`model::pool`): a request of a round
//! takes a pooled connection before it goes out, or waits for one (at
//! most the pool's acquire timeout); connects are jobs at the callee's
//! replica that cost it `connect` of work; a replica that goes down
//! drops its connections, and failed connects back off by the call's
//! retry backoff and jitter.

use super::super::backoff::sleep_before_retry;
use super::super::outcome::{Cause, Failure, Outcome};
use super::super::pool::{Next, Take, Waiter};
use super::super::topology::{EdgeId, ReplicaId, ServiceId};
use super::{CallId, CallState, ConnRef, Event, World};

impl World<'_> {
    /// Whether the pool waiter `w` (a call and its round's epoch) still
    /// waits for a connection.
    fn waits(&self, w: Waiter) -> bool {
        let c = self.calls.get(w.0);
        c.epoch == w.1 && c.state == CallState::Round && c.pool_wait
    }

    /// Call `id` (in a round) asks its edge's pool for a connection:
    /// true when it has one and may send now; false when it waits.
    pub(super) fn pool_acquire(&mut self, id: CallId) -> bool {
        let c = *self.calls.get(id.0);
        let e = c.edge.index();
        let now = self.q.now();
        let avoid = if self.topo.edge(c.edge).policy.retry_other_replica {
            c.tried
        } else {
            0
        };
        let hosts = self.outliers[e].get(c.instance);
        let ejected = |k: u32| hosts.get(k as usize).is_some_and(|h| h.ejected(now));
        let tried = |k: u32| k < 64 && avoid & (1u64 << k) != 0;
        let prefer = |k: u32| !ejected(k) && !tried(k);
        let Some(set) = self.pools[e].as_mut() else {
            return true;
        };
        let timeout = set.cfg.acquire_timeout;
        match set.get(c.instance).acquire((id.0, c.epoch), prefer) {
            Take::Now(slot) => {
                set.counts.acquired += 1;
                self.calls.get_mut(id.0).conn = Some(slot);
                true
            }
            Take::Wait(connect) => {
                set.counts.waits += 1;
                let call = self.calls.get_mut(id.0);
                call.pool_wait = true;
                call.queued += 1;
                let epoch = call.epoch;
                let t = self
                    .q
                    .schedule_in(timeout, Event::PoolTimeout { call: id, epoch });
                self.calls.get_mut(id.0).timer = Some(t);
                if let Some(slot) = connect {
                    self.start_connect(ConnRef {
                        edge: c.edge,
                        instance: c.instance,
                        slot,
                    });
                }
                false
            }
        }
    }

    /// The connection `slot` of call `w`'s pool is now `w`'s: its request
    /// goes out.
    fn grant(&mut self, w: Waiter, slot: u16) {
        let id = CallId(w.0);
        let call = self.calls.get_mut(id.0);
        call.pool_wait = false;
        call.queued -= 1;
        call.conn = Some(slot);
        let (e, timer) = (call.edge.index(), call.timer.take());
        if let Some(t) = timer {
            self.q.cancel(t);
        }
        if let Some(set) = self.pools[e].as_mut() {
            set.counts.acquired += 1;
        }
        self.send(id);
    }

    /// Call `id` waited the acquire timeout in vain.
    pub(super) fn on_pool_timeout(&mut self, id: CallId, epoch: u32) {
        if !self.waits((id.0, epoch)) {
            return;
        }
        let call = self.calls.get_mut(id.0);
        call.pool_wait = false;
        call.timer = None;
        let e = call.edge.index();
        if let Some(set) = self.pools[e].as_mut() {
            set.counts.timeouts += 1;
        }
        self.branch_failed(id, Failure::new(Cause::PoolTimeout));
    }

    /// Call `id`'s request no longer needs its connection (answered, or
    /// abandoned): the connection goes to the next waiter, or rests.
    pub(super) fn release_conn(&mut self, id: CallId) {
        let call = self.calls.get_mut(id.0);
        call.pool_wait = false;
        let Some(slot) = call.conn.take() else {
            return;
        };
        let (edge, instance) = (call.edge, call.instance);
        let Some(mut set) = self.pools[edge.index()].take() else {
            return;
        };
        set.counts.released += 1;
        let next = set.get(instance).free(slot, |w| self.waits(w));
        self.pools[edge.index()] = Some(set);
        let conn = ConnRef {
            edge,
            instance,
            slot,
        };
        self.after_free(conn, next);
    }

    fn after_free(&mut self, conn: ConnRef, next: Next) {
        match next {
            Next::To(w) => self.grant(w, conn.slot),
            Next::Rest => {}
            Next::Reconnect => self.schedule_reconnect(conn),
        }
    }

    /// Slot `conn` connects: the balancer of the callee picks a replica
    /// (among those the edge has not ejected), and the connect is a job
    /// there of `connect` work.
    fn start_connect(&mut self, conn: ConnRef) {
        let e = conn.edge.index();
        let s = self.topo.edge(conn.edge).callee;
        let k = self.pick_among(s, conn.edge, conn.instance, 0);
        let Some(set) = self.pools[e].as_mut() else {
            return;
        };
        set.counts.connects += 1;
        set.get(conn.instance).connecting(conn.slot, k);
        let replica = self.topo.replica(s, k);
        self.arrive_connect(s, replica, conn);
    }

    /// The connect of `conn` ended with `outcome`.
    pub(super) fn connect_done(&mut self, conn: ConnRef, outcome: Outcome) {
        let e = conn.edge.index();
        let Some(mut set) = self.pools[e].take() else {
            return;
        };
        match outcome {
            Outcome::Success => {
                let next = set
                    .get(conn.instance)
                    .connected(conn.slot, |w| self.waits(w));
                self.pools[e] = Some(set);
                self.after_free(conn, next);
            }
            Outcome::Failed(_) => {
                set.counts.connect_failures += 1;
                set.get(conn.instance).connect_failed(conn.slot);
                self.pools[e] = Some(set);
                self.schedule_reconnect(conn);
            }
        }
    }

    /// Slot `conn` lost its connection (a failed connect, or a drop): its
    /// reconnect is due after the call's retry backoff, with its jitter,
    /// for the slot's failures in a row.
    fn schedule_reconnect(&mut self, conn: ConnRef) {
        let e = conn.edge.index();
        let retry = &self.topo.edge(conn.edge).policy.retry;
        let Some(set) = self.pools[e].as_mut() else {
            return;
        };
        let slot = set.get(conn.instance).slot_mut(conn.slot);
        let sleep = sleep_before_retry(
            &retry.backoff,
            retry.jitter,
            slot.failures,
            &mut slot.sleep,
            &mut self.jitter[e],
        );
        self.q.schedule_in(sleep, Event::Reconnect(conn));
    }

    /// The backoff of slot `conn` is over: it reconnects if a request
    /// waits for a connection.
    pub(super) fn on_reconnect(&mut self, conn: ConnRef) {
        let e = conn.edge.index();
        let Some(mut set) = self.pools[e].take() else {
            return;
        };
        let again = set
            .get(conn.instance)
            .backoff_over(conn.slot, |w| self.waits(w));
        self.pools[e] = Some(set);
        if again {
            self.start_connect(conn);
        }
    }

    /// The replica of the connection call `id` holds, if it holds one.
    pub(super) fn conn_replica(&mut self, id: CallId, s: ServiceId) -> Option<ReplicaId> {
        let c = *self.calls.get(id.0);
        let slot = c.conn?;
        let set = self.pools[c.edge.index()].as_mut()?;
        let k = set.get(c.instance).slot(slot).replica;
        Some(self.topo.replica(s, k))
    }

    /// Replica `r` of service `s` went down: every pool's connections to
    /// it are dropped.
    pub(super) fn drop_connections(&mut self, s: ServiceId, r: ReplicaId) {
        let (_, k) = self.topo.replica_of(r);
        for e in 0..self.pools.len() {
            if self.topo.edge(EdgeId(e as u16)).callee != s {
                continue;
            }
            let Some(made) = self.pools[e].as_ref().map(|set| set.made()) else {
                continue;
            };
            for p in 0..made {
                let set = self.pools[e].as_mut().expect("checked above");
                let (instance, pool) = set.nth(p);
                for slot in 0..pool.slots().len() as u16 {
                    let set = self.pools[e].as_mut().expect("checked above");
                    let (lost, now) = set.nth(p).1.drop_if_to(slot, k);
                    set.counts.dropped += u64::from(lost);
                    if now {
                        self.schedule_reconnect(ConnRef {
                            edge: EdgeId(e as u16),
                            instance,
                            slot,
                        });
                    }
                }
            }
        }
    }

    /// The pools' counters, with what they hold at the run's end.
    pub(super) fn record_pools(&mut self) {
        for (e, set) in self.pools.iter().enumerate() {
            if let Some(set) = set {
                let mut counts = set.counts;
                counts.held_at_end = set.held();
                counts.open_at_end = set.open();
                self.rec.svc.pools[e] = counts;
            }
        }
    }
}
