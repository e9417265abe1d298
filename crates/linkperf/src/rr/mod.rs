//! Request/response latency (`linkperf rr`), connection set-up time, first
//! packet after an idle gap, RTT against message size and latency under load.
//!
//! The server side answers through the ordinary `linkperf server` (preamble
//! `LPR1`, see `linkperf_proto::rr`); the client measures every transaction
//! itself with a monotonic clock, so no clock agreement is needed for RTT.
//! docs/rr.md describes the options, the JSON fields and the clock assumptions.

pub mod client;
pub mod report;
pub mod server;
pub mod stats;
pub mod text;

use crate::spec::TestSpec;
use linkperf_proto::messages::RrRequest;
use linkperf_proto::rr::check_size;
use linkperf_proto::Protocol;
use std::net::IpAddr;
use std::time::Duration;

fn size(s: &str) -> Result<u64, String> {
    linkperf_units::parse_size(s).map_err(|e| e.to_string())
}

/// Parses a transaction rate: `1000`, `1000/s`, `2.5k/s`, `1M`.
pub fn parse_rate(input: &str) -> Result<f64, String> {
    let err = || format!("'{input}' is not a transaction rate (e.g. 1000/s, 2.5k/s)");
    let s = input.trim();
    let s = s.strip_suffix("/s").unwrap_or(s);
    let (num, scale) = match s.chars().last() {
        Some('k') | Some('K') => (&s[..s.len() - 1], 1e3),
        Some('M') => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(err());
    }
    let v: f64 = num.parse().map_err(|_| err())?;
    let v = v * scale;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!(
            "--rate {input}: the rate must be above 0 transactions/s"
        ));
    }
    Ok(v)
}

/// What to measure, besides plain request/response.
#[derive(Debug, Clone)]
pub enum Mode {
    Rr,
    Connect,
    Cold { idle: Duration },
    Sizes { sizes: Vec<u32>, echo: bool },
    Load(Box<LoadPlan>),
}

impl Mode {
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Rr => "rr",
            Mode::Connect => "connect",
            Mode::Cold { .. } => "cold",
            Mode::Sizes { .. } => "sizes",
            Mode::Load(_) => "load",
        }
    }
}

/// The bulk test run alongside the probes.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// As the user gave it.
    pub args: String,
    pub options: crate::client::ClientOptions,
}

/// A validated `linkperf rr` run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub host: String,
    pub port: u16,
    pub family: Option<u8>,
    pub bind: Option<IpAddr>,
    pub protocol: Protocol,
    pub request: u32,
    pub response: u32,
    pub burst: u32,
    pub rate: Option<f64>,
    pub duration: Duration,
    pub count: Option<u64>,
    pub interval: Option<Duration>,
    pub timeout: Option<Duration>,
    pub mode: Mode,
    pub clock_sync: bool,
    /// Who to answer a server's challenge as; `None`: the process's own
    /// (`--username`/`--key-file`, LINKPERF_USER/LINKPERF_KEY). An agent
    /// running a third party's order sets its own user here.
    pub credentials: Option<crate::client::Credentials>,
    /// TLS on the session's control connection; `None`: plain. Data
    /// connections and UDP flows stay plain.
    pub tls: Option<std::sync::Arc<crate::tls::ClientTls>>,
}

/// Default request and response size.
pub const DEFAULT_SIZE: u32 = 64;
/// Default idle gap of `--cold`.
pub const DEFAULT_IDLE_S: f64 = 2.0;
/// Default rounds of `--cold` without `-n`.
pub const DEFAULT_COLD_ROUNDS: u64 = 5;
/// Default probe rate under `--load`: light enough not to be load itself.
pub const DEFAULT_LOAD_RATE: f64 = 100.0;
/// With several TCP transactions in flight, the requests or the responses of
/// a whole burst must fit in a socket buffer, or both ends block writing.
const MAX_TCP_BURST_BYTES: u64 = 64 * 1024;

fn positive_duration(what: &str, s: f64) -> Result<Duration, String> {
    if !(s > 0.0 && s.is_finite() && s <= 86_400.0 * 365.0) {
        return Err(format!("{what} must be above 0 seconds"));
    }
    Ok(Duration::from_secs_f64(s))
}

