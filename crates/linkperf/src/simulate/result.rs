//! The scenario's JSON lines as a result in linkperf's schema (`linkperf/1`):
//! intervals per flow, the summary, each stream's sender and receiver
//! `samples[]` (as `--sample` gives) and `summary.dynamics` from
//! [`crate::dynamics`], marked with the simulator in `source`.

use super::path::Route;
use super::schedule::LinkStep;
use super::spec::{SimError, SimSpec};
use crate::dynamics::{self, StreamSeries};
use linkperf_proto::results::Sample;
use serde_json::{json, Value};

/// One interval of one flow.
#[derive(Debug, Clone, Default)]
pub struct Interval {
    pub start: f64,
    pub end: f64,
    pub sent: u64,
    pub received: u64,
    pub retransmits: u64,
    pub cwnd_bytes: u64,
    pub srtt_ms: Option<f64>,
}

/// One flow's record.
#[derive(Debug, Clone, Default)]
pub struct Flow {
    pub intervals: Vec<Interval>,
    pub sender: Vec<Sample>,
    pub receiver: Vec<Sample>,
    pub sent: u64,
    pub received: u64,
    pub retransmits: u64,
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}
fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn sample(v: &Value, mss: u64) -> (Sample, Sample) {
    let t = f(v, "t");
    let cwnd = u(v, "cwnd");
    let sender = Sample {
        t,
        bytes: u(v, "sent"),
        cwnd_segments: Some((cwnd / mss.max(1)) as u32),
        cwnd_bytes: Some(cwnd),
        ssthresh_segments: v
            .get("ssthresh")
            .and_then(Value::as_u64)
            .map(|s| (s / mss.max(1)) as u32),
        srtt_ms: v.get("srtt_ms").and_then(Value::as_f64),
        bytes_in_flight: Some(u(v, "inflight")),
        acked_bytes: Some(u(v, "acked")),
        retransmits: Some(u(v, "retrans")),
        ..Sample::default()
    };
    let receiver = Sample {
        t,
        bytes: u(v, "received"),
        ..Sample::default()
    };
    (sender, receiver)
}

/// The scenario's output, one JSON object per line, parsed and split by
/// the `group` each belongs to (of `groups`).
pub fn split_groups(lines: &[String], groups: usize) -> Result<Vec<Vec<Value>>, SimError> {
    let mut out = vec![Vec::new(); groups];
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| SimError::failed(format!("the ns-3 scenario printed '{line}': {e}")))?;
        let g = u(&v, "group") as usize;
        out.get_mut(g)
            .ok_or_else(|| SimError::failed(format!("group {g} in '{line}'")))?
            .push(v);
    }
    Ok(out)
}

/// One group's output objects as its flows; `mss` converts bytes to segments.
pub fn parse_lines(lines: &[Value], mss: u64) -> Result<Vec<Flow>, SimError> {
    let mut flows: Vec<Flow> = Vec::new();
    for v in lines {
        let i = u(v, "flow") as usize;
        if i >= 4096 {
            return Err(SimError::failed(format!("flow {i} in '{v}'")));
        }
        if flows.len() <= i {
            flows.resize_with(i + 1, Flow::default);
        }
        let flow = &mut flows[i];
        match v.get("type").and_then(Value::as_str) {
            Some("sample") => {
                let (s, r) = sample(v, mss);
                flow.sender.push(s);
                flow.receiver.push(r);
            }
            Some("interval") => flow.intervals.push(Interval {
                start: f(v, "start"),
                end: f(v, "end"),
                sent: u(v, "sent"),
                received: u(v, "received"),
                retransmits: u(v, "retrans"),
                cwnd_bytes: u(v, "cwnd"),
                srtt_ms: v.get("srtt_ms").and_then(Value::as_f64),
            }),
            Some("end") => {
                flow.sent = u(v, "sent");
                flow.received = u(v, "received");
                flow.retransmits = u(v, "retrans");
            }
            _ => {}
        }
    }
    if flows.is_empty() || flows.iter().any(|f| f.intervals.is_empty()) {
        return Err(SimError::failed("the ns-3 scenario reported no intervals"));
    }
    Ok(flows)
}

/// What the document says besides the flows.
pub struct Context<'a> {
    pub spec: &'a SimSpec,
    pub congestion: &'a str,
    /// ns-3's TCP model for it.
    pub model: &'a str,
    pub route: &'a Route,
    pub source: String,
    pub rcvbuf: u64,
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

