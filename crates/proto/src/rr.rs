//! Request/response (`linkperf rr`): control messages, their legal order and
//! the data formats, without any I/O.
//!
//! Every rr connection opens with [`crate::Preamble::Rr`] and then one framed
//! JSON message ([`crate::codec`] framing):
//!
//! * [`RrClientMessage::Hello`] opens a *session*: the server answers
//!   [`RrServerMessage::Welcome`] with a cookie (and, for UDP, the port of a
//!   socket reserved for the session); at the end the client sends
//!   [`RrClientMessage::Finish`] and the server reports its own count in
//!   [`RrServerMessage::Done`].
//! * [`RrClientMessage::Join`] turns the connection into a TCP *data
//!   connection* of a session: after the frame, raw requests of exactly
//!   `request` bytes follow, each answered by exactly `response` bytes, until
//!   the client closes. `linkperf rr --connect` opens one per transaction.
//!
//! A server that requires users answers a Hello with
//! [`RrServerMessage::Challenge`] (a nonce, as in [`crate::auth`]); the
//! client answers [`RrClientMessage::Auth`] and the server then owes its
//! Welcome (or an Error).
//!
//! ```text
//! Opening --Hello--> Greeted --Welcome--> Running --Finish--> Finishing --Done--> Closed
//!                    Greeted --Challenge--> Challenged --Auth--> Greeted
//! Opening --Join--> Data (raw transactions; no more frames)
//! any state but Data: Error (from the server) --> Closed
//! ```
//!
//! UDP transactions are single datagrams on the session's UDP flow (opened
//! with the hello of [`crate::udp`]): a request carries its sequence number
//! and the response size it asks for ([`write_udp_request`]); the response
//! echoes the sequence number and the server's receive time
//! ([`write_udp_response`]), so lost and late answers are told apart and
//! one-way delay is known when both clocks agree. TCP responses of 8 bytes or
//! more start with the server's receive time ([`write_tcp_stamp`]).

use crate::codec::{encode, CodecError, Decoder};
use crate::config::MAX_UDP_PAYLOAD;
use crate::Protocol;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Version of the rr protocol; peers with another version refuse each other.
pub const RR_VERSION: u32 = 1;

