//! The client side of `linkperf rr`: one session from greeting to final
//! count. It opens the control connection, settles which clock the one-way
//! delays may use, runs the mode asked for and hands the measurements to
//! `assemble`. The transaction loops, the modes and the report building
//! live in the modules below; this one only sequences them.
//!
//! Every RTT is measured with the monotonic clock between the send and the
//! receive system calls, so it needs no agreement between clocks.

mod assemble;
mod context;
mod control;
mod flow;
mod load;
mod modes;
mod recorder;
mod transact;

use super::report::{RrInterval, RrReport, RrStart};
use super::{Mode, Plan};
use crate::client::{resolve, ClientError};
use context::{Outcome, Run};
use control::{Control, Welcome};
use recorder::Recorder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn wall_ns_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Runs the plan against the server and builds the report.
pub fn run(
    plan: &Plan,
    on_interval: &mut dyn FnMut(&RrInterval),
    cancel: &AtomicBool,
) -> Result<RrReport, ClientError> {
    let server = resolve(&plan.host, plan.port, plan.family)?;
    let (mut control, welcome, local) = Control::open(server, plan)?;
    let (clock, clock_reason) = clock(&welcome, plan);
    linkperf_engine::sockopt::tighten_timer_slack();
    let t0 = Instant::now();
    let wall0_ns = wall_ns_now();
    let mut run = Run {
        plan,
        server,
        cookie: welcome.cookie,
        udp_port: welcome.udp_port,
        t0,
        wall0_ns,
        owd: clock != "independent",
        cancel,
        next_seq: 0,
        warmup: 0,
        warnings: Vec::new(),
    };
    let (main, outcome) = measure(&mut run, on_interval)?;
    let interrupted = cancel.load(Ordering::Relaxed);
    let server_counts = control.finish(server)?;
    drop(control);
    let start = RrStart {
        timestamp_unix_ms: wall0_ns / 1_000_000,
        local: local.to_string(),
        remote: server.to_string(),
        remote_software: welcome.software,
        clock,
        clock_reason,
    };
    assemble::report(run, start, server_counts, interrupted, main, outcome)
}

/// Runs the mode the plan asks for.
fn measure(
    run: &mut Run,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    match &plan.mode {
        Mode::Rr => modes::plain(run, on_interval),
        Mode::Connect => modes::connect_mode(run, on_interval),
        Mode::Cold { idle } => modes::cold(run, *idle),
        Mode::Sizes { sizes, echo } => modes::sizes_mode(run, sizes, *echo),
        Mode::Load(load) => load::load_mode(run, load, on_interval),
    }
}

/// Which wall clock one-way delays may rest on, and why.
fn clock(welcome: &Welcome, plan: &Plan) -> (&'static str, String) {
    let same_kernel = welcome.boot_id.is_some() && welcome.boot_id == super::server::boot_id();
    if same_kernel {
        (
            "shared",
            "client and server run on one kernel (same host or its network namespaces): one wall clock".to_string(),
        )
    } else if plan.clock_sync {
        (
            "synchronised",
            "--clock-sync: the user states both clocks are synchronised (PTP/NTP)".to_string(),
        )
    } else {
        (
            "independent",
            "client and server clocks are independent: RTT only (use --clock-sync if they are synchronised)".to_string(),
        )
    }
}
