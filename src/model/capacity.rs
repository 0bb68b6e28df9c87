//! The capacity a service has over time, from its incident schedule alone:
//! the fraction of its nominal capacity (workers ÷ mean service time) it
//! can serve at each moment. This is what the figures after an incident
//! judge load against (`peak_effective_load_ratio`), and the time they
//! leave out (`success_rate_outside_incidents`).
//!
//! It follows [`Server`](super::server::Server) exactly: 0 while the
//! service is `down` (every request refused) or blackholed (every request
//! swallowed); the product of the `brownout` fractions under way; times
//! the warm-up ramp, from `warmup_from` to 1 over `warmup`, that starts
//! at the end of every `down`, `blackhole` or `brownout` (the last one
//! ended restarts it). Error bursts, added latency and a cache flush
//! leave capacity whole.

use crate::engine::Nanos;

use super::server::{Effect, ServiceConfig};

/// The fraction of nominal capacity `cfg` has at time `t` (ns, as a
/// float so that a piece's midpoint is exact). An incident covers
/// `[start, end)`. With replicas, the mean of their factors (an incident
/// may hit only some of them).
pub fn factor_at(cfg: &ServiceConfig, t: f64) -> f64 {
    let n = cfg.replicas.max(1);
    if n == 1 || cfg.incidents.iter().all(|i| i.replica.is_none()) {
        return replica_factor_at(cfg, None, t);
    }
    (0..n)
        .map(|r| replica_factor_at(cfg, Some(r), t))
        .sum::<f64>()
        / n as f64
}

/// Replicas of `cfg` serving at time `t`: neither down nor blackholed.
pub fn replicas_up_at(cfg: &ServiceConfig, t: Nanos) -> u32 {
    let n = cfg.replicas.max(1);
    (0..n)
        .filter(|&r| {
            !cfg.incidents.iter().any(|i| {
                i.hits(r)
                    && matches!(i.effect, Effect::Down | Effect::Blackhole)
                    && i.start <= t
                    && t < i.end
            })
        })
        .count() as u32
}

/// [`factor_at`] of replica `r` alone (`None`: every incident counts).
fn replica_factor_at(cfg: &ServiceConfig, r: Option<u32>, t: f64) -> f64 {
    let active = |start: Nanos, end: Nanos| start as f64 <= t && t < end as f64;
    let mut f = 1.0;
    let mut warm_start: Option<Nanos> = None;
    for inc in cfg.incidents.iter().filter(|i| r.is_none_or(|r| i.hits(r))) {
        if active(inc.start, inc.end) {
            match inc.effect {
                Effect::Down | Effect::Blackhole => return 0.0,
                Effect::Brownout { capacity } => f *= capacity,
                Effect::Errors { .. } | Effect::Latency { .. } | Effect::Flush => {}
            }
        }
        if inc.effect.needs_warmup() && inc.end as f64 <= t {
            warm_start = Some(warm_start.map_or(inc.end, |w| w.max(inc.end)));
        }
    }
    if let Some(w) = warm_start
        && cfg.warmup > 0
    {
        let since = t - w as f64;
        if since < cfg.warmup as f64 {
            f *= cfg.warmup_from + (1.0 - cfg.warmup_from) * since / cfg.warmup as f64;
        }
    }
    f
}

/// Whether capacity ever differs from nominal.
pub fn varies(cfg: &ServiceConfig) -> bool {
    cfg.incidents.iter().any(|i| {
        !matches!(
            i.effect,
            Effect::Errors { .. } | Effect::Latency { .. } | Effect::Flush
        )
    })
}

