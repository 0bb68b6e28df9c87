//! A cache in front of a service's calls (DESIGN-v2 §2): every request
//! asks for one key, drawn from a Zipf distribution over `keys` keys (key
//! k, from 0, is asked with probability ∝ 1 ÷ (k + 1)^exponent); a key
//! held and not expired is a *hit*, answered by the cache; any other
//! request is a *miss*, forwarded to the service's calls, and its answer,
//! when it succeeds, fills the cache. The cache holds at most `capacity`
//! keys and evicts the least recently used one to make room (LRU). With a
//! `ttl`, an entry expires that long after it was filled (a lookup that
//! finds it expired drops it, as memcached does). With `coalesce`, at most
//! one miss per key is in flight: the other requests for that key wait for
//! it and share its outcome (Go's `singleflight`, groupcache), counted as
//! *coalesced*. A `flush` empties the cache; while one lasts, nothing is
//! stored.
//!
//! The hit ratio is an output. Under the independent reference model (keys
//! drawn independently) it follows Che, Tung and Wang's approximation
//! ("Hierarchical Web caching systems: modeling, design and experimental
//! results", IEEE JSAC 20(7), 2002): the tests check it against that.
//!
//! The LRU list and the lookups are data-oriented: entries live in a `Vec`
//! indexed by [`Slot`], each key's state in a `Vec` indexed by the key,
//! flights and their waiters in `Vec`s with free lists, so a lookup, a
//! fill or an eviction is O(1) and allocates nothing once the vectors have
//! grown to their working size.

use crate::engine::{Nanos, Stream};

/// A cache on a service.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheConfig {
    /// Keys requests ask for (at least 1).
    pub keys: u32,
    /// The Zipf exponent of their popularity (0: uniform).
    pub exponent: f64,
    /// Entries the cache holds at most (at least 1).
    pub capacity: u32,
    /// An entry expires this long after it was filled; `None`: never.
    pub ttl: Option<Nanos>,
    /// One miss per key in flight; the others wait for it.
    pub coalesce: bool,
    /// It starts holding the `capacity` most popular keys (filled at time
    /// 0, the most popular the most recently used); else empty.
    pub warm: bool,
}

/// Keys 0..n with P(k) ∝ 1 ÷ (k + 1)^s, by Hörmann and Derflinger's
/// rejection-inversion ("Rejection-inversion to generate variates from
/// monotone discrete distributions", ACM TOMACS 6(3), 1996), as Apache
/// Commons RNG's `RejectionInversionZipfSampler` writes it: O(1) time and
/// memory per draw for any n, one or a few uniform draws each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s_bound: f64,
}

/// log1p(x) ÷ x, continuous at 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// expm1(x) ÷ x, continuous at 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

impl Zipf {
    /// Over `n` ≥ 1 keys with exponent `s` ≥ 0.
    pub fn new(n: u32, s: f64) -> Self {
        let mut z = Zipf {
            n: f64::from(n.max(1)),
            s,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s_bound: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.s_bound = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// ∫ h, with h(x) = x^-s.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.s) * log_x) * log_x
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }

    /// A key, 0 the most popular.
    pub fn sample(&self, rng: &mut Stream) -> u32 {
        loop {
            let u = self.h_integral_n + rng.unit() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s_bound || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u32 - 1;
            }
        }
    }
}

/// Bytes of state a cache holds per key from the start of a run (where it
/// is cached, its miss in flight), whatever the load: counted in the
/// memory estimate (`scenario::memory`).
pub const KEY_STATE_BYTES: u64 = std::mem::size_of::<KeyState>() as u64;
/// Bytes of an entry of the LRU list (at most `capacity` of them).
pub const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;

/// An entry of the LRU list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(u32);

/// A miss in flight that other requests wait for (coalescing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlightId(u32);

/// A request waiting for a flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WaiterId(u32);

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u32,
    /// Toward the most recently used, and the least.
    newer: Option<Slot>,
    older: Option<Slot>,
    /// When it expires (`None`: never).
    expires: Option<Nanos>,
}

