//! The host doctor (`linkperf doctor`): compares what this host is set to with what a
//! target path needs (its rate times its loaded round-trip time, seed 003's rule for
//! buffers), and says what to change, why, and the command that changes it. It
//! changes nothing unless asked ([`apply`]); then it reports what it changed and the
//! command that undoes each change. Rules and their sources: docs/doctor.md.

pub mod host;
pub mod remote;

use serde::{Deserialize, Serialize};

/// The path the host must serve.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Target {
    pub rate_bits_per_second: f64,
    /// The loaded round-trip time (seed 003: the idle RTT undersizes the buffers).
    pub rtt_seconds: f64,
    /// The path's MTU when the user knows it.
    pub mtu: Option<u64>,
}

impl Target {
    pub fn new(
        rate_bits_per_second: f64,
        rtt_seconds: f64,
        mtu: Option<u64>,
    ) -> Result<Target, String> {
        if !(rate_bits_per_second.is_finite() && rate_bits_per_second > 0.0) {
            return Err("--target-rate must be above 0 (e.g. 10G, 940M)".into());
        }
        if !(rtt_seconds.is_finite() && rtt_seconds > 0.0) {
            return Err("--rtt must be above 0 (the loaded round-trip time, e.g. 20ms)".into());
        }
        if mtu.is_some_and(|m| !(576..=65_535).contains(&m)) {
            return Err("--mtu must be 576 to 65535 bytes".into());
        }
        Ok(Target {
            rate_bits_per_second,
            rtt_seconds,
            mtu,
        })
    }

    /// Bytes in flight that fill the path: rate x RTT / 8.
    pub fn bdp_bytes(&self) -> u64 {
        (self.rate_bits_per_second * self.rtt_seconds / 8.0).ceil() as u64
    }

    /// Packets a transmit queue or the receive backlog should hold: seed 003 ran its
    /// 10 Gbit/s hosts with 10,000 of each; scaled with the rate, never below the
    /// kernel's default of 1,000.
    pub fn queue_packets(&self) -> u64 {
        ((10_000.0 * self.rate_bits_per_second / 10e9).ceil() as u64).max(1_000)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Enough for the target.
    Ok,
    /// Short of the target: the fix says what to set.
    Change,
    /// Could not be read here (a namespace or a virtual machine hides it).
    Unknown,
    /// Worth knowing; nothing to set.
    Note,
}

/// One change the doctor can make, with what was there before.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Fix {
    Sysctl {
        key: String,
        value: String,
        old: String,
    },
    Txqueuelen {
        dev: String,
        value: u64,
        old: u64,
    },
    Offload {
        dev: String,
        feature: String,
        on: bool,
    },
    Governor {
        cpu: String,
        value: String,
        old: String,
    },
}

impl Fix {
    /// The command that makes the change, ready to paste.
    pub fn command(&self) -> String {
        match self {
            Fix::Sysctl { key, value, .. } => format!("sysctl -w {key}='{value}'"),
            Fix::Txqueuelen { dev, value, .. } => {
                format!("ip link set dev {dev} txqueuelen {value}")
            }
            Fix::Offload { dev, feature, on } => {
                format!(
                    "ethtool -K {dev} {feature} {}",
                    if *on { "on" } else { "off" }
                )
            }
            Fix::Governor { cpu, value, .. } => {
                format!("echo {value} > /sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor")
            }
        }
    }

    /// The command that puts back what was there.
    pub fn undo(&self) -> String {
        match self {
            Fix::Sysctl { key, old, .. } => format!("sysctl -w {key}='{old}'"),
            Fix::Txqueuelen { dev, old, .. } => format!("ip link set dev {dev} txqueuelen {old}"),
            Fix::Offload { dev, feature, on } => {
                format!(
                    "ethtool -K {dev} {feature} {}",
                    if *on { "off" } else { "on" }
                )
            }
            Fix::Governor { cpu, old, .. } => {
                format!("echo {old} > /sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor")
            }
        }
    }

    fn apply(&self) -> Result<(), String> {
        match self {
            Fix::Sysctl { key, value, .. } => host::set_sysctl(key, value),
            Fix::Txqueuelen { dev, value, .. } => host::set_txqueuelen(dev, *value),
            Fix::Offload { dev, feature, on } => host::set_offload(dev, feature, *on),
            Fix::Governor { cpu, value, .. } => host::set_governor(cpu, value),
        }
    }
}

