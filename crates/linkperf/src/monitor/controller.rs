//! The monitoring controller: starts due jobs through their source agent
//! (a campaign flow in third-party mode), stores each result as it ends
//! (with its alerts and the job's next run time, in one transaction), keeps
//! results in the spool while the database is unreachable, and reports
//! every event as one JSON value to the caller's log.

use super::metrics::Live;
use super::now_ms as unix_ms;
use super::outcome::{result_of, AlertState};
use super::plan::Planner;
use super::schedule::Schedule;
use super::spool::{Record, Spool};
use crate::client;
use linkperf_store::{NewRun, Store};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Options {
    /// Archive: a SQLite path or postgres:// URL (default: the user's).
    pub db: Option<String>,
    pub spool_dir: PathBuf,
    /// Stop starting tests after this long (tests, benches); `None`: forever.
    pub run_for_s: Option<f64>,
}

/// Counts over one run of the controller.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub results: u64,
    pub failures: u64,
    pub alerts: u64,
    pub spooled_left: usize,
}

type Finished = (usize, i64, i64, Result<Value, String>);

/// The week of throughput a threshold compares with.
const BASELINE_MS: i64 = 7 * 24 * 3600 * 1000;

struct Controller<'a> {
    schedule: &'a Schedule,
    options: &'a Options,
    store: Option<Store>,
    spool: Spool,
    live: Arc<Mutex<Live>>,
    alerts: AlertState,
    /// Each job's successful throughputs of the last week (Unix ms, bits/s).
    history: Vec<Vec<(i64, f64)>>,
    summary: Summary,
    last_db_try: Option<Instant>,
    log: &'a mut dyn FnMut(Value),
}

/// Runs the schedule until cancelled (or `run_for_s` passes); the tests
/// running then finish (cancelled ones stop within a second) and are stored.
pub fn run(
    schedule: &Schedule,
    options: &Options,
    live: Arc<Mutex<Live>>,
    cancel: &Arc<AtomicBool>,
    log: &mut dyn FnMut(Value),
) -> Result<Summary, String> {
    let spool = Spool::open(&options.spool_dir)?;
    let mut c = Controller {
        schedule,
        options,
        store: None,
        spool,
        live,
        alerts: AlertState::default(),
        history: vec![Vec::new(); schedule.jobs.len()],
        summary: Summary::default(),
        last_db_try: None,
        log,
    };
    let stored = c.restore()?;
    let now = unix_ms();
    let mut planner = Planner::new(
        schedule,
        &stored,
        now,
        now as u64 ^ std::process::id() as u64,
    );
    let db = c.db_name();
    (c.log)(
        json!({"event": "start", "jobs": schedule.jobs.len(), "restored": stored.len(),
                   "db": db}),
    );
    let (tx, rx) = mpsc::channel::<Finished>();
    let deadline = options
        .run_for_s
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    loop {
        let stopping =
            cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d);
        if stopping && planner.running() == 0 {
            break;
        }
        if !stopping {
            let now = unix_ms();
            for j in planner.start_due(schedule, now) {
                spawn_job(schedule, j, planner.next[j], tx.clone(), cancel.clone());
            }
        }
        while let Ok((j, due, started, outcome)) = rx.try_recv() {
            let now = unix_ms();
            let interrupted = cancel.load(Ordering::Relaxed);
            // An interrupted test runs again at its time after a restart.
            let next = if interrupted {
                due
            } else {
                planner.next_after(schedule, j, due, now)
            };
            c.finished(j, started, outcome, next, interrupted);
            planner.finished(schedule, j, next);
        }
        c.flush_spool();
        std::thread::sleep(Duration::from_millis(20));
    }
    c.flush_spool();
    c.summary.spooled_left = c.spool.pending().len();
    (c.log)(json!({"event": "stop", "results": c.summary.results,
                   "failures": c.summary.failures, "alerts": c.summary.alerts,
                   "spooled": c.summary.spooled_left}));
    Ok(c.summary)
}

fn spawn_job(
    schedule: &Schedule,
    j: usize,
    due: i64,
    tx: mpsc::Sender<Finished>,
    cancel: Arc<AtomicBool>,
) {
    let job = &schedule.jobs[j];
    let (Some(src), Some(dst)) = (schedule.host(&job.src), schedule.host(&job.dst)) else {
        return;
    };
    let test = &schedule.tests[job.test];
    let (config, rr) = (test.spec.config(), test.rr.clone());
    let (src, name) = ((src.host.clone(), src.port), src.name.clone());
    let dst = (dst.host.clone(), dst.port);
    let _ = std::thread::Builder::new()
        .name(format!("lp-monitor-{j}"))
        .spawn(move || {
            let started = unix_ms();
            let (from, to) = ((src.0.as_str(), src.1), (dst.0.as_str(), dst.1));
            let outcome = match &rr {
                Some(request) => client::run_third_party_rr(from, to, request, None, Some(&cancel)),
                None => {
                    client::run_third_party(from, to, &config, None, &mut |_| {}, Some(&cancel))
                }
            }
            .map_err(|e| format!("agent '{name}': {}", e.message));
            let _ = tx.send((j, due, started, outcome));
        });
}

