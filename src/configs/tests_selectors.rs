//! The selectors that pick one policy in files holding several
//! candidates of the same name or match: an unnamed Istio route by index
//! (`route: "#N"`), an Envoy virtual host (`virtual_host`), a Linkerd
//! ServiceProfile (`profile`); and an Istio `kind: List`. Import and
//! export take the same selector, and the errors name the choices.

use serde_json::json;

use super::write::{Wanted, export_text};
use super::*;

const UNNAMED: &str = include_str!("../../tests/fixtures/configs/reviews-unnamed.yaml");
const VHOSTS: &str = include_str!("../../tests/fixtures/configs/envoy-two-vhosts.yaml");
const PROFILES: &str = include_str!("../../tests/fixtures/configs/two-serviceprofiles.yaml");
const LIST: &str = include_str!("../../tests/fixtures/configs/virtualservice-list.yaml");

fn errors(text: &str, format: Format, s: &Selector) -> String {
    match import_text(text, "f", format, s) {
        Ok(p) => panic!("imported {}", p.selected),
        Err(e) => e
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn attempts(text: &str, format: Format, s: &Selector) -> Value {
    let p = import_text(text, "f", format, s).unwrap_or_else(|e| panic!("{e:?}"));
    get_path(&p.fragment, "retry.max_attempts")
        .cloned()
        .unwrap()
}

/// The changed lines of an export of `retry.max_attempts: n`.
fn export_attempts(text: &str, format: Format, s: &Selector, n: u64) -> Vec<(String, String)> {
    let out = export_text(
        text,
        "f",
        format,
        s,
        &Wanted::Sets(vec![("retry.max_attempts".into(), json!(n))]),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let again = export_text(&out.after, "f", format, s, &Wanted::Sets(vec![]))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(again.after, out.after, "export of nothing changes nothing");
    text.lines()
        .zip(out.after.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn istio(host: &str, route: Option<&str>) -> Selector {
    Selector {
        host: Some(host.into()),
        route: route.map(Into::into),
        ..Selector::default()
    }
}

#[test]
fn istio_an_unnamed_route_is_selected_by_its_index() {
    let e = errors(
        UNNAMED,
        Format::IstioVirtualservice,
        &istio("reviews", None),
    );
    assert!(e.contains("`v2-testers`, `#1` (unnamed, line 12)"), "{e}");
    assert!(e.contains("`route: \"#N\"`"), "{e}");
    let s = istio("reviews", Some("#1"));
    assert_eq!(attempts(UNNAMED, Format::IstioVirtualservice, &s), json!(2));
    assert_eq!(
        attempts(
            UNNAMED,
            Format::IstioVirtualservice,
            &istio("reviews", Some("#0"))
        ),
        json!(3),
        "the testers' route, with Istio's default policy"
    );
    assert_eq!(
        export_attempts(UNNAMED, Format::IstioVirtualservice, &s, 4),
        [(
            "    retries: { attempts: 1 }  # the catch-all".into(),
            "    retries: { attempts: 3 }  # the catch-all".into()
        )]
    );
    let e = errors(
        UNNAMED,
        Format::IstioVirtualservice,
        &istio("reviews", Some("#2")),
    );
    assert!(e.contains("no http route at index 2"), "{e}");
    assert!(e.contains("`v2-testers`, `#1` (unnamed, line 12)"), "{e}");
}

#[test]
fn envoy_a_virtual_host_is_selected_by_name_or_domain() {
    let mut s = Selector {
        route: Some("/".into()),
        ..Selector::default()
    };
    let e = errors(VHOSTS, Format::EnvoyRoute, &s);
    assert!(e.contains("`virtual_host: NAME`"), "{e}");
    assert!(e.contains("`a`, `b`"), "{e}");
    s.virtual_host = Some("b.internal".into());
    assert_eq!(attempts(VHOSTS, Format::EnvoyRoute, &s), json!(5));
    s.virtual_host = Some("a".into());
    assert_eq!(attempts(VHOSTS, Format::EnvoyRoute, &s), json!(2));
    let changed = export_attempts(VHOSTS, Format::EnvoyRoute, &s, 3);
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].1.contains("cluster: a") && changed[0].1.contains("num_retries: 2"));
    s.virtual_host = Some("c".into());
    let e = errors(VHOSTS, Format::EnvoyRoute, &s);
    assert!(e.contains("no virtual host named `c`"), "{e}");
    assert!(
        e.contains("the virtual hosts are `a` (domains `a.example.com`); `b` (domains `b.example.com`, `b.internal`)"),
        "{e}"
    );
}

#[test]
fn linkerd_a_profile_is_selected_by_its_name() {
    let mut s = Selector {
        route: Some("GET /healthz".into()),
        ..Selector::default()
    };
    let e = errors(PROFILES, Format::LinkerdServiceprofile, &s);
    assert!(e.contains("`profile: NAME`"), "{e}");
    assert!(
        e.contains("`web.shop.svc.cluster.local`, `api.shop.svc.cluster.local`"),
        "{e}"
    );
    s.profile = Some("web.shop.svc.cluster.local".into());
    assert_eq!(
        attempts(PROFILES, Format::LinkerdServiceprofile, &s),
        json!(1)
    );
    let p = import_text(PROFILES, "f", Format::LinkerdServiceprofile, &s).unwrap();
    assert_eq!(get_path(&p.fragment, "total_timeout"), Some(&json!("1s")));
    s.profile = Some("api.shop.svc.cluster.local".into());
    let p = import_text(PROFILES, "f", Format::LinkerdServiceprofile, &s).unwrap();
    assert_eq!(get_path(&p.fragment, "total_timeout"), Some(&json!("5s")));
    s.profile = Some("nope".into());
    let e = errors(PROFILES, Format::LinkerdServiceprofile, &s);
    assert!(e.contains("no ServiceProfile named `nope`"), "{e}");
}

#[test]
fn a_selector_key_of_another_format_is_refused() {
    let s = Selector {
        method: Some("a.B/C".into()),
        virtual_host: Some("a".into()),
        ..Selector::default()
    };
    let e = errors("{}", Format::GrpcServiceConfig, &s);
    assert!(e.contains("`virtual_host` selects nothing"), "{e}");
}

#[test]
fn istio_a_kind_list_is_read_and_edited_in_place() {
    let s = istio("ratings", None);
    let p = import_text(LIST, "f", Format::IstioVirtualservice, &s).unwrap();
    assert_eq!(get_path(&p.fragment, "retry.max_attempts"), Some(&json!(5)));
    assert_eq!(get_path(&p.fragment, "timeout"), Some(&json!("2s")));
    assert!(
        p.selected.contains("items[1].spec.http[0]"),
        "{}",
        p.selected
    );
    assert_eq!(
        export_attempts(LIST, Format::IstioVirtualservice, &s, 2),
        [(
            "          retries: { attempts: 4, perTryTimeout: 2s }".into(),
            "          retries: { attempts: 1, perTryTimeout: 2s }".into()
        )]
    );
    let e = errors(
        "apiVersion: v1\nkind: List\nitems: []\n",
        Format::IstioVirtualservice,
        &s,
    );
    assert!(e.contains("`kind: List`"), "{e}");
}
