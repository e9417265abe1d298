//! `linkperf reproduce`: the flags, the progress and the printed table of a
//! seed experiment; reading, running and comparing is the library's
//! `reproduce` module.

use crate::progress::Progress;
use clap::Args;
use linkperf::{reproduce, signals};
use linkperf_store::Store;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Experiment: a directory name under --dir (see --list), or a directory.
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// Where the experiments are.
    #[arg(long, default_value = "examples/seeds")]
    pub dir: PathBuf,
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Run at the experiment's full duration (default: the reduced one).
    #[arg(long)]
    pub full: bool,
    /// Runs per point (default: the experiment's, or 1).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Write the comparison as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the comparison as JSON instead of a table.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Results archive: a SQLite file or a postgres:// URL.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
    /// Do not keep the sweep in the archive.
    #[arg(long, conflicts_with = "db")]
    pub no_store: bool,
}

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkperf: {msg}");
    ExitCode::from(code)
}

pub fn run(args: ReproduceArgs) -> ExitCode {
    if args.list {
        for name in reproduce::list(&args.dir) {
            match reproduce::find(&args.dir, &name) {
                Ok(e) => say!("{name:<26} seed {}: {}", e.seed, e.source),
                Err(e) => say!("{name:<26} {e}"),
            }
        }
        return ExitCode::SUCCESS;
    }
    let name = args.name.clone().unwrap_or_default();
    let experiment = match reproduce::find(&args.dir, &name) {
        Ok(e) => e,
        Err(e) => return fail(2, e),
    };
    if let Err(e) = experiment.check(!args.full, args.repeat) {
        return fail(2, e);
    }
    let store = if args.no_store {
        Store::open_at(linkperf_store::Location::Memory)
    } else {
        Store::open(args.db.as_deref())
    };
    let mut store = match store {
        Ok(s) => s,
        Err(e) if e.usage => return fail(2, e),
        Err(e) => return fail(1, e),
    };
    signals::install();
    let mut progress = Progress::new(0, !args.json);
    let result = reproduce::run(
        &experiment,
        !args.full,
        args.repeat,
        &mut store,
        &signals::INTERRUPTED,
        &mut progress,
    );
    progress.clear();
    let r = match result {
        Ok(r) => r,
        Err(e) => return fail(1, e),
    };
    let json = serde_json::to_string_pretty(&r).expect("the comparison serialises");
    if let Some(path) = &args.out {
        if let Err(e) = std::fs::write(path, format!("{json}\n")) {
            return fail(1, format!("cannot write {}: {e}", path.display()));
        }
    }
    if args.json {
        say!("{json}");
    } else {
        say_raw!("{}", reproduce::table(&r));
        if let (false, Some(id)) = (args.no_store, r.sweep_id) {
            say!("stored as sweep {id}: linkperf report sweep {id}");
        }
        if let (false, Some(id)) = (args.no_store, r.campaign_id) {
            say!("stored as campaign {id}: linkperf report {id} -o FILE.html");
        }
        let mut simulated: Vec<i64> = r.simulated.iter().filter_map(|s| s.sweep_id).collect();
        simulated.dedup();
        for id in simulated.iter().filter(|_| !args.no_store) {
            say!("ns-3 runs stored as sweep {id}: linkperf report {id} -o FILE.html");
        }
        let runs: Vec<String> = (r.sites.iter().filter_map(|s| s.run_id))
            .map(|i| i.to_string())
            .collect();
        if !args.no_store && !runs.is_empty() {
            say!("stored as runs {}: linkperf report ID", runs.join(", "));
        }
    }
    match &r.stopped {
        None => ExitCode::SUCCESS,
        Some(why) => fail(1, format!("{} stopped early: {why}", r.experiment)),
    }
}
