//! What a flow should reach on a described path, and which bound binds: the
//! link's payload rate after framing, the window over the round trip (Linux's
//! window from a socket buffer), the send buffer, the loss response of the
//! congestion control, the offered rate of UDP and the CPU's service demand.
//! Pure: the caller reads the host ([`host`]) or a testbed file ([`testbed`]).
//! docs/model.md gives every formula with its source and assumptions.

pub mod describe;
pub mod formulas;
pub mod host;
pub mod share;
pub mod testbed;

use formulas::Framing;
use linkperf_proto::Protocol;
use serde::Serialize;
use std::collections::BTreeMap;

/// The path as a user describes it: the bottleneck and the round trip.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Path {
    /// Bit rate of the bottleneck medium (framing included); None: unlimited.
    pub rate_bps: Option<f64>,
    /// Round-trip time without queueing, seconds.
    pub rtt_s: f64,
    /// IP MTU of the path.
    pub mtu: u32,
    pub framing: Framing,
    /// Independent packet loss probability (0..1), one direction.
    pub loss: f64,
    /// Bit error rate of the bottleneck.
    pub ber: f64,
    /// Host CPU service demand, microseconds per 10^6 payload bytes.
    pub cpu_us_per_mb: Option<f64>,
    /// Every per-packet processing on the path (a slow receiving or sending
    /// host, a router's forwarding): seconds per packet and per frame byte
    /// (IP + 14). Which is slowest depends on the packets' size.
    pub processing: Vec<(f64, f64)>,
}

impl Default for Path {
    fn default() -> Self {
        Path {
            rate_bps: None,
            rtt_s: 0.0,
            mtu: 1500,
            framing: Framing::Ethernet,
            loss: 0.0,
            ber: 0.0,
            cpu_us_per_mb: None,
            processing: Vec::new(),
        }
    }
}

impl Path {
    /// The bottleneck's TCP payload rate (bit/s): its rate x MSS over the
    /// bytes its framing puts on the wire for a full-size packet (MSS = MTU -
    /// 52, IPv4 and TCP with timestamps); None for an unlimited path.
    pub fn payload_rate_bps(&self) -> Option<f64> {
        let rate = self.rate_bps.filter(|r| *r > 0.0)?;
        let ip = u64::from(self.mtu);
        Some(rate * (ip - TCP_HEADERS) as f64 / self.framing.wire_bytes(ip) as f64)
    }
}

/// The congestion controls the model has a loss response for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    Reno,
    Cubic,
    /// Not loss-based (BBR): no loss bound is predicted.
    Bbr,
}

impl Congestion {
    pub fn from_name(name: &str) -> Option<Congestion> {
        match name {
            "reno" | "newreno" => Some(Congestion::Reno),
            "cubic" => Some(Congestion::Cubic),
            "bbr" | "bbr2" | "bbr3" => Some(Congestion::Bbr),
            _ => None,
        }
    }
}

/// The flow: what the test asks for (protocol, buffers, rate).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flow {
    pub protocol: Protocol,
    pub streams: u32,
    /// TCP MSS; default MTU - 52 (IPv4, TCP with timestamps).
    pub mss: Option<u32>,
    /// The exact largest window (TCP_WINDOW_CLAMP), bytes.
    pub window: Option<u64>,
    /// SO_RCVBUF / SO_SNDBUF asked for, bytes (the kernel doubles them).
    pub rcvbuf: Option<u64>,
    pub sndbuf: Option<u64>,
    pub congestion: Congestion,
    /// UDP: offered payload rate per stream (None: unlimited).
    pub udp_rate_bps: Option<f64>,
    /// UDP payload bytes per datagram.
    pub udp_length: u32,
}

impl Default for Flow {
    fn default() -> Self {
        Flow {
            protocol: Protocol::Tcp,
            streams: 1,
            mss: None,
            window: None,
            rcvbuf: None,
            sndbuf: None,
            congestion: Congestion::Cubic,
            udp_rate_bps: None,
            udp_length: 1460,
        }
    }
}

/// What the receiving and sending kernels do with a socket buffer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kernel {
    /// Share of the (doubled) receive buffer offered as window; 0: the
    /// kernel's `scaling_ratio` (Linux 6.6+), see [`scaling_ratio`].
    pub rcv_share: f64,
    /// Where the share came from, e.g. "tcp_adv_win_scale = 1".
    pub rcv_share_source: String,
    /// net.core.rmem_max / wmem_max: SO_RCVBUF / SO_SNDBUF are capped there.
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    /// Linux's smallest retransmission timeout (TCP_RTO_MIN), seconds.
    pub rto_min_s: f64,
}

