//! Socket options a test asks for, and what the kernel really granted.

use linkperf_proto::results::SocketFacts;
use linkperf_proto::TestConfig;
use socket2::Socket;
use std::os::fd::AsRawFd;

fn setsockopt<T>(fd: &impl AsRawFd, level: i32, name: i32, value: &T) -> std::io::Result<()> {
    // SAFETY: `value` is a valid T for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn getsockopt_u32(fd: &impl AsRawFd, level: i32, name: i32) -> Option<u32> {
    let mut value: u32 = 0;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: the out-pointer is valid for 4 bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut u32).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(value)
}

/// Sets send and receive buffers as asked; returns warnings when the kernel
/// capped them (rmem_max / wmem_max), which silently limits the TCP window.
pub fn apply_buffers(socket: &Socket, config: &TestConfig) -> Vec<String> {
    let mut warnings = Vec::new();
    // Only the two limits: collecting all host facts per socket would read a dozen files.
    let (rmem_max, wmem_max) = crate::facts::buffer_limits();
    if let Some(size) = config.sndbuf {
        let _ = socket.set_send_buffer_size(size as usize);
        if let Some(max) = wmem_max.filter(|&m| u64::from(size) > m) {
            warnings.push(format!(
                "send buffer capped: asked {size} bytes, net.core.wmem_max is {max}; raise it with sysctl -w net.core.wmem_max={size}"
            ));
        }
    }
    // Receive-buffer autotuning rewrites TCP_WINDOW_CLAMP as the buffer
    // grows; a buffer set by hand stops it. Twice the clamp (the kernel
    // doubles it again) leaves the window room while a quarter of the space
    // holds payload.
    let rcvbuf = config
        .rcvbuf
        .or(config.window_clamp.map(|c| c.saturating_mul(2)));
    if let Some(size) = rcvbuf {
        let _ = socket.set_recv_buffer_size(size as usize);
        if let Some(max) = rmem_max.filter(|&m| u64::from(size) > m) {
            warnings.push(format!(
                "receive buffer capped: asked {size} bytes, net.core.rmem_max is {max}; raise it with sysctl -w net.core.rmem_max={size}"
            ));
        }
    }
    warnings
}

/// The error text for an unknown congestion control, listing what exists.
pub fn congestion_unavailable(name: &str) -> String {
    let available = crate::facts::available_congestion_controls();
    format!(
        "congestion control '{name}' is not available on this host; available: {}",
        if available.is_empty() {
            "unknown".to_string()
        } else {
            available.join(", ")
        }
    )
}

/// TCP options that must be set before connect (MSS) or at any time.
pub fn apply_tcp(socket: &Socket, config: &TestConfig) -> Result<(), String> {
    if config.nodelay {
        socket
            .set_nodelay(true)
            .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    }
    if let Some(mss) = config.mss.or_else(|| clamp_mss(config)) {
        socket
            .set_mss(mss)
            .map_err(|e| format!("-M {mss}: the kernel refused TCP_MAXSEG: {e}"))?;
    }
    if let Some(clamp) = config.window_clamp {
        // The kernel raises a clamp below SOCK_MIN_RCVBUF / 2 (about 2.3 KB)
        // to that; `facts` reads back what it kept.
        set_window_clamp(socket, clamp).map_err(|e| {
            format!("--window-clamp {clamp}: the kernel refused TCP_WINDOW_CLAMP: {e}")
        })?;
    }
    if let Some(cc) = &config.congestion {
        socket
            .set_tcp_congestion(cc.as_bytes())
            .map_err(|_| congestion_unavailable(cc))?;
    }
    apply_tos(socket, config)?;
    if let Some(rate) = config.pacing_rate {
        // SO_MAX_PACING_RATE is in bytes/s; the kernel takes a u64 since 4.20.
        let bytes_per_second: u64 = rate / 8;
        setsockopt(
            socket,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            &bytes_per_second,
        )
        .map_err(|e| format!("--pacing-rate: SO_MAX_PACING_RATE refused: {e}"))?;
    }
    Ok(())
}

/// Segments of at most half the clamp. A Linux sender sizes its segments to
/// half the largest window it has seen offered, so a window under two
/// segments is still filled; but the receiver's kernel may offer more than the
/// clamp for a moment (its rewrite, see `hold_window_clamp`), and a sender
/// left with segments larger than the window waits for a timer between them
/// (measured: 0.35 instead of 7 Mbit/s at an 8 KiB clamp, MSS 9128). Without
/// effect once half the clamp exceeds the path's MSS.
fn clamp_mss(config: &TestConfig) -> Option<u32> {
    // Above 32767 (MAX_TCP_WINDOW) the kernel refuses TCP_MAXSEG, and no path
    // has segments that large anyway.
    let smallest = *linkperf_proto::config::MSS_RANGE.start();
    config
        .window_clamp
        .map(|w| (w / 2).max(smallest))
        .filter(|&mss| mss <= 32_767)
}

