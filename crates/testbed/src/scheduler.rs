//! One link direction on a clock given by the caller (nanoseconds): a byte- and packet-counted
//! drop-tail queue in front of a serialiser running at the link rate, the loss stage, and a
//! delay line that holds each surviving frame until its release time.
//!
//! Everything is computed when a frame arrives (its serialisation finish time follows from the
//! previous one), so the forwarding thread only has to sleep until the earliest release.

use crate::counters::DirectionCounters;
use crate::framing::TAP_HEADER_BYTES;
use crate::impairment::{jittered_delay_ns, LossCause, LossModel};
use crate::params::DirectionParams;
use crate::rng::Rng;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Memory bound of the delay line (a 10 Gbit/s x 200 ms path holds 250 MB).
pub const DELAY_LINE_MAX_BYTES: u64 = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Drop-tail queue full (or the delay line at its memory bound).
    Queue,
    Loss,
    BitError,
    /// Larger than the link MTU allows.
    Oversize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Scheduled { release_ns: u64 },
    Dropped(DropReason),
}

pub struct Scheduler<T> {
    params: DirectionParams,
    max_frame_bytes: usize,
    rng: Rng,
    loss: LossModel,
    /// Finish times and sizes of frames not yet fully serialised (the queue, head in service).
    serialising: VecDeque<(f64, u64)>,
    queued_bytes: u64,
    last_finish_ns: f64,
    line: DelayLine<T>,
    counters: Arc<DirectionCounters>,
}

impl<T> Scheduler<T> {
    pub fn new(
        params: DirectionParams,
        mtu: u32,
        seed: u64,
        counters: Arc<DirectionCounters>,
    ) -> Self {
        let loss = LossModel::new(params.loss, params.gilbert, params.ber);
        let line = if params.reorder && params.jitter_ns > 0 {
            DelayLine::Reordering {
                heap: BinaryHeap::new(),
                next_seq: 0,
                bytes: 0,
            }
        } else {
            DelayLine::Fifo {
                queue: VecDeque::new(),
                last_release: 0,
                bytes: 0,
            }
        };
        Scheduler {
            params,
            max_frame_bytes: mtu as usize + TAP_HEADER_BYTES,
            rng: Rng::seeded(seed),
            loss,
            serialising: VecDeque::new(),
            queued_bytes: 0,
            last_finish_ns: 0.0,
            line,
            counters,
        }
    }

    pub fn counters(&self) -> &Arc<DirectionCounters> {
        &self.counters
    }

    /// Takes one frame of `frame_bytes` (Ethernet header included) arriving at `now_ns`.
    pub fn offer(&mut self, now_ns: u64, frame_bytes: usize, item: T) -> Verdict {
        let c = &self.counters;
        DirectionCounters::add(&c.packets_in, 1);
        DirectionCounters::add(&c.bytes_in, frame_bytes as u64);
        if frame_bytes > self.max_frame_bytes {
            DirectionCounters::add(&c.dropped_oversize, 1);
            return Verdict::Dropped(DropReason::Oversize);
        }
        let now = now_ns as f64;
        while let Some(&(finish, bytes)) = self.serialising.front() {
            if finish > now {
                break;
            }
            self.serialising.pop_front();
            self.queued_bytes -= bytes;
        }
        let bytes = frame_bytes as u64;
        let over_packets = self
            .params
            .queue_packets
            .is_some_and(|limit| self.serialising.len() as u64 >= limit);
        let over_bytes = self
            .params
            .queue_bytes
            .is_some_and(|limit| self.queued_bytes + bytes > limit);
        if over_packets || over_bytes || self.line.bytes() + bytes > DELAY_LINE_MAX_BYTES {
            DirectionCounters::add(&c.dropped_queue, 1);
            return Verdict::Dropped(DropReason::Queue);
        }

        let start = self.last_finish_ns.max(now);
        let finish = if self.params.rate_bps > 0 {
            let wire_bits = self.params.framing.wire_bytes_for_tap_frame(frame_bytes) as f64 * 8.0;
            start + wire_bits * 1e9 / self.params.rate_bps as f64
        } else {
            start
        };
        self.last_finish_ns = finish;
        if finish > now {
            self.serialising.push_back((finish, bytes));
            self.queued_bytes += bytes;
            c.queue_high_water_bytes
                .fetch_max(self.queued_bytes, Relaxed);
            c.queue_high_water_packets
                .fetch_max(self.serialising.len() as u64, Relaxed);
        }

        // Lost frames still used the wire: the loss stage sits after the serialiser.
        match self.loss.judge(&mut self.rng, frame_bytes) {
            Some(LossCause::Loss) => {
                DirectionCounters::add(&c.dropped_loss, 1);
                return Verdict::Dropped(DropReason::Loss);
            }
            Some(LossCause::BitError) => {
                DirectionCounters::add(&c.dropped_ber, 1);
                return Verdict::Dropped(DropReason::BitError);
            }
            None => {}
        }
        let delay = jittered_delay_ns(
            &mut self.rng,
            self.params.delay_ns,
            self.params.jitter_ns,
            self.params.jitter_distribution,
        );
        let release_ns = self.line.push(finish.ceil() as u64 + delay, bytes, item);
        Verdict::Scheduled { release_ns }
    }

