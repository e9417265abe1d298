//! A sending TCP stream's smoothed RTT, read every 10 ms while it moves data.
//!
//! Reading tcp_info takes the socket's lock. A sampler thread that reads a
//! busy sender's socket waits for that lock over and over (the sender holds it
//! through each write and takes it again at once), and each release wakes the
//! sampler for nothing: on loopback at 30 Gbit/s, 6,000 wake-ups a second, each
//! paid for by the sending core (bench/RESULTS.md). So
//! the sending thread reads its own socket between writes, at most once a
//! period, and publishes the reading; the sampler takes readings from there.
//! It reads the socket itself only while the sender has published nothing for
//! two periods: a write blocked on a small window or a full buffer, when the
//! sender sleeps without the lock.

use crate::tcpinfo::{self, RttTrack};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often a sending stream's smoothed RTT is read, so the min and max over
/// an interval are of what happened, not of one reading per interval. The
/// smoothed RTT moves on the scale of round trips (tens of milliseconds on a
/// WAN); one getsockopt every 10 ms costs about a microsecond.
pub(crate) const RTT_SAMPLE_PERIOD: Duration = Duration::from_millis(10);

/// The latest reading a sender published: its sequence number in the high 32
/// bits, the RTT in microseconds in the low 32; 0 before the first. One
/// writer (the stream's thread), any number of readers, no lock.
#[derive(Debug, Default)]
pub struct RttSlot(AtomicU64);

impl RttSlot {
    fn publish(&self, rtt_us: u32) {
        let seq = (self.0.load(Ordering::Relaxed) >> 32).wrapping_add(1) & 0xffff_ffff;
        self.0
            .store((seq << 32) | u64::from(rtt_us), Ordering::Release);
    }

    /// (sequence, RTT in microseconds) of the latest reading.
    fn latest(&self) -> (u32, u32) {
        let v = self.0.load(Ordering::Acquire);
        ((v >> 32) as u32, v as u32)
    }
}

/// The sending thread's part: a reading once a period, between writes.
pub(crate) struct SenderRtt {
    next: Instant,
}

impl SenderRtt {
    pub(crate) fn new() -> SenderRtt {
        SenderRtt {
            next: Instant::now(),
        }
    }

    /// Call after each write that moved data; `now` is the sender's clock
    /// reading of this round (before the write: a reading is due at most a
    /// write late).
    pub(crate) fn after_write(&mut self, now: Instant, sock: &impl AsRawFd, slot: &RttSlot) {
        if now < self.next {
            return;
        }
        self.next = now + RTT_SAMPLE_PERIOD;
        if let Some(us) = tcpinfo::read(sock).ok().and_then(|t| t.rtt_us) {
            slot.publish(us);
        }
    }
}

/// What the sampler last took from one stream.
#[derive(Debug, Clone, Copy)]
struct Taken {
    seq: u32,
    /// When the stream's sequence last moved (or sampling began).
    published_at: Instant,
    /// The stream's bytes at its last sample.
    bytes: u64,
}

/// The sampler's part: one reading per sending stream and period.
pub(crate) struct RttCollector {
    taken: Vec<Taken>,
}

impl RttCollector {
    pub(crate) fn new(streams: usize, start: Instant) -> RttCollector {
        let t = Taken {
            seq: 0,
            published_at: start,
            bytes: 0,
        };
        RttCollector {
            taken: vec![t; streams],
        }
    }

    /// Adds a smoothed-RTT reading of every TCP sender that moved data since
    /// its last one (an idle or draining stream's RTT is not the test's).
    /// `streams` gives, per stream, a sender's socket (`None` for anything
    /// else), its slot and its bytes so far.
    pub(crate) fn sample<'a>(
        &mut self,
        streams: impl Iterator<Item = (Option<&'a TcpStream>, &'a RttSlot, u64)>,
        tracks: &mut [RttTrack],
    ) {
        let now = Instant::now();
        for (i, (sock, slot, bytes)) in streams.enumerate() {
            let Some(sock) = sock else {
                continue;
            };
            let taken = &mut self.taken[i];
            if bytes <= taken.bytes {
                continue;
            }
            let (seq, us) = slot.latest();
            let reading = if seq != taken.seq {
                taken.seq = seq;
                taken.published_at = now;
                Some(us)
            } else if now.saturating_duration_since(taken.published_at) >= 2 * RTT_SAMPLE_PERIOD {
                tcpinfo::read(sock).ok().and_then(|t| t.rtt_us)
            } else {
                None
            };
            if let Some(us) = reading {
                tracks[i].add(us);
                taken.bytes = bytes;
            }
        }
    }

    /// An interval boundary's own reading of stream `i` (at `bytes`) always counts: it
    /// is the interval's reported RTT, so the interval's min and max must hold it, even
    /// when the sender moved nothing since the last sample (a loaded machine that kept it
    /// from running while acknowledgements still moved the smoothed RTT).
    pub(crate) fn boundary(&mut self, i: usize, bytes: u64, rtt_us: u32, track: &mut RttTrack) {
        track.add(rtt_us);
        let taken = &mut self.taken[i];
        taken.bytes = taken.bytes.max(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_hands_over_each_reading_with_a_new_sequence() {
        let slot = RttSlot::default();
        assert_eq!(slot.latest(), (0, 0));
        slot.publish(250);
        assert_eq!(slot.latest(), (1, 250));
        slot.publish(u32::MAX);
        assert_eq!(slot.latest(), (2, u32::MAX));
    }

    /// A boundary's reading is in the interval's range even when no data moved since
    /// the period's last sample (it is what the interval reports as its RTT).
    #[test]
    fn a_boundary_reading_always_counts() {
        let mut collector = RttCollector::new(1, Instant::now());
        let mut track = RttTrack::default();
        collector.boundary(0, 1000, 300, &mut track);
        collector.boundary(0, 1000, 500, &mut track);
        assert_eq!(track.samples(), 2);
        assert_eq!((track.min_ms(), track.max_ms()), (Some(0.3), Some(0.5)));
    }
}
