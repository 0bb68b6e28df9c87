//! Slowdown under load: a service whose work takes longer the busier its
//! replica is (lock contention, garbage collection, cache thrashing, CPU
//! run queues). The service time drawn for a request is stretched by a
//! curve of u, the fraction of the replica's workers busy when the work
//! starts, the request's own worker included (so a lone request on an
//! idle single-worker replica already sees u = 1 ÷ workers, and a full
//! replica u = 1):
//!
//! - `linear`: × (1 + factor·u);
//! - `polynomial`: × (1 + factor·u^exponent);
//! - `exponential`: × e^(factor·u).
//!
//! These are the load-dependent latency curves of stability-sim
//! (marcbrooker/stability-sim, `applyLoadDependentLatency` in
//! `src/engine/components/shared.ts`, u = busy workers ÷ pool size).
//! A slower service completes less work with the same workers, so once a
//! spike fills it, it stays full: the *capacity degradation* sustaining
//! effect of metastable failures (Bronson et al., "Metastable Failures in
//! Distributed Systems", HotOS 2021; Huang et al., OSDI 2022), which needs
//! no retry to persist.

/// How a service's work stretches with the fraction of busy workers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slowdown {
    /// × (1 + factor·u).
    Linear { factor: f64 },
    /// × (1 + factor·u^exponent).
    Polynomial { factor: f64, exponent: f64 },
    /// × e^(factor·u).
    Exponential { factor: f64 },
}

impl Slowdown {
    /// The factor service times are multiplied by at utilization `u`
    /// (clamped to [0, 1]); at least 1 for non-negative factors.
    #[inline]
    pub fn stretch(self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        match self {
            Slowdown::Linear { factor } => 1.0 + factor * u,
            Slowdown::Polynomial { factor, exponent } => 1.0 + factor * u.powf(exponent),
            Slowdown::Exponential { factor } => (factor * u).exp(),
        }
    }

    /// The stretch of a full replica (u = 1): how much slower a saturated
    /// service works, so its capacity is nominal ÷ this.
    pub fn at_full_load(self) -> f64 {
        self.stretch(1.0)
    }

    /// The most work a replica completes, as a fraction of its nominal
    /// capacity, and the u where it does: with a fraction u of its workers
    /// busy it completes u ÷ stretch(u) of it (a mean-field figure, found
    /// on a grid of 1000 steps of u). When that peak is above 1 ÷
    /// stretch(1), what a full replica completes, the curve falls past the
    /// peak: a load between the two is served while the replica is lightly
    /// busy, but once a spike fills it, it stays full (capacity
    /// degradation). Linear slowdown never falls (u ÷ (1 + f·u) only
    /// grows); exponential falls for factor > 1, polynomial for
    /// factor·(exponent − 1) > 1.
    pub fn peak_throughput(self) -> (f64, f64) {
        (1..=1000)
            .map(|i| {
                let u = i as f64 / 1000.0;
                (u / self.stretch(u), u)
            })
            .fold((0.0, 1.0), |best, x| if x.0 > best.0 { x } else { best })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_match_their_formulas() {
        let lin = Slowdown::Linear { factor: 2.0 };
        assert_eq!(lin.stretch(0.0), 1.0);
        assert_eq!(lin.stretch(0.5), 2.0);
        assert_eq!(lin.at_full_load(), 3.0);
        let poly = Slowdown::Polynomial {
            factor: 4.0,
            exponent: 2.0,
        };
        assert_eq!(poly.stretch(0.5), 2.0);
        assert_eq!(poly.at_full_load(), 5.0);
        let exp = Slowdown::Exponential { factor: 2.0 };
        assert_eq!(exp.stretch(0.0), 1.0);
        assert!((exp.stretch(0.5) - std::f64::consts::E).abs() < 1e-12);
        // u is a fraction: anything outside [0, 1] is clamped.
        assert_eq!(lin.stretch(7.0), 3.0);
        assert_eq!(lin.stretch(-1.0), 1.0);
    }

    #[test]
    fn only_falling_curves_have_a_peak_below_full_load() {
        // Linear: u ÷ (1 + 2u) grows to 1/3 at u = 1.
        let (peak, at) = Slowdown::Linear { factor: 2.0 }.peak_throughput();
        assert_eq!((peak, at), (1.0 / 3.0, 1.0));
        // e^(3u): u·e^(−3u) peaks at u = 1/3 with 1/(3e) = 0.1226, and a
        // full replica does e^−3 = 0.0498.
        let e3 = Slowdown::Exponential { factor: 3.0 };
        let (peak, at) = e3.peak_throughput();
        assert!((at - 1.0 / 3.0).abs() < 1e-3, "{at}");
        assert!((peak - 1.0 / (3.0 * std::f64::consts::E)).abs() < 1e-6);
        assert!((1.0 / e3.at_full_load() - (-3.0f64).exp()).abs() < 1e-12);
        // Polynomial 1 + 3u²: peaks at u = 1/√3 (f·(k − 1) = 3 > 1).
        let (_, at) = Slowdown::Polynomial {
            factor: 3.0,
            exponent: 2.0,
        }
        .peak_throughput();
        assert!((at - 1.0 / 3f64.sqrt()).abs() < 1e-3, "{at}");
        // 1 + 0.5u²: f·(k − 1) = 0.5, no fall.
        let (_, at) = Slowdown::Polynomial {
            factor: 0.5,
            exponent: 2.0,
        }
        .peak_throughput();
        assert_eq!(at, 1.0);
    }
}
