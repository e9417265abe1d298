//! Authentication (issue 17): a server with a users file admits only
//! clients that answer its nonce with the user's key, refuses unknown users
//! and wrong keys with the same words, refuses a replayed answer, rate-limits
//! failures per source address and logs them. Over loopback, against the
//! real binary; the attacker speaks the protocol by hand.

mod common;
use common::hostile::connect_from;
use common::*;
use linkperf_proto::auth::{self, Key};
use linkperf_proto::session::ClientSession;
use linkperf_proto::{ClientMessage, Preamble, ServerMessage, TestConfig, PROTOCOL_VERSION};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// A users-file line made by `linkperf server --gen-key NAME`.
fn gen_key(name: &str) -> String {
    let run = linkperf(&["server", "--gen-key", name]);
    run.assert_success("--gen-key");
    run.stdout.trim().to_string()
}

fn write_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `linkperf client 127.0.0.1 -p PORT ARGS...` with `env` set.
fn client_env(port: u16, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(["client", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .env("LINKPERF_DB", test_archive())
        .env_remove("LINKPERF_KEY")
        .env_remove("LINKPERF_USER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    linkperf_testsupport::process::run(&mut cmd, CLIENT_WATCHDOG)
}

/// A hand-made control connection from `source`: hello, then the nonce.
struct Raw {
    stream: TcpStream,
    session: ClientSession,
    nonce: Option<Vec<u8>>,
}

impl Raw {
    fn open(source: &str, port: u16) -> Raw {
        let mut stream = connect_from(source, port).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream.write_all(&Preamble::Control.bytes()).unwrap();
        let mut raw = Raw {
            stream,
            session: ClientSession::new(),
            nonce: None,
        };
        raw.send(&ClientMessage::Hello {
            version: PROTOCOL_VERSION,
            software: "auth test".into(),
        });
        match raw.next() {
            Some(ServerMessage::Welcome { auth_nonce, .. }) => {
                raw.nonce = auth_nonce.map(|n| auth::from_hex(&n).unwrap())
            }
            other => panic!("no welcome: {other:?}"),
        }
        raw
    }

    fn send(&mut self, m: &ClientMessage) {
        let bytes = self.session.send(m).unwrap();
        self.stream.write_all(&bytes).unwrap();
    }

    fn next(&mut self) -> Option<ServerMessage> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let want = self.session.wanted().min(buf.len());
            let n = match self.stream.read(&mut buf[..want]) {
                Ok(n) => n,
                // Another test's child process ending signals this one.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("read: {e}");
                    return None;
                }
            };
            if n == 0 {
                eprintln!("read: closed");
                return None;
            }
            match self.session.receive(&buf[..n]) {
                Ok(ms) => {
                    if let Some(m) = ms.into_iter().next() {
                        return Some(m);
                    }
                }
                Err(e) => {
                    eprintln!("receive: {e}");
                    return None;
                }
            }
        }
    }

    /// Sends Auth with `answer`, then a set-up; returns the server's reply.
    fn try_test(&mut self, user: &str, answer: String) -> ServerMessage {
        self.send(&ClientMessage::Auth {
            user: user.into(),
            answer,
        });
        self.send(&ClientMessage::Setup {
            config: Box::new(TestConfig {
                duration_s: 0.2,
                ..Default::default()
            }),
        });
        self.next().unwrap_or_else(|| {
            panic!(
                "no answer to the set-up from {:?}",
                self.stream.local_addr()
            )
        })
    }
}

fn key_of(line: &str) -> Key {
    Key::parse(line.split_once(':').unwrap().1).unwrap()
}

fn error_of(m: &ServerMessage) -> String {
    match m {
        ServerMessage::Error { message } => message.clone(),
        other => panic!("want a refusal, got {other:?}"),
    }
}

