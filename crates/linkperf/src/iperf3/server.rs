//! Serving stock iperf3 clients. A connection whose first bytes are an iperf3
//! cookie is either a new control connection or a data connection of a
//! session waiting for its streams (found by cookie). Sessions run side by
//! side like linkperf's own; `--exclusive` refuses a second one as iperf3 does.
//! With iperf3's RSA authentication configured, a client's parameters must
//! carry a valid token ([`super::auth`]), else it gets iperf3's
//! "test authorization failed".

use super::auth::RsaAuth;
use super::listener::{self, Handshake};
use super::{config_from_params, iperf3_bytes, iperf3_rate, results_from_side, Extras};
use crate::data::{self, canonical_ip as canonical};
use crate::guard::auth::Gate;
use crate::guard::{self, Guard, Level};
use linkperf_engine::{
    sockopt, DataSocket, EventSink, LocalSide, SideEvent, StreamPlan, UdpFormat,
};
use linkperf_proto::iperf3::{self, Decoder, Item, Params, Peer, State, COOKIE_LEN};
use linkperf_proto::results::{Role, SideResult, StreamInterval};
use linkperf_proto::{Protocol, TestConfig};
use socket2::{Domain, Socket, Type};
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a client may take for each step before the test starts.
const SETUP_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest parameter object accepted from an iperf3 client (they are a
/// few hundred bytes).
const MAX_PARAMS_JSON: usize = 64 * 1024;

/// A data connection handed to its session, with its [`accept_ticket`].
type Arrived = (u64, TcpStream);

/// Sessions waiting for their data connections, by cookie, and the number
/// of running sessions (for --exclusive). One per process: cookies are random.
#[derive(Default)]
struct Hub {
    waiting: Mutex<HashMap<[u8; COOKIE_LEN], Sender<Arrived>>>,
    active: AtomicUsize,
}

/// A number that grows with every accepted connection, taken by the accept
/// loop before the connection gets its own thread. iperf3 says which stream a
/// data connection is only by its place in accept order (the client connects
/// them one after the other), and the per-connection threads reach their
/// session in any order: the session sorts its connections by this ticket.
pub fn accept_ticket() -> u64 {
    static ACCEPTED: AtomicU64 = AtomicU64::new(0);
    ACCEPTED.fetch_add(1, Ordering::Relaxed)
}

fn hub() -> &'static Hub {
    static HUB: OnceLock<Hub> = OnceLock::new();
    HUB.get_or_init(Hub::default)
}

struct ActiveGuard;
impl Drop for ActiveGuard {
    fn drop(&mut self) {
        hub().active.fetch_sub(1, Ordering::AcqRel);
    }
}

struct WaitingGuard([u8; COOKIE_LEN]);
impl Drop for WaitingGuard {
    fn drop(&mut self) {
        if let Ok(mut w) = hub().waiting.lock() {
            w.remove(&self.0);
        }
    }
}

/// What an iperf3 client must satisfy beyond the server's limits.
#[derive(Clone, Copy, Default)]
pub struct Admission<'a> {
    /// One test at a time (`--exclusive`): a second client is busy-refused.
    pub exclusive: bool,
    /// iperf3's RSA authentication, and the per-address failure limit it
    /// shares with linkperf's own authentication.
    pub rsa: Option<(&'a RsaAuth, &'a Gate)>,
}

/// Serves a connection whose first four bytes (`first`) were already read
/// and are not linkperf's; `accepted` is its [`accept_ticket`]. Returns true
/// when an iperf3 test session ran.
pub fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    (first, accepted): ([u8; 4], u64),
    admission: Admission<'_>,
    guard: &Arc<Guard>,
    deadline: Instant,
) -> bool {
    if !iperf3::could_be_cookie(&first) {
        guard.refused(
            peer,
            &format!("unknown protocol (first bytes {first:02x?}); closed"),
        );
        return false;
    }
    let mut cookie = [0u8; COOKIE_LEN];
    cookie[..4].copy_from_slice(&first);
    if let Err(why) = guard::read_exact_by(&mut stream, &mut cookie[4..], deadline) {
        guard.refused(peer, &format!("iperf3 cookie incomplete: {why}"));
        return false;
    }
    if !iperf3::is_cookie(&cookie) {
        guard.refused(peer, "unknown protocol (not an iperf3 cookie); closed");
        return false;
    }
    let waiting = hub()
        .waiting
        .lock()
        .ok()
        .and_then(|w| w.get(&cookie).cloned());
    if let Some(tx) = waiting {
        let _ = tx.send((accepted, stream));
        return false;
    }
    let previous = hub().active.fetch_add(1, Ordering::AcqRel);
    let _active = ActiveGuard;
    if admission.exclusive && previous > 0 {
        // iperf3's answer to a second client: busy, try later.
        let _ = stream.write_all(&[State::AccessDenied.byte()]);
        guard.refused(peer, "iperf3: a test is running (--exclusive)");
        return false;
    }
    match Session::run(stream, cookie, guard, admission.rsa) {
        Ok((line, warnings)) => {
            guard.log.event(Level::Info, peer, "test-done", &line);
            for w in warnings {
                guard.log.event(
                    Level::Warn,
                    peer,
                    "warning",
                    &format!("iperf3 client {peer}: {w}"),
                );
            }
        }
        Err(why) => guard.log.event(
            Level::Warn,
            peer,
            "session-failed",
            &format!("iperf3 client {peer}: {why}"),
        ),
    }
    true
}

