//! Who sends: -R puts the server's streams in the report, --bidir reports both.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn reverse_reports_the_servers_sending() {
    let server = Server::start();
    let r = client_json(server.port, &["-R", "-n", "10M"]);
    assert_eq!(r["test"]["direction"], "reverse");
    assert_eq!(r["summary"]["direction"], "server_to_client");
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), 10_485_760);
    assert_eq!(u64_at(&r, "/summary/received/bytes"), 10_485_760);
    // The senders' facts come from the server: their sockets are bound to its port.
    let server_addr = format!("127.0.0.1:{}", server.port);
    for s in array_at(&r, "/summary/streams") {
        assert_eq!(
            s["sender"]["socket"]["local"],
            server_addr.as_str(),
            "{s:#}"
        );
        assert_eq!(s["receiver"]["socket"]["remote"], server_addr.as_str());
        assert!(
            s["sender"]["tcp"].is_object(),
            "sender tcp_info from the server"
        );
    }
    for s in array_at(&r, "/start/streams") {
        assert_eq!(s["direction"], "server_to_client");
        assert!(
            s["remote"].is_object(),
            "server socket facts missing: {s:#}"
        );
        assert_eq!(s["remote"]["local"], server_addr.as_str());
        assert_eq!(s["local"]["remote"], server_addr.as_str());
    }
    assert!(r["summary"]["tcp"]["rtt_ms"]["mean"].is_number());
    // The server's own account of the test: it sent the 10 MiB and received nothing.
    let line = server
        .wait_stdout(Duration::from_secs(5), |l| l.contains("Reverse"))
        .unwrap_or_else(|| panic!("no server line: {:?}", server.stdout_lines()));
    assert!(
        line.contains("received 0 B, sent 10.0 MiB"),
        "server line: {line}"
    );
}

#[test]
fn forward_server_line_counts_what_it_received() {
    let server = Server::start();
    let _ = client_json(server.port, &["-n", "3M"]);
    let line = server
        .wait_stdout(Duration::from_secs(5), |l| l.contains("Forward"))
        .unwrap_or_else(|| panic!("no server line: {:?}", server.stdout_lines()));
    assert!(line.contains("received 3.00 MiB, sent 0 B"), "{line}");
}

#[test]
fn bidir_reports_both_directions() {
    let r = loopback_json(&["--bidir", "-t", "1"]);
    assert_eq!(r["test"]["direction"], "bidir");
    assert_eq!(r["summary"]["direction"], "client_to_server");
    assert_eq!(r["summary_reverse"]["direction"], "server_to_client");
    assert!(u64_at(&r, "/summary/received/bytes") > 0);
    assert!(u64_at(&r, "/summary_reverse/received/bytes") > 0);
    let dirs: Vec<&str> = array_at(&r, "/start/streams")
        .iter()
        .map(|s| s["direction"].as_str().unwrap())
        .collect();
    assert_eq!(dirs, ["client_to_server", "server_to_client"]);
    for i in array_at(&r, "/intervals") {
        assert!(i["sum_reverse"].is_object(), "interval without sum_reverse");
    }
}

#[test]
fn bidir_bytes_mode_is_exact_both_ways() {
    let server = Server::start();
    let r = client_json(server.port, &["--bidir", "-P", "2", "-n", "2000001"]);
    for key in ["summary", "summary_reverse"] {
        assert_eq!(
            u64_at(&r, &format!("/{key}/sent/bytes")),
            2_000_001,
            "{key}"
        );
        assert_eq!(
            u64_at(&r, &format!("/{key}/received/bytes")),
            2_000_001,
            "{key}"
        );
        assert_eq!(array_at(&r, &format!("/{key}/streams")).len(), 2, "{key}");
    }
    let ids: Vec<u64> = array_at(&r, "/summary_reverse/streams")
        .iter()
        .map(|s| u64_at(s, "/id"))
        .collect();
    assert_eq!(ids, [2, 3], "server-to-client streams follow the others");
}
