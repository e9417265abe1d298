//! Statistics over repeated runs: summary, Student-t confidence interval and
//! Welch's t-test. Pure functions, no I/O.

use serde::Serialize;

/// Summary of one metric over the repetitions of a point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1); `None` below two samples.
    pub stddev: Option<f64>,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    /// Student-t confidence interval of the mean at `level`; `None` below two samples.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Confidence level of the interval, in percent.
    pub level: f64,
}

impl Summary {
    /// `None` for no samples. `level` is in percent (95, 99).
    pub fn of(samples: &[f64], level: f64) -> Option<Summary> {
        let n = samples.len();
        if n == 0 {
            return None;
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let stddev = (n >= 2).then(|| {
            let ss: f64 = samples.iter().map(|x| (x - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        let half = stddev.map(|s| {
            let t = student_t_quantile(0.5 + level / 200.0, (n - 1) as f64);
            t * s / (n as f64).sqrt()
        });
        Some(Summary {
            n,
            mean,
            stddev,
            min: sorted[0],
            max: sorted[n - 1],
            median,
            ci_low: half.map(|h| mean - h),
            ci_high: half.map(|h| mean + h),
            level,
        })
    }

    /// Half the interval's width as a percentage of the mean (netperf's
    /// "±x%"); `None` without an interval or for a zero mean.
    pub fn half_width_percent(&self) -> Option<f64> {
        let (lo, hi) = (self.ci_low?, self.ci_high?);
        (self.mean != 0.0).then(|| 100.0 * (hi - lo) / 2.0 / self.mean.abs())
    }
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, 9 terms).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the series in its accurate range.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        for coeff in [
            even,
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + coeff * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + coeff / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// Regularised incomplete beta function I_x(a, b).
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The fraction converges fast on this side of the mean; use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// Cumulative distribution of Student's t with `df` degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t (0 < p < 1), by bisection on the CDF.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -student_t_quantile(1.0 - p, df);
    }
    let mut hi = 1.0;
    while student_t_cdf(hi, df) < p && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Welch's unequal-variance t-test of two samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// `None` unless both samples have at least two values.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (sa, sb) = (Summary::of(a, 95.0)?, Summary::of(b, 95.0)?);
    let va = sa.stddev?.powi(2) / a.len() as f64;
    let vb = sb.stddev?.powi(2) / b.len() as f64;
    let diff = sa.mean - sb.mean;
    if va + vb == 0.0 {
        // No spread at all: identical means are not different, others certainly are.
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        let t = if diff == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(diff)
        };
        return Some(Welch {
            t,
            df: (a.len() + b.len() - 2) as f64,
            p,
        });
    }
    let t = diff / (va + vb).sqrt();
    let df =
        (va + vb).powi(2) / (va.powi(2) / (a.len() - 1) as f64 + vb.powi(2) / (b.len() - 1) as f64);
    let p = incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    Some(Welch { t, df, p })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_printed_tables() {
        // Two-sided 95 % and 99 % critical values from standard t tables.
        let table = [
            (0.975, 1.0, 12.706),
            (0.975, 2.0, 4.303),
            (0.975, 4.0, 2.776),
            (0.975, 9.0, 2.262),
            (0.975, 29.0, 2.045),
            (0.995, 1.0, 63.657),
            (0.995, 4.0, 4.604),
            (0.995, 9.0, 3.250),
            (0.995, 29.0, 2.756),
            (0.95, 10.0, 1.812),
            (0.9995, 5.0, 6.869),
        ];
        for (p, df, want) in table {
            let got = student_t_quantile(p, df);
            assert!(
                close(got, want, 0.0015),
                "t({p}, {df}) = {got}, want {want}"
            );
        }
        // Large df tends to the normal quantile.
        assert!(close(student_t_quantile(0.975, 1e6), 1.95996, 1e-4));
        assert!(close(student_t_quantile(0.025, 4.0), -2.776, 0.0015));
    }

    #[test]
    fn cdf_is_symmetric_and_monotone() {
        assert!(close(student_t_cdf(0.0, 3.0), 0.5, 1e-12));
        assert!(close(
            student_t_cdf(1.5, 7.0) + student_t_cdf(-1.5, 7.0),
            1.0,
            1e-12
        ));
        // df = 1 is Cauchy: F(1) = 3/4.
        assert!(close(student_t_cdf(1.0, 1.0), 0.75, 1e-10));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
    }

    #[test]
    fn summary_of_known_samples() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 95.0).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0, 1e-12));
        assert!(close(s.stddev.unwrap(), (32.0f64 / 7.0).sqrt(), 1e-12));
        assert_eq!((s.min, s.max, s.median), (2.0, 9.0, 4.5));
        let half = 2.365 * s.stddev.unwrap() / 8f64.sqrt();
        assert!(close(s.ci_high.unwrap() - s.mean, half, 2e-3));
        assert!(close(s.mean - s.ci_low.unwrap(), half, 2e-3));
        let one = Summary::of(&[3.0], 99.0).unwrap();
        assert_eq!(
            (one.mean, one.median, one.stddev, one.ci_low),
            (3.0, 3.0, None, None)
        );
        assert!(Summary::of(&[], 95.0).is_none());
        let odd = Summary::of(&[3.0, 1.0, 2.0], 95.0).unwrap();
        assert_eq!(odd.median, 2.0);
        let flat = Summary::of(&[10.0, 10.0], 99.0).unwrap();
        assert_eq!(flat.half_width_percent(), Some(0.0));
    }

    #[test]
    fn welch_matches_a_worked_example() {
        // The first worked example of Welch's test in the usual references:
        // t = -2.46, df = 24.99, two-sided p = 0.021.
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let w = welch(&a, &b).unwrap();
        assert!(close(w.t, -2.46, 0.01), "t = {}", w.t);
        assert!(close(w.df, 24.99, 0.05), "df = {}", w.df);
        assert!(close(w.p, 0.021, 0.002), "p = {}", w.p);
        assert!(welch(&[1.0], &b).is_none());
        assert_eq!(welch(&[1.0, 1.0], &[1.0, 1.0]).unwrap().p, 1.0);
        assert_eq!(welch(&[1.0, 1.0], &[2.0, 2.0]).unwrap().p, 0.0);
    }
}
