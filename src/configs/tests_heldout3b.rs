//! Held-out review findings (rev30, rev31): export's in-place write, CRLF
//! files, Resilience4j merges and backoff, Istio host matching, range
//! messages, and the BEST file's reading.

use super::write::{InPlace, overwrite};

/// A file in memory whose `fail_at`-th write stops after `keep` bytes
/// with "no space left on device", as a full disk does.
struct Disk {
    bytes: Vec<u8>,
    writes: usize,
    fail_at: usize,
    keep: usize,
}

impl InPlace for Disk {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.writes += 1;
        let n = if self.writes == self.fail_at {
            self.keep.min(bytes.len())
        } else {
            bytes.len()
        };
        let at = offset as usize;
        if self.bytes.len() < at + n {
            self.bytes.resize(at + n, 0);
        }
        self.bytes[at..at + n].copy_from_slice(&bytes[..n]);
        if self.writes == self.fail_at {
            return Err(std::io::Error::other("no space left on device"));
        }
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.bytes.resize(len as usize, 0);
        Ok(())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn disk(old: &str, fail_at: usize, keep: usize) -> Disk {
    Disk {
        bytes: old.as_bytes().to_vec(),
        writes: 0,
        fail_at,
        keep,
    }
}

/// R3 (rev30): a full disk while a longer text is written in place
/// leaves the file whole, and the error says it is unchanged.
#[test]
fn in_place_write_on_a_full_disk_leaves_the_file_unchanged() {
    let old = "{\"maxAttempts\": 3}\n";
    let new = "{\"maxAttempts\": 4, \"initialBackoff\": \"0.1s\"}\n";
    // The space claim fails part way.
    let mut d = disk(old, 1, 5);
    let e = overwrite(&mut d, old.as_bytes(), new.as_bytes()).unwrap_err();
    assert_eq!(d.bytes, old.as_bytes());
    assert!(
        e.contains("no space left") && e.contains("not changed"),
        "{e}"
    );
    // The overwrite of the old bytes fails part way: written back.
    let mut d = disk(old, 2, 7);
    let e = overwrite(&mut d, old.as_bytes(), new.as_bytes()).unwrap_err();
    assert_eq!(d.bytes, old.as_bytes());
    assert!(e.contains("unchanged"), "{e}");
    // A shorter text, failing part way: written back too.
    let mut d = disk(new, 1, 3);
    let e = overwrite(&mut d, new.as_bytes(), old.as_bytes()).unwrap_err();
    assert_eq!(d.bytes, new.as_bytes());
    assert!(e.contains("unchanged"), "{e}");
    // And when nothing fails, the new text, at its length.
    for (a, b) in [(old, new), (new, old)] {
        let mut d = disk(a, 0, 0);
        overwrite(&mut d, a.as_bytes(), b.as_bytes()).unwrap();
        assert_eq!(d.bytes, b.as_bytes());
    }
    // The write back failing too is said loudly.
    let mut d = disk(old, 2, 7);
    d.fail_at = 2;
    struct Twice(Disk);
    impl InPlace for Twice {
        fn write_at(&mut self, o: u64, b: &[u8]) -> std::io::Result<()> {
            let r = self.0.write_at(o, b);
            if self.0.writes >= 2 {
                return Err(std::io::Error::other("no space left on device"));
            }
            r
        }
        fn set_len(&mut self, l: u64) -> std::io::Result<()> {
            self.0.set_len(l)
        }
        fn sync(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut t = Twice(d);
    let e = overwrite(&mut t, old.as_bytes(), new.as_bytes()).unwrap_err();
    assert!(e.contains("PARTLY WRITTEN"), "{e}");
}

fn export_sets(
    text: &str,
    format: super::Format,
    selector: super::Selector,
    sets: &[(&str, serde_json::Value)],
) -> Result<super::write::Exported, Vec<String>> {
    let sets = sets
        .iter()
        .map(|(p, v)| (p.to_string(), v.clone()))
        .collect();
    super::write::export_text(
        text,
        "f",
        format,
        &selector,
        &super::write::Wanted::Sets(sets),
    )
    .map_err(|e| e.iter().map(ToString::to_string).collect())
}

/// EXPORT-CRLF (rev31), L7 (rev30): lines added to a CRLF file end in
/// CRLF, and the diff shows no CR.
#[test]
fn crlf_files_get_crlf_lines_and_a_readable_diff() {
    use serde_json::json;
    let ms = "\u{feff}{\r\n  \"Http\": {\r\n    \"Resilience\": {\r\n      \"Retry\": {\r\n        \"MaxRetryAttempts\": 5,\r\n        \"Delay\": \"00:00:01\"\r\n      }\r\n    }\r\n  }\r\n}\r\n";
    let out = export_sets(
        ms,
        super::Format::MsResilience,
        super::Selector {
            section: Some("Http:Resilience".into()),
            ..Default::default()
        },
        &[("retry.max_attempts", json!(3)), ("timeout", json!("3s"))],
    )
    .unwrap();
    assert!(out.after.starts_with('\u{feff}'));
    assert_eq!(
        out.after.matches('\n').count(),
        out.after.matches("\r\n").count(),
        "{:?}",
        out.after
    );
    assert!(
        out.after.matches('\n').count() > ms.matches('\n').count(),
        "{:?}",
        out.after
    );
    let diff = super::write::unified_diff(&out.before, &out.after, "f");
    assert!(!diff.contains('\r') && diff.contains("\n+"), "{diff}");
    let vs = "apiVersion: networking.istio.io/v1beta1\r\nkind: VirtualService\r\nmetadata:\r\n  name: ratings\r\nspec:\r\n  hosts:\r\n  - ratings\r\n  http:\r\n  - name: v2\r\n    route:\r\n    - destination:\r\n        host: ratings\r\n    retries:\r\n      attempts: 4\r\n      perTryTimeout: 1.5s\r\n";
    let out = export_sets(
        vs,
        super::Format::IstioVirtualservice,
        super::Selector {
            host: Some("ratings".into()),
            route: Some("v2".into()),
            ..Default::default()
        },
        &[
            ("retry.max_attempts", json!(2)),
            ("retry.retry_on", json!(["connection", 503])),
        ],
    )
    .unwrap();
    assert_eq!(
        out.after.matches('\n').count(),
        out.after.matches("\r\n").count(),
        "{:?}",
        out.after
    );
    assert!(out.after.contains("retryOn"), "{}", out.after);
}

/// R4J-MERGE-ADD (rev31): an instance of only a `<<` merge key gets the
/// tuned key as its own, indented like the merge key.
#[test]
fn resilience4j_instance_of_only_a_merge_key_gets_its_own_key() {
    use serde_json::json;
    let yml = "x-retry-defaults: &retry-defaults\n  maxAttempts: 3\n  waitDuration: 500ms\nresilience4j:\n  retry:\n    instances:\n      inventory:\n        <<: *retry-defaults\n      payments:\n        <<: *retry-defaults\n        maxAttempts: 2\n";
    let out = export_sets(
        yml,
        super::Format::Resilience4j,
        super::Selector {
            instance: Some("inventory".into()),
            ..Default::default()
        },
        &[("retry.max_attempts", json!(5))],
    )
    .unwrap();
    assert_eq!(
        out.after,
        yml.replace(
            "        <<: *retry-defaults\n      payments",
            "        <<: *retry-defaults\n        maxAttempts: 5\n      payments"
        )
    );
    let flow = "x-d: &d\n  maxAttempts: 3\n  waitDuration: 500ms\nresilience4j.retry.instances:\n  inventory: {<<: *d}\n";
    let out = export_sets(
        flow,
        super::Format::Resilience4j,
        super::Selector {
            instance: Some("inventory".into()),
            ..Default::default()
        },
        &[("retry.max_attempts", json!(5))],
    )
    .unwrap();
    assert!(
        out.after.contains("inventory: {<<: *d, maxAttempts: 5}"),
        "{}",
        out.after
    );
}

/// R4J-TRUNCATE-MS (rev31): constant to exponential without naming the
/// internal `truncate_ms`: Resilience4j's exponential kind implies it.
#[test]
fn resilience4j_exponential_export_does_not_need_truncate_ms() {
    use serde_json::json;
    let yml = "resilience4j.retry:\n  instances:\n    shipping:\n      maxAttempts: 3\n      waitDuration: 1s\n";
    let out = export_sets(
        yml,
        super::Format::Resilience4j,
        super::Selector {
            instance: Some("shipping".into()),
            ..Default::default()
        },
        &[
            ("retry.backoff.kind", json!("exponential")),
            ("retry.backoff.base", json!("200ms")),
            ("retry.backoff.multiplier", json!(2)),
        ],
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        out.after.contains("enableExponentialBackoff: true"),
        "{}",
        out.after
    );
    assert!(out.after.contains("waitDuration: 200ms"), "{}", out.after);
    assert!(
        out.notes.iter().any(|n| n.contains("whole milliseconds")),
        "{:?}",
        out.notes
    );
}

fn istio_import(text: &str, host: &str, route: Option<&str>) -> Result<super::Policy, String> {
    let sel = super::Selector {
        host: Some(host.into()),
        route: route.map(str::to_string),
        ..Default::default()
    };
    super::import_text(text, "f", super::Format::IstioVirtualservice, &sel).map_err(|e| {
        e.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// ISTIO-SAME-NAME (rev31): a short host that matches two full hosts is
/// named as such, with the full hosts to pick from.
#[test]
fn istio_short_host_of_two_namespaces_names_the_full_hosts() {
    let two = "kind: VirtualService\nmetadata: { name: reviews, namespace: prod }\nspec:\n  hosts: [reviews.prod.svc.cluster.local]\n  http:\n  - name: main\n    route: [{ destination: { host: reviews.prod.svc.cluster.local } }]\n    retries: { attempts: 5, retryOn: 5xx }\n---\nkind: VirtualService\nmetadata: { name: reviews, namespace: staging }\nspec:\n  hosts: [reviews.staging.svc.cluster.local]\n  http:\n  - name: main\n    route: [{ destination: { host: reviews.staging.svc.cluster.local } }]\n    retries: { attempts: 1, retryOn: 5xx }\n";
    let e = istio_import(two, "reviews", Some("main")).unwrap_err();
    assert!(
        e.contains("matches 2 hosts")
            && e.contains("`reviews.prod.svc.cluster.local`")
            && e.contains("`reviews.staging.svc.cluster.local`")
            && e.contains("full host"),
        "{e}"
    );
    let p = istio_import(two, "reviews.staging.svc.cluster.local", Some("main")).unwrap();
    // Istio's `attempts` counts the retries.
    assert_eq!(p.fragment["retry"]["max_attempts"], serde_json::json!(2));
}

/// ISTIO-WILDCARD-HOST (rev31): `*.example.com` serves
/// `api.example.com`; the more specific host wins; no match lists hosts.
#[test]
fn istio_wildcard_hosts_match_as_istio_matches_them() {
    let vs = "kind: VirtualService\nmetadata: { name: edge }\nspec:\n  hosts: [\"*.example.com\"]\n  http:\n  - name: all\n    route: [{ destination: { host: web } }]\n    retries: { attempts: 4, retryOn: 5xx }\n";
    let p = istio_import(vs, "api.example.com", None).unwrap();
    // Istio's `attempts` counts the retries.
    assert_eq!(p.fragment["retry"]["max_attempts"], serde_json::json!(5));
    // Not the bare domain, nor another one.
    for h in ["example.com", "api.example.org"] {
        let e = istio_import(vs, h, None).unwrap_err();
        assert!(
            e.contains("the file's hosts are `*.example.com`, `web`"),
            "{e}"
        );
    }
    // The exact host is more specific than the wildcard, and a longer
    // wildcard than a shorter one.
    let both = format!(
        "{vs}---\nkind: VirtualService\nmetadata: {{ name: api }}\nspec:\n  hosts: [api.example.com]\n  http:\n  - name: all\n    route: [{{ destination: {{ host: api }} }}]\n    retries: {{ attempts: 2, retryOn: 5xx }}\n---\nkind: VirtualService\nmetadata: {{ name: v1 }}\nspec:\n  hosts: [\"*.v1.example.com\"]\n  http:\n  - name: all\n    route: [{{ destination: {{ host: v1 }} }}]\n    retries: {{ attempts: 3, retryOn: 5xx }}\n"
    );
    let p = istio_import(&both, "api.example.com", None).unwrap();
    assert_eq!(p.fragment["retry"]["max_attempts"], serde_json::json!(3));
    let p = istio_import(&both, "a.v1.example.com", None).unwrap();
    assert_eq!(p.fragment["retry"]["max_attempts"], serde_json::json!(4));
    let p = istio_import(&both, "b.example.com", None).unwrap();
    assert_eq!(p.fragment["retry"]["max_attempts"], serde_json::json!(5));
}

/// L5 (rev30): well-formed values out of range are said to be so.
#[test]
fn well_formed_values_out_of_range_are_named_so() {
    let grpc = r#"{"methodConfig": [{"name": [{"service": "a.B"}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 1e999, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let sel = super::Selector {
        method: Some("a.B".into()),
        ..Default::default()
    };
    let e = super::import_text(grpc, "f", super::Format::GrpcServiceConfig, &sel).unwrap_err();
    let e = e[0].to_string();
    assert!(e.contains("`1e999` is a JSON number, but too large"), "{e}");
    let bad = grpc.replace("1e999", "1x9");
    let e = super::import_text(&bad, "f", super::Format::GrpcServiceConfig, &sel).unwrap_err();
    assert!(e[0].to_string().contains("is not a JSON value"), "{:?}", e);
    let yml = "resilience4j.retry:\n  instances:\n    p:\n      maxAttempts: 3\n      waitDuration: PT9223372036854775807S\n";
    let sel = super::Selector {
        instance: Some("p".into()),
        ..Default::default()
    };
    let e = super::import_text(yml, "f", super::Format::Resilience4j, &sel).unwrap_err();
    let e = e
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        e.contains("is a well-formed duration, but longer than stormsim can hold"),
        "{e}"
    );
    let e = super::import_text(
        &yml.replace("PT9223372036854775807S", "PTxS"),
        "f",
        super::Format::Resilience4j,
        &sel,
    )
    .unwrap_err();
    assert!(
        e[0].to_string().contains("expected a duration such as"),
        "{:?}",
        e
    );
}

/// L9 (rev30): export's BEST file: a key given twice in the loader's
/// words, at its line; overlapping keys refused as `--set` refuses them.
#[test]
fn best_file_duplicates_and_overlaps_are_refused_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let into = dir.path().join("sc.json");
    std::fs::write(&into, "{}").unwrap();
    let read = |name: &str, text: &str| {
        let best = dir.path().join(name);
        std::fs::write(&best, text).unwrap();
        let Err(e) =
            super::write::wanted_from_best(&best, None, &into, &super::Selector::default())
        else {
            panic!("accepted");
        };
        e.iter().map(ToString::to_string).collect::<Vec<_>>()
    };
    let e = read(
        "dup.yaml",
        "layers.orders.retry.max_attempts: 3\nlayers.orders.retry.max_attempts: 4\n",
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].ends_with("dup.yaml:2:1: layers.orders.retry.max_attempts: `max_attempts` is given twice; expected each field once"), "{e:?}");
    assert!(!e[0].contains("DuplicateKeyPolicy"), "{e:?}");
    let e = read(
        "overlap.yaml",
        "layers.orders.retry: {max_attempts: 3}\nlayers.orders.retry.max_attempts: 4\n",
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains(
            ":2:1: layers.orders.retry.max_attempts: sets the same field as `layers.orders.retry`"
        ),
        "{e:?}"
    );
}
