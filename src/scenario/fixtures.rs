//! Scenario texts shared by the module's tests.

/// The example of README.md ("Scenario format"), adapted to the
/// types: a schedule instead of overlapping incidents' comments, and only
/// fields the types have.
pub const FULL: &str = "\
name: outage-recovery
description: the design example
seed: 42
duration: 10m
bucket: 1s
replicates: 5

clients:
  arrival: { kind: poisson, rate: 2000/s }
  schedule:
    - { at: 1m, rate: 2500/s }
    - { at: 2m, rate: 6000/s, for: 10s }
    - { at: 5m, ramp_to: 500/s, by: 6m }
  deadline: 10s

layers:
  - name: api
    timeout: 1s
    retry:
      max_attempts: 4
      backoff: { kind: exponential, base: 100ms, multiplier: 2, cap: 5s }
      jitter: full
      retry_on: [timeout, connection, 429, 503]
      retry_after: honor
  - name: storage
    timeout: 250ms
    deadline: propagate
    retry:
      max_attempts: 3
      backoff: { kind: linear, base: 50ms, cap: 200ms }
      jitter: { proportional: 0.5 }
      retry_after: ignore

dependency:
  concurrency: 64
  service_time: { dist: lognormal, median: 20ms, p99: 120ms }
  queue: { capacity: 512, discipline: lifo, timeout: 2s }
  overload: { status: 429, retry_after: 2s }
  incidents:
    - { kind: down,      start: 2m, end: 3m }
    - { kind: blackhole, start: 4m, end: 4m30s }
    - { kind: brownout,  start: 5m, end: 6m, capacity: 0.3 }
    - { kind: errors,    start: 7m, end: 8m, rate: 0.5 }
    - { kind: latency,   start: 9m, end: 9m30s, add: 400ms }
  recovery: { warmup: 30s }

variants:
  - { name: no-jitter,   set: { layers.api.retry.jitter: none } }
  - name: full-jitter
    set:
      layers.api.retry.jitter: full
      dependency.concurrency: 32
";

/// The smallest valid scenario.
pub const MINIMAL: &str = "\
name: minimal
duration: 1m
clients:
  arrival: { kind: poisson, rate: 100/s }
dependency:
  concurrency: 4
  service_time: { dist: exponential, mean: 25ms }
";

/// A services graph: a diamond over one database (gateway → orders and,
/// in parallel, inventory → the shared postgres).
pub const GRAPH: &str = "\
name: diamond
duration: 1m
clients:
  arrival: { kind: poisson, rate: 100/s }
  deadline: 10s
  calls: { to: gateway, timeout: 3s, retry: { max_attempts: 2 } }
services:
  - name: gateway
    concurrency: 100
    service_time: { dist: constant, value: 1ms }
    calls:
      - to: orders
        timeout: 1s
        retry: { max_attempts: 3 }
      - { to: inventory, parallel: true, optional: true, timeout: 500ms }
  - name: orders
    concurrency: 50
    service_time: { dist: exponential, mean: 3ms }
    calls:
      - { to: postgres, timeout: 200ms, retry: { max_attempts: 2 } }
  - name: inventory
    calls:
      - { to: postgres, name: db, timeout: 100ms, retry: { max_attempts: 4 } }
  - name: postgres
    concurrency: 16
    service_time: { dist: exponential, mean: 4ms }
    incidents:
      - { kind: down, start: 20s, end: 30s }
";