#[derive(Clone, Copy, Debug, Default)]
struct KeyState {
    slot: Option<Slot>,
    flight: Option<FlightId>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Flight {
    first: Option<WaiterId>,
    last: Option<WaiterId>,
    /// The next free flight (on the free list).
    next_free: Option<FlightId>,
}

#[derive(Clone, Copy, Debug)]
struct Waiter<T> {
    token: T,
    next: Option<WaiterId>,
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The key is held: the cache answers.
    Hit,
    /// Not held: the request goes to the service's calls; `leads` when it
    /// is the key's flight (with coalescing), which its waiters follow.
    Miss { leads: bool },
    /// Not held, and a miss for the key is in flight: the request waits
    /// for it (with coalescing).
    Joined,
}

/// Hits, misses and coalesced lookups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    pub hits: u64,
    pub misses: u64,
    pub coalesced: u64,
}

/// The live state of one cache; `T` names a waiting request.
#[derive(Clone, Debug)]
pub struct Cache<T> {
    cfg: CacheConfig,
    zipf: Zipf,
    keys: Vec<KeyState>,
    entries: Vec<Entry>,
    newest: Option<Slot>,
    oldest: Option<Slot>,
    flights: Vec<Flight>,
    free_flight: Option<FlightId>,
    waiters: Vec<Waiter<T>>,
    free_waiter: Option<WaiterId>,
    /// Flushes under way: nothing is stored while one lasts.
    flushing: u32,
    /// Misses in flight with coalescing (flights open).
    flights_open: u32,
    pub counts: CacheCounts,
}

impl<T: Copy> Cache<T> {
    pub fn new(cfg: CacheConfig) -> Self {
        Cache {
            cfg,
            zipf: Zipf::new(cfg.keys, cfg.exponent),
            keys: vec![KeyState::default(); cfg.keys.max(1) as usize],
            entries: Vec::new(),
            newest: None,
            oldest: None,
            flights: Vec::new(),
            free_flight: None,
            waiters: Vec::new(),
            free_waiter: None,
            flushing: 0,
            flights_open: 0,
            counts: CacheCounts::default(),
        }
        .warmed()
    }

    /// Filled with the most popular keys, when the cache starts warm.
    fn warmed(mut self) -> Self {
        if self.cfg.warm {
            let n = self.cfg.capacity.min(self.cfg.keys).max(1);
            for k in (0..n).rev() {
                self.fill(k, 0);
            }
        }
        self
    }

