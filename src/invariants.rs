//! Invariant checks on every finished run: cheap identities between the
//! run's counters that hold whatever the scenario, so a violation is a bug
//! in the simulator, never a property of the system simulated.
//!
//! - logical requests: offered = succeeded + failed + still open;
//! - dependency requests (at the focus service: a chain's dependency): those
//!   that arrived = attempts sent by the calls into it + status probes +
//!   connects of the pools on those calls;
//! - per call edge with a connection pool: connections handed out =
//!   connections given back + connections held at the end;
//! - deadlines: when the clients have a deadline and every layer
//!   propagates it, no attempt is sent at or after it;
//! - gauges: no bucket has a negative mean queue depth or work in flight;
//! - per service: every request that arrived is accounted for once
//!   (refused, vanished, failed by an error burst, shed, dropped at the
//!   queue's head, served, cancelled, lost in a crash, or still waiting);
//! - per call edge: calls ended (succeeded + failed) never exceed calls
//!   made, and the attempts sent on the edges into a service (plus status
//!   probes) are the requests that arrived there;
//! - per service with a cache: every request served (its own work done)
//!   looked its key up once, a hit, a miss or coalesced (a pool's connect,
//!   a status probe and a poison message look nothing up);
//! - per priority class of the clients (`class_violations`): its requests
//!   = succeeded + failed + shed + still open, and the classes add up to
//!   the run's logical requests, successes, failures and open requests.
//!
//! `stormsim run` turns a violation into a bug report with the seed,
//! variant and scenario needed to reproduce it (`bug_report`).

use crate::metrics::classes::ClassRow;
use crate::metrics::{GraphTables, Summary, TimeRow};
use crate::model::ModelConfig;

