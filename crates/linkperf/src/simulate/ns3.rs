//! Finding Debian's ns-3 (libns3-dev) and g++, building the scenario program
//! once into the cache ($XDG_CACHE_HOME/linkperf/ns3-<hash of the source and
//! version>/), and running it.

use super::spec::SimError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The scenario's C++ source, built into the binary so the cache key follows it.
pub const SCENARIO_SOURCE: &str = include_str!("../../ns3/scenario.cc");

/// ns-3's libraries the scenario links against.
const LIBRARIES: &[&str] = &[
    "core",
    "network",
    "internet",
    "point-to-point",
    "applications",
    "traffic-control",
];

const INSTALL_HINT: &str = "apt-get install libns3-dev g++";

/// An ns-3 installation: its version (from ns3-core.pc) and headers.
#[derive(Debug, Clone)]
pub struct Install {
    pub version: String,
    pub include: PathBuf,
}

/// Where to look for ns3-core.pc: `$LINKPERF_NS3_PC_DIR` alone when set (an
/// ns-3 installed elsewhere), else where Debian puts pkg-config files.
fn pc_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("LINKPERF_NS3_PC_DIR") {
        return vec![PathBuf::from(dir)];
    }
    [
        "/usr/lib/x86_64-linux-gnu/pkgconfig",
        "/usr/lib/aarch64-linux-gnu/pkgconfig",
        "/usr/lib/pkgconfig",
        "/usr/local/lib/pkgconfig",
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// The `Version:` line of a pkg-config file, without Debian's revision.
fn pc_version(text: &str) -> Option<String> {
    let v = text
        .lines()
        .find_map(|l| l.strip_prefix("Version:"))?
        .trim();
    let v = v.split('-').next().unwrap_or(v);
    (!v.is_empty()).then(|| v.to_string())
}

impl Install {
    /// The installed ns-3, or a usage error saying how to install it.
    pub fn find() -> Result<Install, SimError> {
        let missing = |what: &str| {
            SimError::usage(format!(
                "ns-3 is not installed ({what}); install it with: {INSTALL_HINT}"
            ))
        };
        let pc = pc_dirs()
            .into_iter()
            .map(|d| d.join("ns3-core.pc"))
            .find(|p| p.is_file())
            .ok_or_else(|| missing("no ns3-core.pc"))?;
        let text = std::fs::read_to_string(&pc).map_err(|e| missing(&e.to_string()))?;
        let version = pc_version(&text).ok_or_else(|| missing("ns3-core.pc has no version"))?;
        let include = PathBuf::from("/usr/include");
        if !include.join("ns3/core-module.h").is_file() {
            return Err(missing("no /usr/include/ns3/core-module.h"));
        }
        Ok(Install { version, include })
    }

    /// The cache directory of this source and version.
    fn cache_dir(&self) -> PathBuf {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        let key = fnv64(format!("{}\n{SCENARIO_SOURCE}", self.version).as_bytes());
        base.join("linkperf").join(format!("ns3-{key:016x}"))
    }

    /// The built scenario program, built now if the cache lacks it.
    pub fn scenario(&self) -> Result<PathBuf, SimError> {
        let dir = self.cache_dir();
        let program = dir.join("scenario");
        if program.is_file() {
            return Ok(program);
        }
        std::fs::create_dir_all(&dir).map_err(|e| {
            SimError::failed(format!("cannot create the cache {}: {e}", dir.display()))
        })?;
        build(&dir, &self.include, &program)?;
        Ok(program)
    }
}

/// Compiles the scenario into `program` (via a temporary name, so a
/// concurrent or interrupted build never leaves a half-written program).
fn build(dir: &Path, include: &Path, program: &Path) -> Result<(), SimError> {
    let source = dir.join("scenario.cc");
    std::fs::write(&source, SCENARIO_SOURCE)
        .map_err(|e| SimError::failed(format!("cannot write {}: {e}", source.display())))?;
    let partial = dir.join(format!("scenario.{}.tmp", std::process::id()));
    let mut cmd = Command::new("g++");
    cmd.args(["-O1", "-std=c++17", "-w", "-o"])
        .arg(&partial)
        .arg(&source)
        .arg(format!("-I{}", include.display()));
    for lib in LIBRARIES {
        cmd.arg(format!("-lns3-{lib}"));
    }
    let out = cmd.output().map_err(|e| {
        SimError::usage(format!(
            "cannot run g++ to build the ns-3 scenario ({e}); install it with: {INSTALL_HINT}"
        ))
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&partial);
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().find(|l| l.contains("error")).unwrap_or("");
        return Err(SimError::failed(format!(
            "building the ns-3 scenario failed: {first}"
        )));
    }
    std::fs::rename(&partial, program)
        .map_err(|e| SimError::failed(format!("cannot install {}: {e}", program.display())))
}

/// Runs the scenario with `args`; its standard output's lines.
pub fn run_scenario(program: &Path, args: &[String]) -> Result<Vec<String>, SimError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| SimError::failed(format!("cannot run {}: {e}", program.display())))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(SimError::failed(format!(
            "the ns-3 scenario failed ({}): {}",
            out.status,
            err.lines().last().unwrap_or("")
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect())
}

/// FNV-1a, 64 bits: a stable key for the cache directory.
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_drops_the_debian_revision() {
        assert_eq!(
            pc_version("Name: ns3-core\nVersion: 3.37-2\n").as_deref(),
            Some("3.37")
        );
        assert_eq!(pc_version("Name: x\n"), None);
    }
}
