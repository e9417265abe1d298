//! `linkperf server`'s limits and log flags: what a public server allows
//! (docs/security.md), turned into the library's [`Limits`].

use clap::{Args, ValueEnum};
use linkperf::guard::{Limits, LogFormat};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct ServerLimitArgs {
    /// Most connections open at once (of any kind).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections)]
    pub server_max_connections: usize,
    /// Most connections open at once from one source address.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections_per_source)]
    pub server_max_connections_per_source: usize,
    /// Most tests (linkperf, rr, iperf3) running at once.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_tests)]
    pub server_max_tests: usize,
    /// Most streams (-P) one test may open.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams_per_test)]
    pub server_max_streams_per_test: u32,
    /// Most streams of all running tests together.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams)]
    pub server_max_streams: usize,
    /// Payload buffer memory one test may hold on the server.
    #[arg(long, value_name = "SIZE", value_parser = size, default_value = "256M")]
    pub server_max_test_memory: u64,
    /// Longest test; -n tests are stopped when they reach it.
    #[arg(long, value_name = "DURATION", value_parser = seconds, default_value = "1h")]
    pub server_max_duration: f64,
    /// Highest rate one test may ask for (all its streams, -b times -P);
    /// tests without -b are then refused. Default: no limit.
    #[arg(long, value_name = "RATE", value_parser = rate)]
    pub server_bitrate_limit: Option<u64>,
    /// Time for each handshake step (preamble, hello, set-up, data connections).
    #[arg(long, value_name = "DURATION", value_parser = seconds, default_value = "10")]
    pub server_handshake_timeout: f64,
    /// Event log lines as text or as JSON objects.
    #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
    /// Append the event log to this file instead of the terminal.
    #[arg(long, value_name = "PATH")]
    pub logfile: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormatArg {
    Text,
    Json,
}

impl ServerLimitArgs {
    pub fn limits(&self) -> Limits {
        Limits {
            max_connections: self.server_max_connections,
            max_connections_per_source: self.server_max_connections_per_source,
            max_tests: self.server_max_tests,
            max_streams_per_test: self.server_max_streams_per_test,
            max_streams: self.server_max_streams,
            max_test_memory: self.server_max_test_memory,
            max_duration_s: self.server_max_duration,
            max_bitrate: self.server_bitrate_limit,
            handshake_timeout: Duration::from_secs_f64(self.server_handshake_timeout),
            ..Limits::default()
        }
    }

    pub fn log_format(&self) -> LogFormat {
        match self.log_format {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        }
    }
}

fn size(s: &str) -> Result<u64, String> {
    linkperf_units::parse_size(s).map_err(|e| e.to_string())
}

fn rate(s: &str) -> Result<u64, String> {
    linkperf_units::parse_rate(s).map_err(|e| e.to_string())
}

/// A positive duration of at most a day.
fn seconds(s: &str) -> Result<f64, String> {
    let d = linkperf_units::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| e.to_string())?;
    if d <= 0.0 || d > 86_400.0 {
        return Err(format!(
            "'{s}' is out of range; accepted: more than 0 and at most a day (86400 s)"
        ));
    }
    Ok(d)
}