/// One line of the examination.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub item: String,
    pub status: Status,
    /// What the host has ("unknown" when it could not be read).
    pub current: String,
    /// What the target needs.
    pub needed: String,
    pub why: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Examination {
    pub target: Target,
    pub bdp_bytes: u64,
    pub findings: Vec<Finding>,
}

/// What [`apply`] did with one fix.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub command: String,
    pub undo: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn finding(item: &str, status: Status, current: String, needed: String, why: String) -> Finding {
    Finding {
        item: item.to_string(),
        status,
        current,
        needed,
        why,
        fix: None,
    }
}

/// A sysctl holding one number that must be at least `need`.
fn at_least(key: &str, need: u64, why: &str) -> Finding {
    let Some(current) = host::sysctl(key) else {
        return finding(
            key,
            Status::Unknown,
            "unknown".into(),
            format!(">= {need}"),
            why.into(),
        );
    };
    let have = current.parse::<u64>().unwrap_or(0);
    let mut f = finding(
        key,
        Status::Ok,
        current.clone(),
        format!(">= {need}"),
        why.into(),
    );
    if have < need {
        f.status = Status::Change;
        f.fix = Some(Fix::Sysctl {
            key: key.into(),
            value: need.to_string(),
            old: current,
        });
    }
    f
}

/// tcp_rmem / tcp_wmem: "min default max", of which the max must be at least `need`.
fn triple_max(key: &str, need: u64, why: &str) -> Finding {
    let Some(current) = host::sysctl(key) else {
        return finding(
            key,
            Status::Unknown,
            "unknown".into(),
            format!("max >= {need}"),
            why.into(),
        );
    };
    let parts: Vec<&str> = current.split(' ').collect();
    let mut f = finding(
        key,
        Status::Ok,
        current.clone(),
        format!("max >= {need}"),
        why.into(),
    );
    if let [min, default, max] = parts[..] {
        if max.parse::<u64>().unwrap_or(0) < need {
            f.status = Status::Change;
            let value = format!("{min} {default} {need}");
            f.fix = Some(Fix::Sysctl {
                key: key.into(),
                value,
                old: current,
            });
        }
    }
    f
}

fn buffers(t: &Target) -> Vec<Finding> {
    let bdp = t.bdp_bytes();
    let mib = bdp as f64 / (1 << 20) as f64;
    vec![
        at_least(
            "net.core.rmem_max",
            bdp,
            &format!("`-w` / SO_RCVBUF is capped here: a window of rate x RTT = {mib:.1} MiB needs it"),
        ),
        at_least(
            "net.core.wmem_max",
            bdp,
            &format!("SO_SNDBUF is capped here: {mib:.1} MiB in flight needs it"),
        ),
        triple_max(
            "net.ipv4.tcp_rmem",
            2 * bdp,
            "autotuning's receive memory: the window is about half of it (docs/model.md), so 2 x rate x RTT",
        ),
        triple_max(
            "net.ipv4.tcp_wmem",
            2 * bdp,
            "autotuning's send memory holds what is in flight plus what waits: 2 x rate x RTT",
        ),
    ]
}

fn congestion(t: &Target) -> Finding {
    let why =
        "reno grows one segment per RTT: on a long fat path it takes minutes to refill (seed 003)";
    let (Some(current), available) = (
        host::sysctl("net.ipv4.tcp_congestion_control"),
        host::sysctl("net.ipv4.tcp_available_congestion_control").unwrap_or_default(),
    ) else {
        return finding(
            "net.ipv4.tcp_congestion_control",
            Status::Unknown,
            "unknown".into(),
            "cubic or bbr".into(),
            why.into(),
        );
    };
    let segments = t.bdp_bytes() / 1448;
    let mut f = finding(
        "net.ipv4.tcp_congestion_control",
        Status::Ok,
        format!("{current} (available: {available})"),
        "cubic or bbr".into(),
        format!("{why}; this path holds {segments} segments"),
    );
    if current == "reno" && segments > 100 {
        let better = ["cubic", "bbr"]
            .into_iter()
            .find(|c| available.split(' ').any(|a| a == *c));
        f.status = Status::Change;
        if let Some(cc) = better {
            f.fix = Some(Fix::Sysctl {
                key: f.item.clone(),
                value: cc.into(),
                old: current,
            });
        }
    }
    f
}

