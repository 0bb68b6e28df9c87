//! Every integration test in one binary: one link instead of fifty, and
//! the tests of all files share the test threads. Each file is a module
//! named as the file was; `cargo test --release --test it golden::` runs
//! one of them. `tests/interrupt.rs` stays a binary of its own: it sets
//! the process-wide stop flag that in-process chart drawing polls.

#[path = "../common/mod.rs"]
mod common;

mod adaptive;
mod after_incident;
mod arena;
mod autoscale;
mod bad_inputs;
mod cache;
mod charts;
mod classes_honest;
mod cli;
mod closed_loop;
mod completions;
mod configs;
mod configs_calls;
mod configs_heldout7;
mod consumers;
mod export_loads;
mod export_shared_notes;
mod export_write;
mod fidelity_metastability;
mod fidelity_queueing;
mod fidelity_retries;
mod flag_ranges;
mod fuzz_regressions;
mod golden;
mod graph;
mod graph_charts;
mod guard_rails;
mod hops;
mod hostile_review;
mod hostile_review10;
mod hostile_review12;
mod hostile_review13;
mod hostile_review14;
mod hostile_review4;
mod hostile_review6_out;
mod hostile_review6_scen;
mod hostile_review7_out;
mod hostile_review7_scen;
mod hostile_review8;
mod merge_stream;
mod messages;
mod model;
mod occ;
mod out_of_memory;
mod output_folders;
mod override_errors;
mod plot_input;
mod plot_memory;
mod policies;
mod pools;
mod priority;
mod progress;
mod published_scenarios;
mod queueing;
mod readme;
mod replicas;
mod report_browser;
mod scenario_trust;
mod scenarios;
mod schema;
mod self_contained;
mod set_order;
mod shard;
mod slo;
mod slowdown;
mod special_files;
mod stdio;
mod sweep_charts;
mod table_identities;
mod tune;
