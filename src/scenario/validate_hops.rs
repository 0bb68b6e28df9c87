//! Semantic checks of a layer's hop fields (fan-out and quorum, hedging,
//! bulkhead, status probes) and of scenario-wide combinations: global
//! budgets must agree, and the sweep grid must be a map of non-empty lists.

use super::types::{Budget, Layer, Scenario, Scope, SideEffects};
use super::units::Duration;
use super::validate::{Checker, MAX_ATTEMPTS, unsafe_name};
use super::variants::value_text;
use crate::escape::unsafe_char_in;

/// At most this many grid points in a sweep (variants × grid).
pub const MAX_SWEEP_POINTS: usize = 100_000;

/// At most this many fields in all the points of a grid together (points
/// × the fields of the scenario): every point is built as a scenario of
/// its own, to be validated and sized before anything runs, at about
/// [`BYTES_PER_FIELD`] each, so this bounds that work to about 1.2 GB.
/// A 100 000-point sweep of a one-layer scenario (about 60 fields) is
/// within it; 3 160 points of 300 layers are not.
pub const MAX_GRID_FIELDS: u64 = 10_000_000;

/// About what one field of a built scenario holds (its value, key and
/// the structures around it), measured: `validate` of 100 000 points of a
/// one-layer scenario (57 fields each, 5.7 million in all) peaked at
/// 0.67 GB.
pub const BYTES_PER_FIELD: u64 = 120;

/// The points of `s`'s grid: its variants (at least one) times the
/// values of each swept field.
pub fn grid_points(s: &Scenario) -> u64 {
    s.sweep
        .values()
        .fold(s.variants.len().max(1) as u64, |n, v| {
            n.saturating_mul(v.as_array().map_or(1, Vec::len) as u64)
        })
}

/// The fields of one point of `s`'s grid (every value in its tree, as
/// it is written out, without the variants and the sweep), and of the
/// whole grid: that times [`grid_points`].
pub fn grid_fields(s: &Scenario) -> (u64, u64) {
    fn count(v: &serde_json::Value) -> u64 {
        match v {
            serde_json::Value::Array(a) => 1 + a.iter().map(count).sum::<u64>(),
            serde_json::Value::Object(m) => 1 + m.values().map(count).sum::<u64>(),
            _ => 1,
        }
    }
    let mut one = s.clone();
    one.sweep.clear();
    one.variants.clear();
    let fields = serde_json::to_value(&one).map_or(1, |v| count(&v));
    (fields, fields.saturating_mul(grid_points(s)))
}

/// Whether `s`'s grid may be built: at most [`MAX_SWEEP_POINTS`] points
/// and [`MAX_GRID_FIELDS`] fields in all (validation says which bound a
/// grid passes, and by how much).
pub fn grid_fits(s: &Scenario) -> bool {
    let points = grid_points(s);
    points <= MAX_SWEEP_POINTS as u64 && (points <= 1 || grid_fields(s).1 <= MAX_GRID_FIELDS)
}

/// Fan-out per attempt.
pub const MAX_FAN_OUT: u32 = 1_000;

/// Where a status probe of a layer or call would go: whether the hop is
/// the innermost one (it calls the server that commits), and that server's
/// side effects (unknown: not checked) and their field path.
pub(super) struct Probe<'a> {
    pub innermost: bool,
    pub side_effects: Option<SideEffects>,
    pub field: &'a str,
}