fn interface_findings(t: &Target, dev: &host::Interface) -> Vec<Finding> {
    let queue = t.queue_packets();
    let mut out = Vec::new();
    let item = format!("{} txqueuelen", dev.name);
    let qdisc = dev.qdisc.clone().unwrap_or_else(|| "unknown qdisc".into());
    let why = format!("packets the interface queues before its qdisc ({qdisc}) drops; seed 003 used 10,000 at 10 Gbit/s");
    match dev.txqueuelen {
        None => out.push(finding(
            &item,
            Status::Unknown,
            "unknown".into(),
            format!(">= {queue}"),
            why,
        )),
        Some(len) => {
            let mut f = finding(
                &item,
                Status::Ok,
                len.to_string(),
                format!(">= {queue}"),
                why,
            );
            if len < queue {
                f.status = Status::Change;
                f.fix = Some(Fix::Txqueuelen {
                    dev: dev.name.clone(),
                    value: queue,
                    old: len,
                });
            }
            out.push(f);
        }
    }
    out.push(mtu_finding(t, dev));
    for &(feature, on) in &dev.offloads {
        let mut f = finding(
            &format!("{} {feature}", dev.name),
            Status::Ok,
            if on { "on" } else { "off" }.into(),
            "on".into(),
            "segmentation and receive offloads cut the per-packet CPU cost many times".into(),
        );
        if !on {
            f.status = Status::Change;
            f.fix = Some(Fix::Offload {
                dev: dev.name.clone(),
                feature: feature.into(),
                on: true,
            });
        }
        out.push(f);
    }
    if let Some(cpus) = dev.irq_cpus {
        out.push(finding(
            &format!("{} interrupts", dev.name),
            if cpus > 1 { Status::Ok } else { Status::Note },
            format!("served by {cpus} CPU(s)"),
            "spread over the CPUs (irqbalance or RSS)".into(),
            "one CPU taking every interrupt becomes the receiver's bottleneck at high rates".into(),
        ));
    }
    out
}

fn mtu_finding(t: &Target, dev: &host::Interface) -> Finding {
    let item = format!("{} mtu", dev.name);
    let current = dev.mtu.map_or("unknown".into(), |m| m.to_string());
    match (t.mtu, dev.mtu) {
        (Some(want), Some(have)) if have < want => finding(
            &item,
            Status::Change,
            current,
            format!(">= {want}"),
            format!("the path carries {want}-byte packets: set it with `ip link set dev {} mtu {want}` where every hop does", dev.name),
        ),
        (None, Some(have)) if have <= 1500 && t.rate_bits_per_second >= 10e9 => finding(
            &item,
            Status::Note,
            current,
            "9000 where the path allows".into(),
            "jumbo frames cut the packets per second six times (seed 003 used MTU 9000 at 10 Gbit/s)".into(),
        ),
        _ => finding(&item, Status::Ok, current, t.mtu.map_or("-".into(), |m| format!(">= {m}")), "".into()),
    }
}

fn host_findings(t: &Target) -> Vec<Finding> {
    let mut out = vec![at_least(
        "net.core.netdev_max_backlog",
        t.queue_packets(),
        "packets a CPU queues on receive before dropping (seed 003: 10,000 at 10 Gbit/s)",
    )];
    let governors = host::governors();
    let why = "a CPU that lowers its clock under a network load adds latency and loses rate";
    if governors.is_empty() {
        out.push(finding(
            "cpu governor",
            Status::Unknown,
            "unknown (no cpufreq here)".into(),
            "performance".into(),
            why.into(),
        ));
    }
    for (cpu, g) in governors {
        let mut f = finding(
            &format!("{cpu} governor"),
            Status::Ok,
            g.clone(),
            "performance".into(),
            why.into(),
        );
        if g != "performance" {
            f.status = Status::Change;
            f.fix = Some(Fix::Governor {
                cpu,
                value: "performance".into(),
                old: g,
            });
        }
        out.push(f);
    }
    out
}

/// Reads the host and compares it with `target`.
pub fn examine(target: &Target) -> Examination {
    let mut findings = buffers(target);
    findings.push(congestion(target));
    findings.extend(host_findings(target));
    for dev in host::interfaces() {
        findings.extend(interface_findings(target, &dev));
    }
    Examination {
        target: *target,
        bdp_bytes: target.bdp_bytes(),
        findings,
    }
}

