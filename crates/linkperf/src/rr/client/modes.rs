//! The measuring modes on persistent flows or fresh connections: plain
//! request/response, connection set-up (TCP_CRR), first packet after idle
//! and RTT against size. Latency under load is in `load`. They report what
//! they measured in an `Outcome` and never format it.

use super::context::{Extra, Outcome, Run};
use super::control::{fail, join_bytes, tcp_connect};
use super::flow::Flow;
use super::recorder::{merge, Recorder};
use super::transact::{run_flow, single, Budget, AUTO_TIMEOUT_MAX, MAX_PACING_DEBT, TCP_STALL};
use crate::client::ClientError;
use crate::rr::report::{Difference, RrInterval, SizePoint};
use crate::rr::stats;
use linkperf_proto::rr;
use linkperf_proto::Protocol;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Transactions run before each --sizes step and not counted.
const SIZE_WARMUP: u64 = 10;

/// Plain request/response on one flow.
pub(super) fn plain(
    run: &mut Run,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(Recorder, Outcome), ClientError> {
    let mut flow = run.open_flow(run.plan.request, run.plan.response)?;
    let mut rec = run.recorder(true);
    let start = Instant::now();
    rec.start_intervals(start);
    let budget = run.budget(start);
    let mut seq = run.next_seq;
    run_flow(
        &mut flow,
        &mut rec,
        run.pace(),
        &budget,
        &mut seq,
        on_interval,
    )?;
    run.next_seq = seq;
    let end = Instant::now();
    rec.flush(end, run.plan.protocol == Protocol::Udp, on_interval);
    Ok((
        rec,
        Outcome {
            seconds: (end - start).as_secs_f64(),
            ..Default::default()
        },
    ))
}

/// TCP_CRR: connect + request/response + close per transaction.
pub(super) fn connect_mode(
    run: &mut Run,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let join = {
        let mut j = join_bytes(run.cookie, plan.request, plan.response);
        j.extend(std::iter::repeat_n(0u8, plan.request as usize));
        j
    };
    let mut response = vec![0u8; plan.response as usize];
    let stall = plan.timeout.unwrap_or(TCP_STALL);
    let mut rec = run.recorder(true);
    let mut connect_h = stats::new_histogram();
    let mut total_h = stats::new_histogram();
    let start = Instant::now();
    rec.start_intervals(start);
    let budget = run.budget(start);
    let gap = plan.rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let mut next_send = start;
    let mut now = start;
    while !budget.over(now, rec.attempted) {
        if let Some(gap) = gap {
            if let Some(wait) = next_send.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            next_send += gap;
            if next_send + MAX_PACING_DEBT < Instant::now() {
                next_send = Instant::now();
            }
        }
        rec.attempted += 1;
        let t_start = Instant::now();
        let mut stream = tcp_connect(run.server, plan.bind, stall)?;
        let t_connected = Instant::now();
        stream.set_read_timeout(Some(stall)).ok();
        stream
            .write_all(&join)
            .map_err(|e| fail(format!("sending a request: {e}")))?;
        stream.read_exact(&mut response).map_err(|e| {
            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                fail(format!(
                    "the server stopped answering: no response within {} s",
                    stall.as_secs_f64()
                ))
            } else {
                fail(format!("waiting for a response: {e}"))
            }
        })?;
        let t_answered = Instant::now();
        drop(stream);
        now = Instant::now();
        stats::record(
            &mut connect_h,
            t_connected.duration_since(t_start).as_nanos() as u64,
        );
        stats::record(&mut total_h, now.duration_since(t_start).as_nanos() as u64);
        rec.record(t_connected, t_answered, rr::parse_tcp_stamp(&response));
        rec.tick(now, false, on_interval);
    }
    let end = Instant::now();
    rec.flush(end, false, on_interval);
    Ok((
        rec,
        Outcome {
            seconds: (end - start).as_secs_f64(),
            extra: Extra {
                connect: stats::summarize(&connect_h),
                transaction: stats::summarize(&total_h),
                ..Default::default()
            },
            ..Default::default()
        },
    ))
}

