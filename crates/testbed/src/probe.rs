//! Probe frames that measure the emulator's ingress latency: how long a frame waits in a TAP
//! device before the forwarding thread, asleep in ppoll(2), wakes up and reads it.
//!
//! That wait is the one part of the emulator's own delay it cannot avoid (a sleeping thread
//! takes tens of microseconds to wake on a virtual machine) nor see from the TAP (which gives
//! no timestamps on the frames it hands over). The kernel's stamps ([`crate::stamps`]) see
//! it for every frame they match; what is learned here is the fallback for the others. So a probe thread sends a small frame into each
//! link end from the host side (an AF_PACKET socket on the end's device, so it takes the path
//! a host's packet takes) and asks the kernel for its transmit timestamp, which the TAP
//! driver takes as it queues the frame for the emulator (SO_TIMESTAMPING, software). The
//! forwarding thread that reads the probe records the wait against how long it had slept.
//! Frames that wake the thread then count as having arrived that much earlier. (When the
//! send call returns is no substitute: the woken reader often runs before the sender gets
//! its CPU back.) Probes reach no host stack (nothing handles their EtherType) and are never
//! counted.

use crate::error::TestbedError;
use crate::rng::Rng;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// IEEE 802 "local experimental" EtherType: no host stack handles it.
pub const PROBE_ETHERTYPE: u16 = 0x88b5;
const MAGIC: &[u8; 8] = b"LPPROBE1";
/// Ethernet header, magic, sequence number, padded to the 60-byte minimum frame.
const PROBE_FRAME_LEN: usize = 60;
/// Mean probe interval per link end; each gap is drawn from half to one and a half of it.
const PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// Faster probing for the first second, while the latency model has no samples yet.
const WARMUP_INTERVAL: Duration = Duration::from_millis(8);
const WARMUP: Duration = Duration::from_secs(1);

/// Send times of the last two probes of one link end, shared by the probe thread (writer)
/// and the forwarding thread (reader). Two slots, so a probe read before its send time was
/// stored can still be matched after the next probe went out.
#[derive(Default)]
pub struct ProbeClock {
    slots: [(AtomicU64, AtomicU64); 2],
}

impl ProbeClock {
    fn store(&self, seq: u64, sent_ns: u64) {
        let (s, t) = &self.slots[(seq % 2) as usize];
        t.store(sent_ns, Ordering::Relaxed);
        s.store(seq, Ordering::Release);
    }

    /// When probe `seq` was sent (ns on the emulator's clock), once the sender stored it.
    pub fn sent_ns(&self, seq: u64) -> Option<u64> {
        let (s, t) = &self.slots[(seq % 2) as usize];
        (s.load(Ordering::Acquire) == seq).then(|| t.load(Ordering::Relaxed))
    }
}

/// The sequence number of a probe frame (Ethernet header first), or None for any other frame.
pub fn parse_probe(frame: &[u8]) -> Option<u64> {
    if frame.len() < 14 + 16 || frame[12..14] != PROBE_ETHERTYPE.to_be_bytes() {
        return None;
    }
    if &frame[14..22] != MAGIC {
        return None;
    }
    Some(u64::from_le_bytes(frame[22..30].try_into().ok()?))
}

fn probe_frame(seq: u64) -> [u8; PROBE_FRAME_LEN] {
    let mut f = [0u8; PROBE_FRAME_LEN];
    f[..6].copy_from_slice(&[0x02, 0x6c, 0x70, 0xff, 0xff, 0xff]);
    f[6..12].copy_from_slice(&[0x02, 0x6c, 0x70, 0xff, 0xff, 0xfe]);
    f[12..14].copy_from_slice(&PROBE_ETHERTYPE.to_be_bytes());
    f[14..22].copy_from_slice(MAGIC);
    f[22..30].copy_from_slice(&seq.to_le_bytes());
    f
}

