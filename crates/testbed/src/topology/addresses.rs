//! The address plan: explicit addresses kept, the others numbered from the subnets; router
//! interfaces numbered from the top of the IPv4 subnet down.

use super::model::{Host, Link, Router, RouterInterface, DEFAULT_SUBNET, DEFAULT_SUBNET6};
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

    /// Each router's interfaces, one per link ending at it: IPv4 addresses from the top of
    /// the subnet down (the broadcast address excepted) skipping the hosts', IPv6 from the
    /// IPv6 subnet with the same host part.
    pub(super) fn router_addresses(
        &self,
        raw: &RawFile,
        hosts: &[Host],
        links: &[Link],
    ) -> Result<Vec<Router>, TestbedError> {
        let ((net4, prefix4), (net6, _)) = self.subnets(raw)?;
        let mask4 = u32::MAX.checked_shl(32 - prefix4 as u32).unwrap_or(0);
        let used: BTreeSet<Ipv4Addr> = hosts.iter().map(|h| h.ipv4).collect();
        let used6: BTreeSet<Ipv6Addr> = hosts.iter().map(|h| h.ipv6).collect();
        let v6_of =
            |v4: Ipv4Addr| Ipv6Addr::from(u128::from(net6) | (u32::from(v4) & !mask4) as u128);
        let mut next = !mask4 - 1;
        let mut routers = Vec::new();
        for r in &raw.router {
            let name = r.name.get_ref();
            let mut interfaces = Vec::new();
            for (link, _) in links
                .iter()
                .enumerate()
                .filter(|(_, l)| l.ends.contains(name))
            {
                let ipv4 = loop {
                    if next == 0 {
                        return Err(self.error(
                            raw.subnet.as_ref().map(|s| s.span()),
                            "subnet",
                            "too small for the hosts and router interfaces it must number",
                        ));
                    }
                    let candidate = Ipv4Addr::from((u32::from(net4) & mask4) | next);
                    next -= 1;
                    if !used.contains(&candidate) && !used6.contains(&v6_of(candidate)) {
                        break candidate;
                    }
                };
                let ipv6 = v6_of(ipv4);
                interfaces.push(RouterInterface { link, ipv4, ipv6 });
            }
            routers.push(Router {
                name: name.clone(),
                interfaces,
            });
        }
        Ok(routers)
    }

    pub(super) fn addresses(&self, raw: &RawFile) -> Result<Vec<Host>, TestbedError> {
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
            });
        }
        Ok(hosts)
    }
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
