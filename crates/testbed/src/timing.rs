//! How well the emulator keeps its timing, and the two latency models it uses to remove its
//! own delay.
//!
//! [`Histogram`]: log-linear buckets (128 per power of two, so any value is known within 0.8 %),
//! written by one forwarding thread without locked instructions and read by the reporter.
//! [`DirectionTiming`] holds one direction's histograms: release lateness (actual minus
//! scheduled departure), queueing delay (per packet, and sampled uniformly in time) and the
//! propagation delay actually given.
//! [`LatencyModel`] keeps recent latency samples per duration class and answers quantiles:
//! the forwarding loop uses one for its timer wake-ups (to wake early and spin the rest) and
//! one for its ingress wake-ups (how long a frame waited in the TAP before the sleeping
//! thread read it, measured with probe frames; see [`crate::probe`]).

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Sub-buckets per power of two, as a power of two: 2^7 = 128, a relative width of 1/128
/// (a quantile is known within 0.4 %: 16 µs of a 4 ms queueing delay).
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Largest exponent kept; bigger values (over 9.7 hours in ns) land in the top bucket.
const MAX_EXP: u32 = 44;
const BUCKETS: usize = (SUB + (MAX_EXP - SUB_BITS + 1) as u64 * SUB) as usize;

/// Releases later than this are counted apart (the "more than 100 µs late").
pub const LATE_THRESHOLD_NS: u64 = 100_000;
/// Interval of the time-sampled queueing delay ([`DirectionTiming::backlog`]).
pub const BACKLOG_SAMPLE_NS: u64 = 100_000;

fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = (63 - v.leading_zeros()).min(MAX_EXP);
    let v = v.min((1u64 << (MAX_EXP + 1)) - 1);
    let sub = (v >> (e - SUB_BITS)) & (SUB - 1);
    (SUB + (e - SUB_BITS) as u64 * SUB + sub) as usize
}

/// Smallest value of bucket `i` and its width.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, 1);
    }
    let e = (i - SUB) / SUB + SUB_BITS as u64;
    let sub = (i - SUB) % SUB;
    (
        (SUB + sub) << (e - SUB_BITS as u64),
        1 << (e - SUB_BITS as u64),
    )
}

/// A histogram of nanosecond values with a single writer.
pub struct Histogram {
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
    max: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

/// Adds `n` to a counter only one thread writes: a plain load and store, no locked add.
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

impl Histogram {
    /// Records one value. Only the owning forwarding thread may call this.
    pub fn record(&self, v: u64) {
        self.record_n(v, 1);
    }

    /// Records `n` times the value `v`.
    pub fn record_n(&self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        bump(&self.counts[bucket_of(v)], n);
        bump(&self.sum, v.saturating_mul(n));
        if v > self.max.load(Relaxed) {
            self.max.store(v, Relaxed);
        }
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut buckets = Vec::new();
        let mut count = 0;
        for (i, c) in self.counts.iter().enumerate() {
            let n = c.load(Relaxed);
            if n > 0 {
                buckets.push((bucket_range(i).0, n));
                count += n;
            }
        }
        HistogramSnapshot {
            count,
            sum_ns: self.sum.load(Relaxed),
            max_ns: self.max.load(Relaxed),
            buckets,
        }
    }
}

/// A copy of a [`Histogram`]: non-empty buckets as (smallest value in ns, count).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramSnapshot {
    pub count: u64,
    pub sum_ns: u64,
    /// Largest value since the emulator started (a window from [`Self::since`] gives the
    /// upper end of its highest bucket instead).
    pub max_ns: u64,
    pub buckets: Vec<(u64, u64)>,
}

