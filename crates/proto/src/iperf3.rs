//! iperf3's wire protocol, without any I/O, so a linkperf server can serve
//! stock iperf3 clients and a linkperf client can test against iperf3 servers.
//!
//! The facts come from iperf3's public source (3.x): a control connection
//! opens with a 37-byte cookie; the server then drives the test with one-byte
//! states; parameters and results travel as JSON prefixed by a 4-byte
//! big-endian length; every data connection repeats the cookie (TCP) or sends
//! a 4-byte "connect" datagram answered by a 4-byte reply (UDP); UDP payloads
//! start with a big-endian header (seconds, microseconds, packet count of 32
//! or 64 bits, counted from 1). Stream ids are 1, 3, 4, 5, ... in creation order.

use serde_json::{json, Map, Value};

/// Cookie length on the wire: 36 characters of [a-z2-7] and a NUL.
pub const COOKIE_LEN: usize = 37;
const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// iperf3's default port.
pub const DEFAULT_PORT: u16 = 5201;

/// Largest JSON document accepted from a peer (server output can be large).
pub const MAX_JSON: usize = 16 * 1024 * 1024;

/// A 37-byte cookie built from 36 random bytes.
pub fn make_cookie(random: &[u8; 36]) -> [u8; COOKIE_LEN] {
    let mut out = [0u8; COOKIE_LEN];
    for (o, r) in out.iter_mut().zip(random) {
        *o = COOKIE_ALPHABET[(*r % 32) as usize];
    }
    out
}

/// True when `bytes` is a well-formed iperf3 cookie.
pub fn is_cookie(bytes: &[u8]) -> bool {
    bytes.len() == COOKIE_LEN
        && bytes[36] == 0
        && bytes[..36].iter().all(|b| COOKIE_ALPHABET.contains(b))
}

/// True when the first bytes of a connection could start an iperf3 cookie.
pub fn could_be_cookie(prefix: &[u8]) -> bool {
    prefix.iter().take(36).all(|b| COOKIE_ALPHABET.contains(b))
}

/// Control states (one signed byte on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    /// The server is busy (or refuses this client).
    AccessDenied,
    /// Followed by two big-endian i32: iperf3's error number and errno.
    ServerError,
}

impl State {
    pub fn byte(self) -> u8 {
        let v: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        v as u8
    }

    /// iperf3's own name for the state, as its source and debug output say it.
    pub fn name(self) -> &'static str {
        match self {
            State::TestStart => "TEST_START",
            State::TestRunning => "TEST_RUNNING",
            State::TestEnd => "TEST_END",
            State::ParamExchange => "PARAM_EXCHANGE",
            State::CreateStreams => "CREATE_STREAMS",
            State::ServerTerminate => "SERVER_TERMINATE",
            State::ClientTerminate => "CLIENT_TERMINATE",
            State::ExchangeResults => "EXCHANGE_RESULTS",
            State::DisplayResults => "DISPLAY_RESULTS",
            State::IperfStart => "IPERF_START",
            State::IperfDone => "IPERF_DONE",
            State::AccessDenied => "ACCESS_DENIED",
            State::ServerError => "SERVER_ERROR",
        }
    }

    pub fn from_byte(b: u8) -> Option<State> {
        Some(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return None,
        })
    }
}

/// What a stock iperf3 server sends first to a client that is not an iperf3
/// client (a linkperf client's greeting): it takes the first 37 bytes for a
/// cookie and asks for the parameters (PARAM_EXCHANGE), or, busy with another
/// test, answers ACCESS_DENIED and closes; SERVER_ERROR when it fails. None
/// for a byte no iperf3 server sends first.
pub fn server_first_reply(byte: u8) -> Option<State> {
    match State::from_byte(byte)? {
        s @ (State::ParamExchange | State::AccessDenied | State::ServerError) => Some(s),
        _ => None,
    }
}

