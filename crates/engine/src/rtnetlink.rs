//! A little rtnetlink (NETLINK_ROUTE) in the calling process's network namespace:
//! the interface the route to an address leaves by, an interface's name and drop
//! counters, and its root qdisc's kind and drop count: what `ip route get`,
//! `ip -s link` and `tc -s qdisc` print, read without spawning those tools and
//! without /sys (whose view of interfaces is that of the namespace it was mounted in).

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const IFLA_IFNAME: u16 = 3;
const IFLA_STATS64: u16 = 23;
const IFLA_GSO_MAX_SEGS: u16 = 40;
const TCA_KIND: u16 = 1;
const TCA_STATS: u16 = 3;
const TCA_STATS2: u16 = 7;
const TCA_STATS_QUEUE: u16 = 3;
/// The parent of a root (egress) qdisc.
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
const HEADER: usize = 16;

/// An interface's name, the drop counters of its 64-bit statistics, and the most
/// segments it takes in one GSO packet (None from a kernel that does not say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_missed_errors: u64,
    pub gso_max_segs: Option<u32>,
}

/// An interface's root qdisc: its kind (`tbf`, `htb`, `fq_codel`, `noqueue`...) and
/// the packets it dropped (the kernel's 32-bit count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qdisc {
    pub kind: String,
    pub drops: u32,
}

/// The index of the interface the route to `to` uses (an IPv4-mapped IPv6 address
/// is looked up as IPv4, as the kernel routes it).
pub fn route_interface(to: IpAddr) -> io::Result<u32> {
    let to = match to {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(to, IpAddr::V4),
        v4 => v4,
    };
    let (family, addr) = match to {
        IpAddr::V4(a) => (libc::AF_INET as u8, a.octets().to_vec()),
        IpAddr::V6(a) => (libc::AF_INET6 as u8, a.octets().to_vec()),
    };
    // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
    let mut body = vec![family, (addr.len() * 8) as u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    push_attr(&mut body, RTA_DST, &addr);
    let replies = ask(RTM_GETROUTE, false, &body, RTM_NEWROUTE)?;
    replies
        .first()
        .and_then(|r| attr(r.get(12..)?, RTA_OIF))
        .and_then(|v| Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?)))
        .ok_or_else(|| invalid("route reply without an output interface"))
}

/// Interface `index`'s name, drop counters and GSO segment limit.
pub fn link(index: u32) -> io::Result<Link> {
    // struct ifinfomsg: family, pad, type (u16), index (i32), flags, change.
    let mut body = vec![0u8; 16];
    body[4..8].copy_from_slice(&index.to_ne_bytes());
    let replies = ask(RTM_GETLINK, false, &body, RTM_NEWLINK)?;
    let attrs = replies
        .first()
        .and_then(|r| r.get(16..))
        .ok_or_else(|| invalid("short link reply"))?;
    let name = attr(attrs, IFLA_IFNAME)
        .map(|n| {
            String::from_utf8_lossy(n)
                .trim_end_matches('\0')
                .to_string()
        })
        .ok_or_else(|| invalid("link reply without a name"))?;
    let stats = attr(attrs, IFLA_STATS64).ok_or_else(|| invalid("link without statistics"))?;
    // struct rtnl_link_stats64: u64 fields; rx_dropped is the 7th, tx_dropped the 8th,
    // rx_missed_errors the 16th.
    let field = |i: usize| -> io::Result<u64> {
        let bytes = stats
            .get(i * 8..i * 8 + 8)
            .ok_or_else(|| invalid("short link statistics"))?;
        Ok(u64::from_ne_bytes(bytes.try_into().expect("8 bytes")))
    };
    let gso_max_segs = attr(attrs, IFLA_GSO_MAX_SEGS)
        .and_then(|v| Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?)));
    Ok(Link {
        name,
        rx_dropped: field(6)?,
        tx_dropped: field(7)?,
        rx_missed_errors: field(15)?,
        gso_max_segs,
    })
}

/// Whether datagrams to `peer` may go as UDP GSO trains: not when the interface the route
/// leaves by takes one segment per packet (`gso_max_segs 1`, as a testbed host with a
/// send cost has), since its qdisc then charges each packet on its own and a train would
/// pass as one. Yes when the route or the interface cannot be read.
pub fn gso_allowed(peer: IpAddr) -> bool {
    route_interface(peer)
        .and_then(link)
        .map_or(true, |l| l.gso_max_segs.is_none_or(|n| n > 1))
}

