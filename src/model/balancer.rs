//! A service's load balancer: which of its replicas a request goes to.
//!
//! - `round_robin`: each replica in turn (Envoy's cluster default,
//!   `Cluster.lb_policy: ROUND_ROBIN`, the first value of the enum in
//!   envoy/config/cluster/v3/cluster.proto; also nginx's and HAProxy's).
//!   It is stormsim's default: the balancer most fleets run unless someone
//!   chose another.
//! - `random`: uniformly at random (Envoy `RANDOM`; kube-proxy in iptables
//!   mode picks a Service's endpoint at random too).
//! - `least_requests`: the replica with the fewest requests in flight, ties
//!   broken at random (Envoy `LEAST_REQUEST` with `selection_method:
//!   FULL_SCAN`). A replica that fails fast holds nothing in flight, so it
//!   wins nearly every pick: the classic black hole of least-loaded
//!   balancing.
//! - `p2c`: two replicas drawn at random (independently, so possibly the
//!   same one), the one with fewer in flight, the first on a tie: the
//!   power of two choices (Mitzenmacher 2001), which is what Envoy's
//!   `LEAST_REQUEST` does with its default `choice_count: 2`.
//!
//! A pick considers only the *candidates* (replicas not ejected by outlier
//! detection, not already tried by this request when its call says
//! `retry_other_replica`); the world widens the set when it is empty (see
//! `World::pick_replica`). "In flight" is what the balancer sees of a
//! replica, as Envoy's least-request balancers do (a host's `rq_active`):
//! the requests its callers sent it and still wait for, neither answered
//! nor given up on (`World::awaited`); a replica that swallows requests or
//! delays its answers looks busy, one that fails fast looks idle.
//! Randomness comes from the service's own stream (`Purpose::Balancer`),
//! so balancing draws no number from any stream that existed before
//! replicas.

use crate::engine::Stream;

/// How a service spreads requests over its replicas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Balancer {
    #[default]
    RoundRobin,
    Random,
    LeastRequests,
    P2c,
}

/// The live state of one service's balancer: the round-robin cursor.
#[derive(Clone, Copy, Debug, Default)]
pub struct BalancerState {
    next: u32,
}

impl Balancer {
    /// Picks one of `n` replicas among those `candidate` admits (at least
    /// one must), by `load` (requests in flight) where the policy looks at
    /// it. Draws from `rng` only when a choice is random and there is more
    /// than one candidate.
    pub fn pick(
        self,
        n: u32,
        state: &mut BalancerState,
        rng: &mut Stream,
        candidate: impl Fn(u32) -> bool,
        load: impl Fn(u32) -> u32,
    ) -> u32 {
        let count = (0..n).filter(|&r| candidate(r)).count() as u32;
        debug_assert!(count > 0, "a pick needs a candidate");
        if count <= 1 {
            return (0..n).find(|&r| candidate(r)).unwrap_or(0);
        }
        // The k-th candidate (0-based).
        let nth = |k: u32| {
            (0..n)
                .filter(|&r| candidate(r))
                .nth(k as usize)
                .unwrap_or(0)
        };
        match self {
            Balancer::RoundRobin => {
                let start = state.next % n;
                let r = (0..n)
                    .map(|k| (start + k) % n)
                    .find(|&r| candidate(r))
                    .unwrap_or(start);
                state.next = (r + 1) % n;
                r
            }
            Balancer::Random => nth(rng.below(count)),
            Balancer::LeastRequests => {
                // Reservoir sampling over the least loaded: each of the m
                // ties is kept with probability 1/m.
                let (mut best, mut best_load, mut ties) = (0, u32::MAX, 0u32);
                for r in (0..n).filter(|&r| candidate(r)) {
                    let l = load(r);
                    if l < best_load {
                        (best, best_load, ties) = (r, l, 1);
                    } else if l == best_load {
                        ties += 1;
                        if rng.below(ties) == 0 {
                            best = r;
                        }
                    }
                }
                best
            }
            Balancer::P2c => {
                let a = nth(rng.below(count));
                let b = nth(rng.below(count));
                if load(b) < load(a) { b } else { a }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Purpose;

    fn rng() -> Stream {
        Stream::new(7, Purpose::Balancer, 0)
    }

    #[test]
    fn round_robin_takes_each_candidate_in_turn() {
        let mut st = BalancerState::default();
        let mut r = rng();
        let picks: Vec<u32> = (0..7)
            .map(|_| Balancer::RoundRobin.pick(3, &mut st, &mut r, |_| true, |_| 0))
            .collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
        // Replica 1 excluded: skipped, the others keep their turns.
        let picks: Vec<u32> = (0..4)
            .map(|_| Balancer::RoundRobin.pick(3, &mut st, &mut r, |x| x != 1, |_| 0))
            .collect();
        assert_eq!(picks, [2, 0, 2, 0]);
    }

    #[test]
    fn least_requests_takes_the_least_loaded_and_splits_ties() {
        let mut st = BalancerState::default();
        let mut r = rng();
        let loads = [3, 0, 5, 0];
        let mut seen = [0u32; 4];
        for _ in 0..1000 {
            let p =
                Balancer::LeastRequests.pick(4, &mut st, &mut r, |_| true, |x| loads[x as usize]);
            seen[p as usize] += 1;
        }
        assert_eq!((seen[0], seen[2]), (0, 0));
        // Two ties, 1000 picks: each about 500 (σ ≈ 16).
        assert!((seen[1] as i64 - 500).abs() < 80, "{seen:?}");
    }

    #[test]
    fn p2c_never_takes_the_busier_of_two() {
        let mut st = BalancerState::default();
        let mut r = rng();
        let loads = [4, 1, 9, 2, 7];
        for _ in 0..1000 {
            // The two choices, drawn from a copy of the stream.
            let mut copy = r.clone();
            let (a, b) = (copy.below(5), copy.below(5));
            let p = Balancer::P2c.pick(5, &mut st, &mut r, |_| true, |x| loads[x as usize]);
            assert!(p == a || p == b, "{p} is neither {a} nor {b}");
            assert!(loads[p as usize] <= loads[a as usize].min(loads[b as usize]));
        }
        // The least loaded replica is picked whenever it is drawn: with
        // probability 1 − (4/5)² = 0.36.
        let mut r = rng();
        let n = 20_000;
        let hits = (0..n)
            .filter(|_| {
                Balancer::P2c.pick(5, &mut st, &mut r, |_| true, |x| loads[x as usize]) == 1
            })
            .count() as f64
            / n as f64;
        let se = (0.36f64 * 0.64 / n as f64).sqrt();
        assert!((hits - 0.36).abs() < 4.0 * se, "{hits}");
    }

    #[test]
    fn a_single_candidate_draws_nothing() {
        let mut st = BalancerState::default();
        let mut a = rng();
        let b = rng();
        for kind in [Balancer::Random, Balancer::LeastRequests, Balancer::P2c] {
            assert_eq!(kind.pick(4, &mut st, &mut a, |x| x == 2, |_| 0), 2);
        }
        assert_eq!(a.clone().unit(), b.clone().unit());
    }
}
