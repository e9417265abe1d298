//! The `linkperf` command: parses the command line (args), dispatches to the
//! library (`linkperf`), and prints. No measuring or analysis lives here.

/// `println!` that ends the process quietly when stdout is gone (`| head`),
/// instead of panicking on a broken pipe.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(141);
        }
    }};
}
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if write!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(141);
        }
    }};
}

mod args;
mod auth_args;
mod campaign;
mod campaign_progress;
mod client;
mod config;
mod demo;
mod doctor;
mod iperf3_auth_args;
mod manual;
mod model;
mod monitor;
mod process_opts;
mod progress;
mod report_cmd;
mod reproduce;
mod results;
mod rr;
mod server_limits;
mod simulate;
mod sweep;
mod tls_args;
mod traffic;

use args::{Cli, Command};
use clap::{CommandFactory, FromArgMatches};
use linkperf::{server, signals};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let code = dispatch(cli.command);
    // One convention for every command: interrupted means 128 + the signal,
    // after the command has printed (and stored) its partial result.
    signals::exit_code().unwrap_or(code)
}

/// The command line over the configuration files' defaults: parsed once to
/// see which options it gives, then again with the files' values for the rest.
fn parse() -> Result<Cli, ExitCode> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = Cli::command()
        .try_get_matches_from(&argv)
        .map_err(clap_exit)?;
    let argv = config::with_defaults(argv, &matches).map_err(|e| {
        eprintln!("linkperf: {e}");
        ExitCode::from(2)
    })?;
    let matches = Cli::command()
        .try_get_matches_from(&argv)
        .map_err(clap_exit)?;
    Cli::from_arg_matches(&matches).map_err(clap_exit)
}

fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        // `linkperf` (or `linkperf results`) alone: the help, on stderr, and
        // the usage error's exit code.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            eprintln!("linkperf: {}", args::one_line(&e));
            ExitCode::from(2)
        }
    }
}

fn dispatch(command: Command) -> ExitCode {
    match command {
        Command::Server(args) => run_server(args),
        Command::Client(args) => client::run(args),
        Command::Demo => demo::run(),
        Command::Sweep(args) => sweep::run(args),
        Command::Results(args) => results::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Model(args) => model::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Campaign(cmd) => campaign::run(cmd),
        Command::Monitor(cmd) => monitor::run(cmd),
        Command::Rr(args) => rr::main(args),
        Command::Traffic(cmd) => traffic::run(cmd),
        Command::Man(args) => manual::man(args),
        Command::Completions(args) => manual::completions(args),
        Command::Config(cmd) => config::run(cmd),
        Command::Testbed(cmd) => match linkperf_testbed::run(cmd) {
            Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(e.exit_code().clamp(0, 255) as u8)
            }
        },
    }
}

/// The server's options from its flags (users, TLS, iperf3's RSA keys
/// read and checked); `Err` is a usage error.
fn server_options(args: &args::ServerArgs) -> Result<server::ServerOptions, String> {
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

fn run_server(args: args::ServerArgs) -> ExitCode {
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
        if let Err(e) = process_opts::daemonize(args.pidfile.as_deref()) {
            eprintln!("linkperf: {e}");
            return ExitCode::from(1);
        }
    }
    let output = match process_opts::start(&args.output, None, None) {
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
