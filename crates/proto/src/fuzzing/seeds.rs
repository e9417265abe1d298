//! The seed corpus of each fuzz target: real encoded messages, as the ends
//! send them, behind the mode bytes each harness reads first. Written to
//! `fuzz/corpus/TARGET/NAME` by `cargo run -p linkperf-proto --example
//! fuzz_seeds`; the replay test checks the committed files match.

use crate::codec::encode;
use crate::config::{Protocol, TestConfig};
use crate::iperf3::{
    encode_json, make_cookie, server_error, token_text, write_udp_header, Params, Results, State,
    StreamResults,
};
use crate::messages::{ClientMessage, ServerMessage, StreamEndpoint};
use crate::results::HostFacts;
use crate::rr::{self, RrClientMessage, RrServerMessage};
use crate::{udp, PROTOCOL_VERSION};
use linkperf_traffic::Traffic;

/// One seed: target, file name, bytes.
pub type Seed = (&'static str, &'static str, Vec<u8>);

/// Every seed of every target.
pub fn seeds() -> Vec<Seed> {
    let mut out = control_seeds();
    out.extend(session_seeds());
    out.extend(rr_seeds());
    out.extend(iperf3_seeds());
    out.extend(authtoken_seeds());
    out
}

/// A token's text as iperf3 3.12 writes it, one read as `sscanf` allows,
/// and a users file (iperf3's manual's example user, a comment, a blank).
fn authtoken_seeds() -> Vec<Seed> {
    let users = "# user,sha256 of {user}password\n\nmario,bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b\r\n";
    vec![
        (
            "iperf3_authtoken",
            "token",
            cat(&[&[0], token_text("mario", "rossi", 1_764_000_000).as_bytes()]),
        ),
        (
            "iperf3_authtoken",
            "token_loose",
            cat(&[&[0], b"user:a\tpwd: b\r\nts: -12xyz\0tail"]),
        ),
        ("iperf3_authtoken", "users", cat(&[&[1], users.as_bytes()])),
    ]
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// `bytes` as the chunk sequence of a chunked harness: each piece behind
/// its length minus one.
fn chunked(bytes: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for piece in bytes.chunks(size) {
        out.push((piece.len() - 1) as u8);
        out.extend_from_slice(piece);
    }
    out
}

fn udp_config() -> TestConfig {
    TestConfig {
        protocol: Protocol::Udp,
        length: 1400,
        bitrate: Some(10_000_000),
        bytes: Some(1_000_000),
        parallel: 3,
        ..TestConfig::default()
    }
}

/// Configs with each kind of traffic model, as a client sends them.
fn traffic_configs() -> Vec<TestConfig> {
    let trace =
        |_: &str| -> std::io::Result<Vec<u8>> { Ok(b"0,100\n0.001,1400\n0.0025,600\n".to_vec()) };
    [
        "idt=exp:1ms;size=const:1200;on=exp:1s;off=exp:2s",
        "idt=normal:10ms:1ms;size=lognormal:800:200/uniform:100:1400",
        "burstq:64K:10ms",
        "trace:seed.csv",
    ]
    .iter()
    .map(|text| {
        let mut traffic = Traffic::parse(text, &trace).expect("a seed model parses");
        traffic.seed = Some(7);
        TestConfig {
            traffic: Some(Box::new(traffic)),
            ..TestConfig::default()
        }
    })
    .collect()
}

fn client_messages() -> Vec<u8> {
    let messages = [
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: "linkperf 0.1.0".into(),
        },
        ClientMessage::Auth {
            user: "alice".into(),
            answer: crate::auth::to_hex(&[0xa5; 32]),
        },
        ClientMessage::Setup {
            config: Box::default(),
        },
        ClientMessage::ThirdParty {
            target: "192.0.2.1".into(),
            port: 5211,
            config: Box::new(udp_config()),
        },
        ClientMessage::ThirdPartyRr {
            target: "192.0.2.1".into(),
            port: 5211,
            request: Box::new(crate::messages::RrRequest {
                protocol: crate::Protocol::Udp,
                request: Some(64),
                response: Some(64),
                rate: Some("100/s".into()),
                burst: 1,
                duration_s: 2.0,
                interval_s: 1.0,
                ..Default::default()
            }),
        },
        ClientMessage::Start {
            start_at_unix_ms: Some(1_763_900_000_000),
        },
        ClientMessage::SendersDone {
            packets: vec![(0, 714), (1, 714)],
        },
        ClientMessage::Finished {
            result: Box::default(),
        },
        ClientMessage::Cancel {
            reason: "interrupted".into(),
        },
    ];
    let setups = traffic_configs()
        .into_iter()
        .map(|config| ClientMessage::Setup {
            config: Box::new(config),
        });
    messages
        .iter()
        .cloned()
        .chain(setups)
        .flat_map(|m| encode(&m))
        .collect()
}

