//! Distributions of one-way delay and IPDV at a UDP receiver, per interval
//! and over the test. The receiver thread records each batch under one lock;
//! the sampler takes an interval's distribution when it closes it, so
//! percentiles are computed once per interval, not per datagram.

use hdrhistogram::Histogram;
use linkperf_proto::results::{Spread, UdpStats};

/// Delays above this (in ns) are recorded at the top: a minute.
const MAX_NS: u64 = 60_000_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// The histograms are made at a stream's first datagram: each is about
/// 220 KB of counters, and a TCP stream (most tests) never records one;
/// made up front they cost every stream of every test 0.9 MB to zero.
#[derive(Debug, Clone, Default)]
pub struct DelayTrack {
    owd_interval: Option<Histogram<u64>>,
    owd_total: Option<Histogram<u64>>,
    ipdv_interval: Option<Histogram<u64>>,
    ipdv_total: Option<Histogram<u64>>,
    /// Sequence and transit time (receive - send, ns) of the last datagram.
    last: Option<(u64, i64)>,
    /// One-way delay is recorded only when both ends share a clock.
    pub same_clock: bool,
}

/// Records `v` into `h`, making the histogram at its first value.
fn record_into(h: &mut Option<Histogram<u64>>, v: u64) {
    let _ = h.get_or_insert_with(histogram).record(v);
}

fn reset(h: &mut Option<Histogram<u64>>) {
    if let Some(h) = h {
        h.reset();
    }
}

impl DelayTrack {
    /// One datagram `seq` sent at `sent_ns`, received at `recv_ns`. IPDV is
    /// taken between datagrams of consecutive sequence numbers only (RFC
    /// 3393's selection), so a loss or reordering is not counted as delay.
    pub fn record(&mut self, seq: u64, sent_ns: u64, recv_ns: u64) {
        let transit = recv_ns as i64 - sent_ns as i64;
        if self.same_clock {
            let owd = (transit.max(1) as u64).min(MAX_NS);
            record_into(&mut self.owd_interval, owd);
            record_into(&mut self.owd_total, owd);
        }
        if let Some((last_seq, last_transit)) = self.last {
            if seq == last_seq + 1 {
                let v = (transit - last_transit).unsigned_abs().clamp(1, MAX_NS);
                record_into(&mut self.ipdv_interval, v);
                record_into(&mut self.ipdv_total, v);
            }
        }
        self.last = Some((seq, transit));
    }

    /// The interval's distributions, and a fresh interval.
    pub fn take_interval(&mut self) -> (Option<Spread>, Option<Spread>) {
        let out = (spread(&self.owd_interval), spread(&self.ipdv_interval));
        reset(&mut self.owd_interval);
        reset(&mut self.ipdv_interval);
        out
    }

    /// Forgets the test so far (the end of the `-O` warm-up).
    pub fn reset_total(&mut self) {
        reset(&mut self.owd_total);
        reset(&mut self.ipdv_total);
    }

    /// The test's distributions since the warm-up.
    pub fn total(&self) -> (Option<Spread>, Option<Spread>) {
        (spread(&self.owd_total), spread(&self.ipdv_total))
    }

    /// Puts distributions into UDP statistics.
    pub fn fill(stats: &mut UdpStats, (delay, ipdv): (Option<Spread>, Option<Spread>)) {
        stats.delay = delay;
        stats.ipdv = ipdv;
    }
}

fn spread(h: &Option<Histogram<u64>>) -> Option<Spread> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let h = h.as_ref()?;
    (!h.is_empty()).then(|| Spread {
        samples: h.len(),
        min_ms: ms(h.min()),
        mean_ms: h.mean() / 1e6,
        p50_ms: ms(h.value_at_quantile(0.5)),
        p90_ms: ms(h.value_at_quantile(0.9)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        max_ms: ms(h.max()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_and_ipdv_follow_their_definitions() {
        let mut t = DelayTrack {
            same_clock: true,
            ..Default::default()
        };
        // Transit 1, 3, 2 ms for seq 0, 1, 2; seq 4 (3 lost) at 10 ms.
        for (seq, transit_ms) in [(0u64, 1u64), (1, 3), (2, 2), (4, 10)] {
            let sent = seq * 20_000_000;
            t.record(seq, sent, sent + transit_ms * 1_000_000);
        }
        let (owd, ipdv) = t.take_interval();
        let (owd, ipdv) = (owd.unwrap(), ipdv.unwrap());
        assert_eq!(owd.samples, 4);
        assert!((owd.min_ms - 1.0).abs() < 0.01 && (owd.max_ms - 10.0).abs() < 0.01);
        assert!((owd.mean_ms - 4.0).abs() < 0.01, "{owd:?}");
        // |3-1| and |2-3|; the step across the loss is not an IPDV sample.
        assert_eq!(ipdv.samples, 2);
        assert!((ipdv.max_ms - 2.0).abs() < 0.01 && (ipdv.min_ms - 1.0).abs() < 0.01);
        assert_eq!(t.take_interval(), (None, None));
        assert_eq!(t.total().0.unwrap().samples, 4);
        t.reset_total();
        assert_eq!(t.total(), (None, None));
    }

    #[test]
    fn without_a_shared_clock_only_ipdv_is_kept() {
        let mut t = DelayTrack::default();
        t.record(0, 0, 5_000_000_000);
        t.record(1, 1_000, 5_000_002_000);
        let (owd, ipdv) = t.total();
        assert!(owd.is_none());
        assert!((ipdv.unwrap().max_ms - 0.001).abs() < 1e-6);
    }
}
