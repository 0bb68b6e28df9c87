//! The retry playbook's anti-patterns as findings
//! (docs/sources/retry-backoff-patterns.md): no jitter on a large
//! fleet; unbounded attempts or no wall-clock budget; retries stacked at
//! several layers without a shared budget; non-retryable statuses
//! (400/401/403/404/422) retried; a per-attempt timeout that uses up the
//! deadline; Retry-After ignored, or longer than the deadline; retries that
//! do not fit the deadline or outlive the caller's attempt.

use crate::model::CallPolicy;
use crate::scenario::locate::layer_labels;
use crate::scenario::types::{
    DeadlineMode, Idempotency, Jitter, Layer, Overload, RetryAfterMode, RetryOn, Scenario,
    SideEffects,
};
use crate::scenario::units::Duration;
use crate::scenario::validate::MAX_ATTEMPTS;

use super::{Finding, LayerReport, Severity, StackReport, times};

/// A layer with this many instances, or this many calls per second, is a
/// "large fleet" whose unjittered retries synchronise.
pub const LARGE_FLEET_INSTANCES: u32 = 10;
pub const LARGE_FLEET_CALLS_PER_S: f64 = 100.0;
/// Statuses the playbook lists as not retryable.
pub const NON_RETRYABLE: [u16; 5] = [400, 401, 403, 404, 422];

pub(super) struct Out(pub Vec<Finding>);

impl Out {
    pub(super) fn add(
        &mut self,
        severity: Severity,
        code: &'static str,
        path: &str,
        message: String,
        fix: &str,
    ) {
        self.0.push(Finding {
            severity,
            code,
            path: path.to_string(),
            message,
            fix: fix.to_string(),
        });
    }
}

/// A count as people read it: `48`; from 10^12 on, its order of
/// magnitude only.
pub(super) fn count(v: f64) -> String {
    let t = times(v);
    t.strip_suffix('x').unwrap_or(&t).to_string()
}

/// How [`fmt_s`] writes a year or more.
pub(super) const OVER_A_YEAR: &str = "over a year";

/// Seconds for people: `250 ms`, `16.70 s`, `450 s`, `25 min`,
/// `3 h 20 min`, `12 d 4 h`, `over a year` (never a 15-digit number).
pub(super) fn fmt_s(v: f64) -> String {
    const MIN: f64 = 60.0;
    const HOUR: f64 = 3600.0;
    const DAY: f64 = 86_400.0;
    if !v.is_finite() || v >= 365.0 * DAY {
        OVER_A_YEAR.into()
    } else if v >= 2.0 * DAY {
        let h = (v / HOUR).round() as u64;
        format!("{} d {} h", h / 24, h % 24)
    } else if v >= 2.0 * HOUR {
        let m = (v / MIN).round() as u64;
        format!("{} h {} min", m / 60, m % 60)
    } else if v >= 10.0 * MIN {
        format!("{} min", (v / MIN).round() as u64)
    } else if v >= 100.0 {
        format!("{v:.0} s")
    } else if v >= 1.0 {
        format!("{v:.2} s")
    } else {
        format!("{:.0} ms", v * 1000.0)
    }
}

/// A time that may have no bound, as [`fmt_s`] writes it, or `without
/// bound`.
pub(super) fn fmt_bound(v: Option<f64>) -> String {
    v.map_or("without bound".to_string(), fmt_s)
}

/// One hop reviewed for findings: a layer of a chain, or a call of a
/// services graph (its policy as a layer named after the call).
pub(super) struct Hop<'a> {
    /// The policy as written.
    pub layer: &'a Layer,
    pub model: &'a CallPolicy,
    pub report: &'a LayerReport,
    /// Its field path (`layers.api`, `services.gateway.calls.orders`).
    pub path: String,
    /// How messages name it (`layer `api``, `call `gateway.orders``).
    pub who: String,
    /// The callers' attempts this hop's calls are made within: who makes
    /// them and their per-attempt timeout.
    /// Whether each hands its attempt's deadline down (`deadline:
    /// propagate`), so that this hop starts nothing past it.
    pub outer: Vec<(String, Duration, bool)>,
    /// Whether a deadline bounds this hop's calls: the user's
    /// (`clients.deadline`) on the outermost hop, else one that every
    /// caller hands down ([`hands_down_deadline`]).
    pub deadline_reaches: bool,
    /// Whether a deadline given at the top would reach this hop: every
    /// caller above hands its deadline down (so none is to be told to).
    pub callers_propagate: bool,
    /// A non-idempotent write without a key that this hop's retries can
    /// repeat: what the message adds, and the fix.
    pub unsafe_write: Option<(String, String)>,
    /// The answer of the server it calls to overload, and how messages
    /// name that server (`the dependency`, `service `postgres``).
    pub overload: &'a Overload,
    pub server: String,
}

