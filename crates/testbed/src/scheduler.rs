//! One link direction on a clock given by the caller (nanoseconds): a byte- and packet-counted
//! drop-tail queue in front of a serialiser (a rate, or a trace of delivery opportunities),
//! the loss stage, and a delay line that holds each surviving packet until its release time.
//!
//! The serialiser is lazy: a packet's finish time is computed when it reaches the head of the
//! queue, from the parameters in force then, so a link's rate, delay, loss or queue can change
//! while packets wait (see [`Scheduler::set_params`]). Nothing needs a timer of its own: the
//! caller advances the clock whenever it wakes, and [`Scheduler::next_release_ns`] says when
//! the next packet will be due.

use crate::circuit::Circuit;
use crate::counters::DirectionCounters;
use crate::delay_line::{DelayLine, Entry};
use crate::framing::{Framing, TAP_HEADER_BYTES};
use crate::impairment::{jittered_delay_ns, LossCause, LossModel};
use crate::params::DirectionParams;
use crate::processing::Processor;
use crate::rng::Rng;
use crate::timing::{DirectionTiming, BACKLOG_SAMPLE_NS};
use crate::trace::TraceClock;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Memory bound of the delay line (a 10 Gbit/s x 200 ms path holds 250 MB).
pub const DELAY_LINE_MAX_BYTES: u64 = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Drop-tail queue full (or the delay line at its memory bound).
    Queue,
    /// Larger than the link MTU allows.
    Oversize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Queued (or, on an unlimited link, already in the delay line). Loss and bit errors are
    /// decided when its serialisation starts, so an accepted packet may still be lost.
    Accepted,
    Dropped(DropReason),
}

/// How long a packet occupies the wire.
enum Serialiser {
    Unlimited,
    Rate { bps: u64, framing: Framing },
    Trace(TraceClock),
}

impl Serialiser {
    fn new(params: &DirectionParams, now_ns: u64) -> Serialiser {
        match (&params.trace, params.rate_bps) {
            (Some(trace), _) if !trace.opportunities_ms.is_empty() => {
                Serialiser::Trace(TraceClock::new(Arc::new(trace.clone()), now_ns))
            }
            (_, 0) => Serialiser::Unlimited,
            (_, bps) => Serialiser::Rate {
                bps,
                framing: params.framing,
            },
        }
    }

    /// End of the serialisation of a frame of `frame_bytes` starting at `start`.
    fn finish(&mut self, start: f64, frame_bytes: u64) -> f64 {
        match self {
            Serialiser::Unlimited => start,
            Serialiser::Rate { bps, framing } => {
                let wire = framing.wire_bytes_for_tap_frame(frame_bytes as usize) as f64;
                start + wire * 8.0 * 1e9 / *bps as f64
            }
            // Traces count IP bytes, as mahimahi does.
            Serialiser::Trace(clock) => {
                clock.finish(start, frame_bytes.saturating_sub(TAP_HEADER_BYTES as u64))
            }
        }
    }
}

struct Waiting<T> {
    arrival: u64,
    bytes: u64,
    item: T,
}

/// The packet being serialised, its fate and jitter already drawn.
struct InService<T> {
    start: f64,
    finish: f64,
    bytes: u64,
    fate: Option<LossCause>,
    /// Its delay minus the configured delay (jitter), so a delay change still applies.
    jitter_ns: i64,
    item: T,
}

pub struct Scheduler<T> {
    params: DirectionParams,
    max_frame_bytes: usize,
    rng: Rng,
    loss: LossModel,
    serialiser: Serialiser,
    waiting: VecDeque<Waiting<T>>,
    service: Option<InService<T>>,
    /// Packets and frame bytes in the queue, the one being serialised included.
    queued_packets: u64,
    queued_bytes: u64,
    line: DelayLine<T>,
    counters: Arc<DirectionCounters>,
    timing: Arc<DirectionTiming>,
    /// When the last packet queued will have been serialised (rate links; for a trace, when
    /// the one in service will have been): a packet arriving at t would wait until then.
    backlog_end: f64,
    /// Next instant at which the queueing delay is sampled.
    next_sample_ns: u64,
    /// The link's switched circuit, shared with the other direction.
    circuit: Option<Arc<Circuit>>,
    /// The receiving end's per-packet processing (`per_packet`): its own, or a router's.
    pub(crate) processing: Processor,
}

