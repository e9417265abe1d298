//! `linkperf server`: serves many clients at once. Every control connection
//! gets its own thread and its own data connections; there is no global busy
//! state. A client that vanishes or misbehaves ends only its own session.

use crate::control::{Control, Incoming};
use crate::{client, data};
use linkperf_engine::{facts, EventSink, LocalSide, SideEvent, StreamPlan};
use linkperf_proto::messages::StreamEndpoint;
use linkperf_proto::results::Role;
use linkperf_proto::session::ServerSession;
use linkperf_proto::{
    ClientMessage, DataHello, Preamble, Protocol, ServerMessage, TestConfig, PROTOCOL_VERSION,
};
use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub port: u16,
    pub bind: Option<IpAddr>,
    /// Serve one test, then exit.
    pub once: bool,
    /// Accept third-party requests (run a test towards another server).
    pub allow_third_party: bool,
    /// Print one line per test to stdout.
    pub verbose: bool,
    /// Also accept iperf3 clients on this port (they are recognised on `port` too).
    pub iperf3_port: Option<u16>,
    /// iperf3 clients one at a time: refuse a second one as busy, as iperf3 does.
    pub exclusive: bool,
    /// Ports for the listeners of tests that set handshake options (buffers,
    /// MSS); any free port when `None`. For firewalls.
    pub data_ports: Option<RangeInclusive<u16>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            port: linkperf_proto::DEFAULT_PORT,
            bind: None,
            once: false,
            allow_third_party: false,
            verbose: true,
            iperf3_port: None,
            exclusive: false,
            data_ports: None,
        }
    }
}

enum Event {
    Client(Incoming<ClientMessage>),
    Data(u32, TcpStream),
    Side(SideEvent),
}

type Registry = Arc<Mutex<HashMap<u64, Sender<Event>>>>;

pub struct Server {
    listener: TcpListener,
    options: ServerOptions,
    registry: Registry,
    /// The extra port for iperf3 clients (`--iperf3-port`).
    iperf3_listener: Option<TcpListener>,
}

/// How long a client may take for each step before the test starts.
const SETUP_TIMEOUT: Duration = Duration::from_secs(15);

impl Server {
    /// Binds the listening socket: dual-stack `[::]` unless an address is given.
    pub fn bind(options: ServerOptions) -> Result<Server, String> {
        let listener = match options.bind {
            Some(ip) => TcpListener::bind(SocketAddr::new(ip, options.port)),
            None => bind_dual_stack(options.port),
        }
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => format!(
                "port {} is already in use; stop the other server or pick another with -p",
                options.port
            ),
            std::io::ErrorKind::AddrNotAvailable => format!(
                "cannot bind to {}: no such local address",
                options.bind.map(|i| i.to_string()).unwrap_or_default()
            ),
            _ => format!("cannot listen on port {}: {e}", options.port),
        })?;
        let iperf3_listener = match options.iperf3_port {
            Some(port) => Some(
                match options.bind {
                    Some(ip) => TcpListener::bind(SocketAddr::new(ip, port)),
                    None => bind_dual_stack(port),
                }
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::AddrInUse => format!(
                        "--iperf3-port {port} is already in use (an iperf3 server?); stop it or pick another port"
                    ),
                    _ => format!("cannot listen on --iperf3-port {port}: {e}"),
                })?,
            ),
            None => None,
        };
        Ok(Server {
            listener,
            options,
            registry: Arc::default(),
            iperf3_listener,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    /// Accepts connections until the process ends (or after one test with `--once`).
    pub fn run(self) {
        let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let wake = self.local_addr();
        if let Some(extra) = self.iperf3_listener {
            // Connections on the iperf3 port are handled like any other; a
            // finished --once test wakes the main loop below.
            let registry = self.registry.clone();
            let options = self.options.clone();
            let finished = finished.clone();
            let _ = std::thread::Builder::new()
                .name("lp-iperf3-accept".into())
                .spawn(move || {
                    for conn in extra.incoming() {
                        let Ok(stream) = conn else { continue };
                        let accepted = crate::iperf3::server::accept_ticket();
                        let registry = registry.clone();
                        let options = options.clone();
                        let finished = finished.clone();
                        let _ =
                            std::thread::Builder::new()
                                .name("lp-conn".into())
                                .spawn(move || {
                                    if handle_connection(stream, accepted, registry, &options)
                                        && options.once
                                    {
                                        finished.store(true, Ordering::Release);
                                        let _ = TcpStream::connect_timeout(
                                            &loopback_of(wake),
                                            Duration::from_secs(1),
                                        );
                                    }
                                });
                    }
                });
        }
        for conn in self.listener.incoming() {
            if finished.load(Ordering::Acquire) {
                return;
            }
            let Ok(stream) = conn else { continue };
            let accepted = crate::iperf3::server::accept_ticket();
            let registry = self.registry.clone();
            let options = self.options.clone();
            let finished = finished.clone();
            let _ = std::thread::Builder::new()
                .name("lp-conn".into())
                .spawn(move || {
                    if handle_connection(stream, accepted, registry, &options) && options.once {
                        finished.store(true, Ordering::Release);
                        // Wake the accept loop so it sees the flag.
                        let mut addr = wake;
                        if addr.ip().is_unspecified() {
                            addr.set_ip(if addr.is_ipv6() {
                                IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1])
                            } else {
                                IpAddr::from([127, 0, 0, 1])
                            });
                        }
                        let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
                    }
                });
        }
    }

    /// Runs the server on a background thread (for `linkperf demo` and tests).
    pub fn spawn(self) -> SocketAddr {
        let addr = self.local_addr();
        std::thread::spawn(move || self.run());
        addr
    }
}

