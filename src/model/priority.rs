//! Priority classes and priority shedding. The clients send a mix of
//! classes, most important first (Google's criticality tiers, from
//! CRITICAL_PLUS down to SHEDDABLE: the SRE book, "Handling Overload";
//! Netflix's request priorities: "Keeping Netflix Reliable Using
//! Prioritized Load Shedding"); each logical request draws its class once,
//! and every call and retry made for it carries that class.
//!
//! A service may shed by priority: a class with a threshold is refused at
//! once when it would have to wait in a replica's queue that already holds
//! that many requests (Envoy's overload manager triggers each of its
//! actions at its own threshold of a resource; its `priority_load_shed`
//! filter and Netflix's partitioned limiter shed the lower priorities
//! first). A lower class given a lower threshold is shed first; a class
//! without one is never shed this way.

use crate::engine::Stream;

/// The clients' class mix, most important class first: each class's
/// name and share, and the cumulative shares a draw compares with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassMix {
    classes: Vec<(String, f64)>,
    cumulative: Vec<f64>,
}

impl ClassMix {
    /// The mix of these classes: (name, share) in class order, the shares
    /// summing to 1.
    pub fn new(classes: Vec<(String, f64)>) -> Self {
        let shares: Vec<f64> = classes.iter().map(|c| c.1).collect();
        let mut sum = 0.0;
        let mut cumulative: Vec<f64> = shares
            .iter()
            .map(|s| {
                sum += s;
                sum
            })
            .collect();
        if let Some(last) = cumulative.last_mut() {
            // Rounding never leaves a draw past the last class.
            *last = f64::INFINITY;
        }
        ClassMix {
            classes,
            cumulative,
        }
    }

    /// Each class's name and share, in class order.
    pub fn classes(&self) -> &[(String, f64)] {
        &self.classes
    }

    /// Classes in the mix (0: requests carry no class).
    pub fn len(&self) -> usize {
        self.cumulative.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cumulative.is_empty()
    }

    /// A request's class, from one uniform draw of `rng` (none drawn when
    /// the mix is empty: class 0).
    #[inline]
    pub fn draw(&self, rng: &mut Stream) -> u8 {
        if self.cumulative.len() <= 1 {
            return 0;
        }
        let u = rng.unit();
        self.cumulative.iter().position(|&c| u < c).unwrap_or(0) as u8
    }
}

/// A service's priority shedding: per class, the queue length (per
/// replica) from which a request of that class is refused rather than
/// queued; `None`: never.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShedThresholds(pub Vec<Option<u32>>);

impl ShedThresholds {
    /// Whether a request of `class` that would wait behind `queued`
    /// requests is shed instead.
    #[inline]
    pub fn sheds(&self, class: u8, queued: u32) -> bool {
        self.0
            .get(class as usize)
            .copied()
            .flatten()
            .is_some_and(|t| queued >= t)
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Purpose;

    #[test]
    fn a_class_sheds_from_its_threshold_on() {
        let t = ShedThresholds(vec![None, Some(3)]);
        assert!(!t.sheds(0, 1_000_000));
        assert!(!t.sheds(1, 2));
        assert!(t.sheds(1, 3));
        assert!(t.sheds(1, 4));
        // A class the service does not name is never shed.
        assert!(!t.sheds(7, 1_000_000));
        assert!(!ShedThresholds::default().sheds(0, u32::MAX));
    }

    #[test]
    fn draws_follow_the_shares() {
        let mix = ClassMix::new(
            [("a", 0.2), ("b", 0.3), ("c", 0.5)]
                .map(|(n, s)| (n.to_string(), s))
                .into(),
        );
        let mut rng = Stream::new(7, Purpose::Priority, 0);
        let n = 200_000;
        let mut counts = [0u32; 3];
        for _ in 0..n {
            counts[mix.draw(&mut rng) as usize] += 1;
        }
        for (k, p) in [0.2, 0.3, 0.5].into_iter().enumerate() {
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            let got = counts[k] as f64 / n as f64;
            assert!((got - p).abs() < 5.0 * sd, "class {k}: {got} vs {p}");
        }
        // One class, or none: no draw.
        let mut again = Stream::new(7, Purpose::Priority, 0);
        let one = ClassMix::new(vec![("all".to_string(), 1.0)]);
        assert_eq!(one.draw(&mut again), 0);
        assert_eq!(again.unit(), Stream::new(7, Purpose::Priority, 0).unit());
    }
}
