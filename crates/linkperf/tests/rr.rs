//! `linkperf rr` over real sockets on loopback against a real `linkperf
//! server` child (and, for loss, a lossy responder written here that speaks
//! the rr protocol). Every mode asserts measured values against an
//! independent count: the server's own, the responder's drops, the number of
//! rounds asked for, the delay an emulated link is configured with.

mod common;
use common::pingpong::median;
use common::*;
use linkperf_proto::rr::{self, RrClientMessage, RrServerMessage, RrServerSession};
use linkperf_proto::udp;
use linkperf_testsupport::bed::{two_hosts, CliBed};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The emulated-link test measures delays to 0.1 ms with a userspace
/// emulator: it runs alone, the others share the CPUs among themselves.
static CPUS: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    CPUS.read().unwrap_or_else(|e| e.into_inner())
}

/// The shared CPU turn and a fresh loopback server.
fn shared_server() -> (RwLockReadGuard<'static, ()>, Server) {
    (shared(), Server::start())
}

fn rr_run(port: u16, args: &[&str]) -> Run {
    let port = port.to_string();
    let mut all = vec!["rr", "127.0.0.1", "-p", &port];
    all.extend_from_slice(args);
    linkperf(&all)
}

/// A successful `linkperf rr ... -J`, validated against the rr schema.
fn rr_json(port: u16, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("-J");
    let v = rr_run(port, &all).assert_success("rr failed").json();
    assert_valid_rr(&v);
    assert_eq!(v["schema"], "linkperf/1");
    assert_eq!(v["errors"], serde_json::json!([]), "errors in {v:#}");
    v
}

fn assert_valid_rr(v: &Value) {
    if let Err(e) = check_schema("linkperf-rr-1.schema.json", v) {
        panic!("document does not match schema/linkperf-rr-1.schema.json:\n{e}\n{v:#}");
    }
}

/// The percentiles of a distribution are ordered and positive.
fn assert_ordered(v: &Value, pointer: &str) {
    let f = |k: &str| f64_at(v, &format!("{pointer}/{k}"));
    let (min, p50, p90, p99, p999, max) =
        (f("min"), f("p50"), f("p90"), f("p99"), f("p999"), f("max"));
    assert!(
        0.0 < min && min <= p50 && p50 <= p90 && p90 <= p99 && p99 <= p999 && p999 <= max,
        "{pointer} not ordered: {:#}",
        v.pointer(pointer).unwrap()
    );
}

#[test]
fn tcp_counts_match_on_both_ends_and_one_way_delay_adds_up() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let (_cpus, server) = shared_server();
        let v = rr_json(server.port, &["-n", "3000"]);
        assert_eq!(u64_at(&v, "/summary/transactions"), 3000);
        assert_eq!(u64_at(&v, "/summary/attempted"), 3000);
        assert_eq!(u64_at(&v, "/summary/server/transactions"), 3000);
        assert_eq!(u64_at(&v, "/summary/server/requests"), 3000);
        assert_eq!(u64_at(&v, "/summary/server/connections"), 1);
        assert_ordered(&v, "/summary/rtt_ms");
        let hist: u64 = array_at(&v, "/histogram")
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(hist, 3000, "the histogram holds every transaction");
        assert!(
            v.pointer("/summary/lost").is_none(),
            "TCP has no loss count"
        );
        // Loopback: one kernel, one clock. The server's receive stamp must fall
        // inside every transaction, so both one-way delays are positive and
        // shorter than the round trip.
        assert_eq!(v["start"]["clock"], "shared");
        let rtt = f64_at(&v, "/summary/rtt_ms/mean");
        for way in ["forward_ms", "reverse_ms"] {
            let min = f64_at(&v, &format!("/summary/one_way_ms/{way}/min"));
            let mean = f64_at(&v, &format!("/summary/one_way_ms/{way}/mean"));
            assert!(
                min > 0.0 && mean < rtt,
                "{way}: min {min}, mean {mean}, rtt {rtt}"
            );
        }
        assert_eq!(u64_at(&v, "/summary/one_way_ms/forward_ms/count"), 3000);
    });
}

