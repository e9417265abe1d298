//! `linkperf server`: serves many clients at once. Every control connection
//! gets a thread of its own for its greeting and set-up, and its own data
//! connections; once its test has started, the process's test thread serves
//! it (`running`), as the process's control reader and sampling thread serve
//! every session. There is no global busy state. A client that vanishes or
//! misbehaves ends only its own session. This module accepts connections,
//! tells their kinds apart, greets linkperf clients and dispatches; `session`
//! holds a control session's state and `test` sets a throughput test up. It
//! must not run tests itself.

mod auth;
mod running;
mod secure;
mod session;
mod test;

use crate::client;
use crate::control::{Control, Incoming};
use crate::guard::auth::{Gate, Required, ThirdPartyPolicy, Users};
use crate::guard::{self, EventLog, Guard, Level, Limits, LogFormat};
use crate::tls::{self, Channel, ServerTls};
use linkperf_engine::facts;
use linkperf_proto::session::ServerSession;
use linkperf_proto::{ClientMessage, DataHello, Preamble, ServerMessage, PROTOCOL_VERSION};
use running::Served;
use session::{ControlSession, Event, Registry};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest control frame before the client's hello: a hello is a few
/// dozen bytes, and a stranger must not make the server buffer megabytes.
const FIRST_FRAME_LIMIT: usize = 4 * 1024;

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
    /// What the server allows (connections, tests, streams, memory, time, rate).
    pub limits: Limits,
    pub log_format: LogFormat,
    /// Append the event log to this file instead of the terminal.
    pub logfile: Option<PathBuf>,
    /// The users who may authenticate (`--auth-users`); none: no authentication.
    pub users: Option<Arc<Users>>,
    /// Which requests need a user when `users` is set.
    pub auth_required: Required,
    /// Third-party mode's rules (who, towards which targets, how many).
    pub third_party: ThirdPartyPolicy,
    /// `-m`: the control listener is an MPTCP socket (it still accepts TCP).
    /// A test's MPTCP data listener comes with the test's `-m`.
    pub mptcp: bool,
    /// TLS for control connections (`--tls-cert`, `--tls-key`, `--tls-required`).
    pub tls: Option<ServerTls>,
    /// Third-party mode: this agent's own user towards targets that
    /// require one (`--third-party-key-file`).
    pub target_credentials: Option<client::Credentials>,
    /// Third-party mode: TLS towards targets (`--third-party-tls-ca`,
    /// `--third-party-tls-pin`).
    pub target_tls: Option<Arc<tls::ClientTls>>,
    /// iperf3's RSA authentication of iperf3 clients (`--rsa-private-key-path`,
    /// `--authorized-users-path`): every iperf3 test then needs a valid token.
    pub iperf3_rsa: Option<Arc<crate::iperf3::auth::RsaAuth>>,
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
            limits: Limits::default(),
            log_format: LogFormat::Text,
            logfile: None,
            users: None,
            auth_required: Required::All,
            third_party: ThirdPartyPolicy::default(),
            mptcp: false,
            tls: None,
            target_credentials: None,
            target_tls: None,
            iperf3_rsa: None,
        }
    }
}

pub struct Server {
    listener: TcpListener,
    options: ServerOptions,
    registry: Registry,
    /// The extra port for iperf3 clients (`--iperf3-port`).
    iperf3_listener: Option<TcpListener>,
    guard: Arc<Guard>,
}

