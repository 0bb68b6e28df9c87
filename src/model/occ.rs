//! The OCC contention workload of the AWS Architecture Blog post
//! "Exponential Backoff And Jitter" (Marc Brooker, 2015), exactly as
//! docs/sources/experiments.md §1 gives it and as its simulator
//! `aws-samples/aws-arch-backoff-simulator`, `src/backoff_simulator.py`,
//! runs it.
//!
//! One row carries a version number. N clients, all starting at t = 0, each
//! update the row exactly once, with optimistic concurrency control:
//!
//! ```text
//!   client                          row
//!   SendRead ──── read request ───▶ ReadAtRow      (version read here)
//!   VersionAtClient ◀── version ──┘
//!            └─── write(version) ─▶ WriteAtRow     (a "call": succeeds iff the
//!   OutcomeAtClient ◀── ok/fail ──┘                 version is unchanged, and
//!     ok   → Done                                   then increments it)
//!     fail → attempt += 1, sleep backoff(attempt), SendRead again
//! ```
//!
//! Every message (each direction of a read and of a write) takes
//! |Normal(mean, sd)|, 10 ms and 2 ms in the post. Only writes count as
//! calls; the completion time is the time of the last event (the last
//! client learning that its write succeeded).
//!
//! Backoff, with base = 5 ms, cap = 2000 ms and `expo(n) = min(cap, base·2^n)`:
//! none (0), exponential (`expo(n)`), full jitter (`U(0, expo(n))`), equal
//! jitter (`expo(n)/2 + U(0, expo(n)/2)`) and decorrelated
//! (`sleep = min(cap, U(base, 3·sleep))`, per client, from `sleep = base`).
//!
//! Indexing, checked against the original simulator: `OccClient.attempt`
//! starts at 0 and is incremented *before* `backoff(self.attempt)` is
//! called, and `expo(n) = min(cap, pow(2, n) * base)`, so the first backoff
//! uses n = 1 and the first exponential sleep is 2·base = 10 ms. We follow
//! it. `model::backoff::Backoff::delay(n)` is `base·2^(n−1)`, so we call it
//! with `attempt + 1`.
//!
//! Also as there, the read request after a backoff is sent when the sleep
//! ends (the original schedules its arrival at `now + delay + sleep`, the
//! same instant). Ties, which only constant message times produce, come out
//! in scheduling order (the engine's FIFO); the original never meets them.
//!
//! Random streams: message times come from
//! `Stream::new(seed, Purpose::ServiceTimes, 0)`, drawn in event order
//! (`|mean + sd·z|` with z from `std_normal`, rounded to the nanosecond);
//! backoff jitter from `Stream::new(seed, Purpose::Jitter, 0)`, shared by
//! all clients (the original draws both from one global `random`).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::{EventKind, EventQueue, NS_PER_MS, Nanos, Purpose, Stream, time::from_f64_ns};

use super::backoff::{Backoff, Jitter, SleepState, sleep_before_retry};
use super::world::STOP_POLL;
use crate::metrics::Abort;
use crate::metrics::recorder::MAX_BUCKETS;

/// The backoff policies of the post.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OccPolicy {
    /// Retry at once: sleep 0.
    NoBackoff,
    /// `expo(n)`, no jitter.
    Exponential,
    /// `U(0, expo(n))`.
    FullJitter,
    /// `expo(n)/2 + U(0, expo(n)/2)`.
    EqualJitter,
    /// `sleep = min(cap, U(base, 3·sleep))`, per client, from `sleep = base`.
    Decorrelated,
}

