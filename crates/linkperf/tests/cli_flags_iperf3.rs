//! iperf3's everyday flags, each against what really happens: `-k N` sends N
//! blocks of `-l` bytes (counted at the server), `-A` pins every thread
//! (/proc/PID/task/*/status), `--logfile`, `-T` and `--timestamps` shape the
//! lines in the file (the time within the run), `--forceflush` shows lines
//! while the test runs, and `-D -I` leaves a detached server whose pid is in
//! the file and which serves tests.

mod common;

use common::{client, poll, Server};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "linkperf-iperf3-flags-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn blocks_send_exactly_n_blocks_of_length_bytes() {
    let server = Server::start();
    for (blocks, length) in [(7u64, 10_240u64), (3, 131_072)] {
        let run = client(
            server.port,
            &[
                "-k",
                &blocks.to_string(),
                "-l",
                &length.to_string(),
                "-J",
                "--no-store",
            ],
        );
        let r = run.report();
        assert_eq!(
            common::u64_at(&r, "/summary/received/bytes"),
            blocks * length,
            "-k {blocks} -l {length}"
        );
    }
    // Without -l: the default write size of a TCP sender nothing paces, 1 MiB,
    // and of a paced one, 128 KiB.
    let r = client(server.port, &["-k", "2", "-J", "--no-store"]).report();
    assert_eq!(
        common::u64_at(&r, "/summary/received/bytes"),
        2 * 1024 * 1024
    );
    let r = client(server.port, &["-k", "2", "-b", "1G", "-J", "--no-store"]).report();
    assert_eq!(
        common::u64_at(&r, "/summary/received/bytes"),
        2 * 128 * 1024
    );
    let run = client(server.port, &["-k", "2", "-n", "1M", "--no-store"]);
    run.assert_one_line_failure(2);
}

/// The CPUs every thread of `pid` may run on.
fn cpus_allowed(pid: u32) -> Vec<String> {
    let mut lists = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(status) = std::fs::read_to_string(task.path().join("status")) {
            if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
                lists.push(l.split_whitespace().nth(1).unwrap_or("").to_string());
            }
        }
    }
    lists
}

#[test]
fn affinity_pins_every_thread_of_client_and_server() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = (cpus - 1).to_string(); // the last CPU: not the default "0-N"
    let server = Server::start_with(&["-A", &cpu]);
    let port = server.port.to_string();
    let child = common::spawn(&[
        "client",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "3",
        "-P",
        "2",
        "--no-store",
        "-A",
        &cpu,
    ]);
    let pid = child.id();
    let mut child = common::KillOnDrop(child);
    // While the test runs: main, control and 2 stream threads on each side.
    let (client_lists, server_lists) =
        poll(Duration::from_secs(10), Duration::from_millis(100), || {
            let (c, s) = (cpus_allowed(pid), cpus_allowed(server.pid()));
            (c.len() >= 3 && s.len() >= 3).then_some((c, s))
        })
        .expect("the stream threads of client and server");
    let _ = child.0.wait();
    assert!(
        client_lists.iter().all(|l| *l == cpu),
        "client with -A {cpu}: {client_lists:?}"
    );
    assert!(
        server_lists.iter().all(|l| *l == cpu),
        "server with -A {cpu}: {server_lists:?}"
    );

    let run = client(server.port, &["-A", "4096", "-t", "1", "--no-store"]);
    let err = run.assert_one_line_failure(2);
    assert!(err.contains("-A 4096"), "{err}");
}

#[test]
fn logfile_title_and_timestamps_shape_every_line_in_the_file() {
    let server = Server::start();
    let log = temp("log");
    let log_s = log.to_str().unwrap();
    let start = now_s();
    for _ in 0..2 {
        let run = client(
            server.port,
            &[
                "-t",
                "1",
                "--logfile",
                log_s,
                "-T",
                "east",
                "--timestamps=%s ",
                "--no-store",
            ],
        );
        run.assert_success("client --logfile");
        assert_eq!(run.stdout, "", "--logfile: nothing on stdout");
    }
    let end = now_s();
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    // Appended, as iperf3 does: both runs' summaries.
    assert_eq!(
        text.matches("summary, client to server").count(),
        2,
        "{text}"
    );
    for line in text.lines() {
        let rest = line
            .strip_prefix("east:  ")
            .unwrap_or_else(|| panic!("no title: {line:?}"));
        let stamp: u64 = rest
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no %s timestamp: {line:?}"));
        assert!(
            (start..=end).contains(&stamp),
            "{stamp} outside {start}..={end}: {line}"
        );
    }
}