fn bind_dual_stack(port: u16) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let v6 = (|| {
        let s = Socket::new(Domain::IPV6, Type::STREAM, None)?;
        s.set_only_v6(false)?;
        s.set_reuse_address(true)?;
        s.bind(&SocketAddr::from(([0u16; 8], port)).into())?;
        s.listen(1024)?;
        Ok::<_, std::io::Error>(TcpListener::from(s))
    })();
    match v6 {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(e),
        Err(_) => {
            let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
            s.set_reuse_address(true)?;
            s.bind(&SocketAddr::from(([0, 0, 0, 0], port)).into())?;
            s.listen(1024)?;
            Ok(TcpListener::from(s))
        }
    }
}

/// Returns true when a control session ran to its end (for `--once`).
/// `accepted` is the connection's place in accept order (see
/// [`crate::iperf3::server::accept_ticket`]).
fn handle_connection(
    mut stream: TcpStream,
    accepted: u64,
    registry: Registry,
    options: &ServerOptions,
) -> bool {
    let _ = stream.set_read_timeout(Some(SETUP_TIMEOUT));
    let mut preamble = [0u8; Preamble::LEN];
    if stream.read_exact(&mut preamble).is_err() {
        return false;
    }
    match Preamble::parse(&preamble) {
        Some(Preamble::Control) => {
            let _ = stream.set_read_timeout(None);
            let peer = stream.peer_addr().ok();
            match ControlSession::run(stream, registry, options) {
                Ok(line) => {
                    if options.verbose {
                        println!("{}", line);
                    }
                }
                Err(why) => {
                    if options.verbose {
                        eprintln!(
                            "client {}: {why}",
                            peer.map(|p| p.to_string()).unwrap_or_else(|| "?".into())
                        );
                    }
                }
            }
            true
        }
        Some(Preamble::Data) => {
            let mut hello = [0u8; DataHello::LEN];
            if stream.read_exact(&mut hello).is_err() {
                return false;
            }
            let hello = DataHello::decode(&hello);
            let tx = registry
                .lock()
                .ok()
                .and_then(|r| r.get(&hello.cookie).cloned());
            if let Some(tx) = tx {
                let _ = stream.set_read_timeout(None);
                let _ = tx.send(Event::Data(hello.stream_id, stream));
            }
            false
        }
        Some(Preamble::Rr) => crate::rr::server::handle(stream, options),
        None => crate::iperf3::server::serve(
            stream,
            preamble,
            accepted,
            options.exclusive,
            options.verbose,
        ),
    }
}

/// Accepts one test's data connections on the listener made for it, until
/// every stream has arrived or the set-up deadline passes. Connections that
/// do not carry the test's cookie are closed; each waits at most until the
/// deadline for its hello, so a silent connection cannot hold the test.
fn spawn_data_acceptor(
    listener: TcpListener,
    cookie: u64,
    streams: usize,
    deadline: Instant,
    tx: Sender<Event>,
) {
    let accept = move || {
        let mut matched = 0;
        while matched < streams {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            // SO_RCVTIMEO bounds accept(2) as well as reads.
            let _ = socket2::SockRef::from(&listener).set_read_timeout(Some(left));
            let mut stream = match listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let _ = stream.set_read_timeout(Some(left.min(Duration::from_secs(5))));
            let (mut preamble, mut hello) = ([0u8; Preamble::LEN], [0u8; DataHello::LEN]);
            if stream.read_exact(&mut preamble).is_err()
                || Preamble::parse(&preamble) != Some(Preamble::Data)
                || stream.read_exact(&mut hello).is_err()
            {
                continue;
            }
            let hello = DataHello::decode(&hello);
            if hello.cookie != cookie {
                continue;
            }
            let _ = stream.set_read_timeout(None);
            if tx.send(Event::Data(hello.stream_id, stream)).is_err() {
                return;
            }
            matched += 1;
        }
    };
    let _ = std::thread::Builder::new()
        .name("lp-data-accept".into())
        .spawn(accept);
}