/// Makes every change the examination asks for, in order; one that fails is reported
/// and the rest are still tried.
pub fn apply(exam: &Examination) -> Vec<Applied> {
    exam.findings
        .iter()
        .filter_map(|f| f.fix.as_ref())
        .map(|fix| Applied {
            command: fix.command(),
            undo: fix.undo(),
            error: fix.apply().err(),
        })
        .collect()
}

/// The examination as text: one line per finding, then the commands to paste.
pub fn render(exam: &Examination, applied: Option<&[Applied]>) -> String {
    render_lines(exam, applied, None)
}

/// [`render`] for one end of a test (`client --doctor`): every finding line
/// starts with `host` ("this host", "server"), and the commands are headed
/// with the host they are for.
pub fn render_for(exam: &Examination, host: &str) -> String {
    render_lines(exam, None, Some(host))
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Change => "CHANGE",
        Status::Unknown => "unknown",
        Status::Note => "note",
    }
}

fn render_lines(exam: &Examination, applied: Option<&[Applied]>, host: Option<&str>) -> String {
    let t = &exam.target;
    let mut out = format!(
        "target: {} over a {:.1} ms loaded RTT: {} in flight (rate x RTT)\n\n",
        linkperf_units::format_rate(t.rate_bits_per_second),
        t.rtt_seconds * 1e3,
        linkperf_units::format_bytes(exam.bdp_bytes as f64)
    );
    let prefix = host.map(|h| format!("{h}: ")).unwrap_or_default();
    let indent = " ".repeat(prefix.len());
    for f in &exam.findings {
        out.push_str(&format!(
            "{prefix}{:<8} {:<34} {:<28} needs {}\n",
            status_word(f.status),
            f.item,
            f.current,
            f.needed
        ));
        if f.status != Status::Ok && !f.why.is_empty() {
            out.push_str(&format!("{indent}         {}\n", f.why));
        }
    }
    let fixes: Vec<&Fix> = exam
        .findings
        .iter()
        .filter_map(|f| f.fix.as_ref())
        .collect();
    let on = host.map(|h| format!(" on {h}")).unwrap_or_default();
    match applied {
        None if fixes.is_empty() => {
            out.push_str(&format!("\nnothing to change{on} for this target\n"))
        }
        None => {
            out.push_str(&match host {
                None => "\nto change (nothing was changed; `--apply` runs these):\n".to_string(),
                Some(h) => format!(
                    "\nto change on {h} (nothing was changed; run these there, or `linkperf doctor --apply` there):\n"
                ),
            });
            for fix in fixes {
                out.push_str(&format!("  {}\n", fix.command()));
            }
        }
        Some(done) => {
            out.push_str("\nchanged:\n");
            for a in done {
                match &a.error {
                    None => out.push_str(&format!("  {}\n", a.command)),
                    Some(e) => out.push_str(&format!("  FAILED {}: {e}\n", a.command)),
                }
            }
            out.push_str("to undo:\n");
            for a in done.iter().filter(|a| a.error.is_none()) {
                out.push_str(&format!("  {}\n", a.undo));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdp_and_queue_follow_rate_and_rtt() {
        let t = Target::new(10e9, 0.012, None).unwrap();
        // Seed 003's own sum: 6 Gbit/s x 12 ms / 8 = 9 MB; 10 Gbit/s gives 15 MB.
        assert_eq!(
            Target::new(6e9, 0.012, None).unwrap().bdp_bytes(),
            9_000_000
        );
        assert_eq!(t.bdp_bytes(), 15_000_000);
        assert_eq!(t.queue_packets(), 10_000);
        assert_eq!(
            Target::new(100e6, 0.01, None).unwrap().queue_packets(),
            1_000
        );
        assert!(Target::new(0.0, 0.01, None).is_err());
        assert!(Target::new(1e9, 0.0, None).is_err());
        assert!(Target::new(1e9, 0.01, Some(100)).is_err());
    }

    #[test]
    fn a_fix_undoes_to_the_old_value() {
        let fix = Fix::Sysctl {
            key: "net.ipv4.tcp_rmem".into(),
            value: "4096 131072 5000000".into(),
            old: "4096 131072 1048576".into(),
        };
        assert_eq!(
            fix.command(),
            "sysctl -w net.ipv4.tcp_rmem='4096 131072 5000000'"
        );
        assert_eq!(
            fix.undo(),
            "sysctl -w net.ipv4.tcp_rmem='4096 131072 1048576'"
        );
    }
}