/// The mean of [`factor_at`] over `[from, to)`, exactly: between the
/// times where an incident starts or ends or a warm-up is over the factor
/// is linear (a constant times the ramp), so each piece's mean is its
/// value at the piece's midpoint.
pub fn mean_factor(cfg: &ServiceConfig, from: Nanos, to: Nanos) -> f64 {
    if to <= from {
        return factor_at(cfg, from as f64);
    }
    let mut cuts: Vec<Nanos> = vec![from, to];
    for inc in &cfg.incidents {
        for t in [inc.start, inc.end, inc.end.saturating_add(cfg.warmup)] {
            if from < t && t < to {
                cuts.push(t);
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let sum: f64 = cuts
        .windows(2)
        .map(|w| {
            let (a, b) = (w[0] as f64, w[1] as f64);
            factor_at(cfg, (a + b) / 2.0) * (b - a)
        })
        .sum();
    sum / (to - from) as f64
}

/// The mean factor of each bucket of a run of `duration` cut into buckets
/// of `bucket` (the last may be short); empty when capacity never varies
/// (every bucket whole).
pub fn per_bucket(cfg: &ServiceConfig, bucket: Nanos, duration: Nanos) -> Vec<f64> {
    if !varies(cfg) || bucket == 0 {
        return Vec::new();
    }
    let n = duration.div_ceil(bucket).max(1);
    (0..n)
        .map(|b| {
            let start = b * bucket;
            mean_factor(cfg, start, (start + bucket).min(duration))
        })
        .collect()
}

/// [`replicas_up_at`] at the last instant of each bucket; empty when no
/// incident ever takes a replica out.
pub fn replicas_up_per_bucket(cfg: &ServiceConfig, bucket: Nanos, duration: Nanos) -> Vec<u32> {
    let out = |e: Effect| matches!(e, Effect::Down | Effect::Blackhole);
    if bucket == 0 || !cfg.incidents.iter().any(|i| out(i.effect)) {
        return Vec::new();
    }
    let n = duration.div_ceil(bucket).max(1);
    (0..n)
        .map(|b| replicas_up_at(cfg, ((b + 1) * bucket).min(duration) - 1))
        .collect()
}

/// The time an incident of `cfg` disturbs: each incident from its start
/// to its end, and on through the warm-up after it when it needs one.
pub fn disturbed(cfg: &ServiceConfig) -> impl Iterator<Item = (Nanos, Nanos)> + '_ {
    cfg.incidents.iter().map(|i| {
        let warm = if i.effect.needs_warmup() {
            cfg.warmup
        } else {
            0
        };
        (i.start, i.end.saturating_add(warm))
    })
}

/// Windows merged into a sorted list of disjoint `[start, end)` spans.
pub fn merge_windows(mut w: Vec<(Nanos, Nanos)>) -> Vec<(Nanos, Nanos)> {
    w.retain(|(a, b)| b > a);
    w.sort_unstable();
    let mut out: Vec<(Nanos, Nanos)> = Vec::with_capacity(w.len());
    for (a, b) in w {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NS_PER_S;
    use crate::model::server::{Incident, Server};
    use crate::model::service::ServiceDist;

    const S: Nanos = NS_PER_S;

    fn svc(incidents: Vec<Incident>, warmup: Nanos) -> ServiceConfig {
        let mut c = ServiceConfig::leaf("db", 4, ServiceDist::Constant(1_000_000), 10);
        c.incidents = incidents;
        c.warmup = warmup;
        c.warmup_from = 0.2;
        c
    }

    fn inc(start: Nanos, end: Nanos, effect: Effect) -> Incident {
        Incident {
            start,
            end,
            effect,
            replica: None,
        }
    }

    /// The factor is what a live server has: its brownout and warm-up
    /// (`Server::capacity_factor`), and nothing while down or blackholed.
    #[test]
    fn agrees_with_the_live_server() {
        let cfg = svc(
            vec![
                inc(10 * S, 20 * S, Effect::Down),
                inc(15 * S, 40 * S, Effect::Brownout { capacity: 0.5 }),
                inc(50 * S, 55 * S, Effect::Blackhole),
                inc(
                    60 * S,
                    70 * S,
                    Effect::Errors {
                        rate: 0.5,
                        status: 503,
                    },
                ),
            ],
            8 * S,
        );
        let mut events: Vec<(Nanos, bool, Effect)> = cfg
            .incidents
            .iter()
            .flat_map(|i| [(i.start, true, i.effect), (i.end, false, i.effect)])
            .collect();
        events.sort_by_key(|e| (e.0, e.1));
        let mut server: Server<()> = Server::default();
        let (mut down, mut next) = (0i32, 0);
        for t in (0..100 * S).step_by((S / 4) as usize) {
            while next < events.len() && events[next].0 <= t {
                let (at, starts, effect) = events[next];
                server.on_incident(effect, starts, at);
                if matches!(effect, Effect::Down | Effect::Blackhole) {
                    down += if starts { 1 } else { -1 };
                }
                next += 1;
            }
            let live = if down > 0 {
                0.0
            } else {
                server.capacity_factor(&cfg, t)
            };
            let ours = factor_at(&cfg, t as f64);
            assert!((live - ours).abs() < 1e-12, "at {t}: {live} vs {ours}");
        }
    }

    #[test]
    fn bucket_means_are_exact() {
        // Down 10 s to 20 s, then a ramp from 0.2 to 1 over 10 s.
        let cfg = svc(vec![inc(10 * S, 20 * S, Effect::Down)], 10 * S);
        let b = per_bucket(&cfg, 5 * S, 40 * S);
        assert_eq!(b.len(), 8);
        assert_eq!(&b[..2], &[1.0, 1.0]);
        assert_eq!(&b[2..4], &[0.0, 0.0]);
        // 20-25 s: the ramp from 0.2 to 0.6, mean 0.4; 25-30 s: 0.6 to 1.
        assert!((b[4] - 0.4).abs() < 1e-12, "{}", b[4]);
        assert!((b[5] - 0.8).abs() < 1e-12, "{}", b[5]);
        assert_eq!(&b[6..], &[1.0, 1.0]);
        // A bucket across the end: half down, then the ramp's first 2.5 s
        // (0.2 to 0.4, mean 0.3).
        let m = mean_factor(&cfg, 17 * S + S / 2, 22 * S + S / 2);
        assert!((m - 0.15).abs() < 1e-12, "{m}");
        // Error bursts leave capacity whole.
        let errors = svc(
            vec![inc(
                1,
                2,
                Effect::Errors {
                    rate: 1.0,
                    status: 503,
                },
            )],
            10 * S,
        );
        assert!(per_bucket(&errors, S, 10 * S).is_empty());
    }

    #[test]
    fn windows_cover_incidents_and_warm_up() {
        let cfg = svc(
            vec![
                inc(10 * S, 20 * S, Effect::Down),
                inc(25 * S, 26 * S, Effect::Latency { add: 1 }),
                inc(60 * S, 61 * S, Effect::Brownout { capacity: 0.5 }),
            ],
            10 * S,
        );
        let w = merge_windows(disturbed(&cfg).collect());
        assert_eq!(w, vec![(10 * S, 30 * S), (60 * S, 71 * S)]);
        assert_eq!(
            merge_windows(vec![(5, 9), (1, 3), (2, 4), (9, 9)]),
            vec![(1, 4), (5, 9)]
        );
    }
}
