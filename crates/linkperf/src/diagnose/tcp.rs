//! TCP verdicts: which limit held the sender (the receiver's window, its send
//! buffer, the application, a CPU, else the network), the numbers each rests on,
//! and the buffer a window limit needs.

use super::busy::{verdict, Busy};
use crate::report::{DirectionSummary, Verdict};
use linkperf_proto::results::{HostFacts, Limited};
use linkperf_proto::TestConfig;
use linkperf_units::format_rate;

/// The verdict of a TCP direction, with the numbers it rests on.
pub(super) fn tcp_verdict(
    config: &TestConfig,
    s: &DirectionSummary,
    sender: &Busy,
    receiver: &Busy,
) -> Verdict {
    let limited = s.tcp.as_ref().and_then(|t| t.limited);
    let mut v = match limited {
        None => verdict(
            "unknown",
            "this kernel does not report tcp_info limits (busy_time)".into(),
            None,
        ),
        Some(limited) => receiver_window(s, &limited)
            .or_else(|| send_buffer(s, &limited))
            .or_else(|| application(config, &limited, sender))
            .or_else(|| cpu(sender, receiver))
            .unwrap_or_else(|| network(s, &limited)),
    };
    v.evidence = tcp_evidence(s, limited.as_ref(), sender, receiver);
    v
}

/// The numbers every TCP verdict rests on, by name: what arrived and over what
/// loaded round trip (so the bytes in flight), the windows (the receiver's
/// advertised one and its rate over that round trip, the congestion window, the
/// send buffer granted), the share of time each limit held, the retransmits, and
/// both ends' CPU. A figure the ends did not report is left out, never 0.
fn tcp_evidence(
    s: &DirectionSummary,
    limited: Option<&Limited>,
    sender: &Busy,
    receiver: &Busy,
) -> std::collections::BTreeMap<String, f64> {
    let tcp = s.tcp.clone().unwrap_or_default();
    let rate = s.received.bits_per_second;
    let rtt_s = tcp.rtt_ms.mean.filter(|r| *r > 0.0).map(|ms| ms / 1e3);
    let sndbuf: Option<u64> = s
        .streams
        .iter()
        .map(|st| st.sender.socket.sndbuf.map(u64::from))
        .sum();
    let figures = [
        ("received_bits_per_second", Some(rate)),
        ("rtt_ms", rtt_s.map(|r| r * 1e3)),
        ("bytes_in_flight", rtt_s.map(|r| rate / 8.0 * r)),
        (
            "advertised_window_bytes",
            tcp.snd_wnd_bytes.map(|w| w as f64),
        ),
        (
            "window_over_rtt_bits_per_second",
            tcp.snd_wnd_bytes
                .zip(rtt_s)
                .map(|(w, r)| w as f64 * 8.0 / r),
        ),
        ("cwnd_bytes", tcp.cwnd_bytes.map(|w| w as f64)),
        ("send_buffer_bytes", sndbuf.map(|b| b as f64)),
        ("delivery_rate_bits_per_second", tcp.delivery_rate_bps),
        ("retransmits", s.sent.retransmits.map(|r| r as f64)),
        (
            "retransmit_percent",
            s.sent
                .retransmits
                .zip(tcp.mss.filter(|m| *m > 0))
                .filter(|_| s.sent.bytes > 0)
                .map(|(r, m)| 100.0 * r as f64 * f64::from(m) / s.sent.bytes as f64),
        ),
        ("limited_rwnd_fraction", limited.map(|l| l.rwnd)),
        ("limited_sndbuf_fraction", limited.map(|l| l.sndbuf)),
        ("limited_app_fraction", limited.map(|l| l.app)),
        ("limited_network_fraction", limited.map(|l| l.network)),
        ("sender_busy_percent", Some(sender.percent)),
        ("receiver_busy_percent", Some(receiver.percent)),
    ];
    figures
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
}

/// TCP: the sender waited for the receiver's advertised window.
fn receiver_window(s: &DirectionSummary, limited: &Limited) -> Option<Verdict> {
    let waited = limited.rwnd > 0.3;
    if !waited {
        return None;
    }
    let window = s.tcp.as_ref().and_then(|t| t.snd_wnd_bytes);
    Some(verdict(
        "receiver window",
        format!(
            "the sender waited for the receiver's window {:.0}% of the time{}",
            limited.rwnd * 100.0,
            window.map_or(String::new(), |w| format!(" (it advertised {w} bytes)"))
        ),
        Some(per_rate_advice(s, Buffer::Receive)),
    ))
}

/// Which socket buffer held the window.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Buffer {
    Receive,
    Send,
}

