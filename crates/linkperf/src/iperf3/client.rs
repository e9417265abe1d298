//! A linkperf client against a stock iperf3 server. The iperf3 server drives
//! the states; this end runs its streams on linkperf's engine, so the report
//! carries its own tcp_info and CPU, and the server's figures come from
//! iperf3's results exchange.

use super::{new_cookie, params_from_config, read_items, results_from_side};
use crate::client::{resolve, ClientError, ClientOptions};
use crate::diagnose;
use crate::report::{self, IntervalReport, Report, Sides, StartInfo, StreamSockets, TestInfo};
use linkperf_engine::{
    facts, sockopt, DataSocket, EventSink, LocalSide, SideEvent, StreamPlan, UdpFormat,
};
use linkperf_proto::iperf3::{self, Decoder, Item, Peer, State};
use linkperf_proto::results::{CpuUsage, HostFacts, Role, SideResult, SocketFacts, StreamResult};
use linkperf_proto::{Protocol, TestConfig};
use serde_json::json;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const STEP_TIMEOUT: Duration = Duration::from_secs(15);

fn fail(message: impl Into<String>) -> ClientError {
    ClientError {
        message: message.into(),
        exit_code: 1,
    }
}

fn usage(message: impl Into<String>) -> ClientError {
    ClientError {
        message: message.into(),
        exit_code: 2,
    }
}

enum Event {
    Control(Item),
    Lost(String),
    Side(SideEvent),
}

/// What a refusal from an iperf3 server means, in one line.
fn server_refusal(item: &Item, server: SocketAddr) -> Option<ClientError> {
    match item {
        Item::State(State::AccessDenied) => Some(fail(format!(
            "the iperf3 server at {server} is busy running a test; try again later"
        ))),
        Item::ServerError { i_errno, os_errno } => Some(fail(format!(
            "the iperf3 server at {server} refused the test: {}{}",
            iperf3::error_text(*i_errno),
            if *os_errno != 0 {
                format!(" ({})", std::io::Error::from_raw_os_error(*os_errno))
            } else {
                String::new()
            }
        ))),
        Item::State(State::ServerTerminate) => Some(fail(format!(
            "the iperf3 server at {server} ended the test"
        ))),
        _ => None,
    }
}

fn expect_state(
    stream: &mut TcpStream,
    decoder: &mut Decoder,
    want: State,
    server: SocketAddr,
) -> Result<(), ClientError> {
    let items = read_items(stream, decoder, STEP_TIMEOUT)
        .map_err(|e| fail(format!("iperf3 server at {server}: {e}")))?;
    for item in &items {
        if let Some(e) = server_refusal(item, server) {
            return Err(e);
        }
    }
    match items.first() {
        Some(Item::State(s)) if *s == want => Ok(()),
        other => Err(fail(format!(
            "unexpected answer from the iperf3 server at {server}: {other:?} (wanted {want:?}); is it an iperf3 server?"
        ))),
    }
}

