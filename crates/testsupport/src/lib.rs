//! What every test crate of the workspace shares: a skip that cannot go unseen,
//! child processes with a time limit ([`process`]), JSON pointer getters
//! ([`json`]), a testbed driven through the `linkperf` binary ([`bed`]) and a
//! retry for timing tests that failed while the machine was stalled ([`stall`]).
//! It depends on no linkperf crate, so that every crate's tests can use it;
//! whatever needs the binary takes its path.
//!
//! cargo shows a passing test's output only with `--nocapture`, so a test that
//! returns early because a dependency is missing would pass silently. [`skip`]
//! prints the reason and also appends it to a log that `scripts/test` prints at
//! the end of the run (and fails on under CI). It holds no test logic.

pub mod bed;
pub mod json;
pub mod process;
pub mod stall;

use std::io::Write;
use std::path::PathBuf;

/// The skip log: `$LINKPERF_SKIP_LOG`, else `test-skips.log` in the target directory.
pub fn skip_log() -> PathBuf {
    if let Some(path) = std::env::var_os("LINKPERF_SKIP_LOG") {
        return PathBuf::from(path);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("test-skips.log")
}

/// Records that the running test did not run its assertions, and why. The test
/// is named by its thread, which libtest names after the test.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    skip_named(thread.name().unwrap_or("a test"), reason);
}

/// Records that `test` did not run its assertions, and why (one line each).
pub fn skip_named(test: &str, reason: &str) {
    let line = format!("SKIPPED {test}: {reason}");
    eprintln!("{line}");
    let path = skip_log();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        eprintln!("(could not record the skip in {}: {e})", path.display());
    }
}

/// True when running as root (namespaces, TAP devices, raw sockets).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Returns from the test (with a recorded skip) unless it runs as root.
#[macro_export]
macro_rules! require_root {
    ($why:expr) => {
        if !$crate::is_root() {
            $crate::skip($why);
            return;
        }
    };
}

/// A fresh, empty directory under the system temp dir, unique to this process.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