#[test]
fn timed_run_has_intervals_that_add_up() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let (_cpus, server) = shared_server();
        let v = rr_json(server.port, &["-t", "1", "-i", "0.25"]);
        let intervals = array_at(&v, "/intervals");
        assert!(intervals.len() >= 4, "{} intervals", intervals.len());
        let sum: u64 = intervals
            .iter()
            .map(|i| i["transactions"].as_u64().unwrap())
            .sum();
        let total = u64_at(&v, "/summary/transactions");
        assert_eq!(sum, total);
        assert_eq!(u64_at(&v, "/summary/server/transactions"), total);
        let secs = f64_at(&v, "/summary/seconds");
        assert!((0.95..1.5).contains(&secs), "{secs}");
        let tps = f64_at(&v, "/summary/transactions_per_second");
        assert!((tps - total as f64 / secs).abs() < 1.0);
        assert!(
            total > 100,
            "loopback does far more than 100 transactions/s"
        );
    });
}

#[test]
fn udp_counts_match_without_loss() {
    let (_cpus, server) = shared_server();
    let v = rr_json(
        server.port,
        &["-u", "-n", "3000", "--request", "100", "--response", "1000"],
    );
    assert_eq!(u64_at(&v, "/summary/transactions"), 3000);
    assert_eq!(u64_at(&v, "/summary/lost"), 0);
    assert_eq!(u64_at(&v, "/summary/server/transactions"), 3000);
    assert_eq!(v["test"]["response"], 1000);
    assert_ordered(&v, "/summary/rtt_ms");
}

#[test]
fn bursts_and_rate() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let (_cpus, server) = shared_server();
        let v = rr_json(
            server.port,
            &["-u", "--burst", "8", "-n", "5000", "-i", "0"],
        );
        assert_eq!(
            u64_at(&v, "/summary/transactions") + u64_at(&v, "/summary/lost"),
            5000
        );
        assert_eq!(u64_at(&v, "/summary/server/requests"), 5000);
        let v = rr_json(server.port, &["--burst", "4", "-n", "4000"]);
        assert_eq!(u64_at(&v, "/summary/server/transactions"), 4000);

        let v = rr_json(server.port, &["--rate", "200/s", "-t", "1"]);
        let achieved = f64_at(&v, "/summary/rate/achieved_per_second");
        assert!((190.0..=210.0).contains(&achieved), "{achieved}");
        assert_eq!(v["summary"]["rate"]["reached"], true);
        let n = u64_at(&v, "/summary/transactions");
        assert!((190..=202).contains(&n), "{n}");

        // Unreachable: say so on one line, report what was achieved, exit 1.
        let run = rr_run(server.port, &["--rate", "50M/s", "-t", "0.3", "-J"]);
        let line = run.assert_one_line_failure(1);
        assert!(line.contains("not reached"), "{line}");
        let v = run.json();
        assert_valid_rr(&v);
        assert_eq!(v["summary"]["rate"]["reached"], false);
        assert!(f64_at(&v, "/summary/rate/achieved_per_second") > 0.0);
    });
}

