//! linkperf: one binary for the server, the client and the demo.

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

mod archive;
mod campaign;
mod cli;
mod client;
mod control;
mod data;
mod demo;
mod diagnose;
mod iperf3;
mod report;
mod report_cmd;
mod results;
mod rr;
mod server;
mod signals;
mod sweep;
mod text;

use clap::Parser;
use cli::{Cli, ClientArgs, Command};
use std::process::ExitCode;

pub const SOFTWARE: &str = concat!("linkperf ", env!("CARGO_PKG_VERSION"));

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    return ExitCode::SUCCESS;
                }
                // `linkperf` (or `linkperf results`) alone: the help, on
                // stderr, and the usage error's exit code.
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    return ExitCode::from(2);
                }
                _ => {
                    eprintln!("linkperf: {}", cli::one_line(&e));
                    return ExitCode::from(2);
                }
            }
        }
    };
    let code = dispatch(cli.command);
    // One convention for every command: interrupted means 128 + the signal,
    // after the command has printed (and stored) its partial result.
    signals::exit_code().unwrap_or(code)
}

fn dispatch(command: Command) -> ExitCode {
    match command {
        Command::Server(args) => run_server(args),
        Command::Client(args) => run_client(args),
        Command::Demo => demo::run(),
        Command::Sweep(args) => sweep::run::run(args),
        Command::Results(args) => results::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Campaign(cmd) => campaign::run(cmd),
        Command::Rr(args) => rr::main(args),
        Command::Testbed(cmd) => match linkperf_testbed::run(cmd) {
            Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(e.exit_code().clamp(0, 255) as u8)
            }
        },
    }
}

fn run_server(args: cli::ServerArgs) -> ExitCode {
    let options = server::ServerOptions {
        port: args.port,
        bind: args.bind,
        once: args.once,
        allow_third_party: args.allow_third_party,
        verbose: !args.quiet,
        iperf3_port: args.iperf3_port,
        exclusive: args.exclusive,
        data_ports: args.data_ports.clone(),
    };
    match server::Server::bind(options) {
        Ok(s) => {
            if !args.quiet {
                say!("linkperf server listening on {}", s.local_addr());
            }
            s.run();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("linkperf: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_client(args: ClientArgs) -> ExitCode {
    let host = match args.host() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    let options = client::ClientOptions {
        host,
        port: args.port,
        bind: args.bind,
        cport: args.cport,
        family: if args.ipv4 {
            Some(4)
        } else if args.ipv6 {
            Some(6)
        } else {
            None
        },
        config: args.config(),
        clocks_synchronised: args.clock_sync,
    };
    if let Err(e) = options.config.validate() {
        eprintln!("linkperf: {e}");
        return ExitCode::from(2);
    }
    if !args.no_store && args.from.is_none() {
        // A result that could not be stored where --db says: refused before the test.
        if let Err(e) = linkperf_store::check_writable(args.db.as_deref()) {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    }
    signals::install();
    if let Some(from) = &args.from {
        return third_party(from, &options, &args);
    }
    let iperf3_json = args.format == cli::OutputFormat::Iperf3Json;
    let args = ClientArgs {
        json: args.json || args.format == cli::OutputFormat::Json,
        json_stream: args.json_stream || args.format == cli::OutputFormat::JsonStream,
        ..args
    };
    let human = !args.json && !args.json_stream && !iperf3_json;
    let udp = options.config.protocol == linkperf_proto::Protocol::Udp;
    let header = text::header(&options.config, &options.host, options.port);
    // Printed with the first result, so a failed connection prints only its error.
    let mut header_printed = false;
    let mut print_header = move |with_intervals: bool| {
        if human && !header_printed {
            header_printed = true;
            say!("{header}");
            if with_intervals {
                say!("{}", text::interval_header(udp));
            }
        }
    };
    let json_stream = args.json_stream;
    let mut on_interval = |i: &report::IntervalReport| {
        if human {
            print_header(true);
            say!("{}", text::interval(i, udp));
        } else if json_stream {
            let line =
                serde_json::json!({"schema": report::SCHEMA, "event": "interval", "data": i});
            say!("{line}");
        }
    };
    let outcome = if args.iperf3_mode() {
        iperf3::client::run(&options, &mut on_interval, Some(&signals::INTERRUPTED))
    } else {
        client::run(&options, &mut on_interval, Some(&signals::INTERRUPTED))
    };
    match outcome {
        Ok(report) => {
            // Stored before printing, so a slow archive cannot cut the output
            // short on Ctrl-C; a failure to store is only a warning.
            let stored = (!args.no_store)
                .then(|| archive::store_test(&report, args.db.as_deref()))
                .flatten();
            let printed = archive::WithId::new(&report, &stored);
            if iperf3_json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&iperf3::json::to_iperf3_json(&report))
                        .expect("report serialises")
                );
            } else if args.json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&printed).expect("report serialises")
                );
            } else if json_stream {
                let line = serde_json::json!({"schema": report::SCHEMA, "event": "summary", "data": &printed});
                say!("{line}");
            } else {
                if report.intervals.is_empty() {
                    say!(
                        "{}",
                        text::header(&options.config, &options.host, options.port)
                    );
                }
                say_raw!("{}", text::summary(&report));
                if let Some((id, place)) = &stored {
                    say!("stored as run {id} in {place}");
                }
            }
            if report.errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            if iperf3_json {
                // iperf3 -J writes the error into its document too.
                let doc = serde_json::json!({"start": {}, "intervals": [], "end": {}, "error": e.message});
                say!(
                    "{}",
                    serde_json::to_string_pretty(&doc).expect("error serialises")
                );
            }
            if args.json {
                let doc = serde_json::json!({"schema": report::SCHEMA, "error": e.message});
                say!(
                    "{}",
                    serde_json::to_string_pretty(&doc).expect("error serialises")
                );
            }
            eprintln!("linkperf: {}", e.message);
            ExitCode::from(e.exit_code as u8)
        }
    }
}

