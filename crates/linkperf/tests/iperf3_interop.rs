//! iperf3 interoperability against the real iperf3 (Debian's, /usr/bin/iperf3):
//! stock iperf3 clients against a linkperf server, and linkperf's client
//! against a stock `iperf3 -s -1`. Both tools must exit 0 and agree on the
//! bytes they both count; rates agree within 5%.

mod common;
use common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

const IPERF3: &str = "/usr/bin/iperf3";

fn have_iperf3() -> bool {
    if std::path::Path::new(IPERF3).exists() {
        return true;
    }
    linkperf_testsupport::skip(&format!(
        "{IPERF3} is not installed (apt-get install iperf3; scripts/test installs it)"
    ));
    false
}

/// Runs `iperf3 -c 127.0.0.1 -p PORT ARGS...` to completion.
fn iperf3_client(port: u16, args: &[&str]) -> Run {
    let port = port.to_string();
    let child = Command::new(IPERF3)
        .args(["-c", "127.0.0.1", "-p", &port])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn iperf3");
    wait_child(child, CLIENT_WATCHDOG)
}

fn iperf3_json(port: u16, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("-J");
    let run = iperf3_client(port, &all);
    assert_eq!(
        run.code(),
        Some(0),
        "iperf3 failed\nstdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    run.json()
}

fn last_number(line: &str) -> u64 {
    line.trim_end_matches(" bytes")
        .split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn within(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * a.abs().max(b.abs())
}

/// The only server line (tests that run one client per server).
fn only_counts(server: &Server) -> (u64, u64) {
    let line = server
        .wait_stdout(Duration::from_secs(10), |l| l.starts_with("iperf3 client"))
        .unwrap_or_else(|| panic!("no server line: {:?}", server.stdout_lines()));
    let received = line
        .split("received ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("received in {line}"));
    (received, last_number(&line))
}

// ---------- iperf3 client -> linkperf server ----------

#[test]
fn iperf3_client_tcp_forward_with_server_output() {
    if !have_iperf3() {
        return;
    }
    let server = Server::start();
    let j = iperf3_json(server.port, &["-t", "1", "--get-server-output"]);
    let (received, sent) = only_counts(&server);
    assert_eq!(sent, 0);
    let end = &j["end"];
    // The results exchange carries the server's count: it is what the server logged,
    // and the server waited for every byte the client says it wrote.
    assert_eq!(u64_at(end, "/sum_received/bytes"), received);
    assert_eq!(u64_at(end, "/sum_sent/bytes"), received);
    assert!(received > 1_000_000, "{received}");
    let (tx, rx) = (
        f64_at(end, "/sum_sent/bits_per_second"),
        f64_at(end, "/sum_received/bits_per_second"),
    );
    assert!(within(tx, rx, 0.05), "sender {tx} vs receiver {rx}");
    assert!(f64_at(end, "/cpu_utilization_percent/remote_total") > 0.0);
    let text = j["server_output_text"]
        .as_str()
        .expect("server output text");
    assert!(text.contains("receiver"), "{text}");
}

#[test]
fn iperf3_client_reverse_bytes_are_exact() {
    if !have_iperf3() {
        return;
    }
    let server = Server::start();
    let j = iperf3_json(server.port, &["-R", "-n", "50M"]);
    let (received, sent) = only_counts(&server);
    assert_eq!((received, sent), (0, 52_428_800));
    assert_eq!(u64_at(&j, "/end/sum_sent/bytes"), 52_428_800);
    assert_eq!(u64_at(&j, "/end/sum_received/bytes"), 52_428_800);
}

#[test]
fn iperf3_client_parallel_bidir() {
    if !have_iperf3() {
        return;
    }
    let server = Server::start();
    let j = iperf3_json(server.port, &["-P", "4", "--bidir", "-t", "1"]);
    let (received, sent) = only_counts(&server);
    let end = &j["end"];
    assert_eq!(array_at(end, "/streams").len(), 8);
    // Client to server: the linkperf server counted every byte the client wrote.
    assert_eq!(u64_at(end, "/sum_received/bytes"), received);
    assert_eq!(u64_at(end, "/sum_sent/bytes"), received);
    // Server to client: iperf3's client stops counting at its TEST_END, so
    // only the rates are comparable.
    assert_eq!(u64_at(end, "/sum_sent_bidir_reverse/bytes"), sent);
    let rx = u64_at(end, "/sum_received_bidir_reverse/bytes");
    assert!(
        rx > 0 && within(rx as f64, sent as f64, 0.05),
        "{rx} vs {sent}"
    );
}

#[test]
fn iperf3_client_udp_both_ways() {
    if !have_iperf3() {
        return;
    }
    let server = Server::start();
    let j = iperf3_json(server.port, &["-u", "-b", "20M", "-l", "1400", "-t", "1"]);
    let (received, _) = only_counts(&server);
    let end = &j["end"];
    assert_eq!(u64_at(end, "/sum_received/bytes"), received);
    let sent_packets = u64_at(end, "/streams/0/udp/packets");
    assert!(sent_packets > 1000, "{end:#}");
    assert!(within(
        f64_at(end, "/sum_received/bits_per_second"),
        20e6,
        0.05
    ));
    // Reverse with 64-bit counters: iperf3 parses linkperf's datagrams.
    let j = iperf3_json(
        server.port,
        &[
            "-u",
            "-b",
            "20M",
            "-l",
            "1400",
            "-t",
            "1",
            "-R",
            "--udp-counters-64bit",
        ],
    );
    let end = &j["end"];
    let got = u64_at(end, "/sum_received/packets");
    let lost = u64_at(end, "/sum_received/lost_packets");
    assert!(got > 1000 && lost * 100 <= got, "{end:#}");
    assert!(within(
        f64_at(end, "/sum_received/bits_per_second"),
        20e6,
        0.05
    ));
}

#[test]
fn two_iperf3_clients_at_once_and_exclusive_mode() {
    if !have_iperf3() {
        return;
    }
    let server = Server::start();
    let port = server.port.to_string();
    let spawn = |args: &[&str]| {
        Command::new(IPERF3)
            .args(["-c", "127.0.0.1", "-p", &port])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn iperf3")
    };
    let a = spawn(&["-t", "2", "-b", "500M"]);
    std::thread::sleep(Duration::from_millis(300));
    let b = iperf3_client(server.port, &["-t", "1", "-b", "500M"]);
    let a = wait_child(a, CLIENT_WATCHDOG);
    assert_eq!(a.code(), Some(0), "{}{}", a.stdout, a.stderr);
    assert_eq!(b.code(), Some(0), "{}{}", b.stdout, b.stderr);
    drop(server);

    let server = Server::start_with(&["--exclusive"]);
    let port = server.port.to_string();
    let spawn = |args: &[&str]| {
        Command::new(IPERF3)
            .args(["-c", "127.0.0.1", "-p", &port])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn iperf3")
    };
    let a = spawn(&["-t", "2", "-b", "200M"]);
    std::thread::sleep(Duration::from_millis(400));
    let busy = iperf3_client(server.port, &["-t", "1"]);
    assert_ne!(busy.code(), Some(0));
    assert!(
        busy.stderr.contains("busy") || busy.stdout.contains("busy"),
        "{}{}",
        busy.stdout,
        busy.stderr
    );
    let a = wait_child(a, CLIENT_WATCHDOG);
    assert_eq!(a.code(), Some(0), "{}{}", a.stdout, a.stderr);
    let again = iperf3_client(server.port, &["-n", "1M"]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr);
}

#[test]
fn unsupported_options_are_refused_and_the_server_keeps_serving() {
    if !have_iperf3() {
        return;
    }
    let mut server = Server::start();
    let sctp = iperf3_client(server.port, &["--sctp", "-t", "1"]);
    assert_ne!(sctp.code(), Some(0));
    assert!(sctp.stderr.contains("SCTP"), "{}", sctp.stderr);
    let cc = iperf3_client(server.port, &["-C", "nosuchcc", "-t", "1"]);
    assert_ne!(cc.code(), Some(0));
    assert!(cc.stderr.contains("TCP_CONGESTION"), "{}", cc.stderr);
    assert!(server.is_running());
    let ok = iperf3_client(server.port, &["-n", "1M"]);
    assert_eq!(ok.code(), Some(0), "{}", ok.stderr);
    // linkperf's own clients are still served on the same port.
    let r = client_json(server.port, &["-n", "1M", "--no-store"]);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 1 << 20);
}

#[test]
fn iperf3_port_serves_iperf3_clients() {
    if !have_iperf3() {
        return;
    }
    let extra = free_port();
    let server = Server::start_with(&["--iperf3-port", &extra.to_string()]);
    let j = iperf3_json(extra, &["-n", "10M", "-P", "2"]);
    assert_eq!(u64_at(&j, "/end/sum_received/bytes"), 10 << 20);
    let (received, _) = only_counts(&server);
    assert_eq!(received, 10 << 20);
}

// ---------- linkperf client -> iperf3 server ----------

/// Starts `iperf3 -s -1 -J -p PORT`; returns the child and the port.
fn iperf3_server() -> (std::process::Child, u16) {
    let port = free_port();
    let child = Command::new(IPERF3)
        .args(["-s", "-1", "-J", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn iperf3 -s");
    // Wait until it listens, without connecting: with -1 any connection is its one test.
    let hex = format!(":{port:04X} ");
    for _ in 0..250 {
        let listening = ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .any(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    cols.len() > 3 && format!("{} ", cols[1]).ends_with(&hex) && cols[3] == "0A"
                })
        });
        if listening {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, port)
}

fn against_iperf3(args: &[&str]) -> (Value, Value) {
    let (server, port) = iperf3_server();
    let mut all = vec!["--iperf3", "--no-store", "-J"];
    all.extend_from_slice(args);
    let ours = client(port, &all);
    let theirs = wait_child(server, CLIENT_WATCHDOG);
    assert_eq!(
        theirs.code(),
        Some(0),
        "iperf3 -s: {}{}",
        theirs.stdout,
        theirs.stderr
    );
    (ours.report(), theirs.json())
}

#[test]
fn linkperf_client_against_iperf3_tcp() {
    if !have_iperf3() {
        return;
    }
    let (r, s) = against_iperf3(&["-t", "1"]);
    // What the iperf3 server received is what linkperf reports as received.
    let their_rx = u64_at(&s, "/end/sum_received/bytes");
    assert_eq!(u64_at(&r, "/summary/received/bytes"), their_rx);
    // linkperf waited for its data to be acknowledged before TEST_END: all of it arrived.
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), their_rx);
    assert!(within(
        f64_at(&r, "/summary/received/bits_per_second"),
        f64_at(&s, "/end/sum_received/bits_per_second"),
        0.05
    ));
    // linkperf's own measurements on its side.
    assert!(r["summary"]["tcp"]["rtt_ms"]["mean"].as_f64().is_some());
    assert!(f64_at(&r, "/summary/cpu/local/total_percent") > 0.0);
    assert!(f64_at(&r, "/summary/cpu/remote/total_percent") > 0.0);
    assert_valid(&r);
}

