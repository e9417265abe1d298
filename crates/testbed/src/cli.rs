//! `linkperf testbed ...`: argument definitions and human/JSON output.

use crate::error::TestbedError;
use crate::netns::require_root;
use crate::params::DirectionParams;
use crate::state;
use crate::testbed::{down, up, Testbed};
use crate::topology::{parse_set_args, schedule_from_file, Topology};
use serde_json::json;
use std::path::{Path, PathBuf};

/// println! that ignores a closed stdout (`status | head`) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

#[derive(clap::Subcommand, Debug)]
pub enum TestbedCommand {
    /// Build a testbed from a topology file (hosts in namespaces, emulated links)
    Up {
        /// Topology file (TOML); see docs/testbed.md
        file: PathBuf,
    },
    /// Remove a testbed: emulator, namespaces, devices (safe to repeat)
    Down {
        /// Testbed name or its topology file; may be omitted when only one testbed is up
        target: Option<String>,
        /// Remove every testbed that is up
        #[arg(long, conflicts_with = "target")]
        all: bool,
    },
    /// Show testbeds that are up: hosts, addresses, links, counters
    Status {
        /// Only this testbed
        name: Option<String>,
        /// Machine-readable output (schema linkperf/1)
        #[arg(long)]
        json: bool,
    },
    /// Run a command inside a host's namespace, e.g. `linkperf testbed exec b -- linkperf server`;
    /// killing this process kills the command
    Exec {
        /// Testbed to use when several are up
        #[arg(long)]
        testbed: Option<String>,
        /// Host name from the topology file
        host: String,
        /// Command and arguments (after `--`)
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Change running links: `set wan delay=20ms rate=10M`, `set a-b.a_to_b loss=1%`, or start
    /// a schedule with `set --schedule FILE`
    Set {
        /// Testbed to use when several are up
        #[arg(long)]
        testbed: Option<String>,
        /// LINK[.DIRECTION] (a link's name, or its ends as a-b; direction a_to_b or b_to_a)
        /// followed by key=value pairs (the direction keys of the topology file, mtu and
        /// txqueuelen)
        #[arg(value_name = "LINK KEY=VALUE")]
        args: Vec<String>,
        /// Start the schedule in FILE now (replacing a running one)
        #[arg(long, value_name = "FILE", conflicts_with = "stop_schedule")]
        schedule: Option<PathBuf>,
        /// Stop the running schedule (links keep the values it last set)
        #[arg(long)]
        stop_schedule: bool,
    },
    /// Run the link emulator of a testbed (started by `up`; not for direct use)
    #[command(hide = true)]
    Emulate {
        #[arg(long)]
        state: PathBuf,
        /// Do not fork into the background
        #[arg(long)]
        foreground: bool,
    },
}

/// Runs one testbed subcommand; `Ok` carries the process exit code.
pub fn run(cmd: TestbedCommand) -> Result<i32, TestbedError> {
    match cmd {
        TestbedCommand::Up { file } => {
            require_root()?;
            let topo = Topology::from_file(&file)?;
            let testbed = up(&topo)?;
            say_raw!("{}", describe(&testbed, false));
            say!(
                "testbed '{}' is up; remove it with `linkperf testbed down {}`",
                testbed.name(),
                testbed.name()
            );
            Ok(0)
        }
        TestbedCommand::Down { target, all } => {
            require_root()?;
            let names = if all {
                state::list_testbeds()
            } else {
                vec![resolve_down_target(target)?]
            };
            for name in names {
                down(&name)?;
                say!("testbed '{name}' is down");
            }
            Ok(0)
        }
        TestbedCommand::Status { name, json } => status(name, json),
        TestbedCommand::Exec {
            testbed,
            host,
            command,
        } => {
            require_root()?;
            let tb = Testbed::attach(&pick_testbed(testbed)?)?;
            let topo = tb.topology();
            if topo.host(&host).is_none() && topo.router(&host).is_none() {
                // Routers too: `ip route`, `tcpdump` or `nstat` inside one are worth running.
                let hosts: Vec<&str> = topo
                    .hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .chain(topo.routers.iter().map(|r| r.name.as_str()))
                    .collect();
                return Err(TestbedError::bad(format!(
                    "testbed '{}' has no host or router '{host}' (hosts and routers: {})",
                    tb.name(),
                    hosts.join(", ")
                )));
            }
            let mut cmd = tb.command(&host, &command[0]);
            cmd.args(&command[1..]);
            if let Some(share) = tb.topology().host(&host).and_then(|h| h.cpu) {
                let procs = crate::cpu_limit::ensure_group(tb.name(), &host, share)?;
                crate::cpu_limit::join_before_exec(&mut cmd, &procs)?;
            }
            crate::exec::run_tied(cmd)
        }
        TestbedCommand::Set {
            testbed,
            args,
            schedule,
            stop_schedule,
        } => {
            require_root()?;
            let tb = Testbed::attach(&pick_testbed(testbed)?)?;
            set(&tb, &args, schedule.as_deref(), stop_schedule)
        }
        TestbedCommand::Emulate { state, foreground } => crate::emulator::run(&state, foreground),
    }
}

/// `testbed set`: everything is checked before the emulator is asked, so bad input changes
/// nothing.
fn set(
    tb: &Testbed,
    args: &[String],
    schedule: Option<&Path>,
    stop: bool,
) -> Result<i32, TestbedError> {
    match (args.split_first(), schedule, stop) {
        (Some(_), Some(_), _) | (Some(_), _, true) => Err(TestbedError::bad(
            "testbed set: give either LINK key=value ... or --schedule FILE (or --stop-schedule)",
        )),
        (None, None, false) => Err(TestbedError::bad(
            "testbed set: name a link and what to change (e.g. `set wan delay=20ms`), or --schedule FILE",
        )),
        (None, Some(file), _) => {
            let s = schedule_from_file(file, tb.topology())?;
            tb.start_schedule(&s)?;
            say!(
                "testbed '{}': schedule {} started ({} steps{})",
                tb.name(),
                file.display(),
                s.steps.len(),
                s.repeat_ns
                    .map(|r| format!(", repeating every {} s", r as f64 / 1e9))
                    .unwrap_or_default()
            );
            Ok(0)
        }
        (None, None, true) => {
            tb.stop_schedule()?;
            say!("testbed '{}': schedule stopped", tb.name());
            Ok(0)
        }
        (Some((link, pairs)), None, false) => {
            let base = std::env::current_dir().ok();
            let change = parse_set_args(tb.topology(), link, pairs, base)?;
            let outcome = tb.set(std::slice::from_ref(&change))?;
            let l = &tb.topology().links[change.link];
            let directions = match change.directions {
                [true, false] => format!(" {} -> {}", l.ends[0], l.ends[1]),
                [false, true] => format!(" {} -> {}", l.ends[1], l.ends[0]),
                _ => String::new(),
            };
            say!(
                "testbed '{}': link {}{directions}: {} (in effect {:.0} us after the emulator got it)",
                tb.name(),
                l.label(),
                pairs.join(" "),
                outcome.took_ns as f64 / 1e3
            );
            if outcome.dropped_resize > 0 {
                say!(
                    "  {} queued packets dropped: the queue shrank below its content (counted as dropped_resize)",
                    outcome.dropped_resize
                );
            }
            Ok(0)
        }
    }
}

/// `down FILE` means the testbed that file names; otherwise the argument is a name.
fn resolve_down_target(target: Option<String>) -> Result<String, TestbedError> {
    let Some(target) = target else {
        return pick_testbed(None);
    };
    let path = Path::new(&target);
    if path.is_file() {
        return match Topology::from_file(path) {
            Ok(t) => Ok(t.name),
            // A file too broken to parse still names its testbed by its stem.
            Err(_) => Ok(path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(&target)
                .to_string()),
        };
    }
    Ok(target)
}

/// The named testbed, or the only one that is up.
fn pick_testbed(name: Option<String>) -> Result<String, TestbedError> {
    if let Some(n) = name {
        return Ok(n);
    }
    let up = state::list_testbeds();
    match up.len() {
        0 => Err(TestbedError::bad(
            "no testbed is up (start one with `linkperf testbed up FILE.toml`)",
        )),
        1 => Ok(up[0].clone()),
        _ => Err(TestbedError::bad(format!(
            "several testbeds are up ({}): name one with --testbed NAME",
            up.join(", ")
        ))),
    }
}

fn status(name: Option<String>, as_json: bool) -> Result<i32, TestbedError> {
    let names = match name {
        Some(n) => {
            Testbed::attach(&n)?;
            vec![n]
        }
        None => state::list_testbeds(),
    };
    let testbeds: Vec<Testbed> = names
        .iter()
        .filter_map(|n| Testbed::attach(n).ok())
        .collect();
    if as_json {
        let doc = status_document(&testbeds);
        say!(
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| TestbedError::runtime(e.to_string()))?
        );
    } else if testbeds.is_empty() {
        say!("no testbed is up");
    } else {
        for tb in &testbeds {
            say_raw!("{}", describe(tb, true));
        }
    }
    Ok(0)
}