#[test]
fn forceflush_lines_reach_the_logfile_while_the_test_runs() {
    let server = Server::start();
    let log = temp("flush");
    let port = server.port.to_string();
    let child = common::spawn(&[
        "client",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "4",
        "-i",
        "0.5",
        "--logfile",
        log.to_str().unwrap(),
        "--forceflush",
        "--no-store",
    ]);
    let mut child = common::KillOnDrop(child);
    // The first interval must be in the file while the 4 s test still runs, however late
    // a loaded machine starts the client: wait for it as long as the client lives, and
    // check the client was still running when the line was seen. Its end is measured:
    // 0.50 s on a quiet machine, a few hundredths more when the sampler wakes late, and
    // past 1 s when the machine stalled longer than an interval (the sampler then closes
    // one interval over the boundaries it missed), so the line is any "0.00-X s".
    let mut seen_while_running = None;
    let mut text = String::new();
    poll(Duration::from_secs(30), Duration::from_millis(50), || {
        let running = child.0.try_wait().unwrap().is_none();
        text = std::fs::read_to_string(&log).unwrap_or_default();
        if text
            .lines()
            .any(|l| l.contains(" s ") && l.contains(" 0.00-"))
        {
            seen_while_running = Some(running);
        }
        (seen_while_running.is_some() || !running).then_some(())
    });
    let status = child.0.wait().unwrap();
    let mut said = String::new();
    if let Some(mut out) = child.0.stdout.take() {
        let _ = out.read_to_string(&mut said);
    }
    if let Some(mut err) = child.0.stderr.take() {
        let _ = err.read_to_string(&mut said);
    }
    let _ = std::fs::remove_file(&log);
    assert_eq!(
        seen_while_running,
        Some(true),
        "the first interval line must reach the logfile while the test runs (None: never; \
         client {status}, its output: {said:?}); the file:\n{text}"
    );
}

#[test]
fn daemon_detaches_writes_its_pid_and_serves() {
    let pidfile = temp("pid");
    let log = temp("daemonlog");
    let port = common::free_port();
    let out = Command::new(common::bin())
        .args([
            "server",
            "-D",
            "-I",
            pidfile.to_str().unwrap(),
            "-p",
            &port.to_string(),
        ])
        .args(["-B", "127.0.0.1", "--logfile", log.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .expect("run linkperf server -D");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("a pid in the pidfile");
    let _ = std::fs::remove_file(&pidfile);
    struct Kill(i32);
    impl Drop for Kill {
        fn drop(&mut self) {
            // SAFETY: signals the daemon this test started.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
    let _daemon = Kill(pid);
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(
        cmdline.split('\0').any(|a| a == "server"),
        "pid {pid} is {cmdline:?}"
    );
    // Detached: it leads its own session.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let session: i32 = after_name
        .split_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(session, pid, "the daemon leads a new session");
    // It serves: 4 blocks of 64 KiB arrive.
    let r = client(port, &["-k", "4", "-l", "64K", "-J", "--no-store"]).report();
    assert_eq!(common::u64_at(&r, "/summary/received/bytes"), 4 * 65536);
    // Detached, its event log goes to --logfile: the test is in it.
    let logged = poll(Duration::from_secs(5), Duration::from_millis(50), || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.contains("127.0.0.1").then_some(text)
    });
    let _ = std::fs::remove_file(&log);
    assert!(logged.is_some(), "the daemon's --logfile names no test");

    let run = common::linkperf(&["server", "-I", "/tmp/x.pid"]);
    run.assert_one_line_failure(2);
}
