//! Reports: CSV tables written atomically into the output folder, the
//! charts and `report.html` drawn from those tables read back, and the
//! one-screen summary on stdout. Reads only metrics (and the run results
//! that carry them); knows nothing of the model.

pub mod axis;
pub mod capacity_lines;
pub mod capacity_series;
pub mod chart_data;
pub mod charts;
pub mod classes_table;
pub mod console;
pub mod figure;
pub mod folder_lock;
pub mod graph_data;
pub mod graph_figure;
pub mod graph_tables;
pub mod html;
pub mod labels;
pub mod legend;
pub mod limits_chart;
pub mod output_dir;
pub mod services_chart;
pub mod shape;
pub mod spread;
pub mod stability;
pub mod styles;
pub mod sweep;
pub mod table_check;
pub mod table_identities;
pub mod table_stream;
pub mod tables;

/// The most variants a table of the console or of `report.html` shows
/// (best first where it is ranked, in variant order otherwise); a line
/// after it says how many more there are and which CSV has them all.
/// README, "Outputs".
pub const MAX_TABLE_ROWS: usize = 40;

/// The line after a table cut at [`MAX_TABLE_ROWS`] of `total` rows:
/// `… and 60 more variants in summary_by_variant.csv`; None when nothing
/// was cut.
pub fn more_rows(total: usize, what: &str, file: &str) -> Option<String> {
    (total > MAX_TABLE_ROWS)
        .then(|| format!("… and {} more {what} in {file}", total - MAX_TABLE_ROWS))
}

pub use chart_data::ChartData;
pub use output_dir::{Mode, OutputDir, OutputError};

/// Why the charts and report could not be made.
#[derive(Debug)]
pub enum ReportError {
    /// A table or the scenario file read back is unusable (bad input).
    Table(String),
    /// Drawing failed.
    Draw(String),
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportError::Table(m) | ReportError::Draw(m) => write!(f, "{m}"),
            ReportError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for ReportError {}

impl From<crate::interrupt::Stopped> for ReportError {
    fn from(_: crate::interrupt::Stopped) -> Self {
        ReportError::Interrupted
    }
}

/// The charts (`charts/*.svg`, `charts/*.png`) and `report.html` of a
/// run, as (relative path, bytes). `stormsim run` and `stormsim plot`
/// both write exactly these, from the same tables.
pub fn visual_files(data: &ChartData) -> Result<Vec<(String, Vec<u8>)>, ReportError> {
    let charts = charts::all_charts(data)?;
    let mut files: Vec<(String, Vec<u8>)> = charts
        .iter()
        .flat_map(|c| c.files().map(|(p, b)| (p, b.to_vec())))
        .collect();
    crate::interrupt::check()?;
    files.push((
        "report.html".into(),
        html::report_html(data, &charts)?.into_bytes(),
    ));
    Ok(files)
}