/// A UDP rr responder that drops every `every`-th request, with the rr
/// control protocol around it. Returns its TCP port and the drop count.
fn lossy_responder(every: u64) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dropped = Arc::new(AtomicU64::new(0));
    let dropped_out = dropped.clone();
    thread::spawn(move || {
        let (mut control, _) = listener.accept().unwrap();
        let mut preamble = [0u8; 4];
        control.read_exact(&mut preamble).unwrap();
        assert_eq!(&preamble, b"LPR1");
        let mut session = RrServerSession::new();
        let read_message = |control: &mut std::net::TcpStream, session: &mut RrServerSession| loop {
            let mut buf = vec![0u8; session.wanted()];
            control.read_exact(&mut buf).unwrap();
            if let Some(m) = session.receive(&buf).unwrap().pop() {
                return m;
            }
        };
        let hello = read_message(&mut control, &mut session);
        assert!(matches!(hello, RrClientMessage::Hello { .. }), "{hello:?}");
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let cookie = 0x5eed;
        let welcome = session
            .send(&RrServerMessage::Welcome {
                version: rr::RR_VERSION,
                software: "lossy test responder".into(),
                cookie,
                udp_port: Some(sock.local_addr().unwrap().port()),
                boot_id: None,
            })
            .unwrap();
        control.write_all(&welcome).unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let answered = Arc::new(AtomicU64::new(0));
        let (r, a) = (requests.clone(), answered.clone());
        thread::spawn(move || {
            let mut buf = [0u8; 65_536];
            let mut out = vec![0u8; 65_536];
            sock.set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                if udp::parse_hello(&buf[..n]) == Some((cookie, 0)) {
                    sock.send_to(&udp::HELLO_ACK, from).unwrap();
                    continue;
                }
                let Some((seq, size)) = rr::parse_udp_request(&buf[..n]) else {
                    continue;
                };
                if r.fetch_add(1, Ordering::SeqCst) % every == every - 1 {
                    dropped.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64;
                rr::write_udp_response(&mut out, seq, now);
                a.fetch_add(1, Ordering::SeqCst);
                sock.send_to(&out[..size as usize], from).unwrap();
            }
        });
        let finish = read_message(&mut control, &mut session);
        assert_eq!(finish, RrClientMessage::Finish);
        let done = session
            .send(&RrServerMessage::Done {
                requests: requests.load(Ordering::SeqCst),
                transactions: answered.load(Ordering::SeqCst),
                connections: 0,
            })
            .unwrap();
        control.write_all(&done).unwrap();
    });
    (port, dropped_out)
}

#[test]
fn udp_loss_is_counted_and_the_test_goes_on() {
    let _cpus = shared();
    let (port, dropped) = lossy_responder(10);
    let started = Instant::now();
    let v = rr_json(port, &["-u", "-n", "300", "--timeout", "100ms"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    let lost = u64_at(&v, "/summary/lost");
    let late = u64_at(&v, "/summary/late");
    let done = u64_at(&v, "/summary/transactions");
    let really_dropped = dropped.load(Ordering::SeqCst);
    assert_eq!(really_dropped, 30, "the responder drops every 10th of 300");
    assert_eq!(u64_at(&v, "/summary/attempted"), 300);
    assert_eq!(done + lost, 300);
    // Every drop is a loss; an answer slower than the timeout is a loss too,
    // and then shows up as late.
    assert!(
        lost >= really_dropped && lost <= really_dropped + late,
        "lost {lost}, late {late}, dropped {really_dropped}"
    );
    assert_eq!(u64_at(&v, "/summary/server/requests"), 300);
    assert_eq!(u64_at(&v, "/summary/server/transactions"), 270);
    let pct = f64_at(&v, "/summary/loss_percent");
    assert!((pct - lost as f64 / 3.0).abs() < 1e-9, "{pct}");
    assert_eq!(f64_at(&v, "/summary/timeout_ms"), 100.0);
    // The responder's clock is not known to be ours: RTT only.
    assert_eq!(v["start"]["clock"], "independent");
    assert!(v["summary"].get("one_way_ms").is_none());
}

#[test]
fn clock_sync_is_the_users_word_for_one_way_delay() {
    let _cpus = shared();
    // The responder tells no boot id: without --clock-sync, RTT only.
    let (port, _) = lossy_responder(u64::MAX);
    let v = rr_json(port, &["-u", "-n", "200"]);
    assert_eq!(v["start"]["clock"], "independent");
    assert!(v["summary"].get("one_way_ms").is_none());
    // With it, one-way delay from the responder's stamps (this host's clock,
    // so they fall inside each round trip).
    let (port, _) = lossy_responder(u64::MAX);
    let v = rr_json(port, &["-u", "-n", "200", "--clock-sync"]);
    assert_eq!(v["start"]["clock"], "synchronised");
    assert_eq!(v["summary"]["one_way_ms"]["clock"], "synchronised");
    assert_eq!(u64_at(&v, "/summary/one_way_ms/forward_ms/count"), 200);
    let rtt_max = f64_at(&v, "/summary/rtt_ms/max");
    for way in ["forward_ms", "reverse_ms"] {
        let min = f64_at(&v, &format!("/summary/one_way_ms/{way}/min"));
        let max = f64_at(&v, &format!("/summary/one_way_ms/{way}/max"));
        assert!(
            min > 0.0 && max <= rtt_max * 1.01,
            "{way}: {min}..{max}, rtt max {rtt_max}"
        );
    }
}

#[test]
fn rtt_grows_with_size_and_the_fit_says_so() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let (_cpus, server) = shared_server();
        for proto in [&[][..], &["-u"][..]] {
            let big = if proto.is_empty() { "256K" } else { "60000" };
            let sizes = format!("64,8K,{big}");
            let mut args = proto.to_vec();
            args.extend_from_slice(&["--sizes", &sizes, "-n", "300"]);
            let v = rr_json(server.port, &args);
            let points = array_at(&v, "/sizes");
            assert_eq!(points.len(), 3);
            for p in points {
                assert_eq!(p["transactions"].as_u64().unwrap(), 300, "{p}");
            }
            let small = f64_at(&v, "/sizes/0/rtt_ms/p50");
            let large = f64_at(&v, "/sizes/2/rtt_ms/p50");
            assert!(
                large > small,
                "{proto:?}: p50 {small} ms at 64 B, {large} ms at {big}"
            );
            let slope = f64_at(&v, "/fit/slope_us_per_byte");
            assert!(slope > 0.0, "{proto:?}: slope {slope}");
            assert!(f64_at(&v, "/fit/implied_bits_per_second") > 0.0);
            let intercept = f64_at(&v, "/fit/intercept_ms");
            assert!(
                intercept.is_finite() && intercept < small * 2.0 + 0.05,
                "{intercept}"
            );
            // Measured + warm-up is what the server answered.
            assert_eq!(
                u64_at(&v, "/summary/transactions") + u64_at(&v, "/summary/warmup"),
                u64_at(&v, "/summary/server/transactions")
            );
        }
    });
}

