//! linkperf's UDP datagram header.
//!
//! Every datagram starts with a 64-bit sequence number and the sender's
//! wall-clock send time, big-endian. The receiver derives loss, reordering,
//! duplicates and RFC 3550 jitter from them, and one-way delay when both ends
//! share a clock. The final datagrams of a stream carry the FIN flag and the
//! number of datagrams sent, so the receiver knows when it has everything.

/// Sequence (8) + send time in ns since the Unix epoch (8).
pub const HEADER_LEN: usize = 16;
/// Set in the sequence field of end-of-stream markers.
pub const FIN_FLAG: u64 = 1 << 63;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datagram {
    /// A numbered data datagram.
    Data { seq: u64, sent_ns: u64 },
    /// End of stream: `total` datagrams were sent before it.
    Fin { total: u64 },
}

pub fn write_data(buf: &mut [u8], seq: u64, sent_ns: u64) {
    buf[..8].copy_from_slice(&seq.to_be_bytes());
    buf[8..16].copy_from_slice(&sent_ns.to_be_bytes());
}

pub fn write_fin(buf: &mut [u8], total: u64) {
    buf[..8].copy_from_slice(&(FIN_FLAG | total).to_be_bytes());
    buf[8..16].copy_from_slice(&0u64.to_be_bytes());
}

/// Parses a received datagram; `None` if it is too short to be ours.
pub fn parse(buf: &[u8]) -> Option<Datagram> {
    if buf.len() < HEADER_LEN {
        return None;
    }
    let seq = u64::from_be_bytes(buf[..8].try_into().ok()?);
    let sent_ns = u64::from_be_bytes(buf[8..16].try_into().ok()?);
    if seq & FIN_FLAG != 0 {
        Some(Datagram::Fin {
            total: seq & !FIN_FLAG,
        })
    } else {
        Some(Datagram::Data { seq, sent_ns })
    }
}

/// First datagram of a UDP stream, sent by the client until the server
/// acknowledges it, so the server learns the client's address (needed when the
/// server sends, and through NAT): magic, session cookie, stream id.
pub const HELLO_MAGIC: [u8; 4] = *b"LPU1";
pub const HELLO_LEN: usize = 16;
/// The server's acknowledgement of a UDP hello.
pub const HELLO_ACK: [u8; 4] = *b"LPUA";

pub fn write_hello(cookie: u64, stream_id: u32) -> [u8; HELLO_LEN] {
    let mut out = [0u8; HELLO_LEN];
    out[..4].copy_from_slice(&HELLO_MAGIC);
    out[4..12].copy_from_slice(&cookie.to_be_bytes());
    out[12..].copy_from_slice(&stream_id.to_be_bytes());
    out
}

pub fn parse_hello(buf: &[u8]) -> Option<(u64, u32)> {
    if buf.len() != HELLO_LEN || buf[..4] != HELLO_MAGIC {
        return None;
    }
    let cookie = u64::from_be_bytes(buf[4..12].try_into().ok()?);
    let id = u32::from_be_bytes(buf[12..16].try_into().ok()?);
    Some((cookie, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let mut b = [0u8; 64];
        write_data(&mut b, 42, 1_700_000_000_123_456_789);
        assert_eq!(
            parse(&b),
            Some(Datagram::Data {
                seq: 42,
                sent_ns: 1_700_000_000_123_456_789
            })
        );
        assert_eq!(&b[..8], &[0, 0, 0, 0, 0, 0, 0, 42]);
        write_fin(&mut b, 1000);
        assert_eq!(parse(&b), Some(Datagram::Fin { total: 1000 }));
        assert_eq!(parse(&b[..15]), None);
    }

    #[test]
    fn hello_round_trip() {
        let h = write_hello(7, 3);
        assert_eq!(parse_hello(&h), Some((7, 3)));
        assert_eq!(parse_hello(&h[..15]), None);
        assert_eq!(parse_hello(b"LPUXxxxxxxxxxxxx"), None);
    }
}
