//! The first round's candidates: every point of a small finite space, or
//! else a Latin hypercube sample of it (McKay, Beckman & Conover, 1979:
//! each dimension cut into n equal strata, each stratum used by exactly
//! one candidate), so that n candidates cover every dimension evenly
//! instead of clumping as independent draws do. Deterministic for a seed:
//! the strata are shuffled by a `Purpose::Tune` stream.

use serde_json::Value;

use crate::engine::rng::{Purpose, Stream};
use crate::scenario::tune::{Dimension, Tune, dimension};

/// The searched paths and their dimensions, in the file's order.
#[derive(Clone, Debug)]
pub struct Space {
    pub paths: Vec<String>,
    pub dims: Vec<Dimension>,
}

impl Space {
    /// The space of a validated `tune` section.
    pub fn of(t: &Tune) -> Result<Space, String> {
        let mut paths = Vec::new();
        let mut dims = Vec::new();
        for (p, v) in &t.space {
            dims.push(dimension(v).map_err(|e| format!("tune.space.{p}: {e}"))?);
            paths.push(p.clone());
        }
        Ok(Space { paths, dims })
    }

    /// How many distinct points it has, when every dimension is finite
    /// (and the product fits in a u64).
    pub fn size(&self) -> Option<u64> {
        self.dims
            .iter()
            .try_fold(1u64, |acc, d| acc.checked_mul(d.count()?))
    }

    /// The first round's candidates, at most `n`, distinct, in a fixed
    /// order: the whole grid (first path varying slowest) when it has at
    /// most `n` points, else a Latin hypercube sample of `n` points with
    /// repeats (possible in discrete dimensions) dropped.
    pub fn first_round(&self, n: usize, seed: u64) -> Vec<Vec<Value>> {
        if self.is_grid(n) {
            return (0..self.size().unwrap_or(0))
                .map(|i| self.grid_point(i))
                .collect();
        }
        self.sample(n, seed, 0)
    }

    /// Whether [`Space::first_round`] of `n` is the whole grid: nothing
    /// is left to draw after it.
    pub fn is_grid(&self, n: usize) -> bool {
        self.size().is_some_and(|size| size <= n as u64)
    }

    /// Draw `batch` of a Latin hypercube sample of `n` points, repeats
    /// dropped: batch 0 is the first round's; the later ones (their own
    /// streams of the seed) replace the candidates the scenario did not
    /// take.
    pub fn sample(&self, n: usize, seed: u64, batch: u64) -> Vec<Vec<Value>> {
        let mut rng = Stream::new(seed, Purpose::Tune, batch);
        // Per dimension, a shuffled assignment of the n strata.
        let strata: Vec<Vec<usize>> = self
            .dims
            .iter()
            .map(|_| {
                let mut order: Vec<usize> = (0..n).collect();
                for i in (1..n).rev() {
                    let j = (rng.unit() * (i + 1) as f64) as usize;
                    order.swap(i, j.min(i));
                }
                order
            })
            .collect();
        let mut out: Vec<Vec<Value>> = Vec::with_capacity(n);
        for c in 0..n {
            let point: Vec<Value> = self
                .dims
                .iter()
                .zip(&strata)
                .map(|(d, order)| d.at((order[c] as f64 + rng.unit()) / n as f64))
                .collect();
            if !out.contains(&point) {
                out.push(point);
            }
        }
        out
    }

    /// The `i`-th point of the grid of a finite space.
    fn grid_point(&self, mut i: u64) -> Vec<Value> {
        let mut point = vec![Value::Null; self.dims.len()];
        for (k, d) in self.dims.iter().enumerate().rev() {
            let n = d.count().unwrap_or(1).max(1);
            point[k] = d.nth(i % n);
            i /= n;
        }
        point
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn space(entries: &[(&str, Value)]) -> Space {
        let mut t = Tune::default();
        for (p, v) in entries {
            t.space.insert(p.to_string(), v.clone());
        }
        Space::of(&t).unwrap()
    }

    #[test]
    fn a_small_space_is_searched_whole_in_grid_order() {
        let s = space(&[("a", json!({"int": [1, 3]})), ("b", json!(["x", "y"]))]);
        assert_eq!(s.size(), Some(6));
        let pts = s.first_round(10, 1);
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[0], vec![json!(1), json!("x")]);
        assert_eq!(pts[1], vec![json!(1), json!("y")]);
        assert_eq!(pts[5], vec![json!(3), json!("y")]);
    }

    #[test]
    fn a_latin_hypercube_uses_every_stratum_once() {
        let s = space(&[
            ("a", json!({"int": [0, 9]})),
            ("b", json!({"range": [0, 100]})),
        ]);
        let pts = s.first_round(10, 7);
        // 10 strata of 10 integers: each integer exactly once.
        let mut a: Vec<i64> = pts.iter().map(|p| p[0].as_i64().unwrap()).collect();
        a.sort();
        assert_eq!(a, (0..10).collect::<Vec<_>>());
        // Each tenth of [0, 100] holds exactly one b.
        let mut tenth: Vec<u64> = pts
            .iter()
            .map(|p| (p[1].as_f64().unwrap() / 10.0).floor() as u64)
            .map(|t| t.min(9))
            .collect();
        tenth.sort();
        assert_eq!(tenth, (0..10).collect::<Vec<_>>());
        // Same seed, same points; another seed, others.
        assert_eq!(pts, s.first_round(10, 7));
        assert_ne!(pts, s.first_round(10, 8));
    }

    #[test]
    fn repeats_in_a_coarse_dimension_are_dropped() {
        let s = space(&[
            ("a", json!(["x", "y"])),
            ("b", json!({"log": ["10ms", "1s"]})),
        ]);
        assert_eq!(s.size(), None);
        let pts = s.first_round(20, 3);
        for (i, p) in pts.iter().enumerate() {
            assert!(!pts[..i].contains(p));
        }
        // Half the strata of `a` are x, half y (less any repeat dropped).
        let xs = pts.iter().filter(|p| p[0] == json!("x")).count();
        assert!(
            xs <= 10 && pts.len() - xs <= 10 && pts.len() >= 18,
            "{pts:?}"
        );
    }
}
