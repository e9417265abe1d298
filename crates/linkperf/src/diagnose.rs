//! Why the numbers are what they are: the limiting factor of one direction,
//! and what to change. Pure function of the measurements.

use crate::report::{DirectionSummary, Sides, Verdict};
use linkperf_proto::results::{CpuUsage, Limited};
use linkperf_proto::{Direction, Protocol, TestConfig};
use linkperf_units::format_rate;

fn verdict(limited_by: &str, explanation: String, advice: Option<String>) -> Verdict {
    Verdict {
        limited_by: limited_by.into(),
        explanation,
        advice,
        evidence: Default::default(),
    }
}

/// A thread that ran at least this share of the wall time had no slack left:
/// the rest goes to scheduling delays, interrupts and the accounting's
/// granularity, so more work could not have fitted on its core. Below it the
/// thread spent real time waiting (for the network, the peer, a timer) and
/// its CPU did not set the rate.
pub const CPU_SATURATED: f64 = 90.0;

/// How busy one end's CPU was for one direction, as a percentage to compare
/// with [`CPU_SATURATED`], and what it is a percentage of.
struct Busy {
    percent: f64,
    of: &'static str,
}

impl Busy {
    fn saturated(&self) -> bool {
        self.percent >= CPU_SATURATED
    }

    fn describe(&self, end: &str) -> String {
        format!("the {end} used {:.0}% {}", self.percent, self.of)
    }
}

/// One end's busiest stream thread of this direction, or all its threads
/// against all the host's cores if that is higher. Peers that report only a
/// process figure (iperf3, older linkperf) are judged by their CPU per stream.
fn busy(end: &CpuUsage, threads: impl Iterator<Item = Option<f64>>, streams: u32) -> Busy {
    let busiest = threads.flatten().reduce(f64::max);
    let all_cores = end.total_percent / f64::from(end.cpus.max(1));
    match busiest {
        Some(b) if all_cores > b => Busy {
            percent: all_cores,
            of: "of every core of its host",
        },
        Some(b) => Busy {
            percent: b,
            of: "of a core in its busiest stream thread",
        },
        None => Busy {
            percent: end.total_percent / f64::from(streams.max(1)),
            of: "of a core per stream",
        },
    }
}

/// The summary of each direction the test ran (the return direction only
/// for a bidir test), each with its verdict from both ends' results.
pub fn summaries(sides: &Sides) -> (DirectionSummary, Option<DirectionSummary>) {
    let explained = |client_sends: bool| {
        let mut summary = sides.summarise(client_sends);
        let (sender_cpu, receiver_cpu) = sides.cpus(client_sends);
        summary.verdict = diagnose(sides.config, &summary, sender_cpu, receiver_cpu);
        summary
    };
    let direction = sides.config.direction;
    (
        explained(direction != Direction::Reverse),
        (direction == Direction::Bidir).then(|| explained(false)),
    )
}

pub fn diagnose(
    config: &TestConfig,
    s: &DirectionSummary,
    sender_cpu: &CpuUsage,
    receiver_cpu: &CpuUsage,
) -> Verdict {
    let sender = busy(
        sender_cpu,
        s.streams.iter().map(|st| st.sender.thread_cpu_percent),
        config.parallel,
    );
    let receiver = busy(
        receiver_cpu,
        s.streams
            .iter()
            .map(|st| st.receiver.as_ref().and_then(|r| r.thread_cpu_percent)),
        config.parallel,
    );
    if config.protocol == Protocol::Udp {
        return udp_sender_short(config, s, &sender)
            .or_else(|| udp_loss(s, &receiver))
            .unwrap_or_else(|| rate_limit(s));
    }
    let Some(limited) = s.tcp.as_ref().and_then(|t| t.limited) else {
        return verdict(
            "unknown",
            "this kernel does not report tcp_info limits (busy_time)".into(),
            None,
        );
    };
    receiver_window(s, &limited)
        .or_else(|| send_buffer(&limited))
        .or_else(|| application(config, &limited, &sender))
        .or_else(|| cpu(&sender, &receiver))
        .unwrap_or_else(|| network(s, &limited))
}

