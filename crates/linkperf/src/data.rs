//! Opening data connections and UDP flows, shared by client and server.

use linkperf_engine::sockopt;
use linkperf_proto::results::Role;
use linkperf_proto::{udp, Direction, TestConfig};
use socket2::{Domain, Protocol as SockProtocol, SockRef, Socket, Type};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::ops::RangeInclusive;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Stream ids and what this end does with each. Client-to-server streams are
/// numbered first; with `--bidir` the server-to-client ones follow.
pub fn stream_roles(config: &TestConfig, is_server: bool) -> Vec<(u32, Role)> {
    let (here_sends, there_sends) = if is_server {
        (Role::Sender, Role::Receiver)
    } else {
        (Role::Receiver, Role::Sender)
    };
    let p = config.parallel;
    match config.direction {
        Direction::Forward => (0..p).map(|i| (i, there_sends)).collect(),
        Direction::Reverse => (0..p).map(|i| (i, here_sends)).collect(),
        Direction::Bidir => (0..p)
            .map(|i| (i, there_sends))
            .chain((p..2 * p).map(|i| (i, here_sends)))
            .collect(),
    }
}

/// Applies buffers and TCP options to a data connection.
pub fn prepare_tcp(stream: &TcpStream, config: &TestConfig) -> Result<Vec<String>, String> {
    let sock = SockRef::from(stream);
    let warnings = sockopt::apply_buffers(&sock, config);
    let mut tcp_only = config.clone();
    tcp_only.mss = None; // MSS is negotiated in the handshake: set before connect only
    sockopt::apply_tcp(&sock, &tcp_only)?;
    Ok(warnings)
}

/// True when the test sets an option that the TCP handshake negotiates: the
/// receive buffer fixes the window scale in the SYN, the MSS is announced in
/// it, and a listener passes its send buffer on too. Such a test's data
/// connections must be accepted by a listener that has these options before
/// `listen`; set after `accept`, a small window collapses (the scale was
/// chosen for the default buffer). A window clamp also sets the scale and
/// the first window the SYN-ACK offers. A TOS mark (--dscp) is set there
/// too, so the SYN-ACK carries it.
pub fn handshake_options_set(config: &TestConfig) -> bool {
    config.rcvbuf.is_some()
        || config.sndbuf.is_some()
        || config.mss.is_some()
        || config.tos.is_some()
        || config.window_clamp.is_some()
        // MPTCP data connections need an MPTCP listener of their own.
        || config.mptcp
}

/// A TCP listener for one test's data connections, with the test's buffers
/// and TCP options set before `listen`, so every accepted connection has them
/// from its first segment. Bound to `ip`, on a port of `ports` (any free one
/// when `None`). Returns the listener and the buffer warnings.
pub fn data_listener(
    ip: IpAddr,
    ports: Option<&RangeInclusive<u16>>,
    config: &TestConfig,
    backlog: i32,
) -> Result<(TcpListener, Vec<String>), String> {
    let domain = if ip.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let candidates: Vec<u16> = match ports {
        Some(r) => r.clone().collect(),
        None => vec![0],
    };
    for port in candidates {
        let sock = linkperf_engine::mptcp::stream_socket(domain, config.mptcp)
            .map_err(|e| format!("data listener: {e}"))?;
        let warnings = sockopt::apply_buffers(&sock, config);
        sockopt::apply_tcp(&sock, config)?;
        if sock.bind(&SocketAddr::new(ip, port).into()).is_err() {
            continue;
        }
        sock.listen(backlog)
            .map_err(|e| format!("data listener on {ip}:{port}: {e}"))?;
        return Ok((sock.into(), warnings));
    }
    Err(match ports {
        Some(r) => format!(
            "every data port in {}-{} is in use; widen --data-ports",
            r.start(),
            r.end()
        ),
        None => format!("cannot bind a data listener on {ip}"),
    })
}

/// Options to set on an accepted data connection: those the handshake does
/// not negotiate (the listener set the others before `listen`).
pub fn prepare_accepted(stream: &TcpStream, config: &TestConfig) -> Result<(), String> {
    let mut after_handshake = config.clone();
    after_handshake.mss = None;
    sockopt::apply_tcp(&SockRef::from(stream), &after_handshake)
}

/// A UDP socket bound to `addr` with the test's options.
pub fn bind_udp(addr: SocketAddr, config: &TestConfig) -> Result<UdpSocket, String> {
    let domain = if addr.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let sock = Socket::new(domain, Type::DGRAM, Some(SockProtocol::UDP))
        .map_err(|e| format!("UDP socket: {e}"))?;
    // Small datagrams at high rates overflow default buffers; ask for more
    // unless the user chose, and let the kernel cap it.
    if config.rcvbuf.is_none() {
        let _ = sock.set_recv_buffer_size(4 * 1024 * 1024);
    }
    sockopt::apply_buffers(&sock, config);
    sockopt::apply_udp(&sock, config, addr.is_ipv6())?;
    sock.bind(&addr.into())
        .map_err(|e| format!("cannot bind UDP to {addr}: {e}"))?;
    Ok(sock.into())
}

