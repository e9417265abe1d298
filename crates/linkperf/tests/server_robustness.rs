//! One server, many clients, and clients that misbehave: the server keeps serving.

mod common;
use common::*;
use std::io::Write;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn two_clients_at_once() {
    let server = Server::start();
    let port = server.port;
    let runs: Vec<_> = (0..2)
        .map(|_| thread::spawn(move || client_json(port, &["-t", "2", "-l", "16K"])))
        .collect();
    for r in runs {
        let r = r.join().expect("client thread");
        assert!(u64_at(&r, "/summary/received/bytes") > 0);
    }
    let done = server.wait_stdout(Duration::from_secs(5), |_| {
        server
            .stdout_lines()
            .iter()
            .filter(|l| l.contains("Forward"))
            .count()
            == 2
    });
    assert!(done.is_some(), "server lines: {:?}", server.stdout_lines());
}

#[test]
fn killed_client_does_not_wedge_the_server() {
    let mut server = Server::start();
    let victim = spawn_client(server.port, &["-t", "10", "-J"]);
    thread::sleep(Duration::from_secs(1));
    send_signal(&victim, libc::SIGKILL);
    let _ = wait_child(victim, Duration::from_secs(5));
    let started = Instant::now();
    let r = client_json(server.port, &["-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "next test took {:?}",
        started.elapsed()
    );
    assert!(server.is_running());
}

/// A small deterministic generator: garbage without a dependency.
fn garbage(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

#[test]
fn garbage_on_the_port_is_shrugged_off() {
    let mut server = Server::start();
    // Random bytes, no valid preamble.
    let mut a = server.connect();
    a.write_all(&garbage(4096, 0x9e37_79b9_7f4a_7c15)).unwrap();
    // A control preamble followed by a 4 GiB frame length, then junk.
    let mut b = server.connect();
    b.write_all(b"LPC1\xff\xff\xff\xff").unwrap();
    let _ = b.write_all(&garbage(1024, 42));
    // A control preamble, a plausible length and invalid JSON.
    let mut c = server.connect();
    c.write_all(b"LPC1\x00\x00\x00\x05{{{{{").unwrap();
    // A data preamble with an unknown cookie.
    let mut d = server.connect();
    d.write_all(b"LPD1\x00\x01\x02\x03\x04\x05\x06\x07\x00\x00\x00\x00")
        .unwrap();
    // A control preamble and then silence, held open during the test.
    let mut e = server.connect();
    e.write_all(b"LPC1").unwrap();
    let r = client_json(server.port, &["-n", "10M"]);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 10_485_760);
    assert!(server.is_running(), "server died");
    for line in server.stderr_lines() {
        assert!(!line.contains("panicked"), "server panicked: {line}");
    }
    drop((a, b, c, d, e));
}

#[test]
fn ctrl_c_ends_the_test_with_a_partial_report() {
    let server = Server::start();
    let child = spawn_client(server.port, &["-t", "10", "-J"]);
    thread::sleep(Duration::from_millis(1500));
    let sent_at = Instant::now();
    send_signal(&child, libc::SIGINT);
    let run = wait_child(child, Duration::from_secs(8));
    assert!(
        sent_at.elapsed() < Duration::from_secs(5),
        "took {:?} to stop",
        sent_at.elapsed()
    );
    assert_eq!(run.code(), Some(130), "Ctrl-C exits 130: {}", run.stderr);
    let r = run.json();
    assert_eq!(r["interrupted"], true, "{r:#}");
    assert!(u64_at(&r, "/summary/received/bytes") > 0);
    let seconds = f64_at(&r, "/summary/received/seconds");
    assert!(seconds < 6.0, "ran {seconds} s of 10 after Ctrl-C at 1.5 s");
    assert_valid(&r);
    // The server is free for the next test.
    let next = client_json(server.port, &["-n", "1M"]);
    assert_eq!(u64_at(&next, "/summary/received/bytes"), 1_048_576);
}

#[test]
fn ctrl_c_in_reverse_mode_stops_the_server_sender() {
    let server = Server::start();
    let child = spawn_client(server.port, &["-R", "-t", "10", "-J"]);
    thread::sleep(Duration::from_millis(1500));
    let sent_at = Instant::now();
    send_signal(&child, libc::SIGINT);
    let run = wait_child(child, Duration::from_secs(8));
    assert!(sent_at.elapsed() < Duration::from_secs(5));
    assert_eq!(run.code(), Some(130), "Ctrl-C exits 130: {}", run.stderr);
    let r = run.json();
    assert_eq!(r["interrupted"], true);
    assert!(u64_at(&r, "/summary/received/bytes") > 0);
}

#[test]
fn ipv6_loopback() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        linkperf_testsupport::skip("no IPv6 loopback");
        return;
    }
    let server = Server::start_on("::1", &[]);
    let port = server.port.to_string();
    let run = linkperf(&["client", "::1", "-p", &port, "-n", "1M", "-J"]);
    let r = run.report();
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 1_048_576);
    let local = r["start"]["streams"][0]["local"]["remote"]
        .as_str()
        .unwrap();
    assert!(local.starts_with("[::1]:"), "{local}");
}