/// Sequence (8) + response size (4) + reserved (4) in a UDP request;
/// sequence (8) + server receive time (8) in a UDP response.
pub const UDP_HEADER_LEN: usize = 16;
/// Smallest UDP request or response: the header must fit.
pub const MIN_UDP_MESSAGE: u32 = UDP_HEADER_LEN as u32;
/// Largest UDP request or response (IPv4 payload limit).
pub const MAX_UDP_MESSAGE: u32 = MAX_UDP_PAYLOAD;
/// Largest TCP request or response: beyond this it is a bulk transfer, not a
/// transaction.
pub const MAX_TCP_MESSAGE: u32 = 16 * 1024 * 1024;
/// Bytes of the server's receive time at the start of a TCP response.
pub const TCP_STAMP_LEN: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RrClientMessage {
    /// Open a session.
    Hello {
        version: u32,
        software: String,
        protocol: Protocol,
    },
    /// This connection carries transactions of session `cookie`.
    Join {
        cookie: u64,
        request: u32,
        response: u32,
    },
    /// The client is done; the server answers with its counts.
    Finish,
    /// The answer to a Challenge: HMAC of the nonce with the user's key
    /// (purpose [`crate::auth::purpose_rr`]).
    Auth { user: String, answer: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RrServerMessage {
    Welcome {
        version: u32,
        software: String,
        cookie: u64,
        /// UDP sessions: where to send requests (after the UDP hello).
        udp_port: Option<u16>,
        /// The server kernel's boot id: a client with the same one runs on
        /// the same kernel (same host or a network namespace of it), so both
        /// ends read one wall clock and one-way delay is meaningful.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        boot_id: Option<String>,
    },
    /// The server's view of the session.
    Done {
        /// Requests received (complete ones, for TCP).
        requests: u64,
        /// Responses sent.
        transactions: u64,
        /// TCP data connections that joined the session.
        connections: u64,
    },
    Error {
        message: String,
    },
    /// This server requires users: answer this nonce (hex) with Auth.
    Challenge {
        nonce: String,
    },
}

impl RrClientMessage {
    fn name(&self) -> &'static str {
        match self {
            RrClientMessage::Hello { .. } => "hello",
            RrClientMessage::Join { .. } => "join",
            RrClientMessage::Finish => "finish",
            RrClientMessage::Auth { .. } => "auth",
        }
    }
}

impl RrServerMessage {
    fn name(&self) -> &'static str {
        match self {
            RrServerMessage::Welcome { .. } => "welcome",
            RrServerMessage::Done { .. } => "done",
            RrServerMessage::Error { .. } => "error",
            RrServerMessage::Challenge { .. } => "challenge",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RrPhase {
    /// Waiting for the first message: Hello or Join.
    Opening,
    /// Hello seen; the server owes Welcome (or Error, or Challenge).
    Greeted,
    /// Challenge sent; the client owes Auth.
    Challenged,
    /// The session runs; the client may Finish.
    Running,
    /// Finish seen; the server owes Done.
    Finishing,
    /// A data connection: raw transactions follow, no frames.
    Data,
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RrError {
    Codec(CodecError),
    Unexpected {
        message: &'static str,
        phase: RrPhase,
    },
    Version {
        ours: u32,
        theirs: u32,
    },
}

impl fmt::Display for RrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RrError::Codec(e) => e.fmt(f),
            RrError::Unexpected { message, phase } => write!(
                f,
                "rr protocol error: '{message}' is not allowed in phase {phase:?}"
            ),
            RrError::Version { ours, theirs } => write!(
                f,
                "rr protocol version mismatch: this end speaks rr/{ours}, the peer rr/{theirs}; run the same linkperf release on both ends"
            ),
        }
    }
}

impl std::error::Error for RrError {}

impl From<CodecError> for RrError {
    fn from(e: CodecError) -> Self {
        RrError::Codec(e)
    }
}

#[derive(Debug, Clone)]
struct Machine {
    phase: RrPhase,
}

impl Machine {
    fn unexpected(&self, message: &'static str) -> RrError {
        RrError::Unexpected {
            message,
            phase: self.phase,
        }
    }

    fn client(&mut self, m: &RrClientMessage) -> Result<(), RrError> {
        use RrPhase::*;
        self.phase = match (self.phase, m) {
            (Opening, RrClientMessage::Hello { version, .. }) => {
                if *version != RR_VERSION {
                    return Err(RrError::Version {
                        ours: RR_VERSION,
                        theirs: *version,
                    });
                }
                Greeted
            }
            (Opening, RrClientMessage::Join { .. }) => Data,
            (Running, RrClientMessage::Finish) => Finishing,
            (Challenged, RrClientMessage::Auth { .. }) => Greeted,
            _ => return Err(self.unexpected(m.name())),
        };
        Ok(())
    }

    fn server(&mut self, m: &RrServerMessage) -> Result<(), RrError> {
        use RrPhase::*;
        self.phase = match (self.phase, m) {
            (Greeted, RrServerMessage::Welcome { version, .. }) => {
                if *version != RR_VERSION {
                    return Err(RrError::Version {
                        ours: RR_VERSION,
                        theirs: *version,
                    });
                }
                Running
            }
            (Finishing, RrServerMessage::Done { .. }) => Closed,
            (Greeted, RrServerMessage::Challenge { .. }) => Challenged,
            (
                Opening | Greeted | Challenged | Running | Finishing,
                RrServerMessage::Error { .. },
            ) => Closed,
            _ => return Err(self.unexpected(m.name())),
        };
        Ok(())
    }
}

/// The server's end of an rr connection (after the preamble).
#[derive(Debug)]
pub struct RrServerSession {
    machine: Machine,
    decoder: Decoder,
}

impl Default for RrServerSession {
    fn default() -> Self {
        Self::new()
    }
}

/// The largest frame an rr client sends: its messages (hello, join,
/// finish) are a few dozen bytes, so the server buffers no more.
pub const MAX_CLIENT_FRAME: usize = 4 * 1024;

impl RrServerSession {
    pub fn new() -> Self {
        let mut decoder = Decoder::new();
        decoder.set_limit(MAX_CLIENT_FRAME);
        RrServerSession {
            machine: Machine {
                phase: RrPhase::Opening,
            },
            decoder,
        }
    }

    pub fn phase(&self) -> RrPhase {
        self.machine.phase
    }

    /// Bytes to read before the next frame can complete. Read exactly this
    /// many: after a Join the connection carries raw requests, which must not
    /// be swallowed by the frame decoder.
    pub fn wanted(&self) -> usize {
        self.decoder.wanted()
    }

    /// Feeds bytes from the client; returns the complete messages, checked.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Vec<RrClientMessage>, RrError> {
        if self.machine.phase == RrPhase::Data {
            return Err(self.machine.unexpected("frame"));
        }
        self.decoder.feed(bytes);
        let mut out = Vec::new();
        while let Some(m) = self.decoder.next_message::<RrClientMessage>()? {
            self.machine.client(&m)?;
            let data = self.machine.phase == RrPhase::Data;
            out.push(m);
            if data {
                break;
            }
        }
        Ok(out)
    }

    /// Encodes a message to the client if it is legal now.
    pub fn send(&mut self, m: &RrServerMessage) -> Result<Vec<u8>, RrError> {
        self.machine.server(m)?;
        Ok(encode(m))
    }
}

