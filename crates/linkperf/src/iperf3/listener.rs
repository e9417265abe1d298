//! The handshake options of an iperf3 test's data connections.
//!
//! A stock iperf3 client connects its data streams to the port of its control
//! connection once the server sends CREATE_STREAMS; it cannot be sent to
//! another port. The receive window's scale and the MSS are fixed when the
//! SYN reaches the listener, from the listener's options: set on the accepted
//! socket they come too late (a 4 KiB window behind a scale of 10 collapses).
//! iperf3's own server re-creates its listener with the options for its one
//! test. linkperf's port is shared by many tests, so for the few milliseconds
//! in which one test's data connections arrive it sets on the port's listener
//! what can be undone exactly: TCP_WINDOW_CLAMP (which alone decides the
//! window scale, and is what a listener's SO_RCVBUF amounts to in the SYN) and
//! TCP_MAXSEG. SO_RCVBUF itself would lock every later connection's buffer;
//! it goes on the accepted socket, where it changes nothing negotiated.
//!
//! Set-ups that change the listener run alone: no other iperf3 test's data
//! connections arrive meanwhile ([`enter`] takes the write side of one lock,
//! tests with default options the read side, so those still overlap freely).

use linkperf_proto::TestConfig;
use socket2::{SockRef, Type};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A listener's window clamp when none was set: the largest window TCP can
/// express, which children treat exactly like no clamp (the kernel replaces
/// a zero clamp by this value), and the clamp cannot be set back to zero on
/// a listening socket.
const NO_CLAMP: libc::c_int = (u16::MAX as libc::c_int) << 14;

/// What an iperf3 test asks of its data connections' handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// `-w`: the receive window iperf3 sets with SO_RCVBUF on its listener.
    pub window: Option<u32>,
    /// `-M`: the MSS this end announces.
    pub mss: Option<u32>,
}

impl Handshake {
    pub fn of(config: &TestConfig) -> Handshake {
        Handshake {
            window: config.rcvbuf,
            mss: config.mss,
        }
    }

    fn is_default(&self) -> bool {
        self.window.is_none() && self.mss.is_none()
    }
}

fn gate() -> &'static RwLock<()> {
    static GATE: RwLock<()> = RwLock::new(());
    &GATE
}

/// Held while one test's data connections arrive; undoes the listener's
/// options when dropped.
pub enum Setup {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Alone {
        configured: Vec<Configured>,
        _gate: RwLockWriteGuard<'static, ()>,
    },
}

impl Drop for Setup {
    fn drop(&mut self) {
        // Restored before the gate opens (fields drop after this body).
        if let Setup::Alone { configured, .. } = self {
            for c in configured.drain(..) {
                c.restore();
            }
        }
    }
}

/// One listener with this test's options on it, and what to put back.
pub struct Configured {
    fd: OwnedFd,
    clamp_before: Option<libc::c_int>,
    mss_set: bool,
}

impl Configured {
    fn restore(self) {
        if let Some(before) = self.clamp_before {
            let _ = set_int(self.fd.as_raw_fd(), libc::TCP_WINDOW_CLAMP, before);
        }
        if self.mss_set {
            // linkperf never sets an MSS on its listeners: 0 is "none".
            let _ = set_int(self.fd.as_raw_fd(), libc::TCP_MAXSEG, 0);
        }
    }
}

/// Enters the data-connection set-up of a test whose control connection
/// arrived at `local`. With default options it only keeps configured set-ups
/// out. Otherwise it waits until no other iperf3 set-up runs and configures
/// the listener(s) serving `local`; the string says why it could not (the
/// test then runs with the options set after accept, which the caller reports).
pub fn enter(local: SocketAddr, wanted: Handshake) -> (Setup, Option<String>) {
    if wanted.is_default() {
        return (
            Setup::Shared(gate().read().unwrap_or_else(|p| p.into_inner())),
            None,
        );
    }
    let guard = gate().write().unwrap_or_else(|p| p.into_inner());
    let mut configured = Vec::new();
    let mut problem = None;
    for fd in listeners_of(local) {
        match configure(fd, wanted) {
            Ok(c) => configured.push(c),
            Err(e) => problem = Some(e),
        }
    }
    if configured.is_empty() && problem.is_none() {
        problem = Some(format!("no listening socket found for {local}"));
    }
    let warning = problem.map(|why| {
        format!(
            "{}: the data connections' handshake used the server's default options ({why}); the window scale and MSS are not what iperf3's server would negotiate",
            describe(wanted)
        )
    });
    (
        Setup::Alone {
            configured,
            _gate: guard,
        },
        warning,
    )
}

fn describe(h: Handshake) -> String {
    match (h.window, h.mss) {
        (Some(w), Some(m)) => format!("-w {w} -M {m}"),
        (Some(w), None) => format!("-w {w}"),
        (None, Some(m)) => format!("-M {m}"),
        (None, None) => String::new(),
    }
}

