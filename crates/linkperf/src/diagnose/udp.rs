//! Where a UDP test's lost datagrams went, from both kernels' own drop counts: the
//! receiving socket's buffer, the sender's qdisc (and which kind), the sender's NIC,
//! the receiver's NIC or its host's backlog queues, the sender's interface queue as
//! UdpSndbufErrors saw it, else the path (neither end dropped them).

use super::busy::{verdict, Busy};
use crate::report::{DirectionSummary, Verdict};
use linkperf_proto::TestConfig;
use linkperf_units::format_rate;

/// The verdict of a UDP direction: a sender short of its rate, else loss and
/// where it happened, else the offered rate.
pub(super) fn udp_verdict(
    config: &TestConfig,
    s: &DirectionSummary,
    sender: &Busy,
    receiver: &Busy,
) -> Verdict {
    udp_sender_short(config, s, sender)
        .or_else(|| udp_loss(s, receiver))
        .unwrap_or_else(|| rate_limit(s))
}

/// UDP: the sender did not reach the rate asked (-b).
fn udp_sender_short(config: &TestConfig, s: &DirectionSummary, sender: &Busy) -> Option<Verdict> {
    let target = config.stream_rate()? as f64 * f64::from(config.parallel);
    let short = s.sent.bits_per_second < 0.95 * target;
    if !short {
        return None;
    }
    Some(verdict(
        "sender",
        format!(
            "the sender reached {} of the {} asked",
            format_rate(s.sent.bits_per_second),
            format_rate(target)
        ),
        Some(if sender.saturated() {
            format!(
                "{}: use -P to spread streams over cores",
                sender.describe("sender")
            )
        } else {
            "check the sender's NIC and txqueuelen; try larger datagrams (-l)".into()
        }),
    ))
}

/// UDP: everything offered arrived, so the offered rate was the limit.
fn rate_limit(s: &DirectionSummary) -> Verdict {
    let loss = s.received.loss_percent.unwrap_or(0.0);
    verdict(
        "rate limit",
        format!(
            "delivered what was offered ({}) with {loss:.2}% loss",
            format_rate(s.received.bits_per_second)
        ),
        None,
    )
}

/// Where in the hosts datagrams were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    ReceiverSocket,
    SenderQdisc,
    SenderNic,
    ReceiverNic,
    /// UdpSndbufErrors alone: the sending host refused them, its qdisc and NIC
    /// counted nothing (or could not be read).
    SenderQueue,
    /// Both ends counted, and neither dropped any.
    Path,
    /// A count the decision needs is missing (a peer that does not report it).
    Unknown,
}

/// Each place's count over the test; None where it was not read.
struct Counts {
    socket: Option<u64>,
    qdisc: Option<u64>,
    nic_tx: Option<u64>,
    /// The receiver's rx_dropped, rx_missed_errors and backlog drops together (the
    /// known ones; None if none is known).
    nic_rx: Option<u64>,
    send_errors: Option<u64>,
}

impl Counts {
    fn of(s: &DirectionSummary) -> Counts {
        let e = s.sent.egress.as_ref();
        let i = s.received.ingress.as_ref();
        let rx = i.map(|i| [i.rx_dropped, i.rx_missed_errors, i.backlog_drops]);
        Counts {
            socket: s.received.socket_drops,
            qdisc: e.and_then(|e| e.qdisc_drops),
            nic_tx: e.and_then(|e| e.tx_dropped),
            nic_rx: rx.and_then(|r| r.iter().flatten().copied().reduce(|a, b| a + b)),
            send_errors: s.sent.queue_drops,
        }
    }

    /// The kernel counts drop events, not datagrams: a GSO train of a few dozen
    /// datagrams (the sender's trains, and loopback delivers them whole) is one
    /// event (measured on loopback: 1,865 socket drops, exactly the host's
    /// RcvbufErrors, for 46,502 datagrams lost). So the counts name the place, not
    /// the share: the place that counted most, else UdpSndbufErrors' interface
    /// queue, else the path when the receiving socket and the sending host both
    /// counted none (a qdisc or NIC drop of a sent datagram also counts there).
    fn place(&self) -> Place {
        let counted = [
            (Place::ReceiverSocket, self.socket),
            (Place::SenderQdisc, self.qdisc),
            (Place::SenderNic, self.nic_tx),
            (Place::ReceiverNic, self.nic_rx),
        ];
        let most = counted
            .iter()
            .filter_map(|(p, n)| Some((*p, (*n)?)))
            .filter(|(_, n)| *n > 0)
            .fold(None, |best: Option<(Place, u64)>, (p, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((p, n)),
            });
        match (most, self.send_errors, self.socket) {
            (Some((p, _)), _, _) => p,
            (None, Some(q), _) if q > 0 => Place::SenderQueue,
            (None, Some(0), Some(0)) => Place::Path,
            _ => Place::Unknown,
        }
    }
}

