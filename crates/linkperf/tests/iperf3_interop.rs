//! iperf3 interoperability against the real iperf3 (Debian's, /usr/bin/iperf3):
//! stock iperf3 clients against a linkperf server, and linkperf's client
//! against a stock `iperf3 -s -1`. Both tools must exit 0 and agree on the
//! bytes they both count; rates agree within 5%.

mod common;
use common::*;
use linkperf_testsupport::bed::{two_hosts, CliBed as Bed};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// The tests run side by side, each comparing counts within its own run;
/// the one comparing rates between runs takes the machine alone.
static TURNS: RwLock<()> = RwLock::new(());

/// A shared turn, if iperf3 is installed.
fn have_iperf3() -> Option<RwLockReadGuard<'static, ()>> {
    iperf3_installed().then(|| TURNS.read().unwrap_or_else(|p| p.into_inner()))
}

/// The machine to itself, if iperf3 is installed.
fn have_iperf3_alone() -> Option<RwLockWriteGuard<'static, ()>> {
    iperf3_installed().then(|| TURNS.write().unwrap_or_else(|p| p.into_inner()))
}

fn iperf3_installed() -> bool {
    if std::path::Path::new(IPERF3).exists() {
        return true;
    }
    linkperf_testsupport::skip(&format!(
        "{IPERF3} is not installed (apt-get install iperf3; scripts/test installs it)"
    ));
    false
}

/// Spawns `iperf3 -c 127.0.0.1 -p PORT ARGS...`.
fn spawn_iperf3(port: u16, args: &[&str]) -> Child {
    spawn_piped(
        Command::new(IPERF3)
            .args(["-c", "127.0.0.1", "-p", &port.to_string()])
            .args(args),
    )
}

/// Runs `iperf3 -c 127.0.0.1 -p PORT ARGS...` to completion.
fn iperf3_client(port: u16, args: &[&str]) -> Run {
    wait_child(spawn_iperf3(port, args), CLIENT_WATCHDOG)
}

