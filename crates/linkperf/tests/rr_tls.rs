//! rr sessions over TLS (issue 17): `linkperf rr --tls-pin/--tls-ca` against
//! a `--tls-required --auth-users` server makes every transaction asked
//! (TCP and UDP; the data stays plain, the control connection and the
//! authentication answer travel inside TLS, the answer bound to the TLS
//! session); a plain rr client of that server and a wrong pin each get one
//! line, exit 1, and the server serves on. Real binary, loopback.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-rr-tls-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `linkperf server --tls-gen-cert DIR --tls-name 127.0.0.1`: the pin printed.
fn gen_cert(dir: &Path) -> String {
    let run = linkperf(&[
        "server",
        "--tls-gen-cert",
        dir.to_str().unwrap(),
        "--tls-name",
        "127.0.0.1",
    ]);
    run.assert_success("--tls-gen-cert");
    run.stdout.trim().rsplit(' ').next().unwrap().to_string()
}

/// `linkperf rr 127.0.0.1 -p PORT ARGS...` with nothing from the environment.
fn rr(port: u16, args: &[&str]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(["rr", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .env("LINKPERF_DB", test_archive())
        .env_remove("LINKPERF_KEY")
        .env_remove("LINKPERF_USER")
        .env_remove("LINKPERF_TLS_PIN")
        .env_remove("LINKPERF_TLS_CA");
    linkperf_testsupport::process::run(&mut cmd, CLIENT_WATCHDOG)
}

#[test]
fn rr_sessions_run_over_tls_and_plain_ones_are_refused_when_tls_is_required() {
    let dir = scratch("rr");
    let pin = gen_cert(&dir);
    let alice = linkperf(&["server", "--gen-key", "alice"]);
    let alice = alice.stdout.trim();
    let users = dir.join("users");
    let key = dir.join("alice.key");
    std::fs::write(&users, format!("{alice}\n")).unwrap();
    std::fs::write(&key, alice).unwrap();
    let (cert, tls_key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let server = Server::start_with(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        tls_key.to_str().unwrap(),
        "--tls-required",
        "--auth-users",
        users.to_str().unwrap(),
    ]);
    let key = key.to_str().unwrap();

    // By pin and by CA, TCP and UDP: every transaction asked, on both ends.
    let ca = ["--tls-ca", cert.to_str().unwrap()];
    let by_pin = ["--tls-pin", pin.as_str()];
    for (trust, proto) in [
        (&by_pin, &[][..]),
        (&ca, &["-u"][..]),
        (&by_pin, &["-u"][..]),
    ] {
        let mut args = vec!["-n", "400", "-J", "--key-file", key];
        args.extend_from_slice(trust);
        args.extend_from_slice(proto);
        let run = rr(server.port, &args);
        run.assert_success("rr over TLS");
        let v = run.json();
        assert_eq!(
            u64_at(&v, "/summary/transactions"),
            400,
            "{trust:?} {proto:?}"
        );
        assert_eq!(
            u64_at(&v, "/summary/server/transactions"),
            400,
            "{trust:?} {proto:?}"
        );
    }

    // A plain rr client of a --tls-required server: one line naming the flag.
    let run = rr(server.port, &["-n", "10", "--key-file", key]);
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("--tls-required"), "{line}");

    // A wrong pin: one line, and the server has not been reached past TLS.
    let wrong = "00".repeat(32);
    let run = rr(
        server.port,
        &["-n", "10", "--key-file", key, "--tls-pin", &wrong],
    );
    let line = run.assert_one_line_failure(1);
    assert!(line.contains("TLS"), "{line}");

    // Still serving.
    let mut args = vec!["-n", "50", "-J", "--key-file", key];
    args.extend_from_slice(&by_pin);
    let v = rr(server.port, &args).json();
    assert_eq!(u64_at(&v, "/summary/server/transactions"), 50);
}
