//! The command line: every subcommand's flags (iperf3's spelling where
//! iperf3 has one), clap errors cut to one whole line, and flags turned into
//! the library's [`TestSpec`].

use clap::{Args, Parser, Subcommand};
use linkperf::spec::{Peer, TestSpec};
use linkperf_proto::{Direction, Protocol};
use std::net::IpAddr;

/// Shown under the command list of `linkperf --help`.
const AFTER_HELP: &str = "\
Units: rates are bits/s, k M G T = x1000 in any case (100M = 100Mbit = 100mbit/s = 100Mbps);
sizes are bytes, K M G T = x1024 in any case (64K = 64k = 64KB = 64KiB = 65536).
Bytes per second (100MB/s) are refused for rates: write 800M. Table: README.md, Units.

Ctrl-C ends client, rr, sweep, campaign run and demo early: the partial result is
printed, then linkperf exits 130; a second Ctrl-C exits at once.
Exit codes: 0 done, 1 the test failed, 2 usage error, 130 interrupted (143 on SIGTERM).";

#[derive(Parser, Debug)]
#[command(
    name = "linkperf",
    version,
    about = "Network performance test bench: throughput, loss, jitter, latency and why",
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve tests (many clients at once).
    Server(crate::server_cmd::ServerArgs),
    /// Run a test against a server.
    Client(ClientArgs),
    /// Run a short TCP and UDP test against a server started inside this process
    /// (and, as root, a window-limited vs tuned TCP run over an emulated WAN link).
    Demo,
    /// Request/response latency, connection set-up, first packet after an
    /// idle gap, RTT against size, latency under load.
    Rr(crate::rr::RrArgs),
    /// Campaigns: many hosts, many flows, one synchronised experiment.
    #[command(subcommand)]
    Campaign(crate::campaign::CampaignCommand),
    /// Monitoring: scheduled tests across a mesh, archive, metrics, dashboard.
    #[command(subcommand)]
    Monitor(crate::monitor::MonitorCommand),
    /// Emulated testbeds: hosts in namespaces joined by emulated WAN links.
    #[command(subcommand)]
    Testbed(linkperf_testbed::TestbedCommand),
    /// Run a parameter study: every combination of --vary values, repeated, stored.
    Sweep(crate::sweep::SweepArgs),
    /// Browse the results archive: list, show, compare, export.
    Results(crate::results::ResultsArgs),
    /// Write one self-contained HTML report (plots and tables) of a run or sweep.
    Report(crate::report_cmd::ReportArgs),
    /// Traffic models and application profiles: list them, show one.
    #[command(subcommand)]
    Traffic(crate::traffic::TrafficCommand),

    // Installing and configuring linkperf (issue 21).
    /// Print the manual page of linkperf or of one subcommand (roff; `man -l -` reads it).
    Man(crate::manual::ManArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(crate::manual::CompletionsArgs),
    /// Defaults from ~/.config/linkperf/config.toml (or $XDG_CONFIG_HOME/linkperf)
    /// over /etc/linkperf/config.toml; flags override them.
    #[command(subcommand)]
    Config(crate::config::ConfigCommand),
    /// Run a seed experiment of examples/seeds through its testbed and print
    /// the seed's numbers beside linkperf's.
    Reproduce(crate::reproduce::ReproduceArgs),
    /// Compare this host's buffers, queues, offloads and CPU settings with what a
    /// target path needs (rate x loaded RTT) and print the commands that fix them.
    Doctor(crate::doctor::DoctorArgs),
    /// Predict the throughput a path should give (rate, RTT, framing, loss,
    /// buffers, congestion control) and say which bound binds (docs/model.md).
    Model(crate::model::ModelArgs),
    /// Run the same test in ns-3 through a testbed topology's path
    /// (docs/simulate.md); the result is marked "source": "ns-3 <version>".
    Simulate(crate::simulate::SimulateArgs),
}

fn size(s: &str) -> Result<u64, String> {
    linkperf_units::parse_size(s).map_err(|e| e.to_string())
}
fn size32(s: &str) -> Result<u32, String> {
    let v = size(s)?;
    u32::try_from(v).map_err(|_| format!("'{s}' is too large"))
}
/// A `--path` description whose keys and values parse (docs/model.md).
fn path_text(s: &str) -> Result<String, String> {
    let mut path = linkperf::model::Path::default();
    linkperf::model::describe::apply_path_text(&mut path, s).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

fn rate(s: &str) -> Result<u64, String> {
    linkperf_units::parse_rate(s).map_err(|e| e.to_string())
}
fn seconds(s: &str) -> Result<f64, String> {
    linkperf_units::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| e.to_string())
}