fn iperf3_json(port: u16, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("-J");
    iperf3_client(port, &all)
        .assert_success("iperf3 failed")
        .json()
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

/// Asserts that the number at `pointer` in `v` is `expected` within `tolerance` (relative).
fn assert_within(v: &Value, pointer: &str, expected: f64, tolerance: f64) {
    let got = f64_at(v, pointer);
    assert!(
        within(got, expected, tolerance),
        "{pointer} = {got}, expected {expected} ± {tolerance}"
    );
}

/// The only server line (tests that run one client per server).
fn only_counts(server: &Server) -> (u64, u64) {
    counts_of_test(server, 1)
}

/// (received, sent) from the server's line for its `n`-th iperf3 test.
fn counts_of_test(server: &Server, n: usize) -> (u64, u64) {
    let test_lines = || -> Vec<String> {
        server
            .stdout_lines()
            .into_iter()
            .filter(|l| l.contains("iperf3 client") && l.contains("test-done"))
            .collect()
    };
    server.wait_stdout(Duration::from_secs(10), |_| test_lines().len() >= n);
    let line = test_lines()
        .into_iter()
        .nth(n - 1)
        .unwrap_or_else(|| panic!("no server line {n}: {:?}", server.stdout_lines()));
    let received = line
        .split("received ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("received in {line}"));
    (received, last_number(&line))
}

// ---------- iperf3 client -> linkperf server ----------

/// A stock iperf3 client's `-J` document against a linkperf server started
/// for it, and (received, sent) from that server's line for the test.
fn iperf3_to_a_server_of_its_own(args: &[&str]) -> (Value, (u64, u64)) {
    let server = Server::start();
    let j = iperf3_json(server.port, args);
    (j, only_counts(&server))
}

#[test]
fn iperf3_client_tcp_forward_with_server_output() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let (j, (received, sent)) = iperf3_to_a_server_of_its_own(&["-t", "1", "--get-server-output"]);
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
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let (j, (received, sent)) = iperf3_to_a_server_of_its_own(&["-R", "-n", "50M"]);
    assert_eq!((received, sent), (0, 52_428_800));
    assert_eq!(u64_at(&j, "/end/sum_sent/bytes"), 52_428_800);
    assert_eq!(u64_at(&j, "/end/sum_received/bytes"), 52_428_800);
}

/// iperf3 --bidir -P 4 against the linkperf server. Client to server, the
/// server counts every byte the client wrote. Server to client, iperf3's
/// client stops counting at its TEST_END: it misses what is then queued in
/// the server's send buffers and its own receive buffers. How much that is
/// depends on the buffers, not on the rate: with default buffers autotuning
/// decides (up to tcp_wmem[2] + tcp_rmem[2] per stream), with `-w W` each
/// buffer holds at most 2W (the kernel doubles SO_SNDBUF/SO_RCVBUF), plus
/// the one segment a last write may add.
///
/// (Which direction gets more is the iperf3 client's: per select pass its
/// `iperf_send` writes up to ten blocks per stream and its `iperf_recv` reads
/// one, so against a receiver that never falls behind it writes about ten
/// times what it reads on a loopback where its one thread is the limit.)
#[test]
fn iperf3_client_parallel_bidir() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let server = Server::start();
    for (test, window) in [None, Some(64 * 1024u64)].into_iter().enumerate() {
        let w = window.map(|w| w.to_string());
        let mut args = vec!["-P", "4", "--bidir", "-t", "1"];
        if let Some(w) = &w {
            args.extend(["-w", w.as_str()]);
        }
        let j = iperf3_json(server.port, &args);
        let (received, sent) = counts_of_test(&server, test + 1);
        let end = &j["end"];
        assert_eq!(array_at(end, "/streams").len(), 8);
        // Client to server: the linkperf server counted every byte the client wrote.
        assert_eq!(u64_at(end, "/sum_received/bytes"), received);
        assert_eq!(u64_at(end, "/sum_sent/bytes"), received);
        // Server to client: the server reports what it wrote.
        assert_eq!(u64_at(end, "/sum_sent_bidir_reverse/bytes"), sent);
        let rx = u64_at(end, "/sum_received_bidir_reverse/bytes");
        assert!(rx > 0 && rx <= sent, "{rx} vs {sent}");
        if let Some(w) = window {
            let queued_at_most = 4 * (2 * w + 2 * w + 64 * 1024);
            assert!(
                sent - rx <= queued_at_most,
                "-w {w}: client counted {rx} of {sent} bytes; buffers hold at most {queued_at_most}"
            );
        }
    }
}

#[test]
fn iperf3_client_udp_both_ways() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    // 3 s a direction: a 100 ms stall of the loaded VM (the sender or the
    // receiver not scheduled; at 20 Mbit/s more than a socket buffer holds)
    // then costs 3 % of the rate, not the 10 % that failed a 1 s run beside a
    // build; a measured stall beyond that runs the test again.
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let server = Server::start();
        let j = iperf3_json(server.port, &["-u", "-b", "20M", "-l", "1400", "-t", "3"]);
        let (received, _) = only_counts(&server);
        let end = &j["end"];
        assert_eq!(u64_at(end, "/sum_received/bytes"), received);
        let sent_packets = u64_at(end, "/streams/0/udp/packets");
        assert!(sent_packets > 3000, "{end:#}");
        assert_within(end, "/sum_received/bits_per_second", 20e6, 0.05);
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
                "3",
                "-R",
                "--udp-counters-64bit",
            ],
        );
        let end = &j["end"];
        let got = u64_at(end, "/sum_received/packets");
        let lost = u64_at(end, "/sum_received/lost_packets");
        assert!(got > 3000 && lost * 100 <= got, "{end:#}");
        assert_within(end, "/sum_received/bits_per_second", 20e6, 0.05);
    })
}

