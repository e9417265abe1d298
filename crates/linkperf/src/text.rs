//! Human output: a compact interval table and a summary read at a glance,
//! rates and transferred bytes in the unit the user chose (`-f`).

use crate::report::{DirectionSummary, IntervalReport, IntervalSum, Report};
use linkperf_proto::results::{GapStats, Role, SideResult};
use linkperf_proto::{Protocol, TestConfig};
use linkperf_units::{format_bytes, ReportUnit};
use std::fmt::Write;

pub fn header(config: &TestConfig, host: &str, port: u16) -> String {
    let proto = if config.protocol == Protocol::Udp {
        "UDP"
    } else {
        "TCP"
    };
    let length = match config.bytes {
        Some(b) => format!("{} ", format_bytes(b as f64)),
        None => format!("{} s, ", config.duration_s),
    };
    let dir = match config.direction {
        linkperf_proto::Direction::Forward => "client -> server",
        linkperf_proto::Direction::Reverse => "server -> client (reverse)",
        linkperf_proto::Direction::Bidir => "both ways (bidir)",
    };
    format!(
        "linkperf {} -> {host}:{port}: {proto}, {} stream{}, {length}{dir}",
        env!("CARGO_PKG_VERSION"),
        config.parallel,
        if config.parallel == 1 { "" } else { "s" }
    )
}

pub fn interval_header(udp: bool) -> String {
    if udp {
        format!(
            "{:>13}  {:>14}  {:>14}  {:>9}  {:>8}",
            "interval", "sent", "received", "lost", "jitter"
        )
    } else {
        format!(
            "{:>13}  {:>14}  {:>14}  {:>6}  {:>9}  {:>10}",
            "interval", "sent", "received", "retr", "rtt", "cwnd"
        )
    }
}

fn sum_line(
    label: &str,
    r: &IntervalReport,
    s: &IntervalSum,
    udp: bool,
    unit: ReportUnit,
) -> String {
    let span = format!("{:.2}-{:.2} s", r.start, r.end);
    let omitted = if r.omitted { "  (omitted)" } else { "" };
    if udp {
        format!(
            "{label}{span:>13}  {:>14}  {:>14}  {:>9}  {:>8}{omitted}",
            unit.rate(s.sent_bits_per_second),
            unit.rate(s.received_bits_per_second),
            format!("{:.2}%", s.loss_percent.unwrap_or(0.0)),
            format!("{:.3}ms", s.jitter_ms.unwrap_or(0.0)),
        )
    } else {
        let rtt = r
            .streams
            .iter()
            .filter_map(|st| st.sender.as_ref()?.tcp.as_ref()?.rtt_ms)
            .fold(None, |acc: Option<f64>, v| {
                Some(acc.map_or(v, |a| a.max(v)))
            });
        let cwnd: Option<u64> = r
            .streams
            .iter()
            .filter_map(|st| st.sender.as_ref()?.tcp.as_ref()?.cwnd_bytes)
            .reduce(|a, b| a + b);
        format!(
            "{label}{span:>13}  {:>14}  {:>14}  {:>6}  {:>9}  {:>10}{omitted}",
            unit.rate(s.sent_bits_per_second),
            unit.rate(s.received_bits_per_second),
            s.retransmits
                .map(|r| r.to_string())
                .unwrap_or_else(|| "-".into()),
            rtt.map(|v| format!("{v:.2}ms"))
                .unwrap_or_else(|| "-".into()),
            cwnd.map(|c| format_bytes(c as f64))
                .unwrap_or_else(|| "-".into()),
        )
    }
}

pub fn interval(r: &IntervalReport, udp: bool) -> String {
    interval_in(r, udp, ReportUnit::default())
}

/// One interval line (two with --bidir), rates in `unit`.
pub fn interval_in(r: &IntervalReport, udp: bool, unit: ReportUnit) -> String {
    let mut out = sum_line("", r, &r.sum, udp, unit);
    if let Some(rev) = &r.sum_reverse {
        out.push('\n');
        out.push_str(&sum_line("rev", r, rev, udp, unit));
    }
    out
}