/// Runs `options`' test against the iperf3 server at `options.host:port`.
pub fn run(
    options: &ClientOptions,
    on_interval: &mut dyn FnMut(&IntervalReport),
    cancel: Option<&AtomicBool>,
) -> Result<Report, ClientError> {
    let config = &options.config;
    check_for_iperf3(config)?;
    let server = resolve(&options.host, options.port, options.family)?;
    let Control {
        stream: mut control,
        mut decoder,
        cookie,
        local: control_local,
    } = open_control(options, server)?;

    // Streams in iperf3's order: the client's sending ones first.
    let roles = super::roles(config, false);
    let mut warnings = Vec::new();
    let plans = open_streams(options, server, &cookie, &roles, &mut warnings)?;
    let tcp_handles: Vec<Option<TcpStream>> = plans
        .iter()
        .map(|p| match &p.socket {
            DataSocket::Tcp(s) => s.try_clone().ok(),
            DataSocket::Udp(_) => None,
        })
        .collect();
    let same_clock = crate::data::same_host(server.ip(), control_local.ip());
    // iperf3 stamps datagrams with a monotonic clock: no one-way delay.
    let mut side = LocalSide::new(config.clone(), plans, false, vec![]);
    if config.protocol == Protocol::Udp {
        side.set_udp_format(UdpFormat::Iperf3 {
            counters_64bit: false,
        });
    }
    let local_sockets = side.socket_facts().to_vec();
    expect_state(&mut control, &mut decoder, State::TestStart, server)?;
    let (tx, events) = mpsc::channel();
    super::spawn_control_reader(&control, decoder, tx.clone(), control_event, "server")
        .map_err(fail)?;
    let started_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let start = Instant::now();
    let sink: EventSink = Arc::new(move |e| {
        let _ = tx.send(Event::Side(e));
    });
    side.start(start, sink);

    let outcome = Drive {
        control: &mut control,
        side: Some(side),
        config,
        events: &events,
        start,
        server,
        on_interval,
        intervals: Vec::new(),
        all_done: false,
        interrupted: false,
    }
    .run(&tcp_handles, cancel);
    let _ = control.shutdown(std::net::Shutdown::Both);
    let (local, remote_results, intervals, interrupted) = outcome?;
    let remote = remote_side(config, &remote_results, &roles);
    Ok(report(
        options,
        server,
        Finished {
            roles,
            local,
            remote,
            local_sockets,
            intervals,
            warnings,
            interrupted,
            started_ms,
            same_clock,
            control_local,
        },
    ))
}

/// Refuses, as a usage error, what an iperf3 server cannot be asked for.
fn check_for_iperf3(config: &TestConfig) -> Result<(), ClientError> {
    config.validate().map_err(usage)?;
    if config.start_at_unix_ms.is_some() {
        return Err(usage(
            "--start-at is not available against an iperf3 server",
        ));
    }
    if config.bytes.is_none() && config.duration_s.fract() != 0.0 {
        return Err(usage(
            "iperf3 servers take whole seconds: use an integer -t against iperf3",
        ));
    }
    if let Some(cc) = &config.congestion {
        if !facts::available_congestion_controls()
            .iter()
            .any(|c| c == cc)
        {
            return Err(usage(sockopt::congestion_unavailable(cc)));
        }
    }
    Ok(())
}

/// A control connection past the parameter exchange, told to create streams.
struct Control {
    stream: TcpStream,
    decoder: Decoder,
    cookie: [u8; iperf3::COOKIE_LEN],
    /// The control connection's local address (the server's view of us).
    local: SocketAddr,
}

/// Connects the control connection, sends the cookie and the parameters, and
/// waits for CREATE_STREAMS.
fn open_control(options: &ClientOptions, server: SocketAddr) -> Result<Control, ClientError> {
    let config = &options.config;
    let control_sock =
        crate::client::tcp_socket(server, options.bind.map(|ip| SocketAddr::new(ip, 0)))?;
    let within = options.connect_within();
    control_sock
        .connect_timeout(&server.into(), within)
        .map_err(|e| connect_error(server, e, within))?;
    let mut control: TcpStream = control_sock.into();
    sockopt::apply_liveness(&socket2::SockRef::from(&control));
    control.set_nodelay(true).ok();
    let local = control.local_addr().map_err(|e| fail(e.to_string()))?;
    let cookie = new_cookie();
    control
        .write_all(&cookie)
        .map_err(|e| fail(format!("iperf3 control connection: {e}")))?;
    let mut decoder = Decoder::new(Peer::Server, false);
    expect_state(&mut control, &mut decoder, State::ParamExchange, server)?;
    let mut params = params_from_config(config, false);
    if let Some(credentials) = super::auth::client_token() {
        params.authtoken = Some(credentials.token().map_err(usage)?);
    }
    control
        .write_all(&iperf3::encode_json(&params.to_json()))
        .map_err(|e| fail(format!("iperf3 control connection: {e}")))?;
    expect_state(&mut control, &mut decoder, State::CreateStreams, server)?;
    Ok(Control {
        stream: control,
        decoder,
        cookie,
        local,
    })
}

