//! The server side of `linkperf rr`, reached from `linkperf server` through
//! the `LPR1` preamble. A session (Hello) owns a cookie, counters and, for
//! UDP, a socket answered by its own thread; TCP data connections (Join) find
//! their session by cookie and answer requests until the client closes. A
//! client that vanishes ends only its own session. A session's control
//! connection may be TLS (`linkperf rr --tls`); data connections and UDP
//! flows stay plain, joined by their cookie.

use crate::data;
use crate::guard::auth::{Answer, Gate, Users};
use crate::guard::{self, Guard, Level};
use crate::tls::Channel;
use linkperf_proto::auth;
use linkperf_proto::rr::{
    self, RrClientMessage, RrServerMessage, RrServerSession, RR_VERSION, UDP_HEADER_LEN,
};
use linkperf_proto::{udp, Protocol, TestConfig};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What a session has served so far; written by its data threads.
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    transactions: AtomicU64,
    connections: AtomicU64,
}

fn sessions() -> &'static Mutex<HashMap<u64, Arc<Counters>>> {
    static SESSIONS: OnceLock<Mutex<HashMap<u64, Arc<Counters>>>> = OnceLock::new();
    SESSIONS.get_or_init(Mutex::default)
}

/// How long a client may take to open its UDP flow.
const SETUP_TIMEOUT: Duration = Duration::from_secs(15);

/// Who may open an rr session (data connections only need their cookie).
#[derive(Default, Clone, Copy)]
pub struct Admission<'a> {
    /// Every session must answer a challenge with a user's key.
    pub users: Option<(&'a Users, &'a Gate)>,
    /// Plain sessions are refused: the server requires TLS.
    pub tls_required: bool,
}

/// Serves one rr connection (the preamble is already read, inside TLS when
/// the channel is TLS); its first message must be complete by `deadline`.
/// Returns true when it was a session that ran to its end (for `linkperf
/// server --once`).
pub fn handle(
    mut stream: Channel,
    peer: SocketAddr,
    guard: &Arc<Guard>,
    deadline: Instant,
    admission: Admission<'_>,
) -> bool {
    let _ = stream.tcp().set_nodelay(true);
    let mut session = RrServerSession::new();
    let first = match read_message(&mut stream, &mut session, Some(deadline)) {
        Ok(m) => m,
        Err(why) => {
            if let Some(message) = why.strip_prefix("refuse: ") {
                send(
                    &mut stream,
                    &mut session,
                    &RrServerMessage::Error {
                        message: message.into(),
                    },
                );
                guard.refused(peer, &format!("rr: {message}"));
            } else {
                guard.refused(peer, &format!("rr: {why}"));
            }
            return false;
        }
    };
    match first {
        RrClientMessage::Join {
            cookie,
            request,
            response,
        } => {
            // Data connections stay plain (their cookie joins them).
            let plain = (!stream.is_tls())
                .then(|| stream.tcp().try_clone().ok())
                .flatten();
            drop(stream);
            let Some(plain) = plain else {
                guard.refused(peer, "rr data connection inside TLS (they stay plain)");
                return false;
            };
            if guard.cookie_guessing_blocked(peer.ip()) {
                guard.refused(peer, "rr data connection closed: too many wrong cookies");
            } else if !serve_tcp(plain, cookie, request, response) {
                guard.wrong_cookie(peer, "rr data connection");
            }
            false
        }
        RrClientMessage::Hello { protocol, .. } => {
            if let Err(why) = admit(&mut stream, &mut session, peer, guard, deadline, admission) {
                send(
                    &mut stream,
                    &mut session,
                    &RrServerMessage::Error {
                        message: why.clone(),
                    },
                );
                guard.refused(peer, &format!("rr: {why}"));
                return false;
            }
            let permit = match guard.admit_test(1) {
                Ok(permit) => permit,
                Err(why) => {
                    let error = RrServerMessage::Error {
                        message: why.clone(),
                    };
                    send(&mut stream, &mut session, &error);
                    guard.refused(peer, &format!("rr: {why}"));
                    return false;
                }
            };
            match run_session(stream, session, protocol) {
                Ok(line) => guard.log.event(
                    Level::Info,
                    peer,
                    "test-done",
                    &format!("client {peer}: {line}"),
                ),
                Err(why) => {
                    guard
                        .log
                        .event(Level::Warn, peer, "session-failed", &format!("rr: {why}"))
                }
            }
            drop(permit);
            true
        }
        RrClientMessage::Finish | RrClientMessage::Auth { .. } => false,
    }
}