    /// Earliest release time of a frame in the delay line.
    pub fn next_release_ns(&self) -> Option<u64> {
        self.line.peek()
    }

    /// Removes and returns the next frame due at or before `now_ns`, with its size.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<(T, u64)> {
        match self.line.peek() {
            Some(t) if t <= now_ns => self.line.pop(),
            _ => None,
        }
    }

    /// Frames in the delay line (in flight on the emulated wire).
    pub fn in_flight(&self) -> usize {
        self.line.len()
    }
}

struct Timed<T> {
    release_ns: u64,
    seq: u64,
    bytes: u64,
    item: T,
}

impl<T> PartialEq for Timed<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.release_ns, self.seq) == (other.release_ns, other.seq)
    }
}
impl<T> Eq for Timed<T> {}
impl<T> PartialOrd for Timed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Timed<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.release_ns, self.seq).cmp(&(other.release_ns, other.seq))
    }
}

enum DelayLine<T> {
    /// Release times forced non-decreasing, so jitter never reorders.
    Fifo {
        queue: VecDeque<(u64, u64, T)>,
        last_release: u64,
        bytes: u64,
    },
    /// Each frame leaves at its own time; ties keep arrival order.
    Reordering {
        heap: BinaryHeap<Reverse<Timed<T>>>,
        next_seq: u64,
        bytes: u64,
    },
}

impl<T> DelayLine<T> {
    fn push(&mut self, release_ns: u64, size: u64, item: T) -> u64 {
        match self {
            DelayLine::Fifo {
                queue,
                last_release,
                bytes,
            } => {
                let release = release_ns.max(*last_release);
                *last_release = release;
                *bytes += size;
                queue.push_back((release, size, item));
                release
            }
            DelayLine::Reordering {
                heap,
                next_seq,
                bytes,
            } => {
                *bytes += size;
                heap.push(Reverse(Timed {
                    release_ns,
                    seq: *next_seq,
                    bytes: size,
                    item,
                }));
                *next_seq += 1;
                release_ns
            }
        }
    }

    fn peek(&self) -> Option<u64> {
        match self {
            DelayLine::Fifo { queue, .. } => queue.front().map(|e| e.0),
            DelayLine::Reordering { heap, .. } => heap.peek().map(|e| e.0.release_ns),
        }
    }

    fn pop(&mut self) -> Option<(T, u64)> {
        match self {
            DelayLine::Fifo { queue, bytes, .. } => queue.pop_front().map(|(_, size, item)| {
                *bytes -= size;
                (item, size)
            }),
            DelayLine::Reordering { heap, bytes, .. } => heap.pop().map(|Reverse(t)| {
                *bytes -= t.bytes;
                (t.item, t.bytes)
            }),
        }
    }

    fn bytes(&self) -> u64 {
        match self {
            DelayLine::Fifo { bytes, .. } | DelayLine::Reordering { bytes, .. } => *bytes,
        }
    }

