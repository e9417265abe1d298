//! Bounded resources (issue 17): connections per source address, handshake
//! deadlines that do not restart per byte, small frames before the hello,
//! payload memory per test, streams, concurrent tests, rate and duration.
//! Each attack runs over loopback from addresses of 127/8 other than the
//! legitimate client's, bounded in count and time; the bounds asserted come
//! from the configured limits.

mod common;
use common::hostile::{closed_within, connect_from, rss};
use common::*;
use std::io::Write;
use std::time::{Duration, Instant};

/// A refusal logged by the server that names `flag`.
fn logged_refusal(server: &Server, flag: &str) -> Option<String> {
    poll(Duration::from_secs(5), Duration::from_millis(50), || {
        server
            .stderr_lines()
            .into_iter()
            .find(|l| l.contains("refused") && l.contains(flag))
    })
}

#[test]
fn connections_over_the_per_source_limit_are_closed_and_logged() {
    let limit = 8;
    let server = Server::start_with(&["--server-max-connections-per-source", "8"]);
    let held: Vec<_> = (0..limit + 12)
        .map(|_| connect_from("127.0.0.5", server.port).expect("connect"))
        .collect();
    // 300 ms each: all 20 are checked well within the 10 s handshake
    // deadline that closes the admitted ones too.
    let closed = held
        .iter()
        .filter(|s| closed_within(s, Duration::from_millis(300)))
        .count();
    // The first `limit` wait for their preamble (10 s); the rest are closed.
    assert_eq!(
        closed,
        12,
        "connections closed of {} from one source",
        limit + 12
    );
    let line = logged_refusal(&server, "--server-max-connections-per-source")
        .unwrap_or_else(|| panic!("no refusal logged: {:?}", server.stderr_lines()));
    assert!(line.contains("127.0.0.5"), "{line}");
    // Another address is served meanwhile.
    let r = client_json(server.port, &["-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
}

#[test]
fn a_trickled_handshake_ends_at_the_fixed_deadline() {
    // The default deadline per handshake step is 10 s. A client that sends
    // an iperf3 cookie one byte every 2 s used to be given 15 s per byte.
    let server = Server::start();
    let mut slow = connect_from("127.0.0.6", server.port).unwrap();
    let started = Instant::now();
    let mut closed_after = None;
    for _ in 0..15 {
        if slow.write_all(b"a").is_err() {
            closed_after = Some(started.elapsed());
            break;
        }
        if closed_within(&slow, Duration::from_secs(2)) {
            closed_after = Some(started.elapsed());
            break;
        }
    }
    let after = closed_after.expect("the trickling connection was still open after 30 s");
    println!("trickled handshake closed after {after:?}");
    assert!(
        after >= Duration::from_secs(9) && after < Duration::from_secs(14),
        "closed after {after:?}; the deadline is 10 s"
    );
}

#[test]
fn an_oversized_first_frame_is_refused_at_its_length() {
    let server = Server::start();
    let (baseline, _) = rss(server.pid());
    // 200 connections from four sources (50 each, under the per-source
    // limit), each announcing a 4 MiB - 1 frame before any hello and
    // sending 256 KiB of it.
    let body = vec![b'x'; 256 * 1024];
    let mut conns = Vec::new();
    for i in 0..200 {
        let source = format!("127.0.1.{}", 1 + i / 50);
        let mut c = connect_from(&source, server.port).unwrap();
        c.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        let _ = c.write_all(b"LPC1\x00\x3f\xff\xff");
        let _ = c.write_all(&body);
        conns.push(c);
    }
    let (now, peak) = rss(server.pid());
    println!(
        "200 oversized first frames: server RSS {} MiB (baseline {} MiB, peak {} MiB)",
        now >> 20,
        baseline >> 20,
        peak >> 20
    );
    // Each connection may cost a thread and a small frame buffer (4 KiB
    // before the hello); buffering the frames would be 50 MiB.
    assert!(
        now.saturating_sub(baseline) < 32 << 20,
        "RSS grew by {} MiB",
        (now - baseline) >> 20
    );
    let closed = conns
        .iter()
        .filter(|c| closed_within(c, Duration::from_millis(500)))
        .count();
    assert_eq!(closed, 200, "oversized frames left open");
    assert!(
        logged_refusal(&server, "4096-byte limit").is_some()
            || server
                .stderr_lines()
                .iter()
                .any(|l| l.contains("4096-byte limit")),
        "{:?}",
        server.stderr_lines()
    );
    let r = client_json(server.port, &["-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
}

#[test]
fn a_large_write_size_costs_one_payload_per_test_not_per_stream() {
    let server = Server::start();
    let (baseline, _) = rss(server.pid());
    // The server sends on 16 streams with 64 MiB writes.
    let r = client_json(server.port, &["-R", "-P", "16", "-l", "64M", "-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
    let (_, peak) = rss(server.pid());
    let grew = peak.saturating_sub(baseline);
    println!(
        "-R -P 16 -l 64M: server peak RSS {} MiB over a baseline of {} MiB",
        grew >> 20,
        baseline >> 20
    );
    // One 64 MiB payload plus per-stream bookkeeping (threads, socket
    // facts): far from 16 payloads (1 GiB).
    assert!(grew < (64 << 20) + (32 << 20), "grew {} MiB", grew >> 20);
}

#[test]
fn tests_over_the_limits_are_refused_by_name() {
    let server = Server::start_with(&[
        "--server-max-streams-per-test",
        "4",
        "--server-max-tests",
        "1",
        "--server-max-test-memory",
        "16M",
        "--server-bitrate-limit",
        "50M",
    ]);
    let cases: [(&[&str], &str); 4] = [
        (
            &["-P", "5", "-b", "1M", "-t", "1"],
            "--server-max-streams-per-test",
        ),
        (
            &["-l", "32M", "-b", "1M", "-t", "1"],
            "--server-max-test-memory",
        ),
        (&["-t", "1"], "--server-bitrate-limit"),
        (&["-b", "60M", "-t", "1"], "--server-bitrate-limit"),
    ];
    for (args, flag) in cases {
        let run = client(server.port, args);
        let line = run.assert_one_line_failure(1);
        assert!(line.contains(flag), "{args:?}: {line}");
        assert!(
            logged_refusal(&server, flag).is_some(),
            "{args:?} not logged"
        );
    }
    // One test at a time: a second is refused while the first runs.
    let first = spawn_client(server.port, &["-b", "10M", "-t", "3", "-J"]);
    std::thread::sleep(Duration::from_millis(1000));
    let second = client(server.port, &["-b", "10M", "-t", "1"]);
    let line = second.assert_one_line_failure(1);
    assert!(line.contains("--server-max-tests"), "{line}");
    let done = wait_child(first, Duration::from_secs(20));
    done.assert_success("the running test");
    let r = done.json();
    let rate = f64_at(&r, "/summary/received/bits_per_second");
    assert!(rate <= 10e6 * 1.05, "paced at 10M, measured {rate}");
}

#[test]
fn a_byte_count_test_stops_at_the_longest_duration() {
    let server = Server::start_with(&["--server-max-duration", "2"]);
    let started = Instant::now();
    let run = client(server.port, &["-R", "-n", "100G", "-b", "100M", "-J"]);
    let took = started.elapsed();
    println!("-n 100G -R under --server-max-duration 2 ended after {took:?}");
    // Stopped at 2 s (checked each second), plus set-up and the exchange.
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(
        run.stderr.contains("--server-max-duration")
            || run.stdout.contains("--server-max-duration"),
        "the client was not told why: {} {}",
        run.stdout,
        run.stderr
    );
    // What was measured is kept: at most 100 Mbit/s for the test's life.
    let r = run.json();
    let received = u64_at(&r, "/summary/received/bytes");
    assert!(received > 0, "{r}");
    assert!(
        received as f64 * 8.0 <= 100e6 * took.as_secs_f64() * 1.05,
        "received {received} B in {took:?} at 100M"
    );
}
