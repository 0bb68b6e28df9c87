//! The model of a retry storm: clients, layers with retry policies, and a
//! capacity-limited dependency with incidents. It knows nothing of files;
//! it takes a `ModelConfig` and reports into a `metrics::Recorder`.

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod config;
pub mod dependency;
pub mod gates;
pub mod occ;
pub mod outcome;
pub mod rate;
pub mod retry;
pub mod service;
pub mod throttle;
pub mod window;

pub use crate::metrics::RecoveryCriteria;
pub use config::{ClosedLoop, ConsumerConfig, LayerConfig, Limits, ModelConfig};
pub mod sim;
mod slab;

pub use crate::metrics::RunInfo;
pub use sim::Sim;
