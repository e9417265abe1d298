//! Accuracy and lifecycle tests with real traffic through the emulator. They need root
//! (namespaces, TAP devices) and are skipped with a message otherwise.
//!
//! This binary has its own small runner (harness = false) because `up` re-executes the
//! current executable as `<exe> testbed emulate --state DIR`: here that is this binary,
//! which must then behave like `linkperf` and run the emulator.

mod harness;
mod traffic;

use harness::*;
use linkperf_testbed::{down, up, Testbed, TestbedCommand, Topology};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use traffic::*;

const TESTS: &[(&str, TestFn)] = &[
    (
        "delay_rtt_matches_configured_one_way_delays",
        delay_rtt_matches_configured_one_way_delays,
    ),
    (
        "udp_above_the_rate_is_delivered_at_the_rate",
        udp_above_the_rate_is_delivered_at_the_rate,
    ),
    (
        "tcp_goodput_reaches_90_percent_of_payload_rate",
        tcp_goodput_reaches_90_percent_of_payload_rate,
    ),
    (
        "tcp_segments_are_counted_one_by_one_with_and_without_offloads",
        tcp_segments_are_counted_one_by_one_with_and_without_offloads,
    ),
    (
        "random_loss_within_binomial_interval",
        random_loss_within_binomial_interval,
    ),
    (
        "ber_loss_follows_the_length_formula",
        ber_loss_follows_the_length_formula,
    ),
    (
        "jitter_reorders_only_when_asked",
        jitter_reorders_only_when_asked,
    ),
    (
        "queue_limit_drops_a_burst_and_counts_it",
        queue_limit_drops_a_burst_and_counts_it,
    ),
    (
        "atm_framing_delivers_the_cell_tax_payload_rate",
        atm_framing_delivers_the_cell_tax_payload_rate,
    ),
    (
        "switch_shares_one_bottleneck_and_ipv6_works",
        switch_shares_one_bottleneck_and_ipv6_works,
    ),
    (
        "exec_and_status_report_the_testbed",
        exec_and_status_report_the_testbed,
    ),
    (
        "teardown_leaves_nothing_even_after_kill_9",
        teardown_leaves_nothing_even_after_kill_9,
    ),
    (
        "idle_cpus_poll_while_a_testbed_that_says_poll_is_up",
        idle_cpus_poll_while_a_testbed_that_says_poll_is_up,
    ),
];

fn main() {
    harness::main_with(TESTS);
}

fn delay_rtt_matches_configured_one_way_delays() {
    let tb = Guard::up(
        "lpt-delay",
        &pair("[link.a_to_b]\ndelay = \"5ms\"\n[link.b_to_a]\ndelay = \"3ms\""),
    );
    let server = tb.ipv4("b").unwrap();
    let echo = start_udp_echo(&tb.netns("b").unwrap(), 7000);
    let rtts = measure_udp_rtt(
        &tb.netns("a").unwrap(),
        (server, 7000).into(),
        40,
        64,
        Duration::from_millis(10),
    );
    drop(echo);
    let median = percentile(&rtts, 0.5);
    let expected = 8.0;
    let tolerance = 0.2 + 0.02 * expected;
    println!(
        "  rtt median {median:.3} ms (min {:.3}, max {:.3}), expected {expected} ± {tolerance:.2}",
        percentile(&rtts, 0.0),
        percentile(&rtts, 1.0)
    );
    assert!(
        (median - expected).abs() <= tolerance,
        "median RTT {median:.3} ms"
    );
    let c = tb.counters().unwrap();
    assert!(direction(&c, 0, "a_to_b").values.packets_forwarded >= 40);
}

/// A UDP sink on `port` in `host` that stops 300 ms after the last arrival (6 s at most).
fn sink_in(tb: &Testbed, host: &str, port: u16) -> JoinHandle<Vec<Arrival>> {
    start_udp_sink(
        &ns(tb, host),
        port,
        Duration::from_millis(300),
        Duration::from_secs(6),
    )
}

/// Wire bytes of a UDP datagram of `payload` bytes with Ethernet framing (IP + 38).
fn ethernet_wire(payload: usize) -> u64 {
    payload as u64 + 28 + 38
}