/// The client's end of an rr connection (the client writes the preamble).
#[derive(Debug)]
pub struct RrClientSession {
    machine: Machine,
    decoder: Decoder,
}

impl Default for RrClientSession {
    fn default() -> Self {
        Self::new()
    }
}

impl RrClientSession {
    pub fn new() -> Self {
        RrClientSession {
            machine: Machine {
                phase: RrPhase::Opening,
            },
            decoder: Decoder::new(),
        }
    }

    pub fn phase(&self) -> RrPhase {
        self.machine.phase
    }

    pub fn wanted(&self) -> usize {
        self.decoder.wanted()
    }

    /// Feeds bytes from the server; returns the complete messages, checked.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Vec<RrServerMessage>, RrError> {
        self.decoder.feed(bytes);
        let mut out = Vec::new();
        while let Some(m) = self.decoder.next_message::<RrServerMessage>()? {
            self.machine.server(&m)?;
            out.push(m);
        }
        Ok(out)
    }

    /// Encodes a message to the server if it is legal now.
    pub fn send(&mut self, m: &RrClientMessage) -> Result<Vec<u8>, RrError> {
        self.machine.client(m)?;
        Ok(encode(m))
    }
}

/// Writes a UDP request header: sequence number and the response size wanted.
/// `buf` must hold at least [`UDP_HEADER_LEN`] bytes.
pub fn write_udp_request(buf: &mut [u8], seq: u64, response: u32) {
    buf[..8].copy_from_slice(&seq.to_be_bytes());
    buf[8..12].copy_from_slice(&response.to_be_bytes());
    buf[12..16].copy_from_slice(&[0; 4]);
}

/// Parses a UDP request: (sequence, response size). `None` if too short or
/// the response size is outside the UDP bounds.
pub fn parse_udp_request(buf: &[u8]) -> Option<(u64, u32)> {
    if buf.len() < UDP_HEADER_LEN {
        return None;
    }
    let seq = u64::from_be_bytes(buf[..8].try_into().ok()?);
    let response = u32::from_be_bytes(buf[8..12].try_into().ok()?);
    if !(MIN_UDP_MESSAGE..=MAX_UDP_MESSAGE).contains(&response) {
        return None;
    }
    Some((seq, response))
}

