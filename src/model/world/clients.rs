//! The clients: an open-loop fleet (Poisson arrivals at a rate that may
//! follow a schedule) or a closed-loop one (each client sends its next
//! request a think time after its previous one ended). Every logical
//! request is a call on the entry edge, carrying the user's deadline.

use super::super::topology::EdgeId;
use super::edge::Opening;
use super::{ClientId, Event, MsgId, NEVER, Parent, World};

impl World<'_> {
    /// Schedules the first requests.
    pub(super) fn start_clients(&mut self) {
        let cfg = self.cfg;
        match cfg.closed {
            // Each client starts after one think time, so they do not all
            // fire at t = 0.
            Some(closed) => {
                for client in 0..closed.clients {
                    let think = closed.think.sample(&mut self.think);
                    if think < cfg.duration {
                        self.q
                            .schedule_at(think, Event::ClientReady(ClientId(client)));
                    }
                }
            }
            None => self.schedule_next_arrival(),
        }
    }

    /// The next open-loop arrival: a message to publish, or a request.
    pub(super) fn on_arrival(&mut self) {
        if self.broker.is_some() {
            self.publish();
        } else {
            self.new_request(None, None, false);
        }
        self.schedule_next_arrival();
    }

    fn schedule_next_arrival(&mut self) {
        let e = self.arrivals.exp1();
        if let Some(t) = self.cfg.arrivals.next_arrival(self.q.now(), e)
            && t < self.cfg.duration
        {
            self.q.schedule_at(t, Event::Arrival);
        }
    }

    /// A logical request from `client` (closed loop) or the open-loop
    /// fleet, handling message `msg` (consumers) or none.
    pub(super) fn new_request(
        &mut self,
        client: Option<ClientId>,
        msg: Option<MsgId>,
        poison: bool,
    ) {
        let now = self.q.now();
        self.rec.offered(now);
        let class = self.cfg.classes.draw(&mut self.priority);
        self.rec.class_offered(class);
        let req = self.next_req;
        self.next_req += 1;
        for &s in &self.writers {
            let store = self.topo.replica(s, 0);
            self.servers[store.index()].commits.push(0);
        }
        let deadline = self.cfg.deadline.map_or(NEVER, |d| now.saturating_add(d));
        let root = self.new_call(Opening {
            edge: EdgeId::ENTRY,
            parent: Parent::Root { client, msg },
            deadline,
            orphaned_by: None,
            req,
            class,
            req_deadline: deadline,
            poison,
        });
        self.start_round(root);
    }

    /// A closed-loop client's request ended: it thinks, then sends the next.
    pub(super) fn client_done(&mut self, client: ClientId) {
        if let Some(closed) = self.cfg.closed {
            let think = closed.think.sample(&mut self.think);
            let at = self.q.now().saturating_add(think);
            if at < self.cfg.duration {
                self.q.schedule_at(at, Event::ClientReady(client));
            }
        }
    }
}
