//! iperf3's flags that shape or extend a client's result, each against an
//! independent figure: `-f` scales the text summary to the rate and byte
//! count the archive stored for the same run; `--connect-timeout` gives up a
//! connect that cannot complete (a listener whose accept queue is full) after
//! the time asked, not the default 5 s; `--get-server-output` prints the
//! server's own line and counts, which equal the bytes asked for with `-k`
//! and the line the server printed; `--extra-data` comes back from the JSON
//! and from the archive.

mod common;

use common::{client, linkperf, Server};
use linkperf_testsupport::stall::retry_when_stalled;
use serde_json::Value;
use socket2::{Domain, Socket, Type};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn temp_db(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "linkperf-iperf3-results-{name}-{}.db",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

/// The archive id from the text output's last line, "stored as run N in ...".
fn stored_id(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("stored as run "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no 'stored as run' line in:\n{stdout}"))
        .to_string()
}

/// `linkperf results show ID -J` from the archive `db`.
fn archived(db: &str, id: &str) -> Value {
    linkperf(&["results", "--db", db, "show", id, "-J"]).json()
}

/// "12.3 MiB" as (12.3, "MiB", decimals printed).
fn number_and_label(text: &str) -> (f64, String, i32) {
    let mut words = text.split_whitespace();
    let number = words
        .next()
        .unwrap_or_else(|| panic!("no number: {text:?}"));
    let label = words.next().unwrap_or_else(|| panic!("no unit: {text:?}"));
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len() as i32);
    (
        number
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {text:?}")),
        label.trim_end_matches(',').to_string(),
        decimals,
    )
}

/// The main summary's "received" line: (bytes text, rate text).
fn received_line(stdout: &str) -> (String, String) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("  received  "))
        .unwrap_or_else(|| panic!("no received line in:\n{stdout}"));
    let rest = line.trim_start_matches("  received").trim_start();
    let (bytes, rest) = rest.split_once(" in ").expect("'BYTES in SECS s = RATE'");
    let rate = rest.split_once(" = ").expect("'= RATE'").1;
    let rate = rate.split(',').next().unwrap();
    (bytes.trim().to_string(), rate.trim().to_string())
}

/// `printed` (in `unit` = `factor` of the JSON's unit) is `json`, to the
/// precision printed: half a unit of the last digit.
fn assert_printed(printed: (f64, String, i32), unit: &str, factor: f64, json: f64, what: &str) {
    let (value, label, decimals) = printed;
    assert_eq!(label, unit, "{what}: the unit printed");
    let tolerance = 0.5 * 10f64.powi(-decimals) * factor * (1.0 + 1e-9);
    assert!(
        (value * factor - json).abs() <= tolerance,
        "{what}: printed {value} {unit} = {} but the archive has {json} (tolerance {tolerance})",
        value * factor
    );
}

#[test]
fn units_scale_the_text_summary_to_the_archived_figures() {
    let server = Server::start();
    let db = temp_db("units");
    let db_s = db.to_str().unwrap();
    const MIB: f64 = 1024.0 * 1024.0;
    // (letter, rate label, bits per rate unit, size label, bytes per size unit)
    for (letter, rate_unit, rate_bits, size_unit, size_bytes) in [
        ("k", "kbit/s", 1e3, "KiB", 1024.0),
        ("M", "MiB/s", 8.0 * MIB, "MiB", MIB),
        ("g", "Gbit/s", 1e9, "GiB", 1024.0 * MIB),
    ] {
        let run = client(server.port, &["-t", "1", "-f", letter, "--db", db_s]);
        run.assert_success("client -f");
        let id = stored_id(&run.stdout);
        let stored = archived(db_s, &id);
        let (bytes, rate) = received_line(&run.stdout);
        assert_printed(
            number_and_label(&rate),
            rate_unit,
            rate_bits,
            common::f64_at(&stored, "/summary/received/bits_per_second"),
            &format!("-f {letter} rate"),
        );
        assert_printed(
            number_and_label(&bytes),
            size_unit,
            size_bytes,
            common::u64_at(&stored, "/summary/received/bytes") as f64,
            &format!("-f {letter} bytes"),
        );
        // JSON keeps raw numbers whatever -f says.
        let json = client(
            server.port,
            &["-t", "0.3", "-f", letter, "-J", "--no-store"],
        )
        .report();
        assert!(json["summary"]["received"]["bits_per_second"].is_f64());
        common::assert_valid(&json);
    }
    let _ = std::fs::remove_file(&db);

    for bad in ["x", "kb", "Mbit"] {
        let run = client(server.port, &["-t", "1", "-f", bad, "--no-store"]);
        let err = run.assert_one_line_failure(2);
        assert!(err.contains("k m g t") && err.contains("K M G T"), "{err}");
    }
}

