//! Client-side throttles: gates in front of *every* attempt (first tries
//! included), unlike budgets, which only gate retries.
//!
//! - `Adaptive`: the SRE book's client-side adaptive throttling
//!   (presets.md §8): over the last `window` (2 minutes), reject locally
//!   with probability `max(0, (requests − K·accepts) / (requests + 1))`;
//!   locally rejected requests still count in `requests`; an attempt is
//!   *accepted* when it succeeds.
//! - `AwsAdaptive`: the AWS SDK adaptive retry mode's CUBIC client rate
//!   limiter, botocore's variant (presets.md §1.5): disabled until the
//!   first throttling response (429 here); then every send takes one token
//!   from a bucket whose fill rate follows CUBIC (β = 0.7, C = 0.4),
//!   bounded by twice the measured send rate (smoothing 0.8 over 0.5 s
//!   buckets), at least 0.5 tokens/s. A send that finds the bucket short
//!   waits for the token.

use crate::engine::{Nanos, Stream};

use super::window::Windowed;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThrottleConfig {
    Adaptive { k: f64, window: Nanos },
    AwsAdaptive,
}

/// Whether an attempt may be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Send it after waiting this long (0 = now).
    After(Nanos),
    /// Reject it locally.
    Reject,
}

// botocore retries/throttling.py and bucket.py (presets.md §1.5).
const BETA: f64 = 0.7;
const SCALE_C: f64 = 0.4;
const SMOOTH: f64 = 0.8;
const MEASURE_BUCKET_S: f64 = 0.5;
const MIN_FILL_RATE: f64 = 0.5;
const MIN_CAPACITY: f64 = 1.0;

#[derive(Clone, Debug)]
struct Cubic {
    enabled: bool,
    fill_rate: f64,
    capacity: f64,
    current: f64,
    last_refill_s: f64,
    measured: f64,
    last_bucket_s: f64,
    count: f64,
    w_max: f64,
    last_throttle_s: f64,
}

#[derive(Clone, Debug)]
pub struct Throttle {
    cfg: ThrottleConfig,
    requests: Option<Windowed>,
    accepts: Option<Windowed>,
    cubic: Cubic,
}

fn secs(t: Nanos) -> f64 {
    t as f64 / 1e9
}

/// Slices of the adaptive throttle's window (1 s of the SRE book's 2 min).
const WINDOW_SLICES: usize = 120;

impl Throttle {
    /// The memory one throttle of `cfg` takes.
    pub fn state_bytes(cfg: &ThrottleConfig) -> u64 {
        let own = std::mem::size_of::<Throttle>() as u64;
        match cfg {
            ThrottleConfig::Adaptive { .. } => own + 2 * Windowed::heap_bytes(WINDOW_SLICES),
            ThrottleConfig::AwsAdaptive => own,
        }
    }

    pub fn new(cfg: ThrottleConfig) -> Self {
        let (requests, accepts) = match cfg {
            ThrottleConfig::Adaptive { window, .. } => (
                Some(Windowed::new(window, WINDOW_SLICES)),
                Some(Windowed::new(window, WINDOW_SLICES)),
            ),
            ThrottleConfig::AwsAdaptive => (None, None),
        };
        Throttle {
            cfg,
            requests,
            accepts,
            // botocore's initial state: max_rate 1 (fill 1/s, capacity 1),
            // current 0, w_max 0; none of it matters until enabled.
            cubic: Cubic {
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
            },
        }
    }

    /// The SRE rejection probability now.
    fn reject_probability(&mut self, now: Nanos, k: f64) -> f64 {
        let req = self.requests.as_mut().map_or(0.0, |w| w.total(now));
        let acc = self.accepts.as_mut().map_or(0.0, |w| w.total(now));
        ((req - k * acc) / (req + 1.0)).max(0.0)
    }

    /// Asks to send an attempt now.
    pub fn admit(&mut self, now: Nanos, rng: &mut Stream) -> Admit {
        match self.cfg {
            ThrottleConfig::Adaptive { k, .. } => {
                let p = self.reject_probability(now, k);
                if let Some(r) = self.requests.as_mut() {
                    r.add(now, 1.0);
                }
                if p > 0.0 && rng.chance(p) {
                    Admit::Reject
                } else {
                    Admit::After(0)
                }
            }
            ThrottleConfig::AwsAdaptive => {
                let c = &mut self.cubic;
                if !c.enabled {
                    return Admit::After(0);
                }
                refill(c, secs(now));
                c.current -= 1.0;
                if c.current >= 0.0 {
                    Admit::After(0)
                } else {
                    let wait_s = -c.current / c.fill_rate;
                    Admit::After((wait_s * 1e9).ceil() as Nanos)
                }
            }
        }
    }