/// One data connection per role, in that order: TCP ones with the handshake
/// options set before connecting and the cookie sent, UDP ones through
/// iperf3's connect exchange.
fn open_streams(
    options: &ClientOptions,
    server: SocketAddr,
    cookie: &[u8; iperf3::COOKIE_LEN],
    roles: &[Role],
    warnings: &mut Vec<String>,
) -> Result<Vec<StreamPlan>, ClientError> {
    let config = &options.config;
    let bind_ip = options.bind.unwrap_or(if server.is_ipv6() {
        IpAddr::from([0u16; 8])
    } else {
        IpAddr::from([0u8; 4])
    });
    let mut plans = Vec::new();
    for (index, role) in roles.iter().enumerate() {
        let port = options
            .cport
            .map(|p| p.saturating_add(index as u16))
            .unwrap_or(0);
        let socket = match config.protocol {
            Protocol::Tcp => {
                let bind =
                    (options.bind.is_some() || port != 0).then(|| SocketAddr::new(bind_ip, port));
                let sock = crate::client::tcp_socket(server, bind)?;
                warnings.extend(sockopt::apply_buffers(&sock, config));
                sockopt::apply_tcp(&sock, config).map_err(usage)?;
                let within = options.connect_within();
                sock.connect_timeout(&server.into(), within)
                    .map_err(|e| connect_error(server, e, within))?;
                let mut stream: TcpStream = sock.into();
                stream
                    .write_all(cookie)
                    .map_err(|e| fail(format!("data connection {}: {e}", index + 1)))?;
                DataSocket::Tcp(stream)
            }
            Protocol::Udp => {
                let sock =
                    crate::data::bind_udp(SocketAddr::new(bind_ip, port), config).map_err(fail)?;
                udp_connect(&sock, server)?;
                DataSocket::Udp(sock)
            }
        };
        plans.push(StreamPlan {
            id: index as u32,
            role: *role,
            socket,
        });
    }
    Ok(plans)
}

/// What a finished test leaves for its report.
struct Finished {
    roles: Vec<Role>,
    local: SideResult,
    remote: SideResult,
    local_sockets: Vec<SocketFacts>,
    intervals: Vec<IntervalReport>,
    warnings: Vec<String>,
    interrupted: bool,
    started_ms: u64,
    same_clock: bool,
    control_local: SocketAddr,
}

/// linkperf's report of a test against an iperf3 server.
fn report(options: &ClientOptions, server: SocketAddr, done: Finished) -> Report {
    let config = &options.config;
    let Finished {
        roles,
        local,
        remote,
        local_sockets,
        intervals,
        mut warnings,
        interrupted,
        started_ms,
        same_clock,
        control_local,
    } = done;
    let sides = Sides {
        config,
        local: &local,
        remote: &remote,
    };
    let mut errors = Vec::new();
    for s in &local.streams {
        if let Some(e) = &s.error {
            errors.push(format!("stream {} ({:?}): {e}", s.id, s.role));
        }
    }
    warnings.extend(local.warnings.iter().cloned());
    warnings.push(
        "the server is iperf3: its figures are bytes, time, retransmissions, UDP loss and jitter, and its process CPU (no tcp_info or host facts)".into(),
    );
    let (summary, summary_reverse) = diagnose::summaries(&sides);
    let streams = roles
        .iter()
        .enumerate()
        .zip(local_sockets)
        .map(|((id, role), local)| StreamSockets {
            id: id as u32,
            direction: report::direction_name(*role == Role::Sender),
            local,
            remote: None,
        })
        .collect();
    Report {
        schema: report::SCHEMA,
        software: crate::report::SOFTWARE.into(),
        test: TestInfo {
            server: options.host.clone(),
            port: server.port(),
            config: config.clone(),
        },
        start: StartInfo {
            timestamp_unix_ms: started_ms,
            local: facts::collect(crate::report::SOFTWARE),
            remote: HostFacts {
                software: "iperf3".into(),
                ..Default::default()
            },
            clock: if same_clock {
                "shared"
            } else if options.clocks_synchronised {
                "synchronised"
            } else {
                "independent"
            }
            .into(),
            streams,
        },
        intervals,
        summary,
        summary_reverse,
        warnings,
        errors,
        interrupted,
        testbed: None,
        server_output: options.server_output.then(|| report::ServerOutput {
            client: control_local.to_string(),
            side: remote.clone(),
        }),
        extra_data: None,
        doctor: None,
    }
}

