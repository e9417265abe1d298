//! TCP byte accounting: `-n` is exact end to end and across streams, the
//! per-stream results add up to the summary, and the interval lines follow one
//! another in time when one end is stopped.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn bytes_mode_is_exact() {
    let r = loopback_json(&["-n", "10M"]);
    assert_eq!(r["test"]["bytes"], 10_485_760);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 10_485_760);
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), 10_485_760);
    assert!(f64_at(&r, "/summary/received/bits_per_second") > 0.0);
}

#[test]
fn bytes_split_across_streams_is_exact() {
    let total = 1_000_003u64;
    let r = loopback_json(&["-P", "3", "-n", "1000003"]);
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), total);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), total);
    let streams = array_at(&r, "/summary/streams");
    assert_eq!(streams.len(), 3);
    let mut ids: Vec<u64> = streams.iter().map(|s| u64_at(s, "/id")).collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2]);
    let (mut sent, mut received) = (0, 0);
    for s in streams {
        let id = u64_at(s, "/id");
        // 1000003 = 3 * 333334 + 1: the remainder goes to the first stream.
        let want = if id == 0 { 333_335 } else { 333_334 };
        assert_eq!(u64_at(s, "/sender/bytes"), want, "stream {id} sender");
        assert_eq!(u64_at(s, "/receiver/bytes"), want, "stream {id} receiver");
        sent += u64_at(s, "/sender/bytes");
        received += u64_at(s, "/receiver/bytes");
    }
    assert_eq!(sent, total);
    assert_eq!(received, total);
}

#[test]
fn parallel_streams_add_up_to_the_summary() {
    let r = loopback_json(&["-P", "4", "-t", "1"]);
    let streams = array_at(&r, "/summary/streams");
    assert_eq!(streams.len(), 4);
    let sent: u64 = streams.iter().map(|s| u64_at(s, "/sender/bytes")).sum();
    let received: u64 = streams.iter().map(|s| u64_at(s, "/receiver/bytes")).sum();
    assert_eq!(sent, u64_at(&r, "/summary/sent/bytes"));
    assert_eq!(received, u64_at(&r, "/summary/received/bytes"));
    for s in streams {
        assert!(u64_at(s, "/receiver/bytes") > 0, "idle stream: {s:#}");
        assert_eq!(s["sender"]["role"], "sender");
        assert_eq!(s["receiver"]["role"], "receiver");
    }
    // TCP is reliable: at the end of a timed test all that was written arrived.
    assert_eq!(sent, received);
    assert_eq!(array_at(&r, "/start/streams").len(), 4);
    // Each interval's sum is the sum of its streams.
    for i in array_at(&r, "/intervals") {
        let streams = array_at(i, "/streams");
        assert_eq!(streams.len(), 4);
        let rx: u64 = streams.iter().map(|s| u64_at(s, "/receiver/bytes")).sum();
        let tx: u64 = streams.iter().map(|s| u64_at(s, "/sender/bytes")).sum();
        assert_eq!(u64_at(i, "/sum/received_bytes"), rx);
        assert_eq!(u64_at(i, "/sum/sent_bytes"), tx);
    }
}

#[test]
fn zerocopy_moves_exact_bytes() {
    let r = loopback_json(&["--zerocopy", "-n", "5M"]);
    assert_eq!(r["test"]["zerocopy"], true);
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), 5 * 1024 * 1024);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 5 * 1024 * 1024);
}

#[test]
fn zerocopy_timed_moves_data() {
    let r = loopback_json(&["-Z", "-t", "1"]);
    let received = u64_at(&r, "/summary/received/bytes");
    assert!(received > 0);
    assert_eq!(received, u64_at(&r, "/summary/sent/bytes"));
}

#[test]
fn nodelay_with_small_writes_is_exact() {
    let r = loopback_json(&["-N", "-l", "1000", "-n", "1000000"]);
    assert_eq!(r["test"]["nodelay"], true);
    assert_eq!(r["test"]["length"], 1000);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 1_000_000);
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), 1_000_000);
}

/// The span of one end's part of an interval line.
fn part_span(line: &serde_json::Value, role: &str) -> (f64, f64) {
    let part = &line["streams"][0][role];
    (f64_at(part, "/start"), f64_at(part, "/end"))
}

/// A server the host stops for 1.15 s (across at least two 0.5 s boundaries) closes one
/// long interval when it runs again. The client's lines still follow one another in
/// time (each begins where the one before ended; each end's own intervals chain from
/// line to line), the two ends' parts of a line end within half an interval of each
/// other, and the server's long interval stands beside every client interval it
/// overlaps, joined into one part, instead of beside the next one with every later
/// line shifted by one and overlapping the one before.
#[test]
fn a_stopped_servers_late_interval_is_paired_with_the_intervals_it_covers() {
    let server = Server::start();
    let child = spawn_client(server.port, &["-b", "40M", "-i", "0.5", "-t", "4", "-J"]);
    std::thread::sleep(Duration::from_millis(1300));
    let pid = server.pid() as i32;
    // SAFETY: signals to this test's own server process.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    wait_all_threads_stopped(pid);
    std::thread::sleep(Duration::from_millis(1150));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let r = wait_child(child, CLIENT_WATCHDOG).report();
    let lines = array_at(&r, "/intervals");
    for l in lines {
        let (s, e) = (part_span(l, "sender"), part_span(l, "receiver"));
        eprintln!(
            "  line {:.3}-{:.3} s: client {:.3}-{:.3}, server {:.3}-{:.3}",
            f64_at(l, "/start"),
            f64_at(l, "/end"),
            s.0,
            s.1,
            e.0,
            e.1
        );
    }
    for pair in lines.windows(2) {
        let (ended, began) = (f64_at(&pair[0], "/end"), f64_at(&pair[1], "/start"));
        assert!(
            (began - ended).abs() < 1e-3,
            "a line ends at {ended}, the next begins at {began}"
        );
    }
    // Each end's intervals are all there, once each, in order: its parts chain.
    for role in ["sender", "receiver"] {
        assert!(part_span(&lines[0], role).0 < 0.01, "{role} from the start");
        for pair in lines.windows(2) {
            let (ended, began) = (part_span(&pair[0], role).1, part_span(&pair[1], role).0);
            assert!((began - ended).abs() < 1e-6, "{role}: {ended} then {began}");
        }
    }
    // Each line's numbers are over nearly the same time at both ends.
    for l in lines {
        let (s, r) = (part_span(l, "sender"), part_span(l, "receiver"));
        assert!(
            (s.1 - r.1).abs() <= 0.25,
            "parts end half an interval apart or more: {l}"
        );
    }
    let stopped = lines
        .iter()
        .find(|l| part_span(l, "receiver").1 - part_span(l, "receiver").0 >= 1.1)
        .expect("the server's interval across the stop");
    let (cs, ce) = part_span(stopped, "sender");
    assert!(
        ce - cs >= 1.0 - 1e-3,
        "the client's part beside the stop spans {:.3} s, not the two boundaries or more it covers",
        ce - cs
    );
}
