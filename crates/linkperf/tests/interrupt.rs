//! Ctrl-C, one convention for every command that runs a test: the partial
//! result is printed, then the process exits 130. Each test sends SIGINT to a
//! real running process over loopback.

mod common;
use common::*;
use serde_json::Value;
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

/// Lets `child` run for `after`, sends SIGINT, and waits for it; returns the
/// run and how long the process lived, up to its exit (nothing can have
/// been measured for longer than that: a test stops when its client has
/// seen the signal, a little after it was sent).
fn interrupt(child: Child, after: Duration) -> (Run, f64) {
    let spawned = Instant::now();
    thread::sleep(after);
    send_signal(&child, libc::SIGINT);
    let signalled = Instant::now();
    let run = wait_child(child, Duration::from_secs(15));
    // `spawned` was read after the spawn: the process lived at least this.
    let lived = spawned.elapsed().as_secs_f64();
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "took {:?} to stop after Ctrl-C",
        signalled.elapsed()
    );
    (run, lived)
}

fn assert_exit_130(run: &Run) {
    assert_eq!(
        run.code(),
        Some(130),
        "exit code after Ctrl-C\nstdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn client_prints_the_partial_summary_then_exits_130() {
    let server = Server::start();
    let child = spawn_client(server.port, &["-t", "20", "--no-store"]);
    let (run, lived) = interrupt(child, Duration::from_millis(2500));
    assert_exit_130(&run);
    assert!(
        run.stdout.contains("interrupted: partial result"),
        "{}",
        run.stdout
    );
    // "received    4.70 GiB in 2.30 s = 17.6 Gbit/s": a partial test, at
    // most as long as the process had lived, and data moved.
    let line = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("received") && l.contains(" in "))
        .unwrap_or_else(|| panic!("no received line in\n{}", run.stdout));
    let seconds: f64 = line
        .split(" in ")
        .nth(1)
        .and_then(|t| t.split(" s").next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no duration in '{line}'"));
    // The line rounds to 10 ms.
    assert!(
        seconds > 0.0 && seconds <= lived + 0.005,
        "received for {seconds} s, the process lived {lived:.2} s: '{line}'"
    );
    assert!(!line.contains(" 0 B in"), "{line}");
}

#[test]
fn rr_prints_the_partial_report_then_exits_130() {
    let server = Server::start();
    let port = server.port.to_string();
    let child = spawn(&["rr", "127.0.0.1", "-p", &port, "-t", "20", "-J"]);
    let (run, lived) = interrupt(child, Duration::from_millis(2500));
    assert_exit_130(&run);
    let v = run.json();
    assert_eq!(v["interrupted"], true, "{v:#}");
    let seconds = f64_at(&v, "/summary/seconds");
    assert!(
        seconds > 0.0 && seconds <= lived,
        "measured {seconds} s, the process lived {lived:.2} s"
    );
    assert!(u64_at(&v, "/summary/transactions") > 0);
}

#[test]
fn campaign_run_prints_the_partial_result_then_exits_130() {
    let a = Server::start_with(&["--allow-third-party"]);
    let b = Server::start_with(&["--allow-third-party"]);
    let dir = std::env::temp_dir().join(format!("linkperf-int-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("int.toml");
    // 8 Mbit/s of UDP: 1 MB per second the flow runs.
    std::fs::write(
        &file,
        format!(
            "start_delay = \"300ms\"\nsessions = 3\n\
             [[agent]]\nname = \"a\"\naddress = \"127.0.0.1:{}\"\n\
             [[agent]]\nname = \"b\"\naddress = \"127.0.0.1:{}\"\n\
             [[phase]]\nname = \"p\"\nduration = \"20s\"\n\
             [[phase.flow]]\nfrom = \"a\"\nto = \"b\"\nudp = true\nbitrate = \"8M\"\n",
            a.port, b.port
        ),
    )
    .unwrap();
    let child = spawn(&[
        "campaign",
        "run",
        file.to_str().unwrap(),
        "-J",
        "--no-store",
    ]);
    let (run, lived) = interrupt(child, Duration::from_millis(3000));
    let _ = std::fs::remove_dir_all(&dir);
    assert_exit_130(&run);
    let v: Value = run.json();
    assert_eq!(v["interrupted"], true, "{v:#}");
    let phases = array_at(&v, "/phases");
    assert_eq!(phases.len(), 1, "no further session after Ctrl-C");
    let bytes = u64_at(&phases[0], "/flows/0/received/bytes") as f64;
    // Clearly partial (at most what 8 Mbit/s moves while the process lived,
    // plus a datagram of slack per interval), clearly not nothing.
    let most = lived * 1e6 + 10.0 * 1460.0;
    assert!(
        bytes > 0.0 && bytes <= most,
        "received {bytes} bytes, at most {most} in {lived:.2} s"
    );
}

#[test]
fn demo_stops_at_the_interrupted_test_and_exits_130() {
    // The demo's first test is 3 s of TCP: interrupt it in the middle.
    let (run, _) = interrupt(spawn(&["demo"]), Duration::from_millis(1500));
    assert_exit_130(&run);
    assert_eq!(
        run.stdout.matches("interrupted: partial result").count(),
        1,
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("== UDP"),
        "no further test after Ctrl-C:\n{}",
        run.stdout
    );
}
