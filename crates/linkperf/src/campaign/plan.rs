//! From a parsed campaign file to the list of phases and flows to run.

use super::file::{at, CampaignFile, FlowEntry, FlowOptions, PhaseEntry};
use linkperf_proto::{Direction, Protocol, TestConfig};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// `user@host` when linkperf starts the agent over OpenSSH.
    pub ssh: Option<String>,
    pub ssh_options: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub from: String,
    pub to: String,
    /// The options as written, so a sweep point can override some of them.
    pub options: FlowOptions,
    pub config: TestConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    pub duration_s: f64,
    pub flows: Vec<Flow>,
    /// Testbed link parameters set before the phase (`link.LINK.KEY` -> value).
    pub set: Point,
}

/// One combination of the campaign's `vary` values (empty without `vary`).
pub type Point = std::collections::BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq)]
pub struct Campaign {
    pub name: String,
    pub sessions: u32,
    pub interval_s: f64,
    pub start_delay_s: f64,
    pub pause_s: f64,
    pub shortfall_percent: f64,
    pub outlier_percent: f64,
    pub agents: Vec<Agent>,
    pub phases: Vec<Phase>,
    /// The sweep's points; a single empty point when nothing varies.
    pub points: Vec<Point>,
    /// The running testbed whose links phases and points set.
    pub testbed: Option<String>,
}