fn udp_above_the_rate_is_delivered_at_the_rate() {
    let tb = Guard::up("lpt-rate", &pair("rate = \"50M\"\ndelay = \"2ms\""));
    let to = (tb.ipv4("b").unwrap(), 9000).into();
    let sink = sink_in(&tb, "b", 9000);
    // 60 Mbit/s of 1472-byte datagrams offered for 2.5 s into a 50 Mbit/s link.
    let sent = send_udp(
        &ns(&tb, "a"),
        to,
        1472,
        (60e6 * 2.5 / (1472.0 * 8.0)) as u64,
        60e6,
        0,
    );
    let arrivals = sink.join().unwrap();
    let wire_rate = arrival_rate(&arrivals, 500..=2400, ethernet_wire);
    println!(
        "  sent {sent}, received {}, delivered {:.3} Mbit/s on the wire (configured 50)",
        arrivals.len(),
        wire_rate / 1e6
    );
    assert!(
        (wire_rate / 50e6 - 1.0).abs() <= 0.02,
        "wire rate {wire_rate}"
    );
    let c = tb.counters().unwrap();
    let ab = direction(&c, 0, "a_to_b").values;
    assert!(
        ab.dropped_queue > 0,
        "overload must overflow the queue: {ab:?}"
    );
    // The emulator forwarded every datagram that arrived (plus a few IPv6 multicast reports).
    let received = arrivals.len() as u64;
    assert!(
        ab.packets_forwarded >= received && ab.packets_forwarded <= received + 10,
        "{ab:?}"
    );
}

fn tcp_goodput_reaches_90_percent_of_payload_rate() {
    let tb = Guard::up(
        "lpt-tcp",
        &pair("rate = \"50M\"\ndelay = \"2ms\"\nqueue = \"128K\""),
    );
    let samples = tcp_bulk(
        &ns(&tb, "a"),
        &ns(&tb, "b"),
        (tb.ipv4("b").unwrap(), 9001).into(),
        Duration::from_secs(3),
    );
    let goodput = tcp_goodput(
        &samples,
        Duration::from_millis(500),
        Duration::from_millis(2900),
    );
    // MSS 1448 (timestamps on) per 1538 bytes on the wire.
    let ceiling = 50e6 * 1448.0 / 1538.0;
    println!(
        "  TCP goodput {:.2} Mbit/s = {:.1}% of the {:.2} Mbit/s payload ceiling",
        goodput / 1e6,
        100.0 * goodput / ceiling,
        ceiling / 1e6
    );
    assert!(goodput >= 0.9 * ceiling, "goodput {goodput}");
    assert!(
        goodput <= 1.01 * ceiling,
        "goodput {goodput} above the ceiling"
    );
}

/// With offloads on the emulator reads 64 KiB TCP super-packets; it must still charge, count
/// and lose them per segment: the counters show MTU-sized packets, as with offloads off, and
/// every lost segment is one counted drop that TCP repairs.
fn tcp_segments_are_counted_one_by_one_with_and_without_offloads() {
    for offload in [true, false] {
        let name = if offload { "lpt-gso-on" } else { "lpt-gso-off" };
        let tb = Guard::up(
            name,
            &format!(
                "seed = 5\n{}",
                pair(&format!(
                    "offload = {offload}\nrate = \"200M\"\ndelay = \"1ms\"\nqueue = \"256K\"\n[link.a_to_b]\nloss = \"0.2%\""
                ))
            ),
        );
        let samples = tcp_bulk(
            &ns(&tb, "a"),
            &ns(&tb, "b"),
            (tb.ipv4("b").unwrap(), 9003).into(),
            Duration::from_millis(1500),
        );
        let received = samples.last().map_or(0, |s| s.1);
        let ab = direction(&tb.counters().unwrap(), 0, "a_to_b").values;
        let mean_frame = ab.bytes_forwarded as f64 / ab.packets_forwarded as f64;
        let loss = ab.dropped_loss as f64 / ab.packets_in as f64;
        println!(
            "  offload {offload}: {:.1} MB received, {} packets forwarded, mean frame {mean_frame:.0} bytes, {} lost ({:.3}%)",
            received as f64 / 1e6,
            ab.packets_forwarded,
            ab.dropped_loss,
            loss * 100.0
        );
        // Every forwarded packet fits the 1500-byte MTU, and the payload needed that many.
        assert!(mean_frame <= 1514.0, "{ab:?}");
        assert!(
            ab.packets_forwarded as f64 >= received as f64 / 1448.0,
            "{ab:?}"
        );
        assert!(received > 10_000_000, "{received}");
        let half = binomial_99(0.002, ab.packets_in);
        assert!((loss - 0.002).abs() <= half, "loss {loss}");
    }
}

/// Half-width of the 99% normal-approximation binomial interval for n trials.
fn binomial_99(p: f64, n: u64) -> f64 {
    2.576 * (p * (1.0 - p) / n as f64).sqrt()
}

