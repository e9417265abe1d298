//! Per-direction counters: updated lock-free by the forwarding thread, snapshotted by the
//! reporter thread into the state directory, read by `status --json`.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Release},
};

#[derive(Debug, Default)]
pub struct DirectionCounters {
    pub packets_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub packets_forwarded: AtomicU64,
    pub bytes_forwarded: AtomicU64,
    pub dropped_queue: AtomicU64,
    pub dropped_loss: AtomicU64,
    pub dropped_ber: AtomicU64,
    pub dropped_oversize: AtomicU64,
    /// Dropped from a queue made smaller (by `testbed set` or a schedule) than its content.
    pub dropped_resize: AtomicU64,
    /// Dropped because the receiving end's processing backlog was full.
    pub dropped_backlog: AtomicU64,
    pub write_errors: AtomicU64,
    /// Circuits set up by this direction's packets (see [`crate::circuit`]).
    pub circuit_setups: AtomicU64,
    /// Circuits released after their idle timeout, counted when the next packet finds it so.
    pub circuit_releases: AtomicU64,
    pub queue_high_water_bytes: AtomicU64,
    pub queue_high_water_packets: AtomicU64,
    /// Cell-level ATM switching (see [`crate::atm`]): cells sent on the line.
    pub cells_sent: AtomicU64,
    /// Cells the switch discarded (full VC queue, PPD, EPD).
    pub cells_dropped: AtomicU64,
    /// AAL5 frames lost at reassembly because one of their cells (or the previous frame's
    /// last cell) was lost.
    pub frames_lost_cells: AtomicU64,
    /// Frames refused whole by early packet discard.
    pub frames_dropped_epd: AtomicU64,
    /// Cells sent for frames that were lost at reassembly.
    pub cells_wasted: AtomicU64,
}

impl DirectionCounters {
    /// Counts `n` (Release: a snapshot that sees it also sees what the thread counted before,
    /// a packet's arrival before its fate).
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Release);
    }

    /// The counters now. A packet's fate (forwarded or dropped) is counted after its
    /// arrival, so the fates are read first and the arrivals last: a snapshot never shows a
    /// packet out that it does not show in (read the other way, a reader kept from its CPU
    /// between the two reads once saw one frame more out than in, as a loaded CI run did).
    pub fn snapshot(&self) -> CounterValues {
        let load = |c: &AtomicU64| c.load(Acquire);
        let mut v = CounterValues {
            packets_forwarded: load(&self.packets_forwarded),
            bytes_forwarded: load(&self.bytes_forwarded),
            dropped_queue: load(&self.dropped_queue),
            dropped_loss: load(&self.dropped_loss),
            dropped_ber: load(&self.dropped_ber),
            dropped_oversize: load(&self.dropped_oversize),
            dropped_resize: load(&self.dropped_resize),
            dropped_backlog: load(&self.dropped_backlog),
            write_errors: load(&self.write_errors),
            circuit_setups: load(&self.circuit_setups),
            circuit_releases: load(&self.circuit_releases),
            queue_high_water_bytes: load(&self.queue_high_water_bytes),
            queue_high_water_packets: load(&self.queue_high_water_packets),
            cells_sent: load(&self.cells_sent),
            cells_dropped: load(&self.cells_dropped),
            frames_lost_cells: load(&self.frames_lost_cells),
            frames_dropped_epd: load(&self.frames_dropped_epd),
            cells_wasted: load(&self.cells_wasted),
            ..CounterValues::default()
        };
        v.packets_in = load(&self.packets_in);
        v.bytes_in = load(&self.bytes_in);
        v
    }
}

/// A plain copy of [`DirectionCounters`]. Bytes are frame bytes as carried (Ethernet header
/// plus IP packet), not wire bytes with framing overhead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterValues {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_forwarded: u64,
    pub bytes_forwarded: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_ber: u64,
    pub dropped_oversize: u64,
    #[serde(default)]
    pub dropped_resize: u64,
    #[serde(default)]
    pub dropped_backlog: u64,
    pub write_errors: u64,
    #[serde(default)]
    pub circuit_setups: u64,
    #[serde(default)]
    pub circuit_releases: u64,
    pub queue_high_water_bytes: u64,
    pub queue_high_water_packets: u64,
    #[serde(default)]
    pub cells_sent: u64,
    #[serde(default)]
    pub cells_dropped: u64,
    #[serde(default)]
    pub frames_lost_cells: u64,
    #[serde(default)]
    pub frames_dropped_epd: u64,
    #[serde(default)]
    pub cells_wasted: u64,
}

