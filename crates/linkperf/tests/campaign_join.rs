//! A campaign flow that joins later (`start = "2s"`): two Reno flows through
//! one 20 Mbit/s bottleneck, the second starting 2 s into a 6 s phase, both
//! sampled every 10 ms. The phase reports Jain's fairness index from the
//! join (docs/dynamics.md), and the late flow's intervals sit on the
//! phase's clock. Needs root (namespaces, TAP devices).

mod common;

use common::campaign::*;

/// TCP payload per 1500-byte packet with timestamps, and its Ethernet frame
/// on the wire.
const MSS: f64 = 1448.0;
const ETH_WIRE: f64 = 1538.0;

/// Jain's index of two rates with shares 1 and x.
fn jain(x: f64) -> f64 {
    (1.0 + x).powi(2) / (2.0 * (1.0 + x * x))
}

#[test]
fn a_flow_joining_later_is_measured_from_its_join() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        linkperf_testsupport::require_root!("campaign tests need root for network namespaces");
        let flow = |i: usize, start: &str| {
            format!(
                "[[phase.flow]]\nfrom = \"a{i}\"\nto = \"b{i}\"\ncongestion = \"reno\"\nsample = \"10ms\"\n{start}"
            )
        };
        // 20 Mbit/s, 10 ms round trip (16 full frames in flight), 34 packets of queue.
        let (bed, file) = bed_with_campaign(
            "join",
            "cjn",
            2,
            "name = \"wan\"\nrate = \"20M\"\ndelay = \"5ms\"\nqueue_packets = 34",
            "testbed = \"cjn\"\nstart_delay = \"500ms\"\n",
            &format!(
                "[[phase]]\nname = \"join\"\nduration = \"6s\"\n{}{}",
                flow(1, ""),
                flow(2, "start = \"2s\"\n")
            ),
        );
        let (code, v, stderr) = bed.campaign("a1", &file, &[]);
        assert_eq!(code, 0, "campaign failed: {stderr}\n{v}");
        let phase = phases(&v, "join")[0];
        let flows = phase["flows"].as_array().unwrap();
        let late = &flows[1];
        assert_eq!(late["start_s"], 2.0, "{late}");
        let first = late["intervals"][0]["start"].as_f64().unwrap();
        assert_eq!(
            first, 2.0,
            "the late flow's intervals count from the phase's start"
        );
        let intervals = late["intervals"].as_array().unwrap();
        let last = intervals.last().unwrap()["end"].as_f64().unwrap();
        assert!(
            (last - 6.0).abs() < 0.2,
            "the late flow ended at {last} s of the phase"
        );

        let f = &phase["fairness"];
        let (joined, min, mean) = (
            f["joined_at_s"].as_f64().unwrap(),
            f["jain_min"].as_f64().unwrap(),
            f["jain_mean"].as_f64().unwrap(),
        );
        let from = f["above_0_9_from_s"].as_f64();
        eprintln!("  joined at {joined} s: Jain min {min:.3}, mean {mean:.3}, >= 0.9 from {from:?} s after");
        assert_eq!(joined, 2.0);
        // At the join the newcomer has sent at most its initial window (10
        // segments) in the 10 ms of the first 100 ms window, against the
        // incumbent's link rate: J no higher than for that share.
        let payload = 20e6 * MSS / ETH_WIRE;
        let newcomer = 10.0 * MSS * 8.0 / 0.1;
        let at_join = jain(newcomer / payload);
        assert!(
            min <= at_join + 1e-9,
            "Jain min {min}, at the join at most {at_join}"
        );
        // Then AIMD evens the windows: each congestion epoch (the queue
        // refilling from half of pipe and queue, 25 round trips, 0.25 s)
        // halves their difference (Chiu and Jain 1989), so a share of 1/2
        // (J = 0.9) comes within a few epochs of the newcomer's slow start.
        // Allowed: 2 s, eight epochs, of the 4 s after the join.
        let from = from.expect("the index never stayed above 0.9 after the join");
        assert!(from <= 2.0, "above 0.9 only {from} s after the join");
    });
}
