//! The address plan: explicit addresses kept, the others numbered from the subnets; router
//! interfaces numbered from the top of the IPv4 subnet down.

use super::model::{
    Host, HostInterface, Link, Router, RouterInterface, DEFAULT_SUBNET, DEFAULT_SUBNET6,
};
use super::parse::Parser;
use super::raw::RawFile;
use crate::error::TestbedError;
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

impl Parser<'_> {
    /// The IPv4 and IPv6 subnets of the file, or the defaults.
    #[allow(clippy::type_complexity)]
    fn subnets(&self, raw: &RawFile) -> Result<((Ipv4Addr, u8), (Ipv6Addr, u8)), TestbedError> {
        let v4 = match &raw.subnet {
            Some(s) => {
                parse_v4_cidr(s.get_ref()).map_err(|m| self.error(Some(s.span()), "subnet", m))?
            }
            None => parse_v4_cidr(DEFAULT_SUBNET).map_err(|m| self.error(None, "subnet", m))?,
        };
        let v6 = match &raw.subnet6 {
            Some(s) => {
                parse_v6_cidr(s.get_ref()).map_err(|m| self.error(Some(s.span()), "subnet6", m))?
            }
            None => parse_v6_cidr(DEFAULT_SUBNET6).map_err(|m| self.error(None, "subnet6", m))?,
        };
        Ok((v4, v6))
    }

    /// Each router's interfaces, one per link ending at it. An interface's addresses come
    /// from the network of the hosts on its segment (the first one's IPv4 and IPv6 prefix),
    /// or the file's subnets when no host is on it, numbered from the top down (the
    /// broadcast address excepted) past any address a host has; the IPv6 address keeps the
    /// IPv4 host part.
    pub(super) fn router_addresses(
        &self,
        raw: &RawFile,
        hosts: &[Host],
        links: &[Link],
    ) -> Result<Vec<Router>, TestbedError> {
        let ((net4, prefix4), (net6, prefix6)) = self.subnets(raw)?;
        let mut used: BTreeSet<Ipv4Addr> = hosts.iter().flat_map(host_v4).collect();
        let used6: BTreeSet<Ipv6Addr> = hosts.iter().flat_map(host_v6).collect();
        let routers: BTreeSet<&str> = raw
            .router
            .iter()
            .map(|r| r.name.get_ref().as_str())
            .collect();
        let mut out = Vec::new();
        for r in &raw.router {
            let name = r.name.get_ref();
            let mut interfaces = Vec::new();
            for (link, l) in links
                .iter()
                .enumerate()
                .filter(|(_, l)| l.ends.contains(name))
            {
                let far = if l.ends[0] == *name {
                    &l.ends[1]
                } else {
                    &l.ends[0]
                };
                let ((n4, p4), (n6, _)) = segment_host(far, links, hosts, &routers)
                    .map(|h| ((h.ipv4, h.ipv4_prefix), (h.ipv6, h.ipv6_prefix)))
                    .unwrap_or(((net4, prefix4), (net6, prefix6)));
                let mask4 = u32::MAX.checked_shl(32 - p4 as u32).unwrap_or(0);
                let v6_of = |v4: Ipv4Addr| {
                    let mask6 = u128::MAX.checked_shl(128 - prefix6 as u32).unwrap_or(0);
                    Ipv6Addr::from((u128::from(n6) & mask6) | (u32::from(v4) & !mask4) as u128)
                };
                let mut next = !mask4 - 1;
                let ipv4 = loop {
                    if next == 0 {
                        return Err(self.error(
                            raw.subnet.as_ref().map(|s| s.span()),
                            "subnet",
                            format!("too small for the hosts and router interfaces on the segment of router '{name}' link {link}"),
                        ));
                    }
                    let candidate = Ipv4Addr::from((u32::from(n4) & mask4) | next);
                    next -= 1;
                    if !used.contains(&candidate) && !used6.contains(&v6_of(candidate)) {
                        break candidate;
                    }
                };
                used.insert(ipv4);
                interfaces.push(RouterInterface {
                    link,
                    ipv4,
                    ipv6: v6_of(ipv4),
                });
            }
            out.push(Router {
                name: name.clone(),
                interfaces,
            });
        }
        Ok(out)
    }

    /// Hosts with their addresses: each host's own (explicit or numbered from the subnets)
    /// on its first link, then one more per further link of a multi-homed host, numbered
    /// from the subnets after every host's own.
    pub(super) fn addresses(
        &self,
        raw: &RawFile,
        links: &[Link],
    ) -> Result<Vec<Host>, TestbedError> {
        let mut hosts = self.own_addresses(raw)?;
        let ((net4, prefix4), (net6, _)) = self.subnets(raw)?;
        let mask4 = u32::MAX.checked_shl(32 - prefix4 as u32).unwrap_or(0);
        let mut used4: BTreeSet<Ipv4Addr> = hosts.iter().map(|h| h.ipv4).collect();
        let mut used6: BTreeSet<Ipv6Addr> = hosts.iter().map(|h| h.ipv6).collect();
        let mut next_id: u32 = 1;
        for h in &mut hosts {
            let own: Vec<usize> = (0..links.len())
                .filter(|&i| links[i].ends.contains(&h.name))
                .collect();
            for (k, &link) in own.iter().enumerate() {
                if k == 0 {
                    h.interfaces.push(HostInterface {
                        link,
                        ipv4: h.ipv4,
                        ipv6: h.ipv6,
                    });
                    continue;
                }
                let (ipv4, ipv6) = loop {
                    let candidate = (u32::from(net4) & mask4) | next_id;
                    next_id += 1;
                    if next_id >= !mask4 {
                        return Err(self.error(
                            raw.subnet.as_ref().map(|s| s.span()),
                            "subnet",
                            "too small for the hosts' addresses on all their links",
                        ));
                    }
                    let v4 = Ipv4Addr::from(candidate);
                    let v6 = Ipv6Addr::from(u128::from(net6) | (candidate & !mask4) as u128);
                    if !used4.contains(&v4) && !used6.contains(&v6) {
                        break (v4, v6);
                    }
                };
                used4.insert(ipv4);
                used6.insert(ipv6);
                h.interfaces.push(HostInterface { link, ipv4, ipv6 });
            }
        }
        Ok(hosts)
    }

    /// Each host's own address (that of its first link).
    fn own_addresses(&self, raw: &RawFile) -> Result<Vec<Host>, TestbedError> {
        let ((net4, prefix4), (net6, prefix6)) = self.subnets(raw)?;
        let mask4 = u32::MAX.checked_shl(32 - prefix4 as u32).unwrap_or(0);
        let mut used4: BTreeSet<Ipv4Addr> = BTreeSet::new();
        let mut explicit4: Vec<Option<(Ipv4Addr, u8)>> = Vec::new();
        for h in &raw.host {
            match &h.address {
                Some(a) => {
                    let (addr, p) = parse_v4_host(a.get_ref(), prefix4)
                        .map_err(|m| self.error(Some(a.span()), "host.address", m))?;
                    if !used4.insert(addr) {
                        return Err(self.error(
                            Some(a.span()),
                            "host.address",
                            format!("{addr} is used twice"),
                        ));
                    }
                    explicit4.push(Some((addr, p)));
                }
                None => explicit4.push(None),
            }
        }
        let mut next_host_id: u32 = 1;
        let mut hosts = Vec::new();
        let mut used6: BTreeSet<Ipv6Addr> = BTreeSet::new();
        for (h, explicit) in raw.host.iter().zip(explicit4) {
            let (ipv4, ipv4_prefix) = match explicit {
                Some(a) => a,
                None => loop {
                    let candidate = (u32::from(net4) & mask4) | next_host_id;
                    next_host_id += 1;
                    let addr = Ipv4Addr::from(candidate);
                    if next_host_id >= !mask4 || candidate & mask4 != u32::from(net4) & mask4 {
                        return Err(self.error(
                            raw.subnet.as_ref().map(|s| s.span()),
                            "subnet",
                            "too small for the hosts it must number",
                        ));
                    }
                    if used4.insert(addr) {
                        break (addr, prefix4);
                    }
                },
            };
            let ipv6 = match &h.address6 {
                Some(a) => {
                    let (addr, p) = parse_v6_host(a.get_ref(), prefix6)
                        .map_err(|m| self.error(Some(a.span()), "host.address6", m))?;
                    if !used6.insert(addr) {
                        return Err(self.error(
                            Some(a.span()),
                            "host.address6",
                            format!("{addr} is used twice"),
                        ));
                    }
                    (addr, p)
                }
                None => {
                    // The IPv4 host part doubles as the IPv6 interface id: 10.50.0.2 -> fd00:50::2.
                    let host_id = u32::from(ipv4) & !mask4;
                    let addr = Ipv6Addr::from(u128::from(net6) | host_id as u128);
                    if !used6.insert(addr) {
                        return Err(self.error(
                            None,
                            "host.address6",
                            format!(
                                "automatic IPv6 address {addr} of host '{}' clashes; set address6",
                                h.name.get_ref()
                            ),
                        ));
                    }
                    (addr, prefix6)
                }
            };
            hosts.push(Host {
                name: h.name.get_ref().clone(),
                ipv4,
                ipv4_prefix,
                ipv6: ipv6.0,
                ipv6_prefix: ipv6.1,
                cpu: self.cpu_share(h)?,
                interfaces: Vec::new(),
                mptcp: h.mptcp.as_ref().is_some_and(|m| *m.get_ref()),
                cwnd_clamp: self.cwnd_clamp(h)?,
                send_cost: self.send_cost(h)?,
            });
        }
        Ok(hosts)
    }
}

