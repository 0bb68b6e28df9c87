//! stormsim: a deterministic discrete-event simulator of retry storms.
//!
//! Dependencies run one way: `engine` (time, events, random streams) knows
//! nothing of retries; `model` (clients, layers, dependency) knows nothing
//! of files; `metrics` turns what the model records into tables; `report`
//! reads only metrics; `scenario` reads files and builds model configs;
//! `runner`, `shard` (runs split over machines, and their merge) and
//! `cli` tie them together; `input_file` reads what users hand in (regular
//! files only, never more than a cap) and `report::output_dir` writes only
//! into folders stormsim owns.

pub mod check;
pub mod cli;
pub mod configs;
pub mod engine;
pub mod escape;
pub mod fuzz;
pub mod human;
pub mod input_file;
pub mod interrupt;
pub mod invariants;
pub mod memory_gate;
pub mod metrics;
pub mod model;
#[cfg(unix)]
pub mod out_of_memory;
pub mod reorder;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod shard;
pub mod terminal;
pub mod tune;
pub mod workers;
