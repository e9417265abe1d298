//! `linkperf sweep`: the flags of a parameter study, the progress on stderr
//! and the printed statistics; planning and running is the library's
//! `sweep` module.

use crate::args::{ClientArgs, OutputFormat};
use crate::progress::Progress;
use clap::{Args, Parser};
use linkperf::signals;
use linkperf::sweep::run::{self as sweep_run, Plan, Stop, SweepOptions};
use linkperf::sweep::{self};
use linkperf_store::{Store, SweepRow};
use serde_json::Value;
use std::process::ExitCode;

fn seconds(s: &str) -> Result<f64, String> {
    linkperf_units::parse_duration(s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Vary a client option: NAME=V1,V2,..., NAME=START..END*FACTOR (geometric)
    /// or NAME=START..END+STEP (arithmetic). Repeat for a cartesian product.
    #[arg(long = "vary", value_name = "NAME=VALUES")]
    pub vary: Vec<String>,
    /// Runs per point (the minimum with --confidence; default 1, or 3 with --confidence).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Run the points and repetitions in a random (seeded, stored) order.
    #[arg(long)]
    pub shuffle: bool,
    /// Seed of --shuffle (default: from the clock; stored either way).
    #[arg(long, requires = "shuffle")]
    pub seed: Option<u64>,
    /// Seconds to wait between runs.
    #[arg(long, value_parser = seconds, default_value = "0", value_name = "SECS")]
    pub pause: f64,
    /// Repeat each point until the LEVEL % confidence interval of the received
    /// throughput is within ±WIDTH/2 % of the mean (netperf's -I), e.g. 99,5.
    #[arg(long, value_name = "LEVEL,WIDTH")]
    pub confidence: Option<String>,
    /// Most runs per point with --confidence (default 10).
    #[arg(long, value_name = "N", requires = "confidence")]
    pub max_runs: Option<u32>,
    /// Run through the emulated testbed of this topology file (built unless it
    /// is up, removed at the end if the sweep built it): the client in one
    /// host, a server in another, and `--vary link.LINK.KEY=...` sets its links.
    #[arg(long, value_name = "FILE.toml")]
    pub testbed: Option<std::path::PathBuf>,
    /// With --testbed: the host that runs the client (default: the first host).
    #[arg(long, value_name = "HOST", requires = "testbed")]
    pub client_host: Option<String>,
    /// With --testbed: the host that runs the server (default: the second host).
    #[arg(long, value_name = "HOST", requires = "testbed")]
    pub server_host: Option<String>,
    /// With --testbed: run each point's ns-3 twin (`linkperf simulate`) after
    /// its first measured run and show it beside the measurement.
    #[arg(long)]
    pub simulate: bool,
    /// With --testbed: a link schedule file (as `testbed set --schedule`)
    /// started right before every run; its times count from the run's start.
    #[arg(long, value_name = "FILE", requires = "testbed")]
    pub schedule: Option<std::path::PathBuf>,
    /// Finish sweep ID from the archive (only --db and -J may be given with it).
    #[arg(long, value_name = "ID")]
    pub resume: Option<i64>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// For re-reading the stored command line of a sweep on `--resume`.
#[derive(Parser, Debug)]
#[command(name = "sweep")]
pub struct SweepCommandLine {
    #[command(flatten)]
    pub args: SweepArgs,
}

impl SweepArgs {
    fn options(&self) -> SweepOptions {
        SweepOptions {
            vary: self.vary.clone(),
            repeat: self.repeat,
            shuffle: self.shuffle,
            seed: self.seed,
            pause: self.pause,
            confidence: self.confidence.clone(),
            max_runs: self.max_runs,
            testbed: self.testbed.clone(),
            client_host: self.client_host.clone(),
            server_host: self.server_host.clone(),
            simulate: self.simulate,
            schedule: self.schedule.clone(),
        }
    }

    /// The checked plan of these flags; `stored_seed` when resuming.
    fn plan(&self, stored_seed: Option<u64>) -> Result<Plan, String> {
        if self.client.from.is_some() {
            return Err("--from (third-party tests) cannot be swept".into());
        }
        let spec = if self.testbed.is_some() && self.client.host().is_err() {
            // The testbed's server host is the server; the plan fills it in.
            let mut client = self.client.clone();
            client.host = Some(String::new());
            client.spec()?
        } else {
            self.client.spec()?
        };
        Plan::new(spec, &self.options(), stored_seed)
    }
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkperf: {msg}");
    ExitCode::from(2)
}

fn failed(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkperf: {msg}");
    ExitCode::from(1)
}

pub fn run(args: SweepArgs) -> ExitCode {
    // --logfile, -T, --timestamps, -A apply to the whole sweep.
    let output = match crate::process_opts::start(
        &args.client.output,
        args.client.logfile.as_deref(),
        args.client.title.as_deref(),
    ) {
        Ok(o) => o,
        Err(e) => return usage(e),
    };
    let code = run_sweep(args);
    output.finish();
    code
}

/// How the sweep's result is printed: one JSON document, or text with
/// rates in `-f`'s unit.
#[derive(Clone, Copy)]
struct Printed {
    json: bool,
    unit: linkperf_units::ReportUnit,
}

fn run_sweep(args: SweepArgs) -> ExitCode {
    let json_out = Printed {
        json: args.client.json || args.client.format == OutputFormat::Json,
        unit: args.client.units,
    };
    if matches!(
        args.client.format,
        OutputFormat::JsonStream | OutputFormat::Iperf3Json
    ) {
        return usage("a sweep prints text or one JSON document (-J)");
    }
    let db = args.client.db.clone();
    let no_store = args.client.no_store;
    if let Some(id) = args.resume {
        if !args.vary.is_empty()
            || args.client.host.is_some()
            || args.client.client.is_some()
            || args.testbed.is_some()
        {
            return usage(format!(
                "--resume {id} runs the sweep with its stored options; give only --db and -J with it"
            ));
        }
        if no_store {
            return usage("--resume needs the archive; drop --no-store");
        }
        return resume(id, db.as_deref(), json_out);
    }
    if args.vary.is_empty() {
        return usage("what to vary? e.g. linkperf sweep HOST --vary window=4K,64K,1M --repeat 3");
    }
    if args.client.json_stream {
        return usage("--json-stream is not available for sweeps; use -J");
    }
    // Stored so --resume rebuilds exactly this sweep.
    let argv = absolute_testbed(std::env::args().skip(2).collect());
    let plan = match args.plan(None) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    if plan.network.is_some() {
        // Before the sweep is recorded: without the rights it could never run.
        if let Err(e) = linkperf_testbed::require_root() {
            return failed(format!("--testbed: {e}"));
        }
    }
    let mut store = match if no_store {
        Store::open_at(linkperf_store::Location::Memory)
    } else {
        Store::open(db.as_deref())
    } {
        Ok(s) => s,
        Err(e) if e.usage => return usage(e),
        Err(e) => return failed(e),
    };
    let id = match store.create_sweep(&plan.record(argv)) {
        Ok(id) => id,
        Err(e) => return failed(format!("cannot record the sweep: {e}")),
    };
    execute(&mut store, id, &plan, json_out, db.as_deref(), no_store)
}

/// The command line with `--testbed FILE` and `--schedule FILE` made
/// absolute, so `--resume` finds the files from any directory.
fn absolute_testbed(mut argv: Vec<String>) -> Vec<String> {
    let absolute = |f: &str| {
        std::path::absolute(f)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| f.to_string())
    };
    for i in 0..argv.len() {
        for flag in ["--testbed", "--schedule"] {
            if let Some(f) = argv[i].strip_prefix(&format!("{flag}=")) {
                argv[i] = format!("{flag}={}", absolute(f));
            } else if argv[i] == flag && i + 1 < argv.len() {
                argv[i + 1] = absolute(&argv[i + 1]);
            }
        }
    }
    argv
}

fn resume(id: i64, db: Option<&str>, json_out: Printed) -> ExitCode {
    let mut store = match Store::open(db) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let sweep = match store.sweep(id) {
        Ok(Some(s)) => s,
        Ok(None) => {
            return usage(format!(
                "no sweep {id} in the archive {} (see linkperf results list)",
                store.location().describe()
            ))
        }
        Err(e) => return failed(e),
    };
    let argv: Vec<String> = sweep
        .spec
        .get("argv")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let parsed =
        match SweepCommandLine::try_parse_from(std::iter::once("sweep".to_string()).chain(argv)) {
            Ok(p) => p.args,
            Err(e) => {
                return failed(format!(
                    "sweep {id}: its stored options no longer parse ({}); start it anew",
                    e.to_string().lines().next().unwrap_or("")
                ))
            }
        };
    let seed = sweep.spec.get("seed").and_then(Value::as_u64);
    let plan = match parsed.plan(seed) {
        Ok(p) => p,
        Err(e) => return failed(format!("sweep {id}: {e}")),
    };
    if plan.points.len() != sweep.points.len() {
        return failed(format!(
            "sweep {id}: its stored points do not match its options; start it anew"
        ));
    }
    execute(&mut store, id, &plan, json_out, db, false)
}

/// The progress bar (terminal) or lines (log) on stderr; nothing with -J.
impl sweep_run::Observer for Progress {
    fn planned(&mut self, runs: usize) {
        self.set_total(runs);
    }

    fn run_started(&mut self, label: &str) {
        self.show(label);
    }

    fn run_stored(&mut self) {
        self.tick();
    }
}

fn execute(
    store: &mut Store,
    id: i64,
    plan: &Plan,
    json_out: Printed,
    db: Option<&str>,
    in_memory: bool,
) -> ExitCode {
    signals::install();
    let mut progress = Progress::new(plan.points.len(), !json_out.json);
    let (ran, outcome) = sweep_run::execute(store, id, plan, &signals::INTERRUPTED, &mut progress);
    progress.clear();
    let resume_hint = if in_memory {
        String::new()
    } else {
        format!(
            "; finish it with: linkperf sweep --resume {id}{}",
            // Without a PostgreSQL password: the user has it, stderr logs need not.
            db.map(|d| format!(
                " --db {}",
                linkperf_store::Location::parse(d)
                    .map(|l| l.describe())
                    .unwrap_or_else(|_| d.to_string())
            ))
            .unwrap_or_default()
        )
    };
    let (code, message) = match outcome {
        Ok(()) => (ExitCode::SUCCESS, None),
        Err(Stop::Interrupted) => (
            ExitCode::from(130),
            Some(format!(
                "sweep {id} interrupted after {ran} runs here; every finished run is stored{resume_hint}"
            )),
        ),
        Err(Stop::RunFailed(m)) => (
            ExitCode::from(1),
            Some(format!("sweep {id} stopped: {m}{resume_hint}")),
        ),
        Err(Stop::StoreFailed(m)) => {
            // The archive is gone: say so, keep the runs it has, print nothing more.
            return failed(format!(
                "sweep {id} stopped: the archive failed ({m}); the runs stored before stay{resume_hint}"
            ));
        }
    };
    let printed = print_results(store, id, json_out);
    if let Some(m) = message {
        eprintln!("linkperf: {m}");
    }
    match printed {
        Ok(()) => code,
        Err(e) => failed(e),
    }
}

fn print_results(store: &mut Store, id: i64, json_out: Printed) -> Result<(), String> {
    let sweep = store
        .sweep(id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("sweep {id} vanished from the archive"))?;
    let runs = store.sweep_runs(id, true).map_err(|e| e.to_string())?;
    let twins = store.sweep_twins(id, false).map_err(|e| e.to_string())?;
    let mut points = sweep::summarise(&sweep, &runs);
    sweep::twin::attach(&mut points, &twins);
    if json_out.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&sweep::sweep_json(&sweep, &points))
                .expect("sweep serialises")
        );
        for w in sweep::confidence_warnings(&sweep, &points) {
            eprintln!("linkperf: {w}");
        }
    } else {
        say!("{}", sweep_heading(&sweep, runs.len(), store));
        say_raw!("{}", sweep::sweep_table_in(&sweep, &points, json_out.unit));
        for w in sweep::confidence_warnings(&sweep, &points) {
            say!("{w}");
        }
    }
    Ok(())
}

pub fn sweep_heading(sweep: &SweepRow, runs: usize, store: &Store) -> String {
    let spec = &sweep.spec;
    let order = spec.get("order").and_then(Value::as_str).unwrap_or("fixed");
    let seed = spec
        .get("seed")
        .and_then(Value::as_u64)
        .map(|s| format!(" (seed {s})"))
        .unwrap_or_default();
    format!(
        "sweep {} against {}: {} points, {} runs stored, {order} order{seed}, {} [{}]",
        sweep.id,
        sweep.host,
        sweep.points.len(),
        runs,
        sweep.status,
        store.location().describe()
    )
}