/// Interface `index`'s root qdisc, None if it has none.
pub fn root_qdisc(index: u32) -> io::Result<Option<Qdisc>> {
    // struct tcmsg: family, pad, pad (u16), ifindex (i32), handle, parent, info.
    let replies = ask(RTM_GETQDISC, true, &[0u8; 20], RTM_NEWQDISC)?;
    for r in &replies {
        let word = |at: usize| {
            r.get(at..at + 4)
                .map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
        };
        if word(4) != Some(index) || word(12) != Some(TC_H_ROOT) {
            continue;
        }
        let attrs = r.get(20..).unwrap_or(&[]);
        let kind = attr(attrs, TCA_KIND)
            .map(|k| {
                String::from_utf8_lossy(k)
                    .trim_end_matches('\0')
                    .to_string()
            })
            .ok_or_else(|| invalid("qdisc without a kind"))?;
        // struct gnet_stats_queue: qlen, backlog, drops, ...; the older struct
        // tc_stats: bytes (u64), packets, drops, ...
        let drops = attr(attrs, TCA_STATS2)
            .and_then(|nested| attr(nested, TCA_STATS_QUEUE))
            .and_then(|q| q.get(8..12))
            .or_else(|| attr(attrs, TCA_STATS).and_then(|s| s.get(12..16)))
            .map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
            .ok_or_else(|| invalid("qdisc without statistics"))?;
        return Ok(Some(Qdisc { kind, drops }));
    }
    Ok(None)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

fn push_attr(buf: &mut Vec<u8>, kind: u16, value: &[u8]) {
    buf.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(value);
    buf.resize(align(buf.len()), 0);
}

fn align(n: usize) -> usize {
    (n + 3) & !3
}

/// The value of the first attribute of type `kind` in a run of attributes.
fn attr(mut data: &[u8], kind: u16) -> Option<&[u8]> {
    while data.len() >= 4 {
        let len = u16::from_ne_bytes([data[0], data[1]]) as usize;
        // The top two bits flag nesting and byte order.
        let ty = u16::from_ne_bytes([data[2], data[3]]) & 0x3fff;
        if len < 4 || len > data.len() {
            return None;
        }
        if ty == kind {
            return Some(&data[4..len]);
        }
        data = &data[align(len).min(data.len())..];
    }
    None
}

/// Sends one request and returns the bodies of its replies of type `reply`: the
/// first for a plain request, all of them up to the end for a dump.
fn ask(kind: u16, dump: bool, body: &[u8], reply: u16) -> io::Result<Vec<Vec<u8>>> {
    let fd = open()?;
    let flags = NLM_F_REQUEST | if dump { NLM_F_DUMP } else { 0 };
    let mut msg = Vec::with_capacity(HEADER + body.len());
    msg.extend_from_slice(&((HEADER + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel's
    msg.extend_from_slice(body);
    // SAFETY: a buffer of msg.len() bytes on a socket this function owns.
    let sent = unsafe { libc::send(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: receives into a buffer of buf.len() bytes.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut data = &buf[..n as usize];
        while data.len() >= HEADER {
            let len = u32::from_ne_bytes(data[0..4].try_into().unwrap()) as usize;
            let ty = u16::from_ne_bytes([data[4], data[5]]);
            if len < HEADER || len > data.len() {
                return Err(invalid("truncated netlink message"));
            }
            let payload = &data[HEADER..len];
            match ty {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR => {
                    let errno = payload
                        .get(..4)
                        .map_or(0, |b| i32::from_ne_bytes(b.try_into().unwrap()));
                    return match errno {
                        0 => Ok(out),
                        e => Err(io::Error::from_raw_os_error(-e)),
                    };
                }
                t if t == reply => {
                    out.push(payload.to_vec());
                    if !dump {
                        return Ok(out);
                    }
                }
                _ => {}
            }
            data = &data[align(len).min(data.len())..];
        }
    }
}

/// A NETLINK_ROUTE socket that gives up on a reply after a second.
fn open() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation; the descriptor is owned at once.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let timeout = libc::timeval {
        tv_sec: 1,
        tv_usec: 0,
    };
    // SAFETY: a timeval of the size passed.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_routes_through_lo_whose_counters_and_qdisc_read() {
        let lo = route_interface("127.0.0.1".parse().unwrap()).unwrap();
        let link = link(lo).unwrap();
        assert_eq!(link.name, "lo");
        // lo has IFF_NO_QUEUE: its root qdisc is noqueue, which drops nothing.
        let q = root_qdisc(lo).unwrap().expect("lo has a root qdisc");
        assert_eq!(
            q,
            Qdisc {
                kind: "noqueue".into(),
                drops: 0
            }
        );
        assert_eq!(
            route_interface("::ffff:127.0.0.1".parse().unwrap()).unwrap(),
            lo
        );
    }

    #[test]
    fn a_missing_interface_is_an_error_not_a_zero() {
        assert!(link(u32::MAX >> 1).is_err());
        assert_eq!(root_qdisc(u32::MAX >> 1).unwrap(), None);
    }
}
