//! MPTCP (`-m`): stream sockets of protocol IPPROTO_MPTCP, and what the kernel says of an
//! MPTCP connection's subflows. Per subflow, `getsockopt(SOL_MPTCP, MPTCP_TCPINFO)` gives its
//! `tcp_info` (bytes acknowledged when sending, bytes received when receiving) and
//! `MPTCP_SUBFLOW_ADDRS` its two addresses, both as arrays in the kernel's subflow order
//! behind a `struct mptcp_subflow_data` header (Linux 5.16+).

use linkperf_proto::results::Subflow;
use socket2::{Domain, Protocol, Socket, Type};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

pub const IPPROTO_MPTCP: i32 = 262;
const SOL_MPTCP: i32 = 284;
const MPTCP_TCPINFO: i32 = 2;
const MPTCP_SUBFLOW_ADDRS: i32 = 3;
/// `struct mptcp_subflow_data`: size_subflow_data, num_subflows, size_kernel, size_user.
const HEADER: usize = 16;
/// Room asked for per subflow's tcp_info (the kernel copies what it has, at most this).
const TCP_INFO_SIZE: usize = 256;
/// `struct mptcp_subflow_addrs`: two `__kernel_sockaddr_storage`.
const ADDRS_SIZE: usize = 256;
const MAX_SUBFLOWS: usize = 8;
// Offsets in struct tcp_info (include/uapi/linux/tcp.h).
const BYTES_ACKED: usize = 120;
const BYTES_RECEIVED: usize = 128;

/// A stream socket, MPTCP when `mptcp`; the refusal of MPTCP is one line saying why.
pub fn stream_socket(domain: Domain, mptcp: bool) -> Result<Socket, String> {
    if !mptcp {
        return Socket::new(domain, Type::STREAM, None).map_err(|e| format!("socket: {e}"));
    }
    Socket::new(domain, Type::STREAM, Some(Protocol::from(IPPROTO_MPTCP))).map_err(|e| {
        format!(
            "-m/--mptcp: the kernel refused an MPTCP socket ({e}); MPTCP needs Linux 5.6+ with net.mptcp.enabled=1 (sysctl -w net.mptcp.enabled=1)"
        )
    })
}

/// One `getsockopt(SOL_MPTCP, name)` array: each element's bytes (at most `size` each).
fn subflow_array(fd: &impl AsRawFd, name: i32, size: usize) -> Option<Vec<Vec<u8>>> {
    let mut buf = vec![0u8; HEADER + size * MAX_SUBFLOWS];
    buf[0..4].copy_from_slice(&(HEADER as u32).to_ne_bytes());
    buf[12..16].copy_from_slice(&(size as u32).to_ne_bytes());
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for `len` bytes, which the kernel writes at most.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_MPTCP,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let word = |at: usize| u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or([0; 4]));
    let (count, user) = (word(4) as usize, word(12) as usize);
    let count = count.min(MAX_SUBFLOWS);
    (0..count)
        .map(|i| {
            let start = HEADER + i * user;
            buf.get(start..start + user.min(size)).map(<[u8]>::to_vec)
        })
        .collect()
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A `sockaddr_in` or `sockaddr_in6` at the start of `b`.
fn sockaddr(b: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes(b.get(0..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
    match i32::from(family) {
        libc::AF_INET => {
            let ip: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::from((ip, port)))
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            // A dual-stack listener's IPv4 peers as IPv4 (not ::ffff:a.b.c.d).
            Some(SocketAddr::new(
                std::net::Ipv6Addr::from(ip).to_canonical(),
                port,
            ))
        }
        _ => None,
    }
}

/// The subflows of an MPTCP socket now: addresses and the bytes each carried (acknowledged
/// for a sender, received for a receiver); empty for a plain TCP socket or a connection
/// that fell back to TCP.
pub fn subflows(fd: &impl AsRawFd, sender: bool) -> Vec<Subflow> {
    let (Some(infos), Some(addrs)) = (
        subflow_array(fd, MPTCP_TCPINFO, TCP_INFO_SIZE),
        subflow_array(fd, MPTCP_SUBFLOW_ADDRS, ADDRS_SIZE),
    ) else {
        return Vec::new();
    };
    infos
        .iter()
        .zip(&addrs)
        .map(|(info, a)| Subflow {
            local: sockaddr(a).map(|s| s.to_string()).unwrap_or_default(),
            remote: a
                .get(ADDRS_SIZE / 2..)
                .and_then(sockaddr)
                .map(|s| s.to_string())
                .unwrap_or_default(),
            bytes: u64_at(info, if sender { BYTES_ACKED } else { BYTES_RECEIVED }).unwrap_or(0),
            bits_per_second: 0.0,
        })
        .collect()
}

/// Keeps the subflows with the most bytes of two readings (subflows close at the end of a
/// connection, so a later reading may have lost some).
pub fn latest(before: Vec<Subflow>, now: Vec<Subflow>) -> Vec<Subflow> {
    let total = |v: &[Subflow]| v.iter().map(|s| s.bytes).sum::<u64>();
    if total(&now) >= total(&before) {
        now
    } else {
        before
    }
}
