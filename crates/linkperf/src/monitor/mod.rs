//! Monitoring (`linkperf monitor`): tests run on a schedule between many
//! agents, every result stored as it ends, alerts against thresholds,
//! Prometheus metrics and a dashboard. `schedule` reads the file, `plan`
//! decides what runs when, `controller` runs and stores, `metrics` and
//! `http` expose what was measured.

pub mod schedule;
