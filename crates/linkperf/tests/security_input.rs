//! Hostile wire configurations (issue 17): values no honest client sends,
//! which used to panic a server thread (`interval_s: 1e300`, `duration_s: -1`
//! with a byte count, iperf3's `omit: 1e300` with `num`), get a clear refusal
//! naming the option, and the server keeps serving.

mod common;
use common::hostile::{iperf3_params, Control};
use common::*;
use linkperf_proto::iperf3::State;
use linkperf_proto::{ClientMessage, ServerMessage, TestConfig};

/// Sends `config` as a test set-up and returns the server's refusal.
fn refusal(port: u16, config: TestConfig) -> String {
    let mut control = Control::open(port);
    control.send(&ClientMessage::Setup {
        config: Box::new(config),
    });
    match control.next() {
        ServerMessage::Error { message } => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn absurd_wire_configs_are_refused_by_name() {
    let mut server = Server::start();
    let cases = [
        (
            "interval_s 1e300",
            TestConfig {
                interval_s: 1e300,
                duration_s: 1.0,
                ..Default::default()
            },
            "-i",
        ),
        (
            "duration_s -1 with bytes",
            TestConfig {
                duration_s: -1.0,
                bytes: Some(1 << 20),
                ..Default::default()
            },
            "-t",
        ),
        (
            "omit_s 1e300 with bytes",
            TestConfig {
                omit_s: 1e300,
                bytes: Some(1 << 20),
                ..Default::default()
            },
            "-O",
        ),
    ];
    for (what, config, option) in cases {
        let message = refusal(server.port, config);
        println!("{what}: refused: {message}");
        assert!(
            message.starts_with(option),
            "{what}: the refusal should name {option}: {message}"
        );
        assert!(server.is_running(), "{what}: the server died");
    }
    // A start time centuries ahead.
    let mut control = Control::open(server.port);
    control.send(&ClientMessage::Setup {
        config: Box::new(TestConfig {
            duration_s: 1.0,
            ..Default::default()
        }),
    });
    assert!(matches!(control.next(), ServerMessage::Ready { .. }));
    control.send(&ClientMessage::Start {
        start_at_unix_ms: Some(u64::MAX),
    });
    match control.next() {
        ServerMessage::Error { message } => {
            println!("start at u64::MAX ms: refused: {message}");
            assert!(message.contains("start time"), "{message}");
        }
        other => panic!("expected a refusal of the start time, got {other:?}"),
    }
    let r = client_json(server.port, &["-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
}

#[test]
fn iperf3_absurd_omit_is_refused() {
    let mut server = Server::start();
    let params = r#"{"tcp":true,"omit":1e300,"num":1048576,"parallel":1,"len":131072,"time":0}"#;
    let (_control, state, errno) = iperf3_params(server.port, params);
    println!("iperf3 omit 1e300 with num: {state:?} {errno:?}");
    assert_eq!(state, State::ServerError, "errno {errno:?}");
    assert!(server.is_running());
    let r = client_json(server.port, &["-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
}
