//! Campaigns on the emulated testbed: real agents (`linkperf server
//! --allow-third-party`) in network namespaces, real emulated links. These
//! tests need root (namespaces, TAP devices) and say so when skipped.
//! Bidirectional flows are in campaign_bidir.rs, progress output in
//! campaign_progress.rs.

mod common;

use common::campaign::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

macro_rules! require_root {
    () => {
        linkperf_testsupport::require_root!("campaign tests need root for network namespaces")
    };
}

#[test]
fn gran_sasso_shape_is_bounded_by_the_shared_link_and_loss_matches_the_emulator() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let flow = "udp = true\nbitrate = \"40M\"\nlength = 1400\n";
        // The file keeps its original name, gs.campaign.toml (and its archive gs.campaign.db).
        let (bed, file) = bed_with_campaign(
        "gs.campaign",
        "cgs",
        4,
        "rate = \"100M\"\ndelay = \"2ms\"\nqueue = \"100K\"",
        "sessions = 2\nstart_delay = \"800ms\"\npause = \"300ms\"\n",
        &format!("[[phase]]\nname = \"forward\"\nduration = \"2s\"\n[[phase.flow]]\npairs = [[\"a1\",\"b1\"],[\"a2\",\"b2\"],[\"a3\",\"b3\"],[\"a4\",\"b4\"]]\n{flow}\n[[phase]]\nname = \"reverse\"\nduration = \"2s\"\n[[phase.flow]]\npairs = [[\"b1\",\"a1\"],[\"b2\",\"a2\"],[\"b3\",\"a3\"],[\"b4\",\"a4\"]]\n{flow}"),
    );
        let before = (bed.counters(0, "a_to_b"), bed.counters(0, "b_to_a"));
        let (code, v, stderr) = bed.campaign("a1", &file, &[]);
        let after = (bed.counters(0, "a_to_b"), bed.counters(0, "b_to_a"));
        assert_eq!(code, 0, "campaign failed: {stderr}\n{v}");
        assert_eq!(v["schema"], "linkperf/1");
        assert_eq!(v["phases"].as_array().unwrap().len(), 4);
        each_phase_is_bounded_by_the_shared_link(&v);
        receivers_lost_what_the_emulator_dropped(&v, &before, &after);
        // The receivers fell short of what was sent, and the report says which hosts.
        let flags = v["flags"].as_array().unwrap();
        assert!(
            flags
                .iter()
                .any(|f| f["kind"] == "host_short" && f["subject"] == "b1"),
            "{flags:?}"
        );
        assert!(v["phase_means"].as_array().unwrap().len() == 2);
        stored_under_its_id(&v, &file);
    });
}

