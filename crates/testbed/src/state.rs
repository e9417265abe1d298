//! The state directory of a running testbed, /run/linkperf/testbed/NAME/: the resolved plan
//! (what `down`, `status` and `exec` need), the emulator's pid, log and counters.

use crate::counters::LinkCounters;
use crate::error::TestbedError;
use crate::netns::netns_name;
use crate::nic::Shaper;
use crate::params::DirectionParams;
use crate::schedule::ScheduleState;
use crate::timing::{RecentTiming, TimingSnapshot};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const RUN_DIR: &str = "/run/linkperf/testbed";
pub const SCHEMA: &str = "linkperf/1";

pub const PLAN_FILE: &str = "plan.json";
pub const PID_FILE: &str = "emulator.pid";
pub const LOG_FILE: &str = "emulator.log";
pub const READY_FILE: &str = "ready";
pub const COUNTERS_FILE: &str = "counters.json";

pub fn state_dir(testbed: &str) -> PathBuf {
    Path::new(RUN_DIR).join(testbed)
}

/// Everything needed to build, run and remove a testbed, written before anything is created.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub schema: String,
    pub topology: Topology,
    /// Seed actually used for the impairment RNGs (from the file or drawn at `up`).
    pub seed: u64,
    pub nodes: Vec<NodePlan>,
    pub links: Vec<LinkPlan>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodePlan {
    pub name: String,
    pub switch: bool,
    #[serde(default)]
    pub router: bool,
    pub netns: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkPlan {
    pub ends: [EndPlan; 2],
}

/// One side of a link: the TAP device the emulator creates in the end's namespace.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndPlan {
    pub node: String,
    pub netns: String,
    pub device: String,
    pub switch: bool,
    /// Fixed MAC of a host's device, so neighbours can be preset (no ARP through the link).
    pub mac: Option<String>,
}

/// Name of the bridge device inside a switch namespace.
pub const BRIDGE_DEVICE: &str = "br0";

impl Plan {
    /// Names namespaces and devices: hosts get `eth0`, switch ports `port0`, `port1`, ...
    pub fn new(topology: &Topology, seed: u64) -> Plan {
        let mut nodes: Vec<NodePlan> = topology
            .hosts
            .iter()
            .map(|h| NodePlan {
                name: h.name.clone(),
                switch: false,
                router: false,
                netns: netns_name(&topology.name, &h.name),
            })
            .collect();
        nodes.extend(topology.switches.iter().map(|s| NodePlan {
            name: s.name.clone(),
            switch: true,
            router: false,
            netns: netns_name(&topology.name, &s.name),
        }));
        nodes.extend(topology.routers.iter().map(|r| NodePlan {
            name: r.name.clone(),
            switch: false,
            router: true,
            netns: netns_name(&topology.name, &r.name),
        }));
        let mut next_port: std::collections::BTreeMap<String, usize> = Default::default();
        let mut end = |node: &str| {
            let switch = topology.is_switch(node);
            let counter = next_port.entry(node.to_string()).or_default();
            let index = *counter;
            *counter += 1;
            let mac = topology
                .hosts
                .iter()
                .position(|h| h.name == node)
                .map(|h| host_interface_mac(h, index));
            let mac = mac.or_else(|| {
                let r = topology.routers.iter().position(|r| r.name == node)?;
                Some(router_mac(r, index))
            });
            EndPlan {
                node: node.to_string(),
                netns: netns_name(&topology.name, node),
                device: if switch {
                    format!("port{index}")
                } else {
                    format!("eth{index}")
                },
                switch,
                mac,
            }
        };
        let links = topology
            .links
            .iter()
            .map(|l| {
                let a = end(&l.ends[0]);
                let b = end(&l.ends[1]);
                LinkPlan { ends: [a, b] }
            })
            .collect();
        Plan {
            schema: SCHEMA.to_string(),
            topology: topology.clone(),
            seed,
            nodes,
            links,
        }
    }

