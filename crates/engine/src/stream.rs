//! The data plane's streams on an OS thread each, with blocking sockets (TCP
//! receivers of streams paced to a low rate are read by `receivers.rs`).
//!
//! Each stream only moves bytes and updates its [`StreamShared`] counters;
//! the sampler reads those counters from another thread. Stream threads
//! check their side's stop flags between socket calls, which use short
//! timeouts so a stop is honoured within half a second.

use crate::cpu::ThreadCpu;
use crate::delays::DelayTrack;
use crate::mmsg;
use crate::pacer::Pacer;
use crate::rttsample::{RttSlot, SenderRtt};
use crate::sockopt::path_mtu;
use crate::udptrack::UdpTracker;
use linkperf_proto::results::{GapStats, Role, ScheduleStats, UdpStats};
use linkperf_proto::udp;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a UDP receiver waits without data before it declares the stream dead.
pub const IDLE_LIMIT: Duration = Duration::from_secs(10);
/// The same for a TCP receiver, longer: on a lossy path the sender's retransmission
/// timer backs off (0.2, 0.4, 0.8 ... s), so five losses in a row of one segment are
/// 12.6 s of silence on a connection that is alive (measured: TCP through seed 000's
/// radio link at a bit error rate of 5e-6, a third of its 9180-byte packets lost).
/// A peer that is gone is found sooner by the control connection (keepalive).
pub const TCP_IDLE_LIMIT: Duration = Duration::from_secs(60);
/// Socket timeout between checks of the stop flags (a receiving loop's wait).
pub(crate) const POLL: Duration = Duration::from_millis(100);
/// How many FIN markers a UDP sender sends (they may be lost like any datagram).
const FIN_COPIES: usize = 5;

pub enum DataSocket {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

/// Counters one stream thread publishes for the sampler.
#[derive(Debug)]
pub struct StreamShared {
    pub id: u32,
    pub role: Role,
    pub bytes: AtomicU64,
    pub packets: AtomicU64,
    /// Receiver's UDP statistics, refreshed after every batch. Boxed, as are
    /// the other fields only some streams use (gaps, delays, schedule): a TCP
    /// stream holds a pointer for each.
    pub udp: Mutex<Option<Box<UdpStats>>>,
    pub finished: AtomicBool,
    /// Nanoseconds from the side's start to the stream's end.
    pub finished_after_ns: AtomicU64,
    pub error: Mutex<Option<String>>,
    /// Datagrams the remote sender reports having sent (u64::MAX: unknown).
    pub peer_sent: AtomicU64,
    pub gaps: Mutex<Option<Box<GapStats>>>,
    /// Wall-clock ns when a sender began sending (0: not yet).
    pub started_unix_ns: AtomicU64,
    /// CPU the stream used, once it is done.
    pub cpu: Mutex<Option<StreamCpu>>,
    /// A UDP receiver's one-way delay and IPDV distributions.
    pub delays: Mutex<Option<Box<DelayTrack>>>,
    /// A model's sender: bytes its schedule had due so far.
    pub offered_bytes: AtomicU64,
    /// A model's sender: how it kept the schedule, once it is done.
    pub schedule: Mutex<Option<Box<ScheduleStats>>>,
    /// An MPTCP stream's subflows at its end (see [`crate::mptcp`]).
    pub subflows: Mutex<Vec<linkperf_proto::results::Subflow>>,
    /// A TCP sender's latest smoothed-RTT reading, taken by its own thread.
    pub rtt: RttSlot,
}

impl StreamShared {
    pub fn new(id: u32, role: Role) -> Self {
        StreamShared {
            id,
            role,
            bytes: AtomicU64::new(0),
            packets: AtomicU64::new(0),
            udp: Mutex::new(None),
            finished: AtomicBool::new(false),
            finished_after_ns: AtomicU64::new(0),
            error: Mutex::new(None),
            peer_sent: AtomicU64::new(u64::MAX),
            gaps: Mutex::new(None),
            started_unix_ns: AtomicU64::new(0),
            cpu: Mutex::new(None),
            delays: Mutex::new(None),
            offered_bytes: AtomicU64::new(0),
            schedule: Mutex::new(None),
            subflows: Mutex::new(Vec::new()),
            rtt: RttSlot::default(),
        }
    }

    /// Publishes a UDP receiver's statistics (its box made once, then reused).
    pub(crate) fn set_udp(&self, stats: UdpStats) {
        let mut udp = lock(&self.udp);
        match udp.as_mut() {
            Some(b) => **b = stats,
            None => *udp = Some(Box::new(stats)),
        }
    }

