//! `stormsim check` on priority shedding (`shed_by_priority` against the
//! clients' `classes`): a threshold at or above the queue's capacity never
//! sheds (the full queue sheds every class first), and a more important
//! class shed earlier than a less important one inverts the priorities
//! the class order declares.

use crate::scenario::Scenario;
use crate::scenario::graph::DEPENDENCY;
use crate::scenario::locate::item_labels;
use crate::scenario::types::ServerFields;

use super::Finding;
use super::Severity;
use super::findings::Out;

/// The findings on every server's priority shedding of `s`.
pub(super) fn findings(s: &Scenario) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    let classes: Vec<&str> = s.clients.classes.iter().map(|c| c.name.as_str()).collect();
    if s.is_graph() {
        let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
        for (svc, path) in s.services.iter().zip(item_labels("services", &names)) {
            server(&mut out, &classes, &svc.name, &path, &svc.server_fields());
        }
    } else if !s.dependency.is_unset() {
        let f = s.dependency.server_fields();
        server(&mut out, &classes, DEPENDENCY, DEPENDENCY, &f);
    }
    out.0
}

/// `N requests wait`, `1 request waits`.
fn waiting<N: crate::human::Count>(n: N) -> String {
    if n.is_one() {
        format!("{n} request waits")
    } else {
        format!("{n} requests wait")
    }
}

fn server(out: &mut Out, classes: &[&str], name: &str, path: &str, f: &ServerFields) {
    let by = &f.shed_by_priority;
    let capacity = f.queue.capacity;
    for (class, &t) in by {
        if t >= capacity {
            out.add(
                Severity::Warning,
                "priority-threshold-never-sheds",
                &format!("{path}.shed_by_priority.{class}"),
                format!(
                    "service `{name}` sheds class `{class}` once {} in a replica's queue, but the queue holds at most {capacity}: the full queue sheds every class first, and this threshold never acts",
                    waiting(t)
                ),
                &format!("set it below the queue's capacity ({capacity}), or raise queue.capacity"),
            );
        }
    }
    // Most important first: a class should never be shed before a less
    // important one (a lower threshold, or one where the other has none).
    for (i, more) in classes.iter().enumerate() {
        let Some(&tm) = by.get(*more) else { continue };
        for less in &classes[i + 1..] {
            let tl = by.get(*less).copied();
            if tl.is_none_or(|tl| tl > tm) {
                let why = match tl {
                    Some(tl) => format!("class `{less}`, less important, only from {tl}"),
                    None => format!("class `{less}`, less important, never"),
                };
                out.add(
                    Severity::Warning,
                    "priority-order-inverted",
                    &format!("{path}.shed_by_priority.{more}"),
                    format!(
                        "service `{name}` sheds class `{more}` once {}, and {why}: the more important class is shed first (clients.classes lists the most important first)",
                        waiting(tm)
                    ),
                    &format!("give `{less}` a threshold at or below {tm}, or reorder clients.classes"),
                );
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    fn codes(shed: &str) -> Vec<(&'static str, String)> {
        let yaml = format!(
            "name: pc
duration: 10s
clients:
  arrival: {{ kind: poisson, rate: 10/s }}
  classes:
    - {{ name: critical, share: 0.2 }}
    - {{ name: default, share: 0.3 }}
    - {{ name: background, share: 0.5 }}
  calls: api
services:
  - name: api
    concurrency: 8
    service_time: {{ dist: exponential, mean: 5ms }}
    queue: {{ capacity: 100 }}
    shed_by_priority: {shed}
"
        );
        let s = load_str(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
        findings(&s).into_iter().map(|f| (f.code, f.path)).collect()
    }

    #[test]
    fn thresholds_in_class_order_below_the_queue_say_nothing() {
        assert!(codes("{ critical: 90, default: 60, background: 20 }").is_empty());
        assert!(codes("{ default: 60, background: 20 }").is_empty());
        assert!(codes("{ background: 0 }").is_empty());
        // Equal thresholds shed both alike: not inverted.
        assert!(codes("{ default: 20, background: 20 }").is_empty());
    }

    #[test]
    fn a_threshold_the_queue_never_reaches_is_a_warning() {
        assert_eq!(
            codes("{ background: 100 }"),
            [(
                "priority-threshold-never-sheds",
                "services.api.shed_by_priority.background".to_string()
            )]
        );
        assert!(codes("{ background: 99 }").is_empty());
    }

    #[test]
    fn a_more_important_class_shed_first_is_a_warning() {
        let inverted = (
            "priority-order-inverted",
            "services.api.shed_by_priority.critical".to_string(),
        );
        assert_eq!(
            codes("{ critical: 10, background: 50 }"),
            std::slice::from_ref(&inverted)
        );
        // A less important class never shed at all.
        assert_eq!(codes("{ critical: 10 }"), [inverted]);
    }
}
