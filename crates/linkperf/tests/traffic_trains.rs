//! A model sender at a rate one system call per message cannot follow
//! (200 000 Poisson messages per second: one datagram per call costs
//! about 4.5 µs on the development VM) sends the messages due together in
//! one call, and its schedule report stays honest: what it says it sent is
//! what arrives (counted by this test's own receiver from the sequence
//! numbers), what it says was due is the Poisson count the model implies,
//! and whatever it could not send is counted as missed, never dropped
//! silently.
//!
//! Whether it keeps up is a speed figure (bench/ditg.py, bench/RESULTS.md),
//! not asserted here: a loaded machine may take the core away.

mod common;

use linkperf_engine::side::{LocalSide, SideEvent, StreamPlan};
use linkperf_engine::DataSocket;
use linkperf_proto::results::Role;
use linkperf_proto::{Protocol, TestConfig};
use linkperf_traffic::Traffic;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RATE: f64 = 200_000.0;
const SECONDS: f64 = 1.0;
const SIZE: usize = 100;
/// Copies of the end-of-stream marker a UDP sender sends (FIN_COPIES in
/// crates/engine/src/stream.rs).
const END_MARKERS: u64 = 5;

/// Sequence numbers and lengths of the data datagrams that arrive, how many
/// others (end markers) did, and how many the kernel dropped at the socket,
/// once the socket has been empty for 300 ms after `done` is set.
fn receive(sock: UdpSocket, done: Arc<AtomicBool>) -> (Vec<(u64, usize)>, u64, u64) {
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut got = Vec::with_capacity((RATE * SECONDS * 1.2) as usize);
    let mut buf = vec![0u8; 65_536];
    let mut others = 0;
    loop {
        let Ok(n) = sock.recv(&mut buf) else {
            if done.load(Ordering::Acquire) {
                // While the socket is still open: it leaves the table when closed.
                return (got, others, kernel_drops(sock.local_addr().unwrap().port()));
            }
            continue;
        };
        match linkperf_proto::udp::parse(&buf[..n]) {
            Some(linkperf_proto::udp::Datagram::Data { seq, .. }) => got.push((seq, n)),
            _ => others += 1,
        }
    }
}

/// The kernel's count of datagrams dropped at the IPv4 UDP socket bound to
/// `port` (its receive buffer was full): the last column of /proc/net/udp.
fn kernel_drops(port: u16) -> u64 {
    let table = std::fs::read_to_string("/proc/self/net/udp").unwrap();
    let local = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .find_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            cols.get(1)?
                .ends_with(&local)
                .then(|| cols.last()?.parse().ok())?
        })
        .expect("the receiver's socket is in /proc/net/udp")
}

#[test]
fn a_sender_in_trains_reports_what_it_sent_and_what_it_missed() {
    let model = format!("idt=exp:{}us;size=const:{SIZE}", 1e6 / RATE);
    let mut traffic =
        Traffic::parse(&model, &|_| Err(std::io::ErrorKind::NotFound.into())).unwrap();
    traffic.seed = Some(14);
    let config = TestConfig {
        protocol: Protocol::Udp,
        parallel: 1,
        length: SIZE as u32,
        duration_s: SECONDS,
        interval_s: 0.0,
        traffic: Some(Box::new(traffic)),
        ..Default::default()
    };
    config.validate().unwrap();
    let rx = common::loopback_receiver(32 << 20);
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(rx.local_addr().unwrap()).unwrap();
    let plans = vec![StreamPlan {
        id: 0,
        role: Role::Sender,
        socket: DataSocket::Udp(tx),
    }];
    let done = Arc::new(AtomicBool::new(false));
    let receiver = std::thread::spawn({
        let done = done.clone();
        move || receive(rx, done)
    });
    let start = Instant::now() + Duration::from_millis(100);
    let mut side = LocalSide::new(config, plans, true, Vec::new());
    side.start(start, Arc::new(|_: SideEvent| {}));
    let result = side.finish();
    done.store(true, Ordering::Release);
    let (got, others, drops) = receiver.join().unwrap();
    let s = result.streams[0]
        .schedule
        .clone()
        .expect("a schedule report");
    let mut seqs: Vec<u64> = got.iter().map(|d| d.0).collect();
    seqs.sort_unstable();
    seqs.dedup();
    eprintln!(
        "due {}, sent {}, late {}, unsent {}, misses {}; error p50 {:.1} / p99 {:.1} us; \
         {} datagrams arrived, {drops} dropped at the receiving socket",
        s.messages_due,
        s.messages_sent,
        s.late,
        s.unsent,
        s.misses,
        s.error_p50_us,
        s.error_p99_us,
        got.len()
    );
    // Due: a Poisson count of mean RATE x SECONDS (sd 447); 5 sd either side.
    let mean = RATE * SECONDS;
    assert!(
        (s.messages_due as f64 - mean).abs() < 5.0 * mean.sqrt(),
        "{} due, {mean} expected",
        s.messages_due
    );
    // Every message due was sent or counted as unsent; misses are the late
    // and the unsent.
    assert_eq!(s.messages_sent + s.unsent, s.messages_due, "{s:?}");
    assert_eq!(s.misses, s.late + s.skipped + s.unsent, "{s:?}");
    // One datagram per message, numbered from 0: what the sender says it
    // sent is what arrived plus what the kernel dropped at this test's
    // socket (when this slower receiver falls behind), each datagram once
    // and at its size.
    assert_eq!(seqs.len(), got.len(), "a datagram arrived twice");
    assert!(
        seqs.last().is_none_or(|&m| m < s.messages_sent),
        "a datagram numbered past the {} reported sent",
        s.messages_sent
    );
    // The kernel's drops may include the sender's end markers (up to
    // END_MARKERS, of which `others` arrived).
    let accounted = got.len() as u64 + drops;
    assert!(
        accounted >= s.messages_sent && accounted + others <= s.messages_sent + END_MARKERS,
        "{} arrived + {drops} dropped vs {} reported sent ({others} end markers arrived)",
        got.len(),
        s.messages_sent
    );
    assert!(got.iter().all(|d| d.1 == SIZE));
}
