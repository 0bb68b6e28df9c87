//! `stormsim check` on capacity that changes: autoscaling and caches.
//!
//! - `autoscale-max-below-peak`: at its target utilization, an autoscaled
//!   service's `max` replicas complete fewer requests per second than the
//!   peak offered load brings it (first attempts only, no retry): the
//!   autoscaler stops at `max` with every worker busier than it aims for,
//!   or, past 100%, a queue that only grows.
//! - `autoscale-slower-than-incident`: a decision interval plus the
//!   provisioning delay (the latest a replica asked for serves after the
//!   need arises: the next decision up to an interval later, then
//!   provision) at least as long as an incident of the service, or a spike
//!   of the offered load: the replicas asked for during it may serve only
//!   after it is over (they help only if a retry storm outlives it).
//! - `cache-flush-overloads-callee`: after a flush (or a cold start) every
//!   request to a cache misses, and a callee behind it that completes
//!   fewer requests per second than that miss load queues them: a cache
//!   sized for its hit ratio leaves the service behind it too small for a
//!   flush.
//! - `cache-flush-without-coalescing`: a flush with no request coalescing
//!   sends every concurrent request for a hot key to the callee at once
//!   (a cache stampede); coalescing sends one per key.
//!
//! The load at each service is the peak rate of logical requests times
//! the calls made to it per request (fan-out included, every cache above
//! it missing), as after a flush; no retries, which only add to it.

use crate::model::ServiceId;
use crate::model::server::{Effect, ServiceConfig};
use crate::model::topology::Topology;
use crate::scenario::Scenario;
use crate::scenario::graph::DEPENDENCY;
use crate::scenario::locate::item_labels;

use super::findings::Out;
use super::{Finding, Severity};

/// Requests per second arriving at each service at the peak offered rate
/// `peak`, every call made once per request (times its fan-out), every
/// cache missing; and whether a cache is on some path into it.
fn loads(t: &Topology, peak: f64) -> Vec<(f64, bool)> {
    fn load(
        t: &Topology,
        s: ServiceId,
        peak: f64,
        memo: &mut [Option<(f64, bool)>],
    ) -> (f64, bool) {
        if let Some(l) = memo[s.index()] {
            return l;
        }
        let mut out = (0.0, false);
        for e in t.edges().iter().filter(|e| e.callee == s) {
            let fan = f64::from(e.policy.fan_out.max(1));
            let (rate, cached) = match e.caller {
                None => (peak, false),
                Some(c) => {
                    let (r, cached) = load(t, c, peak, memo);
                    (r, cached || t.service(c).cache.is_some())
                }
            };
            out.0 += rate * fan;
            out.1 |= cached;
        }
        memo[s.index()] = Some(out);
        out
    }
    let mut memo = vec![None; t.services().len()];
    (0..t.services().len())
        .map(|i| load(t, ServiceId(i as u16), peak, &mut memo))
        .collect()
}

fn rate(r: f64) -> String {
    super::findings::count(r)
}

/// The findings on autoscaling and caches of `s`.
pub(super) fn findings(s: &Scenario) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    if s.occ.is_some() {
        return out.0;
    }
    let model = crate::scenario::to_model(s);
    let t = &model.topology;
    let labels: Vec<String> = if s.is_graph() {
        let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
        item_labels("services", &names)
    } else {
        vec![DEPENDENCY.to_string()]
    };
    let peak = super::peak_rate(s);
    let loads = loads(t, peak);
    // Spikes of the offered load: (start, length) of each schedule step
    // above the base rate.
    let base = s.clients.arrival.rate.map_or(0.0, |r| r.per_sec());
    let spikes: Vec<f64> = s
        .clients
        .schedule
        .iter()
        .filter(|p| p.rate.is_some_and(|r| r.per_sec() > base))
        .filter_map(|p| p.for_.map(|d| d.secs_f64()))
        .collect();
    for (i, svc) in t.services().iter().enumerate() {
        let Some(label) = labels.get(i) else { continue };
        let (load, behind_cache) = loads[i];
        autoscale(&mut out, svc, label, load, behind_cache, &spikes);
        cache(&mut out, t, svc, label, &loads[i], &labels);
    }
    out.0
}