#[test]
fn two_iperf3_clients_at_once_and_exclusive_mode() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let server = Server::start();
    let spawn = |args: &[&str]| spawn_iperf3(server.port, args);
    let a = spawn(&["-t", "2", "-b", "500M"]);
    std::thread::sleep(Duration::from_millis(300));
    let b = iperf3_client(server.port, &["-t", "1", "-b", "500M"]);
    let a = wait_child(a, CLIENT_WATCHDOG);
    assert_eq!(a.code(), Some(0), "{}{}", a.stdout, a.stderr);
    assert_eq!(b.code(), Some(0), "{}{}", b.stdout, b.stderr);
    drop(server);

    let server = Server::start_with(&["--exclusive"]);
    let spawn = |args: &[&str]| spawn_iperf3(server.port, args);
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
    let Some(_turn) = have_iperf3() else {
        return;
    };
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
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let extra = free_port();
    let server = Server::start_with(&["--iperf3-port", &extra.to_string()]);
    let j = iperf3_json(extra, &["-n", "10M", "-P", "2"]);
    assert_eq!(u64_at(&j, "/end/sum_received/bytes"), 10 << 20);
    let (received, _) = only_counts(&server);
    assert_eq!(received, 10 << 20);
}

/// What `ss -tin` says of one established socket.
#[derive(Debug, Default, Clone, Copy)]
struct SsSocket {
    snd_wscale: u32,
    rcv_wscale: u32,
    advmss: u32,
    bytes_received: u64,
}

/// The established sockets whose local port is `port` (a server's side).
fn server_side_sockets(bed: Option<&Bed>, port: u16) -> Vec<SsSocket> {
    let filter = format!("( sport = :{port} )");
    let out = match bed {
        Some(b) => b.exec("b", "ss"),
        None => Command::new("ss"),
    }
    .args(["-tinH", "state", "established", &filter])
    .output()
    .expect("run ss (iproute2)");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |line: &str, key: &str| -> Option<String> {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key).map(str::to_string))
    };
    text.lines()
        .filter(|l| l.starts_with(char::is_whitespace))
        .map(|info| {
            let (snd, rcv) = field(info, "wscale:")
                .and_then(|w| {
                    let (a, b) = w.split_once(',')?;
                    Some((a.parse().ok()?, b.parse().ok()?))
                })
                .unwrap_or((u32::MAX, u32::MAX));
            SsSocket {
                snd_wscale: snd,
                rcv_wscale: rcv,
                advmss: field(info, "advmss:")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                bytes_received: field(info, "bytes_received:")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            }
        })
        .collect()
}

