//! The monitoring schedule file (TOML): hosts (agents, as campaigns use
//! them), groups of host pairs (mesh, star, explicit pairs, other groups),
//! and tests (a campaign flow's options, so any `TestSpec` a flow can run,
//! or an rr latency measurement), each with its interval, random slip and
//! alert thresholds. Parsing and
//! checking end in a [`Schedule`] of jobs, one per test and ordered pair.
//!
//! Errors are one line naming the file, the line and the key.

use crate::campaign::file::{line_of, FlowOptions};
use crate::campaign::plan::{flow_spec, flow_values, split_port, Agent};
use crate::rr::RrSpec;
use crate::spec::TestSpec;
use linkperf_proto::messages::RrRequest;
use linkperf_proto::Protocol;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleFile {
    /// Default agent port.
    port: Option<u16>,
    #[serde(default, rename = "host")]
    hosts: Vec<HostEntry>,
    #[serde(default, rename = "group")]
    groups: Vec<GroupEntry>,
    #[serde(default, rename = "test")]
    tests: Vec<TestEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    name: Spanned<String>,
    /// A `linkperf server --allow-third-party`, `address[:port]`.
    address: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupEntry {
    name: Spanned<String>,
    /// Every ordered pair of these hosts.
    mesh: Option<Spanned<Vec<String>>>,
    /// The center to each leaf and back.
    star: Option<Spanned<Star>>,
    pairs: Option<Spanned<Vec<(String, String)>>>,
    /// Other groups whose pairs this one adds.
    include: Option<Spanned<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Star {
    center: String,
    leaves: Vec<String>,
}

/// A test: its timing, thresholds and a flow's options (flattened, so its
/// values carry no position: errors find the key's line in the text).
#[derive(Debug, Deserialize)]
struct TestEntry {
    name: String,
    group: String,
    interval: String,
    duration: String,
    slip: Option<String>,
    alert: Option<AlertEntry>,
    /// "throughput" (the default) or "rr" (request/response latency).
    kind: Option<String>,
    /// rr: request and response sizes, transactions per second, in flight,
    /// a new connection per transaction.
    request: Option<toml::Value>,
    response: Option<toml::Value>,
    rate: Option<String>,
    burst: Option<u32>,
    connect: Option<bool>,
    #[serde(flatten)]
    options: FlowOptions,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AlertEntry {
    /// Throughput below this percentage of the pair's median over the last week.
    throughput_below_percent: Option<f64>,
    loss_above_percent: Option<f64>,
    rtt_p99_above: Option<String>,
}

/// When a result raises an alert.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Thresholds {
    pub throughput_below_percent: Option<f64>,
    /// As a ratio (0.001 for 0.1 %).
    pub loss_above_ratio: Option<f64>,
    pub rtt_p99_above_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MonitorTest {
    pub name: String,
    pub interval_s: f64,
    pub slip_s: f64,
    /// The test a job runs; the controller names the destination agent.
    pub spec: TestSpec,
    /// Set for an rr latency test: the agent runs this instead of `spec`.
    pub rr: Option<RrRequest>,
    pub thresholds: Thresholds,
}

/// One test between one ordered pair of hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub test: usize,
    pub src: String,
    pub dst: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub hosts: Vec<Agent>,
    pub tests: Vec<MonitorTest>,
    pub jobs: Vec<Job>,
}

impl Schedule {
    /// The key a job's next run time is stored under.
    pub fn job_key(&self, job: &Job) -> String {
        format!("{}/{}/{}", self.tests[job.test].name, job.src, job.dst)
    }

    pub fn host(&self, name: &str) -> Option<&Agent> {
        self.hosts.iter().find(|h| h.name == name)
    }
}

/// Reads and checks a schedule file.
pub fn load(path: &str) -> Result<Schedule, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read the file: {e}"))?;
    parse(path, &text)
}

/// Parses and checks schedule text; `path` names it in errors.
pub fn parse(path: &str, text: &str) -> Result<Schedule, String> {
    let file: ScheduleFile = toml::from_str(text).map_err(|e| {
        let message = e.message().lines().next().unwrap_or("invalid schedule");
        match e.span() {
            Some(s) => format!("{path}:{}: {message}", line_of(text, s.start)),
            None => format!("{path}: {message}"),
        }
    })?;
    let spanned = |span: std::ops::Range<usize>, key: &str, msg: &str| {
        format!("{path}:{}: key '{key}': {msg}", line_of(text, span.start))
    };
    let hosts = hosts(&file, &spanned)?;
    let names: BTreeSet<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    let groups = groups(&file, &names, &spanned)?;
    let mut tests = Vec::new();
    let mut jobs = Vec::new();
    for (index, entry) in file.tests.iter().enumerate() {
        let at = |key: &str, msg: &str| {
            let line = key_line(text, "test", index, key);
            format!("{path}:{line}: key '{key}': {msg}")
        };
        let test = test(entry, &at)?;
        if tests.iter().any(|t: &MonitorTest| t.name == test.name) {
            return Err(at("name", &format!("a second test named '{}'", test.name)));
        }
        let pairs = groups.get(entry.group.as_str()).ok_or_else(|| {
            at(
                "group",
                &format!(
                    "no group named '{}' (groups: {})",
                    entry.group,
                    list(groups.keys())
                ),
            )
        })?;
        for (src, dst) in pairs {
            jobs.push(Job {
                test: tests.len(),
                src: src.clone(),
                dst: dst.clone(),
            });
        }
        tests.push(test);
    }
    if jobs.is_empty() {
        return Err(format!(
            "{path}: key 'test': the schedule runs no test between any pair"
        ));
    }
    Ok(Schedule { hosts, tests, jobs })
}

type At<'a> = dyn Fn(std::ops::Range<usize>, &str, &str) -> String + 'a;

fn hosts(file: &ScheduleFile, at: &At) -> Result<Vec<Agent>, String> {
    let mut out: Vec<Agent> = Vec::new();
    for h in &file.hosts {
        let name = h.name.get_ref();
        if out.iter().any(|a| &a.name == name) {
            return Err(at(
                h.name.span(),
                "name",
                &format!("a second host named '{name}'"),
            ));
        }
        let (host, port) = split_port(h.address.get_ref(), file.port.unwrap_or(5211))
            .map_err(|e| at(h.address.span(), "address", &e))?;
        out.push(Agent {
            name: name.clone(),
            host,
            port,
            ssh: None,
            ssh_options: Vec::new(),
        });
    }
    Ok(out)
}

type Pairs = Vec<(String, String)>;

/// Each group's ordered pairs, its included groups' pairs added; a cycle of
/// includes or an unknown name is an error at its line.
fn groups<'f>(
    file: &'f ScheduleFile,
    hosts: &BTreeSet<&str>,
    at: &At,
) -> Result<BTreeMap<&'f str, Pairs>, String> {
    let by_name: BTreeMap<&str, &GroupEntry> = file
        .groups
        .iter()
        .map(|g| (g.name.get_ref().as_str(), g))
        .collect();
    let mut out = BTreeMap::new();
    for g in &file.groups {
        let mut pairs = Vec::new();
        collect(g, &by_name, hosts, at, &mut Vec::new(), &mut pairs)?;
        out.insert(g.name.get_ref().as_str(), pairs);
    }
    Ok(out)
}

