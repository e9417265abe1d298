//! Running a campaign: check the agents, then for each session and phase
//! start every flow at one agreed instant through its `from` agent
//! (third-party mode), collect the relayed intervals and reports, and keep
//! whatever was measured when a flow or an agent fails.

use super::analysis::{self, FlowOutcome, PhaseResult};
use super::plan::{Agent, Campaign, Flow, Phase};
use crate::client;
use linkperf_proto::Direction;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Connects to an agent and exchanges greetings: it is up and speaks our protocol.
pub fn probe(agent: &Agent) -> Result<(), String> {
    client::greet(&agent.host, agent.port).map_err(|e| e.message)
}

/// What the controller sees while a phase runs.
pub enum Progress {
    /// A flow relayed an interval line.
    Interval(Value),
}

/// Runs one phase of one session. `unreachable` names agents to skip
/// (their flows are marked missing). `on_progress` sees live intervals.
pub fn run_phase(
    campaign: &Campaign,
    phase: &Phase,
    session: u32,
    unreachable: &[String],
    cancel: &Arc<AtomicBool>,
    on_progress: &mut dyn FnMut(&Progress),
) -> PhaseResult {
    let start_at = unix_ms() + (campaign.start_delay_s * 1000.0) as u64;
    let (tx, rx) = mpsc::channel::<(usize, Result<Value, String>, Option<Value>)>();
    let mut outcomes: Vec<FlowOutcome> = phase
        .flows
        .iter()
        .map(|f| FlowOutcome {
            from: f.from.clone(),
            to: f.to.clone(),
            status: "ok",
            reverse: f.spec.direction == Direction::Reverse,
            bidir: f.spec.direction == Direction::Bidir,
            start_s: f.start_s,
            ..Default::default()
        })
        .collect();
    let mut running = 0;
    for (index, flow) in phase.flows.iter().enumerate() {
        if let Some(missing) = [&flow.from, &flow.to]
            .into_iter()
            .find(|n| unreachable.contains(n))
        {
            outcomes[index].status = "missing";
            outcomes[index].error = Some(format!("agent '{missing}' was unreachable at the start"));
            continue;
        }
        let (Some(from), Some(to)) = (campaign.agent(&flow.from), campaign.agent(&flow.to)) else {
            continue;
        };
        running += 1;
        spawn_flow(
            index,
            flow,
            from.clone(),
            to.clone(),
            start_at,
            tx.clone(),
            cancel.clone(),
        );
    }
    drop(tx);
    while running > 0 {
        match rx.recv() {
            Ok((index, Ok(report), None)) => {
                let o = &mut outcomes[index];
                // A test that lost its peer still reports (what the agent
                // measured is kept), but the flow did not run its course.
                if let Some(why) = report_failure(&report, &o.to) {
                    o.status = "failed";
                    o.error = Some(why);
                    o.stopped_after_s = Some(stopped_after_s(start_at));
                }
                o.report = Some(report);
                running -= 1;
            }
            Ok((index, Err(why), None)) => {
                let o = &mut outcomes[index];
                o.status = "failed";
                o.error = Some(why);
                o.stopped_after_s = Some(stopped_after_s(start_at));
                running -= 1;
            }
            Ok((index, _, Some(interval))) => {
                on_progress(&Progress::Interval(interval.clone()));
                outcomes[index].intervals.push(interval);
            }
            Err(_) => break,
        }
    }
    let flows: Vec<_> = outcomes.iter().map(analysis::flow_result).collect();
    let aggregate = analysis::aggregate(&flows, campaign.interval_s);
    let aggregate_reverse = analysis::aggregate_reverse(&flows, campaign.interval_s);
    let hosts = analysis::hosts(&flows);
    let period = phase
        .flows
        .iter()
        .filter_map(|f| f.config().sample_s)
        .reduce(f64::min);
    PhaseResult {
        name: phase.name.clone(),
        params: None,
        session,
        started_unix_ms: start_at,
        duration_s: phase.duration_s,
        start_spread_ms: analysis::start_spread_ms(&flows),
        aggregate,
        aggregate_reverse,
        hosts,
        flows,
        fairness: super::fairness::after_join(&outcomes, period),
    }
}

/// Seconds since the agreed start (Unix ms), when a flow is found failed.
fn stopped_after_s(start_at: u64) -> f64 {
    (unix_ms() as f64 - start_at as f64).max(0.0) / 1000.0
}

/// Why a flow whose agent sent back a report failed anyway: the report's
/// errors (its peer `to` went away mid-test, a stream failed); `None` when
/// it ran its course.
fn report_failure(report: &Value, to: &str) -> Option<String> {
    let errors: Vec<&str> = report
        .get("errors")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    (!errors.is_empty()).then(|| {
        format!(
            "the test towards agent '{to}' ended with errors: {}",
            errors.join("; ")
        )
    })
}

type FlowMessage = (usize, Result<Value, String>, Option<Value>);

fn spawn_flow(
    index: usize,
    flow: &Flow,
    from: Agent,
    to: Agent,
    start_at: u64,
    tx: mpsc::Sender<FlowMessage>,
    cancel: Arc<AtomicBool>,
) {
    let mut spec = flow.spec.clone();
    (spec.host, spec.port) = (to.host.clone(), to.port);
    spec.start_at = Some(start_at + (flow.start_s * 1000.0).round() as u64);
    let config = spec.config();
    let spawned = std::thread::Builder::new()
        .name(format!("lp-flow-{index}"))
        .spawn(move || {
            let interval_tx = tx.clone();
            let mut on_interval = |v: &Value| {
                let _ = interval_tx.send((index, Ok(Value::Null), Some(v.clone())));
            };
            let result = client::run_third_party(
                (&from.host, from.port),
                (&spec.host, spec.port),
                &config,
                None,
                &mut on_interval,
                Some(&cancel),
            )
            .map_err(|e| format!("agent '{}': {}", from.name, e.message));
            let _ = tx.send((index, result, None));
        });
    if spawned.is_err() {
        // Counted as failed by the caller when the channel closes early.
    }
}

/// Waits `pause`, returning early when cancelled.
pub fn pause(seconds: f64, cancel: &AtomicBool) {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < until && !cancel.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_report_with_errors_fails_its_flow_and_names_the_peer() {
        let lost = json!({"errors": ["the server went away mid-test: connection reset"]});
        let why = report_failure(&lost, "b2").expect("a lost receiver fails the flow");
        assert!(why.contains("'b2'") && why.contains("went away"), "{why}");
        assert_eq!(report_failure(&json!({"errors": []}), "b2"), None);
    }
}