#[test]
fn linkperf_client_against_iperf3_reverse_and_bytes() {
    if !have_iperf3() {
        return;
    }
    let (r, s) = against_iperf3(&["-R", "-t", "1"]);
    assert_eq!(
        u64_at(&r, "/summary/sent/bytes"),
        u64_at(&s, "/end/sum_sent/bytes")
    );
    // The server closes its streams at TEST_END: linkperf got everything it sent.
    assert_eq!(
        u64_at(&r, "/summary/received/bytes"),
        u64_at(&s, "/end/sum_sent/bytes")
    );
    let (r, s) = against_iperf3(&["-n", "20M"]);
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), 20 << 20);
    assert_eq!(u64_at(&s, "/end/sum_received/bytes"), 20 << 20);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 20 << 20);
}

#[test]
fn linkperf_client_against_iperf3_parallel_and_bidir() {
    if !have_iperf3() {
        return;
    }
    let (r, s) = against_iperf3(&["-P", "4", "-t", "1"]);
    assert_eq!(array_at(&r, "/summary/streams").len(), 4);
    assert_eq!(
        u64_at(&r, "/summary/received/bytes"),
        u64_at(&s, "/end/sum_received/bytes")
    );
    let (r, s) = against_iperf3(&["--bidir", "-P", "2", "-t", "1"]);
    assert_eq!(
        u64_at(&r, "/summary/received/bytes"),
        u64_at(&s, "/end/sum_received/bytes")
    );
    assert_eq!(
        u64_at(&r, "/summary_reverse/sent/bytes"),
        u64_at(&s, "/end/sum_sent_bidir_reverse/bytes")
    );
}

