//! Exact delay (issue 12, item 4): through a link of D each way, the median RTT of 1,000
//! probes (UDP echo, and ping) is 2·D plus what the hosts themselves add, within 20 µs +
//! 0.5 % of 2·D; beside a bulk TCP flow, the rest is the queueing delay the emulator reports,
//! within 50 µs.
//!
//! What the hosts add is measured, not assumed: the same probes cross a zero-length wire (a
//! veth pair between two namespaces, no emulator), in turn with the testbed so both see the
//! same machine load. Its echoes (UDP, and ICMP answered in user space) answer each request
//! exactly 2·D after their kernel received it. Both probes time the path as ping does, from
//! just before the send to the kernel's receive timestamp of the answer, and a UDP echo
//! reports how long it kept the request after its kernel's stamp: neither end's wake-up is
//! in an RTT. (They were once: on a loaded machine a thread woken by the emulator's write
//! waited for a CPU longer than one woken over the wire, and CI measured the testbed's UDP
//! RTT 48-67 µs above the wire's while its ping, stamped in the kernel, was within 6 µs.)
//!
//! The machine may be loaded: the emulator then releases some packets late and says so
//! (item 5: packets released more than 100 µs late). The expected RTT distribution is the
//! wire's plus 2·D plus those late releases, as the emulator reported them for each direction
//! over the same window (combined by simulation from its histograms; smaller lateness counts
//! as none: there the emulator must be exact by itself); and the emulator's median lateness
//! must stay within the 20 µs.
//!
//! The delays tested (0.37 ms and 3.7 ms) were held out: the emulator was tuned at 0, 0.1, 1,
//! 10, 100 and 300 ms (`LPT_DELAYS_MS=0,0.1,1,10,100,300` runs the idle test at those
//! instead, and `LPT_PROBES` changes the probe count, to repeat the calibration). At D = 0 the
//! emulator cannot release early, so that run fails by the emulator's floor, which is how
//! docs/testbed.md measures it. Tolerances
//! add only what the measurement itself cannot resolve: ping's printed resolution and the
//! emulator histogram's bucket width.

mod harness;
mod traffic;

use harness::*;
use linkperf_testbed::state::DirectionState;
use linkperf_testbed::timing::{HistogramSnapshot, TimingSnapshot, LATE_THRESHOLD_NS};
use std::net::SocketAddr;
use std::time::Duration;
use traffic::*;

const TESTS: &[(&str, TestFn)] = &[
    (
        "rtt_is_twice_the_configured_delay_at_idle",
        rtt_is_twice_the_configured_delay_at_idle,
    ),
    (
        "rtt_beside_a_bulk_flow_is_the_delay_plus_the_reported_queueing",
        rtt_beside_a_bulk_flow_is_the_delay_plus_the_reported_queueing,
    ),
];

fn main() {
    harness::main_with(TESTS);
}

const ECHO_PORT: u16 = 7120;
/// The bound on the emulator's typical (median) lateness: the 20 µs of item 4.
const MEDIAN_LATENESS_MS: f64 = 0.020;

