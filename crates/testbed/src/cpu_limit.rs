//! Host capacity (issue 13 item 5): a CPU cgroup per CPU-limited host, so the processes
//! `testbed exec` runs in it get at most the host's `cpu` share of one CPU.
//!
//! cgroup v2 (`cpu.max`) where the unified hierarchy has the cpu controller; otherwise the
//! v1 cpu controller (`cpu.cfs_quota_us` / `cpu.cfs_period_us`, the same CFS bandwidth
//! limit), which is what hybrid systems mount. The group is made on the first `exec` and
//! removed by `down`; a command joins it before it starts, so its children are in it too.

use crate::error::TestbedError;
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The largest cgroup v2 `cpu.weight` and v1 `cpu.shares`.
const MAX_WEIGHT_V2: &str = "10000";
const MAX_SHARES_V1: &str = "262144";

/// CFS bandwidth period: 100 ms (the kernel's default), or 1 s when the share's quota would
/// fall below the kernel's 1 ms minimum.
fn period_us(share: f64) -> u64 {
    if share * 100_000.0 >= 1_000.0 {
        100_000
    } else {
        1_000_000
    }
}

#[derive(Clone, Copy)]
enum Hierarchy {
    V2,
    V1,
}

/// Where CPU groups can be made, and how they are written.
fn cpu_root() -> Option<(PathBuf, Hierarchy)> {
    for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let controllers = std::fs::read_to_string(Path::new(root).join("cgroup.controllers"));
        if controllers.is_ok_and(|c| c.split_whitespace().any(|w| w == "cpu")) {
            return Some((PathBuf::from(root), Hierarchy::V2));
        }
    }
    let v1 = Path::new("/sys/fs/cgroup/cpu");
    v1.join("cpu.cfs_quota_us")
        .exists()
        .then(|| (v1.to_path_buf(), Hierarchy::V1))
}

fn group_prefix(testbed: &str) -> String {
    format!("linkperf-{testbed}-")
}

fn write(path: &Path, value: &str) -> Result<(), TestbedError> {
    std::fs::write(path, value).map_err(|e| {
        TestbedError::runtime(format!("cannot write {value:?} to {}: {e}", path.display()))
    })
}

/// Makes (or updates) the group of `host` with `share` of one CPU and returns the file a
/// process writes "0" to in order to join it.
pub fn ensure_group(testbed: &str, host: &str, share: f64) -> Result<PathBuf, TestbedError> {
    let (root, hierarchy) = cpu_root().ok_or_else(|| {
        TestbedError::runtime(
            "host cpu limits need the cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us); none is mounted",
        )
    })?;
    let dir = root.join(format!("{}{host}", group_prefix(testbed)));
    if !dir.exists() {
        if let Hierarchy::V2 = hierarchy {
            // The root's children get the cpu controller only when the root hands it down.
            write(&root.join("cgroup.subtree_control"), "+cpu")?;
        }
        std::fs::create_dir(&dir).map_err(|e| {
            TestbedError::runtime(format!("cannot create cgroup {}: {e}", dir.display()))
        })?;
    }
    let period = period_us(share);
    let quota = ((share * period as f64).round() as u64).max(1_000);
    // The highest weight as well: the host's share is what limits it, not what the rest of
    // the machine leaves it. A cgroup competes by its weight, whatever its tasks' nice: at
    // the default weight a host limited to 25 % got 3-23 % of a CPU beside a build's
    // dozens of compiler threads.
    match hierarchy {
        Hierarchy::V2 => {
            write(&dir.join("cpu.max"), &format!("{quota} {period}"))?;
            write(&dir.join("cpu.weight"), MAX_WEIGHT_V2)?;
        }
        Hierarchy::V1 => {
            // The quota may not exceed what a new period allows: clear it first.
            write(&dir.join("cpu.cfs_quota_us"), "-1")?;
            write(&dir.join("cpu.cfs_period_us"), &period.to_string())?;
            write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
            write(&dir.join("cpu.shares"), MAX_SHARES_V1)?;
        }
    }
    Ok(dir.join("cgroup.procs"))
}

/// Makes `cmd` join the group whose `cgroup.procs` is `procs` before it runs its program.
pub fn join_before_exec(cmd: &mut Command, procs: &Path) -> Result<(), TestbedError> {
    let path = CString::new(procs.as_os_str().as_encoded_bytes())
        .map_err(|_| TestbedError::runtime(format!("bad cgroup path {}", procs.display())))?;
    // SAFETY: only open, write and close (async-signal-safe) run in the child.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // "0" is the writing process itself.
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            if n != 1 {
                return Err(err);
            }
            Ok(())
        });
    }
    Ok(())
}

/// Removes the testbed's groups (they are empty once its commands ended). Best effort: a
/// group still holding a process stays, and is reported.
pub fn remove_groups(testbed: &str) -> Result<(), TestbedError> {
    let Some((root, _)) = cpu_root() else {
        return Ok(());
    };
    let prefix = group_prefix(testbed);
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(());
    };
    let mut first_error = None;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) {
            if let Err(e) = std::fs::remove_dir(entry.path()) {
                first_error.get_or_insert(TestbedError::runtime(format!(
                    "cannot remove cgroup {}: {e}",
                    entry.path().display()
                )));
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_keeps_the_quota_at_or_above_the_kernel_minimum() {
        assert_eq!(period_us(0.25), 100_000);
        assert_eq!(period_us(0.01), 100_000);
        assert_eq!(period_us(0.005), 1_000_000);
    }
}
