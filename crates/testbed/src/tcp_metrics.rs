//! A host's congestion window clamp (`cwnd_clamp = N` in the topology) in effect from the
//! first test. The host's routes carry `cwnd lock N` ([`crate::routes`]), but Linux reads
//! the lock into a new connection only from the destination's TCP metrics entry
//! (`tcp_init_metrics`), and that entry is made when a connection to the destination
//! closes with a round trip measured. So after `up` has written the routes, one short
//! connection from each clamped host to every address of every other host makes the
//! entries; `ip tcp_metrics show` in the host lists them.

use crate::error::TestbedError;
use crate::netns;
use crate::state::Plan;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Longest a priming connection may take (it crosses the emulated links: their delay,
/// and a lossy link's retransmissions).
const PRIME_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes the TCP metrics entries that put each clamped host's `cwnd lock` in effect.
pub fn prime(plan: &Plan) -> Result<(), TestbedError> {
    let topo = &plan.topology;
    for host in topo.hosts.iter().filter(|h| h.cwnd_clamp.is_some()) {
        let from = netns::netns_name(&topo.name, &host.name);
        for other in topo.hosts.iter().filter(|o| o.name != host.name) {
            let to = netns::netns_name(&topo.name, &other.name);
            for i in &other.interfaces {
                for addr in [IpAddr::V4(i.ipv4), IpAddr::V6(i.ipv6)] {
                    connect_once(&from, &to, addr).map_err(|e| {
                        TestbedError::runtime(format!(
                            "host {}: cannot make the TCP metrics entry for {addr} (host {}) that its cwnd_clamp needs: {e}",
                            host.name, other.name
                        ))
                    })?;
                }
            }
        }
    }
    Ok(())
}

/// One connection from namespace `from` to a listener on `addr` in namespace `to`: a byte
/// each way, then closed by `to` first.
fn connect_once(from: &str, to: &str, addr: IpAddr) -> Result<(), TestbedError> {
    let io = |e: std::io::Error| TestbedError::runtime(e.to_string());
    let listener = netns::in_netns(to, move || TcpListener::bind((addr, 0)).map_err(io))?;
    let port = listener.local_addr().map_err(io)?.port();
    let far = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = accept(&listener)?;
        s.set_read_timeout(Some(PRIME_TIMEOUT))?;
        let mut b = [0u8; 1];
        s.read_exact(&mut b)?;
        s.write_all(&b)?;
        // This end closes first.
        Ok(())
    });
    let near = netns::in_netns(from, move || {
        let mut s =
            TcpStream::connect_timeout(&SocketAddr::new(addr, port), PRIME_TIMEOUT).map_err(io)?;
        s.set_read_timeout(Some(PRIME_TIMEOUT)).map_err(io)?;
        let mut b = [1u8; 1];
        s.write_all(&b).map_err(io)?;
        s.read_exact(&mut b).map_err(io)?;
        // The far end's FIN first, then this end's (LAST_ACK): closing this end first
        // left no IPv6 entry on Linux 6.18 (the IPv4 one was made), this order makes both.
        let _ = s.read(&mut b);
        Ok(())
    });
    let far = far
        .join()
        .map_err(|_| TestbedError::runtime("priming thread panicked"))?;
    near?;
    far.map_err(io)
}

/// The first connection `listener` gets within [`PRIME_TIMEOUT`] (a bounded wait, so a
/// failed connect does not leave this thread behind).
fn accept(listener: &TcpListener) -> std::io::Result<(TcpStream, SocketAddr)> {
    listener.set_nonblocking(true)?;
    let started = std::time::Instant::now();
    loop {
        match listener.accept() {
            Ok((s, a)) => {
                s.set_nonblocking(false)?;
                return Ok((s, a));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if started.elapsed() > PRIME_TIMEOUT {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no connection came",
                    ));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e),
        }
    }
}
