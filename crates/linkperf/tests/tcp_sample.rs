//! `--sample PERIOD` end to end, with real sockets: the period holds on
//! loopback (issue 16: at 10 ms, 95 % of the gaps within +-1 ms), the
//! sampled smoothed RTT through an emulated path lies between the path's
//! round trip and that plus its queue, the metrics refer to the emulated
//! link's payload rate, the receiver's per-sample bytes add up to what the
//! test received, and bad periods are refused in one line.

mod common;

use common::hostile::Control;
use common::*;
use linkperf_proto::{ClientMessage, ServerMessage, TestConfig};
use linkperf_testsupport::bed::{two_hosts, CliBed};
use linkperf_testsupport::json::{array_at, f64_at, u64_at};
use linkperf_testsupport::stall::{stalls_between, stolen_ms};
use serde_json::Value;
use std::sync::{Mutex, MutexGuard};

/// The two timing tests run one after the other: a full-speed loopback
/// stream beside the emulated path would take the CPUs both measure with.
fn timing_turn() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stream's samples on one end (`sender` or `receiver`).
fn samples<'a>(doc: &'a Value, end: &str) -> &'a Vec<Value> {
    array_at(doc, &format!("/summary/streams/0/{end}/samples"))
}

fn times(samples: &[Value]) -> Vec<f64> {
    samples.iter().map(|s| f64_at(s, "/t")).collect()
}

/// Fraction of the gaps between consecutive sample times within
/// `tolerance` of `period` (all in seconds).
fn fraction_on_time(t: &[f64], period: f64, tolerance: f64) -> f64 {
    let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let good = gaps
        .iter()
        .filter(|g| (*g - period).abs() <= tolerance)
        .count();
    good as f64 / gaps.len().max(1) as f64
}

#[test]
fn the_period_holds_on_loopback() {
    let _turn = timing_turn();
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let server = Server::start();
        let stolen_before = stolen_ms();
        let doc = client_json(server.port, &["-t", "3", "--sample", "10ms"]);
        // A tick cannot be sampled while the hypervisor runs something else instead of
        // this machine (on the CI VM under load it takes a CPU for 100 ms at a time, and
        // a sampler there then reads 291 or 292 times): those ticks are missing.
        let stolen = stolen_ms() - stolen_before;
        let fewest = 295 - (stolen / 10).min(100) as usize;
        assert_valid(&doc);
        for end in ["sender", "receiver"] {
            let t = times(samples(&doc, end));
            // 3 s at 10 ms, the first sample one period after the start; a
            // receiver goes on for the little the sender's buffer holds
            // (a few ms on loopback), and ticks missed would be fewer.
            assert!(
                (fewest..=320).contains(&t.len()),
                "{end}: {} samples over 3 s at 10 ms ({stolen} ms stolen by the hypervisor: at least {fewest})",
                t.len()
            );
            let on_time = fraction_on_time(&t, 0.010, 0.001);
            eprintln!(
                "  {end}: {} samples ({stolen} ms stolen), {:.1} % of gaps within 10 +-1 ms",
                t.len(),
                on_time * 100.0
            );
            assert!(
                on_time >= 0.95,
                "{end}: only {:.1} % of the gaps within 10 +-1 ms",
                on_time * 100.0
            );
        }
        // The sender's samples carry its tcp_info. Bytes in flight (snd_nxt - snd_una)
        // stay within the congestion window plus the segment being sent, except just
        // after the window shrank (bbr's probes, a loss's reduction: what went out under
        // the larger window is still out) or while lost and SACKed segments still count
        // as outstanding; a loaded run showed 4 segments out against a window of 2 with
        // no loss. So most samples, not every one, and no window is empty.
        let sent = samples(&doc, "sender");
        let within = sent
            .iter()
            .filter(|s| u64_at(s, "/bytes_in_flight") <= u64_at(s, "/cwnd_bytes") + 65_536)
            .count();
        eprintln!(
            "  sender: {within} of {} samples with bytes in flight <= cwnd + 64 KiB",
            sent.len()
        );
        assert!(sent.iter().all(|s| u64_at(s, "/cwnd_bytes") > 0));
        assert!(
            within as f64 >= 0.9 * sent.len() as f64,
            "{within} of {} samples with bytes in flight <= cwnd + 64 KiB",
            sent.len()
        );
        let text = client(server.port, &["-t", "1", "--sample", "20ms"]);
        text.assert_success("text output with --sample");
        let line = text
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("samples"))
            .unwrap_or_else(|| panic!("no samples line in:\n{}", text.stdout));
        assert!(line.contains("every 20 ms"), "{line}");
    });
}