/// UDP: more than 1% of the datagrams were lost: where, and by a busy receiver?
fn udp_loss(s: &DirectionSummary, receiver: &Busy) -> Option<Verdict> {
    let loss = s.received.loss_percent.unwrap_or(0.0);
    if loss <= 1.0 {
        return None;
    }
    let lost = s.received.lost_packets.unwrap_or(0);
    let counts = Counts::of(s);
    let (egress, ingress) = (
        s.sent.egress.clone().unwrap_or_default(),
        s.received.ingress.clone().unwrap_or_default(),
    );
    let name = |n: &Option<String>| n.clone().unwrap_or_else(|| "unknown".into());
    let (out_if, in_if) = (name(&egress.interface), name(&ingress.interface));
    let kind = name(&egress.qdisc);
    let n = |v: Option<u64>| v.map_or("unknown".to_string(), |n| n.to_string());
    let mut v = verdict(
        "loss",
        format!(
            "{loss:.2}% of datagrams were lost ({lost}): sent {} but received {}; drops counted by the receiving socket {}, the receiver's {in_if} rx_dropped {} rx_missed_errors {}, its host's backlog queues {}, the sender's {out_if} qdisc ({kind}) {} and tx_dropped {}, its UdpSndbufErrors {} (a dropped GSO train counts once)",
            format_rate(s.sent.bits_per_second),
            format_rate(s.received.bits_per_second),
            n(counts.socket),
            n(ingress.rx_dropped),
            n(ingress.rx_missed_errors),
            n(ingress.backlog_drops),
            n(counts.qdisc),
            n(counts.nic_tx),
            n(counts.send_errors),
        ),
        None,
    );
    let busy = receiver.saturated();
    let (limited_by, advice) = match counts.place() {
        Place::ReceiverSocket => (
            if busy { "receiver CPU" } else { "receiver socket buffer" }.to_string(),
            format!(
                "the receiver did not read fast enough ({}): raise --rcvbuf (and net.core.rmem_max), or send less (-b)",
                receiver.describe("receiver")
            ),
        ),
        Place::SenderQdisc => (
            format!("sender qdisc ({kind})"),
            format!("the sender's {kind} qdisc on {out_if} dropped what exceeded its rate and limit: pace below its rate (-b), or raise its limit (tc qdisc change dev {out_if} root {kind} ...)"),
        ),
        Place::SenderNic => (
            "sender NIC".into(),
            format!("the sender's interface {out_if} refused packets (tx_dropped): pace below its rate (-b), or raise its queue (ip link set dev {out_if} txqueuelen 10000)"),
        ),
        Place::ReceiverNic => (
            "receiver NIC/backlog".into(),
            format!("the receiver's interface {in_if} or its host's backlog queues overflowed: raise net.core.netdev_max_backlog (sysctl -w net.core.netdev_max_backlog=10000) and the NIC's receive ring (ethtool -G {in_if} rx 4096), or send less (-b)"),
        ),
        Place::SenderQueue => (
            "sender queue".into(),
            "the sending host's qdisc or interface queue overflowed: pace below the interface's rate (-b), or raise its txqueuelen / qdisc limit".into(),
        ),
        Place::Path => (
            "path loss".into(),
            "neither end dropped them: the path or a device on it drops at this rate; lower -b to find the loss-free rate".into(),
        ),
        Place::Unknown if busy => (
            "receiver CPU".into(),
            format!(
                "{}: it cannot keep up; raise --rcvbuf / net.core.rmem_max, or send less (-b)",
                receiver.describe("receiver")
            ),
        ),
        Place::Unknown => (
            "loss".into(),
            "the path or a device on it drops at this rate: lower -b to find the loss-free rate".into(),
        ),
    };
    v.limited_by = limited_by;
    v.advice = Some(advice);
    let evidence = [
        ("lost_packets", Some(lost)),
        ("receiver_socket_drops", counts.socket),
        ("receiver_nic_rx_dropped", ingress.rx_dropped),
        ("receiver_nic_rx_missed_errors", ingress.rx_missed_errors),
        ("receiver_backlog_drops", ingress.backlog_drops),
        ("sender_qdisc_drops", counts.qdisc),
        ("sender_nic_tx_dropped", counts.nic_tx),
        ("sender_queue_drops", counts.send_errors),
    ];
    for (key, value) in evidence {
        if let Some(value) = value {
            v.evidence.insert(key.into(), value as f64);
        }
    }
    v.evidence.insert("loss_percent".into(), loss);
    v.evidence
        .insert("receiver_busy_percent".into(), receiver.percent);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(
        socket: Option<u64>,
        qdisc: Option<u64>,
        nic_tx: Option<u64>,
        nic_rx: Option<u64>,
        send_errors: Option<u64>,
    ) -> Counts {
        Counts {
            socket,
            qdisc,
            nic_tx,
            nic_rx,
            send_errors,
        }
    }

    #[test]
    fn the_place_that_counted_most_is_named_and_unknown_is_never_zero() {
        let z = Some(0);
        // A qdisc drop is also a UdpSndbufErrors count: the qdisc is the place.
        assert_eq!(
            counts(z, Some(9), z, z, Some(9)).place(),
            Place::SenderQdisc
        );
        assert_eq!(counts(z, z, Some(3), z, Some(3)).place(), Place::SenderNic);
        assert_eq!(
            counts(Some(2), z, z, Some(40), z).place(),
            Place::ReceiverNic
        );
        assert_eq!(
            counts(Some(40), z, z, Some(2), z).place(),
            Place::ReceiverSocket
        );
        assert_eq!(
            counts(z, None, None, None, Some(5)).place(),
            Place::SenderQueue
        );
        assert_eq!(counts(z, z, z, z, z).place(), Place::Path);
        // The interface counts unread: the socket and the sending host still saw none.
        assert_eq!(counts(z, None, None, None, z).place(), Place::Path);
        // A peer that does not report its counts: not said.
        assert_eq!(counts(None, z, z, z, z).place(), Place::Unknown);
        assert_eq!(counts(z, z, z, z, None).place(), Place::Unknown);
    }
}