/// The address to wake a listener bound to `addr` (loopback for a wildcard).
fn loopback_of(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv6() {
            IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1])
        } else {
            IpAddr::from([127, 0, 0, 1])
        });
    }
    addr
}

/// A random-enough session cookie: it only has to be unguessable in practice
/// for a data connection to find its session, not cryptographically strong.
fn new_cookie() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = t
        ^ (std::process::id() as u64).rotate_left(32)
        ^ COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

struct ControlSession {
    control: Arc<Control<ServerSession>>,
    events: Receiver<Event>,
    tx: Sender<Event>,
    registry: Registry,
    cookie: Option<u64>,
    peer: SocketAddr,
}

impl Drop for ControlSession {
    fn drop(&mut self) {
        if let Some(c) = self.cookie {
            if let Ok(mut r) = self.registry.lock() {
                r.remove(&c);
            }
        }
        self.control.shutdown();
    }
}

impl ControlSession {
    fn run(
        stream: TcpStream,
        registry: Registry,
        options: &ServerOptions,
    ) -> Result<String, String> {
        linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(&stream));
        let peer = stream.peer_addr().map_err(|e| e.to_string())?;
        let local = stream.local_addr().map_err(|e| e.to_string())?;
        let (tx, events) = mpsc::channel();
        let control = Control::start(stream, ServerSession::new(), tx.clone(), Event::Client)
            .map_err(|e| e.to_string())?;
        let mut session = ControlSession {
            control,
            events,
            tx,
            registry,
            cookie: None,
            peer,
        };
        session.serve(local, options)
    }

    fn next_message(&self, timeout: Duration) -> Result<ClientMessage, String> {
        loop {
            match self.events.recv_timeout(timeout) {
                Ok(Event::Client(Incoming::Message(m))) => return Ok(m),
                Ok(Event::Client(Incoming::Lost(why))) => return Err(why),
                Ok(_) => {}
                Err(_) => return Err("client timed out during set-up".into()),
            }
        }
    }

    fn refuse(&self, message: String) -> Result<String, String> {
        let _ = self.control.send(&ServerMessage::Error {
            message: message.clone(),
        });
        Err(format!("refused: {message}"))
    }

    fn serve(&mut self, local: SocketAddr, options: &ServerOptions) -> Result<String, String> {
        match self.next_message(SETUP_TIMEOUT) {
            Ok(ClientMessage::Hello { .. }) => {}
            Ok(_) => return Err("expected hello".into()),
            Err(why) => {
                if why.contains("version mismatch") {
                    let _ = self.control.send(&ServerMessage::Error {
                        message: why.clone(),
                    });
                }
                return Err(why);
            }
        }
        self.control.send(&ServerMessage::Welcome {
            version: PROTOCOL_VERSION,
            software: crate::SOFTWARE.into(),
            facts: facts::collect(crate::SOFTWARE),
        })?;
        match self.next_message(SETUP_TIMEOUT)? {
            ClientMessage::Setup { config } => self.run_test(config, local, options),
            ClientMessage::ThirdParty {
                target,
                port,
                config,
            } => {
                if !options.allow_third_party {
                    return self.refuse(
                        "this server does not run third-party tests; start it with --allow-third-party".into(),
                    );
                }
                self.relay(target, port, config)
            }
            // A controller checking that this agent is up (campaign start).
            ClientMessage::Cancel { .. } => Ok(format!("client {}: greeted and left", self.peer)),
            _ => Err("expected setup".into()),
        }
    }

    /// Third-party mode: run the test as a client towards `target`, relaying it.
    fn relay(&mut self, target: String, port: u16, config: TestConfig) -> Result<String, String> {
        let control = self.control.clone();
        let options = client::ClientOptions {
            host: target.clone(),
            port,
            config,
            ..Default::default()
        };
        // The test runs on its own thread so this one can watch the controller:
        // its Cancel, or its disappearance, stops the flow within a second.
        let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cancel.clone();
        let relay_control = control.clone();
        let test = std::thread::Builder::new()
            .name("lp-relay".into())
            .spawn(move || {
                let mut on_interval = |i: &crate::report::IntervalReport| {
                    if let Ok(v) = serde_json::to_value(i) {
                        let _ = relay_control.send(&ServerMessage::RelayInterval { interval: v });
                    }
                };
                client::run(&options, &mut on_interval, Some(&flag))
            })
            .map_err(|e| format!("cannot start the third-party test: {e}"))?;
        let mut controller_gone = false;
        while !test.is_finished() {
            match self.events.recv_timeout(Duration::from_millis(100)) {
                Ok(Event::Client(Incoming::Message(ClientMessage::Cancel { .. }))) => {
                    cancel.store(true, Ordering::Relaxed);
                }
                Ok(Event::Client(Incoming::Lost(_))) => {
                    cancel.store(true, Ordering::Relaxed);
                    controller_gone = true;
                }
                _ => {}
            }
        }
        let outcome = test
            .join()
            .map_err(|_| "the third-party test thread failed".to_string())?;
        if controller_gone {
            return Err(format!(
                "controller {} went away; third-party test towards {target}:{port} stopped",
                self.peer
            ));
        }
        match outcome {
            Ok(report) => {
                let value = serde_json::to_value(&report).map_err(|e| e.to_string())?;
                self.control
                    .send(&ServerMessage::RelayReport { report: value })?;
                Ok(format!(
                    "third-party test for {} towards {target}:{port} done",
                    self.peer
                ))
            }
            Err(e) => self.refuse(format!(
                "third-party test towards {target}:{port} failed: {}",
                e.message
            )),
        }
    }

    fn run_test(
        &mut self,
        config: TestConfig,
        local: SocketAddr,
        options: &ServerOptions,
    ) -> Result<String, String> {
        if let Err(why) = config.validate() {
            return self.refuse(why);
        }
        if let Some(cc) = &config.congestion {
            if !facts::available_congestion_controls()
                .iter()
                .any(|c| c == cc)
            {
                return self.refuse(format!(
                    "server: {}",
                    linkperf_engine::sockopt::congestion_unavailable(cc)
                ));
            }
        }
        let cookie = new_cookie();
        self.cookie = Some(cookie);
        if let Ok(mut r) = self.registry.lock() {
            r.insert(cookie, self.tx.clone());
        }
        let roles = data::stream_roles(&config, true);
        let mut endpoints = Vec::new();
        // In id order: the client opens its UDP flows one after another in that order.
        let mut udp_sockets = Vec::new();
        for (id, _) in &roles {
            let udp_port = if config.protocol == Protocol::Udp {
                let sock =
                    data::bind_udp(SocketAddr::new(local.ip(), 0), &config).inspect_err(|e| {
                        let _ = self
                            .control
                            .send(&ServerMessage::Error { message: e.clone() });
                    })?;
                let port = sock.local_addr().map_err(|e| e.to_string())?.port();
                udp_sockets.push((*id, sock));
                Some(port)
            } else {
                None
            };
            endpoints.push(StreamEndpoint { id: *id, udp_port });
        }
        // Collect the data connections and the Start message, in any order.
        let deadline = Instant::now() + SETUP_TIMEOUT;
        let mut warnings = Vec::new();
        let mut data_port = None;
        if config.protocol == Protocol::Tcp && data::handshake_options_set(&config) {
            let streams = roles.len();
            let ports = options.data_ports.as_ref();
            let (listener, w) =
                match data::data_listener(local.ip(), ports, &config, streams as i32) {
                    Ok(made) => made,
                    Err(e) => return self.refuse(e),
                };
            warnings = w;
            data_port = Some(listener.local_addr().map_err(|e| e.to_string())?.port());
            spawn_data_acceptor(listener, cookie, streams, deadline, self.tx.clone());
        }
        self.control.send(&ServerMessage::Ready {
            cookie,
            streams: endpoints,
            warnings: vec![],
            data_port,
        })?;
        let mut plans = Vec::new();
        let mut start_at: Option<Option<u64>> = None;
        let mut tcp_pending: Vec<u32> = if config.protocol == Protocol::Tcp {
            roles.iter().map(|r| r.0).collect()
        } else {
            vec![]
        };
        for (id, sock) in udp_sockets {
            let role = roles
                .iter()
                .find(|r| r.0 == id)
                .map(|r| r.1)
                .unwrap_or(Role::Receiver);
            match data::accept_udp(&sock, cookie, id, deadline) {
                Ok(()) => plans.push(StreamPlan {
                    id,
                    role,
                    socket: linkperf_engine::DataSocket::Udp(sock),
                }),
                Err(e) => return self.refuse(e),
            }
        }
        while !tcp_pending.is_empty() || start_at.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Data(id, stream)) if tcp_pending.contains(&id) => {
                    tcp_pending.retain(|&p| p != id);
                    let role = roles
                        .iter()
                        .find(|r| r.0 == id)
                        .map(|r| r.1)
                        .unwrap_or(Role::Receiver);
                    if let Err(e) = data::prepare_accepted(&stream, &config) {
                        return self.refuse(e);
                    }
                    plans.push(StreamPlan {
                        id,
                        role,
                        socket: linkperf_engine::DataSocket::Tcp(stream),
                    });
                }
                Ok(Event::Data(..)) => {}
                Ok(Event::Client(Incoming::Message(ClientMessage::Start { start_at_unix_ms }))) => {
                    start_at = Some(start_at_unix_ms)
                }
                Ok(Event::Client(Incoming::Message(ClientMessage::Cancel { .. }))) => {
                    return Err("client cancelled before the start".into())
                }
                Ok(Event::Client(Incoming::Message(_))) => {
                    return Err("unexpected message before start".into())
                }
                Ok(Event::Client(Incoming::Lost(why))) => return Err(why),
                Ok(Event::Side(_)) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return self.refuse(format!(
                        "{} data connection(s) never arrived; is a firewall blocking port {}?",
                        tcp_pending.len(),
                        local.port()
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => return Err("internal channel closed".into()),
            }
        }
        if let Some(c) = self.cookie.take() {
            if let Ok(mut r) = self.registry.lock() {
                r.remove(&c);
            }
        }
        plans.sort_by_key(|p| p.id);
        let same_clock = data::same_host(self.peer.ip(), local.ip());
        let mut side = LocalSide::new(config.clone(), plans, same_clock, warnings);
        let (at, start_unix_ms) = data::start_instant(start_at.flatten());
        let tx = self.tx.clone();
        let sink: EventSink = Arc::new(move |e| {
            let _ = tx.send(Event::Side(e));
        });
        side.start(at, sink);
        self.control
            .send(&ServerMessage::Started { start_unix_ms })?;

        let mut side = Some(side);
        let mut local_result = None;
        let mut peer_finished = false;
        let watchdog =
            Duration::from_secs_f64(config.duration_s.min(86_400.0)) + Duration::from_secs(120);
        let started = Instant::now();
        while local_result.is_none() || !peer_finished {
            let event = match self.events.recv_timeout(Duration::from_secs(1)) {
                Ok(e) => e,
                Err(RecvTimeoutError::Timeout) => {
                    if config.bytes.is_none() && started.elapsed() > watchdog {
                        if let Some(s) = &side {
                            s.abort();
                        }
                        return Err("test overran its duration by two minutes; aborted".into());
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            match event {
                Event::Side(SideEvent::Interval(streams)) => {
                    let _ = self.control.send(&ServerMessage::Interval { streams });
                }
                Event::Side(SideEvent::SendersDone(packets)) => {
                    let _ = self.control.send(&ServerMessage::SendersDone { packets });
                }
                Event::Side(SideEvent::AllDone) => {
                    if let Some(s) = side.take() {
                        let result = s.finish();
                        let _ = self.control.send(&ServerMessage::Finished {
                            result: result.clone(),
                        });
                        local_result = Some(result);
                    }
                }
                Event::Client(Incoming::Message(ClientMessage::SendersDone { packets })) => {
                    if let Some(s) = &side {
                        s.peer_senders_done(&packets);
                    }
                }
                Event::Client(Incoming::Message(ClientMessage::Cancel { .. })) => {
                    if let Some(s) = &side {
                        s.stop_senders();
                    }
                }
                Event::Client(Incoming::Message(ClientMessage::Finished { .. })) => {
                    peer_finished = true
                }
                Event::Client(Incoming::Message(_)) => {}
                Event::Client(Incoming::Lost(why)) => {
                    if let Some(s) = side.take() {
                        s.abort();
                        let _ = s.finish();
                    }
                    if local_result.is_some() && peer_finished {
                        break;
                    }
                    return Err(format!("test aborted: {why}"));
                }
                Event::Data(..) => {}
            }
        }
        let result = local_result.unwrap_or_default();
        let received = result.bytes(Role::Receiver);
        let sent = result.bytes(Role::Sender);
        Ok(format!(
            "client {}: {} {:?} x{} {:.2} s: received {}, sent {}",
            self.peer,
            if config.protocol == Protocol::Udp {
                "UDP"
            } else {
                "TCP"
            },
            config.direction,
            config.parallel,
            result.seconds,
            linkperf_units::format_bytes(received as f64),
            linkperf_units::format_bytes(sent as f64),
        ))
    }
}
