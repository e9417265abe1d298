//! Recovery after an injected loss (issue 16): on three paths (different
//! rate, round trip and queue), for reno and cubic, one loss event is
//! injected by a link schedule, in ns-3 (`linkperf simulate`) and through
//! the testbed (`linkperf client`); ns-3's `summary.dynamics.losses[].
//! recovery_s` must match what the congestion control's own rule gives for
//! that path (derived below), and lie within 25 % of the measured one.
//!
//! The pre-loss state is fixed: the sender's congestion window is clamped at
//! N segments (the topology's `cwnd_clamp = N` on the sending host: the route
//! metric `cwnd lock N` in its namespace, and the same clamp in its ns-3
//! twin), with N under 0.45 of the path's
//! bandwidth-delay product. So the window is N when the loss comes (no queue
//! builds, no loss of its own, and CUBIC's HyStart, which ends slow start once
//! the window's ACK train spans half a round trip, does not act before N), and
//! the acknowledged rate is N x MSS per round trip. Such a window leaves the
//! sender as a burst once per round trip (spaced at the link's rate by the
//! ACK clock); the rates are means over ten sample periods (200 ms at 20 ms),
//! a whole number of round trips on each path, so the bursts do not make them
//! jump. Each path's queue holds more than N packets, so it cannot overflow
//! even when a stalled machine (this VM stops for 100 ms now and then) bunches
//! the ACKs and the sender sends its whole window at line rate: queues of 30
//! and 60 packets against N = 64 lost packets of their own that way under
//! load (2026-11-28: a second loss event, or the one never recovered from).
//!
//! The loss: 10 % of the packets during one round trip (all N of the window
//! cross the link then; the chance that none is lost is 0.9^N, under 0.2 %),
//! over before any retransmission leaves. One congestion event results.
//! Needs ns-3 (libns3-dev, g++) and root; skipped with a message otherwise.

mod common;
use common::served::command_json as json;

use linkperf_testsupport::bed::{two_hosts, CliBed};
use linkperf_testsupport::json::{array_at, f64_at};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// TCP payload per 1500-byte IPv4 packet with timestamps (1500 - 20 - 20 - 12).
const MSS: f64 = 1448.0;
/// Ethernet frame of a 1500-byte packet on the wire: + 14 + 4 + 8 + 12.
const ETH_WIRE: f64 = 1538.0;
/// `--sample` period and the metric's window (ten periods), seconds.
const PERIOD: f64 = 0.02;
const WINDOW: f64 = 10.0 * PERIOD;
/// When the loss starts, seconds from the schedule's start.
const LOSS_AT: f64 = 1.0;
/// The same for a measured run, from when its client is started (the
/// schedule starts then): slow start must have reached the clamp first (a few
/// round trips after the client's connection is up).
const MEASURED_LOSS_AT: f64 = 1.5;
const SECONDS: f64 = 8.0;
/// A measured run: the slowest recovery (reno, 100 ms round trip) is over
/// about 4.9 s after the client's start; a second more lets a recovery that
/// a busy machine slowed be measured (and compared) rather than cut off.
const MEASURED_SECONDS: f64 = 7.0;
/// CUBIC (RFC 9438, and Linux's tcp_cubic): beta and C (segments / s^3).
const CUBIC_BETA: f64 = 0.7;
const CUBIC_C: f64 = 0.4;

struct TestPath {
    name: &'static str,
    subnet: &'static str,
    rate_bps: f64,
    /// One way; the round trip is twice this and one frame's serialisation.
    delay_ms: f64,
    queue: &'static str,
    /// The congestion window clamp, segments.
    clamp: u32,
}

impl TestPath {
    /// Round trip without queueing: both delays and one full frame on the
    /// link (the ACK's 66 bytes are negligible).
    fn rtt(&self) -> f64 {
        2.0 * self.delay_ms * 1e-3 + ETH_WIRE * 8.0 / self.rate_bps
    }
    fn bdp_segments(&self) -> f64 {
        self.rate_bps * self.rtt() / (ETH_WIRE * 8.0)
    }
    fn link(&self) -> String {
        format!(
            "name = \"l\"\nrate = \"{}M\"\ndelay = \"{}ms\"\n{}",
            self.rate_bps / 1e6,
            self.delay_ms,
            self.queue
        )
    }
    /// How many 1500-byte packets the queue holds (a byte queue: its size
    /// over 1500 bytes, with K = 1,000, the fewer).
    fn queue_packets(&self) -> f64 {
        let (key, value) = self.queue.split_once(" = ").expect("key = value");
        let value = value.trim_matches('"');
        match key {
            "queue_packets" => value.parse().expect("packets"),
            "queue" => {
                let kb: f64 = value.strip_suffix('K').expect("K bytes").parse().unwrap();
                kb * 1e3 / 1500.0
            }
            other => panic!("no queue key {other}"),
        }
    }
    /// The acknowledged rate of a window of `clamp` segments, bit/s.
    fn clamped_rate(&self) -> f64 {
        f64::from(self.clamp) * MSS * 8.0 / self.rtt()
    }
}