/// Probes per measurement (the 1,000 unless `LPT_PROBES` says otherwise).
fn probes() -> usize {
    std::env::var("LPT_PROBES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// The held-out delays, or those of `LPT_DELAYS_MS` (calibration).
fn delays_ms() -> Vec<f64> {
    match std::env::var("LPT_DELAYS_MS") {
        Ok(list) => list
            .split(',')
            .filter_map(|d| d.trim().parse().ok())
            .collect(),
        Err(_) => vec![0.37, 3.7],
    }
}

fn median(values: &[f64]) -> f64 {
    assert!(
        values.len() >= probes() * 9 / 10,
        "only {} answers",
        values.len()
    );
    percentile(values, 0.5)
}

/// ping's resolution for an RTT of `ms`: it prints 3 decimals below 1 ms, 2 below 10 ms.
fn ping_resolution_ms(ms: f64) -> f64 {
    match ms {
        m if m < 1.0 => 0.001,
        m if m < 10.0 => 0.01,
        m if m < 100.0 => 0.1,
        _ => 1.0,
    }
}

/// The median of `floor` plus `constant_ms`, one draw from each of `parts` (histograms in
/// ns) and one from each of `late` counted only above the 100 µs lateness threshold, by
/// simulation: the RTT the emulator's reports predict if its delays add to the hosts'.
fn predicted_median(
    floor: &[f64],
    constant_ms: f64,
    parts: &[&HistogramSnapshot],
    late: &[&HistogramSnapshot],
) -> f64 {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut uniform = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let draws: Vec<f64> = (0..100_000)
        .map(|_| {
            let base = floor[(uniform() * floor.len() as f64) as usize % floor.len()];
            let extra: f64 = parts
                .iter()
                .map(|h| h.sample(uniform()).unwrap_or(0) as f64 / 1e6)
                .sum();
            let lateness: f64 = late
                .iter()
                .map(|h| h.sample(uniform()).unwrap_or(0))
                .filter(|&ns| ns > LATE_THRESHOLD_NS)
                .map(|ns| ns as f64 / 1e6)
                .sum();
            base + constant_ms + extra + lateness
        })
        .collect();
    percentile(&draws, 0.5)
}

fn window<'a>(
    before: &'a [DirectionState],
    after: &'a [DirectionState],
    dir: &str,
) -> TimingSnapshot {
    let find = |list: &'a [DirectionState]| {
        &list
            .iter()
            .find(|d| d.link == 0 && d.direction == dir)
            .expect("direction timing")
            .timing
    };
    find(after).since(find(before))
}

/// One probe kind's verdict: RTTs through the testbed against the wire floor plus 2·D plus
/// what the emulator reported for the window; None if within `tolerance_ms`.
struct Check<'a> {
    label: String,
    floor: &'a [f64],
    through: &'a [f64],
    constant_ms: f64,
    ab: TimingSnapshot,
    ba: TimingSnapshot,
    /// Queueing (sampled in time) is part of the prediction (bulk flow), not only lateness.
    with_queueing: bool,
    tolerance_ms: f64,
}

impl Check<'_> {
    fn run(&self) -> Vec<String> {
        let late = [&self.ab.lateness, &self.ba.lateness];
        let parts = if self.with_queueing {
            vec![&self.ab.backlog, &self.ba.backlog]
        } else {
            Vec::new()
        };
        let predicted = predicted_median(self.floor, self.constant_ms, &parts, &late);
        let without_lateness = predicted_median(self.floor, self.constant_ms, &parts, &[]);
        let rtt = median(self.through);
        let off = rtt - predicted;
        // Both medians come from 1,000 samples: allow their 99 % uncertainty.
        let statistics = median_uncertainty(self.through).hypot(median_uncertainty(self.floor));
        let tolerance = self.tolerance_ms + statistics;
        let late_ab = self.ab.lateness.quantile(0.5).unwrap_or(0) as f64 / 1e6;
        let late_ba = self.ba.lateness.quantile(0.5).unwrap_or(0) as f64 / 1e6;
        println!(
            "  {}: RTT p50 {rtt:.4} ms, wire floor p50 {:.4} ms; predicted {predicted:.4} ms \
             ({without_lateness:.4} without the late releases): off by {:+.1} us (tolerance {:.1} \
             + {:.1} us for the medians' uncertainty); lateness p50 {:.1} / {:.1} us, over 100 us {} / {} of {} / {}; \
             write lead {:.1} / {:.1} us; arrivals stamped by the kernel {} / {}, estimated {} / {}",
            self.label,
            median(self.floor),
            off * 1e3,
            self.tolerance_ms * 1e3,
            statistics * 1e3,
            late_ab * 1e3,
            late_ba * 1e3,
            self.ab.late_over_100us,
            self.ba.late_over_100us,
            self.ab.lateness.count,
            self.ba.lateness.count,
            self.ab.delivery_lead_ns as f64 / 1e3,
            self.ba.delivery_lead_ns as f64 / 1e3,
            self.ab.stamped,
            self.ba.stamped,
            self.ab.estimated,
            self.ba.estimated
        );
        let mut failures = Vec::new();
        // Every probe crossed in each direction; their arrivals must be the kernel's stamps
        // (a frame the stamps miss is estimated: allow the odd one).
        for (dir, t) in [("a_to_b", &self.ab), ("b_to_a", &self.ba)] {
            if t.stamped < self.through.len() as u64 || t.estimated * 100 > t.stamped {
                failures.push(format!(
                    "{}: {dir} stamped {} arrivals, estimated {}, for {} probes",
                    self.label,
                    t.stamped,
                    t.estimated,
                    self.through.len()
                ));
            }
        }
        if off.abs() > tolerance {
            failures.push(format!("{}: off by {:+.1} us", self.label, off * 1e3));
        }
        if late_ab.max(late_ba) > MEDIAN_LATENESS_MS {
            failures.push(format!(
                "{}: median lateness {:.1} / {:.1} us",
                self.label,
                late_ab * 1e3,
                late_ba * 1e3
            ));
        }
        failures
    }
}

