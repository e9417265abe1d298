//! The topology file: hosts, switches and links, parsed with every error tied to its file,
//! key and line, then resolved (presets merged, addresses assigned, shape checked).

use crate::error::TestbedError;
use crate::framing::Framing;
use crate::impairment::{GilbertElliott, JitterDistribution};
use crate::params::{DirectionOverrides, DirectionParams, DEFAULT_MTU};
use crate::presets;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use toml::{Spanned, Value};

pub const DEFAULT_SUBNET: &str = "10.50.0.0/24";
pub const DEFAULT_SUBNET6: &str = "fd00:50::/64";
/// Longest name allowed for a testbed, host or switch (they end up in namespace names).
pub const MAX_NAME_LEN: usize = 32;
pub const MIN_MTU: u32 = 576;
pub const MAX_MTU: u32 = 65_000;

/// A resolved topology: every value checked, presets merged, addresses assigned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    pub name: String,
    /// Seed of the impairment RNGs; absent means fresh entropy on every `up`.
    pub seed: Option<u64>,
    pub hosts: Vec<Host>,
    pub switches: Vec<Switch>,
    pub links: Vec<Link>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    pub ipv4: Ipv4Addr,
    pub ipv4_prefix: u8,
    pub ipv6: Ipv6Addr,
    pub ipv6_prefix: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Switch {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// `a_to_b` runs from `ends[0]` to `ends[1]`.
    pub ends: [String; 2],
    pub preset: Option<String>,
    pub mtu: u32,
    /// Checksum and TCP segmentation offload on the link's devices, segments accounted one
    /// by one by the emulator (see `gso`); false makes the kernel segment before the emulator.
    #[serde(default = "offload_default")]
    pub offload: bool,
    pub a_to_b: DirectionParams,
    pub b_to_a: DirectionParams,
}

fn offload_default() -> bool {
    true
}

impl Topology {
    /// Parses topology text. `name` is the testbed name unless the text has a `name` key.
    pub fn from_toml_str(name: &str, text: &str) -> Result<Self, TestbedError> {
        Parser {
            label: format!("topology '{name}'"),
            text,
        }
        .parse(name)
    }

    /// Reads a topology file; the testbed is named by its `name` key or the file stem.
    pub fn from_file(path: &Path) -> Result<Self, TestbedError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            TestbedError::bad(format!("cannot read topology file {}: {e}", path.display()))
        })?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("testbed");
        Parser {
            label: path.display().to_string(),
            text: &text,
        }
        .parse(stem)
    }

    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    pub fn is_switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s.name == name)
    }
}

/// Checks a testbed, host or switch name: it becomes part of namespace names and paths.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(format!(
            "name '{name}' must be 1 to {MAX_NAME_LEN} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "name '{name}' may contain only letters, digits, '-' and '_'"
        ));
    }
    Ok(())
}

// ---- raw file shape (serde) -------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<Spanned<String>>,
    seed: Option<Spanned<i64>>,
    subnet: Option<Spanned<String>>,
    subnet6: Option<Spanned<String>>,
    #[serde(default)]
    host: Vec<RawHost>,
    #[serde(default)]
    switch: Vec<RawSwitch>,
    #[serde(default)]
    link: Vec<RawLink>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    name: Spanned<String>,
    address: Option<Spanned<String>>,
    address6: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    name: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGilbert {
    p: Spanned<Value>,
    r: Spanned<Value>,
    bad_loss: Option<Spanned<Value>>,
    good_loss: Option<Spanned<Value>>,
}

