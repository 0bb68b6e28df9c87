//! The record of one run, as the runner hands it to the report: which
//! variant and replicate it was, its seed, its swept values, its tables
//! (time-series rows, summary, services and calls) and the invariants it
//! broke. Everything the report prints comes from these records and the
//! run's shape (`super::shape`), never from the runner itself.

use crate::engine::derive_seed;
use crate::metrics::{ClassRow, EdgeInfo, GraphTables, ServiceInfo, Summary, TimeRow};

/// The outcome of one (variant, replicate).
#[derive(Clone, Debug)]
pub struct RunResult {
    pub variant: String,
    pub variant_index: usize,
    pub replicate: u32,
    pub seed: u64,
    pub layer_names: Vec<String>,
    pub params: Vec<(String, String)>,
    pub rows: Vec<TimeRow>,
    pub summary: Summary,
    /// The graph's services and call edges, and their tables.
    pub services: Vec<ServiceInfo>,
    pub edges: Vec<EdgeInfo>,
    pub graph: GraphTables,
    /// Per priority class of the clients (empty without classes).
    pub classes: Vec<ClassRow>,
    /// Invariants this run broke (`invariants`): a bug in stormsim.
    pub violations: Vec<String>,
}

/// The seed of replicate `r` (the same for every variant).
pub fn replicate_seed(scenario_seed: u64, replicate: u32) -> u64 {
    derive_seed(&[scenario_seed, replicate as u64])
}