/// 50 Mbit/s, 10 ms each way, a drop-tail queue of 64 KiB.
const LINK: &str = "rate = \"50M\"\ndelay = \"10ms\"\nqueue = \"64K\"";
const RATE_BPS: f64 = 50e6;
const QUEUE_BYTES: f64 = 65_536.0;
/// The path's round trip without queueing: both delays and one full frame's
/// serialisation (1538 bytes on the wire), the ACK's own negligible.
const RTT_S: f64 = 2.0 * 10e-3 + 1538.0 * 8.0 / RATE_BPS;
/// The most srtt may read: the round trip, a full queue's wait, and 1 ms for the hosts'
/// own stacks and the emulator's release lateness.
const SRTT_HIGH_S: f64 = RTT_S + QUEUE_BYTES * 8.0 / RATE_BPS + 1e-3;

/// srtt can be neither below the path's round trip nor above it plus a full queue's
/// wait in any sender sample clear of the end and of this machine's stalls. Returns the
/// samples, those checked and the stalls that were left out.
fn check_srtt_clear_of_stalls(doc: &Value) -> (usize, usize, usize) {
    // The hosts' own stack time (tens of us, docs/testbed.md) and the emulator's
    // release lateness are well inside the 1 ms allowed on top. The last samples are
    // left out: once the sender stops, delayed ACKs of the tail stretch the round trip.
    //
    // Nor are samples within half a second of a stall of this machine (the
    // hypervisor's, as the probes measured them): a stalled emulator holds every
    // packet that meets it, so the RTT samples across a stall are the stall's (a
    // loaded run read srtt 110 ms at the start of four attempts, each with a 100 ms
    // stall there), and srtt takes a few dozen round trips to forget them.
    let sent = samples(doc, "sender");
    let started = u64_at(doc, "/summary/streams/0/sender/started_unix_ns");
    // Stalls under 5 ms, half the queue's 10.5 ms of slack, cannot carry srtt out.
    let stalls: Vec<(u64, u64)> = stalls_between(started, started + 5_000_000_000)
        .into_iter()
        .filter(|(from, to)| to - from >= 5_000_000)
        .collect();
    let near_stall = |t: f64| {
        let at = started + (t * 1e9) as u64;
        stalls
            .iter()
            .any(|&(from, to)| at + 10_000_000 >= from && at <= to + 500_000_000)
    };
    let busy: Vec<&Value> = sent
        .iter()
        .filter(|s| f64_at(s, "/t") < 3.8 && !near_stall(f64_at(s, "/t")))
        .collect();
    assert!(
        busy.len() > 200,
        "{} sender samples, {} of them clear of the {} stalls",
        sent.len(),
        busy.len(),
        stalls.len()
    );
    for s in &busy {
        let srtt = f64_at(s, "/srtt_ms") / 1e3;
        assert!(
            (2.0 * 10e-3..=SRTT_HIGH_S).contains(&srtt),
            "srtt {:.2} ms outside {:.2}-{:.2} ms: {s}",
            srtt * 1e3,
            2.0 * 10e-3 * 1e3,
            SRTT_HIGH_S * 1e3
        );
    }
    (sent.len(), busy.len(), stalls.len())
}

