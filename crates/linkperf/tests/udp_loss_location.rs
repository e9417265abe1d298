//! Issue 15's loss location: in three provoked cases the verdict names where the UDP
//! datagrams were lost, with the kernels' drop counts as its evidence: a receiving
//! socket too small for the rate (loopback), a lossy emulated link (the path), and a
//! sender whose own tbf qdisc holds two packets (the qdisc, by kind, its drop count
//! checked against `tc -s qdisc`'s and against the datagrams lost).

mod common;

use common::*;
use linkperf_testsupport::bed::two_hosts;
use serde_json::Value;

fn direction(report: &Value) -> &Value {
    &report["summary"]
}

fn counts(d: &Value) -> (u64, u64, u64, u64) {
    (
        u64_at(d, "/sent/packets"),
        u64_at(d, "/received/lost_packets"),
        u64_at(d, "/received/socket_drops"),
        u64_at(d, "/sent/queue_drops"),
    )
}

#[test]
fn a_receiving_socket_too_small_for_the_rate_is_named() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        // 1400-byte datagrams as fast as the sender can (-b 0: gigabits per second on
        // loopback) into a receive buffer of 2 x 4 KiB, three datagrams: the receiver
        // would have to read each within a microsecond or two of its arrival.
        let v = loopback_json(&["-u", "-b", "0", "-l", "1400", "--rcvbuf", "4K", "-t", "1"]);
        assert_valid(&v);
        let d = direction(&v);
        let (sent, lost, socket, queue) = counts(d);
        println!(
            "sent {sent}, lost {lost}, socket drops {socket}, queue drops {queue}: {}",
            d["verdict"]
        );
        assert!(lost > 0 && socket > 0, "the buffer overflowed");
        // Each drop event loses at least one datagram.
        assert!(socket <= lost, "{socket} drops for {lost} lost");
        assert_eq!(queue, 0, "loopback has no queue to overflow");
        // Both ends went through lo, whose root qdisc is noqueue: nothing to drop.
        assert_eq!(d["sent"]["egress"]["interface"], "lo");
        assert_eq!(d["sent"]["egress"]["qdisc"], "noqueue");
        assert_eq!(u64_at(d, "/sent/egress/qdisc_drops"), 0);
        assert_eq!(d["received"]["ingress"]["interface"], "lo");
        assert!(
            ["receiver socket buffer", "receiver CPU"]
                .contains(&d["verdict"]["limited_by"].as_str().unwrap()),
            "{}",
            d["verdict"]
        );
        assert_eq!(
            f64_at(d, "/verdict/evidence/receiver_socket_drops"),
            socket as f64
        );
    });
}

#[test]
fn loss_on_the_path_and_at_the_senders_queue_are_told_apart() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = testbed_turn() else {
            return;
        };
        let name = format!("ll{}", std::process::id() % 100_000);
        let topology = two_hosts(
            &name,
            "10.83.0.1",
            "10.83.0.2",
            "rate = \"100M\"\nloss = \"5%\"",
        );
        let mut bed = CliBed::up(bin(), &std::env::temp_dir(), &name, &topology);
        let mut server = bed.exec("b", bin());
        bed.serve("b", server.arg("server"), linkperf_proto::DEFAULT_PORT);

        the_path(&bed);
        the_senders_qdisc(&bed);
    });
}

/// A 2 s UDP test from host a to b (not stored); its report.
fn udp_from_a(bed: &CliBed, extra: &[&str]) -> Value {
    let mut args = vec!["client", "10.83.0.2", "-u", "-t", "2", "-J", "--no-store"];
    args.extend_from_slice(extra);
    linkperf_in(bed, "a", &args).report()
}

/// `linkperf testbed set --testbed NAME LINK key=value` for the bed's only link.
fn linkperf_testbed_set(bed: &CliBed, setting: &str) -> Run {
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["testbed", "set", "--testbed", bed.name(), "a-b", setting]);
    linkperf_testsupport::process::run(&mut cmd, std::time::Duration::from_secs(20))
}

