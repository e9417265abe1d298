//! Static routes through `[[router]]`s and between multi-homed hosts. Every address of
//! every host (one per interface) is reached over the shortest path to the link it sits on
//! (`topology::path_to`: breadth-first by hop count, ties to the earliest links in the
//! file): a host reaches an address beyond a router through the first router on that path
//! (its interface on the host's segment), a multi-homed host sends straight out of the
//! interface the path starts from, and a router forwards either straight onto the far
//! host's segment or to the next router on the path. Everything is written as `ip` batch
//! lines with permanent neighbour entries, so no ARP or neighbour discovery crosses the
//! emulated links, as on a segment without routers.

use crate::state::Plan;
use crate::topology::{path_to, Hop, Host, HostInterface, Router, RouterInterface, Topology};

/// The first router the path enters, and its interface on the link it enters by.
fn first_router<'t>(topo: &'t Topology, hops: &[Hop]) -> Option<(&'t str, &'t RouterInterface)> {
    hops.iter().find_map(|(link, node)| {
        let r = topo.router(node)?;
        let iface = r.interfaces.iter().find(|i| i.link == *link)?;
        Some((r.name.as_str(), iface))
    })
}

fn neighbour(addrs: [String; 2], mac: &str, device: &str) -> Vec<String> {
    addrs
        .into_iter()
        .map(|a| format!("neigh replace {a} lladdr {mac} dev {device} nud permanent"))
        .collect()
}

/// The MAC of a router interface (its end of that link).
fn interface_mac(plan: &Plan, router: &str, iface: &RouterInterface) -> Option<String> {
    plan.end_at(iface.link, router)?.mac.clone()
}

/// Every (host, interface) of the topology, the host's first interface first.
fn host_interfaces(topo: &Topology) -> impl Iterator<Item = (&Host, &HostInterface)> {
    topo.hosts
        .iter()
        .flat_map(|h| h.interfaces.iter().map(move |i| (h, i)))
}

fn addresses(i: &HostInterface) -> [String; 2] {
    [i.ipv4.to_string(), i.ipv6.to_string()]
}

/// The host interfaces on the segment link `link` leads to from `node`: its far end if
/// that is a host, or every host beyond the switches behind it (never past a router).
fn segment(topo: &Topology, link: usize, node: &str) -> Vec<(String, usize)> {
    let l = &topo.links[link];
    let far = if l.ends[0] == node {
        &l.ends[1]
    } else {
        &l.ends[0]
    };
    let mut found = Vec::new();
    let mut seen = vec![far.clone()];
    let mut i = 0;
    if topo.host(far).is_some() {
        return vec![(far.clone(), link)];
    }
    while i < seen.len() {
        let at = seen[i].clone();
        i += 1;
        if !topo.is_switch(&at) {
            continue;
        }
        for (k, l) in topo.links.iter().enumerate().filter(|(k, _)| *k != link) {
            let next = match (&l.ends[0], &l.ends[1]) {
                (a, b) if *a == at => b,
                (a, b) if *b == at => a,
                _ => continue,
            };
            if topo.host(next).is_some() {
                found.push((next.clone(), k));
            } else if !seen.contains(next) {
                seen.push(next.clone());
            }
        }
    }
    found
}

/// Permanent neighbour entries on each of `host`'s devices for every address of every host
/// sharing that device's segment (with the MAC of that host's interface on the segment),
/// so no ARP or neighbour discovery crosses the emulated link.
fn segment_neighbours(plan: &Plan, host: &Host) -> Vec<String> {
    let topo = &plan.topology;
    let mut cmds = Vec::new();
    for own in &host.interfaces {
        let Some(device) = plan.end_at(own.link, &host.name) else {
            continue;
        };
        for (other, link) in segment(topo, own.link, &host.name) {
            let (Some(o), Some(end)) = (topo.host(&other), plan.end_at(link, &other)) else {
                continue;
            };
            let Some(mac) = end.mac.as_deref().filter(|_| o.name != host.name) else {
                continue;
            };
            for i in &o.interfaces {
                cmds.extend(neighbour(addresses(i), mac, &device.device));
            }
        }
    }
    cmds
}

