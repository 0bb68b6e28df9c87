//! `stormsim export` never writes a file that its own `import` refuses
//! (hostile review 11, D8): a tuned `initialBackoff` above the file's
//! `maxBackoff` read back as written, but no layer takes a base above its
//! cap, so the edit is refused with exit 2 and the file is left as it was.

use crate::common::files::stormsim;

#[test]
fn an_export_whose_result_import_would_refuse_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("service-config.json");
    std::fs::copy("tests/fixtures/configs/service-config.json", &config).unwrap();
    let before = std::fs::read(&config).unwrap();
    // The file's CreateOrder has maxBackoff 1s; a base of 1.23 s beside it.
    let best = dir.path().join("best.yaml");
    std::fs::write(&best, "layers.x.retry.backoff.base: 1234567891ns\n").unwrap();
    let method = "orders.v1.Orders/CreateOrder";
    let import = || {
        stormsim()
            .args(["import"])
            .arg(&config)
            .args(["--format", "grpc-service-config", "--method", method])
            .output()
            .unwrap()
    };
    assert_eq!(import().status.code(), Some(0));
    let out = stormsim()
        .arg("export")
        .arg(&best)
        .arg("--into")
        .arg(&config)
        .args(["--format", "grpc-service-config", "--method", method])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no scenario takes"), "{err}");
    assert!(err.contains("expected cap >= base"), "{err}");
    assert_eq!(
        std::fs::read(&config).unwrap(),
        before,
        "the file is unchanged"
    );
    // The file still imports.
    assert_eq!(import().status.code(), Some(0));
}