    pub fn load(dir: &Path) -> Result<Plan, TestbedError> {
        let path = dir.join(PLAN_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| TestbedError::runtime(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| TestbedError::runtime(format!("{} is damaged: {e}", path.display())))
    }

    pub fn save(&self, dir: &Path) -> Result<(), TestbedError> {
        let text =
            serde_json::to_string_pretty(self).map_err(|e| TestbedError::runtime(e.to_string()))?;
        write_atomic(&dir.join(PLAN_FILE), text.as_bytes())
    }

    /// Pairs of hosts that share a layer-2 segment (connected through links and switches).
    pub fn same_segment(&self, a: &str, b: &str) -> bool {
        let mut reached = vec![a.to_string()];
        let mut i = 0;
        while i < reached.len() {
            let node = reached[i].clone();
            for l in &self.topology.links {
                for (x, y) in [(&l.ends[0], &l.ends[1]), (&l.ends[1], &l.ends[0])] {
                    // Traffic crosses switches, not hosts (hosts do not forward).
                    let passes = *x == node && (node == a || self.topology.is_switch(&node));
                    if passes && !reached.contains(y) {
                        reached.push(y.clone());
                    }
                }
            }
            i += 1;
        }
        a != b && reached.iter().any(|n| n == b)
    }

    /// The device of `host`'s first link (`eth0`).
    pub fn host_device(&self, host: &str) -> Option<&EndPlan> {
        self.links
            .iter()
            .flat_map(|l| l.ends.iter())
            .find(|e| e.node == host && !e.switch)
    }

    /// Every device of `host`, in link order (`eth0`, `eth1`, ... of a multi-homed host).
    pub fn host_devices<'p>(&'p self, host: &'p str) -> impl Iterator<Item = &'p EndPlan> + 'p {
        self.links
            .iter()
            .flat_map(|l| l.ends.iter())
            .filter(move |e| e.node == host && !e.switch)
    }

    /// The ends of link `link` whose host interface is shaped, with their shapers: a host
    /// end of a `line_rate` link (the direction leaving it rate-driven), or an end at a host
    /// with a send cost. They carry a queue of `txqueuelen` packets.
    pub fn shaped_ends(&self, link: usize) -> impl Iterator<Item = (&EndPlan, Shaper)> + '_ {
        let topo = self.topology.links.get(link);
        let ends = self.links.get(link).map(|l| l.ends.iter());
        ends.into_iter()
            .flatten()
            .enumerate()
            .filter_map(move |(side, end)| Some((end, shaper(&self.topology, topo?, side, end)?)))
    }

    /// The end of link `link` at `node`.
    pub fn end_at(&self, link: usize, node: &str) -> Option<&EndPlan> {
        self.links.get(link)?.ends.iter().find(|e| e.node == node)
    }
}

/// Locally administered MAC for interface `index` of the n-th router: 02:6c:72 ("lr").
pub fn router_mac(router: usize, index: usize) -> String {
    format!(
        "02:6c:72:{:02x}:{:02x}:{:02x}",
        (router >> 8) & 0xff,
        router & 0xff,
        index & 0xff
    )
}

/// MAC of interface `interface` of the n-th host: the first is [`host_mac`], the others
/// 02:6c:68 then the interface and the host's number.
pub fn host_interface_mac(host: usize, interface: usize) -> String {
    if interface == 0 {
        return host_mac(host);
    }
    let n = host + 1;
    format!(
        "02:6c:68:{:02x}:{:02x}:{:02x}",
        interface & 0xff,
        (n >> 8) & 0xff,
        n & 0xff
    )
}

/// Locally administered MAC for the n-th host: 02:6c:70 ("lp") then the index.
pub fn host_mac(index: usize) -> String {
    let n = index + 1;
    format!(
        "02:6c:70:{:02x}:{:02x}:{:02x}",
        (n >> 16) & 0xff,
        (n >> 8) & 0xff,
        n & 0xff
    )
}

