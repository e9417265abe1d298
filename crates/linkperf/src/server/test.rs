//! Sets one throughput test up for a control session: its data sockets and
//! listener, collecting the data connections and the client's Start, and
//! starting the side, which it hands to the test thread (`running`) with
//! the session. Must not greet clients or serve other kinds of session.

use super::running::{Running, Served};
use super::session::{ControlSession, Event};
use crate::control::inbox::Sender;
use crate::control::Incoming;
use crate::data;
use crate::guard;
use linkperf_engine::{facts, DataSocket, EventSink, LocalSide, StreamPlan};
use linkperf_proto::messages::StreamEndpoint;
use linkperf_proto::results::Role;
use linkperf_proto::{ClientMessage, DataHello, Preamble, Protocol, ServerMessage, TestConfig};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::ops::RangeInclusive;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Why a test ends before it starts.
enum NoStart {
    /// The client is told why (an Error message) before the session ends.
    Refuse(String),
    /// The session just ends: the client is gone, cancelled or misbehaved.
    End(String),
}

impl From<String> for NoStart {
    fn from(why: String) -> Self {
        NoStart::End(why)
    }
}

/// The test's data sockets as announced to the client, before they connect.
struct Announced {
    cookie: u64,
    /// The UDP sockets, in id order: the client opens its flows in that order.
    udp_sockets: Vec<(u32, UdpSocket)>,
    /// The data listener's buffer warnings.
    warnings: Vec<String>,
    /// When every data connection and the Start must have arrived.
    deadline: Instant,
    /// `-m`: the data listener, open for the whole test: an MPTCP peer's
    /// further subflows (MP_JOIN) are accepted through it.
    joins: Option<std::net::TcpListener>,
}

impl ControlSession {
    /// Sets up and starts the test the client asked for: the running test,
    /// with this session, for the test thread.
    pub(super) fn run_test(
        mut self,
        config: TestConfig,
        local: SocketAddr,
        data_ports: Option<&RangeInclusive<u16>>,
    ) -> Result<Served, String> {
        if let Err(why) = acceptable(&config).and_then(|()| self.guard.check_config(&config)) {
            return self.refuse(why);
        }
        let roles = data::stream_roles(&config, true);
        let permit = match self.guard.admit_test(roles.len()) {
            Ok(permit) => permit,
            Err(why) => return self.refuse(why),
        };
        let collected =
            self.announce(&config, local, data_ports, &roles)
                .and_then(|mut announced| {
                    let (plans, start_at) = self.collect(&config, local, &roles, &mut announced)?;
                    Ok((plans, start_at, announced.warnings, announced.joins))
                });
        let (plans, start_at, warnings, joins) = match collected {
            Ok(collected) => collected,
            Err(NoStart::Refuse(why)) => return self.refuse(why),
            Err(NoStart::End(why)) => return Err(why),
        };
        self.unregister();
        let side = self.start(&config, local, plans, warnings, start_at)?;
        let held = super::running::Held {
            _permit: permit,
            _joins: joins,
        };
        Ok(Served::Running(Box::new(Running::new(
            self, config, side, held,
        ))))
    }

