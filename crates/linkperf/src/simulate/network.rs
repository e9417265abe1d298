//! The network the scenario simulates and the flows on it: one path as a
//! chain of nodes, or the union of several paths through one topology (a
//! campaign phase's flows, which share the links they have in common), each
//! topology link once; and the flow groups (one per measured test, with its
//! own congestion control, clamp, buffers and segment) between its nodes.
//! Renders the scenario's `--nodes`, `--links` and `--flows` values.

use super::path::{Hop, Route};
use linkperf_testbed::Topology;

/// One link of the network between nodes `a` and `b`; `hop.forward` is the
/// direction a -> b.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub a: usize,
    pub b: usize,
    pub hop: Hop,
}

/// The nodes (by name) and links the scenario builds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Network {
    pub nodes: Vec<String>,
    pub links: Vec<Link>,
}

/// One group of bulk TCP flows (a measured test's streams).
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub src: usize,
    pub dst: usize,
    pub streams: u32,
    /// ns-3's TCP model (e.g. `ns3::TcpCubic`).
    pub model: &'static str,
    /// Congestion window clamp, segments (0: none).
    pub cwnd_clamp: u32,
    pub rcvbuf: u64,
    pub sndbuf: u64,
    pub segment: u64,
    pub stop_s: f64,
}

impl Network {
    /// The node of `name`, added if new.
    fn node(&mut self, name: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| {
                self.nodes.push(name.to_string());
                self.nodes.len() - 1
            })
    }

    /// One path alone: node i to node i + 1 for hop i, a -> b the data's way
    /// (so a link schedule's step on hop i is the scenario's link i). The
    /// sender is node 0, the receiver the last.
    pub fn chain(route: &Route) -> Network {
        let nodes = (0..=route.hops.len())
            .map(|i| match i {
                0 => route.from.clone(),
                i if i == route.hops.len() => route.to.clone(),
                i => format!("hop{i}"),
            })
            .collect();
        let links = route
            .hops
            .iter()
            .enumerate()
            .map(|(i, hop)| Link {
                a: i,
                b: i + 1,
                hop: hop.clone(),
            })
            .collect();
        Network { nodes, links }
    }

    /// The paths of `routes` through `topology` together: each topology link
    /// they cross once, a -> b as the topology has it, its ends the topology's
    /// nodes. Returns the network and each route's (sender, receiver) nodes.
    pub fn of_routes(topology: &Topology, routes: &[&Route]) -> (Network, Vec<(usize, usize)>) {
        let mut net = Network::default();
        let mut ends = Vec::new();
        for route in routes {
            for hop in &route.hops {
                if net.links.iter().any(|l| l.hop.index == hop.index) {
                    continue;
                }
                let [a, b] = &topology.links[hop.index].ends;
                let (a, b) = (net.node(a), net.node(b));
                let mut oriented = hop.clone();
                if !hop.data_a_to_b {
                    std::mem::swap(&mut oriented.forward, &mut oriented.backward);
                }
                net.links.push(Link {
                    a,
                    b,
                    hop: oriented,
                });
            }
            ends.push((net.node(&route.from), net.node(&route.to)));
        }
        (net, ends)
    }

    /// The scenario's `--links` value.
    pub fn links_arg(&self) -> String {
        let links: Vec<String> = self
            .links
            .iter()
            .map(|l| {
                let h = &l.hop;
                format!(
                    "{}:{}:{}:{}:{}:{}:{}:{}:{}:{}",
                    l.a,
                    l.b,
                    h.forward.ns3_rate_bps,
                    h.backward.ns3_rate_bps,
                    h.delay_s,
                    h.forward.queue_packets,
                    h.backward.queue_packets,
                    h.forward.loss,
                    h.backward.loss,
                    h.mtu
                )
            })
            .collect();
        links.join(",")
    }
}

