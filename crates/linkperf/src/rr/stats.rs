//! Pure statistics for `linkperf rr`: latency histograms and their summary,
//! and the least-squares line of RTT against message size. No I/O.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies are recorded in nanoseconds, 1 ns to one hour, 3 significant
/// digits (0.1 % resolution at every scale).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Records a latency, clamped into the histogram's range.
#[inline]
pub fn record(h: &mut Histogram<u64>, ns: u64) {
    h.saturating_record(ns.max(1));
}

/// A latency distribution in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub stddev: f64,
}

const NS_PER_MS: f64 = 1e6;

/// The summary of a histogram of nanoseconds; `None` when it is empty.
pub fn summarize(h: &Histogram<u64>) -> Option<Percentiles> {
    if h.is_empty() {
        return None;
    }
    let q = |p: f64| h.value_at_quantile(p) as f64 / NS_PER_MS;
    Some(Percentiles {
        count: h.len(),
        min: h.min() as f64 / NS_PER_MS,
        mean: h.mean() / NS_PER_MS,
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        p999: q(0.999),
        max: h.max() as f64 / NS_PER_MS,
        stddev: h.stdev() / NS_PER_MS,
    })
}

/// One bucket of the histogram as JSON shows it: every recorded value up to
/// `rtt_ms` (and above the previous bucket's) was seen `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bucket {
    pub rtt_ms: f64,
    pub count: u64,
}

/// The non-empty buckets, in increasing order of latency.
pub fn buckets(h: &Histogram<u64>) -> Vec<Bucket> {
    h.iter_recorded()
        .map(|v| Bucket {
            rtt_ms: h.highest_equivalent(v.value_iterated_to()) as f64 / NS_PER_MS,
            count: v.count_at_value(),
        })
        .collect()
}

/// RTT = intercept + slope × size, fitted by least squares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fit {
    /// The fixed part of the RTT: propagation, stack and switching latency.
    pub intercept_ms: f64,
    /// Time added per byte of message size.
    pub slope_us_per_byte: f64,
    /// The serialisation rate the slope implies (bits/s), counting every byte
    /// of size as many times as it crosses the path; `None` unless the slope
    /// is positive.
    pub implied_bits_per_second: Option<f64>,
    /// Coefficient of determination: 1 is a perfect line.
    pub r2: f64,
    /// Which statistic of each size was fitted.
    pub basis: &'static str,
}

/// Fits `(size in bytes, rtt in ms)` points. `crossings` is how many times a
/// byte of size crosses the path per transaction (2 when request and response
/// both have that size, 1 when only one does). `None` with fewer than two
/// distinct sizes.
pub fn least_squares(points: &[(f64, f64)], crossings: f64, basis: &'static str) -> Option<Fit> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = sxy / sxx; // ms per byte
    let intercept = mean_y - slope * mean_x;
    let ss_tot: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|p| (p.1 - (intercept + slope * p.0)).powi(2))
        .sum();
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    let implied = (slope > 0.0).then(|| {
        let seconds_per_byte_crossing = slope / 1e3 / crossings;
        8.0 / seconds_per_byte_crossing
    });
    Some(Fit {
        intercept_ms: intercept,
        slope_us_per_byte: slope * 1e3,
        implied_bits_per_second: implied,
        r2,
        basis,
    })
}

/// A distribution of values that may be negative (one-way delays when
/// "synchronised" clocks are not): magnitudes of each sign in their own
/// histogram, nanoseconds.
#[derive(Debug, Clone)]
pub struct SignedHistogram {
    positive: Histogram<u64>,
    negative: Histogram<u64>,
    sum_ns: f64,
    min_ns: i64,
    max_ns: i64,
}

impl Default for SignedHistogram {
    fn default() -> Self {
        SignedHistogram {
            positive: new_histogram(),
            negative: new_histogram(),
            sum_ns: 0.0,
            min_ns: i64::MAX,
            max_ns: i64::MIN,
        }
    }
}

impl SignedHistogram {
    #[inline]
    pub fn record(&mut self, ns: i64) {
        if ns >= 0 {
            record(&mut self.positive, ns as u64);
        } else {
            record(&mut self.negative, ns.unsigned_abs());
        }
        self.sum_ns += ns as f64;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.positive.len() + self.negative.len()
    }

    /// The value at quantile `q` (0..=1), in nanoseconds.
    pub fn quantile(&self, q: f64) -> f64 {
        let n = self.count() as f64;
        let neg = self.negative.len() as f64;
        let rank = (q * n).max(1.0);
        if rank <= neg {
            // The rank-th smallest value is the (neg - rank)-th largest magnitude.
            // (less a hair, so float error does not round the rank up)
            let q = (1.0 - (rank - 1.0) / neg - 1e-9).max(0.0);
            -(self.negative.value_at_quantile(q) as f64)
        } else {
            let pos = self.positive.len() as f64;
            self.positive.value_at_quantile((rank - neg) / pos) as f64
        }
    }

