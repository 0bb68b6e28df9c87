//! Held-out review 9: a short Istio host in two namespaces named as two
//! hosts, and near-miss AWS option names warned about. Each test fails
//! without its fix.

use super::*;

fn errors(text: &str, format: Format, s: &Selector) -> String {
    match import_text(text, "f", format, s) {
        Ok(_) => String::new(),
        Err(e) => e
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

const TWO_NS: &str = "apiVersion: v1
kind: List
items:
- apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata: { name: cart, namespace: staging }
  spec:
    hosts: [cart]
    http:
    - route: [{ destination: { host: cart } }]
      retries: { attempts: 2 }
- apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata: { name: cart, namespace: prod }
  spec:
    hosts: [cart]
    http:
    - route: [{ destination: { host: cart } }]
      retries: { attempts: 4 }
";

#[test]
fn istio_a_short_host_in_two_namespaces_names_both_full_hosts() {
    for route in [None, Some("#0")] {
        let s = Selector {
            host: Some("cart".into()),
            route: route.map(str::to_string),
            ..Selector::default()
        };
        let e = errors(TWO_NS, Format::IstioVirtualservice, &s);
        assert!(
            e.contains("cart.staging.svc.cluster.local")
                && e.contains("cart.prod.svc.cluster.local")
                && e.contains("give the full host"),
            "{e}"
        );
    }
    // Following the advice picks one.
    let s = Selector {
        host: Some("cart.prod.svc.cluster.local".into()),
        ..Selector::default()
    };
    let p = import_text(TWO_NS, "f", Format::IstioVirtualservice, &s).unwrap();
    assert!(p.selected.contains("items[1]"), "{}", p.selected);
}

#[test]
fn aws_a_near_miss_option_is_warned_with_did_you_mean() {
    let s = Selector {
        profile: Some("ci".into()),
        ..Selector::default()
    };
    let p = import_text(
        "[profile ci]\nretry_mode = standard\nmax_attemps = 10\n",
        "f",
        Format::AwsConfig,
        &s,
    )
    .unwrap();
    let w = p
        .warnings
        .iter()
        .find(|w| w.key == "[profile ci].max_attemps")
        .unwrap_or_else(|| panic!("{:?}", p.warnings));
    assert!(
        w.message.contains("did you mean `max_attempts`"),
        "{}",
        w.message
    );
    assert_eq!(w.pos.map(|p| p.0), Some(3));
    // The right names and unrelated keys give no such warning.
    let p = import_text(
        "[profile ci]\nregion = eu-west-1\nretry_mode = standard\nmax_attempts = 4\n",
        "f",
        Format::AwsConfig,
        &s,
    )
    .unwrap();
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}