/// `--from A HOST`: agent A runs the test towards HOST and relays it here.
fn third_party(from: &str, options: &client::ClientOptions, args: &ClientArgs) -> ExitCode {
    let (from_host, from_port) = match from.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => match p.parse::<u16>() {
            Ok(port) => (h.to_string(), port),
            Err(_) => {
                eprintln!("linkperf: --from {from}: '{p}' is not a port");
                return ExitCode::from(2);
            }
        },
        _ => (from.to_string(), options.port),
    };
    let mut on_interval = |interval: &serde_json::Value| {
        if !args.json {
            let bps = interval["sum"]["bits_per_second"].as_f64().unwrap_or(0.0);
            say!(
                "{:.2}-{:.2} s  {} received",
                interval["start"].as_f64().unwrap_or(0.0),
                interval["end"].as_f64().unwrap_or(0.0),
                linkperf_units::format_rate(bps)
            );
        }
    };
    let outcome = client::run_third_party(
        (&from_host, from_port),
        (&options.host, options.port),
        &options.config,
        options.family,
        &mut on_interval,
        Some(&signals::INTERRUPTED),
    );
    match outcome {
        Ok(report) => {
            if args.json {
                say!(
                    "{}",
                    serde_json::to_string_pretty(&report).expect("report serialises")
                );
            } else {
                let s = &report["summary"];
                say!(
                    "{from} -> {}: sent {}, received {}",
                    options.host,
                    linkperf_units::format_rate(
                        s["sent"]["bits_per_second"].as_f64().unwrap_or(0.0)
                    ),
                    linkperf_units::format_rate(
                        s["received"]["bits_per_second"].as_f64().unwrap_or(0.0)
                    )
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            if args.json {
                let doc = serde_json::json!({"schema": report::SCHEMA, "error": e.message});
                say!(
                    "{}",
                    serde_json::to_string_pretty(&doc).expect("error serialises")
                );
            }
            eprintln!("linkperf: {}", e.message);
            ExitCode::from(e.exit_code as u8)
        }
    }
}