impl Default for Kernel {
    /// Linux defaults: tcp_adv_win_scale = 1 (half the buffer), no caps known.
    fn default() -> Self {
        Kernel {
            rcv_share: formulas::adv_win_scale_share(1),
            rcv_share_source: "tcp_adv_win_scale = 1 (the default)".into(),
            rmem_max: None,
            wmem_max: None,
            rto_min_s: 0.2,
        }
    }
}

/// The prediction: the rate of payload a flow (all streams) should deliver,
/// the bound that sets it and every bound computed (bit/s of payload).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Payload bits per second the receiver should count.
    pub value: f64,
    /// The name of the smallest bound in `bounds`.
    pub binding: String,
    pub bounds: BTreeMap<String, f64>,
    /// Bounds listed for comparison but never binding (Mathis beside Padhye).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reference: BTreeMap<String, f64>,
    /// Packet loss per data packet, random loss and bit errors together.
    pub packet_loss: f64,
    /// Payload bytes per packet the bounds assume (MSS or UDP payload).
    pub payload_bytes: u64,
    /// The round trip the window and loss bounds use, seconds.
    pub rtt_s: f64,
}

/// A description that cannot be predicted from, as one line for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

fn bad(msg: impl Into<String>) -> ModelError {
    ModelError(msg.into())
}

/// Checks that the description can be predicted from.
pub fn validate(path: &Path, flow: &Flow) -> Result<(), ModelError> {
    if !(path.rtt_s > 0.0 && path.rtt_s.is_finite()) {
        return Err(bad(
            "rtt: the round-trip time must be above 0 (e.g. rtt=20ms); the model divides by it",
        ));
    }
    if let Some(r) = path.rate_bps {
        if !(r > 0.0 && r.is_finite()) {
            return Err(bad(
                "rate: the link rate must be above 0 (e.g. rate=40M); leave it out for an unlimited link",
            ));
        }
    }
    if !(68..=65535).contains(&path.mtu) {
        return Err(bad(format!(
            "mtu: {} is not an IPv4 MTU (68..65535)",
            path.mtu
        )));
    }
    if !(0.0..1.0).contains(&path.loss) {
        return Err(bad(
            "loss: the loss rate must be at least 0% and below 100%",
        ));
    }
    if !(0.0..1.0).contains(&path.ber) {
        return Err(bad(
            "ber: the bit error rate must be at least 0 and below 1 (e.g. ber=1e-7)",
        ));
    }
    if flow.window == Some(0) || flow.rcvbuf == Some(0) || flow.sndbuf == Some(0) {
        return Err(bad(
            "window: a window or buffer of 0 bytes carries nothing; give a size (e.g. window=64K) or leave it out",
        ));
    }
    if flow.streams == 0 {
        return Err(bad("streams: at least 1 stream"));
    }
    if let Some(mss) = flow.mss {
        if mss == 0 || mss + 40 > path.mtu {
            return Err(bad(format!(
                "mss: {mss} does not fit the MTU {} (at most MTU - 40 with IPv4 and TCP headers)",
                path.mtu
            )));
        }
    }
    if flow.protocol == Protocol::Udp && (flow.udp_length == 0 || flow.udp_length > 65507) {
        return Err(bad(format!(
            "length: {} is not a UDP payload size (1..65507)",
            flow.udp_length
        )));
    }
    if flow.udp_rate_bps.is_some_and(|r| r.is_nan() || r <= 0.0) {
        return Err(bad(
            "udp rate: the offered rate must be above 0; leave it out for as fast as the link",
        ));
    }
    if path
        .cpu_us_per_mb
        .is_some_and(|c| !(c > 0.0 && c.is_finite()))
    {
        return Err(bad("cpu: the service demand must be above 0 us/MB"));
    }
    Ok(())
}

/// Predicts the flow's payload throughput on the path.
pub fn predict(path: &Path, flow: &Flow, kernel: &Kernel) -> Result<Prediction, ModelError> {
    validate(path, flow)?;
    let prediction = match flow.protocol {
        Protocol::Tcp => tcp(path, flow, kernel),
        Protocol::Udp => udp(path, flow),
    };
    if prediction.bounds.is_empty() {
        return Err(bad(
            "nothing bounds this flow: give the link rate (rate=), a window or buffer, a loss rate or a CPU cost",
        ));
    }
    Ok(prediction)
}