#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Server to test against.
    pub host: Option<String>,
    /// Server to test against (iperf3 spelling).
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    pub client: Option<String>,
    #[command(flatten)]
    pub auth: crate::auth_args::ClientAuthArgs,
    #[command(flatten)]
    pub tls: crate::tls_args::ClientTlsArgs,
    #[command(flatten)]
    pub iperf3_auth: crate::iperf3_auth_args::ClientIperf3AuthArgs,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = linkperf_proto::DEFAULT_PORT)]
    pub port: u16,
    /// UDP instead of TCP.
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// Test length in seconds (or 250ms, 2m).
    #[arg(short = 't', long = "time", value_parser = seconds, default_value = "10")]
    pub time: f64,
    /// Send exactly this many bytes instead of running for -t.
    #[arg(short = 'n', long = "bytes", value_parser = size)]
    pub bytes: Option<u64>,
    /// Seconds between interval reports (0 disables them).
    #[arg(short = 'i', long, value_parser = seconds, default_value = "1")]
    pub interval: f64,
    /// Omit the first seconds (warm-up) from the summary.
    #[arg(short = 'O', long, value_parser = seconds, default_value = "0")]
    pub omit: f64,
    /// Local address to bind.
    #[arg(short = 'B', long)]
    pub bind: Option<IpAddr>,
    /// Local port of the data connections (stream i uses PORT + i).
    #[arg(long)]
    pub cport: Option<u16>,
    /// IPv4 only.
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    pub ipv6: bool,
    /// Parallel streams.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub parallel: u32,
    /// Reverse: the server sends.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Full duplex: both ends send at once, reported separately.
    #[arg(long)]
    pub bidir: bool,
    /// Write size (TCP; default 1M, 128K when paced, with -w/--sndbuf or more streams than CPUs) or datagram payload (UDP; default 1460).
    #[arg(short = 'l', long, value_parser = size32)]
    pub length: Option<u32>,
    /// Socket buffer, send and receive, on both ends.
    #[arg(short = 'w', long, value_parser = size32)]
    pub window: Option<u32>,
    /// Send buffer (SO_SNDBUF) only.
    #[arg(long, value_parser = size32)]
    pub sndbuf: Option<u32>,
    /// Receive buffer (SO_RCVBUF) only.
    #[arg(long, value_parser = size32)]
    pub rcvbuf: Option<u32>,
    /// TCP_NODELAY (TCP only).
    #[arg(short = 'N', long = "no-delay")]
    pub nodelay: bool,
    /// TCP maximum segment size (TCP only).
    #[arg(short = 'M', long = "set-mss", value_parser = size32)]
    pub mss: Option<u32>,
    /// TCP congestion control (reno, cubic, bbr, ...; TCP only).
    #[arg(short = 'C', long = "congestion")]
    pub congestion: Option<String>,
    /// Kernel pacing (SO_MAX_PACING_RATE), bits/s; UDP is paced by it only
    /// through an fq qdisc.
    #[arg(long, value_parser = rate)]
    pub pacing_rate: Option<u64>,
    /// Target rate per stream in bits/s (UDP default 1M; 0 = unlimited).
    #[arg(short = 'b', long = "bitrate", value_parser = rate)]
    pub bitrate: Option<u64>,
    /// How far ahead of its time a paced datagram may leave, to go in one
    /// wake-up's train with the one due: microseconds (iperf3's unit) or with
    /// a unit (250us, 1ms); 0 wakes for each datagram where the timer allows.
    /// Default: 4 datagrams a train, none over 500 us early (UDP only).
    #[arg(long, value_name = "USECS", value_parser = linkperf::spec::parse_pacing_timer)]
    pub pacing_timer: Option<u32>,
    /// Set the don't-fragment bit on UDP datagrams (UDP only).
    #[arg(long)]
    pub dont_fragment: bool,
    /// Send from a memfd with sendfile (TCP only).
    #[arg(short = 'Z', long)]
    pub zerocopy: bool,
    /// MPTCP data connections (IPPROTO_MPTCP), their subflows reported
    /// (TCP only; docs/testbed.md "MPTCP").
    #[arg(short = 'm', long)]
    pub mptcp: bool,
    /// Receivers discard the payload in the kernel (MSG_TRUNC) instead of
    /// copying it; -R applies it to this end (TCP only).
    #[arg(long)]
    pub skip_rx_copy: bool,
    /// Largest TCP window either end advertises (TCP_WINDOW_CLAMP), bytes;
    /// -w sets socket buffers, not the window (docs/model.md).
    #[arg(long, value_parser = size32, value_name = "BYTES")]
    pub window_clamp: Option<u32>,
    /// The path, for a prediction beside the result (docs/model.md):
    /// rate=, rtt=, mtu=, framing=, loss=, ber=, cpu=; inside a testbed these
    /// override the testbed's links.
    #[arg(long, value_parser = path_text, value_name = "KEY=VALUE,...")]
    pub path: Option<String>,
    /// Before the test, examine this host against the test's path (--path or
    /// the testbed's; the rate from -b when the path has none) with `linkperf
    /// doctor`'s rules: printed before the results, `doctor` in the JSON.
    /// The server examines its own host the same way (docs/doctor.md).
    #[arg(long)]
    pub doctor: bool,
    /// Sample every stream at this period (at least 1ms): a TCP sender's
    /// tcp_info, a receiver's bytes, as `samples` in the JSON (docs/dynamics.md).
    #[arg(long, value_parser = seconds, value_name = "PERIOD")]
    pub sample: Option<f64>,
    /// One JSON document at the end.
    #[arg(short = 'J', long, conflicts_with = "json_stream")]
    pub json: bool,
    /// One JSON object per interval, then the summary.
    #[arg(long)]
    pub json_stream: bool,
    /// Third-party test: ask server FROM to run the test towards HOST.
    #[arg(long, value_name = "FROM")]
    pub from: Option<String>,
    /// Both clocks are synchronised (PTP/NTP): report one-way delay.
    #[arg(long)]
    pub clock_sync: bool,
    /// Start at this wall-clock time (ms since the Unix epoch), for synchronised runs.
    #[arg(long, hide = true)]
    pub start_at: Option<u64>,
    /// The server is a stock iperf3 server (implied by -p 5201 unless --no-iperf3).
    #[arg(long, conflicts_with = "no_iperf3")]
    pub iperf3: bool,
    /// Speak linkperf's protocol even on port 5201.
    #[arg(long)]
    pub no_iperf3: bool,
    /// Output: text, json (= -J), json-stream, or iperf3-json (iperf3's -J layout).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Results archive: a SQLite file or a postgres:// URL (default: the user's data directory).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not store the result in the archive.
    #[arg(long, conflicts_with = "db")]
    pub no_store: bool,
    // Traffic models and marking (docs/traffic.md).
    /// How to send: full, cbr, burst:BYTES:PERIOD, burstq:BYTES:PERIOD,
    /// 'idt=DIST;size=DIST[;on=DIST;off=DIST]', trace:FILE, or a profile
    /// (linkperf traffic list).
    #[arg(long, value_name = "MODEL")]
    pub traffic: Option<String>,
    /// Seed of the model's random draws (default: a fresh one, kept in the result).
    #[arg(long, value_name = "N")]
    pub traffic_seed: Option<u64>,
    /// DSCP of the data packets: EF, AF11-AF43, CS0-CS7, VA, LE or 0-63.
    #[arg(long, value_name = "DSCP", conflicts_with = "tos")]
    pub dscp: Option<String>,
    /// TOS byte of the data packets, as iperf3's -S: 0-255, e.g. 0xb8 (= --dscp EF).
    #[arg(short = 'S', long = "tos", value_name = "TOS")]
    pub tos: Option<String>,

    // iperf3's everyday flags (issue 21).
    /// Send exactly N blocks of -l bytes each instead of running for -t.
    #[arg(
        short = 'k',
        long = "blocks",
        value_name = "N",
        conflicts_with = "bytes"
    )]
    pub blocks: Option<u64>,
    /// Prefix every output line with TITLE.
    #[arg(short = 'T', long = "title")]
    pub title: Option<String>,
    /// Append the output to FILE instead of printing it (errors stay on stderr).
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<std::path::PathBuf>,
    /// Unit of rates and transferred bytes in the text output (iperf3's -f;
    /// --format is the output format here): k m g t = kbit/s..Tbit/s,
    /// K M G T = KiB/s..TiB/s, a = adaptive bits/s (default), A = adaptive bytes/s.
    /// JSON keeps raw numbers.
    #[arg(short = 'f', long = "units", value_name = "UNIT",
          value_parser = linkperf_units::ReportUnit::parse, default_value = "a")]
    pub units: linkperf_units::ReportUnit,
    /// Give up a connect (control and data connections) after this long:
    /// milliseconds as iperf3 takes them (3000), or with a unit (500ms, 3s).
    /// Default 5 s.
    #[arg(long, value_name = "MS", value_parser = connect_timeout)]
    pub connect_timeout: Option<std::time::Duration>,
    /// Print the server's side of the test after the client's ("Server
    /// output:"); in JSON as `server_output`.
    #[arg(long)]
    pub get_server_output: bool,
    /// A note kept with the result: JSON `extra_data` and the archive.
    #[arg(long, value_name = "STR", value_parser = extra_data)]
    pub extra_data: Option<String>,
    #[command(flatten)]
    pub output: crate::process_opts::OutputArgs,
}