    /// Registers the test's cookie, opens its UDP sockets or the data
    /// listener for handshake options, and sends Ready.
    fn announce(
        &mut self,
        config: &TestConfig,
        local: SocketAddr,
        data_ports: Option<&RangeInclusive<u16>>,
        roles: &[(u32, Role)],
    ) -> Result<Announced, NoStart> {
        let cookie = guard::session_cookie().map_err(NoStart::Refuse)?;
        self.register(cookie);
        let mut endpoints = Vec::new();
        let mut udp_sockets = Vec::new();
        for (id, _) in roles {
            let udp_port = if config.protocol == Protocol::Udp {
                let sock =
                    data::bind_udp(SocketAddr::new(local.ip(), 0), config).inspect_err(|e| {
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
        let deadline = Instant::now() + self.guard.limits.handshake_timeout;
        let mut warnings = Vec::new();
        let mut data_port = None;
        let mut joins = None;
        if config.protocol == Protocol::Tcp && data::handshake_options_set(config) {
            let streams = roles.len();
            let (listener, w) =
                match data::data_listener(local.ip(), data_ports, config, streams as i32) {
                    Ok(made) => made,
                    Err(e) => return Err(NoStart::Refuse(e)),
                };
            warnings = w;
            data_port = Some(listener.local_addr().map_err(|e| e.to_string())?.port());
            if config.mptcp {
                joins = listener.try_clone().ok();
            }
            spawn_data_acceptor(listener, cookie, streams, deadline, self.tx.clone());
        }
        self.control.send(&ServerMessage::Ready {
            cookie,
            streams: endpoints,
            warnings: vec![],
            data_port,
            // `client --doctor`: this host against the client's path (never applied).
            doctor: config
                .doctor
                .as_deref()
                .and_then(crate::doctor::remote::answer),
        })?;
        Ok(Announced {
            cookie,
            udp_sockets,
            warnings,
            deadline,
            joins,
        })
    }

    /// Waits for every data connection (UDP hellos first, then TCP
    /// connections in any order) and the client's Start, whose start time
    /// it returns with the streams.
    fn collect(
        &self,
        config: &TestConfig,
        local: SocketAddr,
        roles: &[(u32, Role)],
        announced: &mut Announced,
    ) -> Result<(Vec<StreamPlan>, Option<u64>), NoStart> {
        let (cookie, deadline) = (announced.cookie, announced.deadline);
        let role_of = |id: u32| {
            roles
                .iter()
                .find(|r| r.0 == id)
                .map(|r| r.1)
                .unwrap_or(Role::Receiver)
        };
        let mut plans = Vec::new();
        let mut start_at: Option<Option<u64>> = None;
        let mut tcp_pending: Vec<u32> = if config.protocol == Protocol::Tcp {
            roles.iter().map(|r| r.0).collect()
        } else {
            vec![]
        };
        for (id, sock) in std::mem::take(&mut announced.udp_sockets) {
            match data::accept_udp(&sock, cookie, id, self.peer.ip(), deadline) {
                Ok(()) => plans.push(StreamPlan {
                    id,
                    role: role_of(id),
                    socket: DataSocket::Udp(sock),
                }),
                Err(e) => return Err(NoStart::Refuse(e)),
            }
        }
        while !tcp_pending.is_empty() || start_at.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Data(id, stream)) if tcp_pending.contains(&id) => {
                    tcp_pending.retain(|&p| p != id);
                    if let Err(e) = data::prepare_accepted(&stream, config) {
                        return Err(NoStart::Refuse(e));
                    }
                    plans.push(StreamPlan {
                        id,
                        role: role_of(id),
                        socket: DataSocket::Tcp(stream),
                    });
                }
                Ok(Event::Data(..)) => {}
                Ok(Event::Client(Incoming::Message(ClientMessage::Start { start_at_unix_ms }))) => {
                    check_start_time(start_at_unix_ms).map_err(NoStart::Refuse)?;
                    start_at = Some(start_at_unix_ms)
                }
                Ok(Event::Client(Incoming::Message(ClientMessage::Cancel { .. }))) => {
                    return Err(NoStart::End("client cancelled before the start".into()))
                }
                Ok(Event::Client(Incoming::Message(_))) => {
                    return Err(NoStart::End("unexpected message before start".into()))
                }
                Ok(Event::Client(Incoming::Lost(why))) => return Err(NoStart::End(why)),
                Ok(Event::Side(_)) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(NoStart::Refuse(format!(
                        "{} data connection(s) never arrived; is a firewall blocking port {}?",
                        tcp_pending.len(),
                        local.port()
                    )))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(NoStart::End("internal channel closed".into()))
                }
            }
        }
        Ok((plans, start_at.flatten()))
    }

    /// Starts the local streams at the agreed time and tells the client when.
    fn start(
        &self,
        config: &TestConfig,
        local: SocketAddr,
        mut plans: Vec<StreamPlan>,
        warnings: Vec<String>,
        start_at: Option<u64>,
    ) -> Result<LocalSide, String> {
        plans.sort_by_key(|p| p.id);
        let same_clock = data::same_host(self.peer.ip(), local.ip());
        let mut side = LocalSide::new(config.clone(), plans, same_clock, warnings);
        let (at, start_unix_ms) = data::start_instant(start_at);
        let tx = self.tx.clone();
        let sink: EventSink = Arc::new(move |e| {
            let _ = tx.send(Event::Side(e));
            super::running::wake();
        });
        side.start(at, sink);
        self.control
            .send(&ServerMessage::Started { start_unix_ms })?;
        Ok(side)
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

/// A start time a day or more ahead would hold the session (and overflow
/// the clock arithmetic far enough out): refused.
fn check_start_time(start_at_unix_ms: Option<u64>) -> Result<(), String> {
    let Some(at) = start_at_unix_ms else {
        return Ok(());
    };
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let ahead_s = at.saturating_sub(now_ms) / 1000;
    if ahead_s as f64 > linkperf_proto::config::MAX_SECONDS {
        return Err(format!(
            "the start time is {ahead_s} s ahead; at most {} s (a day) is accepted",
            linkperf_proto::config::MAX_SECONDS
        ));
    }
    Ok(())
}

/// Why this server cannot run `config`, if it cannot.
fn acceptable(config: &TestConfig) -> Result<(), String> {
    config.validate()?;
    if let Some(cc) = &config.congestion {
        if !facts::available_congestion_controls()
            .iter()
            .any(|c| c == cc)
        {
            return Err(format!(
                "server: {}",
                linkperf_engine::sockopt::congestion_unavailable(cc)
            ));
        }
    }
    Ok(())
}
