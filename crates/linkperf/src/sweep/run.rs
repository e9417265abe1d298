//! The sweep loop: a checked [`Plan`] recorded in the archive, then the runs
//! still missing from it run one after the other, each stored as it ends;
//! with a confidence target, points are repeated until their interval is
//! narrow enough. Progress goes to an [`Observer`]. With a testbed, each
//! point's links are set before its runs and the runs cross the testbed
//! (see `network`).

use super::network::{Network, Session};
use super::plan::{self, Params, Vary};
use super::{parse_confidence, Confidence};
use crate::client::ClientError;
use crate::runner::run_test;
use crate::spec::TestSpec;
use linkperf_store::{NewRun, NewSweep, Store, SweepSlot};
use linkperf_testbed::schedule::Schedule;
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Default and floor of runs per point with --confidence (netperf: -i 10,3).
const CONFIDENCE_MIN_RUNS: u32 = 3;
const CONFIDENCE_MAX_RUNS: u32 = 10;
/// Most runs one sweep may plan: beyond this it is a mistake, not a study.
const MAX_RUNS: usize = 1_000_000;
/// Further attempts of a run that failed to start, and the wait before each.
const RETRIES: usize = 2;
const RETRY_PAUSE_S: f64 = 0.5;

/// How to sweep, as the user asks it (`linkperf sweep`'s own options).
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// `NAME=VALUES` each (see [`plan::parse_vary`]).
    pub vary: Vec<String>,
    /// Runs per point (the minimum with a confidence target).
    pub repeat: Option<u32>,
    pub shuffle: bool,
    /// Seed of the shuffled order (default: from the clock).
    pub seed: Option<u64>,
    /// Seconds between runs.
    pub pause: f64,
    /// `LEVEL,WIDTH` in percent (netperf's -I).
    pub confidence: Option<String>,
    /// Most runs per point with a confidence target.
    pub max_runs: Option<u32>,
    /// Topology file: run through this testbed (built unless it is up).
    pub testbed: Option<std::path::PathBuf>,
    /// Testbed hosts of the client and the server (default: its first two).
    pub client_host: Option<String>,
    pub server_host: Option<String>,
    /// Simulate every point's ns-3 twin after its first measured run.
    pub simulate: bool,
    /// A link schedule file (as `testbed set --schedule`) started right
    /// before every run, so its times count from that run's start.
    pub schedule: Option<std::path::PathBuf>,
}

/// A sweep ready to run: the base test and every point.
#[derive(Debug, Clone)]
pub struct Plan {
    pub base: TestSpec,
    pub varies: Vec<Vary>,
    pub points: Vec<Params>,
    pub repeat: u32,
    pub seed: Option<u64>,
    pub pause: f64,
    pub confidence: Option<(Confidence, u32)>,
    /// The testbed the runs cross, when the sweep has one.
    pub network: Option<Network>,
    /// `--simulate`: each point's ns-3 twin is stored beside its runs.
    pub simulate: bool,
    /// `--schedule`: the file and its steps, started before every run.
    pub schedule: Option<(std::path::PathBuf, Schedule)>,
}

/// Why a sweep stopped before its end.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    Interrupted,
    RunFailed(String),
    StoreFailed(String),
}

/// What a running sweep tells its caller.
pub trait Observer {
    /// `runs` runs are still to do, ns-3 twins included (more may follow with a
    /// confidence target).
    fn planned(&mut self, runs: usize);
    /// A run of the point `label` starts.
    fn run_started(&mut self, label: &str);
    /// That run (or twin) is stored.
    fn run_stored(&mut self);
}

