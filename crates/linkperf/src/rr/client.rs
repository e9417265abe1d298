//! The client side of `linkperf rr`: the control session, the transaction
//! loops (one OS thread, blocking sockets) and the report.
//!
//! Every RTT is measured here with the monotonic clock between the send and
//! the receive system calls, so it needs no agreement between clocks.

use super::report::{
    Difference, LoadSummary, OneWay, RateCheck, RrInterval, RrReport, RrStart, RrSummary,
    RrTestInfo, ServerCounts, SignedStats, SizePoint,
};
use super::stats::{self, Percentiles, SignedHistogram};
use super::{Mode, Plan};
use crate::client::{resolve, ClientError};
use hdrhistogram::Histogram;
use linkperf_proto::rr::{
    self, RrClientMessage, RrClientSession, RrServerMessage, RR_VERSION, UDP_HEADER_LEN,
};
use linkperf_proto::{Preamble, Protocol, TestConfig};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn fail(message: impl Into<String>) -> ClientError {
    ClientError {
        message: message.into(),
        exit_code: 1,
    }
}

/// How long the server has to greet us.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// TCP: a server silent this long (default) has stopped answering.
const TCP_STALL: Duration = Duration::from_secs(10);
/// UDP: no answer at all for this long (default) ends the test.
const UDP_STALL: Duration = Duration::from_secs(10);
/// UDP adaptive loss timeout: 3x the slowest RTT seen, within these bounds.
const AUTO_TIMEOUT_MIN: Duration = Duration::from_millis(50);
const AUTO_TIMEOUT_MAX: Duration = Duration::from_secs(3);
/// Transactions run before each --sizes step and not counted.
const SIZE_WARMUP: u64 = 10;
/// A paced sender behind schedule catches up at most this much.
const MAX_PACING_DEBT: Duration = Duration::from_millis(10);

fn wall_ns_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

// ------------------------------------------------------------------ control

struct Welcome {
    cookie: u64,
    udp_port: Option<u16>,
    software: String,
    boot_id: Option<String>,
}

/// The session's control connection.
struct Control {
    stream: TcpStream,
    session: RrClientSession,
}

fn connect_error(addr: SocketAddr, e: std::io::Error) -> ClientError {
    match e.kind() {
        ErrorKind::ConnectionRefused => fail(format!(
            "connection refused by {addr}: is `linkperf server` running there (port {})?",
            addr.port()
        )),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => fail(format!(
            "no answer from {addr} within {} s: host down or port filtered",
            HANDSHAKE_TIMEOUT.as_secs()
        )),
        _ => fail(format!("cannot connect to {addr}: {e}")),
    }
}

fn tcp_connect(
    server: SocketAddr,
    bind: Option<IpAddr>,
    timeout: Duration,
) -> Result<TcpStream, ClientError> {
    use socket2::{Domain, Socket, Type};
    let domain = if server.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let sock = Socket::new(domain, Type::STREAM, None).map_err(|e| fail(format!("socket: {e}")))?;
    if let Some(ip) = bind {
        let local = SocketAddr::new(ip, 0);
        sock.bind(&local.into())
            .map_err(|e| fail(format!("cannot bind to {ip}: {e}")))?;
    }
    sock.connect_timeout(&server.into(), timeout)
        .map_err(|e| connect_error(server, e))?;
    let stream: TcpStream = sock.into();
    stream.set_nodelay(true).ok();
    Ok(stream)
}

impl Control {
    fn open(
        server: SocketAddr,
        plan: &Plan,
    ) -> Result<(Control, Welcome, SocketAddr), ClientError> {
        let mut stream = tcp_connect(server, plan.bind, HANDSHAKE_TIMEOUT)?;
        linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(&stream));
        let local = stream.local_addr().map_err(|e| fail(e.to_string()))?;
        let mut session = RrClientSession::new();
        let mut hello = Preamble::Rr.bytes().to_vec();
        hello.extend(
            session
                .send(&RrClientMessage::Hello {
                    version: RR_VERSION,
                    software: crate::report::SOFTWARE.into(),
                    protocol: plan.protocol,
                })
                .map_err(|e| fail(e.to_string()))?,
        );
        stream
            .write_all(&hello)
            .map_err(|e| fail(format!("control connection to {server}: {e}")))?;
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).ok();
        let mut control = Control { stream, session };
        let welcome = match control.read(server, "greeting")? {
            RrServerMessage::Welcome {
                cookie,
                udp_port,
                software,
                boot_id,
                ..
            } => Welcome {
                cookie,
                udp_port,
                software,
                boot_id,
            },
            RrServerMessage::Error { message } => return Err(fail(format!("server: {message}"))),
            other => {
                return Err(fail(format!(
                    "unexpected answer from the server: {other:?}"
                )))
            }
        };
        // Idle gaps may be long; keepalive watches the connection meanwhile.
        control.stream.set_read_timeout(None).ok();
        Ok((control, welcome, local))
    }

    fn read(&mut self, server: SocketAddr, what: &str) -> Result<RrServerMessage, ClientError> {
        let mut buf = vec![0u8; 4096];
        loop {
            let want = self.session.wanted().min(buf.len());
            let n = match self.stream.read(&mut buf[..want]) {
                Ok(0) => {
                    return Err(fail(format!(
                        "{server} closed the connection during the {what}: is it a linkperf server of the same release?"
                    )))
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(fail(format!(
                        "the server at {server} did not answer ({what}) within {} s: is it a linkperf server?",
                        HANDSHAKE_TIMEOUT.as_secs()
                    )))
                }
                Err(e) => return Err(fail(format!("control connection to {server}: {e}"))),
            };
            match self.session.receive(&buf[..n]) {
                Ok(mut m) if !m.is_empty() => return Ok(m.remove(0)),
                Ok(_) => {}
                Err(e) => {
                    return Err(fail(format!(
                        "the server at {server} does not speak linkperf rr: {e}"
                    )))
                }
            }
        }
    }

    fn finish(&mut self, server: SocketAddr) -> Result<ServerCounts, ClientError> {
        let bytes = self
            .session
            .send(&RrClientMessage::Finish)
            .map_err(|e| fail(e.to_string()))?;
        self.stream
            .write_all(&bytes)
            .map_err(|e| fail(format!("control connection to {server}: {e}")))?;
        self.stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).ok();
        match self.read(server, "final count")? {
            RrServerMessage::Done {
                requests,
                transactions,
                connections,
            } => Ok(ServerCounts {
                requests,
                transactions,
                connections,
            }),
            RrServerMessage::Error { message } => Err(fail(format!("server: {message}"))),
            other => Err(fail(format!(
                "unexpected answer from the server: {other:?}"
            ))),
        }
    }
}