/// Ping RTTs through the wire (less the hold of its echo) and through the testbed,
/// alternating in rounds of 100, one ping every 2 ms.
fn ping_both(
    wire: &Wire,
    hold_ms: f64,
    tb_ns: &str,
    tb_to: std::net::Ipv4Addr,
) -> (Vec<f64>, Vec<f64>) {
    let (mut floor, mut through) = (Vec::new(), Vec::new());
    let interval = Duration::from_millis(2);
    for _ in 0..probes().div_ceil(100) {
        floor.extend(
            ping_rtts(&wire.ns_a, wire.addr_b, 100, interval)
                .into_iter()
                .map(|r| r - hold_ms),
        );
        through.extend(ping_rtts(tb_ns, tb_to, 100, interval));
    }
    (floor, through)
}

/// Half-width (ms) of the 99 % confidence interval of the median of `values`, from the
/// order statistics n/2 ± 1.29·√n (no assumption on the distribution).
fn median_uncertainty(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len() as f64;
    let spread = (1.288 * n.sqrt()).ceil() as usize;
    let mid = v.len() / 2;
    let (lo, hi) = (mid.saturating_sub(spread), (mid + spread).min(v.len() - 1));
    (v[hi] - v[lo]) / 2.0
}

fn rtt_is_twice_the_configured_delay_at_idle() {
    let wire = Wire::up("lpt12-wire");
    let mut failures = Vec::new();
    for delay_ms in delays_ms() {
        let hold = Duration::from_secs_f64(2.0 * delay_ms / 1e3);
        let _echo_wire = start_udp_echo_holding(&wire.ns_b, ECHO_PORT, hold);
        // Idle CPUs poll: a forwarder woken on a halted vCPU is late by tens of us.
        let tb = Guard::up(
            "lpt12-idle",
            &format!(
                "cpu_idle = \"poll\"\n{}",
                pair(&format!("delay = \"{delay_ms}ms\""))
            ),
        );
        let _echo = start_udp_echo_holding(&ns(&tb, "b"), ECHO_PORT, Duration::ZERO);
        let to: SocketAddr = (tb.ipv4("b").unwrap(), ECHO_PORT).into();
        // Issue 12's bound: 20 us + 0.5 % of 2·D.
        let tolerance = 0.020 + 0.005 * 2.0 * delay_ms;
        let before = tb.timing().unwrap();
        let rtts = udp_rtts_interleaved(
            &[
                (wire.ns_a.clone(), (wire.addr_b, ECHO_PORT).into()),
                (ns(&tb, "a"), to),
            ],
            probes(),
            64,
            Duration::from_micros(200),
            Duration::from_millis(3),
        );
        let after = tb.timing().unwrap();
        failures.extend(
            Check {
                label: format!("D = {delay_ms} ms, UDP echo"),
                floor: &rtts[0],
                through: &rtts[1],
                constant_ms: 2.0 * delay_ms,
                ab: window(&before, &after, "a_to_b"),
                ba: window(&before, &after, "b_to_a"),
                with_queueing: false,
                tolerance_ms: tolerance,
            }
            .run(),
        );
        let _ping_wire = start_icmp_echo_holding(&wire.ns_b, hold);
        let before = tb.timing().unwrap();
        let (floor, through) =
            ping_both(&wire, 2.0 * delay_ms, &ns(&tb, "a"), tb.ipv4("b").unwrap());
        let after = tb.timing().unwrap();
        failures.extend(
            Check {
                label: format!("D = {delay_ms} ms, ping"),
                floor: &floor,
                through: &through,
                constant_ms: 2.0 * delay_ms,
                ab: window(&before, &after, "a_to_b"),
                ba: window(&before, &after, "b_to_a"),
                with_queueing: false,
                // Both medians (wire and testbed) are of printed, rounded RTTs: their
                // difference is uncertain by one printed step.
                tolerance_ms: tolerance + ping_resolution_ms(median(&through)),
            }
            .run(),
        );
    }
    assert!(failures.is_empty(), "{failures:?}");
}