/// 160 Mbit/s offered into 100 Mbit/s: every phase is held to the link.
fn each_phase_is_bounded_by_the_shared_link(v: &Value) {
    // 160 Mbit/s offered into 100 Mbit/s: the aggregate is the link's payload share.
    let payload_share = 1400.0 / (1400.0 + 28.0 + 38.0);
    for p in v["phases"].as_array().unwrap() {
        let agg = p["aggregate"]["received_bits_per_second"].as_f64().unwrap();
        assert!(
            agg <= 100e6 * payload_share * 1.02,
            "aggregate {agg} above the link"
        );
        assert!(
            agg >= 100e6 * payload_share * 0.85,
            "aggregate {agg} far below the link"
        );
        assert_eq!(p["flows"].as_array().unwrap().len(), 4);
        for i in p["aggregate"]["intervals"].as_array().unwrap() {
            assert!(
                i["received_bits_per_second"].as_f64().unwrap() <= 100e6 * 1.05,
                "{i}"
            );
        }
        let spread = p["start_spread_ms"].as_f64().unwrap();
        eprintln!(
            "phase {} session {}: aggregate {agg:.0}, start spread {spread:.3} ms",
            p["name"], p["session"]
        );
        assert!(spread < 20.0, "start spread {spread} ms");
        assert!(p["flows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["status"] == "ok"));
    }
}

fn receivers_lost_what_the_emulator_dropped(
    v: &Value,
    before: &(Value, Value),
    after: &(Value, Value),
) {
    // Every datagram the receivers missed was dropped by the emulator or, on a
    // loaded host, by an end (its interface queue, the receiving socket, the
    // host's backlog), and the flows' reports count those; the emulator may
    // also drop a few control segments and end-of-stream markers.
    for (name, b, a) in [
        ("forward", &before.0, &after.0),
        ("reverse", &before.1, &after.1),
    ] {
        let lost: u64 = phases(v, name).iter().map(|p| lost_in(p)).sum();
        let at_ends: u64 = phases(v, name).iter().map(|p| dropped_at_the_ends(p)).sum();
        let drops = dropped(a) - dropped(b);
        eprintln!("{name}: receivers lost {lost}, emulator dropped {drops}, the ends {at_ends}");
        assert!(lost > 1000, "an oversubscribed link must drop: {lost}");
        assert!(
            drops + at_ends >= lost,
            "receivers lost {lost} but the emulator dropped only {drops} and the ends {at_ends}"
        );
        assert!(
            drops <= lost + lost / 50 + 200,
            "emulator dropped {drops}, receivers lost {lost}"
        );
    }
}

/// What one phase's ends dropped, as the flows' reports count it: the senders'
/// interface queues and egress, the receivers' sockets and ingress, and the
/// host's backlog (host-wide, so counted once: the largest any flow saw).
fn dropped_at_the_ends(p: &Value) -> u64 {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let flows = p["flows"].as_array().unwrap();
    let own: u64 = flows
        .iter()
        .map(|f| {
            let (s, r) = (&f["sent"], &f["received"]);
            assert!(r["socket_drops"].is_u64(), "no socket drop count: {f}");
            n(&s["queue_drops"])
                + n(&s["egress"]["qdisc_drops"])
                + n(&s["egress"]["tx_dropped"])
                + n(&r["socket_drops"])
                + n(&r["ingress"]["rx_dropped"])
                + n(&r["ingress"]["rx_missed_errors"])
        })
        .sum();
    let backlog = flows
        .iter()
        .map(|f| n(&f["received"]["ingress"]["backlog_drops"]))
        .max()
        .unwrap_or(0);
    own + backlog
}

/// The campaign document names the archive id it was stored under.
fn stored_under_its_id(v: &Value, file: &Path) {
    // Stored in the archive, under the id the document carries.
    let id = v["id"].as_i64().expect("the campaign's archive id");
    let shown = results(file, &["show", &id.to_string(), "-J"]);
    assert!(String::from_utf8_lossy(&shown).contains("campaign"));
}

#[test]
fn many_senders_share_one_receiver_link() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let dir = scratch("m2o");
        let mut t = String::new();
        for i in 1..=3 {
            t += &format!("[[host]]\nname = \"a{i}\"\naddress = \"10.62.0.{i}/24\"\n");
        }
        t += "[[host]]\nname = \"rx\"\naddress = \"10.62.0.100/24\"\n[[switch]]\nname = \"sw\"\n";
        t +=
            "[[link]]\nends = [\"sw\", \"rx\"]\nrate = \"50M\"\ndelay = \"2ms\"\nqueue = \"64K\"\n";
        for i in 1..=3 {
            t += &format!("[[link]]\nends = [\"a{i}\", \"sw\"]\n");
        }
        let mut bed = Bed::up(&dir, "cmo", &t);
        for h in ["a1", "a2", "a3", "rx"] {
            bed.agent(h);
        }
        let mut c = String::from("start_delay = \"800ms\"\n");
        for i in 1..=3 {
            c += &format!("[[agent]]\nname = \"a{i}\"\naddress = \"10.62.0.{i}\"\n");
        }
        c += "[[agent]]\nname = \"rx\"\naddress = \"10.62.0.100\"\n";
        c += "[[phase]]\nname = \"m2o\"\nduration = \"4s\"\n[[phase.flow]]\nmany_to_one = { from = [\"a1\", \"a2\", \"a3\"], to = \"rx\" }\n";
        let file = write(&dir, "m2o.toml", &c);
        let (code, v, stderr) = bed.campaign("a1", &file, &[]);
        assert_eq!(code, 0, "{stderr}");
        let p = &v["phases"][0];
        let agg = p["aggregate"]["received_bits_per_second"].as_f64().unwrap();
        assert!(
            agg <= 50e6 * 1.02,
            "aggregate {agg} above the 50 Mbit/s link"
        );
        assert!(
            agg >= 50e6 * 0.75,
            "aggregate {agg}: TCP should fill most of the link"
        );
        for f in p["flows"].as_array().unwrap() {
            let r = f["received"]["bits_per_second"].as_f64().unwrap();
            assert!(r > 2e6, "a flow starved: {f}");
            assert_eq!(f["to"], "rx");
        }
        let rx = p["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["name"] == "rx")
            .unwrap();
        assert!((rx["received_bits_per_second"].as_f64().unwrap() - agg).abs() < 1.0);
    });
}

