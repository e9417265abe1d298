//! Sending at a target rate on an absolute schedule.
//!
//! The due time of each send is computed from the start and the bits sent so
//! far, so errors never accumulate; the pacer sleeps for long gaps and spins
//! for the last microseconds, so the gaps between sends stay even instead of
//! coming in 1 ms bursts (iperf3's UDP pacing).

use hdrhistogram::Histogram;
use linkperf_proto::results::GapStats;
use std::time::{Duration, Instant};

/// How far the schedule may fall behind before the pacer gives up catching
/// up: a longer stall (the process was descheduled) then costs rate, visible
/// in the result, instead of an unbounded burst.
const MAX_BACKLOG: Duration = Duration::from_millis(20);
/// Below this, sleeping overshoots; spin instead.
const SPIN_BELOW: Duration = Duration::from_micros(60);

pub struct Pacer {
    rate_bps: f64,
    start: Instant,
    sent_bits: f64,
    last_send: Option<Instant>,
    gaps: Histogram<u64>,
}

impl Pacer {
    pub fn new(rate_bps: u64) -> Self {
        Pacer {
            rate_bps: rate_bps as f64,
            start: Instant::now(),
            sent_bits: 0.0,
            last_send: None,
            gaps: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds"),
        }
    }

    pub fn restart(&mut self, at: Instant) {
        self.start = at;
        self.sent_bits = 0.0;
        self.last_send = None;
    }

    fn due(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.sent_bits / self.rate_bps)
    }

    /// Blocks until `bits` may be sent, or returns early if `deadline` comes first.
    pub fn wait(&mut self, bits: u64, deadline: Option<Instant>) {
        self.wait_batch(bits, 1, deadline);
    }

    /// Blocks until at least one unit of `bits` is due, then returns how many
    /// are due now (at most `max`): when the sender fell behind it catches up
    /// with one batched system call instead of many.
    pub fn wait_batch(&mut self, bits: u64, max: usize, deadline: Option<Instant>) -> usize {
        let mut due = self.due();
        let now = Instant::now();
        if now > due + MAX_BACKLOG {
            // Fell far behind: re-anchor rather than burst.
            self.start += now - (due + MAX_BACKLOG);
            due = self.due();
        }
        let due = deadline.map_or(due, |d| due.min(d));
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            let left = due - now;
            if left > SPIN_BELOW {
                std::thread::sleep(left - SPIN_BELOW / 2);
            } else {
                std::hint::spin_loop();
            }
        }
        let sent_at = Instant::now();
        let behind = sent_at.saturating_duration_since(self.due()).as_secs_f64();
        let units =
            (1 + (behind * self.rate_bps / bits.max(1) as f64) as usize).clamp(1, max.max(1));
        if let Some(last) = self.last_send {
            let _ = self.gaps.record((sent_at - last).as_nanos().max(1) as u64);
            // Datagrams of one batch leave back to back.
            let _ = self.gaps.record_n(1, units as u64 - 1);
        }
        self.last_send = Some(sent_at);
        self.sent_bits += (bits * units as u64) as f64;
        units
    }

    /// The distribution of gaps between sends of `bits`-sized datagrams.
    pub fn gap_stats(&self, bits_per_send: u64) -> GapStats {
        let target_us = bits_per_send as f64 / self.rate_bps * 1e6;
        let h = &self.gaps;
        let n = h.len();
        let back_to_back = if n > 0 {
            h.count_between(0, (target_us * 100.0) as u64) as f64 / n as f64
        } else {
            0.0
        };
        GapStats {
            sends: n + u64::from(self.last_send.is_some()),
            target_us,
            mean_us: h.mean() / 1e3,
            p50_us: h.value_at_quantile(0.5) as f64 / 1e3,
            p99_us: h.value_at_quantile(0.99) as f64 / 1e3,
            max_us: h.max() as f64 / 1e3,
            back_to_back_fraction: back_to_back,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_rate_and_spaces_sends_evenly() {
        // 10 Mbit/s in 1250-byte sends = one send per ms, for 200 ms.
        let mut p = Pacer::new(10_000_000);
        p.restart(Instant::now());
        let start = Instant::now();
        for _ in 0..200 {
            p.wait(10_000, None);
        }
        let elapsed = start.elapsed().as_secs_f64();
        // Never faster than the rate; slower only if the machine stalls us.
        assert!((0.195..0.5).contains(&elapsed), "{elapsed}");
        let g = p.gap_stats(10_000);
        assert_eq!(g.sends, 200);
        assert!((g.target_us - 1000.0).abs() < 1e-6);
        // The median gap is the schedule's, whatever a loaded machine does to the tail.
        assert!((g.p50_us - 1000.0).abs() < 150.0, "{g:?}");
    }
}
