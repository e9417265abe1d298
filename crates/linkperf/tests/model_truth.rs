//! The model against real traffic through emulated links: for each
//! configuration the expected throughput is worked here from the configured
//! link and the formulas' physics (docs/model.md), and both the measured rate
//! and the prediction the client puts in its result must match it: TCP within
//! 10 %, UDP within 2 %. The client runs inside the testbed, so it takes its
//! path from the testbed by itself (no --path given).
//!
//! Needs root (testbed); skipped with a message otherwise.

mod common;

use common::served::ServedBed;
use linkperf_testsupport::json::{f64_at, u64_at};
use serde_json::Value;

/// TCP payload per 1500-byte IPv4 packet with timestamps (1500 - 20 - 20 - 12).
const MSS: f64 = 1448.0;
/// Ethernet frame of a 1500-byte packet on the wire: + 14 + 4 + 8 + 12.
const ETH_WIRE: f64 = 1538.0;

/// A two-host testbed with `link` and a server in b; `linkperf client` in a
/// with `args` (JSON) returns its result.
struct Bed(ServedBed);

impl Bed {
    fn up(name: &str, link: &str) -> Bed {
        Bed(ServedBed::up(name, "10.79.0", link))
    }

    fn client(&self, args: &[&str]) -> Value {
        self.0.client_json(args)
    }
}

/// Checks the measured rate and the result's prediction against `expected`
/// (bit/s, worked from the link) within `tolerance`, and the binding bound.
fn check(doc: &Value, what: &str, expected: f64, binding: &str, tolerance: f64) {
    let measured = check_model(doc, what, expected, binding);
    assert!(
        (measured / expected - 1.0).abs() <= tolerance,
        "{what}: measured {measured} bit/s, expected {expected} within {tolerance}"
    );
}

/// Prints the test's figures and checks the model's binding bound and value against
/// the physics; returns the measured bit/s.
fn check_model(doc: &Value, what: &str, expected: f64, binding: &str) -> f64 {
    let measured = f64_at(doc, "/summary/received/bits_per_second");
    let predicted = f64_at(doc, "/summary/prediction/value");
    let bound = doc
        .pointer("/summary/prediction/binding")
        .and_then(Value::as_str)
        .unwrap_or("");
    eprintln!(
        "  {what}: sent {:.3} ({} packets, {} lost), measured {:.3} Mbit/s over {:.3} s, predicted {:.3} ({bound}), expected {:.3}: measured/expected {:.3}",
        f64_at(doc, "/summary/sent/bits_per_second") / 1e6,
        doc.pointer("/summary/sent/packets").cloned().unwrap_or_default(),
        doc.pointer("/summary/received/lost_packets").cloned().unwrap_or_default(),
        measured / 1e6,
        f64_at(doc, "/summary/received/seconds"),
        predicted / 1e6,
        expected / 1e6,
        measured / expected
    );
    assert_eq!(bound, binding, "{what}: binding bound");
    // The model's arithmetic is exact: its value is the physics to 0.1 %.
    assert!(
        (predicted / expected - 1.0).abs() < 1e-3,
        "{what}: predicted {predicted} but the link gives {expected}"
    );
    measured
}

/// A paced UDP test through a lossy link: the model's prediction is the offered rate
/// times `arrive` (checked by [`check_model`]), and the datagrams the receiver got of those
/// sent are `arrive` to within 4 standard deviations of a binomial draw. The share,
/// not the rate: a sender descheduled for longer than its pacer catches up (20 ms)
/// sends less than offered (a loaded run sent 4.85-4.93 of 5 Mbit/s), which the link
/// has no part in.
fn check_delivered_share(doc: &Value, what: &str, offered_bps: f64, arrive: f64) {
    check_model(doc, what, offered_bps * arrive, "offered");
    let sent = u64_at(doc, "/summary/sent/packets");
    let lost = u64_at(doc, "/summary/received/lost_packets");
    let share = (sent - lost) as f64 / sent as f64;
    let sd = (arrive * (1.0 - arrive) / sent as f64).sqrt();
    eprintln!(
        "  {what}: {} of {sent} arrived ({share:.4}), expected {arrive:.4} +- {:.4} (4 sd)",
        sent - lost,
        4.0 * sd
    );
    assert!(
        (share - arrive).abs() <= 4.0 * sd,
        "{what}: {share:.4} of the datagrams arrived, expected {arrive:.4} +- {:.4}",
        4.0 * sd
    );
}

fn tcp(bed: &Bed, seconds: &str, extra: &[&str]) -> Value {
    // cubic, not this host's default (bbr); 1 s warm-up excluded.
    let mut args = vec!["-t", seconds, "-O", "1", "-C", "cubic"];
    args.extend_from_slice(extra);
    bed.client(&args)
}

#[test]
fn link_limited_ethernet_tcp() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        // 20 Mbit/s, 5 ms each way, a queue of ~4 BDPs: the link stays busy.
        let bed = Bed::up(
            "lpmeth",
            "rate = \"20M\"\ndelay = \"5ms\"\nqueue = \"100K\"",
        );
        let doc = tcp(&bed, "4", &[]);
        check(&doc, "ethernet 20M", 20e6 * MSS / ETH_WIRE, "link", 0.10);
    });
}