    pub(crate) fn fail(&self, why: String) {
        let mut e = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if e.is_none() {
            *e = Some(why);
        }
    }
}

/// What a stream cost in CPU, once it is done.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamCpu {
    /// CPU spent on this stream (its own thread's, or its share of a thread
    /// that served several: see `receivers.rs`).
    pub own: ThreadCpu,
    /// The whole CPU of the thread that served it, over the stream's life:
    /// near `ran`, that thread had no time to spare.
    pub thread: ThreadCpu,
    /// How long the stream ran (from the test's start to its end).
    pub ran: Duration,
}

/// Flags one side's owner uses to steer its stream threads.
#[derive(Debug, Default)]
pub struct SideControl {
    /// Senders stop at their next write (end of test, Ctrl-C, abort).
    pub stop_senders: AtomicBool,
    /// Receivers stop at their next poll (drain deadline passed, abort).
    pub stop_receivers: AtomicBool,
}

/// The bytes a test's senders write: made once per test and shared by its
/// streams (a copy per stream of a 64 MiB `-l` would cost 64 MiB a stream).
#[derive(Clone, Default)]
pub struct Payload(Arc<Vec<u8>>);

/// Payloads up to this size are kept for the process's later tests (a
/// sweep's runs, a server's tests): at least `length` bytes of the one
/// sequence, so a shorter test uses a prefix of a longer one's.
const SHARED_PAYLOAD_MAX: usize = 1 << 20;

impl Payload {
    /// At least `length` bytes; senders write the first `length`.
    pub fn new(length: usize) -> Payload {
        static SHARED: Mutex<Option<Arc<Vec<u8>>>> = Mutex::new(None);
        // Arc<Vec>, not Arc<[u8]>: converting would copy, twice the peak.
        if length > SHARED_PAYLOAD_MAX {
            return Payload(Arc::new(payload(length)));
        }
        let mut shared = lock(&SHARED);
        match &*shared {
            Some(p) if p.len() >= length => Payload(p.clone()),
            _ => {
                let p = Arc::new(payload(length));
                *shared = Some(p.clone());
                Payload(p)
            }
        }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Payload({} bytes)", self.0.len())
    }
}

/// What a UDP stream's batch of datagram buffers holds, either way.
pub fn udp_stream_memory(length: usize) -> usize {
    (length.max(udp::HEADER_LEN) + 1) * BATCH
}

/// What a stream thread needs to know about the test.
#[derive(Debug, Clone)]
pub struct StreamParams {
    pub length: usize,
    /// What senders write (at least `length` bytes); empty for receivers.
    pub payload: Payload,
    pub rate_bps: Option<u64>,
    /// How far ahead of its time a paced datagram may leave in a train
    /// (`--pacing-timer`; `None`: the pacer's own choice).
    pub pacing_timer: Option<Duration>,
    pub byte_limit: Option<u64>,
    pub start: Instant,
    pub end: Option<Instant>,
    pub zerocopy: bool,
    /// UDP datagram framing (iperf3's for iperf3 peers).
    pub udp_format: crate::udpformat::UdpFormat,
    /// The traffic model this stream sends by, and the run's seed.
    pub model: Option<(linkperf_traffic::Model, u64)>,
    /// The stream's id (its model's random draws depend on it).
    pub stream_id: u32,
    /// TCP_WINDOW_CLAMP a receiver holds (see `tcp_receive`).
    pub window_clamp: Option<u32>,
    /// A TCP receiver discards the payload in the kernel (MSG_TRUNC).
    pub skip_rx_copy: bool,
}

/// A poisoned lock's data is still the best there is.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn now_unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Records when the stream's data ended (last write, last byte read) and
/// flags it finished.
pub(crate) fn mark_finished(shared: &StreamShared, start: Instant, data_ended: Instant) {
    let after = data_ended.saturating_duration_since(start);
    shared
        .finished_after_ns
        .store(after.as_nanos() as u64, Ordering::Relaxed);
    shared.finished.store(true, Ordering::Release);
}

pub(crate) fn wait_until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}

/// A recognisable, non-compressible payload.
pub(crate) fn payload(length: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..length)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