#[test]
fn units_apply_to_a_sweeps_table() {
    let server = Server::start();
    let port = server.port.to_string();
    let run = linkperf(&[
        "sweep",
        "127.0.0.1",
        "-p",
        &port,
        "--vary",
        "length=64K,128K",
        "-t",
        "0.3",
        "-f",
        "K",
        "--no-store",
    ]);
    run.assert_success("sweep -f K");
    let rows: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("64K") || l.trim_start().starts_with("128K"))
        .collect();
    assert_eq!(rows.len(), 2, "{}", run.stdout);
    for row in rows {
        assert!(row.contains("KiB/s") && !row.contains("bit/s"), "{row}");
    }
}

/// A loopback listener whose accept queue is full: a further connect's SYN
/// is dropped, so the connect hangs until its timeout.
fn full_listener() -> Option<(Socket, Vec<TcpStream>, SocketAddr)> {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    sock.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    sock.listen(0).unwrap();
    let addr = sock.local_addr().unwrap().as_socket().unwrap();
    let mut queued = Vec::new();
    for _ in 0..8 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(s) => queued.push(s),
            Err(_) => return Some((sock, queued, addr)),
        }
    }
    None
}

#[test]
fn connect_timeout_gives_up_after_the_time_asked() {
    let Some((_listener, _queued, addr)) = full_listener() else {
        linkperf_testsupport::skip_named(
            "connect_timeout_gives_up_after_the_time_asked",
            "a listen(0) socket on loopback kept accepting connections",
        );
        return;
    };
    let port = addr.port().to_string();
    for (timeout_ms, extra) in [(400u64, None), (1500, None), (700, Some("--iperf3"))] {
        retry_when_stalled(|| {
            let ms = timeout_ms.to_string();
            let mut args = vec![
                "client",
                "127.0.0.1",
                "-p",
                &port,
                "-t",
                "1",
                "--no-store",
                "--connect-timeout",
                &ms,
            ];
            args.extend(extra);
            let started = Instant::now();
            let run = linkperf(&args);
            let elapsed = started.elapsed();
            let err = run.assert_one_line_failure(1);
            assert!(
                err.contains(&addr.to_string()) && err.contains(&format!("{timeout_ms} ms")),
                "{err}"
            );
            let asked = Duration::from_millis(timeout_ms);
            assert!(
                elapsed >= asked && elapsed <= asked + Duration::from_millis(500),
                "--connect-timeout {timeout_ms} {extra:?}: gave up after {elapsed:?}"
            );
        });
    }
    for bad in ["0", "abc", "2days"] {
        let run = linkperf(&["client", "127.0.0.1", "-p", &port, "--connect-timeout", bad]);
        let err = run.assert_one_line_failure(2);
        assert!(err.contains("accepted: milliseconds"), "{err}");
    }
}

/// The text after "Server output:".
fn server_output(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .skip_while(|l| *l != "Server output:")
        .skip(1)
        .take_while(|l| !l.starts_with("stored as run"))
        .collect()
}