/// The `dropped` count `tc -s qdisc show dev eth0` prints for host a's root tbf.
fn tbf_dropped(bed: &CliBed) -> u64 {
    let out = output_ok(
        bed.in_netns("a", "tc")
            .args(["-s", "qdisc", "show", "dev", "eth0"]),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let after = text
        .split("qdisc tbf")
        .nth(1)
        .and_then(|t| t.split("dropped ").nth(1))
        .unwrap_or_else(|| panic!("no tbf drop count in:\n{text}"));
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no tbf drop count in:\n{text}"))
}

/// 5 % random loss on the link: the path, neither end, dropped what was lost.
fn the_path(bed: &CliBed) {
    // The path: 5 % random loss, 20 Mbit/s well inside both ends and the link.
    let before = bed.counters(0, "a_to_b");
    let v = udp_from_a(bed, &["-b", "20M"]);
    let after = bed.counters(0, "a_to_b");
    let d = direction(&v);
    let (sent, lost, socket, queue) = counts(d);
    println!(
        "path: sent {sent}, lost {lost}, socket drops {socket}, queue drops {queue}: {}",
        d["verdict"]
    );
    assert_eq!((socket, queue), (0, 0), "neither end dropped");
    // Nor did either interface, nor the receiving host's backlog.
    assert_eq!(d["sent"]["egress"]["interface"], "eth0");
    assert_eq!(d["received"]["ingress"]["interface"], "eth0");
    for pointer in [
        "/sent/egress/qdisc_drops",
        "/sent/egress/tx_dropped",
        "/received/ingress/rx_dropped",
        "/received/ingress/rx_missed_errors",
        "/received/ingress/backlog_drops",
    ] {
        assert_eq!(u64_at(d, pointer), 0, "{pointer}");
    }
    // The emulator, the path, dropped every datagram lost: its own count is
    // linkperf's plus at most the control connection's frames it carried. Its
    // random loss is binomial, 5 % of the frames its queue admitted (four standard
    // deviations either side); on a stalled machine its queue may drop more, and
    // those are the path's too.
    let delta = |key: &str| after[key].as_u64().unwrap() - before[key].as_u64().unwrap();
    let emulator: u64 = [
        "dropped_queue",
        "dropped_loss",
        "dropped_ber",
        "dropped_oversize",
        "dropped_resize",
        "dropped_backlog",
        "write_errors",
    ]
    .iter()
    .map(|k| delta(k))
    .sum();
    let control = delta("packets_in") - sent;
    println!("path: the emulator dropped {emulator} ({} by random loss) of {} frames, {control} of them control frames", delta("dropped_loss"), delta("packets_in"));
    assert!(
        lost <= emulator && emulator <= lost + control,
        "linkperf lost {lost}, the emulator dropped {emulator} ({control} control frames)"
    );
    let admitted = delta("packets_in")
        - delta("dropped_queue")
        - delta("dropped_backlog")
        - delta("dropped_oversize");
    let (p, n) = (0.05, admitted as f64);
    let sigma = (n * p * (1.0 - p)).sqrt();
    assert!(
        (delta("dropped_loss") as f64 - n * p).abs() <= 4.0 * sigma,
        "{} lost at random of {admitted}",
        delta("dropped_loss")
    );
    assert_eq!(d["verdict"]["limited_by"], "path loss");
    assert!(d["verdict"]["advice"]
        .as_str()
        .unwrap()
        .contains("neither end dropped"));
}

/// A tbf on the sender's own interface: its qdisc dropped what was lost.
fn the_senders_qdisc(bed: &CliBed) {
    // The sender's own queue: a token bucket of 10 Mbit/s holding 3,000 bytes on its
    // interface, offered 40 Mbit/s. The link now loses nothing.
    output_ok(bed.in_netns("a", "tc").args([
        "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "10mbit", "burst", "5k", "limit",
        "3000",
    ]));
    let run = linkperf_testbed_set(bed, "loss=0");
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let tc_before = tbf_dropped(bed);
    let link_before = bed.counters(0, "a_to_b");
    let v = udp_from_a(bed, &["-b", "40M", "-l", "1400"]);
    let link_after = bed.counters(0, "a_to_b");
    let tc_dropped = tbf_dropped(bed) - tc_before;
    let d = direction(&v);
    assert_valid(&v);
    let (sent, lost, socket, queue) = counts(d);
    let qdisc = u64_at(d, "/sent/egress/qdisc_drops");
    let received = f64_at(d, "/received/bits_per_second");
    println!("qdisc: sent {sent}, lost {lost}, socket drops {socket}, queue drops {queue}, qdisc drops {qdisc} (tc: {tc_dropped}), received {received:.0} bit/s: {}", d["verdict"]);
    assert_eq!(d["sent"]["egress"]["qdisc"], "tbf");
    // The qdisc's own count, as tc reads it around the whole run: the control
    // connection's few packets cross the bucket too, before and after the test.
    assert!(
        qdisc <= tc_dropped && tc_dropped - qdisc <= 10,
        "linkperf read {qdisc} tbf drops, tc {tc_dropped}"
    );
    // Every datagram lost was lost before the link: the emulator took in what
    // arrived and the control connection's few frames, and dropped nothing.
    let delta = |key: &str| link_after[key].as_u64().unwrap() - link_before[key].as_u64().unwrap();
    let (arrived, onto_link) = (sent - lost, delta("packets_in"));
    assert!(
        arrived <= onto_link && onto_link <= arrived + 60,
        "{onto_link} frames onto the link for {arrived} datagrams that arrived"
    );
    assert_eq!(delta("dropped_queue") + delta("dropped_loss"), 0);
    // There the tbf was the only one to drop. It counts what it dropped in
    // packets: one datagram each, or a UDP GSO train of several that fitted its
    // burst (a sender late on its schedule, as on a busy machine, sends longer
    // trains). So its count is at most the datagrams lost and more than none.
    assert!(
        qdisc > 0 && qdisc <= lost + 10,
        "{qdisc} qdisc drops for {lost} lost"
    );
    assert!(
        queue > 0 && queue <= lost,
        "{queue} queue drops for {lost} lost"
    );
    assert_eq!(socket, 0);
    assert_eq!(d["verdict"]["limited_by"], "sender qdisc (tbf)");
    assert_eq!(
        f64_at(d, "/verdict/evidence/sender_qdisc_drops"),
        qdisc as f64
    );
    // What left the bucket is its rate: 10 Mbit/s of frames, of which 1400 of every
    // 1442 bytes (UDP 8, IP 20, Ethernet 14) are payload.
    let payload_rate = 10e6 * 1400.0 / 1442.0;
    assert!(
        (received / payload_rate - 1.0).abs() < 0.05,
        "received {received:.0} vs {payload_rate:.0}"
    );
}
