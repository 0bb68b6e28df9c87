//! Reports: CSV tables written atomically into the output folder, and the
//! one-screen summary on stdout. Reads only metrics (and the run results
//! that carry them); knows nothing of the model.

pub mod console;
pub mod output_dir;
pub mod tables;

pub use output_dir::OutputDir;