impl Buffer {
    /// The option that sets it, and the sysctls that cap it: the ceiling of
    /// setsockopt (which the kernel then doubles) and autotuning's maximum.
    pub(super) fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Buffer::Receive => ("--rcvbuf", "net.core.rmem_max", "net.ipv4.tcp_rmem"),
            Buffer::Send => ("--sndbuf", "net.core.wmem_max", "net.ipv4.tcp_wmem"),
        }
    }

    /// The share of the doubled buffer that holds window: a receiver offers
    /// its kernel's share of it (docs/model.md), a sender keeps all of it in flight.
    pub(super) fn window_share(self, payload: u64) -> f64 {
        match (self, crate::model::host::local().rcv_share) {
            (Buffer::Send, _) => 1.0,
            (Buffer::Receive, s) if s > 0.0 => s,
            (Buffer::Receive, _) => crate::model::scaling_ratio(payload),
        }
    }

    /// What the end's sysctls say of a buffer of `buffer` bytes: the lines to
    /// paste where they cap it, that they allow it, or that they were not read.
    pub(super) fn limits(self, buffer: f64, facts: &HostFacts) -> String {
        let (_, max, auto) = self.names();
        let (ceiling, tuning) = match self {
            Buffer::Receive => (facts.rmem_max, facts.tcp_rmem),
            Buffer::Send => (facts.wmem_max, facts.tcp_wmem),
        };
        let (buffer, doubled) = (buffer.ceil() as u64, 2 * buffer.ceil() as u64);
        let mut lines = Vec::new();
        match ceiling {
            Some(m) if m < buffer => lines.push(format!(
                "its {max} ({m}) caps that: sysctl -w {max}={buffer}"
            )),
            Some(m) => lines.push(format!("its {max} ({m}) allows it")),
            None => lines.push(format!("{max} unknown: it must be at least {buffer}")),
        }
        match tuning {
            Some([a, b, c]) if c < doubled => lines.push(format!(
                "for autotuning without -w: sysctl -w {auto}='{a} {b} {doubled}'"
            )),
            Some(_) => {}
            None => lines.push(format!(
                "{auto} unknown: its maximum must be at least {doubled} for autotuning"
            )),
        }
        format!("; {}", lines.join("; "))
    }

    /// What to set so the window holds `rate` over `rtt_s`: the window, this
    /// buffer alone, and `-w` (which sets both buffers, so it must be the larger:
    /// the receiver's, whose window is only a share of it).
    pub(super) fn needed(self, rate: f64, rtt_s: f64, payload: u64) -> (f64, f64, f64) {
        let window = rate / 8.0 * rtt_s;
        let buffer = |b: Buffer| window / (2.0 * b.window_share(payload));
        (
            window,
            buffer(self),
            buffer(Buffer::Receive).max(buffer(self)),
        )
    }
}

/// Without a described path the link's rate is not known: the buffer a path
/// needs per 100 Mbit/s of its rate at the loaded round trip measured.
fn per_rate_advice(s: &DirectionSummary, which: Buffer) -> String {
    let (option, max, auto) = which.names();
    let tcp = s.tcp.clone().unwrap_or_default();
    let Some(rtt) = tcp.rtt_ms.mean.filter(|r| *r > 0.0).map(|ms| ms / 1e3) else {
        return format!("raise the buffer (-w or {option}, {max}, {auto})");
    };
    let mss = u64::from(tcp.mss.unwrap_or(1448));
    let (now, _, _) = which.needed(s.received.bits_per_second, rtt, mss);
    let (window, own, both) = which.needed(100e6, rtt, mss);
    format!(
        "the window must hold the path's rate x the loaded RTT ({:.2} ms); it held {now:.0} bytes ({}); each 100 Mbit/s of path rate needs {window:.0} bytes: -w {both:.0} (or {option} {own:.0}) per 100 Mbit/s, with {max} at least that and {auto}'s maximum twice that; describe the path (--path rate=...) for the exact figure",
        rtt * 1e3,
        format_rate(s.received.bits_per_second),
    )
}

/// TCP: the sender's socket buffer was full.
fn send_buffer(s: &DirectionSummary, limited: &Limited) -> Option<Verdict> {
    let full = limited.sndbuf > 0.3;
    if !full {
        return None;
    }
    Some(verdict(
        "send buffer",
        format!(
            "the sender's socket buffer was full {:.0}% of the time",
            limited.sndbuf * 100.0
        ),
        Some(per_rate_advice(s, Buffer::Send)),
    ))
}

/// TCP: the sender had no data ready, because its CPU ran out or it was
/// paced or slow.
fn application(config: &TestConfig, limited: &Limited, sender: &Busy) -> Option<Verdict> {
    let idle = limited.app > 0.3;
    if !idle {
        return None;
    }
    if sender.saturated() {
        return Some(verdict(
            "sender CPU",
            format!(
                "the sender had no data ready {:.0}% of the time and {}",
                limited.app * 100.0,
                sender.describe("sender")
            ),
            Some("use larger writes (-l), --zerocopy, or -P to use more cores".into()),
        ));
    }
    Some(verdict(
        "application",
        format!(
            "the sender had no data ready {:.0}% of the time (rate limit or slow writer)",
            limited.app * 100.0
        ),
        config
            .stream_rate()
            .is_none()
            .then(|| "check the sender's CPU and -l".into()),
    ))
}

/// TCP: one end's stream thread ran out of CPU (the receiver checked first).
fn cpu(sender: &Busy, receiver: &Busy) -> Option<Verdict> {
    if receiver.saturated() {
        return Some(verdict(
            "receiver CPU",
            receiver.describe("receiver"),
            Some("use -P to spread the load, or larger reads (-l)".into()),
        ));
    }
    if sender.saturated() {
        return Some(verdict(
            "sender CPU",
            sender.describe("sender"),
            Some("use --zerocopy, larger writes (-l), or -P".into()),
        ));
    }
    None
}

/// TCP: none of the above, so the congestion window (the link) set the rate.
fn network(s: &DirectionSummary, limited: &Limited) -> Verdict {
    let retrans = s.sent.retransmits.unwrap_or(0);
    verdict(
        "network",
        format!(
            "the congestion window was the limit {:.0}% of the time ({retrans} retransmits)",
            limited.network * 100.0
        ),
        (retrans > 0).then(|| {
            "the path is full or lossy: compare congestion controls with -C bbr / cubic".into()
        }),
    )
}
