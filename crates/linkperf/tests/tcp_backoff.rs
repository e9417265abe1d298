//! A TCP stream whose data packets are nearly all lost for 12 s stays a
//! test: the sender's retransmission timer backs off (about 0.2, 0.4, 0.8,
//! 1.6, 3.2, 6.4 s), so the receiver hears nothing for over 10 s on a
//! connection that is alive, as on a very lossy path (seed 000's radio link
//! at a bit error rate of 5e-6 loses a third of its 9180-byte packets, and a
//! run there once failed with "no data for 10 s: sender gone?"). The
//! receiver must not call the sender gone; TCP delivers every byte once the
//! path is back. Bit errors, not a loss rate, so that the small packets of
//! the control connection mostly pass: at 5e-5 a 9000-byte data packet is
//! lost with 1 - e^-3.6 = 97 %, a 150-byte control packet with 6 %.
//! Needs root (testbed); skipped with a message otherwise.

mod common;
use common::served::command_json as json;

use linkperf_testsupport::bed::{two_hosts, CliBed};
use linkperf_testsupport::json::{f64_at, u64_at};
use std::process::Command;
use std::time::{Duration, Instant};

/// When the bit errors start, after the client is started, and how long they last.
const ERRORS_AFTER: Duration = Duration::from_secs(1);
const ERRORS_S: f64 = 12.0;

#[test]
fn a_sender_in_retransmission_backoff_is_not_gone() {
    let Some(_turn) = common::testbed_turn() else {
        return;
    };
    let bin = common::bin();
    let dir = std::env::temp_dir();
    let link = "name = \"l\"\nrate = \"20M\"\ndelay = \"5ms\"\nmtu = 9000";
    let topology = two_hosts("lpsil", "10.94.0.1", "10.94.0.2", link);
    let mut bed = CliBed::up(bin, &dir, "lpsil", &topology);
    let mut server = bed.exec("b", bin);
    bed.serve("b", server.args(["server", "-q", "-p", "5243"]), 5243);
    let schedule = dir.join(format!("lpsil-{}.toml", std::process::id()));
    std::fs::write(
        &schedule,
        format!(
            "[[step]]\nat = \"0s\"\nlink = \"l.a_to_b\"\nber = 5e-5\n\
             [[step]]\nat = \"{ERRORS_S}s\"\nlink = \"l.a_to_b\"\nber = 0\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let client = bed
        .exec("a", bin)
        .args(["client", "10.94.0.2", "-p", "5243", "-t", "3", "-i", "0"])
        .args(["-C", "reno", "-J", "--no-store"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start linkperf client");
    std::thread::sleep(ERRORS_AFTER);
    linkperf_testsupport::process::output_ok(
        Command::new(bin)
            .args(["testbed", "set", "--testbed", "lpsil", "--schedule"])
            .arg(&schedule),
    );
    let out = client.wait_with_output().expect("wait for linkperf client");
    let wall = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&schedule);
    let status = json(Command::new(bin).args(["testbed", "status", "lpsil", "--json"]));
    let lost = u64_at(&status, "/testbeds/0/links/0/a_to_b/counters/dropped_ber");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("  wall {wall:.1} s, {lost} packets lost to bit errors");
    assert!(out.status.success(), "client failed: {stdout}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("client JSON");
    assert!(
        doc["errors"].as_array().is_none_or(|e| e.is_empty()),
        "{doc}"
    );
    // The errors happened: the link dropped the retransmissions sent into them.
    assert!(
        lost >= 4,
        "{lost} packets lost: the sender did not back off"
    );
    // Everything written arrived: TCP's own retransmission, nothing given up.
    let sent = f64_at(&doc, "/summary/sent/bytes");
    let received = f64_at(&doc, "/summary/received/bytes");
    assert!(
        sent > 0.0 && received == sent,
        "sent {sent}, received {received}"
    );
}
