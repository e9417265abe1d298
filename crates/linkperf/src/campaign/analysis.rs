//! Pure analysis of a campaign's measurements: per-flow figures from the
//! relayed reports, per-interval aggregates aligned on common boundaries,
//! per-host sent vs received (the flags they raise are in `flags`).

use linkperf_proto::results::{EgressDrops, IngressDrops};
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
    /// Seconds after the phase's start at which the flow started (`start`).
    pub start_s: f64,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Totals {
    pub bytes: u64,
    pub bits_per_second: f64,
    /// UDP: datagrams the sending host's interface queue refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_drops: Option<u64>,
    /// UDP: what the sending end's egress interface dropped (qdisc, driver).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<EgressDrops>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Received {
    pub bytes: u64,
    pub bits_per_second: f64,
    pub loss_percent: Option<f64>,
    pub lost_packets: Option<u64>,
    pub jitter_ms: Option<f64>,
    /// UDP: datagrams the receiving socket had no room for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket_drops: Option<u64>,
    /// UDP: what the receiving end's ingress interface and host backlog dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressDrops>,
}

/// One direction of a flow: who sent, who received, and how much.
#[derive(Debug, Clone, Serialize, Default)]
pub struct DirectionResult {
    pub sender: String,
    pub receiver: String,
    pub sent: Totals,
    pub received: Received,
    pub retransmits: Option<u64>,
    pub rtt_ms: Option<f64>,
    pub intervals: Vec<IntervalPoint>,
    /// The model's prediction (a campaign in a testbed; see `predict`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<FlowPrediction>,
}

/// A direction's prediction, as the campaign output shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowPrediction {
    /// Payload bit/s: the flow's own bound, or its fair share of a shared
    /// bottleneck when that is lower.
    pub bits_per_second: f64,
    /// The bound that sets it (the model's name), or "fair_share".
    pub binding: String,
    /// Directions sharing this one's bottleneck link direction (itself included).
    pub sharing: usize,
    pub measured_over_predicted: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    pub from: String,
    pub to: String,
    pub status: &'static str,
    pub error: Option<String>,
    pub stopped_after_s: Option<f64>,
    /// When the flow was to start, seconds after the phase's start (`start`).
    pub start_s: f64,
    pub started_unix_ns: Option<u64>,
    /// The flow's direction: `from` sends, or `to` with `reverse`; with
    /// `bidir`, from -> to (the client's `summary`).
    #[serde(flatten)]
    pub direction: DirectionResult,
    /// With `bidir` only: to -> from (the client's `summary_reverse`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<DirectionResult>,
    pub cpu_from_percent: Option<f64>,
    pub cpu_to_percent: Option<f64>,
    /// `--simulate`: the flow's ns-3 twin (`source`, `bits_per_second`,
    /// `measured_over_simulated`, `intervals`; docs/campaign.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulated: Option<Value>,
    /// The test's own warnings (its report's `warnings`), such as a paced sender
    /// its host did not run: why a flow sent less than it was asked to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl FlowResult {
    /// Every direction the flow ran: one, or two with `bidir`.
    pub fn directions(&self) -> impl Iterator<Item = &DirectionResult> {
        std::iter::once(&self.direction).chain(self.reverse.as_ref())
    }
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
    /// The flows' own directions: from -> to, or to -> from with `reverse`.
    pub aggregate: Aggregate,
    /// The return directions (to -> from) of the bidir flows; absent without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregate_reverse: Option<Aggregate>,
    pub hosts: Vec<HostResult>,
    pub flows: Vec<FlowResult>,
    /// Flows that start later (`start`) with `sample`: Jain's index of the
    /// flows from the last one's start (docs/dynamics.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairness: Option<crate::dynamics::JoinFairness>,
}

fn f64_at(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_f64()
}

fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_u64()
}

/// One direction's figures from its report summary (`summary` or `summary_reverse`).
fn direction_from_summary(d: &mut DirectionResult, s: &Value) {
    d.sent.bytes = u64_at(s, &["sent", "bytes"]).unwrap_or(0);
    d.sent.bits_per_second = f64_at(s, &["sent", "bits_per_second"]).unwrap_or(0.0);
    d.received.bytes = u64_at(s, &["received", "bytes"]).unwrap_or(0);
    d.received.bits_per_second = f64_at(s, &["received", "bits_per_second"]).unwrap_or(0.0);
    d.received.lost_packets = u64_at(s, &["received", "lost_packets"]);
    d.received.jitter_ms = f64_at(s, &["received", "jitter_ms"]);
    if let Some(lost) = d.received.lost_packets {
        let expected = u64_at(s, &["received", "packets"]).unwrap_or(0) + lost;
        d.received.loss_percent = Some(if expected > 0 {
            100.0 * lost as f64 / expected as f64
        } else {
            0.0
        });
    }
    d.retransmits = u64_at(s, &["sent", "retransmits"]);
    d.rtt_ms = f64_at(s, &["tcp", "rtt_ms", "mean"]);
    // Where the datagrams went missing outside the path: the ends' own counts.
    d.sent.queue_drops = u64_at(s, &["sent", "queue_drops"]);
    d.sent.egress = parsed(s, &["sent", "egress"]);
    d.received.socket_drops = u64_at(s, &["received", "socket_drops"]);
    d.received.ingress = parsed(s, &["received", "ingress"]);
}

