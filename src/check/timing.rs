//! How long one logical request can take when every attempt fails slowly
//! (times out): per retry, the worst and the mean backoff sleep of the
//! layer's jitter mode; per layer, attempts × attempt time + sleeps, bounded
//! by `total_timeout` and `max_elapsed`; inner layers bound the attempt
//! time of outer ones. Formulas: README.md ("The model": backoff and jitter) and
//! `model::backoff` (which cites docs/sources/presets.md §5 for polly_v2); Retry-After
//! waits per mode from `model::retry::RetryAfterMode` (docs/sources/presets.md §1.3,
//! §2, §3, §5, §9.1). All times in seconds; `None` = unbounded.

use crate::engine::NS_PER_S;
use crate::model::CallPolicy;
use crate::model::backoff::{Backoff, Jitter};
use crate::model::retry::RetryAfterMode;

/// The worst and mean sleep before retry `n` (n >= 1), in seconds.
pub fn sleep_bounds(b: &Backoff, jitter: Jitter, n: u32) -> (f64, f64) {
    let secs = |ns: u64| ns as f64 / NS_PER_S as f64;
    let d = secs(b.delay(n));
    let cap = secs(b.cap());
    match jitter {
        Jitter::None => (d, d),
        Jitter::Full => (d, d / 2.0),
        Jitter::Equal => (d, 0.75 * d),
        Jitter::Proportional(f) => (d * (1.0 + f), d),
        Jitter::Decorrelated => {
            // min(cap, U(base, 3 prev)), prev starting at base: the worst is
            // base × 3^n; the mean follows m_n = (base + 3 m_{n-1}) / 2
            // (the cap taken after the mean: an approximation).
            let base = secs(b.base());
            let worst = (base * 3f64.powi(n.min(1000) as i32)).min(cap);
            let mut m = base;
            for _ in 0..n.min(1000) {
                m = ((base + 3.0 * m) / 2.0).min(cap);
            }
            (worst, m)
        }
        Jitter::PollyV2 => {
            // Sleep n = (f(t_n) − f(t_{n−1})) / 1.4 × base, t_n ∈ [n−1, n),
            // f(t) = 2^t tanh(√(4t)): worst f(n) − f(n−2) (f(t<0) = 0), mean
            // E f(n−1+U) − E f(n−2+U).
            let base = secs(b.base());
            let n = n.min(1000) as f64;
            let worst = (polly_f(n) - polly_f(n - 2.0)) / 1.4 * base;
            let mean = (mean_polly_f(n - 1.0) - mean_polly_f(n - 2.0)) / 1.4 * base;
            (worst.min(cap), mean.min(cap))
        }
    }
}

/// Polly's 2^t · tanh(√(4t)), 0 for t <= 0.
fn polly_f(t: f64) -> f64 {
    if t <= 0.0 {
        0.0
    } else {
        2f64.powf(t) * (4.0 * t).sqrt().tanh()
    }
}

/// E[f(a + U)], U uniform on [0, 1), by the midpoint rule.
fn mean_polly_f(a: f64) -> f64 {
    if a < 0.0 {
        return 0.0;
    }
    const STEPS: usize = 200;
    (0..STEPS)
        .map(|i| polly_f(a + (i as f64 + 0.5) / STEPS as f64))
        .sum::<f64>()
        / STEPS as f64
}

/// The longest and the mean wait a Retry-After of `ra` seconds causes in
/// this mode, given the backoff's worst `t_worst` and mean `t_mean`.
pub fn retry_after_wait(mode: RetryAfterMode, ra: f64, t_worst: f64, t_mean: f64) -> (f64, f64) {
    let s = |ns: u64| ns as f64 / NS_PER_S as f64;
    match mode {
        RetryAfterMode::Ignore => (t_worst, t_mean),
        RetryAfterMode::AtLeast { cap, jitter } => {
            let want = ra.min(s(cap));
            (
                t_worst.max(want * (1.0 + jitter)),
                t_mean.max(want * (1.0 + jitter / 2.0)),
            )
        }
        RetryAfterMode::Exact | RetryAfterMode::GrpcPushback => (ra, ra),
        RetryAfterMode::AwsClamp { window } => (
            ra.clamp(t_worst, t_worst + s(window)),
            ra.clamp(t_mean, t_mean + s(window)),
        ),
        RetryAfterMode::Envoy { max } => {
            if ra > 0.001 && ra <= s(max) {
                (1.5 * ra, 1.25 * ra)
            } else {
                (t_worst, t_mean)
            }
        }
    }
}