fn collect<'f>(
    g: &'f GroupEntry,
    by_name: &BTreeMap<&str, &'f GroupEntry>,
    hosts: &BTreeSet<&str>,
    at: &At,
    path: &mut Vec<&'f str>,
    out: &mut Pairs,
) -> Result<(), String> {
    let name = g.name.get_ref().as_str();
    path.push(name);
    let mut add = |span: std::ops::Range<usize>, key: &str, s: &str, d: &str| {
        for h in [s, d] {
            if !hosts.contains(h) {
                return Err(at(span.clone(), key, &format!("no host named '{h}'")));
            }
        }
        if s != d && !out.iter().any(|(a, b)| a == s && b == d) {
            out.push((s.to_string(), d.to_string()));
        }
        Ok(())
    };
    if let Some(m) = &g.mesh {
        for s in m.get_ref() {
            for d in m.get_ref() {
                add(m.span(), "mesh", s, d)?;
            }
        }
    }
    if let Some(st) = &g.star {
        let star = st.get_ref();
        for leaf in &star.leaves {
            add(st.span(), "star", &star.center, leaf)?;
            add(st.span(), "star", leaf, &star.center)?;
        }
    }
    if let Some(p) = &g.pairs {
        for (s, d) in p.get_ref() {
            add(p.span(), "pairs", s, d)?;
        }
    }
    for inner in g.include.iter().flat_map(|i| i.get_ref()) {
        let span = g.include.as_ref().map(|i| i.span()).unwrap_or_default();
        if path.contains(&inner.as_str()) {
            let cycle = format!("{} -> {inner}", path.join(" -> "));
            return Err(at(
                span,
                "include",
                &format!("groups include each other: {cycle}"),
            ));
        }
        let Some(next) = by_name.get(inner.as_str()) else {
            return Err(at(span, "include", &format!("no group named '{inner}'")));
        };
        collect(next, by_name, hosts, at, path, out)?;
    }
    path.pop();
    Ok(())
}

