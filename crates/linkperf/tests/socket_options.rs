//! Socket options reach both ends' data sockets and the report says what the
//! kernel really granted; rates asked for are the rates delivered.

mod common;
use common::*;
use serde_json::Value;

fn sockets(r: &Value) -> Vec<(&Value, &Value)> {
    let streams = array_at(r, "/start/streams");
    assert!(!streams.is_empty());
    streams
        .iter()
        .map(|s| {
            assert!(s["remote"].is_object(), "no server socket facts: {s:#}");
            (&s["local"], &s["remote"])
        })
        .collect()
}

#[test]
fn window_sets_both_buffers_as_the_kernel_grants() {
    let server = Server::start();
    let r = client_json(server.port, &["-w", "256K", "-t", "0.5"]);
    assert_eq!(r["test"]["sndbuf"], 262_144);
    assert_eq!(r["test"]["rcvbuf"], 262_144);
    let (snd, rcv) = kernel_grants(Some(262_144), Some(262_144));
    assert!(snd >= 262_144 && rcv >= 262_144);
    for (local, remote) in sockets(&r) {
        for (end, facts) in [("client", local), ("server", remote)] {
            assert_eq!(facts["sndbuf"], snd, "{end} sndbuf");
            assert_eq!(facts["rcvbuf"], rcv, "{end} rcvbuf");
        }
    }
    // No warning about the buffers (a loaded virtual machine may add one about steal time).
    let warnings: Vec<&str> = array_at(&r, "/warnings")
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| !w.contains("steal time"))
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn send_and_receive_buffers_are_set_apart() {
    let server = Server::start();
    let r = client_json(
        server.port,
        &["--sndbuf", "64K", "--rcvbuf", "512K", "-t", "0.5"],
    );
    assert_eq!(r["test"]["sndbuf"], 65_536);
    assert_eq!(r["test"]["rcvbuf"], 524_288);
    let (snd, rcv) = kernel_grants(Some(65_536), Some(524_288));
    assert_ne!(snd, rcv);
    for (local, remote) in sockets(&r) {
        for (end, facts) in [("client", local), ("server", remote)] {
            assert_eq!(facts["sndbuf"], snd, "{end} sndbuf");
            assert_eq!(facts["rcvbuf"], rcv, "{end} rcvbuf");
        }
    }
}

#[test]
fn buffer_above_rmem_max_warns() {
    let Some(rmem_max) =
        read_proc("/proc/sys/net/core/rmem_max").and_then(|s| s.parse::<u64>().ok())
    else {
        linkperf_testsupport::skip("/proc/sys/net/core/rmem_max unreadable");
        return;
    };
    let ask = rmem_max * 2;
    if ask > 1 << 30 {
        linkperf_testsupport::skip(&format!(
            "rmem_max {rmem_max} is above what --rcvbuf accepts"
        ));
        return;
    }
    let server = Server::start();
    let r = client_json(server.port, &["--rcvbuf", &ask.to_string(), "-t", "0.5"]);
    let warnings: Vec<&str> = array_at(&r, "/warnings")
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("rmem_max") && !w.starts_with("server:")),
        "client warning missing: {warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("rmem_max") && w.starts_with("server:")),
        "server warning missing: {warnings:?}"
    );
    // The kernel caps the request; the report shows the cap, not the wish.
    let (_, rcv) = kernel_grants(None, Some(ask as usize));
    for (local, remote) in sockets(&r) {
        assert_eq!(local["rcvbuf"], rcv);
        assert_eq!(remote["rcvbuf"], rcv);
    }
}

fn congestion_is_applied(cc: &str) {
    let server = Server::start();
    let r = client_json(server.port, &["-C", cc, "-t", "0.5"]);
    assert_eq!(r["test"]["congestion"], cc);
    for (local, remote) in sockets(&r) {
        assert_eq!(local["congestion"], cc, "client socket");
        assert_eq!(remote["congestion"], cc, "server socket");
    }
    assert!(u64_at(&r, "/summary/received/bytes") > 0);
}

#[test]
fn congestion_reno() {
    congestion_is_applied("reno");
}

#[test]
fn congestion_bbr_when_available() {
    if !available_congestion_controls().iter().any(|c| c == "bbr") {
        linkperf_testsupport::skip("bbr is not in tcp_available_congestion_control");
        return;
    }
    congestion_is_applied("bbr");
}

#[test]
fn unknown_congestion_control_is_a_usage_error_listing_the_available_ones() {
    let run = loopback_client(&["-C", "nosuch", "-t", "1"]);
    let line = run.assert_one_line_failure(2);
    assert!(line.contains("nosuch"), "{line}");
    for cc in available_congestion_controls() {
        assert!(line.contains(&cc), "{cc} not listed: {line}");
    }
}

