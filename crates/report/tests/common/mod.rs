//! Exports for the tests: hand-made ones shaped like the seeds' studies, and
//! ones wrapped around real `linkperf client -J` documents in fixtures/.

#![allow(dead_code)]

pub mod browser;
pub mod svg;

use serde_json::{json, Value};

pub fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A minimal run report with the summary numbers the pages read.
fn mini_report(sent: f64, received: f64, cpu_local: f64, cpu_remote: f64, window: &str) -> Value {
    json!({
        "schema": "linkperf/1",
        "software": "linkperf 0.1.0",
        "test": {"server": "10.0.0.2", "port": 5201, "protocol": "tcp", "direction": "forward",
                 "duration_s": 10.0, "parallel": 1, "length": 131072, "window": window},
        "start": {"timestamp_unix_ms": 1_700_000_000_000u64,
                  "local": {"hostname": "cnaf-1", "kernel": "Linux 6.1.0", "cpus": 8,
                            "congestion_default": "cubic", "rmem_max": 33554432, "wmem_max": 33554432,
                            "tcp_rmem": [4096, 131072, 33554432], "tcp_wmem": [4096, 16384, 33554432]},
                  "remote": {"hostname": "cern-1", "kernel": "Linux 6.1.0", "cpus": 8,
                             "congestion_default": "cubic", "rmem_max": 33554432, "wmem_max": 33554432,
                             "tcp_rmem": [4096, 131072, 33554432], "tcp_wmem": [4096, 16384, 33554432]},
                  "streams": []},
        "intervals": [],
        "summary": {"direction": "client_to_server",
                    "sent": {"bits_per_second": sent, "retransmits": 0},
                    "received": {"bits_per_second": received},
                    "cpu": {"local": {"total_percent": cpu_local}, "remote": {"total_percent": cpu_remote}},
                    "verdict": {"limited_by": "rwnd", "explanation": "the receive window was the limit"}},
        "warnings": [], "errors": []
    })
}

/// Throughput against socket buffer (4 KiB .. 4 MiB, geometric), 5
/// repetitions per point, CPU rising with throughput: the seeds' figure.
pub fn window_sweep() -> Value {
    let windows = [
        "4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1M", "2M", "4M",
    ];
    let mut points = Vec::new();
    let mut runs = Vec::new();
    let mut id = 100;
    for (i, w) in windows.iter().enumerate() {
        let bytes = 4096.0 * 2f64.powi(i as i32);
        // Window-limited at 4 ms RTT up to ~6 Gbit/s.
        let mean = (bytes * 8.0 / 0.004).min(6.0e9) * 0.97;
        let half = mean * 0.03;
        let cpu = 5.0 + 90.0 * mean / 6.0e9;
        let mut ids = Vec::new();
        for rep in 0..5 {
            let v = mean + half * (rep as f64 - 2.0) / 2.0;
            runs.push(
                json!({"id": id, "sweep_id": 3, "point": i, "repetition": rep,
                "started_unix_ms": 1_700_000_000_000i64 + id * 11_000, "kind": "test",
                "report": mini_report(v * 1.001, v, cpu, cpu * 0.8, w)}),
            );
            ids.push(id);
            id += 1;
        }
        points.push(json!({"index": i, "params": {"window": w}, "runs": ids,
            "stats": {
                "received_bits_per_second": {"mean": mean, "stddev": half, "min": mean - half,
                    "max": mean + half, "median": mean, "ci_low": mean - half, "ci_high": mean + half},
                "sent_bits_per_second": {"mean": mean * 1.001, "stddev": half, "min": mean - half,
                    "max": mean + half, "median": mean, "ci_low": mean * 1.001 - half, "ci_high": mean * 1.001 + half},
                "cpu_local_percent": {"mean": cpu, "stddev": 1.0},
                "cpu_remote_percent": {"mean": cpu * 0.8, "stddev": 1.0}}}));
    }
    json!({"schema": "linkperf/1", "kind": "sweep", "id": 3,
        "sweep": {"id": 3, "created_unix_ms": 1_700_000_000_000i64, "host": "cern-1",
            "vary": [{"name": "window", "values": windows, "geometric": true}],
            "repeat": 5, "order": "shuffled", "seed": 42,
            "base_options": {"time": 10, "parallel": 1, "udp": false}, "status": "complete"},
        "points": points, "runs": runs})
}

/// Window x write size over loopback, real `linkperf client -J` documents,
/// one run per point and no stats in the export (the report computes them).
pub fn real_two_param_sweep() -> Value {
    let docs = fixture("sweep_window_length.json");
    let docs = docs.as_array().expect("array of {params, report}");
    let mut points = Vec::new();
    let mut runs = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let id = 500 + i as i64;
        points.push(json!({"index": i, "params": d["params"], "runs": [id]}));
        runs.push(json!({"id": id, "sweep_id": 9, "point": i, "repetition": 0,
            "started_unix_ms": d["report"]["start"]["timestamp_unix_ms"], "kind": "test",
            "report": d["report"]}));
    }
    json!({"schema": "linkperf/1", "kind": "sweep", "id": 9,
        "sweep": {"id": 9, "created_unix_ms": 1_700_000_000_000i64, "host": "127.0.0.1",
            "vary": [{"name": "window", "values": ["16K", "64K", "256K"], "geometric": true},
                     {"name": "length", "values": ["8K", "128K"], "geometric": true}],
            "repeat": 1, "order": "fixed", "base_options": {"time": 1, "interval": 0.5},
            "status": "complete", "some_future_field": {"x": 1}},
        "points": points, "runs": runs})
}

