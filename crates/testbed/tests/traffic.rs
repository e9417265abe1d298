#![allow(dead_code)]

//! Small traffic generators for the tests: UDP echo, paced UDP senders and sinks, TCP bulk,
//! each on a thread that has entered a testbed namespace.

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Runs `f` on a new thread inside namespace `ns`.
pub fn spawn_in<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        linkperf_testbed::netns::enter_netns(&ns).expect("enter namespace");
        f()
    })
}

pub fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// A UDP echo server that stops when dropped.
pub struct Echo {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn start_udp_echo(ns: &str, port: u16) -> Echo {
    start_echo(ns, (std::net::Ipv4Addr::UNSPECIFIED, port).into())
}

/// A UDP echo that answers each datagram `hold` after the kernel received it (its receive
/// timestamp; a precise sleep, then a spin) and writes into bytes 8..16 of the answer how
/// long it kept the datagram from that stamp to just before its send (ns). Over a
/// zero-length wire it makes a client wait as long as through a link; with no hold it
/// reports only its own turnaround. Either way a client that subtracts the report and
/// stamps the answer in its own kernel measures the path without either end's wake-up,
/// as ping does.
pub fn start_udp_echo_holding(ns: &str, port: u16, hold: Duration) -> Echo {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let flag = stop.clone();
    let handle = spawn_in(ns, move || {
        raise_priority();
        // SAFETY: prctl with integer arguments affecting only this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        let sock = UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, port)).expect("bind echo");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        set_kernel_rx_timestamps(sock.as_raw_fd());
        ready_tx.send(()).unwrap();
        let mut buf = [0u8; 65536];
        while !flag.load(Ordering::Relaxed) {
            let Some((n, from, received)) = recv_stamped(sock.as_raw_fd(), &mut buf) else {
                continue;
            };
            let held = hold_from(received, hold);
            if n >= 16 {
                buf[8..16].copy_from_slice(&held.to_be_bytes());
            }
            let to = std::net::SocketAddrV4::new(
                u32::from_be(from.sin_addr.s_addr).into(),
                u16::from_be(from.sin_port),
            );
            let _ = sock.send_to(&buf[..n], to);
        }
    });
    ready_rx.recv().expect("echo ready");
    Echo {
        stop,
        handle: Some(handle),
    }
}

pub fn start_udp_echo6(ns: &str, port: u16) -> Echo {
    start_echo(ns, (std::net::Ipv6Addr::UNSPECIFIED, port).into())
}

/// Nice -20 for the calling thread, as the emulator's forwarders have: on a loaded machine
/// the probes and the echo then measure the path, not how long they waited for a CPU.
pub fn raise_priority() {
    // SAFETY: gettid and setpriority on our own thread id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, -20);
    }
}

fn start_echo(ns: &str, bind: SocketAddr) -> Echo {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let flag = stop.clone();
    let handle = spawn_in(ns, move || {
        raise_priority();
        let sock = UdpSocket::bind(bind).expect("bind echo");
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let mut buf = [0u8; 65536];
        while !flag.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                let _ = sock.send_to(&buf[..n], from);
            }
        }
    });
    ready_rx.recv().expect("echo ready");
    Echo {
        stop,
        handle: Some(handle),
    }
}

/// Sends `count` probes of `size` bytes every `gap` and returns the RTTs in ms of those
/// answered. The first probe (which also resolves ARP) is a warm-up and not counted.
pub fn measure_udp_rtt(
    ns: &str,
    server: SocketAddr,
    count: usize,
    size: usize,
    gap: Duration,
) -> Vec<f64> {
    spawn_in(ns, move || {
        let any: SocketAddr = if server.is_ipv6() {
            "[::]:0".parse().unwrap()
        } else {
            "0.0.0.0:0".parse().unwrap()
        };
        let sock = UdpSocket::bind(any).unwrap();
        sock.connect(server).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut payload = vec![0u8; size.max(8)];
        let mut buf = vec![0u8; 65536];
        let mut rtts = Vec::new();
        for i in 0..=count as u64 {
            payload[..8].copy_from_slice(&i.to_be_bytes());
            let sent = Instant::now();
            sock.send(&payload).unwrap();
            loop {
                match sock.recv(&mut buf) {
                    Ok(n) if n >= 8 && buf[..8] == i.to_be_bytes() => {
                        if i > 0 {
                            rtts.push(sent.elapsed().as_secs_f64() * 1e3);
                        }
                        break;
                    }
                    Ok(_) => continue,
                    Err(_) => break,
                }
            }
            std::thread::sleep(gap);
        }
        rtts
    })
    .join()
    .unwrap()
}

