//! Building and removing testbeds: namespaces, bridges, the emulator process, addresses.

use crate::control::{self, Request, Response};
use crate::counters::LinkCounters;
use crate::error::TestbedError;
use crate::netns::{self, ip_batch, require_root};
use crate::rng::Rng;
use crate::routes;
use crate::schedule::{LinkChange, Schedule};
use crate::state::{
    self, DirectionState, Plan, BRIDGE_DEVICE, COUNTERS_FILE, LOG_FILE, PID_FILE, READY_FILE,
};
use crate::topology::{validate_name, Topology};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Kernel queue in front of the emulator (the TAP's txqueuelen). It only fills when the
/// emulator runs short of CPU; the default 500 then drops bursts at multi-Gbit/s rates.
const KERNEL_TXQUEUE: u32 = 5000;

/// How long `up` waits for the emulator to create its devices. It takes about 1 s for
/// seed 001's 16 hosts on a loaded 2-CPU machine, yet in three loaded suite runs (two
/// testbed tests at a time) three start-ups went past 10 s: creating a device takes the
/// kernel's network lock (rtnl), which another testbed's tear-down holds while it
/// removes its devices, the likely wait.
const EMULATOR_START_TIMEOUT: Duration = Duration::from_secs(30);

/// When a schedule started: the emulator's moment of receiving it, on both clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleStart {
    /// CLOCK_REALTIME ns, the clock of the kernel's packet timestamps.
    pub realtime_ns: u64,
    /// CLOCK_MONOTONIC ns, the clock the steps are timed on (unmoved when the wall clock
    /// is set).
    pub monotonic_ns: u64,
}

/// What `Testbed::set` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetOutcome {
    /// When the emulator received the change, CLOCK_REALTIME ns.
    pub received_ns: u64,
    /// The same moment, CLOCK_MONOTONIC ns (unmoved when the wall clock is set).
    pub received_mono_ns: u64,
    /// From the emulator receiving the change to the last forwarding thread applying it.
    pub took_ns: u64,
    /// Queued packets dropped because a queue shrank below its content.
    pub dropped_resize: u64,
}

/// A testbed that is up. Dropping the handle leaves it up; call [`down`] to remove it.
#[derive(Debug, Clone)]
pub struct Testbed {
    plan: Plan,
    dir: PathBuf,
}

impl Testbed {
    /// Finds a testbed that is up (by name) from its state directory.
    pub fn attach(name: &str) -> Result<Testbed, TestbedError> {
        validate_name(name).map_err(|m| TestbedError::bad(format!("testbed {m}")))?;
        let dir = state::state_dir(name);
        if !dir.join(state::PLAN_FILE).exists() {
            return Err(TestbedError::bad(format!(
                "no testbed '{name}' is up (see `linkperf testbed status`)"
            )));
        }
        Ok(Testbed {
            plan: Plan::load(&dir)?,
            dir,
        })
    }