    /// The response to an attempt arrived: `accepted` when it succeeded,
    /// `throttled` when it was a throttling error.
    pub fn on_response(&mut self, now: Nanos, accepted: bool, throttled: bool) {
        match self.cfg {
            ThrottleConfig::Adaptive { .. } => {
                if accepted && let Some(a) = self.accepts.as_mut() {
                    a.add(now, 1.0);
                }
            }
            ThrottleConfig::AwsAdaptive => cubic_update(&mut self.cubic, secs(now), throttled),
        }
    }

    /// For the time series: the rejection probability (adaptive) or the
    /// token fill rate per second (AWS; 0 while disabled).
    pub fn level(&mut self, now: Nanos) -> f64 {
        match self.cfg {
            ThrottleConfig::Adaptive { k, .. } => self.reject_probability(now, k),
            ThrottleConfig::AwsAdaptive => {
                if self.cubic.enabled {
                    self.cubic.fill_rate
                } else {
                    0.0
                }
            }
        }
    }
}

fn refill(c: &mut Cubic, now_s: f64) {
    let dt = (now_s - c.last_refill_s).max(0.0);
    c.current = (c.current + dt * c.fill_rate).min(c.capacity);
    c.last_refill_s = now_s;
}

/// botocore `ClientRateLimiter.on_receiving_response`.
fn cubic_update(c: &mut Cubic, now_s: f64, throttled: bool) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, NS_PER_S, Purpose};

    #[test]
    fn sre_throttle_rejects_about_requests_minus_twice_accepts() {
        let mut t = Throttle::new(ThrottleConfig::Adaptive {
            k: 2.0,
            window: 120 * NS_PER_S,
        });
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        // A backend that accepts nothing: after a while almost all is rejected.
        let mut rejected = 0;
        for i in 0..10_000u64 {
            if t.admit(i * NS_PER_MS, &mut rng) == Admit::Reject {
                rejected += 1;
            }
        }
        assert!(rejected > 9_900, "{rejected}");
        // With every request accepted, nothing is rejected.
        let mut ok = Throttle::new(ThrottleConfig::Adaptive {
            k: 2.0,
            window: 120 * NS_PER_S,
        });
        for i in 0..1000u64 {
            assert_eq!(ok.admit(i * NS_PER_MS, &mut rng), Admit::After(0));
            ok.on_response(i * NS_PER_MS, true, false);
        }
        // Probability formula: 10 requests, 3 accepts, K = 2: (10 - 6) / 11.
        let mut f = Throttle::new(ThrottleConfig::Adaptive {
            k: 2.0,
            window: 120 * NS_PER_S,
        });
        for i in 0..10u64 {
            f.requests.as_mut().unwrap().add(i, 1.0);
        }
        for i in 0..3u64 {
            f.accepts.as_mut().unwrap().add(i, 1.0);
        }
        assert!((f.level(10) - 4.0 / 11.0).abs() < 1e-12);
    }

    #[test]
    fn aws_adaptive_is_off_until_a_throttle_then_limits_the_rate() {
        let mut t = Throttle::new(ThrottleConfig::AwsAdaptive);
        let mut rng = Stream::new(1, Purpose::Jitter, 0);
        // 100 sends per second for 2 s, no throttling: never delayed.
        for i in 0..200u64 {
            let now = i * 10 * NS_PER_MS;
            assert_eq!(t.admit(now, &mut rng), Admit::After(0));
            t.on_response(now, true, false);
        }
        assert_eq!(t.level(2 * NS_PER_S), 0.0);
        // A throttle: the fill rate drops to β × the measured rate.
        t.on_response(2 * NS_PER_S, false, true);
        let rate = t.level(2 * NS_PER_S);
        assert!((rate - 0.7 * t.cubic.measured).abs() < 1e-9, "{rate}");
        assert!(rate > 30.0 && rate < 100.0, "{rate}");
        // Sending faster than the fill rate now waits.
        let mut waited = false;
        for i in 0..100u64 {
            if let Admit::After(w) = t.admit(2 * NS_PER_S + i, &mut rng) {
                waited |= w > 0;
            }
        }
        assert!(waited);
        // CUBIC growth: long after the throttle the rate is back above w_max,
        // bounded by twice the measured rate.
        let later = 10.0;
        let k = (t.cubic.w_max * 0.3 / 0.4).cbrt();
        let expect = 0.4 * (later - 2.0 - k).powi(3) + t.cubic.w_max;
        t.cubic.measured = 1e9; // lift the 2 × measured bound for the check
        t.on_response(10 * NS_PER_S, true, false);
        assert!((t.cubic.fill_rate - expect).abs() / expect < 1e-9);
    }
}
