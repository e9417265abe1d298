//! Where UDP datagrams were dropped inside a host, from the kernel's own counters:
//! a receiving socket's buffer overflows (the per-socket `drops` column of
//! /proc/net/udp and udp6), datagrams a sending host's interface queue refused
//! (`SndbufErrors` of the Udp line of /proc/net/snmp: a qdisc drop of a datagram the
//! socket had accepted is counted there when the socket does not ask for errors),
//! and, read at the start and end of a test by [`DropWatch`], the egress interface's
//! root qdisc drops and tx_dropped on a sending end, the ingress interface's
//! rx_dropped and rx_missed_errors and the host's backlog drops on a receiving end.
//! Everything is of the reading process's network namespace (rtnetlink), apart from
//! the backlog queues, which are the host's.

use crate::rtnetlink;
use linkperf_proto::results::{EgressDrops, IngressDrops};
use std::net::IpAddr;
use std::os::fd::RawFd;

/// The kernel's drop count of the UDP socket `fd` (IPv4 or IPv6).
pub fn socket_drops(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat on a descriptor the caller owns, into a zeroed stat.
    let inode = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some(st.st_ino)?
    };
    ["/proc/self/net/udp", "/proc/self/net/udp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .find_map(|table| drops_of(&table, inode))
}

/// The `drops` column (the last) of the line whose `inode` column (the tenth) is `inode`.
fn drops_of(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        (cols.get(9)?.parse::<u64>().ok()? == inode).then(|| cols.last()?.parse().ok())?
    })
}

/// UdpSndbufErrors of this network namespace so far.
pub fn udp_send_errors() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/self/net/snmp").ok()?;
    udp_counter(&snmp, "SndbufErrors")
}

/// A counter of the `Udp:` lines of /proc/net/snmp (a header line, then values).
fn udp_counter(snmp: &str, name: &str) -> Option<u64> {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let header = udp.next()?;
    let values = udp.next()?;
    let column = header.split_whitespace().position(|h| h == name)?;
    values.split_whitespace().nth(column)?.parse().ok()
}

/// Packets the host's per-CPU backlog queues refused so far: the sum over CPUs of
/// the second column (hexadecimal) of /proc/net/softnet_stat.
pub fn backlog_drops() -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/softnet_stat").ok()?;
    table
        .lines()
        .map(|line| u64::from_str_radix(line.split_whitespace().nth(1)?, 16).ok())
        .sum()
}

/// The counters one reading found; None where unreadable.
#[derive(Debug, Clone, Default)]
struct Reading {
    send_errors: Option<u64>,
    /// The index of the interface the route to the peer uses, and its counters.
    interface: Option<(u32, rtnetlink::Link)>,
    qdisc: Option<rtnetlink::Qdisc>,
    backlog: Option<u64>,
}

impl Reading {
    fn now(peer: Option<IpAddr>, sends: bool, receives: bool) -> Reading {
        let index = peer.and_then(|p| rtnetlink::route_interface(p).ok());
        Reading {
            send_errors: sends.then(udp_send_errors).flatten(),
            interface: index.and_then(|i| Some((i, rtnetlink::link(i).ok()?))),
            qdisc: index
                .filter(|_| sends)
                .and_then(|i| rtnetlink::root_qdisc(i).ok().flatten()),
            backlog: receives.then(backlog_drops).flatten(),
        }
    }
}

/// One end's drop counters at the start of a UDP test, to report what they counted
/// by its end.
#[derive(Debug, Clone)]
pub struct DropWatch {
    peer: Option<IpAddr>,
    sends: bool,
    receives: bool,
    start: Reading,
}

/// What [`DropWatch::finish`] found over the test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drops {
    /// UdpSndbufErrors (an end that sent).
    pub send_errors: Option<u64>,
    pub egress: Option<EgressDrops>,
    pub ingress: Option<IngressDrops>,
}

impl DropWatch {
    /// Reads the counters now, for an end that `sends` and/or `receives` UDP to and
    /// from `peer` (None: the interface counts are unknown).
    pub fn start(peer: Option<IpAddr>, sends: bool, receives: bool) -> DropWatch {
        DropWatch {
            peer,
            sends,
            receives,
            start: Reading::now(peer, sends, receives),
        }
    }