impl Controller<'_> {
    fn db_name(&self) -> String {
        self.store
            .as_ref()
            .map(|s| s.location().describe())
            .unwrap_or_else(|| "unavailable".into())
    }

    /// Opens the archive (at most once a second after a failure).
    fn connect(&mut self) -> bool {
        if self.store.is_some() {
            return true;
        }
        if self
            .last_db_try
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return false;
        }
        self.last_db_try = Some(Instant::now());
        match Store::open(self.options.db.as_deref()).and_then(|mut s| {
            s.monitor_prepare()?;
            Ok(s)
        }) {
            Ok(s) => {
                self.store = Some(s);
                let db = self.db_name();
                (self.log)(json!({"event": "db_connected", "db": db}));
                true
            }
            Err(e) => {
                (self.log)(json!({"event": "db_unavailable", "error": e.to_string()}));
                false
            }
        }
    }

    /// Next run times from the archive and the spool (a spooled result is
    /// newer than the archive's time), and each job's week of throughput.
    fn restore(&mut self) -> Result<BTreeMap<String, i64>, String> {
        let mut stored = BTreeMap::new();
        if self.connect() {
            let since = unix_ms() - BASELINE_MS;
            let store = self.store.as_mut().expect("connected");
            stored = store
                .monitor_next_runs()
                .map_err(|e| e.to_string())?
                .into_iter()
                .collect();
            let latest = store.monitor_latest().map_err(|e| e.to_string())?;
            for (j, job) in self.schedule.jobs.iter().enumerate() {
                let name = &self.schedule.tests[job.test].name;
                let failing = latest
                    .iter()
                    .any(|r| &r.test == name && r.src == job.src && r.dst == job.dst && !r.ok);
                if failing {
                    self.alerts.arm(&self.schedule.job_key(job), "failure");
                }
                let rows = store
                    .monitor_series(name, &job.src, &job.dst, since)
                    .map_err(|e| e.to_string())?;
                self.history[j] = rows
                    .iter()
                    .filter(|r| r.ok)
                    .filter_map(|r| Some((r.started_unix_ms, r.throughput_bps?)))
                    .collect();
            }
        }
        for path in self.spool.pending() {
            let record = Spool::read(&path)?;
            let at = stored
                .entry(record.job.clone())
                .or_insert(record.next_unix_ms);
            *at = (*at).max(record.next_unix_ms);
        }
        Ok(stored)
    }

    fn finished(
        &mut self,
        j: usize,
        started: i64,
        outcome: Result<Value, String>,
        next: i64,
        interrupted: bool,
    ) {
        let job = &self.schedule.jobs[j];
        let test = &self.schedule.tests[job.test];
        let key = self.schedule.job_key(job);
        let result = result_of(&test.name, &job.src, &job.dst, started, &outcome);
        let now = unix_ms();
        let history = &mut self.history[j];
        history.retain(|(t, _)| *t >= now - BASELINE_MS);
        let median = (history.len() >= 3).then(|| median(history.iter().map(|h| h.1).collect()));
        // A test we stopped says nothing about the network: no alert.
        let alerts = if interrupted {
            Vec::new()
        } else {
            self.alerts
                .evaluate(&key, &result, &test.thresholds, median, now)
        };
        if let (true, Some(bps)) = (result.ok, result.throughput_bps) {
            history.push((started, bps));
        }
        self.summary.results += 1;
        self.summary.failures += u64::from(!result.ok);
        self.summary.alerts += alerts.len() as u64;
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(&result, &alerts);
        (self.log)(json!({"event": "result", "job": key, "ok": result.ok,
            "reason": result.reason, "throughput_bps": result.throughput_bps,
            "loss_ratio": result.loss_ratio, "rtt_p99_s": result.rtt_p99_s,
            "started_unix_ms": started, "next_unix_ms": next}));
        for a in &alerts {
            (self.log)(json!({"event": "alert", "job": key, "kind": a.kind, "message": a.message}));
        }
        let record = Record::new(key, next, outcome.ok(), &result, &alerts);
        // Older spooled results go first, so the archive keeps their order.
        self.flush_spool();
        if self.spool.pending().is_empty() && self.write(&record) {
            return;
        }
        match self.spool.write(&record, now) {
            Ok(path) => (self.log)(json!({"event": "spooled", "job": record.job,
                                          "file": path.display().to_string()})),
            Err(e) => (self.log)(json!({"event": "lost", "job": record.job, "error": e})),
        }
        self.set_spooled();
    }

    /// Writes one record; a failure drops the connection (it is reopened).
    fn write(&mut self, record: &Record) -> bool {
        if !self.connect() {
            return false;
        }
        let run = record.report.clone().map(|report| {
            match report.pointer("/test/kind").and_then(Value::as_str) {
                Some("rr") => NewRun::from_rr_report(report),
                _ => NewRun::from_test_report(report),
            }
        });
        let store = self.store.as_mut().expect("connected");
        let written = store.monitor_record(
            run.as_ref(),
            &record.result(),
            &record.alerts(),
            &record.job,
            record.next_unix_ms,
        );
        match written {
            Ok(_) => true,
            Err(e) => {
                (self.log)(json!({"event": "db_error", "error": e.to_string()}));
                self.store = None;
                false
            }
        }
    }

    fn flush_spool(&mut self) {
        let pending = self.spool.pending();
        if pending.is_empty() || !self.connect() {
            return;
        }
        for path in pending {
            let record = match Spool::read(&path) {
                Ok(r) => r,
                Err(e) => {
                    (self.log)(json!({"event": "spool_unreadable", "error": e}));
                    continue;
                }
            };
            if !self.write(&record) {
                break;
            }
            let _ = std::fs::remove_file(&path);
            (self.log)(json!({"event": "unspooled", "job": record.job}));
        }
        self.set_spooled();
    }

    fn set_spooled(&mut self) {
        let n = self.spool.pending().len();
        self.live.lock().unwrap_or_else(|e| e.into_inner()).spooled = n;
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
