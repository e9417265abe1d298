//! `--format iperf3-json`: a linkperf report in iperf3's `-J` layout (3.x),
//! so scripts and dashboards that parse iperf3 keep working. Everything is
//! seen from the client, as iperf3's client reports it: `sum_sent` is what
//! was written in the main direction, `sum_received` what arrived; with
//! --bidir the `_bidir_reverse` sums carry the other direction.

use crate::report::Report;
use serde_json::{json, Map, Value};

fn f(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer).and_then(Value::as_f64).unwrap_or(0.0)
}

fn u(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// iperf3 names streams by socket number; linkperf's stream ids stand in (from 5).
fn socket(id: u64) -> u64 {
    id + 5
}

fn split_host_port(addr: &str) -> (String, u64) {
    match addr.rsplit_once(':') {
        Some((h, p)) => (
            h.trim_start_matches('[')
                .trim_end_matches(']')
                .trim_start_matches("::ffff:")
                .to_string(),
            p.parse().unwrap_or(0),
        ),
        None => (addr.to_string(), 0),
    }
}

/// One interval or summary entry for a stream, iperf3 style.
fn entry(s: &Value, socket_id: u64, start: f64, sender: bool, udp: bool) -> Value {
    let end = f(s, "/end").max(start + f(s, "/seconds"));
    let seconds = if s.get("seconds").is_some() {
        f(s, "/seconds")
    } else {
        end - start
    };
    let mut m = Map::new();
    m.insert("socket".into(), json!(socket_id));
    m.insert("start".into(), json!(start));
    m.insert(
        "end".into(),
        json!(if s.get("seconds").is_some() {
            start + seconds
        } else {
            end
        }),
    );
    m.insert("seconds".into(), json!(seconds));
    m.insert("bytes".into(), json!(u(s, "/bytes")));
    m.insert("bits_per_second".into(), json!(f(s, "/bits_per_second")));
    if udp {
        m.insert("packets".into(), json!(u(s, "/packets")));
        if let Some(udp) = s.get("udp").filter(|v| !v.is_null()) {
            let lost = u(udp, "/lost_packets");
            let total = u(udp, "/packets") + lost;
            m.insert("jitter_ms".into(), json!(f(udp, "/jitter_ms")));
            m.insert("lost_packets".into(), json!(lost));
            m.insert("packets".into(), json!(total));
            m.insert(
                "lost_percent".into(),
                json!(if total > 0 {
                    100.0 * lost as f64 / total as f64
                } else {
                    0.0
                }),
            );
            m.insert("out_of_order".into(), json!(u(udp, "/out_of_order")));
        }
    } else if let Some(tcp) = s.get("tcp").filter(|v| !v.is_null()) {
        m.insert("retransmits".into(), json!(u(tcp, "/retransmits")));
        if let Some(c) = tcp.get("cwnd_bytes").and_then(Value::as_u64) {
            m.insert("snd_cwnd".into(), json!(c));
        }
        if let Some(w) = tcp.get("snd_wnd_bytes").and_then(Value::as_u64) {
            m.insert("snd_wnd".into(), json!(w));
        }
        if let Some(r) = tcp.get("rtt_ms").and_then(Value::as_f64) {
            m.insert("rtt".into(), json!((r * 1000.0).round() as u64));
        }
        if let Some(r) = tcp.get("rttvar_ms").and_then(Value::as_f64) {
            m.insert("rttvar".into(), json!((r * 1000.0).round() as u64));
        }
        if let Some(p) = tcp.get("pmtu").and_then(Value::as_u64) {
            m.insert("pmtu".into(), json!(p));
        }
    }
    if let Some(o) = s.get("omitted").and_then(Value::as_bool) {
        m.insert("omitted".into(), json!(o));
    }
    m.insert("sender".into(), json!(sender));
    Value::Object(m)
}

/// The report in iperf3's -J layout.
pub fn to_iperf3_json(report: &Report) -> Value {
    let r = serde_json::to_value(report).unwrap_or(Value::Null);
    let shape = Shape::of(&r);
    let mut top = json!({
        "start": start(&r, &report.software, &shape),
        "intervals": intervals(&r, &shape),
        "end": end(&r, &shape),
    });
    if !report.errors.is_empty() {
        top["error"] = json!(report.errors.join("; "));
    }
    // Where iperf3 -J puts --extra-data.
    if let Some(note) = &report.extra_data {
        top["extra_data"] = json!(note);
    }
    top
}

/// What every part of the layout needs to know of the test.
struct Shape {
    udp: bool,
    parallel: u64,
    /// linkperf's direction name: "forward", "reverse" or "bidir".
    direction: String,
}

impl Shape {
    fn of(r: &Value) -> Shape {
        Shape {
            udp: r.pointer("/test/protocol").and_then(Value::as_str) == Some("udp"),
            parallel: u(r, "/test/parallel").max(1),
            direction: r
                .pointer("/test/direction")
                .and_then(Value::as_str)
                .unwrap_or("forward")
                .to_string(),
        }
    }

    fn bidir(&self) -> bool {
        self.direction == "bidir"
    }

    /// Does the client send on stream `id`?
    fn client_sends(&self, id: u64) -> bool {
        match self.direction.as_str() {
            "reverse" => false,
            "bidir" => id < self.parallel,
            _ => true,
        }
    }
}

/// The array at `v`, or none.
fn array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(|v| v.as_slice())
        .unwrap_or(&[])
}

