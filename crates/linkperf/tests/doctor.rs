//! `linkperf doctor` against a host whose settings the test chose: a network namespace
//! of its own, whose TCP memory limits and interface queue the test sets, examined by
//! the real binary inside it. What the target needs comes from the physics here (rate x
//! RTT), not from the doctor's output; `--apply` is checked by reading the kernel's
//! values back, and its undo commands by running them.

mod common;

use common::*;
use serde_json::Value;
use std::process::Command;

/// A namespace with a veth pair d0/d1, removed when dropped.
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        let name = format!("lpdoc-{}", std::process::id());
        let _ = Command::new("ip")
            .args(["netns", "del", &name])
            .stderr(std::process::Stdio::null())
            .status();
        let ns = Netns(name);
        for args in [
            vec!["netns", "add", &ns.0],
            vec![
                "-n", &ns.0, "link", "add", "d0", "type", "veth", "peer", "name", "d1",
            ],
            vec!["-n", &ns.0, "link", "set", "d0", "up"],
            vec!["-n", &ns.0, "link", "set", "d1", "up"],
            vec!["-n", &ns.0, "link", "set", "d0", "txqueuelen", "500"],
        ] {
            output_ok(Command::new("ip").args(&args));
        }
        ns
    }

    fn sh(&self, script: &str) -> String {
        let out =
            output_ok(Command::new("ip").args(["netns", "exec", &self.0, "sh", "-c", script]));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn doctor(&self, args: &[&str]) -> Value {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.0, bin(), "doctor", "-J"])
            .args(args);
        serde_json::from_slice(&output_ok(&mut cmd).stdout).expect("doctor -J prints JSON")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn finding<'a>(v: &'a Value, item: &str) -> &'a Value {
    array_at(v, "/findings")
        .iter()
        .find(|f| f["item"] == item)
        .unwrap_or_else(|| panic!("no finding {item} in {v}"))
}

/// "on" or "off": generic-receive-offload of `dev` as ethtool reports it.
fn gro(ns: &Netns, dev: &str) -> String {
    let out = ns.sh(&format!("ethtool -k {dev}"));
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("generic-receive-offload: "))
        .unwrap_or_else(|| panic!("ethtool -k {dev}: {out}"));
    line.split_whitespace().next().unwrap().to_string()
}

#[test]
fn doctor_names_what_a_path_needs_applies_it_and_undoes_it() {
    if !linkperf_testsupport::is_root() {
        linkperf_testsupport::skip("needs root (a network namespace of its own)");
        return;
    }
    let ns = Netns::new();
    ns.sh("sysctl -qw net.ipv4.tcp_rmem='4096 65536 100000' net.ipv4.tcp_wmem='4096 16384 100000'");
    // 40 Mbit/s over a 20 ms loaded RTT: 40e6 x 0.02 / 8 bytes in flight.
    let bdp = 40e6 * 0.020 / 8.0;
    let v = ns.doctor(&["--target-rate", "40M", "--rtt", "20ms"]);
    assert_eq!(u64_at(&v, "/bdp_bytes"), bdp as u64);

    // Autotuning's memory: the window is about half of it, so 2 x BDP = 200,000 > 100,000.
    for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
        let f = finding(&v, key);
        assert_eq!(f["status"], "change", "{f}");
        let fix = f["fix"]["value"].as_str().unwrap();
        let max: f64 = fix.split(' ').nth(2).unwrap().parse().unwrap();
        assert!(max >= 2.0 * bdp, "{key}: {fix}");
    }
    // A 40 Mbit/s path needs no more than the kernel's default queue of 1,000 packets.
    let q = finding(&v, "d0 txqueuelen");
    assert_eq!(
        (q["status"].as_str(), q["current"].as_str()),
        (Some("change"), Some("500"))
    );
    assert_eq!(q["fix"]["value"], 1000);
    assert_eq!(finding(&v, "d1 txqueuelen")["status"], "ok");
    // What a namespace cannot read is "unknown", and the examination goes on.
    let backlog = ns.sh("cat /proc/sys/net/core/netdev_max_backlog 2>/dev/null || true");
    let b = finding(&v, "net.core.netdev_max_backlog");
    if backlog.is_empty() {
        assert_eq!(b["status"], "unknown", "{b}");
    } else {
        assert_eq!(b["current"], backlog.as_str());
    }

    let rmem_before = ns.sh("cat /proc/sys/net/ipv4/tcp_rmem");
    let applied = ns.doctor(&["--target-rate", "40M", "--rtt", "20ms", "--apply"]);
    let done = array_at(&applied, "/applied");
    println!("applied: {done:?}");
    assert!(done.iter().all(|a| a.get("error").is_none()), "{done:?}");
    let rmem: Vec<u64> = ns
        .sh("cat /proc/sys/net/ipv4/tcp_rmem")
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(rmem[2] as f64 >= 2.0 * bdp, "{rmem:?}");
    assert_eq!(ns.sh("cat /sys/class/net/d0/tx_queue_len"), "1000");
    // veth starts with GRO off; the doctor turned it on (ethtool reads it back).
    assert!(
        done.iter().any(|a| a["command"] == "ethtool -K d0 gro on"),
        "{done:?}"
    );
    assert_eq!(gro(&ns, "d0"), "on");
    // A second look finds nothing left to change in what was applied.
    let after = ns.doctor(&["--target-rate", "40M", "--rtt", "20ms"]);
    assert_eq!(finding(&after, "net.ipv4.tcp_rmem")["status"], "ok");
    assert_eq!(finding(&after, "d0 txqueuelen")["status"], "ok");

    // The undo commands put back what was there.
    for undo in done.iter().filter_map(|a| a["undo"].as_str()) {
        ns.sh(undo);
    }
    assert_eq!(gro(&ns, "d0"), "off");
    assert_eq!(
        ns.sh("cat /proc/sys/net/ipv4/tcp_rmem")
            .split_whitespace()
            .collect::<Vec<_>>(),
        rmem_before.split_whitespace().collect::<Vec<_>>()
    );
    assert_eq!(ns.sh("cat /sys/class/net/d0/tx_queue_len"), "500");
}

#[test]
fn bad_targets_are_one_line_and_exit_2() {
    for (args, says) in [
        (&["--rtt", "0"][..], "--rtt must be above 0"),
        (&["--target-rate", "0"][..], "--target-rate must be above 0"),
        (&["--target-rate", "fast"][..], "'fast' is not a rate"),
        (&["--mtu", "100"][..], "--mtu must be 576 to 65535"),
    ] {
        let mut all = vec!["doctor"];
        all.extend_from_slice(args);
        let run = linkperf(&all);
        let line = run.assert_one_line_failure(2);
        assert!(line.contains(says), "{args:?}: {line}");
    }
}
