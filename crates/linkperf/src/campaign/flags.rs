//! The campaign's flags: what went wrong or fell short in a phase run (failed,
//! missing, short or warning flows, short hosts) and sessions out of line with
//! the others of their phase.

use super::analysis::PhaseResult;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Flag {
    /// "flow_failed", "flow_missing", "flow_short", "flow_warning", "host_short",
    /// "session_outlier".
    pub kind: &'static str,
    pub phase: String,
    pub session: Option<u32>,
    pub subject: String,
    pub message: String,
}

/// Flags for one phase run: failed or missing flows, flows and hosts that
/// received less than was sent by more than `shortfall_percent`.
pub fn phase_flags(p: &PhaseResult, shortfall_percent: f64) -> Vec<Flag> {
    let mut flags = Vec::new();
    let flag = |kind, subject: String, message: String| Flag {
        kind,
        phase: p.name.clone(),
        session: Some(p.session),
        subject,
        message,
    };
    for f in &p.flows {
        let subject = format!("{} -> {}", f.from, f.to);
        for w in &f.warnings {
            flags.push(flag(
                "flow_warning",
                subject.clone(),
                format!("flow {subject}: {w}"),
            ));
        }
        match f.status {
            "failed" => flags.push(flag(
                "flow_failed",
                subject.clone(),
                format!(
                    "flow {subject} failed{}: {}",
                    f.stopped_after_s
                        .map(|s| format!(" after {s:.1} s"))
                        .unwrap_or_default(),
                    f.error.clone().unwrap_or_default()
                ),
            )),
            "missing" => flags.push(flag(
                "flow_missing",
                subject.clone(),
                format!(
                    "flow {subject} did not start: {}",
                    f.error.clone().unwrap_or_default()
                ),
            )),
            _ => {
                for d in f.directions().filter(|d| d.sent.bits_per_second > 0.0) {
                    let short = 100.0 * (d.sent.bits_per_second - d.received.bits_per_second)
                        / d.sent.bits_per_second;
                    if short > shortfall_percent {
                        let subject = format!("{} -> {}", d.sender, d.receiver);
                        flags.push(flag(
                            "flow_short",
                            subject.clone(),
                            format!("flow {subject}: received {short:.1}% less than was sent"),
                        ));
                    }
                }
            }
        }
    }
    for h in &p.hosts {
        if h.shortfall_percent > shortfall_percent {
            flags.push(flag(
                "host_short",
                h.name.clone(),
                format!(
                    "host {} received {:.1}% less than its peers sent ({} of {})",
                    h.name,
                    h.shortfall_percent,
                    linkperf_units::format_rate(h.received_bits_per_second),
                    linkperf_units::format_rate(h.peers_sent_bits_per_second)
                ),
            ));
        }
    }
    flags
}

/// One direction's aggregate of a phase run, when it has that direction.
type PhaseRate = fn(&PhaseResult) -> Option<f64>;

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// Sessions whose aggregate for a phase deviates from the median of the
/// other sessions of that phase by more than `outlier_percent`; the return
/// direction of bidir flows is judged on its own.
pub fn session_outliers(phases: &[PhaseResult], outlier_percent: f64) -> Vec<Flag> {
    let mut flags = Vec::new();
    let mut groups: Vec<(String, Option<std::collections::BTreeMap<String, String>>)> = phases
        .iter()
        .map(|p| (p.name.clone(), p.params.clone()))
        .collect();
    groups.sort();
    groups.dedup();
    let directions: [(&str, PhaseRate); 2] = [
        ("aggregate", |p| Some(p.aggregate.received_bits_per_second)),
        ("reverse aggregate", |p| {
            p.aggregate_reverse
                .as_ref()
                .map(|a| a.received_bits_per_second)
        }),
    ];
    for (name, params) in groups {
        let runs: Vec<&PhaseResult> = phases
            .iter()
            .filter(|p| p.name == name && p.params == params)
            .collect();
        for (what, rate) in directions {
            for r in &runs {
                let Some(mine) = rate(r) else { continue };
                let others = runs
                    .iter()
                    .filter(|o| o.session != r.session)
                    .filter_map(|o| rate(o))
                    .collect();
                let Some(median) = median(others).filter(|m| *m > 0.0) else {
                    continue;
                };
                let dev = 100.0 * (mine - median) / median;
                if dev.abs() > outlier_percent {
                    flags.push(Flag {
                        kind: "session_outlier",
                        phase: name.clone(),
                        session: Some(r.session),
                        subject: format!("session {}", r.session),
                        message: format!(
                            "phase {name}, session {}: {what} {} is {dev:+.1}% from the other sessions' median {}",
                            r.session,
                            linkperf_units::format_rate(mine),
                            linkperf_units::format_rate(median)
                        ),
                    });
                }
            }
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::super::analysis::{
        aggregate, flow_result, hosts, test_outcome, Aggregate, FlowResult,
    };
    use super::*;
    use serde_json::json;

    fn phase_of(flows: Vec<FlowResult>) -> PhaseResult {
        PhaseResult {
            name: "f".into(),
            params: None,
            session: 1,
            started_unix_ms: 0,
            duration_s: 2.0,
            start_spread_ms: None,
            aggregate: aggregate(&flows, 1.0),
            aggregate_reverse: None,
            fairness: None,
            hosts: hosts(&flows),
            flows,
        }
    }

    #[test]
    fn short_flows_and_hosts_are_flagged() {
        let phase = phase_of(vec![
            flow_result(&test_outcome("a1", "b1", 100.0, 100.0, 1_000_000)),
            flow_result(&test_outcome("a2", "b2", 100.0, 80.0, 1_400_000)),
        ]);
        let flags = phase_flags(&phase, 2.0);
        assert!(flags
            .iter()
            .any(|f| f.kind == "host_short" && f.subject == "b2"));
        assert!(flags
            .iter()
            .any(|f| f.kind == "flow_short" && f.subject == "a2 -> b2"));
        assert!(!flags.iter().any(|f| f.subject == "b1"));
    }

    #[test]
    fn a_flows_own_warnings_are_kept_and_flagged() {
        let mut o = test_outcome("a1", "b1", 100.0, 100.0, 1_000_000);
        o.report.as_mut().unwrap()["warnings"] = json!(["the paced sender fell behind"]);
        let flows = vec![
            flow_result(&o),
            flow_result(&test_outcome("a2", "b2", 1.0, 1.0, 0)),
        ];
        assert_eq!(flows[0].warnings, ["the paced sender fell behind"]);
        assert!(flows[1].warnings.is_empty());
        let warned: Vec<_> = phase_flags(&phase_of(flows), 2.0)
            .into_iter()
            .filter(|f| f.kind == "flow_warning")
            .collect();
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert_eq!(warned[0].subject, "a1 -> b1");
        assert_eq!(
            warned[0].message,
            "flow a1 -> b1: the paced sender fell behind"
        );
    }

    #[test]
    fn the_odd_session_out_is_flagged() {
        let mk = |session, rate| PhaseResult {
            name: "forward".into(),
            params: None,
            session,
            started_unix_ms: 0,
            duration_s: 1.0,
            start_spread_ms: None,
            aggregate: Aggregate {
                received_bits_per_second: rate,
                ..Default::default()
            },
            aggregate_reverse: None,
            hosts: vec![],
            flows: vec![],
            fairness: None,
        };
        let phases = vec![mk(0, 600.0), mk(1, 800.0), mk(2, 805.0), mk(3, 798.0)];
        let flags = session_outliers(&phases, 5.0);
        assert_eq!(flags.len(), 1);
        assert_eq!(flags[0].session, Some(0));
    }
}