/// Percentiles of a histogram, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl HistogramSnapshot {
    /// What was recorded after `earlier` (a snapshot of the same histogram).
    pub fn since(&self, earlier: &HistogramSnapshot) -> HistogramSnapshot {
        let mut buckets = Vec::new();
        let mut before = earlier.buckets.iter().peekable();
        for &(lower, n) in &self.buckets {
            while before.peek().is_some_and(|b| b.0 < lower) {
                before.next();
            }
            let old = before.peek().filter(|b| b.0 == lower).map_or(0, |b| b.1);
            if n > old {
                buckets.push((lower, n - old));
            }
        }
        let max_ns = buckets.last().map_or(0, |&(lower, _)| {
            let (_, width) = bucket_range(bucket_of(lower));
            (lower + width - 1).min(self.max_ns)
        });
        HistogramSnapshot {
            count: self.count.saturating_sub(earlier.count),
            sum_ns: self.sum_ns.saturating_sub(earlier.sum_ns),
            max_ns,
            buckets,
        }
    }

    /// The value below which a fraction `q` of the recorded values lie (bucket midpoint).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for &(lower, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                let (_, width) = bucket_range(bucket_of(lower));
                return Some((lower + width / 2).min(self.max_ns.max(lower)));
            }
        }
        Some(self.max_ns)
    }

    /// The value at cumulative fraction `u` (0..1), spread evenly inside its bucket: drawing
    /// `u` uniformly samples the recorded distribution (to combine histograms by simulation).
    pub fn sample(&self, u: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let target = u.clamp(0.0, 1.0) * self.count as f64;
        let mut seen = 0.0;
        for &(lower, n) in &self.buckets {
            if seen + n as f64 >= target {
                let (_, width) = bucket_range(bucket_of(lower));
                let within = (target - seen) / n as f64;
                return Some(lower + (within * width as f64) as u64);
            }
            seen += n as f64;
        }
        Some(self.max_ns)
    }

    pub fn summary(&self) -> Summary {
        let q = |q| self.quantile(q).unwrap_or(0);
        Summary {
            count: self.count,
            mean_ns: self.sum_ns.checked_div(self.count).unwrap_or(0),
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            max_ns: if self.count == 0 { 0 } else { self.max_ns },
        }
    }

    /// Values above `threshold_ns` (whole buckets above it; the bucket holding it is split
    /// in proportion).
    pub fn count_above(&self, threshold_ns: u64) -> u64 {
        let mut above = 0.0;
        for &(lower, n) in &self.buckets {
            let (_, width) = bucket_range(bucket_of(lower));
            if lower > threshold_ns {
                above += n as f64;
            } else if lower + width > threshold_ns {
                above += n as f64 * (lower + width - 1 - threshold_ns) as f64 / width as f64;
            }
        }
        above.round() as u64
    }
}

/// Timing of one link direction, written by its forwarding thread.
#[derive(Default)]
pub struct DirectionTiming {
    /// Actual start of the write minus the scheduled release, per packet.
    pub lateness: Histogram,
    /// Packets released more than [`LATE_THRESHOLD_NS`] late.
    pub late: AtomicU64,
    /// Start of serialisation minus arrival: the time spent waiting in the queue (the
    /// packet's own transmission time at the link rate is not included).
    pub queueing: Histogram,
    /// The link's queueing delay sampled every [`BACKLOG_SAMPLE_NS`]: how long a packet
    /// arriving at that instant would wait. This is what a probe (ping) sees; the per-packet
    /// figure above weighs the moments when many packets arrive, as TCP bursts do.
    pub backlog: Histogram,
    /// Release minus end of serialisation: the propagation delay (with jitter) given.
    pub delay: Histogram,
    /// Ingress latency the emulator subtracted from frames that woke it (last value, ns).
    pub ingress_compensation_ns: AtomicU64,
    /// How early releases start to make up for the write into the far host (ns).
    pub delivery_lead_ns: AtomicU64,
    /// Probe frames measured (see [`crate::probe`]).
    pub probes: AtomicU64,
    /// Time spent spinning before releases (the price of exact release times).
    pub spin_ns: AtomicU64,
    /// Frames whose arrival the kernel stamped ([`crate::stamps`]).
    pub stamped: AtomicU64,
    /// Frames whose arrival was estimated (no stamp matched).
    pub estimated: AtomicU64,
}

