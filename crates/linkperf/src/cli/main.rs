//! The `linkperf` command: parses the command line (args), dispatches to the
//! library (`linkperf`), and prints. No measuring or analysis lives here.

#[macro_use]
mod say;

mod args;
mod auth_args;
mod campaign;
mod campaign_progress;
mod client;
mod config;
mod defaults;
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
mod server_cmd;
mod server_limits;
mod simulate;
mod sweep;
mod tls_args;
mod traffic;
mod usage;

use args::{Cli, Command};
use clap::{CommandFactory, FromArgMatches};
use linkperf::signals;
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
        .map_err(|e| usage::clap_exit(e, "linkperf"))?;
    let argv = config::with_defaults(argv, &matches).map_err(|e| {
        eprintln!("linkperf: {e}");
        ExitCode::from(2)
    })?;
    let matches = Cli::command()
        .try_get_matches_from(&argv)
        .map_err(|e| usage::clap_exit(e, "linkperf"))?;
    Cli::from_arg_matches(&matches).map_err(|e| usage::clap_exit(e, "linkperf"))
}

fn dispatch(command: Command) -> ExitCode {
    match command {
        Command::Server(args) => server_cmd::run(args),
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
