//! Static routes through `[[router]]`s. A testbed's links form a tree, so between two nodes
//! there is exactly one path: a host reaches a host beyond a router through the first router
//! on that path (its interface on the host's segment), and a router forwards either straight
//! onto the far host's segment or to the next router on the path. Everything is written as
//! `ip` batch lines with permanent neighbour entries, so no ARP or neighbour discovery
//! crosses the emulated links, as on a segment without routers.

use crate::state::Plan;
use crate::topology::{Router, RouterInterface, Topology};
use std::collections::VecDeque;

/// Links crossed from `from` to `to` on the tree, with the node each one enters; None when
/// the two are not connected. Only switches and routers pass traffic on.
pub fn path(topo: &Topology, from: &str, to: &str) -> Option<Vec<(usize, String)>> {
    let mut came: Vec<(String, Option<(usize, String)>)> = vec![(from.to_string(), None)];
    let mut queue = VecDeque::from([from.to_string()]);
    while let Some(node) = queue.pop_front() {
        if node == to {
            break;
        }
        let forwards = node == from || topo.is_switch(&node) || topo.router(&node).is_some();
        if !forwards {
            continue;
        }
        for (i, l) in topo.links.iter().enumerate() {
            let next = match (&l.ends[0], &l.ends[1]) {
                (a, b) if *a == node => b,
                (a, b) if *b == node => a,
                _ => continue,
            };
            if came.iter().all(|(n, _)| n != next) {
                came.push((next.clone(), Some((i, node.clone()))));
                queue.push_back(next.clone());
            }
        }
    }
    let mut hops = Vec::new();
    let mut at = to.to_string();
    while at != from {
        let (_, step) = came.iter().find(|(n, _)| *n == at)?;
        let (link, prev) = step.clone()?;
        hops.push((link, at));
        at = prev;
    }
    hops.reverse();
    Some(hops)
}

/// The first router the path enters, and its interface on the link it enters by.
fn first_router<'t>(
    topo: &'t Topology,
    hops: &[(usize, String)],
) -> Option<(&'t str, &'t RouterInterface)> {
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

/// Routes (and neighbour entries for the gateways) of host `host` towards every host beyond
/// a router. Nothing when the topology has no router.
pub fn host_commands(plan: &Plan, host: &str, device: &str) -> Vec<String> {
    let topo = &plan.topology;
    let mut cmds = Vec::new();
    for other in topo.hosts.iter().filter(|h| h.name != host) {
        let Some(hops) = path(topo, host, &other.name) else {
            continue;
        };
        let Some((router, gw)) = first_router(topo, &hops) else {
            continue;
        };
        if let Some(mac) = interface_mac(plan, router, gw) {
            cmds.extend(neighbour(
                [gw.ipv4.to_string(), gw.ipv6.to_string()],
                &mac,
                device,
            ));
        }
        cmds.push(format!(
            "route replace {}/32 via {} dev {device}",
            other.ipv4, gw.ipv4
        ));
        cmds.push(format!(
            "route replace {}/128 via {} dev {device}",
            other.ipv6, gw.ipv6
        ));
    }
    cmds.sort();
    cmds.dedup();
    cmds
}

/// Addresses, routes and neighbour entries of router `r`: a /32 (/128) address per
/// interface, and a route to every host it can reach, straight onto the host's segment or
/// on-link through the next router.
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
    for host in &topo.hosts {
        let Some(hops) = path(topo, &r.name, &host.name) else {
            continue;
        };
        let Some(out) = hops.first().and_then(|(l, _)| plan.end_at(*l, &r.name)) else {
            continue;
        };
        let device = &out.device;
        let dest = [host.ipv4.to_string(), host.ipv6.to_string()];
        match first_router(topo, &hops) {
            None => {
                if let Some(mac) = plan.host_device(&host.name).and_then(|e| e.mac.clone()) {
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
        let a = host_commands(&p, "a", "eth0");
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
        let c = host_commands(&p, "c", "eth0");
        assert!(c.contains(&"route replace 10.50.0.1/32 via 10.50.0.251 dev eth0".to_string()));
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
}