/// Server side: waits for the client's hello on a stream's UDP socket, then
/// connects the socket to the client and acknowledges. Only a hello from
/// `peer` (the control connection's address, proven by its TCP handshake)
/// counts: one from elsewhere may have a spoofed source, and answering it
/// would aim the test's stream at a victim (reflection). The acknowledgement
/// is smaller than the hello, so no address gets more than it sent.
pub fn accept_udp(
    sock: &UdpSocket,
    cookie: u64,
    id: u32,
    peer: IpAddr,
    deadline: Instant,
) -> Result<(), String> {
    let mut buf = [0u8; 2048];
    let mut strangers = 0u32;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let ignored = if strangers > 0 {
                format!(
                    "; {strangers} datagram(s) from addresses other than the control connection's ({}) were ignored",
                    canonical_ip(peer)
                )
            } else {
                String::new()
            };
            return Err(format!(
                "UDP stream {id}: no hello from the client; is UDP blocked by a firewall?{ignored}"
            ));
        }
        let _ = sock.set_read_timeout(Some(left.min(Duration::from_millis(200))));
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                if canonical_ip(from.ip()) != canonical_ip(peer) {
                    strangers = strangers.saturating_add(1);
                    continue;
                }
                if udp::parse_hello(&buf[..n]) == Some((cookie, id)) {
                    sock.connect(from)
                        .map_err(|e| format!("UDP connect to {from}: {e}"))?;
                    for _ in 0..3 {
                        let _ = sock.send(&udp::HELLO_ACK);
                    }
                    return Ok(());
                }
            }
            Err(_) => continue,
        }
    }
}

/// An address as one family sees it: IPv4-mapped IPv6 addresses as IPv4, so
/// a dual-stack socket's peer compares equal to the same host over IPv4.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Client side: opens a stream's UDP flow, repeating the hello until acknowledged.
pub fn connect_udp(
    local: SocketAddr,
    server: SocketAddr,
    config: &TestConfig,
    cookie: u64,
    id: u32,
) -> Result<UdpSocket, String> {
    let sock = bind_udp(local, config)?;
    sock.connect(server)
        .map_err(|e| format!("UDP connect to {server}: {e}"))?;
    let hello = udp::write_hello(cookie, id);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 2048];
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    while Instant::now() < deadline {
        let _ = sock.send(&hello);
        if let Ok(n) = sock.recv(&mut buf) {
            if buf[..n] == udp::HELLO_ACK {
                return Ok(sock);
            }
        }
    }
    Err(format!(
        "UDP stream {id}: the server at {server} never answered; is UDP blocked by a firewall?"
    ))
}

/// True when both ends read the same clock: loopback or the same address.
pub fn same_host(peer: IpAddr, local: IpAddr) -> bool {
    let (peer, local) = (canonical_ip(peer), canonical_ip(local));
    peer == local || (peer.is_loopback() && local.is_loopback())
}

/// This host's name, for archive entries.
pub fn hostname() -> String {
    linkperf_engine::facts::collect("").hostname
}

/// The start instant for an optional agreed wall-clock start time.
pub fn start_instant(start_at_unix_ms: Option<u64>) -> (Instant, u64) {
    // Nanosecond precision: truncating "now" to the millisecond would scatter
    // the start of synchronised flows over up to a millisecond.
    let (instant, now) = (Instant::now(), SystemTime::now());
    let now_ns = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let now_ms = (now_ns / 1_000_000) as u64;
    match start_at_unix_ms {
        Some(at) if u128::from(at) * 1_000_000 > now_ns => {
            let wait = Duration::from_nanos((u128::from(at) * 1_000_000 - now_ns) as u64);
            (instant + wait, at)
        }
        _ => (instant, now_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidir_numbers_forward_streams_first() {
        let c = TestConfig {
            parallel: 2,
            direction: Direction::Bidir,
            ..Default::default()
        };
        assert_eq!(
            stream_roles(&c, false),
            vec![
                (0, Role::Sender),
                (1, Role::Sender),
                (2, Role::Receiver),
                (3, Role::Receiver)
            ]
        );
        assert_eq!(stream_roles(&c, true)[0], (0, Role::Receiver));
    }

    #[test]
    fn mapped_addresses_count_as_the_same_host() {
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert!(same_host(mapped, "10.0.0.1".parse().unwrap()));
        assert!(!same_host(
            "10.0.0.2".parse().unwrap(),
            "10.0.0.1".parse().unwrap()
        ));
    }
}