/// Neighbour entries and routes of host `host` on all its devices: to every address beyond
/// a router, and for a multi-homed host to every other address out of the device its path
/// starts from. A single-homed host needs no route on its own segment (the subnet's),
/// unless it has a `cwnd_clamp`: then every other address gets a route of its own, and
/// every route carries `cwnd lock N`.
pub fn host_commands(plan: &Plan, host: &str) -> Vec<String> {
    let topo = &plan.topology;
    let Some(me) = topo.host(host) else {
        return Vec::new();
    };
    let mut cmds = segment_neighbours(plan, me);
    let lock = me
        .cwnd_clamp
        .map_or(String::new(), |n| format!(" cwnd lock {n}"));
    for (other, target) in host_interfaces(topo).filter(|(o, _)| o.name != host) {
        let Some(hops) = path_to(topo, host, &other.name, target.link) else {
            continue;
        };
        let Some(device) = hops.first().and_then(|(l, _)| plan.end_at(*l, host)) else {
            continue;
        };
        let device = &device.device;
        match first_router(topo, &hops) {
            Some((router, gw)) => {
                if let Some(mac) = interface_mac(plan, router, gw) {
                    cmds.extend(neighbour(
                        [gw.ipv4.to_string(), gw.ipv6.to_string()],
                        &mac,
                        device,
                    ));
                }
                cmds.push(format!(
                    "route replace {}/32 via {} dev {device}{lock}",
                    target.ipv4, gw.ipv4
                ));
                cmds.push(format!(
                    "route replace {}/128 via {} dev {device}{lock}",
                    target.ipv6, gw.ipv6
                ));
            }
            None if me.interfaces.len() > 1 || me.cwnd_clamp.is_some() => {
                cmds.push(format!(
                    "route replace {}/32 dev {device}{lock}",
                    target.ipv4
                ));
                cmds.push(format!(
                    "route replace {}/128 dev {device}{lock}",
                    target.ipv6
                ));
            }
            None => {}
        }
    }
    cmds.sort();
    cmds.dedup();
    cmds
}