/// UDP: the sender did not reach the rate asked (-b).
fn udp_sender_short(config: &TestConfig, s: &DirectionSummary, sender: &Busy) -> Option<Verdict> {
    let target = config.stream_rate()? as f64 * f64::from(config.parallel);
    let short = s.sent.bits_per_second < 0.95 * target;
    if !short {
        return None;
    }
    Some(verdict(
        "sender",
        format!(
            "the sender reached {} of the {} asked",
            format_rate(s.sent.bits_per_second),
            format_rate(target)
        ),
        Some(if sender.saturated() {
            format!(
                "{}: use -P to spread streams over cores",
                sender.describe("sender")
            )
        } else {
            "check the sender's NIC and txqueuelen; try larger datagrams (-l)".into()
        }),
    ))
}

/// Where the lost datagrams went, from the kernels' own counts: the receiving
/// sockets' buffer overflows, the sending host's interface queue, else the path.
/// The kernel counts drop events, not datagrams: a GSO train of a few dozen
/// datagrams (the sender's trains, and loopback delivers them whole) is one event
/// (measured on loopback: 1,865 socket drops, exactly the host's RcvbufErrors,
/// for 46,502 datagrams lost). So the counts name the place, not the share: the
/// end that counted drops (the larger count if both did), else the path when both
/// ends counted none.
enum LossAt {
    ReceiverSocket,
    SenderQueue,
    Path,
    /// A count is missing (a peer that does not report it): not said.
    Unknown,
}

fn loss_location(s: &DirectionSummary) -> LossAt {
    match (s.received.socket_drops, s.sent.queue_drops) {
        (Some(d), q) if d > 0 && d >= q.unwrap_or(0) => LossAt::ReceiverSocket,
        (_, Some(q)) if q > 0 => LossAt::SenderQueue,
        (Some(0), Some(0)) => LossAt::Path,
        _ => LossAt::Unknown,
    }
}

/// UDP: more than 1% of the datagrams were lost: where, and by a busy receiver?
fn udp_loss(s: &DirectionSummary, receiver: &Busy) -> Option<Verdict> {
    let loss = s.received.loss_percent.unwrap_or(0.0);
    if loss <= 1.0 {
        return None;
    }
    let lost = s.received.lost_packets.unwrap_or(0);
    let (socket, queue) = (s.received.socket_drops, s.sent.queue_drops);
    let counted = |n: Option<u64>| n.map_or("not reported".to_string(), |n| n.to_string());
    let mut v = verdict(
        "loss",
        format!(
            "{loss:.2}% of datagrams were lost ({lost}): sent {} but received {}; drops counted by the receiving socket {}, by the sender's interface queue {} (a dropped GSO train counts once)",
            format_rate(s.sent.bits_per_second),
            format_rate(s.received.bits_per_second),
            counted(socket),
            counted(queue),
        ),
        None,
    );
    let busy = receiver.saturated();
    match loss_location(s) {
        LossAt::ReceiverSocket => {
            v.limited_by = if busy {
                "receiver CPU"
            } else {
                "receiver socket buffer"
            }
            .into();
            v.advice = Some(format!(
                "the receiver did not read fast enough ({}): raise --rcvbuf (and net.core.rmem_max), or send less (-b)",
                receiver.describe("receiver")
            ));
        }
        LossAt::SenderQueue => {
            v.limited_by = "sender queue".into();
            v.advice = Some("the sending host's qdisc or interface queue overflowed: pace below the interface's rate (-b), or raise its txqueuelen / qdisc limit".into());
        }
        LossAt::Path => {
            v.advice = Some("neither end dropped them: the path or a device on it drops at this rate; lower -b to find the loss-free rate".into());
        }
        LossAt::Unknown if busy => {
            v.limited_by = "receiver CPU".into();
            v.advice = Some(format!(
                "{}: it cannot keep up; raise --rcvbuf / net.core.rmem_max, or send less (-b)",
                receiver.describe("receiver")
            ));
        }
        LossAt::Unknown => {
            v.advice = Some("the path or a device on it drops at this rate: lower -b to find the loss-free rate".into());
        }
    }
    v.evidence.insert("lost_packets".into(), lost as f64);
    v.evidence.insert("loss_percent".into(), loss);
    v.evidence
        .insert("receiver_busy_percent".into(), receiver.percent);
    if let Some(d) = socket {
        v.evidence.insert("receiver_socket_drops".into(), d as f64);
    }
    if let Some(q) = queue {
        v.evidence.insert("sender_queue_drops".into(), q as f64);
    }
    Some(v)
}

/// UDP: everything offered arrived, so the offered rate was the limit.
fn rate_limit(s: &DirectionSummary) -> Verdict {
    let loss = s.received.loss_percent.unwrap_or(0.0);
    verdict(
        "rate limit",
        format!(
            "delivered what was offered ({}) with {loss:.2}% loss",
            format_rate(s.received.bits_per_second)
        ),
        None,
    )
}