/// What the congestion control's rule gives for `recovery_s`, and the
/// tolerance that follows from what the rule leaves out (seconds).
///
/// The loss is seen (the retransmit count steps) at t_L. The recovery
/// episode lasts one round trip R after it, or up to two when the last
/// packet lost was sent a round trip after the first: 1.5 R +- 0.5 R. Then
/// the window grows; the acknowledged rate follows the window one round
/// trip later (what is acknowledged now was sent a round trip ago). A rate
/// rising through the target is seen by a window mean at the end of the
/// window whose middle crossed it: + W/2.
///
/// - Reno (Linux: tcp_reno_ssthresh, tcp_cong_avoid_ai): the window halves
///   to N/2 and grows one segment per round trip. Linux counts acknowledged
///   segments, not ACKs (a delayed ACK for two segments counts two), so
///   delayed ACKs do not slow it; ns-3 simulates a clamped reno with
///   `TcpLinuxReno`, which counts them too. 0.9 N is reached 0.4 N round
///   trips later: 1.5 R + R + 0.4 N R + W/2.
/// - CUBIC (RFC 9438 4.2-4.6; Linux's tcp_cubic): the window drops to
///   beta N and follows W(t) = C (t - K)^3 + W_max from the epoch's start
///   (the first ACK after the recovery), with W_max = N and
///   K = cbrt(W_max (1 - beta) / C). Linux (and RFC 9438 4.2) aims the
///   window at W(t + R), so the acknowledged rate, a round trip behind the
///   window, is W(t) itself: 0.9 N at t = K - cbrt(0.1 N / C).
///   1.5 R + K - cbrt(0.1 N / C) + W/2. Linux also keeps the window at least
///   at the Reno-friendly estimate (RFC 9438 4.3: beta N plus
///   3 (1 - beta) / (1 + beta) segments per round trip); on these paths that
///   reaches 0.9 N later than the cubic curve does (asserted), so the curve
///   alone decides.
///
/// Tolerance: the episode's +- 0.5 R; one round trip for the window's whole
/// segment steps and the ACK clock's lag; one sample period for when the
/// step is seen and one for where the window's end falls on the sample
/// grid; and the time the window takes to grow by one segment where it
/// crosses 0.9 N, for a window mean that counts one segment more or less
/// (an ACK acknowledges two segments; where the window's edges cut the ACK
/// stream decides which side counts them).
fn expected_recovery(cc: &str, p: &TestPath) -> (f64, f64) {
    let (r, n) = (p.rtt(), f64::from(p.clamp));
    let timing = 1.5 * r + 2.0 * PERIOD;
    let value = match cc {
        "reno" => (1.5 * r + r + 0.4 * n * r + WINDOW / 2.0, timing + r),
        "cubic" => {
            let k = (n * (1.0 - CUBIC_BETA) / CUBIC_C).cbrt();
            let below = (0.1 * n / CUBIC_C).cbrt();
            let cubic = k - below;
            // dW/dt = 3 C (t - K)^2, segments per second, at 0.9 N.
            let tolerance = timing + 1.0 / (3.0 * CUBIC_C * below * below);
            let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
            let friendly = (0.9 - CUBIC_BETA) * n / alpha * r;
            assert!(
                friendly > cubic + tolerance,
                "{}: the Reno-friendly window ({friendly:.2} s) would decide, not the cubic curve ({cubic:.2} s)",
                p.name
            );
            (1.5 * r + cubic + WINDOW / 2.0, tolerance)
        }
        other => panic!("no rule for {other}"),
    };
    value
}

