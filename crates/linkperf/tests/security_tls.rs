//! TLS on the control connection (issue 17): a TLS client runs a test that
//! moves exactly the bytes asked; a wrong CA, a wrong pin, a plain client of
//! a `--tls-required` server and a TLS client of a server without TLS each
//! fail with one line while the server keeps serving; a relay that
//! terminates the client's TLS and opens its own towards the server cannot
//! get the client's authentication answer accepted (the answer is bound to
//! the TLS session). Real sockets on loopback, the real binary; the relay is
//! built from the library's TLS channels.

mod common;
use common::*;
use linkperf::tls::{self, Channel, ClientTls, ServerTls};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-tls-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `linkperf server --tls-gen-cert DIR --tls-name NAMES`; returns the pin
/// it printed, checked against the SHA-256 of the certificate's DER as
/// `openssl` computes it.
fn gen_cert(dir: &Path, names: &str) -> String {
    let run = linkperf(&[
        "server",
        "--tls-gen-cert",
        dir.to_str().unwrap(),
        "--tls-name",
        names,
    ]);
    run.assert_success("--tls-gen-cert");
    let pin = run.stdout.trim().rsplit(' ').next().unwrap().to_string();
    let sum = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -outform der -in {} | sha256sum",
            dir.join("cert.pem").display()
        ))
        .output()
        .unwrap();
    let sum = String::from_utf8_lossy(&sum.stdout);
    assert_eq!(sum.split_whitespace().next().unwrap(), pin, "pin");
    pin
}

fn gen_key(name: &str) -> String {
    let run = linkperf(&["server", "--gen-key", name]);
    run.assert_success("--gen-key");
    run.stdout.trim().to_string()
}

