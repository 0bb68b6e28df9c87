//! Metrics: what a run records (`recorder`), and the tables computed from
//! it (`table`: time-series rows and the per-run summary, including
//! recovery and the metastability verdict). The report reads only these.

pub mod abort;
pub mod aggregate;
pub mod classes;
pub mod columns;
pub mod criteria;
pub mod gauge;
pub mod reason;
pub mod recorder;
pub mod run;
pub mod services;
pub mod shape;
pub mod slo;
pub mod table;

pub use abort::Abort;
pub use classes::ClassRow;
pub use columns::Cell;
pub use criteria::RecoveryCriteria;
pub use reason::Reason;
pub use recorder::Recorder;
pub use run::RunResult;
pub use services::{EdgeInfo, GraphTables, ServiceInfo};
pub use table::{RunContext, RunInfo, Summary, TimeRow, tabulate, tabulate_services};