fn direction_block(out: &mut String, s: &DirectionSummary, udp: bool, unit: ReportUnit) {
    let _ = writeln!(out, "summary, {}:", s.direction.replace('_', " "));
    let _ = writeln!(
        out,
        "  sent      {:>10} in {:.2} s = {}{}",
        unit.bytes(s.sent.bytes as f64),
        s.sent.seconds,
        unit.rate(s.sent.bits_per_second),
        s.sent
            .retransmits
            .map(|r| format!(", {r} retransmits"))
            .unwrap_or_default()
    );
    let mut received = format!(
        "  received  {:>10} in {:.2} s = {}",
        unit.bytes(s.received.bytes as f64),
        s.received.seconds,
        unit.rate(s.received.bits_per_second)
    );
    if udp {
        let _ = write!(
            received,
            ", {} datagrams, lost {} ({:.3}%), jitter {:.3} ms, {} out of order, {} duplicates",
            s.received.packets.unwrap_or(0),
            s.received.lost_packets.unwrap_or(0),
            s.received.loss_percent.unwrap_or(0.0),
            s.received.jitter_ms.unwrap_or(0.0),
            s.received.out_of_order.unwrap_or(0),
            s.received.duplicates.unwrap_or(0)
        );
        if let Some(owd) = s.received.one_way_delay_ms {
            let _ = write!(received, ", one-way delay {owd:.3} ms");
        }
    }
    let _ = writeln!(out, "{received}");
    if let (Some(p), Some(ratio)) = (&s.prediction, s.measured_over_predicted) {
        let _ = writeln!(
            out,
            "  predicted {:>10} bound by {} (measured/predicted {ratio:.3}; docs/model.md)",
            unit.rate(p.value),
            p.binding
        );
    }
    if let Some(t) = &s.tcp {
        tcp_lines(out, t);
    }
    if let Some(g) = &s.send_gaps {
        pacing_line(out, g);
    }
    let c = &s.cpu;
    let demand = |d: Option<f64>| d.map(|v| format!(", {v:.0} µs/MB")).unwrap_or_default();
    let process = |p: Option<f64>| p.map(|v| format!("{v:.0}%")).unwrap_or_else(|| "-".into());
    // Each end's own threads first: with both ends in one process (demo) the
    // process figures count both.
    let _ = writeln!(
        out,
        "  cpu       local {:.1}% of a core (user {:.1}, sys {:.1}){}; remote {:.1}%{}; processes {} / {}; hosts {:.0}% / {:.0}%",
        c.local.total_percent,
        c.local.user_percent,
        c.local.system_percent,
        demand(c.local.service_demand_us_per_mb),
        c.remote.total_percent,
        demand(c.remote.service_demand_us_per_mb),
        process(c.local.process_total_percent),
        process(c.remote.process_total_percent),
        c.local.host_total_percent,
        c.remote.host_total_percent
    );
    let _ = writeln!(
        out,
        "  limited   by {}: {}",
        s.verdict.limited_by, s.verdict.explanation
    );
    if !s.verdict.evidence.is_empty() {
        let figures: Vec<String> = s
            .verdict
            .evidence
            .iter()
            .map(|(k, v)| format!("{k} {}", figure(*v)))
            .collect();
        let _ = writeln!(out, "  evidence  {}", figures.join(", "));
    }
    if let Some(a) = &s.verdict.advice {
        let _ = writeln!(out, "  advice    {a}");
    }
}

/// A paced sender's gaps, and the time the host did not run it (if any).
fn pacing_line(out: &mut String, g: &GapStats) {
    let skipped = if g.skips > 0 {
        format!(
            "; fell behind {} time(s), {:.0} ms not sent (longest {:.0} ms)",
            g.skips, g.skipped_ms, g.longest_skip_ms
        )
    } else {
        String::new()
    };
    // Each wake-up's train is one gap apart from the last and back to back inside.
    let per_wake = if g.back_to_back_fraction < 1.0 {
        let n = 1.0 / (1.0 - g.back_to_back_fraction);
        format!(" ({n:.1} datagrams a wake-up)")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  pacing    gap target {:.1} µs, median {:.1} µs, p99 {:.1} µs, back-to-back {:.1}%{per_wake}{skipped}",
        g.target_us,
        g.p50_us,
        g.p99_us,
        g.back_to_back_fraction * 100.0
    );
}

