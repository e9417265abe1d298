//! Third-party mode's restrictions (issue 17): an agent started with
//! `--allow-third-party` and rules refuses a controller that is not on its
//! list, a target off its allow-list, and says nothing about a target that
//! is not a linkperf server: a listener sending an SSH banner and a closed
//! port get the same words (before: "control message of 1397966893 bytes",
//! the banner's first four bytes). Over loopback against the real binary.

mod common;
use common::*;
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

fn gen_key(name: &str) -> String {
    let run = linkperf(&["server", "--gen-key", name]);
    run.assert_success("--gen-key");
    run.stdout.trim().to_string()
}

fn users_file(name: &str, lines: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-auth-tp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// `linkperf client --from AGENT 127.0.0.1 -p TARGET ARGS...` as `key` (NAME:KEY).
fn relayed(agent: u16, target: u16, key: Option<&str>, args: &[&str]) -> Run {
    let from = format!("127.0.0.1:{agent}");
    let mut cmd = Command::new(bin());
    cmd.args([
        "client",
        "--from",
        &from,
        "127.0.0.1",
        "-p",
        &target.to_string(),
    ])
    .args(args)
    .env("LINKPERF_DB", test_archive())
    .env_remove("LINKPERF_USER");
    match key {
        Some(k) => cmd.env("LINKPERF_KEY", k),
        None => cmd.env_remove("LINKPERF_KEY"),
    };
    linkperf_testsupport::process::run(&mut cmd, CLIENT_WATCHDOG)
}

#[test]
fn an_agent_refuses_unknown_controllers_and_targets_off_its_list() {
    let (alice, bob) = (gen_key("alice"), gen_key("bob"));
    let users = users_file("users-tp", &[&alice, &bob]);
    let target = Server::start();
    let other = Server::start();
    let allowed = format!("127.0.0.1@{}", target.port);
    let agent = Server::start_with(&[
        "--allow-third-party",
        "--auth-users",
        users.to_str().unwrap(),
        "--auth-required-for",
        "third-party",
        "--third-party-principals",
        "alice",
        "--third-party-targets",
        &allowed,
    ]);
    // bob is a valid user but not allowed to order tests.
    let run = relayed(agent.port, target.port, Some(&bob), &["-t", "0.5"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("--third-party-principals"), "{line}");
    // alice towards a linkperf server that is off the allow-list.
    let run = relayed(agent.port, other.port, Some(&alice), &["-t", "0.5"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("--third-party-targets"), "{line}");
    assert!(
        !other.stdout_lines().iter().any(|l| l.contains("test")),
        "the refused target was contacted: {:?}",
        other.stdout_lines()
    );
    // alice towards the allowed target: it runs, its bytes counted.
    let run = relayed(agent.port, target.port, Some(&alice), &["-n", "2M", "-J"]);
    run.assert_success("alice's allowed third-party test");
    let report = run.json();
    assert_eq!(u64_at(&report, "/summary/received/bytes"), 2 << 20);
}

#[test]
fn a_non_linkperf_target_is_not_described() {
    let alice = gen_key("alice");
    let users = users_file("users-banner", &[&alice]);
    let agent = Server::start_with(&[
        "--allow-third-party",
        "--auth-users",
        users.to_str().unwrap(),
    ]);
    // A listener that writes an SSH banner to whoever connects.
    let banner = TcpListener::bind("127.0.0.1:0").unwrap();
    let banner_port = banner.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in banner.incoming().take(8).flatten() {
            let _ = c.write_all(b"SSH-2.0-x\r\n");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    });
    let closed_port = free_port();
    let ssh = relayed(agent.port, banner_port, Some(&alice), &["-t", "0.5"]);
    let ssh_line = ssh.assert_one_line_failure(1).to_string();
    let closed = relayed(agent.port, closed_port, Some(&alice), &["-t", "0.5"]);
    let closed_line = closed.assert_one_line_failure(1).to_string();
    for word in [
        "SSH",
        "0x53",
        "1397966893",
        "control message",
        "refused by",
        "answered byte",
    ] {
        assert!(!ssh_line.contains(word), "'{word}' in: {ssh_line}");
    }
    // The same words for both, but for the port number.
    assert_eq!(
        ssh_line.replace(&banner_port.to_string(), "PORT"),
        closed_line.replace(&closed_port.to_string(), "PORT")
    );
}

#[test]
fn a_controller_over_its_quota_is_refused() {
    let target = Server::start();
    let agent = Server::start_with(&["--allow-third-party", "--third-party-max-per-hour", "2"]);
    for _ in 0..2 {
        let run = relayed(agent.port, target.port, None, &["-n", "256K", "-J"]);
        run.assert_success("within the quota");
        assert_eq!(u64_at(&run.json(), "/summary/received/bytes"), 256 << 10);
    }
    let run = relayed(agent.port, target.port, None, &["-n", "256K"]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("--third-party-max-per-hour"), "{line}");
}