impl OccPolicy {
    pub const ALL: [OccPolicy; 5] = [
        OccPolicy::NoBackoff,
        OccPolicy::Exponential,
        OccPolicy::FullJitter,
        OccPolicy::EqualJitter,
        OccPolicy::Decorrelated,
    ];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            OccPolicy::NoBackoff => "none",
            OccPolicy::Exponential => "exponential",
            OccPolicy::FullJitter => "full_jitter",
            OccPolicy::EqualJitter => "equal_jitter",
            OccPolicy::Decorrelated => "decorrelated",
        }
    }

    /// The jitter of `model::backoff` that implements the policy (`None`
    /// for no backoff at all).
    fn jitter(self) -> Option<Jitter> {
        match self {
            OccPolicy::NoBackoff => None,
            OccPolicy::Exponential => Some(Jitter::None),
            OccPolicy::FullJitter => Some(Jitter::Full),
            OccPolicy::EqualJitter => Some(Jitter::Equal),
            OccPolicy::Decorrelated => Some(Jitter::Decorrelated),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OccConfig {
    pub clients: u32,
    pub policy: OccPolicy,
    pub base: Nanos,
    pub cap: Nanos,
    /// Mean and standard deviation of one message's travel time; with
    /// `message_sd = 0` every message takes exactly `message_mean`.
    pub message_mean: Nanos,
    pub message_sd: Nanos,
    /// Width of the buckets of `OccResult::calls_per_bucket`; 0 keeps no
    /// histogram.
    pub bucket: Nanos,
    /// Stop with `OccResult::aborted` set after this many events if the
    /// run is not over by then.
    pub max_events: u64,
}

impl OccConfig {
    /// The post's parameters: base 5 ms, cap 2 s, messages |N(10 ms, 2 ms)|,
    /// calls counted per 10 ms.
    pub fn aws(clients: u32, policy: OccPolicy) -> Self {
        OccConfig {
            clients,
            policy,
            base: 5 * NS_PER_MS,
            cap: 2_000 * NS_PER_MS,
            message_mean: 10 * NS_PER_MS,
            message_sd: 2 * NS_PER_MS,
            bucket: 10 * NS_PER_MS,
            max_events: 50_000_000,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OccResult {
    /// Writes that reached the row, successful or not.
    pub calls: u64,
    /// The time of the last event handled.
    pub completion: Nanos,
    /// Events handled.
    pub events: u64,
    /// The event queue's digest of every (time, sequence, kind) handled.
    pub digest: u64,
    /// Calls per `bucket` of time from t = 0 (by the time the write reached
    /// the row); the last entry holds the last call.
    pub calls_per_bucket: Vec<u64>,
    /// Of those, calls that were not a client's first write (retries).
    pub retries_per_bucket: Vec<u64>,
    /// When each client learned its write succeeded (in client order; 0
    /// for a client left unfinished by an aborted run).
    pub done_at: Vec<Nanos>,
    /// Why the run stopped early, if it did.
    pub aborted: Option<Abort>,
}

/// Where a client is: Reading → Writing → Done, or Reading → Writing →
/// Backoff → Reading → ... after a failed write. Each phase includes the
/// travel of its request and of the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Reading,
    Writing,
    Backoff,
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Client {
    phase: Phase,
    /// Failed writes so far; the backoff after the k-th failure uses k.
    attempt: u32,
    /// The previous sleep (decorrelated jitter).
    sleep: SleepState,
}

/// A message arriving somewhere, or a backoff ending. Clients are indices
/// into the `Vec<Client>`.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// The client sends a read request (at t = 0, or when its sleep ends).
    SendRead { client: u32 },
    /// The read request reaches the row, which replies with its version.
    ReadAtRow { client: u32 },
    /// The version reaches the client, which sends its write at once.
    VersionAtClient { client: u32, version: u64 },
    /// The write reaches the row: a call.
    WriteAtRow { client: u32, version: u64 },
    /// The outcome of the write reaches the client.
    OutcomeAtClient { client: u32, ok: bool },
}

impl EventKind for Event {
    fn kind(&self) -> u8 {
        match self {
            Event::SendRead { .. } => 0,
            Event::ReadAtRow { .. } => 1,
            Event::VersionAtClient { .. } => 2,
            Event::WriteAtRow { .. } => 3,
            Event::OutcomeAtClient { .. } => 4,
        }
    }
}

/// One message's travel time: `|mean + sd·z|`, z standard normal.
pub fn message_time(mean: Nanos, sd: Nanos, rng: &mut Stream) -> Nanos {
    let z = rng.std_normal();
    from_f64_ns((mean as f64 + sd as f64 * z).abs())
}

/// The network (the original's `Net`): one draw per message sent.
struct Net {
    mean: Nanos,
    sd: Nanos,
    rng: Stream,
}

impl Net {
    fn delay(&mut self) -> Nanos {
        message_time(self.mean, self.sd, &mut self.rng)
    }
}

/// The sleep after the `attempt`-th failed write (attempt >= 1).
fn backoff(cfg: &OccConfig, attempt: u32, state: &mut SleepState, rng: &mut Stream) -> Nanos {
    let Some(jitter) = cfg.policy.jitter() else {
        return 0;
    };
    // expo(n) = min(cap, base·2^n) = Backoff::delay(n + 1); see the module doc.
    let expo = Backoff::exponential(cfg.base, 2.0, cfg.cap);
    sleep_before_retry(&expo, jitter, attempt.saturating_add(1), state, rng)
}

/// Runs the workload once. Deterministic: the same `cfg` and `seed` give
/// the same result, digest included.
pub fn run_occ(cfg: &OccConfig, seed: u64) -> OccResult {
    static NEVER: AtomicBool = AtomicBool::new(false);
    run_occ_until(cfg, seed, &NEVER)
}

/// `run_occ`, but stops early (marked aborted) once `stop` is raised.
pub fn run_occ_until(cfg: &OccConfig, seed: u64, stop: &AtomicBool) -> OccResult {
    let mut net = Net {
        mean: cfg.message_mean,
        sd: cfg.message_sd,
        rng: Stream::new(seed, Purpose::ServiceTimes, 0),
    };
    let mut jitter = Stream::new(seed, Purpose::Jitter, 0);
    let mut q: EventQueue<Event> = EventQueue::new();
    let start = Client {
        phase: Phase::Reading, // its first read is sent at t = 0
        attempt: 0,
        sleep: SleepState::default(),
    };
    let mut clients = vec![start; cfg.clients as usize];
    for client in 0..cfg.clients {
        q.schedule_at(0, Event::SendRead { client });
    }
    let mut version: u64 = 0; // the row
    let mut calls: u64 = 0;
    let mut per_bucket: Vec<u64> = Vec::new();
    let mut retries_per_bucket: Vec<u64> = Vec::new();
    let mut done_at: Vec<Nanos> = vec![0; cfg.clients as usize];
    let mut aborted = None;

    while let Some(event) = q.pop_before(Nanos::MAX) {
        match event {
            Event::SendRead { client } => {
                clients[client as usize].phase = Phase::Reading;
                q.schedule_in(net.delay(), Event::ReadAtRow { client });
            }
            Event::ReadAtRow { client } => {
                q.schedule_in(net.delay(), Event::VersionAtClient { client, version });
            }
            Event::VersionAtClient { client, version } => {
                clients[client as usize].phase = Phase::Writing;
                q.schedule_in(net.delay(), Event::WriteAtRow { client, version });
            }
            Event::WriteAtRow {
                client,
                version: seen,
            } => {
                calls += 1;
                if let Err(why) = count_in_bucket(&mut per_bucket, cfg.bucket, q.now()) {
                    aborted = Some(why);
                    break;
                }
                if clients[client as usize].attempt > 0 {
                    // Cannot fail: the bucket exists after the call above.
                    let _ = count_in_bucket(&mut retries_per_bucket, cfg.bucket, q.now());
                }
                let ok = seen == version;
                if ok {
                    version += 1;
                }
                q.schedule_in(net.delay(), Event::OutcomeAtClient { client, ok });
            }
            Event::OutcomeAtClient { client, ok } => {
                let c = &mut clients[client as usize];
                if ok {
                    c.phase = Phase::Done;
                    done_at[client as usize] = q.now();
                } else {
                    c.phase = Phase::Backoff;
                    c.attempt += 1;
                    let sleep = backoff(cfg, c.attempt, &mut c.sleep, &mut jitter);
                    q.schedule_in(sleep, Event::SendRead { client });
                }
            }
        }
        if q.events().is_multiple_of(STOP_POLL) && stop.load(Ordering::Relaxed) {
            aborted = Some(Abort::Interrupted);
            break;
        }
        if q.events() >= cfg.max_events && q.pending() > 0 {
            aborted = Some(Abort::MaxEvents {
                limit: cfg.max_events,
            });
            break;
        }
    }
    if aborted.is_none() && q.pending() > 0 {
        // Events due at the end of representable time (saturated delays).
        aborted = Some(Abort::ClockRanOut {
            at: q.now(),
            pending: q.pending(),
        });
    }
    debug_assert!(
        aborted.is_some() || clients.iter().all(|c| c.phase == Phase::Done),
        "a client was left unfinished"
    );
    OccResult {
        calls,
        completion: q.now(),
        events: q.events(),
        digest: q.digest(),
        calls_per_bucket: per_bucket,
        retries_per_bucket,
        done_at,
        aborted,
    }
}

/// Adds one call at time `t` to the histogram (none when `bucket` is 0).
fn count_in_bucket(per_bucket: &mut Vec<u64>, bucket: Nanos, t: Nanos) -> Result<(), Abort> {
    if bucket == 0 {
        return Ok(());
    }
    let i = usize::try_from(t / bucket).unwrap_or(usize::MAX);
    if i >= MAX_BUCKETS {
        return Err(Abort::TooManyBuckets {
            at: t,
            bucket,
            limit: MAX_BUCKETS,
        });
    }
    if i >= per_bucket.len() {
        per_bucket.resize(i + 1, 0);
    }
    per_bucket[i] += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = NS_PER_MS;

    fn constant(clients: u32, policy: OccPolicy) -> OccConfig {
        OccConfig {
            message_sd: 0,
            ..OccConfig::aws(clients, policy)
        }
    }

    #[test]
    fn one_client_takes_its_four_messages() {
        for seed in 0..20 {
            let r = run_occ(&OccConfig::aws(1, OccPolicy::FullJitter), seed);
            let mut m = Stream::new(seed, Purpose::ServiceTimes, 0);
            // SendRead, ReadAtRow, VersionAtClient and WriteAtRow each
            // draw the message they send, in that order.
            let four: Nanos = (0..4).map(|_| message_time(10 * MS, 2 * MS, &mut m)).sum();
            assert_eq!(r.calls, 1);
            assert_eq!(r.events, 5);
            assert_eq!(r.completion, four);
            assert_eq!(r.aborted, None);
        }
    }

    #[test]
    fn constant_messages_lockstep_two_clients() {
        // Both read version 0 at 10 ms and write at 30 ms; client 0 was
        // scheduled first and wins, client 1 fails, learns it at 40 ms and
        // reads again at once: write at 70 ms, done at 80 ms.
        let r = run_occ(&constant(2, OccPolicy::NoBackoff), 1);
        assert_eq!((r.calls, r.completion, r.events), (3, 80 * MS, 15));
        assert_eq!(r.calls_per_bucket, vec![0, 0, 0, 2, 0, 0, 0, 1]);
        // Exponential: the first sleep is expo(1) = 10 ms, so 10 ms later.
        let r = run_occ(&constant(2, OccPolicy::Exponential), 1);
        assert_eq!((r.calls, r.completion), (3, 90 * MS));
    }

    #[test]
    fn backoff_follows_the_formulas() {
        let cfg = OccConfig::aws(1, OccPolicy::Exponential);
        let mut rng = Stream::new(3, Purpose::Jitter, 0);
        let mut st = SleepState::default();
        let seq: Vec<Nanos> = (1..=10)
            .map(|n| backoff(&cfg, n, &mut st, &mut rng) / MS)
            .collect();
        assert_eq!(seq, vec![10, 20, 40, 80, 160, 320, 640, 1280, 2000, 2000]);
        assert_eq!(backoff(&cfg, u32::MAX, &mut st, &mut rng), 2_000 * MS);

        let none = OccConfig::aws(1, OccPolicy::NoBackoff);
        assert_eq!(backoff(&none, 7, &mut st, &mut rng), 0);

        for n in 1..=12 {
            let expo = ((5 * MS) << n).min(2_000 * MS);
            for _ in 0..500 {
                let full = OccConfig::aws(1, OccPolicy::FullJitter);
                assert!(backoff(&full, n, &mut st, &mut rng) <= expo);
                let equal = OccConfig::aws(1, OccPolicy::EqualJitter);
                let s = backoff(&equal, n, &mut st, &mut rng);
                assert!(s >= expo / 2 && s <= expo);
            }
        }

        // Decorrelated ignores n: the first sleep is U(base, 3·base).
        let dec = OccConfig::aws(1, OccPolicy::Decorrelated);
        for _ in 0..500 {
            let mut st = SleepState::default();
            let s = backoff(&dec, 9, &mut st, &mut rng);
            assert!((5 * MS..=15 * MS).contains(&s), "{s}");
        }
    }

    #[test]
    fn guard_aborts_runaway_runs() {
        let cfg = OccConfig {
            max_events: 100,
            ..OccConfig::aws(50, OccPolicy::NoBackoff)
        };
        let r = run_occ(&cfg, 1);
        assert!(r.aborted.is_some());
        assert_eq!(r.events, 100);
        // Exactly enough events is not an abort: one client needs 5.
        let five = OccConfig {
            max_events: 5,
            ..OccConfig::aws(1, OccPolicy::NoBackoff)
        };
        assert_eq!(run_occ(&five, 1).aborted, None);
    }

    /// Found by the fuzzer: messages so slow that delays saturate at the
    /// end of representable time. The run says so instead of ending as if
    /// every client were done.
    #[test]
    fn time_running_out_is_an_abort() {
        let cfg = OccConfig {
            message_mean: u64::MAX / 2,
            ..OccConfig::aws(3, OccPolicy::FullJitter)
        };
        let r = run_occ(&cfg, 1);
        let why = r.aborted.expect("aborted");
        assert!(matches!(why, Abort::ClockRanOut { .. }), "{why}");
    }

    #[test]
    fn buckets_sum_to_calls() {
        let r = run_occ(&OccConfig::aws(30, OccPolicy::FullJitter), 5);
        assert_eq!(r.calls_per_bucket.iter().sum::<u64>(), r.calls);
        let none = run_occ(
            &OccConfig {
                bucket: 0,
                ..OccConfig::aws(30, OccPolicy::FullJitter)
            },
            5,
        );
        assert!(none.calls_per_bucket.is_empty());
        assert_eq!(none.digest, r.digest);
    }
}
