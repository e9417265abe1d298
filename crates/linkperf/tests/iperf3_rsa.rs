//! iperf3's RSA authentication (issue 17) against the real iperf3 (Debian's
//! 3.12): stock iperf3 clients with `--username --rsa-public-key-path`
//! against a linkperf server with `--rsa-private-key-path
//! --authorized-users-path`, and `linkperf client --iperf3` against a stock
//! `iperf3 -s` with the same options. Keys are made in the test by openssl,
//! the users file by sha256 of `{USER}PASSWORD` as iperf3's manual says.

mod common;
use common::hostile::iperf3_params;
use common::*;
use linkperf::iperf3::auth::{encode_token, load_public_key, unix_now, Padding};
use linkperf_proto::iperf3::State;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// iperf3's error number for "test authorization failed" (IEAUTHTEST).
const IEAUTHTEST: i32 = 142;

fn tools_installed(test: &str) -> bool {
    for tool in [IPERF3, "/usr/bin/openssl"] {
        if !Path::new(tool).exists() {
            linkperf_testsupport::skip(&format!("{test}: {tool} is not installed"));
            return false;
        }
    }
    true
}

/// A scratch directory with an RSA key pair made by openssl and a users
/// file for mario (password rossi) and luigi (password verdi).
struct Keys {
    dir: PathBuf,
    private: PathBuf,
    public: PathBuf,
    users: PathBuf,
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn users_line(user: &str, password: &str) -> String {
    let hash = Sha256::digest(format!("{{{user}}}{password}").as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("{user},{hex}\n")
}

impl Keys {
    fn make(name: &str) -> Keys {
        let dir = std::env::temp_dir().join(format!("lp-rsa-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let private = dir.join("private.pem");
        let public = dir.join("public.pem");
        openssl(&["genrsa", "-out", private.to_str().unwrap(), "2048"]);
        openssl(&[
            "rsa",
            "-in",
            private.to_str().unwrap(),
            "-outform",
            "PEM",
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ]);
        let users = dir.join("users.csv");
        let text = format!(
            "# iperf3 users\n{}{}",
            users_line("mario", "rossi"),
            users_line("luigi", "verdi")
        );
        std::fs::write(&users, text).unwrap();
        Keys {
            dir,
            private,
            public,
            users,
        }
    }

    fn server_args(&self) -> Vec<String> {
        vec![
            "--rsa-private-key-path".into(),
            self.private.display().to_string(),
            "--authorized-users-path".into(),
            self.users.display().to_string(),
        ]
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `iperf3 -c 127.0.0.1 -p PORT ARGS...` with IPERF3_PASSWORD set (or not).
fn iperf3_client(port: u16, args: &[&str], password: Option<&str>) -> Run {
    let mut cmd = Command::new(IPERF3);
    cmd.args(["-c", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .env_remove("IPERF3_PASSWORD");
    if let Some(p) = password {
        cmd.env("IPERF3_PASSWORD", p);
    }
    wait_child(spawn_piped(&mut cmd), CLIENT_WATCHDOG)
}

/// The server's log lines that contain `what`.
fn log_lines(server: &Server, what: &str) -> Vec<String> {
    server
        .stdout_lines()
        .into_iter()
        .chain(server.stderr_lines())
        .filter(|l| l.contains(what))
        .collect()
}

/// Waits for the server to log a line containing `what`.
fn logged(server: &Server, what: &str) -> String {
    poll(Duration::from_secs(10), Duration::from_millis(20), || {
        log_lines(server, what).into_iter().next()
    })
    .unwrap_or_else(|| {
        panic!(
            "the server never logged '{what}': {:?} {:?}",
            server.stdout_lines(),
            server.stderr_lines()
        )
    })
}

fn assert_refused(run: &Run, what: &str) {
    assert_eq!(run.code(), Some(1), "{what}: {}{}", run.stdout, run.stderr);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains("test authorization failed"),
        "{what}: iperf3 did not print its own refusal: {all}"
    );
}

#[test]
fn iperf3_clients_authenticate_with_rsa_tokens() {
    if !tools_installed("iperf3_clients_authenticate_with_rsa_tokens") {
        return;
    }
    let keys = Keys::make("server");
    let mut args = keys.server_args();
    // A users file of linkperf's own too: iperf3 clients answer with RSA.
    let own_users = keys.dir.join("linkperf-users");
    let line = linkperf(&["server", "--gen-key", "alice"]);
    std::fs::write(&own_users, line.stdout).unwrap();
    args.extend(["--auth-users".into(), own_users.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = Server::start_with(&args);
    let public = keys.public.to_str().unwrap();
    let port = server.port;

    let plain = iperf3_client(port, &["-n", "1M"], None);
    assert_refused(&plain, "no --username");
    logged(&server, "no authentication token");

    let auth = [
        "-n",
        "1M",
        "--username",
        "mario",
        "--rsa-public-key-path",
        public,
    ];
    assert_refused(
        &iperf3_client(port, &auth, Some("bianchi")),
        "wrong password",
    );
    logged(&server, "user 'mario': wrong password");

    let unknown = [
        "-n",
        "1M",
        "--username",
        "peach",
        "--rsa-public-key-path",
        public,
    ];
    assert_refused(
        &iperf3_client(port, &unknown, Some("rossi")),
        "unknown user",
    );
    logged(&server, "unknown user 'peach'");

    // The server kept serving: the right password runs the test, exactly.
    let good = [
        "-n",
        "3M",
        "--username",
        "mario",
        "--rsa-public-key-path",
        public,
        "-J",
    ];
    let run = iperf3_client(port, &good, Some("rossi"));
    let report = run.assert_success("iperf3 with the right password").json();
    assert_eq!(u64_at(&report, "/end/sum_sent/bytes"), 3 << 20);
    let done = logged(&server, "(iperf3 user 'mario')");
    assert!(
        done.contains(&format!("received {} bytes", 3 << 20)),
        "{done}"
    );
    assert_eq!(log_lines(&server, "auth-failed").len(), 3);
    assert!(server.is_running());

    // A linkperf client without a key is still refused: --auth-users holds.
    let refused = client(port, &["-n", "1M", "--no-store"]);
    assert_eq!(refused.code(), Some(1), "{}", refused.stderr);
}

/// A token stamped outside --time-skew-threshold (iperf3 stamps its own with
/// the clock, so the test makes one with linkperf's encoder, which the unit
/// tests check against the format iperf3's source gives).
#[test]
fn a_stale_token_is_refused_and_a_fresh_one_admitted() {
    if !tools_installed("a_stale_token_is_refused_and_a_fresh_one_admitted") {
        return;
    }
    let keys = Keys::make("skew");
    let mut args = keys.server_args();
    args.extend(["--time-skew-threshold".into(), "5".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start_with(&args);
    let public = load_public_key(&keys.public).unwrap();
    let params = |ts: i64| {
        let token = encode_token("luigi", "verdi", ts, &public, Padding::Pkcs1).unwrap();
        format!(
            r#"{{"tcp":true,"omit":0,"time":1,"parallel":1,"len":131072,"authtoken":"{token}"}}"#
        )
    };
    let (_c, state, errno) = iperf3_params(server.port, &params(unix_now() - 60));
    assert_eq!((state, errno), (State::ServerError, Some(IEAUTHTEST)));
    let line = logged(&server, "beyond --time-skew-threshold 5");
    assert!(line.contains("user 'luigi'"), "{line}");
    let (_c, state, errno) = iperf3_params(server.port, &params(unix_now() + 60));
    assert_eq!((state, errno), (State::ServerError, Some(IEAUTHTEST)));
    // Within the threshold the server goes on to create the streams.
    let (_c, state, errno) = iperf3_params(server.port, &params(unix_now() - 2));
    assert_eq!((state, errno), (State::CreateStreams, None));
}

#[test]
fn bad_key_and_users_files_are_one_line_usage_errors() {
    if !tools_installed("bad_key_and_users_files_are_one_line_usage_errors") {
        return;
    }
    let keys = Keys::make("bad");
    let private = keys.private.to_str().unwrap();
    let users = keys.users.to_str().unwrap();
    let ec = keys.dir.join("ec.pem");
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        ec.to_str().unwrap(),
    ]);
    let broken = keys.dir.join("broken.csv");
    std::fs::write(&broken, format!("{}mario\n", users_line("luigi", "verdi"))).unwrap();
    let missing = keys.dir.join("missing.pem");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec![
                "--rsa-private-key-path",
                missing.to_str().unwrap(),
                "--authorized-users-path",
                users,
            ],
            format!("{}: cannot read it", missing.display()),
        ),
        (
            vec![
                "--rsa-private-key-path",
                ec.to_str().unwrap(),
                "--authorized-users-path",
                users,
            ],
            "not an RSA private key".into(),
        ),
        (
            vec![
                "--rsa-private-key-path",
                keys.public.to_str().unwrap(),
                "--authorized-users-path",
                users,
            ],
            "a public key".into(),
        ),
        (
            vec![
                "--rsa-private-key-path",
                private,
                "--authorized-users-path",
                broken.to_str().unwrap(),
            ],
            format!("{}:2: expected USER,SHA256HEX", broken.display()),
        ),
        (
            vec!["--rsa-private-key-path", private],
            "--authorized-users-path".into(),
        ),
        (
            vec![
                "--rsa-private-key-path",
                private,
                "--authorized-users-path",
                users,
                "--time-skew-threshold",
                "0",
            ],
            "--time-skew-threshold".into(),
        ),
    ];
    for (args, want) in cases {
        let port = free_port().to_string();
        let mut all = vec!["server", "-B", "127.0.0.1", "-p", &port];
        all.extend(args.iter().copied());
        let run = wait_child(
            spawn_piped(Command::new(bin()).args(&all)),
            Duration::from_secs(10),
        );
        let line = run.assert_one_line_failure(2);
        assert!(line.contains(&want), "{args:?}: wanted '{want}' in {line}");
    }
    // A client's --username towards an iperf3 server names the RSA key it lacks.
    let run = wait_child(
        spawn_piped(Command::new(bin()).args([
            "client",
            "127.0.0.1",
            "--iperf3",
            "--username",
            "mario",
        ])),
        Duration::from_secs(10),
    );
    let line = run.assert_one_line_failure(2);
    assert!(line.contains("--rsa-public-key-path"), "{line}");
}

// ---------- linkperf client -> iperf3 server ----------

/// Starts `iperf3 -s -1 -p PORT ARGS...` and waits until it listens.
fn iperf3_server(args: &[String]) -> (std::process::Child, u16) {
    let mut all = vec!["-1"];
    all.extend(args.iter().map(String::as_str));
    iperf3_server_with(&all)
}

fn linkperf_client(port: u16, args: &[&str], password: &str) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args([
        "client",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--iperf3",
        "--no-store",
    ])
    .args(args)
    .env("IPERF3_PASSWORD", password)
    .env_remove("LINKPERF_KEY")
    .env_remove("LINKPERF_USER");
    wait_child(spawn_piped(&mut cmd), CLIENT_WATCHDOG)
}

#[test]
fn linkperf_client_authenticates_to_an_iperf3_server() {
    if !tools_installed("linkperf_client_authenticates_to_an_iperf3_server") {
        return;
    }
    let keys = Keys::make("client");
    let public = keys.public.to_str().unwrap();
    let auth = ["--username", "mario", "--rsa-public-key-path", public];

    let (server, port) = iperf3_server(&keys.server_args());
    let mut args = vec!["-n", "2M", "-J"];
    args.extend(auth);
    let ours = linkperf_client(port, &args, "rossi");
    let theirs = wait_child(server, CLIENT_WATCHDOG);
    let report = ours.report();
    assert_eq!(u64_at(&report, "/summary/sent/bytes"), 2 << 20);
    assert_eq!(
        theirs.code(),
        Some(0),
        "iperf3 -s: {}{}",
        theirs.stdout,
        theirs.stderr
    );

    let (server, port) = iperf3_server(&keys.server_args());
    let mut args = vec!["-n", "2M"];
    args.extend(auth);
    let server = KillOnDrop(server);
    let refused = linkperf_client(port, &args, "bianchi");
    drop(server);
    let line = refused.assert_one_line_failure(1);
    assert!(line.contains("test authorization failed"), "{line}");
}