/// One `linkperf rr` run as asked for; [`RrSpec::plan`] checks it.
#[derive(Debug, Clone)]
pub struct RrSpec {
    pub host: String,
    pub port: u16,
    pub protocol: Protocol,
    /// Request and response sizes in bytes (default 64).
    pub request: Option<u64>,
    pub response: Option<u64>,
    /// Transactions per second as written (`1000/s`, `2.5k/s`); default back to back.
    pub rate: Option<String>,
    /// Transactions in flight at once.
    pub burst: u32,
    /// Seconds to run (ignored with `count`).
    pub time: f64,
    pub count: Option<u64>,
    /// Seconds between interval reports (0: none).
    pub interval: f64,
    pub timeout: Option<f64>,
    /// Connection set-up per transaction (TCP_CRR).
    pub connect: bool,
    /// First-packet latency after idle gaps of `idle` seconds.
    pub cold: bool,
    pub idle: Option<f64>,
    /// RTT against size: comma-separated sizes.
    pub sizes: Option<String>,
    /// Latency under load: the bulk test as the user wrote it, and as a spec.
    pub load: Option<(String, TestSpec)>,
    pub clock_sync: bool,
    pub bind: Option<IpAddr>,
    pub family: Option<u8>,
}

impl RrSpec {
    /// Plain request/response towards `host`: 64-byte messages, TCP, 10 s.
    pub fn new(host: impl Into<String>) -> RrSpec {
        RrSpec {
            host: host.into(),
            port: linkperf_proto::DEFAULT_PORT,
            protocol: Protocol::Tcp,
            request: None,
            response: None,
            rate: None,
            burst: 1,
            time: 10.0,
            count: None,
            interval: 1.0,
            timeout: None,
            connect: false,
            cold: false,
            idle: None,
            sizes: None,
            load: None,
            clock_sync: false,
            bind: None,
            family: None,
        }
    }

    /// Checks everything that can be checked before connecting.
    pub fn plan(&self) -> Result<Plan, String> {
        let protocol = self.protocol;
        if self.connect && protocol == Protocol::Udp {
            return Err(
                "--connect measures TCP connection set-up; it has no UDP form (drop -u)".into(),
            );
        }
        let duration = positive_duration("-t", self.time)?;
        if self.count == Some(0) {
            return Err("-n 0: run at least one transaction".into());
        }
        if !(self.interval >= 0.0 && self.interval.is_finite()) {
            return Err("-i must be 0 (no intervals) or a positive number of seconds".into());
        }
        let interval = (self.interval > 0.0).then(|| Duration::from_secs_f64(self.interval));
        let timeout = self
            .timeout
            .map(|t| positive_duration("--timeout", t))
            .transpose()?;
        if self.burst == 0 || self.burst > 1024 {
            return Err(format!(
                "--burst {}: between 1 and 1024 transactions in flight",
                self.burst
            ));
        }
        if self.burst > 1 && (self.connect || self.cold) {
            return Err(
                "--burst applies to plain request/response and --sizes, not --connect or --cold"
                    .into(),
            );
        }
        let rate = self.rate.as_deref().map(parse_rate).transpose()?;
        if rate.is_some() && self.cold {
            return Err("--rate does not apply to --cold: the pace is set by --idle".into());
        }
        let request = check_size(
            "--request",
            self.request.unwrap_or(DEFAULT_SIZE as u64),
            protocol,
        )?;
        let response = check_size(
            "--response",
            self.response.unwrap_or(DEFAULT_SIZE as u64),
            protocol,
        )?;
        let mode = self.mode()?;
        self.check_tcp_burst(&mode, request, response)?;
        let rate = match (&mode, rate) {
            (Mode::Load(_), None) => Some(DEFAULT_LOAD_RATE),
            (_, r) => r,
        };
        Ok(Plan {
            host: self.host.clone(),
            port: self.port,
            family: self.family,
            bind: self.bind,
            protocol,
            request,
            response,
            burst: self.burst,
            rate,
            duration,
            count: self.count,
            interval,
            timeout,
            mode,
            clock_sync: self.clock_sync,
            credentials: None,
            tls: crate::client::default_tls(),
        })
    }

    /// What to measure besides plain request/response (flags checked).
    fn mode(&self) -> Result<Mode, String> {
        Ok(if self.connect {
            Mode::Connect
        } else if self.cold {
            Mode::Cold {
                idle: positive_duration("--idle", self.idle.unwrap_or(DEFAULT_IDLE_S))?,
            }
        } else if let Some(list) = &self.sizes {
            Mode::Sizes {
                sizes: self.sizes(list)?,
                echo: self.response.is_none(),
            }
        } else if let Some((text, spec)) = &self.load {
            Mode::Load(Box::new(self.load_plan(text, spec)?))
        } else {
            Mode::Rr
        })
    }