#[test]
fn through_an_emulated_path_srtt_is_the_round_trip_plus_queueing_and_bytes_add_up() {
    let _turn = timing_turn();
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_bed_turn) = testbed_turn() else {
            return;
        };
        let topology = two_hosts("lpsample", "10.86.0.1", "10.86.0.2", LINK);
        let mut bed = CliBed::up(bin(), &std::env::temp_dir(), "lpsample", &topology);
        let mut server = bed.exec("b", bin());
        bed.serve("b", server.args(["server", "-q"]), 5211);
        let run = linkperf_in(
            &bed,
            "a",
            &[
                "client",
                "10.86.0.2",
                "-t",
                "4",
                "-i",
                "0",
                "-C",
                "cubic",
                "--sample",
                "10ms",
                "--no-store",
                "-J",
            ],
        );
        let doc = run.report();
        assert_valid(&doc);
        let (sent, checked, stalls) = check_srtt_clear_of_stalls(&doc);
        // The metrics drawn from the series (docs/dynamics.md): the loaded
        // RTT obeys the same bounds, and the idle one (the handshake's) is
        // the path's round trip, the SYN's queue empty.
        let rtt = |what: &str| f64_at(&doc, &format!("/summary/dynamics/rtt/{what}")) / 1e3;
        let (idle, loaded) = (rtt("idle_ms"), rtt("loaded_ms"));
        assert!(
            (2.0 * 10e-3..=RTT_S + 1e-3).contains(&idle),
            "idle RTT {idle}"
        );
        assert!(
            (2.0 * 10e-3..=SRTT_HIGH_S).contains(&loaded),
            "loaded RTT {loaded}"
        );
        // The client ran inside the testbed: "90 %" refers to the link's
        // payload rate, 50 Mbit/s x 1448 / 1538 (MSS over an Ethernet frame
        // of a 1500-byte packet on the wire), not to the best window.
        assert_eq!(doc["summary"]["dynamics"]["reference"], "link");
        let reference = f64_at(&doc, "/summary/dynamics/reference_bps");
        let payload = RATE_BPS * 1448.0 / 1538.0;
        assert!(
            (reference / payload - 1.0).abs() < 1e-9,
            "reference {reference} bit/s, the link's payload rate {payload}"
        );
        let received = samples(&doc, "receiver");
        let total: u64 = received.iter().map(|s| u64_at(s, "/bytes")).sum();
        let reported = u64_at(&doc, "/summary/received/bytes");
        let one_sample = RATE_BPS / 8.0 * 0.010;
        eprintln!(
            "  {} sender samples ({} checked: before 3.8 s and clear of {} stalls), srtt bound {:.2} ms; receiver samples sum {total} B, reported {reported} B",
            sent,
            checked,
            stalls,
            SRTT_HIGH_S * 1e3
        );
        assert!(
            (total as f64 - reported as f64).abs() <= one_sample,
            "receiver samples sum to {total} B, the test received {reported} B"
        );
    });
}

#[test]
fn bad_periods_are_refused_in_one_line() {
    let port = free_port();
    for (period, needle) in [("0.5ms", "at least 1 ms"), ("x", "x")] {
        let run = client(port, &["--sample", period]);
        let line = run.assert_one_line_failure(2);
        assert!(line.contains(needle), "--sample {period}: {line}");
    }
    let run = client(port, &["-t", "1", "--sample", "2s"]);
    assert!(run.assert_one_line_failure(2).contains("longer than"));
}

#[test]
fn a_server_refuses_a_bad_wire_period_by_name() {
    let mut server = Server::start();
    for period in [0.0005, 100.0] {
        let mut control = Control::open(server.port);
        control.send(&ClientMessage::Setup {
            config: Box::new(TestConfig {
                duration_s: 10.0,
                sample_s: Some(period),
                ..Default::default()
            }),
        });
        match control.next() {
            ServerMessage::Error { message } => {
                println!("sample_s {period}: refused: {message}");
                assert!(message.starts_with("--sample"), "{message}");
            }
            other => panic!("sample_s {period}: expected a refusal, got {other:?}"),
        }
        assert!(server.is_running());
    }
}