#[test]
fn only_users_with_their_key_run_tests_and_failures_say_the_same() {
    let alice = gen_key("alice");
    let mallory = gen_key("mallory"); // not in the users file
    let users = write_file("users-1", &format!("# test users\n{alice}\n"));
    let server = Server::start_with(&["--auth-users", users.to_str().unwrap()]);

    let anonymous = client_env(server.port, &["-t", "0.5"], &[]);
    let line = anonymous.assert_one_line_failure(1);
    assert!(line.contains("requires authentication"), "{line}");

    let wrong_key = format!("alice:{}", mallory.split_once(':').unwrap().1);
    let wrong = client_env(server.port, &["-t", "0.5"], &[("LINKPERF_KEY", &wrong_key)]);
    let wrong_line = wrong.assert_one_line_failure(1).to_string();
    let unknown = client_env(server.port, &["-t", "0.5"], &[("LINKPERF_KEY", &mallory)]);
    let unknown_line = unknown.assert_one_line_failure(1).to_string();
    assert!(wrong_line.contains("authentication failed"), "{wrong_line}");
    // Whether the user exists is not told.
    assert_eq!(wrong_line, unknown_line);

    // The right key, from a key file: the test runs and counts its bytes.
    let key_file = write_file("alice.key", &alice);
    let bytes = 3 * 1024 * 1024;
    let ok = client_env(
        server.port,
        &["-n", "3M", "-J", "--key-file", key_file.to_str().unwrap()],
        &[],
    );
    let report = ok.report();
    assert_eq!(u64_at(&report, "/summary/received/bytes"), bytes);

    // The failures are logged with the user named; the key never is.
    let log = server.stderr_lines().join("\n");
    assert!(
        log.contains("auth-failed") && log.contains("'mallory'"),
        "{log}"
    );
    assert!(!log.contains(alice.split_once(':').unwrap().1), "{log}");
}

#[test]
fn a_replayed_or_rebound_answer_is_refused() {
    let alice = gen_key("alice");
    let users = write_file("users-2", &format!("{alice}\n"));
    let server = Server::start_with(&["--auth-users", users.to_str().unwrap()]);
    let key = key_of(&alice);

    // An eavesdropper saw a good answer to one nonce...
    let mut first = Raw::open("127.0.0.1", server.port);
    let nonce = first
        .nonce
        .clone()
        .expect("a server with users sends a nonce");
    assert_eq!(nonce.len(), auth::NONCE_LEN);
    let seen = auth::answer(&key, &nonce, "alice", &auth::purpose_test());
    assert!(matches!(
        first.try_test("alice", seen.clone()),
        ServerMessage::Ready { .. }
    ));
    drop(first);
    // ...and replays it on a new connection: another nonce, refused.
    let mut replay = Raw::open("127.0.0.1", server.port);
    assert_ne!(
        replay.nonce.as_ref(),
        Some(&nonce),
        "nonces must not repeat"
    );
    let why = error_of(&replay.try_test("alice", seen));
    assert!(why.contains("authentication failed"), "{why}");

    // An answer made for a plain test does not authorise a third-party one.
    let mut rebound = Raw::open("127.0.0.1", server.port);
    let n = rebound.nonce.clone().unwrap();
    rebound.send(&ClientMessage::Auth {
        user: "alice".into(),
        answer: auth::answer(&key, &n, "alice", &auth::purpose_test()),
    });
    rebound.send(&ClientMessage::ThirdParty {
        target: "127.0.0.1".into(),
        port: server.port,
        config: Box::default(),
    });
    let why = error_of(&rebound.next().unwrap());
    assert!(why.contains("authentication failed"), "{why}");
}

#[test]
fn failures_are_rate_limited_per_source_address() {
    let alice = gen_key("alice");
    let users = write_file("users-3", &format!("{alice}\n"));
    let server = Server::start_with(&["--auth-users", users.to_str().unwrap()]);
    let key = key_of(&alice);
    // Five wrong guesses from one address (the limit per minute)...
    for _ in 0..5 {
        let mut guess = Raw::open("127.0.0.9", server.port);
        let why = error_of(&guess.try_test("alice", "00".repeat(32)));
        assert!(why.contains("authentication failed"), "{why}");
    }
    // ...then even the right key is refused from there, unchecked.
    let mut right = Raw::open("127.0.0.9", server.port);
    let n = right.nonce.clone().unwrap();
    let why = error_of(&right.try_test("alice", auth::answer(&key, &n, "alice", "test")));
    assert!(why.contains("too many failed authentications"), "{why}");
    // Another address is not held back.
    let mut other = Raw::open("127.0.0.10", server.port);
    let n = other.nonce.clone().unwrap();
    assert!(matches!(
        other.try_test("alice", auth::answer(&key, &n, "alice", "test")),
        ServerMessage::Ready { .. }
    ));
    let log = server.stderr_lines().join("\n");
    assert!(
        log.contains("rate-limited") && log.contains("127.0.0.9"),
        "{log}"
    );
}