/// The bytes that open a TCP data connection of a session.
fn join_bytes(cookie: u64, request: u32, response: u32) -> Vec<u8> {
    let mut session = RrClientSession::new();
    let mut out = Preamble::Rr.bytes().to_vec();
    out.extend(
        session
            .send(&RrClientMessage::Join {
                cookie,
                request,
                response,
            })
            .expect("join is legal on a new connection"),
    );
    out
}

// --------------------------------------------------------------------- flows

/// A persistent transaction channel: one TCP connection or the UDP flow.
enum Flow {
    Tcp {
        stream: TcpStream,
        request: Vec<u8>,
        response: Vec<u8>,
    },
    Udp {
        sock: UdpSocket,
        request: Vec<u8>,
        response_size: u32,
        buf: Vec<u8>,
    },
}

/// What came back.
#[derive(Clone, Copy)]
struct Answer {
    /// UDP: the request it answers; TCP: `None`, answers come in order and
    /// each one is for the oldest request in flight.
    seq: Option<u64>,
    server_rx_ns: Option<u64>,
}

impl Flow {
    fn open_tcp(
        server: SocketAddr,
        bind: Option<IpAddr>,
        cookie: u64,
        request: u32,
        response: u32,
        stall: Duration,
    ) -> Result<Flow, ClientError> {
        let mut stream = tcp_connect(server, bind, HANDSHAKE_TIMEOUT)?;
        stream
            .write_all(&join_bytes(cookie, request, response))
            .map_err(|e| fail(format!("data connection to {server}: {e}")))?;
        stream.set_read_timeout(Some(stall)).ok();
        Ok(Flow::Tcp {
            stream,
            request: vec![0u8; request as usize],
            response: vec![0u8; response as usize],
        })
    }

    fn open_udp(
        server: SocketAddr,
        bind: Option<IpAddr>,
        cookie: u64,
        request: u32,
        response: u32,
    ) -> Result<Flow, ClientError> {
        let local = SocketAddr::new(
            bind.unwrap_or(if server.is_ipv6() {
                IpAddr::from([0u16; 8])
            } else {
                IpAddr::from([0u8; 4])
            }),
            0,
        );
        let config = TestConfig {
            protocol: Protocol::Udp,
            ..Default::default()
        };
        let sock = crate::data::connect_udp(local, server, &config, cookie, 0).map_err(fail)?;
        let mut flow = Flow::Udp {
            sock,
            request: Vec::new(),
            response_size: 0,
            buf: vec![0u8; 65_536],
        };
        flow.set_sizes(request, response);
        Ok(flow)
    }

    /// UDP: the sizes of the next transactions (TCP fixes them per connection).
    fn set_sizes(&mut self, request_size: u32, response: u32) {
        if let Flow::Udp {
            request,
            response_size,
            ..
        } = self
        {
            request.clear();
            request.resize(request_size as usize, 0);
            *response_size = response;
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Flow::Tcp { stream, .. } => stream.as_raw_fd(),
            Flow::Udp { sock, .. } => sock.as_raw_fd(),
        }
    }

    fn set_timeout(&self, d: Duration) {
        let _ = match self {
            Flow::Tcp { stream, .. } => stream.set_read_timeout(Some(d)),
            Flow::Udp { sock, .. } => sock.set_read_timeout(Some(d)),
        };
    }