fn test(entry: &TestEntry, at: &dyn Fn(&str, &str) -> String) -> Result<MonitorTest, String> {
    let secs = |key: &str, v: &str| {
        linkperf_units::parse_duration(v)
            .map(|d| d.as_secs_f64())
            .map_err(|e| at(key, &e.to_string()))
    };
    let interval_s = secs("interval", &entry.interval)?;
    let duration_s = secs("duration", &entry.duration)?;
    let slip_s = entry.slip.as_deref().map(|s| secs("slip", s)).transpose()?;
    if interval_s <= duration_s {
        return Err(at(
            "interval",
            &format!(
                "the interval ({}) must be longer than the test's duration ({})",
                entry.interval, entry.duration
            ),
        ));
    }
    if let Some(k) = entry.options.unknown.keys().next() {
        return Err(at(k, &format!("unknown key '{k}' in a test")));
    }
    // Intervals within a test: half of it, between 100 ms and 1 s.
    let interval = (duration_s / 2.0).clamp(0.1, 1.0);
    let (spec, rr) = match entry.kind.as_deref() {
        None | Some("throughput") => {
            if let Some(key) = rr_keys(entry).next() {
                return Err(at(
                    key,
                    &format!("'{key}' applies to rr tests (kind = \"rr\")"),
                ));
            }
            let spec = flow_spec(&entry.options, duration_s, interval)
                .map_err(|e| at(first_key(&e), &e))?;
            (spec, None)
        }
        Some("rr") => {
            let rr = rr_test(entry, (duration_s, interval), at)?;
            (TestSpec::new(""), Some(rr))
        }
        Some(other) => {
            return Err(at(
                "kind",
                &format!("unknown test kind '{other}' (throughput or rr)"),
            ))
        }
    };
    let a = entry.alert.as_ref();
    if rr.is_some() && a.is_some_and(|a| a.throughput_below_percent.is_some()) {
        return Err(at(
            "throughput_below_percent",
            "an rr test measures latency, not throughput",
        ));
    }
    let thresholds = Thresholds {
        throughput_below_percent: a.and_then(|a| a.throughput_below_percent),
        loss_above_ratio: a.and_then(|a| a.loss_above_percent).map(|p| p / 100.0),
        rtt_p99_above_s: a
            .and_then(|a| a.rtt_p99_above.as_deref())
            .map(|v| secs("rtt_p99_above", v))
            .transpose()?,
    };
    Ok(MonitorTest {
        name: entry.name.clone(),
        interval_s,
        // Default slip: a tenth of the interval, so a mesh does not fire at once.
        slip_s: slip_s.unwrap_or(interval_s / 10.0),
        spec,
        rr,
        thresholds,
    })
}

