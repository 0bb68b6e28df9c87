//! Message consumers: the clients publish messages to a queue (Amazon SQS
//! semantics, docs/sources/presets.md §9.3) and a pool of consumers
//! handles them. Receiving a message makes it invisible for the visibility
//! timeout and counts a receive; a successful handler deletes it; a failed
//! (or still running) one lets it become visible again when the timeout
//! expires, and it is delivered again. A receive that would make a
//! message's receive count exceed `max_receive_count` moves it to the
//! dead-letter queue instead. A message received while an earlier handler
//! of it still runs is processed twice at once (duplicate processing).
//!
//! Each handling is one logical request through the layers, so in-handler
//! retries are the layers' retry policies, and broker redelivery multiplies
//! them (the double loop the playbook warns about).

use std::collections::VecDeque;

use crate::engine::{Nanos, TimerId};

use super::{Event, MsgId, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MsgState {
    /// In the queue, visible.
    Ready,
    /// Received, invisible until its visibility timeout.
    Invisible,
    Deleted,
    DeadLettered,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Msg {
    published: Nanos,
    receives: u32,
    /// Handlers of this message running now.
    running: u32,
    state: MsgState,
    /// Changes with every receive, so a stale visibility timer is dropped.
    epoch: u32,
    /// The pending `Visible` (cancelled when the message is deleted).
    timer: Option<TimerId>,
    pub(super) poison: bool,
}

pub(super) struct Broker {
    pub(super) msgs: Vec<Msg>,
    ready: VecDeque<u32>,
    free: u32,
}

impl Broker {
    pub(super) fn new(concurrency: u32) -> Self {
        Broker {
            msgs: Vec::new(),
            ready: VecDeque::new(),
            free: concurrency,
        }
    }
}

impl World<'_> {
    /// A message is published.
    pub(super) fn publish(&mut self) {
        let now = self.q.now();
        let Some(cc) = self.cfg.consumers else { return };
        let poison = cc.poison > 0.0 && self.messages.chance(cc.poison);
        let Some(b) = self.broker.as_mut() else {
            return;
        };
        let id = b.msgs.len() as u32;
        b.msgs.push(Msg {
            published: now,
            receives: 0,
            running: 0,
            state: MsgState::Ready,
            epoch: 0,
            timer: None,
            poison,
        });
        b.ready.push_back(id);
        self.rec.message_published(now);
        self.dispatch();
    }

    /// Free consumers receive visible messages, oldest first.
    fn dispatch(&mut self) {
        let now = self.q.now();
        let Some(cc) = self.cfg.consumers else { return };
        loop {
            let Some(b) = self.broker.as_mut() else {
                return;
            };
            if b.free == 0 {
                return;
            }
            let Some(id) = b.ready.pop_front() else {
                return;
            };
            let m = &mut b.msgs[id as usize];
            if m.state != MsgState::Ready {
                continue;
            }
            if m.receives + 1 > cc.max_receive_count {
                m.state = MsgState::DeadLettered;
                let age = now - m.published;
                self.rec.dead_lettered(now, age);
                continue;
            }
            m.receives += 1;
            m.state = MsgState::Invisible;
            m.epoch = m.epoch.wrapping_add(1);
            let duplicate = m.running > 0;
            m.running += 1;
            let (epoch, poison) = (m.epoch, m.poison);
            b.free -= 1;
            let redelivery = m.receives > 1;
            self.rec.message_received(now, redelivery, duplicate);
            let t = self.q.schedule_in(
                cc.visibility,
                Event::Visible {
                    msg: MsgId(id),
                    epoch,
                },
            );
            if let Some(b) = self.broker.as_mut() {
                b.msgs[id as usize].timer = Some(t);
            }
            self.new_request(None, Some(MsgId(id)), poison);
        }
    }

    /// A message's visibility timeout expired.
    pub(super) fn on_visible(&mut self, msg: MsgId, epoch: u32) {
        let id = msg.0;
        let Some(b) = self.broker.as_mut() else {
            return;
        };
        let m = &mut b.msgs[id as usize];
        if m.epoch == epoch && m.state == MsgState::Invisible {
            m.state = MsgState::Ready;
            b.ready.push_back(id);
            self.dispatch();
        }
    }

    /// A handler of message `id` ended; a success deletes the message.
    pub(super) fn handler_done(&mut self, msg: MsgId, success: bool) {
        let id = msg.0;
        let now = self.q.now();
        let Some(b) = self.broker.as_mut() else {
            return;
        };
        b.free += 1;
        let m = &mut b.msgs[id as usize];
        m.running = m.running.saturating_sub(1);
        if success && matches!(m.state, MsgState::Invisible | MsgState::Ready) {
            m.state = MsgState::Deleted;
            if let Some(t) = m.timer.take() {
                self.q.cancel(t);
            }
            let latency = now - m.published;
            self.rec.message_processed(now, latency);
        }
        self.dispatch();
    }

    /// Messages still in the queue (visible or not) at the end of the run.
    pub(super) fn messages_open(&self) -> u64 {
        self.broker.as_ref().map_or(0, |b| {
            b.msgs
                .iter()
                .filter(|m| matches!(m.state, MsgState::Ready | MsgState::Invisible))
                .count() as u64
        })
    }
}