#[test]
fn cold_probe_reports_first_and_second_rtt() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let (_cpus, server) = shared_server();
        for proto in [&[][..], &["-u"][..]] {
            let mut args = proto.to_vec();
            args.extend_from_slice(&["--cold", "--idle", "150ms", "-n", "3"]);
            let started = Instant::now();
            let v = rr_json(server.port, &args);
            assert!(
                started.elapsed() >= Duration::from_millis(450),
                "three idle gaps"
            );
            assert_eq!(u64_at(&v, "/summary/first_rtt_ms/count"), 3);
            assert_eq!(u64_at(&v, "/summary/second_rtt_ms/count"), 3);
            assert_eq!(u64_at(&v, "/summary/first_minus_second_ms/count"), 3);
            assert_eq!(u64_at(&v, "/summary/transactions"), 6);
            assert_eq!(u64_at(&v, "/summary/server/transactions"), 6);
            assert_eq!(f64_at(&v, "/test/idle_s"), 0.15);
            let d = f64_at(&v, "/summary/first_minus_second_ms/mean");
            let first = f64_at(&v, "/summary/first_rtt_ms/mean");
            let second = f64_at(&v, "/summary/second_rtt_ms/mean");
            assert!((d - (first - second)).abs() < 0.01 * first.max(second) + 0.001);
        }
    });
}

#[test]
fn connect_mode_reports_connect_time_apart() {
    let (_cpus, server) = shared_server();
    let v = rr_json(server.port, &["--connect", "-n", "300"]);
    assert_eq!(u64_at(&v, "/summary/transactions"), 300);
    assert_eq!(u64_at(&v, "/summary/connect_ms/count"), 300);
    assert_eq!(u64_at(&v, "/summary/server/connections"), 300);
    assert_eq!(u64_at(&v, "/summary/server/transactions"), 300);
    assert_ordered(&v, "/summary/connect_ms");
    // connect + request/response + close takes longer than either part.
    let total = f64_at(&v, "/summary/transaction_ms/p50");
    assert!(total > f64_at(&v, "/summary/connect_ms/p50"));
    assert!(total > f64_at(&v, "/summary/rtt_ms/p50"));
}