/// The schedule file: 10 % loss on the data's direction for one round trip.
/// Named by its time and written whole (a rename), since the simulated and
/// the measured test of a path run at once and read it.
fn loss_schedule(p: &TestPath, at: f64) -> PathBuf {
    let file = std::env::temp_dir().join(format!("{}-loss-{}ms.toml", p.name, at * 1e3));
    let text = format!(
        "[[step]]\nat = \"{}ms\"\nlink = \"l.a_to_b\"\nloss = \"10%\"\n\
         [[step]]\nat = \"{}ms\"\nlink = \"l.a_to_b\"\nloss = \"0%\"\n",
        at * 1e3,
        ((at + p.rtt()) * 1e3).round()
    );
    write_whole(&file, &text);
    file
}

/// The one loss event of a result, after checking that the window was
/// clamped (it reached N and never went above) and the dynamics' reference.
fn the_loss(doc: &Value, p: &TestPath, what: &str) -> Value {
    let largest = array_at(doc, "/summary/streams/0/sender/samples")
        .iter()
        .filter_map(|s| s["cwnd_segments"].as_u64())
        .max();
    assert_eq!(
        largest,
        Some(u64::from(p.clamp)),
        "{what}: the largest congestion window against the clamp"
    );
    let d = &doc["summary"]["dynamics"];
    let payload = p.rate_bps * MSS / ETH_WIRE;
    assert_eq!(d["reference"], "link", "{what}: {d}");
    let reference = f64_at(d, "/reference_bps");
    assert!(
        (reference / payload - 1.0).abs() < 1e-6,
        "{what}: reference {reference} bit/s, the link's payload rate is {payload}"
    );
    let losses = array_at(d, "/losses");
    assert_eq!(losses.len(), 1, "{what}: one loss event expected: {d}");
    assert!(
        losses[0]["recovery_s"].is_number(),
        "{what}: no recovery before the end: {}; the sender every 100 ms: {}",
        losses[0],
        sender_series(doc)
    );
    losses[0].clone()
}

