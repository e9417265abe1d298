//! What a TCP stream has received: the bytes its kernel took in, read by the
//! receiving thread or still queued in the socket.
//!
//! A receiver counts the bytes it has read. A reader kept from its CPU at an
//! interval boundary (a loaded host) leaves bytes in the socket that arrived in
//! the closing interval and would be counted in the next: after `--omit` the
//! measured rate then exceeds the link by what was queued at the boundary. The
//! kernel's `tcpi_bytes_received` counts in-order arrivals as they come; less
//! what the connection carried before the stream began (the data connection's
//! preamble and hello, read before the engine got the socket), it is what
//! arrived for the stream.

use crate::tcpinfo::{self, TcpInfo};
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// A TCP receiving stream's arrival counter.
#[derive(Debug, Clone, Copy)]
pub struct Arrivals {
    /// Bytes the connection carried before the stream's first byte.
    before: u64,
}

/// Connection states after a FIN was received (include/net/tcp_states.h):
/// CLOSE_WAIT, LAST_ACK, TIME_WAIT, CLOSING, and CLOSE (after those, or a
/// reset: then one byte too few, and the read count is the floor). The FIN
/// counts one byte of sequence space in `tcpi_bytes_received`.
const FIN_RECEIVED: [u8; 5] = [8, 9, 6, 11, 7];

impl Arrivals {
    /// Reads what the connection carried so far. Call before the stream's
    /// reader starts: nobody reads the socket then, so everything received and
    /// not queued was read before the stream began. The reading counts only
    /// when the queue held still around it (no arrival in between); `None`
    /// when it never did or the kernel does not say (the read count is used).
    pub fn new(sock: &TcpStream) -> Option<Arrivals> {
        for _ in 0..5 {
            let waiting = queued(sock)?;
            let received = tcpinfo::read(sock).ok()?.bytes_received?;
            if queued(sock)? == waiting {
                return Some(Arrivals {
                    before: received.checked_sub(waiting)?,
                });
            }
        }
        None
    }

    /// The stream's bytes received by now, given the kernel's `info` and what
    /// the reader has read (`read`, never more than what arrived).
    pub fn bytes(&self, info: Option<&TcpInfo>, read: u64) -> u64 {
        let Some(received) = info.and_then(|i| i.bytes_received) else {
            return read;
        };
        let fin = info
            .and_then(|i| i.state)
            .is_some_and(|s| FIN_RECEIVED.contains(&s));
        received
            .saturating_sub(self.before + u64::from(fin))
            .max(read)
    }
}

/// Bytes queued in the socket, not yet read (SIOCINQ).
fn queued(sock: &TcpStream) -> Option<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int to the valid out-pointer.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::FIONREAD, &mut n) };
    (rc == 0).then_some(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (rx, _) = listener.accept().unwrap();
        (tx, rx)
    }

    /// Waits until `rx` has `n` bytes queued (loopback delivers at once, but
    /// in the kernel's softirq, not in the writer's call).
    fn wait_queued(rx: &TcpStream, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while queued(rx).unwrap() < n {
            assert!(Instant::now() < deadline, "{n} bytes never queued");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn bytes_now(a: &Arrivals, rx: &TcpStream, read: u64) -> u64 {
        a.bytes(Some(&tcpinfo::read(rx).unwrap()), read)
    }

    #[test]
    fn bytes_not_yet_read_count_and_a_preamble_does_not() {
        let (mut tx, mut rx) = pair();
        // A 37-byte preamble, read before the stream begins...
        tx.write_all(&[7u8; 37]).unwrap();
        let mut preamble = [0u8; 37];
        rx.read_exact(&mut preamble).unwrap();
        // ...and 5,000 of the stream's bytes already queued when it does.
        tx.write_all(&[1u8; 5_000]).unwrap();
        wait_queued(&rx, 5_000);
        let a = Arrivals::new(&rx).expect("this kernel reports tcpi_bytes_received");
        assert_eq!(bytes_now(&a, &rx, 0), 5_000);
        // 60,000 more arrive; the reader has read none: all have been received.
        tx.write_all(&[2u8; 60_000]).unwrap();
        wait_queued(&rx, 65_000);
        assert_eq!(bytes_now(&a, &rx, 0), 65_000);
        // It reads 20,000 of them: still 65,000 received.
        let mut buf = vec![0u8; 20_000];
        rx.read_exact(&mut buf).unwrap();
        assert_eq!(bytes_now(&a, &rx, 20_000), 65_000);
    }

    #[test]
    fn the_fin_is_not_a_byte_and_the_read_count_is_a_floor() {
        let (mut tx, mut rx) = pair();
        let a = Arrivals::new(&rx).unwrap();
        tx.write_all(&[3u8; 10_000]).unwrap();
        drop(tx);
        let mut all = Vec::new();
        rx.read_to_end(&mut all).unwrap();
        assert_eq!(all.len(), 10_000);
        let info = tcpinfo::read(&rx).unwrap();
        assert_eq!(info.state, Some(8), "CLOSE_WAIT after the peer's FIN");
        assert_eq!(a.bytes(Some(&info), 10_000), 10_000);
        // Without tcp_info, or with a reading older than the reader's count,
        // the count the reader keeps stands.
        assert_eq!(a.bytes(None, 10_000), 10_000);
        let stale = TcpInfo {
            bytes_received: Some(5_000),
            ..TcpInfo::default()
        };
        assert_eq!(a.bytes(Some(&stale), 10_000), 10_000);
    }
}
