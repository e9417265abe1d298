//! Each page kind from small hand-made exports and from real `linkperf
//! client -J` documents: the plots, tables and numbers that must be there.

mod common;

use common::{count, polylines};
use linkperf_report::render;
use serde_json::{json, Value};

fn page(export: &Value) -> String {
    let html = render(export).unwrap_or_else(|e| panic!("render failed: {e}"));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    // Self-contained: no scripts, no external resources.
    assert!(!html.contains("<script"), "no scripts");
    assert!(!html.contains(" src=") && !html.contains("<link") && !html.contains("url("));
    for bad in ["NaN", "\"inf", ">inf", "-inf", "e+"] {
        assert!(!html.contains(bad), "broken number {bad:?}");
    }
    html
}

/// The text of the table whose caption starts with `caption`.
fn table<'a>(html: &'a str, caption: &str) -> &'a str {
    let start = html
        .find(&format!("<caption>{caption}"))
        .unwrap_or_else(|| panic!("no table captioned {caption:?}"));
    let end = html[start..].find("</table>").expect("table end") + start;
    &html[start..end]
}

fn row_cells(row: &str) -> Vec<String> {
    row.split("</t")
        .filter_map(|c| c.rfind('>').map(|i| c[i + 1..].to_string()))
        .collect()
}

#[test]
fn one_parameter_sweep_has_the_curve_error_bars_cpu_axis_and_table() {
    let export = common::window_sweep();
    let html = page(&export);
    // One plot: received, sent (with error bars) and two CPU curves.
    assert_eq!(count(&html, "<svg"), 1);
    let lines = polylines(&html);
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(|l| l.len() == 11), "11 points each");
    // Throughput rises with the window: the received curve climbs (SVG y down).
    let received = &lines[0];
    assert!(
        received.windows(2).all(|w| w[1].1 <= w[0].1 + 0.01),
        "{received:?}"
    );
    assert!(received.windows(2).all(|w| w[1].0 > w[0].0), "x grows");
    // Log x: geometric windows are evenly spaced.
    let gaps: Vec<f64> = received.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert!(gaps.iter().all(|g| (g - gaps[0]).abs() < 0.1), "{gaps:?}");
    assert!(html.contains("Socket buffer (-w), log scale"));
    assert!(html.contains(">4 KiB<") && html.contains(">4 MiB<"));
    assert!(html.contains("Throughput (Gbit/s)"));
    assert!(html.contains("CPU (%)"));
    assert!(html.contains("CPU, local (client) (right axis)"));
    assert!(html.contains("Error bars: confidence interval of the mean"));
    // The hover text of the last point carries its interval.
    assert!(html
        .contains("window = 4M, received (receiver): 5.82 Gbit/s (CI 5.65 Gbit/s – 5.99 Gbit/s)"));
    // All points: 11 rows with the stored means; all 55 runs listed.
    let t = table(&html, "Statistics of every point");
    assert_eq!(count(t, "<tr>"), 12);
    assert!(t.contains(">4M</td>") && t.contains("5.82 Gbit/s"));
    assert!(html.contains("<summary>55 runs</summary>"));
    assert_eq!(count(&html, "rwnd"), 55);
    // Host facts under their sysctl names.
    assert!(html.contains("net.core.rmem_max"));
    assert!(html.contains("33554432 (32 MiB)"));
}

