//! Framing of an iperf3 control connection: length-prefixed JSON out, and a
//! decoder that turns the bytes in into cookies, states, error reports and
//! JSON documents, knowing from each state what follows. No I/O, and no
//! meaning given to the JSON (that is the params and results modules').

use super::cookie::{is_cookie, COOKIE_LEN};
use super::error::DecodeError;
use super::state::State;
use serde_json::Value;

/// Largest JSON document accepted from a peer (server output can be large).
pub const MAX_JSON: usize = 16 * 1024 * 1024;

/// A JSON document framed as iperf3 sends it: 4-byte big-endian length, then the text.
pub fn encode_json(value: &Value) -> Vec<u8> {
    let text = value.to_string();
    let mut out = Vec::with_capacity(text.len() + 4);
    out.extend_from_slice(&(text.len() as u32).to_be_bytes());
    out.extend_from_slice(text.as_bytes());
    out
}

/// Which end's bytes a [`Decoder`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Decodes what an iperf3 client sends: cookie, parameters, states, and
    /// its results after [`State::TestEnd`].
    Client,
    /// Decodes what an iperf3 server sends: states, error numbers after
    /// [`State::ServerError`], its results after [`State::ExchangeResults`].
    Server,
}

/// One item of a control connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Cookie([u8; COOKIE_LEN]),
    State(State),
    Json(Value),
    /// A server's error report: iperf3 error number and the OS errno.
    ServerError {
        i_errno: i32,
        os_errno: i32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Cookie,
    State,
    Json,
    ErrorNumbers,
}

/// Turns a control connection's bytes into [`Item`]s, knowing from the
/// states what follows each one.
#[derive(Debug)]
pub struct Decoder {
    peer: Peer,
    next: Next,
    buf: Vec<u8>,
    /// The longest JSON object accepted now (at most [`MAX_JSON`]).
    json_limit: usize,
}

impl Decoder {
    /// `with_cookie`: the stream starts with the client's cookie (a server
    /// that has not read it yet).
    pub fn new(peer: Peer, with_cookie: bool) -> Decoder {
        let next = match (peer, with_cookie) {
            (Peer::Client, true) => Next::Cookie,
            (Peer::Client, false) => Next::Json, // parameters come first
            (Peer::Server, _) => Next::State,
        };
        Decoder {
            peer,
            next,
            buf: Vec::new(),
            json_limit: MAX_JSON,
        }
    }

    /// Accepts JSON objects of at most `limit` bytes from now on (capped at
    /// [`MAX_JSON`]): a server reading a stranger's parameters, a few
    /// hundred bytes, need not buffer megabytes.
    pub fn set_json_limit(&mut self, limit: usize) {
        self.json_limit = limit.min(MAX_JSON);
    }

    /// How many more bytes the next item needs at least (for blocking readers).
    pub fn wanted(&self) -> usize {
        let need = match self.next {
            Next::Cookie => COOKIE_LEN,
            Next::State => 1,
            Next::ErrorNumbers => 8,
            Next::Json if self.buf.len() < 4 => 4,
            Next::Json => {
                4 + u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize
            }
        };
        need.saturating_sub(self.buf.len()).max(1)
    }