fn tls_server(dir: &Path, extra: &[&str]) -> Server {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    let mut args = vec![
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Server::start_with(&args)
}

/// `linkperf client 127.0.0.1 -p PORT ARGS...` without credentials or TLS
/// from the environment.
/// The test's own archive and none of the caller's keys or TLS trust.
fn without_credentials(cmd: &mut Command) {
    cmd.env("LINKPERF_DB", test_archive())
        .env_remove("LINKPERF_KEY")
        .env_remove("LINKPERF_USER")
        .env_remove("LINKPERF_TLS_PIN")
        .env_remove("LINKPERF_TLS_CA");
}

fn client_clean(port: u16, args: &[&str]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(["client", "127.0.0.1", "-p", &port.to_string()])
        .args(args);
    without_credentials(&mut cmd);
    linkperf_testsupport::process::run(&mut cmd, CLIENT_WATCHDOG)
}

#[test]
fn a_tls_client_runs_a_test_of_exactly_the_bytes_asked() {
    let dir = scratch("bytes");
    let pin = gen_cert(&dir, "127.0.0.1");
    let alice = gen_key("alice");
    std::fs::write(dir.join("users"), format!("{alice}\n")).unwrap();
    std::fs::write(dir.join("alice.key"), &alice).unwrap();
    let users = dir.join("users");
    let server = tls_server(
        &dir,
        &["--tls-required", "--auth-users", users.to_str().unwrap()],
    );
    assert!(
        server
            .wait_stdout(Duration::from_secs(2), |l| l.contains(&pin))
            .is_some(),
        "the server prints its pin"
    );
    let key = dir.join("alice.key");
    let bytes: u64 = 5 * 1024 * 1024;
    // Trusted by pin, and by the certificate as a CA for the address.
    for trust in [
        ["--tls-pin", pin.as_str()],
        ["--tls-ca", dir.join("cert.pem").to_str().unwrap()],
    ] {
        let mut args = vec!["-n", "5M", "-J", "--key-file", key.to_str().unwrap()];
        args.extend_from_slice(&trust);
        let report = client_clean(server.port, &args).report();
        assert_eq!(
            u64_at(&report, "/summary/received/bytes"),
            bytes,
            "{trust:?}"
        );
        assert_eq!(u64_at(&report, "/summary/sent/bytes"), bytes, "{trust:?}");
    }
    // Reverse too: the server sends exactly the bytes asked.
    let report = client_clean(
        server.port,
        &[
            "-n",
            "2M",
            "-R",
            "-J",
            "--tls-pin",
            &pin,
            "--key-file",
            key.to_str().unwrap(),
        ],
    )
    .report();
    assert_eq!(u64_at(&report, "/summary/received/bytes"), 2 * 1024 * 1024);
}

#[test]
fn a_wrong_ca_a_wrong_pin_or_a_plain_client_gets_one_line_and_the_server_serves_on() {
    let dir = scratch("wrong");
    let pin = gen_cert(&dir, "127.0.0.1");
    let other = scratch("wrong-other");
    let other_pin = gen_cert(&other, "127.0.0.1");
    let server = tls_server(&dir, &["--tls-required"]);

    let other_ca = other.join("cert.pem");
    let run = client_clean(
        server.port,
        &["-t", "0.3", "--tls-ca", other_ca.to_str().unwrap()],
    );
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("not signed by a CA in --tls-ca"), "{line}");

    let run = client_clean(server.port, &["-t", "0.3", "--tls-pin", &other_pin]);
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("not the one pinned with --tls-pin") && line.contains(&pin),
        "{line}"
    );

    let run = client_clean(server.port, &["-t", "0.3"]);
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("requires TLS") && line.contains("--tls-required"),
        "{line}"
    );

    // The certificate names another host than the one connected to.
    let named = scratch("wrong-name");
    gen_cert(&named, "example.invalid");
    let by_name = tls_server(&named, &[]);
    let ca = named.join("cert.pem");
    let run = client_clean(
        by_name.port,
        &["-t", "0.3", "--tls-ca", ca.to_str().unwrap()],
    );
    let line = run.assert_one_line_failure(1);
    assert!(
        line.contains("not valid for the name '127.0.0.1'"),
        "{line}"
    );

    // A TLS client of a server without TLS.
    let plain = Server::start();
    let run = client_clean(plain.port, &["-t", "0.3", "--tls-pin", &pin]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("--tls-cert"), "{line}");

    // Every refusal is logged with its reason, and the server serves on.
    let log = server.stderr_lines().join("\n");
    assert!(log.contains("TLS handshake failed"), "{log}");
    assert!(
        log.contains("plain control connection (--tls-required)"),
        "{log}"
    );
    let report = client_clean(server.port, &["-n", "1M", "-J", "--tls-pin", &pin]).report();
    assert_eq!(u64_at(&report, "/summary/received/bytes"), 1024 * 1024);
}

/// Moves bytes one way between two channels until either end closes.
fn pump(mut from: Channel, mut to: Channel, seen: Arc<Mutex<Vec<u8>>>, done: Arc<AtomicBool>) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    done.store(true, Ordering::Release);
    to.shutdown();
    from.shutdown();
}

/// A man in the middle the client trusts (its own certificate, pinned by
/// the client): it terminates the client's TLS, opens its own TLS session
/// to the server and relays the plaintext both ways, recording what the
/// client sent.
fn relay(own: ServerTls, server_port: u16, server_pin: &str) -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let towards = ClientTls::with_pins(server_pin, "--tls-pin").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        let (mut client, _) = listener.accept().unwrap();
        let mut first = [0u8; 4];
        client.read_exact(&mut first).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let near = tls::accept(client, &first, &own, deadline).unwrap();
        let far_tcp = TcpStream::connect(("127.0.0.1", server_port)).unwrap();
        let far = tls::connect(far_tcp, &towards, "127.0.0.1", Duration::from_secs(10)).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let (near2, far2) = (near.try_clone().unwrap(), far.try_clone().unwrap());
        let (s, d) = (Arc::new(Mutex::new(Vec::new())), done.clone());
        std::thread::spawn(move || pump(far2, near2, s, d));
        pump(near, far, record, done);
    });
    (port, seen)
}