pub fn tcp_send(
    mut sock: TcpStream,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    p: StreamParams,
) {
    let _ = sock.set_write_timeout(Some(POLL * 5));
    let buf = &p.payload.0[..p.length];
    let zerocopy = if p.zerocopy {
        crate::zerocopy::Source::new(buf).ok()
    } else {
        None
    };
    let mut pacer = p.rate_bps.map(Pacer::new);
    wait_until(p.start);
    shared
        .started_unix_ns
        .store(now_unix_ns(), Ordering::Relaxed);
    if let Some(pacer) = pacer.as_mut() {
        pacer.restart(p.start);
    }
    let mut sent: u64 = 0;
    let mut rtt = SenderRtt::new();
    loop {
        // One clock read per write: the end of the test and the RTT reading's due time.
        let now = Instant::now();
        if ctl.stop_senders.load(Ordering::Relaxed) || p.end.is_some_and(|e| now >= e) {
            break;
        }
        let chunk = match p.byte_limit {
            Some(limit) if sent >= limit => break,
            Some(limit) => (limit - sent).min(p.length as u64) as usize,
            None => p.length,
        };
        if let Some(pacer) = pacer.as_mut() {
            if !pacer.wait(chunk as u64 * 8, p.end) || p.end.is_some_and(|e| Instant::now() >= e) {
                break; // the wait ran into the end of the test: nothing more is due
            }
        }
        let result = match &zerocopy {
            Some(source) => source.send(&sock, chunk),
            None => sock.write(&buf[..chunk]),
        };
        match result {
            Ok(n) => {
                sent += n as u64;
                shared.bytes.store(sent, Ordering::Relaxed);
                rtt.after_write(now, &sock, &shared.rtt);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                shared.fail(format!("send failed after {sent} bytes: {e}"));
                break;
            }
        }
    }
    let data_ended = Instant::now();
    // Subflows close with the connection: read them before, and again once all is acked.
    let before = crate::mptcp::subflows(&sock, true);
    close_and_drain(&mut sock, &ctl);
    *lock(&shared.subflows) = crate::mptcp::latest(before, crate::mptcp::subflows(&sock, true));
    mark_finished(&shared, p.start, data_ended);
}

/// Half-closes, then waits for the receiver to close: everything sent has
/// then been delivered and acknowledged, so tcp_info read afterwards is final.
pub(crate) fn close_and_drain(sock: &mut TcpStream, ctl: &SideControl) {
    let _ = sock.shutdown(Shutdown::Write);
    let _ = sock.set_read_timeout(Some(POLL));
    let mut sink = [0u8; 64];
    let drain_started = Instant::now();
    loop {
        match sock.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                if ctl.stop_receivers.load(Ordering::Relaxed)
                    || drain_started.elapsed() > Duration::from_secs(120)
                {
                    break;
                }
            }
            Err(_) => break,
        }
    }
}