/// Wire time in ms of a UDP datagram of `payload` bytes on an Ethernet link of `bps`.
fn udp_wire_ms(payload: usize, bps: f64) -> f64 {
    let ip = (payload + 28).max(46) as f64;
    (ip + 38.0) * 8.0 / bps * 1e3
}

fn rtt_beside_a_bulk_flow_is_the_delay_plus_the_reported_queueing() {
    let (delay_ms, rate) = (3.7, 40e6);
    let wire = Wire::up("lpt12-wire");
    let hold = Duration::from_secs_f64(2.0 * delay_ms / 1e3);
    let _echo_wire = start_udp_echo_holding(&wire.ns_b, ECHO_PORT, hold);
    let tb = Guard::up(
        "lpt12-bulk",
        &format!(
            "cpu_idle = \"poll\"\n{}",
            pair(&format!(
                "rate = \"40M\"\ndelay = \"{delay_ms}ms\"\nqueue = \"20K\""
            ))
        ),
    );
    let _echo = start_udp_echo_holding(&ns(&tb, "b"), ECHO_PORT, Duration::ZERO);
    let (client, server) = (ns(&tb, "a"), ns(&tb, "b"));
    let bulk_to: SocketAddr = (tb.ipv4("b").unwrap(), 9120).into();
    let bulk =
        std::thread::spawn(move || tcp_bulk(&client, &server, bulk_to, Duration::from_secs(16)));
    std::thread::sleep(Duration::from_secs(2));
    let before = tb.timing().unwrap();
    let rtts = udp_rtts_interleaved(
        &[
            (wire.ns_a.clone(), (wire.addr_b, ECHO_PORT).into()),
            (ns(&tb, "a"), (tb.ipv4("b").unwrap(), ECHO_PORT).into()),
        ],
        probes(),
        64,
        Duration::from_micros(500),
        Duration::from_millis(3),
    );
    let after = tb.timing().unwrap();
    let samples = bulk.join().unwrap();
    let ab = window(&before, &after, "a_to_b");
    let ba = window(&before, &after, "b_to_a");
    // What a probe arriving at any instant waits: the queueing delay sampled in time.
    let q_ab = ab.backlog.quantile(0.5).unwrap() as f64 / 1e6;
    let q_ba = ba.backlog.quantile(0.5).unwrap_or(0) as f64 / 1e6;
    // The probe's own transmission in each direction (request and reply: 64-byte payloads).
    let transmission = 2.0 * udp_wire_ms(64, rate);
    println!(
        "  bulk TCP {:.1} MB; queueing p50 {q_ab:.4} / {q_ba:.4} ms, probe transmission {transmission:.4} ms",
        samples.last().map_or(0, |s| s.1) as f64 / 1e6
    );
    assert!(q_ab > 0.5, "the bulk flow must fill the queue: {q_ab} ms");
    let failures = Check {
        label: format!("D = {delay_ms} ms beside a bulk flow, UDP echo"),
        floor: &rtts[0],
        through: &rtts[1],
        constant_ms: 2.0 * delay_ms + transmission,
        ab,
        ba,
        with_queueing: true,
        // The histograms know a quantile within 0.4 %.
        tolerance_ms: 0.050 + 0.004 * (q_ab + q_ba),
    }
    .run();
    assert!(failures.is_empty(), "{failures:?}");
}
