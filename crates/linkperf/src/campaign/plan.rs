//! From a parsed campaign file to the list of phases and flows to run. Each
//! flow's test is a [`TestSpec`], built from the file's flow options in one
//! place ([`flow_spec`]) and varied by a sweep point through
//! [`TestSpec::set`], with the names of `linkperf sweep --vary`.

use super::file::{at, CampaignFile, FlowEntry, FlowOptions, PhaseEntry};
use crate::spec::TestSpec;
use linkperf_proto::TestConfig;
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
    /// The test the flow runs, as the file (and the sweep point) state it.
    /// Its target is the `to` agent, whose address is known only once the
    /// agents run: the controller fills in `host`, `port` and `start_at`.
    pub spec: TestSpec,
    /// Seconds after the phase's agreed start at which the flow starts
    /// (its test lasts the rest of the phase).
    pub start_s: f64,
}

impl Flow {
    /// The configuration both ends of the flow run.
    pub fn config(&self) -> TestConfig {
        self.spec.config()
    }
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
    /// `--simulate`: each flow's ns-3 twin beside it (see `twin`).
    pub simulate: bool,
}

impl Campaign {
    /// The phases with every flow's test varied by `point`.
    pub fn phases_at(&self, point: &Point) -> Result<Vec<Phase>, String> {
        self.phases
            .iter()
            .map(|p| {
                let flows = p
                    .flows
                    .iter()
                    .map(|f| {
                        Ok(Flow {
                            spec: vary_flow(&f.spec, point)?,
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

/// A size or rate option's value as text, or what the key expects.
fn scalar(v: &Option<toml::Value>, key: &str, expected: &str) -> Result<Option<String>, String> {
    v.as_ref()
        .map(|v| value_text(v).ok_or_else(|| format!("key '{key}': expected {expected}")))
        .transpose()
}

/// The options a flow entry gives, each as its `--vary` name and the value
/// as text: the one map from the campaign file's keys to [`TestSpec`]
/// fields. (A file key is the name with `_` for `-`.)
pub(crate) fn flow_values(o: &FlowOptions) -> Result<Vec<(&'static str, String)>, String> {
    const SIZE: &str = "a size such as 64K";
    const RATE: &str = "a rate such as 950M";
    let flag = |b: Option<bool>| b.map(|b| b.to_string());
    let count = |n: Option<u32>| n.map(|n| n.to_string());
    let given = [
        ("udp", flag(o.udp)),
        // reverse before bidir: with both on, the flow is bidirectional.
        ("reverse", flag(o.reverse)),
        ("bidir", flag(o.bidir)),
        ("bitrate", scalar(&o.bitrate, "bitrate", RATE)?),
        ("length", scalar(&o.length, "length", SIZE)?),
        ("parallel", count(o.parallel)),
        ("window", scalar(&o.window, "window", SIZE)?),
        ("sndbuf", scalar(&o.sndbuf, "sndbuf", SIZE)?),
        ("rcvbuf", scalar(&o.rcvbuf, "rcvbuf", SIZE)?),
        ("congestion", o.congestion.clone()),
        ("nodelay", flag(o.nodelay)),
        ("mss", count(o.mss)),
        ("pacing-rate", scalar(&o.pacing_rate, "pacing_rate", RATE)?),
        (
            "pacing-timer",
            scalar(
                &o.pacing_timer,
                "pacing_timer",
                "microseconds or a duration such as 250us",
            )?,
        ),
        ("dont-fragment", flag(o.dont_fragment)),
        ("zerocopy", flag(o.zerocopy)),
        ("clamp", scalar(&o.window_clamp, "window_clamp", SIZE)?),
        (
            "sample",
            scalar(&o.sample, "sample", "a period such as 10ms")?,
        ),
        ("dscp", o.dscp.clone()),
        ("traffic-seed", o.traffic_seed.map(|s| s.to_string())),
        ("traffic", o.traffic.clone()),
    ];
    Ok(given
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name, v)))
        .collect())
}

/// The test of one flow of a phase: the phase gives its duration, the
/// campaign its interval, the file's flow options the rest.
pub fn flow_spec(o: &FlowOptions, duration_s: f64, interval_s: f64) -> Result<TestSpec, String> {
    if let Some(k) = o.unknown.keys().next() {
        return Err(format!("unknown flow option '{k}'"));
    }
    // No target yet: the controller names the `to` agent's address.
    let mut spec = TestSpec::new("");
    spec.time = duration_s;
    spec.interval = interval_s;
    for (name, value) in flow_values(o)? {
        spec.set(name, &value)
            .map_err(|e| format!("key '{}': {e}", name.replace('-', "_")))?;
    }
    spec.config().validate()?;
    Ok(spec)
}

/// A flow's test with a sweep point's values set by their `--vary` names.
fn vary_flow(spec: &TestSpec, point: &Point) -> Result<TestSpec, String> {
    let mut spec = spec.clone();
    // `link.*` values set the testbed (campaign::links), not the flows.
    for (name, value) in point
        .iter()
        .filter(|(n, _)| !crate::sweep::plan::is_link(n))
    {
        if matches!(name.as_str(), "time" | "omit" | "bytes") {
            return Err(format!(
                "'{name}' cannot vary in a campaign (phases set the duration)"
            ));
        }
        spec.set(name, value)?;
    }
    spec.config().validate()?;
    Ok(spec)
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
        simulate: false,
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
        let start_s = match &entry.start {
            Some(s) => seconds(path, text, s, "start")?,
            None => 0.0,
        };
        if start_s >= duration_s {
            let span = entry.start.as_ref().map_or(span.clone(), |s| s.span());
            return Err(at(
                path,
                text,
                span,
                "start",
                &format!("the flow must start before the phase's end ({duration_s} s)"),
            ));
        }
        let spec =
            flow_spec(&entry.options, duration_s - start_s, interval_s).map_err(|m| bad(&m))?;
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
                spec: spec.clone(),
                start_s,
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
pub(crate) fn split_port(address: &str, default: u16) -> Result<(String, u16), String> {
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
        assert_eq!(f.config().bitrate, Some(10_000_000));
        assert_eq!(f.config().duration_s, 2.0);
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
    fn a_flow_may_start_later_and_runs_to_the_phases_end() {
        let flows = "[[phase.flow]]\nfrom = \"a1\"\nto = \"b\"\n[[phase.flow]]\nfrom = \"a2\"\nto = \"b\"\nstart = \"2s\"\n";
        let text = format!("{AGENTS}\n[[phase]]\nname = \"p\"\nduration = \"5s\"\n{flows}");
        let c = build_text(&text).unwrap();
        let (first, late) = (&c.phases[0].flows[0], &c.phases[0].flows[1]);
        assert_eq!((first.start_s, first.config().duration_s), (0.0, 5.0));
        assert_eq!((late.start_s, late.config().duration_s), (2.0, 3.0));
        let e = build_text(&text.replace("\"2s\"", "\"5s\"")).unwrap_err();
        assert!(
            e.contains("key 'start'") && e.contains("before the phase's end"),
            "{e}"
        );
    }

    #[test]
    fn every_flow_option_reaches_the_test_both_ends_run() {
        let text = format!(
            "{AGENTS}\n[[phase]]\nname = \"p\"\nduration = \"3s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b\"\n\
             reverse = true\nlength = \"1K\"\nparallel = 3\nwindow = \"64K\"\nsndbuf = \"8K\"\nnodelay = true\n\
             mss = 1000\npacing_rate = \"5M\"\ncongestion = \"reno\"\nzerocopy = true\n\
             window_clamp = \"32K\"\ndscp = \"EF\"\nsample = \"20ms\"\n\
             [[phase.flow]]\nfrom = \"a2\"\nto = \"b\"\nudp = true\nbitrate = 2000000\ndont_fragment = true\n\
             pacing_timer = \"250us\"\n"
        );
        let c = build_text(&text).unwrap();
        let (tcp, udp) = (&c.phases[0].flows[0], &c.phases[0].flows[1]);
        assert_eq!(tcp.spec.host, "", "the controller names the target");
        let want = TestConfig {
            protocol: linkperf_proto::Protocol::Tcp,
            direction: linkperf_proto::Direction::Reverse,
            duration_s: 3.0,
            bytes: None,
            interval_s: 1.0,
            omit_s: 0.0,
            parallel: 3,
            length: 1024,
            sndbuf: Some(8192),
            rcvbuf: Some(65536),
            nodelay: true,
            mss: Some(1000),
            congestion: Some("reno".into()),
            pacing_rate: Some(5_000_000),
            bitrate: None,
            pacing_timer_us: None,
            dont_fragment: false,
            zerocopy: true,
            start_at_unix_ms: None,
            traffic: None,
            tos: Some(0xb8),
            window_clamp: Some(32768),
            sample_s: Some(0.02),
            mptcp: false,
            skip_rx_copy: false,
            doctor: None,
        };
        assert_eq!(tcp.config(), want);
        let u = udp.config();
        assert_eq!(u.protocol, linkperf_proto::Protocol::Udp);
        assert_eq!(
            (u.bitrate, u.length, u.dont_fragment, u.pacing_timer_us),
            (Some(2_000_000), 1460, true, Some(250))
        );
        // A point varies a flow by the sweep's names.
        let point: Point = [("bidir", "on"), ("pacing-rate", "7M"), ("parallel", "2")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let varied = vary_flow(&tcp.spec, &point).unwrap().config();
        assert_eq!(varied.direction, linkperf_proto::Direction::Bidir);
        assert_eq!((varied.pacing_rate, varied.parallel), (Some(7_000_000), 2));
        let bad = FlowOptions {
            window: Some(toml::Value::Boolean(true)),
            ..Default::default()
        };
        let e = flow_spec(&bad, 1.0, 1.0).unwrap_err();
        assert_eq!(e, "key 'window': expected a size such as 64K");
    }

    #[test]
    fn vary_expands_to_points_that_override_flow_options() {
        let text = format!(
            "vary = [\"bitrate=5M,10M\", \"length=1000,1400\"]\n{AGENTS}\n[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b\"\nudp = true\nbitrate = \"1M\"\n"
        );
        let c = build_text(&text).unwrap();
        assert_eq!(c.points.len(), 4);
        let at = c.phases_at(&c.points[3]).unwrap();
        assert_eq!(at[0].flows[0].config().bitrate, Some(10_000_000));
        assert_eq!(at[0].flows[0].config().length, 1400);
        assert_eq!(c.phases[0].flows[0].config().bitrate, Some(1_000_000));
        let bad = text.replace("bitrate=5M,10M", "time=1,2");
        assert!(build_text(&bad)
            .unwrap_err()
            .contains("cannot vary in a campaign"));
        let bad = text.replace("bitrate=5M,10M", "nonsense=1");
        assert!(build_text(&bad).unwrap_err().contains("key 'vary'"));
    }
}