fn parsed<T: serde::de::DeserializeOwned>(v: &Value, path: &[&str]) -> Option<T> {
    let found = path.iter().try_fold(v, |v, k| v.get(*k))?;
    serde_json::from_value(found.clone()).ok()
}

/// A direction that has no final report (its flow failed): what its intervals showed.
fn direction_from_intervals(d: &mut DirectionResult) {
    let secs: f64 = d.intervals.iter().map(|p| p.end - p.start).sum();
    if secs <= 0.0 {
        return;
    }
    let bits = |rate: fn(&IntervalPoint) -> f64| -> f64 {
        d.intervals
            .iter()
            .map(|p| rate(p) * (p.end - p.start))
            .sum()
    };
    let (sent, received) = (
        bits(|p| p.sent_bits_per_second),
        bits(|p| p.received_bits_per_second),
    );
    d.sent = Totals {
        bytes: (sent / 8.0) as u64,
        bits_per_second: sent / secs,
        ..Totals::default()
    };
    d.received.bytes = (received / 8.0) as u64;
    d.received.bits_per_second = received / secs;
}

/// One direction's interval rates: `key` is "sum", or "sum_reverse" with bidir.
/// A flow's intervals on the phase's clock: a flow that started `start_s`
/// after the phase counts its own from then.
fn interval_points(intervals: &[Value], key: &str, start_s: f64) -> Vec<IntervalPoint> {
    intervals
        .iter()
        .filter_map(|i| {
            let s = i.get(key).filter(|s| !s.is_null())?;
            Some(IntervalPoint {
                start: start_s + f64_at(i, &["start"]).unwrap_or(0.0),
                end: start_s + f64_at(i, &["end"]).unwrap_or(0.0),
                sent_bits_per_second: f64_at(s, &["sent_bits_per_second"]).unwrap_or(0.0),
                received_bits_per_second: f64_at(s, &["received_bits_per_second"]).unwrap_or(0.0),
            })
        })
        .collect()
}

/// The earliest real start of any sending stream in the report.
fn first_start_ns(report: &Value) -> Option<u64> {
    ["summary", "summary_reverse"]
        .iter()
        .filter_map(|k| report.get(*k)?.get("streams")?.as_array())
        .flatten()
        .filter_map(|st| u64_at(st, &["sender", "started_unix_ns"]))
        .min()
}

/// Each direction of a flow apart, as the client reports `--bidir`: the
/// report's `summary` (and intervals' `sum`) is the flow's own direction,
/// `summary_reverse` (`sum_reverse`) the return direction of a bidir flow.
pub fn flow_result(o: &FlowOutcome) -> FlowResult {
    let (sender, receiver) = if o.reverse && !o.bidir {
        (&o.to, &o.from)
    } else {
        (&o.from, &o.to)
    };
    let mut direction = DirectionResult {
        sender: sender.clone(),
        receiver: receiver.clone(),
        intervals: interval_points(&o.intervals, "sum", o.start_s),
        ..Default::default()
    };
    let mut reverse = o.bidir.then(|| DirectionResult {
        sender: o.to.clone(),
        receiver: o.from.clone(),
        intervals: interval_points(&o.intervals, "sum_reverse", o.start_s),
        ..Default::default()
    });
    let mut r = FlowResult {
        from: o.from.clone(),
        to: o.to.clone(),
        status: o.status,
        error: o.error.clone(),
        stopped_after_s: o.stopped_after_s,
        start_s: o.start_s,
        started_unix_ns: None,
        direction: DirectionResult::default(),
        reverse: None,
        cpu_from_percent: None,
        cpu_to_percent: None,
        simulated: None,
        warnings: Vec::new(),
    };
    match &o.report {
        Some(report) => {
            r.warnings = parsed(report, &["warnings"]).unwrap_or_default();
            if let Some(s) = report.get("summary").filter(|s| !s.is_null()) {
                direction_from_summary(&mut direction, s);
                // The agent that ran the test is the local end of its report.
                r.cpu_from_percent = f64_at(s, &["cpu", "local", "total_percent"]);
                r.cpu_to_percent = f64_at(s, &["cpu", "remote", "total_percent"]);
            }
            if let (Some(d), Some(s)) = (
                reverse.as_mut(),
                report.get("summary_reverse").filter(|s| !s.is_null()),
            ) {
                direction_from_summary(d, s);
            }
            r.started_unix_ns = first_start_ns(report);
        }
        None => {
            direction_from_intervals(&mut direction);
            if let Some(d) = reverse.as_mut() {
                direction_from_intervals(d);
            }
        }
    }
    r.direction = direction;
    r.reverse = reverse;
    r
}

