//! `linkperf client`: runs one test against a server and builds the report.
//! The steps live in the submodules, in the order a test takes them:
//! `connect` reaches the server, `exchange` sets the test up, `streams`
//! opens the data connections, `session` runs the test and `result` builds
//! the report; third-party mode relays an agent's test. This module only
//! strings them together and must not grow their logic.

mod connect;
mod exchange;
mod pairing;
mod result;
mod session;
mod streams;

pub(crate) use connect::tcp_socket;
pub use connect::{
    default_credentials, default_tls, describe_timeout, resolve, set_default_credentials,
    set_default_tls, tls_from_env, ClientError, ClientOptions, Credentials,
};

use crate::control::{Control, Incoming};
use crate::data;
use crate::report::{IntervalReport, Report};
use crate::tls;
use connect::{connect_error, fail, local_bind, open_control, usage};
use exchange::{exchange_greetings, Event};
use linkperf_engine::{facts, EventSink, LocalSide};
use linkperf_proto::messages::RrRequest;
use linkperf_proto::session::ClientSession;
use linkperf_proto::{ClientMessage, ServerMessage, TestConfig};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Runs one test. `on_interval` sees each interval as soon as both ends
/// reported it; `cancel` (Ctrl-C) ends the test early with a partial result.
pub fn run(
    options: &ClientOptions,
    on_interval: &mut dyn FnMut(&IntervalReport),
    cancel: Option<&AtomicBool>,
) -> Result<Report, ClientError> {
    let config = &options.config;
    config.validate().map_err(usage)?;
    if let Some(cc) = &config.congestion {
        if config.direction.client_sends()
            && !facts::available_congestion_controls()
                .iter()
                .any(|c| c == cc)
        {
            return Err(usage(linkperf_engine::sockopt::congestion_unavailable(cc)));
        }
    }
    let server = resolve(&options.host, options.port, options.family)?;
    let sock = tcp_socket(server, local_bind(options, server, 0))?;
    connect::connect(&sock, server, options.connect_within())?;
    let control_stream: TcpStream = sock.into();
    linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(&control_stream));
    control_stream.set_nodelay(true).ok();
    let local = control_stream
        .local_addr()
        .map_err(|e| fail(e.to_string()))?;
    let control_stream = open_control(
        control_stream,
        options.tls.as_deref(),
        &options.host,
        options.connect_within(),
    )?;
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
        local,
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
    local: SocketAddr,
    control: &Arc<Control<ClientSession>>,
    tx: mpsc::Sender<Event>,
    events: &Receiver<Event>,
    on_interval: &mut dyn FnMut(&IntervalReport),
    cancel: Option<&AtomicBool>,
) -> Result<Report, ClientError> {
    let config = &options.config;
    let remote_facts = exchange::welcome(
        control,
        events,
        server,
        options.credentials.as_ref(),
        &linkperf_proto::auth::purpose_test(),
    )?;
    let mut ready = exchange::set_up(control, events, config)?;
    let mut warnings = std::mem::take(&mut ready.warnings);
    let plans = streams::open(options, server, &ready, &mut warnings)?;
    let same_clock = data::same_host(server.ip(), local.ip());
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
    let started_ms = exchange::start(control, events, config)?;
    let (at, _) = data::start_instant(config.start_at_unix_ms);
    let sink: EventSink = Arc::new(move |e| {
        let _ = tx.send(Event::Side(e));
    });
    side.start(at, sink);
    let outcome = session::run(control, events, config, side, on_interval, cancel);
    let setup = result::Setup {
        port: server.port(),
        started_ms,
        remote_facts,
        clock,
        local_sockets,
        warnings,
        control_local: local,
        server_doctor: ready.doctor.take(),
    };
    Ok(result::report(options, setup, outcome))
}

/// Connects to a server and exchanges greetings, then leaves: is it up, and
/// does it speak this protocol version? Over TLS when the process's
/// default says so.
pub fn greet(host: &str, port: u16) -> Result<(), ClientError> {
    greet_with(host, port, default_tls().as_deref())
}

