//! The discrete-event engine: simulated time, the event queue and random
//! streams. It knows nothing of retries, layers or dependencies: it orders
//! opaque `Copy` events by (time, sequence) and hands them back one by one.
//!
//! Cancellable timers are the model's business and cost nothing here: an
//! event carries the generation of the entity it belongs to, and the handler
//! drops it when the entity has moved on (see `model::sim`).

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::{EventKind, EventQueue};
pub use rng::{Purpose, Stream, derive_seed};
pub use time::{NS_PER_MS, NS_PER_S, NS_PER_US, Nanos};