/// A TCP receiver on a thread of its own (streams not paced to a low rate;
/// the others are read by `receivers.rs`).
pub fn tcp_receive(
    sock: TcpStream,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    p: StreamParams,
) {
    let _ = sock.set_read_timeout(Some(POLL));
    let len = crate::sink::read_length(p.length);
    let flags = if p.skip_rx_copy { libc::MSG_TRUNC } else { 0 };
    let mut received: u64 = 0;
    let mut last_data = Instant::now().max(p.start);
    loop {
        match crate::sink::receive(&sock, len, flags) {
            Ok(0) => break,
            Ok(n) => {
                received += n as u64;
                shared.bytes.store(received, Ordering::Relaxed);
                last_data = Instant::now();
                if let Some(clamp) = p.window_clamp {
                    // Linux (6.7+) rewrites the clamp from the buffer size
                    // whenever its payload-to-memory ratio changes; setting it
                    // again is a no-op for the kernel when it still holds.
                    crate::sockopt::hold_window_clamp(&sock, clamp);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                if ctl.stop_receivers.load(Ordering::Relaxed) {
                    break;
                }
                if Instant::now() > p.start && last_data.max(p.start).elapsed() > TCP_IDLE_LIMIT {
                    shared.fail(format!(
                        "no data for {} s: sender gone?",
                        TCP_IDLE_LIMIT.as_secs()
                    ));
                    break;
                }
            }
            Err(e) => {
                shared.fail(format!("receive failed after {received} bytes: {e}"));
                break;
            }
        }
    }
    *lock(&shared.subflows) = crate::mptcp::subflows(&sock, false);
    mark_finished(&shared, p.start, last_data);
    // Closing tells the sender everything arrived (see tcp_send).
    let _ = sock.shutdown(Shutdown::Both);
}

/// Datagrams per sendmmsg/recvmmsg call when not paced.
const BATCH: usize = 64;
/// Most datagrams a paced sender sends per wake-up (a train, or catching up
/// after a stall): one GSO message of 1460-byte datagrams holds 44.
const PACED_BATCH: usize = 64;

/// Whether this connected UDP socket may send GSO trains to its peer (see
/// [`crate::rtnetlink::gso_allowed`]); an unconnected socket may.
pub fn gso_to_peer(sock: &UdpSocket) -> bool {
    sock.peer_addr()
        .map_or(true, |a| crate::rtnetlink::gso_allowed(a.ip()))
}

pub fn udp_send(
    sock: UdpSocket,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    p: StreamParams,
) {
    let len = p.length;
    let mut pacer = p.rate_bps.map(|r| Pacer::new(r).with_timer(p.pacing_timer));
    let limit_packets = p.byte_limit.map(|b| b.div_ceil(len as u64));
    let _ = sock.set_write_timeout(Some(POLL));
    let fill = &p.payload.0[..len];
    // GSO where the kernel has it and the device takes trains: a paced sender's
    // trains then cost one system call and one trip through the stack each.
    let mut batch = gso_to_peer(&sock)
        .then(|| mmsg::SendBatch::with_gso(len, fill))
        .flatten()
        .unwrap_or_else(|| mmsg::SendBatch::new(len, BATCH, fill));
    batch.set_format(p.udp_format);
    wait_until(p.start);
    shared
        .started_unix_ns
        .store(now_unix_ns(), Ordering::Relaxed);
    if let Some(pacer) = pacer.as_mut() {
        pacer.restart(p.start);
    }
    let mut seq: u64 = 0;
    let mut refused_since: Option<Instant> = None;
    loop {
        if ctl.stop_senders.load(Ordering::Relaxed) || p.end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        let mut count = batch.capacity();
        if let Some(limit) = limit_packets {
            if seq >= limit {
                break;
            }
            count = count.min((limit - seq) as usize);
        }
        if let Some(pacer) = pacer.as_mut() {
            count = pacer.wait_batch(len as u64 * 8, count.min(PACED_BATCH), p.end);
            if count == 0 || p.end.is_some_and(|e| Instant::now() >= e) {
                break;
            }
        }
        match batch.send(&sock, seq, count, now_unix_ns()) {
            Ok(n) => {
                seq += n as u64;
                refused_since = None;
                shared.packets.store(seq, Ordering::Relaxed);
                shared.bytes.store(seq * len as u64, Ordering::Relaxed);
            }
            Err(e) => {
                if send_failed(e, &mut batch, &sock, &shared, fill, seq, &mut refused_since) {
                    break;
                }
            }
        }
    }
    if let Some(pacer) = pacer.as_mut() {
        if let Some(end) = p.end {
            pacer.finish(end);
        }
        *lock(&shared.gaps) = Some(Box::new(pacer.gap_stats(len as u64 * 8)));
    }
    // Nothing is sent after the end: a sender that woke past it sent for the test's time.
    let data_ended = p.end.map_or_else(Instant::now, |e| Instant::now().min(e));
    send_fin(&sock, len, seq, p.udp_format);
    mark_finished(&shared, p.start, data_ended);
}

/// End-of-stream markers: `seq` datagrams were sent (linkperf's framing only).
pub(crate) fn send_fin(
    sock: &UdpSocket,
    len: usize,
    seq: u64,
    format: crate::udpformat::UdpFormat,
) {
    let mut fin = vec![0u8; len.max(udp::HEADER_LEN)];
    udp::write_fin(&mut fin, seq);
    for _ in 0..FIN_COPIES {
        if !format.sends_fin() {
            break;
        }
        let _ = sock.send(&fin);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What a failed datagram send means: true when the sender must stop (the
/// reason is recorded in `shared`), false to go on (a full buffer, a GSO
/// batch the kernel refuses: plain batches from then on).
pub(crate) fn send_failed(
    e: std::io::Error,
    batch: &mut mmsg::SendBatch,
    sock: &UdpSocket,
    shared: &StreamShared,
    fill: &[u8],
    seq: u64,
    refused_since: &mut Option<Instant>,
) -> bool {
    let len = batch.datagram_len();
    match e.raw_os_error() {
        Some(libc::EINVAL | libc::EIO | libc::ENOPROTOOPT) if batch.uses_gso() => {
            // This kernel or device cannot segment UDP: plain batches then.
            *batch = mmsg::SendBatch::new(len, BATCH, fill);
            false
        }
        Some(libc::EMSGSIZE) => {
            let mtu = path_mtu(
                sock,
                sock.local_addr().map(|a| a.is_ipv6()).unwrap_or(false),
            );
            shared.fail(format!(
                "datagram of {len} bytes does not fit the path MTU{} with --dont-fragment (EMSGSIZE); use -l {} or less",
                mtu.map(|m| format!(" of {m} bytes")).unwrap_or_default(),
                mtu.map(|m| m.saturating_sub(28)).unwrap_or(1472)
            ));
            true
        }
        _ if e.kind() == ErrorKind::ConnectionRefused => {
            // An ICMP port-unreachable from an earlier datagram: the
            // receiver is gone if it lasts.
            let since = *refused_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_secs(2) {
                shared.fail("receiver unreachable (ICMP port unreachable)".into());
                return true;
            }
            false
        }
        Some(libc::ENOBUFS) => false,
        _ if matches!(
            e.kind(),
            ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
        ) =>
        {
            false
        }
        _ => {
            shared.fail(format!("send failed after {seq} datagrams: {e}"));
            true
        }
    }
}

pub fn udp_receive(
    sock: UdpSocket,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    p: StreamParams,
    same_clock: bool,
) {
    let _ = sock.set_read_timeout(Some(POLL));
    let mut batch = mmsg::RecvBatch::new(p.length.max(udp::HEADER_LEN) + 1, BATCH, &sock);
    let mut tracker = UdpTracker::new();
    lock(&shared.delays)
        .get_or_insert_with(Default::default)
        .same_clock = same_clock;
    let mut fin_at: Option<Instant> = None;
    let mut last_data = Instant::now().max(p.start);
    loop {
        match batch.receive(&sock) {
            Ok(n) => {
                let now_ns = now_unix_ns();
                let mut held = lock(&shared.delays);
                let delays = held.get_or_insert_with(Default::default);
                for d in (0..n).flat_map(|i| batch.datagrams(i)) {
                    if udp::parse_hello(d).is_some() {
                        continue; // a late copy of the set-up handshake
                    }
                    match p.udp_format.parse(d) {
                        Some(udp::Datagram::Data { seq, sent_ns }) => {
                            tracker.record(seq, sent_ns, now_ns, d.len());
                            delays.record(seq, sent_ns, now_ns);
                        }
                        Some(udp::Datagram::Fin { total }) => {
                            tracker.fin(total);
                            fin_at.get_or_insert_with(Instant::now);
                        }
                        None => {}
                    }
                }
                drop(held);
                if n > 0 {
                    last_data = Instant::now();
                }
                shared.bytes.store(tracker.bytes(), Ordering::Relaxed);
                shared.packets.store(tracker.packets(), Ordering::Relaxed);
                shared.set_udp(tracker.stats(same_clock));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => {
                shared.fail(format!("receive failed: {e}"));
                break;
            }
        }
        let peer_sent = shared.peer_sent.load(Ordering::Relaxed);
        if peer_sent != u64::MAX && !tracker.fin_seen() {
            tracker.fin(peer_sent);
        }
        // Done when everything announced arrived, or shortly after the FIN
        // (stragglers reordered behind it), or when the owner says stop.
        if tracker.complete()
            || fin_at.is_some_and(|t| t.elapsed() > Duration::from_millis(250))
            || ctl.stop_receivers.load(Ordering::Relaxed)
        {
            break;
        }
        if Instant::now() > p.start
            && last_data.max(p.start).elapsed() > IDLE_LIMIT
            && !tracker.fin_seen()
        {
            shared.fail(format!(
                "no datagrams for {} s: sender gone?",
                IDLE_LIMIT.as_secs()
            ));
            break;
        }
    }
    let mut stats = tracker.stats(same_clock);
    stats.socket_drops = crate::kernel_drops::socket_drops(std::os::fd::AsRawFd::as_raw_fd(&sock));
    shared.set_udp(stats);
    mark_finished(&shared, p.start, last_data);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whichever test made the shared payload, a test of `n` bytes writes
    /// the first `n` bytes of the one sequence; beyond the shared size
    /// each test gets its own.
    #[test]
    fn shared_payloads_are_prefixes_of_one_sequence() {
        let long = payload(3000);
        for n in [1460, 3000, 100, SHARED_PAYLOAD_MAX + 1] {
            let p = Payload::new(n);
            assert!(p.0.len() >= n, "{n}: {} bytes", p.0.len());
            let want = if n <= long.len() {
                long[..n].to_vec()
            } else {
                payload(n)
            };
            assert_eq!(&p.0[..n], &want[..], "{n}");
        }
        // The big one is not kept: a later short test does not hold a MiB.
        assert!(Payload::new(64).0.len() <= SHARED_PAYLOAD_MAX);
    }
}
