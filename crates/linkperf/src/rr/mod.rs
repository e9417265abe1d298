//! `linkperf rr`: request/response latency, connection set-up time, first
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

use crate::cli::{Cli, ClientArgs, Command};
use clap::{Args, Parser};
use linkperf_proto::rr::check_size;
use linkperf_proto::Protocol;
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

fn size(s: &str) -> Result<u64, String> {
    linkperf_units::parse_size(s).map_err(|e| e.to_string())
}
fn seconds(s: &str) -> Result<f64, String> {
    linkperf_units::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| e.to_string())
}
fn count(s: &str) -> Result<u64, String> {
    linkperf_units::parse_count(s).map_err(|e| e.to_string())
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

#[derive(Args, Debug)]
pub struct RrArgs {
    /// Server to test against (a `linkperf server`).
    pub host: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = linkperf_proto::DEFAULT_PORT)]
    pub port: u16,
    /// UDP instead of TCP (a lost transaction times out and counts as lost).
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// Request size in bytes (UDP: 16 to 65507).
    #[arg(long, value_parser = size)]
    pub request: Option<u64>,
    /// Response size in bytes (UDP: 16 to 65507).
    #[arg(long, value_parser = size)]
    pub response: Option<u64>,
    /// Transactions per second (e.g. 1000/s); default back to back.
    #[arg(long, value_name = "N/s")]
    pub rate: Option<String>,
    /// Transactions in flight at once.
    #[arg(long, default_value_t = 1)]
    pub burst: u32,
    /// Test length in seconds (or 250ms, 2m).
    #[arg(short = 't', long = "time", value_parser = seconds, default_value = "10")]
    pub time: f64,
    /// Run exactly this many transactions instead of -t (--cold: rounds;
    /// --sizes: per size).
    #[arg(short = 'n', long = "count", value_parser = count)]
    pub count: Option<u64>,
    /// Seconds between interval reports (0 disables them).
    #[arg(short = 'i', long, value_parser = seconds, default_value = "1")]
    pub interval: f64,
    /// UDP: a transaction unanswered this long is lost (default: adaptive,
    /// 3x the slowest RTT seen, 50 ms to 3 s). TCP: how long a silent server
    /// is waited for (default 10 s).
    #[arg(long, value_parser = seconds)]
    pub timeout: Option<f64>,
    /// Connection set-up: connect + request/response + close per transaction
    /// (TCP_CRR); reports the connect time apart.
    #[arg(long, conflicts_with_all = ["cold", "sizes", "load"])]
    pub connect: bool,
    /// First-packet latency: after each idle gap (--idle) send two probes
    /// back to back and report both RTTs.
    #[arg(long, conflicts_with_all = ["sizes", "load"])]
    pub cold: bool,
    /// Idle gap before each --cold round, in seconds.
    #[arg(long, value_parser = seconds, requires = "cold")]
    pub idle: Option<f64>,
    /// RTT against message size: comma-separated sizes (request and response
    /// both, unless --response is given), with a least-squares line.
    #[arg(long, value_name = "LIST", conflicts_with_all = ["load", "request"])]
    pub sizes: Option<String>,
    /// Latency under load: run `linkperf client HOST ARGS` (e.g. "-P 2 -t 10")
    /// alongside the probes and report RTT idle vs loaded.
    #[arg(long, value_name = "CLIENT ARGS", allow_hyphen_values = true)]
    pub load: Option<String>,
    /// Both clocks are synchronised (PTP/NTP): report one-way delay.
    #[arg(long)]
    pub clock_sync: bool,
    /// Local address to bind.
    #[arg(short = 'B', long)]
    pub bind: Option<IpAddr>,
    /// IPv4 only.
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    pub ipv6: bool,
    /// One JSON document at the end.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// The results archive: a SQLite file or a postgres:// URL (default:
    /// $LINKPERF_DB, else the user's data directory).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not store the result in the archive.
    #[arg(long)]
    pub no_store: bool,
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

