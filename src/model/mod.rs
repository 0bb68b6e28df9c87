//! The model of a retry storm: clients, call edges with their callers'
//! retry policies, and capacity-limited services with incidents, on an
//! explicit topology. It knows nothing of files; it takes a `ModelConfig`
//! and reports into a `metrics::Recorder`.

pub mod adaptive;
pub mod autoscale;
pub mod backoff;
pub mod balancer;
pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod cache;
pub mod capacity;
pub mod config;
pub mod gates;
pub mod level;
pub mod occ;
pub mod outcome;
pub mod outlier;
pub mod pool;
pub mod priority;
pub mod rate;
pub mod retry;
mod scoped;
pub mod server;
pub mod service;
mod slab;
pub mod slowdown;
pub mod throttle;
pub mod topology;
pub mod window;
pub mod world;

pub use crate::metrics::{RecoveryCriteria, RunInfo};
pub use config::{CallPolicy, ClosedLoop, ConsumerConfig, Limits, ModelConfig};
pub use topology::{EdgeConfig, EdgeId, ReplicaId, ServiceId, Topology};
pub use world::World;
