//! What `linkperf simulate` is asked ([`SimSpec`]) and why it may refuse or
//! fail ([`SimError`]).

use std::path::PathBuf;

/// What to simulate: a testbed path and the client-like options of the test.
#[derive(Debug, Clone)]
pub struct SimSpec {
    pub testbed: PathBuf,
    /// The sending and receiving hosts; both or neither (a two-host testbed).
    pub ends: Option<(String, String)>,
    /// Data goes `to` -> `from` (`-R`).
    pub reverse: bool,
    pub duration_s: f64,
    pub interval_s: f64,
    /// Sample period of the cwnd/RTT series, seconds.
    pub sample_s: f64,
    /// Kernel name (reno, cubic, bic, bbr); None: this host's default.
    pub congestion: Option<String>,
    pub streams: u32,
    /// `-w`: both socket buffers, bytes.
    pub window: Option<u64>,
    /// `--window-clamp`: the exact largest window, bytes.
    pub window_clamp: Option<u64>,
    /// `--cwnd-clamp`: the sender's congestion window never exceeds this many
    /// segments (Linux: the route metric `cwnd lock N`).
    pub cwnd_clamp: Option<u32>,
}

/// Why a simulation did not run; `usage` errors exit 2.
#[derive(Debug, Clone, PartialEq)]
pub struct SimError {
    pub message: String,
    pub usage: bool,
}

impl SimError {
    pub fn usage(message: impl Into<String>) -> SimError {
        SimError {
            message: message.into(),
            usage: true,
        }
    }
    pub fn failed(message: impl Into<String>) -> SimError {
        SimError {
            message: message.into(),
            usage: false,
        }
    }
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