/// TCP: the sender waited for the receiver's advertised window.
fn receiver_window(s: &DirectionSummary, limited: &Limited) -> Option<Verdict> {
    let waited = limited.rwnd > 0.3;
    if !waited {
        return None;
    }
    let rtt = s.tcp.as_ref().and_then(|t| t.rtt_ms.mean).unwrap_or(0.0);
    let bdp = s.received.bits_per_second / 8.0 * rtt / 1000.0;
    Some(verdict(
        "receiver window",
        format!("the sender waited for the receiver's window {:.0}% of the time", limited.rwnd * 100.0),
        Some(format!(
            "raise the receiver's buffer (-w or --rcvbuf, net.core.rmem_max, net.ipv4.tcp_rmem); at {rtt:.2} ms RTT this rate needs only {bdp:.0} bytes in flight, so the path can carry more with a larger window"
        )),
    ))
}

/// TCP: the sender's socket buffer was full.
fn send_buffer(limited: &Limited) -> Option<Verdict> {
    let full = limited.sndbuf > 0.3;
    if !full {
        return None;
    }
    Some(verdict(
        "send buffer",
        format!(
            "the sender's socket buffer was full {:.0}% of the time",
            limited.sndbuf * 100.0
        ),
        Some(
            "raise the sender's buffer (-w or --sndbuf, net.core.wmem_max, net.ipv4.tcp_wmem)"
                .into(),
        ),
    ))
}

/// TCP: the sender had no data ready, because its CPU ran out or it was
/// paced or slow.
fn application(config: &TestConfig, limited: &Limited, sender: &Busy) -> Option<Verdict> {
    let idle = limited.app > 0.3;
    if !idle {
        return None;
    }
    if sender.saturated() {
        return Some(verdict(
            "sender CPU",
            format!(
                "the sender had no data ready {:.0}% of the time and {}",
                limited.app * 100.0,
                sender.describe("sender")
            ),
            Some("use larger writes (-l), --zerocopy, or -P to use more cores".into()),
        ));
    }
    Some(verdict(
        "application",
        format!(
            "the sender had no data ready {:.0}% of the time (rate limit or slow writer)",
            limited.app * 100.0
        ),
        config
            .stream_rate()
            .is_none()
            .then(|| "check the sender's CPU and -l".into()),
    ))
}

/// TCP: one end's stream thread ran out of CPU (the receiver checked first).
fn cpu(sender: &Busy, receiver: &Busy) -> Option<Verdict> {
    if receiver.saturated() {
        return Some(verdict(
            "receiver CPU",
            receiver.describe("receiver"),
            Some("use -P to spread the load, or larger reads (-l)".into()),
        ));
    }
    if sender.saturated() {
        return Some(verdict(
            "sender CPU",
            sender.describe("sender"),
            Some("use --zerocopy, larger writes (-l), or -P".into()),
        ));
    }
    None
}

/// TCP: none of the above, so the congestion window (the link) set the rate.
fn network(s: &DirectionSummary, limited: &Limited) -> Verdict {
    let retrans = s.sent.retransmits.unwrap_or(0);
    verdict(
        "network",
        format!(
            "the congestion window was the limit {:.0}% of the time ({retrans} retransmits)",
            limited.network * 100.0
        ),
        (retrans > 0).then(|| {
            "the path is full or lossy: compare congestion controls with -C bbr / cubic".into()
        }),
    )
}

/// Below this share of the prediction the measurement broke one of the model's
/// assumptions, and the verdict says which.
pub const BELOW_PREDICTION: f64 = 0.8;