impl DirectionTiming {
    pub fn record_release(&self, lateness_ns: u64, delay_ns: u64) {
        self.lateness.record(lateness_ns);
        self.delay.record(delay_ns);
        if lateness_ns > LATE_THRESHOLD_NS {
            bump(&self.late, 1);
        }
    }

    pub fn add_spin(&self, ns: u64) {
        bump(&self.spin_ns, ns);
    }

    pub fn snapshot(&self) -> TimingSnapshot {
        TimingSnapshot {
            lateness: self.lateness.snapshot(),
            late_over_100us: self.late.load(Relaxed),
            queueing: self.queueing.snapshot(),
            backlog: self.backlog.snapshot(),
            delay: self.delay.snapshot(),
            ingress_compensation_ns: self.ingress_compensation_ns.load(Relaxed),
            delivery_lead_ns: self.delivery_lead_ns.load(Relaxed),
            probes: self.probes.load(Relaxed),
            spin_ns: self.spin_ns.load(Relaxed),
            stamped: self.stamped.load(Relaxed),
            estimated: self.estimated.load(Relaxed),
        }
    }
}

/// A copy of [`DirectionTiming`], as stored in the state directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingSnapshot {
    pub lateness: HistogramSnapshot,
    pub late_over_100us: u64,
    pub queueing: HistogramSnapshot,
    #[serde(default)]
    pub backlog: HistogramSnapshot,
    pub delay: HistogramSnapshot,
    pub ingress_compensation_ns: u64,
    #[serde(default)]
    pub delivery_lead_ns: u64,
    pub probes: u64,
    pub spin_ns: u64,
    #[serde(default)]
    pub stamped: u64,
    #[serde(default)]
    pub estimated: u64,
}

impl TimingSnapshot {
    /// What happened after `earlier` (a snapshot of the same direction).
    pub fn since(&self, earlier: &TimingSnapshot) -> TimingSnapshot {
        TimingSnapshot {
            lateness: self.lateness.since(&earlier.lateness),
            late_over_100us: self.late_over_100us.saturating_sub(earlier.late_over_100us),
            queueing: self.queueing.since(&earlier.queueing),
            backlog: self.backlog.since(&earlier.backlog),
            delay: self.delay.since(&earlier.delay),
            ingress_compensation_ns: self.ingress_compensation_ns,
            delivery_lead_ns: self.delivery_lead_ns,
            probes: self.probes.saturating_sub(earlier.probes),
            spin_ns: self.spin_ns.saturating_sub(earlier.spin_ns),
            stamped: self.stamped.saturating_sub(earlier.stamped),
            estimated: self.estimated.saturating_sub(earlier.estimated),
        }
    }
}

/// Percentiles of a recent window, as the report carries them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecentTiming {
    pub window_ms: u64,
    pub lateness: Summary,
    pub late_over_100us: u64,
    pub queueing: Summary,
    #[serde(default)]
    pub backlog: Summary,
    pub delay: Summary,
}

impl RecentTiming {
    pub fn of(t: &TimingSnapshot, window_ms: u64) -> RecentTiming {
        RecentTiming {
            window_ms,
            lateness: t.lateness.summary(),
            late_over_100us: t.late_over_100us,
            queueing: t.queueing.summary(),
            backlog: t.backlog.summary(),
            delay: t.delay.summary(),
        }
    }
}

/// Duration classes of the latency models: under 16 µs, then by factors of 4 up to 64 ms.
const CLASSES: usize = 8;
const RING: usize = 32;
/// Samples a class needs before its quantiles are trusted.
const MIN_SAMPLES: usize = 3;

fn class_of(duration_ns: u64) -> usize {
    let mut class = 0;
    let mut bound = 16_000;
    while class + 1 < CLASSES && duration_ns >= bound {
        class += 1;
        bound *= 4;
    }
    class
}