#[test]
fn get_server_output_prints_what_the_server_counted() {
    let server = Server::start();
    let db = temp_db("server-output");
    let db_s = db.to_str().unwrap();
    // 5 blocks of 64 KiB: the server must have received 327680 bytes = 320 KiB.
    let asked = 5 * 64 * 1024u64;
    let run = client(
        server.port,
        &["-k", "5", "-l", "64K", "--get-server-output", "--db", db_s],
    );
    run.assert_success("client --get-server-output");
    let lines = server_output(&run.stdout);
    assert!(!lines.is_empty(), "no 'Server output:' in:\n{}", run.stdout);
    // Its first line is the line the server printed for this test.
    let head = lines[0];
    assert!(
        head.starts_with("client 127.0.0.1:") && head.contains("received 320 KiB, sent 0 B"),
        "{head}"
    );
    let logged = server.wait_stdout(Duration::from_secs(5), |l| l.ends_with(head));
    assert!(
        logged.is_some(),
        "the server printed no line ending with {head:?}: {:?}",
        server.stdout_lines()
    );
    let stream = lines
        .iter()
        .find(|l| l.trim_start().starts_with("stream ") && l.contains("received"))
        .unwrap_or_else(|| panic!("no received stream line: {lines:?}"));
    let bytes = stream.split("received").nth(1).unwrap();
    let bytes = bytes.split(" in ").next().unwrap();
    assert_printed(
        number_and_label(bytes),
        "KiB",
        1024.0,
        asked as f64,
        "server output bytes",
    );
    // The same run in the archive: the client's receiver figure and the
    // server's own count are the bytes asked for.
    let stored = archived(db_s, &stored_id(&run.stdout));
    let _ = std::fs::remove_file(&db);
    assert_eq!(common::u64_at(&stored, "/summary/received/bytes"), asked);
    assert_eq!(
        common::u64_at(&stored, "/server_output/streams/0/bytes"),
        asked
    );

    let json = client(
        server.port,
        &[
            "-k",
            "5",
            "-l",
            "64K",
            "--get-server-output",
            "-J",
            "--no-store",
        ],
    )
    .report();
    common::assert_valid(&json);
    let streams = common::array_at(&json, "/server_output/streams");
    let received: u64 = streams
        .iter()
        .filter(|s| s["role"] == "receiver")
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(received, asked);
    assert_eq!(
        received,
        common::u64_at(&json, "/summary/received/bytes"),
        "server output against the client's receiver figure"
    );

    // Not asked: neither in the text nor in the JSON.
    let plain = client(server.port, &["-k", "2", "--no-store"]);
    plain.assert_success("client");
    assert!(!plain.stdout.contains("Server output:"), "{}", plain.stdout);
    let json = client(server.port, &["-k", "2", "-J", "--no-store"]).report();
    assert!(json.get("server_output").is_none());
}

#[test]
fn extra_data_round_trips_through_json_and_the_archive() {
    let server = Server::start();
    let db = temp_db("extra");
    let db_s = db.to_str().unwrap();
    let note = "rack 4, cable B; 'quoted' \"too\" — ünïcode";
    let json = client(
        server.port,
        &["-t", "0.3", "--extra-data", note, "-J", "--db", db_s],
    )
    .report();
    common::assert_valid(&json);
    assert_eq!(json["extra_data"], note);
    let id = json["id"].as_i64().expect("stored").to_string();
    assert_eq!(archived(db_s, &id)["extra_data"], note);
    let shown = linkperf(&["results", "--db", db_s, "show", &id]);
    shown.assert_success("results show");
    assert!(
        shown.stdout.contains(&format!("extra data: {note}")),
        "{}",
        shown.stdout
    );
    let _ = std::fs::remove_file(&db);

    let long = "x".repeat(5000);
    let run = client(server.port, &["--extra-data", &long, "--no-store"]);
    let err = run.assert_one_line_failure(2);
    assert!(err.contains("up to 4096 bytes"), "{err}");
}
