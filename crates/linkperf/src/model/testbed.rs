//! The path between two hosts of a testbed topology (or one named link), as
//! the model's [`Path`]: the bottleneck is the link direction with the lowest
//! payload rate after its framing, the round trip the sum of both directions'
//! delays over every link crossed, losses combine, the MTU is the smallest.

use super::formulas::Framing;
use super::{ModelError, Path};
use linkperf_testbed::params::DirectionParams;
use linkperf_testbed::topology::Link;
use linkperf_testbed::Topology;

/// One link crossed, in the direction the data goes.
struct Hop<'a> {
    link: &'a Link,
    forward: bool,
}

impl Hop<'_> {
    fn data(&self) -> &DirectionParams {
        if self.forward {
            &self.link.a_to_b
        } else {
            &self.link.b_to_a
        }
    }
}

fn framing(f: linkperf_testbed::framing::Framing) -> Framing {
    match f {
        linkperf_testbed::framing::Framing::None => Framing::None,
        linkperf_testbed::framing::Framing::Ethernet => Framing::Ethernet,
        linkperf_testbed::framing::Framing::AtmAal5 => Framing::AtmAal5,
    }
}

/// The rate a direction serialises at (a trace's mean), None if unlimited.
fn line_rate(d: &DirectionParams) -> Option<f64> {
    match &d.trace {
        Some(t) => Some(t.mean_rate_bps),
        None => (d.rate_bps > 0).then_some(d.rate_bps as f64),
    }
}

/// Bytes of one ATM cell on the wire.
const ATM_CELL: u64 = 53;

/// A cell-switched direction's peak cell rate per VC (`pcr`), cells/s: set
/// only where the emulator switches cells (AAL5 framing and a rate).
fn vc_cell_rate(d: &DirectionParams) -> Option<f64> {
    let cells = d.pcr > 0
        && d.trace.is_none()
        && d.rate_bps > 0
        && d.framing == linkperf_testbed::framing::Framing::AtmAal5;
    cells.then_some(d.pcr as f64)
}

/// The rate one flow can have through a direction: the line's, or its VC's
/// peak cell rate in wire bits when that is lower.
fn rate(d: &DirectionParams) -> Option<f64> {
    let line = line_rate(d)?;
    Some(vc_cell_rate(d).map_or(line, |pcr| line.min(pcr * (ATM_CELL * 8) as f64)))
}

/// The bottleneck of `hops`: least payload per second for a full-size packet.
fn bottleneck<'h, 'a>(hops: &'h [Hop<'a>]) -> Option<(&'h Hop<'a>, f64)> {
    let ip = u64::from(hops.iter().map(|h| h.link.mtu).min().unwrap_or(1500));
    hops.iter()
        .filter_map(|h| rate(h.data()).map(|r| (h, r)))
        .min_by(|(a, ra), (b, rb)| {
            let pa = ra / framing(a.data().framing).wire_bytes(ip) as f64;
            let pb = rb / framing(b.data().framing).wire_bytes(ip) as f64;
            pa.total_cmp(&pb)
        })
}

fn path_of(hops: &[Hop]) -> Path {
    let mtu = hops.iter().map(|h| h.link.mtu).min().unwrap_or(1500);
    let bottleneck = bottleneck(hops);
    let survive = |f: &dyn Fn(&DirectionParams) -> f64| {
        1.0 - hops.iter().map(|h| 1.0 - f(h.data())).product::<f64>()
    };
    // A round trip crosses every link both ways, and each receiving end's
    // per-packet processing once each way.
    let delay_ns: u64 = hops
        .iter()
        .map(|h| {
            let (ab, ba) = (&h.link.a_to_b, &h.link.b_to_a);
            ab.delay_ns + ba.delay_ns + ab.per_packet_ns + ba.per_packet_ns
        })
        .sum();
    Path {
        rate_bps: bottleneck.map(|(_, r)| r),
        rtt_s: delay_ns as f64 / 1e9,
        mtu,
        framing: bottleneck.map_or(Framing::Ethernet, |(h, _)| framing(h.data().framing)),
        loss: survive(&|d| d.loss),
        ber: survive(&|d| d.ber),
        cpu_us_per_mb: None,
        // Every receiving end's processing; the slowest for the flow's
        // packets binds (in series, each passes what it can, one at a time).
        processing: hops
            .iter()
            .map(|h| {
                let d = h.data();
                (d.per_packet_ns as f64 / 1e9, d.per_byte_ns as f64 / 1e9)
            })
            .filter(|&(p, b)| p + b > 0.0)
            .collect(),
    }
}

