//! Service-time distributions of the dependency's workers.
//!
//! The lognormal is given as the scenario gives it (median and p99):
//! `mu = ln(median)`, `sigma = (ln(p99) - mu) / z_0.99` with
//! z_0.99 = 2.326 347 874 040 841. Samples are `exp(mu + sigma * z)` computed
//! through `libm`, never `rand_distr::LogNormal`: the latter changes in the
//! last bit when another crate enables `num-traits/std`
//! (docs/sources/engineering-notes.md, "Determinism").

use crate::engine::{Nanos, Stream, time::from_f64_ns};

/// The standard normal quantile at 0.99.
pub const Z_99: f64 = 2.326_347_874_040_841;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ServiceDist {
    Constant(Nanos),
    Exponential {
        mean: Nanos,
    },
    /// Parameters of ln(service time in ns).
    Lognormal {
        mu: f64,
        sigma: f64,
    },
    Uniform {
        min: Nanos,
        max: Nanos,
    },
}

impl ServiceDist {
    pub fn lognormal_from_median_p99(median: Nanos, p99: Nanos) -> Self {
        let mu = libm::log(median as f64);
        let sigma = ((libm::log(p99 as f64) - mu) / Z_99).max(0.0);
        ServiceDist::Lognormal { mu, sigma }
    }

    /// The mean service time in nanoseconds.
    pub fn mean(&self) -> f64 {
        match *self {
            ServiceDist::Constant(v) => v as f64,
            ServiceDist::Exponential { mean } => mean as f64,
            ServiceDist::Lognormal { mu, sigma } => libm::exp(mu + sigma * sigma / 2.0),
            ServiceDist::Uniform { min, max } => (min as f64 + max as f64) / 2.0,
        }
    }

    /// One sample, at least 1 ns (a zero service time would let a worker
    /// serve unboundedly many requests at one instant).
    #[inline]
    pub fn sample(&self, rng: &mut Stream) -> Nanos {
        let ns = match *self {
            ServiceDist::Constant(v) => return v.max(1),
            ServiceDist::Exponential { mean } => mean as f64 * rng.exp1(),
            ServiceDist::Lognormal { mu, sigma } => libm::exp(mu + sigma * rng.std_normal()),
            ServiceDist::Uniform { min, max } => rng.uniform(min as f64, max as f64),
        };
        from_f64_ns(ns).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, Purpose};

    fn sample_mean_and_sorted(d: ServiceDist, n: usize) -> (f64, Vec<Nanos>) {
        let mut rng = Stream::new(11, Purpose::ServiceTimes, 0);
        let mut v: Vec<Nanos> = (0..n).map(|_| d.sample(&mut rng)).collect();
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
        v.sort_unstable();
        (mean, v)
    }

    /// The sample mean is within 4 standard errors of the distribution's
    /// mean, the standard error estimated from the sample (sd / √n).
    #[test]
    fn means_match() {
        for d in [
            ServiceDist::Exponential {
                mean: 25 * NS_PER_MS,
            },
            ServiceDist::Uniform {
                min: 10 * NS_PER_MS,
                max: 30 * NS_PER_MS,
            },
            ServiceDist::lognormal_from_median_p99(20 * NS_PER_MS, 120 * NS_PER_MS),
        ] {
            let n = 100_000;
            let (m, v) = sample_mean_and_sorted(d, n);
            let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / (n - 1) as f64;
            let se = (var / n as f64).sqrt();
            assert!(
                (m - d.mean()).abs() < 4.0 * se,
                "{d:?}: {m} vs {} (SE {se})",
                d.mean()
            );
            // The SE itself is what the distribution says: CV/√n.
            assert!(se / d.mean() < 0.005, "{d:?}: SE {se}");
        }
        // Exact cases.
        let (m, v) = sample_mean_and_sorted(ServiceDist::Constant(20 * NS_PER_MS), 100);
        assert_eq!((m, v[0], v[99]), (20e6, 20 * NS_PER_MS, 20 * NS_PER_MS));
        let mut rng = Stream::new(1, Purpose::ServiceTimes, 0);
        assert_eq!(
            ServiceDist::Constant(0).sample(&mut rng),
            1,
            "at least 1 ns"
        );
        assert_eq!(
            ServiceDist::Uniform { min: 0, max: 0 }.sample(&mut rng),
            1,
            "at least 1 ns"
        );
        assert_eq!(ServiceDist::Constant(7).mean(), 7.0);
        assert_eq!(ServiceDist::Uniform { min: 10, max: 31 }.mean(), 20.5);
        assert_eq!(ServiceDist::Exponential { mean: 9 }.mean(), 9.0);
        let ln = ServiceDist::Lognormal {
            mu: 1.0,
            sigma: 0.5,
        };
        assert!((ln.mean() - (1.125f64).exp()).abs() < 1e-12);
    }

    /// The share of samples below a quantile q is binomial: within 4
    /// standard errors √(q(1 − q)/n) of q. Checked at the exponential's
    /// mean (q = 1 − 1/e), the lognormal's median and p99, and the
    /// uniform's quartile.
    #[test]
    fn quantiles_hold_their_share_of_the_samples() {
        let n = 100_000;
        let ms = NS_PER_MS as f64;
        for (d, at, q) in [
            (
                ServiceDist::Exponential {
                    mean: 25 * NS_PER_MS,
                },
                25.0 * ms,
                1.0 - (-1f64).exp(),
            ),
            (
                ServiceDist::lognormal_from_median_p99(20 * NS_PER_MS, 120 * NS_PER_MS),
                20.0 * ms,
                0.5,
            ),
            (
                ServiceDist::lognormal_from_median_p99(20 * NS_PER_MS, 120 * NS_PER_MS),
                120.0 * ms,
                0.99,
            ),
            (
                ServiceDist::Uniform {
                    min: 10 * NS_PER_MS,
                    max: 30 * NS_PER_MS,
                },
                15.0 * ms,
                0.25,
            ),
        ] {
            let (_, v) = sample_mean_and_sorted(d, n);
            let below = v.iter().filter(|&&x| (x as f64) < at).count() as f64 / n as f64;
            let se = (q * (1.0 - q) / n as f64).sqrt();
            assert!(
                (below - q).abs() < 4.0 * se,
                "{d:?}: {below} below {at}, expected {q} ± {se}"
            );
        }
        // A p99 below the median has no spread.
        assert_eq!(
            ServiceDist::lognormal_from_median_p99(20, 10),
            ServiceDist::Lognormal {
                mu: 20f64.ln(),
                sigma: 0.0
            }
        );
    }
}
