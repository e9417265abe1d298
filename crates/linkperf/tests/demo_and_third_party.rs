//! `linkperf demo`, and third-party tests (`--from`) relayed by a server.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn demo_runs_a_tcp_and_a_udp_test() {
    // As root the demo also builds an emulated WAN (about 10 s more).
    let child = spawn(&["demo"]);
    let run = wait_child(child, Duration::from_secs(90));
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"));
    let out = &run.stdout;
    let tcp = out.find("== TCP").expect("TCP section");
    let udp = out.find("== UDP").expect("UDP section");
    assert!(tcp < udp);
    let tcp_part = &out[tcp..udp];
    let udp_part = &out[udp..];
    assert!(tcp_part.contains("summary, client to server"), "{tcp_part}");
    assert!(tcp_part.contains("retransmits"), "{tcp_part}");
    assert!(udp_part.contains("summary, client to server"), "{udp_part}");
    assert!(udp_part.contains("datagrams"), "{udp_part}");
    if linkperf_testsupport::is_root() {
        // Both WAN runs reached the testbed's server (the demo waits until it listens).
        let wan = &out[out.find("== Emulated WAN").expect("WAN section")..];
        let limited = wan
            .find("-- window-limited: -w 64K")
            .expect("window-limited run");
        let tuned = wan.find("-- well tuned: -w 2M").expect("well-tuned run");
        assert!(limited < tuned, "{wan}");
        for run in [&wan[limited..tuned], &wan[tuned..]] {
            assert!(run.contains("summary, client to server"), "{run}");
        }
    }
}

/// Runs `linkperf client --from RELAY 127.0.0.1 -p TARGET ARGS... -J`.
fn relayed_client(relay: &Server, target: &Server, args: &[&str]) -> Run {
    let from = format!("127.0.0.1:{}", relay.port);
    let target_port = target.port.to_string();
    let mut all = vec!["client", "--from", &from, "127.0.0.1", "-p", &target_port];
    all.extend_from_slice(args);
    all.push("-J");
    linkperf(&all)
}

#[test]
fn third_party_test_is_relayed() {
    let relay = Server::start_with(&["--allow-third-party"]);
    let target = Server::start();
    let target_port = target.port.to_string();
    let run = relayed_client(&relay, &target, &["-n", "4M"]);
    let r = run.report();
    assert_valid(&r);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 4 * 1_048_576);
    assert_eq!(u64_at(&r, "/test/port"), u64::from(target.port));
    // The target saw a test from the relay, not from us: its line names the test.
    let line = target
        .wait_stdout(Duration::from_secs(5), |l| l.contains("Forward"))
        .expect("target served the test");
    assert!(line.contains("received 4.00 MiB"), "{line}");
    let relayed = relay
        .wait_stdout(Duration::from_secs(5), |l| l.contains("third-party"))
        .expect("relay logged the test");
    assert!(relayed.contains(&target_port), "{relayed}");
}

#[test]
fn third_party_timed_test_is_relayed() {
    let relay = Server::start_with(&["--allow-third-party"]);
    let target = Server::start();
    let run = relayed_client(&relay, &target, &["-t", "1"]);
    let r = run.report();
    assert!(u64_at(&r, "/summary/received/bytes") > 0);
}

#[test]
fn third_party_is_refused_without_the_flag() {
    let plain = Server::start();
    let target = Server::start();
    let run = relayed_client(&plain, &target, &["-t", "1"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("--allow-third-party"), "{line}");
}

#[test]
fn third_party_failure_with_json_prints_an_error_document() {
    let plain = Server::start();
    let target = Server::start();
    let run = relayed_client(&plain, &target, &["-t", "1"]);
    run.assert_one_line_failure(1);
    let doc = run.json();
    assert!(doc["error"]
        .as_str()
        .unwrap()
        .contains("--allow-third-party"));
    assert_valid(&doc);
}
