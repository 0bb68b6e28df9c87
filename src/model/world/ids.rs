//! Typed ids of the entities a run creates (calls, jobs, messages,
//! closed-loop clients) and the links between them: who waits for a call
//! ([`Parent`]) and what a round or a job is waiting for ([`Child`]).
//! Every link carries the epoch it saw, so an answer to a round or a job
//! that has moved on is recognised as stale.

/// A call: one request of a caller on one edge, with its attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallId(pub u32);

/// A request at a (non-forwarding) service: queued, in service, or
/// waiting for its own calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobId(pub u32);

/// A message of the consumer workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgId(pub u32);

/// A client of a closed-loop fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientId(pub u32);

/// One slot of a connection pool: the call edge, the caller instance
/// whose pool it is, and the slot's index in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnRef {
    pub edge: super::super::topology::EdgeId,
    pub instance: u32,
    pub slot: u16,
}

/// Who waits for a call's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// A logical request: from a closed-loop client (else open loop),
    /// handling a message (else none).
    Root {
        client: Option<ClientId>,
        msg: Option<MsgId>,
    },
    /// A round of a call, through a forwarding service.
    Call { call: CallId, epoch: u32 },
    /// A job's calls.
    Job { job: JobId, epoch: u32 },
}

/// One request a round (or a job) waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Child {
    Call(CallId),
    Job(JobId),
}

/// The requests of a round or of a job's stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Children {
    None,
    One(Child),
    /// An index into the world's lists (fan-out, hedging, parallel calls).
    Many(u32),
}