#[test]
fn link_limited_atm_tcp() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let bed = Bed::up(
            "lpmatm",
            "rate = \"10M\"\ndelay = \"5ms\"\nqueue = \"100K\"\nframing = \"atm-aal5\"",
        );
        let doc = tcp(&bed, "4", &[]);
        // A 1500-byte packet + 8 LLC/SNAP + 8 AAL5 trailer = 1516 bytes: 32 cells of 53.
        let wire = (1516f64 / 48.0).ceil() * 53.0;
        check(&doc, "atm-aal5 10M", 10e6 * MSS / wire, "link", 0.10);
    });
}

#[test]
fn window_limited_tcp() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let bed = Bed::up("lpmwin", "rate = \"40M\"\ndelay = \"10ms\"\nqueue = \"1M\"");
        let doc = tcp(&bed, "4", &["--window-clamp", "32K"]);
        // 22 whole segments fit 32768 bytes; one round trip is both delays plus
        // two segments' serialisation (the receiver ACKs every second one).
        let window = (32768.0 / MSS).floor() * MSS;
        let rtt = 0.020 + 2.0 * ETH_WIRE * 8.0 / 40e6;
        check(&doc, "window 32K", window * 8.0 / rtt, "window", 0.10);
    });
}

#[test]
fn random_loss_udp() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let bed = Bed::up(
            "lpmloss",
            "rate = \"20M\"\ndelay = \"5ms\"\n[link.a_to_b]\nloss = \"2%\"",
        );
        let doc = bed.client(&["-u", "-b", "5M", "-l", "1400", "-t", "5"]);
        // 5 Mbit/s offered, 2 % lost (binomial spread over ~2200 datagrams: 0.3 %).
        check_delivered_share(&doc, "udp loss 2%", 5e6, 0.98);
    });
}

#[test]
fn bit_errors_udp() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let bed = Bed::up(
            "lpmber",
            "rate = \"20M\"\ndelay = \"5ms\"\n[link.a_to_b]\nber = 5e-6",
        );
        let doc = bed.client(&["-u", "-b", "5M", "-l", "1400", "-t", "5"]);
        // A 1400-byte payload + 8 UDP + 20 IP + 14 MAC header = 1442 bytes are hit.
        let arrive = (1.0f64 - 5e-6).powf(8.0 * 1442.0);
        check_delivered_share(&doc, "udp ber 5e-6", 5e6, arrive);
    });
}

#[test]
fn buffer_limited_tcp() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let bed = Bed::up("lpmbuf", "rate = \"40M\"\ndelay = \"10ms\"\nqueue = \"1M\"");
        let doc = tcp(&bed, "4", &["--rcvbuf", "32K"]);
        // Linux doubles the buffer (65536 bytes) and, since 6.6, offers the
        // payload/truesize share of it as window, in 256ths: a 1500-byte frame
        // from the TAP takes a 2048-byte kmalloc buffer (frame + 64 headroom +
        // 320 shared info, rounded to the size class) + 256 of sk_buff, so
        // 1448 * 256 / 2304 = 160 -> 40960 bytes -> 28 whole segments.
        // Older kernels offer the tcp_adv_win_scale share instead.
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut v = release.split(|c: char| !c.is_ascii_digit());
        let version: (u32, u32) = (
            v.next().unwrap().parse().unwrap(),
            v.next().unwrap().parse().unwrap(),
        );
        let ratio = if version >= (6, 6) {
            (MSS * 256.0 / 2304.0).floor() / 256.0
        } else {
            let scale: i32 = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_adv_win_scale")
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            if scale > 0 {
                1.0 - 0.5f64.powi(scale)
            } else {
                0.5f64.powi(-scale)
            }
        };
        let window = (65536.0 * ratio / MSS).floor() * MSS;
        let rtt = 0.020 + 2.0 * ETH_WIRE * 8.0 / 40e6;
        check(&doc, "rcvbuf 32K", window * 8.0 / rtt, "window", 0.10);
    });
}

#[test]
fn random_loss_reno_tcp() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        // 2 % random loss, 20 ms each way: about 190 packets/s, so a 12 s run
        // loses about 45 and three runs about 135 (p x packets), each loss a
        // halving; the median run is checked.
        let bed = Bed::up(
            "lpmreno",
            "rate = \"20M\"\ndelay = \"20ms\"\nqueue = \"1M\"\n[link.a_to_b]\nloss = \"2%\"",
        );
        let mut runs: Vec<Value> = (0..3)
            .map(|_| bed.client(&["-t", "13", "-O", "1", "-C", "reno"]))
            .collect();
        runs.sort_by(|x, y| {
            let rate = |d: &Value| f64_at(d, "/summary/received/bits_per_second");
            rate(x).total_cmp(&rate(y))
        });
        // The sawtooth with SACK (docs/model.md): a cycle carries 1/p = 50
        // packets, 3W²/8 while the window grows from W/2 to W and W/2 in the
        // round trip of recovery, in W/2 + 1 round trips; no timeouts.
        let p: f64 = 0.02;
        let w = (-0.5 + (0.25 + 1.5 / p).sqrt()) / 0.75;
        let rtt = 0.040 + 2.0 * ETH_WIRE * 8.0 / 20e6;
        let expected = (1.0 / p) / (w / 2.0 + 1.0) * MSS * 8.0 / rtt;
        for doc in &runs {
            eprintln!(
                "  run: {:.3} Mbit/s",
                f64_at(doc, "/summary/received/bits_per_second") / 1e6
            );
        }
        check(
            &runs[1],
            "reno 2% loss (median of 3)",
            expected,
            "loss_reno",
            0.10,
        );
    });
}