/// The emulator's periodic counter snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CountersFile {
    pub schema: String,
    pub testbed: String,
    pub emulator_pid: u32,
    /// Wall-clock time of the snapshot, milliseconds since the Unix epoch.
    pub updated_unix_ms: u64,
    pub directions: Vec<LinkCounters>,
    /// Timing and parameters of every direction, in the order of `directions`.
    #[serde(default)]
    pub timing: Vec<DirectionState>,
    /// MTU in force per link.
    #[serde(default)]
    pub mtus: Vec<u32>,
    /// The running (or last) schedule.
    #[serde(default)]
    pub schedule: Option<ScheduleState>,
}

/// What the emulator reports about one link direction besides its counters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DirectionState {
    pub link: usize,
    pub direction: String,
    /// Parameters in force (a trace without its list of opportunities).
    #[serde(default)]
    pub params: Option<DirectionParams>,
    /// Since the emulator started.
    pub timing: TimingSnapshot,
    /// Over the last few seconds.
    #[serde(default)]
    pub recent: Option<RecentTiming>,
}

pub fn unix_ms() -> u64 {
    unix_ns() / 1_000_000
}

/// CLOCK_REALTIME in ns since the epoch: the clock the kernel stamps packets with.
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Write-then-rename so readers never see half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), TestbedError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| TestbedError::runtime(format!("cannot write {}: {e}", path.display())))
}

/// Names of testbeds that have a state directory.
pub fn list_testbeds() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(RUN_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// The shaper of end `side` of `link` (0 = the `a_to_b` sender), if it has one: the line's
/// rate for a host end of a `line_rate` link whose outgoing direction has a rate and no
/// trace, and the host's send cost.
pub fn shaper(
    topology: &Topology,
    link: &crate::topology::Link,
    side: usize,
    end: &EndPlan,
) -> Option<Shaper> {
    if end.switch {
        return None;
    }
    let out = if side == 0 {
        &link.a_to_b
    } else {
        &link.b_to_a
    };
    let line = (link.line_rate && out.rate_bps > 0 && out.trace.is_none())
        .then_some((out.rate_bps, out.framing));
    let cost = topology.host(&end.node).and_then(|h| h.send_cost);
    (line.is_some() || cost.is_some()).then_some(Shaper {
        line,
        cost,
        txqueuelen: link.txqueuelen,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_names_devices_per_node() {
        let t = Topology::from_toml_str(
            "tb",
            r#"
            [[host]]
            name = "a"
            [[host]]
            name = "b"
            [[switch]]
            name = "s1"
            [[switch]]
            name = "s2"
            [[link]]
            ends = ["a", "s1"]
            [[link]]
            ends = ["s1", "s2"]
            [[link]]
            ends = ["s2", "b"]
            "#,
        )
        .unwrap();
        let p = Plan::new(&t, 1);
        let devs: Vec<String> = p
            .links
            .iter()
            .flat_map(|l| l.ends.iter().map(|e| format!("{}:{}", e.netns, e.device)))
            .collect();
        assert_eq!(
            devs,
            [
                "lp-tb-a:eth0",
                "lp-tb-s1:port0",
                "lp-tb-s1:port1",
                "lp-tb-s2:port0",
                "lp-tb-s2:port1",
                "lp-tb-b:eth0"
            ]
        );
        assert_eq!(p.host_device("b").unwrap().device, "eth0");
        assert_eq!(p.nodes.len(), 4);
        assert_eq!(
            p.host_device("b").unwrap().mac.as_deref(),
            Some("02:6c:70:00:00:02")
        );
        assert!(p.same_segment("a", "b"));
        assert!(!p.same_segment("a", "a"));
        let json = serde_json::to_string(&p).unwrap();
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back.topology, t);
    }
}
