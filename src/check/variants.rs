//! `stormsim check` on a scenario with variants or a sweep: every variant
//! (every sweep point) is reviewed, as a user comparing policies expects,
//! and variants whose reviews are the same are shown once, together. The
//! output stays bounded for a large sweep: at most [`MAX_REVIEWS`]
//! different reviews are shown (the variants with other reviews are named
//! and counted, and their error findings still count) and at most
//! [`MAX_REVIEWED`] variants are reviewed, fewer when their policies are
//! large (the rest are counted).

use serde::Serialize;

use crate::scenario::{Scenario, ScenarioErrors, expand_all};

use super::{Report, Severity, check};

/// Different reviews shown at most.
pub const MAX_REVIEWS: usize = 20;
/// Variants (sweep points) reviewed at most.
pub const MAX_REVIEWED: usize = 500;
/// Work allowed for all the reviews: the attempts of every layer or call
/// reviewed (a review's time grows with them), summed over the variants.
const MAX_WORK: u64 = 400_000;

/// One review and the variants it is the review of.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariantReview {
    /// The variants with this same review, in scenario order.
    pub variants: Vec<String>,
    pub review: Report,
}

/// The reviews of every variant of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reviews {
    pub scenario: String,
    /// Variants (sweep points included) the scenario runs.
    pub variants_total: usize,
    /// The different reviews, in the order of their first variant.
    pub reviews: Vec<VariantReview>,
    /// Variants reviewed whose review differs from every one shown (past
    /// [`MAX_REVIEWS`]), and those of them with an error finding.
    pub not_shown: Vec<String>,
    pub not_shown_with_errors: usize,
    /// Variants not reviewed at all (past [`MAX_REVIEWED`]).
    pub not_reviewed: usize,
}

impl Reviews {
    /// Whether any reviewed variant has an error finding.
    pub fn has_errors(&self) -> bool {
        self.not_shown_with_errors > 0 || self.reviews.iter().any(|r| r.review.has_errors())
    }

    /// The one review of a scenario that runs one variant, if it does.
    pub fn single(&self) -> Option<&Report> {
        match &self.reviews[..] {
            [one] if self.variants_total == 1 => Some(&one.review),
            _ => None,
        }
    }
}

/// Reviews every variant of `s` (a validated scenario).
pub fn check_variants(s: &Scenario) -> Result<Reviews, ScenarioErrors> {
    let all = expand_all(s)?;
    let total = all.len();
    let mut out = Reviews {
        scenario: s.name.clone(),
        variants_total: total,
        reviews: Vec::new(),
        not_shown: Vec::new(),
        not_shown_with_errors: 0,
        not_reviewed: 0,
    };
    let mut work = 0u64;
    for (i, e) in all.into_iter().enumerate() {
        work = work.saturating_add(cost(&e.scenario));
        if i >= MAX_REVIEWED || (i > 0 && work > MAX_WORK) {
            out.not_reviewed = total - i;
            break;
        }
        let review = check(&e.scenario);
        if let Some(same) = out.reviews.iter_mut().find(|r| r.review == review) {
            same.variants.push(e.name);
        } else if out.reviews.len() < MAX_REVIEWS {
            out.reviews.push(VariantReview {
                variants: vec![e.name],
                review,
            });
        } else {
            out.not_shown_with_errors += usize::from(review.has_errors());
            out.not_shown.push(e.name);
        }
    }
    Ok(out)
}

/// What reviewing `s` costs: the attempts of its layers and calls.
fn cost(s: &Scenario) -> u64 {
    let attempts = |r: &crate::scenario::types::Retry| u64::from(r.max_attempts.max(1));
    let calls = s
        .clients
        .calls
        .iter()
        .chain(s.services.iter().flat_map(|x| &x.calls))
        .map(|c| attempts(&c.retry));
    1 + s
        .layers
        .iter()
        .map(|l| attempts(&l.retry))
        .chain(calls)
        .sum::<u64>()
}

/// The findings of a review, counted: errors, warnings, info.
pub fn counts(r: &Report) -> (usize, usize, usize) {
    let n = |sev| r.findings.iter().filter(|f| f.severity == sev).count();
    (n(Severity::Error), n(Severity::Warning), n(Severity::Info))
}
