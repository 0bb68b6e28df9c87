//! Invariant checks on every finished run: cheap identities between the
//! run's counters that hold whatever the scenario, so a violation is a bug
//! in the simulator, never a property of the system simulated.
//!
//! - logical requests: offered = succeeded + failed + still open;
//! - dependency requests: those that arrived = attempts sent by the
//!   innermost layer + status probes;
//! - deadlines: when the clients have a deadline and every layer
//!   propagates it, no attempt is sent at or after it;
//! - gauges: no bucket has a negative mean queue depth or work in flight.
//!
//! `stormsim run` turns a violation into a bug report with the seed,
//! variant and scenario needed to reproduce it (`bug_report`).

use crate::metrics::{Summary, TimeRow};
use crate::model::ModelConfig;

/// The invariants `summary` and `rows` of a run of `cfg` break, one
/// sentence each (empty when all hold).
pub fn violations(cfg: &ModelConfig, summary: &Summary, rows: &[TimeRow]) -> Vec<String> {
    let mut found = Vec::new();
    let s = summary;
    let settled = s.succeeded + s.failed + s.in_flight_at_end;
    if s.logical_requests != settled {
        found.push(format!(
            "logical requests are not conserved: {} offered, but {} succeeded + {} failed + {} still open = {settled}",
            s.logical_requests, s.succeeded, s.failed, s.in_flight_at_end
        ));
    }
    if let Some(&innermost) = s.layer_attempts.last() {
        let sent = innermost + s.probes;
        if s.dependency_attempts != sent {
            found.push(format!(
                "dependency requests are not conserved: {} arrived, but the innermost layer sent {innermost} attempts + {} status probes = {sent}",
                s.dependency_attempts, s.probes
            ));
        }
    }
    let all_propagate = cfg
        .topology
        .edges()
        .iter()
        .all(|e| e.policy.propagate_deadline);
    if cfg.deadline.is_some() && all_propagate && s.attempts_after_deadline > 0 {
        found.push(format!(
            "{} attempts were sent after their request's deadline, though every layer propagates deadlines",
            s.attempts_after_deadline
        ));
    }
    for r in rows {
        if r.queue_depth < 0.0 || r.in_flight < 0.0 {
            found.push(format!(
                "negative gauge at t = {} s: queue depth {}, in flight {}",
                r.t_s, r.queue_depth, r.in_flight
            ));
            break;
        }
    }
    found
}

/// What `stormsim run` prints when a run breaks an invariant: everything
/// needed to reproduce it.
pub fn bug_report(
    scenario: &str,
    variant: &str,
    replicate: u32,
    scenario_seed: u64,
    violations: &[String],
) -> String {
    let mut text = format!(
        "error: internal error (a bug in stormsim): run of variant `{variant}`, replicate {replicate} broke {} invariant(s):\n",
        violations.len()
    );
    for v in violations {
        text.push_str(&format!("  - {v}\n"));
    }
    text.push_str(&format!(
        "To reproduce: stormsim run {scenario} --seed {scenario_seed} --replicates {} (variant `{variant}`).\n\
         Please report it with the scenario file and this message.\n",
        replicate + 1
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner;
    use crate::scenario::load_str;

    const SRC: &str = "name: t\nduration: 20s\nclients:\n  arrival: { kind: poisson, rate: 200/s }\n  deadline: 2s\n\
        layers:\n  - name: api\n    timeout: 200ms\n    deadline: propagate\n    retry: { max_attempts: 4 }\n\
        dependency:\n  concurrency: 2\n  service_time: { dist: exponential, mean: 20ms }\n  \
        incidents: [ { kind: down, start: 5s, end: 10s } ]\n";

    fn run() -> (ModelConfig, runner::RunResult) {
        let s = load_str(SRC, "t.yaml").unwrap();
        let plans = runner::plan(&s).unwrap();
        let r = runner::run_one(&plans[0], 0, 0, s.seed);
        (plans[0].config.clone(), r)
    }

    #[test]
    fn a_real_run_keeps_every_invariant() {
        let (cfg, r) = run();
        assert!(r.summary.logical_requests > 1000);
        assert_eq!(violations(&cfg, &r.summary, &r.rows), Vec::<String>::new());
        assert!(r.violations.is_empty());
    }

    #[test]
    fn a_doctored_summary_is_caught() {
        let (cfg, r) = run();
        let mut s = r.summary.clone();
        s.succeeded += 1;
        s.dependency_attempts += 2;
        s.attempts_after_deadline = 3;
        let mut rows = r.rows.clone();
        rows[3].queue_depth = -1.0;
        let v = violations(&cfg, &s, &rows);
        assert_eq!(v.len(), 4, "{v:#?}");
        assert!(v[0].starts_with("logical requests are not conserved"));
        assert!(v[1].starts_with("dependency requests are not conserved"));
        assert!(v[2].starts_with("3 attempts were sent after"));
        assert!(v[3].starts_with("negative gauge at t = 3 s"));
        let report = bug_report("t.yaml", "base", 0, 1, &v);
        assert!(report.contains("stormsim run t.yaml --seed 1 --replicates 1 (variant `base`)"));
    }
}
