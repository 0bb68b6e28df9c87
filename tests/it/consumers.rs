//! Message consumers: visibility timeout, redelivery, dead-letter queue.

use crate::common::*;
use stormsim::model::rate::{RateChange, RateProfile};
use stormsim::model::service::ServiceDist;
use stormsim::model::{CallPolicy, ConsumerConfig, ModelConfig};

fn queue(
    poison: f64,
    max_receive: u32,
    visibility: u64,
    service: u64,
    handler: CallPolicy,
) -> ModelConfig {
    let dep = dependency(64, ServiceDist::Constant(service), 10_000);
    // 20 messages per second for 60 s, then nothing: every message has time
    // to end processed or dead-lettered before the run ends at 10 min.
    let mut cfg = config(20.0, 600 * S, vec![handler], dep);
    cfg.arrivals = RateProfile::new(
        20.0,
        &[RateChange::Step {
            at: 60 * S,
            rate: 0.0,
        }],
    );
    cfg.consumers = Some(ConsumerConfig {
        concurrency: 16,
        visibility,
        max_receive_count: max_receive,
        poison,
        poison_status: 500,
    });
    cfg
}

fn assert_messages_conserved(s: &stormsim::metrics::Summary) {
    assert_eq!(
        s.messages,
        s.processed + s.dead_lettered + s.messages_open,
        "every message ends processed or dead-lettered (or is still queued)"
    );
    // Every delivery is one handling: one logical request.
    assert_eq!(s.deliveries, s.logical_requests);
}

#[test]
fn a_poison_message_is_delivered_max_receive_count_times_then_dead_lettered() {
    let handler = retrying_layer("handler", 1, Some(S));
    let cfg = queue(1.0, 5, 10 * S, 10 * MS, handler);
    let (_, s) = run(&cfg, 1);
    assert_conserved(&s);
    assert_messages_conserved(&s);
    assert!(s.messages > 1000);
    assert_eq!(s.processed, 0);
    assert_eq!(s.messages_open, 0);
    assert_eq!(s.dead_lettered, s.messages);
    assert_eq!(
        s.deliveries,
        5 * s.messages,
        "exactly max_receive_count deliveries each"
    );
    assert_eq!(s.redeliveries, 4 * s.messages);
    // The sixth receive, after the fifth visibility timeout, moves it.
    let age = s.dead_letter_age_mean_s.unwrap();
    assert!((50.0..51.0).contains(&age), "{age}");
}

#[test]
fn healthy_messages_are_processed_once() {
    let handler = retrying_layer("handler", 3, Some(S));
    let cfg = queue(0.0, 5, 30 * S, 10 * MS, handler);
    let (_, s) = run(&cfg, 2);
    assert_messages_conserved(&s);
    assert_eq!(s.processed, s.messages);
    assert_eq!(s.deliveries, s.messages);
    assert_eq!(s.redeliveries, 0);
    assert!(s.message_latency_p99_ms.unwrap() < 50.0);
}

#[test]
fn in_handler_retries_times_redeliveries_is_the_double_loop() {
    // Poison messages with 4 in-handler attempts and 5 deliveries: 20 calls.
    let handler = retrying_layer("handler", 4, Some(S));
    let mut cfg = queue(1.0, 5, 10 * S, 10 * MS, handler);
    // A status the handler retries.
    cfg.consumers.as_mut().unwrap().poison_status = 503;
    let (_, s) = run(&cfg, 3);
    assert_messages_conserved(&s);
    assert_eq!(s.dependency_attempts, 20 * s.messages);
}

#[test]
fn a_handler_slower_than_the_visibility_timeout_is_processed_twice() {
    // Work takes 3 s; the message reappears after 2 s and another consumer
    // takes it while the first handler still runs.
    let handler = retrying_layer("handler", 1, None);
    let mut cfg = queue(0.0, 10, 2 * S, 3 * S, handler);
    cfg.arrivals = RateProfile::new(
        1.0,
        &[RateChange::Step {
            at: 60 * S,
            rate: 0.0,
        }],
    );
    let (_, s) = run(&cfg, 4);
    assert_messages_conserved(&s);
    assert!(
        s.duplicate_deliveries >= s.messages - 2,
        "{} of {}",
        s.duplicate_deliveries,
        s.messages
    );
    assert_eq!(s.processed, s.messages, "each message is deleted once");
}
