//! Bad input and failed runs: the right exit code, one line on stderr, never a panic.

mod common;
use common::*;
use std::net::TcpListener;

fn usage_error(args: &[&str]) -> String {
    // A closed port: a usage error must be reported before any connection.
    let port = free_port();
    let run = client(port, args);
    run.assert_one_line_failure(2).to_string()
}

#[test]
fn bad_rate_suffix() {
    let line = usage_error(&["-b", "10X"]);
    assert!(line.contains("10X"), "{line}");
}

#[test]
fn negative_length() {
    usage_error(&["-l", "-5"]);
}

#[test]
fn huge_byte_count() {
    let line = usage_error(&["-n", "1e999"]);
    assert!(line.contains("1e999"), "{line}");
}

#[test]
fn udp_datagram_too_large() {
    let line = usage_error(&["-u", "-l", "70000"]);
    assert!(line.contains("65507"), "{line}");
}

#[test]
fn mss_too_small() {
    let line = usage_error(&["-M", "10"]);
    assert!(line.contains("-M"), "{line}");
}

#[test]
fn zero_streams_and_zero_time() {
    usage_error(&["-P", "0"]);
    usage_error(&["-t", "0"]);
    usage_error(&["-t", "abc"]);
}

#[test]
fn usage_errors_with_json_print_no_report() {
    let port = free_port();
    let run = client(port, &["-M", "10", "-J"]);
    run.assert_one_line_failure(2);
    assert!(!run.stdout.contains("\"summary\""), "{}", run.stdout);
}

#[test]
fn unknown_host() {
    let run = linkperf(&["client", "no-such-host.invalid", "-t", "1"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("no-such-host.invalid"), "{line}");
}

#[test]
fn connection_refused() {
    let port = free_port();
    let run = client(port, &["-t", "1"]);
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("refused") && line.contains(&port.to_string()),
        "{line}"
    );
}

#[test]
fn no_host_given() {
    let run = linkperf(&["client", "-t", "1"]);
    run.assert_one_line_failure(2);
}

#[test]
fn server_port_in_use() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = linkperf(&["server", "-p", &port, "-B", "127.0.0.1"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains(&port) && line.contains("in use"), "{line}");
}

#[test]
fn server_bad_bind_address() {
    // TEST-NET-1: not configured on any interface here.
    let port = free_port().to_string();
    let run = linkperf(&["server", "-p", &port, "-B", "192.0.2.1"]);
    run.assert_one_line_failure(1);
}