/// A session's admission: refused when the server requires TLS; when it
/// requires users, a challenge and the client's answer. `Err`: the refusal.
fn admit(
    stream: &mut Channel,
    session: &mut RrServerSession,
    peer: SocketAddr,
    guard: &Guard,
    deadline: Instant,
    admission: Admission<'_>,
) -> Result<(), String> {
    if admission.tls_required && !stream.is_tls() {
        return Err(
            "this server requires TLS on the control connection (--tls-required): add --tls with --tls-ca FILE or --tls-pin SHA256".into(),
        );
    }
    let Some((users, gate)) = admission.users else {
        return Ok(());
    };
    let mut nonce = vec![0u8; auth::NONCE_LEN];
    guard::random_bytes(&mut nonce)?;
    let challenge = RrServerMessage::Challenge {
        nonce: auth::to_hex(&nonce),
    };
    if !send(stream, session, &challenge) {
        return Err("could not send the challenge".into());
    }
    let (user, answer) = match read_message(stream, session, Some(deadline)) {
        Ok(RrClientMessage::Auth { user, answer }) => (user, answer),
        Ok(_) => return Err("expected the answer to the challenge".into()),
        Err(why) => {
            return Err(format!(
                "this server requires authentication ({why}): give --username and --key-file (or LINKPERF_USER and LINKPERF_KEY)"
            ))
        }
    };
    gate.check(
        users,
        &guard.log,
        peer,
        &Answer {
            user: &user,
            answer: &answer,
            nonce: &nonce,
            purpose: &auth::purpose_rr(),
            binding: stream.binding().as_ref().map(|b| &b[..]),
        },
    )
}

/// Reads exactly one frame (never bytes past it: raw requests may follow).
/// With a `deadline`, the whole frame must have arrived by then.
fn read_message(
    stream: &mut Channel,
    session: &mut RrServerSession,
    deadline: Option<Instant>,
) -> Result<RrClientMessage, String> {
    let mut buf = vec![0u8; 4096];
    loop {
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("the client went silent".into());
            }
            let _ = stream.tcp().set_read_timeout(Some(left));
        }
        let want = session.wanted().min(buf.len());
        let n = match stream.read(&mut buf[..want]) {
            Ok(0) => return Err("the client closed the connection".into()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err("the client went silent".into())
            }
            Err(e) => return Err(format!("connection failed: {e}")),
        };
        match session.receive(&buf[..n]) {
            Ok(mut messages) if !messages.is_empty() => return Ok(messages.remove(0)),
            Ok(_) => {}
            Err(e @ rr::RrError::Version { .. }) => return Err(format!("refuse: {e}")),
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn send(stream: &mut Channel, session: &mut RrServerSession, m: &RrServerMessage) -> bool {
    match session.send(m) {
        Ok(bytes) => stream.write_all(&bytes).is_ok(),
        Err(_) => false,
    }
}

/// The kernel's boot id: equal on both ends means one kernel, hence one
/// wall clock (the same host, or network namespaces on it).
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[inline]
fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Removes the session from the registry and stops its UDP thread when the
/// control connection ends, however it ends.
struct SessionGuard {
    cookie: u64,
    stop: Arc<AtomicBool>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Ok(mut s) = sessions().lock() {
            s.remove(&self.cookie);
        }
    }
}

fn run_session(
    mut stream: Channel,
    mut session: RrServerSession,
    protocol: Protocol,
) -> Result<String, String> {
    linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(stream.tcp()));
    let local = stream.tcp().local_addr().map_err(|e| e.to_string())?;
    let peer = stream.tcp().peer_addr().map_err(|e| e.to_string())?.ip();
    let cookie = guard::session_cookie()?;
    let counters = Arc::new(Counters::default());
    if let Ok(mut s) = sessions().lock() {
        s.insert(cookie, counters.clone());
    }
    let guard = SessionGuard {
        cookie,
        stop: Arc::new(AtomicBool::new(false)),
    };
    let udp_port = if protocol == Protocol::Udp {
        let config = TestConfig {
            protocol: Protocol::Udp,
            ..Default::default()
        };
        let sock = match data::bind_udp(SocketAddr::new(local.ip(), 0), &config) {
            Ok(s) => s,
            Err(e) => {
                send(
                    &mut stream,
                    &mut session,
                    &RrServerMessage::Error { message: e.clone() },
                );
                return Err(e);
            }
        };
        let port = sock.local_addr().map_err(|e| e.to_string())?.port();
        let (counters, stop) = (counters.clone(), guard.stop.clone());
        std::thread::Builder::new()
            .name("lp-rr-udp".into())
            .spawn(move || serve_udp(sock, cookie, peer, &counters, &stop))
            .map_err(|e| e.to_string())?;
        Some(port)
    } else {
        None
    };
    let welcome = RrServerMessage::Welcome {
        version: RR_VERSION,
        software: crate::report::SOFTWARE.into(),
        cookie,
        udp_port,
        boot_id: boot_id(),
    };
    if !send(&mut stream, &mut session, &welcome) {
        return Err("could not answer the client".into());
    }
    // The test may idle for long (--cold --idle): no read timeout; keepalive
    // notices a vanished client.
    let _ = stream.tcp().set_read_timeout(None);
    match read_message(&mut stream, &mut session, None)? {
        RrClientMessage::Finish => {}
        _ => return Err("expected finish".into()),
    }
    let done = RrServerMessage::Done {
        requests: counters.requests.load(Ordering::Acquire),
        transactions: counters.transactions.load(Ordering::Acquire),
        connections: counters.connections.load(Ordering::Acquire),
    };
    let _ = send(&mut stream, &mut session, &done);
    drop(guard);
    let connections = counters.connections.load(Ordering::Acquire);
    Ok(format!(
        "rr {}: {} transactions{}",
        if protocol == Protocol::Udp {
            "UDP"
        } else {
            "TCP"
        },
        counters.transactions.load(Ordering::Acquire),
        if connections > 1 {
            format!(" on {connections} connections")
        } else {
            String::new()
        }
    ))
}