/// The `status --json` document for the given testbeds.
pub fn status_document(testbeds: &[Testbed]) -> serde_json::Value {
    let list: Vec<serde_json::Value> = testbeds.iter().map(status_json).collect();
    json!({ "schema": state::SCHEMA, "testbeds": list })
}

/// Each host of `status --json`: namespace, its first device and addresses, and every
/// interface (a multi-homed host has several).
fn hosts_json(tb: &Testbed) -> Vec<serde_json::Value> {
    let plan = tb.plan();
    let interface = |h: &crate::topology::Host, i: &crate::topology::HostInterface| {
        json!({
            "device": plan.end_at(i.link, &h.name).map(|e| e.device.clone()),
            "link": plan.topology.links[i.link].label(),
            "ipv4": format!("{}/{}", i.ipv4, h.ipv4_prefix),
            "ipv6": format!("{}/{}", i.ipv6, h.ipv6_prefix),
        })
    };
    plan.topology
        .hosts
        .iter()
        .map(|h| {
            json!({
                "name": h.name,
                "netns": tb.netns(&h.name),
                "device": plan.host_device(&h.name).map(|e| e.device.clone()),
                "ipv4": format!("{}/{}", h.ipv4, h.ipv4_prefix),
                "ipv6": format!("{}/{}", h.ipv6, h.ipv6_prefix),
                "mptcp": h.mptcp,
                "interfaces": h.interfaces.iter().map(|i| interface(h, i)).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn status_json(tb: &Testbed) -> serde_json::Value {
    let plan = tb.plan();
    let hosts = hosts_json(tb);
    let switches: Vec<_> = plan
        .topology
        .switches
        .iter()
        .map(|s| json!({ "name": s.name, "netns": tb.netns(&s.name) }))
        .collect();
    let routers: Vec<_> = plan
        .topology
        .routers
        .iter()
        .map(|r| {
            let interfaces: Vec<_> = r
                .interfaces
                .iter()
                .map(|i| {
                    json!({
                        "link": i.link,
                        "device": plan.end_at(i.link, &r.name).map(|e| e.device.clone()),
                        "ipv4": i.ipv4,
                        "ipv6": i.ipv6,
                    })
                })
                .collect();
            json!({ "name": r.name, "netns": tb.netns(&r.name), "interfaces": interfaces })
        })
        .collect();
    let report = tb.read_counters_file().ok();
    let statuses = report
        .as_ref()
        .map(|r| crate::status::statuses(tb, r))
        .unwrap_or_default();
    let links: Vec<_> = plan
        .topology
        .links
        .iter()
        .zip(&plan.links)
        .enumerate()
        .map(|(i, (l, lp))| {
            let dir = |name: &str, params: &DirectionParams| match statuses
                .iter()
                .find(|d| d.link == i && d.direction == name)
            {
                Some(d) => json!({
                    "params": d.params,
                    "counters": d.counters,
                    "timing": { "since_start": d.timing_report(), "recent": d.recent },
                }),
                None => json!({ "params": params.without_trace_list(), "counters": null }),
            };
            let mtu = report
                .as_ref()
                .and_then(|r| r.mtus.get(i).copied())
                .unwrap_or(l.mtu);
            json!({
                "index": i,
                "name": l.name,
                "ends": l.ends,
                "devices": [lp.ends[0].device, lp.ends[1].device],
                "preset": l.preset,
                "mtu": mtu,
                "offload": l.offload,
                "a_to_b": dir("a_to_b", &l.a_to_b),
                "b_to_a": dir("b_to_a", &l.b_to_a),
            })
        })
        .collect();
    json!({
        "name": tb.name(),
        "state_dir": tb.state_dir(),
        "emulator_pid": tb.emulator_pid(),
        "emulator_running": tb.emulator_pid().is_some(),
        "seed": plan.seed,
        "counters_updated_unix_ms": report.as_ref().map(|c| c.updated_unix_ms),
        "schedule": report.as_ref().and_then(|r| r.schedule.clone()),
        "hosts": hosts,
        "switches": switches,
        "routers": routers,
        "links": links,
    })
}

/// Human description of a testbed; with `counters`, the per-direction counters as well.
fn describe(tb: &Testbed, counters: bool) -> String {
    use std::fmt::Write;
    let plan = tb.plan();
    let mut s = String::new();
    let emulator = match tb.emulator_pid() {
        Some(pid) => format!("emulator pid {pid}"),
        None => "EMULATOR NOT RUNNING (links are cut; `down` and `up` again)".to_string(),
    };
    let _ = writeln!(s, "testbed {} ({emulator})", tb.name());
    describe_nodes(&mut s, tb);
    let report = if counters {
        tb.read_counters_file().ok()
    } else {
        None
    };
    let statuses = report
        .as_ref()
        .map(|r| crate::status::statuses(tb, r))
        .unwrap_or_default();
    for (i, l) in plan.topology.links.iter().enumerate() {
        let preset = l
            .preset
            .as_deref()
            .map(|p| format!(" preset {p}"))
            .unwrap_or_default();
        let offload = if l.offload { "" } else { " offload off" };
        let name = l
            .name
            .as_deref()
            .map(|n| format!(" '{n}'"))
            .unwrap_or_default();
        let mtu = statuses
            .iter()
            .find(|d| d.link == i)
            .map_or(l.mtu, |d| d.mtu);
        let _ = writeln!(
            s,
            "  link {i}{name}: {} <-> {} mtu {mtu}{preset}{offload}",
            l.ends[0], l.ends[1]
        );
        for (name, from, to, p) in [
            ("a_to_b", &l.ends[0], &l.ends[1], &l.a_to_b),
            ("b_to_a", &l.ends[1], &l.ends[0], &l.b_to_a),
        ] {
            match statuses.iter().find(|d| d.link == i && d.direction == name) {
                Some(d) => describe_direction(&mut s, d),
                None => {
                    let _ = writeln!(s, "    {from} -> {to}: {}", p.summary());
                }
            }
        }
    }
    describe_routers(&mut s, plan, &statuses);
    if let Some(schedule) = report.as_ref().and_then(|r| r.schedule.as_ref()) {
        let _ = writeln!(
            s,
            "  schedule {}: {}",
            schedule.source,
            schedule.describe(state::unix_ms())
        );
    }
    s
}

/// One line per host, switch and router: namespace, device and addresses.
fn describe_nodes(s: &mut String, tb: &Testbed) {
    use std::fmt::Write;
    let plan = tb.plan();
    for h in &plan.topology.hosts {
        let dev = plan
            .host_device(&h.name)
            .map_or("-".to_string(), |e| e.device.clone());
        let clamp = h
            .cwnd_clamp
            .map_or(String::new(), |n| format!("  cwnd_clamp {n}"));
        let cost = h.send_cost.map_or(String::new(), |c| {
            format!(
                "  sends at {} us + {} ns/byte per packet",
                c.per_packet_ns as f64 / 1e3,
                c.per_byte_ns
            )
        });
        let _ = writeln!(
            s,
            "  host   {:<12} netns {:<24} {:<6} {}/{}  {}/{}{clamp}{cost}",
            h.name,
            tb.netns(&h.name).unwrap_or_default(),
            dev,
            h.ipv4,
            h.ipv4_prefix,
            h.ipv6,
            h.ipv6_prefix
        );
        // A multi-homed host: its further interfaces, one line each.
        for i in h.interfaces.iter().skip(1) {
            let dev = plan
                .end_at(i.link, &h.name)
                .map_or("-", |e| e.device.as_str());
            let _ = writeln!(
                s,
                "         {:<12} {:<30} {:<6} {}/{}  {}/{}  (link {})",
                "",
                "",
                dev,
                i.ipv4,
                h.ipv4_prefix,
                i.ipv6,
                h.ipv6_prefix,
                plan.topology.links[i.link].label()
            );
        }
    }
    for sw in &plan.topology.switches {
        let _ = writeln!(
            s,
            "  switch {:<12} netns {}",
            sw.name,
            tb.netns(&sw.name).unwrap_or_default()
        );
    }
    for r in &plan.topology.routers {
        let interfaces: Vec<String> = r
            .interfaces
            .iter()
            .map(|i| {
                let dev = plan
                    .end_at(i.link, &r.name)
                    .map_or("-", |e| e.device.as_str());
                format!("{dev} {} {} (link {})", i.ipv4, i.ipv6, i.link)
            })
            .collect();
        let _ = writeln!(
            s,
            "  router {:<12} netns {:<24} {}",
            r.name,
            tb.netns(&r.name).unwrap_or_default(),
            interfaces.join(", ")
        );
    }
}

/// One line per router: what came in on its links, and what its processing dropped.
fn describe_routers(
    s: &mut String,
    plan: &crate::state::Plan,
    statuses: &[crate::status::DirectionStatus],
) {
    use std::fmt::Write;
    for r in &plan.topology.routers {
        let into: Vec<_> = statuses.iter().filter(|d| d.to == r.name).collect();
        if into.is_empty() {
            continue;
        }
        let sum = |f: fn(&crate::counters::CounterValues) -> u64| -> u64 {
            into.iter().map(|d| f(&d.counters)).sum()
        };
        let _ = writeln!(
            s,
            "  router {}: received {} pkts, passed {} on to forwarding, dropped at its backlog {}, dropped by its input links' queues {}",
            r.name,
            sum(|c| c.packets_in),
            sum(|c| c.packets_forwarded),
            sum(|c| c.dropped_backlog),
            sum(|c| c.dropped_queue)
        );
    }
}

fn us(ns: u64) -> String {
    format!("{:.1} us", ns as f64 / 1e3)
}

/// One direction: parameters in force, counters, and how the emulator kept its timing.
fn describe_direction(s: &mut String, d: &crate::status::DirectionStatus) {
    use std::fmt::Write;
    let _ = writeln!(s, "    {} -> {}: {}", d.from, d.to, d.params.summary());
    let v = d.counters;
    let _ = writeln!(
        s,
        "      forwarded {} pkts {}, dropped queue {} loss {} ber {} resize {} backlog {}, queue peak {}",
        v.packets_forwarded,
        linkperf_units::format_bytes(v.bytes_forwarded as f64),
        v.dropped_queue,
        v.dropped_loss,
        v.dropped_ber,
        v.dropped_resize,
        v.dropped_backlog,
        linkperf_units::format_bytes(v.queue_high_water_bytes as f64)
    );
    if d.params.cells > 0 || d.params.pcr > 0 || v.cells_sent > 0 {
        let _ = writeln!(
            s,
            "      cells: sent {}, dropped {}; frames lost to cell loss {}, refused by EPD {}; cells wasted on lost frames {}",
            v.cells_sent, v.cells_dropped, v.frames_lost_cells, v.frames_dropped_epd, v.cells_wasted
        );
    }
    let total = d.timing_report();
    let Some(r) = d.recent.as_ref().filter(|r| r.lateness.count > 0) else {
        let _ = writeln!(
            s,
            "      timing: no packet in the last seconds; since up {} of {} released > 100 us late",
            total.late_over_100us, total.packets
        );
        return;
    };
    let _ = writeln!(
        s,
        "      timing, last {:.1} s: delay p50 {} (configured {}), queueing p50 {}; release lateness p50 {}, p99 {}, max {}; {} of {} released > 100 us late (since up: {} of {})",
        r.window_ms as f64 / 1e3,
        us(r.delay.p50_ns),
        us(d.params.delay_ns),
        us(r.queueing.p50_ns),
        us(r.lateness.p50_ns),
        us(r.lateness.p99_ns),
        us(r.lateness.max_ns),
        r.late_over_100us,
        r.lateness.count,
        total.late_over_100us,
        total.packets
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: TestbedCommand,
    }

    #[test]
    fn exec_takes_everything_after_the_double_dash() {
        let cli = Cli::try_parse_from([
            "t",
            "exec",
            "--testbed",
            "wan",
            "b",
            "--",
            "linkperf",
            "server",
            "-p",
            "5201",
        ])
        .unwrap();
        match cli.cmd {
            TestbedCommand::Exec {
                testbed,
                host,
                command,
            } => {
                assert_eq!(testbed.as_deref(), Some("wan"));
                assert_eq!(host, "b");
                assert_eq!(command, ["linkperf", "server", "-p", "5201"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["t", "exec", "b"]).is_err());
        assert!(Cli::try_parse_from(["t", "down", "x", "--all"]).is_err());
        let cli = Cli::try_parse_from(["t", "status", "--json"]).unwrap();
        assert!(matches!(
            cli.cmd,
            TestbedCommand::Status {
                json: true,
                name: None
            }
        ));
    }
}