impl Checker {
    /// The hop fields of one layer or call (`path` is its label,
    /// `layers.api`, `services.gateway.calls.orders`).
    pub(super) fn layer_hops(&mut self, layer: &Layer, path: &str, probe: Probe) {
        let fan = layer.fan_out;
        self.check(
            (1..=MAX_FAN_OUT).contains(&fan),
            &format!("{path}.fan_out"),
            || format!("fan_out is {fan}; expected 1 to {MAX_FAN_OUT}"),
        );
        if let Some(q) = layer.quorum {
            self.check(q >= 1 && q <= fan, &format!("{path}.quorum"), || {
                format!("quorum is {q} with fan_out {fan}; expected 1 <= quorum <= fan_out")
            });
        }
        if let Some(h) = &layer.hedging {
            let p = format!("{path}.hedging");
            self.check(
                (1..=MAX_ATTEMPTS).contains(&h.max_attempts),
                &format!("{p}.max_attempts"),
                || {
                    format!(
                        "max_attempts is {}; expected 1 to {MAX_ATTEMPTS} (gRPC caps it at 5)",
                        h.max_attempts
                    )
                },
            );
            self.check(layer.retry.max_attempts == 1, &p, || {
                "hedging replaces retries (gRFC A6: a method has a retry policy or a hedging policy); expected retry.max_attempts: 1".into()
            });
            self.check(fan == 1, &p, || {
                "hedging and fan_out do not combine; expected fan_out: 1".into()
            });
            self.check(!layer.hedge_on_timeout, &p, || {
                "hedging and hedge_on_timeout do not combine; expected one of them".into()
            });
        }
        if layer.hedge_on_timeout {
            self.check(
                layer.timeout.is_some(),
                &format!("{path}.hedge_on_timeout"),
                || {
                    "hedge_on_timeout hedges on the per-attempt timeout; expected a `timeout`"
                        .into()
                },
            );
        }
        if let Some(b) = &layer.bulkhead {
            let p = format!("{path}.bulkhead.max_concurrent");
            self.check(b.max_concurrent >= 1, &p, || {
                "max_concurrent is 0; expected at least 1".into()
            });
        }
        if layer.status_probe {
            let p = format!("{path}.status_probe");
            self.check(probe.innermost, &p, || {
                "a status probe asks the dependency; expected it on the innermost layer".into()
            });
            if let Some(effects) = probe.side_effects {
                self.check(effects != SideEffects::Read, &p, || {
                    format!(
                        "a status probe is for writes; expected {}: write or idempotent_write",
                        probe.field
                    )
                });
            }
        }
    }

    /// Every budget with `scope: global` is one budget: they must agree.
    pub(super) fn global_budgets(&mut self, s: &Scenario) {
        let budgets = s
            .layers
            .iter()
            .map(|l| {
                (
                    format!("layers.{}.retry.budget", l.name),
                    l.name.clone(),
                    &l.retry.budget,
                )
            })
            .collect();
        self.same_global_budgets("layer", budgets);
    }

    /// The budgets with `scope: global` among `budgets` (field path, name
    /// of the layer or call, budget) must agree; `what` names the owners.
    pub(super) fn same_global_budgets(
        &mut self,
        what: &str,
        budgets: Vec<(String, String, &Option<Budget>)>,
    ) {
        let mut first: Option<(String, &Budget)> = None;
        for (path, name, b) in budgets {
            let Some(b) = b.as_ref().filter(|b| b.scope == Scope::Global) else {
                continue;
            };
            match &first {
                None => first = Some((name, b)),
                Some((first_name, f)) => {
                    self.check(*f == b, &path, || {
                        format!("a global budget is shared by every {what} that says so; expected the same budget as {what} `{first_name}`")
                    });
                }
            }
        }
    }

    /// An `occ` workload replaces clients, layers, dependency and consumers.
    pub(super) fn occ(&mut self, s: &Scenario) {
        let Some(o) = &s.occ else { return };
        self.check((1..=100_000).contains(&o.clients), "occ.clients", || {
            format!("clients is {}; expected 1 to 100000", o.clients)
        });
        let cap = o.cap();
        self.positive(cap, "occ.cap", "cap");
        self.check(cap >= o.base(), "occ.cap", || {
            format!(
                "cap ({}) is below base ({}); expected cap >= base",
                cap,
                o.base()
            )
        });
        self.positive(o.message_mean, "occ.message_mean", "message_mean");
        // The post's messages take 10 ms and its cap is 2 s; hours would
        // only run the clock past what it can hold.
        let hour = Duration::from_secs(3600);
        for (value, path) in [
            (o.message_mean, "occ.message_mean"),
            (o.message_sd, "occ.message_sd"),
            (o.base(), "occ.base"),
            (cap, "occ.cap"),
        ] {
            self.check(value <= hour, path, || {
                format!("{value} is too long for this experiment; expected at most 1h")
            });
        }
        for (set, field) in [
            (!s.clients.is_unset(), "clients"),
            (!s.dependency.is_unset(), "dependency"),
            (!s.layers.is_empty(), "layers"),
            (!s.services.is_empty(), "services"),
            (s.consumers.is_some(), "consumers"),
        ] {
            self.check(!set, field, || {
                format!("`{field}` does not apply to an occ workload (its clients, row and messages are fixed by the experiment); expected it absent")
            });
        }
        self.sweep(s);
    }

