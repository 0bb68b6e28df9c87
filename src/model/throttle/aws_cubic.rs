//! The AWS SDKs' adaptive retry mode: botocore's CUBIC client rate
//! limiter (boto/botocore `botocore/retries/throttling.py` and
//! `bucket.py`; docs/sources/presets.md §1.5). Disabled until the first
//! throttling response (429 here); then every send takes one token from a
//! bucket whose fill rate follows CUBIC (β = 0.7, C = 0.4), bounded by
//! twice the measured send rate (smoothed by 0.8 over 0.5 s buckets), at
//! least 0.5 tokens/s. A send that finds the bucket short waits for its
//! token.

use crate::engine::Nanos;

use super::Admit;

// botocore retries/throttling.py and bucket.py.
const BETA: f64 = 0.7;
const SCALE_C: f64 = 0.4;
const SMOOTH: f64 = 0.8;
const MEASURE_BUCKET_S: f64 = 0.5;
const MIN_FILL_RATE: f64 = 0.5;
const MIN_CAPACITY: f64 = 1.0;

#[derive(Clone, Debug)]
pub struct AwsCubic {
    pub(super) enabled: bool,
    pub(super) fill_rate: f64,
    pub(super) capacity: f64,
    pub(super) current: f64,
    pub(super) last_refill_s: f64,
    pub(super) measured: f64,
    pub(super) last_bucket_s: f64,
    pub(super) count: f64,
    pub(super) w_max: f64,
    pub(super) last_throttle_s: f64,
}

fn secs(t: Nanos) -> f64 {
    t as f64 / 1e9
}

impl Default for AwsCubic {
    fn default() -> Self {
        Self::new()
    }
}

impl AwsCubic {
    /// botocore's initial state: max_rate 1 (fill 1/s, capacity 1),
    /// current 0, w_max 0; none of it matters until enabled.
    pub fn new() -> Self {
        AwsCubic {
            enabled: false,
            fill_rate: 1.0,
            capacity: 1.0,
            current: 0.0,
            last_refill_s: 0.0,
            measured: 0.0,
            last_bucket_s: 0.0,
            count: 0.0,
            w_max: 0.0,
            last_throttle_s: 0.0,
        }
    }

    pub fn admit(&mut self, now: Nanos) -> Admit {
        if !self.enabled {
            return Admit::After(0);
        }
        refill(self, secs(now));
        self.current -= 1.0;
        if self.current >= 0.0 {
            Admit::After(0)
        } else {
            let wait_s = -self.current / self.fill_rate;
            Admit::After((wait_s * 1e9).ceil() as Nanos)
        }
    }

    pub fn on_response(&mut self, now: Nanos, throttled: bool) {
        cubic_update(self, secs(now), throttled);
    }

    /// The fill rate in tokens per second (0 while disabled).
    pub fn level(&self) -> f64 {
        if self.enabled { self.fill_rate } else { 0.0 }
    }
}

fn refill(c: &mut AwsCubic, now_s: f64) {
    let dt = (now_s - c.last_refill_s).max(0.0);
    c.current = (c.current + dt * c.fill_rate).min(c.capacity);
    c.last_refill_s = now_s;
}

/// botocore `ClientRateLimiter.on_receiving_response`.
fn cubic_update(c: &mut AwsCubic, now_s: f64, throttled: bool) {
    // Measured send rate, in 0.5 s buckets, smoothed.
    c.count += 1.0;
    let bucket = (now_s / MEASURE_BUCKET_S).floor() * MEASURE_BUCKET_S;
    if bucket > c.last_bucket_s {
        let rate = c.count / (bucket - c.last_bucket_s);
        c.measured = rate * SMOOTH + c.measured * (1.0 - SMOOTH);
        c.count = 0.0;
        c.last_bucket_s = bucket;
    }
    let calculated = if throttled {
        let rate_to_use = if c.enabled {
            c.measured.min(c.fill_rate)
        } else {
            c.measured
        };
        c.w_max = rate_to_use;
        c.last_throttle_s = now_s;
        c.enabled = true;
        rate_to_use * BETA
    } else {
        let k = (c.w_max * (1.0 - BETA) / SCALE_C).cbrt();
        SCALE_C * (now_s - c.last_throttle_s - k).powi(3) + c.w_max
    };
    let new_rate = calculated.min(2.0 * c.measured);
    refill(c, now_s);
    c.fill_rate = new_rate.max(MIN_FILL_RATE);
    c.capacity = new_rate.max(MIN_CAPACITY);
    c.current = c.current.min(c.capacity);
}
