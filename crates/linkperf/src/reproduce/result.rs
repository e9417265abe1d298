//! What a reproduction yields: per point the seed's figure beside linkperf's and the
//! model's, and the experiment's whole comparison ([`Reproduction`]), as `reproduce -J`
//! prints them.

use super::{cold, convergence};
use serde::Serialize;
use std::collections::BTreeMap;

/// One point: the seed's figure, linkperf's, and the model's.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub point: String,
    pub seed_mbps: Option<f64>,
    /// What the seed's sender sent (its sent\received figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed_sent_mbps: Option<f64>,
    /// The seed's figure times the experiment's `seed_scale`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed_scaled_mbps: Option<f64>,
    /// Median received rate over the point's runs (a campaign: the mean
    /// over its sessions).
    pub linkperf_mbps: Option<f64>,
    /// A campaign's sent rate (the flow's sender, or the phase's senders).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_mbps: Option<f64>,
    pub model_mbps: Option<f64>,
    /// The ns-3 twin's received rate (`simulate`), and the seed's own
    /// simulated figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulated_mbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed_simulated_mbps: Option<f64>,
    /// The window the receiver advertised (the sender's tcp_info), median.
    pub advertised_window_bytes: Option<u64>,
    /// Segments the sender retransmitted (tcp_info), median over the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// What was dropped over a run, by where: the emulator's causes
    /// (`backlog`, `queue`, `loss`, ...; every link direction summed) and
    /// `interface` (the hosts' own `line_rate` queues); medians over the
    /// runs; places that dropped nothing are left out.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub drops: BTreeMap<String, u64>,
    /// With `--sample`: the first sample's smoothed RTT and the loaded one
    /// (summary.dynamics.rtt), medians over the point's runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_rtt_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_rtt_ms: Option<f64>,
    /// With a `schedule`: the loss it injected and the recovery (the
    /// point's first run that saw it as its own event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<convergence::Injected>,
    pub runs: usize,
}

/// An experiment run and compared.
#[derive(Debug, Clone, Serialize)]
pub struct Reproduction {
    pub schema: &'static str,
    pub experiment: String,
    pub seed: String,
    pub source: String,
    pub reduced: bool,
    /// The stored sweep (`linkperf report sweep ID` draws it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_id: Option<i64>,
    /// The stored campaign (`linkperf report ID` draws it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Row>,
    /// A `[cold]` experiment's sites.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<cold::ColdRow>,
    /// `[[simulate_scale]]`: the ns-3 runs, stored as runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub simulated: Vec<convergence::SimRow>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub seed_recovery_s: BTreeMap<String, f64>,
    /// The link's payload rate (the model's), for the buffer an RTT implies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_mbps: Option<f64>,
    /// Why it stopped early, if it did (the rows hold what ran).
    pub stopped: Option<String>,
}