/// The invariants `summary` and `rows` of a run of `cfg` break, one
/// sentence each (empty when all hold).
pub fn violations(
    cfg: &ModelConfig,
    summary: &Summary,
    rows: &[TimeRow],
    graph: &GraphTables,
) -> Vec<String> {
    let mut found = Vec::new();
    let s = summary;
    let settled = s.succeeded + s.failed + s.in_flight_at_end;
    if s.logical_requests != settled {
        found.push(format!(
            "logical requests are not conserved: {} offered, but {} succeeded + {} failed + {} still open = {settled}",
            s.logical_requests, s.succeeded, s.failed, s.in_flight_at_end
        ));
    }
    // The focus service's arrivals (the classic `dependency_attempts`)
    // are the attempts its callers sent, plus status probes (all of them,
    // unless some calls probe another service: then at most all).
    let focus = cfg.topology.focus();
    let into_focus: u64 = cfg
        .topology
        .edges()
        .iter()
        .zip(&s.layer_attempts)
        .filter(|(e, _)| e.callee == focus)
        .map(|(_, &a)| a)
        .sum();
    let probes_elsewhere = cfg
        .topology
        .edges()
        .iter()
        .any(|e| e.policy.status_probe && e.callee != focus);
    // Connects of the pools on calls into it arrive like requests.
    let connects_into = |svc| {
        (graph.edges.iter())
            .filter(|e| cfg.topology.edges()[e.edge].callee == svc)
            .map(|e| e.pool.connects)
            .sum::<u64>()
    };
    let into_focus = into_focus + connects_into(focus);
    let sent = into_focus + s.probes;
    let conserved = if probes_elsewhere {
        (into_focus..=sent).contains(&s.dependency_attempts)
    } else {
        s.dependency_attempts == sent
    };
    if !conserved {
        found.push(format!(
            "dependency requests are not conserved: {} arrived, but its callers sent {into_focus} attempts + {} status probes = {sent}",
            s.dependency_attempts, s.probes
        ));
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
    let topo = &cfg.topology;
    for svc in &graph.services {
        let id = crate::model::ServiceId(svc.service as u16);
        let name = &topo.service(id).name;
        let t = &svc.totals;
        if topo.pass_through(id).is_none() {
            let accounted = t.refused
                + t.vanished
                + t.errors
                + t.shed
                + t.limited
                + t.queue_timeouts
                + t.served
                + t.cancelled
                + t.reset
                + svc.unserved_at_end;
            if t.attempts != accounted {
                found.push(format!(
                    "requests at service {name} are not conserved: {} arrived, but {accounted} are accounted for",
                    t.attempts
                ));
            }
        }
        let sent: u64 = graph
            .edges
            .iter()
            .filter(|e| topo.edges()[e.edge].callee == id)
            .map(|e| e.attempts + e.pool.connects)
            .sum();
        if let Some(c) = &svc.cache {
            let connects: u64 = graph
                .edges
                .iter()
                .filter(|e| topo.edges()[e.edge].callee == id)
                .map(|e| e.pool.connects)
                .sum();
            let lookups = c.lookups();
            let exact = cfg.consumers.is_none();
            if lookups > t.served || (exact && lookups + connects + summary.probes < t.served) {
                found.push(format!(
                    "lookups of the cache of service {name} are not conserved: {} hits + {} misses + {} coalesced = {lookups}, but {} requests were served ({connects} of them connects)",
                    c.hits, c.misses, c.coalesced, t.served
                ));
            }
        }
        if t.attempts < sent || t.attempts > sent + summary.probes {
            found.push(format!(
                "service {name} received {} requests, but its callers sent {sent} attempts (and {} status probes in all)",
                t.attempts, summary.probes
            ));
        }
    }
    for e in &graph.edges {
        let p = &e.pool;
        if p.acquired != p.released + p.held_at_end {
            found.push(format!(
                "the pools of call edge {} handed out {} connections, but {} came back and {} are held",
                topo.edges()[e.edge].policy.name,
                p.acquired,
                p.released,
                p.held_at_end
            ));
        }
        if e.succeeded + e.failed > e.calls {
            found.push(format!(
                "call edge {} ended {} calls but made only {}",
                topo.edges()[e.edge].policy.name,
                e.succeeded + e.failed,
                e.calls
            ));
        }
    }
    found
}

/// The invariants the priority classes (`classes.csv` rows) of a run
/// with summary `summary` break, one sentence each (empty when all hold,
/// and for a run without classes).
pub fn class_violations(summary: &Summary, classes: &[ClassRow]) -> Vec<String> {
    let mut found = Vec::new();
    if classes.is_empty() {
        return found;
    }
    for c in classes {
        let settled = c.succeeded + c.failed + c.shed + c.open_at_end;
        if c.requests != settled {
            found.push(format!(
                "requests of priority class {} are not conserved: {} started, but {} succeeded + {} failed + {} shed + {} still open = {settled}",
                c.class, c.requests, c.succeeded, c.failed, c.shed, c.open_at_end
            ));
        }
    }
    let sum = |f: fn(&ClassRow) -> u64| classes.iter().map(f).sum::<u64>();
    let s = summary;
    for (what, classes, run) in [
        ("logical requests", sum(|c| c.requests), s.logical_requests),
        ("successes", sum(|c| c.succeeded), s.succeeded),
        (
            "failures (shed included)",
            sum(|c| c.failed + c.shed),
            s.failed,
        ),
        (
            "requests open at the end",
            sum(|c| c.open_at_end),
            s.in_flight_at_end,
        ),
        ("hung requests", sum(|c| c.hung_at_end), s.hung_at_end),
    ] {
        if classes != run {
            found.push(format!(
                "the priority classes' {what} add up to {classes}, but the run has {run}"
            ));
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
        "error: internal error (a bug in stormsim): run of variant `{variant}`, replicate {replicate} broke {}:\n",
        crate::human::plural(violations.len(), "invariant")
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

    fn run() -> (ModelConfig, crate::metrics::RunResult) {
        let s = load_str(SRC, "t.yaml").unwrap();
        let plans = runner::plan(&s).unwrap();
        let r = runner::run_one(&plans[0], 0, 0, s.seed);
        (plans[0].config.clone(), r)
    }

    #[test]
    fn a_real_run_keeps_every_invariant() {
        let (cfg, r) = run();
        assert!(r.summary.logical_requests > 1000);
        assert_eq!(
            violations(&cfg, &r.summary, &r.rows, &r.graph),
            Vec::<String>::new()
        );
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
        let mut graph = r.graph.clone();
        graph.services[0].totals.served += 1;
        graph.edges[0].succeeded = graph.edges[0].calls + 1;
        let v = violations(&cfg, &s, &rows, &graph);
        assert_eq!(v.len(), 6, "{v:#?}");
        assert!(v[0].starts_with("logical requests are not conserved"));
        assert!(v[1].starts_with("dependency requests are not conserved"));
        assert!(v[2].starts_with("3 attempts were sent after"));
        assert!(v[3].starts_with("negative gauge at t = 3 s"));
        assert!(v[4].starts_with("requests at service dependency are not conserved"));
        assert!(v[5].starts_with("call edge "), "{}", v[5]);
        assert!(v[5].contains("ended"), "{}", v[5]);
        let report = bug_report("t.yaml", "base", 0, 1, &v);
        assert!(report.contains("stormsim run t.yaml --seed 1 --replicates 1 (variant `base`)"));
    }

    #[test]
    fn priority_classes_are_conserved_and_a_doctored_class_is_caught() {
        let src = format!(
            "{}  classes: [{{ name: critical, share: 0.2 }}, {{ name: background, share: 0.8 }}]\n",
            SRC.split("layers:").next().unwrap()
        ) + "layers:"
            + SRC.split("layers:").nth(1).unwrap();
        let s = load_str(&src, "t.yaml").unwrap();
        let plans = runner::plan(&s).unwrap();
        let r = runner::run_one(&plans[0], 0, 0, s.seed);
        assert_eq!(r.classes.len(), 2);
        assert!(
            r.classes.iter().all(|c| c.requests > 500),
            "{:?}",
            r.classes
        );
        assert!(r.summary.failed > 0, "the outage fails some requests");
        assert_eq!(
            class_violations(&r.summary, &r.classes),
            Vec::<String>::new()
        );
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert!(class_violations(&r.summary, &[]).is_empty(), "no classes");
        // One more success in a class: that class and the run's sum of
        // successes are both off.
        let mut classes = r.classes.clone();
        classes[1].succeeded += 1;
        let v = class_violations(&r.summary, &classes);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert!(v[0].starts_with("requests of priority class background are not conserved"));
        assert!(v[1].starts_with("the priority classes' successes add up to"));
        // A failure counted as a success: the class still adds up, but
        // the run's successes and failures do not.
        let mut classes = r.classes.clone();
        let k = classes.iter().position(|c| c.failed > 0).unwrap();
        classes[k].failed -= 1;
        classes[k].succeeded += 1;
        let v = class_violations(&r.summary, &classes);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert!(v[0].starts_with("the priority classes' successes"));
        assert!(v[1].starts_with("the priority classes' failures"));
    }
}