#[test]
fn latency_under_load_reports_idle_and_loaded() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let (_cpus, server) = shared_server();
        let v = rr_json(
            server.port,
            &[
                "-t",
                "1",
                "--rate",
                "200/s",
                "--load",
                "-P 2 -t 2.5",
                "-i",
                "0.5",
            ],
        );
        let idle = u64_at(&v, "/summary/idle_rtt_ms/count");
        let loaded = u64_at(&v, "/summary/loaded_rtt_ms/count");
        assert!(
            (180..=202).contains(&idle),
            "{idle} idle probes in 1 s at 200/s"
        );
        assert!(loaded >= 100, "{loaded} probes under load");
        assert!(f64_at(&v, "/summary/load/bits_per_second") > 1e6);
        assert_eq!(u64_at(&v, "/summary/load/streams"), 2);
        assert_eq!(
            u64_at(&v, "/summary/transactions") + u64_at(&v, "/summary/warmup"),
            u64_at(&v, "/summary/server/transactions")
        );
        let phases: Vec<&str> = array_at(&v, "/intervals")
            .iter()
            .filter_map(|i| i["phase"].as_str())
            .collect();
        assert!(
            phases.contains(&"idle") && phases.contains(&"loaded"),
            "{phases:?}"
        );
    });
}

#[test]
fn human_output_has_header_intervals_and_summary() {
    let (_cpus, server) = shared_server();
    let run = rr_run(server.port, &["-u", "-t", "0.5", "-i", "0.25"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(run.stdout.starts_with("linkperf "), "{}", run.stdout);
    assert!(run.stdout.contains("rr -> 127.0.0.1"), "{}", run.stdout);
    assert!(run.stdout.contains("trans/s"), "{}", run.stdout);
    assert!(run.stdout.contains("summary: "), "{}", run.stdout);
    assert!(run.stdout.contains("p99.9"), "{}", run.stdout);
    assert!(run.stdout.contains("clock     shared"), "{}", run.stdout);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let _cpus = shared();
    let port = free_port();
    for (args, needle) in [
        (&["--request", "0"][..], "0 bytes"),
        (&["-u", "--response", "70000"][..], "65507"),
        (&["-u", "--request", "8"][..], "16-byte"),
        (&["--sizes", "64"][..], "two"),
        (&["--sizes", "64,big"][..], "big"),
        (&["--rate", "fast"][..], "fast"),
        (&["--rate", "0/s"][..], "above 0"),
        (&["--connect", "-u"][..], "UDP"),
        (&["--burst", "0"][..], "--burst"),
        (&["-n", "0"][..], "-n"),
        (&["-t", "0"][..], "-t"),
        (&["--load", "-P 0"][..], "--load"),
        (&["--cold", "--sizes", "64,128"][..], "--sizes"),
        (&["--bogus"][..], "--bogus"),
    ] {
        let run = rr_run(port, args);
        let line = run.assert_one_line_failure(2);
        assert!(line.contains(needle), "{args:?}: {line}");
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
    let run = linkperf(&["rr"]);
    run.assert_one_line_failure(2);
}

#[test]
fn faults_are_one_line_and_exit_1() {
    let _cpus = shared();
    // Nobody listens.
    let port = free_port();
    let run = rr_run(port, &["-n", "10", "-J"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("refused"), "{line}");
    assert_valid_rr(&run.json());

    // Something listens and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let holder = thread::spawn(move || {
        let conn = silent.accept();
        thread::sleep(Duration::from_secs(7));
        drop(conn);
    });
    let started = Instant::now();
    let run = rr_run(port, &["-n", "10"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("did not answer"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(7));
    holder.join().unwrap();
}

#[test]
fn a_killed_client_leaves_the_server_serving() {
    let (_cpus, server) = shared_server();
    for proto in [&[][..], &["-u"][..]] {
        let port = server.port.to_string();
        let mut args = vec!["rr", "127.0.0.1", "-p", &port, "-t", "30"];
        args.extend_from_slice(proto);
        let victim = spawn(&args);
        thread::sleep(Duration::from_millis(400));
        send_signal(&victim, libc::SIGKILL);
        let _ = wait_child(victim, Duration::from_secs(5));
        let mut args = proto.to_vec();
        args.extend_from_slice(&["-n", "500"]);
        let v = rr_json(server.port, &args);
        assert_eq!(u64_at(&v, "/summary/server/transactions"), 500);
    }
}

/// On an emulated link with 5 ms each way, rr measures what an application sees there:
/// its median RTT is that of the test's own ping-pong (64-byte requests and answers
/// through the same path, timed from the write to the read, in rounds taken in turn with
/// rr's) within 2 % + 0.1 ms of 2·D; and the link's delay itself shows in the fastest
/// transactions, which no wake-up can make faster: rr's fastest RTT is 2·D and its fastest
/// forward one-way delay D, each no more than 20 µs early (the emulator's bound) and
/// within 2 % + 0.1 ms of it. (The median of either is 2·D only on CPUs that wake at
/// once: CI measured both ends 0.5 ms over 10 ms on a VM that lost 250 ms of each attempt
/// to its hypervisor.) Needs root (namespaces); skipped otherwise.
#[test]
fn emulated_link_rtt_matches_the_configured_delay() {
    const D_MS: f64 = 5.0;
    linkperf_testsupport::stall::retry_when_stalled(|| {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/net/tun").exists() {
            linkperf_testsupport::skip("needs root and /dev/net/tun (CI runs it)");
            return;
        }
        let _alone = CPUS.write().unwrap_or_else(|e| e.into_inner());
        let name = format!("rr{}", std::process::id() % 100_000);
        let topology = two_hosts(&name, "10.78.0.1", "10.78.0.2", "delay = \"5ms\"");
        let mut bed = CliBed::up(bin(), &std::env::temp_dir(), &name, &topology);
        let mut server = bed.exec("b", bin());
        bed.serve("b", server.arg("server"), linkperf_proto::DEFAULT_PORT);
        let echo = pingpong::Echo::start(&bed.netns("b"), "10.78.0.2".parse().unwrap());
        let tolerance = 0.02 * 2.0 * D_MS + 0.1;
        for udp in [false, true] {
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            let (mut fastest, mut forward) = (f64::MAX, f64::MAX);
            let mut warnings = Vec::new();
            for _ in 0..4 {
                ours.extend(pingpong::rtts(&bed.netns("a"), echo.addr, udp, 50));
                let mut args = vec!["rr", "10.78.0.2", "-n", "50", "-J"];
                if udp {
                    args.push("-u");
                }
                let run = linkperf_in(&bed, "a", &args);
                assert_eq!(run.code(), Some(0), "{}\n{}", run.stdout, run.stderr);
                let v = run.json();
                assert_valid_rr(&v);
                // Namespaces share the kernel's clock: one-way delays are measured.
                assert_eq!(v["start"]["clock"], "shared");
                forward = forward.min(f64_at(&v, "/summary/one_way_ms/forward_ms/min"));
                fastest = fastest.min(f64_at(&v, "/summary/rtt_ms/min"));
                theirs.extend(histogram_samples(&v));
                warnings.extend(v["warnings"].as_array().cloned().unwrap_or_default());
            }
            let (p50, reference_p50) = (median(&theirs), median(&ours));
            let seen = format!(
                "udp {udp}: rr p50 {p50:.3} ms, fastest {fastest:.3} ms, fastest forward \
                 {forward:.3} ms; the test's ping-pong p50 {reference_p50:.3} ms, fastest {:.3} \
                 ms; rr's warnings {warnings:?}",
                ours.iter().copied().fold(f64::MAX, f64::min)
            );
            println!("{seen}");
            assert_eq!(theirs.len(), 200, "{seen}");
            assert!((p50 - reference_p50).abs() <= tolerance, "{seen}");
            assert!(
                (-0.02..=tolerance).contains(&(fastest - 2.0 * D_MS)),
                "{seen}"
            );
            let one_way = 0.02 * D_MS + 0.1;
            assert!((-0.02..=one_way).contains(&(forward - D_MS)), "{seen}");
        }
    });
}

/// Every transaction of an rr document, one value (ms) per count of its histogram's buckets.
fn histogram_samples(v: &Value) -> Vec<f64> {
    let buckets = v["histogram"].as_array().expect("histogram");
    buckets
        .iter()
        .flat_map(|b| {
            let n = b["count"].as_u64().expect("count") as usize;
            std::iter::repeat_n(b["rtt_ms"].as_f64().expect("rtt_ms"), n)
        })
        .collect()
}

/// Seed 000's first ping over a switched circuit: through a link that holds the first
/// packet after an idle gap for a 30 ms set-up, `rr --cold` sees every round's first
/// probe 30 ms slower than the second, within the 0.5 ms (the request opens the
/// circuit; the reply finds it up). Needs root (namespaces); skipped otherwise.
#[test]
fn cold_probe_through_a_switched_circuit_shows_the_set_up_delay() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/net/tun").exists() {
            linkperf_testsupport::skip("needs root and /dev/net/tun (CI runs it)");
            return;
        }
        let _alone = CPUS.write().unwrap_or_else(|e| e.into_inner());
        let name = format!("rc{}", std::process::id() % 100_000);
        let link = "delay = \"2ms\"\ncircuit_setup = \"30ms\"\ncircuit_idle = \"100ms\"";
        let topology = two_hosts(&name, "10.79.0.1", "10.79.0.2", link);
        let mut bed = CliBed::up(bin(), &std::env::temp_dir(), &name, &topology);
        // Both ends at nice -20: rr times a probe from its send to the answer's read,
        // in user space, and on a loaded machine an ordinary process waited up to 1.9 ms
        // for a CPU to send or read one of a round's two probes. The test is of the
        // circuit's set-up, so the ends go first in line (as a user timing a busy host would).
        let mut server = bed.exec("b", "nice");
        server.args(["-n", "-20", bin(), "server"]);
        bed.serve("b", &mut server, linkperf_proto::DEFAULT_PORT);
        for proto in [&[][..], &["-u"][..]] {
            // Idle 300 ms: three times the circuit's idle timeout, so every round's
            // first probe finds the circuit released.
            let mut args = vec!["rr", "10.79.0.2", "--cold", "--idle", "300ms", "-n", "5"];
            args.extend_from_slice(&["-J"]);
            args.extend_from_slice(proto);
            let mut client = bed.exec("a", "nice");
            client
                .args(["-n", "-20", bin()])
                .args(&args)
                .env("LINKPERF_DB", test_archive());
            let run = linkperf_testsupport::process::run(&mut client, Duration::from_secs(120));
            assert_eq!(run.code(), Some(0), "{}\n{}", run.stdout, run.stderr);
            let v = run.json();
            assert_valid_rr(&v);
            let d = |field: &str| f64_at(&v, &format!("/summary/first_minus_second_ms/{field}"));
            let second = f64_at(&v, "/summary/second_rtt_ms/p50");
            println!(
                "{proto:?}: first - second: min {:.3} p50 {:.3} max {:.3} ms over {} rounds; second p50 {second:.3} ms",
                d("min"),
                d("p50"),
                d("max"),
                d("count")
            );
            assert_eq!(u64_at(&v, "/summary/first_minus_second_ms/count"), 5);
            // The 0.5 ms, on the median round; and every round set one circuit up,
            // not none (0 ms) and not two (60 ms): each within half a set-up of 30 ms. (A
            // round may lose milliseconds to the hypervisor: with 380-470 ms stolen in a
            // 10 s attempt, single rounds measured 23.2 and 38.5 ms around a 29.8 median.)
            assert!(
                (d("p50") - 30.0).abs() <= 0.5 && d("min") >= 15.0 && d("max") <= 45.0,
                "{proto:?}: first - second {:.3}..{:.3} (p50 {:.3}) ms for a 30 ms set-up",
                d("min"),
                d("max"),
                d("p50")
            );
            // The second probe crosses the circuit as a plain 2 x 2 ms link, plus the two
            // hosts' stacks (0.08-0.19 ms measured).
            assert!((second - 4.0).abs() <= 0.5, "{second}");
        }
    });
}