impl Campaign {
    /// The phases with every flow's options overridden by `point`.
    pub fn phases_at(&self, point: &Point) -> Result<Vec<Phase>, String> {
        self.phases
            .iter()
            .map(|p| {
                let flows = p
                    .flows
                    .iter()
                    .map(|f| {
                        let mut options = f.options.clone();
                        for (name, value) in point {
                            if !crate::sweep::plan::is_link(name) {
                                set_option(&mut options, name, value)?;
                            }
                        }
                        let config = flow_config(&options, p.duration_s, self.interval_s)?;
                        Ok(Flow {
                            options,
                            config,
                            ..f.clone()
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Ok(Phase { flows, ..p.clone() })
            })
            .collect()
    }

    pub fn agent(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.name == name)
    }
}

fn seconds(path: &str, text: &str, v: &toml::Spanned<String>, key: &str) -> Result<f64, String> {
    linkperf_units::parse_duration(v.get_ref())
        .map(|d| d.as_secs_f64())
        .map_err(|e| at(path, text, v.span(), key, &e.to_string()))
}

/// A size or rate given as a number or a string ("64K", "950M").
fn value_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn size(v: &Option<toml::Value>, key: &str) -> Result<Option<u32>, String> {
    let Some(v) = v else { return Ok(None) };
    let text = value_text(v).ok_or_else(|| format!("key '{key}': expected a size such as 64K"))?;
    let bytes = linkperf_units::parse_size(&text).map_err(|e| format!("key '{key}': {e}"))?;
    u32::try_from(bytes)
        .map(Some)
        .map_err(|_| format!("key '{key}': {text} is too large"))
}

fn rate(v: &Option<toml::Value>, key: &str) -> Result<Option<u64>, String> {
    let Some(v) = v else { return Ok(None) };
    let text = value_text(v).ok_or_else(|| format!("key '{key}': expected a rate such as 950M"))?;
    linkperf_units::parse_rate(&text)
        .map(Some)
        .map_err(|e| format!("key '{key}': {e}"))
}

/// The test configuration of one flow of a phase.
pub fn flow_config(
    o: &FlowOptions,
    duration_s: f64,
    interval_s: f64,
) -> Result<TestConfig, String> {
    if let Some(k) = o.unknown.keys().next() {
        return Err(format!("unknown flow option '{k}'"));
    }
    let udp = o.udp.unwrap_or(false);
    let bitrate = rate(&o.bitrate, "bitrate")?;
    let traffic = match &o.traffic {
        Some(text) => {
            let mut t = linkperf_traffic::Traffic::parse(text, &|p| std::fs::read(p))
                .map_err(|e| format!("key 'traffic': {e}"))?;
            t.seed = Some(o.traffic_seed.unwrap_or_else(crate::spec::fresh_seed));
            Some(t)
        }
        None => None,
    };
    let config = TestConfig {
        protocol: if udp { Protocol::Udp } else { Protocol::Tcp },
        direction: match (o.reverse.unwrap_or(false), o.bidir.unwrap_or(false)) {
            (_, true) => Direction::Bidir,
            (true, false) => Direction::Reverse,
            _ => Direction::Forward,
        },
        duration_s,
        bytes: None,
        interval_s,
        omit_s: 0.0,
        parallel: o.parallel.unwrap_or(1),
        length: size(&o.length, "length")?.unwrap_or(if udp { 1460 } else { 128 * 1024 }),
        sndbuf: size(&o.sndbuf, "sndbuf")?.or(size(&o.window, "window")?),
        rcvbuf: size(&o.rcvbuf, "rcvbuf")?.or(size(&o.window, "window")?),
        nodelay: o.nodelay.unwrap_or(false),
        mss: o.mss,
        congestion: o.congestion.clone(),
        pacing_rate: rate(&o.pacing_rate, "pacing_rate")?,
        bitrate: match (bitrate, udp) {
            (Some(0), _) => None,
            (Some(r), _) => Some(r),
            // A model sets its own pace (cbr's is the bitrate's).
            (None, _) if traffic.as_ref().is_some_and(|t| !t.is_cbr()) => None,
            (None, true) => Some(1_000_000),
            (None, false) => None,
        },
        dont_fragment: o.dont_fragment.unwrap_or(false),
        zerocopy: o.zerocopy.unwrap_or(false),
        start_at_unix_ms: None,
        traffic: traffic.map(Box::new),
        tos: match &o.dscp {
            Some(d) => {
                Some(crate::spec::parse_dscp(d).map_err(|e| format!("key 'dscp': {e}"))? << 2)
            }
            None => None,
        },
        window_clamp: size(&o.window_clamp, "window_clamp")?,
    };
    config.validate()?;
    Ok(config)
}

/// Sets one varied option (canonical `linkperf sweep --vary` name) on a flow.
fn set_option(o: &mut FlowOptions, name: &str, value: &str) -> Result<(), String> {
    let text = || Some(toml::Value::String(value.to_string()));
    let on = matches!(value, "on" | "true" | "yes" | "1");
    let count = || {
        linkperf_units::parse_count(value)
            .map_err(|e| e.to_string())
            .and_then(|n| u32::try_from(n).map_err(|_| format!("{name}={value} is too large")))
    };
    match name {
        "window" => o.window = text(),
        "sndbuf" => o.sndbuf = text(),
        "rcvbuf" => o.rcvbuf = text(),
        "length" => o.length = text(),
        "bitrate" => o.bitrate = text(),
        "pacing-rate" => o.pacing_rate = text(),
        "congestion" => o.congestion = Some(value.to_string()),
        "parallel" => o.parallel = Some(count()?),
        "mss" => o.mss = Some(count()?),
        "nodelay" => o.nodelay = Some(on),
        "udp" => o.udp = Some(on),
        "reverse" => o.reverse = Some(on),
        "bidir" => o.bidir = Some(on),
        "zerocopy" => o.zerocopy = Some(on),
        "dont-fragment" => o.dont_fragment = Some(on),
        "traffic" => o.traffic = Some(value.to_string()),
        "traffic-seed" => o.traffic_seed = Some(u64::from(count()?)),
        "dscp" => o.dscp = Some(value.to_string()),
        "clamp" => o.window_clamp = text(),
        other => {
            return Err(format!(
                "'{other}' cannot vary in a campaign (phases set the duration)"
            ))
        }
    }
    Ok(())
}

/// The (from, to) pairs a flow entry stands for.
fn expand(entry: &FlowEntry) -> Result<Vec<(String, String)>, String> {
    let mut forms = 0;
    let mut pairs = Vec::new();
    if let (Some(f), Some(t)) = (&entry.from, &entry.to) {
        forms += 1;
        pairs.push((f.get_ref().clone(), t.get_ref().clone()));
    } else if entry.from.is_some() || entry.to.is_some() {
        return Err("a flow needs both 'from' and 'to'".into());
    }
    if let Some(p) = &entry.pairs {
        forms += 1;
        pairs.extend(p.get_ref().iter().cloned());
    }
    if let Some(m) = &entry.mesh {
        forms += 1;
        for a in m.get_ref() {
            for b in m.get_ref() {
                if a != b {
                    pairs.push((a.clone(), b.clone()));
                }
            }
        }
    }
    if let Some(m) = &entry.many_to_one {
        forms += 1;
        let m = m.get_ref();
        pairs.extend(m.from.iter().map(|f| (f.clone(), m.to.clone())));
    }
    if let Some(m) = &entry.one_to_many {
        forms += 1;
        let m = m.get_ref();
        pairs.extend(m.to.iter().map(|t| (m.from.clone(), t.clone())));
    }
    match forms {
        0 => Err("a flow needs 'from' and 'to', or one of 'pairs', 'mesh', 'many_to_one', 'one_to_many'".into()),
        1 => Ok(pairs),
        _ => Err("a flow takes one of 'from'/'to', 'pairs', 'mesh', 'many_to_one', 'one_to_many', not several".into()),
    }
}

/// Where a flow entry starts in the file, for error messages.
fn entry_span(entry: &FlowEntry) -> std::ops::Range<usize> {
    entry
        .from
        .as_ref()
        .map(|f| f.span())
        .or(entry.pairs.as_ref().map(|p| p.span()))
        .or(entry.mesh.as_ref().map(|p| p.span()))
        .or(entry.many_to_one.as_ref().map(|p| p.span()))
        .or(entry.one_to_many.as_ref().map(|p| p.span()))
        .unwrap_or(0..0)
}

/// A checked campaign from its parsed file; errors name the file, line and key.
pub fn build(
    path: &str,
    text: &str,
    file: CampaignFile,
    default_name: &str,
) -> Result<Campaign, String> {
    let agents = agents(path, text, &file)?;
    let names: BTreeSet<String> = agents.iter().map(|a| a.name.clone()).collect();
    let interval_s = match &file.interval {
        Some(v) => seconds(path, text, v, "interval")?,
        None => 1.0,
    };
    if interval_s < 0.05 {
        return Err(format!("{path}: key 'interval': use at least 50ms"));
    }
    let phases = file
        .phases
        .iter()
        .map(|p| phase(path, text, p, &names, interval_s))
        .collect::<Result<Vec<_>, _>>()?;
    if phases.is_empty() {
        return Err(format!("{path}: no [[phase]]: nothing to run"));
    }
    let sessions = *file.sessions.get_ref();
    if sessions == 0 {
        return Err(at(
            path,
            text,
            file.sessions.span(),
            "sessions",
            "must be at least 1",
        ));
    }
    let opt_seconds = |v: &Option<toml::Spanned<String>>, key: &str, default: f64| match v {
        Some(v) => seconds(path, text, v, key),
        None => Ok(default),
    };
    let campaign = Campaign {
        name: file
            .name
            .clone()
            .unwrap_or_else(|| default_name.to_string()),
        sessions,
        interval_s,
        start_delay_s: opt_seconds(&file.start_delay, "start_delay", 1.0)?,
        pause_s: opt_seconds(&file.pause, "pause", 0.5)?,
        shortfall_percent: file.shortfall_percent.unwrap_or(2.0),
        outlier_percent: file.outlier_percent.unwrap_or(5.0),
        agents,
        phases,
        points: sweep_points(path, text, &file)?,
        testbed: file.testbed.as_ref().map(|t| t.get_ref().clone()),
    };
    // Every point must give valid flows before anything runs.
    for p in &campaign.points {
        campaign
            .phases_at(p)
            .map_err(|m| format!("{path}: key 'vary': {m}"))?;
    }
    Ok(campaign)
}

/// The agents, each named once, reached by address or over SSH.
fn agents(path: &str, text: &str, file: &CampaignFile) -> Result<Vec<Agent>, String> {
    let default_port = file.port.unwrap_or(linkperf_proto::DEFAULT_PORT);
    let mut agents: Vec<Agent> = Vec::new();
    for a in &file.agents {
        let name = a.name.get_ref().clone();
        if agents.iter().any(|known| known.name == name) {
            return Err(at(
                path,
                text,
                a.name.span(),
                "name",
                &format!("agent '{name}' is declared twice"),
            ));
        }
        let (host, port) = match (&a.address, &a.ssh) {
            (Some(addr), None) => split_port(addr.get_ref(), a.port.unwrap_or(default_port))
                .map_err(|m| at(path, text, addr.span(), "address", &m))?,
            (None, Some(ssh)) => {
                let host = ssh
                    .get_ref()
                    .rsplit('@')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                if host.is_empty() {
                    return Err(at(path, text, ssh.span(), "ssh", "expected user@host"));
                }
                (host, a.port.unwrap_or(default_port))
            }
            (Some(addr), Some(_)) => {
                return Err(at(
                    path,
                    text,
                    addr.span(),
                    "address",
                    "give either 'address' or 'ssh', not both",
                ))
            }
            (None, None) => {
                return Err(at(
                    path,
                    text,
                    a.name.span(),
                    "name",
                    &format!("agent '{name}' needs 'address' or 'ssh'"),
                ))
            }
        };
        agents.push(Agent {
            name,
            host,
            port,
            ssh: a.ssh.as_ref().map(|s| s.get_ref().clone()),
            ssh_options: a.ssh_options.clone(),
        });
    }
    Ok(agents)
}

/// One phase: its length and its flows, each between two known agents.
fn phase(
    path: &str,
    text: &str,
    p: &PhaseEntry,
    names: &BTreeSet<String>,
    interval_s: f64,
) -> Result<Phase, String> {
    let duration_s = seconds(path, text, &p.duration, "duration")?;
    if duration_s <= 0.0 {
        return Err(at(
            path,
            text,
            p.duration.span(),
            "duration",
            "must be positive",
        ));
    }
    let mut flows = Vec::new();
    for entry in &p.flows {
        let span = entry_span(entry);
        let bad = |m: &str| at(path, text, span.clone(), "flow", m);
        let pairs = expand(entry).map_err(|m| bad(&m))?;
        let config = flow_config(&entry.options, duration_s, interval_s).map_err(|m| bad(&m))?;
        for (from, to) in pairs {
            if let Some(n) = [&from, &to].into_iter().find(|n| !names.contains(*n)) {
                return Err(bad(&format!("no agent named '{n}'")));
            }
            if from == to {
                return Err(bad(&format!("'{from}' cannot test against itself")));
            }
            flows.push(Flow {
                from,
                to,
                options: entry.options.clone(),
                config: config.clone(),
            });
        }
    }
    if flows.is_empty() {
        return Err(at(
            path,
            text,
            p.name.span(),
            "phase",
            "a phase needs at least one flow",
        ));
    }
    Ok(Phase {
        name: p.name.get_ref().clone(),
        duration_s,
        flows,
        set: phase_set(path, text, p)?,
    })
}

/// A phase's `set = ["link.wan.ber=1e-6", ...]` as names and values.
fn phase_set(path: &str, text: &str, p: &PhaseEntry) -> Result<Point, String> {
    let mut set = Point::new();
    let Some(entries) = &p.set else {
        return Ok(set);
    };
    let bad = |m: &str| at(path, text, entries.span(), "set", m);
    for entry in entries.get_ref() {
        let (name, value) = entry
            .split_once('=')
            .filter(|(n, v)| crate::sweep::plan::is_link(n.trim()) && !v.trim().is_empty())
            .ok_or_else(|| {
                bad(&format!(
                    "'{entry}' is not a link setting; accepted: link.LINK[.DIRECTION].KEY=VALUE, e.g. link.wan.ber=1e-6"
                ))
            })?;
        if set
            .insert(name.trim().to_string(), value.trim().to_string())
            .is_some()
        {
            return Err(bad(&format!("'{}' is set twice", name.trim())));
        }
    }
    Ok(set)
}

/// The points of the file's `vary` (one empty point without it).
fn sweep_points(path: &str, text: &str, file: &CampaignFile) -> Result<Vec<Point>, String> {
    let mut varies = Vec::new();
    if let Some(v) = &file.vary {
        for spec in v.get_ref() {
            varies.push(
                crate::sweep::plan::parse_vary(spec)
                    .map_err(|m| at(path, text, v.span(), "vary", &m))?,
            );
        }
    }
    crate::sweep::plan::expand(&varies).map_err(|m| format!("{path}: key 'vary': {m}"))
}

/// `host`, `host:port`, `[v6]:port` or a bare IPv6 address.
fn split_port(address: &str, default: u16) -> Result<(String, u16), String> {
    if let Some(rest) = address.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').ok_or("unclosed '[' in address")?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| format!("bad port '{p}'"))?,
            None => default,
        };
        return Ok((host.to_string(), port));
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Ok((
            host.to_string(),
            port.parse().map_err(|_| format!("bad port '{port}'"))?,
        )),
        _ => Ok((address.to_string(), default)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::file::parse;

    fn build_text(text: &str) -> Result<Campaign, String> {
        build("c.toml", text, parse("c.toml", text)?, "c")
    }

    const AGENTS: &str = r#"
[[agent]]
name = "a1"
address = "10.50.0.1"
[[agent]]
name = "a2"
address = "10.50.0.2:5300"
[[agent]]
name = "b"
address = "[fd00::3]:5400"
"#;

    #[test]
    fn patterns_expand_to_flows() {
        let text = format!(
            "{AGENTS}\n[[phase]]\nname = \"m\"\nduration = \"2s\"\n[[phase.flow]]\nmesh = [\"a1\", \"a2\", \"b\"]\nudp = true\nbitrate = \"10M\"\n[[phase.flow]]\nmany_to_one = {{ from = [\"a1\", \"a2\"], to = \"b\" }}\n"
        );
        let c = build_text(&text).unwrap();
        assert_eq!(c.phases[0].flows.len(), 6 + 2);
        let f = &c.phases[0].flows[0];
        assert_eq!(f.config.bitrate, Some(10_000_000));
        assert_eq!(f.config.duration_s, 2.0);
        assert_eq!(c.agent("a2").unwrap().port, 5300);
        assert_eq!(c.agent("b").unwrap().host, "fd00::3");
        assert_eq!(c.agent("a1").unwrap().port, linkperf_proto::DEFAULT_PORT);
    }

    #[test]
    fn unknown_agents_and_options_name_the_line() {
        let text = format!("{AGENTS}\n[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"zz\"\n");
        let e = build_text(&text).unwrap_err();
        assert!(e.contains("no agent named 'zz'"), "{e}");
        assert!(e.starts_with("c.toml:16:"), "{e}");
        let text = format!("{AGENTS}\n[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b\"\nbitrat = \"1M\"\n");
        let e = build_text(&text).unwrap_err();
        assert!(e.contains("unknown flow option 'bitrat'"), "{e}");
        let text = format!("{AGENTS}\n[[phase]]\nname = \"p\"\nduration = \"soon\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b\"\n");
        let e = build_text(&text).unwrap_err();
        assert!(e.contains("key 'duration'"), "{e}");
    }

    #[test]
    fn vary_expands_to_points_that_override_flow_options() {
        let text = format!(
            "vary = [\"bitrate=5M,10M\", \"length=1000,1400\"]\n{AGENTS}\n[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b\"\nudp = true\nbitrate = \"1M\"\n"
        );
        let c = build_text(&text).unwrap();
        assert_eq!(c.points.len(), 4);
        let at = c.phases_at(&c.points[3]).unwrap();
        assert_eq!(at[0].flows[0].config.bitrate, Some(10_000_000));
        assert_eq!(at[0].flows[0].config.length, 1400);
        assert_eq!(c.phases[0].flows[0].config.bitrate, Some(1_000_000));
        let bad = text.replace("bitrate=5M,10M", "time=1,2");
        assert!(build_text(&bad)
            .unwrap_err()
            .contains("cannot vary in a campaign"));
        let bad = text.replace("bitrate=5M,10M", "nonsense=1");
        assert!(build_text(&bad).unwrap_err().contains("key 'vary'"));
    }
}
