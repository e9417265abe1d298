//! `linkperf client --doctor`: this host examined against the test's path
//! before the test, printed before the results and kept in the JSON. The
//! bandwidth-delay product is worked here from the path given.

mod common;

use common::{assert_valid, loopback_client, loopback_json};

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