/// One received datagram: sequence number, arrival time (since the sink started), length.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    pub seq: u64,
    pub at: Duration,
    pub len: usize,
}

/// What a sink keeps of one datagram: [`Arrival`] or [`Timed`].
pub trait Datagram: Send + 'static {
    /// Shorter datagrams are not counted.
    const MIN_LEN: usize;
    /// Reads `datagram`, received now by a sink that started at `start`; the
    /// kernel stamped its arrival at `kernel_rx_ns` (CLOCK_REALTIME).
    fn parse(datagram: &[u8], start: Instant, kernel_rx_ns: u64) -> Self;
}

impl Datagram for Arrival {
    const MIN_LEN: usize = 8;
    fn parse(d: &[u8], start: Instant, _kernel_rx_ns: u64) -> Arrival {
        Arrival {
            seq: u64::from_be_bytes(d[..8].try_into().unwrap()),
            at: Instant::now() - start,
            len: d.len(),
        }
    }
}

/// A UDP sink on `port` in `ns` collecting datagrams ([`Arrival`]s, or [`Timed`] ones sent
/// by [`send_timed`]) until `idle` passes without traffic (after the first one) or `limit`
/// passes in total. Returns once the socket is bound.
pub fn start_udp_sink<T: Datagram>(
    ns: &str,
    port: u16,
    idle: Duration,
    limit: Duration,
) -> JoinHandle<Vec<T>> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let handle = spawn_in(ns, move || {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        sock.set_recv_buffer_size(8 << 20).unwrap();
        set_kernel_rx_timestamps(sock.as_raw_fd());
        sock.bind(&SocketAddr::from(([0, 0, 0, 0], port)).into())
            .unwrap();
        let sock: UdpSocket = sock.into();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let start = Instant::now();
        let mut last = None::<Instant>;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 65536];
        loop {
            if let Some((n, _, stamp)) = recv_stamped(sock.as_raw_fd(), &mut buf) {
                if n >= T::MIN_LEN {
                    out.push(T::parse(&buf[..n], start, stamp));
                    last = Some(Instant::now());
                }
            }
            let now = Instant::now();
            if last.is_some_and(|l| now - l > idle) || now - start > limit {
                return out;
            }
        }
    });
    ready_rx.recv().expect("sink ready");
    handle
}

/// Sends `count` datagrams of `size` bytes to `to`, paced at `rate_bps` of UDP payload
/// (0 = as fast as possible), sequence numbers starting at `first_seq`. Returns how many
/// were handed to the kernel.
pub fn send_udp(
    ns: &str,
    to: SocketAddr,
    size: usize,
    count: u64,
    rate_bps: f64,
    first_seq: u64,
) -> u64 {
    spawn_in(ns, move || {
        let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
        sock.connect(to).unwrap();
        let mut payload = vec![0x5au8; size.max(8)];
        let start = Instant::now();
        let interval = if rate_bps > 0.0 {
            size as f64 * 8.0 / rate_bps
        } else {
            0.0
        };
        let mut sent = 0;
        for i in 0..count {
            payload[..8].copy_from_slice(&(first_seq + i).to_be_bytes());
            if interval > 0.0 {
                let due = start + Duration::from_secs_f64(interval * i as f64);
                let now = Instant::now();
                if due > now + Duration::from_micros(500) {
                    std::thread::sleep(due - now);
                }
            }
            if sock.send(&payload).is_ok() {
                sent += 1;
            }
        }
        sent
    })
    .join()
    .unwrap()
}

/// Rate in bits/s of the arrivals inside `window_ms` (ms since the sink started, both
/// ends included), counting `wire_bytes(len)` per datagram. Measured between the first and
/// last arrival in the window, so a full window is n-1 gaps.
pub fn arrival_rate(
    arrivals: &[Arrival],
    window_ms: std::ops::RangeInclusive<u64>,
    wire_bytes: impl Fn(usize) -> u64,
) -> f64 {
    let (from, to) = (
        Duration::from_millis(*window_ms.start()),
        Duration::from_millis(*window_ms.end()),
    );
    let window: Vec<&Arrival> = arrivals
        .iter()
        .filter(|a| a.at >= from && a.at <= to)
        .collect();
    assert!(
        window.len() > 10,
        "only {} arrivals in the window",
        window.len()
    );
    let bytes: u64 = window[1..].iter().map(|a| wire_bytes(a.len)).sum();
    let span = (window[window.len() - 1].at - window[0].at).as_secs_f64();
    bytes as f64 * 8.0 / span
}

