//! Human output of a campaign: live lines while it runs, tables at the end.

use super::analysis::{Aggregate, DirectionResult, FlowResult, PhaseResult};
use super::{CampaignResult, LiveLine};
use linkperf_units::format_rate;
use std::fmt::Write;

pub fn progress_line(phase: &str, session: u32, l: &LiveLine, flows: usize) -> String {
    format!(
        "  {phase} s{session} {:6.2}-{:6.2} s  aggregate {:>12}{}  ({flows} flows)",
        l.start,
        l.end,
        format_rate(l.received_bits_per_second),
        l.reverse_received_bits_per_second
            .map(|r| format!(", reverse {:>12}", format_rate(r)))
            .unwrap_or_default()
    )
}

fn aggregate_text(a: &Aggregate) -> String {
    format!(
        "received {} (sent {})",
        format_rate(a.received_bits_per_second),
        format_rate(a.sent_bits_per_second)
    )
}

/// `--simulate`: "simulated R (ns-3 3.37), meas/sim X, ".
fn simulated_words(f: &FlowResult) -> String {
    let Some(t) = &f.simulated else {
        return String::new();
    };
    format!(
        "simulated {} ({}), meas/sim {}, ",
        format_rate(t["bits_per_second"].as_f64().unwrap_or(0.0)),
        t["source"].as_str().unwrap_or("ns-3"),
        t["measured_over_simulated"]
            .as_f64()
            .map_or_else(|| "-".into(), |r| format!("{r:.3}"))
    )
}

/// One row per direction: a bidir flow has two, sender -> receiver each.
fn flow_rows(out: &mut String, f: &FlowResult) {
    let bidir = f.reverse.is_some();
    for d in f.directions() {
        let _ = writeln!(
            out,
            "  {:<22} {:>14} {:>14} {:>9}  {}{}{}{}{}{}",
            format!("{} -> {}", d.sender, d.receiver),
            format_rate(d.sent.bits_per_second),
            format_rate(d.received.bits_per_second),
            d.received
                .loss_percent
                .map(|l| format!("{l:.2}%"))
                .unwrap_or_else(|| "-".into()),
            d.predicted
                .as_ref()
                .map(|p| format!(
                    "predicted {} ({}{}), measured/predicted {}, ",
                    format_rate(p.bits_per_second),
                    p.binding,
                    if p.sharing > 1 {
                        format!(" of {} flows", p.sharing)
                    } else {
                        String::new()
                    },
                    p.measured_over_predicted
                        .map_or_else(|| "-".into(), |r| format!("{r:.3}"))
                ))
                .unwrap_or_default(),
            simulated_words(f),
            f.status,
            if bidir { ", bidir" } else { "" },
            f.error
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default(),
            dropped_at_the_ends(d)
        );
    }
}

/// UDP datagrams the ends themselves dropped, where any did: ", dropped at the
/// ends: receiving socket 1700, sending queue 39" (the path had no part in those).
fn dropped_at_the_ends(d: &DirectionResult) -> String {
    let (s, r) = (&d.sent, &d.received);
    let egress = s.egress.as_ref();
    let ingress = r.ingress.as_ref();
    let parts: Vec<String> = [
        ("sending queue", s.queue_drops),
        ("sending qdisc", egress.and_then(|e| e.qdisc_drops)),
        ("sending interface", egress.and_then(|e| e.tx_dropped)),
        ("receiving interface", ingress.and_then(|i| i.rx_dropped)),
        ("receiving NIC", ingress.and_then(|i| i.rx_missed_errors)),
        ("host backlog", ingress.and_then(|i| i.backlog_drops)),
        ("receiving socket", r.socket_drops),
    ]
    .into_iter()
    .filter_map(|(name, n)| n.filter(|&n| n > 0).map(|n| format!("{name} {n}")))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(", dropped at the ends: {}", parts.join(", "))
    }
}