fn server_messages() -> Vec<u8> {
    let messages = [
        ServerMessage::Welcome {
            version: PROTOCOL_VERSION,
            software: "linkperf 0.1.0".into(),
            facts: HostFacts::default(),
            auth_nonce: None,
        },
        ServerMessage::Welcome {
            version: PROTOCOL_VERSION,
            software: "linkperf 0.1.0".into(),
            facts: HostFacts::default(),
            auth_nonce: Some(crate::auth::to_hex(&[0x5a; crate::auth::NONCE_LEN])),
        },
        ServerMessage::Ready {
            cookie: 0x0123_4567_89ab_cdef,
            streams: vec![StreamEndpoint {
                id: 0,
                udp_port: Some(40_000),
            }],
            warnings: vec!["sndbuf capped".into()],
            data_port: None,
            doctor: None,
        },
        ServerMessage::Started {
            start_unix_ms: 1_763_900_000_000,
        },
        ServerMessage::Interval { streams: vec![] },
        ServerMessage::SendersDone {
            packets: vec![(0, 714)],
        },
        ServerMessage::Finished {
            result: Box::default(),
        },
        ServerMessage::RelayInterval {
            interval: serde_json::json!({"start": 0.0, "end": 1.0, "bytes": 125000}),
        },
        ServerMessage::RelayReport {
            report: serde_json::json!({"streams": []}),
        },
        ServerMessage::Error {
            message: "busy".into(),
        },
    ];
    messages.iter().flat_map(encode).collect()
}

fn control_seeds() -> Vec<Seed> {
    let client = client_messages();
    let server = server_messages();
    vec![
        ("control_codec", "client_exact", cat(&[&[0x00], &client])),
        ("control_codec", "server_exact", cat(&[&[0x08], &server])),
        (
            "control_codec",
            "client_chunked",
            cat(&[&[0x01], &chunked(&client, 61)]),
        ),
        (
            "control_codec",
            "server_chunked",
            cat(&[&[0x09], &chunked(&server, 97)]),
        ),
        (
            "control_codec",
            "first_frame_over_4k",
            cat(&[&[0x02], &[0, 0, 0x10, 0x01], b"{\"type\":"]),
        ),
        (
            "control_codec",
            "foreign_http",
            cat(&[&[0x00], b"GET / HTTP/1.1\r\n\r\n"]),
        ),
    ]
}

fn session_seeds() -> Vec<Seed> {
    // Steps: [0, menu, args.., split] client sends; [1, ...] server sends;
    // [2, len-1, bytes] raw bytes to the server. Version byte 1 = ours.
    let hello: &[u8] = &[0, 0, 1, 3];
    let welcome: &[u8] = &[1, 0, 1, 5];
    let whole_test: &[&[u8]] = &[
        hello,
        welcome,
        &[0, 1, 0x08, 2, 0, 0, 0x10, 0, 7],
        &[1, 2, 1, 2, 3, 4, 9],
        &[0, 3, 0, 0, 0, 0, 0],
        &[1, 3, 0, 0, 1, 0, 2],
        &[1, 4, 1],
        &[0, 4, 0, 0, 2, 0, 4],
        &[1, 5, 0],
        &[1, 6, 200],
        &[0, 5, 1],
    ];
    let third_party: &[&[u8]] = &[hello, welcome, &[0, 2, 0x03, 1, 2], &[1, 7, 3], &[1, 8, 0]];
    let cancelled: &[&[u8]] = &[hello, welcome, &[0, 6, 4], &[1, 1, 0], &[0, 6, 0]];
    // Auth then a set-up; a second Auth is out of order.
    let authenticated: &[&[u8]] = &[
        hello,
        welcome,
        &[0, 7, 3],
        &[0, 1, 0x08, 2, 0, 0, 0x10, 0, 7],
        &[0, 7, 2],
    ];
    let hello_bytes = encode(&ClientMessage::Hello {
        version: PROTOCOL_VERSION,
        software: "x".into(),
    });
    let raw = cat(&[&[2, (hello_bytes.len() - 1) as u8], &hello_bytes, welcome]);
    vec![
        ("session", "whole_test", whole_test.concat()),
        ("session", "third_party", third_party.concat()),
        ("session", "cancelled", cancelled.concat()),
        ("session", "authenticated", authenticated.concat()),
        ("session", "raw_hello", raw),
        (
            "session",
            "wrong_version",
            cat(&[&[0, 0, 0, 0, 0, 0, 7, 0], welcome]),
        ),
    ]
}

