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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Nanos;

    const MS: Nanos = 1_000_000;

    fn recorder(classes: usize) -> Recorder {
        let mut rec = Recorder::new(10_000 * MS, 1_000 * MS, 1);
        rec.with_classes(classes);
        rec
    }

    #[test]
    fn each_class_counts_what_became_of_its_own_requests() {
        let mut rec = recorder(2);
        for _ in 0..7 {
            rec.class_offered(0);
        }
        rec.class_offered(1);
        // Class 0: 3 succeeded (10, 20 and 30 ms), 2 failed, 1 shed, 1 open.
        rec.class_done(0, 10 * MS, false, false);
        rec.class_done(0, 20 * MS, false, true);
        rec.class_done(0, 30 * MS, false, false);
        rec.class_done(0, 5 * MS, true, false);
        rec.class_done(0, 5 * MS, true, false);
        rec.class_done(0, 5 * MS, true, true);
        rec.class_shed_attempt(0);
        rec.class_shed_attempt(0);
        rec.class_shed_attempt(0);
        rec.class_shed_attempt(1);
        let rows = tabulate_classes(&rec, &[("gold".into(), 0.25), ("bronze".into(), 0.75)]);
        assert_eq!(rows.len(), 2);
        let gold = &rows[0];
        assert_eq!(gold.class, "gold");
        assert_eq!(gold.share, 0.25);
        assert_eq!(
            (gold.requests, gold.succeeded, gold.failed, gold.shed),
            (7, 3, 2, 1)
        );
        assert_eq!(gold.open_at_end, 1);
        assert_eq!(gold.shed_attempts, 3);
        assert_eq!(gold.success_rate, Some(0.5));
        // The 99th percentile of six latencies is the largest, 30 ms
        // (within the histogram's three significant digits).
        let p99 = gold.latency_p99_ms.unwrap();
        assert!((p99 - 30.0).abs() <= 0.03, "{p99}");
        let bronze = &rows[1];
        assert_eq!((bronze.class.as_str(), bronze.share), ("bronze", 0.75));
        assert_eq!((bronze.requests, bronze.open_at_end), (1, 1));
        assert_eq!(bronze.shed_attempts, 1);
        // Nothing ended: no rate and no latency, rather than 0.
        assert_eq!(bronze.success_rate, None);
        assert_eq!(bronze.latency_p99_ms, None);
    }

    #[test]
    fn more_ended_than_started_leaves_none_open_rather_than_wrapping() {
        let mut rec = recorder(1);
        rec.class_done(0, MS, false, false);
        let rows = tabulate_classes(&rec, &[("only".into(), 1.0)]);
        assert_eq!(rows[0].open_at_end, 0);
        assert_eq!(rows[0].success_rate, Some(1.0));
    }

    #[test]
    fn a_scenario_without_classes_has_no_rows() {
        let rec = recorder(0);
        assert!(tabulate_classes(&rec, &[]).is_empty());
    }
}
