//! Where UDP datagrams were dropped inside a host, from the kernel's own counters:
//! a receiving socket's buffer overflows (the per-socket `drops` column of
//! /proc/net/udp and udp6) and datagrams a sending host's interface queue refused
//! (`SndbufErrors` of the Udp line of /proc/net/snmp: a qdisc drop of a datagram the
//! socket had accepted is counted there when the socket does not ask for errors).
//! Both files are those of the reading process's network namespace.

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