impl Plan {
    /// Checks the options and expands the points; every point's test is
    /// validated before anything runs, so a bad value fails at once.
    /// `stored_seed` is the seed of a sweep being resumed.
    pub fn new(
        mut base: TestSpec,
        options: &SweepOptions,
        stored_seed: Option<u64>,
    ) -> Result<Plan, String> {
        let varies = options
            .vary
            .iter()
            .map(|v| plan::parse_vary(v))
            .collect::<Result<Vec<_>, _>>()?;
        let network = network_of(&mut base, options, &varies)?;
        let schedule = schedule_of(network.as_ref(), options)?;
        let points = plan::expand(&varies)?;
        let confidence = match &options.confidence {
            Some(c) => {
                let c = parse_confidence(c)?;
                let min = options.repeat.unwrap_or(CONFIDENCE_MIN_RUNS).max(2);
                let max = options.max_runs.unwrap_or(CONFIDENCE_MAX_RUNS.max(min));
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
            Some(_) => options.repeat.unwrap_or(CONFIDENCE_MIN_RUNS).max(2),
            None => options.repeat.unwrap_or(1),
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
        if !(options.pause.is_finite() && options.pause >= 0.0) {
            return Err("--pause must be a non-negative number of seconds".into());
        }
        if base.host.is_empty() {
            return Err("which server? usage: linkperf sweep HOST --vary NAME=VALUES".into());
        }
        let plan = Plan {
            base,
            varies,
            points,
            repeat,
            seed: options.shuffle.then(|| {
                stored_seed
                    .or(options.seed)
                    .unwrap_or_else(plan::fresh_seed)
            }),
            pause: options.pause,
            confidence,
            network,
            simulate: options.simulate,
            schedule,
        };
        for p in &plan.points {
            plan.point(p)?
                .config()
                .validate()
                .map_err(|e| format!("point {}: {e}", plan::label(p)))?;
        }
        if plan.simulate {
            let tests = plan
                .points
                .iter()
                .map(|p| plan.point(p).map(|t| (p, t)))
                .collect::<Result<Vec<_>, _>>()?;
            super::twin::check(plan.network.as_ref(), &tests)?;
        }
        Ok(plan)
    }

    /// The test of one point: the base with the point's values set.
    pub fn point(&self, params: &Params) -> Result<TestSpec, String> {
        let mut spec = self.base.clone();
        for (name, value) in params {
            plan::apply(&mut spec, name, value)?;
        }
        Ok(spec)
    }

    /// The sweep's archive record; `argv` is what rebuilds it on resume.
    pub fn record(&self, argv: Vec<String>) -> NewSweep {
        let spec = json!({
            "argv": argv,
            "host": self.base.host,
            "port": self.base.port,
            "vary": self.varies,
            "repeat": self.repeat,
            "order": if self.seed.is_some() { "shuffled" } else { "fixed" },
            "seed": self.seed,
            "pause_s": self.pause,
            "confidence": self.confidence.map(|(c, max)| json!({
                "level": c.level, "width_percent": c.width_percent, "max_runs": max,
            })),
            "base_options": self.base.config(),
            "testbed": self.network.as_ref().map(Network::describe),
            "simulate": self.simulate,
            "schedule": self.schedule.as_ref().map(|(file, _)| file),
        });
        NewSweep {
            host: self.base.host.clone(),
            created_unix_ms: now_ms(),
            spec,
            points: self
                .points
                .iter()
                .map(|p| serde_json::to_value(p).expect("params serialise"))
                .collect(),
            planned_runs: (self.points.len() * self.repeat as usize) as i64,
        }
    }
}

/// The testbed of `--testbed`, with the base test aimed at its server host;
/// `link.*` varies need one, and their values must suit its links.
fn network_of(
    base: &mut TestSpec,
    options: &SweepOptions,
    varies: &[Vary],
) -> Result<Option<Network>, String> {
    let Some(file) = &options.testbed else {
        if let Some(v) = varies.iter().find(|v| plan::is_link(&v.name)) {
            return Err(format!(
                "--vary {}: link parameters need the testbed: add --testbed FILE.toml",
                v.name
            ));
        }
        if options.client_host.is_some() || options.server_host.is_some() {
            return Err("--client-host and --server-host need --testbed FILE.toml".into());
        }
        return Ok(None);
    };
    if !base.host.is_empty() {
        return Err(format!(
            "with --testbed the server is the --server-host's address; drop HOST ({})",
            base.host
        ));
    }
    let network = Network::load(
        file,
        options.client_host.as_deref(),
        options.server_host.as_deref(),
    )?;
    network.check(varies)?;
    base.host = network.server_address();
    Ok(Some(network))
}

/// The `--schedule` file read against the testbed's links. Its ns-3 twin
/// would need the same steps, which a sweep's twins do not take yet.
fn schedule_of(
    network: Option<&Network>,
    options: &SweepOptions,
) -> Result<Option<(std::path::PathBuf, Schedule)>, String> {
    let Some(file) = &options.schedule else {
        return Ok(None);
    };
    let Some(network) = network else {
        return Err("--schedule changes testbed links: add --testbed FILE.toml".into());
    };
    if options.simulate {
        return Err(
            "--schedule with --simulate: the twins do not take a schedule; simulate it with `linkperf simulate --schedule FILE`"
                .into(),
        );
    }
    let schedule = linkperf_testbed::topology::schedule_from_file(file, &network.topology)
        .map_err(|e| format!("--schedule: {e}"))?;
    let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
    Ok(Some((file, schedule)))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Runs what sweep `id` still misses of `plan`, storing each run as it ends,
/// and marks the sweep complete. Returns the runs done here, with the reason
/// when it stopped early (every run stored before that stays).
pub fn execute(
    store: &mut Store,
    id: i64,
    plan: &Plan,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> (usize, Result<(), Stop>) {
    let existing = match store.sweep_runs(id, false) {
        Ok(r) => r,
        Err(e) => return (0, Err(Stop::StoreFailed(e.to_string()))),
    };
    let n = plan.points.len();
    let mut twinned = vec![false; n];
    if plan.simulate {
        match store.sweep_twins(id, false) {
            Ok(twins) => twins
                .iter()
                .filter_map(|t| t.slot)
                .filter(|s| (s.point as usize) < n)
                .for_each(|s| twinned[s.point as usize] = true),
            Err(e) => return (0, Err(Stop::StoreFailed(e.to_string()))),
        }
    }
    let mut runner = Runner {
        store,
        plan,
        sweep_id: id,
        interrupt,
        observer,
        session: None,
        ran_here: 0,
        received: vec![Vec::new(); n],
        next_rep: vec![0i64; n],
        twinned,
    };
    let mut done = HashSet::new();
    for r in &existing {
        let Some(slot) = r.slot else { continue };
        let p = slot.point as usize;
        if p >= n {
            continue;
        }
        done.insert((p, slot.repetition as usize));
        if let Some(v) = r.metrics.received_bps {
            runner.received[p].push(v);
        }
        runner.next_rep[p] = runner.next_rep[p].max(slot.repetition + 1);
    }
    let todo: Vec<(usize, usize)> = plan::schedule(n, plan.repeat as usize, plan.seed)
        .into_iter()
        .filter(|k| !done.contains(k))
        .collect();
    // With --simulate, every point still without a twin gets one: a run to count too.
    let twins_to_make = if plan.simulate {
        runner.twinned.iter().filter(|t| !**t).count()
    } else {
        0
    };
    runner.observer.planned(todo.len() + twins_to_make);
    let more_to_do = !todo.is_empty() || plan.confidence.is_some();
    if let (Some(network), true) = (&plan.network, more_to_do) {
        match Session::start(network, &plan.varies, plan.base.port) {
            Ok(s) => runner.session = Some(s),
            Err(e) => return (0, Err(Stop::RunFailed(e))),
        }
    }
    let mut outcome = runner.run_all(&todo).and_then(|()| {
        runner
            .store
            .set_sweep_status(id, "complete")
            .map_err(|e| Stop::StoreFailed(format!("all runs stored, but: {e}")))
    });
    if let Some(Err(e)) = runner.session.take().map(Session::finish) {
        if outcome.is_ok() {
            outcome = Err(Stop::RunFailed(e));
        }
    }
    (runner.ran_here, outcome)
}

struct Runner<'a> {
    store: &'a mut Store,
    plan: &'a Plan,
    sweep_id: i64,
    interrupt: &'a AtomicBool,
    observer: &'a mut dyn Observer,
    /// The testbed the runs cross, if any.
    session: Option<Session>,
    ran_here: usize,
    /// Received bits/s of each point's stored runs.
    received: Vec<Vec<f64>>,
    next_rep: Vec<i64>,
    /// Whether each point's ns-3 twin is stored (`--simulate`).
    twinned: Vec<bool>,
}

impl Runner<'_> {
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// Sleeps `secs`, waking early on an interrupt.
    fn pause(&self, secs: f64) {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end && !self.interrupted() {
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
        }
    }

    /// One test of the point, retried twice when it fails to start: a server
    /// still tidying up the previous test (iperf3 serves one at a time) may
    /// refuse the next at once.
    fn attempt(&self, spec: &TestSpec) -> Result<crate::report::Report, ClientError> {
        // A stock iperf3 server is swept through the iperf3 client; both give
        // the same report.
        let once = || match &self.session {
            Some(s) => s.run(spec, self.interrupt),
            None => run_test(spec, &mut |_| {}, Some(self.interrupt)),
        };
        let mut result = once();
        for _ in 0..RETRIES {
            match &result {
                Err(e) if e.exit_code == 1 && !self.interrupted() => {
                    self.pause(RETRY_PAUSE_S);
                    result = once();
                }
                _ => break,
            }
        }
        result
    }

    fn run_one(&mut self, point: usize, repetition: i64) -> Result<(), Stop> {
        if self.interrupted() {
            return Err(Stop::Interrupted);
        }
        if self.ran_here > 0 && self.plan.pause > 0.0 {
            self.pause(self.plan.pause);
            if self.interrupted() {
                return Err(Stop::Interrupted);
            }
        }
        let params = &self.plan.points[point];
        let what = format!("{} #{}", plan::label(params), repetition + 1);
        self.observer.run_started(&what);
        let spec = self.plan.point(params).map_err(Stop::RunFailed)?;
        if let Some(session) = &mut self.session {
            session.set_point(params).map_err(Stop::RunFailed)?;
            if let Some((_, schedule)) = &self.plan.schedule {
                session.start_schedule(schedule).map_err(Stop::RunFailed)?;
            }
        }
        let report = match self.attempt(&spec) {
            Ok(r) if r.interrupted => return Err(Stop::Interrupted),
            Ok(r) if !r.errors.is_empty() => {
                return Err(Stop::RunFailed(format!(
                    "run {what} failed: {}",
                    r.errors.join("; ")
                )))
            }
            Ok(r) => r,
            Err(_) if self.interrupted() => return Err(Stop::Interrupted),
            Err(e) => return Err(Stop::RunFailed(format!("run {what} failed: {}", e.message))),
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
        self.observer.run_stored();
        self.simulate(point)
    }

    /// With `--simulate`, the point's ns-3 twin once it has a measured run:
    /// after the measurement, never beside it (the simulation takes a CPU).
    fn simulate(&mut self, point: usize) -> Result<(), Stop> {
        if !self.plan.simulate || self.twinned[point] || self.received[point].is_empty() {
            return Ok(());
        }
        let label = plan::label(&self.plan.points[point]);
        self.observer.run_started(&format!("{label} (ns-3 twin)"));
        let params = &self.plan.points[point];
        let test = self.plan.point(params).map_err(Stop::RunFailed)?;
        let Some(network) = &self.plan.network else {
            return Err(Stop::RunFailed("--simulate needs --testbed".into()));
        };
        let twin = super::twin::simulate_point(network, params, &test, self.sweep_id, point);
        let run = match twin {
            Ok(run) => run,
            Err(_) if self.interrupted() => return Err(Stop::Interrupted),
            Err(e) => {
                return Err(Stop::RunFailed(format!(
                    "the ns-3 twin of {label} failed: {e}"
                )))
            }
        };
        self.store
            .insert_run(&run)
            .map_err(|e| Stop::StoreFailed(e.to_string()))?;
        self.twinned[point] = true;
        self.observer.run_stored();
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
        // Twins a resumed sweep still misses (its runs were all stored).
        for p in 0..self.plan.points.len() {
            self.simulate(p)?;
        }
        Ok(())
    }
}