/// The sender's TCP figures: RTT samples, cwnd, what limited it, the window.
fn tcp_lines(out: &mut String, t: &crate::report::TcpSummary) {
    let f = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
    let _ = write!(
        out,
        "  tcp       rtt mean {} ms (min {}, max {} of {} samples; rttvar {}, kernel min_rtt {}), cwnd {}",
        f(t.rtt_ms.mean),
        f(t.rtt_ms.min),
        f(t.rtt_ms.max),
        t.rtt_ms.samples.unwrap_or(0),
        f(t.rtt_ms.rttvar),
        f(t.rtt_ms.kernel_min_rtt),
        t.cwnd_bytes
            .map(|c| format_bytes(c as f64))
            .unwrap_or_else(|| "-".into())
    );
    if let Some(l) = t.limited {
        let _ = write!(
            out,
            "; time limited by network {:.0}%, receiver window {:.0}%, send buffer {:.0}%, application {:.0}%",
            l.network * 100.0,
            l.rwnd * 100.0,
            l.sndbuf * 100.0,
            l.app * 100.0
        );
    }
    out.push('\n');
    window_line(out, t);
}

/// The window the receiver really advertised, which `-w` does not set
/// exactly (the kernel doubles a buffer and keeps part for overhead).
fn window_line(out: &mut String, t: &crate::report::TcpSummary) {
    let bytes = |v: Option<u64>| v.map(|b| format!("{b} B")).unwrap_or_else(|| "-".into());
    let _ = writeln!(
        out,
        "  window    advertised {} (as the sender saw it); receiver rcv_wnd {}, window clamp {}",
        bytes(t.snd_wnd_bytes),
        bytes(t.receiver_window.rcv_wnd_bytes),
        bytes(t.receiver_window.window_clamp_bytes)
    );
}

/// `--sample`: how many samples each end took; the series are in the JSON.
fn samples_line(out: &mut String, r: &Report) {
    let Some(period) = r.test.config.sample_s else {
        return;
    };
    let (mut sender, mut receiver) = (0, 0);
    for d in std::iter::once(&r.summary).chain(r.summary_reverse.as_ref()) {
        for s in &d.streams {
            sender += s.sender.samples.len();
            receiver += s.receiver.as_ref().map_or(0, |x| x.samples.len());
        }
    }
    let _ = writeln!(
        out,
        "  samples   {sender} by the senders, {receiver} by the receivers, every {} ms (JSON: summary.streams[].sender.samples, .receiver.samples)",
        period * 1000.0
    );
}

/// `-m`: one line per MPTCP subflow of each stream, as its sender counted it (bytes
/// acknowledged) or, when the sender gave none, its receiver (bytes received).
fn subflow_lines(out: &mut String, r: &Report, unit: ReportUnit) {
    for d in std::iter::once(&r.summary).chain(r.summary_reverse.as_ref()) {
        for s in &d.streams {
            let (subflows, counted) = match s.receiver.as_ref() {
                _ if !s.sender.subflows.is_empty() => (&s.sender.subflows, "acked"),
                Some(rx) => (&rx.subflows, "received"),
                None => continue,
            };
            for f in subflows {
                let _ = writeln!(
                    out,
                    "  subflow   stream {} {} -> {}: {} {counted} = {}",
                    s.sender.id,
                    f.local,
                    f.remote,
                    unit.bytes(f.bytes as f64),
                    unit.rate(f.bits_per_second)
                );
            }
        }
    }
}

pub fn summary(r: &Report) -> String {
    summary_in(r, ReportUnit::default())
}

