//! Measurements as they travel between the two ends of a test.
//!
//! Each end measures only what it can see (a sender its writes and tcp_info, a
//! receiver what really arrived) and sends it to the other end; the client
//! combines both into the report. Fields a kernel does not provide are `None`,
//! never a made-up zero.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Sender,
    Receiver,
}

/// Fractions of wall time a TCP sender spent in each state (tcp_info
/// busy/rwnd_limited/sndbuf_limited): limited by the receiver's window, by its
/// own send buffer, by the network (congestion window), or idle for want of data.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Limited {
    pub rwnd: f64,
    pub sndbuf: f64,
    pub network: f64,
    pub app: f64,
}

/// What tcp_info says of one connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TcpStats {
    /// Retransmitted segments (in the interval, or in the whole test for a summary).
    pub retransmits: Option<u64>,
    pub cwnd_bytes: Option<u64>,
    /// Smoothed RTT (tcp_info srtt): its value at the end of an interval; in
    /// a whole-test result, the mean of the samples.
    pub rtt_ms: Option<f64>,
    /// Smallest and largest smoothed RTT sampled in the interval or test (the
    /// sampler reads tcp_info every few milliseconds while the stream sends).
    #[serde(default)]
    pub rtt_min_ms: Option<f64>,
    #[serde(default)]
    pub rtt_max_ms: Option<f64>,
    /// How many smoothed-RTT samples the min, max and mean come from.
    #[serde(default)]
    pub rtt_samples: Option<u64>,
    /// tcp_info rttvar: the kernel's smoothed mean deviation of the RTT (not a variance).
    pub rttvar_ms: Option<f64>,
    /// tcp_info min_rtt: the kernel's smallest raw (unsmoothed) RTT sample.
    pub min_rtt_ms: Option<f64>,
    pub snd_wnd_bytes: Option<u64>,
    /// The window this end last advertised to its peer (tcp_info rcv_wnd,
    /// Linux 6.8+): on a receiver, the window its sender is held to.
    #[serde(default)]
    pub rcv_wnd_bytes: Option<u64>,
    /// TCP_WINDOW_CLAMP at the end of the interval or test.
    #[serde(default)]
    pub window_clamp_bytes: Option<u64>,
    pub delivery_rate_bps: Option<f64>,
    pub pacing_rate_bps: Option<f64>,
    pub limited: Option<Limited>,
    pub mss: Option<u32>,
    pub pmtu: Option<u32>,
}

/// One time-series sample of one stream (`--sample PERIOD`), read on the
/// end's own clock. A receiver fills `t` and `bytes`; a TCP sender also its
/// tcp_info. Absent fields (a receiver's, or an older kernel's) are left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Sample {
    /// Seconds since the test started on this end, when the sample was read.
    pub t: f64,
    /// Bytes this end moved on the stream since the previous sample
    /// (received by a receiver, written by a sender).
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_segments: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_bytes: Option<u64>,
    /// tcp_info snd_ssthresh; absent while still in the first slow start
    /// (the kernel's "infinite" threshold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssthresh_segments: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srtt_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rttvar_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_rate_bps: Option<f64>,
    /// Sent and not yet acknowledged (snd_nxt - snd_una, from tcp_info's
    /// bytes_sent - bytes_retrans - bytes_acked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_in_flight: Option<u64>,
    /// Bytes the receiver acknowledged since the previous sample (tcp_info
    /// bytes_acked): what was delivered, on the sender's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_bytes: Option<u64>,
    /// Retransmitted segments since the connection opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// Fractions of the time since the previous sample limited by each cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited: Option<Limited>,
}

/// What a UDP receiver counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UdpStats {
    /// Distinct datagrams received.
    pub packets: u64,
    /// Datagrams expected but never received.
    pub lost_packets: u64,
    pub loss_percent: f64,
    pub out_of_order: u64,
    pub duplicates: u64,
    /// RFC 3550 interarrival jitter.
    pub jitter_ms: f64,
    /// Mean one-way delay, meaningful only when both ends share a clock.
    pub one_way_delay_ms: Option<f64>,
    /// One-way delay's distribution (shared clocks only).
    #[serde(default)]
    pub delay: Option<Spread>,
    /// Distribution of |IPDV| (RFC 3393): the change in one-way delay from
    /// one datagram to the next in sequence; clock offsets cancel out.
    #[serde(default)]
    pub ipdv: Option<Spread>,
    /// Datagrams the receiving socket had no buffer room for: the kernel's drop
    /// count of this socket (/proc/net/udp), over the whole test; None where it
    /// could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_drops: Option<u64>,
}

