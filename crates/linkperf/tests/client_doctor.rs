//! `linkperf client --doctor`: both ends examined against the test's path
//! before the test, printed with the results and kept in the JSON. The
//! bandwidth-delay product is worked here from the path given; the server's
//! settings are set here in its own namespace.

mod common;

use common::{assert_valid, linkperf_in, loopback_client, loopback_json};
use linkperf_testsupport::bed::{two_hosts, CliBed};
use serde_json::Value;

#[test]
fn the_doctor_examines_this_host_against_the_tests_path() {
    let doc = loopback_json(&[
        "-t",
        "0.5",
        "-i",
        "0",
        "--no-store",
        "--doctor",
        "--path",
        "rate=40M,rtt=20ms",
    ]);
    assert_valid(&doc);
    let local = &doc["doctor"]["local"];
    // 40 Mbit/s x 20 ms / 8 = 100,000 bytes in flight.
    assert_eq!(local["bdp_bytes"], 100_000, "{local}");
    assert_eq!(local["target"]["rate_bits_per_second"], 40e6);
    let items: Vec<&str> = local["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["item"].as_str())
        .collect();
    for want in ["net.core.rmem_max", "net.ipv4.tcp_rmem"] {
        assert!(
            items.iter().any(|i| i.starts_with(want)),
            "{want} not examined: {items:?}"
        );
    }
    // The text output prints the examination before the test's lines.
    let run = loopback_client(&[
        "-t",
        "0.5",
        "--no-store",
        "--doctor",
        "--path",
        "rate=40M,rtt=20ms",
    ]);
    run.assert_success("client --doctor");
    let out = &run.stdout;
    let doctor_at = out.find("doctor (this host").expect("the doctor's heading");
    let sender_at = out.find("sender").expect("the summary");
    assert!(doctor_at < sender_at, "{out}");
}

#[test]
fn the_doctor_without_a_known_path_is_a_usage_error() {
    let run = loopback_client(&["-t", "0.5", "--no-store", "--doctor"]);
    let line = run.assert_one_line_failure(2);
    assert!(
        line.contains("--doctor") && line.contains("--path"),
        "{line}"
    );
}

/// The finding named `item` in an examination's JSON.
fn finding<'a>(exam: &'a Value, item: &str) -> &'a Value {
    exam["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["item"] == item))
        .unwrap_or_else(|| panic!("no {item} in {exam}"))
}