fn random_loss_within_binomial_interval() {
    let tb = Guard::up(
        "lpt-loss",
        &format!("seed = 11\n{}", pair("[link.a_to_b]\nloss = \"2%\"")),
    );
    let to = (tb.ipv4("b").unwrap(), 9002).into();
    let sink = sink_in(&tb, "b", 9002);
    let n = 20_000;
    let sent = send_udp(&ns(&tb, "a"), to, 200, n, 16e6, 0);
    let arrivals = sink.join().unwrap();
    let lost = sent - arrivals.len() as u64;
    let rate = lost as f64 / sent as f64;
    let half = binomial_99(0.02, sent);
    println!(
        "  sent {sent}, lost {lost} = {:.3}% (99% interval 2% ± {:.3}%)",
        rate * 100.0,
        half * 100.0
    );
    assert_eq!(sent, n);
    assert!((rate - 0.02).abs() <= half, "loss {rate}");
    let c = tb.counters().unwrap();
    let ab = direction(&c, 0, "a_to_b").values;
    // Every missing datagram was dropped by the loss stage (a handful of extra, non-test
    // frames such as IPv6 multicast listener reports may also have been).
    assert!(
        ab.dropped_loss >= lost && ab.dropped_loss <= lost + 5,
        "{ab:?} vs lost {lost}"
    );
    assert_eq!(direction(&c, 0, "b_to_a").values.dropped_loss, 0);
}

fn ber_loss_follows_the_length_formula() {
    let ber: f64 = 1e-5;
    let tb = Guard::up("lpt-ber", &format!("seed = 12\n{}", pair("ber = 1e-5")));
    let to = (tb.ipv4("b").unwrap(), 9003).into();
    for payload in [100usize, 1400] {
        let sink = sink_in(&tb, "b", 9003);
        let sent = send_udp(&ns(&tb, "a"), to, payload, 12_000, 60e6, 0);
        let received = sink.join().unwrap().len() as u64;
        // The frame as carried: payload + UDP 8 + IPv4 20 + Ethernet header 14.
        let bits = 8.0 * (payload + 8 + 20 + 14) as f64;
        let p = 1.0 - (1.0 - ber).powf(bits);
        let measured = (sent - received) as f64 / sent as f64;
        let half = binomial_99(p, sent);
        println!(
            "  {payload}-byte datagrams: loss {:.3}% expected {:.3}% ± {:.3}%",
            measured * 100.0,
            p * 100.0,
            half * 100.0
        );
        assert!(
            (measured - p).abs() <= half,
            "payload {payload}: {measured} vs {p}"
        );
    }
    let c = tb.counters().unwrap();
    assert!(direction(&c, 0, "a_to_b").values.dropped_ber > 100);
    assert_eq!(direction(&c, 0, "a_to_b").values.dropped_loss, 0);
}

fn jitter_reorders_only_when_asked() {
    let tb = Guard::up(
        "lpt-jitter",
        &format!(
            "seed = 13\n{}{}",
            hosts(&["a", "b", "c", "d"]),
            r#"
        [[link]]
        ends = ["a", "b"]
        delay = "5ms"
        jitter = "3ms"
        [[link]]
        ends = ["c", "d"]
        delay = "5ms"
        jitter = "3ms"
        reorder = true
        "#
        ),
    );
    for (from, to, reorder) in [("a", "b", false), ("c", "d", true)] {
        let sink = start_udp_sink::<Arrival>(
            &ns(&tb, to),
            9004,
            Duration::from_millis(300),
            Duration::from_secs(5),
        );
        let sent = send_udp(
            &ns(&tb, from),
            (tb.ipv4(to).unwrap(), 9004).into(),
            100,
            2000,
            3.2e6,
            0,
        );
        let arrivals = sink.join().unwrap();
        let inversions = arrivals.windows(2).filter(|w| w[1].seq < w[0].seq).count();
        println!(
            "  {from}->{to} reorder={reorder}: {} of {sent} arrived, {inversions} out of order",
            arrivals.len()
        );
        assert_eq!(arrivals.len() as u64, sent);
        if reorder {
            assert!(inversions > 100, "{inversions}");
        } else {
            assert_eq!(inversions, 0);
        }
    }
}

