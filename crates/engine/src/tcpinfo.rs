//! Reading Linux `struct tcp_info` by field offset.
//!
//! The struct grows with kernel releases; the kernel copies as many bytes as it
//! has and reports that length. Reading by offset against that length tells
//! exactly which fields this kernel provides, so an older kernel's missing
//! fields come out as `None` instead of zeros that would look like data.

use linkperf_proto::results::Limited;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// One tcp_info snapshot; times in microseconds, rates in bytes/s as the kernel gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpInfo {
    pub snd_mss: Option<u32>,
    pub pmtu: Option<u32>,
    pub rtt_us: Option<u32>,
    pub rttvar_us: Option<u32>,
    pub snd_cwnd_segments: Option<u32>,
    pub snd_ssthresh: Option<u32>,
    /// Segments sent and not yet acknowledged (packets_out).
    pub unacked: Option<u32>,
    pub total_retrans: Option<u32>,
    pub pacing_rate: Option<u64>,
    pub min_rtt_us: Option<u32>,
    pub delivery_rate: Option<u64>,
    pub busy_time_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
    pub bytes_acked: Option<u64>,
    /// In-order bytes the connection has received, read by the application or
    /// not (a received FIN counts one more).
    pub bytes_received: Option<u64>,
    /// TCP_ESTABLISHED, TCP_CLOSE_WAIT, ... (include/net/tcp_states.h).
    pub state: Option<u8>,
    pub snd_wnd: Option<u32>,
    /// The window this end last advertised (Linux 6.8+).
    pub rcv_wnd: Option<u32>,
    /// TCP_WINDOW_CLAMP (not in tcp_info: `read` asks for it apart).
    pub window_clamp: Option<u32>,
}

// Offsets in include/uapi/linux/tcp.h (stable ABI: fields are only appended).
const SND_MSS: usize = 16;
const UNACKED: usize = 24;
const PMTU: usize = 60;
const RTT: usize = 68;
const RTTVAR: usize = 72;
const SND_SSTHRESH: usize = 76;
const SND_CWND: usize = 80;
const TOTAL_RETRANS: usize = 100;
const PACING_RATE: usize = 104;
const BYTES_ACKED: usize = 120;
const BYTES_RECEIVED: usize = 128;
const MIN_RTT: usize = 148;
const DELIVERY_RATE: usize = 160;
const BUSY_TIME: usize = 168;
const RWND_LIMITED: usize = 176;
const SNDBUF_LIMITED: usize = 184;
const BYTES_SENT: usize = 200;
const BYTES_RETRANS: usize = 208;
const SND_WND: usize = 228;
const RCV_WND: usize = 232;

/// Parses the bytes the kernel returned (only `len` of them are valid).
pub fn parse(raw: &[u8]) -> TcpInfo {
    let u32_at = |off: usize| {
        raw.get(off..off + 4)
            .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
    };
    let u64_at = |off: usize| {
        raw.get(off..off + 8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    };
    TcpInfo {
        snd_mss: u32_at(SND_MSS),
        pmtu: u32_at(PMTU),
        rtt_us: u32_at(RTT),
        rttvar_us: u32_at(RTTVAR),
        snd_cwnd_segments: u32_at(SND_CWND),
        snd_ssthresh: u32_at(SND_SSTHRESH),
        unacked: u32_at(UNACKED),
        total_retrans: u32_at(TOTAL_RETRANS),
        pacing_rate: u64_at(PACING_RATE),
        bytes_acked: u64_at(BYTES_ACKED),
        bytes_received: u64_at(BYTES_RECEIVED),
        state: raw.first().copied(),
        min_rtt_us: u32_at(MIN_RTT),
        delivery_rate: u64_at(DELIVERY_RATE),
        busy_time_us: u64_at(BUSY_TIME),
        rwnd_limited_us: u64_at(RWND_LIMITED),
        sndbuf_limited_us: u64_at(SNDBUF_LIMITED),
        bytes_sent: u64_at(BYTES_SENT),
        bytes_retrans: u64_at(BYTES_RETRANS),
        snd_wnd: u32_at(SND_WND),
        rcv_wnd: u32_at(RCV_WND),
        window_clamp: None,
    }
}

/// Reads tcp_info from a connected TCP socket.
pub fn read(socket: &impl AsRawFd) -> std::io::Result<TcpInfo> {
    let mut raw = [0u8; 512];
    let mut len = raw.len() as libc::socklen_t;
    // SAFETY: the buffer is valid for `len` bytes and the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            raw.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut info = parse(&raw[..len as usize]);
    info.window_clamp = window_clamp(socket);
    Ok(info)
}

fn window_clamp(socket: &impl AsRawFd) -> Option<u32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the out-pointer is valid for one c_int.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0).then(|| u32::try_from(value).ok()).flatten()
}

