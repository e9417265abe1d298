//! Harnesses of the linkperf control connection: the frame codec alone, and
//! the session state machine with both ends driven in lockstep.

use super::checks::{check_valid_config, declared_len, Input};
use crate::codec::{encode, CodecError, Decoder, MAX_FRAME};
use crate::config::{Direction, Protocol, TestConfig};
use crate::messages::{ClientMessage, ServerMessage, StreamEndpoint};
use crate::results::HostFacts;
use crate::session::{ClientSession, Phase, ServerSession};
use crate::PROTOCOL_VERSION;
use serde::{de::DeserializeOwned, Serialize};
use std::fmt::Debug;

/// The frame limit a server sets before the hello (`server::FIRST_FRAME_LIMIT`).
const FIRST_FRAME_LIMIT: usize = 4 * 1024;

/// Arbitrary bytes through [`Decoder`], as client or server messages, under
/// one of several limits. First byte: bit 0 chooses exact reads (what the
/// blocking server does: read [`Decoder::wanted`] bytes, then decode) or
/// chunks of any size; bits 1-2 the limit; bit 3 the message type.
pub fn control_codec(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.byte();
    let limit = [MAX_FRAME, FIRST_FRAME_LIMIT, 64, 0][usize::from((mode >> 1) & 3)];
    match (mode & 1 == 0, (mode >> 3) & 1 == 0) {
        (true, true) => exact_reads::<ClientMessage>(input, limit),
        (true, false) => exact_reads::<ServerMessage>(input, limit),
        (false, true) => chunked_reads::<ClientMessage>(input, limit),
        (false, false) => chunked_reads::<ServerMessage>(input, limit),
    }
}

/// Reads exactly what the decoder wants, so each message consumes exactly
/// the bytes fed since the previous one: that frame's size is checked
/// against the limit and its own length prefix.
fn exact_reads<T: DeserializeOwned + Serialize + Debug + Checked>(mut input: Input, limit: usize) {
    let mut d = Decoder::new();
    d.set_limit(limit);
    let mut frame = Vec::new();
    loop {
        let want = d.wanted();
        assert!(want >= 1, "wanted() must ask for at least a byte");
        let bytes = input.take(want);
        if bytes.is_empty() {
            return;
        }
        d.feed(bytes);
        frame.extend_from_slice(bytes);
        match d.next_message::<T>() {
            Ok(Some(m)) => {
                let len = declared_len(&frame).expect("a message has a length prefix");
                assert_eq!(frame.len(), 4 + len, "a message is its whole frame");
                assert!(
                    len <= limit,
                    "decoded a {len}-byte frame over the {limit}-byte limit"
                );
                check_round_trip(&m);
                m.check();
                frame.clear();
            }
            Ok(None) => {
                if let Some(len) = declared_len(&frame) {
                    assert!(frame.len() < 4 + len, "a whole frame was not decoded");
                    assert!(len <= limit, "waits for a frame over the limit");
                }
            }
            Err(e) => return check_error(&e, limit, &frame),
        }
    }
}

/// Arbitrary chunk sizes, several messages per chunk: nothing may panic.
fn chunked_reads<T: DeserializeOwned + Serialize + Debug + Checked>(
    mut input: Input,
    limit: usize,
) {
    let mut d = Decoder::new();
    d.set_limit(limit);
    while !input.is_empty() {
        d.feed(input.chunk());
        loop {
            match d.next_message::<T>() {
                Ok(Some(m)) => {
                    check_round_trip(&m);
                    m.check();
                }
                Ok(None) => break,
                Err(CodecError::TooLarge(n, l)) => {
                    assert!(
                        n > l && l == limit,
                        "TooLarge({n}, {l}) under limit {limit}"
                    );
                    return;
                }
                Err(_) => return,
            }
        }
    }
}

/// An error names what the bytes fed since the last message show.
fn check_error(e: &CodecError, limit: usize, frame: &[u8]) {
    match *e {
        CodecError::Foreign(b) => assert!(b != 0 && frame.first() == Some(&b), "{e}"),
        CodecError::TooLarge(n, l) => {
            assert_eq!(l, limit, "{e}");
            assert!(n > l && declared_len(frame) == Some(n), "{e}");
        }
        CodecError::Malformed(_) => {
            let len = declared_len(frame).expect("malformed before a length");
            assert_eq!(frame.len(), 4 + len, "malformed before the whole frame");
        }
    }
}

/// A message that was decoded encodes again into a frame that decodes.
fn check_round_trip<T: DeserializeOwned + Serialize + Debug>(m: &T) {
    let bytes = encode(m);
    if bytes.len() > 4 + MAX_FRAME {
        return; // re-encoding may lengthen numbers ("1e2" is "100.0")
    }
    let mut d = Decoder::new();
    d.feed(&bytes);
    let back = d.next_message::<T>();
    assert!(matches!(back, Ok(Some(_))), "{m:?} re-encoded: {back:?}");
}

/// Checks a message's contents beyond the framing.
trait Checked {
    fn check(&self);
}

impl Checked for ClientMessage {
    fn check(&self) {
        if let ClientMessage::Setup { config } | ClientMessage::ThirdParty { config, .. } = self {
            check_valid_config(config);
        }
    }
}

impl Checked for ServerMessage {
    fn check(&self) {}
}