    /// The `--sizes` list: at least two different sizes, each legal.
    fn sizes(&self, list: &str) -> Result<Vec<u32>, String> {
        let mut sizes = Vec::new();
        for item in list.split(',') {
            let item = item.trim();
            let v = size(item).map_err(|e| format!("--sizes: {e}"))?;
            sizes.push(check_size("--sizes: a size", v, self.protocol)?);
        }
        let mut distinct = sizes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() < 2 {
            return Err("--sizes needs at least two different sizes to fit a line".into());
        }
        Ok(sizes)
    }

    /// TCP with several transactions in flight: a burst must fit the buffers.
    fn check_tcp_burst(&self, mode: &Mode, request: u32, response: u32) -> Result<(), String> {
        if self.protocol != Protocol::Tcp || self.burst <= 1 {
            return Ok(());
        }
        let largest = match mode {
            Mode::Sizes { sizes, .. } => *sizes.iter().max().unwrap_or(&request),
            _ => request.min(response),
        };
        let bytes = self.burst as u64 * largest as u64;
        if bytes > MAX_TCP_BURST_BYTES {
            return Err(format!(
                "--burst {} x {} bytes in flight exceeds {} KiB: both ends could block on full socket buffers; lower --burst or the sizes",
                self.burst,
                largest,
                MAX_TCP_BURST_BYTES / 1024
            ));
        }
        Ok(())
    }

    /// The bulk test runs towards the rr server, from the same address.
    fn load_plan(&self, text: &str, spec: &TestSpec) -> Result<LoadPlan, String> {
        let mut spec = spec.clone();
        spec.host = self.host.clone();
        spec.port = self.port;
        spec.bind = self.bind;
        spec.family = self.family;
        spec.clock_sync = self.clock_sync;
        spec.config()
            .validate()
            .map_err(|e| format!("--load: {e}"))?;
        Ok(LoadPlan {
            args: text.to_string(),
            options: crate::client::ClientOptions::from_spec(&spec),
        })
    }
}

impl RrSpec {
    /// The run as a third party orders it from an agent: what the agent's
    /// own `linkperf rr` would take. A bulk load and the local address
    /// belong to the ordering host and are refused.
    pub fn request(&self) -> Result<RrRequest, String> {
        if self.load.is_some() {
            return Err("--load cannot be ordered from an agent; run rr there with --load".into());
        }
        if self.bind.is_some() {
            return Err("--bind names a local address; an agent uses its own".into());
        }
        self.plan()?;
        Ok(RrRequest {
            protocol: self.protocol,
            request: self.request,
            response: self.response,
            rate: self.rate.clone(),
            burst: self.burst,
            duration_s: self.time,
            count: self.count,
            interval_s: self.interval,
            timeout_s: self.timeout,
            connect: self.connect,
            cold: self.cold,
            idle_s: self.idle,
            sizes: self.sizes.clone(),
        })
    }

    /// The run an agent makes for a third party's `request` towards `host`.
    pub fn from_request(host: &str, port: u16, r: &RrRequest) -> RrSpec {
        RrSpec {
            port,
            protocol: r.protocol,
            request: r.request,
            response: r.response,
            rate: r.rate.clone(),
            burst: r.burst,
            time: r.duration_s,
            count: r.count,
            interval: r.interval_s,
            timeout: r.timeout_s,
            connect: r.connect,
            cold: r.cold,
            idle: r.idle_s,
            sizes: r.sizes.clone(),
            ..RrSpec::new(host)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_suffixes() {
        assert_eq!(parse_rate("1000/s"), Ok(1000.0));
        assert_eq!(parse_rate("2.5k/s"), Ok(2500.0));
        assert_eq!(parse_rate("1M"), Ok(1e6));
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("-5").is_err());
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("/s").is_err());
    }

    #[test]
    fn a_request_carries_the_run_to_an_agent() {
        let mut spec = RrSpec::new("192.0.2.1");
        (spec.protocol, spec.request, spec.response) = (Protocol::Udp, Some(200), Some(1000));
        (spec.rate, spec.time, spec.interval) = (Some("50/s".into()), 3.0, 0.5);
        let back = RrSpec::from_request("192.0.2.1", spec.port, &spec.request().unwrap());
        assert_eq!(format!("{:?}", back.plan()), format!("{:?}", spec.plan()));
        spec.load = Some(("-t 1".into(), TestSpec::new("192.0.2.1")));
        assert!(spec.request().unwrap_err().contains("--load"));
    }
}