/// Writes a UDP response header: the request's sequence number and the
/// server's wall-clock receive time (ns since the Unix epoch).
pub fn write_udp_response(buf: &mut [u8], seq: u64, server_rx_ns: u64) {
    buf[..8].copy_from_slice(&seq.to_be_bytes());
    buf[8..16].copy_from_slice(&server_rx_ns.to_be_bytes());
}

/// Parses a UDP response: (sequence, server receive time in ns).
pub fn parse_udp_response(buf: &[u8]) -> Option<(u64, u64)> {
    if buf.len() < UDP_HEADER_LEN {
        return None;
    }
    let seq = u64::from_be_bytes(buf[..8].try_into().ok()?);
    let rx = u64::from_be_bytes(buf[8..16].try_into().ok()?);
    Some((seq, rx))
}

/// Stamps the server's receive time at the start of a TCP response (when it
/// has room for it).
pub fn write_tcp_stamp(response: &mut [u8], server_rx_ns: u64) {
    if response.len() >= TCP_STAMP_LEN {
        response[..8].copy_from_slice(&server_rx_ns.to_be_bytes());
    }
}

/// The server's receive time from a TCP response, if it is long enough to carry one.
pub fn parse_tcp_stamp(response: &[u8]) -> Option<u64> {
    if response.len() < TCP_STAMP_LEN {
        return None;
    }
    Some(u64::from_be_bytes(response[..8].try_into().ok()?))
}