/// The worst case of one call at `l` in words. Its time is the same
/// bound (attempts × attempt time + sleeps) whatever the policy retries,
/// but what happens in it differs: a policy that retries timeouts has
/// every attempt time out; one that does not retries only the failures it
/// lists, each of which can come just before the attempt's timeout, and
/// the last attempt times out. A layer without a timeout of its own times
/// nothing out: its attempts last as long as the call below them
/// (`bounded`: that call has a bound), or, when nothing below gives up,
/// its first attempt hangs and no retry ever goes.
///
/// When `total_timeout` or `max_elapsed` is what bounds the call (`t`'s
/// `bounded_by`), the words say what fits inside that bound instead: the
/// attempts that start before `total_timeout` ends the call, or the
/// failures retried until `max_elapsed` lets no more retries start.
pub fn worst_case_words(
    l: &CallPolicy,
    layer: &crate::scenario::types::Layer,
    t: &LayerTiming,
) -> String {
    let unbounded = unbounded_words(l, layer, t.attempt_worst.is_some());
    if l.hedging.is_some() || l.retry.max_attempts <= 1 {
        return cut_words(l, t).map_or(unbounded.clone(), |c| format!("{unbounded}, {c}"));
    }
    bounded_words(l, layer, t).unwrap_or(unbounded)
}

/// How a single attempt (or a hedged call) is cut short by `total_timeout`.
fn cut_words(l: &CallPolicy, t: &LayerTiming) -> Option<String> {
    let tt = l.total_timeout?;
    t.bounded_by.iter().any(|b| b == "total_timeout").then(|| {
        format!(
            "cut short by `total_timeout` at {}",
            crate::scenario::units::Duration(tt)
        )
    })
}

/// The worst case of a retrying layer when `total_timeout` or
/// `max_elapsed` bounds it; `None` when neither does.
fn bounded_words(
    l: &CallPolicy,
    layer: &crate::scenario::types::Layer,
    t: &LayerTiming,
) -> Option<String> {
    use crate::scenario::units::Duration;
    let a = t.attempt_worst?;
    let n = l.retry.max_attempts;
    let by = |name: &str| t.bounded_by.iter().any(|b| b == name);
    let fast = retried_failures(layer);
    let slow = if l.timeout.is_none() {
        "lasting as long as the call below them".to_string()
    } else if l.retry.retry_on.timeout {
        "timing out".to_string()
    } else if fast.is_empty() {
        // Only the first attempt goes; total_timeout can only cut it.
        return cut_words(l, t).map(|c| format!("its first attempt timing out, {c}"));
    } else {
        format!(
            "failing with a retried outcome ({}) just before its timeout",
            fast.join(", ")
        )
    };
    // Start of each attempt when every one fails as late as it can, with
    // the worst sleeps between them.
    let starts = |limit: f64, strict: bool| -> u32 {
        let mut start = 0.0;
        let mut k = 1;
        while k < n {
            let next = start + a + t.sleeps_worst.get(k as usize - 1).copied().unwrap_or(0.0);
            if next > limit || (strict && next >= limit) {
                break;
            }
            start = next;
            k += 1;
        }
        k
    };
    if by("total_timeout")
        && let Some(tt) = l.total_timeout
    {
        let k = starts(tt as f64 / NS_PER_S as f64, true);
        let which = if k == n && n == 1 {
            "its one attempt cut short".to_string()
        } else if k == n {
            format!("the last of the {n} attempts cut short")
        } else if k == 1 {
            format!("only the first of the {n} attempts starts")
        } else {
            format!("{k} of the {n} attempts start")
        };
        return Some(format!(
            "attempts {slow} until `total_timeout` ends the call at {}: {which}",
            Duration(tt)
        ));
    }
    let me = l.retry.max_elapsed.filter(|_| by("max_elapsed"))?;
    let last = if l.timeout.is_none() {
        "lasting as long as the call below it"
    } else {
        "timing out"
    };
    if fast.is_empty() || l.timeout.is_none() {
        let k = starts(me as f64 / NS_PER_S as f64, false);
        return Some(format!(
            "attempts {slow} while `max_elapsed` ({}) lets retries start: {k} of the {} {}",
            Duration(me),
            crate::human::plural(n, "attempt"),
            if k == 1 { "goes" } else { "go" }
        ));
    }
    Some(format!(
        "failures that come at once ({}) retried until `max_elapsed` ({}) lets no more retries start, then the last attempt {last} (at most {})",
        fast.join(", "),
        Duration(me),
        crate::human::plural(n, "attempt")
    ))
}

