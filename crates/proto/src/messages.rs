//! Control messages, serialised as JSON objects tagged by `type`.

use crate::config::{Protocol, TestConfig};
use crate::results::{HostFacts, SideResult, StreamInterval};
use serde::{Deserialize, Serialize};

/// The largest doctor examination a server sends in `Ready` (JSON bytes): a
/// host with many interfaces sends its first findings and says how many it left
/// out, so one answer stays a small part of a control frame.
pub const MAX_DOCTOR_BYTES: usize = 64 * 1024;

/// Where the client must send a stream's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEndpoint {
    pub id: u32,
    /// For UDP: the server's port for this stream. TCP streams connect to the
    /// control port, or to `Ready::data_port`, with a [`crate::DataHello`].
    pub udp_port: Option<u16>,
}

/// A `linkperf rr` run as a third party orders it: what `linkperf rr`'s
/// options say, minus what only makes sense on the ordering host (the local
/// address, the address family, a bulk load). The agent checks it as its own
/// command line would be checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RrRequest {
    pub protocol: Protocol,
    /// Request and response sizes in bytes (the agent's default when absent).
    pub request: Option<u64>,
    pub response: Option<u64>,
    /// Transactions per second as written (`1000/s`); absent: back to back.
    pub rate: Option<String>,
    pub burst: u32,
    pub duration_s: f64,
    pub count: Option<u64>,
    pub interval_s: f64,
    pub timeout_s: Option<f64>,
    /// Connection set-up per transaction (`--connect`).
    pub connect: bool,
    /// First packet after idle gaps of `idle_s` (`--cold`).
    pub cold: bool,
    pub idle_s: Option<f64>,
    /// RTT against size (`--sizes`), as written.
    pub sizes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    Hello {
        version: u32,
        software: String,
    },
    /// The answer to the server's `auth_nonce` (see [`crate::auth`]): sent
    /// once, after the Welcome and before Setup or ThirdParty.
    Auth {
        user: String,
        /// HMAC-SHA256 of the nonce and the request, hex.
        answer: String,
    },
    /// Run a test with this server. (Boxed, as the other large payloads
    /// are: every queue of control messages has slots the size of the
    /// largest variant.)
    Setup {
        config: Box<TestConfig>,
    },
    /// Ask this server to run `config` as a client towards `target`
    /// (nuttcp's third-party mode); refused unless the server allows it.
    ThirdParty {
        target: String,
        port: u16,
        config: Box<TestConfig>,
    },
    /// Ask this server to run a `linkperf rr` measurement towards `target`
    /// and report it (third-party mode for latency; same checks as
    /// [`ClientMessage::ThirdParty`]).
    ThirdPartyRr {
        target: String,
        port: u16,
        request: Box<RrRequest>,
    },
    /// All data connections are open: start (now, or at the agreed time).
    Start {
        start_at_unix_ms: Option<u64>,
    },
    /// The client's senders have finished; `packets` per stream for UDP.
    SendersDone {
        packets: Vec<(u32, u64)>,
    },
    /// The client's own measurements, once its streams are done.
    Finished {
        result: Box<SideResult>,
    },
    /// Stop now (Ctrl-C); the server stops its streams and reports what it has.
    Cancel {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    Welcome {
        version: u32,
        software: String,
        facts: HostFacts,
        /// A fresh random challenge (hex) when the server knows users: a
        /// client with a key answers it with [`ClientMessage::Auth`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth_nonce: Option<String>,
    },
    /// The server refuses or aborts; `message` is one line for the user.
    Error {
        message: String,
    },
    /// Setup accepted; the client may open the data connections.
    Ready {
        cookie: u64,
        streams: Vec<StreamEndpoint>,
        warnings: Vec<String>,
        /// The port the TCP data connections go to when it is not the control
        /// port: a test that sets options negotiated in the handshake (socket
        /// buffers, MSS) gets a listener of its own with those options set
        /// before `listen`, so the accepted connections carry them from the SYN.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data_port: Option<u16>,
        /// The server's host examined against `TestConfig::doctor`'s path
        /// (`linkperf doctor -J`'s document), when the client asked; at most
        /// [`MAX_DOCTOR_BYTES`] of JSON. Absent from older servers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        doctor: Option<serde_json::Value>,
    },
    /// The server's streams have started.
    Started {
        start_unix_ms: u64,
    },
    /// The server's view of one interval.
    Interval {
        streams: Vec<StreamInterval>,
    },
    SendersDone {
        packets: Vec<(u32, u64)>,
    },
    Finished {
        result: Box<SideResult>,
    },
    /// Third-party mode: one interval line of the test the server runs.
    RelayInterval {
        interval: serde_json::Value,
    },
    /// Third-party mode: the full report of the test the server ran.
    RelayReport {
        report: serde_json::Value,
    },
}