type Outcome = (SideResult, iperf3::Results, Vec<IntervalReport>, bool);

/// The test from TEST_START to IPERF_DONE: this end's streams run on the
/// engine while the server's states arrive through `events`.
struct Drive<'a> {
    control: &'a mut TcpStream,
    /// Taken when the streams are finished (or abandoned).
    side: Option<LocalSide>,
    config: &'a TestConfig,
    events: &'a Receiver<Event>,
    start: Instant,
    server: SocketAddr,
    on_interval: &'a mut dyn FnMut(&IntervalReport),
    intervals: Vec<IntervalReport>,
    all_done: bool,
    interrupted: bool,
}

impl Drive<'_> {
    fn run(
        mut self,
        tcp_handles: &[Option<TcpStream>],
        cancel: Option<&AtomicBool>,
    ) -> Result<Outcome, ClientError> {
        self.until_test_end(tcp_handles, cancel)?;
        self.send(&[State::TestEnd.byte()])?;
        let (local, remote) = self.exchange_results()?;
        Ok((local, remote, self.intervals, self.interrupted))
    }

    fn push_interval(&mut self, v: Vec<linkperf_proto::results::StreamInterval>) {
        let line = report::merge_interval(self.config, Some(&v), None);
        (self.on_interval)(&line);
        self.intervals.push(line);
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.control
            .write_all(bytes)
            .map_err(|e| fail(format!("iperf3 control connection: {e}")))
    }

    /// Stops this end's streams; the error says the server went away.
    fn lost(&mut self, why: String) -> ClientError {
        if let Some(s) = self.side.take() {
            s.abort();
            let _ = s.finish();
        }
        fail(format!(
            "the iperf3 server at {} went away mid-test: {why}",
            self.server
        ))
    }

    /// Stops this end's streams when `item` is the server refusing or ending the test.
    fn check_refusal(&mut self, item: &Item) -> Result<(), ClientError> {
        match server_refusal(item, self.server) {
            Some(e) => {
                self.lost(e.message.clone());
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Phase 1: runs until this end's part is over (or Ctrl-C).
    fn until_test_end(
        &mut self,
        tcp_handles: &[Option<TcpStream>],
        cancel: Option<&AtomicBool>,
    ) -> Result<(), ClientError> {
        let events = self.events;
        let mut udp_senders_done = false;
        let mut drained_at: Option<Instant> = None;
        loop {
            match events.recv_timeout(Duration::from_millis(5)) {
                Ok(Event::Side(SideEvent::Interval(v))) => self.push_interval(v),
                Ok(Event::Side(SideEvent::SendersDone(_))) => udp_senders_done = true,
                Ok(Event::Side(SideEvent::AllDone)) => self.all_done = true,
                Ok(Event::Control(item)) => self.check_refusal(&item)?,
                Ok(Event::Lost(why)) => return Err(self.lost(why)),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(fail("internal channel closed")),
            }
            let s = self.side.as_ref().expect("side runs until TEST_END");
            if let (Some(flag), false) = (cancel, self.interrupted) {
                if flag.load(Ordering::Relaxed) {
                    self.interrupted = true;
                    s.stop_senders();
                }
            }
            if self.this_end_done(s, tcp_handles, udp_senders_done) || self.interrupted {
                // Give the server a moment to read what just arrived: it stops
                // counting at TEST_END.
                let at = *drained_at.get_or_insert_with(Instant::now);
                if at.elapsed() >= Duration::from_millis(20) || self.interrupted {
                    return Ok(());
                }
            }
        }
    }

    /// True when this end's senders have delivered everything and its
    /// receivers have the bytes (or the time) the test asked for.
    fn this_end_done(
        &self,
        s: &LocalSide,
        tcp_handles: &[Option<TcpStream>],
        udp_senders_done: bool,
    ) -> bool {
        let config = self.config;
        let progress = s.progress();
        let senders_done = !config.direction.client_sends()
            || if config.protocol == Protocol::Udp {
                udp_senders_done
            } else {
                progress.iter().zip(tcp_handles).all(|(p, h)| {
                    p.role == Role::Receiver
                        || p.finished
                        || h.as_ref().is_some_and(super::tcp_sender_drained)
                })
            };
        let receivers_done = !config.direction.server_sends()
            || match config.bytes {
                Some(n) => {
                    progress
                        .iter()
                        .filter(|p| p.role == Role::Receiver)
                        .map(|p| p.bytes)
                        .sum::<u64>()
                        >= n
                }
                None => self.start.elapsed() >= Duration::from_secs_f64(config.duration_s),
            };
        senders_done && receivers_done
    }

    /// Phase 2: the server stops and closes its streams, then asks for
    /// results; this end sends its own once its streams are done.
    fn exchange_results(&mut self) -> Result<(SideResult, iperf3::Results), ClientError> {
        let events = self.events;
        let server = self.server;
        let mut asked_at: Option<Instant> = None;
        let mut server_results: Option<iperf3::Results> = None;
        let mut local: Option<SideResult> = None;
        let mut wind_down = WindDown::new();
        loop {
            match events.recv_timeout(Duration::from_millis(5)) {
                Ok(Event::Side(SideEvent::Interval(v))) => self.push_interval(v),
                Ok(Event::Side(SideEvent::AllDone)) => self.all_done = true,
                Ok(Event::Side(_)) => {}
                Ok(Event::Control(Item::State(State::ExchangeResults))) => {
                    asked_at = Some(Instant::now())
                }
                Ok(Event::Control(Item::Json(v))) => {
                    server_results = Some(iperf3::Results::from_json(&v).map_err(|e| {
                        fail(format!(
                            "bad results from the iperf3 server at {server}: {e}"
                        ))
                    })?)
                }
                Ok(Event::Control(Item::State(State::DisplayResults))) => {
                    let _ = self.send(&[State::IperfDone.byte()]);
                    break;
                }
                Ok(Event::Control(item)) => self.check_refusal(&item)?,
                Ok(Event::Lost(why)) => {
                    if server_results.is_some() {
                        break; // some servers close right after their results
                    }
                    return Err(self.lost(why));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(fail("internal channel closed")),
            }
            if let (Some(asked), None) = (asked_at, &local) {
                local = self.send_results_when_done(asked, &mut wind_down)?;
            }
            if asked_at.is_none() && self.side.is_some() {
                // A server that never asks for results: give up after a while.
                let duration = Duration::from_secs_f64(self.config.duration_s);
                if self.start.elapsed() > duration + Duration::from_secs(60)
                    && self.config.bytes.is_none()
                {
                    return Err(self.lost("no results exchange".into()));
                }
            }
        }
        let local = local.ok_or_else(|| {
            fail(format!(
                "the iperf3 server at {server} ended without a results exchange"
            ))
        })?;
        let remote = server_results
            .ok_or_else(|| fail(format!("the iperf3 server at {server} sent no results")))?;
        Ok((local, remote))
    }

    /// After the server asked for results: stops this end's streams once
    /// they are quiet (or after 3 s), and when they are done sends their
    /// results, returning them.
    fn send_results_when_done(
        &mut self,
        asked: Instant,
        wind_down: &mut WindDown,
    ) -> Result<Option<SideResult>, ClientError> {
        let udp = self.config.protocol == Protocol::Udp;
        if let Some(s) = &self.side {
            // TCP streams end when the server closes them; UDP ones when quiet.
            let total: u64 = s.progress().iter().map(|p| p.bytes).sum();
            if total != wind_down.last_total {
                wind_down.last_total = total;
                wind_down.quiet_since = Instant::now();
            }
            let udp_quiet = udp && wind_down.quiet_since.elapsed() > Duration::from_millis(100);
            if !self.all_done
                && !wind_down.aborted
                && (udp_quiet || asked.elapsed() > Duration::from_secs(3))
            {
                s.abort();
                wind_down.aborted = true;
            }
        }
        if self.all_done {
            if let Some(s) = self.side.take() {
                let result = s.finish();
                let ours = results_from_side(&result, udp);
                self.send(&iperf3::encode_json(&ours.to_json()))?;
                return Ok(Some(result));
            }
        }
        Ok(None)
    }
}

/// How this end's streams wind down after the server asked for results.
struct WindDown {
    last_total: u64,
    quiet_since: Instant,
    aborted: bool,
}

impl WindDown {
    fn new() -> WindDown {
        WindDown {
            last_total: 0,
            quiet_since: Instant::now(),
            aborted: false,
        }
    }
}

/// The iperf3 server's results as linkperf's view of the remote end.
fn remote_side(config: &TestConfig, results: &iperf3::Results, roles: &[Role]) -> SideResult {
    let udp = config.protocol == Protocol::Udp;
    let mut streams: Vec<StreamResult> = Vec::new();
    for s in &results.streams {
        let Some(index) = iperf3::stream_index(s.id) else {
            continue;
        };
        let Some(our_role) = roles.get(index) else {
            continue;
        };
        let role = if *our_role == Role::Sender {
            Role::Receiver
        } else {
            Role::Sender
        };
        let seconds = (s.end_time - s.start_time).max(0.0);
        let received = s.packets.saturating_sub(s.errors);
        let value = json!({
            "id": index,
            "role": role,
            "bytes": s.bytes,
            "seconds": seconds,
            "bits_per_second": if seconds > 0.0 { s.bytes as f64 * 8.0 / seconds } else { 0.0 },
            "packets": if udp { Some(if role == Role::Sender { s.packets } else { received }) } else { None },
            "udp": (udp && role == Role::Receiver).then(|| json!({
                "packets": received,
                "lost_packets": s.errors,
                "loss_percent": if s.packets > 0 { 100.0 * s.errors as f64 / s.packets as f64 } else { 0.0 },
                "out_of_order": 0,
                "duplicates": 0,
                "jitter_ms": s.jitter * 1000.0,
                "one_way_delay_ms": null,
            })),
            "tcp": (!udp && role == Role::Sender).then(|| json!({
                "retransmits": (s.retransmits >= 0).then_some(s.retransmits),
            })),
            "socket": { "congestion": results.congestion_used },
        });
        if let Ok(r) = serde_json::from_value::<StreamResult>(value) {
            streams.push(r);
        }
    }
    SideResult {
        seconds: streams.iter().map(|s| s.seconds).fold(0.0, f64::max),
        streams,
        cpu: CpuUsage {
            total_percent: results.cpu_util_total,
            user_percent: results.cpu_util_user,
            system_percent: results.cpu_util_system,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Control events into this client's event type.
fn control_event(e: super::ControlEvent) -> Event {
    match e {
        super::ControlEvent::Item(i) => Event::Control(i),
        super::ControlEvent::Lost(why) => Event::Lost(why),
    }
}

fn connect_error(addr: SocketAddr, e: std::io::Error, within: Duration) -> ClientError {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => fail(format!(
            "connection refused by {addr}: is an iperf3 server running there (port {})?",
            addr.port()
        )),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => fail(format!(
            "no answer from {addr} within {}: host down, port filtered or its listen queue full",
            crate::client::describe_timeout(within)
        )),
        _ => fail(format!("cannot connect to {addr}: {e}")),
    }
}

/// iperf3's UDP stream set-up: "9876" to the server's port, "6789" back.
fn udp_connect(sock: &UdpSocket, server: SocketAddr) -> Result<(), ClientError> {
    sock.connect(server)
        .map_err(|e| fail(format!("UDP connect to {server}: {e}")))?;
    let mut buf = [0u8; 64];
    sock.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| fail(e.to_string()))?;
    // One datagram, as iperf3 sends; a second only if it was lost (a duplicate
    // would reach the server's stream socket as a stray 4-byte datagram).
    for _ in 0..3 {
        sock.send(&iperf3::UDP_CONNECT)
            .map_err(|e| fail(format!("UDP connect message to {server}: {e}")))?;
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            match sock.recv(&mut buf) {
                Ok(n) if iperf3::is_udp_reply(&buf[..n]) => {
                    let _ = sock.set_read_timeout(None);
                    return Ok(());
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    Err(fail(format!(
        "UDP stream to {server}: the iperf3 server never answered; is UDP blocked by a firewall?"
    )))
}