/// First-packet latency: idle, then two probes back to back, per round.
pub(super) fn cold(run: &mut Run, idle: Duration) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let rounds = plan.count.unwrap_or(crate::rr::DEFAULT_COLD_ROUNDS);
    let mut flow = run.open_flow(plan.request, plan.response)?;
    let mut rec = run.recorder(false);
    let mut first_h = stats::new_histogram();
    let mut second_h = stats::new_histogram();
    let mut differences = Vec::new();
    let udp = plan.protocol == Protocol::Udp;
    let timeout = plan
        .timeout
        .unwrap_or(if udp { AUTO_TIMEOUT_MAX } else { TCP_STALL });
    let start = Instant::now();
    'rounds: for _ in 0..rounds {
        // Sleep in slices so Ctrl-C is noticed.
        let wake = Instant::now() + idle;
        while let Some(left) = wake.checked_duration_since(Instant::now()) {
            if run.cancel.load(Ordering::Relaxed) {
                break 'rounds;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
        let mut rtts = [None, None];
        for (k, slot) in rtts.iter_mut().enumerate() {
            let seq = run.next_seq;
            run.next_seq += 1;
            rec.attempted += 1;
            match single(&mut flow, seq, timeout)? {
                Some((sent, got, stamp)) => {
                    rec.record(sent, got, stamp);
                    let ns = got.duration_since(sent).as_nanos() as u64;
                    stats::record(if k == 0 { &mut first_h } else { &mut second_h }, ns);
                    *slot = Some(ns as f64 / 1e6);
                }
                None => rec.lose(),
            }
        }
        if let [Some(a), Some(b)] = rtts {
            differences.push(a - b);
        }
    }
    let difference = difference(&differences);
    Ok((
        rec,
        Outcome {
            seconds: start.elapsed().as_secs_f64(),
            timeout: Some(timeout),
            extra: Extra {
                first: stats::summarize(&first_h),
                second: stats::summarize(&second_h),
                difference,
                ..Default::default()
            },
            ..Default::default()
        },
    ))
}

/// First minus second RTT of the rounds where both came back.
fn difference(differences: &[f64]) -> Option<Difference> {
    (!differences.is_empty()).then(|| {
        let mut sorted = differences.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let p50 = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Difference {
            count: n as u64,
            mean: sorted.iter().sum::<f64>() / n as f64,
            p50,
            min: sorted[0],
            max: sorted[n - 1],
        }
    })
}

/// RTT against message size, with a least-squares line through the medians.
pub(super) fn sizes_mode(
    run: &mut Run,
    sizes: &[u32],
    echo: bool,
) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let mut total = run.recorder(false);
    let mut points = Vec::new();
    let per_size = plan.duration.div_f64(sizes.len() as f64);
    let mut udp_flow: Option<Flow> = None;
    let mut seconds = 0.0;
    for &size in sizes {
        if run.cancel.load(Ordering::Relaxed) {
            break;
        }
        let (request, response) = (size, if echo { size } else { plan.response });
        let mut tcp_flow;
        let flow = match plan.protocol {
            Protocol::Udp => {
                if udp_flow.is_none() {
                    udp_flow = Some(run.open_flow(request, response)?);
                }
                let f = udp_flow.as_mut().expect("opened above");
                f.set_sizes(request, response);
                f
            }
            Protocol::Tcp => {
                tcp_flow = run.open_flow(request, response)?;
                &mut tcp_flow
            }
        };
        let (rec, step_seconds) = size_step(run, flow, per_size)?;
        seconds += step_seconds;
        if let Some(p) = stats::summarize(&rec.rtt) {
            points.push(SizePoint {
                size,
                request,
                response,
                transactions: rec.transactions,
                lost: (plan.protocol == Protocol::Udp).then_some(rec.lost),
                rtt_ms: p,
            });
        } else {
            run.warnings.push(format!(
                "size {size}: no transaction completed; left out of the fit"
            ));
        }
        merge(&mut total, &rec);
    }
    let xy: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.size as f64, p.rtt_ms.p50))
        .collect();
    let fit = stats::least_squares(&xy, if echo { 2.0 } else { 1.0 }, "p50");
    Ok((
        total,
        Outcome {
            seconds,
            sizes: Some(points),
            fit,
            ..Default::default()
        },
    ))
}

/// One `--sizes` step on `flow`: a few transactions not counted, then the
/// measured ones for `per_size` (or -n); returns those and the seconds taken.
fn size_step(
    run: &mut Run,
    flow: &mut Flow,
    per_size: Duration,
) -> Result<(Recorder, f64), ClientError> {
    let plan = run.plan;
    let mut ignore = |_: &RrInterval| {};
    let mut seq = run.next_seq;
    let mut warm = run.recorder(false);
    let warm_budget = Budget {
        deadline: None,
        count: Some(SIZE_WARMUP),
        cancel: run.cancel,
        until: None,
    };
    run_flow(
        flow,
        &mut warm,
        run.pace(),
        &warm_budget,
        &mut seq,
        &mut ignore,
    )?;
    run.warmup += warm.transactions;
    let mut rec = run.recorder(false);
    rec.max_rtt = warm.max_rtt;
    let started = Instant::now();
    let budget = Budget {
        deadline: plan.count.is_none().then(|| started + per_size),
        count: plan.count,
        cancel: run.cancel,
        until: None,
    };
    run_flow(flow, &mut rec, run.pace(), &budget, &mut seq, &mut ignore)?;
    let seconds = started.elapsed().as_secs_f64();
    run.next_seq = seq;
    Ok((rec, seconds))
}