/// A distribution of times, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Spread {
    pub samples: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// How a sender kept its traffic model's schedule (streams that follow a
/// model only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ScheduleStats {
    /// The model as written, and the seed of its draws.
    pub model: String,
    pub seed: u64,
    /// Messages (datagram groups, writes, bursts) due before the end.
    pub messages_due: u64,
    pub messages_sent: u64,
    /// Sent more than `late_limit_us` after they were due.
    pub late: u64,
    /// `burst` only: skipped for being a whole period late.
    pub skipped: u64,
    /// Due before the end but never sent: the sender fell behind.
    pub unsent: u64,
    /// late + skipped + unsent: the schedule not kept.
    pub misses: u64,
    pub late_limit_us: f64,
    /// Bytes due before the end, and that rate over the test: what the model offered.
    pub offered_bytes: u64,
    pub offered_bits_per_second: f64,
    /// |actual - scheduled| send time of the messages sent.
    pub error_p50_us: f64,
    pub error_p99_us: f64,
    pub error_max_us: f64,
    /// Mean of actual - scheduled (negative: early on average).
    pub error_mean_us: f64,
    /// Mean of |actual - scheduled|: how far a send typically moved from its
    /// schedule (absent from results stored before it was added).
    #[serde(default)]
    pub error_abs_mean_us: f64,
}

/// Distribution of the gaps between datagram sends of a paced UDP sender,
/// the evidence that pacing is smooth rather than bursty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GapStats {
    pub sends: u64,
    pub target_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Gaps shorter than a tenth of the target: datagrams sent back to back.
    pub back_to_back_fraction: f64,
    /// Times the sender fell more than the pacer's catch-up (20 ms) behind its
    /// schedule, and the schedule time it wrote off then, in all and the longest:
    /// time it did not send (absent from results stored before they were added).
    #[serde(default)]
    pub skips: u64,
    #[serde(default)]
    pub skipped_ms: f64,
    #[serde(default)]
    pub longest_skip_ms: f64,
}

/// What the kernel granted a data socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SocketFacts {
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub congestion: Option<String>,
    pub mss: Option<u32>,
    /// TCP_WINDOW_CLAMP as the kernel holds it once connected: the user's
    /// clamp (raised to the kernel's floor), or the autotuned limit.
    #[serde(default)]
    pub window_clamp: Option<u32>,
    pub mtu: Option<u32>,
    pub local: Option<String>,
    pub remote: Option<String>,
}

/// One stream's counters over one interval, as seen by one end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamInterval {
    pub id: u32,
    pub role: Role,
    pub start: f64,
    pub end: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    pub packets: Option<u64>,
    pub udp: Option<UdpStats>,
    pub tcp: Option<TcpStats>,
    /// A model's sender: the rate its schedule offered in the interval.
    #[serde(default)]
    pub offered_bits_per_second: Option<f64>,
    /// Inside the `-O` warm-up, excluded from the summary.
    pub omitted: bool,
}

/// One stream over the whole test, as seen by one end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    pub id: u32,
    pub role: Role,
    pub bytes: u64,
    pub seconds: f64,
    pub bits_per_second: f64,
    pub packets: Option<u64>,
    pub udp: Option<UdpStats>,
    pub tcp: Option<TcpStats>,
    pub socket: SocketFacts,
    pub send_gaps: Option<GapStats>,
    /// How the sender kept its traffic model's schedule.
    #[serde(default)]
    pub schedule: Option<ScheduleStats>,
    /// When a sender really started (ns since the Unix epoch): campaigns
    /// measure the spread of start times across flows from it.
    #[serde(default)]
    pub started_unix_ns: Option<u64>,
    /// CPU time of this stream's own thread while it ran, percent of one
    /// core: near 100 the thread, not the network, set the pace.
    #[serde(default)]
    pub thread_cpu_percent: Option<f64>,
    /// Why the stream stopped early, if it did.
    pub error: Option<String>,
    /// `--sample`: the stream's time series, oldest first; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
    /// `-m`: the MPTCP connection's subflows as the kernel reported them at
    /// the stream's end; empty for TCP (or an MPTCP fallback to TCP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subflows: Vec<Subflow>,
}

