//! Scenario files: the YAML format (`types`), units, loading with precise
//! error locations, validation, overrides (`--set` and variants), and the
//! translation into the model's configuration.

pub mod adaptive;
pub mod build;
pub mod cache;
pub mod collect;
pub mod defaults;
pub mod error;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod fleet;
pub mod from_file;
pub mod graph;
#[cfg(test)]
mod graph_tests;
pub mod load;
pub mod locate;
pub mod memory;
pub mod overrides;
pub mod presets;
pub mod priority;
pub mod ranges;
pub mod resolved;
pub mod schema;
pub mod slo;
pub mod suggest;
mod text_numbers;
pub mod tune;
pub mod types;
pub mod units;
pub mod validate;
mod validate_graph;
mod validate_hops;
mod validate_policy;
pub mod variants;
pub mod yaml_words;

pub use build::{to_model, to_occ};
pub use error::{ScenarioError, ScenarioErrors};
pub use load::{
    Loaded, load_bytes, load_file, load_file_with, load_str, load_str_in, load_str_with,
};
pub use overrides::{apply_set, apply_sets, parse_set_arg, show_as_typed};
pub use resolved::resolved_yaml;
pub use types::Scenario;
pub use validate::{Issue, validate};
pub use variants::{Expanded, expand_all, expand_variants};