enum Event {
    Control(Item),
    Lost(String),
    Side(SideEvent),
}

struct Session {
    control: TcpStream,
    events: Receiver<Event>,
    tx: Sender<Event>,
    /// The server's longest test (--server-max-duration), `-n` tests too.
    max_duration_s: f64,
}

impl Session {
    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.control
            .write_all(bytes)
            .map_err(|e| format!("iperf3 control connection: {e}"))
    }

    fn state(&mut self, s: State) -> Result<(), String> {
        self.send(&[s.byte()])
    }

    fn refuse<T>(&mut self, i_errno: i32, why: String) -> Result<T, String> {
        let _ = self.send(&iperf3::server_error(i_errno, 0));
        Err(format!("refused: {why}"))
    }

    /// The test's log line and its warnings, or why it failed.
    fn run(
        mut control: TcpStream,
        cookie: [u8; COOKIE_LEN],
        guard: &Arc<Guard>,
        rsa: Option<(&RsaAuth, &Gate)>,
    ) -> Result<(String, Vec<String>), String> {
        sockopt::apply_liveness(&socket2::SockRef::from(&control));
        control.set_nodelay(true).ok();
        let peer = control.peer_addr().map_err(|e| e.to_string())?;
        let local = control.local_addr().map_err(|e| e.to_string())?;
        control
            .write_all(&[State::ParamExchange.byte()])
            .map_err(|e| e.to_string())?;
        let mut decoder = Decoder::new(Peer::Client, false);
        decoder.set_json_limit(MAX_PARAMS_JSON);
        let step = guard.limits.handshake_timeout;
        let items = super::read_items(&mut control, &mut decoder, step)?;
        let mut params = match items.first() {
            Some(Item::Json(v)) => Params::from_json(v).map_err(|e| e.to_string())?,
            _ => return Err("expected the iperf3 parameters".into()),
        };
        // The client's results at the end may be long (many intervals).
        decoder.set_json_limit(iperf3::MAX_JSON);
        let (tx, events) = mpsc::channel();
        let mut session = Session {
            control,
            events,
            tx,
            max_duration_s: guard.limits.max_duration_s,
        };
        let user = match rsa {
            Some(rsa) => match super::auth::authorize(&mut params, rsa, guard, peer) {
                Ok(user) => Some(user),
                Err(why) => return session.refuse(iperf3::errno::AUTH_TEST, why),
            },
            None => None,
        };
        let (config, extras) = match config_from_params(&params) {
            Ok(c) => c,
            Err(r) => return session.refuse(r.i_errno, r.why),
        };
        if let Err(why) = guard.check_config(&config) {
            return session.refuse(iperf3::errno::ACCESS_DENIED, why);
        }
        let streams = super::roles(&config, true).len();
        let _permit = match guard.admit_test(streams) {
            Ok(permit) => permit,
            Err(why) => return session.refuse(iperf3::errno::ACCESS_DENIED, why),
        };
        let (line, warnings) =
            session.test(config, extras, params, cookie, decoder, peer, local)?;
        Ok(match user {
            Some(user) => (
                format!(
                    "{line} (iperf3 user '{}')",
                    crate::guard::auth::printable(&user)
                ),
                warnings,
            ),
            None => (line, warnings),
        })
    }

    /// From CREATE_STREAMS to the client's IPERF_DONE: the test's log line
    /// and its warnings, or why it failed.
    #[allow(clippy::too_many_arguments)]
    fn test(
        &mut self,
        config: TestConfig,
        extras: Extras,
        params: Params,
        cookie: [u8; COOKIE_LEN],
        decoder: Decoder,
        peer: SocketAddr,
        local: SocketAddr,
    ) -> Result<(String, Vec<String>), String> {
        let udp = config.protocol == Protocol::Udp;
        let roles = super::roles(&config, true);
        let (data_tx, data_rx) = mpsc::channel();
        let waiting = WaitingGuard(cookie);
        if let Ok(mut w) = hub().waiting.lock() {
            w.insert(cookie, data_tx);
        }
        let mut warnings = Vec::new();
        let sockets = if udp {
            self.accept_udp_streams(local, peer.ip(), &config, &extras, roles.len())?
        } else {
            self.accept_tcp_streams(
                local,
                &config,
                &extras,
                &data_rx,
                roles.len(),
                &mut warnings,
            )?
        };
        drop(waiting);
        for key in &params.other {
            warnings.push(format!("iperf3 parameter '{key}' ignored"));
        }
        if extras.repeating_payload {
            warnings.push("--repeating-payload: linkperf's payload is not repeated".into());
        }

        let (plans, tcp_handles) = plans_of(sockets, &roles);
        let connected = connected_lines(&plans);
        // iperf3 stamps datagrams with a monotonic clock: no one-way delay.
        let mut side = LocalSide::new(config.clone(), plans, false, warnings);
        if udp {
            side.set_udp_format(UdpFormat::Iperf3 {
                counters_64bit: extras.udp_counters_64bit,
            });
        }
        self.spawn_reader(decoder)?;
        let tx = self.tx.clone();
        let sink: EventSink = Arc::new(move |e| {
            let _ = tx.send(Event::Side(e));
        });
        side.start(Instant::now(), sink);
        self.state(State::TestStart)?;
        self.state(State::TestRunning)?;

        let mut intervals: Vec<Vec<StreamInterval>> = Vec::new();
        let side = self.until_test_end(side, &config, &mut intervals)?;
        side.stop_senders();
        self.state(State::ExchangeResults)?;
        let (side, client_results) = self.client_results(side, &mut intervals)?;
        let result = settle(
            side,
            &client_results,
            &config,
            &tcp_handles,
            &self.events,
            &mut intervals,
        );
        let mut results = results_from_side(&result, config.protocol == Protocol::Udp);
        if extras.get_server_output {
            results.server_output_text = Some(server_output(
                &config, &peer, &connected, &intervals, &result,
            ));
        }
        self.send(&iperf3::encode_json(&results.to_json()))?;
        self.state(State::DisplayResults)?;
        self.await_done();
        let line = log_line(&peer, &params, &config, &result);
        Ok((line, result.warnings))
    }

    /// UDP streams on the server's own port: each connect datagram from the
    /// client's address gets a socket connected back, then the reply.
    fn accept_udp_streams(
        &mut self,
        local: SocketAddr,
        peer: IpAddr,
        config: &TestConfig,
        extras: &Extras,
        count: usize,
    ) -> Result<Vec<DataSocket>, String> {
        let mut sockets = Vec::new();
        let addr = SocketAddr::new(canonical(local.ip()), local.port());
        let mut waiter = match super::server_udp::wait_for(addr, peer) {
            Ok(w) => w,
            Err(e) => return self.refuse(iperf3::errno::STREAM_ACCEPT, e),
        };
        self.state(State::CreateStreams)?;
        let deadline = Instant::now() + SETUP_TIMEOUT;
        for _ in 0..count {
            let from = waiter.next(deadline).inspect_err(|_| {
                let _ = self.send(&iperf3::server_error(iperf3::errno::STREAM_ACCEPT, 0));
            })?;
            // The stream's own socket on the shared port, connected to the
            // client: the kernel prefers it to the dispatcher's from now on.
            let stream_socket = bind_udp_listener(addr, config)?;
            stream_socket
                .connect(from)
                .map_err(|e| format!("UDP connect to {from}: {e}"))?;
            let _ = stream_socket.send(&iperf3::UDP_REPLY);
            let _ = super::set_tos(&stream_socket, extras.tos, addr.is_ipv6());
            sockets.push(DataSocket::Udp(stream_socket));
        }
        Ok(sockets)
    }

    /// TCP streams: the data connections the accept loop hands over by
    /// cookie, in the order they were accepted.
    fn accept_tcp_streams(
        &mut self,
        local: SocketAddr,
        config: &TestConfig,
        extras: &Extras,
        data_rx: &Receiver<Arrived>,
        count: usize,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<DataSocket>, String> {
        let local_ip = canonical(local.ip());
        let mut sockets = Vec::new();
        // The handshake options are on the listener before the client
        // connects (it does so after CREATE_STREAMS), until all arrived.
        let (setup, warning) = listener::enter(local, Handshake::of(config));
        warnings.extend(warning);
        self.state(State::CreateStreams)?;
        let deadline = Instant::now() + SETUP_TIMEOUT;
        let mut arrived = Vec::with_capacity(count);
        while arrived.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            match data_rx.recv_timeout(left) {
                Ok(s) => arrived.push(s),
                Err(_) => {
                    return self.refuse(
                        iperf3::errno::STREAM_ACCEPT,
                        format!("{} of {} data connections arrived", arrived.len(), count),
                    )
                }
            }
        }
        drop(setup);
        // Stream i (and so its role: with --bidir the client's senders come
        // first) is the i-th connection accepted, not the i-th to get here.
        arrived.sort_by_key(|(ticket, _)| *ticket);
        for (_, stream) in arrived {
            let _ = stream.set_read_timeout(None);
            match data::prepare_tcp(&stream, config) {
                Ok(w) => warnings.extend(w),
                Err(e) => return self.refuse(iperf3::errno::UNIMPLEMENTED, e),
            }
            let _ = super::set_tos(&stream, extras.tos, local.is_ipv6() && !local_ip.is_ipv4());
            sockets.push(DataSocket::Tcp(stream));
        }
        Ok(sockets)
    }

    /// Waits for the client's TEST_END (or its end), keeping the intervals.
    fn until_test_end(
        &mut self,
        side: LocalSide,
        config: &TestConfig,
        intervals: &mut Vec<Vec<StreamInterval>>,
    ) -> Result<LocalSide, String> {
        let longest = if config.bytes.is_some() {
            self.max_duration_s
        } else {
            config.duration_s.min(self.max_duration_s)
        };
        let watchdog = Duration::from_secs_f64(longest) + Duration::from_secs(60);
        let started = Instant::now();
        loop {
            // Checked on every event: intervals arrive every second.
            if started.elapsed() > watchdog {
                let _ = self.send(&iperf3::server_error(iperf3::errno::ACCESS_DENIED, 0));
                return Err(abandon(
                    side,
                    format!(
                        "the iperf3 test ran past this server's limit of {} s (--server-max-duration) or was never ended; aborted",
                        self.max_duration_s
                    ),
                ));
            }
            match self.events.recv_timeout(Duration::from_secs(1)) {
                Ok(Event::Side(SideEvent::Interval(v))) => intervals.push(v),
                Ok(Event::Side(_)) => {}
                Ok(Event::Control(Item::State(State::TestEnd))) => return Ok(side),
                Ok(Event::Control(Item::State(State::ClientTerminate))) => {
                    return Err(abandon(side, "the iperf3 client ended the test early"));
                }
                Ok(Event::Control(other)) => {
                    return Err(abandon(
                        side,
                        format!("unexpected iperf3 message during the test: {other:?}"),
                    ));
                }
                Ok(Event::Lost(why)) => {
                    return Err(abandon(side, format!("test aborted: {why}")));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err("internal channel closed".into()),
            }
        }
    }

    /// The client's results, sent after EXCHANGE_RESULTS.
    fn client_results(
        &mut self,
        side: LocalSide,
        intervals: &mut Vec<Vec<StreamInterval>>,
    ) -> Result<(LocalSide, iperf3::Results), String> {
        loop {
            match self.events.recv_timeout(SETUP_TIMEOUT) {
                Ok(Event::Side(SideEvent::Interval(v))) => intervals.push(v),
                Ok(Event::Side(_)) => {}
                Ok(Event::Control(Item::Json(v))) => {
                    let results = iperf3::Results::from_json(&v).map_err(|e| e.to_string())?;
                    return Ok((side, results));
                }
                Ok(Event::Control(other)) => {
                    return Err(abandon(
                        side,
                        format!("expected the iperf3 client's results, got {other:?}"),
                    ));
                }
                Ok(Event::Lost(why)) => {
                    return Err(abandon(
                        side,
                        format!("no results from the iperf3 client: {why}"),
                    ));
                }
                Err(_) => return Err(abandon(side, "the iperf3 client sent no results")),
            }
        }
    }

    /// Waits a while for the client's IPERF_DONE (or for it to just close).
    fn await_done(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.events.recv_timeout(Duration::from_millis(200)) {
                Ok(Event::Control(Item::State(State::IperfDone))) | Ok(Event::Lost(_)) => break,
                _ => {}
            }
        }
    }

    /// Reads the client's control items on their own thread.
    fn spawn_reader(&mut self, decoder: Decoder) -> Result<(), String> {
        super::spawn_control_reader(
            &self.control,
            decoder,
            self.tx.clone(),
            control_event,
            "iperf3 client",
        )
    }
}