/// Runs `iperf3 -c HOST -p PORT ARGS -J` (inside testbed host `a` when `bed`
/// is given) and, once the server's data socket has received 64 KiB, reads it
/// with `ss` (the control connection carries a few hundred bytes); returns the
/// bits per second the server received and that socket. The data connection
/// comes after the client's start-up and the control exchange, which a loaded
/// host stretched past one second.
fn run_watching_server_socket(bed: Option<&Bed>, port: u16, args: &[&str]) -> (f64, SsSocket) {
    let port_text = port.to_string();
    let host = bed.map_or("127.0.0.1", |_| BED_SERVER);
    let mut cmd = match bed {
        Some(b) => b.exec("a", IPERF3),
        None => Command::new(IPERF3),
    };
    let mut child = spawn_piped(cmd.args(["-c", host, "-p", &port_text, "-J"]).args(args));
    // Some(None): the client ended before any socket received that much.
    let data = poll(Duration::from_secs(10), Duration::from_millis(50), || {
        let data = server_side_sockets(bed, port)
            .into_iter()
            .filter(|s| s.bytes_received >= 64 * 1024)
            .max_by_key(|s| s.bytes_received);
        let exited = child.try_wait().ok().flatten().is_some();
        (data.is_some() || exited).then_some(data)
    })
    .flatten()
    .unwrap_or_else(|| {
        panic!("no socket on the server's port {port} received 64 KiB within 10 s, or before the client ended")
    });
    let run = wait_child(child, CLIENT_WATCHDOG);
    assert_eq!(run.code(), Some(0), "{}{}", run.stdout, run.stderr);
    let rate = f64_at(&run.json(), "/end/sum_received/bits_per_second");
    (rate, data)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The largest receive buffer TCP autotuning may grow (tcp_rmem[2]).
fn tcp_rmem_max() -> u64 {
    read_proc("/proc/sys/net/ipv4/tcp_rmem")
        .and_then(|t| t.split_whitespace().nth(2)?.parse().ok())
        .expect("tcp_rmem")
}

/// The receive window scale Linux offers with default buffers: enough to
/// express the largest buffer autotuning may reach (tcp_rmem[2], rmem_max).
fn default_rcv_wscale() -> u32 {
    let tcp_rmem_max = tcp_rmem_max();
    let rmem_max: u64 = read_proc("/proc/sys/net/core/rmem_max")
        .and_then(|t| t.trim().parse().ok())
        .expect("rmem_max");
    let space = tcp_rmem_max.max(rmem_max);
    (63 - space.leading_zeros()).saturating_sub(15).min(14)
}

/// Item 1 of issue 10: `-w` and `-M` are negotiated in the handshake, so they
/// must be on the listener when the data connections arrive, as iperf3's
/// server has them; afterwards the port negotiates defaults again.
#[test]
fn iperf3_client_window_and_mss_are_negotiated_like_iperf3s_server() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let ours = Server::start();
    let (theirs, their_port) = iperf3_server_with(&[]);
    let _theirs = KillOnDrop(theirs);
    for port in [their_port, ours.port] {
        let (_, data) = run_watching_server_socket(None, port, &["-w", "4K", "-t", "2"]);
        // A 4 KiB window needs no scaling; the client asked none either.
        assert_eq!(
            (data.snd_wscale, data.rcv_wscale),
            (0, 0),
            "port {port}: {data:?}"
        );
    }
    // -M: the server announces it too (less the 12 bytes of timestamps).
    let (_, theirs_m) = run_watching_server_socket(None, their_port, &["-M", "1000", "-t", "2"]);
    let (_, ours_m) = run_watching_server_socket(None, ours.port, &["-M", "1000", "-t", "2"]);
    assert!(theirs_m.advmss <= 1000, "{theirs_m:?}");
    assert_eq!(ours_m.advmss, theirs_m.advmss, "{ours_m:?} vs {theirs_m:?}");
    // The listener is back to its defaults for the next test.
    let (_, data) = run_watching_server_socket(None, ours.port, &["-t", "2"]);
    assert_eq!(data.rcv_wscale, default_rcv_wscale(), "{data:?}");
    assert!(data.advmss > 1000, "{data:?}");
}

const BED_SERVER: &str = "10.78.0.2";

/// A two-host testbed (`linkperf testbed`): `a` the client, `b` the servers.
/// None (with a SKIPPED line) without root.
fn bed_up(name: &str, link: &str, test: &str) -> Option<Bed> {
    if linkperf_testbed::require_root().is_err() {
        linkperf_testsupport::skip_named(
            test,
            "needs root for the testbed (namespaces, TAP devices)",
        );
        return None;
    }
    let topology = two_hosts(name, "10.78.0.1", BED_SERVER, link);
    Some(Bed::up(bin(), &std::env::temp_dir(), name, &topology))
}

/// Starts a server in host `b` (killed with the testbed) listening on `port`.
fn serve_in_b(bed: &mut Bed, program: &str, args: &[&str], port: u16) {
    let mut server = bed.exec("b", program);
    bed.serve("b", server.args(args), port);
}

