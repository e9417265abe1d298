//! Human output of a campaign: live lines while it runs, tables at the end.

use super::analysis::PhaseResult;
use super::CampaignResult;
use linkperf_units::format_rate;
use std::fmt::Write;

pub fn progress_line(
    phase: &str,
    session: u32,
    start: f64,
    end: f64,
    aggregate: f64,
    reporting: usize,
    flows: usize,
) -> String {
    format!(
        "  {phase} s{} {start:6.2}-{end:6.2} s  aggregate {:>12}  ({reporting}/{flows} flows)",
        session,
        format_rate(aggregate)
    )
}

fn phase_block(out: &mut String, p: &PhaseResult) {
    let ok = p.flows.iter().filter(|f| f.status == "ok").count();
    let _ =
        writeln!(
        out,
        "\nphase {}{} session {}: aggregate received {} (sent {}), start spread {}, {ok}/{} flows ok",
        p.name,
        p.params.as_ref().map(|q| format!(" at {}", crate::sweep::plan::label(q))).unwrap_or_default(),
        p.session,
        format_rate(p.aggregate.received_bits_per_second),
        format_rate(p.aggregate.sent_bits_per_second),
        p.start_spread_ms.map(|s| format!("{s:.3} ms")).unwrap_or_else(|| "-".into()),
        p.flows.len()
    );
    let _ = writeln!(
        out,
        "  {:<22} {:>14} {:>14} {:>9}  status",
        "flow", "sent", "received", "loss"
    );
    for f in &p.flows {
        let _ = writeln!(
            out,
            "  {:<22} {:>14} {:>14} {:>9}  {}{}",
            format!("{} -> {}", f.from, f.to),
            format_rate(f.sent.bits_per_second),
            format_rate(f.received.bits_per_second),
            f.received
                .loss_percent
                .map(|l| format!("{l:.2}%"))
                .unwrap_or_else(|| "-".into()),
            f.status,
            f.error
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
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
            m.sessions
                .iter()
                .map(|v| format_rate(*v))
                .collect::<Vec<_>>()
                .join(", ")
        );
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
