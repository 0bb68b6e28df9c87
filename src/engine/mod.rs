//! The discrete-event engine: simulated time, the event queue and random
//! streams. It knows nothing of retries, layers or dependencies: it orders
//! opaque `Copy` events by (time, sequence) and hands them back one by one.
//!
//! Every scheduled event has a handle ([`TimerId`]); the model cancels a
//! timer through it when the state the timer belongs to moves on (an
//! attempt answered before its timeout), and a cancelled event is never
//! delivered.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::{EventKind, EventQueue, TimerId};
pub use rng::{Purpose, Stream, derive_seed};
pub use time::{NS_PER_MS, NS_PER_S, NS_PER_US, Nanos};