#[test]
fn a_relay_terminating_tls_cannot_reuse_the_clients_answer() {
    let dir = scratch("relay");
    let pin = gen_cert(&dir, "127.0.0.1");
    let relay_dir = scratch("relay-own");
    let relay_pin = gen_cert(&relay_dir, "127.0.0.1");
    let alice = gen_key("alice");
    std::fs::write(dir.join("users"), format!("{alice}\n")).unwrap();
    std::fs::write(dir.join("alice.key"), &alice).unwrap();
    let (users, key) = (dir.join("users"), dir.join("alice.key"));
    let server = tls_server(
        &dir,
        &["--tls-required", "--auth-users", users.to_str().unwrap()],
    );
    let own = ServerTls::load(
        &relay_dir.join("cert.pem"),
        &relay_dir.join("key.pem"),
        false,
    )
    .unwrap();

    // The key is good: directly, the test runs.
    let direct = client_clean(
        server.port,
        &[
            "-n",
            "1M",
            "-J",
            "--tls-pin",
            &pin,
            "--key-file",
            key.to_str().unwrap(),
        ],
    );
    assert_eq!(u64_at(&direct.report(), "/summary/received/bytes"), 1 << 20);

    // Through the relay (which the client trusts by mistake) the same
    // client's answer reaches the server unchanged, and is refused.
    let (relay_port, seen) = relay(own, server.port, &pin);
    let run = client_clean(
        relay_port,
        &[
            "-n",
            "1M",
            "--tls-pin",
            &relay_pin,
            "--key-file",
            key.to_str().unwrap(),
        ],
    );
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("authentication failed"), "{line}");
    let seen = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    assert!(
        seen.contains("\"auth\"") && seen.contains("\"alice\""),
        "the relay saw the answer: {seen}"
    );
    let log = server.stderr_lines().join("\n");
    assert!(
        log.contains("auth-failed") && log.contains("'alice'"),
        "{log}"
    );
}

/// `linkperf client --from 127.0.0.1:AGENT 127.0.0.1 -p TARGET ARGS...`.
fn relayed(agent: u16, target: u16, args: &[&str]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(["client", "--from", &format!("127.0.0.1:{agent}")])
        .args(["127.0.0.1", "-p", &target.to_string()])
        .args(args);
    without_credentials(&mut cmd);
    linkperf_testsupport::process::run(&mut cmd, CLIENT_WATCHDOG)
}

#[test]
fn an_agent_uses_its_own_user_and_tls_towards_a_target_that_requires_them() {
    let dir = scratch("agent");
    let target_pin = gen_cert(&dir, "127.0.0.1");
    let agent_dir = scratch("agent-own");
    let agent_pin = gen_cert(&agent_dir, "127.0.0.1");
    let agent_user = gen_key("agent1");
    std::fs::write(dir.join("users"), format!("{agent_user}\n")).unwrap();
    std::fs::write(dir.join("agent1.key"), &agent_user).unwrap();
    let (users, key) = (dir.join("users"), dir.join("agent1.key"));
    let target = tls_server(
        &dir,
        &["--tls-required", "--auth-users", users.to_str().unwrap()],
    );
    // The controller reaches the agent over TLS too.
    let agent = tls_server(
        &agent_dir,
        &[
            "--allow-third-party",
            "--third-party-key-file",
            key.to_str().unwrap(),
            "--third-party-tls-pin",
            &target_pin,
        ],
    );
    let run = relayed(
        agent.port,
        target.port,
        &["-n", "3M", "-J", "--tls-pin", &agent_pin],
    );
    let report = run.report();
    assert_eq!(u64_at(&report, "/summary/received/bytes"), 3 << 20);
    assert_eq!(u64_at(&report, "/summary/sent/bytes"), 3 << 20);

    // The same agent set-up without its key file: the target refuses it.
    let keyless = tls_server(
        &agent_dir,
        &["--allow-third-party", "--third-party-tls-pin", &target_pin],
    );
    let run = relayed(
        keyless.port,
        target.port,
        &["-n", "1M", "--tls-pin", &agent_pin],
    );
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("requires authentication"), "{line}");
    let log = target.stderr_lines().join("\n");
    assert!(log.contains("requires authentication"), "{log}");
}
