//! Scenario files: the YAML format (`types`), units, loading with precise
//! error locations, validation, overrides (`--set` and variants), and the
//! translation into the model's configuration.

pub mod error;
pub mod locate;
pub mod types;
pub mod units;

pub use error::{ScenarioError, ScenarioErrors};
pub use types::Scenario;
