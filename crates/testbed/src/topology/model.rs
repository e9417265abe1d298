//! The resolved topology: hosts, switches, routers and links with every value
//! checked, and the limits names and MTUs must keep. Plain data; reading
//! and checking files is `parse`'s. What follows from the data alone is here too: the
//! directions' parameters by index and the pace at which cells enter a switch.

pub use crate::nic::SendCost;
use crate::params::DirectionParams;
use crate::schedule::Schedule;
use serde::{Deserialize, Serialize};
use std::net::{Ipv4Addr, Ipv6Addr};

pub const DEFAULT_SUBNET: &str = "10.50.0.0/24";
pub const DEFAULT_SUBNET6: &str = "fd00:50::/64";
/// Longest name allowed for a testbed, host or switch (they end up in namespace names).
pub const MAX_NAME_LEN: usize = 32;
pub const MIN_MTU: u32 = 576;
pub const MAX_MTU: u32 = 65_000;
/// Smallest CPU share a host may have: 1 ms of CPU per 1 s period (the kernel's minimum quota).
pub const MIN_CPU_SHARE: f64 = 0.001;
/// Largest `cwnd_clamp` a host may have, in segments.
pub const MAX_CWND_CLAMP: u32 = 1_000_000;

/// A resolved topology: every value checked, presets merged, addresses assigned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    pub name: String,
    /// Seed of the impairment RNGs; absent means fresh entropy on every `up`.
    pub seed: Option<u64>,
    /// What idle CPUs do while the emulator runs (the file's `cpu_idle`).
    #[serde(default)]
    pub cpu_idle: CpuIdle,
    pub hosts: Vec<Host>,
    pub switches: Vec<Switch>,
    /// IP routers: several interfaces, forwarding between them (see [`crate::routes`]).
    #[serde(default)]
    pub routers: Vec<Router>,
    pub links: Vec<Link>,
    /// Link changes started at `up` (the file's `[schedule]`).
    #[serde(default)]
    pub schedule: Option<Schedule>,
}

/// What idle CPUs do while the emulator runs. A halted CPU (on a virtual machine, a vCPU the
/// hypervisor has descheduled) takes tens of microseconds to wake for a frame or a timer,
/// which no learned compensation removes exactly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuIdle {
    /// The emulator asks the kernel for zero wake-up latency (a PM QoS request on
    /// /dev/cpu_dma_latency, held while it runs): idle CPUs poll instead of halting.
    Poll,
    /// The machine's own idle states (less power; wake-ups as slow as they are). The
    /// default: on a virtual machine whose host caps its CPU time, CPUs that poll use up
    /// the cap and the host then stops the whole machine for its period (100 ms stalls).
    #[default]
    Os,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    pub ipv4: Ipv4Addr,
    pub ipv4_prefix: u8,
    pub ipv6: Ipv6Addr,
    pub ipv6_prefix: u8,
    /// Share of one CPU (0..=1] the processes `testbed exec` runs in it may use; see
    /// [`crate::cpu_limit`]. None: unlimited.
    #[serde(default)]
    pub cpu: Option<f64>,
    /// One per link ending at the host, in link order (devices eth0, eth1, ...); the
    /// first has the host's own addresses (`ipv4`, `ipv6`) above. Empty for a host
    /// without a link.
    #[serde(default)]
    pub interfaces: Vec<HostInterface>,
    /// `mptcp = true`: `up` gives the in-kernel MPTCP path manager a `subflow` endpoint
    /// for every interface but the first, and limits to match (see `crate::mptcp`).
    #[serde(default)]
    pub mptcp: bool,
    /// `cwnd_clamp = N`: the host's TCP senders keep their congestion window at N segments
    /// or fewer (every route of the host carries `cwnd lock N`; see [`crate::tcp_metrics`]).
    #[serde(default)]
    pub cwnd_clamp: Option<u32>,
    /// `send_per_packet` / `send_per_byte`: what the host's own send path spends on each
    /// packet it sends; its interfaces send no faster (see `crate::nic`).
    #[serde(default)]
    pub send_cost: Option<SendCost>,
}

/// A host's address on one of its links (a multi-homed host has several).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInterface {
    /// Index of the link in the topology.
    pub link: usize,
    pub ipv4: Ipv4Addr,
    pub ipv6: Ipv6Addr,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Switch {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Router {
    pub name: String,
    /// One per link ending at the router, in link order (devices eth0, eth1, ...).
    pub interfaces: Vec<RouterInterface>,
}

/// A router's address on one of its links: hosts on that link's segment route through it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterInterface {
    /// Index of the link in the topology.
    pub link: usize,
    pub ipv4: Ipv4Addr,
    pub ipv6: Ipv6Addr,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// The name `testbed set` and schedules may use (they may also name a link by its ends).
    #[serde(default)]
    pub name: Option<String>,
    /// `a_to_b` runs from `ends[0]` to `ends[1]`.
    pub ends: [String; 2],
    pub preset: Option<String>,
    pub mtu: u32,
    /// Checksum and TCP segmentation offload on the link's devices, segments accounted one
    /// by one by the emulator (see `gso`); false makes the kernel segment before the emulator.
    #[serde(default = "offload_default")]
    pub offload: bool,
    /// Host ends send no faster than the link, like a NIC (see [`crate::nic`]).
    #[serde(default)]
    pub line_rate: bool,
    /// Packets the interface queue of a `line_rate` host end holds.
    #[serde(default = "txqueuelen_default")]
    pub txqueuelen: u32,
    pub a_to_b: DirectionParams,
    pub b_to_a: DirectionParams,
}

