//! `stormsim schema`: the JSON Schema of the scenario format accepts every
//! bundled scenario (the loader's defaults and optional fields included)
//! and rejects what is plainly wrong.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn schema() -> serde_json::Value {
    let out = Command::cargo_bin("stormsim")
        .unwrap()
        .arg("schema")
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).expect("the schema is JSON")
}

fn yaml_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            found.push(path);
        }
    }
}

fn as_json(yaml: &str) -> serde_json::Value {
    serde_saphyr::from_str::<serde_json::Value>(yaml).expect("YAML parses")
}

#[test]
fn every_bundled_scenario_validates_against_the_schema() {
    let validator = jsonschema::validator_for(&schema()).expect("a valid JSON Schema");
    let mut files = Vec::new();
    yaml_files(Path::new("scenarios"), &mut files);
    files.push(PathBuf::from("docs/examples/diamond.yaml"));
    assert!(files.len() >= 10, "found {files:?}");
    for path in files {
        let doc = as_json(&std::fs::read_to_string(&path).unwrap());
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    }
}

#[test]
fn the_schema_accepts_a_preset_layer_and_rejects_typos() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let minimal = "name: m\nduration: 1m\nclients: { arrival: { kind: poisson, rate: 10/s } }\n\
                   dependency: { concurrency: 1, service_time: { dist: constant, value: 1ms } }\n";
    assert!(validator.is_valid(&as_json(minimal)));
    let preset = format!(
        "{minimal}layers: [ {{ name: sdk, preset: aws-standard-2.1, retry: {{ backoff: {{ base: 2s }}, retry_on: [timeout, 503, '5xx'] }} }} ]\n"
    );
    assert!(validator.is_valid(&as_json(&preset)));
    for bad in [
        minimal.replace("duration: 1m", "duration: 60"),
        minimal.replace("10/s", "10"),
        minimal.replace("name: m", "name: m\nseeed: 3"),
        minimal.replace("poisson", "poison"),
        format!("{minimal}layers: [ {{ name: a, retry: {{ retry_on: [700] }} }} ]\n"),
    ] {
        assert!(!validator.is_valid(&as_json(&bad)), "accepted:\n{bad}");
    }
}

#[test]
fn the_schema_accepts_a_services_graph_and_rejects_typos_in_it() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let graph = "name: g\nduration: 1m\nclients: { arrival: { kind: poisson, rate: 10/s }, calls: api }\n\
                 services:\n\
                 \x20 - { name: api, concurrency: 8, hold_worker: true, calls: [ { to: db, timeout: 1s, retry: { max_attempts: 3 } }, { to: cache, parallel: true, optional: true } ] }\n\
                 \x20 - { name: db, concurrency: 4, service_time: { dist: exponential, mean: 5ms } }\n\
                 \x20 - { name: cache }\n";
    assert!(validator.is_valid(&as_json(graph)), "{graph}");
    let entry_call = graph.replace(
        "calls: api }",
        "calls: { to: api, timeout: 2s, preset: grpc } }",
    );
    assert!(validator.is_valid(&as_json(&entry_call)), "{entry_call}");
    for bad in [
        graph.replace("timeout: 1s", "timout: 1s"),
        graph.replace("hold_worker: true", "hold_worker: yes please"),
        graph.replace("{ name: cache }", "{ name: cache, concurency: 2 }"),
        graph.replace("calls: api }", "calls: 7 }"),
        graph.replace("{ to: db,", "{ too: db,"),
    ] {
        assert!(!validator.is_valid(&as_json(&bad)), "accepted:\n{bad}");
    }
}