/// A single run export around a real client document.
pub fn real_run(fixture_name: &str) -> Value {
    let report = fixture(fixture_name);
    json!({"schema": "linkperf/1", "kind": "run", "id": 41, "sweep": null, "points": [],
        "runs": [{"id": 41, "sweep_id": null, "point": null, "repetition": null,
                  "started_unix_ms": report["start"]["timestamp_unix_ms"], "kind": "test",
                  "report": report}]})
}

/// The seed's fibre acceptance test: 8 host pairs, UDP at 950 Mbit/s, 30 s,
/// 5 sessions per direction; session 1 of the first direction fell short
/// and two hosts send less than asked.
pub fn campaign() -> Value {
    let mut phases = Vec::new();
    for (name, base) in [
        ("underground → external", 0),
        ("external → underground", 10),
    ] {
        for session in 1..=5 {
            let mut flows = Vec::new();
            let mut intervals = Vec::new();
            let dip = if base == 0 && session == 1 { 0.8 } else { 1.0 };
            for h in 0..8 {
                let from = format!("192.168.1.{}", 12 + h - base);
                let to = format!("192.168.1.{}", 2 + h + base);
                let slow_sender = base == 0 && (h == 4 || h == 5);
                let sent = if slow_sender { 7.6e8 } else { 9.5e8 };
                let received = sent * (if base == 0 { 0.78 } else { 0.74 }) * dip;
                flows.push(json!({"from": from, "to": to,
                    "sent": {"bits_per_second": sent},
                    "received": {"bits_per_second": received, "lost_percent": 20.0}}));
            }
            for t in 0..30 {
                let wobble = ((t * 7 + session * 3) % 11) as f64 / 11.0 - 0.5;
                let total = (if base == 0 { 5.913e9 } else { 5.607e9 }) * dip + wobble * 1.2e8;
                // The first direction as `linkperf campaign -J` writes it, the
                // second in the export's documented short form.
                intervals.push(if base == 0 {
                    json!({"start": t as f64, "end": (t + 1) as f64, "flows": 8,
                           "received_bits_per_second": total, "sent_bits_per_second": 7.22e9})
                } else {
                    json!({"start": t as f64, "end": (t + 1) as f64, "bits_per_second": total})
                });
            }
            let hosts: Vec<Value> = (0..8)
                .map(|h| {
                    let name = format!("192.168.1.{}", 2 + h + base);
                    json!({"name": name, "sent_bits_per_second": 9.5e8, "received_bits_per_second": 7.1e8,
                           "peers_sent_bits_per_second": 9.5e8, "shortfall_percent": 25.3})
                })
                .collect();
            phases.push(json!({"name": name, "session": session, "bitrate": 9.5e8,
                "aggregate": {"intervals": intervals}, "flows": flows, "hosts": hosts}));
        }
    }
    json!({"schema": "linkperf/1", "kind": "campaign", "id": 12,
        "campaign": {"name": "LNGS fibre acceptance", "protocol": "udp", "bitrate": "950M",
                     "length": 1470, "time": 30, "sessions": 5},
        "phases": phases, "runs": [],
        "flags": [{"kind": "session_outlier", "phase": "underground → external", "session": 1,
                   "subject": "session 1", "message": "mean aggregate 4.73 Gbit/s is 20% below the other sessions"}]})
}

/// Counts of non-overlapping occurrences.
pub fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// The `points="..."` attributes of every polyline, parsed.
pub fn polylines(html: &str) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    for chunk in html.split("<polyline").skip(1) {
        let Some(start) = chunk.find("points=\"") else {
            continue;
        };
        let rest = &chunk[start + 8..];
        let end = rest.find('"').unwrap_or(0);
        let pts = rest[..end]
            .split_whitespace()
            .filter_map(|p| {
                let (x, y) = p.split_once(',')?;
                Some((x.parse().ok()?, y.parse().ok()?))
            })
            .collect();
        out.push(pts);
    }
    out
}

/// An export of one real `linkperf rr -J` run kept in fixtures/.
pub fn real_rr_run(fixture_name: &str) -> Value {
    let report = fixture(fixture_name);
    json!({"schema": "linkperf/1", "kind": "run", "id": 77, "sweep": null, "points": [],
        "runs": [{"id": 77, "sweep_id": null, "point": null, "repetition": null,
                  "started_unix_ms": report["start"]["timestamp_unix_ms"], "kind": "rr",
                  "report": report}]})
}
