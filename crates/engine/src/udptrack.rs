//! What a UDP receiver learns from sequence numbers and send times.

use linkperf_proto::results::UdpStats;

/// Sequence numbers remembered for duplicate detection; a datagram older than
/// this behind the newest is counted as out of order but cannot be told from a
/// duplicate (it would need reordering by more than 65536 datagrams).
const WINDOW: u64 = 1 << 16;

#[derive(Debug, Clone)]
pub struct UdpTracker {
    /// Distinct datagrams received.
    packets: u64,
    bytes: u64,
    /// One past the highest sequence number seen.
    next_expected: u64,
    out_of_order: u64,
    duplicates: u64,
    seen: Vec<u64>,
    jitter_ns: f64,
    last_transit_ns: Option<i64>,
    owd_sum_ns: f64,
    owd_count: u64,
    /// Datagrams the sender says it sent (from its FIN), once known.
    sender_total: Option<u64>,
}

impl Default for UdpTracker {
    fn default() -> Self {
        UdpTracker {
            packets: 0,
            bytes: 0,
            next_expected: 0,
            out_of_order: 0,
            duplicates: 0,
            seen: vec![0; (WINDOW / 64) as usize],
            jitter_ns: 0.0,
            last_transit_ns: None,
            owd_sum_ns: 0.0,
            owd_count: 0,
            sender_total: None,
        }
    }
}

