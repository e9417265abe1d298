//! What a server left running on the Internet allows: its limits
//! (connections in all and per source address, concurrent tests, streams,
//! payload memory per test, duration, rate, handshake deadlines), the
//! permits that hold a share of them, unguessable session cookies, the
//! rate limit on wrong-cookie attempts, the event log every refusal is
//! written to, and (`auth`) who may use the server. The servers (linkperf,
//! rr, iperf3) ask it; it serves nothing.

pub mod auth;
pub mod log;

pub use log::{EventLog, Level, LogFormat};

use linkperf_proto::{Protocol, TestConfig};
use std::collections::HashMap;
use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A server's limits; the defaults suit a public server on a small host.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Open connections of any kind, in all.
    pub max_connections: usize,
    /// Open connections from one source address (a test's control and data
    /// connections count: keep it above twice `max_streams_per_test`).
    pub max_connections_per_source: usize,
    /// Tests (linkperf, rr and iperf3 sessions) running at once.
    pub max_tests: usize,
    /// Streams one test may open.
    pub max_streams_per_test: u32,
    /// Streams of all running tests together.
    pub max_streams: usize,
    /// Payload buffer bytes one test may hold on this server.
    pub max_test_memory: u64,
    /// Longest test in seconds; `-n` tests are stopped when they reach it.
    pub max_duration_s: f64,
    /// Highest rate one test may ask for (bits/s, all streams); `None`: any.
    pub max_bitrate: Option<u64>,
    /// Each step of a handshake (preamble, hello, set-up, data hellos) must
    /// complete within this, however the bytes trickle in.
    pub handshake_timeout: Duration,
    /// Wrong session cookies one source may send per [`WRONG_COOKIE_WINDOW`]
    /// before its data connections are closed unread.
    pub wrong_cookies: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 2000,
            max_connections_per_source: 300,
            max_tests: 32,
            max_streams_per_test: 128,
            max_streams: 512,
            max_test_memory: 256 << 20,
            max_duration_s: 3600.0,
            max_bitrate: None,
            handshake_timeout: Duration::from_secs(10),
            wrong_cookies: 10,
        }
    }
}

/// The window of the wrong-cookie rate limit.
pub const WRONG_COOKIE_WINDOW: Duration = Duration::from_secs(10);

/// The payload buffer bytes a test holds on the server: one sending payload
/// shared by all its sending streams, and each UDP receiving stream's batch of
/// datagram slots. TCP receivers hold none: they read into the process's
/// per-CPU regions (`linkperf_engine::sink`), whatever the number of streams.
pub fn test_memory(config: &TestConfig) -> u64 {
    let streams = u64::from(config.parallel)
        * if config.direction == linkperf_proto::Direction::Bidir {
            2
        } else {
            1
        };
    let length = u64::from(config.length);
    let receive = match config.protocol {
        Protocol::Tcp => 0,
        Protocol::Udp => linkperf_engine::udp_stream_memory(config.length as usize) as u64,
    };
    length + streams * receive
}

#[derive(Default)]
struct Counts {
    connections: usize,
    per_source: HashMap<IpAddr, usize>,
    tests: usize,
    streams: usize,
    /// Wrong cookies per source: window start and count.
    wrong: HashMap<IpAddr, (Instant, u32)>,
    /// Refusals logged in the current second, and those left out.
    logged: (Option<Instant>, u32, u64),
}

pub struct Guard {
    pub limits: Limits,
    pub log: EventLog,
    counts: Mutex<Counts>,
}

/// A connection's share of the limits, given back when dropped.
pub struct ConnectionPermit {
    guard: Arc<Guard>,
    ip: IpAddr,
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        if let Ok(mut c) = self.guard.counts.lock() {
            c.connections = c.connections.saturating_sub(1);
            if let Some(n) = c.per_source.get_mut(&self.ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    c.per_source.remove(&self.ip);
                }
            }
        }
    }
}

/// A running test's share of the limits, given back when dropped.
pub struct TestPermit {
    guard: Arc<Guard>,
    streams: usize,
}

impl Drop for TestPermit {
    fn drop(&mut self) {
        if let Ok(mut c) = self.guard.counts.lock() {
            c.tests = c.tests.saturating_sub(1);
            c.streams = c.streams.saturating_sub(self.streams);
        }
    }
}

impl Guard {
    pub fn new(limits: Limits, log: EventLog) -> Arc<Guard> {
        Arc::new(Guard {
            limits,
            log,
            counts: Mutex::default(),
        })
    }