/// Declares a struct holding the per-direction keys plus `$extra` fields, so the link table
/// and its `a_to_b`/`b_to_a` tables accept exactly the same impairment keys.
macro_rules! with_direction_keys {
    ($name:ident { $($extra:tt)* }) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name {
            $($extra)*
            rate: Option<Spanned<Value>>,
            delay: Option<Spanned<Value>>,
            jitter: Option<Spanned<Value>>,
            jitter_distribution: Option<Spanned<String>>,
            reorder: Option<Spanned<bool>>,
            loss: Option<Spanned<Value>>,
            gilbert: Option<Spanned<RawGilbert>>,
            ber: Option<Spanned<Value>>,
            queue: Option<Spanned<Value>>,
            queue_packets: Option<Spanned<i64>>,
            framing: Option<Spanned<String>>,
        }

        impl $name {
            fn keys(&self) -> DirectionKeys<'_> {
                DirectionKeys {
                    rate: self.rate.as_ref(),
                    delay: self.delay.as_ref(),
                    jitter: self.jitter.as_ref(),
                    jitter_distribution: self.jitter_distribution.as_ref(),
                    reorder: self.reorder.as_ref(),
                    loss: self.loss.as_ref(),
                    gilbert: self.gilbert.as_ref(),
                    ber: self.ber.as_ref(),
                    queue: self.queue.as_ref(),
                    queue_packets: self.queue_packets.as_ref(),
                    framing: self.framing.as_ref(),
                }
            }
        }
    };
}

with_direction_keys!(RawDirection {});
with_direction_keys!(RawLink {
    ends: Spanned<Vec<String>>,
    preset: Option<Spanned<String>>,
    mtu: Option<Spanned<i64>>,
    offload: Option<bool>,
    a_to_b: Option<Spanned<RawDirection>>,
    b_to_a: Option<Spanned<RawDirection>>,
});

struct DirectionKeys<'a> {
    rate: Option<&'a Spanned<Value>>,
    delay: Option<&'a Spanned<Value>>,
    jitter: Option<&'a Spanned<Value>>,
    jitter_distribution: Option<&'a Spanned<String>>,
    reorder: Option<&'a Spanned<bool>>,
    loss: Option<&'a Spanned<Value>>,
    gilbert: Option<&'a Spanned<RawGilbert>>,
    ber: Option<&'a Spanned<Value>>,
    queue: Option<&'a Spanned<Value>>,
    queue_packets: Option<&'a Spanned<i64>>,
    framing: Option<&'a Spanned<String>>,
}

// ---- parsing ----------------------------------------------------------------------------

struct Parser<'t> {
    label: String,
    text: &'t str,
}

type Span = std::ops::Range<usize>;