/// Item 1 of issue 10, the rate: through a 10 ms round trip the window, not
/// the CPU, sets the rate, so `-w 32K` against the linkperf server gives what
/// it gives against iperf3's server, between W/RTT and 2W/RTT (Linux doubles
/// SO_RCVBUF and advertises the share its measured overhead leaves). (On
/// loopback the rate is the receiver's turnaround on a loaded 2-core machine,
/// ±50 % between runs of either server; and a 4 KiB window is under three
/// 1448-byte segments, so the rate jumps between two levels by timing alone.
/// 32 KiB still needs no window scale.)
#[test]
fn iperf3_client_window_limits_the_rate_as_with_iperf3s_server() {
    let test = "iperf3_client_window_limits_the_rate_as_with_iperf3s_server";
    let Some(_alone) = have_iperf3_alone() else {
        return;
    };
    let rtt = 10e-3;
    let Some(mut bed) = bed_up("lpi3-window", "delay = \"5ms\"\nqueue = \"1M\"", test) else {
        return;
    };
    let (ours, theirs) = (5211, 5201);
    serve_in_b(
        &mut bed,
        bin(),
        &["server", "-q", "-p", &ours.to_string()],
        ours,
    );
    serve_in_b(&mut bed, IPERF3, &["-s", "-p", &theirs.to_string()], theirs);
    let (mut our_rates, mut their_rates) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for (port, rates) in [(theirs, &mut their_rates), (ours, &mut our_rates)] {
            let (rate, data) =
                run_watching_server_socket(Some(&bed), port, &["-w", "32K", "-t", "2"]);
            assert_eq!(
                (data.snd_wscale, data.rcv_wscale),
                (0, 0),
                "port {port}: {data:?}"
            );
            rates.push(rate);
        }
    }
    let (ours_bps, theirs_bps) = (median(our_rates.clone()), median(their_rates.clone()));
    let window_over_rtt = 32768.0 * 8.0 / rtt;
    eprintln!(
        "-w 32K, RTT 10 ms: linkperf {ours_bps:.0}, iperf3 {theirs_bps:.0} bit/s; window/RTT {window_over_rtt:.0}"
    );
    assert!(
        within(ours_bps, theirs_bps, 0.10),
        "linkperf {our_rates:?} vs iperf3 {their_rates:?} bit/s"
    );
    assert!(
        ours_bps >= 0.9 * window_over_rtt && ours_bps <= 2.0 * window_over_rtt,
        "{our_rates:?}"
    );
}

// ---------- linkperf client -> iperf3 server ----------

/// Starts `iperf3 -s -1 -J -p PORT`; returns the child and the port.
fn iperf3_server() -> (std::process::Child, u16) {
    iperf3_server_with(&["-1", "-J"])
}

fn against_iperf3(args: &[&str]) -> (Value, Value) {
    let (server, port) = iperf3_server();
    let port_text = port.to_string();
    let mut all = vec![
        "client",
        "127.0.0.1",
        "-p",
        &port_text,
        "--iperf3",
        "--no-store",
        "-J",
    ];
    all.extend_from_slice(args);
    // A loaded machine's scheduler may keep a nice-0 sender from its CPU for longer than
    // its pacer's 20 ms catch-up, and by design it then sends less (8 % less in a loaded
    // run of the 1 s UDP test below): that is the host, not the interoperation.
    let ours = wait_child(spawn_first_in_line(&all), CLIENT_WATCHDOG);
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

/// linkperf waits for its data to be acknowledged before TEST_END, so all it `sent`
/// reached the iperf3 server's kernel. That server stops reading at TEST_END, so what its
/// one thread had not read by then is not in `their_rx` (a loaded run: 10.2 MB of 575):
/// none on a quiet machine, and never more than its receive buffer, which autotuning
/// grows to tcp_rmem[2] at most.
fn assert_unread_at_most_a_buffer(sent: u64, their_rx: u64) {
    let buffer = tcp_rmem_max();
    assert!(
        sent >= their_rx && sent - their_rx <= buffer,
        "linkperf sent {sent}, iperf3 received {their_rx}; its buffer holds {buffer}"
    );
}

#[test]
fn linkperf_client_against_iperf3_tcp() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let (r, s) = against_iperf3(&["-t", "1"]);
    // What the iperf3 server received is what linkperf reports as received.
    let their_rx = u64_at(&s, "/end/sum_received/bytes");
    assert_eq!(u64_at(&r, "/summary/received/bytes"), their_rx);
    assert_unread_at_most_a_buffer(u64_at(&r, "/summary/sent/bytes"), their_rx);
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
    let Some(_turn) = have_iperf3() else {
        return;
    };
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
    // Not a byte more reached the server; what it counted is what linkperf reports (it
    // may count less: see assert_unread_at_most_a_buffer, whose bound exceeds 20 MiB).
    let their_rx = u64_at(&s, "/end/sum_received/bytes");
    assert!(their_rx <= 20 << 20, "iperf3 received {their_rx}");
    assert_eq!(u64_at(&r, "/summary/received/bytes"), their_rx);
}

