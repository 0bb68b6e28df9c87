//! `summary_by_variant.csv`: each summary figure over the replicates of a
//! variant, as a mean and the half-width of its 95% confidence interval
//! (Student's t with n − 1 degrees of freedom; empty with one replicate).
//! Missing values (a run with no recovery, say) are left out of both.
//! `recovered` becomes `recovered_fraction`: the share of replicates that
//! recovered (among those with a verdict: not the `undecided` ones). `aborted` becomes
//! `aborted_runs`: the replicates a guard rail stopped early; the other
//! figures are then over the replicates that reached their end (over the
//! stopped ones, flagged so, when none did). `slo_pass`
//! and `slo_failed` become the variant's verdict (`slo::aggregate`):
//! `slo_pass`, `slo_pass_fraction` and `slo_failed`. Swept values
//! (`sweep.<path>`) are carried through as they are.

use super::columns::Cell;

/// Two-sided 95% quantiles of Student's t for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The 95% two-sided t quantile for `df` degrees of freedom.
pub fn t95(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T95[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// Mean and 95% CI half-width of the values (None when there are none;
/// the half-width is None with fewer than two).
pub fn mean_ci(values: &[f64]) -> Option<(f64, Option<f64>)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return Some((mean, None));
    }
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    Some((mean, Some(t95(values.len() - 1) * (var / n).sqrt())))
}

/// Aggregates the summary rows of one variant (all with the same columns)
/// into `replicates` then `<col>_mean, <col>_ci95` for every numeric column.
pub fn aggregate(all: &[Vec<(String, Cell)>]) -> Vec<(String, Cell)> {
    let mut out = vec![("replicates".to_string(), Cell::Int(all.len() as u64))];
    let Some(first) = all.first() else {
        return out;
    };
    // A run a guard rail stopped has figures over only the time it
    // reached: the figures are over the runs that reached their end, when
    // there are any (`aborted_runs` says how many were left out); when
    // every run was stopped, over those, flagged by `aborted_runs`.
    let stopped_col = first.iter().position(|(n, _)| n == "aborted");
    let is_stopped = |r: &Vec<(String, Cell)>| {
        stopped_col.is_some_and(|j| matches!(r.get(j).map(|c| &c.1), Some(Cell::Text(_))))
    };
    let finished: Vec<Vec<(String, Cell)>> =
        all.iter().filter(|r| !is_stopped(r)).cloned().collect();
    let rows: &[Vec<(String, Cell)>] = if finished.is_empty() { all } else { &finished };
    for (i, (name, cell)) in first.iter().enumerate() {
        if name.starts_with("sweep.") {
            // The swept value: the same in every replicate of a variant.
            out.push((name.clone(), cell.clone()));
            continue;
        }
        if name == "slo_pass" {
            // With `slo_failed` after it: the variant's verdict, over every
            // run (a stopped run fails the SLO).
            let failed: Vec<Cell> = first
                .iter()
                .position(|(n, _)| n == "slo_failed")
                .map(|j| all.iter().map(|r| r[j].1.clone()).collect())
                .unwrap_or_default();
            let passes: Vec<Cell> = all.iter().map(|r| r[i].1.clone()).collect();
            out.extend(super::slo::aggregate(&passes, &failed));
            continue;
        }
        if name == "slo_failed" {
            continue;
        }
        if name == "aborted" {
            let n = all
                .iter()
                .filter(|r| matches!(r[i].1, Cell::Text(_)))
                .count();
            out.push(("aborted_runs".into(), Cell::Int(n as u64)));
            continue;
        }
        if name == "recovered" {
            // Over the runs with a verdict (not the undecided ones).
            let values: Vec<f64> = rows.iter().filter_map(|r| r[i].1.number()).collect();
            let frac =
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
            out.push(("recovered_fraction".into(), Cell::opt_f(frac)));
            continue;
        }
        if matches!(cell, Cell::Text(_)) || name == "event_digest" {
            continue;
        }
        let values: Vec<f64> = rows.iter().filter_map(|r| r[i].1.number()).collect();
        let (mean, ci) = match mean_ci(&values) {
            Some((m, ci)) => (Cell::Float(m), Cell::opt_f(ci)),
            None => (Cell::Missing, Cell::Missing),
        };
        out.push((format!("{name}_mean"), mean));
        out.push((format!("{name}_ci95"), ci));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_ci_of_known_values() {
        let (m, ci) = mean_ci(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(m, 2.5);
        // sd = 1.290994, se = 0.645497, t(3) = 3.182
        assert!((ci.unwrap() - 3.182 * 0.645_497_224).abs() < 1e-6);
        assert_eq!(mean_ci(&[5.0]), Some((5.0, None)));
        assert_eq!(mean_ci(&[]), None);
    }

    #[test]
    fn recovered_becomes_a_fraction_and_aborted_a_count() {
        let row = |rec: Option<bool>, x: f64, aborted: Option<&str>| {
            vec![
                (
                    "recovered".to_string(),
                    rec.map_or(Cell::Missing, Cell::Bool),
                ),
                ("x".to_string(), Cell::Float(x)),
                (
                    "aborted".to_string(),
                    aborted.map_or(Cell::Missing, |a| Cell::Text(a.into())),
                ),
                ("label".to_string(), Cell::Text("skipped".into())),
            ]
        };
        let aborted = row(None, 5.0, Some("max_events reached"));
        let agg = aggregate(&[
            row(Some(true), 1.0, None),
            row(Some(false), 3.0, None),
            aborted,
        ]);
        let names: Vec<&str> = agg.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "replicates",
                "recovered_fraction",
                "x_mean",
                "x_ci95",
                "aborted_runs"
            ]
        );
        assert_eq!(agg[1].1, Cell::Float(0.5), "of the runs with a verdict");
        assert_eq!(
            agg[2].1,
            Cell::Float(2.0),
            "over the runs that reached their end"
        );
        assert_eq!(agg[4].1, Cell::Int(1), "one run stopped early");
    }
}
