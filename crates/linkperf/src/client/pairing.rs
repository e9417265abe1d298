//! Pairs the two ends' interval reports by time, not by count. Each report is
//! keyed by the boundary of the test's interval grid that it closed, and a line
//! closes at a boundary both ends closed within half an interval of each other:
//! when one end's sampler woke late (a stopped or starved process), its long
//! interval and the other end's intervals it overlaps are joined, end by end,
//! until both ends meet again, so every number on a line is over nearly the
//! same time, instead of every later line being shifted by one. Owns that
//! pairing and the joining of consecutive intervals of one stream; must not
//! measure, print or build the summary.

use crate::report::{self, IntervalReport};
use linkperf_proto::results::{Limited, Spread, StreamInterval, TcpStats, UdpStats};
use linkperf_proto::TestConfig;
use std::collections::VecDeque;

/// One end's reports not yet paired, each with the grid boundary it closed.
#[derive(Default)]
struct End {
    /// The boundary each report closed, when it ended, its streams.
    pending: VecDeque<(u64, f64, Vec<StreamInterval>)>,
    last_key: Option<u64>,
}

impl End {
    fn push(&mut self, tick: f64, streams: Vec<StreamInterval>) {
        let end = streams.iter().map(|s| s.end).fold(0.0, f64::max);
        // A sampler never closes an interval before its boundary (it wakes at or
        // after it); the last one of a test may, and still follows the one before.
        let on_grid = if tick > 0.0 {
            (end / tick + 1e-9).floor() as u64
        } else {
            0
        };
        let key = on_grid.max(self.last_key.map_or(1, |k| k + 1));
        self.last_key = Some(key);
        self.pending.push_back((key, end, streams));
    }

    /// When the report that closed boundary `key` ended.
    fn ended(&self, key: u64) -> Option<f64> {
        self.pending
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|(_, e, _)| *e)
    }

    fn front(&self) -> Option<u64> {
        self.pending.front().map(|(k, ..)| *k)
    }

    /// Every pending report up to and including `key`, joined stream by stream.
    fn take_through(&mut self, key: u64) -> Option<Vec<StreamInterval>> {
        let mut joined: Option<Vec<StreamInterval>> = None;
        while self.front().is_some_and(|k| k <= key) {
            let (_, _, streams) = self.pending.pop_front()?;
            joined = Some(match joined {
                None => streams,
                Some(mut so_far) => {
                    for s in streams {
                        match so_far.iter_mut().find(|x| x.id == s.id && x.role == s.role) {
                            Some(x) => *x = join(x, &s),
                            None => so_far.push(s),
                        }
                    }
                    so_far
                }
            });
        }
        joined
    }
}

/// Collects each end's interval reports and emits them paired, in order.
#[derive(Default)]
pub(super) struct IntervalPairing {
    local: End,
    remote: End,
    last_key: u64,
    last_end: Option<f64>,
    pub lines: Vec<IntervalReport>,
}

impl IntervalPairing {
    pub fn push_local(&mut self, config: &TestConfig, streams: Vec<StreamInterval>) {
        self.local.push(config.interval_s, streams);
    }

    pub fn push_remote(&mut self, config: &TestConfig, streams: Vec<StreamInterval>) {
        self.remote.push(config.interval_s, streams);
    }

    /// Emits every line both ends have reported up to; with `all` (the test is
    /// over), then what only one end reported, in time order.
    pub fn drain(
        &mut self,
        config: &TestConfig,
        all: bool,
        on_interval: &mut dyn FnMut(&IntervalReport),
    ) {
        let tick = config.interval_s;
        loop {
            let meets = |k: u64| {
                let (l, r) = (self.local.ended(k)?, self.remote.ended(k)?);
                // A line of more than 8 boundaries closes wherever both ends are.
                ((l - r).abs() <= tick / 2.0 || k >= self.last_key + 8).then_some(k)
            };
            let common = self.local.pending.iter().find_map(|(k, ..)| meets(*k));
            // Over: the ends that never met again share a line to the last boundary
            // both closed; then what one end alone reported.
            let next = common.or_else(|| {
                all.then(|| self.last_shared().or_else(|| self.first()))
                    .flatten()
            });
            let Some(key) = next else { return };
            self.last_key = key;
            let (l, r) = (self.local.take_through(key), self.remote.take_through(key));
            let mut line = report::merge_interval(config, l.as_deref(), r.as_deref());
            // A line begins where the one before it ended: after a late end's long
            // interval, the other end's next one began before that.
            if let Some(before) = self.last_end {
                line.start = line.start.max(before).min(line.end);
            }
            self.last_end = Some(line.end);
            on_interval(&line);
            self.lines.push(line);
        }
    }

