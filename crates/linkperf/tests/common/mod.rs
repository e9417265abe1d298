//! Shared helpers for linkperf's integration tests: a real `linkperf server`
//! child process on loopback, a client runner with a watchdog, validation
//! against the schema files in `schema/`. What other crates' tests share too
//! (processes with a time limit, JSON getters, testbeds) lives in
//! `linkperf-testsupport` and is re-exported here.

#![allow(dead_code, unused_imports)]

pub mod campaign;
pub mod hostile;
pub mod pingpong;
pub mod seeds;
pub mod served;
pub mod sweep;

pub use linkperf_testsupport::bed::CliBed;
pub use linkperf_testsupport::json::{array_at, f64_at, u64_at};
pub use linkperf_testsupport::process::{
    free_port, output_ok, poll, refusing_port, send_signal, spawn_piped, wait_child, KillOnDrop,
    Run,
};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Longest any single client run may take before the test gives up on it.
pub const CLIENT_WATCHDOG: Duration = Duration::from_secs(40);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_linkperf")
}

/// `linkperf-server`: the server alone, in a binary of its own.
pub fn server_bin() -> &'static str {
    env!("CARGO_BIN_EXE_linkperf-server")
}

/// A `linkperf server` child process; killed when dropped.
pub struct Server {
    pub port: u16,
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

fn collect_lines(pipe: impl Read + Send + 'static, into: Arc<Mutex<Vec<String>>>) {
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            into.lock().unwrap().push(line);
        }
    });
}

impl Server {
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Starts `linkperf server -p PORT -B 127.0.0.1 EXTRA...` and waits until
    /// it announces that it listens (retrying on a port race).
    pub fn start_with(extra: &[&str]) -> Server {
        Server::start_on("127.0.0.1", extra)
    }

    /// Starts a server bound to `bind` (a loopback address).
    pub fn start_on(bind: &str, extra: &[&str]) -> Server {
        Server::start_program(&[bin(), "server"], bind, extra)
    }

    /// Starts `linkperf-server -p PORT -B 127.0.0.1 EXTRA...`.
    pub fn start_lean(extra: &[&str]) -> Server {
        Server::start_program(&[server_bin()], "127.0.0.1", extra)
    }