/// How much a counter grew, when the kernel has it.
pub fn delta(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

/// Fractions of `wall` spent limited by the receiver window, the send buffer,
/// the network, or the application (not busy). Absent on kernels before 4.9.
/// They add up to one: tcp_info is read a little after the wall clock, so its
/// busy time can exceed `wall`; the larger of the two is then the whole.
pub fn limited(before: Option<&TcpInfo>, now: &TcpInfo, wall: Duration) -> Option<Limited> {
    let wall_us = wall.as_micros() as f64;
    if wall_us <= 0.0 {
        return None;
    }
    let zero = TcpInfo {
        busy_time_us: Some(0),
        rwnd_limited_us: Some(0),
        sndbuf_limited_us: Some(0),
        ..Default::default()
    };
    let before = before.unwrap_or(&zero);
    let busy = delta(before.busy_time_us, now.busy_time_us)? as f64;
    let rwnd = delta(before.rwnd_limited_us, now.rwnd_limited_us)? as f64;
    let sndbuf = delta(before.sndbuf_limited_us, now.sndbuf_limited_us)? as f64;
    // The kernel's busy time includes both limited times.
    let busy = busy.max(rwnd + sndbuf);
    let whole = wall_us.max(busy);
    Some(Limited {
        rwnd: rwnd / whole,
        sndbuf: sndbuf / whole,
        network: (busy - rwnd - sndbuf) / whole,
        app: (whole - busy) / whole,
    })
}

/// Smoothed-RTT samples of one connection: the smallest, largest and mean
/// of what was seen, in microseconds as tcp_info gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RttTrack {
    samples: u64,
    sum_us: f64,
    min_us: u32,
    max_us: u32,
}

impl RttTrack {
    pub fn add(&mut self, rtt_us: u32) {
        if self.samples == 0 {
            self.min_us = rtt_us;
            self.max_us = rtt_us;
        }
        self.min_us = self.min_us.min(rtt_us);
        self.max_us = self.max_us.max(rtt_us);
        self.sum_us += f64::from(rtt_us);
        self.samples += 1;
    }

    pub fn merge(&mut self, other: &RttTrack) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        self.min_us = self.min_us.min(other.min_us);
        self.max_us = self.max_us.max(other.max_us);
        self.sum_us += other.sum_us;
        self.samples += other.samples;
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn min_ms(&self) -> Option<f64> {
        (self.samples > 0).then(|| f64::from(self.min_us) / 1000.0)
    }

    pub fn max_ms(&self) -> Option<f64> {
        (self.samples > 0).then(|| f64::from(self.max_us) / 1000.0)
    }

    pub fn mean_ms(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum_us / self.samples as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_track_keeps_the_extremes_and_the_mean_of_merged_samples() {
        let mut a = RttTrack::default();
        assert_eq!(a.max_ms(), None);
        for us in [300, 100, 200] {
            a.add(us);
        }
        let mut b = RttTrack::default();
        b.add(900);
        let mut all = RttTrack::default();
        all.merge(&a);
        all.merge(&RttTrack::default());
        all.merge(&b);
        assert_eq!(all.samples(), 4);
        assert_eq!(all.min_ms(), Some(0.1));
        assert_eq!(all.max_ms(), Some(0.9));
        assert_eq!(all.mean_ms(), Some(0.375));
    }

    #[test]
    fn short_structs_leave_newer_fields_absent() {
        // A kernel of the 4.x era returned 104 bytes: no pacing, no busy time.
        let mut raw = vec![0u8; 104];
        raw[RTT..RTT + 4].copy_from_slice(&1234u32.to_ne_bytes());
        raw[TOTAL_RETRANS..TOTAL_RETRANS + 4].copy_from_slice(&7u32.to_ne_bytes());
        let info = parse(&raw);
        assert_eq!(info.rtt_us, Some(1234));
        assert_eq!(info.total_retrans, Some(7));
        assert_eq!(info.pacing_rate, None);
        assert_eq!(info.busy_time_us, None);
        assert_eq!(info.snd_wnd, None);
        assert_eq!(info.rcv_wnd, None);
    }
    use linkperf_proto::results::Limited;
    use std::time::Duration;

    fn info(busy: u64, rwnd: u64, sndbuf: u64) -> TcpInfo {
        TcpInfo {
            busy_time_us: Some(busy),
            rwnd_limited_us: Some(rwnd),
            sndbuf_limited_us: Some(sndbuf),
            ..Default::default()
        }
    }

    fn sum(l: &Limited) -> f64 {
        l.rwnd + l.sndbuf + l.network + l.app
    }

    #[test]
    fn limited_fractions_are_shares_of_the_wall_time() {
        // 1 s: 0.5 s window-limited, 0.2 s buffer-limited, 0.1 s cwnd, 0.2 s idle.
        let l = limited(
            None,
            &info(800_000, 500_000, 200_000),
            Duration::from_secs(1),
        )
        .unwrap();
        let want = [0.5, 0.2, 0.1, 0.2];
        for (got, want) in [l.rwnd, l.sndbuf, l.network, l.app].into_iter().zip(want) {
            assert!((got - want).abs() < 1e-9, "{l:?}");
        }
    }

    #[test]
    fn limited_fractions_never_add_up_to_more_than_the_whole() {
        let wall = Duration::from_secs(1);
        // tcp_info read after the wall clock: 1.3 s busy in a 1 s interval,
        // nearly all of it window- and buffer-limited (these summed to 130 %).
        let before = info(1_000, 1_000, 0);
        let l = limited(Some(&before), &info(1_301_000, 901_000, 380_000), wall).unwrap();
        assert!((sum(&l) - 1.0).abs() < 1e-9, "{l:?} adds up to {}", sum(&l));
        assert!((l.rwnd - 0.9 / 1.3).abs() < 1e-9, "{l:?}");
        assert_eq!(l.app, 0.0);
        // Limited times larger than the busy time that should include them (180 %).
        let l = limited(None, &info(500_000, 700_000, 600_000), wall).unwrap();
        assert!((sum(&l) - 1.0).abs() < 1e-9, "{l:?} adds up to {}", sum(&l));
        assert!([l.rwnd, l.sndbuf, l.network, l.app]
            .iter()
            .all(|x| (0.0..=1.0).contains(x)));
    }
}