    /// Summary in milliseconds; `None` when empty.
    pub fn summary(&self) -> Option<(u64, f64, f64, f64, f64, f64)> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        Some((
            n,
            self.min_ns as f64 / NS_PER_MS,
            self.sum_ns / n as f64 / NS_PER_MS,
            self.quantile(0.5) / NS_PER_MS,
            self.quantile(0.99) / NS_PER_MS,
            self.max_ns as f64 / NS_PER_MS,
        ))
    }

    pub fn add(&mut self, other: &SignedHistogram) {
        let _ = self.positive.add(&other.positive);
        let _ = self.negative.add(&other.negative);
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn summary_of_a_known_distribution() {
        let mut h = new_histogram();
        // 1..=1000 µs, once each.
        for us in 1..=1000u64 {
            record(&mut h, us * 1000);
        }
        let s = summarize(&h).unwrap();
        assert_eq!(s.count, 1000);
        assert!(close(s.min, 0.001, 0.001), "{s:?}");
        assert!(close(s.max, 1.0, 0.001), "{s:?}");
        assert!(close(s.mean, 0.5005, 0.001), "{s:?}");
        assert!(close(s.p50, 0.5, 0.002), "{s:?}");
        assert!(close(s.p90, 0.9, 0.002), "{s:?}");
        assert!(close(s.p99, 0.99, 0.002), "{s:?}");
        assert!(close(s.p999, 0.999, 0.002), "{s:?}");
        // Uniform on [0, 1] ms: stddev 1/sqrt(12).
        assert!(close(s.stddev, 0.2887, 0.01), "{s:?}");
        assert!(summarize(&new_histogram()).is_none());
    }

    #[test]
    fn buckets_add_up_to_the_count() {
        let mut h = new_histogram();
        for v in [1_000u64, 1_000, 2_000, 3_000_000] {
            record(&mut h, v);
        }
        let b = buckets(&h);
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 4);
        assert_eq!(b.len(), 3);
        assert!(b.windows(2).all(|w| w[0].rtt_ms < w[1].rtt_ms));
        assert!(close(b[2].rtt_ms, 3.0, 0.001));
        // Zero and huge values are clamped, never dropped.
        record(&mut h, 0);
        record(&mut h, u64::MAX);
        assert_eq!(h.len(), 6);
    }

    #[test]
    fn fit_recovers_a_line() {
        // 0.1 ms fixed + 8 ns per byte (125 MB/s one way, echo = 2 crossings).
        let pts: Vec<(f64, f64)> = [64.0, 512.0, 1500.0, 4096.0, 9000.0]
            .iter()
            .map(|&s| (s, 0.1 + s * 8e-6))
            .collect();
        let f = least_squares(&pts, 2.0, "p50").unwrap();
        assert!(close(f.intercept_ms, 0.1, 1e-9), "{f:?}");
        assert!(close(f.slope_us_per_byte, 0.008, 1e-9), "{f:?}");
        // 8 ns per byte over two crossings: 4 ns per byte = 2 Gbit/s.
        assert!(
            close(f.implied_bits_per_second.unwrap(), 2e9, 1e-9),
            "{f:?}"
        );
        assert!(close(f.r2, 1.0, 1e-12));
        let one_way = least_squares(&pts, 1.0, "p50").unwrap();
        assert!(close(one_way.implied_bits_per_second.unwrap(), 1e9, 1e-9));
    }

    #[test]
    fn fit_needs_two_sizes_and_reports_no_rate_for_a_flat_line() {
        assert!(least_squares(&[(64.0, 1.0)], 2.0, "p50").is_none());
        assert!(least_squares(&[(64.0, 1.0), (64.0, 2.0)], 2.0, "p50").is_none());
        let flat = least_squares(&[(64.0, 1.0), (128.0, 1.0)], 2.0, "p50").unwrap();
        assert_eq!(flat.slope_us_per_byte, 0.0);
        assert!(flat.implied_bits_per_second.is_none());
        let noisy = least_squares(&[(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)], 1.0, "p50").unwrap();
        assert!(noisy.r2 < 1.0 && noisy.r2 >= 0.0);
    }

    #[test]
    fn signed_histogram_orders_negative_values_first() {
        let mut s = SignedHistogram::default();
        assert!(s.summary().is_none());
        // -50..=49 µs, once each: the median is about 0, the 10th value -41 µs.
        for us in -50i64..50 {
            s.record(us * 1000);
        }
        let (n, min, mean, p50, p99, max) = s.summary().unwrap();
        assert_eq!(n, 100);
        assert!(close(min, -0.05, 0.001) && close(max, 0.049, 0.001));
        assert!(close(mean, -0.0005, 0.001), "{mean}");
        assert!(p50.abs() <= 0.0011, "{p50}");
        assert!(close(p99, 0.048, 0.01), "{p99}");
        assert!(
            close(s.quantile(0.1), -41_000.0, 0.01),
            "{}",
            s.quantile(0.1)
        );
        assert!(
            close(s.quantile(0.01), -50_000.0, 0.01),
            "{}",
            s.quantile(0.01)
        );
    }
}
