//! Why a logical request failed: the `failed_<reason>` columns of both CSVs.

/// The reason columns of the outputs (`failed_<reason>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    Timeout = 0,
    Connection = 1,
    Status = 2,
    Deadline = 3,
    RetryAfterExceedsBudget = 4,
    BudgetExhausted = 5,
    Throttled = 6,
    BreakerOpen = 7,
    BulkheadFull = 8,
    PoolTimeout = 9,
}

impl Reason {
    pub const COUNT: usize = 10;
    pub const ALL: [Reason; Reason::COUNT] = [
        Reason::Timeout,
        Reason::Connection,
        Reason::Status,
        Reason::Deadline,
        Reason::RetryAfterExceedsBudget,
        Reason::BudgetExhausted,
        Reason::Throttled,
        Reason::BreakerOpen,
        Reason::BulkheadFull,
        Reason::PoolTimeout,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Reason::Timeout => "timeout",
            Reason::Connection => "connection",
            Reason::Status => "status",
            Reason::Deadline => "deadline",
            Reason::RetryAfterExceedsBudget => "retry_after_exceeds_budget",
            Reason::BudgetExhausted => "budget_exhausted",
            Reason::Throttled => "throttled",
            Reason::BreakerOpen => "breaker_open",
            Reason::BulkheadFull => "bulkhead_full",
            Reason::PoolTimeout => "pool_timeout",
        }
    }
}
