//! Priority classes in the scenario format: `clients.classes` (the mix of
//! classes the clients send, most important first, shares summing to 1)
//! and a server's `shed_by_priority` (per class, the queue length per
//! replica from which that class is shed), their validation with field
//! paths, and their translation into the model (`model::priority`).

use std::collections::{BTreeMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::priority::{ClassMix, ShedThresholds};

use super::graph::DEPENDENCY;
use super::locate::item_labels;
use super::types::{Scenario, ServerFields};
use super::validate::Checker;

/// Classes in one mix at most (a class is a byte in every request).
pub const MAX_CLASSES: usize = 16;

/// How far the shares may sum from 1 (they are written in decimal).
const SHARE_TOLERANCE: f64 = 1e-9;

/// One priority class of the clients: `{ name: critical, share: 0.2 }`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriorityClass {
    /// Names the class in `shed_by_priority`, `classes.csv` and the
    /// console.
    pub name: String,
    /// The fraction of the logical requests of this class (0 < share ≤ 1;
    /// the shares of all classes sum to 1).
    pub share: f64,
}

/// A server's priority shedding: class name → queue length per replica.
pub type ShedByPriority = BTreeMap<String, u32>;

/// The model's class mix of `s`.
pub fn class_mix(s: &Scenario) -> ClassMix {
    ClassMix::new(
        s.clients
            .classes
            .iter()
            .map(|c| (c.name.clone(), c.share))
            .collect(),
    )
}

/// The model's thresholds of a server's `shed_by_priority`, in the class
/// order of `s` (a name not among the classes is refused by validation).
pub fn thresholds(s: &Scenario, by: &ShedByPriority) -> ShedThresholds {
    if by.is_empty() {
        return ShedThresholds::default();
    }
    ShedThresholds(
        s.clients
            .classes
            .iter()
            .map(|c| by.get(&c.name).copied())
            .collect(),
    )
}

/// `names` without repeats, in order.
fn first_of_each<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    names.iter().copied().filter(|n| seen.insert(*n)).collect()
}

impl Checker {
    /// `clients.classes`, and every server's `shed_by_priority` against
    /// them.
    pub(super) fn priority(&mut self, s: &Scenario) {
        let classes = &s.clients.classes;
        self.check(classes.len() <= MAX_CLASSES, "clients.classes", || {
            format!("{} classes; expected at most {MAX_CLASSES}", classes.len())
        });
        let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
        let labels = item_labels("clients.classes", &names);
        let mut seen = super::validate::Names::default();
        let mut sum = 0.0;
        let mut finite = true;
        for (class, path) in classes.iter().zip(&labels) {
            self.item_name("class", &class.name, &format!("{path}.name"), &mut seen);
            let share_path = format!("{path}.share");
            if self.finite_in(class.share, &share_path, "a fraction > 0 and at most 1") {
                self.check(class.share > 0.0 && class.share <= 1.0, &share_path, || {
                    format!(
                        "share is {}; expected a fraction > 0 and at most 1",
                        crate::human::num(class.share)
                    )
                });
                sum += class.share;
            } else {
                finite = false;
            }
        }
        if finite && !classes.is_empty() {
            self.check(
                (sum - 1.0).abs() <= SHARE_TOLERANCE,
                "clients.classes",
                || {
                    format!(
                        "the shares sum to {}; expected them to sum to 1",
                        crate::human::num(sum)
                    )
                },
            );
        }
        let known = &names[..];
        if s.is_graph() {
            let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
            let labels = item_labels("services", &names);
            for (svc, path) in s.services.iter().zip(&labels) {
                self.shed_by_priority(&svc.server_fields(), path, known);
            }
        } else if !s.dependency.is_unset() {
            self.shed_by_priority(&s.dependency.server_fields(), DEPENDENCY, known);
        }
    }

    /// A server's `shed_by_priority` at `path`: each name one of the
    /// clients' classes.
    fn shed_by_priority(&mut self, f: &ServerFields, path: &str, known: &[&str]) {
        for name in f.shed_by_priority.keys() {
            let field = format!("{path}.shed_by_priority.{name}");
            if known.is_empty() {
                self.push(
                    field,
                    format!("class `{name}`, but the clients send no classes; expected clients.classes, for example [{{ name: critical, share: 0.2 }}, {{ name: {name}, share: 0.8 }}]"),
                );
            } else if !known.contains(&name.as_str()) {
                self.push(
                    field,
                    format!(
                        "unknown class `{name}`; expected one of clients.classes: {}",
                        first_of_each(known).join(", ")
                    ),
                );
            }
        }
    }
}