/// iperf3 error numbers (`i_errno`) a server sends after [`State::ServerError`];
/// the iperf3 client prints its own text for each.
pub mod errno {
    pub const BLOCKSIZE: i32 = 7;
    pub const MSS: i32 = 10;
    pub const UNIMPLEMENTED: i32 = 13;
    pub const NO_SCTP: i32 = 18;
    pub const UDP_BLOCKSIZE: i32 = 20;
    pub const BAD_TOS: i32 = 21;
    pub const NUM_STREAMS: i32 = 6;
    pub const RECV_PARAMS: i32 = 114;
    pub const ACCESS_DENIED: i32 = 121;
    pub const SET_CONGESTION: i32 = 134;
    pub const AUTH_TEST: i32 = 142;
    pub const STREAM_ACCEPT: i32 = 204;
}

/// What iperf3's client prints for the error numbers linkperf may meet.
pub fn error_text(i_errno: i32) -> String {
    match i_errno {
        errno::BLOCKSIZE => "block size too large".into(),
        errno::MSS => "TCP MSS too large".into(),
        errno::UNIMPLEMENTED => "an option you are trying to set is not implemented yet".into(),
        errno::NO_SCTP => "no SCTP support available".into(),
        errno::UDP_BLOCKSIZE => "block size invalid".into(),
        errno::BAD_TOS => "bad TOS value".into(),
        errno::NUM_STREAMS => "number of parallel streams too large".into(),
        errno::RECV_PARAMS => "unable to receive parameters from client".into(),
        errno::ACCESS_DENIED => "the server is busy running a test. try again later".into(),
        errno::SET_CONGESTION => "unable to set TCP_CONGESTION".into(),
        errno::AUTH_TEST => "test authorization failed".into(),
        errno::STREAM_ACCEPT => "unable to accept stream connection".into(),
        n => format!("iperf3 error {n}"),
    }
}

