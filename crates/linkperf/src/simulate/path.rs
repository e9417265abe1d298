//! The links between two hosts of a testbed topology as the scenario's hops:
//! one point-to-point link per topology link crossed, its two directions'
//! rates, queues and losses, one delay (the mean of the two, so the round trip
//! is kept) and the link's MTU. Elements the scenario does not model are
//! refused by name (docs/simulate.md lists what is and is not modelled).

use super::spec::{SimError, SimSpec};
use crate::model::formulas::{frame_loss_from_ber, BER_HEADER_BYTES};
use linkperf_testbed::params::DirectionParams;
use linkperf_testbed::Topology;

/// ns-3's point-to-point device charges each IP packet its 2-byte PPP header.
const NS3_LINK_HEADER: u64 = 2;
/// Packets a queue without any limit holds (ns-3 needs a number).
const UNLIMITED_QUEUE: u64 = 1_000_000;

/// One direction of one hop, in the scenario's units.
#[derive(Debug, Clone, PartialEq)]
pub struct Direction {
    /// bit/s as ns-3 charges packets (0: unlimited), such that a full-size
    /// packet takes as long as in the emulator with its framing.
    pub ns3_rate_bps: f64,
    /// The rate the topology gives (bit/s, 0: unlimited).
    pub rate_bps: u64,
    pub queue_packets: u64,
    /// Per packet: the loss and the bit errors of a full-size frame.
    pub loss: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hop {
    pub link: String,
    /// The topology link's index, and whether the data crosses it a -> b.
    pub index: usize,
    pub data_a_to_b: bool,
    pub forward: Direction,
    pub backward: Direction,
    pub delay_s: f64,
    pub mtu: u32,
}

/// The path the simulation models.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub testbed: String,
    pub from: String,
    pub to: String,
    pub hops: Vec<Hop>,
    /// The sending host's `cwnd_clamp` in the topology, segments.
    pub cwnd_clamp: Option<u32>,
}

impl Route {
    /// The TCP segment of the path's smallest MTU (IPv4, TCP and timestamps
    /// off it, as Linux).
    pub fn segment(&self) -> u64 {
        u64::from(self.hops.iter().map(|h| h.mtu).min().unwrap_or(1500)) - 52
    }

    /// Round trip of propagation delays, seconds.
    pub fn rtt_s(&self) -> f64 {
        self.hops.iter().map(|h| 2.0 * h.delay_s).sum()
    }

    /// The lowest configured rate on the data's way (bit/s), if any.
    pub fn bottleneck_bps(&self) -> Option<u64> {
        self.hops
            .iter()
            .map(|h| h.forward.rate_bps)
            .filter(|&r| r > 0)
            .min()
    }

    /// The TCP payload rate of the slowest hop on the data's way (bit/s):
    /// its rate x MSS over the wire bytes of a full-size packet, which is
    /// ns-3's rate x MSS / (MTU + 2); None when no hop has a rate.
    pub fn payload_bps(&self) -> Option<f64> {
        let mss = f64::from(self.hops.iter().map(|h| h.mtu).min()? - 52);
        self.hops
            .iter()
            .filter(|h| h.forward.rate_bps > 0)
            .map(|h| h.forward.ns3_rate_bps * mss / (f64::from(h.mtu) + NS3_LINK_HEADER as f64))
            .min_by(f64::total_cmp)
    }
}

/// The first element of a direction the scenario does not model.
pub(super) fn unmodelled(d: &DirectionParams) -> Option<&'static str> {
    [
        (d.trace.is_some(), "trace"),
        (d.gilbert.is_some(), "gilbert"),
        (d.jitter_ns > 0, "jitter"),
        (d.circuit_setup_ns > 0, "circuit_setup"),
        (d.per_packet_ns > 0, "per_packet"),
        (d.per_byte_ns > 0, "per_byte"),
    ]
    .into_iter()
    .find(|(set, _)| *set)
    .map(|(_, name)| name)
}