#[test]
fn required_for_third_party_only_leaves_plain_tests_open() {
    let alice = gen_key("alice");
    let users = write_file("users-4", &format!("{alice}\n"));
    let server = Server::start_with(&[
        "--allow-third-party",
        "--auth-users",
        users.to_str().unwrap(),
        "--auth-required-for",
        "third-party",
    ]);
    let plain = client_env(server.port, &["-n", "1M", "-J"], &[]).report();
    assert_eq!(u64_at(&plain, "/summary/received/bytes"), 1 << 20);
    let from = format!("127.0.0.1:{}", server.port);
    let relayed = client_env(server.port, &["--from", &from, "-t", "0.5"], &[]);
    let line = relayed.assert_one_line_failure(1);
    assert!(line.contains("requires authentication"), "{line}");
}

#[test]
fn iperf3_clients_are_refused_when_every_test_needs_a_user() {
    let alice = gen_key("alice");
    let users = write_file("users-5", &format!("{alice}\n"));
    let server = Server::start_with(&["--auth-users", users.to_str().unwrap()]);
    let mut conn = connect_from("127.0.0.1", server.port).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(&linkperf_proto::iperf3::make_cookie(&[b'a'; 36]))
        .unwrap();
    let mut state = [0u8; 1];
    conn.read_exact(&mut state).unwrap();
    assert_eq!(
        linkperf_proto::iperf3::State::from_byte(state[0]),
        Some(linkperf_proto::iperf3::State::AccessDenied)
    );
    let logged = poll(Duration::from_secs(5), Duration::from_millis(50), || {
        server
            .stderr_lines()
            .into_iter()
            .find(|l| l.contains("--auth-required-for all"))
    });
    assert!(logged.is_some(), "{:?}", server.stderr_lines());
}

#[test]
fn bad_auth_flags_are_one_line_usage_errors() {
    let users = write_file("users-bad", "alice 1234\n");
    let run = linkperf(&["server", "--auth-users", users.to_str().unwrap()]);
    let line = run.assert_one_line_failure(2);
    assert!(
        line.contains("line 1") && line.contains("NAME:KEY"),
        "{line}"
    );
    let run = linkperf(&["client", "127.0.0.1", "--username", "alice"]);
    let line = run.assert_one_line_failure(2);
    assert!(line.contains("--key-file"), "{line}");
    let run = linkperf(&["server", "--gen-key", "bad name"]);
    run.assert_one_line_failure(2);
}

/// `linkperf rr 127.0.0.1 -p PORT ARGS...` with `env` set (and no key from
/// the caller's environment).
fn rr_env(port: u16, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(["rr", "127.0.0.1", "-p", &port.to_string(), "--no-store"])
        .args(args)
        .env_remove("LINKPERF_KEY")
        .env_remove("LINKPERF_USER");
    for (k, v) in env {
        cmd.env(k, v);
    }
    linkperf_testsupport::process::run(&mut cmd, CLIENT_WATCHDOG)
}

#[test]
fn rr_clients_authenticate_with_a_key_and_are_refused_without() {
    let alice = gen_key("alice");
    let mallory = gen_key("mallory");
    let users = write_file("users-rr", &format!("{alice}\n"));
    let key_file = write_file("alice-rr.key", &alice);
    let server = Server::start_with(&["--auth-users", users.to_str().unwrap()]);

    // With the key: every transaction asked is made and answered, TCP and UDP.
    for proto in [&[][..], &["-u"][..]] {
        let mut args = vec!["-n", "300", "-J", "--key-file", key_file.to_str().unwrap()];
        args.extend_from_slice(proto);
        let run = rr_env(server.port, &args, &[]);
        run.assert_success("rr with a key");
        let v = run.json();
        assert_eq!(u64_at(&v, "/summary/transactions"), 300, "{proto:?}");
        assert_eq!(u64_at(&v, "/summary/server/transactions"), 300, "{proto:?}");
    }
    // From the environment, as campaigns pass it.
    let run = rr_env(
        server.port,
        &["-n", "50", "-J"],
        &[("LINKPERF_KEY", &alice)],
    );
    assert_eq!(u64_at(&run.json(), "/summary/transactions"), 50);

    let run = rr_env(server.port, &["-n", "50"], &[]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("requires authentication"), "{line}");
    let wrong_key = format!("alice:{}", mallory.split_once(':').unwrap().1);
    let run = rr_env(server.port, &["-n", "50"], &[("LINKPERF_KEY", &wrong_key)]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("authentication failed"), "{line}");
    let log = server.stderr_lines().join("\n");
    assert!(
        log.contains("auth-failed") && log.contains("'alice'"),
        "{log}"
    );
}