    /// The last boundary both ends have closed and not yet paired.
    fn last_shared(&self) -> Option<u64> {
        let keys = self.local.pending.iter().map(|(k, ..)| *k);
        keys.filter(|&k| self.remote.ended(k).is_some()).max()
    }

    /// The first boundary either end closed and is not yet paired.
    fn first(&self) -> Option<u64> {
        match (self.local.front(), self.remote.front()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Two consecutive intervals of one stream at one end as one: counts add up,
/// rates are over the whole span, readings taken at the end are the later one's.
fn join(a: &StreamInterval, b: &StreamInterval) -> StreamInterval {
    let (span_a, span_b) = (a.end - a.start, b.end - b.start);
    let span = b.end - a.start;
    let bytes = a.bytes + b.bytes;
    StreamInterval {
        id: b.id,
        role: b.role,
        start: a.start,
        end: b.end,
        bytes,
        bits_per_second: if span > 0.0 {
            bytes as f64 * 8.0 / span
        } else {
            0.0
        },
        packets: add(a.packets, b.packets),
        udp: match (&a.udp, &b.udp) {
            (Some(x), Some(y)) => Some(join_udp(x, y)),
            (x, y) => y.clone().or_else(|| x.clone()),
        },
        tcp: match (&a.tcp, &b.tcp) {
            (Some(x), Some(y)) => Some(join_tcp(x, y, span_a, span_b)),
            (x, y) => y.clone().or_else(|| x.clone()),
        },
        offered_bits_per_second: a
            .offered_bits_per_second
            .zip(b.offered_bits_per_second)
            .map(|(x, y)| weighted(x, span_a, y, span_b))
            .or(b.offered_bits_per_second),
        // The sampler's rule: omitted when it began inside the warm-up.
        omitted: a.omitted,
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    }
}

fn weighted(x: f64, wx: f64, y: f64, wy: f64) -> f64 {
    if wx + wy > 0.0 {
        (x * wx + y * wy) / (wx + wy)
    } else {
        y
    }
}

fn join_udp(a: &UdpStats, b: &UdpStats) -> UdpStats {
    let (packets, lost) = (a.packets + b.packets, a.lost_packets + b.lost_packets);
    let (pa, pb) = (a.packets as f64, b.packets as f64);
    UdpStats {
        packets,
        lost_packets: lost,
        loss_percent: if packets + lost > 0 {
            100.0 * lost as f64 / (packets + lost) as f64
        } else {
            0.0
        },
        out_of_order: a.out_of_order + b.out_of_order,
        duplicates: a.duplicates + b.duplicates,
        // RFC 3550's running estimate, as it stood at the end.
        jitter_ms: b.jitter_ms,
        one_way_delay_ms: match (a.one_way_delay_ms, b.one_way_delay_ms) {
            (Some(x), Some(y)) => Some(weighted(x, pa, y, pb)),
            (x, y) => y.or(x),
        },
        delay: join_spread(a.delay.as_ref(), b.delay.as_ref()),
        ipdv: join_spread(a.ipdv.as_ref(), b.ipdv.as_ref()),
        socket_drops: b.socket_drops.or(a.socket_drops),
    }
}

/// Two distributions as one: count, extremes and mean exact; each percentile the
/// sample-weighted mean of the two (the true one lies between them).
fn join_spread(a: Option<&Spread>, b: Option<&Spread>) -> Option<Spread> {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) if a.samples > 0 && b.samples > 0 => (a, b),
        (Some(a), Some(b)) => return Some(if a.samples > 0 { a } else { b }.clone()),
        (a, b) => return b.or(a).cloned(),
    };
    let (wa, wb) = (a.samples as f64, b.samples as f64);
    let mix = |x: f64, y: f64| weighted(x, wa, y, wb);
    Some(Spread {
        samples: a.samples + b.samples,
        min_ms: a.min_ms.min(b.min_ms),
        mean_ms: mix(a.mean_ms, b.mean_ms),
        p50_ms: mix(a.p50_ms, b.p50_ms),
        p90_ms: mix(a.p90_ms, b.p90_ms),
        p99_ms: mix(a.p99_ms, b.p99_ms),
        max_ms: a.max_ms.max(b.max_ms),
    })
}

fn join_tcp(a: &TcpStats, b: &TcpStats, span_a: f64, span_b: f64) -> TcpStats {
    let min = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let max = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    TcpStats {
        retransmits: add(a.retransmits, b.retransmits),
        rtt_min_ms: min(a.rtt_min_ms, b.rtt_min_ms),
        rtt_max_ms: max(a.rtt_max_ms, b.rtt_max_ms),
        rtt_samples: add(a.rtt_samples, b.rtt_samples),
        limited: match (a.limited, b.limited) {
            (Some(x), Some(y)) => {
                let w = |p: f64, q: f64| weighted(p, span_a, q, span_b);
                Some(Limited {
                    rwnd: w(x.rwnd, y.rwnd),
                    sndbuf: w(x.sndbuf, y.sndbuf),
                    network: w(x.network, y.network),
                    app: w(x.app, y.app),
                })
            }
            (x, y) => y.or(x),
        },
        // Everything else is tcp_info's reading at the interval's end.
        ..b.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_proto::results::Role;

    fn config() -> TestConfig {
        TestConfig {
            interval_s: 0.5,
            ..TestConfig::default()
        }
    }

    fn iv(role: Role, start: f64, end: f64, bytes: u64) -> Vec<StreamInterval> {
        vec![StreamInterval {
            id: 0,
            role,
            start,
            end,
            bytes,
            bits_per_second: bytes as f64 * 8.0 / (end - start),
            packets: None,
            udp: None,
            tcp: None,
            offered_bits_per_second: None,
            omitted: false,
        }]
    }

    fn lines(p: &mut IntervalPairing, all: bool) -> Vec<(f64, f64, u64, u64)> {
        let mut out = Vec::new();
        p.drain(&config(), all, &mut |l| {
            out.push((l.start, l.end, l.sum.sent_bytes, l.sum.received_bytes))
        });
        out
    }

    #[test]
    fn ends_on_time_pair_one_to_one() {
        let (c, mut p) = (config(), IntervalPairing::default());
        p.push_local(&c, iv(Role::Sender, 0.0, 0.5001, 100));
        assert!(
            lines(&mut p, false).is_empty(),
            "the server's line is not in"
        );
        p.push_remote(&c, iv(Role::Receiver, 0.0, 0.5004, 90));
        p.push_local(&c, iv(Role::Sender, 0.5001, 1.0002, 100));
        assert_eq!(lines(&mut p, false), vec![(0.0, 0.5004, 100, 90)]);
        p.push_remote(&c, iv(Role::Receiver, 0.5004, 1.0003, 110));
        assert_eq!(lines(&mut p, false), vec![(0.5004, 1.0003, 100, 110)]);
    }

    #[test]
    fn a_late_end_is_paired_with_all_the_intervals_it_covers() {
        let (c, mut p) = (config(), IntervalPairing::default());
        for (s, e) in [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0)] {
            p.push_local(&c, iv(Role::Sender, s, e, 100));
        }
        p.push_remote(&c, iv(Role::Receiver, 0.0, 0.5, 100));
        // Stopped from 0.6 s to 1.85 s: it closed one interval over three boundaries,
        // 0.35 s after the client's at 1.5 s (more than half an interval); both ends
        // meet again at 2.0 s.
        p.push_remote(&c, iv(Role::Receiver, 0.5, 1.85, 230));
        p.push_remote(&c, iv(Role::Receiver, 1.85, 2.0, 70));
        let got = lines(&mut p, false);
        assert_eq!(got, vec![(0.0, 0.5, 100, 100), (0.5, 2.0, 300, 300)]);
        let stream = &p.lines[1].streams[0];
        let (sent, got) = (stream.sender.as_ref(), stream.receiver.as_ref());
        let (sent, got) = (sent.unwrap(), got.unwrap());
        assert_eq!((sent.start, sent.end, sent.bytes), (0.5, 2.0, 300));
        assert_eq!((got.start, got.end, got.bytes), (0.5, 2.0, 300));
        assert!((sent.bits_per_second - 200.0 * 8.0).abs() < 1e-9);
    }

    #[test]
    fn ends_within_half_an_interval_close_a_line() {
        let (c, mut p) = (config(), IntervalPairing::default());
        for (s, e) in [(0.0, 0.5), (0.5, 1.0), (1.0, 1.5)] {
            p.push_local(&c, iv(Role::Sender, s, e, 100));
        }
        // Stopped across the 0.5 s boundary, it woke 0.2 s after the next one.
        p.push_remote(&c, iv(Role::Receiver, 0.0, 1.2, 250));
        p.push_remote(&c, iv(Role::Receiver, 1.2, 1.5, 50));
        let want = vec![(0.0, 1.2, 200, 250), (1.2, 1.5, 100, 50)];
        assert_eq!(lines(&mut p, false), want);
    }

    #[test]
    fn ends_that_never_meet_still_close_a_line_every_8_boundaries() {
        let (c, mut p) = (config(), IntervalPairing::default());
        for k in 0..10 {
            let (s, e) = (k as f64 * 0.5, k as f64 * 0.5 + 0.5);
            p.push_local(&c, iv(Role::Sender, s, e, 100));
            // Every wake-up 0.3 s late.
            p.push_remote(&c, iv(Role::Receiver, s + 0.3, e + 0.3, 100));
        }
        let got = lines(&mut p, false);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].2, got[0].3), (800, 800));
    }

    #[test]
    fn what_only_one_end_reported_comes_last_in_time_order() {
        let (c, mut p) = (config(), IntervalPairing::default());
        p.push_local(&c, iv(Role::Sender, 0.0, 0.5, 100));
        p.push_local(&c, iv(Role::Sender, 0.5, 1.0, 100));
        p.push_remote(&c, iv(Role::Receiver, 0.0, 0.5, 100));
        // The receiver's last interval closed before the boundary (its test ended).
        p.push_remote(&c, iv(Role::Receiver, 0.5, 0.98, 95));
        p.push_remote(&c, iv(Role::Receiver, 0.98, 1.2, 5));
        assert_eq!(lines(&mut p, false).len(), 2);
        assert_eq!(lines(&mut p, false), vec![]);
        assert_eq!(lines(&mut p, true), vec![(1.0, 1.2, 0, 5)]);
    }

    #[test]
    fn ends_apart_at_the_end_share_the_last_line() {
        let (c, mut p) = (config(), IntervalPairing::default());
        p.push_local(&c, iv(Role::Sender, 0.0, 0.5, 100));
        p.push_local(&c, iv(Role::Sender, 0.5, 1.0, 100));
        // The receiver woke 0.3 s late for its last interval.
        p.push_remote(&c, iv(Role::Receiver, 0.0, 1.3, 200));
        assert_eq!(lines(&mut p, false), vec![]);
        assert_eq!(lines(&mut p, true), vec![(0.0, 1.3, 200, 200)]);
    }

    #[test]
    fn joined_counts_add_up_and_readings_are_the_later_ones() {
        let mut a = iv(Role::Sender, 0.0, 1.0, 1000).remove(0);
        let mut b = iv(Role::Sender, 1.0, 3.0, 3000).remove(0);
        a.tcp = Some(TcpStats {
            retransmits: Some(2),
            cwnd_bytes: Some(10),
            rtt_min_ms: Some(1.0),
            rtt_max_ms: Some(5.0),
            limited: Some(Limited {
                rwnd: 1.0,
                ..Limited::default()
            }),
            ..TcpStats::default()
        });
        b.tcp = Some(TcpStats {
            retransmits: Some(3),
            cwnd_bytes: Some(20),
            rtt_min_ms: Some(2.0),
            rtt_max_ms: Some(4.0),
            limited: Some(Limited::default()),
            ..TcpStats::default()
        });
        let j = join(&a, &b);
        assert_eq!((j.start, j.end, j.bytes), (0.0, 3.0, 4000));
        let t = j.tcp.unwrap();
        assert_eq!((t.retransmits, t.cwnd_bytes), (Some(5), Some(20)));
        assert_eq!((t.rtt_min_ms, t.rtt_max_ms), (Some(1.0), Some(5.0)));
        // Limited by the window for the first second of three.
        assert!((t.limited.unwrap().rwnd - 1.0 / 3.0).abs() < 1e-9);
        let spread = |n, lo, hi| Spread {
            samples: n,
            min_ms: lo,
            mean_ms: (lo + hi) / 2.0,
            p50_ms: lo,
            p90_ms: hi,
            p99_ms: hi,
            max_ms: hi,
        };
        let s = join_spread(Some(&spread(1, 1.0, 3.0)), Some(&spread(3, 2.0, 6.0))).unwrap();
        assert_eq!((s.samples, s.min_ms, s.max_ms), (4, 1.0, 6.0));
        assert!((s.mean_ms - 3.5).abs() < 1e-9, "{s:?}");
    }
}