    /// The message queue and its consumers (SQS limits, docs/sources/presets.md §9.3).
    pub(super) fn consumers(&mut self, s: &Scenario) {
        let Some(c) = &s.consumers else { return };
        self.check(c.concurrency >= 1, "consumers.concurrency", || {
            "concurrency is 0; expected at least 1 consumer".into()
        });
        self.check(
            (1..=1000).contains(&c.max_receive_count),
            "consumers.max_receive_count",
            || {
                format!(
                    "max_receive_count is {}; expected 1 to 1000 (SQS redrive)",
                    c.max_receive_count
                )
            },
        );
        self.check(
            c.visibility_timeout.ns() <= 43_200 * crate::engine::NS_PER_S,
            "consumers.visibility_timeout",
            || {
                format!(
                    "visibility_timeout is {}; expected at most 12h (SQS)",
                    c.visibility_timeout
                )
            },
        );
        self.check(
            c.poison.is_finite() && (0.0..=1.0).contains(&c.poison),
            "consumers.poison",
            || {
                format!(
                    "poison is {}; expected a fraction in [0, 1]",
                    crate::human::num(c.poison)
                )
            },
        );
        self.check(
            (400..=599).contains(&c.poison_status),
            "consumers.poison_status",
            || {
                format!(
                    "status {} is not an error status; expected 400-599 (a poison message fails with a 4xx or a 5xx)",
                    c.poison_status
                )
            },
        );
        self.check(
            s.clients.arrival.kind == super::types::ArrivalKind::Poisson,
            "consumers",
            || "messages are published by open-loop clients; expected clients.arrival.kind: poisson".into(),
        );
    }

    /// `sweep` maps dotted paths to non-empty lists of values.
    pub(super) fn sweep(&mut self, s: &Scenario) {
        let mut points: usize = s.variants.len().max(1);
        for (path, values) in &s.sweep {
            let p = format!("sweep.{path}");
            if let Some(bad) = unsafe_char_in(path) {
                self.push(&p, unsafe_name(&format!("the swept path `{path}`"), &bad));
                continue;
            }
            match values.as_array() {
                Some(list) if !list.is_empty() => {
                    points = points.saturating_mul(list.len());
                    // Swept values name the variants they make.
                    for v in list {
                        let text = value_text(v);
                        if let Some(bad) = unsafe_char_in(&text) {
                            self.push(
                                &p,
                                unsafe_name(
                                    &format!("the swept value `{text}`, which names a variant,"),
                                    &bad,
                                ),
                            );
                        }
                    }
                }
                _ => self.push(
                    p,
                    "expected a non-empty list of values, for example [1, 2, 3]",
                ),
            }
        }
        self.check(points <= MAX_SWEEP_POINTS, "sweep", || {
            format!("the grid has {points} points; expected at most {MAX_SWEEP_POINTS}")
        });
        if points > 1 && points <= MAX_SWEEP_POINTS {
            let (fields, total) = grid_fields(s);
            self.check(total <= MAX_GRID_FIELDS, "sweep", || {
                format!(
                    "the grid has {points} points of a scenario of {fields} fields: building every point before running would hold {total} fields, about {:.1} GB; expected at most {MAX_GRID_FIELDS} (points x fields): sweep fewer points, or a smaller scenario",
                    (total * BYTES_PER_FIELD) as f64 / 1e9
                )
            });
        }
    }
}
