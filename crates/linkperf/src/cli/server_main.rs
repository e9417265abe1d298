//! `linkperf-server`: `linkperf server` as a binary of its own, holding only
//! the server's code. Its flags and its `[server]` configuration defaults are
//! `linkperf server`'s (the same modules are compiled into both binaries);
//! what it leaves out is the rest of the program, whose code pages a
//! `linkperf server` process keeps resident (bench/RESULTS.md, server memory).

#[macro_use]
mod say;

// Shared with `linkperf`: the client's halves of these modules go unused here.
#[allow(dead_code)]
mod auth_args;
mod defaults;
#[allow(dead_code)]
mod iperf3_auth_args;
mod process_opts;
mod server_cmd;
mod server_limits;
#[allow(dead_code)]
mod tls_args;
mod usage;

use clap::{CommandFactory, FromArgMatches, Parser};
use linkperf_config::{Config, Files};
use std::ffi::OsString;
use std::process::ExitCode;

const PROGRAM: &str = "linkperf-server";

#[derive(Parser, Debug)]
#[command(
    name = "linkperf-server",
    version,
    about = "The linkperf server alone (`linkperf server`, in a smaller process)"
)]
struct ServerCli {
    #[command(flatten)]
    args: server_cmd::ServerArgs,
}

fn main() -> ExitCode {
    match parse() {
        Ok(cli) => server_cmd::run(cli.args),
        Err(code) => code,
    }
}

/// The command line over the `[server]` defaults of the configuration files.
fn parse() -> Result<ServerCli, ExitCode> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let usage_error = |e| usage::clap_exit(e, PROGRAM);
    let matches = ServerCli::command()
        .try_get_matches_from(&argv)
        .map_err(usage_error)?;
    let argv = with_defaults(argv, &matches).map_err(|e| {
        eprintln!("{PROGRAM}: {e}");
        ExitCode::from(2)
    })?;
    let matches = ServerCli::command()
        .try_get_matches_from(&argv)
        .map_err(usage_error)?;
    ServerCli::from_arg_matches(&matches).map_err(usage_error)
}

fn with_defaults(argv: Vec<OsString>, matches: &clap::ArgMatches) -> Result<Vec<OsString>, String> {
    let config = Config::load(&Files::from_env()).map_err(|e| e.to_string())?;
    let mut cmd = ServerCli::command();
    cmd.build();
    defaults::check_for(&config, "server", &cmd)?;
    Ok(defaults::merge(argv, &config, "server", &cmd, matches))
}
