//! Campaign tests' testbed: hosts on each side of a shared link, real agents
//! (`linkperf server --allow-third-party`) in their namespaces, and the
//! campaign runner started inside one of them.

use super::{bin, output_ok};
use linkperf_testsupport::bed::CliBed;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A fresh directory for one campaign test.
pub fn scratch(name: &str) -> PathBuf {
    linkperf_testsupport::scratch("lp-campaign", name)
}

/// Writes a campaign (or any) file `name` into `dir`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

/// A testbed that is removed when the test ends, whatever happens.
pub struct Bed(pub CliBed);

impl std::ops::Deref for Bed {
    type Target = CliBed;
    fn deref(&self) -> &CliBed {
        &self.0
    }
}

impl std::ops::DerefMut for Bed {
    fn deref_mut(&mut self) -> &mut CliBed {
        &mut self.0
    }
}

impl Bed {
    pub fn up(dir: &Path, name: &str, topology: &str) -> Bed {
        Bed(CliBed::up(bin(), dir, name, topology))
    }

    /// Starts `linkperf server --allow-third-party` in `host` (the child is the server
    /// itself: `ip netns exec` and `nice` exec it). At nice -20: the agents are the flows'
    /// paced senders, and the tests measure the tool and the emulated path, not how
    /// long a loaded machine's scheduler keeps an ordinary process from its CPU (a 10 Mbit/s
    /// flow once sent 7.0 in its 1 s beside a build, its pacer writing the rest off).
    pub fn agent(&mut self, host: &str) -> usize {
        let mut cmd = self.in_netns(host, "nice");
        cmd.args(["-n", "-20"])
            .arg(bin())
            .args(["server", "--allow-third-party", "-q"]);
        self.serve(host, &mut cmd, 5211)
    }

    /// Starts agents in a1..aN and b1..bN; returns the index of each a's agent.
    pub fn agent_pairs(&mut self, pairs: usize) -> Vec<usize> {
        (1..=pairs)
            .map(|i| {
                let a = self.agent(&format!("a{i}"));
                self.agent(&format!("b{i}"));
                a
            })
            .collect()
    }

    /// `linkperf campaign run FILE` inside `host`, to add arguments to.
    pub fn campaign_command(&self, host: &str, file: &Path) -> Command {
        let mut cmd = self.in_netns(host, bin());
        cmd.args(["campaign", "run"]).arg(file);
        cmd
    }

    /// Runs `linkperf campaign run FILE -J` inside `host`, storing into an
    /// archive beside the file (never the user's own).
    pub fn campaign(&self, host: &str, file: &Path, extra: &[&str]) -> (i32, Value, String) {
        let child = self
            .campaign_command(host, file)
            .arg("-J")
            .arg("--db")
            .arg(file.with_extension("db"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        (
            out.status.code().unwrap_or(-1),
            linkperf_testsupport::json::parse_or_null(stdout.as_bytes()),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    /// Runs `campaign run FILE -J --no-store` in a1 in the background.
    pub fn spawn_unstored(&self, file: &Path) -> std::process::Child {
        self.campaign_command("a1", file)
            .arg("-J")
            .arg("--no-store")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// `linkperf results --db FILE.db ARGS...`, asserted successful; its stdout.
pub fn results(file: &Path, args: &[&str]) -> Vec<u8> {
    let mut cmd = Command::new(bin());
    cmd.args(["results", "--db"]).arg(file.with_extension("db"));
    output_ok(cmd.args(args)).stdout
}

/// One `[[TABLE]]` a host of `pairs` pairs, aI at 10.61.0.I and bI at
/// 10.61.0.(100 + I), each address followed by `suffix` ("/24" for a
/// testbed host, "" for a campaign agent).
fn pair_tables(pairs: usize, table: &str, suffix: &str) -> String {
    let mut t = String::new();
    for i in 1..=pairs {
        for (side, host) in [("a", i), ("b", 100 + i)] {
            t += &format!(
                "[[{table}]]\nname = \"{side}{i}\"\naddress = \"10.61.0.{host}{suffix}\"\n"
            );
        }
    }
    t
}

/// Four hosts on each side of one shared link between two switches.
pub fn two_sides(pairs: usize, bottleneck: &str) -> String {
    let mut t = pair_tables(pairs, "host", "/24");
    t += "[[switch]]\nname = \"left\"\n[[switch]]\nname = \"right\"\n";
    // The shared link is link 0, so its counters are easy to find.
    t += &format!("[[link]]\nends = [\"left\", \"right\"]\n{bottleneck}\n");
    for i in 1..=pairs {
        t += &format!(
            "[[link]]\nends = [\"a{i}\", \"left\"]\n[[link]]\nends = [\"b{i}\", \"right\"]\n"
        );
    }
    t
}

pub fn agents_toml(pairs: usize) -> String {
    pair_tables(pairs, "agent", "")
}

/// A testbed of `pairs` pairs across one link with `bottleneck`, an agent
/// in every host, and the campaign `body` (after the agent tables) in DIR/FILE.
pub fn bed_with_campaign(
    test: &str,
    name: &str,
    pairs: usize,
    bottleneck: &str,
    preamble: &str,
    body: &str,
) -> (Bed, PathBuf) {
    let dir = scratch(test);
    let mut bed = Bed::up(&dir, name, &two_sides(pairs, bottleneck));
    bed.agent_pairs(pairs);
    let file = write(
        &dir,
        &format!("{test}.toml"),
        &format!("{preamble}{}\n{body}", agents_toml(pairs)),
    );
    (bed, file)
}

pub fn dropped(c: &Value) -> u64 {
    ["dropped_queue", "dropped_loss", "dropped_ber"]
        .iter()
        .map(|k| c[k].as_u64().unwrap())
        .sum()
}

pub fn phases<'a>(v: &'a Value, name: &str) -> Vec<&'a Value> {
    v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == name)
        .collect()
}

pub fn lost_in(p: &Value) -> u64 {
    p["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["received"]["lost_packets"].as_u64().unwrap_or(0))
        .sum()
}

/// Payload bits per wire bit of full-size UDP datagrams of `length` bytes on
/// an Ethernet-framed link: the payload plus UDP/IPv4 headers (28) plus
/// Ethernet header, FCS, preamble and gap (38).
pub fn udp_payload_share(length: f64) -> f64 {
    length / (length + 28.0 + 38.0)
}

/// Frame bytes the emulator counts per datagram: IP packet + 14-byte Ethernet header.
pub fn udp_frame_bytes(length: f64) -> f64 {
    length + 28.0 + 14.0
}

/// Waits until nothing listens on `port` in `host` any more.
pub fn wait_not_listening(bed: &Bed, host: &str, port: u16, limit: Duration) -> bool {
    linkperf_testsupport::process::poll(limit, Duration::from_millis(100), || {
        (!bed.listening(host, port)).then_some(())
    })
    .is_some()
}