fn queue_limit_drops_a_burst_and_counts_it() {
    let tb = Guard::up("lpt-queue", &pair("rate = \"10M\"\nqueue = \"20K\""));
    let sink = start_udp_sink::<Arrival>(
        &ns(&tb, "b"),
        9005,
        Duration::from_millis(500),
        Duration::from_secs(5),
    );
    let before = tb.counters().unwrap();
    let sent = send_udp(
        &ns(&tb, "a"),
        (tb.ipv4("b").unwrap(), 9005).into(),
        1000,
        100,
        0.0,
        0,
    );
    let received = sink.join().unwrap().len() as u64;
    let after = tb.counters().unwrap();
    let (b, a) = (
        direction(&before, 0, "a_to_b").values,
        direction(&after, 0, "a_to_b").values,
    );
    let dropped = a.dropped_queue - b.dropped_queue;
    // 1042-byte frames: 19 fit in 20 KiB; one or two more may drain while the burst arrives.
    let fit = 20 * 1024 / 1042;
    println!("  burst of {sent}: {received} delivered, {dropped} dropped by the queue, high water {} bytes", a.queue_high_water_bytes);
    assert_eq!(received + dropped, sent);
    assert!((fit..=fit + 3).contains(&received), "received {received}");
    assert!(a.queue_high_water_bytes <= 20 * 1024 && a.queue_high_water_bytes >= fit * 1042);
}

fn atm_framing_delivers_the_cell_tax_payload_rate() {
    let tb = Guard::up("lpt-atm", &pair("preset = \"oc3c-atm\""));
    let to = (tb.ipv4("b").unwrap(), 9006).into();
    for payload in [9152usize, 1472] {
        let sink = sink_in(&tb, "b", 9006);
        let offered = 180e6;
        let count = (offered * 2.0 / (payload as f64 * 8.0)) as u64;
        send_udp(&ns(&tb, "a"), to, payload, count, offered, 0);
        let arrivals = sink.join().unwrap();
        let goodput = arrival_rate(&arrivals, 400..=1900, |len| len as u64);
        let cells = (payload as u64 + 28 + 16).div_ceil(48);
        let expected = 149.76e6 * payload as f64 / (cells * 53) as f64;
        println!(
            "  {payload}-byte datagrams over OC-3c: {:.2} Mbit/s payload, cell tax predicts {:.2}",
            goodput / 1e6,
            expected / 1e6
        );
        assert!(
            (goodput / expected - 1.0).abs() <= 0.02,
            "{goodput} vs {expected}"
        );
    }
}

fn switch_shares_one_bottleneck_and_ipv6_works() {
    let tb = Guard::up(
        "lpt-switch",
        &format!(
            "{}{}",
            hosts(&["h1", "h2", "h3"]),
            r#"
        [[switch]]
        name = "s1"
        [[link]]
        ends = ["h1", "s1"]
        [[link]]
        ends = ["h2", "s1"]
        [[link]]
        ends = ["s1", "h3"]
        rate = "20M"
        delay = "1ms"
        "#
        ),
    );
    let sink = sink_in(&tb, "h3", 9007);
    let to: std::net::SocketAddr = (tb.ipv4("h3").unwrap(), 9007).into();
    let count = (15e6 * 2.0 / (1472.0 * 8.0)) as u64;
    let (ns1, ns2) = (ns(&tb, "h1"), ns(&tb, "h2"));
    let s1 = std::thread::spawn(move || send_udp(&ns1, to, 1472, count, 15e6, 0));
    let s2 = std::thread::spawn(move || send_udp(&ns2, to, 1472, count, 15e6, 1 << 32));
    s1.join().unwrap();
    s2.join().unwrap();
    let arrivals = sink.join().unwrap();
    let rate = arrival_rate(&arrivals, 400..=1900, ethernet_wire);
    let from_h2 = arrivals.iter().filter(|a| a.seq >= 1 << 32).count();
    println!("  two 15 Mbit/s senders through a 20 Mbit/s port: {:.3} Mbit/s on the wire, {} / {} from h1 / h2", rate / 1e6, arrivals.len() - from_h2, from_h2);
    assert!((rate / 20e6 - 1.0).abs() <= 0.02, "{rate}");
    assert!(from_h2 > arrivals.len() / 4 && from_h2 < arrivals.len() * 3 / 4);

    // IPv6 across the switch: h1 -> h3 echo.
    let h3 = tb.ipv6("h3").unwrap();
    let echo = start_udp_echo6(&ns(&tb, "h3"), 7001);
    let rtts = measure_udp_rtt(
        &ns(&tb, "h1"),
        (h3, 7001).into(),
        5,
        64,
        Duration::from_millis(5),
    );
    drop(echo);
    println!("  IPv6 RTT h1 -> h3 {:.3} ms", percentile(&rtts, 0.5));
    assert_eq!(rtts.len(), 5);
    assert!(percentile(&rtts, 0.5) >= 1.0);
}