    /// Reads them again: the deltas. A counter read only once, an interface the
    /// route no longer uses, a qdisc replaced or a counter that went back is unknown.
    pub fn finish(&self) -> Drops {
        let (a, b) = (
            &self.start,
            Reading::now(self.peer, self.sends, self.receives),
        );
        let delta = |x: Option<u64>, y: Option<u64>| y?.checked_sub(x?);
        let same = match (&a.interface, &b.interface) {
            (Some((i, _)), Some((j, _))) if i == j => Some((&a.interface, &b.interface)),
            _ => None,
        };
        let link = |f: fn(&rtnetlink::Link) -> u64| {
            let (x, y) = same?;
            delta(x.as_ref().map(|l| f(&l.1)), y.as_ref().map(|l| f(&l.1)))
        };
        let interface = b.interface.as_ref().map(|(_, l)| l.name.clone());
        let qdisc = match (&a.qdisc, &b.qdisc) {
            (Some(x), Some(y)) if x.kind == y.kind && same.is_some() => Some(y),
            _ => None,
        };
        Drops {
            send_errors: delta(a.send_errors, b.send_errors),
            egress: self.sends.then(|| EgressDrops {
                interface: interface.clone(),
                qdisc: qdisc.map(|q| q.kind.clone()),
                qdisc_drops: qdisc.and_then(|y| {
                    let x = a.qdisc.as_ref()?;
                    u64::from(y.drops).checked_sub(u64::from(x.drops))
                }),
                tx_dropped: link(|l| l.tx_dropped),
            }),
            ingress: self.receives.then(|| IngressDrops {
                interface,
                rx_dropped: link(|l| l.rx_dropped),
                rx_missed_errors: link(|l| l.rx_missed_errors),
                backlog_drops: delta(a.backlog, b.backlog),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_fresh_socket_has_dropped_nothing_and_the_counter_reads() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(socket_drops(sock.as_raw_fd()), Some(0));
        assert!(udp_send_errors().is_some());
    }

    #[test]
    fn a_watch_over_loopback_names_lo_and_reads_every_counter() {
        let watch = DropWatch::start(Some("127.0.0.1".parse().unwrap()), true, true);
        let d = watch.finish();
        let egress = d.egress.unwrap();
        assert_eq!(egress.interface.as_deref(), Some("lo"));
        assert_eq!(egress.qdisc.as_deref(), Some("noqueue"));
        assert_eq!(egress.qdisc_drops, Some(0), "noqueue drops nothing");
        assert!(egress.tx_dropped.is_some() && d.send_errors.is_some());
        let ingress = d.ingress.unwrap();
        assert_eq!(ingress.interface.as_deref(), Some("lo"));
        assert!(ingress.rx_dropped.is_some() && ingress.rx_missed_errors.is_some());
        assert!(ingress.backlog_drops.is_some());
    }

    #[test]
    fn without_a_peer_the_interface_is_unknown_not_zero() {
        let d = DropWatch::start(None, true, false).finish();
        assert_eq!(
            d.egress.unwrap(),
            EgressDrops::default(),
            "every interface figure None"
        );
        assert!(d.ingress.is_none());
    }

    #[test]
    fn a_full_socket_counts_what_it_dropped() {
        let rx = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        rx.set_recv_buffer_size(4096).unwrap();
        rx.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
        let rx: std::net::UdpSocket = rx.into();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Nobody reads: 200 datagrams of 1,000 bytes cannot fit 2 x 4 KiB of buffer.
        let mut accepted = 0;
        for _ in 0..200 {
            accepted += tx.send_to(&[0u8; 1000], rx.local_addr().unwrap()).is_ok() as u64;
        }
        let mut queued = 0;
        rx.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 2000];
        while rx.recv(&mut buf).is_ok() {
            queued += 1;
        }
        let drops = socket_drops(rx.as_raw_fd()).unwrap();
        assert!(queued < 20, "{queued}");
        assert_eq!(
            drops + queued,
            accepted,
            "every datagram was queued or dropped"
        );
    }
}
