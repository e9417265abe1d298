//! The legal order of control messages, as a state machine without I/O.
//!
//! Both ends run the same machine: the client applies its own messages when it
//! sends them and the server's when it receives them, the server the other
//! way round. A message out of order is a [`ProtocolError`], so a confused or
//! hostile peer is detected at the first wrong step instead of corrupting a test.
//!
//! ```text
//! Greeting --Hello/Welcome--> Negotiating --Setup/Ready--> Armed --Start/Started--> Running
//!                                  \--ThirdParty--> Relaying
//! Negotiating: one Auth (the answer to the Welcome's nonce) may come first
//! Running: Interval*, SendersDone, Finished (each side once) --> Closed
//! any state: Error or Cancel --> Closed (Cancel keeps Running until Finished)
//! ```

use crate::codec::{encode, CodecError, Decoder};
use crate::messages::{ClientMessage, ServerMessage};
use crate::PROTOCOL_VERSION;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for Hello (server) or Welcome (client).
    Greeting,
    /// Greeted; waiting for Setup or ThirdParty.
    Negotiating,
    /// Setup sent, then Ready received: data connections are being opened.
    Armed,
    Running,
    /// The server runs a third-party test and relays it.
    Relaying,
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    Codec(CodecError),
    /// A message that is not legal now.
    Unexpected {
        message: &'static str,
        phase: Phase,
    },
    /// The peer speaks another protocol version.
    Version {
        ours: u32,
        theirs: u32,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Codec(e) => e.fmt(f),
            ProtocolError::Unexpected { message, phase } => {
                write!(f, "protocol error: '{message}' is not allowed in phase {phase:?}")
            }
            ProtocolError::Version { ours, theirs } => write!(
                f,
                "protocol version mismatch: this end speaks linkperf/{ours}, the peer linkperf/{theirs}; run the same linkperf release on both ends"
            ),
        }
    }
}

impl std::error::Error for ProtocolError {}

impl From<CodecError> for ProtocolError {
    fn from(e: CodecError) -> Self {
        ProtocolError::Codec(e)
    }
}

/// Shared transition logic.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct Machine {
    phase: Phase,
    client_finished: bool,
    server_finished: bool,
    /// The client has sent its Auth (once per session).
    authenticated: bool,
}

impl Machine {
    fn new() -> Self {
        Machine {
            phase: Phase::Greeting,
            client_finished: false,
            server_finished: false,
            authenticated: false,
        }
    }

    fn unexpected(&self, message: &'static str) -> ProtocolError {
        ProtocolError::Unexpected {
            message,
            phase: self.phase,
        }
    }

    fn close_if_done(&mut self) {
        if self.client_finished && self.server_finished {
            self.phase = Phase::Closed;
        }
    }

    fn client(&mut self, m: &ClientMessage) -> Result<(), ProtocolError> {
        use ClientMessage::*;
        use Phase::*;
        self.phase = match (self.phase, m) {
            (Greeting, Hello { version, .. }) => {
                if *version != PROTOCOL_VERSION {
                    return Err(ProtocolError::Version {
                        ours: PROTOCOL_VERSION,
                        theirs: *version,
                    });
                }
                Greeting
            }
            (Negotiating, Auth { .. }) if !self.authenticated => {
                self.authenticated = true;
                Negotiating
            }
            (Negotiating, Setup { .. }) => Negotiating,
            (Negotiating, ThirdParty { .. } | ThirdPartyRr { .. }) => Relaying,
            (Armed, Start { .. }) => Armed,
            (Running, SendersDone { .. }) => Running,
            (Running, Finished { .. }) if !self.client_finished => {
                self.client_finished = true;
                self.close_if_done();
                return Ok(());
            }
            (Running | Relaying | Armed, Cancel { .. }) => self.phase,
            (_, Cancel { .. }) => Closed,
            (_, m) => return Err(self.unexpected(client_name(m))),
        };
        Ok(())
    }

    fn server(&mut self, m: &ServerMessage) -> Result<(), ProtocolError> {
        use Phase::*;
        use ServerMessage::*;
        self.phase = match (self.phase, m) {
            (_, Error { .. }) => Closed,
            (Greeting, Welcome { version, .. }) => {
                if *version != PROTOCOL_VERSION {
                    return Err(ProtocolError::Version {
                        ours: PROTOCOL_VERSION,
                        theirs: *version,
                    });
                }
                Negotiating
            }
            (Negotiating, Ready { .. }) => Armed,
            (Armed, Started { .. }) => Running,
            (Running, Interval { .. } | SendersDone { .. }) => Running,
            (Running, Finished { .. }) if !self.server_finished => {
                self.server_finished = true;
                self.close_if_done();
                return Ok(());
            }
            (Relaying, RelayInterval { .. }) => Relaying,
            (Relaying, RelayReport { .. }) => Closed,
            (_, m) => return Err(self.unexpected(server_name(m))),
        };
        Ok(())
    }
}