fn autoscale(
    out: &mut Out,
    svc: &ServiceConfig,
    label: &str,
    load: f64,
    behind_cache: bool,
    spikes: &[f64],
) {
    let Some(a) = &svc.autoscale else { return };
    let name = &svc.name;
    // capacity_per_sec is that of `replicas`, which is `max` here.
    if let Some(full) = svc.capacity_per_sec().filter(|_| !behind_cache) {
        let at_target = full * a.target;
        if load > at_target * 1.000_001 {
            let worse = if load > full {
                format!(
                    "; past even {}/s, every worker of every replica busy: the queues only grow",
                    rate(full)
                )
            } else {
                String::new()
            };
            out.add(
                Severity::Warning,
                "autoscale-max-below-peak",
                &format!("{label}.autoscale.max"),
                format!(
                    "service `{name}` receives {}/s at the peak offered load (first attempts only), but its {} replicas at most carry {}/s at the target utilization {}: the autoscaler stops at max with its workers busier than it aims for{worse}",
                    rate(load),
                    a.max,
                    rate(at_target),
                    a.target
                ),
                &format!(
                    "raise max to at least {} (ceil(load ÷ (per-replica capacity × target))), or lower the load",
                    (load / (full / f64::from(a.max.max(1)) * a.target)).ceil()
                ),
            );
        }
    }
    let delay = (a.interval + a.provision) as f64 / 1e9;
    let mut windows: Vec<(String, f64)> = svc
        .incidents
        .iter()
        .filter(|i| !matches!(i.effect, Effect::Flush))
        .map(|i| {
            (
                format!("its incident from {} s", i.start as f64 / 1e9),
                (i.end - i.start) as f64 / 1e9,
            )
        })
        .collect();
    windows.extend(
        spikes
            .iter()
            .map(|&len| ("a spike of the offered load".to_string(), len)),
    );
    if let Some((what, len)) = windows
        .into_iter()
        .filter(|(_, len)| *len > 0.0 && delay >= *len)
        .max_by(|a, b| a.1.total_cmp(&b.1))
    {
        out.add(
            Severity::Warning,
            "autoscale-slower-than-incident",
            &format!("{label}.autoscale.provision"),
            format!(
                "service `{name}` serves a replica it asks for up to interval + provision = {} s after the need arises (its next decision up to {} s later, then {} s to provision), and {what} lasts {} s: at the latest the replicas it asks for serve only once it is over, so they save nothing unless a retry storm outlives it",
                super::findings::count(delay),
                super::findings::count(a.interval as f64 / 1e9),
                super::findings::count(a.provision as f64 / 1e9),
                super::findings::count(len)
            ),
            "keep headroom for it (a higher min, a lower target), shorten provision (a warm pool), or cap the retries (a retry budget) so the incident ends when it ends",
        );
    }
}

