//! The records the archive takes and gives back (runs, samples, rr figures,
//! sweeps, list entries and filters, monitoring results and alerts), as plain data. No SQL, no I/O and no
//! JSON picking here: a new run is made from a report in `extract` (tests,
//! campaigns) and `rr`, the reading and writing live in `read` and `write`.

use serde_json::Value;

/// Which sweep point and repetition a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepSlot {
    pub sweep_id: i64,
    pub point: i64,
    pub repetition: i64,
}

/// The repetition a sweep point's simulated twin (`sweep --simulate`) is
/// stored at: one per point, kept apart from the measured repetitions.
pub const TWIN_REPETITION: i64 = -1;

/// The normalised numbers of a run, for queries without parsing JSON.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    pub protocol: Option<String>,
    pub direction: Option<String>,
    pub sent_bps: Option<f64>,
    pub received_bps: Option<f64>,
    pub loss_percent: Option<f64>,
    pub rtt_mean_ms: Option<f64>,
    pub cpu_local_percent: Option<f64>,
    pub cpu_remote_percent: Option<f64>,
    pub duration_s: Option<f64>,
    pub interrupted: bool,
    /// The congestion control the sender's sockets used (read back from them).
    pub congestion: Option<String>,
    /// A campaign's flows in one round of its phases.
    pub flows: Option<i64>,
    /// The hosts a campaign's flows run between.
    pub hosts: Option<i64>,
}

/// One per-interval (or whole-test, `interval_idx` -1) sample of one stream
/// (or of the sum of the streams going one way, `stream_id` -1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub interval_idx: i64,
    pub stream_id: i64,
    pub direction: String,
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    pub omitted: bool,
    pub sent_bytes: Option<i64>,
    pub sent_bps: Option<f64>,
    pub received_bytes: Option<i64>,
    pub received_bps: Option<f64>,
    pub retransmits: Option<i64>,
    pub rtt_ms: Option<f64>,
    pub cwnd_bytes: Option<i64>,
    pub lost_packets: Option<i64>,
    pub jitter_ms: Option<f64>,
}

/// A run to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// "test" (a `linkperf client` run), "rr", "campaign", ...
    pub kind: String,
    pub started_unix_ms: i64,
    pub host: String,
    pub slot: Option<SweepSlot>,
    /// The effective configuration.
    pub config: Option<Value>,
    pub local_facts: Option<Value>,
    pub remote_facts: Option<Value>,
    pub metrics: RunMetrics,
    pub samples: Vec<Sample>,
    /// `linkperf rr` figures and its `--sizes` points.
    pub rr: Option<RrFigures>,
    pub rr_sizes: Vec<RrSize>,
    /// The full JSON document of the result.
    pub report: Value,
}

impl NewRun {
    pub fn in_sweep(mut self, slot: SweepSlot) -> NewRun {
        self.slot = Some(slot);
        self
    }
}

/// A stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub kind: String,
    pub started_unix_ms: i64,
    pub host: String,
    pub slot: Option<SweepSlot>,
    pub metrics: RunMetrics,
    /// A `linkperf rr` run's figures.
    pub rr: Option<RrFigures>,
    /// Loaded only when asked for.
    pub report: Option<Value>,
}

/// A sweep to create: its specification (free JSON the caller understands)
/// and the parameters of each point.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSweep {
    pub host: String,
    pub created_unix_ms: i64,
    pub spec: Value,
    pub points: Vec<Value>,
    pub planned_runs: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    pub id: i64,
    pub created_unix_ms: i64,
    pub host: String,
    /// "partial" until every planned run is stored, then "complete".
    pub status: String,
    pub spec: Value,
    pub points: Vec<Value>,
    pub planned_runs: i64,
}

/// One line of `results list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListEntry {
    pub id: i64,
    /// "sweep" or the run kind.
    pub kind: String,
    pub created_unix_ms: i64,
    pub host: String,
    pub parent: Option<i64>,
    pub metrics: RunMetrics,
    pub rr: Option<RrFigures>,
    pub sweep_status: Option<String>,
    pub sweep_points: Option<i64>,
    pub sweep_planned: Option<i64>,
    pub sweep_runs: Option<i64>,
}

/// What `results list` asks for.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub limit: i64,
    /// Only entries with a smaller id (the next page, newest first).
    pub before: Option<i64>,
    /// Include the runs that belong to sweeps.
    pub all: bool,
    pub kind: Option<String>,
    pub host: Option<String>,
}

/// What an id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Sweep,
    Run(String),
}

/// The figures of one rr run. Latencies in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RrFigures {
    /// rr, connect, cold, sizes or load.
    pub mode: String,
    pub request: Option<i64>,
    pub response: Option<i64>,
    pub burst: Option<i64>,
    pub transactions: Option<i64>,
    pub attempted: Option<i64>,
    pub transactions_per_second: Option<f64>,
    pub rtt_min_ms: Option<f64>,
    pub rtt_p50_ms: Option<f64>,
    pub rtt_p90_ms: Option<f64>,
    pub rtt_p99_ms: Option<f64>,
    pub rtt_p999_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    pub rtt_stddev_ms: Option<f64>,
    /// `--load`: before the load started and while it ran.
    pub idle_rtt_p50_ms: Option<f64>,
    pub idle_rtt_p99_ms: Option<f64>,
    pub loaded_rtt_p50_ms: Option<f64>,
    pub loaded_rtt_p99_ms: Option<f64>,
    /// `--sizes`: RTT = intercept + slope x size.
    pub fit_intercept_ms: Option<f64>,
    pub fit_slope_us_per_byte: Option<f64>,
    pub fit_r2: Option<f64>,
}

/// One message size of `linkperf rr --sizes`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RrSize {
    pub size: i64,
    pub request: i64,
    pub response: i64,
    pub transactions: i64,
    pub lost: Option<i64>,
    pub rtt_mean_ms: Option<f64>,
    pub rtt_p50_ms: Option<f64>,
    pub rtt_p99_ms: Option<f64>,
}

/// One scheduled test's outcome. Rates in bits/s, times in seconds, loss as
/// a ratio (0..1): the units the metrics are exposed in. Serialisable for the
/// monitor's spool (results waiting for the database).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MonitorResult {
    pub test: String,
    pub src: String,
    pub dst: String,
    pub started_unix_ms: i64,
    pub ok: bool,
    pub reason: Option<String>,
    pub throughput_bps: Option<f64>,
    pub loss_ratio: Option<f64>,
    pub rtt_mean_s: Option<f64>,
    pub rtt_p99_s: Option<f64>,
    /// The full run in `runs` (absent for a test that failed to start).
    #[serde(default)]
    pub run_id: Option<i64>,
}

/// An alert a result raised.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MonitorAlert {
    pub unix_ms: i64,
    pub test: String,
    pub src: String,
    pub dst: String,
    /// "throughput", "loss", "rtt" or "failure".
    pub kind: String,
    pub message: String,
}
