//! `linkperf server` and the `linkperf-server` binary: the server's flags
//! and running it (users, TLS and iperf3 keys read and checked, bound, then
//! detached with `-D`). Both binaries compile this one module, so their
//! flags are the same.

use clap::Args;
use linkperf::server;
use std::net::IpAddr;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Port to listen on.
    #[arg(short = 'p', long, default_value_t = linkperf_proto::DEFAULT_PORT)]
    pub port: u16,
    /// Local address to bind (default: all, IPv4 and IPv6).
    #[arg(short = 'B', long)]
    pub bind: Option<IpAddr>,
    /// Serve one test, then exit.
    #[arg(short = '1', long)]
    pub once: bool,
    /// Run tests towards other servers when a controller asks (campaigns, --from).
    #[arg(long)]
    pub allow_third_party: bool,
    /// Do not print a line per test.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Also serve iperf3 clients on this port (e.g. 5201); they are recognised on -p too.
    #[arg(long, value_name = "PORT")]
    pub iperf3_port: Option<u16>,
    /// Serve iperf3 clients one at a time; a second one is told the server is busy.
    #[arg(long)]
    pub exclusive: bool,
    /// Ports (LOW-HIGH) for the data listeners of tests that set socket buffers
    /// or the MSS (default: any free port); open them in a firewall.
    #[arg(long, value_name = "LOW-HIGH", value_parser = port_range)]
    pub data_ports: Option<std::ops::RangeInclusive<u16>>,
    /// Listen with an MPTCP socket (it accepts TCP too); a client's -m
    /// gets MPTCP data connections either way.
    #[arg(short = 'm', long)]
    pub mptcp: bool,
    #[command(flatten)]
    pub limits: crate::server_limits::ServerLimitArgs,
    #[command(flatten)]
    pub auth: crate::auth_args::ServerAuthArgs,
    #[command(flatten)]
    pub tls: crate::tls_args::ServerTlsArgs,
    #[command(flatten)]
    pub iperf3_auth: crate::iperf3_auth_args::ServerIperf3AuthArgs,

    // iperf3's everyday flags (issue 21).
    /// Run as a daemon: detach once listening (errors before that are printed).
    #[arg(short = 'D', long)]
    pub daemon: bool,
    /// With -D: write the daemon's process id to FILE.
    #[arg(short = 'I', long, value_name = "FILE", requires = "daemon")]
    pub pidfile: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub output: crate::process_opts::OutputArgs,
}

fn port_range(s: &str) -> Result<std::ops::RangeInclusive<u16>, String> {
    let bad = || format!("'{s}' is not a port range; expected LOW-HIGH, e.g. 5212-5251");
    let (lo, hi) = s.split_once('-').ok_or_else(bad)?;
    let (lo, hi): (u16, u16) = (
        lo.trim().parse().map_err(|_| bad())?,
        hi.trim().parse().map_err(|_| bad())?,
    );
    if lo == 0 || lo > hi {
        return Err(bad());
    }
    Ok(lo..=hi)
}

/// The server's options from its flags (users, TLS, iperf3's RSA keys
/// read and checked); `Err` is a usage error.
fn server_options(args: &ServerArgs) -> Result<server::ServerOptions, String> {
    let (users, auth_required, third_party) = args.auth.resolve()?;
    Ok(server::ServerOptions {
        port: args.port,
        bind: args.bind,
        once: args.once,
        allow_third_party: args.allow_third_party,
        verbose: !args.quiet,
        iperf3_port: args.iperf3_port,
        exclusive: args.exclusive,
        data_ports: args.data_ports.clone(),
        limits: args.limits.limits(),
        log_format: args.limits.log_format(),
        logfile: args.limits.logfile.clone(),
        users,
        auth_required,
        third_party,
        mptcp: args.mptcp,
        tls: args.tls.resolve()?,
        target_credentials: args.auth.target_credentials()?,
        target_tls: args.tls.target_tls()?,
        iperf3_rsa: args.iperf3_auth.resolve()?,
    })
}

pub fn run(args: ServerArgs) -> ExitCode {
    if let Some(name) = &args.auth.gen_key {
        return match linkperf::guard::auth::generate_user_line(name) {
            Ok(line) => {
                say!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(2)
            }
        };
    }
    if let Some(dir) = &args.tls.tls_gen_cert {
        return match linkperf::tls::generate_self_signed(dir, &args.tls.tls_name) {
            Ok(pin) => {
                say!(
                    "wrote {} and {}; certificate SHA-256 pin (for --tls-pin): {pin}",
                    dir.join("cert.pem").display(),
                    dir.join("key.pem").display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(2)
            }
        };
    }
    let options = match server_options(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    let pin = options.tls.as_ref().map(|t| t.pin.clone());
    let s = match server::Server::bind(options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(1);
        }
    };
    // Detached only once bound, so a taken port is still reported here.
    if args.daemon {
        if let Err(e) = crate::process_opts::daemonize(args.pidfile.as_deref()) {
            eprintln!("linkperf: {e}");
            return ExitCode::from(1);
        }
    }
    let output = match crate::process_opts::start(&args.output, None, None) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.quiet {
        say!("linkperf server listening on {}", s.local_addr());
        if let Some(pin) = pin {
            say!("TLS on control connections; certificate SHA-256 pin: {pin}");
        }
    }
    s.run();
    output.finish();
    ExitCode::SUCCESS
}