fn host_v4(h: &Host) -> Vec<Ipv4Addr> {
    let mut all = vec![h.ipv4];
    all.extend(h.interfaces.iter().map(|i| i.ipv4));
    all
}

fn host_v6(h: &Host) -> Vec<Ipv6Addr> {
    let mut all = vec![h.ipv6];
    all.extend(h.interfaces.iter().map(|i| i.ipv6));
    all
}

/// The first host reached from `start` through switches (not routers): a host on the
/// segment of the link whose far end is `start`.
fn segment_host<'h>(
    start: &str,
    links: &[Link],
    hosts: &'h [Host],
    routers: &BTreeSet<&str>,
) -> Option<&'h Host> {
    let mut seen = vec![start.to_string()];
    let mut i = 0;
    while i < seen.len() {
        let node = seen[i].clone();
        if let Some(h) = hosts.iter().find(|h| h.name == node) {
            return Some(h);
        }
        if !routers.contains(node.as_str()) {
            for l in links {
                for (x, y) in [(&l.ends[0], &l.ends[1]), (&l.ends[1], &l.ends[0])] {
                    if *x == node && !seen.contains(y) && !routers.contains(y.as_str()) {
                        seen.push(y.clone());
                    }
                }
            }
        }
        i += 1;
    }
    None
}

