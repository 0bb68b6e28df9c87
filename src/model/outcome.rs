//! What an attempt ends with, and why a call gave up. These are the failure
//! reasons counted in both CSVs.

use crate::engine::Nanos;

/// What the caller of an attempt sees when it fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The attempt's timeout fired first.
    Timeout,
    /// The connection failed (dependency down).
    Connection,
    /// The dependency answered with this status (shed, error burst, queue
    /// timeout).
    Status(u16),
    /// The deadline (the user's, or a propagated one) ran out.
    Deadline,
    /// Retry-After asked for a wait longer than the remaining budget.
    RetryAfterExceedsBudget,
}

/// A failed attempt or call. `retry_after` is the server's Retry-After
/// value, if it sent one (`0` = none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub cause: Cause,
    pub retry_after: Nanos,
}

impl Failure {
    pub fn new(cause: Cause) -> Self {
        Failure {
            cause,
            retry_after: 0,
        }
    }
}

/// The end of an attempt or call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failed(Failure),
}

/// The reason columns of the outputs (`failed_<reason>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    Timeout = 0,
    Connection = 1,
    Status = 2,
    Deadline = 3,
    RetryAfterExceedsBudget = 4,
}

impl Reason {
    pub const COUNT: usize = 5;
    pub const ALL: [Reason; Reason::COUNT] = [
        Reason::Timeout,
        Reason::Connection,
        Reason::Status,
        Reason::Deadline,
        Reason::RetryAfterExceedsBudget,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Reason::Timeout => "timeout",
            Reason::Connection => "connection",
            Reason::Status => "status",
            Reason::Deadline => "deadline",
            Reason::RetryAfterExceedsBudget => "retry_after_exceeds_budget",
        }
    }
}

impl Cause {
    pub fn reason(self) -> Reason {
        match self {
            Cause::Timeout => Reason::Timeout,
            Cause::Connection => Reason::Connection,
            Cause::Status(_) => Reason::Status,
            Cause::Deadline => Reason::Deadline,
            Cause::RetryAfterExceedsBudget => Reason::RetryAfterExceedsBudget,
        }
    }
}
