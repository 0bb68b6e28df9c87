//! What an attempt ends with, and why a call gave up. These are the failure
//! reasons counted in both CSVs.

use crate::engine::Nanos;
pub use crate::metrics::Reason;

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
    /// A retry budget refused the retry.
    BudgetExhausted,
    /// A circuit breaker rejected the attempt.
    BreakerOpen,
    /// Client-side throttling rejected the attempt locally.
    Throttled,
    /// The layer's bulkhead was full.
    BulkheadFull,
    /// No pooled connection freed up within the pool's acquire timeout.
    PoolTimeout,
}

/// A failed attempt or call. `retry_after` is the server's Retry-After
/// value, if it sent one (`0` = none); `by_priority`: a service shed it
/// for its priority class (`model::priority`), what the per-class
/// figures count as shed when a logical request ends with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub cause: Cause,
    pub retry_after: Nanos,
    pub by_priority: bool,
}

impl Failure {
    pub fn new(cause: Cause) -> Self {
        Failure {
            cause,
            retry_after: 0,
            by_priority: false,
        }
    }
}

/// The end of an attempt or call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failed(Failure),
}

impl Cause {
    pub fn reason(self) -> Reason {
        match self {
            Cause::Timeout => Reason::Timeout,
            Cause::Connection => Reason::Connection,
            Cause::Status(_) => Reason::Status,
            Cause::Deadline => Reason::Deadline,
            Cause::RetryAfterExceedsBudget => Reason::RetryAfterExceedsBudget,
            Cause::BudgetExhausted => Reason::BudgetExhausted,
            Cause::BreakerOpen => Reason::BreakerOpen,
            Cause::Throttled => Reason::Throttled,
            Cause::BulkheadFull => Reason::BulkheadFull,
            Cause::PoolTimeout => Reason::PoolTimeout,
        }
    }

    /// Whether the failure was decided inside the layer (a gate), not by
    /// the hop below it.
    pub fn is_local(self) -> bool {
        matches!(
            self,
            Cause::BudgetExhausted
                | Cause::BreakerOpen
                | Cause::Throttled
                | Cause::BulkheadFull
                | Cause::PoolTimeout
        )
    }
}
