//! Each page kind from small hand-made exports and from real `linkperf
//! client -J` documents: the plots, tables and numbers that must be there.

mod common;

use common::{count, polylines, svg};
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
    // Every id once: a link leads to one place.
    let mut ids: Vec<&str> = html
        .split(" id=\"")
        .skip(1)
        .map(|c| &c[..c.find('"').unwrap()])
        .collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate ids");
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

/// The text of each cell of a row (tags such as links removed).
fn row_cells(row: &str) -> Vec<String> {
    svg::strip_tags(row)
        .split(" | ")
        .map(|c| c.trim().to_string())
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
    assert_eq!(count(t, "<tr"), 12);
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
    assert_eq!(count(t, "<tr"), 4, "header and 3 windows");
    for d in docs.as_array().unwrap() {
        let bps = d["report"]["summary"]["received"]["bits_per_second"]
            .as_f64()
            .unwrap();
        let w = d["params"]["window"].as_str().unwrap();
        let l = d["params"]["length"].as_str().unwrap();
        let row = t
            .split("<tr")
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
            svg::row_text(&html, &format!("run-{id}"))
                .is_some_and(|r| r.starts_with(&format!("{id} |"))),
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
    // 2 streams + sum in the first plot, a step (2 vertices) per interval;
    // 2 RTT and 2 cwnd lines, a sample at each interval's end.
    assert_eq!(lines.len(), 7, "{}", lines.len());
    assert!(lines[..3].iter().all(|l| l.len() == 2 * n));
    assert!(lines[3..].iter().all(|l| l.len() == n));
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
    assert!(html.contains("Loss (%)"));
    // Loopback jitter is some µs: the axis says so rather than "0.004 ms".
    assert!(html.contains("Jitter (µs)"));
    assert!(html.contains("jitter at the interval&#39;s end (right axis)"));
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

/// The x axis of a plot (a time axis: numeric ticks along the bottom).
fn x_axis(plot: &str) -> svg::Ticks {
    svg::numeric_axes(plot)
        .into_iter()
        .find(|t| !t.vertical)
        .expect("a numeric x axis")
}

/// The left y axis of a plot (the first vertical numeric axis drawn).
fn y_axis(plot: &str) -> svg::Ticks {
    svg::numeric_axes(plot)
        .into_iter()
        .find(|t| t.vertical)
        .expect("a numeric y axis")
}

#[test]
fn interval_rates_are_drawn_across_their_intervals_from_the_first_start() {
    for fixture in ["run_tcp_p2.json", "run_udp.json"] {
        let export = common::real_run(fixture);
        let intervals = export["runs"][0]["report"]["intervals"]
            .as_array()
            .unwrap()
            .clone();
        let html = page(&export);
        let plot = svg::plot(&html, "Throughput per interval");
        let x = x_axis(plot);
        let first_start = intervals[0]["start"].as_f64().unwrap();
        let last_end = intervals.last().unwrap()["end"].as_f64().unwrap();
        assert_eq!(
            first_start, 0.0,
            "{fixture}: the first interval starts the test"
        );
        // Every interval line (each stream, the sum, what was sent) begins at
        // the first interval's start and ends at the last one's end.
        let lines = svg::polylines(plot);
        assert!(!lines.is_empty());
        for l in &lines {
            let (x0, x1) = (l.points[0].0, l.points[l.points.len() - 1].0);
            assert!(
                (x0 - x.pixel(first_start)).abs() < 0.6,
                "{fixture}: a line starts at x = {x0} px = {:.3} s, not at {first_start} s",
                x.value(x0)
            );
            assert!(
                (x1 - x.pixel(last_end)).abs() < 0.6,
                "{fixture}: a line ends at {:.3} s, not at {last_end} s",
                x.value(x1)
            );
        }
        // The first interval's value is drawn over the whole first interval.
        let first = intervals[0]["sum"]["bits_per_second"].as_f64().unwrap();
        let y = y_axis(plot);
        let unit = linkperf_units::format_rate(first);
        let sum = lines
            .iter()
            .find(|l| l.color == "#000000")
            .expect("the sum line is black");
        let (a, b) = (sum.points[0], sum.points[1]);
        assert!((a.1 - b.1).abs() < 0.01, "{fixture}: a flat step");
        assert!((b.0 - x.pixel(intervals[0]["end"].as_f64().unwrap())).abs() < 0.6);
        let scale = if unit.ends_with("Gbit/s") { 1e9 } else { 1e6 };
        assert!(
            (y.value(a.1) * scale - first).abs() < 0.01 * first,
            "{fixture}: step at {} vs first interval {unit}",
            y.value(a.1)
        );
    }
}

#[test]
fn sent_and_received_and_each_stream_stay_apart() {
    // UDP: what was sent (the same as received on loopback) is drawn first,
    // wider and translucent, so the received line on top stays visible.
    let html = page(&common::real_run("run_udp.json"));
    let plot = svg::plot(&html, "Throughput per interval");
    let lines = svg::polylines(plot);
    let sent = lines
        .iter()
        .position(|l| l.opacity < 1.0)
        .expect("a translucent sent band");
    let received = lines
        .iter()
        .position(|l| l.color == "#000000")
        .expect("the received line");
    assert!(sent < received, "sent is drawn under received");
    assert!(lines[sent].width >= 2.0 * lines[received].width);
    assert_ne!(lines[sent].color, lines[received].color);
    for label in ["sent</text>", "received</text>"] {
        assert!(plot.contains(label), "legend lacks {label}");
    }

    // Two TCP streams of the same rate: each has its own colour, dash and marker.
    let html = page(&common::real_run("run_tcp_p2.json"));
    for title in [
        "Throughput per interval",
        "RTT per interval",
        "Congestion window per interval",
    ] {
        let plot = svg::plot(&html, title);
        let lines = svg::polylines(plot);
        let streams: Vec<&svg::Polyline> = lines.iter().filter(|l| l.color != "#000000").collect();
        assert_eq!(streams.len(), 2, "{title}");
        assert_ne!(streams[0].color, streams[1].color, "{title}");
        assert_ne!(
            streams[0].dash, streams[1].dash,
            "{title}: same dash pattern"
        );
        // Markers: one filled, the other an outline that shows around it.
        assert!(
            plot.contains("fill=\"none\" stroke=\"#D55E00\""),
            "{title}: open markers of stream 1"
        );
        assert!(plot.contains(">stream 0<") && plot.contains(">stream 1<"));
    }
}

/// A sweep of two runs per point, as the archive exports it: the Student-t
/// interval of n = 2 (t = 12.706 at 95 %) reaches far below zero.
fn two_run_sweep() -> Value {
    let values: [(u64, f64, f64); 2] = [(4096, 40e9, 110e9), (65536, 80e9, 95e9)];
    let mut points = Vec::new();
    let mut runs = Vec::new();
    for (i, (w, a, b)) in values.iter().enumerate() {
        let mean = (a + b) / 2.0;
        let sd = ((a - mean).powi(2) + (b - mean).powi(2)).sqrt();
        let half = 12.706 * sd / 2f64.sqrt();
        let ids = [10 + 2 * i as i64, 11 + 2 * i as i64];
        for (k, v) in [a, b].iter().enumerate() {
            runs.push(json!({"id": ids[k], "point": i, "repetition": k,
                "report": {"summary": {"received": {"bits_per_second": v},
                                       "sent": {"bits_per_second": v}}}}));
        }
        points.push(
            json!({"index": i, "params": {"window": w.to_string()}, "runs": ids,
            "stats": {"received_bits_per_second": {"n": 2, "mean": mean, "stddev": sd,
                "min": a.min(*b), "max": a.max(*b), "median": mean,
                "ci_low": mean - half, "ci_high": mean + half, "level": 95.0}}}),
        );
    }
    json!({"schema": "linkperf/1", "kind": "sweep", "id": 4,
        "sweep": {"vary": [{"name": "window", "values": ["4096", "65536"], "geometric": true}],
                  "repeat": 2, "status": "complete",
                  "base_options": {"sndbuf": null, "rcvbuf": null, "length": 131072,
                                   "parallel": 1, "duration_s": 10.0}},
        "points": points, "runs": runs})
}

#[test]
fn error_bars_of_two_runs_span_min_to_max_and_never_go_below_zero() {
    let export = two_run_sweep();
    let html = page(&export);
    let plot = svg::plot(&html, "Throughput and CPU");
    let y = y_axis(plot);
    let zero = y.pixel(0.0);
    // The received curve's bars (sent has its own, of the same runs here).
    let bars: Vec<_> = svg::error_bars(plot)
        .into_iter()
        .filter(|b| b.3 == "#0072B2")
        .collect();
    assert_eq!(bars.len(), 2, "{bars:?}");
    let mut expected: [(f64, f64); 2] = [(40.0, 110.0), (80.0, 95.0)];
    expected.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut got: Vec<(f64, f64)> = bars.iter().map(|b| (y.value(b.2), y.value(b.1))).collect();
    got.sort_by(|a, b| a.0.total_cmp(&b.0));
    for ((lo, hi), (elo, ehi)) in got.iter().zip(expected) {
        assert!(*lo >= -1e-9, "an error bar reaches {lo} Gbit/s, below zero");
        // Half a pixel of the axis, in Gbit/s.
        let tol = (y.value(zero - 0.6) - y.value(zero)).abs();
        assert!(
            (lo - elo).abs() < tol && (hi - ehi).abs() < tol,
            "bar {lo}..{hi}, runs {elo}..{ehi}"
        );
    }
    assert!(html.contains("the lowest and the highest run at each point (min–max)"));
    // The table never prints an interval below zero.
    let t = table(&html, "Statistics of every point");
    assert!(!t.contains(">-") && !t.contains("– -"), "{t}");
    assert!(t.contains("cut at zero"));
}

#[test]
fn axis_ticks_are_nice_steps_labelled_exactly() {
    // 11 Gbit/s: a y step of 2.5 Gbit/s.
    let mut export = common::real_run("run_tcp_p2.json");
    let report = &mut export["runs"][0]["report"];
    for iv in report["intervals"].as_array_mut().unwrap() {
        iv["sum"]["bits_per_second"] = json!(11.0e9);
        iv["sum"]["sent_bits_per_second"] = json!(11.0e9);
        for st in iv["streams"].as_array_mut().unwrap() {
            st["receiver"]["bits_per_second"] = json!(5.5e9);
            st["sender"]["bits_per_second"] = json!(5.5e9);
        }
    }
    report["summary"]["received"]["bits_per_second"] = json!(11.0e9);
    let pages = [
        page(&export),
        page(&common::real_run("run_udp.json")),
        page(&common::real_run("run_bidir.json")),
        page(&common::window_sweep()),
        page(&common::campaign()),
    ];
    let mut seen_2_5 = false;
    for html in &pages {
        for (title, plot) in svg::plots(html) {
            for axis in svg::numeric_axes(plot) {
                // Time axes and every y axis are linear with computed ticks.
                if axis.vertical || title.contains("per interval") || title.starts_with("Aggregate")
                {
                    if let Err(e) = svg::check_linear_axis(&axis) {
                        panic!("{title}: {e}");
                    }
                    // The step whose labels need a decimal the values lack.
                    let step = axis.ticks[1].0 - axis.ticks[0].0;
                    seen_2_5 |= (step - 2.5).abs() < 1e-9;
                }
            }
        }
    }
    assert!(seen_2_5, "no axis with a step of 2.5 x 10^k was checked");
}

#[test]
fn an_interrupted_run_is_marked_above_everything() {
    let mut export = common::real_run("run_tcp_p2.json");
    let html = page(&export);
    assert!(!html.contains("class=\"banner\""));
    export["runs"][0]["report"]["interrupted"] = json!(true);
    let html = page(&export);
    let banner = html.find("class=\"banner\"").expect("a banner");
    assert!(
        banner < html.find("<section").unwrap(),
        "before the first section"
    );
    assert!(html.contains("Interrupted: run 41 was stopped early (stopped after 3 s of "));
    // In the table of runs too.
    let row = svg::row_text(&html, "row-run-41").expect("row of run 41");
    assert!(row.contains("interrupted (stopped after 3 s"), "{row}");
}

#[test]
fn udp_jitter_is_summarised_from_the_intervals_plotted() {
    let export = common::real_run("run_udp.json");
    let report = &export["runs"][0]["report"];
    let html = page(&export);
    let j: Vec<f64> = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| iv["sum"]["jitter_ms"].as_f64().unwrap())
        .collect();
    let mean = j.iter().sum::<f64>() / j.len() as f64;
    let t = table(&html, "Summary");
    let cells = row_cells(t.split("<tr>").nth(2).expect("a data row"));
    let heads = row_cells(t.split("<tr>").nth(1).expect("a header row"));
    let col = |name: &str| {
        heads
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name:?} in {heads:?}"))
    };
    let shown = &cells[col("jitter, mean of intervals")];
    let as_ms = |s: &str| -> f64 {
        let (v, unit) = s.split_once(' ').unwrap();
        v.parse::<f64>().unwrap() * if unit == "µs" { 1e-3 } else { 1.0 }
    };
    assert!(
        (as_ms(shown) - mean).abs() <= 0.006 * mean,
        "{shown} vs mean {mean} ms"
    );
    let final_est = report["summary"]["received"]["jitter_ms"].as_f64().unwrap();
    let shown = &cells[col("jitter, final RFC 3550 estimate")];
    assert!(
        (as_ms(shown) - final_est).abs() <= 0.006 * final_est,
        "{shown} vs {final_est}"
    );
    let p = &cells[col("jitter p50 / p95 / max")];
    let max = j.iter().copied().fold(0.0, f64::max);
    let last = p.rsplit(" / ").next().unwrap();
    assert!((as_ms(last) - max).abs() <= 0.006 * max, "{p} vs max {max}");
    // The plot shows that mean as a line on the jitter axis.
    assert!(html.contains(&format!(
        "mean jitter {shown_mean}",
        shown_mean = &cells[col("jitter, mean of intervals")]
    )));
}

