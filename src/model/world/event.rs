//! The events of a run: small `Copy` values the engine orders by (time,
//! sequence). The kind numbers are folded into every run's event digest
//! and are fixed forever: a new event gets a new number.

use crate::engine::EventKind;

use super::ids::{CallId, ClientId, ConnRef, JobId, MsgId};

#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// The next open-loop arrival.
    Arrival,
    /// A closed-loop client's think time is over: its next request.
    ClientReady(ClientId),
    /// A received message's visibility timeout expired.
    Visible {
        msg: MsgId,
        epoch: u32,
    },
    /// The current round of a call (or its status probe) ran out of time.
    RoundTimeout {
        call: CallId,
        epoch: u32,
    },
    /// A backoff sleep or a throttle's wait is over.
    Wake {
        call: CallId,
        epoch: u32,
    },
    /// Time for the next hedge of a round.
    Hedge {
        call: CallId,
        epoch: u32,
    },
    /// A job's own work on its worker is done.
    ServiceDone {
        job: JobId,
        epoch: u32,
    },
    /// A job's answer reaches its caller.
    Respond {
        job: JobId,
        epoch: u32,
    },
    /// Incident `i` of the topology's flat list starts or ends.
    IncidentStart(u16),
    IncidentEnd(u16),
    /// The end of a time bucket: sample gate levels.
    Tick,
    /// Service `s`'s autoscaler decides.
    Autoscale(u16),
    /// A provisioned replica starts serving.
    ReplicaReady(u32),
    /// A request waited `acquire_timeout` for a pooled connection.
    PoolTimeout {
        call: CallId,
        epoch: u32,
    },
    /// The backoff of a pool's slot after a failed connect is over.
    Reconnect(ConnRef),
}

impl EventKind for Event {
    fn kind(&self) -> u8 {
        match self {
            Event::Arrival => 0,
            Event::RoundTimeout { .. } => 1,
            Event::Wake { .. } => 2,
            Event::ServiceDone { .. } => 3,
            Event::Respond { .. } => 4,
            Event::IncidentStart(_) => 5,
            Event::IncidentEnd(_) => 6,
            Event::Tick => 7,
            Event::Hedge { .. } => 8,
            Event::ClientReady(_) => 9,
            Event::Visible { .. } => 10,
            Event::Autoscale(_) => 11,
            Event::ReplicaReady(_) => 12,
            Event::PoolTimeout { .. } => 13,
            Event::Reconnect(_) => 14,
        }
    }
}
