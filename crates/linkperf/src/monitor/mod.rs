//! Monitoring (`linkperf monitor`): tests run on a schedule between many
//! agents (campaign agents, ordered in third-party mode), every result
//! stored as it ends, alerts against thresholds, Prometheus metrics and a
//! dashboard. `schedule` reads the file, `plan` decides what runs when,
//! `controller` runs and stores (`outcome` turns a report into figures and
//! alerts, `spool` keeps results while the database is away), `metrics`,
//! `dashboard` and `http` expose what was measured. docs/monitoring.md.

pub mod controller;
pub mod dashboard;
pub mod http;
pub mod metrics;
pub mod outcome;
pub mod plan;
pub mod schedule;
pub mod spool;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