impl Server {
    /// Binds the listening socket: dual-stack `[::]` unless an address is given.
    pub fn bind(options: ServerOptions) -> Result<Server, String> {
        if options.mptcp {
            // The kernel's refusal, in one line, before anything is bound.
            linkperf_engine::mptcp::stream_socket(socket2::Domain::IPV4, true)?;
        }
        let listener = match (options.bind, options.mptcp) {
            (Some(ip), false) => TcpListener::bind(SocketAddr::new(ip, options.port)),
            (Some(ip), true) => listen_on(SocketAddr::new(ip, options.port), true),
            (None, mptcp) => bind_dual_stack(options.port, mptcp),
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
                    None => bind_dual_stack(port, false),
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
        let log = EventLog::new(
            options.log_format,
            options.logfile.as_deref(),
            !options.verbose,
        )?;
        Ok(Server {
            listener,
            guard: Guard::new(options.limits.clone(), log),
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
        let ctx = Arc::new(Context {
            wake: loopback_of(self.local_addr()),
            registry: self.registry,
            access: auth::Access {
                users: self.options.users.clone(),
                required: self.options.auth_required,
                policy: self.options.third_party.clone(),
                gate: Gate::default(),
                target_tls: self.options.target_tls.clone(),
                iperf3_rsa: self.options.iperf3_rsa.clone(),
            },
            options: self.options,
            guard: self.guard,
            finished: AtomicBool::new(false),
        });
        if let Some(extra) = self.iperf3_listener {
            // Connections on the iperf3 port are handled like any other; a
            // finished --once test wakes the main loop.
            let ctx = ctx.clone();
            let _ = std::thread::Builder::new()
                .name("lp-iperf3-accept".into())
                .spawn(move || accept_loop(extra, &ctx));
        }
        accept_loop(self.listener, &ctx);
        // `--once`: the test's last messages leave before the process ends.
        crate::control::wait_idle(Duration::from_secs(5));
    }

    /// Runs the server on a background thread (for `linkperf demo` and tests).
    pub fn spawn(self) -> SocketAddr {
        let addr = self.local_addr();
        std::thread::spawn(move || self.run());
        addr
    }
}

/// A listener on `addr`, MPTCP when `mptcp`.
fn listen_on(addr: SocketAddr, mptcp: bool) -> std::io::Result<TcpListener> {
    let s = stream_socket(socket2::Domain::for_address(addr), mptcp)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(TcpListener::from(s))
}

fn stream_socket(domain: socket2::Domain, mptcp: bool) -> std::io::Result<socket2::Socket> {
    let protocol = mptcp.then(|| socket2::Protocol::from(linkperf_engine::mptcp::IPPROTO_MPTCP));
    socket2::Socket::new(domain, socket2::Type::STREAM, protocol)
}

fn bind_dual_stack(port: u16, mptcp: bool) -> std::io::Result<TcpListener> {
    use socket2::Domain;
    let v6 = (|| {
        let s = stream_socket(Domain::IPV6, mptcp)?;
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
            let s = stream_socket(Domain::IPV4, mptcp)?;
            s.set_reuse_address(true)?;
            s.bind(&SocketAddr::from(([0, 0, 0, 0], port)).into())?;
            s.listen(1024)?;
            Ok(TcpListener::from(s))
        }
    }
}

/// What every connection's thread shares.
struct Context {
    registry: Registry,
    options: ServerOptions,
    guard: Arc<Guard>,
    /// Users, third-party rules, failures and quotas.
    access: auth::Access,
    /// Set when a `--once` test ended; the accept loops then return.
    finished: AtomicBool,
    /// Where to connect to wake the accept loop.
    wake: SocketAddr,
}

/// Accepts connections within the limits, each on its own thread. Out of
/// file descriptors it backs off instead of spinning on accept errors.
fn accept_loop(listener: TcpListener, ctx: &Arc<Context>) {
    let local = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
    loop {
        let accepted = listener.accept();
        if ctx.finished.load(Ordering::Acquire) {
            return;
        }
        let (stream, peer) = match accepted {
            Ok(conn) => conn,
            Err(e) => {
                let pause = guard::accept_backoff(&e);
                if pause >= Duration::from_millis(50) {
                    ctx.guard.refused(
                        local,
                        &format!("cannot accept connections: {e}; backing off"),
                    );
                }
                std::thread::sleep(pause);
                continue;
            }
        };
        let ticket = crate::iperf3::server::accept_ticket();
        let permit = match ctx.guard.admit_connection(peer) {
            Ok(permit) => permit,
            Err(why) => {
                ctx.guard.refused(peer, &why);
                continue;
            }
        };
        let shared = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name("lp-conn".into())
            .spawn(move || {
                let ctx = shared;
                match handle_connection(stream, peer, ticket, &ctx) {
                    Handled::Ran => ran(&ctx, permit),
                    Handled::Other => {}
                    Handled::Running(test) => {
                        let ended = move |line| {
                            log_session(&ctx.guard, peer, line);
                            ran(&ctx, permit);
                        };
                        let _ = running::add(test, Box::new(ended));
                    }
                }
            });
        if let Err(e) = spawned {
            ctx.guard
                .refused(peer, &format!("no thread for the connection: {e}"));
        }
    }
}

/// What became of a connection.
enum Handled {
    /// A session (control or rr) ran to its end.
    Ran,
    /// Another kind of connection (data, iperf3), or one refused.
    Other,
    /// A test started: the test thread is to serve it.
    Running(Box<running::Running>),
}

/// A session of the connection that held `permit` ran to its end: with
/// `--once`, the server stops.
fn ran(ctx: &Context, permit: guard::ConnectionPermit) {
    drop(permit);
    if ctx.options.once {
        ctx.finished.store(true, Ordering::Release);
        let _ = TcpStream::connect_timeout(&ctx.wake, Duration::from_secs(1));
    }
}

/// Serves one connection up to its end, or to its test's start.
/// `accepted` is the connection's place in accept order (see
/// [`crate::iperf3::server::accept_ticket`]).
fn handle_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    accepted: u64,
    ctx: &Context,
) -> Handled {
    let guard = &ctx.guard;
    let deadline = Instant::now() + guard.limits.handshake_timeout;
    let mut preamble = [0u8; Preamble::LEN];
    if let Err(why) = guard::read_exact_by(&mut stream, &mut preamble, deadline) {
        guard.refused(peer, &format!("no preamble: {why}"));
        return Handled::Other;
    }
    let tls = ctx.options.tls.as_ref();
    if tls::is_client_hello(&preamble) {
        return match secure::accept(stream, peer, &preamble, tls, guard) {
            Some((channel, Preamble::Rr)) => serve_rr(channel, peer, ctx, deadline).into(),
            Some((channel, _)) => serve_control(channel, peer, ctx),
            None => Handled::Other,
        };
    }
    let kind = Preamble::parse(&preamble);
    if secure::refuse_plain(&mut stream, peer, kind, (tls, guard), deadline)
        || auth::refuse_unauthenticated(&mut stream, peer, kind, (&ctx.access, guard), deadline)
    {
        return Handled::Other;
    }
    match kind {
        Some(Preamble::Control) => {
            let _ = stream.set_read_timeout(None);
            serve_control(Channel::plain(stream), peer, ctx)
        }
        Some(Preamble::Data) => {
            if guard.cookie_guessing_blocked(peer.ip()) {
                guard.refused(
                    peer,
                    "data connection closed unread: too many wrong cookies",
                );
                return Handled::Other;
            }
            let mut hello = [0u8; DataHello::LEN];
            if let Err(why) = guard::read_exact_by(&mut stream, &mut hello, deadline) {
                guard.refused(peer, &format!("data connection without its hello: {why}"));
                return Handled::Other;
            }
            let hello = DataHello::decode(&hello);
            let tx = ctx
                .registry
                .lock()
                .ok()
                .and_then(|r| r.get(&hello.cookie).cloned());
            match tx {
                Some(tx) => {
                    let _ = stream.set_read_timeout(None);
                    let _ = tx.send(Event::Data(hello.stream_id, stream));
                }
                None => guard.wrong_cookie(peer, "data connection"),
            }
            Handled::Other
        }
        Some(Preamble::Rr) => serve_rr(Channel::plain(stream), peer, ctx, deadline).into(),
        None => crate::iperf3::server::serve(
            stream,
            peer,
            (preamble, accepted),
            crate::iperf3::server::Admission {
                exclusive: ctx.options.exclusive,
                rsa: ctx
                    .access
                    .iperf3_rsa
                    .as_deref()
                    .map(|r| (r, &ctx.access.gate)),
            },
            guard,
            deadline,
        )
        .into(),
    }
}

/// Serves an rr connection (a session's control connection, plain or TLS,
/// or a plain data connection); true when a session ran (for `--once`).
fn serve_rr(channel: Channel, peer: SocketAddr, ctx: &Context, deadline: Instant) -> bool {
    let access = &ctx.access;
    let admission = crate::rr::server::Admission {
        users: access
            .users
            .as_deref()
            .filter(|_| access.required == Required::All)
            .map(|u| (u, &access.gate)),
        tls_required: ctx.options.tls.as_ref().is_some_and(|t| t.required),
    };
    crate::rr::server::handle(channel, peer, &ctx.guard, deadline, admission)
}

/// Runs a control session (plain or TLS) and logs how it ended, unless its
/// test started (the test thread then serves it).
fn serve_control(channel: Channel, peer: SocketAddr, ctx: &Context) -> Handled {
    match ControlSession::run(channel, peer, ctx) {
        Ok(Served::Running(test)) => Handled::Running(test),
        Ok(Served::Done(line)) => {
            log_session(&ctx.guard, peer, Ok(line));
            Handled::Ran
        }
        Err(why) => {
            log_session(&ctx.guard, peer, Err(why));
            Handled::Ran
        }
    }
}

/// The event log's line for a control session's end.
fn log_session(guard: &Guard, peer: SocketAddr, ended: Result<String, String>) {
    match ended {
        Ok(line) => guard.log.event(Level::Info, peer, "test-done", &line),
        Err(why) => guard.log.event(Level::Warn, peer, "session-failed", &why),
    }
}

impl From<bool> for Handled {
    /// Whether a session ran (rr, iperf3).
    fn from(ran: bool) -> Handled {
        if ran {
            Handled::Ran
        } else {
            Handled::Other
        }
    }
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

impl ControlSession {
    fn run(stream: Channel, peer: SocketAddr, ctx: &Context) -> Result<Served, String> {
        linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(stream.tcp()));
        let local = stream.tcp().local_addr().map_err(|e| e.to_string())?;
        let (tx, events) = crate::control::inbox::channel();
        let session = ServerSession::new().with_first_frame_limit(FIRST_FRAME_LIMIT);
        let control =
            Control::start_notifying(stream, session, tx.clone(), Event::Client, running::wake)
                .map_err(|e| e.to_string())?;
        let session = ControlSession {
            control,
            events,
            tx,
            registry: ctx.registry.clone(),
            cookie: None,
            peer,
            guard: ctx.guard.clone(),
        };
        session.serve(local, ctx)
    }

    fn serve(mut self, local: SocketAddr, ctx: &Context) -> Result<Served, String> {
        let options = &ctx.options;
        let step = self.guard.limits.handshake_timeout;
        match self.next_message(step) {
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
        let nonce = auth::nonce(&ctx.access)?;
        self.control.send(&ServerMessage::Welcome {
            version: PROTOCOL_VERSION,
            software: crate::report::SOFTWARE.into(),
            facts: facts::collect(crate::report::SOFTWARE),
            auth_nonce: nonce.as_deref().map(linkperf_proto::auth::to_hex),
        })?;
        let mut request = self.next_message(step)?;
        let mut answer = None;
        if let ClientMessage::Auth { user, answer: a } = request {
            answer = Some((user, a));
            request = self.next_message(step)?;
        }
        if let ClientMessage::Cancel { .. } = request {
            // A controller checking that this agent is up (campaign start).
            return Ok(Served::Done(format!(
                "client {}: greeted and left",
                self.peer
            )));
        }
        let principal = self.authenticate(&ctx.access, nonce.as_deref(), answer, &request)?;
        match request {
            ClientMessage::Setup { config } => {
                self.run_test(*config, local, options.data_ports.as_ref())
            }
            ClientMessage::ThirdParty {
                ref target, port, ..
            }
            | ClientMessage::ThirdPartyRr {
                ref target, port, ..
            } => {
                if !options.allow_third_party {
                    return self.refuse(
                        "this server does not run third-party tests; start it with --allow-third-party".into(),
                    );
                }
                let (target, _quota) = match self.third_party_checks(
                    &ctx.access,
                    principal.as_deref(),
                    target,
                    port,
                ) {
                    Ok(admitted) => admitted,
                    Err(why) => return self.refuse(why),
                };
                self.third_party(target, port, request, options)
                    .map(Served::Done)
            }
            _ => Err("expected setup".into()),
        }
    }

    /// Third-party mode: runs the ordered test or rr measurement as a
    /// client towards `target` (admitted), relaying it.
    fn third_party(
        &mut self,
        target: String,
        port: u16,
        order: ClientMessage,
        server: &ServerOptions,
    ) -> Result<String, String> {
        match order {
            ClientMessage::ThirdPartyRr { request, .. } => {
                let plan = match crate::rr::RrSpec::from_request(&target, port, &request).plan() {
                    // The agent's own identity towards the target, never the controller's.
                    Ok(plan) => crate::rr::Plan {
                        credentials: server.target_credentials.clone(),
                        tls: server.target_tls.clone(),
                        ..plan
                    },
                    Err(why) => return self.refuse(format!("the rr measurement ordered: {why}")),
                };
                self.relay(target, port, move |cancel, interval| {
                    let mut each = |i: &crate::rr::report::RrInterval| interval(to_json(i));
                    let report = crate::rr::client::run(&plan, &mut each, cancel);
                    report.map(|r| to_json(&r)).map_err(|e| e.message)
                })
            }
            ClientMessage::ThirdParty { config, .. } => {
                // The agent's own identity and trust towards the target, never
                // the controller's.
                let options = client::ClientOptions {
                    host: target.clone(),
                    port,
                    config: *config,
                    credentials: server.target_credentials.clone(),
                    tls: server.target_tls.clone(),
                    ..Default::default()
                };
                self.relay(target, port, move |cancel, interval| {
                    let mut each = |i: &crate::report::IntervalReport| interval(to_json(i));
                    let report = client::run(&options, &mut each, Some(cancel));
                    report.map(|r| to_json(&r)).map_err(|e| e.message)
                })
            }
            _ => Err("expected a third-party order".into()),
        }
    }

    /// Runs `test` on its own thread so this one can watch the controller
    /// (its Cancel, or its disappearance, stops the flow within a second)
    /// and the clock (a test past `--server-max-duration` is stopped), and
    /// sends back the intervals it reports and its report.
    fn relay<T>(&mut self, target: String, port: u16, test: T) -> Result<String, String>
    where
        T: FnOnce(&AtomicBool, &dyn Fn(serde_json::Value)) -> Result<serde_json::Value, String>
            + Send
            + 'static,
    {
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let relay_control = self.control.clone();
        let test = std::thread::Builder::new()
            .name("lp-relay".into())
            .spawn(move || {
                let interval = |v: serde_json::Value| {
                    let _ = relay_control.send(&ServerMessage::RelayInterval { interval: v });
                };
                test(&flag, &interval)
            })
            .map_err(|e| format!("cannot start the third-party test: {e}"))?;
        let longest = Duration::from_secs_f64(
            self.guard
                .limits
                .max_duration_s
                .min(linkperf_proto::config::MAX_SECONDS),
        );
        let started = Instant::now();
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
            // Ten seconds of grace for the target's own end of the test.
            if started.elapsed() > longest + Duration::from_secs(10) {
                cancel.store(true, Ordering::Relaxed);
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
                self.control.send(&ServerMessage::RelayReport { report })?;
                Ok(format!(
                    "third-party test for {} towards {target}:{port} done",
                    self.peer
                ))
            }
            Err(e) => self.refuse(format!(
                "third-party test towards {target}:{port} failed: {e}"
            )),
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}
