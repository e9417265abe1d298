//! iperf3's data streams: their ids, the UDP connect handshake, and the
//! header at the start of each UDP datagram. Nothing of the control connection.

/// The iperf3 stream id of the stream created `index`-th (from 0): 1, 3, 4, 5, ...
pub fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        index as u32 + 2
    }
}

/// The creation index of an iperf3 stream id (inverse of [`stream_id`]).
pub fn stream_index(id: u32) -> Option<usize> {
    match id {
        1 => Some(0),
        0 | 2 => None,
        n => Some(n as usize - 2),
    }
}

/// The UDP "connect" datagram an iperf3 client sends on each UDP stream: the
/// integer 0x36373839 in little-endian byte order, i.e. the text "9876".
pub const UDP_CONNECT: [u8; 4] = *b"9876";
/// The server's reply: "6789".
pub const UDP_REPLY: [u8; 4] = *b"6789";
/// Replies of iperf3 servers before 3.x.y (987654321), either byte order.
const UDP_REPLY_LEGACY: [[u8; 4]; 2] = [[0xb1, 0x68, 0xde, 0x3a], [0x3a, 0xde, 0x68, 0xb1]];

/// True when `d` is a UDP connect reply from any iperf3 version (and either byte order).
pub fn is_udp_reply(d: &[u8]) -> bool {
    d.len() == 4 && (d == UDP_REPLY || d == *b"9876" || UDP_REPLY_LEGACY.iter().any(|l| d == l))
}

/// Header length of iperf3's UDP datagrams.
pub fn udp_header_len(counters_64bit: bool) -> usize {
    if counters_64bit {
        16
    } else {
        12
    }
}

/// Writes iperf3's UDP header: send time (seconds, microseconds) and packet count.
pub fn write_udp_header(buf: &mut [u8], sent_unix_ns: u64, count: u64, counters_64bit: bool) {
    let sec = (sent_unix_ns / 1_000_000_000) as u32;
    let usec = ((sent_unix_ns % 1_000_000_000) / 1000) as u32;
    buf[..4].copy_from_slice(&sec.to_be_bytes());
    buf[4..8].copy_from_slice(&usec.to_be_bytes());
    if counters_64bit {
        buf[8..16].copy_from_slice(&count.to_be_bytes());
    } else {
        buf[8..12].copy_from_slice(&(count as u32).to_be_bytes());
    }
}

/// Reads iperf3's UDP header: (send time in ns since the Unix epoch, packet count).
pub fn parse_udp_header(buf: &[u8], counters_64bit: bool) -> Option<(u64, u64)> {
    if buf.len() < udp_header_len(counters_64bit) {
        return None;
    }
    let sec = u32::from_be_bytes(buf[..4].try_into().ok()?) as u64;
    let usec = u32::from_be_bytes(buf[4..8].try_into().ok()?) as u64;
    let count = if counters_64bit {
        u64::from_be_bytes(buf[8..16].try_into().ok()?)
    } else {
        u32::from_be_bytes(buf[8..12].try_into().ok()?) as u64
    };
    Some((sec * 1_000_000_000 + usec * 1000, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_skip_two() {
        let ids: Vec<u32> = (0..5).map(stream_id).collect();
        assert_eq!(ids, [1, 3, 4, 5, 6]);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(stream_index(*id), Some(i));
        }
        assert_eq!(stream_index(2), None);
    }

    #[test]
    fn udp_handshake_bytes() {
        // iperf3 writes 0x36373839 in host order: on little-endian hosts "9876".
        assert_eq!(UDP_CONNECT, 0x3637_3839u32.to_le_bytes());
        assert_eq!(UDP_REPLY, 0x3938_3736u32.to_le_bytes());
        assert!(is_udp_reply(b"6789"));
        assert!(is_udp_reply(&987_654_321u32.to_le_bytes()));
        assert!(is_udp_reply(&987_654_321u32.to_be_bytes()));
        assert!(!is_udp_reply(b"67890"));
    }

    #[test]
    fn udp_header_32_and_64_bit() {
        let mut b = [0u8; 20];
        write_udp_header(&mut b, 1_700_000_000_123_456_789, 5, false);
        assert_eq!(
            &b[..12],
            &[0x65, 0x53, 0xf1, 0x00, 0x00, 0x01, 0xe2, 0x40, 0, 0, 0, 5]
        );
        assert_eq!(
            parse_udp_header(&b, false),
            Some((1_700_000_000_123_456_000, 5))
        );
        write_udp_header(&mut b, 2_000_000_000, (1 << 40) + 7, true);
        assert_eq!(&b[8..16], &[0, 0, 1, 0, 0, 0, 0, 7]);
        assert_eq!(
            parse_udp_header(&b, true),
            Some((2_000_000_000, (1 << 40) + 7))
        );
        assert_eq!(parse_udp_header(&b[..11], false), None);
    }
}