/// The failures other than timeouts that `layer` retries, in words.
fn retried_failures(layer: &crate::scenario::types::Layer) -> Vec<String> {
    use crate::scenario::types::RetryOn;
    layer
        .retry
        .retry_on
        .iter()
        .filter(|on| !matches!(on, RetryOn::Timeout))
        .map(|on| match on {
            RetryOn::Timeout => "timeout".to_string(),
            RetryOn::Connection => "connection errors".to_string(),
            RetryOn::Status(c) => c.to_string(),
            RetryOn::Class(c) => format!("{c}xx"),
        })
        .collect()
}

/// `all N hedges`, or `its one hedge`.
fn all_hedges(n: u32) -> String {
    if n == 1 {
        "its one hedge".to_string()
    } else {
        format!("all {n} hedges")
    }
}

/// `the other N attempts never go`, or `the other attempt never goes`
/// (`n` the attempts after the first).
fn others_never_go(n: u32) -> String {
    if n == 1 {
        "the other attempt never goes".to_string()
    } else {
        format!("the other {n} attempts never go")
    }
}

/// The worst case with neither `total_timeout` nor `max_elapsed` binding.
fn unbounded_words(l: &CallPolicy, layer: &crate::scenario::types::Layer, bounded: bool) -> String {
    let ends = if l.timeout.is_some() {
        "its timeout"
    } else {
        "the call below it gives up"
    };
    if let Some(h) = l.hedging {
        if l.timeout.is_none() && !bounded {
            return format!(
                "{} sent, {} apart, none ever answered (no timeout, and nothing below gives up)",
                all_hedges(h.max_attempts),
                crate::scenario::units::Duration(h.delay)
            );
        }
        return format!(
            "{} sent, {} apart, none succeeding before {ends}",
            all_hedges(h.max_attempts),
            crate::scenario::units::Duration(h.delay)
        );
    }
    if l.timeout.is_none() {
        return match (l.retry.max_attempts, bounded) {
            (0 | 1, true) => "its one attempt lasting as long as the call below it".into(),
            (n, true) => format!(
                "all {n} attempts lasting as long as the call below them, each failing when it gives up (no timeout of its own)"
            ),
            (0 | 1, false) => {
                "its one attempt never answered: no timeout, and nothing below gives up".into()
            }
            (n, false) => format!(
                "its first attempt never answered: no timeout, and nothing below gives up, so {}",
                others_never_go(n - 1)
            ),
        };
    }
    let retried = retried_failures(layer);
    match l.retry.max_attempts {
        0 | 1 => "its one attempt timing out".into(),
        n if l.retry.retry_on.timeout => format!("all {n} attempts timing out"),
        n if retried.is_empty() => format!(
            "its first attempt timing out (timeouts are not retried, and nothing else is listed: {})",
            others_never_go(n - 1)
        ),
        n => format!(
            "{} failing with a retried outcome ({}) just before {ends}, then the last timing out (timeouts are not retried)",
            crate::human::plural(n - 1, "attempt"),
            retried.join(", ")
        ),
    }
}