/// Checks a request or response size for a protocol; the error is one line
/// naming the option and the bounds.
pub fn check_size(what: &str, size: u64, protocol: Protocol) -> Result<u32, String> {
    let (min, max) = match protocol {
        Protocol::Udp => (MIN_UDP_MESSAGE as u64, MAX_UDP_MESSAGE as u64),
        Protocol::Tcp => (1, MAX_TCP_MESSAGE as u64),
    };
    if size == 0 {
        return Err(format!(
            "{what} of 0 bytes: a transaction needs at least {min} byte{}",
            if min == 1 { "" } else { "s" }
        ));
    }
    if size < min {
        return Err(format!(
            "{what} of {size} bytes is below the {min}-byte UDP minimum (sequence number and size header)"
        ));
    }
    if size > max {
        return Err(match protocol {
            Protocol::Udp => format!(
                "{what} of {size} bytes does not fit in one UDP datagram (at most {max} bytes)"
            ),
            Protocol::Tcp => {
                format!("{what} of {size} bytes exceeds the {max}-byte limit for a TCP transaction")
            }
        });
    }
    Ok(size as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(json: &str) -> Vec<u8> {
        let mut v = (json.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(json.as_bytes());
        v
    }

    #[test]
    fn hello_is_a_length_prefixed_json_frame() {
        let mut c = RrClientSession::new();
        let bytes = c
            .send(&RrClientMessage::Hello {
                version: 1,
                software: "x".into(),
                protocol: Protocol::Udp,
            })
            .unwrap();
        assert_eq!(
            bytes,
            frame(r#"{"type":"hello","version":1,"software":"x","protocol":"udp"}"#)
        );
        assert_eq!(c.phase(), RrPhase::Greeted);
    }

    #[test]
    fn a_challenge_is_answered_before_the_welcome() {
        let mut s = RrServerSession::new();
        let mut c = RrClientSession::new();
        let hello = c
            .send(&RrClientMessage::Hello {
                version: 1,
                software: "c".into(),
                protocol: Protocol::Tcp,
            })
            .unwrap();
        s.receive(&hello).unwrap();
        let challenge = RrServerMessage::Challenge { nonce: "ab".into() };
        let bytes = s.send(&challenge).unwrap();
        assert_eq!(bytes, frame(r#"{"type":"challenge","nonce":"ab"}"#));
        assert_eq!(c.receive(&bytes).unwrap(), vec![challenge]);
        // The welcome is not legal before the answer.
        let welcome = RrServerMessage::Welcome {
            version: 1,
            software: "s".into(),
            cookie: 7,
            udp_port: None,
            boot_id: None,
        };
        assert!(s.send(&welcome).is_err());
        assert_eq!(s.phase(), RrPhase::Challenged);
        let auth = RrClientMessage::Auth {
            user: "alice".into(),
            answer: "00".into(),
        };
        let bytes = c.send(&auth).unwrap();
        assert_eq!(s.receive(&bytes).unwrap(), vec![auth.clone()]);
        assert_eq!(s.phase(), RrPhase::Greeted);
        // Only one answer per challenge.
        assert!(s.receive(&bytes).is_err());
        c.receive(&s.send(&welcome).unwrap()).unwrap();
        assert_eq!(c.phase(), RrPhase::Running);
    }

    #[test]
    fn a_whole_session_byte_by_byte() {
        let mut s = RrServerSession::new();
        let hello = frame(r#"{"type":"hello","version":1,"software":"t","protocol":"tcp"}"#);
        let mut got = Vec::new();
        for b in &hello {
            got.extend(s.receive(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(
            got,
            vec![RrClientMessage::Hello {
                version: 1,
                software: "t".into(),
                protocol: Protocol::Tcp
            }]
        );
        let welcome = s
            .send(&RrServerMessage::Welcome {
                version: 1,
                software: "s".into(),
                cookie: 7,
                udp_port: None,
                boot_id: Some("b".into()),
            })
            .unwrap();
        assert_eq!(
            welcome,
            frame(
                r#"{"type":"welcome","version":1,"software":"s","cookie":7,"udp_port":null,"boot_id":"b"}"#
            )
        );
        assert_eq!(s.phase(), RrPhase::Running);
        // A second hello is a protocol error, not a new session.
        assert!(matches!(
            s.receive(&hello),
            Err(RrError::Unexpected {
                message: "hello",
                phase: RrPhase::Running
            })
        ));

        let mut s = RrServerSession::new();
        s.receive(&hello).unwrap();
        s.send(&RrServerMessage::Welcome {
            version: 1,
            software: "s".into(),
            cookie: 7,
            udp_port: Some(4000),
            boot_id: None,
        })
        .unwrap();
        let finish = frame(r#"{"type":"finish"}"#);
        assert_eq!(s.receive(&finish).unwrap(), vec![RrClientMessage::Finish]);
        let done = s
            .send(&RrServerMessage::Done {
                requests: 10,
                transactions: 9,
                connections: 0,
            })
            .unwrap();
        assert_eq!(
            done,
            frame(r#"{"type":"done","requests":10,"transactions":9,"connections":0}"#)
        );
        assert_eq!(s.phase(), RrPhase::Closed);

        // The client's machine agrees on every step.
        let mut c = RrClientSession::new();
        c.send(&RrClientMessage::Hello {
            version: 1,
            software: "t".into(),
            protocol: Protocol::Tcp,
        })
        .unwrap();
        assert!(
            c.send(&RrClientMessage::Finish).is_err(),
            "finish before welcome"
        );
        let w = c
            .receive(&frame(
                r#"{"type":"welcome","version":1,"software":"s","cookie":7,"udp_port":null}"#,
            ))
            .unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(c.phase(), RrPhase::Running);
        c.send(&RrClientMessage::Finish).unwrap();
        c.receive(&done).unwrap();
        assert_eq!(c.phase(), RrPhase::Closed);
    }

    #[test]
    fn join_stops_framing_so_raw_requests_are_not_swallowed() {
        let mut s = RrServerSession::new();
        let join = frame(r#"{"type":"join","cookie":5,"request":1,"response":2}"#);
        let mut fed = 0;
        let mut got = Vec::new();
        while got.is_empty() {
            let n = s.wanted();
            got = s.receive(&join[fed..fed + n]).unwrap();
            fed += n;
        }
        assert_eq!(fed, join.len(), "wanted() reads exactly the frame");
        assert_eq!(
            got,
            vec![RrClientMessage::Join {
                cookie: 5,
                request: 1,
                response: 2
            }]
        );
        assert_eq!(s.phase(), RrPhase::Data);
        assert!(s.receive(b"x").is_err());
        assert!(s
            .send(&RrServerMessage::Error {
                message: "no".into()
            })
            .is_err());
    }

    #[test]
    fn version_mismatch_names_both_versions() {
        let mut s = RrServerSession::new();
        let e = s
            .receive(&frame(
                r#"{"type":"hello","version":9,"software":"t","protocol":"tcp"}"#,
            ))
            .unwrap_err();
        assert_eq!(e, RrError::Version { ours: 1, theirs: 9 });
        assert!(e.to_string().contains("rr/9"));
    }

    #[test]
    fn errors_close_from_any_framed_phase_and_garbage_is_an_error() {
        for setup in 0..2 {
            let mut c = RrClientSession::new();
            c.send(&RrClientMessage::Hello {
                version: 1,
                software: "t".into(),
                protocol: Protocol::Tcp,
            })
            .unwrap();
            if setup == 1 {
                c.receive(&frame(
                    r#"{"type":"welcome","version":1,"software":"s","cookie":1,"udp_port":null}"#,
                ))
                .unwrap();
            }
            c.receive(&frame(r#"{"type":"error","message":"busy"}"#))
                .unwrap();
            assert_eq!(c.phase(), RrPhase::Closed);
        }
        let mut s = RrServerSession::new();
        assert!(matches!(
            s.receive(&frame(r#"{"type":"bogus"}"#)),
            Err(RrError::Codec(_))
        ));
        let mut s = RrServerSession::new();
        assert!(s.receive(&frame(r#"{"type":"finish"}"#)).is_err());
    }

    #[test]
    fn udp_request_and_response_layout() {
        let mut b = [0xAAu8; 20];
        write_udp_request(&mut b, 0x0102030405060708, 64);
        assert_eq!(&b[..16], &[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 64, 0, 0, 0, 0]);
        assert_eq!(parse_udp_request(&b), Some((0x0102030405060708, 64)));
        assert_eq!(parse_udp_request(&b[..15]), None);
        write_udp_request(&mut b, 1, 8);
        assert_eq!(parse_udp_request(&b), None, "response below the header");
        write_udp_request(&mut b, 1, 70_000);
        assert_eq!(parse_udp_request(&b), None, "response beyond a datagram");

        let mut r = [0u8; 16];
        write_udp_response(&mut r, 9, 0x1122334455667788);
        assert_eq!(
            r,
            [0, 0, 0, 0, 0, 0, 0, 9, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(parse_udp_response(&r), Some((9, 0x1122334455667788)));
        assert_eq!(parse_udp_response(&r[..8]), None);
        // A UDP flow hello is never taken for a request the server would answer
        // with a huge response: its size field is out of bounds or the hello differs.
        let hello = crate::udp::write_hello(u64::MAX, 0);
        if let Some((seq, _)) = parse_udp_request(&hello) {
            assert!(seq >= 1 << 62);
        }
    }

    #[test]
    fn tcp_stamp_only_when_it_fits() {
        let mut r = [0u8; 8];
        write_tcp_stamp(&mut r, 258);
        assert_eq!(r, [0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(parse_tcp_stamp(&r), Some(258));
        let mut short = [0u8; 4];
        write_tcp_stamp(&mut short, 258);
        assert_eq!(short, [0; 4]);
        assert_eq!(parse_tcp_stamp(&short), None);
    }

    #[test]
    fn sizes_are_checked_per_protocol() {
        assert_eq!(check_size("--request", 1, Protocol::Tcp), Ok(1));
        assert!(check_size("--request", 0, Protocol::Tcp)
            .unwrap_err()
            .contains("0 bytes"));
        assert!(check_size("--request", 8, Protocol::Udp)
            .unwrap_err()
            .contains("16-byte"));
        assert!(check_size("--response", 70_000, Protocol::Udp)
            .unwrap_err()
            .contains("65507"));
        assert_eq!(check_size("--response", 65_507, Protocol::Udp), Ok(65_507));
        assert!(check_size("--request", 1 << 30, Protocol::Tcp).is_err());
    }
}
