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
//!
//! One module per part of the protocol: the cookie, the control states and
//! error numbers, the RSA authentication token's text, the control framing
//! and decoder, the parameters, the results, and the data streams (ids, UDP
//! handshake and header). This file only re-exports them, so callers write `linkperf_proto::iperf3::X`.

mod authtoken;
mod control;
mod cookie;
mod error;
mod params;
mod results;
mod state;
mod streams;
mod values;

pub use authtoken::{parse_users_line, password_hash, token_text, TokenText};
pub use control::{encode_json, Decoder, Item, Peer, MAX_JSON};
pub use cookie::{could_be_cookie, is_cookie, make_cookie, COOKIE_LEN};
pub use error::DecodeError;
pub use params::Params;
pub use results::{Results, StreamResults};
pub use state::{errno, error_text, server_error, server_first_reply, State};
pub use streams::{
    is_udp_reply, parse_udp_header, stream_id, stream_index, udp_header_len, write_udp_header,
    UDP_CONNECT, UDP_REPLY,
};

/// iperf3's default port.
pub const DEFAULT_PORT: u16 = 5201;