/// TCP bulk transfer for `duration`; returns bytes received per arrival interval as
/// (time since first byte, cumulative bytes) samples.
pub fn tcp_bulk(
    client_ns: &str,
    server_ns: &str,
    server: SocketAddr,
    duration: Duration,
) -> Vec<(Duration, u64)> {
    use std::io::{Read, Write};
    let (ready_tx, ready_rx) = mpsc::channel();
    let port = server.port();
    let receiver = spawn_in(server_ns, move || {
        let listener = TcpListener::bind(("0.0.0.0", port)).unwrap();
        ready_tx.send(()).unwrap();
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        let mut samples = Vec::new();
        let mut start = None;
        loop {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return samples,
                Ok(n) => {
                    let s = *start.get_or_insert_with(Instant::now);
                    total += n as u64;
                    samples.push((s.elapsed(), total));
                }
            }
        }
    });
    ready_rx.recv().unwrap();
    spawn_in(client_ns, move || {
        let mut conn = TcpStream::connect(server).unwrap();
        let chunk = vec![0u8; 128 * 1024];
        let start = Instant::now();
        while start.elapsed() < duration {
            if conn.write_all(&chunk).is_err() {
                break;
            }
        }
    })
    .join()
    .unwrap();
    receiver.join().unwrap()
}

/// Goodput in bits/s between `from` and `to` (time since the first byte) of TCP samples.
pub fn tcp_goodput(samples: &[(Duration, u64)], from: Duration, to: Duration) -> f64 {
    let at = |t: Duration| {
        samples
            .iter()
            .take_while(|s| s.0 <= t)
            .last()
            .copied()
            .unwrap_or((Duration::ZERO, 0))
    };
    let (t0, b0) = at(from);
    let (t1, b1) = at(to);
    (b1 - b0) as f64 * 8.0 / (t1 - t0).as_secs_f64()
}

/// A zero-length wire: two namespaces joined by a veth pair, no emulator. RTTs measured
/// through it are what the hosts' own stacks and wake-ups add (the floor every emulated RTT
/// also contains). Removed when dropped.
pub struct Wire {
    pub ns_a: String,
    pub ns_b: String,
    pub addr_a: std::net::Ipv4Addr,
    pub addr_b: std::net::Ipv4Addr,
}

fn ip(args: &[&str]) {
    linkperf_testsupport::process::output_ok(std::process::Command::new("ip").args(args));
}

