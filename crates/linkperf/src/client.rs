//! `linkperf client`: runs one test against a server and builds the report.

use crate::control::{Control, Incoming};
use crate::data;
use crate::report::{self, IntervalReport, Report, Sides, StartInfo, StreamSockets, TestInfo};
use linkperf_engine::{facts, DataSocket, EventSink, LocalSide, SideEvent, StreamPlan};
use linkperf_proto::results::{HostFacts, Role, SideResult, StreamInterval};
use linkperf_proto::session::ClientSession;
use linkperf_proto::{
    ClientMessage, DataHello, Direction, Preamble, Protocol, ServerMessage, TestConfig,
    PROTOCOL_VERSION,
};
use socket2::{Domain, Socket, Type};
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    pub host: String,
    pub port: u16,
    pub bind: Option<IpAddr>,
    /// First local port of the data connections (stream i uses cport + i).
    pub cport: Option<u16>,
    /// 4 or 6 to force an address family.
    pub family: Option<u8>,
    pub config: TestConfig,
    /// The user says both clocks are synchronised (PTP, NTP): report one-way delay.
    pub clocks_synchronised: bool,
}

/// A failed run: one line for the user and the exit code (2 usage, 1 run).
#[derive(Debug, Clone)]
pub struct ClientError {
    pub message: String,
    pub exit_code: i32,
}

fn fail(message: impl Into<String>) -> ClientError {
    ClientError {
        message: message.into(),
        exit_code: 1,
    }
}

// A few events per interval: moving them by value is cheaper than boxing.
#[allow(clippy::large_enum_variant)]
enum Event {
    Server(Incoming<ServerMessage>),
    Side(SideEvent),
}

/// Resolves the server address, honouring -4/-6.
pub fn resolve(host: &str, port: u16, family: Option<u8>) -> Result<SocketAddr, ClientError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|_| fail(format!("cannot resolve host '{host}'")))?
        .collect();
    addrs
        .iter()
        .find(|a| match family {
            Some(4) => a.is_ipv4(),
            Some(6) => a.is_ipv6(),
            _ => true,
        })
        .copied()
        .ok_or_else(|| {
            fail(format!(
                "host '{host}' has no IPv{} address",
                family.unwrap_or(4)
            ))
        })
}

fn connect_error(addr: SocketAddr, e: std::io::Error) -> ClientError {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => fail(format!(
            "connection refused by {addr}: is `linkperf server` running there (port {})?",
            addr.port()
        )),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => fail(format!(
            "no answer from {addr} within 5 s: host down or port filtered"
        )),
        _ => fail(format!("cannot connect to {addr}: {e}")),
    }
}

/// A TCP socket for `server`'s address family, bound to `bind` if given.
pub(crate) fn tcp_socket(
    server: SocketAddr,
    bind: Option<SocketAddr>,
) -> Result<Socket, ClientError> {
    let domain = if server.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let sock = Socket::new(domain, Type::STREAM, None).map_err(|e| fail(format!("socket: {e}")))?;
    if let Some(b) = bind {
        sock.set_reuse_address(true).ok();
        sock.bind(&b.into())
            .map_err(|e| fail(format!("cannot bind to {b}: {e}")))?;
    }
    Ok(sock)
}

fn local_bind(options: &ClientOptions, server: SocketAddr, port: u16) -> Option<SocketAddr> {
    if options.bind.is_none() && port == 0 {
        return None;
    }
    let ip = options.bind.unwrap_or(if server.is_ipv6() {
        IpAddr::from([0u16; 8])
    } else {
        IpAddr::from([0u8; 4])
    });
    Some(SocketAddr::new(ip, port))
}

