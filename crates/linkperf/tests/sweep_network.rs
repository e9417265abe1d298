//! `linkperf sweep --testbed FILE --vary link.LINK.KEY=...`: the sweep builds the testbed,
//! sets each point's link, runs client and server in the testbed's hosts, stores the link
//! values as the points' parameters, resumes from the archive, and removes the testbed it
//! built. Throughput is checked against the configured link (its payload rate), not against
//! anything else linkperf prints. Bad link names and values fail up front with one line.
//!
//! They need root (namespaces, TAP devices) and are skipped with a message otherwise.

mod common;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_linkperf")
}

/// A topology file for testbed `name` (hosts a and b, link `wan` at 100 Mbit/s) in a fresh
/// directory; the testbed is removed (if up) when dropped.
struct Topo {
    name: String,
    dir: PathBuf,
}

impl Topo {
    fn new(name: &str) -> Topo {
        let _ = Command::new(bin()).args(["testbed", "down", name]).output();
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!(
            "name = \"{name}\"\nseed = 1\n[[host]]\nname = \"a\"\naddress = \"10.79.0.1/24\"\n\
             [[host]]\nname = \"b\"\naddress = \"10.79.0.2/24\"\n\
             [[link]]\nname = \"wan\"\nends = [\"a\", \"b\"]\nrate = \"100M\"\ndelay = \"2ms\"\n\
             queue = \"256K\"\n"
        );
        std::fs::write(dir.join("bed.toml"), text).unwrap();
        Topo {
            name: name.to_string(),
            dir,
        }
    }

    /// The testbed's namespaces that exist now.
    fn namespaces(&self) -> Vec<String> {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let prefix = format!("lp-{}-", self.name);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| n.starts_with(&prefix))
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        let _ = Command::new(bin())
            .args(["testbed", "down", &self.name])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sweep(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .arg("sweep")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run linkperf sweep")
}

/// TCP payload rate of an Ethernet-framed link: 1448 bytes of payload (MSS with timestamps)
/// per 1500-byte packet, which takes 1538 bytes on the wire (docs/testbed.md, framing).
fn payload_rate(rate_bps: f64) -> f64 {
    rate_bps * 1448.0 / 1538.0
}

fn point_received(doc: &Value, param: &str, value: &str) -> Vec<f64> {
    doc["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter(|p| p["params"][param] == value)
        .filter_map(|p| p["received_bits_per_second"]["mean"].as_f64())
        .collect()
}

/// The rate sweep: interrupted after its first run (Ctrl-C), resumed from another directory
/// with the stored command line, and each point's goodput follows the link rate it set.
#[test]
fn link_rate_sweep_follows_the_link_and_resumes() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_lock) = common::testbed_turn() else {
            return;
        };
        let topo = Topo::new("lpswnet");
        let db = topo.dir.join("archive.sqlite");
        let db = db.to_str().unwrap();
        // Relative topology path: resume must still find it from elsewhere.
        let mut child = Command::new(bin())
            .args(["sweep", "--testbed", "bed.toml", "--vary"])
            .args(["link.wan.rate=20M,50M", "-t", "2", "-O", "0.5", "--db", db])
            .current_dir(&topo.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut line = String::new();
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            line.clear();
            if stderr.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            seen.push(line.trim().to_string());
            if line.contains("run 2 of 2") {
                // SAFETY: kill(2) on our own child.
                unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
                break;
            }
        }
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "stderr: {seen:?} {rest}");
        let id: String = rest
            .split("--resume ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .unwrap_or_else(|| panic!("no resume hint in: {rest}"))
            .to_string();
        assert!(topo.namespaces().is_empty(), "namespaces left after Ctrl-C");

        let out = sweep(Path::new("/"), &["--resume", &id, "--db", db, "-J"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "resume failed: {stderr}");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("sweep JSON");
        assert_eq!(doc["status"], "complete");
        for (value, rate) in [("20M", 20e6), ("50M", 50e6)] {
            let got = point_received(&doc, "link.wan.rate", value);
            assert_eq!(got.len(), 1, "one run stored at rate {value}: {doc}");
            let expected = payload_rate(rate);
            eprintln!(
                "  link.wan.rate={value}: {:.2} Mbit/s of {:.2} payload",
                got[0] / 1e6,
                expected / 1e6
            );
            // TCP fills a clean link to within a tenth (the acceptance test's bound); it can
            // never beat the link's payload rate beyond the 1 % of timing slack.
            assert!(got[0] >= 0.9 * expected, "{value}: {} bit/s", got[0]);
            assert!(got[0] <= 1.01 * expected, "{value}: {} bit/s", got[0]);
        }
        // The stored runs know their link value through their point.
        let out = Command::new(bin())
            .args(["results", "show", &id, "--db", db])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(
            shown.contains("link.wan.rate") && shown.contains("20M") && shown.contains("50M"),
            "results show: {shown} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            topo.namespaces().is_empty(),
            "namespaces left after the sweep"
        );
    });
}

/// A testbed that is up is used as it is and stays up; a delay point shows in the RTT.
#[test]
fn a_testbed_that_is_up_is_reused_and_kept() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let Some(_lock) = common::testbed_turn() else {
            return;
        };
        let topo = Topo::new("lpswreuse");
        common::output_ok(
            Command::new(bin())
                .args(["testbed", "up", "bed.toml"])
                .current_dir(&topo.dir),
        );
        let out = sweep(
            &topo.dir,
            &[
                "--testbed",
                "bed.toml",
                "--vary",
                "link.wan.delay=20ms",
                "-t",
                "1",
                "-J",
                "--no-store",
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !topo.namespaces().is_empty(),
            "the sweep removed a testbed it did not build"
        );
        // The link kept the point's delay: the emulator says so.
        let status = Command::new(bin())
            .args(["testbed", "status", "lpswreuse", "--json"])
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&status.stdout).unwrap();
        let delay = &doc["testbeds"][0]["links"][0]["a_to_b"]["params"]["delay_ns"];
        assert_eq!(delay.as_u64(), Some(20_000_000), "{doc}");
    });
}

/// Bad link names and values: one line naming the problem, exit 2, no testbed built.
#[test]
fn bad_link_varies_fail_up_front() {
    let Some(_lock) = common::testbed_turn() else {
        return;
    };
    let topo = Topo::new("lpswbad");
    for (vary, says) in [
        ("link.lan.rate=10M", "no link 'lan'"),
        ("link.wan.speed=10M", "speed"),
        ("link.wan.rate=fast", "'fast' is not a rate"),
        ("link.wan.ber=2", "ber"),
        ("link.wan.up.rate=10M", "'up' is not a direction"),
        ("link.wan.rate=10M..100M*10", "list"),
        ("link.wan=10M", "link.LINK.KEY"),
    ] {
        let out = sweep(
            &topo.dir,
            &["--testbed", "bed.toml", "--vary", vary, "--no-store"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{vary}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{vary}: {err}");
        assert!(err.contains(says), "{vary}: {err}");
        assert!(topo.namespaces().is_empty(), "{vary}: a testbed was built");
    }
    let out = sweep(
        &topo.dir,
        &["127.0.0.1", "--vary", "link.wan.rate=10M", "--no-store"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--testbed"), "{err}");
}