fn rr_seeds() -> Vec<Seed> {
    let hello = encode(&RrClientMessage::Hello {
        version: rr::RR_VERSION,
        software: "linkperf 0.1.0".into(),
        protocol: Protocol::Tcp,
    });
    let join = encode(&RrClientMessage::Join {
        cookie: 0x0123_4567_89ab_cdef,
        request: 64,
        response: 1024,
    });
    let finish = encode(&RrClientMessage::Finish);
    let server = [
        RrServerMessage::Welcome {
            version: rr::RR_VERSION,
            software: "linkperf 0.1.0".into(),
            cookie: 7,
            udp_port: Some(40_000),
            boot_id: Some("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into()),
        },
        RrServerMessage::Done {
            requests: 1000,
            transactions: 1000,
            connections: 1,
        },
    ];
    let server: Vec<u8> = server.iter().flat_map(encode).collect();
    let mut request = vec![0u8; 64];
    rr::write_udp_request(&mut request, 42, 1400);
    let session = cat(&[&hello, &finish]);
    vec![
        ("rr_codec", "server_session", cat(&[&[0], &session])),
        ("rr_codec", "server_join", cat(&[&[0], &join, &[0xab; 64]])),
        (
            "rr_codec",
            "server_chunked",
            cat(&[&[1], &chunked(&session, 13)]),
        ),
        ("rr_codec", "client", cat(&[&[2, 0], &chunked(&server, 50)])),
        ("rr_codec", "udp_request", cat(&[&[3], &request])),
        (
            "rr_codec",
            "udp_hello",
            cat(&[&[3], &udp::write_hello(7, 0)]),
        ),
    ]
}

fn iperf3_seeds() -> Vec<Seed> {
    let params = Params {
        udp: true,
        time: 10,
        parallel: 2,
        len: 1400,
        bandwidth: 1_000_000,
        client_version: Some("3.16".into()),
        ..Params::default()
    };
    let results = Results {
        cpu_util_total: 1.5,
        sender_has_retransmits: 1,
        streams: vec![StreamResults {
            id: 1,
            bytes: 1_250_000,
            retransmits: 0,
            jitter: 0.01,
            packets: 893,
            end_time: 10.0,
            ..StreamResults::default()
        }],
        ..Results::default()
    };
    let results = encode_json(&results.to_json());
    let client = cat(&[
        &make_cookie(&[5; 36]),
        &encode_json(&params.to_json()),
        &[State::TestEnd.byte()],
        &results,
        &[State::IperfDone.byte()],
    ]);
    let states = [
        State::ParamExchange,
        State::CreateStreams,
        State::TestStart,
        State::TestRunning,
        State::ExchangeResults,
    ];
    let server = cat(&[
        &states.map(State::byte),
        &results,
        &[State::DisplayResults.byte()],
    ]);
    let mut header = vec![0u8; 64];
    write_udp_header(&mut header, 1_763_900_000_123_456_000, 17, true);
    vec![
        ("iperf3_codec", "client", cat(&[&[0], &client])),
        (
            "iperf3_codec",
            "client_chunked",
            cat(&[&[1], &chunked(&client, 40)]),
        ),
        ("iperf3_codec", "server", cat(&[&[4], &server])),
        (
            "iperf3_codec",
            "server_error",
            cat(&[&[4, State::ParamExchange.byte()], &server_error(121, 0)]),
        ),
        ("iperf3_codec", "udp_header", cat(&[&[16], &header])),
    ]
}