/// The summary block(s), rates and transferred bytes in `unit`.
pub fn summary_in(r: &Report, unit: ReportUnit) -> String {
    let udp = r.test.config.protocol == Protocol::Udp;
    let mut out = String::new();
    if r.interrupted {
        out.push_str("interrupted: partial result\n");
    }
    direction_block(&mut out, &r.summary, udp, unit);
    if let Some(rev) = &r.summary_reverse {
        direction_block(&mut out, rev, udp, unit);
    }
    samples_line(&mut out, r);
    subflow_lines(&mut out, r, unit);
    if let Some(st) = r.start.streams.first() {
        let l = &st.local;
        let rem = st.remote.as_ref();
        let _ = writeln!(
            out,
            "  sockets   local sndbuf {} rcvbuf {}, remote sndbuf {} rcvbuf {}{}{}",
            l.sndbuf
                .map(|v| format_bytes(v as f64))
                .unwrap_or_else(|| "-".into()),
            l.rcvbuf
                .map(|v| format_bytes(v as f64))
                .unwrap_or_else(|| "-".into()),
            rem.and_then(|x| x.sndbuf)
                .map(|v| format_bytes(v as f64))
                .unwrap_or_else(|| "-".into()),
            rem.and_then(|x| x.rcvbuf)
                .map(|v| format_bytes(v as f64))
                .unwrap_or_else(|| "-".into()),
            l.congestion
                .as_ref()
                .map(|c| format!(", congestion {c}"))
                .unwrap_or_default(),
            l.mtu.map(|m| format!(", path MTU {m}")).unwrap_or_default(),
        );
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for e in &r.errors {
        let _ = writeln!(out, "error: {e}");
    }
    out
}

/// The server's one line for a finished test, as `linkperf server` prints
/// it; `peer` is the client's control connection as the server saw it.
pub fn server_line(
    peer: &dyn std::fmt::Display,
    config: &TestConfig,
    result: &SideResult,
    unit: ReportUnit,
) -> String {
    format!(
        "client {}: {} {:?} x{} {:.2} s: received {}, sent {}",
        peer,
        if config.protocol == Protocol::Udp {
            "UDP"
        } else {
            "TCP"
        },
        config.direction,
        config.parallel,
        result.seconds,
        unit.bytes(result.bytes(Role::Receiver) as f64),
        unit.bytes(result.bytes(Role::Sender) as f64),
    )
}

/// The server's side of a test (`--get-server-output`), printed after the
/// client's own as iperf3 does under "Server output:": the line the server
/// printed for it, then each of its streams' totals as it counted them, its
/// CPU and its warnings.
pub fn server_output(r: &Report, unit: ReportUnit) -> String {
    let Some(server) = &r.server_output else {
        return String::new();
    };
    let side = &server.side;
    let mut out = String::from("Server output:\n");
    let _ = writeln!(
        out,
        "{}",
        server_line(&server.client, &r.test.config, side, unit)
    );
    for s in &side.streams {
        let role = match s.role {
            Role::Sender => "sent    ",
            Role::Receiver => "received",
        };
        let _ = write!(
            out,
            "  stream {} {role} {:>10} in {:.2} s = {}",
            s.id,
            unit.bytes(s.bytes as f64),
            s.seconds,
            unit.rate(s.bits_per_second)
        );
        if let Some(u) = &s.udp {
            let _ = write!(
                out,
                ", {} datagrams, lost {} ({:.3}%), jitter {:.3} ms",
                u.packets, u.lost_packets, u.loss_percent, u.jitter_ms
            );
        }
        if let Some(r) = s.tcp.as_ref().and_then(|t| t.retransmits) {
            let _ = write!(out, ", {r} retransmits");
        }
        if let Some(e) = &s.error {
            let _ = write!(out, " (error: {e})");
        }
        out.push('\n');
    }
    let c = &side.cpu;
    let _ = writeln!(
        out,
        "  cpu       {:.1}% of a core (user {:.1}, sys {:.1}); host {:.0}%",
        c.total_percent, c.user_percent, c.system_percent, c.host_total_percent
    );
    for w in &side.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}

/// An evidence figure as its magnitude needs: whole numbers without decimals,
/// fractions with four significant digits.
fn figure(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}