/// Stops the streams of a test that cannot go on; returns `why`.
fn abandon(side: LocalSide, why: impl Into<String>) -> String {
    side.abort();
    let _ = side.finish();
    why.into()
}

/// The streams' plans (stream i has role i), and a handle on each TCP one
/// to see when its sender has drained.
fn plans_of(sockets: Vec<DataSocket>, roles: &[Role]) -> (Vec<StreamPlan>, Vec<Option<TcpStream>>) {
    let tcp_handles: Vec<Option<TcpStream>> = sockets
        .iter()
        .map(|s| match s {
            DataSocket::Tcp(t) => t.try_clone().ok(),
            DataSocket::Udp(_) => None,
        })
        .collect();
    let plans: Vec<StreamPlan> = sockets
        .into_iter()
        .zip(roles)
        .enumerate()
        .map(|(i, (socket, role))| StreamPlan {
            id: i as u32,
            role: *role,
            socket,
        })
        .collect();
    (plans, tcp_handles)
}

/// iperf3's "connected" lines for --get-server-output, one per stream.
fn connected_lines(plans: &[StreamPlan]) -> Vec<String> {
    plans
        .iter()
        .map(|p| {
            let (l, r) = match &p.socket {
                DataSocket::Tcp(s) => (s.local_addr().ok(), s.peer_addr().ok()),
                DataSocket::Udp(s) => (s.local_addr().ok(), s.peer_addr().ok()),
            };
            format!(
                "[{:>3}] local {} port {} connected to {} port {}\n",
                p.id + 5,
                l.map(|a| canonical(a.ip()).to_string()).unwrap_or_default(),
                l.map(|a| a.port()).unwrap_or(0),
                r.map(|a| canonical(a.ip()).to_string()).unwrap_or_default(),
                r.map(|a| a.port()).unwrap_or(0)
            )
        })
        .collect()
}

