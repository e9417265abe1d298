//! Checking and converting the raw file: names, ends, presets, units, percentages, shape.

use super::model::{
    offload_default, txqueuelen_default, validate_name, CpuIdle, Link, Switch, Topology,
    MAX_CWND_CLAMP, MAX_MTU, MAX_TXQUEUELEN, MIN_CPU_SHARE, MIN_MTU,
};
use super::raw::*;
use crate::error::TestbedError;
use crate::framing::Framing;
use crate::impairment::{GilbertElliott, JitterDistribution};
use crate::params::{DirectionOverrides, DirectionParams, DEFAULT_MTU};
use crate::presets;
use crate::trace::Trace;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use toml::{Spanned, Value};

/// Longest per-packet processing time accepted (one packet a second).
const MAX_PER_PACKET_NS: u64 = 1_000_000_000;

pub(super) struct Parser<'t> {
    /// What errors name: the file, or the command.
    pub(super) label: String,
    pub(super) text: &'t str,
    /// Where relative trace file names start (the topology or schedule file's directory).
    pub(super) base_dir: Option<PathBuf>,
    /// How a place in `text` is named: "line", or "argument" for `testbed set`'s arguments.
    pub(super) unit: &'static str,
    /// Added to the line number: `testbed set` writes argument 2 as the document's line 1.
    pub(super) line_offset: usize,
}

pub(super) type Span = std::ops::Range<usize>;