impl RrArgs {
    /// Checks everything that can be checked before connecting.
    pub fn plan(&self) -> Result<Plan, String> {
        let protocol = if self.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        if self.connect && self.udp {
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
        let mode = if self.connect {
            Mode::Connect
        } else if self.cold {
            Mode::Cold {
                idle: positive_duration("--idle", self.idle.unwrap_or(DEFAULT_IDLE_S))?,
            }
        } else if let Some(list) = &self.sizes {
            let mut sizes = Vec::new();
            for item in list.split(',') {
                let item = item.trim();
                let v = size(item).map_err(|e| format!("--sizes: {e}"))?;
                sizes.push(check_size("--sizes: a size", v, protocol)?);
            }
            let mut distinct = sizes.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() < 2 {
                return Err("--sizes needs at least two different sizes to fit a line".into());
            }
            Mode::Sizes {
                sizes,
                echo: self.response.is_none(),
            }
        } else if let Some(load) = &self.load {
            Mode::Load(Box::new(self.load_plan(load)?))
        } else {
            Mode::Rr
        };
        if protocol == Protocol::Tcp && self.burst > 1 {
            let largest = match &mode {
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
        }
        let rate = match (&mode, rate) {
            (Mode::Load(_), None) => Some(DEFAULT_LOAD_RATE),
            (_, r) => r,
        };
        Ok(Plan {
            host: self.host.clone(),
            port: self.port,
            family: if self.ipv4 {
                Some(4)
            } else if self.ipv6 {
                Some(6)
            } else {
                None
            },
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
        })
    }

    /// Parses `--load` as the options of `linkperf client HOST`.
    fn load_plan(&self, load: &str) -> Result<LoadPlan, String> {
        let port = self.port.to_string();
        let mut argv = vec!["linkperf", "client", self.host.as_str(), "-p", &port];
        argv.extend(load.split_whitespace());
        let cli = Cli::try_parse_from(&argv)
            .map_err(|e| format!("--load: {}", crate::cli::one_line(&e)))?;
        let Command::Client(args) = cli.command else {
            return Err("--load takes options of `linkperf client`".into());
        };
        let args: ClientArgs = args;
        if args.client.is_some() || args.from.is_some() {
            return Err("--load runs towards the rr server: give no -c or --from in it".into());
        }
        let config = args.config();
        config.validate().map_err(|e| format!("--load: {e}"))?;
        Ok(LoadPlan {
            args: load.to_string(),
            options: crate::client::ClientOptions {
                host: self.host.clone(),
                port: self.port,
                bind: self.bind,
                cport: args.cport,
                family: if self.ipv4 {
                    Some(4)
                } else if self.ipv6 {
                    Some(6)
                } else {
                    None
                },
                config,
                clocks_synchronised: self.clock_sync,
            },
        })
    }
}

/// `linkperf rr`: runs the plan and prints the report.
pub fn main(args: RrArgs) -> ExitCode {
    let plan = match args.plan() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.no_store {
        if let Err(e) = linkperf_store::check_writable(args.db.as_deref()) {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    }
    crate::signals::install();
    let human = !args.json;
    let mut header_printed = false;
    let header = text::header(&plan);
    let mut on_interval = |i: &report::RrInterval| {
        if human {
            if !header_printed {
                header_printed = true;
                say!("{header}");
                say!("{}", text::interval_header(plan.protocol == Protocol::Udp));
            }
            say!("{}", text::interval(i, plan.protocol == Protocol::Udp));
        }
    };
    match client::run(&plan, &mut on_interval, &crate::signals::INTERRUPTED) {
        Ok(report) => {
            // Stored before printing, as the client does.
            let stored = (!args.no_store)
                .then(|| crate::archive::store_rr(&report, args.db.as_deref()))
                .flatten();
            if args.json {
                let printed = crate::archive::WithId::new(&report, &stored);
                say!(
                    "{}",
                    serde_json::to_string_pretty(&printed).expect("report serialises")
                );
            } else {
                if !header_printed {
                    say!("{header}");
                }
                say_raw!("{}", text::summary(&report));
                if let Some((id, place)) = &stored {
                    say!("stored as run {id} in {place}");
                }
            }
            if let Some(first) = report.errors.first() {
                eprintln!("linkperf: {first}");
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            if args.json {
                let doc = serde_json::json!({"schema": crate::report::SCHEMA, "error": e.message});
                say!(
                    "{}",
                    serde_json::to_string_pretty(&doc).expect("error serialises")
                );
            }
            eprintln!("linkperf: {}", e.message);
            ExitCode::from(e.exit_code.clamp(1, 255) as u8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Result<Plan, String> {
        let mut argv = vec!["linkperf", "rr", "127.0.0.1"];
        argv.extend_from_slice(extra);
        let cli = Cli::try_parse_from(&argv).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Rr(a) => a.plan(),
            _ => unreachable!(),
        }
    }

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
    fn plans_check_sizes_modes_and_bursts() {
        let p = args(&[]).unwrap();
        assert_eq!((p.request, p.response, p.burst), (64, 64, 1));
        assert!(matches!(p.mode, Mode::Rr));
        assert!(args(&["-u", "--request", "8"])
            .unwrap_err()
            .contains("16-byte"));
        assert!(args(&["--request", "0"]).unwrap_err().contains("0 bytes"));
        assert!(args(&["-u", "--response", "70000"])
            .unwrap_err()
            .contains("65507"));
        assert!(args(&["--connect", "-u"]).unwrap_err().contains("UDP"));
        assert!(args(&["--sizes", "64"]).unwrap_err().contains("two"));
        assert!(args(&["--sizes", "64,abc"]).unwrap_err().contains("abc"));
        let s = args(&["--sizes", "64, 1K"]).unwrap();
        assert!(matches!(s.mode, Mode::Sizes { ref sizes, echo: true } if sizes == &[64, 1024]));
        assert!(args(&["--burst", "0"]).is_err());
        assert!(
            args(&["--burst", "64", "--request", "4K", "--response", "2K"])
                .unwrap_err()
                .contains("--burst")
        );
        assert!(args(&["--burst", "64", "-u", "--request", "4K"]).is_ok());
        assert!(
            args(&["--burst", "64", "--request", "4K"]).is_ok(),
            "64-byte responses fit"
        );
        assert!(args(&["--cold", "--burst", "2"]).is_err());
        assert!(args(&["-n", "0"]).is_err());
        let c = args(&["--cold", "--idle", "250ms"]).unwrap();
        assert!(matches!(c.mode, Mode::Cold { idle } if idle == Duration::from_millis(250)));
        assert!(args(&["--idle", "1"]).is_err(), "--idle needs --cold");
    }

    #[test]
    fn load_is_parsed_as_client_options() {
        let p = args(&["--load", "-P 2 -t 3"]).unwrap();
        let Mode::Load(l) = &p.mode else {
            panic!("not a load plan")
        };
        assert_eq!(l.options.config.parallel, 2);
        assert_eq!(l.options.config.duration_s, 3.0);
        assert_eq!(p.rate, Some(DEFAULT_LOAD_RATE));
        assert!(args(&["--load", "-P 0"]).unwrap_err().starts_with("--load"));
        assert!(args(&["--load", "--bogus"])
            .unwrap_err()
            .starts_with("--load"));
    }
}
