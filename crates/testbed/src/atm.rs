//! Cell-level ATM switching on a link direction whose framing is AAL5 (keys `cells`, `pcr`,
//! `discard`, `epd_threshold`). Each virtual circuit (VC: one pair of sending and receiving
//! interfaces, told apart by the frame's MAC addresses) has its own queue counted in 53-byte
//! cells; the line sends one cell per cell time (424 bits at the direction's rate), serving
//! the VCs that have a cell waiting round robin, each no faster than its peak cell rate. A
//! cell that finds its VC's queue full is lost, and AAL5 then loses the whole frame at
//! reassembly (and the next one as well when the lost cell was the frame's last: the
//! reassembler joins the two and the CRC fails). Without a discard policy the frame's other
//! cells still cross the line ("wasted cells"); partial packet discard (PPD) drops the
//! frame's remaining cells but its last; early packet discard (EPD) refuses a whole frame
//! whose first cell finds the queue above the threshold (and acts as PPD if a cell of a
//! frame it accepted is lost all the same).
//!
//! Cells of a frame enter the queue one input cell time apart from the frame's arrival (the
//! fastest line into the switch the direction starts at, no faster than that line's peak
//! cell rate where it has one: a paced VC's cells arrive spaced by it, even when the
//! emulator released the frames late and together; at once when the direction starts at
//! a host or a router, whose frames are whole when handed over). Like the scheduler's serialiser the
//! switch is lazy: [`CellSwitch::advance`] runs the cell events up to the caller's clock and
//! hands back every frame it finished with.

