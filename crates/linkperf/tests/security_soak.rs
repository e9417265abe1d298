//! Soak (issue 17): many short tests in a row against one server process,
//! its fds, threads and RSS sampled from /proc. In the suite 500 tests;
//! `LINKPERF_SOAK_TESTS=10000` runs the figure in docs/security.md. Each
//! test must receive exactly the bytes it asked for, and the server's fds
//! and threads must be the same after the last test as after the first
//! tenth (no leak), its RSS within a few MiB.

mod common;
use common::hostile::rss;
use common::*;
use linkperf::client::{self, ClientOptions};
use linkperf_proto::TestConfig;
use std::time::{Duration, Instant};

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn threads(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// fds, threads and RSS once the server has closed what the last test used.
fn settled(pid: u32, fds0: usize, threads0: usize) -> (usize, usize, u64) {
    poll(Duration::from_secs(3), Duration::from_millis(10), || {
        (fds(pid) <= fds0 && threads(pid) <= threads0).then_some(())
    });
    (fds(pid), threads(pid), rss(pid).0)
}

#[test]
fn many_short_tests_leave_fds_threads_and_memory_flat() {
    let tests: usize = std::env::var("LINKPERF_SOAK_TESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let server = Server::start();
    let pid = server.pid();
    let (idle_fds, idle_threads) = (fds(pid), threads(pid));
    let bytes = 64 * 1024;
    let options = ClientOptions {
        host: "127.0.0.1".into(),
        port: server.port,
        config: TestConfig {
            bytes: Some(bytes),
            interval_s: 0.0,
            ..Default::default()
        },
        ..Default::default()
    };
    let started = Instant::now();
    let mut after_tenth = None;
    for i in 0..tests {
        let report = client::run(&options, &mut |_| {}, None)
            .unwrap_or_else(|e| panic!("test {i} of {tests} failed: {}", e.message));
        assert_eq!(report.summary.received.bytes, bytes, "test {i}");
        if i + 1 == tests / 10 {
            after_tenth = Some(settled(pid, idle_fds, idle_threads));
        }
    }
    let (fds1, threads1, rss1) = after_tenth.unwrap();
    let (fds2, threads2, rss2) = settled(pid, idle_fds, idle_threads);
    let (_, peak) = rss(pid);
    eprintln!(
        "soak: {tests} tests in {:.1} s; idle fds {idle_fds} threads {idle_threads}; after {} tests fds {fds1} threads {threads1} RSS {} KiB; after {tests} fds {fds2} threads {threads2} RSS {} KiB (peak {} KiB)",
        started.elapsed().as_secs_f64(),
        tests / 10,
        rss1 / 1024,
        rss2 / 1024,
        peak / 1024
    );
    assert_eq!((fds2, threads2), (fds1, threads1), "fds or threads grew");
    assert!(fds2 <= idle_fds && threads2 <= idle_threads);
    // The allocator keeps some freed memory; over 10,000 tests a leak of
    // 1 KiB a test would be 10 MiB.
    assert!(
        rss2 <= rss1 + (4 << 20),
        "RSS grew from {} to {} KiB",
        rss1 / 1024,
        rss2 / 1024
    );
}