/// The scenario's `--flows` value.
pub fn flows_arg<'a>(groups: impl IntoIterator<Item = &'a Group>) -> String {
    let all: Vec<String> = groups
        .into_iter()
        .map(|g| {
            format!(
                "{}:{}:{}:{}:{}:{}:{}:{}:{}",
                g.src,
                g.dst,
                g.streams,
                // The scenario splits on ':'; it puts the namespace back.
                g.model.trim_start_matches("ns3::"),
                g.cwnd_clamp,
                g.rcvbuf,
                g.sndbuf,
                g.segment,
                g.stop_s
            )
        })
        .collect();
    all.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::path;
    use std::path::Path;

    /// a1 and a2 on switch s1, b1 and b2 on s2, s1 -> s2 the 20M direction
    /// of the shared link (s2 -> s1: 5M).
    fn topology() -> Topology {
        let host =
            |n: &str, a: u8| format!("[[host]]\nname = \"{n}\"\naddress = \"10.9.0.{a}/24\"\n");
        let link = |n: &str, a: &str, b: &str| {
            format!("[[link]]\nname = \"{n}\"\nends = [\"{a}\", \"{b}\"]\ndelay = \"1ms\"\n")
        };
        let text = format!(
            "name = \"net\"\n{}{}{}{}[[switch]]\nname = \"s1\"\n[[switch]]\nname = \"s2\"\n{}{}{}rate = \"20M\"\n[link.b_to_a]\nrate = \"5M\"\n{}{}",
            host("a1", 1),
            host("a2", 2),
            host("b1", 3),
            host("b2", 4),
            link("la1", "a1", "s1"),
            link("la2", "a2", "s1"),
            link("wan", "s1", "s2"),
            link("lb1", "s2", "b1"),
            link("lb2", "b2", "s2"),
        );
        let dir = std::env::temp_dir().join(format!("lp-simnet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("net.toml");
        std::fs::write(&file, text).unwrap();
        Topology::from_file(Path::new(&file)).unwrap()
    }

    #[test]
    fn paths_through_one_link_share_it_oriented_as_the_topology() {
        let t = topology();
        let there = path::route(&t, "a1", "b1").unwrap();
        let back = path::route(&t, "b2", "a2").unwrap();
        let (net, ends) = Network::of_routes(&t, &[&there, &back]);
        // Five topology links, each once; six nodes (hosts and switches).
        assert_eq!(net.links.len(), 5, "{net:?}");
        assert_eq!(net.nodes.len(), 6, "{:?}", net.nodes);
        let name = |i: usize| net.nodes[i].as_str();
        assert_eq!((name(ends[0].0), name(ends[0].1)), ("a1", "b1"));
        assert_eq!((name(ends[1].0), name(ends[1].1)), ("b2", "a2"));
        let wan: Vec<&Link> = net.links.iter().filter(|l| l.hop.link == "wan").collect();
        assert_eq!(wan.len(), 1);
        let wan = wan[0];
        assert_eq!((name(wan.a), name(wan.b)), ("s1", "s2"));
        assert_eq!(wan.hop.forward.rate_bps, 20_000_000);
        assert_eq!(wan.hop.backward.rate_bps, 5_000_000);
        // b2 -> s2 is the topology's a -> b: the reverse flow entered it that way.
        let lb2 = net.links.iter().find(|l| l.hop.link == "lb2").unwrap();
        assert_eq!((name(lb2.a), name(lb2.b)), ("b2", "s2"));
        let arg = net.links_arg();
        assert_eq!(arg.split(',').count(), 5);
        assert!(arg.split(',').all(|l| l.split(':').count() == 10), "{arg}");
    }

    #[test]
    fn a_path_alone_is_a_chain_from_its_sender() {
        let t = topology();
        let back = path::route(&t, "b2", "a2").unwrap();
        let net = Network::chain(&back);
        assert_eq!(net.nodes.first().map(String::as_str), Some("b2"));
        assert_eq!(net.nodes.last().map(String::as_str), Some("a2"));
        let pairs: Vec<(usize, usize)> = net.links.iter().map(|l| (l.a, l.b)).collect();
        assert_eq!(pairs, [(0, 1), (1, 2), (2, 3)]);
        // The data's direction of the wan link is its 5M one.
        assert_eq!(net.links[1].hop.forward.rate_bps, 5_000_000);
    }

    #[test]
    fn flow_groups_name_the_model_without_its_namespace() {
        let g = Group {
            src: 0,
            dst: 3,
            streams: 2,
            model: "ns3::TcpCubic",
            cwnd_clamp: 0,
            rcvbuf: 3 << 20,
            sndbuf: 4 << 20,
            segment: 1448,
            stop_s: 4.0,
        };
        assert_eq!(
            flows_arg([&g, &g]),
            "0:3:2:TcpCubic:0:3145728:4194304:1448:4,0:3:2:TcpCubic:0:3145728:4194304:1448:4"
        );
    }
}
