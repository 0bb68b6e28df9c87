//! How a search spends its budget: successive halving (Jamieson &
//! Talwalkar, 2016; the bracket of Hyperband, Li et al., 2018). Many
//! candidates are run on one replicate each; the best third of them go on
//! to three times the replicates, and so on, so that the runs go where
//! the ranking is close and the decision matters. Replicate r of every
//! candidate runs on the same seed (common random numbers, as variants
//! do), so candidates are compared under the same arrivals and failures.
//!
//! The schedule is fixed before any run: the most rounds (a final round
//! of at least two candidates) whose runs fit the budget, then as many
//! first-round candidates as fit, then, for a small finite space, more
//! replicates per candidate. It never spends more than the budget.

/// How much more each round replicates, and how many fewer candidates it
/// keeps.
pub const ETA: u64 = 3;

/// One round: how many candidates run, on replicates `0..replicates`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    pub candidates: u64,
    pub replicates: u64,
}

/// The rounds from `n0` candidates at `r0` replicates: each keeps the
/// best third (rounded up) at three times the replicates, down to a round
/// of at least two, `rounds` rounds in all.
fn rounds_of(n0: u64, r0: u64, rounds: u32) -> Vec<Round> {
    let mut out = vec![Round {
        candidates: n0,
        replicates: r0,
    }];
    for _ in 1..rounds {
        let last = out[out.len() - 1];
        out.push(Round {
            candidates: last.candidates.div_ceil(ETA),
            replicates: last.replicates * ETA,
        });
    }
    out
}

/// The runs a schedule spends: each round runs its candidates on the
/// replicates the round before did not.
pub fn cost(rounds: &[Round]) -> u64 {
    let mut prev = 0;
    let mut total = 0u64;
    for r in rounds {
        total = total.saturating_add(r.candidates.saturating_mul(r.replicates - prev));
        prev = r.replicates;
    }
    total
}

/// The schedule of a search of `budget` runs over a space of `size`
/// points (`None`: unbounded).
pub fn schedule(budget: u64, size: Option<u64>) -> Vec<Round> {
    let budget = budget.max(1);
    let size = size.unwrap_or(u64::MAX).max(1);
    let most_candidates = |rounds: u32| -> u64 {
        // The cost grows with n0: the largest n0 that fits.
        let (mut lo, mut hi) = (0u64, budget.min(size));
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if cost(&rounds_of(mid, 1, rounds)) <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    };
    let mut best = rounds_of(most_candidates(1).max(1), 1, 1);
    for rounds in 2..=40 {
        let n0 = most_candidates(rounds);
        let plan = rounds_of(n0, 1, rounds);
        // Each round must narrow the field, down to a final of two or more.
        let narrows = plan.windows(2).all(|w| w[1].candidates < w[0].candidates);
        if n0 == 0 || plan[plan.len() - 1].candidates < 2 || !narrows {
            break;
        }
        best = plan;
    }
    // A small space leaves budget over: more replicates for everyone.
    let unit = cost(&best);
    let r0 = (budget / unit.max(1)).max(1);
    let n0 = best[0].candidates;
    rounds_of(n0, r0, best.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_of_200_over_an_open_space() {
        let s = schedule(200, None);
        let shape: Vec<(u64, u64)> = s.iter().map(|r| (r.candidates, r.replicates)).collect();
        // Several rounds, within the budget, ending on two or more.
        assert!(cost(&s) <= 200, "{shape:?}");
        assert!(s.len() >= 3, "{shape:?}");
        assert!(s[s.len() - 1].candidates >= 2);
        // One more first-round candidate would not fit.
        let more = rounds_of(s[0].candidates + 1, 1, s.len() as u32);
        assert!(cost(&more) > 200);
    }

    #[test]
    fn exact_costs() {
        let s = rounds_of(9, 1, 3);
        assert_eq!(
            s,
            [
                Round {
                    candidates: 9,
                    replicates: 1
                },
                Round {
                    candidates: 3,
                    replicates: 3
                },
                Round {
                    candidates: 1,
                    replicates: 9
                }
            ]
        );
        assert_eq!(cost(&s), 9 + 3 * 2 + 6);
    }

    #[test]
    fn a_small_space_gets_more_replicates() {
        // 6 points: 6 on r, then 2 on 3r: 6r + 4r = 10r ≤ 100.
        let s = schedule(100, Some(6));
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].candidates, 6);
        assert_eq!(s[0].replicates, 10);
        assert_eq!(s[1].candidates, 2);
        assert_eq!(cost(&s), 100);
    }

    #[test]
    fn never_over_budget() {
        for budget in 1..400 {
            for size in [Some(1), Some(2), Some(5), Some(40), None] {
                let s = schedule(budget, size);
                assert!(cost(&s) <= budget, "{budget} {size:?} {s:?}");
                assert!(s[0].candidates >= 1);
                assert!(s[0].candidates <= size.unwrap_or(u64::MAX));
            }
        }
    }
}