pub(super) fn offload_default() -> bool {
    true
}

pub(super) fn txqueuelen_default() -> u32 {
    crate::nic::DEFAULT_TXQUEUELEN
}

/// Most packets a line-rate interface queue may hold.
pub const MAX_TXQUEUELEN: i64 = 1_000_000;

impl Topology {
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// Nodes that pass traffic on: switches and routers (hosts do not forward).
    pub fn forwards(&self, name: &str) -> bool {
        self.is_switch(name) || self.router(name).is_some()
    }

    pub fn is_switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s.name == name)
    }

    pub fn router(&self, name: &str) -> Option<&Router> {
        self.routers.iter().find(|r| r.name == name)
    }

    /// The configured parameters of direction `d` (link d / 2; a_to_b when d is even).
    pub fn direction(&self, d: usize) -> &DirectionParams {
        let link = &self.links[d / 2];
        if d.is_multiple_of(2) {
            &link.a_to_b
        } else {
            &link.b_to_a
        }
    }

    /// [`Self::input_cell_ns`] with every direction's configured parameters.
    pub fn configured_input_cell_ns(&self, link: usize, from: usize) -> f64 {
        self.input_cell_ns(link, from, |d| self.direction(d).clone())
    }

    /// Input cell time (ns) of the direction of link `link` that starts at its end `from`,
    /// when that end is a switch: the least time between two cells of one VC on the other
    /// links' directions into the switch, with the parameters `params(direction)` gives
    /// (direction = link * 2, + 1 for b_to_a). 0 when the direction starts at a host or a
    /// router, or an input is unlimited.
    pub fn input_cell_ns(
        &self,
        link: usize,
        from: usize,
        params: impl Fn(usize) -> DirectionParams,
    ) -> f64 {
        let node = &self.links[link].ends[from];
        if !self.is_switch(node) {
            return 0.0;
        }
        let mut fastest = f64::INFINITY;
        for (i, l) in self.links.iter().enumerate() {
            let direction = if i == link {
                continue;
            } else if &l.ends[1] == node {
                i * 2
            } else if &l.ends[0] == node {
                i * 2 + 1
            } else {
                continue;
            };
            match params(direction).vc_cell_gap_ns() {
                0.0 => return 0.0,
                gap => fastest = fastest.min(gap),
            }
        }
        if fastest.is_finite() {
            fastest
        } else {
            0.0
        }
    }
}

impl Link {
    /// Its name, or its ends as `a-b`.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", self.ends[0], self.ends[1]))
    }
}

/// Checks a testbed, host, switch or router name: it becomes part of namespace names and paths.
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

#[cfg(test)]
mod tests {
    use super::Topology;

    /// Seed 004's switch: an OC-3c line from host a into switch s, a 100 Mbit/s line on to b.
    const SWITCHED: &str = "name = \"t\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1/24\"\n\
        [[host]]\nname = \"b\"\naddress = \"10.0.0.2/24\"\n[[switch]]\nname = \"s\"\n\
        [[link]]\nends = [\"a\", \"s\"]\nrate = \"149.76M\"\nframing = \"atm-aal5\"\n\
        [[link]]\nends = [\"s\", \"b\"]\nrate = \"100M\"\nframing = \"atm-aal5\"\ncells = 256\n";

    #[test]
    fn cells_enter_a_switch_at_the_upstream_line_or_its_peak_cell_rate() {
        let t = Topology::from_toml_str("t", SWITCHED).unwrap();
        // Into the 100M line: one 424-bit cell at 149.76 Mbit/s.
        let line = 424.0 * 1e9 / 149.76e6;
        assert!((t.configured_input_cell_ns(1, 0) - line).abs() < 1e-6);
        // Out of host a (whole frames) and towards a from the switch (b's 100M line).
        assert_eq!(t.configured_input_cell_ns(0, 0), 0.0);
        assert!((t.configured_input_cell_ns(0, 1) - 424.0 * 1e9 / 100e6).abs() < 1e-6);
        // The OC-3c VC paced at 224,057 cells/s: its cells come 1 / PCR apart.
        let paced = |d: usize| {
            let mut p = t.direction(d).clone();
            if d == 0 {
                p.pcr = 224_057;
            }
            p
        };
        assert!((t.input_cell_ns(1, 0, paced) - 1e9 / 224_057.0).abs() < 1e-6);
        // A PCR above the line's cell rate leaves the line's cell time.
        let fast = |d: usize| {
            let mut p = t.direction(d).clone();
            p.pcr = 400_000;
            p
        };
        assert!((t.input_cell_ns(1, 0, fast) - line).abs() < 1e-6);
    }
}
