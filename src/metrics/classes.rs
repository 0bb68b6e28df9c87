//! The figures of each priority class of the clients (`classes.csv`): what
//! became of its logical requests, its success rate and its latency.
//! Empty for a scenario whose clients send no classes.
//!
//! A class's success rate is judged as the run's (`summary.csv`): a
//! request still open at the end that had waited longer than the hung
//! bound counts as not succeeded, and a run stopped by a guard rail has
//! no rate and no latency (its figures cover only the time it reached).
//! So no class can read better than every request of the run together.

use super::Recorder;
use super::table::us_to_ms;
use crate::engine::Nanos;

/// How the run ended, for the rates: its end, the bound past which an
/// open request counts as hung (`table::hung_bound`), and whether a
/// guard rail stopped it.
#[derive(Clone, Copy, Debug)]
pub struct RunEnd {
    pub end: Nanos,
    pub hung_bound: Nanos,
    pub aborted: bool,
}

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
    /// Of `open_at_end`, those that had waited longer than the hung bound
    /// (as `hung_at_end` in `summary.csv`).
    pub hung_at_end: u64,
    /// Attempts of the class shed by priority at any service (retries
    /// included).
    pub shed_attempts: u64,
    /// `succeeded ÷ (succeeded + failed + shed + hung_at_end)`; `None`
    /// when no request ended or hung, or the run was aborted.
    pub success_rate: Option<f64>,
    /// Of the requests that ended; `None` when the run was aborted.
    pub latency_p99_ms: Option<f64>,
}

/// The rows of a run's classes, named and with their shares as in the
/// scenario (`classes`, in class order).
pub fn tabulate_classes(rec: &Recorder, classes: &[(String, f64)], run: RunEnd) -> Vec<ClassRow> {
    rec.classes
        .iter()
        .zip(classes)
        .enumerate()
        .map(|(k, (c, (name, share)))| {
            let ended = c.succeeded + c.failed + c.shed;
            let hung = rec.hung_in_class(k, run.end, run.hung_bound);
            let judged = ended + hung;
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
                hung_at_end: hung,
                shed_attempts: c.shed_attempts,
                success_rate: (!run.aborted && judged > 0)
                    .then(|| c.succeeded as f64 / judged as f64),
                latency_p99_ms: (!run.aborted && !c.latency.is_empty())
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
    /// A run that reached its end (10 s) with a hung bound of 1 s.
    const CALM: RunEnd = RunEnd {
        end: 10_000 * MS,
        hung_bound: 1_000 * MS,
        aborted: false,
    };

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
        let rows = tabulate_classes(
            &rec,
            &[("gold".into(), 0.25), ("bronze".into(), 0.75)],
            CALM,
        );
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
        let rows = tabulate_classes(&rec, &[("only".into(), 1.0)], CALM);
        assert_eq!(rows[0].open_at_end, 0);
        assert_eq!(rows[0].success_rate, Some(1.0));
    }

    /// Requests still open at the end that waited past the bound count
    /// against their class's rate, as against the run's; those that had
    /// not waited so long are left out; an aborted run has no rate and no
    /// latency for any class.
    #[test]
    fn hung_requests_count_against_their_class_and_aborted_runs_have_no_rate() {
        let mut rec = recorder(2);
        for _ in 0..6 {
            rec.class_offered(0);
        }
        for _ in 0..2 {
            rec.class_offered(1);
        }
        rec.class_done(0, 10 * MS, false, false);
        rec.class_done(0, 10 * MS, false, false);
        rec.class_done(0, 10 * MS, true, false);
        rec.class_done(1, 10 * MS, false, false);
        // Open at the end (10 s): class 0 since 1 s, 8.9 s and 9.5 s (the
        // first two waited longer than 1 s: hung); class 1 since 9.0 s,
        // exactly the bound: not hung (`>`, as `Recorder::hung`).
        rec.finish_open(vec![
            (8_900 * MS, 0),
            (9_000 * MS, 1),
            (1_000 * MS, 0),
            (9_500 * MS, 0),
        ]);
        assert_eq!(rec.hung(CALM.end, CALM.hung_bound).0, 2);
        let names = [("hi".into(), 0.5), ("lo".into(), 0.5)];
        let rows = tabulate_classes(&rec, &names, CALM);
        assert_eq!((rows[0].open_at_end, rows[0].hung_at_end), (3, 2));
        assert_eq!(rows[0].success_rate, Some(2.0 / 5.0));
        assert_eq!((rows[1].open_at_end, rows[1].hung_at_end), (1, 0));
        assert_eq!(rows[1].success_rate, Some(1.0));
        let stopped = RunEnd {
            aborted: true,
            ..CALM
        };
        for row in tabulate_classes(&rec, &names, stopped) {
            assert_eq!((row.success_rate, row.latency_p99_ms), (None, None));
            assert_eq!(
                row.requests,
                row.succeeded + row.failed + row.shed + row.open_at_end
            );
        }
    }

    #[test]
    fn a_scenario_without_classes_has_no_rows() {
        let rec = recorder(0);
        assert!(tabulate_classes(&rec, &[], CALM).is_empty());
    }
}