    /// The key a request asks for, drawn from `rng`.
    pub fn draw_key(&self, rng: &mut Stream) -> u32 {
        self.zipf.sample(rng)
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `key` is held (expired or not).
    pub fn holds(&self, key: u32) -> bool {
        self.keys
            .get(key as usize)
            .is_some_and(|k| k.slot.is_some())
    }

    /// Misses in flight that others may wait for (with coalescing).
    pub fn flights_open(&self) -> u32 {
        self.flights_open
    }

    /// A request for `key` reaches the cache at `now`; `token` names it
    /// should it wait for a flight.
    pub fn lookup(&mut self, key: u32, now: Nanos, token: T) -> Lookup {
        let k = (key as usize).min(self.keys.len() - 1);
        if let Some(slot) = self.keys[k].slot {
            let e = self.entries[slot.0 as usize];
            if e.expires.is_none_or(|t| now < t) {
                self.counts.hits += 1;
                self.unlink(slot);
                self.link_newest(slot);
                return Lookup::Hit;
            }
            self.remove(slot);
        }
        if !self.cfg.coalesce {
            self.counts.misses += 1;
            return Lookup::Miss { leads: false };
        }
        match self.keys[k].flight {
            Some(f) => {
                self.counts.coalesced += 1;
                self.wait(f, token);
                Lookup::Joined
            }
            None => {
                self.counts.misses += 1;
                let f = self.open_flight();
                self.keys[k].flight = Some(f);
                Lookup::Miss { leads: true }
            }
        }
    }

    /// A miss for `key` succeeded at `now`: its answer fills the cache
    /// (the least recently used entry makes room), unless a flush lasts.
    pub fn fill(&mut self, key: u32, now: Nanos) {
        if self.flushing > 0 {
            return;
        }
        let k = (key as usize).min(self.keys.len() - 1);
        let expires = self.cfg.ttl.map(|t| now.saturating_add(t));
        if let Some(slot) = self.keys[k].slot {
            self.entries[slot.0 as usize].expires = expires;
            self.unlink(slot);
            self.link_newest(slot);
            return;
        }
        let entry = Entry {
            key: k as u32,
            newer: None,
            older: None,
            expires,
        };
        let slot = if self.entries.len() < self.cfg.capacity.max(1) as usize {
            self.entries.push(entry);
            Slot(self.entries.len() as u32 - 1)
        } else {
            let Some(victim) = self.oldest else { return };
            self.unlink(victim);
            let old = self.entries[victim.0 as usize].key;
            self.keys[old as usize].slot = None;
            self.entries[victim.0 as usize] = entry;
            victim
        };
        self.keys[k].slot = Some(slot);
        self.link_newest(slot);
    }

    /// The flight of `key` (its leading miss ended): no longer joinable.
    /// Its waiters then come out of [`Self::pop_waiter`].
    pub fn land(&mut self, key: u32) -> Option<FlightId> {
        let k = (key as usize).min(self.keys.len() - 1);
        let f = self.keys[k].flight.take()?;
        self.flights_open -= 1;
        Some(f)
    }

    /// The next waiter of landed flight `f`, in the order they joined;
    /// `None` once all are out (the flight is then freed).
    pub fn pop_waiter(&mut self, f: FlightId) -> Option<T> {
        let fl = &mut self.flights[f.0 as usize];
        match fl.first {
            Some(w) => {
                let Waiter { token, next } = self.waiters[w.0 as usize];
                fl.first = next;
                if next.is_none() {
                    fl.last = None;
                }
                self.waiters[w.0 as usize].next = self.free_waiter;
                self.free_waiter = Some(w);
                Some(token)
            }
            None => {
                *fl = Flight {
                    next_free: self.free_flight,
                    ..Flight::default()
                };
                self.free_flight = Some(f);
                None
            }
        }
    }

    /// Empties the cache (`starts`), and stores nothing until the flush
    /// ends. Flights in flight go on: their waiters still get their answer.
    pub fn flush(&mut self, starts: bool) {
        if !starts {
            self.flushing = self.flushing.saturating_sub(1);
            return;
        }
        self.flushing += 1;
        for e in &self.entries {
            self.keys[e.key as usize].slot = None;
        }
        self.entries.clear();
        self.newest = None;
        self.oldest = None;
    }

    fn open_flight(&mut self) -> FlightId {
        self.flights_open += 1;
        match self.free_flight {
            Some(f) => {
                self.free_flight = self.flights[f.0 as usize].next_free.take();
                f
            }
            None => {
                self.flights.push(Flight::default());
                FlightId(self.flights.len() as u32 - 1)
            }
        }
    }

    fn wait(&mut self, f: FlightId, token: T) {
        let waiter = Waiter { token, next: None };
        let w = match self.free_waiter {
            Some(w) => {
                self.free_waiter = self.waiters[w.0 as usize].next;
                self.waiters[w.0 as usize] = waiter;
                w
            }
            None => {
                self.waiters.push(waiter);
                WaiterId(self.waiters.len() as u32 - 1)
            }
        };
        let fl = &mut self.flights[f.0 as usize];
        match fl.last {
            Some(last) => self.waiters[last.0 as usize].next = Some(w),
            None => fl.first = Some(w),
        }
        fl.last = Some(w);
    }

    /// Takes `slot` out of the recency list (it stays allocated).
    fn unlink(&mut self, slot: Slot) {
        let Entry { newer, older, .. } = self.entries[slot.0 as usize];
        match newer {
            Some(n) => self.entries[n.0 as usize].older = older,
            None => self.newest = older,
        }
        match older {
            Some(o) => self.entries[o.0 as usize].newer = newer,
            None => self.oldest = newer,
        }
        let e = &mut self.entries[slot.0 as usize];
        e.newer = None;
        e.older = None;
    }

    fn link_newest(&mut self, slot: Slot) {
        let old_newest = self.newest;
        {
            let e = &mut self.entries[slot.0 as usize];
            e.newer = None;
            e.older = old_newest;
        }
        match old_newest {
            Some(n) => self.entries[n.0 as usize].newer = Some(slot),
            None => self.oldest = Some(slot),
        }
        self.newest = Some(slot);
    }

    /// Drops `slot` (an expired entry): the last entry moves into its
    /// place, so the entries stay dense.
    fn remove(&mut self, slot: Slot) {
        self.unlink(slot);
        let key = self.entries[slot.0 as usize].key;
        self.keys[key as usize].slot = None;
        let last = Slot(self.entries.len() as u32 - 1);
        if last != slot {
            let moved = self.entries[last.0 as usize];
            self.entries[slot.0 as usize] = moved;
            self.keys[moved.key as usize].slot = Some(slot);
            match moved.newer {
                Some(n) => self.entries[n.0 as usize].older = Some(slot),
                None => self.newest = Some(slot),
            }
            match moved.older {
                Some(o) => self.entries[o.0 as usize].newer = Some(slot),
                None => self.oldest = Some(slot),
            }
        }
        self.entries.pop();
    }

    /// The keys held, most recently used first (for tests).
    pub fn recency(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.entries.len());
        let mut at = self.newest;
        while let Some(s) = at {
            let e = self.entries[s.0 as usize];
            out.push(e.key);
            at = e.older;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Purpose;

    /// The probabilities of keys 0..n: (k + 1)^-s ÷ Σ.
    fn pmf(n: u32, s: f64) -> Vec<f64> {
        let w: Vec<f64> = (1..=n).map(|k| f64::from(k).powf(-s)).collect();
        let sum: f64 = w.iter().sum();
        w.into_iter().map(|x| x / sum).collect()
    }

    /// Che's approximation of the hit ratio of an LRU cache of `capacity`
    /// entries under the independent reference model with key probabilities
    /// `p`: the characteristic time T solves Σ (1 − e^(−p_i T)) = capacity,
    /// and the hit ratio is Σ p_i (1 − e^(−p_i T)).
    fn che_hit_ratio(p: &[f64], capacity: u32) -> f64 {
        let c = f64::from(capacity);
        if c >= p.len() as f64 {
            return 1.0;
        }
        let filled = |t: f64| p.iter().map(|&q| -(-q * t).exp_m1()).sum::<f64>();
        let (mut lo, mut hi) = (0.0, 1.0);
        while filled(hi) < c {
            hi *= 2.0;
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if filled(mid) < c {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let t = 0.5 * (lo + hi);
        p.iter().map(|&q| q * -(-q * t).exp_m1()).sum()
    }

    fn cfg(keys: u32, capacity: u32) -> CacheConfig {
        CacheConfig {
            keys,
            exponent: 1.0,
            capacity,
            ttl: None,
            coalesce: false,
            warm: false,
        }
    }

    /// Literal values, written down once from this implementation: a
    /// change of the sampler or of its stream changes every cache figure,
    /// and must fail here first. Update only on purpose, with the goldens.
    #[test]
    fn zipf_keys_are_pinned() {
        let mut rng = Stream::new(42, Purpose::CacheKeys, 0);
        let z = Zipf::new(1000, 1.3);
        let keys: Vec<u32> = (0..12).map(|_| z.sample(&mut rng)).collect();
        assert_eq!(keys, [53, 8, 3, 1, 5, 12, 36, 0, 0, 14, 49, 9]);
        let mut rng = Stream::new(7, Purpose::CacheKeys, 3);
        let z = Zipf::new(10, 0.0);
        let keys: Vec<u32> = (0..12).map(|_| z.sample(&mut rng)).collect();
        assert_eq!(keys, [1, 5, 0, 7, 9, 8, 3, 5, 4, 4, 8, 5]);
        let mut rng = Stream::new(1, Purpose::CacheKeys, 1);
        let z = Zipf::new(1_000_000, 1.0);
        let keys: Vec<u32> = (0..8).map(|_| z.sample(&mut rng)).collect();
        assert_eq!(keys, [13, 661983, 235240, 52, 12, 32, 878740, 153649]);
    }

    /// The frequencies of 400 000 draws match the pmf within 5 standard
    /// errors, for several sizes and exponents (the uniform one included).
    #[test]
    fn zipf_frequencies_match_the_pmf() {
        for (n, s) in [(10, 0.0), (50, 0.8), (200, 1.0), (1000, 1.3), (5, 3.0)] {
            let z = Zipf::new(n, s);
            let p = pmf(n, s);
            let draws = 400_000u32;
            let mut seen = vec![0u32; n as usize];
            let mut rng = Stream::new(3, Purpose::CacheKeys, u64::from(n));
            for _ in 0..draws {
                seen[z.sample(&mut rng) as usize] += 1;
            }
            for (k, (&c, &q)) in seen.iter().zip(&p).enumerate().take(20) {
                let f = f64::from(c) / f64::from(draws);
                let se = (q * (1.0 - q) / f64::from(draws)).sqrt();
                assert!(
                    (f - q).abs() <= 5.0 * se + 1e-9,
                    "n {n} s {s} key {k}: {f} vs {q} (se {se})"
                );
            }
        }
    }

    #[test]
    fn lru_evicts_the_least_recently_used() {
        let mut c: Cache<u32> = Cache::new(cfg(10, 3));
        for k in [1, 2, 3] {
            assert_eq!(c.lookup(k, 0, 0), Lookup::Miss { leads: false });
            c.fill(k, 0);
        }
        assert_eq!(c.recency(), vec![3, 2, 1]);
        assert_eq!(c.lookup(1, 0, 0), Lookup::Hit);
        assert_eq!(c.recency(), vec![1, 3, 2]);
        assert_eq!(c.lookup(4, 0, 0), Lookup::Miss { leads: false });
        c.fill(4, 0);
        assert_eq!(c.recency(), vec![4, 1, 3]);
        assert!(!c.holds(2));
        assert_eq!(c.lookup(2, 0, 0), Lookup::Miss { leads: false });
        assert_eq!(
            c.counts,
            CacheCounts {
                hits: 1,
                misses: 5,
                coalesced: 0
            }
        );
        c.flush(true);
        assert!(c.is_empty());
        c.fill(2, 0);
        assert!(c.is_empty(), "nothing is stored while a flush lasts");
        c.flush(false);
        c.fill(2, 0);
        assert_eq!(c.recency(), vec![2]);
        let warm: Cache<u32> = Cache::new(CacheConfig {
            warm: true,
            ..cfg(10, 3)
        });
        assert_eq!(warm.recency(), vec![0, 1, 2]);
    }

    #[test]
    fn an_entry_expires_its_ttl_after_the_fill() {
        let mut c: Cache<u32> = Cache::new(CacheConfig {
            ttl: Some(100),
            ..cfg(10, 3)
        });
        for k in [1, 2, 3] {
            c.lookup(k, 0, 0);
            c.fill(k, 0);
        }
        assert_eq!(c.lookup(2, 99, 0), Lookup::Hit);
        // Expired: dropped, and the entries stay consistent.
        assert_eq!(c.lookup(1, 100, 0), Lookup::Miss { leads: false });
        assert_eq!(c.len(), 2);
        assert_eq!(c.recency(), vec![2, 3]);
        c.fill(1, 100);
        assert_eq!(c.recency(), vec![1, 2, 3]);
        assert_eq!(c.lookup(1, 199, 0), Lookup::Hit);
        assert_eq!(c.lookup(3, 150, 0), Lookup::Miss { leads: false });
        assert_eq!(c.recency(), vec![1, 2]);
    }

    #[test]
    fn coalescing_keeps_one_miss_per_key_in_flight() {
        let mut c: Cache<u32> = Cache::new(CacheConfig {
            coalesce: true,
            ..cfg(10, 3)
        });
        assert_eq!(c.lookup(5, 0, 1), Lookup::Miss { leads: true });
        assert_eq!(c.lookup(5, 0, 2), Lookup::Joined);
        assert_eq!(c.lookup(6, 0, 3), Lookup::Miss { leads: true });
        assert_eq!(c.lookup(5, 0, 4), Lookup::Joined);
        assert_eq!(c.flights_open(), 2);
        let f = c.land(5).unwrap();
        // Landed: a new request for the key leads a new flight.
        assert_eq!(c.lookup(5, 0, 9), Lookup::Miss { leads: true });
        assert_eq!(c.pop_waiter(f), Some(2));
        assert_eq!(c.pop_waiter(f), Some(4));
        assert_eq!(c.pop_waiter(f), None);
        assert_eq!(c.counts.coalesced, 2);
        assert_eq!(c.counts.misses, 3);
        // Slots are reused: no growth over many flights.
        for i in 0..1000 {
            let key = 7 + (i % 2);
            assert_eq!(c.lookup(key, 0, i), Lookup::Miss { leads: true });
            assert_eq!(c.lookup(key, 0, i), Lookup::Joined);
            let f = c.land(key).unwrap();
            while c.pop_waiter(f).is_some() {}
        }
        assert!(c.flights.len() <= 4 && c.waiters.len() <= 3);
    }

    /// Random operations against a naive model: an ordered list of
    /// (key, expiry), most recent first, and per key the misses in
    /// flight.
    #[test]
    fn the_lru_agrees_with_a_naive_model() {
        let mut rng = Stream::new(9, Purpose::CacheKeys, 0);
        for coalesce in [false, true] {
            let mut c: Cache<u32> = Cache::new(CacheConfig {
                keys: 20,
                exponent: 0.7,
                capacity: 6,
                ttl: Some(50),
                coalesce,
                warm: false,
            });
            let mut list: Vec<(u32, Nanos)> = Vec::new();
            let mut in_flight = [0u32; 20];
            let mut now = 0;
            for i in 0..20_000 {
                now += rng.below(5) as Nanos;
                let key = c.draw_key(&mut rng);
                let pos = list.iter().position(|&(k, _)| k == key);
                let got = c.lookup(key, now, i);
                match pos {
                    Some(p) if now < list[p].1 => {
                        assert_eq!(got, Lookup::Hit);
                        let e = list.remove(p);
                        list.insert(0, e);
                    }
                    _ => {
                        if let Some(p) = pos {
                            list.remove(p);
                        }
                        assert_ne!(got, Lookup::Hit);
                        if got != Lookup::Joined {
                            in_flight[key as usize] += 1;
                        }
                    }
                }
                if coalesce {
                    assert!(in_flight[key as usize] <= 1, "key {key}");
                }
                // Now and then a miss in flight lands and fills.
                if rng.chance(0.3)
                    && let Some(k) = (0..20).find(|&k| in_flight[k as usize] > 0)
                {
                    in_flight[k as usize] -= 1;
                    if let Some(f) = c.land(k) {
                        while c.pop_waiter(f).is_some() {}
                    }
                    c.fill(k, now);
                    if let Some(p) = list.iter().position(|&(x, _)| x == k) {
                        list.remove(p);
                    }
                    list.insert(0, (k, now + 50));
                    list.truncate(6);
                }
                assert_eq!(
                    c.recency(),
                    list.iter().map(|&(k, _)| k).collect::<Vec<_>>()
                );
            }
        }
    }

    /// The stationary hit ratio of LRU under independent Zipf requests
    /// (each miss filled at once) agrees with Che's approximation within
    /// 4 standard errors of the estimate (from batch means) plus 1% for
    /// the approximation itself.
    #[test]
    fn the_lru_hit_ratio_follows_ches_approximation() {
        for (keys, s, cap) in [(1000, 0.8, 100), (5000, 1.0, 200), (1000, 1.3, 50)] {
            let mut c: Cache<u32> = Cache::new(CacheConfig {
                keys,
                exponent: s,
                capacity: cap,
                ttl: None,
                coalesce: false,
                warm: false,
            });
            let mut rng = Stream::new(11, Purpose::CacheKeys, u64::from(keys));
            let warm = 50_000;
            for _ in 0..warm {
                let k = c.draw_key(&mut rng);
                if c.lookup(k, 0, 0) != Lookup::Hit {
                    c.fill(k, 0);
                }
            }
            let (batches, each) = (40, 10_000);
            let mut ratios = Vec::new();
            for _ in 0..batches {
                let mut hits = 0;
                for _ in 0..each {
                    let k = c.draw_key(&mut rng);
                    if c.lookup(k, 0, 0) == Lookup::Hit {
                        hits += 1;
                    } else {
                        c.fill(k, 0);
                    }
                }
                ratios.push(f64::from(hits) / f64::from(each));
            }
            let mean = ratios.iter().sum::<f64>() / batches as f64;
            let var =
                ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (batches as f64 - 1.0);
            let se = (var / batches as f64).sqrt();
            let che = che_hit_ratio(&pmf(keys, s), cap);
            assert!(
                (mean - che).abs() <= 4.0 * se + 0.01,
                "keys {keys} s {s} capacity {cap}: {mean} vs Che {che} (se {se})"
            );
        }
    }
}