    /// Admits a new connection from `peer`, or says which limit it exceeds.
    pub fn admit_connection(
        self: &Arc<Self>,
        peer: SocketAddr,
    ) -> Result<ConnectionPermit, String> {
        let ip = crate::data::canonical_ip(peer.ip());
        let mut c = self.counts.lock().map_err(|_| "server state poisoned")?;
        if c.connections >= self.limits.max_connections {
            return Err(format!(
                "connection refused: the server has {} connections open, its limit (--server-max-connections)",
                self.limits.max_connections
            ));
        }
        let mine = c.per_source.get(&ip).copied().unwrap_or(0);
        if mine >= self.limits.max_connections_per_source {
            return Err(format!(
                "connection refused: {ip} has {mine} connections open, the limit per source address (--server-max-connections-per-source)"
            ));
        }
        c.connections += 1;
        *c.per_source.entry(ip).or_default() += 1;
        Ok(ConnectionPermit {
            guard: self.clone(),
            ip,
        })
    }

    /// Checks a test's configuration against the limits that do not depend
    /// on other tests: streams, duration, rate and payload memory.
    pub fn check_config(&self, config: &TestConfig) -> Result<(), String> {
        let l = &self.limits;
        if config.parallel > l.max_streams_per_test {
            return Err(format!(
                "-P {} exceeds this server's limit of {} streams per test (--server-max-streams-per-test)",
                config.parallel, l.max_streams_per_test
            ));
        }
        if config.bytes.is_none() && config.duration_s > l.max_duration_s {
            return Err(format!(
                "-t {} exceeds this server's limit of {} s per test (--server-max-duration)",
                config.duration_s, l.max_duration_s
            ));
        }
        if let Some(limit) = l.max_bitrate {
            let asked = config
                .bitrate
                .filter(|&b| b > 0)
                .map(|b| b.saturating_mul(u64::from(config.parallel)));
            if asked.is_none_or(|a| a > limit) {
                return Err(format!(
                    "this server limits a test to {} (--server-bitrate-limit); ask for at most that with -b (per stream: divide by -P)",
                    linkperf_units::format_rate(limit as f64)
                ));
            }
        }
        let memory = test_memory(config);
        if memory > l.max_test_memory {
            return Err(format!(
                "the test needs {} of payload buffers, over this server's limit of {} per test (--server-max-test-memory); use a smaller -l or fewer streams",
                linkperf_units::format_bytes(memory as f64),
                linkperf_units::format_bytes(l.max_test_memory as f64)
            ));
        }
        Ok(())
    }

    /// Admits a test of `streams` streams among the running ones.
    pub fn admit_test(self: &Arc<Self>, streams: usize) -> Result<TestPermit, String> {
        let mut c = self.counts.lock().map_err(|_| "server state poisoned")?;
        if c.tests >= self.limits.max_tests {
            return Err(format!(
                "the server is running {} tests, its limit (--server-max-tests); try again later",
                c.tests
            ));
        }
        if c.streams + streams > self.limits.max_streams {
            return Err(format!(
                "the server runs {} streams and its limit is {} (--server-max-streams); try again later or with fewer streams",
                c.streams, self.limits.max_streams
            ));
        }
        c.tests += 1;
        c.streams += streams;
        Ok(TestPermit {
            guard: self.clone(),
            streams,
        })
    }

    /// True while `ip` is over its wrong-cookie limit: its data connections
    /// are closed before their cookie is read.
    pub fn cookie_guessing_blocked(&self, ip: IpAddr) -> bool {
        let ip = crate::data::canonical_ip(ip);
        let Ok(c) = self.counts.lock() else {
            return true;
        };
        c.wrong.get(&ip).is_some_and(|(since, n)| {
            since.elapsed() < WRONG_COOKIE_WINDOW && *n >= self.limits.wrong_cookies
        })
    }

    /// Counts and logs a data connection whose cookie matches no session.
    pub fn wrong_cookie(&self, peer: SocketAddr, what: &str) {
        let ip = crate::data::canonical_ip(peer.ip());
        let count = {
            let Ok(mut c) = self.counts.lock() else {
                return;
            };
            if c.wrong.len() > 10_000 {
                c.wrong
                    .retain(|_, (since, _)| since.elapsed() < WRONG_COOKIE_WINDOW);
            }
            let entry = c.wrong.entry(ip).or_insert((Instant::now(), 0));
            if entry.0.elapsed() >= WRONG_COOKIE_WINDOW {
                *entry = (Instant::now(), 0);
            }
            entry.1 += 1;
            entry.1
        };
        let limit = self.limits.wrong_cookies;
        if count < limit {
            self.log.event(
                Level::Warn,
                peer,
                "wrong-cookie",
                &format!("{what} with a cookie of no session; closed"),
            );
        } else if count == limit {
            self.log.event(
                Level::Warn,
                peer,
                "rate-limited",
                &format!(
                    "{limit} wrong cookies within {} s: data connections from {ip} are closed unread until the window ends",
                    WRONG_COOKIE_WINDOW.as_secs()
                ),
            );
        }
    }

