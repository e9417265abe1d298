//! `--window-clamp` end to end: through an emulated path of round trip R, a
//! clamp W holds the receiver's advertised window within one MSS below W and
//! the throughput at that window over R, whichever end receives (the server's
//! data listener and the client's socket both set it before the handshake).
//!
//! Needs root (testbed); skipped with a message otherwise.

mod common;

use linkperf_testsupport::bed::{two_hosts, CliBed};
use linkperf_testsupport::json::f64_at;
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_linkperf")
}

/// 100 Mbit/s Ethernet framing, 10 ms each way, a queue that never drops a
/// window of these sizes.
const LINK: &str = "rate = \"100M\"\ndelay = \"10ms\"\nqueue = \"1M\"";
/// TCP payload per 1500-byte IPv4 packet with timestamps (1500 - 20 - 20 - 12).
const MSS: f64 = 1448.0;
/// Round trip: both delays and one full frame's serialisation (1538 bytes on
/// the wire at 100 Mbit/s), the ACK's own being negligible.
const RTT_S: f64 = 2.0 * 10e-3 + 1538.0 * 8.0 / 100e6;

/// cubic, not the host default (bbr here), whose pacing spreads a window over the
/// round trip: the test is about the window, not a congestion control.
fn client(bed: &CliBed, args: &[&str]) -> std::process::Output {
    bed.exec("a", bin())
        .args([
            "client",
            "10.78.0.2",
            "-i",
            "0",
            "-t",
            "3",
            "-O",
            "1",
            "-C",
            "cubic",
            "--no-store",
        ])
        .args(args)
        .output()
        .expect("run linkperf client in host a")
}

fn json(out: &std::process::Output, what: &str) -> Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client JSON")
}

#[test]
fn a_clamp_sets_the_advertised_window_and_throughput_is_window_over_rtt() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let topology = two_hosts("lpclamp", "10.78.0.1", "10.78.0.2", LINK);
        let mut bed = CliBed::up(bin(), &std::env::temp_dir(), "lpclamp", &topology);
        let mut server = bed.exec("b", bin());
        bed.serve("b", server.args(["server", "-q"]), 5211);
        for (clamp, bytes) in [("8K", 8192.0), ("32K", 32768.0), ("128K", 131072.0)] {
            for reverse in [false, true] {
                let mut args = vec!["-J", "--window-clamp", clamp];
                if reverse {
                    args.push("-R");
                }
                let what = format!("--window-clamp {clamp}{}", if reverse { " -R" } else { "" });
                let doc = json(&client(&bed, &args), &what);
                let advertised = f64_at(&doc, "/summary/tcp/snd_wnd_bytes");
                let got = f64_at(&doc, "/summary/received/bits_per_second");
                // The receiver offers whole segments: at most one MSS below the
                // clamp. Sent as one burst, a window waits up to W / C in the link's
                // queue, and the receiver acknowledges when its reader wakes: on a
                // loaded 2-core machine that adds up to ~15 % of R (measured: 1-3 ms
                // at R = 20 ms). Above W / R is impossible.
                let low = 0.85 * (bytes - MSS) * 8.0 / (RTT_S + bytes * 8.0 / 100e6);
                let high = bytes * 8.0 / RTT_S;
                eprintln!(
                    "  {what}: advertised {advertised} B, {:.2} Mbit/s; bounds {:.2}-{:.2}",
                    got / 1e6,
                    low / 1e6,
                    high / 1e6
                );
                assert!(
                    (bytes - MSS..=bytes).contains(&advertised),
                    "{what}: advertised {advertised} B, not within one MSS below {bytes}"
                );
                assert!(
                    got >= low && got <= 1.02 * high,
                    "{what}: {got} bit/s outside {low}-{high} (window over RTT)"
                );
            }
        }
        // The text output names the window the receiver really advertised.
        let out = client(&bed, &["--window-clamp", "32K"]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("window"))
            .unwrap_or_else(|| panic!("no window line in:\n{text}"));
        let advertised: f64 = line
            .split_whitespace()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no advertised bytes in '{line}'"));
        assert!((32768.0 - MSS..=32768.0).contains(&advertised), "{line}");
    });
}