    /// Starts `program` (the binary and its leading arguments) as a server.
    fn start_program(program: &[&str], bind: &str, extra: &[&str]) -> Server {
        for _ in 0..5 {
            let port = free_port();
            let mut child = spawn_piped(
                Command::new(program[0])
                    .args(&program[1..])
                    .args(["-p", &port.to_string(), "-B", bind])
                    .args(extra),
            );
            let stdout = Arc::new(Mutex::new(Vec::new()));
            let stderr = Arc::new(Mutex::new(Vec::new()));
            collect_lines(child.stdout.take().unwrap(), stdout.clone());
            collect_lines(child.stderr.take().unwrap(), stderr.clone());
            let mut server = Server {
                port,
                child,
                stdout,
                stderr,
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if server
                    .stdout_lines()
                    .iter()
                    .any(|l| l.contains("listening on"))
                {
                    return server;
                }
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // port taken in between: try another
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("{} did not start", program.join(" "));
    }

    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until a stdout line satisfies `pred`, returning it.
    pub fn wait_stdout(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        poll(timeout, Duration::from_millis(20), || {
            self.stdout_lines().into_iter().find(|l| pred(l))
        })
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The server's pid, for signals.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn connect(&self) -> TcpStream {
        TcpStream::connect(("127.0.0.1", self.port)).expect("connect to server")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn spawn(args: &[&str]) -> Child {
    spawn_command(Command::new(bin()).args(args))
}

/// `spawn` at nice -20 (the tests run as root): first in line for a CPU among a loaded
/// machine's ordinary tasks, for a test of the tool's pacing rather than of the host.
pub fn spawn_first_in_line(args: &[&str]) -> Child {
    spawn_command(
        Command::new("nice")
            .args(["-n", "-20"])
            .arg(bin())
            .args(args),
    )
}

fn spawn_command(cmd: &mut Command) -> Child {
    cmd
        // Clients store their results: keep the tests' runs out of the user's archive.
        .env("LINKPERF_DB", test_archive())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn linkperf")
}

/// The archive the tests' clients store into unless a test gives `--db`.
pub fn test_archive() -> PathBuf {
    std::env::var_os("LINKPERF_DB")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("linkperf-tests-archive.db"))
}

/// Runs `linkperf ARGS...` to completion.
pub fn linkperf(args: &[&str]) -> Run {
    wait_child(spawn(args), CLIENT_WATCHDOG)
}

/// Runs `linkperf-server ARGS...` to completion (usage errors, help).
pub fn run_lean(args: &[&str]) -> Run {
    let child = spawn_piped(Command::new(server_bin()).args(args).stdin(Stdio::null()));
    wait_child(child, CLIENT_WATCHDOG)
}

/// Spawns `linkperf client 127.0.0.1 -p PORT ARGS...`.
pub fn spawn_client(port: u16, args: &[&str]) -> Child {
    let port = port.to_string();
    let mut all = vec!["client", "127.0.0.1", "-p", &port];
    all.extend_from_slice(args);
    spawn(&all)
}

/// Runs `linkperf client 127.0.0.1 -p PORT ARGS...` to completion.
pub fn client(port: u16, args: &[&str]) -> Run {
    wait_child(spawn_client(port, args), CLIENT_WATCHDOG)
}

/// Runs a client with `-J` and returns its successful report.
pub fn client_json(port: u16, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("-J");
    client(port, &all).report()
}

/// Runs `linkperf ARGS...` in `host` of a testbed to completion (120 s at
/// most), storing into the tests' archive unless ARGS name another.
pub fn linkperf_in(bed: &CliBed, host: &str, args: &[&str]) -> Run {
    let mut cmd = bed.exec(host, bin());
    cmd.args(args).env("LINKPERF_DB", test_archive());
    linkperf_testsupport::process::run(&mut cmd, Duration::from_secs(120))
}

/// A client run against a server of its own, started on loopback for this
/// one run and stopped after it.
pub fn loopback_client(args: &[&str]) -> Run {
    let server = Server::start();
    client(server.port, args)
}

/// A client's successful `-J` report against a server of its own.
pub fn loopback_json(args: &[&str]) -> Value {
    let server = Server::start();
    client_json(server.port, args)
}

/// Asserts that the rate at `pointer` in a report is `want` bit/s within
/// `tolerance` (a fraction of `want`).
pub fn assert_rate(report: &Value, pointer: &str, want: f64, tolerance: f64) {
    let bps = f64_at(report, pointer);
    assert!(
        (bps - want).abs() <= tolerance * want,
        "{pointer}: {bps} bit/s, want {want} bit/s +-{}%",
        tolerance * 100.0
    );
}

pub fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema")
}

/// Validates `instance` against a schema file in `schema/`, returning the
/// validator's explanation on failure.
pub fn check_schema(file: &str, instance: &Value) -> Result<(), String> {
    let path = schema_dir().join(file);
    let path = path
        .canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    let index = compiler
        .compile(path.to_str().unwrap(), &mut schemas)
        .unwrap_or_else(|e| panic!("schema {file} does not compile: {e:#}"));
    schemas
        .validate(instance, index)
        .map_err(|e| format!("{e:#}"))
}

/// Asserts that `instance` validates against the `-J` document schema.
pub fn assert_valid(instance: &Value) {
    if let Err(e) = check_schema("linkperf-1.schema.json", instance) {
        panic!("document does not match schema/linkperf-1.schema.json:\n{e}");
    }
}

/// Asserts that one `--json-stream` line validates against the stream schema.
pub fn assert_valid_stream_line(instance: &Value) {
    if let Err(e) = check_schema("linkperf-1-stream.schema.json", instance) {
        panic!("line does not match schema/linkperf-1-stream.schema.json:\n{e}");
    }
}

/// What the kernel grants a fresh TCP socket for SO_SNDBUF / SO_RCVBUF requests,
/// read back with getsockopt: the independent expectation for `-w` and friends.
pub fn kernel_grants(sndbuf: Option<usize>, rcvbuf: Option<usize>) -> (u64, u64) {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if let Some(v) = sndbuf {
        s.set_send_buffer_size(v).unwrap();
    }
    if let Some(v) = rcvbuf {
        s.set_recv_buffer_size(v).unwrap();
    }
    (
        s.send_buffer_size().unwrap() as u64,
        s.recv_buffer_size().unwrap() as u64,
    )
}

pub fn read_proc(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

pub fn available_congestion_controls() -> Vec<String> {
    read_proc("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// Testbed tests of one binary run one at a time (they build namespaces and
/// measure throughput): the turn, or None (with a skip line naming the
/// running test) when not root.
pub fn testbed_turn() -> Option<std::sync::MutexGuard<'static, ()>> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    if linkperf_testbed::require_root().is_err() {
        linkperf_testsupport::skip(
            "testbed tests need root (namespaces, TAP devices); CI runs them as root",
        );
        return None;
    }
    Some(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Whether Debian's libns3-dev is installed; prints the skip with its reason when not.
pub fn ns3_installed() -> bool {
    let there = std::path::Path::new("/usr/include/ns3/core-module.h").is_file();
    if !there {
        linkperf_testsupport::skip("ns-3 is not installed (apt-get install libns3-dev g++)");
    }
    there
}

/// "ns-3 VERSION" of the installed package (Debian's ns3-core.pc, without
/// the Debian revision).
pub fn installed_ns3_source() -> String {
    let pc = std::fs::read_to_string("/usr/lib/x86_64-linux-gnu/pkgconfig/ns3-core.pc")
        .expect("ns3-core.pc");
    let version = pc
        .lines()
        .find_map(|l| l.strip_prefix("Version:"))
        .expect("Version line")
        .trim();
    format!("ns-3 {}", version.split('-').next().unwrap())
}

/// Debian's iperf3, the peer of the interoperability tests.
pub const IPERF3: &str = "/usr/bin/iperf3";

/// Starts `iperf3 -s -p PORT ARGS...` on a free port and waits (up to 5 s) until it
/// listens, seen in /proc/net/tcp without connecting: with `-1` any connection is its
/// one test.
pub fn iperf3_server_with(args: &[&str]) -> (Child, u16) {
    // A port free a moment ago may be taken before iperf3 binds it (by another test's
    // listener, or as the local port of a connection, which SO_REUSEADDR does not
    // share): then iperf3 exits at once and the next free port is tried.
    for _ in 0..5 {
        let port = free_port();
        let mut child = spawn_piped(
            Command::new(IPERF3)
                .args(["-s", "-p", &port.to_string()])
                .args(args),
        );
        let listening = poll(Duration::from_secs(5), Duration::from_millis(20), || {
            if child.try_wait().ok().flatten().is_some() {
                return Some(false);
            }
            listener_inode(port)
                .is_some_and(|inode| owns_socket(child.id(), &inode))
                .then_some(true)
        });
        if listening != Some(false) {
            return (child, port);
        }
    }
    panic!("iperf3 -s exited at start on five free ports in a row");
}

/// The inode of the socket listening on loopback `port`, from /proc/net/tcp(6).
fn listener_inode(port: u16) -> Option<String> {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|f| {
        std::fs::read_to_string(f).ok()?.lines().find_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols.len() > 9 && cols[1].ends_with(&hex) && cols[3] == "0A")
                .then(|| cols[9].to_string())
        })
    })
}

/// True when process `pid` holds the socket with `inode` among its descriptors.
fn owns_socket(pid: u32, inode: &str) -> bool {
    let want = format!("socket:[{inode}]");
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == want))
    })
}

/// A UDP socket bound to an ephemeral loopback port, asking for a receive
/// buffer of `bytes` (the kernel caps it at rmem_max).
pub fn loopback_receiver(bytes: usize) -> std::net::UdpSocket {
    let rx = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
    let _ = rx.set_recv_buffer_size(bytes);
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    rx.bind(&any.into()).unwrap();
    rx.into()
}

/// Polls /proc until every thread of `pid` is in the stopped state (a group stop
/// completes when the last thread takes the signal), for at most 2 s.
pub fn wait_all_threads_stopped(pid: i32) {
    let stopped = || {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        let mut all = true;
        for t in tasks.flatten() {
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            // The state follows the command's closing parenthesis.
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            all &= state == 'T' || state == 't';
        }
        Some(all).filter(|&a| a)
    };
    let found = poll(Duration::from_secs(2), Duration::from_micros(200), stopped);
    assert!(
        found.is_some(),
        "process {pid} did not stop within 2 s of SIGSTOP"
    );
}