fn reorders(params: &DirectionParams) -> bool {
    params.reorder && params.jitter_ns > 0
}

impl<T> Scheduler<T> {
    /// Makes this direction's packets wait for `processing`, shared with the other
    /// directions into the same router.
    pub fn with_shared_processing(
        mut self,
        processing: std::sync::Arc<std::sync::Mutex<crate::processing::Processing>>,
    ) -> Self {
        self.processing = Processor::Shared(processing);
        self
    }

    /// A direction whose clock starts at `now_ns` (a trace starts there).
    pub fn new(
        params: DirectionParams,
        mtu: u32,
        seed: u64,
        counters: Arc<DirectionCounters>,
        timing: Arc<DirectionTiming>,
        now_ns: u64,
    ) -> Self {
        Scheduler {
            loss: LossModel::new(params.loss, params.gilbert, params.ber),
            serialiser: Serialiser::new(&params, now_ns),
            line: DelayLine::new(reorders(&params)),
            max_frame_bytes: mtu as usize + TAP_HEADER_BYTES,
            rng: Rng::seeded(seed),
            waiting: VecDeque::new(),
            service: None,
            queued_packets: 0,
            queued_bytes: 0,
            params,
            counters,
            timing,
            backlog_end: 0.0,
            next_sample_ns: now_ns,
            circuit: None,
            processing: Processor::default(),
        }
    }

    /// Shares the link's circuit state (used while `circuit_setup` is set).
    pub fn with_circuit(mut self, circuit: Arc<Circuit>) -> Self {
        self.circuit = Some(circuit);
        self
    }

    /// When a packet offered at `now_ns` may start serialisation: later than now only while
    /// the link's switched circuit is being set up.
    fn circuit_ready(&mut self, now_ns: u64) -> u64 {
        let (low, high) = (
            self.params.circuit_setup_ns,
            self.params.circuit_setup_max_ns,
        );
        let Some(c) = self.circuit.as_ref().filter(|_| low > 0) else {
            return now_ns;
        };
        let rng = &mut self.rng;
        let setup = || {
            if high > low {
                low + (rng.next_f64() * (high - low) as f64) as u64
            } else {
                low
            }
        };
        c.admit(now_ns, self.params.circuit_idle_ns, setup, &self.counters)
    }

    /// Samples the queueing delay on the grid up to `now_ns` (nothing arrived in between, so
    /// it fell by one nanosecond per nanosecond from `backlog_end`).
    fn sample_backlog(&mut self, now_ns: u64) {
        if now_ns < self.next_sample_ns {
            return;
        }
        let grid = BACKLOG_SAMPLE_NS;
        let points = (now_ns - self.next_sample_ns) / grid + 1;
        let mut busy = 0;
        while busy < points {
            let t = (self.next_sample_ns + busy * grid) as f64;
            if t >= self.backlog_end {
                break;
            }
            self.timing.backlog.record((self.backlog_end - t) as u64);
            busy += 1;
        }
        self.timing.backlog.record_n(0, points - busy);
        self.next_sample_ns += points * grid;
    }

    /// When the queue as it stands will have been serialised, if nothing else arrives.
    fn backlog_end_now(&self) -> f64 {
        let Some(s) = &self.service else {
            return 0.0;
        };
        match &self.serialiser {
            Serialiser::Rate { bps, framing } => {
                let wire: u64 = self
                    .waiting
                    .iter()
                    .map(|w| framing.wire_bytes_for_tap_frame(w.bytes as usize))
                    .sum();
                s.finish + wire as f64 * 8.0 * 1e9 / *bps as f64
            }
            _ => s.finish,
        }
    }

