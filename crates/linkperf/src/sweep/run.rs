//! The sweep loop: plan, create or reopen the sweep in the archive, run what
//! is missing, store each run as it ends, then print the statistics.

use super::plan::{self, Params, Vary};
use super::progress::Progress;
use super::{parse_confidence, Confidence, SweepArgs, SweepCommandLine};
use crate::cli::ClientArgs;
use crate::{client, signals};
use clap::Parser;
use linkperf_store::{NewRun, NewSweep, Store, SweepSlot};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Default and floor of runs per point with --confidence (netperf: -i 10,3).
const CONFIDENCE_MIN_RUNS: u32 = 3;
const CONFIDENCE_MAX_RUNS: u32 = 10;
/// Most runs one sweep may plan: beyond this it is a mistake, not a study.
const MAX_RUNS: usize = 1_000_000;
/// Further attempts of a run that failed to start, and the wait before each.
const RETRIES: usize = 2;
const RETRY_PAUSE_S: f64 = 0.5;

/// A sweep ready to run: the base client arguments and every point.
struct Plan {
    base: ClientArgs,
    varies: Vec<Vary>,
    points: Vec<Params>,
    repeat: u32,
    seed: Option<u64>,
    pause: f64,
    confidence: Option<(Confidence, u32)>,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkperf: {msg}");
    ExitCode::from(2)
}

fn failed(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkperf: {msg}");
    ExitCode::from(1)
}

/// Checks the options and expands the points; every point's configuration is
/// validated before anything runs, so a bad value fails at once.
fn make_plan(args: SweepArgs, seed: Option<u64>) -> Result<Plan, String> {
    let varies = args
        .vary
        .iter()
        .map(|v| plan::parse_vary(v))
        .collect::<Result<Vec<_>, _>>()?;
    let points = plan::expand(&varies)?;
    let confidence = match &args.confidence {
        Some(c) => {
            let c = parse_confidence(c)?;
            let min = args.repeat.unwrap_or(CONFIDENCE_MIN_RUNS).max(2);
            let max = args.max_runs.unwrap_or(CONFIDENCE_MAX_RUNS.max(min));
            if max < min {
                return Err(format!(
                    "--max-runs {max} is below the {min} runs per point --repeat asks for"
                ));
            }
            Some((c, max))
        }
        None => None,
    };
    let repeat = match confidence {
        Some(_) => args.repeat.unwrap_or(CONFIDENCE_MIN_RUNS).max(2),
        None => args.repeat.unwrap_or(1),
    };
    if repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    let most = confidence.map_or(repeat, |(_, max)| max) as usize;
    if points.len().saturating_mul(most) > MAX_RUNS {
        return Err(format!(
            "{} points x {most} runs is more than {MAX_RUNS} runs; vary fewer values",
            points.len()
        ));
    }
    if !(args.pause.is_finite() && args.pause >= 0.0) {
        return Err("--pause must be a non-negative number of seconds".into());
    }
    if args.client.from.is_some() {
        return Err("--from (third-party tests) cannot be swept".into());
    }
    args.client.host()?;
    let base = args.client;
    for p in &points {
        point_args(&base, p)?
            .config()
            .validate()
            .map_err(|e| format!("point {}: {e}", plan::label(p)))?;
    }
    let seed = if args.shuffle {
        Some(seed.or(args.seed).unwrap_or_else(plan::fresh_seed))
    } else {
        None
    };
    Ok(Plan {
        base,
        varies,
        points,
        repeat,
        seed,
        pause: args.pause,
        confidence,
    })
}

fn point_args(base: &ClientArgs, params: &Params) -> Result<ClientArgs, String> {
    let mut a = base.clone();
    for (name, value) in params {
        plan::apply(&mut a, name, value)?;
    }
    Ok(a)
}

fn client_options(args: &ClientArgs) -> client::ClientOptions {
    client::ClientOptions {
        host: args.host().unwrap_or_default(),
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
    }
}

/// Why a sweep stopped before its end.
enum Stop {
    Interrupted,
    RunFailed(String),
    StoreFailed(String),
}