/// A client and a server session driven by a program of steps: each end
/// sends a message of a menu (the other must accept exactly what the sender
/// accepted, and both must then be in the same phase) or receives arbitrary
/// bytes (after which they no longer agree, and only panics are looked for).
pub fn session(data: &[u8]) {
    let mut input = Input::new(data);
    let mut c = ClientSession::new();
    let mut s = ServerSession::new().with_first_frame_limit(FIRST_FRAME_LIMIT);
    let mut lockstep = true;
    while !input.is_empty() {
        match input.byte() % 4 {
            0 => {
                let m = client_menu(&mut input);
                let split = input.byte();
                let before = c.phase();
                let Ok(bytes) = c.send(&m) else {
                    assert_eq!(c.phase(), before, "a refused send changed the phase");
                    continue;
                };
                assert!(
                    before != Phase::Closed || matches!(m, ClientMessage::Cancel { .. }),
                    "the client sent {m:?} after the session closed"
                );
                m.check();
                if lockstep {
                    let got = deliver(&bytes, split, |b| s.receive(b));
                    assert_eq!(got, Some(vec![m]), "the server refused a legal message");
                    assert_eq!(s.phase(), c.phase(), "the ends disagree");
                }
            }
            1 => {
                let m = server_menu(&mut input);
                let split = input.byte();
                let before = s.phase();
                let Ok(bytes) = s.send(&m) else {
                    assert_eq!(s.phase(), before, "a refused send changed the phase");
                    continue;
                };
                assert!(
                    before != Phase::Closed || matches!(m, ServerMessage::Error { .. }),
                    "the server sent {m:?} after the session closed"
                );
                if lockstep {
                    let got = deliver(&bytes, split, |b| c.receive(b));
                    assert_eq!(got, Some(vec![m]), "the client refused a legal message");
                    assert_eq!(s.phase(), c.phase(), "the ends disagree");
                }
            }
            2 => {
                lockstep = false;
                if let Ok(ms) = s.receive(input.chunk()) {
                    ms.iter().for_each(Checked::check);
                }
            }
            _ => {
                lockstep = false;
                let _ = c.receive(input.chunk());
            }
        }
    }
}

/// Feeds `bytes` to a receiver in two parts; `None` if it refused them.
fn deliver<M, E>(
    bytes: &[u8],
    split: u8,
    mut receive: impl FnMut(&[u8]) -> Result<Vec<M>, E>,
) -> Option<Vec<M>> {
    let at = usize::from(split) % (bytes.len() + 1);
    let mut got = receive(&bytes[..at]).ok()?;
    got.extend(receive(&bytes[at..]).ok()?);
    Some(got)
}

fn version(input: &mut Input) -> u32 {
    match input.byte() {
        0 => input.u32(),
        _ => PROTOCOL_VERSION,
    }
}

fn config(input: &mut Input) -> TestConfig {
    let b = input.byte();
    let mut config = TestConfig {
        protocol: [Protocol::Tcp, Protocol::Udp][usize::from(b & 1)],
        direction: [
            Direction::Forward,
            Direction::Reverse,
            Direction::Bidir,
            Direction::Bidir,
        ][usize::from((b >> 1) & 3)],
        parallel: u32::from(input.byte() % 8),
        ..TestConfig::default()
    };
    if b & 8 != 0 {
        config.bytes = Some(u64::from(input.u32()));
    }
    if b & 16 != 0 {
        config.length = 1400;
    }
    config
}

fn client_menu(input: &mut Input) -> ClientMessage {
    match input.byte() % 8 {
        0 => ClientMessage::Hello {
            version: version(input),
            software: "fuzz".into(),
        },
        1 => ClientMessage::Setup {
            config: Box::new(config(input)),
        },
        2 => ClientMessage::ThirdParty {
            target: "127.0.0.1".into(),
            port: 5211,
            config: Box::new(config(input)),
        },
        3 => ClientMessage::Start {
            start_at_unix_ms: Some(u64::from(input.u32())).filter(|&t| t != 0),
        },
        4 => ClientMessage::SendersDone {
            packets: vec![(0, u64::from(input.u32()))],
        },
        5 => ClientMessage::Finished {
            result: Box::default(),
        },
        6 => ClientMessage::ThirdPartyRr {
            target: "127.0.0.1".into(),
            port: 5211,
            request: Box::new(crate::messages::RrRequest {
                duration_s: f64::from(input.byte()) / 10.0,
                burst: u32::from(input.byte()),
                ..Default::default()
            }),
        },
        7 => ClientMessage::Auth {
            user: "fuzz".into(),
            answer: "00".repeat(32),
        },
        _ => ClientMessage::Cancel {
            reason: "fuzz".into(),
        },
    }
}

fn server_menu(input: &mut Input) -> ServerMessage {
    match input.byte() % 9 {
        0 => ServerMessage::Welcome {
            version: version(input),
            software: "fuzz".into(),
            facts: HostFacts::default(),
            auth_nonce: None,
        },
        1 => ServerMessage::Error {
            message: "fuzz".into(),
        },
        2 => ServerMessage::Ready {
            cookie: u64::from(input.u32()),
            streams: vec![StreamEndpoint {
                id: 0,
                udp_port: None,
            }],
            warnings: vec![],
            data_port: Some(5212),
            doctor: None,
        },
        3 => ServerMessage::Started {
            start_unix_ms: u64::from(input.u32()),
        },
        4 => ServerMessage::Interval { streams: vec![] },
        5 => ServerMessage::SendersDone { packets: vec![] },
        6 => ServerMessage::Finished {
            result: Box::default(),
        },
        7 => ServerMessage::RelayInterval {
            interval: serde_json::json!({"fuzz": 1}),
        },
        _ => ServerMessage::RelayReport {
            report: serde_json::json!({}),
        },
    }
}