/// The bytes of a [`State::ServerError`] report.
pub fn server_error(i_errno: i32, os_errno: i32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = State::ServerError.byte();
    out[1..5].copy_from_slice(&i_errno.to_be_bytes());
    out[5..9].copy_from_slice(&os_errno.to_be_bytes());
    out
}

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    BadCookie,
    UnknownState(u8),
    TooLong(usize),
    BadJson(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::BadCookie => write!(f, "not an iperf3 cookie"),
            DecodeError::UnknownState(b) => write!(f, "unknown iperf3 state {}", *b as i8),
            DecodeError::TooLong(n) => write!(f, "iperf3 JSON of {n} bytes is too long"),
            DecodeError::BadJson(e) => write!(f, "bad iperf3 JSON: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

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
        }
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
                    if len > MAX_JSON {
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

/// The test parameters an iperf3 client sends (only what linkperf reads;
/// unknown keys are kept in `other` so they can be refused by name).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    pub udp: bool,
    pub sctp: bool,
    pub omit: u64,
    pub time: u64,
    pub bytes: u64,
    pub blocks: u64,
    pub mss: u32,
    pub nodelay: bool,
    pub parallel: u32,
    pub reverse: bool,
    pub bidirectional: bool,
    pub window: u32,
    pub len: u32,
    pub bandwidth: u64,
    pub fqrate: u64,
    pub burst: u32,
    pub tos: u32,
    pub flowlabel: u32,
    pub title: Option<String>,
    pub extra_data: Option<String>,
    pub congestion: Option<String>,
    pub get_server_output: bool,
    pub udp_counters_64bit: bool,
    pub repeating_payload: bool,
    pub dont_fragment: bool,
    pub zerocopy: bool,
    pub authtoken: Option<String>,
    pub server_affinity: Option<i64>,
    pub client_version: Option<String>,
    /// Keys this codec does not know.
    pub other: Vec<String>,
}

fn uint(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        .unwrap_or(0)
}

/// iperf3 marks flags either `true` or a number (non-zero is set).
fn flag(v: &Value) -> bool {
    v.as_bool().unwrap_or_else(|| uint(v) != 0)
}

impl Params {
    pub fn from_json(v: &Value) -> Result<Params, DecodeError> {
        let obj = v
            .as_object()
            .ok_or_else(|| DecodeError::BadJson("parameters are not an object".into()))?;
        let mut p = Params {
            parallel: 1,
            ..Default::default()
        };
        let text = |v: &Value| v.as_str().map(String::from);
        for (key, value) in obj {
            match key.as_str() {
                "tcp" => {}
                "udp" => p.udp = flag(value),
                "sctp" => p.sctp = flag(value),
                "omit" => p.omit = uint(value),
                "time" => p.time = uint(value),
                "num" => p.bytes = uint(value),
                "blockcount" => p.blocks = uint(value),
                "MSS" => p.mss = uint(value) as u32,
                "nodelay" => p.nodelay = flag(value),
                "parallel" => p.parallel = uint(value) as u32,
                "reverse" => p.reverse = flag(value),
                "bidirectional" => p.bidirectional = flag(value),
                "window" => p.window = uint(value) as u32,
                "len" => p.len = uint(value) as u32,
                "bandwidth" => p.bandwidth = uint(value),
                "fqrate" => p.fqrate = uint(value),
                "burst" => p.burst = uint(value) as u32,
                "TOS" => p.tos = uint(value) as u32,
                "flowlabel" => p.flowlabel = uint(value) as u32,
                "title" => p.title = text(value),
                "extra_data" => p.extra_data = text(value),
                "congestion" => p.congestion = text(value),
                "congestion_used" => {}
                "get_server_output" => p.get_server_output = flag(value),
                "udp_counters_64bit" => p.udp_counters_64bit = flag(value),
                "repeating_payload" => p.repeating_payload = flag(value),
                "dont_fragment" => p.dont_fragment = flag(value),
                "zerocopy" => p.zerocopy = flag(value),
                "authtoken" => p.authtoken = text(value),
                "server_affinity" => p.server_affinity = value.as_i64(),
                "client_version" => p.client_version = text(value),
                // Timer granularity of iperf3's own pacer: linkperf paces its own way.
                "pacing_timer" => {}
                other => p.other.push(other.to_string()),
            }
        }
        Ok(p)
    }

    /// The document an iperf3 client would send for these parameters.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            if self.udp { "udp" } else { "tcp" }.into(),
            Value::Bool(true),
        );
        m.insert("omit".into(), json!(self.omit));
        m.insert("time".into(), json!(self.time));
        m.insert("num".into(), json!(self.bytes));
        m.insert("blockcount".into(), json!(self.blocks));
        if self.mss > 0 {
            m.insert("MSS".into(), json!(self.mss));
        }
        if self.nodelay {
            m.insert("nodelay".into(), Value::Bool(true));
        }
        m.insert("parallel".into(), json!(self.parallel));
        if self.reverse {
            m.insert("reverse".into(), Value::Bool(true));
        }
        if self.bidirectional {
            m.insert("bidirectional".into(), Value::Bool(true));
        }
        if self.window > 0 {
            m.insert("window".into(), json!(self.window));
        }
        m.insert("len".into(), json!(self.len));
        if self.bandwidth > 0 {
            m.insert("bandwidth".into(), json!(self.bandwidth));
        }
        if self.fqrate > 0 {
            m.insert("fqrate".into(), json!(self.fqrate));
        }
        m.insert("pacing_timer".into(), json!(1000));
        if self.burst > 0 {
            m.insert("burst".into(), json!(self.burst));
        }
        if self.tos > 0 {
            m.insert("TOS".into(), json!(self.tos));
        }
        if let Some(c) = &self.congestion {
            m.insert("congestion".into(), json!(c));
        }
        if self.get_server_output {
            m.insert("get_server_output".into(), json!(1));
        }
        if self.udp_counters_64bit {
            m.insert("udp_counters_64bit".into(), json!(1));
        }
        if self.dont_fragment {
            m.insert("dont_fragment".into(), json!(1));
        }
        if let Some(v) = &self.client_version {
            m.insert("client_version".into(), json!(v));
        }
        Value::Object(m)
    }
}