impl CounterValues {
    /// The frames dropped, by cause, as `testbed status` names the causes.
    pub fn drops(&self) -> [(&'static str, u64); 6] {
        [
            ("queue", self.dropped_queue),
            ("loss", self.dropped_loss),
            ("ber", self.dropped_ber),
            ("oversize", self.dropped_oversize),
            ("resize", self.dropped_resize),
            ("backlog", self.dropped_backlog),
        ]
    }

    /// What was counted after `earlier` (high-water marks are kept as they are).
    pub fn since(&self, earlier: &CounterValues) -> CounterValues {
        CounterValues {
            packets_in: self.packets_in.saturating_sub(earlier.packets_in),
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
            packets_forwarded: self
                .packets_forwarded
                .saturating_sub(earlier.packets_forwarded),
            bytes_forwarded: self.bytes_forwarded.saturating_sub(earlier.bytes_forwarded),
            dropped_queue: self.dropped_queue.saturating_sub(earlier.dropped_queue),
            dropped_loss: self.dropped_loss.saturating_sub(earlier.dropped_loss),
            dropped_ber: self.dropped_ber.saturating_sub(earlier.dropped_ber),
            dropped_oversize: self
                .dropped_oversize
                .saturating_sub(earlier.dropped_oversize),
            dropped_resize: self.dropped_resize.saturating_sub(earlier.dropped_resize),
            dropped_backlog: self.dropped_backlog.saturating_sub(earlier.dropped_backlog),
            write_errors: self.write_errors.saturating_sub(earlier.write_errors),
            circuit_setups: self.circuit_setups.saturating_sub(earlier.circuit_setups),
            circuit_releases: self
                .circuit_releases
                .saturating_sub(earlier.circuit_releases),
            cells_sent: self.cells_sent.saturating_sub(earlier.cells_sent),
            cells_dropped: self.cells_dropped.saturating_sub(earlier.cells_dropped),
            frames_lost_cells: self
                .frames_lost_cells
                .saturating_sub(earlier.frames_lost_cells),
            frames_dropped_epd: self
                .frames_dropped_epd
                .saturating_sub(earlier.frames_dropped_epd),
            cells_wasted: self.cells_wasted.saturating_sub(earlier.cells_wasted),
            ..*self
        }
    }
}

/// Counters of one link direction together with what identifies it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkCounters {
    /// Index of the link in the topology file (0-based).
    pub link: usize,
    /// `a_to_b` (ends[0] -> ends[1]) or `b_to_a`.
    pub direction: String,
    pub from: String,
    pub to: String,
    #[serde(flatten)]
    pub values: CounterValues,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Arc;

    /// The forwarder counts on until the observer has looked 100 times while it ran
    /// (a loaded machine may not run the observer during the first 300,000 packets),
    /// for at most 10 s.
    #[test]
    fn a_snapshot_never_shows_a_packet_out_before_it_came_in() {
        let c = Arc::new(DirectionCounters::default());
        let done = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU64::new(0));
        let forwarder = {
            let (c, done, seen) = (c.clone(), done.clone(), seen.clone());
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                let mut i = 0u64;
                while i < 300_000
                    || (seen.load(Relaxed) < 100
                        && started.elapsed() < std::time::Duration::from_secs(10))
                {
                    DirectionCounters::add(&c.packets_in, 1);
                    if i.is_multiple_of(7) {
                        DirectionCounters::add(&c.dropped_queue, 1);
                    } else {
                        DirectionCounters::add(&c.packets_forwarded, 1);
                    }
                    i += 1;
                }
                done.store(true, Release);
                i
            })
        };
        while !done.load(Acquire) {
            let v = c.snapshot();
            let out = v.packets_forwarded + v.dropped_queue;
            assert!(
                out <= v.packets_in,
                "{out} out of {} in: {v:?}",
                v.packets_in
            );
            seen.fetch_add(1, Relaxed);
        }
        let packets = forwarder.join().unwrap();
        let v = c.snapshot();
        assert_eq!(v.packets_in, packets);
        assert_eq!(v.packets_forwarded + v.dropped_queue, packets);
        let seen = seen.load(Relaxed);
        assert!(seen >= 100, "{seen} snapshots while the forwarder ran");
    }
}
