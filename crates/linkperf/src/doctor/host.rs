//! Reading (and, when asked, writing) the host settings the doctor examines: sysctls
//! under /proc/sys, interfaces under /sys/class/net with their root qdisc and
//! offloads, CPU frequency governors and interrupt spread. Every reader returns
//! `None` for what it cannot read (a network namespace hides some sysctls, a virtual
//! machine has no cpufreq): the doctor then says "unknown" and goes on.

use std::path::Path;
use std::process::Command;

fn sysctl_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// A sysctl's value, whitespace collapsed to single spaces.
pub fn sysctl(key: &str) -> Option<String> {
    let text = std::fs::read_to_string(sysctl_path(key)).ok()?;
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

pub fn set_sysctl(key: &str, value: &str) -> Result<(), String> {
    std::fs::write(sysctl_path(key), value).map_err(|e| format!("cannot set {key}: {e}"))
}

/// An interface as the doctor sees it.
#[derive(Debug, Clone)]
pub struct Interface {
    pub name: String,
    pub mtu: Option<u64>,
    pub txqueuelen: Option<u64>,
    /// The root qdisc's kind (`tc -j qdisc show`), e.g. fq_codel, pfifo_fast, noqueue.
    pub qdisc: Option<String>,
    /// (feature, on) for tso, gso and gro, where the driver answers.
    pub offloads: Vec<(&'static str, bool)>,
    /// CPUs that served this interface's interrupts (None: it has none listed).
    pub irq_cpus: Option<usize>,
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Interfaces that are up, except loopback.
pub fn interfaces() -> Vec<Interface> {
    let Ok(entries) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lo")
        .filter(|n| {
            let flags = std::fs::read_to_string(format!("/sys/class/net/{n}/flags"));
            // IFF_UP = 0x1.
            flags
                .ok()
                .and_then(|f| u64::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
                .is_some_and(|f| f & 1 == 1)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let dir = Path::new("/sys/class/net").join(&name);
            Interface {
                mtu: read_number(&dir.join("mtu")),
                txqueuelen: read_number(&dir.join("tx_queue_len")),
                qdisc: root_qdisc(&name),
                offloads: offloads(&name),
                irq_cpus: irq_cpus(&name),
                name,
            }
        })
        .collect()
}

fn root_qdisc(dev: &str) -> Option<String> {
    let out = Command::new("tc")
        .args(["-j", "qdisc", "show", "dev", dev, "root"])
        .output()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v.get(0)?.get("kind")?.as_str().map(str::to_string)
}

// ethtool's legacy per-feature ioctls (linux/ethtool.h).
const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;

/// (feature, get command, set command).
pub const OFFLOADS: [(&str, u32, u32); 3] = [
    ("tso", ETHTOOL_GTSO, ETHTOOL_STSO),
    ("gso", ETHTOOL_GGSO, ETHTOOL_SGSO),
    ("gro", ETHTOOL_GGRO, ETHTOOL_SGRO),
];

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

/// One ethtool value ioctl on `dev`: returns the value read (or written).
fn ethtool(dev: &str, cmd: u32, data: u32) -> Option<u32> {
    if dev.len() >= libc::IFNAMSIZ {
        return None;
    }
    let mut value = EthtoolValue { cmd, data };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: &mut value,
        _pad: [0; 16],
    };
    for (dst, src) in req.name.iter_mut().zip(dev.bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: a datagram socket for the ioctl, closed below; `req` points at `value`,
    // both live across the call, laid out as the kernel's ifreq and ethtool_value.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let rc = libc::ioctl(fd, SIOCETHTOOL as _, &mut req);
        libc::close(fd);
        (rc == 0).then_some(value.data)
    }
}

fn offloads(dev: &str) -> Vec<(&'static str, bool)> {
    OFFLOADS
        .iter()
        .filter_map(|&(name, get, _)| ethtool(dev, get, 0).map(|v| (name, v != 0)))
        .collect()
}

pub fn set_offload(dev: &str, feature: &str, on: bool) -> Result<(), String> {
    let (_, _, set) = OFFLOADS
        .iter()
        .find(|(name, _, _)| *name == feature)
        .ok_or_else(|| format!("unknown offload {feature}"))?;
    ethtool(dev, *set, on as u32).map(|_| ()).ok_or_else(|| {
        format!(
            "cannot set {feature} on {dev}: {}",
            std::io::Error::last_os_error()
        )
    })
}

pub fn set_txqueuelen(dev: &str, len: u64) -> Result<(), String> {
    let out = Command::new("ip")
        .args(["link", "set", "dev", dev, "txqueuelen", &len.to_string()])
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip link set dev {dev} txqueuelen {len}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// CPUs with a non-zero count on an interrupt line naming `dev` (/proc/interrupts).
fn irq_cpus(dev: &str) -> Option<usize> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let mut lines = text.lines();
    let cpus = lines.next()?.split_whitespace().count();
    let mut served = vec![false; cpus];
    let mut any = false;
    for line in lines.filter(|l| l.split_whitespace().any(|w| w.starts_with(dev))) {
        any = true;
        let counts = line.split_whitespace().skip(1).take(cpus);
        for (cpu, count) in counts.enumerate() {
            if count.parse::<u64>().is_ok_and(|c| c > 0) {
                served[cpu] = true;
            }
        }
    }
    any.then(|| served.iter().filter(|&&s| s).count())
}

/// The scaling governor of every CPU that has one (cpufreq), in CPU order.
pub fn governors() -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir("/sys/devices/system/cpu") else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let rest = name.strip_prefix("cpu")?;
            rest.parse::<u32>().ok()?;
            let g = std::fs::read_to_string(e.path().join("cpufreq/scaling_governor")).ok()?;
            Some((name, g.trim().to_string()))
        })
        .collect();
    found.sort_by_key(|(n, _)| n[3..].parse::<u32>().unwrap_or(0));
    found
}

pub fn set_governor(cpu: &str, governor: &str) -> Result<(), String> {
    let path = format!("/sys/devices/system/cpu/{cpu}/cpufreq/scaling_governor");
    std::fs::write(&path, governor).map_err(|e| format!("cannot write {path}: {e}"))
}