#[test]
fn an_agent_killed_mid_phase_fails_its_flow_and_the_rest_completes() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let dir = scratch("kill");
        let mut bed = Bed::up(&dir, "ckl", &two_sides(2, "delay = \"1ms\""));
        let victim = bed.agent_pairs(2)[1];
        let file = write(
        &dir,
        "kill.toml",
        &format!("start_delay = \"500ms\"\n{}\n[[phase]]\nname = \"p\"\nduration = \"4s\"\n[[phase.flow]]\npairs = [[\"a1\",\"b1\"],[\"a2\",\"b2\"]]\nudp = true\nbitrate = \"10M\"\n", agents_toml(2)),
    );
        let child = bed.spawn_unstored(&file);
        std::thread::sleep(Duration::from_millis(2000));
        bed.children[victim].kill().unwrap();
        let _ = bed.children[victim].wait();
        let out = child.wait_with_output().unwrap();
        let v: Value =
            serde_json::from_slice(&out.stdout).expect("a JSON document even when a flow failed");
        assert_eq!(
            out.status.code(),
            Some(1),
            "a failed flow makes the campaign exit 1"
        );
        let flows = v["phases"][0]["flows"].as_array().unwrap();
        let ok = flows.iter().find(|f| f["from"] == "a1").unwrap();
        let dead = flows.iter().find(|f| f["from"] == "a2").unwrap();
        assert_eq!(ok["status"], "ok");
        let r = ok["received"]["bits_per_second"].as_f64().unwrap();
        assert!(
            (r - 10e6).abs() < 0.5e6,
            "the surviving flow ran its course: {r}"
        );
        assert_eq!(dead["status"], "failed");
        let stopped = dead["stopped_after_s"].as_f64().unwrap();
        assert!((0.8..3.5).contains(&stopped), "stopped after {stopped} s");
        // What the dead flow measured before it stopped is kept.
        assert!(!dead["intervals"].as_array().unwrap().is_empty(), "{dead}");
        assert!(v["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "flow_failed"));
    });
}

/// The receiving agent dies instead: the sending agent still sends its
/// report back, and the flow must say it failed (it said `ok` with 0 bytes
/// received), naming the receiver, keeping what the sender measured.
#[test]
fn a_receiving_agent_killed_mid_phase_fails_its_flow_and_keeps_what_was_sent() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let dir = scratch("killrx");
        let mut bed = Bed::up(&dir, "ckr", &two_sides(2, "delay = \"1ms\""));
        for host in ["a1", "b1", "a2"] {
            bed.agent(host);
        }
        let victim = bed.agent("b2");
        let file = write(
            &dir,
            "killrx.toml",
            &format!("start_delay = \"500ms\"\n{}\n[[phase]]\nname = \"p\"\nduration = \"4s\"\n[[phase.flow]]\npairs = [[\"a1\",\"b1\"],[\"a2\",\"b2\"]]\nudp = true\nbitrate = \"10M\"\n", agents_toml(2)),
        );
        let child = bed.spawn_unstored(&file);
        std::thread::sleep(Duration::from_millis(2000));
        bed.children[victim].kill().unwrap();
        let _ = bed.children[victim].wait();
        let out = child.wait_with_output().unwrap();
        let v: Value =
            serde_json::from_slice(&out.stdout).expect("a JSON document even when a flow failed");
        let flows = v["phases"][0]["flows"].as_array().unwrap();
        let ok = flows.iter().find(|f| f["from"] == "a1").unwrap();
        let dead = flows.iter().find(|f| f["from"] == "a2").unwrap();
        assert_eq!(ok["status"], "ok", "{ok}");
        assert_eq!(dead["status"], "failed", "{dead}");
        let why = dead["error"].as_str().unwrap_or_default();
        assert!(why.contains("'b2'") && why.contains("went away"), "{why}");
        assert_eq!(
            out.status.code(),
            Some(1),
            "a failed flow makes the campaign exit 1"
        );
        // Killed 2 s after the campaign began, 0.5 s of it before the start.
        let stopped = dead["stopped_after_s"].as_f64().unwrap();
        assert!((0.8..3.5).contains(&stopped), "stopped after {stopped} s");
        // The sender's measurements are kept: 10 Mbit/s until the receiver died.
        let sent = dead["sent"]["bytes"].as_f64().unwrap();
        assert!(
            sent >= 10e6 / 8.0 * 0.8 && sent <= 10e6 / 8.0 * stopped * 1.1 + 1e5,
            "sent {sent} bytes in {stopped} s"
        );
        assert!(!dead["intervals"].as_array().unwrap().is_empty(), "{dead}");
        assert!(v["flags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "flow_failed" && f["subject"] == "a2 -> b2"));
    });
}

