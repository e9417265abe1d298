#![allow(dead_code)]

//! Small traffic generators for the tests: UDP echo, paced UDP senders and sinks, TCP bulk,
//! each on a thread that has entered a testbed namespace.

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
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

pub fn start_udp_echo6(ns: &str, port: u16) -> Echo {
    start_echo(ns, (std::net::Ipv6Addr::UNSPECIFIED, port).into())
}

fn start_echo(ns: &str, bind: SocketAddr) -> Echo {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let flag = stop.clone();
    let handle = spawn_in(ns, move || {
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

/// A UDP sink collecting arrivals until `idle` passes without traffic (after the first one)
/// or `limit` passes in total.
pub fn start_udp_sink(
    ns: &str,
    port: u16,
    idle: Duration,
    limit: Duration,
) -> JoinHandle<Vec<Arrival>> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let handle = spawn_in(ns, move || {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        sock.set_recv_buffer_size(8 << 20).unwrap();
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
            match sock.recv(&mut buf) {
                Ok(n) if n >= 8 => {
                    let now = Instant::now();
                    last = Some(now);
                    let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
                    out.push(Arrival {
                        seq,
                        at: now - start,
                        len: n,
                    });
                }
                _ => {}
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

/// Rate in bits/s of the arrivals inside [from, to], counting `wire_bytes(len)` per datagram.
/// Measured between the first and last arrival in the window, so a full window is n-1 gaps.
pub fn arrival_rate(
    arrivals: &[Arrival],
    from: Duration,
    to: Duration,
    wire_bytes: impl Fn(usize) -> u64,
) -> f64 {
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
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
pub fn udp_rtts_interleaved(
    targets: &[(String, SocketAddr)],
    count: usize,
    size: usize,
    min_gap: Duration,
    max_gap: Duration,
) -> Vec<Vec<f64>> {
    let targets = targets.to_vec();
    std::thread::spawn(move || {
        let socks: Vec<UdpSocket> = targets
            .iter()
            .map(|(ns, server)| {
                linkperf_testbed::netns::enter_netns(ns).expect("enter namespace");
                let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
                sock.connect(server).unwrap();
                sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                sock
            })
            .collect();
        let mut payload = vec![0u8; size.max(8)];
        let mut buf = vec![0u8; 65536];
        let mut rtts = vec![Vec::new(); socks.len()];
        let mut lcg = 0x2545_f491_4f6c_dd1du64;
        for i in 0..=count as u64 {
            for (sock, out) in socks.iter().zip(&mut rtts) {
                payload[..8].copy_from_slice(&i.to_be_bytes());
                let sent = Instant::now();
                sock.send(&payload).unwrap();
                loop {
                    match sock.recv(&mut buf) {
                        Ok(n) if n >= 8 && buf[..8] == i.to_be_bytes() => {
                            if i > 0 {
                                out.push(sent.elapsed().as_secs_f64() * 1e3);
                            }
                            break;
                        }
                        Ok(_) => continue,
                        Err(_) => break,
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
        .args(["netns", "exec", ns, "ping", "-n", "-c"])
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
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One datagram of a timed stream: sequence number, when it was sent and when it arrived.
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

/// A sink of timed datagrams (see [`send_timed`]) until `idle` passes without any (after the
/// first) or `limit` in total.
pub fn start_timed_sink(
    ns: &str,
    port: u16,
    idle: Duration,
    limit: Duration,
) -> JoinHandle<Vec<Timed>> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let handle = spawn_in(ns, move || {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
        sock.set_recv_buffer_size(8 << 20).unwrap();
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
            if let Ok(n) = sock.recv(&mut buf) {
                if n >= 16 {
                    let received_ns = mono_ns();
                    last = Some(Instant::now());
                    out.push(Timed {
                        seq: u64::from_be_bytes(buf[..8].try_into().unwrap()),
                        sent_ns: u64::from_be_bytes(buf[8..16].try_into().unwrap()),
                        received_ns,
                    });
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

/// Sends `count` datagrams of `size` bytes carrying their sequence number and send time,
/// one every `gap`. Returns how many were sent.
pub fn send_timed(ns: &str, to: SocketAddr, size: usize, count: u64, gap: Duration) -> u64 {
    spawn_in(ns, move || {
        let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
        sock.connect(to).unwrap();
        let mut payload = vec![0u8; size.max(16)];
        let start = Instant::now();
        let mut sent = 0;
        for i in 0..count {
            let due = start + gap * i as u32;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
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
