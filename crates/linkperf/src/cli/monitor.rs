//! `linkperf monitor run|check SCHEDULE.toml`: the flags, the JSON-lines
//! log on stdout and the exit codes; the controller, metrics and dashboard
//! live in the library's `monitor` module.

use clap::{Args, Subcommand};
use linkperf::monitor::{controller, http, metrics::Live, schedule};
use linkperf::signals;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

#[derive(Subcommand, Debug)]
pub enum MonitorCommand {
    /// Run the schedule in the foreground until interrupted (docs/monitoring.md).
    Run(RunArgs),
    /// Check a schedule file and list its jobs, without running anything.
    Check(CheckArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Schedule file (TOML).
    pub file: String,
    /// Results archive: a SQLite file or a postgres:// URL (default: the user's archive).
    #[arg(long)]
    pub db: Option<String>,
    /// Serve /metrics (Prometheus) and the dashboard on this address, e.g. 127.0.0.1:8080.
    #[arg(long)]
    pub http: Option<String>,
    /// Where results wait while the database is unreachable
    /// (default: monitor-spool beside the default archive).
    #[arg(long)]
    pub spool: Option<PathBuf>,
    /// Stop starting tests after this long (e.g. 10m) and exit when the running ones end.
    #[arg(long = "run-for", value_parser = linkperf_units::parse_duration)]
    pub run_for: Option<std::time::Duration>,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    pub file: String,
}

pub fn run(cmd: MonitorCommand) -> ExitCode {
    match cmd {
        MonitorCommand::Check(args) => match schedule::load(&args.file) {
            Ok(s) => {
                for job in &s.jobs {
                    let t = &s.tests[job.test];
                    say!(
                        "{}: {} -> {} every {} s (slip {} s)",
                        t.name,
                        job.src,
                        job.dst,
                        t.interval_s,
                        t.slip_s
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(2)
            }
        },
        MonitorCommand::Run(args) => run_schedule(&args),
    }
}

fn spool_dir(args: &RunArgs) -> Result<PathBuf, String> {
    if let Some(d) = &args.spool {
        return Ok(d.clone());
    }
    let archive = linkperf_store::default_path().map_err(|e| e.to_string())?;
    Ok(archive
        .parent()
        .map(|p| p.join("monitor-spool"))
        .unwrap_or_else(|| PathBuf::from("monitor-spool")))
}

fn run_schedule(args: &RunArgs) -> ExitCode {
    let schedule = match schedule::load(&args.file) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    let spool_dir = match spool_dir(args) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    let live = Arc::new(Mutex::new(Live::default()));
    let mut log = |v: serde_json::Value| {
        let mut v = v;
        v["ts"] = linkperf_report::rfc3339(linkperf::monitor::now_ms()).into();
        say!("{v}");
    };
    if let Some(addr) = &args.http {
        match http::serve(addr, schedule.clone(), args.db.clone(), live.clone()) {
            Ok(bound) => log(serde_json::json!({"event": "http", "address": bound.to_string()})),
            Err(e) => {
                eprintln!("linkperf: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let cancel = signals::cancel_on_signal();
    let options = controller::Options {
        db: args.db.clone(),
        spool_dir,
        run_for_s: args.run_for.map(|d| d.as_secs_f64()),
    };
    match controller::run(&schedule, &options, live, &cancel, &mut log) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("linkperf: {e}");
            ExitCode::from(1)
        }
    }
}