    pub fn counters(&self) -> &Arc<DirectionCounters> {
        &self.counters
    }

    pub fn timing(&self) -> &Arc<DirectionTiming> {
        &self.timing
    }

    pub fn params(&self) -> &DirectionParams {
        &self.params
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
        self.advance(now_ns);
        self.sample_backlog(now_ns);
        let bytes = frame_bytes as u64;
        let over_packets = self
            .params
            .queue_packets
            .is_some_and(|limit| self.queued_packets >= limit);
        let over_bytes = self
            .params
            .queue_bytes
            .is_some_and(|limit| self.queued_bytes + bytes > limit);
        if over_packets || over_bytes || self.line.bytes() + bytes > DELAY_LINE_MAX_BYTES {
            DirectionCounters::add(&self.counters.dropped_queue, 1);
            return Verdict::Dropped(DropReason::Queue);
        }
        self.queued_packets += 1;
        self.queued_bytes += bytes;
        // A packet held for a circuit set-up counts as arriving when the circuit is ready.
        let arrival = self.circuit_ready(now_ns);
        if let Serialiser::Rate { bps, framing } = &self.serialiser {
            let wire = framing.wire_bytes_for_tap_frame(frame_bytes) as f64;
            self.backlog_end =
                self.backlog_end.max(arrival as f64) + wire * 8.0 * 1e9 / *bps as f64;
        }
        if self.service.is_none() {
            self.start_service(arrival as f64, arrival, bytes, item);
            // An unlimited link serialises at once: straight to the delay line.
            self.advance(now_ns);
        } else {
            self.waiting.push_back(Waiting {
                arrival,
                bytes,
                item,
            });
        }
        if !matches!(self.serialiser, Serialiser::Rate { .. }) {
            self.backlog_end = self.backlog_end_now();
        }
        if self.queued_packets > 0 {
            let c = &self.counters;
            c.queue_high_water_bytes
                .fetch_max(self.queued_bytes, Relaxed);
            c.queue_high_water_packets
                .fetch_max(self.queued_packets, Relaxed);
        }
        Verdict::Accepted
    }

    fn start_service(&mut self, start: f64, arrival: u64, bytes: u64, item: T) {
        self.timing
            .queueing
            .record((start as u64).saturating_sub(arrival));
        let finish = self.serialiser.finish(start, bytes);
        // Lost frames still use the wire: the loss stage sits after the serialiser.
        let fate = self.loss.judge(&mut self.rng, bytes as usize);
        let jitter_ns = if fate.is_none() && self.params.jitter_ns > 0 {
            let delay = jittered_delay_ns(
                &mut self.rng,
                self.params.delay_ns,
                self.params.jitter_ns,
                self.params.jitter_distribution,
            );
            delay as i64 - self.params.delay_ns as i64
        } else {
            0
        };
        self.service = Some(InService {
            start,
            finish,
            bytes,
            fate,
            jitter_ns,
            item,
        });
    }

    /// Completes every serialisation that ended by `now_ns`, starting the next ones.
    fn advance(&mut self, now_ns: u64) {
        while self
            .service
            .as_ref()
            .is_some_and(|s| s.finish <= now_ns as f64)
        {
            let done = self.service.take().expect("checked above");
            let finish = done.finish;
            self.complete(done);
            if let Some(w) = self.waiting.pop_front() {
                let start = finish.max(w.arrival as f64);
                self.start_service(start, w.arrival, w.bytes, w.item);
            }
        }
    }

