//! TCP byte accounting: `-n` is exact end to end and across streams, and the
//! per-stream results add up to the summary.

mod common;
use common::*;

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