/// Time bounds of one call at a layer.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerTiming {
    /// Worst and mean sleep before each retry (1..max_attempts).
    pub sleeps_worst: Vec<f64>,
    pub sleeps_mean: Vec<f64>,
    /// How long one attempt lasts at most (its timeout, or the inner call).
    pub attempt_worst: Option<f64>,
    pub attempt_mean: Option<f64>,
    /// One call, every attempt failing slowly: worst draws, mean draws.
    pub worst: Option<f64>,
    pub expected: Option<f64>,
    /// What bounded the call (`total_timeout`, `max_elapsed`).
    pub bounded_by: Vec<String>,
}

/// Timing of every layer, outermost first. `retry_after` is the
/// dependency's Retry-After in seconds when it sends one with a status
/// the layer retries (per layer).
pub fn layer_timings(layers: &[CallPolicy], retry_after: &[Option<f64>]) -> Vec<LayerTiming> {
    let mut out: Vec<LayerTiming> = Vec::with_capacity(layers.len());
    let mut inner: (Option<f64>, Option<f64>) = (None, None);
    for (i, l) in layers.iter().enumerate().rev() {
        let t = one_layer(l, inner, retry_after.get(i).copied().flatten());
        inner = (t.worst, t.expected);
        out.push(t);
    }
    out.reverse();
    out
}

pub(super) fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// One call at `l` when every attempt fails slowly: `inner` is how long
/// the hop below takes at most and at mean draws (`None`: it hangs, so
/// only this call's timeouts bound an attempt), `ra` the Retry-After it
/// obeys, in seconds.
pub(super) fn one_layer(
    l: &CallPolicy,
    inner: (Option<f64>, Option<f64>),
    ra: Option<f64>,
) -> LayerTiming {
    let secs = |ns: u64| ns as f64 / NS_PER_S as f64;
    let r = &l.retry;
    let retries = r.max_attempts.saturating_sub(1);
    let throttled = r.throttle_base.map(|tb| r.backoff.with_base(tb));
    let mut sleeps_worst = Vec::with_capacity(retries as usize);
    let mut sleeps_mean = Vec::with_capacity(retries as usize);
    for n in 1..=retries {
        let (mut w, m) = sleep_bounds(&r.backoff, r.jitter, n);
        if let Some(tb) = &throttled {
            w = w.max(sleep_bounds(tb, r.jitter, n).0);
        }
        let (w, m) = match ra {
            Some(ra) => {
                let (rw, rm) = retry_after_wait(r.retry_after, ra, w, m);
                (w.max(rw), rm)
            }
            None => (w, m),
        };
        sleeps_worst.push(w);
        sleeps_mean.push(m);
    }
    let timeout = l.timeout.map(secs);
    let attempt_worst = min_opt(timeout, inner.0);
    let attempt_mean = min_opt(timeout, inner.1);
    let attempts = r.max_attempts as f64;
    let total = |attempt: Option<f64>, sleeps: &[f64]| match l.hedging {
        // Hedges go `delay` apart (at once after a non-fatal failure); the
        // call lasts until the last one's attempt ends.
        Some(h) => attempt.map(|a| h.max_attempts.saturating_sub(1) as f64 * secs(h.delay) + a),
        None => attempt.map(|a| attempts * a + sleeps.iter().sum::<f64>()),
    };
    let mut worst = total(attempt_worst, &sleeps_worst);
    let mut expected = total(attempt_mean, &sleeps_mean);
    let mut bounded_by = Vec::new();
    if let Some(me) = r.max_elapsed.map(secs) {
        // No sleep ends later than max_elapsed after the call started; one
        // attempt may follow it.
        let cap = attempt_worst.map(|a| me + a);
        if cap.is_some() && min_opt(worst, cap) != worst {
            bounded_by.push("max_elapsed".to_string());
        }
        worst = min_opt(worst, cap);
        expected = min_opt(expected, attempt_mean.map(|a| me + a));
    }
    if let Some(tt) = l.total_timeout.map(secs) {
        if worst.is_none_or(|w| w > tt) {
            bounded_by.push("total_timeout".to_string());
        }
        worst = min_opt(worst, Some(tt));
        expected = min_opt(expected, Some(tt));
    }
    LayerTiming {
        sleeps_worst,
        sleeps_mean,
        attempt_worst,
        attempt_mean,
        worst,
        expected,
        bounded_by,
    }
}

