//! Shortest paths over the topology graph, which may have cycles (multi-homed hosts, routers
//! joined more than once): breadth-first by hop count, exploring each node's links in file
//! order, so among paths of equal length the one through the earliest links wins, the same
//! on every `up`. Only switches and routers pass traffic on; a host is a path's start or
//! end, never a hop. An address of a multi-homed host is reached over the link it sits on:
//! a path to it ends by crossing that link.

use super::model::Topology;
use std::collections::VecDeque;

/// One hop of a path: the link crossed and the node it enters.
pub type Hop = (usize, String);

/// The shortest path from node `from` to host `to` ending over link `last_link` (the link
/// of the address aimed at), or None when there is none.
pub fn path_to(topo: &Topology, from: &str, to: &str, last_link: usize) -> Option<Vec<Hop>> {
    let mut came: Vec<(String, Option<Hop>)> = vec![(from.to_string(), None)];
    let mut queue = VecDeque::from([from.to_string()]);
    while let Some(node) = queue.pop_front() {
        if node != from && !topo.forwards(&node) {
            continue;
        }
        for (i, l) in topo.links.iter().enumerate() {
            let next = match (&l.ends[0], &l.ends[1]) {
                (a, b) if *a == node => b,
                (a, b) if *b == node => a,
                _ => continue,
            };
            if *next == to {
                if i == last_link {
                    return Some(unwind(&came, from, (i, node.clone()), to));
                }
                continue;
            }
            if came.iter().all(|(n, _)| n != next) {
                came.push((next.clone(), Some((i, node.clone()))));
                queue.push_back(next.clone());
            }
        }
    }
    None
}

/// The hops from `from` to `to`, the last one (`last`: link and the node it leaves) given.
fn unwind(came: &[(String, Option<Hop>)], from: &str, last: Hop, to: &str) -> Vec<Hop> {
    let mut hops = vec![(last.0, to.to_string())];
    let mut at = last.1;
    while at != from {
        let Some((_, Some((link, prev)))) = came.iter().find(|(n, _)| *n == at) else {
            break;
        };
        hops.push((*link, at.clone()));
        at = prev.clone();
    }
    hops.reverse();
    hops
}

/// Whether host `from` reaches host `to` over any of `to`'s links.
pub(super) fn reaches(topo: &Topology, from: &str, to: &str) -> bool {
    topo.links
        .iter()
        .enumerate()
        .filter(|(_, l)| l.ends.iter().any(|e| e == to))
        .any(|(i, _)| path_to(topo, from, to, i).is_some())
}