/// TCP: payload per segment is the MSS; each segment is one IP packet of
/// MSS + 52 bytes (IPv4 20, TCP 20, timestamps 12).
fn tcp(path: &Path, flow: &Flow, kernel: &Kernel) -> Prediction {
    // linkperf's client sets TCP_MAXSEG to W/2 under a clamp (docs/model.md).
    let segment = flow.mss.or(flow
        .window
        .map(|w| (w / 2).max(1).min(u64::from(u32::MAX)) as u32));
    let mss = u64::from(segment.unwrap_or(path.mtu - 52).min(path.mtu - 52));
    let ip = mss + 52;
    let wire = path.framing.wire_bytes(ip);
    let n = f64::from(flow.streams);
    let p = combined_loss(path.loss, path.ber, ip);
    // Linux ACKs every second full segment: the ACK that clocks out the next
    // data leaves after two segments were serialised at the bottleneck.
    let rtt = path.rtt_s + path.rate_bps.map_or(0.0, |r| 2.0 * wire as f64 * 8.0 / r);
    let mut bounds = BTreeMap::new();
    let mut reference = BTreeMap::new();
    if let Some(rate) = path.rate_bps {
        bounds.insert("link".into(), rate * mss as f64 / wire as f64);
    }
    let window = receive_window(flow, kernel, mss).map(|w| w / mss * mss);
    if let Some(w) = window {
        bounds.insert("window".into(), n * w as f64 * 8.0 / rtt);
    }
    if let Some(s) = flow.sndbuf {
        let held = 2 * kernel.wmem_max.map_or(s, |m| s.min(m));
        bounds.insert("send_buffer".into(), n * held as f64 * 8.0 / rtt);
    }
    if p > 0.0 {
        let b = 1.0;
        let t0 = kernel.rto_min_s + rtt;
        let wmax = window.map_or(f64::INFINITY, |w| w as f64 / mss as f64);
        let (m, ms) = (mss as f64, 8.0 * n);
        let padhye = ms * formulas::padhye(m, rtt, p, b, t0, wmax);
        let mathis = ms * formulas::mathis(m, rtt, p, b);
        reference.insert("loss_mathis".into(), mathis);
        match flow.congestion {
            Congestion::Reno => {
                // Linux repairs losses with SACK and RACK-TLP, not timeouts:
                // Padhye's timeout term is listed, the SACK sawtooth binds.
                reference.insert("loss_padhye".into(), padhye);
                bounds.insert(
                    "loss_reno".into(),
                    ms * formulas::reno_sack(m, rtt, p, wmax),
                );
            }
            Congestion::Cubic => {
                let cubic = ms * formulas::cubic_window_response(m, rtt, p);
                reference.insert("loss_padhye".into(), padhye);
                reference.insert("loss_cubic_concave".into(), cubic);
                // RFC 9438 4.3: below the Reno-friendly window CUBIC follows Reno.
                bounds.insert("loss_cubic".into(), cubic.max(padhye));
            }
            Congestion::Bbr => {}
        }
    }
    cpu_bound(path, &mut bounds);
    processing_bound(path, &[ip], mss, &mut bounds);
    finish(bounds, reference, p, mss, rtt)
}

/// Linux 6.6+ `scaling_ratio`: a received segment's payload over its
/// truesize, in 256ths rounded down (TCP_RMEM_TO_WIN_SCALE = 8). The truesize
/// is that of a segment the testbed's TAP delivers, one segment per skb
/// (no GRO), as `tun_alloc_skb` builds it: a frame that fits a page with its
/// 64 bytes of headroom (NET_SKB_PAD) is copied whole into a kmalloc buffer
/// (the size class holding frame + headroom + 320 of skb_shared_info: 2048
/// for a 1514-byte frame); a larger one keeps only the headers the emulator
/// names in the virtio header (Ethernet, IPv4, TCP with timestamps: 66
/// bytes) in a 512-byte buffer and the rest in whole 4 KiB pages. Plus the
/// 256-byte struct sk_buff: 2304 bytes at MTU 1500 (160/256), 13056 at MTU
/// 9180 (3 pages: 178/256, read back here as the kernel's window_clamp).
pub fn scaling_ratio(mss: u64) -> f64 {
    ((mss * 256) / tap_truesize(mss + TCP_HEADERS + 14)) as f64 / 256.0
}

/// IPv4 + TCP with the timestamps option Linux negotiates.
const TCP_HEADERS: u64 = 52;

