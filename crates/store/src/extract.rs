//! Normalised columns and samples taken from a `linkperf client -J` document
//! and a `linkperf campaign run -J` document (schema `linkperf/1`), so
//! queries need not parse the stored JSON.

use crate::records::{NewRun, RunMetrics, Sample};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since 1970: a report's start time when it has none.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl NewRun {
    /// A `linkperf client -J` report, with its columns and samples extracted.
    pub fn from_test_report(report: Value) -> NewRun {
        test_run(report)
    }

    /// Any other kind of result: the JSON and what the caller knows. The
    /// numeric columns of a "campaign" (a `linkperf campaign run -J`
    /// document) are taken from it; other kinds' stay empty unless filled in.
    pub fn other(kind: &str, host: &str, started_unix_ms: i64, report: Value) -> NewRun {
        let metrics = if kind == "campaign" {
            campaign_metrics(&report)
        } else {
            RunMetrics::default()
        };
        NewRun {
            kind: kind.into(),
            started_unix_ms,
            host: host.into(),
            slot: None,
            config: None,
            local_facts: None,
            remote_facts: None,
            metrics,
            samples: vec![],
            rr: None,
            rr_sizes: vec![],
            report,
        }
    }
}

pub(crate) fn f(v: &Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer).and_then(Value::as_f64)
}
pub(crate) fn i(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .map(|x| x.min(i64::MAX as u64) as i64)
}
pub(crate) fn s(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).map(String::from)
}

/// Builds the stored form of a throughput test report.
pub fn test_run(report: Value) -> NewRun {
    let metrics = test_metrics(&report);
    let mut samples = interval_samples(&report, metrics.direction.as_deref());
    samples.extend(summary_samples(&report));
    NewRun {
        kind: "test".into(),
        started_unix_ms: i(&report, "/start/timestamp_unix_ms").unwrap_or_else(now_ms),
        host: s(&report, "/test/server").unwrap_or_default(),
        slot: None,
        config: report.get("test").cloned(),
        local_facts: report.pointer("/start/local").cloned(),
        remote_facts: report.pointer("/start/remote").cloned(),
        metrics,
        samples,
        rr: None,
        rr_sizes: vec![],
        report,
    }
}

/// The whole-test columns of a test report.
fn test_metrics(report: &Value) -> RunMetrics {
    RunMetrics {
        protocol: s(report, "/test/protocol"),
        direction: s(report, "/test/direction"),
        sent_bps: f(report, "/summary/sent/bits_per_second"),
        received_bps: f(report, "/summary/received/bits_per_second"),
        loss_percent: f(report, "/summary/received/loss_percent"),
        rtt_mean_ms: f(report, "/summary/tcp/rtt_ms/mean"),
        cpu_local_percent: f(report, "/summary/cpu/local/total_percent"),
        cpu_remote_percent: f(report, "/summary/cpu/remote/total_percent"),
        duration_s: f(report, "/summary/sent/seconds"),
        interrupted: report
            .get("interrupted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        congestion: senders_congestion(report),
        flows: None,
        hosts: None,
    }
}

/// One row per interval for each direction's sum and for each stream.
fn interval_samples(report: &Value, direction: Option<&str>) -> Vec<Sample> {
    let mut samples = Vec::new();
    if let Some(intervals) = report.get("intervals").and_then(Value::as_array) {
        let forward_name = if direction == Some("reverse") {
            "server_to_client"
        } else {
            "client_to_server"
        };
        for (k, iv) in intervals.iter().enumerate() {
            let k = k as i64;
            let (start, end) = (f(iv, "/start"), f(iv, "/end"));
            let omitted = iv.get("omitted").and_then(Value::as_bool).unwrap_or(false);
            for (key, dir) in [("sum", forward_name), ("sum_reverse", "server_to_client")] {
                if let Some(sum) = iv.get(key).filter(|v| !v.is_null()) {
                    samples.push(Sample {
                        interval_idx: k,
                        stream_id: -1,
                        direction: dir.into(),
                        start_s: start,
                        end_s: end,
                        omitted,
                        sent_bytes: i(sum, "/sent_bytes"),
                        sent_bps: f(sum, "/sent_bits_per_second"),
                        received_bytes: i(sum, "/received_bytes"),
                        received_bps: f(sum, "/received_bits_per_second"),
                        retransmits: i(sum, "/retransmits"),
                        rtt_ms: None,
                        cwnd_bytes: None,
                        lost_packets: i(sum, "/lost_packets"),
                        jitter_ms: f(sum, "/jitter_ms"),
                    });
                }
            }
            for st in iv
                .get("streams")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                samples.push(Sample {
                    interval_idx: k,
                    stream_id: i(st, "/id").unwrap_or(0),
                    direction: s(st, "/direction").unwrap_or_else(|| forward_name.into()),
                    start_s: f(st, "/sender/start")
                        .or(f(st, "/receiver/start"))
                        .or(start),
                    end_s: f(st, "/sender/end").or(f(st, "/receiver/end")).or(end),
                    omitted,
                    sent_bytes: i(st, "/sender/bytes"),
                    sent_bps: f(st, "/sender/bits_per_second"),
                    received_bytes: i(st, "/receiver/bytes"),
                    received_bps: f(st, "/receiver/bits_per_second"),
                    retransmits: i(st, "/sender/tcp/retransmits"),
                    rtt_ms: f(st, "/sender/tcp/rtt_ms"),
                    cwnd_bytes: i(st, "/sender/tcp/cwnd_bytes"),
                    lost_packets: i(st, "/receiver/udp/lost_packets"),
                    jitter_ms: f(st, "/receiver/udp/jitter_ms"),
                });
            }
        }
    }
    samples
}