fn wait_message(
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

/// Collects each end's interval lines and emits them paired, in order.
struct IntervalMerger {
    local: Vec<Vec<StreamInterval>>,
    remote: Vec<Vec<StreamInterval>>,
    emitted: usize,
    lines: Vec<IntervalReport>,
}

impl IntervalMerger {
    fn drain(
        &mut self,
        config: &TestConfig,
        all: bool,
        on_interval: &mut dyn FnMut(&IntervalReport),
    ) {
        loop {
            let k = self.emitted;
            let (l, r) = (self.local.get(k), self.remote.get(k));
            let ready = (l.is_some() && r.is_some()) || (all && (l.is_some() || r.is_some()));
            if !ready {
                return;
            }
            let line =
                report::merge_interval(config, l.map(|v| v.as_slice()), r.map(|v| v.as_slice()));
            on_interval(&line);
            self.lines.push(line);
            self.emitted += 1;
        }
    }
}

/// Runs one test. `on_interval` sees each interval as soon as both ends
/// reported it; `cancel` (Ctrl-C) ends the test early with a partial result.
pub fn run(
    options: &ClientOptions,
    on_interval: &mut dyn FnMut(&IntervalReport),
    cancel: Option<&AtomicBool>,
) -> Result<Report, ClientError> {
    let config = &options.config;
    config.validate().map_err(|m| ClientError {
        message: m,
        exit_code: 2,
    })?;
    if let Some(cc) = &config.congestion {
        if config.direction.client_sends()
            && !facts::available_congestion_controls()
                .iter()
                .any(|c| c == cc)
        {
            return Err(ClientError {
                message: linkperf_engine::sockopt::congestion_unavailable(cc),
                exit_code: 2,
            });
        }
    }
    let server = resolve(&options.host, options.port, options.family)?;
    let sock = tcp_socket(server, local_bind(options, server, 0))?;
    sock.connect_timeout(&server.into(), Duration::from_secs(5))
        .map_err(|e| connect_error(server, e))?;
    let mut control_stream: TcpStream = sock.into();
    linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(&control_stream));
    control_stream.set_nodelay(true).ok();
    control_stream
        .write_all(&Preamble::Control.bytes())
        .map_err(|e| fail(format!("control connection: {e}")))?;
    let local_ip = control_stream
        .local_addr()
        .map_err(|e| fail(e.to_string()))?
        .ip();
    let (tx, events) = mpsc::channel();
    let control = Control::start(
        control_stream,
        ClientSession::new(),
        tx.clone(),
        Event::Server,
    )
    .map_err(|e| fail(e.to_string()))?;
    let result = drive(
        options,
        server,
        local_ip,
        &control,
        tx,
        &events,
        on_interval,
        cancel,
    );
    control.shutdown();
    result
}

