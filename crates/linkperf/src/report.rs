//! The result of a test as users see it: JSON schema `linkperf/1`
//! (schema/linkperf-1.schema.json describes it) and the source of the
//! human output. Built by the client from both ends' measurements.

use linkperf_proto::results::{
    CpuUsage, EgressDrops, GapStats, HostFacts, IngressDrops, Limited, Role, SideResult,
    SocketFacts, StreamInterval, StreamResult, TcpStats,
};
use linkperf_proto::{Direction, Protocol, TestConfig};
use serde::Serialize;

pub const SCHEMA: &str = "linkperf/1";

/// The software string both ends report ("linkperf 0.1.0").
pub const SOFTWARE: &str = concat!("linkperf ", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub software: String,
    pub test: TestInfo,
    pub start: StartInfo,
    pub intervals: Vec<IntervalReport>,
    pub summary: DirectionSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_reverse: Option<DirectionSummary>,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
    /// The test was stopped early (Ctrl-C); the numbers cover what ran.
    pub interrupted: bool,
    /// How well the emulated testbed the test crossed kept its timing meanwhile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub testbed: Option<TestbedTiming>,
    /// The server's own side of the test, as it measured it
    /// (`--get-server-output`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output: Option<ServerOutput>,
    /// The user's note about the test (`--extra-data`), kept with the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    /// `client --doctor`: this host examined against the test's path before
    /// the test (`linkperf doctor -J`'s document, under `local`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doctor: Option<serde_json::Value>,
}

/// The server's side of a test (`--get-server-output`): what it measured, and
/// the client's control connection as the server saw it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerOutput {
    pub client: String,
    #[serde(flatten)]
    pub side: linkperf_proto::results::SideResult,
}

/// The emulator's own account of its links over one test: per link direction,
/// packets, release lateness (and how many left over 100 us late), queueing,
/// and the configured against the measured delay, with its counters; and what
/// the hosts' own shaped interfaces (`line_rate` links) dropped.
#[derive(Debug, Clone, Serialize)]
pub struct TestbedTiming {
    pub name: String,
    pub links: Vec<linkperf_testbed::status::TimingReport>,
    /// Per host, packets its `line_rate` interfaces' queues dropped over the
    /// test (absent without `line_rate` links).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub interface_drops: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TestInfo {
    pub server: String,
    pub port: u16,
    #[serde(flatten)]
    pub config: TestConfig,
}