    fn complete(&mut self, s: InService<T>) {
        self.queued_packets -= 1;
        self.queued_bytes -= s.bytes;
        let finish_ns = s.finish.ceil() as u64;
        let c = &self.counters;
        match s.fate {
            Some(LossCause::Loss) => DirectionCounters::add(&c.dropped_loss, 1),
            Some(LossCause::BitError) => DirectionCounters::add(&c.dropped_ber, 1),
            None => {
                let delay = (self.params.delay_ns as i64 + s.jitter_ns).max(0) as u64;
                let Some(release_ns) = self.processing.admit(
                    finish_ns + delay,
                    self.params.processing_ns(s.bytes),
                    self.params.backlog_packets,
                ) else {
                    DirectionCounters::add(&c.dropped_backlog, 1);
                    return;
                };
                self.line.push(Entry {
                    release_ns,
                    finish_ns,
                    bytes: s.bytes,
                    item: s.item,
                });
            }
        }
    }

    /// When the next packet is due to leave (or, if the packet being serialised is lost or
    /// may be passed by those behind it, when its serialisation ends).
    pub fn next_release_ns(&self) -> Option<u64> {
        let head = self.service.as_ref().map(|s| {
            let finish = s.finish.ceil() as u64;
            if s.fate.is_some() || (reorders(&self.params) && !self.waiting.is_empty()) {
                finish
            } else {
                finish + (self.params.delay_ns as i64 + s.jitter_ns).max(0) as u64
            }
        });
        match (self.line.peek(), head) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Removes and returns the next packet due at or before `now_ns`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Entry<T>> {
        self.advance(now_ns);
        self.sample_backlog(now_ns);
        match self.line.peek() {
            Some(t) if t <= now_ns => self.line.pop(),
            _ => None,
        }
    }

    /// Packets in the delay line (in flight on the emulated wire).
    pub fn in_flight(&self) -> usize {
        self.line.len()
    }

    /// Packets waiting for or in serialisation.
    pub fn queued(&self) -> (u64, u64) {
        (self.queued_packets, self.queued_bytes)
    }

    /// Changes the direction's parameters at `now_ns` without losing what it holds: packets in
    /// flight keep their release times, the packet being serialised finishes its remaining
    /// bits at the new rate, queued ones are serialised and delayed with the new values. If the
    /// queue shrinks below its content, the excess is dropped from its tail and counted in
    /// `dropped_resize`. Returns how many were dropped so.
    pub fn set_params(&mut self, now_ns: u64, params: DirectionParams, mtu: u32) -> u64 {
        self.advance(now_ns);
        let old = std::mem::replace(&mut self.params, params);
        let new = &self.params;
        self.max_frame_bytes = mtu as usize + TAP_HEADER_BYTES;
        if (old.loss, old.gilbert, old.ber) != (new.loss, new.gilbert, new.ber) {
            self.loss = LossModel::new(new.loss, new.gilbert, new.ber);
        }
        let serialiser_changed =
            old.rate_bps != new.rate_bps || old.framing != new.framing || old.trace != new.trace;
        if serialiser_changed {
            self.change_serialiser(now_ns, &old);
        }
        if reorders(&old) != reorders(&self.params) {
            let line = std::mem::replace(&mut self.line, DelayLine::new(false));
            self.line = line.convert(reorders(&self.params));
        } else if self.params.delay_ns < old.delay_ns {
            self.line.new_lane();
        }
        let dropped = self.shrink_queue();
        self.backlog_end = self.backlog_end_now();
        dropped
    }

    fn change_serialiser(&mut self, now_ns: u64, old: &DirectionParams) {
        self.serialiser = Serialiser::new(&self.params, now_ns);
        let now = now_ns as f64;
        let Some(s) = self.service.as_mut() else {
            return;
        };
        if s.finish <= now {
            return;
        }
        let new_bps = self.params.rate_bps;
        s.finish = match (&self.serialiser, old.trace.is_none() && old.rate_bps > 0) {
            // Rate to rate: the bits still to send, at the new rate.
            (Serialiser::Rate { .. }, true) if old.framing == self.params.framing => {
                now + (s.finish - now) * old.rate_bps as f64 / new_bps as f64
            }
            _ => {
                let left = (s.finish - now) / (s.finish - s.start).max(1.0);
                let bytes = (s.bytes as f64 * left).ceil() as u64 + TAP_HEADER_BYTES as u64;
                self.serialiser.finish(now, bytes)
            }
        };
        s.start = now;
    }

    fn shrink_queue(&mut self) -> u64 {
        let mut dropped = 0;
        loop {
            let over_packets = self
                .params
                .queue_packets
                .is_some_and(|l| self.queued_packets > l);
            let over_bytes = self
                .params
                .queue_bytes
                .is_some_and(|l| self.queued_bytes > l);
            if !(over_packets || over_bytes) {
                break;
            }
            // The packet being serialised is already on the wire: only waiting ones go.
            let Some(w) = self.waiting.pop_back() else {
                break;
            };
            self.queued_packets -= 1;
            self.queued_bytes -= w.bytes;
            dropped += 1;
        }
        DirectionCounters::add(&self.counters.dropped_resize, dropped);
        dropped
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::Framing;
    use crate::impairment::JitterDistribution;

    fn scheduler(params: DirectionParams) -> Scheduler<u64> {
        with_mtu(params, 1500)
    }

    fn with_mtu(params: DirectionParams, mtu: u32) -> Scheduler<u64> {
        Scheduler::new(
            params,
            mtu,
            42,
            Arc::new(DirectionCounters::default()),
            Arc::new(DirectionTiming::default()),
            0,
        )
    }

    /// Offers `count` frames of `frame_bytes` every `gap_ns`, drains everything and returns
    /// (sequence number, release time) of the delivered frames.
    fn run(s: &mut Scheduler<u64>, count: u64, frame_bytes: usize, gap_ns: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for i in 0..count {
            let now = i * gap_ns;
            while let Some(e) = s.pop_due(now) {
                out.push((e.item, now));
            }
            s.offer(now, frame_bytes, i);
        }
        while let Some(t) = s.next_release_ns() {
            if let Some(e) = s.pop_due(t) {
                out.push((e.item, t));
            }
        }
        out
    }

    #[test]
    fn delay_only_shifts_every_frame_by_the_delay() {
        let mut s = scheduler(DirectionParams {
            delay_ns: 4_400_000,
            ..Default::default()
        });
        assert_eq!(s.offer(1_000, 100, 0), Verdict::Accepted);
        assert_eq!(s.next_release_ns(), Some(4_401_000));
        assert!(s.pop_due(4_400_999).is_none());
        let e = s.pop_due(4_401_000).unwrap();
        assert_eq!((e.item, e.bytes, e.finish_ns), (0, 100, 1_000));
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
        let mut s = with_mtu(params, 9180);
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

    #[test]
    fn a_rate_change_applies_to_the_bits_not_yet_sent() {
        // 1514-byte frames at 100 Mbit/s: 123.04 us each. Ten queued at t = 0.
        let mut s = scheduler(DirectionParams {
            rate_bps: 100_000_000,
            ..Default::default()
        });
        for i in 0..10 {
            s.offer(0, 1514, i);
        }
        // Halfway through the third frame, the rate doubles: the rest of it takes 30.76 us,
        // the seven after it 61.52 us each.
        let t = 2 * 123_040 + 61_520;
        assert_eq!(
            s.set_params(
                t,
                DirectionParams {
                    rate_bps: 200_000_000,
                    ..Default::default()
                },
                1500
            ),
            0
        );
        let mut last = 0;
        while let Some(next) = s.next_release_ns() {
            if let Some(e) = s.pop_due(next) {
                last = e.finish_ns;
            }
        }
        let expected = t + 61_520 / 2 + 7 * 61_520;
        assert!(last.abs_diff(expected) <= 2, "{last} vs {expected}");
        assert_eq!(s.counters().snapshot().dropped_resize, 0);
    }

    #[test]
    fn a_delay_decrease_lets_new_packets_pass_those_in_flight() {
        let mut s = scheduler(DirectionParams {
            delay_ns: 10_000_000,
            ..Default::default()
        });
        s.offer(0, 100, 1);
        s.set_params(
            1_000,
            DirectionParams {
                delay_ns: 2_000_000,
                ..Default::default()
            },
            1500,
        );
        s.offer(2_000, 100, 2);
        let first = s
            .pop_due(2_002_000)
            .expect("the new packet leaves at 2 ms + 2 ms");
        assert_eq!(first.item, 2);
        assert_eq!(s.pop_due(10_000_000).unwrap().item, 1);
    }

    #[test]
    fn a_shrinking_queue_drops_its_tail_and_counts_it_apart() {
        let mut s = scheduler(DirectionParams {
            rate_bps: 1_000_000,
            queue_packets: Some(100),
            ..Default::default()
        });
        for i in 0..50 {
            s.offer(0, 1000, i);
        }
        assert_eq!(s.queued().0, 50);
        let dropped = s.set_params(
            0,
            DirectionParams {
                rate_bps: 1_000_000,
                queue_packets: Some(20),
                ..Default::default()
            },
            1500,
        );
        assert_eq!(dropped, 30);
        let c = s.counters().snapshot();
        assert_eq!((c.dropped_resize, c.dropped_queue), (30, 0));
        let out = run(&mut s, 0, 1000, 0);
        assert_eq!(
            out.iter().map(|o| o.0).collect::<Vec<_>>(),
            (0..20).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_trace_serialises_at_its_delivery_opportunities() {
        use crate::trace::Trace;
        // Two opportunities per ms: 2 x 1504 bytes per ms = 24.064 Mbit/s of IP packets.
        let trace = Trace::from_list("t", (1..=100).flat_map(|m| [m, m]).collect());
        let params = DirectionParams {
            trace: Some(trace),
            rate_bps: 1,
            queue_packets: None,
            ..Default::default()
        };
        let mut s = with_mtu(params, 1504);
        // 1000 full-size packets offered at once leave two per ms, wrapping round the trace.
        let out = run(&mut s, 1000, 1504 + 14, 0);
        assert_eq!(out.len(), 1000);
        assert_eq!(out[0].1, 1_000_000);
        assert_eq!(out[999].1, 500_000_000);
        let c = s.counters().snapshot();
        assert_eq!(c.dropped_queue, 0);
    }

    #[test]
    fn the_queueing_delay_is_sampled_uniformly_in_time() {
        // 1000-byte frames at 80 Mbit/s: 1024 wire bytes, 102.4 us each. Ten at t = 0 make
        // 1024 us of backlog, then the link idles until 2 ms: sampled every 100 us, the
        // delay a packet arriving then would see is 0 (at 0, just before the ten), then 924,
        // 824, ... 24 us, then zeros.
        let mut s = scheduler(DirectionParams {
            rate_bps: 80_000_000,
            ..Default::default()
        });
        for i in 0..10 {
            s.offer(0, 1000, i);
        }
        while s.pop_due(2_000_000).is_some() {}
        let b = s.timing().backlog.snapshot();
        assert_eq!(b.count, 21);
        assert_eq!(
            b.sum_ns,
            (1..11).map(|k| 1_024_000 - k * 100_000).sum::<u64>()
        );
        assert_eq!(b.max_ns, 924_000);
        // 16th of 21 sorted samples: eleven zeros, then 24, 124, 224, 324, 424 us.
        assert!(b.quantile(0.75).unwrap().abs_diff(424_000) < 3_000, "{b:?}");
        // Per packet, the ten waited 0, 102.4, ... 921.6 us.
        let q = s.timing().queueing.snapshot();
        assert_eq!(q.count, 10);
        assert!(q.sum_ns.abs_diff(4_608_000) < 10, "{}", q.sum_ns);
    }
}