/// One MPTCP subflow of a stream: its addresses and what it carried over
/// the whole stream, warm-up included (bytes acknowledged on the sending
/// end, received on the receiving end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Subflow {
    pub local: String,
    pub remote: String,
    pub bytes: u64,
    /// `bytes` over the stream's whole data time.
    pub bits_per_second: f64,
}

/// CPU used during the test by one end: its own threads and its process as
/// percentages of one core, the host as a percentage of all its cores.
///
/// The end's own threads (its streams, its sampler, its control thread) are
/// what it cost: when both ends share a process (`linkperf demo`) or a server
/// runs several tests, the process figures include the others too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CpuUsage {
    pub user_percent: f64,
    pub system_percent: f64,
    pub total_percent: f64,
    /// The whole process (None when the peer did not measure it apart).
    #[serde(default)]
    pub process_user_percent: Option<f64>,
    #[serde(default)]
    pub process_system_percent: Option<f64>,
    #[serde(default)]
    pub process_total_percent: Option<f64>,
    pub host_user_percent: f64,
    pub host_system_percent: f64,
    pub host_total_percent: f64,
    /// The host's steal time: how long its CPUs had work but the hypervisor ran
    /// something else, percent of all its cores (None where /proc/stat has no steal
    /// column, or the peer did not say). Time this end could not measure in.
    #[serde(default)]
    pub host_steal_percent: Option<f64>,
    pub cpus: u32,
    /// Wall-clock seconds the percentages cover.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// This end's CPU microseconds per 10^6 bytes it moved.
    pub service_demand_us_per_mb: Option<f64>,
}

/// Facts about a host that explain its numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel: String,
    pub software: String,
    pub cpus: u32,
    pub congestion_default: Option<String>,
    pub congestion_available: Vec<String>,
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    pub tcp_rmem: Option<[u64; 3]>,
    pub tcp_wmem: Option<[u64; 3]>,
}

/// Everything one end measured once its streams are done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SideResult {
    pub streams: Vec<StreamResult>,
    pub cpu: CpuUsage,
    /// Seconds from the start of the test to the end of the last stream.
    pub seconds: f64,
    pub warnings: Vec<String>,
    /// UDP datagrams this end's host refused to send while it sent (UdpSndbufErrors
    /// of its network namespace: a full interface queue or qdisc drops a datagram
    /// the socket already accepted). None for TCP, a receiving end, or unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_send_drops: Option<u64>,
    /// UDP, an end that sent: drops on its way out over the test. None for TCP, an
    /// end that only received, or a peer that does not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_egress: Option<Box<EgressDrops>>,
    /// UDP, an end that received: drops on its way in over the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_ingress: Option<Box<IngressDrops>>,
}

/// What the sending end's egress interface (the one its route to the peer uses)
/// dropped over a UDP test, in its own network namespace: counts are deltas from
/// the start to the end of the test; None where a value could not be read (or the
/// qdisc or route changed meanwhile), never 0 for unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct EgressDrops {
    pub interface: Option<String>,
    /// The root qdisc's kind (`tbf`, `fq_codel`, `noqueue`...).
    pub qdisc: Option<String>,
    /// Packets the root qdisc dropped (`tc -s qdisc`'s `dropped`).
    pub qdisc_drops: Option<u64>,
    /// The interface's tx_dropped: packets its driver refused.
    pub tx_dropped: Option<u64>,
}

/// What the receiving end's ingress interface (the one its route to the peer uses)
/// and its host's backlog queues dropped over a UDP test; None where unreadable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct IngressDrops {
    pub interface: Option<String>,
    /// The interface's rx_dropped.
    pub rx_dropped: Option<u64>,
    /// The interface's rx_missed_errors (the NIC's own ring overflowed).
    pub rx_missed_errors: Option<u64>,
    /// Packets the host's per-CPU backlog queues refused (netdev_max_backlog
    /// overflows, the second column of /proc/net/softnet_stat): host-wide.
    pub backlog_drops: Option<u64>,
}

impl SideResult {
    /// Bytes this end moved in `role` (sent or received), over all its streams.
    pub fn bytes(&self, role: Role) -> u64 {
        self.streams
            .iter()
            .filter(|s| s.role == role)
            .map(|s| s.bytes)
            .sum()
    }
}