#[derive(Debug, Clone, Serialize)]
pub struct StartInfo {
    pub timestamp_unix_ms: u64,
    pub local: HostFacts,
    pub remote: HostFacts,
    /// "shared" (same host), "synchronised" (user says so) or "independent".
    pub clock: String,
    pub streams: Vec<StreamSockets>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamSockets {
    pub id: u32,
    pub direction: &'static str,
    pub local: SocketFacts,
    pub remote: Option<SocketFacts>,
}

/// One interval, both ends' views side by side.
#[derive(Debug, Clone, Serialize)]
pub struct IntervalReport {
    pub start: f64,
    pub end: f64,
    pub omitted: bool,
    pub sum: IntervalSum,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_reverse: Option<IntervalSum>,
    pub streams: Vec<IntervalStream>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct IntervalSum {
    /// The receiver's rate: what really arrived.
    pub bits_per_second: f64,
    pub sent_bytes: u64,
    pub sent_bits_per_second: f64,
    pub received_bytes: u64,
    pub received_bits_per_second: f64,
    pub retransmits: Option<u64>,
    pub lost_packets: Option<u64>,
    pub loss_percent: Option<f64>,
    pub jitter_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IntervalStream {
    pub id: u32,
    pub direction: &'static str,
    pub sender: Option<StreamInterval>,
    pub receiver: Option<StreamInterval>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct SentSummary {
    pub bytes: u64,
    pub bits_per_second: f64,
    pub seconds: f64,
    pub retransmits: Option<u64>,
    pub packets: Option<u64>,
    /// UDP: datagrams the sending host's interface queue refused (its kernel's count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_drops: Option<u64>,
    /// UDP: what the sending end's egress interface dropped (its qdisc, its NIC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<EgressDrops>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct ReceivedSummary {
    pub bytes: u64,
    pub bits_per_second: f64,
    pub seconds: f64,
    pub packets: Option<u64>,
    pub lost_packets: Option<u64>,
    pub loss_percent: Option<f64>,
    pub jitter_ms: Option<f64>,
    pub out_of_order: Option<u64>,
    pub duplicates: Option<u64>,
    pub one_way_delay_ms: Option<f64>,
    /// UDP: datagrams the receiving sockets had no buffer room for (the kernel's count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket_drops: Option<u64>,
    /// UDP: what the receiving end's ingress interface and host backlog dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressDrops>,
}

/// The senders' round-trip times in milliseconds.
#[derive(Debug, Clone, Serialize, Default)]
pub struct RttSummary {
    /// Mean over the streams of each one's mean smoothed RTT.
    pub mean: Option<f64>,
    /// Smallest and largest smoothed RTT sampled on any stream.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Samples behind min, max and mean, all streams together.
    pub samples: Option<u64>,
    /// Mean over the streams of tcp_info rttvar at the end (the kernel's
    /// smoothed mean deviation, not a variance).
    pub rttvar: Option<f64>,
    /// Smallest tcp_info min_rtt of any stream: the kernel's lowest raw sample.
    pub kernel_min_rtt: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct TcpSummary {
    pub rtt_ms: RttSummary,
    pub cwnd_bytes: Option<u64>,
    pub snd_wnd_bytes: Option<u64>,
    /// The receivers' own view: the smallest window any of them last
    /// advertised (tcp_info rcv_wnd) and TCP_WINDOW_CLAMP at the end.
    pub receiver_window: ReceiverWindow,
    pub delivery_rate_bps: Option<f64>,
    pub pacing_rate_bps: Option<f64>,
    pub limited: Option<Limited>,
    pub mss: Option<u32>,
}

/// The window as the receiving ends hold it (smallest over the streams).
#[derive(Debug, Clone, Serialize, Default)]
pub struct ReceiverWindow {
    pub rcv_wnd_bytes: Option<u64>,
    pub window_clamp_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct CpuSummary {
    pub local: CpuUsage,
    pub remote: CpuUsage,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamSummary {
    pub id: u32,
    pub sender: StreamResult,
    pub receiver: Option<StreamResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DirectionSummary {
    /// "client_to_server" or "server_to_client".
    pub direction: &'static str,
    pub sent: SentSummary,
    pub received: ReceivedSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpSummary>,
    pub cpu: CpuSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_gaps: Option<GapStats>,
    pub verdict: Verdict,
    pub streams: Vec<StreamSummary>,
    /// `--sample`: convergence metrics of the streams' series (docs/dynamics.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamics: Option<crate::dynamics::Dynamics>,
    /// What the model predicts for this direction's flow on the described
    /// path (`--path`, or the testbed's), docs/model.md.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prediction: Option<crate::model::Prediction>,
    /// received.bits_per_second over prediction.value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_over_predicted: Option<f64>,
}

/// What limited one direction, and what to change (filled by `diagnose`).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Verdict {
    /// "receiver window", "send buffer", "network", "application", "sender CPU",
    /// "receiver CPU", "loss", "rate limit", or "none observed".
    pub limited_by: String,
    pub explanation: String,
    pub advice: Option<String>,
    /// The numbers the verdict rests on, by name.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub evidence: std::collections::BTreeMap<String, f64>,
}

pub fn direction_name(client_sends: bool) -> &'static str {
    if client_sends {
        "client_to_server"
    } else {
        "server_to_client"
    }
}

/// The two ends' results and where each came from.
pub struct Sides<'a> {
    pub config: &'a TestConfig,
    pub local: &'a SideResult,
    pub remote: &'a SideResult,
}

impl Sides<'_> {
    /// The streams going one way: what each end of them ran.
    fn ends(&self, client_sends: bool) -> (Vec<&StreamResult>, Vec<&StreamResult>) {
        let (senders, receivers) = if client_sends {
            (self.local, self.remote)
        } else {
            (self.remote, self.local)
        };
        (
            of_role(senders, Role::Sender),
            of_role(receivers, Role::Receiver),
        )
    }

    /// The CPU of the sending end and of the receiving end, one way.
    pub fn cpus(&self, client_sends: bool) -> (&CpuUsage, &CpuUsage) {
        if client_sends {
            (&self.local.cpu, &self.remote.cpu)
        } else {
            (&self.remote.cpu, &self.local.cpu)
        }
    }

    /// Summary of the streams going one way; its verdict is left empty for
    /// the analysis (`diagnose::explain`).
    pub fn summarise(&self, client_sends: bool) -> DirectionSummary {
        let (sent, received) = self.ends(client_sends);
        let (sender, receiver) = if client_sends {
            (self.local, self.remote)
        } else {
            (self.remote, self.local)
        };
        let udp = self.config.protocol == Protocol::Udp;
        let sent_bytes: u64 = sent.iter().map(|s| s.bytes).sum();
        let sent_secs = sent.iter().map(|s| s.seconds).fold(0.0, f64::max);
        let tcp_stats: Vec<&TcpStats> = sent.iter().filter_map(|s| s.tcp.as_ref()).collect();
        let retransmits = (!udp).then(|| tcp_stats.iter().filter_map(|t| t.retransmits).sum());
        let streams = sent
            .iter()
            .map(|s| StreamSummary {
                id: s.id,
                sender: (*s).clone(),
                receiver: received.iter().find(|r| r.id == s.id).map(|r| (*r).clone()),
            })
            .collect();
        DirectionSummary {
            direction: direction_name(client_sends),
            sent: SentSummary {
                bytes: sent_bytes,
                bits_per_second: rate(sent_bytes, sent_secs),
                seconds: sent_secs,
                retransmits,
                packets: udp.then(|| sent.iter().filter_map(|s| s.packets).sum()),
                queue_drops: sender.udp_send_drops,
                egress: sender.udp_egress.as_deref().cloned(),
            },
            received: ReceivedSummary {
                ingress: receiver.udp_ingress.as_deref().cloned(),
                ..received_summary(&received, udp)
            },
            tcp: (!udp).then(|| {
                let receivers: Vec<&TcpStats> =
                    received.iter().filter_map(|s| s.tcp.as_ref()).collect();
                tcp_summary(&tcp_stats, &receivers)
            }),
            cpu: CpuSummary {
                local: self.local.cpu.clone(),
                remote: self.remote.cpu.clone(),
            },
            send_gaps: sent.iter().find_map(|s| s.send_gaps.clone()),
            verdict: Verdict::default(),
            dynamics: self.dynamics(&sent, &received),
            prediction: None,
            measured_over_predicted: None,
            streams,
        }
    }
}

impl Sides<'_> {
    /// The convergence metrics of one direction's sampled streams.
    fn dynamics(
        &self,
        sent: &[&StreamResult],
        received: &[&StreamResult],
    ) -> Option<crate::dynamics::Dynamics> {
        let period = self.config.sample_s?;
        let series: Vec<crate::dynamics::StreamSeries> = sent
            .iter()
            .map(|s| crate::dynamics::StreamSeries {
                id: s.id,
                sender: &s.samples,
                receiver: received
                    .iter()
                    .find(|r| r.id == s.id)
                    .map(|r| r.samples.as_slice())
                    .unwrap_or(&[]),
            })
            .collect();
        crate::dynamics::analyse(&series, period, None)
    }
}

impl DirectionSummary {
    /// Computes the convergence metrics again with `link_bps`, the payload
    /// rate of the link the data crossed, as the reference of "90 %"
    /// (docs/dynamics.md); nothing without `--sample`.
    pub fn dynamics_against_link(&mut self, period_s: f64, link_bps: f64) {
        if self.dynamics.is_none() {
            return;
        }
        let series: Vec<crate::dynamics::StreamSeries> = self
            .streams
            .iter()
            .map(|s| crate::dynamics::StreamSeries {
                id: s.id,
                sender: &s.sender.samples,
                receiver: s
                    .receiver
                    .as_ref()
                    .map(|r| r.samples.as_slice())
                    .unwrap_or(&[]),
            })
            .collect();
        self.dynamics = crate::dynamics::analyse(&series, period_s, Some(link_bps));
    }
}

fn of_role(side: &SideResult, role: Role) -> Vec<&StreamResult> {
    side.streams.iter().filter(|s| s.role == role).collect()
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

fn mean(v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// What the receiving streams of one direction got (UDP: loss, jitter, order).
fn received_summary(received: &[&StreamResult], udp: bool) -> ReceivedSummary {
    let bytes: u64 = received.iter().map(|s| s.bytes).sum();
    let seconds = received.iter().map(|s| s.seconds).fold(0.0, f64::max);
    let udp_stats: Vec<_> = received.iter().filter_map(|s| s.udp.as_ref()).collect();
    let lost: u64 = udp_stats.iter().map(|u| u.lost_packets).sum();
    let packets: u64 = udp_stats.iter().map(|u| u.packets).sum();
    let expected = lost + packets;
    ReceivedSummary {
        bytes,
        bits_per_second: rate(bytes, seconds),
        seconds,
        packets: udp.then_some(packets),
        lost_packets: udp.then_some(lost),
        loss_percent: udp.then(|| {
            if expected > 0 {
                100.0 * lost as f64 / expected as f64
            } else {
                0.0
            }
        }),
        jitter_ms: if udp {
            mean(udp_stats.iter().map(|u| u.jitter_ms).collect()).or(Some(0.0))
        } else {
            None
        },
        out_of_order: udp.then(|| udp_stats.iter().map(|u| u.out_of_order).sum()),
        duplicates: udp.then(|| udp_stats.iter().map(|u| u.duplicates).sum()),
        one_way_delay_ms: mean(
            udp_stats
                .iter()
                .filter_map(|u| u.one_way_delay_ms)
                .collect(),
        ),
        socket_drops: udp_stats
            .iter()
            .map(|u| u.socket_drops)
            .sum::<Option<u64>>()
            .filter(|_| !udp_stats.is_empty()),
        ingress: None,
    }
}

/// The sending TCP streams' state: RTT of the samples seen, windows, rates
/// and the shares of time each limit held.
fn tcp_summary(tcp_stats: &[&TcpStats], receivers: &[&TcpStats]) -> TcpSummary {
    let smallest = |f: fn(&TcpStats) -> Option<u64>| receivers.iter().filter_map(|t| f(t)).min();
    let sum = |f: fn(&TcpStats) -> Option<u64>| {
        tcp_stats.iter().filter_map(|t| f(t)).reduce(|a, b| a + b)
    };
    TcpSummary {
        rtt_ms: RttSummary {
            mean: mean(tcp_stats.iter().filter_map(|t| t.rtt_ms).collect()),
            min: tcp_stats
                .iter()
                .filter_map(|t| t.rtt_min_ms)
                .reduce(f64::min),
            max: tcp_stats
                .iter()
                .filter_map(|t| t.rtt_max_ms)
                .reduce(f64::max),
            samples: sum(|t| t.rtt_samples),
            rttvar: mean(tcp_stats.iter().filter_map(|t| t.rttvar_ms).collect()),
            kernel_min_rtt: tcp_stats
                .iter()
                .filter_map(|t| t.min_rtt_ms)
                .reduce(f64::min),
        },
        cwnd_bytes: sum(|t| t.cwnd_bytes),
        snd_wnd_bytes: tcp_stats
            .iter()
            .filter_map(|t| t.snd_wnd_bytes)
            .reduce(u64::min),
        receiver_window: ReceiverWindow {
            rcv_wnd_bytes: smallest(|t| t.rcv_wnd_bytes),
            window_clamp_bytes: smallest(|t| t.window_clamp_bytes),
        },
        delivery_rate_bps: tcp_stats
            .iter()
            .filter_map(|t| t.delivery_rate_bps)
            .reduce(|a, b| a + b),
        pacing_rate_bps: tcp_stats
            .iter()
            .filter_map(|t| t.pacing_rate_bps)
            .reduce(|a, b| a + b),
        limited: {
            let l: Vec<Limited> = tcp_stats.iter().filter_map(|t| t.limited).collect();
            (!l.is_empty()).then(|| {
                let n = l.len() as f64;
                Limited {
                    rwnd: l.iter().map(|x| x.rwnd).sum::<f64>() / n,
                    sndbuf: l.iter().map(|x| x.sndbuf).sum::<f64>() / n,
                    network: l.iter().map(|x| x.network).sum::<f64>() / n,
                    app: l.iter().map(|x| x.app).sum::<f64>() / n,
                }
            })
        },
        mss: tcp_stats.iter().find_map(|t| t.mss),
    }
}

/// Pairs the two ends' views of one interval into a report line.
pub fn merge_interval(
    config: &TestConfig,
    local: Option<&[StreamInterval]>,
    remote: Option<&[StreamInterval]>,
) -> IntervalReport {
    let all: Vec<&StreamInterval> = local
        .into_iter()
        .flatten()
        .chain(remote.into_iter().flatten())
        .collect();
    let start = all.iter().map(|s| s.start).fold(f64::INFINITY, f64::min);
    let end = all.iter().map(|s| s.end).fold(0.0, f64::max);
    let p = config.parallel;
    let client_sends_stream = |id: u32| match config.direction {
        Direction::Forward => true,
        Direction::Reverse => false,
        Direction::Bidir => id < p,
    };
    let mut ids: Vec<u32> = all.iter().map(|s| s.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let streams: Vec<IntervalStream> = ids
        .iter()
        .map(|&id| IntervalStream {
            id,
            direction: direction_name(client_sends_stream(id)),
            sender: all
                .iter()
                .find(|s| s.id == id && s.role == Role::Sender)
                .map(|s| (*s).clone()),
            receiver: all
                .iter()
                .find(|s| s.id == id && s.role == Role::Receiver)
                .map(|s| (*s).clone()),
        })
        .collect();
    let sum_of = |client_sends: bool| {
        let mine: Vec<&IntervalStream> = streams
            .iter()
            .filter(|s| client_sends_stream(s.id) == client_sends)
            .collect();
        let senders: Vec<&StreamInterval> = mine.iter().filter_map(|s| s.sender.as_ref()).collect();
        let receivers: Vec<&StreamInterval> =
            mine.iter().filter_map(|s| s.receiver.as_ref()).collect();
        let udp = config.protocol == Protocol::Udp;
        let lost: u64 = receivers
            .iter()
            .filter_map(|r| r.udp.as_ref())
            .map(|u| u.lost_packets)
            .sum();
        let got: u64 = receivers
            .iter()
            .filter_map(|r| r.udp.as_ref())
            .map(|u| u.packets)
            .sum();
        let jitters: Vec<f64> = receivers
            .iter()
            .filter_map(|r| r.udp.as_ref())
            .map(|u| u.jitter_ms)
            .collect();
        let received_bps: f64 = receivers.iter().map(|r| r.bits_per_second).sum();
        IntervalSum {
            bits_per_second: received_bps,
            sent_bytes: senders.iter().map(|s| s.bytes).sum(),
            sent_bits_per_second: senders.iter().map(|s| s.bits_per_second).sum(),
            received_bytes: receivers.iter().map(|s| s.bytes).sum(),
            received_bits_per_second: received_bps,
            retransmits: (!udp).then(|| {
                senders
                    .iter()
                    .filter_map(|s| s.tcp.as_ref()?.retransmits)
                    .sum()
            }),
            lost_packets: udp.then_some(lost),
            loss_percent: udp.then(|| {
                if lost + got > 0 {
                    100.0 * lost as f64 / (lost + got) as f64
                } else {
                    0.0
                }
            }),
            jitter_ms: (udp && !jitters.is_empty())
                .then(|| jitters.iter().sum::<f64>() / jitters.len() as f64),
        }
    };
    IntervalReport {
        start: if start.is_finite() { start } else { 0.0 },
        end,
        omitted: all.iter().any(|s| s.omitted),
        sum: sum_of(config.direction != Direction::Reverse),
        sum_reverse: (config.direction == Direction::Bidir).then(|| sum_of(false)),
        streams,
    }
}