fn intervals(flows: &[Flow]) -> Vec<Value> {
    let n = flows.iter().map(|f| f.intervals.len()).min().unwrap_or(0);
    (0..n)
        .map(|k| {
            let all: Vec<&Interval> = flows.iter().map(|f| &f.intervals[k]).collect();
            let (start, end) = (all[0].start, all[0].end);
            let secs = end - start;
            let sent: u64 = all.iter().map(|i| i.sent).sum();
            let received: u64 = all.iter().map(|i| i.received).sum();
            let streams: Vec<Value> = all
                .iter()
                .enumerate()
                .map(|(id, i)| {
                    json!({
                        "id": id + 1, "direction": "client_to_server",
                        "sender": {"start": start, "end": end, "bytes": i.sent,
                            "bits_per_second": rate(i.sent, secs),
                            "tcp": {"retransmits": i.retransmits, "cwnd_bytes": i.cwnd_bytes, "rtt_ms": i.srtt_ms}},
                        "receiver": {"start": start, "end": end, "bytes": i.received,
                            "bits_per_second": rate(i.received, secs)}
                    })
                })
                .collect();
            json!({
                "start": start, "end": end, "omitted": false,
                "sum": {"bits_per_second": rate(received, secs), "sent_bytes": sent,
                    "sent_bits_per_second": rate(sent, secs), "received_bytes": received,
                    "received_bits_per_second": rate(received, secs),
                    "retransmits": all.iter().map(|i| i.retransmits).sum::<u64>()},
                "streams": streams
            })
        })
        .collect()
}

fn rtt_mean(flows: &[Flow]) -> Option<f64> {
    let all: Vec<f64> = flows
        .iter()
        .flat_map(|f| f.sender.iter().filter_map(|s| s.srtt_ms))
        .collect();
    (!all.is_empty()).then(|| all.iter().sum::<f64>() / all.len() as f64)
}

/// The result document.
pub fn document(ctx: &Context, flows: &[Flow]) -> Value {
    let spec = ctx.spec;
    let secs = spec.duration_s;
    let series: Vec<StreamSeries> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| StreamSeries {
            id: i as u32 + 1,
            sender: &f.sender,
            receiver: &f.receiver,
        })
        .collect();
    let dynamics = dynamics::analyse(&series, spec.sample_s, ctx.route.payload_bps());
    let sent: u64 = flows.iter().map(|f| f.sent).sum();
    let received: u64 = flows.iter().map(|f| f.received).sum();
    let streams: Vec<Value> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            json!({"id": i + 1,
                "sender": {"id": i + 1, "role": "sender", "bytes": f.sent, "seconds": secs,
                    "bits_per_second": rate(f.sent, secs),
                    "tcp": {"retransmits": f.retransmits}, "samples": f.sender},
                "receiver": {"id": i + 1, "role": "receiver", "bytes": f.received, "seconds": secs,
                    "bits_per_second": rate(f.received, secs), "samples": f.receiver}})
        })
        .collect();
    let route = ctx.route;
    let hops: Vec<Value> = route
        .hops
        .iter()
        .map(|h| {
            json!({"link": h.link, "rate_bps": h.forward.rate_bps, "ns3_rate_bps": h.forward.ns3_rate_bps,
                "reverse_rate_bps": h.backward.rate_bps, "delay_s": h.delay_s,
                "queue_packets": h.forward.queue_packets, "loss": h.forward.loss, "mtu": h.mtu})
        })
        .collect();
    json!({
        "schema": "linkperf/1",
        "software": crate::report::SOFTWARE,
        "source": ctx.source,
        "test": {"server": route.to, "port": 0, "protocol": "tcp", "direction": "forward",
            "duration_s": secs, "interval_s": spec.interval_s, "parallel": spec.streams,
            "congestion": ctx.congestion, "rcvbuf": ctx.rcvbuf, "window_clamp": spec.window_clamp,
            "cwnd_clamp": spec.cwnd_clamp.or(route.cwnd_clamp),
            "sample_s": spec.sample_s},
        "start": {"timestamp_unix_ms": now_ms(), "local": {"hostname": route.from},
            "remote": {"hostname": route.to}},
        "simulation": {"testbed": route.testbed, "from": route.from, "to": route.to,
            "ns3_model": ctx.model,
            "rtt_s": route.rtt_s(), "bottleneck_bps": route.bottleneck_bps(), "hops": hops},
        "intervals": intervals(flows),
        "summary": {"direction": "client_to_server",
            "sent": {"bytes": sent, "bits_per_second": rate(sent, secs), "seconds": secs,
                "retransmits": flows.iter().map(|f| f.retransmits).sum::<u64>()},
            "received": {"bytes": received, "bits_per_second": rate(received, secs), "seconds": secs},
            "tcp": {"rtt_ms": {"mean": rtt_mean(flows)}},
            "streams": streams,
            "dynamics": dynamics},
        "warnings": [], "errors": [], "interrupted": false
    })
}

/// The schedule's changes as the scenario applied them, for `simulation.schedule`.
pub fn steps_json(steps: &[LinkStep]) -> Value {
    steps
        .iter()
        .map(|s| {
            json!({"at_s": s.at_s, "link": s.link,
                "direction": if s.backward { "acks" } else { "data" },
                "rate_bps": s.direction.rate_bps, "queue_packets": s.direction.queue_packets,
                "loss": s.direction.loss, "loss_at_s": s.loss_at_s, "delay_s": s.delay_s})
        })
        .collect()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