/// Whether a call made under `p` hands a deadline to the calls below
/// it: it propagates one (`deadline: propagate`), and has one to give
/// (the deadline it was `reached` by, its per-attempt timeout, or its
/// total timeout), as the model does.
pub(super) fn hands_down_deadline(p: &CallPolicy, reached: bool) -> bool {
    p.propagate_deadline && (reached || p.timeout.is_some() || p.total_timeout.is_some())
}

/// The fix of `non-idempotent-retries` at a hop (`noun`: layer, call)
/// whose retries can repeat a write of `writer` without an idempotency
/// key: the key (at `key_field`), or no retries of writes; and a status
/// probe only where it helps and is not set already. A probe asks before
/// a retry of a timed-out attempt of the hop that calls the writer itself
/// (`direct`), never before the retries of a hop above it, which re-send
/// the whole call; and it is not proof: a write still queued when asked,
/// or a probe answered too late, is re-sent all the same.
pub(super) fn unsafe_write_fix(
    key_field: &str,
    direct: bool,
    l: &Layer,
    noun: &str,
    writer: &str,
) -> String {
    let key = format!("set `{key_field}: key`");
    if !direct {
        return format!(
            "{key}, or stop retrying writes at this {noun} (a status probe asks {writer} only before the retries of the {noun} that calls it, not before this one's)"
        );
    }
    if l.status_probe {
        return format!(
            "{key}, or stop retrying writes: the status probe already set here re-sends a write that has not committed when asked, or whose probe fails or comes too late"
        );
    }
    if l.retry.retry_on.contains(&RetryOn::Timeout) {
        return format!(
            "{key} (or `status_probe: true` on this {noun}: it asks {writer} whether a timed-out write committed before re-sending it), or stop retrying writes"
        );
    }
    format!("{key}, or stop retrying writes")
}