/// The server's one line about a finished test.
fn log_line(
    peer: &SocketAddr,
    params: &Params,
    config: &TestConfig,
    result: &SideResult,
) -> String {
    let udp = config.protocol == Protocol::Udp;
    let received: u64 = result
        .streams
        .iter()
        .filter(|s| s.role == Role::Receiver)
        .map(|s| s.bytes)
        .sum();
    let sent: u64 = result
        .streams
        .iter()
        .filter(|s| s.role == Role::Sender)
        .map(|s| s.bytes)
        .sum();
    format!(
        "iperf3 client {peer} ({}): {} {:?} x{} {:.2} s: received {received} bytes, sent {sent} bytes",
        params.client_version.as_deref().unwrap_or("iperf3"),
        if udp { "UDP" } else { "TCP" },
        config.direction,
        config.parallel,
        result.seconds,
    )
}

/// After TEST_END: lets this end's receivers take in everything the client
/// says it sent (TCP bytes, UDP datagrams), lets the senders finish their
/// last write, then stops the streams and summarises.
fn settle(
    side: LocalSide,
    client: &iperf3::Results,
    config: &TestConfig,
    tcp_handles: &[Option<TcpStream>],
    events: &Receiver<Event>,
    intervals: &mut Vec<Vec<StreamInterval>>,
) -> SideResult {
    let udp = config.protocol == Protocol::Udp;
    // linkperf id = creation index; the client's stream ids say which is which.
    let expected: HashMap<u32, u64> = client
        .streams
        .iter()
        .filter_map(|s| {
            let index = iperf3::stream_index(s.id)? as u32;
            Some((index, if udp { s.packets } else { s.bytes }))
        })
        .collect();
    if udp {
        let totals: Vec<(u32, u64)> = side
            .progress()
            .iter()
            .filter(|p| p.role == Role::Receiver)
            .filter_map(|p| expected.get(&p.id).map(|n| (p.id, *n)))
            .collect();
        side.peer_senders_done(&totals);
    }
    // With -O the client's counts exclude the warm-up: wait for quiet instead.
    let exact = config.omit_s == 0.0;
    let deadline = Instant::now()
        + if udp {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(3)
        };
    let mut last_total = u64::MAX;
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline {
        let progress = side.progress();
        let receivers_done = progress
            .iter()
            .filter(|p| p.role == Role::Receiver)
            .all(|p| {
                if p.finished {
                    return true;
                }
                match (exact, expected.get(&p.id)) {
                    (true, Some(&want)) if udp => p.packets >= want,
                    (true, Some(&want)) => p.bytes >= want,
                    _ => false,
                }
            });
        let total: u64 = progress.iter().map(|p| p.bytes).sum();
        if total != last_total {
            last_total = total;
            quiet_since = Instant::now();
        }
        let quiet = !exact && quiet_since.elapsed() > Duration::from_millis(100);
        let senders_done = progress.iter().zip(tcp_handles).all(|(p, h)| {
            p.role == Role::Receiver
                || p.finished
                || h.as_ref().is_some_and(super::tcp_sender_drained)
        });
        if (receivers_done || quiet) && senders_done {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    side.abort();
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        match events.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Side(SideEvent::AllDone)) => break,
            Ok(Event::Side(SideEvent::Interval(v))) => intervals.push(v),
            _ => {}
        }
    }
    side.finish()
}