impl Wire {
    /// Namespaces `<prefix>-a` and `<prefix>-b`, addresses 10.212.0.1 and .2, fixed MACs and
    /// permanent neighbour entries (as testbed hosts have).
    pub fn up(prefix: &str) -> Wire {
        let (ns_a, ns_b) = (format!("{prefix}-a"), format!("{prefix}-b"));
        for ns in [&ns_a, &ns_b] {
            let _ = std::process::Command::new("ip")
                .args(["netns", "delete", ns])
                .output();
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        ip(&[
            "-n",
            &ns_a,
            "link",
            "add",
            "eth0",
            "address",
            "02:6c:71:00:00:01",
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "address",
            "02:6c:71:00:00:02",
            "netns",
            &ns_b,
        ]);
        for (ns, me, peer, mac) in [
            (&ns_a, "10.212.0.1/24", "10.212.0.2", "02:6c:71:00:00:02"),
            (&ns_b, "10.212.0.2/24", "10.212.0.1", "02:6c:71:00:00:01"),
        ] {
            ip(&["-n", ns, "addr", "add", me, "dev", "eth0"]);
            ip(&["-n", ns, "link", "set", "eth0", "up"]);
            ip(&[
                "-n",
                ns,
                "neigh",
                "replace",
                peer,
                "lladdr",
                mac,
                "dev",
                "eth0",
                "nud",
                "permanent",
            ]);
        }
        Wire {
            ns_a,
            ns_b,
            addr_a: [10, 212, 0, 1].into(),
            addr_b: [10, 212, 0, 2].into(),
        }
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        for ns in [&self.ns_a, &self.ns_b] {
            let _ = std::process::Command::new("ip")
                .args(["netns", "delete", ns])
                .output();
        }
    }
}

/// UDP echo RTTs in ms to several servers, each reached from its own namespace, probed in
/// turn (one probe to each, then a pause) so all see the same machine load. `count` probes
/// per server after one warm-up round; pauses are drawn between `min_gap` and `max_gap`.
/// Each RTT runs from just before the send to the kernel's receive timestamp of the answer,
/// less what a [`start_udp_echo_holding`] server reports it kept the request: the path
/// without either end's wake-up, as ping measures it.
pub fn udp_rtts_interleaved(
    targets: &[(String, SocketAddr)],
    count: usize,
    size: usize,
    min_gap: Duration,
    max_gap: Duration,
) -> Vec<Vec<f64>> {
    let targets = targets.to_vec();
    std::thread::spawn(move || {
        raise_priority();
        let socks: Vec<UdpSocket> = targets
            .iter()
            .map(|(ns, server)| {
                linkperf_testbed::netns::enter_netns(ns).expect("enter namespace");
                let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
                sock.connect(server).unwrap();
                sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                set_kernel_rx_timestamps(sock.as_raw_fd());
                sock
            })
            .collect();
        let mut payload = vec![0u8; size.max(16)];
        let mut buf = vec![0u8; 65536];
        let mut rtts = vec![Vec::new(); socks.len()];
        let mut lcg = 0x2545_f491_4f6c_dd1du64;
        for i in 0..=count as u64 {
            for (sock, out) in socks.iter().zip(&mut rtts) {
                payload[..8].copy_from_slice(&i.to_be_bytes());
                payload[8..16].fill(0);
                let sent = realtime_ns();
                sock.send(&payload).unwrap();
                while let Some((n, _, received)) = recv_stamped(sock.as_raw_fd(), &mut buf) {
                    if n >= 16 && buf[..8] == i.to_be_bytes() {
                        let held = u64::from_be_bytes(buf[8..16].try_into().unwrap());
                        if i > 0 {
                            out.push((received as f64 - sent as f64 - held as f64) / 1e6);
                        }
                        break;
                    }
                }
                lcg = lcg.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let frac = (lcg >> 11) as f64 / (1u64 << 53) as f64;
                std::thread::sleep(min_gap + (max_gap - min_gap).mul_f64(frac));
            }
        }
        rtts
    })
    .join()
    .unwrap()
}

/// RTTs in ms that `ping` reports from namespace `ns` to `to`, each corrected by half of the
/// resolution it was printed with (ping truncates: 7.43 ms means 7.430 to 7.440).
pub fn ping_rtts(ns: &str, to: std::net::Ipv4Addr, count: usize, interval: Duration) -> Vec<f64> {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "nice", "-n", "-20", "ping", "-n", "-c"])
        .arg(count.to_string())
        .arg("-i")
        .arg(format!("{:.4}", interval.as_secs_f64()))
        .args(["-W", "2"])
        .arg(to.to_string())
        .output()
        .expect("run ping");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| {
            let t = t.split_whitespace().next()?;
            let decimals = t.split('.').nth(1).map_or(0, str::len);
            let value: f64 = t.parse().ok()?;
            Some(value + 0.5 * 10f64.powi(-(decimals as i32)))
        })
        .collect()
}

/// CLOCK_MONOTONIC in ns: one clock for every namespace, so a sender in one host and a sink
/// in another measure one-way delays directly.
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns: the clock the kernel's receive timestamps (SO_TIMESTAMPNS) use.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec we pass.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One datagram of a timed stream: sequence number, when the sender handed it to the
/// kernel and when the receiving kernel stamped it, both CLOCK_MONOTONIC (one clock for
/// every namespace, and the emulator's): neither end's wake-up is in the difference. The
/// kernel stamps on the wall clock, which a VM's host may set while a test runs; the sink
/// moves each stamp to the monotonic clock as it reads it, so only a setting within that
/// read's microseconds could blur one.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub seq: u64,
    pub sent_ns: u64,
    pub received_ns: u64,
}

impl Timed {
    pub fn one_way_ms(&self) -> f64 {
        (self.received_ns as f64 - self.sent_ns as f64) / 1e6
    }
}

impl Datagram for Timed {
    const MIN_LEN: usize = 16;
    fn parse(d: &[u8], _: Instant, kernel_rx_ns: u64) -> Timed {
        Timed {
            received_ns: (kernel_rx_ns as i64 - linkperf_testsupport::stall::wall_lead_ns()) as u64,
            seq: u64::from_be_bytes(d[..8].try_into().unwrap()),
            sent_ns: u64::from_be_bytes(d[8..16].try_into().unwrap()),
        }
    }
}