    /// What the peer's close completes, if anything: iperf3's server (3.12
    /// and later) answers a failed authorization with SERVER_ERROR and the
    /// error number alone, then closes; its own client takes the missing
    /// system errno as 0, and so does this.
    pub fn at_close(&self) -> Option<Item> {
        match (&self.next, self.buf.get(..4)) {
            (Next::ErrorNumbers, Some(n)) => Some(Item::ServerError {
                i_errno: i32::from_be_bytes([n[0], n[1], n[2], n[3]]),
                os_errno: 0,
            }),
            _ => None,
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Item>, DecodeError> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            match self.next {
                Next::Cookie => {
                    if self.buf.len() < COOKIE_LEN {
                        break;
                    }
                    let c: Vec<u8> = self.buf.drain(..COOKIE_LEN).collect();
                    if !is_cookie(&c) {
                        return Err(DecodeError::BadCookie);
                    }
                    let mut cookie = [0u8; COOKIE_LEN];
                    cookie.copy_from_slice(&c);
                    out.push(Item::Cookie(cookie));
                    self.next = Next::Json;
                }
                Next::State => {
                    let Some(&b) = self.buf.first() else { break };
                    self.buf.remove(0);
                    let state = State::from_byte(b).ok_or(DecodeError::UnknownState(b))?;
                    self.next = match (self.peer, state) {
                        (Peer::Client, State::TestEnd) => Next::Json,
                        (Peer::Server, State::ExchangeResults) => Next::Json,
                        (Peer::Server, State::ServerError) => Next::ErrorNumbers,
                        _ => Next::State,
                    };
                    if state != State::ServerError {
                        out.push(Item::State(state));
                    }
                }
                Next::ErrorNumbers => {
                    if self.buf.len() < 8 {
                        break;
                    }
                    let n: Vec<u8> = self.buf.drain(..8).collect();
                    out.push(Item::ServerError {
                        i_errno: i32::from_be_bytes([n[0], n[1], n[2], n[3]]),
                        os_errno: i32::from_be_bytes([n[4], n[5], n[6], n[7]]),
                    });
                    self.next = Next::State;
                }
                Next::Json => {
                    if self.buf.len() < 4 {
                        break;
                    }
                    let len =
                        u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                            as usize;
                    if len > self.json_limit {
                        return Err(DecodeError::TooLong(len));
                    }
                    if self.buf.len() < 4 + len {
                        break;
                    }
                    let body: Vec<u8> = self.buf.drain(..4 + len).skip(4).collect();
                    let value: Value = serde_json::from_slice(&body)
                        .map_err(|e| DecodeError::BadJson(e.to_string()))?;
                    out.push(Item::Json(value));
                    self.next = Next::State;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf3::cookie::make_cookie;
    use crate::iperf3::params::Params;
    use crate::iperf3::results::{Results, StreamResults};
    use crate::iperf3::state::{errno, server_error};
    use serde_json::json;

    #[test]
    fn server_error_is_state_then_two_big_endian_ints() {
        assert_eq!(
            server_error(errno::NO_SCTP, 0),
            [0xfe, 0, 0, 0, 18, 0, 0, 0, 0]
        );
        let mut d = Decoder::new(Peer::Server, false);
        let items = d.feed(&server_error(errno::ACCESS_DENIED, 111)).unwrap();
        assert_eq!(
            items,
            vec![Item::ServerError {
                i_errno: 121,
                os_errno: 111
            }]
        );
    }

    #[test]
    fn a_close_after_the_error_number_completes_a_server_error() {
        let mut d = Decoder::new(Peer::Server, false);
        assert!(d
            .feed(&server_error(errno::AUTH_TEST, 0)[..5])
            .unwrap()
            .is_empty());
        assert_eq!(
            d.at_close(),
            Some(Item::ServerError {
                i_errno: 142,
                os_errno: 0
            })
        );
        let mut d = Decoder::new(Peer::Server, false);
        d.feed(&server_error(errno::AUTH_TEST, 0)[..3]).unwrap();
        assert_eq!(d.at_close(), None);
    }

    #[test]
    fn json_is_length_prefixed_big_endian() {
        let bytes = encode_json(&json!({"a": 1}));
        assert_eq!(&bytes[..4], &[0, 0, 0, 7]);
        assert_eq!(&bytes[4..], br#"{"a":1}"#);
    }

    #[test]
    fn client_side_sequence_decodes_byte_by_byte() {
        // cookie, parameters, TEST_END, results, IPERF_DONE
        let cookie = make_cookie(&[7u8; 36]);
        let mut wire = cookie.to_vec();
        wire.extend(encode_json(&json!({"tcp": true, "time": 1, "parallel": 2})));
        wire.push(4);
        wire.extend(encode_json(&json!({"cpu_util_total": 1.0})));
        wire.push(16);
        let mut d = Decoder::new(Peer::Client, true);
        let mut items = Vec::new();
        for b in &wire {
            items.extend(d.feed(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(items.len(), 5, "{items:?}");
        assert_eq!(items[0], Item::Cookie(cookie));
        let Item::Json(p) = &items[1] else { panic!() };
        let p = Params::from_json(p).unwrap();
        assert_eq!((p.udp, p.time, p.parallel), (false, 1, 2));
        assert_eq!(items[2], Item::State(State::TestEnd));
        assert!(matches!(items[3], Item::Json(_)));
        assert_eq!(items[4], Item::State(State::IperfDone));
    }

    #[test]
    fn server_side_sequence_and_wanted() {
        let mut d = Decoder::new(Peer::Server, false);
        assert_eq!(d.wanted(), 1);
        let mut wire = vec![9, 10, 1, 2, 13];
        let results = Results {
            sender_has_retransmits: -1,
            streams: vec![StreamResults {
                id: 1,
                bytes: 10,
                retransmits: -1,
                ..Default::default()
            }],
            ..Default::default()
        };
        wire.extend(encode_json(&results.to_json()));
        wire.push(14);
        let items = d.feed(&wire[..5]).unwrap();
        assert_eq!(
            items,
            [
                State::ParamExchange,
                State::CreateStreams,
                State::TestStart,
                State::TestRunning,
                State::ExchangeResults
            ]
            .map(Item::State)
            .to_vec()
        );
        assert_eq!(d.wanted(), 4);
        let items = d.feed(&wire[5..9]).unwrap();
        assert!(items.is_empty());
        assert_eq!(d.wanted(), wire.len() - 1 - 9);
        let items = d.feed(&wire[9..]).unwrap();
        let Item::Json(v) = &items[0] else { panic!() };
        assert_eq!(Results::from_json(v).unwrap(), results);
        assert_eq!(items[1], Item::State(State::DisplayResults));
    }

    #[test]
    fn decoder_rejects_garbage() {
        let mut d = Decoder::new(Peer::Client, true);
        assert_eq!(d.feed(&[b'A'; 37]), Err(DecodeError::BadCookie));
        let mut d = Decoder::new(Peer::Server, false);
        assert_eq!(d.feed(&[3]), Err(DecodeError::UnknownState(3)));
        let mut d = Decoder::new(Peer::Client, false);
        assert!(matches!(
            d.feed(&[0x7f, 0, 0, 0]),
            Err(DecodeError::TooLong(_))
        ));
    }
}