#[test]
fn two_parameter_sweep_of_real_runs_has_a_curve_per_value_and_the_means_table() {
    let export = common::real_two_param_sweep();
    let docs = common::fixture("sweep_window_length.json");
    let html = page(&export);
    assert!(html.contains("one curve per Write size (-l)"));
    assert!(html.contains("length=8K") && html.contains("length=128K"));
    // Throughput plot (2 curves) and CPU plot (2 curves).
    assert_eq!(count(&html, "<svg"), 2);
    let lines = polylines(&html);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines.iter().all(|l| l.len() == 3));
    // One run per point: no error bars, and the page says so.
    assert!(html.contains("No error bars: one run per point"));
    // The table of means: windows down, lengths across, the measured values.
    let t = table(&html, "Mean received throughput");
    assert_eq!(count(t, "<tr>"), 4, "header and 3 windows");
    for d in docs.as_array().unwrap() {
        let bps = d["report"]["summary"]["received"]["bits_per_second"]
            .as_f64()
            .unwrap();
        let w = d["params"]["window"].as_str().unwrap();
        let l = d["params"]["length"].as_str().unwrap();
        let row = t
            .split("<tr>")
            .find(|r| r.contains(&format!(">{w}</th>")))
            .unwrap_or_else(|| panic!("no row {w}"));
        let cells = row_cells(row);
        let col = if l == "8K" { 1 } else { 2 };
        let shown = &cells[col];
        // Shown in Gbit/s with 3 significant digits, or with its own unit.
        let as_gbit = format!("{:.1}", bps / 1e9);
        let own = linkperf_units::format_rate(bps);
        assert!(
            shown.starts_with(&as_gbit[..as_gbit.len().min(3)]) || *shown == own,
            "window {w} length {l}: shown {shown:?}, measured {bps}"
        );
    }
    // Host facts from the real documents, and every run.
    assert!(html.contains("net.ipv4.tcp_congestion_control"));
    for id in 500..506 {
        assert!(
            html.contains(&format!("<td class=\"n\">{id}</td>")),
            "run {id}"
        );
    }
}

#[test]
fn real_tcp_run_has_stream_sum_mean_rtt_and_cwnd_series() {
    let export = common::real_run("run_tcp_p2.json");
    let report = &export["runs"][0]["report"];
    let html = page(&export);
    // Throughput, RTT and cwnd plots.
    assert_eq!(count(&html, "<svg"), 3);
    let lines = polylines(&html);
    let n = report["intervals"].as_array().unwrap().len();
    // 2 streams + sum in the first plot, 2 RTT, 2 cwnd lines: all full length.
    assert_eq!(lines.len(), 7, "{}", lines.len());
    assert!(lines.iter().all(|l| l.len() == n));
    let mean = report["summary"]["received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    assert!(html.contains(&format!(
        "mean received {}",
        linkperf_units::format_rate(mean)
    )));
    assert!(
        html.contains("stream 0") && html.contains("stream 1") && html.contains("sum of streams")
    );
    assert!(html.contains("RTT (µs)") || html.contains("RTT (ms)"));
    assert!(html.contains("Congestion window (MiB)") || html.contains("Congestion window (KiB)"));
    // The sum line is above each stream line (smaller SVG y) at every interval.
    let sum = &lines[2];
    for s in &lines[0..2] {
        for (a, b) in sum.iter().zip(s) {
            assert!(a.1 <= b.1 + 0.01);
        }
    }
    // Summary, intervals and sockets tables.
    assert!(html.contains("<caption>Summary</caption>"));
    assert_eq!(count(&html, "<summary>6 intervals</summary>"), 1);
    assert!(html.contains("Sockets of each stream"));
    assert!(html.contains("limited by network"));
}

#[test]
fn real_udp_run_has_loss_and_jitter() {
    let export = common::real_run("run_udp.json");
    let html = page(&export);
    assert_eq!(count(&html, "<svg"), 2);
    assert!(html.contains("Loss (%)") && html.contains("Jitter (ms)"));
    assert!(html.contains("jitter (right axis)"));
    assert!(html.contains("sum as sent"));
    assert!(!html.contains("RTT per interval"));
}

#[test]
fn bidirectional_run_plots_each_direction() {
    let html = page(&common::real_run("run_bidir.json"));
    assert!(html.contains("Throughput per interval, client → server"));
    assert!(html.contains("Throughput per interval, server → client"));
    // Per direction: throughput, RTT and cwnd.
    assert_eq!(count(&html, "<svg"), 6);
}