#[test]
fn an_unreachable_agent_stops_the_campaign_before_anything_runs() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let dir = scratch("unreach");
        let mut bed = Bed::up(&dir, "cun", &two_sides(1, "delay = \"1ms\""));
        bed.agent("a1"); // b1 has no agent
        let file = write(
        &dir,
        "u.toml",
        &format!("{}\n[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\n", agents_toml(1)),
    );
        let (code, _, stderr) = bed.campaign("a1", &file, &[]);
        assert_eq!(code, 1);
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("b1") && stderr.contains("nothing was run"),
            "{stderr}"
        );
        let (code, v, _) = bed.campaign("a1", &file, &["--keep-going"]);
        assert_eq!(code, 1);
        assert_eq!(v["phases"][0]["flows"][0]["status"], "missing");
    });
}

/// The agent binaries copied into /tmp for agents started over SSH.
fn agent_copies() -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("linkperf-agent-")
        })
        .map(|e| e.path())
        .collect()
}

#[test]
fn an_agent_started_over_ssh_runs_its_flow_and_is_removed() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let Some(sshd) = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .find(|p| Path::new(p).exists())
        else {
            linkperf_testsupport::skip("no OpenSSH server (apt-get install openssh-server)");
            return;
        };
        let dir = scratch("ssh");
        let mut bed = Bed::up(&dir, "css", &two_sides(1, "delay = \"1ms\""));
        bed.agent("a1");
        for (key, file) in [("client", "id"), ("host", "host_key")] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", key, "-f"])
                .arg(dir.join(file))
                .output()
                .unwrap();
            assert!(out.status.success());
        }
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
        let config = dir.join("sshd_config");
        std::fs::write(
        &config,
        format!(
            "Port 22\nListenAddress 10.61.0.101\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nStrictModes no\nUsePAM no\nPidFile {d}/sshd.pid\n",
            d = dir.display()
        ),
    )
    .unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut sshd = bed.in_netns("b1", sshd);
        sshd.args(["-D", "-e", "-f"]).arg(&config);
        bed.serve("b1", &mut sshd, 22);
        let file = write(
        &dir,
        "ssh.toml",
        &format!(
            "start_delay = \"500ms\"\n[[agent]]\nname = \"a1\"\naddress = \"10.61.0.1\"\n[[agent]]\nname = \"b1\"\nssh = \"root@10.61.0.101\"\nssh_options = [\"-i\", \"{}\", \"-o\", \"UserKnownHostsFile=/dev/null\"]\n[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\nudp = true\nbitrate = \"5M\"\n",
            dir.join("id").display()
        ),
    );
        // Copies another run left (one killed mid-test) are not this one's.
        let before = agent_copies();
        let (code, v, stderr) = bed.campaign("a1", &file, &[]);
        assert_eq!(code, 0, "{stderr}\n{v}");
        let f = &v["phases"][0]["flows"][0];
        assert_eq!(f["status"], "ok");
        assert!(f["received"]["bytes"].as_u64().unwrap() > 500_000, "{f}");
        // The temporary agent is gone, and so is the binary copied for it.
        assert!(
            wait_not_listening(&bed, "b1", 5211, Duration::from_secs(5)),
            "the SSH agent is still listening after the campaign"
        );
        let leftovers: Vec<_> = agent_copies()
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        assert!(
            leftovers.is_empty(),
            "copied agent binaries left behind: {leftovers:?}"
        );
    });
}