fn cache(
    out: &mut Out,
    t: &Topology,
    svc: &ServiceConfig,
    label: &str,
    load: &(f64, bool),
    labels: &[String],
) {
    let Some(c) = &svc.cache else { return };
    let flush = svc
        .incidents
        .iter()
        .find(|i| matches!(i.effect, Effect::Flush));
    let cold = !c.warm;
    if flush.is_none() && !cold {
        return;
    }
    let when = match flush {
        Some(f) => format!("after the flush at {} s", f.start as f64 / 1e9),
        None => "at the start (warm: false)".to_string(),
    };
    let name = &svc.name;
    for &e in &svc.calls {
        let edge = t.edge(e);
        let callee = t.service(edge.callee);
        let Some(cap) = callee.capacity_per_sec() else {
            continue;
        };
        let misses = load.0 * f64::from(edge.policy.fan_out.max(1));
        if misses > cap {
            let coalesce = if c.coalesce {
                " (coalescing merges only the misses of one key in flight: the many keys asked for once each still miss)"
            } else {
                ""
            };
            out.add(
                Severity::Warning,
                "cache-flush-overloads-callee",
                labels.get(edge.callee.index()).map_or(label, String::as_str),
                format!(
                    "{when} every request to the cache of `{name}` misses: `{}` then receives up to {}/s at the peak offered load but completes {}/s{coalesce}; it is sized for the hit ratio, not for a flush",
                    callee.name,
                    rate(misses),
                    rate(cap)
                ),
                "give the service behind the cache the capacity of the miss load (or shed it there: a short queue, an adaptive limit), warm the cache before it serves, or keep the retries off the callee during the refill (a retry budget)",
            );
        }
    }
    if flush.is_some() && !c.coalesce {
        out.add(
            Severity::Info,
            "cache-flush-without-coalescing",
            &format!("{label}.cache.coalesce"),
            format!(
                "after a flush every concurrent request for a popular key of `{name}` misses and goes to its calls at once (a cache stampede): with {} at exponent {}, the hottest ones are asked for many times within one miss's latency",
                crate::human::plural(c.keys, "key"),
                c.exponent
            ),
            "set coalesce: true: one miss per key in flight, the other requests wait for its answer",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    fn codes(yaml: &str) -> Vec<(&'static str, String)> {
        let s = load_str(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
        findings(&s).into_iter().map(|f| (f.code, f.path)).collect()
    }

    /// An api of 10 workers at 20 ms (500/s per replica) autoscaled with
    /// `autoscale`, `rate`/s offered, `extra` lines of the api.
    fn scaled(rate: u32, autoscale: &str, extra: &str) -> String {
        format!(
            "name: a
duration: 10m
clients:
  arrival: {{ kind: poisson, rate: {rate}/s }}
  calls: {{ to: api, timeout: 1s }}
services:
  - name: api
    replicas: 2
    concurrency: 10
    service_time: {{ dist: exponential, mean: 20ms }}
    autoscale: {autoscale}
{extra}"
        )
    }

    #[test]
    fn max_replicas_below_the_peak_at_the_target_is_a_warning() {
        // 10 × 500/s × 0.6 = 3000/s.
        let ok = scaled(
            3000,
            "{ target_utilization: 0.6, max: 10, provision: 10s }",
            "",
        );
        assert!(codes(&ok).is_empty(), "{:?}", codes(&ok));
        let short = scaled(
            3001,
            "{ target_utilization: 0.6, max: 10, provision: 10s }",
            "",
        );
        assert_eq!(
            codes(&short),
            [(
                "autoscale-max-below-peak",
                "services.api.autoscale.max".to_string()
            )]
        );
        let s = load_str(&short, "t.yaml").unwrap();
        let f = &findings(&s)[0];
        assert!(
            f.message.contains("3001/s") && f.message.contains("3000/s"),
            "{}",
            f.message
        );
        assert!(f.fix.contains("at least 11"), "{}", f.fix);
        // A schedule spike counts: its peak.
        let spike = scaled(
            1000,
            "{ target_utilization: 0.6, max: 10, provision: 10s }",
            "",
        )
        .replace(
            "calls: { to: api",
            "schedule: [{ at: 60s, rate: 4000/s, for: 5m }]\n  calls: { to: api",
        );
        assert_eq!(codes(&spike)[0].0, "autoscale-max-below-peak");
    }

    #[test]
    fn a_provision_delay_longer_than_an_incident_or_a_spike_is_a_warning() {
        let brownout = "    incidents: [{ kind: brownout, start: 60s, end: 90s, capacity: 0.3 }]\n";
        // 15 s interval + 10 s provision = 25 s < 30 s.
        let fast = scaled(
            100,
            "{ target_utilization: 0.6, max: 10, provision: 10s }",
            brownout,
        );
        assert!(codes(&fast).is_empty(), "{:?}", codes(&fast));
        // 15 s + 15 s = 30 s: the first replica serves as the brownout ends.
        let slow = scaled(
            100,
            "{ target_utilization: 0.6, max: 10, provision: 15s }",
            brownout,
        );
        assert_eq!(
            codes(&slow),
            [(
                "autoscale-slower-than-incident",
                "services.api.autoscale.provision".to_string()
            )]
        );
        let spike = scaled(
            100,
            "{ target_utilization: 0.6, max: 10, provision: 60s }",
            "",
        )
        .replace(
            "calls: { to: api",
            "schedule: [{ at: 60s, rate: 200/s, for: 1m }]\n  calls: { to: api",
        );
        let s = load_str(&spike, "t.yaml").unwrap();
        let f = findings(&s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message.contains("75 s") && f[0].message.contains("spike"),
            "{}",
            f[0].message
        );
        // 75 s is the latest a replica asked for can serve (the next
        // decision up to an interval later, then provision), and the text
        // says so.
        assert!(
            f[0].message.contains(
                "up to interval + provision = 75 s after the need arises (its next decision up to 15 s later, then 60 s to provision)"
            ),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("earliest"), "{}", f[0].message);
    }

    #[test]
    fn min_above_max_is_refused_by_validation() {
        let bad = scaled(100, "{ target_utilization: 0.6, min: 5, max: 4 }", "");
        let e = load_str(&bad, "t.yaml").unwrap_err().to_string();
        assert!(e.contains("services.api.autoscale"), "{e}");
    }

    /// A cache of `cache` in front of a db of 20 workers at 10 ms
    /// (2000/s), 5000/s offered.
    fn cached(cache: &str, incidents: &str) -> String {
        format!(
            "name: c
duration: 2m
clients:
  arrival: {{ kind: poisson, rate: 5000/s }}
  calls: {{ to: api, timeout: 1s }}
services:
  - name: api
    concurrency: 500
    service_time: {{ dist: constant, value: 1ms }}
    cache: {cache}
    calls: [{{ to: db, timeout: 1s }}]
{incidents}  - name: db
    concurrency: 20
    service_time: {{ dist: exponential, mean: 10ms }}
"
        )
    }

    #[test]
    fn a_flush_the_callee_cannot_take_and_one_without_coalescing_are_found() {
        let flush = "    incidents: [{ kind: flush, start: 60s, end: 61s }]\n";
        let c = "{ keys: 10000, capacity: 2000 }";
        // Warm and never flushed: nothing.
        assert!(codes(&cached(c, "")).is_empty());
        assert_eq!(
            codes(&cached(c, flush)),
            [
                ("cache-flush-overloads-callee", "services.db".to_string()),
                (
                    "cache-flush-without-coalescing",
                    "services.api.cache.coalesce".to_string()
                )
            ]
        );
        // Coalescing: the callee is still too small.
        let co = "{ keys: 10000, capacity: 2000, coalesce: true }";
        assert_eq!(
            codes(&cached(co, flush)),
            [("cache-flush-overloads-callee", "services.db".to_string())]
        );
        // A cold start is a flush at 0.
        let cold = "{ keys: 10000, capacity: 2000, warm: false, coalesce: true }";
        assert_eq!(codes(&cached(cold, "")).len(), 1);
        // A db that takes every miss: only the stampede.
        let big = cached(c, flush).replace("concurrency: 20\n", "concurrency: 60\n");
        assert_eq!(
            codes(&big),
            [(
                "cache-flush-without-coalescing",
                "services.api.cache.coalesce".to_string()
            )]
        );
    }
}