    #[inline]
    fn send(&mut self, seq: u64) -> std::io::Result<()> {
        match self {
            Flow::Tcp {
                stream, request, ..
            } => stream.write_all(request),
            Flow::Udp {
                sock,
                request,
                response_size,
                ..
            } => {
                rr::write_udp_request(&mut request[..UDP_HEADER_LEN], seq, *response_size);
                match sock.send(request) {
                    Ok(_) => Ok(()),
                    // A full send buffer or an ICMP error for an earlier
                    // datagram: this transaction is lost, the test goes on.
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::WouldBlock
                                | ErrorKind::ConnectionRefused
                                | ErrorKind::Interrupted
                        ) =>
                    {
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Waits for the next answer until the socket's read timeout; `Ok(None)`
    /// on timeout (UDP) or a datagram that is not an answer.
    #[inline]
    fn recv(&mut self) -> std::io::Result<Option<Answer>> {
        match self {
            Flow::Tcp {
                stream, response, ..
            } => {
                let mut got = 0;
                while got < response.len() {
                    match stream.read(&mut response[got..]) {
                        Ok(0) => {
                            return Err(std::io::Error::new(
                                ErrorKind::UnexpectedEof,
                                "the server closed the data connection",
                            ))
                        }
                        Ok(n) => got += n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(Some(Answer {
                    seq: None,
                    server_rx_ns: rr::parse_tcp_stamp(response),
                }))
            }
            Flow::Udp { sock, buf, .. } => match sock.recv(buf) {
                Ok(n) => Ok(rr::parse_udp_response(&buf[..n]).map(|(seq, rx)| Answer {
                    seq: Some(seq),
                    server_rx_ns: Some(rx),
                })),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock
                            | ErrorKind::TimedOut
                            | ErrorKind::Interrupted
                            | ErrorKind::ConnectionRefused
                    ) =>
                {
                    Ok(None)
                }
                Err(e) => Err(e),
            },
        }
    }
}

/// Waits until `fd` is readable or `wait` has passed; true if readable.
fn poll_readable(fd: RawFd, wait: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    rc > 0
}

// ------------------------------------------------------------------ recording

/// Everything measured in one phase of the test.
struct Recorder {
    t0: Instant,
    /// Wall clock at `t0`, to turn monotonic instants into wall time for
    /// one-way delay without a second clock read per transaction.
    wall0_ns: u64,
    owd: bool,
    rtt: Histogram<u64>,
    forward: SignedHistogram,
    reverse: SignedHistogram,
    transactions: u64,
    attempted: u64,
    lost: u64,
    late: u64,
    /// Slowest RTT so far, for the adaptive UDP timeout.
    max_rtt: Duration,
    // Intervals.
    interval: Option<Duration>,
    phase: Option<&'static str>,
    next_tick: Instant,
    tick_start: Instant,
    tick_rtt: Histogram<u64>,
    tick_transactions: u64,
    tick_lost: u64,
    intervals: Vec<RrInterval>,
}

impl Recorder {
    fn new(t0: Instant, wall0_ns: u64, owd: bool, interval: Option<Duration>) -> Recorder {
        let now = Instant::now();
        Recorder {
            t0,
            wall0_ns,
            owd,
            rtt: stats::new_histogram(),
            forward: SignedHistogram::default(),
            reverse: SignedHistogram::default(),
            transactions: 0,
            attempted: 0,
            lost: 0,
            late: 0,
            max_rtt: Duration::ZERO,
            interval,
            phase: None,
            next_tick: now + interval.unwrap_or(Duration::from_secs(86_400 * 365)),
            tick_start: now,
            tick_rtt: stats::new_histogram(),
            tick_transactions: 0,
            tick_lost: 0,
            intervals: Vec::new(),
        }
    }

    /// Restarts the interval clock (at the start of the measured part).
    fn start_intervals(&mut self, now: Instant) {
        self.tick_start = now;
        if let Some(i) = self.interval {
            self.next_tick = now + i;
        }
    }

    fn wall_ns(&self, at: Instant) -> i64 {
        (self.wall0_ns + at.saturating_duration_since(self.t0).as_nanos() as u64) as i64
    }

    #[inline]
    fn record(&mut self, sent: Instant, now: Instant, server_rx_ns: Option<u64>) {
        let rtt = now.saturating_duration_since(sent);
        let ns = rtt.as_nanos() as u64;
        stats::record(&mut self.rtt, ns);
        if self.interval.is_some() {
            stats::record(&mut self.tick_rtt, ns);
            self.tick_transactions += 1;
        }
        self.transactions += 1;
        if rtt > self.max_rtt {
            self.max_rtt = rtt;
        }
        if self.owd {
            if let Some(rx) = server_rx_ns {
                let rx = rx as i64;
                self.forward.record(rx - self.wall_ns(sent));
                self.reverse.record(self.wall_ns(now) - rx);
            }
        }
    }

    #[inline]
    fn lose(&mut self) {
        self.lost += 1;
        self.tick_lost += 1;
    }

    /// Emits the intervals that ended by `now`.
    #[inline]
    fn tick(&mut self, now: Instant, udp: bool, on_interval: &mut dyn FnMut(&RrInterval)) {
        if now < self.next_tick {
            return;
        }
        let Some(step) = self.interval else { return };
        while now >= self.next_tick {
            let end = self.next_tick;
            self.emit(end, udp, on_interval);
            self.next_tick += step;
        }
    }

    fn emit(&mut self, end: Instant, udp: bool, on_interval: &mut dyn FnMut(&RrInterval)) {
        let seconds = end.saturating_duration_since(self.tick_start).as_secs_f64();
        let i = RrInterval {
            start: self
                .tick_start
                .saturating_duration_since(self.t0)
                .as_secs_f64(),
            end: end.saturating_duration_since(self.t0).as_secs_f64(),
            phase: self.phase,
            transactions: self.tick_transactions,
            transactions_per_second: if seconds > 0.0 {
                self.tick_transactions as f64 / seconds
            } else {
                0.0
            },
            lost: udp.then_some(self.tick_lost),
            rtt_ms: stats::summarize(&self.tick_rtt),
        };
        on_interval(&i);
        self.intervals.push(i);
        self.tick_rtt.reset();
        self.tick_transactions = 0;
        self.tick_lost = 0;
        self.tick_start = end;
    }

    /// Emits the last, partial interval if it holds anything.
    fn flush(&mut self, now: Instant, udp: bool, on_interval: &mut dyn FnMut(&RrInterval)) {
        if self.interval.is_some()
            && (self.tick_transactions > 0 || self.tick_lost > 0)
            && now > self.tick_start
        {
            self.emit(now, udp, on_interval);
        }
    }
}

/// When a phase of transactions ends.
struct Budget<'a> {
    deadline: Option<Instant>,
    count: Option<u64>,
    cancel: &'a AtomicBool,
    /// Ends the phase when true (the load finished, or started).
    until: Option<&'a AtomicBool>,
}

impl Budget<'_> {
    #[inline]
    fn over(&self, now: Instant, attempted: u64) -> bool {
        self.deadline.is_some_and(|d| now >= d)
            || self.count.is_some_and(|c| attempted >= c)
            || self.cancel.load(Ordering::Relaxed)
            || self.until.is_some_and(|u| u.load(Ordering::Relaxed))
    }
}

/// How the transactions of a phase are sent.
#[derive(Clone, Copy)]
struct Pace {
    burst: usize,
    gap: Option<Duration>,
    /// UDP: fixed loss timeout; TCP: stall timeout. None = defaults.
    timeout: Option<Duration>,
}

/// Runs transactions on `flow` until the budget is spent, then waits for the
/// ones in flight. Sequence numbers continue from `next_seq`.
fn run_flow(
    flow: &mut Flow,
    rec: &mut Recorder,
    pace: Pace,
    budget: &Budget,
    next_seq: &mut u64,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(), ClientError> {
    let udp = matches!(flow, Flow::Udp { .. });
    let mut outstanding: VecDeque<(u64, Instant)> = VecDeque::with_capacity(pace.burst);
    let mut timeout = match (udp, pace.timeout) {
        (_, Some(t)) => t,
        (true, None) if rec.max_rtt > Duration::ZERO => {
            (rec.max_rtt * 3).clamp(AUTO_TIMEOUT_MIN, AUTO_TIMEOUT_MAX)
        }
        (true, None) => AUTO_TIMEOUT_MAX,
        (false, None) => TCP_STALL,
    };
    let stall = pace.timeout.map_or(UDP_STALL, |t| UDP_STALL.max(t * 2));
    flow.set_timeout(timeout);
    let first_attempt = rec.attempted;
    let mut sending = true;
    let mut now = Instant::now();
    let mut next_send = now;
    let mut last_answer = now;
    loop {
        if sending && budget.over(now, rec.attempted - first_attempt) {
            sending = false;
        }
        if !sending && outstanding.is_empty() {
            break;
        }
        // Send while the window is open and the schedule allows.
        while sending && outstanding.len() < pace.burst {
            if let Some(gap) = pace.gap {
                if now < next_send {
                    break;
                }
                next_send += gap;
                if next_send + MAX_PACING_DEBT < now {
                    next_send = now;
                }
            }
            let seq = *next_seq;
            *next_seq += 1;
            let sent = Instant::now();
            flow.send(seq)
                .map_err(|e| fail(format!("sending a request: {e}")))?;
            outstanding.push_back((seq, sent));
            rec.attempted += 1;
            if budget
                .count
                .is_some_and(|c| rec.attempted - first_attempt >= c)
            {
                sending = false;
            }
        }
        if outstanding.is_empty() {
            // Paced and nothing in flight: sleep until the next send.
            if sending {
                if let Some(wait) = next_send.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            now = Instant::now();
            rec.tick(now, udp, on_interval);
            continue;
        }
        // Paced with room in the window: wait for an answer or the next send.
        if sending && pace.gap.is_some() && outstanding.len() < pace.burst {
            let wait = next_send.saturating_duration_since(Instant::now());
            if !poll_readable(flow.fd(), wait) {
                now = Instant::now();
                rec.tick(now, udp, on_interval);
                continue;
            }
        }
        match flow.recv() {
            Ok(Some(answer)) => {
                now = Instant::now();
                let found = match answer.seq {
                    None => outstanding.pop_front(),
                    Some(seq) if outstanding.front().is_some_and(|f| f.0 == seq) => {
                        outstanding.pop_front()
                    }
                    Some(seq) => outstanding
                        .iter()
                        .position(|o| o.0 == seq)
                        .and_then(|i| outstanding.remove(i)),
                };
                match found {
                    Some((_, sent)) => {
                        rec.record(sent, now, answer.server_rx_ns);
                        last_answer = now;
                        if udp && pace.timeout.is_none() {
                            let auto = (rec.max_rtt * 3).clamp(AUTO_TIMEOUT_MIN, AUTO_TIMEOUT_MAX);
                            // Grow only, and only by a margin: each change is a system call.
                            if auto > timeout + timeout / 4 {
                                timeout = auto;
                                flow.set_timeout(timeout);
                            }
                        }
                    }
                    None if answer.seq.is_some_and(|s| s < *next_seq) => rec.late += 1,
                    None => {}
                }
            }
            Ok(None) => now = Instant::now(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(fail(format!(
                    "the server stopped answering: no response for {} s on the TCP connection",
                    timeout.as_secs_f64()
                )))
            }
            Err(e) => return Err(fail(format!("waiting for a response: {e}"))),
        }
        if udp {
            // A transaction unanswered for the timeout is lost (the slack
            // keeps a wake-up a hair early from costing a second timeout).
            let slack = timeout / 16;
            while let Some(&(_, sent)) = outstanding.front() {
                if now + slack >= sent + timeout {
                    outstanding.pop_front();
                    rec.lose();
                } else {
                    break;
                }
            }
            if now.saturating_duration_since(last_answer) > stall {
                return Err(fail(format!(
                    "the server stopped answering: no UDP response for {} s ({} transactions lost); is UDP blocked?",
                    stall.as_secs(),
                    rec.lost
                )));
            }
        }
        rec.tick(now, udp, on_interval);
    }
    Ok(())
}

/// One transaction on a persistent flow, waiting at most `timeout`; answers
/// to earlier (timed-out) requests are discarded.
fn single(
    flow: &mut Flow,
    seq: u64,
    timeout: Duration,
) -> Result<Option<(Instant, Instant, Option<u64>)>, ClientError> {
    flow.set_timeout(timeout);
    let sent = Instant::now();
    flow.send(seq)
        .map_err(|e| fail(format!("sending a request: {e}")))?;
    loop {
        match flow.recv() {
            Ok(Some(a)) if a.seq.is_none() || a.seq == Some(seq) => {
                return Ok(Some((sent, Instant::now(), a.server_rx_ns)))
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                if sent.elapsed() >= timeout - timeout / 16 {
                    return Ok(None);
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(fail(format!(
                    "the server stopped answering: no response for {} s on the TCP connection",
                    timeout.as_secs_f64()
                )))
            }
            Err(e) => return Err(fail(format!("waiting for a response: {e}"))),
        }
    }
}

// ----------------------------------------------------------------------- run

/// Context shared by the modes.
struct Run<'a> {
    plan: &'a Plan,
    server: SocketAddr,
    cookie: u64,
    udp_port: Option<u16>,
    t0: Instant,
    wall0_ns: u64,
    owd: bool,
    cancel: &'a AtomicBool,
    next_seq: u64,
    /// Transactions run but not measured (warm-up, ramp-up); the server
    /// counts them too.
    warmup: u64,
    warnings: Vec<String>,
}

impl Run<'_> {
    fn recorder(&self, intervals: bool) -> Recorder {
        Recorder::new(
            self.t0,
            self.wall0_ns,
            self.owd,
            if intervals { self.plan.interval } else { None },
        )
    }

    fn open_flow(&self, request: u32, response: u32) -> Result<Flow, ClientError> {
        match self.plan.protocol {
            Protocol::Tcp => Flow::open_tcp(
                self.server,
                self.plan.bind,
                self.cookie,
                request,
                response,
                self.plan.timeout.unwrap_or(TCP_STALL),
            ),
            Protocol::Udp => {
                let port = self
                    .udp_port
                    .ok_or_else(|| fail("the server gave no UDP port for the session"))?;
                Flow::open_udp(
                    SocketAddr::new(self.server.ip(), port),
                    self.plan.bind,
                    self.cookie,
                    request,
                    response,
                )
            }
        }
    }

    fn pace(&self) -> Pace {
        Pace {
            burst: self.plan.burst as usize,
            gap: self.plan.rate.map(|r| Duration::from_secs_f64(1.0 / r)),
            timeout: self.plan.timeout,
        }
    }

    fn budget(&self, start: Instant) -> Budget<'_> {
        Budget {
            deadline: match self.plan.count {
                Some(_) => None,
                None => Some(start + self.plan.duration),
            },
            count: self.plan.count,
            cancel: self.cancel,
            until: None,
        }
    }
}

/// What the modes return for the report.
#[derive(Default)]
struct Outcome {
    /// Time spent measuring (transactions/s is over this).
    seconds: f64,
    /// The UDP loss timeout when the mode fixed its own.
    timeout: Option<Duration>,
    extra: Extra,
    sizes: Option<Vec<SizePoint>>,
    fit: Option<stats::Fit>,
}

#[derive(Default)]
struct Extra {
    connect: Option<Percentiles>,
    transaction: Option<Percentiles>,
    first: Option<Percentiles>,
    second: Option<Percentiles>,
    difference: Option<Difference>,
    idle: Option<Percentiles>,
    loaded: Option<Percentiles>,
    load: Option<LoadSummary>,
}

/// Runs the plan against the server and builds the report.
pub fn run(
    plan: &Plan,
    on_interval: &mut dyn FnMut(&RrInterval),
    cancel: &AtomicBool,
) -> Result<RrReport, ClientError> {
    let server = resolve(&plan.host, plan.port, plan.family)?;
    let (mut control, welcome, local) = Control::open(server, plan)?;
    let same_kernel = welcome.boot_id.is_some() && welcome.boot_id == super::server::boot_id();
    let (clock, clock_reason) = if same_kernel {
        (
            "shared",
            "client and server run on one kernel (same host or its network namespaces): one wall clock".to_string(),
        )
    } else if plan.clock_sync {
        (
            "synchronised",
            "--clock-sync: the user states both clocks are synchronised (PTP/NTP)".to_string(),
        )
    } else {
        (
            "independent",
            "client and server clocks are independent: RTT only (use --clock-sync if they are synchronised)".to_string(),
        )
    };
    linkperf_engine::sockopt::tighten_timer_slack();
    let t0 = Instant::now();
    let wall0_ns = wall_ns_now();
    let mut run = Run {
        plan,
        server,
        cookie: welcome.cookie,
        udp_port: welcome.udp_port,
        t0,
        wall0_ns,
        owd: clock != "independent",
        cancel,
        next_seq: 0,
        warmup: 0,
        warnings: Vec::new(),
    };
    let (main, outcome) = match &plan.mode {
        Mode::Rr => plain(&mut run, on_interval)?,
        Mode::Connect => connect_mode(&mut run, on_interval)?,
        Mode::Cold { idle } => cold(&mut run, *idle)?,
        Mode::Sizes { sizes, echo } => sizes_mode(&mut run, sizes, *echo)?,
        Mode::Load(load) => load_mode(&mut run, load, on_interval)?,
    };
    let interrupted = cancel.load(Ordering::Relaxed);
    let server_counts = control.finish(server)?;
    drop(control);

    let rtt = stats::summarize(&main.rtt).ok_or_else(|| {
        fail(match plan.protocol {
            Protocol::Udp => format!(
                "no transaction completed: all {} requests went unanswered; is UDP to {} blocked?",
                main.attempted,
                server.ip()
            ),
            Protocol::Tcp => "no transaction completed".to_string(),
        })
    })?;
    let udp = plan.protocol == Protocol::Udp;
    let measured_seconds = outcome.seconds;
    let mut errors = Vec::new();
    let rate = match (plan.rate, &plan.mode) {
        (Some(target), Mode::Rr | Mode::Connect | Mode::Sizes { .. }) => {
            let achieved = main.attempted as f64 / measured_seconds.max(1e-9);
            let reached = achieved >= 0.95 * target;
            if !reached && !interrupted {
                errors.push(format!(
                    "rate {} transactions/s not reached: achieved {:.0}/s ({} in flight at a mean RTT of {:.3} ms allows about {:.0}/s; raise --burst)",
                    trim_float(target),
                    achieved,
                    plan.burst,
                    rtt.mean,
                    plan.burst as f64 * 1e3 / rtt.mean.max(1e-6)
                ));
            }
            Some(RateCheck {
                target_per_second: target,
                achieved_per_second: achieved,
                reached,
            })
        }
        (Some(target), _) => Some(RateCheck {
            target_per_second: target,
            achieved_per_second: main.attempted as f64 / measured_seconds.max(1e-9),
            reached: true,
        }),
        _ => None,
    };
    let one_way_ms = if run.owd {
        match (main.forward.summary(), main.reverse.summary()) {
            (Some(f), Some(r)) => Some(OneWay {
                clock,
                forward_ms: signed(f),
                reverse_ms: signed(r),
            }),
            _ => None,
        }
    } else {
        None
    };
    let extra = outcome.extra;
    let summary = RrSummary {
        transactions: main.transactions,
        attempted: main.attempted,
        warmup: run.warmup,
        seconds: measured_seconds,
        transactions_per_second: main.transactions as f64 / measured_seconds.max(1e-9),
        server: Some(server_counts),
        rtt_ms: rtt,
        lost: udp.then_some(main.lost),
        loss_percent: udp.then(|| {
            if main.attempted > 0 {
                main.lost as f64 * 100.0 / main.attempted as f64
            } else {
                0.0
            }
        }),
        late: udp.then_some(main.late),
        timeout_ms: udp.then(|| {
            plan.timeout
                .or(outcome.timeout)
                .unwrap_or_else(|| (main.max_rtt * 3).clamp(AUTO_TIMEOUT_MIN, AUTO_TIMEOUT_MAX))
                .as_secs_f64()
                * 1e3
        }),
        rate,
        connect_ms: extra.connect,
        transaction_ms: extra.transaction,
        first_rtt_ms: extra.first,
        second_rtt_ms: extra.second,
        first_minus_second_ms: extra.difference,
        idle_rtt_ms: extra.idle,
        loaded_rtt_ms: extra.loaded,
        load: extra.load,
        one_way_ms,
    };
    let mut intervals = main.intervals.clone();
    intervals.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok(RrReport {
        schema: crate::report::SCHEMA,
        software: crate::report::SOFTWARE.into(),
        test: RrTestInfo {
            kind: "rr",
            server: plan.host.clone(),
            port: plan.port,
            protocol: if udp { "udp" } else { "tcp" },
            mode: plan.mode.name(),
            request: plan.request,
            response: plan.response,
            burst: plan.burst,
            rate_per_second: plan.rate,
            duration_s: plan.count.is_none().then_some(plan.duration.as_secs_f64()),
            count: plan.count,
            interval_s: plan.interval.map_or(0.0, |d| d.as_secs_f64()),
            timeout_ms: plan.timeout.map(|t| t.as_secs_f64() * 1e3),
            idle_s: match plan.mode {
                Mode::Cold { idle } => Some(idle.as_secs_f64()),
                _ => None,
            },
            sizes: match &plan.mode {
                Mode::Sizes { sizes, .. } => Some(sizes.clone()),
                _ => None,
            },
            load: match &plan.mode {
                Mode::Load(l) => Some(l.args.clone()),
                _ => None,
            },
        },
        start: RrStart {
            timestamp_unix_ms: wall0_ns / 1_000_000,
            local: local.to_string(),
            remote: server.to_string(),
            remote_software: welcome.software,
            clock,
            clock_reason,
        },
        intervals,
        summary,
        histogram: stats::buckets(&main.rtt),
        sizes: outcome.sizes,
        fit: outcome.fit,
        warnings: run.warnings,
        errors,
        interrupted,
    })
}

fn signed(s: (u64, f64, f64, f64, f64, f64)) -> SignedStats {
    SignedStats {
        count: s.0,
        min: s.1,
        mean: s.2,
        p50: s.3,
        p99: s.4,
        max: s.5,
    }
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

// --------------------------------------------------------------------- modes

/// Plain request/response on one flow.
fn plain(
    run: &mut Run,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(Recorder, Outcome), ClientError> {
    let mut flow = run.open_flow(run.plan.request, run.plan.response)?;
    let mut rec = run.recorder(true);
    let start = Instant::now();
    rec.start_intervals(start);
    let budget = run.budget(start);
    let mut seq = run.next_seq;
    run_flow(
        &mut flow,
        &mut rec,
        run.pace(),
        &budget,
        &mut seq,
        on_interval,
    )?;
    run.next_seq = seq;
    let end = Instant::now();
    rec.flush(end, run.plan.protocol == Protocol::Udp, on_interval);
    Ok((
        rec,
        Outcome {
            seconds: (end - start).as_secs_f64(),
            ..Default::default()
        },
    ))
}

/// TCP_CRR: connect + request/response + close per transaction.
fn connect_mode(
    run: &mut Run,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let join = {
        let mut j = join_bytes(run.cookie, plan.request, plan.response);
        j.extend(std::iter::repeat_n(0u8, plan.request as usize));
        j
    };
    let mut response = vec![0u8; plan.response as usize];
    let stall = plan.timeout.unwrap_or(TCP_STALL);
    let mut rec = run.recorder(true);
    let mut connect_h = stats::new_histogram();
    let mut total_h = stats::new_histogram();
    let start = Instant::now();
    rec.start_intervals(start);
    let budget = run.budget(start);
    let gap = plan.rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let mut next_send = start;
    let mut now = start;
    while !budget.over(now, rec.attempted) {
        if let Some(gap) = gap {
            if let Some(wait) = next_send.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            next_send += gap;
            if next_send + MAX_PACING_DEBT < Instant::now() {
                next_send = Instant::now();
            }
        }
        rec.attempted += 1;
        let t_start = Instant::now();
        let mut stream = tcp_connect(run.server, plan.bind, stall)?;
        let t_connected = Instant::now();
        stream.set_read_timeout(Some(stall)).ok();
        stream
            .write_all(&join)
            .map_err(|e| fail(format!("sending a request: {e}")))?;
        stream.read_exact(&mut response).map_err(|e| {
            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                fail(format!(
                    "the server stopped answering: no response within {} s",
                    stall.as_secs_f64()
                ))
            } else {
                fail(format!("waiting for a response: {e}"))
            }
        })?;
        let t_answered = Instant::now();
        drop(stream);
        now = Instant::now();
        stats::record(
            &mut connect_h,
            t_connected.duration_since(t_start).as_nanos() as u64,
        );
        stats::record(&mut total_h, now.duration_since(t_start).as_nanos() as u64);
        rec.record(t_connected, t_answered, rr::parse_tcp_stamp(&response));
        rec.tick(now, false, on_interval);
    }
    let end = Instant::now();
    rec.flush(end, false, on_interval);
    Ok((
        rec,
        Outcome {
            seconds: (end - start).as_secs_f64(),
            extra: Extra {
                connect: stats::summarize(&connect_h),
                transaction: stats::summarize(&total_h),
                ..Default::default()
            },
            ..Default::default()
        },
    ))
}

/// First-packet latency: idle, then two probes back to back, per round.
fn cold(run: &mut Run, idle: Duration) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let rounds = plan.count.unwrap_or(super::DEFAULT_COLD_ROUNDS);
    let mut flow = run.open_flow(plan.request, plan.response)?;
    let mut rec = run.recorder(false);
    let mut first_h = stats::new_histogram();
    let mut second_h = stats::new_histogram();
    let mut differences = Vec::new();
    let udp = plan.protocol == Protocol::Udp;
    let timeout = plan
        .timeout
        .unwrap_or(if udp { AUTO_TIMEOUT_MAX } else { TCP_STALL });
    let start = Instant::now();
    'rounds: for _ in 0..rounds {
        // Sleep in slices so Ctrl-C is noticed.
        let wake = Instant::now() + idle;
        while let Some(left) = wake.checked_duration_since(Instant::now()) {
            if run.cancel.load(Ordering::Relaxed) {
                break 'rounds;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
        let mut rtts = [None, None];
        for (k, slot) in rtts.iter_mut().enumerate() {
            let seq = run.next_seq;
            run.next_seq += 1;
            rec.attempted += 1;
            match single(&mut flow, seq, timeout)? {
                Some((sent, got, stamp)) => {
                    rec.record(sent, got, stamp);
                    let ns = got.duration_since(sent).as_nanos() as u64;
                    stats::record(if k == 0 { &mut first_h } else { &mut second_h }, ns);
                    *slot = Some(ns as f64 / 1e6);
                }
                None => rec.lose(),
            }
        }
        if let [Some(a), Some(b)] = rtts {
            differences.push(a - b);
        }
    }
    let difference = (!differences.is_empty()).then(|| {
        let mut sorted = differences.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let p50 = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Difference {
            count: n as u64,
            mean: sorted.iter().sum::<f64>() / n as f64,
            p50,
            min: sorted[0],
            max: sorted[n - 1],
        }
    });
    Ok((
        rec,
        Outcome {
            seconds: start.elapsed().as_secs_f64(),
            timeout: Some(timeout),
            extra: Extra {
                first: stats::summarize(&first_h),
                second: stats::summarize(&second_h),
                difference,
                ..Default::default()
            },
            ..Default::default()
        },
    ))
}

/// RTT against message size, with a least-squares line through the medians.
fn sizes_mode(
    run: &mut Run,
    sizes: &[u32],
    echo: bool,
) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let mut total = run.recorder(false);
    let mut points = Vec::new();
    let per_size = plan.duration.div_f64(sizes.len() as f64);
    let mut udp_flow: Option<Flow> = None;
    let mut seconds = 0.0;
    let mut ignore = |_: &RrInterval| {};
    for &size in sizes {
        if run.cancel.load(Ordering::Relaxed) {
            break;
        }
        let (request, response) = (size, if echo { size } else { plan.response });
        let mut tcp_flow;
        let flow = match plan.protocol {
            Protocol::Udp => {
                if udp_flow.is_none() {
                    udp_flow = Some(run.open_flow(request, response)?);
                }
                let f = udp_flow.as_mut().expect("opened above");
                f.set_sizes(request, response);
                f
            }
            Protocol::Tcp => {
                tcp_flow = run.open_flow(request, response)?;
                &mut tcp_flow
            }
        };
        let mut seq = run.next_seq;
        let mut warm = run.recorder(false);
        let warm_budget = Budget {
            deadline: None,
            count: Some(SIZE_WARMUP),
            cancel: run.cancel,
            until: None,
        };
        run_flow(
            flow,
            &mut warm,
            run.pace(),
            &warm_budget,
            &mut seq,
            &mut ignore,
        )?;
        run.warmup += warm.transactions;
        let mut rec = run.recorder(false);
        rec.max_rtt = warm.max_rtt;
        let started = Instant::now();
        let budget = Budget {
            deadline: plan.count.is_none().then(|| started + per_size),
            count: plan.count,
            cancel: run.cancel,
            until: None,
        };
        run_flow(flow, &mut rec, run.pace(), &budget, &mut seq, &mut ignore)?;
        seconds += started.elapsed().as_secs_f64();
        run.next_seq = seq;
        if let Some(p) = stats::summarize(&rec.rtt) {
            points.push(SizePoint {
                size,
                request,
                response,
                transactions: rec.transactions,
                lost: (plan.protocol == Protocol::Udp).then_some(rec.lost),
                rtt_ms: p,
            });
        } else {
            run.warnings.push(format!(
                "size {size}: no transaction completed; left out of the fit"
            ));
        }
        merge(&mut total, &rec);
    }
    let xy: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.size as f64, p.rtt_ms.p50))
        .collect();
    let fit = stats::least_squares(&xy, if echo { 2.0 } else { 1.0 }, "p50");
    Ok((
        total,
        Outcome {
            seconds,
            sizes: Some(points),
            fit,
            ..Default::default()
        },
    ))
}

fn merge(into: &mut Recorder, from: &Recorder) {
    let _ = into.rtt.add(&from.rtt);
    into.forward.add(&from.forward);
    into.reverse.add(&from.reverse);
    into.transactions += from.transactions;
    into.attempted += from.attempted;
    into.lost += from.lost;
    into.late += from.late;
    into.max_rtt = into.max_rtt.max(from.max_rtt);
    into.intervals.extend(from.intervals.iter().cloned());
}

/// Latency under load: probes idle for -t, then while a bulk test runs.
fn load_mode(
    run: &mut Run,
    load: &super::LoadPlan,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(Recorder, Outcome), ClientError> {
    let plan = run.plan;
    let udp = plan.protocol == Protocol::Udp;
    let mut flow = run.open_flow(plan.request, plan.response)?;
    let pace = run.pace();
    let mut seq = run.next_seq;

    // Idle baseline.
    let mut idle = run.recorder(true);
    idle.phase = Some("idle");
    let start = Instant::now();
    idle.start_intervals(start);
    let budget = Budget {
        deadline: Some(start + plan.duration),
        count: plan.count,
        cancel: run.cancel,
        until: None,
    };
    run_flow(&mut flow, &mut idle, pace, &budget, &mut seq, on_interval)?;
    let idle_end = Instant::now();
    idle.flush(idle_end, udp, on_interval);
    let mut seconds = (idle_end - start).as_secs_f64();

    // The load, on its own thread; probes go on meanwhile.
    let loaded_flag = AtomicBool::new(false);
    let done_flag = AtomicBool::new(false);
    let stop_load = AtomicBool::new(false);
    let mut warmup = run.recorder(false);
    let mut loaded = run.recorder(true);
    loaded.phase = Some("loaded");
    let cancel = run.cancel;
    let load_result = std::thread::scope(|scope| {
        let handle = scope.spawn(|| {
            let mut first = |_: &crate::report::IntervalReport| {
                loaded_flag.store(true, Ordering::Release);
            };
            let r = crate::client::run(&load.options, &mut first, Some(&stop_load));
            done_flag.store(true, Ordering::Release);
            r
        });
        // Until the load has run a second (its first interval), probes are
        // neither idle nor loaded: ramp-up.
        let ramp_start = Instant::now();
        let ramp = Budget {
            deadline: None,
            count: None,
            cancel,
            until: Some(&loaded_flag),
        };
        let mut ignore = |_: &RrInterval| {};
        let mut result = Ok(());
        let mut ramp_done = false;
        while !ramp_done {
            // The flag may never come (-i 0): give up waiting after 1.5 s.
            let slice = Budget {
                deadline: Some(Instant::now() + Duration::from_millis(100)),
                ..ramp
            };
            result = run_flow(&mut flow, &mut warmup, pace, &slice, &mut seq, &mut ignore);
            ramp_done = result.is_err()
                || loaded_flag.load(Ordering::Acquire)
                || done_flag.load(Ordering::Acquire)
                || cancel.load(Ordering::Relaxed)
                || ramp_start.elapsed() > Duration::from_millis(1500);
        }
        let mut loaded_seconds = 0.0;
        if result.is_ok() && !done_flag.load(Ordering::Acquire) {
            let loaded_start = Instant::now();
            loaded.start_intervals(loaded_start);
            let budget = Budget {
                deadline: None,
                count: None,
                cancel,
                until: Some(&done_flag),
            };
            result = run_flow(&mut flow, &mut loaded, pace, &budget, &mut seq, on_interval);
            let end = Instant::now();
            loaded.flush(end, udp, on_interval);
            loaded_seconds = (end - loaded_start).as_secs_f64();
        }
        if result.is_err() || cancel.load(Ordering::Relaxed) {
            stop_load.store(true, Ordering::Release);
        }
        let load = handle.join();
        (result, load, loaded_seconds)
    });
    run.next_seq = seq;
    run.warmup += warmup.transactions;
    let (probe_result, load_thread, loaded_seconds) = load_result;
    seconds += loaded_seconds;
    probe_result?;
    let report = match load_thread {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(fail(format!("--load: {}", e.message))),
        Err(_) => return Err(fail("--load: the load test panicked")),
    };
    if loaded.transactions == 0 {
        run.warnings
            .push("the load ended before any probe ran under it: give the load a longer -t".into());
    }
    let load_summary = LoadSummary {
        args: load.args.clone(),
        protocol: if report.test.config.protocol == Protocol::Udp {
            "udp"
        } else {
            "tcp"
        },
        streams: report.test.config.parallel,
        seconds: report.summary.received.seconds,
        bits_per_second: report.summary.received.bits_per_second,
        retransmits: report.summary.sent.retransmits,
    };
    let mut total = run.recorder(false);
    merge(&mut total, &idle);
    merge(&mut total, &loaded);
    Ok((
        total,
        Outcome {
            seconds,
            extra: Extra {
                idle: stats::summarize(&idle.rtt),
                loaded: stats::summarize(&loaded.rtt),
                load: Some(load_summary),
                ..Default::default()
            },
            ..Default::default()
        },
    ))
}