/// The testbed with the server's namespace set apart (`rmem` as its tcp_rmem,
/// txqueuelen 500) and a server in it on port 5311; returns it with the
/// server's interface.
fn server_bed(topology: &str, server_rmem: &str) -> (CliBed, String) {
    let mut bed = CliBed::up(common::bin(), &std::env::temp_dir(), "lpdoc", topology);
    let set = bed
        .in_netns("b", "sysctl")
        .args(["-w", &format!("net.ipv4.tcp_rmem={server_rmem}")])
        .output()
        .unwrap();
    assert!(set.status.success(), "{set:?}");
    let dev = String::from_utf8(
        bed.in_netns("b", "ip")
            .args(["-o", "-4", "addr", "show", "to", "10.81.0.2"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let dev = dev
        .split_whitespace()
        .nth(1)
        .expect("b's interface")
        .to_string();
    let set = bed
        .in_netns("b", "ip")
        .args(["link", "set", "dev", &dev, "txqueuelen", "500"])
        .output()
        .unwrap();
    assert!(set.status.success(), "{set:?}");
    let mut server = bed.exec("b", common::bin());
    bed.serve("b", server.args(["server", "-q", "-p", "5311"]), 5311);

    (bed, dev)
}

/// The server's host, set apart from the client's in a testbed: a 100,000-byte
/// tcp_rmem max and a 500-packet txqueuelen on its interface. The doctor
/// output names those values, for the server, with the commands to paste there;
/// the client's own namespace keeps the kernel's defaults.
#[test]
fn the_servers_host_is_examined_beside_this_one() {
    let Some(_turn) = common::testbed_turn() else {
        return;
    };
    // 40 Mbit/s, 10 ms each way: BDP 40e6 x 0.020 / 8 = 100,000 bytes.
    let topology = two_hosts(
        "lpdoc",
        "10.81.0.1",
        "10.81.0.2",
        "rate = \"40M\"\ndelay = \"10ms\"",
    );
    let server_rmem = "4096 131072 100000";
    let (bed, dev) = server_bed(&topology, server_rmem);
    let args = [
        "client",
        "10.81.0.2",
        "-p",
        "5311",
        "-t",
        "0.5",
        "-i",
        "0",
        "--no-store",
        "--doctor",
    ];
    let run = linkperf_in(&bed, "a", &[&args[..], &["-J"]].concat());
    run.assert_success("client --doctor in a testbed");
    let doc: Value = serde_json::from_str(&run.stdout).expect("client JSON");
    assert_valid(&doc);
    let doctor = &doc["doctor"];
    assert_eq!(doctor["server_status"], "reported", "{doctor}");
    let server = &doctor["server"];
    assert_eq!(server["bdp_bytes"], 100_000, "{server}");
    let rmem = finding(server, "net.ipv4.tcp_rmem");
    assert_eq!(rmem["current"], server_rmem);
    assert_eq!(rmem["status"], "change");
    // Autotuning's memory must hold twice the BDP: 200,000.
    assert_eq!(rmem["fix"]["value"], "4096 131072 200000");
    let queue = finding(server, &format!("{dev} txqueuelen"));
    assert_eq!(queue["current"], "500");
    assert_eq!(queue["fix"]["value"], 1000);
    // The client's namespace was not changed: its own values, not the server's.
    let local_rmem = finding(&doctor["local"], "net.ipv4.tcp_rmem");
    assert_ne!(local_rmem["current"], server_rmem, "{local_rmem}");

    // Text: the server's lines say so, and its commands are headed for it.
    let run = linkperf_in(&bed, "a", &args);
    run.assert_success("client --doctor (text)");
    let out = &run.stdout;
    let line = out
        .lines()
        .find(|l| l.starts_with("server:") && l.contains("net.ipv4.tcp_rmem"))
        .unwrap_or_else(|| panic!("no server tcp_rmem line in:\n{out}"));
    assert!(
        line.contains("CHANGE") && line.contains(server_rmem),
        "{line}"
    );
    let fixes = out
        .split("to change on server")
        .nth(1)
        .unwrap_or_else(|| panic!("no commands for the server in:\n{out}"));
    assert!(
        fixes.contains("sysctl -w net.ipv4.tcp_rmem='4096 131072 200000'"),
        "{out}"
    );
    assert!(
        fixes.contains(&format!("ip link set dev {dev} txqueuelen 1000")),
        "{out}"
    );
    // Nothing was applied on the server: its namespace still holds the small max.
    let now = bed
        .in_netns("b", "cat")
        .arg("/proc/sys/net/ipv4/tcp_rmem")
        .output()
        .unwrap();
    let now = String::from_utf8_lossy(&now.stdout);
    assert_eq!(
        now.split_whitespace().collect::<Vec<_>>().join(" "),
        server_rmem
    );
}

/// A server that does not answer the doctor request (a stock iperf3 server
/// here, as an older linkperf server would): "server: not reported", and the
/// test goes on.
#[test]
fn a_server_that_does_not_answer_is_not_reported() {
    // Started listening (iperf3 -s binds before it answers), so the client is not refused.
    let (mut iperf3, port) = common::iperf3_server_with(&["-1"]);
    let run = common::linkperf(&[
        "client",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--iperf3",
        "-t",
        "1",
        "-J",
        "--no-store",
        "--doctor",
        "--path",
        "rate=40M,rtt=20ms",
    ]);
    let _ = iperf3.kill();
    let _ = iperf3.wait();
    run.assert_success("client --doctor against iperf3");
    let doc: Value = serde_json::from_str(&run.stdout).expect("client JSON");
    let doctor = &doc["doctor"];
    assert_eq!(doctor["local"]["bdp_bytes"], 100_000, "{doctor}");
    assert!(doctor["server"].is_null(), "{doctor}");
    let status = doctor["server_status"].as_str().unwrap_or("");
    assert!(status.starts_with("not reported"), "{status}");
}
