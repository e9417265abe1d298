//! The server's side of TLS on control connections: a connection that
//! opens with a TLS ClientHello is handshaken (`--tls-cert`, `--tls-key`)
//! and must then carry a control session; with `--tls-required` plain
//! control sessions, rr sessions and iperf3 clients are refused with one
//! line. Data connections (rr's too) stay plain whatever the control
//! connection was.

use crate::guard::Guard;
use crate::tls::{self, Channel, ServerTls};
use linkperf_proto::iperf3::State;
use linkperf_proto::{Preamble, ServerMessage};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The line a plain client of a `--tls-required` server reads.
pub(super) const TLS_REQUIRED: &str =
    "this server requires TLS on the control connection (--tls-required): add --tls with --tls-ca FILE or --tls-pin SHA256";

/// Accepts a connection whose first bytes (`first`) began a TLS handshake:
/// the channel of a control connection or an rr session, with its inner
/// preamble, or `None` after refusing.
pub(super) fn accept(
    stream: TcpStream,
    peer: SocketAddr,
    first: &[u8],
    tls: Option<&ServerTls>,
    guard: &Guard,
) -> Option<(Channel, Preamble)> {
    let deadline = Instant::now() + guard.limits.handshake_timeout;
    let Some(config) = tls else {
        // The client waits for a ServerHello; closing tells it at once.
        guard.refused(
            peer,
            "a TLS handshake, but this server has no certificate (--tls-cert, --tls-key)",
        );
        return None;
    };
    let mut channel = match tls::accept(stream, first, config, deadline) {
        Ok(channel) => channel,
        Err(why) => {
            guard.refused(peer, &why);
            return None;
        }
    };
    let mut inner = [0u8; Preamble::LEN];
    if let Err(why) = channel.read_exact_by(&mut inner, deadline) {
        guard.refused(peer, &format!("TLS: no preamble: {why}"));
        return None;
    }
    match Preamble::parse(&inner) {
        Some(kind @ (Preamble::Control | Preamble::Rr)) => Some((channel, kind)),
        _ => {
            guard.refused(
                peer,
                "TLS carries control connections and rr sessions only (data connections stay plain)",
            );
            channel.shutdown();
            None
        }
    }
}

/// With `--tls-required`: refuses a plain control connection (an Error the
/// client prints) or an iperf3 client (ACCESS_DENIED). True when refused.
pub(super) fn refuse_plain(
    stream: &mut TcpStream,
    peer: SocketAddr,
    kind: Option<Preamble>,
    (tls, guard): (Option<&ServerTls>, &Guard),
    deadline: Instant,
) -> bool {
    if !tls.is_some_and(|t| t.required) {
        return false;
    }
    match kind {
        Some(Preamble::Control) => {
            let error = ServerMessage::Error {
                message: TLS_REQUIRED.into(),
            };
            let _ = stream.write_all(&linkperf_proto::encode(&error));
            linger(stream);
            guard.refused(peer, "a plain control connection (--tls-required)");
        }
        None => {
            let mut rest = [0u8; linkperf_proto::iperf3::COOKIE_LEN - Preamble::LEN];
            if crate::guard::read_exact_by(stream, &mut rest, deadline).is_ok() {
                let _ = stream.write_all(&[State::AccessDenied.byte()]);
            }
            guard.refused(
                peer,
                "iperf3 or unknown protocol: this server requires TLS (--tls-required)",
            );
        }
        Some(_) => return false,
    }
    true
}

/// Closes our side and waits briefly for the client's: closing with its
/// hello unread would reset the connection and could lose the refusal.
fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 512];
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}