/// Adds the prediction to the verdict: its figures as evidence, for a window or
/// buffer limit the buffer needed (rate x loaded RTT, through Linux's doubling
/// and window share), and below [`BELOW_PREDICTION`] the assumption broken.
pub fn against_prediction(s: &mut DirectionSummary) {
    let (Some(p), Some(ratio)) = (s.prediction.clone(), s.measured_over_predicted) else {
        return;
    };
    let v = &mut s.verdict;
    v.evidence
        .insert("predicted_bits_per_second".into(), p.value);
    v.evidence.insert("measured_over_predicted".into(), ratio);
    let loaded_rtt = s
        .tcp
        .as_ref()
        .and_then(|t| t.rtt_ms.mean)
        .map(|ms| ms / 1e3);
    // The window the path needs: the rate the other bounds allow over the loaded RTT.
    let unwindowed = p
        .bounds
        .iter()
        .filter(|(k, _)| *k != "window" && *k != "send_buffer")
        .map(|(_, v)| *v)
        .reduce(f64::min);
    if let (Some(rtt), Some(rate), true) = (
        loaded_rtt,
        unwindowed,
        matches!(v.limited_by.as_str(), "receiver window" | "send buffer"),
    ) {
        let window = rate / 8.0 * rtt;
        let share = match crate::model::host::local().rcv_share {
            s if s > 0.0 => s,
            _ => crate::model::scaling_ratio(p.payload_bytes),
        };
        let buffer = window / (2.0 * share);
        v.evidence.insert("window_needed_bytes".into(), window);
        v.evidence.insert("buffer_needed_bytes".into(), buffer);
        v.advice = Some(format!(
            "the path carries {} at {:.2} ms loaded RTT: a window of {window:.0} bytes; Linux doubles a socket buffer and offers {:.0}% of it as window, so set -w {buffer:.0} (and net.core.rmem_max / wmem_max, net.ipv4.tcp_rmem / tcp_wmem maximum, to at least {:.0})",
            format_rate(rate),
            rtt * 1e3,
            share * 100.0,
            2.0 * buffer
        ));
    }
    if ratio >= BELOW_PREDICTION {
        return;
    }
    let broken = match v.limited_by.as_str() {
        "receiver window" | "send buffer" => format!(
            "the buffers held less window than the model's {} bound assumed",
            p.binding
        ),
        "sender CPU" | "receiver CPU" => {
            "hosts that keep up with the path (no CPU bound was described)".to_string()
        }
        "application" => "a sender that always has data (it was paced or slow)".to_string(),
        "network" if s.sent.retransmits.unwrap_or(0) > 0 && p.packet_loss == 0.0 => format!(
            "a loss-free path ({} retransmits)",
            s.sent.retransmits.unwrap_or(0)
        ),
        "loss" => format!(
            "a packet loss of {:.3}% (the path description's)",
            p.packet_loss * 100.0
        ),
        _ => match loaded_rtt {
            Some(rtt) if rtt > 1.25 * p.rtt_s => format!(
                "a round trip of {:.2} ms (it was {:.2} ms loaded)",
                p.rtt_s * 1e3,
                rtt * 1e3
            ),
            _ => format!("the described path's {} bound", p.binding),
        },
    };
    v.explanation.push_str(&format!(
        "; {:.0}% of the predicted {} (bound by {}): the measurement broke the assumption of {broken}",
        ratio * 100.0,
        format_rate(p.value),
        p.binding
    ));
}

#[cfg(test)]
mod tests {
    //! Both ends in this one process, as `linkperf demo` runs them: each
    //! end's CPU must be its own, and a CPU verdict must name an end whose
    //! thread really ran near a full core. The process CPU comes from
    //! getrusage and the threads' CPU from /proc, independently of the report.
    use super::*;
    use crate::{client, report::Report, server};
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn process_cpu_seconds() -> f64 {
        // SAFETY: rusage is plain data and getrusage fills it.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(u.ru_utime) + tv(u.ru_stime)
    }

    /// What /proc showed of one stream thread: its CPU (clock ticks) when
    /// last seen, and when it was first and last seen.
    #[derive(Debug, Clone, Copy)]
    struct Seen {
        ticks: u64,
        first: Instant,
        last: Instant,
    }

    impl Seen {
        fn percent(&self) -> f64 {
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
            let wall = self.last.duration_since(self.first).as_secs_f64().max(0.01);
            100.0 * self.ticks as f64 / hz / wall
        }
    }

    /// Polls /proc/self/task every 10 ms for the stream threads (named
    /// `lp-tx-N` / `lp-rx-N`) until `stop`.
    fn watch_threads(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<HashMap<String, Seen>> {
        std::thread::spawn(move || {
            let mut seen: HashMap<(u32, String), Seen> = HashMap::new();
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                for task in std::fs::read_dir("/proc/self/task").into_iter().flatten() {
                    let Ok(task) = task else { continue };
                    let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                        continue;
                    };
                    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                        continue;
                    };
                    let name = stat[open + 1..close].to_string();
                    if !name.starts_with("lp-tx-") && !name.starts_with("lp-rx-") {
                        continue;
                    }
                    // After the name: state, ppid, ... utime is the 12th, stime the 13th.
                    let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
                    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
                    let tid: u32 = task.file_name().to_string_lossy().parse().unwrap();
                    let e = seen.entry((tid, name)).or_insert(Seen {
                        ticks,
                        first: now,
                        last: now,
                    });
                    e.ticks = ticks;
                    e.last = now;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            seen.into_iter().map(|((_, name), s)| (name, s)).collect()
        })
    }