#[test]
fn unknown_congestion_control_on_the_server_side_fails_cleanly() {
    // With -R only the server applies -C: it must refuse with the same facts.
    let server = Server::start();
    let run = client(server.port, &["-R", "-C", "nosuch", "-t", "1"]);
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("nosuch") && line.contains("available"),
        "{line}"
    );
}

#[test]
fn mss_is_clamped() {
    let server = Server::start();
    let r = client_json(server.port, &["-M", "1000", "-t", "0.5"]);
    assert_eq!(r["test"]["mss"], 1000);
    let mss = u64_at(&r, "/summary/tcp/mss");
    assert!(mss <= 1000 && mss > 0, "summary.tcp.mss {mss}");
    for (local, remote) in sockets(&r) {
        let l = local["mss"].as_u64().unwrap();
        let rm = remote["mss"].as_u64().unwrap();
        assert!(l <= 1000, "client mss {l}");
        assert!(rm <= 1000, "server mss {rm}: the SYN announced 1000");
    }
}

#[test]
fn pacing_rate_caps_the_rate() {
    let r = loopback_json(&["--pacing-rate", "50M", "-t", "1"]);
    assert_eq!(r["test"]["pacing_rate"], 50_000_000);
    let bps = f64_at(&r, "/summary/received/bits_per_second");
    assert!(bps < 60e6, "paced at 50M but received {bps} bit/s");
    assert!(bps > 10e6, "received only {bps} bit/s");
}

#[test]
fn tcp_bitrate_is_an_application_rate() {
    // Small writes so that the write granularity does not blur the rate.
    let r = loopback_json(&["-b", "20M", "-l", "16K", "-t", "1"]);
    assert_eq!(r["test"]["bitrate"], 20_000_000);
    for key in ["sent", "received"] {
        assert_rate(&r, &format!("/summary/{key}/bits_per_second"), 20e6, 0.10);
    }
}

#[test]
fn tcp_paced_sender_starts_no_write_after_the_deadline() {
    // 1 MiB writes at 20 Mbit/s are due at 0, 0.42 and 0.84 s: three fit in 1 s.
    let r = loopback_json(&["-b", "20M", "-l", "1M", "-t", "1"]);
    let due_before_end = (1.0f64 * 20e6 / 8.0 / 1_048_576.0).ceil() as u64;
    assert_eq!(due_before_end, 3);
    let sent = u64_at(&r, "/summary/sent/bytes");
    assert!(
        sent <= due_before_end * 1_048_576,
        "sent {sent} bytes, at most {} were due before the end",
        due_before_end * 1_048_576
    );
}

#[test]
fn tcp_bitrate_with_default_writes_stays_within_ten_percent() {
    let r = loopback_json(&["-b", "20M", "-t", "1"]);
    assert_rate(&r, "/summary/sent/bits_per_second", 20e6, 0.10);
}

/// A test that sets buffers gets a data listener of its own with them set before
/// `listen`, on a port of `--data-ports`; a 4K window then stays a working window
/// (set after accept, the window scale chosen for the default buffer made it collapse
/// to 0.5 Mbit/s on loopback, where the window over the loopback RTT allows hundreds).
#[test]
fn small_window_uses_a_data_listener_of_its_own() {
    let data_port = free_port();
    let range = format!("{data_port}-{data_port}");
    let server = Server::start_with(&["--data-ports", &range]);
    let r = client_json(server.port, &["-w", "4K", "-t", "1"]);
    for stream in array_at(&r, "/start/streams") {
        let remote = stream["local"]["remote"].as_str().expect("remote address");
        assert!(
            remote.ends_with(&format!(":{data_port}")),
            "data connection went to {remote}, not the --data-ports listener {data_port}"
        );
    }
    let bps = f64_at(&r, "/summary/received/bits_per_second");
    println!("  -w 4K on loopback: {:.1} Mbit/s", bps / 1e6);
    assert!(
        bps > 50e6,
        "a 4K window on loopback collapsed to {bps} bit/s"
    );
    // Without handshake options the data connections go to the control port.
    let plain = client_json(server.port, &["-t", "0.3"]);
    let remote = plain["start"]["streams"][0]["local"]["remote"]
        .as_str()
        .expect("remote address");
    assert!(remote.ends_with(&format!(":{}", server.port)), "{remote}");
}

#[test]
fn data_ports_range_is_checked() {
    let run = linkperf(&["server", "--data-ports", "6000"]);
    let line = run.assert_one_line_failure(2);
    assert!(line.contains("LOW-HIGH"), "{line}");
}