impl<'t> Parser<'t> {
    /// A parser for a file's text (errors say "FILE: line N").
    pub(super) fn file(label: String, text: &'t str, base_dir: Option<PathBuf>) -> Parser<'t> {
        Parser {
            label,
            text,
            base_dir,
            unit: "line",
            line_offset: 0,
        }
    }

    fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// One-line error naming the file, line and key.
    pub(super) fn error(
        &self,
        span: Option<Span>,
        key: &str,
        msg: impl std::fmt::Display,
    ) -> TestbedError {
        let location = match span {
            Some(s) => format!(
                "{}: {} {}",
                self.label,
                self.unit,
                self.line_of(s.start) + self.line_offset
            ),
            None => self.label.clone(),
        };
        if key.is_empty() {
            TestbedError::bad(format!("{location}: {msg}"))
        } else {
            TestbedError::bad(format!("{location}: {key}: {msg}"))
        }
    }

    pub(super) fn parse(&self, default_name: &str) -> Result<Topology, TestbedError> {
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
        let cpu_idle = self.cpu_idle(raw.cpu_idle.as_ref())?;

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
                        "'{}' is used twice (host, switch and router names share one space)",
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
        for r in &raw.router {
            check_node(&r.name, "router")?;
        }
        if raw.host.is_empty() {
            return Err(self.error(
                None,
                "",
                "no [[host]] defined; a testbed needs at least one host",
            ));
        }

        let processing = self.processing_by_node(&raw)?;
        let links = raw
            .link
            .iter()
            .map(|l| self.link(l, &nodes, &processing))
            .collect::<Result<Vec<_>, _>>()?;
        self.check_shape(&raw, &links)?;
        self.check_link_names(&raw, &links)?;
        let hosts = self.addresses(&raw, &links)?;
        let routers = self.router_addresses(&raw, &hosts, &links)?;
        let schedule = match &raw.schedule {
            Some(s) => Some(self.schedule(s, &links, "schedule.", &self.label)?),
            None => None,
        };
        let switches = raw
            .switch
            .iter()
            .map(|s| Switch {
                name: s.name.get_ref().clone(),
            })
            .collect();
        let topology = Topology {
            name,
            seed,
            cpu_idle,
            hosts,
            switches,
            routers,
            links,
            schedule,
        };
        self.check_connected(&raw, &topology)?;
        Ok(topology)
    }

    /// Each host's and router's processing keys, applied to the link directions into it.
    fn processing_by_node(
        &self,
        raw: &RawFile,
    ) -> Result<BTreeMap<String, DirectionOverrides>, TestbedError> {
        let mut processing = BTreeMap::new();
        for h in &raw.host {
            let mut o = DirectionOverrides::default();
            self.processing_keys(&processing_keys!(h), "host", &mut o)?;
            processing.insert(h.name.get_ref().clone(), o);
        }
        for r in &raw.router {
            let mut o = DirectionOverrides::default();
            self.processing_keys(&processing_keys!(r), "router", &mut o)?;
            processing.insert(r.name.get_ref().clone(), o);
        }
        Ok(processing)
    }

    /// Link names are optional, checked like node names, and unique.
    fn check_link_names(&self, raw: &RawFile, links: &[Link]) -> Result<(), TestbedError> {
        let mut seen = BTreeSet::new();
        for (raw_link, link) in raw.link.iter().zip(links) {
            let (Some(name), Some(spanned)) = (&link.name, &raw_link.name) else {
                continue;
            };
            validate_name(name).map_err(|m| self.error(Some(spanned.span()), "link.name", m))?;
            if !seen.insert(name.as_str()) {
                return Err(self.error(
                    Some(spanned.span()),
                    "link.name",
                    format!("'{name}' names two links"),
                ));
            }
        }
        Ok(())
    }

    /// One link; `processing` holds each host's `per_packet`/`backlog`, which apply to the
    /// direction into that host below the link's and the direction's own keys.
    fn link(
        &self,
        raw: &RawLink,
        nodes: &BTreeMap<String, String>,
        processing: &BTreeMap<String, DirectionOverrides>,
    ) -> Result<Link, TestbedError> {
        let ends = raw.ends.get_ref();
        let span = Some(raw.ends.span());
        if ends.len() != 2 {
            return Err(self.error(
                span,
                "link.ends",
                "must name exactly two hosts, switches or routers",
            ));
        }
        for end in ends {
            if !nodes.contains_key(end) {
                return Err(self.error(
                    span,
                    "link.ends",
                    format!("'{end}' is not a [[host]], [[switch]] or [[router]] name"),
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
        let txqueuelen = match &raw.txqueuelen {
            Some(q) if !(1..=MAX_TXQUEUELEN).contains(q.get_ref()) => {
                return Err(self.error(
                    Some(q.span()),
                    "link.txqueuelen",
                    format!("{} is outside 1..={MAX_TXQUEUELEN} packets", q.get_ref()),
                ))
            }
            Some(q) => *q.get_ref() as u32,
            None => txqueuelen_default(),
        };
        let link_keys = self.overrides(&raw.keys(), "link")?;
        let direction = |to: &str, table: &Option<Spanned<RawDirection>>, name: &str| {
            let mut p = base.clone();
            if let Some(host) = processing.get(to) {
                host.apply_to(&mut p);
            }
            link_keys.apply_to(&mut p);
            if let Some(d) = table {
                self.overrides(&d.get_ref().keys(), name)?.apply_to(&mut p);
            }
            self.check_link_cells(&p, raw, table, name)?;
            Ok::<_, TestbedError>(p)
        };
        let a_to_b = direction(&ends[1], &raw.a_to_b, "link.a_to_b")?;
        let b_to_a = direction(&ends[0], &raw.b_to_a, "link.b_to_a")?;
        Ok(Link {
            name: raw.name.as_ref().map(|n| n.get_ref().clone()),
            ends: [ends[0].clone(), ends[1].clone()],
            preset,
            mtu,
            offload: raw.offload.unwrap_or_else(offload_default),
            line_rate: raw.line_rate.unwrap_or(false),
            txqueuelen,
            a_to_b,
            b_to_a,
        })
    }

    pub(super) fn overrides(
        &self,
        k: &DirectionKeys<'_>,
        table: &str,
    ) -> Result<DirectionOverrides, TestbedError> {
        let key = |name: &str| join_key(table, name);
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
        self.loss_keys(k, table, &mut o)?;
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
        if let Some(v) = k.trace {
            o.trace = Some(self.trace(v, &key("trace"))?);
        }
        if let Some(v) = k.circuit_setup {
            o.circuit_setup_ns = Some(self.duration_ns(v, &key("circuit_setup"))?);
        }
        if let Some(v) = k.circuit_setup_max {
            let ns = self.duration_ns(v, &key("circuit_setup_max"))?;
            if o.circuit_setup_ns.is_some_and(|setup| ns < setup) {
                return Err(self.error(
                    Some(v.span()),
                    &key("circuit_setup_max"),
                    "is below circuit_setup (the set-up delay is drawn uniformly between the two)",
                ));
            }
            o.circuit_setup_max_ns = Some(ns);
        }
        if let Some(v) = k.circuit_idle {
            let ns = self.duration_ns(v, &key("circuit_idle"))?;
            if ns == 0 {
                return Err(self.error(
                    Some(v.span()),
                    &key("circuit_idle"),
                    "must be longer than 0 (the idle time after which the circuit is released)",
                ));
            }
            o.circuit_idle_ns = Some(ns);
        }
        self.processing_keys(&k.processing, table, &mut o)?;
        self.cell_keys(&k.cells, table, &mut o)?;
        Ok(o)
    }

    /// `per_packet` (or `packet_rate`), `per_byte` and `backlog`: the receiving end's
    /// processing (see `crate::processing`).
    pub(super) fn processing_keys(
        &self,
        k: &ProcessingKeys<'_>,
        table: &str,
        o: &mut DirectionOverrides,
    ) -> Result<(), TestbedError> {
        if let (Some(_), Some(v)) = (k.per_packet, k.packet_rate) {
            return Err(self.error(
                Some(v.span()),
                &join_key(table, "packet_rate"),
                "give per_packet or packet_rate, not both (packet_rate = 1 / per_packet)",
            ));
        }
        if let Some(v) = k.packet_rate {
            let key = join_key(table, "packet_rate");
            let rate = self.unit(v, &key, linkperf_units::parse_count, |n| n as u64)?;
            if rate == 0 || 1_000_000_000 / rate > MAX_PER_PACKET_NS {
                return Err(self.error(
                    Some(v.span()),
                    &key,
                    "must be at least 1 (packets per second the end processes, e.g. 20000)",
                ));
            }
            o.per_packet_ns = Some(1_000_000_000 / rate);
        }
        if let Some(v) = k.per_byte {
            let key = join_key(table, "per_byte");
            let ns = self.duration_ns(v, &key)?;
            if ns > 1_000_000 {
                return Err(self.error(
                    Some(v.span()),
                    &key,
                    "is above 1ms (the processing time of one byte, e.g. \"8ns\")",
                ));
            }
            o.per_byte_ns = Some(ns);
        }
        if let Some(v) = k.per_packet {
            let key = join_key(table, "per_packet");
            let ns = self.duration_ns(v, &key)?;
            if ns > MAX_PER_PACKET_NS {
                return Err(self.error(
                    Some(v.span()),
                    &key,
                    "is above 1s (the processing time of one packet, e.g. \"550us\")",
                ));
            }
            o.per_packet_ns = Some(ns);
        }
        if let Some(v) = k.backlog {
            if !(1..=MAX_TXQUEUELEN).contains(v.get_ref()) {
                return Err(self.error(
                    Some(v.span()),
                    &join_key(table, "backlog"),
                    format!(
                        "{} is outside 1..={MAX_TXQUEUELEN} packets (the processing end's backlog)",
                        v.get_ref()
                    ),
                ));
            }
            o.backlog_packets = Some(*v.get_ref() as u64);
        }
        Ok(())
    }

    /// `loss`, `gilbert` and `ber` of one table.
    fn loss_keys(
        &self,
        k: &DirectionKeys<'_>,
        table: &str,
        o: &mut DirectionOverrides,
    ) -> Result<(), TestbedError> {
        let key = |name: &str| join_key(table, name);
        if let Some(v) = k.loss {
            o.loss = Some(self.percent(v, &key("loss"))?);
        }
        if let Some(g) = k.gilbert {
            let g = g.get_ref();
            let gk = |n: &str| join_key(table, &format!("gilbert.{n}"));
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
        Ok(())
    }

    /// Reads a trace file (relative to the topology or schedule file, or the working
    /// directory for `testbed set`); its errors name its own line too.
    fn trace(&self, v: &Spanned<String>, key: &str) -> Result<Trace, TestbedError> {
        let given = std::path::Path::new(v.get_ref());
        let path = match &self.base_dir {
            Some(dir) if given.is_relative() => dir.join(given),
            _ => given.to_path_buf(),
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            self.error(
                Some(v.span()),
                key,
                format!("cannot read trace {}: {e}", path.display()),
            )
        })?;
        let shown = path.display().to_string();
        Trace::parse(&shown, &text).map_err(|(line, msg)| {
            self.error(Some(v.span()), key, format!("{shown}: line {line}: {msg}"))
        })
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

    pub(super) fn duration_ns(&self, v: &Spanned<Value>, key: &str) -> Result<u64, TestbedError> {
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

    /// A host's `cpu` share: a percentage of one CPU in (0, 100 %].
    pub(super) fn cpu_share(&self, h: &RawHost) -> Result<Option<f64>, TestbedError> {
        let Some(v) = &h.cpu else {
            return Ok(None);
        };
        let bad = |shown: String| {
            self.error(
                Some(v.span()),
                "host.cpu",
                format!(
                    "{shown} is not a CPU share: a percentage of one CPU from {}% to 100% (e.g. \"25%\")",
                    MIN_CPU_SHARE * 100.0
                ),
            )
        };
        let share = self
            .percent(v, "host.cpu")
            .map_err(|_| bad(show(v.get_ref())))?;
        if !(MIN_CPU_SHARE..=1.0).contains(&share) {
            return Err(bad(show(v.get_ref())));
        }
        Ok(Some(share))
    }

    /// A host's `cwnd_clamp`: whole segments, at least 2 (Linux's smallest window after a
    /// loss) and at most [`MAX_CWND_CLAMP`].
    pub(super) fn cwnd_clamp(&self, h: &RawHost) -> Result<Option<u32>, TestbedError> {
        let Some(v) = &h.cwnd_clamp else {
            return Ok(None);
        };
        match v.get_ref().as_integer() {
            Some(n) if (2..=i64::from(MAX_CWND_CLAMP)).contains(&n) => Ok(Some(n as u32)),
            _ => Err(self.error(
                Some(v.span()),
                "host.cwnd_clamp",
                format!(
                    "{} is not a congestion window clamp: a whole number of segments from 2 to {MAX_CWND_CLAMP}",
                    show(v.get_ref())
                ),
            )),
        }
    }

    /// Switches run no spanning tree, so the switches and the links between them must be
    /// loop-free; hosts (multi-homed or not) and routers do not bridge, so cycles through
    /// them are paths to choose from (see `paths`).
    fn check_shape(&self, raw: &RawFile, links: &[Link]) -> Result<(), TestbedError> {
        let switches: BTreeSet<&str> = raw
            .switch
            .iter()
            .map(|s| s.name.get_ref().as_str())
            .collect();
        let mut parent: BTreeMap<String, String> = BTreeMap::new();
        fn root(parent: &BTreeMap<String, String>, mut n: String) -> String {
            while let Some(p) = parent.get(&n) {
                n = p.clone();
            }
            n
        }
        for (raw_link, link) in raw.link.iter().zip(links) {
            if !link.ends.iter().all(|e| switches.contains(e.as_str())) {
                continue;
            }
            let (ra, rb) = (
                root(&parent, link.ends[0].clone()),
                root(&parent, link.ends[1].clone()),
            );
            if ra == rb {
                return Err(self.error(
                    Some(raw_link.ends.span()),
                    "link.ends",
                    format!(
                        "link {}-{} closes a loop of switches; switches run no spanning tree, so the links between switches must form a tree (join segments through a [[router]] or a multi-homed host instead)",
                        link.ends[0], link.ends[1]
                    ),
                ));
            }
            parent.insert(ra, rb);
        }
        Ok(())
    }

    /// Every host reaches every other host when routes are computed between them (a
    /// topology with routers or multi-homed hosts). Plain segments need no routes, so
    /// separate segments in one testbed (side-by-side experiments) stay allowed.
    /// The top-level `cpu_idle` key: "os" (the default) or "poll".
    fn cpu_idle(&self, value: Option<&Spanned<String>>) -> Result<CpuIdle, TestbedError> {
        match value.map(|c| (c.get_ref().as_str(), c.span())) {
            Some(("poll", _)) => Ok(CpuIdle::Poll),
            None | Some(("os", _)) => Ok(CpuIdle::Os),
            Some((other, span)) => Err(self.error(
                Some(span),
                "cpu_idle",
                format!(
                    "'{other}' is not accepted: \"poll\" (idle CPUs poll, fast wake-ups) or \
                     \"os\" (the machine's idle states; the default)"
                ),
            )),
        }
    }

    fn check_connected(&self, raw: &RawFile, topo: &Topology) -> Result<(), TestbedError> {
        let multi_homed = topo.hosts.iter().any(|h| {
            let links = topo.links.iter().filter(|l| l.ends.contains(&h.name));
            links.count() > 1
        });
        if topo.routers.is_empty() && !multi_homed {
            return Ok(());
        }
        for (j, (raw_host, h)) in raw.host.iter().zip(&topo.hosts).enumerate() {
            let Some(other) = topo.hosts[..j]
                .iter()
                .find(|o| !super::paths::reaches(topo, &o.name, &h.name))
            else {
                continue;
            };
            return Err(self.error(
                Some(raw_host.name.span()),
                "host.name",
                format!(
                    "host '{}' cannot be reached from host '{}': no path of links through switches and routers joins them (hosts do not forward); every host must reach every other",
                    h.name, other.name
                ),
            ));
        }
        Ok(())
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// `table.name`, or `name` alone for the top level (`testbed set` arguments).
pub(super) fn join_key(table: &str, name: &str) -> String {
    if table.is_empty() {
        name.to_string()
    } else {
        format!("{table}.{name}")
    }
}