fn client_name(m: &ClientMessage) -> &'static str {
    match m {
        ClientMessage::Hello { .. } => "hello",
        ClientMessage::Auth { .. } => "auth",
        ClientMessage::Setup { .. } => "setup",
        ClientMessage::ThirdParty { .. } => "third_party",
        ClientMessage::ThirdPartyRr { .. } => "third_party_rr",
        ClientMessage::Start { .. } => "start",
        ClientMessage::SendersDone { .. } => "senders_done",
        ClientMessage::Finished { .. } => "finished",
        ClientMessage::Cancel { .. } => "cancel",
    }
}

fn server_name(m: &ServerMessage) -> &'static str {
    match m {
        ServerMessage::Welcome { .. } => "welcome",
        ServerMessage::Error { .. } => "error",
        ServerMessage::Ready { .. } => "ready",
        ServerMessage::Started { .. } => "started",
        ServerMessage::Interval { .. } => "interval",
        ServerMessage::SendersDone { .. } => "senders_done",
        ServerMessage::Finished { .. } => "finished",
        ServerMessage::RelayInterval { .. } => "relay_interval",
        ServerMessage::RelayReport { .. } => "relay_report",
    }
}

/// A message type the state machine knows how to apply.
#[doc(hidden)]
pub trait Message: serde::Serialize + serde::de::DeserializeOwned {
    fn apply(&self, machine: &mut Machine) -> Result<(), ProtocolError>;
}

impl Message for ClientMessage {
    fn apply(&self, machine: &mut Machine) -> Result<(), ProtocolError> {
        machine.client(self)
    }
}

impl Message for ServerMessage {
    fn apply(&self, machine: &mut Machine) -> Result<(), ProtocolError> {
        machine.server(self)
    }
}

/// One end of a control connection: receives `In`, sends `Out`.
#[derive(Debug)]
pub struct Session<In, Out> {
    decoder: Decoder,
    machine: Machine,
    /// The decoder's limit is lowered until the first message.
    first_frame_limited: bool,
    _messages: std::marker::PhantomData<fn(In) -> Out>,
}

/// The server's end: receives client messages, sends server messages.
pub type ServerSession = Session<ClientMessage, ServerMessage>;
/// The client's end.
pub type ClientSession = Session<ServerMessage, ClientMessage>;

impl<In: Message, Out: Message> Default for Session<In, Out> {
    fn default() -> Self {
        Self::new()
    }
}

impl<In: Message, Out: Message> Session<In, Out> {
    pub fn new() -> Self {
        Session {
            decoder: Decoder::new(),
            machine: Machine::new(),
            first_frame_limited: false,
            _messages: std::marker::PhantomData,
        }
    }

    /// Accepts only frames of up to `limit` bytes until the first message
    /// arrives, then up to [`crate::codec::MAX_FRAME`] (servers: see
    /// [`Decoder::set_limit`]).
    pub fn with_first_frame_limit(mut self, limit: usize) -> Self {
        self.decoder.set_limit(limit);
        self.first_frame_limited = true;
        self
    }

    pub fn phase(&self) -> Phase {
        self.machine.phase
    }

    /// Bytes the next read should ask for.
    pub fn wanted(&self) -> usize {
        self.decoder.wanted()
    }