/// Whole-test rows: interval_idx -1, per stream and their sum.
fn summary_samples(report: &Value) -> Vec<Sample> {
    let mut samples = Vec::new();
    for key in ["summary", "summary_reverse"] {
        let Some(sum) = report.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let dir = s(sum, "/direction").unwrap_or_default();
        samples.push(Sample {
            interval_idx: -1,
            stream_id: -1,
            direction: dir.clone(),
            start_s: Some(0.0),
            end_s: f(sum, "/sent/seconds"),
            omitted: false,
            sent_bytes: i(sum, "/sent/bytes"),
            sent_bps: f(sum, "/sent/bits_per_second"),
            received_bytes: i(sum, "/received/bytes"),
            received_bps: f(sum, "/received/bits_per_second"),
            retransmits: i(sum, "/sent/retransmits"),
            rtt_ms: f(sum, "/tcp/rtt_ms/mean"),
            cwnd_bytes: i(sum, "/tcp/cwnd_bytes"),
            lost_packets: i(sum, "/received/lost_packets"),
            jitter_ms: f(sum, "/received/jitter_ms"),
        });
        for st in sum
            .get("streams")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            samples.push(Sample {
                interval_idx: -1,
                stream_id: i(st, "/id").unwrap_or(0),
                direction: dir.clone(),
                start_s: Some(0.0),
                end_s: f(st, "/sender/seconds"),
                omitted: false,
                sent_bytes: i(st, "/sender/bytes"),
                sent_bps: f(st, "/sender/bits_per_second"),
                received_bytes: i(st, "/receiver/bytes"),
                received_bps: f(st, "/receiver/bits_per_second"),
                retransmits: i(st, "/sender/tcp/retransmits"),
                rtt_ms: f(st, "/sender/tcp/rtt_ms"),
                cwnd_bytes: i(st, "/sender/tcp/cwnd_bytes"),
                lost_packets: i(st, "/receiver/udp/lost_packets"),
                jitter_ms: f(st, "/receiver/udp/jitter_ms"),
            });
        }
    }
    samples
}

/// The congestion control the sending sockets used, as the kernel reported
/// it (TCP_CONGESTION read back from each stream's socket): the client's for
/// client-to-server streams, the server's for the others. Several distinct
/// ones (a --bidir test between differently configured hosts) are listed.
pub fn senders_congestion(report: &Value) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for st in report
        .pointer("/start/streams")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let side = if s(st, "/direction").as_deref() == Some("server_to_client") {
            "/remote/congestion"
        } else {
            "/local/congestion"
        };
        if let Some(cc) = s(st, side).filter(|c| !c.is_empty()) {
            if !seen.contains(&cc) {
                seen.push(cc);
            }
        }
    }
    (!seen.is_empty()).then(|| seen.join(","))
}

/// The figures of a campaign document: the mean over its phase runs of the
/// aggregate sent and received rates, how many flows one round of its phases
/// has, how many hosts take part, and the loss of its UDP flows.
pub(crate) fn campaign_metrics(report: &Value) -> RunMetrics {
    let phases: Vec<&Value> = report
        .get("phases")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mean = |ptr: &str| -> Option<f64> {
        let v: Vec<f64> = phases.iter().filter_map(|p| f(p, ptr)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let mut flows_by_phase: Vec<(String, usize)> = Vec::new();
    let mut hosts = BTreeSet::new();
    let (mut udp_sent, mut udp_received) = (0.0, 0.0);
    let mut udp = false;
    for p in &phases {
        let flows = p.get("flows").and_then(Value::as_array);
        let name = s(p, "/name").unwrap_or_default();
        if !flows_by_phase.iter().any(|(n, _)| *n == name) {
            flows_by_phase.push((name, flows.map_or(0, Vec::len)));
        }
        for fl in flows.into_iter().flatten() {
            hosts.extend(s(fl, "/from"));
            hosts.extend(s(fl, "/to"));
            if f(fl, "/received/loss_percent").is_some() {
                udp = true;
                udp_sent += f(fl, "/sent/bytes").unwrap_or(0.0);
                udp_received += f(fl, "/received/bytes").unwrap_or(0.0);
            }
        }
    }
    let duration: f64 = phases.iter().filter_map(|p| f(p, "/duration_s")).sum();
    RunMetrics {
        sent_bps: mean("/aggregate/sent_bits_per_second"),
        received_bps: mean("/aggregate/received_bits_per_second"),
        loss_percent: (udp && udp_sent > 0.0)
            .then(|| (100.0 * (udp_sent - udp_received) / udp_sent).max(0.0)),
        duration_s: (!phases.is_empty()).then_some(duration),
        interrupted: report
            .get("interrupted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        flows: (!phases.is_empty()).then(|| flows_by_phase.iter().map(|(_, n)| *n as i64).sum()),
        hosts: (!phases.is_empty()).then_some(hosts.len() as i64),
        ..RunMetrics::default()
    }
}