#[derive(Clone, Copy, Default)]
struct Ring {
    samples: [u64; RING],
    len: usize,
    next: usize,
    p50: u64,
    p90: u64,
}

impl Ring {
    fn push(&mut self, v: u64) {
        self.samples[self.next] = v;
        self.next = (self.next + 1) % RING;
        self.len = (self.len + 1).min(RING);
        let mut sorted = self.samples;
        let s = &mut sorted[..self.len];
        s.sort_unstable();
        self.p50 = s[(self.len - 1) / 2];
        self.p90 = s[(self.len - 1) * 9 / 10];
    }
}

/// Recent latency samples (the last 32 per duration class) of one kind of wake-up.
#[derive(Clone, Default)]
pub struct LatencyModel {
    rings: [Ring; CLASSES],
}

impl LatencyModel {
    /// Records a latency observed after a wait (or sleep) of `duration_ns`.
    pub fn record(&mut self, duration_ns: u64, latency_ns: u64) {
        self.rings[class_of(duration_ns)].push(latency_ns);
    }

    /// (median, 90th percentile) of the latency after a wait of `duration_ns`, from its own
    /// class or else the nearest class with samples; None before any sample.
    pub fn quantiles(&self, duration_ns: u64) -> Option<(u64, u64)> {
        let c = class_of(duration_ns);
        (0..CLASSES).find_map(|d| {
            [c.checked_sub(d), Some(c + d)]
                .into_iter()
                .flatten()
                .filter(|&i| i < CLASSES)
                .map(|i| &self.rings[i])
                .find(|r| r.len >= MIN_SAMPLES)
                .map(|r| (r.p50, r.p90))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_within_their_precision() {
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            99_999,
            100_000,
            7_400_000,
            1 << 40,
        ] {
            let (lower, width) = bucket_range(bucket_of(v));
            assert!(lower <= v && v < lower + width, "{v}: {lower} + {width}");
            assert!(
                width as f64 <= (v as f64 / 128.0).max(1.0),
                "{v}: width {width}"
            );
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_and_windows_follow_the_recorded_values() {
        let h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let first = h.snapshot();
        let s = first.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_ns as f64 / 500_000.0 - 1.0).abs() < 0.02, "{s:?}");
        assert!((s.p99_ns as f64 / 990_000.0 - 1.0).abs() < 0.02, "{s:?}");
        assert_eq!(s.max_ns, 1_000_000);
        assert_eq!(s.mean_ns, 500_500);
        // Exact but for the bucket holding the threshold, split in proportion.
        assert!(first.count_above(LATE_THRESHOLD_NS).abs_diff(900) <= 1);
        for _ in 0..500 {
            h.record(5_000_000);
        }
        let window = h.snapshot().since(&first);
        assert_eq!(window.count, 500);
        let p50 = window.quantile(0.5).unwrap();
        assert!((p50 as f64 / 5e6 - 1.0).abs() < 0.02, "{p50}");
        assert!(window.max_ns >= 5_000_000);
        assert_eq!(HistogramSnapshot::default().quantile(0.5), None);
        let s = h.snapshot();
        let drawn = s.sample(0.5).unwrap();
        assert!(drawn.abs_diff(s.quantile(0.5).unwrap()) <= 4_000, "{drawn}");
        assert_eq!(s.sample(0.0), Some(1_000));
    }

    #[test]
    fn latency_model_answers_per_class_and_falls_back_to_neighbours() {
        let mut m = LatencyModel::default();
        assert_eq!(m.quantiles(1_000_000), None);
        for i in 0..10 {
            m.record(10_000_000, 50_000 + i * 1000);
        }
        // Only the 4-16 ms class has samples: every duration borrows it.
        assert_eq!(m.quantiles(5_000), Some((54_000, 58_000)));
        for _ in 0..5 {
            m.record(5_000, 2_000);
        }
        assert_eq!(m.quantiles(1_000), Some((2_000, 2_000)));
        assert_eq!(m.quantiles(12_000_000), Some((54_000, 58_000)));
    }
}