pub(super) fn direction(d: &DirectionParams, mtu: u32) -> Direction {
    let ip = u64::from(mtu);
    let wire = d.framing.wire_bytes(ip) as f64;
    let frame = ip + 14;
    let queue = [
        d.queue_packets.filter(|&p| p > 0),
        d.queue_bytes.filter(|&b| b > 0).map(|b| (b / frame).max(1)),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(UNLIMITED_QUEUE);
    let ber_loss = frame_loss_from_ber(d.ber, ip + BER_HEADER_BYTES);
    Direction {
        ns3_rate_bps: d.rate_bps as f64 * (ip + NS3_LINK_HEADER) as f64 / wire,
        rate_bps: d.rate_bps,
        queue_packets: queue,
        loss: 1.0 - (1.0 - d.loss) * (1.0 - ber_loss),
    }
}

/// The route from `from` to `to` through `topology` (its link schedule is
/// [`super::schedule`]'s business).
pub fn route(topology: &Topology, from: &str, to: &str) -> Result<Route, SimError> {
    let name = &topology.name;
    for h in [from, to] {
        if topology.host(h).is_none() {
            let hosts: Vec<&str> = topology.hosts.iter().map(|h| h.name.as_str()).collect();
            return Err(SimError::usage(format!(
                "testbed {name}: no host '{h}' (hosts: {})",
                hosts.join(", ")
            )));
        }
    }
    // A host's own send cost is the testbed's (a qdisc on the host), not the scenario's.
    if let Some(h) = [from, to]
        .into_iter()
        .find(|h| topology.host(h).is_some_and(|h| h.send_cost.is_some()))
    {
        return Err(SimError::usage(format!(
            "testbed {name}: host {h} sets send_per_packet/send_per_byte, which the ns-3 scenario does not model"
        )));
    }
    // To the destination's first address (its first link), as the testbed routes it.
    let last = topology
        .links
        .iter()
        .position(|l| l.ends.iter().any(|e| e == to));
    let links = last
        .and_then(|i| linkperf_testbed::topology::path_to(topology, from, to, i))
        .filter(|l| !l.is_empty())
        .ok_or_else(|| SimError::usage(format!("testbed {name}: no path from {from} to {to}")))?;
    let mut hops = Vec::new();
    for (index, entered) in links {
        let link = &topology.links[index];
        let forward = link.ends[1] == entered;
        let (data, acks) = if forward {
            (&link.a_to_b, &link.b_to_a)
        } else {
            (&link.b_to_a, &link.a_to_b)
        };
        if let Some(key) = unmodelled(data).or(unmodelled(acks)) {
            return Err(SimError::usage(format!(
                "testbed {name}: link {} sets {key}, which the ns-3 scenario does not model (it models rate, delay, queue, queue_packets, loss, ber, mtu, framing)",
                link.label()
            )));
        }
        hops.push(Hop {
            link: link.label(),
            index,
            data_a_to_b: forward,
            forward: direction(data, link.mtu),
            backward: direction(acks, link.mtu),
            delay_s: (data.delay_ns + acks.delay_ns) as f64 / 2e9,
            mtu: link.mtu,
        });
    }
    Ok(Route {
        testbed: name.clone(),
        from: from.into(),
        to: to.into(),
        hops,
        cwnd_clamp: topology.host(from).and_then(|h| h.cwnd_clamp),
    })
}

/// Reads the topology file and takes the path the spec names.
pub fn from_file(
    file: &std::path::Path,
    ends: Option<&(String, String)>,
    reverse: bool,
) -> Result<Route, SimError> {
    load(file, ends, reverse).map(|(_, route)| route)
}

/// The topology file and the path the spec names.
pub fn load(
    file: &std::path::Path,
    ends: Option<&(String, String)>,
    reverse: bool,
) -> Result<(Topology, Route), SimError> {
    let topology = Topology::from_file(file).map_err(|e| SimError::usage(e.to_string()))?;
    let (from, to) = match (ends, topology.hosts.as_slice()) {
        (Some((f, t)), _) => (f.clone(), t.clone()),
        (None, [a, b]) => (a.name.clone(), b.name.clone()),
        (None, hosts) => {
            return Err(SimError::usage(format!(
                "testbed {}: {} hosts: say which path with --from HOST --to HOST",
                topology.name,
                hosts.len()
            )))
        }
    };
    let (from, to) = if reverse { (to, from) } else { (from, to) };
    let route = route(&topology, &from, &to)?;
    Ok((topology, route))
}

/// The kernel's largest socket buffer of a tcp_rmem/tcp_wmem file.
fn kernel_max(file: &str, default: u64) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|s| s.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(default)
}

/// The scenario's receive and send buffers: `--window-clamp` exactly, `-w`
/// as the window Linux offers for it (about the value asked), else the
/// windows Linux's autotuning reaches (half the largest tcp_rmem, as the
/// kernel keeps half for overhead; the largest tcp_wmem).
pub fn buffers(spec: &SimSpec) -> (u64, u64) {
    let rmem = kernel_max("/proc/sys/net/ipv4/tcp_rmem", 6 << 20);
    let wmem = kernel_max("/proc/sys/net/ipv4/tcp_wmem", 4 << 20);
    let rcv = spec.window_clamp.or(spec.window).unwrap_or(rmem / 2);
    let snd = spec.window.unwrap_or(wmem).max(rcv);
    (rcv, snd)
}
