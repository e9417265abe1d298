//! Child processes under a time limit: a finished process's exit status and
//! output ([`Run`]), commands that must succeed ([`output_ok`]), the
//! error-output contracts every command shares, free loopback ports, and
//! polling with a deadline.

use serde_json::Value;
use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    l.local_addr().unwrap().port()
}

/// A loopback TCP port held by a socket that never listens: a connection to it is refused
/// for as long as this lives. A port from [`free_port`] is only free, and a client that
/// connects to it may be given that same port as its own and connect to itself (TCP's
/// simultaneous open): a loaded run once saw such a client's "greeting" reset.
pub struct RefusingPort {
    _socket: std::os::fd::OwnedFd,
    pub port: u16,
}

pub fn refusing_port() -> RefusingPort {
    use std::os::fd::FromRawFd;
    let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a new socket this function owns, bound and queried with a sockaddr_in of
    // the size given.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let socket = std::os::fd::OwnedFd::from_raw_fd(fd);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let at = &mut addr as *mut libc::sockaddr_in as *mut libc::sockaddr;
        let bound = libc::bind(fd, at, size);
        assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
        let mut len = size;
        assert_eq!(libc::getsockname(fd, at, &mut len), 0);
        RefusingPort {
            _socket: socket,
            port: u16::from_be(addr.sin_port),
        }
    }
}

/// Calls `f` until it returns something or `limit` has passed (then None).
pub fn poll<T>(limit: Duration, step: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(t) = f() {
            return Some(t);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(step);
    }
}

/// A child that is killed and reaped when dropped, however the test ends.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a finished process left behind.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Parses stdout as one JSON document, failing with the whole context.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}); status {:?}\nstdout: {}\nstderr: {}",
                self.status, self.stdout, self.stderr
            )
        })
    }

    /// Parses stdout as a successful linkperf report: exit 0 and no errors.
    pub fn report(&self) -> Value {
        self.assert_success("client failed");
        let v = self.json();
        assert_eq!(v["schema"], "linkperf/1");
        assert_eq!(v["errors"], serde_json::json!([]), "errors in {v:#}");
        v
    }

    /// Asserts exit 0, showing `what` and both outputs otherwise.
    pub fn assert_success(&self, what: &str) -> &Run {
        assert_eq!(
            self.code(),
            Some(0),
            "{what}\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        self
    }

    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// The usage/run error contract: exit code `code`, exactly one line on
    /// stderr, no panic.
    pub fn assert_one_line_failure(&self, code: i32) -> &str {
        let lines = self.stderr_lines();
        assert_eq!(
            self.code(),
            Some(code),
            "exit code; stderr: {}\nstdout: {}",
            self.stderr,
            self.stdout
        );
        assert_eq!(
            lines.len(),
            1,
            "want one stderr line, got: {:?}",
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "panic: {}", self.stderr);
        assert!(!lines[0].trim().is_empty());
        lines[0]
    }

    /// The error contract for a sweep that ran some points first: its
    /// progress lines ("sweep: run k of n ...", printed off a terminal), then
    /// exactly one error line, exit code `code`, no panic.
    pub fn assert_failure_after_progress(&self, code: i32) -> &str {
        assert_eq!(
            self.code(),
            Some(code),
            "exit code; stderr: {}",
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "panic: {}", self.stderr);
        let (progress, rest): (Vec<&str>, Vec<&str>) = self
            .stderr_lines()
            .into_iter()
            .partition(|l| l.starts_with("sweep: run "));
        assert!(!progress.is_empty(), "no progress lines: {:?}", self.stderr);
        assert_eq!(rest.len(), 1, "want one error line, got: {:?}", self.stderr);
        assert!(
            self.stderr.trim_end().ends_with(rest[0]),
            "the error line is not last: {:?}",
            self.stderr
        );
        rest[0]
    }
}

fn read_all(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    })
}

/// Waits for a spawned child with piped stdout/stderr, killing it after `limit`.
pub fn wait_child(mut child: Child, limit: Duration) -> Run {
    let out_t = read_all(child.stdout.take().unwrap());
    let err_t = read_all(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let status = child.wait().unwrap();
            let stdout = out_t.join().unwrap();
            let stderr = err_t.join().unwrap();
            panic!(
                "process still running after {limit:?} (killed: {status:?})\nstdout: {stdout}\nstderr: {stderr}"
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    Run {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

/// Spawns `cmd` with no stdin and piped stdout/stderr.
pub fn spawn_piped(cmd: &mut Command) -> Child {
    spawn_with(cmd, Stdio::piped)
}

/// Runs `cmd` to completion (killed after `limit`).
pub fn run(cmd: &mut Command, limit: Duration) -> Run {
    wait_child(spawn_piped(cmd), limit)
}

/// Spawns `cmd` in the background with all output discarded.
pub fn spawn_quiet(cmd: &mut Command) -> Child {
    spawn_with(cmd, Stdio::null)
}

/// Spawns `cmd` with no stdin and `output()` for both stdout and stderr.
fn spawn_with(cmd: &mut Command, output: fn() -> Stdio) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(output())
        .stderr(output())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {:?}: {e}", cmd.get_program()))
}

/// Runs `cmd` to completion and asserts that it succeeded, failing with the
/// command line and both outputs otherwise.
pub fn output_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("run {:?}: {e}", cmd.get_program()));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Sends `signal` to a child.
pub fn send_signal(child: &Child, signal: i32) {
    // SAFETY: plain kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    assert_eq!(rc, 0, "kill({}, {signal})", child.id());
}