#[test]
fn ctrl_c_stops_every_flow_within_a_second_and_keeps_the_partial_result() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let (bed, file) = bed_with_campaign(
        "int",
        "cin",
        2,
        "delay = \"1ms\"",
        "start_delay = \"300ms\"\nsessions = 3\n",
        "[[phase]]\nname = \"p\"\nduration = \"8s\"\n[[phase.flow]]\npairs = [[\"a1\",\"b1\"],[\"a2\",\"b2\"]]\nudp = true\nbitrate = \"5M\"\n",
    );
        let child = bed.spawn_unstored(&file);
        std::thread::sleep(Duration::from_millis(2500));
        let interrupted_at = Instant::now();
        // SAFETY: sending a signal to our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        let took = interrupted_at.elapsed();
        assert!(
            took < Duration::from_secs(4),
            "the campaign took {took:?} to stop"
        );
        assert_eq!(out.status.code(), Some(130), "Ctrl-C exits 130");
        let v: Value = serde_json::from_slice(&out.stdout).expect("partial result printed as JSON");
        assert_eq!(v["interrupted"], true);
        assert_eq!(
            v["phases"].as_array().unwrap().len(),
            1,
            "no further session after Ctrl-C"
        );
        for f in v["phases"][0]["flows"].as_array().unwrap() {
            let bytes = f["received"]["bytes"].as_u64().unwrap();
            // About 2 s of 5 Mbit/s: clearly partial, clearly not nothing.
            assert!(bytes > 500_000 && bytes < 3_500_000, "{f}");
        }
    });
}

#[test]
fn a_campaign_sweeps_a_flow_option() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        require_root!();
        let (bed, file) = bed_with_campaign(
        "vary",
        "cvy",
        1,
        "delay = \"1ms\"",
        "vary = [\"bitrate=4M,12M\"]\nstart_delay = \"300ms\"\npause = \"100ms\"\n",
        "[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\nudp = true\n",
    );
        let (code, v, stderr) = bed.campaign("a1", &file, &[]);
        assert_eq!(code, 0, "{stderr}");
        let phases = v["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 2);
        for (p, want) in phases.iter().zip([4e6, 12e6]) {
            let got = p["flows"][0]["received"]["bits_per_second"]
                .as_f64()
                .unwrap();
            assert!(
                (got - want).abs() < want * 0.05,
                "{} at {}: {got}",
                p["name"],
                p["params"]
            );
        }
        assert_eq!(phases[1]["params"]["bitrate"], "12M");
        assert_eq!(v["phase_means"].as_array().unwrap().len(), 2);
    });
}

/// A flow's own warnings reach the campaign: a window of twice net.core.rmem_max is
/// capped by the kernel, the flow's test warns, and the campaign keeps and flags it.
#[test]
fn a_flows_own_warning_is_kept_and_flagged() {
    require_root!();
    let rmem_max: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (bed, file) = bed_with_campaign(
        "warn",
        "cwn",
        1,
        "delay = \"1ms\"",
        "start_delay = \"300ms\"\n",
        &format!(
            "[[phase]]\nname = \"p\"\nduration = \"1s\"\n[[phase.flow]]\nfrom = \"a1\"\nto = \"b1\"\nwindow = \"{}\"\n",
            2 * rmem_max
        ),
    );
    let (code, v, stderr) = bed.campaign("a1", &file, &[]);
    assert_eq!(code, 0, "{stderr}");
    let f = &v["phases"][0]["flows"][0];
    let warnings = f["warnings"].as_array().expect("the flow's warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("net.core.rmem_max")),
        "{f}"
    );
    let flags = v["flags"].as_array().unwrap();
    assert!(
        flags.iter().any(|g| g["kind"] == "flow_warning"
            && g["subject"] == "a1 -> b1"
            && g["message"].as_str().unwrap().contains("net.core.rmem_max")),
        "{flags:?}"
    );
}
