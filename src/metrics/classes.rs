//! The figures of each priority class of the clients (`classes.csv`): what
//! became of its logical requests, its success rate and its latency.
//! Empty for a scenario whose clients send no classes.

use super::Recorder;
use super::table::us_to_ms;

/// One row of `classes.csv` (without variant and replicate).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassRow {
    pub class: String,
    /// The share of the logical requests the scenario gives it.
    pub share: f64,
    /// Logical requests started; `succeeded + failed + shed +
    /// open_at_end`.
    pub requests: u64,
    pub succeeded: u64,
    /// Ended failed, not by a priority shed.
    pub failed: u64,
    /// Ended failed with a priority shed as their last answer.
    pub shed: u64,
    /// Still open when the run ended.
    pub open_at_end: u64,
    /// Attempts of the class shed by priority at any service (retries
    /// included).
    pub shed_attempts: u64,
    /// `succeeded ÷ (succeeded + failed + shed)`: of the requests that
    /// ended; `None` when none did.
    pub success_rate: Option<f64>,
    /// Of the requests that ended.
    pub latency_p99_ms: Option<f64>,
}

/// The rows of a run's classes, named and with their shares as in the
/// scenario (`classes`, in class order).
pub fn tabulate_classes(rec: &Recorder, classes: &[(String, f64)]) -> Vec<ClassRow> {
    rec.classes
        .iter()
        .zip(classes)
        .map(|(c, (name, share))| {
            let ended = c.succeeded + c.failed + c.shed;
            ClassRow {
                class: name.clone(),
                share: *share,
                requests: c.requests,
                succeeded: c.succeeded,
                failed: c.failed,
                shed: c.shed,
                // More ended than started is a bug the invariants report
                // (`invariants::class_violations`), not a panic.
                open_at_end: c.requests.saturating_sub(ended),
                shed_attempts: c.shed_attempts,
                success_rate: (ended > 0).then(|| c.succeeded as f64 / ended as f64),
                latency_p99_ms: (!c.latency.is_empty())
                    .then(|| us_to_ms(c.latency.value_at_quantile(0.99))),
            }
        })
        .collect()
}
