//! ns-3 beside measurement: for three emulated paths (different rate, round
//! trip and queue) and for reno and cubic, `linkperf client` measures through
//! the testbed and `linkperf simulate` runs the same topology file in ns-3;
//! the simulated throughput must lie within 15 % of the measured (issue 16),
//! and neither may exceed the link's payload rate (rate x MSS / Ethernet
//! frame on the wire).
//!
//! Needs root (testbed) and ns-3 (libns3-dev, g++); skipped with a message
//! otherwise.

mod common;
use common::served::{command_json as json, ServedBed};

use linkperf_testsupport::json::f64_at;
use serde_json::Value;
use std::process::Command;

/// TCP payload per 1500-byte IPv4 packet with timestamps (1500 - 20 - 20 - 12).
const MSS: f64 = 1448.0;
/// Ethernet frame of a 1500-byte packet on the wire: + 14 + 4 + 8 + 12.
const ETH_WIRE: f64 = 1538.0;
const SECONDS: &str = "8";

/// Measures with `cc` through a two-host testbed with `link`, then simulates
/// the same file; returns (measured, simulated) bit/s.
fn measure_and_simulate(name: &str, link: &str, cc: &str) -> (f64, f64) {
    let bed = ServedBed::up(name, "10.78.0", link);
    let measured = bed.client_json(&["-t", SECONDS, "-C", cc]);
    let file = std::env::temp_dir().join(format!("{name}.toml"));
    let simulated = json(
        Command::new(common::bin())
            .args(["simulate", "--testbed"])
            .arg(&file)
            .args(["-t", SECONDS, "-C", cc, "-J", "--no-store"]),
    );
    assert_eq!(simulated["source"], common::installed_ns3_source());
    let rate = |d: &Value| f64_at(d, "/summary/received/bits_per_second");
    (rate(&measured), rate(&simulated))
}

fn check(name: &str, link: &str, rate_bps: f64) {
    if !common::ns3_installed() {
        return;
    }
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let ceiling = rate_bps * MSS / ETH_WIRE;
        for cc in ["reno", "cubic"] {
            let (measured, simulated) = measure_and_simulate(name, link, cc);
            let ratio = simulated / measured;
            eprintln!(
                "  {name} {cc}: measured {:.2} Mbit/s, ns-3 {:.2} Mbit/s, simulated/measured {ratio:.3}, link payload rate {:.2}",
                measured / 1e6,
                simulated / 1e6,
                ceiling / 1e6
            );
            assert!(
                simulated <= ceiling * 1.01 && measured <= ceiling * 1.01,
                "{name} {cc}: above the link's payload rate {ceiling}"
            );
            assert!(
                (ratio - 1.0).abs() <= 0.15,
                "{name} {cc}: ns-3 {simulated} bit/s against measured {measured} bit/s"
            );
        }
    });
}

#[test]
fn short_path_small_queue() {
    // 20 Mbit/s, 10 ms round trip, 30 packets (about 2.5 BDPs).
    check(
        "lpsim1",
        "rate = \"20M\"\ndelay = \"5ms\"\nqueue_packets = 30",
        20e6,
    );
}

#[test]
fn medium_path_bdp_queue() {
    // 50 Mbit/s, 30 ms round trip, 125 packets (one BDP).
    check(
        "lpsim2",
        "rate = \"50M\"\ndelay = \"15ms\"\nqueue_packets = 125",
        50e6,
    );
}

#[test]
fn long_path_byte_queue() {
    // 80 Mbit/s, 60 ms round trip, a 300 KiB queue (half a BDP).
    check(
        "lpsim3",
        "rate = \"80M\"\ndelay = \"30ms\"\nqueue = \"300K\"",
        80e6,
    );
}
