//! The control conversation before a test runs: greetings, set-up and
//! start, each waiting for the server's answer, and recognising a server
//! that speaks another protocol. Must not open data connections or run the
//! test.

use super::connect::{fail, ClientError, Credentials};
use crate::control::{Control, Incoming};
use linkperf_engine::SideEvent;
use linkperf_proto::auth;
use linkperf_proto::messages::StreamEndpoint;
use linkperf_proto::results::HostFacts;
use linkperf_proto::session::ClientSession;
use linkperf_proto::{ClientMessage, ServerMessage, TestConfig, PROTOCOL_VERSION};
use std::net::SocketAddr;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// What a client thread waits for: the server's messages and its own
/// streams' events, on one channel.
// A few events per interval: moving them by value is cheaper than boxing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Event {
    Server(Incoming<ServerMessage>),
    Side(SideEvent),
}

/// The server's answer to the set-up: what the data connections need.
pub(super) struct Ready {
    pub cookie: u64,
    pub endpoints: Vec<StreamEndpoint>,
    pub warnings: Vec<String>,
    pub data_port: Option<u16>,
    /// The server's doctor examination, when asked and answered.
    pub doctor: Option<serde_json::Value>,
}

pub(super) fn wait_message(
    events: &Receiver<Event>,
    timeout: Duration,
    what: &str,
) -> Result<ServerMessage, ClientError> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(Event::Server(Incoming::Message(ServerMessage::Error { message }))) => {
                return Err(fail(format!("server: {message}")))
            }
            Ok(Event::Server(Incoming::Message(m))) => return Ok(m),
            Ok(Event::Server(Incoming::Lost(why))) => {
                return Err(fail(format!("while waiting for {what}: {why}")))
            }
            Ok(Event::Side(_)) => {}
            Err(_) => {
                return Err(fail(format!(
                    "the server did not answer ({what}) within {} s",
                    timeout.as_secs()
                )))
            }
        }
    }
}

fn unexpected(other: ServerMessage) -> ClientError {
    fail(format!("unexpected answer from the server: {other:?}"))
}

/// Sends Hello and waits for the answer. A server that speaks another
/// protocol may answer and close before the Hello is written (a busy iperf3
/// server does): either failure then waits a moment for the reader to say
/// what the server sent.
pub(super) fn exchange_greetings(
    control: &Control<ClientSession>,
    events: &Receiver<Event>,
    server: SocketAddr,
    timeout: Duration,
) -> Result<ServerMessage, ClientError> {
    let answer = control
        .send(&ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: crate::report::SOFTWARE.into(),
        })
        .map_err(fail)
        .and_then(|()| wait_message(events, timeout, "greeting"));
    answer.map_err(|e| {
        if control.foreign_byte().is_none() {
            // The reader reports a lost connection at once; a live one stays
            // silent. A server that refused at once (--tls-required) may
            // have said why before the Hello could be sent.
            if let Err(told) = wait_message(events, Duration::from_millis(500), "greeting") {
                if told.message.starts_with("server: ") {
                    return told;
                }
            }
        }
        foreign_server(control, server).unwrap_or(e)
    })
}

/// Greets the server, answers its challenge when it sent one and there are
/// `credentials` (for `purpose`), and returns the facts of its host.
pub(super) fn welcome(
    control: &Control<ClientSession>,
    events: &Receiver<Event>,
    server: SocketAddr,
    credentials: Option<&Credentials>,
    purpose: &str,
) -> Result<HostFacts, ClientError> {
    match exchange_greetings(control, events, server, Duration::from_secs(10))? {
        ServerMessage::Welcome {
            facts, auth_nonce, ..
        } => {
            if let (Some(nonce), Some(c)) = (auth_nonce, credentials) {
                let nonce = auth::from_hex(&nonce)
                    .ok_or_else(|| fail("the server's challenge is not hexadecimal"))?;
                control
                    .send(&ClientMessage::Auth {
                        user: c.user.clone(),
                        answer: auth::answer_bound(
                            &c.key,
                            &nonce,
                            &c.user,
                            purpose,
                            control.binding(),
                        ),
                    })
                    .map_err(fail)?;
            }
            Ok(facts)
        }
        other => Err(unexpected(other)),
    }
}

/// Sends the test's configuration and waits for the server to be ready.
pub(super) fn set_up(
    control: &Control<ClientSession>,
    events: &Receiver<Event>,
    config: &TestConfig,
) -> Result<Ready, ClientError> {
    control
        .send(&ClientMessage::Setup {
            config: Box::new(config.clone()),
        })
        .map_err(fail)?;
    match wait_message(events, Duration::from_secs(15), "test set-up")? {
        ServerMessage::Ready {
            cookie,
            streams,
            warnings,
            data_port,
            doctor,
        } => Ok(Ready {
            cookie,
            endpoints: streams,
            warnings,
            data_port,
            doctor,
        }),
        other => Err(unexpected(other)),
    }
}

/// Asks the server to start and returns its start time (Unix ms).
pub(super) fn start(
    control: &Control<ClientSession>,
    events: &Receiver<Event>,
    config: &TestConfig,
) -> Result<u64, ClientError> {
    control
        .send(&ClientMessage::Start {
            start_at_unix_ms: config.start_at_unix_ms,
        })
        .map_err(fail)?;
    match wait_message(events, Duration::from_secs(15), "start")? {
        ServerMessage::Started { start_unix_ms } => Ok(start_unix_ms),
        other => Err(unexpected(other)),
    }
}

/// The one line for a server that answered the greeting in another
/// protocol, above all a stock iperf3 server (it answers a linkperf greeting
/// at once: see `linkperf_proto::iperf3::server_first_reply`).
fn foreign_server(control: &Control<ClientSession>, server: SocketAddr) -> Option<ClientError> {
    use linkperf_proto::iperf3::{server_first_reply, State};
    let byte = control.foreign_byte()?;
    Some(fail(match server_first_reply(byte) {
        Some(State::AccessDenied) => format!(
            "{server} is an iperf3 server, busy with another test (it answered iperf3's ACCESS_DENIED); add --iperf3 and retry when it is free"
        ),
        Some(state) => format!(
            "{server} is an iperf3 server (it answered iperf3's {} state); add --iperf3 to test against it",
            state.name()
        ),
        None => format!(
            "{server} does not speak linkperf's protocol (it answered byte 0x{byte:02x}); is it a linkperf server?"
        ),
    }))
}
