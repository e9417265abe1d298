//! Pure analysis of a campaign's measurements: per-flow figures from the
//! relayed reports, per-interval aggregates aligned on common boundaries,
//! per-host sent vs received, and flags for what fell short.

use serde::Serialize;
use serde_json::Value;

/// What the controller collected for one flow of one phase run.
#[derive(Debug, Clone, Default)]
pub struct FlowOutcome {
    pub from: String,
    pub to: String,
    /// "ok", "failed" or "missing".
    pub status: &'static str,
    pub error: Option<String>,
    /// Seconds after the agreed start when a failed flow stopped.
    pub stopped_after_s: Option<f64>,
    /// The test's own direction flags.
    pub reverse: bool,
    pub bidir: bool,
    /// Interval lines relayed while the flow ran (linkperf/1 interval objects).
    pub intervals: Vec<Value>,
    /// The final report (linkperf/1 client document), when the flow completed.
    pub report: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Totals {
    pub bytes: u64,
    pub bits_per_second: f64,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Received {
    pub bytes: u64,
    pub bits_per_second: f64,
    pub loss_percent: Option<f64>,
    pub lost_packets: Option<u64>,
    pub jitter_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    pub from: String,
    pub to: String,
    /// Who sends: `from`, or `to` for reverse flows, or both for bidir.
    pub sender: String,
    pub status: &'static str,
    pub error: Option<String>,
    pub stopped_after_s: Option<f64>,
    pub started_unix_ns: Option<u64>,
    pub sent: Totals,
    pub received: Received,
    pub retransmits: Option<u64>,
    pub rtt_ms: Option<f64>,
    pub cpu_from_percent: Option<f64>,
    pub cpu_to_percent: Option<f64>,
    pub intervals: Vec<IntervalPoint>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct IntervalPoint {
    pub start: f64,
    pub end: f64,
    pub sent_bits_per_second: f64,
    pub received_bits_per_second: f64,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct AggregateInterval {
    pub start: f64,
    pub end: f64,
    pub sent_bits_per_second: f64,
    pub received_bits_per_second: f64,
    /// Flows that reported this interval.
    pub flows: usize,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Aggregate {
    /// Sum over flows of each flow's mean received rate: the phase's mean aggregate.
    pub received_bits_per_second: f64,
    pub sent_bits_per_second: f64,
    pub intervals: Vec<AggregateInterval>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostResult {
    pub name: String,
    pub sent_bits_per_second: f64,
    pub received_bits_per_second: f64,
    /// What the host's peers sent towards it.
    pub peers_sent_bits_per_second: f64,
    /// How much less it received than its peers sent, in percent.
    pub shortfall_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PhaseResult {
    pub name: String,
    /// The campaign sweep point this run belongs to (absent without `vary`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<std::collections::BTreeMap<String, String>>,
    /// Session number, from 1.
    pub session: u32,
    pub started_unix_ms: u64,
    pub duration_s: f64,
    /// Spread of the senders' actual start times (max - min), milliseconds.
    pub start_spread_ms: Option<f64>,
    pub aggregate: Aggregate,
    pub hosts: Vec<HostResult>,
    pub flows: Vec<FlowResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Flag {
    /// "flow_failed", "flow_missing", "flow_short", "host_short", "session_outlier".
    pub kind: &'static str,
    pub phase: String,
    pub session: Option<u32>,
    pub subject: String,
    pub message: String,
}

fn f64_at(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_f64()
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_u64()
}

/// The directions of a flow's report: `summary`, plus `summary_reverse` with bidir.
fn summaries(report: &Value) -> Vec<&Value> {
    ["summary", "summary_reverse"]
        .iter()
        .filter_map(|k| report.get(*k))
        .filter(|v| !v.is_null())
        .collect()
}

fn interval_points(intervals: &[Value]) -> Vec<IntervalPoint> {
    intervals
        .iter()
        .map(|i| {
            let mut p = IntervalPoint {
                start: f64_at(i, &["start"]).unwrap_or(0.0),
                end: f64_at(i, &["end"]).unwrap_or(0.0),
                ..Default::default()
            };
            for key in ["sum", "sum_reverse"] {
                if let Some(s) = i.get(key).filter(|s| !s.is_null()) {
                    p.sent_bits_per_second += f64_at(s, &["sent_bits_per_second"]).unwrap_or(0.0);
                    p.received_bits_per_second +=
                        f64_at(s, &["received_bits_per_second"]).unwrap_or(0.0);
                }
            }
            p
        })
        .collect()
}

pub fn flow_result(o: &FlowOutcome) -> FlowResult {
    let intervals = interval_points(&o.intervals);
    let mut r = FlowResult {
        from: o.from.clone(),
        to: o.to.clone(),
        sender: if o.bidir {
            format!("{} and {}", o.from, o.to)
        } else if o.reverse {
            o.to.clone()
        } else {
            o.from.clone()
        },
        status: o.status,
        error: o.error.clone(),
        stopped_after_s: o.stopped_after_s,
        started_unix_ns: None,
        sent: Totals::default(),
        received: Received::default(),
        retransmits: None,
        rtt_ms: None,
        cpu_from_percent: None,
        cpu_to_percent: None,
        intervals: intervals.clone(),
    };
    match &o.report {
        Some(report) => {
            for s in summaries(report) {
                r.sent.bytes += u64_at(s, &["sent", "bytes"]).unwrap_or(0);
                r.sent.bits_per_second += f64_at(s, &["sent", "bits_per_second"]).unwrap_or(0.0);
                r.received.bytes += u64_at(s, &["received", "bytes"]).unwrap_or(0);
                r.received.bits_per_second +=
                    f64_at(s, &["received", "bits_per_second"]).unwrap_or(0.0);
                if let Some(l) = u64_at(s, &["received", "lost_packets"]) {
                    *r.received.lost_packets.get_or_insert(0) += l;
                }
                if let Some(t) = u64_at(s, &["sent", "retransmits"]) {
                    *r.retransmits.get_or_insert(0) += t;
                }
                r.received.jitter_ms = r
                    .received
                    .jitter_ms
                    .or(f64_at(s, &["received", "jitter_ms"]));
                r.rtt_ms = r.rtt_ms.or(f64_at(s, &["tcp", "rtt_ms", "mean"]));
                // The agent that ran the test is the local end of its report.
                r.cpu_from_percent = f64_at(s, &["cpu", "local", "total_percent"]);
                r.cpu_to_percent = f64_at(s, &["cpu", "remote", "total_percent"]);
                let starts = s
                    .get("streams")
                    .and_then(|v| v.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|st| u64_at(st, &["sender", "started_unix_ns"]));
                for t in starts {
                    r.started_unix_ns = Some(r.started_unix_ns.map_or(t, |m: u64| m.min(t)));
                }
            }
            if let Some(lost) = r.received.lost_packets {
                let got: u64 = summaries(report)
                    .iter()
                    .filter_map(|s| u64_at(s, &["received", "packets"]))
                    .sum();
                let expected = got + lost;
                r.received.loss_percent = Some(if expected > 0 {
                    100.0 * lost as f64 / expected as f64
                } else {
                    0.0
                });
            }
        }
        None => {
            // A failed flow: what its intervals showed before it stopped.
            let secs: f64 = intervals.iter().map(|p| p.end - p.start).sum();
            if secs > 0.0 {
                let bits_sent: f64 = intervals
                    .iter()
                    .map(|p| p.sent_bits_per_second * (p.end - p.start))
                    .sum();
                let bits_recv: f64 = intervals
                    .iter()
                    .map(|p| p.received_bits_per_second * (p.end - p.start))
                    .sum();
                r.sent = Totals {
                    bytes: (bits_sent / 8.0) as u64,
                    bits_per_second: bits_sent / secs,
                };
                r.received.bytes = (bits_recv / 8.0) as u64;
                r.received.bits_per_second = bits_recv / secs;
            }
        }
    }
    r
}

/// Per-interval sums over flows, aligned on the common interval grid (every
/// flow's intervals count from the same agreed start instant).
pub fn aggregate(flows: &[FlowResult], interval_s: f64) -> Aggregate {
    let mut slots: Vec<AggregateInterval> = Vec::new();
    for f in flows {
        for p in &f.intervals {
            let k = (p.start / interval_s).round().max(0.0) as usize;
            if slots.len() <= k {
                slots.resize_with(k + 1, Default::default);
            }
            let slot = &mut slots[k];
            slot.start = k as f64 * interval_s;
            slot.end = slot.end.max(p.end);
            slot.sent_bits_per_second += p.sent_bits_per_second;
            slot.received_bits_per_second += p.received_bits_per_second;
            slot.flows += 1;
        }
    }
    Aggregate {
        received_bits_per_second: flows.iter().map(|f| f.received.bits_per_second).sum(),
        sent_bits_per_second: flows.iter().map(|f| f.sent.bits_per_second).sum(),
        intervals: slots.into_iter().filter(|s| s.flows > 0).collect(),
    }
}

/// Each host's sent and received rates, and how much less it received than its peers sent.
pub fn hosts(flows: &[FlowResult], outcomes: &[FlowOutcome]) -> Vec<HostResult> {
    let mut names: Vec<String> = outcomes
        .iter()
        .flat_map(|o| [o.from.clone(), o.to.clone()])
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let mut h = HostResult {
                name: name.clone(),
                sent_bits_per_second: 0.0,
                received_bits_per_second: 0.0,
                peers_sent_bits_per_second: 0.0,
                shortfall_percent: 0.0,
            };
            for (f, o) in flows.iter().zip(outcomes) {
                if o.bidir {
                    continue; // both ends send and receive: no single direction to charge
                }
                let (sender, receiver) = if o.reverse {
                    (&o.to, &o.from)
                } else {
                    (&o.from, &o.to)
                };
                if *sender == name {
                    h.sent_bits_per_second += f.sent.bits_per_second;
                }
                if *receiver == name {
                    h.received_bits_per_second += f.received.bits_per_second;
                    h.peers_sent_bits_per_second += f.sent.bits_per_second;
                }
            }
            if h.peers_sent_bits_per_second > 0.0 {
                h.shortfall_percent = 100.0
                    * (h.peers_sent_bits_per_second - h.received_bits_per_second)
                    / h.peers_sent_bits_per_second;
            }
            h
        })
        .collect()
}

pub fn start_spread_ms(flows: &[FlowResult]) -> Option<f64> {
    let starts: Vec<u64> = flows.iter().filter_map(|f| f.started_unix_ns).collect();
    let (min, max) = (starts.iter().min()?, starts.iter().max()?);
    Some((max - min) as f64 / 1e6)
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
                if f.sent.bits_per_second > 0.0 {
                    let short = 100.0 * (f.sent.bits_per_second - f.received.bits_per_second)
                        / f.sent.bits_per_second;
                    if short > shortfall_percent {
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

/// Sessions whose aggregate for a phase deviates from the median of the
/// other sessions of that phase by more than `outlier_percent`.
pub fn session_outliers(phases: &[PhaseResult], outlier_percent: f64) -> Vec<Flag> {
    let mut flags = Vec::new();
    let mut groups: Vec<(String, Option<std::collections::BTreeMap<String, String>>)> = phases
        .iter()
        .map(|p| (p.name.clone(), p.params.clone()))
        .collect();
    groups.sort();
    groups.dedup();
    for (name, params) in groups {
        let runs: Vec<&PhaseResult> = phases
            .iter()
            .filter(|p| p.name == name && p.params == params)
            .collect();
        if runs.len() < 2 {
            continue;
        }
        for r in &runs {
            let mut others: Vec<f64> = runs
                .iter()
                .filter(|o| o.session != r.session)
                .map(|o| o.aggregate.received_bits_per_second)
                .collect();
            others.sort_by(f64::total_cmp);
            let median = if others.len() % 2 == 1 {
                others[others.len() / 2]
            } else {
                (others[others.len() / 2 - 1] + others[others.len() / 2]) / 2.0
            };
            if median <= 0.0 {
                continue;
            }
            let dev = 100.0 * (r.aggregate.received_bits_per_second - median) / median;
            if dev.abs() > outlier_percent {
                flags.push(Flag {
                    kind: "session_outlier",
                    phase: name.clone(),
                    session: Some(r.session),
                    subject: format!("session {}", r.session),
                    message: format!(
                        "phase {name}, session {}: aggregate {} is {dev:+.1}% from the other sessions' median {}",
                        r.session,
                        linkperf_units::format_rate(r.aggregate.received_bits_per_second),
                        linkperf_units::format_rate(median)
                    ),
                });
            }
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(from: &str, to: &str, sent: f64, received: f64, start_ns: u64) -> FlowOutcome {
        FlowOutcome {
            from: from.into(),
            to: to.into(),
            status: "ok",
            intervals: vec![
                json!({"start": 0.0, "end": 1.0, "sum": {"sent_bits_per_second": sent, "received_bits_per_second": received}}),
                json!({"start": 1.0, "end": 2.0, "sum": {"sent_bits_per_second": sent, "received_bits_per_second": received}}),
            ],
            report: Some(json!({"summary": {
                "sent": {"bytes": 100, "bits_per_second": sent},
                "received": {"bytes": 90, "bits_per_second": received, "packets": 90, "lost_packets": 10},
                "streams": [{"sender": {"started_unix_ns": start_ns}}]
            }})),
            ..Default::default()
        }
    }

    #[test]
    fn aggregates_hosts_spread_and_flags() {
        let outcomes = vec![
            outcome("a1", "b1", 100.0, 100.0, 1_000_000),
            outcome("a2", "b2", 100.0, 80.0, 1_400_000),
        ];
        let flows: Vec<FlowResult> = outcomes.iter().map(flow_result).collect();
        assert_eq!(flows[1].received.loss_percent, Some(10.0));
        let agg = aggregate(&flows, 1.0);
        assert_eq!(agg.intervals.len(), 2);
        assert_eq!(agg.intervals[0].received_bits_per_second, 180.0);
        assert_eq!(agg.intervals[1].flows, 2);
        assert_eq!(agg.received_bits_per_second, 180.0);
        assert_eq!(start_spread_ms(&flows), Some(0.4));
        let hosts = hosts(&flows, &outcomes);
        let b2 = hosts.iter().find(|h| h.name == "b2").unwrap();
        assert!((b2.shortfall_percent - 20.0).abs() < 1e-9);
        let phase = PhaseResult {
            name: "f".into(),
            params: None,
            session: 0,
            started_unix_ms: 0,
            duration_s: 2.0,
            start_spread_ms: None,
            aggregate: agg,
            hosts,
            flows,
        };
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
            hosts: vec![],
            flows: vec![],
        };
        let phases = vec![mk(0, 600.0), mk(1, 800.0), mk(2, 805.0), mk(3, 798.0)];
        let flags = session_outliers(&phases, 5.0);
        assert_eq!(flags.len(), 1);
        assert_eq!(flags[0].session, Some(0));
    }
}