fn parse_v4_cidr(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, p) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}' is not an IPv4 subnet like 10.50.0.0/24"))?;
    let addr: Ipv4Addr = a
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not an IPv4 subnet like 10.50.0.0/24"))?;
    let prefix: u8 = p
        .trim()
        .parse()
        .ok()
        .filter(|p| (8..=30).contains(p))
        .ok_or_else(|| format!("prefix of '{s}' must be 8..=30"))?;
    Ok((addr, prefix))
}

fn parse_v6_cidr(s: &str) -> Result<(Ipv6Addr, u8), String> {
    let (a, p) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}' is not an IPv6 subnet like fd00:50::/64"))?;
    let addr: Ipv6Addr = a
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not an IPv6 subnet like fd00:50::/64"))?;
    let prefix: u8 = p
        .trim()
        .parse()
        .ok()
        .filter(|p| (16..=96).contains(p))
        .ok_or_else(|| format!("prefix of '{s}' must be 16..=96"))?;
    let mask = u128::MAX.checked_shl(128 - prefix as u32).unwrap_or(0);
    Ok((Ipv6Addr::from(u128::from(addr) & mask), prefix))
}

fn parse_v4_host(s: &str, default_prefix: u8) -> Result<(Ipv4Addr, u8), String> {
    let bad = || format!("'{s}' is not an IPv4 address like 10.50.0.1/24");
    let (a, p) = match s.split_once('/') {
        Some((a, p)) => (
            a,
            p.trim()
                .parse::<u8>()
                .ok()
                .filter(|p| (1..=32).contains(p))
                .ok_or_else(bad)?,
        ),
        None => (s, default_prefix),
    };
    let addr: Ipv4Addr = a.trim().parse().map_err(|_| bad())?;
    if addr.is_unspecified() || addr.is_loopback() || addr.is_multicast() || addr.is_broadcast() {
        return Err(format!("{addr} cannot be a host address"));
    }
    Ok((addr, p))
}

fn parse_v6_host(s: &str, default_prefix: u8) -> Result<(Ipv6Addr, u8), String> {
    let bad = || format!("'{s}' is not an IPv6 address like fd00:50::1/64");
    let (a, p) = match s.split_once('/') {
        Some((a, p)) => (
            a,
            p.trim()
                .parse::<u8>()
                .ok()
                .filter(|p| (1..=128).contains(p))
                .ok_or_else(bad)?,
        ),
        None => (s, default_prefix),
    };
    let addr: Ipv6Addr = a.trim().parse().map_err(|_| bad())?;
    if addr.is_unspecified() || addr.is_loopback() || addr.is_multicast() {
        return Err(format!("{addr} cannot be a host address"));
    }
    Ok((addr, p))
}
