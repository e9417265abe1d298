//! iperf3 interoperability: a linkperf server serves stock iperf3 clients
//! ([`server`]), a linkperf client tests against stock iperf3 servers
//! ([`client`]), and any linkperf report can be written in iperf3's `-J`
//! layout ([`json`]). The wire codec is `linkperf_proto::iperf3`; the data
//! plane is linkperf's engine (with iperf3's UDP header where it differs).

pub mod auth;
pub mod client;
pub mod json;
pub mod listener;
pub mod server;
mod server_udp;

use linkperf_proto::iperf3::{self, errno, Params, StreamResults};
use linkperf_proto::results::{Role, SideResult};
use linkperf_proto::{Direction, Protocol, TestConfig};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// What an iperf3 test asks beyond linkperf's [`TestConfig`].
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub tos: u32,
    pub udp_counters_64bit: bool,
    pub get_server_output: bool,
    pub repeating_payload: bool,
}

/// A refusal: iperf3's error number and a line for the log.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub i_errno: i32,
    pub why: String,
}

fn refuse(i_errno: i32, why: impl Into<String>) -> Refusal {
    Refusal {
        i_errno,
        why: why.into(),
    }
}

/// linkperf's test for an iperf3 client's parameters, or why it is refused.
pub fn config_from_params(p: &Params) -> Result<(TestConfig, Extras), Refusal> {
    refuse_unsupported(p)?;
    let config = config_of(p);
    if let Err(why) = config.validate() {
        return Err(refuse(errno_of_invalid(&why), why));
    }
    if let Some(cc) = &config.congestion {
        if !linkperf_engine::facts::available_congestion_controls()
            .iter()
            .any(|c| c == cc)
        {
            return Err(refuse(
                errno::SET_CONGESTION,
                linkperf_engine::sockopt::congestion_unavailable(cc),
            ));
        }
    }
    Ok((
        config,
        Extras {
            tos: p.tos,
            udp_counters_64bit: p.udp_counters_64bit,
            get_server_output: p.get_server_output,
            repeating_payload: p.repeating_payload,
        },
    ))
}

/// Refuses what linkperf does not do at all, before looking at the test.
fn refuse_unsupported(p: &Params) -> Result<(), Refusal> {
    if p.sctp {
        return Err(refuse(errno::NO_SCTP, "SCTP (--sctp) is not supported"));
    }
    if p.authtoken.is_some() {
        return Err(refuse(
            errno::AUTH_TEST,
            "RSA authentication (--username) is not configured on this server",
        ));
    }
    if p.tos > 255 {
        return Err(refuse(
            errno::BAD_TOS,
            format!("TOS {} is out of range", p.tos),
        ));
    }
    Ok(())
}

/// The iperf3 parameters as linkperf's test (not yet validated).
fn config_of(p: &Params) -> TestConfig {
    let udp = p.udp;
    let length = if p.len > 0 {
        p.len
    } else if udp {
        1460
    } else {
        128 * 1024
    };
    let bytes = if p.bytes > 0 {
        Some(p.bytes)
    } else if p.blocks > 0 {
        Some(p.blocks * u64::from(length))
    } else {
        None
    };
    // iperf3 runs -O seconds of warm-up on top of -t; linkperf's -t includes -O.
    let time = if p.time > 0 {
        p.time as f64
    } else {
        86_400.0 - p.omit as f64
    };
    TestConfig {
        protocol: if udp { Protocol::Udp } else { Protocol::Tcp },
        direction: if p.bidirectional {
            Direction::Bidir
        } else if p.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        },
        duration_s: (time + p.omit as f64).min(86_400.0),
        bytes,
        interval_s: 1.0,
        omit_s: p.omit as f64,
        parallel: p.parallel,
        length,
        sndbuf: (p.window > 0).then_some(p.window),
        rcvbuf: (p.window > 0).then_some(p.window),
        // iperf3 ignores its TCP options with -u; linkperf refuses them, so
        // a stock client's -u -N (or -C, -M) is taken as iperf3 takes it.
        nodelay: p.nodelay && !udp,
        mss: (p.mss > 0 && !udp).then_some(p.mss),
        congestion: p.congestion.clone().filter(|_| !udp),
        pacing_rate: (p.fqrate > 0).then_some(p.fqrate),
        bitrate: (p.bandwidth > 0).then_some(p.bandwidth),
        dont_fragment: p.dont_fragment && udp,
        zerocopy: false,
        ..Default::default()
    }
}

/// iperf3's error number for a test linkperf's validation refused, by the
/// option its message starts with.
fn errno_of_invalid(why: &str) -> i32 {
    if why.starts_with("-P") {
        errno::NUM_STREAMS
    } else if why.starts_with("UDP datagram") {
        errno::UDP_BLOCKSIZE
    } else if why.starts_with("-l") {
        errno::BLOCKSIZE
    } else if why.starts_with("-M") {
        errno::MSS
    } else if why.starts_with("-C") {
        errno::SET_CONGESTION
    } else {
        errno::UNIMPLEMENTED
    }
}