#[allow(clippy::too_many_arguments)]
fn drive(
    options: &ClientOptions,
    server: SocketAddr,
    local_ip: IpAddr,
    control: &Arc<Control<ClientSession>>,
    tx: mpsc::Sender<Event>,
    events: &Receiver<Event>,
    on_interval: &mut dyn FnMut(&IntervalReport),
    cancel: Option<&AtomicBool>,
) -> Result<Report, ClientError> {
    let config = &options.config;
    control
        .send(&ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: crate::SOFTWARE.into(),
        })
        .map_err(fail)?;
    let remote_facts: HostFacts = match wait_message(events, Duration::from_secs(10), "greeting")? {
        ServerMessage::Welcome { facts, .. } => facts,
        other => {
            return Err(fail(format!(
                "unexpected answer from the server: {other:?}"
            )))
        }
    };
    control
        .send(&ClientMessage::Setup {
            config: config.clone(),
        })
        .map_err(fail)?;
    let (cookie, endpoints, mut warnings, data_port) =
        match wait_message(events, Duration::from_secs(15), "test set-up")? {
            ServerMessage::Ready {
                cookie,
                streams,
                warnings,
                data_port,
            } => (cookie, streams, warnings, data_port),
            other => {
                return Err(fail(format!(
                    "unexpected answer from the server: {other:?}"
                )))
            }
        };

    // Open the data connections.
    let data_addr = SocketAddr::new(server.ip(), data_port.unwrap_or(server.port()));
    let mut plans = Vec::new();
    for (index, (id, role)) in data::stream_roles(config, false).into_iter().enumerate() {
        let port = options
            .cport
            .map(|p| p.saturating_add(index as u16))
            .unwrap_or(0);
        let bind = local_bind(options, server, port);
        let socket = match config.protocol {
            Protocol::Tcp => {
                let sock = tcp_socket(server, bind)?;
                warnings.extend(linkperf_engine::sockopt::apply_buffers(&sock, config));
                linkperf_engine::sockopt::apply_tcp(&sock, config).map_err(|m| ClientError {
                    message: m,
                    exit_code: 2,
                })?;
                sock.connect_timeout(&data_addr.into(), Duration::from_secs(5))
                    .map_err(|e| connect_error(data_addr, e))?;
                let mut stream: TcpStream = sock.into();
                let mut hello = Preamble::Data.bytes().to_vec();
                hello.extend_from_slice(
                    &DataHello {
                        cookie,
                        stream_id: id,
                    }
                    .encode(),
                );
                stream
                    .write_all(&hello)
                    .map_err(|e| fail(format!("data connection {id}: {e}")))?;
                DataSocket::Tcp(stream)
            }
            Protocol::Udp => {
                let port = endpoints
                    .iter()
                    .find(|e| e.id == id)
                    .and_then(|e| e.udp_port)
                    .ok_or_else(|| fail(format!("the server gave no UDP port for stream {id}")))?;
                let local = bind.unwrap_or_else(|| {
                    SocketAddr::new(
                        if server.is_ipv6() {
                            IpAddr::from([0u16; 8])
                        } else {
                            IpAddr::from([0u8; 4])
                        },
                        0,
                    )
                });
                let sock = data::connect_udp(
                    local,
                    SocketAddr::new(server.ip(), port),
                    config,
                    cookie,
                    id,
                )
                .map_err(fail)?;
                DataSocket::Udp(sock)
            }
        };
        plans.push(StreamPlan { id, role, socket });
    }
    let same_clock = data::same_host(server.ip(), local_ip);
    let clock = if same_clock {
        "shared"
    } else if options.clocks_synchronised {
        "synchronised"
    } else {
        "independent"
    };
    let mut side = LocalSide::new(
        config.clone(),
        plans,
        same_clock || options.clocks_synchronised,
        vec![],
    );
    let local_sockets = side.socket_facts().to_vec();
    let roles = data::stream_roles(config, false);

    control
        .send(&ClientMessage::Start {
            start_at_unix_ms: config.start_at_unix_ms,
        })
        .map_err(fail)?;
    let started_ms = match wait_message(events, Duration::from_secs(15), "start")? {
        ServerMessage::Started { start_unix_ms } => start_unix_ms,
        other => {
            return Err(fail(format!(
                "unexpected answer from the server: {other:?}"
            )))
        }
    };
    let (at, _) = data::start_instant(config.start_at_unix_ms);
    let sink: EventSink = Arc::new(move |e| {
        let _ = tx.send(Event::Side(e));
    });
    side.start(at, sink);

    let mut side = Some(side);
    let mut local: Option<SideResult> = None;
    let mut remote: Option<SideResult> = None;
    let mut merger = IntervalMerger {
        local: vec![],
        remote: vec![],
        emitted: 0,
        lines: vec![],
    };
    let mut interrupted = false;
    let mut errors = Vec::new();
    let mut lost: Option<String> = None;
    while local.is_none() || remote.is_none() {
        if let (Some(flag), false) = (cancel, interrupted) {
            if flag.load(Ordering::Relaxed) {
                interrupted = true;
                if let Some(s) = &side {
                    s.stop_senders();
                }
                let _ = control.send(&ClientMessage::Cancel {
                    reason: "interrupted".into(),
                });
            }
        }
        let event = match events.recv_timeout(Duration::from_millis(100)) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match event {
            Event::Side(SideEvent::Interval(v)) => {
                merger.local.push(v);
                merger.drain(config, false, on_interval);
            }
            Event::Side(SideEvent::SendersDone(packets)) => {
                let _ = control.send(&ClientMessage::SendersDone { packets });
            }
            Event::Side(SideEvent::AllDone) => {
                if let Some(s) = side.take() {
                    let result = s.finish();
                    let _ = control.send(&ClientMessage::Finished {
                        result: result.clone(),
                    });
                    local = Some(result);
                }
            }
            Event::Server(Incoming::Message(ServerMessage::Interval { streams })) => {
                merger.remote.push(streams);
                merger.drain(config, false, on_interval);
            }
            Event::Server(Incoming::Message(ServerMessage::SendersDone { packets })) => {
                if let Some(s) = &side {
                    s.peer_senders_done(&packets);
                }
            }
            Event::Server(Incoming::Message(ServerMessage::Finished { result })) => {
                remote = Some(result)
            }
            Event::Server(Incoming::Message(ServerMessage::Error { message })) => {
                errors.push(format!("server: {message}"));
                lost = Some(message);
            }
            Event::Server(Incoming::Message(_)) => {}
            Event::Server(Incoming::Lost(why)) => lost = Some(why),
        }
        if let Some(why) = lost.take() {
            // The server is gone: keep what this end measured.
            if let Some(s) = side.take() {
                s.abort();
                local = Some(s.finish());
            }
            errors.push(format!("the server went away mid-test: {why}"));
            break;
        }
    }
    merger.drain(config, true, on_interval);
    let local = local.unwrap_or_default();
    let remote = remote.unwrap_or_default();
    for s in local.streams.iter().chain(remote.streams.iter()) {
        if let Some(e) = &s.error {
            errors.push(format!("stream {} ({:?}): {e}", s.id, s.role));
        }
    }
    warnings.extend(local.warnings.iter().cloned());
    warnings.extend(remote.warnings.iter().map(|w| format!("server: {w}")));
    let sides = Sides {
        config,
        local: &local,
        remote: &remote,
    };
    let summary = sides.summarise(config.direction != Direction::Reverse);
    let summary_reverse = (config.direction == Direction::Bidir).then(|| sides.summarise(false));
    let remote_sockets = |id: u32| {
        remote
            .streams
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.socket.clone())
    };
    let streams = roles
        .iter()
        .zip(local_sockets)
        .map(|((id, role), local)| StreamSockets {
            id: *id,
            direction: report::direction_name(*role == Role::Sender),
            local,
            remote: remote_sockets(*id),
        })
        .collect();
    Ok(Report {
        schema: report::SCHEMA,
        software: crate::SOFTWARE.into(),
        test: TestInfo {
            server: options.host.clone(),
            port: server.port(),
            config: config.clone(),
        },
        start: StartInfo {
            timestamp_unix_ms: started_ms,
            local: facts::collect(crate::SOFTWARE),
            remote: remote_facts,
            clock: clock.into(),
            streams,
        },
        intervals: merger.lines,
        summary,
        summary_reverse,
        warnings,
        errors,
        interrupted,
    })
}

