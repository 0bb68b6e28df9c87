//! Identities between the cells of one table row that hold in every run
//! stormsim makes, exactly as the writer computes them (`metrics::table`,
//! `metrics::columns`), checked by [`super::table_check`] after each cell
//! has its column's type:
//!
//! - `timeseries.csv`: `attempts` is the outermost layer's attempts (the
//!   first `attempts_<layer>` column: the recorder counts an attempt in
//!   `attempts` only at layer 0); a bucket with 0 `succeeded` has a
//!   `goodput` of 0;
//! - `summary.csv`: a run with 0 `succeeded` has a `goodput` of 0;
//!   `amplification` is `dependency_attempts / logical_requests`, within
//!   the rounding to six decimals (and empty without a logical request).
//!
//! Not checked, because they do not hold exactly for every run:
//! `dependency_attempts` against the innermost layer's attempts and the
//! probes (the focus service also counts pool connects, and in a graph
//! any caller's attempts), and counters of `services_timeseries.csv`
//! against each other (a request arrives in one bucket and is served in
//! a later one).
//!
//! A problem is the column (0-based) and what is wrong; the caller adds
//! the file, line and run.

use csv::StringRecord;

/// The slack of a ratio written rounded to six decimals: half the last
/// decimal, and a little more for the float's own error.
fn close(written: f64, exact: f64) -> bool {
    (written - exact).abs() <= 5e-7 + 1e-9 + exact.abs() * 1e-12
}

fn col(header: &[String], name: &str) -> Option<usize> {
    header.iter().position(|h| h == name)
}

fn number(rec: &StringRecord, i: usize) -> Option<f64> {
    rec.get(i).filter(|t| !t.is_empty())?.parse::<f64>().ok()
}

fn whole(rec: &StringRecord, i: usize) -> Option<u64> {
    rec.get(i).filter(|t| !t.is_empty())?.parse::<u64>().ok()
}

/// A `goodput` above 0 where nothing succeeded.
fn goodput(
    header: &[String],
    rec: &StringRecord,
    succeeded: Option<u64>,
) -> Result<(), (usize, String)> {
    if let (Some(0), Some(gi)) = (succeeded, col(header, "goodput"))
        && let Some(g) = number(rec, gi).filter(|&g| g > 0.0)
    {
        return Err((
            gi,
            format!(
                "goodput is {}, but succeeded is 0; goodput is the requests that succeeded \
                 per second",
                crate::metrics::columns::format_float(g)
            ),
        ));
    }
    Ok(())
}

/// The identities of a `timeseries.csv` row; `counts`: its count cells,
/// parsed (None: empty, or not a count column).
pub fn bucket(
    header: &[String],
    rec: &StringRecord,
    counts: &[Option<u64>],
) -> Result<(), (usize, String)> {
    let count = |name: &str| col(header, name).and_then(|i| counts.get(i).copied().flatten());
    goodput(header, rec, count("succeeded"))?;
    let outer = header.iter().position(|h| h.starts_with("attempts_"));
    if let (Some(ai), Some(li)) = (col(header, "attempts"), outer)
        && let (Some(a), Some(l)) = (counts[ai], counts[li])
        && a != l
    {
        return Err((
            ai,
            format!(
                "attempts is {a}, but {} = {l}; attempts counts the attempts of the \
                 outermost layer",
                crate::escape::escape(&header[li])
            ),
        ));
    }
    Ok(())
}

/// The identities of a `summary.csv` row.
pub fn summary(header: &[String], rec: &StringRecord) -> Result<(), (usize, String)> {
    let get = |name: &str| col(header, name).and_then(|i| whole(rec, i));
    goodput(header, rec, get("succeeded"))?;
    if let (Some(ai), Some(lr), Some(da)) = (
        col(header, "amplification"),
        get("logical_requests"),
        get("dependency_attempts"),
    ) {
        let written = number(rec, ai);
        let bad = match (lr, written) {
            (0, Some(_)) => true,
            (0, None) => false,
            (_, None) => true,
            (_, Some(w)) => !close(w, da as f64 / lr as f64),
        };
        if bad {
            let shown = rec.get(ai).unwrap_or("");
            let exact = if lr == 0 {
                "empty (no logical request)".to_string()
            } else {
                crate::metrics::columns::format_float(da as f64 / lr as f64)
            };
            return Err((
                ai,
                format!(
                    "amplification is `{}`, but dependency_attempts / logical_requests = \
                     {da} / {lr} = {exact}",
                    crate::escape::escape(shown)
                ),
            ));
        }
    }
    Ok(())
}