pub fn run(args: SweepArgs) -> ExitCode {
    use crate::cli::OutputFormat;
    let json_out = args.client.json || args.client.format == OutputFormat::Json;
    if matches!(
        args.client.format,
        OutputFormat::JsonStream | OutputFormat::Iperf3Json
    ) {
        return usage("a sweep prints text or one JSON document (-J)");
    }
    let db = args.client.db.clone();
    let no_store = args.client.no_store;
    if let Some(id) = args.resume {
        if !args.vary.is_empty() || args.client.host.is_some() || args.client.client.is_some() {
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
    let argv: Vec<String> = std::env::args().skip(2).collect();
    let plan = match make_plan(args, None) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    let mut store = match if no_store {
        Store::open_at(linkperf_store::Location::Memory)
    } else {
        Store::open(db.as_deref())
    } {
        Ok(s) => s,
        Err(e) if e.usage => return usage(e),
        Err(e) => return failed(e),
    };
    let base_config = plan.base.config();
    let spec = json!({
        "argv": argv,
        "host": plan.base.host().unwrap_or_default(),
        "port": plan.base.port,
        "vary": plan.varies,
        "repeat": plan.repeat,
        "order": if plan.seed.is_some() { "shuffled" } else { "fixed" },
        "seed": plan.seed,
        "pause_s": plan.pause,
        "confidence": plan.confidence.map(|(c, max)| json!({
            "level": c.level, "width_percent": c.width_percent, "max_runs": max,
        })),
        "base_options": base_config,
    });
    let new = NewSweep {
        host: plan.base.host().unwrap_or_default(),
        created_unix_ms: now_ms(),
        spec,
        points: plan
            .points
            .iter()
            .map(|p| serde_json::to_value(p).expect("params serialise"))
            .collect(),
        planned_runs: (plan.points.len() * plan.repeat as usize) as i64,
    };
    let id = match store.create_sweep(&new) {
        Ok(id) => id,
        Err(e) => return failed(format!("cannot record the sweep: {e}")),
    };
    execute(&mut store, id, &plan, json_out, db.as_deref(), no_store)
}

fn resume(id: i64, db: Option<&str>, json_out: bool) -> ExitCode {
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
    let plan = match make_plan(parsed, seed) {
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

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Sleeps `secs`, waking early on Ctrl-C.
fn pause(secs: f64) {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end && !signals::INTERRUPTED.load(Ordering::Relaxed) {
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
}

struct Runner<'a> {
    store: &'a mut Store,
    plan: &'a Plan,
    sweep_id: i64,
    progress: Progress,
    ran_here: usize,
    /// Received bits/s of each point's stored runs.
    received: Vec<Vec<f64>>,
    next_rep: Vec<i64>,
}

impl Runner<'_> {
    fn run_one(&mut self, point: usize, repetition: i64) -> Result<(), Stop> {
        if signals::INTERRUPTED.load(Ordering::Relaxed) {
            return Err(Stop::Interrupted);
        }
        if self.ran_here > 0 && self.plan.pause > 0.0 {
            pause(self.plan.pause);
            if signals::INTERRUPTED.load(Ordering::Relaxed) {
                return Err(Stop::Interrupted);
            }
        }
        let params = &self.plan.points[point];
        self.progress
            .show(&format!("{} #{}", plan::label(params), repetition + 1));
        let args = point_args(&self.plan.base, params).map_err(Stop::RunFailed)?;
        let options = client_options(&args);
        // A stock iperf3 server (--iperf3, or port 5201) is swept through the
        // iperf3 client; both give the same report.
        let attempt = || {
            if args.iperf3_mode() {
                crate::iperf3::client::run(&options, &mut |_| {}, Some(&signals::INTERRUPTED))
            } else {
                client::run(&options, &mut |_| {}, Some(&signals::INTERRUPTED))
            }
        };
        // A server still tidying up the previous test (iperf3 serves one at a
        // time) may refuse the next at once: retry a failed start twice.
        let mut result = attempt();
        for _ in 0..RETRIES {
            match &result {
                Err(e) if e.exit_code == 1 && !signals::INTERRUPTED.load(Ordering::Relaxed) => {
                    pause(RETRY_PAUSE_S);
                    result = attempt();
                }
                _ => break,
            }
        }
        let report = match result {
            Ok(r) if r.interrupted => return Err(Stop::Interrupted),
            Ok(r) if !r.errors.is_empty() => {
                return Err(Stop::RunFailed(format!(
                    "run {} #{} failed: {}",
                    plan::label(params),
                    repetition + 1,
                    r.errors.join("; ")
                )))
            }
            Ok(r) => r,
            Err(e) => {
                if signals::INTERRUPTED.load(Ordering::Relaxed) {
                    return Err(Stop::Interrupted);
                }
                return Err(Stop::RunFailed(format!(
                    "run {} #{} failed: {}",
                    plan::label(params),
                    repetition + 1,
                    e.message
                )));
            }
        };
        let doc = serde_json::to_value(&report).expect("report serialises");
        let run = NewRun::from_test_report(doc).in_sweep(SweepSlot {
            sweep_id: self.sweep_id,
            point: point as i64,
            repetition,
        });
        let received = run.metrics.received_bps;
        self.store
            .insert_run(&run)
            .map_err(|e| Stop::StoreFailed(e.to_string()))?;
        if let Some(r) = received {
            self.received[point].push(r);
        }
        self.next_rep[point] = self.next_rep[point].max(repetition + 1);
        self.ran_here += 1;
        self.progress.tick();
        Ok(())
    }

    fn confidence_reached(&self, point: usize, c: &Confidence) -> bool {
        super::stats::Summary::of(&self.received[point], c.level)
            .and_then(|s| s.half_width_percent())
            .is_some_and(|h| h <= c.width_percent / 2.0)
    }

    fn run_all(&mut self, todo: &[(usize, usize)]) -> Result<(), Stop> {
        for &(p, r) in todo {
            self.run_one(p, r as i64)?;
        }
        if let Some((c, max)) = self.plan.confidence {
            // Then each point until its interval is narrow enough or max runs.
            for p in 0..self.plan.points.len() {
                while (self.received[p].len() as u32) < max && !self.confidence_reached(p, &c) {
                    let rep = self.next_rep[p];
                    self.run_one(p, rep)?;
                }
            }
        }
        Ok(())
    }
}

fn execute(
    store: &mut Store,
    id: i64,
    plan: &Plan,
    json_out: bool,
    db: Option<&str>,
    in_memory: bool,
) -> ExitCode {
    signals::install();
    let existing = match store.sweep_runs(id, false) {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let n = plan.points.len();
    let mut received = vec![Vec::new(); n];
    let mut next_rep = vec![0i64; n];
    let mut done = HashSet::new();
    for r in &existing {
        let Some(slot) = r.slot else { continue };
        let p = slot.point as usize;
        if p >= n {
            continue;
        }
        done.insert((p, slot.repetition as usize));
        if let Some(v) = r.metrics.received_bps {
            received[p].push(v);
        }
        next_rep[p] = next_rep[p].max(slot.repetition + 1);
    }
    let todo: Vec<(usize, usize)> = plan::schedule(n, plan.repeat as usize, plan.seed)
        .into_iter()
        .filter(|k| !done.contains(k))
        .collect();
    let mut progress = Progress::new(todo.len(), !json_out);
    progress.set_total(todo.len());
    let mut runner = Runner {
        store,
        plan,
        sweep_id: id,
        progress,
        ran_here: 0,
        received,
        next_rep,
    };
    let outcome = runner.run_all(&todo);
    runner.progress.clear();
    let ran = runner.ran_here;
    let store = runner.store;
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
        Ok(()) => {
            if let Err(e) = store.set_sweep_status(id, "complete") {
                return failed(format!("sweep {id}: all runs stored, but: {e}"));
            }
            (ExitCode::SUCCESS, None)
        }
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

fn print_results(store: &mut Store, id: i64, json_out: bool) -> Result<(), String> {
    let sweep = store
        .sweep(id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("sweep {id} vanished from the archive"))?;
    let runs = store.sweep_runs(id, false).map_err(|e| e.to_string())?;
    let points = super::summarise(&sweep, &runs);
    if json_out {
        say!(
            "{}",
            serde_json::to_string_pretty(&super::sweep_json(&sweep, &points))
                .expect("sweep serialises")
        );
        for w in super::confidence_warnings(&sweep, &points) {
            eprintln!("linkperf: {w}");
        }
    } else {
        say!("{}", sweep_heading(&sweep, runs.len(), store));
        say_raw!("{}", super::sweep_table(&sweep, &points));
        for w in super::confidence_warnings(&sweep, &points) {
            say!("{w}");
        }
    }
    Ok(())
}

pub fn sweep_heading(sweep: &linkperf_store::SweepRow, runs: usize, store: &Store) -> String {
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