    /// Feeds bytes from the peer; returns the messages they complete.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Vec<In>, ProtocolError> {
        self.decoder.feed(bytes);
        let mut out = Vec::new();
        while let Some(m) = self.decoder.next_message::<In>()? {
            m.apply(&mut self.machine)?;
            if std::mem::take(&mut self.first_frame_limited) {
                self.decoder.set_limit(crate::codec::MAX_FRAME);
            }
            out.push(m);
        }
        Ok(out)
    }

    /// Checks that `m` may be sent now and returns its bytes.
    pub fn send(&mut self, m: &Out) -> Result<Vec<u8>, ProtocolError> {
        m.apply(&mut self.machine)?;
        Ok(encode(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::HostFacts;

    fn hello() -> ClientMessage {
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: "test".into(),
        }
    }
    fn welcome() -> ServerMessage {
        ServerMessage::Welcome {
            version: PROTOCOL_VERSION,
            software: "t".into(),
            facts: HostFacts::default(),
            auth_nonce: None,
        }
    }

    /// Drives both ends through a whole test, each feeding the other's bytes.
    #[test]
    fn a_whole_test_in_lockstep() {
        let mut c = ClientSession::new();
        let mut s = ServerSession::new();
        let to_server = |c: &mut ClientSession, s: &mut ServerSession, m: ClientMessage| {
            let bytes = c.send(&m).unwrap();
            assert_eq!(s.receive(&bytes).unwrap(), vec![m]);
        };
        let to_client = |s: &mut ServerSession, c: &mut ClientSession, m: ServerMessage| {
            let bytes = s.send(&m).unwrap();
            assert_eq!(c.receive(&bytes).unwrap(), vec![m]);
        };
        to_server(&mut c, &mut s, hello());
        to_client(&mut s, &mut c, welcome());
        assert_eq!(c.phase(), Phase::Negotiating);
        to_server(
            &mut c,
            &mut s,
            ClientMessage::Setup {
                config: Box::default(),
            },
        );
        to_client(
            &mut s,
            &mut c,
            ServerMessage::Ready {
                cookie: 1,
                streams: vec![],
                warnings: vec![],
                data_port: None,
                doctor: None,
            },
        );
        to_server(
            &mut c,
            &mut s,
            ClientMessage::Start {
                start_at_unix_ms: None,
            },
        );
        to_client(&mut s, &mut c, ServerMessage::Started { start_unix_ms: 0 });
        to_client(&mut s, &mut c, ServerMessage::Interval { streams: vec![] });
        to_server(
            &mut c,
            &mut s,
            ClientMessage::SendersDone { packets: vec![] },
        );
        to_client(
            &mut s,
            &mut c,
            ServerMessage::Finished {
                result: Box::default(),
            },
        );
        assert_eq!(s.phase(), Phase::Running);
        to_server(
            &mut c,
            &mut s,
            ClientMessage::Finished {
                result: Box::default(),
            },
        );
        assert_eq!(s.phase(), Phase::Closed);
        assert_eq!(c.phase(), Phase::Closed);
    }

    #[test]
    fn out_of_order_messages_are_refused() {
        let mut s = ServerSession::new();
        let start = encode(&ClientMessage::Start {
            start_at_unix_ms: None,
        });
        let err = s.receive(&start).unwrap_err();
        assert!(err.to_string().contains("'start' is not allowed"), "{err}");

        let mut s = ServerSession::new();
        s.receive(&encode(&hello())).unwrap();
        // The server must greet before it accepts a test.
        assert!(s
            .send(&ServerMessage::Ready {
                cookie: 1,
                streams: vec![],
                warnings: vec![],
                data_port: None,
                doctor: None,
            })
            .is_err());
    }

    #[test]
    fn a_second_finished_is_refused() {
        let mut c = ClientSession::new();
        c.receive(&encode(&welcome())).unwrap();
        c.send(&ClientMessage::Setup {
            config: Box::default(),
        })
        .unwrap();
        c.receive(&encode(&ServerMessage::Ready {
            cookie: 1,
            streams: vec![],
            warnings: vec![],
            data_port: Some(40_000),
            doctor: None,
        }))
        .unwrap();
        c.receive(&encode(&ServerMessage::Started { start_unix_ms: 0 }))
            .unwrap();
        let fin = ServerMessage::Finished {
            result: Box::default(),
        };
        c.receive(&encode(&fin)).unwrap();
        assert!(c.receive(&encode(&fin)).is_err());
    }

    #[test]
    fn other_versions_are_named_in_the_error() {
        let mut s = ServerSession::new();
        let bytes = encode(&ClientMessage::Hello {
            version: 7,
            software: "future".into(),
        });
        let err = s.receive(&bytes).unwrap_err();
        assert_eq!(
            err,
            ProtocolError::Version {
                ours: PROTOCOL_VERSION,
                theirs: 7
            }
        );
        assert!(err.to_string().contains("linkperf/7"));
    }

    #[test]
    fn errors_close_from_any_phase_and_cancel_is_always_legal() {
        let mut c = ClientSession::new();
        c.receive(&encode(&ServerMessage::Error {
            message: "busy".into(),
        }))
        .unwrap();
        assert_eq!(c.phase(), Phase::Closed);
        let mut c = ClientSession::new();
        c.send(&ClientMessage::Cancel {
            reason: "ctrl-c".into(),
        })
        .unwrap();
        assert_eq!(c.phase(), Phase::Closed);
    }

    #[test]
    fn third_party_relays_then_closes() {
        let mut s = ServerSession::new();
        s.receive(&encode(&hello())).unwrap();
        s.send(&welcome()).unwrap();
        let tp = ClientMessage::ThirdParty {
            target: "b".into(),
            port: 5211,
            config: Box::default(),
        };
        s.receive(&encode(&tp)).unwrap();
        assert_eq!(s.phase(), Phase::Relaying);
        s.send(&ServerMessage::RelayInterval {
            interval: serde_json::json!({}),
        })
        .unwrap();
        s.send(&ServerMessage::RelayReport {
            report: serde_json::json!({}),
        })
        .unwrap();
        assert_eq!(s.phase(), Phase::Closed);
    }

    #[test]
    fn random_bytes_never_panic() {
        // A cheap deterministic fuzz: xorshift bytes fed in random chunk sizes.
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..2000 {
            let mut s = ServerSession::new();
            let mut bytes = Vec::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 64) as usize;
            for i in 0..len {
                bytes.push((x >> (i % 8 * 8)) as u8);
            }
            let _ = s.receive(&bytes);
        }
    }
}