/// One stream in a results exchange.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamResults {
    pub id: u32,
    pub bytes: u64,
    /// -1: not a sender, or no retransmission count.
    pub retransmits: i64,
    /// Seconds.
    pub jitter: f64,
    /// Datagrams lost (UDP receiver).
    pub errors: u64,
    /// Datagrams sent (sender) or the highest count seen (receiver).
    pub packets: u64,
    pub start_time: f64,
    pub end_time: f64,
}

/// One end's results, exchanged after the test.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1: sender with retransmission counts, 0: sender without, -1: receiver only.
    pub sender_has_retransmits: i64,
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamResults>,
    pub server_output_text: Option<String>,
    pub server_output_json: Option<Value>,
}

/// iperf3 writes -1 through an unsigned path: accept it as any huge number too.
fn signed(v: &Value) -> i64 {
    match v.as_i64() {
        Some(n) => n,
        None => match v.as_f64() {
            Some(f) if f >= 9.2e18 => -1,
            Some(f) => f as i64,
            None => -1,
        },
    }
}

impl Results {
    pub fn from_json(v: &Value) -> Result<Results, DecodeError> {
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_f64)
                .ok_or_else(|| DecodeError::BadJson(format!("results without {k}")))
        };
        let streams = v
            .get("streams")
            .and_then(Value::as_array)
            .ok_or_else(|| DecodeError::BadJson("results without streams".into()))?;
        let mut out = Results {
            cpu_util_total: num("cpu_util_total")?,
            cpu_util_user: num("cpu_util_user")?,
            cpu_util_system: num("cpu_util_system")?,
            sender_has_retransmits: v.get("sender_has_retransmits").map(signed).ok_or_else(
                || DecodeError::BadJson("results without sender_has_retransmits".into()),
            )?,
            congestion_used: v
                .get("congestion_used")
                .and_then(Value::as_str)
                .map(String::from),
            streams: Vec::new(),
            server_output_text: v
                .get("server_output_text")
                .and_then(Value::as_str)
                .map(String::from),
            server_output_json: v.get("server_output_json").cloned(),
        };
        for s in streams {
            let f = |k: &str| s.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            out.streams.push(StreamResults {
                id: s
                    .get("id")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| DecodeError::BadJson("stream without id".into()))?
                    as u32,
                bytes: s.get("bytes").map(uint).unwrap_or(0),
                retransmits: s.get("retransmits").map(signed).unwrap_or(-1),
                jitter: f("jitter"),
                errors: s.get("errors").map(uint).unwrap_or(0),
                packets: s.get("packets").map(uint).unwrap_or(0),
                start_time: f("start_time"),
                end_time: f("end_time"),
            });
        }
        Ok(out)
    }

    pub fn to_json(&self) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "bytes": s.bytes,
                    "retransmits": s.retransmits,
                    "jitter": s.jitter,
                    "errors": s.errors,
                    "packets": s.packets,
                    "start_time": s.start_time,
                    "end_time": s.end_time,
                })
            })
            .collect();
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), json!(self.cpu_util_total));
        m.insert("cpu_util_user".into(), json!(self.cpu_util_user));
        m.insert("cpu_util_system".into(), json!(self.cpu_util_system));
        m.insert(
            "sender_has_retransmits".into(),
            json!(self.sender_has_retransmits),
        );
        if let Some(c) = &self.congestion_used {
            m.insert("congestion_used".into(), json!(c));
        }
        if let Some(t) = &self.server_output_text {
            m.insert("server_output_text".into(), json!(t));
        }
        if let Some(j) = &self.server_output_json {
            m.insert("server_output_json".into(), j.clone());
        }
        m.insert("streams".into(), Value::Array(streams));
        Value::Object(m)
    }
}

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
    fn first_replies_of_an_iperf3_server() {
        assert_eq!(server_first_reply(9), Some(State::ParamExchange));
        assert_eq!(server_first_reply(0xff), Some(State::AccessDenied));
        assert_eq!(server_first_reply(0xfe), Some(State::ServerError));
        // States a server sends only later, and bytes that are no state.
        assert_eq!(server_first_reply(10), None);
        assert_eq!(server_first_reply(b'{'), None);
    }

    #[test]
    fn cookie_alphabet_and_nul() {
        let c = make_cookie(&[0u8; 36]);
        assert_eq!(&c[..36], "a".repeat(36).as_bytes());
        assert_eq!(c[36], 0);
        assert!(is_cookie(&c));
        let c = make_cookie(&[31u8; 36]);
        assert_eq!(c[0], b'7');
        let mut bad = c;
        bad[36] = b'a';
        assert!(!is_cookie(&bad));
        bad = c;
        bad[3] = b'1'; // digits 0, 1, 8, 9 are not base32
        assert!(!is_cookie(&bad));
        assert!(could_be_cookie(b"abcd"));
        assert!(!could_be_cookie(b"LPC1"));
    }

    #[test]
    fn states_are_signed_bytes() {
        assert_eq!(State::ParamExchange.byte(), 9);
        assert_eq!(State::AccessDenied.byte(), 0xff);
        assert_eq!(State::ServerError.byte(), 0xfe);
        for b in 0..=255u8 {
            if let Some(s) = State::from_byte(b) {
                assert_eq!(s.byte(), b);
            }
        }
        assert_eq!(State::from_byte(3), None); // RESULT_REQUEST is never sent
    }

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

    #[test]
    fn params_as_iperf3_3_12_sends_them() {
        let v: Value = serde_json::from_str(
            r#"{"udp":true,"omit":1,"time":0,"num":1048576,"blockcount":0,"parallel":1,
            "bidirectional":true,"window":262144,"len":1400,"bandwidth":100000000,
            "pacing_timer":1000,"burst":5,"TOS":16,"udp_counters_64bit":1,
            "repeating_payload":1,"dont_fragment":1,"client_version":"3.12"}"#,
        )
        .unwrap();
        let p = Params::from_json(&v).unwrap();
        assert!(p.udp && p.bidirectional && p.udp_counters_64bit && p.dont_fragment);
        assert!(p.repeating_payload);
        assert_eq!(
            (p.bytes, p.window, p.len, p.burst, p.tos),
            (1 << 20, 262_144, 1400, 5, 16)
        );
        assert_eq!(p.bandwidth, 100_000_000);
        assert!(p.other.is_empty());
        let back = Params::from_json(&p.to_json()).unwrap();
        assert_eq!(back.len, 1400);
        assert!(back.udp && back.bidirectional && back.udp_counters_64bit);
        let unknown = Params::from_json(&json!({"tcp": true, "fancy": 1})).unwrap();
        assert_eq!(unknown.other, vec!["fancy".to_string()]);
    }

    #[test]
    fn results_accept_minus_one_written_unsigned() {
        let v: Value = serde_json::from_str(
            r#"{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1.0,
            "sender_has_retransmits":1.8446744073709552e+19,
            "streams":[{"id":3,"bytes":1277952,"retransmits":18446744073709551615,
            "jitter":1.1e-05,"errors":2,"packets":39,"start_time":0,"end_time":1.000221}]}"#,
        )
        .unwrap();
        let r = Results::from_json(&v).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.streams[0].id, 3);
        assert_eq!((r.streams[0].errors, r.streams[0].packets), (2, 39));
        assert!(Results::from_json(&json!({"streams": []})).is_err());
    }

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