    pub fn name(&self) -> &str {
        &self.plan.topology.name
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn topology(&self) -> &Topology {
        &self.plan.topology
    }

    pub fn state_dir(&self) -> &Path {
        &self.dir
    }

    /// Namespace of a host (or switch), e.g. `lp-wan-a`.
    pub fn netns(&self, host: &str) -> Option<String> {
        self.plan
            .nodes
            .iter()
            .find(|n| n.name == host)
            .map(|n| n.netns.clone())
    }

    pub fn ipv4(&self, host: &str) -> Option<Ipv4Addr> {
        self.plan.topology.host(host).map(|h| h.ipv4)
    }

    pub fn ipv6(&self, host: &str) -> Option<Ipv6Addr> {
        self.plan.topology.host(host).map(|h| h.ipv6)
    }

    /// A command that runs `program` inside the host's namespace (`ip netns exec`); add
    /// arguments and spawn it as usual. An unknown host yields a command that fails to start.
    pub fn command(&self, host: &str, program: &str) -> Command {
        let ns = self
            .netns(host)
            .unwrap_or_else(|| format!("lp-{}-unknown-host-{host}", self.name()));
        let mut cmd = Command::new(crate::netns::ip_program());
        cmd.args(["netns", "exec", &ns, program]);
        // A linkperf test run this way puts the links' timing into its result.
        cmd.env("LINKPERF_TESTBED", self.name())
            .env("LINKPERF_TESTBED_HOST", host);
        cmd
    }

    /// Packets `host`'s own interfaces dropped (a full interface queue on a `line_rate`
    /// link): sender-side drops, apart from the network's in [`Testbed::counters`].
    pub fn host_drops(&self, host: &str) -> Result<u64, TestbedError> {
        let mut total = None;
        for end in self.plan.host_devices(host) {
            *total.get_or_insert(0) += crate::nic::dropped(&end.netns, &end.device)?;
        }
        total.ok_or_else(|| TestbedError::bad(format!("no host '{host}' with a link")))
    }

    /// What every shaped host interface (a host end of a `line_rate` link, or any interface
    /// of a host with a send cost) has dropped so far, summed per host: the hosts' own
    /// queues, read from their qdiscs. Empty when no interface is shaped.
    pub fn interface_drops(&self) -> Result<BTreeMap<String, u64>, TestbedError> {
        let mut out = BTreeMap::new();
        for link in 0..self.plan.links.len() {
            for (end, _) in self.plan.shaped_ends(link) {
                let n = crate::nic::dropped(&end.netns, &end.device)?;
                *out.entry(end.node.clone()).or_insert(0) += n;
            }
        }
        Ok(out)
    }

    /// Pid of the emulator if it is running.
    pub fn emulator_pid(&self) -> Option<i32> {
        let pid: i32 = std::fs::read_to_string(self.dir.join(PID_FILE))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        (netns::process_alive(pid) && is_our_emulator(pid, &self.dir)).then_some(pid)
    }

    /// Counters of every link direction, from a snapshot the emulator writes on request,
    /// so traffic that reached it before the call is fully counted.
    pub fn counters(&self) -> Result<Vec<LinkCounters>, TestbedError> {
        Ok(self.fresh_snapshot()?.directions)
    }

    /// Timing of every link direction (release lateness, queueing, delay given), from a
    /// snapshot taken after the call began.
    pub fn timing(&self) -> Result<Vec<DirectionState>, TestbedError> {
        Ok(self.fresh_snapshot()?.timing)
    }

    /// The counters file as the emulator writes it on request, so it counts everything
    /// that reached it before the call; the last one written when the emulator has stopped.
    pub(crate) fn fresh_snapshot(&self) -> Result<state::CountersFile, TestbedError> {
        if self.emulator_pid().is_some() {
            if let Err(e) = self.control(&Request::Snapshot) {
                // It may have stopped since: then its last write is the final count.
                if self.emulator_pid().is_some() {
                    return Err(e);
                }
            }
        }
        self.read_counters_file()
    }

    /// Applies `changes` to the running links together; fails (changing nothing) if the
    /// emulator cannot take them.
    pub fn set(&self, changes: &[LinkChange]) -> Result<SetOutcome, TestbedError> {
        let r = self.control(&Request::Set {
            changes: changes.to_vec(),
        })?;
        Ok(SetOutcome {
            received_ns: r.received_ns,
            received_mono_ns: r.received_mono_ns,
            took_ns: r.took_ns,
            dropped_resize: r.dropped_resize,
        })
    }

    /// Starts `schedule` now, replacing a running one; returns its time zero, which its
    /// `at` times count from: when the emulator received it.
    pub fn start_schedule(&self, schedule: &Schedule) -> Result<ScheduleStart, TestbedError> {
        self.control(&Request::Schedule {
            schedule: schedule.clone(),
        })
        .map(|r| ScheduleStart {
            realtime_ns: r.received_ns,
            monotonic_ns: r.received_mono_ns,
        })
    }

    pub fn stop_schedule(&self) -> Result<(), TestbedError> {
        self.control(&Request::StopSchedule).map(|_| ())
    }

    fn control(&self, request: &Request) -> Result<Response, TestbedError> {
        let r = control::request(&self.dir, request).map_err(TestbedError::runtime)?;
        match (r.ok, &r.error) {
            (true, _) => Ok(r),
            (false, e) => Err(TestbedError::runtime(format!(
                "the emulator refused the change: {}",
                e.as_deref().unwrap_or("no reason given")
            ))),
        }
    }

    pub(crate) fn read_counters_file(&self) -> Result<state::CountersFile, TestbedError> {
        let path = self.dir.join(COUNTERS_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| TestbedError::runtime(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| TestbedError::runtime(format!("{} is damaged: {e}", path.display())))
    }
}

fn is_our_emulator(pid: i32, dir: &Path) -> bool {
    let dir = dir.to_string_lossy();
    netns::find_processes(&["emulate", "--state", &dir]).contains(&pid)
}

/// Builds the testbed: namespaces, bridges, emulator, addresses. On failure everything
/// created so far is removed again.
pub fn up(topo: &Topology) -> Result<Testbed, TestbedError> {
    require_root()?;
    let name = topo.name.as_str();
    let dir = state::state_dir(name);
    if dir.exists() {
        return Err(TestbedError::bad(format!(
            "testbed '{name}' is already up: run `linkperf testbed down {name}` first"
        )));
    }
    let seed = topo.seed.unwrap_or_else(|| Rng::from_entropy().next_u64());
    let plan = Plan::new(topo, seed);
    for node in &plan.nodes {
        if netns::netns_exists(&node.netns) {
            return Err(TestbedError::bad(format!(
                "namespace {} already exists (left over, or another testbed's): remove it with `ip netns delete {}` or `linkperf testbed down`",
                node.netns, node.netns
            )));
        }
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(TestbedError::runtime(
            "/dev/net/tun is missing: load the tun module (modprobe tun)",
        ));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| TestbedError::runtime(format!("cannot create {}: {e}", dir.display())))?;
    // The plan goes to disk first, so `down` can undo a half-built testbed.
    let built = plan.save(&dir).and_then(|_| build(&plan, &dir));
    match built {
        Ok(()) => Ok(Testbed { plan, dir }),
        Err(e) => {
            let _ = down(name);
            Err(e)
        }
    }
}

fn build(plan: &Plan, dir: &Path) -> Result<(), TestbedError> {
    for node in &plan.nodes {
        netns::add_netns(&node.netns)?;
        let (switch, router) = (node.switch, node.router);
        netns::in_netns(&node.netns, move || {
            if router {
                router_sysctls()?;
            }
            if switch {
                // Bridge namespaces need no IPv6 of their own (no router solicitations on links).
                netns::write_sysctl("net.ipv6.conf.default.disable_ipv6", "1")
            } else {
                // Addresses usable at once: duplicate address detection would delay them ~2 s.
                netns::write_sysctl("net.ipv6.conf.default.accept_dad", "0")?;
                // Keep IPv6 chatter off the emulated links: no router solicitations, and
                // multicast listener reports sent right at link-up, not during a test.
                netns::write_sysctl("net.ipv6.conf.default.router_solicitations", "0")?;
                netns::write_sysctl(
                    "net.ipv6.conf.default.mldv1_unsolicited_report_interval",
                    "1",
                )?;
                netns::write_sysctl(
                    "net.ipv6.conf.default.mldv2_unsolicited_report_interval",
                    "1",
                )
            }
        })?;
        if switch {
            ip_batch(
                &node.netns,
                &[
                    format!("link add {BRIDGE_DEVICE} type bridge stp_state 0 forward_delay 0 mcast_snooping 0"),
                    format!("link set {BRIDGE_DEVICE} up"),
                ],
            )?;
        }
    }
    start_emulator(dir)?;
    for (index, (link, lp)) in plan.topology.links.iter().zip(&plan.links).enumerate() {
        for (side, end) in lp.ends.iter().enumerate() {
            configure_end(plan, index, link, side, end)?;
        }
    }
    for h in &plan.topology.hosts {
        let ns = netns::netns_name(&plan.topology.name, &h.name);
        ip_batch(&ns, &routes::host_commands(plan, &h.name))?;
        if h.mptcp {
            crate::mptcp::configure(plan, h)?;
        }
    }
    for r in &plan.topology.routers {
        ip_batch(
            &netns::netns_name(&plan.topology.name, &r.name),
            &routes::router_commands(plan, r),
        )?;
    }
    crate::tcp_metrics::prime(plan)
}

/// One end of a link: its MAC, MTU and queue, a switch port's bridge, a host interface's
/// addresses, and a shaped host end's qdisc (line rate, send cost).
fn configure_end(
    plan: &Plan,
    index: usize,
    link: &crate::topology::Link,
    side: usize,
    end: &state::EndPlan,
) -> Result<(), TestbedError> {
    let mut cmds = Vec::new();
    if let Some(mac) = &end.mac {
        cmds.push(format!("link set {} address {mac}", end.device));
    }
    // A line-rate host end sends at its link's rate, a host with a send cost no faster
    // than it can.
    let shaper = state::shaper(&plan.topology, link, side, end);
    cmds.push(format!(
        "link set {} mtu {} txqueuelen {KERNEL_TXQUEUE} up",
        end.device, link.mtu
    ));
    if shaper.is_some_and(|s| s.cost.is_some()) {
        // One segment per packet handed to the qdisc, so each is charged its fixed cost.
        cmds.push(format!("link set {} gso_max_segs 1", end.device));
    }
    if end.switch {
        cmds.push(format!("link set {} master {BRIDGE_DEVICE}", end.device));
    } else if let Some(h) = plan.topology.host(&end.node) {
        if let Some(i) = h.interfaces.iter().find(|i| i.link == index) {
            cmds.push(format!(
                "addr add {}/{} dev {}",
                i.ipv4, h.ipv4_prefix, end.device
            ));
            cmds.push(format!(
                "addr add {}/{} dev {} nodad",
                i.ipv6, h.ipv6_prefix, end.device
            ));
        }
    }
    ip_batch(&end.netns, &cmds)?;
    if let Some(shaper) = shaper {
        crate::nic::install(&end.netns, &end.device, &shaper)?;
    }
    Ok(())
}

/// A router namespace forwards IPv4 and IPv6, accepts what arrives on any interface (its
/// routes are asymmetric to no one, but the reverse-path filter would still judge), and
/// sends no redirects (hosts keep the routes they were given).
fn router_sysctls() -> Result<(), TestbedError> {
    for (key, value) in [
        ("net.ipv4.ip_forward", "1"),
        ("net.ipv6.conf.all.forwarding", "1"),
        ("net.ipv4.conf.all.rp_filter", "0"),
        ("net.ipv4.conf.default.rp_filter", "0"),
        ("net.ipv4.conf.all.send_redirects", "0"),
        ("net.ipv4.conf.default.send_redirects", "0"),
    ] {
        netns::write_sysctl(key, value)?;
    }
    Ok(())
}

/// Starts `<this executable> testbed emulate --state DIR` and waits until its devices exist.
fn start_emulator(dir: &Path) -> Result<(), TestbedError> {
    let exe = std::env::current_exe()
        .map_err(|e| TestbedError::runtime(format!("cannot find the linkperf executable: {e}")))?;
    let log_path = dir.join(LOG_FILE);
    let log = std::fs::File::create(&log_path)
        .map_err(|e| TestbedError::runtime(format!("cannot create {}: {e}", log_path.display())))?;
    let log2 = log
        .try_clone()
        .map_err(|e| TestbedError::runtime(e.to_string()))?;
    // The child forks the real emulator and exits at once, so waiting here leaves no zombie.
    let status = Command::new(&exe)
        .args(["testbed", "emulate", "--state"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .status()
        .map_err(|e| {
            TestbedError::runtime(format!(
                "cannot start the emulator ({}): {e}",
                exe.display()
            ))
        })?;
    if !status.success() {
        return Err(TestbedError::runtime(format!(
            "the emulator did not start ({status}): {}",
            last_log_line(&log_path)
        )));
    }
    let deadline = Instant::now() + EMULATOR_START_TIMEOUT;
    loop {
        if dir.join(READY_FILE).exists() {
            return Ok(());
        }
        if let Ok(reason) = std::fs::read_to_string(dir.join("failed")) {
            return Err(TestbedError::runtime(format!(
                "the emulator failed: {}",
                reason.trim()
            )));
        }
        if Instant::now() > deadline {
            return Err(TestbedError::runtime(format!(
                "the emulator did not become ready within {}s: {}",
                EMULATOR_START_TIMEOUT.as_secs(),
                last_log_line(&log_path)
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn last_log_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| format!("see {}", path.display()))
}

/// Removes a testbed: stops its emulator, kills processes left in its namespaces, deletes the
/// namespaces (and with them bridges and devices) and the state directory. Idempotent.
pub fn down(name: &str) -> Result<(), TestbedError> {
    validate_name(name).map_err(|m| TestbedError::bad(format!("testbed {m}")))?;
    require_root()?;
    let dir = state::state_dir(name);
    let dir_text = dir.to_string_lossy().into_owned();
    stop_processes(&netns::find_processes(&["emulate", "--state", &dir_text]));

    let mut namespaces: Vec<String> = Plan::load(&dir)
        .map(|p| p.nodes.into_iter().map(|n| n.netns).collect())
        .unwrap_or_default();
    // Also sweep lp-NAME-* (a crash may predate the plan), but never another testbed's.
    let others: Vec<String> = state::list_testbeds()
        .into_iter()
        .filter(|t| t != name)
        .filter_map(|t| Plan::load(&state::state_dir(&t)).ok())
        .flat_map(|p| p.nodes.into_iter().map(|n| n.netns))
        .collect();
    let prefix = format!("lp-{name}-");
    for ns in netns::list_netns() {
        if ns.starts_with(&prefix) && !others.contains(&ns) && !namespaces.contains(&ns) {
            namespaces.push(ns);
        }
    }
    let mut first_error = None;
    for ns in &namespaces {
        if let Err(e) = netns::delete_netns(ns) {
            first_error.get_or_insert(e);
        }
    }
    if let Err(e) = crate::cpu_limit::remove_groups(name) {
        first_error.get_or_insert(e);
    }
    if dir.exists() {
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            first_error.get_or_insert(TestbedError::runtime(format!(
                "cannot remove {}: {e}",
                dir.display()
            )));
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// SIGTERM, then SIGKILL for whatever is still alive after a grace period.
fn stop_processes(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill(2) on pids we just matched by command line.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| netns::process_alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for &pid in pids {
        if netns::process_alive(pid) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
