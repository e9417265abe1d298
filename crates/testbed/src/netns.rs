//! Network namespaces and devices, through iproute2 (`ip`) and setns(2).

use crate::error::TestbedError;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where `ip netns add` bind-mounts namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// Namespace of a host or switch: `lp-<testbed>-<node>`, so `down` can find them all.
pub fn netns_name(testbed: &str, node: &str) -> String {
    format!("lp-{testbed}-{node}")
}

pub fn ip_program() -> &'static str {
    // Prefer the absolute path: sudo and CI often run with a PATH that lacks /usr/sbin.
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("ip")
}

/// Runs `ip ARGS...`; the error carries ip's own message on one line.
pub fn ip(args: &[&str]) -> Result<String, TestbedError> {
    let out = Command::new(ip_program())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            TestbedError::runtime(format!("cannot run `ip` (iproute2): {e}; install iproute2"))
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(TestbedError::runtime(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Runs several `ip` commands inside namespace `ns` in one process (`ip -n NS -batch -`).
pub fn ip_batch(ns: &str, commands: &[String]) -> Result<(), TestbedError> {
    use std::io::Write;
    if commands.is_empty() {
        return Ok(());
    }
    let mut child = Command::new(ip_program())
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            TestbedError::runtime(format!("cannot run `ip` (iproute2): {e}; install iproute2"))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        let script = commands.join("\n") + "\n";
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| TestbedError::runtime(format!("cannot feed `ip -batch`: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| TestbedError::runtime(format!("`ip -batch` did not finish: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(TestbedError::runtime(format!(
            "configuring namespace {ns} failed: {} (commands: {})",
            String::from_utf8_lossy(&out.stderr).trim(),
            commands.join("; ")
        )))
    }
}

/// Names of all namespaces registered with `ip netns`.
pub fn list_netns() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

pub fn netns_exists(name: &str) -> bool {
    netns_path(name).exists()
}

pub fn netns_path(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

pub fn add_netns(name: &str) -> Result<(), TestbedError> {
    ip(&["netns", "add", name])?;
    ip(&["-n", name, "link", "set", "lo", "up"])?;
    Ok(())
}

/// Kills every process still inside the namespace, then deletes it (its devices go with it).
pub fn delete_netns(name: &str) -> Result<(), TestbedError> {
    if !netns_exists(name) {
        return Ok(());
    }
    for _ in 0..3 {
        let pids = pids_in(name);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill(2) with a pid we just read; no memory is involved.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ip(&["netns", "delete", name]).map(|_| ())
}

/// Processes whose network namespace is `name` (as `ip netns pids` reports them).
pub fn pids_in(name: &str) -> Vec<i32> {
    ip(&["netns", "pids", name])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Moves the calling thread into namespace `name`. Only this thread changes namespace:
/// sockets and TAP devices it creates afterwards belong to that namespace.
pub fn enter_netns(name: &str) -> Result<(), TestbedError> {
    let path = netns_path(name);
    let file = std::fs::File::open(&path).map_err(|e| {
        TestbedError::runtime(format!("cannot open namespace {}: {e}", path.display()))
    })?;
    let fd: OwnedFd = file.into();
    // SAFETY: setns on a valid fd we own; it affects only the calling thread's net namespace.
    let rc = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(TestbedError::runtime(format!(
            "cannot enter namespace {name}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Runs `f` on a fresh thread that has entered namespace `name`.
pub fn in_netns<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> Result<T, TestbedError> + Send + 'static,
) -> Result<T, TestbedError> {
    let name = name.to_string();
    std::thread::spawn(move || {
        enter_netns(&name)?;
        f()
    })
    .join()
    .map_err(|_| TestbedError::runtime("namespace helper thread panicked"))?
}

/// Writes a sysctl of the namespace the calling thread is in (net sysctls are per namespace).
pub fn write_sysctl(key: &str, value: &str) -> Result<(), TestbedError> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value)
        .map_err(|e| TestbedError::runtime(format!("cannot set {key}={value}: {e}")))
}

/// One-line reason when the process may not build testbeds, or Ok.
pub fn require_root() -> Result<(), TestbedError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    const CAP_NET_ADMIN: u32 = 12;
    const CAP_SYS_ADMIN: u32 = 21;
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0);
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    if has(CAP_NET_ADMIN) && has(CAP_SYS_ADMIN) {
        return Ok(());
    }
    Err(TestbedError::Permission(
        "linkperf testbed needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) to create namespaces and TAP devices: run it with sudo".into(),
    ))
}

/// Is process `pid` alive (and not a zombie)?
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state letter follows the parenthesised command name. A zombie leader may still
        // have threads running (they exit after it), holding the process's descriptors.
        Ok(stat) => {
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            !zombie || std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|t| t.count() > 1)
        }
        Err(_) => false,
    }
}

/// Pids whose command line contains all of `needles` as separate arguments, in order.
pub fn find_processes(needles: &[&str]) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<&[u8]> = raw.split(|&b| b == 0).collect();
            args.windows(needles.len())
                .any(|w| w.iter().zip(needles).all(|(a, n)| *a == n.as_bytes()))
        })
        .filter(|&pid| process_alive(pid))
        .collect()
}

pub fn c_string(s: &str) -> Result<CString, TestbedError> {
    CString::new(s).map_err(|_| TestbedError::bad(format!("'{s}' contains a NUL byte")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_process_lookup() {
        assert_eq!(netns_name("wan", "a"), "lp-wan-a");
        assert!(process_alive(std::process::id() as i32));
        assert!(!process_alive(i32::MAX));
        // Our own pid is excluded; nothing else has this argument.
        assert!(find_processes(&["--definitely-not-an-argument-xyz"]).is_empty());
    }
}