#[test]
fn server_once_exits_after_one_test() {
    let port = free_port();
    let mut child = std::process::Command::new(bin())
        .args(["server", "-1", "-p", &port.to_string(), "-B", "127.0.0.1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server -1 did not start");
        thread::sleep(Duration::from_millis(20));
    }
    // That probe connection said nothing: it is not a test, the server stays.
    thread::sleep(Duration::from_millis(100));
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited on an empty connection"
    );
    let r = client_json(port, &["-n", "1M"]);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 1_048_576);
    let run = wait_child(child, Duration::from_secs(5));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
}

/// A client that stops reading its control connection while its test runs
/// (128 streams reporting every 10 ms: about 1.5 MB of intervals a second,
/// into a 4 KiB receive buffer): after some 3 s the server's socket holds
/// the 4 MiB its send buffer grows to, and a write to it would wait. Yet
/// another client's test, started after 4 s, ends on time with every
/// interval (one thread serves every running test, so it must never wait
/// on one client's socket; waiting, it would have until that connection's
/// 8 s user timeout), and the server ends the silent client's session once
/// 4 MiB more wait for it.
#[test]
fn a_client_that_stops_reading_its_control_holds_up_no_other_test() {
    use common::hostile::Control;
    use linkperf_proto::{ClientMessage, DataHello, Preamble, ServerMessage, TestConfig};
    let server = Server::start();
    let port = server.port;
    let mut hostile = Control::open(port);
    let shrunk = socket2::SockRef::from(&hostile.stream).set_recv_buffer_size(2048);
    shrunk.expect("SO_RCVBUF");
    hostile.send(&ClientMessage::Setup {
        config: Box::new(TestConfig {
            duration_s: 30.0,
            parallel: 128,
            interval_s: 0.01,
            ..Default::default()
        }),
    });
    let (cookie, streams) = match hostile.next() {
        ServerMessage::Ready {
            cookie, streams, ..
        } => (cookie, streams),
        other => panic!("expected ready, got {other:?}"),
    };
    let data: Vec<std::net::TcpStream> = streams
        .iter()
        .map(|s| {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let mut hello = Preamble::Data.bytes().to_vec();
            hello.extend_from_slice(
                &DataHello {
                    cookie,
                    stream_id: s.id,
                }
                .encode(),
            );
            c.write_all(&hello).unwrap();
            c
        })
        .collect();
    hostile.send(&ClientMessage::Start {
        start_at_unix_ms: None,
    });
    thread::sleep(Duration::from_secs(4));

    let started = Instant::now();
    let r = client_json(port, &["-t", "2", "-i", "0.5"]);
    let took = started.elapsed();
    let intervals = array_at(&r, "/intervals").len();
    println!("the other test took {took:?} with {intervals} intervals");
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
    assert_eq!(intervals, 4, "{r}");
    // Its 2 s, and set-up and the result exchange on a loaded machine
    // (waiting on the silent client's socket, the server made it 4.3 s).
    assert!(
        took < Duration::from_secs(4),
        "the other test took {took:?}"
    );
    let dropped = poll(Duration::from_secs(15), Duration::from_millis(50), || {
        server
            .stderr_lines()
            .into_iter()
            .find(|l| l.contains("does not read its control connection"))
    });
    assert!(
        dropped.is_some(),
        "the silent client kept its session: {:?}",
        server.stderr_lines()
    );
    drop(data);
}