/// The rr keys a test sets.
fn rr_keys(entry: &TestEntry) -> impl Iterator<Item = &'static str> + '_ {
    [
        ("request", entry.request.is_some()),
        ("response", entry.response.is_some()),
        ("rate", entry.rate.is_some()),
        ("burst", entry.burst.is_some()),
        ("connect", entry.connect.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
}

/// An rr test: `udp` is the only flow option it takes; the rest is checked
/// as `linkperf rr`'s command line would be.
fn rr_test(
    entry: &TestEntry,
    (duration_s, interval_s): (f64, f64),
    at: &dyn Fn(&str, &str) -> String,
) -> Result<RrRequest, String> {
    let flow = flow_values(&entry.options).map_err(|e| at(first_key(&e), &e))?;
    if let Some((name, _)) = flow.iter().find(|(name, _)| *name != "udp") {
        let key = name.replace('-', "_");
        return Err(at(&key, &format!("'{key}' does not apply to an rr test")));
    }
    let size = |key: &str, v: &Option<toml::Value>| -> Result<Option<u64>, String> {
        let Some(v) = v else { return Ok(None) };
        let text = match v {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        linkperf_units::parse_size(&text)
            .map(Some)
            .map_err(|e| at(key, &e.to_string()))
    };
    let mut spec = RrSpec::new("");
    if entry.options.udp == Some(true) {
        spec.protocol = Protocol::Udp;
    }
    spec.request = size("request", &entry.request)?;
    spec.response = size("response", &entry.response)?;
    if let Some(rate) = &entry.rate {
        crate::rr::parse_rate(rate).map_err(|e| at("rate", &e))?;
    }
    spec.rate = entry.rate.clone();
    spec.burst = entry.burst.unwrap_or(1);
    spec.connect = entry.connect.unwrap_or(false);
    (spec.time, spec.interval) = (duration_s, interval_s);
    spec.request().map_err(|e| {
        // The checks speak of flags (--rate): name the key instead.
        let key = ["request", "response", "rate", "burst", "connect"]
            .into_iter()
            .find(|k| e.contains(&format!("--{k}")))
            .unwrap_or("kind");
        at(key, &e)
    })
}

/// The key a campaign option error names ("key 'bitrate': ...").
fn first_key(message: &str) -> &str {
    message
        .split_once("key '")
        .and_then(|(_, rest)| rest.split_once('\''))
        .map(|(k, _)| k)
        .unwrap_or("test")
}

/// The line of `key = ...` inside the `index`th `[[table]]` (or its header's
/// line when the key is not written there).
pub fn key_line(text: &str, table: &str, index: usize, key: &str) -> usize {
    let header = format!("[[{table}]]");
    let mut seen = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t == header {
            seen = Some(seen.map_or(0, |s| s + 1));
            if seen == Some(index + 1) {
                break;
            }
            continue;
        }
        if seen == Some(index) {
            if t.starts_with("[[") && !t.starts_with(&format!("[[{table}.")) {
                break;
            }
            let k = t.split('=').next().unwrap_or("").trim();
            if k == key {
                return n + 1;
            }
        }
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == header)
        .nth(index)
        .map_or(1, |(n, _)| n + 1)
}

fn list<'a>(names: impl Iterator<Item = &'a &'a str>) -> String {
    let v: Vec<&str> = names.copied().collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[host]]
name = "a"
address = "127.0.0.1:6001"
[[host]]
name = "b"
address = "127.0.0.1:6002"
[[host]]
name = "c"
address = "127.0.0.1"

[[group]]
name = "ab"
pairs = [["a", "b"]]
[[group]]
name = "all"
star = { center = "c", leaves = ["a", "b"] }
include = ["ab"]

[[test]]
name = "udp"
group = "all"
interval = "2s"
duration = "500ms"
udp = true
bitrate = "40M"
[test.alert]
loss_above_percent = 0.1
"#;

    #[test]
    fn groups_expand_to_pairs_with_included_groups() {
        let s = parse("m.toml", GOOD).unwrap();
        let keys: Vec<String> = s.jobs.iter().map(|j| s.job_key(j)).collect();
        assert_eq!(
            keys,
            ["udp/c/a", "udp/a/c", "udp/c/b", "udp/b/c", "udp/a/b"]
        );
        assert_eq!(s.host("c").unwrap().port, 5211);
        assert_eq!(s.tests[0].thresholds.loss_above_ratio, Some(0.001));
        assert_eq!(s.tests[0].spec.time, 0.5);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let cases = [
            (
                GOOD.replace("[\"a\", \"b\"]]", "[\"a\", \"z\"]]"),
                "m.toml:14: key 'pairs'",
            ),
            (
                GOOD.replace(
                    "include = [\"ab\"]",
                    "include = [\"ab\"]\n[[group]]\nname = \"ab2\"\ninclude = [\"all\"]",
                )
                .replace("pairs = [[\"a\", \"b\"]]", "include = [\"ab2\"]"),
                "key 'include': groups include each other",
            ),
            (
                GOOD.replace("interval = \"2s\"", "interval = \"400ms\""),
                "m.toml:23: key 'interval'",
            ),
            (
                GOOD.replace("udp = true", "udpp = true"),
                "m.toml:25: key 'udpp'",
            ),
            (
                GOOD.replace("bitrate = \"40M\"", "bitrate = \"fast\""),
                "m.toml:26: key 'bitrate'",
            ),
        ];
        for (text, want) in cases {
            let e = parse("m.toml", &text).unwrap_err();
            assert!(e.contains(want), "{e} does not contain {want}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