/// Sends `count` datagrams of `size` bytes carrying their sequence number and send time
/// (CLOCK_MONOTONIC), one every `gap`. Returns how many were sent.
///
/// A datagram never leaves sooner than `gap` after the one before: a sender that was
/// descheduled (a loaded or stalled machine) resumes at its rate instead of catching up
/// in a burst. A burst would queue at a link the rate was chosen not to fill, and every
/// datagram behind it would carry that queue in its one-way delay (measured on a loaded
/// machine: p50 43.8 ms through a 20 ms link after a catch-up).
pub fn send_timed(ns: &str, to: SocketAddr, size: usize, count: u64, gap: Duration) -> u64 {
    spawn_in(ns, move || {
        let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
        sock.connect(to).unwrap();
        let mut payload = vec![0u8; size.max(16)];
        let mut due = Instant::now();
        let mut sent = 0;
        for i in 0..count {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            due = due.max(now) + gap;
            payload[..8].copy_from_slice(&i.to_be_bytes());
            payload[8..16].copy_from_slice(&mono_ns().to_be_bytes());
            if sock.send(&payload).is_ok() {
                sent += 1;
            }
        }
        sent
    })
    .join()
    .unwrap()
}

/// Waits until `hold` after `received` (a kernel receive timestamp, CLOCK_REALTIME ns): a
/// precise sleep, then a spin for the last 300 µs. Returns how long after `received` it
/// returned (ns).
fn hold_from(received: u64, hold: Duration) -> u64 {
    let due = received + hold.as_nanos() as u64;
    let rest = due.saturating_sub(realtime_ns());
    if rest > 300_000 {
        std::thread::sleep(Duration::from_nanos(rest - 300_000));
    }
    while realtime_ns() < due {
        std::hint::spin_loop();
    }
    realtime_ns() - received
}

/// One datagram from a socket with kernel receive timestamps on (see
/// [`set_kernel_rx_timestamps`]): bytes, sender (IPv4), and the kernel's receive time
/// (CLOCK_REALTIME ns), so the receiving thread's wake-up is not in it; None on timeout.
fn recv_stamped(fd: i32, buf: &mut [u8]) -> Option<(usize, libc::sockaddr_in, u64)> {
    let mut control = [0u64; 16];
    // SAFETY: plain data structures, filled by recvmsg below.
    let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_in).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as u32;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: recvmsg into buffers we own.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n <= 0 {
        return None;
    }
    // SAFETY: walking the control messages the kernel wrote.
    let stamp = unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() || (*c).cmsg_type != libc::SCM_TIMESTAMPNS {
            return None;
        }
        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    Some((n as usize, from, stamp))
}

/// Asks the kernel to stamp every datagram `fd` receives (SO_TIMESTAMPNS), read by
/// [`recv_stamped`].
fn set_kernel_rx_timestamps(fd: i32) {
    let on: libc::c_int = 1;
    // SAFETY: an int option we own, with its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            4,
        )
    };
    assert_eq!(r, 0, "SO_TIMESTAMPNS: {}", std::io::Error::last_os_error());
}

fn icmp_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Answers pings in namespace `ns` itself (the kernel's own answer switched off there),
/// each exactly `hold` after the kernel received the request (its receive timestamp), so a
/// ping across a zero-length wire waits as long as through a link of hold / 2 each way, and
/// the holding adds no wake-up of its own.
pub fn start_icmp_echo_holding(ns: &str, hold: Duration) -> Echo {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let flag = stop.clone();
    let handle = spawn_in(ns, move || {
        raise_priority();
        linkperf_testbed::netns::write_sysctl("net.ipv4.icmp_echo_ignore_all", "1").unwrap();
        // SAFETY: socket(2) and setsockopt(2) on a descriptor we own, closed at the end.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) };
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: 50_000,
        };
        set_kernel_rx_timestamps(fd);
        // SAFETY: option values we own, with their sizes.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            );
        }
        ready_tx.send(()).unwrap();
        let mut buf = [0u8; 2048];
        while !flag.load(Ordering::Relaxed) {
            let Some((n, from, received)) = recv_stamped(fd, &mut buf) else {
                continue;
            };
            let header = ((buf[0] & 0x0f) as usize) * 4;
            if n < header + 8 || buf[header] != 8 {
                continue;
            }
            let mut reply = buf[header..n].to_vec();
            reply[0] = 0;
            reply[2..4].fill(0);
            let sum = icmp_checksum(&reply);
            reply[2..4].copy_from_slice(&sum.to_be_bytes());
            hold_from(received, hold);
            // SAFETY: sendto with our buffer and the sender's address.
            unsafe {
                libc::sendto(
                    fd,
                    reply.as_ptr().cast(),
                    reply.len(),
                    0,
                    (&from as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as u32,
                );
            }
        }
        // SAFETY: closing the socket opened above.
        unsafe { libc::close(fd) };
    });
    ready_rx.recv().expect("icmp echo ready");
    Echo {
        stop,
        handle: Some(handle),
    }
}
