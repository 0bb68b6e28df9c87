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

    #[test]
    fn means_match() {
        for d in [
            ServiceDist::Constant(20 * NS_PER_MS),
            ServiceDist::Exponential {
                mean: 25 * NS_PER_MS,
            },
            ServiceDist::Uniform {
                min: 10 * NS_PER_MS,
                max: 30 * NS_PER_MS,
            },
            ServiceDist::lognormal_from_median_p99(20 * NS_PER_MS, 120 * NS_PER_MS),
        ] {
            let (m, _) = sample_mean_and_sorted(d, 400_000);
            // Relative error well under 1% for 400k samples of these
            // (coefficient of variation <= 1.2: sd of the mean < 0.2%).
            assert!(
                (m / d.mean() - 1.0).abs() < 0.01,
                "{d:?}: {m} vs {}",
                d.mean()
            );
        }
    }

    #[test]
    fn lognormal_hits_its_median_and_p99() {
        let d = ServiceDist::lognormal_from_median_p99(20 * NS_PER_MS, 120 * NS_PER_MS);
        let n = 400_000;
        let (_, v) = sample_mean_and_sorted(d, n);
        let median = v[n / 2] as f64 / NS_PER_MS as f64;
        let p99 = v[n * 99 / 100] as f64 / NS_PER_MS as f64;
        assert!((median / 20.0 - 1.0).abs() < 0.01, "{median}");
        assert!((p99 / 120.0 - 1.0).abs() < 0.03, "{p99}");
    }
}
