//! How a run is judged to have recovered after its trigger (see README,
//! "Recovery and metastability").

use crate::engine::Nanos;

#[derive(Clone, Copy, Debug)]
pub struct RecoveryCriteria {
    /// Start of the trigger (first incident or schedule change); buckets
    /// before it give the baseline success ratio.
    pub trigger_start: Option<Nanos>,
    /// End of the trigger; recovery is measured from here.
    pub trigger_end: Option<Nanos>,
    pub threshold: f64,
    pub window: Nanos,
}
