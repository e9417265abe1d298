//! A running server under fuzzed connections (issue 17): random frames,
//! truncated frames, huge length prefixes, wrong message types, messages
//! out of order, random preambles, wrong cookies and rr garbage, from many
//! connections of four 127/8 addresses (seeded RNG, bounded in count and
//! time). The server must stay within its limits (fds, threads, RSS read
//! from /proc) and a legitimate client's test meanwhile must succeed with
//! exactly the bytes it asked for.

mod common;
use common::hostile::{connect_from, rss};
use common::*;
use linkperf_proto::{encode, ClientMessage, Preamble, PROTOCOL_VERSION};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The server's connection limit in this test: fds and threads are bounded by it.
const MAX_CONNECTIONS: usize = 64;
/// Attack bounds: connections per attacker thread, and time.
const PER_ATTACKER: usize = 2000;
const ATTACK_TIME: Duration = Duration::from_secs(8);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// One hostile connection's bytes, of kind `kind`.
fn hostile_bytes(rng: &mut Rng, kind: u64) -> Vec<u8> {
    let control = Preamble::Control.bytes().to_vec();
    let hello = encode(&ClientMessage::Hello {
        version: PROTOCOL_VERSION,
        software: "fuzz".into(),
    });
    let mut out = Vec::new();
    match kind {
        // Random frames after a control preamble.
        0 => {
            out.extend(&control);
            let n = rng.below(2000) as usize;
            out.extend(rng.bytes(n));
        }
        // A truncated frame: its prefix promises more than follows.
        1 => {
            out.extend(&control);
            let mut frame = hello.clone();
            frame.truncate(4 + rng.below(frame.len() as u64 - 4) as usize);
            out.extend(frame);
        }
        // A huge length prefix.
        2 => {
            out.extend(&control);
            out.extend(&(u32::MAX - rng.below(1 << 20) as u32).to_be_bytes());
            out.extend(rng.bytes(64));
        }
        // A frame of a message type that does not exist.
        3 => {
            out.extend(&control);
            out.extend(&hello);
            let body = br#"{"type":"reboot","now":true}"#;
            out.extend(&(body.len() as u32).to_be_bytes());
            out.extend(body);
        }
        // Messages out of order: a start or finished before any set-up.
        4 => {
            out.extend(&control);
            if rng.below(2) == 0 {
                out.extend(&hello);
            }
            out.extend(encode(&ClientMessage::Start {
                start_at_unix_ms: None,
            }));
            out.extend(encode(&ClientMessage::SendersDone {
                packets: vec![(0, rng.next())],
            }));
        }
        // A random preamble (the iperf3 path, or nothing known).
        5 => {
            let n = 4 + rng.below(60) as usize;
            out.extend(rng.bytes(n));
        }
        // A data connection with a random cookie.
        6 => {
            out.extend(Preamble::Data.bytes());
            out.extend(rng.bytes(12));
        }
        // rr garbage.
        _ => {
            out.extend(Preamble::Rr.bytes());
            let n = rng.below(300) as usize;
            out.extend(rng.bytes(n));
        }
    }
    out
}

/// One attacker: connections from `source` until the count or time is up.
fn attack(port: u16, source: &'static str, seed: u64, stop: Arc<AtomicBool>) -> usize {
    let mut rng = Rng(seed);
    let end = Instant::now() + ATTACK_TIME;
    let mut sent = 0;
    for _ in 0..PER_ATTACKER {
        if Instant::now() > end || stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(mut conn) = connect_from(source, port) else {
            continue;
        };
        let kind = rng.below(8);
        let bytes = hostile_bytes(&mut rng, kind);
        let _ = conn.write_all(&bytes);
        sent += 1;
        // Half are left open a moment (the server must time them out or
        // refuse them), half closed at once.
        if rng.below(2) == 0 {
            let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
            let mut sink = [0u8; 512];
            let _ = conn.read(&mut sink);
        }
    }
    sent
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_fuzzed_server_stays_within_its_limits_and_serves_a_client() {
    let max = MAX_CONNECTIONS.to_string();
    let server = Server::start_with(&[
        "--server-max-connections",
        &max,
        "--server-max-connections-per-source",
        &max,
        "--server-handshake-timeout",
        "2",
    ]);
    let pid = server.pid();
    let (fds0, threads0, rss0) = (fds(pid), threads(pid), rss(pid).0);
    let stop = Arc::new(AtomicBool::new(false));
    let port = server.port;
    let sources = ["127.0.0.21", "127.0.0.22", "127.0.0.23", "127.0.0.24"];
    let attackers: Vec<_> = sources
        .iter()
        .enumerate()
        .map(|(i, &source)| {
            let stop = stop.clone();
            std::thread::spawn(move || attack(port, source, 0x5eed + i as u64, stop))
        })
        .collect();
    // Samples while the attack runs.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut peak = (0, 0, 0);
            while sampling.load(Ordering::Relaxed) {
                peak.0 = peak.0.max(fds(pid));
                peak.1 = peak.1.max(threads(pid));
                peak.2 = peak.2.max(rss(pid).0);
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    // A legitimate client from 127.0.0.1 meanwhile: exactly its bytes.
    let asked = 32u64 << 20;
    let report = client_json(port, &["-n", "32M"]);
    assert_eq!(u64_at(&report, "/summary/received/bytes"), asked);
    assert_eq!(u64_at(&report, "/summary/sent/bytes"), asked);
    // A second, timed test: its intervals come while the attack goes on.
    let timed = client_json(port, &["-t", "1"]);
    assert!(u64_at(&timed, "/summary/received/bytes") > 0, "{timed}");
    stop.store(true, Ordering::Relaxed);
    let sent: usize = attackers.into_iter().map(|a| a.join().unwrap()).sum();
    sampling.store(false, Ordering::Relaxed);
    let (peak_fds, peak_threads, peak_rss) = sampler.join().unwrap();
    eprintln!(
        "live fuzz: {sent} hostile connections; fds {fds0} -> peak {peak_fds}, threads {threads0} -> peak {peak_threads}, RSS {} -> peak {} KiB",
        rss0 / 1024,
        peak_rss / 1024
    );
    assert!(sent >= 400, "only {sent} hostile connections were made");
    // Each admitted connection holds one socket and one thread; the
    // legitimate test adds its data connection, listeners and stream and
    // sampler threads (under 16 of each).
    assert!(
        peak_fds <= fds0 + MAX_CONNECTIONS + 16,
        "fds peaked at {peak_fds} (from {fds0}, limit {MAX_CONNECTIONS} connections)"
    );
    assert!(
        peak_threads <= threads0 + MAX_CONNECTIONS + 16,
        "threads peaked at {peak_threads} (from {threads0})"
    );
    assert!(peak_rss <= 64 << 20, "RSS peaked at {} MiB", peak_rss >> 20);
    // Within the handshake deadline (2 s) after the attack, all is given back.
    let settled = poll(Duration::from_secs(6), Duration::from_millis(100), || {
        (fds(pid) <= fds0 + 2 && threads(pid) <= threads0 + 2).then_some(())
    });
    assert!(
        settled.is_some(),
        "not given back: fds {} (from {fds0}), threads {} (from {threads0})",
        fds(pid),
        threads(pid)
    );
    assert!(server
        .stderr_lines()
        .iter()
        .all(|l| !l.contains("panicked")));
}
