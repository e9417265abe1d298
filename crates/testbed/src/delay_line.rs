//! The delay line of one link direction: packets that have left the serialiser, each held
//! until its release time.
//!
//! Without reordering the line is FIFO: a packet never leaves before the one ahead of it
//! (jitter compresses). A delay decrease at run time opens a new lane: packets sent after the
//! change may pass those still in flight on the old, longer path, as after a route change;
//! within a lane the order is kept. With reordering each packet leaves at its own time.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// One packet in flight.
pub struct Entry<T> {
    pub release_ns: u64,
    /// When its serialisation ended (release minus this is the delay it was given).
    pub finish_ns: u64,
    pub bytes: u64,
    pub item: T,
}

/// A packet in a reordering line, with its arrival rank for ties.
pub struct Timed<T> {
    seq: u64,
    entry: Entry<T>,
}

impl<T> Timed<T> {
    fn key(&self) -> (u64, u64) {
        (self.entry.release_ns, self.seq)
    }
}

impl<T> PartialEq for Timed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
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
        self.key().cmp(&other.key())
    }
}

pub enum DelayLine<T> {
    /// Release times non-decreasing within each lane; usually one lane.
    Fifo {
        lanes: Vec<VecDeque<Entry<T>>>,
        last_release: u64,
        bytes: u64,
    },
    /// Each packet leaves at its own time; ties keep arrival order.
    Reordering {
        heap: BinaryHeap<Reverse<Timed<T>>>,
        next_seq: u64,
        bytes: u64,
    },
}

impl<T> DelayLine<T> {
    pub fn new(reorder: bool) -> DelayLine<T> {
        if reorder {
            DelayLine::Reordering {
                heap: BinaryHeap::new(),
                next_seq: 0,
                bytes: 0,
            }
        } else {
            DelayLine::Fifo {
                lanes: vec![VecDeque::new()],
                last_release: 0,
                bytes: 0,
            }
        }
    }

    pub fn is_reordering(&self) -> bool {
        matches!(self, DelayLine::Reordering { .. })
    }

    /// Adds a packet; returns its release time (later than asked if FIFO order requires).
    pub fn push(&mut self, mut entry: Entry<T>) -> u64 {
        match self {
            DelayLine::Fifo {
                lanes,
                last_release,
                bytes,
            } => {
                entry.release_ns = entry.release_ns.max(*last_release);
                *last_release = entry.release_ns;
                *bytes += entry.bytes;
                let release = entry.release_ns;
                lanes.last_mut().expect("a lane").push_back(entry);
                release
            }
            DelayLine::Reordering {
                heap,
                next_seq,
                bytes,
            } => {
                *bytes += entry.bytes;
                let release = entry.release_ns;
                heap.push(Reverse(Timed {
                    seq: *next_seq,
                    entry,
                }));
                *next_seq += 1;
                release
            }
        }
    }

    /// Lets packets pushed from now on pass those in flight (FIFO only; a no-op otherwise).
    pub fn new_lane(&mut self) {
        if let DelayLine::Fifo {
            lanes,
            last_release,
            ..
        } = self
        {
            if lanes.last().is_some_and(|l| !l.is_empty()) {
                lanes.push(VecDeque::new());
            }
            *last_release = 0;
        }
    }

    fn earliest_lane(lanes: &[VecDeque<Entry<T>>]) -> Option<usize> {
        if lanes.len() == 1 {
            return (!lanes[0].is_empty()).then_some(0);
        }
        lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.front().map(|e| (e.release_ns, i)))
            .min()
            .map(|(_, i)| i)
    }

    /// Earliest release time in the line.
    pub fn peek(&self) -> Option<u64> {
        match self {
            DelayLine::Fifo { lanes, .. } => {
                Self::earliest_lane(lanes).and_then(|i| lanes[i].front().map(|e| e.release_ns))
            }
            DelayLine::Reordering { heap, .. } => heap.peek().map(|t| t.0.entry.release_ns),
        }
    }

    pub fn pop(&mut self) -> Option<Entry<T>> {
        match self {
            DelayLine::Fifo { lanes, bytes, .. } => {
                let i = Self::earliest_lane(lanes)?;
                let entry = lanes[i].pop_front()?;
                if lanes[i].is_empty() && i + 1 < lanes.len() {
                    lanes.remove(i);
                }
                *bytes -= entry.bytes;
                Some(entry)
            }
            DelayLine::Reordering { heap, bytes, .. } => heap.pop().map(|Reverse(t)| {
                *bytes -= t.entry.bytes;
                t.entry
            }),
        }
    }

    pub fn bytes(&self) -> u64 {
        match self {
            DelayLine::Fifo { bytes, .. } | DelayLine::Reordering { bytes, .. } => *bytes,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            DelayLine::Fifo { lanes, .. } => lanes.iter().map(VecDeque::len).sum(),
            DelayLine::Reordering { heap, .. } => heap.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same packets in a line of the other kind (reordering switched at run time). Going
    /// to FIFO keeps each packet's release time and lets later ones not pass it.
    pub fn convert(mut self, reorder: bool) -> DelayLine<T> {
        if self.is_reordering() == reorder {
            return self;
        }
        let mut line = DelayLine::new(reorder);
        while let Some(entry) = self.pop() {
            line.push(entry);
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(release_ns: u64, item: u32) -> Entry<u32> {
        Entry {
            release_ns,
            finish_ns: 0,
            bytes: 10,
            item,
        }
    }

    fn drain(line: &mut DelayLine<u32>) -> Vec<(u32, u64)> {
        std::iter::from_fn(|| line.pop().map(|e| (e.item, e.release_ns))).collect()
    }

    #[test]
    fn fifo_keeps_order_and_a_new_lane_lets_later_packets_pass() {
        let mut line = DelayLine::new(false);
        assert_eq!(line.push(entry(100, 1)), 100);
        // Jitter would put it earlier: FIFO holds it behind packet 1.
        assert_eq!(line.push(entry(90, 2)), 100);
        line.new_lane();
        line.push(entry(50, 3));
        line.push(entry(40, 4));
        assert_eq!(line.len(), 4);
        assert_eq!(line.bytes(), 40);
        assert_eq!(line.peek(), Some(50));
        assert_eq!(drain(&mut line), [(3, 50), (4, 50), (1, 100), (2, 100)]);
        assert!(line.is_empty());
        assert_eq!(line.bytes(), 0);
    }

    #[test]
    fn reordering_releases_by_time_and_converts_both_ways() {
        let mut line = DelayLine::new(true);
        for (t, i) in [(30, 1), (10, 2), (20, 3), (10, 4)] {
            line.push(entry(t, i));
        }
        let mut fifo = line.convert(false);
        assert!(!fifo.is_reordering());
        assert_eq!(drain(&mut fifo), [(2, 10), (4, 10), (3, 20), (1, 30)]);
        let mut back = DelayLine::new(false);
        back.push(entry(5, 9));
        let mut line = back.convert(true);
        assert_eq!(drain(&mut line), [(9, 5)]);
    }
}