pub fn findings(
    s: &Scenario,
    model: &[CallPolicy],
    reports: &[LayerReport],
    stack: &StackReport,
) -> Vec<Finding> {
    let mut out = Out(Vec::new());
    let names: Vec<&str> = s.layers.iter().map(|l| l.name.as_str()).collect();
    let labels = layer_labels(&names);
    let writes_unkeyed = s.dependency.side_effects == SideEffects::Write
        && s.dependency.idempotency == Idempotency::None;
    let mut deadline_reaches = stack.deadline_s.is_some();
    let mut callers_propagate = true;
    for (i, ((l, m), (r, path))) in s
        .layers
        .iter()
        .zip(model)
        .zip(reports.iter().zip(&labels))
        .enumerate()
    {
        let outer = match i.checked_sub(1).map(|j| &s.layers[j]) {
            Some(o) => o
                .timeout
                .map(|t| (o.name.clone(), t, o.deadline == DeadlineMode::Propagate))
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        let hop = Hop {
            layer: l,
            model: m,
            report: r,
            path: path.clone(),
            who: format!("layer `{}`", l.name),
            outer,
            deadline_reaches,
            callers_propagate,
            unsafe_write: writes_unkeyed.then(|| {
                (
                    String::new(),
                    unsafe_write_fix(
                        "dependency.idempotency",
                        i + 1 == s.layers.len(),
                        l,
                        "layer",
                        "the dependency",
                    ),
                )
            }),
            overload: &s.dependency.overload,
            server: "the dependency".to_string(),
        };
        hop_findings(&mut out, s, &hop, stack);
        deadline_reaches = hands_down_deadline(m, deadline_reaches);
        callers_propagate = hands_down_deadline(m, callers_propagate);
    }
    // Retries at several layers without a shared budget.
    let retrying: Vec<usize> = (0..s.layers.len())
        .filter(|&i| s.layers[i].retry.max_attempts > 1)
        .collect();
    let shared = retrying.iter().any(|&i| {
        s.layers[i]
            .retry
            .budget
            .as_ref()
            .is_some_and(|b| b.scope == crate::scenario::types::Scope::Shared)
    });
    if retrying.len() >= 2 && !shared {
        let per = if stack.deliveries > 1 {
            "one message"
        } else {
            "one logical request"
        };
        out.add(
            if stack.budgeted_amplification >= 10.0 { Severity::Warning } else { Severity::Info },
            "nested-retries-without-budget",
            "layers",
            format!(
                "{} layers retry ({}) without a shared retry budget: {per} can become {} calls at the dependency ({} = {}; {} with the budgets there are)",
                retrying.len(),
                retrying.iter().map(|&i| s.layers[i].name.as_str()).collect::<Vec<_>>().join(", "),
                count(stack.amplification),
                stack.amplification_words,
                times(stack.amplification),
                times(stack.budgeted_amplification)
            ),
            "retry at one layer only (max_attempts: 1 elsewhere), or give the retrying layers a budget with `scope: shared`",
        );
    }
    // SQS accepts a visibility timeout of 0 s: a received message is
    // visible again at once, and every consumer redelivers it while its
    // first handler still runs.
    if let Some(c) = &s.consumers
        && c.visibility_timeout.0 == 0
    {
        out.add(
            Severity::Warning,
            "zero-visibility-timeout",
            "consumers.visibility_timeout",
            "consumers.visibility_timeout is 0s: a received message is visible again at once, so it is delivered again while its handler still runs (a redelivery storm: valid in SQS, but every message is handled many times)".to_string(),
            "set visibility_timeout longer than a handler takes (SQS default: 30s)",
        );
    }
    let first = "outermost layer's";
    let keep_it: Vec<String> = s.layers[..s.layers.len().saturating_sub(1)]
        .iter()
        .filter(|l| l.deadline != DeadlineMode::Propagate)
        .map(|l| format!("layer `{}`", l.name))
        .collect();
    time_budget_findings(
        &mut out,
        stack,
        &s.layers,
        !retrying.is_empty(),
        first,
        "the inner layers",
        &keep_it,
    );
    out.0.sort_by_key(|f| f.severity);
    out.0
}

/// The findings about time of a stack of calls that retries (`retrying`):
/// no wall-clock bound at all, and a worst case beyond the deadline. The
/// calls are `layers`, outermost first; `first` names whose attempts the
/// deadline is counted in, `below` the calls under it; `keep_it` the
/// callers (as messages name them) that do not hand a deadline down, so
/// that a deadline would not reach the calls below them.
pub(super) fn time_budget_findings(
    out: &mut Out,
    stack: &StackReport,
    layers: &[Layer],
    retrying: bool,
    first: &str,
    below: &str,
    keep_it: &[String],
) {
    let deadline = stack.deadline_s;
    let has_wall_clock = deadline.is_some()
        || layers
            .iter()
            .any(|l| l.total_timeout.is_some() || l.retry.max_elapsed.is_some());
    if retrying && !has_wall_clock {
        // `deadline: propagate` only where it is not set already: on the
        // callers that keep the deadline from the calls below them.
        let propagate = if keep_it.is_empty() {
            String::new()
        } else {
            format!(
                " and `deadline: propagate` on {} (so that it reaches {below})",
                keep_it.join(", ")
            )
        };
        out.add(Severity::Warning, "no-wall-clock-budget", "clients.deadline", format!(
            "retries are bounded by attempts only: no clients.deadline, total_timeout or max_elapsed (worst case per request: {})",
            fmt_bound(stack.worst_case_s)
        ), &format!("set clients.deadline (the user's budget){propagate}, or total_timeout"));
    }
    if let (Some(d), Some(false)) = (deadline, stack.fits_deadline) {
        let expected_over = stack.expected_s.is_none_or(|e| e > d);
        let attempts = layers.first().map_or(1, |l| l.retry.max_attempts);
        out.add(
            if expected_over { Severity::Warning } else { Severity::Info },
            "retries-exceed-deadline",
            "clients.deadline",
            format!(
                "in the worst case ({}) a request needs up to {} (about {} at mean draws) but the deadline is {}: about {} of the {first} {} {}",
                stack.worst_case,
                fmt_bound(stack.worst_case_s),
                fmt_bound(stack.expected_s),
                fmt_s(d),
                stack.attempts_within_deadline.unwrap_or(1),
                crate::human::plural(attempts, "attempt"),
                if stack.attempts_within_deadline.unwrap_or(1) == 1 { "fits" } else { "fit" }
            ),
            "fewer attempts or shorter per-attempt timeouts, so that attempts x timeout + backoffs fit the deadline",
        );
    }
}

/// The findings about one hop (a layer or a call).
pub(super) fn hop_findings(out: &mut Out, s: &Scenario, hop: &Hop, stack: &StackReport) {
    let (l, m, r, path, who) = (hop.layer, hop.model, hop.report, &hop.path, &hop.who);
    let deadline = stack.deadline_s;
    let retries = l.retry.max_attempts > 1;
    let rp = format!("{path}.retry");
    // Non-idempotent writes retried without an idempotency key: every
    // retry of a write that committed is a duplicate side effect.
    if (retries || l.hedging.is_some() || l.hedge_on_timeout)
        && let Some((note, fix)) = &hop.unsafe_write
    {
        out.add(
            Severity::Error,
            "non-idempotent-retries",
            &rp,
            format!(
                "{who} retries non-idempotent writes{note} without an idempotency key: a timeout after commit becomes a duplicate side effect"
            ),
            fix,
        );
    }
    // No jitter on a large fleet.
    let calls_per_s = stack.peak_offered_per_s * r.budgeted_calls_per_request;
    if retries
        && l.retry.jitter == Jitter::None
        && (m.instances >= LARGE_FLEET_INSTANCES || calls_per_s >= LARGE_FLEET_CALLS_PER_S)
    {
        let what = if m.retry.backoff.delay(1) == 0 {
            "retries immediately, with no backoff and no jitter"
        } else {
            "backs off without jitter"
        };
        out.add(Severity::Warning, "no-jitter", &format!("{rp}.jitter"), format!(
            "{who} {what} on a large fleet ({}, up to {} calls/s): failed calls retry in lockstep and hit {} together when it comes back",
            crate::human::plural(m.instances, "instance"), count(calls_per_s), hop.server
        ), "set `jitter: full` (and an exponential backoff with a cap)");
    }
    // Unbounded attempts: judged by the deadline that reaches the hop
    // (the user's is not one for a hop below a caller that keeps it).
    if l.retry.max_attempts >= MAX_ATTEMPTS
        && !hop.deadline_reaches
        && l.total_timeout.is_none()
        && l.retry.max_elapsed.is_none()
    {
        let (attempts, retries) = (l.retry.max_attempts, l.retry.max_attempts - 1);
        let no_deadline = if deadline.is_some() {
            "no total_timeout or max_elapsed, and clients.deadline does not reach it (a caller above has `deadline: none`, or nothing to hand down)"
        } else {
            "no deadline, total_timeout or max_elapsed"
        };
        out.add(Severity::Error, "unbounded-retries", &format!("{rp}.max_attempts"), format!(
            "{who} retries {retries} times ({attempts} attempts, unbounded) with {no_deadline}: a failing call retries for as long as the outage lasts"
        ), &format!(
            "bound it: max_attempts 2-5 for user-facing calls, and max_elapsed or a deadline{}",
            if hop.callers_propagate { "" } else { " (with `deadline: propagate` on every caller above)" }
        ));
    }
    // Non-retryable statuses.
    let bad: Vec<String> = l
        .retry
        .retry_on
        .iter()
        .filter_map(|on| match *on {
            RetryOn::Status(c) if NON_RETRYABLE.contains(&c) => Some(c.to_string()),
            RetryOn::Class(4) => Some("4xx".to_string()),
            _ => None,
        })
        .collect();
    if retries && !bad.is_empty() {
        out.add(Severity::Error, "retries-non-retryable-status", &format!("{rp}.retry_on"), format!(
            "{who} retries {}, which includes validation and auth errors (400/401/403/404/422) that fail the same way every time",
            bad.join(", ")
        ), "retry only transient outcomes: timeout, connection, 408, 429, 500, 502, 503, 504");
    }
    // Per-attempt timeout that uses up the deadline.
    if let (Some(t), Some(d)) = (l.timeout, deadline)
        && t.secs_f64() >= d
        && retries
    {
        out.add(Severity::Warning, "timeout-exceeds-deadline", &format!("{path}.timeout"), format!(
            "{who} waits {} per attempt, not less than the deadline ({}): an attempt that times out leaves no time to retry",
            t, fmt_s(d)
        ), "make the per-attempt timeout a fraction of the deadline (deadline / attempts or less)");
    }
    // A timeout the run never reaches (valid: it means "no timeout").
    if let Some(t) = l.timeout
        && t >= s.duration
    {
        out.add(Severity::Info, "timeout-never-fires", &format!("{path}.timeout"), format!(
            "{who} waits {} per attempt, as long as the run ({}) or longer: no attempt ever times out",
            t, s.duration
        ), "expected if attempts should never time out; else a timeout well below the run (and the deadline)");
    }
    retry_after_findings(out, hop, &rp, deadline);
    // Inner retries that outlive the caller's attempt (the shortest one).
    // A caller with `deadline: propagate` hands its attempt's deadline to
    // this hop, which then starts no attempt or sleep past it: only the
    // callers that do not are counted, and the fix is theirs to make (the
    // hop's own `deadline` hands its attempts' deadlines further down).
    let shortest = hop
        .outer
        .iter()
        .filter(|(_, _, propagates)| !propagates)
        .min_by_key(|(_, t, _)| *t);
    if retries
        && let (Some((caller, outer_t, _)), Some(w)) = (shortest, r.worst_case_s)
        && w > outer_t.secs_f64()
    {
        let noun = who.split(' ').next().unwrap_or("layer");
        out.add(Severity::Warning, "inner-retries-outlive-caller", &format!("{path}.deadline"), format!(
            "{who} can spend {} on one call, longer than its caller `{caller}` waits per attempt ({outer_t}): the caller times out and retries while these retries go on as orphaned work",
            fmt_s(w)
        ), &format!("set `deadline: propagate` on the caller `{caller}` (it then hands its attempt's deadline down, and this {noun} starts no attempt or sleep past it), or fewer attempts / shorter timeouts here"));
    }
}

fn retry_after_findings(out: &mut Out, hop: &Hop, rp: &str, deadline: Option<f64>) {
    let (l, who, server) = (hop.layer, &hop.who, &hop.server);
    if l.retry.max_attempts <= 1 {
        return;
    }
    let ov = hop.overload;
    let sends = ov.retry_after.is_some()
        && l.retry.retry_on.iter().any(|on| match *on {
            RetryOn::Status(c) => c == ov.status,
            RetryOn::Class(k) => ov.status / 100 == k as u16,
            _ => false,
        });
    let mode = l.retry.retry_after;
    if mode == RetryAfterMode::Ignore {
        let (sev, why) = if sends {
            (
                Severity::Warning,
                format!(
                    "{server} answers overload with {} and Retry-After {}",
                    ov.status,
                    ov.retry_after.map(|d| d.to_string()).unwrap_or_default()
                ),
            )
        } else {
            (
                Severity::Info,
                "servers that send it are hammered early".to_string(),
            )
        };
        out.add(sev, "retry-after-ignored", &format!("{rp}.retry_after"), format!(
            "{who} ignores Retry-After: {why}"
        ), "set `retry_after: honor` (wait at least that long; fail fast when it exceeds the deadline)");
        return;
    }
    let Some(ra) = ov.retry_after.filter(|_| sends).map(|d| d.secs_f64()) else {
        if matches!(mode, RetryAfterMode::Honor | RetryAfterMode::Exact)
            && l.retry.retry_after_cap.is_none()
            && deadline.is_none()
            && l.total_timeout.is_none()
            && l.retry.max_elapsed.is_none()
        {
            // A cap is read with `honor` only: said where it is not set.
            let fix = if mode == RetryAfterMode::Honor {
                "set clients.deadline, or retry_after_cap"
            } else {
                "set clients.deadline, or retry_after_cap with `retry_after: honor`"
            };
            out.add(Severity::Info, "retry-after-unbounded", &format!("{rp}.retry_after"), format!(
                "{who} obeys any Retry-After with no cap and no deadline: a server can park requests for as long as it asks"
            ), fix);
        }
        return;
    };
    let wait = match mode {
        RetryAfterMode::Honor => l.retry.retry_after_cap.map_or(ra, |c| ra.min(c.secs_f64())),
        RetryAfterMode::Envoy if ra > 300.0 => 0.0,
        RetryAfterMode::Envoy => ra,
        RetryAfterMode::AwsClamp => ra.min(5.0),
        _ => ra,
    };
    if let Some(d) = deadline
        && wait >= d
    {
        out.add(Severity::Info, "retry-after-exceeds-deadline", &format!("{rp}.retry_after"), format!(
            "{server}'s Retry-After ({}) is not shorter than the deadline ({}): {who} fails those requests at once with retry_after_exceeds_budget instead of retrying",
            fmt_s(ra), fmt_s(d)
        ), "expected behaviour; lower the server's Retry-After or raise the deadline if those requests should be retried");
    }
}
