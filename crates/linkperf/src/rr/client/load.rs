//! Latency under load (`--load`): probes on an idle link for -t, then while
//! a bulk test of the ordinary client runs on its own thread. It measures
//! through the transaction loops and reports the load's throughput as the
//! bulk client measured it; it never sends bulk data itself.

use super::context::{Extra, Outcome, Run};
use super::control::fail;
use super::flow::Flow;
use super::recorder::{merge, Recorder};
use super::transact::{run_flow, Budget, Pace};
use crate::client::{ClientError, ClientOptions};
use crate::report::Report;
use crate::rr::report::{LoadSummary, RrInterval};
use crate::rr::{stats, LoadPlan};
use linkperf_proto::Protocol;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Latency under load: probes idle for -t, then while a bulk test runs.
pub(super) fn load_mode(
    run: &mut Run,
    load: &LoadPlan,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let mut flow = run.open_flow(plan.request, plan.response)?;
    let mut seq = run.next_seq;
    let mut probes = Probes {
        flow: &mut flow,
        pace: run.pace(),
        seq: &mut seq,
        cancel: run.cancel,
        udp: plan.protocol == Protocol::Udp,
    };
    let mut idle = run.recorder(true);
    idle.phase = Some("idle");
    let idle_seconds = probes.idle(&mut idle, plan.duration, plan.count, on_interval)?;

    let mut warmup = run.recorder(false);
    let mut loaded = run.recorder(true);
    loaded.phase = Some("loaded");
    let (probe_result, load_thread, loaded_seconds) =
        probes.under_load(&load.options, &mut warmup, &mut loaded, on_interval);
    run.next_seq = seq;
    run.warmup += warmup.transactions;
    let seconds = idle_seconds + loaded_seconds;
    probe_result?;
    let report = match load_thread {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(fail(format!("--load: {}", e.message))),
        Err(_) => return Err(fail("--load: the load test panicked")),
    };
    if loaded.transactions == 0 {
        run.warnings
            .push("the load ended before any probe ran under it: give the load a longer -t".into());
    }
    let mut total = run.recorder(false);
    merge(&mut total, &idle);
    merge(&mut total, &loaded);
    Ok((
        total,
        Outcome {
            seconds,
            extra: Extra {
                idle: stats::summarize(&idle.rtt),
                loaded: stats::summarize(&loaded.rtt),
                load: Some(load_summary(load, &report)),
                ..Default::default()
            },
            ..Default::default()
        },
    ))
}

/// The load as its own client measured it.
fn load_summary(load: &LoadPlan, report: &Report) -> LoadSummary {
    LoadSummary {
        args: load.args.clone(),
        protocol: if report.test.config.protocol == Protocol::Udp {
            "udp"
        } else {
            "tcp"
        },
        streams: report.test.config.parallel,
        seconds: report.summary.received.seconds,
        bits_per_second: report.summary.received.bits_per_second,
        retransmits: report.summary.sent.retransmits,
    }
}

/// What the load thread hands back.
type LoadResult = std::thread::Result<Result<Report, ClientError>>;

/// The probe flow and how it is paced, through all phases.
struct Probes<'a> {
    flow: &'a mut Flow,
    pace: Pace,
    seq: &'a mut u64,
    cancel: &'a AtomicBool,
    udp: bool,
}

impl Probes<'_> {
    /// The idle baseline; returns the seconds it took.
    fn idle(
        &mut self,
        rec: &mut Recorder,
        duration: Duration,
        count: Option<u64>,
        on_interval: &mut dyn FnMut(&RrInterval),
    ) -> Result<f64, ClientError> {
        let start = Instant::now();
        rec.start_intervals(start);
        let budget = Budget {
            deadline: Some(start + duration),
            count,
            cancel: self.cancel,
            until: None,
        };
        run_flow(self.flow, rec, self.pace, &budget, self.seq, on_interval)?;
        let end = Instant::now();
        rec.flush(end, self.udp, on_interval);
        Ok((end - start).as_secs_f64())
    }

    /// Runs the load on its own thread while the probes go on: ramp-up into
    /// `warmup`, then under load into `loaded` until the load ends. Returns
    /// the probes' result, the load's, and the seconds measured under load.
    fn under_load(
        &mut self,
        options: &ClientOptions,
        warmup: &mut Recorder,
        loaded: &mut Recorder,
        on_interval: &mut dyn FnMut(&RrInterval),
    ) -> (Result<(), ClientError>, LoadResult, f64) {
        let loaded_flag = AtomicBool::new(false);
        let done_flag = AtomicBool::new(false);
        let stop_load = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let handle = scope.spawn(|| {
                let mut first = |_: &crate::report::IntervalReport| {
                    loaded_flag.store(true, Ordering::Release);
                };
                let r = crate::client::run(options, &mut first, Some(&stop_load));
                done_flag.store(true, Ordering::Release);
                r
            });
            let mut result = self.ramp_up(warmup, &loaded_flag, &done_flag);
            let mut loaded_seconds = 0.0;
            if result.is_ok() && !done_flag.load(Ordering::Acquire) {
                let loaded_start = Instant::now();
                loaded.start_intervals(loaded_start);
                let budget = Budget {
                    deadline: None,
                    count: None,
                    cancel: self.cancel,
                    until: Some(&done_flag),
                };
                result = run_flow(self.flow, loaded, self.pace, &budget, self.seq, on_interval);
                let end = Instant::now();
                loaded.flush(end, self.udp, on_interval);
                loaded_seconds = (end - loaded_start).as_secs_f64();
            }
            if result.is_err() || self.cancel.load(Ordering::Relaxed) {
                stop_load.store(true, Ordering::Release);
            }
            let load = handle.join();
            (result, load, loaded_seconds)
        })
    }

    /// Until the load has run a second (its first interval), probes are
    /// neither idle nor loaded: ramp-up, not measured.
    fn ramp_up(
        &mut self,
        warmup: &mut Recorder,
        loaded_flag: &AtomicBool,
        done_flag: &AtomicBool,
    ) -> Result<(), ClientError> {
        let ramp_start = Instant::now();
        let ramp = Budget {
            deadline: None,
            count: None,
            cancel: self.cancel,
            until: Some(loaded_flag),
        };
        let mut ignore = |_: &RrInterval| {};
        let mut result = Ok(());
        let mut ramp_done = false;
        while !ramp_done {
            // The flag may never come (-i 0): give up waiting after 1.5 s.
            let slice = Budget {
                deadline: Some(Instant::now() + Duration::from_millis(100)),
                ..ramp
            };
            result = run_flow(self.flow, warmup, self.pace, &slice, self.seq, &mut ignore);
            ramp_done = result.is_err()
                || loaded_flag.load(Ordering::Acquire)
                || done_flag.load(Ordering::Acquire)
                || self.cancel.load(Ordering::Relaxed)
                || ramp_start.elapsed() > Duration::from_millis(1500);
        }
        result
    }
}