#[test]
fn a_varied_option_is_never_listed_as_common() {
    let html = page(&two_run_sweep());
    let common = svg::common_options_table(&html);
    // -w sets both socket buffers.
    for key in ["sndbuf", "rcvbuf", "window"] {
        assert!(
            !common.contains(&format!(">{key}<")),
            "{key} listed as common: {common}"
        );
    }
    assert!(common.contains(">length<") && common.contains(">parallel<"));
}

#[test]
fn sweep_points_and_rows_link_to_their_runs() {
    for export in [
        common::window_sweep(),
        two_run_sweep(),
        common::real_two_param_sweep(),
    ] {
        let html = page(&export);
        assert_eq!(svg::dangling_links(&html), Vec::<String>::new());
        // Each point's marker leads to its row, which leads to each of its runs.
        let plot = &svg::plots(&html)[0].1;
        let links = svg::marker_links(plot);
        let points = export["points"].as_array().unwrap();
        for p in points {
            let anchor = format!("#point-{}", p["index"]);
            assert!(links.contains(&anchor), "no marker links to {anchor}");
            let row_start = html
                .find(&format!("<tr id=\"point-{}\"", p["index"]))
                .unwrap();
            let row = &html[row_start..row_start + html[row_start..].find("</tr>").unwrap()];
            for id in p["runs"].as_array().unwrap() {
                assert!(
                    row.contains(&format!("href=\"#run-{id}\"")),
                    "point {} lacks run {id}",
                    p["index"]
                );
            }
        }
    }
}
