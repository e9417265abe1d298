//! UDP reflection (issue 17): a client that holds a control connection from
//! one address asks for a UDP stream (or rr replies) and opens the UDP flow
//! from another address, as a spoofed source would. Loopback owns all of
//! 127/8, so the "victim" is a socket on 127.0.0.2 while the control
//! connection comes from 127.0.0.1. The amplification factor of a path is
//! the bytes the server sent to the unproven address over the bytes that
//! address sent: it must be at most 1 (linkperf sends nothing at all).

mod common;
use common::hostile::{iperf3_params, iperf3_params_from, Control};
use common::*;
use linkperf_proto::iperf3::{self, State};
use linkperf_proto::rr::{self, RrClientMessage, RrClientSession, RrServerMessage, RR_VERSION};
use linkperf_proto::{
    udp, ClientMessage, Direction, Preamble, Protocol, ServerMessage, TestConfig,
};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// The spoofed source: an address of this host that is not the control
/// connection's.
const VICTIM: &str = "127.0.0.2:0";

/// Bytes a victim socket sent and received.
#[derive(Debug, Default)]
struct Tally {
    sent: u64,
    received: u64,
}

impl Tally {
    fn factor(&self) -> f64 {
        self.received as f64 / self.sent.max(1) as f64
    }

    fn report(&self, path: &str) {
        println!(
            "amplification {path}: unproven address sent {} B, got {} B, factor {:.3}",
            self.sent,
            self.received,
            self.factor()
        );
    }
}

/// Sends `datagram` from `sock` to `to` every 100 ms for `window`, counting
/// every byte that comes back. Bounded: at most window/100 ms datagrams.
fn send_and_count(sock: &UdpSocket, to: u16, datagram: &[u8], window: Duration) -> Tally {
    let mut tally = Tally::default();
    let mut buf = vec![0u8; 65_536];
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let end = Instant::now() + window;
    let mut next_send = Instant::now();
    while Instant::now() < end {
        if Instant::now() >= next_send {
            sock.send_to(datagram, ("127.0.0.1", to)).unwrap();
            tally.sent += datagram.len() as u64;
            next_send += Duration::from_millis(100);
        }
        if let Ok(n) = sock.recv(&mut buf) {
            tally.received += n as u64;
        }
    }
    tally
}

#[test]
fn udp_test_data_goes_only_to_the_control_connections_address() {
    let server = Server::start();
    let mut control = Control::open(server.port);
    let config = TestConfig {
        protocol: Protocol::Udp,
        direction: Direction::Reverse,
        duration_s: 2.0,
        bitrate: Some(20_000_000),
        length: 1400,
        ..Default::default()
    };
    control.send(&ClientMessage::Setup {
        config: Box::new(config),
    });
    let (cookie, stream) = match control.next() {
        ServerMessage::Ready {
            cookie, streams, ..
        } => (cookie, streams[0].clone()),
        other => panic!("expected ready, got {other:?}"),
    };
    control.send(&ClientMessage::Start {
        start_at_unix_ms: None,
    });
    let victim = UdpSocket::bind(VICTIM).unwrap();
    let hello = udp::write_hello(cookie, stream.id);
    let tally = send_and_count(
        &victim,
        stream.udp_port.expect("UDP port"),
        &hello,
        Duration::from_secs(3),
    );
    tally.report("linkperf UDP test (-u -R -b 20M -t 2)");
    assert!(
        tally.factor() <= 1.0,
        "the server sent {} B to an address that sent it {} B: {tally:?}",
        tally.received,
        tally.sent
    );
    drop(control);
    // The same test from the control connection's own address still runs.
    let r = client_json(server.port, &["-u", "-R", "-b", "10M", "-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
}

#[test]
fn rr_udp_replies_go_only_to_the_control_connections_address() {
    let server = Server::start();
    let mut control = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    control
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    control.write_all(&Preamble::Rr.bytes()).unwrap();
    let mut session = RrClientSession::new();
    let hello = RrClientMessage::Hello {
        version: RR_VERSION,
        software: "security test".into(),
        protocol: Protocol::Udp,
    };
    control.write_all(&session.send(&hello).unwrap()).unwrap();
    let mut buf = vec![0u8; 4096];
    let welcome = loop {
        let n = control
            .read(&mut buf[..session.wanted().min(4096)])
            .unwrap();
        assert!(n > 0, "server closed the rr connection");
        if let Some(m) = session.receive(&buf[..n]).unwrap().into_iter().next() {
            break m;
        }
    };
    let RrServerMessage::Welcome {
        cookie,
        udp_port: Some(udp_port),
        ..
    } = welcome
    else {
        panic!("expected a UDP welcome, got {welcome:?}");
    };
    let victim = UdpSocket::bind(VICTIM).unwrap();
    // The UDP hello, then requests asking for the largest response.
    let mut tally = send_and_count(
        &victim,
        udp_port,
        &udp::write_hello(cookie, 0),
        Duration::from_millis(500),
    );
    let mut request = [0u8; rr::UDP_HEADER_LEN];
    rr::write_udp_request(&mut request, 1, rr::MAX_UDP_MESSAGE);
    let asked = send_and_count(&victim, udp_port, &request, Duration::from_secs(1));
    tally.sent += asked.sent;
    tally.received += asked.received;
    tally.report("linkperf rr UDP (16 B requests asking 65,507 B)");
    assert!(
        tally.factor() <= 1.0,
        "the server sent {} B to an address that sent it {} B",
        tally.received,
        tally.sent
    );
}

#[test]
fn iperf3_udp_data_goes_only_to_the_control_connections_address() {
    let server = Server::start();
    let params = r#"{"udp":true,"reverse":true,"time":2,"parallel":1,"len":1400,"bandwidth":20000000,"omit":0}"#;
    let (_control, state, _) = iperf3_params(server.port, params);
    assert_eq!(state, State::CreateStreams);
    let victim = UdpSocket::bind(VICTIM).unwrap();
    let tally = send_and_count(
        &victim,
        server.port,
        &iperf3::UDP_CONNECT,
        Duration::from_secs(3),
    );
    tally.report("iperf3 UDP test (-u -R -b 20M -t 2)");
    assert!(
        tally.factor() <= 1.0,
        "the server sent {} B to an address that sent it {} B",
        tally.received,
        tally.sent
    );
}

#[test]
fn a_silent_iperf3_udp_client_does_not_hold_up_others() {
    let server = Server::start();
    // A client from another address sets up a UDP test and never sends its
    // connect datagram: the server waits for it (10 s handshake step).
    let params = r#"{"udp":true,"time":1,"parallel":1,"len":1400,"bandwidth":1000000,"omit":0}"#;
    let (_silent, state, _) = iperf3_params_from("127.0.0.9", server.port, params);
    assert_eq!(state, State::CreateStreams);
    // A stock iperf3 UDP client meanwhile: a 1 s test.
    let started = Instant::now();
    let run = linkperf_testsupport::process::run(
        std::process::Command::new("iperf3").args([
            "-c",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-u",
            "-b",
            "1M",
            "-t",
            "1",
            "-J",
        ]),
        Duration::from_secs(40),
    );
    let took = started.elapsed();
    println!("iperf3 -u -t 1 beside a silent UDP client took {took:?}");
    run.assert_success("iperf3 client");
    // It did not wait for the silent client's deadline (10 s, 15 s before).
    assert!(took < Duration::from_secs(8), "took {took:?}");
}
