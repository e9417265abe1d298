//! The result of `linkperf rr` as users see it: JSON schema `linkperf/1`
//! (schema/linkperf-rr-1.schema.json describes it) and the source of the
//! human output.

use super::stats::{Bucket, Fit, Percentiles};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct RrReport {
    pub schema: &'static str,
    pub software: String,
    pub test: RrTestInfo,
    pub start: RrStart,
    pub intervals: Vec<RrInterval>,
    pub summary: RrSummary,
    /// The RTT histogram of every transaction in `summary.rtt_ms`.
    pub histogram: Vec<Bucket>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<SizePoint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<Fit>,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
    /// Stopped early (Ctrl-C); the numbers cover what ran.
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RrTestInfo {
    /// Always "rr": tells this document from a throughput test's.
    pub kind: &'static str,
    pub server: String,
    pub port: u16,
    pub protocol: &'static str,
    /// rr, connect, cold, sizes or load.
    pub mode: &'static str,
    pub request: u32,
    pub response: u32,
    pub burst: u32,
    /// Target transactions/s; null = back to back.
    pub rate_per_second: Option<f64>,
    /// Test length; null when a count was given.
    pub duration_s: Option<f64>,
    /// Transactions asked for (--cold: rounds; --sizes: per size).
    pub count: Option<u64>,
    pub interval_s: f64,
    /// Fixed timeout; null = adaptive (UDP) or 10 s (TCP).
    pub timeout_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RrStart {
    pub timestamp_unix_ms: u64,
    pub local: String,
    pub remote: String,
    pub remote_software: String,
    /// "shared" (one kernel: same host or its namespaces), "synchronised"
    /// (the user says so with --clock-sync) or "independent" (RTT only).
    pub clock: &'static str,
    /// Why that clock assumption was made, in words.
    pub clock_reason: String,
}

/// One interval of the test.
#[derive(Debug, Clone, Serialize)]
pub struct RrInterval {
    pub start: f64,
    pub end: f64,
    /// Under --load: "idle" or "loaded".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<&'static str>,
    pub transactions: u64,
    pub transactions_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// null when no transaction completed in the interval.
    pub rtt_ms: Option<Percentiles>,
}

/// The server's own count, reported back at the end.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ServerCounts {
    pub requests: u64,
    pub transactions: u64,
    pub connections: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RateCheck {
    pub target_per_second: f64,
    /// Requests sent per second (answered or not).
    pub achieved_per_second: f64,
    /// Within 5 % of the target.
    pub reached: bool,
}

/// Per-round difference of the first and second probe after an idle gap.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Difference {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct OneWay {
    pub clock: &'static str,
    /// Client to server: server receive time minus client send time.
    pub forward_ms: SignedStats,
    /// Server to client: client receive time minus server receive time
    /// (includes the server's turn-around, microseconds).
    pub reverse_ms: SignedStats,
}

/// Mean, minimum, maximum and median of a delay that may be negative when
/// the clocks disagree.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SignedStats {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadSummary {
    /// The `linkperf client` options of the load.
    pub args: String,
    pub protocol: &'static str,
    pub streams: u32,
    pub seconds: f64,
    /// What the load's receiver got.
    pub bits_per_second: f64,
    pub retransmits: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RrSummary {
    /// Completed transactions (answered in time).
    pub transactions: u64,
    /// Requests sent.
    pub attempted: u64,
    /// Transactions run before measuring (--sizes warm-up, --load ramp-up):
    /// in the server's count, not in these statistics.
    pub warmup: u64,
    pub seconds: f64,
    pub transactions_per_second: f64,
    /// The server's count for the session.
    pub server: Option<ServerCounts>,
    pub rtt_ms: Percentiles,
    /// UDP: transactions that timed out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
    /// UDP: answers that came after their transaction had timed out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late: Option<u64>,
    /// UDP: the loss timeout at the end of the test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateCheck>,
    /// --connect: time of connect() alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<Percentiles>,
    /// --connect: connect + request/response + close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_ms: Option<Percentiles>,
    /// --cold: the first probe after each idle gap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_rtt_ms: Option<Percentiles>,
    /// --cold: the probe right after the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_rtt_ms: Option<Percentiles>,
    /// --cold: first minus second, per round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_minus_second_ms: Option<Difference>,
    /// --load: probes before the load started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_rtt_ms: Option<Percentiles>,
    /// --load: probes while the load ran (after its first second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_rtt_ms: Option<Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSummary>,
    /// One-way delays, when both ends read one clock or the user says their
    /// clocks are synchronised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_way_ms: Option<OneWay>,
}

/// --sizes: one size's result.
#[derive(Debug, Clone, Serialize)]
pub struct SizePoint {
    pub size: u32,
    pub request: u32,
    pub response: u32,
    pub transactions: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    pub rtt_ms: Percentiles,
}