    struct Measured {
        report: Report,
        process_seconds: f64,
        threads: HashMap<String, Seen>,
    }

    fn run_in_process(config: TestConfig) -> Measured {
        let options = server::ServerOptions {
            port: 0,
            bind: Some([127, 0, 0, 1].into()),
            verbose: false,
            ..Default::default()
        };
        let addr = server::Server::bind(options).unwrap().spawn();
        let options = client::ClientOptions {
            host: addr.ip().to_string(),
            port: addr.port(),
            config,
            ..Default::default()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = watch_threads(stop.clone());
        let before = process_cpu_seconds();
        let report = client::run(&options, &mut |_| {}, None).unwrap();
        let process_seconds = process_cpu_seconds() - before;
        stop.store(true, Ordering::Relaxed);
        let threads = watcher.join().unwrap();
        Measured {
            report,
            process_seconds,
            threads,
        }
    }

    fn cpu_seconds(c: &CpuUsage) -> f64 {
        c.total_percent / 100.0 * c.seconds.expect("the end says what time its CPU covers")
    }

    fn check(m: &Measured) {
        let s = &m.report.summary;
        let (local, remote) = (cpu_seconds(&s.cpu.local), cpu_seconds(&s.cpu.remote));
        // Both ends are threads of this process: together they cannot have
        // used more than it (getrusage rounds to microseconds; 1 ms slack).
        assert!(
            local + remote <= m.process_seconds + 0.001,
            "client {local:.3} s + server {remote:.3} s of CPU > the process's {:.3} s",
            m.process_seconds
        );
        let tx = m
            .threads
            .get("lp-tx-0")
            .expect("saw the client's sender thread");
        let rx = m
            .threads
            .get("lp-rx-0")
            .expect("saw the server's receiver thread");
        // Each end includes its own stream thread (/proc counts 10 ms ticks,
        // and the last poll may be up to 10 ms before the thread ended).
        let tick = 0.01;
        let tx_s = tx.ticks as f64 * tick;
        let rx_s = rx.ticks as f64 * tick;
        assert!(
            local >= tx_s - 3.0 * tick,
            "client {local:.3} s < its sender thread {tx_s:.3} s"
        );
        assert!(
            remote >= rx_s - 3.0 * tick,
            "server {remote:.3} s < its receiver thread {rx_s:.3} s"
        );
        // A CPU verdict must name an end whose thread ran near a full core
        // (10 points below the threshold for the polling's granularity).
        let (tx_pct, rx_pct) = (tx.percent(), rx.percent());
        let v = &s.verdict;
        let near = CPU_SATURATED - 10.0;
        match v.limited_by.as_str() {
            "sender CPU" => assert!(
                tx_pct >= near,
                "{v:?} but the sender thread used {tx_pct:.0}%"
            ),
            "receiver CPU" => assert!(
                rx_pct >= near,
                "{v:?} but the receiver thread used {rx_pct:.0}%"
            ),
            _ => {}
        }
        if let Some(advice) = &v.advice {
            if tx_pct < near {
                assert!(
                    !advice.contains("sender used"),
                    "{v:?}: sender at {tx_pct:.0}%"
                );
            }
            if rx_pct < near {
                assert!(
                    !advice.contains("receiver used"),
                    "{v:?}: receiver at {rx_pct:.0}%"
                );
            }
        }
    }

    #[test]
    fn ends_sharing_a_process_split_its_cpu_and_blame_only_a_saturated_one() {
        // The demo's bulk TCP test: loopback TCP is CPU-bound somewhere, but
        // only the end whose thread ran out of CPU may be blamed.
        let bulk = run_in_process(TestConfig {
            duration_s: 2.0,
            ..Default::default()
        });
        check(&bulk);
        // Paced at 100 Mbit/s neither end comes near a core: no CPU verdict.
        let paced = run_in_process(TestConfig {
            duration_s: 2.0,
            bitrate: Some(100_000_000),
            ..Default::default()
        });
        check(&paced);
        assert!(
            !paced.report.summary.verdict.limited_by.contains("CPU"),
            "{:?}",
            paced.report.summary.verdict
        );
    }
}