impl UdpTracker {
    pub fn new() -> Self {
        Self::default()
    }

    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let slot = (seq % WINDOW) as usize;
        (&mut self.seen[slot / 64], 1u64 << (slot % 64))
    }

    /// Records one data datagram received at `recv_ns` (Unix-epoch ns).
    pub fn record(&mut self, seq: u64, sent_ns: u64, recv_ns: u64, len: usize) {
        if seq >= self.next_expected {
            // Clear the window slots we skip over so stale bits never look like duplicates.
            let clear_from = self.next_expected.max(seq.saturating_sub(WINDOW - 1));
            for s in clear_from..seq {
                let (word, mask) = self.bit(s);
                *word &= !mask;
            }
            self.next_expected = seq + 1;
        } else if self.next_expected - seq >= WINDOW {
            self.out_of_order += 1;
            self.count(sent_ns, recv_ns, len);
            return;
        } else {
            let (word, mask) = self.bit(seq);
            if *word & mask != 0 {
                self.duplicates += 1;
                return;
            }
            self.out_of_order += 1;
        }
        let (word, mask) = self.bit(seq);
        *word |= mask;
        self.count(sent_ns, recv_ns, len);
    }

    fn count(&mut self, sent_ns: u64, recv_ns: u64, len: usize) {
        self.packets += 1;
        self.bytes += len as u64;
        // RFC 3550 §6.4.1: J += (|D| - J) / 16, D the change in transit time.
        let transit = recv_ns as i64 - sent_ns as i64;
        if let Some(last) = self.last_transit_ns {
            let d = (transit - last).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit_ns = Some(transit);
        self.owd_sum_ns += transit as f64;
        self.owd_count += 1;
    }

    /// The sender's FIN: it sent `total` data datagrams.
    pub fn fin(&mut self, total: u64) {
        self.sender_total = Some(total);
    }

    /// True once the FIN arrived and every datagram it announced is accounted for.
    pub fn complete(&self) -> bool {
        self.sender_total.is_some_and(|t| self.packets >= t)
    }

    pub fn fin_seen(&self) -> bool {
        self.sender_total.is_some()
    }

    pub fn packets(&self) -> u64 {
        self.packets
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Statistics so far. Datagrams are expected up to the highest sequence
    /// seen, or up to the sender's announced total once its FIN arrived.
    pub fn stats(&self, same_clock: bool) -> UdpStats {
        let expected = self.sender_total.unwrap_or(0).max(self.next_expected);
        let lost = expected.saturating_sub(self.packets);
        UdpStats {
            packets: self.packets,
            lost_packets: lost,
            loss_percent: if expected > 0 {
                100.0 * lost as f64 / expected as f64
            } else {
                0.0
            },
            out_of_order: self.out_of_order,
            duplicates: self.duplicates,
            jitter_ms: self.jitter_ns / 1e6,
            one_way_delay_ms: (same_clock && self.owd_count > 0)
                .then(|| self.owd_sum_ns / self.owd_count as f64 / 1e6),
            delay: None,
            ipdv: None,
            socket_drops: None,
        }
    }

    /// The change between two snapshots, for interval reports. Jitter and
    /// delay are the values at the end of the interval, as RFC 3550 defines them.
    pub fn delta(before: &UdpStats, now: &UdpStats) -> UdpStats {
        let packets = now.packets - before.packets;
        let lost = now.lost_packets.saturating_sub(before.lost_packets);
        let expected = packets + lost;
        UdpStats {
            packets,
            lost_packets: lost,
            loss_percent: if expected > 0 {
                100.0 * lost as f64 / expected as f64
            } else {
                0.0
            },
            out_of_order: now.out_of_order - before.out_of_order,
            duplicates: now.duplicates - before.duplicates,
            jitter_ms: now.jitter_ms,
            one_way_delay_ms: now.one_way_delay_ms,
            delay: None,
            ipdv: None,
            // The kernel counts a socket's drops from its creation: the whole test.
            socket_drops: now.socket_drops,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(t: &mut UdpTracker, seqs: &[u64]) {
        for &s in seqs {
            t.record(s, 1000 * s, 1000 * s + 500, 100);
        }
    }

    #[test]
    fn in_order_stream_has_no_loss() {
        let mut t = UdpTracker::new();
        feed(&mut t, &(0..1000).collect::<Vec<_>>());
        t.fin(1000);
        assert!(t.complete());
        let s = t.stats(true);
        assert_eq!(
            (s.packets, s.lost_packets, s.out_of_order, s.duplicates),
            (1000, 0, 0, 0)
        );
        assert_eq!(s.jitter_ms, 0.0);
        assert!((s.one_way_delay_ms.unwrap() - 0.0005).abs() < 1e-9);
    }

    #[test]
    fn gaps_reordering_and_duplicates_are_told_apart() {
        let mut t = UdpTracker::new();
        feed(&mut t, &[0, 1, 3, 2, 2, 5, 9]);
        t.fin(10);
        let s = t.stats(false);
        assert_eq!(s.packets, 6); // 0 1 2 3 5 9
        assert_eq!(s.out_of_order, 1); // 2 after 3
        assert_eq!(s.duplicates, 1); // second 2
        assert_eq!(s.lost_packets, 4); // 4 6 7 8
        assert!((s.loss_percent - 40.0).abs() < 1e-9);
        assert_eq!(s.one_way_delay_ms, None);
        assert!(!t.complete());
    }

    #[test]
    fn losses_at_the_tail_count_only_with_the_fin() {
        let mut t = UdpTracker::new();
        feed(&mut t, &[0, 1, 2]);
        assert_eq!(t.stats(false).lost_packets, 0);
        t.fin(5);
        assert_eq!(t.stats(false).lost_packets, 2);
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut t = UdpTracker::new();
        // Transit alternates 1 ms and 2 ms: |D| = 1 ms every packet, J -> 1 ms.
        for s in 0..2000u64 {
            let transit = if s % 2 == 0 { 1_000_000 } else { 2_000_000 };
            t.record(s, s * 10_000_000, s * 10_000_000 + transit, 64);
        }
        let j = t.stats(false).jitter_ms;
        assert!((j - 1.0).abs() < 1e-6, "{j}");
    }

    #[test]
    fn old_window_bits_do_not_fake_duplicates() {
        let mut t = UdpTracker::new();
        t.record(5, 0, 0, 1);
        // Jump far ahead, then a late datagram whose slot aliases seq 5.
        t.record(5 + WINDOW * 3, 0, 0, 1);
        t.record(5 + WINDOW * 2 + 1, 0, 0, 1);
        assert_eq!(t.stats(false).duplicates, 0);
    }
}
