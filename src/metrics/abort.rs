//! Why a run stopped before its end: a guard rail, or a stop request.
//! The model reports the reason as a value; the text is what
//! `summary.csv`'s `aborted` column holds; the command line adds how to
//! lift a limit.

use std::fmt;

use crate::engine::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    /// The stop flag was raised (Ctrl-C, SIGTERM).
    Interrupted,
    /// `limits.max_events` events were handled.
    MaxEvents { limit: u64 },
    /// More than `limits.max_in_flight` calls and requests were alive.
    MaxInFlight { limit: u64 },
    /// More than `limits.max_in_flight` events were pending in the queue.
    EventsPending { limit: u64 },
    /// A workload whose length is known only at its end needed more time
    /// buckets than a run records.
    TooManyBuckets {
        at: Nanos,
        bucket: Nanos,
        limit: usize,
    },
    /// Events were left due at the end of representable time.
    ClockRanOut { at: Nanos, pending: usize },
}

impl Abort {
    /// The scenario field (and command-line flag) that lifts the limit.
    pub fn limit_field(self) -> Option<(&'static str, &'static str)> {
        match self {
            Abort::MaxEvents { .. } => Some(("limits.max_events", "--max-events")),
            Abort::MaxInFlight { .. } | Abort::EventsPending { .. } => {
                Some(("limits.max_in_flight", "--max-in-flight"))
            }
            _ => None,
        }
    }
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Abort::Interrupted => f.write_str("interrupted (Ctrl-C)"),
            Abort::MaxEvents { limit } => {
                write!(f, "stopped after {limit} events (limits.max_events)")
            }
            Abort::MaxInFlight { limit } => write!(
                f,
                "more than {limit} calls and requests in flight (limits.max_in_flight)"
            ),
            Abort::EventsPending { limit } => {
                write!(f, "more than {limit} events pending (limits.max_in_flight)")
            }
            Abort::TooManyBuckets { at, bucket, limit } => write!(
                f,
                "a call at t = {at} ns needs more than {limit} buckets of {bucket} ns"
            ),
            Abort::ClockRanOut { at, pending } => write!(
                f,
                "simulated time ran out at t = {at} ns with {pending} events pending"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_that_can_be_lifted_name_their_field_and_flag() {
        let events = Some(("limits.max_events", "--max-events"));
        let in_flight = Some(("limits.max_in_flight", "--max-in-flight"));
        assert_eq!(Abort::MaxEvents { limit: 5 }.limit_field(), events);
        assert_eq!(Abort::MaxInFlight { limit: 5 }.limit_field(), in_flight);
        assert_eq!(Abort::EventsPending { limit: 5 }.limit_field(), in_flight);
        assert_eq!(Abort::Interrupted.limit_field(), None);
        let buckets = Abort::TooManyBuckets {
            at: 1,
            bucket: 2,
            limit: 3,
        };
        assert_eq!(buckets.limit_field(), None);
        let clock = Abort::ClockRanOut { at: 1, pending: 2 };
        assert_eq!(clock.limit_field(), None);
    }

    #[test]
    fn every_reason_reads_as_the_summary_column_holds_it() {
        let text = |why: Abort| why.to_string();
        assert_eq!(text(Abort::Interrupted), "interrupted (Ctrl-C)");
        assert_eq!(
            text(Abort::MaxEvents { limit: 7 }),
            "stopped after 7 events (limits.max_events)"
        );
        assert_eq!(
            text(Abort::MaxInFlight { limit: 8 }),
            "more than 8 calls and requests in flight (limits.max_in_flight)"
        );
        assert_eq!(
            text(Abort::EventsPending { limit: 9 }),
            "more than 9 events pending (limits.max_in_flight)"
        );
        let buckets = Abort::TooManyBuckets {
            at: 10,
            bucket: 11,
            limit: 12,
        };
        assert_eq!(
            text(buckets),
            "a call at t = 10 ns needs more than 12 buckets of 11 ns"
        );
        assert_eq!(
            text(Abort::ClockRanOut {
                at: 13,
                pending: 14
            }),
            "simulated time ran out at t = 13 ns with 14 events pending"
        );
    }
}