/// The truesize of a `frame`-byte Ethernet frame received from a TAP.
fn tap_truesize(frame: u64) -> u64 {
    const PAGE: u64 = 4096;
    const HEADROOM: u64 = 64;
    const SHARED_INFO: u64 = 320;
    const SK_BUFF: u64 = 256;
    let align = |n: u64| n.div_ceil(64) * 64;
    if frame + HEADROOM < PAGE {
        (align(frame + HEADROOM) + SHARED_INFO).next_power_of_two() + SK_BUFF
    } else {
        let headers = 14 + TCP_HEADERS;
        let head = (align(HEADROOM + headers) + SHARED_INFO).next_power_of_two();
        head + (frame - headers).div_ceil(PAGE) * PAGE + SK_BUFF
    }
}

/// The receive window in bytes: the clamp, or the share of the doubled buffer.
fn receive_window(flow: &Flow, kernel: &Kernel, mss: u64) -> Option<u64> {
    let share = if kernel.rcv_share > 0.0 {
        kernel.rcv_share
    } else {
        scaling_ratio(mss)
    };
    let from_buffer = flow.rcvbuf.map(|r| {
        let doubled = 2 * kernel.rmem_max.map_or(r, |m| r.min(m));
        (doubled as f64 * share) as u64
    });
    match (flow.window, from_buffer) {
        (Some(w), Some(b)) => Some(w.min(b)),
        (w, b) => w.or(b),
    }
}

/// UDP: each datagram is UDP payload + 8 + 20 bytes of IP (fragmented above
/// the MTU); it arrives only if all its fragments do.
fn udp(path: &Path, flow: &Flow) -> Prediction {
    let payload = u64::from(flow.udp_length);
    let fragments = formulas::ipv4_fragments(payload + 8, u64::from(path.mtu));
    let wire: u64 = fragments.iter().map(|&f| path.framing.wire_bytes(f)).sum();
    let arrive: f64 = fragments
        .iter()
        .map(|&f| 1.0 - combined_loss(path.loss, path.ber, f))
        .product();
    let n = f64::from(flow.streams);
    let mut bounds = BTreeMap::new();
    if let Some(rate) = path.rate_bps {
        bounds.insert("link".into(), rate * payload as f64 / wire as f64 * arrive);
    }
    if let Some(offered) = flow.udp_rate_bps {
        bounds.insert("offered".into(), n * offered * arrive);
    }
    cpu_bound(path, &mut bounds);
    // One processor for all streams: the aggregate, of what arrives.
    processing_bound(path, &fragments, payload, &mut bounds);
    if let Some(p) = bounds.get_mut("processing") {
        *p *= arrive;
    }
    finish(bounds, BTreeMap::new(), 1.0 - arrive, payload, path.rtt_s)
}

fn cpu_bound(path: &Path, bounds: &mut BTreeMap<String, f64>) {
    if let Some(us) = path.cpu_us_per_mb {
        // 1e6 us of CPU per second at `us` per 1e6 bytes.
        bounds.insert("cpu".into(), 1e6 / us * 8e6);
    }
}

/// One packet (IP packets `packets`, e.g. a datagram's fragments) at a time
/// through the slowest processing on the path for packets of these sizes:
/// `payload` bytes per `per_packet + per_byte x (IP + 14)` for each packet.
fn processing_bound(
    path: &Path,
    packets: &[u64],
    payload: u64,
    bounds: &mut BTreeMap<String, f64>,
) {
    let seconds = (path.processing.iter())
        .map(|(per_packet, per_byte)| {
            (packets.iter())
                .map(|&ip| per_packet + per_byte * (ip + 14) as f64)
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    if seconds > 0.0 {
        bounds.insert("processing".into(), payload as f64 * 8.0 / seconds);
    }
}

/// Random loss and bit errors, independent: a packet survives both.
fn combined_loss(loss: f64, ber: f64, ip: u64) -> f64 {
    let hit = formulas::frame_loss_from_ber(ber, ip + formulas::BER_HEADER_BYTES);
    1.0 - (1.0 - loss) * (1.0 - hit)
}

fn finish(
    bounds: BTreeMap<String, f64>,
    reference: BTreeMap<String, f64>,
    packet_loss: f64,
    payload_bytes: u64,
    rtt_s: f64,
) -> Prediction {
    let (binding, value) = bounds
        .iter()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map_or((String::new(), 0.0), |(k, v)| (k.clone(), *v));
    Prediction {
        value,
        binding,
        bounds,
        reference,
        packet_loss,
        payload_bytes,
        rtt_s,
    }
}

#[cfg(test)]
mod tests;