/// The parameters an iperf3 client would send for `config`.
pub fn params_from_config(config: &TestConfig, udp_counters_64bit: bool) -> Params {
    let udp = config.protocol == Protocol::Udp;
    Params {
        udp,
        omit: config.omit_s.ceil() as u64,
        time: if config.bytes.is_some() {
            0
        } else {
            (config.duration_s - config.omit_s).ceil().max(1.0) as u64
        },
        bytes: config.bytes.unwrap_or(0),
        mss: config.mss.unwrap_or(0),
        nodelay: config.nodelay,
        parallel: config.parallel,
        reverse: config.direction == Direction::Reverse,
        bidirectional: config.direction == Direction::Bidir,
        window: config.sndbuf.max(config.rcvbuf).unwrap_or(0),
        len: config.length,
        bandwidth: config.stream_rate().unwrap_or(0),
        fqrate: config.pacing_rate.unwrap_or(0),
        // An iperf3 server's pacer takes the period of its timer: the span a
        // train may cover is the nearest thing it knows.
        pacing_timer: config.pacing_timer_us,
        congestion: config.congestion.clone(),
        udp_counters_64bit,
        dont_fragment: config.dont_fragment,
        client_version: Some(crate::report::SOFTWARE.replace(' ', "-")),
        ..Default::default()
    }
}

/// Stream roles in iperf3's creation order, from this end's point of view:
/// the client's sending streams first, then (with --bidir) its receiving ones.
pub fn roles(config: &TestConfig, is_server: bool) -> Vec<Role> {
    crate::data::stream_roles(config, is_server)
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

/// This end's results in iperf3's exchange format. Stream `i` of `result`
/// (linkperf id `i`) is iperf3 stream [`iperf3::stream_id`]`(i)`.
pub fn results_from_side(result: &SideResult, udp: bool) -> iperf3::Results {
    let any_sender = result.streams.iter().any(|s| s.role == Role::Sender);
    let mut streams: Vec<StreamResults> = result
        .streams
        .iter()
        .map(|s| {
            let u = s.udp.clone().unwrap_or_default();
            StreamResults {
                id: iperf3::stream_id(s.id as usize),
                bytes: s.bytes,
                retransmits: match (&s.tcp, s.role) {
                    (Some(t), Role::Sender) => t.retransmits.map(|r| r as i64).unwrap_or(-1),
                    _ => -1,
                },
                jitter: u.jitter_ms / 1000.0,
                errors: u.lost_packets,
                packets: match s.role {
                    Role::Sender => s.packets.unwrap_or(0),
                    Role::Receiver => u.packets + u.lost_packets,
                },
                start_time: 0.0,
                end_time: s.seconds,
            }
        })
        .collect();
    streams.sort_by_key(|s| s.id);
    iperf3::Results {
        cpu_util_total: result.cpu.total_percent,
        cpu_util_user: result.cpu.user_percent,
        cpu_util_system: result.cpu.system_percent,
        sender_has_retransmits: if !any_sender {
            -1
        } else if udp {
            0
        } else {
            1
        },
        congestion_used: result
            .streams
            .iter()
            .find_map(|s| s.socket.congestion.clone()),
        streams,
        server_output_text: None,
        server_output_json: None,
    }
}

/// IP_TOS (or the IPv6 traffic class) for -S / --dscp.
pub fn set_tos(fd: &impl AsRawFd, tos: u32, ipv6: bool) -> Result<(), String> {
    if tos == 0 {
        return Ok(());
    }
    let value = tos as libc::c_int;
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
    } else {
        (libc::IPPROTO_IP, libc::IP_TOS)
    };
    // SAFETY: a valid int for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("TOS {tos}: {}", std::io::Error::last_os_error()))
    }
}

/// True when a TCP socket has stopped sending (half-closed or closed) and the
/// peer acknowledged everything: all its data reached the peer's kernel.
pub fn tcp_sender_drained(fd: &impl AsRawFd) -> bool {
    let mut info = [0u8; 8];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes of tcp_info.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return true; // gone
    }
    const ESTABLISHED: u8 = 1;
    const CLOSE_WAIT: u8 = 8;
    if info[0] == ESTABLISHED || info[0] == CLOSE_WAIT {
        return false;
    }
    let mut outq: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut outq) };
    rc != 0 || outq == 0
}

/// 36 random characters and a NUL, from the kernel's generator.
pub fn new_cookie() -> [u8; iperf3::COOKIE_LEN] {
    let mut random = [0u8; 36];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut random))
        .is_ok();
    if !filled {
        let mut x = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            ^ u64::from(std::process::id());
        for r in random.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *r = x as u8;
        }
    }
    iperf3::make_cookie(&random)
}

