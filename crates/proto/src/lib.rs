//! The linkperf control protocol, without any I/O.
//!
//! A test has one control connection (TCP) and one data connection or UDP flow
//! per stream. Every connection to a linkperf server opens with a 4-byte
//! [`Preamble`]; control connections then carry length-prefixed JSON messages
//! ([`codec`]) whose legal order is enforced by [`session::Session`]. Nothing here
//! touches a socket: callers feed bytes in and write the bytes that come out,
//! which is what lets the whole protocol be tested without a network.

pub mod auth;
pub mod codec;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod iperf3;
pub mod messages;
pub mod results;
pub mod rr;
pub mod session;
pub mod udp;

pub use codec::{encode, CodecError, Decoder};
pub use config::{Direction, Protocol, TestConfig};
pub use messages::{ClientMessage, ServerMessage};

/// Version of the control protocol. Peers with a different version refuse each
/// other with a message naming both versions.
pub const PROTOCOL_VERSION: u32 = 1;

/// Default TCP port of `linkperf server` (iperf3 uses 5201; both can run side by side).
pub const DEFAULT_PORT: u16 = 5211;

/// First four bytes of every TCP connection to a linkperf server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preamble {
    /// A control connection follows.
    Control,
    /// A data connection follows: 8-byte session cookie, then 4-byte stream id.
    Data,
    /// A request/response (`linkperf rr`) session or data connection follows
    /// (see [`rr`]).
    Rr,
}

impl Preamble {
    pub const LEN: usize = 4;

    pub fn bytes(self) -> [u8; 4] {
        match self {
            Preamble::Control => *b"LPC1",
            Preamble::Data => *b"LPD1",
            Preamble::Rr => *b"LPR1",
        }
    }

    pub fn parse(bytes: &[u8; 4]) -> Option<Preamble> {
        match bytes {
            b"LPC1" => Some(Preamble::Control),
            b"LPD1" => Some(Preamble::Data),
            b"LPR1" => Some(Preamble::Rr),
            _ => None,
        }
    }
}

/// The identification a data connection sends after its preamble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHello {
    pub cookie: u64,
    pub stream_id: u32,
}

impl DataHello {
    pub const LEN: usize = 12;

    pub fn encode(&self) -> [u8; 12] {
        let mut out = [0u8; 12];
        out[..8].copy_from_slice(&self.cookie.to_be_bytes());
        out[8..].copy_from_slice(&self.stream_id.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8; 12]) -> DataHello {
        let mut cookie = [0u8; 8];
        cookie.copy_from_slice(&bytes[..8]);
        let mut id = [0u8; 4];
        id.copy_from_slice(&bytes[8..]);
        DataHello {
            cookie: u64::from_be_bytes(cookie),
            stream_id: u32::from_be_bytes(id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preambles_round_trip_and_reject_strangers() {
        for p in [Preamble::Control, Preamble::Data, Preamble::Rr] {
            assert_eq!(Preamble::parse(&p.bytes()), Some(p));
        }
        assert_eq!(Preamble::parse(b"GET "), None);
    }

    #[test]
    fn data_hello_is_big_endian() {
        let h = DataHello {
            cookie: 0x0102030405060708,
            stream_id: 9,
        };
        assert_eq!(h.encode(), [1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 9]);
        assert_eq!(DataHello::decode(&h.encode()), h);
    }
}