    fn len(&self) -> usize {
        match self {
            DelayLine::Fifo { queue, .. } => queue.len(),
            DelayLine::Reordering { heap, .. } => heap.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::Framing;
    use crate::impairment::JitterDistribution;

    fn scheduler(params: DirectionParams) -> Scheduler<u64> {
        Scheduler::new(params, 1500, 42, Arc::new(DirectionCounters::default()))
    }

    /// Offers `count` frames of `frame_bytes` every `gap_ns`, drains everything and returns
    /// (sequence number, release time) of the delivered frames.
    fn run(s: &mut Scheduler<u64>, count: u64, frame_bytes: usize, gap_ns: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for i in 0..count {
            let now = i * gap_ns;
            while let Some((seq, _)) = s.pop_due(now) {
                out.push((seq, now));
            }
            s.offer(now, frame_bytes, i);
        }
        while let Some(t) = s.next_release_ns() {
            let (seq, _) = s.pop_due(t).unwrap();
            out.push((seq, t));
        }
        out
    }

    #[test]
    fn delay_only_shifts_every_frame_by_the_delay() {
        let mut s = scheduler(DirectionParams {
            delay_ns: 4_400_000,
            ..Default::default()
        });
        assert_eq!(
            s.offer(1_000, 100, 0),
            Verdict::Scheduled {
                release_ns: 4_401_000
            }
        );
        assert_eq!(s.pop_due(4_400_999), None);
        assert_eq!(s.pop_due(4_401_000), Some((0, 100)));
    }

    #[test]
    fn rate_spaces_frames_by_their_wire_time() {
        // 1514-byte frames = 1500 IP bytes = 1538 wire bytes; at 100 Mbit/s that is 123.04 us.
        let mut s = scheduler(DirectionParams {
            rate_bps: 100_000_000,
            ..Default::default()
        });
        let out = run(&mut s, 500, 1514, 0);
        assert_eq!(out.len(), 500);
        let span = (out[499].1 - out[0].1) as f64;
        assert!((span / 499.0 - 123_040.0).abs() < 2.0, "{}", span / 499.0);
    }

    #[test]
    fn atm_framing_charges_cells() {
        let params = DirectionParams {
            rate_bps: 149_760_000,
            framing: Framing::AtmAal5,
            ..Default::default()
        };
        let mut s = Scheduler::new(params, 9180, 1, Arc::new(DirectionCounters::default()));
        let out = run(&mut s, 101, 9180 + 14, 0);
        let per_frame = (out[100].1 - out[0].1) as f64 / 100.0;
        let expected = 192.0 * 53.0 * 8.0 * 1e9 / 149.76e6;
        assert!(
            (per_frame - expected).abs() < 1.0,
            "{per_frame} vs {expected}"
        );
    }

    #[test]
    fn drop_tail_queue_limits_bytes_and_counts_drops_and_high_water() {
        let params = DirectionParams {
            rate_bps: 10_000_000,
            queue_bytes: Some(20 * 1024),
            queue_packets: None,
            ..Default::default()
        };
        let mut s = scheduler(params);
        // A back-to-back burst of 100 frames of 1042 bytes: 19 fit in 20 KiB.
        let out = run(&mut s, 100, 1042, 0);
        assert_eq!(out.len(), 19);
        let c = s.counters().snapshot();
        assert_eq!(c.dropped_queue, 81);
        assert_eq!(c.queue_high_water_bytes, 19 * 1042);
        assert_eq!(c.queue_high_water_packets, 19);
    }

    #[test]
    fn packet_limit_and_draining_queue() {
        let params = DirectionParams {
            rate_bps: 8_000_000,
            queue_packets: Some(5),
            ..Default::default()
        };
        let mut s = scheduler(params);
        // 1000 IP bytes + 38 = 1038 wire bytes = 1038 us each; offered every 500 us the queue
        // grows by one frame per ~2 offers until 5 are held, then half the offers drop.
        let out = run(&mut s, 1000, 1014, 500_000);
        let c = s.counters().snapshot();
        assert_eq!(c.queue_high_water_packets, 5);
        assert_eq!(out.len() as u64 + c.dropped_queue, 1000);
        let expected_delivered = 1000.0 * 500.0 / 1038.0;
        assert!(
            (out.len() as f64 - expected_delivered).abs() < 8.0,
            "{}",
            out.len()
        );
    }

    #[test]
    fn unlimited_rate_never_queues() {
        let mut s = scheduler(DirectionParams {
            queue_packets: Some(1),
            ..Default::default()
        });
        let out = run(&mut s, 1000, 1514, 0);
        assert_eq!(out.len(), 1000);
    }

    #[test]
    fn oversize_frames_are_dropped() {
        let mut s = scheduler(DirectionParams::default());
        assert_eq!(s.offer(0, 1515, 0), Verdict::Dropped(DropReason::Oversize));
        assert_eq!(s.counters().snapshot().dropped_oversize, 1);
    }

    #[test]
    fn jitter_keeps_fifo_order_unless_reorder_is_set() {
        let base = DirectionParams {
            delay_ns: 10_000_000,
            jitter_ns: 5_000_000,
            jitter_distribution: JitterDistribution::Uniform,
            ..Default::default()
        };
        let mut fifo = scheduler(base.clone());
        let out = run(&mut fifo, 2000, 100, 100_000);
        assert!(out.windows(2).all(|w| w[0].0 < w[1].0));
        let mut reorder = scheduler(DirectionParams {
            reorder: true,
            ..base
        });
        let out = run(&mut reorder, 2000, 100, 100_000);
        assert_eq!(out.len(), 2000);
        let inversions = out.windows(2).filter(|w| w[0].0 > w[1].0).count();
        assert!(inversions > 100, "{inversions}");
        assert!(out.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn lost_frames_still_occupy_the_wire() {
        let params = DirectionParams {
            rate_bps: 100_000_000,
            loss: 0.5,
            ..Default::default()
        };
        let mut s = scheduler(params);
        let out = run(&mut s, 1000, 1514, 0);
        let c = s.counters().snapshot();
        assert_eq!(out.len() as u64 + c.dropped_loss, 1000);
        // The last delivered frame leaves after at least as many slots as frames offered before it.
        let (last_seq, last_t) = *out.last().unwrap();
        assert!(last_t >= (last_seq + 1) * 123_040 - 1);
    }
}