/// `start`: the connections and the test's settings.
fn start(r: &Value, software: &str, shape: &Shape) -> Value {
    let udp = shape.udp;
    let connected: Vec<Value> = array(r.pointer("/start/streams"))
        .iter()
        .map(|s| {
            let (lh, lp) = split_host_port(
                s.pointer("/local/local")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
            let (rh, rp) = split_host_port(
                s.pointer("/local/remote")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
            json!({"socket": socket(u(s, "/id")), "local_host": lh, "local_port": lp,
                   "remote_host": rh, "remote_port": rp})
        })
        .collect();
    let first_socket = r
        .pointer("/start/streams/0/local")
        .cloned()
        .unwrap_or(Value::Null);
    let timesecs = u(r, "/start/timestamp_unix_ms") / 1000;
    json!({
        "connected": connected,
        "version": software,
        "system_info": format!("{} {}", r.pointer("/start/local/kernel").and_then(Value::as_str).unwrap_or(""),
                               r.pointer("/start/local/hostname").and_then(Value::as_str).unwrap_or("")),
        "timestamp": {"time": httpdate(timesecs), "timesecs": timesecs},
        "connecting_to": {"host": r.pointer("/test/server").cloned().unwrap_or(Value::Null),
                          "port": u(r, "/test/port")},
        "cookie": "",
        "tcp_mss_default": first_socket.get("mss").cloned().unwrap_or(json!(0)),
        "target_bitrate": u(r, "/test/bitrate"),
        "fq_rate": u(r, "/test/pacing_rate"),
        "sock_bufsize": u(r, "/test/sndbuf").max(u(r, "/test/rcvbuf")),
        "sndbuf_actual": first_socket.get("sndbuf").cloned().unwrap_or(json!(0)),
        "rcvbuf_actual": first_socket.get("rcvbuf").cloned().unwrap_or(json!(0)),
        "test_start": {
            "protocol": if udp { "UDP" } else { "TCP" },
            "num_streams": shape.parallel,
            "blksize": u(r, "/test/length"),
            "omit": f(r, "/test/omit_s"),
            "duration": if r.pointer("/test/bytes").is_some_and(|b| !b.is_null()) { 0.0 } else { f(r, "/test/duration_s") - f(r, "/test/omit_s") },
            "bytes": u(r, "/test/bytes"),
            "blocks": 0,
            "reverse": i32::from(shape.direction == "reverse"),
            "tos": 0,
            "target_bitrate": u(r, "/test/bitrate"),
            "bidir": i32::from(shape.bidir()),
            "fqrate": u(r, "/test/pacing_rate"),
        },
    })
}

/// `intervals`: this end's view of each stream, summed per direction.
fn intervals(r: &Value, shape: &Shape) -> Vec<Value> {
    array(r.get("intervals"))
        .iter()
        .map(|iv| interval(iv, shape))
        .collect()
}

fn interval(iv: &Value, shape: &Shape) -> Value {
    let t0 = f(iv, "/start");
    let mut streams = Vec::new();
    let mut sums: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    for s in array(iv.get("streams")) {
        let id = u(s, "/id");
        let sends = shape.client_sends(id);
        let view = if sends {
            s.get("sender")
        } else {
            s.get("receiver")
        };
        let Some(view) = view.filter(|v| !v.is_null()) else {
            continue;
        };
        let mut e = entry(
            view,
            socket(id),
            f(view, "/start").max(t0),
            sends,
            shape.udp,
        );
        if let Some(m) = e.as_object_mut() {
            m.insert("seconds".into(), json!(f(view, "/end") - f(view, "/start")));
            m.insert("end".into(), json!(f(view, "/end")));
        }
        sums[usize::from(shape.bidir() && id >= shape.parallel)].push(e.clone());
        streams.push(e);
    }
    let mut obj = Map::new();
    obj.insert("streams".into(), Value::Array(streams));
    obj.insert("sum".into(), sum(&sums[0], shape.udp, iv));
    if shape.bidir() {
        obj.insert("sum_bidir_reverse".into(), sum(&sums[1], shape.udp, iv));
    }
    Value::Object(obj)
}

/// `end`: per stream the sender's and the receiver's totals, then the sums
/// (with --bidir also those of the reverse direction), CPU and congestion.
fn end(r: &Value, shape: &Shape) -> Value {
    let udp = shape.udp;
    let mut end_streams = Vec::new();
    let mut end = Map::new();
    let directions: Vec<(&str, &str)> = if shape.bidir() {
        vec![("/summary", ""), ("/summary_reverse", "_bidir_reverse")]
    } else {
        vec![("/summary", "")]
    };
    for (pointer, suffix) in directions {
        let Some(summary) = r.pointer(pointer) else {
            continue;
        };
        let local_sends =
            summary.get("direction").and_then(Value::as_str) == Some("client_to_server");
        end_sums(&mut end, summary, udp, suffix, local_sends);
        for s in array(summary.get("streams")) {
            end_streams.push(end_stream(s, udp, local_sends));
        }
        if suffix.is_empty() {
            if !udp {
                end_congestion(&mut end, r, local_sends);
            }
            end.insert("cpu_utilization_percent".into(), cpu(summary));
        }
    }
    end.insert("streams".into(), Value::Array(end_streams));
    Value::Object(end)
}

/// `sum_sent` and `sum_received` (with `suffix`) of one direction's summary;
/// for UDP the main direction's `sum` too.
fn end_sums(
    end: &mut Map<String, Value>,
    summary: &Value,
    udp: bool,
    suffix: &str,
    local_sends: bool,
) {
    let mut sent_sum = json!({"start": 0.0, "end": f(summary, "/sent/seconds"), "seconds": f(summary, "/sent/seconds"),
        "bytes": u(summary, "/sent/bytes"), "bits_per_second": f(summary, "/sent/bits_per_second"), "sender": local_sends});
    let mut recv_sum = json!({"start": 0.0, "end": f(summary, "/received/seconds"), "seconds": f(summary, "/received/seconds"),
        "bytes": u(summary, "/received/bytes"), "bits_per_second": f(summary, "/received/bits_per_second"), "sender": local_sends});
    if udp {
        let lost = u(summary, "/received/lost_packets");
        let total = u(summary, "/received/packets") + lost;
        for s in [&mut sent_sum, &mut recv_sum] {
            s["jitter_ms"] = json!(f(summary, "/received/jitter_ms"));
            s["lost_packets"] = json!(lost);
            s["packets"] = json!(total);
            s["lost_percent"] = json!(if total > 0 {
                100.0 * lost as f64 / total as f64
            } else {
                0.0
            });
        }
        sent_sum["packets"] = json!(u(summary, "/sent/packets"));
        if suffix.is_empty() {
            end.insert("sum".into(), recv_sum.clone());
        }
    } else {
        sent_sum["retransmits"] = json!(u(summary, "/sent/retransmits"));
    }
    end.insert(format!("sum_sent{suffix}"), sent_sum);
    end.insert(format!("sum_received{suffix}"), recv_sum);
}

/// One stream's entry in `end/streams`: `{"udp": ...}` or `{"sender", "receiver"}`.
fn end_stream(s: &Value, udp: bool, local_sends: bool) -> Value {
    let id = u(s, "/id");
    let sender = s.get("sender").cloned().unwrap_or(Value::Null);
    let receiver = s.get("receiver").cloned().unwrap_or(Value::Null);
    if udp {
        let mut e = entry(&sender, socket(id), 0.0, local_sends, true);
        if let (Some(m), false) = (e.as_object_mut(), receiver.is_null()) {
            let r_entry = entry(&receiver, socket(id), 0.0, local_sends, true);
            for k in [
                "jitter_ms",
                "lost_packets",
                "packets",
                "lost_percent",
                "out_of_order",
            ] {
                if let Some(v) = r_entry.get(k) {
                    m.insert(k.into(), v.clone());
                }
            }
        }
        return json!({"udp": e});
    }
    let snd = tcp_sender_total(&sender, id, local_sends);
    let rcv = if receiver.is_null() {
        Value::Null
    } else {
        let mut e = entry(&receiver, socket(id), 0.0, local_sends, false);
        if let Some(m) = e.as_object_mut() {
            m.remove("retransmits");
        }
        e
    };
    json!({"sender": snd, "receiver": rcv})
}

/// A TCP sender's total: iperf3 gives maxima and the mean RTT where an
/// interval gives the current cwnd, window and RTT.
fn tcp_sender_total(sender: &Value, id: u64, local_sends: bool) -> Value {
    let mut snd = entry(sender, socket(id), 0.0, local_sends, false);
    if let (Some(m), Some(tcp)) = (
        snd.as_object_mut(),
        sender.get("tcp").filter(|t| !t.is_null()),
    ) {
        m.remove("snd_cwnd");
        m.remove("snd_wnd");
        m.remove("rttvar");
        m.remove("pmtu");
        if let Some(c) = tcp.get("cwnd_bytes").and_then(Value::as_u64) {
            m.insert("max_snd_cwnd".into(), json!(c));
        }
        if let Some(w) = tcp.get("snd_wnd_bytes").and_then(Value::as_u64) {
            m.insert("max_snd_wnd".into(), json!(w));
        }
        if let Some(rtt) = m.remove("rtt") {
            m.insert("mean_rtt".into(), rtt.clone());
            m.insert("max_rtt".into(), rtt);
        }
        if let Some(min) = tcp.get("min_rtt_ms").and_then(Value::as_f64) {
            m.insert("min_rtt".into(), json!((min * 1000.0).round() as u64));
        }
    }
    snd
}

/// The sender's and the receiver's congestion control, from the first stream.
fn end_congestion(end: &mut Map<String, Value>, r: &Value, local_sends: bool) {
    let (cc_sender, cc_receiver) = if local_sends {
        ("local", "remote")
    } else {
        ("remote", "local")
    };
    let cc = |side: &str| {
        r.pointer("/start/streams/0")
            .and_then(|s| s.get(side))
            .and_then(|s| s.get("congestion"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    end.insert("sender_tcp_congestion".into(), cc(cc_sender));
    end.insert("receiver_tcp_congestion".into(), cc(cc_receiver));
}

fn cpu(summary: &Value) -> Value {
    json!({
        "host_total": f(summary, "/cpu/local/total_percent"),
        "host_user": f(summary, "/cpu/local/user_percent"),
        "host_system": f(summary, "/cpu/local/system_percent"),
        "remote_total": f(summary, "/cpu/remote/total_percent"),
        "remote_user": f(summary, "/cpu/remote/user_percent"),
        "remote_system": f(summary, "/cpu/remote/system_percent"),
    })
}

fn sum(entries: &[Value], udp: bool, iv: &Value) -> Value {
    let bytes: u64 = entries.iter().map(|e| u(e, "/bytes")).sum();
    let bps: f64 = entries.iter().map(|e| f(e, "/bits_per_second")).sum();
    let start = f(iv, "/start");
    let end = f(iv, "/end");
    let mut m = json!({"start": start, "end": end, "seconds": end - start, "bytes": bytes,
        "bits_per_second": bps,
        "omitted": iv.get("omitted").and_then(Value::as_bool).unwrap_or(false),
        "sender": entries.first().and_then(|e| e.get("sender")).cloned().unwrap_or(json!(true))});
    if udp {
        m["packets"] = json!(entries.iter().map(|e| u(e, "/packets")).sum::<u64>());
        if entries.iter().any(|e| e.get("jitter_ms").is_some()) {
            let lost: u64 = entries.iter().map(|e| u(e, "/lost_packets")).sum();
            let total: u64 = entries.iter().map(|e| u(e, "/packets")).sum();
            m["lost_packets"] = json!(lost);
            m["lost_percent"] = json!(if total > 0 {
                100.0 * lost as f64 / total as f64
            } else {
                0.0
            });
            m["jitter_ms"] = json!(
                entries.iter().map(|e| f(e, "/jitter_ms")).sum::<f64>()
                    / entries.len().max(1) as f64
            );
        }
    } else {
        m["retransmits"] = json!(entries.iter().map(|e| u(e, "/retransmits")).sum::<u64>());
    }
    m
}

/// RFC 7231 date, as iperf3 prints its timestamp.
fn httpdate(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days.rem_euclid(7)) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn http_dates() {
        assert_eq!(super::httpdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            super::httpdate(1_700_000_000),
            "Tue, 14 Nov 2023 22:13:20 GMT"
        );
    }
}