use crate::counters::DirectionCounters;
use crate::framing::{Framing, ATM_CELL_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Bits in one 53-byte cell.
pub const CELL_BITS: u64 = ATM_CELL_BYTES * 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Discard {
    /// Cells are dropped one by one; the rest of a damaged frame still goes out.
    #[default]
    None,
    /// Partial packet discard: after a lost cell, the frame's other cells but its last go.
    Ppd,
    /// Early packet discard: a frame starting above the threshold is refused whole.
    Epd,
}

impl Discard {
    pub fn from_name(name: &str) -> Option<Discard> {
        match name {
            "none" => Some(Discard::None),
            "ppd" => Some(Discard::Ppd),
            "epd" => Some(Discard::Epd),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Discard::None => "none",
            Discard::Ppd => "ppd",
            Discard::Epd => "epd",
        }
    }
}

/// The cell-level settings of one direction, in the switch's units.
#[derive(Debug, Clone, PartialEq)]
pub struct CellConfig {
    /// One cell at the line's rate.
    pub cell_ns: f64,
    /// Cells each VC's queue holds (u64::MAX: no limit).
    pub limit: u64,
    pub discard: Discard,
    /// EPD refuses a frame whose first cell finds more than this many cells queued.
    pub epd_threshold: u64,
    /// Least time between two cells of one VC (1 / PCR; 0: none).
    pub pcr_gap_ns: f64,
    /// Time between two cells arriving (0: a frame's cells arrive together).
    pub input_cell_ns: f64,
}

/// Cells of an AAL5 frame read from a TAP (Ethernet header included).
pub fn cells_of_tap_frame(frame_bytes: usize) -> u32 {
    (Framing::AtmAal5.wire_bytes_for_tap_frame(frame_bytes) / ATM_CELL_BYTES) as u32
}

/// Default EPD threshold: room for one whole largest frame above it (half the queue when
/// the queue holds less than two frames).
pub fn default_epd_threshold(limit: u64, max_frame_bytes: usize) -> u64 {
    let frame = cells_of_tap_frame(max_frame_bytes) as u64;
    if limit >= 2 * frame {
        limit - frame
    } else {
        (limit / 2).max(1)
    }
}

/// The VC a frame belongs to: its destination and source MAC addresses.
pub fn vc_key(frame: &[u8]) -> u64 {
    if frame.len() < 12 {
        return 0;
    }
    let mut a = [0u8; 8];
    a[..6].copy_from_slice(&frame[..6]);
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(&frame[6..12]);
    u64::from_le_bytes(a) ^ u64::from_le_bytes(b).rotate_left(24)
}

/// A frame the switch is done with: delivered at `finish_ns`, or lost (`None`).
pub struct Done<T> {
    pub item: T,
    pub bytes: u64,
    pub finish_ns: Option<u64>,
    /// Time its cells spent waiting behind others (finish - arrival - its own cell times).
    pub queueing_ns: u64,
}

struct Frame<T> {
    item: T,
    bytes: u64,
    arrival: u64,
    cells: u32,
    arrived: u32,
    queued: u32,
    sent: u32,
    first_cell_ns: f64,
    /// Time between its arriving cells (the input line's when the frame was offered).
    input_gap_ns: f64,
    refused: bool,
    lost: bool,
    discarding: bool,
    eom_queued: bool,
    eom_sent: bool,
    last_sent_end: f64,
}

struct Vc<T> {
    key: u64,
    frames: VecDeque<Frame<T>>,
    /// Cells in this VC's queue.
    queued: u64,
    /// Earliest time its next cell may leave (peak cell rate).
    next_allowed: f64,
    /// Index in `frames` of the first frame whose cells have not all arrived.
    arriving: usize,
    /// The reassembler holds cells of a frame whose last cell was lost.
    partial: bool,
}

pub struct CellSwitch<T> {
    config: CellConfig,
    vcs: Vec<Vc<T>>,
    /// VCs of the frames whose cells are still to arrive, in arrival order (one input line).
    input: VecDeque<usize>,
    /// When the input line has brought the last cell offered so far.
    input_free: f64,
    /// When the output line ends the cell it is sending.
    line_free: f64,
    clock: f64,
    /// Round-robin position: the VC served next, if it has a cell.
    next_vc: usize,
    queued_cells: u64,
    frames_held: usize,
}

impl<T> CellSwitch<T> {
    pub fn new(config: CellConfig, now_ns: u64) -> CellSwitch<T> {
        CellSwitch {
            config,
            vcs: Vec::new(),
            input: VecDeque::new(),
            input_free: 0.0,
            line_free: 0.0,
            clock: now_ns as f64,
            next_vc: 0,
            queued_cells: 0,
            frames_held: 0,
        }
    }

    /// New settings from `testbed set` or a schedule; cells already queued stay (a smaller
    /// queue only stops new cells).
    pub fn reconfigure(&mut self, config: CellConfig) {
        self.config = config;
    }

    pub fn config(&self) -> &CellConfig {
        &self.config
    }

    /// Frames held (cells arriving, queued or on the line).
    pub fn frames_held(&self) -> usize {
        self.frames_held
    }

    /// Every frame still held, for a switch being taken away.
    pub fn into_frames(self) -> impl Iterator<Item = (T, u64)> {
        self.vcs
            .into_iter()
            .flat_map(|v| v.frames.into_iter().map(|f| (f.item, f.bytes)))
    }

    /// Takes a frame of `frame_bytes` on VC `vc` arriving at `now_ns` (after [`Self::advance`]
    /// to `now_ns`).
    pub fn offer(&mut self, now_ns: u64, frame_bytes: usize, vc: u64, item: T) {
        let index = match self.vcs.iter().position(|v| v.key == vc) {
            Some(i) => i,
            None => {
                self.vcs.push(Vc {
                    key: vc,
                    frames: VecDeque::new(),
                    queued: 0,
                    next_allowed: 0.0,
                    arriving: 0,
                    partial: false,
                });
                self.vcs.len() - 1
            }
        };
        let cells = cells_of_tap_frame(frame_bytes).max(1);
        let first = self.input_free.max(now_ns as f64);
        let gap = self.config.input_cell_ns;
        self.input_free = first + cells as f64 * gap;
        self.vcs[index].frames.push_back(Frame {
            item,
            bytes: frame_bytes as u64,
            arrival: now_ns,
            cells,
            arrived: 0,
            queued: 0,
            sent: 0,
            first_cell_ns: first,
            input_gap_ns: gap,
            refused: false,
            lost: false,
            discarding: false,
            eom_queued: false,
            eom_sent: false,
            last_sent_end: first,
        });
        self.input.push_back(index);
        self.frames_held += 1;
    }

    /// When the input line brings the next cell.
    fn next_arrival(&self) -> f64 {
        let Some(&v) = self.input.front() else {
            return f64::INFINITY;
        };
        let vc = &self.vcs[v];
        let f = &vc.frames[vc.arriving];
        f.first_cell_ns + f.arrived as f64 * f.input_gap_ns
    }

    /// When the line sends the next cell, if nothing else arrives.
    fn next_departure(&self) -> f64 {
        if self.queued_cells == 0 {
            return f64::INFINITY;
        }
        let allowed = self
            .vcs
            .iter()
            .filter(|v| v.queued > 0)
            .map(|v| v.next_allowed)
            .fold(f64::INFINITY, f64::min);
        // A cell leaves no earlier than now: it may have arrived on an idle line.
        allowed.max(self.line_free).max(self.clock)
    }

    /// Runs the cell events up to `now_ns`; frames finished with are appended to `done`.
    pub fn advance(&mut self, now_ns: u64, counters: &DirectionCounters, done: &mut Vec<Done<T>>) {
        let until = now_ns as f64;
        loop {
            let (arrival, departure) = (self.next_arrival(), self.next_departure());
            let t = arrival.min(departure);
            if t > until {
                break;
            }
            self.clock = t;
            if arrival <= departure {
                self.arrive(arrival, counters, done);
            } else {
                self.depart(departure, counters, done);
            }
        }
        self.clock = self.clock.max(until);
    }

    fn arrive(&mut self, t: f64, counters: &DirectionCounters, done: &mut Vec<Done<T>>) {
        let v = self.input[0];
        let (limit, discard, threshold) = (
            self.config.limit,
            self.config.discard,
            self.config.epd_threshold,
        );
        let vc = &mut self.vcs[v];
        let f = &mut vc.frames[vc.arriving];
        let last = f.arrived + 1 == f.cells;
        if f.arrived == 0 && discard == Discard::Epd && vc.queued > threshold {
            f.refused = true;
        }
        let accept = if f.refused || (f.discarding && !last) {
            false
        } else if vc.queued >= limit {
            f.lost = true;
            f.discarding = discard != Discard::None;
            false
        } else {
            true
        };
        if accept {
            vc.queued += 1;
            f.queued += 1;
            f.eom_queued |= last;
            self.queued_cells += 1;
        } else {
            DirectionCounters::add(&counters.cells_dropped, 1);
        }
        f.arrived += 1;
        if last {
            vc.arriving += 1;
            self.input.pop_front();
            self.resolve(v, t, counters, done);
        }
    }

    fn depart(&mut self, t: f64, counters: &DirectionCounters, done: &mut Vec<Done<T>>) {
        let n = self.vcs.len();
        let pick = (0..n)
            .map(|k| (self.next_vc + k) % n)
            .find(|&i| self.vcs[i].queued > 0 && self.vcs[i].next_allowed <= t)
            .expect("a departure time comes from a VC with a cell ready");
        self.next_vc = (pick + 1) % n;
        let end = t + self.config.cell_ns;
        self.line_free = end;
        self.queued_cells -= 1;
        let vc = &mut self.vcs[pick];
        vc.queued -= 1;
        vc.next_allowed = t + self.config.pcr_gap_ns;
        // Cells leave in order: the first frame with a cell queued is the front one.
        let f = vc.frames.front_mut().expect("a queued cell has its frame");
        f.queued -= 1;
        f.sent += 1;
        f.last_sent_end = end;
        if f.queued == 0 && f.arrived == f.cells && f.eom_queued {
            f.eom_sent = true;
        }
        DirectionCounters::add(&counters.cells_sent, 1);
        self.resolve(pick, t, counters, done);
    }

    /// Finishes the front frames of VC `v` that have nothing more to arrive or send.
    fn resolve(&mut self, v: usize, t: f64, counters: &DirectionCounters, done: &mut Vec<Done<T>>) {
        let cell_ns = self.config.cell_ns;
        let vc = &mut self.vcs[v];
        while vc
            .frames
            .front()
            .is_some_and(|f| f.arrived == f.cells && f.queued == 0)
        {
            let f = vc.frames.pop_front().expect("checked above");
            vc.arriving -= 1;
            self.frames_held -= 1;
            let joined = vc.partial && f.eom_sent;
            let delivered = !f.refused && !f.lost && !joined;
            if f.refused {
                DirectionCounters::add(&counters.frames_dropped_epd, 1);
            } else if !delivered {
                DirectionCounters::add(&counters.frames_lost_cells, 1);
                DirectionCounters::add(&counters.cells_wasted, f.sent as u64);
            }
            if f.eom_sent {
                vc.partial = false;
            } else if f.sent > 0 {
                vc.partial = true;
            }
            let finish = f.last_sent_end.max(t);
            let own = f.cells as f64 * cell_ns;
            done.push(Done {
                queueing_ns: (finish - f.arrival as f64 - own).max(0.0) as u64,
                finish_ns: delivered.then(|| finish.ceil() as u64),
                item: f.item,
                bytes: f.bytes,
            });
        }
    }

    /// No frame can be finished before this (a lower bound, later than the clock while
    /// frames are held), for the caller's wake-up.
    pub fn next_finish_bound(&self) -> Option<u64> {
        let per_cell = self.config.cell_ns.max(self.config.pcr_gap_ns);
        let bound = self
            .vcs
            .iter()
            .filter_map(|vc| {
                let f = vc.frames.front()?;
                let arrived = f.first_cell_ns + (f.cells - 1) as f64 * f.input_gap_ns;
                let sent = match f.queued {
                    0 => 0.0,
                    q => {
                        self.line_free.max(vc.next_allowed).max(self.clock)
                            + (q - 1) as f64 * per_cell
                            + self.config.cell_ns
                    }
                };
                Some(arrived.max(sent))
            })
            .fold(f64::INFINITY, f64::min);
        bound
            .is_finite()
            .then(|| (bound.ceil() as u64).max(self.clock as u64 + 1))
    }

    /// When the cells queued now will have left, if nothing else arrives.
    pub fn backlog_end(&self) -> f64 {
        let per_cell = self.config.cell_ns.max(self.config.pcr_gap_ns);
        self.line_free.max(self.clock) + self.queued_cells as f64 * per_cell
    }
}

#[cfg(test)]
mod tests;