fn set_window_clamp(socket: &impl AsRawFd, clamp: u32) -> std::io::Result<()> {
    let value = libc::c_int::try_from(clamp).unwrap_or(libc::c_int::MAX);
    setsockopt(socket, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, &value)
}

/// Sets the window clamp again on a connected receiver: the kernel may
/// have replaced it (see `stream::tcp_receive`).
pub fn hold_window_clamp(socket: &impl AsRawFd, clamp: u32) {
    let _ = set_window_clamp(socket, clamp);
}

/// The TOS byte (--dscp, -S) on IPv4 and the traffic class on IPv6; an IPv6
/// socket gets both, as it may carry IPv4-mapped traffic. Set before connect
/// and listen, so the handshake's segments are marked too.
pub fn apply_tos(socket: &Socket, config: &TestConfig) -> Result<(), String> {
    let Some(tos) = config.tos else {
        return Ok(());
    };
    let value = libc::c_int::from(tos);
    let v4 = setsockopt(socket, libc::IPPROTO_IP, libc::IP_TOS, &value);
    let v6 = setsockopt(socket, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, &value);
    match (v4, v6) {
        (Err(e), Err(_)) => Err(format!("-S/--dscp: the kernel refused TOS {tos:#04x}: {e}")),
        _ => Ok(()),
    }
}

/// UDP options: don't-fragment (so oversize datagrams fail visibly with
/// EMSGSIZE) and the TOS byte.
pub fn apply_udp(socket: &Socket, config: &TestConfig, ipv6: bool) -> Result<(), String> {
    apply_tos(socket, config)?;
    if config.pacing_rate.is_some() {
        let bytes_per_second: u64 = config.pacing_rate.unwrap_or(0) / 8;
        setsockopt(
            socket,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            &bytes_per_second,
        )
        .map_err(|e| format!("--pacing-rate: SO_MAX_PACING_RATE refused: {e}"))?;
    }
    if config.dont_fragment {
        let result = if ipv6 {
            setsockopt(
                socket,
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU_DISCOVER,
                &libc::IPV6_PMTUDISC_DO,
            )
            .and_then(|_| setsockopt(socket, libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, &1i32))
        } else {
            setsockopt(
                socket,
                libc::IPPROTO_IP,
                libc::IP_MTU_DISCOVER,
                &libc::IP_PMTUDISC_DO,
            )
        };
        result.map_err(|e| format!("--dont-fragment: {e}"))?;
    }
    Ok(())
}

/// The path MTU the kernel knows for a connected socket.
pub fn path_mtu(socket: &impl AsRawFd, ipv6: bool) -> Option<u32> {
    if ipv6 {
        getsockopt_u32(socket, libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        getsockopt_u32(socket, libc::IPPROTO_IP, libc::IP_MTU)
    }
}

/// What the kernel granted this socket, read back with getsockopt.
pub fn facts(socket: &Socket, tcp: bool) -> SocketFacts {
    let local = socket.local_addr().ok().and_then(|a| a.as_socket());
    let remote = socket.peer_addr().ok().and_then(|a| a.as_socket());
    let ipv6 = local.map(|a| a.is_ipv6()).unwrap_or(false);
    SocketFacts {
        sndbuf: socket.send_buffer_size().ok().map(|v| v as u32),
        rcvbuf: socket.recv_buffer_size().ok().map(|v| v as u32),
        congestion: if tcp {
            socket.tcp_congestion().ok().map(|v| {
                String::from_utf8_lossy(&v)
                    .trim_end_matches('\0')
                    .to_string()
            })
        } else {
            None
        },
        mss: if tcp { socket.mss().ok() } else { None },
        window_clamp: if tcp {
            getsockopt_u32(socket, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP)
        } else {
            None
        },
        mtu: path_mtu(socket, ipv6),
        local: local.map(|a| a.to_string()),
        remote: remote.map(|a| a.to_string()),
    }
}

/// Keepalive and user timeout on control connections, so a peer that vanishes
/// without closing (power loss, cable pulled) is noticed within seconds.
pub fn apply_liveness(socket: &Socket) {
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(std::time::Duration::from_secs(3))
        .with_interval(std::time::Duration::from_secs(1))
        .with_retries(3);
    let _ = socket.set_tcp_keepalive(&keepalive);
    let _ = socket.set_tcp_user_timeout(Some(std::time::Duration::from_secs(8)));
}

/// Makes the calling thread's sleeps precise: the default 50 µs timer slack
/// would smear a paced sender's schedule.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and affects this thread only.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}