fn configure(fd: OwnedFd, wanted: Handshake) -> Result<Configured, String> {
    let raw = fd.as_raw_fd();
    let mut done = Configured {
        fd,
        clamp_before: None,
        mss_set: false,
    };
    if let Some(window) = wanted.window {
        let before = get_int(raw, libc::TCP_WINDOW_CLAMP).unwrap_or(0);
        // iperf3's SO_RCVBUF w (capped at rmem_max, then doubled) makes a
        // listener's full space half the buffer: the clamp a stock server's
        // SYN-ACK is built with.
        let (rmem_max, _) = linkperf_engine::facts::buffer_limits();
        let granted = rmem_max.map_or(u64::from(window), |m| m.min(u64::from(window)));
        let clamp = granted.min(NO_CLAMP as u64) as libc::c_int;
        set_int(raw, libc::TCP_WINDOW_CLAMP, clamp)
            .map_err(|e| format!("TCP_WINDOW_CLAMP {clamp} on the listener: {e}"))?;
        done.clamp_before = Some(if before > 0 { before } else { NO_CLAMP });
    }
    if let Some(mss) = wanted.mss {
        if let Err(e) = set_int(raw, libc::TCP_MAXSEG, mss as libc::c_int) {
            done.restore();
            return Err(format!("TCP_MAXSEG {mss} on the listener: {e}"));
        }
        done.mss_set = true;
    }
    Ok(done)
}

/// The listening TCP sockets of this process that accept connections for
/// `local`. The listeners belong to the server's accept loops; they are found
/// by address among the process's sockets and duplicated, so the options land
/// on the very socket checked even if a descriptor number were reused.
fn listeners_of(local: SocketAddr) -> Vec<OwnedFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    // Listed whole before any duplicate is made: a duplicate made while the
    // directory is read may show up in it, and one socket configured twice
    // would record the first setting as "before" and restore that.
    let mut sockets: Vec<(RawFd, String)> = dir
        .flatten()
        .filter_map(|entry| {
            let fd = entry.file_name().to_str()?.parse::<RawFd>().ok()?;
            let target = std::fs::read_link(entry.path()).ok()?;
            let target = target.to_string_lossy().into_owned();
            target.starts_with("socket:").then_some((fd, target))
        })
        .collect();
    // One descriptor per socket ("socket:[inode]").
    sockets.sort_by(|a, b| a.1.cmp(&b.1));
    sockets.dedup_by(|a, b| a.1 == b.1);
    let mut found = Vec::new();
    for (fd, _) in sockets {
        // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor we then own.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            continue;
        }
        // SAFETY: `dup` is a valid descriptor owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(dup) };
        if serves(&SockRef::from(&owned), local) {
            found.push(owned);
        }
    }
    found
}

fn serves(sock: &SockRef<'_>, local: SocketAddr) -> bool {
    if !matches!(sock.r#type(), Ok(t) if t == Type::STREAM) || !sock.is_listener().unwrap_or(false)
    {
        return false;
    }
    let Some(addr) = sock.local_addr().ok().and_then(|a| a.as_socket()) else {
        return false;
    };
    addr.port() == local.port()
        && (addr.ip().is_unspecified() || canonical(addr.ip()) == canonical(local.ip()))
}

fn canonical(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(std::net::IpAddr::V4)
            .unwrap_or(std::net::IpAddr::V6(v6)),
        v4 => v4,
    }
}

fn set_int(fd: RawFd, name: libc::c_int, value: libc::c_int) -> std::io::Result<()> {
    // SAFETY: a valid int for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn get_int(fd: RawFd, name: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn finds_its_listener_and_puts_the_options_back() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let wanted = Handshake {
            window: Some(4096),
            mss: Some(1000),
        };
        let (setup, warning) = enter(addr, wanted);
        assert_eq!(warning, None);
        let raw = listener.as_raw_fd();
        assert_eq!(get_int(raw, libc::TCP_WINDOW_CLAMP), Some(4096));
        // A listener reports the MSS it was given.
        assert_eq!(get_int(raw, libc::TCP_MAXSEG), Some(1000));
        drop(setup);
        assert_eq!(get_int(raw, libc::TCP_WINDOW_CLAMP), Some(NO_CLAMP));
        assert_ne!(get_int(raw, libc::TCP_MAXSEG), Some(1000));
    }

    #[test]
    fn a_listener_with_several_descriptors_is_configured_once() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let _second = listener.try_clone().unwrap();
        let wanted = Handshake {
            window: Some(8192),
            mss: None,
        };
        let (setup, _) = enter(addr, wanted);
        let Setup::Alone { configured, .. } = &setup else {
            panic!("options given, yet a shared set-up")
        };
        assert_eq!(configured.len(), 1);
        drop(setup);
        assert_eq!(
            get_int(listener.as_raw_fd(), libc::TCP_WINDOW_CLAMP),
            Some(NO_CLAMP)
        );
    }

    #[test]
    fn default_options_touch_nothing() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (_setup, warning) = enter(
            addr,
            Handshake {
                window: None,
                mss: None,
            },
        );
        assert_eq!(warning, None);
        assert_eq!(
            get_int(listener.as_raw_fd(), libc::TCP_WINDOW_CLAMP),
            Some(0)
        );
    }
}