fn exec_and_status_report_the_testbed() {
    let tb = Guard::up("lpt-status", &pair("preset = \"wan-600km\""));
    let out = tb
        .command("a", "ip")
        .args(["-o", "addr", "show", "dev", "eth0"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("10.50.0.1/24") && text.contains("fd00:50::1/64"),
        "{text}"
    );
    let mtu = tb
        .command("b", "cat")
        .arg("/sys/class/net/eth0/mtu")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&mtu.stdout).trim(), "9180");
    let code = linkperf_testbed::run(TestbedCommand::Exec {
        testbed: Some("lpt-status".into()),
        host: "b".into(),
        command: vec!["sh".into(), "-c".into(), "exit 3".into()],
    })
    .unwrap();
    assert_eq!(code, 3, "exec passes the exit code through");
    let doc = linkperf_testbed::cli::status_document(&[Testbed::attach("lpt-status").unwrap()]);
    assert_eq!(doc["schema"], "linkperf/1");
    let t = &doc["testbeds"][0];
    assert_eq!(t["emulator_running"], true);
    assert_eq!(t["hosts"][1]["ipv4"], "10.50.0.2/24");
    assert_eq!(t["links"][0]["a_to_b"]["params"]["delay_ns"], 4_400_000);
    assert!(t["links"][0]["b_to_a"]["counters"]["packets_forwarded"].is_u64());
}

fn leftovers(name: &str) -> Vec<String> {
    let mut found: Vec<String> = linkperf_testbed::netns::list_netns()
        .into_iter()
        .filter(|n| n.starts_with(&format!("lp-{name}-")))
        .collect();
    let dir = format!("/run/linkperf/testbed/{name}");
    found.extend(
        linkperf_testbed::netns::find_processes(&["emulate", "--state", &dir])
            .iter()
            .map(|p| format!("pid {p}")),
    );
    if std::path::Path::new(&dir).exists() {
        found.push(dir);
    }
    found
}

fn teardown_leaves_nothing_even_after_kill_9() {
    let name = "lpt-teardown";
    let text = format!("{}\n[[switch]]\nname = \"sw\"\n", pair("delay = \"1ms\""));
    let topo = Topology::from_toml_str(name, &text).unwrap();
    let _ = down(name);
    let tb = up(&topo).unwrap();
    // 3 namespaces, the emulator, the state directory.
    assert_eq!(leftovers(name).len(), 5, "{:?}", leftovers(name));
    let clash = up(&topo).unwrap_err();
    println!("  second up: {clash}");
    assert_eq!(clash.exit_code(), 2);
    assert!(clash.to_string().contains("already up"));
    down(name).unwrap();
    assert!(leftovers(name).is_empty(), "{:?}", leftovers(name));
    down(name).unwrap();

    let tb2 = up(&topo).unwrap();
    let pid = tb2.emulator_pid().expect("emulator runs");
    // SAFETY: SIGKILL to the emulator we just started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while linkperf_testbed::netns::process_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !linkperf_testbed::netns::process_alive(pid),
        "emulator survived kill -9 (or is a zombie)"
    );
    // The TAP devices die with the emulator's descriptors (unregistering takes a moment).
    let tap_present = || {
        let links = tb2
            .command("a", "ip")
            .args(["-o", "link"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&links.stdout).contains("eth0")
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while tap_present() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!tap_present(), "TAP device outlived the emulator");
    down(name).unwrap();
    assert!(leftovers(name).is_empty(), "{:?}", leftovers(name));
    let _ = tb;
}

/// The kernel's CPU wake-up latency target in µs: what /dev/cpu_dma_latency reads, the
/// smallest request any process holds (2,000 s when none does).
fn cpu_latency_target_us() -> i32 {
    use std::io::Read;
    let mut value = [0u8; 4];
    std::fs::File::open("/dev/cpu_dma_latency")
        .and_then(|mut f| f.read_exact(&mut value))
        .expect("read /dev/cpu_dma_latency");
    i32::from_ne_bytes(value)
}

fn idle_cpus_poll_while_a_testbed_that_says_poll_is_up() {
    let before = cpu_latency_target_us();
    println!("  wake-up latency target before: {before} us");
    assert!(
        before > 0,
        "another process holds a zero target: {before} us"
    );
    let tb = Guard::up(
        "lpt-idle",
        &format!("cpu_idle = \"poll\"\n{}", pair("delay = \"1ms\"")),
    );
    assert_eq!(
        cpu_latency_target_us(),
        0,
        "the emulator holds a zero target"
    );
    drop(tb);
    assert_eq!(cpu_latency_target_us(), before, "down releases it");
    let tb = Guard::up("lpt-idle", &pair("delay = \"1ms\""));
    assert_eq!(
        cpu_latency_target_us(),
        before,
        "the default (cpu_idle = \"os\") leaves it"
    );
    drop(tb);
}
