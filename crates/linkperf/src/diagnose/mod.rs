//! Why the numbers are what they are: the limiting factor of one direction, the
//! numbers it rests on, and what to change (`tcp.rs`, `udp.rs`), then the
//! prediction beside it. Pure function of the measurements.

mod busy;
mod tcp;
mod udp;

use crate::report::{DirectionSummary, Sides, Verdict};
use busy::busy;
pub use busy::CPU_SATURATED;
use linkperf_proto::results::{CpuUsage, HostFacts};
use linkperf_proto::{Direction, Protocol, TestConfig};
use linkperf_units::format_rate;
use tcp::Buffer;

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
    match config.protocol {
        Protocol::Udp => udp::udp_verdict(config, s, &sender, &receiver),
        _ => tcp::tcp_verdict(config, s, &sender, &receiver),
    }
}

/// Below this share of the prediction the measurement broke one of the model's
/// assumptions, and the verdict says which.
pub const BELOW_PREDICTION: f64 = 0.8;

/// Adds the prediction to the verdict: its figures as evidence, for a window or
/// buffer limit the buffer needed (rate x loaded RTT, through Linux's doubling
/// and window share), and below [`BELOW_PREDICTION`] the assumption broken.
pub fn against_prediction(s: &mut DirectionSummary, sender: &HostFacts, receiver: &HostFacts) {
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
    let which = match v.limited_by.as_str() {
        "receiver window" => Some((Buffer::Receive, receiver)),
        "send buffer" => Some((Buffer::Send, sender)),
        _ => None,
    };
    if let (Some(rtt), Some(rate), Some((which, facts))) = (loaded_rtt, unwindowed, which) {
        let (window, own, both) = which.needed(rate, rtt, p.payload_bytes);
        v.evidence.insert("window_needed_bytes".into(), window);
        v.evidence.insert("buffer_needed_bytes".into(), both);
        let (option, _, _) = which.names();
        v.advice = Some(format!(
            "the path carries {} at {:.2} ms loaded RTT: a window of {window:.0} bytes; Linux doubles a socket buffer and {}, so set -w {both:.0} (or {option} {own:.0}){}",
            format_rate(rate),
            rtt * 1e3,
            match (which, Buffer::Receive.window_share(p.payload_bytes) * 100.0) {
                (Buffer::Receive, share) => format!("a receiver offers {share:.0}% of it as window"),
                (Buffer::Send, share) => format!("a sender keeps all of it in flight (a receiver offers {share:.0}% of its as window: -w, which sets both, needs the larger)"),
            },
            which.limits(both, facts)
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
        "loss" | "path loss" => format!(
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
    use linkperf_proto::results::Limited;
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
    /// `lp-tx-N` / `lp-rx-N`) and the receiving loops (`lp-recv-N`, which
    /// read paced streams) until `stop`.
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
                    if !["lp-tx-", "lp-rx-", "lp-recv-"]
                        .iter()
                        .any(|p| name.starts_with(p))
                    {
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
        // The server's one receiving stream: a thread of its own, or a
        // receiving loop's when paced (this test is the only one of its
        // process that receives TCP, so the loop reads only this stream).
        let rx = m
            .threads
            .iter()
            .find(|(name, _)| *name == "lp-rx-0" || name.starts_with("lp-recv-"))
            .map(|(_, seen)| seen)
            .expect("saw the server's receiving thread");
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

    /// A window-limited direction as the report builds it: `rate` received over a
    /// loaded round trip of `rtt_ms`, the sender waiting for the window 90 % of the time.
    fn window_limited(rate: f64, rtt_ms: f64) -> crate::report::DirectionSummary {
        let tcp = crate::report::TcpSummary {
            rtt_ms: crate::report::RttSummary {
                mean: Some(rtt_ms),
                ..Default::default()
            },
            snd_wnd_bytes: Some((rate / 8.0 * rtt_ms / 1e3) as u64),
            limited: Some(Limited {
                rwnd: 0.9,
                sndbuf: 0.0,
                network: 0.1,
                app: 0.0,
            }),
            mss: Some(1448),
            ..Default::default()
        };
        crate::report::DirectionSummary {
            direction: "client_to_server",
            sent: Default::default(),
            received: crate::report::ReceivedSummary {
                bits_per_second: rate,
                ..Default::default()
            },
            tcp: Some(tcp),
            cpu: Default::default(),
            send_gaps: None,
            verdict: Default::default(),
            streams: vec![],
            dynamics: None,
            prediction: None,
            measured_over_predicted: None,
        }
    }

    #[test]
    fn a_gigabit_path_held_by_a_small_buffer_is_told_the_buffer_it_needs() {
        // The case: 1 Gbit/s, 20 ms, a 256 KiB buffer. What the window held
        // (its share of 2 x 256 KiB) over 20 ms is all that arrived.
        let mut s = window_limited(2.0 * 262_144.0 * 0.63 * 8.0 / 0.020, 20.0);
        let config = TestConfig {
            sndbuf: Some(262_144),
            rcvbuf: Some(262_144),
            ..Default::default()
        };
        s.verdict = diagnose(&config, &s, &CpuUsage::default(), &CpuUsage::default());
        assert_eq!(s.verdict.limited_by, "receiver window");
        assert_eq!(s.verdict.evidence["rtt_ms"], 20.0);
        assert!(s.verdict.evidence.contains_key("advertised_window_bytes"));
        // Without the link's rate the advice gives the buffer per 100 Mbit/s.
        let advice = s.verdict.advice.clone().unwrap();
        assert!(advice.contains("per 100 Mbit/s"), "{advice}");
        // With it (the path described), the buffer for rate x loaded RTT.
        let path = crate::model::Path {
            rate_bps: Some(1e9),
            rtt_s: 0.020,
            ..Default::default()
        };
        let flow = crate::model::describe::flow_of(&config).unwrap();
        let p = crate::model::predict(&path, &flow, &crate::model::host::local()).unwrap();
        s.measured_over_predicted = Some(s.received.bits_per_second / p.value);
        s.prediction = Some(p);
        let facts = linkperf_proto::results::HostFacts {
            rmem_max: Some(212_992),
            tcp_rmem: Some([4096, 131_072, 6_291_456]),
            ..Default::default()
        };
        against_prediction(&mut s, &facts, &facts);
        // The link's payload over the loaded round trip, 1e9 x 1448/1538 / 8 x 20 ms:
        // 2.35 MB of window, over twice the window share of a buffer.
        let window = 1e9 * 1448.0 / 1538.0 / 8.0 * 0.020;
        let e = &s.verdict.evidence;
        assert!(
            (e["window_needed_bytes"] / window - 1.0).abs() < 1e-9,
            "{e:?}"
        );
        let share = match crate::model::host::local().rcv_share {
            x if x > 0.0 => x,
            _ => crate::model::scaling_ratio(1448),
        };
        let buffer = window / (2.0 * share);
        assert!(
            (e["buffer_needed_bytes"] / buffer - 1.0).abs() < 1e-9,
            "{e:?}"
        );
        let advice = s.verdict.advice.clone().unwrap();
        assert!(advice.contains(&format!("set -w {buffer:.0}")), "{advice}");
        // The receiver's rmem_max (208 KiB) caps it: the line to paste.
        assert!(
            advice.contains(&format!("sysctl -w net.core.rmem_max={}", buffer.ceil())),
            "{advice}"
        );
    }
}
