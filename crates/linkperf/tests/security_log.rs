//! The server's event log (issue 17): one JSON object per line with
//! `--log-format json`, written to `--logfile`, with an RFC 3339 timestamp
//! close to the test's own clock, the peer's address on every line, and
//! refusals logged with their reason.

mod common;
use common::hostile::connect_from;
use common::*;
use serde_json::Value;
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch of an RFC 3339 UTC stamp
/// "YYYY-MM-DDTHH:MM:SS.mmmZ", computed here independently of the server.
fn unix_seconds(stamp: &str) -> f64 {
    assert_eq!(stamp.len(), 24, "{stamp}");
    assert!(stamp.ends_with('Z') && &stamp[10..11] == "T", "{stamp}");
    let n = |a: usize, b: usize| stamp[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    // Days from 1970-01-01 by counting years and months (no shortcuts).
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut days: i64 = (1970..y).map(|y| if leap(y) { 366 } else { 365 }).sum();
    let month_days = [
        31,
        if leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    days += month_days[..(m - 1) as usize].iter().sum::<i64>() + d - 1;
    let secs = days * 86_400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19);
    secs as f64 + n(20, 23) as f64 / 1000.0
}

#[test]
fn json_log_lines_carry_time_peer_and_reason() {
    let dir = linkperf_testsupport::scratch("lp-security", "json-log");
    let logfile = dir.join("server.log");
    let server = Server::start_with(&[
        "--log-format",
        "json",
        "--logfile",
        logfile.to_str().unwrap(),
        "--server-max-connections-per-source",
        "2",
    ]);
    let r = client_json(server.port, &["-t", "1"]);
    assert!(u64_at(&r, "/summary/received/bytes") > 0, "{r}");
    let logged = |from_source: usize| {
        poll(Duration::from_secs(10), Duration::from_millis(50), || {
            let text = std::fs::read_to_string(&logfile).ok()?;
            let lines: Vec<String> = text.lines().map(String::from).collect();
            let seen = lines.iter().filter(|l| l.contains("127.0.0.8")).count();
            (seen >= from_source).then_some(lines)
        })
        .unwrap_or_else(|| {
            panic!(
                "log: {:?}",
                std::fs::read_to_string(&logfile).unwrap_or_default()
            )
        })
    };
    // Three connections from one source: the third is over the limit.
    let mut first = connect_from("127.0.0.8", server.port).unwrap();
    let _second = connect_from("127.0.0.8", server.port).unwrap();
    let _third = connect_from("127.0.0.8", server.port).unwrap();
    // The refusal is logged before the first one goes: a server that read the
    // stranger's bytes and closed the first before accepting the third would let
    // the third in (2 open), as it should.
    logged(1);
    // And a stranger's bytes on the first.
    first.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let lines = logged(2);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for e in &events {
        let stamp = e["time"].as_str().unwrap();
        let age = now - unix_seconds(stamp);
        assert!((0.0..60.0).contains(&age), "stamp {stamp} is {age} s old");
        let peer: std::net::SocketAddr = e["peer"].as_str().unwrap().parse().unwrap();
        assert!(peer.ip().is_loopback(), "{e}");
        assert!(!e["event"].as_str().unwrap().is_empty(), "{e}");
    }
    let done = events
        .iter()
        .find(|e| e["event"] == "test-done")
        .unwrap_or_else(|| panic!("no test-done event: {events:?}"));
    assert!(
        done["peer"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{done}"
    );
    let refusals: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["event"] == "refused" && e["peer"].as_str().unwrap().starts_with("127.0.0.8:")
        })
        .collect();
    assert!(
        refusals.iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("--server-max-connections-per-source")),
        "{refusals:?}"
    );
    assert!(
        refusals
            .iter()
            .any(|e| e["message"].as_str().unwrap().contains("unknown protocol")),
        "{refusals:?}"
    );
    // Nothing went to the terminal but the listening line.
    assert!(
        server.stderr_lines().is_empty(),
        "{:?}",
        server.stderr_lines()
    );
}