/// Addresses, routes and neighbour entries of router `r`: a /32 (/128) address per
/// interface, and a route to every host address it can reach, straight onto the host's
/// segment or on-link through the next router.
pub fn router_commands(plan: &Plan, r: &Router) -> Vec<String> {
    let topo = &plan.topology;
    let mut cmds = Vec::new();
    for iface in &r.interfaces {
        let Some(end) = plan.end_at(iface.link, &r.name) else {
            continue;
        };
        cmds.push(format!("addr add {}/32 dev {}", iface.ipv4, end.device));
        cmds.push(format!(
            "addr add {}/128 dev {} nodad",
            iface.ipv6, end.device
        ));
    }
    for (host, target) in host_interfaces(topo) {
        let Some(hops) = path_to(topo, &r.name, &host.name, target.link) else {
            continue;
        };
        let Some(out) = hops.first().and_then(|(l, _)| plan.end_at(*l, &r.name)) else {
            continue;
        };
        let device = &out.device;
        let dest = addresses(target);
        match first_router(topo, &hops) {
            None => {
                if let Some(mac) = plan
                    .end_at(target.link, &host.name)
                    .and_then(|e| e.mac.clone())
                {
                    cmds.extend(neighbour(dest.clone(), &mac, device));
                }
                cmds.push(format!("route replace {}/32 dev {device}", dest[0]));
                cmds.push(format!("route replace {}/128 dev {device}", dest[1]));
            }
            Some((next, gw)) => {
                if let Some(mac) = interface_mac(plan, next, gw) {
                    cmds.extend(neighbour(
                        [gw.ipv4.to_string(), gw.ipv6.to_string()],
                        &mac,
                        device,
                    ));
                }
                cmds.push(format!(
                    "route replace {}/32 via {} dev {device} onlink",
                    dest[0], gw.ipv4
                ));
                cmds.push(format!(
                    "route replace {}/128 via {} dev {device} onlink",
                    dest[1], gw.ipv6
                ));
            }
        }
    }
    cmds
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_ROUTERS: &str = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"
[[switch]]
name = "s"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[link]]
ends = ["a", "s"]
[[link]]
ends = ["b", "s"]
[[link]]
ends = ["s", "r1"]
[[link]]
ends = ["r1", "r2"]
[[link]]
ends = ["r2", "c"]
"#;

    fn plan() -> Plan {
        Plan::new(&Topology::from_toml_str("t", TWO_ROUTERS).unwrap(), 1)
    }

    #[test]
    fn router_interfaces_are_numbered_from_the_top_of_the_subnet() {
        let p = plan();
        let r1 = p.topology.router("r1").unwrap();
        let r2 = p.topology.router("r2").unwrap();
        let v4: Vec<String> = r1
            .interfaces
            .iter()
            .chain(&r2.interfaces)
            .map(|i| format!("{}@{}", i.ipv4, i.link))
            .collect();
        assert_eq!(
            v4,
            [
                "10.50.0.254@2",
                "10.50.0.253@3",
                "10.50.0.252@3",
                "10.50.0.251@4"
            ]
        );
        assert_eq!(r1.interfaces[0].ipv6.to_string(), "fd00:50::fe");
    }

    #[test]
    fn hosts_route_through_the_first_router_and_not_to_their_own_segment() {
        let p = plan();
        let a = host_commands(&p, "a");
        // b shares a's segment (the switch): no route; c is behind r1 then r2.
        assert!(a.iter().all(|c| !c.contains("10.50.0.2/")), "{a:?}");
        assert!(a.contains(&"route replace 10.50.0.3/32 via 10.50.0.254 dev eth0".to_string()));
        assert!(a.contains(&"route replace fd00:50::3/128 via fd00:50::fe dev eth0".to_string()));
        assert!(
            a.contains(
                &"neigh replace 10.50.0.254 lladdr 02:6c:72:00:00:00 dev eth0 nud permanent"
                    .to_string()
            ),
            "{a:?}"
        );
        let c = host_commands(&p, "c");
        assert!(c.contains(&"route replace 10.50.0.1/32 via 10.50.0.251 dev eth0".to_string()));
    }

    #[test]
    fn a_clamped_host_routes_every_address_with_its_cwnd_lock() {
        let text = TWO_ROUTERS.replacen("name = \"a\"", "name = \"a\"\ncwnd_clamp = 250", 1);
        let p = Plan::new(&Topology::from_toml_str("t", &text).unwrap(), 1);
        let a = host_commands(&p, "a");
        // b, on a's own segment, now has a route of its own; c's keeps its gateway.
        for want in [
            "route replace 10.50.0.2/32 dev eth0 cwnd lock 250",
            "route replace fd00:50::2/128 dev eth0 cwnd lock 250",
            "route replace 10.50.0.3/32 via 10.50.0.254 dev eth0 cwnd lock 250",
            "route replace fd00:50::3/128 via fd00:50::fe dev eth0 cwnd lock 250",
        ] {
            assert!(a.contains(&want.to_string()), "{want} not in {a:?}");
        }
        // Only a is clamped.
        assert!(host_commands(&p, "c").iter().all(|c| !c.contains("cwnd")));
    }

    #[test]
    fn routers_forward_onto_segments_or_to_the_next_router() {
        let p = plan();
        let r1 = router_commands(&p, p.topology.router("r1").unwrap());
        assert!(
            r1.contains(&"addr add 10.50.0.254/32 dev eth0".to_string()),
            "{r1:?}"
        );
        assert!(r1.contains(&"route replace 10.50.0.1/32 dev eth0".to_string()));
        assert!(r1.contains(&"route replace 10.50.0.2/32 dev eth0".to_string()));
        assert!(
            r1.contains(&"route replace 10.50.0.3/32 via 10.50.0.252 dev eth1 onlink".to_string())
        );
        assert!(r1.contains(
            &"neigh replace 10.50.0.252 lladdr 02:6c:72:00:01:00 dev eth1 nud permanent"
                .to_string()
        ));
        let r2 = router_commands(&p, p.topology.router("r2").unwrap());
        assert!(
            r2.contains(&"route replace 10.50.0.1/32 via 10.50.0.253 dev eth0 onlink".to_string())
        );
        assert!(r2.contains(&"route replace fd00:50::3/128 dev eth1".to_string()));
    }

    #[test]
    fn a_multi_homed_host_reaches_each_address_over_its_own_link() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/testbeds/two-path.toml");
        let p = Plan::new(&Topology::from_file(&path).unwrap(), 1);
        let a = host_commands(&p, "a");
        for want in [
            "route replace 10.60.0.2/32 dev eth0",
            "route replace 10.60.0.4/32 dev eth1",
            "route replace fd00:60::4/128 dev eth1",
            // b's interface on each link, for both of b's addresses.
            "neigh replace 10.60.0.2 lladdr 02:6c:70:00:00:02 dev eth0 nud permanent",
            "neigh replace 10.60.0.2 lladdr 02:6c:68:01:00:02 dev eth1 nud permanent",
            "neigh replace 10.60.0.4 lladdr 02:6c:68:01:00:02 dev eth1 nud permanent",
        ] {
            assert!(a.contains(&want.to_string()), "{want}: {a:?}");
        }
        assert_eq!(
            crate::mptcp::commands(&p, p.topology.host("a").unwrap()),
            [
                "mptcp endpoint flush",
                "mptcp limits set subflow 1 add_addr_accepted 1",
                "mptcp endpoint add 10.60.0.3 dev eth1 subflow"
            ]
        );
    }

    #[test]
    fn routes_take_the_fewest_hops_around_a_cycle_and_ties_go_to_the_earlier_link() {
        // r1 reaches r2 directly (link 1) or through r3 (links 3, 4); twice directly is
        // a tie broken by file order (link 1 before link 5).
        let text = r#"
[[host]]
name = "a"
[[host]]
name = "b"
[[router]]
name = "r1"
[[router]]
name = "r2"
[[router]]
name = "r3"
[[link]]
ends = ["a", "r1"]
[[link]]
ends = ["r1", "r2"]
[[link]]
ends = ["r2", "b"]
[[link]]
ends = ["r1", "r3"]
[[link]]
ends = ["r3", "r2"]
[[link]]
ends = ["r2", "r1"]
"#;
        let p = Plan::new(&Topology::from_toml_str("t", text).unwrap(), 1);
        let r1 = p.topology.router("r1").unwrap();
        let r2_on_link1 = p.topology.router("r2").unwrap().interfaces[0].clone();
        assert_eq!(r2_on_link1.link, 1);
        let cmds = router_commands(&p, r1);
        let want = format!(
            "route replace 10.50.0.2/32 via {} dev eth1 onlink",
            r2_on_link1.ipv4
        );
        assert!(cmds.contains(&want), "{want}: {cmds:?}");
        let hops = path_to(&p.topology, "a", "b", 2).unwrap();
        assert_eq!(
            hops,
            [
                (0, "r1".to_string()),
                (1, "r2".to_string()),
                (2, "b".to_string())
            ]
        );
    }
}