/// `--connect-timeout`: a bare number is milliseconds (iperf3's unit).
fn connect_timeout(s: &str) -> Result<std::time::Duration, String> {
    let bad = || {
        format!("'{s}' is not a connect timeout; accepted: milliseconds above 0 (e.g. 3000), or a duration with a unit (500ms, 3s)")
    };
    let duration = linkperf_units::parse_duration_bare_in(s, std::time::Duration::from_millis(1))
        .map_err(|_| bad())?;
    if duration.is_zero() || duration > std::time::Duration::from_secs(86_400) {
        return Err(bad());
    }
    Ok(duration)
}

/// Longest `--extra-data`: a note, not a payload.
const EXTRA_DATA_MAX: usize = 4096;

fn extra_data(s: &str) -> Result<String, String> {
    if s.len() > EXTRA_DATA_MAX {
        return Err(format!(
            "--extra-data is {} bytes long; accepted: up to {EXTRA_DATA_MAX} bytes of text",
            s.len()
        ));
    }
    Ok(s.to_string())
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
    JsonStream,
    Iperf3Json,
}

impl ClientArgs {
    /// Whether to speak iperf3's protocol: --iperf3, or iperf3's port 5201.
    pub fn iperf3_mode(&self) -> bool {
        self.iperf3 || (self.port == linkperf_proto::iperf3::DEFAULT_PORT && !self.no_iperf3)
    }

