//! The comparison as text: one table per kind of experiment (a sweep's points, sent beside
//! received, the seed's simulation beside ns-3, first-packet probes per site), each row the
//! seed's figure, linkperf's and the model's.

use super::result::Reproduction;
use super::{cold, convergence};
use std::collections::BTreeMap;

/// A row's drops as `412 backlog, 3 queue`, or `0`.
fn drops_text(drops: &BTreeMap<String, u64>) -> String {
    if drops.is_empty() {
        return "0".into();
    }
    let parts: Vec<String> = drops.iter().map(|(k, n)| format!("{n} {k}")).collect();
    parts.join(", ")
}

/// The comparison as a text table: one line per point (or site).
pub fn table(r: &Reproduction) -> String {
    let title = format!(
        "seed {} — {}{}\n",
        r.seed,
        r.source,
        if r.reduced { " (reduced duration)" } else { "" },
    );
    if !r.sites.is_empty() {
        return title + &cold::table(&r.sites);
    }
    if r.rows.iter().any(|x| x.simulated_mbps.is_some()) {
        return title + &simulation_table(r);
    }
    if r.rows.iter().any(|x| x.sent_mbps.is_some()) {
        return title + &campaign_table(r);
    }
    let mut out = title + &sweep_table(r);
    let measured: Vec<convergence::Measured> = (r.rows.iter())
        .map(|x| convergence::Measured {
            point: &x.point,
            mbps: x.linkperf_mbps,
            idle_rtt_ms: x.idle_rtt_ms,
            loaded_rtt_ms: x.loaded_rtt_ms,
            loss: x.loss,
        })
        .collect();
    if r.rows.iter().any(|x| x.idle_rtt_ms.is_some()) {
        out.push_str(&convergence::rtt_table(&measured, r.payload_mbps));
    }
    if r.rows.iter().any(|x| x.loss.is_some())
        || !r.simulated.is_empty()
        || !r.seed_recovery_s.is_empty()
    {
        out.push_str(&convergence::recovery_table(
            &measured,
            &r.simulated,
            &r.seed_recovery_s,
        ));
    }
    out
}

fn mbps(v: Option<f64>) -> String {
    match v {
        Some(x) if x < 10.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.1}"),
        None => "-".into(),
    }
}

/// Sent beside received: a campaign's phases and flows, or a UDP sweep's points (with the
/// seed's own sent\received where it gives them).
fn campaign_table(r: &Reproduction) -> String {
    let scaled = r.rows.iter().any(|x| x.seed_scaled_mbps.is_some());
    let seed_sent = r.rows.iter().any(|x| x.seed_sent_mbps.is_some());
    let width = r.rows.iter().map(|x| x.point.len()).max().unwrap_or(5);
    let mut out = format!("{:<width$}", "point");
    if seed_sent {
        out.push_str(&format!("  {:>10}  {:>10}", "seed sent", "seed recv"));
    } else {
        out.push_str(&format!("  {:>10}", "seed Mb/s"));
    }
    if scaled {
        out.push_str(&format!("  {:>12}", "seed scaled"));
    }
    out.push_str(&format!(
        "  {:>14}  {:>14}  {:>10}\n",
        "linkperf sent", "linkperf recv", "model Mb/s"
    ));
    for x in &r.rows {
        out.push_str(&format!("{:<width$}", x.point));
        if seed_sent {
            out.push_str(&format!("  {:>10}", mbps(x.seed_sent_mbps)));
        }
        out.push_str(&format!("  {:>10}", mbps(x.seed_mbps)));
        if scaled {
            out.push_str(&format!("  {:>12}", mbps(x.seed_scaled_mbps)));
        }
        out.push_str(&format!(
            "  {:>14}  {:>14}  {:>10}\n",
            mbps(x.sent_mbps),
            mbps(x.linkperf_mbps),
            mbps(x.model_mbps)
        ));
    }
    out
}

/// Seed 004's "Comparison of Experimental and Simulation Performance
/// Predictions": per point the seed's experimental and simulated figures,
/// linkperf's measured rate and its ns-3 twin's, and their ratio.
fn simulation_table(r: &Reproduction) -> String {
    let width = r.rows.iter().map(|x| x.point.len()).max().unwrap_or(5);
    let mut out = format!(
        "{:<width$}  {:>10}  {:>10}  {:>13}  {:>10}  {:>8}\n",
        "connection", "seed exp.", "seed sim.", "linkperf exp.", "ns-3", "exp/sim"
    );
    for x in &r.rows {
        let ratio = match (x.linkperf_mbps, x.simulated_mbps) {
            (Some(m), Some(s)) if s > 0.0 => format!("{:.3}", m / s),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "{:<width$}  {:>10}  {:>10}  {:>13}  {:>10}  {:>8}\n",
            x.point,
            mbps(x.seed_mbps),
            mbps(x.seed_simulated_mbps),
            mbps(x.linkperf_mbps),
            mbps(x.simulated_mbps),
            ratio
        ));
    }
    out
}

fn sweep_table(r: &Reproduction) -> String {
    let width = r
        .rows
        .iter()
        .map(|x| x.point.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!(
        "{:<width$}  {:>10}  {:>14}  {:>10}  {:>12}  {:>8}  dropped\n",
        "point", "seed Mb/s", "linkperf Mb/s", "model Mb/s", "adv. window", "retrans"
    );
    for x in &r.rows {
        out.push_str(&format!(
            "{:<width$}  {:>10}  {:>14}  {:>10}  {:>12}  {:>8}  {}\n",
            x.point,
            mbps(x.seed_mbps),
            mbps(x.linkperf_mbps),
            mbps(x.model_mbps),
            x.advertised_window_bytes
                .map(|w| format!("{w} B"))
                .unwrap_or_else(|| "-".into()),
            x.retransmits
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into()),
            drops_text(&x.drops),
        ));
    }
    out
}
