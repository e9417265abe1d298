//! `linkperf rr`: the flags of a latency test, its interval lines and the
//! printed and stored report; the measuring is the library's `rr` module.

use crate::args::{Cli, ClientArgs, Command};
use clap::Args;
use linkperf::rr::{client, report, text, RrSpec};
use linkperf::{archive, signals};
use linkperf_proto::Protocol;
use std::net::IpAddr;
use std::process::ExitCode;

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

#[derive(Args, Debug)]
pub struct RrArgs {
    /// Server to test against (a `linkperf server`).
    pub host: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = linkperf_proto::DEFAULT_PORT)]
    pub port: u16,
    #[command(flatten)]
    pub auth: crate::auth_args::ClientAuthArgs,
    #[command(flatten)]
    pub tls: crate::tls_args::ClientTlsArgs,
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

impl RrArgs {
    /// The test these flags ask for (`--load` parsed as client options).
    pub fn spec(&self) -> Result<RrSpec, String> {
        let load = match &self.load {
            Some(text) => Some((text.clone(), self.load_spec(text)?)),
            None => None,
        };
        Ok(RrSpec {
            host: self.host.clone(),
            port: self.port,
            protocol: if self.udp {
                Protocol::Udp
            } else {
                Protocol::Tcp
            },
            request: self.request,
            response: self.response,
            rate: self.rate.clone(),
            burst: self.burst,
            time: self.time,
            count: self.count,
            interval: self.interval,
            timeout: self.timeout,
            connect: self.connect,
            cold: self.cold,
            idle: self.idle,
            sizes: self.sizes.clone(),
            load,
            clock_sync: self.clock_sync,
            bind: self.bind,
            family: if self.ipv4 {
                Some(4)
            } else if self.ipv6 {
                Some(6)
            } else {
                None
            },
        })
    }

    /// Parses `--load` as the options of `linkperf client HOST`.
    fn load_spec(&self, load: &str) -> Result<linkperf::TestSpec, String> {
        let port = self.port.to_string();
        let mut argv = vec!["linkperf", "client", self.host.as_str(), "-p", &port];
        argv.extend(load.split_whitespace());
        let cli = <Cli as clap::Parser>::try_parse_from(&argv)
            .map_err(|e| format!("--load: {}", crate::usage::one_line(&e)))?;
        let Command::Client(args) = cli.command else {
            return Err("--load takes options of `linkperf client`".into());
        };
        let args: ClientArgs = args;
        if args.client.is_some() || args.from.is_some() {
            return Err("--load runs towards the rr server: give no -c or --from in it".into());
        }
        args.spec().map_err(|e| format!("--load: {e}"))
    }
}

/// `linkperf rr`: runs the plan and prints the report.
pub fn main(args: RrArgs) -> ExitCode {
    if let Err(e) = args.auth.install().and_then(|()| args.tls.install()) {
        eprintln!("linkperf: {e}");
        return ExitCode::from(2);
    }
    let plan = match args.spec().and_then(|s| s.plan()) {
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
    signals::install();
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
    match client::run(&plan, &mut on_interval, &signals::INTERRUPTED) {
        Ok(report) => {
            // Stored before printing, as the client does.
            let stored = (!args.no_store)
                .then(|| archive::store_rr(&report, args.db.as_deref()))
                .flatten();
            if args.json {
                let printed = archive::WithId::new(&report, &stored);
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
                let doc =
                    serde_json::json!({"schema": linkperf::report::SCHEMA, "error": e.message});
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
    use crate::args::{Cli, Command};
    use clap::Parser;
    use linkperf::rr::{Mode, Plan, DEFAULT_LOAD_RATE};
    use std::time::Duration;

    fn args(extra: &[&str]) -> Result<Plan, String> {
        let mut argv = vec!["linkperf", "rr", "127.0.0.1"];
        argv.extend_from_slice(extra);
        let cli = Cli::try_parse_from(&argv).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Rr(a) => a.spec()?.plan(),
            _ => unreachable!(),
        }
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