/// The named link (`NAME`, `a-b`, optionally `.a_to_b` / `.b_to_a`; a_to_b
/// when no direction is given).
pub fn link_path(topology: &Topology, name: &str) -> Result<Path, ModelError> {
    let (index, [a_to_b, b_to_a]) =
        linkperf_testbed::topology::resolve_link(&topology.links, name).map_err(ModelError)?;
    let forward = a_to_b || !b_to_a;
    Ok(path_of(&[Hop {
        link: &topology.links[index],
        forward,
    }]))
}

/// The links from host (or switch) `from` to `to` (links form a tree).
pub fn host_path(topology: &Topology, from: &str, to: &str) -> Result<Path, ModelError> {
    let known = |n: &str| topology.host(n).is_some() || topology.is_switch(n);
    for n in [from, to] {
        if !known(n) {
            return Err(ModelError(format!(
                "testbed {}: no host '{n}' (hosts: {})",
                topology.name,
                topology
                    .hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let mut hops = Vec::new();
    if from != to && !walk(topology, from, to, None, &mut hops) {
        return Err(ModelError(format!(
            "testbed {}: no path from {from} to {to}",
            topology.name
        )));
    }
    let mut path = path_of(&hops);
    // A sending host with a send cost spends it on every packet, as a slow receiving end
    // does.
    let sending = topology.host(from).and_then(|h| h.send_cost);
    if let Some(cost) = sending {
        (path.processing).push((
            cost.per_packet_ns as f64 / 1e9,
            cost.per_byte_ns as f64 / 1e9,
        ));
    }
    // Links without delay still take a round trip: at least a full-size packet's time on
    // the slowest line and at the sending host.
    if path.rtt_s <= 0.0 {
        let line = path.rate_bps.map_or(0.0, |r| f64::from(path.mtu) * 8.0 / r);
        let host = sending.map_or(0.0, |c| c.seconds(u64::from(path.mtu) + 14));
        path.rtt_s = (line + host).max(1e-6);
    }
    Ok(path)
}

/// Something on a path that serves a limited amount per second, which every
/// flow crossing it shares: a link direction's line, one ATM VC's peak cell
/// rate, a router's one processor, or the processing at a receiving end.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// A link direction's serialiser: (link index, a_to_b); units: wire bits.
    Line(usize, bool),
    /// One VC on a cell-switched link direction (`pcr`): the direction and
    /// the frame's sending and receiving nodes (hosts or routers); units: cells.
    Vc(usize, bool, String, String),
    /// A router's processor, fed by all its links; units: seconds.
    Router(String),
    /// The processing at the receiving end of one link direction (a slow
    /// host or switch); units: seconds.
    Receiver(usize, bool),
    /// A host's own send path (its `send_per_packet` / `send_per_byte`),
    /// shared by everything it sends; units: seconds.
    Sender(String),
}

/// One resource a flow uses: the units it serves per second and the units
/// each payload bit of the flow takes (its framing, cells or processing).
#[derive(Debug, Clone, PartialEq)]
pub struct Use {
    pub resource: Resource,
    pub capacity: f64,
    pub per_bit: f64,
}

/// Every resource the path from `from` to `to` takes for a flow whose
/// `payload` bytes travel as IP packets of the sizes in `packets` (a TCP
/// segment, or a datagram's fragments). None when there is no path.
pub fn host_uses(
    topology: &Topology,
    from: &str,
    to: &str,
    packets: &[u64],
    payload: u64,
) -> Option<Vec<Use>> {
    let mut hops = Vec::new();
    if from == to || payload == 0 || !walk(topology, from, to, None, &mut hops) {
        return None;
    }
    let bits = payload as f64 * 8.0;
    // Node i is where hop i starts; the last is `to`. A frame's VC is between
    // the hosts or routers at the ends of its segment (switches pass it on).
    let nodes: Vec<&str> = hops
        .iter()
        .map(|h| h.link.ends[usize::from(!h.forward)].as_str())
        .chain([to])
        .collect();
    let layer3 = |i: usize| !topology.is_switch(nodes[i]);
    let mut uses = Vec::new();
    for (i, hop) in hops.iter().enumerate() {
        let d = hop.data();
        let index = topology
            .links
            .iter()
            .position(|l| std::ptr::eq(l, hop.link))?;
        let f = framing(d.framing);
        let wire: u64 = packets.iter().map(|&ip| f.wire_bytes(ip)).sum();
        if let Some(r) = line_rate(d) {
            uses.push(Use {
                resource: Resource::Line(index, hop.forward),
                capacity: r,
                per_bit: wire as f64 * 8.0 / bits,
            });
        }
        if let Some(pcr) = vc_cell_rate(d) {
            let src = (0..=i).rev().find(|&j| layer3(j)).unwrap_or(0);
            let dst = (i + 1..nodes.len()).find(|&j| layer3(j)).unwrap_or(i + 1);
            uses.push(Use {
                resource: Resource::Vc(
                    index,
                    hop.forward,
                    nodes[src].to_string(),
                    nodes[dst].to_string(),
                ),
                capacity: pcr,
                per_bit: (wire / ATM_CELL) as f64 / bits,
            });
        }
        let seconds: f64 = packets
            .iter()
            .map(|&ip| (d.per_packet_ns as f64 + d.per_byte_ns as f64 * (ip + 14) as f64) / 1e9)
            .sum();
        if seconds > 0.0 {
            let at = nodes[i + 1];
            let resource = match topology.router(at) {
                Some(_) => Resource::Router(at.to_string()),
                None => Resource::Receiver(index, hop.forward),
            };
            uses.push(Use {
                resource,
                capacity: 1.0,
                per_bit: seconds / bits,
            });
        }
    }
    if let Some(cost) = topology.host(from).and_then(|h| h.send_cost) {
        let seconds: f64 = packets.iter().map(|&ip| cost.seconds(ip + 14)).sum();
        uses.push(Use {
            resource: Resource::Sender(from.to_string()),
            capacity: 1.0,
            per_bit: seconds / bits,
        });
    }
    Some(uses)
}

/// Depth-first search on the tree of links; `hops` holds the path on success.
fn walk<'a>(
    topology: &'a Topology,
    at: &str,
    to: &str,
    came_by: Option<usize>,
    hops: &mut Vec<Hop<'a>>,
) -> bool {
    for (i, link) in topology.links.iter().enumerate() {
        if Some(i) == came_by {
            continue;
        }
        let forward = link.ends[0] == at;
        if !forward && link.ends[1] != at {
            continue;
        }
        let next = &link.ends[usize::from(forward)];
        hops.push(Hop { link, forward });
        if next == to || walk(topology, next, to, Some(i), hops) {
            return true;
        }
        hops.pop();
    }
    false
}

/// The testbed's only path when it has exactly two hosts, else the one link.
pub fn default_path(topology: &Topology) -> Result<Path, ModelError> {
    match (topology.hosts.as_slice(), topology.links.as_slice()) {
        ([a, b], _) => host_path(topology, &a.name, &b.name),
        (_, [link]) => link_path(topology, &link.label()),
        _ => Err(ModelError(format!(
            "testbed {}: {} hosts and {} links: say which path with --link NAME or --from A --to B",
            topology.name,
            topology.hosts.len(),
            topology.links.len()
        ))),
    }
}

/// The path a topology file describes: `link` if named, else the path
/// `from` -> `to` if both are named, else [`default_path`].
pub fn from_file(
    file: &std::path::Path,
    link: Option<&str>,
    ends: Option<(&str, &str)>,
) -> Result<Path, ModelError> {
    let topology = Topology::from_file(file).map_err(|e| ModelError(e.to_string()))?;
    match (link, ends) {
        (Some(name), _) => link_path(&topology, name),
        (None, Some((from, to))) => host_path(&topology, from, to),
        (None, None) => default_path(&topology),
    }
}

/// The host whose IPv4 or IPv6 address is `address`.
pub fn host_by_address<'a>(topology: &'a Topology, address: &str) -> Option<&'a str> {
    let ip: std::net::IpAddr = address.parse().ok()?;
    topology
        .hosts
        .iter()
        .find(|h| std::net::IpAddr::V4(h.ipv4) == ip || std::net::IpAddr::V6(h.ipv6) == ip)
        .map(|h| h.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
name = "m"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "s"
[[link]]
name = "la"
ends = ["a", "s"]
rate = "100M"
delay = "2ms"
[[link]]
name = "wan"
ends = ["s", "b"]
rate = "10M"
delay = "8ms"
framing = "atm-aal5"
mtu = 9180
[link.a_to_b]
loss = "1%"
[[link]]
ends = ["c", "s"]
delay = "1ms"
"#;

    #[test]
    fn a_path_takes_the_slowest_link_and_sums_the_delays() {
        let t = Topology::from_toml_str("m", FILE).unwrap();
        let p = host_path(&t, "a", "b").unwrap();
        assert_eq!(p.rate_bps, Some(10e6));
        assert_eq!(p.framing, Framing::AtmAal5);
        // 2 x 2 ms + 2 x 8 ms.
        assert!((p.rtt_s - 0.020).abs() < 1e-12, "{}", p.rtt_s);
        assert_eq!(p.mtu, 1500);
        assert!((p.loss - 0.01).abs() < 1e-12);
        // The way back crosses wan b->s: no loss that way.
        assert_eq!(host_path(&t, "b", "a").unwrap().loss, 0.0);
        // c's link is unlimited: the path from c to a is limited by la.
        assert_eq!(host_path(&t, "c", "a").unwrap().rate_bps, Some(100e6));
        let wan = link_path(&t, "wan").unwrap();
        assert_eq!(wan.mtu, 9180);
        assert!(link_path(&t, "nope").is_err());
        assert!(host_path(&t, "a", "zz").is_err());
        assert!(default_path(&t).is_err());
        assert_eq!(host_by_address(&t, "10.50.0.2"), Some("b"));
    }

    /// A sending host's send cost is part of its path's processing (the slowest element for
    /// the flow's packets binds), and a resource of its own (shared by its flows).
    #[test]
    fn a_sending_host_s_cost_bounds_its_path() {
        let file = FILE.replace(
            "[[host]]\nname = \"a\"\n",
            "[[host]]\nname = \"a\"\nsend_per_packet = \"258us\"\nsend_per_byte = \"46ns\"\n",
        );
        let t = Topology::from_toml_str("m", &file).unwrap();
        assert_eq!(
            host_path(&t, "a", "b").unwrap().processing,
            vec![(258e-6, 46e-9)]
        );
        assert!(host_path(&t, "b", "a").unwrap().processing.is_empty());
        let uses = host_uses(&t, "a", "b", &[1500], 1472).unwrap();
        let own = uses
            .iter()
            .find(|u| u.resource == Resource::Sender("a".into()))
            .expect("a's own send path");
        let seconds = 258e-6 + 46e-9 * 1514.0;
        assert!((own.per_bit - seconds / (1472.0 * 8.0)).abs() < 1e-15);
    }
}