#[test]
fn linkperf_client_against_iperf3_parallel_and_bidir() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
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
    let Some(_turn) = have_iperf3() else {
        return;
    };
    // 3 s a direction and a run again after a measured stall, as in
    // iperf3_client_udp_both_ways: the 1 s test beside three builds sent 14.8 of 20 Mbit/s.
    // A failure shows the pacer's own account of what it could not send (its warnings).
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let udp = ["-u", "-b", "20M", "-l", "1400", "-t", "3"];
        let (r, s) = against_iperf3(&udp);
        assert_eq!(
            u64_at(&r, "/summary/received/bytes"),
            u64_at(&s, "/end/sum_received/bytes")
        );
        let said = &r["warnings"];
        assert!(
            within(f64_at(&r, "/summary/sent/bits_per_second"), 20e6, 0.05),
            "sent {} bit/s of 20e6; linkperf's warnings: {said}",
            f64_at(&r, "/summary/sent/bits_per_second")
        );
        assert_within(&s, "/end/sum_received/bits_per_second", 20e6, 0.05);
        let (r, s) = against_iperf3(&[&udp[..], &["-R"]].concat());
        assert_eq!(
            u64_at(&r, "/summary/sent/packets"),
            u64_at(&s, "/end/streams/0/udp/packets")
        );
        assert_within(&r, "/summary/received/bits_per_second", 20e6, 0.05);
    })
}

#[test]
fn iperf3_json_format_has_iperf3_layout() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let run = loopback_client(&[
        "-n",
        "8M",
        "-P",
        "2",
        "--format",
        "iperf3-json",
        "--no-store",
    ]);
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

/// Item 12 of issue 10: a stock iperf3 server answers a linkperf greeting at
/// once (PARAM_EXCHANGE after the 37 bytes it takes for a cookie, or
/// ACCESS_DENIED when busy): the client says so in one line within a round
/// trip or two, not after the 10 s greeting timeout, and the server is unharmed.
#[test]
fn linkperf_client_at_an_iperf3_server_is_told_to_add_iperf3() {
    let Some(_turn) = have_iperf3() else {
        return;
    };
    let (server, port) = iperf3_server_with(&[]);
    let _server = KillOnDrop(server);
    // Generous for a loaded machine; the reply itself takes one loopback round trip.
    let bound = Duration::from_secs(3);
    let started = Instant::now();
    let run = client(port, &["-t", "1", "--no-store"]);
    let took = started.elapsed();
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("is an iperf3 server")
            && line.contains("PARAM_EXCHANGE")
            && line.contains("add --iperf3"),
        "{line}"
    );
    assert!(took < bound, "took {took:?}: {line}");

    // Busy with a stock client's test, it answers ACCESS_DENIED.
    let port_text = port.to_string();
    let mut busy_maker = None;
    for _ in 0..10 {
        let mut c = Command::new(IPERF3)
            .args(["-c", "127.0.0.1", "-p", &port_text, "-t", "3", "-b", "10M"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn iperf3");
        std::thread::sleep(Duration::from_millis(500));
        // Refused only while the server still tidies up after the greeting above.
        if c.try_wait().expect("try_wait").is_none() {
            busy_maker = Some(c);
            break;
        }
    }
    let busy_maker = busy_maker.expect("the iperf3 server never took a test");
    let started = Instant::now();
    let run = client(port, &["-t", "1", "--no-store"]);
    let took = started.elapsed();
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("busy") && line.contains("ACCESS_DENIED") && line.contains("--iperf3"),
        "{line}"
    );
    assert!(took < bound, "took {took:?}: {line}");
    let made_busy = wait_child(busy_maker, CLIENT_WATCHDOG);
    assert_eq!(made_busy.code(), Some(0), "{}", made_busy.stderr);

    // With --iperf3 the same server serves linkperf's test.
    let r = client_json(port, &["--iperf3", "-n", "1M", "--no-store"]);
    assert_eq!(u64_at(&r, "/summary/sent/bytes"), 1 << 20);
}
