//! The tests' own request/response exchange through a testbed, written with nothing but
//! the standard library: a reference that linkperf's `rr` is held to on the same path.
//! An echo in one host answers every 64-byte request (TCP and UDP, same port) with its
//! 64 bytes; a client in another host times each exchange from just before its write to
//! just after its read, as an application would. [`Meanwhile`] keeps such exchanges
//! going beside a run, each stamped with the wall-clock time, for a reference over the
//! same seconds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Bytes of every request and answer (rr's default size).
pub const SIZE: usize = 64;
const PORT: u16 = 7131;

/// The echo's threads in a host; stopped and joined when dropped.
pub struct Echo {
    /// Where the echo answers (the host's first IPv4 address).
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Echo {
    /// Starts a TCP and a UDP echo on port 7131 of network namespace `netns`, listening
    /// when this returns, answering at `addr`.
    pub fn start(netns: &str, addr: std::net::IpAddr) -> Echo {
        let stop = Arc::new(AtomicBool::new(false));
        let (tcp, udp) = in_netns(netns, || {
            let tcp = TcpListener::bind(("0.0.0.0", PORT)).expect("bind the TCP echo");
            let udp = UdpSocket::bind(("0.0.0.0", PORT)).expect("bind the UDP echo");
            (tcp, udp)
        });
        tcp.set_nonblocking(true).unwrap();
        udp.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let threads = vec![
            thread::spawn({
                let stop = stop.clone();
                move || serve_tcp(tcp, &stop)
            }),
            thread::spawn({
                let stop = stop.clone();
                move || serve_udp(udp, &stop)
            }),
        ];
        Echo {
            addr: (addr, PORT).into(),
            stop,
            threads,
        }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Runs `f` on a thread inside network namespace `netns`: sockets it creates belong there.
fn in_netns<T: Send + 'static>(netns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    linkperf_testbed::netns::in_netns(netns, move || Ok(f())).expect("enter the namespace")
}

/// Answers one connection at a time until told to stop (checked between connections
/// and every 50 ms of a connection's silence).
fn serve_tcp(listener: TcpListener, stop: &AtomicBool) {
    let mut buf = [0u8; SIZE];
    while !stop.load(Ordering::Relaxed) {
        let Ok((mut conn, _)) = listener.accept() else {
            thread::sleep(Duration::from_millis(5));
            continue;
        };
        conn.set_nonblocking(false).unwrap();
        conn.set_nodelay(true).unwrap();
        conn.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let mut filled = 0;
        while !stop.load(Ordering::Relaxed) {
            match conn.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
                Err(_) => break,
            }
            if filled == SIZE {
                if conn.write_all(&buf).is_err() {
                    break;
                }
                filled = 0;
            }
        }
    }
}

fn serve_udp(socket: UdpSocket, stop: &AtomicBool) {
    let mut buf = [0u8; SIZE];
    while !stop.load(Ordering::Relaxed) {
        if let Ok((n, from)) = socket.recv_from(&mut buf) {
            let _ = socket.send_to(&buf[..n], from);
        }
    }
}

/// `count` exchanges with the echo at `to`, from network namespace `netns`, one after
/// another: each one's RTT in milliseconds. TCP uses one connection (no Nagle delay);
/// a lost UDP datagram fails the call (the test's paths do not lose).
pub fn rtts(netns: &str, to: SocketAddr, udp: bool, count: usize) -> Vec<f64> {
    in_netns(netns, move || {
        let request = [7u8; SIZE];
        let mut answer = [0u8; SIZE];
        let limit = Some(Duration::from_secs(2));
        let mut times = Vec::with_capacity(count);
        if udp {
            let socket = UdpSocket::bind(("0.0.0.0", 0)).unwrap();
            socket.connect(to).unwrap();
            socket.set_read_timeout(limit).unwrap();
            for _ in 0..count {
                let start = Instant::now();
                socket.send(&request).unwrap();
                let n = socket.recv(&mut answer).expect("the UDP echo's answer");
                times.push(start.elapsed());
                assert_eq!(n, SIZE);
            }
        } else {
            let mut conn = TcpStream::connect_timeout(&to, Duration::from_secs(5)).unwrap();
            conn.set_nodelay(true).unwrap();
            conn.set_read_timeout(limit).unwrap();
            for _ in 0..count {
                let start = Instant::now();
                conn.write_all(&request).unwrap();
                conn.read_exact(&mut answer).expect("the TCP echo's answer");
                times.push(start.elapsed());
            }
        }
        times.iter().map(|t| t.as_secs_f64() * 1e3).collect()
    })
}

/// UDP exchanges with an echo from a network namespace, five every 20 ms,
/// until stopped: each RTT (ms) with the wall-clock time (unix ms) its five began.
pub struct Meanwhile {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<(i64, f64)>>,
}

impl Meanwhile {
    pub fn start(netns: String, to: SocketAddr) -> Meanwhile {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = thread::spawn({
            let stop = stop.clone();
            move || {
                let mut seen = Vec::new();
                // Bounded: at most 3,000 rounds (a minute and more).
                for _ in 0..3000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let at = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_millis() as i64);
                    seen.extend(rtts(&netns, to, true, 5).into_iter().map(|rtt| (at, rtt)));
                    thread::sleep(Duration::from_millis(20));
                }
                seen
            }
        });
        Meanwhile { stop, thread }
    }

    /// Stops the exchanges; what they measured.
    pub fn stop(self) -> Vec<(i64, f64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the ping-pong beside the run")
    }
}

/// The median of `values` (NaN when there are none).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