/// The sender's samples every 100 ms (five periods) as
/// `t cwnd/ssthresh srtt acked-rate`, for a failure's message.
fn sender_series(doc: &Value) -> String {
    let samples = array_at(doc, "/summary/streams/0/sender/samples");
    let field = |s: &Value, k: &str| s[k].as_f64().map_or("-".into(), |v| format!("{v:.0}"));
    samples
        .chunks(5)
        .map(|chunk| {
            let last = &chunk[chunk.len() - 1];
            let acked: f64 = chunk.iter().filter_map(|s| s["acked_bytes"].as_f64()).sum();
            format!(
                "{:.2}s {}/{} {}ms {:.2}M",
                f64_at(last, "/t"),
                field(last, "cwnd_segments"),
                field(last, "ssthresh_segments"),
                last["srtt_ms"]
                    .as_f64()
                    .map_or("-".into(), |v| format!("{v:.1}")),
                acked * 8.0 / (5.0 * PERIOD) / 1e6
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The topology of `p`: two hosts, the sender `a` with its window clamped
/// at `p.clamp` segments, and the link.
fn topology(p: &TestPath) -> String {
    let text = two_hosts(p.name, &p.subnet_host(1), &p.subnet_host(2), &p.link());
    let clamped = format!("name = \"a\"\ncwnd_clamp = {}\n", p.clamp);
    text.replacen("name = \"a\"\n", &clamped, 1)
}

/// The topology file of `p` for its ns-3 twin (the testbed's own is written
/// by `CliBed::up`, under the path's name).
fn topology_file(p: &TestPath) -> PathBuf {
    let file = std::env::temp_dir().join(format!("{}-twin.toml", p.name));
    write_whole(&file, &topology(p));
    file
}

/// Writes `text` to `file` so that a reader sees the old file or the whole
/// new one: written beside it under a name no other write uses, then renamed.
fn write_whole(file: &Path, text: &str) {
    static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = file.with_extension(format!("{}.{n}.tmp", std::process::id()));
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, file).unwrap();
}

/// ns-3's loss event for `cc` on `p` with the loss schedule (the twin takes
/// the clamp from the sending host).
fn simulate(file: &Path, p: &TestPath, cc: &str) -> Value {
    let simulated = json(
        Command::new(common::bin())
            .args(["simulate", "--testbed"])
            .arg(file)
            .arg("--schedule")
            .arg(loss_schedule(p, LOSS_AT))
            .args(["-t", &SECONDS.to_string(), "-C", cc])
            .args([
                "--sample",
                &format!("{}ms", PERIOD * 1e3),
                "-J",
                "--no-store",
            ]),
    );
    assert_eq!(simulated["source"], common::installed_ns3_source());
    the_loss(&simulated, p, &format!("{} {cc} ns-3", p.name))
}

impl TestPath {
    fn subnet_host(&self, host: u8) -> String {
        format!("{}.{host}", self.subnet)
    }
}

/// Checks one event: when it was seen (from `early` s before `loss_at`, the
/// time the schedule injects it, on a client's clock that started late) and
/// the rate before it (the clamped window's); prints the recovery beside the
/// rule and returns the recovery and the rule's (value, tolerance).
fn check_event(
    e: &Value,
    p: &TestPath,
    cc: &str,
    what: &str,
    (loss_at, early): (f64, f64),
) -> (f64, (f64, f64)) {
    let t = f64_at(e, "/t");
    assert!(
        (loss_at - early..=loss_at + 2.5 * p.rtt() + PERIOD).contains(&t),
        "{what}: the loss seen at {t} s"
    );
    // The clamped window's rate: N x MSS per round trip; a window of N
    // segments may hold one less while the receiver delays an ACK, and the
    // window's ends fall on the sample grid (+- 1 ms of sampler jitter at
    // the burst's rate): 5 %.
    let before = f64_at(e, "/before_bps");
    let clamped = p.clamped_rate();
    assert!(
        (before / clamped - 1.0).abs() <= 0.05,
        "{what}: {before} bit/s before the loss, the clamped window gives {clamped}"
    );
    let recovery = f64_at(e, "/recovery_s");
    let (expected, tolerance) = expected_recovery(cc, p);
    eprintln!(
        "  {what}: loss seen at {t:.3} s, before {:.2} Mbit/s (window {:.2}), recovery {recovery:.3} s, rule {expected:.3} +- {tolerance:.3} s",
        before / 1e6,
        clamped / 1e6
    );
    (recovery, (expected, tolerance))
}

/// ns-3's event for `cc` on `p`, checked against the rule.
fn check_simulated_event(s: &Value, p: &TestPath, cc: &str) -> f64 {
    let what = format!("{} {cc} ns-3", p.name);
    let (recovery, (expected, tolerance)) = check_event(s, p, cc, &what, (LOSS_AT, 0.0));
    assert!(
        (recovery - expected).abs() <= tolerance,
        "{what}: recovery {recovery} s, the rule gives {expected} +- {tolerance} s"
    );
    recovery
}

/// The clamp below half the BDP and within the queue, and the window a
/// whole number of round trips.
fn check_path(p: &TestPath) {
    assert!(
        p.queue_packets() > f64::from(p.clamp),
        "{}: a queue of {} packets cannot take a window of {} sent at once",
        p.name,
        p.queue_packets(),
        p.clamp
    );
    let bdp = p.bdp_segments();
    assert!(
        f64::from(p.clamp) < 0.45 * bdp,
        "{}: clamp {} against a BDP of {bdp:.0} segments",
        p.name,
        p.clamp
    );
    let periods = WINDOW / p.rtt();
    assert!(
        (periods - periods.round()).abs() < 0.01,
        "{}: the window is not a whole number of round trips",
        p.name
    );
}

/// ns-3 against the rule (deterministic: no testbed, no stall probes).
fn check_simulated(p: &TestPath) {
    if !common::ns3_installed() {
        return;
    }
    check_path(p);
    let file = topology_file(p);
    for cc in ["reno", "cubic"] {
        check_simulated_event(&simulate(&file, p, cc), p, cc);
    }
}

/// The measured loss event for `cc` through `p`'s testbed: the client
/// started, and the loss schedule [`MEASURED_LOSS_AT`] later (so a client
/// slow to start on a busy machine still has its window at the clamp).
fn measure(bed: &CliBed, p: &TestPath, cc: &str) -> Value {
    let bin = common::bin();
    let client = bed
        .exec("a", bin)
        .args(["client", &p.subnet_host(2), "-p", "5241", "-i", "0", "-J"])
        .args(["--no-store", "-t", &MEASURED_SECONDS.to_string(), "-C", cc])
        .args(["--sample", &format!("{}ms", PERIOD * 1e3)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start linkperf client");
    std::thread::sleep(std::time::Duration::from_secs_f64(MEASURED_LOSS_AT));
    linkperf_testsupport::process::output_ok(
        Command::new(bin)
            .args(["testbed", "set", "--testbed", bed.name(), "--schedule"])
            .arg(loss_schedule(p, 0.0)),
    );
    let out = client.wait_with_output().expect("wait for linkperf client");
    assert!(out.status.success(), "client: {out:?}");
    let measured: Value = serde_json::from_slice(&out.stdout).expect("client JSON");
    let what = format!("{} {cc} measured", p.name);
    check_loss_landed(bed, p, &what);
    the_loss(&measured, p, &what)
}

/// The loss schedule's two steps landed on time: the loss lasted the one
/// round trip this test injects, not into the retransmissions that leave a
/// round trip and RACK's reordering window (a quarter of it) after the first
/// loss. A tenth of a round trip late is allowed (the emulator lands a step
/// within tens of microseconds; a stalled machine, 100 ms late, is not).
fn check_loss_landed(bed: &CliBed, p: &TestPath, what: &str) {
    let status =
        json(Command::new(common::bin()).args(["testbed", "status", bed.name(), "--json"]));
    let schedule = &status["testbeds"][0]["schedule"];
    let late_ms = f64_at(schedule, "/worst_late_us") / 1e3;
    eprintln!("  {what}: the loss schedule's steps landed at most {late_ms:.3} ms late");
    assert!(
        late_ms <= 0.1 * p.rtt() * 1e3,
        "{what}: the loss schedule's steps landed up to {late_ms:.1} ms late (round trip {:.1} ms), \
         so the loss was not the one round trip injected: {schedule}",
        p.rtt() * 1e3
    );
}

/// Measured through the testbed against ns-3 (itself checked against the
/// rule), the 25 %. The measured recovery is printed beside the rule
/// but not held to its tolerance: Linux's reno came 0.1-0.25 s (one to two
/// and a half round trips) after it on every path (2026-11-27: 2.32 against
/// 2.225 +- 0.165 s, 2.12 against 1.973 +- 0.207, 3.06-3.16 against
/// 2.910 +- 0.290), more than the rule's terms explain (RACK's reordering
/// window, a quarter of the minimum RTT, is one Linux adds and ns-3 lacks).
fn check_measured(p: &TestPath) {
    if !common::ns3_installed() {
        return;
    }
    check_path(p);
    let file = topology_file(p);
    let simulated: Vec<Value> = ["reno", "cubic"]
        .iter()
        .map(|cc| simulate(&file, p, cc))
        .collect();
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_turn) = common::testbed_turn() else {
            return;
        };
        let bin = common::bin();
        // `up` puts the clamp on a's routes and primes its tcp_metrics.
        let mut bed = CliBed::up(bin, &std::env::temp_dir(), p.name, &topology(p));
        let mut server = bed.exec("b", bin);
        bed.serve("b", server.args(["server", "-q", "-p", "5241"]), 5241);
        for (cc, simulated) in ["reno", "cubic"].iter().zip(&simulated) {
            let measured = measure(&bed, p, cc);
            // The client's clock starts when its connection is up, 0.4-0.5 s
            // after it was started on a quiet machine: the loss comes that much
            // before MEASURED_LOSS_AT on it.
            let what = format!("{} {cc} measured", p.name);
            let (m, _) = check_event(&measured, p, cc, &what, (MEASURED_LOSS_AT, 1.2));
            let s = check_simulated_event(simulated, p, cc);
            eprintln!("  {} {cc}: ns-3 / measured recovery {:.3}", p.name, s / m);
            assert!(
                (s / m - 1.0).abs() <= 0.25,
                "{} {cc}: ns-3 recovery {s} s against measured {m} s",
                p.name
            );
        }
    });
}

const P1: TestPath = TestPath {
    name: "lprec1",
    subnet: "10.91.0",
    rate_bps: 60e6,
    delay_ms: 24.9,
    queue: "queue = \"200K\"",
    clamp: 100,
};
const P2: TestPath = TestPath {
    name: "lprec2",
    subnet: "10.92.0",
    rate_bps: 30e6,
    delay_ms: 33.13,
    queue: "queue_packets = 80",
    clamp: 64,
};
const P3: TestPath = TestPath {
    name: "lprec3",
    subnet: "10.93.0",
    rate_bps: 20e6,
    delay_ms: 49.69,
    queue: "queue_packets = 70",
    clamp: 64,
};

#[test]
fn simulated_recovery_follows_reno_and_cubic_on_three_paths() {
    for p in [&P1, &P2, &P3] {
        check_simulated(p);
    }
}

#[test]
fn sixty_megabits_fifty_ms_byte_queue_measured() {
    check_measured(&P1);
}

#[test]
fn thirty_megabits_two_thirds_of_100_ms_measured() {
    check_measured(&P2);
}

#[test]
fn twenty_megabits_100_ms_small_queue_measured() {
    check_measured(&P3);
}
