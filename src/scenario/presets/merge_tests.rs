//! Preset merging: what the user writes beside a preset wins, leaf by
//! leaf; `--set`/variants that set a preset replace its fields; the
//! resolved scenario keeps `preset:` and reloads to the same scenario.

use super::*;
use crate::scenario::fixtures::MINIMAL;
use crate::scenario::types::{BudgetKind, Jitter, Scenario};
use crate::scenario::units::Duration;
use crate::scenario::{apply_set, load_str, parse_set_arg, resolved_yaml};

fn with_layer(layer: &str) -> String {
    format!("{MINIMAL}layers:\n  - name: a\n{layer}")
}

/// `s` with its derived defaults written out, as `scenario.resolved.yaml`
/// holds them.
fn derived(s: &Scenario) -> Scenario {
    let mut s = s.clone();
    crate::scenario::defaults::fill_derived(&mut s);
    s
}

fn load(layer: &str) -> Scenario {
    let src = with_layer(layer);
    load_str(&src, "x.yaml").unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn set(s: &Scenario, arg: &str) -> Scenario {
    let (path, value) = parse_set_arg(arg).unwrap();
    apply_set(s, &path, value).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_preset_parses_and_names_the_core_fields() {
    for p in PRESETS {
        let frag = p
            .fragment()
            .unwrap_or_else(|| panic!("{} is not a mapping", p.name));
        let retry = frag["retry"].as_object().expect("retry");
        for f in [
            "max_attempts",
            "backoff",
            "jitter",
            "retry_on",
            "retry_after",
        ] {
            assert!(retry.contains_key(f), "{} lacks retry.{f}", p.name);
        }
        assert!(p.yaml.starts_with(&format!("# {}: ", p.name)), "{}", p.name);
        assert!(
            p.yaml.contains("docs/sources/presets.md §"),
            "{} cites no section",
            p.name
        );
        assert!(p.yaml.contains("upstream:"), "{} cites no upstream", p.name);
        let s = load(&format!("    preset: {}\n", p.name));
        assert_eq!(s.layers[0].preset.as_deref(), Some(p.name));
    }
    assert_eq!(names().len(), 20);
}

#[test]
fn preset_fields_fill_what_the_user_did_not_write() {
    let s = load("    preset: aws-standard-2.1\n    timeout: 2s\n");
    let l = &s.layers[0];
    assert_eq!(l.timeout, Some(Duration::from_secs(2)));
    assert_eq!(l.retry.max_attempts, 3);
    assert_eq!(l.retry.backoff().base, Duration::from_millis(50));
    assert_eq!(
        l.retry.backoff().throttle_base,
        Some(Duration::from_secs(1))
    );
    assert_eq!(l.retry.jitter, Jitter::Full);
    let b = l.retry.budget.as_ref().unwrap();
    assert_eq!(
        (b.kind, b.retry_cost, b.timeout_cost),
        (BudgetKind::AwsQuota, Some(14.0), Some(14.0))
    );
}

#[test]
fn user_leaves_override_only_themselves() {
    let s = load(
        "    preset: aws-standard-2.1\n    retry:\n      max_attempts: 5\n      backoff: { base: 200ms }\n      budget: { retry_cost: 7 }\n",
    );
    let r = &s.layers[0].retry;
    assert_eq!(r.max_attempts, 5);
    assert_eq!(r.backoff().base, Duration::from_millis(200));
    assert_eq!(r.backoff().cap, Some(Duration::from_secs(20)));
    assert_eq!(r.backoff().throttle_base, Some(Duration::from_secs(1)));
    let b = r.budget.as_ref().unwrap();
    assert_eq!(
        (b.retry_cost, b.timeout_cost, b.capacity),
        (Some(7.0), Some(14.0), Some(500.0))
    );
}

#[test]
fn another_kind_replaces_the_whole_struct() {
    let s = load(
        "    preset: aws-standard-2.1\n    retry:\n      backoff: { kind: constant, base: 1s }\n      budget: { kind: ratio }\n",
    );
    let mut s = s;
    crate::scenario::defaults::fill_derived(&mut s);
    let r = &s.layers[0].retry;
    assert_eq!(
        (
            r.backoff().cap,
            r.backoff().throttle_base,
            r.backoff().multiplier
        ),
        (None, None, None)
    );
    let b = r.budget.as_ref().unwrap();
    assert_eq!(
        (b.kind, b.ratio, b.capacity),
        (BudgetKind::Ratio, Some(0.1), None)
    );
}

#[test]
fn an_explicit_null_removes_a_preset_field_and_round_trips() {
    let s = load(
        "    preset: envoy-default\n    total_timeout: null\n    retry:\n      budget: null\n      backoff: { cap: null }\n",
    );
    let l = &s.layers[0];
    assert_eq!(l.total_timeout, None);
    assert_eq!(l.retry.budget, None);
    assert_eq!(l.retry.backoff().cap, None);
    let text = resolved_yaml(&s);
    assert!(text.contains("preset: envoy-default"), "{text}");
    let back = load_str(&text, "resolved.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, derived(&s), "{text}");
}

#[test]
fn resolved_yaml_reloads_every_preset_to_the_same_scenario() {
    for p in PRESETS {
        let s = load(&format!("    preset: {}\n", p.name));
        let text = resolved_yaml(&s);
        let back = load_str(&text, "resolved.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, derived(&s), "{}: {text}", p.name);
    }
    // With overrides beside the preset, including a flag turned off.
    let s = load(
        "    preset: resilience4j-exp-random\n    retry:\n      backoff: { truncate_ms: false }\n      jitter: none\n",
    );
    assert!(!s.layers[0].retry.backoff().truncate_ms);
    let text = resolved_yaml(&s);
    assert_eq!(load_str(&text, "r.yaml").unwrap(), derived(&s), "{text}");
}

#[test]
fn setting_a_preset_replaces_the_fields_it_defines() {
    let s = load("    preset: aws-standard-2.1\n    timeout: 1s\n");
    let g = set(&s, "layers.a.preset=grpc-a6");
    let l = &g.layers[0];
    assert_eq!(l.preset.as_deref(), Some("grpc-a6"));
    assert_eq!(l.timeout, Some(Duration::from_secs(1)));
    assert_eq!(l.retry.max_attempts, 4);
    assert_eq!(l.retry.backoff().throttle_base, None);
    assert_eq!(l.retry.jitter, Jitter::Proportional(0.2));
    assert_eq!(
        l.retry.budget.as_ref().unwrap().kind,
        BudgetKind::TokenBucket
    );
    assert_eq!(l.retry.budget.as_ref().unwrap().capacity, None);
    // A layer without a preset gets one the same way.
    let plain = load("    retry: { max_attempts: 2 }\n");
    let p = set(&plain, "layers.0.preset=ms-http-standard");
    assert_eq!(p.layers[0].total_timeout, Some(Duration::from_secs(30)));
    assert!(p.layers[0].breaker.is_some());
    // And back: fields of the old preset are gone.
    let back = set(&p, "layers.a.preset=resilience4j-default");
    assert_eq!(
        (
            back.layers[0].total_timeout,
            back.layers[0].breaker.is_none()
        ),
        (None, true)
    );
}

#[test]
fn a_variant_can_switch_presets_then_override() {
    let src = format!(
        "{}variants:\n  - name: grpc\n    set:\n      layers.a.preset: grpc-a6\n      layers.a.retry.max_attempts: 2\n",
        with_layer("    preset: aws-standard-2.0\n")
    );
    let s = load_str(&src, "x.yaml").unwrap();
    let v = crate::scenario::expand_variants(&s).unwrap();
    let r = &v[0].1.layers[0].retry;
    assert_eq!(r.max_attempts, 2);
    assert_eq!(r.backoff().base, Duration::from_millis(100));
}

#[test]
fn replacing_a_whole_layer_fills_its_preset() {
    let s = load("    preset: aws-standard-2.0\n");
    let r = set(
        &s,
        "layers.a={name: a, preset: backon-exponential, retry: {max_attempts: 2}}",
    );
    assert_eq!(r.layers[0].retry.max_attempts, 2);
    assert_eq!(r.layers[0].retry.backoff().base, Duration::from_secs(1));
    assert_eq!(r.layers[0].retry.budget, None);
}

#[test]
fn unknown_preset_is_located_with_a_suggestion() {
    let src = with_layer("    preset: aws-standard-2.2\n");
    let e = load_str(&src, "x.yaml").unwrap_err();
    assert_eq!(e.len(), 1, "{e}");
    let e = &e.0[0];
    assert_eq!(e.path.as_deref(), Some("layers.a.preset"));
    assert_eq!((e.line, e.column), (Some(10), Some(13)), "{e}");
    assert!(
        e.message
            .contains("unknown preset `aws-standard-2.2`; did you mean `aws-standard-2.0`?"),
        "{e}"
    );
    assert!(e.message.contains("k8s-workqueue-default"), "{e}");
}

#[test]
fn errors_in_fields_beside_a_preset_keep_their_position() {
    let src = with_layer("    preset: grpc-a6\n    retry:\n      backoff: { base: fast }\n");
    let e = load_str(&src, "x.yaml").unwrap_err();
    assert_eq!(e.0[0].line, Some(12), "{e}");
    let src = with_layer("    preset: grpc-a6\n    retry:\n      budget: { max_tokens: 2000 }\n");
    let e = load_str(&src, "x.yaml").unwrap_err();
    assert_eq!(
        e.0[0].path.as_deref(),
        Some("layers.a.retry.budget.max_tokens"),
        "{e}"
    );
    assert_eq!(e.0[0].line, Some(12), "{e}");
}