#[test]
fn linkperf_client_against_iperf3_udp() {
    if !have_iperf3() {
        return;
    }
    let (r, s) = against_iperf3(&["-u", "-b", "20M", "-l", "1400", "-t", "1"]);
    assert_eq!(
        u64_at(&r, "/summary/received/bytes"),
        u64_at(&s, "/end/sum_received/bytes")
    );
    assert!(within(
        f64_at(&r, "/summary/sent/bits_per_second"),
        20e6,
        0.05
    ));
    assert!(within(
        f64_at(&s, "/end/sum_received/bits_per_second"),
        20e6,
        0.05
    ));
    let (r, s) = against_iperf3(&["-u", "-b", "20M", "-l", "1400", "-t", "1", "-R"]);
    assert_eq!(
        u64_at(&r, "/summary/sent/packets"),
        u64_at(&s, "/end/streams/0/udp/packets")
    );
    assert!(within(
        f64_at(&r, "/summary/received/bits_per_second"),
        20e6,
        0.05
    ));
}

#[test]
fn iperf3_json_format_has_iperf3_layout() {
    if !have_iperf3() {
        return;
    }
    let server = Server::start();
    let run = client(
        server.port,
        &[
            "-n",
            "8M",
            "-P",
            "2",
            "--format",
            "iperf3-json",
            "--no-store",
        ],
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let j = run.json();
    for key in ["start", "intervals", "end"] {
        assert!(j.get(key).is_some(), "{key} missing: {j:#}");
    }
    assert_eq!(u64_at(&j, "/start/test_start/num_streams"), 2);
    assert_eq!(u64_at(&j, "/end/sum_sent/bytes"), 8 << 20);
    assert_eq!(u64_at(&j, "/end/sum_received/bytes"), 8 << 20);
    assert_eq!(array_at(&j, "/end/streams").len(), 2);
    assert!(j
        .pointer("/end/cpu_utilization_percent/host_total")
        .is_some());
    assert!(j
        .pointer("/end/cpu_utilization_percent/remote_total")
        .is_some());
    assert_eq!(j["end"]["sum_sent"]["sender"], true);
}