/// Per-interval sums of one direction of every flow, aligned on the common
/// interval grid (every flow's intervals count from the same agreed start instant).
fn aggregate_of<'a>(
    directions: impl Iterator<Item = &'a DirectionResult>,
    interval_s: f64,
) -> Aggregate {
    let mut slots: Vec<AggregateInterval> = Vec::new();
    let mut total = Aggregate::default();
    for d in directions {
        total.received_bits_per_second += d.received.bits_per_second;
        total.sent_bits_per_second += d.sent.bits_per_second;
        for p in &d.intervals {
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
    total.intervals = slots.into_iter().filter(|s| s.flows > 0).collect();
    total
}

/// The flows' own directions (`summary`): from -> to, or to -> from with `reverse`.
pub fn aggregate(flows: &[FlowResult], interval_s: f64) -> Aggregate {
    aggregate_of(flows.iter().map(|f| &f.direction), interval_s)
}

/// The return directions of the bidir flows (`summary_reverse`); None without bidir flows.
pub fn aggregate_reverse(flows: &[FlowResult], interval_s: f64) -> Option<Aggregate> {
    flows
        .iter()
        .any(|f| f.reverse.is_some())
        .then(|| aggregate_of(flows.iter().filter_map(|f| f.reverse.as_ref()), interval_s))
}

/// Each host's sent and received rates over every direction of every flow,
/// and how much less it received than its peers sent.
pub fn hosts(flows: &[FlowResult]) -> Vec<HostResult> {
    let mut names: Vec<String> = flows
        .iter()
        .flat_map(|f| [f.from.clone(), f.to.clone()])
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
            for d in flows.iter().flat_map(FlowResult::directions) {
                if d.sender == name {
                    h.sent_bits_per_second += d.sent.bits_per_second;
                }
                if d.receiver == name {
                    h.received_bits_per_second += d.received.bits_per_second;
                    h.peers_sent_bits_per_second += d.sent.bits_per_second;
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
    // Against each flow's own start (`start` later than the phase's).
    let starts: Vec<u64> = flows
        .iter()
        .filter_map(|f| Some(f.started_unix_ns? - (f.start_s * 1e9) as u64))
        .collect();
    let (min, max) = (starts.iter().min()?, starts.iter().max()?);
    Some((max - min) as f64 / 1e6)
}

/// A flow that completed with a report of `sent` and `received` bit/s (10 of
/// 100 datagrams lost), for the campaign modules' unit tests.
#[cfg(test)]
pub(super) fn test_outcome(
    from: &str,
    to: &str,
    sent: f64,
    received: f64,
    start_ns: u64,
) -> FlowOutcome {
    FlowOutcome {
        from: from.into(),
        to: to.into(),
        status: "ok",
        intervals: vec![
            serde_json::json!({"start": 0.0, "end": 1.0, "sum": {"sent_bits_per_second": sent, "received_bits_per_second": received}}),
            serde_json::json!({"start": 1.0, "end": 2.0, "sum": {"sent_bits_per_second": sent, "received_bits_per_second": received}}),
        ],
        report: Some(serde_json::json!({"summary": {
            "sent": {"bytes": 100, "bits_per_second": sent},
            "received": {"bytes": 90, "bits_per_second": received, "packets": 90, "lost_packets": 10},
            "streams": [{"sender": {"started_unix_ns": start_ns}}]
        }})),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aggregates_hosts_and_spread() {
        let outcomes = [
            test_outcome("a1", "b1", 100.0, 100.0, 1_000_000),
            test_outcome("a2", "b2", 100.0, 80.0, 1_400_000),
        ];
        let flows: Vec<FlowResult> = outcomes.iter().map(flow_result).collect();
        assert_eq!(flows[1].direction.received.loss_percent, Some(10.0));
        let agg = aggregate(&flows, 1.0);
        assert_eq!(agg.intervals.len(), 2);
        assert_eq!(agg.intervals[0].received_bits_per_second, 180.0);
        assert_eq!(agg.intervals[1].flows, 2);
        assert_eq!(agg.received_bits_per_second, 180.0);
        assert_eq!(start_spread_ms(&flows), Some(0.4));
        let hosts = hosts(&flows);
        let b2 = hosts.iter().find(|h| h.name == "b2").unwrap();
        assert!((b2.shortfall_percent - 20.0).abs() < 1e-9);
    }

    /// A bidir flow's report as the client writes it with `--bidir`.
    fn bidir_outcome() -> FlowOutcome {
        let sum = |sent: f64, received: f64| json!({"sent_bits_per_second": sent, "received_bits_per_second": received});
        let summary = |sent: f64, received: f64, start_ns: u64| {
            json!({"sent": {"bytes": 1000, "bits_per_second": sent, "retransmits": 3},
                   "received": {"bytes": 900, "bits_per_second": received},
                   "tcp": {"rtt_ms": {"mean": 2.0}},
                   "streams": [{"sender": {"started_unix_ns": start_ns}}]})
        };
        FlowOutcome {
            from: "tioc".into(),
            to: "edc".into(),
            status: "ok",
            bidir: true,
            intervals: vec![
                json!({"start": 0.0, "end": 1.0, "sum": sum(60.0, 58.0), "sum_reverse": sum(40.0, 39.0)}),
            ],
            report: Some(json!({"summary": summary(60.0, 58.0, 2_000_000),
                                "summary_reverse": summary(40.0, 39.0, 1_000_000)})),
            ..Default::default()
        }
    }

    #[test]
    fn a_bidir_flow_reports_each_direction_apart() {
        let outcomes = [bidir_outcome()];
        let flows: Vec<FlowResult> = outcomes.iter().map(flow_result).collect();
        let f = &flows[0];
        assert_eq!(
            (f.direction.sender.as_str(), f.direction.receiver.as_str()),
            ("tioc", "edc")
        );
        assert_eq!(f.direction.received.bits_per_second, 58.0);
        assert_eq!(f.direction.intervals[0].received_bits_per_second, 58.0);
        let rev = f.reverse.as_ref().expect("the return direction");
        assert_eq!(
            (rev.sender.as_str(), rev.receiver.as_str()),
            ("edc", "tioc")
        );
        assert_eq!(rev.sent.bits_per_second, 40.0);
        assert_eq!(rev.received.bits_per_second, 39.0);
        assert_eq!(rev.intervals[0].sent_bits_per_second, 40.0);
        assert_eq!(rev.retransmits, Some(3));
        assert_eq!(f.started_unix_ns, Some(1_000_000));
        let agg = aggregate(&flows, 1.0);
        assert_eq!(agg.received_bits_per_second, 58.0);
        assert_eq!(agg.intervals[0].received_bits_per_second, 58.0);
        let agg_rev =
            aggregate_reverse(&flows, 1.0).expect("a bidir phase has a reverse aggregate");
        assert_eq!(agg_rev.received_bits_per_second, 39.0);
        assert_eq!(agg_rev.intervals[0].sent_bits_per_second, 40.0);
        let hosts = hosts(&flows);
        let tioc = hosts.iter().find(|h| h.name == "tioc").unwrap();
        assert_eq!(tioc.sent_bits_per_second, 60.0);
        assert_eq!(tioc.received_bits_per_second, 39.0);
        assert_eq!(tioc.peers_sent_bits_per_second, 40.0);
        let edc = hosts.iter().find(|h| h.name == "edc").unwrap();
        assert_eq!(
            (edc.sent_bits_per_second, edc.received_bits_per_second),
            (40.0, 58.0)
        );
        // The JSON keeps the flow's own direction where it was and adds `reverse`.
        let v = serde_json::to_value(f).unwrap();
        assert_eq!(v["sender"], "tioc");
        assert_eq!(v["received"]["bits_per_second"], 58.0);
        assert_eq!(v["reverse"]["sender"], "edc");
        assert_eq!(v["reverse"]["received"]["bits_per_second"], 39.0);
    }

    #[test]
    fn a_failed_bidir_flow_keeps_each_direction_of_its_intervals() {
        let mut o = bidir_outcome();
        o.report = None;
        o.status = "failed";
        let f = flow_result(&o);
        assert_eq!(f.direction.received.bits_per_second, 58.0);
        assert_eq!(f.reverse.unwrap().received.bits_per_second, 39.0);
    }

    #[test]
    fn a_reverse_flow_is_sent_by_its_to_agent() {
        let mut o = test_outcome("a", "b", 100.0, 90.0, 1);
        o.reverse = true;
        let flows = vec![flow_result(&o)];
        assert_eq!(flows[0].direction.sender, "b");
        assert!(flows[0].reverse.is_none());
        assert!(aggregate_reverse(&flows, 1.0).is_none());
        let hosts = hosts(&flows);
        assert_eq!(
            hosts
                .iter()
                .find(|h| h.name == "a")
                .unwrap()
                .received_bits_per_second,
            90.0
        );
        assert_eq!(
            hosts
                .iter()
                .find(|h| h.name == "b")
                .unwrap()
                .sent_bits_per_second,
            100.0
        );
    }
}
