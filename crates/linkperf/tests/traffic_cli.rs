//! Traffic models end to end through `linkperf client` and `linkperf
//! server` on loopback: what a model schedules is what arrives (counts and
//! bytes follow from the model's parameters and the test's length), the
//! server sends by the model with -R, the seed and the schedule's figures
//! are in the JSON result, and bad models are refused in one line.

mod common;
use common::*;

#[test]
fn voice_g711_sends_one_172_byte_datagram_every_20_ms() {
    let server = Server::start();
    let r = client_json(
        server.port,
        &[
            "-u",
            "--traffic",
            "voice-g711",
            "--traffic-seed",
            "42",
            "-t",
            "2",
            "--no-store",
        ],
    );
    assert_valid(&r);
    assert_eq!(r["test"]["traffic"]["profile"], "voice-g711");
    assert_eq!(u64_at(&r, "/test/traffic/seed"), 42);
    // Due at 0, 20, ..., 1980 ms: 100 messages in 2 s, whatever the load.
    let s = "/summary/streams/0/sender/schedule";
    assert_eq!(u64_at(&r, &format!("{s}/messages_due")), 100);
    assert_eq!(u64_at(&r, &format!("{s}/seed")), 42);
    let sent = u64_at(&r, &format!("{s}/messages_sent"));
    let unsent = u64_at(&r, &format!("{s}/unsent"));
    assert_eq!(sent + unsent, 100);
    // 172 bytes every 20 ms = 68.8 kbit/s offered.
    let offered = f64_at(&r, &format!("{s}/offered_bits_per_second"));
    assert!(
        (offered / 68_800.0 - 1.0).abs() < 0.001,
        "offered {offered}"
    );
    // Loopback delivers every datagram it was given.
    let rx = "/summary/streams/0/receiver";
    assert_eq!(u64_at(&r, &format!("{rx}/packets")), sent);
    assert_eq!(u64_at(&r, &format!("{rx}/bytes")), sent * 172);
    assert_eq!(u64_at(&r, &format!("{rx}/udp/delay/samples")), sent);
    // IPDV pairs consecutive datagrams: one fewer than the datagrams.
    assert_eq!(u64_at(&r, &format!("{rx}/udp/ipdv/samples")), sent - 1);
    // One-way delay on loopback: positive, far below the 20 ms packet gap.
    let p50 = f64_at(&r, &format!("{rx}/udp/delay/p50_ms"));
    assert!(p50 > 0.0 && p50 < 20.0, "delay p50 {p50} ms");
}

#[test]
fn the_server_sends_by_the_model_with_reverse() {
    let server = Server::start();
    // Ten bursts of 10 KiB in 1 s, sent by the server over TCP.
    let r = client_json(
        server.port,
        &[
            "-R",
            "--traffic",
            "burstq:10K:100ms",
            "-t",
            "1",
            "--no-store",
        ],
    );
    assert_valid(&r);
    let s = "/summary/streams/0/sender/schedule";
    assert_eq!(u64_at(&r, &format!("{s}/messages_due")), 10);
    let sent = u64_at(&r, &format!("{s}/messages_sent"));
    assert_eq!(sent, 10, "burstq sends every burst");
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 10 * 10_240);
}

#[test]
fn bad_models_are_refused_in_one_line() {
    let trace = linkperf_testsupport::scratch("traffic_cli", "trace").join("bad.csv");
    std::fs::write(&trace, "0,100\n0.1,100\n0.2,12x\n").unwrap();
    let trace_arg = format!("trace:{}", trace.display());
    let cases: &[(&[&str], &str)] = &[
        (
            &["--traffic", "sawtooth"],
            "unknown traffic model 'sawtooth'",
        ),
        (
            &["--traffic", "idt=zipf:1ms;size=const:100"],
            "unknown distribution 'zipf'",
        ),
        (
            &["--traffic", "idt=exp:0;size=const:100"],
            "mean must be positive",
        ),
        (
            &["--traffic", "idt=pareto:0.8:1ms;size=const:100"],
            "no finite mean",
        ),
        (&["--traffic", &trace_arg], "line 3, column 2"),
        // 1200 B every 1 ms = 9.6 Mbit/s, over the 5 Mbit/s -b allows.
        (
            &["-u", "-b", "5M", "--traffic", "idt=exp:1ms;size=const:1200"],
            "more than -b",
        ),
        (&["--dscp", "XX"], "not a DSCP"),
        (&["-S", "300"], "not a TOS byte"),
    ];
    for (args, want) in cases {
        let mut all = vec!["client", "127.0.0.1", "-p", "9", "--no-store"];
        all.extend_from_slice(args);
        let run = linkperf(&all);
        let line = run.assert_one_line_failure(2);
        assert!(line.contains(want), "{args:?}: {line}");
    }
}

#[test]
fn traffic_show_prints_the_expected_mean_rate() {
    let run = linkperf(&["traffic", "show", "voice-g729"]);
    run.assert_success("traffic show");
    // 32 bytes every 20 ms = 12.8 kbit/s.
    assert!(run.stdout.contains("12800 bit/s"), "{}", run.stdout);
    let list = linkperf(&["traffic", "list"]);
    for name in [
        "telnet",
        "ftp",
        "www",
        "mpeg",
        "videoconf",
        "voice-g711-vad",
        "dns",
        "gaming",
    ] {
        assert!(
            list.stdout.contains(name),
            "{name} missing from {}",
            list.stdout
        );
    }
    linkperf(&["traffic", "show", "nonesuch"]).assert_one_line_failure(2);
}

#[test]
fn a_sweep_varies_the_mean_gap_of_a_model() {
    let server = Server::start();
    let dir = common::sweep::scratch("traffic");
    let db = common::sweep::db_arg(&dir);
    let port = server.port.to_string();
    let args = common::sweep::sweep_args(
        &port,
        &db,
        &[
            "-u",
            "-t",
            "2",
            "--traffic",
            "idt=exp:1ms;size=const:1000",
            "--vary",
            "traffic.idt=exp:1ms,exp:250us",
            "-J",
        ],
    );
    let v = common::sweep::long(&args).json();
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 2);
    // 1000 bytes per 1 ms = 8 Mbit/s, per 250 us = 32 Mbit/s. Over 2 s a
    // Poisson count of 2000 (8000) messages has a relative sd of 2.2 %
    // (1.1 %): 5 sd of the slower point is 11 %.
    for (point, want) in points.iter().zip([8e6, 32e6]) {
        let got = point["sent_bits_per_second"]["mean"].as_f64().unwrap();
        assert!(
            (got / want - 1.0).abs() < 0.11,
            "{}: {got} vs {want}",
            point["params"]
        );
    }
}