/// An AF_PACKET socket on `device` of the calling thread's namespace. With `receive`
/// false it only sends (protocol 0: nothing is delivered to it); with true it receives the
/// probe frames the emulator writes to that device, each with the kernel's receive
/// timestamp (when the frame entered the host's network stack), without blocking.
pub fn open_probe_socket(device: &str, receive: bool) -> Result<OwnedFd, TestbedError> {
    let name = crate::netns::c_string(device)?;
    // SAFETY: if_nametoindex reads a NUL-terminated string we own.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(TestbedError::runtime(format!(
            "probe socket: no device {device}"
        )));
    }
    let protocol = if receive { PROBE_ETHERTYPE.to_be() } else { 0 };
    let flags = libc::SOCK_RAW | libc::SOCK_CLOEXEC | if receive { libc::SOCK_NONBLOCK } else { 0 };
    // SAFETY: plain socket(2) call.
    let raw = unsafe { libc::socket(libc::AF_PACKET, flags, protocol as i32) };
    if raw < 0 {
        return Err(TestbedError::runtime(format!(
            "probe socket: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: sockaddr_ll is plain data; zeroed is a valid starting value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = protocol;
    addr.sll_ifindex = index as i32;
    // SAFETY: bind with a sockaddr_ll of the size we pass.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    if rc < 0 {
        return Err(TestbedError::runtime(format!(
            "probe socket bind on {device}: {}",
            std::io::Error::last_os_error()
        )));
    }
    let flags: u32 = if receive {
        libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE
    } else {
        libc::SOF_TIMESTAMPING_TX_SOFTWARE
            | libc::SOF_TIMESTAMPING_SOFTWARE
            | libc::SOF_TIMESTAMPING_OPT_TSONLY
    };
    // SAFETY: setsockopt with a u32 we own and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&flags as *const u32).cast(),
            4,
        )
    };
    if rc < 0 {
        return Err(TestbedError::runtime(format!(
            "probe socket timestamps on {device}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(fd)
}

pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec we pass.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The kernel's transmit timestamp of the last frame sent on `fd` (CLOCK_REALTIME ns), from
/// the socket's error queue; waits up to 5 ms for it.
fn transmit_timestamp(fd: i32) -> Option<u64> {
    let mut pfd = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd; POLLERR is reported without being asked for.
    if unsafe { libc::poll(&mut pfd, 1, 5) } <= 0 {
        return None;
    }
    timestamped_recv(fd, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT).map(|(_, ts)| ts)
}

/// The kernel receive time (CLOCK_REALTIME ns) of probe `seq` on a receiving probe socket,
/// if it is there; whatever else waits on the socket is read and dropped.
pub fn received_probe(fd: i32, seq: u64) -> Option<u64> {
    let mut found = None;
    while let Some((frame, ts)) = timestamped_recv(fd, libc::MSG_DONTWAIT) {
        if parse_probe(&frame) == Some(seq) {
            found = Some(ts);
        }
    }
    found
}

/// One message (up to 64 bytes of it) and its software timestamp.
fn timestamped_recv(fd: i32, flags: i32) -> Option<([u8; 64], u64)> {
    let mut data = [0u8; 64];
    let mut control = [0u64; 32];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain data; zeroed is a valid start, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: recvmsg into buffers we own, sizes given in msg.
    if unsafe { libc::recvmsg(fd, &mut msg, flags) } < 0 {
        return None;
    }
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPING {
                // struct scm_timestamping: ts[0] is the software timestamp.
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some((data, ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    None
}

/// One link end to probe: the socket on its device and the clock its forwarder reads.
pub struct ProbeTarget {
    pub socket: OwnedFd,
    pub clock: Arc<ProbeClock>,
}

/// Sends probes into every target, each at its own random times, forever.
pub fn run_prober(targets: Vec<ProbeTarget>, epoch: Instant, seed: u64) {
    let mut rng = Rng::seeded(seed);
    let started = Instant::now();
    let gap = |rng: &mut Rng| {
        let mean = if started.elapsed() < WARMUP {
            WARMUP_INTERVAL
        } else {
            PROBE_INTERVAL
        };
        mean.mul_f64(0.5 + rng.next_f64())
    };
    let mut due: Vec<Instant> = targets
        .iter()
        .map(|_| Instant::now() + gap(&mut rng))
        .collect();
    let mut seq = 1u64;
    loop {
        let Some((i, &when)) = due.iter().enumerate().min_by_key(|(_, d)| **d) else {
            return;
        };
        let now = Instant::now();
        if when > now {
            std::thread::sleep(when - now);
        }
        let frame = probe_frame(seq);
        let target = &targets[i];
        // SAFETY: sends our own buffer on a bound packet socket.
        let sent = unsafe {
            libc::send(
                target.socket.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if sent == frame.len() as isize {
            if let Some(queued) = transmit_timestamp(target.socket.as_raw_fd()) {
                // From the wall clock to the emulator's: the same instant read on both.
                let (emulator, wall) = (
                    epoch.elapsed().as_nanos() as u64,
                    clock_ns(libc::CLOCK_REALTIME),
                );
                target
                    .clock
                    .store(seq, emulator.saturating_sub(wall.saturating_sub(queued)));
            }
        }
        seq += 1;
        due[i] = Instant::now() + gap(&mut rng);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_frames_are_recognised_and_nothing_else_is() {
        let f = probe_frame(77);
        assert_eq!(parse_probe(&f), Some(77));
        let mut other = f;
        other[12] = 0x08;
        other[13] = 0x00;
        assert_eq!(parse_probe(&other), None);
        let mut wrong_magic = f;
        wrong_magic[14] = b'X';
        assert_eq!(parse_probe(&wrong_magic), None);
        assert_eq!(parse_probe(&f[..20]), None);
    }

    #[test]
    fn the_clock_matches_a_probe_until_two_later_ones_went_out() {
        let c = ProbeClock::default();
        assert_eq!(c.sent_ns(1), None);
        c.store(1, 100);
        c.store(2, 200);
        assert_eq!(c.sent_ns(1), Some(100));
        c.store(3, 300);
        assert_eq!(c.sent_ns(1), None);
        assert_eq!(c.sent_ns(3), Some(300));
    }
}
