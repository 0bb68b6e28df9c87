//! Scenario files: the YAML format (`types`), units, loading with precise
//! error locations, validation, overrides (`--set` and variants), and the
//! translation into the model's configuration.

pub mod types;
pub mod units;

pub use types::Scenario;
