//! One link direction on a clock given by the caller (nanoseconds): a byte- and packet-counted
//! drop-tail queue in front of a serialiser (a rate, or a trace of delivery opportunities),
//! the loss stage, and a delay line that holds each surviving packet until its release time.
//!
//! The serialiser is lazy: a packet's finish time is computed when it reaches the head of the
//! queue, from the parameters in force then, so a link's rate, delay, loss or queue can change
//! while packets wait (see [`Scheduler::set_params`]). Nothing needs a timer of its own: the
//! caller advances the clock whenever it wakes, and [`Scheduler::next_release_ns`] says when
//! the next packet will be due.

use crate::atm::{CellSwitch, Done};
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
    processing: Processor,
    /// Cell-level ATM switching in place of the frame queue and serialiser, when the
    /// direction has `cells` or `pcr` (see [`crate::atm`]).
    cells: Option<CellSwitch<T>>,
    /// Time between cells arriving at the cell switch (0: a frame's cells come together).
    cell_input_ns: f64,
    /// Frames the cell switch finished with, reused between calls.
    cells_done: Vec<Done<T>>,
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
        let max_frame_bytes = mtu as usize + TAP_HEADER_BYTES;
        Scheduler {
            cells: params
                .cell_config(max_frame_bytes, 0.0)
                .map(|c| CellSwitch::new(c, now_ns)),
            cell_input_ns: 0.0,
            cells_done: Vec::new(),
            loss: LossModel::new(params.loss, params.gilbert, params.ber),
            serialiser: Serialiser::new(&params, now_ns),
            line: DelayLine::new(reorders(&params)),
            max_frame_bytes,
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

    /// Cells arriving at this direction's cell switch come `ns` apart (the input line's cell
    /// time; see [`crate::atm`]).
    pub fn with_cell_input(mut self, ns: f64) -> Self {
        self.cell_input_ns = ns;
        self.reconfigure_cells(0);
        self
    }

    /// Cells arriving at the cell switch from the next parameter change on come `ns` apart.
    pub fn set_cell_input(&mut self, ns: f64) {
        self.cell_input_ns = ns;
    }

    /// Starts, changes or stops cell-level switching after a parameter change; what a
    /// stopped switch held is dropped (returned, counted in `dropped_resize` by the caller).
    fn reconfigure_cells(&mut self, now_ns: u64) -> u64 {
        let config = self
            .params
            .cell_config(self.max_frame_bytes, self.cell_input_ns);
        match (self.cells.as_mut(), config) {
            (Some(switch), Some(c)) => switch.reconfigure(c),
            (None, Some(c)) => self.cells = Some(CellSwitch::new(c, now_ns)),
            (Some(_), None) => {
                let held = self.cells.take().expect("matched Some");
                let mut dropped = 0;
                for (_, bytes) in held.into_frames() {
                    self.queued_packets -= 1;
                    self.queued_bytes -= bytes;
                    dropped += 1;
                }
                return dropped;
            }
            (None, None) => {}
        }
        0
    }

    /// Runs the cell switch up to `now_ns` and passes the frames it delivered on to the loss
    /// stage and the delay line.
    fn advance_cells(&mut self, now_ns: u64) {
        let Some(switch) = self.cells.as_mut() else {
            return;
        };
        let mut done = std::mem::take(&mut self.cells_done);
        switch.advance(now_ns, &self.counters, &mut done);
        for d in done.drain(..) {
            let Some(finish) = d.finish_ns else {
                self.queued_packets -= 1;
                self.queued_bytes -= d.bytes;
                continue;
            };
            self.timing.queueing.record(d.queueing_ns);
            let fate = self.loss.judge(&mut self.rng, d.bytes as usize);
            let jitter_ns = self.draw_jitter(fate.is_some());
            self.complete(InService {
                start: finish as f64,
                finish: finish as f64,
                bytes: d.bytes,
                fate,
                jitter_ns,
                item: d.item,
            });
        }
        self.cells_done = done;
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
        self.offer_on(now_ns, frame_bytes, 0, item)
    }

    /// [`Self::offer`] for a frame of virtual circuit `vc` (what a cell switch queues apart;
    /// see [`crate::atm::vc_key`]).
    pub fn offer_on(&mut self, now_ns: u64, frame_bytes: usize, vc: u64, item: T) -> Verdict {
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
        if let Some(switch) = self.cells.as_mut() {
            switch.offer(arrival, frame_bytes, vc, item);
            self.backlog_end = switch.backlog_end();
            self.note_high_water();
            return Verdict::Accepted;
        }
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
        self.note_high_water();
        Verdict::Accepted
    }

    fn note_high_water(&self) {
        let c = &self.counters;
        c.queue_high_water_bytes
            .fetch_max(self.queued_bytes, Relaxed);
        c.queue_high_water_packets
            .fetch_max(self.queued_packets, Relaxed);
    }

    /// The delay a packet gets beyond the configured one (0 for a lost packet).
    fn draw_jitter(&mut self, lost: bool) -> i64 {
        if lost || self.params.jitter_ns == 0 {
            return 0;
        }
        let delay = jittered_delay_ns(
            &mut self.rng,
            self.params.delay_ns,
            self.params.jitter_ns,
            self.params.jitter_distribution,
        );
        delay as i64 - self.params.delay_ns as i64
    }

    fn start_service(&mut self, start: f64, arrival: u64, bytes: u64, item: T) {
        self.timing
            .queueing
            .record((start as u64).saturating_sub(arrival));
        let finish = self.serialiser.finish(start, bytes);
        // Lost frames still use the wire: the loss stage sits after the serialiser.
        let fate = self.loss.judge(&mut self.rng, bytes as usize);
        let jitter_ns = self.draw_jitter(fate.is_some());
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
        self.advance_cells(now_ns);
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
        // A cell switch's frame leaves no earlier than its bound plus the delay (jitter may
        // shorten the delay: then the bound itself).
        let cells = self
            .cells
            .as_ref()
            .and_then(|c| c.next_finish_bound())
            .map(|b| {
                if self.params.jitter_ns == 0 {
                    b + self.params.delay_ns
                } else {
                    b
                }
            });
        [self.line.peek(), head, cells].into_iter().flatten().min()
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
        let stopped = self.reconfigure_cells(now_ns);
        DirectionCounters::add(&self.counters.dropped_resize, stopped);
        let dropped = self.shrink_queue() + stopped;
        self.backlog_end = match &self.cells {
            Some(switch) => switch.backlog_end(),
            None => self.backlog_end_now(),
        };
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
mod tests;