    pub fn host(&self) -> Result<String, String> {
        match (&self.host, &self.client) {
            (Some(_), Some(_)) => Err("give the server once: either HOST or -c HOST".into()),
            (Some(h), None) | (None, Some(h)) => Ok(h.clone()),
            (None, None) => Err("which server? usage: linkperf client HOST [options]".into()),
        }
    }

    /// The test these flags ask for: the one place flags become a [`TestSpec`].
    pub fn spec(&self) -> Result<TestSpec, String> {
        let mut spec = TestSpec::new(self.host()?);
        spec.port = self.port;
        spec.bind = self.bind;
        spec.cport = self.cport;
        spec.family = if self.ipv4 {
            Some(4)
        } else if self.ipv6 {
            Some(6)
        } else {
            None
        };
        spec.peer = if self.iperf3_mode() {
            Peer::Iperf3
        } else {
            Peer::Linkperf
        };
        spec.protocol = if self.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        spec.direction = if self.bidir {
            Direction::Bidir
        } else if self.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        spec.time = self.time;
        spec.bytes = self.bytes;
        spec.interval = self.interval;
        spec.omit = self.omit;
        spec.parallel = self.parallel;
        spec.length = self.length;
        spec.window = self.window;
        spec.sndbuf = self.sndbuf;
        spec.rcvbuf = self.rcvbuf;
        spec.nodelay = self.nodelay;
        spec.mss = self.mss;
        spec.congestion = self.congestion.clone();
        spec.pacing_rate = self.pacing_rate;
        spec.pacing_timer_us = self.pacing_timer;
        spec.bitrate = self.bitrate;
        spec.dont_fragment = self.dont_fragment;
        spec.zerocopy = self.zerocopy;
        spec.mptcp = self.mptcp;
        spec.skip_rx_copy = self.skip_rx_copy;
        spec.clock_sync = self.clock_sync;
        spec.start_at = self.start_at;
        // Set by `linkperf testbed exec` for what it runs inside a testbed host.
        spec.testbed = std::env::var("LINKPERF_TESTBED")
            .ok()
            .filter(|name| !name.is_empty());
        if let Some(seed) = self.traffic_seed {
            spec.set("traffic-seed", &seed.to_string())?;
        }
        if let Some(model) = &self.traffic {
            spec.set("traffic", model)?;
        }
        if let Some(d) = &self.dscp {
            spec.set("dscp", d)?;
        }
        if let Some(t) = &self.tos {
            spec.set("tos", t)?;
        }
        spec.window_clamp = self.window_clamp;
        spec.path.clone_from(&self.path);
        if let (Some(text), None) = (&self.path, &spec.testbed) {
            // Outside a testbed the description is all there is: it must be whole.
            let mut path = linkperf::model::Path::default();
            linkperf::model::describe::apply_path_text(&mut path, text)
                .and_then(|()| linkperf::model::validate(&path, &Default::default()))
                .map_err(|e| format!("--path: {e}"))?;
        }
        spec.connect_timeout = self.connect_timeout;
        spec.server_output = self.get_server_output;
        spec.extra_data.clone_from(&self.extra_data);
        spec.sample = self.sample;
        if let Some(blocks) = self.blocks {
            let length = u64::from(spec.config().length);
            spec.bytes = Some(
                blocks
                    .checked_mul(length)
                    .ok_or("-k N x -l: too many bytes")?,
            );
        }
        Ok(spec)
    }
}