/// A TCP data connection: fixed-size requests answered by fixed-size
/// responses, stamped with the receive time, until the client closes.
/// False when `cookie` names no session.
fn serve_tcp(mut stream: TcpStream, cookie: u64, request: u32, response: u32) -> bool {
    let counters = sessions().lock().ok().and_then(|s| s.get(&cookie).cloned());
    let Some(counters) = counters else {
        return false; // unknown or finished session: close
    };
    if request == 0
        || response == 0
        || request > rr::MAX_TCP_MESSAGE
        || response > rr::MAX_TCP_MESSAGE
    {
        return true;
    }
    counters.connections.fetch_add(1, Ordering::AcqRel);
    let _ = stream.set_read_timeout(None);
    let mut req = vec![0u8; request as usize];
    let mut resp = vec![0u8; response as usize];
    loop {
        if read_full(&mut stream, &mut req).is_err() {
            return true;
        }
        rr::write_tcp_stamp(&mut resp, wall_ns());
        counters.requests.fetch_add(1, Ordering::Relaxed);
        // Counted before the answer leaves, so the client never sees a
        // response the count at Finish does not include.
        counters.transactions.fetch_add(1, Ordering::Release);
        if stream.write_all(&resp).is_err() {
            return true;
        }
    }
}

/// `read_exact` that reports a clean close as an error without allocating.
fn read_full(stream: &mut TcpStream, buf: &mut [u8]) -> Result<(), ()> {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Err(()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    Ok(())
}

/// A session's UDP flow: waits for the client's hello, then answers every
/// request with a response of the size it asks for, until the session ends.
/// Only a hello from `peer`, the control connection's address, is answered
/// (see [`data::accept_udp`]); the connected socket then hears no one else,
/// so responses larger than requests go only to a proven address.
fn serve_udp(
    sock: UdpSocket,
    cookie: u64,
    peer: std::net::IpAddr,
    counters: &Counters,
    stop: &AtomicBool,
) {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    if data::accept_udp(&sock, cookie, 0, peer, deadline).is_err() {
        return;
    }
    // Wake up now and then to notice the end of the session.
    let _ = sock.set_read_timeout(Some(Duration::from_millis(200)));
    let mut req = vec![0u8; 65_536];
    let mut resp = vec![0u8; rr::MAX_UDP_MESSAGE as usize];
    loop {
        match sock.recv(&mut req) {
            Ok(n) => {
                let rx = wall_ns();
                let Some((seq, size)) = rr::parse_udp_request(&req[..n]) else {
                    if udp::parse_hello(&req[..n]) == Some((cookie, 0)) {
                        let _ = sock.send(&udp::HELLO_ACK);
                    }
                    continue;
                };
                // A client that keeps sending after its session ended must not
                // keep this thread forever.
                if seq & 1023 == 1023 && stop.load(Ordering::Relaxed) {
                    return;
                }
                counters.requests.fetch_add(1, Ordering::Relaxed);
                rr::write_udp_response(&mut resp[..UDP_HEADER_LEN], seq, rx);
                counters.transactions.fetch_add(1, Ordering::Release);
                let _ = sock.send(&resp[..size as usize]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                if stop.load(Ordering::Acquire) {
                    return;
                }
            }
            // ICMP port unreachable from a vanished client, and the like.
            Err(_) => {
                if stop.load(Ordering::Acquire) {
                    return;
                }
            }
        }
    }
}
