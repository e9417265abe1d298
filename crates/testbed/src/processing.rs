//! The receiving end's per-packet processing: a host (or switch) that spends a fixed CPU
//! time on every packet it takes in, as seed 004's simulation modelled its workstations
//! ("TCP processing and OS overhead time", 200-700 µs per packet) and a switch's
//! processing time. Packets reach the end after the link's delay, wait for it one at a time
//! in a backlog of a bounded number of packets (Linux's `netdev_max_backlog`) and are
//! dropped when it is full, counted as `dropped_backlog`. A host (or switch) has one such
//! server per link direction into it; a router one for all its interfaces (the emulator
//! shares it between the directions into the router), so its `packet_rate` is the
//! router's, whatever interface packets come in by.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A link direction's processing stage: the receiving end's own, or the one processor of
/// a router shared by every direction into it.
#[derive(Debug)]
pub enum Processor {
    Own(Processing),
    Shared(Arc<Mutex<Processing>>),
}

impl Default for Processor {
    fn default() -> Self {
        Processor::Own(Processing::default())
    }
}

impl Processor {
    /// [`Processing::admit`] on this direction's processor.
    pub fn admit(&mut self, arrival_ns: u64, cost_ns: u64, backlog: u64) -> Option<u64> {
        match self {
            Processor::Own(p) => p.admit(arrival_ns, cost_ns, backlog),
            Processor::Shared(p) => p
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .admit(arrival_ns, cost_ns, backlog),
        }
    }
}

#[derive(Debug, Default)]
pub struct Processing {
    /// When the end finishes the last packet admitted.
    free_ns: u64,
    /// When each packet still held (waiting or in processing) will be done, oldest first.
    done_ns: VecDeque<u64>,
}

impl Processing {
    /// A packet arriving at `arrival_ns` that takes `cost_ns` to process: when the end will
    /// have processed it, or None when the backlog already holds `backlog` packets (dropped).
    /// Without a processing time the packet passes at once, though never ahead of packets
    /// still held from before.
    pub fn admit(&mut self, arrival_ns: u64, cost_ns: u64, backlog: u64) -> Option<u64> {
        while self.done_ns.front().is_some_and(|&d| d <= arrival_ns) {
            self.done_ns.pop_front();
        }
        if cost_ns == 0 && self.done_ns.is_empty() {
            return Some(arrival_ns);
        }
        if self.done_ns.len() as u64 >= backlog.max(1) {
            return None;
        }
        let done = arrival_ns.max(self.free_ns) + cost_ns;
        self.free_ns = done;
        self.done_ns.push_back(done);
        Some(done)
    }

    /// Packets waiting for or in processing at the last arrival.
    pub fn held(&self) -> usize {
        self.done_ns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_leave_one_processing_time_apart() {
        let mut p = Processing::default();
        // Three packets at once, 500 us each: done at 500, 1000, 1500 us after arrival.
        let done: Vec<_> = (0..3)
            .map(|_| p.admit(1_000_000, 500_000, 10).unwrap())
            .collect();
        assert_eq!(done, vec![1_500_000, 2_000_000, 2_500_000]);
        // A packet arriving once the end is idle again waits only for itself.
        assert_eq!(p.admit(10_000_000, 500_000, 10), Some(10_500_000));
    }

    #[test]
    fn a_full_backlog_drops_and_frees_as_packets_finish() {
        let mut p = Processing::default();
        assert!(p.admit(0, 1_000, 2).is_some());
        assert!(p.admit(0, 1_000, 2).is_some());
        assert_eq!(p.admit(0, 1_000, 2), None);
        assert_eq!(p.held(), 2);
        // At 1 us the first is done: room for one more, behind the second.
        assert_eq!(p.admit(1_000, 1_000, 2), Some(3_000));
    }

    #[test]
    fn switching_processing_off_keeps_the_order_of_held_packets() {
        let mut p = Processing::default();
        assert_eq!(p.admit(0, 1_000_000, 10), Some(1_000_000));
        // Set to 0 while a packet is held: the next one may not overtake it.
        assert_eq!(p.admit(10, 0, 10), Some(1_000_000));
        assert_eq!(p.admit(2_000_000, 0, 10), Some(2_000_000));
    }

    #[test]
    fn a_link_direction_with_processing_spaces_and_bounds_what_it_delivers() {
        use crate::counters::DirectionCounters;
        use crate::params::DirectionParams;
        use crate::scheduler::Scheduler;
        use crate::timing::DirectionTiming;
        use std::sync::Arc;
        let params = DirectionParams {
            delay_ns: 1_000_000,
            per_packet_ns: 100_000,
            backlog_packets: 3,
            ..Default::default()
        };
        let counters = Arc::new(DirectionCounters::default());
        let timing = Arc::new(DirectionTiming::default());
        let mut s = Scheduler::new(params, 1500, 1, counters.clone(), timing, 0);
        for i in 0..5u64 {
            s.offer(0, 1000, i);
        }
        let mut released = Vec::new();
        let mut now = 0;
        while now < 3_000_000 {
            while let Some(e) = s.pop_due(now) {
                released.push((e.item, e.release_ns));
            }
            now += 10_000;
        }
        // The first three arrive at 1 ms and leave 0.1 ms apart; two find the backlog full.
        assert_eq!(
            released,
            vec![(0, 1_100_000), (1, 1_200_000), (2, 1_300_000)]
        );
        assert_eq!(counters.snapshot().dropped_backlog, 2);
    }

    #[test]
    fn directions_sharing_a_router_processor_share_its_rate() {
        use crate::counters::DirectionCounters;
        use crate::params::DirectionParams;
        use crate::scheduler::Scheduler;
        use crate::timing::DirectionTiming;
        let params = DirectionParams {
            per_packet_ns: 100_000,
            ..Default::default()
        };
        let router = Arc::new(Mutex::new(Processing::default()));
        let mut links: Vec<Scheduler<u64>> = (0..2)
            .map(|i| {
                Scheduler::new(
                    params.clone(),
                    1500,
                    i,
                    Arc::new(DirectionCounters::default()),
                    Arc::new(DirectionTiming::default()),
                    0,
                )
                .with_shared_processing(router.clone())
            })
            .collect();
        for (i, link) in links.iter_mut().enumerate() {
            for k in 0..5u64 {
                link.offer(0, 1000, i as u64 * 10 + k);
            }
        }
        let mut released = Vec::new();
        for now in (0..2_000_000).step_by(10_000) {
            for link in &mut links {
                while let Some(e) = link.pop_due(now) {
                    released.push(e.release_ns);
                }
            }
        }
        released.sort();
        // Ten packets, one processor: one every 100 us, the last at 1 ms (not 0.5 ms).
        let want: Vec<u64> = (1..=10).map(|k| k * 100_000).collect();
        assert_eq!(released, want);
    }
}