fn bind_udp_listener(addr: SocketAddr, config: &TestConfig) -> Result<UdpSocket, String> {
    let domain = if addr.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let sock = Socket::new(domain, Type::DGRAM, None).map_err(|e| format!("UDP socket: {e}"))?;
    sock.set_reuse_address(true)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    if config.rcvbuf.is_none() {
        let _ = sock.set_recv_buffer_size(4 * 1024 * 1024);
    }
    sockopt::apply_buffers(&sock, config);
    sockopt::apply_udp(&sock, config, addr.is_ipv6())?;
    sock.bind(&addr.into())
        .map_err(|e| format!("cannot bind UDP to {addr}: {e}"))?;
    Ok(sock.into())
}

/// The server's part of the test in iperf3's text layout (--get-server-output).
fn server_output(
    config: &TestConfig,
    peer: &SocketAddr,
    connected: &[String],
    intervals: &[Vec<StreamInterval>],
    result: &SideResult,
) -> String {
    let udp = config.protocol == Protocol::Udp;
    let mut out = format!(
        "Accepted connection from {}, port {}\n",
        canonical(peer.ip()),
        peer.port()
    );
    for c in connected {
        out.push_str(c);
    }
    let head = if udp {
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
    } else {
        "[ ID] Interval           Transfer     Bitrate\n"
    };
    let line = |id: u32,
                start: f64,
                end: f64,
                bytes: u64,
                u: Option<&linkperf_proto::results::UdpStats>,
                role: &str| {
        let secs = (end - start).max(1e-9);
        let mut l = format!(
            "[{:>3}] {:>6.2}-{:<6.2} sec  {}  {}",
            id + 5,
            start,
            end,
            iperf3_bytes(bytes as f64),
            iperf3_rate(bytes as f64 * 8.0 / secs)
        );
        if let Some(u) = u {
            let total = u.packets + u.lost_packets;
            l.push_str(&format!(
                "  {:.3} ms  {}/{} ({:.2}%)",
                u.jitter_ms,
                u.lost_packets,
                total,
                if total > 0 {
                    100.0 * u.lost_packets as f64 / total as f64
                } else {
                    0.0
                }
            ));
        }
        format!("{l}  {role}\n")
    };
    out.push_str(head);
    for iv in intervals {
        for s in iv {
            out.push_str(&line(
                s.id,
                s.start,
                s.end,
                s.bytes,
                s.udp.as_ref(),
                if s.omitted { "(omitted)" } else { "" },
            ));
        }
    }
    out.push_str("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    out.push_str(head);
    for s in &result.streams {
        let role = if s.role == Role::Sender {
            "sender"
        } else {
            "receiver"
        };
        out.push_str(&line(s.id, 0.0, s.seconds, s.bytes, s.udp.as_ref(), role));
    }
    out
}

/// Control events into this session's event type.
fn control_event(e: super::ControlEvent) -> Event {
    match e {
        super::ControlEvent::Item(i) => Event::Control(i),
        super::ControlEvent::Lost(why) => Event::Lost(why),
    }
}