/// Reads control items until `pred` accepts one, or `timeout` passes.
pub fn read_items(
    stream: &mut std::net::TcpStream,
    decoder: &mut iperf3::Decoder,
    timeout: Duration,
) -> Result<Vec<iperf3::Item>, String> {
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("timed out on the iperf3 control connection".into());
        }
        let _ = stream.set_read_timeout(Some(left));
        let want = decoder.wanted().min(buf.len());
        match stream.read(&mut buf[..want]) {
            Ok(0) => {
                return match decoder.at_close() {
                    Some(item) => Ok(vec![item]),
                    None => Err("the iperf3 peer closed the control connection".into()),
                }
            }
            Ok(n) => {
                let items = decoder.feed(&buf[..n]).map_err(|e| e.to_string())?;
                if !items.is_empty() {
                    return Ok(items);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err("timed out on the iperf3 control connection".into())
            }
            Err(e) => return Err(format!("iperf3 control connection: {e}")),
        }
    }
}

/// iperf3's adaptive units: bytes with binary prefixes, rates with SI ones.
pub fn iperf3_bytes(bytes: f64) -> String {
    let (v, unit) = if bytes >= 1024.0 * 1024.0 * 1024.0 {
        (bytes / (1024.0 * 1024.0 * 1024.0), "GBytes")
    } else if bytes >= 1024.0 * 1024.0 {
        (bytes / (1024.0 * 1024.0), "MBytes")
    } else if bytes >= 1024.0 {
        (bytes / 1024.0, "KBytes")
    } else {
        (bytes, "Bytes")
    };
    format!("{} {unit}", fixed(v))
}

pub fn iperf3_rate(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "Gbits/sec")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbits/sec")
    } else if bps >= 1e3 {
        (bps / 1e3, "Kbits/sec")
    } else {
        (bps, "bits/sec")
    };
    format!("{} {unit}", fixed(v))
}

fn fixed(v: f64) -> String {
    if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    }
}

/// What an iperf3 control reader thread reports.
pub enum ControlEvent {
    Item(linkperf_proto::iperf3::Item),
    /// The connection ended or broke; the text says how.
    Lost(String),
}

/// Reads an iperf3 control connection on its own thread, turning bytes into
/// items (through `wrap`, into the caller's event type). `peer` names the
/// other end in messages ("server", "iperf3 client").
pub fn spawn_control_reader<T: Send + 'static>(
    control: &std::net::TcpStream,
    mut decoder: linkperf_proto::iperf3::Decoder,
    tx: std::sync::mpsc::Sender<T>,
    wrap: fn(ControlEvent) -> T,
    peer: &'static str,
) -> Result<(), String> {
    use std::io::Read;
    let mut reader = control.try_clone().map_err(|e| e.to_string())?;
    let _ = reader.set_read_timeout(None);
    std::thread::Builder::new()
        .name("lp-iperf3-ctl".into())
        .spawn(move || {
            // Larger items take several reads; a bigger buffer costs each test's thread.
            let mut buf = vec![0u8; 8 * 1024];
            loop {
                let want = decoder.wanted().min(buf.len());
                let event = match reader.read(&mut buf[..want]) {
                    Ok(0) => {
                        ControlEvent::Lost(format!("the {peer} closed the control connection"))
                    }
                    Ok(n) => match decoder.feed(&buf[..n]) {
                        Ok(items) => {
                            if items
                                .into_iter()
                                .any(|i| tx.send(wrap(ControlEvent::Item(i))).is_err())
                            {
                                return;
                            }
                            continue;
                        }
                        Err(e) => ControlEvent::Lost(e.to_string()),
                    },
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => ControlEvent::Lost(format!("control connection to the {peer}: {e}")),
                };
                let _ = tx.send(wrap(event));
                return;
            }
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_through_config() {
        let config = TestConfig {
            protocol: Protocol::Udp,
            direction: Direction::Bidir,
            duration_s: 3.0,
            omit_s: 1.0,
            parallel: 2,
            length: 1400,
            bitrate: Some(5_000_000),
            ..Default::default()
        };
        let p = params_from_config(&config, true);
        assert_eq!((p.time, p.omit, p.parallel), (2, 1, 2));
        let (back, extras) = config_from_params(&p).unwrap();
        assert_eq!(back.duration_s, 3.0);
        assert_eq!(back.direction, Direction::Bidir);
        assert_eq!(back.bitrate, Some(5_000_000));
        assert!(extras.udp_counters_64bit);
    }

    #[test]
    fn refusals_carry_iperf3_error_numbers() {
        let sctp = Params {
            sctp: true,
            parallel: 1,
            ..Default::default()
        };
        assert_eq!(
            config_from_params(&sctp).unwrap_err().i_errno,
            errno::NO_SCTP
        );
        let many = Params {
            parallel: 1000,
            time: 1,
            ..Default::default()
        };
        assert_eq!(
            config_from_params(&many).unwrap_err().i_errno,
            errno::NUM_STREAMS
        );
        let blocks = Params {
            parallel: 1,
            blocks: 10,
            len: 1000,
            ..Default::default()
        };
        assert_eq!(config_from_params(&blocks).unwrap().0.bytes, Some(10_000));
    }

    #[test]
    fn units_like_iperf3() {
        assert_eq!(iperf3_bytes(1_277_952.0), "1.22 MBytes");
        assert_eq!(iperf3_rate(10_223_616.0), "10.2 Mbits/sec");
        assert_eq!(iperf3_rate(27_500_000_000.0), "27.5 Gbits/sec");
    }
}
