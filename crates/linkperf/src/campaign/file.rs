//! The campaign file: agents, phases and flows, as TOML.
//!
//! Errors name the file, the line and the key. Syntax errors and unknown keys
//! come from the TOML parser with their position; semantic errors (an agent
//! that does not exist, a bad rate) carry the span of the offending value.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignFile {
    /// Name of the campaign (default: the file stem).
    pub name: Option<String>,
    /// Repetitions of the whole list of phases.
    #[serde(default = "one")]
    pub sessions: Spanned<u32>,
    /// Interval between samples, e.g. "1s".
    pub interval: Option<Spanned<String>>,
    /// Lead time between the start order and the agreed start instant.
    pub start_delay: Option<Spanned<String>>,
    /// Pause between phases.
    pub pause: Option<Spanned<String>>,
    /// A host is flagged when it received less than its peers sent by more than this (percent).
    pub shortfall_percent: Option<f64>,
    /// A session is flagged when its aggregate deviates from the other sessions' median by more than this (percent).
    pub outlier_percent: Option<f64>,
    /// Default agent port.
    pub port: Option<u16>,
    #[serde(default, rename = "agent")]
    pub agents: Vec<AgentEntry>,
    #[serde(default, rename = "phase")]
    pub phases: Vec<PhaseEntry>,
    /// Sweep over flow options, as `linkperf sweep --vary`: every phase of
    /// every session runs once per combination, e.g. `["bitrate=500M,950M"]`;
    /// with `testbed`, also over its links (`"link.wan.ber=1e-7,1e-6"`).
    pub vary: Option<Spanned<Vec<String>>>,
    /// A running emulated testbed whose links phases and `vary` set.
    pub testbed: Option<Spanned<String>>,
}

fn one() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    pub name: Spanned<String>,
    /// Host or address of a running `linkperf server --allow-third-party`, optionally with `:port`.
    pub address: Option<Spanned<String>>,
    pub port: Option<u16>,
    /// `user@host`: start a temporary agent over OpenSSH.
    pub ssh: Option<Spanned<String>>,
    /// Extra arguments for ssh and scp, e.g. `["-i", "~/.ssh/lab", "-p", "2222"]`.
    #[serde(default)]
    pub ssh_options: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseEntry {
    pub name: Spanned<String>,
    pub duration: Spanned<String>,
    /// Link parameters set on the testbed before the phase runs, named as
    /// `vary` names them: `["link.wan.ber=1e-6", "link.wan.a_to_b.delay=5ms"]`.
    pub set: Option<Spanned<Vec<String>>>,
    #[serde(default, rename = "flow")]
    pub flows: Vec<FlowEntry>,
}

/// A flow, or a pattern that expands to flows, with client options.
/// (Unknown keys land in `options.unknown`: serde cannot deny them through a
/// flattened struct, so validation reports them.)
#[derive(Debug, Deserialize, Clone)]
pub struct FlowEntry {
    pub from: Option<Spanned<String>>,
    pub to: Option<Spanned<String>>,
    /// `[["a1","b1"], ["a2","b2"]]`
    pub pairs: Option<Spanned<Vec<(String, String)>>>,
    /// Every ordered pair of these agents.
    pub mesh: Option<Spanned<Vec<String>>>,
    /// `many_to_one = { from = ["a1","a2"], to = "b" }`
    pub many_to_one: Option<Spanned<ManyToOne>>,
    /// `one_to_many = { from = "a", to = ["b1","b2"] }`
    pub one_to_many: Option<Spanned<OneToMany>>,
    /// When the flow starts, after the phase's start (default "0s"); it
    /// runs to the phase's end.
    pub start: Option<Spanned<String>>,
    #[serde(flatten)]
    pub options: FlowOptions,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct ManyToOne {
    pub from: Vec<String>,
    pub to: String,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct OneToMany {
    pub from: String,
    pub to: Vec<String>,
}

/// Client options of a flow, spelt as the long command-line options. Plain
/// types: values inside a flattened struct carry no position.
#[derive(Debug, Deserialize, Clone, Default, PartialEq)]
pub struct FlowOptions {
    pub udp: Option<bool>,
    pub bitrate: Option<toml::Value>,
    pub length: Option<toml::Value>,
    pub parallel: Option<u32>,
    pub window: Option<toml::Value>,
    pub sndbuf: Option<toml::Value>,
    pub rcvbuf: Option<toml::Value>,
    pub congestion: Option<String>,
    pub nodelay: Option<bool>,
    pub mss: Option<u32>,
    pub pacing_rate: Option<toml::Value>,
    /// `--pacing-timer`: microseconds, or a duration such as "250us".
    pub pacing_timer: Option<toml::Value>,
    /// The `to` agent sends (iperf3 -R).
    pub reverse: Option<bool>,
    pub bidir: Option<bool>,
    pub dont_fragment: Option<bool>,
    pub zerocopy: Option<bool>,
    /// A traffic model or profile (docs/traffic.md), its seed, a DSCP mark.
    pub traffic: Option<String>,
    pub traffic_seed: Option<u64>,
    pub dscp: Option<String>,
    pub window_clamp: Option<toml::Value>,
    /// Seconds between time-series samples (`--sample`), e.g. "10ms".
    pub sample: Option<toml::Value>,
    #[serde(flatten)]
    pub unknown: BTreeMap<String, toml::Value>,
}

/// Line (1-based) of a byte offset in the file text.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A semantic error with its position.
pub fn at(
    path: &str,
    text: &str,
    span: std::ops::Range<usize>,
    key: &str,
    message: &str,
) -> String {
    if span.start == 0 && span.end == 0 {
        format!("{path}: key '{key}': {message}")
    } else {
        format!(
            "{path}:{}: key '{key}': {message}",
            line_of(text, span.start)
        )
    }
}

/// Parses the file text; the error is one line naming file, line and key.
pub fn parse(path: &str, text: &str) -> Result<CampaignFile, String> {
    toml::from_str::<CampaignFile>(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        let message = e
            .message()
            .lines()
            .next()
            .unwrap_or("invalid campaign file")
            .to_string();
        match line {
            Some(l) => format!("{path}:{l}: {message}"),
            None => format!("{path}: {message}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
sessions = 2
[[agent]]
name = "a1"
address = "10.50.0.1"
[[agent]]
name = "b1"
address = "10.50.0.2"
[[phase]]
name = "forward"
duration = "10s"
[[phase.flow]]
from = "a1"
to = "b1"
udp = true
bitrate = "950M"
length = 1470
"#;

    #[test]
    fn the_issue_example_parses() {
        let f = parse("c.toml", EXAMPLE).unwrap();
        assert_eq!(*f.sessions.get_ref(), 2);
        assert_eq!(f.agents.len(), 2);
        assert_eq!(f.phases[0].flows[0].options.udp, Some(true));
        assert!(f.phases[0].flows[0].options.unknown.is_empty());
    }

    #[test]
    fn unknown_keys_name_file_and_line() {
        let text = EXAMPLE.replace("sessions = 2", "sesions = 2");
        let e = parse("c.toml", &text).unwrap_err();
        assert!(e.starts_with("c.toml:2:"), "{e}");
        assert!(e.contains("sesions"), "{e}");
    }
}
