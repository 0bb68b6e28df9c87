//! Reports: CSV tables written atomically into the output folder, the
//! charts and `report.html` drawn from those tables read back, and the
//! one-screen summary on stdout. Reads only metrics (and the run results
//! that carry them); knows nothing of the model.

pub mod chart_data;
pub mod charts;
pub mod console;
pub mod figure;
pub mod graph_figure;
pub mod html;
pub mod output_dir;
pub mod sweep;
pub mod tables;

pub use chart_data::ChartData;
pub use output_dir::OutputDir;

/// The charts (`charts/*.svg`, `charts/*.png`) and `report.html` of a
/// run, as (relative path, bytes). `stormsim run` and `stormsim plot`
/// both write exactly these, from the same tables.
pub fn visual_files(data: &ChartData) -> Result<Vec<(String, Vec<u8>)>, String> {
    let charts = charts::all_charts(data)?;
    let mut files: Vec<(String, Vec<u8>)> = charts
        .iter()
        .flat_map(|c| c.files().map(|(p, b)| (p, b.to_vec())))
        .collect();
    files.push((
        "report.html".into(),
        html::report_html(data, &charts).into_bytes(),
    ));
    Ok(files)
}