/// [`greet`] with the TLS given (none: plain).
pub fn greet_with(host: &str, port: u16, tls: Option<&tls::ClientTls>) -> Result<(), ClientError> {
    let addr = resolve(host, port, None)?;
    let within = Duration::from_secs(3);
    let stream =
        TcpStream::connect_timeout(&addr, within).map_err(|e| connect_error(addr, e, within))?;
    let stream = open_control(stream, tls, host, within)?;
    let (tx, events) = mpsc::channel();
    let control = Control::start(stream, ClientSession::new(), tx, Event::Server)
        .map_err(|e| fail(e.to_string()))?;
    let result = exchange_greetings(&control, &events, addr, Duration::from_secs(5)).map(|_| ());
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
    let lead = config
        .start_at_unix_ms
        .map(|at| Duration::from_millis(at.saturating_sub(unix_ms())))
        .unwrap_or_default();
    let order = ClientMessage::ThirdParty {
        target: target.0.to_string(),
        port: target.1,
        config: Box::new(config.clone()),
    };
    let runs_for = lead + Duration::from_secs_f64(config.duration_s.min(86_400.0));
    third_party(from, target, family, order, runs_for, on_interval, cancel)
}

/// Third-party mode for latency: asks the agent at `from` to run a
/// `linkperf rr` measurement towards `target` and returns its report (the
/// JSON `linkperf rr --json` prints on the agent).
pub fn run_third_party_rr(
    from: (&str, u16),
    target: (&str, u16),
    request: &RrRequest,
    family: Option<u8>,
    cancel: Option<&AtomicBool>,
) -> Result<serde_json::Value, ClientError> {
    // Counted and cold runs end by their count, not by a time: give them
    // the agent's longest test; the agent stops them there itself.
    let runs_for = if request.count.is_some() || request.cold {
        Duration::from_secs(3600)
    } else {
        Duration::from_secs_f64(request.duration_s.clamp(0.0, 86_400.0))
    };
    let order = ClientMessage::ThirdPartyRr {
        target: target.0.to_string(),
        port: target.1,
        request: Box::new(request.clone()),
    };
    third_party(from, target, family, order, runs_for, &mut |_| {}, cancel)
}

/// Sends a third-party `order` to the agent and relays its intervals until
/// its report; gives up a minute after the test should have ended.
fn third_party(
    from: (&str, u16),
    target: (&str, u16),
    family: Option<u8>,
    order: ClientMessage,
    runs_for: Duration,
    on_interval: &mut dyn FnMut(&serde_json::Value),
    cancel: Option<&AtomicBool>,
) -> Result<serde_json::Value, ClientError> {
    let agent = resolve(from.0, from.1, family)?;
    let within = connect::DEFAULT_CONNECT_TIMEOUT;
    let stream =
        TcpStream::connect_timeout(&agent, within).map_err(|e| connect_error(agent, e, within))?;
    linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(&stream));
    let stream = open_control(stream, default_tls().as_deref(), from.0, within)?;
    let (tx, events) = mpsc::channel();
    let control = Control::start(stream, ClientSession::new(), tx, Event::Server)
        .map_err(|e| fail(e.to_string()))?;
    let result = exchange::welcome(
        &control,
        &events,
        agent,
        default_credentials().as_ref(),
        &linkperf_proto::auth::purpose_third_party(target.0, target.1),
    )
    .and_then(|_| control.send(&order).map_err(fail))
    .and_then(|_| {
        let deadline = Instant::now() + runs_for + Duration::from_secs(60);
        relay_loop(&control, &events, deadline, on_interval, cancel)
    });
    control.shutdown();
    result
}

fn relay_loop(
    control: &Arc<Control<ClientSession>>,
    events: &Receiver<Event>,
    deadline: Instant,
    on_interval: &mut dyn FnMut(&serde_json::Value),
    cancel: Option<&AtomicBool>,
) -> Result<serde_json::Value, ClientError> {
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