/// Connects to a server and exchanges greetings, then leaves: is it up, and
/// does it speak this protocol version?
pub fn greet(host: &str, port: u16) -> Result<(), ClientError> {
    let addr = resolve(host, port, None)?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(3))
        .map_err(|e| connect_error(addr, e))?;
    stream
        .write_all(&Preamble::Control.bytes())
        .map_err(|e| fail(e.to_string()))?;
    let (tx, events) = mpsc::channel();
    let control = Control::start(stream, ClientSession::new(), tx, Event::Server)
        .map_err(|e| fail(e.to_string()))?;
    control
        .send(&ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: crate::SOFTWARE.into(),
        })
        .map_err(fail)?;
    let result = wait_message(&events, Duration::from_secs(5), "greeting").map(|_| ());
    let _ = control.send(&ClientMessage::Cancel {
        reason: "probe".into(),
    });
    control.shutdown();
    result
}

/// Third-party mode: asks the agent at `from` (host, port) to run `config`
/// towards `target`; `on_interval` sees each relayed interval line. A set
/// `cancel` flag asks the agent to stop the test early; its partial report
/// still comes back.
pub fn run_third_party(
    from: (&str, u16),
    target: (&str, u16),
    config: &TestConfig,
    family: Option<u8>,
    on_interval: &mut dyn FnMut(&serde_json::Value),
    cancel: Option<&AtomicBool>,
) -> Result<serde_json::Value, ClientError> {
    let agent = resolve(from.0, from.1, family)?;
    let mut stream = TcpStream::connect_timeout(&agent, Duration::from_secs(5))
        .map_err(|e| connect_error(agent, e))?;
    linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(&stream));
    stream
        .write_all(&Preamble::Control.bytes())
        .map_err(|e| fail(e.to_string()))?;
    let (tx, events) = mpsc::channel();
    let control = Control::start(stream, ClientSession::new(), tx, Event::Server)
        .map_err(|e| fail(e.to_string()))?;
    let result = relay_loop(&control, &events, target, config, on_interval, cancel);
    control.shutdown();
    result
}

fn relay_loop(
    control: &Arc<Control<ClientSession>>,
    events: &Receiver<Event>,
    target: (&str, u16),
    config: &TestConfig,
    on_interval: &mut dyn FnMut(&serde_json::Value),
    cancel: Option<&AtomicBool>,
) -> Result<serde_json::Value, ClientError> {
    control
        .send(&ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: crate::SOFTWARE.into(),
        })
        .map_err(fail)?;
    wait_message(events, Duration::from_secs(10), "greeting")?;
    control
        .send(&ClientMessage::ThirdParty {
            target: target.0.to_string(),
            port: target.1,
            config: config.clone(),
        })
        .map_err(fail)?;
    let lead = config
        .start_at_unix_ms
        .map(|at| Duration::from_millis(at.saturating_sub(unix_ms())))
        .unwrap_or_default();
    let limit =
        lead + Duration::from_secs_f64(config.duration_s.min(86_400.0)) + Duration::from_secs(60);
    let deadline = Instant::now() + limit;
    let mut cancelled = false;
    loop {
        if let (Some(flag), false) = (cancel, cancelled) {
            if flag.load(Ordering::Relaxed) {
                cancelled = true;
                let _ = control.send(&ClientMessage::Cancel {
                    reason: "interrupted".into(),
                });
            }
        }
        match events.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Server(Incoming::Message(ServerMessage::RelayInterval { interval }))) => {
                on_interval(&interval)
            }
            Ok(Event::Server(Incoming::Message(ServerMessage::RelayReport { report }))) => {
                return Ok(report)
            }
            Ok(Event::Server(Incoming::Message(ServerMessage::Error { message }))) => {
                return Err(fail(message))
            }
            Ok(Event::Server(Incoming::Message(other))) => {
                return Err(fail(format!(
                    "unexpected message from the agent: {other:?}"
                )))
            }
            Ok(Event::Server(Incoming::Lost(why))) => {
                return Err(fail(format!("lost the agent: {why}")))
            }
            Ok(Event::Side(_)) => {}
            Err(RecvTimeoutError::Timeout) => {
                if Instant::now() > deadline {
                    return Err(fail("the agent's test overran its duration by a minute"));
                }
            }
            Err(RecvTimeoutError::Disconnected) => return Err(fail("lost the agent")),
        }
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