/// Attempts of one call that fit in `budget` seconds at mean draws: the
/// largest k with k × attempt + sleeps before attempt k <= budget.
pub fn attempts_within(t: &LayerTiming, max_attempts: u32, budget: f64) -> u32 {
    let Some(a) = t.attempt_mean else {
        return 1;
    };
    let mut elapsed = 0.0;
    for k in 1..=max_attempts {
        if k > 1 {
            elapsed += t.sleeps_mean.get(k as usize - 2).copied().unwrap_or(0.0);
        }
        elapsed += a;
        if elapsed > budget {
            return (k - 1).max(1);
        }
    }
    max_attempts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, Purpose, Stream};
    use crate::model::backoff::{SleepState, sleep_before_retry};

    fn exp(base_ms: u64, cap_ms: u64) -> Backoff {
        Backoff::exponential(base_ms * NS_PER_MS, 2.0, cap_ms * NS_PER_MS)
    }

    #[test]
    fn bounds_match_the_formulas() {
        let b = exp(100, 1000);
        assert_eq!(sleep_bounds(&b, Jitter::None, 3), (0.4, 0.4));
        assert_eq!(sleep_bounds(&b, Jitter::Full, 3), (0.4, 0.2));
        assert_eq!(sleep_bounds(&b, Jitter::Equal, 5), (1.0, 0.75));
        let (w, m) = sleep_bounds(&b, Jitter::Proportional(0.5), 2);
        assert!((w - 0.3).abs() < 1e-12 && (m - 0.2).abs() < 1e-12);
        assert!((sleep_bounds(&b, Jitter::Decorrelated, 1).0 - 0.3).abs() < 1e-12);
        assert_eq!(sleep_bounds(&b, Jitter::Decorrelated, 4).0, 1.0);
    }

    /// The closed forms agree with sampling the model's own jitter.
    #[test]
    fn means_and_maxima_agree_with_the_model() {
        let b = exp(100, 60_000);
        let mut rng = Stream::new(2, Purpose::Jitter, 0);
        for jitter in [
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::PollyV2,
        ] {
            let n_max = 5;
            let mut sum = vec![0.0; n_max];
            let mut max = vec![0.0f64; n_max];
            let draws = 40_000;
            for _ in 0..draws {
                let mut st = SleepState::default();
                for n in 1..=n_max {
                    let s =
                        sleep_before_retry(&b, jitter, n as u32, &mut st, &mut rng) as f64 / 1e9;
                    sum[n - 1] += s / draws as f64;
                    max[n - 1] = max[n - 1].max(s);
                }
            }
            for n in 1..=n_max {
                let (w, m) = sleep_bounds(&b, jitter, n as u32);
                assert!(
                    max[n - 1] <= w + 1e-9,
                    "{jitter:?} {n}: max {} > {w}",
                    max[n - 1]
                );
                assert!(
                    (sum[n - 1] - m).abs() <= 0.03 * m,
                    "{jitter:?} {n}: mean {} vs {m}",
                    sum[n - 1]
                );
            }
        }
    }

    #[test]
    fn retry_after_modes() {
        let ra = 2.0;
        assert_eq!(
            retry_after_wait(RetryAfterMode::Ignore, ra, 0.5, 0.25),
            (0.5, 0.25)
        );
        assert_eq!(
            retry_after_wait(RetryAfterMode::Exact, ra, 0.5, 0.25),
            (2.0, 2.0)
        );
        let honor = RetryAfterMode::AtLeast {
            cap: NS_PER_S,
            jitter: 0.0,
        };
        assert_eq!(retry_after_wait(honor, ra, 0.5, 0.25), (1.0, 1.0));
        let clamp = RetryAfterMode::AwsClamp {
            window: 5 * NS_PER_S,
        };
        assert_eq!(retry_after_wait(clamp, 10.0, 0.05, 0.025), (5.05, 5.025));
        let envoy = RetryAfterMode::Envoy {
            max: 300 * NS_PER_S,
        };
        assert_eq!(retry_after_wait(envoy, ra, 0.1, 0.05), (3.0, 2.5));
    }
}