impl Parser<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// One-line error naming the file, line and key.
    fn error(&self, span: Option<Span>, key: &str, msg: impl std::fmt::Display) -> TestbedError {
        let location = match span {
            Some(s) => format!("{}: line {}", self.label, self.line_of(s.start)),
            None => self.label.clone(),
        };
        if key.is_empty() {
            TestbedError::bad(format!("{location}: {msg}"))
        } else {
            TestbedError::bad(format!("{location}: {key}: {msg}"))
        }
    }

    fn parse(&self, default_name: &str) -> Result<Topology, TestbedError> {
        let raw: RawFile =
            toml::from_str(self.text).map_err(|e| self.error(e.span(), "", e.message()))?;
        let name = match &raw.name {
            Some(n) => {
                validate_name(n.get_ref()).map_err(|m| self.error(Some(n.span()), "name", m))?;
                n.get_ref().clone()
            }
            None => {
                validate_name(default_name).map_err(|m| {
                    self.error(
                        None,
                        "",
                        format!("testbed {m} (set a `name` key or rename the file)"),
                    )
                })?;
                default_name.to_string()
            }
        };
        let seed = match &raw.seed {
            Some(s) if *s.get_ref() < 0 => {
                return Err(self.error(Some(s.span()), "seed", "must be >= 0"))
            }
            Some(s) => Some(*s.get_ref() as u64),
            None => None,
        };

        let mut nodes = BTreeMap::new();
        let mut check_node = |n: &Spanned<String>, kind: &str| -> Result<(), TestbedError> {
            validate_name(n.get_ref())
                .map_err(|m| self.error(Some(n.span()), &format!("{kind}.name"), m))?;
            if nodes
                .insert(n.get_ref().clone(), kind.to_string())
                .is_some()
            {
                return Err(self.error(
                    Some(n.span()),
                    &format!("{kind}.name"),
                    format!(
                        "'{}' is used twice (host and switch names share one space)",
                        n.get_ref()
                    ),
                ));
            }
            Ok(())
        };
        for h in &raw.host {
            check_node(&h.name, "host")?;
        }
        for s in &raw.switch {
            check_node(&s.name, "switch")?;
        }
        if raw.host.is_empty() {
            return Err(self.error(
                None,
                "",
                "no [[host]] defined; a testbed needs at least one host",
            ));
        }

        let links = raw
            .link
            .iter()
            .map(|l| self.link(l, &nodes))
            .collect::<Result<Vec<_>, _>>()?;
        self.check_shape(&raw, &links)?;
        let hosts = self.addresses(&raw)?;
        let switches = raw
            .switch
            .iter()
            .map(|s| Switch {
                name: s.name.get_ref().clone(),
            })
            .collect();
        Ok(Topology {
            name,
            seed,
            hosts,
            switches,
            links,
        })
    }

    fn link(&self, raw: &RawLink, nodes: &BTreeMap<String, String>) -> Result<Link, TestbedError> {
        let ends = raw.ends.get_ref();
        let span = Some(raw.ends.span());
        if ends.len() != 2 {
            return Err(self.error(span, "link.ends", "must name exactly two hosts or switches"));
        }
        for end in ends {
            if !nodes.contains_key(end) {
                return Err(self.error(
                    span,
                    "link.ends",
                    format!("'{end}' is not a [[host]] or [[switch]] name"),
                ));
            }
        }
        if ends[0] == ends[1] {
            return Err(self.error(span, "link.ends", "a link needs two different ends"));
        }
        let mut base = DirectionParams::default();
        let mut mtu = DEFAULT_MTU;
        let preset = match &raw.preset {
            Some(p) => {
                let preset = presets::find(p.get_ref()).ok_or_else(|| {
                    self.error(
                        Some(p.span()),
                        "link.preset",
                        format!(
                            "unknown preset '{}' (known: {})",
                            p.get_ref(),
                            presets::names().join(", ")
                        ),
                    )
                })?;
                preset.settings.apply_to(&mut base);
                mtu = preset.mtu;
                Some(preset.name.to_string())
            }
            None => None,
        };
        if let Some(m) = &raw.mtu {
            let v = *m.get_ref();
            if !(MIN_MTU as i64..=MAX_MTU as i64).contains(&v) {
                return Err(self.error(
                    Some(m.span()),
                    "link.mtu",
                    format!("{v} is outside {MIN_MTU}..={MAX_MTU}"),
                ));
            }
            mtu = v as u32;
        }
        self.overrides(&raw.keys(), "link")?.apply_to(&mut base);
        let mut a_to_b = base.clone();
        let mut b_to_a = base;
        if let Some(d) = &raw.a_to_b {
            self.overrides(&d.get_ref().keys(), "link.a_to_b")?
                .apply_to(&mut a_to_b);
        }
        if let Some(d) = &raw.b_to_a {
            self.overrides(&d.get_ref().keys(), "link.b_to_a")?
                .apply_to(&mut b_to_a);
        }
        Ok(Link {
            ends: [ends[0].clone(), ends[1].clone()],
            preset,
            mtu,
            offload: raw.offload.unwrap_or_else(offload_default),
            a_to_b,
            b_to_a,
        })
    }

    fn overrides(
        &self,
        k: &DirectionKeys<'_>,
        table: &str,
    ) -> Result<DirectionOverrides, TestbedError> {
        let key = |name: &str| format!("{table}.{name}");
        let mut o = DirectionOverrides::default();
        if let Some(v) = k.rate {
            o.rate_bps = Some(self.unit(v, &key("rate"), linkperf_units::parse_rate, |n| {
                n.round() as u64
            })?);
        }
        if let Some(v) = k.delay {
            o.delay_ns = Some(self.duration_ns(v, &key("delay"))?);
        }
        if let Some(v) = k.jitter {
            o.jitter_ns = Some(self.duration_ns(v, &key("jitter"))?);
        }
        if let Some(v) = k.jitter_distribution {
            o.jitter_distribution =
                Some(JitterDistribution::from_name(v.get_ref()).ok_or_else(|| {
                    self.error(
                        Some(v.span()),
                        &key("jitter_distribution"),
                        format!("'{}' is not one of uniform, normal, pareto", v.get_ref()),
                    )
                })?);
        }
        if let Some(v) = k.reorder {
            o.reorder = Some(*v.get_ref());
        }
        if let Some(v) = k.loss {
            o.loss = Some(self.percent(v, &key("loss"))?);
        }
        if let Some(g) = k.gilbert {
            let g = g.get_ref();
            let gk = |n: &str| format!("{table}.gilbert.{n}");
            o.gilbert = Some(GilbertElliott {
                p: self.percent(&g.p, &gk("p"))?,
                r: self.percent(&g.r, &gk("r"))?,
                bad_loss: match &g.bad_loss {
                    Some(v) => self.percent(v, &gk("bad_loss"))?,
                    None => 1.0,
                },
                good_loss: match &g.good_loss {
                    Some(v) => self.percent(v, &gk("good_loss"))?,
                    None => 0.0,
                },
            });
        }
        if let Some(v) = k.ber {
            let ber = match v.get_ref() {
                Value::Float(f) => Some(*f),
                Value::Integer(i) => Some(*i as f64),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            };
            match ber {
                Some(b) if (0.0..=1.0).contains(&b) => o.ber = Some(b),
                _ => {
                    return Err(self.error(
                        Some(v.span()),
                        &key("ber"),
                        format!(
                            "{} is not a bit error rate between 0 and 1 (e.g. 1e-6)",
                            show(v.get_ref())
                        ),
                    ))
                }
            }
        }
        if let Some(v) = k.queue {
            o.queue_bytes =
                Some(self.unit(v, &key("queue"), linkperf_units::parse_size, |n| n as u64)?);
        }
        if let Some(v) = k.queue_packets {
            if *v.get_ref() < 0 {
                return Err(self.error(
                    Some(v.span()),
                    &key("queue_packets"),
                    "must be >= 0 (0 = no packet limit)",
                ));
            }
            o.queue_packets = Some(*v.get_ref() as u64);
        }
        if let Some(v) = k.framing {
            o.framing = Some(Framing::from_name(v.get_ref()).ok_or_else(|| {
                self.error(
                    Some(v.span()),
                    &key("framing"),
                    format!("'{}' is not one of ethernet, atm-aal5, none", v.get_ref()),
                )
            })?);
        }
        Ok(o)
    }

    /// A value written either as a string with units or as a plain number.
    fn unit<T>(
        &self,
        v: &Spanned<Value>,
        key: &str,
        parse: fn(&str) -> Result<T, linkperf_units::UnitError>,
        from_number: fn(f64) -> T,
    ) -> Result<T, TestbedError> {
        match v.get_ref() {
            Value::String(s) => parse(s).map_err(|e| self.error(Some(v.span()), key, e)),
            Value::Integer(i) if *i >= 0 => Ok(from_number(*i as f64)),
            Value::Float(f) if *f >= 0.0 && f.is_finite() => Ok(from_number(*f)),
            other => Err(self.error(
                Some(v.span()),
                key,
                format!("{} is not a valid value", show(other)),
            )),
        }
    }

    fn duration_ns(&self, v: &Spanned<Value>, key: &str) -> Result<u64, TestbedError> {
        let d = match v.get_ref() {
            Value::String(s) => {
                linkperf_units::parse_duration(s).map_err(|e| self.error(Some(v.span()), key, e))?
            }
            Value::Integer(i) if *i >= 0 => std::time::Duration::from_secs(*i as u64),
            Value::Float(f) if *f >= 0.0 && *f < 1e6 => std::time::Duration::from_secs_f64(*f),
            other => {
                return Err(self.error(
                    Some(v.span()),
                    key,
                    format!("{} is not a duration (e.g. \"7ms\")", show(other)),
                ))
            }
        };
        Ok(d.as_nanos().min(u64::MAX as u128) as u64)
    }

    /// Percentages: "1%" or a bare number meaning percent, as linkperf-units reads them.
    fn percent(&self, v: &Spanned<Value>, key: &str) -> Result<f64, TestbedError> {
        let text = match v.get_ref() {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            other => {
                return Err(self.error(
                    Some(v.span()),
                    key,
                    format!("{} is not a percentage", show(other)),
                ))
            }
        };
        linkperf_units::parse_percent(&text).map_err(|e| self.error(Some(v.span()), key, e))
    }

    /// Hosts have one interface each and the graph must be loop-free (bridges run no STP).
    fn check_shape(&self, raw: &RawFile, links: &[Link]) -> Result<(), TestbedError> {
        let hosts: BTreeSet<&str> = raw.host.iter().map(|h| h.name.get_ref().as_str()).collect();
        let mut degree: BTreeMap<&str, usize> = BTreeMap::new();
        let mut parent: BTreeMap<String, String> = BTreeMap::new();
        fn root(parent: &BTreeMap<String, String>, mut n: String) -> String {
            while let Some(p) = parent.get(&n) {
                n = p.clone();
            }
            n
        }
        for (raw_link, link) in raw.link.iter().zip(links) {
            let span = Some(raw_link.ends.span());
            for end in &link.ends {
                if hosts.contains(end.as_str()) {
                    let d = degree.entry(end.as_str()).or_default();
                    *d += 1;
                    if *d > 1 {
                        return Err(self.error(
                            span,
                            "link.ends",
                            format!("host '{end}' already has a link; a host has one interface, connect several through a [[switch]]"),
                        ));
                    }
                }
            }
            let (ra, rb) = (
                root(&parent, link.ends[0].clone()),
                root(&parent, link.ends[1].clone()),
            );
            if ra == rb {
                return Err(self.error(
                    span,
                    "link.ends",
                    format!(
                        "link {}-{} closes a loop; switches run no spanning tree, so links must form a tree",
                        link.ends[0], link.ends[1]
                    ),
                ));
            }
            parent.insert(ra, rb);
        }
        Ok(())
    }

    fn addresses(&self, raw: &RawFile) -> Result<Vec<Host>, TestbedError> {
        let (net4, prefix4) = match &raw.subnet {
            Some(s) => {
                parse_v4_cidr(s.get_ref()).map_err(|m| self.error(Some(s.span()), "subnet", m))?
            }
            None => parse_v4_cidr(DEFAULT_SUBNET).map_err(|m| self.error(None, "subnet", m))?,
        };
        let (net6, prefix6) = match &raw.subnet6 {
            Some(s) => {
                parse_v6_cidr(s.get_ref()).map_err(|m| self.error(Some(s.span()), "subnet6", m))?
            }
            None => parse_v6_cidr(DEFAULT_SUBNET6).map_err(|m| self.error(None, "subnet6", m))?,
        };
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
            });
        }
        Ok(hosts)
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE_EXAMPLE: &str = r#"
[[host]]
name = "a"
address = "10.50.0.1/24"      # optional; assigned automatically when absent
[[host]]
name = "b"
address = "10.50.0.2/24"
[[link]]
ends = ["a", "b"]
rate = "40M"                  # bit/s, both directions
delay = "7ms"                 # one-way, each direction
queue = "200K"                # bytes
[link.b_to_a]                 # per-direction override ("a_to_b" likewise)
loss = "1%"
[[switch]]                    # a learning bridge; links may end on it
name = "s1"
"#;

    fn err(text: &str) -> String {
        Topology::from_toml_str("t", text).unwrap_err().to_string()
    }

    #[test]
    fn the_issue_example_parses_with_per_direction_override() {
        let t = Topology::from_toml_str("demo", ISSUE_EXAMPLE).unwrap();
        assert_eq!(t.name, "demo");
        assert_eq!(t.hosts.len(), 2);
        assert_eq!(t.hosts[1].ipv4, Ipv4Addr::new(10, 50, 0, 2));
        assert_eq!(t.hosts[1].ipv6, "fd00:50::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(t.switches[0].name, "s1");
        let l = &t.links[0];
        assert_eq!(l.mtu, 1500);
        assert!(l.offload, "offloads are on by default");
        for d in [&l.a_to_b, &l.b_to_a] {
            assert_eq!(d.rate_bps, 40_000_000);
            assert_eq!(d.delay_ns, 7_000_000);
            assert_eq!((d.queue_bytes, d.queue_packets), (Some(200 * 1024), None));
        }
        assert_eq!(l.a_to_b.loss, 0.0);
        assert!((l.b_to_a.loss - 0.01).abs() < 1e-12);
    }

    #[test]
    fn addresses_are_assigned_around_explicit_ones() {
        let t = Topology::from_toml_str(
            "x",
            r#"
            name = "named"
            subnet = "192.168.77.0/24"
            [[host]]
            name = "a"
            [[host]]
            name = "b"
            address = "192.168.77.1"
            [[host]]
            name = "c"
            address6 = "fd00:1::99/64"
            "#,
        )
        .unwrap();
        assert_eq!(t.name, "named");
        let v4: Vec<String> = t
            .hosts
            .iter()
            .map(|h| format!("{}/{}", h.ipv4, h.ipv4_prefix))
            .collect();
        assert_eq!(
            v4,
            ["192.168.77.2/24", "192.168.77.1/24", "192.168.77.3/24"]
        );
        assert_eq!(t.hosts[2].ipv6.to_string(), "fd00:1::99");
        assert_eq!(t.hosts[0].ipv6.to_string(), "fd00:50::2");
    }

    #[test]
    fn presets_are_overridden_by_explicit_keys() {
        let t = Topology::from_toml_str(
            "x",
            r#"
            [[host]]
            name = "a"
            [[host]]
            name = "b"
            [[link]]
            ends = ["a", "b"]
            preset = "oc3c-atm"
            delay = "2ms"
            [link.a_to_b]
            ber = 1e-6
            framing = "ethernet"
            "#,
        )
        .unwrap();
        let l = &t.links[0];
        assert_eq!(l.mtu, 9180);
        assert_eq!(l.b_to_a.framing, Framing::AtmAal5);
        assert_eq!(l.a_to_b.framing, Framing::Ethernet);
        assert_eq!(l.a_to_b.rate_bps, 149_760_000);
        assert_eq!(l.a_to_b.delay_ns, 2_000_000);
        assert_eq!(l.a_to_b.ber, 1e-6);
        assert_eq!(l.b_to_a.ber, 0.0);
    }

    #[test]
    fn all_direction_keys_are_read() {
        let t = Topology::from_toml_str(
            "x",
            r#"
            seed = 9
            [[host]]
            name = "a"
            [[switch]]
            name = "s"
            [[link]]
            ends = ["a", "s"]
            mtu = 9000
            offload = false
            rate = 1000000
            jitter = "1ms"
            jitter_distribution = "pareto"
            reorder = true
            gilbert = { p = "1%", r = "25%", bad_loss = "50%" }
            queue_packets = 30
            framing = "none"
            "#,
        )
        .unwrap();
        assert_eq!(t.seed, Some(9));
        let d = &t.links[0].a_to_b;
        assert_eq!(t.links[0].mtu, 9000);
        assert!(!t.links[0].offload);
        assert_eq!(d.rate_bps, 1_000_000);
        assert_eq!(d.jitter_ns, 1_000_000);
        assert_eq!(d.jitter_distribution, JitterDistribution::Pareto);
        assert!(d.reorder);
        let ge = d.gilbert.unwrap();
        assert_eq!(
            (ge.p, ge.r, ge.bad_loss, ge.good_loss),
            (0.01, 0.25, 0.5, 0.0)
        );
        assert_eq!((d.queue_bytes, d.queue_packets), (None, Some(30)));
        assert_eq!(d.framing, Framing::None);
    }

    #[test]
    fn errors_name_file_line_and_key_on_one_line() {
        let e = err("[[host]]\nname = \"a\"\ncolour = \"red\"\n");
        assert!(e.contains("line 3") && e.contains("colour"), "{e}");
        let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n[link.a_to_b]\nloss = \"150%\"\n");
        assert!(
            e.starts_with("topology 't': line 8: link.a_to_b.loss:"),
            "{e}"
        );
        let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\nrate = \"fast\"\n");
        assert!(e.contains("line 7: link.rate: 'fast' is not a rate"), "{e}");
        let e = err(
            "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"c\"]\n",
        );
        assert!(
            e.contains("'c' is not a [[host]] or [[switch]] name"),
            "{e}"
        );
        let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\npreset = \"warp\"\n");
        assert!(
            e.contains("unknown preset 'warp'") && e.contains("oc3c-atm"),
            "{e}"
        );
        let e = err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\n[link.sideways]\n");
        assert!(e.contains("line 7") && e.contains("sideways"), "{e}");
        for e in [
            err("[[host]]\nname = \"bad name\"\n"),
            err("[[host]]\nname = \"a\"\naddress = \"10.1.1\"\n"),
            err("[[host]]\nname = \"a\"\n[[host]]\nname = \"a\"\n"),
            err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\nmtu = 10\n"),
            err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\nber = 2.0\n"),
            err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\njitter_distribution = \"cauchy\"\n"),
            err("[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\nends = [\"a\", \"b\"]\ndelay = true\n"),
            err("name = \"x\"\n[[host]\n"),
            err(""),
        ] {
            assert!(!e.contains('\n') && e.starts_with("topology 't'"), "{e}");
        }
    }

    #[test]
    fn shape_rules_one_interface_per_host_and_no_loops() {
        let e = err(r#"
            [[host]]
            name = "a"
            [[host]]
            name = "b"
            [[host]]
            name = "c"
            [[link]]
            ends = ["a", "b"]
            [[link]]
            ends = ["a", "c"]
            "#);
        assert!(e.contains("host 'a' already has a link"), "{e}");
        let e = err(r#"
            [[host]]
            name = "a"
            [[switch]]
            name = "s1"
            [[switch]]
            name = "s2"
            [[link]]
            ends = ["s1", "s2"]
            [[link]]
            ends = ["s2", "s1"]
            "#);
        assert!(e.contains("closes a loop"), "{e}");
    }

    #[test]
    fn file_stem_names_the_testbed_and_bad_stems_are_explained() {
        let dir = std::env::temp_dir().join(format!("lp-topo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("wan-600km.toml");
        std::fs::write(&good, "[[host]]\nname = \"a\"\n").unwrap();
        assert_eq!(Topology::from_file(&good).unwrap().name, "wan-600km");
        let bad = dir.join("has space.toml");
        std::fs::write(&bad, "[[host]]\nname = \"a\"\nfoo = 1\n").unwrap();
        let e = Topology::from_file(&bad).unwrap_err().to_string();
        assert!(
            e.contains("has space.toml: line 3: unknown field `foo`"),
            "{e}"
        );
        std::fs::write(&bad, "[[host]]\nname = \"a\"\n").unwrap();
        let e = Topology::from_file(&bad).unwrap_err().to_string();
        assert!(e.contains("rename the file"), "{e}");
        let e = Topology::from_file(&dir.join("missing.toml")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