    /// Logs a refusal, at most 20 a second: a flood of refused connections
    /// must not become a flood of log lines. The next logged line says how
    /// many were left out.
    pub fn refused(&self, peer: SocketAddr, why: &str) {
        let left_out = {
            let Ok(mut c) = self.counts.lock() else {
                return;
            };
            let (since, logged, left_out) = &mut c.logged;
            if since.is_none_or(|s| s.elapsed() >= Duration::from_secs(1)) {
                *since = Some(Instant::now());
                *logged = 0;
            }
            if *logged >= 20 {
                *left_out += 1;
                return;
            }
            *logged += 1;
            std::mem::take(left_out)
        };
        let also = if left_out > 0 {
            format!(" ({left_out} similar refusals not logged)")
        } else {
            String::new()
        };
        self.log
            .event(Level::Warn, peer, "refused", &format!("{why}{also}"));
    }
}

/// A session cookie from the kernel's cryptographic random generator
/// (getrandom(2)): nothing about the server's clock, pid or other sessions
/// can be learnt from it, nor the next one guessed.
pub fn session_cookie() -> Result<u64, String> {
    let mut bytes = [0u8; 8];
    random_bytes(&mut bytes).map_err(|e| format!("no random numbers for a session cookie: {e}"))?;
    Ok(u64::from_ne_bytes(bytes))
}

/// Fills `bytes` from the kernel's cryptographic random generator.
pub fn random_bytes(bytes: &mut [u8]) -> Result<(), String> {
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: getrandom writes at most the length given into the part
        // of the buffer we own from `filled` on.
        let n = unsafe {
            libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("getrandom: {e}"));
        }
        filled += n as usize;
    }
    Ok(())
}

/// `read_exact` that must finish by `deadline`, however slowly the bytes
/// come: the socket's timeout is the time left, not a fresh one per read.
pub fn read_exact_by(
    stream: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> Result<(), String> {
    crate::tls::read_exact_within(buf, deadline, &mut |b, left| {
        let _ = stream.set_read_timeout(Some(left));
        stream.read(b)
    })
}

/// How long an accept loop waits after `accept` failed: out of file
/// descriptors or memory it backs off (retrying at once spins a core and
/// starves the tests running), other errors are brief.
pub fn accept_backoff(e: &std::io::Error) -> Duration {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
            Duration::from_millis(100)
        }
        _ => Duration::from_millis(5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_counts_one_shared_payload_and_each_receiver() {
        let reverse = TestConfig {
            direction: linkperf_proto::Direction::Reverse,
            parallel: 64,
            length: 64 << 20,
            ..Default::default()
        };
        // TCP receivers share the process's per-CPU regions: the payload only.
        assert_eq!(test_memory(&reverse), 64 << 20);
        let udp = TestConfig {
            protocol: Protocol::Udp,
            parallel: 4,
            length: 1400,
            ..Default::default()
        };
        let slots = linkperf_engine::udp_stream_memory(1400) as u64;
        assert_eq!(test_memory(&udp), 1400 + 4 * slots);
        assert!(slots >= 64 * 1400);
    }

    #[test]
    fn limits_name_their_flag() {
        let guard = Guard::new(Limits::default(), EventLog::default());
        let long = TestConfig {
            duration_s: 7200.0,
            ..Default::default()
        };
        assert!(guard
            .check_config(&long)
            .unwrap_err()
            .contains("--server-max-duration"));
        let wide = TestConfig {
            parallel: 200,
            ..Default::default()
        };
        assert!(guard
            .check_config(&wide)
            .unwrap_err()
            .contains("--server-max-streams-per-test"));
        let first = guard.admit_test(500).unwrap();
        let over = guard.admit_test(13).err().expect("over the total");
        assert!(over.contains("--server-max-streams"), "{over}");
        drop(first);
        assert!(guard.admit_test(13).is_ok());
    }
}
