//! Turns what a mode measured into the `RrReport`: the summary, the rate
//! check, one-way delays and the test description. It measures nothing and
//! talks to no socket.

use super::context::{Outcome, Run};
use super::control::fail;
use super::recorder::Recorder;
use super::transact::auto_timeout;
use crate::client::ClientError;
use crate::rr::report::{
    OneWay, RateCheck, RrReport, RrStart, RrSummary, RrTestInfo, ServerCounts, SignedStats,
};
use crate::rr::stats::{self, Percentiles};
use crate::rr::{Mode, Plan};
use linkperf_proto::Protocol;

/// The report of a finished session.
pub(super) fn report(
    run: Run,
    start: RrStart,
    server_counts: ServerCounts,
    interrupted: bool,
    main: Recorder,
    mut outcome: Outcome,
) -> Result<RrReport, ClientError> {
    let plan = run.plan;
    let rtt = stats::summarize(&main.rtt).ok_or_else(|| {
        fail(match plan.protocol {
            Protocol::Udp => format!(
                "no transaction completed: all {} requests went unanswered; is UDP to {} blocked?",
                main.attempted,
                run.server.ip()
            ),
            Protocol::Tcp => "no transaction completed".to_string(),
        })
    })?;
    let mut errors = Vec::new();
    let rate = rate_check(plan, &main, outcome.seconds, &rtt, interrupted, &mut errors);
    let one_way_ms = if run.owd {
        match (main.forward.summary(), main.reverse.summary()) {
            (Some(f), Some(r)) => Some(OneWay {
                clock: start.clock,
                forward_ms: signed(f),
                reverse_ms: signed(r),
            }),
            _ => None,
        }
    } else {
        None
    };
    let summary = summary(
        &run,
        &main,
        &mut outcome,
        server_counts,
        rtt,
        rate,
        one_way_ms,
    );
    let mut intervals = main.intervals.clone();
    intervals.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok(RrReport {
        schema: crate::report::SCHEMA,
        software: crate::report::SOFTWARE.into(),
        test: test_info(plan),
        start,
        intervals,
        summary,
        histogram: stats::buckets(&main.rtt),
        sizes: outcome.sizes,
        fit: outcome.fit,
        warnings: run.warnings,
        errors,
        interrupted,
    })
}

/// Whether `--rate` was reached; an error when a mode that paces to it fell
/// short (not under `--cold` or `--load`, where it is the probe rate).
fn rate_check(
    plan: &Plan,
    main: &Recorder,
    seconds: f64,
    rtt: &Percentiles,
    interrupted: bool,
    errors: &mut Vec<String>,
) -> Option<RateCheck> {
    match (plan.rate, &plan.mode) {
        (Some(target), Mode::Rr | Mode::Connect | Mode::Sizes { .. }) => {
            let achieved = main.attempted as f64 / seconds.max(1e-9);
            let reached = achieved >= 0.95 * target;
            if !reached && !interrupted {
                errors.push(format!(
                    "rate {} transactions/s not reached: achieved {:.0}/s ({} in flight at a mean RTT of {:.3} ms allows about {:.0}/s; raise --burst)",
                    trim_float(target),
                    achieved,
                    plan.burst,
                    rtt.mean,
                    plan.burst as f64 * 1e3 / rtt.mean.max(1e-6)
                ));
            }
            Some(RateCheck {
                target_per_second: target,
                achieved_per_second: achieved,
                reached,
            })
        }
        (Some(target), _) => Some(RateCheck {
            target_per_second: target,
            achieved_per_second: main.attempted as f64 / seconds.max(1e-9),
            reached: true,
        }),
        _ => None,
    }
}

/// The summary of the measured part (takes the mode's extra distributions).
fn summary(
    run: &Run,
    main: &Recorder,
    outcome: &mut Outcome,
    server: ServerCounts,
    rtt: Percentiles,
    rate: Option<RateCheck>,
    one_way_ms: Option<OneWay>,
) -> RrSummary {
    let plan = run.plan;
    let udp = plan.protocol == Protocol::Udp;
    let seconds = outcome.seconds;
    let extra = std::mem::take(&mut outcome.extra);
    RrSummary {
        transactions: main.transactions,
        attempted: main.attempted,
        warmup: run.warmup,
        seconds,
        transactions_per_second: main.transactions as f64 / seconds.max(1e-9),
        server: Some(server),
        rtt_ms: rtt,
        lost: udp.then_some(main.lost),
        loss_percent: udp.then(|| {
            if main.attempted > 0 {
                main.lost as f64 * 100.0 / main.attempted as f64
            } else {
                0.0
            }
        }),
        late: udp.then_some(main.late),
        timeout_ms: udp.then(|| {
            plan.timeout
                .or(outcome.timeout)
                .unwrap_or_else(|| auto_timeout(main.max_rtt))
                .as_secs_f64()
                * 1e3
        }),
        rate,
        connect_ms: extra.connect,
        transaction_ms: extra.transaction,
        first_rtt_ms: extra.first,
        second_rtt_ms: extra.second,
        first_minus_second_ms: extra.difference,
        idle_rtt_ms: extra.idle,
        loaded_rtt_ms: extra.loaded,
        load: extra.load,
        one_way_ms,
    }
}

/// The test as planned, for the report.
fn test_info(plan: &Plan) -> RrTestInfo {
    RrTestInfo {
        kind: "rr",
        server: plan.host.clone(),
        port: plan.port,
        protocol: if plan.protocol == Protocol::Udp {
            "udp"
        } else {
            "tcp"
        },
        mode: plan.mode.name(),
        request: plan.request,
        response: plan.response,
        burst: plan.burst,
        rate_per_second: plan.rate,
        duration_s: plan.count.is_none().then_some(plan.duration.as_secs_f64()),
        count: plan.count,
        interval_s: plan.interval.map_or(0.0, |d| d.as_secs_f64()),
        timeout_ms: plan.timeout.map(|t| t.as_secs_f64() * 1e3),
        idle_s: match plan.mode {
            Mode::Cold { idle } => Some(idle.as_secs_f64()),
            _ => None,
        },
        sizes: match &plan.mode {
            Mode::Sizes { sizes, .. } => Some(sizes.clone()),
            _ => None,
        },
        load: match &plan.mode {
            Mode::Load(l) => Some(l.args.clone()),
            _ => None,
        },
    }
}

fn signed(s: (u64, f64, f64, f64, f64, f64)) -> SignedStats {
    SignedStats {
        count: s.0,
        min: s.1,
        mean: s.2,
        p50: s.3,
        p99: s.4,
        max: s.5,
    }
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}