fn phase_block(out: &mut String, p: &PhaseResult) {
    let ok = p.flows.iter().filter(|f| f.status == "ok").count();
    let _ = writeln!(
        out,
        "\nphase {}{} session {}: aggregate {}{}, start spread {}, {ok}/{} flows ok",
        p.name,
        p.params
            .as_ref()
            .map(|q| format!(" at {}", crate::sweep::plan::label(q)))
            .unwrap_or_default(),
        p.session,
        aggregate_text(&p.aggregate),
        p.aggregate_reverse
            .as_ref()
            .map(|a| format!("; bidir return directions {}", aggregate_text(a)))
            .unwrap_or_default(),
        p.start_spread_ms
            .map(|s| format!("{s:.3} ms"))
            .unwrap_or_else(|| "-".into()),
        p.flows.len()
    );
    let _ = writeln!(
        out,
        "  {:<22} {:>14} {:>14} {:>9}  status",
        "sender -> receiver", "sent", "received", "loss"
    );
    for f in &p.flows {
        flow_rows(out, f);
    }
    if let Some(j) = &p.fairness {
        let _ = writeln!(
            out,
            "  fairness after the join at {:.2} s: Jain's index mean {:.3}, min {:.3}, at or above 0.9 {}",
            j.joined_at_s,
            j.jain_mean,
            j.jain_min,
            j.above_0_9_from_s
                .map_or_else(|| "never to the end".into(), |s| format!("from {s:.2} s after it"))
        );
    }
    let _ = writeln!(
        out,
        "  {:<22} {:>14} {:>14} {:>14} {:>9}",
        "host", "sent", "received", "peers sent", "short"
    );
    for h in &p.hosts {
        let _ = writeln!(
            out,
            "  {:<22} {:>14} {:>14} {:>14} {:>8.2}%",
            h.name,
            format_rate(h.sent_bits_per_second),
            format_rate(h.received_bits_per_second),
            format_rate(h.peers_sent_bits_per_second),
            h.shortfall_percent
        );
    }
}

fn rates(v: &[f64]) -> String {
    v.iter()
        .map(|v| format_rate(*v))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn summary(r: &CampaignResult) -> String {
    let mut out = String::new();
    if r.interrupted {
        out.push_str("interrupted: partial result\n");
    }
    for p in &r.phases {
        phase_block(&mut out, p);
    }
    let _ = writeln!(out, "\nmean aggregate per phase over sessions:");
    for m in &r.phase_means {
        let _ = writeln!(
            out,
            "  {:<16} {:>14}  over {} session(s): {}",
            match &m.params {
                Some(q) => format!("{} at {}", m.phase, crate::sweep::plan::label(q)),
                None => m.phase.clone(),
            },
            format_rate(m.mean_received_bits_per_second),
            m.sessions.len(),
            rates(&m.sessions)
        );
        if let (Some(mean), Some(sessions)) =
            (m.mean_received_reverse_bits_per_second, &m.sessions_reverse)
        {
            let _ = writeln!(
                out,
                "  {:<16} {:>14}  over {} session(s): {}",
                "  bidir return",
                format_rate(mean),
                sessions.len(),
                rates(sessions)
            );
        }
    }
    if r.flags.is_empty() {
        let _ = writeln!(out, "\nflags: none");
    } else {
        let _ = writeln!(out, "\nflags:");
        for f in &r.flags {
            let _ = writeln!(out, "  - {}", f.message);
        }
    }
    out
}

/// A flow's options as users spell them: "UDP client->server, 1 stream,
/// 950 Mbit/s per stream".
pub fn flow_words(c: &linkperf_proto::TestConfig, to: &str) -> String {
    use linkperf_proto::{Direction, Protocol};
    let mut s = format!(
        "{} {}, {} stream{}",
        if c.protocol == Protocol::Udp {
            "UDP"
        } else {
            "TCP"
        },
        match c.direction {
            Direction::Forward => "client->server".to_string(),
            Direction::Reverse => format!("server->client (reverse: {to} sends)"),
            Direction::Bidir => "both ways (bidir)".to_string(),
        },
        c.parallel,
        if c.parallel == 1 { "" } else { "s" }
    );
    if let Some(b) = c.bitrate.filter(|b| *b > 0) {
        s.push_str(&format!(
            ", {} per stream",
            linkperf_units::format_rate(b as f64)
        ));
    }
    match (c.sndbuf, c.rcvbuf) {
        (Some(a), Some(b)) if a == b => s.push_str(&format!(
            ", window {}",
            linkperf_units::format_bytes(a as f64)
        )),
        (a, b) => {
            for (name, v) in [("sndbuf", a), ("rcvbuf", b)] {
                if let Some(v) = v {
                    s.push_str(&format!(
                        ", {name} {}",
                        linkperf_units::format_bytes(v as f64)
                    ));
                }
            }
        }
    }
    if let Some(cc) = &c.congestion {
        s.push_str(&format!(", congestion {cc}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_proto::results::IngressDrops;

    #[test]
    fn the_ends_drops_are_named_only_where_there_were_some() {
        let mut d = DirectionResult::default();
        assert_eq!(dropped_at_the_ends(&d), "");
        d.sent.queue_drops = Some(39);
        d.received.socket_drops = Some(1700);
        d.received.ingress = Some(IngressDrops {
            rx_dropped: Some(0),
            backlog_drops: Some(3),
            ..IngressDrops::default()
        });
        assert_eq!(
            dropped_at_the_ends(&d),
            ", dropped at the ends: sending queue 39, host backlog 3, receiving socket 1700"
        );
    }
}