#[test]
fn campaign_has_sessions_means_bars_and_flags() {
    let html = page(&common::campaign());
    // Per direction: aggregate series + bars.
    assert_eq!(count(&html, "<svg"), 4);
    assert!(html.contains("session 1") && html.contains("session 5"));
    // The short first session is found and marked, with its mean.
    assert!(html.contains("4.73 Gbit/s (session 1)"));
    let overview = table(&html, "Overview");
    assert_eq!(
        count(overview, "class=\"n short\""),
        3,
        "worst session + flows short x2"
    );
    // 8 flows per direction, labelled sender → receiver, with sent and received bars.
    assert_eq!(count(&html, ">192.168.1.16</text>"), 1);
    assert!(html.contains("→ 192.168.1.6</text>"));
    assert_eq!(
        count(
            &html,
            "<title>192.168.1.16 → 192.168.1.6: sent (by the sender) 760 Mbit/s</title>"
        ),
        1
    );
    assert!(html.contains("target 950 Mbit/s"));
    // The campaign's own flag and per-host table.
    assert!(html.contains("session outlier"));
    assert!(html.contains("shortfall"));
    // Mean over all sessions of the first direction: (4.73 + 4 x 5.91) / 5.
    assert!(html.contains("mean over all sessions 5.67 Gbit/s"));
}

#[test]
fn unknown_fields_are_ignored_and_missing_optional_ones_tolerated() {
    let export = json!({
        "schema": "linkperf/1", "kind": "sweep", "id": 2, "future": [1, 2],
        "sweep": {"vary": [{"name": "congestion", "values": ["reno", "cubic", "bbr"]}]},
        "points": [
            {"params": {"congestion": "reno"}, "stats": {"received_bits_per_second": {"mean": 9.0e8}}},
            {"params": {"congestion": "cubic"}, "stats": {"received_bits_per_second": {"mean": 9.4e8}}},
            {"params": {"congestion": "bbr"}}
        ],
        "runs": []
    });
    let html = page(&export);
    // Categorical x: the names are the ticks.
    for c in ["reno", "cubic", "bbr"] {
        assert!(html.contains(&format!(">{c}</text>")), "{c}");
    }
    assert!(html.contains("Congestion control (-C)"));
    assert!(html.contains("The export carries no host facts."));
}

#[test]
fn text_from_the_export_is_escaped() {
    let mut export = common::real_run("run_tcp_p2.json");
    export["runs"][0]["report"]["start"]["local"]["hostname"] = json!("<script>alert(1)</script>");
    export["runs"][0]["report"]["warnings"] = json!(["a & b < c"]);
    let html = page(&export);
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("a &amp; b &lt; c"));
}

#[test]
fn errors_are_one_line_and_name_the_field() {
    let cases = [
        (json!(null), "JSON object"),
        (json!({"kind": "run"}), "`schema`"),
        (
            json!({"schema": "linkperf/2", "kind": "run", "id": 1, "runs": []}),
            "newer",
        ),
        (
            json!({"schema": "linkperf/1", "kind": "sweep", "id": 1, "runs": [], "points": []}),
            "`sweep`",
        ),
        (
            json!({"schema": "linkperf/1", "kind": "run", "id": 1, "runs": []}),
            "no runs",
        ),
        (
            json!({"schema": "linkperf/1", "kind": "campaign", "id": 1}),
            "`phases`",
        ),
        (
            json!({"schema": "linkperf/1", "kind": "run", "id": "x", "runs": [{"id": "7", "report": {}}]}),
            "`runs[0].id`",
        ),
    ];
    for (export, want) in cases {
        let e = render(&export).expect_err("must fail").to_string();
        assert!(e.contains(want), "{e:?} lacks {want:?}");
        assert_eq!(e.lines().count(), 1, "{e:?}");
    }
}
